"""What the pages show of the issue-40 headline: near-tie words, ceilings, the queue guarantee."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.metrics.capture import capture_bound
from core.tabular.glance import AuditGlance
from core.views.ranking import queue_guarantee, score_summary
from core.views.tabular import near_tie_note, prediction_table, rcma_glance_text


def test_score_summary_gives_the_ceiling_and_the_ratio():
    scores = pd.DataFrame({"good": [0.9, 0.8, 0.1, 0.2, 0.3], "bad": [0.1, 0.2, 0.9, 0.8, 0.7]})
    brittle = np.array([True, True, False, False, False])
    table = score_summary(scores, brittle, 0.2).set_index("score")  # k = 1 of 2 brittle
    assert table["ceiling"].tolist() == [0.5, 0.5]
    assert table.loc["good", "capture"] == 0.5 and table.loc["good", "capture_ratio"] == 1.0
    assert table.loc["bad", "capture"] == 0.0 and table.loc["bad", "capture_ratio"] == 0.0


def test_queue_guarantee_states_the_bound_in_words():
    rng = np.random.default_rng(3)
    y = rng.random(400) < 0.2
    s = rng.normal(size=400) + 1.5 * y
    g = queue_guarantee(s, y, 0.1, score_name="FDS")
    assert g.bound == capture_bound(y, s, q=0.1, confidence=0.9)
    assert g.text == (
        f"reviewing the top 10 % catches at least {math.floor(100 * g.bound.lower)} % of brittle cases (90 % confidence)"
    )
    assert f"{g.bound.threshold:.4g}" in g.detail and "same source" in g.detail
    none = queue_guarantee(s, np.zeros(400, bool), 0.1, score_name="FDS")
    assert "no guarantee" in none.text and "nothing to bound" in none.detail


def test_near_tie_note_only_for_near_ties():
    assert near_tie_note(0.5, 0.3) is None
    note = near_tie_note(-8.9e-7, 222_293.0)
    assert note.startswith("Near-tie:") and "222,293" in note and "coin flip" in note


def test_prediction_table_flags_near_ties(small_audit):
    table = prediction_table(small_audit)
    np.testing.assert_array_equal(
        table["near_tie"].to_numpy(), np.abs(small_audit.certificates.table["margin"].to_numpy()) < 1e-3
    )


def test_rcma_glance_text(small_audit):
    glance = AuditGlance.of(small_audit)
    f = small_audit.fragility
    text = rcma_glance_text(glance)
    assert f"mean RCMA {f['mean_rcma']:.3f}" in text and f"({f['n_near_tie']} near-tie" in text
    import dataclasses

    assert rcma_glance_text(dataclasses.replace(glance, n_near_tie=None)) is None


@pytest.mark.parametrize("budget", [0.05, 0.5, 1.0], ids=["5%", "50%", "all"])
def test_queue_guarantee_threshold_is_the_queue_cut(small_audit, budget):
    hc = np.asarray(small_audit.labels.high_confidence, dtype=bool)
    s = small_audit.scores["fds"].to_numpy()[hc]
    g = queue_guarantee(s, small_audit.labels.labels[hc], budget, score_name="fds")
    assert g.bound.threshold == small_audit.queue(budget)["score_value"].min()
