"""The torch backend of LLM Anatomy: pure computation, no gradio, no plotly.

Modules import torch at the top; the app imports them lazily (inside event handlers) so that
serving the first page never waits for torch.
"""
