"""Preprocessing fitted on the training split, and detection of naturally unavailable fields.

The preprocessing is a plain scikit-learn :class:`~sklearn.compose.ColumnTransformer` of two
:class:`~sklearn.pipeline.Pipeline` s, so that :mod:`core.cfc.grouping` can trace every
transformed column back to the raw column it came from:

- ``"num"``: ``SimpleImputer(strategy="median", add_indicator=True)`` then ``StandardScaler``
  (the missing-indicator of a numeric column is scaled with it and belongs to its group);
- ``"cat"``: ``SimpleImputer(strategy="constant", fill_value="missing")`` then
  ``OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=...)`` (categories seen
  fewer than ``min_frequency`` times in training share one "infrequent" column, which also
  receives categories never seen in training; without rare categories an unseen one is
  encoded as all zeros).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # scikit-learn is imported by fit_preprocessor: the dashboard's first screen needs none
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

from core.tabular.datasets import UNKNOWN_TOKEN

__all__ = [
    "MISSING_CATEGORY",
    "UNAVAILABLE_COLUMNS",
    "FittedPreprocessor",
    "detect_unavailable_fields",
    "fit_preprocessor",
]

#: The category that missing values of a categorical column are imputed with.
MISSING_CATEGORY = "missing"


@dataclass(frozen=True, eq=False)
class FittedPreprocessor:
    """A preprocessing fitted on training rows; maps raw frames to the model's feature space.

    Attributes
    ----------
    transformer : sklearn.compose.ColumnTransformer
        The fitted transformer (steps ``"num"`` and/or ``"cat"``, see the module docstring).
        Pass it to :func:`core.cfc.grouping.raw_origin_groups` to trace evidence groups.
    numeric, categorical : tuple of str
        Raw columns fed to the numeric and categorical pipelines.
    feature_names : tuple of str
        Names of the ``d`` transformed columns, in output order (``num__Income``,
        ``num__missingindicator_Income``, ``cat__Home_owner``, ...). For display only: group
        tracing uses the fitted transformer, not these strings.
    """

    transformer: ColumnTransformer
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    feature_names: tuple[str, ...]

    @property
    def raw_columns(self) -> tuple[str, ...]:
        """Raw input columns, numeric first (the transformer's input order)."""
        return self.numeric + self.categorical

    @property
    def n_features_out(self) -> int:
        """Number ``d`` of transformed columns."""
        return len(self.feature_names)

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Transform raw rows.

        Parameters
        ----------
        frame : DataFrame of shape (n, ...)
            Must contain every raw column; other columns (e.g. the target) are ignored.

        Returns
        -------
        X : ndarray of shape (n, d), float64
        """
        raw = _prepare(frame, self.numeric, self.categorical, where="`frame`")
        return np.ascontiguousarray(self.transformer.transform(raw), dtype=np.float64)


def fit_preprocessor(
    train: pd.DataFrame,
    numeric: Sequence[str],
    categorical: Sequence[str],
    *,
    min_frequency: int | None = 10,
) -> FittedPreprocessor:
    """Fit the preprocessing on training rows only.

    Parameters
    ----------
    train : DataFrame of shape (n_train, ...)
        Training rows (e.g. ``DatasetSplit.train``).
    numeric, categorical : sequence of str
        Raw numeric and categorical columns (e.g. ``Dataset.numeric``, ``Dataset.categorical``);
        disjoint, not both empty.
    min_frequency : int or None, default=10
        Categories seen fewer times than this in training are pooled into one "infrequent"
        column (which also takes unseen categories). None keeps every category.

    Returns
    -------
    FittedPreprocessor

    Examples
    --------
    >>> import pandas as pd
    >>> train = pd.DataFrame({"age": [20.0, None, 40.0], "home": ["own", "rent", None]})
    >>> pre = fit_preprocessor(train, ["age"], ["home"], min_frequency=None)
    >>> pre.feature_names
    ('num__age', 'num__missingindicator_age', 'cat__home_missing', 'cat__home_own', 'cat__home_rent')
    >>> pre.transform(train)[1].round(3).tolist()
    [0.0, 1.414, 0.0, 0.0, 1.0]
    """
    numeric, categorical = tuple(numeric), tuple(categorical)
    if isinstance(min_frequency, bool) or not (
        min_frequency is None or (isinstance(min_frequency, (int, np.integer)) and min_frequency >= 1)
    ):
        raise ValueError(f"`min_frequency` must be a positive int or None; got {min_frequency!r}.")
    if not numeric and not categorical:
        raise ValueError("`numeric` and `categorical` are both empty; nothing to preprocess.")
    both = sorted(set(numeric) & set(categorical))
    if both:
        raise ValueError(f"Column {both[0]!r} is listed as both numeric and categorical.")
    for kind, cols in (("numeric", numeric), ("categorical", categorical)):
        if len(set(cols)) != len(cols):
            dup = next(c for c in cols if cols.count(c) > 1)
            raise ValueError(f"Column {dup!r} is listed twice in `{kind}`.")
    if len(train) == 0:
        raise ValueError("`train` has no rows; fit the preprocessing on the training split.")
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    raw = _prepare(train, numeric, categorical, where="`train`")

    steps: list[tuple[str, Pipeline, list[str]]] = []
    if numeric:
        # keep_empty_features: a column that happens to be all-missing in training still
        # yields an output column, so the transformed layout never depends on the split.
        num = Pipeline(
            [
                ("impute", SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True)),
                ("scale", StandardScaler()),
            ]
        )
        steps.append(("num", num, list(numeric)))
    if categorical:
        cat = Pipeline(
            [
                (
                    "impute",
                    SimpleImputer(strategy="constant", fill_value=MISSING_CATEGORY, keep_empty_features=True),
                ),
                (
                    "onehot",
                    OneHotEncoder(
                        handle_unknown="infrequent_if_exist",
                        min_frequency=min_frequency,
                        sparse_output=False,
                        dtype=np.float64,
                    ),
                ),
            ]
        )
        steps.append(("cat", cat, list(categorical)))
    transformer = ColumnTransformer(steps, remainder="drop", sparse_threshold=0.0)
    transformer.fit(raw)
    return FittedPreprocessor(
        transformer=transformer,
        numeric=numeric,
        categorical=categorical,
        feature_names=tuple(str(n) for n in transformer.get_feature_names_out()),
    )


def _prepare(
    frame: pd.DataFrame, numeric: tuple[str, ...], categorical: tuple[str, ...], *, where: str
) -> pd.DataFrame:
    """Select the raw columns and give them the dtypes the transformer was fitted with."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{where} must be a pandas DataFrame; got {type(frame).__name__}.")
    missing = [c for c in numeric + categorical if c not in frame.columns]
    if missing:
        raise ValueError(f"{where} lacks the raw column {missing[0]!r} (needed: {list(numeric + categorical)}).")
    out = {}
    for c in numeric:
        col = frame[c]
        if pd.api.types.is_bool_dtype(col):
            col = col.astype("float64")
        elif not pd.api.types.is_numeric_dtype(col):
            raise ValueError(f"{where}: numeric column {c!r} has non-numeric dtype {col.dtype}.")
        out[c] = col.astype("float64")
    for c in categorical:
        # One text dtype with NaN for missing: mixed str/int levels would break OneHotEncoder.
        out[c] = frame[c].astype("str")
    return pd.DataFrame(out, index=frame.index)


