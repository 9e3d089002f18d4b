"""Recapture page: probe an uploaded ONNX model on an uploaded zip of images; the probe images inspector."""

import html
import io
import re
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from app_checks import assert_ok, metric
from PIL import Image

from ui.state import RecaptureState

SIZE, N_CLASSES, N_IMAGES = 16, 3, 12


def _captions(at) -> list[str]:
    """Captions of every image tile on the page (``figcaption``s of its HTML blocks)."""
    out = []
    for el in at.get("html"):
        out += [html.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", el.proto.body)]
    return out


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(16, N_CLASSES),
        )

    def forward(self, x):
        return self.body(x) * 5.0


@pytest.fixture(scope="module")
def upload():
    torch.manual_seed(1)
    net = Net().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript exporter (no onnxscript needed)
        torch.onnx.export(
            net,
            (torch.zeros(1, 3, SIZE, SIZE),),
            buffer,
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
        )
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(N_IMAGES, SIZE, SIZE, 3), dtype=np.uint8)
    with torch.no_grad():
        pred = net(torch.from_numpy(images.astype(np.float32) / 255).permute(0, 3, 1, 2)).argmax(1).numpy()
    labels = pred.copy()
    labels[:3] = (pred[:3] + 1) % N_CLASSES  # three images the model gets wrong
    return buffer.getvalue(), images, labels


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


def _members(images, labels, *, labels_inside=True):
    names = [f"photos/im{i}.png" for i in range(len(images))]
    members = {n: _png(img) for n, img in zip(names, images)}
    csv = pd.DataFrame({"file": [n.split("/")[1] for n in names], "label": labels}).to_csv(index=False).encode()
    if labels_inside:
        members["photos/labels.csv"] = csv
    return members, csv


def _run_probes(at, model_bytes, zip_bytes, labels=None):
    at.switch_page("pages/recapture.py").run()
    at.file_uploader(key="recap_onnx_file").upload("tiny.onnx", model_bytes)
    at.file_uploader(key="recap_zip_file").upload("photos.zip", zip_bytes, "application/zip")
    if labels is not None:
        at.file_uploader(key="recap_labels_file").upload("labels.csv", labels, "text/csv")
    at.run()
    at.button(key="recap_run_probes").click().run()
    return at


def test_upload_panel_probes_the_model_and_queues_its_images(app, upload):
    model_bytes, images, labels = upload
    members, _ = _members(images, labels)
    at = _run_probes(app, model_bytes, _zip(members))
    assert_ok(at)
    run = at.session_state[RecaptureState.probe_run.key]
    assert run.result.manifest["n_images"] == N_IMAGES
    assert int(metric(at, "Clean-correct test images")) == N_IMAGES - 3
    assert int(metric(at, "Re-tests in the queue")) == 1  # 10 % of 9, rounded, at least 1
    assert any("a probe run has no real re-captures" in i.value for i in at.info)
    captions = _captions(at)
    # Gallery + inspector: the clean image and every probe with its true-class probability.
    assert any(c.startswith("#1 · im") for c in captions), (captions[:5], [e.type for e in at.main][:40])
    probe_caps = [c for c in captions if "· p(true)" in c and not c.startswith("clean")]
    assert len(probe_caps) == 36
    queued = at.selectbox(key="recap_inspect").value
    probes = run.result.probes
    row = probes[(probes["record_id"] == queued) & (probes["probe"] == "contrast s2")].iloc[0]
    assert f"contrast s2 · p(true) {row['true_prob']:.2f}" in " ".join(probe_caps)
    # A larger budget lists more images; the ranking is by U (lowest first).
    at.slider(key="recap_budget").set_value(50).run()
    assert_ok(at)
    assert int(metric(at, "Re-tests in the queue")) == 5
    scores = run.result.probes.groupby("record_id")["true_prob"].mean()
    correct = run.result.clean.query("pred == true_label")["record_id"]
    worst = scores.loc[correct].sort_values().index[0]
    assert at.selectbox(key="recap_inspect").options[0].endswith(str(worst))


def test_labels_csv_alongside_the_zip(app, upload):
    model_bytes, images, labels = upload
    members, csv = _members(images, labels, labels_inside=False)
    at = _run_probes(app, model_bytes, _zip(members), labels=csv)
    assert_ok(at)
    assert at.session_state[RecaptureState.probe_run.key].result.manifest["n_images"] == N_IMAGES


@pytest.mark.parametrize(
    "case, message",
    [
        ("slip", "photos.zip: member '../evil.png' points outside the archive's root"),
        ("text", "photos.zip/photos/notes.txt: is not an image file"),
        ("count", "photos.zip holds 11 image(s) but photos.zip/photos/labels.csv lists 12"),
        ("classes", "tiny.onnx: outputs 3 classes"),
    ],
)
def test_bad_uploads_show_one_error_naming_the_file(app, upload, case, message):
    model_bytes, images, labels = upload
    labels = labels.copy()
    members, _ = _members(images, labels)
    if case == "slip":
        members["../evil.png"] = _png(images[0])
    elif case == "text":
        members["photos/notes.txt"] = b"hello"
    elif case == "count":
        del members["photos/im11.png"]
    else:
        labels[4] = 5
        members, _ = _members(images, labels)
    at = _run_probes(app, model_bytes, _zip(members))
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and message in errors[0], errors
    assert (
        at.session_state[RecaptureState.probe_run.key] is None
        if RecaptureState.probe_run.key in at.session_state
        else True
    )


def test_demo_pool_inspector_shows_probe_images_with_probabilities(app):
    app.switch_page("pages/recapture.py").run()
    assert_ok(app)
    captions = _captions(app)
    assert any(c.startswith("#1 · ") for c in captions)
    model = app.selectbox(key="recap_model").value
    record = app.selectbox(key="recap_inspect").value
    from core.imaging.demo import load_demo_pool

    probes = load_demo_pool().probes
    mine = probes[(probes["model"] == model) & (probes["record_id"] == record)]
    shown = [c for c in captions if "· p(true)" in c and not c.startswith("clean")]
    assert len(shown) == len(mine)
    for row in mine.head(3).itertuples():
        label = row.probe.replace("_", " ")  # captions break at spaces only
        assert any(c.startswith(f"{label} · p(true) {row.true_prob:.2f}") for c in shown)
