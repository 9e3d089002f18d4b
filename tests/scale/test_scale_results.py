"""``core.scale.results``: a certify folder checked and queried out of core.

Every query is checked against pandas on the whole table (``pandas.read_parquet`` of the folder,
the reference the module never uses): sort, filter, page and row look-ups are equal. A real run
is interrupted for the half-written cases, and each part of a finished folder is made to
disagree in turn.
"""

from __future__ import annotations

import json
import os
import shutil
import socket

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scale_constants import CHUNK_ROWS, N_ROWS

from core.scale.certify import certify_dataset
from core.scale.results import (
    CertifyFolderError,
    RowFilter,
    is_certify_folder,
    list_certify_folders,
    open_certify_folder,
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, credit_parquet, task):
    out = tmp_path_factory.mktemp("runs") / "finished"
    certify_dataset(credit_parquet, out, task, chunk_rows=CHUNK_ROWS)
    return out


@pytest.fixture(scope="module")
def reference(finished) -> pd.DataFrame:
    return pd.read_parquet(finished).reset_index(drop=True)


@pytest.fixture(scope="module")
def results(finished):
    return open_certify_folder(finished)


def _copy(folder, tmp_path):
    target = tmp_path / folder.name
    shutil.copytree(folder, target)
    return target


def _pandas_order(frame: pd.DataFrame, sort: str, descending: bool) -> list[int]:
    """The reference order: by ``sort`` then by row, missing values last in either direction."""
    if sort == "row":
        return frame.sort_values("row", ascending=not descending)["row"].tolist()
    return frame.sort_values([sort, "row"], ascending=[not descending, True], na_position="last")["row"].tolist()


_SORTS = ["row", "confidence", "fds", "flip_budget", "label", "pred_label", "lambda_star_attenuate_all", "correct"]
_FILTERS = {
    "none": [],
    "wrong": [RowFilter(column="correct", op="==", value=False)],
    "held-out good, confident": [
        RowFilter(column="in_fit_sample", op="==", value=False),
        RowFilter(column="pred_label", op="in", value=["good"]),
        RowFilter(column="confidence", op=">=", value=0.8),
    ],
    "fragile": [RowFilter(column="flip_budget", op="<=", value=2), RowFilter(column="fds", op=">", value=0.3)],
    "not bad": [RowFilter(column="label", op="not in", value=["bad"])],
    "nothing": [RowFilter(column="confidence", op=">", value=2.0)],
}


def _mask(frame: pd.DataFrame, name: str) -> pd.Series:
    return {
        "none": pd.Series(True, index=frame.index),
        "wrong": frame["correct"] == False,  # noqa: E712 - a nullable column: null is not False
        "held-out good, confident": (~frame["in_fit_sample"])
        & frame["pred_label"].isin(["good"])
        & (frame["confidence"] >= 0.8),
        "fragile": (frame["flip_budget"] <= 2) & (frame["fds"] > 0.3),
        "not bad": ~frame["label"].isin(["bad"]) & frame["label"].notna(),
        "nothing": frame["confidence"] > 2.0,
    }[name]


def test_the_folder_is_complete_and_names_every_row(results, reference):
    assert results.complete and results.status == "complete"
    assert results.n_rows == len(reference) == N_ROWS
    assert results.partitions == N_ROWS // CHUNK_ROWS
    assert results.operators == ("attenuate_single", "attenuate_all")
    assert results.depth() == len(reference["path"].iloc[0])
    assert results.count() == N_ROWS


