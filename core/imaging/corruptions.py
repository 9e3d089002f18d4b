"""Image perturbations for paired evaluations: corruptions, natural transforms, simulated recaptures.

Three families, on images stored as floats in ``[0, 1]`` (0 = black ink, 1 = white paper):
one grey image ``(H, W)``, a grey batch ``(n, H, W)`` or, for the corruptions and natural
transforms, a colour batch ``(n, H, W, C)`` (channels last, ``C`` = 1 or 3; a single colour
image is passed as a batch of one). Every function returns ``float32`` of the same shape,
clipped to ``[0, 1]``. Colour follows ImageNet-C: noise is drawn per channel, blur and
resampling act on each channel alike, contrast keeps each channel's mean, brightness adds to
the HSV value channel (hue and saturation kept), JPEG encodes the RGB image.

* **Corruptions** (SPEC B.5 synthetic probes): ``f(images, severity, rng) -> images`` with
  ``severity`` in 1..5. Parameters follow Hendrycks & Dietterich's ImageNet-C severity tables
  (``imagenet_c/corruptions.py``). Intensity parameters (noise levels, contrast, brightness,
  JPEG quality, pixelation fraction) carry over unchanged; the motion-blur streak (in pixels)
  is scaled by 32/224 so that a 32x32 image is blurred by the same fraction of its width as a
  224x224 ImageNet image. Defocus uses Hendrycks' own 32x32 table (CIFAR-10-C), because the
  scaled ImageNet-C disk radii fall below one pixel (see :data:`SEVERITY_PARAMETERS`).
* **Natural transforms** (the equal-inference-count TTA comparator of 001_... Section 5.3):
  the paper's fixed set of 18 -- horizontal flip, shifts of +-2 % and +-5 % along each axis,
  zoom 1.1 / 1.2, rotations +-5 / +-10 degrees, gamma 0.8 / 0.9, flip + zoom 1.1. Deterministic.
* **Simulated print-and-recapture** conditions: a 3 x 3 x 3 grid over the print stage (ink
  spread, dot gain, paper texture), the capture geometry (perspective warp, rotation,
  defocus) and the exposure (uneven illumination, sensor noise, JPEG). They stand in for
  physical recaptures in the demo pool and are **simulations**, labelled as such everywhere.

Every random draw comes from the ``rng`` argument, so a fixed generator state gives
bit-identical output.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np
from PIL import Image

__all__ = [
    "CORRUPTIONS",
    "NATURAL_TRANSFORMS",
    "RECAPTURE_LEVELS",
    "SEVERITY_PARAMETERS",
    "RecaptureCondition",
    # building blocks shared with core.imaging.recapture_sim
    "batch_iv",
    "finish_batch",
    "homographies",
    "jpeg_roundtrip",
    "brightness",
    "contrast",
    "defocus_blur",
    "gaussian_noise",
    "impulse_noise",
    "jpeg_compression",
    "motion_blur",
    "motion_blur_image",
    "natural_transform",
    "pixelate",
    "recapture_grid",
    "shot_noise",
    "simulate_recapture",
]

# ImageNet-C is defined on 224 x 224 images; spatial parameters are rescaled to 32 x 32.
_SPATIAL_SCALE = 32 / 224

SEVERITY_PARAMETERS: Mapping[str, tuple] = MappingProxyType(
    {
        # additive N(0, c) noise
        "gaussian_noise": (0.08, 0.12, 0.18, 0.26, 0.38),
        # Poisson(c * x) / c photon noise
        "shot_noise": (60.0, 25.0, 12.0, 5.0, 3.0),
        # share of pixels replaced by salt or pepper
        "impulse_noise": (0.03, 0.06, 0.09, 0.17, 0.27),
        # (disk radius in px, anti-alias sigma in px). Hendrycks' own 32 x 32 table (CIFAR-10-C):
        # ImageNet-C's radii scaled by 32/224 fall below one pixel at severities 1-3, where a
        # disk kernel is the identity, so the anti-alias blur carries the low severities here.
        "defocus_blur": ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1.0, 0.2), (1.5, 0.1)),
        # (radius in px, Gaussian sigma in px) of a one-sided streak
        "motion_blur": tuple(
            (r * _SPATIAL_SCALE, s * _SPATIAL_SCALE) for r, s in ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))
        ),
        # factor applied to the deviation from the image mean
        "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),
        # added to the value channel (= the grey level)
        "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),
        # side of the intermediate image as a fraction of the original
        "pixelate": (0.6, 0.5, 0.4, 0.3, 0.25),
        # JPEG quality
        "jpeg_compression": (25, 18, 15, 10, 7),
    }
)


def batch_iv(images, *, colour: bool = False) -> tuple[np.ndarray, bool]:
    """Validate ``images`` and return a float64 batch ``(n, H, W[, C])`` plus "was a single image"."""
    arr = np.asarray(images)
    colour_ok = colour and arr.ndim == 4 and arr.shape[-1] in (1, 3)
    if not (arr.ndim in (2, 3) or colour_ok) or arr.size == 0:
        also = " or a colour batch (n, H, W, C) with C = 1 or 3" if colour else ""
        raise ValueError(
            f"`images` must be one image (H, W) or a batch (n, H, W){also}, non-empty; got shape {arr.shape}."
        )
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(f"`images` must be floats in [0, 1]; got dtype {arr.dtype}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError("`images` contains NaN or infinite values; expected floats in [0, 1].")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"`images` must lie in [0, 1]; got values in [{lo:.6g}, {hi:.6g}].")
    batch = arr.astype(np.float64)
    return (batch[None], True) if arr.ndim == 2 else (batch, False)


def finish_batch(batch: np.ndarray, single: bool) -> np.ndarray:
    out = np.clip(batch, 0.0, 1.0).astype(np.float32)
    return out[0] if single else out


def _prepare(images, severity, rng, name: str):
    batch, single = batch_iv(images, colour=True)
    if isinstance(severity, (bool, np.bool_)) or not isinstance(severity, (int, np.integer)) or not 1 <= severity <= 5:
        raise ValueError(f"`severity` must be an int in 1..5; got {severity!r}.")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy Generator (see core._rng.as_generator); got {type(rng).__name__}.")
    return batch, single, SEVERITY_PARAMETERS[name][int(severity) - 1]


def _to_uint8(batch: np.ndarray) -> np.ndarray:
    return np.rint(np.clip(batch, 0.0, 1.0) * 255.0).astype(np.uint8)


def jpeg_roundtrip(batch: np.ndarray, quality: int) -> np.ndarray:
    """JPEG round trip of every 8-bit-quantised image (Pillow's libjpeg; a codec, so one call per image)."""
    out = np.empty(batch.shape, dtype=np.float64)
    for i, img in enumerate(_to_uint8(batch)):
        buffer = io.BytesIO()
        # A one-channel colour image is encoded as grey (Pillow has no (H, W, 1) mode).
        Image.fromarray(img[..., 0] if img.ndim == 3 and img.shape[-1] == 1 else img).save(
            buffer, format="JPEG", quality=int(quality)
        )
        buffer.seek(0)
        with Image.open(buffer) as decoded:
            out[i] = np.asarray(decoded, dtype=np.float64).reshape(out.shape[1:]) / 255.0
    return out


# ------------------------------------------------------------------------------------------
# corruptions
# ------------------------------------------------------------------------------------------
def gaussian_noise(images, severity, rng):
    """Additive Gaussian noise, ``x + N(0, c)`` clipped, ``c`` from 0.08 (1) to 0.38 (5).

    Parameters
    ----------
    images : ndarray of shape (H, W), (n, H, W) or (n, H, W, C)
        Floats in [0, 1]; a colour batch has its channels last (C = 1 or 3).
    severity : int
        1 (mildest) .. 5 (strongest).
    rng : numpy.random.Generator
        Source of every random draw.

    Returns
    -------
    ndarray of float32, same shape as ``images``, values in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> out = gaussian_noise(np.full((4, 4), 0.5), 2, np.random.default_rng(0))
    >>> out.shape, out.dtype
    ((4, 4), dtype('float32'))
    """
    x, single, sigma = _prepare(images, severity, rng, "gaussian_noise")
    return finish_batch(x + rng.normal(scale=sigma, size=x.shape), single)


def shot_noise(images, severity, rng):
    """Photon (Poisson) noise, ``Poisson(c x) / c``, ``c`` from 60 (1) down to 3 (5) photons.

    Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, photons = _prepare(images, severity, rng, "shot_noise")
    return finish_batch(rng.poisson(x * photons) / photons, single)


def impulse_noise(images, severity, rng):
    """Salt-and-pepper noise: a share ``c`` of the pixels (0.03 .. 0.27) set to 0 or 1, half each.

    Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, amount = _prepare(images, severity, rng, "impulse_noise")
    hit = rng.random(x.shape) < amount
    salt = rng.random(x.shape) < 0.5
    return finish_batch(np.where(hit, salt.astype(np.float64), x), single)


def _disk_kernel(radius: float, alias_sigma: float) -> np.ndarray:
    """ImageNet-C's anti-aliased disk: an aliased disk smoothed by a 3x3 Gaussian, sum 1."""
    # scipy.ndimage costs 0.5 s to import: only when an image is perturbed
    from scipy import ndimage

    half = int(np.ceil(radius)) + 1
    grid = np.arange(-half, half + 1)
    xx, yy = np.meshgrid(grid, grid)
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float64)
    disk /= disk.sum()
    g = np.exp(-(np.arange(-1, 2) ** 2) / (2.0 * alias_sigma**2))
    g /= g.sum()
    # The grid extends one pixel past the disk, so the smoothing never reaches its border.
    return ndimage.convolve(disk, np.outer(g, g), mode="constant")


