"""The ranking head of a certificate: collapse, RCMA, ``u`` and FDS (SPEC A.3).

From a sample's trajectory margins ``m_y(x^(k))``, ``k = 0 … K`` (``m_y(x^(0)) = m(x)``), its
flip budget ``k*`` and its first flipping severities ``λ*_P``:

```
c_k(x)  = max(0, (m(x) − m_{ŷ(x)}(x^(k))) / (|m(x)| + 1e-8)),  c_0 = 0
RCMA(x) = (1/(K+1)) Σ_{k=0..K} c_k(x)
u(x)    = w1·RCMA + w2·(1/k*) + w3·(1/|ℙ|) Σ_P 1[λ*_P < ∞] / (λ*_P + 1e-8)
FDS(x)  = 1 − exp(−u(x))
```

``rcma``, ``u`` and ``fds`` are risk scores (larger = more fragile). FDS is only a ranking
head over the certificate (:mod:`core.cfc.certificate_set`); :func:`core.cfc.certify`
computes the components and :func:`core.cfc.verify` recomputes this head from a bundle's
own margins with the same code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "EPS",
    "NEAR_TIE_MARGIN",
    "collapse_terms",
    "fds_from_components",
    "near_tie",
    "rcma_headline",
    "rcma_headline_text",
]

#: The guard of SPEC's denominators ``|m(x)| + 1e-8`` and ``λ* + 1e-8``.
EPS = 1e-8

#: A prediction is a near-tie when its margin ``|m(x)|`` is below this many nats: for two
#: classes, ``p̂ < 1 / (1 + e^-0.001) ≈ 0.50025``, a confidence the tool displays as 0.500 (three
#: decimals). Its RCMA divides by almost nothing and says nothing about the evidence
#: (docs/method.md, "Near-ties").
NEAR_TIE_MARGIN = 1e-3


def collapse_terms(traj_margin: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Collapse curve ``c_k`` and its mean RCMA from the trajectory margins.

    Parameters
    ----------
    traj_margin : ndarray of shape (n, K+1)
        Original-class margins ``m_y(x^(k))``; column 0 is ``m(x)``.
    depth : int
        ``K``.

    Returns
    -------
    collapse : ndarray of shape (n, K+1)
        ``c_k = max(0, (m0 − m_k) / (|m0| + 1e-8))`` (risk, ``c_0 = 0``).
    rcma : ndarray of shape (n,)
        ``(1/(K+1)) Σ_k c_k`` (risk; not bounded by 1).

    Examples
    --------
    >>> import numpy as np
    >>> collapse, rcma = collapse_terms(np.array([[2.0, 1.0, -2.0]]), 2)
    >>> np.round(collapse, 6).tolist(), round(float(rcma[0]), 6)
    ([[0.0, 0.5, 2.0]], 0.833333)
    """
    m0 = traj_margin[:, 0]
    collapse = np.maximum(0.0, (m0[:, None] - traj_margin) / (np.abs(m0)[:, None] + EPS))
    return collapse, collapse.sum(axis=1) / (depth + 1)