@settings(max_examples=40, deadline=None)
@given(
    sort=st.sampled_from(_SORTS),
    descending=st.booleans(),
    which=st.sampled_from(sorted(_FILTERS)),
    offset=st.integers(0, N_ROWS + 10),
    limit=st.integers(0, 120),
)
def test_sort_filter_and_page_equal_pandas(results, reference, sort, descending, which, offset, limit):
    kept = reference[_mask(reference, which)]
    expected = _pandas_order(kept, sort, descending)
    order = results.order(sort=sort, descending=descending, filters=_FILTERS[which])
    assert order.to_pylist() == expected
    assert results.count(_FILTERS[which]) == len(kept)
    page = results.page(sort=sort, descending=descending, filters=_FILTERS[which], offset=offset, limit=limit)
    want = kept.set_index("row").loc[expected[offset : offset + limit]].reset_index()
    got = page.to_pandas()
    assert got["row"].tolist() == want["row"].tolist()
    for column in ("label", "pred_label", "correct", "confidence", "fds", "flip_budget", "lambda_star_attenuate_all"):
        pd.testing.assert_series_equal(got[column], want[column], check_dtype=False, check_names=False)


def test_rows_come_in_the_order_asked_with_their_lists(results, reference):
    ids = [3999, 0, 1234, 501, 500, 499, 2750, 0]
    table = results.rows(ids, columns=["row", "path", "path_margins", "fds"]).to_pandas()
    assert table["row"].tolist() == ids
    for got, row in zip(table.itertuples(), ids):
        assert list(got.path) == list(reference.loc[row, "path"])
        np.testing.assert_array_equal(got.path_margins, reference.loc[row, "path_margins"])
        assert got.fds == reference.loc[row, "fds"]
    with pytest.raises(ValueError, match=r"row 4000 is not in the table \(rows 0\.\.3999 are\)"):
        results.rows([5, 4000])
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['nope'\]"):
        results.rows([5], columns=["nope"])


def test_value_counts_and_scan_cover_every_row(results, reference):
    counts = results.value_counts("pred_label")
    assert counts == reference["pred_label"].value_counts().to_dict()
    held = results.value_counts("label", filters=[RowFilter(column="in_fit_sample", op="==", value=False)])
    assert held == reference.loc[~reference["in_fit_sample"], "label"].value_counts().to_dict()
    total = sum(b.num_rows for b in results.scan(["fds"]))
    assert total == N_ROWS


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (RowFilter(column="nope", op="==", value=1), r"cannot filter on 'nope'"),
        (RowFilter(column="confidence", op=">", value="high"), r"'confidence' > 'high': the column holds number"),
        (RowFilter(column="label", op="==", value=3), r"'label' == 3: the column holds text"),
    ],
)
def test_bad_filters_are_refused_naming_them(results, bad, match):
    with pytest.raises(ValueError, match=match):
        results.count([bad])
    with pytest.raises(ValueError, match=r"cannot sort by 'path'"):
        results.order(sort="path")
    with pytest.raises(ValueError, match=r"filter operator must be one of"):
        RowFilter(column="fds", op="~", value=1)


def test_the_audits_folder_lists_certify_runs(finished, tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "_manifest.json").write_text(json.dumps({"kind": "paired-grid"}))
    shutil.copytree(finished, tmp_path / "run")
    assert is_certify_folder(tmp_path / "run") and not is_certify_folder(tmp_path / "other")
    assert list_certify_folders(tmp_path) == [tmp_path / "run"]
    assert list_certify_folders(tmp_path / "missing") == []


# -- half-written ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, credit_parquet, task):
    """A real run stopped after three partitions (as by Ctrl-C): journal, no summary, a stale lock."""
    out = tmp_path_factory.mktemp("runs") / "interrupted"

    class Stop(Exception):
        pass

    def stop_after_three(info, done, total):
        if info is not None and done >= 3 * CHUNK_ROWS:
            raise Stop

    with pytest.raises(Stop):
        certify_dataset(credit_parquet, out, task, chunk_rows=CHUNK_ROWS, progress=stop_after_three)
    return out


