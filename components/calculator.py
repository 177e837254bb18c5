"""The Calculator tab: parameters, FLOPs and memory of real models, every number with its formula."""
from __future__ import annotations

import re
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.share import CUSTOM
from components.widgets import Dropdown, Number, Radio
from components.wiring import control_names, event, grouped
from locales import LOCALES, tr
from models.calculator import (ATTENTION_KERNELS, BOOL_FIELDS, DTYPE_BYTES, FIELD_CHOICES, FIELD_RANGES,
                               OPTIMIZER_RECIPES, PRESETS, RECOMPUTE, RunSettings, fields_of, spec_fields)
from models.limits import CALC_BATCH, CALC_CONTEXT, CALC_MAX_CONTEXT, CALC_MAX_JSON_CHARS, CALC_TRAIN_TOKENS

FIELDS = spec_fields()
GROUPS = {  # accordion -> fields, in the order a config.json lists them
    "calc_core": ["vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "ffn_type",
                  "tied_embeddings", "learned_positions", "norm", "sandwich_norm", "attn_bias", "qkv_bias",
                  "qk_norm", "qk_norm_all", "mlp_bias"],
    "calc_moe": ["n_experts", "top_k", "n_shared_experts", "expert_dim", "first_dense_layers", "shared_expert_gate"],
    "calc_mla": ["kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"],
    "calc_window": ["sliding_window", "sliding_layers"],
}
GPU_CHOICES = (24.0, 40.0, 48.0, 80.0, 141.0)
DEFAULT_PRESET = "Llama-3-8B"
LONG_WORD = 14                      # a label word this long gets its field a whole row (see field_rows)
VERIFY_TOKENS = 128                 # the cache checked by "Verify" holds this many tokens
# The KV Cache tab's trained tiny GPTs, by preset name -> variant (their specs come from the checkpoints).
TINY_PRESETS = {"Tiny GPT · MHA (KV tab)": "mha", "Tiny GPT · GQA-2 (KV tab)": "gqa",
                "Tiny GPT · MQA (KV tab)": "mqa", "Tiny GPT · MLA r=32 (KV tab)": "mla"}

D = fields_of(PRESETS[DEFAULT_PRESET])      # the defaults of every endpoint: Llama-3-8B
RUN = RunSettings()                          # ... and the run's
RUN_FIELDS = ("seq_len", "batch", "weight_dtype", "kv_dtype", "train_tokens", "recipe", "recompute", "attention",
              "gpu_gib")                     # the run's controls (not `usable`: a constant of the app)


@grouped(model=D, run={name: getattr(RUN, name) for name in RUN_FIELDS})
def calculate(model: dict, run: dict, request: gr.Request = None) -> dict:
    """The ``/calculate`` endpoint: the model's fields (a config.json's, by name), then the run's ->
    the summary with every formula, four figures (parameters, memory, KV cache, KV layouts), the device line."""
    import torch

    from models.calculator import analyze, kv_curve, run_settings, spec_from_fields
    from models.device import timed
    from models.kv_layouts import kv_layouts
    from viz.calculator import (kv_figure, layouts_figure, layouts_markdown, memory_figure, params_figure,
                                summary_markdown)

    lang = lang_of(request)
    spec, run = spec_from_fields(model), run_settings(**run)
    with timed(torch.device("cpu")) as watch:
        a = analyze(spec, run)
        contexts, kv, weights = kv_curve(spec, run.batch, run.kv_dtype, run.weight_dtype)
        layouts = kv_layouts(spec, dtype=run.kv_dtype, batch=run.batch)
    return {"summary": summary_markdown(a, lang) + "\n" + layouts_markdown(layouts, spec, lang),
            "params": params_figure(a.params["parts"], a.active_parts, lang),
            "memory": memory_figure(a.inference["parts"], a.training["parts"], a.gpu_lines, run.gpu_gib,
                                    run.usable, lang),
            "kv": kv_figure(contexts, kv, weights, a.crossover_tokens, lang),
            "layouts": layouts_figure(layouts, lang), "device": str(watch.timing)}


@grouped(model=D, run={"kv_dtype": RUN.kv_dtype})
def verify_spec(model: dict, run: dict, request: gr.Request = None) -> dict:
    """The ``/calculate_verify`` endpoint: the counts of a really built model and a really allocated cache
    (in the chosen cache dtype)."""
    from models.calculator import spec_from_fields
    from models.calculator_verify import verify
    from viz.calculator import verification_markdown

    spec = spec_from_fields(model)
    return {"verification": verification_markdown(verify(spec, seq_len=VERIFY_TOKENS, kv_dtype=run["kv_dtype"]),
                                                  lang_of(request))}


