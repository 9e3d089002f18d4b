"""The validation layer shared by every entry point that reads a user's table or number.

``audit`` (:func:`core.tabular.datasets.load_user_data`), ``certify``
(:func:`core.scale.certify.fit_certify_task`), ``paired`` / ``paired-grid``
(:mod:`core.paired.records`, :mod:`core.scale.paired_grid`) and the dashboard uploads (which go
through the same loaders) call these checks, so one table gets one verdict everywhere. Each
check runs before any output exists and raises ``ValueError`` (or ``FileNotFoundError``) with a
message naming the file, the row, the column and the value, and what was expected.

Semantics of degenerate but legal inputs (decided here, documented in ``docs/DEVELOPING.md``):

- a feature that takes one value on every row is **kept** (refusing it would make a table
  valid or not depending on the sample drawn from it) and reported by a
  :class:`ConstantFeatureWarning` that names every such column; but a table whose **every**
  feature is constant is **refused** (:func:`check_informative_features`): no evidence group
  could change a prediction, so every certificate would read "no flip" and the audit would say
  nothing;
- all three FDS weights zero is **refused** (:class:`core.cfc.protocol.Protocol`): FDS would be
  0 for every row and carry no information.
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.exceptions import ConstantFeatureWarning

__all__ = [
    "MAX_CLASSES",
    "UPLOAD_LIMIT_MB",
    "ConstantFeatureWarning",
    "check_cells",
    "check_finite_features",
    "check_informative_features",
    "check_input_file",
    "check_table",
    "check_text_table",
    "check_unique_columns",
    "check_unit_interval",
    "check_upload_size",
    "csv_header_duplicate",
    "warn_constant_features",
]

#: Most classes a target may have (more is almost always a continuous or identifier column).
MAX_CLASSES = 50
_SHOWN = 10


# Leading bytes of the binary files most often renamed or picked by mistake (an image, a
# spreadsheet, an archive, a pickle) in place of a text table.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"RIFF", "a RIFF file (WebP image, WAV audio)"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or an .xlsx / .docx, which are ZIP archives)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.xls / .doc)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"PAR1", "a Parquet file (name it .parquet)"),
    (b"\x7fELF", "an executable"),
    *((b"\x80" + bytes([v]), "a Python pickle (never read here)") for v in range(2, 6)),
)
# The text checks look at the head of the file: enough for any header, cheap on 50 MB uploads.
_HEAD = 65536


def check_text_table(raw: bytes, label: str) -> None:
    r"""Refuse bytes that cannot be a CSV / TSV text table, before anything parses them.

    Checked on the first 64 KiB: a known binary signature (PNG, JPEG, PDF, ZIP/xlsx, gzip,
    Parquet, pickle, …), a NUL byte, or bytes that are not UTF-8 (a byte-order mark is fine).
    Without this, a PNG renamed ``.csv`` would have its header decoded leniently and offered
    ``"\ufffdPNG"`` as a column name.

    Raises
    ------
    ValueError
        Naming ``label``, what the bytes look like and what was expected.

    Examples
    --------
    >>> check_text_table(b"x,y\n1,a\n", "ok.csv")
    >>> check_text_table(b"\x89PNG\r\n\x1a\n....", "photo.csv")
    Traceback (most recent call last):
    ...
    ValueError: 'photo.csv' is a PNG image, a binary file, not a text table (it starts with that format's signature); upload a CSV / TSV text file or a Parquet file.
    """
    for signature, kind in _SIGNATURES:
        if raw.startswith(signature):
            raise ValueError(
                f"{label!r} is {kind}, a binary file, not a text table (it starts with that format's "
                "signature); upload a CSV / TSV text file or a Parquet file."
            )
    head = raw[:_HEAD]
    if b"\x00" in head[:8192]:
        raise ValueError(f"{label!r} holds binary content, not a text table (CSV): it contains NUL bytes.")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the 64 KiB boundary is not an error.
        if not (len(raw) > _HEAD and exc.reason == "unexpected end of data"):
            raise ValueError(
                f"{label!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 CSV or Parquet."
            ) from None


def check_unit_interval(value: Any, name: str) -> float:
    """``value`` as a float in ``[0, 1]``; bools, strings, NaN and non-numbers are refused.

    The type-strict boundary check of public functions (scikit-learn's ``validate_params``
    style): ``tau='0.8'`` or ``tau=True`` is a caller's mistake, not a number.

    Examples
    --------
    >>> check_unit_interval(1, "tau")
    1.0
    >>> check_unit_interval(True, "tau")
    Traceback (most recent call last):
    ...
    ValueError: `tau` must be a real number in [0, 1]; got True (bool).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a real number in [0, 1]; got {value!r} ({type(value).__name__}).")
    v = float(value)
    if math.isnan(v) or not 0.0 <= v <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1]; got {value!r}.")
    return v


