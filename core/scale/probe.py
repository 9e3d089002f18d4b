"""``python -m core probe --engine dask``: the images' batches spread over Dask workers, resumable.

The unit of work is one batch of ``batch_size`` images (batch ``i`` = images ``i * batch_size``
up to the next), the same batches the local run feeds the model, so every model call sees the
same input and the outputs are byte-identical to the local run's on the same machine. A task
computes the raw model outputs of every variant of its batch (:func:`core.imaging.probe.probe_raw`)
on a worker, which reads its own images (the folder, archive or arrays travel inside the task)
and writes them as one partition file through :mod:`core.scale.runner`: atomically, journalled
by the driver, recomputed by Dask when a worker dies mid-task, and reused when the same command
is run again after an interruption. The driver then reads every partition in order and builds
the tables as the local run does (:func:`core.imaging.probe.assemble_probe_result`), deciding
logits vs probabilities on all clean rows at once.

The partitions live in a work folder beside the output, ``.<OUT name>.probe-parts/``, removed
once the output is published; the output folder itself appears only complete, as with the
local engine. This module sits in the scale layer: it imports :mod:`core.imaging` (below it),
and only the command line (:mod:`core.cli.imaging`) imports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.imaging.corruptions import NATURAL_TRANSFORMS
from core.imaging.images import ImageSet
from core.imaging.probe import (
    DEFAULT_PROBES,
    OnnxImageClassifier,
    ProbePlan,
    ProbeResult,
    assemble_probe_result,
    probe_plan,
    probe_raw,
)
from core.onnx_session import check_threads
from core.scale.cluster import check_worker_paths, worker_threads
from core.scale.runner import run_partitions
from core.scale.store import PartitionInfo, RunStore

__all__ = ["BatchSource", "ProbeTask", "probe_on_dask", "work_folder"]

_KIND = "probe"


def work_folder(out: str | Path) -> Path:
    """Where a Dask probe run keeps its partitions: ``.<name>.probe-parts`` beside ``out``."""
    out = Path(out).expanduser()
    return out.parent / f".{out.name}.probe-parts"


@dataclass(frozen=True)
class BatchSource:
    """The positions of ``n_images`` images in batches (a :mod:`core.scale.runner` source)."""

    n_images: int

    format = "images"
    random_access = True

    @property
    def n_rows(self) -> int:
        return self.n_images

    def n_partitions(self, batch_size: int) -> int:
        return -(-self.n_images // batch_size)

    def read_partition(self, index: int, batch_size: int) -> pa.Table:
        start = index * batch_size
        return pa.table({"position": np.arange(start, min(start + batch_size, self.n_images), dtype=np.int64)})

    def iter_partitions(self, batch_size: int, *, skip: frozenset[int] = frozenset()):
        for index in range(self.n_partitions(batch_size)):
            if index not in skip:
                yield index, self.read_partition(index, batch_size)


# One session per worker process and model: building it costs as much as a few model calls.
_SESSIONS: dict[tuple, OnnxImageClassifier] = {}


@dataclass(frozen=True, eq=False)
class ProbeTask:
    """Raw outputs of every variant of one batch (picklable; sent to the cluster once).

    Attributes
    ----------
    model_bytes : bytes
        The ``.onnx`` file.
    where : str
        Its name in messages.
    mean, std : tuple of float
        Normalisation, one value per input channel.
    images : ImageSet
    perturbed : tuple of ImageSet
        Re-capture sets in ``plan.recaptures`` order.
    plan : ProbePlan
    threads : int
        onnxruntime threads of the worker's session.
    """

    model_bytes: bytes
    where: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    images: ImageSet
    perturbed: tuple[ImageSet, ...]
    plan: ProbePlan
    threads: int

    def model(self) -> OnnxImageClassifier:
        key = (hashlib.sha256(self.model_bytes).hexdigest(), self.mean, self.std, self.threads)
        if key not in _SESSIONS:
            _SESSIONS.clear()
            _SESSIONS[key] = OnnxImageClassifier(
                self.model_bytes, where=self.where, mean=self.mean, std=self.std, threads=self.threads
            )
        return _SESSIONS[key]

    def __call__(self, table: pa.Table, row_start: int) -> pa.Table:
        """``variant, position, raw`` rows of batch ``row_start // batch_size``, variant-major."""
        positions = table.column("position").to_numpy()
        raw = probe_raw(self.model(), self.images, self.perturbed, self.plan, [row_start // self.plan.batch_size])
        n_variants, m, n_out = raw.shape
        return pa.table(
            {
                "variant": np.repeat(np.arange(n_variants, dtype=np.int32), m),
                "position": np.tile(positions, n_variants),
                "raw": pa.FixedSizeListArray.from_arrays(pa.array(raw.reshape(-1)), n_out),
            }
        )


def _read_raw(out: Path, partitions: Sequence[PartitionInfo], n_variants: int, n_images: int) -> np.ndarray:
    parts = []
    for info in sorted(partitions, key=lambda p: p.index):
        (rel,) = info.files
        table = pq.read_table(out / rel)
        m = info.rows
        expected = np.tile(np.arange(info.row_start, info.row_start + m), n_variants)
        if table.num_rows != n_variants * m or not np.array_equal(table.column("position").to_numpy(), expected):
            raise RuntimeError(f"partition file {out / rel} does not hold batch {info.index}; delete {out} and rerun.")
        raw = table.column("raw").combine_chunks()
        parts.append(raw.flatten().to_numpy(zero_copy_only=False).reshape(n_variants, m, raw.type.list_size))
    out_raw = np.concatenate(parts, axis=1)
    if out_raw.shape[1] != n_images:
        raise RuntimeError(f"the partitions in {out} hold {out_raw.shape[1]} images, not {n_images}.")
    return out_raw


def _identity(images: ImageSet) -> dict:
    ids = json.dumps([str(r) for r in images.record_ids]).encode()
    return {
        "where": images.where,
        "n_images": len(images),
        "record_ids_sha256": hashlib.sha256(ids).hexdigest(),
        "labels_sha256": hashlib.sha256(np.ascontiguousarray(images.labels, dtype=np.int64).tobytes()).hexdigest(),
    }


def probe_on_dask(
    model: OnnxImageClassifier,
    images: ImageSet,
    *,
    work: str | Path,
    client,
    model_name: str | None = None,
    probes: Sequence[tuple[str, int]] = DEFAULT_PROBES,
    natural: Sequence[str] = tuple(NATURAL_TRANSFORMS),
    perturbed: Mapping[str, ImageSet] | None = None,
    batch_size: int = 256,
    seed: int = 0,
    threads: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ProbeResult:
    """:func:`core.imaging.probe.run_probes` with the batches computed on a Dask cluster.

    Parameters
    ----------
    model, images, model_name, probes, natural, perturbed, batch_size, seed
        As in :func:`core.imaging.probe.run_probes`.
    work : str or Path
        Folder of the run's partitions (:func:`work_folder` of the output); an earlier run
        with the same model, images and settings there is resumed, one with other settings
        refused.
    client : distributed.Client
        See :func:`core.scale.cluster.connect`. Its workers must see the image files (and
        ``work``) under the same paths.
    threads : int, optional
        onnxruntime threads of every worker's session; None: each worker's share of its host's
        cores (:func:`core.scale.cluster.worker_threads`). Part of the run's settings (a resume
        must use the same number) and of the manifest.
    progress : callable(label, done, total), optional
        Called in the driver after every batch (``label = "batch"``, counts in images).

    Returns
    -------
    ProbeResult
        Equal, byte for byte once written, to the local run's at the same number of threads.
    """
    perturbed = dict(perturbed or {})
    plan = probe_plan(
        model, images, probes=probes, natural=natural, perturbed=perturbed, batch_size=batch_size, seed=seed
    )
    task = ProbeTask(
        model_bytes=model.model_bytes,
        where=model.where,
        mean=tuple(model.mean.tolist()),
        std=tuple(model.std.tolist()),
        images=images,
        perturbed=tuple(perturbed.values()),
        plan=plan,
        threads=worker_threads(client) if threads is None else check_threads(threads),
    )
    config = {
        "model_sha256": model.sha256,
        "mean": list(task.mean),
        "std": list(task.std),
        "images": _identity(images),
        "perturbed": {cond: _identity(other) for cond, other in perturbed.items()},
        "probes": [list(p) for p in plan.probes],
        "natural": list(plan.natural),
        "batch_size": plan.batch_size,
        "seed": plan.seed,
        "threads": task.threads,
    }
    fingerprint = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    source = BatchSource(len(images))
    work = Path(work)
    n_images, done = len(images), 0

    def report(info: PartitionInfo) -> None:
        nonlocal done
        done += info.rows
        if progress is not None:
            progress("batch", done, n_images)

    with RunStore.open(work, config, fingerprint, kind=_KIND) as store:
        done = sum(i.rows for i in store.done.values())
        shared = [work, *(Path(s.where) for s in (images, *perturbed.values()) if Path(s.where).exists())]
        check_worker_paths(client, shared)
        result = run_partitions(
            source, task, store, chunk_rows=plan.batch_size, engine="dask", client=client, progress=report
        )
        raw = _read_raw(work, list(store.done.values()), len(plan.variants), n_images)
        store.finish(n_partitions=result.n_partitions, n_rows=result.n_rows, summary={"fingerprint": fingerprint})
    return assemble_probe_result(
        raw, model, images, plan, model_name=model_name, perturbed=perturbed, threads=task.threads
    )
