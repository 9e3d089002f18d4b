"""``python -m core probe --engine dask`` on a real ``LocalCluster`` (2 worker processes).

- the published files are byte-identical to the local run's at the same threads (the
  workers' default on this cluster, 2 single-threaded workers on at most 2 cores, is the
  local run's ``--threads 1``; the manifest records the number);
- a worker SIGKILLed mid-run loses nothing: the run completes with identical files;
- an interrupted run resumes from its finished batches to identical files;
- the execution flags are checked like ``certify``'s.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from probe_kit import MEAN, STD, probe_argv

from core.cli import main
from core.imaging.images import open_images
from core.imaging.probe import OnnxImageClassifier, write_probe_outputs
from core.scale.cluster import connect
from core.scale.probe import probe_on_dask, work_folder

pytestmark = pytest.mark.slow

FILES = ("clean.parquet", "probes.parquet", "natural.parquet", "records.parquet", "manifest.json")
BATCH = 3  # 14 images: batches of 3, 3, 3, 3, 2
SETTINGS = dict(probes=(("gaussian_noise", 2), ("motion_blur", 4), ("contrast", 2)), natural=("rotate+5", "hflip"))


def _argv(cnn, folder, out, *extra):
    return probe_argv(
        cnn[1],
        folder / "images",
        folder / "images_labels.csv",
        out,
        "--perturbed",
        str(folder / "screen"),
        "--mean",
        ",".join(map(str, MEAN)),
        "--std",
        ",".join(map(str, STD)),
        "--probes",
        "gaussian_noise:2,motion_blur:4,contrast:2",
        "--natural",
        "rotate+5,hflip",
        "--batch-size",
        str(BATCH),
        "--name",
        "cnn",
        "--no-progress",
        *extra,
    )


def _files(out) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in FILES}


@pytest.fixture(scope="module")
def local_out(cnn, folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    assert main(_argv(cnn, folder, out, "--threads", str(_worker_share()))) == 0
    return out


def _worker_share() -> int:
    """What :func:`core.scale.cluster.worker_threads` gives 2 single-threaded workers here."""
    from core.onnx_session import default_threads

    return max(1, default_threads() // 2)


@pytest.fixture(scope="module")
def client():
    with connect(workers=2, timeout=120) as c:
        yield c


def _inputs(cnn, folder):
    model = OnnxImageClassifier(cnn[1].read_bytes(), where=str(cnn[1]), mean=MEAN, std=STD)
    labels = folder / "images_labels.csv"
    images = open_images(folder / "images", labels)
    return model, images, {"screen": open_images(folder / "screen", labels)}


def test_cli_on_a_local_cluster_writes_the_local_runs_bytes(cnn, folder, tmp_path, local_out, capsys):
    out = tmp_path / "out"
    assert main(_argv(cnn, folder, out, "--engine", "dask", "--workers", "2")) == 0
    assert _files(out) == _files(local_out)
    assert not work_folder(out).exists()  # published, so the partitions are gone
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)


def test_a_worker_killed_mid_run_loses_nothing(cnn, folder, tmp_path, local_out, client):
    client.wait_for_workers(2, timeout=120)
    pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker(label, done, total):
        if killed:
            return
        # A worker with batches assigned: the kill interrupts a batch being computed.
        deadline = time.monotonic() + 10
        while not (busy := sorted(w for w, keys in client.processing().items() if keys and w in pids)):
            assert time.monotonic() < deadline, "no batch was in flight when the kill hook ran"
            time.sleep(0.01)
        os.kill(pids[busy[0]], signal.SIGKILL)
        killed.append(busy[0])

    model, images, perturbed = _inputs(cnn, folder)
    work = tmp_path / ".out.probe-parts"
    result = probe_on_dask(
        model,
        images,
        work=work,
        client=client,
        model_name="cnn",
        perturbed=perturbed,
        batch_size=BATCH,
        progress=kill_a_busy_worker,
        **SETTINGS,
    )
    assert killed, "the kill hook never ran"
    write_probe_outputs(result, tmp_path / "out")
    assert _files(tmp_path / "out") == _files(local_out)
    client.wait_for_workers(2, timeout=120)
    assert pids[killed[0]] not in client.run(os.getpid).values()  # the nanny started a new process


class Stop(Exception):
    pass


def test_an_interrupted_run_resumes_from_its_finished_batches(cnn, folder, tmp_path, local_out, client):
    model, images, perturbed = _inputs(cnn, folder)
    work = tmp_path / ".out.probe-parts"
    kwargs = dict(work=work, client=client, model_name="cnn", perturbed=perturbed, batch_size=BATCH, **SETTINGS)

    def stop_after_two(label, done, total):
        if done >= 2 * BATCH:
            raise Stop

    with pytest.raises(Stop):
        probe_on_dask(model, images, progress=stop_after_two, **kwargs)
    assert not (work / ".lock").exists()
    # Journalled batches are reused; one a worker finished after the stop is simply redone.
    journal = (work / ".progress.jsonl").read_text().splitlines()
    finished = sorted(name for line in journal for name in json.loads(line)["files"])
    assert len(finished) >= 2
    before = {name: (work / name).stat().st_mtime_ns for name in finished}
    seen = []
    result = probe_on_dask(model, images, progress=lambda *e: seen.append(e), **kwargs)
    assert seen[0][1] > BATCH  # counted from the batches already done
    assert {name: (work / name).stat().st_mtime_ns for name in finished} == before  # reused, not redone
    write_probe_outputs(result, tmp_path / "out")
    assert _files(tmp_path / "out") == _files(local_out)


def test_execution_flags_are_checked(cnn, folder, tmp_path, capsys):
    for extra, message in [
        (("--workers", "2"), "--workers / --scheduler only apply to --engine dask"),
        (("--engine", "dask"), "--engine dask needs --workers N"),
    ]:
        assert main(_argv(cnn, folder, tmp_path / "o", *extra)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists() and not work_folder(tmp_path / "o").exists()
