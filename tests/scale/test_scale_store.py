"""Output folder: atomic partitions, manifest identity, journal, lock."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.scale.store import MANIFEST, PartitionInfo, RunStore, partition_name, write_partition

CONFIG = {"data": {"files": [{"name": "x.parquet", "sha256": "ab"}]}, "chunk_rows": 10, "model": {"name": "m"}}


def _table(n: int, start: int = 0) -> pa.Table:
    return pa.table({"row": pa.array(range(start, start + n), pa.int64()), "v": [float(i) ** 0.5 for i in range(n)]})


def test_partition_names_sort_in_index_order():
    names = [partition_name(i) for i in (0, 9, 10, 99_999)]
    assert names == ["part-00000.parquet", "part-00009.parquet", "part-00010.parquet", "part-99999.parquet"]
    assert sorted(names) == names
    with pytest.raises(ValueError, match="partition index must be in \\[0, 100000\\); got 100000"):
        partition_name(100_000)


def test_write_partition_is_deterministic_and_leaves_no_temporary(tmp_path):
    a = write_partition(tmp_path, 3, 30, _table(10, 30), rows=10)
    first = (tmp_path / "part-00003.parquet").read_bytes()
    b = write_partition(tmp_path, 3, 30, _table(10, 30), rows=10)
    assert (
        a
        == b
        == PartitionInfo(
            index=3, row_start=30, rows=10, files={"part-00003.parquet": hashlib.sha256(first).hexdigest()}
        )
    )
    assert sorted(os.listdir(tmp_path)) == ["part-00003.parquet"]


def test_partition_of_several_tables_goes_to_one_folder_per_table(tmp_path):
    info = write_partition(tmp_path, 0, 0, {"a": _table(3), "b": _table(5)}, rows=7)
    assert sorted(info.files) == ["a/part-00000.parquet", "b/part-00000.parquet"]
    assert pq.read_table(tmp_path / "b" / "part-00000.parquet").num_rows == 5
    for rel, sha in info.files.items():
        assert hashlib.sha256((tmp_path / rel).read_bytes()).hexdigest() == sha


def test_new_run_then_resume_recovers_journalled_partitions(tmp_path):
    out = tmp_path / "out"
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert not store.resumed and store.completed() == frozenset()
        for i in range(3):
            store.record(write_partition(out, i, 10 * i, _table(10, 10 * i), rows=10))
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["complete"] is False and manifest["config"] == CONFIG and manifest["fingerprint"] == "fp"
    assert not (out / ".lock").exists()
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert store.resumed and store.completed() == {0, 1, 2}


def test_resume_redoes_partitions_whose_file_changed_or_vanished(tmp_path):
    out = tmp_path / "out"
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        for i in range(3):
            store.record(write_partition(out, i, 10 * i, _table(10, 10 * i), rows=10))
    (out / partition_name(1)).write_bytes(b"tampered")
    (out / partition_name(2)).unlink()
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert store.completed() == {0}


def test_torn_journal_line_is_ignored(tmp_path):
    out = tmp_path / "out"
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        store.record(write_partition(out, 0, 0, _table(10), rows=10))
        info = write_partition(out, 1, 10, _table(10, 10), rows=10)
    with open(out / ".progress.jsonl", "a") as fh:  # a driver killed mid-append
        fh.write(json.dumps(info.__dict__)[:25])
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert store.completed() == {0}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"chunk_rows": 20}, r"chunk_rows: 10 \(stored\) vs 20 \(now\)"),
        ({"model": {"name": "other"}}, r"model.name: \"m\" \(stored\) vs \"other\" \(now\)"),
        ({"data": {"files": []}}, r"data.files: .* \(stored\) vs \[\] \(now\)"),
        ({"extra": 1}, r"extra: <absent> \(stored\) vs 1 \(now\)"),
    ],
    ids=["chunking", "model", "data", "new-key"],
)
def test_resume_with_other_settings_is_refused_naming_the_difference(tmp_path, change, message):
    out = tmp_path / "out"
    RunStore.open(out, CONFIG, "fp", kind="t").close()
    with pytest.raises(ValueError, match="refusing to resume") as err:
        RunStore.open(out, CONFIG | change, "fp", kind="t")
    assert err.match(message)
    assert not (out / ".lock").exists()


def test_resume_with_other_fingerprint_or_kind_is_refused(tmp_path):
    out = tmp_path / "out"
    RunStore.open(out, CONFIG, "fp", kind="t").close()
    with pytest.raises(ValueError, match=r"fingerprint: fp \(stored\) vs other \(now\)"):
        RunStore.open(out, CONFIG, "other", kind="t")
    with pytest.raises(ValueError, match="belongs to a 't' run"):
        RunStore.open(out, CONFIG, "fp", kind="u")


def test_foreign_folder_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not empty \\(notes.txt\\) and holds no _manifest.json"):
        RunStore.open(tmp_path, CONFIG, "fp", kind="t")
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="exists and is not a folder"):
        RunStore.open(tmp_path / "file", CONFIG, "fp", kind="t")


def test_live_lock_refuses_a_second_driver_and_stale_lock_is_taken_over(tmp_path):
    out = tmp_path / "out"
    first = RunStore.open(out, CONFIG, "fp", kind="t")
    try:
        with pytest.raises(ValueError, match=f"in use by process {os.getpid()}"):
            RunStore.open(out, CONFIG, "fp", kind="t")
    finally:
        first.close()
    # A driver that died without releasing its lock (pid of a finished process).
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (out / ".lock").write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert store.resumed


def test_finish_checks_completeness_and_seals_the_manifest(tmp_path):
    out = tmp_path / "out"
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        store.record(write_partition(out, 1, 10, _table(5, 10), rows=5))
        with pytest.raises(RuntimeError, match=r"partitions \[0\] are not done"):
            store.finish(n_partitions=2, n_rows=15, summary={})
        store.record(write_partition(out, 0, 0, _table(10), rows=10))
        with pytest.raises(RuntimeError, match="15 rows written, 16 rows read"):
            store.finish(n_partitions=2, n_rows=16, summary={})
        store.finish(n_partitions=2, n_rows=15, summary={"n": 15})
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["complete"] is True and manifest["n_rows"] == 15
    assert [p["index"] for p in manifest["partitions"]] == [0, 1]
    assert json.loads((out / "_summary.json").read_text()) == {"n": 15}
    assert sorted(os.listdir(out)) == ["_manifest.json", "_summary.json", "part-00000.parquet", "part-00001.parquet"]
    # A finished run reopens as complete, every partition verified.
    with RunStore.open(out, CONFIG, "fp", kind="t") as store:
        assert store.completed() == {0, 1}
