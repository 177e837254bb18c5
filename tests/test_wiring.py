"""The UI layer's seams (components/wiring.py, components/widgets.py, locales/): controls by name,
outputs by name, errors in the page's language, and no traceback in the log for a learner's mistake."""
from __future__ import annotations

import json
import types

import gradio as gr
import pytest

from components.widgets import Radio, Slider
from components.wiring import control_names, event, fit_then_draw, guarded
from locales import LOCALES, catalog, tr
from models.checks import InputError, whole
from tests.conftest import free_port, raw_call


def heads_and_text(text: str = "hi", heads: int = 2, request: gr.Request = None) -> dict:
    n = whole("n_heads", heads, 1, 8)
    return {"shown": f"{text} × {n}"}


def test_inputs_follow_the_handler_and_a_missing_widget_fails_the_build():
    ui = types.SimpleNamespace(heads=object(), text=object(), shown=object())
    wired = event(heads_and_text, ui, ("shown",))
    assert wired["inputs"] == [ui.text, ui.heads] and wired["outputs"] == [ui.shown]
    assert control_names(wired["fn"]) == ["text", "heads"]                # what Gradio names the API after
    with pytest.raises(KeyError, match="no widget named"):
        event(heads_and_text, types.SimpleNamespace(text=object(), shown=object()), ("shown",))


def test_outputs_are_mapped_by_name_and_an_unknown_one_is_a_bug():
    shown, other = object(), object()
    fn = guarded(heads_and_text, {"shown": shown})
    assert fn("a", 3) == {shown: "a × 3"}
    bad = guarded(lambda: {"nope": 1}, {"shown": shown})
    with pytest.raises(gr.Error):
        bad()


@pytest.mark.parametrize("lang,expected", [("en", "n_heads = 9: must be a whole number from 1 to 8"),
                                           ("zh-CN", "注意力头数 n_heads = 9：必须是 1 到 8 之间的整数")])
def test_input_errors_speak_the_language_of_the_page(lang, expected):
    request = types.SimpleNamespace(headers={"accept-language": lang})
    with pytest.raises(gr.Error) as info:
        guarded(heads_and_text)("x", 9, request=request)
    assert info.value.message == expected


def test_an_input_error_survives_pickling_with_its_key():
    import pickle
    again = pickle.loads(pickle.dumps(InputError("error_whole_number", name="x", value=1, low=2, high=3)))
    assert again.key == "error_whole_number" and str(again) == "x = 1: must be a whole number from 2 to 3"


def test_every_key_has_both_languages_and_the_same_parameters():
    table = catalog()
    assert set(table) == set(LOCALES) and set(table["en"]) == set(table["zh-CN"])
    for key in table["en"]:
        fields = {lang: _fields(table[lang][key]) for lang in LOCALES}
        if None in fields.values():                       # Markdown with LaTeX braces: never formatted
            continue
        assert fields["en"] == fields["zh-CN"], key
        for lang in LOCALES:
            assert tr(lang, key, **{name: 1 for name in fields[lang]}).strip(), key


def _fields(template: str) -> set[str] | None:
    import string
    try:
        return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError:
        return None


def heads_only(heads: int = 2) -> dict:
    return {"shown": str(whole("n_heads", heads, 1, 8))}


def test_a_handler_without_a_request_parameter_still_speaks_the_page_language():
    """Regression: the request was added keyword-only, which Gradio never fills: such handlers
    answered in English in the Chinese UI."""
    with gr.Blocks() as demo:
        ui = types.SimpleNamespace(heads=Slider(1, 8, value=2, step=1), shown=gr.Textbox())
        gr.Button().click(api_name="heads", **event(heads_only, ui, ("shown",)))
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, ssr_mode=False)
    try:
        import httpx
        with httpx.Client(headers={"accept-language": "zh-CN,zh;q=0.9"}) as http:
            event_, payload = raw_call(url, "heads", [99], client=http)
        assert event_ == "error" and "必须是 1 到 8 之间的整数" in json.loads(payload)["error"]
    finally:
        demo.close()


