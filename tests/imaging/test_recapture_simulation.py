"""Simulated screen and print re-captures (core.imaging.recapture_sim)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.imaging.recapture_sim import (
    CAPTURE_LEVELS,
    MEDIUM_LEVELS,
    SUPERSAMPLE,
    SimulatedRecapture,
    _capture,
    _display,
    halftone,
    recapture_conditions,
    simulate,
)


def _images(n=6, seed=0):
    """Bright garments on black: a filled rectangle with texture, like Fashion-MNIST."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 28, 28))
    x[:, 5:23, 8:20] = 0.6 + 0.4 * rng.random((n, 18, 12))
    return x


def _still(n, *, theta=0.0, scale=1.0):
    """Capture draws of a camera held square to the page: no jitter."""
    return {"theta": np.full(n, theta), "scale": np.full(n, scale), "jitter": np.zeros((n, 4, 2))}


def test_the_grid_names_every_condition_once_and_marks_it_simulated():
    grid = recapture_conditions()
    names = [c.name for c in grid]
    assert len(grid) == 18 and len(set(names)) == 18
    assert all(n.startswith("sim-recapture ") for n in names)
    assert sum(c.medium == "screen" for c in grid) == sum(c.medium == "print" for c in grid) == 9
    assert SimulatedRecapture("print", 2, 3).name == "sim-recapture print p2 c3"
    p = SimulatedRecapture("screen", 3, 1).parameters()
    assert p["pixel_fill"] == MEDIUM_LEVELS["screen"]["pixel_fill"][2]
    assert p["jpeg_quality"] == CAPTURE_LEVELS["jpeg_quality"][0]


def test_simulation_is_seeded_shaped_and_on_the_8_bit_grid():
    x = _images()
    for cond in (SimulatedRecapture("screen", 2, 2), SimulatedRecapture("print", 2, 2)):
        a = simulate(x, cond, np.random.default_rng(1))
        np.testing.assert_array_equal(a, simulate(x, cond, np.random.default_rng(1)))
        assert not np.array_equal(a, simulate(x, cond, np.random.default_rng(2)))
        assert a.shape == x.shape and a.dtype == np.float32 and 0 <= a.min() and a.max() <= 1
        np.testing.assert_allclose(a * 255.0, np.rint(a * 255.0), atol=1e-4)
        assert simulate(x[0], cond, np.random.default_rng(1)).shape == (28, 28)


def test_batches_larger_than_a_chunk_equal_their_per_image_draws():
    """Chunked rendering must not change the result: the first images of a long batch equal a
    batch rendered in one chunk with the same draws (the draws are made up front)."""
    from core.imaging import recapture_sim

    x = np.concatenate([_images(3, seed=s) for s in range(3)])
    cond = SimulatedRecapture("print", 1, 1)
    whole = simulate(x, cond, np.random.default_rng(4))
    chunk, recapture_sim._CHUNK = recapture_sim._CHUNK, 2
    try:
        chunked = simulate(x, cond, np.random.default_rng(4))
    finally:
        recapture_sim._CHUNK = chunk
    np.testing.assert_array_equal(whole, chunked)


def test_harsher_levels_move_the_images_further():
    x = _images(12)
    for medium in ("screen", "print"):
        dist = [
            np.abs(simulate(x, SimulatedRecapture(medium, level, level), np.random.default_rng(0)) - x).mean()
            for level in (1, 2, 3)
        ]
        assert dist[0] < dist[1] < dist[2], (medium, dist)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 1.0), st.sampled_from([3.0, 4.0, 6.0]))
def test_a_flat_halftone_inks_exactly_its_coverage(c, period):
    h = w = 40
    ink = halftone(np.full((h, w), c), period)
    assert set(np.unique(ink)) <= {0.0, 1.0}
    # thresholds are (k + 0.5) / N, k = 0..N-1, so coverage c inks #{k : k + 0.5 < c N} pixels
    expected = int(np.clip(np.ceil(c * h * w - 0.5), 0, h * w))
    assert int(ink.sum()) == expected


