"""Honest image results (issue 40): the model-fit warnings on the Recapture page, no "real failures"
from the tool's own corruptions, one τ for the page and the command line, both probe outputs in
one upload, plain words."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from app_checks import assert_ok, metric
from PIL import Image

from core.cli import main
from core.imaging.demo import DEFAULT_DIR, load_demo_pool
from core.views.bounds import development_thresholds_of
from core.views.paired import model_threshold
from core.views.uploads import FilesUpload
from ui.state import PairedBoundsState, RecaptureState

MODEL = "cnn-w8"


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _table_with(at, *columns: str) -> pd.DataFrame:
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no table with columns {columns}")


def _zip(members: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buffer.getvalue()


def _png(img) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, format="PNG")
    return buffer.getvalue()


def _onnx(net, shape) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript exporter (no onnxscript needed)
        torch.onnx.export(
            net, (torch.zeros(shape),), buffer, dynamo=False, input_names=["x"], output_names=["y"],
            dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
        )  # fmt: skip
    return buffer.getvalue()


class Net(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(16, classes),
        )

    def forward(self, x):
        return self.body(x)


@pytest.fixture(scope="module")
def mismatch():
    """A 3 x 64 x 64 ten-class model and 28 x 28 grey images (issue 40's Fashion-MNIST case)."""
    torch.manual_seed(0)
    model = _onnx(Net().eval(), (1, 3, 64, 64))
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(12, 28, 28), dtype=np.uint8)
    labels = np.arange(12) % 10
    members = {f"fm/im{i}.png": _png(img) for i, img in enumerate(images)}
    members["fm/labels.csv"] = _csv(pd.DataFrame({"file": [f"im{i}.png" for i in range(12)], "label": labels}))
    return model, _zip(members)


def _probe_on_page(at, model: bytes, images_zip: bytes):
    at.switch_page("pages/recapture.py").run()
    at.file_uploader(key="recap_onnx_file").upload("fm64.onnx", model)
    at.file_uploader(key="recap_zip_file").upload("fm.zip", images_zip, "application/zip")
    at.run()
    at.button(key="recap_run_probes").click().run()
    return at


# ------------------------------------------------------------------------------------------
# the model fits the images
# ------------------------------------------------------------------------------------------
def test_recapture_page_warns_of_resampling_channels_and_near_chance(app, mismatch):
    at = _probe_on_page(app, *mismatch)
    assert_ok(at)
    run = at.session_state[RecaptureState.probe_run.key]
    assert run is not None and run.result.manifest["n_images"] == 12
    shown = [w.value for w in at.warning]
    assert any(
        "the images are 28 x 28 pixels and the model's input is 64 x 64 x 3: every image is enlarged 2.29 times" in w
        for w in shown
    ), shown
    assert any("12 images stored in grey and the model's input has 3 channels" in w for w in shown), shown
    assert any("is near chance (10.0% for 10 classes" in w and "right model" in w for w in shown), shown
    # Warned, not refused: the queue is still drawn.
    assert int(metric(at, "Clean-correct test images")) >= 0


def test_the_queue_heading_counts_one_image_in_the_singular(app, mismatch):
    at = _probe_on_page(app, *mismatch)
    assert_ok(at)
    k = int(metric(at, "Re-tests in the queue"))
    headings = [h.value for h in at.subheader if h.value.startswith("Queue:")]
    if k == 1:
        assert headings == ["Queue: re-test this 1 image first"]
    else:
        assert headings == [f"Queue: re-test these {k} images first"]
    assert not any("these 1 images" in h for h in headings)
    captions = [c.value for c in at.caption if c.value.startswith("Clean:")]
    assert captions and all("right with probability" not in c for c in captions)
    assert "(its confidence, not the chance that it is right)" in captions[0]


# ------------------------------------------------------------------------------------------
# no "real failures" from the tool's own corruptions
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def probe_outputs():
    """Clean and per-probe outputs of 300 demo images of one model, and its paired records."""
    pool = load_demo_pool(DEFAULT_DIR)
    clean = pool.clean[pool.clean["model"] == MODEL]
    clean = clean[clean["record_id"].isin(clean["record_id"].iloc[:300])].reset_index(drop=True)
    keep = (pool.probes["model"] == MODEL) & pool.probes["record_id"].isin(clean["record_id"])
    probes = pool.probes[keep].reset_index(drop=True)
    records = pool.records[(pool.records["model"] == MODEL) & pool.records["record_id"].isin(clean["record_id"])]
    return clean, probes, records.reset_index(drop=True)


