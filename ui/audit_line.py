"""The line every tabular page opens with: which audit it shows (data, model, seed, fingerprints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ui.data import current_dataset, dataset_label, model_label
from ui.own_model import own_label, own_mode
from ui.state import shared_state

if TYPE_CHECKING:
    from core.tabular.audit import AuditResult


def audit_line(result: AuditResult) -> None:
    """One line naming the audit every tabular page is showing, with its fingerprint."""
    if own_mode():
        st.caption(
            f"Audit: **{own_label()}** ({len(result.y_test):,} test rows) · protocol `{result.protocol.fingerprint[:12]}` · "
            f"certificate fingerprint `{result.fingerprint[:16]}…` — change it under *Your model* in the sidebar."
        )
        return
    audited, total = len(result.dataset.frame), len(current_dataset().frame)
    sample = f" (stratified sample of {audited:,} of {total:,} rows)" if audited < total else ""
    st.caption(
        f"Audit: **{dataset_label(shared_state().dataset)}**{sample} · **{model_label(result.model_name)}** · "
        f"seed {result.seed} · protocol `{result.protocol.fingerprint[:12]}` · certificate fingerprint "
        f"`{result.fingerprint[:16]}…` — change them in the sidebar and in the Overview's Protocol tab."
    )
