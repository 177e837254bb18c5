"""What every tab shares: the long-work queue and its Stop, the device line, the Explain accordion."""
from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterator

import gradio as gr

from components.i18n import lang_of, t
from locales import tr
from components.worker import low_priority  # noqa: F401 (the tabs run long work with it, on HEAVY)

# Long work (training runs, generation, BPE on a large corpus) queues apart from the instant tabs:
# at most this many run at once across the app, and they never take an instant event's slot.
# Use as ``button.click(fn, ..., **HEAVY)``; instant events keep the app's default queue.
HEAVY = dict(concurrency_id="heavy", concurrency_limit=2)


ENDED = ("■", "✓")                 # how a status line that Stop or the run's end has marked begins


def stopped(status: str | None, request: gr.Request = None) -> str:
    """A long run's status line once Stop has ended it: said so first, what it showed last kept (less a
    closing "…": nothing more comes); a run that had already ended keeps its line, and an empty line (no
    run yet, or one refused before it started) stays empty. "…" alone is a run not yet begun (:func:`long_run`).

    >>> stopped("66 / 300 · cpu · 12 ms"), stopped("cpu · 10.8 s …"), stopped("✓ Done · 300 / 300")
    ('■ Stopped · 66 / 300 · cpu · 12 ms', '■ Stopped · cpu · 10.8 s', '✓ Done · 300 / 300')
    >>> stopped("…"), stopped("")
    ('■ Stopped', '')
    """
    if not (status or "").strip() or status.lstrip().startswith(ENDED):
        return status or ""
    said = tr(lang_of(request), "run_stopped")
    status = (status or "").removesuffix("…").rstrip()
    return f"■ {said} · {status}" if status else f"■ {said}"


def finished(status: str | None, request: gr.Request = None, *, lang: str | None = None) -> str:
    """A long run's status line once it has run to its end, said so first (in ``lang``, or the request's).

    >>> finished("300 / 300 · cpu · 12 ms"), finished("训练了 400 次合并", lang="zh-CN")
    ('✓ Done · 300 / 300 · cpu · 12 ms', '✓ 已完成 · 训练了 400 次合并')
    """
    if not status or status.lstrip().startswith(ENDED):
        return status or ""
    return f"✓ {tr(lang or lang_of(request), 'run_done')} · {status}"


def says_done(run: Callable[..., Iterator[dict]], status: str = "status") -> Callable[..., Iterator[dict]]:
    """``run``, a long run's generator of ``{output: value}`` items, with one more item once it has run to
    its end: everything it last showed, its ``status`` output said done (:func:`finished`). A run that Stop
    cancels never gets there, so the two marks cannot both land (a listener on the run's success would
    fire after a cancel too: Gradio completes a cancelled event).

    >>> def train(steps: int = 2, request=None):
    ...     for step in range(1, steps + 1):
    ...         yield {"plot": step, "status": f"{step} / {steps}"}
    >>> list(says_done(train)(2))[-1]
    {'plot': 2, 'status': '✓ Done · 2 / 2'}
    """
    signature = inspect.signature(run)

    @functools.wraps(run)
    def ran(*args, **kwargs):
        request = signature.bind_partial(*args, **kwargs).arguments.get("request")
        shown: dict = {}
        for item in run(*args, **kwargs):
            shown.update(item)
            yield item
        if status in shown:
            yield {**shown, status: finished(shown[status], request)}
    return ran


def stop_button(stop: gr.Button, run, status: gr.components.Component) -> None:
    """``stop`` cancels ``run`` (its worker ends) and marks ``status`` as stopped: the figures keep the
    steps run so far, and nothing else would say the run is over. Two listeners: when the page's cancel
    request fails (a loaded server answers it late), the event holding it fails too, and its outputs
    would show "Error" instead of the status. A run wrapped in :func:`says_done` says when it has ended by
    itself, and a Stop pressed after that leaves its line."""
    stop.click(None, None, None, cancels=[run], api_visibility="private")
    stop.click(stopped, status, status, api_visibility="private", show_progress="hidden")


def long_run(triggers: list, stop: gr.Button, status: gr.components.Component, **listener):
    """Wire a long run, ``gr.on(triggers, **listener)`` on :data:`HEAVY` with Gradio's progress hidden (the
    status line says how it goes; its fn wrapped in :func:`says_done` says when it ended), with its ``stop``
    button (:func:`stop_button`); return the run's dependency.

    Before the run's own listener, ``status`` reads "…" at once, set in the page without a request (a
    trigger's listeners run in the order they were added): a Stop pressed before the run's first update
    then marks this run stopped, where it kept the last run's "✓ Done". A run refused before it starts
    puts the line back; one that has said anything keeps what it said (a cancelled run may end as failed).
    While a run is going (its line neither empty nor marked ended), a trigger leaves its line alone: the
    run's next update would overwrite a "…", which would flicker through a drag of the BPE merges slider;
    the next run, queued behind it, speaks at its own first update."""
    if not status.elem_id:
        raise ValueError("a long run's status needs an elem_id: the page keeps its last line under it")
    kept = f"(window.__runLines ??= {{}})[{json.dumps(status.elem_id)}]"
    going = "(line && !/^\\s*[" + "".join(ENDED) + "]/.test(line))"
    private = dict(api_visibility="private", show_progress="hidden", queue=False)
    gr.on(triggers, None, status, status,
          js=f"(line) => {{ if (line === '…' || {going}) return line; {kept} = line; return '…'; }}", **private)
    run = gr.on(triggers, **{**HEAVY, "show_progress": "hidden", **listener})
    run.failure(None, status, status, js=f"(line) => line === '…' ? ({kept} ?? '') : line", **private)
    stop_button(stop, run, status)
    return run


def device_line(elem_id: str | None = None) -> gr.Textbox:
    """The "computed on cpu · 4.2 ms" line every tab shows under its figures."""
    return gr.Textbox(label=t("computed_on"), interactive=False, max_lines=1, elem_classes="device-line",
                      elem_id=elem_id)


# Formulas in Markdown: $$…$$ on their own line, $…$ inline.
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


def explain(key: str, *, open: bool = False) -> gr.Accordion:
    """An "Explain" accordion holding the translated Markdown ``key`` (formulas in $…$)."""
    with gr.Accordion(t("explain"), open=open) as acc:
        gr.Markdown(t(key), latex_delimiters=LATEX)
    return acc
