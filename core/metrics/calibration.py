"""Probabilistic (calibration) metrics of a classifier: the one home of NLL, ECE and Brier (SPEC A.7).

Every function takes ``(y_true, y_prob, *, ...)`` in scikit-learn's order: ``y_true`` integer
class codes ``0 .. C-1`` of shape ``(n,)``, ``y_prob`` an ``(n, C)`` array of probabilities
whose column ``c`` is class ``c`` (rows sum to 1). All three are losses: larger = worse.
The top-class confidence is ``max_c y_prob[:, c]``, the prediction ``argmax`` with ties to
the lowest index.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["CLIP", "brier", "check_n_bins", "check_probabilities", "ece", "ece_bins", "nll"]

ROW_SUM_TOL = 1e-5  # float32 outputs (XGBoost) sum to 1 only to about 1e-7 per row
CLIP = 1e-12  # SPEC A.2: the same clipping as the pseudo-logits


def check_probabilities(
    y_true: ArrayLike, y_prob: ArrayLike, *, label_name: str = "y_true", proba_name: str = "y_prob"
) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(y_true, y_prob)``; return int64 codes and float64 probabilities.

    ``label_name`` / ``proba_name`` are the caller's parameter names, echoed in the messages.

    Examples
    --------
    >>> check_probabilities([1], [[0.25, 0.75]])[0].tolist()
    [1]
    """
    y_name, p_name = label_name, proba_name
    P = np.asarray(y_prob, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] < 2 or P.shape[0] == 0:
        raise ValueError(f"`{p_name}` must have shape (n_samples >= 1, n_classes >= 2); got shape {P.shape}.")
    if not np.isfinite(P).all():
        row = int(np.flatnonzero(~np.isfinite(P).all(axis=1))[0])
        raise ValueError(f"`{p_name}` must be finite; row {row} is {P[row].tolist()}.")
    outside = (P < 0) | (P > 1)
    if outside.any():
        row = int(np.flatnonzero(outside.any(axis=1))[0])
        raise ValueError(f"`{p_name}` must hold probabilities in [0, 1]; row {row} is {P[row].tolist()}.")
    off = np.abs(P.sum(axis=1) - 1) > ROW_SUM_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(f"Rows of `{p_name}` must sum to 1; row {row} sums to {P[row].sum():.8g}.")
    y = np.asarray(y_true)
    if y.ndim != 1 or len(y) != len(P):
        raise ValueError(f"`{y_name}` must have shape ({len(P)},) to match `{p_name}`; got shape {y.shape}.")
    if y.dtype.kind not in "iub" and not (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
        raise ValueError(f"`{y_name}` must hold integer class codes 0..{P.shape[1] - 1}; got dtype {y.dtype}.")
    bad = (y < 0) | (y >= P.shape[1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`{y_name}` must hold class codes 0..{P.shape[1] - 1} (columns of `{p_name}`); "
            f"{y_name}[{i}] = {y[i].item()!r}."
        )
    return y.astype(np.int64), P


def check_n_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"`n_bins` must be a positive int; got {n_bins!r}.")
    return int(n_bins)


def nll(y_true: ArrayLike, y_prob: ArrayLike) -> float:
    """Mean negative log-likelihood of the true class (larger = worse).

    Probabilities are clipped as in SPEC A.2: ``p~ = max(p, 1e-12) / sum_j max(p_j, 1e-12)``,
    so a confidently wrong row costs at most about ``27.6``.

    Examples
    --------
    >>> round(nll([0, 1], [[0.5, 0.5], [0.2, 0.8]]), 6)
    0.458145
    """
    y, P = check_probabilities(y_true, y_prob)
    clipped = np.maximum(P, CLIP)
    p_true = clipped[np.arange(len(y)), y] / clipped.sum(axis=1)
    return float(-np.mean(np.log(p_true)))


def ece_bins(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index of every confidence: ``n_bins`` equal-width bins ``(k/B, (k+1)/B]`` (0 in the first).

    Examples
    --------
    >>> ece_bins(np.array([0.0, 0.1, 0.1000001, 1.0]), 10).tolist()
    [0, 0, 1, 9]
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # side="left" on the inner edges puts a confidence equal to an edge in the bin it closes.
    return np.searchsorted(edges[1:-1], confidence, side="left")


def ece(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15) -> float:
    """Expected calibration error of the top-class confidence (larger = worse).

    Rows fall into the bins of :func:`ece_bins`;
    ``ECE = sum_b (n_b / n) * |accuracy_b - mean confidence_b|``.

    Examples
    --------
    >>> round(ece([0, 1, 1], [[0.9, 0.1], [0.9, 0.1], [0.3, 0.7]], n_bins=10), 6)
    0.366667
    """
    n_bins = check_n_bins(n_bins)
    y, P = check_probabilities(y_true, y_prob)
    confidence = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(np.float64)
    bins = ece_bins(confidence, n_bins)
    gap = np.bincount(bins, weights=correct, minlength=n_bins) - np.bincount(bins, weights=confidence, minlength=n_bins)
    return float(np.abs(gap).sum() / len(y))


def brier(y_true: ArrayLike, y_prob: ArrayLike) -> float:
    """Multi-class Brier score: mean over rows of ``sum_c (y_prob[:, c] - 1[y = c])^2`` (larger = worse).

    In [0, 2]. For a binary problem this is twice the common one-column Brier score
    ``mean((y_prob[:, 1] - y)^2)``.

    Examples
    --------
    >>> round(brier([0, 1], [[0.8, 0.2], [0.4, 0.6]]), 6)
    0.2
    """
    y, P = check_probabilities(y_true, y_prob)
    onehot = np.zeros_like(P)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))
