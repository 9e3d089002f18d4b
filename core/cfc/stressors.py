"""Held-out label channel: stochastic stressors and brittle labels (SPEC A.5).

The label channel decides which high-confidence test predictions are *brittle*; the
certificate (score channel) is then judged on how well it ranks them. To keep that test
non-circular the two channels are separated by construction:

- the stressors here (random group masking, within-group coordinate dropout, bounded additive
  noise) are stochastic and are not the deterministic removal / attenuation operators of the
  certificate;
- :func:`brittle_labels` and :func:`naturalistic_labels` take only the model, the inputs, the
  grouping and the baseline: no certificate, FDS or ranking ever reaches them;
- the label channel draws from its own seed stream, never shared with other stochastic parts
  of an audit.

For a stressed input ``x'`` and the original prediction ``y = ŷ(x)``::

    κ(x') = max(0, (m(x) − m_y(x')) / (|m(x)| + 1e-8))
    b(x)  = 1[ p̂(x) ≥ τ_p  ∧  ∃ draw: ŷ(x') ≠ y  ∨  κ(x') ≥ τ_κ ]

with the margins ``m`` of SPEC A.2 (pseudo-logits of the clipped, renormalised probabilities).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

from core._rng import as_generator
from core.cfc.operators import GroupIndex, check_baseline, check_features
from core.cfc.scores import check_proba, class_margin, confidence_and_prediction, predicted_class
from core.validation import check_batch_size, check_unit_interval

__all__ = [
    "BrittleLabels",
    "LabelChannel",
    "StressorName",
    "brittle_labels",
    "bounded_noise",
    "dropout_coordinates",
    "mask_groups",
    "naturalistic_labels",
]

StressorName = Literal["group_masking", "within_group_dropout", "bounded_noise"]
_STRESSORS: tuple[str, ...] = get_args(StressorName)
_EPS = 1e-8


# --------------------------------------------------------------------------------------------
# The declared channel
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelChannel:
    """Declaration of the held-out label channel (serialised with every audit).

    SPEC A.5 asks for "a small declared severity grid and H draws" without fixing them. The
    defaults (ρ ∈ {0.1, 0.2} for masking and dropout, σ ∈ {0.1, 0.25}, H = 3, i.e. 18 stressed
    copies per sample) label 3–53 % of the high-confidence predictions brittle on the bundled
    datasets, so Capture@q stays informative; a harsher grid (ρ up to 0.3, σ up to 0.5, H = 5)
    labels up to 77 % of them brittle (docs/audit.md, *Results*).

    Attributes
    ----------
    stressors : tuple of {"group_masking", "within_group_dropout", "bounded_noise"}
        Stressor families used, in this order.
    masking_rates : tuple of float
        Severity grid of ``group_masking``: each group is replaced by the baseline with
        probability ρ, independently per sample and draw.
    dropout_rates : tuple of float
        Severity grid of ``within_group_dropout``: each transformed coordinate is reset to the
        baseline with probability ρ.
    noise_scales : tuple of float
        Severity grid of ``bounded_noise``: numeric coordinates get ``U(−σ, σ)`` times their
        training standard deviation.
    n_draws : int
        Draws ``H`` per (stressor, severity).
    tau_p : float
        High-confidence threshold on ``p̂``; only samples with ``p̂ ≥ τ_p`` can be brittle.
    tau_kappa : float
        Margin-collapse threshold ``τ_κ``.
    """

    stressors: tuple[StressorName, ...] = _STRESSORS  # type: ignore[assignment]
    masking_rates: tuple[float, ...] = (0.1, 0.2)
    dropout_rates: tuple[float, ...] = (0.1, 0.2)
    noise_scales: tuple[float, ...] = (0.1, 0.25)
    n_draws: int = 3
    tau_p: float = 0.90
    tau_kappa: float = 0.50

    def __post_init__(self) -> None:
        stressors = tuple(self.stressors)
        if not stressors:
            raise ValueError("`stressors` must name at least one stressor; got an empty tuple.")
        for name in stressors:
            if name not in _STRESSORS:
                raise ValueError(f"`stressors` entries must be one of {_STRESSORS}; got {name!r}.")
        if len(set(stressors)) != len(stressors):
            raise ValueError(f"`stressors` must not repeat a stressor; got {stressors}.")
        object.__setattr__(self, "stressors", stressors)
        for field, high in (("masking_rates", 1.0), ("dropout_rates", 1.0), ("noise_scales", np.inf)):
            grid = tuple(float(v) for v in getattr(self, field))
            if not grid or any(not (0.0 < v <= high) for v in grid):
                raise ValueError(f"`{field}` must be a non-empty tuple of values in (0, {high}]; got {grid}.")
            object.__setattr__(self, field, grid)
        if isinstance(self.n_draws, bool) or not isinstance(self.n_draws, (int, np.integer)) or self.n_draws < 1:
            raise ValueError(f"`n_draws` must be a positive int; got {self.n_draws!r}.")
        object.__setattr__(self, "tau_p", check_unit_interval(self.tau_p, "tau_p"))
        if not self.tau_kappa > 0.0:
            raise ValueError(f"`tau_kappa` must be positive; got {self.tau_kappa!r}.")

    @property
    def settings(self) -> tuple[tuple[str, float], ...]:
        """Every ``(stressor, severity)`` pair, in declaration order."""
        grids = {
            "group_masking": self.masking_rates,
            "within_group_dropout": self.dropout_rates,
            "bounded_noise": self.noise_scales,
        }
        return tuple((name, level) for name in self.stressors for level in grids[name])

    def to_dict(self) -> dict:
        """JSON-ready dictionary of the declaration."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True, kw_only=True)
