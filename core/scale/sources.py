"""Bounded-memory, partitioned reading of Parquet and CSV tables.

A *partition* is a fixed range of rows of the logical table: partition ``i`` holds rows
``[i * chunk_rows, (i + 1) * chunk_rows)`` (the last one may be shorter). The same input and
``chunk_rows`` therefore always give the same partitions, which is what makes a run resumable
and its output independent of the engine that computed it.

Every partition is returned as a :class:`pyarrow.Table` with one *canonical* schema fixed when
the source is opened, whatever the file or batch it came from: numeric and boolean columns
become ``float64`` (missing = NaN), text columns become ``large_string`` (missing = null). This
keeps dtypes identical across partitions — a column that happens to have no missing value in
one partition must not turn into ``int64`` there and ``float64`` elsewhere.

Memory: a read holds one partition plus the compressed bytes of the Parquet row groups it
touches (or one CSV block), never the whole file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from core.validation import check_positive_int, check_text_table, check_unique_columns

__all__ = [
    "ColumnKind",
    "CsvSource",
    "ParquetSource",
    "PartitionReadError",
    "Source",
    "file_identity",
    "open_source",
]

ColumnKind = Literal["numeric", "bool", "string"]
_CANONICAL_TYPE = {"numeric": pa.float64(), "bool": pa.float64(), "string": pa.large_string()}
# CSV bytes parsed per pyarrow block: large enough for throughput, small next to a partition.
_CSV_BLOCK_BYTES = 4 << 20
_IDENTITY_BYTES = 1 << 20


class PartitionReadError(ValueError):
    """A partition of the input could not be read or converted; the message names it."""


def _kind_of_arrow_type(t: pa.DataType) -> ColumnKind | None:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t):
        return "numeric"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    return None


def _to_canonical(
    column: pa.ChunkedArray | pa.Array, kind: ColumnKind, *, from_text: bool
) -> pa.ChunkedArray | pa.Array:
    """Cast one column to its canonical type; raises ``pa.ArrowInvalid`` on unparsable text."""
    if pa.types.is_dictionary(column.type):
        column = (
            column.dictionary_decode()
            if isinstance(column, pa.Array)
            else pa.chunked_array([c.dictionary_decode() for c in column.chunks], type=column.type.value_type)
        )
    if kind == "string":
        return pc.cast(column, pa.large_string())
    if kind == "bool" and from_text:
        # CSV text such as "true"/"False"/"1": parse to bool first, then to 0/1.
        column = pc.cast(pc.utf8_lower(column), pa.bool_())
    return pc.cast(column, pa.float64())


def _canonical_schema(kinds: dict[str, ColumnKind]) -> pa.Schema:
    return pa.schema([pa.field(name, _CANONICAL_TYPE[kind]) for name, kind in kinds.items()])


def _select_columns(available: Sequence[str], columns: Sequence[str] | None, where: str) -> list[str]:
    check_unique_columns(available, where)  # a repeated header would otherwise surface as a KeyError
    if columns is None:
        return list(available)
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(f"{where} has no column(s) {missing}; its columns are {list(available)}.")
    if len(set(columns)) != len(columns):
        raise ValueError(f"`columns` lists a column more than once: {list(columns)}.")
    return list(columns)


def _validate_chunk_rows(chunk_rows: int) -> int:
    return check_positive_int(chunk_rows, "chunk_rows")


def _rebatch(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Regroup a stream of record batches into tables of exactly ``rows`` rows (last: fewer)."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        while batch.num_rows:
            take = min(rows - held, batch.num_rows)
            pending.append(batch.slice(0, take))
            held += take
            batch = batch.slice(take)
            if held == rows:
                yield pa.Table.from_batches(pending)
                pending, held = [], 0
    if held:
        yield pa.Table.from_batches(pending)


def file_identity(path: Path, *, root: Path, kind: Literal["parquet", "csv"]) -> dict:
    """Cheap content identity of an input file, used to refuse resuming on other data.

    Name (relative to ``root``) and size, plus the SHA-256 of the Parquet footer (schema, row
    counts and per-column statistics of every row group) or, for CSV, of the first and last
    MiB. It never reads the whole file, so it costs nothing on large inputs; and a file that
    was repaired byte for byte (a corrupt copy replaced by a good one of the same content)
    keeps its identity, so the run can resume after an unreadable partition.
    """
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if kind == "parquet":
            if size < 12:
                raise ValueError(f"{path} is too short to be a Parquet file ({size} bytes).")
            fh.seek(size - 8)
            footer_len = int.from_bytes(fh.read(4), "little")
            fh.seek(max(size - 8 - footer_len, 0))
            digest.update(fh.read(footer_len + 8))
        else:
            digest.update(fh.read(_IDENTITY_BYTES))
            fh.seek(max(size - _IDENTITY_BYTES, 0))
            digest.update(fh.read(_IDENTITY_BYTES))
    return {"name": path.relative_to(root).as_posix(), "bytes": size, "sha256": digest.hexdigest()}


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet file, or a directory of Parquet files read in sorted name order.

    Random access: any partition can be read on its own (this is what Dask workers do), and
    consecutive partitions are streamed without decoding a row twice.

    Attributes
    ----------
    root : Path
        The file or directory given by the user.
    files : tuple of Path
        The Parquet files, in reading order.
    file_rows : tuple of int
        Rows per file, from the footers.
    kinds : dict
        Column name -> ``"numeric"``, ``"bool"`` or ``"string"``, in column order.
    """

    root: Path
    files: tuple[Path, ...]
    file_rows: tuple[int, ...]
    kinds: dict[str, ColumnKind]

    format = "parquet"
    random_access = True

    @property
    def schema(self) -> pa.Schema:
        """Canonical schema of every partition."""
        return _canonical_schema(self.kinds)

    @property
    def n_rows(self) -> int:
        """Total number of rows, known from the footers."""
        return sum(self.file_rows)

    def n_partitions(self, chunk_rows: int) -> int:
        """Number of partitions of ``chunk_rows`` rows (0 for an empty table)."""
        return -(-self.n_rows // _validate_chunk_rows(chunk_rows))

    def identity(self) -> list[dict]:
        """Identity of the input: one :func:`file_identity` per file."""
        base = self.root if self.root.is_dir() else self.root.parent
        return [file_identity(f, root=base, kind="parquet") for f in self.files]

    def _stream(self, start: int, stop: int) -> Iterator[pa.RecordBatch]:
        """Canonical record batches covering rows ``[start, stop)`` of the logical table."""
        offset = 0
        for path, n in zip(self.files, self.file_rows):
            lo, hi = max(start, offset), min(stop, offset + n)
            if lo < hi:
                yield from self._stream_file(path, lo - offset, hi - offset)
            offset += n
            if offset >= stop:
                return

    def _stream_file(self, path: Path, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        with pq.ParquetFile(path, page_checksum_verification=True) as pf:
            yield from self._stream_row_groups(pf, lo, hi)

    def _stream_row_groups(self, pf: pq.ParquetFile, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        meta = pf.metadata
        groups, first_row, row = [], None, 0
        for g in range(meta.num_row_groups):
            g_rows = meta.row_group(g).num_rows
            if row + g_rows > lo and row < hi:
                groups.append(g)
                first_row = row if first_row is None else first_row
            row += g_rows
        if not groups:
            return
        position = first_row
        names = list(self.kinds)
        # One row group at a time: a batch never spans row groups, so a corrupt row group is
        # only decoded (and reported) for the partitions that overlap it.
        for g in groups:
            for batch in pf.iter_batches(batch_size=65_536, row_groups=[g], columns=names, use_threads=False):
                b_lo, b_hi = max(lo - position, 0), min(hi - position, batch.num_rows)
                position += batch.num_rows
                if b_lo < b_hi:
                    part = batch.slice(b_lo, b_hi - b_lo)
                    yield pa.RecordBatch.from_arrays(
                        [_to_canonical(part.column(i), self.kinds[n], from_text=False) for i, n in enumerate(names)],
                        schema=self.schema,
                    )
                if position >= hi:
                    return

    def read_partition(self, index: int, chunk_rows: int) -> pa.Table:
        """Rows ``[index * chunk_rows, (index + 1) * chunk_rows)`` as a canonical table.

        Raises
        ------
        PartitionReadError
            If the bytes cannot be decoded (corrupt page, checksum mismatch, file gone); the
            message names the partition, its rows and the file(s) involved.
        """
        n_parts = self.n_partitions(chunk_rows)
        if not 0 <= index < n_parts:
            raise ValueError(f"partition `index` must be in [0, {n_parts}); got {index}.")
        start = index * chunk_rows
        stop = min(start + chunk_rows, self.n_rows)
        try:
            batches = list(self._stream(start, stop))
        except (OSError, pa.ArrowException) as exc:
            raise PartitionReadError(self._describe(index, start, stop) + f": {exc}") from exc
        return pa.Table.from_batches(batches, schema=self.schema)

    def iter_partitions(self, chunk_rows: int, *, skip: frozenset[int] = frozenset()) -> Iterator[tuple[int, pa.Table]]:
        """Yield ``(index, table)`` for every partition not in ``skip``, in index order.

        Runs of consecutive partitions are streamed in one pass over the row groups, so a
        fresh run decodes every row exactly once; skipped partitions are not decoded at all.
        """
        chunk_rows = _validate_chunk_rows(chunk_rows)
        todo = [i for i in range(self.n_partitions(chunk_rows)) if i not in skip]
        runs: list[list[int]] = []
        for i in todo:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        for run in runs:
            start, stop = run[0] * chunk_rows, min((run[-1] + 1) * chunk_rows, self.n_rows)
            index = run[0]
            tables = _rebatch(self._stream(start, stop), chunk_rows)
            while True:
                lo = index * chunk_rows
                try:
                    table = next(tables, None)
                except (OSError, pa.ArrowException) as exc:
                    hi = min(lo + chunk_rows, self.n_rows)
                    raise PartitionReadError(self._describe(index, lo, hi) + f": {exc}") from exc
                if table is None:
                    break
                yield index, table
                index += 1

    def _describe(self, index: int, start: int, stop: int) -> str:
        touched, offset = [], 0
        for path, n in zip(self.files, self.file_rows):
            if offset < stop and offset + n > start:
                touched.append(str(path))
            offset += n
        return f"cannot read partition {index} (rows {start}-{stop - 1}) from {', '.join(touched)}"


@dataclass(frozen=True)
class CsvSource:
    """A CSV file (header row, comma-separated), streamed in blocks.

    CSV has no random access: partitions are produced in order by one streaming pass, and a
    resumed run re-parses (but does not re-certify) the partitions it skips. Column kinds are
    decided once from the first block (4 MiB) of the file (a column with no value there is
    read as numeric); a later value that does not parse as its column's kind
    fails the run with a message naming the partition and the column.

    Attributes
    ----------
    root : Path
        The CSV file.
    kinds : dict
        Column name -> ``"numeric"``, ``"bool"`` or ``"string"``, in column order.
    """

    root: Path
    kinds: dict[str, ColumnKind]

    format = "csv"
    random_access = False

    @property
    def schema(self) -> pa.Schema:
        """Canonical schema of every partition."""
        return _canonical_schema(self.kinds)

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.root,)

    def identity(self) -> list[dict]:
        """Identity of the input: its :func:`file_identity`."""
        return [file_identity(self.root, root=self.root.parent, kind="csv")]

    def _reader(self, names: Sequence[str] | None) -> pa.RecordBatchReader:
        return pcsv.open_csv(
            self.root,
            read_options=pcsv.ReadOptions(block_size=_CSV_BLOCK_BYTES, use_threads=False),
            convert_options=pcsv.ConvertOptions(
                include_columns=list(names) if names is not None else None,
                # Read text as text; conversion to the canonical kind happens per partition so
                # an unparsable value is reported with its partition and column.
                column_types={n: pa.large_string() for n in (names or [])},
                strings_can_be_null=True,
            ),
        )

    def iter_partitions(self, chunk_rows: int, *, skip: frozenset[int] = frozenset()) -> Iterator[tuple[int, pa.Table]]:
        """Yield ``(index, table)`` for every partition not in ``skip``, in index order."""
        chunk_rows = _validate_chunk_rows(chunk_rows)
        names = list(self.kinds)
        index = 0
        try:
            reader = self._reader(names)
        except (OSError, pa.ArrowException) as exc:
            raise PartitionReadError(f"cannot open {self.root}: {exc}") from exc
        tables = _rebatch(reader, chunk_rows)
        while True:
            try:
                raw = next(tables)
            except StopIteration:
                return
            except (OSError, pa.ArrowException) as exc:
                raise PartitionReadError(
                    f"cannot read partition {index} (rows from {index * chunk_rows}) of {self.root}: {exc}"
                ) from exc
            if index not in skip:
                yield index, self._convert(raw, index, chunk_rows)
            index += 1

    def _convert(self, raw: pa.Table, index: int, chunk_rows: int) -> pa.Table:
        arrays = []
        for name, kind in self.kinds.items():
            try:
                arrays.append(_to_canonical(raw.column(name), kind, from_text=True))
            except pa.ArrowInvalid as exc:
                raise PartitionReadError(
                    f"cannot read partition {index} (rows {index * chunk_rows}-"
                    f"{index * chunk_rows + raw.num_rows - 1}) of {self.root}: column {name!r} "
                    f"holds a value that is not {kind} ({exc})"
                ) from exc
        return pa.Table.from_arrays(arrays, schema=self.schema)


Source = ParquetSource | CsvSource


def _open_parquet(root: Path, columns: Sequence[str] | None) -> ParquetSource:
    if root.is_dir():
        files = tuple(sorted(p for p in root.rglob("*.parquet") if p.is_file() and not p.name.startswith((".", "_"))))
        if not files:
            raise ValueError(f"directory {root} holds no *.parquet file.")
    else:
        files = (root,)
    kinds: dict[str, ColumnKind] | None = None
    rows = []
    for path in files:
        try:
            meta = pq.read_metadata(path)
            schema = pq.read_schema(path)
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"cannot read the Parquet footer of {path}: {exc}") from exc
        names = _select_columns(schema.names, columns, f"Parquet file {path}")
        file_kinds: dict[str, ColumnKind] = {}
        for name in names:
            kind = _kind_of_arrow_type(schema.field(name).type)
            if kind is None:
                raise ValueError(
                    f"column {name!r} of {path} has type {schema.field(name).type}; expected a "
                    "number, a boolean or text (convert dates and nested values first)."
                )
            file_kinds[name] = kind
        if kinds is None:
            kinds = file_kinds
        elif set(file_kinds) != set(kinds) or any(
            file_kinds[n] != kinds[n] and "string" in (file_kinds[n], kinds[n]) for n in kinds
        ):
            raise ValueError(f"{path} does not match the columns of {files[0]}: {file_kinds} vs {kinds}.")
        rows.append(meta.num_rows)
    assert kinds is not None
    return ParquetSource(root=root, files=files, file_rows=tuple(rows), kinds=kinds)


def _open_csv(root: Path, columns: Sequence[str] | None) -> CsvSource:
    with open(root, "rb") as fh:  # an image renamed .csv: the same verdict as the audit's loader
        check_text_table(fh.read(65536 + 1), str(root))  # + 1: a character cut at 64 KiB is fine
    try:
        # Opening parses the first block, which is what pyarrow infers column types from.
        schema = pcsv.open_csv(
            root,
            read_options=pcsv.ReadOptions(block_size=_CSV_BLOCK_BYTES, use_threads=False),
            convert_options=pcsv.ConvertOptions(strings_can_be_null=True),
        ).schema
    except pa.ArrowException as exc:
        raise ValueError(f"cannot read CSV file {root}: {exc}") from exc
    names = _select_columns(schema.names, columns, f"CSV file {root}")
    # Dates and other text-like inferred types stay text.
    kinds = {name: _kind_of_arrow_type(schema.field(name).type) or "string" for name in names}
    return CsvSource(root=root, kinds=kinds)


def open_source(path: str | Path, *, columns: Sequence[str] | None = None) -> Source:
    """Open a Parquet file, a directory of Parquet files, or a CSV file for partitioned reading.

    Parameters
    ----------
    path : str or Path
        ``*.parquet`` file, directory holding ``*.parquet`` files (read in sorted order, files
        whose name starts with ``.`` or ``_`` ignored), or ``*.csv`` file with a header row.
    columns : sequence of str, optional
        Columns to read, in this order; default all.

    Returns
    -------
    ParquetSource or CsvSource

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        Unknown extension, unreadable footer or header, missing columns, unsupported types.
    """
    root = Path(path).resolve()
    if not root.exists():
        raise FileNotFoundError(f"input data {path} does not exist.")
    if root.is_dir() or root.suffix.lower() in (".parquet", ".pq"):
        return _open_parquet(root, columns)
    if root.suffix.lower() == ".csv":
        return _open_csv(root, columns)
    raise ValueError(
        f"cannot tell the format of {path}: expected a .parquet file, a directory of Parquet files or a .csv file."
    )
