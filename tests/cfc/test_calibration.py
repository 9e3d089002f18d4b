"""Temperature scaling, BATS and calibration reports (SPEC A.7)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import log_softmax, softmax

from core.cfc.calibration import (
    BATS,
    calibration_report,
    fit_bats,
    fit_temperature,
    reliability_table,
    softmax_temperature,
)
from core.cfc.scores import clip_renormalize, pseudo_logits
from core.tabular.metrics import brier, ece, nll


def _nll(z, y, T):
    T = np.asarray(T, dtype=float)
    return -log_softmax(z / (T[:, None] if T.ndim else T), axis=1)[np.arange(len(y)), y].mean()


def _synthetic(n, T_true, seed, C=3):
    """Labels drawn from softmax(z / T_true): the NLL-optimal temperature is close to T_true."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=3.0, size=(n, C))
    p = softmax(z / T_true, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return z, y


# ------------------------------------------------------------------------------------------
# softmax with temperature
# ------------------------------------------------------------------------------------------
def test_unit_temperature_gives_back_clipped_probabilities():
    P = np.array([[0.7, 0.2, 0.1], [0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(softmax_temperature(pseudo_logits(P), 1.0), clip_renormalize(P), rtol=1e-12, atol=1e-15)


def test_per_sample_temperature_by_hand():
    z = np.array([[0.0, np.log(3.0)], [0.0, np.log(3.0)]])
    out = softmax_temperature(z, np.array([1.0, 2.0]))
    # T = 2 halves the log-odds: odds sqrt(3).
    np.testing.assert_allclose(out[:, 1], [0.75, np.sqrt(3) / (1 + np.sqrt(3))])


@pytest.mark.parametrize(
    ("T", "match"),
    [(0.0, "positive"), (-1.0, "positive"), (np.array([1.0, np.nan]), "finite"), (np.ones(3), r"shape \(2,\)")],
    ids=["zero", "negative", "nan", "shape"],
)
def test_bad_temperature(T, match):
    with pytest.raises(ValueError, match=match):
        softmax_temperature(np.zeros((2, 2)), T)


# ------------------------------------------------------------------------------------------
# Global temperature
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("T_true", [0.5, 1.0, 2.5])
def test_fit_temperature_beats_a_fine_grid(T_true):
    z, y = _synthetic(600, T_true, seed=int(T_true * 10))
    T0 = fit_temperature(z, y)
    grid = np.exp(np.linspace(np.log(0.05), np.log(100), 4001))
    best_grid = min(_nll(z, y, T) for T in grid)
    assert _nll(z, y, T0) <= best_grid + 1e-9
    assert T0 == pytest.approx(T_true, rel=0.2)


def test_separable_data_hits_the_lower_bound():
    z = np.array([[2.0, -2.0], [-2.0, 2.0]])
    assert fit_temperature(z, np.array([0, 1]), bounds=(0.1, 10.0)) == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y": np.array([0, 3])}, "class indices in 0..1"),
        ({"y": np.array([0])}, r"shape \(2,\)"),
        ({"bounds": (2.0, 1.0)}, "0 < low < high"),
    ],
    ids=["label-range", "label-shape", "bounds"],
)
def test_fit_temperature_bad_input(kwargs, match):
    args = {"logits": np.zeros((2, 2)), "y": np.array([0, 1])} | kwargs
    with pytest.raises(ValueError, match=match):
        fit_temperature(**args)


# ------------------------------------------------------------------------------------------
# BATS
# ------------------------------------------------------------------------------------------
def test_bats_selects_eta_by_validation_nll():
    z, y = _synthetic(500, 1.0, seed=3)
    # Fragile samples are those whose labels are noisier: a larger temperature suits them.
    rng = np.random.default_rng(4)
    fds = rng.random(500)
    noisy = fds > 0.7
    y = np.where(noisy & (rng.random(500) < 0.6), rng.integers(0, 3, 500), y)
    model = fit_bats(z, y, fds)
    T0 = fit_temperature(z, y)
    norm = (fds - fds.min()) / (fds.max() - fds.min())
    expected = [_nll(z, y, T0 + eta * norm) for eta in (0.0, 0.25, 0.5, 1.0, 2.0)]
    np.testing.assert_allclose(model.validation_nll, expected, rtol=1e-12)
    assert model.eta == (0.0, 0.25, 0.5, 1.0, 2.0)[int(np.argmin(expected))]
    assert model.eta > 0  # the noisy fragile samples need extra temperature
    assert model.t0 == T0


def test_constant_fds_falls_back_to_temperature_scaling():
    z, y = _synthetic(200, 1.5, seed=1)
    model = fit_bats(z, y, np.full(200, 0.3))
    assert model.eta == 0.0
    np.testing.assert_array_equal(model.temperature([0.0, 0.3, 1.0]), np.full(3, model.t0))


def test_normalisation_is_validation_fitted_and_clipped():
    model = BATS(t0=1.5, eta=2.0, fds_min=0.2, fds_max=0.6, eta_grid=(0.0, 2.0), validation_nll=(1.0, 0.9))
    np.testing.assert_allclose(model.normalise([0.1, 0.2, 0.4, 0.6, 0.9]), [0.0, 0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(model.normalise([0.1, 0.9], clip=False), [-0.25, 1.75])
    np.testing.assert_allclose(model.temperature([0.1, 0.4, 0.9]), [1.5, 2.5, 3.5])


# Logits on a 1/64 grid: exact ties and clearly ordered values. Sub-ulp gaps (1e-26) vanish in
# any softmax, calibrated or not, and say nothing about BATS.
@given(
    arrays(np.float64, (12, 3), elements=st.integers(-1920, 1920).map(lambda v: v / 64)),
    arrays(np.float64, (12,), elements=st.floats(-1, 2)),
    st.floats(0.05, 10),
    st.sampled_from([0.0, 0.25, 1.0, 2.0]),
    st.floats(0, 0.5),
    st.floats(0.5, 1),
)
def test_bats_never_changes_the_predicted_label(z, fds, t0, eta, lo, hi):
    model = BATS(t0=t0, eta=eta, fds_min=lo, fds_max=hi, eta_grid=(0.0, eta), validation_nll=(0.0, 0.0))
    P = model.predict_proba(z, fds)
    # Ties in z stay ties after dividing by a positive temperature, so argmax (lowest index) agrees.
    np.testing.assert_array_equal(P.argmax(axis=1), z.argmax(axis=1))
    assert (model.temperature(fds) >= t0).all() and (model.temperature(fds) <= t0 + eta + 1e-12).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eta_grid": (0.25, 0.5)}, "contain 0"),
        ({"eta_grid": (0.0, -1.0)}, "non-negative"),
        ({"fds": np.array([0.1, np.nan])}, "finite"),
        ({"t0": -1.0}, "positive temperature"),
    ],
    ids=["no-zero", "negative", "nan-fds", "t0"],
)
def test_fit_bats_bad_input(kwargs, match):
    args = {"logits": np.zeros((2, 2)), "y": np.array([0, 1]), "fds": np.array([0.1, 0.2])} | kwargs
    with pytest.raises(ValueError, match=match):
        fit_bats(**args)


# ------------------------------------------------------------------------------------------
# Reliability table and report
# ------------------------------------------------------------------------------------------
def test_reliability_table_reproduces_ece():
    rng = np.random.default_rng(0)
    P = softmax(rng.normal(scale=2, size=(300, 3)), axis=1)
    y = rng.integers(0, 3, 300)
    t = reliability_table(y, P, n_bins=15)
    assert t["count"].sum() == 300
    filled = t[t["count"] > 0]
    gap = (filled["count"] * (filled["accuracy"] - filled["confidence"]).abs()).sum() / 300
    assert gap == pytest.approx(ece(y, P, n_bins=15), abs=1e-12)


def _report_inputs(seed=0, n_val=300, n_test=250):
    rng = np.random.default_rng(seed)
    zv, yv = _synthetic(n_val, 0.7, seed)
    zt, yt = _synthetic(n_test, 0.7, seed + 100)
    return softmax(zv, axis=1), yv, rng.random(n_val), softmax(zt, axis=1), yt, rng.random(n_test)


def test_report_matches_direct_computation():
    Pv, yv, fv, Pt, yt, ft = _report_inputs()
    rep = calibration_report(Pv, yv, fv, Pt, yt, ft)
    assert rep.fragile.sum() == 50
    # Top 20 % by test FDS (the normalisation is monotone).
    np.testing.assert_array_equal(np.flatnonzero(rep.fragile), np.sort(np.argsort(-ft)[:50]))
    bats = fit_bats(pseudo_logits(Pv), yv, fv)
    assert rep.bats == bats
    expected = bats.predict_proba(pseudo_logits(Pt), ft)
    np.testing.assert_allclose(rep.proba["bats"], expected)
    row = rep.metrics.set_index(["method", "subset"]).loc[("bats", "fragile")]
    assert row["nll"] == pytest.approx(nll(yt[rep.fragile], expected[rep.fragile]))
    assert row["ece"] == pytest.approx(ece(yt[rep.fragile], expected[rep.fragile]))
    assert row["brier"] == pytest.approx(brier(yt[rep.fragile], expected[rep.fragile]))
    ts = rep.metrics.set_index(["method", "subset"]).loc[("temperature", "all")]
    assert ts["nll"] == pytest.approx(nll(yt, softmax(pseudo_logits(Pt) / bats.t0, axis=1)))
    assert set(rep.reliability["panel"]) == {"all", "fragile"}
    assert len(rep.reliability) == 3 * 2 * 15
    for P in rep.proba.values():
        np.testing.assert_array_equal(P.argmax(axis=1), Pt.argmax(axis=1))


def test_report_uses_no_test_label_for_fitting_or_selection():
    Pv, yv, fv, Pt, yt, ft = _report_inputs(seed=2)
    a = calibration_report(Pv, yv, fv, Pt, yt, ft)
    b = calibration_report(Pv, yv, fv, Pt, np.roll(yt, 7), ft)
    assert a.bats == b.bats
    np.testing.assert_array_equal(a.fragile, b.fragile)
    for method in a.proba:
        np.testing.assert_array_equal(a.proba[method], b.proba[method])


def test_report_bad_input():
    Pv, yv, fv, Pt, yt, ft = _report_inputs()
    with pytest.raises(ValueError, match="same number of classes"):
        calibration_report(Pv, yv, fv, Pt[:, :2], yt, ft)
    with pytest.raises(ValueError, match="fragile_share"):
        calibration_report(Pv, yv, fv, Pt, yt, ft, fragile_share=0.0)
    with pytest.raises(ValueError, match=r"`fds_test` must have shape \(250,\)"):
        calibration_report(Pv, yv, fv, Pt, yt, ft[:5])
