"""Certify a large table partition by partition: locally in bounded memory, or on Dask.

:func:`certify_dataset` is the entry point (the ``certify`` CLI command wraps it). It pairs a
:class:`CertifyTask` — the fitted preprocessing, model, groups, baseline and protocol, i.e.
everything a worker needs — with the partitioned runner of :mod:`core.scale.runner`.

Output folder (see :mod:`core.scale.store` for the guarantees)::

    OUT/part-00000.parquet   certificates of input rows 0 .. chunk_rows-1, and so on
    OUT/_manifest.json       fingerprint, protocol, model identity, input identity, partitions,
                             the threads of the run that finished it (``execution``)
    OUT/_summary.json        totals over the held-out rows
    OUT/_task.zip            the fitted task (JSON + skops / native model files, no pickle),
                             reused on resume and by --audit

``pandas.read_parquet(OUT)`` reads the certificates of every row, in input order.

Columns of every partition (one row per input row, in input order):

========================  ======================================================================
``row``                   int64, 0-based row number in the input
``<id column>``           the ``id_column`` passed through, when given
``label``                 true label as text (null if missing), when a target column is given
``in_fit_sample``         bool, the row was used to fit the model (rows ``0 .. fit_rows-1``)
``pred``                  int64, predicted class index (column of ``predict_proba``)
``pred_label``            predicted class as text
``correct``               bool (null without a label): ``pred_label == label``
``confidence``            ``p̂ = max p̃``
``margin``                ``m(x)``
``flip_budget``           int64, ``k*`` in ``1 .. K+1`` (smaller = more fragile)
``rcma``, ``fds``, ``u``  risk scores, larger = more fragile
``one_step_max``          ``max_g δ_g`` (risk)
``degradation``           third term of ``u`` before its weight (risk)
``path``                  list of the K removed group names, in order
``path_margins``          list of the K+1 original-class margins ``m_y(x^(k))``
``path_preds``            list of the K+1 predicted class indices ``ŷ(x^(k))``
``lambda_star_<op>``      ``λ*`` per declared operator (``inf`` = no flip; smaller = more fragile)
========================  ======================================================================

Every value is a pure function of the input row, the task and the protocol
(:func:`core.cfc.certify` guarantees that certifying rows in chunks gives the same values and
fingerprint), so the partition files do not depend on the engine, the number of workers, the
``batch_size`` or on how many times a run was interrupted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.atomic import atomic_write_bytes
from core.cfc import Protocol, baseline_vector
from core.cfc.fds import near_tie
from core.cfc.grouping import build_groups
from core.cfc.stressors import LabelChannel
from core.onnx_session import check_threads
from core.scale.cluster import check_worker_paths, worker_threads
from core.scale.runner import Engine, RunResult, run_partitions
from core.scale.sources import PartitionReadError, Source, open_source
from core.scale.store import MANIFEST, PartitionInfo, RunStore
from core.tabular.certify_task import (
    LEGACY_TASK_FILE,
    TASK_FILE,
    CertifyTask,
    label_text,
    legacy_refusal,
    load_certify_task,
    save_certify_task,
    task_bytes,
    task_from_audit,
    task_from_bytes,
)
from core.validation import check_seed, check_table

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "TASK_FILE",
    "CertifyRun",
    "CertifyTask",
    "FitSpec",
    "certify_dataset",
    "fit_certify_task",
    "load_certify_task",
    "save_certify_task",
    "task_from_audit",
    "summarize_output",
]

#: Rows per partition by default. Certifying holds about 3 KB per row (13 groups, 10
#: severities): measured peak RSS 420 MB at this size, ~200 MB of it imported libraries.
DEFAULT_CHUNK_ROWS = 25_000
_KIND = "certify"
#: Confidence threshold of the summary's high-confidence share (SPEC A.5 ``τ_p``).
_TAU_P = LabelChannel().tau_p
_FDS_BINS = 20


@dataclass(frozen=True)
class FitSpec:
    """How to fit the task on the first rows of the input (see :func:`fit_certify_task`).

    Attributes
    ----------
    target : str
        Column holding the class label. Rows of the fitting sample without a label are not
        used for fitting.
    model : str, default 'hist_gb'
        A name of :data:`core.tabular.models.MODEL_NAMES` (not 'fr_resmlp', which needs groups
        before fitting).
    fit_rows : int, default 20000
        The first ``fit_rows`` rows are the training split.
    seed : int, default 0
        Model seed (``random_state``).
    protocol : Protocol, default Protocol()
    id_column : str, optional
        Column passed through to the output and not used as a feature.
    blocks : dict of str to str, optional
        Raw column -> domain block, for ``protocol.grouping == 'domain_block'`` (unmapped
        columns are their own block).
    """

    target: str
    model: str = "hist_gb"
    fit_rows: int = 20_000
    seed: int = 0
    protocol: Protocol = field(default_factory=Protocol)
    id_column: str | None = None
    blocks: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        from core.tabular.models import MODEL_NAMES

        if not isinstance(self.target, str) or not self.target:
            raise ValueError(f"`target` must be a column name; got {self.target!r}.")
        if self.model not in MODEL_NAMES:
            raise ValueError(f"`model` must be one of {list(MODEL_NAMES)}; got {self.model!r}.")
        if self.model == "fr_resmlp":
            raise ValueError(
                "`model` 'fr_resmlp' needs groups and a baseline before fitting; it cannot be fitted here."
            )
        if isinstance(self.fit_rows, bool) or not isinstance(self.fit_rows, int) or self.fit_rows < 2:
            raise ValueError(f"`fit_rows` must be an int >= 2; got {self.fit_rows!r}.")
        check_seed(self.seed)
        if not isinstance(self.protocol, Protocol):
            raise ValueError(f"`protocol` must be a Protocol; got {type(self.protocol).__name__}.")
        if self.id_column is not None and self.id_column == self.target:
            raise ValueError(f"`id_column` and `target` are the same column {self.target!r}.")
        if self.blocks is not None and self.protocol.grouping != "domain_block":
            raise ValueError(
                f"`blocks` only apply to grouping 'domain_block'; the protocol uses {self.protocol.grouping!r}."
            )
        if self.blocks is None and self.protocol.grouping == "domain_block":
            raise ValueError("grouping 'domain_block' needs `blocks` (raw column -> block name).")

    def config(self) -> dict:
        """JSON identity of the request (what a resumed run must repeat)."""
        return {
            "target": self.target,
            "model": self.model,
            "fit_rows": self.fit_rows,
            "seed": self.seed,
            "id_column": self.id_column,
            "blocks": None if self.blocks is None else dict(sorted(self.blocks.items())),
        }


def fit_certify_task(source: Source, spec: FitSpec, *, batch_size: int = 65_536) -> CertifyTask:
    """Fit preprocessing and model on the first ``spec.fit_rows`` rows of ``source``.

    The self-contained way to audit a big table without a model saved elsewhere: the first
    ``fit_rows`` rows (read as one partition, bounded memory) are the training split — the
    preprocessing, model, groups and baseline are all fitted on them — and every row is then
    certified, with ``in_fit_sample`` marking the training rows so that summaries can leave
    them out. Shuffle the file first if its row order is not random.

    Text columns are categorical features, numeric and boolean columns numeric features.
    Classes are the distinct labels of the fitting sample in sorted order (numbers sorted as
    numbers).

    Parameters
    ----------
    source : ParquetSource or CsvSource
    spec : FitSpec
    batch_size : int, default 65536
        Rows per ``predict_proba`` call while certifying (memory only).

    Returns
    -------
    CertifyTask
    """
    from core.tabular.models import make_model
    from core.tabular.preprocessing import fit_preprocessor

    kinds = source.kinds
    for role, col in (("target", spec.target), ("id_column", spec.id_column)):
        if col is not None and col not in kinds:
            raise ValueError(f"`{role}` {col!r} is not a column of {source.root}; columns: {list(kinds)}.")
    features = [c for c in kinds if c not in (spec.target, spec.id_column)]
    if not features:
        raise ValueError(f"{source.root} has no feature column besides the target and id columns.")
    numeric = tuple(c for c in features if kinds[c] != "string")
    categorical = tuple(c for c in features if kinds[c] == "string")

    try:
        first = next(iter(source.iter_partitions(spec.fit_rows)), None)
    except PartitionReadError as exc:
        raise PartitionReadError(f"while reading the first {spec.fit_rows} rows to fit the model: {exc}") from exc
    if first is None:
        raise ValueError(f"{source.root} has no rows to fit a model on.")
    _, table = first
    target = table.column(spec.target)
    text = label_text(target)
    known = pc.is_valid(text).to_numpy(zero_copy_only=False)
    if kinds[spec.target] == "string":
        classes = tuple(sorted(pc.unique(pc.drop_null(text)).to_pylist()))
    else:  # numbers sort as numbers, then become text
        values = pc.unique(pc.drop_null(pc.if_else(pc.is_nan(target), None, target))).sort()
        classes = tuple(label_text(pa.chunked_array([values])).to_pylist())
    if len(classes) < 2:
        raise ValueError(
            f"{source.root}: the first {table.num_rows} rows hold a single class of {spec.target!r} ({classes}); a "
            "classifier needs two: raise `fit_rows` or shuffle the input."
        )
    frame = table.to_pandas()[known]
    # The checks `audit` applies to the same table (core.validation): same table, same verdict.
    check_table(frame, target=spec.target, features=features, where=str(source.root), blocks=spec.blocks)
    y = pc.index_in(pc.drop_null(text), value_set=pa.array(classes, pa.large_string())).to_numpy()
    preprocessor = fit_preprocessor(frame, numeric, categorical)
    X = preprocessor.transform(frame)
    estimator = make_model(spec.model, seed=spec.seed).fit(X, y)
    groups = build_groups(
        spec.protocol.grouping, preprocessor.transformer, X, blocks=spec.blocks, threshold=spec.protocol.merge_threshold
    )
    baseline = baseline_vector(X, groups, spec.protocol.baseline)
    identity = {"fitted_on_first_rows": spec.config(), "fit_rows_used": int(known.sum())}
    return CertifyTask(
        preprocessor=preprocessor,
        model=estimator,
        classes=classes,
        groups=groups,
        baseline=baseline,
        protocol=spec.protocol,
        target=spec.target,
        id_column=spec.id_column,
        fit_rows=table.num_rows,
        identity=identity,
        batch_size=batch_size,
    )


def summarize_output(
    out: str | Path, partitions: list[PartitionInfo], *, operators: tuple[str, ...], depth: int
) -> dict:
    """Totals over the held-out rows of a finished run, read column-wise partition by partition.

    Returns a JSON-ready dict: ``n_rows``, ``n_held_out``, ``accuracy`` (held-out rows with a
    label; null if none), ``mean_fds``, ``mean_rcma`` (over the held-out rows that are not
    near-ties, :func:`core.cfc.fds.rcma_headline`; null if none), ``n_near_tie`` (those left out),
    ``share_flip_budget_le_2``,
    ``share_high_confidence`` (``confidence >= 0.9``), ``high_confidence_brittle``
    (count with ``confidence >= 0.9`` and ``k* <= 2``), ``flip_budget_counts`` (k* -> count),
    ``fds_histogram`` (20 equal bins on [0, 1]) and ``share_flipped_<op>`` (``λ* < inf``).
    """
    out = Path(out)
    n_rows = held = labelled = correct = hc = hc_brittle = le2 = 0
    sums = {"fds": 0.0, "rcma": 0.0}
    k_counts = np.zeros(depth + 2, dtype=np.int64)
    hist = np.zeros(_FDS_BINS, dtype=np.int64)
    flipped = dict.fromkeys(operators, 0)
    ties = 0
    cols = ["in_fit_sample", "correct", "confidence", "margin", "flip_budget", "fds", "rcma"]
    cols += [f"lambda_star_{op}" for op in operators]
    for info in sorted(partitions, key=lambda p: p.index):
        (rel,) = info.files
        t = pq.read_table(out / rel, columns=cols)
        n_rows += t.num_rows
        keep = ~t.column("in_fit_sample").to_numpy(zero_copy_only=False)
        held += int(keep.sum())
        ok = t.column("correct").to_numpy(zero_copy_only=False)
        has = np.array([v is not None for v in ok.tolist()], dtype=bool) & keep
        labelled += int(has.sum())
        correct += int(np.sum(ok[has].astype(bool)))
        conf = t.column("confidence").to_numpy()[keep]
        k = t.column("flip_budget").to_numpy()[keep]
        fds = t.column("fds").to_numpy()[keep]
        sums["fds"] += float(np.sum(fds))
        tied = near_tie(t.column("margin").to_numpy()[keep])
        ties += int(tied.sum())
        sums["rcma"] += float(np.sum(t.column("rcma").to_numpy()[keep][~tied]))
        k_counts += np.bincount(k, minlength=depth + 2)[: depth + 2]
        le2 += int(np.sum(k <= 2))
        hc += int(np.sum(conf >= _TAU_P))
        hc_brittle += int(np.sum((conf >= _TAU_P) & (k <= 2)))
        hist += np.histogram(fds, bins=_FDS_BINS, range=(0.0, 1.0))[0]
        for op in operators:
            flipped[op] += int(np.sum(np.isfinite(t.column(f"lambda_star_{op}").to_numpy()[keep])))

    def share(count: int) -> float | None:
        return count / held if held else None

    summary = {
        "n_rows": n_rows,
        "n_held_out": held,
        "accuracy": correct / labelled if labelled else None,
        "mean_fds": sums["fds"] / held if held else None,
        "mean_rcma": sums["rcma"] / (held - ties) if held > ties else None,
        "n_near_tie": ties,
        "share_flip_budget_le_2": share(le2),
        "share_high_confidence": share(hc),
        "high_confidence_brittle": hc_brittle,
        "flip_budget_counts": {str(k): int(c) for k, c in enumerate(k_counts) if k >= 1},
        "fds_histogram": {"edges": np.linspace(0, 1, _FDS_BINS + 1).round(4).tolist(), "counts": hist.tolist()},
    }
    for op in operators:
        summary[f"share_flipped_{op}"] = share(flipped[op])
    return summary


@dataclass(frozen=True, kw_only=True)
class CertifyRun:
    """Outcome of :func:`certify_dataset`.

    Attributes
    ----------
    result : RunResult
        Rows, partitions, how many were computed now and how many reused.
    fingerprint : str
        Certificate fingerprint of the run.
    summary : dict
        Contents of ``_summary.json``.
    """

    result: RunResult
    fingerprint: str
    summary: dict


class ThreadedTask:
    """A :class:`CertifyTask` run on ``threads`` threads in whichever process calls it.

    An ONNX model gets a session of that many threads (built once per process); every model's
    OpenMP and BLAS pools are limited to that many while a partition is certified (a Dask
    worker starts with one: distributed sets ``OMP_NUM_THREADS=1``).
    """

    def __init__(self, task: CertifyTask, threads: int) -> None:
        self.task, self.threads = task, int(threads)
        self._ready: CertifyTask | None = None

    def __reduce__(self):
        return (ThreadedTask, (self.task, self.threads))

    def __call__(self, table: pa.Table, row_start: int) -> pa.Table:
        from threadpoolctl import threadpool_limits

        if self._ready is None:
            model = self.task.model
            if hasattr(model, "with_threads"):  # core.tabular.onnx_model.OnnxClassifier
                model = model.with_threads(self.threads)
            self._ready = replace(self.task, model=model)
        with threadpool_limits(limits=self.threads):
            return self._ready(table, row_start)


def certify_dataset(
    data: str | Path,
    out: str | Path,
    model: CertifyTask | FitSpec,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    engine: Engine = "local",
    client=None,
    batch_size: int = 65_536,
    threads: int | None = None,
    progress: Callable[[PartitionInfo | None, int, int | None], None] | None = None,
) -> CertifyRun:
    """Certify every row of ``data`` into the partitioned folder ``out`` (resumable).

    Parameters
    ----------
    data : str or Path
        Parquet file, directory of Parquet files, or CSV file.
    out : str or Path
        Output folder: new/empty, or the folder of an earlier run with the same settings
        (which is then resumed: finished partitions are kept, the rest computed).
    model : CertifyTask or FitSpec
        A ready task (e.g. :func:`load_certify_task`), or how to fit one on the first rows of
        ``data``. The task actually used is saved as ``out/_task.zip``; a resumed run reuses
        that file instead of refitting (an ``out/_task.pkl`` of an earlier version is refused).
    chunk_rows : int, default DEFAULT_CHUNK_ROWS
        Rows per partition; bounds memory (about 3 KB per row while certifying).
    engine : {'local', 'dask'}, default 'local'
    client : distributed.Client, optional
        For ``engine='dask'``; see :func:`core.scale.cluster.connect`.
    batch_size : int, default 65536
        Rows per ``predict_proba`` call for a task fitted here (memory only).
    threads : int, optional
        Threads of the model in every process that certifies: an ONNX model's onnxruntime
        session, and the OpenMP / BLAS pools (``threadpoolctl``) of the others. None: every
        core of this machine, or on Dask each worker's share of its host's cores
        (:func:`core.scale.cluster.worker_threads`). Recorded in the manifest
        (``execution.threads``, the run that finished it); not a setting a resume must repeat:
        the tool's models give the same certificates at any number, and an ONNX model agrees
        within :data:`core.onnx_session.THREAD_RTOL` (identical at one number).
    progress : callable, optional
        ``progress(info, rows_done, rows_total)``: called once before the first partition with
        ``info=None`` (``rows_done`` counts rows reused from an earlier run), then with each
        finished :class:`PartitionInfo`. ``rows_total`` is None for CSV (unknown in advance).

    Returns
    -------
    CertifyRun

    Raises
    ------
    ValueError
        Bad input, a resume with other settings, an unreadable partition (named).
    """
    if not isinstance(model, (CertifyTask, FitSpec)):
        raise ValueError(f"`model` must be a CertifyTask or a FitSpec; got {type(model).__name__}.")
    threads = None if threads is None else check_threads(threads)
    out = Path(out)
    saved = out / TASK_FILE
    if isinstance(model, FitSpec):
        request = {"fit": model.config(), "protocol": model.protocol.to_dict()}
    else:
        request = {
            "task": model.identity,
            "protocol": model.protocol.to_dict(),
            "target": model.target,
            "id_column": model.id_column,
        }
    if (out / LEGACY_TASK_FILE).exists():
        raise legacy_refusal(out / LEGACY_TASK_FILE)
    resuming = (out / MANIFEST).exists() and saved.exists()
    if resuming:
        saved_bytes = saved.read_bytes()
        task = task_from_bytes(saved_bytes, str(saved))
    elif isinstance(model, CertifyTask):
        task = model
        saved_bytes = task_bytes(task)
    else:
        task = fit_certify_task(open_source(data), model, batch_size=batch_size)
        saved_bytes = task_bytes(task)
    source = open_source(data, columns=task.columns)
    if threads is None:
        threads = worker_threads(client) if engine == "dask" and client is not None else check_threads(None)
    config = {
        "data": {"format": source.format, "files": source.identity(), "columns": dict(source.kinds)},
        "chunk_rows": chunk_rows,
        "request": request,
        "task_sha256": hashlib.sha256(saved_bytes).hexdigest(),
    }
    fingerprint = task.fingerprint()
    with RunStore.open(out, config, fingerprint, kind=_KIND) as store:
        if not saved.exists():
            atomic_write_bytes(saved, saved_bytes)  # the one atomic writer
        if engine == "dask":
            check_worker_paths(client, [*source.files, out])
        report = None
        if progress is not None:
            done = [sum(i.rows for i in store.done.values())]
            total = source.n_rows if source.random_access else None
            progress(None, done[0], total)

            def report(info: PartitionInfo) -> None:
                done[0] += info.rows
                progress(info, done[0], total)

        result = run_partitions(
            source,
            ThreadedTask(task, threads),
            store,
            chunk_rows=chunk_rows,
            engine=engine,
            client=client,
            progress=report,
        )
        depth = task.protocol.resolved_depth(len(task.groups))
        summary = summarize_output(out, list(store.done.values()), operators=task.protocol.operators, depth=depth)
        summary = {"fingerprint": fingerprint, **summary}
        store.finish(
            n_partitions=result.n_partitions, n_rows=result.n_rows, summary=summary, execution={"threads": threads}
        )
    return CertifyRun(result=result, fingerprint=fingerprint, summary=summary)