def _tiny_spec(name: str):
    from models.calculator_verify import spec_of_gpt
    from models.tiny_gpt import CHECKPOINT_DIR, checkpoint_name, load_checkpoint, tiny_config, trained_configs
    vocab = len(load_checkpoint(CHECKPOINT_DIR / f"{checkpoint_name(tiny_config('mha', 1))}.pt").vocab)
    return spec_of_gpt(trained_configs(vocab)[TINY_PRESETS[name]], name)


def set_preset(preset: str = DEFAULT_PRESET) -> dict:
    """The fields of a preset (a published config, or one of the KV tab's trained GPTs); "custom" keeps them."""
    if preset in PRESETS:
        return fields_of(PRESETS[preset])
    if preset in TINY_PRESETS:
        return fields_of(_tiny_spec(preset))
    return {}


def fit_seq_len(learned_positions: int = D["learned_positions"], seq_len: int = RUN.seq_len,
                asked_seq_len: int = RUN.seq_len) -> dict:
    """A preset's context: the one the learner last asked for, lowered to the preset's learned positions
    when it is longer. GPT-2 reads 1,024 positions, so choosing it lowers 4,096 to 1,024; choosing
    Llama-3-8B next gives the 4,096 back.

    >>> fit_seq_len(1024, 4096, 4096), fit_seq_len(0, 1024, 4096), fit_seq_len(0, 4096, 4096)
    ({'seq_len': 1024}, {'seq_len': 4096}, {})
    """
    from models.calculator import fit_context
    from models.checks import whole
    fitted = fit_context(whole("learned_positions", learned_positions, 0, CALC_MAX_CONTEXT),
                         CALC_CONTEXT.whole("calc_seq_len", asked_seq_len))
    return {"seq_len": fitted} if fitted != seq_len else {}


def remember_seq_len(seq_len: int = RUN.seq_len) -> dict:
    """The context the learner typed, kept for the presets to fit (a value out of the calculator's range is not).

    >>> remember_seq_len(2048), remember_seq_len(None), remember_seq_len(0)
    ({'asked_seq_len': 2048}, {}, {})
    """
    from models.checks import InputError, whole
    try:
        return {"asked_seq_len": CALC_CONTEXT.whole("calc_seq_len", seq_len)}
    except InputError:
        return {}


def check_config(config: str = "") -> None:
    """Raise the message a config.json that cannot be read deserves; nothing when it can."""
    from models.calculator_config import spec_from_config
    spec_from_config(config)


def load_config(config: str = "") -> dict:
    """The fields of a pasted config.json; the preset becomes "custom"."""
    from models.calculator_config import spec_from_config
    return {"preset": CUSTOM, **fields_of(spec_from_config(config))}


def field_rows(names: list[str], longest: int = LONG_WORD) -> list[list[str]]:
    """The fields two to a row, in order, except a field whose label (in any language) holds a word of
    ``longest`` or more Latin letters, digits and underscores: a config key such as ``num_key_value_heads``,
    which would have to break inside itself in half a column. It takes a row of its own.

    >>> field_rows(["n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim"])
    [['n_layers', 'n_heads'], ['n_kv_heads'], ['head_dim'], ['ffn_dim']]
    """
    long = {name for name in names for lang in LOCALES
            if any(len(w) >= longest for w in re.findall("[A-Za-z0-9_]+", tr(lang, f"calc_f_{name}")))}
    rows: list[list[str]] = []
    for name in names:
        if rows and len(rows[-1]) == 1 and rows[-1][0] not in long and name not in long:
            rows[-1].append(name)
        else:
            rows.append([name])
    return rows


def _field(name: str, value):
    label = t(f"calc_f_{name}")
    if name in FIELD_CHOICES:
        return Radio([(t(f"calc_c_{c}"), c) for c in FIELD_CHOICES[name]], value=value, label=label,
                     elem_id=f"calc_{name}")
    if name in BOOL_FIELDS:
        return gr.Checkbox(value, label=label, elem_id=f"calc_{name}")
    low, high = FIELD_RANGES[name]
    return Number(value, precision=0, minimum=low, maximum=high, label=label, elem_id=f"calc_{name}")


