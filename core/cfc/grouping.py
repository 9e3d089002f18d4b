"""Evidence groups: partitions of the transformed columns (SPEC A.1).

A grouping is an ordered mapping ``name -> list[int]`` of transformed column indices that
partitions ``range(n_features)``; its order is the declared group order used to break ties.

- :func:`raw_origin_groups` (default rule ``raw_origin``) traces every transformed column back
  to the raw column it came from, through the *fitted* preprocessing object
  (``ColumnTransformer.transformers_`` / ``output_indices_``, ``OneHotEncoder.categories_``,
  ``SimpleImputer.statistics_`` and ``indicator_.features_``, …). Column names are never parsed.
- :func:`domain_block_groups` (rule ``domain_block``) merges raw-origin groups by a user
  mapping raw column -> block name.
- :func:`redundancy_merged_groups` (rule ``redundancy_merged``) merges groups whose group-level
  correlation reaches a declared threshold, by complete-linkage hierarchical clustering.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "build_groups",
    "domain_block_groups",
    "group_correlation",
    "raw_origin_groups",
    "redundancy_merged_groups",
    "trace_feature_origins",
    "validate_groups",
]

Groups = dict[str, list[int]]


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------
def validate_groups(groups: Mapping[str, Sequence[int]], n_features: int) -> Groups:
    """Check that ``groups`` partitions ``range(n_features)`` and return a clean copy.

    Parameters
    ----------
    groups : mapping of str to sequence of int
        Ordered ``name -> transformed column indices``. Names must be non-empty strings.
    n_features : int
        Number of transformed columns ``d``.

    Returns
    -------
    dict of str to list of int
        Same order; column lists sorted ascending, as Python ints.

    Raises
    ------
    ValueError
        Empty grouping or group, non-integer / out-of-range / repeated column, a column in two
        groups (both named), or columns in no group (listed).

    Examples
    --------
    >>> validate_groups({"a": [2, 0], "b": [1]}, 3)
    {'a': [0, 2], 'b': [1]}
    """
    if not isinstance(groups, Mapping):
        raise ValueError(
            f"`groups` must be an ordered mapping name -> list of column indices; got {type(groups).__name__}."
        )
    if len(groups) == 0:
        raise ValueError("`groups` is empty; at least one group is needed.")
    owner = np.full(n_features, -1, dtype=np.intp)
    names = list(groups)
    out: Groups = {}
    for gi, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValueError(f"Group names must be non-empty strings; got {name!r}.")
        cols = groups[name]
        if isinstance(cols, (str, bytes)) or not isinstance(cols, (Sequence, np.ndarray)):
            raise ValueError(f"Group {name!r} must be a list of column indices; got {cols!r}.")
        if len(cols) == 0:
            raise ValueError(f"Group {name!r} is empty; every group needs at least one column.")
        clean = []
        for c in cols:
            if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Integral):
                raise ValueError(f"Group {name!r} has a non-integer column index {c!r}.")
            c = int(c)
            if not 0 <= c < n_features:
                raise ValueError(
                    f"Group {name!r} has column {c}, outside 0..{n_features - 1} (X has {n_features} columns)."
                )
            if owner[c] == gi:
                raise ValueError(f"Group {name!r} lists column {c} twice.")
            if owner[c] >= 0:
                raise ValueError(f"Groups overlap: column {c} is in both {names[owner[c]]!r} and {name!r}.")
            owner[c] = gi
            clean.append(c)
        out[name] = sorted(clean)
    missing = np.flatnonzero(owner < 0)
    if missing.size:
        shown = missing[:10].tolist()
        more = f" (and {missing.size - 10} more)" if missing.size > 10 else ""
        raise ValueError(f"Groups do not cover the columns: columns {shown}{more} belong to no group.")
    return out


# --------------------------------------------------------------------------------------------
# Raw-origin tracing
# --------------------------------------------------------------------------------------------
_ELEMENTWISE = (
    "StandardScaler",
    "MinMaxScaler",
    "MaxAbsScaler",
    "RobustScaler",
    "QuantileTransformer",
    "PowerTransformer",
    "OrdinalEncoder",
)


def _is_nan(values: np.ndarray) -> np.ndarray:
    # NaN is the only value unequal to itself; this works for float and object arrays alike.
    return np.asarray(values != values, dtype=bool)


def _resolve_columns(spec: Any, feature_names: np.ndarray | None, n_in: int, where: str) -> np.ndarray:
    """Input column indices selected by a fitted ``ColumnTransformer`` column specification."""
    if isinstance(spec, slice):
        if isinstance(spec.start, str) or isinstance(spec.stop, str):
            if feature_names is None:
                raise ValueError(f"{where}: a label slice needs a ColumnTransformer fitted on a DataFrame.")
            names = list(feature_names)
            start = 0 if spec.start is None else names.index(spec.start)
            stop = n_in if spec.stop is None else names.index(spec.stop) + 1  # label slices include the end
            return np.arange(start, stop)[:: spec.step or 1]
        return np.arange(n_in)[spec]
    items = np.atleast_1d(np.asarray(spec, dtype=object) if not isinstance(spec, np.ndarray) else spec)
    if items.size == 0:
        return np.zeros(0, dtype=np.intp)
    if items.dtype == bool or all(isinstance(v, (bool, np.bool_)) for v in items):
        mask = items.astype(bool)
        if mask.size != n_in:
            raise ValueError(f"{where}: boolean column mask of length {mask.size} for {n_in} input columns.")
        return np.flatnonzero(mask)
    if all(isinstance(v, str) for v in items):
        if feature_names is None:
            raise ValueError(f"{where}: string column names need a ColumnTransformer fitted on a DataFrame.")
        lookup = {name: i for i, name in enumerate(feature_names)}
        unknown = [v for v in items if v not in lookup]
        if unknown:
            raise ValueError(f"{where}: columns {unknown} are not among the fitted input columns.")
        return np.array([lookup[v] for v in items], dtype=np.intp)
    if all(isinstance(v, numbers.Integral) for v in items):
        return np.array([int(v) % n_in for v in items], dtype=np.intp)
    raise ValueError(f"{where}: cannot resolve the column specification {spec!r}.")


def _n_onehot_outputs(encoder: Any) -> list[int]:
    """Output columns per input feature of a fitted ``OneHotEncoder``, from its public state."""
    counts = []
    infrequent = getattr(encoder, "infrequent_categories_", None)
    for i, cats in enumerate(encoder.categories_):
        n = len(cats)
        if infrequent is not None and infrequent[i] is not None:
            n -= len(infrequent[i]) - 1  # all infrequent categories share one output column
        if encoder.drop_idx_ is not None and encoder.drop_idx_[i] is not None:
            n -= 1
        counts.append(n)
    return counts


def _trace(est: Any, origins: np.ndarray, where: str) -> np.ndarray:
    """Raw-column origin of every output column of the fitted transformer ``est``."""
    from sklearn.utils.validation import check_is_fitted

    if est is None or (isinstance(est, str) and est == "passthrough"):
        return origins
    if isinstance(est, str) and est == "drop":
        return origins[:0]
    kind = type(est).__name__
    where = f"{where} -> {kind}"

    if kind == "Pipeline":
        for name, step in est.steps:
            origins = _trace(step, origins, f"{where}[{name!r}]")
        return origins

    if kind == "ColumnTransformer":
        check_is_fitted(est, "transformers_")
        feature_names = getattr(est, "feature_names_in_", None)
        n_in = origins.size
        out = np.full(sum(s.stop - s.start for s in est.output_indices_.values()), -1, dtype=np.intp)
        for name, trans, cols in est.transformers_:
            if isinstance(trans, str) and trans == "drop":
                continue
            idx = _resolve_columns(cols, feature_names, n_in, f"{where}[{name!r}]")
            if idx.size == 0:
                continue
            sub = _trace(trans, origins[idx], f"{where}[{name!r}]")
            span = est.output_indices_[name]
            if sub.size != span.stop - span.start:
                raise ValueError(
                    f"{where}[{name!r}]: traced {sub.size} output columns but the transformer wrote "
                    f"{span.stop - span.start}; cannot trace this preprocessing safely."
                )
            out[span] = sub
        if (out < 0).any():
            raise ValueError(f"{where}: output columns {np.flatnonzero(out < 0).tolist()} could not be traced.")
        return out

    if kind == "FeatureUnion":
        parts = [
            _trace(trans, origins, f"{where}[{name!r}]")
            for name, trans in est.transformer_list
            if not (isinstance(trans, str) and trans == "drop")
        ]
        return np.concatenate(parts) if parts else origins[:0]

    if kind == "FunctionTransformer":
        check_is_fitted(est)
        if est.func is None:  # identity, also what ColumnTransformer makes of "passthrough"
            return origins
        raise ValueError(
            f"{where}: a FunctionTransformer with a custom function cannot be traced to raw columns; "
            "pass `groups` explicitly or use a domain-block mapping."
        )

    if kind == "SimpleImputer":
        check_is_fitted(est, "statistics_")
        if est.strategy == "constant" or getattr(est, "keep_empty_features", False):
            kept = origins
        else:
            kept = origins[~_is_nan(est.statistics_)]  # all-missing training columns are dropped
        if est.add_indicator:
            return np.concatenate([kept, origins[est.indicator_.features_]])
        return kept

    if kind == "MissingIndicator":
        check_is_fitted(est, "features_")
        return origins[est.features_]

    if kind == "OneHotEncoder":
        check_is_fitted(est, "categories_")
        counts = _n_onehot_outputs(est)
        return np.repeat(origins, counts)

    if kind == "KBinsDiscretizer":
        check_is_fitted(est, "n_bins_")
        if est.encode == "ordinal":
            return origins
        return np.repeat(origins, np.asarray(est.n_bins_, dtype=np.intp))

    if kind in _ELEMENTWISE:
        check_is_fitted(est)
        return origins

    if hasattr(est, "get_support") and hasattr(est, "transform"):  # feature selectors
        return origins[est.get_support(indices=True)]

    raise ValueError(
        f"{where}: cannot trace transformed columns through {kind}. Supported: Pipeline, "
        "ColumnTransformer, FeatureUnion, SimpleImputer, MissingIndicator, OneHotEncoder, "
        f"KBinsDiscretizer, feature selectors, identity FunctionTransformer, {', '.join(_ELEMENTWISE)}. "
        "Pass `groups` explicitly or use a domain-block mapping."
    )


def _input_names(preprocessor: Any, input_features: Sequence[str] | None) -> list[str]:
    n_in = getattr(preprocessor, "n_features_in_", None)
    if input_features is None:
        names = getattr(preprocessor, "feature_names_in_", None)
        if names is None:
            if n_in is None:
                raise ValueError(
                    f"{type(preprocessor).__name__} is not fitted or does not expose n_features_in_; "
                    "fit it first or pass `input_features`."
                )
            names = [f"x{i}" for i in range(n_in)]
    else:
        names = list(input_features)
        if n_in is not None and len(names) != n_in:
            raise ValueError(f"`input_features` has {len(names)} names; the preprocessor was fitted on {n_in} columns.")
    names = [str(n) for n in names]
    if len(set(names)) != len(names):
        raise ValueError(f"Raw column names must be unique; got {names}.")
    return names


def trace_feature_origins(preprocessor: Any, *, input_features: Sequence[str] | None = None) -> list[str]:
    """Raw input column of origin of every transformed column.

    Parameters
    ----------
    preprocessor : fitted scikit-learn transformer
        A ``ColumnTransformer``, ``Pipeline``, ``FeatureUnion`` or single transformer made of
        the supported steps (see :func:`raw_origin_groups`).
    input_features : sequence of str, optional
        Raw column names; default ``feature_names_in_`` of the preprocessor, else
        ``x0, x1, …``.

    Returns
    -------
    list of str, one per transformed column, in output order.
    """
    names = _input_names(preprocessor, input_features)
    origins = _trace(preprocessor, np.arange(len(names)), "preprocessor")
    get_names = getattr(preprocessor, "get_feature_names_out", None)
    if get_names is not None:
        try:
            n_out = len(get_names())
        except (AttributeError, ValueError, TypeError):  # some steps cannot name their outputs
            n_out = None
        if n_out is not None and n_out != origins.size:
            raise ValueError(
                f"Traced {origins.size} transformed columns but the preprocessor reports {n_out}; "
                "cannot trace this preprocessing safely."
            )
    return [names[i] for i in origins]


def raw_origin_groups(preprocessor: Any, *, input_features: Sequence[str] | None = None) -> Groups:
    """Raw-origin grouping: one group per raw column, traced from the fitted preprocessing.

    All transformed columns derived from one raw column form one group: the one-hot columns of
    a categorical (including an infrequent-category column), a numeric column with its
    missing-indicator, the encoded indicator of an imputed categorical, … Groups are ordered
    by the raw column order; raw columns that produce no output are absent.

    Supported steps (fitted): ``ColumnTransformer`` (any remainder), ``Pipeline``,
    ``FeatureUnion``, ``SimpleImputer`` (incl. ``add_indicator`` and dropped all-missing
    columns), ``MissingIndicator``, ``OneHotEncoder`` (``drop``, ``handle_unknown='ignore'`` or
    ``'infrequent_if_exist'``), ``KBinsDiscretizer``, element-wise scalers / encoders,
    ``'passthrough'`` / identity ``FunctionTransformer`` and feature selectors. Anything else
    raises ``ValueError`` rather than guessing.

    Parameters
    ----------
    preprocessor : fitted scikit-learn transformer
    input_features : sequence of str, optional
        See :func:`trace_feature_origins`.

    Returns
    -------
    dict of str to list of int
        ``raw column -> transformed column indices``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> df = pd.DataFrame({"age": [30.0, 40.0, 50.0], "job": ["a", "b", "a"]})
    >>> ct = ColumnTransformer([("cat", OneHotEncoder(), ["job"]), ("num", StandardScaler(), ["age"])]).fit(df)
    >>> raw_origin_groups(ct)
    {'age': [2], 'job': [0, 1]}
    """
    origins = trace_feature_origins(preprocessor, input_features=input_features)
    groups: Groups = {name: [] for name in _input_names(preprocessor, input_features)}
    for j, name in enumerate(origins):
        groups[name].append(j)
    return {name: cols for name, cols in groups.items() if cols}


# --------------------------------------------------------------------------------------------
# Domain blocks
# --------------------------------------------------------------------------------------------
def domain_block_groups(
    groups: Mapping[str, Sequence[int]], mapping: Mapping[str, str], *, unmapped: Literal["raise", "keep"] = "raise"
) -> Groups:
    """Merge raw-origin groups into user-declared domain blocks.

    Parameters
    ----------
    groups : mapping of str to sequence of int
        Raw-origin groups (``raw column -> transformed columns``).
    mapping : mapping of str to str
        ``raw column -> block name``. Every key must be a group of ``groups``.
    unmapped : {"raise", "keep"}, default="raise"
        What to do with groups absent from ``mapping``: refuse, or keep them as their own block
        (named after the raw column, which must not clash with a block name).

    Returns
    -------
    dict of str to list of int
        Blocks in order of their first member in ``groups``; columns sorted ascending.

    Examples
    --------
    >>> domain_block_groups({"a": [0], "b": [1, 2], "c": [3]}, {"a": "X", "b": "Y", "c": "X"})
    {'X': [0, 3], 'Y': [1, 2]}
    """
    if unmapped not in ("raise", "keep"):
        raise ValueError(f"`unmapped` must be one of ('raise', 'keep'); got {unmapped!r}.")
    if not isinstance(mapping, Mapping):
        raise ValueError(f"`mapping` must be a mapping raw column -> block name; got {type(mapping).__name__}.")
    unknown = [k for k in mapping if k not in groups]
    if unknown:
        raise ValueError(f"`mapping` names raw columns {unknown} that are not groups; known groups: {list(groups)}.")
    bad = {k: v for k, v in mapping.items() if not isinstance(v, str) or not v}
    if bad:
        raise ValueError(f"Block names must be non-empty strings; got {bad}.")
    missing = [g for g in groups if g not in mapping]
    if missing and unmapped == "raise":
        raise ValueError(f"`mapping` has no block for raw columns {missing}; map them or pass unmapped='keep'.")
    blocks: Groups = {}
    for name, cols in groups.items():
        block = mapping.get(name, name)
        if name not in mapping and block in set(mapping.values()):
            raise ValueError(f"Unmapped raw column {name!r} clashes with the block name {block!r}.")
        blocks.setdefault(block, []).extend(int(c) for c in cols)
    return {b: sorted(cols) for b, cols in blocks.items()}


# --------------------------------------------------------------------------------------------
# Redundancy merging
# --------------------------------------------------------------------------------------------
def _group_basis(Xg: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the centred column span of one group (empty if constant)."""
    Xc = Xg - Xg.mean(axis=0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return U[:, :0]
    keep = s > s[0] * max(Xc.shape) * np.finfo(float).eps
    return U[:, keep]


def group_correlation(X: ArrayLike, groups: Mapping[str, Sequence[int]]) -> np.ndarray:
    """Absolute group-level correlation: the first canonical correlation between groups.

    ``ρ(g, h)`` is the largest correlation between a linear combination of the columns of
    ``g`` and one of ``h`` (the largest singular value of ``U_gᵀ U_h`` with ``U`` orthonormal
    bases of the centred columns). For one-column groups it is ``|Pearson r|``. A constant
    group has correlation 0 with every other group.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Transformed training data, finite.
    groups : mapping of str to sequence of int
        A partition of the columns of ``X``.

    Returns
    -------
    ndarray of shape (n_groups, n_groups)
        Symmetric, in ``[0, 1]``, unit diagonal.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"`X` must be 2-D (n_samples, n_features); got shape {X.shape}.")
    groups = validate_groups(groups, X.shape[1])
    if not np.isfinite(X).all():
        r, c = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(f"`X` must be finite; found {float(X[r, c])!r} at row {r}, column {c}.")
    bases = [_group_basis(X[:, cols]) for cols in groups.values()]
    G = len(bases)
    R = np.eye(G)
    for i in range(G):
        for j in range(i + 1, G):
            if bases[i].shape[1] == 0 or bases[j].shape[1] == 0:
                r = 0.0
            else:
                r = min(1.0, float(np.linalg.norm(bases[i].T @ bases[j], ord=2)))
            R[i, j] = R[j, i] = r
    return R


def redundancy_merged_groups(X: ArrayLike, groups: Mapping[str, Sequence[int]], *, threshold: float = 0.7) -> Groups:
    """Merge strongly correlated groups (rule ``redundancy_merged``).

    Complete-linkage hierarchical clustering on the distance ``1 − ρ`` with ``ρ`` from
    :func:`group_correlation`, cut at ``1 − threshold``: groups end up together only if
    **every** pair of them has ``ρ >= threshold``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Transformed *training* data.
    groups : mapping of str to sequence of int
        The groups to merge (normally raw-origin groups).
    threshold : float, default=0.7
        ``|ρ|`` threshold in ``(0, 1]`` (declared as ``Protocol.merge_threshold``).

    Returns
    -------
    dict of str to list of int
        Merged groups named ``"a+b+…"`` (members in declared order), ordered by their first
        member; unmerged groups keep their name.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"`threshold` must be a number in (0, 1]; got {threshold!r}.")
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    X = np.asarray(X, dtype=np.float64)
    R = group_correlation(X, groups)
    groups = validate_groups(groups, X.shape[1])
    names = list(groups)
    if len(names) == 1:
        return groups
    D = squareform(np.clip(1.0 - R, 0.0, 1.0), checks=False)
    labels = fcluster(linkage(D, method="complete"), t=1.0 - threshold, criterion="distance")
    merged: dict[int, list[str]] = {}
    for name, lab in zip(names, labels):
        merged.setdefault(int(lab), []).append(name)
    return {"+".join(members): sorted(c for m in members for c in groups[m]) for members in merged.values()}


