"""Wiring that cannot drift: a handler's parameters are the tab's controls, by name; it returns its
outputs by name; its errors reach the learner in the page's language.

A tab declares its widgets once, by name, in a ``SimpleNamespace`` (``ui.text = gr.Textbox(...)``),
and writes its handler with the same names::

    def compute_masks(text: str = DEFAULT_TEXT, causal: bool = True, heads: int = 2) -> dict:
        ...
        return {"panels": fig, "device": str(timing)}

    gr.on(triggers, api_name="masks", **event(compute_masks, ui, outputs=("panels", "device")))

:func:`event` builds the ``inputs`` list from the handler's signature and maps the returned
``{name: value}`` onto the output components, so moving a widget, adding one (one line in ``build()``,
one parameter) or reordering outputs cannot send a value to the wrong place. Gradio names the API's
parameters after the handler's (``Client.predict(text=..., heads=3, api_name="/masks")``); a handler
may return only the outputs it changes (the others keep their value).

Errors: :class:`models.checks.InputError` is rendered in the language of the page that sent the
request; another ``ValueError`` shows its text; anything else is a bug, logged with its traceback,
and the learner sees a short message. The server keeps serving in every case.
"""
from __future__ import annotations

import functools
import inspect
import logging
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Mapping

import gradio as gr

from components.i18n import lang_of
from locales import tr

log = logging.getLogger("llm_anatomy")


def _special(param: inspect.Parameter) -> bool:
    """Parameters Gradio fills itself: the request and a progress tracker."""
    return param.annotation in (gr.Request, "gr.Request") or isinstance(param.default, gr.Progress)


def control_names(fn: Callable) -> list[str]:
    """The names of ``fn``'s parameters that are controls (not the request or a progress tracker).

    >>> def f(text: str = "", heads: int = 2, request: gr.Request = None): ...
    >>> control_names(f)
    ['text', 'heads']
    """
    return [name for name, p in inspect.signature(fn).parameters.items() if not _special(p)]


def grouped(**groups: Mapping[str, Any]) -> Callable[[Callable], Callable]:
    """A handler that takes its controls as named groups, ``fn(group=..., ..., request=None)``, each a dict
    by control name, while Gradio (and so the API, and :func:`event`) sees one parameter per control
    with its default, in the groups' order: thirty controls stay thirty API parameters by name, and the
    handler reads two named values instead of thirty positional ones.

    >>> @grouped(shape={"rows": 2, "cols": 3}, scale={"factor": 1})
    ... def area(shape, scale, request=None):
    ...     return shape["rows"] * shape["cols"] * scale["factor"]
    >>> control_names(area), area(4, cols=5), area(factor=10)
    (['rows', 'cols', 'factor'], 20, 60)
    """
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    seen = inspect.Signature([*(inspect.Parameter(name, kind, default=default)
                                for values in groups.values() for name, default in values.items()),
                              inspect.Parameter("request", kind, default=None, annotation=gr.Request)])

    def wrap(fn: Callable) -> Callable:
        def call(args: tuple, kwargs: dict):
            given = seen.bind(*args, **kwargs)
            given.apply_defaults()
            values = given.arguments
            return fn(**{group: {name: values[name] for name in names} for group, names in groups.items()},
                      request=values["request"])

        if inspect.isgeneratorfunction(fn):                          # a streaming handler stays one
            @functools.wraps(fn)
            def handler(*args, **kwargs):
                yield from call(args, kwargs)
        else:
            @functools.wraps(fn)
            def handler(*args, **kwargs):
                return call(args, kwargs)
        handler.__signature__ = seen
        handler.__annotations__ = {"request": gr.Request}
        return handler
    return wrap


def user_error(message: str, lang: str) -> gr.Error:
    """The toast a learner sees: ``message``, no traceback in the log. (Gradio 6 shows its own title;
    components/toasts.py translates it in the page.) It stays up until the learner's next action closes
    it (components/toasts.py) or they close it, not Gradio's 10 s: the figures beside it still show the
    last values drawn, not the refused one."""
    return gr.Error(message, title=tr(lang, "error_title"), print_exception=False, duration=None)


