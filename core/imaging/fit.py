"""Does the model fit the images? The checks ``probe`` and the Recapture page make around a probe run.

Before probing, :func:`image_fit` compares the images as stored with the model's input: a
probe resizes every image (bilinear) to the input's height and width and converts its
channels (grey repeated into RGB, RGB reduced to grey by ITU-R 601 luma). A model exported for
another image size or colour mode still runs, on images it was never trained on, and its
numbers then describe the resampling rather than the model: a 28 x 28 grey Fashion-MNIST test
set fed to a 64 x 64 RGB model is upscaled 2.3 times and coloured grey, and the model is right
on 10.7 % of it. So the check warns (:class:`core.exceptions.ModelFitWarning`) when

* an image's height or width is resampled by more than :data:`MAX_RESAMPLE_FACTOR` (2) up or
  down: beyond 2, most pixels the model sees are interpolated (upscaling) or more than three
  quarters of the stored pixels are averaged away (downscaling); a factor up to 2 is an
  ordinary size mismatch (32 px photos for a 28 px model, a 224 px model given 300 px crops);
* any image's channels are converted (grey -> RGB or RGB -> grey).

After the clean pass, :func:`chance_check` warns when the clean accuracy is **near chance**:
``1 / C`` for ``C`` classes, the accuracy of guessing. "Near" is two stated conditions, either
of which warns:

* the accuracy is within :data:`CHANCE_MARGIN` (0.10) of chance, ``a ≤ 1/C + 0.10`` (on many
  images any accuracy is significantly above chance, yet 0.15 on ten classes is no usable
  model);
* the images do not show it better than guessing: the one-sided binomial test of
  ``H0: every image right with probability 1/C`` does not reject at level
  :data:`CHANCE_ALPHA` (0.01), ``P(Bin(n, 1/C) ≥ correct) > 0.01`` (on few images a high
  accuracy can still be luck: 2 of 2 right on two classes has probability 1/4).

Both checks only warn: the probe still runs and its outputs are written; the warning asks
whether this is the right model for these images.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from core.exceptions import ModelFitWarning

__all__ = [
    "CHANCE_ALPHA",
    "CHANCE_MARGIN",
    "MAX_RESAMPLE_FACTOR",
    "ChanceCheck",
    "ImageFit",
    "chance_check",
    "counted",
    "image_fit",
    "warn_fit",
]

MAX_RESAMPLE_FACTOR = 2.0
"""Largest resampling factor (height or width, up or down) a probe makes without warning."""
CHANCE_MARGIN = 0.10
"""A clean accuracy within this margin of chance (``1 / C``) is near chance."""
CHANCE_ALPHA = 0.01
"""Level of the one-sided binomial test of "no better than guessing"."""


@dataclass(frozen=True, kw_only=True)
class ImageFit:
    """How the images as stored meet the model's input (:func:`image_fit`).

    Attributes
    ----------
    image_size : str
        The stored sizes, width x height (``"28 x 28"``, or ranges when the images differ).
    model_size : str
        The model's input, width x height x channels (``"64 x 64 x 3"``).
    factor : float
        The largest resampling factor of any image's height or width (up or down; 1 = none).
    converted : str or None
        The channel conversion (``"grey -> RGB"``, ``"RGB -> grey"``) and how many images it
        touches, or None.
    messages : tuple of str
        One warning per problem, in plain words; empty when the model fits the images.
    """

    image_size: str
    model_size: str
    factor: float
    converted: str | None
    messages: tuple[str, ...]


def image_fit(images, model_input, *, max_factor: float = MAX_RESAMPLE_FACTOR) -> ImageFit:
    """Compare stored images with a model's input before probing.

    Parameters
    ----------
    images : core.imaging.images.ImageSet
        Its :attr:`~core.imaging.images.ImageSet.shapes` (the sizes as stored) and ``where``.
    model_input : core.imaging.probe.ModelInput
        The model's input (height, width, channels).
    max_factor : float
        Resampling beyond this factor warns (default :data:`MAX_RESAMPLE_FACTOR`).

    Returns
    -------
    ImageFit

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from core.imaging.images import ImageShapes
    >>> grey28 = SimpleNamespace(shapes=ImageShapes.of([(28, 28, 1)] * 3), where="fmnist")
    >>> fit = image_fit(grey28, SimpleNamespace(height=64, width=64, channels=3))
    >>> round(fit.factor, 3), fit.converted
    (2.286, 'grey -> RGB (3 images)')
    >>> print(fit.messages[0])
    fmnist: the images are 28 x 28 pixels and the model's input is 64 x 64 x 3: every image is enlarged 2.29 times, more than 2; the model then sees mostly interpolated pixels.
    """
    if not (isinstance(max_factor, (int, float)) and max_factor >= 1):
        raise ValueError(f"`max_factor` must be a number ≥ 1; got {max_factor!r}.")
    shapes = images.shapes
    h, w, c = int(model_input.height), int(model_input.width), int(model_input.channels)
    up = max(h / shapes.min_height, w / shapes.min_width)
    down = max(shapes.max_height / h, shapes.max_width / w)
    factor = max(up, down, 1.0)
    image_size = shapes.size_text()
    model_size = f"{w} x {h} x {c}"
    lead = f"{images.where}: the images are {image_size} pixels and the model's input is {model_size}"
    same = shapes.min_height == shapes.max_height and shapes.min_width == shapes.max_width
    which = "every image is {} {:.2f} times" if same else "some images are {} up to {:.2f} times"
    messages = []
    if up > max_factor:
        messages.append(
            f"{lead}: {which.format('enlarged', up)}, more than {max_factor:g}; the model then sees mostly "
            "interpolated pixels."
        )
    if down > max_factor:
        messages.append(
            f"{lead}: {which.format('shrunk', down)}, more than {max_factor:g}; most of their detail is averaged "
            "away before the model sees them."
        )
    converted = None
    if c == 3 and shapes.grey:
        converted = f"grey -> RGB ({_images(shapes.grey)})"
        messages.append(
            f"{images.where}: {_images(shapes.grey)} stored in grey and the model's input has 3 channels "
            f"({model_size}): the grey value is repeated in red, green and blue."
        )
    elif c == 1 and shapes.colour:
        converted = f"RGB -> grey ({_images(shapes.colour)})"
        messages.append(
            f"{images.where}: {_images(shapes.colour)} stored in colour and the model's input has 1 channel "
            f"({model_size}): the colours are reduced to grey (luma)."
        )
    if messages:
        messages[-1] += (
            " Is this the right model for these images? Its results may describe the resizing or the "
            "conversion rather than the model."
        )
    return ImageFit(
        image_size=image_size,
        model_size=model_size,
        factor=float(factor),
        converted=converted,
        messages=tuple(messages),
    )


@dataclass(frozen=True, kw_only=True)
class ChanceCheck:
    """Whether a clean accuracy is near chance (:func:`chance_check`).

    Attributes
    ----------
    n_images, n_correct, n_classes : int
    accuracy : float
        ``n_correct / n_images``.
    chance : float
        ``1 / n_classes``.
    p_value : float
        ``P(Bin(n_images, chance) ≥ n_correct)``: how likely guessing does at least as well.
    near_chance : bool
        ``accuracy ≤ chance + margin`` or ``p_value > alpha``.
    message : str or None
        The warning in plain words when near chance, else None.
    """

    n_images: int
    n_correct: int
    n_classes: int
    accuracy: float
    chance: float
    p_value: float
    near_chance: bool
    message: str | None


def chance_check(
    n_correct: int,
    n_images: int,
    n_classes: int,
    *,
    margin: float = CHANCE_MARGIN,
    alpha: float = CHANCE_ALPHA,
) -> ChanceCheck:
    """Is a clean accuracy of ``n_correct / n_images`` on ``n_classes`` classes near chance?

    Near chance: ``accuracy ≤ 1 / n_classes + margin``, or the one-sided binomial test of
    guessing does not reject at ``alpha`` (module docstring).

    Examples
    --------
    >>> check = chance_check(107, 1000, 10)
    >>> check.near_chance, round(check.chance, 2)
    (True, 0.1)
    >>> print(check.message)
    The clean accuracy, 10.7% (107 of 1,000 images), is near chance (10.0% for 10 classes, the accuracy of guessing). Is this the right model for these images?
    >>> chance_check(12, 12, 2).near_chance, chance_check(2, 2, 2).near_chance
    (False, True)
    """
    from scipy.special import bdtrc  # binom.sf's tail; scipy.stats took 0.4-0.7 s to import after a probe

    for name, value in (("n_correct", n_correct), ("n_images", n_images), ("n_classes", n_classes)):
        if isinstance(value, bool) or not float(value).is_integer():
            raise ValueError(f"`{name}` must be an integer; got {value!r}.")
    n_correct, n_images, n_classes = int(n_correct), int(n_images), int(n_classes)
    if n_images < 1 or not 0 <= n_correct <= n_images or n_classes < 2:
        raise ValueError(
            f"expected 0 ≤ n_correct ≤ n_images, n_images ≥ 1 and n_classes ≥ 2; got n_correct={n_correct}, "
            f"n_images={n_images}, n_classes={n_classes}."
        )
    if not 0 <= margin < 1 or not 0 < alpha < 1:
        raise ValueError(f"`margin` must be in [0, 1) and `alpha` in (0, 1); got {margin!r} and {alpha!r}.")
    chance = 1.0 / n_classes
    accuracy = n_correct / n_images
    p_value = float(bdtrc(n_correct - 1, n_images, chance))  # P(X >= n_correct) under guessing
    near = accuracy <= chance + margin or p_value > alpha
    message = None
    if near:
        message = (
            f"The clean accuracy, {accuracy:.1%} ({n_correct:,} of {_images(n_images)}), is near chance "
            f"({chance:.1%} for {n_classes} classes, the accuracy of guessing). Is this the right model for "
            "these images?"
        )
    return ChanceCheck(
        n_images=n_images,
        n_correct=n_correct,
        n_classes=n_classes,
        accuracy=accuracy,
        chance=chance,
        p_value=p_value,
        near_chance=bool(near),
        message=message,
    )


def warn_fit(messages, *, stacklevel: int = 2) -> None:
    """Each message as a :class:`core.exceptions.ModelFitWarning`."""
    for message in messages:
        warnings.warn(message, ModelFitWarning, stacklevel=stacklevel + 1)


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, pluralised by an ``s`` ("these 1 images" read as a bug).

    Examples
    --------
    >>> counted(1, "image"), counted(1200, "image"), counted(0, "probe")
    ('1 image', '1,200 images', '0 probes')
    """
    return f"{int(n):,} {noun}" if int(n) == 1 else f"{int(n):,} {noun}s"


def _images(n: int) -> str:
    return counted(n, "image")
