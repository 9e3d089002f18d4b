"""``core.scale.upload_certify``: every row of an upload certified by a detached ``certify`` child,
its progress read from the folder, resumed after a kill, equal to a run made in-process."""

from __future__ import annotations

import hashlib
import signal
import time

import pandas as pd
import pytest
from scale_constants import N_ROWS

from core.cfc.protocol import Protocol
from core.scale.certify import FitSpec, certify_dataset
from core.scale.results import open_certify_folder, run_is_live
from core.scale.upload_certify import INPUTS_DIR, plan_upload_certify, progress, start


@pytest.fixture(scope="module")
def upload(credit_parquet) -> bytes:
    return pd.read_parquet(credit_parquet).to_csv(index=False).encode()


def _plan(data, root, **changes):
    settings = {"target": "Status", "rows": N_ROWS, "model": "logreg", "seed": 0, "protocol": Protocol()}
    return plan_upload_certify(data, "loans.csv", root, **{**settings, **changes})


def _wait(child, timeout=150.0):
    deadline = time.monotonic() + timeout
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert child.poll() is not None, "the certify child did not finish"


def test_the_same_request_maps_to_the_same_folder_and_another_to_another(upload, tmp_path):
    a, b = _plan(upload, tmp_path), _plan(upload, tmp_path)
    assert a == b and a.out.parent == tmp_path and a.data.parent == tmp_path / INPUTS_DIR / a.name
    assert a.name.startswith("loans-logreg-") and a.name.endswith("-certify")
    others = [
        _plan(upload, tmp_path, model="hist_gb"),
        _plan(upload, tmp_path, seed=1),
        _plan(upload, tmp_path, protocol=Protocol(depth=2)),
        _plan(upload + b"\n", tmp_path),
        _plan(upload, tmp_path, target="Home"),
    ]
    assert len({p.name for p in others} | {a.name}) == 6
    assert _plan(upload, tmp_path, digest=hashlib.sha256(upload).hexdigest()) == a  # a known digest, not hashed again
    assert not (tmp_path / INPUTS_DIR).exists()  # a plan writes nothing
    assert a.fit_rows == N_ROWS // 2 and "--fit-rows" in a.argv
    dask = _plan(upload, tmp_path, scheduler="tcp://10.0.0.5:8786")
    assert dask.argv[dask.argv.index("--engine") + 1 : dask.argv.index("--engine") + 4] == (
        "dask",
        "--scheduler",
        "tcp://10.0.0.5:8786",
    )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"file_name": "loans.xlsx"}, r"loans\.xlsx: certifying every row reads \.csv and \.parquet tables"),
        ({"rows": 3}, r"`rows` must be an int >= 4; got 3"),
        ({"scheduler": "10.0.0.5"}, r"`scheduler` must be an address such as tcp://host:8786; got '10\.0\.0\.5'"),
        ({"protocol": {"depth": 2}}, r"`protocol` must be a Protocol; got dict"),
    ],
)
def test_bad_requests_are_refused(upload, tmp_path, change, match):
    settings = {
        "file_name": "loans.csv",
        "target": "Status",
        "rows": N_ROWS,
        "model": "logreg",
        "seed": 0,
        "protocol": Protocol(),
    }
    settings.update(change)
    with pytest.raises(ValueError, match=match):
        plan_upload_certify(upload, settings.pop("file_name"), tmp_path, **settings)


@pytest.mark.slow
def test_a_child_killed_mid_run_resumes_to_the_in_process_result(upload, tmp_path, credit_parquet):
    plan = _plan(upload, tmp_path / "audits")
    child = start(plan, upload)
    deadline = time.monotonic() + 120
    while not progress(plan).started and time.monotonic() < deadline:  # past fitting: the folder exists
        time.sleep(0.05)
    assert progress(plan).started and run_is_live(plan.out)
    child.send_signal(signal.SIGKILL)
    child.wait()
    stopped = progress(plan)
    assert not stopped.complete and not run_is_live(plan.out)  # the dead child's lock is stale
    assert not open_certify_folder(plan.out).complete  # half-written: opens as incomplete
    _wait(start(plan, upload))
    done = progress(plan)
    assert done.complete and done.rows_done == N_ROWS and done.fraction == 1.0 and done.error is None
    # Equal to the same settings certified in-process, file by file.
    reference = tmp_path / "reference"
    spec = FitSpec(target="Status", model="logreg", fit_rows=plan.fit_rows, seed=0, protocol=Protocol())
    certify_dataset(plan.data, reference, spec)
    parts = sorted(p.name for p in reference.glob("part-*.parquet"))
    assert parts == sorted(p.name for p in plan.out.glob("part-*.parquet"))
    for name in parts:
        assert (plan.out / name).read_bytes() == (reference / name).read_bytes()
    assert open_certify_folder(plan.out).n_rows == N_ROWS


@pytest.mark.slow
def test_a_run_that_fails_says_why(upload, tmp_path):
    plan = _plan(upload, tmp_path, target="Nope")
    _wait(start(plan, upload))
    failed = progress(plan)
    assert not failed.complete and not failed.started
    assert "Nope" in failed.error and "is not a column" in failed.error


@pytest.mark.slow
def test_on_a_dask_scheduler_the_run_is_the_local_one(upload, tmp_path, dask_client):
    """``--dask-scheduler``: the child certifies on the running cluster; same bytes as locally."""
    local = _plan(upload, tmp_path / "local")
    _wait(start(local, upload))
    remote = _plan(upload, tmp_path / "remote", scheduler=dask_client.scheduler.address)
    _wait(start(remote, upload), timeout=170)
    assert progress(remote).complete, remote.log.read_text()[-2000:]
    parts = sorted(p.name for p in local.out.glob("part-*.parquet"))
    assert parts and parts == sorted(p.name for p in remote.out.glob("part-*.parquet"))
    for name in parts:
        assert (remote.out / name).read_bytes() == (local.out / name).read_bytes()
