"""Temperature scaling and brittleness-aware temperature scaling (BATS) (SPEC A.7).

Both act on the centred pseudo-logits ``z̃`` of SPEC A.2, so they apply to every model family
alike (a probability-only forest gets the same treatment as a network):

- global temperature scaling: ``p = softmax(z̃ / T0)`` with ``T0`` minimising validation NLL;
- BATS: ``p = softmax(z̃ / T(x))`` with ``T(x) = T0 + η·Norm(FDS(x))``, where ``Norm`` is the
  min–max normalisation of FDS fitted on the validation split (clipped to [0, 1] so ``T(x)``
  stays within ``[T0, T0 + η]``) and ``η`` is chosen from a grid by validation NLL.

A positive temperature rescales a logit vector, so neither method ever changes a predicted
label. Test labels are used only to *report* NLL / ECE / Brier — overall and on the top-20 %
most fragile test samples, selected by the validation-fitted normalisation of FDS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.cfc.scores import pseudo_logits
from core.metrics.calibration import brier, check_n_bins, ece, ece_bins, nll
from core.metrics.ranking import review_budget

__all__ = [
    "BATS",
    "CalibrationReport",
    "calibration_report",
    "fit_bats",
    "fit_temperature",
    "reliability_table",
    "softmax_temperature",
]

_ETA_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
_T_BOUNDS = (0.05, 100.0)


def softmax_temperature(logits: ArrayLike, temperature: ArrayLike) -> np.ndarray:
    """Row-wise ``softmax(z / T)``.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
    temperature : float or array-like of shape (n_samples,)
        Positive temperature(s); a per-sample array gives one temperature per row.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> softmax_temperature([[0.0, np.log(3.0)]], 1.0).round(4).tolist()
    [[0.25, 0.75]]
    """
    z = np.asarray(logits, dtype=float)
    T = np.asarray(temperature, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"`logits` must be 2-D (n_samples, n_classes); got shape {z.shape}.")
    if T.ndim > 1 or (T.ndim == 1 and T.shape[0] != z.shape[0]):
        raise ValueError(f"`temperature` must be a scalar or have shape ({z.shape[0]},); got {T.shape}.")
    if not (np.isfinite(T).all() and (T > 0).all()):
        raise ValueError(f"`temperature` must be finite and positive; got minimum {float(np.min(T))!r}.")
    # scipy is imported where it is used: not by the dashboard's first screen
    from scipy.special import log_softmax

    return np.exp(log_softmax(z / (T[:, None] if T.ndim == 1 else T), axis=1))


def _logits_labels_iv(logits: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validation data of a temperature fit: non-empty (n, C) logits and their labels."""
    z = np.asarray(logits, dtype=float)
    if z.ndim != 2 or z.shape[0] == 0:
        raise ValueError(f"`logits` must be a non-empty 2-D array; got shape {z.shape}.")
    return z, _labels_iv(y, z.shape[0], z.shape[1], "y")


def _labels_iv(y: ArrayLike, n: int, n_classes: int, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"`{name}` must have shape ({n},); got {y.shape}.")
    if not np.issubdtype(y.dtype, np.integer) or y.min(initial=0) < 0 or y.max(initial=0) >= n_classes:
        raise ValueError(f"`{name}` must hold integer class indices in 0..{n_classes - 1}.")
    return y


def _nll(z: np.ndarray, y: np.ndarray, T: float | np.ndarray) -> float:
    from scipy.special import log_softmax

    T = np.asarray(T, dtype=float)
    logp = log_softmax(z / (T[:, None] if T.ndim == 1 else T), axis=1)
    return float(-logp[np.arange(y.size), y].mean())