def test_out_of_range_values_reach_the_handler_and_come_back_translated(capfd):
    """Gradio's own range check answers in English with a traceback in the log; the app's widgets hand
    the value to the handler, which says what was wrong in the page's language, without a traceback."""
    with gr.Blocks() as demo:
        ui = types.SimpleNamespace(heads=Slider(1, 8, value=2, step=1), text=gr.Textbox("hi"),
                                   choice=Radio(["a", "b"], value="a"), shown=gr.Textbox())
        gr.Button().click(api_name="heads", **event(heads_and_text, ui, ("shown",)))
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, ssr_mode=False)
    try:
        event_, payload = raw_call(url, "heads", ["x", 99])
        assert event_ == "error" and "n_heads = 99: must be a whole number from 1 to 8" in payload
        assert raw_call(url, "heads", ["x", 3]) == ("complete", '["x \\u00d7 3"]')
    finally:
        demo.close()
    assert "Traceback" not in capfd.readouterr().err


SERVER = """
import sys
import app
app.demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), **app.LAUNCH_KWARGS)
"""


def _by_index(url: str, fn_index: int, data: list) -> str:
    """Call an endpoint by its index (how the page calls private ones); return the result's message."""
    import uuid

    import httpx
    session = uuid.uuid4().hex
    with httpx.Client() as client:                      # a new connection: a refused call may close the last
        r = client.post(f"{url}gradio_api/queue/join", json={"data": data, "fn_index": fn_index,
                                                              "session_hash": session})
        if r.status_code != 200:
            return f"rejected {r.status_code}"
        with client.stream("GET", f"{url}gradio_api/queue/data?session_hash={session}", timeout=60) as stream:
            for line in stream.iter_lines():
                if '"process_completed"' in line:
                    return line
    return ""


def test_bad_api_calls_are_logged_in_one_line_not_a_traceback(tmp_path):
    """Values that Gradio itself refuses before a handler runs (too few, a wrong type, a value outside a
    choice list, a file that was not uploaded) and endpoints that do not exist: the caller gets an error,
    the server's log one line each, never a traceback (a public Space's log would fill with them)."""
    import os
    import subprocess
    import sys
    import time

    import httpx

    from tests.conftest import ROOT
    port, log = free_port(), tmp_path / "server.log"
    url = f"http://127.0.0.1:{port}/"
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], cwd=ROOT, stdout=err, stderr=err,
                                  env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                config = httpx.get(f"{url}config", timeout=5).json()
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.5)
        events = [raw_call(url, "masks", ["too few values"]),
                  raw_call(url, "norm_train", ["not a number", 10, 10, "layernorm", 0]),
                  raw_call(url, "bpe_train", ["en", "", 10, "none", "no such tie rule", "x", "y", 1]),
                  raw_call(url, "no_such_endpoint", [])]
        assert [event for event, _ in events] == ["error", "error", "error", "rejected"], events
        kinds = {c["id"]: c["type"] for c in config["components"]}
        upload = next(d["id"] for d in config["dependencies"] if any(kinds.get(i) == "file" for i in d["inputs"]))
        not_uploaded = {"path": str(log), "meta": {"_type": "gradio.FileData"}}
        assert "not uploaded by a user" in _by_index(url, upload, [not_uploaded, 0])     # (the file, the count)
        assert _by_index(url, 10**6, []) == "rejected 500"
        # The web server logs a failed request after its 500 has gone out: wait for the line, then stop it.
        unknown, deadline = "API call to an endpoint that does not exist", time.monotonic() + 30
        while log.read_text().count(unknown) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert text.count("API call to masks refused: An event handler (compute_masks) didn't receive enough") == 1
    assert text.count(unknown) == 2


