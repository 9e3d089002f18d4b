"""Read a ``certify`` output folder out of core: check it, then query its partitions.

:func:`open_certify_folder` checks a folder written by :func:`core.scale.certify.certify_dataset`
(layout in :mod:`core.scale.store`) and returns a :class:`CertifyResults`, whose queries read the
partitioned Parquet with ``pyarrow.dataset``: a sort or a filter reads only the columns it needs
(two 8-byte columns of a million rows are 16 MB), and a page of rows reads its rows' partitions
only. Nothing ever holds the whole table; callers turn a page into pandas.

A folder is one of:

- **complete** (``_manifest.json`` says so): every partition the manifest lists must be there
  with its recorded row count, row range, column types and SHA-256, no other partition file may
  be there, and ``_summary.json`` and ``_task.zip`` must be those of the manifest's run;
- **partial** (a run still going or interrupted): the partitions journalled so far
  (``.progress.jsonl``) are shown, each checked the same way; a partition file not journalled
  yet is being written and is left out. :attr:`CertifyResults.complete` is False and
  :attr:`CertifyResults.status` says which.

A part that disagrees with the rest raises :class:`CertifyFolderError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from core.formats import RUN_FOLDER
from core.scale.store import MANIFEST, SUMMARY, PartitionInfo

__all__ = [
    "FILTER_OPS",
    "CertifyFolderError",
    "CertifyResults",
    "RowFilter",
    "certify_run_finished",
    "is_certify_folder",
    "list_certify_folders",
    "RecomputedRow",
    "locate_input",
    "open_certify_folder",
    "recompute_row",
    "run_is_live",
]

_JOURNAL = ".progress.jsonl"
_LOCK = ".lock"
_TASK = "_task.zip"
#: Columns every ``certify`` partition has (the id column and ``lambda_star_<op>`` vary).
REQUIRED_COLUMNS = (
    "row",
    "in_fit_sample",
    "pred",
    "pred_label",
    "confidence",
    "margin",
    "flip_budget",
    "rcma",
    "fds",
    "u",
    "path",
    "path_margins",
    "path_preds",
)
#: Columns holding lists (read for one row at a time, never sorted or filtered on).
LIST_COLUMNS = ("path", "path_margins", "path_preds")
#: Comparison operators of :class:`RowFilter`.
FILTER_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")
#: Threads reading the partitions of one page.
_READERS = 4
#: Sort orders kept per folder (a row order of a million rows is 8 MB).
_ORDERS_KEPT = 8


class CertifyFolderError(ValueError):
    """A ``certify`` output folder that cannot be shown: not one, or its parts disagree."""


@dataclass(frozen=True, kw_only=True)
class RowFilter:
    """One condition on a column: ``column op value``.

    Attributes
    ----------
    column : str
        A scalar column of the folder.
    op : str
        One of :data:`FILTER_OPS`.
    value : object
        A number, text or bool; a list of them for ``in`` / ``not in``.
    """

    column: str
    op: str
    value: object

    def __post_init__(self) -> None:
        if self.op not in FILTER_OPS:
            raise ValueError(f"filter operator must be one of {list(FILTER_OPS)}; got {self.op!r}.")
        if self.op in ("in", "not in") and not isinstance(self.value, (list, tuple)):
            raise ValueError(f"filter {self.column!r} {self.op}: the value must be a list; got {self.value!r}.")


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CertifyFolderError(f"{path.parent}: {what} {path.name} is missing.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CertifyFolderError(f"{path}: {what} cannot be read ({exc}).") from None
    if not isinstance(data, dict):
        raise CertifyFolderError(f"{path}: {what} is not a JSON object.")
    return data


def is_certify_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder whose ``_manifest.json`` names a ``certify`` run (not checked further)."""
    manifest = Path(path) / MANIFEST
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and data.get("kind") == "certify"


def certify_run_finished(path: str | Path) -> bool:
    """Whether the certify run in ``path`` says it finished (its manifest only; not checked further)."""
    try:
        data = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and data.get("complete") is True


