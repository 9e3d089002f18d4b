"""A user's table (a CSV or Parquet file, or an upload) as a :class:`~core.tabular.dataset.Dataset`.

The file is read by :func:`core.validation.read_table`, the one reader of a user's table
(size limit, binary or compressed content renamed ``.csv``, NUL bytes, non-UTF-8 text, repeated
header names, the format checked against the content), then typed and validated by
:func:`core.tabular.dataset.build_dataset`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal

from core.tabular.dataset import Dataset, build_dataset, resolve_blocks
from core.validation import read_table

__all__ = ["DEFAULT_MAX_BYTES", "load_user_data"]

#: Default upper bound on the size of a user file (Streamlit's default upload limit).
DEFAULT_MAX_BYTES = 200 * 1024**2


def load_user_data(
    source: str | os.PathLike[str] | BinaryIO,
    target: str,
    *,
    features: Sequence[str] | None = None,
    blocks: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    positive_class: Any = None,
    name: str | None = None,
    file_format: Literal["auto", "csv", "parquet"] = "auto",
    na_values: Sequence[str | float] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Dataset:
    """Load and validate a user's CSV or Parquet table.

    Parameters
    ----------
    source : path or binary file object
        A ``.csv``/``.tsv``/``.txt`` (optionally compressed: ``.csv.gz`` ...) or
        ``.parquet``/``.pq`` file, read by :func:`core.validation.read_table`. A file object
        (e.g. a Streamlit upload) should have a ``name`` attribute unless ``file_format`` is given.
    target : str
        The target column. Rows with a missing target are dropped (recorded in ``notes``).
    features : sequence of str, optional
        Feature columns to use. Default: every other column except identifier-like ones
        (all values distinct and either text, or integers with an id-like name or in
        monotone order), which are excluded with a warning.
    blocks : mapping or path, optional
        Domain blocks, as ``{raw column: block}`` or ``{block: [raw columns]}``, or a YAML /
        JSON file holding either form. Features left out become one-column blocks.
    positive_class : label, optional
        Positive class of a binary target. Default: ``1`` for a 0/1 target, otherwise the
        minority class (the later label in sorted order on a tie).
    name : str, optional
        Dataset name; default the file stem.
    file_format : {'auto', 'csv', 'parquet'}, default='auto'
        'auto' decides from the file suffix.
    na_values : sequence of str or float, optional
        Extra values to read as missing (e.g. a sentinel code such as ``99999999``).
    max_bytes : int, default=DEFAULT_MAX_BYTES
        Files larger than this are refused before reading.

    Returns
    -------
    Dataset

    Raises
    ------
    FileNotFoundError
        If ``source`` is a path that does not exist.
    ValueError
        Empty or oversized file, content that is not a table (see
        :func:`core.validation.read_table`), unknown target or feature column, single-class
        target, more than :data:`~core.validation.MAX_CLASSES` classes, an all-missing feature
        column, malformed blocks. Messages name the file and the column.

    Warns
    -----
    DatasetNoteWarning
        For excluded identifier-like columns, dropped rows and columns read as numeric.
    """
    # Messages name a file by its base name, as the user chose it (a path is printed by the CLI).
    label = Path(source).name if isinstance(source, (str, os.PathLike)) else None
    table = read_table(source, name=label, file_format=file_format, na_values=na_values, max_bytes=max_bytes)
    frame, label = table.frame, table.name
    if frame.shape[1] < 2:
        raise ValueError(
            f"{label!r} has a single column ({frame.columns[0]!r}); a table needs a target and at least "
            "one feature column. Is the delimiter right?"
        )
    stem = Path(label).stem or "data"
    return build_dataset(
        frame,
        target,
        name=name or stem,
        where=label,
        features=features,
        positive_class=positive_class,
        blocks=resolve_blocks(blocks) if blocks is not None else None,
        description=f"User data from {label} ({len(frame):,} rows), target {target!r}.",
        source=label,
        detect_ids=features is None,
    )
