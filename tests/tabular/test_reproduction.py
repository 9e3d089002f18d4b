"""Per-sample records of an audit and their exact re-analysis (thresholds, FDS weights)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cfc.fds import fds_from_components
from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.cli import main
from core.tabular.audit import run_audit
from core.tabular.reproduction import (
    SAMPLE_COLUMNS,
    evaluate_samples,
    relabel,
    sample_records,
    weighted_u,
)


@pytest.fixture(scope="module")
def audit():
    return run_audit("credit_g", model="logreg", seed=1)


@pytest.fixture(scope="module")
def samples(audit):
    return sample_records(audit)


def test_records_hold_one_row_per_test_sample_with_every_score(audit, samples):
    assert len(samples) == len(audit.y_test) == 200
    assert tuple(samples.columns[: len(SAMPLE_COLUMNS)]) == SAMPLE_COLUMNS
    assert samples["row_id"].tolist() == audit.certificates.table.index.tolist()
    assert {c.removeprefix("score_") for c in samples.columns if c.startswith("score_")} == set(audit.scores.columns)
    assert "naturalistic_brittle" in samples.columns  # credit_g has 'unknown' savings / property codes


def test_evaluation_at_the_audit_thresholds_equals_the_audit_evaluation(audit, samples):
    got = evaluate_samples(samples)
    expected = audit.evaluation
    pd.testing.assert_frame_equal(got.drop(columns="note"), expected.drop(columns="note"))
    natural = evaluate_samples(samples, label="naturalistic_brittle")
    pd.testing.assert_frame_equal(natural.drop(columns="note"), audit.naturalistic_evaluation.drop(columns="note"))


@pytest.mark.parametrize("tau_p, tau_kappa", [(0.85, 0.25), (0.95, 0.75), (0.9, 0.5)])
def test_relabelling_equals_rerunning_the_label_channel(audit, samples, tau_p, tau_kappa):
    """The stored flip share and largest κ give the same labels as a fresh audit at those thresholds."""
    fresh = run_audit("credit_g", model="logreg", seed=1, label_channel=LabelChannel(tau_p=tau_p, tau_kappa=tau_kappa))
    got = relabel(samples, tau_p=tau_p, tau_kappa=tau_kappa)
    np.testing.assert_array_equal(got.labels, fresh.labels.labels)
    np.testing.assert_array_equal(got.high_confidence, fresh.labels.high_confidence)
    pd.testing.assert_frame_equal(
        evaluate_samples(samples, tau_p=tau_p, tau_kappa=tau_kappa).drop(columns="note"),
        fresh.evaluation.drop(columns="note"),
    )


def test_weighted_u_equals_the_certificate_under_other_weights(samples):
    weights = (0.5, 0.25, 0.25)
    fresh = run_audit("credit_g", model="logreg", seed=1, protocol=Protocol(weights=weights))
    np.testing.assert_allclose(weighted_u(samples, weights), fresh.certificates.table["u"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(weighted_u(samples, (1 / 3, 1 / 3, 1 / 3)), samples["score_fds"], rtol=1e-12)


@given(rcma=st.lists(st.floats(0, 30), min_size=1, max_size=8), data=st.data())
def test_weighted_u_matches_fds_from_components(rcma, data):
    n = len(rcma)
    k = data.draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 5.0, 6.0]), min_size=n, max_size=n))
    lam = data.draw(st.lists(st.sampled_from([0.1, 0.5, 1.0, np.inf]), min_size=n, max_size=n))
    w = data.draw(st.tuples(*[st.floats(0, 2)] * 3))
    _, u, deg = fds_from_components(rcma, k, np.array(lam)[:, None], w)
    frame = pd.DataFrame({"rcma": rcma, "flip_budget": k, "degradation": deg})
    np.testing.assert_allclose(weighted_u(frame, w), u, rtol=1e-12, atol=0)


def test_relabel_by_hand():
    frame = pd.DataFrame(
        {
            "confidence": [0.95, 0.95, 0.86, 0.99],
            "flip_share": [0.0, 0.1, 0.0, 0.0],
            "max_collapse": [0.6, 0.0, 0.9, 0.3],
            "pred": [0, 1, 0, 1],
        }
    )
    assert relabel(frame, tau_p=0.9, tau_kappa=0.5).labels.tolist() == [True, True, False, False]
    assert relabel(frame, tau_p=0.85, tau_kappa=0.25).labels.tolist() == [True, True, True, True]
    assert relabel(frame, tau_p=0.95, tau_kappa=0.75).labels.tolist() == [False, True, False, False]
    with pytest.raises(ValueError, match=r"`tau_kappa` must be in \(0, 1\]; got 0"):
        relabel(frame, tau_p=0.9, tau_kappa=0)
    with pytest.raises(ValueError, match=r"`weights` must be three non-negative finite numbers"):
        weighted_u(frame.assign(rcma=0.0, flip_budget=1.0, degradation=0.0), (1.0, -1.0, 0.0))


@pytest.mark.parametrize("dataset, extra", [("credit_g", []), ("adult", ["--max-rows", "1500", "--split", "official"])])
def test_audit_cli_runs_catboost_on_the_paper_datasets(tmp_path, capsys, dataset, extra):
    out = tmp_path / dataset
    code = main(
        [
            "audit",
            "--dataset",
            dataset,
            "--model",
            "catboost",
            "--seed",
            "0",
            *extra,
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["dataset"] == dataset and ev["model"] == "catboost" and ev["scores"]["fds"]["auroc"] is not None
    expected = {
        "credit_g": ["savings_status", "property_magnitude"],
        "adult": ["workclass", "occupation", "native-country"],
    }[dataset]
    assert ev["unavailable_groups"] == expected  # the '?' / 'unknown' fields feed the naturalistic channel
    if dataset == "adult":
        proto = json.loads((out / "protocol.json").read_text())
        ids = pd.read_parquet(out / "certificates.parquet")["row_id"]
        assert (ids >= 32561).all()  # every test row comes from adult.test
        assert proto["split"]["n_test"] == len(ids)


def test_official_split_on_a_dataset_without_one_exits_2(tmp_path, capsys):
    code = main(
        [
            "audit",
            "--dataset",
            "credit_g",
            "--model",
            "logreg",
            "--split",
            "official",
            "--out",
            str(tmp_path / "x"),
            "--no-progress",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "no official train/test split" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