def defocus_blur(images, severity, rng):
    """Defocus: convolution with an anti-aliased disk (radius 0.3 .. 1.5 px, anti-alias 0.4 .. 0.1 px).

    Deterministic; ``rng`` is accepted for the common signature and not used.
    Same parameters and return value as :func:`gaussian_noise`.
    """
    from scipy import ndimage

    x, single, (radius, alias_sigma) = _prepare(images, severity, rng, "defocus_blur")
    kernel = _disk_kernel(radius, alias_sigma)
    kernel = kernel[None] if x.ndim == 3 else kernel[None, :, :, None]
    return finish_batch(ndimage.convolve(x, kernel, mode="mirror"), single)


def motion_blur(images, severity, rng):
    """Camera-shake streak: a one-sided Gaussian-weighted line blur at a random angle in [-45, 45] deg.

    As ImageMagick's ``MotionBlurImage`` used by ImageNet-C: taps at distances
    ``0, 1, ..., 2 ceil(radius)`` pixels along the angle, weights ``exp(-d^2 / (2 sigma^2))``;
    off-grid taps are read by bilinear interpolation, edges repeat. One angle per image.
    Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, (radius, sigma) = _prepare(images, severity, rng, "motion_blur")
    n = x.shape[0]
    angle = _motion_angles(n, rng)
    if x.ndim == 4:  # colour: every channel of an image streaked along the same angle, channels as images
        _, h, w, c = x.shape
        planes = x.transpose(0, 3, 1, 2).reshape(n * c, h, w)
        out = _streak(planes, np.repeat(angle, c), radius, sigma).reshape(n, c, h, w).transpose(0, 2, 3, 1)
        return finish_batch(out, single)
    return finish_batch(_streak(x, angle, radius, sigma), single)


def _motion_angles(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.deg2rad(rng.uniform(-45.0, 45.0, size=n))


def motion_blur_image(images, index: int, severity, rng) -> np.ndarray:
    """``motion_blur(images, severity, rng)[index]``, streaking that one image only.

    The angles are drawn for the whole batch, as :func:`motion_blur` draws them, and an image's
    streak reads that image only (its taps summed in a fixed order), so this is the same bytes
    at a 1,500th of the work (the Recapture queue shows one image under every probe).

    Parameters
    ----------
    images : ndarray of shape (n, H, W)
        The whole grey batch :func:`motion_blur` would be given, floats in [0, 1].
    index : int
        Position of the image in ``images``.
    severity : int in 1..5
    rng : numpy.random.Generator
        In the state :func:`motion_blur` would be called with.

    Returns
    -------
    ndarray of float32, shape (H, W)
    """
    x, _, (radius, sigma) = _prepare(images, severity, rng, "motion_blur")
    if x.ndim != 3 or not 0 <= int(index) < x.shape[0]:
        raise ValueError(f"`images` must be a grey batch (n, H, W) and `index` in [0, n); got {x.shape}, {index!r}.")
    i = int(index)
    angle = _motion_angles(x.shape[0], rng)
    return finish_batch(_streak(x[i : i + 1], angle[i : i + 1], radius, sigma), False)[0]


def _streak(x: np.ndarray, angle: np.ndarray, radius: float, sigma: float) -> np.ndarray:
    """Motion-blur taps of a grey batch ``(n, H, W)`` along one angle per image.

    Each image's taps read that image only and are summed in a fixed order, so an image
    streaked alone is the same bytes as in any batch (:func:`motion_blur_image`).
    """
    from scipy import ndimage

    n, h, w = x.shape
    dist = np.arange(2 * int(np.ceil(radius)) + 1, dtype=np.float64)
    weights = np.exp(-(dist**2) / (2.0 * sigma**2))
    weights /= weights.sum()
    out = np.empty((n, h, w))
    tap = np.empty((h, w))
    for i in range(n):
        # Each tap reads the image at a constant offset `d (sin, cos)`: a shift. scipy's bilinear
        # shift computes the points, weights and sums `map_coordinates` computes there (byte for
        # byte: tests/imaging/test_probe_equals_twin.py) without reading a coordinate array; the taps
        # are summed as they come, in a fixed order (not a BLAS dot product, whose order follows
        # the batch's size).
        dy, dx = dist * np.sin(angle[i]), dist * np.cos(angle[i])
        for k in range(dist.size):
            ndimage.shift(x[i], (-dy[k], -dx[k]), order=1, mode="nearest", prefilter=False, output=tap)
            if k == 0:
                np.multiply(tap, weights[0], out=out[i])
            else:
                out[i] += tap * weights[k]
    return out


def contrast(images, severity, rng):
    """Contrast loss: ``(x - mean) c + mean`` per image, ``c`` from 0.4 (1) to 0.05 (5).

    Deterministic. Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, factor = _prepare(images, severity, rng, "contrast")
    mean = x.mean(axis=(1, 2), keepdims=True)
    return finish_batch((x - mean) * factor + mean, single)


