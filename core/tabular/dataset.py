"""The :class:`Dataset` a tabular audit consumes, and how a raw table becomes one.

A :class:`Dataset` holds the raw frame, the target, which raw columns are numeric or
categorical, the class order used to encode the target, and optional domain blocks (raw column
-> block name) for domain-block grouping. :func:`build_dataset` is the one construction shared
by the bundled tables (:mod:`core.tabular.bundled`), user files (:mod:`core.tabular.user_data`)
and in-memory frames (:func:`dataset_from_frame`): it types the columns, encodes the classes,
leaves identifier-like columns out and validates the result with
:func:`core.validation.check_table`. Domain blocks are read and completed here too
(:func:`load_blocks`, :func:`with_blocks`).
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from core.exceptions import DatasetNoteWarning
from core.validation import MAX_CLASSES, check_input_file, check_table

__all__ = [
    "MAX_CLASSES",
    "OWN_MODEL_SOURCE",
    "UNKNOWN_TOKEN",
    "Dataset",
    "DatasetSplit",
    "build_dataset",
    "dataset_from_frame",
    "load_blocks",
    "resolve_blocks",
    "with_blocks",
]

#: ``Dataset.source`` of an audit of a model the user fitted (``core.tabular.own_model.audit_model``):
#: the report and the sidebar tell it from a tool-fitted audit, which has a seeded split and fit.
OWN_MODEL_SOURCE = "audit_model"

#: Text values that mean "not recorded", matched against the lower-cased, stripped value:
#: "?", "unknown", "unk", "n/a", "missing", "not available", "" and suffixes such as
#: "emp_unk" / "status unknown". (pandas already reads "NA", "null", "None", ... in CSV files
#: as missing.)
UNKNOWN_TOKEN = re.compile(r"\?|unknown|unk|n/a|missing|not available|.*[\s_\-.](?:unknown|unk)|")
_ID_NAME = re.compile(r"(^|[\s_\-.])(id|key|uuid|guid|index|rownames?)$|^unnamed:\s*\d+$", re.IGNORECASE)
_MAX_LISTED = 20


@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification table ready for an audit.

    Attributes
    ----------
    name : str
        Short name (a key of :data:`core.tabular.bundled.DATASET_NAMES` for bundled tables, else the file stem).
    frame : pandas.DataFrame of shape (n_rows, n_features + 1)
        The feature columns and the target column. The index is the row id in the source
        (user file: the 0-based data-row position in the file; in-memory frame: its own
        index; gaps where rows were dropped). Numeric features have a NumPy numeric dtype;
        categorical features are text columns with missing values as NaN.
    target : str
        Name of the target column.
    features : tuple of str
        Raw feature columns, in frame order; ``numeric`` and ``categorical`` partition them.
    numeric, categorical : tuple of str
        Raw columns by kind, in frame order.
    classes : tuple
        Class labels in encoding order: integer code ``c`` stands for ``classes[c]``. For a
        binary target ``classes == (negative, positive)``, so column 1 of ``predict_proba`` is
        the probability of the positive class. Multi-class labels are in sorted order.
    positive_class : object or None
        The positive ("event") label of a binary target; None for multi-class targets.
    blocks : dict of str to str or None
        Domain blocks: raw feature -> block name, covering every feature, or None.
    markers : dict of str to tuple
        Dataset-specific codes that mean "not available" in a column (e.g. ``'ignore'`` in
        credit_data's ``Home``), on top of NaN, generic unknown tokens and numeric sentinels.
    description : str
        One paragraph for people: what a row is, what the target means.
    source : str
        Where the table came from (package item or file name).
    notes : tuple of str
        What loading changed, in order (rows dropped, columns coerced or excluded).
    real_values : dict of str to tuple
        Values that look like a special code to the generic rules but are real values
        (Adult's top code 99999 in ``capital-gain``); never counted as unavailable.
    official_test : ndarray of int64 or None
        Row ids (``frame.index`` values) of the source's own test part, for tables that ship
        one (Adult's adult.test); see :func:`official_split`. None otherwise.
    """

    name: str
    frame: pd.DataFrame
    target: str
    features: tuple[str, ...]
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    classes: tuple[Any, ...]
    positive_class: Any = None
    blocks: dict[str, str] | None = None
    markers: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    notes: tuple[str, ...] = ()
    # Added after the original fields so that positional construction keeps working.
    real_values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    official_test: np.ndarray | None = None

    def __post_init__(self) -> None:
        columns = list(self.frame.columns)
        if self.target not in columns:
            raise ValueError(f"Dataset {self.name!r}: target {self.target!r} is not a column of `frame`.")
        missing = [c for c in self.features if c not in columns]
        if missing or self.target in self.features:
            raise ValueError(
                f"Dataset {self.name!r}: `features` must be columns of `frame` other than the target; "
                f"got {missing or [self.target]}."
            )
        if sorted(self.numeric + self.categorical) != sorted(self.features) or set(self.numeric) & set(
            self.categorical
        ):
            raise ValueError(f"Dataset {self.name!r}: `numeric` and `categorical` must partition `features`.")
        if len(self.classes) < 2:
            raise ValueError(f"Dataset {self.name!r}: needs at least two classes; got {self.classes!r}.")
        if len(self.classes) == 2 and self.positive_class is not None and self.classes[1] != self.positive_class:
            raise ValueError(
                f"Dataset {self.name!r}: the positive class must be classes[1]; "
                f"got classes={self.classes!r}, positive_class={self.positive_class!r}."
            )
        if len(self.classes) > 2 and self.positive_class is not None:
            raise ValueError(f"Dataset {self.name!r}: `positive_class` only applies to binary targets.")
        if self.blocks is not None and set(self.blocks) != set(self.features):
            raise ValueError(f"Dataset {self.name!r}: `blocks` must map every feature (and nothing else).")

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        return len(self.classes)

    @property
    def X(self) -> pd.DataFrame:
        """Raw feature frame of shape (n_rows, n_features)."""
        return self.frame[list(self.features)]

    @property
    def y(self) -> np.ndarray:
        """Encoded target, int64 ndarray of shape (n_rows,) with values in ``0 .. C-1``."""
        return self.encode_target(self.frame[self.target])

    def encode_target(self, labels: Sequence[Any] | pd.Series) -> np.ndarray:
        """Map class labels to integer codes (``classes[c]`` -> ``c``).

        Parameters
        ----------
        labels : array-like of shape (n,)
            Labels as they appear in ``frame[target]``.

        Returns
        -------
        codes : ndarray of shape (n,), int64

        Raises
        ------
        ValueError
            If a label is not one of ``classes`` (the first offending row is named).
        """
        series = pd.Series(labels, copy=False).reset_index(drop=True)
        if isinstance(self.classes[0], str):
            series = series.astype("str")
        codes = series.map({label: code for code, label in enumerate(self.classes)})
        bad = codes.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Dataset {self.name!r}: label {series.iloc[row]!r} at position {row} is not one of the "
                f"classes {self.classes!r}."
            )
        return codes.to_numpy(dtype=np.int64)


