"""Every sentence the app shows, in English and 简体中文, kept apart from the code that shows it.

One module per tab (``locales/masks.py`` …) holds ``STRINGS = {"en": {...}, "zh-CN": {...}}``: the
widgets' labels (translated by Gradio in the browser through :func:`components.i18n.t`), the text
of figures and of messages built on the server (translated here by :func:`tr`), and the
backend's error messages (a :class:`models.errors.InputError` carries a key and its parameters;
its English is rendered from here, the UI renders the learner's language).

Values are ``str.format`` templates: ``"{name} = {value} must be from {low} to {high}"``. One spec
more, for English plurals: ``{n:|merge|merges}`` is the first word when ``n`` is 1, else the second.
A parameter that is a :class:`Term` is itself a key, rendered in the same language (a field's
name: ``Term("learning_rate")`` is "learning rate" in English, "学习率" in Chinese).

Pure data and ``str.format``: importable by ``models/`` (messages), ``viz/`` (figure text) and
``components/`` (labels) alike; no torch, no gradio, no plotly.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import string
from typing import Any, Mapping

LOCALES = ("en", "zh-CN")
DEFAULT = "en"


class Term(str):
    """A parameter that names something translatable: rendered as the key's text in the message's language.

    >>> Term("n_heads") == "n_heads"
    True
    """


def merge(*tables: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """Merge per-tab tables; a key missing in a language or defined twice is an error.

    >>> merge({"en": {"a": "A"}, "zh-CN": {"a": "甲"}})["zh-CN"]
    {'a': '甲'}
    >>> merge({"en": {"a": "A", "b": "B"}, "zh-CN": {"a": "甲"}})
    Traceback (most recent call last):
    ...
    KeyError: "untranslated keys: ['b']"
    """
    merged: dict[str, dict[str, str]] = {loc: {} for loc in LOCALES}
    for table in tables:
        keys = {loc: set(table.get(loc, {})) for loc in LOCALES}
        if keys["en"] != keys["zh-CN"]:
            raise KeyError(f"untranslated keys: {sorted(keys['en'] ^ keys['zh-CN'])}")
        for loc in LOCALES:
            clash = keys[loc] & set(merged[loc])
            if clash:
                raise KeyError(f"keys defined twice: {sorted(clash)}")
            merged[loc].update(table[loc])
    return merged


@functools.cache
def catalog() -> dict[str, dict[str, str]]:
    """Every module's ``STRINGS`` merged: ``{"en": {key: template}, "zh-CN": {...}}``."""
    import locales
    tables = [importlib.import_module(f"locales.{info.name}").STRINGS
              for info in pkgutil.iter_modules(locales.__path__)]
    return merge(*tables)


def language(lang: str | None) -> str:
    """``lang`` when the app speaks it, else English.

    >>> language("zh-CN"), language("fr"), language(None)
    ('zh-CN', 'en', 'en')
    """
    return lang if lang in LOCALES else DEFAULT


class _Plurals(string.Formatter):
    """``str.format`` plus the plural spec ``{n:|one|many}``.

    >>> _Plurals().format("{n:,} {n:|merge|merges}, {m:,} {m:|merge|merges}", n=1, m=1000)
    '1 merge, 1,000 merges'
    """

    def format_field(self, value: Any, spec: str) -> str:
        if spec.startswith("|"):
            one, many = spec[1:].split("|")
            return one if value == 1 else many
        return super().format_field(value, spec)


PLURALS = _Plurals()
HAS_PLURAL = re.compile(r"\{[^{}]*:\|")      # a field with the spec (a Markdown table's "---:|" is not)


def tr(lang: str | None, key: str, **params: Any) -> str:
    """The text of ``key`` in ``lang`` with ``params`` filled in (:class:`Term` parameters translated).

    >>> tr("zh-CN", "error_whole_number", name=Term("seed"), value=2.5, low=0, high=9)
    '随机种子 = 2.5：必须是 0 到 9 之间的整数'
    """
    table = catalog()[language(lang)]
    template = table[key]
    if not params:
        return template
    shown = {k: table.get(f"term_{v}", v) if isinstance(v, Term) else v for k, v in params.items()}
    return PLURALS.format(template, **shown) if HAS_PLURAL.search(template) else template.format(**shown)