def test_the_web_app_is_built_once_at_launch_and_no_stub_file_is_written(monkeypatch):
    """Gradio builds its FastAPI app at the end of ``with Blocks()``, in ``queue()`` and in ``launch()``,
    and the config of all ~800 blocks at the end of ``with Blocks()`` and in ``launch()``;
    components.widgets.Blocks skips the early builds (~0.35 s of a cold start) and builds the config
    when it is first read. Gradio's component metaclass would also write ``widgets.pyi`` into the
    source tree."""
    import subprocess
    import sys
    from pathlib import Path

    from gradio.routes import App

    import app
    import components.widgets

    built, configs = [], []
    build, config = App.create_app, gr.Blocks.get_config_file
    monkeypatch.setattr(App, "create_app", staticmethod(lambda *a, **k: built.append(1) or build(*a, **k)))
    monkeypatch.setattr(gr.Blocks, "get_config_file", lambda self: configs.append(1) or config(self))
    demo = app.build_demo()                                         # queued too
    assert built == [] and demo.app is None and configs == []
    assert len(demo.get_api_info()["named_endpoints"]) > 30          # the config is there before launch
    assert configs == [1]

    stub = Path(components.widgets.__file__).with_suffix(".pyi")
    before = stub.stat().st_mtime_ns if stub.exists() else None
    subprocess.run([sys.executable, "-c", "import components.widgets"], check=True, cwd=Path(app.__file__).parent)
    assert (stub.stat().st_mtime_ns if stub.exists() else None) == before


def test_the_kept_block_signatures_name_the_arguments_each_init_takes():
    """components.widgets keeps the signature of every block class's ``__init__`` (Gradio reads them ~5,000
    times to build this app): each must name what the function's code takes, in order."""
    import inspect

    from gradio.blocks import Block

    import app  # noqa: F401  (builds the app: every block class in use is loaded)

    classes, kept = [Block], 0
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        init = vars(cls).get("__init__")
        if init is None:
            continue
        code = getattr(init, "__wrapped__", init).__code__
        named = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        signature = inspect.signature(init)
        assert tuple(p.name for p in signature.parameters.values()
                     if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)) == named, cls
        kept += "__signature__" in vars(init)
    assert kept > 40                                                  # gr.Slider, gr.Plot, ... and ours


def test_a_tab_switch_pauses_other_tabs_even_when_its_draw_is_refused():
    """The select event of a tab pauses the other tabs' Play in the same update as its draw: a draw refused
    by its checks (gr.Error) must still leave no other tab playing, so it is said as a warning."""
    from components.share import show_event

    def failing_draw(heads: int = 2):
        raise gr.Error("bad heads")
    with gr.Blocks():
        heads, plot, timer, drawn = gr.Number(2), gr.Number(), gr.Timer(1.0), gr.State(False)
    draw = {"fn": failing_draw, "inputs": [heads], "outputs": [plot]}
    run = show_event({"masks": draw}, {"masks": drawn}, [timer], selected="masks")["fn"]
    with pytest.warns(UserWarning, match="bad heads"):
        updates = run(None, False, 2)                       # the request, drawn[masks], heads
    assert set(updates) == {timer} and updates[timer].active is False      # paused; not marked drawn
    good = show_event({"masks": {**draw, "fn": lambda heads=2: heads + 1}}, {"masks": drawn}, [],
                      selected="masks")["fn"]
    assert good(None, False, 2) == {drawn: True, plot: 3}   # no timer to pause: the draw alone


def test_a_first_draw_reads_the_values_its_fit_moved():
    """``fit_then_draw``: the draw reads a fitted slider's new value (head 2 of 1 head is drawn as head 1),
    the values the fit left alone as given, and the fit's updates come back with the draw's outputs."""
    ui = types.SimpleNamespace(heads=object(), head=object(), text=object(), shown=object())

    def fit(heads: int = 2, head: int = 1) -> dict:
        return {"head": gr.update(maximum=heads, value=min(head, heads))}

    def draw(text: str = "hi", head: int = 1) -> dict:
        return {"shown": f"{text}: head {whole('head', head, 1, 1)}"}

    first = fit_then_draw(event(fit, ui, ("head",)), event(draw, ui, ("shown",)))
    assert first["inputs"] == [ui.heads, ui.head, ui.text, ui.head] and first["outputs"] == [ui.shown, ui.head]
    out = first["fn"](1, 2, "hi", 2)
    assert out[ui.shown] == "hi: head 1" and out[ui.head]["maximum"] == 1


