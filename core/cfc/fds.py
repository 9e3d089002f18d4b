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

__all__ = ["EPS", "collapse_terms", "fds_from_components"]

#: The guard of SPEC's denominators ``|m(x)| + 1e-8`` and ``λ* + 1e-8``.
EPS = 1e-8


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