class BrittleLabels:
    """Held-out brittle labels of a set of samples.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), bool
        ``b(x)``: high confidence and flipped or collapsed (``κ ≥ τ_κ``) under some draw.
    high_confidence : ndarray of shape (n_samples,), bool
        ``p̂(x) ≥ τ_p``.
    confidence : ndarray of shape (n_samples,)
        ``p̂(x)`` from the clipped, renormalised probabilities.
    prediction : ndarray of shape (n_samples,), int
        ``ŷ(x)`` (ties to the lowest class index).
    flip_share : ndarray of shape (n_samples,)
        Share of all stressed draws whose prediction differs from ``ŷ(x)``.
    max_collapse : ndarray of shape (n_samples,)
        Largest ``κ`` over all draws.
    hits : ndarray of shape (n_samples, n_settings), bool
        Whether some draw of setting ``j`` flipped or collapsed the sample (regardless of
        confidence); ``labels = high_confidence & hits.any(axis=1)``.
    settings : tuple of (str, float)
        The ``(stressor, severity)`` of each column of ``hits``.
    tau_p, tau_kappa : float
        Thresholds used.
    n_forward : int
        Stressed rows sent to the model.
    """

    labels: np.ndarray
    high_confidence: np.ndarray
    confidence: np.ndarray
    prediction: np.ndarray
    flip_share: np.ndarray
    max_collapse: np.ndarray
    hits: np.ndarray
    settings: tuple[tuple[str, float], ...]
    tau_p: float
    tau_kappa: float
    n_forward: int


# --------------------------------------------------------------------------------------------
# Stressors (vectorised over samples)
# --------------------------------------------------------------------------------------------
def _inputs_iv(
    X: ArrayLike, groups: Mapping[str, Sequence[int]] | None, baseline: ArrayLike
) -> tuple[np.ndarray, GroupIndex | None, np.ndarray]:
    A, _ = check_features(X)
    gi = None if groups is None else GroupIndex.from_groups(groups, A.shape[1])
    return A, gi, check_baseline(baseline, A.shape[1])


def _rate_iv(rate: float, name: str) -> float:
    if not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"`{name}` must be a probability in [0, 1]; got {rate!r}.")
    return float(rate)


def _mask_groups(X, gi, baseline, rate, rng):
    removed = rng.random((X.shape[0], gi.n_groups)) < rate
    return np.where(gi.column_mask(removed), baseline, X)


def _dropout(X, baseline, rate, rng):
    return np.where(rng.random(X.shape) < rate, baseline, X)


def _noise(X, noise_scale, sigma, rng):
    return X + rng.uniform(-sigma, sigma, X.shape) * noise_scale


def mask_groups(
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    rate: float,
    *,
    seed: int | np.random.Generator,
) -> np.ndarray:
    """Random group masking: each group of each sample is replaced by the baseline with probability ``rate``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Transformed inputs.
    groups : mapping str -> sequence of int
        Evidence groups, a partition of ``range(n_features)``.
    baseline : array-like of shape (n_features,)
        Replacement values ``x̄``.
    rate : float
        Masking probability ρ in [0, 1].
    seed : int or numpy.random.Generator
        Randomness (see :func:`core._rng.as_generator`).

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    X, gi, baseline = _inputs_iv(X, groups, baseline)
    return _mask_groups(X, gi, baseline, _rate_iv(rate, "rate"), as_generator(seed))


def dropout_coordinates(
    X: ArrayLike, baseline: ArrayLike, rate: float, *, seed: int | np.random.Generator
) -> np.ndarray:
    """Within-group dropout: each transformed coordinate is reset to the baseline with probability ``rate``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    baseline : array-like of shape (n_features,)
    rate : float
        Dropout probability ρ in [0, 1].
    seed : int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    X, _, baseline = _inputs_iv(X, None, baseline)
    return _dropout(X, baseline, _rate_iv(rate, "rate"), as_generator(seed))


