"""Error toasts a learner can read: the newest message only, under a title in the page's language (a
warning's title too).

Gradio 6 groups every error of a page into one toast titled with the message type ("Error", in
English whatever the page's language; ``gr.Error(title=...)`` is not shown) and lists each new error
under the old ones, so after a few wrong values the newest message is at the bottom of a growing
stack. :data:`TOAST_JS` runs once when the page loads (``launch(js=...)``) and keeps every toast
tidy as it changes: the title in the language the server answers in (the browser's first language,
as :func:`components.i18n.lang_of` reads it from the request) and only the newest message shown.
An error is about the value that caused it, so the learner's next action (a committed value, a button,
a tab) closes the errors shown before that action began, as their close button does: a request that fails
again shows a new one, one that succeeds leaves no stale error above its figure, and an error raised while
the value was still being typed or dragged stays up when it is committed. Otherwise Gradio closes it
after its 10 s.
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
      }
      body.querySelectorAll(".toast-separator, .toast-count").forEach((el) => { el.style.display = "none"; });
    }
  };
  new MutationObserver(tidy).observe(document.body, { childList: true, subtree: true, characterData: true });
  // The learner's next action closes the errors shown before it began: a value committed (its first
  // keystroke or drag step is when it began, so an error it caused on the way stays), a button, a tab.
  const began = new WeakMap();
  document.addEventListener("input", (e) => {
    if (!began.has(e.target)) began.set(e.target, performance.now());
  }, true);
  const closeBefore = (start) => {
    for (const body of document.querySelectorAll(".toast-body.error")) {
      if (Number(body.dataset.shownAt ?? 0) < start) body.querySelector("[data-testid='toast-close']")?.click();
    }
  };
  document.addEventListener("change", (e) => {
    const start = began.get(e.target) ?? performance.now();
    began.delete(e.target);
    if (!e.target.closest?.(".toast-wrap")) closeBefore(start);
  }, true);
  document.addEventListener("click", (e) => {
    const control = e.target.closest?.("button, [role='tab']");
    if (control && !e.target.closest(".toast-wrap")) closeBefore(performance.now());
  }, true);
}
""" % json.dumps(_TITLES, ensure_ascii=False)
