"""The Recapture queue page's engine steps: the screening scores and their failure metrics, the
re-test queue, and what the model saw of an image (the demo pool's probe images, an uploaded
model's probe run).

The scores and the queue are :mod:`core.paired.screening`'s, the images :mod:`core.imaging`'s,
re-exported or wrapped here so that the page reaches the engines through the views layer only.
Only that page imports this module (the light coverage curves are :mod:`core.views.screening`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core.exceptions import ModelFitWarning
from core.imaging.demo import render_condition, render_condition_image
from core.imaging.fit import MAX_RESAMPLE_FACTOR, counted, image_fit
from core.imaging.images import png_data_uri
from core.imaging.probe import open_upload, parse_floats, probe_image, run_probes
from core.paired.screening import recapture_queue, risk_column, screening_metrics, screening_scores

if TYPE_CHECKING:
    from core.imaging.demo import DemoImages, DemoPool

__all__ = [
    "MAX_RESAMPLE_FACTOR",
    "ModelFitWarning",
    "counted",
    "defined_scores",
    "demo_condition_images",
    "demo_probe_image",
    "image_fit",
    "open_upload",
    "parse_floats",
    "png_data_uri",
    "probe_image",
    "recapture_queue",
    "run_probes",
    "screening_metrics",
    "screening_scores",
]


def defined_scores(scores: pd.DataFrame, names: Sequence[str]) -> list[str]:
    """The screening scores of ``names`` with at least one defined value in ``scores``, in order
    (an upload without ``prob_*`` columns has no A3, one without transforms no TTA).

    Examples
    --------
    >>> frame = pd.DataFrame({risk_column("U"): [0.1, 0.2], risk_column("A3"): [np.nan, np.nan]})
    >>> defined_scores(frame, ["U", "S", "A3"])
    ['U']
    """
    return [s for s in names if risk_column(s) in scores.columns and scores[risk_column(s)].notna().any()]


def demo_condition_images(pool: DemoImages | DemoPool, condition: str) -> np.ndarray:
    """Every image of the demo pool under one probe condition, with the pool's seed."""
    return render_condition(pool.images, condition, seed=int(pool.manifest.get("seed", 0)))


def demo_probe_image(pool: DemoImages | DemoPool, position: int, condition: str) -> np.ndarray | None:
    """One demo image under one probe condition rendered alone, or None when the condition draws
    at random across the pool (then it is row ``position`` of :func:`demo_condition_images`)."""
    return render_condition_image(pool.images, position, condition, seed=int(pool.manifest.get("seed", 0)))
