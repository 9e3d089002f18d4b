"""Simulated screen and print re-captures: a physical-looking stand-in for real re-tests.

Two media, each a 3 x 3 grid of a **medium** level (how the image is shown) and a **capture**
level (how it is photographed), 18 conditions in all, named
``"sim-recapture screen d<i> c<j>"`` and ``"sim-recapture print p<i> c<j>"``:

* **screen** -- the image is shown on a pixel display and photographed. The display is
  rendered on a grid ``SUPERSAMPLE`` times finer than the image: every image pixel is one
  screen pixel whose emitting area covers a share ``pixel_fill`` of its cell (the dark gaps
  between pixels), over a ``black_level`` of light that a black pixel still emits or reflects,
  with the display's ``gamma``, plus a smooth specular ``glare`` spot. The camera samples this
  fine pattern through a perspective warp whose scale differs slightly from the screen's pixel
  pitch, so the pixel grid beats against the camera's grid: **moiré** arises from the sampling
  itself, as it does physically, rather than being painted on.
* **print** -- the image is printed as a clustered-dot **halftone** (a 45-degree screen of
  period ``halftone_period`` fine pixels), the ink **spreads** into the paper (Gaussian of
  ``ink_spread`` image pixels) with dot gain, the paper has a fibre **texture** (fine and
  smooth random fields) and an off-white ``paper_white``; ink reflects ``ink_black``.

Both media then share the capture stage: a random **perspective** warp (page corners jitter
by up to ``corner_jitter`` px, rotation up to ``rotation`` degrees, scale within
``1 +- zoom``), each camera pixel averaging 2 x 2 samples of the fine grid, Gaussian defocus,
exposure ``gain`` with a linear shading ramp, signal-dependent sensor noise and an 8-bit JPEG.

Images are floats in ``[0, 1]`` with 1 = light (a bright screen pixel, white paper); for
Fashion-MNIST that is the garment on a black background. These are **simulations** labelled
``simulated-recapture`` everywhere; they reproduce no real device.

Every random draw comes from the ``rng`` argument, in a fixed order that does not depend on
the batch's memory layout, so a fixed generator state gives bit-identical output.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Mapping

import numpy as np

from core.imaging.corruptions import batch_iv, finish_batch, homographies, jpeg_roundtrip

__all__ = [
    "CAPTURE_LEVELS",
    "MEDIUM_LEVELS",
    "SUPERSAMPLE",
    "SimulatedRecapture",
    "halftone",
    "recapture_conditions",
    "simulate",
]

SUPERSAMPLE = 5
"""Fine-grid pixels per image pixel along each axis (screen cells, halftone dots)."""

Medium = Literal["screen", "print"]

MEDIUM_LEVELS: Mapping[str, Mapping[str, tuple]] = MappingProxyType(
    {
        "screen": MappingProxyType(
            {
                "pixel_fill": (0.8, 0.6, 0.4),  # emitting share of each screen pixel's side
                "black_level": (0.04, 0.12, 0.25),  # light a black pixel still sends to the camera
                "gamma": (1.0, 1.4, 1.9),  # display response x ** gamma
                "glare": (0.08, 0.25, 0.5),  # peak of the specular highlight
            }
        ),
        "print": MappingProxyType(
            {
                "halftone_period": (3.0, 4.0, 6.0),  # halftone cell, fine pixels (SUPERSAMPLE per image px)
                "ink_spread": (0.25, 0.5, 0.9),  # Gaussian spread of the ink, image pixels
                "dot_gain": (0.1, 0.3, 0.6),  # ink coverage multiplied by 1 + dot_gain
                "paper_texture": (0.03, 0.07, 0.12),  # std of the paper's fibre field (relative)
                "paper_white": (0.92, 0.85, 0.75),  # reflectance of blank paper
                "ink_black": (0.05, 0.1, 0.18),  # reflectance of full ink
            }
        ),
    }
)
"""Medium parameters at levels 1, 2, 3 (mild .. harsh)."""

CAPTURE_LEVELS: Mapping[str, tuple] = MappingProxyType(
    {
        "corner_jitter": (0.8, 2.0, 3.5),  # px, each page corner, uniform
        "rotation": (3.0, 8.0, 15.0),  # degrees, uniform +-
        "zoom": (0.05, 0.1, 0.15),  # camera scale within 1 +- zoom of the image's
        "defocus": (0.4, 0.8, 1.3),  # Gaussian sigma, image pixels
        "gain": (0.9, 0.65, 0.4),  # overall exposure
        "shading": (0.15, 0.35, 0.6),  # light lost across the page by a linear ramp
        "photon_noise": (0.003, 0.012, 0.035),  # variance per unit signal
        "read_noise": (0.015, 0.035, 0.07),  # std of the signal-independent noise
        "jpeg_quality": (80, 50, 25),
    }
)
"""Capture parameters at levels 1, 2, 3, shared by both media."""

_CHUNK = 128  # images rendered at once on the fine grid (memory); draws do not depend on it


@dataclass(frozen=True)
class SimulatedRecapture:
    """One simulated re-capture condition.

    Attributes
    ----------
    medium : {"screen", "print"}
    medium_level, capture_level : int
        1 (mild) .. 3 (harsh); parameters in :data:`MEDIUM_LEVELS` and :data:`CAPTURE_LEVELS`.
    """

    medium: Medium
    medium_level: int
    capture_level: int

    def __post_init__(self):
        if self.medium not in MEDIUM_LEVELS:
            raise ValueError(f"`medium` must be one of {list(MEDIUM_LEVELS)}; got {self.medium!r}.")
        for name in ("medium_level", "capture_level"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 3:
                raise ValueError(f"`{name}` must be an int in 1..3; got {value!r}.")

    @property
    def name(self) -> str:
        """E.g. ``"sim-recapture screen d2 c1"`` (d = display) or ``"sim-recapture print p3 c2"``."""
        letter = "d" if self.medium == "screen" else "p"
        return f"sim-recapture {self.medium} {letter}{self.medium_level} c{self.capture_level}"

    def parameters(self) -> dict[str, float]:
        """Every parameter of this condition, flattened."""
        out = {k: v[self.medium_level - 1] for k, v in MEDIUM_LEVELS[self.medium].items()}
        out.update({k: v[self.capture_level - 1] for k, v in CAPTURE_LEVELS.items()})
        return out


def recapture_conditions() -> tuple[SimulatedRecapture, ...]:
    """The 18 conditions: screen then print, medium level slower, capture level faster.

    Examples
    --------
    >>> grid = recapture_conditions()
    >>> len(grid), grid[0].name, grid[-1].name
    (18, 'sim-recapture screen d1 c1', 'sim-recapture print p3 c3')
    """
    return tuple(SimulatedRecapture(m, a, b) for m in ("screen", "print") for a in (1, 2, 3) for b in (1, 2, 3))


def halftone(coverage: np.ndarray, period: float) -> np.ndarray:
    """Clustered-dot halftone at 45 degrees: 1 where ink is laid, 0 elsewhere.

    The spot function of fine pixel ``(r, c)`` is ``cos(2 pi u / period) + cos(2 pi v / period)``
    with ``(u, v)`` its centre's coordinates turned by 45 degrees, so dots grow from the cell
    centres. Its ranks over the ``H x W`` grid, ``(rank + 0.5) / (H W)``, are the thresholds
    (ties in grid order): they are uniform on ``(0, 1)``, so a flat coverage ``c`` inks exactly
    ``round(c H W)`` pixels (the printed tone is kept) while the dots stay visible. Ink is laid
    where ``coverage`` exceeds the threshold.

    Parameters
    ----------
    coverage : ndarray of shape (..., H, W)
        Ink coverage in [0, 1] on the fine grid (1 = solid ink).
    period : float
        Cell period in fine pixels (> 1).

    Returns
    -------
    ndarray of float64, same shape, values in {0, 1}.
    """
    h, w = coverage.shape[-2:]
    rr, cc = np.mgrid[0:h, 0:w].astype(np.float64) + 0.5
    u, v = (rr + cc) / np.sqrt(2.0), (rr - cc) / np.sqrt(2.0)
    spot = np.cos(2.0 * np.pi * u / period) + np.cos(2.0 * np.pi * v / period)
    rank = np.empty(h * w)
    rank[np.argsort(-spot.ravel(), kind="stable")] = np.arange(h * w)
    threshold = ((rank + 0.5) / (h * w)).reshape(h, w)
    return (coverage > threshold).astype(np.float64)


def _draws(rng: np.random.Generator, n: int, h: int, w: int, p: dict) -> dict[str, np.ndarray]:
    """Every per-image random quantity, drawn up front in a fixed order."""
    return {
        "theta": np.deg2rad(rng.uniform(-p["rotation"], p["rotation"], size=n)),
        "scale": rng.uniform(1.0 - p["zoom"], 1.0 + p["zoom"], size=n),
        "jitter": rng.uniform(-p["corner_jitter"], p["corner_jitter"], size=(n, 4, 2)),
        "shade_dir": rng.uniform(0.0, 2.0 * np.pi, size=n),
        "glare_at": rng.uniform(0.15, 0.85, size=(n, 2)),
        "texture_seed": rng.integers(0, 2**63 - 1, size=n),
        "noise": rng.normal(size=(n, h, w)),
    }


def _display(x: np.ndarray, p: dict) -> np.ndarray:
    """The screen on the fine grid: square pixels with dark gaps over a black level."""
    f = SUPERSAMPLE
    fine = np.repeat(np.repeat(x ** p["gamma"], f, axis=1), f, axis=2)
    lit = (np.arange(f) + 0.5) < f * p["pixel_fill"]
    cell = (np.tile(lit, x.shape[1])[:, None] & np.tile(lit, x.shape[2])[None, :]).astype(np.float64)
    # The camera's exposure compensates the dark gaps on average: the tone is kept, the
    # gap pattern remains for the sampling to alias into moire.
    return p["black_level"] + (1.0 - p["black_level"]) * fine * (cell / cell.mean())


def _paper(x: np.ndarray, p: dict, texture_seeds: np.ndarray) -> np.ndarray:
    """The print on the fine grid: halftone, ink spread and dot gain, textured off-white paper."""
    # scipy.ndimage costs 0.5 s to import: only when an image is simulated
    from scipy import ndimage

    f = SUPERSAMPLE
    coverage = ndimage.zoom(1.0 - x, (1, f, f), order=1, grid_mode=True, mode="nearest")
    ink = halftone(np.clip(coverage, 0.0, 1.0), p["halftone_period"])
    ink = ndimage.gaussian_filter(ink, sigma=(0, f * p["ink_spread"], f * p["ink_spread"]), mode="nearest")
    ink = np.clip(ink * (1.0 + p["dot_gain"]), 0.0, 1.0)
    fibre = np.empty_like(ink)
    for i, s in enumerate(texture_seeds):
        g = np.random.default_rng(int(s))
        fine_noise, smooth = g.normal(size=ink.shape[1:]), g.normal(size=ink.shape[1:])
        smooth = ndimage.gaussian_filter(smooth, f * 2.0, mode="wrap")
        fibre[i] = 0.5 * fine_noise + 0.5 * smooth / smooth.std()
    paper = np.clip(p["paper_white"] * (1.0 + p["paper_texture"] * fibre), 0.0, 1.0)
    return paper * (1.0 - ink) + p["ink_black"] * ink


def _capture(fine: np.ndarray, d: dict[str, np.ndarray], p: dict, h: int, w: int, cval: float) -> np.ndarray:
    """Photograph the fine-grid page: perspective warp, 2 x 2 samples per camera pixel, defocus."""
    from scipy import ndimage

    n = fine.shape[0]
    f = SUPERSAMPLE
    corners = np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]])  # image-pixel units, edges
    centre = np.array([w / 2.0, h / 2.0])
    c, s = np.cos(d["theta"]), np.sin(d["theta"])
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2) * d["scale"][:, None, None]
    moved = np.einsum("nij,kj->nki", rot, corners - centre) + centre + d["jitter"]
    # camera pixel coordinates (where the page corners land) -> page coordinates
    to_page = homographies(moved, np.broadcast_to(corners, (n, 4, 2)))
    sub = (np.arange(2 * h) + 0.5) / 2.0, (np.arange(2 * w) + 0.5) / 2.0
    yy, xx = np.meshgrid(*sub, indexing="ij")
    pts = np.stack([xx.ravel(), yy.ravel(), np.ones(xx.size)])
    mapped = to_page @ pts
    # page coordinate q (image px) -> fine index q * f - 0.5
    src_x = (mapped[:, 0] / mapped[:, 2]).reshape(n, 2 * h, 2 * w) * f - 0.5
    src_y = (mapped[:, 1] / mapped[:, 2]).reshape(n, 2 * h, 2 * w) * f - 0.5
    index = np.broadcast_to(np.arange(n, dtype=np.float64)[:, None, None], src_x.shape)
    samples = ndimage.map_coordinates(fine, np.stack([index, src_y, src_x]), order=1, mode="constant", cval=cval)
    shot = samples.reshape(n, h, 2, w, 2).mean(axis=(2, 4))
    return ndimage.gaussian_filter(shot, sigma=(0, p["defocus"], p["defocus"]), mode="nearest")


def _expose(shot: np.ndarray, d: dict[str, np.ndarray], p: dict, medium: str) -> np.ndarray:
    n, h, w = shot.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    if medium == "screen":
        gy, gx = d["glare_at"][:, 0, None, None] * h, d["glare_at"][:, 1, None, None] * w
        radius = 0.3 * max(h, w)
        shot = shot + p["glare"] * np.exp(-((yy - gy) ** 2 + (xx - gx) ** 2) / (2.0 * radius**2))
    u = (xx / (w - 1) - 0.5)[None] * np.cos(d["shade_dir"])[:, None, None] + (yy / (h - 1) - 0.5)[None] * np.sin(
        d["shade_dir"]
    )[:, None, None]
    ramp = (u - u.min(axis=(1, 2), keepdims=True)) / np.ptp(u, axis=(1, 2), keepdims=True)
    signal = np.clip(shot * p["gain"] * (1.0 - p["shading"] * ramp), 0.0, 1.0)
    noisy = signal + d["noise"] * np.sqrt(p["photon_noise"] * signal + p["read_noise"] ** 2)
    return jpeg_roundtrip(noisy, p["jpeg_quality"])


def simulate(images, condition: SimulatedRecapture, rng) -> np.ndarray:
    """Simulate showing (screen) or printing (print) ``images`` and photographing them.

    Parameters
    ----------
    images : ndarray of shape (H, W) or (n, H, W)
        Floats in [0, 1], 1 = light.
    condition : SimulatedRecapture
        Medium, medium level and capture level; see :func:`recapture_conditions`.
    rng : numpy.random.Generator
        Source of every random draw (per image: warp, scale, shading direction, glare spot,
        paper texture, sensor noise), drawn for the whole batch before any rendering.

    Returns
    -------
    ndarray of float32, same shape as ``images``, values on the 8-bit grid ``k / 255``.

    Examples
    --------
    >>> import numpy as np
    >>> out = simulate(np.full((2, 28, 28), 0.5), SimulatedRecapture("print", 1, 1), np.random.default_rng(0))
    >>> out.shape, out.dtype
    ((2, 28, 28), dtype('float32'))
    """
    if not isinstance(condition, SimulatedRecapture):
        raise ValueError(f"`condition` must be a SimulatedRecapture; got {type(condition).__name__}.")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy Generator (see core._rng.as_generator); got {type(rng).__name__}.")
    x, single = batch_iv(images)
    n, h, w = x.shape
    p = condition.parameters()
    d = _draws(rng, n, h, w, p)
    out = np.empty_like(x)
    for start in range(0, n, _CHUNK):
        part = slice(start, min(n, start + _CHUNK))
        dp = {k: v[part] for k, v in d.items()}
        if condition.medium == "screen":
            fine, cval = _display(x[part], p), 0.0  # a dark bezel around the screen
        else:
            fine, cval = _paper(x[part], p, dp["texture_seed"]), p["paper_white"]  # blank margin
        shot = _capture(fine, dp, p, h, w, cval)
        out[part] = _expose(shot, dp, p, condition.medium)
    return finish_batch(out, single)
