"""Corruptions, natural transforms and simulated recaptures: contracts, twins, severity ordering."""

import itertools

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

import core.imaging.corruptions as corruptions
from core.imaging.corruptions import (
    CORRUPTIONS,
    NATURAL_TRANSFORMS,
    SEVERITY_PARAMETERS,
    RecaptureCondition,
    natural_transform,
    recapture_grid,
    simulate_recapture,
)
from core.imaging.demo import digit_images

RANDOM = {"gaussian_noise", "shot_noise", "impulse_noise", "motion_blur"}


@pytest.fixture(scope="module")
def digits():
    images, _ = digit_images()
    return images[:40].astype(np.float32) / 255.0


def high_frequency_energy(batch):
    """Mean squared discrete Laplacian: drops as an image gets blurrier."""
    return float(np.mean(ndimage.laplace(batch.astype(np.float64), mode="nearest")[:, 1:-1, 1:-1] ** 2))


# ------------------------------------------------------------------------------------------
# the common contract
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CORRUPTIONS))
@pytest.mark.parametrize("severity", [1, 3, 5])
def test_shape_dtype_range_and_single_image(name, severity, digits):
    f = CORRUPTIONS[name]
    batch = f(digits[:5], severity, np.random.default_rng(0))
    single = f(digits[0], severity, np.random.default_rng(0))
    assert batch.shape == (5, 32, 32) and batch.dtype == np.float32
    assert single.shape == (32, 32) and single.dtype == np.float32
    assert batch.min() >= 0.0 and batch.max() <= 1.0


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_same_generator_state_gives_identical_output(name, digits):
    f = CORRUPTIONS[name]
    a = f(digits, 4, np.random.default_rng(7))
    b = f(digits, 4, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    c = f(digits, 4, np.random.default_rng(8))
    assert (not np.array_equal(a, c)) == (name in RANDOM)


def test_nine_types_with_five_severities_from_the_imagenet_c_tables():
    assert len(CORRUPTIONS) == 9 and set(SEVERITY_PARAMETERS) == set(CORRUPTIONS)
    assert all(len(v) == 5 for v in SEVERITY_PARAMETERS.values())
    # resolution-free parameters carry over unchanged; the motion streak scales by 32 / 224;
    # defocus follows the 32 x 32 (CIFAR-10-C) table
    assert SEVERITY_PARAMETERS["gaussian_noise"] == (0.08, 0.12, 0.18, 0.26, 0.38)
    assert SEVERITY_PARAMETERS["jpeg_compression"] == (25, 18, 15, 10, 7)
    assert SEVERITY_PARAMETERS["motion_blur"][0] == pytest.approx((10 / 7, 3 / 7))
    assert SEVERITY_PARAMETERS["defocus_blur"] == ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1.0, 0.2), (1.5, 0.1))


@pytest.mark.parametrize(
    "images, severity, rng, message",
    [
        (np.zeros((2, 2, 2, 2)), 1, np.random.default_rng(0), "one image \\(H, W\\) or a batch"),
        (np.zeros((0, 4, 4)), 1, np.random.default_rng(0), "non-empty"),
        (np.zeros((4, 4), dtype=np.uint8), 1, np.random.default_rng(0), "floats in \\[0, 1\\]; got dtype uint8"),
        (np.full((4, 4), 1.5), 1, np.random.default_rng(0), "got values in \\[1.5, 1.5\\]"),
        (np.full((4, 4), np.nan), 1, np.random.default_rng(0), "NaN or infinite"),
        (np.zeros((4, 4)), 0, np.random.default_rng(0), "`severity` must be an int in 1..5; got 0"),
        (np.zeros((4, 4)), 6, np.random.default_rng(0), "got 6"),
        (np.zeros((4, 4)), 2.0, np.random.default_rng(0), "got 2.0"),
        (np.zeros((4, 4)), True, np.random.default_rng(0), "got True"),
        (np.zeros((4, 4)), 1, 0, "`rng` must be a numpy Generator"),
    ],
    ids=[
        "ndim",
        "empty",
        "dtype",
        "range",
        "nan",
        "severity-0",
        "severity-6",
        "severity-float",
        "severity-bool",
        "rng-int",
    ],
)
def test_bad_input_is_rejected(images, severity, rng, message):
    with pytest.raises(ValueError, match=message):
        corruptions.gaussian_noise(images, severity, rng)


# ------------------------------------------------------------------------------------------
# severity ordering
# ------------------------------------------------------------------------------------------
def _by_severity(name, digits, measure):
    return [measure(CORRUPTIONS[name](digits, s, np.random.default_rng(s))) for s in range(1, 6)]