def list_certify_folders(root: str | Path) -> list[Path]:
    """Sub-folders of ``root`` holding a ``certify`` run (finished or not), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and is_certify_folder(p))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def _journal(folder: Path) -> list[PartitionInfo]:
    path = folder / _JOURNAL
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(PartitionInfo(**json.loads(line)))
        except (ValueError, TypeError):  # the torn last line of a killed driver: not done
            continue
    return records


def run_is_live(folder: str | Path) -> bool:
    """Whether a live process holds the folder's lock (a run still going; another host's counts as live)."""
    import psutil

    folder = Path(folder)
    try:
        holder = json.loads((folder / _LOCK).read_text())
    except (OSError, ValueError):
        return (folder / _LOCK).exists()
    if not isinstance(holder, dict):
        return False
    if holder.get("host") != socket.gethostname():
        return True  # another machine's run: assume it goes on
    return psutil.pid_exists(int(holder.get("pid", -1)))


def _check_partition(folder: Path, info: PartitionInfo, *, schema: pa.Schema | None) -> pa.Schema:
    """The partition's schema, after checking its file against its record; raise naming the part."""
    (rel,) = info.files
    path = folder / rel
    if not path.is_file():
        raise CertifyFolderError(f"{folder}: partition {rel} (rows {info.row_start}..) is listed but missing.")
    if _sha256(path) != info.files[rel]:
        raise CertifyFolderError(
            f"{folder}: partition {rel} differs from the one the run recorded (SHA-256 mismatch): the file was "
            "changed or replaced after it was written."
        )
    try:
        meta = pq.read_metadata(path)
    except (OSError, pa.ArrowException) as exc:
        raise CertifyFolderError(f"{folder}: partition {rel} cannot be read ({exc}).") from None
    if meta.num_rows != info.rows:
        raise CertifyFolderError(f"{folder}: partition {rel} holds {meta.num_rows} rows; the run recorded {info.rows}.")
    found = meta.schema.to_arrow_schema()
    if schema is not None and not found.equals(schema):
        raise CertifyFolderError(f"{folder}: partition {rel} has other columns or column types than the first one.")
    rows = found.get_field_index("row")
    if rows < 0:
        raise CertifyFolderError(f"{folder}: partition {rel} has no `row` column; it is not a certify partition.")
    if info.rows:
        stats = meta.row_group(0).column(rows).statistics
        last = info.row_start + info.rows - 1
        if stats is None or not stats.has_min_max or (stats.min, stats.max) != (info.row_start, last):
            raise CertifyFolderError(
                f"{folder}: partition {rel} does not hold input rows {info.row_start}..{last} as the run recorded."
            )
    return found


