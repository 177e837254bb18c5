"""UI text: keys in the widgets, translations merged from every tab's ``STRINGS`` table.

Gradio translates in the browser (its locale picks the language, English is the fallback); text
computed on the server (figure titles, the device line) uses :func:`lang_of` on the request.
"""
from __future__ import annotations

import gradio as gr
from gradio.i18n import I18nData

LOCALES = ("en", "zh-CN")


def t(key: str) -> I18nData:
    """A translation key for a label, info text, choice or Markdown value."""
    return I18nData(key)


def merge_strings(*tables: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Merge the tabs' tables; a key defined twice or missing in a locale is an error.

    >>> merge_strings({"en": {"a": "A"}, "zh-CN": {"a": "甲"}})["zh-CN"]
    {'a': '甲'}
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


def build_i18n() -> gr.I18n:
    """The app's ``gr.I18n``: the whole catalog of ``locales/``."""
    from locales import catalog
    return gr.I18n(**merge_strings(catalog()))


def lang_of(request: gr.Request | None) -> str:
    """``"zh-CN"`` when the browser prefers Chinese, else ``"en"`` (API clients send no header).

    >>> from types import SimpleNamespace as NS
    >>> lang_of(NS(headers={"accept-language": "zh-CN,zh;q=0.9,en;q=0.8"}))
    'zh-CN'
    """
    headers = getattr(request, "headers", None) or {}
    accept = (headers.get("accept-language") or "").lower()
    first = accept.split(",")[0].strip()
    return "zh-CN" if first.startswith("zh") else "en"
