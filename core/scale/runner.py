"""Run a per-partition computation over a partitioned source, locally or on Dask.

The computation is any picklable callable ``task(table, row_start)`` returning a table or a
mapping ``name -> table`` (for certificates :class:`core.scale.certify.CertifyTask`, for the
paired grid :class:`core.scale.paired_grid.PairedGridTask`). The runner owns everything else:
which partitions still need doing, where each one runs, writing it atomically, journalling it,
and reporting the first partition that fails. A source is anything with ``random_access``,
``n_rows``, ``n_partitions(chunk)``, ``read_partition(index, chunk)`` and
``iter_partitions(chunk, skip=...)`` (:mod:`core.scale.sources`, :class:`core.scale.paired_grid.CellSource`).

Engines
-------
``local``
    One process: partitions are read, computed and written one after another; memory holds
    one partition at a time.
``dask``
    A :class:`distributed.Client` (an existing cluster or a local one). The task object is
    sent to the cluster **once**, as a single future whose recipe holds it, copied to every
    worker before the partitions start; every partition task depends on that future. A worker
    lost with it does not lose it (the scheduler recomputes the future from its recipe, unlike
    ``scatter``). Dask's active memory manager may drop the copy of a worker that has nothing
    left to do; should that worker get more work, it fetches the task again from a peer,
    never from the driver. Workers read their partition themselves when the source allows
    random access (Parquet; all partitions submitted at once); otherwise (CSV) the driver
    streams partitions to the cluster inside the tasks, at most ``2 x threads`` ahead.
    Workers write the partition files; the driver journals them. A worker killed mid-task
    only makes the scheduler rerun that task elsewhere (``distributed.scheduler.allowed-failures``
    times), and the rerun writes the same bytes under the same name.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import pyarrow as pa

from core.optional import require
from core.scale.sources import PartitionReadError, Source
from core.scale.store import MAX_PARTITIONS, PartitionInfo, RunStore, write_partition
from core.validation import check_positive_int

__all__ = ["Engine", "PartitionTask", "RunResult", "run_partitions"]

Engine = Literal["local", "dask"]


class PartitionTask(Protocol):
    """A picklable per-partition computation: input rows in, one table or ``name -> table`` out."""

    def __call__(self, table: pa.Table, row_start: int) -> pa.Table | Mapping[str, pa.Table]: ...


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """Outcome of :func:`run_partitions`.

    Attributes
    ----------
    out : Path
        Output folder.
    n_rows : int
        Rows in the input (= rows written).
    n_partitions : int
        Partitions in the input (= partition files).
    computed : int
        Partitions computed by this call.
    reused : int
        Partitions found complete in ``out`` and skipped (resume).
    """

    out: Path
    n_rows: int
    n_partitions: int
    computed: int
    reused: int


def _compute_partition(
    task: PartitionTask, source: Source, index: int, chunk_rows: int, payload: pa.Table | None, out: str
) -> PartitionInfo:
    """Read (unless given), compute and atomically write one partition. Runs on workers."""
    table = payload if payload is not None else source.read_partition(index, chunk_rows)
    row_start = index * chunk_rows
    return write_partition(out, index, row_start, task(table, row_start), rows=table.num_rows)


def _validate(chunk_rows: int, engine: str, client) -> None:
    check_positive_int(chunk_rows, "chunk_rows")
    if engine not in ("local", "dask"):
        raise ValueError(f"`engine` must be 'local' or 'dask'; got {engine!r}.")
    if engine == "dask" and client is None:
        raise ValueError("`engine='dask'` needs a `client` (see core.scale.cluster.connect).")
    if engine == "local" and client is not None:
        raise ValueError("`client` is only used with `engine='dask'`.")


def run_partitions(
    source: Source,
    task: PartitionTask,
    store: RunStore,
    *,
    chunk_rows: int,
    engine: Engine = "local",
    client=None,
    progress: Callable[[PartitionInfo], None] | None = None,
) -> RunResult:
    """Compute every partition of ``source`` not yet done in ``store``.

    The caller seals the run afterwards with :meth:`RunStore.finish` (after writing whatever
    summary it derives from the partitions).

    Parameters
    ----------
    source : ParquetSource, CsvSource or CellSource
        Input, e.g. opened with :func:`core.scale.sources.open_source`.
    task : PartitionTask
        Picklable ``task(table, row_start)`` returning a table (written to
        ``part-<index>.parquet``) or a mapping ``name -> table`` (``<name>/part-<index>.parquet``).
    store : RunStore
        Opened output folder (new or resumed).
    chunk_rows : int
        Rows per partition; must be the value recorded in the store's config.
    engine : {'local', 'dask'}, default 'local'
    client : distributed.Client, optional
        Required for ``engine='dask'``.
    progress : callable, optional
        Called in the driver with each :class:`PartitionInfo` as it is journalled.

    Returns
    -------
    RunResult

    Raises
    ------
    PartitionReadError
        A partition could not be read; partitions finished before stay done (resumable).
    """
    _validate(chunk_rows, engine, client)
    reused = len(store.completed())
    if source.random_access and source.n_partitions(chunk_rows) > MAX_PARTITIONS:
        raise ValueError(
            f"{source.n_rows} rows in chunks of {chunk_rows} make more than {MAX_PARTITIONS} "
            "partitions; raise `chunk_rows`."
        )
    if engine == "local":
        computed = _run_local(source, task, store, chunk_rows, progress)
    else:
        computed = _run_dask(source, task, store, chunk_rows, client, progress)
    if source.random_access:
        n_partitions, n_rows = source.n_partitions(chunk_rows), source.n_rows
    else:  # a CSV's size is known once it has been streamed through
        n_partitions = max(store.completed(), default=-1) + 1
        n_rows = sum(i.rows for i in store.done.values())
    return RunResult(out=store.out, n_rows=n_rows, n_partitions=n_partitions, computed=computed, reused=reused)


def _run_local(
    source: Source,
    task: PartitionTask,
    store: RunStore,
    chunk_rows: int,
    progress: Callable[[PartitionInfo], None] | None,
) -> int:
    computed = 0
    for index, table in source.iter_partitions(chunk_rows, skip=store.completed()):
        info = _compute_partition(task, source, index, chunk_rows, table, str(store.out))
        store.record(info)
        computed += 1
        if progress is not None:
            progress(info)
    return computed


def _run_dask(
    source: Source,
    task: PartitionTask,
    store: RunStore,
    chunk_rows: int,
    client,
    progress: Callable[[PartitionInfo], None] | None,
) -> int:
    distributed = require("distributed", what="the Dask engine (--engine dask)")
    KilledWorker, as_completed = distributed.KilledWorker, distributed.as_completed
    FutureCancelledError = require("distributed.client", what="the Dask engine (--engine dask)").FutureCancelledError

    run = uuid.uuid4().hex[:8]
    # One future holds the task; its recipe (the pickled task) stays with the scheduler, so
    # losing every worker that held the result only means recomputing it, unlike scatter.
    task_future = client.submit(_identity, task, key=f"scale-task-{run}", pure=False)
    # Copy it to every worker now, while they are idle: a worker busy certifying holds the GIL
    # for seconds at a time and serves a peer's fetch only slowly (measured: 5 s for a 6 kB
    # task), which would leave the other workers waiting at the start of the run. Copies
    # stay while partitions wait for them; a worker that joins later fetches its own.
    client.replicate([task_future])
    if source.random_access:
        todo = ((i, None) for i in range(source.n_partitions(chunk_rows)) if i not in store.completed())
    else:
        todo = source.iter_partitions(chunk_rows, skip=store.completed())
    pending: dict = {}
    computed = 0
    queue = as_completed()

    def refill() -> None:
        # Worker-read partitions are tiny task specs: submit them all, and the scheduler keeps
        # every worker's copy of the task while partitions still wait for it. Driver-streamed
        # partitions carry their rows: keep only a window of them in flight.
        window = math.inf if source.random_access else max(2, 2 * sum(client.nthreads().values()))
        while len(pending) < window:
            item = next(todo, None)
            if item is None:
                return
            index, payload = item
            future = client.submit(
                _compute_partition,
                task_future,
                source,
                index,
                chunk_rows,
                payload,
                str(store.out),
                key=f"scale-part-{index:05d}-{run}",
                pure=False,
            )
            pending[future] = index
            queue.add(future)

    try:
        refill()
        for future in queue:
            index = pending.pop(future)
            try:
                info = future.result()
            except PartitionReadError:
                raise
            except KilledWorker as exc:
                raise RuntimeError(
                    f"partition {index} (rows from {index * chunk_rows}) was running on every "
                    "worker that died while running it, too many times; out of memory? try a "
                    f"smaller chunk size. ({exc})"
                ) from exc
            except FutureCancelledError as exc:
                raise RuntimeError(f"partition {index} was cancelled by the cluster: {exc}") from exc
            except Exception as exc:
                exc.add_note(f"while computing partition {index} (rows from {index * chunk_rows})")
                raise
            store.record(info)
            computed += 1
            if progress is not None:
                progress(info)
            refill()
    finally:
        client.cancel(list(pending) + [task_future], force=True)
    return computed


def _identity(obj):
    return obj
