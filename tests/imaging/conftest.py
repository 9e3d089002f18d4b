"""Fixtures of the image-wing tests: labelled images in a folder, and a CNN exported to ONNX."""

import numpy as np
import pytest
from probe_kit import N_CLASSES, N_IMAGES, SIZE, export, make_net, write_pngs


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, size=(N_CLASSES, SIZE, SIZE, 3))
    labels = np.arange(N_IMAGES) % N_CLASSES
    noise = rng.integers(-40, 41, size=(N_IMAGES, SIZE, SIZE, 3))
    images = np.clip(base[labels] + noise, 0, 255).astype(np.uint8)
    return images, labels


@pytest.fixture(scope="module")
def folder(tmp_path_factory, data):
    images, labels = data
    root = tmp_path_factory.mktemp("probe")
    write_pngs(root / "images", images, labels)
    # A "re-capture": darker, blurred copies under the same names.
    dark = np.clip(images.astype(float) * 0.6, 0, 255).astype(np.uint8)
    write_pngs(root / "screen", dark, labels, csv=False)
    return root


@pytest.fixture(scope="module")
def cnn(folder):
    net = make_net()
    return net, export(net, folder / "cnn.onnx", shape=(1, 3, SIZE, SIZE))
