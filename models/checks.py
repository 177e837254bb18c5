"""One way to check what a learner sent: whole numbers, numbers and choices, each in its range.

Every check raises :class:`InputError`, a ``ValueError`` that carries a message *key* and its
parameters instead of a sentence: ``str(error)`` is the English text, and the UI renders the
learner's language from the same key (:func:`locales.tr`). The texts live in ``locales/``.

The checks return the value in its proper type, so a UI field's ``2.0`` (a slider sends floats)
becomes the ``int`` 2 the backend computes with:

>>> whole("n_heads", 2.0, 1, 8)
2
>>> whole("n_heads", 2.5, 1, 8)
Traceback (most recent call last):
...
models.checks.InputError: n_heads = 2.5: must be a whole number from 1 to 8
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from locales import Term, tr


class InputError(ValueError):
    """A bad argument, said to a learner: ``key`` names the message in ``locales/``, ``params`` fill it.

    >>> str(InputError("error_choice", name="norm", value="'batch'", choices="layernorm, rmsnorm"))
    "norm = 'batch': must be one of layernorm, rmsnorm"
    """

    def __init__(self, key: str, **params: Any):
        self.key, self.params = key, params
        super().__init__(key)

    def render(self, lang: str | None) -> str:
        """The message in ``lang`` (English when the app does not speak it)."""
        return tr(lang, self.key, **self.params)

    def __str__(self) -> str:
        return self.render("en")

    def __reduce__(self):                     # crosses a process boundary (the long-work workers) intact
        return _rebuild, (self.key, self.params)


def _rebuild(key: str, params: dict) -> InputError:
    return InputError(key, **params)


def shown(value: Any, *, number: bool = False) -> str:
    """A value as a message shows it: numbers short (``1e+300``, ``2.5``), text quoted and cut, nothing as
    the page's word for empty; for a ``number``, the page's word for what a number box sends as ``None``
    (cleared, holding letters, or past float range: 1e400 is Infinity in the page, and JSON has none).

    >>> shown(1e300), shown(3.0), shown("x" * 50)[:8], shown(True)
    ('1e+300', '3', "'xxxxxxx", 'True')
    >>> str(InputError("error_whole_number", name="layers", value=shown(None, number=True), low=2, high=24))
    'layers = (empty, or not a finite number): must be a whole number from 2 to 24'
    """
    if value is None:
        return Term("empty_number" if number else "empty")
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) or abs(value) >= 10**16 else str(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    return repr(value)[:60]


def _name(name: str | Term) -> Term:
    return name if isinstance(name, Term) else Term(name)


def whole(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an ``int`` if it is a whole number in ``[low, high]`` (no upper bound: ``None``).

    Accepts ints and integral floats (``2.0``), never bools or text.

    >>> whole("steps", 10, 1), whole("seed", True, 0, 9)
    Traceback (most recent call last):
    ...
    models.checks.InputError: seed = True: must be a whole number from 0 to 9
    """
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))
          and low <= value and (high is None or value <= high))
    if not ok:
        if high is None:
            raise InputError("error_whole_at_least", name=_name(name), value=shown(value, number=True), low=low)
        raise InputError("error_whole_number", name=_name(name), value=shown(value, number=True), low=low, high=high)
    return int(value)


def number(name: str, value: Any, low: float, high: float, *, above: bool = False) -> float:
    """``value`` as a ``float`` if it is a finite number in ``[low, high]`` (``(low, high]`` with ``above``).

    >>> number("learning rate", 1e-3, 0, 10, above=True)
    0.001
    >>> number("learning rate", 0, 0, 10, above=True)
    Traceback (most recent call last):
    ...
    models.checks.InputError: learning rate = 0: must be a number above 0 and at most 10
    """
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (low < value if above else low <= value) and value <= high)
    if not ok:
        key = "error_number_above" if above else "error_number"
        raise InputError(key, name=_name(name), value=shown(value, number=True), low=shown(low), high=shown(high))
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False``: a checkbox. Anything else (the API's text ``"false"``,
    which ``bool()`` would read as true, ``1``, nothing) is refused.

    >>> flag("causal", False)
    False
    >>> flag("causal", "false")
    Traceback (most recent call last):
    ...
    models.checks.InputError: causal = 'false': must be one of true, false
    """
    if not isinstance(value, bool):
        raise InputError("error_choice", name=_name(name), value=shown(value), choices="true, false")
    return value


def choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``.

    >>> choice("norm", "rmsnorm", ("layernorm", "rmsnorm"))
    'rmsnorm'
    """
    options = tuple(choices)
    if value not in options:
        raise InputError("error_choice", name=_name(name), value=shown(value),
                         choices=", ".join(str(c) for c in options))
    return value


def divides(name: str, value: int, other_name: str, other: int) -> None:
    """``InputError`` unless ``value`` divides ``other``.

    >>> divides("n_kv_heads", 3, "n_heads", 8)
    Traceback (most recent call last):
    ...
    models.checks.InputError: n_kv_heads = 3 must divide n_heads = 8
    """
    if other % value:
        raise InputError("error_divides", name=_name(name), value=value, other_name=_name(other_name), other=other)


@dataclass(frozen=True)
class Span:
    """The values one control offers, ``low`` to ``high`` in steps of ``step``, declared once: the page's
    widget is built from it (``components.widgets.Slider.over``, ``Number.over``) and its endpoint checks
    what arrives with it, so that the two cannot name different ends (``tests/test_ranges.py`` sends the
    values just past them to every endpoint).

    >>> steps = Span(10, 600, step=10)
    >>> steps.whole("steps", 150.0)
    150
    >>> steps.whole("steps", 5)
    Traceback (most recent call last):
    ...
    models.checks.InputError: steps = 5: must be a whole number from 10 to 600
    >>> Span(0, 2.0, step=0.05).number("temperature", 2.05)
    Traceback (most recent call last):
    ...
    models.checks.InputError: temperature = 2.05: must be a number from 0 to 2
    """
    low: float
    high: float
    step: float = 1

    def __post_init__(self):
        if not (self.low < self.high and self.step > 0):
            raise ValueError(f"a span needs low < high and a positive step, got {self}")

    def whole(self, name: str, value: Any) -> int:
        """``value`` as an ``int`` if it is a whole number in the span (:func:`whole`)."""
        return whole(name, value, self.low, self.high)

    def number(self, name: str, value: Any) -> float:
        """``value`` as a ``float`` if it is a finite number in the span (:func:`number`)."""
        return number(name, value, self.low, self.high)
