"""The feature spaces a user's model is certified in (:mod:`core.tabular.own_model`).

- :class:`PipelineSpace`: the preprocessing steps of a scikit-learn ``Pipeline``.
- :class:`RawSpace` / :class:`RawModel`: raw columns, categorical ones as one-hot indicator
  blocks decoded back to a category before the model is called.

Their own module so that the certify task (:mod:`core.tabular.certify_task`), which saves and
reloads them, does not depend on the audit of a user's model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core.cfc.baselines import baseline_vector
from core.cfc.grouping import trace_feature_origins

__all__ = ["PipelineSpace", "RawModel", "RawSpace", "feature_origins", "is_categorical", "plain_value"]


def is_categorical(col: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)


def plain_value(value: Any) -> Any:
    """A category value as a plain Python scalar (JSON-safe), missing as None."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True, eq=False)
class RawSpace:
    """Raw columns as a float matrix: numeric as-is, categorical as one-hot blocks.

    Attributes
    ----------
    columns : tuple of str
        Raw columns the model reads, in the model's order.
    kinds : tuple of {"numeric", "categorical"}
    categories : dict of str -> tuple
        Sorted categories of every categorical column (None = missing, sorted first).
    dtypes : dict of str -> str
        ``"bool"``, ``"category"`` or ``"object"`` per categorical column: the dtype rebuilt
        when decoding.
    """

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    categories: dict[str, tuple[Any, ...]]
    dtypes: dict[str, str]

    @classmethod
    def fit(cls, columns: Sequence[str], frames: Sequence[pd.DataFrame]) -> RawSpace:
        """Categories of the categorical columns from every frame (train and test)."""
        kinds, categories, dtypes = [], {}, {}
        for c in columns:
            cols = [f[c] for f in frames]
            if any(is_categorical(col) for col in cols):
                kinds.append("categorical")
                values = {plain_value(v) for col in cols for v in pd.unique(col.astype(object))}
                categories[c] = tuple(sorted(values, key=lambda v: (v is not None, str(type(v)), str(v))))
                first = cols[0]
                dtypes[c] = (
                    "bool"
                    if pd.api.types.is_bool_dtype(first)
                    else "category"
                    if isinstance(first.dtype, pd.CategoricalDtype)
                    else "object"
                )
            else:
                kinds.append("numeric")
        return cls(tuple(columns), tuple(kinds), categories, dtypes)

    # -- layout ------------------------------------------------------------------------------
    @property
    def raw_columns(self) -> tuple[str, ...]:
        return self.columns

    @property
    def origins(self) -> tuple[str, ...]:
        """Raw column of every encoded column."""
        out: list[str] = []
        for c, kind in zip(self.columns, self.kinds):
            out += [c] * (len(self.categories[c]) if kind == "categorical" else 1)
        return tuple(out)

    @property
    def feature_names(self) -> tuple[str, ...]:
        out: list[str] = []
        for c, kind in zip(self.columns, self.kinds):
            out += [f"{c}={v}" for v in self.categories[c]] if kind == "categorical" else [c]
        return tuple(out)

    @property
    def n_features_out(self) -> int:
        return len(self.origins)

    def groups(self) -> dict[str, list[int]]:
        """One group per raw column."""
        out: dict[str, list[int]] = {}
        for j, c in enumerate(self.origins):
            out.setdefault(c, []).append(j)
        return out

    # -- encode / decode ---------------------------------------------------------------------
    def transform(self, frame: pd.DataFrame, *, where: str = "`frame`") -> np.ndarray:
        """Encoded rows, shape (n, d) float64."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{where} lacks the columns {missing} that the model needs (it reads {list(self.columns)})."
            )
        parts = []
        for c, kind in zip(self.columns, self.kinds):
            col = frame[c]
            if kind == "numeric":
                values = col.to_numpy(dtype=np.float64, na_value=np.nan)
                bad = np.flatnonzero(~np.isfinite(values))
                if bad.size:
                    raise ValueError(
                        f"{where}: numeric column {c!r} has the non-finite value {values[bad[0]]!r} at row "
                        f"{frame.index[bad[0]]!r}; raw-space certificates need finite numbers (impute in a "
                        "Pipeline step, whose groups are then traced)."
                    )
                parts.append(values[:, None])
            else:
                cats = self.categories[c]
                missing_code = cats.index(None) if None in cats else -1
                known = pd.Index([v for v in cats if v is not None], dtype=object)
                offset = 1 if missing_code == 0 else 0  # None sorts first when present
                is_na = col.isna().to_numpy()
                codes = np.full(len(col), missing_code, dtype=np.intp)
                found = known.get_indexer(col[~is_na].astype(object))
                codes[~is_na] = np.where(found >= 0, found + offset, -1)
                if (codes < 0).any():
                    r = int(np.flatnonzero(codes < 0)[0])
                    raise ValueError(
                        f"{where}: column {c!r} has the value {col.iloc[r]!r} at row {frame.index[r]!r}, "
                        f"not among its known categories {list(cats)[:20]}."
                    )
                block = np.zeros((len(col), len(cats)))
                block[np.arange(len(col)), codes] = 1.0
                parts.append(block)
        return np.ascontiguousarray(np.hstack(parts), dtype=np.float64)

    def decode(self, Z: np.ndarray) -> pd.DataFrame:
        """Raw frame of encoded (possibly stressed) rows; categorical blocks decoded by argmax."""
        Z = np.asarray(Z, dtype=np.float64)
        out, j = {}, 0
        for c, kind in zip(self.columns, self.kinds):
            if kind == "numeric":
                out[c] = Z[:, j]
                j += 1
                continue
            cats = self.categories[c]
            idx = np.argmax(Z[:, j : j + len(cats)], axis=1)
            values = np.empty(len(cats), dtype=object)
            values[:] = [np.nan if v is None else v for v in cats]
            decoded = values[idx]
            dtype = self.dtypes[c]
            if dtype == "bool":
                out[c] = decoded.astype(bool)
            elif dtype == "category":
                out[c] = pd.Categorical(decoded, categories=[v for v in cats if v is not None])
            else:
                out[c] = decoded
            j += len(cats)
        return pd.DataFrame(out)

    def baseline(self, X_train: np.ndarray, groups: Mapping[str, Sequence[int]], rule: str) -> np.ndarray:
        """Protocol rule on numeric columns; most frequent training category on categorical ones."""
        b = baseline_vector(X_train, groups, rule if rule != "mode" else "mean")
        j = 0
        for c, kind in zip(self.columns, self.kinds):
            if kind == "numeric":
                j += 1
                continue
            k = len(self.categories[c])
            counts = X_train[:, j : j + k].sum(axis=0)
            b[j : j + k] = 0.0
            b[j + int(np.argmax(counts))] = 1.0  # ties to the lowest category index
            j += k
        return b

    def to_dict(self) -> dict:
        return {
            "columns": list(self.columns),
            "kinds": list(self.kinds),
            "categories": {c: list(v) for c, v in self.categories.items()},
            "dtypes": dict(self.dtypes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RawSpace:
        return cls(
            tuple(data["columns"]),
            tuple(data["kinds"]),
            {c: tuple(v) for c, v in data["categories"].items()},
            dict(data["dtypes"]),
        )


class RawModel:
    """A raw-frame model called on :class:`RawSpace` rows: ``predict_proba(Z)`` decodes first."""

    def __init__(self, model: Any, space: RawSpace) -> None:
        self.model = model
        self.space = space
        self.classes_ = np.asarray(model.classes_)

    def predict_proba(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_proba(self.space.decode(Z)), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PipelineSpace:
    """The preprocessing steps of a scikit-learn ``Pipeline`` (all but the final estimator).

    Attributes
    ----------
    transformer : Pipeline
        ``pipeline[:-1]``; traced by :func:`core.cfc.grouping.raw_origin_groups`.
    raw_columns : tuple of str
        Raw columns the pipeline was fitted on (``feature_names_in_``).
    """

    transformer: Any
    raw_columns: tuple[str, ...]

    @property
    def origins(self) -> tuple[str, ...]:
        return tuple(trace_feature_origins(self.transformer))

    @property
    def feature_names(self) -> tuple[str, ...]:
        try:
            return tuple(str(n) for n in self.transformer.get_feature_names_out())
        except (AttributeError, ValueError, TypeError):
            return tuple(f"x{i}" for i in range(len(self.origins)))

    @property
    def n_features_out(self) -> int:
        return len(self.origins)

    def transform(self, frame: pd.DataFrame, *, where: str = "`frame`") -> np.ndarray:
        missing = [c for c in self.raw_columns if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{where} lacks the columns {missing} that the model needs (it reads {list(self.raw_columns)})."
            )
        Z = self.transformer.transform(frame[list(self.raw_columns)])
        if hasattr(Z, "toarray"):
            Z = Z.toarray()
        return np.ascontiguousarray(np.asarray(Z, dtype=np.float64))


def feature_origins(preprocessor: Any) -> list[str]:
    """Raw column of every transformed column, for any preprocessor an audit can hold."""
    from core.tabular.preprocessing import FittedPreprocessor  # preprocessing imports the datasets stack

    if isinstance(preprocessor, FittedPreprocessor):
        return trace_feature_origins(preprocessor.transformer)
    return list(preprocessor.origins)  # RawSpace, PipelineSpace, audit_folder.SavedSpace