@dataclass(frozen=True, eq=False)
class DatasetSplit:
    """A deterministic stratified train / validation / test split of a :class:`Dataset`.

    Attributes
    ----------
    dataset : Dataset
    seed : int
        The seed the split was drawn with.
    val_size, test_size : float
        Requested shares of rows.
    train_index, val_index, test_index : ndarray of int64
        Sorted row positions (``iloc``) into ``dataset.frame``; together they partition
        ``range(n_rows)``.
    """

    dataset: Dataset
    seed: int
    val_size: float
    test_size: float
    train_index: np.ndarray
    val_index: np.ndarray
    test_index: np.ndarray

    @property
    def train(self) -> pd.DataFrame:
        """Training rows of ``dataset.frame`` (index = source row ids)."""
        return self.dataset.frame.iloc[self.train_index]

    @property
    def val(self) -> pd.DataFrame:
        """Validation rows of ``dataset.frame``."""
        return self.dataset.frame.iloc[self.val_index]

    @property
    def test(self) -> pd.DataFrame:
        """Test rows of ``dataset.frame``."""
        return self.dataset.frame.iloc[self.test_index]

    @property
    def y_train(self) -> np.ndarray:
        """Encoded training target, shape (n_train,)."""
        return self.dataset.y[self.train_index]

    @property
    def y_val(self) -> np.ndarray:
        """Encoded validation target, shape (n_val,)."""
        return self.dataset.y[self.val_index]

    @property
    def y_test(self) -> np.ndarray:
        """Encoded test target, shape (n_test,)."""
        return self.dataset.y[self.test_index]


