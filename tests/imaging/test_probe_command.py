"""``python -m core probe`` on a torch CNN exported to ONNX: probe -> paired -> recapture queue.

The reference outputs are torch's own forward passes on images decoded independently with
Pillow; ONNX Runtime and torch run different kernels, so they are compared within 1e-5.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from probe_kit import (
    MEAN,
    N_CLASSES,
    N_IMAGES,
    SIZE,
    STD,
    TOL,
    export,
    make_net,
    probe_argv,
    torch_probs,
    write_pngs,
)

from core.cli import main
from core.imaging import corruptions
from core.imaging.images import open_images
from core.imaging.probe import (
    DEFAULT_PROBES,
    OnnxImageClassifier,
    parse_probes,
    probe_image,
    run_probes,
)


@pytest.fixture(scope="module")
def probed(folder, cnn, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "probe"
    code = main(
        probe_argv(
            cnn[1],
            folder / "images",
            folder / "images_labels.csv",
            out,
            "--mean",
            ",".join(map(str, MEAN)),
            "--std",
            ",".join(map(str, STD)),
            "--batch-size",
            "5",
            "--perturbed",
            str(folder / "screen"),
            "--no-progress",
        )
    )
    assert code == 0
    return out


def test_clean_outputs_equal_torch_within_tolerance(probed, cnn, folder, data, cross_machine_note):
    net, _ = cnn
    clean = pd.read_parquet(probed / "clean.parquet")
    names = pd.read_csv(folder / "images_labels.csv")["file"]
    # Decode the PNGs independently of core.imaging.images.
    decoded = np.stack([np.asarray(Image.open(folder / "images" / n).convert("RGB")) for n in names])
    np.testing.assert_array_equal(decoded, data[0])
    expected = torch_probs(net, decoded)
    got = clean[[f"prob_{c}" for c in range(N_CLASSES)]].to_numpy()
    gap = float(np.abs(got - expected).max())
    cross_machine_note(f"probe clean outputs vs torch: max |diff| {gap:.2e} (tolerance {TOL})")
    assert gap <= TOL
    assert clean["record_id"].tolist() == names.tolist()
    np.testing.assert_array_equal(clean["pred"], expected.argmax(axis=1))
    np.testing.assert_allclose(clean["max_prob"], expected.max(axis=1), atol=TOL)
    np.testing.assert_allclose(clean["true_prob"], expected[np.arange(N_IMAGES), data[1]], atol=TOL)
    manifest = json.loads((probed / "manifest.json").read_text())
    assert manifest["output"] == "logits (soft-maxed)"
    assert manifest["input"] == {
        "name": "x",
        "layout": "NCHW",
        "height": SIZE,
        "width": SIZE,
        "channels": 3,
        "batch": None,
    }


def test_probe_rows_are_torch_on_independently_corrupted_images(probed, cnn, data):
    net, _ = cnn
    images, labels = data
    probes = pd.read_parquet(probed / "probes.parquet")
    natural = pd.read_parquet(probed / "natural.parquet")
    assert len(probes) == N_IMAGES * 18 and set(probes["kind"]) == {"corruption"}
    assert len(natural) == N_IMAGES * 18 and set(natural["kind"]) == {"transform"}
    assert sorted(probes["probe"].unique()) == sorted(f"{c} s{s}" for c in corruptions.CORRUPTIONS for s in (2, 4))
    x = images.astype(np.float32) / 255.0
    # Deterministic probes recomputed here from the corruption functions, quantised to 8 bits.
    for probe, variant in [
        ("contrast s2", corruptions.contrast(x.astype(np.float64), 2, np.random.default_rng(0))),
        ("pixelate s4", corruptions.pixelate(x.astype(np.float64), 4, np.random.default_rng(0))),
        ("hflip", x[:, :, ::-1]),
    ]:
        table = natural if probe == "hflip" else probes
        rows = table[table["probe"] == probe]
        u8 = np.rint(np.clip(variant, 0, 1) * 255).astype(np.uint8)
        expected = torch_probs(net, u8)
        np.testing.assert_allclose(rows["true_prob"], expected[np.arange(N_IMAGES), labels], atol=TOL)
        np.testing.assert_array_equal(rows["pred"], expected.argmax(axis=1))
    # A random probe: probe_image re-draws exactly what the model saw for image 3.
    row = probes[(probes["probe"] == "gaussian_noise s4") & (probes["record_id"] == "img_03.png")].iloc[0]
    shown = probe_image(images[3], "gaussian_noise s4", position=3, seed=0)
    assert not np.array_equal(shown, images[3])
    assert abs(torch_probs(net, shown[None])[0, labels[3]] - row["true_prob"]) <= TOL


def test_paired_command_builds_the_queue_ranked_by_u(probed, tmp_path, data):
    out = tmp_path / "queue"
    code = main(
        [
            "paired",
            "--records",
            str(probed / "records.parquet"),
            "--probes",
            str(probed / "probes.parquet"),
            str(probed / "natural.parquet"),
            "--clean-outputs",
            str(probed / "clean.parquet"),
            "--tau",
            "0.5",
            "--outcome-source",
            "recapture",
            "--budget",
            "0.5",
            "--out",
            str(out),
            "--no-policies",
        ]
    )
    assert code == 0
    queue = pd.read_csv(out / "recapture_queue.csv")
    scores = pd.read_csv(out / "screening_scores.csv")
    clean = pd.read_parquet(probed / "clean.parquet")
    probes = pd.read_parquet(probed / "probes.parquet")
    correct = clean.loc[clean["pred"] == clean["true_label"], "record_id"]
    assert sorted(scores["record_id"]) == sorted(correct)
    # U by hand: mean true-class probability over the 18 corruption probes.
    u = probes[probes["record_id"].isin(correct)].groupby("record_id")["true_prob"].mean()
    np.testing.assert_allclose(scores.set_index("record_id")["U"].loc[u.index], u, rtol=0, atol=1e-7)  # float32 sums
    assert scores["TTA"].notna().all()
    k = max(1, int(np.floor(0.5 * len(correct) + 0.5)))
    assert queue["selection_prob"].sum() == pytest.approx(k)
    worst = u.sort_values(kind="stable").index[:k]
    assert set(queue.loc[queue["selection_prob"] == 1, "record_id"]) <= set(worst)
    records = pd.read_parquet(probed / "records.parquet")
    assert set(records["source"]) == {"synthetic", "recapture"}
    assert set(records.loc[records["source"] == "recapture", "condition"]) == {"screen"}
    failed = records[(records["source"] == "recapture") & records["record_id"].isin(correct)]
    assert queue["total_failures"].iloc[0] == int((failed["pert_pred"] != failed["true_label"]).sum())


def test_batch_size_and_source_do_not_change_the_outputs(folder, cnn, data, tmp_path):
    model = OnnxImageClassifier(cnn[1].read_bytes(), where="cnn.onnx", mean=MEAN, std=STD)
    images = open_images(folder / "images", folder / "images_labels.csv")
    probes = parse_probes("gaussian_noise:3,motion_blur:2,jpeg_compression:4")
    a = run_probes(model, images, probes=probes, natural=("rotate+5",), batch_size=3)
    b = run_probes(model, images, probes=probes, natural=("rotate+5",), batch_size=64)
    np.savez(tmp_path / "set.npz", images=data[0], labels=data[1])
    c = run_probes(model, open_images(tmp_path / "set.npz"), probes=probes, natural=("rotate+5",), batch_size=64)
    for frame in ("clean", "probes", "natural"):
        x, y, z = (getattr(r, frame) for r in (a, b, c))
        np.testing.assert_array_equal(x["pred"], y["pred"])
        np.testing.assert_allclose(x["true_prob"], y["true_prob"], atol=1e-6)  # batch shapes may pick other kernels
        np.testing.assert_array_equal(y["true_prob"], z["true_prob"])  # same batches, same inputs: exact
    assert c.clean["record_id"].tolist() == list(range(N_IMAGES))


def test_nhwc_model_with_probability_output(folder, data, tmp_path, cross_machine_note):
    net = make_net(nhwc=True, softmax=True)
    path = export(net, tmp_path / "nhwc.onnx", shape=(1, SIZE, SIZE, 3))
    model = OnnxImageClassifier(path.read_bytes(), where="nhwc.onnx", mean=MEAN, std=STD)
    assert (model.input.layout, model.input.channels) == ("NHWC", 3)
    result = run_probes(
        model, open_images(folder / "images", folder / "images_labels.csv"), probes=DEFAULT_PROBES[:2], natural=()
    )
    assert result.manifest["output"] == "probabilities"
    expected = torch_probs(net, data[0], nhwc=True)
    gap = float(np.abs(result.clean[[f"prob_{c}" for c in range(N_CLASSES)]].to_numpy() - expected).max())
    cross_machine_note(f"probe NHWC probabilities vs torch: max |diff| {gap:.2e}")
    assert gap <= TOL
    assert result.natural.empty


def test_grey_model_reads_colour_pngs_as_luma(folder, data, tmp_path):
    net = make_net(channels=1)
    path = export(net, tmp_path / "grey.onnx", shape=(1, 1, SIZE, SIZE))
    model = OnnxImageClassifier(path.read_bytes(), where="grey.onnx", mean=(0.5,), std=(0.25,))
    images = open_images(folder / "images", folder / "images_labels.csv")
    grey = images.read(np.arange(3), size=(SIZE, SIZE), channels=1)
    luma = np.stack([np.asarray(Image.fromarray(im).convert("L")) for im in data[0][:3]])
    np.testing.assert_array_equal(grey[..., 0], luma)
    assert run_probes(model, images, probes=DEFAULT_PROBES[:1], natural=()).clean.shape[0] == N_IMAGES


# ------------------------------------------------------------------------------------------
# bad input: one clear error naming the file
# ------------------------------------------------------------------------------------------
def run_cli(capsys, model, images, labels, out, *, flag="--model-file"):
    code = main(probe_argv(model, images, labels, out, "--no-progress", flag=flag))
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_non_image_file_in_the_folder_is_named(tmp_path, data, cnn, capsys):
    write_pngs(tmp_path / "imgs", data[0][:4], data[1][:4])
    (tmp_path / "imgs" / "notes.txt").write_text("not an image")
    code, err = run_cli(capsys, cnn[1], tmp_path / "imgs", tmp_path / "imgs_labels.csv", tmp_path / "out")
    assert code == 2 and len(err) == 1 and "notes.txt" in err[0] and "is not an image file" in err[0]
    assert not (tmp_path / "out").exists()


def test_image_count_that_differs_from_the_labels_is_named(tmp_path, data, cnn, capsys):
    write_pngs(tmp_path / "imgs", data[0][:5], data[1][:5])
    pd.DataFrame({"file": [f"img_{i:02d}.png" for i in range(4)], "label": data[1][:4]}).to_csv(
        tmp_path / "short.csv", index=False
    )
    code, err = run_cli(capsys, cnn[1], tmp_path / "imgs", tmp_path / "short.csv", tmp_path / "out")
    assert code == 2 and len(err) == 1
    assert "holds 5 image(s) but" in err[0] and "short.csv lists 4" in err[0] and "img_04.png" in err[0]
    np.savez(tmp_path / "bad.npz", images=data[0][:5], labels=data[1][:4])
    with pytest.raises(ValueError, match=r"bad\.npz: `images` holds 5 image\(s\) but `labels` has shape \(4,\)"):
        open_images(tmp_path / "bad.npz")


def test_model_whose_input_size_cannot_be_read_is_named(tmp_path, cnn, folder, capsys):
    class AnySize(torch.nn.Module):  # global mean pooling: exports with symbolic height and width
        def __init__(self):
            super().__init__()
            self.conv, self.fc = torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(4, N_CLASSES)

        def forward(self, x):
            return self.fc(self.conv(x).mean(dim=(2, 3)))

    path = export(
        AnySize(),
        tmp_path / "dynamic.onnx",
        shape=(1, 3, SIZE, SIZE),
        dynamic={"x": {0: "n", 2: "h", 3: "w"}, "out": {0: "n"}},
    )
    code, err = run_cli(capsys, path, folder / "images", folder / "images_labels.csv", tmp_path / "out")
    assert code == 2 and len(err) == 1
    assert "dynamic.onnx" in err[0] and "cannot read the image size" in err[0]
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=r"junk\.onnx: is not a readable ONNX model"):
        OnnxImageClassifier((tmp_path / "junk.onnx").read_bytes(), where="junk.onnx")


def test_model_with_the_wrong_number_of_classes_is_named(tmp_path, data, cnn, capsys):
    labels = data[1][:4].copy()
    labels[2] = 7
    write_pngs(tmp_path / "imgs", data[0][:4], labels)
    code, err = run_cli(capsys, cnn[1], tmp_path / "imgs", tmp_path / "imgs_labels.csv", tmp_path / "out")
    assert code == 2 and len(err) == 1
    assert "cnn.onnx: outputs 4 classes" in err[0] and "img_02.png has label 7" in err[0]
    assert not (tmp_path / "out").exists()


def test_progress_counts_every_batch_of_every_variant(folder, cnn, capsys, tmp_path):
    model = OnnxImageClassifier(cnn[1].read_bytes(), where="cnn.onnx")
    images = open_images(folder / "images", folder / "images_labels.csv")
    screen = open_images(folder / "screen", folder / "images_labels.csv")
    events = []
    run_probes(
        model,
        images,
        probes=DEFAULT_PROBES[:3],
        natural=("hflip", "gamma_0.8"),
        perturbed={"screen": screen},
        batch_size=4,
        progress=lambda *e: events.append(e),
    )
    batches = -(-N_IMAGES // 4)
    total = batches * (1 + 3 + 2 + 1)
    assert [e[1] for e in events] == list(range(1, total + 1)) and {e[2] for e in events} == {total}
    # One batch at a time: its clean images, its probes and transforms, then its re-captures.
    per_batch = ["clean", *(f"{c} s{s}" for c, s in DEFAULT_PROBES[:3]), "hflip", "gamma_0.8", "screen"]
    assert [e[0] for e in events] == per_batch * batches
    # The command line shows it as a bar on stderr.
    code = main(
        probe_argv(
            cnn[1],
            folder / "images",
            folder / "images_labels.csv",
            tmp_path / "o",
            "--probes",
            "contrast:1",
            "--natural",
            "none",
        )
    )
    assert code == 0 and "100%" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# --model-file, and --model PATH kept for one release
# ------------------------------------------------------------------------------------------
def _probe_argv(flag, cnn, folder, out):
    return probe_argv(
        cnn[1],
        folder / "images",
        folder / "images_labels.csv",
        out,
        "--probes",
        "contrast:2,gaussian_noise:1",
        "--natural",
        "hflip",
        "--no-progress",
        flag=flag,
    )


def test_model_file_names_the_onnx_file_and_warns_nothing_of_the_option(cnn, folder, tmp_path, capsys):
    assert main(_probe_argv("--model-file", cnn, folder, tmp_path / "new")) == 0
    # The untrained test net is near chance: that warning is expected, an option warning is not.
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warned and all("near chance" in line for line in warned), warned
    assert (tmp_path / "new" / "records.parquet").is_file()


def test_model_path_still_works_with_one_deprecation_line(cnn, folder, tmp_path, capsys):
    assert main(_probe_argv("--model-file", cnn, folder, tmp_path / "new")) == 0
    capsys.readouterr()
    assert main(_probe_argv("--model", cnn, folder, tmp_path / "old")) == 0
    warned = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("warning:") and "near chance" not in line
    ]
    assert warned == [
        "warning: --model is deprecated and will be removed in the next release; use --model-file instead."
    ]
    for name in ("clean.parquet", "probes.parquet", "natural.parquet", "records.parquet", "manifest.json"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()


def test_model_path_raises_a_deprecation_warning_naming_model_file(cnn, folder, tmp_path):
    from core.cli import build_parser

    with pytest.warns(DeprecationWarning, match=r"use --model-file instead"):
        args = build_parser().parse_args(_probe_argv("--model", cnn, folder, tmp_path / "old"))
    assert args.func(args) == 0


def test_model_and_model_file_together_or_neither_are_refused(cnn, folder, tmp_path, capsys):
    argv = _probe_argv("--model-file", cnn, folder, tmp_path / "o")
    with pytest.raises(SystemExit) as both:
        main([*argv, "--model", str(cnn[1])])
    assert both.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit) as neither:
        main(argv[:1] + argv[3:])
    assert neither.value.code == 2 and "--model-file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_bad_model_file_is_named_with_the_flag_given(tmp_path, folder, capsys):
    (tmp_path / "m.pkl").write_bytes(b"x")
    for flag in ("--model-file", "--model"):
        code, err = run_cli(
            capsys, tmp_path / "m.pkl", folder / "images", folder / "images_labels.csv", tmp_path / "out", flag=flag
        )
        errors = [line for line in err if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and f"{flag} " in errors[0] and "expected an .onnx file" in errors[0]


# ------------------------------------------------------------------------------------------
# inputs prepared ahead of the model
# ------------------------------------------------------------------------------------------
def test_inputs_are_prepared_at_most_a_few_batches_ahead():
    """Memory stays bounded by the batch size: the preparing thread runs at most depth + 1 ahead."""
    import threading
    import time

    from core.imaging.probe import _prepared_ahead

    produced = []

    def items():
        for i in range(30):
            produced.append(i)
            yield i

    ahead = []
    for i in _prepared_ahead(items(), depth=2):
        time.sleep(0.005)  # a slow model: the preparing thread would run away if it could
        ahead.append(len(produced) - 1 - i)
    assert max(ahead) <= 3 and max(ahead) >= 1
    assert not any(t.name == "probe-inputs" for t in threading.enumerate())


def test_an_error_while_preparing_is_raised_and_leaving_early_stops_the_thread():
    import threading

    from core.imaging.probe import _prepared_ahead

    def failing():
        yield 1
        raise ValueError("photo_07.png: could not be decoded as an image")

    got = []
    with pytest.raises(ValueError, match=r"photo_07\.png"):
        for item in _prepared_ahead(failing()):
            got.append(item)
    assert got == [1]
    endless = _prepared_ahead(iter(range(10**9)))
    assert next(endless) == 0
    endless.close()
    assert not any(t.name == "probe-inputs" for t in threading.enumerate())
