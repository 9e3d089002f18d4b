"""Keyboard shortcuts that click keyed Streamlit buttons.

``shortcuts({"review_save_next": "alt+s"})`` makes Alt+S click the button created with
``key="review_save_next"`` (Streamlit gives its container the class ``st-key-<key>``). The
binding syntax and the approach are those of the ``streamlit-shortcuts`` package; that package
was tried first and left out: it installs its listener from inside a component iframe, once per
browser tab, and Streamlit re-creates that iframe whenever the elements above it change (a
success message, a new case), after which Chromium no longer runs the listener of the removed
frame — every shortcut stopped working after the first "save & next". Here the script runs in
the page itself (``st.html(..., unsafe_allow_javascript=True)``, a fixed string: no user input
reaches it), so the listener lives as long as the tab, and each run only replaces the map.

A key combination is matched on ``event.code`` as well as ``event.key`` so that Option+1 on a
Mac (``key`` = "¡") still means Alt+1. A binding whose button is not on the page does nothing
(the event is left to the browser), so the bindings are inert on other pages.
"""

from __future__ import annotations

import inspect
import json
import re

import streamlit as st

__all__ = ["shortcuts"]

_MODIFIERS = ("ctrl", "alt", "shift", "meta")
_KEY = re.compile(r"^[a-z0-9_-]+$")
_SCRIPT = """<script>
(() => {
  window.__auditShortcuts = %s;
  if (window.__auditShortcutsListener) return;
  const MODS = ["ctrl", "alt", "shift", "meta"];
  window.__auditShortcutsListener = (e) => {
    if (e.repeat) return;
    for (const [key, combos] of Object.entries(window.__auditShortcuts || {})) {
      for (const combo of combos) {
        const parts = combo.split("+");
        const main = parts.find((p) => !MODS.includes(p));
        const code = (e.code || "").toLowerCase();
        const hit = parts.includes("ctrl") === e.ctrlKey && parts.includes("alt") === e.altKey
          && parts.includes("shift") === e.shiftKey && parts.includes("meta") === e.metaKey
          && ((e.key || "").toLowerCase() === main || code === "key" + main || code === "digit" + main);
        if (!hit) continue;
        const button = document.querySelector(".st-key-" + key + " button");
        if (!button || button.disabled) return;
        e.preventDefault();
        button.click();
        return;
      }
    }
  };
  document.addEventListener("keydown", window.__auditShortcutsListener);
})();
</script>"""


def shortcuts(bindings: dict[str, str]) -> None:
    """Bind key combinations (``"alt+1"``, ``"ctrl+shift+k"``) to the buttons keyed ``bindings``' keys."""
    clean: dict[str, list[str]] = {}
    for key, combo in bindings.items():
        parts = combo.lower().split("+")
        mains = [p for p in parts if p not in _MODIFIERS]
        if not _KEY.match(key) or len(mains) != 1 or not mains[0]:
            raise ValueError(f"shortcut {key!r}: {combo!r} must be modifiers plus one key, e.g. 'alt+1'.")
        clean[key] = [combo.lower()]
    if "unsafe_allow_javascript" not in inspect.signature(st.html).parameters:  # Streamlit too old to run it
        st.caption("Keyboard shortcuts need a newer Streamlit (st.html with JavaScript); use the buttons.")
        return
    st.html(_SCRIPT % json.dumps(clean), unsafe_allow_javascript=True)