def _error(exc: Exception, lang: str, where: str) -> gr.Error:
    from models.checks import InputError
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, InputError):
        return user_error(exc.render(lang), lang)
    if isinstance(exc, ValueError):
        return user_error(str(exc), lang)
    log.exception("unexpected error in %s", where)
    return user_error(tr(lang, "error_internal"), lang)


def _check_text(values: Iterable[Any], lang: str) -> None:
    """Text from the web may hold a lone UTF-16 surrogate (legal in a Python str, sendable as
    ``"\\ud800"`` in JSON); it would break the JSON of every figure that shows it."""
    for value in values:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise user_error(tr(lang, "error_surrogate", position=exc.start), lang) from None


def guarded(fn: Callable, outputs: Mapping[str, gr.components.Component] | None = None) -> Callable:
    """``fn`` as a Gradio handler: errors translated (see the module's docstring), a returned (or
    yielded) ``{name: value}`` mapped onto ``outputs`` when given. The request reaches ``fn`` only if
    it declares it; Gradio still sees ``fn``'s own parameters, so the API keeps their names."""
    sig = inspect.signature(fn)
    wants_request = "request" in sig.parameters
    params = list(sig.parameters.values())
    if not wants_request:
        # Gradio fills a gr.Request only into a parameter it can pass by position: add one after the
        # controls (keyword-only only when fn takes *args, where nothing positional can follow).
        kinds = [p.kind for p in params]
        at = next((i for i, k in enumerate(kinds) if k in (inspect.Parameter.VAR_POSITIONAL,
                   inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)), len(params))
        kind = (inspect.Parameter.KEYWORD_ONLY if inspect.Parameter.VAR_POSITIONAL in kinds
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params.insert(at, inspect.Parameter("request", kind, default=None, annotation=gr.Request))
    seen = sig.replace(parameters=params)                          # what Gradio reads

    def mapped(result):
        if outputs is None or not isinstance(result, Mapping):
            return result
        unknown = set(result) - set(outputs)
        if unknown:
            raise KeyError(f"{fn.__name__} returned outputs {sorted(unknown)} it is not wired to")
        if not result:                          # nothing to change (Gradio reads an empty dict as one value)
            return {component: gr.skip() for component in outputs.values()}
        return {outputs[name]: value for name, value in result.items()}

    def start(args: tuple, kwargs: dict) -> tuple[tuple, dict, str]:
        """The call of ``fn`` (with the request only if it takes one) and the page's language."""
        bound = seen.bind_partial(*args, **kwargs)
        request = bound.arguments.get("request")
        if not wants_request:
            bound.arguments.pop("request", None)
        lang = lang_of(request)
        _check_text((*bound.args, *bound.kwargs.values()), lang)
        return bound.args, bound.kwargs, lang

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            args, kwargs, lang = start(args, kwargs)
            try:
                for result in fn(*args, **kwargs):
                    yield mapped(result)
            except Exception as exc:                                 # noqa: BLE001
                raise _error(exc, lang, fn.__name__) from None
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            args, kwargs, lang = start(args, kwargs)
            try:
                return mapped(fn(*args, **kwargs))
            except Exception as exc:                                 # noqa: BLE001
                raise _error(exc, lang, fn.__name__) from None
    wrapper.__signature__ = seen                                      # what Gradio reads: the signature
    wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}), "request": gr.Request}   # and the hints
    return wrapper


