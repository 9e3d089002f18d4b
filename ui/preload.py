"""Chart libraries the browser loads before the charts that need them, drawing nothing.

Streamlit's frontend loads a chart library (a JavaScript module of its static files) only when
the first chart of that kind arrives, and then compiles it before drawing. Two are big:

- **Vega-Lite** (``embed.<hash>.js``, 0.8 MB): the Overview's first screen draws two Vega-Lite
  charts, and they arrive at the end of the first script run. :func:`preload_vega`, called by
  ``app.py`` before it imports the app's modules, has the browser start on the module at once,
  so that it is compiled while the server imports and reads the audit: 0.08 s of a second start
  here (``docs/performance.md``).
- **plotly** (``PlotlyChart.<hash>.js``, 4.7 MB): Calibration, Model comparison and Paired
  bounds draw plotly charts (every other chart is Vega-Lite), and compiling it took 1.5 s of that page's first visit on a 2-core machine. :func:`preload_plotly`,
  at the end of the Overview, has the browser import it once idle (``requestIdleCallback``),
  after the first screen is drawn (a bare two-page Streamlit app: its plotly page's first visit
  1.8-2.5 s without, 0.35-0.6 s with it; its first page's start unchanged).

Each imports the module from the URL Streamlit's own code imports it from, so the module is
then in the page's module map. When the file is not found (another Streamlit layout), nothing
is sent and the first chart loads it, as without this module. Only the standard library and
Streamlit are imported here: :func:`preload_vega` runs before the heavy imports.
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

__all__ = ["plotly_bundle", "preload_plotly", "preload_vega", "vega_bundle"]

#: Key of the hidden container of :func:`preload_vega` (its script takes no space on the page).
_HIDDEN = "chart_library_preload"


@functools.cache
def _bundle(prefix: str) -> str | None:
    """File name of Streamlit's ``<prefix>.<hash>.js``, None if not exactly one."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob(f"{prefix}.*.js"))
    return found[0].name if len(found) == 1 else None


def plotly_bundle() -> str | None:
    """File name of Streamlit's plotly bundle (``PlotlyChart.<hash>.js``), None if not exactly one."""
    return _bundle("PlotlyChart")


def vega_bundle() -> str | None:
    """File name of Streamlit's Vega-Lite bundle (``embed.<hash>.js``: vega-embed with Vega and
    Vega-Lite), None if not exactly one."""
    return _bundle("embed")


def _import_script(bundle: str, *, when_idle: bool) -> str:
    load = f'import(new URL("./{bundle}", index.src).href).catch(() => {{}})'
    start = (
        "if (window.requestIdleCallback) requestIdleCallback(load, {timeout: 5000}); else setTimeout(load, 1000);"
        if when_idle
        else "load();"
    )
    return f"""<script>
(() => {{
  const index = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!index) return;
  const load = () => {load};
  {start}
}})();
</script>"""


def preload_vega() -> None:
    """Have the browser import the Vega-Lite bundle now; call it first in every script run.

    The script sits in a hidden container at the top of the main area, the same on every page,
    so it takes no space and a rerun does not send it again.
    """
    bundle = vega_bundle()
    if bundle is None:
        return
    # A style-only st.html goes to Streamlit's event container: it takes no space either. The
    # container's layout wrapper is hidden too, else the page's gap above it stays (16 px).
    st.html(
        f"<style>.st-key-{_HIDDEN}, [data-testid='stLayoutWrapper']:has(> .st-key-{_HIDDEN}) "
        "{display: none !important;}</style>"
    )
    with st.container(key=_HIDDEN):
        st.html(_import_script(bundle, when_idle=False), unsafe_allow_javascript=True)


def preload_plotly() -> None:
    """Have the browser import Streamlit's plotly bundle once it is idle (the Overview's last element)."""
    bundle = plotly_bundle()
    if bundle is not None:
        st.html(_import_script(bundle, when_idle=True), unsafe_allow_javascript=True)
