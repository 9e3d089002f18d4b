"""CSV exports that a spreadsheet cannot execute: formula cells neutralised (CSV injection).

A spreadsheet that opens a CSV evaluates a cell beginning with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``, ``@SUM(1+1)``), and a leading tab or
carriage return can hide such a cell or make an importer strip it down to one. Every CSV the
tool writes carries text it does not control: class labels and column names of an uploaded
table, reviewers' notes, model names. This module follows OWASP's guidance on CSV injection
(https://owasp.org/www-community/attacks/CSV_Injection):

**The rule.** A *text* cell (a ``str`` value of an ``object``, ``string`` / ``str`` or
``category`` column) that begins with one of :data:`FORMULA_PREFIXES` (``=``, ``+``, ``-``,
``@``, tab ``\\t``, carriage return ``\\r``) is written with a leading ``'`` (the spreadsheet
shows the text as typed and never evaluates it). Column names (the header row) follow the same
rule, and so do the index labels when the index is written. Everything else is written as is:

- numbers stay numbers: a float column holding ``-1.5`` is not prefixed, nor a Python number in
  an ``object`` column; booleans, dates and missing values are untouched;
- a *text* cell that looks like a number, ``"-1.5"`` in an ``object`` column, *is* prefixed
  (``'-1.5``): it begins with ``-``, and OWASP's rule is on the first character, not on what the
  rest parses as (``-1+cmd|...`` also begins like a negative number). A column meant to hold
  numbers should be numeric.

The value is otherwise unchanged (embedded quotes, separators and line breaks are quoted by the
CSV writer as usual; a file with a carriage return inside a text cell ends its lines in
``\\r\\n``, so that the writer quotes that cell on every Python version), so the raw value is
the cell with its one leading ``'`` removed, for the cells that begin with ``'`` followed by one
of :data:`FORMULA_PREFIXES`. Parquet and JSON files keep the raw values: only a CSV is opened
by spreadsheets.

:func:`neutralise` returns the neutralised frame; :func:`write_csv` (to a path or a text buffer
such as ``sys.stdout``) and :func:`csv_bytes` (UTF-8, for download buttons) neutralise and
write. Every CSV writer of the tool goes through one of them
(``tests/test_csv_safe.py::test_every_csv_writer_goes_through_csv_safe``).
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FORMULA_PREFIXES", "csv_bytes", "neutralise", "write_csv"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_PREFIXES: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
#: What a dangerous text cell is prefixed with.
_QUOTE = "'"


def _csv_quotes_cr() -> bool:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["a\rb"])
    return buffer.getvalue().startswith('"')


#: Whether this Python's csv writer quotes a field holding a bare carriage return (3.13 does,
#: 3.11 and 3.12 do not when lines end in ``\n``).
_QUOTES_CR = _csv_quotes_cr()


def _frame_iv(frame: Any) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}.")


def _dangerous(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(FORMULA_PREFIXES)


def _label(value: Any) -> Any:
    """One header / index label: a dangerous string prefixed, a tuple element-wise."""
    if isinstance(value, tuple):
        return tuple(_label(v) for v in value)
    return _QUOTE + value if _dangerous(value) else value


def _labels(index: pd.Index) -> pd.Index:
    """The labels of an axis (columns or index) with every dangerous string prefixed."""
    names = [_label(n) for n in index.names]
    if not isinstance(index, pd.MultiIndex) and not _is_text(index.dtype):
        if not isinstance(index.dtype, pd.CategoricalDtype) or not _text_mask(index.categories).any():
            # Numbers, dates, or categories without a dangerous label: only the name may change.
            return index if names == list(index.names) else index.rename(names[0])
    flat = index.to_flat_index() if isinstance(index, pd.MultiIndex) else index
    labels = [_label(v) for v in flat]
    if names == list(index.names) and labels == list(flat):
        return index  # nothing to prefix: the axis as it was (dtype included)
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples(labels, names=names)
    return pd.Index(labels, dtype=object if index.dtype == object else None, name=names[0], tupleize_cols=False)


def _text_mask(values: pd.Series | pd.Index, *, inside: str | None = None) -> np.ndarray:
    """Boolean mask of the text cells that begin with a formula prefix (vectorised).

    With ``inside``, of the text cells that hold that string anywhere instead.
    """
    try:
        if inside is None:
            mask = values.str.startswith(FORMULA_PREFIXES, na=False)
        else:
            mask = values.str.contains(inside, regex=False, na=False)
    except AttributeError:  # an object column holding no text at all (numbers, lists, None)
        return np.zeros(len(values), dtype=bool)
    mask = np.asarray(mask, dtype=object)
    # Non-text cells of a mixed object column come back as the ``na`` value or NaN: not text.
    return mask == True  # noqa: E712 (elementwise: NaN and None are not True)


def _neutral_text(values: pd.Series) -> pd.Series | None:
    """The text column with dangerous cells prefixed, or None when none is."""
    rows = np.flatnonzero(_text_mask(values))
    if not len(rows):
        return None
    out = values.copy()
    out.iloc[rows] = (_QUOTE + values.iloc[rows]).to_numpy()  # positional: duplicate labels are fine
    return out


def _neutral_category(values: pd.Series) -> pd.Series | None:
    categories = values.cat.categories
    if not _text_mask(categories).any():
        return None  # numeric or date categories, or no dangerous text
    renamed = pd.Index([_label(c) for c in categories], dtype=categories.dtype)
    if renamed.is_unique:  # renaming the categories: the codes (the rows) are not touched
        return values.cat.rename_categories(renamed)
    # "=x" and "'=x" both present: the renamed categories collide; fall back to text cells.
    return _neutral_text(values.astype(object))


def _is_text(dtype: Any) -> bool:
    return pd.api.types.is_object_dtype(dtype) or (
        pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    )


def _neutral_column(values: pd.Series) -> pd.Series | None:
    if isinstance(values.dtype, pd.CategoricalDtype):
        return _neutral_category(values)
    if _is_text(values.dtype):
        return _neutral_text(values)
    return None  # numbers, booleans, dates, intervals ...: written as they are


def _holds_cr(frame: pd.DataFrame, labels: list[Any]) -> bool:
    """Whether a text cell of ``frame`` or one of ``labels`` holds a carriage return."""
    if any(
        isinstance(v, str) and "\r" in v for label in labels for v in (label if isinstance(label, tuple) else (label,))
    ):
        return True
    for position in range(frame.shape[1]):
        values = frame.iloc[:, position]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.cat.categories
        elif not _is_text(values.dtype):
            continue
        if _text_mask(values, inside="\r").any():
            return True
    return False


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as it may be written to a CSV: text cells and column names safe to open.

    Parameters
    ----------
    frame : DataFrame, shape (n_rows, n_columns)
        Any frame. Left untouched.

    Returns
    -------
    DataFrame, shape (n_rows, n_columns)
        A new frame with the same index, dtypes and column order, where every text cell (``str``
        value of an ``object``, ``string`` or ``category`` column) and every column name that
        begins with one of :data:`FORMULA_PREFIXES` has a leading ``'``. Numbers, missing values
        and other cells are unchanged; category columns keep their dtype (the categories are
        renamed; when both ``"=x"`` and ``"'=x"`` are categories, the column becomes ``object``). The index is not touched (:func:`write_csv` neutralises it when it writes it).

    Raises
    ------
    ValueError
        ``frame`` is not a DataFrame.

    Examples
    --------
    >>> frame = pd.DataFrame({"=cmd": ["=1+1", "@SUM(1+1)", "ok", "-1.5"], "x": [-1.5, 2.0, 0.0, 1.0]})
    >>> neutralise(frame)
       '=cmd     x
    0      '=1+1 -1.5
    1  '@SUM(1+1)  2.0
    2         ok  0.0
    3      '-1.5  1.0
    """
    _frame_iv(frame)
    out = frame.copy(deep=False)  # new containers; columns replaced below, never written into
    for position in range(out.shape[1]):
        replaced = _neutral_column(out.iloc[:, position])
        if replaced is not None:
            out.isetitem(position, replaced)
    out.columns = _labels(frame.columns)
    return out


