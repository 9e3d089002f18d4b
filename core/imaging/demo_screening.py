"""The demo pool's screening scores, and their shipped precomputation.

:func:`demo_screening` is what the Recapture queue ranks for the shipped demo pool: the
screening scores of SPEC B.5 (:func:`core.paired.screening.screening_scores`) of every
model's clean-correct evaluation images, with ``g(S, U)`` fitted on the simulated recapture
conditions. Computing it imports scikit-learn and fits one logistic regression per model
(1.7 s of the page's first visit on a quiet 2-core machine), so
``scripts/build_paired_grid.py`` stores it in ``assets/paired_demo_screening.parquet``.
:func:`load_precomputed_screening` returns the stored scores only on an exact match of their
fingerprint (:func:`screening_fingerprint`): the bytes of the pool's files the scores are
computed from (records, probe outputs, clean outputs), the source of the modules that read
them and compute the scores, and the numpy / pandas / pyarrow / scipy / scikit-learn versions.
Anything else gets ``None`` and is computed afresh; a test holds the stored scores equal to a
fresh computation. Signing files rather than frames lets the Recapture queue show the stored
scores without reading the pool's 450,000 probe outputs (0.5-1 s, and 0.4-0.7 s more to digest
them, of the page's first visit).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from core.digests import code_sha256, file_sha256, read_signature, write_signed_parquet
from core.exceptions import AuditWarning
from core.imaging.demo import _FILES, DEFAULT_DIR, DemoPool, load_demo_pool
from core.paired.screening import screening_scores
from core.resources import ASSETS_DIR

__all__ = [
    "OUTCOME_SOURCE",
    "PRECOMPUTED_SCREENING",
    "demo_outcomes",
    "demo_screening",
    "load_precomputed_screening",
    "recapture_records",
    "screening_fingerprint",
    "write_precomputed_screening",
]

#: The stored scores of the shipped demo pool (``scripts/build_paired_grid.py`` writes them).
PRECOMPUTED_SCREENING = ASSETS_DIR / "paired_demo_screening.parquet"
#: The demo pool's stand-in for physical re-tests: its failures fit ``g(S, U)`` and judge the scores.
OUTCOME_SOURCE = "simulated-recapture"
_FORMAT = 2
#: The pool files whose content decides the scores (the others: models, conditions, images).
_POOL_FILES = ("records", "probes", "clean")
_META_KEY = b"demo_screening_fingerprint"
# The modules whose code decides the scores (every project module they import, lazily too;
# a test walks the imports): an edit to any of them retires the file.
_CODE = (
    "core.imaging.demo",  # reads the files into the frames the scores are computed from
    "core.imaging.demo_screening",
    "core.paired.screening",
    "core.paired.records",
    "core.paired._fivestate",
    "core.paired.grouped",
    "core.metrics.ranking",
    "core.validation",
)


def recapture_records(records: pd.DataFrame) -> pd.DataFrame:
    """The paired records of the simulated recapture conditions (``source == OUTCOME_SOURCE``):
    the real re-tests' stand-in, whose failures fit ``g(S, U)`` and judge the scores."""
    return records[records["source"] == OUTCOME_SOURCE]


def demo_outcomes(pool: DemoPool) -> pd.DataFrame:
    """:func:`recapture_records` of the pool's records."""
    return recapture_records(pool.records)


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


def screening_fingerprint(directory=DEFAULT_DIR) -> dict:
    """What stored scores must match to stand for ``demo_screening(load_demo_pool(directory))``.

    Parameters
    ----------
    directory : path-like
        A pool written by :func:`core.imaging.demo.save_demo_pool`.

    Returns
    -------
    dict
        ``format``, ``files_sha256`` (role -> SHA-256 of the bytes of the records, probe-output
        and clean-output files), ``code_sha256`` (the source of the modules that read those
        files and compute the scores) and the ``numpy`` / ``pandas`` / ``pyarrow`` / ``scipy`` /
        ``sklearn`` versions. Any change of those files retires the scores, even one the scores
        do not read (a record of another source): the check reads no table.

    Raises
    ------
    FileNotFoundError
        A file of the pool is missing.
    """
    from importlib.metadata import version  # not `import sklearn`: the stored scores spare that import

    directory = Path(directory)
    return {
        "format": _FORMAT,
        "files_sha256": {role: file_sha256(directory / _FILES[role]) for role in _POOL_FILES},
        "code_sha256": code_sha256(_CODE),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "pyarrow": version("pyarrow"),
        "scipy": version("scipy"),
        "sklearn": version("scikit-learn"),
    }


def write_precomputed_screening(directory=DEFAULT_DIR, path: str | Path = PRECOMPUTED_SCREENING) -> Path:
    """Compute ``demo_screening`` of the pool in ``directory`` and store it at ``path`` signed
    with :func:`screening_fingerprint` (:func:`core.digests.write_signed_parquet`); returns ``path``."""
    scores = demo_screening(load_demo_pool(directory))
    return write_signed_parquet(scores, path, key=_META_KEY, signature=screening_fingerprint(directory))


def load_precomputed_screening(directory=DEFAULT_DIR, path: str | Path = PRECOMPUTED_SCREENING) -> pd.DataFrame | None:
    """The stored ``demo_screening`` of the pool in ``directory``, or None unless its fingerprint
    matches exactly; reads none of the pool's tables.

    A missing, unreadable or unsigned file, another pool (or a missing pool file), edited
    reading or scoring code or other library versions all give None (the caller computes the
    scores instead).
    """
    try:
        if read_signature(path, key=_META_KEY) != screening_fingerprint(directory):
            return None
        return pd.read_parquet(path)
    except (OSError, ValueError):
        return None
