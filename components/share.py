"""Share links and data export, for every tab at once.

A teacher presses "Share link" and gets ``…/?tab=masks&masks_causal=false&masks_window=4``: opening
it selects the tab, sets those controls (each value checked like any other input; a bad one is
skipped with a warning) and draws the tab with them. In a tab with sub-tabs the link names the one
shown, ``&view=moe_route``, and opens on it. "Download data" saves the data of every
figure in the tab as JSON, in the browser (no server round trip); each figure's own toolbar saves
it as PNG.

Shareable controls are found by walking the tab: every interactive Slider, Number, Checkbox, Radio,
Dropdown, CheckboxGroup or Textbox with an ``elem_id``.

A control that moved (to another tab, or several of a tab's became one) keeps its old links working:
``moved`` maps its old ``elem_id`` to ``(old tab, new elem_id)``. A link to the old tab with only moved
controls opens the new tab on the sub-tab that holds them; a link that also sets the old tab's own
controls opens the old tab and sets the moved ones where they are now.
"""
from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterable
from urllib.parse import urlencode

import gradio as gr

from components.i18n import lang_of, t
from components.wiring import by_component
from locales import tr

SHAREABLE = (gr.Slider, gr.Number, gr.Checkbox, gr.Radio, gr.Dropdown, gr.CheckboxGroup, gr.Textbox)
MAX_TEXT_IN_URL = 4000
# The choice of a preset control (masks, calculator, tensors) that keeps its fields as they are: what editing a
# field sets, and what a link that sets fields and no preset gets (``wire``'s ``fills``).
CUSTOM = "custom"

# Runs in the browser: collect the traces of every plot in the tab and save them as a JSON file.
DOWNLOAD_JS = """
(tabId) => {
  const plots = [...document.querySelectorAll(`#tab_${tabId} .js-plotly-plot`)];
  const keep = ["type", "name", "x", "y", "z", "text", "customdata"];
  const figures = plots.map(gd => ({
    id: gd.closest("[id]")?.id, title: gd.layout?.title?.text ?? null,
    traces: (gd.data || []).map(tr => Object.fromEntries(keep.filter(k => tr[k] !== undefined).map(k => [k, tr[k]]))),
  }));
  const json = JSON.stringify({tab: tabId, figures}, (k, v) => ArrayBuffer.isView(v) ? Array.from(v) : v, 1);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([json], {type: "application/json"}));
  a.download = `llm-anatomy-${tabId}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
"""


def controls_of(block: gr.blocks.BlockContext) -> dict[str, gr.components.Component]:
    """The shareable controls inside ``block``, by ``elem_id``, in layout order."""
    found = {}
    for child in getattr(block, "children", []):
        if isinstance(child, SHAREABLE) and child.elem_id and child.interactive is not False:
            found[child.elem_id] = child
        found.update(controls_of(child))
    return found


def subtabs_of(block: gr.blocks.BlockContext) -> list[tuple[gr.Tabs, gr.Tab]]:
    """Every sub-tab inside ``block`` (a ``gr.Tab`` of a nested ``gr.Tabs``) with the ``Tabs`` that
    selects it, outer ones first.

    >>> with gr.Blocks(), gr.Tab("outer") as outer, gr.Tabs() as inner:
    ...     views = gr.Tab("a", id="a"), gr.Tab("b", id="b")
    >>> [(tabs is inner, tab.id) for tabs, tab in subtabs_of(outer)]
    [(True, 'a'), (True, 'b')]
    """
    found = []
    for child in getattr(block, "children", []):
        if isinstance(child, gr.Tab) and isinstance(block, gr.Tabs):
            found.append((block, child))
        found.extend(subtabs_of(child))
    return found


def _too_long(value) -> bool:
    """A text a link leaves out (:func:`encode`), and "Share link" says so."""
    return isinstance(value, str) and len(value) > MAX_TEXT_IN_URL


def implied(leaves_out: dict, controls: dict, values: list) -> set[str]:
    """The controls a link need not carry: ``leaves_out`` maps an ``elem_id`` to a test of all the
    values by ``elem_id`` (a preset's text, say, which the preset loads when the link opens).

    >>> implied({"text": lambda v: v["corpus"] != "custom"}, {"corpus": None, "text": None}, ["en", "x"])
    {'text'}
    """
    by_id = dict(zip(controls, values))
    return {elem_id for elem_id, test in leaves_out.items() if elem_id in by_id and test(by_id)}


