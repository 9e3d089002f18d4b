"""core.views.ranking: queue ranking, decision join, capture curves and the score summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.reviews import ReviewStore
from core.views.ranking import attach_decisions, capture_curves, rank_queue, score_summary


def _naive_queue(ids, scores, budget):
    n = len(ids)
    k = max(1, int(np.floor(budget * n + 0.5)))
    keyed = sorted(range(n), key=lambda i: (-(scores[i] if not np.isnan(scores[i]) else -np.inf), i))
    return [ids[i] for i in keyed[:k]]


@settings(max_examples=60)
@given(
    scores=st.lists(
        st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=30
    ),
    budget=st.floats(0.01, 1.0),
)
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


def _naive_capture(scores, y, q):
    """Average over every tie order (exhaustive for tiny inputs) of positives in the top k."""
    import itertools

    n = len(scores)
    k = max(1, int(np.floor(q * n + 0.5 + 1e-9)))
    orders = [
        p for p in itertools.permutations(range(n)) if all(scores[p[i]] >= scores[p[i + 1]] for i in range(n - 1))
    ]
    return np.mean([sum(y[j] for j in p[:k]) for p in orders]) / sum(y)


@settings(max_examples=40)
@given(
    data=st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.7, 1.0]), st.booleans()), min_size=2, max_size=6),
    q=st.sampled_from([0.2, 0.5, 0.75, 1.0]),
)
def test_capture_curves_match_enumeration_of_tie_orders(data, q):
    scores = [d[0] for d in data]
    y = np.array([d[1] for d in data])
    if not y.any():
        y[0] = True
    c = capture_curves(pd.DataFrame({"s": scores}), y, np.array([q]))
    curves, ceiling, random = c.curves, c.ceiling, c.random
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
