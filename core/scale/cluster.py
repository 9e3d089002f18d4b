"""Connecting to a Dask cluster: an existing one by address, or a local one we start and stop.

Nothing here schedules work (see :mod:`core.scale.runner`); this module only makes sure a
client exists, that its workers run single-threaded processes by default (certification is
CPU-bound numpy/sklearn code that holds the GIL for long stretches), that the workers can see
the paths the run reads and writes, and that whatever we started is always shut down.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from core.optional import require
from core.validation import check_positive_int

__all__ = ["check_worker_paths", "connect", "worker_threads"]


def _validate(scheduler: str | None, workers: int | None, timeout: float) -> None:
    if (scheduler is None) == (workers is None):
        raise ValueError(
            "give exactly one of `scheduler` (address of an existing Dask scheduler, e.g. "
            f"tcp://10.0.0.5:8786) and `workers` (size of a local cluster); got scheduler="
            f"{scheduler!r}, workers={workers!r}."
        )
    if workers is not None:
        check_positive_int(workers, "workers")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ValueError(f"`scheduler` must be an address such as tcp://host:8786; got {scheduler!r}.")
    if not timeout > 0:
        raise ValueError(f"`timeout` must be positive (seconds); got {timeout!r}.")


@contextlib.contextmanager
def connect(
    *, scheduler: str | None = None, workers: int | None = None, threads_per_worker: int = 1, timeout: float = 60.0
) -> Iterator:
    """Yield a :class:`distributed.Client`; close everything this call started on exit.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). The cluster is left running on
        exit; only our client disconnects.
    workers : int, optional
        Start a :class:`distributed.LocalCluster` of this many worker *processes* (no
        dashboard, ``MALLOC_TRIM_THRESHOLD_`` unset: see the comment in the code), torn down
        on exit.
    threads_per_worker : int, default 1
        Threads per local worker.
    timeout : float, default 60
        Seconds to wait for the scheduler / the local workers.

    Examples
    --------
    >>> with connect(workers=2) as client:                  # doctest: +SKIP
    ...     sum(client.nthreads().values())
    2
    """
    _validate(scheduler, workers, timeout)
    dask = require("dask", what="the Dask engine (--engine dask)")
    distributed = require("distributed", what="the Dask engine (--engine dask)")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=timeout)
        except OSError as exc:
            raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        try:
            yield client
        finally:
            client.close()
        return
    # distributed sets MALLOC_TRIM_THRESHOLD_=65536 in its workers' environment; setting it
    # disables glibc's adaptive mmap threshold, so each of the large temporary arrays of a
    # certificate becomes a fresh mmap (page faults, zeroing) and certification runs about
    # twice as slow (measured: 4.7-5.6 s against 2.1-2.8 s for one 25k-row partition).
    # None removes the variable (distributed's documented way to unset it).
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            dashboard_address=None,
        )
    try:
        client = Client(cluster, timeout=timeout)
        try:
            client.wait_for_workers(workers, timeout=timeout)
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def worker_threads(client) -> int:
    """onnxruntime threads per task so that every worker uses its share of its host's cores.

    A host's cores (:func:`core.onnx_session.default_threads`, asked of each worker) are split
    among the tasks its workers run at once (the sum of their Dask threads), as a plain
    process takes every core: two single-threaded workers on a 16-core host give 8. The
    smallest share over the workers is returned, so one number (the manifest's) holds for
    every task of a run, and outputs do not depend on which worker computed a batch.
    """
    from core.onnx_session import default_threads

    info = client.scheduler_info()["workers"]
    cores = client.run(default_threads)
    per_host: dict[str, int] = {}
    for addr, worker in info.items():
        per_host[worker["host"]] = per_host.get(worker["host"], 0) + int(worker["nthreads"])
    shares = [max(1, int(cores[addr]) // per_host[w["host"]]) for addr, w in info.items() if addr in cores]
    if not shares:
        raise ValueError("the Dask cluster has no workers; start some or give --workers N.")
    return min(shares)


def _paths_visible(paths: Sequence[str]) -> list[str]:
    return [p for p in paths if not os.path.exists(p)]


def check_worker_paths(client, paths: Sequence[str | Path]) -> None:
    """Refuse to start when a worker cannot see one of ``paths`` under the same name.

    With the Dask engine, workers read Parquet partitions and write partition files
    themselves, so the input and the output folder must live on storage shared by the driver
    and every worker (same machine, NFS, a mounted bucket).

    Raises
    ------
    ValueError
        Naming the first worker and the paths it cannot see.
    """
    wanted = [str(Path(p).resolve()) for p in paths]
    missing = client.run(_paths_visible, wanted)
    for worker, absent in sorted(missing.items()):
        if absent:
            raise ValueError(
                f"Dask worker {worker} cannot see {', '.join(absent)}; the dask engine needs the "
                "input data and --out on a filesystem shared by all workers (same path)."
            )
