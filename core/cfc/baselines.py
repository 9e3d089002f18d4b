"""Baseline vectors ``x̄`` in the transformed space (SPEC A.1).

The baseline is the neutral state that removal (``R``) and attenuation (``A_λ``) move evidence
towards. It is computed from the *training* split after preprocessing:

- ``mean``   column means (default);
- ``median`` column medians;
- ``zero``   zeros (the neutral value of standardised columns);
- ``mode``   categorical groups take the most frequent training *row pattern* of their columns
  — the one-hot pattern of the most frequent category, or of the missing / unknown token when
  that is the most frequent; numeric groups keep the column means.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from core.cfc.grouping import validate_groups
from core.cfc.protocol import BASELINE_RULES, BaselineRule

__all__ = ["baseline_vector", "categorical_groups"]


def _train_iv(X_train: ArrayLike) -> np.ndarray:
    X = np.asarray(X_train, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"`X_train` must be a non-empty 2-D array (n_samples, n_features); got shape {X.shape}.")
    finite = np.isfinite(X)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(f"`X_train` must be finite (impute first); found {float(X[r, c])!r} at row {r}, column {c}.")
    return X


def categorical_groups(X_train: ArrayLike, groups: Mapping[str, Sequence[int]]) -> list[str]:
    """Names of the groups whose training columns are all 0/1 indicators.

    One-hot blocks, encoded missing indicators and binary flags qualify; a numeric column with
    its missing indicator does not.
    """
    X = _train_iv(X_train)
    groups = validate_groups(groups, X.shape[1])
    binary = np.all((X == 0) | (X == 1), axis=0)
    return [name for name, cols in groups.items() if binary[cols].all()]


def _mode_pattern(Xg: np.ndarray) -> np.ndarray:
    patterns, counts = np.unique(Xg, axis=0, return_counts=True)
    # np.unique sorts patterns lexicographically and argmax takes the first maximum, so ties go
    # to the lexicographically smallest pattern — a rule that does not depend on row order.
    return patterns[int(np.argmax(counts))]


def baseline_vector(
    X_train: ArrayLike,
    groups: Mapping[str, Sequence[int]] | None = None,
    rule: BaselineRule = "mean",
    *,
    categorical: Iterable[str] | None = None,
) -> np.ndarray:
    """Baseline vector ``x̄`` from transformed training data.

    Parameters
    ----------
    X_train : array-like of shape (n_samples, n_features)
        Transformed training split (finite).
    groups : mapping of str to sequence of int, optional
        The evidence groups; required for ``rule="mode"``.
    rule : {"mean", "median", "zero", "mode"}, default="mean"
    categorical : iterable of str, optional
        For ``mode``: names of the groups that take their most frequent row pattern. Default:
        :func:`categorical_groups` (groups made only of 0/1 columns). Other groups use the mean.

    Returns
    -------
    ndarray of shape (n_features,)

    Examples
    --------
    >>> X = [[1.0, 0.0, 2.0], [0.0, 1.0, 4.0], [1.0, 0.0, 9.0]]
    >>> baseline_vector(X, rule="median").tolist()
    [1.0, 0.0, 4.0]
    >>> baseline_vector(X, {"cat": [0, 1], "num": [2]}, rule="mode").tolist()
    [1.0, 0.0, 5.0]
    """
    if rule not in BASELINE_RULES:
        raise ValueError(f"`rule` must be one of {BASELINE_RULES}; got {rule!r}.")
    X = _train_iv(X_train)
    if rule == "mean":
        return X.mean(axis=0)
    if rule == "median":
        return np.median(X, axis=0)
    if rule == "zero":
        return np.zeros(X.shape[1])
    if groups is None:
        raise ValueError("`groups` is required for rule='mode' (the mode is taken per group).")
    groups = validate_groups(groups, X.shape[1])
    cat = categorical_groups(X, groups) if categorical is None else list(categorical)
    unknown = [g for g in cat if g not in groups]
    if unknown:
        raise ValueError(f"`categorical` names {unknown} that are not groups; known groups: {list(groups)}.")
    out = X.mean(axis=0)
    for name in cat:
        cols = groups[name]
        out[cols] = _mode_pattern(X[:, cols])
    return out
