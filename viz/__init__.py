"""Plotly figure builders: backend results -> ``go.Figure``. No gradio, no heavy compute."""
