"""Shared fixtures: the app served once per session on a free port, a client, a browser.

Three levels of tests, one pattern per tab:
1. backend (``models/``) properties against independent references;
2. the app through ``gradio_client`` on the tab's named endpoint (``client`` fixture);
3. a real browser (``page`` fixture from pytest-playwright, Debian's Chromium), marked ``e2e``. A test
   opens its tab by link (``?tab=masks``): the page then draws that tab, not the first one as well.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("LLM_ANATOMY_DEVICE", "auto")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(demo) -> str:
    """Serve ``demo`` in this process the way ``python app.py`` does; its URL. A free port can be taken
    between ``free_port`` closing it and the server binding it (Gradio then raises ``OSError``): one of 16
    workers on a lent GPU machine lost its server at start, so a taken port is tried again, twice."""
    import app
    for attempt in range(3):
        try:
            _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                                    quiet=True, **app.LAUNCH_KWARGS)
            return url
        except OSError:
            if attempt == 2:
                raise


@pytest.fixture(scope="session")
def whole_app_url():
    """The real app, every tab, launched in-process."""
    import app
    yield launch(app.demo)
    app.demo.close()


@pytest.fixture(scope="module")
def server_url(request):
    """The app a test module drives: the whole app, or, where the module sets ``APP_TABS = ("masks",)``,
    the app built with those tabs alone (``app.build_demo(only=...)``), served for that module. A tab's
    browser tests use that: the page is the same tab with the same wiring, and it loads and answers events
    in less of the browser's time, since Gradio's front end walks every block of the page for each load and
    event (813 blocks for the whole app). A module whose tests cross tabs names them all (share links); the
    tour keeps the whole app."""
    tabs = getattr(request.module, "APP_TABS", None)
    if tabs is None:
        yield request.getfixturevalue("whole_app_url")
        return
    import app
    demo = app.build_demo(only=tuple(tabs))
    yield launch(demo)
    demo.close()


@pytest.fixture(scope="session")
def own_app_url():
    """``python app.py`` in a process of its own, warmed up: for tests whose clients must not share the
    server's GIL (the fuzz, the load test). One for the session: each start is ~15 s of CPU."""
    from tests.load_harness import served_app
    with served_app() as url:
        yield url


@pytest.fixture(scope="session")
def client(whole_app_url):
    from gradio_client import Client
    # A cancel is a plain httpx.post (5 s by default): on a starved runner it timed out (test_moe_api).
    return Client(whole_app_url, verbose=False, download_files=False, analytics_enabled=False,
                  httpx_kwargs={"timeout": 60})


def eventually(holds, within: float = 30.0, every: float = 0.05) -> bool:
    """Wait until ``holds()`` is true, at most ``within`` seconds; whether it is (the test asserts on state).

    >>> eventually(lambda: True), eventually(lambda: False, within=0.1)
    (True, False)
    """
    deadline = time.monotonic() + within
    while not holds():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def cancel_and_settle(job, within: float = 60.0) -> None:
    """Cancel a submitted job (Gradio's Stop) and wait until no worker of this server is left: the next call
    on the same client must not start while this one's stream is still closing (a /norm_gradients call
    right after a cancelled /norm_train failed once with gradio_client's CancelledError on a loaded runner)."""

    from components.worker import running_jobs
    job.cancel()
    eventually(lambda: not running_jobs() and job.done(), within)


def cancel_after_first_update(job, within: float = 120.0) -> list:
    """Wait for a streaming job's first update, cancel it (Gradio's Stop), wait until no worker of this
    server is left (a process on the CPU, a thread on CUDA), and return the updates it sent. Asserts the
    job streamed from a worker and that the worker ended."""

    from components.worker import running_jobs
    eventually(job.outputs, within / 2)
    assert job.outputs() and running_jobs()                         # it streams, from a worker
    job.cancel()
    eventually(lambda: not running_jobs(), within / 2)
    assert not running_jobs()
    return job.outputs()