def brightness(images, severity, rng):
    """Over-exposure: ``x + c`` clipped (the HSV value channel of a grey image), ``c`` 0.1 .. 0.5.

    Deterministic. Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, shift = _prepare(images, severity, rng, "brightness")
    if x.ndim == 4 and x.shape[-1] == 3:
        # HSV with hue and saturation fixed: RGB scales with V = max channel; black (V = 0,
        # saturation 0) turns grey V + c.
        value = x.max(axis=-1, keepdims=True)
        lifted = np.minimum(value + shift, 1.0)
        return finish_batch(np.where(value > 0, x * (lifted / np.where(value > 0, value, 1.0)), lifted), single)
    return finish_batch(x + shift, single)


def _box_matrix(n_out: int, n_in: int) -> np.ndarray:
    """Pillow's ``Image.BOX`` resampling along one axis as an ``(n_out, n_in)`` matrix.

    Pillow evaluates the box filter at input pixel centres: input pixel ``j`` contributes to
    output pixel ``i`` iff ``-0.5 <= (j + 0.5 - c_i) / f < 0.5`` with ``c_i = (i + 0.5) s``,
    ``s = n_in / n_out`` and ``f = max(s, 1)``; weights are normalised per output pixel.
    """
    scale = n_in / n_out
    support = max(scale, 1.0)
    centre = (np.arange(n_out) + 0.5) * scale
    arg = (np.arange(n_in)[None, :] + 0.5 - centre[:, None]) / support
    weights = ((arg >= -0.5) & (arg < 0.5)).astype(np.float64)
    return weights / weights.sum(axis=1, keepdims=True)


def pixelate(images, severity, rng):
    """Pixelation: box-downsample to ``int(c H) x int(c W)`` and box-upsample back (as Pillow BOX).

    ``c`` from 0.6 (1) to 0.25 (5). Deterministic; vectorised as two resampling matrices.
    Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, fraction = _prepare(images, severity, rng, "pixelate")
    h, w = x.shape[1:3]
    sh, sw = max(1, int(h * fraction)), max(1, int(w * fraction))
    rows = _box_matrix(h, sh) @ _box_matrix(sh, h)
    cols = _box_matrix(w, sw) @ _box_matrix(sw, w)
    if x.ndim == 4:  # colour: two matrix products per channel (einsum's plain loop is O(H^2 W^2))
        return finish_batch(np.matmul(np.matmul(rows, x.transpose(0, 3, 1, 2)), cols.T).transpose(0, 2, 3, 1), single)
    return finish_batch(np.einsum("ij,njk,lk->nil", rows, x, cols), single)


