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


def test_comparison_samples_are_the_confident_ones_most_fragile_first(small_audit):
    import numpy as np

    from core.views.comparison import comparison_samples

    r = small_audit
    out = comparison_samples(r)
    cert = r.certificates.table
    confident = np.asarray(r.labels.high_confidence, dtype=bool)
    # Naive twin: sort (−fds, position) over the confident rows.
    keyed = sorted((-cert["fds"].iloc[i], i) for i in range(len(cert)) if confident[i])
    assert out.index.tolist() == [cert.index[i] for _, i in keyed]
    assert out.tolist() == [-f for f, _ in keyed]


def test_comparison_samples_fall_back_to_every_prediction_without_confident_ones():
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from core.views.comparison import comparison_samples

    table = pd.DataFrame({"fds": [0.2, 0.9, 0.2]}, index=[7, 8, 9])
    result = SimpleNamespace(
        certificates=SimpleNamespace(table=table), labels=SimpleNamespace(high_confidence=np.zeros(3, bool))
    )
    assert comparison_samples(result).index.tolist() == [8, 7, 9]  # ties keep certificate order


def test_sample_across_models_shows_each_audits_certificate(small_audit):
    from core.views.comparison import sample_across_models

    r = small_audit
    sid = r.certificates.table.index[3]
    out = sample_across_models({"a": r, "b": r}, sid)
    cert = r.certificates.certificate(3)
    assert out.table["model"].tolist() == ["a", "b"]
    row = out.table.iloc[0]
    assert row["predicted"] == str(r.dataset.classes[cert.pred])
    assert (row["confidence"], row["rcma"], row["fds"]) == (cert.confidence, cert.rcma, cert.fds)
    assert row["path"] == list(cert.path)
    depth = len(cert.path)
    assert row["flip_budget"] == (str(cert.flip_budget) if cert.flip_budget <= depth else f"no flip ≤ {depth}")
    path, margins, k = out.trajectories["b"]
    assert path == cert.path and k == cert.flip_budget
    assert margins.tolist() == cert.path_margins.tolist()
    with pytest.raises(ValueError, match=r"Sample -1 is not in the audit of 'a'"):
        sample_across_models({"a": r}, -1)
