"""``python -m core certify`` / ``synth``: a run killed with SIGKILL resumes to identical output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from core.cli import main
from core.scale.certify import load_certify_task, save_certify_task, task_from_audit

ROOT = Path(__file__).resolve().parents[2]
_CERTIFY = ["certify", "--target", "Status", "--model", "logreg", "--fit-rows", "2000", "--no-progress"]


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """12,000 synthetic rows written by the ``synth`` command."""
    path = tmp_path_factory.mktemp("cli") / "big.parquet"
    assert main(["synth", "--rows", "12000", "--out", str(path), "--seed", "5", "--row-group-rows", "3000"]) == 0
    return path


@pytest.fixture(scope="module")
def clean(tmp_path_factory, big) -> Path:
    out = tmp_path_factory.mktemp("clean") / "out"
    assert main([*_CERTIFY, "--data", str(big), "--out", str(out), "--chunk-rows", "500"]) == 0
    return out


def test_synth_writes_the_seeded_stream(big, generator):
    frame = pd.read_parquet(big)
    expected = generator.sample(12_000, seed=5)
    pd.testing.assert_frame_equal(frame, expected)


def test_sigkilled_run_resumes_to_byte_identical_output(tmp_path, big, clean):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "core", *_CERTIFY, "--data", str(big), "--out", str(out), "--chunk-rows", "500"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / ".progress.jsonl"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal.read_text().splitlines()) >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()!r}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        proc.stderr.close()
    assert (out / ".lock").exists()  # the killed driver could not release it
    done_before = len(journal.read_text().splitlines())
    assert done_before < 24
    assert main([*_CERTIFY, "--data", str(big), "--out", str(out), "--chunk-rows", "500"]) == 0
    assert _files(out) == _files(clean)


def test_other_settings_on_an_existing_run_exit_2(tmp_path, big, clean, capsys):
    code = main([*_CERTIFY, "--data", str(big), "--out", str(clean), "--chunk-rows", "400"])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to resume" in err and "chunk_rows: 500 (stored) vs 400 (now)" in err
    assert json.loads((clean / "_manifest.json").read_text())["complete"] is True


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--engine", "dask"], "--engine dask needs --workers N"),
        (["--workers", "2"], "--workers / --scheduler only apply to --engine dask"),
        (["--model-from", "X", "--depth", "2"], "--depth cannot be combined with --model-from"),
        (["--protocol", "missing.json"], "Protocol file 'missing.json' does not exist"),
    ],
    ids=["dask-without-cluster", "workers-without-dask", "model-from-with-protocol", "missing-protocol"],
)
def test_bad_command_lines_exit_2(tmp_path, big, capsys, extra, message):
    assert main([*_CERTIFY, "--data", str(big), "--out", str(tmp_path / "o"), *extra]) == 2
    assert message in capsys.readouterr().err


def test_target_is_required_without_model_from(tmp_path, big, capsys):
    assert main(["certify", "--data", str(big), "--out", str(tmp_path / "o")]) == 2
    assert "--target is required unless --audit" in capsys.readouterr().err


def test_model_from_an_earlier_run_on_an_existing_dask_cluster(tmp_path, big, clean, dask_client):
    out = tmp_path / "dask"
    address = dask_client.scheduler.address
    code = main(
        [
            "certify",
            "--model-from",
            str(clean),
            "--data",
            str(big),
            "--out",
            str(out),
            "--chunk-rows",
            "500",
            "--engine",
            "dask",
            "--scheduler",
            address,
            "--no-progress",
        ]
    )
    assert code == 0
    for name in (f"part-{i:05d}.parquet" for i in range(24)):
        assert (out / name).read_bytes() == (clean / name).read_bytes()
    assert json.loads((out / "_summary.json").read_text()) == json.loads((clean / "_summary.json").read_text())


def test_model_audited_on_a_sample_certifies_the_full_table(tmp_path, credit_parquet):
    from core.cfc import certify
    from core.tabular.audit import run_audit

    result = run_audit("credit_data", model="logreg", max_rows=600, seed=1)
    path = save_certify_task(task_from_audit(result), tmp_path / "audit_task.zip")
    out = tmp_path / "out"
    assert (
        main(
            [
                "certify",
                "--model-from",
                str(path),
                "--data",
                str(credit_parquet),
                "--out",
                str(out),
                "--chunk-rows",
                "1000",
                "--no-progress",
            ]
        )
        == 0
    )
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["fingerprint"] == result.fingerprint  # the audit's own certificate fingerprint
    got = pd.read_parquet(out)
    frame = pd.read_parquet(credit_parquet)
    whole = certify(
        result.model.predict_proba,
        result.preprocessor.transform(frame),
        result.groups,
        result.baseline,
        result.protocol,
    )
    pd.testing.assert_series_equal(got["fds"], whole.table["fds"], check_names=False, check_index=False)
    assert got["pred_label"].tolist() == [("good", "bad")[p] for p in whole.table["pred"]]
    assert not got["in_fit_sample"].any()
    assert load_certify_task(path).identity["audit"]["fingerprint"] == result.fingerprint