def jpeg_compression(images, severity, rng):
    """JPEG round trip of the 8-bit image at quality 25 (1) .. 7 (5) (Pillow / libjpeg).

    Deterministic. Same parameters and return value as :func:`gaussian_noise`.
    """
    x, single, quality = _prepare(images, severity, rng, "jpeg_compression")
    return finish_batch(jpeg_roundtrip(x, quality), single)


CORRUPTIONS: Mapping[str, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]] = MappingProxyType(
    {
        "gaussian_noise": gaussian_noise,
        "shot_noise": shot_noise,
        "impulse_noise": impulse_noise,
        "defocus_blur": defocus_blur,
        "motion_blur": motion_blur,
        "contrast": contrast,
        "brightness": brightness,
        "pixelate": pixelate,
        "jpeg_compression": jpeg_compression,
    }
)
"""The nine corruption types by name, in display order."""


# ------------------------------------------------------------------------------------------
# natural transforms
# ------------------------------------------------------------------------------------------
def _affine(x: np.ndarray, matrix: np.ndarray, *, shift=(0.0, 0.0), cval: float | None = None):
    """Resample every image at ``matrix @ (p - centre) + centre - shift`` (output -> input).

    Bilinear; outside the image ``mirror`` (torchvision's "reflect") unless ``cval`` is given.
    """
    from scipy import ndimage

    if x.ndim == 4:  # colour: each channel alike (a 4-D bilinear resampling would cost 4x the taps)
        return _by_plane(x, lambda planes: _affine(planes, matrix, shift=shift, cval=cval))
    _, h, w = x.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    offset = centre - matrix @ centre - np.asarray(shift, dtype=np.float64)
    mode, fill = ("mirror", 0.0) if cval is None else ("constant", cval)
    # One image at a time in 2-D (bilinear, 4 taps a point): the former 3-D call over the batch
    # read the image index as an exact coordinate whose second tap has weight 0, so the sums
    # are the same and half the reads go.
    out = np.empty(x.shape, dtype=x.dtype)
    for i in range(x.shape[0]):
        ndimage.affine_transform(x[i], matrix, offset=offset, order=1, mode=mode, cval=fill, output=out[i])
    return out


