"""One module per tab: widgets and event wiring, nothing else.

Each tab module exposes ``STRINGS = {"en": {...}, "zh-CN": {...}}`` (its UI text, merged into the
app's ``gr.I18n``) and ``build(demo)`` (lays out the tab inside the current ``gr.Tab`` and wires it).
"""
