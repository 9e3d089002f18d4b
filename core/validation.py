"""The validation layer: the one home of every check on what a user gives the tool.

Every entry point — the commands of ``python -m core``, the Python API and the dashboard —
validates here, so one input gets one verdict everywhere:

- **tables**: :func:`read_table` is the one reader of a user's CSV / Parquet file (``audit``
  and its ``--model-file`` tables, paired records, screening outputs, the dashboard uploads):
  size limit, empty files, binary content renamed ``.csv`` (images, archives, pickles, Parquet),
  NUL bytes, non-UTF-8 text, repeated header names, the format told by the suffix and checked
  against the content; :func:`check_table` then checks an audit table's columns and cells;
- **scalars**: :func:`check_seed`, :func:`check_positive_int` / :func:`check_batch_size`,
  :func:`check_budget`, :func:`check_share`, :func:`check_unit_interval` / :func:`check_tau`,
  used by the public functions, the views and (through :mod:`core.cli.options`) the CLI types.

Each check runs before any output exists and raises ``ValueError`` (or ``FileNotFoundError``)
with a message naming the file, the row, the column and the value, and what was expected.

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

import bz2
import csv
import gzip
import io
import lzma
import math
import numbers
import os
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
import pandas as pd

from core.exceptions import ConstantFeatureWarning

__all__ = [
    "MAX_CLASSES",
    "TABLE_SUFFIXES",
    "UPLOAD_LIMIT_MB",
    "ConstantFeatureWarning",
    "TableOrigin",
    "UserTable",
    "check_batch_size",
    "check_budget",
    "check_cells",
    "check_finite_features",
    "check_informative_features",
    "check_input_file",
    "check_positive_int",
    "check_seed",
    "check_share",
    "check_table",
    "check_table_content",
    "check_tau",
    "check_text_table",
    "check_unique_columns",
    "check_unit_interval",
    "check_upload_size",
    "csv_delimiter",
    "csv_header_duplicate",
    "read_table",
    "table_bytes",
    "table_format",
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


def check_tau(tau: Any, *, name: str = "tau") -> float:
    """An acceptance threshold τ in [0, 1] (:func:`check_unit_interval`: ``'0.8'``, ``True``, NaN refused)."""
    return check_unit_interval(tau, name)


# ---------------------------------------------------------------------------------------------
# Scalars: one check per kind of number, shared by the Python API, the views and the CLI types


def _shown(value: Any) -> str:
    """repr of a value as the caller wrote it (numpy 2 would print ``np.float64(0.5)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_seed(seed: Any, *, name: str = "seed", max_bits: int | None = None) -> int:
    """``seed`` as a Python int: a non-negative integer (bools and floats refused).

    ``max_bits=32`` also requires ``seed < 2**32`` (scikit-learn's ``random_state`` range).

    Examples
    --------
    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: `seed` must be a non-negative int; got -1.
    >>> check_seed(2**32, max_bits=32)
    Traceback (most recent call last):
    ...
    ValueError: `seed` must be an int in [0, 2**32); got 4294967296.
    """
    if max_bits is not None:
        if not _is_int(seed) or not 0 <= seed < 2**max_bits:
            raise ValueError(f"`{name}` must be an int in [0, 2**{max_bits}); got {_shown(seed)}.")
    elif not _is_int(seed) or seed < 0:
        raise ValueError(f"`{name}` must be a non-negative int; got {_shown(seed)}.")
    return int(seed)


def check_positive_int(value: Any, name: str, *, allow_none: bool = False, what: str | None = None) -> int | None:
    """``value`` as a Python int >= 1 (or None when ``allow_none``); bools and floats refused.

    ``what`` says in the message what the number counts (``"rows per predict_proba call"``).

    Examples
    --------
    >>> check_positive_int(3, "n_draws")
    3
    >>> check_positive_int(0, "workers")
    Traceback (most recent call last):
    ...
    ValueError: `workers` must be a positive int; got 0.
    """
    if allow_none and value is None:
        return None
    if not _is_int(value) or value < 1:
        kind = "a positive int" + (" or None" if allow_none else "") + (f" ({what})" if what else "")
        raise ValueError(f"`{name}` must be {kind}; got {_shown(value)}.")
    return int(value)


def check_batch_size(batch_size: Any) -> int:
    """Rows per model call: a positive int (bounds the memory of a batched ``predict_proba``)."""
    return check_positive_int(batch_size, "batch_size", what="rows per predict_proba call")


def check_budget(q: Any, *, name: str = "q") -> float:
    """A review budget: a real fraction in (0, 1] (``True`` refused); returned as a float.

    Examples
    --------
    >>> check_budget(0.2)
    0.2
    >>> check_budget(0, name="budget")
    Traceback (most recent call last):
    ...
    ValueError: `budget` must be a fraction in (0, 1]; got 0.
    """
    if not _is_real(q) or not 0.0 < float(q) <= 1.0:
        raise ValueError(f"`{name}` must be a fraction in (0, 1]; got {_shown(q)}.")
    return float(q)


def check_share(value: Any, name: str) -> float:
    """A share of rows strictly between 0 and 1 (a validation or test part); returned as a float.

    Examples
    --------
    >>> check_share(0.2, "val_size")
    0.2
    >>> check_share(1.5, "val_size")
    Traceback (most recent call last):
    ...
    ValueError: `val_size` must be a share in (0, 1); got 1.5.
    """
    if not _is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"`{name}` must be a share in (0, 1); got {_shown(value)}.")
    return float(value)


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


