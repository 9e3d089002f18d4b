"""Partitioned reading: every partition equals the naive slice of the whole table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.scale.sources import CsvSource, ParquetSource, PartitionReadError, open_source


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Mixed columns with missing values; row 0 is complete so a CSV reader can infer kinds."""
    rng = np.random.default_rng(seed)
    gap = rng.random((2, n)) < 0.1
    gap[:, :1] = False
    return pd.DataFrame(
        {
            "i": np.arange(n, dtype=np.int64),
            "x": np.where(gap[0], np.nan, rng.normal(size=n)),
            "s": pd.array(np.where(gap[1], None, rng.choice(["a", "b", "c"], n)), dtype="str"),
            "b": rng.random(n) < 0.5,
        }
    )


def _naive(frame: pd.DataFrame) -> pd.DataFrame:
    """The canonical form computed the obvious way: numbers and booleans as float64."""
    out = frame.copy()
    for c in ("i", "x", "b"):
        out[c] = out[c].astype("float64")
    return out


def _as_frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas().reset_index(drop=True)


def _write_dir(tmp_path, frame: pd.DataFrame, cuts: list[int], row_group: int):
    folder = tmp_path / "data"
    folder.mkdir()
    bounds = [0, *sorted(cuts), len(frame)]
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        pq.write_table(
            pa.Table.from_pandas(frame.iloc[lo:hi], preserve_index=False),
            folder / f"f{k:02d}.parquet",
            row_group_size=row_group,
        )
    return folder