def _rotation(degrees: float) -> np.ndarray:
    t = np.deg2rad(degrees)
    # (row, col) coordinates: a positive angle turns the content counter-clockwise on screen.
    return np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])


def _by_plane(x: np.ndarray, f) -> np.ndarray:
    """``f`` of a colour batch ``(n, H, W, C)`` given as its contiguous grey planes ``(n C, H, W)``."""
    n, h, w, c = x.shape
    planes = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(n * c, h, w)
    return f(planes).reshape(n, c, h, w).transpose(0, 2, 3, 1)


def _shift(fy: float, fx: float):
    def transform(x):
        from scipy import ndimage

        if x.ndim == 4:
            return _by_plane(x, transform)
        h, w = x.shape[1:3]
        # `_affine(x, identity, shift=...)`: the same points, weights and sums (byte for byte:
        # tests/imaging/test_probe_equals_twin.py) by scipy's shift, which skips the matrix product.
        out = np.empty(x.shape, dtype=x.dtype)
        for i in range(x.shape[0]):
            ndimage.shift(x[i], (fy * h, fx * w), order=1, mode="mirror", prefilter=False, output=out[i])
        return out

    return transform


def _zoom(factor: float, *, flip: bool = False):
    def transform(x):
        out = _affine(x, np.eye(2) / factor)
        return out[:, :, ::-1] if flip else out

    return transform


