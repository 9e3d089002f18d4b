"""Does the model fit the images? ``probe`` warns before probing (resampling, channel conversion) and
after the clean pass (accuracy near chance); labels may be class names; one labels rule for a
folder and a zip."""

import json
import math
import warnings
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from probe_kit import SIZE, export, make_net, probe_argv, write_pngs, zip_bytes

from core.cli import main
from core.exceptions import ModelFitWarning
from core.imaging.fit import MAX_RESAMPLE_FACTOR, chance_check, image_fit
from core.imaging.images import ImageShapes, open_images, open_zip_images
from core.imaging.probe import OnnxImageClassifier, probe_plan, run_probes


def _grey_folder(root, n=6, side=28, *, labels=None):
    """``n`` grey ``side`` x ``side`` PNGs (mode L) in ``root/images`` and ``root/images_labels.csv``."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, side, side), dtype=np.uint8)
    labels = np.arange(n) % 4 if labels is None else labels
    write_pngs(root / "images", images, labels)
    return root / "images", root / "images_labels.csv"


@pytest.fixture(scope="module")
def rgb64(tmp_path_factory):
    """A 3 x 64 x 64 model (the Fashion-MNIST mismatch of issue 40: 28 x 28 grey images)."""
    return export(make_net(), tmp_path_factory.mktemp("m") / "rgb64.onnx", shape=(1, 3, 64, 64))


# ------------------------------------------------------------------------------------------
# before probing: resampling and channels
# ------------------------------------------------------------------------------------------
def test_cli_warns_of_the_upscaling_and_the_grey_to_rgb_conversion_and_exits_0(rgb64, tmp_path, capsys):
    images, labels = _grey_folder(tmp_path)
    out = tmp_path / "out"
    code = main(probe_argv(rgb64, images, labels, out, "--probes", "contrast:2", "--natural", "none", "--no-progress"))
    err = capsys.readouterr().err.splitlines()
    assert code == 0 and (out / "manifest.json").is_file()
    warned = [line for line in err if line.startswith("warning:")]
    enlarged = [line for line in warned if "enlarged" in line]
    assert len(enlarged) == 1
    assert "the images are 28 x 28 pixels and the model's input is 64 x 64 x 3" in enlarged[0]
    assert "enlarged 2.29 times, more than 2" in enlarged[0]
    grey = [line for line in warned if "stored in grey" in line]
    assert len(grey) == 1 and "6 images stored in grey and the model's input has 3 channels" in grey[0]
    assert "Is this the right model for these images?" in grey[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["fit"]["images"] == "28 x 28" and manifest["fit"]["model_input"] == "64 x 64 x 3"
    assert manifest["fit"]["channels_converted"] == "grey -> RGB (6 images)"
    assert manifest["fit"]["resample_factor"] == pytest.approx(64 / 28)
    assert enlarged[0].removeprefix("warning: ") in manifest["warnings"]


def test_the_fit_warning_comes_before_any_batch_runs(rgb64, tmp_path):
    """probe_plan (checked before the first model call of either engine) warns."""
    images, labels = _grey_folder(tmp_path)
    model = OnnxImageClassifier(rgb64.read_bytes(), where="rgb64.onnx")
    calls = []
    model.run = lambda x: calls.append(x) or np.zeros((len(x), 4))  # noqa: ARG005 - would record a batch
    with pytest.warns(ModelFitWarning, match="enlarged 2.29 times"):
        probe_plan(model, open_images(images, labels), probes=(), natural=())
    assert calls == []


@pytest.mark.parametrize(
    "shapes, model, factor, words",
    [
        ([(28, 28, 3)], (56, 56, 3), 2.0, []),  # exactly the stated factor: no warning
        ([(32, 32, 3)], (28, 28, 3), 32 / 28, []),
        ([(100, 90, 3)], (28, 28, 3), 100 / 28, ["shrunk 3.57 times"]),
        ([(28, 28, 3), (10, 40, 3)], (28, 28, 3), 2.8, ["some images are enlarged up to 2.80 times"]),
        ([(28, 28, 3), (28, 28, 3)], (28, 28, 1), 1.0, ["2 images stored in colour", "reduced to grey"]),
        ([(28, 28, 1), (28, 28, 3)], (28, 28, 3), 1.0, ["1 image stored in grey"]),
    ],
    ids=["factor-2", "small-shrink", "large-shrink", "mixed-sizes", "rgb-to-grey", "one-grey"],
)
def test_image_fit_against_hand_values(shapes, model, factor, words):
    images = SimpleNamespace(shapes=ImageShapes.of(shapes), where="set")
    fit = image_fit(images, SimpleNamespace(height=model[0], width=model[1], channels=model[2]))
    assert fit.factor == pytest.approx(factor)
    text = " ".join(fit.messages)
    for word in words:
        assert word in text
    assert bool(fit.messages) == bool(words)
    assert MAX_RESAMPLE_FACTOR == 2.0  # the factor docs/own_model.md states


def test_a_fitting_model_probes_without_a_fit_warning(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(4, SIZE, SIZE, 3), dtype=np.uint8)
    write_pngs(tmp_path / "images", images, [0, 1, 2, 3])
    model = export(make_net(), tmp_path / "m.onnx", shape=(1, 3, SIZE, SIZE))
    classifier = OnnxImageClassifier(model.read_bytes(), where="m.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probe_plan(classifier, open_images(tmp_path / "images", tmp_path / "images_labels.csv"))
    assert not [w for w in caught if issubclass(w.category, ModelFitWarning)]


# ------------------------------------------------------------------------------------------
# after the clean pass: accuracy near chance
# ------------------------------------------------------------------------------------------
def _tail(correct: int, n: int, classes: int) -> Fraction:
    """P(Bin(n, 1/classes) >= correct), exactly, by the naive sum."""
    p = Fraction(1, classes)
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(correct, n + 1))


@pytest.mark.parametrize(
    "correct, n, classes, near",
    [
        (107, 1000, 10, True),  # issue 40: 10.7 % on Fashion-MNIST's ten classes
        (150, 1000, 10, True),  # significant, but within the 0.10 margin
        (210, 1000, 10, False),
        (9, 12, 3, False),  # p = 0.0039 < 0.01, 0.75 > 0.433
        (5, 5, 2, True),  # all right, yet guessing does it with probability 1/32 > 0.01
        (7, 7, 2, False),  # 1/128 < 0.01
    ],
    ids=["fmnist", "margin", "fine", "small-fine", "few-images", "seven-of-seven"],
)
def test_chance_check_against_the_exact_binomial_tail(correct, n, classes, near):
    check = chance_check(correct, n, classes)
    assert check.p_value == pytest.approx(float(_tail(correct, n, classes)), rel=1e-9)
    assert check.near_chance is near
    assert (check.message is not None) is near
    if near:
        assert f"{classes} classes" in check.message and "right model" in check.message


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), classes=st.integers(2, 20), data=st.data())
def test_more_correct_images_are_never_nearer_chance(n, classes, data):
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    assert chance_check(a, n, classes).near_chance >= chance_check(b, n, classes).near_chance


@pytest.mark.parametrize(
    "args, match",
    [((5, 4, 2), "n_correct ≤ n_images"), ((1, 2, 1), "n_classes ≥ 2"), ((1.5, 2, 2), "`n_correct` must be")],
    ids=["over", "one-class", "fraction"],
)
def test_chance_check_refuses_bad_counts(args, match):
    with pytest.raises(ValueError, match=match):
        chance_check(*args)


def test_probe_warns_of_near_chance_accuracy_after_the_clean_pass(rgb64, tmp_path):
    images, labels = _grey_folder(tmp_path, n=8)
    model = OnnxImageClassifier(rgb64.read_bytes(), where="rgb64.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_probes(model, open_images(images, labels), probes=(("contrast", 2),), natural=())
    texts = [str(w.message) for w in caught if issubclass(w.category, ModelFitWarning)]
    accuracy = result.manifest["clean_accuracy"]
    near = chance_check(round(accuracy * 8), 8, 4)
    assert near.near_chance  # 8 images of 4 classes cannot show better than guessing at 1 %
    assert any("is near chance (25.0% for 4 classes" in t for t in texts)
    assert near.message in result.manifest["warnings"]


# ------------------------------------------------------------------------------------------
# labels: class names, one rule for a folder and a zip
# ------------------------------------------------------------------------------------------
NAMES = ["t-shirt", "trouser", "pullover", "boot"]


def _with_classes(path, names):
    import onnx

    model = onnx.load(str(path))
    entry = model.metadata_props.add()
    entry.key, entry.value = "classes", json.dumps(names)
    out = path.with_name(path.stem + "_named.onnx")
    onnx.save(model, str(out))
    return out


def _named_labels(tmp_path, names):
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, size=(4, SIZE, SIZE, 3), dtype=np.uint8)
    write_pngs(tmp_path / "images", images, [0, 0, 0, 0])
    pd.DataFrame({"file": [f"img_{i:02d}.png" for i in range(4)], "label": names}).to_csv(
        tmp_path / "names.csv", index=False
    )
    return tmp_path / "images", tmp_path / "names.csv"


def test_class_names_in_labels_map_through_the_model_metadata(tmp_path):
    model = _with_classes(export(make_net(), tmp_path / "m.onnx", shape=(1, 3, SIZE, SIZE)), NAMES)
    classifier = OnnxImageClassifier(model.read_bytes(), where="m.onnx")
    assert classifier.classes == tuple(NAMES)
    images, labels = _named_labels(tmp_path, ["boot", "t-shirt", "boot", "pullover"])
    opened = open_images(images, labels, classes=classifier.classes)
    assert opened.labels.tolist() == [3, 0, 3, 2]


def test_class_names_through_a_classes_file_in_the_cli(tmp_path, capsys):
    model = export(make_net(), tmp_path / "m.onnx", shape=(1, 3, SIZE, SIZE))
    images, labels = _named_labels(tmp_path, ["boot", "trouser", "boot", "pullover"])
    (tmp_path / "classes.txt").write_text("\n".join(NAMES) + "\n")
    argv = probe_argv(model, images, labels, tmp_path / "out", "--probes", "contrast:2", "--natural", "none")
    assert main([*argv, "--classes", str(tmp_path / "classes.txt"), "--no-progress"]) == 0
    clean = pd.read_parquet(tmp_path / "out" / "clean.parquet")
    assert clean["true_label"].tolist() == [3, 1, 3, 2]
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == NAMES


@pytest.mark.parametrize(
    "classes, message",
    [
        (None, "row 1, column 'label': 'boot' is a class name, but the model's class list is unknown"),
        (NAMES[:3], "row 1, column 'label': 'boot' is not one of the model's 3 classes"),
    ],
    ids=["no-class-list", "unknown-name"],
)
def test_a_class_name_without_a_matching_class_list_is_one_clear_error(tmp_path, classes, message):
    images, labels = _named_labels(tmp_path, ["boot", "trouser", "boot", "pullover"])
    with pytest.raises(ValueError, match=message):
        open_images(images, labels, classes=classes)


def test_a_class_list_of_the_wrong_length_is_refused(tmp_path):
    model = _with_classes(export(make_net(), tmp_path / "m.onnx", shape=(1, 3, SIZE, SIZE)), NAMES[:3])
    with pytest.raises(ValueError, match="names 3 classes, but m.onnx outputs 4"):
        OnnxImageClassifier(model.read_bytes(), where="m.onnx")


def test_a_labels_csv_inside_a_folder_is_found_as_inside_a_zip(tmp_path):
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, size=(3, SIZE, SIZE, 3), dtype=np.uint8)
    root = tmp_path / "set"
    write_pngs(root / "photos", images, [0, 1, 2], csv=False)
    csv = pd.DataFrame({"file": [f"img_{i:02d}.png" for i in range(3)], "label": [0, 1, 2]}).to_csv(index=False)
    (root / "photos" / "labels.csv").write_text(csv)
    folder = open_images(root)
    members = {f"photos/{p.name}": p.read_bytes() for p in sorted((root / "photos").iterdir())}
    archive = open_zip_images(zip_bytes(members), where="set.zip")
    assert folder.record_ids == archive.record_ids == ("img_00.png", "img_01.png", "img_02.png")
    assert folder.labels.tolist() == archive.labels.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(
        folder.read(range(3), size=(SIZE, SIZE), channels=3), archive.read(range(3), size=(SIZE, SIZE), channels=3)
    )


def test_a_folder_with_two_csvs_and_no_labels_is_one_clear_error(tmp_path):
    write_pngs(tmp_path / "imgs", np.zeros((2, 4, 4, 3), np.uint8), [0, 1], csv=False)
    for name in ("a.csv", "b.csv"):
        (tmp_path / "imgs" / name).write_text("file,label\n")
    with pytest.raises(ValueError, match=r"holds 2 \.csv file\(s\) \['a\.csv', 'b\.csv'\]; put exactly one labels"):
        open_images(tmp_path / "imgs")


def test_an_image_outside_the_labels_folder_is_refused(tmp_path):
    write_pngs(tmp_path / "set" / "photos", np.zeros((1, 4, 4, 3), np.uint8), [0], csv=False)
    (tmp_path / "set" / "photos" / "labels.csv").write_text("file,label\nimg_00.png,0\n")
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "set" / "stray.png")
    with pytest.raises(ValueError, match="stray.png: lies outside 'photos', the folder of the labels"):
        open_images(tmp_path / "set")


# ------------------------------------------------------------------------------------------
# the tool's own corruptions never judge the scores
# ------------------------------------------------------------------------------------------
def test_paired_refuses_the_probes_own_corruptions_as_outcomes(folder, cnn, tmp_path, capsys):
    out = tmp_path / "probe"
    argv = probe_argv(cnn[1], folder / "images", folder / "images_labels.csv", out, "--probes", "contrast:2")
    assert main([*argv, "--natural", "hflip", "--no-progress"]) == 0
    capsys.readouterr()
    queue = tmp_path / "queue"
    code = main(
        ["paired", "--records", str(out / "records.parquet"), "--probes", str(out / "probes.parquet")]
        + [str(out / "natural.parquet"), "--clean-outputs", str(out / "clean.parquet"), "--tau", "0.5"]
        + ["--outcome-source", "synthetic", "--no-policies", "--out", str(queue)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not queue.exists()
    assert len(err) == 1 and "--outcome-source 'synthetic': the source 'synthetic' holds the tool's own" in err[0]
    assert "circular" in err[0]


def test_with_a_progress_bar_the_warnings_are_whole_lines_before_and_after_it(rgb64, tmp_path, capsys):
    images, labels = _grey_folder(tmp_path, n=8)
    argv = probe_argv(rgb64, images, labels, tmp_path / "out", "--probes", "contrast:2", "--natural", "none")
    assert main(argv) == 0
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    warned = [i for i, line in enumerate(lines) if "warning:" in line]
    bar = [i for i, line in enumerate(lines) if "%|" in line]
    assert bar and all(lines[i].startswith("warning:") for i in warned)
    before = [lines[i] for i in warned if i < min(bar)]
    after = [lines[i] for i in warned if i > max(bar)]
    assert any("enlarged 2.29 times" in w for w in before) and any("stored in grey" in w for w in before)
    assert any("near chance" in w for w in after)