def encode(tab_id: str, controls: dict, values: list, leave_out: Iterable[str] = ()) -> str:
    """The query string of a tab's settings (but the controls in ``leave_out``).

    >>> encode("masks", {"masks_causal": gr.Checkbox(), "masks_window": gr.Slider()}, [False, 4.0])
    'tab=masks&masks_causal=false&masks_window=4'
    """
    params = {"tab": tab_id}
    for (elem_id, comp), value in zip(controls.items(), values):
        if elem_id in leave_out:
            continue
        if isinstance(value, list):
            params[elem_id] = json.dumps(value, ensure_ascii=False)
        elif _too_long(value):
            continue                                   # too long for a link: the default stays
        elif value is not None:
            params[elem_id] = _text(value)
    return urlencode(params)


def _text(value) -> str:
    """One value as a link writes it, and as :func:`decode` reads a choice back: a flag as ``true`` or
    ``false``, a whole float without its ``.0``.

    >>> _text(True), _text(80.0), _text(0.5), _text("pre")
    ('true', '80', '0.5', 'pre')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _choice_values(comp) -> list:
    return [c[1] if isinstance(c, (tuple, list)) else c for c in (comp.choices or [])]


def decode(comp, raw: str):
    """A URL value for ``comp``, checked like user input; ``ValueError(raw)`` when it is not allowed
    (the page says which setting was ignored, in its language).

    >>> decode(gr.Slider(1, 8, step=1), "3")
    3.0
    """
    if isinstance(comp, gr.Checkbox):
        if raw not in ("true", "false"):
            raise ValueError(raw)
        return raw == "true"
    if isinstance(comp, (gr.Slider, gr.Number)):
        value = float(raw)
        low, high = getattr(comp, "minimum", None), getattr(comp, "maximum", None)
        if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(raw)
        return value
    if isinstance(comp, gr.CheckboxGroup) or (isinstance(comp, gr.Dropdown) and comp.multiselect):
        values = json.loads(raw)
        if not isinstance(values, list) or not set(values) <= set(_choice_values(comp)):
            raise ValueError(raw)
        return values
    if isinstance(comp, (gr.Radio, gr.Dropdown)):
        for value in _choice_values(comp):
            if raw in (_text(value), str(value)):        # 80 as a link writes it, 80.0 as a hand might
                return value
        raise ValueError(raw)
    if len(raw) > MAX_TEXT_IN_URL:
        raise ValueError(raw)
    return raw


def allowed(comp, lang: str = "en") -> str:
    """What a link may set ``comp`` to, in words: a range, the choices, a length.

    >>> allowed(gr.Slider(2, 24, step=1)), allowed(gr.Radio(["post", "pre"])), allowed(gr.Checkbox())
    ('2 to 24', 'post, pre', 'true, false')
    """
    if isinstance(comp, gr.Checkbox):
        return "true, false"
    if isinstance(comp, (gr.Slider, gr.Number)):
        low, high = (getattr(comp, side, None) for side in ("minimum", "maximum"))
        return tr(lang, "share_bad_range", low=f"{low:g}" if low is not None else "−∞",
                  high=f"{high:g}" if high is not None else "∞")
    if isinstance(comp, (gr.Radio, gr.Dropdown, gr.CheckboxGroup)):
        return ", ".join(_text(v) for v in _choice_values(comp))
    return tr(lang, "share_bad_text", n=MAX_TEXT_IN_URL)


def _label(comp, lang: str) -> str:
    """A control's label in ``lang`` (labels are translation keys)."""
    key = getattr(comp.label, "key", None)
    return tr(lang, key) if key else str(comp.label or "")


