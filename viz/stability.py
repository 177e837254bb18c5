"""Figures of the training-stability section: softmax overflow per dtype, and the learning-rate sweep
(final loss against the learning rate; attention logits, attention entropy and log Z over steps).

Every number comes from :mod:`models.stability`; text from ``locales/stability.py``. The sweep's
figures redraw while it streams, so they are plain dicts (:func:`viz.common.plain_figure`). Nothing
non-finite is drawn: the overflow view writes "inf"/"NaN" over the bars that overflowed, and a
diverged run's final loss sits at ln V (a uniform guess) as a cross.
"""
from __future__ import annotations

import math

from locales import tr
from viz.common import PlainFigure, axis_ref, base_layout, finite, plain_figure, subplot_row

VARIANT_COLORS = {"plain": "#dc2626", "qk_norm": "#4f46e5", "z_loss": "#d97706", "both": "#059669"}
METHOD_COLORS = {"naive": "#dc2626", "stable": "#4f46e5"}
LAYER_DASH = ("solid", "dash", "dot", "dashdot")
OVERFLOWED = "#111827"


def _fmt(x: float | None, digits: int = 3) -> str:
    """A number as the text prints it: ``digits`` significant digits, whole thousands with separators
    (a logit of 9,150), ``—`` for none.

    >>> _fmt(0.000316), _fmt(None), _fmt(12345.6), _fmt(3e9)
    ('0.000316', '—', '12,346', '3e+09')
    """
    if x is None:
        return "—"
    return f"{x:,.0f}" if 1e3 <= abs(x) < 1e7 else f"{x:.{digits}g}"


def _bad(value: float) -> str:
    return "NaN" if math.isnan(value) else "inf"