@pytest.mark.parametrize("name", ["gaussian_noise", "shot_noise", "impulse_noise", "jpeg_compression"])
def test_stronger_severity_moves_further_from_the_original(name, digits):
    dist = _by_severity(name, digits, lambda out: float(np.mean((out - digits) ** 2)))
    assert all(a < b for a, b in itertools.pairwise(dist)), dist


def test_pixelate_error_grows_with_severity_except_for_the_aligned_half(digits):
    dist = _by_severity("pixelate", digits, lambda out: float(np.mean((out - digits) ** 2)))
    # Severity 2 halves the side exactly (32 -> 16 -> 32, aligned boxes); severity 1 resamples
    # to 19 px, whose misaligned boxes shift edges, so its error is larger on these digits.
    assert dist[1] < dist[0] < dist[2] < dist[3] < dist[4], dist


@pytest.mark.parametrize("name", ["defocus_blur", "motion_blur"])
def test_stronger_blur_lowers_high_frequency_energy(name, digits):
    energy = _by_severity(name, digits, high_frequency_energy)
    assert high_frequency_energy(digits) > energy[0]
    assert all(a > b for a, b in itertools.pairwise(energy)), energy


def test_contrast_shrinks_spread_and_brightness_raises_mean(digits):
    spread = _by_severity("contrast", digits, lambda out: float(out.std(axis=(1, 2)).mean()))
    assert all(a > b for a, b in itertools.pairwise(spread))
    np.testing.assert_allclose(
        CORRUPTIONS["contrast"](digits, 2, np.random.default_rng(0)).mean(axis=(1, 2)),
        digits.mean(axis=(1, 2)),
        atol=1e-6,
    )
    level = _by_severity("brightness", digits, lambda out: float(out.mean()))
    assert all(a < b for a, b in itertools.pairwise(level))


def test_noise_levels_match_their_parameters():
    grey = np.full((200, 200), 0.5, dtype=np.float32)
    out = corruptions.gaussian_noise(grey, 1, np.random.default_rng(0))
    assert out.std() == pytest.approx(0.08, rel=0.02)
    hit = corruptions.impulse_noise(grey, 3, np.random.default_rng(0))
    share = np.mean(hit != 0.5)
    assert abs(share - 0.09) < 4 * np.sqrt(0.09 * 0.91 / grey.size)
    assert np.isin(hit[hit != 0.5], (0.0, 1.0)).all()
    shot = corruptions.shot_noise(grey, 1, np.random.default_rng(0))
    assert shot.mean() == pytest.approx(0.5, abs=0.01)
    assert np.allclose(shot * 60, np.round(shot * 60), atol=1e-4)  # counts of 1/60 photons


# ------------------------------------------------------------------------------------------
# twins
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
def test_pixelate_matches_pillow_box_resampling(severity):
    rng = np.random.default_rng(severity)
    images = rng.random((3, 32, 32)).astype(np.float32)
    fraction = SEVERITY_PARAMETERS["pixelate"][severity - 1]
    side = int(32 * fraction)
    expected = np.stack(
        [
            np.asarray(
                Image.fromarray(img).resize((side, side), Image.Resampling.BOX).resize((32, 32), Image.Resampling.BOX)
            )
            for img in images
        ]
    )
    got = corruptions.pixelate(images, severity, rng)
    np.testing.assert_allclose(got, np.clip(expected, 0, 1), atol=1e-5)


def test_box_matrix_rows_match_pillow_on_unit_vectors():
    for n_in, n_out in [(32, 19), (32, 8), (19, 32), (7, 3)]:
        basis = np.eye(n_in, dtype=np.float32)
        pil = np.stack(
            [np.asarray(Image.fromarray(row[None, :]).resize((n_out, 1), Image.Resampling.BOX))[0] for row in basis]
        )  # column j of the operator
        np.testing.assert_allclose(corruptions._box_matrix(n_out, n_in), pil.T, atol=1e-6)


def _naive_disk(radius, alias_sigma):
    """ImageNet-C's kernel on its full 17 x 17 grid, smoothed by an explicit 3 x 3 loop (mirror borders)."""
    grid = np.arange(-8, 9)
    disk = np.array([[float(x * x + y * y <= radius * radius) for x in grid] for y in grid])
    disk /= disk.sum()
    g = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * alias_sigma**2))
    g /= g.sum()
    size = disk.shape[0]
    out = np.zeros_like(disk)
    for i in range(size):
        for j in range(size):
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    ii = abs(i + di) if i + di < size else 2 * size - 2 - (i + di)
                    jj = abs(j + dj) if j + dj < size else 2 * size - 2 - (j + dj)
                    out[i, j] += g[di + 1] * g[dj + 1] * disk[ii, jj]
    return out


