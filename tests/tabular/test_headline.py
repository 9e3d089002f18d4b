"""The audit's headline figures (issue 40): near-ties, capture against its ceiling, the capture guarantee."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from core.cfc.fds import NEAR_TIE_MARGIN
from core.metrics.capture import capture_bound
from core.metrics.ranking import review_budget
from core.tabular.audit import certificate_export, evaluation_json, run_audit, summary_markdown, write_audit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def forest():
    """A random forest of 100 trees: some test predictions are exact 50 / 50 votes (near-ties)."""
    return run_audit("credit_data", model="random_forest", seed=0, max_rows=1500)


def test_near_ties_are_flagged_left_out_of_the_mean_and_counted(forest):
    t = forest.certificates.table
    tied = np.abs(t["margin"].to_numpy()) < NEAR_TIE_MARGIN
    assert tied.any(), "the fixture must hold a near-tie"
    f = forest.fragility
    assert f["n_near_tie"] == int(tied.sum())
    assert f["mean_rcma"] == pytest.approx(t["rcma"].to_numpy()[~tied].mean(), rel=1e-12)
    assert f["median_rcma"] == pytest.approx(float(np.median(t["rcma"])), rel=1e-12)
    assert t["rcma"].mean() > 100 * f["mean_rcma"], "the all-rows mean is what the near-ties dominate"
    export = certificate_export(forest)
    np.testing.assert_array_equal(export["near_tie"].to_numpy(), tied)
    text = summary_markdown(forest)
    assert (
        f"over the {len(t) - tied.sum():,} predictions that are not near-ties ({tied.sum()} near-ties left out" in text
    )
    frag = evaluation_json(forest)["fragility"]
    assert frag["n_near_tie"] == tied.sum() and frag["mean_rcma"] == pytest.approx(f["mean_rcma"])


def test_the_written_csv_has_the_near_tie_column(forest, tmp_path):
    write_audit(forest, tmp_path)
    csv = pd.read_csv(tmp_path / "certificates.csv")
    parquet = pd.read_parquet(tmp_path / "certificates.parquet")
    assert csv["near_tie"].dtype == bool and csv["near_tie"].tolist() == parquet["near_tie"].tolist()
    assert csv["near_tie"].sum() == forest.fragility["n_near_tie"]


def _best_top_k(brittle: np.ndarray, q: float) -> float:
    k = review_budget(q, len(brittle))
    # any ranking's top k holds at most min(k, #brittle) brittle rows, and one holds exactly that
    idx = np.flatnonzero(brittle)
    best = len(idx[:k]) if k <= len(idx) else len(idx)
    return best / len(idx)


def test_capture_against_its_ceiling(forest):
    table = forest.capture_vs_ceiling
    hc = np.asarray(forest.labels.high_confidence, dtype=bool)
    brittle = np.asarray(forest.labels.labels, dtype=bool)[hc]
    ev = forest.evaluation.set_index("score")
    assert list(table.columns) == ["score", "budget", "capture", "ceiling", "capture_ratio"]
    assert len(table) == 3 * len(ev)
    for row in table.itertuples():
        q = round(100 * row.budget)
        assert row.capture == ev.loc[row.score, f"capture@{q}"]
        assert row.ceiling == pytest.approx(_best_top_k(brittle, row.budget))
        assert row.capture_ratio == pytest.approx(row.capture / row.ceiling)
        assert row.capture <= row.ceiling + 1e-12
    ceilings = evaluation_json(forest)["capture_vs_ceiling"]
    assert ceilings["fds"]["ceiling@20"] == pytest.approx(min(1.0, review_budget(0.2, len(brittle)) / brittle.sum()))
    assert "## Capture against its ceiling" in summary_markdown(forest)


def test_capture_bound_is_a_thin_delegate(forest):
    hc = np.asarray(forest.labels.high_confidence, dtype=bool)
    for score, q in itertools.product(("fds", "max_softmax"), (0.05, 0.1, 0.2)):
        got = forest.capture_bound(q, score=score)
        want = capture_bound(forest.labels.labels[hc], forest.scores[score].to_numpy()[hc], q=q, confidence=0.9)
        assert got == want
        # the threshold is on the scale of scores[score] and is where the queue's cut falls
        queue = forest.queue(q, score=score)
        assert got.threshold == queue["score_value"].min() and got.k == len(queue)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.lower = 1.0  # type: ignore[misc]
    assert forest.capture_bound(0.1, confidence=0.95).lower <= forest.capture_bound(0.1).lower


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"score": "nope"}, "`score` must be one of"), ({"confidence": 0.2}, "confidence"), ({"budget": 0.0}, "budget|q")],
    ids=["score", "confidence", "budget"],
)
def test_capture_bound_refuses_bad_options(forest, kwargs, match):
    with pytest.raises(ValueError, match=match):
        forest.capture_bound(**({"budget": 0.1} | kwargs))


def test_evaluation_json_states_the_guarantee(forest):
    g = evaluation_json(forest)["capture_guarantee"]
    assert g["score"] == "fds" and g["confidence"] == 0.9 and "DKW" in g["method"]
    assert [b["budget"] for b in g["budgets"]] == [0.05, 0.1, 0.2]
    b = forest.capture_bound(0.1)
    assert g["budgets"][1]["lower"] == pytest.approx(b.lower)
    assert g["budgets"][1]["text"] == (
        f"reviewing the top 10 % catches at least {math.floor(100 * b.lower)} % of brittle cases (90 % confidence)"
    )
    json.dumps(evaluation_json(forest), allow_nan=False)
    assert g["budgets"][1]["text"] in summary_markdown(forest)
