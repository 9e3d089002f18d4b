"""Score-channel evidence-failure operators and their batched evaluation (SPEC A.1, A.3).

- Removal ``R(x, S)``: the coordinates of every group in ``S`` are replaced by ``x̄``.
- Attenuation ``A_λ(x, S) = (1 − λ)·x + λ·x̄`` on the coordinates of the groups in ``S``.
- Operator families ℙ over a severity grid Λ: ``attenuate_single`` attenuates every group
  separately (one *unit* per group), ``attenuate_all`` attenuates all groups together (one unit).

Certificates never loop over samples or steps: every stressed input of a chunk of samples is
written into one stacked array and the model is called on it in slices of ``batch_size`` rows.
The label-channel stressors (masking, dropout, noise) live in :mod:`core.cfc.stressors`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.cfc.grouping import validate_groups
from core.cfc.scores import check_proba

__all__ = ["attenuate", "remove"]

PredictProba = Callable[[np.ndarray], ArrayLike]


# --------------------------------------------------------------------------------------------
# Input validation shared by the public entry points
# --------------------------------------------------------------------------------------------
def check_features(X: ArrayLike, *, name: str = "X") -> tuple[np.ndarray, pd.Index | None]:
    """``X`` as a C-contiguous finite float64 matrix, plus its index when it is a DataFrame."""
    if hasattr(X, "toarray") and not isinstance(X, (np.ndarray, pd.DataFrame)):
        raise ValueError(
            f"`{name}` must be a dense array or DataFrame; got sparse {type(X).__name__} (call .toarray())."
        )
    index = X.index if isinstance(X, pd.DataFrame) else None
    try:
        if isinstance(X, pd.DataFrame):  # nullable dtypes: pd.NA becomes NaN and is reported below
            A = np.ascontiguousarray(X.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"`{name}` must contain only numbers (transformed features); {exc}.") from exc
    if A.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (n_samples, n_features); got shape {A.shape}.")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(f"`{name}` must have at least one row and one column; got shape {A.shape}.")
    finite = np.isfinite(A)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(
            f"`{name}` must be finite; found {float(A[r, c])!r} at row {r}, column {c} "
            "(certificates need imputed, transformed features)."
        )
    return A, index


def check_baseline(baseline: ArrayLike, n_features: int) -> np.ndarray:
    """``baseline`` as a finite float64 vector of length ``n_features``."""
    try:
        b = np.asarray(baseline, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"`baseline` must be a numeric vector; {exc}.") from exc
    if b.ndim != 1 or b.shape[0] != n_features:
        raise ValueError(f"`baseline` must have shape ({n_features},) to match X; got shape {b.shape}.")
    if not np.isfinite(b).all():
        c = int(np.flatnonzero(~np.isfinite(b))[0])
        raise ValueError(f"`baseline` must be finite; found {float(b[c])!r} at column {c}.")
    return np.ascontiguousarray(b)


def check_order(
    order: Sequence[str] | None, gi: GroupIndex, depth: int
) -> tuple[tuple[str, ...] | None, np.ndarray | None]:
    """A fixed removal ``order`` as names and as the group indices of its first ``depth`` steps.

    ``(None, None)`` when no order is given.
    """
    if order is None:
        return None, None
    if isinstance(order, str) or not isinstance(order, (Sequence, np.ndarray)):
        raise ValueError(f"`order` must be a sequence of group names; got {order!r}.")
    names = tuple(order)
    lookup = {n: i for i, n in enumerate(gi.names)}
    unknown = [n for n in names if n not in lookup]
    if unknown:
        raise ValueError(f"`order` names unknown group(s) {unknown}; groups are {list(gi.names)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"`order` must not repeat a group; got {list(names)}.")
    if len(names) < depth:
        raise ValueError(f"`order` must list at least `depth` ({depth}) distinct group names; got {len(names)}.")
    return names, np.array([lookup[n] for n in names[:depth]], dtype=np.intp)


# --------------------------------------------------------------------------------------------
# Groups as arrays
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GroupIndex:
    """A validated grouping as arrays.

    Attributes
    ----------
    names : tuple of str, length G
    columns : tuple of tuple of int
    owner : ndarray of shape (n_features,)
        Group index of every column, so a subset mask ``S`` of shape ``(..., G)`` becomes the
        column mask ``S[..., owner]`` of shape ``(..., n_features)``.
    """

    names: tuple[str, ...]
    columns: tuple[tuple[int, ...], ...]
    owner: np.ndarray

    @classmethod
    def from_groups(cls, groups: Mapping[str, Sequence[int]], n_features: int) -> GroupIndex:
        clean = validate_groups(groups, n_features)
        owner = np.empty(n_features, dtype=np.intp)
        for g, cols in enumerate(clean.values()):
            owner[cols] = g
        return cls(tuple(clean), tuple(tuple(c) for c in clean.values()), owner)

    @property
    def n_groups(self) -> int:
        return len(self.names)

    def column_mask(self, subsets: np.ndarray) -> np.ndarray:
        """Column mask of shape ``(..., n_features)`` of group-subset masks ``(..., G)``."""
        return subsets[..., self.owner]

    def subset(self, names: Iterable[str], *, what: str = "subset") -> np.ndarray:
        """Boolean mask of shape (G,) of the named groups."""
        if isinstance(names, str):
            names = [names]
        lookup = {n: i for i, n in enumerate(self.names)}
        mask = np.zeros(self.n_groups, dtype=bool)
        for n in names:
            if n not in lookup:
                raise ValueError(f"`{what}` names an unknown group {n!r}; groups are {list(self.names)}.")
            mask[lookup[n]] = True
        return mask


def operator_units(name: str, n_groups: int) -> np.ndarray:
    """Group subsets attenuated together by operator ``name``: bool array (n_units, G)."""
    if name == "attenuate_single":
        return np.eye(n_groups, dtype=bool)
    if name == "attenuate_all":
        return np.ones((1, n_groups), dtype=bool)
    raise ValueError(f"Unknown operator {name!r}; expected 'attenuate_single' or 'attenuate_all'.")


# --------------------------------------------------------------------------------------------
# Stacked stressed inputs
# --------------------------------------------------------------------------------------------
def stack_removals(
    X: np.ndarray, baseline: np.ndarray, column_masks: np.ndarray, *, out: np.ndarray | None = None
) -> np.ndarray:
    """``R`` for many subsets at once.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    baseline : ndarray of shape (d,)
    column_masks : ndarray of bool, shape (t, d) (same subsets for every row) or (n, t, d)
    out : ndarray of shape (n, t, d), optional
        Written in place (a view into a larger stacked array avoids a copy).

    Returns
    -------
    ndarray of shape (n, t, d): ``out[i, j] = R(X[i], subset j)``.
    """
    if out is None:
        out = np.empty((X.shape[0], column_masks.shape[-2], X.shape[1]))
    out[...] = X[:, None, :]
    np.copyto(out, baseline, where=column_masks)
    return out


def attenuated(X: np.ndarray, baseline: np.ndarray, severities: np.ndarray) -> np.ndarray:
    """``(1 − λ)·x + λ·x̄`` on every coordinate, for every λ: shape (n, L, d)."""
    lam = severities[None, :, None]
    return (1.0 - lam) * X[:, None, :] + lam * baseline


def stack_attenuations(
    X: np.ndarray,
    baseline: np.ndarray,
    severities: np.ndarray,
    unit_masks: np.ndarray,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``A_λ(x, S_u)`` for every severity λ and unit ``u``: shape (n, L, U, d).

    ``unit_masks`` is a boolean column mask of shape (U, d); ``out`` as in :func:`stack_removals`.
    """
    full = attenuated(X, baseline, severities)
    n, L, d = full.shape
    if out is None:
        out = np.empty((n, L, unit_masks.shape[0], d))
    out[...] = X[:, None, None, :]
    np.copyto(out, full[:, :, None, :], where=unit_masks)
    return out