def _kwargs_iv(kwargs: dict[str, Any]) -> None:
    if "path_or_buf" in kwargs:
        raise ValueError(
            f"`path_or_buf` is not an option here; got {kwargs['path_or_buf']!r}. "
            "Pass the destination as `dest` of write_csv (csv_bytes returns the bytes)."
        )


def _prepared(frame: pd.DataFrame, kwargs: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The neutralised frame, its index too when written, and header aliases made safe."""
    _frame_iv(frame)
    _kwargs_iv(kwargs)
    if kwargs.get("columns") is not None:  # chosen by their raw names, before they are prefixed
        frame = frame.loc[:, list(kwargs["columns"])]
        kwargs = {k: v for k, v in kwargs.items() if k != "columns"}
    out = neutralise(frame)
    labels = [*out.columns, *out.columns.names]
    if kwargs.get("index", True):
        out.index = _labels(frame.index)
        labels += [*out.index, *out.index.names]
    header = kwargs.get("header", True)
    if isinstance(header, (list, tuple)):
        kwargs = {**kwargs, "header": [_label(h) for h in header]}
    index_label = kwargs.get("index_label")
    if index_label is not None and index_label is not False:
        kwargs = {
            **kwargs,
            "index_label": [_label(v) for v in index_label] if isinstance(index_label, list) else _label(index_label),
        }
    # A carriage return inside a cell, left unquoted, starts a new row in a spreadsheet: that
    # row's first cell ("ok\r=HYPERLINK(...)") would escape the rule. The csv module quotes a
    # field holding a character of the line terminator, so such a file ends its lines in \r\n.
    if not _QUOTES_CR and "lineterminator" not in kwargs and _holds_cr(out, labels):
        kwargs = {**kwargs, "lineterminator": "\r\n"}
    return out, kwargs


def write_csv(frame: pd.DataFrame, dest: str | os.PathLike[str] | Any, **to_csv_kwargs: Any) -> None:
    """Write ``frame`` as CSV with its formula cells neutralised (:func:`neutralise`).

    Parameters
    ----------
    frame : DataFrame
        The table; left untouched.
    dest : str, path-like or text buffer
        A file path (written directly: for an atomic file pass the temporary path of
        :func:`core.atomic.atomic_path`) or an open text stream such as ``sys.stdout``.
    **to_csv_kwargs
        Passed to :meth:`pandas.DataFrame.to_csv` (``index=False`` ...). When the index is
        written (pandas' default), its labels are neutralised too, and so are ``header`` and
        ``index_label`` aliases; ``columns`` names the raw column names. When a text cell or
        label holds a carriage return and this Python's csv writer would not quote it (3.11,
        3.12), the lines end in ``\\r\\n`` unless ``lineterminator`` is given: a bare ``\\r``
        left unquoted starts a new row in a spreadsheet, whose first cell would escape the rule.

    Raises
    ------
    ValueError
        ``frame`` is not a DataFrame, ``dest`` is neither a path nor a writable buffer, or
        ``path_or_buf`` is given.

    Examples
    --------
    >>> import sys
    >>> write_csv(pd.DataFrame({"label": ["=1+1", "cat"], "p": [-0.5, 1.0]}), sys.stdout, index=False)
    label,p
    '=1+1,-0.5
    cat,1.0
    """
    if not isinstance(dest, (str, os.PathLike)) and not callable(getattr(dest, "write", None)):
        raise ValueError(
            f"`dest` must be a file path or a text buffer with a write() method; got {type(dest).__name__}."
        )
    out, kwargs = _prepared(frame, to_csv_kwargs)
    out.to_csv(dest, **kwargs)


def csv_bytes(frame: pd.DataFrame, **to_csv_kwargs: Any) -> bytes:
    """``frame`` as UTF-8 CSV bytes with its formula cells neutralised (for download buttons).

    Parameters
    ----------
    frame : DataFrame
        The table; left untouched.
    **to_csv_kwargs
        As for :func:`write_csv`; ``encoding``, when given, must be UTF-8.

    Returns
    -------
    bytes
        The CSV text encoded as UTF-8.

    Raises
    ------
    ValueError
        ``frame`` is not a DataFrame, ``path_or_buf`` is given or ``encoding`` is not UTF-8.

    Examples
    --------
    >>> csv_bytes(pd.DataFrame({"note": ['=HYPERLINK("http://evil.example","click")']}), index=False)
    b'note\\n"\\'=HYPERLINK(""http://evil.example"",""click"")"\\n'
    """
    encoding = to_csv_kwargs.pop("encoding", "utf-8")
    if str(encoding).lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise ValueError(f"`encoding` of csv_bytes is always UTF-8; got {encoding!r}.")
    out, kwargs = _prepared(frame, to_csv_kwargs)
    return out.to_csv(**kwargs).encode("utf-8")