def test_halftone_dots_grow_from_the_cell_centres():
    ink = halftone(np.full((60, 60), 0.15), 6.0)
    # a clustered dot: inked pixels have inked neighbours (dispersed dither would isolate them)
    inked = ink.astype(bool)
    neighbours = sum(np.roll(inked, s, axis=a) for s in (-1, 1) for a in (0, 1))
    assert (neighbours[inked] >= 1).mean() > 0.95
    # it is periodic along the 45-degree screen, not a blob: many separate dots
    from scipy import ndimage

    assert ndimage.label(inked)[1] >= 40


def test_a_square_camera_sees_the_image_itself():
    """Identity geometry (no turn, scale 1, no jitter, no defocus): every camera pixel's 2 x 2
    samples fall inside its own screen pixel, so the capture returns the image exactly."""
    x = _images(3)
    fine = np.repeat(np.repeat(x, SUPERSAMPLE, axis=1), SUPERSAMPLE, axis=2)
    shot = _capture(fine, _still(3), {"defocus": 0.0}, 28, 28, cval=0.0)
    np.testing.assert_allclose(shot, x, atol=1e-9)


def test_a_quarter_turn_turns_the_image_clockwise_on_screen():
    x = _images(2)
    fine = np.repeat(np.repeat(x, SUPERSAMPLE, axis=1), SUPERSAMPLE, axis=2)
    shot = _capture(fine, _still(2, theta=np.pi / 2), {"defocus": 0.0}, 28, 28, cval=0.0)
    np.testing.assert_allclose(shot, np.rot90(x, k=-1, axes=(1, 2)), atol=1e-9)


def test_moire_comes_from_the_screen_pixel_gaps():
    """A flat grey screen seen at a scale off the pixel pitch: without gaps the capture is flat;
    with gaps the pixel grid aliases into a beat pattern (moire)."""
    x = np.full((1, 28, 28), 0.5)
    base = {"gamma": 1.0, "black_level": 0.0, "defocus": 0.0}
    interior = (slice(None), slice(6, 22), slice(6, 22))
    spread = {}
    for fill in (1.0, 0.4):
        fine = _display(x, {**base, "pixel_fill": fill})
        shot = _capture(fine, _still(1, scale=0.93), base, 28, 28, cval=0.0)[interior]
        spread[fill] = shot.std()
        assert shot.mean() == pytest.approx(0.5, abs=0.05)  # the exposure keeps the tone
    assert spread[1.0] < 1e-9
    assert spread[0.4] > 0.02
    # a beat, not noise: the pattern's energy sits at one low spatial frequency
    fine = _display(x, {**base, "pixel_fill": 0.4})
    shot = _capture(fine, _still(1, scale=0.93), base, 28, 28, cval=0.0)[0, 6:22, 6:22]
    power = np.abs(np.fft.fft2(shot - shot.mean())) ** 2
    assert power.max() / power.sum() > 0.1


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SimulatedRecapture("tv", 1, 1), "`medium` must be one of"),
        (lambda: SimulatedRecapture("print", 0, 1), "`medium_level` must be an int in 1..3; got 0"),
        (lambda: SimulatedRecapture("print", 1, True), "`capture_level` must be an int in 1..3; got True"),
        (lambda: simulate(_images(1), (1, 1), np.random.default_rng(0)), "`condition` must be a SimulatedRecapture"),
        (lambda: simulate(_images(1), SimulatedRecapture("print", 1, 1), 0), "`rng` must be a numpy Generator"),
        (
            lambda: simulate(_images(1) * 2, SimulatedRecapture("print", 1, 1), np.random.default_rng(0)),
            r"`images` must lie in \[0, 1\]",
        ),
    ],
    ids=["medium", "level-0", "level-bool", "condition-type", "rng-type", "range"],
)
def test_bad_arguments_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()