def build_dataset(
    frame: pd.DataFrame,
    target: str,
    *,
    name: str,
    where: str,
    features: Sequence[str] | None = None,
    positive_class: Any = None,
    blocks: Mapping[str, Any] | None = None,
    markers: Mapping[str, tuple[Any, ...]] | None = None,
    description: str = "",
    source: str = "",
    detect_ids: bool,
) -> Dataset:
    """A validated :class:`Dataset` from a raw table: the one construction of every source.

    Rows with a missing target are dropped, the target's classes encoded (binary: the
    negative class first), each feature typed numeric or categorical (text numbers with
    unknown-tokens read as numeric), identifier-like columns left out when ``detect_ids``,
    and the result checked by :func:`core.validation.check_table`; ``where`` names the table
    in messages. What changed is noted in ``notes`` and warned as
    :class:`~core.exceptions.DatasetNoteWarning` (``stacklevel`` reaches the public caller of
    :func:`~core.tabular.bundled.load_dataset`, :func:`~core.tabular.user_data.load_user_data`
    or :func:`dataset_from_frame`).
    """
    notes: list[str] = []
    columns = list(frame.columns)
    if not isinstance(target, str) or target not in columns:
        shown = ", ".join(repr(c) for c in columns[:_MAX_LISTED]) + (" ..." if len(columns) > _MAX_LISTED else "")
        raise ValueError(f"{where}: target column {target!r} not found; the columns are {shown}.")

    labels = frame[target]
    missing_target = labels.isna().to_numpy()
    if missing_target.all():
        raise ValueError(f"{where}: target column {target!r} has no values (all {len(frame)} missing).")
    if missing_target.any():
        _note(notes, f"dropped {int(missing_target.sum())} rows with a missing target {target!r}")
        frame = frame.loc[~missing_target]
    target_values, classes, positive = _encode_classes(frame[target], target, where, positive_class)

    if features is None:
        features = [c for c in columns if c != target]
        if detect_ids:
            ids = [c for c in features if _looks_like_id(frame[c])]
            for c in ids:
                _note(notes, f"column {c!r} looks like an identifier (every value distinct); excluded from features")
            features = [c for c in features if c not in ids]
    else:
        features = _check_features(features, columns, target, where)
    if not features:
        raise ValueError(f"{where}: no feature columns left besides the target {target!r}.")

    out = {}
    numeric, categorical = [], []
    for c in features:
        kind, values, note = _column_kind(frame[c], c, where)
        out[c] = values
        (numeric if kind == "numeric" else categorical).append(c)
        if note:
            _note(notes, note)
    out[target] = target_values
    clean = pd.DataFrame(out, index=frame.index)
    # Shared with certify; blocks (either form) are checked by _complete_blocks below.
    check_table(clean, target=target, features=features, where=where)

    return Dataset(
        name=name,
        frame=clean,
        target=target,
        features=tuple(features),
        numeric=tuple(numeric),
        categorical=tuple(categorical),
        classes=classes,
        positive_class=positive,
        blocks=_complete_blocks(blocks, features, where) if blocks is not None else None,
        markers=dict(markers or {}),
        description=description,
        source=source,
        notes=tuple(notes),
    )


def _note(notes: list[str], message: str) -> None:
    notes.append(message)
    warnings.warn(message, DatasetNoteWarning, stacklevel=4)


def _check_features(features: Sequence[str], columns: list[str], target: str, where: str) -> list[str]:
    if isinstance(features, str):
        raise ValueError(f"`features` must be a sequence of column names, not the string {features!r}.")
    features = list(features)
    unknown = [c for c in features if c not in columns]
    if unknown:
        raise ValueError(f"{where}: feature column {unknown[0]!r} not found.")
    if target in features:
        raise ValueError(f"{where}: the target {target!r} cannot also be a feature.")
    if len(set(features)) != len(features):
        dup = next(c for c in features if features.count(c) > 1)
        raise ValueError(f"{where}: feature column {dup!r} is listed twice.")
    return [c for c in columns if c in set(features)]  # frame order


