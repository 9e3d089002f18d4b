"""Large synthetic tables drawn from a fitted copy of a bundled dataset, for scale tests.

The generator is a *smoothed class-conditional bootstrap* — a kernel density estimate per
class — fitted to a :class:`core.tabular.datasets.Dataset`:

1. draw the class of each row from the observed class shares;
2. draw a template row uniformly from that class's rows;
3. numeric columns: add Gaussian noise of standard deviation ``bandwidth`` x the column's
   standard deviation within the class, clip to the observed range, and round columns that
   only hold integers; a missing value stays missing (missingness patterns are kept), and a
   point mass (a value held by at least :data:`ATOM_SHARE` of the class, such as a debt of 0
   or a 36-month term) is kept exact, so zero-inflated columns stay zero-inflated;
4. categorical columns: with probability ``swap`` replace the template's level by a draw
   from the class's observed level frequencies (missing counts as a level).

Rows keep the dependence between columns of the template row, so a model fitted on the
synthetic data behaves like one fitted on the original, while every row is new.

Rows are produced in blocks of :data:`BLOCK_ROWS` rows, block ``b`` from the ``b``-th child of
``as_generator(seed)``, so ``sample(n)`` is always the first ``n`` rows of one infinite seeded
stream: the 10k table is a prefix of the 1M table, and writing in any chunk size gives the same
rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from core._rng import as_generator
from core.atomic import atomic_path
from core.csv_safe import neutralise
from core.validation import check_positive_int

__all__ = ["ATOM_SHARE", "BLOCK_ROWS", "SyntheticTable", "fit_synthetic", "write_synthetic"]

BLOCK_ROWS = 65_536
#: Share of a class's rows above which a numeric value counts as a point mass.
ATOM_SHARE = 0.05


@dataclass(frozen=True, eq=False)
class _ClassRows:
    numeric: np.ndarray  # (n_c, p_num) float64, NaN = missing
    atom: np.ndarray  # (n_c, p_num) bool: the value is a point mass, never jittered
    categorical: np.ndarray  # (n_c, p_cat) int64 codes, -1 = missing
    jitter: np.ndarray  # (p_num,) noise standard deviation per numeric column
    level_cdf: tuple[np.ndarray, ...]  # per categorical column: CDF over (levels..., missing)


@dataclass(frozen=True, eq=False, kw_only=True)
class SyntheticTable:
    """A fitted generator of rows resembling a dataset (see the module docstring).

    Attributes
    ----------
    name : str
        Name of the dataset it was fitted to.
    columns : tuple of str
        Output columns in order: the dataset's features, then the target.
    target : str
    classes : tuple
        Class labels; ``class_share[c]`` is the share of ``classes[c]``.
    class_share : ndarray of shape (n_classes,)
    numeric, categorical : tuple of str
    levels : tuple of tuple of str
        Levels of each categorical column (sorted).
    integer : ndarray of bool, shape (n_numeric,)
        Numeric columns that only hold integers (synthetic values are rounded).
    low, high : ndarray of shape (n_numeric,)
        Observed range of each numeric column (synthetic values are clipped to it).
    bandwidth, swap : float
        Fitting parameters.
    """

    name: str
    columns: tuple[str, ...]
    target: str
    classes: tuple[Any, ...]
    class_share: np.ndarray
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    integer: np.ndarray
    low: np.ndarray
    high: np.ndarray
    bandwidth: float
    swap: float
    _per_class: tuple[_ClassRows, ...]

    def block(self, index: int, *, seed: int) -> pd.DataFrame:
        """Rows ``[index * BLOCK_ROWS, (index + 1) * BLOCK_ROWS)`` of the stream of ``seed``."""
        rng = as_generator(seed).spawn(index + 1)[index]
        n = BLOCK_ROWS
        y = np.searchsorted(np.cumsum(self.class_share), rng.random(n), side="right")
        y = np.minimum(y, len(self.classes) - 1)
        num = np.empty((n, len(self.numeric)))
        cat = np.empty((n, len(self.categorical)), dtype=np.int64)
        for c, rows in enumerate(self._per_class):
            at = np.flatnonzero(y == c)
            template = rng.integers(rows.numeric.shape[0], size=at.size)
            noise = rng.standard_normal((at.size, len(self.numeric))) * rows.jitter
            num[at] = rows.numeric[template] + np.where(rows.atom[template], 0.0, noise)
            codes = rows.categorical[template]
            swapped = rng.random(codes.shape) < self.swap
            for j, cdf in enumerate(rows.level_cdf):
                draw = np.searchsorted(cdf, rng.random(at.size), side="right")
                # The last CDF slot is "missing" (code -1).
                draw = np.where(draw >= len(cdf) - 1, -1, draw)
                codes[:, j] = np.where(swapped[:, j], draw, codes[:, j])
            cat[at] = codes
        num = np.clip(num, self.low, self.high)
        num[:, self.integer] = np.round(num[:, self.integer])
        out: dict[str, Any] = {}
        for j, name in enumerate(self.numeric):
            out[name] = num[:, j]
        for j, name in enumerate(self.categorical):
            levels = np.asarray(self.levels[j] + (None,), dtype=object)
            out[name] = pd.array(levels[cat[:, j]], dtype="str")
        out[self.target] = (
            pd.array(np.asarray(self.classes, dtype=object)[y], dtype="str")
            if isinstance(self.classes[0], str)
            else np.asarray(self.classes)[y]
        )
        return pd.DataFrame(out)[list(self.columns)]

    def iter_blocks(self, n_rows: int, *, seed: int) -> Iterator[pd.DataFrame]:
        """The first ``n_rows`` rows of the stream, one block (at most BLOCK_ROWS rows) at a time."""
        if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 0:
            raise ValueError(f"`n_rows` must be a non-negative int; got {n_rows!r}.")
        for b in range(-(-int(n_rows) // BLOCK_ROWS)):
            frame = self.block(b, seed=seed)
            yield frame.iloc[: n_rows - b * BLOCK_ROWS] if (b + 1) * BLOCK_ROWS > n_rows else frame

    def sample(self, n_rows: int, *, seed: int) -> pd.DataFrame:
        """The first ``n_rows`` rows of the stream of ``seed`` as one DataFrame.

        Examples
        --------
        >>> from core.tabular.datasets import load_dataset
        >>> gen = fit_synthetic(load_dataset("credit_data"))
        >>> a, b = gen.sample(10, seed=0), gen.sample(100, seed=0)
        >>> a.equals(b.iloc[:10])
        True
        """
        blocks = list(self.iter_blocks(n_rows, seed=seed))
        if not blocks:
            return self.block(0, seed=seed).iloc[:0]
        return pd.concat(blocks, ignore_index=True)


def fit_synthetic(dataset, *, bandwidth: float = 0.1, swap: float = 0.1) -> SyntheticTable:
    """Fit the smoothed class-conditional bootstrap to ``dataset`` (deterministic, no seed).

    Parameters
    ----------
    dataset : core.tabular.datasets.Dataset
    bandwidth : float, default 0.1
        Gaussian jitter of numeric columns, in within-class standard deviations; ``>= 0``.
    swap : float, default 0.1
        Probability that a categorical value is redrawn from the class's level frequencies;
        in ``[0, 1]``.

    Returns
    -------
    SyntheticTable
    """
    if not (isinstance(bandwidth, (int, float)) and not isinstance(bandwidth, bool) and bandwidth >= 0):
        raise ValueError(f"`bandwidth` must be a number >= 0; got {bandwidth!r}.")
    if not (isinstance(swap, (int, float)) and not isinstance(swap, bool) and 0 <= swap <= 1):
        raise ValueError(f"`swap` must be a probability in [0, 1]; got {swap!r}.")
    frame = dataset.frame
    y = dataset.y
    numeric, categorical = tuple(dataset.numeric), tuple(dataset.categorical)
    num_all = frame[list(numeric)].to_numpy(dtype=np.float64, na_value=np.nan) if numeric else np.empty((len(frame), 0))
    levels, cat_all = [], np.empty((len(frame), len(categorical)), dtype=np.int64)
    for j, name in enumerate(categorical):
        col = frame[name]
        lv = tuple(sorted(col.dropna().astype(str).unique()))
        levels.append(lv)
        codes = pd.Categorical(col.astype(object).where(col.notna(), None), categories=list(lv)).codes
        cat_all[:, j] = codes
    finite = np.where(np.isnan(num_all), 0.0, num_all)
    with np.errstate(invalid="ignore"):
        integer = np.all(finite == np.round(finite), axis=0)
    low, high = np.nanmin(num_all, axis=0), np.nanmax(num_all, axis=0)
    per_class = []
    for c in range(dataset.n_classes):
        rows = y == c
        num_c, cat_c = num_all[rows], cat_all[rows]
        with np.errstate(invalid="ignore"):
            spread = np.nan_to_num(np.nanstd(num_c, axis=0)) if num_c.shape[0] else np.zeros(len(numeric))
        atom = np.zeros(num_c.shape, dtype=bool)
        for j in range(num_c.shape[1]):
            values, inverse, counts_v = np.unique(num_c[:, j], return_inverse=True, return_counts=True)
            atom[:, j] = (counts_v >= ATOM_SHARE * num_c.shape[0])[inverse] & ~np.isnan(num_c[:, j])
        cdfs = []
        for j, lv in enumerate(levels):
            counts = np.bincount(np.where(cat_c[:, j] < 0, len(lv), cat_c[:, j]), minlength=len(lv) + 1)
            cdfs.append(np.cumsum(counts) / counts.sum())
        per_class.append(
            _ClassRows(numeric=num_c, atom=atom, categorical=cat_c, jitter=bandwidth * spread, level_cdf=tuple(cdfs))
        )
    counts = np.bincount(y, minlength=dataset.n_classes)
    return SyntheticTable(
        name=dataset.name,
        columns=tuple(dataset.features) + (dataset.target,),
        target=dataset.target,
        classes=tuple(dataset.classes),
        class_share=counts / counts.sum(),
        numeric=numeric,
        categorical=categorical,
        levels=tuple(levels),
        integer=integer,
        low=low,
        high=high,
        bandwidth=float(bandwidth),
        swap=float(swap),
        _per_class=tuple(per_class),
    )


def write_synthetic(
    table: SyntheticTable,
    path: str | Path,
    n_rows: int,
    *,
    seed: int,
    format: Literal["parquet", "csv"] = "parquet",
    row_group_rows: int = BLOCK_ROWS,
) -> Path:
    """Write the first ``n_rows`` rows of ``table``'s stream to ``path``, one block at a time.

    Memory stays at one block whatever ``n_rows`` is.

    Parameters
    ----------
    table : SyntheticTable
    path : str or Path
        Output file (parent folders are created); replaced atomically.
    n_rows : int
    seed : int
    format : {'parquet', 'csv'}, default 'parquet'
        A CSV has its formula cells neutralised (:mod:`core.csv_safe`); Parquet keeps raw values.
    row_group_rows : int, default BLOCK_ROWS
        Rows per Parquet row group.

    Returns
    -------
    Path
    """
    if format not in ("parquet", "csv"):
        raise ValueError(f"`format` must be 'parquet' or 'csv'; got {format!r}.")
    check_positive_int(row_group_rows, "row_group_rows")
    path = Path(path)
    # Written beside ``path`` under a temporary name and renamed when complete: a failure
    # (disk full, ``ulimit -f``, a kill) leaves the previous file byte-identical.
    with atomic_path(path) as tmp:
        writer = None
        try:
            for frame in table.iter_blocks(n_rows, seed=seed):
                # A CSV's formula cells are neutralised (core.csv_safe); Parquet keeps raw values.
                batch = pa.Table.from_pandas(frame if format == "parquet" else neutralise(frame), preserve_index=False)
                if writer is None:
                    writer = (
                        pq.ParquetWriter(tmp, batch.schema, compression="zstd")
                        if format == "parquet"
                        else pcsv.CSVWriter(tmp, batch.schema)
                    )
                if format == "parquet":
                    writer.write_table(batch, row_group_size=row_group_rows)
                else:
                    writer.write_table(batch)
        finally:
            if writer is not None:
                writer.close()
        if writer is None:  # zero rows: still a valid file with the header / schema
            empty = table.sample(0, seed=seed)
            empty = pa.Table.from_pandas(empty if format == "parquet" else neutralise(empty), preserve_index=False)
            (pq.write_table(empty, tmp) if format == "parquet" else pcsv.write_csv(empty, tmp))
    return path