def test_a_half_written_folder_shows_what_is_done_and_says_so(interrupted, finished, tmp_path):
    from core.scale.results import certify_run_finished

    folder = _copy(interrupted, tmp_path)
    assert not certify_run_finished(folder) and certify_run_finished(finished)
    results = open_certify_folder(folder)
    assert not results.complete and results.status == "interrupted" and results.summary is None
    assert results.n_rows == 3 * CHUNK_ROWS and results.partitions == 3
    whole = pd.read_parquet(finished)
    head = whole[whole["row"] < 3 * CHUNK_ROWS]
    assert results.order(sort="fds", descending=True).to_pylist() == _pandas_order(head, "fds", True)
    with pytest.raises(ValueError, match=r"row 1500 is not in the rows shown"):
        results.rows([1500])
    # A partition written but not yet journalled (the driver between the rename and the journal):
    # left out, reported as pending.
    shutil.copy(finished / "part-00003.parquet", folder / "part-00003.parquet")
    results = open_certify_folder(folder)
    assert results.n_rows == 3 * CHUNK_ROWS and results.pending == ["part-00003.parquet"]
    # A torn last journal line (a driver killed mid-append) is not a finished partition.
    with open(folder / ".progress.jsonl", "a") as fh:
        fh.write('{"files": {"part-00003.parquet": "ab')
    assert open_certify_folder(folder).n_rows == 3 * CHUNK_ROWS


def test_a_run_still_going_is_told_apart_from_an_interrupted_one(interrupted, tmp_path):
    folder = _copy(interrupted, tmp_path)
    (folder / ".lock").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    assert open_certify_folder(folder).status == "running"
    (folder / ".lock").write_text(json.dumps({"pid": 2**22 + 12345, "host": socket.gethostname()}))
    assert open_certify_folder(folder).status == "interrupted"


def test_a_folder_with_no_partition_yet_opens_empty(interrupted, tmp_path):
    folder = _copy(interrupted, tmp_path)
    (folder / ".progress.jsonl").unlink()
    for part in folder.glob("part-*.parquet"):
        part.unlink()
    results = open_certify_folder(folder)
    assert results.n_rows == 0 and results.count() == 0 and len(results.order(sort="fds")) == 0
    assert results.depth() is None


# -- parts that disagree -----------------------------------------------------------------------
def _rewrite_part(path, change):
    table = pq.read_table(path)
    pq.write_table(change(table), path, compression="zstd")


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


_BREAKS = {
    "changed partition": (
        lambda f: _rewrite_part(f / "part-00003.parquet", lambda t: t.slice(0, t.num_rows)),
        r"partition part-00003\.parquet differs from the one the run recorded",
    ),
    "missing partition": (
        lambda f: (f / "part-00005.parquet").unlink(),
        r"partition part-00005\.parquet \(rows 2500\.\.\) is listed but missing",
    ),
    "stray partition": (
        lambda f: shutil.copy(f / "part-00000.parquet", f / "part-00008.parquet"),
        r"partition part-00008\.parquet is not part of the finished run",
    ),
    "summary of another run": (
        lambda f: _edit_json(f / "_summary.json", lambda d: d.update(fingerprint="0" * 64)),
        r"_summary\.json belongs to another run than _manifest\.json",
    ),
    "missing summary": (lambda f: (f / "_summary.json").unlink(), r"the run summary _summary\.json is missing"),
    "task of another run": (
        lambda f: (f / "_task.zip").write_bytes(b"PK not the task"),
        r"_task\.zip is not the task this run was made with",
    ),
    "row count": (
        lambda f: _edit_json(f / "_manifest.json", lambda d: d.update(n_rows=d["n_rows"] + 1)),
        r"_manifest\.json counts 4001 rows; its partitions hold 4000",
    ),
    "row range": (
        lambda f: _edit_json(f / "_manifest.json", lambda d: d["partitions"][2].update(row_start=1001)),
        r"partition part-00002\.parquet starts at row 1001; expected 1000",
    ),
    "paired-grid": (
        lambda f: _edit_json(f / "_manifest.json", lambda d: d.update(kind="paired-grid")),
        r"holds a 'paired-grid' run, not a certify run",
    ),
    "manifest": (lambda f: (f / "_manifest.json").write_text("{"), r"_manifest\.json: the run manifest cannot be read"),
}