# --- softmax overflow ----------------------------------------------------------------------------------
def overflow_figure(result, lang: str) -> PlainFigure:
    """One panel per dtype: each logit's probability, naive and max-subtracted side by side; a naive
    value that overflowed is written over its (empty) bar."""
    dtypes = list(result.probs)
    layout = base_layout(height=360, title=tr(lang, "stability_overflow_title", scale=_fmt(max(result.logits), 4)))
    layout |= subplot_row([tr(lang, "stability_overflow_panel", dtype=d, largest=f"{result.largest_logit[d]:.2f}")
                           for d in dtypes], spacing=0.05)
    layout |= {"barmode": "group", "legend": {"orientation": "h", "y": -0.3}}
    layout["margin"] |= {"b": 96}                  # the axis titles and the legend, without a push
    x = [f"{v:.3g}" for v in result.logits]
    data = []
    for i, dtype in enumerate(dtypes):
        for method in ("naive", "stable"):
            probs = result.probs[dtype][method]
            data.append({"type": "bar", "x": x, "y": finite(probs), "name": tr(lang, f"stability_method_{method}"),
                         "legendgroup": method, "showlegend": i == 0, "marker": {"color": METHOD_COLORS[method]},
                         "offsetgroup": method, "hovertemplate": "x = %{x}<br>p = %{y:.4g}<extra></extra>",
                         **axis_ref(i)})
            bad = [(xi, _bad(p)) for xi, p in zip(x, probs) if not math.isfinite(p)]
            if not bad and result.broken(dtype, method):                  # finite, yet not a distribution
                bad = [(x[len(x) // 2], f"Σ p = {_fmt(result.prob_sum[dtype][method], 3)}")]
            if bad:
                # Above the bars (their axis ends at 1.2): at 0.95 "NaN" lay on the stable bar of p = 1.
                data.append({"type": "scatter", "mode": "text", "x": [b[0] for b in bad], "y": [1.1] * len(bad),
                             "text": [b[1] for b in bad], "textfont": {"color": OVERFLOWED, "size": 13},
                             "showlegend": False, "hoverinfo": "skip", **axis_ref(i)})
        suffix = "" if i == 0 else str(i + 1)
        layout[f"yaxis{suffix}"] |= {"range": [0, 1.2], "tickvals": [0, 0.5, 1],
                                     "title": {"text": tr(lang, "stability_prob")} if i == 0 else {}}
        layout[f"xaxis{suffix}"] |= {"title": {"text": tr(lang, "stability_logit")}, "type": "category"}
    return plain_figure(data, layout)


def _verdict(result, dtype: str, method: str, lang: str) -> str:
    if not result.finite[dtype][method]:
        return tr(lang, "stability_overflowed")
    if result.broken(dtype, method):
        return tr(lang, "stability_sum_lost", total=_fmt(result.prob_sum[dtype][method], 3))
    return tr(lang, "stability_ok")


def overflow_summary(result, lang: str) -> str:
    """Markdown: per dtype whether each path gave a distribution (finite, summing to 1), and its largest
    finite logit."""
    lines = [tr(lang, "stability_overflow_row", dtype=d, largest=f"{result.largest_logit[d]:.2f}",
                naive=_verdict(result, d, "naive", lang), stable=_verdict(result, d, "stable", lang),
                total=_fmt(result.exp_sum[d], 4) if math.isfinite(result.exp_sum[d]) else _bad(result.exp_sum[d]))
             for d in result.probs]
    return "\n".join(f"- {line}" for line in lines)


# --- the sweep -----------------------------------------------------------------------------------------
def variant_name(variant: str, lang: str) -> str:
    return tr(lang, f"stability_variant_{variant}")


def final_loss_figure(log, lang: str) -> PlainFigure:
    """Final loss against the learning rate, one line per variant (Wortsman et al. 2023, Figure 1);
    diverged runs as crosses at ln V."""
    lrs = log.config.lrs
    finals = log.final_losses()
    data = []
    for variant, values in finals.items():
        ended = {c.run.lr_index for c in log.curves if c.run.variant == variant and c.end is not None}
        color = VARIANT_COLORS[variant]
        data.append({"type": "scatter", "mode": "lines+markers", "x": lrs, "y": finite(values),
                     "name": variant_name(variant, lang), "line": {"color": color},
                     "hovertemplate": "lr = %{x:.3g}<br>" + tr(lang, "stability_final_loss") + " = %{y:.3f}<extra></extra>"})
        diverged = [i for i in sorted(ended) if values[i] is None]
        if diverged:
            data.append({"type": "scatter", "mode": "markers", "x": [lrs[i] for i in diverged],
                         "y": [log.uniform_loss] * len(diverged), "marker": {"symbol": "x", "size": 12, "color": color},
                         "name": tr(lang, "stability_diverged"), "showlegend": False,
                         "hovertemplate": "lr = %{x:.3g}<br>" + tr(lang, "stability_diverged") + "<extra></extra>"})
    layout = base_layout(height=340, title=tr(lang, "stability_final_title", steps=log.config.steps))
    layout |= {"xaxis": {"type": "log", "title": {"text": tr(lang, "stability_lr")}},
               "yaxis": {"title": {"text": tr(lang, "stability_final_loss")}},
               "legend": {"orientation": "h", "y": -0.25}}
    return plain_figure(data, layout)


def curves_figure(log, lang: str) -> PlainFigure:
    """At the learning rate being trained (the highest, when done): the largest attention logit per layer
    (log scale), the worst head's attention entropy and log Z, over steps, per variant."""
    index = log.lr_index
    runs = [c for c in log.curves if c.run.lr_index == index]
    lr = log.config.lrs[index]
    layout = base_layout(height=380, title=tr(lang, "stability_curves_title", lr=_fmt(lr)))
    layout |= subplot_row([tr(lang, "stability_panel_logit"), tr(lang, "stability_panel_entropy"),
                           tr(lang, "stability_panel_log_z")], spacing=0.07)
    layout |= {"legend": {"orientation": "h", "y": -0.22}}
    data, step = [], tr(lang, "stability_step")
    for c in runs:
        name, color = variant_name(c.run.variant, lang), VARIANT_COLORS[c.run.variant]
        per_layer = list(zip(*c.logit_max)) if c.logit_max else []
        for layer, values in enumerate(per_layer):
            data.append({"type": "scatter", "mode": "lines", "x": c.steps, "y": finite(values),
                         "name": name, "legendgroup": c.run.variant, "showlegend": layer == 0,
                         "line": {"color": color, "dash": LAYER_DASH[layer % len(LAYER_DASH)], "width": 1.5},
                         "hovertemplate": f"{name}, {tr(lang, 'stability_layer', layer=layer + 1)}<br>{step} "
                                          "%{x}: %{y:.4g}<extra></extra>", **axis_ref(0)})
        for panel, values in ((1, c.entropy_min), (2, c.log_z)):
            data.append({"type": "scatter", "mode": "lines", "x": c.steps, "y": finite(values), "name": name,
                         "legendgroup": c.run.variant, "showlegend": False, "line": {"color": color, "width": 1.5},
                         "hovertemplate": f"{name}<br>{step} %{{x}}: %{{y:.3f}}<extra></extra>", **axis_ref(panel)})
    layout["yaxis"] |= {"type": "log", "title": {"text": tr(lang, "stability_logit_axis")}}
    layout["yaxis2"] |= {"title": {"text": tr(lang, "stability_nats")}, "rangemode": "tozero"}
    for suffix in ("", "2", "3"):
        layout[f"xaxis{suffix}"] |= {"title": {"text": tr(lang, "stability_step")}}
    return plain_figure(data + _layer_keys(max((len(c.logit_max[0]) for c in runs if c.logit_max), default=0),
                                           lang), layout)


def _layer_keys(n_layers: int, lang: str) -> list[dict]:
    """Legend entries, in grey, for the dash of each layer's line in the logit panel (no data)."""
    return [{"type": "scatter", "mode": "lines", "x": [None], "y": [None], "name": tr(lang, "stability_layer", layer=i + 1),
             "legendgroup": "layers", "line": {"color": "#6b7280", "dash": LAYER_DASH[i % len(LAYER_DASH)], "width": 1.5},
             "hoverinfo": "skip", **axis_ref(0)} for i in range(n_layers)]


def findings_text(log, lang: str) -> str:
    """Markdown: the summary at the highest finished learning rate, then every finding of every run."""
    lines = []
    summary = log.summary()
    if summary is not None:
        f, m, z = summary["final"], summary["logit_max"], summary["log_z"]
        lines.append(tr(lang, "stability_summary", lr=_fmt(summary["lr"]),
                        plain=_fmt(f["plain"]), qk=_fmt(f["qk_norm"]), logit_plain=_fmt(m["plain"]),
                        logit_qk=_fmt(m["qk_norm"]), z_plain=_fmt(z["plain"]), z_loss=_fmt(z["z_loss"])))
    for c in log.curves:
        if c.end is None:
            continue
        run = tr(lang, "stability_run", variant=variant_name(c.run.variant, lang), lr=_fmt(c.run.lr))
        for finding in c.end.findings:
            what = tr(lang, f"stability_what_{finding.what}") if finding.what else ""
            lines.append("- " + tr(lang, finding.key, run=run, step=finding.step, what=what))
    return "\n".join(lines)


def status_text(log, lang: str) -> str:
    """The progress line: which learning rate, which step, and at the end the time it took."""
    text = tr(lang, "stability_status", i=log.lr_index + 1, n=log.config.n_lrs, lr=_fmt(log.config.lrs[log.lr_index]),
              step=log.step, steps=log.config.steps)
    return f"{text} · {log.timing}" if log.timing is not None else text
