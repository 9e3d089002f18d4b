"""core.views.tabular: one audit's tables over real core results (a small, fast audit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.views.tabular import column_summary


def test_prediction_table_lines_up_with_the_certificates(small_audit):
    from core.views.tabular import prediction_table

    r = small_audit
    t = prediction_table(r)
    cert = r.certificates.table
    assert t["sample_id"].tolist() == cert.index.tolist()
    assert t["fds"].tolist() == cert["fds"].tolist()
    assert t["predicted"].tolist() == [r.dataset.classes[p] for p in cert["pred"]]
    assert t["true_class"].tolist() == [r.dataset.classes[y] for y in r.y_test]
    assert t["brittle"].sum() == r.labels.labels.sum()
    assert {c for c in t.columns if c.startswith("lambda_star_")} == {
        f"lambda_star_{op}" for op in r.protocol.operators
    }


def test_sample_bundle_is_strict_json_and_verifies_against_the_model(small_audit):
    import json

    from core.cfc import CertificateSet, verify
    from core.cfc.search import flip_search
    from core.views.tabular import sample_bundle

    r = small_audit
    i = int(np.argmax(r.certificates.table["fds"].to_numpy()))
    search = flip_search(r.model.predict_proba, r.X_test[i : i + 1], r.groups, r.baseline, r.protocol, method="both")
    bundle = json.loads(json.dumps(sample_bundle(r.certificates, i, search=search), allow_nan=False))
    assert bundle["fingerprint"] == r.fingerprint and bundle["n_samples"] == 1
    assert verify(bundle, r.model.predict_proba, r.X_test[i : i + 1]).ok
    back = CertificateSet.from_bundle(bundle)
    assert back.table.index.tolist() == [r.certificates.table.index[i]]
    assert back.table["flip_budget_exact"].tolist() == search.k_exact.tolist()
    np.testing.assert_array_equal(back.traj_margin[0], r.certificates.traj_margin[i])
    # A tampered certificate does not verify.
    bundle["arrays"]["traj_margin"]["data"][0] += 1.0
    assert not verify(bundle, r.model.predict_proba, r.X_test[i : i + 1]).ok
    with pytest.raises(ValueError, match="`position` must be a row"):
        sample_bundle(r.certificates, len(r.certificates))


def test_groups_and_raw_values_tables(small_audit):
    from core.cfc.grouping import trace_feature_origins
    from core.views.tabular import groups_table, raw_values_table

    r = small_audit
    origins = trace_feature_origins(r.preprocessor.transformer)
    g = groups_table(r.groups, r.preprocessor.feature_names, origins)
    assert g["group"].tolist() == list(r.groups)
    assert g["n_transformed"].sum() == len(r.preprocessor.feature_names)
    sid = r.certificates.table.index[0]
    raw = raw_values_table(r.raw_test.loc[sid], r.groups, origins)
    assert set(raw["column"]) == set(r.dataset.features)
    row = raw.set_index("column").loc["mean radius"]
    assert float(row["value"]) == pytest.approx(r.raw_test.loc[sid, "mean radius"], abs=5e-4)  # shown rounded


def test_column_summary_counts_missing_and_distinct():
    from core.tabular.datasets import load_dataset

    ds = load_dataset("credit_data")
    summary = column_summary(ds).set_index("column")
    assert summary.loc["Income", "missing"] == ds.frame["Income"].isna().sum()
    assert summary.loc["Home", "kind"] == "categorical"
    assert summary.loc["Home", "distinct"] == ds.frame["Home"].nunique()


def test_whatif_probabilities_removes_the_chosen_groups_only():
    from types import SimpleNamespace

    from core.views.tabular import whatif_probabilities

    weights = np.array([2.0, -1.0, 0.5])

    class Linear:  # p(class 1) = sigmoid(w·x), by hand
        def predict_proba(self, X):
            p1 = 1 / (1 + np.exp(-(np.asarray(X) @ weights)))
            return np.column_stack([1 - p1, p1])

    result = SimpleNamespace(
        X_test=np.array([[1.0, 1.0, 2.0], [0.0, 3.0, 1.0]]),
        groups={"a": [0], "bc": [1, 2]},
        baseline=np.array([0.0, 0.5, 0.0]),
        model=Linear(),
    )
    original, edited = whatif_probabilities(result, 0, ["bc"])
    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    np.testing.assert_allclose(original, [1 - sigmoid(2.0), sigmoid(2.0)])  # 2 - 1 + 1
    np.testing.assert_allclose(edited, [1 - sigmoid(1.5), sigmoid(1.5)])  # 2 - 0.5 + 0
    unchanged, same = whatif_probabilities(result, 1, [])
    np.testing.assert_allclose(unchanged, same)


@pytest.mark.filterwarnings("ignore:Exact flip search stopped")  # the cap leaves NaN k_exact: compared as such
def test_with_search_writes_the_columns_certify_writes(small_audit):
    from core.cfc import certify
    from core.cfc.search import flip_search

    r = small_audit
    rows = slice(0, 6)
    X = r.X_test[rows]
    with_search = certify(r.model.predict_proba, X, r.groups, r.baseline, r.protocol, search="both")
    plain = certify(r.model.predict_proba, X, r.groups, r.baseline, r.protocol)
    search = flip_search(r.model.predict_proba, X, r.groups, r.baseline, r.protocol, method="both")
    attached = plain.with_search(search)
    pd.testing.assert_frame_equal(attached.table, with_search.table)
    assert attached.search is search
    # Removing the search drops its columns again.
    pd.testing.assert_frame_equal(attached.with_search(None).table, plain.table)
    with pytest.raises(ValueError, match="`search` must hold the 6 samples"):
        plain.with_search(flip_search(r.model.predict_proba, X[:2], r.groups, r.baseline, r.protocol))