def fit_temperature(logits: ArrayLike, y: ArrayLike, *, bounds: tuple[float, float] = _T_BOUNDS) -> float:
    """Global temperature ``T0`` minimising the NLL of ``softmax(z / T)`` on held-out data.

    The NLL is convex in ``β = 1/T``, so a bounded scalar search over ``β`` finds the global
    optimum inside ``bounds``.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Pseudo-logits of the validation split.
    y : array-like of shape (n_samples,)
        True class indices.
    bounds : (float, float), default=(0.05, 100.0)
        Admissible temperatures; separable validation data pushes ``T0`` to the lower bound.

    Returns
    -------
    float
    """
    z, y = _logits_labels_iv(logits, y)
    lo, hi = (float(b) for b in bounds)
    if not 0.0 < lo < hi < np.inf:
        raise ValueError(f"`bounds` must satisfy 0 < low < high < inf; got {bounds!r}.")
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(
        lambda beta: _nll(z, y, 1.0 / beta), bounds=(1.0 / hi, 1.0 / lo), method="bounded", options={"xatol": 1e-8}
    )
    # Brent's bounded search never evaluates the end points exactly; keep them if they win.
    candidates = [res.x, 1.0 / hi, 1.0 / lo]
    best = min(candidates, key=lambda beta: _nll(z, y, 1.0 / beta))
    return float(1.0 / best)


@dataclass(frozen=True, kw_only=True)
class BATS:
    """A fitted brittleness-aware temperature: ``T(x) = t0 + eta · Norm(FDS(x))``.

    Attributes
    ----------
    t0 : float
        Global temperature fitted on validation NLL.
    eta : float
        Selected fragility slope ``η``.
    fds_min, fds_max : float
        Validation minimum and maximum of FDS (the min–max normalisation).
    eta_grid : tuple of float
        Candidates for ``η``.
    validation_nll : tuple of float
        Validation NLL of each candidate (ties go to the earliest, i.e. smallest, ``η``).
    """

    t0: float
    eta: float
    fds_min: float
    fds_max: float
    eta_grid: tuple[float, ...]
    validation_nll: tuple[float, ...]

    def normalise(self, fds: ArrayLike, *, clip: bool = True) -> np.ndarray:
        """Validation-fitted min–max normalisation of FDS; a constant validation FDS maps to 0."""
        fds = np.asarray(fds, dtype=float)
        span = self.fds_max - self.fds_min
        norm = (fds - self.fds_min) / span if span > 0 else np.zeros_like(fds)
        return np.clip(norm, 0.0, 1.0) if clip else norm

    def temperature(self, fds: ArrayLike) -> np.ndarray:
        """Per-sample temperature ``T(x)`` of shape (n_samples,)."""
        return self.t0 + self.eta * self.normalise(fds)

    def predict_proba(self, logits: ArrayLike, fds: ArrayLike) -> np.ndarray:
        """Calibrated probabilities ``softmax(z̃ / T(x))`` of shape (n_samples, n_classes)."""
        return softmax_temperature(logits, self.temperature(fds))


def _fds_iv(fds: ArrayLike, n: int, name: str) -> np.ndarray:
    fds = np.asarray(fds, dtype=float)
    if fds.shape != (n,):
        raise ValueError(f"`{name}` must have shape ({n},); got {fds.shape}.")
    if not np.isfinite(fds).all():
        raise ValueError(f"`{name}` must be finite.")
    return fds


