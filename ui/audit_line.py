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
    g = audit if isinstance(audit, AuditGlance) else AuditGlance.of(audit)
    if own_mode():
        st.caption(
            f"Audit: **{own_label()}** ({g.test_rows:,} test rows) · protocol `{g.protocol_fingerprint[:12]}` · "
            f"certificate fingerprint `{g.fingerprint[:16]}…` — change it under *Your model* in the sidebar."
        )
        return
    total = len(current_dataset().frame)
    sample = f" (stratified sample of {g.audited_rows:,} of {total:,} rows)" if g.audited_rows < total else ""
    st.caption(
        f"Audit: **{dataset_label(shared_state().dataset)}**{sample} · **{model_label(g.model_name)}** · "
        f"seed {g.seed} · protocol `{g.protocol_fingerprint[:12]}` · certificate fingerprint "
        f"`{g.fingerprint[:16]}…` — change them in the sidebar and in the Overview's Protocol tab."
    )
