"""The demo pool's screening scores, and their shipped precomputation.

:func:`demo_screening` is what the Recapture queue ranks for the shipped demo pool: the
screening scores of SPEC B.5 (:func:`core.paired.screening.screening_scores`) of every
model's clean-correct evaluation images, with ``g(S, U)`` fitted on the simulated recapture
conditions. Computing it imports scikit-learn and fits one logistic regression per model
(1.7 s of the page's first visit on a quiet 2-core machine), so
``scripts/build_paired_grid.py`` stores it in ``assets/paired_demo_screening.parquet``.
:func:`load_precomputed_screening` returns the stored scores only on an exact match of their
fingerprint (:func:`screening_fingerprint`): the content of the probes, clean outputs and
outcome records, the source of the modules that compute the scores, and the numpy / pandas /
scipy / scikit-learn versions. Anything else gets ``None`` and is computed afresh; a test
holds the stored scores equal to a fresh computation.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from core.digests import code_sha256, frame_sha256, read_signature, write_signed_parquet
from core.exceptions import AuditWarning
from core.imaging.demo import DemoPool
from core.paired.screening import screening_scores
from core.resources import ASSETS_DIR

__all__ = [
    "OUTCOME_SOURCE",
    "PRECOMPUTED_SCREENING",
    "demo_outcomes",
    "demo_screening",
    "load_precomputed_screening",
    "screening_fingerprint",
    "write_precomputed_screening",
]

#: The stored scores of the shipped demo pool (``scripts/build_paired_grid.py`` writes them).
PRECOMPUTED_SCREENING = ASSETS_DIR / "paired_demo_screening.parquet"
#: The demo pool's stand-in for physical re-tests: its failures fit ``g(S, U)`` and judge the scores.
OUTCOME_SOURCE = "simulated-recapture"
_FORMAT = 1
_META_KEY = b"demo_screening_fingerprint"
# The modules whose code decides the scores (every project module they import, lazily too;
# a test walks the imports): an edit to any of them retires the file.
_CODE = (
    "core.imaging.demo_screening",
    "core.paired.screening",
    "core.paired.records",
    "core.paired._fivestate",
    "core.paired.grouped",
    "core.metrics.ranking",
    "core.validation",
)


def demo_outcomes(pool: DemoPool) -> pd.DataFrame:
    """Paired records of the pool's simulated recapture conditions (the real re-tests' stand-in)."""
    return pool.records[pool.records["source"] == OUTCOME_SOURCE]


def demo_screening(pool: DemoPool) -> pd.DataFrame:
    """Screening scores of every model's clean-correct evaluation images of ``pool``.

    Returns
    -------
    DataFrame
        :func:`core.paired.screening.screening_scores` of ``pool.probes`` and ``pool.clean``
        with ``outcomes=demo_outcomes(pool)``: one row per (model, image), ``risk_<score>``
        larger = riskier. Scores the pool cannot define are NaN, with their
        ``AuditWarning`` suppressed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AuditWarning)
        return screening_scores(pool.probes, pool.clean, outcomes=demo_outcomes(pool))


def screening_fingerprint(pool: DemoPool) -> dict:
    """What stored scores must match to stand for ``demo_screening(pool)``.

    Returns
    -------
    dict
        ``format``, ``probes_sha256``, ``clean_sha256``, ``outcomes_sha256`` (every column and
        row, in order, with their dtypes), ``code_sha256`` (the source of the modules that
        compute the scores) and the ``numpy`` / ``pandas`` / ``scipy`` / ``sklearn`` versions.
    """
    from importlib.metadata import version  # not `import sklearn`: the stored scores spare that import

    return {
        "format": _FORMAT,
        "probes_sha256": frame_sha256(pool.probes),
        "clean_sha256": frame_sha256(pool.clean),
        "outcomes_sha256": frame_sha256(demo_outcomes(pool)),
        "code_sha256": code_sha256(_CODE),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": version("scipy"),
        "sklearn": version("scikit-learn"),
    }


def write_precomputed_screening(pool: DemoPool, path: str | Path = PRECOMPUTED_SCREENING) -> Path:
    """Compute ``demo_screening(pool)`` and store it at ``path`` signed with
    :func:`screening_fingerprint` (:func:`core.digests.write_signed_parquet`); returns ``path``."""
    return write_signed_parquet(demo_screening(pool), path, key=_META_KEY, signature=screening_fingerprint(pool))


def load_precomputed_screening(pool: DemoPool, path: str | Path = PRECOMPUTED_SCREENING) -> pd.DataFrame | None:
    """The stored ``demo_screening(pool)`` at ``path``, or None unless its fingerprint matches exactly.

    A missing, unreadable or unsigned file, another pool, edited scoring code or other library
    versions all give None (the caller computes the scores instead).
    """
    if read_signature(path, key=_META_KEY) != screening_fingerprint(pool):
        return None
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError):
        return None