def open_certify_folder(path: str | Path) -> CertifyResults:
    """Check the ``certify`` output folder ``path`` and open it for queries.

    Every partition shown is hashed and checked against the run's record (row count, row range,
    SHA-256, column types): a million rows take about a second.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool.
    CertifyFolderError
        Not a ``certify`` folder, or a part (named) disagrees with the rest: a partition missing,
        changed or of other columns, a partition file the finished run does not list, a
        ``_summary.json`` or ``_task.zip`` of another run.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise CertifyFolderError(f"{folder} does not exist or is not a folder.")
    manifest = _read_json(folder / MANIFEST, "the run manifest")
    mismatch = f"{folder}: {MANIFEST} is not that of a certify run (format {manifest.get('format')!r})."
    RUN_FOLDER.check(manifest.get("format"), where=str(folder), mismatch=mismatch)
    if manifest.get("kind") != "certify":
        raise CertifyFolderError(f"{folder} holds a {manifest.get('kind')!r} run, not a certify run.")
    config = manifest.get("config") or {}
    fingerprint = manifest.get("fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint:
        raise CertifyFolderError(f"{folder}: {MANIFEST} has no fingerprint.")
    complete = manifest.get("complete") is True
    try:
        records = [PartitionInfo(**p) for p in manifest.get("partitions", [])] if complete else _journal(folder)
    except TypeError as exc:
        raise CertifyFolderError(f"{folder}: {MANIFEST} lists a partition it cannot describe ({exc}).") from None
    by_index: dict[int, PartitionInfo] = {}
    for info in records:
        if len(info.files) != 1:
            raise CertifyFolderError(
                f"{folder}: partition {info.index} lists {len(info.files)} files; certify writes one."
            )
        by_index[info.index] = info  # a partition journalled twice (rerun of a lost task): the same bytes
    parts = [by_index[i] for i in sorted(by_index)]
    task = folder / _TASK
    if task.is_file() and config.get("task_sha256") and _sha256(task) != config["task_sha256"]:
        raise CertifyFolderError(f"{folder}: {_TASK} is not the task this run was made with (SHA-256 mismatch).")
    listed = {next(iter(p.files)) for p in parts}
    if complete:
        stray = sorted(p.name for p in folder.glob("part-*.parquet") if p.name not in listed)
        if stray:
            raise CertifyFolderError(f"{folder}: partition {stray[0]} is not part of the finished run.")
        expected = 0
        for info in parts:
            if info.row_start != expected:
                raise CertifyFolderError(
                    f"{folder}: partition {next(iter(info.files))} starts at row {info.row_start}; expected {expected}."
                )
            expected += info.rows
        if manifest.get("n_rows") != expected:
            raise CertifyFolderError(
                f"{folder}: {MANIFEST} counts {manifest.get('n_rows')} rows; its partitions hold {expected}."
            )
        summary = _read_json(folder / SUMMARY, "the run summary")
        if summary.get("fingerprint") != fingerprint or summary.get("n_rows") != expected:
            raise CertifyFolderError(f"{folder}: {SUMMARY} belongs to another run than {MANIFEST}.")
    else:
        summary = None
    schema = None
    for info in parts:
        schema = _check_partition(folder, info, schema=schema)
    if schema is not None:
        absent = [c for c in REQUIRED_COLUMNS if c not in schema.names]
        if absent:
            raise CertifyFolderError(f"{folder}: the partitions lack the column(s) {', '.join(absent)}.")
    return CertifyResults(
        folder,
        manifest=manifest,
        parts=tuple(parts),
        schema=schema,
        summary=summary,
        running=not complete and run_is_live(folder),
        pending=sorted(p.name for p in folder.glob("part-*.parquet") if p.name not in listed),
    )


class CertifyResults:
    """A checked ``certify`` folder; every query reads its partitions out of core.

    Not built directly: see :func:`open_certify_folder`. Safe to share between threads (one
    object per folder serves every session of a dashboard).

    Attributes
    ----------
    path : Path
    fingerprint : str
        The certificates' fingerprint (decisions on its rows are stored under it).
    complete : bool
        The run finished; else only :attr:`n_rows` rows of a longer table are shown.
    running : bool
        An unfinished run whose process is still alive.
    n_rows : int
        Rows shown (all partitions done).
    partitions : int
        Partitions shown.
    pending : list of str
        Partition files present but not yet recorded by the run (being written).
    summary : dict or None
        ``_summary.json`` of a finished run.
    config : dict
        The manifest's run identity (input files, chunking, model request, protocol).
    """

    def __init__(
        self,
        path: Path,
        *,
        manifest: dict,
        parts: tuple[PartitionInfo, ...],
        schema: pa.Schema | None,
        summary: dict | None,
        running: bool,
        pending: list[str],
    ):
        self.path = path
        self.fingerprint: str = manifest["fingerprint"]
        self.complete: bool = manifest.get("complete") is True
        self.running = running
        self.config: dict = manifest.get("config") or {}
        self.summary = summary
        self.pending = pending
        self._parts = parts
        self._starts = [p.row_start for p in parts]
        self.n_rows = sum(p.rows for p in parts)
        self.partitions = len(parts)
        self._schema = schema
        files = [str(path / next(iter(p.files))) for p in parts]
        self._dataset = ds.dataset(files, format="parquet", schema=schema) if files else None
        self._orders: OrderedDict[tuple, pa.Array] = OrderedDict()
        self._lock = threading.Lock()

    # -- description -------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """``"complete"``, ``"running"`` or ``"interrupted"``."""
        return "complete" if self.complete else ("running" if self.running else "interrupted")

    @property
    def columns(self) -> dict[str, str]:
        """Scalar column -> ``"number"``, ``"text"`` or ``"bool"`` (list columns left out)."""
        if self._schema is None:
            return {}
        out = {}
        for field in self._schema:
            if field.name in LIST_COLUMNS:
                continue
            t = field.type
            out[field.name] = (
                "bool"
                if pa.types.is_boolean(t)
                else ("text" if pa.types.is_string(t) or pa.types.is_large_string(t) else "number")
            )
        return out

    @property
    def operators(self) -> tuple[str, ...]:
        """The protocol's operators (one ``lambda_star_<op>`` column each)."""
        return tuple(c.removeprefix("lambda_star_") for c in self.columns if c.startswith("lambda_star_"))

    @property
    def request(self) -> dict:
        """The model request: ``{"fit": {...}}`` or ``{"task": {...}}``, and the protocol."""
        return self.config.get("request") or {}

    # -- queries -------------------------------------------------------------------------------
    def _expression(self, filters: Sequence[RowFilter]) -> ds.Expression | None:
        kinds = self.columns
        expr = None
        for f in filters:
            if not isinstance(f, RowFilter):
                raise ValueError(f"filters must be RowFilter objects; got {type(f).__name__}.")
            if f.column not in kinds:
                raise ValueError(f"cannot filter on {f.column!r}; columns: {list(kinds)}.")
            values = list(f.value) if f.op in ("in", "not in") else [f.value]
            for v in values:
                ok = {
                    "number": isinstance(v, (int, float, np.number)) and not isinstance(v, bool),
                    "text": isinstance(v, str),
                    "bool": isinstance(v, (bool, np.bool_)),
                }[kinds[f.column]]
                if not ok:
                    raise ValueError(f"filter {f.column!r} {f.op} {v!r}: the column holds {kinds[f.column]} values.")
            field = ds.field(f.column)
            one = {
                "==": lambda: field == f.value,
                "!=": lambda: field != f.value,
                "<": lambda: field < f.value,
                "<=": lambda: field <= f.value,
                ">": lambda: field > f.value,
                ">=": lambda: field >= f.value,
                "in": lambda: field.isin(values),
                "not in": lambda: ~field.isin(values),
            }[f.op]()
            expr = one if expr is None else expr & one
        return expr

    def _check_sort(self, sort: str) -> None:
        if sort not in self.columns:
            raise ValueError(f"cannot sort by {sort!r}; columns: {list(self.columns)}.")

    def order(self, *, sort: str = "row", descending: bool = False, filters: Sequence[RowFilter] = ()) -> pa.Array:
        """Row numbers of the rows passing ``filters``, sorted by ``sort`` (ties: by row).

        Missing values (null, NaN) come last in either direction, as in pandas. The order of the
        last few (sort, filters) asked is kept, so paging through it reads nothing again.
        """
        if self._dataset is None:  # no partition finished yet: nothing to sort
            return pa.array([], pa.int64())
        self._check_sort(sort)
        key = (sort, bool(descending), tuple((f.column, f.op, repr(f.value)) for f in filters))
        with self._lock:
            if key in self._orders:
                self._orders.move_to_end(key)
                return self._orders[key]
        expr = self._expression(filters)
        columns = ["row"] if sort == "row" else ["row", sort]
        table = self._dataset.to_table(columns=columns, filter=expr, use_threads=False)
        rows = table.column("row").to_numpy()
        in_order = bool(np.all(rows[1:] > rows[:-1]))  # partitions are listed, and read, in row order
        if sort == "row":
            rows = rows if in_order else np.sort(rows)
            rows = rows[::-1] if descending else rows
        elif self.columns[sort] == "text":
            direction = "descending" if descending else "ascending"
            keys = [(sort, direction, "at_end"), ("row", "ascending")]
            rows = rows[pc.sort_indices(table, sort_keys=keys).to_numpy()]
        else:
            # One stable numeric sort (ties keep row order) is twice as fast as Arrow's two-key sort;
            # NaN (and null, read as NaN) sorts last either way, as in pandas.
            values = table.column(sort).to_numpy(zero_copy_only=False).astype(np.float64)
            ranked = -values if descending else values
            index = np.argsort(ranked, kind="stable") if in_order else np.lexsort((rows, ranked))
            rows = rows[index]
        rows = pa.array(np.ascontiguousarray(rows), pa.int64())
        with self._lock:
            self._orders[key] = rows
            while len(self._orders) > _ORDERS_KEPT:
                self._orders.popitem(last=False)
        return rows

    def count(self, filters: Sequence[RowFilter] = ()) -> int:
        """Rows passing ``filters``."""
        if self._dataset is None:
            return 0
        expr = self._expression(filters)
        return self._dataset.count_rows(filter=expr) if expr is not None else self.n_rows

    def rows(self, row_ids: Sequence[int] | pa.Array, *, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows with these row numbers, in the order given (list columns included if asked).

        Reads only the partitions holding them, and only ``columns`` (default: every scalar
        column). Raises ValueError naming a row number the folder does not show.
        """
        names = list(self.columns) if columns is None else list(columns)
        unknown = [c for c in names if self._schema is None or c not in self._schema.names]
        if unknown:
            raise ValueError(f"unknown column(s) {unknown}; columns: {self._schema.names if self._schema else []}.")
        ids = np.asarray(row_ids.to_numpy() if isinstance(row_ids, pa.Array) else row_ids, dtype=np.int64)
        if ids.size == 0:
            return pa.Table.from_pylist([], schema=pa.schema([self._schema.field(c) for c in names]))
        where = np.searchsorted(self._starts, ids, side="right") - 1
        for r, p in zip(ids.tolist(), where.tolist()):
            if p < 0 or r >= self._parts[p].row_start + self._parts[p].rows:
                shown = "the rows shown" if not self.complete else "the table"
                raise ValueError(f"row {r} is not in {shown} (rows 0..{self.n_rows - 1} are).")

        def read(p: int) -> tuple[np.ndarray, pa.Table]:
            mine = np.flatnonzero(where == p)
            info = self._parts[p]
            table = pq.read_table(self.path / next(iter(info.files)), columns=names, use_threads=False)
            return mine, table.take(pa.array(ids[mine] - info.row_start))

        # A page sorted by a score has rows in most partitions: they are decoded side by side
        # (Arrow releases the GIL), each partition by one thread.
        with ThreadPoolExecutor(max_workers=_READERS) as pool:
            found = list(pool.map(read, np.unique(where).tolist()))
        positions = [mine for mine, _ in found]
        joined = pa.concat_tables([table for _, table in found])
        back = np.argsort(np.concatenate(positions), kind="stable")
        return joined.take(pa.array(back))

    def page(
        self,
        *,
        sort: str = "row",
        descending: bool = False,
        filters: Sequence[RowFilter] = (),
        offset: int = 0,
        limit: int = 50,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Rows ``offset .. offset + limit - 1`` of the sorted, filtered table."""
        for name, value in (("offset", offset), ("limit", limit)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"`{name}` must be an int >= 0; got {value!r}.")
        order = self.order(sort=sort, descending=descending, filters=filters)
        return self.rows(order.slice(int(offset), int(limit)), columns=columns)

    def value_counts(self, column: str, *, filters: Sequence[RowFilter] = ()) -> dict:
        """Value -> count of a scalar column over the rows passing ``filters`` (None = missing)."""
        if column not in self.columns:
            raise ValueError(f"unknown column {column!r}; columns: {list(self.columns)}.")
        counts: dict = {}
        if self._dataset is None:
            return counts
        for batch in self._dataset.to_batches(columns=[column], filter=self._expression(filters)):
            vc = pc.value_counts(batch.column(0))
            for value, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                counts[value] = counts.get(value, 0) + n
        return counts

    def scan(self, columns: Sequence[str], *, filters: Sequence[RowFilter] = ()):
        """Record batches of ``columns`` over the rows passing ``filters``, in row order (streamed)."""
        if self._dataset is None:
            return iter(())
        return self._dataset.to_batches(columns=list(columns), filter=self._expression(filters))

    def partition_infos(self) -> tuple[PartitionInfo, ...]:
        """The partitions shown, in order."""
        return self._parts

    def task_info(self) -> dict:
        """``task.json`` of the run's ``_task.zip`` (classes, groups, protocol, target, model family),
        read without loading the model; empty when the run has not saved its task yet."""
        from core.tabular.persist import unzip_members

        task = self.path / _TASK
        if not task.is_file():
            return {}
        try:
            members = unzip_members(task.read_bytes(), str(task))
            info = json.loads(members["task.json"])
        except (OSError, KeyError, ValueError) as exc:
            raise CertifyFolderError(f"{self.path}: {_TASK} cannot be read ({exc}).") from None
        return info if isinstance(info, dict) else {}

    def depth(self) -> int | None:
        """Removal depth ``K`` of the certificates (None with no row yet)."""
        if not self._parts:
            return None
        first = pq.read_table(self.path / next(iter(self._parts[0].files)), columns=["path"]).slice(0, 1)
        return len(first.column("path")[0].as_py()) if first.num_rows else None


def locate_input(results: CertifyResults, *, near: Sequence[str | Path] = ()) -> Path | None:
    """The run's input table, found by its recorded identity (name, size, footer or head/tail digest).

    Looked for in ``near``, beside the run's folder, and where the dashboard keeps an upload it
    certifies (:data:`core.scale.upload_certify.INPUTS_DIR`); None when no file there matches.
    A folder of several Parquet files is found as that folder.
    """
    from core.scale.sources import file_identity
    from core.scale.upload_certify import INPUTS_DIR

    data = results.config.get("data") or {}
    files, kind = data.get("files") or [], data.get("format")
    if not files or kind not in ("parquet", "csv"):
        return None
    places = [Path(p) for p in near] + [results.path.parent, results.path.parent / INPUTS_DIR / results.path.name]
    for place in places:
        matches = []
        for recorded in files:
            path = place / recorded["name"]
            try:
                matches.append(path.is_file() and file_identity(path, root=place, kind=kind) == recorded)
            except (OSError, ValueError):
                matches.append(False)
        if matches and all(matches):
            return place / files[0]["name"] if len(files) == 1 else place
    return None


@dataclass(frozen=True, kw_only=True)
class RecomputedRow:
    """One row certified again with the run's saved task.

    Attributes
    ----------
    certificate : core.cfc.certificate_set.SampleCertificate
        The full certificate (operator curves, one-step drops, class probabilities on the path).
    classes : tuple of str
        Class labels of ``predict_proba``'s columns.
    raw : dict
        The row's raw values as read from the input.
    differences : dict of str to float
        Largest absolute difference from the stored values, per column compared (0.0 = equal).
    """

    certificate: object
    classes: tuple[str, ...]
    raw: dict
    differences: dict[str, float]


def recompute_row(results: CertifyResults, row: int, *, data: str | Path, trusted: Sequence[str] = ()) -> RecomputedRow:
    """Certify input row ``row`` again from ``data`` with the run's ``_task.zip``.

    Parquet inputs read the row's row group only; a CSV is streamed up to the row's partition.

    Raises
    ------
    ValueError
        ``row`` is not shown, the task cannot be loaded (untrusted skops types are named), the
        input does not hold the row, or the task's model does not give the run's fingerprint.
    """
    from core.cfc import certify
    from core.scale.sources import open_source
    from core.tabular.certify_task import load_certify_task

    results.rows([row], columns=["row"])  # refuses a row the folder does not show
    task = load_certify_task(results.path / _TASK, trusted=tuple(trusted))
    source = open_source(data, columns=task.columns)
    if source.random_access:
        table = source.read_partition(int(row), 1)
    else:
        chunk = int(results.config.get("chunk_rows") or 25_000)
        index = int(row) // chunk
        found = next(iter(source.iter_partitions(chunk, skip=frozenset(range(index)))), None)
        if found is None or found[0] != index:
            raise ValueError(f"{data} has no row {row}.")
        table = found[1].slice(int(row) - index * chunk, 1)
    frame = table.select(list(task.preprocessor.raw_columns)).to_pandas()
    X = task.preprocessor.transform(frame)

    def predict_proba(Z):
        return np.asarray(task.model.predict_proba(Z), dtype=np.float64)

    cs = certify(predict_proba, X, task.groups, task.baseline, task.protocol)
    if cs.fingerprint != results.fingerprint:
        raise ValueError(
            f"{results.path.name}: its saved task gives certificates of fingerprint {cs.fingerprint[:16]}…, not "
            f"the run's {results.fingerprint[:16]}…; the task file was changed."
        )
    cert = cs.certificate(0)
    stored = results.rows([row], columns=["confidence", "margin", "fds", "rcma", "u", "flip_budget", "path_margins"])
    stored = stored.to_pylist()[0]
    differences = {
        name: float(abs(getattr(cert, name) - stored[name]))
        for name in ("confidence", "margin", "fds", "rcma", "u", "flip_budget")
    }
    differences["path_margins"] = float(np.max(np.abs(np.asarray(cert.path_margins) - stored["path_margins"])))
    return RecomputedRow(
        certificate=cert, classes=tuple(task.classes), raw=table.to_pylist()[0], differences=differences
    )
