"""The triage queue is ranked once per (audit, score, scope) and sliced by the budget slider.

Whatever the order of the slider steps and score changes, the queue shown must be the top
``k = max(1, round(q·n))`` of the ranked population by the score, ties in table order — here
checked against a brute-force sort of the default audit's own predictions.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.cfc.protocol import Protocol
from core.tabular.datasets import load_dataset
from core.tabular.shipped import shipped_audit
from core.views.tabular import prediction_table


@pytest.fixture(scope="module")
def reference():
    result = shipped_audit(load_dataset("credit_data"), model="hist_gb", seed=0, protocol=Protocol())
    assert result is not None, "the shipped default audit must match its source"
    frame = prediction_table(result)
    return frame, result.scores.reset_index(drop=True)


def _expected(reference, score: str, scope: str, percent: int) -> list[int]:
    frame, scores = reference
    mask = frame["high_confidence"].to_numpy() if scope == "high-confidence" else np.ones(len(frame), bool)
    ids = frame["sample_id"].to_numpy()[mask]
    values = scores[score].to_numpy(dtype=float)[mask]
    values = np.where(np.isnan(values), -np.inf, values)
    n = int(mask.sum())
    k = max(1, int(np.floor(percent / 100 * n + 0.5)))
    # Brute force: a plain loop of (−score, table order) keys, no argsort.
    order = sorted(range(n), key=lambda i: (-values[i], i))
    return [int(ids[i]) for i in order[:k]]


def test_queue_follows_budget_score_and_scope(app, reference):
    app.switch_page("pages/triage.py").run()
    steps = [
        ("fds", "high-confidence", 10),
        ("fds", "high-confidence", 30),
        ("fds", "high-confidence", 11),
        ("max_softmax", "high-confidence", 11),
        ("one_step", "all", 5),
        ("fds", "all", 5),
        ("fds", "high-confidence", 10),
    ]
    for score, scope, percent in steps:
        app.selectbox(key="triage_score").set_value(score)
        app.radio(key="triage_scope").set_value(scope)
        app.slider(key="triage_budget").set_value(percent).run()
        assert not app.exception, [e.value for e in app.exception]
        shown = [int(v) for v in app.dataframe(key="triage_table").value["sample_id"]]
        assert shown == _expected(reference, score, scope, percent), (score, scope, percent)
        assert [int(r) for r in app.dataframe(key="triage_table").value["rank"]] == list(range(1, len(shown) + 1))
