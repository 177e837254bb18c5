"""One module per tab: widgets and event wiring, nothing else.

Each tab module exposes ``build()`` (its text lives in ``locales/``): it lays out the tab inside the current ``gr.Tab``, wires its events and returns
the keyword arguments of the event that draws the tab (``dict(fn=, inputs=, outputs=)``), which the app
runs on page load after applying a share link's settings, or ``None`` if the tab draws nothing on load.
"""