def event(fn: Callable, controls: SimpleNamespace | Mapping[str, Any], outputs: Iterable[str] = (),
          **kwargs: Any) -> dict:
    """The keyword arguments of a Gradio event running ``fn``: ``dict(fn=, inputs=, outputs=, **kwargs)``.

    ``inputs`` are the controls named by ``fn``'s parameters, in order; ``outputs`` names the
    components ``fn`` returns values for, looked up in the same ``controls``. A name that is not
    there is an error when the app is built, not a value sent to the wrong widget.
    """
    found = vars(controls) if isinstance(controls, SimpleNamespace) else dict(controls)
    missing = [n for n in (*control_names(fn), *outputs) if n not in found]
    if missing:
        raise KeyError(f"{fn.__name__}: no widget named {missing}")
    wired = {name: found[name] for name in outputs}
    return dict(fn=guarded(fn, wired), inputs=[found[n] for n in control_names(fn)], outputs=list(wired.values()),
                **kwargs)


def by_component(draw: dict, out) -> dict:
    """What a draw ``fn`` returned, by component: a ``{component: value}`` mapping as is, a tuple (or the
    single value of a one-output draw) matched to ``draw["outputs"]`` in order."""
    if isinstance(out, dict):
        return dict(out)
    return dict(zip(draw["outputs"], out if len(draw["outputs"]) > 1 else [out]))


# What Gradio reads of a joined draw: every input's value in order, and the request.
_VALUES_AND_REQUEST = inspect.Signature(
    [inspect.Parameter("values", inspect.Parameter.VAR_POSITIONAL),
     inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=gr.Request)])


def fit_then_draw(fit: dict, draw: dict) -> dict:
    """One first-draw event that runs ``fit`` (sliders fitted to what they pick from), then ``draw``, which
    reads the fitted values: a share link asking for head 2 of 1 head draws head 1 and ends the slider at
    1, as an edit would, instead of an error. A draw that still fails (a text that is not valid) drops the
    fit's updates with it: the sliders keep their ends until the next edit.

    Each (``fn``, ``inputs``, ``outputs``) as :func:`join_draws` takes them; a fitted component's update
    ``{"value": v, ...}`` replaces what ``draw`` reads from that component.
    """
    n = len(fit["inputs"])

    def run(*values, request: gr.Request = None) -> dict:
        fitted = by_component(fit, fit["fn"](*values[:n], request=request))
        read = [fitted[c].get("value", v) if isinstance(fitted.get(c), dict) else v
                for c, v in zip(draw["inputs"], values[n:])]
        return {**by_component(draw, draw["fn"](*read, request=request)), **fitted}
    run.__signature__ = _VALUES_AND_REQUEST
    return {**draw, "fn": run, "inputs": [*fit["inputs"], *draw["inputs"]],
            "outputs": [*draw["outputs"], *fit["outputs"]]}


def marked(draw: dict, flag: gr.State, key: list) -> dict:
    """``draw`` (``fn``, ``inputs``, ``outputs``) that also sets ``flag`` to the values of ``key`` (components)
    it drew with: what ``share.show_event(key=…)`` compares (the Attention tab's first view)."""
    n = len(draw["inputs"])

    def run(*values, request: gr.Request = None) -> dict:
        return {**by_component(draw, draw["fn"](*values[:n], request=request)), flag: list(values[n:])}
    run.__signature__ = _VALUES_AND_REQUEST
    return {**draw, "fn": run, "inputs": [*draw["inputs"], *key], "outputs": [*draw["outputs"], flag]}


def join_draws(first: dict, second: dict) -> dict:
    """One draw event that runs two (``fn``, ``inputs``, ``outputs``): the tab's and this section's.

    Each ``fn`` gets its own inputs and the request; outputs come back by component, so the two may
    return a tuple (in ``outputs`` order) or a ``{component: value}`` mapping.
    """
    n = len(first["inputs"])

    def run(*values, request: gr.Request = None) -> dict:
        return {**by_component(first, first["fn"](*values[:n], request=request)),
                **by_component(second, second["fn"](*values[n:], request=request))}
    run.__signature__ = _VALUES_AND_REQUEST
    return {**first, "fn": run, "inputs": [*first["inputs"], *second["inputs"]],
            "outputs": [*first["outputs"], *second["outputs"]]}