def bounded_noise(X: ArrayLike, noise_scale: ArrayLike, sigma: float, *, seed: int | np.random.Generator) -> np.ndarray:
    """Bounded additive noise: ``x + U(−σ, σ) · noise_scale`` coordinate-wise.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    noise_scale : array-like of shape (n_features,)
        Training standard deviation of each *numeric* transformed coordinate; 0 on coordinates
        that must not be perturbed (one-hot columns, missing indicators).
    sigma : float
        Half-width σ ≥ 0 in training standard deviations.
    seed : int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    X, _ = check_features(X)
    scale = _noise_scale_iv(noise_scale, X.shape[1])
    if not float(sigma) >= 0.0:
        raise ValueError(f"`sigma` must be non-negative; got {sigma!r}.")
    return _noise(X, scale, float(sigma), as_generator(seed))


def _noise_scale_iv(noise_scale: ArrayLike, d: int) -> np.ndarray:
    scale = np.asarray(noise_scale, dtype=float)
    if scale.shape != (d,):
        raise ValueError(f"`noise_scale` must have shape ({d},); got {scale.shape}.")
    if not np.isfinite(scale).all() or (scale < 0).any():
        raise ValueError("`noise_scale` must be finite and non-negative (0 on non-numeric coordinates).")
    return scale


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------
def _batched(
    predict_proba: Callable, blocks: Iterator[tuple[int, np.ndarray]], n_classes: int, batch_size: int
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Predict stacked rows of many blocks with calls of about ``batch_size`` rows.

    Yields ``(block, row_start, proba)`` for consecutive row ranges of each block.
    """
    pending: list[tuple[int, int, np.ndarray]] = []
    rows = 0

    def flush():
        Z = np.concatenate([x for _, _, x in pending])
        P = check_proba(predict_proba(Z), Z.shape[0], n_classes=n_classes)
        out, at = [], 0
        for block, start, x in pending:
            out.append((block, start, P[at : at + x.shape[0]]))
            at += x.shape[0]
        return out

    for block, X in blocks:
        for start in range(0, X.shape[0], batch_size):
            chunk = X[start : start + batch_size]
            pending.append((block, start, chunk))
            rows += chunk.shape[0]
            if rows >= batch_size:
                yield from flush()
                pending, rows = [], 0
    if pending:
        yield from flush()


def _labels_from_blocks(
    predict_proba: Callable,
    X: np.ndarray,
    blocks: Iterator[tuple[int, np.ndarray]],
    block_setting: np.ndarray,
    n_settings: int,
    settings: tuple[tuple[str, float], ...],
    *,
    tau_p: float,
    tau_kappa: float,
    batch_size: int,
) -> BrittleLabels:
    P0 = check_proba(predict_proba(X), X.shape[0])
    confidence, prediction = confidence_and_prediction(P0)
    margin = class_margin(P0, prediction)
    n = X.shape[0]
    hits = np.zeros((n, n_settings), dtype=bool)
    flips = np.zeros(n)
    max_collapse = np.zeros(n)
    n_forward = 0
    for block, start, P in _batched(predict_proba, blocks, P0.shape[1], batch_size):
        rows = slice(start, start + P.shape[0])
        y = prediction[rows]
        flipped = predicted_class(P) != y
        kappa = np.maximum(0.0, (margin[rows] - class_margin(P, y)) / (np.abs(margin[rows]) + _EPS))
        hits[rows, block_setting[block]] |= flipped | (kappa >= tau_kappa)
        flips[rows] += flipped
        np.maximum(max_collapse[rows], kappa, out=max_collapse[rows])
        n_forward += P.shape[0]
    high = confidence >= tau_p
    return BrittleLabels(
        labels=high & hits.any(axis=1),
        high_confidence=high,
        confidence=confidence,
        prediction=prediction,
        flip_share=flips / max(1, block_setting.size),
        max_collapse=max_collapse,
        hits=hits,
        settings=settings,
        tau_p=float(tau_p),
        tau_kappa=float(tau_kappa),
        n_forward=n_forward,
    )