def wire(demo: gr.Blocks, tabs: gr.Tabs, tab_blocks: dict[str, gr.Tab], tab_controls: dict[str, dict],
         draws: dict[str, dict | None], moved: dict[str, tuple[str, str]] | None = None) -> None:
    """On page load apply the URL's settings and draw the tab that opens; draw every other tab the
    first time it is selected, and pause every Play outside the tab selected. ``moved``: old elem_id ->
    (old tab, new elem_id), see the module's docstring.

    A page load thus costs one tab's computation, not all of them: what lets a class open the Space
    at the same minute. Whether a tab has been drawn is per-visitor ``gr.State``.

    ``draws[tab_id]`` is the event that draws a tab (``fn``, ``inputs``, ``outputs``), as its
    ``build()`` returns it; its optional ``timers`` are the tab's Play timers, paused when the learner
    selects another tab, ``at_root`` blocks made with ``render=False`` to place outside every tab, and
    ``fills`` the events by which one control sets others (a preset and its fields): a link that sets
    the preset gets the preset's fields, as choosing it in the page would, but those it sets itself, and
    one that sets fields the page's preset does not have, and no preset, gets the preset :data:`CUSTOM`;
    ``view`` a shareable control that names the sub-tab the draw shows (the Positions tab's): a
    link's ``&view=`` sets it too, or the draw would select the sub-tab it names instead.
    Each of these is one event (see :func:`show_event`).
    """
    moved = moved or {}
    order = [(tab_id, elem_id, comp) for tab_id, controls in tab_controls.items()
             for elem_id, comp in controls.items()]
    owner = {elem_id: tab_id for tab_id, elem_id, _ in order}
    nested = {tab_id: subtabs_of(tab_blocks[tab_id]) for tab_id in tab_controls}
    # A control inside a sub-tab -> (its Tabs, the sub-tab's id), the innermost one; a tab's sub-tabs by id.
    subtabs = {elem_id: (tabs_, sub.id) for found in nested.values() for tabs_, sub in found
               for elem_id in controls_of(sub)}
    views = {tab_id: {str(sub.id): tabs_ for tabs_, sub in found if sub.id is not None}
             for tab_id, found in nested.items()}
    inner = list(dict.fromkeys(tabs_ for found in nested.values() for tabs_, _ in found))  # every nested Tabs
    first_tab = next(iter(tab_blocks))
    opened = gr.State(None)                  # the tab the page opens on; None until the link is applied

    tickets = {tab_id: gr.State(None) for tab_id in tab_controls}   # what the link asks of a tab

    def apply(request: gr.Request) -> dict:
        """The link, read: a ticket for the tab that opens and for each other tab it sets controls of.
        A ticket's change applies it and draws the tab (below): nothing is selected or set before."""
        params = dict(getattr(request, "query_params", None) or {})
        tab = params.get("tab")
        carried = {new for old, (old_tab, new) in moved.items() if old_tab == tab and old in params and new in owner}
        for old, (old_tab, new) in moved.items():      # several may have become one: the first set wins
            if new in carried and old in params:
                params.setdefault(new, params.pop(old))
        select_inner = {}
        if carried and not set(params) - {"tab", "view"} - carried:   # only moved controls: open where they are now
            tab = owner[next(iter(carried))]
            select_inner = {inner.index(subtabs[new][0]): subtabs[new][1] for new in carried if new in subtabs}
        if tab is not None and tab not in tab_controls:
            gr.Warning(tr(lang_of(request), "share_bad_setting", setting="tab", value=repr(tab[:40])))
            tab = None
        open_tab = tab or first_tab
        view = params.get("view")
        if view is not None and view in views.get(open_tab, {}):
            select_inner[inner.index(views[open_tab][view])] = view
            mirror = (draws.get(open_tab) or {}).get("view")        # a control naming the sub-tab it draws
            if mirror is not None:                                   # (a hand-made link may disagree: view wins)
                params[mirror.elem_id] = view
        elif view is not None:
            gr.Warning(tr(lang_of(request), "share_bad_setting", setting="view", value=repr(view[:40])))
        asked = {open_tab: dict(values={}, select=tab is not None, inner=select_inner, opens=True)}
        for tab_id, elem_id, comp in order:
            raw = params.get(elem_id)
            if raw is None or (tab_id != tab and elem_id not in carried):
                continue
            try:
                value = decode(comp, raw)
            except (ValueError, TypeError):
                lang = lang_of(request)
                gr.Warning(tr(lang, "share_bad_value", setting=elem_id, value=repr(raw[:40]),
                              label=_label(comp, lang), allowed=allowed(comp, lang)))
                continue
            asked.setdefault(tab_id, dict(values={}, select=False, inner={}, opens=False))["values"][elem_id] = value
        return {tickets[tab_id]: ticket for tab_id, ticket in asked.items()}

    def applied(tab_id: str) -> dict:
        """The event that applies a tab's ticket: its controls (a preset's fields too, by its ``fills``) and,
        for the tab that opens, the selection and ``opened``, all at once, so that no draw (the tab's
        select, the first tab's mount-time select) can run between them with the defaults."""
        controls, fills = tab_controls[tab_id], (draws.get(tab_id) or {}).get("fills", ())

        def apply_ticket(ticket: dict, request: gr.Request) -> dict:
            updates = {controls[elem_id]: value for elem_id, value in ticket["values"].items()}
            for fill in fills:
                source, filled = fill["inputs"][0], fill["outputs"]
                if source in updates:                        # the preset's fields, but those the link sets
                    try:
                        preset = call_draw(fill, [updates[source]], request)
                    except Exception as exc:                 # the page still opens, with the fields as they are
                        gr.Warning(str(getattr(exc, "message", exc)))
                        continue
                    updates.update({comp: value for comp, value in preset.items() if comp not in updates})
                elif source not in updates and any(comp in updates for comp in filled):
                    # Fields and no preset: the preset shown must not contradict them (CUSTOM keeps fields).
                    preset = call_draw(fill, [source.value], request)
                    if any(updates[comp] != value for comp, value in preset.items() if comp in updates):
                        updates[source] = CUSTOM
            if ticket["opens"]:
                updates[opened] = tab_id
            if ticket["select"]:
                updates[tabs] = gr.Tabs(selected=tab_id)
            updates.update({inner[i]: gr.Tabs(selected=sub) for i, sub in ticket["inner"].items()})
            return updates
        return dict(fn=apply_ticket, inputs=[tickets[tab_id]], outputs=[tabs, opened, *inner, *controls.values()])

    for tab_id, draw in draws.items():
        for fill in (draw or {}).get("fills", ()):
            if not set(fill["outputs"]) <= set(tab_controls[tab_id].values()):
                raise ValueError(f"{tab_id}: a fill sets controls that are not shareable: {fill['fn'].__name__}")
            if CUSTOM not in _choice_values(fill["inputs"][0]):
                raise ValueError(f"{tab_id}: the preset that {fill['fn'].__name__} fills from has no {CUSTOM!r} choice")
    shown = {tab_id: draw for tab_id, draw in draws.items() if draw}
    for draw in shown.values():
        for block in draw.get("at_root", ()):
            block.render()
    drawn = {tab_id: gr.State(False) for tab_id in shown}
    private = dict(show_progress="hidden", api_visibility="private")
    # The page load touches the opened tab's components only: each event costs the page a walk of its
    # layout per input and output (see show_event), and one event listing every tab's controls and
    # outputs (~600) took ~1.5 s of a slow machine's script. The tickets sit at the page's root: a
    # State in a tab not yet shown fires its change whenever an event lists it as an output.
    # Selecting a tab from the server fires its select, which draws it; the first tab is selected as the
    # page mounts, and its ticket's own event draws it (a second draw would run beside the first).
    demo.load(apply, None, list(tickets.values()), **private)
    for tab_id, ticket in tickets.items():
        chain = ticket.change(**applied(tab_id), **private)
        if tab_id == first_tab and tab_id in shown:
            chain.then(**show_event({tab_id: shown[tab_id]}, drawn, opened=opened), **private)
    for tab_id, tab in tab_blocks.items():
        pause = [timer for other, draw in shown.items() if other != tab_id for timer in draw.get("timers", ())]
        here = {tab_id: shown[tab_id]} if tab_id in shown else {}
        # Gradio selects the first tab as the page mounts, before the link is applied: that select draws
        # nothing until the page has opened on another tab (the load draws whichever tab the link opens).
        # Any other tab the learner selects draws at once, even before the link is applied.
        tab.select(**show_event(here, drawn, pause, opened=opened if tab_id == first_tab else None,
                                selected=tab_id), **private)