# ---------------------------------------------------------------------------------------------
# The one reader of a user's table

TableFormat = Literal["csv", "parquet"]

#: Suffixes :func:`read_table` reads, by format; a CSV may also be compressed (``.csv.gz``,
#: ``.csv.bz2``, ``.csv.xz``, ``.csv.zip``, likewise ``.tsv``).
TABLE_SUFFIXES: dict[str, TableFormat] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
# Compression suffix -> (leading bytes, what the file is called in messages).
_COMPRESSED = {
    ".gz": (b"\x1f\x8b", "gzip"),
    ".bz2": (b"BZh", "bzip2"),
    ".xz": (b"\xfd7zXZ\x00", "xz"),
    ".zip": (b"PK\x03\x04", "ZIP"),
}
_SUFFIX_HELP = (
    "expected a .csv, .tsv, .txt or .parquet file (a CSV may be compressed: .csv.gz, .csv.bz2, .csv.xz, .csv.zip)"
)
# Delimiters tried, in order, when a CSV header holds no comma (spreadsheet exports in some locales).
_OTHER_DELIMITERS = (";", "\t", "|")


@dataclass(frozen=True)
class TableOrigin:
    """Where a table came from, to name rows the way the user sees them.

    Rows are numbered from 1 in file order; a CSV row also gets its file line (the header is
    line 1), a frame whose index is not its row position gets the index label.

    Examples
    --------
    >>> TableOrigin("r.csv", csv=True).row(2)
    'r.csv, row 3 (line 4)'
    >>> TableOrigin("`records`").row(0, index="a")
    "`records`, row 1 (index 'a')"
    """

    name: str
    csv: bool = False
    offset: int = 0  # rows of the file before this frame (a streamed batch)

    def row(self, position: int, index=None) -> str:
        where = f"{self.name}, row {self.offset + position + 1}"
        if self.offset:
            return where
        if self.csv:
            return f"{where} (line {position + 2})"
        if index is not None and not (isinstance(index, (int, np.integer)) and int(index) == position):
            return f"{where} (index {index!r})"
        return where


@dataclass(frozen=True, kw_only=True)
class UserTable:
    """A user's table as :func:`read_table` read it: raw cells, nothing typed or dropped.

    Attributes
    ----------
    frame : DataFrame of shape (n_rows, n_columns)
        Column names as ``str`` (unique), index ``0 .. n_rows - 1`` (the data row in the file).
    name : str
        How messages name the file (the path as given, or an upload's name).
    format : {"csv", "parquet"}
    delimiter : str or None
        The CSV delimiter used (None for Parquet).
    """

    frame: pd.DataFrame
    name: str
    format: TableFormat
    delimiter: str | None = None

    @property
    def origin(self) -> TableOrigin:
        """How row messages name this table's rows (with the CSV line)."""
        return TableOrigin(self.name, csv=self.format == "csv")


def _suffixes(name: str) -> tuple[str, str | None]:
    """(table suffix, compression suffix or None) of a file name, lower-cased."""
    parts = [s.lower() for s in Path(name).suffixes]
    if len(parts) >= 2 and parts[-1] in _COMPRESSED:
        return parts[-2], parts[-1]
    return (parts[-1] if parts else ""), None