def check_cells(column: pd.Series, *, kind: str, noun: str, where: Callable[[int], str]) -> np.ndarray:
    """The cells of a table column as numbers, refused at the first invalid one.

    ``kind="count"`` wants non-negative integers (class labels, counts) and returns int64;
    ``kind="probability"`` wants numbers in [0, 1] and returns float64. Text, NaN and inf are
    invalid. The message reads ``<where(i)>, column '<name>': <value> is not <noun>; expected
    <what kind wants>.``, ``where`` naming the 0-based row ``i`` the way the caller's user sees it.

    Examples
    --------
    >>> check_cells(pd.Series([0, 2, 7]), kind="count", noun="a count", where=str)
    array([0, 2, 7])
    >>> check_cells(pd.Series(["1", "1.5"], name="k"), kind="count", noun="a count",
    ...             where=lambda i: f"counts.csv row {i + 1}")
    Traceback (most recent call last):
    ...
    ValueError: counts.csv row 2, column 'k': '1.5' is not a count; expected a non-negative integer.
    """
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    if kind == "count":
        bad, expected = ~np.isfinite(values) | (values != np.round(values)) | (values < 0), "a non-negative integer"
    elif kind == "probability":
        bad, expected = ~np.isfinite(values) | (values < 0) | (values > 1), "a number in [0, 1]"
    else:
        raise ValueError(f"`kind` must be 'count' or 'probability'; got {kind!r}.")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = column.iloc[i]
        shown = repr(value.item() if isinstance(value, np.generic) else value)
        raise ValueError(f"{where(i)}, column {column.name!r}: {shown} is not {noun}; expected {expected}.")
    return values.astype(np.int64) if kind == "count" else values


