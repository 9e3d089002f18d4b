"""Scores from probabilities (SPEC A.2) against the formulas written out directly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from core.cfc.scores import (
    check_proba,
    class_margin,
    clip_renormalize,
    confidence_and_prediction,
    entropy,
    max_softmax,
    neg_energy,
    prediction_margin,
    pseudo_logits,
    risk_scores,
    top2_margin,
)


def _spec(p):
    pt = np.maximum(p, 1e-12)
    pt = pt / pt.sum()
    z = np.log(pt) - np.log(pt).mean()
    return pt, z


probabilities = (
    st.integers(2, 6)
    .flatmap(
        lambda C: st.lists(
            st.lists(st.floats(0, 1), min_size=C, max_size=C).filter(lambda r: sum(r) > 1e-3), min_size=1, max_size=6
        )
    )
    .map(lambda rows: np.array(rows) / np.array(rows).sum(axis=1, keepdims=True))
)


@given(probabilities)
def test_every_score_matches_its_spec_formula(P):
    C = P.shape[1]
    for i, p in enumerate(P):
        pt, z = _spec(p)
        np.testing.assert_allclose(clip_renormalize(P)[i], pt, rtol=1e-12)
        np.testing.assert_allclose(pseudo_logits(P)[i], z, rtol=1e-9, atol=1e-9)
        y = int(np.argmax(p))
        for c in range(C):
            want = z[c] - max(z[j] for j in range(C) if j != c)
            np.testing.assert_allclose(class_margin(P[i : i + 1], [c])[0], want, rtol=1e-9, atol=1e-9)
        zs = np.sort(z)[::-1]
        np.testing.assert_allclose(prediction_margin(P)[i], zs[0] - zs[1], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(top2_margin(P)[i], zs[0] - zs[1], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(max_softmax(P)[i], pt.max(), rtol=1e-12)
        np.testing.assert_allclose(entropy(P)[i], -(pt * np.log(pt)).sum(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(neg_energy(P)[i], logsumexp(z), rtol=1e-9, atol=1e-9)
        conf, pred = confidence_and_prediction(P[i : i + 1])
        assert pred[0] == y and conf[0] == pt.max()
        assert prediction_margin(P)[i] >= 0


def test_hand_values():
    P = np.array([[0.8, 0.2], [0.25, 0.75]])
    np.testing.assert_allclose(class_margin(P, [0, 1]), [np.log(4), np.log(3)], rtol=1e-12)
    np.testing.assert_allclose(class_margin(P, [1, 0]), [-np.log(4), -np.log(3)], rtol=1e-12)
    # Ties break to the lowest class index and give margin 0.
    conf, pred = confidence_and_prediction([[0.4, 0.4, 0.2]])
    assert pred.tolist() == [0] and conf.tolist() == [0.4]
    assert prediction_margin([[0.4, 0.4, 0.2]]).tolist() == [0.0]
    # A zero probability is floored at 1e-12 before the log.
    np.testing.assert_allclose(class_margin([[1.0, 0.0]], [0]), [np.log(1 / 1e-12)], rtol=1e-12)
    # Three classes: margin against the strongest competitor only.
    np.testing.assert_allclose(class_margin([[0.5, 0.3, 0.2]], [0]), [np.log(0.5 / 0.3)], rtol=1e-12)
    np.testing.assert_allclose(class_margin([[0.5, 0.3, 0.2]], [2]), [np.log(0.2 / 0.5)], rtol=1e-12)


def test_margins_broadcast_over_stacked_states():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=(5, 3))
    y = np.array([0, 1, 2, 3, 1])
    got = class_margin(P, y[:, None])
    for i in range(5):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], class_margin(P[i, j][None], [y[i]])[0], rtol=1e-12)


def test_risk_scores_are_oriented_larger_is_riskier():
    P = np.array([[0.99, 0.01], [0.6, 0.4], [0.5, 0.5]])
    r = risk_scores(P)
    assert list(r.columns) == ["risk_max_softmax", "risk_entropy", "risk_margin", "risk_neg_energy"]
    for col in r.columns:  # rows go from most to least confident
        assert r[col].is_monotonic_increasing, col
    np.testing.assert_allclose(r["risk_max_softmax"], -max_softmax(P))
    np.testing.assert_allclose(r["risk_entropy"], entropy(P))
    np.testing.assert_allclose(r["risk_margin"], -top2_margin(P))
    np.testing.assert_allclose(r["risk_neg_energy"], -neg_energy(P))


@pytest.mark.parametrize(
    "P,match",
    [
        ([[0.5, 0.5, 0.1]], "does not sum to 1"),
        ([[1.2, -0.2]], r"\[0, 1\]"),
        ([[np.nan, 1.0]], "non-finite"),
        ([0.5, 0.5], "2-D"),
        ([[1.0]], "at least 2 class columns"),
    ],
)
def test_check_proba(P, match):
    with pytest.raises(ValueError, match=match):
        check_proba(P)


def test_check_proba_accepts_float32_rounding():
    P = np.array([[0.1, 0.2, 0.7]], dtype=np.float32)
    assert check_proba(P).dtype == np.float64