def test_every_checkbox_a_handler_checks_is_named_in_both_languages():
    """A refused checkbox value names the box as the page does (``term_<name>`` in every language), not by
    its internal key: each literal name given to ``models.checks.flag`` in the app's code has a term."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sources = [*root.glob("components/*.py"), *(p for p in root.glob("models/**/*.py") if p.name != "checks.py")]
    names = {m for path in sources for m in re.findall(r'\bflag\("(\w+)"', path.read_text(encoding="utf-8"))}
    assert len(names) >= 12                                         # every box of every tab but the calculator's
    table = catalog()
    missing = {loc: sorted(n for n in names if f"term_{n}" not in table[loc]) for loc in LOCALES}
    assert missing == {loc: [] for loc in LOCALES}


def test_every_choice_a_link_writes_reads_back():
    """Regression: a Calculator link wrote ``calc_gpu=80`` (a whole float without its ``.0``) and opening it
    refused the value against the choices "24.0, 40.0, … 141.0": every such link warned, and 141 GiB went
    back to 80. Each choice of every shareable radio and dropdown, and each default, goes through a link."""
    from urllib.parse import parse_qs

    import app
    from components.share import controls_of, decode, encode

    checked = 0
    for tab in app.demo.blocks.values():
        if not (isinstance(tab, gr.Tab) and (tab.elem_id or "").startswith("tab_")):
            continue
        for elem_id, comp in controls_of(tab).items():
            values = [c[1] if isinstance(c, (tuple, list)) else c for c in (getattr(comp, "choices", None) or [])]
            multiple = isinstance(comp, gr.CheckboxGroup) or getattr(comp, "multiselect", False)
            for value in ([values] if multiple else values) + [comp.value]:
                query = encode("t", {elem_id: comp}, [value])
                if elem_id not in query:
                    continue                                # too long for a link, or empty: the default stays
                raw = parse_qs(query)[elem_id][0]
                assert decode(comp, raw) == value, (elem_id, value, raw)
                checked += 1
    assert checked > 150, checked


def test_a_change_every_view_reads_draws_the_view_shown_and_a_select_draws_a_view_drawn_with_others():
    """``components.attention.redraw_shown``: the view shown redraws and keeps the model and prompt it was
    drawn with; another view is not drawn then, but its select draws it since it was drawn with others.
    Regression: the change cleared the other views' drawn flags, and a select that ran at the same time
    read a flag not yet cleared, so the view opened on the old prompt's figures."""
    from components.attention import redraw_shown
    from components.share import show_event

    with gr.Blocks():
        model, prompt, a, b = gr.Textbox("mha"), gr.Textbox("hi"), gr.Textbox(), gr.Textbox()
        drawn = {"heads": gr.State(["mha", "hi"]), "next": gr.State(["mha", "hi"])}
    ui = {"model": model, "prompt": prompt, "a": a, "b": b}
    draws = {"heads": event(lambda model="mha", prompt="hi": {"a": f"{model}: {prompt}"}, ui, ("a",)),
             "next": event(lambda prompt="hi": {"b": prompt + "!"}, ui, ("b",))}
    ev = redraw_shown(draws, drawn, shown := gr.State("heads"), [model, prompt])
    assert ev["inputs"] == [shown, drawn["heads"], drawn["next"], model, prompt]
    marks = (["mha", "hi"], ["mha", "hi"])                              # what each view was drawn with
    updates = ev["fn"](None, "heads", *marks, "gqa", "abc")              # request, view shown, marks, model, prompt
    assert updates == {a: "gqa: abc", drawn["heads"]: ["gqa", "abc"]}   # "next" is left as it was drawn
    assert ev["fn"](None, "heads", ["gqa", "abc"], marks[1], "gqa", "abc") == gr.skip()   # a blur, no edit
    select = show_event({"next": draws["next"]}, drawn, selected="next", key=[model, prompt])["fn"]
    assert select(None, ["mha", "hi"], "gqa", "abc") == {drawn["next"]: ["gqa", "abc"], b: "abc!"}
    assert select(None, ["gqa", "abc"], "gqa", "abc") == gr.skip()      # drawn with these: nothing to do
    assert ev["fn"](None, "flash", *marks, "gqa", "abc") == gr.skip()   # a view reading neither
    empty = {**draws, "heads": event(lambda prompt="hi": {"a": whole("prompt length", len(prompt), 1)}, ui, ("a",))}
    with pytest.raises(gr.Error):                                        # refused: an error, as any edit
        redraw_shown(empty, drawn, shown, [model, prompt])["fn"](None, "heads", *marks, "gqa", "")
