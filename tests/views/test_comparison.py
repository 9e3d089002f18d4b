"""core.views.comparison: several models' audits side by side."""
from __future__ import annotations

import pytest


def test_model_comparison_table_rows_match_each_audit(small_audit):
    from core.views.comparison import model_comparison_table

    r = small_audit
    t = model_comparison_table({"logreg": r})
    assert t.loc[0, "auroc"] == r.nominal["auroc"]
    assert t.loc[0, "mean_rcma"] == pytest.approx(r.certificates.table["rcma"].mean())
    assert t.loc[0, "median_rcma"] == pytest.approx(r.certificates.table["rcma"].median())