def _paired_upload(app, records: pd.DataFrame):
    app.switch_page("pages/paired_bounds.py").run()
    app.session_state[PairedBoundsState.data_source.key] = "paired"
    app.session_state[PairedBoundsState.upload.key] = FilesUpload(
        kind="paired", files={"records": ("records.csv", _csv(records))}
    )
    app.run()
    return app


def _screening_upload(app, files: dict):
    app.session_state[RecaptureState.upload.key] = FilesUpload(kind="screening", files=files)
    app.switch_page("pages/recapture.py").run()
    return app


def test_synthetic_records_never_judge_the_scores_as_real_failures(app, probe_outputs):
    clean, probes, records = probe_outputs
    _paired_upload(app, records[records["source"] == "synthetic"])
    at = _screening_upload(app, {"probes": ("probes.csv", _csv(probes)), "clean": ("clean.csv", _csv(clean))})
    assert_ok(at)
    assert not [s for s in at.selectbox if s.key == RecaptureState.outcome_source.key]
    info = " ".join(i.value for i in at.info)
    assert "the tool's own corruptions" in info and "circular" in info
    assert "Failures found (expected)" not in [m.label for m in at.metric]
    assert not at.get("plotly_chart")  # no coverage figure judged on the probes themselves
    page = " ".join(str(e.value) for e in [*at.markdown, *at.caption, *at.info, *at.subheader] if e.value)
    assert "Real failures" not in page


def test_simulated_recaptures_are_named_simulated_failures(app, probe_outputs):
    clean, probes, records = probe_outputs
    _paired_upload(app, records)  # synthetic and simulated-recapture sources
    at = _screening_upload(app, {"probes": ("probes.csv", _csv(probes)), "clean": ("clean.csv", _csv(clean))})
    assert_ok(at)
    assert at.selectbox(key=RecaptureState.outcome_source.key).options == ["simulated-recapture"]
    [chart] = at.get("vega_lite_chart")
    assert "Simulated re-capture failures found within the re-test budget" in chart.proto.spec
    assert "Real failures" not in chart.proto.spec


# ------------------------------------------------------------------------------------------
# both probe outputs in one upload
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def probe_folder(tmp_path_factory):
    """A real output folder of ``python -m core probe`` (corruptions and natural transforms)."""
    torch.manual_seed(1)
    root = tmp_path_factory.mktemp("probe")
    (root / "m.onnx").write_bytes(_onnx(Net(classes=3).eval(), (1, 3, 16, 16)))
    rng = np.random.default_rng(2)
    (root / "imgs").mkdir()
    for i in range(9):
        Image.fromarray(rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8)).save(root / "imgs" / f"{i}.png")
    # Labels: what the model predicts (so that most images are clean-correct and scored).
    pd.DataFrame({"file": [f"{i}.png" for i in range(9)], "label": [0] * 9}).to_csv(root / "l.csv", index=False)
    argv = ["probe", "--model-file", str(root / "m.onnx"), "--images", str(root / "imgs"), "--labels"]
    assert main([*argv, str(root / "l.csv"), "--out", str(root / "first"), "--no-progress"]) == 0
    pred = pd.read_parquet(root / "first" / "clean.parquet")["pred"].to_numpy()
    pd.DataFrame({"file": [f"{i}.png" for i in range(9)], "label": pred}).to_csv(root / "l.csv", index=False)
    argv = [*argv, str(root / "l.csv"), "--out", str(root / "out"), "--probes", "contrast:2,pixelate:4"]
    assert main([*argv, "--natural", "hflip,rotate-10", "--no-progress"]) == 0
    return root / "out"


def _uploaded_scores(at):
    """The scores the queue can be ranked by (those the upload defines)."""
    return at.selectbox(key=RecaptureState.score.key).options


