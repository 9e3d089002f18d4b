"""Make every page file safe to run first, before ``app.py`` has ever run in this process.

Streamlit treats a ``pages/`` folder beside the entry script as a legacy (v1) multipage app
until ``st.navigation`` has run once in the server process. Until then — the first visit of a
fresh server opened at a deep link such as ``/triage``, and every ``AppTest`` run — it
executes the page file *without* ``app.py``: no session-state defaults, no sidebar, no
navigation. ``ensure_entrypoint()`` detects that case and runs ``app.py`` instead, which
declares the navigation and renders the requested page itself; the outer legacy run then
stops. Once ``st.navigation`` has run, this is a no-op.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

_APP = Path(__file__).resolve().parents[1] / "app.py"


def _legacy_run() -> bool:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode: nothing to work around
        return False
    return bool(PagesManager.uses_pages_directory)


def ensure_entrypoint() -> None:
    """Run ``app.py`` in place of this page when Streamlit skipped it (see module docstring)."""
    if _legacy_run():
        runpy.run_path(str(_APP), run_name="__main__")
        st.stop()
