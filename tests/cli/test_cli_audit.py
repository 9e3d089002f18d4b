"""The ``python -m core audit`` command."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

import core.tabular.audit as audit_module
from core.cli import main
from core.tabular.datasets import load_dataset


def _run(capsys, *argv):
    code = main(["audit", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir())


def test_single_audit_writes_every_file(tmp_path, capsys):
    out = tmp_path / "results"
    code, stdout, err = _run(
        capsys,
        "--dataset",
        "breast_cancer",
        "--model",
        "logreg",
        "--seed",
        "3",
        "--depth",
        "3",
        "--path",
        "adaptive",
        "--masking-rates",
        "0.3",
        "--draws",
        "2",
        "--out",
        out,
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "_task.zip",
        "certificates.csv",
        "certificates.parquet",
        "evaluation.json",
        "protocol.json",
        "summary.md",
        "test.parquet",
        "train.parquet",
        "view",
    ]
    assert _leftovers(tmp_path) == ["results"]  # the temporary folder was renamed, not copied
    proto = json.loads((out / "protocol.json").read_text())
    assert proto["protocol"]["depth"] == 3 and proto["protocol"]["path"] == "adaptive" and proto["seed"] == 3
    channel = proto["label_channel"]
    assert channel["masking_rates"] == [0.3] and channel["n_draws"] == 2
    assert channel["dropout_rates"] == [0.1, 0.2] and channel["tau_p"] == 0.9  # declared defaults
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["model"] == "logreg" and "fds" in ev["scores"]
    assert stdout.startswith("# Fragility audit: breast_cancer / logreg / seed 3")
    assert len(pd.read_parquet(out / "certificates.parquet")) == ev["n_test"]


def test_user_file_with_blocks(tmp_path, capsys):
    frame = load_dataset("credit_data").frame.iloc[:500]
    data = tmp_path / "loans.csv"
    frame.to_csv(data, index=False)
    blocks = tmp_path / "blocks.yaml"
    blocks.write_text("money: [Income, Assets, Debt]\nperson: [Age, Marital]\n")
    out = tmp_path / "r"
    code, stdout, err = _run(
        capsys,
        "--data",
        data,
        "--target",
        "Status",
        "--blocks",
        blocks,
        "--grouping",
        "domain_block",
        "--model",
        "logreg",
        "--out",
        out,
        "--no-progress",
    )
    assert code == 0, err
    proto = json.loads((out / "protocol.json").read_text())
    assert proto["dataset"] == "loans" and proto["protocol"]["grouping"] == "domain_block"
    assert "money" in proto["groups"] and "Income" not in proto["groups"]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--dataset", "nope"], "unknown dataset 'nope'"),
        (["--dataset", "credit_data", "--model", "svm"], "unknown model 'svm'"),
        (["--data", "{tmp}/x.csv"], "--target is required with --data"),
        (["--data", "{tmp}/missing.csv", "--target", "y"], "does not exist"),
        (["--data", "{tmp}/x.csv", "--target", "nope"], "target column 'nope' not found"),
        (["--dataset", "credit_data", "--data", "{tmp}/x.csv"], "exactly one of"),
        ([], "exactly one of"),
        (["--dataset", "credit_data", "--target", "Status"], "--target only applies to --data"),
        (
            ["--dataset", "breast_cancer", "--depth", "99", "--model", "logreg"],
            r"`depth` must be between 1 and the number of groups \(30\); got 99",
        ),
        (["--dataset", "breast_cancer", "--seeds", "0,0"], "--seed repeats"),
        (["--dataset", "breast_cancer", "--grouping", "domain_block", "--data", "{tmp}/x.csv"], "exactly one of"),
        (["--dataset", "breast_cancer", "--protocol", "{tmp}/nope.json"], "Protocol file"),
        (["--dataset", "breast_cancer", "--tau-p", "2"], "`tau_p` must be in"),
        (["--dataset", "breast_cancer", "--weights", "1,2"], "`weights` must be three"),
    ],
    ids=[
        "dataset",
        "model",
        "no-target",
        "missing-file",
        "bad-target",
        "both",
        "neither",
        "target-bundled",
        "depth",
        "repeat-seed",
        "grouping-both",
        "protocol-file",
        "tau",
        "weights",
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, argv, match):
    (tmp_path / "x.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, stdout, err = _run(capsys, *argv, "--out", tmp_path / "out", "--no-progress")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert re.search(match, lines[0]), lines[0]
    assert _leftovers(tmp_path) == ["x.csv"]


def test_a_failure_half_way_leaves_nothing(tmp_path, capsys, monkeypatch):
    def broken(result, directory):
        (directory / "certificates.csv").write_text("partial")
        raise ValueError("disk full")

    monkeypatch.setattr(audit_module, "write_audit", broken)
    code, _, err = _run(
        capsys, "--dataset", "breast_cancer", "--model", "logreg", "--out", tmp_path / "out", "--no-progress"
    )
    assert code == 2 and "disk full" in err
    assert _leftovers(tmp_path) == []


def test_existing_output_needs_force(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("keep me")
    code, _, err = _run(capsys, "--dataset", "breast_cancer", "--model", "logreg", "--out", out)
    assert code == 2 and "--force" in err and (out / "old.txt").exists()
    code, _, err = _run(
        capsys, "--dataset", "breast_cancer", "--model", "logreg", "--out", out, "--force", "--no-progress"
    )
    assert code == 0, err
    assert not (out / "old.txt").exists() and (out / "summary.md").exists()
    assert _leftovers(tmp_path) == ["out"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run(capsys, "--dataset", "breast_cancer", "--model", "logreg", "--out", empty, "--no-progress")[0] == 0


def test_sweep_writes_the_table_and_every_unit(tmp_path, capsys):
    out = tmp_path / "sweep"
    code, stdout, err = _run(
        capsys,
        "--datasets",
        "breast_cancer",
        "--models",
        "logreg",
        "--seeds",
        "0,1",
        "--bootstrap",
        "100",
        "--out",
        out,
    )
    assert code == 0, err
    for name in ("sweep_table.csv", "sweep_table.md", "sweep_units.csv", "sweep_runs.csv", "sweep_bootstrap.csv"):
        assert (out / name).is_file(), name
    for seed in (0, 1):
        assert (out / "breast_cancer" / "logreg" / f"seed{seed}" / "summary.md").is_file()
    table = pd.read_csv(out / "sweep_table.csv")
    assert table[["dataset", "model", "n_seeds"]].values.tolist() == [["breast_cancer", "logreg", 2]]
    assert stdout.startswith("| dataset | model | n_seeds | accuracy |")
    assert (out / "sweep_table.md").read_text().splitlines()[0] == stdout.splitlines()[0]
    # The bootstrap table printed after it: every column of the file but the difference's interval.
    printed = stdout.split("\n\n")[1].splitlines()[0]
    assert printed == ("| score | kind | n_units | mean | ci_low | ci_high | reference | diff_mean | win_rate |"), (
        printed
    )
    assert "diff_ci_low" in pd.read_csv(out / "sweep_bootstrap.csv").columns


def test_module_entry_point_and_help():
    done = subprocess.run(
        [sys.executable, "-m", "core", "audit", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "--order-baselines" in done.stdout and "--seeds" in done.stdout


def test_audit_folder_feeds_certify_model_from(tmp_path, capsys):
    """An audit's output folder is a model source for large-table certification."""
    out = tmp_path / "audit"
    code, _, err = _run(capsys, "--dataset", "breast_cancer", "--model", "logreg", "--seed", "0", "--out", out)
    assert code == 0, err
    data = tmp_path / "rows.csv"
    load_dataset("breast_cancer").frame.to_csv(data, index=False)
    big = tmp_path / "big"
    assert (
        main(
            [
                "certify",
                "--model-from",
                str(out),
                "--data",
                str(data),
                "--out",
                str(big),
                "--chunk-rows",
                "200",
                "--no-progress",
            ]
        )
        == 0
    ), capsys.readouterr().err
    proto = json.loads((out / "protocol.json").read_text())
    manifest = json.loads((big / "_manifest.json").read_text())
    assert manifest["fingerprint"] == proto["certificate_fingerprint"]
    test_rows = pd.read_parquet(out / "certificates.parquet")
    certified = pd.read_parquet(big)
    assert len(certified) == 569
    assert certified["fds"].between(0, 1).all()
    # Every audited test row reappears among the rows certified from the folder's model.
    gap = abs(test_rows["fds"].to_numpy()[:, None] - certified["fds"].to_numpy()[None, :]).min(axis=1)
    assert gap.max() < 1e-9
