"""Error toasts a learner can read: the newest message only, under a title in the page's language (a
warning's title too).

Gradio 6 groups every error of a page into one toast titled with the message type ("Error", in
English whatever the page's language; ``gr.Error(title=...)`` is not shown) and lists each new error
under the old ones, so after a few wrong values the newest message is at the bottom of a growing
stack. :data:`TOAST_JS` runs once when the page loads (``launch(js=...)``) and keeps every toast
tidy as it changes: the title in the language the server answers in (the browser's first language,
as :func:`components.i18n.lang_of` reads it from the request) and only the newest message shown.
An error is about the value that caused it, so the learner's next action (a committed value, a
dropdown's choice, a button, a tab) closes the errors shown before that action began, as their close
button does: a request that fails again shows a new one, one that succeeds leaves no stale error above
its figure, and an error raised while the value was still being typed or dragged stays up when it is
committed (a key typed or a drag step after it closes it: it was about the value before). Until then it
stays (``components.wiring.user_error``): the figures still show the last values drawn, not the
refused one.

A warning that repeats an error shown beside it is hidden (a link's value that the tab's draw and its
sub-tab's own event both refuse).

Two values a slider would never send, the script sends: Gradio drops the value queued behind a request
that fails (typing 15 where 2 is the minimum sent 1 and never 15; a heads slider moved from 4 to 8 sent 5,
which does not divide the width, and never 8), so such a value is sent again once the typing or the drag
settles; and a value the number box clamps on blur (99 to 24) is sent, the errors about what was typed
closed with it.
"""
from __future__ import annotations

import json

from locales import LOCALES, tr

_TITLES = {lang: {kind: tr(lang, f"{kind}_title") for kind in ("error", "warning")} for lang in LOCALES}