def fds_from_components(
    rcma: ArrayLike, flip_budget: ArrayLike, lambda_stars: ArrayLike, weights: Sequence[float] = (1 / 3, 1 / 3, 1 / 3)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``FDS = 1 − exp(−u)`` from certificate components (SPEC A.3).

    Parameters
    ----------
    rcma : array-like of shape (n,)
    flip_budget : array-like of shape (n,)
        ``k*`` (``>= 1``).
    lambda_stars : array-like of shape (n, n_operators)
        ``λ*`` per operator, ``inf`` = no flip. With zero operators the degradation term is 0.
    weights : sequence of 3 floats
        ``(w1, w2, w3)``.

    Returns
    -------
    fds, u, degradation : ndarrays of shape (n,)
        ``degradation = (1/|ℙ|) Σ_P 1[λ*_P < ∞] / (λ*_P + 1e-8)``. All three are risk scores.
        ``fds`` is in ``[0, 1)`` mathematically; in floating point it reaches 1.0 once ``u``
        exceeds about 37, so rank by ``u`` to separate such extreme cases.

    Examples
    --------
    >>> fds, u, deg = fds_from_components([0.3], [1], [[0.5, float("inf")]], (1.0, 1.0, 1.0))
    >>> round(float(deg[0]), 6), round(float(u[0]), 6), round(float(fds[0]), 6)
    (1.0, 2.3, 0.899741)
    """
    rcma = np.asarray(rcma, dtype=np.float64)
    k = np.asarray(flip_budget, dtype=np.float64)
    lam = np.asarray(lambda_stars, dtype=np.float64).reshape(rcma.shape[0], -1)
    w1, w2, w3 = (float(w) for w in weights)
    if lam.shape[1]:
        finite = np.isfinite(lam)
        degradation = np.where(finite, 1.0 / (np.where(finite, lam, 0.0) + EPS), 0.0).mean(axis=1)
    else:
        degradation = np.zeros(rcma.shape[0])
    u = w1 * rcma + w2 / k + w3 * degradation
    return -np.expm1(-u), u, degradation


def near_tie(margin: ArrayLike, *, threshold: float = NEAR_TIE_MARGIN) -> np.ndarray:
    """Whether each prediction is a near-tie: ``|m(x)| < threshold`` (nats).

    The certificate keeps the paper's RCMA for these rows (SPEC A.3); the headlines leave them
    out of the mean RCMA and count them instead (:func:`rcma_headline`).

    Parameters
    ----------
    margin : array-like of shape (n,)
        Original margins ``m(x)`` (the certificate's ``margin`` column).
    threshold : float, default=NEAR_TIE_MARGIN
        Non-negative.

    Returns
    -------
    ndarray of bool, shape (n,)

    Examples
    --------
    >>> near_tie([0.0, 8.9e-7, -5e-4, 0.002]).tolist()
    [True, True, True, False]
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) or not threshold >= 0:
        raise ValueError(f"`threshold` must be a non-negative number of nats; got {threshold!r}.")
    m = np.asarray(margin, dtype=np.float64)
    if m.ndim != 1:
        raise ValueError(f"`margin` must be one-dimensional; got shape {m.shape}.")
    return np.abs(m) < threshold


def rcma_headline(rcma: ArrayLike, margin: ArrayLike, *, threshold: float = NEAR_TIE_MARGIN) -> dict[str, float]:
    """The RCMA figures a summary shows: the mean over the rows that are not near-ties, their count, the median.

    A near-tie's RCMA is about ``drop / 1e-8``: one such row moved a mean of hundreds of rows
    from 0.14 to 374. Leaving the near-ties out, the mean cannot move when near-ties are added
    (tests/cfc/test_near_tie.py); the count says how many were left out.

    Parameters
    ----------
    rcma, margin : array-like of shape (n,)
    threshold : float, default=NEAR_TIE_MARGIN

    Returns
    -------
    dict
        ``mean_rcma`` (mean over the rows with ``|m| ≥ threshold``; NaN when there is none),
        ``n_near_tie`` (rows left out), ``median_rcma`` (over every row; NaN when empty).

    Examples
    --------
    >>> rcma_headline([0.1, 0.3, 2.2e5], [1.0, 0.5, 9e-7])
    {'mean_rcma': 0.2, 'n_near_tie': 1, 'median_rcma': 0.3}
    """
    r = np.asarray(rcma, dtype=np.float64)
    tied = near_tie(margin, threshold=threshold)
    if r.shape != tied.shape:
        raise ValueError(f"`rcma` and `margin` must have the same length; got {r.shape} and {tied.shape}.")
    kept = r[~tied]
    return {
        "mean_rcma": float(kept.mean()) if kept.size else float("nan"),
        "n_near_tie": int(tied.sum()),
        "median_rcma": float(np.median(r)) if r.size else float("nan"),
    }


def rcma_headline_text(headline: dict, *, n: int) -> str:
    """The mean RCMA as every summary states it, the near-ties counted beside it.

    Parameters
    ----------
    headline : dict
        :func:`rcma_headline`'s output (``median_rcma`` optional; None or NaN: not shown).
    n : int
        Rows the headline was computed over.

    Examples
    --------
    >>> rcma_headline_text({"mean_rcma": 0.2, "n_near_tie": 1, "median_rcma": 0.3}, n=40)
    'mean RCMA 0.200 over the 39 predictions that are not near-ties (1 near-tie left out: top two classes within |m| < 0.001), median 0.300'
    """

    def shown(value: object) -> str | None:
        if value is None or not np.isfinite(float(value)):
            return None
        return f"{float(value):.3f}"

    ties = int(headline.get("n_near_tie") or 0)
    median = shown(headline.get("median_rcma"))
    return (
        f"mean RCMA {shown(headline.get('mean_rcma')) or '–'} over the {n - ties:,} predictions that are not "
        f"near-ties ({ties:,} near-tie{'' if ties == 1 else 's'} left out: top two classes within "
        f"|m| < {NEAR_TIE_MARGIN:g})" + (f", median {median}" if median else "")
    )
