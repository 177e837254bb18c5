"""The app as a whole: cold import, translations, the shared device backend, the error bridge."""
import importlib
import pkgutil
import re
from pathlib import Path
import subprocess
import sys
import textwrap
import types

import gradio as gr
import pytest
import torch
from gradio.i18n import I18nData

import app
import components
import viz
from components import widgets
from components.i18n import LOCALES, lang_of, merge_strings
from components.wiring import guarded
from models import device as dev
from tests.conftest import ROOT


def test_import_app_does_not_import_torch_or_compute():
    code = "import sys, app; assert 'torch' not in sys.modules, 'torch imported at startup'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_warm_up_imports_every_model_and_freezes_what_is_loaded():
    """What ``python app.py`` does once the first page is served (see ``app.warm_up``)."""
    code = textwrap.dedent("""
        import gc, os, sys, app
        from multiprocessing import forkserver
        from components import worker
        app.warm_up()
        assert {'torch', 'models.bpe', 'models.tiny_gpt', 'viz.moe'} <= set(sys.modules)
        assert gc.get_freeze_count() > 100_000, gc.get_freeze_count()
        def used():             # the server of forks' CPU seconds so far
            stat = open(f'/proc/{forkserver._forkserver._forkserver_pid}/stat').read()
            return sum(map(int, stat.rsplit(')', 1)[1].split()[11:13])) / os.sysconf('SC_CLK_TCK')
        if worker.uses_processes():
            before = used()
            assert list(worker.in_process(iter, [1])) == [1]
            print(f'forkserver CPU {used() - before:.2f} s')
        """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("Warmed up: "), out.stdout
    # Regression: "Warmed up" came while the server of forks still imported (3.1 s of its CPU after it, here).
    if "forkserver CPU " in out.stdout:                 # (on CUDA, jobs run in threads: no warm-up of it)
        assert float(out.stdout.split("forkserver CPU ")[1].split()[0]) < 0.5, out.stdout


def test_warm_up_goes_on_when_the_forkserver_fails():
    """warm_up runs in the main thread before ``block_thread``: an error there would end the app (its
    server thread is a daemon). A forkserver that fails is said in its thread, and the app serves on."""
    code = "import app; from components import worker; worker.await_forkserver = lambda: 1 / 0; app.warm_up()"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("Warmed up: "), out.stderr[-2000:]
    assert "ZeroDivisionError" in out.stderr


def test_a_new_session_searches_for_no_module():
    """Gradio builds every block's config for each new session (and each page load) on the event loop,
    and tries optional imports there: `import bokeh` per plot, `import IPython` (its Colab check).
    Without them each try would search sys.path (62 per visitor, ~30 ms) unless the absence is recorded,
    as app.py does. Run where neither is installed (a Space): both hidden from the finder before app.py
    is imported (IPython is installed here, and found once, it stays imported)."""
    code = """if True:
        from importlib.machinery import PathFinder
        real, searched = PathFinder.find_spec.__func__, []
        def find_spec(cls, name, *a, **k):
            if name.split(".")[0] in ("bokeh", "IPython"):
                searched.append(name)
                return None
            return real(cls, name, *a, **k)
        PathFinder.find_spec = classmethod(find_spec)
        import app
        from gradio.state_holder import SessionState
        searched.clear()
        SessionState(app.demo)
        app.demo.get_config_file()
        print(searched)
    """
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_queue_does_not_summarise_every_event():
    """Gradio's queue can rebuild a pandas summary of all recorded events after each event (4-12 ms of
    a worker thread); app.py makes it once per thousand. The attribute is Gradio's private name."""
    assert app.demo._queue.ANAYLTICS_CACHE_FREQUENCY >= 1000


def _keys_used_by_the_ui() -> set[str]:
    keys = set()
    for block in app.demo.blocks.values():
        for attr in ("label", "info", "value", "placeholder"):
            value = getattr(block, attr, None)
            if isinstance(value, I18nData):
                keys.add(value.key)
        for choice in getattr(block, "choices", None) or []:
            if isinstance(choice, (tuple, list)) and isinstance(choice[0], I18nData):
                keys.add(choice[0].key)
    return keys


def test_every_ui_string_is_translated():
    used = _keys_used_by_the_ui()
    assert len(used) > 20
    for locale in LOCALES:
        table = app.i18n.translations[locale]
        missing = sorted(k for k in used if not table.get(k, "").strip())
        assert not missing, f"{locale} lacks {missing}"
    zh = app.i18n.translations["zh-CN"]
    same = [k for k in used if zh[k] == app.i18n.translations["en"][k] and not k.endswith("explain")]
    assert not [k for k in same if any(c.isalpha() for c in zh[k]) and len(zh[k]) > 12], same


@pytest.mark.parametrize("module", [m.name for m in pkgutil.iter_modules(viz.__path__)])
def test_every_figure_text_is_translated(module):
    table = getattr(importlib.import_module(f"viz.{module}"), "TEXT", None)
    if table is not None:
        assert set(table["en"]) == set(table["zh-CN"])
        assert all(v.strip() for loc in LOCALES for v in table[loc].values())


def test_no_value_is_also_a_translation_key():
    """Regression: the browser translates any string that is an i18n key, values included. The calculator's
    FFN-type radio had the key "swiglu" for the value "swiglu", so once its tab was shown it sent the label
    "SwiGLU (3 matrices)" as its value and every recompute failed."""
    keys = set(app.i18n.translations["en"])
    clashes = []
    for block in app.demo.blocks.values():
        values = [getattr(block, "value", None)]
        values += [c[1] if isinstance(c, (tuple, list)) else c for c in getattr(block, "choices", None) or []]
        clashes += [(getattr(block, "elem_id", None), v) for v in values if isinstance(v, str) and v in keys]
    assert not clashes


def test_merge_strings_rejects_untranslated_and_duplicate_keys():
    with pytest.raises(KeyError, match="untranslated"):
        merge_strings({"en": {"a": "A", "b": "B"}, "zh-CN": {"a": "甲"}})
    with pytest.raises(KeyError, match="twice"):
        merge_strings({"en": {"a": "A"}, "zh-CN": {"a": "甲"}}, {"en": {"a": "A"}, "zh-CN": {"a": "甲"}})


def test_no_locale_table_writes_a_key_twice():
    """A dict literal that repeats a key keeps the last value silently: the sinusoidal heatmap's
    "position p" once relabelled RoPE's "position m" axis. merge_strings cannot see it; the source can."""
    import ast
    repeated = []
    for path in sorted((ROOT / "locales").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                repeated += [f"{path.name}: {k}" for k in sorted(set(keys)) if keys.count(k) > 1]
    assert not repeated


def test_no_state_with_a_change_listener_sits_in_a_tab():
    """Gradio 6.31 fires the ``change`` of a State inside a tab not yet shown whenever an event lists it as
    an output, even untouched; the page load's draw lists every tab's outputs, so such a State started its
    event on every page load (the Normalization tab's backward passes, for every visitor)."""
    config = app.demo.get_config_file()
    kinds = {c["id"]: c["type"] for c in config["components"]}
    listened = {target for d in config["dependencies"] for target, kind in d["targets"]
                if kind == "change" and kinds.get(target) == "state"}
    assert listened                                     # the Normalization tab's ticket, at least

    def in_tabs(node, inside=False):
        here = inside or kinds.get(node["id"]) == "tabitem"
        return ({node["id"]} if here else set()) | {i for child in node.get("children", []) for i in in_tabs(child, here)}
    assert not listened & in_tabs(config["layout"])


def test_a_long_run_shows_its_progress_in_its_own_status_line():
    """Regression: a training whose settings were refused left Gradio's red "Error" marks over its figure
    and its progress line until a run went through (Normalization, FFN & MoE, stability: "minimal"
    progress). Every run that a Stop button cancels says how far it is in its own status line."""
    dependencies = app.demo.get_config_file()["dependencies"]
    stoppable = {i for d in dependencies for i in d["cancels"] or []}
    assert len(stoppable) >= 8
    assert {d["api_name"]: d["show_progress"] for d in dependencies if d["id"] in stoppable} == {
        d["api_name"]: "hidden" for d in dependencies if d["id"] in stoppable}


def test_events_that_show_no_progress_keep_their_status_on_the_first_block():
    """Gradio's page keeps a loading status per progress target (each output, by default) of every event it
    has run, and sets them all at every status message, finding each by a walk of the layout: each event cost
    the browser more with every tab opened (bench/bench_page.py). An event with hidden progress draws nothing
    from its statuses, so they are kept on the first block."""
    config = app.demo.get_config_file()
    first = config["layout"]["children"][0]["id"]
    hidden = [d for d in config["dependencies"] if d["show_progress"] == "hidden"]
    shown = [d for d in config["dependencies"] if d["show_progress"] != "hidden"]
    assert len(hidden) > 100 and all(d["show_progress_on"] == [first] for d in hidden)
    assert shown and all(d["show_progress_on"] is None for d in shown)   # a shown progress stays on its outputs
    with pytest.raises(ValueError, match="first block"):
        with widgets.Blocks() as blocks:
            gr.Markdown("a")
            later = gr.Markdown("b")
        blocks.hidden_progress_on(later)


def test_an_edit_made_while_its_event_is_pending_is_not_dropped():
    """Regression: the masks preset, its rule boxes, the calculator's fields and the Tensors preset ran
    "once", Gradio's default: a click while the last one's event was on its way was dropped, and the page
    showed a preset above the boxes of another (tests/test_masks_ui.py has it in a browser). Every event
    that a control's edit fires, and each step chained after one, runs "always_last", and so do the ◀ / ▶
    step buttons (two presses are two steps); other clicks, tab selects and timer ticks stay "once" (a
    second Generate while one runs must not queue another)."""
    config = app.demo.get_config_file()
    deps = {d["id"]: d for d in config["dependencies"]}
    elem_id = {c["id"]: c["props"].get("elem_id") for c in config["components"]}
    steps = {"bpe_prev", "bpe_next", "attn_prev", "attn_next"}

    def root(d):
        return root(deps[d["trigger_after"]]) if d["trigger_after"] is not None else d

    edits = [d for d in deps.values()
             if root(d)["targets"] and all(kind in widgets.EDITS for _, kind in root(d)["targets"])]
    assert len(edits) > 100 and [d["api_name"] for d in edits if d["trigger_mode"] != "always_last"] == []
    clicks = {elem_id[d["targets"][0][0]]: d["trigger_mode"] for d in deps.values()
              if [kind for _, kind in d["targets"]] == ["click"]}
    assert {button: mode for button, mode in clicks.items() if mode != "once"} == dict.fromkeys(steps, "always_last")


def test_every_tab_module_is_in_the_app():
    """Every component module is a tab of ``app.TABS``, a sub-tab in a tab's ``SUBTABS``, a section in its
    ``SECTIONS``, or shared."""
    shared = {"common", "compression", "i18n", "links", "share", "widgets", "toasts", "touch", "wiring", "worker"}
    tab_modules = {m.name for m in pkgutil.iter_modules(components.__path__)} - shared
    tabs = [module for _, _, module in app.TABS]
    views = [view for module in tabs for _, _, view, *_ in getattr(module, "SUBTABS", ())]
    views += [section for module in tabs for section in getattr(module, "SECTIONS", ())]
    assert tab_modules == {module.__name__.split(".")[-1] for module in tabs + views}


@pytest.mark.parametrize("header,lang", [("zh-CN,zh;q=0.9", "zh-CN"), ("zh-TW", "zh-CN"), ("en-US", "en"),
                                         ("fr-FR,zh;q=0.5", "en"), ("", "en")])
def test_lang_of(header, lang):
    assert lang_of(types.SimpleNamespace(headers={"accept-language": header})) == lang
    assert lang_of(None) == "en"


def test_get_device_override(monkeypatch):
    monkeypatch.setenv(dev.DEVICE_ENV, "cpu")
    assert dev.get_device() == torch.device("cpu")
    monkeypatch.setenv(dev.DEVICE_ENV, "auto")
    assert dev.get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv(dev.DEVICE_ENV, "tpu")
    with pytest.raises(ValueError, match="not one of auto, cpu, cuda"):
        dev.get_device()
    if not torch.cuda.is_available():
        monkeypatch.setenv(dev.DEVICE_ENV, "cuda")
        with pytest.raises(ValueError, match="no CUDA device"):
            dev.get_device()


def test_generator_is_reproducible_and_validated():
    a = torch.randn(4, generator=dev.generator(3, torch.device("cpu")))
    b = torch.randn(4, generator=dev.generator(3, torch.device("cpu")))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="seed"):
        dev.generator(-1, torch.device("cpu"))


_PAGE_FAULTS = """
import resource, torch
def third_round():                       # what a forward pass does: tensors of megabytes, made and freed
    for _ in range(3):
        start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for n in (1 << 20, 3 << 20, 5 << 20, 1 << 20, 4 << 20):        # 4 to 20 MB of float32
            a = torch.empty(n).fill_(1); b = torch.empty(n // 2).fill_(2); del a; c = torch.empty(n).fill_(3); del b, c
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start   # page faults, counted by the kernel
before = third_round()                   # glibc's defaults
import models.device                     # keeps freed memory from here on
print(before, third_round())
"""


@pytest.mark.skipif(sys.platform != "linux" or dev.platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_the_backend_keeps_freed_tensor_memory_for_the_next_tensor():
    run = subprocess.run([sys.executable, "-c", _PAGE_FAULTS], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True)
    before, after = map(int, run.stdout.split())
    if before < 1000:                  # glibc's dynamic mmap threshold can settle on reuse by itself
        pytest.skip(f"glibc's defaults already reused freed pages here ({before} page faults in a round)")
    assert after < 50                  # the heap's pages, reused


def test_on_gpu_without_spaces_is_identity(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)                  # import spaces -> ImportError
    def f(x):
        return x
    assert dev.on_gpu(f) is f and dev.on_gpu(duration=30)(f) is f


def test_on_gpu_with_spaces_wraps(monkeypatch):
    calls = []
    fake = types.ModuleType("spaces")
    def GPU(fn, duration=None):
        calls.append(duration)
        return lambda *a: ("gpu", fn(*a))
    fake.GPU = GPU
    monkeypatch.setitem(sys.modules, "spaces", fake)
    assert dev.on_gpu(lambda x: x + 1)(1) == ("gpu", 2)
    assert dev.on_gpu(duration=45)(lambda x: x)(0) == ("gpu", 0)
    assert calls == [None, 45]


def test_the_error_bridge():
    @guarded
    def bad(kind):
        raise {"value": ValueError("k > E is not allowed"), "bug": KeyError("x")}[kind]

    with pytest.raises(gr.Error, match="k > E is not allowed"):
        bad("value")
    with pytest.raises(gr.Error, match="Something went wrong on the server") as info:
        bad("bug")
    assert "Traceback" not in str(info.value)

    @guarded
    def stream():
        yield 1
        raise ValueError("stopped at step 2")
    gen = stream()
    assert next(gen) == 1
    with pytest.raises(gr.Error, match="stopped at step 2"):
        next(gen)


def test_the_served_queue_looks_for_events_every_few_ms_not_every_one(server_url):
    """Gradio's queue polls for events every 1 ms when it has none (9.5 % of a core idle here); the app
    makes it QUEUE_POLL_S (``bench/bench_idle.py`` measures the CPU), and a launch keeps it."""
    import app
    assert app.demo._queue.sleep_when_free == app.QUEUE_POLL_S == 0.005


def _colorbar_titles(value) -> list[dict]:
    """Every colour bar's title in a figure (a ``PlainFigure``, a Plotly dict, or a nesting of them)."""
    if hasattr(value, "to_plotly_json") and not isinstance(value, dict):
        value = value.to_plotly_json()
    if isinstance(value, dict):
        found = [value["colorbar"]["title"]] if isinstance(value.get("colorbar"), dict) and \
            "title" in value["colorbar"] else []
        return found + [t for v in value.values() for t in _colorbar_titles(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _colorbar_titles(v)]
    return []


def test_no_colour_bar_turns_chinese_on_its_side():
    """Regression: colour-bar titles read upward beside the bar ("side": "right"), and in Chinese every
    character lay on its side. A CJK title now sits above its bar, level; a Latin one stays beside it."""
    from components.attention_heads import attention_heads
    from components.masks import compute_masks
    from components.positions import positions_compare
    from components.tensors import set_preset, tensor_layout

    titles = {}
    for lang in ("zh-CN", "en"):
        request = types.SimpleNamespace(headers={"accept-language": lang})
        preset = set_preset("heads_merge")                                  # a copy: the two bars
        outs = [compute_masks(request=request), attention_heads(mode="heatmap", request=request),
                positions_compare(request=request),
                tensor_layout(preset["shape"], preset["ops"], preset["step"], request=request)]
        titles[lang] = _colorbar_titles([list(out.values()) for out in outs])
    cjk = [t for t in titles["zh-CN"] if re.search(r"[\u4e00-\u9fff]", t.get("text", ""))]
    assert len(cjk) >= 6 and {t["side"] for t in cjk} == {"top"}
    assert {t["side"] for t in titles["en"] if "side" in t} == {"right"}


def test_on_a_space_the_app_serves_its_page_itself(own_app_url):
    """A Space sets GRADIO_SSR_MODE=true, which would start Gradio's Node server beside the app to serve the page
    (an 18 KB shell, uncompressed, none of it tested here); ``app.LAUNCH_KWARGS`` turns it off, so that the
    Space serves what the tests test: the page with its config, compressed (components/compression.py)."""
    import urllib.request

    import brotli
    asked = urllib.request.Request(own_app_url, headers={"Accept-Encoding": "br"})
    with urllib.request.urlopen(asked, timeout=60) as r:
        assert r.headers.get("Content-Encoding") == "br"
        assert b"window.gradio_config" in brotli.decompress(r.read())


def test_the_page_is_sent_compressed(server_url):
    """Gradio compresses by a path's extension, which left ``GET /`` (1.8 MB) whole; the app's middleware
    (components/compression.py) sends it as Brotli, or gzip to a client without Brotli, and the page read
    back is the page. A script keeps Gradio's own compression, once."""
    import gzip
    import urllib.request

    import brotli

    def get(path: str, encoding: str | None) -> tuple[bytes, str | None]:
        headers = {"Accept-Encoding": encoding} if encoding else {}
        asked = urllib.request.Request(server_url.rstrip("/") + path, headers=headers)
        with urllib.request.urlopen(asked, timeout=60) as r:
            return r.read(), r.headers.get("Content-Encoding")

    page, encoding = get("/?masks_T=8", None)
    assert encoding is None and b"window.gradio_config" in page
    sent, encoding = get("/?masks_T=8", "gzip, deflate, br")
    assert encoding == "br" and len(sent) < len(page) / 4
    assert brotli.decompress(sent) == page
    sent, encoding = get("/", "gzip")
    assert encoding == "gzip" and gzip.decompress(sent) == page
    script = "/" + re.search(rb'src="\./(assets/index-[^"]+\.js)"', page).group(1).decode()
    sent, encoding = get(script, "br")
    assert encoding == "br" and brotli.decompress(sent) == get(script, None)[0]   # compressed once, not twice


def test_chinese_lines_compose_with_chinese_punctuation_and_no_english_comment():
    """What a learner's trial of the Chinese page found: a Calculator summary line "KV 缓存布局（YOCO）: …" and
    "8.49 B (与嵌入…)", headings "置换." and "代码:" over the RoPE layouts' check, "被拒绝。 PyTorch:" in the
    Tensors table, and English comments in code shown on the page ("# even dims, then odd", "# the residual
    stream into the block")."""
    from models import tensors
    from models.attention_explore import steps
    from models.calculator import PRESETS, RunSettings, analyze
    from viz.calculator import summary_markdown
    from viz.positions_compare import conventions_markdown
    from viz.tensors import steps_markdown

    summary = summary_markdown(analyze(PRESETS["Gemma-3-12B"], RunSettings()), "zh-CN")
    assert not re.search(r"</b>: |\d (B|%) \(|[\u4e00-\u9fff）] \(", summary), summary
    conventions = conventions_markdown([0, 2, 1, 3], [0, 2, 1, 3], {"float64": 0.0, "float32": 1e-7},
                                       {"meta": 1.0, "hf": 1.0}, "zh-CN")
    assert "**." not in conventions and ":**" not in conventions and "even dims" not in conventions
    table = steps_markdown(tensors.replay(*tensors.PRESETS["heads_merge"]).steps, "zh-CN")
    assert "被拒绝。PyTorch：`" in table and "。 " not in table
    source = Path(steps.__file__).read_text(encoding="utf-8")
    comments = re.findall(r'steps\.add\("\w+", "[^"]*#([^"]*)"', source)      # the code lines the page shows
    assert not [c for c in comments if re.search("[A-Za-z]{2,} [A-Za-z]{2,}", c)], comments    # notation, no prose