def predict_batched(
    predict_proba: PredictProba, Z: np.ndarray, *, batch_size: int, n_classes: int | None, what: str = "stressed inputs"
) -> np.ndarray:
    """Validated ``predict_proba`` over the rows of ``Z`` (m, d), at most ``batch_size`` per call.

    ``what`` says in error messages which inputs were being evaluated.
    """
    parts = []
    for start in range(0, Z.shape[0], batch_size):
        block = Z[start : start + batch_size]
        label = f"`predict_proba` on {what} (block starting at stacked row {start})"
        P = check_proba(predict_proba(block), block.shape[0], n_classes=n_classes, what=label)
        n_classes = P.shape[1]
        parts.append(P)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# --------------------------------------------------------------------------------------------
# Public single-shot operators
# --------------------------------------------------------------------------------------------
def remove(X: ArrayLike, groups: Mapping[str, Sequence[int]], baseline: ArrayLike, subset: Iterable[str]) -> np.ndarray:
    """Removal ``R(x, S)``: replace the columns of the groups in ``subset`` by the baseline.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    groups : mapping of str to sequence of int
    baseline : array-like of shape (n_features,)
    subset : iterable of str
        Names of the removed groups.

    Returns
    -------
    ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> remove([[1.0, 2.0, 3.0]], {"a": [0, 2], "b": [1]}, [0.0, 0.0, 0.0], ["a"]).tolist()
    [[0.0, 2.0, 0.0]]
    """
    A, _ = check_features(X)
    b = check_baseline(baseline, A.shape[1])
    gi = GroupIndex.from_groups(groups, A.shape[1])
    return np.where(gi.column_mask(gi.subset(subset)), b, A)


def attenuate(
    X: ArrayLike, groups: Mapping[str, Sequence[int]], baseline: ArrayLike, subset: Iterable[str], severity: float
) -> np.ndarray:
    """Attenuation ``A_λ(x, S) = (1 − λ)·x + λ·x̄`` on the columns of the groups in ``subset``.

    Examples
    --------
    >>> attenuate([[1.0, 2.0]], {"a": [0], "b": [1]}, [0.0, 0.0], ["b"], 0.25).tolist()
    [[1.0, 1.5]]
    """
    if isinstance(severity, bool) or not isinstance(severity, (int, float)) or not 0.0 <= severity <= 1.0:
        raise ValueError(f"`severity` must be a number in [0, 1]; got {severity!r}.")
    A, _ = check_features(X)
    b = check_baseline(baseline, A.shape[1])
    gi = GroupIndex.from_groups(groups, A.shape[1])
    lam = float(severity)
    return np.where(gi.column_mask(gi.subset(subset)), (1.0 - lam) * A + lam * b, A)


class ProgressCounter:
    """Forwards ``(done, total)`` counts to an optional ``progress`` callable.

    Work is advanced in fractions of rows (a round that is 90 % of the cost of a pass advances
    90 % of its rows); the callable always receives integers, ending exactly at ``total``.
    """

    def __init__(self, progress: Callable[[int, int], object] | None, total: int) -> None:
        if progress is not None and not callable(progress):
            raise ValueError(f"`progress` must be a callable(done_rows, total_rows) or None; got {progress!r}.")
        self._progress = progress
        self.total = int(total)
        self._work = 0.0

    def advance(self, rows: float) -> None:
        self._work = min(float(self.total), self._work + rows)
        if self._progress is not None:
            self._progress(int(round(self._work)), self.total)