TOAST_JS = """
() => {
  const titles = %s;
  const lang = ((navigator.languages && navigator.languages[0]) || navigator.language || "").toLowerCase();
  const title = lang.startsWith("zh") ? titles["zh-CN"] : titles["en"];
  const tidy = () => {
    const now = performance.now();
    // A warning that says what an error on screen says (a link's value refused both by the tab's draw
    // and by its sub-tab's own event) is not shown twice.
    // Gradio keeps one body per kind while any of its messages lives: a later warning lands in it.
    const said = new Set([...document.querySelectorAll(".toast-body.error .toast-message-item")]
      .filter((item) => item.style.display !== "none").map((item) => item.textContent.trim()));
    for (const body of document.querySelectorAll(".toast-body.warning")) {
      const items = [...body.querySelectorAll(".toast-message-item")];
      items.forEach((item) => { item.style.display = said.has(item.textContent.trim()) ? "none" : ""; });
      body.style.display = items.length && items.every((item) => item.style.display === "none") ? "none" : "";
    }
    for (const body of document.querySelectorAll(".toast-body.warning, .toast-body.error")) {
      const label = body.querySelector(".toast-title");
      const text = (body.classList.contains("error") ? title.error : title.warning) + " ";
      if (label && label.firstChild && label.firstChild.nodeValue !== text) label.firstChild.nodeValue = text;
      if (!body.classList.contains("error")) continue;                // a share link's skipped value
      const items = body.querySelectorAll(".toast-message-item");
      items.forEach((item, i) => { item.style.display = i === items.length - 1 ? "" : "none"; });
      if (body.dataset.count !== String(items.length)) {         // a new message: when it was shown
        body.dataset.count = String(items.length);
        body.dataset.shownAt = String(now);
        resend(body);
      }
      body.querySelectorAll(".toast-separator, .toast-count").forEach((el) => { el.style.display = "none"; });
    }
  };
  // Gradio runs an input event once at a time and keeps the newest value for after the running one; when
  // the running one fails it drops that value: typing 12 after 99 sent 1 (an error) and never 12, and a
  // heads slider moved from 4 to 8 sent 5 (it does not divide the width) and never 8. So when an error
  // comes while keystrokes or drag steps were queued behind it, the control's value is sent again once it
  // settles, and that error (about a value it no longer holds) closes: a good value is drawn, a bad one
  // answers with its own error.
  let typed = null;                                  // the number box or slider moved last: when, steps since
  let timer = null;
  const stale = new Set();
  const resend = (body) => {
    if (!typed || performance.now() - typed.at > 10000 || !typed.box.isConnected) return;
    const queued = typed.keys > 1;                   // one key is the request that failed; more waited
    typed.keys = 0;
    if (!queued && timer === null) return;
    stale.add(body);
    settle();
  };
  const settle = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      const box = typed?.box;
      typed = null;
      stale.forEach(close);
      stale.clear();
      box?.dispatchEvent(new Event("input", { bubbles: true }));
    }, Math.max(0, typed.at + 400 - performance.now()));
  };
  // A slider's box clamps a typed 99 to its maximum when it loses focus and sends nothing: send the
  // clamped value, and close the errors about what was typed (the box no longer holds it).
  const typing = new WeakMap();                      // number box or slider -> when its typing or drag began
  document.addEventListener("focusout", (e) => {
    const box = e.target;
    if (!(box instanceof HTMLInputElement) || !["number", "range"].includes(box.type)) return;
    const before = box.value, since = typing.get(box);
    typing.delete(box);
    if (box.type !== "number") return;               // (only a number box clamps)
    setTimeout(() => {
      if (!box.isConnected || box.value === before) return;
      if (since !== undefined) closeFrom(since);
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }, 0);
  }, true);
  new MutationObserver(tidy).observe(document.body, { childList: true, subtree: true, characterData: true });
  // The learner's next action closes the errors shown before it began: a value committed (its first
  // keystroke or drag step is when it began, so an error it caused on the way stays), a button, a tab.
  const began = new WeakMap();
  // A slider sends each step, by its handle or its number box; a number box of its own sends only the value
  // committed (Enter or blur), so its keystrokes queue nothing, and the error it answers with stays.
  const sendsEachStep = (box) => box.type === "range" || !!box.closest(".block")?.querySelector("input[type=range]");
  document.addEventListener("input", (e) => {
    if (!began.has(e.target)) began.set(e.target, performance.now());
    if (e.isTrusted && e.target instanceof HTMLInputElement && ["number", "range"].includes(e.target.type)) {
      if (sendsEachStep(e.target)) {
        typed = { box: e.target, at: performance.now(), keys: (typed?.box === e.target ? typed.keys : 0) + 1 };
      } else if (timer === null) {
        typed = null;                                // a box of its own: a slider's steps before it are over
      }
      // An error that came back while this value was being typed or dragged is about a value the control
      // no longer holds (typing 15, the 1 refused before the 5): the new value is sent now and answers for itself.
      if (typing.has(e.target)) closeFrom(typing.get(e.target));
      else typing.set(e.target, performance.now());
      if (timer !== null) settle();                  // a resend waits for the last key
    }
  }, true);
  const close = (body) => body.querySelector("[data-testid='toast-close']")?.click();
  const errorsShown = () => [...document.querySelectorAll(".toast-body.error")];
  const closeBefore = (start) => errorsShown().filter((b) => Number(b.dataset.shownAt ?? 0) < start).forEach(close);
  const closeFrom = (start) => errorsShown().filter((b) => Number(b.dataset.shownAt ?? 0) >= start).forEach(close);
  document.addEventListener("change", (e) => {
    const start = began.get(e.target) ?? performance.now();
    began.delete(e.target);
    if (!e.target.closest?.(".toast-wrap")) closeBefore(start);
  }, true);
  // Another action ends the typing or the drag: an error that comes after it is about that action (a
  // Train refused), not about steps queued behind the control's request, and nothing is resent for it.
  const act = () => {
    if (timer === null) typed = null;
    closeBefore(performance.now());
  };
  document.addEventListener("click", (e) => {
    const control = e.target.closest?.("button, [role='tab']");
    if (control && !e.target.closest(".toast-wrap")) act();
  }, true);
  // A dropdown's choice fires no DOM change: the press on its option, or Enter in its box, is the action.
  document.addEventListener("pointerdown", (e) => {
    if (e.target.closest?.("[role='option']")) act();
  }, true);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target.getAttribute?.("role") === "combobox") act();
  }, true);
}
""" % json.dumps(_TITLES, ensure_ascii=False)