def check_input_file(path: str | os.PathLike[str], *, what: str = "input file", allow_folder: bool = False) -> Path:
    """An existing input path; a folder is refused (unless ``allow_folder``) with its own message."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist.")
    if p.is_dir() and not allow_folder:
        raise ValueError(f"{what} {str(path)!r} is a folder; expected a CSV or Parquet file.")
    if not p.is_dir() and not p.is_file():
        raise ValueError(f"{what} {str(path)!r} is not a regular file (a device, FIFO or socket).")
    return p


def csv_header_duplicate(raw: bytes, sep: str = ",") -> str | None:
    """The first column name that occurs twice in the header line of CSV bytes, if any.

    pandas silently renames a repeated ``Time`` to ``Time.1``; reading the header ourselves is
    the only way to tell a real ``Time.1`` column from a renamed duplicate.
    """
    end = raw.find(b"\n")
    line = (raw if end < 0 else raw[:end]).decode("utf-8-sig", errors="replace")
    try:
        header = next(csv.reader(io.StringIO(line), delimiter=sep))
    except (StopIteration, csv.Error):
        return None
    seen: set[str] = set()
    for name in (h.strip() for h in header):
        if name and name in seen:
            return name
        seen.add(name)
    return None


def check_unique_columns(columns: Iterable[Any], where: str) -> None:
    """Refuse a table whose column names repeat (ambiguous: which one is meant?)."""
    names = [str(c) for c in columns]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{where}: column name {name!r} occurs more than once; column names must be unique.")
        seen.add(name)


def _first_inf(values: np.ndarray) -> int | None:
    bad = np.flatnonzero(np.isinf(values))
    return int(bad[0]) if bad.size else None


def check_table(
    frame: pd.DataFrame,
    *,
    target: str,
    features: Sequence[str],
    where: str,
    blocks: Mapping[str, Any] | None = None,
    max_classes: int = MAX_CLASSES,
    row_offset: int = 0,
) -> None:
    """The checks every tabular entry point applies to a table before using it.

    Parameters
    ----------
    frame : DataFrame
        The raw table (or the sample of it a model is fitted on).
    target : str
        Label column.
    features : sequence of str
        Feature columns.
    where : str
        How the table is named in messages (file name).
    blocks : mapping, optional
        raw column -> domain block; every key must be a feature.
    max_classes : int, default MAX_CLASSES
    row_offset : int, default 0
        Row number (0-based) of ``frame``'s first row in the file, for messages.

    Raises
    ------
    ValueError
        Repeated column names, a missing or all-missing target, more than ``max_classes``
        classes (callers refuse a single class with their own advice), an entirely missing feature, an infinite value (first row and column named),
        blocks naming a column that is not a feature, every feature constant
        (:func:`check_informative_features`, the columns named).

    Warns
    -----
    ConstantFeatureWarning
        Features with one value on every row (named), when some feature varies.
    """
    check_unique_columns(frame.columns, where)
    if target not in frame.columns:
        raise ValueError(
            f"{where}: target column {target!r} not found; the columns are {list(map(str, frame.columns))[:20]}."
        )
    labels = frame[target]
    if pd.api.types.is_float_dtype(labels):
        labels = labels.where(np.isfinite(labels.to_numpy(dtype=np.float64, na_value=np.nan)))
    n_classes = int(labels.nunique(dropna=True))
    if n_classes == 0:
        raise ValueError(f"{where}: target column {target!r} has no values (all {len(frame)} missing).")
    if n_classes > max_classes:
        raise ValueError(
            f"{where}: target {target!r} has {n_classes} distinct values; at most {max_classes} "
            "classes are supported. Is it a continuous or identifier column?"
        )
    for c in features:
        values = frame[c]
        if values.isna().all():
            raise ValueError(
                f"{where}: column {c!r} is entirely missing (all {len(frame)} values); "
                "remove it or leave it out of the features."
            )
    check_finite_features(frame, features, where, row_offset=row_offset)
    if blocks is not None:
        unknown = [str(col) for col in blocks if str(col) not in set(map(str, features))]
        if unknown:
            raise ValueError(
                f"{where}: blocks name column {unknown[0]!r}, which is not a feature column; "
                f"the features are {list(features)[:20]}."
            )
    check_informative_features(frame, features, where)
    warn_constant_features(frame, features, where)


def check_informative_features(frame: pd.DataFrame, features: Sequence[str], where: str) -> None:
    """Refuse a table whose every feature column takes one value on every row, naming them.

    A constant column cannot carry evidence: replacing its group by the baseline never changes
    a prediction. When every feature is constant, no certificate can flip and the audit would
    report nothing, so the table is refused (constant columns among informative ones are only
    warned about, :func:`warn_constant_features`). Missing values count as a value.

    Raises
    ------
    ValueError
        ``"{where}: every feature column is constant ('a' = 1, 'b' = 'x'); ..."``.

    Examples
    --------
    >>> check_informative_features(pd.DataFrame({"a": [1, 1], "b": [0, 2]}), ["a", "b"], "t.csv")
    >>> check_informative_features(pd.DataFrame({"a": [1, 1], "b": ["x", "x"]}), ["a", "b"], "t.csv")
    Traceback (most recent call last):
    ...
    ValueError: t.csv: every feature column is constant ('a' = 1, 'b' = 'x'); no evidence can change a prediction, so there is nothing to audit. Add columns that vary between rows.
    """
    if not features or len(frame) == 0:
        return
    for c in features:
        if frame[c].nunique(dropna=False) > 1:
            return
    values = [f"{c!r} = {_plain(frame[c].iloc[0])!r}" for c in features[:_SHOWN]]
    shown = ", ".join(values) + (f", … ({len(features)} columns)" if len(features) > _SHOWN else "")
    raise ValueError(
        f"{where}: every feature column is constant ({shown}); no evidence can change a prediction, so "
        "there is nothing to audit. Add columns that vary between rows."
    )


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def check_finite_features(frame: pd.DataFrame, features: Sequence[str], where: str, *, row_offset: int = 0) -> None:
    """Refuse ``inf`` / ``-inf`` in numeric features, naming the first column, row and value.

    Rows are numbered from 1; an integer index is taken as the 0-based row number in the file
    (plus ``row_offset``, for a partition that starts later in the file).
    """
    for c in features:
        values = frame[c]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        i = _first_inf(values.to_numpy(dtype=np.float64, na_value=np.nan))
        if i is not None:
            label = frame.index[i]
            row = (
                f"row {row_offset + int(label) + 1}"
                if isinstance(label, (int, np.integer))
                else f"row {i + 1} (index {label!r})"
            )
            raise ValueError(
                f"{where}: column {c!r}, {row}: value {float(values.iloc[i])!r} is infinite; "
                "features must be finite numbers (leave the cell empty for missing)."
            )


def warn_constant_features(frame: pd.DataFrame, features: Sequence[str], where: str) -> list[str]:
    """Warn (:class:`ConstantFeatureWarning`) naming the features with a single value; return them."""
    constant = [c for c in features if frame[c].nunique(dropna=False) <= 1]
    if constant:
        shown = ", ".join(repr(c) for c in constant[:_SHOWN]) + (" ..." if len(constant) > _SHOWN else "")
        share = (
            "every feature is" if len(constant) == len(features) else f"{len(constant)} of {len(features)} features are"
        )
        warnings.warn(
            f"{where}: {share} constant ({shown}); a constant feature cannot carry evidence, "
            "so removing its group never changes a prediction.",
            ConstantFeatureWarning,
            stacklevel=3,
        )
    return constant


#: Largest file the dashboard accepts per upload, in MiB (the CLIs have no limit).
UPLOAD_LIMIT_MB = 50


def check_upload_size(data: bytes, file_name: str, *, limit_mb: int = UPLOAD_LIMIT_MB) -> None:
    """Refuse an upload larger than ``limit_mb`` megabytes (MiB) with a message naming the file."""
    size = len(data)
    if size > limit_mb * 1024**2:
        raise ValueError(
            f"{file_name!r} is {size / 1024**2:.1f} MB; uploads are limited to {limit_mb} MB. "
            "Use the command line (`python -m core paired --help`, `python -m core audit --help`) "
            "for larger files."
        )