def _rotate(degrees: float):
    return lambda x: _affine(x, _rotation(degrees))


def _gamma(g: float):
    return lambda x: x**g


NATURAL_TRANSFORMS: Mapping[str, Callable[[np.ndarray], np.ndarray]] = MappingProxyType(
    {
        "hflip": lambda x: x[:, :, ::-1],
        "shift_x+2%": _shift(0.0, 0.02),
        "shift_x-2%": _shift(0.0, -0.02),
        "shift_x+5%": _shift(0.0, 0.05),
        "shift_x-5%": _shift(0.0, -0.05),
        "shift_y+2%": _shift(0.02, 0.0),
        "shift_y-2%": _shift(-0.02, 0.0),
        "shift_y+5%": _shift(0.05, 0.0),
        "shift_y-5%": _shift(-0.05, 0.0),
        "zoom_1.1": _zoom(1.1),
        "zoom_1.2": _zoom(1.2),
        "rotate+5": _rotate(5.0),
        "rotate-5": _rotate(-5.0),
        "rotate+10": _rotate(10.0),
        "rotate-10": _rotate(-10.0),
        "gamma_0.8": _gamma(0.8),
        "gamma_0.9": _gamma(0.9),
        "hflip_zoom_1.1": _zoom(1.1, flip=True),
    }
)
"""The fixed set of 18 natural transforms of 001_... Section 5.3 (batch ``(n, H, W)`` in, out).

Shifts are fractions of the side (sub-pixel at 32 px, bilinear), zoom is a central crop
resized back, rotations are about the centre; borders are mirrored. Use
:func:`natural_transform` for validated access."""


def natural_transform(images, name: str) -> np.ndarray:
    """Apply the natural transform ``name`` (a key of :data:`NATURAL_TRANSFORMS`).

    Parameters
    ----------
    images : ndarray of shape (H, W), (n, H, W) or (n, H, W, C)
        Floats in [0, 1].
    name : str
        Transform name, e.g. ``"rotate+5"`` or ``"shift_x-2%"``.

    Returns
    -------
    ndarray of float32, same shape as ``images``.

    Examples
    --------
    >>> import numpy as np
    >>> natural_transform(np.array([[0.0, 1.0]]), "hflip")
    array([[1., 0.]], dtype=float32)
    """
    if name not in NATURAL_TRANSFORMS:
        raise ValueError(f"`name` must be one of {sorted(NATURAL_TRANSFORMS)}; got {name!r}.")
    batch, single = batch_iv(images, colour=True)
    return finish_batch(NATURAL_TRANSFORMS[name](batch), single)


# ------------------------------------------------------------------------------------------
# simulated print-and-recapture
# ------------------------------------------------------------------------------------------
RECAPTURE_LEVELS: Mapping[str, Mapping[str, tuple]] = MappingProxyType(
    {
        # Printing the image: ink spreads into the paper (Gaussian spread of the ink density, px),
        # dot gain darkens it (density multiplied by 1 + gain), the paper has a low-frequency
        # texture (std of the grey-level field).
        "print": MappingProxyType(
            {
                "ink_spread": (0.5, 1.0, 1.6),
                "dot_gain": (0.2, 0.5, 1.0),
                "paper_texture": (0.03, 0.06, 0.10),
            }
        ),
        # Photographing the print: each page corner moves by up to `corner_jitter` px
        # (perspective), the page turns by up to `rotation` degrees, the lens is out of focus
        # by a Gaussian of `defocus` px.
        "geometry": MappingProxyType(
            {
                "corner_jitter": (1.0, 2.5, 5.0),
                "rotation": (4.0, 10.0, 24.0),
                "defocus": (0.5, 1.0, 1.7),
            }
        ),
        # Exposure and sensor: overall light `gain`, a linear shading ramp losing up to
        # `shading` of the light across the page, signal-dependent sensor noise with variance
        # `photon_noise * x + read_noise**2`, then an 8-bit JPEG at `jpeg_quality`.
        "exposure": MappingProxyType(
            {
                "gain": (0.85, 0.65, 0.35),
                "shading": (0.2, 0.4, 0.7),
                "photon_noise": (0.004, 0.015, 0.04),
                "read_noise": (0.02, 0.04, 0.08),
                "jpeg_quality": (75, 45, 20),
            }
        ),
    }
)
"""Parameters of the simulated recapture stages at levels 1, 2, 3 (mild .. harsh).

The levels were set so that, on the demo pool, the 27 conditions span all three screening
tiers of SPEC B.5 (mean development accuracy from about 0.8 down to about 0.15)."""


