"""Links between tabs: a button in one tab that opens another on what the first one shows.

The KV Cache tab's "Look inside" opens the Attention tab on the text the tiny GPT wrote and the trained
checkpoint of the same attention: the heads that wrote it, when the KV tab ran the trained widths (GQA-2,
MLA 32; other widths run seeded random weights there).

Each tab says what it offers (``kv.build``'s ``look_inside``: the button, and a function of its controls
returning ``{"attn_model": …, "attn_prompt": …}``) and what it can be opened on (``attention.build``'s
``opens``: the model and prompt, the redraw of the view shown, the views); the app, which holds both,
wires them here. Built without the tab to open, the button is hidden.
"""
from __future__ import annotations

import gradio as gr

from components.wiring import event


def look_inside(tabs: gr.Tabs, source: dict | None, target: dict | None, target_tab: str = "attention") -> None:
    """Wire ``source["button"]``: one event sets ``target``'s model and prompt to what ``source["fn"]``
    returns, selects ``target_tab`` (drawn there the first time, as any tab) and, if the target's view
    shown reads neither (FlashAttention), its first view that does; then the view shown redraws with them
    (a tab already drawn would keep its figures)."""
    if source is None:
        return
    if target is None:
        source["button"].visible = False                 # a page built without the tab to open
        return
    controls = {**vars(source["controls"]), "attn_model": target["model"], "attn_prompt": target["prompt"]}
    setting = event(source["fn"], controls, ("attn_model", "attn_prompt"))
    reading = target["reading"]

    def opened(request: gr.Request, shown: str, *values) -> dict:     # Gradio fills a positional request only
        updates = {**setting["fn"](*values, request), tabs: gr.Tabs(selected=target_tab)}
        if shown not in reading:
            updates[target["views"]] = gr.Tabs(selected=reading[0])
        return updates

    outputs = [*setting["outputs"], tabs, target["views"]]
    source["button"].click(opened, [target["shown"], *setting["inputs"]], outputs, api_visibility="private",
                           show_progress="hidden").then(
        api_visibility="private", show_progress="hidden", **target["redraw"])
