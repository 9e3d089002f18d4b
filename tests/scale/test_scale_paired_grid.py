"""The paired grid shard by shard equals the single calls over all records; Dask is identical."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from core.cli import main
from core.imaging.demo import load_demo_pool
from core.paired.bounds import identified_intervals_grid
from core.paired.policies import evaluate_policies, policy_thresholds
from core.scale.paired_grid import TABLES, paired_grid, scan_records

_KEYS = ["model", "condition", "source", "target", "level", "lambda", "policy", "versus"]


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    """3 models x 12 conditions of the shipped demo pool: 36 cells of 1,500 records."""
    rec = load_demo_pool().records
    rec = rec[rec["model"].isin(["cnn-w8", "logreg-c1", "random-forest"])]
    return rec[rec["condition"].isin(sorted(rec["condition"].unique())[:12])].reset_index(drop=True)


@pytest.fixture(scope="module")
def records_dir(tmp_path_factory, records) -> Path:
    """The records shuffled over three Parquet files: cells are scattered across files."""
    folder = tmp_path_factory.mktemp("paired") / "records"
    folder.mkdir()
    shuffled = records.sample(frac=1.0, random_state=0)
    for j in range(3):
        shuffled.iloc[j::3].to_parquet(folder / f"r{j}.parquet", index=False)
    return folder


@pytest.fixture(scope="module")
def local_grid(tmp_path_factory, records_dir):
    out = tmp_path_factory.mktemp("grid") / "out"
    return paired_grid(records_dir, out, tau=0.8, cells_per_task=10), out


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values([k for k in _KEYS if k in frame.columns], kind="stable").reset_index(drop=True)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_scan_counts_cells_and_keeps_enough_for_the_thresholds(records_dir, records):
    source, development, has_eval = scan_records(records_dir)
    counts = records.groupby(["model", "condition", "source"]).size()
    assert source.cells == tuple(counts.index) and source.cell_rows == tuple(counts.to_numpy())
    assert has_eval
    pd.testing.assert_frame_equal(policy_thresholds(development), policy_thresholds(records), check_exact=True)
    assert len(development) < len(records) / 5  # one row per record, not per condition


def test_shards_equal_the_single_calls_over_all_records(local_grid, records):
    run, out = local_grid
    assert (run.result.n_rows, run.result.n_partitions, run.summary["n_cells"]) == (len(records), 4, 36)
    got = pd.read_parquet(out / "intervals")
    pd.testing.assert_frame_equal(_sorted(got), _sorted(identified_intervals_grid(records, 0.8)), check_exact=True)
    report = evaluate_policies(records)
    for name, expected in (
        ("policy_costs", report.costs),
        ("policy_differences", report.differences),
        ("policy_selection", report.selection),
    ):
        pd.testing.assert_frame_equal(_sorted(pd.read_parquet(out / name)), _sorted(expected), check_exact=True)
    at_half = report.differences[report.differences["lambda"] == 0.5]
    assert run.summary["policy_pairs_at_lambda_0.5"]["Ik"]["certified"] == int(
        at_half.loc[at_half["level"] == "Ik", "certified"].sum()
    )


def test_dask_grid_is_byte_identical_and_resumes(tmp_path, local_grid, records_dir, dask_client):
    _, ref = local_grid

    class Stop(Exception):
        pass

    seen = []

    def stop_after_two(info):
        seen.append(info.index)
        if len(seen) == 2:
            raise Stop

    out = tmp_path / "out"
    with pytest.raises(Stop):
        paired_grid(
            records_dir, out, tau=0.8, cells_per_task=10, engine="dask", client=dask_client, progress=stop_after_two
        )
    with pytest.raises(ValueError, match=r"cells_per_task: 10 \(stored\) vs 5 \(now\)"):
        paired_grid(records_dir, out, tau=0.8, cells_per_task=5)
    run = paired_grid(records_dir, out, tau=0.8, cells_per_task=10, engine="dask", client=dask_client)
    assert run.result.reused >= 2
    assert _files(out) == _files(ref)


def test_sampled_feasible_means_are_seeded_per_shard(tmp_path, records_dir, dask_client):
    # max_placements=1 forces the Monte Carlo estimate of the I5 feasible mean.
    kwargs = {
        "tau": 0.8,
        "levels": ("I5",),
        "lambdas": (0.5,),
        "cells_per_task": 6,
        "max_placements": 1,
        "n_draws": 50,
        "seed": 3,
    }
    local = paired_grid(records_dir, tmp_path / "local", **kwargs)
    paired_grid(records_dir, tmp_path / "dask", engine="dask", client=dask_client, **kwargs)
    assert _files(tmp_path / "local") == _files(tmp_path / "dask")
    methods = set(pd.read_parquet(tmp_path / "local" / "policy_selection")["mean_method"])
    assert "estimate" in methods
    assert json.loads((tmp_path / "local" / "_manifest.json").read_text())["config"]["seed"] == 3
    assert local.result.n_partitions == 6


def test_cli_runs_the_grid_on_an_existing_cluster(tmp_path, local_grid, records_dir, dask_client, capsys):
    _, ref = local_grid
    out = tmp_path / "cli"
    code = main(
        [
            "paired-grid",
            "--records",
            str(records_dir),
            "--out",
            str(out),
            "--tau",
            "0.8",
            "--cells-per-task",
            "10",
            "--engine",
            "dask",
            "--scheduler",
            dask_client.scheduler.address,
            "--no-progress",
        ]
    )
    assert code == 0
    assert "36 cells" in capsys.readouterr().out
    for name in TABLES:
        assert _files(out / name) == _files(ref / name)


def test_bad_inputs_are_refused(tmp_path, records):
    records.iloc[:10].to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(ValueError, match="must be Parquet"):
        paired_grid(tmp_path / "r.csv", tmp_path / "o", tau=0.8)
    records.drop(columns="pert_true_prob").iloc[:10].to_parquet(tmp_path / "r.parquet", index=False)
    with pytest.raises(ValueError, match=r"lack column\(s\) \['pert_true_prob'\]"):
        paired_grid(tmp_path / "r.parquet", tmp_path / "o", tau=0.8)
    with pytest.raises(ValueError, match="`cells_per_task` must be a positive int; got 0"):
        paired_grid(tmp_path / "r.parquet", tmp_path / "o", tau=0.8, cells_per_task=0)
    with pytest.raises(FileNotFoundError, match="do not exist"):
        paired_grid(tmp_path / "missing.parquet", tmp_path / "o", tau=0.8)
