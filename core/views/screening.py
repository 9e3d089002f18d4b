"""The Recapture queue page: failure coverage of the screening scores by review budget, and
image thumbnails for its tables."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "SIMULATED_SOURCE",
    "SYNTHETIC_SOURCE",
    "CoverageCurves",
    "FailureSource",
    "coverage_by_budget",
    "failure_source",
    "thumbnail_uri",
]

SYNTHETIC_SOURCE = "synthetic"
"""The source of the tool's own corruption probes in paired records (``probe``'s ``records.parquet``
and the demo pool): the very images the scores U, δ, ret and A3 are computed from."""
SIMULATED_SOURCE = "simulated-recapture"
"""The demo pool's simulated print-and-recapture conditions (:mod:`core.imaging.recapture_sim`)."""


@dataclass(frozen=True, kw_only=True)
class FailureSource:
    """What the failures of one source of paired records are, as the Recapture queue names them.

    Attributes
    ----------
    source : str
    usable : bool
        Whether they may judge the screening scores; False for :data:`SYNTHETIC_SOURCE` (circular).
    name : str
        How the page names them: ``"Real failures"`` (a re-capture the user made),
        ``"Simulated re-capture failures"`` (the demo pool's simulation) or ``"Synthetic failures"``.
    reason : str or None
        Why they are left out, when not usable.
    """

    source: str
    usable: bool
    name: str
    reason: str | None


def failure_source(source: str) -> FailureSource:
    """How the failures of paired records of ``source`` may be named and used on the Recapture queue.

    The tool's own corruptions are never called real failures: the scores U, δ, ret and A3 are
    computed from the same corrupted images, so judging them by those failures is circular.

    Examples
    --------
    >>> failure_source("synthetic").usable, failure_source("recapture").name
    (False, 'Real failures')
    >>> failure_source("simulated-recapture").name
    'Simulated re-capture failures'
    """
    source = str(source)
    if source == SYNTHETIC_SOURCE:
        return FailureSource(
            source=source,
            usable=False,
            name="Synthetic failures",
            reason=(
                f"the source '{source}' holds the tool's own corruptions, the very probe images the scores "
                "U, δ, ret and A3 are computed from; judging the scores by them would be circular, so they are "
                "left out."
            ),
        )
    if source == SIMULATED_SOURCE:
        return FailureSource(source=source, usable=True, name="Simulated re-capture failures", reason=None)
    return FailureSource(source=source, usable=True, name="Real failures", reason=None)


@dataclass(frozen=True, kw_only=True)
class CoverageCurves:
    """Failure coverage of every screening score by review budget.

    Attributes
    ----------
    budgets : ndarray of shape (B,)
        Review budgets ``q``, increasing.
    curves : dict of score -> ndarray of shape (B,)
        Share of the failing images inside the top ``q`` of that score (larger = better).
    ceiling : ndarray of shape (B,)
        Mean attainable coverage.
    random : ndarray of shape (B,)
        Mean coverage of a random selection.
    """

    budgets: np.ndarray
    curves: dict[str, np.ndarray]
    ceiling: np.ndarray
    random: np.ndarray


def coverage_by_budget(metrics: pd.DataFrame, *, condition: str | None = None) -> CoverageCurves:
    """Failure-coverage curves from :func:`core.paired.screening.screening_metrics` rows.

    Parameters
    ----------
    metrics : DataFrame
        Rows of one model (any number of conditions, scores and budgets).
    condition : str, optional
        One condition; default: the mean over conditions, every condition weighted equally
        (conditions where no image failed have no coverage and are left out).

    Returns
    -------
    CoverageCurves
    """
    rows = metrics if condition is None else metrics[metrics["condition"] == condition]
    if rows.empty:
        raise ValueError(f"No screening metrics for condition {condition!r}.")
    rows = rows[rows["n_fail"] > 0]
    if rows.empty:
        raise ValueError(
            "No image failed under the chosen condition(s), so failure coverage is undefined; pick a harsher condition."
        )
    mean = rows.groupby(["score", "budget"], sort=False)[["coverage", "ceiling", "random"]].mean().reset_index()
    budgets = np.sort(mean["budget"].unique())
    curves = {
        str(score): part.set_index("budget")["coverage"].reindex(budgets).to_numpy()
        for score, part in mean.groupby("score", sort=False)
    }
    first = mean[mean["score"] == mean["score"].iloc[0]].set_index("budget").reindex(budgets)
    return CoverageCurves(
        budgets=budgets, curves=curves, ceiling=first["ceiling"].to_numpy(), random=first["random"].to_numpy()
    )


def thumbnail_uri(image: np.ndarray, *, scale: int = 2) -> str:
    """A grey-scale ``uint8`` image of shape (H, W) as a PNG data URI (for image table columns)."""
    import base64

    from PIL import Image

    arr = np.asarray(image)
    if arr.ndim != 2 or arr.dtype != np.uint8:
        raise ValueError(f"`image` must be a 2-D uint8 array; got shape {arr.shape} and dtype {arr.dtype}.")
    big = np.kron(arr, np.ones((scale, scale), dtype=np.uint8))  # nearest-neighbour: crisp pixels
    buffer = io.BytesIO()
    Image.fromarray(big, mode="L").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
