"""Input widgets whose values are checked by the handler, in the learner's language.

Gradio checks a slider's range, a number's bounds and a radio's choices itself, before the handler
runs, and answers in English with a 14-line traceback in the server's log for every bad API call.
These subclasses hand the value over unchecked (rounded as Gradio would, when it is a finite
number); the handler checks every input with :mod:`models.checks` and says what was wrong in the
language of the page. Their class names are Gradio's, so the browser draws the same widgets.
:class:`Blocks` logs what Gradio still refuses itself (a wrong type, too few values) as one line.
"""
from __future__ import annotations

import contextlib
import inspect
import logging
import math
from collections.abc import Iterator
from typing import Any, Callable

import gradio as gr
from gradio.blocks import Block
from gradio.routes import App

from models.checks import InputError, Span, whole
from models.limits import SEED

log = logging.getLogger("llm_anatomy")

# The events a learner's edit of a control fires (:meth:`Blocks.edits_never_dropped`).
EDITS = frozenset({"input", "change", "submit", "blur", "release", "upload", "clear"})


def fit_slider(name: str, value: Any, end: int, first: int = 1) -> dict:
    """The update of a slider that picks one of the things ``first`` to ``end`` (a sequence, a head, a
    pair from 0): it ends at ``end`` and a value past the end moves to it; with one choice it is hidden,
    since Gradio refuses a slider whose ends meet. A value that is not a whole number changes only the end:
    the draw names it (``name``, a locales term, is the value's name there).

    >>> fit_slider("masks_head", 5, 3)["value"], fit_slider("masks_head", 5, 1)["visible"]
    (3, False)
    >>> fit_slider("pos_pair", 3, 0, first=0)["visible"], fit_slider("pos_pair", 3, 1, first=0)["value"]
    (False, 1)
    """
    if end == first:
        return gr.update(visible=False, value=first)
    try:
        return gr.update(visible=True, maximum=end, value=min(whole(name, value, first), end))
    except InputError:
        return gr.update(visible=True, maximum=end)


def fit_sliders(**picks: tuple[str, Any, Callable[[], int]]) -> dict:
    """:func:`fit_slider` for each slider ``pick=(name, value, end)`` whose ``end()`` (the size it picks
    from) is valid; one whose size raises ``InputError`` is left as it is: the draw names that error.

    >>> sorted(fit_sliders(head=("masks_head", 2, lambda: 4), seq=("masks_sequence", 1, lambda: whole("n", 0, 1))))
    ['head']
    """
    fitted = {}
    for pick, (name, value, end) in picks.items():
        try:
            size = end()
        except InputError:
            continue
        fitted[pick] = fit_slider(name, value, size)
    return fitted


def _rounded(payload: Any, precision: int | None) -> Any:
    if isinstance(payload, bool) or not isinstance(payload, (int, float)) or not math.isfinite(payload):
        return payload
    return gr.Number.round_to_precision(payload, precision)