def build() -> dict:
    """Lay out the tab, wire it, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("calc_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            ui.preset = Dropdown([*PRESETS, *((t(f"calc_tiny_{v}"), name) for name, v in TINY_PRESETS.items()),
                                  (t("calc_custom"), CUSTOM)], value=DEFAULT_PRESET,
                                 label=t("calc_preset"), elem_id="calc_preset")
            with gr.Accordion(t("calc_paste"), open=False):
                ui.config = gr.Textbox(lines=6, label=t("calc_json"), max_length=CALC_MAX_JSON_CHARS,
                                       elem_id="calc_json")
                load = gr.Button(t("calc_load"), size="sm", elem_id="calc_load")
            for group, names in GROUPS.items():
                with gr.Accordion(t(group), open=group == "calc_core"):
                    for row in field_rows(names):
                        with gr.Row():
                            for name in row:
                                setattr(ui, name, _field(name, D[name]))
            with gr.Accordion(t("calc_run"), open=True):
                ui.seq_len = Number.over(CALC_CONTEXT, RUN.seq_len, precision=0, label=t("calc_seq"),
                                         elem_id="calc_seq")
                ui.asked_seq_len = gr.State(RUN.seq_len)       # the context last typed; presets fit it
                ui.batch = Number.over(CALC_BATCH, RUN.batch, precision=0, label=t("calc_batch"), elem_id="calc_batch")
                ui.weight_dtype = Dropdown(list(DTYPE_BYTES), value=RUN.weight_dtype, label=t("calc_wdtype"),
                                           elem_id="calc_wdtype")
                ui.kv_dtype = Dropdown(list(DTYPE_BYTES), value=RUN.kv_dtype, label=t("calc_kvdtype"),
                                       elem_id="calc_kvdtype")
                ui.train_tokens = Number.over(CALC_TRAIN_TOKENS, RUN.train_tokens,
                                              label=t("calc_tokens"), elem_id="calc_tokens")
                ui.recipe = Radio([(t(f"calc_recipe_{r}"), r) for r in OPTIMIZER_RECIPES], value=RUN.recipe,
                                  label=t("calc_recipe"), elem_id="calc_recipe")
                ui.recompute = Radio([(t(f"calc_c_{r}"), r) for r in RECOMPUTE], value=RUN.recompute,
                                     label=t("calc_recompute"), elem_id="calc_recompute")
                ui.attention = Radio([(t(f"calc_c_{k}"), k) for k in ATTENTION_KERNELS], value=RUN.attention,
                                     label=t("calc_attention"), elem_id="calc_attention")
                ui.gpu_gib = Dropdown(list(GPU_CHOICES), value=RUN.gpu_gib, label=t("calc_gpu"), elem_id="calc_gpu")
        with gr.Column(scale=2):
            ui.summary = gr.Markdown(elem_id="calc_summary", latex_delimiters=[])
            ui.params = gr.Plot(label=t("calc_params_plot"), elem_id="calc_params_plot")
            ui.memory = gr.Plot(label=t("calc_memory_plot"), elem_id="calc_memory_plot")
            ui.kv = gr.Plot(label=t("calc_kv_plot"), elem_id="calc_kv_plot")
            ui.layouts = gr.Plot(label=t("calc_layouts_plot"), elem_id="calc_layouts_plot")
            verify_button = gr.Button(t("calc_verify"), size="sm", elem_id="calc_verify")
            ui.verification = gr.Markdown(elem_id="calc_verification")
            ui.device = device_line()
    gr.Markdown(t("calc_formats_link"))
    explain("calc_explain")

    # One named endpoint; a number recomputes on Enter or leaving the field, a choice at once.
    main = event(calculate, ui, ("summary", "params", "memory", "kv", "layouts", "device"), show_progress="hidden")
    controls = [getattr(ui, name) for name in control_names(calculate)]
    typed = [w for w in controls if isinstance(w, (gr.Number, gr.Textbox))]
    picked = [w for w in controls if not isinstance(w, (gr.Number, gr.Textbox))]
    # always_last: leaving a number field (blur) starts a run; a choice clicked meanwhile must run after
    # it, not be dropped (the default trigger mode ignores triggers while the event is pending).
    gr.on([*(w.submit for w in typed), *(w.blur for w in typed), *(w.input for w in picked)],
          api_name="calculate", trigger_mode="always_last", **main)
    for name in FIELDS:                                               # an edited field: no longer the preset
        w = getattr(ui, name)
        (w.submit if isinstance(w, gr.Number) else w.input)(
            lambda: CUSTOM, None, ui.preset, api_visibility="private", show_progress="hidden")
    remember = event(remember_seq_len, ui, ("asked_seq_len",), api_visibility="private", show_progress="hidden")
    gr.on([ui.seq_len.submit, ui.seq_len.blur], **remember)
    fill = event(set_preset, ui, FIELDS, api_visibility="private", show_progress="hidden")
    fit = event(fit_seq_len, ui, ("seq_len",), api_visibility="private", show_progress="hidden")
    ui.preset.input(**fill).then(**fit).then(api_visibility="private", **main)
    # Checked first by an event with no outputs: a refused config raised in load_config would mark
    # each field "Error" over its value; this way only the message says what was wrong.
    load.click(**event(check_config, ui, api_visibility="private")).success(
        **event(load_config, ui, ("preset", *FIELDS), api_visibility="private")).success(**fit).success(
        api_visibility="private", **main)
    verify_button.click(api_name="calculate_verify", **event(verify_spec, ui, ("verification",)))
    # A verification is of the model it ran on: a field or a setting changed takes it away (in the page).
    gr.on([w.change for w in controls], None, None, ui.verification, js="() => ''", api_visibility="private",
          show_progress="hidden")
    return {**main, "fills": [fill]}
