"""The faster probe gives exactly what the former implementation gave (``probe_twin.py``), byte for byte.

Same machine, same kernels: the two are compared with ``check_exact``, every frame and the
manifest, on NCHW logits and NHWC probability models, several batches (the last one short),
random corruptions and re-captures; and the re-drawn probe images equal the former ones.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from probe_kit import MEAN, SIZE, STD, export, make_net
from probe_twin import naive_affine, naive_probe_image, naive_run_probes, naive_streak

from core.exceptions import ModelFitWarning
from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS
from core.imaging.images import open_images
from core.imaging.probe import (
    DEFAULT_PROBES,
    OnnxImageClassifier,
    ProbeResult,
    probe_image,
    probe_name,
    run_probes,
    write_probe_outputs,
)

# The model-fit checks' keys of the manifest (core.imaging.fit, tested in test_model_fit.py),
# which the former implementation did not write.
_FIT_KEYS = ("classes", "fit", "warnings")


def _assert_same(new, old, folder=None):
    assert set(new.manifest) - set(_FIT_KEYS) == set(old["manifest"])
    manifest = {k: new.manifest[k] if k in _FIT_KEYS else old["manifest"][k] for k in new.manifest}
    old = {**old, "manifest": manifest}
    for frame in ("clean", "probes", "natural", "records"):
        pd.testing.assert_frame_equal(getattr(new, frame), old[frame], check_exact=True)
    assert new.manifest == old["manifest"]
    if folder is not None:  # and the files written, byte for byte
        write_probe_outputs(new, folder / "new")
        write_probe_outputs(ProbeResult(**old), folder / "old")
        for path in sorted((folder / "old").iterdir()):
            assert (folder / "new" / path.name).read_bytes() == path.read_bytes(), path.name


def _linear_model(path, n_classes, size=SIZE):
    """A linear classifier (N, 3, size, size) -> (N, n_classes) logits, written with onnx.helper."""
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(0).normal(size=(3 * 4 * 4, n_classes)).astype(np.float32)
    nodes = [
        helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[size // 4, size // 4], strides=[size // 4] * 2),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "W"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", n_classes])],
        [numpy_helper.from_array(weights * 8, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize("batch_size", [5, 64])
def test_probe_equals_the_former_implementation(folder, cnn, batch_size, tmp_path):
    model = OnnxImageClassifier(cnn[1].read_bytes(), where="cnn.onnx", mean=MEAN, std=STD)
    images = open_images(folder / "images", folder / "images_labels.csv")
    screen = {"screen": open_images(folder / "screen", folder / "images_labels.csv")}
    kwargs = dict(model_name="cnn", perturbed=screen, batch_size=batch_size, seed=11)
    new = run_probes(model, images, **kwargs)
    old = naive_run_probes(model, images, **kwargs)
    assert len(new.probes) == len(images) * len(DEFAULT_PROBES)
    _assert_same(new, old, tmp_path)


def test_a_thousand_class_model_equals_the_former_implementation_without_warnings(folder, data, tmp_path):
    path = _linear_model(tmp_path / "wide.onnx", 1000)
    model = OnnxImageClassifier(path.read_bytes(), where="wide.onnx", mean=MEAN, std=STD)
    images = open_images(folder / "images", folder / "images_labels.csv")
    kwargs = dict(probes=DEFAULT_PROBES[:2], natural=("hflip",), batch_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' "highly fragmented" warning, once per column, no more
        # A random linear model on 1000 classes is near chance: that one warning is expected.
        warnings.simplefilter("ignore", ModelFitWarning)
        new = run_probes(model, images, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = naive_run_probes(model, images, **kwargs)
    assert new.clean.shape[1] == 6 + 1000
    _assert_same(new, old, tmp_path)


def test_nhwc_probability_model_equals_the_former_implementation(folder, data, tmp_path):
    path = export(make_net(nhwc=True, softmax=True), tmp_path / "nhwc.onnx", shape=(1, SIZE, SIZE, 3))
    model = OnnxImageClassifier(path.read_bytes(), where="nhwc.onnx", mean=(0.3,), std=(0.7,))
    np.savez(tmp_path / "set.npz", images=data[0], labels=data[1])
    images = open_images(tmp_path / "set.npz")
    probes = (("gaussian_noise", 5), ("motion_blur", 3), ("jpeg_compression", 1), ("brightness", 5))
    kwargs = dict(probes=probes, natural=("rotate-10", "gamma_0.8", "hflip"), batch_size=4)
    _assert_same(run_probes(model, images, **kwargs), naive_run_probes(model, images, **kwargs))


def test_grey_model_equals_the_former_implementation(folder, tmp_path):
    path = export(make_net(channels=1), tmp_path / "grey.onnx", shape=(1, 1, SIZE, SIZE))
    model = OnnxImageClassifier(path.read_bytes(), where="grey.onnx", mean=(0.5,), std=(0.25,))
    images = open_images(folder / "images", folder / "images_labels.csv")
    kwargs = dict(probes=DEFAULT_PROBES[::3], natural=("shift_x+5%", "zoom_1.2"), batch_size=6, seed=3)
    _assert_same(run_probes(model, images, **kwargs), naive_run_probes(model, images, **kwargs))


@pytest.mark.parametrize("probe", [*(probe_name(c, s) for c in CORRUPTIONS for s in (1, 4)), *NATURAL_TRANSFORMS])
def test_redrawn_probe_images_equal_the_former_ones(data, probe):
    for position in (0, 7):
        image = data[0][position]
        got = probe_image(image, probe, position=position, seed=2)
        np.testing.assert_array_equal(got, naive_probe_image(image, probe, position=position, seed=2))


def test_the_twin_comparison_can_fail(folder, cnn):
    """A one-level change in a single probe input of one image shows up in the comparison."""
    model = OnnxImageClassifier(cnn[1].read_bytes(), where="cnn.onnx", mean=MEAN, std=STD)
    images = open_images(folder / "images", folder / "images_labels.csv")
    kwargs = dict(probes=(("contrast", 2),), natural=(), batch_size=5)
    old = naive_run_probes(model, images, **kwargs)
    table = model.model_input  # shift the input of image 3's contrast probe by one level

    def shifted(levels, *, out=None):
        out = table(levels, out=out)
        if shifted.calls == 1:  # the first batch's contrast variant (after its clean call)
            out[3] = table(np.minimum(levels[3:4].astype(np.int16) + 1, 255).astype(np.uint8))[0]
        shifted.calls += 1
        return out

    shifted.calls = 0
    model.model_input = shifted
    new = run_probes(model, images, **kwargs)
    with pytest.raises(AssertionError):
        _assert_same(new, old)


def test_blas_threads_do_not_change_the_products_of_pixelate_and_motion_blur():
    """The probe runs OpenBLAS on one thread; at 224 px the products are large enough to be
    threaded otherwise, and the corrupted images are the same bytes either way."""
    from threadpoolctl import threadpool_limits

    from core.imaging.probe import _corrupt

    x01 = np.random.default_rng(5).random((2, 224, 224, 3)).astype(np.float32)
    idx = np.arange(2)
    for corruption in ("pixelate", "motion_blur"):
        with threadpool_limits(limits=2, user_api="blas"):
            threaded = [_corrupt(x01, idx, corruption, s, 0) for s in (1, 4)]
        with threadpool_limits(limits=1, user_api="blas"):
            single = [_corrupt(x01, idx, corruption, s, 0) for s in (1, 4)]
        for a, b in zip(threaded, single):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(5, 28, 28), (3, 40, 36, 3), (2, 96, 96, 1)])
def test_per_image_resampling_equals_the_former_batch_call(shape):
    """Motion blur's taps and the natural transforms' affine resampling, one 2-D call per image,
    equal the former 3-D call over the batch exactly (mirror and constant borders, any angle)."""
    from core.imaging import corruptions

    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape)
    grey = x[..., 0] if x.ndim == 4 else x
    for degrees in (0.0, 37.0, -45.0):
        angle = np.full(x.shape[0], np.deg2rad(degrees))
        angle[-1] = np.deg2rad(-degrees / 2)  # a batch with two angles
        np.testing.assert_array_equal(corruptions._streak(grey, angle, 2.3, 1.1), naive_streak(grey, angle, 2.3, 1.1))
    for matrix, shift, cval in [(np.eye(2) / 1.2, (0.0, 0.0), None), (corruptions._rotation(-10.0), (0.5, -2.0), 0.3)]:
        np.testing.assert_array_equal(
            corruptions._affine(x, matrix, shift=shift, cval=cval), naive_affine(x, matrix, shift=shift, cval=cval)
        )
    # The shifts, by scipy's shift: the affine resampling's points, weights and sums.
    h, w = x.shape[1:3]
    for fy, fx in [(0.0, 0.02), (0.0, -0.05), (0.05, 0.0), (-0.02, 0.0), (0.013, -0.031), (0.4, 0.7)]:
        np.testing.assert_array_equal(
            corruptions._shift(fy, fx)(x), naive_affine(x, np.eye(2), shift=(fy * h, fx * w), cval=None)
        )


def test_a_slow_model_reads_every_input_intact_while_the_next_ones_are_prepared(folder, cnn):
    """The inputs are written into a few arrays in turn: none is overwritten while the model reads it."""
    import hashlib
    import time

    from core.imaging.probe import _batch_levels, probe_plan, probe_raw

    model = OnnxImageClassifier(cnn[1].read_bytes(), where="cnn.onnx", mean=MEAN, std=STD)
    images = open_images(folder / "images", folder / "images_labels.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFitWarning)
        plan = probe_plan(model, images, probes=DEFAULT_PROBES[:6], natural=("hflip", "rotate+5"), batch_size=4)
    expected = [
        hashlib.sha256(model.model_input(levels).tobytes()).hexdigest()
        for b in range(plan.n_batches(len(images)))
        for _, levels in _batch_levels(model, images, [], plan, np.arange(4 * b, min(4 * b + 4, len(images))))
    ]
    seen, run = [], model.run

    def slow_run(x):
        before = hashlib.sha256(x.tobytes()).hexdigest()
        time.sleep(0.01)  # the preparing thread fills its queue meanwhile
        seen.append((before, hashlib.sha256(x.tobytes()).hexdigest()))
        return run(x)

    model.run = slow_run
    probe_raw(model, images, [], plan, range(plan.n_batches(len(images))))
    assert [a for a, _ in seen] == expected and [b for _, b in seen] == expected
