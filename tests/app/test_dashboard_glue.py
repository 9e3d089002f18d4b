"""Pure dashboard glue (core.dashboard): display safety, queue ranking, decision join."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.dashboard import (
    attach_decisions,
    capture_curves,
    column_summary,
    coverage_by_budget,
    display_frame,
    grid_summary,
    parse_blocks,
    parse_float_list,
    policy_matrix,
    rank_queue,
    score_summary,
    table_columns,
    thumbnail_uri,
)
from core.reviews import ReviewStore


def test_display_frame_makes_awkward_columns_arrow_safe():
    frame = pd.DataFrame({
        "mixed": [1, "a", None, 2.5],
        "bytes": [b"x", None, b"\xff", b"z"],
        "path": [["a", "b"], ("c",), np.array(["d", "e"]), []],
        "cat_mixed": pd.Categorical([1, "x", None, 1]),
        "cat_plain": pd.Categorical(["u", "v", None, "u"]),
        "num": [np.nan, 1.0, np.inf, -2.0],
    }, index=[10, 11, 12, 13])
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        pa.Table.from_pandas(frame)
    shown = display_frame(frame)
    pa.Table.from_pandas(shown)  # what Streamlit does; must not raise

    def values(column):
        return [None if pd.isna(v) else v for v in shown[column].tolist()]

    assert values("mixed") == ["1", "a", None, "2.5"]
    assert values("bytes") == ["x", None, "\ufffd", "z"]
    assert values("path") == ["a → b", "c", "d → e", ""]
    assert values("cat_mixed") == ["1", "x", None, "1"]
    assert isinstance(shown["cat_plain"].dtype, pd.CategoricalDtype)
    assert shown["num"].isna().tolist() == [True, False, False, False]
    assert list(shown.index) == [0, 1, 2, 3]
    assert frame.index[0] == 10  # input untouched


@pytest.mark.parametrize(
    ("text", "match"),
    [("", "is empty"), ("0.1, abc", "'abc' is not a number"), ("0.1 nan", "finite numbers")],
    ids=["empty", "word", "nan"],
)
def test_parse_float_list_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_float_list(text, "severities")


def _naive_queue(ids, scores, budget):
    n = len(ids)
    k = max(1, int(np.floor(budget * n + 0.5)))
    keyed = sorted(range(n), key=lambda i: (-(scores[i] if not np.isnan(scores[i]) else -np.inf), i))
    return [ids[i] for i in keyed[:k]]


@settings(max_examples=60)
@given(scores=st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1), st.just(float("nan"))),
                       min_size=1, max_size=30),
       budget=st.floats(0.01, 1.0))
def test_rank_queue_matches_a_naive_sort(scores, budget):
    ids = list(range(100, 100 + len(scores)))
    frame = pd.DataFrame({"sample_id": ids, "fds": scores})
    queue = rank_queue(frame, "fds", budget=budget)
    assert queue["sample_id"].tolist() == _naive_queue(ids, scores, budget)
    assert queue["rank"].tolist() == list(range(1, len(queue) + 1))


def test_rank_queue_validates():
    frame = pd.DataFrame({"sample_id": [1], "fds": [0.1]})
    with pytest.raises(ValueError, match="has no column 'rcma'"):
        rank_queue(frame, "rcma", budget=0.1)
    with pytest.raises(ValueError, match="is empty"):
        rank_queue(frame.iloc[:0], "fds", budget=0.1)
    with pytest.raises(ValueError, match="q"):
        rank_queue(frame, "fds", budget=1.5)


def test_attach_decisions_shows_the_latest_label(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite3")
    store.record("fp", 7, reviewer="ana", decision="acceptable")
    store.record("fp", 7, reviewer="bo", decision="needs_reacquisition", note="re-scan")
    store.record("other", 5, reviewer="cy", decision="confirmed_brittle")
    queue = pd.DataFrame({"rank": [1, 2], "sample_id": [5, 7]})
    out = attach_decisions(queue, store.latest("fp"))
    assert out["decision"].tolist()[1] == "Needs evidence re-acquisition"
    assert pd.isna(out["decision"].tolist()[0])
    assert out.loc[1, ["reviewer", "note"]].tolist() == ["bo", "re-scan"]
    assert list(out.columns) == ["rank", "sample_id", "decision", "reviewer", "note", "reviewed_at"]
    empty = attach_decisions(queue, store.latest("none"))
    assert empty["decision"].isna().all()


# --------------------------------------------------------------------------------------------
# Glue over real core results (a small, fast audit)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_audit():
    from core.tabular.audit import run_audit

    return run_audit("breast_cancer", model="logreg", seed=0)


def test_prediction_table_lines_up_with_the_certificates(small_audit):
    from core.dashboard import prediction_table

    r = small_audit
    t = prediction_table(r)
    cert = r.certificates.table
    assert t["sample_id"].tolist() == cert.index.tolist()
    assert t["fds"].tolist() == cert["fds"].tolist()
    assert t["predicted"].tolist() == [r.dataset.classes[p] for p in cert["pred"]]
    assert t["true_class"].tolist() == [r.dataset.classes[y] for y in r.y_test]
    assert t["brittle"].sum() == r.labels.labels.sum()
    assert {c for c in t.columns if c.startswith("lambda_star_")} == {f"lambda_star_{op}" for op in r.protocol.operators}


def test_sample_bundle_is_strict_json_and_verifies_against_the_model(small_audit):
    import json

    from core.cfc.certificate import CertificateSet, verify
    from core.cfc.search import flip_search
    from core.dashboard import sample_bundle

    r = small_audit
    i = int(np.argmax(r.certificates.table["fds"].to_numpy()))
    search = flip_search(r.model.predict_proba, r.X_test[i:i + 1], r.groups, r.baseline, r.protocol, method="both")
    bundle = json.loads(json.dumps(sample_bundle(r.certificates, i, search=search), allow_nan=False))
    assert bundle["fingerprint"] == r.fingerprint and bundle["n_samples"] == 1
    assert verify(bundle, r.model.predict_proba, r.X_test[i:i + 1]).ok
    back = CertificateSet.from_bundle(bundle)
    assert back.table.index.tolist() == [r.certificates.table.index[i]]
    assert back.table["flip_budget_exact"].tolist() == search.k_exact.tolist()
    np.testing.assert_array_equal(back.traj_margin[0], r.certificates.traj_margin[i])
    # A tampered certificate does not verify.
    bundle["arrays"]["traj_margin"]["data"][0] += 1.0
    assert not verify(bundle, r.model.predict_proba, r.X_test[i:i + 1]).ok
    with pytest.raises(ValueError, match="`position` must be a row"):
        sample_bundle(r.certificates, len(r.certificates))


def test_groups_and_raw_values_tables(small_audit):
    from core.cfc.grouping import trace_feature_origins
    from core.dashboard import groups_table, raw_values_table

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


def test_model_comparison_table_rows_match_each_audit(small_audit):
    from core.dashboard import model_comparison_table

    r = small_audit
    t = model_comparison_table({"logreg": r})
    assert t.loc[0, "auroc"] == r.nominal["auroc"]
    assert t.loc[0, "mean_rcma"] == pytest.approx(r.certificates.table["rcma"].mean())
    assert t.loc[0, "median_rcma"] == pytest.approx(r.certificates.table["rcma"].median())


def _naive_capture(scores, y, q):
    """Average over every tie order (exhaustive for tiny inputs) of positives in the top k."""
    import itertools

    n = len(scores)
    k = max(1, int(np.floor(q * n + 0.5 + 1e-9)))
    orders = [p for p in itertools.permutations(range(n))
              if all(scores[p[i]] >= scores[p[i + 1]] for i in range(n - 1))]
    return np.mean([sum(y[j] for j in p[:k]) for p in orders]) / sum(y)


@settings(max_examples=40)
@given(data=st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.7, 1.0]), st.booleans()), min_size=2, max_size=6),
       q=st.sampled_from([0.2, 0.5, 0.75, 1.0]))
def test_capture_curves_match_enumeration_of_tie_orders(data, q):
    scores = [d[0] for d in data]
    y = np.array([d[1] for d in data])
    if not y.any():
        y[0] = True
    curves, ceiling, random = capture_curves(pd.DataFrame({"s": scores}), y, np.array([q]))
    assert curves["s"][0] == pytest.approx(_naive_capture(scores, y, q))
    k = max(1, int(np.floor(q * len(y) + 0.5 + 1e-9)))
    assert ceiling[0] == pytest.approx(min(1.0, k / y.sum()))
    assert random[0] == pytest.approx(k / len(y))


def test_score_summary_auroc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.random(200) < 0.3
    scores = pd.DataFrame({"fds": y + rng.normal(0, 1, 200), "mystery": rng.random(200)})
    out = score_summary(scores, y, 0.1).set_index("score")
    assert out.loc["fds", "auroc"] == pytest.approx(roc_auc_score(y, scores["fds"]))
    assert out.loc["fds", "kind"] == "certificate" and out.loc["mystery", "kind"] == "custom"
    assert np.isnan(score_summary(scores, np.zeros(200, bool), 0.1)["auroc"]).all()


def test_coverage_by_budget_averages_conditions_with_failures():
    rows = []
    for condition, n_fail, cov in (("a", 4, 0.5), ("b", 2, 1.0), ("c", 0, np.nan)):
        for score in ("U", "S"):
            for budget in (0.1, 0.2):
                rows.append({"condition": condition, "score": score, "budget": budget, "n_fail": n_fail,
                             "coverage": cov * budget * 10 if score == "U" else cov, "ceiling": 1.0,
                             "random": budget})
    metrics = pd.DataFrame(rows)
    budgets, curves, ceiling, random = coverage_by_budget(metrics)
    assert budgets.tolist() == [0.1, 0.2]
    assert curves["U"].tolist() == pytest.approx([0.75, 1.5])
    assert curves["S"].tolist() == pytest.approx([0.75, 0.75])
    assert random.tolist() == [0.1, 0.2]
    _, one, _, _ = coverage_by_budget(metrics, condition="b")
    assert one["S"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="No image failed"):
        coverage_by_budget(metrics, condition="c")


def test_thumbnail_uri_round_trips():
    import base64
    import io

    from PIL import Image

    img = (np.arange(12, dtype=np.uint8).reshape(3, 4) * 20)
    uri = thumbnail_uri(img, scale=2)
    assert uri.startswith("data:image/png;base64,")
    back = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))))
    np.testing.assert_array_equal(back[::2, ::2], img)
    with pytest.raises(ValueError, match="2-D uint8"):
        thumbnail_uri(img.astype(float))


def test_grid_summary_and_policy_matrix():
    grid = pd.DataFrame([
        # cell 1: I5 narrows H, dM_k straddles 0
        ("m", "c1", "syn", "H", "Ik", 0.0, 0.2), ("m", "c1", "syn", "H", "I5", 0.05, 0.2),
        ("m", "c1", "syn", "dM_k", "Ik", -0.1, 0.1),
        # cell 2: nothing narrows, K = 0
        ("m", "c2", "syn", "H", "Ik", 0.0, 0.1), ("m", "c2", "syn", "H", "I5", 0.0, 0.1),
        ("m", "c2", "syn", "dM_k", "Ik", np.nan, np.nan),
    ], columns=["model", "condition", "source", "target", "level", "low", "high"])
    summary, stats = grid_summary(grid)
    # Straddling is a share of the cells where dM_k is defined (cell 2 has K = 0), as in core.paired.
    assert stats == {"cells": 2, "i5_narrows_h": 0.5, "dmk_straddles_zero": 1.0, "k_zero": 0.5}
    h_ik = summary[(summary["target"] == "H") & (summary["level"] == "Ik")]["mean_width"].item()
    assert h_ik == pytest.approx(0.15)

    diffs = pd.DataFrame([
        {"model": "m", "condition": "c", "source": "s", "level": "Ik", "lambda": 0.5, "policy": j, "versus": l,
         "coverage": 0.6 + 0.1 * j, "D_plus": d}
        for (j, l), d in {(0, 1): -0.02, (1, 0): 0.05, (0, 2): 0.01, (2, 0): 0.0, (1, 2): 0.03, (2, 1): -0.01}.items()])
    coverages, matrix, regret = policy_matrix(diffs, level="Ik", lam=0.5)
    assert coverages == pytest.approx([0.6, 0.7, 0.8])
    np.testing.assert_allclose(matrix, [[0, -0.02, 0.01], [0.05, 0, 0.03], [0.0, -0.01, 0]])
    np.testing.assert_allclose(regret, [0.01, 0.05, 0.0])
    with pytest.raises(ValueError, match="No policy differences"):
        policy_matrix(diffs, level="I5", lam=0.5)


def test_upload_helpers():
    assert table_columns(b"a;b;c\n1;2;3\n", "x.csv") == ["a", "b", "c"]
    assert table_columns(b"a\tb\n1\t2\n", "x.tsv") == ["a", "b"]
    buffer = __import__("io").BytesIO()
    pd.DataFrame({"u": [1], "v": ["x"]}).to_parquet(buffer)
    assert table_columns(buffer.getvalue(), "t.parquet") == ["u", "v"]
    with pytest.raises(ValueError, match="could not be read as Parquet"):
        table_columns(b"not parquet", "t.parquet")
    with pytest.raises(ValueError, match="expected a .csv"):
        table_columns(b"a,b", "t.xlsx")
    assert parse_blocks(b'{"money": ["Income", "Debt"]}', "b.json") == {"money": ["Income", "Debt"]}
    assert parse_blocks(b"Age: person\n", "b.yaml") == {"Age": "person"}
    with pytest.raises(ValueError, match="could not be parsed"):
        parse_blocks(b"{not json", "b.json")
    with pytest.raises(ValueError, match="non-empty mapping"):
        parse_blocks(b"- a\n- b\n", "b.yaml")


def test_column_summary_counts_missing_and_distinct():
    from core.tabular.datasets import load_dataset

    ds = load_dataset("credit_data")
    summary = column_summary(ds).set_index("column")
    assert summary.loc["Income", "missing"] == ds.frame["Income"].isna().sum()
    assert summary.loc["Home", "kind"] == "categorical"
    assert summary.loc["Home", "distinct"] == ds.frame["Home"].nunique()


def test_whatif_probabilities_removes_the_chosen_groups_only():
    from types import SimpleNamespace

    from core.dashboard import whatif_probabilities

    weights = np.array([2.0, -1.0, 0.5])

    class Linear:  # p(class 1) = sigmoid(w·x), by hand
        def predict_proba(self, X):
            p1 = 1 / (1 + np.exp(-(np.asarray(X) @ weights)))
            return np.column_stack([1 - p1, p1])

    result = SimpleNamespace(X_test=np.array([[1.0, 1.0, 2.0], [0.0, 3.0, 1.0]]), groups={"a": [0], "bc": [1, 2]},
                             baseline=np.array([0.0, 0.5, 0.0]), model=Linear())
    original, edited = whatif_probabilities(result, 0, ["bc"])
    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    np.testing.assert_allclose(original, [1 - sigmoid(2.0), sigmoid(2.0)])     # 2 - 1 + 1
    np.testing.assert_allclose(edited, [1 - sigmoid(1.5), sigmoid(1.5)])       # 2 - 0.5 + 0
    unchanged, same = whatif_probabilities(result, 1, [])
    np.testing.assert_allclose(unchanged, same)