# --------------------------------------------------------------------------------------------
# Naturalistic field unavailability (SPEC A.5, paper Appendix M)
# --------------------------------------------------------------------------------------------

#: Columns of the table returned by :func:`detect_unavailable_fields`.
UNAVAILABLE_COLUMNS = (
    "column", "n_missing", "n_declared", "n_token", "n_sentinel", "n_unavailable", "share", "values",
)  # fmt: skip


def detect_unavailable_fields(
    frame: pd.DataFrame,
    columns: Sequence[str],
    *,
    markers: Mapping[str, Sequence[Any]] | None = None,
    real_values: Mapping[str, Sequence[Any]] | None = None,
) -> pd.DataFrame:
    """List raw columns that contain missing, unknown or special-code values.

    A value counts as unavailable, in this order of precedence (each value counted once):

    1. ``n_missing``: missing (NaN / None);
    2. ``n_declared``: one of the column's declared ``markers`` (e.g. ``Dataset.markers``);
    3. ``n_token``: in a text column, an unknown token (:data:`core.tabular.datasets.UNKNOWN_TOKEN`:
       "?", "unknown", "n/a", "emp_unk", ...);
    4. ``n_sentinel``: in a numeric column, a special code made of nines (9999, 99999, ... or
       -999, -9999, ...) that is also the column's extreme value (maximum for a positive code,
       minimum for a negative one), such as credit data's 99999999 for "not recorded".

    Parameters
    ----------
    frame : DataFrame
        The raw data (all rows: unavailability anywhere in the data counts).
    columns : sequence of str
        Raw feature columns to inspect.
    markers : mapping of str to sequence, optional
        Extra per-column codes that mean "not available".
    real_values : mapping of str to sequence, optional
        Per-column values that look like a special code but are real values, never counted
        by rules 3 and 4 (e.g. ``{"capital-gain": (99999,)}``: Adult's top code for gains of
        $99,999 or more is a known, censored amount, not "not recorded").

    Returns
    -------
    DataFrame
        One row per affected column, in ``columns`` order, with the columns of
        :data:`UNAVAILABLE_COLUMNS`: the four counts, ``n_unavailable`` (their sum),
        ``share`` (``n_unavailable / len(frame)``) and ``values`` (tuple of the distinct
        unavailable values found, as text, ``"NaN"`` for missing). Empty if none is affected.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"inc": [10.0, None, 99999.0], "job": ["a", "?", "b"], "x": [1, 2, 3]})
    >>> found = detect_unavailable_fields(df, ["inc", "job", "x"])
    >>> found[["column", "n_missing", "n_token", "n_sentinel"]].to_numpy().tolist()
    [['inc', 1, 0, 1], ['job', 0, 1, 0]]
    >>> found["values"].tolist()
    [('NaN', '99999'), ('?',)]
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}.")
    columns = list(columns)
    unknown = [c for c in columns if c not in frame.columns]
    if unknown:
        raise ValueError(f"`columns` names {unknown[0]!r}, which is not a column of `frame`.")
    markers = dict(markers or {})
    real_values = dict(real_values or {})
    for label, mapping in (("markers", markers), ("real_values", real_values)):
        stray = [c for c in mapping if c not in columns]
        if stray:
            raise ValueError(f"`{label}` names column {stray[0]!r}, which is not among `columns`.")

    rows = []
    for c in columns:
        counts, values = _unavailable_in(frame[c], tuple(markers.get(c, ())), tuple(real_values.get(c, ())))
        total = sum(counts)
        if total:
            rows.append((c, *counts, total, total / len(frame), values))
    return pd.DataFrame(rows, columns=list(UNAVAILABLE_COLUMNS)).astype(
        {k: "int64" for k in UNAVAILABLE_COLUMNS[1:6]} | {"share": "float64"}
    )


def _unavailable_in(
    series: pd.Series, declared: tuple[Any, ...], real: tuple[Any, ...] = ()
) -> tuple[tuple[int, int, int, int], tuple[str, ...]]:
    missing = series.isna().to_numpy()
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if declared:
        if numeric:
            is_declared = series.isin([v for v in declared if isinstance(v, (int, float, np.number))])
        else:
            is_declared = series.astype("str").isin([str(v) for v in declared])
        is_declared = is_declared.to_numpy(dtype=bool) & ~missing
    else:
        is_declared = np.zeros(len(series), dtype=bool)
    token = np.zeros(len(series), dtype=bool)
    sentinel = np.zeros(len(series), dtype=bool)
    if numeric:
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        present = values[~missing]
        if present.size:
            for extreme, sign in ((present.max(), 1.0), (present.min(), -1.0)):
                if np.sign(extreme) == sign and _is_nines_code(extreme):
                    sentinel |= values == extreme
        sentinel &= ~is_declared
    else:
        text = series.astype("str").str.strip().str.lower()
        token = text.str.fullmatch(UNKNOWN_TOKEN).to_numpy(dtype=bool, na_value=False) & ~missing & ~is_declared
    if real:
        is_real = (
            series.isin([v for v in real if isinstance(v, (int, float, np.number))])
            if numeric
            else series.astype("str").isin([str(v) for v in real])
        ).to_numpy(dtype=bool)
        token &= ~is_real
        sentinel &= ~is_real
    found: list[str] = ["NaN"] if missing.any() else []
    for mask in (is_declared, token, sentinel):
        found.extend(dict.fromkeys(_as_text(v) for v in series[mask]))
    counts = (int(missing.sum()), int(is_declared.sum()), int(token.sum()), int(sentinel.sum()))
    return counts, tuple(found)


def _is_nines_code(value: float) -> bool:
    if not np.isfinite(value) or value != np.round(value):
        return False
    digits = str(int(abs(value)))
    return len(digits) >= (3 if value < 0 else 4) and set(digits) == {"9"}


def _as_text(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)
