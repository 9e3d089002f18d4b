"""Partitioned certification equals one in-memory certification of the whole table."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scale_constants import CHUNK_ROWS, FIT_ROWS, N_ROWS

from core.cfc import Protocol, baseline_vector, certify, raw_origin_groups
from core.scale.certify import CertifyTask, FitSpec, certify_dataset, fit_certify_task, load_certify_task
from core.scale.sources import open_source
from core.tabular.models import make_model
from core.tabular.preprocessing import fit_preprocessor


def _output(out) -> pd.DataFrame:
    return pq.read_table(sorted(out.glob("part-*.parquet"))).to_pandas()


def _files(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, credit_parquet, spec):
    out = tmp_path_factory.mktemp("local") / "out"
    return certify_dataset(credit_parquet, out, spec, chunk_rows=CHUNK_ROWS), out


def test_fitted_task_equals_fitting_by_hand(credit_parquet, task):
    frame = pd.read_parquet(credit_parquet)
    train = frame.iloc[:FIT_ROWS]
    features = [c for c in frame.columns if c != "Status"]
    numeric = [c for c in features if frame[c].dtype.kind == "f"]
    categorical = [c for c in features if c not in numeric]
    pre = fit_preprocessor(train, numeric, categorical)
    X = pre.transform(train)
    y = (train["Status"] == "good").to_numpy(dtype=np.int64)  # classes sorted: ('bad', 'good')
    model = make_model("logreg", seed=0).fit(X, y)
    assert task.classes == ("bad", "good")
    assert task.fit_rows == FIT_ROWS
    assert task.groups == raw_origin_groups(pre.transformer)
    np.testing.assert_array_equal(task.baseline, baseline_vector(X, task.groups, "mean"))
    Xall = pre.transform(frame)
    np.testing.assert_array_equal(
        task.model.predict_proba(task.preprocessor.transform(frame)), model.predict_proba(Xall)
    )


def test_partitioned_output_equals_whole_table_certificates(local_run, credit_parquet, task):
    run, out = local_run
    assert (run.result.n_rows, run.result.n_partitions, run.result.computed) == (N_ROWS, N_ROWS // CHUNK_ROWS, 8)
    frame = pd.read_parquet(credit_parquet)
    X = task.preprocessor.transform(frame)
    whole = certify(task.model.predict_proba, X, task.groups, task.baseline, task.protocol)
    got = _output(out)
    assert run.fingerprint == whole.fingerprint
    np.testing.assert_array_equal(got["row"], np.arange(N_ROWS))
    for col in (
        "pred",
        "confidence",
        "margin",
        "flip_budget",
        "rcma",
        "fds",
        "u",
        "one_step_max",
        "degradation",
        "lambda_star_attenuate_single",
        "lambda_star_attenuate_all",
    ):
        np.testing.assert_array_equal(got[col].to_numpy(), whole.table[col].to_numpy(), err_msg=col)
    assert [list(p) for p in got["path"]] == whole.table["path"].tolist()
    np.testing.assert_array_equal(np.stack(got["path_margins"].to_numpy()), whole.traj_margin)
    np.testing.assert_array_equal(np.stack(got["path_preds"].to_numpy()), whole.traj_pred)


def test_label_columns_equal_naive_row_by_row_values(local_run, credit_parquet):
    _, out = local_run
    got = _output(out)
    frame = pd.read_parquet(credit_parquet)
    assert got["label"].tolist() == frame["Status"].tolist()
    assert got["pred_label"].tolist() == [("bad", "good")[p] for p in got["pred"]]
    assert got["correct"].tolist() == [a == b for a, b in zip(got["pred_label"], frame["Status"])]
    assert got["in_fit_sample"].tolist() == [i < FIT_ROWS for i in range(N_ROWS)]


def test_summary_equals_naive_totals_over_held_out_rows(local_run):
    run, out = local_run
    got = _output(out)
    held = got[~got["in_fit_sample"]]
    s = json.loads((out / "_summary.json").read_text())
    assert s == run.summary
    assert s["n_rows"] == N_ROWS and s["n_held_out"] == N_ROWS - FIT_ROWS
    assert s["accuracy"] == pytest.approx(held["correct"].mean(), abs=1e-15)
    assert s["mean_fds"] == pytest.approx(held["fds"].mean(), rel=1e-12)
    tied = held["margin"].abs() < 1e-3  # near-ties: left out of the mean RCMA, counted
    assert s["n_near_tie"] == int(tied.sum())
    assert s["mean_rcma"] == pytest.approx(held.loc[~tied, "rcma"].mean(), rel=1e-12)
    assert s["share_flip_budget_le_2"] == pytest.approx((held["flip_budget"] <= 2).mean(), abs=1e-15)
    assert s["high_confidence_brittle"] == int(((held["confidence"] >= 0.9) & (held["flip_budget"] <= 2)).sum())
    assert s["flip_budget_counts"] == {str(k): int((held["flip_budget"] == k).sum()) for k in range(1, 7)}
    assert sum(s["fds_histogram"]["counts"]) == len(held)
    expected_hist = [
        int(((held["fds"] >= lo) & ((held["fds"] < lo + 0.05) | (i == 19))).sum())
        for i, lo in enumerate(np.arange(20) * 0.05)
    ]
    assert s["fds_histogram"]["counts"] == expected_hist
    assert s["share_flipped_attenuate_all"] == pytest.approx(
        np.isfinite(held["lambda_star_attenuate_all"]).mean(), abs=1e-15
    )


def test_manifest_records_identity_and_partitions(local_run, credit_parquet):
    run, out = local_run
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and manifest["fingerprint"] == run.fingerprint
    assert manifest["config"]["chunk_rows"] == CHUNK_ROWS
    assert manifest["config"]["request"]["fit"] == {
        "target": "Status",
        "model": "logreg",
        "fit_rows": FIT_ROWS,
        "seed": 0,
        "id_column": None,
        "blocks": None,
    }
    assert manifest["config"]["request"]["protocol"] == Protocol().to_dict()
    assert [list(p["files"]) for p in manifest["partitions"]] == [[f"part-{i:05d}.parquet"] for i in range(8)]
    assert sum(p["rows"] for p in manifest["partitions"]) == N_ROWS == manifest["n_rows"]


def test_csv_input_gives_byte_identical_partitions(tmp_path, local_run, credit_csv, spec):
    _, out = local_run
    run = certify_dataset(credit_csv, tmp_path / "csv", spec, chunk_rows=CHUNK_ROWS)
    assert run.result.n_rows == N_ROWS
    for name in (f"part-{i:05d}.parquet" for i in range(8)):
        assert (tmp_path / "csv" / name).read_bytes() == (out / name).read_bytes()
    assert json.loads((tmp_path / "csv" / "_summary.json").read_text()) == run.summary


def test_partition_files_do_not_depend_on_batch_size(tmp_path, local_run, credit_parquet, task):
    _, out = local_run
    small = CertifyTask(**{**task.__dict__, "batch_size": 997})
    certify_dataset(credit_parquet, tmp_path / "small", small, chunk_rows=CHUNK_ROWS)
    for i in range(8):
        name = f"part-{i:05d}.parquet"
        assert (tmp_path / "small" / name).read_bytes() == (out / name).read_bytes()


class SpyTask(CertifyTask):
    """Records the (row_start, rows) of every partition it is given."""

    seen: list = []

    def __call__(self, table, row_start):
        SpyTask.seen.append((row_start, table.num_rows))
        return super().__call__(table, row_start)


def test_each_partition_is_held_alone(tmp_path, credit_parquet, task):
    SpyTask.seen = []
    certify_dataset(credit_parquet, tmp_path / "out", SpyTask(**task.__dict__), chunk_rows=CHUNK_ROWS)
    assert SpyTask.seen == [(i * CHUNK_ROWS, CHUNK_ROWS) for i in range(8)]


def test_resume_reuses_the_saved_task_and_refuses_other_settings(tmp_path, local_run, credit_parquet, spec):
    _, clean = local_run
    out = tmp_path / "out"

    class Stop(Exception):
        pass

    def stop_after_three(info, done, total):
        if info is not None and done >= 3 * CHUNK_ROWS:
            raise Stop

    with pytest.raises(Stop):
        certify_dataset(credit_parquet, out, spec, chunk_rows=CHUNK_ROWS, progress=stop_after_three)
    saved = (out / "_task.zip").read_bytes()
    with pytest.raises(ValueError, match=r"request.fit.model: \"logreg\" \(stored\) vs \"hist_gb\" \(now\)"):
        certify_dataset(
            credit_parquet, out, FitSpec(target="Status", model="hist_gb", fit_rows=FIT_ROWS), chunk_rows=CHUNK_ROWS
        )
    with pytest.raises(ValueError, match=r"request.protocol.depth: null \(stored\) vs 2 \(now\)"):
        certify_dataset(
            credit_parquet,
            out,
            FitSpec(target="Status", model="logreg", fit_rows=FIT_ROWS, protocol=Protocol(depth=2)),
            chunk_rows=CHUNK_ROWS,
        )
    run = certify_dataset(credit_parquet, out, spec, chunk_rows=CHUNK_ROWS)
    assert (run.result.computed, run.result.reused) == (5, 3)
    assert (out / "_task.zip").read_bytes() == saved
    assert _files(out) == _files(clean)


def test_model_from_an_earlier_run(tmp_path, local_run, credit_parquet, credit_csv):
    _, clean = local_run
    task = load_certify_task(clean)  # the folder, or its _task.zip
    assert task.identity["loaded_from_sha256"]
    run = certify_dataset(credit_csv, tmp_path / "again", task, chunk_rows=CHUNK_ROWS)
    assert run.fingerprint == json.loads((clean / "_manifest.json").read_text())["fingerprint"]
    for i in range(8):
        name = f"part-{i:05d}.parquet"
        assert (tmp_path / "again" / name).read_bytes() == (clean / name).read_bytes()
    (tmp_path / "other.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="corrupt or truncated"):
        load_certify_task(tmp_path / "other.zip")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "_task.pkl").write_bytes(pickle.dumps({"not": "a task"}))
    for legacy in (tmp_path / "old", tmp_path / "old" / "_task.pkl"):
        with pytest.raises(ValueError, match="pickles are no longer loaded.*Re-create it"):
            load_certify_task(legacy)
    with pytest.raises(FileNotFoundError, match="no saved task"):
        load_certify_task(tmp_path / "nothing")


def test_bad_fit_specs_are_refused(credit_parquet):
    source = open_source(credit_parquet)
    with pytest.raises(ValueError, match="`target` 'nope' is not a column"):
        fit_certify_task(source, FitSpec(target="nope"))
    with pytest.raises(ValueError, match="`model` must be one of"):
        FitSpec(target="Status", model="svm")
    with pytest.raises(ValueError, match="`fit_rows` must be an int >= 2; got 1"):
        FitSpec(target="Status", fit_rows=1)
    with pytest.raises(ValueError, match="grouping 'domain_block' needs `blocks`"):
        FitSpec(target="Status", protocol=Protocol(grouping="domain_block"))
    with pytest.raises(ValueError, match="`id_column` and `target` are the same column"):
        FitSpec(target="Status", id_column="Status")
    one_class = pd.read_parquet(credit_parquet).sort_values("Status", kind="stable")
    path = credit_parquet.parent / "sorted.parquet"
    one_class.to_parquet(path, index=False)
    with pytest.raises(ValueError, match=r"the first 100 rows hold a single class of 'Status' \(\('bad',\)\)"):
        fit_certify_task(open_source(path), FitSpec(target="Status", fit_rows=100, model="logreg"))


def test_domain_blocks_and_id_column(tmp_path, credit_parquet):
    blocks = {
        "Age": "applicant",
        "Marital": "applicant",
        "Home": "applicant",
        "Job": "employment",
        "Seniority": "employment",
    }
    spec = FitSpec(
        target="Status",
        model="logreg",
        fit_rows=FIT_ROWS,
        id_column="Price",
        protocol=Protocol(grouping="domain_block"),
        blocks=blocks,
    )
    task = fit_certify_task(open_source(credit_parquet), spec)
    # Raw-origin groups in preprocessing order (numeric first), merged into the declared blocks.
    assert list(task.groups) == [
        "employment",
        "Time",
        "applicant",
        "Expenses",
        "Income",
        "Assets",
        "Debt",
        "Amount",
        "Records",
    ]
    assert "Price" not in task.preprocessor.raw_columns
    run = certify_dataset(credit_parquet, tmp_path / "out", spec, chunk_rows=2000)
    got = _output(tmp_path / "out")
    np.testing.assert_array_equal(got["Price"], pd.read_parquet(credit_parquet)["Price"])
    assert run.result.n_rows == N_ROWS