@pytest.mark.parametrize("form", ["several-files", "zip"])
def test_probe_outputs_upload_as_one_set_and_keep_tta(app, probe_folder, form):
    at = app.switch_page("pages/recapture.py").run()
    names = ("probes.parquet", "natural.parquet")
    if form == "zip":
        members = {f"out/{p.name}": p.read_bytes() for p in sorted(probe_folder.iterdir())}
        at.file_uploader(key="recap_probes_file").set_value([("out.zip", _zip(members), "application/zip")])
    else:
        files = [(n, (probe_folder / n).read_bytes(), "application/octet-stream") for n in names]
        at.file_uploader(key="recap_probes_file").set_value(files)
        clean = (probe_folder / "clean.parquet").read_bytes()
        at.file_uploader(key="recap_clean_file").upload("clean.parquet", clean, "application/octet-stream")
    at.run()
    assert_ok(at)
    upload = at.session_state[RecaptureState.upload.key]
    assert upload is not None and set(upload.files) == {"probes", "probes.2", "clean"}
    assert "TTA" in _uploaded_scores(at)  # the transform rows of natural.parquet arrived
    assert "U" in _uploaded_scores(at)


def test_probe_outputs_without_natural_have_no_tta(app, probe_folder):
    at = app.switch_page("pages/recapture.py").run()
    at.file_uploader(key="recap_probes_file").set_value(
        [("probes.parquet", (probe_folder / "probes.parquet").read_bytes(), "application/octet-stream")]
    )
    at.file_uploader(key="recap_clean_file").upload(
        "clean.parquet", (probe_folder / "clean.parquet").read_bytes(), "application/octet-stream"
    )
    at.run()
    assert_ok(at)
    assert "TTA" not in _uploaded_scores(at)


# ------------------------------------------------------------------------------------------
# one τ: the page and the command line give the same intervals for the same τ
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cell_records():
    """One model x two synthetic conditions of the demo pool, with the dev / eval split."""
    pool = load_demo_pool(DEFAULT_DIR).records
    conditions = sorted(pool.loc[pool["source"] == "synthetic", "condition"].unique())[:2]
    keep = (pool["model"] == MODEL) & pool["condition"].isin(conditions) & (pool["source"] == "synthetic")
    return pool[keep].reset_index(drop=True)


def _cli_intervals(records, tau: float, tmp_path, condition: str) -> pd.DataFrame:
    path = tmp_path / "records.csv"
    records.to_csv(path, index=False)
    out = tmp_path / f"cli-{tau!r}"
    argv = ["paired", "--records", str(path), "--tau", repr(float(tau)), "--no-policies", "--out", str(out)]
    assert main(argv) == 0
    intervals = pd.read_csv(out / "intervals.csv")
    mine = intervals[(intervals["model"] == MODEL) & (intervals["condition"] == condition)]
    return mine.reset_index(drop=True)


@pytest.mark.parametrize("mode", ["coverage", "fixed"])
def test_the_page_and_the_cli_give_the_same_intervals_for_the_same_tau(app, cell_records, tmp_path, mode):
    at = _paired_upload(app, cell_records)
    if mode == "fixed":
        at.session_state[PairedBoundsState.tau_mode.key] = "fixed"
        at.session_state[PairedBoundsState.tau_value.key] = 0.8
        at.run()
        tau = 0.8
        assert any("τ = 0.8000, fixed: accepted when max probability ≥ τ" in c.value for c in at.caption)
    else:
        tau = model_threshold(development_thresholds_of(cell_records), MODEL, 0.8).tau
        text = [c.value for c in at.caption if c.value.startswith("τ = ")]
        assert text and text[0].startswith(f"τ = {tau:.4f}, derived from a coverage: the threshold that accepts 80%")
        assert "80% is the coverage, not τ" in text[0]
    assert_ok(at)
    assert metric(at, "Acceptance threshold τ") == f"{tau:.4f}"
    condition = at.selectbox(key="paired_condition").value
    page = _table_with(at, "target", "level", "low", "high", "observed")
    cli = _cli_intervals(cell_records, tau, tmp_path, condition)
    assert page[["target", "level"]].values.tolist() == cli[["target", "level"]].values.tolist()
    cols = ["low", "high", "observed"]
    # The CLI's CSV holds the floats in full (repr): equal to the page's within float64 rounding.
    np.testing.assert_allclose(page[cols].to_numpy(float), cli[cols].to_numpy(float), rtol=0, atol=1e-12)
    manifest = json.loads((tmp_path / f"cli-{float(tau)!r}" / "manifest.json").read_text())
    assert manifest["tau"] == pytest.approx(tau, abs=0)
