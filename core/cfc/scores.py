"""Scores from probability vectors, identical for every model family (SPEC A.2).

Every model is seen only through ``predict_proba``. Probabilities are clipped and renormalised,
``p̃_c = max(p_c, 1e-12) / Σ_j max(p_j, 1e-12)``, and mapped to centred pseudo-logits
``z̃_c = log p̃_c − (1/C) Σ_j log p̃_j``; native logits are never used.

Orientation: the *confidence* scores (:func:`max_softmax`, :func:`top2_margin`,
:func:`neg_energy`) are larger = more confident, :func:`entropy` is larger = less confident;
:func:`risk_scores` turns all four into **risk scores, larger = riskier**.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = [
    "PROBA_FLOOR",
    "check_proba",
    "class_margin",
    "clip_renormalize",
    "confidence_and_prediction",
    "entropy",
    "max_softmax",
    "neg_energy",
    "prediction_margin",
    "predicted_class",
    "pseudo_logits",
    "risk_scores",
    "top2_margin",
]

PROBA_FLOOR = 1e-12
# Row sums of float32 model outputs are off by ~C·6e-8; anything beyond this is not a probability.
_SUM_TOL = 1e-4


def check_proba(
    proba: ArrayLike, n_rows: int | None = None, *, n_classes: int | None = None, what: str = "`predict_proba`"
) -> np.ndarray:
    """Validate a probability matrix and return it as float64.

    Parameters
    ----------
    proba : array-like of shape (n_rows, n_classes)
        Rows must be finite, non-negative, at most 1, and sum to 1 within ``1e-4``.
    n_rows : int, optional
        Expected number of rows.
    n_classes : int, optional
        Expected number of columns (``>= 2`` in any case).
    what : str
        Name of the producer, used in error messages.

    Returns
    -------
    ndarray of shape (n_rows, n_classes), float64

    Raises
    ------
    ValueError
        Naming the first offending row and value.
    """
    try:
        P = np.asarray(proba, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must return a numeric array of probabilities; got {type(proba).__name__}.") from exc
    if P.ndim != 2:
        raise ValueError(f"{what} must return a 2-D array (n_rows, n_classes); got shape {P.shape}.")
    if n_rows is not None and P.shape[0] != n_rows:
        raise ValueError(f"{what} returned {P.shape[0]} rows for {n_rows} input rows.")
    if P.shape[1] < 2:
        raise ValueError(f"{what} must return at least 2 class columns; got shape {P.shape}.")
    if n_classes is not None and P.shape[1] != n_classes:
        raise ValueError(f"{what} returned {P.shape[1]} class columns; earlier calls returned {n_classes}.")
    finite = np.isfinite(P)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(f"{what} returned a non-finite probability {float(P[r, c])!r} at row {r}, class {c}.")
    bad = (P < 0) | (P > 1 + _SUM_TOL)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(f"{what} returned {float(P[r, c])!r} at row {r}, class {c}; probabilities must lie in [0, 1].")
    sums = P.sum(axis=1)
    off = np.abs(sums - 1.0) > _SUM_TOL
    if off.any():
        r = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{what} returned a row that does not sum to 1 (row {r} sums to {float(sums[r])!r}, tolerance {_SUM_TOL}); "
            "pass class probabilities, not scores or logits."
        )
    return P


def clip_renormalize(proba: ArrayLike) -> np.ndarray:
    """``p̃``: probabilities floored at ``1e-12`` and renormalised along the last axis.

    Parameters
    ----------
    proba : array-like of shape (..., n_classes)

    Returns
    -------
    ndarray of shape (..., n_classes)
    """
    P = np.maximum(np.asarray(proba, dtype=np.float64), PROBA_FLOOR)
    return P / P.sum(axis=-1, keepdims=True)


def pseudo_logits(proba: ArrayLike) -> np.ndarray:
    """Centred pseudo-logits ``z̃_c = log p̃_c − mean_j log p̃_j`` along the last axis.

    Examples
    --------
    >>> pseudo_logits([[0.8, 0.2]]).round(6).tolist()
    [[0.693147, -0.693147]]
    """
    L = np.log(clip_renormalize(proba))
    return L - L.mean(axis=-1, keepdims=True)


def predicted_class(proba: ArrayLike) -> np.ndarray:
    """``ŷ = argmax_c p_c`` along the last axis; ties go to the lowest class index."""
    return np.argmax(np.asarray(proba, dtype=np.float64), axis=-1)


def confidence_and_prediction(proba: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Confidence ``p̂ = max_c p̃_c`` and prediction ``ŷ`` (lowest index on ties).

    Returns
    -------
    confidence : ndarray of shape (...,), float
    prediction : ndarray of shape (...,), int
    """
    P = np.asarray(proba, dtype=np.float64)
    return clip_renormalize(P).max(axis=-1), predicted_class(P)