def table_format(name: str, *, file_format: Literal["auto", "csv", "parquet"] = "auto") -> TableFormat:
    """The format of a table file from its name (``file_format`` overrides the suffix).

    Examples
    --------
    >>> table_format("runs/records.csv.gz"), table_format("x.pq"), table_format("x.dat", file_format="csv")
    ('csv', 'parquet', 'csv')
    >>> table_format("book.xlsx")
    Traceback (most recent call last):
    ...
    ValueError: 'book.xlsx': cannot tell the format from the suffix '.xlsx' (unknown file type); expected a .csv, .tsv, .txt or .parquet file (a CSV may be compressed: .csv.gz, .csv.bz2, .csv.xz, .csv.zip).
    """
    _check_file_format(file_format)
    if file_format != "auto":
        return file_format
    suffix, compression = _suffixes(name)
    fmt = TABLE_SUFFIXES.get(suffix)
    if fmt is None or (compression is not None and fmt != "csv"):
        shown = suffix + (compression or "")
        told = f"from the suffix {shown!r}" if shown else "without a suffix"
        raise ValueError(f"{name!r}: cannot tell the format {told} (unknown file type); {_SUFFIX_HELP}.")
    return fmt


def _check_file_format(file_format: Any) -> None:
    if file_format not in ("auto", "csv", "parquet"):
        raise ValueError(f"`file_format` must be 'auto', 'csv' or 'parquet'; got {file_format!r}.")


def csv_delimiter(header: str, name: str = "") -> str:
    """The delimiter of a CSV table from its header line: tab for ``.tsv``, else ``,`` unless the
    header has no comma but a ``;``, tab or ``|`` (spreadsheet exports in some locales).

    Examples
    --------
    >>> csv_delimiter("a;b;c"), csv_delimiter("a,b"), csv_delimiter("a\\tb", "x.tsv"), csv_delimiter("y")
    (';', ',', '\\t', ',')
    """
    if _suffixes(name)[0] == ".tsv":
        return "\t"
    if "," in header:
        return ","
    return next((d for d in _OTHER_DELIMITERS if d in header), ",")


def _decompress(raw: bytes, name: str, compression: str) -> bytes:
    """The CSV inside a compressed file, refused unless the content is of the suffix's kind."""
    magic, kind = _COMPRESSED[compression]
    if not raw.startswith(magic):
        raise ValueError(f"{name!r} is not a {kind} file (its suffix says so, its first bytes do not).")
    try:
        if compression == ".gz":
            return gzip.decompress(raw)
        if compression == ".bz2":
            return bz2.decompress(raw)
        if compression == ".xz":
            return lzma.decompress(raw)
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            members = [m for m in zf.infolist() if not m.is_dir()]
            if len(members) != 1:
                raise ValueError(f"{name!r} holds {len(members)} files; a zipped table must hold exactly one CSV file.")
            return zf.read(members[0])
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{name!r} could not be decompressed as {kind}: {exc}") from None


def table_bytes(source: Any, *, name: str | None = None, max_bytes: int | None = None) -> tuple[bytes, str]:
    """The bytes of a table (a path, bytes or a binary file object) and how messages name it.

    A path must exist and be a file (``FileNotFoundError`` otherwise); a file object (e.g. a
    Streamlit upload) is read from its start, named by its ``name`` attribute. ``max_bytes``
    refuses a larger file before it is read. An empty file is refused.
    """
    if max_bytes is not None:
        check_positive_int(max_bytes, "max_bytes")
    if isinstance(source, (str, os.PathLike)):
        path = check_input_file(source, what="table")
        label = str(source) if name is None else name
        _check_table_size(label, path.stat().st_size, max_bytes)
        raw = path.read_bytes()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "uploaded table"
        raw = bytes(source)
    elif hasattr(source, "read"):
        label = name or Path(str(getattr(source, "name", "") or "uploaded table")).name
        if hasattr(source, "seek"):  # a Streamlit upload may have been read before
            source.seek(0)
        size = getattr(source, "size", None)
        if _is_int(size):
            _check_table_size(label, int(size), max_bytes)
        raw = source.read() if max_bytes is None else source.read(max_bytes + 1)
        if isinstance(raw, str):
            raise ValueError(f"{label!r}: open the file in binary mode ('rb'); got a text stream.")
        raw = bytes(raw)
    else:
        raise ValueError(f"`source` must be a path, bytes or a binary file object; got {type(source).__name__}.")
    _check_table_size(label, len(raw), max_bytes)
    return raw, label


def _check_table_size(label: str, size: int, max_bytes: int | None) -> None:
    if size == 0:
        raise ValueError(f"{label!r} is empty (0 bytes).")
    if max_bytes is not None and size > max_bytes:
        raise ValueError(
            f"{label!r} is {size / 1024**2:.1f} MiB, over the limit of {max_bytes / 1024**2:.1f} MiB "
            "(`max_bytes`); sample the rows first or raise the limit."
        )