def brittle_labels(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    *,
    channel: LabelChannel | None = None,
    noise_scale: ArrayLike | None = None,
    seed: int | np.random.Generator,
    batch_size: int = 65536,
) -> BrittleLabels:
    """Held-out brittle labels from the stochastic label channel (SPEC A.5).

    Every ``(stressor, severity)`` setting of ``channel`` is drawn ``channel.n_draws`` times for
    every sample; all stressed rows are sent to the model in stacked batches.

    Parameters
    ----------
    predict_proba : callable
        ``(m, n_features) -> (m, n_classes)`` probabilities on the transformed space.
    X : array-like of shape (n_samples, n_features)
        Transformed inputs to label (typically the test split).
    groups : mapping str -> sequence of int
        Evidence groups partitioning the transformed columns.
    baseline : array-like of shape (n_features,)
        Replacement values for masking and dropout.
    channel : LabelChannel, optional
        The declared channel; ``LabelChannel()`` by default.
    noise_scale : array-like of shape (n_features,), optional
        Training standard deviation of numeric coordinates, 0 elsewhere. Required when the
        channel uses ``bounded_noise``.
    seed : int or numpy.random.Generator
        The label channel's own seed stream. Setting ``j``, draw ``h`` uses the
        ``(j·H + h)``-th child of ``as_generator(seed)``, so results do not depend on
        ``batch_size``.
    batch_size : int, default=65536
        Rows per model call.

    Returns
    -------
    BrittleLabels
    """
    X, gi, baseline = _inputs_iv(X, groups, baseline)
    channel = LabelChannel() if channel is None else channel
    if not isinstance(channel, LabelChannel):
        raise ValueError(f"`channel` must be a LabelChannel; got {type(channel).__name__}.")
    batch_size = check_batch_size(batch_size)
    if "bounded_noise" in channel.stressors:
        if noise_scale is None:
            raise ValueError("`noise_scale` is required when the label channel uses 'bounded_noise'.")
        scale = _noise_scale_iv(noise_scale, X.shape[1])
    settings = channel.settings
    H = channel.n_draws
    streams = as_generator(seed).spawn(len(settings) * H)
    block_setting = np.repeat(np.arange(len(settings)), H)

    def blocks():
        for b, (j, rng) in enumerate(zip(block_setting, streams)):
            name, level = settings[j]
            if name == "group_masking":
                yield b, _mask_groups(X, gi, baseline, level, rng)
            elif name == "within_group_dropout":
                yield b, _dropout(X, baseline, level, rng)
            else:
                yield b, _noise(X, scale, level, rng)

    return _labels_from_blocks(
        predict_proba,
        X,
        blocks(),
        block_setting,
        len(settings),
        settings,
        tau_p=channel.tau_p,
        tau_kappa=channel.tau_kappa,
        batch_size=batch_size,
    )


def naturalistic_labels(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    unavailable: Sequence[str],
    *,
    tau_p: float = LabelChannel.tau_p,
    tau_kappa: float = LabelChannel.tau_kappa,
    batch_size: int = 65536,
) -> BrittleLabels:
    """Naturalistic brittle labels: replace the groups that are unavailable in the raw data.

    One deterministic stress event per sample: every group listed in ``unavailable`` (those
    whose raw columns hold missing / unknown / special-code values somewhere in the raw data,
    as detected by preprocessing) is replaced by the baseline at once.

    Parameters
    ----------
    predict_proba, X, groups, baseline
        As in :func:`brittle_labels`.
    unavailable : sequence of str
        Names of the groups to replace; at least one, each a key of ``groups``.
    tau_p, tau_kappa : float
        Thresholds of the brittle rule.
    batch_size : int, default=65536

    Returns
    -------
    BrittleLabels
        With a single setting ``("naturalistic", 1.0)``.
    """
    X, gi, baseline = _inputs_iv(X, groups, baseline)
    unavailable = [unavailable] if isinstance(unavailable, str) else list(unavailable)
    if not unavailable:
        raise ValueError(
            "`unavailable` is empty: the raw data has no group with missing / unknown / special-code values, so there is no naturalistic stress event."
        )
    tau_p = check_unit_interval(tau_p, "tau_p")
    if not tau_kappa > 0.0:
        raise ValueError(f"`tau_kappa` must be positive; got {tau_kappa!r}.")
    stressed = np.where(gi.column_mask(gi.subset(unavailable, what="unavailable")), baseline, X)
    settings = (("naturalistic", 1.0),)
    return _labels_from_blocks(
        predict_proba,
        X,
        iter([(0, stressed)]),
        np.zeros(1, dtype=int),
        1,
        settings,
        tau_p=tau_p,
        tau_kappa=tau_kappa,
        batch_size=check_batch_size(batch_size),
    )
