"""The end-to-end audit pipeline (core.tabular.audit)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import core.tabular.audit as audit_module
from core.cfc.certificate_set import CertificateSet
from core.cfc.evaluation import EVALUATION_COLUMNS, auroc, capture_at
from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.tabular.audit import (
    SWEEP_TABLE_COLUMNS,
    AuditResult,
    certificate_export,
    evaluation_json,
    run_audit,
    run_sweep,
    summary_markdown,
    write_audit,
)
from core.tabular.datasets import load_dataset

# A small credit_data audit: categorical and numeric columns, real missing values.
CREDIT = dict(model="logreg", seed=1, max_rows=600)


@pytest.fixture(scope="module")
def credit() -> AuditResult:
    return run_audit("credit_data", **CREDIT)


def test_everything_is_aligned_on_the_test_split(credit):
    n = len(credit.split.test_index)
    d = credit.preprocessor.n_features_out
    assert credit.X_test.shape == (n, d) and credit.y_test.shape == (n,) and credit.proba_test.shape == (n, 2)
    assert len(credit.certificates) == n and credit.labels.labels.shape == (n,)
    assert credit.scores.shape[0] == n
    pd.testing.assert_index_equal(credit.certificates.table.index, credit.raw_test.index)
    pd.testing.assert_index_equal(credit.scores.index, credit.raw_test.index)
    assert sorted(c for cols in credit.groups.values() for c in cols) == list(range(d))
    assert list(credit.groups) == [c for c in credit.preprocessor.raw_columns if c in credit.groups]
    np.testing.assert_array_equal(credit.proba_test, credit.model.predict_proba(credit.X_test))
    assert credit.fingerprint == credit.certificates.fingerprint


def test_preprocessing_is_fitted_on_the_training_split_only(credit):
    X_train = credit.preprocessor.transform(credit.split.train)
    scaled = X_train.std(axis=0) > 0.5  # standardised numeric columns
    np.testing.assert_allclose(X_train[:, scaled].mean(axis=0), 0.0, atol=1e-9)
    assert np.abs(credit.X_test[:, scaled].mean(axis=0)).max() > 1e-3
    np.testing.assert_allclose(credit.baseline, X_train.mean(axis=0))  # mean rule, training rows


def test_evaluation_table_agrees_with_the_metrics(credit):
    ev = credit.evaluation.set_index("score")
    assert list(credit.evaluation.columns) == list(EVALUATION_COLUMNS)
    assert list(ev.index) == [
        "fds",
        "rcma",
        "inv_flip_budget",
        "degradation",
        "one_step",
        "max_softmax",
        "entropy",
        "margin",
        "neg_energy",
    ]
    hc, b = credit.labels.high_confidence, credit.labels.labels
    assert 0 < b.sum() < hc.sum()
    for name in ("fds", "max_softmax", "one_step"):
        s = credit.scores[name].to_numpy()[hc]
        assert ev.loc[name, "auroc"] == pytest.approx(auroc(s, b[hc]))
        assert ev.loc[name, "capture@20"] == pytest.approx(capture_at(s, b[hc], 0.2))
    np.testing.assert_array_equal(credit.scores["fds"], credit.certificates.table["u"])
    f = credit.fragility
    assert f["mean_rcma"] == pytest.approx(credit.certificates.table["rcma"].mean())
    assert f["share_brittle"] == pytest.approx(b.mean())


def test_naturalistic_channel_replaces_the_unavailable_fields(credit):
    cols = set(credit.unavailable["column"])
    assert {"Income", "Home"} <= cols  # NaN codes and the 'ignore' level of Home
    # Raw-origin grouping: a group is named after its raw column.
    assert set(credit.unavailable_groups) == cols & set(credit.groups)
    assert credit.naturalistic is not None and credit.naturalistic.settings == (("naturalistic", 1.0),)
    assert list(credit.naturalistic_evaluation["score"]) == list(credit.evaluation["score"])
    plain = run_audit("breast_cancer", model="logreg", seed=0)
    assert plain.naturalistic is None and plain.unavailable_groups == ()
    assert any("naturalistic" in n for n in plain.notes)


def test_calibration_keeps_every_label(credit):
    cal = credit.calibration
    for method, P in cal.proba.items():
        np.testing.assert_array_equal(P.argmax(axis=1), credit.proba_test.argmax(axis=1), err_msg=method)
    assert cal.fragile.sum() == round(0.2 * len(credit.y_test))
    assert set(cal.metrics["method"]) == {"uncalibrated", "temperature", "bats"}
    # BATS is normalised on validation FDS (not on u) and fragile rows are the highest test FDS.
    assert 0.0 <= cal.bats.fds_min <= cal.bats.fds_max < 1.0  # FDS, not u (mean u here is above 1)
    assert credit.certificates.table["u"].max() > 1.0
    fds = credit.certificates.table["fds"].to_numpy()
    assert fds[cal.fragile].min() >= fds[~cal.fragile].max()
    np.testing.assert_allclose(cal.bats.temperature(fds), cal.bats.t0 + cal.bats.eta * cal.bats.normalise(fds))


def test_noise_only_on_numeric_coordinates():
    X = np.column_stack([np.r_[0.0, 1.0, 0.0, 1.0], np.r_[1.0, 2.0, 3.0, 5.0], np.r_[-1.0, 1.0, -1.0, -1.0]])
    np.testing.assert_allclose(audit_module.noise_scale(X), [0.0, X[:, 1].std(), 0.0])


def test_audit_is_deterministic(credit):
    again = run_audit("credit_data", **CREDIT)
    pd.testing.assert_frame_equal(again.certificates.table, credit.certificates.table)
    pd.testing.assert_frame_equal(again.evaluation, credit.evaluation)
    pd.testing.assert_frame_equal(again.calibration.metrics, credit.calibration.metrics)
    np.testing.assert_array_equal(again.labels.max_collapse, credit.labels.max_collapse)
    assert again.fingerprint == credit.fingerprint
    other = run_audit("credit_data", **(CREDIT | {"seed": 2}))
    assert other.fingerprint != credit.fingerprint
    assert not np.array_equal(other.split.test_index, credit.split.test_index)


def test_label_channel_has_its_own_stream_and_never_sees_the_certificate(monkeypatch, credit):
    seen = []
    real = audit_module.brittle_labels

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(audit_module, "brittle_labels", spy)
    extra = run_audit("credit_data", **CREDIT, order_baselines=True, shap=True, n_random_orders=2)
    ((args, kwargs),) = seen
    for value in (*args, *kwargs.values()):
        assert not isinstance(value, (CertificateSet, pd.DataFrame, pd.Series))
    assert set(kwargs) == {"channel", "noise_scale", "seed", "batch_size"}
    # The extras draw from other streams: the labels are bit-identical with and without them.
    np.testing.assert_array_equal(extra.labels.max_collapse, credit.labels.max_collapse)
    np.testing.assert_array_equal(extra.labels.labels, credit.labels.labels)


def test_opt_in_extras():
    res = run_audit(
        "credit_data", **CREDIT, order_baselines=True, shap=True, sensitivity=True, search="both", n_random_orders=2
    )
    ev = res.evaluation.set_index("score")
    assert {"random_order", "perm_order", "group_shap"} <= set(ev.index)
    assert ev.loc["random_order", "kind"] == "certificate_ablation" and ev.loc["group_shap", "kind"] == "attribution"
    assert np.isfinite(res.scores["group_shap"]).all() and res.group_shap.explainer == "linear"
    assert sorted(res.importance.order) == sorted(res.groups)
    sens = res.sensitivity
    assert list(zip(sens["kind"], sens["rule"])) == [
        ("baseline", "median"),
        ("baseline", "zero"),
        ("baseline", "mode"),
        ("grouping", "domain_block"),
        ("grouping", "redundancy_merged"),
    ]
    assert sens["spearman"].between(-1, 1).all()
    assert sens.loc[sens["rule"] == "domain_block", "n_groups"].item() == 5  # credit_data's five blocks
    assert list(res.search["statistic"]) == ["exact_match", "greedy_over", "mean_gap", "pair_miss", "beam_improve"]
    assert "flip_budget_exact" in res.certificates.table


def test_shap_for_a_model_without_a_fast_explainer_is_nan_with_a_reason():
    res = run_audit("breast_cancer", model="mlp", seed=0, shap=True)
    row = res.evaluation.set_index("score").loc["group_shap"]
    assert np.isnan(row["auroc"]) and "too slow" in row["note"]
    assert any("group SHAP not computed for mlp" in n for n in res.notes)


def test_progress_reports_every_stage():
    calls = []
    run_audit("breast_cancer", model="logreg", seed=0, progress=lambda *a: calls.append(a))
    stages = list(dict.fromkeys(stage for stage, _, _ in calls))
    assert stages == [
        "load data",
        "preprocess",
        "fit model",
        "certify test",
        "certify validation",
        "label channel",
        "calibration",
    ]
    certify_calls = [(d, t) for s, d, t in calls if s == "certify test"]
    assert certify_calls[-1][0] == certify_calls[-1][1] > 1  # row counts, ending complete


def test_a_dataframe_with_a_target_and_blocks():
    frame = load_dataset("breast_cancer").frame
    blocks = {"mean radius": "size", "mean perimeter": "size", "mean area": "size"}
    res = run_audit(
        frame, target="diagnosis", model="logreg", seed=0, blocks=blocks, protocol=Protocol(grouping="domain_block")
    )
    assert res.dataset.name == "frame" and "size" in res.groups
    assert len(res.groups) == 30 - 2


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: run_audit("credit_data", model="svm"), "`model` must be one of"),
        (lambda: run_audit("nope"), "`name` must be one of"),
        (lambda: run_audit(load_dataset("breast_cancer").frame), "`target` is required"),
        (lambda: run_audit(load_dataset("breast_cancer").frame, target="nope"), "target column 'nope' not found"),
        (lambda: run_audit("credit_data", target="Status"), "has its own target"),
        (lambda: run_audit("credit_data", seed=-1), "`seed` must be a non-negative int"),
        (
            lambda: run_audit("credit_data", protocol=Protocol(depth=40), max_rows=300),
            r"`depth` must be between 1 and the number of groups \(13\); got 40",
        ),
        (
            lambda: run_audit(
                load_dataset("breast_cancer").frame, target="diagnosis", protocol=Protocol(grouping="domain_block")
            ),
            "needs domain blocks",
        ),
        (lambda: run_audit("credit_data", blocks={"Salary": "x"}), "Salary"),
        (lambda: run_audit("credit_data", search="greedy"), "`search` must be one of"),
        (lambda: run_audit(42), "`data` must be"),
    ],
    ids=[
        "model",
        "dataset",
        "no-target",
        "bad-target",
        "target-on-bundled",
        "seed",
        "depth",
        "no-blocks",
        "unknown-block-column",
        "search",
        "data-type",
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_exports(tmp_path, credit):
    table = certificate_export(credit)
    assert list(table.columns[:5]) == ["row_id", "y_true", "brittle", "high_confidence", "naturalistic_brittle"]
    assert {"fds", "path", "score_fds", "score_max_softmax"} <= set(table.columns)
    files = write_audit(credit, tmp_path)
    assert [str(f.relative_to(tmp_path)) for f in files] == [
        "certificates.parquet",
        "certificates.csv",
        "evaluation.json",
        "protocol.json",
        "summary.md",
        "train.parquet",
        "test.parquet",
        "_task.zip",
        # the dashboard's tables, readable without the model (core.tabular.audit_view)
        "view/meta.json",
        "view/arrays.npz",
        "view/certificates.json.gz",
        "view/glance.json",
        "view/evaluation.parquet",
        "view/naturalistic_evaluation.parquet",
        "view/unavailable.parquet",
        "view/calibration_metrics.parquet",
        "view/calibration_reliability.parquet",
        "view/scores.parquet",
    ]
    back = pd.read_parquet(tmp_path / "certificates.parquet")
    assert list(back["path"].iloc[0]) == table["path"].iloc[0]
    np.testing.assert_allclose(back["fds"], table["fds"])
    csv = pd.read_csv(tmp_path / "certificates.csv")
    assert json.loads(csv["path"].iloc[0]) == table["path"].iloc[0]
    ev = json.loads((tmp_path / "evaluation.json").read_text())  # strict JSON: NaN became null
    assert set(ev["scores"]) == set(credit.evaluation["score"])
    assert ev["scores"]["fds"]["auroc"] == pytest.approx(credit.evaluation.set_index("score").loc["fds", "auroc"])
    assert ev == evaluation_json(credit)
    proto = json.loads((tmp_path / "protocol.json").read_text())
    assert proto["protocol_fingerprint"] == credit.protocol.fingerprint
    assert proto["certificate_fingerprint"] == credit.fingerprint
    assert Protocol.from_dict(proto["protocol"]) == credit.protocol
    assert (
        LabelChannel(**{k: tuple(v) if isinstance(v, list) else v for k, v in proto["label_channel"].items()})
        == credit.label_channel
    )
    summary = (tmp_path / "summary.md").read_text()
    assert summary == summary_markdown(credit) and credit.fingerprint in summary
    with pytest.raises(ValueError, match="does not exist"):
        write_audit(credit, tmp_path / "missing")


def test_sweep_table_and_bootstrap():
    seen = []
    res = run_sweep(["breast_cancer"], ["logreg"], [0, 1], n_resamples=200, on_result=seen.append)
    assert [r.seed for r in seen] == [0, 1]
    assert list(res.table.columns) == list(SWEEP_TABLE_COLUMNS)
    row = res.table.iloc[0]
    assert row["n_seeds"] == 2
    assert row["fds_auroc"] == pytest.approx(res.runs["fds_auroc"].mean())
    assert row["accuracy"] == pytest.approx(np.mean([r.nominal["accuracy"] for r in seen]))
    assert row["mean_rcma"] == pytest.approx(np.mean([r.fragility["mean_rcma"] for r in seen]))
    assert len(res.units) == 2 * 9
    assert set(res.bootstrap["score"]) == set(res.units["score"])
    with pytest.raises(ValueError, match="repeats"):
        run_sweep(["breast_cancer"], ["logreg", "logreg"], [0])
    with pytest.raises(ValueError, match="unknown model 'svm'"):
        run_sweep(["breast_cancer"], ["svm"], [0])
    with pytest.raises(ValueError, match="set by the sweep"):
        run_sweep(["breast_cancer"], ["logreg"], [0], seed=3)


def test_population_all_evaluates_every_test_row():
    res = run_audit("breast_cancer", model="logreg", seed=0, population="all")
    assert (res.evaluation["n"] == len(res.y_test)).all() and (res.evaluation["population"] == "all").all()
    assert "(all test rows)" in summary_markdown(res)
    with pytest.raises(ValueError, match="`population` must be"):
        run_audit("breast_cancer", population="everyone")


def test_markdown_table_by_hand():
    frame = pd.DataFrame({"a|b": [1.0, np.nan], "c": ["x|y", 3]})
    assert audit_module.markdown_table(frame, digits=2).splitlines() == [
        "| a\\|b | c |",
        "|---|---|",
        "| 1.00 | x\\|y |",
        "| – | 3 |",
    ]
