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

from core.exceptions import UndefinedMetricWarning
from core.metrics import calibration as _calibration
from core.metrics.calibration import check_probabilities
from core.metrics.ranking import roc_auc_rows

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


def _metrics_iv(y: Any, P: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(y, P)``; return int64 codes and float64 probabilities."""
    return check_probabilities(y, P, label_name="y", proba_name="P")


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
    # sklearn.metrics imports scipy.stats: only when a metric is computed
    from sklearn.metrics import f1_score

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
    return _one_vs_rest(y, P, _roc_auc, "AUROC", need_negatives=True)


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
    from sklearn.metrics import average_precision_score

    y, P = _metrics_iv(y, P)
    return _one_vs_rest(y, P, average_precision_score, "average precision", need_negatives=False)


def _roc_auc(y_true: np.ndarray, y_score: np.ndarray) -> float:
    return float(roc_auc_rows(y_true.astype(np.float64)[None], y_score, np.ones((1, y_score.size)))[0])


def _one_vs_rest(y: np.ndarray, P: np.ndarray, score, label: str, *, need_negatives: bool) -> float:
    n, n_classes = P.shape
    counts = np.bincount(y, minlength=n_classes)
    classes = [1] if n_classes == 2 else list(range(n_classes))
    defined = [c for c in classes if counts[c] > 0 and (counts[c] < n or not need_negatives)]
    skipped = [c for c in classes if c not in defined]
    if not defined:
        warnings.warn(
            f"{label} is undefined: y has {'only one class' if need_negatives else 'no positive rows'}; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return float("nan")
    if skipped:
        warnings.warn(
            f"{label}: classes {skipped} lack positive or negative rows in y and are left out of the macro average.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    return float(np.mean([score(y == c, P[:, c]) for c in defined]))


def nll(y: Any, P: Any) -> float:
    """Mean negative log-likelihood of the true class (larger = worse); SPEC A.2 clipping.

    :func:`core.metrics.calibration.nll` with the messages naming ``y`` and ``P``.
    """
    y, P = _metrics_iv(y, P)
    return _calibration.nll(y, P)


def ece(y: Any, P: Any, *, n_bins: int = 15) -> float:
    """Expected calibration error of the top-class confidence (larger = worse).

    :func:`core.metrics.calibration.ece` with the messages naming ``y`` and ``P``.
    """
    _calibration.check_n_bins(n_bins)
    y, P = _metrics_iv(y, P)
    return _calibration.ece(y, P, n_bins=n_bins)


def brier(y: Any, P: Any) -> float:
    """Multi-class Brier score, in [0, 2] (larger = worse).

    :func:`core.metrics.calibration.brier` with the messages naming ``y`` and ``P``.
    """
    y, P = _metrics_iv(y, P)
    return _calibration.brier(y, P)


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
