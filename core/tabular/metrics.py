"""Nominal (clean-data) metrics of a probabilistic classifier.

Pure functions over ``y`` (integer class codes ``0 .. C-1``) and ``P`` (an ``(n, C)`` array of
probabilities whose column ``c`` is class ``c``). They are shown beside the fragility metrics
(SPEC A.7), because the nominal winner is often not the most stable model.

Orientation: accuracy, macro-F1, AUROC and AP are larger = better; NLL, ECE and Brier are
losses, larger = worse. Predictions are ``argmax_c P[:, c]`` with ties to the lowest index.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

__all__ = [
    "NOMINAL_METRICS",
    "accuracy",
    "average_precision",
    "auroc",
    "brier",
    "ece",
    "macro_f1",
    "nll",
    "nominal_metrics",
]

#: Keys of :func:`nominal_metrics`, in display order.
NOMINAL_METRICS = ("accuracy", "macro_f1", "auroc", "average_precision", "nll", "ece", "brier")

_ROW_SUM_TOL = 1e-5  # float32 outputs (XGBoost) sum to 1 only to about 1e-7 per row
_CLIP = 1e-12  # SPEC A.2: the same clipping as the pseudo-logits


def _metrics_iv(y: Any, P: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(y, P)``; return int64 codes and float64 probabilities."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] < 2 or P.shape[0] == 0:
        raise ValueError(f"`P` must have shape (n_samples >= 1, n_classes >= 2); got shape {P.shape}.")
    if not np.isfinite(P).all():
        row = int(np.flatnonzero(~np.isfinite(P).all(axis=1))[0])
        raise ValueError(f"`P` must be finite; row {row} is {P[row].tolist()}.")
    outside = (P < 0) | (P > 1)
    if outside.any():
        row = int(np.flatnonzero(outside.any(axis=1))[0])
        raise ValueError(f"`P` must hold probabilities in [0, 1]; row {row} is {P[row].tolist()}.")
    off = np.abs(P.sum(axis=1) - 1) > _ROW_SUM_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(f"Rows of `P` must sum to 1; row {row} sums to {P[row].sum():.8g}.")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(P):
        raise ValueError(f"`y` must have shape ({len(P)},) to match `P`; got shape {y.shape}.")
    if y.dtype.kind not in "iub" and not (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
        raise ValueError(f"`y` must hold integer class codes 0..{P.shape[1] - 1}; got dtype {y.dtype}.")
    bad = (y < 0) | (y >= P.shape[1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`y` must hold class codes 0..{P.shape[1] - 1} (columns of `P`); y[{i}] = {y[i].item()!r}.")
    return y.astype(np.int64), P


def accuracy(y: Any, P: Any) -> float:
    """Share of rows whose most probable class is the true class (larger = better).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class codes ``0 .. C-1``.
    P : array-like of shape (n, C)
        Probabilities; rows sum to 1.

    Examples
    --------
    >>> accuracy([0, 1, 1], [[0.8, 0.2], [0.5, 0.5], [0.3, 0.7]])
    0.6666666666666666
    """
    y, P = _metrics_iv(y, P)
    return float(np.mean(P.argmax(axis=1) == y))


def macro_f1(y: Any, P: Any) -> float:
    """Unweighted mean of per-class F1 of the argmax predictions (larger = better).

    The mean runs over the classes that occur in ``y`` or among the predictions
    (scikit-learn's convention); a class that occurs in ``y`` but is never predicted has
    F1 = 0.

    Examples
    --------
    >>> macro_f1([0, 0, 1, 1], [[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.3, 0.7]])
    0.7333333333333334
    """
    y, P = _metrics_iv(y, P)
    return float(f1_score(y, P.argmax(axis=1), average="macro", zero_division=0.0))


def auroc(y: Any, P: Any) -> float:
    """Area under the ROC curve (larger = better).

    Binary (``C == 2``): the AUROC of ``P[:, 1]`` for class 1 (ties count one half).
    Multi-class: one-vs-rest macro average of the AUROC of ``P[:, c]`` for class ``c``, over
    the classes that have both positive and negative rows in ``y``.

    Returns
    -------
    float
        NaN, with a warning, when no class has both positive and negative rows; classes
        left out of a multi-class average are named in a warning.

    Examples
    --------
    >>> auroc([0, 0, 1, 1], [[0.9, 0.1], [0.6, 0.4], [0.6, 0.4], [0.2, 0.8]])
    0.875
    """
    y, P = _metrics_iv(y, P)
    return _one_vs_rest(y, P, roc_auc_score, "AUROC", need_negatives=True)


def average_precision(y: Any, P: Any) -> float:
    """Average precision, ``sum_k (R_k - R_{k-1}) * Prec_k`` over score thresholds (larger = better).

    Binary: AP of ``P[:, 1]`` for class 1. Multi-class: one-vs-rest macro average over the
    classes present in ``y``. Tied scores form one threshold (scikit-learn's definition).

    Returns
    -------
    float
        NaN, with a warning, when the positive class never occurs.

    Examples
    --------
    >>> average_precision([0, 1, 0, 1], [[0.9, 0.1], [0.65, 0.35], [0.6, 0.4], [0.2, 0.8]])
    0.8333333333333333
    """
    y, P = _metrics_iv(y, P)
    return _one_vs_rest(y, P, average_precision_score, "average precision", need_negatives=False)


def _one_vs_rest(y: np.ndarray, P: np.ndarray, score, label: str, *, need_negatives: bool) -> float:
    n, n_classes = P.shape
    counts = np.bincount(y, minlength=n_classes)
    classes = [1] if n_classes == 2 else list(range(n_classes))
    defined = [c for c in classes if counts[c] > 0 and (counts[c] < n or not need_negatives)]
    skipped = [c for c in classes if c not in defined]
    if not defined:
        warnings.warn(
            f"{label} is undefined: y has {'only one class' if need_negatives else 'no positive rows'}; returning NaN.",
            UserWarning,
            stacklevel=3,
        )
        return float("nan")
    if skipped:
        warnings.warn(
            f"{label}: classes {skipped} lack positive or negative rows in y and are left out of the macro average.",
            UserWarning,
            stacklevel=3,
        )
    return float(np.mean([score(y == c, P[:, c]) for c in defined]))


def nll(y: Any, P: Any) -> float:
    """Mean negative log-likelihood of the true class (larger = worse).

    Probabilities are clipped as in SPEC A.2: ``p~ = max(p, 1e-12) / sum_j max(p_j, 1e-12)``,
    so a confidently wrong row costs at most about ``27.6``.

    Examples
    --------
    >>> round(nll([0, 1], [[0.5, 0.5], [0.2, 0.8]]), 6)
    0.458145
    """
    y, P = _metrics_iv(y, P)
    clipped = np.maximum(P, _CLIP)
    p_true = clipped[np.arange(len(y)), y] / clipped.sum(axis=1)
    return float(-np.mean(np.log(p_true)))


def ece(y: Any, P: Any, *, n_bins: int = 15) -> float:
    """Expected calibration error of the top-class confidence (larger = worse).

    Rows fall into ``n_bins`` equal-width bins ``(k/B, (k+1)/B]`` of the confidence
    ``max_c P[:, c]``; ``ECE = sum_b (n_b / n) * |accuracy_b - mean confidence_b|``.

    Parameters
    ----------
    y, P : see :func:`accuracy`
    n_bins : int, default=15

    Examples
    --------
    >>> round(ece([0, 1, 1], [[0.9, 0.1], [0.9, 0.1], [0.3, 0.7]], n_bins=10), 6)
    0.366667
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"`n_bins` must be a positive int; got {n_bins!r}.")
    y, P = _metrics_iv(y, P)
    confidence = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # side="left" on the inner edges puts a confidence equal to an edge in the bin it closes.
    bins = np.searchsorted(edges[1:-1], confidence, side="left")
    gap = np.bincount(bins, weights=correct, minlength=n_bins) - np.bincount(bins, weights=confidence, minlength=n_bins)
    return float(np.abs(gap).sum() / len(y))


def brier(y: Any, P: Any) -> float:
    """Multi-class Brier score: mean over rows of ``sum_c (P[:, c] - 1[y = c])^2`` (larger = worse).

    In [0, 2]. For a binary problem this is twice the common one-column Brier score
    ``mean((P[:, 1] - y)^2)``.

    Examples
    --------
    >>> round(brier([0, 1], [[0.8, 0.2], [0.4, 0.6]]), 6)
    0.2
    """
    y, P = _metrics_iv(y, P)
    onehot = np.zeros_like(P)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


def nominal_metrics(y: Any, P: Any, *, n_bins: int = 15) -> dict[str, float]:
    """All nominal metrics at once.

    Parameters
    ----------
    y : array-like of shape (n,)
        Class codes ``0 .. C-1``.
    P : array-like of shape (n, C)
    n_bins : int, default=15
        ECE bins.

    Returns
    -------
    dict
        Keys :data:`NOMINAL_METRICS` in that order: ``accuracy``, ``macro_f1``, ``auroc``,
        ``average_precision`` (larger = better), ``nll``, ``ece``, ``brier`` (larger = worse).
        Undefined AUROC / AP are NaN (with a warning).
    """
    y, P = _metrics_iv(y, P)
    return {
        "accuracy": accuracy(y, P),
        "macro_f1": macro_f1(y, P),
        "auroc": auroc(y, P),
        "average_precision": average_precision(y, P),
        "nll": nll(y, P),
        "ece": ece(y, P, n_bins=n_bins),
        "brier": brier(y, P),
    }
