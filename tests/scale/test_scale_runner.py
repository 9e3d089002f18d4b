"""The local engine: output equals the naive computation, resume is byte-identical, a bad
partition stops the run with its name and leaves finished partitions intact.

A deliberately simple stand-in task isolates the runner from the certificate engine; the
real certificates are exercised in test_scale_certify.py and test_scale_dask.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.scale.runner import run_partitions
from core.scale.sources import PartitionReadError, open_source
from core.scale.store import RunStore


class CubeTask:
    """Output row = input row number and x**3 (a pure function of the row)."""

    def __call__(self, table: pa.Table, row_start: int) -> pa.Table:
        x = table.column("x").to_numpy()
        return pa.table({"row": np.arange(row_start, row_start + len(x)), "cube": x**3})


class Interrupt(Exception):
    pass


def _data(tmp_path: Path, n: int = 1000, files: int = 3) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    x = np.linspace(-2, 2, n)
    for k, part in enumerate(np.array_split(x, files)):
        pq.write_table(
            pa.table({"x": part}),
            folder / f"f{k}.parquet",
            row_group_size=97,
            write_page_checksum=True,
            compression="none",
        )
    return folder


def _run(data: Path, out: Path, *, chunk: int = 100, progress=None):
    source = open_source(data)
    with RunStore.open(out, {"data": source.identity(), "chunk_rows": chunk}, "fp", kind="cube") as store:
        result = run_partitions(source, CubeTask(), store, chunk_rows=chunk, progress=progress)
        store.finish(n_partitions=result.n_partitions, n_rows=result.n_rows, summary={"rows": result.n_rows})
    return result


def _interrupted_run(data: Path, out: Path) -> None:
    """Start a run and stop it at its first progress report: an unfinished run folder."""

    def stop(info):
        raise Interrupt

    with pytest.raises(Interrupt):
        _run(data, out, progress=stop)


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_output_equals_the_naive_computation(tmp_path):
    data = _data(tmp_path)
    result = _run(data, tmp_path / "out")
    assert (result.n_rows, result.n_partitions, result.computed, result.reused) == (1000, 10, 10, 0)
    got = pq.read_table(sorted((tmp_path / "out").glob("part-*.parquet"))).to_pandas()
    x = np.linspace(-2, 2, 1000)
    pd.testing.assert_frame_equal(got, pd.DataFrame({"row": np.arange(1000), "cube": x**3}))
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert [p["rows"] for p in manifest["partitions"]] == [100] * 10
    assert [p["row_start"] for p in manifest["partitions"]] == list(range(0, 1000, 100))


def test_interrupted_run_resumes_to_byte_identical_output(tmp_path):
    data = _data(tmp_path)
    _run(data, tmp_path / "clean")
    seen = []

    def stop_after_four(info):
        seen.append(info.index)
        if len(seen) == 4:
            raise Interrupt

    with pytest.raises(Interrupt):
        _run(data, tmp_path / "resumed", progress=stop_after_four)
    assert not (tmp_path / "resumed" / "_summary.json").exists()
    result = _run(data, tmp_path / "resumed")
    assert (result.computed, result.reused) == (6, 4)
    assert _files(tmp_path / "resumed") == _files(tmp_path / "clean")
    # Running a finished run again recomputes nothing and changes nothing.
    again = _run(data, tmp_path / "resumed")
    assert (again.computed, again.reused) == (0, 10)
    assert _files(tmp_path / "resumed") == _files(tmp_path / "clean")


def test_resume_with_another_chunk_size_is_refused(tmp_path):
    data = _data(tmp_path)
    _interrupted_run(data, tmp_path / "out")
    with pytest.raises(ValueError, match=r"chunk_rows: 100 \(stored\) vs 50 \(now\)"):
        _run(data, tmp_path / "out", chunk=50)


def _flip_bytes_of_row_group(path: Path, group: int) -> bytes:
    original = path.read_bytes()
    start = pq.read_metadata(path).row_group(group).column(0).data_page_offset
    data = bytearray(original)
    for k in range(start + 30, start + 50):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))
    return original


def test_unreadable_partition_fails_naming_it_and_keeps_finished_ones(tmp_path):
    data = _data(tmp_path)  # f0: rows 0-333, f1: 334-666, f2: 667-999; row groups of 97
    _run(data, tmp_path / "clean")
    # Row group 1 of f1 holds rows 334+97 .. 334+193 = 431..527: partitions 4 and 5.
    original = _flip_bytes_of_row_group(data / "f1.parquet", 1)
    with pytest.raises(PartitionReadError, match=r"cannot read partition 4 \(rows 400-499\) from .*f1.parquet"):
        _run(data, tmp_path / "out")
    with RunStore.open(
        tmp_path / "out", json.loads((tmp_path / "out" / "_manifest.json").read_text())["config"], "fp", kind="cube"
    ) as store:
        assert store.completed() == {0, 1, 2, 3}
    # The file is repaired (same bytes as before): the run resumes and matches a clean run.
    (data / "f1.parquet").write_bytes(original)
    result = _run(data, tmp_path / "out")
    assert (result.computed, result.reused) == (6, 4)
    assert _files(tmp_path / "out") == _files(tmp_path / "clean")


def test_resume_on_other_data_is_refused(tmp_path):
    data = _data(tmp_path)
    _interrupted_run(data, tmp_path / "out")
    pq.write_table(
        pa.table({"x": np.linspace(0, 1, 334)}),
        data / "f0.parquet",
        row_group_size=97,
        write_page_checksum=True,
        compression="none",
    )
    with pytest.raises(ValueError, match=r"data: .*f0.parquet.*\(stored\) vs"):
        _run(data, tmp_path / "out")


def test_csv_source_runs_and_resumes_like_parquet(tmp_path):
    data = _data(tmp_path)
    _run(data, tmp_path / "from_parquet")
    x = np.concatenate([pq.read_table(p).column("x").to_numpy() for p in sorted(data.glob("*.parquet"))])
    csv = tmp_path / "x.csv"
    # repr round-trips floats exactly, so the CSV carries the same values as the Parquet files
    csv.write_text("x\n" + "\n".join(repr(float(v)) for v in x) + "\n")
    _interrupted_run(csv, tmp_path / "from_csv")
    result = _run(csv, tmp_path / "from_csv")
    assert (result.computed, result.reused, result.n_rows) == (9, 1, 1000)
    for name in (f"part-{i:05d}.parquet" for i in range(10)):
        assert (tmp_path / "from_csv" / name).read_bytes() == (tmp_path / "from_parquet" / name).read_bytes()


def test_bad_engine_arguments(tmp_path):
    data = _data(tmp_path)
    source = open_source(data)
    with RunStore.open(tmp_path / "out", {}, "fp", kind="cube") as store:
        with pytest.raises(ValueError, match="`engine` must be 'local' or 'dask'; got 'spark'"):
            run_partitions(source, CubeTask(), store, chunk_rows=10, engine="spark")
        with pytest.raises(ValueError, match="needs a `client`"):
            run_partitions(source, CubeTask(), store, chunk_rows=10, engine="dask")
        with pytest.raises(ValueError, match="`chunk_rows` must be a positive int; got 0"):
            run_partitions(source, CubeTask(), store, chunk_rows=0)
    shutil.rmtree(tmp_path / "out")
