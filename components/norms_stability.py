"""The Normalization tab's fourth section: training stability (QK-norm, the z-loss, softmax overflow).

``/softmax_overflow`` (instant): the same logits through softmax in float32, bfloat16 and float16,
naive and max-subtracted. ``/stability_sweep`` (long, on the heavy queue, streamed, with Stop): the
learning-rate sweep of :func:`models.stability.stability_sweep` in a low-priority worker.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.widgets import Number, Slider
from components.wiring import event
from models.limits import STAB_D_MODEL, STAB_LOGIT_SCALE, STAB_LR, STAB_LRS, STAB_STEPS, STAB_Z_LOSS

STREAM_EVERY_S = 0.5                 # the sweep's figures at most this often


def softmax_overflow(scale: float = 12.0, request: gr.Request = None) -> dict:
    """The ``/softmax_overflow`` endpoint: probabilities per dtype and method, what overflowed, the device."""
    from models.stability import softmax_overflow as compute
    from viz.stability import overflow_figure, overflow_summary

    lang = lang_of(request)
    result = compute(scale)
    return {"overflow": overflow_figure(result, lang), "overflow_summary": overflow_summary(result, lang),
            "overflow_device": str(result.timing)}


def stability_sweep(lr_min: float = 1e-3, lr_max: float = 0.1, n_lrs: int = 5, steps: int = 200,
                    d_model: int = 64, z_loss: float = 1e-2, seed: int = 0, request: gr.Request = None):
    """The ``/stability_sweep`` endpoint: streams the final-loss figure, the curves at the learning rate
    being trained, the findings and the progress line."""
    from models.stability import SweepConfig, SweepLog, stability_sweep as sweep
    from viz.stability import curves_figure, final_loss_figure, findings_text, status_text

    lang = lang_of(request)
    steps = STAB_STEPS.whole("steps", steps)                           # the sliders' spans; the sweep takes more
    d_model = STAB_D_MODEL.whole("d_model", d_model)
    config = SweepConfig(lr_min=lr_min, lr_max=lr_max, n_lrs=n_lrs, steps=steps, d_model=d_model, z_loss=z_loss,
                         seed=seed)                                     # bad settings: a message, no worker
    log, last = SweepLog(config), 0.0
    for update in low_priority(sweep, config):                         # the instant tabs keep the CPU
        log.add(update)
        now = time.perf_counter()
        if not update.done and now - last < STREAM_EVERY_S:
            continue
        last = now
        yield {"final": final_loss_figure(log, lang), "curves": curves_figure(log, lang),
               "findings": findings_text(log, lang), "status": status_text(log, lang)}


def first_draw(scale: float = 12.0, request: gr.Request = None) -> dict:
    """The overflow view, and the sweep's figures saying how to fill them."""
    from locales import tr
    from viz.common import waiting

    message = tr(lang_of(request), "stability_wait_sweep")
    return {**softmax_overflow(scale, request=request), "final": waiting(message), "curves": waiting(message)}


def build() -> dict:
    """Lay out the section inside the current tab, wire its events, return its first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("stability_heading"))
    gr.Markdown(t("stability_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            gr.Markdown(t("stability_overflow_heading"))
            ui.scale = Slider.over(STAB_LOGIT_SCALE, 12.0, label=t("stability_scale"), elem_id="stability_scale")
        with gr.Column(scale=3):
            ui.overflow = gr.Plot(label=t("stability_overflow_plot"), elem_id="stability_overflow")
            ui.overflow_summary = gr.Markdown(elem_id="stability_overflow_summary")
            ui.overflow_device = device_line("stability_overflow_device")
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            gr.Markdown(t("stability_sweep_heading"))
            with gr.Row():
                ui.lr_min = Number.over(STAB_LR, 1e-3, label=t("stability_lr_min"), elem_id="stability_lr_min")
                ui.lr_max = Number.over(STAB_LR, 0.1, label=t("stability_lr_max"), elem_id="stability_lr_max")
            ui.n_lrs = Slider.over(STAB_LRS, 5, label=t("stability_n_lrs"), elem_id="stability_n_lrs")
            ui.steps = Slider.over(STAB_STEPS, 200, label=t("stability_steps"), elem_id="stability_steps")
            ui.d_model = Slider.over(STAB_D_MODEL, 64, label=t("stability_width"), elem_id="stability_width")
            with gr.Row():
                ui.z_loss = Number.over(STAB_Z_LOSS, 1e-2, label=t("stability_z_coef"), elem_id="stability_z_coef")
                ui.seed = Number.seed(t("stability_seed"), "stability_seed")
            with gr.Row():
                ui.run = gr.Button(t("stability_run_button"), variant="primary", elem_id="stability_run")
                ui.stop = gr.Button(t("stability_stop"), variant="stop", elem_id="stability_stop")
        with gr.Column(scale=3):
            ui.final = gr.Plot(label=t("stability_final_plot"), elem_id="stability_final")
            ui.curves = gr.Plot(label=t("stability_curves_plot"), elem_id="stability_curves")
            ui.findings = gr.Markdown(elem_id="stability_findings")
            ui.status = gr.Textbox(label=t("stability_status_label"), interactive=False, max_lines=1,
                                   elem_classes="device-line", elem_id="stability_status")
    explain("stability_explain")

    outputs = ("overflow", "overflow_summary", "overflow_device")
    ui.scale.input(api_name="softmax_overflow", trigger_mode="always_last", show_progress="hidden",
                   **event(softmax_overflow, ui, outputs))
    long_run([ui.run.click], ui.stop, ui.status, api_name="stability_sweep",
             **event(says_done(stability_sweep), ui, ("final", "curves", "findings", "status")))
    return dict(show_progress="hidden", **event(first_draw, ui, (*outputs, "final", "curves")))