def show_event(draws: dict[str, dict], drawn: dict[str, gr.State], pause: Iterable[gr.Timer] = (), *,
               opened: gr.State | None = None, selected: str | None = None, also: dict | None = None,
               key: Iterable[gr.components.Component] = (), refusal: str = "warning") -> dict:
    """The one event (``fn``, ``inputs``, ``outputs``) that shows a tab: it draws ``draws[selected]``
    unless ``drawn[selected]`` says it is drawn already, pauses the ``pause`` timers and sets ``also``
    (``{component: value}``: what else showing this tab changes, a State naming it, a bar shown or hidden).

    ``drawn[tab]`` holds True once the tab is drawn; with ``key`` (components other events change while the
    tab is hidden), the list of their values it was drawn with, and a tab drawn with others draws again.
    The same event with ``opened`` a State naming the tab on screen, and no ``selected``, is the one of a change
    to ``key``: the tab shown redraws if it was drawn with other values (``refusal="error"``: a refused
    value is an error, as for any edit).

    ``selected=None``: the tab named by the value of ``opened`` (the page load). With ``opened`` given
    and ``selected`` set (the first tab, which Gradio selects as the page mounts, with the values the
    controls had then), nothing is drawn while ``opened`` is None or names that tab: the load draws it,
    with the link's values.

    One event for all of it, because each event costs the page far more than the server: Gradio's
    frontend finds each input and output by walking its whole layout tree (~800 blocks here), ~0.3 s
    of script per event on a slow machine. A tab switch was four events (a draw and three pauses); it is
    one event and one update. A draw refused by its input checks (a value set before the tab's first
    draw) is said as a warning, so that the pauses still land: an error would send no update at all,
    and a streaming event to send the pauses first cost every tab switch ~0.1 s of the page's script.
    Each draw's ``fn`` gets its inputs as Gradio would pass them (the request where its signature has
    it) and returns its outputs by component (:func:`components.wiring.event`) or in order.
    """
    pause, also, key = list(pause), also or {}, list(key)
    inputs = list(dict.fromkeys([*key, *(comp for draw in draws.values() for comp in draw["inputs"])]))
    outputs = list(dict.fromkeys([*(drawn[tab_id] for tab_id in draws),
                                  *(comp for draw in draws.values() for comp in draw["outputs"]), *pause, *also]))
    flags = [drawn[tab_id] for tab_id in draws]
    at = {comp: i for i, comp in enumerate(inputs)}
    head = [] if opened is None else [opened]

    def run(request: gr.Request, *values) -> dict:
        page_tab, values = (values[0], values[1:]) if head else ("", values)
        is_drawn, values = dict(zip(draws, values[:len(flags)])), values[len(flags):]
        updates = {**{timer: gr.Timer(active=False) for timer in pause}, **also}
        tab_id = selected or page_tab
        loading = head and page_tab in (None, selected)
        mark = [values[at[comp]] for comp in key] if key else True
        if tab_id in draws and is_drawn[tab_id] != mark and not loading:
            draw = draws[tab_id]
            try:
                shown = call_draw(draw, [values[at[comp]] for comp in draw["inputs"]], request)
            except gr.Error as error:   # said as a warning, so that the pauses still land; drawn next time
                if refusal == "error":
                    raise
                gr.Warning(error.message)
                return updates or gr.skip()
            updates[drawn[tab_id]] = mark
            updates.update(shown)
        return updates or gr.skip()

    return dict(fn=run, inputs=[*head, *flags, *inputs], outputs=outputs)