@dataclass(frozen=True)
class RecaptureCondition:
    """One simulated print-and-recapture condition: a level (1..3) for each stage.

    Attributes
    ----------
    print_level, geometry_level, exposure_level : int
        Level of the print, capture-geometry and exposure stage (1 = mild, 3 = harsh);
        parameters in :data:`RECAPTURE_LEVELS`.
    """

    print_level: int
    geometry_level: int
    exposure_level: int

    def __post_init__(self):
        for field in ("print_level", "geometry_level", "exposure_level"):
            value = getattr(self, field)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 3:
                raise ValueError(f"`{field}` must be an int in 1..3; got {value!r}.")

    @property
    def name(self) -> str:
        """Condition name, e.g. ``"sim-recapture p1 g2 e3"`` (always marked as simulated)."""
        return f"sim-recapture p{self.print_level} g{self.geometry_level} e{self.exposure_level}"

    def parameters(self) -> dict[str, float]:
        """All stage parameters of this condition, flattened (for manifests and tables)."""
        out: dict[str, float] = {}
        for stage, level in (
            ("print", self.print_level),
            ("geometry", self.geometry_level),
            ("exposure", self.exposure_level),
        ):
            for key, values in RECAPTURE_LEVELS[stage].items():
                out[key] = values[level - 1]
        return out


def recapture_grid() -> tuple[RecaptureCondition, ...]:
    """The 27 simulated conditions, print level slowest, exposure level fastest.

    Examples
    --------
    >>> grid = recapture_grid()
    >>> len(grid), grid[0].name, grid[-1].name
    (27, 'sim-recapture p1 g1 e1', 'sim-recapture p3 g3 e3')
    """
    return tuple(RecaptureCondition(p, g, e) for p in (1, 2, 3) for g in (1, 2, 3) for e in (1, 2, 3))