def fit_bats(
    logits: ArrayLike, y: ArrayLike, fds: ArrayLike, *, eta_grid: Sequence[float] = _ETA_GRID, t0: float | None = None
) -> BATS:
    """Fit BATS on the validation split.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Validation pseudo-logits.
    y : array-like of shape (n_samples,)
        Validation class indices.
    fds : array-like of shape (n_samples,)
        Validation FDS (larger = more fragile).
    eta_grid : sequence of float, default=(0, 0.25, 0.5, 1, 2)
        Non-negative candidates for ``η``; must include 0 so BATS can fall back to plain
        temperature scaling.
    t0 : float, optional
        Global temperature; fitted with :func:`fit_temperature` when omitted.

    Returns
    -------
    BATS
    """
    z, y = _logits_labels_iv(logits, y)
    fds = _fds_iv(fds, z.shape[0], "fds")
    grid = tuple(float(e) for e in eta_grid)
    if not grid or min(grid) < 0 or not all(math.isfinite(e) for e in grid) or 0.0 not in grid:
        raise ValueError(f"`eta_grid` must be finite, non-negative and contain 0; got {tuple(eta_grid)!r}.")
    if t0 is None:
        t0 = fit_temperature(z, y)
    elif not (math.isfinite(t0) and t0 > 0):
        raise ValueError(f"`t0` must be a positive temperature; got {t0!r}.")
    proto = BATS(
        t0=float(t0), eta=0.0, fds_min=float(fds.min()), fds_max=float(fds.max()), eta_grid=grid, validation_nll=()
    )
    norm = proto.normalise(fds)
    nll = tuple(_nll(z, y, t0 + eta * norm) for eta in grid)
    return BATS(
        t0=proto.t0,
        eta=grid[int(np.argmin(nll))],
        fds_min=proto.fds_min,
        fds_max=proto.fds_max,
        eta_grid=grid,
        validation_nll=nll,
    )


#: Columns of :func:`reliability_table`.
RELIABILITY_COLUMNS = ("bin", "lower", "upper", "count", "confidence", "accuracy")