# --------------------------------------------------------------------------------------------
# Groups by declared rule
# --------------------------------------------------------------------------------------------
def build_groups(
    rule: str, preprocessor: Any, X_train: ArrayLike, *, blocks: Mapping[str, str] | None = None, threshold: float = 0.7
) -> Groups:
    """Evidence groups of a fitted preprocessing under the protocol's grouping ``rule``.

    The one place where a rule name becomes concrete groups, shared by the audit pipeline and
    the large-table engine so both certify under identical groups.

    Parameters
    ----------
    rule : {"raw_origin", "domain_block", "redundancy_merged"}
        ``Protocol.grouping``.
    preprocessor : fitted ColumnTransformer, Pipeline or encoder
        Traced by :func:`raw_origin_groups`.
    X_train : array-like of shape (n_train, n_features)
        Transformed training rows (used by ``redundancy_merged`` only).
    blocks : mapping of str to str, optional
        Raw column -> block name, required by ``domain_block``. Entries for columns that the
        preprocessing does not use (the target, dropped ids) are ignored; unmapped raw columns
        keep their own group.
    threshold : float, default=0.7
        ``|ρ|`` merge threshold of ``redundancy_merged`` (``Protocol.merge_threshold``).

    Returns
    -------
    dict of str to list of int
    """
    raw = raw_origin_groups(preprocessor)
    if rule == "raw_origin":
        return raw
    if rule == "redundancy_merged":
        return redundancy_merged_groups(X_train, raw, threshold=threshold)
    if rule == "domain_block":
        if blocks is None:
            raise ValueError("grouping 'domain_block' needs `blocks` (raw column -> block name); got None.")
        return domain_block_groups(raw, {c: b for c, b in blocks.items() if c in raw}, unmapped="keep")
    raise ValueError(f"`rule` must be one of ('raw_origin', 'domain_block', 'redundancy_merged'); got {rule!r}.")