def call_draw(draw: dict, values: list, request: gr.Request) -> dict:
    """Run a tab's draw ``fn`` on its input values; its outputs by component."""
    fn = draw["fn"]
    request_param = inspect.signature(fn).parameters.get("request")
    args, kwargs = list(values), {}
    if request_param is not None and request_param.kind is inspect.Parameter.KEYWORD_ONLY:
        kwargs["request"] = request
    elif request_param is not None:
        args.insert(list(inspect.signature(fn).parameters).index("request"), request)
    return by_component(draw, fn(*args, **kwargs))


def share_row(tab_id: str, controls: dict, leaves_out: dict | None = None) -> None:
    """The "Share link" and "Download data" row at the bottom of a tab (``leaves_out``: see :func:`implied`)."""
    with gr.Row():
        share = gr.Button(t("share_button"), size="sm", elem_id=f"share_{tab_id}", scale=0)
        download = gr.Button(t("share_download"), size="sm", elem_id=f"download_{tab_id}", scale=0)
    link = gr.Textbox(label=t("share_url"), interactive=False, buttons=["copy"], visible=False,
                      elem_id=f"share_url_{tab_id}")

    def make_query(*values, request: gr.Request = None):
        # A text too long for a URL is left out (encode): say so now, not when the link opens without it.
        lang, skip = lang_of(request), implied(leaves_out or {}, controls, list(values))
        for (elem_id, comp), value in zip(controls.items(), values):
            if elem_id not in skip and _too_long(value):
                gr.Warning(tr(lang, "share_text_left_out", label=_label(comp, lang), length=len(value),
                              n=MAX_TEXT_IN_URL))
        return gr.Textbox(value=f"?{encode(tab_id, controls, list(values), skip)}", visible=True)

    # The server encodes the settings; the browser, which knows the page's address and the sub-tab shown,
    # completes the link.
    complete = """(q) => {
      const view = document.querySelector(`#tab_%s [role="tab"][aria-selected="true"]`)?.dataset.tabId;
      return window.location.origin + window.location.pathname + q + (view ? `&view=${view}` : "");
    }""" % tab_id
    share.click(make_query, list(controls.values()), link, api_visibility="private", show_progress="hidden").then(
        None, link, link, js=complete)
    download.click(None, None, None, js=f"() => ({DOWNLOAD_JS})({json.dumps(tab_id)})")
