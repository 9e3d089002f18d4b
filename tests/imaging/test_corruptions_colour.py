"""Corruptions and natural transforms on colour batches (n, H, W, C), the probe command's inputs."""

import colorsys
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS, natural_transform

DETERMINISTIC = ("defocus_blur", "contrast", "pixelate")


@pytest.fixture(scope="module")
def grey():
    rng = np.random.default_rng(5)
    return rng.random((3, 20, 20))


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_one_channel_batch_equals_the_grey_batch(name, grey):
    """(n, H, W, 1) consumes the same random draws and gives the grey result exactly."""
    f = CORRUPTIONS[name]
    a = f(grey, 3, np.random.default_rng(1))
    b = f(grey[..., None], 3, np.random.default_rng(1))
    assert b.shape == grey.shape + (1,) and b.dtype == np.float32
    if name == "pixelate":  # colour uses two matrix products, grey one einsum loop: float rounding only
        np.testing.assert_allclose(a, b[..., 0], rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, b[..., 0])


@pytest.mark.parametrize("name", list(NATURAL_TRANSFORMS))
def test_natural_transforms_act_on_every_channel_alike(name, grey):
    rgb = np.stack([grey, grey**2, 1 - grey], axis=-1)
    out = natural_transform(rgb, name)
    assert out.shape == rgb.shape
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], natural_transform(rgb[..., c], name))


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_corruptions_act_per_channel(name, grey):
    rgb = np.stack([grey, grey**2, 1 - grey], axis=-1)
    out = CORRUPTIONS[name](rgb, 4, np.random.default_rng(0))
    for c in range(3):
        # contrast keeps each channel's own mean (ImageNet-C: mean over the spatial axes)
        np.testing.assert_allclose(out[..., c], CORRUPTIONS[name](rgb[..., c], 4, np.random.default_rng(0)), atol=1e-6)


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_colour_contract_shape_range_and_determinism(name, grey):
    rgb = np.stack([grey, grey**2, 1 - grey], axis=-1)
    a = CORRUPTIONS[name](rgb, 5, np.random.default_rng(2))
    b = CORRUPTIONS[name](rgb, 5, np.random.default_rng(2))
    assert a.shape == rgb.shape and a.dtype == np.float32 and a.min() >= 0 and a.max() <= 1
    np.testing.assert_array_equal(a, b)


def test_noise_is_drawn_per_channel(grey):
    rgb = np.repeat(grey[..., None], 3, axis=-1)
    out = CORRUPTIONS["gaussian_noise"](rgb, 3, np.random.default_rng(0))
    assert not np.array_equal(out[..., 0], out[..., 1])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(*(st.integers(0, 255),) * 3), min_size=4, max_size=4), st.integers(1, 5))
def test_brightness_adds_to_the_hsv_value_keeping_hue_and_saturation(pixels, severity):
    """Twin: colorsys per pixel, V + c clipped at 1 (ImageNet-C's brightness)."""
    rgb = np.array(pixels, dtype=np.float64).reshape(1, 2, 2, 3) / 255.0
    out = CORRUPTIONS["brightness"](rgb, severity, np.random.default_rng(0))
    shift = (0.1, 0.2, 0.3, 0.4, 0.5)[severity - 1]
    for i, j in np.ndindex(2, 2):
        h, s, v = colorsys.rgb_to_hsv(*rgb[0, i, j])
        expected = colorsys.hsv_to_rgb(h, s, min(v + shift, 1.0))
        np.testing.assert_allclose(out[0, i, j], expected, atol=1e-6)


def test_jpeg_encodes_colour_images(grey):
    rgb = np.stack([grey, grey**2, 1 - grey], axis=-1)
    out = CORRUPTIONS["jpeg_compression"](rgb, 5, np.random.default_rng(0))
    assert out.shape == rgb.shape
    # Twin: Pillow's own RGB JPEG round trip at quality 7 (severity 5).
    for i in range(3):
        buffer = io.BytesIO()
        Image.fromarray(np.rint(rgb[i] * 255).astype(np.uint8)).save(buffer, format="JPEG", quality=7)
        expected = np.asarray(Image.open(io.BytesIO(buffer.getvalue())), dtype=np.float64) / 255
        np.testing.assert_array_equal(out[i], expected.astype(np.float32))


def test_bad_colour_shapes_are_refused():
    with pytest.raises(ValueError, match=r"colour batch \(n, H, W, C\) with C = 1 or 3.*got shape \(2, 4, 4, 2\)"):
        CORRUPTIONS["contrast"](np.zeros((2, 4, 4, 2)), 1, np.random.default_rng(0))


def test_motion_blur_streaks_every_channel_along_the_image_angle(grey):
    """The angle is the only draw (one per image), so each channel equals a grey call with the same stream."""
    rgb = np.stack([grey, grey**2, 1 - grey], axis=-1)
    out = CORRUPTIONS["motion_blur"](rgb, 4, np.random.default_rng(3))
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], CORRUPTIONS["motion_blur"](rgb[..., c], 4, np.random.default_rng(3)))