class SlowJob:
    """A streamed job run in a thread of this process (the app's runner on CUDA), each item ``pace``
    seconds apart and counted: the job then lasts long enough for Stop to land mid-way on any machine
    (on an H100 a 480-token generation ended before Stop reached it), and whether it did is a count.
    ``module.name`` is the job's function, looked up when the handler runs. (Holding the job until Stop
    does not work: Gradio's cancel waits for the item in progress.)
    """

    def __init__(self, monkeypatch, module, name: str, pace: float):
        import functools

        from components import worker
        monkeypatch.setattr(worker, "uses_processes", lambda: False)
        self.items = 0
        job = getattr(module, name)

        @functools.wraps(job)                   # the worker thread is named after the job
        def slow(*args, **kwargs):
            for item in job(*args, **kwargs):
                time.sleep(pace if self.items else 0)
                self.items += 1
                yield item
        monkeypatch.setattr(module, name, slow)


def plot_json(value) -> dict:
    """The figure dict inside a ``gr.Plot`` value returned by ``gradio_client``."""
    return json.loads(value["plot"]) if isinstance(value, dict) and "plot" in value else value


def plot_array(value) -> list:
    """A trace's ``x``/``y``/``z`` as a list, whether plotly sent it as a list or as a typed array
    (``{"dtype": "f4", "bdata": <base64>, "shape": "4, 9"}``, what numpy arrays become)."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        if "shape" in value:
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return array.tolist()
    return value


def raw_call(url: str, name: str, data: list, timeout: float = 120.0, *, session: str | None = None,
             final: bool = False, client=None) -> tuple[str, str]:
    """Call endpoint ``name`` over Gradio's HTTP API; return ``(event, payload)`` of the first result.

    The JSON is written here (NaN and lone surrogates included, which gradio_client refuses to send);
    ``event`` is "complete", "error", "generating" (a stream's first update) or "rejected".
    ``session`` is a session hash: calls that share one share their ``gr.State``. ``final``: wait for
    a stream's last result ("complete" or "error") instead of its first update. ``client``: an
    ``httpx.Client`` to reuse (a new one costs ~25 ms of CPU, mostly its TLS context).
    """
    import httpx

    if client is None:
        with httpx.Client() as own:
            return raw_call(url, name, data, timeout, session=session, final=final, client=own)
    payload = {"data": data, **({"session_hash": session} if session else {})}
    body = json.dumps(payload, allow_nan=True)                 # NaN -> NaN, "\ud800" -> "\\ud800"
    r = client.post(f"{url}gradio_api/call/{name}", content=body,
                    headers={"content-type": "application/json"}, timeout=timeout)
    if r.status_code != 200:
        return "rejected", r.text
    event_id = r.json()["event_id"]
    event = None
    with client.stream("GET", f"{url}gradio_api/call/{name}/{event_id}", timeout=timeout) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: ") and event in ("complete", "error", "generating"):
                if event == "generating" and final:
                    continue
                return event, line[len("data: "):]
    return event, ""


@pytest.fixture(scope="session", autouse=True)
def jobs_not_idle():
    """Long work in the servers of this process runs at niceness +10 but not ``SCHED_IDLE``
    (``components.worker.IDLE_POLICY``). On a Space a job yields to the server's own requests; here the
    other pytest worker and its Chromium keep both cores busy, and an idle job got next to nothing: beside
    two busy loops a 60-token KV generation had not ended after 95 s (4.3 s niced only, once started).
    The app launched as its own process (the fuzz and load tests) keeps the policy it ships with."""
    from components import worker
    worker.IDLE_POLICY = False


@pytest.fixture(scope="session", autouse=True)
def patient_expect():
    """Browser assertions wait up to 15 s, not Playwright's 5: the browser tests share the machine with the
    backend tests (``pytest_xdist_make_scheduler``), and a figure that takes 3 s alone can take twice that then."""
    try:
        from playwright.sync_api import expect
    except ImportError:                               # a backend-only install
        return
    expect.set_options(timeout=15_000)


@pytest.fixture(autouse=True)
def patient_actions(request):
    """A click or fill waits up to 60 s, not Playwright's 30, for the page to take it: on a busy 2-core
    machine (a slower one lent to CI, a training run in the other worker) a page still parsing its
    scripts kept a tab's click waiting past 30 s once. The page's events and script errors are recorded
    for a failure's report (:func:`pytest_runtest_makereport`)."""
    logs = []
    if "page" in request.fixturenames:
        page = request.getfixturevalue("page")
        page.set_default_timeout(60_000)
        logs.append(page_log(page))
    if "browser" in request.fixturenames:           # the pages a test opens itself (a Chinese context, say)
        browser, patch = request.getfixturevalue("browser"), request.getfixturevalue("monkeypatch")
        new_context, new_page = browser.new_context, browser.new_page

        def logged_context(*args, **kwargs):
            context = new_context(*args, **kwargs)
            context.on("page", lambda opened: logs.append(page_log(opened)))
            return context

        def logged_page(*args, **kwargs):
            opened = new_page(*args, **kwargs)
            logs.append(page_log(opened))
            return opened
        patch.setattr(browser, "new_context", logged_context)
        patch.setattr(browser, "new_page", logged_page)
    request.node.page_log = lambda: "\n\n".join(read() for read in logs) or "(no page)"


def page_log(page):
    """Start recording what a failure's report needs to tell a lost event from a slow one: the events the
    page sends (:func:`events_sent`) and the errors its scripts log or throw; returns their reader."""
    events, errors = events_sent(page), []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    return lambda: events() + "\n" + ("\n".join(errors[-20:]) or "(no script error)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report ends with its page's log (see :func:`page_log`): a first draw that
    never came (once in ~10 CI runs) says whether the page sent the events that draw it."""
    report = yield
    read = getattr(item, "page_log", None)
    if report.failed and read is not None:
        try:
            report.sections.append(("the page's events and script errors", read()))
        except Exception as exc:                       # a closed page: the report itself must not fail
            report.sections.append(("the page's events and script errors", f"(unreadable: {exc})"))
    return report


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, never a downloaded browser. In CI a missing browser is a failure."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: .ci/run must install Debian's chromium")
        pytest.skip("no system chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--disable-gpu"]}


def wait_until_still(page, selector: str, *, quiet_ms: int = 2500, timeout: float = 60_000) -> str:
    """Wait until the value of the input at ``selector`` has not changed for ``quiet_ms``; return it.

    What a paused animation must do: a timer still running changes the value every frame (0.3-0.4 s),
    so a value that holds for several frames' time is a stopped one, whatever the machine's load.
    Frames already in flight when Pause was pressed land first and restart the quiet period.
    """
    page.evaluate("sel => { delete (window.__stillSince ?? {})[sel]; }", selector)
    page.wait_for_function(
        """([sel, quiet]) => {
            const value = document.querySelector(sel)?.value;
            const seen = (window.__stillSince ??= {})[sel];
            if (!seen || seen.value !== value) {
                window.__stillSince[sel] = {value, since: performance.now()};
                return false;
            }
            return performance.now() - seen.since >= quiet;
        }""", arg=[selector, quiet_ms], polling=100, timeout=timeout)
    return page.locator(selector).input_value()


def text_overlaps(figure, pairs: list[tuple[str, str]]) -> list[str]:
    """``"text / text"`` for every box matched by the first selector of a pair that overlaps one matched by
    the second, inside the Plotly ``figure`` (a locator of its ``.js-plotly-plot``); zero-width boxes skipped."""
    return figure.evaluate("""(g, pairs) => {
        const boxes = (sel) => [...g.querySelectorAll(sel)].map((el) => [el.textContent, el.getBoundingClientRect()])
            .filter(([, r]) => r.width);
        const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        return pairs.flatMap(([p, q]) => boxes(p).flatMap(([s, a]) => boxes(q).filter(([, b]) => meet(a, b))
            .map(([t]) => `${s} / ${t}`)));
    }""", [list(pair) for pair in pairs])


def broken_words(root, selector: str, word: str = "[A-Za-z0-9]+") -> list[str]:
    """The words (runs matching the JavaScript regex ``word``) in the visible elements under ``root`` (a
    locator) matched by ``selector`` that the browser broke across lines. Latin letters and digits by
    default: a hyphen may end a line, and Chinese may break between any two characters."""
    return root.evaluate("""(root, [selector, word]) => [...root.querySelectorAll(selector)]
        .filter((el) => el.offsetParent !== null).flatMap((el) => {
            const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), broken = [];
            for (let node; (node = walker.nextNode());) {
                for (const w of node.data.matchAll(new RegExp(word, "g"))) {
                    const range = document.createRange();
                    range.setStart(node, w.index);
                    range.setEnd(node, w.index + w[0].length);
                    if (new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1) broken.push(w[0]);
                }
            }
            return broken;
        })""", [selector, word])


PUSHED = """g => !g._fullLayout ? ["not drawn"] :
    ["l", "r", "t", "b"].filter((side) => Math.abs(g._fullLayout._size[side] - g._fullLayout.margin[side]) > 1)"""


def pushed_margins(figure, settle_ms: int = 10_000) -> list[str]:
    """The sides of a Plotly figure (a locator of its ``.js-plotly-plot``) whose drawn margin is more than
    1 px past the one its layout set: a legend or labels pushed it, and Plotly drew the figure twice
    (``["not drawn"]`` before its first draw). Waits up to ``settle_ms`` for none (a draw in flight may
    show its first pass), then reads them."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    try:
        figure.page.wait_for_function(f"g => ({PUSHED})(g).length === 0", arg=figure.element_handle(),
                                      timeout=settle_ms)
    except PlaywrightTimeoutError:
        pass
    return figure.evaluate(PUSHED)


def gap_under_label(block, title_start: str) -> float:
    """Pixels from the bottom of a figure block's label (Gradio draws it over the figure's top left) down to
    the top of the figure's text that starts with ``title_start``; negative when the label covers it."""
    return block.evaluate("""(block, start) => {
        const label = block.querySelector("[data-testid=block-label]").getBoundingClientRect();
        const title = [...block.querySelectorAll(".annotation-text")].find((t) => t.textContent.startsWith(start));
        return title.getBoundingClientRect().top - label.bottom;
    }""", title_start)


def message_shown(page, text: str):
    """The toast message holding ``text`` that a learner sees. A toast body lists every message of its kind
    and components/toasts.py shows only the newest: the same refusal sent twice (a number box's input, then
    its Enter) is two items, the first hidden, so ``get_by_text(...).first`` can find a hidden one."""
    return page.locator(".toast-message-item").filter(has_text=text).filter(visible=True)


def slow_down(monkeypatch, module, name: str, seconds: float = 0.5, calls: list | None = None) -> None:
    """``module.name``, a function, called ``seconds`` late from now on: the event that calls it is still on
    its way when the test's next trigger comes (what a distant Space or a busy machine does by chance).
    ``calls`` gets each call's keyword arguments as it arrives (before the wait)."""
    fn = getattr(module, name)

    def late(*args, **kwargs):
        if calls is not None:
            calls.append(kwargs)
        time.sleep(seconds)
        return fn(*args, **kwargs)
    monkeypatch.setattr(module, name, late)


def events_sent(page):
    """Start recording the events the page sends (each queue join's ``fn_index``, ``trigger_id`` and the time
    since recording began, and each answer's status); returns a function that reads them as lines. For a
    failure message: whether an event was late, refused or never sent."""
    start, lines = time.monotonic(), []

    def sent(request):
        if "/queue/join" in request.url:
            body = json.loads(request.post_data or "{}")
            lines.append(f"{time.monotonic() - start:6.2f} s  join fn {body.get('fn_index')} "
                         f"trigger {body.get('trigger_id')}")

    def answered(response):
        if "/queue/join" in response.url:
            lines.append(f"{time.monotonic() - start:6.2f} s  joined: HTTP {response.status}")
    page.on("request", sent)
    page.on("response", answered)
    return lambda: "\n".join(lines) or "(no event sent)"


def errors_seen(page):
    """Start recording every error toast the page shows, even one closed a moment later (the learner's
    next click closes the errors shown before it, components/toasts.py); returns a function that reads
    the messages recorded so far."""
    page.evaluate("""() => {
        window.__errorsSeen = new Set();
        const record = () => document.querySelectorAll(".toast-body.error .toast-message-item, .toast-body.error")
            .forEach((el) => { const text = el.textContent.trim(); if (text) window.__errorsSeen.add(text); });
        new MutationObserver(record).observe(document.body, { childList: true, subtree: true, characterData: true });
    }""")
    return lambda: page.evaluate("() => [...window.__errorsSeen]")


@pytest.fixture
def shot(tmp_path_factory, request):
    """``shot(page, name)``: with ``SCREENSHOTS=1`` in the environment, a full-page screenshot under the pytest
    tmp dir (its path returned), to look at; otherwise nothing. The browser tests take ~60, at 0.2–0.35 s of
    the critical path each: the default run asserts, a person looks when asked."""
    if os.environ.get("SCREENSHOTS") != "1":
        return lambda page, name: None
    folder = tmp_path_factory.mktemp("screenshots")

    def take(page, name: str) -> Path:
        path = folder / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path
    return take


@pytest.fixture
def one_thread():
    """Training tests on tiny models: one torch thread is as fast, and immune to oversubscription on a
    busy CI machine (two threads on two shared cores ran a 100-step sweep ~10x slower)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# Browser test files that run last, a test at a time, in whichever worker is free: on a 2-core machine the
# backend worker ran out of work ~250 s before the browser worker; these take ~80 s of it. One test at a time,
# so that both workers end together (taken as one unit, the ~80 s ran alone at the end while the other
# worker idled). Chosen for being tab tours and instant views, with nothing timed (no Play, Stop or toast
# racing a keystroke): two Chromiums may run them at once.
LAST_BROWSER_FILES = ("test_tour_ui.py", "test_calculator_ui.py")
# Browser test files that run first, beside the backend tests and never beside the second Chromium of the
# last files: they time a toast's close (5 s, well before Gradio's 10), and one failed once with two Chromiums.
FIRST_BROWSER_FILES = ("test_toasts_ui.py",)


def pytest_collection_modifyitems(items):
    """The tests of :data:`FIRST_BROWSER_FILES` first, the rest in their order (a stable sort): the
    browser worker runs its tests in collection order."""
    items.sort(key=lambda item: not item.nodeid.split("::")[0].endswith(FIRST_BROWSER_FILES))


@pytest.hookimpl(optionalhook=True)            # ``-p no:xdist`` runs the suite in one process
def pytest_xdist_make_scheduler(config, log):
    """Under ``pytest -n N`` the browser tests (``tests/*_ui.py``) run in one worker, one after another,
    while the other workers take the other tests one by one: one Chromium at a time (two renderers on two
    cores made clicks time out), and the browser's idle time goes to the backend tests. The files of
    :data:`LAST_BROWSER_FILES` are one unit a test, kept behind all other work: a worker out of other work
    takes them one by one, and only then do two Chromiums run at once. It replaces whatever ``--dist`` asks
    for. (``--dist loadgroup`` would say this with marks, but does not group under pytest 9.)"""
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if "_ui.py::" not in nodeid:
                return nodeid
            return f"browser-last {nodeid}" if nodeid.split("::")[0].endswith(LAST_BROWSER_FILES) else "browser"

        def _assign_work_unit(self, node) -> None:
            last = [scope for scope in self.workqueue if scope.startswith("browser-last")]
            if len(last) < len(self.workqueue):
                for scope in last:
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return BrowserTestsTogether(config, log)
