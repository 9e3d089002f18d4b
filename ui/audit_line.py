"""The line every tabular page opens with: which audit it shows (data, model, seed, fingerprints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.tabular.glance import AuditGlance
from ui.data import current_dataset, dataset_label, model_label
from ui.own_model import own_label, own_mode
from ui.state import shared_state

if TYPE_CHECKING:
    from core.tabular.audit import AuditResult


def audit_line(audit: AuditResult | AuditGlance) -> None:
    """One line naming the audit every tabular page is showing, with its fingerprint."""
    if isinstance(audit, AuditGlance):
        test_rows, audited, protocol = audit.test_rows, audit.audited_rows, audit.protocol_fingerprint
    else:
        test_rows, audited, protocol = len(audit.y_test), len(audit.dataset.frame), audit.protocol.fingerprint
    if own_mode():
        st.caption(
            f"Audit: **{own_label()}** ({test_rows:,} test rows) · protocol `{protocol[:12]}` · "
            f"certificate fingerprint `{audit.fingerprint[:16]}…` — change it under *Your model* in the sidebar."
        )
        return
    total = len(current_dataset().frame)
    sample = f" (stratified sample of {audited:,} of {total:,} rows)" if audited < total else ""
    st.caption(
        f"Audit: **{dataset_label(shared_state().dataset)}**{sample} · **{model_label(audit.model_name)}** · "
        f"seed {audit.seed} · protocol `{protocol[:12]}` · certificate fingerprint "
        f"`{audit.fingerprint[:16]}…` — change them in the sidebar and in the Overview's Protocol tab."
    )