def reliability_table(y: ArrayLike, proba: ArrayLike, *, n_bins: int = 15) -> pd.DataFrame:
    """Reliability-diagram data: accuracy against mean confidence per confidence bin.

    The bins are those of :func:`core.metrics.calibration.ece`: ``n_bins`` equal-width bins
    ``(k/B, (k+1)/B]`` of ``max_c p_c`` (the first also takes 0), so
    ``Σ_b count_b·|accuracy_b − confidence_b| / n`` is exactly the ECE.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        True class indices.
    proba : array-like of shape (n_samples, n_classes)
    n_bins : int, default=15

    Returns
    -------
    DataFrame
        One row per bin with :data:`RELIABILITY_COLUMNS`; empty bins have ``count`` 0 and NaN
        ``confidence`` / ``accuracy``.

    Examples
    --------
    >>> reliability_table([0, 1, 1], [[0.9, 0.1], [0.9, 0.1], [0.3, 0.7]], n_bins=2)[["count", "accuracy"]].values.tolist()
    [[0.0, nan], [3.0, 0.6666666666666666]]
    """
    n_bins = check_n_bins(n_bins)
    P = np.asarray(proba, dtype=float)
    if P.ndim != 2 or P.shape[0] == 0:
        raise ValueError(f"`proba` must be a non-empty 2-D array; got shape {P.shape}.")
    y = _labels_iv(y, P.shape[0], P.shape[1], "y")
    confidence = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    b = ece_bins(confidence, n_bins)
    count = np.bincount(b, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(b, weights=confidence, minlength=n_bins) / count
        acc = np.bincount(b, weights=correct, minlength=n_bins) / count
    return pd.DataFrame(
        {
            "bin": np.arange(n_bins),
            "lower": edges[:-1],
            "upper": edges[1:],
            "count": count,
            "confidence": mean_conf,
            "accuracy": acc,
        }
    )


@dataclass(frozen=True, kw_only=True)
class CalibrationReport:
    """Calibration of one model on the test split (SPEC A.7).

    Attributes
    ----------
    bats : BATS
        Fitted BATS (its ``t0`` is the global temperature).
    metrics : pandas.DataFrame
        One row per ``(method, subset)``: ``method`` ∈ {``uncalibrated``, ``temperature``,
        ``bats``}, ``subset`` ∈ {``all``, ``fragile``}, columns ``n, nll, ece, brier``
        (lower is better; ECE with ``n_bins`` equal-width bins).
    reliability : pandas.DataFrame
        Reliability-diagram data: ``panel`` (``all`` / ``fragile``), ``method`` and the
        columns of :func:`reliability_table`.
    fragile : ndarray of shape (n_test,), bool
        The ``fragile_share`` most fragile test samples (top 20 % by default), selected by the
        validation-normalised FDS; no test label is used.
    fragile_share : float
    proba : dict of str -> ndarray of shape (n_test, n_classes)
        Test probabilities of each method.
    """

    bats: BATS
    metrics: pd.DataFrame
    reliability: pd.DataFrame
    fragile: np.ndarray
    fragile_share: float
    proba: dict[str, np.ndarray]


def calibration_report(
    proba_val: ArrayLike,
    y_val: ArrayLike,
    fds_val: ArrayLike,
    proba_test: ArrayLike,
    y_test: ArrayLike,
    fds_test: ArrayLike,
    *,
    eta_grid: Sequence[float] = _ETA_GRID,
    n_bins: int = 15,
    fragile_share: float = 0.2,
) -> CalibrationReport:
    """Fit temperature scaling and BATS on validation, report them on test.

    Parameters
    ----------
    proba_val : array-like of shape (n_val, n_classes)
        Model probabilities on the validation split.
    y_val : array-like of shape (n_val,)
        Validation class indices.
    fds_val : array-like of shape (n_val,)
        Validation FDS (larger = more fragile).
    proba_test, y_test, fds_test
        The same on the test split; ``y_test`` is used only to report metrics.
    eta_grid : sequence of float, default=(0, 0.25, 0.5, 1, 2)
    n_bins : int, default=15
        Equal-width confidence bins of ECE and the reliability diagram.
    fragile_share : float, default=0.2
        Share of the test split forming the fragile subset.

    Returns
    -------
    CalibrationReport
    """
    P_val = np.asarray(proba_val, dtype=float)
    P_test = np.asarray(proba_test, dtype=float)
    if P_val.ndim != 2 or P_test.ndim != 2 or P_val.shape[1] != P_test.shape[1]:
        raise ValueError(
            f"`proba_val` and `proba_test` must be 2-D with the same number of classes; got {P_val.shape} and {P_test.shape}."
        )
    n_test, n_classes = P_test.shape
    y_test = _labels_iv(y_test, n_test, n_classes, "y_test")
    if not 0.0 < fragile_share <= 1.0:
        raise ValueError(f"`fragile_share` must be a fraction in (0, 1]; got {fragile_share!r}.")
    fds_test = _fds_iv(fds_test, n_test, "fds_test")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"`n_bins` must be a positive int; got {n_bins!r}.")
    z_val, z_test = pseudo_logits(P_val), pseudo_logits(P_test)
    bats = fit_bats(z_val, y_val, fds_val, eta_grid=eta_grid)

    # Unclipped normalisation is strictly monotone in FDS, so the ranking never ties artificially.
    k = review_budget(fragile_share, n_test)
    rank = np.argsort(-bats.normalise(fds_test, clip=False), kind="stable")
    fragile = np.zeros(n_test, dtype=bool)
    fragile[rank[:k]] = True

    proba = {
        "uncalibrated": softmax_temperature(z_test, 1.0),
        "temperature": softmax_temperature(z_test, bats.t0),
        "bats": bats.predict_proba(z_test, fds_test),
    }
    rows, bins = [], []
    for method, P in proba.items():
        for subset, mask in (("all", np.ones(n_test, dtype=bool)), ("fragile", fragile)):
            yy, PP = y_test[mask], P[mask]
            rows.append(
                {
                    "method": method,
                    "subset": subset,
                    "n": int(mask.sum()),
                    "nll": nll(yy, PP),
                    "ece": ece(yy, PP, n_bins=n_bins),
                    "brier": brier(yy, PP),
                }
            )
            bins.append(reliability_table(yy, PP, n_bins=n_bins).assign(panel=subset, method=method))
    reliability = pd.concat(bins, ignore_index=True)
    reliability = reliability[["panel", "method", *RELIABILITY_COLUMNS]]
    return CalibrationReport(
        bats=bats,
        metrics=pd.DataFrame(rows),
        reliability=reliability,
        fragile=fragile,
        fragile_share=float(fragile_share),
        proba=proba,
    )