def homographies(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Batched 3x3 homographies mapping ``src`` to ``dst`` corner sets, both ``(n, 4, 2)``."""
    n = src.shape[0]
    a = np.zeros((n, 8, 8))
    b = np.zeros((n, 8))
    x, y = src[..., 0], src[..., 1]
    u, v = dst[..., 0], dst[..., 1]
    a[:, 0::2, 0], a[:, 0::2, 1], a[:, 0::2, 2] = x, y, 1.0
    a[:, 0::2, 6], a[:, 0::2, 7] = -x * u, -y * u
    a[:, 1::2, 3], a[:, 1::2, 4], a[:, 1::2, 5] = x, y, 1.0
    a[:, 1::2, 6], a[:, 1::2, 7] = -x * v, -y * v
    b[:, 0::2], b[:, 1::2] = u, v
    h = np.linalg.solve(a, b[..., None])[..., 0]
    return np.concatenate([h, np.ones((n, 1))], axis=1).reshape(n, 3, 3)


def _smooth_field(rng: np.random.Generator, shape, sigma: float) -> np.ndarray:
    """Low-frequency random field with zero mean and unit standard deviation per image."""
    from scipy import ndimage

    field = ndimage.gaussian_filter(rng.normal(size=shape), sigma=(0, sigma, sigma), mode="wrap")
    field -= field.mean(axis=(1, 2), keepdims=True)
    return field / field.std(axis=(1, 2), keepdims=True)


def simulate_recapture(images, condition: RecaptureCondition, rng) -> np.ndarray:
    """Simulate printing ``images`` and photographing the prints under ``condition``.

    Stages, in order (parameters in :data:`RECAPTURE_LEVELS`):

    1. print: ink density ``1 - x`` spread by a Gaussian, multiplied by ``1 + dot_gain``,
       plus a smooth paper texture;
    2. geometry: a random perspective warp (each page corner moves uniformly within
       ``+-corner_jitter`` px, the page turns uniformly within ``+-rotation`` deg; white paper
       beyond the page), then Gaussian defocus;
    3. exposure: multiplied by ``gain`` and a linear shading ramp in a random direction,
       signal-dependent Gaussian sensor noise, 8-bit quantisation and JPEG.

    A **simulation** standing in for physical recaptures; it reproduces no real device.

    Parameters
    ----------
    images : ndarray of shape (H, W) or (n, H, W)
        Floats in [0, 1], 1 = white paper.
    condition : RecaptureCondition
        Levels of the three stages; see :func:`recapture_grid`.
    rng : numpy.random.Generator
        Source of every random draw (per image: warp, rotation, shading direction, noise).

    Returns
    -------
    ndarray of float32, same shape as ``images``, values on the 8-bit grid ``k / 255``.
    """
    from scipy import ndimage

    if not isinstance(condition, RecaptureCondition):
        raise ValueError(f"`condition` must be a RecaptureCondition; got {type(condition).__name__}.")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy Generator (see core._rng.as_generator); got {type(rng).__name__}.")
    x, single = batch_iv(images)
    p = condition.parameters()
    n, h, w = x.shape

    # print
    ink = ndimage.gaussian_filter(1.0 - x, sigma=(0, p["ink_spread"], p["ink_spread"]), mode="nearest")
    page = 1.0 - np.clip(ink * (1.0 + p["dot_gain"]), 0.0, 1.0)
    page = np.clip(page + p["paper_texture"] * _smooth_field(rng, x.shape, 2.0), 0.0, 1.0)

    # geometry: output pixel -> page coordinates through a per-image homography
    corners = np.array([[0.0, 0.0], [w - 1.0, 0.0], [w - 1.0, h - 1.0], [0.0, h - 1.0]])
    centre = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    theta = np.deg2rad(rng.uniform(-p["rotation"], p["rotation"], size=n))
    rot = np.stack([np.stack([np.cos(theta), -np.sin(theta)], -1), np.stack([np.sin(theta), np.cos(theta)], -1)], -2)
    moved = np.einsum("nij,kj->nki", rot, corners - centre) + centre
    moved += rng.uniform(-p["corner_jitter"], p["corner_jitter"], size=(n, 4, 2))
    to_page = homographies(np.broadcast_to(moved, (n, 4, 2)), np.broadcast_to(corners, (n, 4, 2)))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    pts = np.stack([xx.ravel(), yy.ravel(), np.ones(h * w)])
    mapped = to_page @ pts
    src_x = (mapped[:, 0] / mapped[:, 2]).reshape(n, h, w)
    src_y = (mapped[:, 1] / mapped[:, 2]).reshape(n, h, w)
    index = np.broadcast_to(np.arange(n, dtype=np.float64)[:, None, None], (n, h, w))
    shot = ndimage.map_coordinates(page, np.stack([index, src_y, src_x]), order=1, mode="constant", cval=1.0)
    shot = ndimage.gaussian_filter(shot, sigma=(0, p["defocus"], p["defocus"]), mode="nearest")

    # exposure
    direction = rng.uniform(0.0, 2.0 * np.pi, size=n)
    u = (xx / (w - 1) - 0.5)[None] * np.cos(direction)[:, None, None] + (yy / (h - 1) - 0.5)[None] * np.sin(direction)[
        :, None, None
    ]
    ramp = (u - u.min(axis=(1, 2), keepdims=True)) / np.ptp(u, axis=(1, 2), keepdims=True)
    light = p["gain"] * (1.0 - p["shading"] * ramp)
    signal = np.clip(shot * light, 0.0, 1.0)
    noisy = signal + rng.normal(size=x.shape) * np.sqrt(p["photon_noise"] * signal + p["read_noise"] ** 2)
    return finish_batch(jpeg_roundtrip(noisy, p["jpeg_quality"]), single)