@pytest.mark.parametrize("name", sorted(_BREAKS))
def test_a_folder_whose_parts_disagree_is_refused_naming_the_part(finished, tmp_path, name):
    folder = _copy(finished, tmp_path)
    breaking, match = _BREAKS[name]
    breaking(folder)
    with pytest.raises(CertifyFolderError, match=match):
        open_certify_folder(folder)


def test_a_partition_of_other_rows_or_columns_is_refused(finished, tmp_path):
    import hashlib

    folder = _copy(finished, tmp_path)
    # Same bytes recorded (the manifest updated to the new hash), other content: caught by the row range.
    shutil.copy(folder / "part-00001.parquet", folder / "part-00004.parquet")
    sha = hashlib.sha256((folder / "part-00004.parquet").read_bytes()).hexdigest()
    _edit_json(folder / "_manifest.json", lambda d: d["partitions"][4].update(files={"part-00004.parquet": sha}))
    with pytest.raises(CertifyFolderError, match=r"part-00004\.parquet does not hold input rows 2000\.\.2499"):
        open_certify_folder(folder)
    folder = _copy(finished, tmp_path / "b")
    _rewrite_part(folder / "part-00006.parquet", lambda t: t.drop_columns(["u"]))
    sha = hashlib.sha256((folder / "part-00006.parquet").read_bytes()).hexdigest()
    _edit_json(folder / "_manifest.json", lambda d: d["partitions"][6].update(files={"part-00006.parquet": sha}))
    with pytest.raises(CertifyFolderError, match=r"part-00006\.parquet has other columns or column types"):
        open_certify_folder(folder)


def test_a_half_written_folder_with_a_changed_partition_is_refused(interrupted, tmp_path):
    folder = _copy(interrupted, tmp_path)
    _rewrite_part(folder / "part-00001.parquet", lambda t: t.slice(0, t.num_rows - 1))
    with pytest.raises(CertifyFolderError, match=r"partition part-00001\.parquet differs"):
        open_certify_folder(folder)


# -- recomputing a row ---------------------------------------------------------------------------
def test_a_row_recomputed_with_the_saved_task_equals_the_stored_one(results, finished, credit_parquet, reference):
    from core.scale.results import locate_input, recompute_row

    assert locate_input(results) is None  # the input is not beside the run
    assert locate_input(results, near=[credit_parquet.parent]) == credit_parquet
    for row in (0, 777, 3999):
        again = recompute_row(results, row, data=credit_parquet)
        assert set(again.differences.values()) == {0.0}  # same machine, same task: bit for bit
        assert list(again.certificate.path) == list(reference.loc[row, "path"])
        assert again.raw["Status"] == reference.loc[row, "label"]
    with pytest.raises(ValueError, match=r"row 4000 is not in the table"):
        recompute_row(results, 4000, data=credit_parquet)


def test_a_row_of_a_csv_input_is_read_from_its_partition(tmp_path, credit_csv, spec):
    from core.scale.results import locate_input, recompute_row

    out = tmp_path / "csv_run"
    shutil.copy(credit_csv, tmp_path / credit_csv.name)
    certify_dataset(tmp_path / credit_csv.name, out, spec, chunk_rows=CHUNK_ROWS)
    results = open_certify_folder(out)
    assert locate_input(results) == tmp_path / credit_csv.name  # beside the run's folder
    stored = results.rows([1234], columns=["fds", "u"]).to_pylist()[0]
    again = recompute_row(results, 1234, data=tmp_path / credit_csv.name)
    assert set(again.differences.values()) == {0.0} and again.certificate.fds == stored["fds"]
    (tmp_path / credit_csv.name).write_bytes((tmp_path / credit_csv.name).read_bytes() + b"\n")
    assert locate_input(results) is None  # another file of that name is not the input