def check_table_content(raw: bytes, name: str, fmt: TableFormat) -> bytes:
    """The bytes of a table of format ``fmt`` checked against its content (decompressed if the
    name says so): Parquet must start with ``PAR1``; a CSV must be text
    (:func:`check_text_table`) without a repeated header name. Returns the table's bytes."""
    _, compression = _suffixes(name)
    if compression is not None:
        raw = _decompress(raw, name, compression)
        if not raw:
            raise ValueError(f"{name!r} holds an empty file.")
    if fmt == "parquet":
        if not raw.startswith(b"PAR1"):
            raise ValueError(
                f"{name!r} is not a Parquet file: it does not start with 'PAR1', so it could not be read as "
                "Parquet. Is it a CSV?"
            )
        return raw
    check_text_table(raw, name)
    header = raw[:_HEAD].split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    dup = csv_header_duplicate(raw, csv_delimiter(header, name))
    if dup is not None:
        raise ValueError(
            f"{name!r}: column name {dup!r} occurs more than once in the header; column names must be unique."
        )
    return raw


def read_table(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    name: str | None = None,
    file_format: Literal["auto", "csv", "parquet"] = "auto",
    na_values: Sequence[str | float] | None = None,
    max_bytes: int | None = None,
) -> UserTable:
    """Read a user's CSV or Parquet table, refusing anything that is not one, with the file named.

    The one reader of every table a user gives the tool (``audit --data`` / ``--train`` /
    ``--test``, paired records and screening outputs, the dashboard uploads). It refuses, naming
    the file: a missing path or a folder, an empty file, a file over ``max_bytes``, an unknown
    suffix, content of another kind than the suffix says (a PNG, PDF, ZIP / xlsx, gzip, pickle or
    Parquet file renamed ``.csv``; a CSV renamed ``.parquet``), NUL bytes, text that is not UTF-8,
    a column name that occurs twice (pandas would rename the second ``Time`` to ``Time.1``),
    malformed CSV, and a table without data rows. Cells are kept as read (no typing).

    Parameters
    ----------
    source : path, bytes or binary file object
        ``.csv`` / ``.tsv`` / ``.txt`` (optionally ``.gz``, ``.bz2``, ``.xz``, ``.zip``) or
        ``.parquet`` / ``.pq``. A file object (e.g. a Streamlit upload) is named by its ``name``.
    name : str, optional
        How messages name the file, and the name whose suffix tells the format; default the
        path as given (the file object's base name; ``"uploaded table"`` for bare bytes).
    file_format : {"auto", "csv", "parquet"}, default "auto"
        ``"auto"`` tells the format from the suffix of ``name``.
    na_values : sequence of str or float, optional
        Extra values read as missing (e.g. a sentinel code such as ``99999999``).
    max_bytes : int, optional
        Largest file accepted (no limit by default).

    Returns
    -------
    UserTable
        The frame (column names as ``str``), its name, format and CSV delimiter.

    Raises
    ------
    FileNotFoundError
        ``source`` is a path that does not exist.
    ValueError
        Everything else listed above; the message names the file and what was expected.

    Examples
    --------
    >>> read_table(b"x;y\\n1;a\\n2;b\\n", name="t.csv").frame
       x  y
    0  1  a
    1  2  b
    >>> read_table(b"x,y,x\\n1,2,3\\n", name="t.csv")
    Traceback (most recent call last):
    ...
    ValueError: 't.csv': column name 'x' occurs more than once in the header; column names must be unique.
    """
    _check_file_format(file_format)  # before the file is read
    raw, label = table_bytes(source, name=name, max_bytes=max_bytes)
    fmt = table_format(label, file_format=file_format)
    raw = check_table_content(raw, label, fmt)
    delimiter = None
    if fmt == "parquet":
        try:
            frame = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            raise ValueError(f"{label!r} could not be read as Parquet: {exc}") from None
        check_unique_columns(frame.columns, repr(label))
        if na_values:
            frame = frame.replace(list(na_values), np.nan)
    else:
        header = raw[:_HEAD].split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
        delimiter = csv_delimiter(header, label)
        frame = _read_csv(raw, label, delimiter, [str(v) for v in na_values] if na_values else None)
    frame.columns = [str(c) for c in frame.columns]
    if frame.shape[0] == 0:
        raise ValueError(f"{label!r} has a header but no data rows.")
    return UserTable(frame=frame, name=label, format=fmt, delimiter=delimiter)


def _read_csv(raw: bytes, label: str, sep: str, na_values: list[str] | None) -> pd.DataFrame:
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark, which would
        # otherwise end up in the first column name.
        return pd.read_csv(io.BytesIO(raw), sep=sep, na_values=na_values, low_memory=False, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{label!r} is empty (no header, no rows).") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{label!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 CSV or Parquet."
        ) from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"{label!r} is not a well-formed CSV table: {exc}".rstrip()) from None