@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
def test_defocus_kernel_matches_the_imagenet_c_construction(severity):
    radius, alias = SEVERITY_PARAMETERS["defocus_blur"][severity - 1]
    got = corruptions._disk_kernel(radius, alias)
    half = got.shape[0] // 2
    full = _naive_disk(radius, alias)
    np.testing.assert_allclose(got, full[8 - half : 9 + half, 8 - half : 9 + half], atol=1e-12)
    assert full.sum() == pytest.approx(got.sum()) == pytest.approx(1.0)


def _bilinear_clamped(img, r, c):
    h, w = img.shape
    r, c = min(max(r, 0.0), h - 1.0), min(max(c, 0.0), w - 1.0)
    r0, c0 = int(np.floor(r)), int(np.floor(c))
    r1, c1 = min(r0 + 1, h - 1), min(c0 + 1, w - 1)
    fr, fc = r - r0, c - c0
    return (
        (1 - fr) * (1 - fc) * img[r0, c0]
        + (1 - fr) * fc * img[r0, c1]
        + fr * (1 - fc) * img[r1, c0]
        + fr * fc * img[r1, c1]
    )


def test_motion_blur_matches_a_per_pixel_loop():
    images = np.random.default_rng(3).random((2, 9, 9)).astype(np.float32)
    severity = 5
    radius, sigma = SEVERITY_PARAMETERS["motion_blur"][severity - 1]
    got = corruptions.motion_blur(images, severity, np.random.default_rng(11))
    angles = np.deg2rad(np.random.default_rng(11).uniform(-45, 45, size=2))
    taps = range(2 * int(np.ceil(radius)) + 1)
    weights = np.array([np.exp(-d * d / (2 * sigma * sigma)) for d in taps])
    weights /= weights.sum()
    for n, img in enumerate(images.astype(np.float64)):
        for i, j in itertools.product(range(9), range(9)):
            value = sum(
                w * _bilinear_clamped(img, i + d * np.sin(angles[n]), j + d * np.cos(angles[n]))
                for d, w in zip(taps, weights)
            )
            assert got[n, i, j] == pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize("severity", [1, 5])
def test_motion_blur_of_a_large_batch_equals_each_image_blurred_alone(severity):
    """Each image's streak reads that image only and its taps are summed in a fixed order: the
    same bytes as one image at a time, whatever the batch's size."""
    n = 133
    images = np.random.default_rng(4).random((n, 12, 12))
    radius, sigma = SEVERITY_PARAMETERS["motion_blur"][severity - 1]
    angles = np.deg2rad(np.random.default_rng(5).uniform(-45, 45, size=n))
    batch = corruptions._streak(images, angles, radius, sigma)
    alone = np.concatenate([corruptions._streak(images[i : i + 1], angles[i : i + 1], radius, sigma) for i in range(n)])
    np.testing.assert_array_equal(batch, alone)
    assert batch.shape == images.shape


def test_motion_blur_of_one_image_equals_its_image_in_the_batch():
    images = np.random.default_rng(6).random((150, 10, 10))
    whole = corruptions.motion_blur(images, 4, np.random.default_rng(7))
    for index in (0, 1, 64, 149):
        one = corruptions.motion_blur_image(images, index, 4, np.random.default_rng(7))
        np.testing.assert_array_equal(one, whole[index])
    with pytest.raises(ValueError, match=r"`index` in \[0, n\); got \(150, 10, 10\), 150"):
        corruptions.motion_blur_image(images, 150, 4, np.random.default_rng(7))


def test_homographies_map_the_source_corners_onto_the_targets():
    rng = np.random.default_rng(0)
    src = np.array([[0.0, 0.0], [31.0, 0.0], [31.0, 31.0], [0.0, 31.0]]) + rng.uniform(-3, 3, (5, 4, 2))
    dst = np.broadcast_to(np.array([[0.0, 0.0], [31.0, 0.0], [31.0, 31.0], [0.0, 31.0]]), (5, 4, 2))
    h = corruptions.homographies(src, dst)
    mapped = np.einsum("nij,nkj->nki", h, np.concatenate([src, np.ones((5, 4, 1))], axis=2))
    np.testing.assert_allclose(mapped[..., :2] / mapped[..., 2:], dst, atol=1e-9)


# ------------------------------------------------------------------------------------------
# natural transforms
# ------------------------------------------------------------------------------------------
def test_the_eighteen_transforms_of_the_paper(digits):
    assert len(NATURAL_TRANSFORMS) == 18
    for name in NATURAL_TRANSFORMS:
        out = natural_transform(digits[:3], name)
        assert out.shape == (3, 32, 32) and out.dtype == np.float32
        assert 0.0 <= out.min() and out.max() <= 1.0
        np.testing.assert_array_equal(out, natural_transform(digits[:3], name))


