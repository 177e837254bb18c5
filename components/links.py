"""Links between tabs: a button in one tab that opens another on what the first one shows.

The KV Cache tab's "Look inside" opens the Attention tab on the text the tiny GPT wrote and the trained
model of the same attention: the heads that produced the text, read through every view. Each tab says
what it offers (``kv.build``'s ``look_inside``: the button, and a function of its controls returning
``{"attn_model": …, "attn_prompt": …}``) and what it can be opened on (``attention.build``'s ``opens``:
the model and prompt, and the redraw of the view shown); the app, which holds both, wires them here.
Built without the tab to open, the button is hidden.
"""
from __future__ import annotations


import gradio as gr

from components.wiring import event


def look_inside(tabs: gr.Tabs, source: dict | None, target: dict | None, target_tab: str = "attention") -> None:
    """Wire ``source["button"]``: one event sets ``target``'s model and prompt to what ``source["fn"]``
    returns and selects ``target_tab`` (drawn there the first time, as any tab); then the target's view
    shown redraws with them (a tab already drawn would keep its figures)."""
    if source is None:
        return
    if target is None:
        source["button"].visible = False                 # a page built without the tab to open
        return
    controls = {**vars(source["controls"]), "attn_model": target["model"], "attn_prompt": target["prompt"]}
    setting = event(source["fn"], controls, ("attn_model", "attn_prompt"))

    def opened(request: gr.Request, *values) -> dict:     # Gradio fills a positional request only
        return {**setting["fn"](*values, request), tabs: gr.Tabs(selected=target_tab)}

    source["button"].click(opened, setting["inputs"], [*setting["outputs"], tabs], api_visibility="private",
                           show_progress="hidden").then(api_visibility="private", show_progress="hidden",
                                                        **target["redraw"])
