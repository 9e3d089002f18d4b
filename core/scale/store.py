"""The output folder of a partitioned run: partition files, manifest, journal and lock.

Layout of ``OUT/``::

    part-00000.parquet   one file per input partition, named from its index only
    part-00001.parquet
    _manifest.json       run identity (config + fingerprint); the partition list and how the
                         run was executed (``execution``, e.g. its threads) once complete
    _summary.json        written when the run completes
    .progress.jsonl      journal of finished partitions while the run is incomplete
    .lock                held by the one process driving the run

Every file but the partitions starts with ``_`` or ``.``, which Parquet readers skip, so the
folder itself is a Parquet dataset: ``pandas.read_parquet(OUT)``, ``pyarrow.dataset.dataset(OUT)``
and ``dask.dataframe.read_parquet(OUT)`` read all partitions in order.

Guarantees:

- A partition file appears only complete: it is written to a unique temporary name, flushed
  and atomically renamed (``os.replace``) onto its final name. A retried or duplicated task
  (a Dask worker killed after writing, a resumed run) rewrites identical bytes under the same
  name, so rows are never lost nor duplicated.
- A partition counts as done only once the driver has journalled it with its row count and
  SHA-256; on resume every journalled file is re-hashed and recomputed if it does not match.
- ``_manifest.json`` is written when the run starts; a resume whose config differs in any
  respect is refused with the differing keys, never mixed into the old output.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from core.atomic import atomic_write_bytes as _atomic_write_bytes
from core.formats import RUN_FOLDER

__all__ = [
    "MANIFEST",
    "MAX_PARTITIONS",
    "PartitionInfo",
    "RunStore",
    "partition_name",
    "write_partition",
]

MANIFEST = "_manifest.json"
SUMMARY = "_summary.json"
_JOURNAL = ".progress.jsonl"
_LOCK = ".lock"
_FORMAT = RUN_FOLDER.tag  # "core.scale/1" (core.formats.RUN_FOLDER)
# File names carry a 5-digit index so that lexical order is partition order.
MAX_PARTITIONS = 100_000


def partition_name(index: int) -> str:
    """File name of partition ``index``: ``part-00042.parquet``."""
    if not 0 <= index < MAX_PARTITIONS:
        raise ValueError(f"partition index must be in [0, {MAX_PARTITIONS}); got {index} (use larger chunks).")
    return f"part-{index:05d}.parquet"


@dataclass(frozen=True, kw_only=True)
class PartitionInfo:
    """One finished partition.

    Attributes
    ----------
    index : int
        Partition index.
    row_start : int
        First input row (or unit, e.g. cell) of the partition.
    rows : int
        Number of input rows the partition covered.
    files : dict of str to str
        Each file written (path relative to the output folder) -> SHA-256 of its bytes:
        ``{"part-00042.parquet": ...}`` for a single table, ``{"<name>/part-00042.parquet": ...}``
        per table for a partition that produces several tables.
    """

    index: int
    row_start: int
    rows: int
    files: dict[str, str]


_EMPTY_LOCK_GRACE_S = 5.0


def _age_seconds(path: Path) -> float:
    import time

    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", row_group_size=max(table.num_rows, 1))
    return sink.getvalue().to_pybytes()


def write_partition(
    out: str | Path, index: int, row_start: int, result: pa.Table | Mapping[str, pa.Table], *, rows: int
) -> PartitionInfo:
    """Write partition ``index`` of ``out`` atomically (file by file); return its record.

    ``result`` is one table (written to ``part-<index>.parquet``) or a mapping ``name ->
    table`` (each written to ``<name>/part-<index>.parquet``). The bytes depend only on the
    tables (no timestamps), so rewriting a partition with the same content gives identical
    files and hashes.
    """
    out = Path(out)
    name = partition_name(index)
    tables = {name: result} if isinstance(result, pa.Table) else {f"{k}/{name}": t for k, t in result.items()}
    files = {}
    for rel, table in tables.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _parquet_bytes(table)
        _atomic_write_bytes(path, data)
        files[rel] = hashlib.sha256(data).hexdigest()
    return PartitionInfo(index=index, row_start=row_start, rows=rows, files=files)


def _canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, indent=1, allow_nan=False) + "\n"


def _differences(stored: dict, current: dict, prefix: str = "") -> list[str]:
    absent = object()
    out = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key, absent), current.get(key, absent)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            shown_a, shown_b = ("<absent>" if v is absent else json.dumps(v)[:80] for v in (a, b))
            out.append(f"{prefix}{key}: {shown_a} (stored) vs {shown_b} (now)")
    return out


class RunStore:
    """Driver-side handle on an output folder: lock, manifest, journal.

    Open with :meth:`open`; use as a context manager so the lock is always released.

    Parameters
    ----------
    out : Path
        Output folder.
    config : dict
        JSON-serialisable run identity (input content, columns, chunking, model, protocol).
        A resume must present an equal config.
    fingerprint : str
        Fingerprint of the run (stored at the top level of the manifest; a resume must match).
    kind : str
        What the folder holds (``"certify"``, ``"paired-grid"``); another kind is refused.
    """

    def __init__(self, out: Path, config: dict, fingerprint: str, *, kind: str):
        self.out = out
        self.config = config
        self.fingerprint = fingerprint
        self.kind = kind
        self.done: dict[int, PartitionInfo] = {}
        self.resumed = False
        self._lock_held = False

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, out: str | Path, config: dict, fingerprint: str, *, kind: str) -> RunStore:
        """Create ``out`` for a new run, or resume the run already there.

        Raises
        ------
        NewerFormatError
            ``out`` holds a run written by a newer version of the tool (``_manifest.json``'s
            ``format``, :data:`core.formats.RUN_FOLDER`).
        ValueError
            ``out`` is a file, is a non-empty folder that is not a run of ``kind``, holds a
            run with a different config, or is locked by a live process.
        """
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"`--out` {out} exists and is not a folder.")
        out.mkdir(parents=True, exist_ok=True)
        store = cls(out, config, fingerprint, kind=kind)
        store._acquire_lock()
        try:
            store._open_manifest()
        except BaseException:
            store.close()
            raise
        return store

    def _acquire_lock(self) -> None:
        lock = self.out / _LOCK
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    holder = json.loads(lock.read_text())
                except (OSError, ValueError):
                    holder = {}
                stale = holder.get("host") == me["host"] and not psutil.pid_exists(holder.get("pid", -1))
                # An unreadable lock is one whose writer died (or hit a full disk) between
                # creating and filling it; a live writer fills it within microseconds.
                stale = stale or (not holder and _age_seconds(lock) > _EMPTY_LOCK_GRACE_S)
                if not stale:
                    raise ValueError(
                        f"output folder {self.out} is in use by process {holder.get('pid')} on "
                        f"{holder.get('host')}; if that run has ended, delete {lock}."
                    ) from None
                lock.unlink(missing_ok=True)
                continue
            try:
                with os.fdopen(fd, "w") as fh:
                    json.dump(me, fh)
            except BaseException:  # e.g. ENOSPC: leave no empty lock behind to block the rerun
                lock.unlink(missing_ok=True)
                raise
            self._lock_held = True
            return
        raise ValueError(f"could not take the lock {lock}.")  # pragma: no cover - lost a race twice

    def _open_manifest(self) -> None:
        path = self.out / MANIFEST
        if not path.exists():
            stray = [p.name for p in self.out.iterdir() if p.name != _LOCK]
            if stray:
                raise ValueError(
                    f"output folder {self.out} is not empty ({', '.join(sorted(stray)[:5])}) and "
                    f"holds no {MANIFEST}; choose an empty or new folder."
                )
            self._write_manifest(complete=False)
            return
        try:
            stored = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); choose a new output folder.") from exc
        if not isinstance(stored, dict):
            stored = {}
        mismatch = (
            f"{path} belongs to a {stored.get('kind')!r} run ({stored.get('format')}), not a "
            f"{self.kind!r} run; choose a new output folder."
        )
        RUN_FOLDER.check(stored.get("format"), where=str(self.out), mismatch=mismatch)
        if stored.get("kind") != self.kind:
            raise ValueError(mismatch)
        diffs = _differences(stored.get("config", {}), self.config)
        if stored.get("fingerprint") != self.fingerprint:
            diffs.append(f"fingerprint: {stored.get('fingerprint')} (stored) vs {self.fingerprint} (now)")
        if diffs:
            raise ValueError(
                f"output folder {self.out} holds a run with different settings, refusing to resume:\n  "
                + "\n  ".join(diffs)
                + "\nRerun with the stored settings or choose a new output folder."
            )
        self.resumed = True
        records = [PartitionInfo(**p) for p in stored.get("partitions", [])]
        records += self._read_journal()
        for info in records:
            if all(
                (self.out / rel).exists() and _sha256_file(self.out / rel) == sha for rel, sha in info.files.items()
            ):
                self.done[info.index] = info
        self._remove_temporaries()

    def _read_journal(self) -> list[PartitionInfo]:
        path = self.out / _JOURNAL
        if not path.exists():
            return []
        records = []
        for line in path.read_text().splitlines():
            try:
                records.append(PartitionInfo(**json.loads(line)))
            except (ValueError, TypeError):
                # A driver killed mid-append leaves a torn last line; that partition is redone.
                continue
        return records

    # -- progress ----------------------------------------------------------------------------
    def completed(self) -> frozenset[int]:
        """Indices of partitions already done (verified by hash)."""
        return frozenset(self.done)

    def record(self, info: PartitionInfo) -> None:
        """Journal a finished partition (append + fsync: O(1) per partition)."""
        self.done[info.index] = info
        with open(self.out / _JOURNAL, "a") as fh:
            fh.write(json.dumps(asdict(info), sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def finish(self, *, n_partitions: int, n_rows: int, summary: dict, execution: dict | None = None) -> None:
        """Check that partitions ``0 .. n_partitions-1`` are all done, then seal the run.

        ``execution`` (JSON) goes in the manifest as it is: how the run that finished was
        executed, settings that do not change its outputs and so are not part of ``config``.
        """
        missing = sorted(set(range(n_partitions)) - set(self.done))
        if missing:
            raise RuntimeError(f"cannot finish: partitions {missing[:10]} are not done.")
        extra = sorted(set(self.done) - set(range(n_partitions)))
        if extra:
            raise RuntimeError(f"cannot finish: unexpected partitions {extra[:10]}.")
        written = sum(self.done[i].rows for i in range(n_partitions))
        if written != n_rows:
            raise RuntimeError(f"cannot finish: {written} rows written, {n_rows} rows read.")
        _atomic_write_bytes(self.out / SUMMARY, _canonical_json(summary).encode())
        self._write_manifest(complete=True, n_rows=n_rows, execution=execution)
        (self.out / _JOURNAL).unlink(missing_ok=True)
        # Every partition is final now, so nothing can still be renamed from a temporary.
        self._remove_temporaries()

    def _remove_temporaries(self) -> None:
        """Delete temporaries of attempts that died mid-write (a killed worker or driver)."""
        for tmp in self.out.rglob(".part-*.tmp"):
            tmp.unlink(missing_ok=True)

    def _write_manifest(self, *, complete: bool, n_rows: int | None = None, execution: dict | None = None) -> None:
        manifest = {
            "format": _FORMAT,
            "kind": self.kind,
            "fingerprint": self.fingerprint,
            "config": self.config,
            "complete": complete,
        }
        if complete:
            manifest["n_rows"] = n_rows
            manifest["partitions"] = [asdict(self.done[i]) for i in sorted(self.done)]
            if execution is not None:
                manifest["execution"] = execution
        _atomic_write_bytes(self.out / MANIFEST, _canonical_json(manifest).encode())

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock_held:
            (self.out / _LOCK).unlink(missing_ok=True)
            self._lock_held = False

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