@pytest.mark.parametrize(
    "name, reference",
    [
        ("hflip", lambda x: x[:, :, ::-1]),
        ("shift_x+5%", lambda x: ndimage.shift(x, (0, 0, 1.6), order=1, mode="mirror")),
        ("shift_y-2%", lambda x: ndimage.shift(x, (0, -0.64, 0), order=1, mode="mirror")),
        ("rotate+10", lambda x: ndimage.rotate(x, 10, axes=(1, 2), reshape=False, order=1, mode="mirror")),
        ("rotate-5", lambda x: ndimage.rotate(x, -5, axes=(1, 2), reshape=False, order=1, mode="mirror")),
        ("gamma_0.8", lambda x: x**0.8),
    ],
    ids=["hflip", "shift-x", "shift-y", "rotate+10", "rotate-5", "gamma"],
)
def test_transforms_match_scipy_references(name, reference, digits):
    np.testing.assert_allclose(
        natural_transform(digits[:4], name), np.clip(reference(digits[:4].astype(np.float64)), 0, 1), atol=1e-6
    )


def test_zoom_magnifies_about_the_centre():
    ramp = np.tile(np.linspace(0.0, 1.0, 32), (32, 1))
    out = natural_transform(ramp, "zoom_1.2").astype(np.float64)
    centre = 15.5
    cols = np.arange(32)
    expected = np.interp(centre + (cols - centre) / 1.2, cols, ramp[0])
    np.testing.assert_allclose(out[16], expected, atol=1e-6)
    np.testing.assert_allclose(
        natural_transform(ramp, "hflip_zoom_1.1"), natural_transform(ramp, "zoom_1.1")[:, ::-1], atol=0
    )


def test_unknown_transform_is_rejected():
    with pytest.raises(ValueError, match="`name` must be one of"):
        natural_transform(np.zeros((4, 4)), "solarize")


# ------------------------------------------------------------------------------------------
# simulated recapture
# ------------------------------------------------------------------------------------------
def test_the_grid_has_27_simulated_conditions():
    grid = recapture_grid()
    assert len(grid) == 27 and len({c.name for c in grid}) == 27
    assert all(c.name.startswith("sim-recapture ") for c in grid)
    assert set(grid[4].parameters()) == {
        "ink_spread",
        "dot_gain",
        "paper_texture",
        "corner_jitter",
        "rotation",
        "defocus",
        "gain",
        "shading",
        "photon_noise",
        "read_noise",
        "jpeg_quality",
    }


def test_recapture_is_seeded_eight_bit_and_in_range(digits):
    cond = RecaptureCondition(2, 3, 1)
    a = simulate_recapture(digits[:6], cond, np.random.default_rng(1))
    np.testing.assert_array_equal(a, simulate_recapture(digits[:6], cond, np.random.default_rng(1)))
    assert not np.array_equal(a, simulate_recapture(digits[:6], cond, np.random.default_rng(2)))
    assert a.shape == (6, 32, 32) and a.dtype == np.float32 and 0 <= a.min() and a.max() <= 1
    np.testing.assert_allclose(a * 255, np.round(a * 255), atol=1e-3)
    assert simulate_recapture(digits[0], cond, np.random.default_rng(1)).shape == (32, 32)


@pytest.mark.parametrize("stage", ["print_level", "geometry_level", "exposure_level"])
def test_each_stage_level_degrades_more(stage, digits):
    def distance(level):
        levels = {"print_level": 2, "geometry_level": 2, "exposure_level": 2, stage: level}
        out = simulate_recapture(digits, RecaptureCondition(**levels), np.random.default_rng(5))
        return float(np.mean((out - digits) ** 2))

    d = [distance(level) for level in (1, 2, 3)]
    assert d[0] < d[1] < d[2], d


def test_darker_exposure_levels_darken_the_paper(digits):
    means = [
        simulate_recapture(digits, RecaptureCondition(1, 1, e), np.random.default_rng(0)).mean() for e in (1, 2, 3)
    ]
    assert means[0] > means[1] > means[2]


@pytest.mark.parametrize("levels", [(0, 1, 1), (1, 4, 1), (1, 1, 2.0), (True, 1, 1)])
def test_recapture_levels_are_validated(levels):
    with pytest.raises(ValueError, match="must be an int in 1..3"):
        RecaptureCondition(*levels)
    with pytest.raises(ValueError, match="`condition` must be a RecaptureCondition"):
        simulate_recapture(np.zeros((4, 4)), (1, 1, 1), np.random.default_rng(0))