def class_margin(proba: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Margin of class ``y``: ``m_y = z̃_y − max_{c≠y} z̃_c`` (SPEC A.2).

    Negative once another class beats ``y``. Used with ``y`` = the *original* prediction for
    every stressed input.

    Parameters
    ----------
    proba : array-like of shape (..., n_classes)
    y : array-like of int, broadcastable to ``proba.shape[:-1]``

    Returns
    -------
    ndarray of shape ``proba.shape[:-1]``

    Examples
    --------
    >>> float(class_margin([[0.75, 0.25]], [0])[0].round(6))   # log(0.75 / 0.25)
    1.098612
    >>> float(class_margin([[0.75, 0.25]], [1])[0].round(6))
    -1.098612
    """
    P = np.asarray(proba, dtype=np.float64)
    # The renormalisation and the centring of z̃ cancel in a difference of two pseudo-logits,
    # so the margin is a difference of clipped log-probabilities.
    L = np.log(np.maximum(P, PROBA_FLOOR))
    idx = np.broadcast_to(np.asarray(y, dtype=np.intp), P.shape[:-1])[..., None]
    own = np.take_along_axis(L, idx, axis=-1)
    others = L.copy()
    np.put_along_axis(others, idx, -np.inf, axis=-1)
    return (own - others.max(axis=-1, keepdims=True))[..., 0]


def prediction_margin(proba: ArrayLike) -> np.ndarray:
    """``m(x) = m_{ŷ(x)}(x)``: margin of the predicted class (``z̃_(1) − z̃_(2)``), ``>= 0``."""
    P = np.asarray(proba, dtype=np.float64)
    return class_margin(P, predicted_class(P))


def max_softmax(proba: ArrayLike) -> np.ndarray:
    """``max_c p̃_c`` — confidence, larger = more confident."""
    return clip_renormalize(proba).max(axis=-1)


def entropy(proba: ArrayLike) -> np.ndarray:
    """``−Σ_c p̃_c log p̃_c`` — uncertainty, larger = less confident."""
    Pt = clip_renormalize(proba)
    return -(Pt * np.log(Pt)).sum(axis=-1)


def top2_margin(proba: ArrayLike) -> np.ndarray:
    """``z̃_(1) − z̃_(2)`` — confidence, larger = more confident (equals :func:`prediction_margin`)."""
    return prediction_margin(proba)


def neg_energy(proba: ArrayLike) -> np.ndarray:
    """Negative energy ``log Σ_c exp z̃_c`` — confidence, larger = more confident.

    Because ``Σ p̃ = 1`` this equals ``−(1/C) Σ_c log p̃_c`` exactly, which is what is computed.
    """
    return -np.log(clip_renormalize(proba)).mean(axis=-1)


def risk_scores(proba: ArrayLike) -> pd.DataFrame:
    """The four non-certificate baselines as risk scores (**larger = riskier**).

    Parameters
    ----------
    proba : array-like of shape (n_samples, n_classes)

    Returns
    -------
    DataFrame with columns
        ``risk_max_softmax`` (``−max p̃``), ``risk_entropy`` (``+entropy``),
        ``risk_margin`` (``−margin``), ``risk_neg_energy`` (``−neg_energy``).

    Examples
    --------
    >>> risk_scores([[0.9, 0.1], [0.6, 0.4]]).round(4).to_dict("list")["risk_margin"]
    [-2.1972, -0.4055]
    """
    P = check_proba(proba, what="`proba`")
    return pd.DataFrame(
        {
            "risk_max_softmax": -max_softmax(P),
            "risk_entropy": entropy(P),
            "risk_margin": -top2_margin(P),
            "risk_neg_energy": -neg_energy(P),
        }
    )
