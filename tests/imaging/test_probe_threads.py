"""onnxruntime threads (issue 39): every core by default, ``threads`` / ``--threads`` to set them.

- one model on the same inputs: identical outputs at one thread count, run twice with fresh
  sessions; within ``THREAD_RTOL`` / ``THREAD_ATOL`` between 1 and 2 threads (a model big
  enough that onnxruntime splits its convolutions and products among its threads);
- the number is resolved and recorded: ``model.threads``, the probe's manifest, the CLI;
- a bad number is refused at the boundary (exit code 2 in the CLI);
- Dask workers get their share of their host's cores (:func:`worker_threads`, hand values).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from probe_kit import MEAN, STD, probe_argv

from core.cli import main
from core.imaging.images import open_images
from core.imaging.probe import OnnxImageClassifier, parse_probes, run_probes
from core.onnx_session import THREAD_ATOL, THREAD_RTOL, check_threads, cpu_session, default_threads
from core.scale.cluster import worker_threads


@pytest.fixture(scope="module")
def wide_onnx(tmp_path_factory):
    """A CNN of 64 px with 32-64 channels and a 1024-wide product: work onnxruntime splits."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(1024, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    ).eval()
    path = tmp_path_factory.mktemp("threads") / "wide.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            net,
            (torch.zeros(1, 3, 64, 64),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["out"],
            dynamic_axes={"x": {0: "n"}, "out": {0: "n"}},
        )
    return path.read_bytes()


def _outputs(model_bytes: bytes, x: np.ndarray, threads: int) -> np.ndarray:
    session = cpu_session(model_bytes, where="wide.onnx", threads=threads)
    assert session.get_session_options().intra_op_num_threads == threads
    return session.run(None, {"x": x})[0]


def test_same_thread_count_twice_is_exactly_equal_and_counts_agree_within_the_tolerance(wide_onnx):
    x = np.random.default_rng(0).normal(size=(24, 3, 64, 64)).astype(np.float32)
    one, two, two_again = (_outputs(wide_onnx, x, t) for t in (1, 2, 2))
    np.testing.assert_array_equal(two, two_again)
    np.testing.assert_array_equal(one, _outputs(wide_onnx, x, 1))
    np.testing.assert_allclose(two, one, rtol=THREAD_RTOL, atol=THREAD_ATOL)
    assert np.abs(one).max() > 0.1  # outputs of a real size, so the tolerance is not vacuous


def test_probe_tables_at_1_and_2_threads(folder):
    from probe_kit import export, make_net

    path = export(make_net(), folder / "threads_cnn.onnx", shape=(1, 3, 16, 16))
    images = open_images(folder / "images", folder / "images_labels.csv")
    settings = dict(probes=parse_probes("gaussian_noise:3,pixelate:2"), natural=("rotate+5",), batch_size=4)
    runs = {
        t: run_probes(OnnxImageClassifier(path.read_bytes(), mean=MEAN, std=STD, threads=t), images, **settings)
        for t in (1, 2, 2)
    }
    again = run_probes(OnnxImageClassifier(path.read_bytes(), mean=MEAN, std=STD, threads=2), images, **settings)
    for frame in ("clean", "probes", "natural", "records"):
        a, b, c = getattr(runs[1], frame), getattr(runs[2], frame), getattr(again, frame)
        assert a.columns.tolist() == b.columns.tolist()
        for column in a.columns:
            if a[column].dtype.kind == "f":
                np.testing.assert_allclose(b[column], a[column], rtol=THREAD_RTOL, atol=THREAD_ATOL)
            np.testing.assert_array_equal(c[column].to_numpy(), b[column].to_numpy())  # same count: exact
    assert (runs[1].manifest["threads"], runs[2].manifest["threads"]) == (1, 2)


def test_default_is_every_core_of_the_process(folder):
    import os

    from probe_kit import export, make_net

    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_threads() == check_threads(None) == expected
    path = export(make_net(), folder / "default_cnn.onnx", shape=(1, 3, 16, 16))
    assert OnnxImageClassifier(path.read_bytes()).threads == expected


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"], ids=["zero", "negative", "float", "bool", "text"])
def test_a_bad_thread_count_is_refused(bad):
    with pytest.raises(ValueError, match=r"`threads` must be a positive int or None .*got"):
        check_threads(bad)


def test_cli_records_the_threads_and_refuses_a_bad_number(cnn, folder, tmp_path, capsys):
    def probe(out, *extra):
        argv = probe_argv(cnn[1], folder / "images", folder / "images_labels.csv", tmp_path / out)
        return main([*argv, "--probes", "contrast:2", "--natural", "hflip", "--no-progress", *extra])

    assert probe("one", "--threads", "1") == 0
    assert json.loads((tmp_path / "one" / "manifest.json").read_text())["threads"] == 1
    assert probe("default") == 0
    assert json.loads((tmp_path / "default" / "manifest.json").read_text())["threads"] == default_threads()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:  # argparse's own exit
        probe("bad", "--threads", "0")
    assert exit_.value.code == 2
    assert "--threads" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


class _FakeClient:
    """What :func:`worker_threads` asks of a ``distributed.Client``."""

    def __init__(self, workers: dict[str, tuple[str, int, int]]):
        self.workers = workers  # address -> (host, Dask threads, cores the worker process sees)

    def scheduler_info(self):
        return {"workers": {a: {"host": h, "nthreads": n} for a, (h, n, _) in self.workers.items()}}

    def run(self, function):
        return {a: cores for a, (_, _, cores) in self.workers.items()}


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        ({"a": ("h1", 1, 16), "b": ("h1", 1, 16)}, 8),  # two single-threaded workers share 16 cores
        ({"a": ("h1", 2, 16), "b": ("h1", 2, 16)}, 4),  # two tasks at once in each
        ({"a": ("h1", 1, 2), "b": ("h1", 1, 2), "c": ("h1", 1, 2)}, 1),  # more workers than cores
        ({"a": ("h1", 1, 16), "b": ("h2", 1, 4), "c": ("h2", 1, 4)}, 2),  # the smallest share
    ],
    ids=["two-on-16", "threaded-workers", "oversubscribed", "two-hosts"],
)
def test_dask_workers_get_their_share_of_their_hosts_cores(workers, expected):
    assert worker_threads(_FakeClient(workers)) == expected


def test_a_cluster_without_workers_is_refused():
    with pytest.raises(ValueError, match="no workers"):
        worker_threads(_FakeClient({}))
