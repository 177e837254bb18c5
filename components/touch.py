"""Figures a finger can scroll past on a touch screen.

Plotly's default drag zooms, and on a touch screen a drag is how the page scrolls: on a phone the
figures fill the width, so a swipe over one zoomed its axes (and showed "Double-click to zoom back
out") where the learner meant to scroll the page, or the figure's own box sideways (a figure keeps
840 px there, app.CSS). :data:`TOUCH_JS` runs once when the page loads, on a device whose main pointer
is coarse only, and sets every figure's ``dragmode`` to ``False`` each time one is drawn: a swipe then
scrolls, a tap still shows a point's values, and a mode picked in the figure's toolbar (zoom, pan)
stays until the figure is drawn again. A mouse keeps the drag to zoom.
"""

TOUCH_JS = """
() => {
  if (!window.matchMedia("(pointer: coarse)").matches) return;
  const scrollable = () => {
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      // Only a figure just drawn from the server (whose layout names no dragmode): a mode picked in the
      // figure's toolbar is written into its layout, and kept.
      if (plot.layout && plot.layout.dragmode === undefined && window.Plotly) {
        window.Plotly.relayout(plot, { dragmode: false });
      }
    }
  };
  // A figure is drawn again on every update (its layout says "zoom" again): look once per frame of changes.
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; scrollable(); });
  }).observe(document.body, { childList: true, subtree: true });
}
"""