@contextlib.contextmanager
def _replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` inside the block, and what it was (as stored, a staticmethod too) after."""
    before = vars(owner)[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, before)


def _no_stub_files():
    """Gradio's component metaclass writes a typing stub (``widgets.pyi``) beside the module of every
    component class it creates, parsing this file and the stub for each (~25 ms at import): a tool for
    authors of custom components, and a file written into a Space's source tree at run time."""
    from gradio import component_meta
    return _replaced(component_meta, "create_or_modify_pyi", lambda *args, **kwargs: None)


with _no_stub_files():
    class Slider(gr.Slider):
        """``gr.Slider`` without the server-side range check (the handler's :func:`models.checks.whole` does it)."""

        @classmethod
        def over(cls, span: Span, value: float, **kwargs) -> "Slider":
            """A slider offering ``span``, the one its handler checks with (``span.whole``, ``span.number``).

            >>> Slider.over(Span(10, 600, step=10), 150, label="steps").maximum
            600
            """
            return cls(span.low, span.high, value=value, step=span.step, **kwargs)

        def preprocess(self, payload: Any) -> Any:
            return _rounded(payload, self.precision)

    class Number(gr.Number):
        """``gr.Number`` without the server-side bounds check; a whole-number box (``precision=0``) hands a
        fraction to the handler, whose :func:`models.checks.whole` refuses it by name, rather than round it
        silently (2.5 typed for top-k drew top-k = 2, the box still saying 2.5)."""

        @classmethod
        def over(cls, span: Span, value: float | None, **kwargs) -> "Number":
            """A box bounded by ``span``, the one its handler checks with; ``precision=0`` for whole numbers.

            >>> box = Number.over(Span(0, 9), 3, precision=0)
            >>> box.minimum, box.maximum, box.precision
            (0, 9, 0)
            """
            return cls(value, minimum=span.low, maximum=span.high, step=span.step, **kwargs)

        @classmethod
        def seed(cls, label, elem_id: str) -> "Number":
            """A seed box: a whole number of :data:`models.limits.SEED`, 0 at first."""
            return cls.over(SEED, 0, precision=0, label=label, elem_id=elem_id)

        def preprocess(self, payload: Any) -> Any:
            if payload is None or (self.precision == 0 and isinstance(payload, float) and not payload.is_integer()):
                return payload
            return _rounded(payload, self.precision)

    class Radio(gr.Radio):
        """``gr.Radio`` that hands a value outside its choices to the handler (which names the choices)."""

        def preprocess(self, payload: Any) -> Any:
            values = [value for _, value in self.choices]
            if payload in values and self.type == "index":
                return values.index(payload)
            return payload

    class Dropdown(gr.Dropdown):
        """``gr.Dropdown`` that hands values outside its choices to the handler."""

        def preprocess(self, payload: Any) -> Any:
            values = [value for _, value in self.choices]
            if self.type == "index":
                if isinstance(payload, list):
                    return [values.index(v) if v in values else None for v in payload]
                return values.index(payload) if payload in values else None
            return payload

    class StepButton(gr.Button):
        """A button that moves a step (◀ / ▶): its press is an edit of the step, so a second press while
        the first is on its way moves again once it has landed (:meth:`Blocks.edits_never_dropped`)."""

        def get_block_name(self) -> str:             # the page draws it with Gradio's button
            return "button"

        get_block_class = get_block_name

    class CheckboxGroup(gr.CheckboxGroup):
        """``gr.CheckboxGroup`` that hands values outside its choices to the handler."""

        def preprocess(self, payload: Any) -> Any:
            values = [value for _, value in self.choices]
            if self.type == "index" and isinstance(payload, list):
                return [values.index(v) for v in payload if v in values]
            return payload


def _web_app_built_at_launch():
    """Gradio builds its web app (FastAPI routes, ~100 ms for this app) at the end of ``with Blocks()``,
    again in ``queue()``, and again in ``launch()``, each replacing the last; only what ``launch``
    builds serves. Inside this block the early builds are skipped: ``blocks.app`` is None until
    ``launch`` (this app is served by ``launch``, ``python app.py`` as a Space runs it, not mounted
    into another FastAPI app with ``gr.mount_gradio_app``). :meth:`Blocks.__exit__` likewise skips
    the config of every block (~60 ms; ``launch`` builds it twice more): :attr:`Blocks.config` is
    built when first read."""
    return _replaced(App, "create_app", staticmethod(lambda *args, **kwargs: None))


def _init_signatures_kept() -> None:
    """Gradio works out the signature of a block's ``__init__`` each time it builds the block
    (``getfullargspec`` in ``component_meta.updateable``, once per class in its ``__init__`` chain) and
    each time it writes the block's config (``inspect.signature`` in ``Block.get_config``: at the end
    of ``with Blocks()``, twice in ``launch``): ~5,000 signatures for this app's ~800 blocks, ~0.2 s of
    a cold start. A function's ``__signature__`` is what ``inspect`` returns for it without working it
    out again (PEP 362), so it is set, to what ``inspect`` finds, on the ``__init__`` of every block
    class loaded (and on the function Gradio's wrapper wraps)."""
    classes, seen = [Block], set()
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        init = vars(cls).get("__init__")
        if init is None or init in seen or hasattr(init, "__signature__"):
            continue
        seen.add(init)
        for fn in (getattr(init, "__wrapped__", None), init):
            if fn is not None:
                fn.__signature__ = inspect.signature(fn)


class Blocks(gr.Blocks):
    """``gr.Blocks`` that logs an API call its inputs refuse as one line instead of a traceback, and
    builds its web app once, in ``launch`` (:func:`_web_app_built_at_launch`: ~0.3 s of a cold start),
    from signatures worked out once (:func:`_init_signatures_kept`: ~0.2 s more).

    Gradio checks a request's values before the handler runs (enough of them, each of the right type
    and in range, files inside its upload folder) and prints the full traceback of every refusal
    (``traceback.print_exc`` in ``gradio/queueing.py``, unless the error is a ``gr.Error`` with
    ``print_exception=False``): a public Space's log would fill with tracebacks that are not bugs.
    The caller still gets Gradio's message. ``preprocess_data`` is where Gradio runs those checks; it
    is not a public API, so ``tests/test_wiring.py`` sends such values and fails if a traceback is back.
    """

    def __init__(self, *args, **kwargs):
        _init_signatures_kept()
        self._config = None
        super().__init__(*args, **kwargs)

    @property
    def config(self):
        """What Gradio sends a page: built when first read if ``with Blocks()`` skipped it."""
        if self._config is None:
            self._config = self.get_config_file()
        return self._config

    @config.setter
    def config(self, value):
        self._config = value

    def __exit__(self, *args):
        self.get_config_file = lambda: None              # this one's config only: built when first read
        try:
            with _web_app_built_at_launch():
                return super().__exit__(*args)
        finally:
            del self.get_config_file

    def queue(self, *args, **kwargs):
        with _web_app_built_at_launch():
            return super().queue(*args, **kwargs)

    def hidden_progress_on(self, first: Block) -> None:
        """Give every event that shows no progress (``show_progress="hidden"``) one progress target:
        ``first``, the page's first block.

        Gradio's page keeps a loading status for each progress target of every event it has run (each
        output, unless ``show_progress_on`` names others) and, at each status message of any event, sets
        them all again, finding each block by a walk of the layout from its top (806 blocks here): over
        the app's 384 outputs, every event cost the browser more with each tab opened (``bench/bench_page.py``,
        the README has the figures). A hidden progress draws nothing from those statuses; on the first
        block each costs one step. (A Markdown or HTML drops its ``min_height`` while pending: ``first``
        must not have one.)
        """
        if not self.children or self.children[0] is not first:
            raise ValueError("the progress target must be the page's first block: the page walks the layout to it")
        for fn in self.fns.values():
            if fn.show_progress == "hidden" and fn.show_progress_on is None:
                fn.show_progress_on = [first]

    def edits_never_dropped(self) -> None:
        """Run every event that a control's edit fires (:data:`EDITS`), and every step chained after one
        (``.then``), "always_last": a trigger that comes while the event is pending runs once it ends, with
        the values the page holds then.

        Gradio's default for every event but ``.change`` is "once": the page drops a trigger while that
        event is pending, so a preset chosen, a box ticked or a field entered while the last such edit was
        on its way was lost on a busy server, the control showing a value that nothing drew. Events set to
        "multiple" or "always_last" keep their mode; a :class:`StepButton`'s press is an edit (two presses,
        two steps); other clicks (a second Generate while one runs must not queue another run), a tab's
        select and a timer's tick stay "once". (Gradio's page still drops the deferred trigger when the
        pending event fails: components/toasts.py sends a number box's or a slider's value again then.)
        """
        for fn in self.fns.values():
            root = fn
            while root.trigger_after is not None:
                root = self.fns[root.trigger_after]
            edits = [event in EDITS or (event == "click" and isinstance(self.blocks.get(block), StepButton))
                     for block, event in root.targets]
            if fn.trigger_mode == "once" and edits and all(edits):
                fn.trigger_mode = "always_last"

    async def preprocess_data(self, block_fn, *args, **kwargs):
        try:
            return await super().preprocess_data(block_fn, *args, **kwargs)
        except (gr.Error, ValueError) as exc:        # ValueError: too few values, a type or model refused
            message = exc.message if isinstance(exc, gr.Error) else str(exc)
            log.warning("API call to %s refused: %s", block_fn.api_name or block_fn.name,
                        " ".join(str(message).split())[:300])
            raise gr.Error(message, print_exception=False) from None

    def launch(self, *args, **kwargs):
        logging.getLogger("uvicorn.error").addFilter(_unknown_endpoint_in_one_line)
        return super().launch(*args, **kwargs)


def _unknown_endpoint_in_one_line(record: logging.LogRecord) -> bool:
    """A call to an endpoint that does not exist (a wrong ``api_name`` or ``fn_index``) fails where Gradio
    looks the endpoint up, outside the queue; the web server logs it with a traceback: keep one line."""
    from gradio.route_utils import get_fn
    exc = record.exc_info[1] if record.exc_info else None
    tb = exc.__traceback__ if exc else None
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None and tb.tb_frame.f_code is get_fn.__code__:
        record.msg, record.args = f"API call to an endpoint that does not exist: {type(exc).__name__}: {exc}", ()
        record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.WARNING, "WARNING"
    return True
