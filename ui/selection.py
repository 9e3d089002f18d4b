"""The one sample selection shared by every tabular page (explorer, triage, comparison).

The selection is the dataset's **sample id** (the certificate table's index), never a row
position: positions change with every sort, filter and queue. It lives in
``shared_state().selected_sample`` (:mod:`ui.state`), so a page switch keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
import streamlit as st

from ui.state import applied_selection, explorer_state, shared_state, table_state

EXPLORER = "pages/explorer.py"


def selected_sample() -> int | None:
    """The shared sample id, or ``None`` before anything was selected."""
    value = shared_state().selected_sample
    return None if value is None else int(value)


def select_sample(sample_id: Any) -> None:
    """Make ``sample_id`` the shared selection."""
    shared_state().selected_sample = int(sample_id)


def sample_in(candidates: Iterable[Any]) -> bool:
    """Whether the shared sample is one of ``candidates`` (sample ids)."""
    current = selected_sample()
    return current is not None and current in {int(c) for c in candidates}


def apply_table_selection(key: str, shown: pd.DataFrame, *, id_column: str = "sample_id") -> None:
    """Turn a new row selection of the table ``key`` (rows of ``shown``) into the shared sample.

    A selection is applied once, when it changes: a selection left in the widget state from an
    earlier run must not override a sample chosen since on another page.
    """
    state = table_state(key).read() or {}
    rows = list((state.get("selection") or {}).get("rows") or [])
    applied = applied_selection(key)
    if rows and rows != applied.read() and rows[0] < len(shown):
        select_sample(shown.iloc[rows[0]][id_column])
    applied.write(rows)


def open_in_explorer(sample_id: Any, *, high_confidence: bool) -> None:
    """Select ``sample_id`` and switch to the Certificate explorer with filters that show it."""
    select_sample(sample_id)
    explorer_state().search = ""
    if not high_confidence:
        explorer_state().high_confidence = False
    del explorer_state().table
    st.switch_page(EXPLORER)