def _looks_like_id(series: pd.Series) -> bool:
    values = series.dropna()
    if len(values) < 20 or len(values) < len(series) or not values.is_unique:
        return False
    if pd.api.types.is_integer_dtype(values):
        return (
            bool(_ID_NAME.search(str(series.name))) or values.is_monotonic_increasing or values.is_monotonic_decreasing
        )
    return not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _column_kind(series: pd.Series, column: str, where: str) -> tuple[str, pd.Series, str | None]:
    """Decide numeric vs categorical; return the normalised column and an optional note."""
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        raise ValueError(
            f"{where}: column {column!r} holds dates/times ({series.dtype}); convert it to numbers "
            "(e.g. days since an event) or leave it out of `features`."
        )
    if pd.api.types.is_bool_dtype(series):
        return "numeric", series.astype("float64"), None
    if pd.api.types.is_numeric_dtype(series):
        if isinstance(series.dtype, pd.api.extensions.ExtensionDtype):  # nullable Int64 / Float64: pd.NA -> NaN
            return "numeric", series.astype("float64"), None
        return "numeric", series, None
    # A text column whose values are all numbers apart from unknown-tokens ("?", "unknown", ...)
    # is a numeric column with missing values written out as text (common in UCI exports).
    present = series.dropna()
    text = present.astype("str").str.strip()
    unknown = text.str.lower().str.fullmatch(UNKNOWN_TOKEN).to_numpy(dtype=bool)
    numbers = pd.to_numeric(text[~unknown], errors="coerce")
    if len(numbers) and numbers.notna().all():
        values = pd.to_numeric(series.astype("str").str.strip(), errors="coerce")
        note = None
        if unknown.any():
            found = sorted(set(text[unknown]))
            note = (
                f"column {column!r}: numeric apart from {int(unknown.sum())} unknown-value tokens "
                f"{found[:5]!r}; read as numeric with those values missing"
            )
        return "numeric", values.astype("float64"), note
    return "categorical", series.astype("str"), None


def _encode_classes(
    labels: pd.Series, target: str, where: str, positive_class: Any
) -> tuple[pd.Series, tuple[Any, ...], Any]:
    if pd.api.types.is_bool_dtype(labels):
        labels = labels.astype("int64")
    if pd.api.types.is_numeric_dtype(labels):
        values = labels
        if pd.api.types.is_float_dtype(values) and (values == np.round(values)).all():
            values = values.astype("int64")
    else:
        values = labels.astype("str")
    counts = values.value_counts(sort=False).sort_index()
    n_classes = len(counts)
    if n_classes < 2:
        raise ValueError(
            f"{where}: target {target!r} has a single class ({_py(counts.index[0])!r} in all {len(values)} rows); "
            "a classifier audit needs at least two."
        )
    if n_classes > MAX_CLASSES:
        raise ValueError(
            f"{where}: target {target!r} has {n_classes} distinct values; at most {MAX_CLASSES} classes are "
            "supported. Is it a continuous or identifier column?"
        )
    labels_sorted = [_py(v) for v in counts.index]
    if n_classes > 2:
        if positive_class is not None:
            raise ValueError(f"`positive_class` only applies to a binary target; {target!r} has {n_classes} classes.")
        return values, tuple(labels_sorted), None
    if positive_class is None:
        if set(labels_sorted) == {0, 1}:
            positive = 1
        else:  # the rarer outcome is usually the event of interest; tie -> later label
            positive = labels_sorted[0] if counts.iloc[0] < counts.iloc[1] else labels_sorted[1]
    else:
        matches = [lab for lab in labels_sorted if lab == positive_class or str(lab) == str(positive_class)]
        if not matches:
            raise ValueError(
                f"`positive_class` must be one of the labels {labels_sorted!r} of {target!r}; got {positive_class!r}."
            )
        positive = matches[0]
    negative = next(lab for lab in labels_sorted if lab != positive)
    return values, (negative, positive), positive


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _complete_blocks(blocks: Mapping[str, Any], features: Sequence[str], where: str) -> dict[str, str]:
    mapping = _blocks_to_column_map(blocks, where=f"{where}: blocks")
    unknown = [c for c in mapping if c not in features]
    if unknown:
        raise ValueError(f"{where}: blocks name column {unknown[0]!r}, which is not a feature column.")
    names = set(mapping.values())
    for c in features:
        if c not in mapping:
            if c in names:
                raise ValueError(
                    f"{where}: column {c!r} is not in any block, but a block of other columns is also "
                    f"named {c!r}; map {c!r} explicitly or rename the block."
                )
            mapping[c] = c
    return {c: mapping[c] for c in features}


