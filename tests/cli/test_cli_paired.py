"""``python -m core paired``: outputs, screening integration, bad input and atomic writes."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.cli import main
from core.paired import identified_intervals_grid, unpair

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paired"))
from paired_records import records as _records  # noqa: E402


def _run(argv, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_paired_command_writes_every_table(tmp_path, capsys):
    records = _records()
    records.to_csv(tmp_path / "records.csv", index=False)
    out = tmp_path / "out"
    code, stdout, _ = _run(
        [
            "paired",
            "--records",
            str(tmp_path / "records.csv"),
            "--tau",
            "0.8",
            "--out",
            str(out),
            "--lambdas",
            "0,0.5,1",
        ],
        capsys,
    )
    assert code == 0
    files = {p.name for p in out.iterdir()}
    assert files == {
        "intervals.csv",
        "targets.csv",
        "five_states.csv",
        "k_identification.csv",
        "variance_ratios.csv",
        "summary_widths.csv",
        "summary_cells.csv",
        "policy_thresholds.csv",
        "policy_costs.csv",
        "policy_differences.csv",
        "policy_selection.csv",
        "manifest.json",
    }
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_cells"] == 4 and manifest["rows_analysed"] == "split == 'eval'"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = identified_intervals_grid(records[records["split"] == "eval"], 0.8)
    got = pd.read_csv(out / "intervals.csv")
    np.testing.assert_allclose(got[["low", "high", "observed"]], expected[["low", "high", "observed"]])
    assert "mean interval width" in stdout
    assert sorted(pd.read_csv(out / "policy_selection.csv")["lambda"].unique()) == [0, 0.5, 1]


def test_unpaired_command(tmp_path, capsys):
    cell = _records()
    cell = cell[(cell["model"] == "cnn") & (cell["condition"] == "blur")]
    u = unpair(cell, level="Ik")
    u.clean.to_csv(tmp_path / "c.csv", index=False)
    u.perturbed.to_csv(tmp_path / "p.csv", index=False)
    u.counts.to_csv(tmp_path / "k.csv", index=False)
    code, _, _ = _run(
        [
            "paired",
            "--clean",
            str(tmp_path / "c.csv"),
            "--perturbed",
            str(tmp_path / "p.csv"),
            "--counts",
            str(tmp_path / "k.csv"),
            "--tau",
            "0.7",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 0
    got = pd.read_csv(tmp_path / "o" / "intervals.csv")
    assert sorted(got["level"].unique()) == ["I0", "Ik"] and got["observed"].isna().all()
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["level_available"] == "Ik"


def test_screening_tables_come_from_the_screening_module(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 24
    y = np.arange(n) % 3
    clean = pd.DataFrame(
        {
            "model": "cnn",
            "record_id": np.arange(n),
            "true_label": y,
            "pred": y,
            "max_prob": np.round(rng.uniform(0.5, 1, n), 3),
            "split": "eval",
        }
    )
    clean["true_prob"] = clean["max_prob"]
    probes = []
    for probe in ("blur-2", "noise-2", "fog-2"):
        pred = np.where(rng.random(n) < 0.7, y, (y + 1) % 3)
        mp = np.round(rng.uniform(0.4, 1, n), 3)
        probes.append(
            pd.DataFrame(
                {
                    "model": "cnn",
                    "record_id": np.arange(n),
                    "probe": probe,
                    "kind": "corruption",
                    "true_label": y,
                    "pred": pred,
                    "max_prob": mp,
                    "true_prob": np.where(pred == y, mp, np.round(mp / 3, 3)),
                }
            )
        )
    clean.to_csv(tmp_path / "clean.csv", index=False)
    pd.concat(probes).to_csv(tmp_path / "probes.csv", index=False)
    records = _records(n=n)
    records = records[records["model"] == "cnn"].assign(
        true_label=np.tile(y, 2),
        clean_pred=np.tile(y, 2),
        clean_max_prob=np.tile(clean["max_prob"], 2),
        clean_true_prob=np.tile(clean["max_prob"], 2),
        split="eval",
    )
    records = records.assign(
        pert_true_prob=np.where(
            records["pert_pred"] == records["true_label"], records["pert_max_prob"], records["pert_true_prob"]
        )
    )
    records.to_csv(tmp_path / "records.csv", index=False)
    out = tmp_path / "out"
    code, _, err = _run(
        [
            "paired",
            "--records",
            str(tmp_path / "records.csv"),
            "--tau",
            "0.8",
            "--out",
            str(out),
            "--no-policies",
            "--probes",
            str(tmp_path / "probes.csv"),
            "--clean-outputs",
            str(tmp_path / "clean.csv"),
            "--outcome-source",
            "recapture",
            "--budget",
            "0.25",
        ],
        capsys,
    )
    assert code == 0, err
    queue = pd.read_csv(out / "recapture_queue.csv")
    assert queue["selection_prob"].sum() == pytest.approx(6)  # k = round(0.25 · 24)
    assert len(pd.read_csv(out / "screening_scores.csv")) == n


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda d: d.assign(pert_max_prob=d["pert_max_prob"].where(d.index != 7, 1.4)),
            r"records\.csv, row 8 \(line 9\), column 'pert_max_prob': 1\.4 is not a probability",
        ),
        (lambda d: d.drop(columns="pert_pred"), r"records\.csv: missing column\(s\) \['pert_pred'\]"),
        (
            lambda d: d.assign(record_id=d["record_id"].where(d.index != 3, 0)),
            r"row 4 \(line 5\), column 'record_id': 0 already appears in row 1 of the same cell",
        ),
    ],
    ids=["probability", "missing-column", "duplicate-id"],
)
def test_bad_input_exits_2_naming_row_and_column_and_writes_nothing(tmp_path, capsys, mutate, message):
    mutate(_records()).to_csv(tmp_path / "records.csv", index=False)
    out = tmp_path / "out"
    code, _, err = _run(
        ["paired", "--records", str(tmp_path / "records.csv"), "--tau", "0.8", "--out", str(out)], capsys
    )
    assert code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv"]  # no output, no temporary folder


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tau", "0.8"], "give --records FILE"),
        (["--records", "r.csv", "--clean", "c.csv", "--tau", "0.8"], "not both"),
        (["--records", "r.csv", "--probes", "p.csv", "--tau", "0.8"], "needs both --probes and --clean-outputs"),
    ],
    ids=["no-input", "both-inputs", "half-screening"],
)
def test_inconsistent_arguments_exit_2(tmp_path, capsys, argv, message):
    code, _, err = _run(["paired", *argv, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and message in err


def test_existing_output_needs_force(tmp_path, capsys):
    _records().to_csv(tmp_path / "records.csv", index=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("keep")
    argv = ["paired", "--records", str(tmp_path / "records.csv"), "--tau", "0.8", "--out", str(out), "--no-policies"]
    code, _, err = _run(argv, capsys)
    assert code == 2 and "not empty" in err and (out / "old.txt").exists()
    code, _, _ = _run([*argv, "--force"], capsys)
    assert code == 0 and not (out / "old.txt").exists() and (out / "intervals.csv").exists()


def test_module_entry_point_runs_in_a_subprocess(tmp_path):
    _records().to_csv(tmp_path / "records.csv", index=False)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "paired",
            "--records",
            str(tmp_path / "records.csv"),
            "--tau",
            "1.5",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--tau" in done.stderr
