"""The paired identification grid and policy certificates over many cells, partitioned.

Paired records (SPEC B, long format: one row per model x condition x source x record) can
hold millions of rows over thousands of cells. Cells are independent once the per-model
thresholds are fixed, so the grid runs cell shard by cell shard, locally or on Dask, with the
output, resume and failure guarantees of :mod:`core.scale.runner`:

1. one streaming pass over the records (driver, bounded memory) lists the cells with their
   row counts and keeps one row per (model, split, record_id, clean max probability) — all
   that :func:`core.paired.policies.policy_thresholds` needs — to fix every model's clean and
   perturbed-side thresholds once, from its development rows;
2. shard ``i`` holds cells ``i*k .. (i+1)*k - 1`` in sorted cell order (``k`` =
   ``cells_per_task``); its rows are read by pushing the cell filter down to the Parquet
   files, put in a canonical order (cell, then ``record_id``) and passed to
   :func:`core.paired.bounds.identified_intervals_grid` and
   :func:`core.paired.policies.evaluate_policies` (with the fixed thresholds; on the ``eval``
   rows when the records have any, as ``evaluate_policies`` does).

Output folder::

    OUT/intervals/part-00000.parquet            identified intervals, one row per cell x target x level
    OUT/policy_costs/part-00000.parquet         PolicyReport.costs of the shard's cells
    OUT/policy_differences/part-00000.parquet   PolicyReport.differences (D+, certified, ...)
    OUT/policy_selection/part-00000.parquet     PolicyReport.selection (minimax / mean policy)
    OUT/_manifest.json, OUT/_summary.json        run identity; grid summary and thresholds

Every quantity equals the single call over all records, the one stochastic quantity
included: the I5 feasible-mean estimate of classes too large to enumerate
(``mean_method = "estimate"``) draws from a stream keyed by ``seed`` and the class's own cell
and label (:func:`core._rng.keyed_generator`), so it depends neither on ``cells_per_task`` nor
on which cells share a shard.

Inputs must be Parquet (a file or a folder of files): shards are read by filtering cells,
which CSV cannot do without reading the whole file for every shard.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from core.constants import CLEAN_COVERAGE
from core.formats import PROBE_OUTPUTS, check_table_file
from core.paired.bounds import LEVELS, identified_intervals_grid
from core.paired.policies import COVERAGES, LAMBDAS, evaluate_policies, policy_thresholds
from core.paired.records import CELL_COLUMNS, PAIRED_COLUMNS, TableOrigin, validate_records_at
from core.paired.summary import grid_summary
from core.scale.cluster import check_worker_paths
from core.scale.runner import Engine, RunResult, run_partitions
from core.scale.sources import PartitionReadError, file_identity
from core.scale.store import PartitionInfo, RunStore
from core.validation import check_positive_int, check_seed, check_tau, check_unique_columns, check_unit_interval

__all__ = ["CellSource", "PairedGridRun", "PairedGridTask", "paired_grid", "scan_records"]

_KIND = "paired-grid"
_OPTIONAL = ("split", "group")
_SCAN_BATCH_ROWS = 1 << 16
TABLES = ("intervals", "policy_costs", "policy_differences", "policy_selection")


def _parquet_files(path: Path) -> tuple[Path, ...]:
    if path.is_dir():
        files = tuple(sorted(p for p in path.rglob("*.parquet") if p.is_file() and not p.name.startswith((".", "_"))))
        if not files:
            raise ValueError(f"directory {path} holds no *.parquet file.")
        return files
    if path.suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(
            f"paired records for the grid must be Parquet (a file or a folder of files); got {path}. "
            "Convert a CSV first, e.g. pandas.read_csv(...).to_parquet(...)."
        )
    return (path,)


@dataclass(frozen=True)
class CellSource:
    """Paired records split into shards of whole cells (random access by shard).

    Attributes
    ----------
    root : Path
        The Parquet file or folder given.
    files : tuple of Path
    columns : tuple of str
        Columns read: the paired columns, plus ``split`` / ``group`` when present.
    cells : tuple of (model, condition, source)
        Every cell, sorted; cell keys as text.
    cell_rows : tuple of int
        Records per cell.
    """

    root: Path
    files: tuple[Path, ...]
    columns: tuple[str, ...]
    cells: tuple[tuple[str, str, str], ...]
    cell_rows: tuple[int, ...]

    format = "parquet"
    random_access = True

    @property
    def n_rows(self) -> int:
        """Total number of records."""
        return sum(self.cell_rows)

    def n_partitions(self, cells_per_task: int) -> int:
        """Number of shards of ``cells_per_task`` cells."""
        return -(-len(self.cells) // cells_per_task)

    def identity(self) -> list[dict]:
        """Identity of the input files (see :func:`core.scale.sources.file_identity`)."""
        base = self.root if self.root.is_dir() else self.root.parent
        return [file_identity(f, root=base, kind="parquet") for f in self.files]

    def read_partition(self, index: int, cells_per_task: int) -> pa.Table:
        """Every record of the cells of shard ``index``, ordered by cell then ``record_id``.

        Raises
        ------
        PartitionReadError
            The files could not be read; names the shard, its cells and the input.
        """
        shard = self.cells[index * cells_per_task : (index + 1) * cells_per_task]
        if not shard:
            raise ValueError(f"shard `index` must be in [0, {self.n_partitions(cells_per_task)}); got {index}.")
        expr = None
        for pos, col in enumerate(CELL_COLUMNS):
            values = pa.array(sorted({c[pos] for c in shard}), pa.string())
            term = ds.field(col).cast(pa.string()).isin(values)
            expr = term if expr is None else expr & term
        try:
            table = ds.dataset(list(map(str, self.files)), format="parquet").to_table(
                columns=list(self.columns), filter=expr, use_threads=False
            )
        except (OSError, pa.ArrowException) as exc:
            raise PartitionReadError(
                f"cannot read shard {index} (cells {shard[0]} .. {shard[-1]}) from {self.root}: {exc}"
            ) from exc
        frame = table.to_pandas()
        keys = frame[list(CELL_COLUMNS)].astype(str)
        position = {cell: i for i, cell in enumerate(shard)}
        order = np.array([position.get(tuple(k), -1) for k in keys.itertuples(index=False, name=None)], dtype=np.int64)
        frame = frame[order >= 0].assign(_cell=order[order >= 0])
        frame = frame.sort_values(["_cell", "record_id"], kind="stable").drop(columns="_cell")
        expected = sum(self.cell_rows[index * cells_per_task : (index + 1) * cells_per_task])
        if len(frame) != expected:
            raise PartitionReadError(
                f"shard {index} (cells {shard[0]} .. {shard[-1]}) of {self.root} has {len(frame)} records; "
                f"the scan counted {expected} (did the input change during the run?)."
            )
        return pa.Table.from_pandas(frame, preserve_index=False)

    def iter_partitions(self, cells_per_task: int, *, skip: frozenset[int] = frozenset()):
        """Yield ``(index, table)`` for every shard not in ``skip``, in index order."""
        for index in range(self.n_partitions(cells_per_task)):
            if index not in skip:
                yield index, self.read_partition(index, cells_per_task)


def scan_records(path: str | Path) -> tuple[CellSource, pd.DataFrame, bool]:
    """One streaming pass over paired records: cells, development rows, whether ``eval`` exists.

    Returns
    -------
    source : CellSource
    development : DataFrame
        One row (all columns) per distinct ``(model, split, record_id, clean_max_prob)`` —
        enough for :func:`core.paired.policies.policy_thresholds`, whatever the number of
        conditions.
    has_eval : bool
        Some row has ``split == "eval"``.
    """
    root = Path(path).resolve()
    if not root.exists():
        raise FileNotFoundError(f"paired records {path} do not exist.")
    files = _parquet_files(root)
    for file in files:  # the records.parquet of `probe` names its version: a newer one is refused
        check_table_file(file, PROBE_OUTPUTS, where=str(file))
    try:
        dataset = ds.dataset(list(map(str, files)), format="parquet")
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"cannot read the paired records {root}: {exc}") from exc
    names = dataset.schema.names
    check_unique_columns(names, f"paired records {root}")
    missing = [c for c in PAIRED_COLUMNS if c not in names]
    if missing:
        raise ValueError(f"paired records {root} lack column(s) {missing}; expected at least {list(PAIRED_COLUMNS)}.")
    columns = (*PAIRED_COLUMNS, *(c for c in _OPTIONAL if c in names))
    key = (
        ["model", "split", "record_id", "clean_max_prob"]
        if "split" in names
        else ["model", "record_id", "clean_max_prob"]
    )
    counts: Counter = Counter()
    kept: list[pd.DataFrame] = []
    has_eval = False
    seen = 0
    try:
        for batch in dataset.to_batches(columns=list(columns), batch_size=_SCAN_BATCH_ROWS, use_threads=False):
            frame = batch.to_pandas()
            # Every row checked here, during the one scan, so a bad value anywhere is refused
            # (naming its row) before the output folder is touched.
            validate_records_at(frame, TableOrigin(f"paired records {root}", offset=seen), None)
            seen += len(frame)
            cells = frame[list(CELL_COLUMNS)].astype(str)
            counts.update(cells.itertuples(index=False, name=None))
            if "split" in names:
                has_eval |= bool((frame["split"].astype(str) == "eval").any())
            frame = frame.assign(model=frame["model"].astype(str))
            kept.append(frame.drop_duplicates(key))
            if len(kept) > 16:  # keep the development rows compact while streaming
                kept = [pd.concat(kept, ignore_index=True).drop_duplicates(key)]
    except (OSError, pa.ArrowException) as exc:
        raise PartitionReadError(f"cannot scan the paired records {root}: {exc}") from exc
    if not counts:
        raise ValueError(f"paired records {root} have no rows.")
    development = pd.concat(kept, ignore_index=True).drop_duplicates(key).reset_index(drop=True)
    cells = tuple(sorted(counts))
    source = CellSource(root=root, files=files, columns=columns, cells=cells, cell_rows=tuple(counts[c] for c in cells))
    return source, development, has_eval


@dataclass(frozen=True, eq=False)
class PairedGridTask:
    """Intervals and policy report of one shard of cells (picklable; sent to Dask once).

    Attributes mirror the parameters of :func:`paired_grid`; ``thresholds`` is the fixed
    per-model table of :func:`core.paired.policies.policy_thresholds`.
    """

    tau: float
    levels: tuple[str, ...]
    thresholds: pd.DataFrame
    lambdas: tuple[float, ...]
    clean_coverage: float
    seed: int
    n_draws: int
    max_placements: int
    has_eval: bool
    cells_per_task: int

    def __call__(self, table: pa.Table, row_start: int) -> dict[str, pa.Table]:
        """Tables of :data:`TABLES` for the records of one shard (``row_start`` = first cell)."""
        records = table.to_pandas()
        out = {"intervals": identified_intervals_grid(records, self.tau, levels=self.levels)}
        evaluation = records[records["split"].astype(str) == "eval"] if self.has_eval else records
        if len(evaluation):
            report = evaluate_policies(
                evaluation,
                thresholds=self.thresholds,
                clean_coverage=self.clean_coverage,
                lambdas=self.lambdas,
                levels=self.levels,
                seed=self.seed,
                n_draws=self.n_draws,
                max_placements=self.max_placements,
            )
            out.update(
                policy_costs=report.costs, policy_differences=report.differences, policy_selection=report.selection
            )
        return {name: pa.Table.from_pandas(frame, preserve_index=False) for name, frame in out.items()}


@dataclass(frozen=True, kw_only=True)
class PairedGridRun:
    """Outcome of :func:`paired_grid`.

    Attributes
    ----------
    result : RunResult
        ``n_rows`` counts records, ``n_partitions`` shards.
    fingerprint : str
        SHA-256 of the run's settings and thresholds.
    summary : dict
        Contents of ``_summary.json``.
    """

    result: RunResult
    fingerprint: str
    summary: dict


def _records_json(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.to_json(orient="records", double_precision=15))


def _summarize(
    out: Path, partitions: list[PartitionInfo], thresholds: pd.DataFrame, n_cells: int, n_records: int
) -> dict:
    intervals = pq.read_table(
        [
            out / rel
            for info in sorted(partitions, key=lambda p: p.index)
            for rel in info.files
            if rel.startswith("intervals/")
        ]
    ).to_pandas()
    summary = grid_summary(intervals, by=())
    certified = {}
    for info in sorted(partitions, key=lambda p: p.index):
        for rel in info.files:
            if rel.startswith("policy_differences/"):
                part = pq.read_table(out / rel, columns=["level", "lambda", "certified", "missed_by_separate"])
                frame = part.to_pandas()
                frame = frame[np.isclose(frame["lambda"], 0.5)]
                for level, grp in frame.groupby("level", sort=True):
                    c = certified.setdefault(level, [0, 0, 0])
                    c[0] += len(grp)
                    c[1] += int(grp["certified"].sum())
                    c[2] += int(grp["missed_by_separate"].sum())
    return {
        "n_cells": n_cells,
        "n_records": n_records,
        "widths": _records_json(summary.widths),
        "cells": _records_json(summary.cells),
        "thresholds": _records_json(thresholds),
        "policy_pairs_at_lambda_0.5": {
            level: {"pairs": c[0], "certified": c[1], "certified_only_jointly": c[2]}
            for level, c in sorted(certified.items())
        },
    }


def paired_grid(
    records: str | Path,
    out: str | Path,
    *,
    tau: float,
    levels: Sequence[str] = LEVELS,
    coverages: Sequence[float] = COVERAGES,
    clean_coverage: float = CLEAN_COVERAGE,
    lambdas: Sequence[float] = LAMBDAS,
    seed: int = 0,
    n_draws: int = 4000,
    max_placements: int = 20000,
    cells_per_task: int = 16,
    engine: Engine = "local",
    client=None,
    progress: Callable[[PartitionInfo], None] | None = None,
) -> PairedGridRun:
    """Identified intervals and policy certificates of every cell, partitioned and resumable.

    Parameters
    ----------
    records : str or Path
        Paired records (Parquet file or folder), columns as in ``docs/DEVELOPING.md``.
    out : str or Path
        Output folder (new, or an earlier run with the same settings, which is resumed).
    tau : float in [0, 1]
        Acceptance threshold of the identified intervals (both sides).
    levels : sequence of {"I0", "Ik", "I5"}
    coverages, clean_coverage, lambdas, n_draws, max_placements
        As in :func:`core.paired.policies.evaluate_policies`.
    seed : int, default 0
        Seeds the I5 feasible-mean estimate, as in :func:`core.paired.policies.evaluate_policies`.
    cells_per_task : int, default 16
        Cells per shard (one partition / Dask task).
    engine : {'local', 'dask'}, default 'local'
    client : distributed.Client, optional
    progress : callable, optional
        Called with each finished :class:`PartitionInfo` (``rows`` = records of the shard).

    Returns
    -------
    PairedGridRun
    """
    cells_per_task = check_positive_int(cells_per_task, "cells_per_task")
    seed = check_seed(seed)
    tau = check_tau(tau)  # before anything touches `out` (no manifest left behind)
    clean_coverage = check_unit_interval(clean_coverage, "clean_coverage")
    bad = [v for v in levels if v not in LEVELS] if not isinstance(levels, str) else [levels]
    if bad or not levels:
        raise ValueError(f"`levels` must be a non-empty subset of {list(LEVELS)}; got {levels!r}.")
    source, development, has_eval = scan_records(records)
    thresholds = policy_thresholds(development, coverages=coverages, clean_coverage=clean_coverage)
    task = PairedGridTask(
        tau=float(tau),
        levels=tuple(levels),
        thresholds=thresholds,
        lambdas=tuple(float(x) for x in lambdas),
        clean_coverage=float(clean_coverage),
        seed=seed,
        n_draws=int(n_draws),
        max_placements=int(max_placements),
        has_eval=has_eval,
        cells_per_task=cells_per_task,
    )
    config = {
        "data": {
            "format": "parquet",
            "files": source.identity(),
            "n_cells": len(source.cells),
            "n_records": source.n_rows,
        },
        "cells_per_task": cells_per_task,
        "tau": task.tau,
        "levels": list(task.levels),
        "coverages": [float(q) for q in coverages],
        "clean_coverage": task.clean_coverage,
        "lambdas": list(task.lambdas),
        "seed": seed,
        "n_draws": task.n_draws,
        "max_placements": task.max_placements,
    }
    fingerprint = hashlib.sha256(
        json.dumps({"config": config, "thresholds": _records_json(thresholds)}, sort_keys=True).encode()
    ).hexdigest()
    out = Path(out)
    with RunStore.open(out, config, fingerprint, kind=_KIND) as store:
        if engine == "dask":
            check_worker_paths(client, [*source.files, out])
        result = run_partitions(
            source, task, store, chunk_rows=cells_per_task, engine=engine, client=client, progress=progress
        )
        summary = _summarize(out, list(store.done.values()), thresholds, len(source.cells), source.n_rows)
        summary = {"fingerprint": fingerprint, **summary}
        store.finish(n_partitions=result.n_partitions, n_rows=result.n_rows, summary=summary)
    return PairedGridRun(result=result, fingerprint=fingerprint, summary=summary)