def dataset_from_frame(
    frame: pd.DataFrame,
    target: str,
    *,
    features: Sequence[str] | None = None,
    blocks: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    positive_class: Any = None,
    name: str = "frame",
) -> Dataset:
    """Validate and type an in-memory table, exactly as :func:`load_user_data` does a file.

    Parameters
    ----------
    frame : DataFrame
        The table; its index becomes the row ids (``Dataset.frame.index``). Not modified.
    target, features, blocks, positive_class
        As in :func:`load_user_data`.
    name : str, default="frame"
        Dataset name, also used in error messages.

    Returns
    -------
    Dataset
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}.")
    where = f"DataFrame {name!r}"
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        dup = next(c for c in columns if columns.count(c) > 1)
        raise ValueError(f"{where}: column name {dup!r} occurs twice.")
    if len(frame) == 0:
        raise ValueError(f"{where} has no rows.")
    frame = frame.set_axis(columns, axis=1)
    return build_dataset(
        frame,
        target,
        name=name,
        where=where,
        features=features,
        positive_class=positive_class,
        blocks=resolve_blocks(blocks) if blocks is not None else None,
        description=f"User data {name!r} ({len(frame):,} rows), target {target!r}.",
        source=where,
        detect_ids=features is None,
    )


def with_blocks(dataset: Dataset, blocks: Mapping[str, Any] | str | os.PathLike[str] | None) -> Dataset:
    """A copy of ``dataset`` with other domain blocks (None removes them).

    ``blocks`` takes the forms of :func:`load_user_data`; features left out become one-column
    blocks named after themselves.
    """
    if blocks is None:
        return replace(dataset, blocks=None)
    mapping = resolve_blocks(blocks)
    return replace(dataset, blocks=_complete_blocks(mapping, dataset.features, f"Dataset {dataset.name!r}"))


def load_blocks(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a domain-block mapping from a YAML or JSON file.

    The file holds either ``{raw column: block name}`` or ``{block name: [raw columns]}``.

    Returns
    -------
    dict of str to str
        raw column -> block name (not yet checked against any dataset's columns).
    """
    path = check_input_file(path, what="Block file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"Block file {path.name!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); expected YAML or JSON."
        ) from None
    try:
        if path.suffix.lower() == ".json":
            content = json.loads(text)
        else:
            import yaml

            content = yaml.safe_load(text)
    except (ValueError, ImportError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"Block file {path.name!r} could not be parsed: {exc}") from None
    except Exception as exc:  # yaml.YAMLError does not derive from ValueError
        raise ValueError(f"Block file {path.name!r} could not be parsed as YAML: {exc}") from None
    return _blocks_to_column_map(content, where=f"block file {path.name!r}")


def resolve_blocks(blocks: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, str]:
    """``{raw column: block}`` from a mapping of either form or a YAML / JSON file (:func:`load_blocks`)."""
    if isinstance(blocks, (str, os.PathLike)):
        return load_blocks(blocks)
    return _blocks_to_column_map(blocks, where="`blocks`")


def _blocks_to_column_map(content: Any, *, where: str) -> dict[str, str]:
    if not isinstance(content, Mapping) or not content:
        raise ValueError(
            f"{where} must be a non-empty mapping {{raw column: block}} or {{block: [raw columns]}}; "
            f"got {type(content).__name__}."
        )
    values = list(content.values())
    if all(isinstance(v, str) for v in values):
        mapping = {str(col): blk for col, blk in content.items()}
    elif all(isinstance(v, (list, tuple)) for v in values):
        mapping = {}
        for blk, cols in content.items():
            for col in cols:
                col = str(col)
                if col in mapping:
                    raise ValueError(f"{where}: column {col!r} is in two blocks ({mapping[col]!r} and {blk!r}).")
                mapping[col] = str(blk)
    else:
        raise ValueError(
            f"{where} mixes forms: every value must be a block name (column -> block) or every value "
            "a list of columns (block -> columns)."
        )
    empty = [col for col, blk in mapping.items() if not str(blk).strip()]
    if empty:
        raise ValueError(f"{where}: column {empty[0]!r} has an empty block name.")
    return {col: str(blk) for col, blk in mapping.items()}