@settings(max_examples=15)
@given(
    n=st.integers(0, 300),
    chunk=st.integers(1, 120),
    row_group=st.integers(1, 90),
    cuts=st.lists(st.integers(0, 300), max_size=3),
)
def test_parquet_partitions_equal_naive_slices(tmp_path_factory, n, chunk, row_group, cuts):
    tmp_path = tmp_path_factory.mktemp("pq")
    frame = _frame(n)
    folder = _write_dir(tmp_path, frame, [min(c, n) for c in cuts], row_group)
    source = open_source(folder)
    assert isinstance(source, ParquetSource) and source.n_rows == n
    expected = _naive(frame)
    parts = list(source.iter_partitions(chunk))
    assert [i for i, _ in parts] == list(range(-(-n // chunk)))
    for index, table in parts:
        want = expected.iloc[index * chunk : (index + 1) * chunk].reset_index(drop=True)
        pd.testing.assert_frame_equal(_as_frame(table), want)
        # random access gives the same rows as the stream
        pd.testing.assert_frame_equal(_as_frame(source.read_partition(index, chunk)), want)


@settings(max_examples=10)
@given(n=st.integers(1, 200), chunk=st.integers(1, 50), skip=st.sets(st.integers(0, 40)))
def test_skipped_partitions_are_not_yielded_and_others_unchanged(tmp_path_factory, n, chunk, skip):
    tmp_path = tmp_path_factory.mktemp("skip")
    frame = _frame(n)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "f.parquet", row_group_size=17)
    frame.to_csv(tmp_path / "f.csv", index=False)
    expected = _naive(frame)
    for name in ("f.parquet", "f.csv"):
        source = open_source(tmp_path / name)
        got = dict(source.iter_partitions(chunk, skip=frozenset(skip)))
        assert sorted(got) == [i for i in range(-(-n // chunk)) if i not in skip]
        for index, table in got.items():
            want = expected.iloc[index * chunk : (index + 1) * chunk].reset_index(drop=True)
            pd.testing.assert_frame_equal(_as_frame(table), want, check_dtype=True)


def test_csv_partitions_equal_parquet_partitions(tmp_path):
    frame = _frame(1000)
    frame.to_csv(tmp_path / "f.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "f.parquet")
    csv, par = open_source(tmp_path / "f.csv"), open_source(tmp_path / "f.parquet")
    assert isinstance(csv, CsvSource)
    assert csv.kinds == par.kinds == {"i": "numeric", "x": "numeric", "s": "string", "b": "bool"}
    for (i, a), (j, b) in zip(csv.iter_partitions(333), par.iter_partitions(333), strict=True):
        assert i == j and a.equals(b)


def test_dtypes_are_identical_across_partitions_whatever_the_values(tmp_path):
    # Partition 0 has no missing value (pandas would make it int64), partition 1 has one.
    frame = pd.DataFrame({"k": pd.array([1, 2, 3, None], dtype="Int64"), "t": ["a", "b", None, "d"]})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "f.parquet")
    frame.to_csv(tmp_path / "f.csv", index=False)
    for name in ("f.parquet", "f.csv"):
        parts = [t.to_pandas() for _, t in open_source(tmp_path / name).iter_partitions(2)]
        assert [str(p["k"].dtype) for p in parts] == ["float64", "float64"]
        assert parts[1]["k"].isna().tolist() == [False, True]
        assert parts[1]["t"].isna().tolist() == [True, False]


def test_column_selection_and_order(tmp_path):
    frame = _frame(10)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "f.parquet")
    frame.to_csv(tmp_path / "f.csv", index=False)
    for name in ("f.parquet", "f.csv"):
        source = open_source(tmp_path / name, columns=["s", "i"])
        assert list(source.kinds) == ["s", "i"]
        ((_, table),) = source.iter_partitions(100)
        assert table.column_names == ["s", "i"]


@pytest.mark.parametrize("name", ["f.parquet", "f.csv"])
def test_missing_column_is_named(tmp_path, name):
    frame = _frame(5)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "f.parquet")
    frame.to_csv(tmp_path / "f.csv", index=False)
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        open_source(tmp_path / name, columns=["i", "nope"])


def test_bad_paths_and_types(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_source(tmp_path / "absent.parquet")
    (tmp_path / "f.txt").write_text("a\n1\n")
    with pytest.raises(ValueError, match="cannot tell the format"):
        open_source(tmp_path / "f.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no"):
        open_source(tmp_path / "empty")
    stamps = pa.table({"when": pa.array([0, 1], pa.timestamp("s"))})
    pq.write_table(stamps, tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="column 'when' .* has type timestamp"):
        open_source(tmp_path / "t.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match="cannot read the Parquet footer of .*bad.parquet"):
        open_source(tmp_path / "bad.parquet")
    pq.write_table(pa.table({"a": [1.0]}), tmp_path / "ok.parquet")
    with pytest.raises(ValueError, match="`chunk_rows` must be a positive int; got 0"):
        list(open_source(tmp_path / "ok.parquet").iter_partitions(0))


def test_mismatched_files_in_a_directory_are_refused(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1.0], "b": ["x"]}), folder / "1.parquet")
    pq.write_table(pa.table({"a": [1.0], "b": [2.0]}), folder / "2.parquet")
    with pytest.raises(ValueError, match="2.parquet does not match the columns"):
        open_source(folder)


def test_csv_value_that_does_not_parse_names_partition_and_column(tmp_path):
    # Kinds are inferred from the first 4 MiB block; the bad value sits far beyond it.
    lines = ["a,b"] + [f"{i},x" for i in range(700_000)]
    lines[650_001] = "oops,x"  # data row 650000 -> partition 6 of 100k-row chunks
    (tmp_path / "f.csv").write_text("\n".join(lines) + "\n")
    source = open_source(tmp_path / "f.csv")
    assert source.kinds == {"a": "numeric", "b": "string"}
    got = []
    with pytest.raises(PartitionReadError, match=r"partition 6 \(rows 600000-699999\) of .*f.csv: column 'a'"):
        for index, _ in source.iter_partitions(100_000):
            got.append(index)
    assert got == [0, 1, 2, 3, 4, 5]


def test_csv_malformed_row_names_partition(tmp_path):
    lines = ["a,b"] + [f"{i},{i}" for i in range(700_000)]
    lines[650_001] = "1,2,3"
    (tmp_path / "f.csv").write_text("\n".join(lines) + "\n")
    source = open_source(tmp_path / "f.csv")
    got = []
    # The parser reads whole blocks, so the failure surfaces at the partition being assembled
    # when the bad block is parsed: at or before the row's own partition, never after it.
    with pytest.raises(PartitionReadError, match=r"cannot read partition \d .*f.csv.*Expected 2 columns"):
        for index, _ in source.iter_partitions(100_000):
            got.append(index)
    assert got == list(range(len(got))) and len(got) <= 6


def _corrupt_middle_page(path) -> None:
    """Flip bytes inside the data pages of the second row group, leaving the footer intact."""
    meta = pq.read_metadata(path)
    col = meta.row_group(1).column(0)
    start = col.data_page_offset
    data = bytearray(path.read_bytes())
    for k in range(start + 40, start + 60):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_parquet_page_names_partition_and_file(tmp_path):
    frame = pd.DataFrame({"v": np.arange(3000, dtype=np.float64)})
    path = tmp_path / "f.parquet"
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False),
        path,
        row_group_size=1000,
        write_page_checksum=True,
        compression="none",
    )
    _corrupt_middle_page(path)
    source = open_source(path)
    assert source.read_partition(0, 1000).num_rows == 1000  # untouched row group still reads
    with pytest.raises(PartitionReadError, match=r"cannot read partition 1 \(rows 1000-1999\) from .*f.parquet"):
        source.read_partition(1, 1000)
    seen = []
    with pytest.raises(PartitionReadError, match="partition 1 "):
        for index, _ in source.iter_partitions(1000):
            seen.append(index)
    assert seen == [0]
