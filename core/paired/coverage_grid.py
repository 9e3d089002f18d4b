"""The identified-interval grid at each model's coverage threshold, and its shipped precomputation.

:func:`coverage_grid` is what the Paired bounds page shows under *Across every model and
condition*: every cell's intervals (SPEC B.2) at the τ that accepts a share ``coverage`` of the
model's clean development records (SPEC B.3), or at one fixed τ. For the shipped demo pool it
takes a few seconds (the I5 bound on ``H`` solves small integer programs), so
``scripts/build_paired_grid.py`` stores the grid of every coverage of :data:`COVERAGES` in
``assets/paired_demo_grid.parquet``. :func:`load_precomputed_grid` returns a stored grid only on
an exact match of its fingerprint (:func:`grid_fingerprint`): the records' content, the
coverage, the levels, the source of the modules that compute the numbers, and the numpy /
pandas / scipy versions. Anything else (an upload, an edited solver, other libraries) gets
``None`` and is computed afresh; a test holds the stored grids equal to a fresh computation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core.constants import COVERAGES, LEVELS
from core.digests import code_sha256, frame_sha256, read_signature, write_signed_parquet
from core.resources import ASSETS_DIR

__all__ = ["PRECOMPUTED_GRID", "coverage_grid", "grid_fingerprint", "load_precomputed_grid", "write_precomputed_grid"]

#: The stored grids of the shipped demo pool (``scripts/build_paired_grid.py`` writes it).
PRECOMPUTED_GRID = ASSETS_DIR / "paired_demo_grid.parquet"
_FORMAT = 1
_META_KEY = b"paired_grid_fingerprint"
# The modules whose code decides the grid's numbers: an edit to any of them retires the file.
_CODE = (
    "core.paired.coverage_grid",
    "core.paired.bounds",
    "core.paired._fivestate",
    "core.paired.grouped",
    "core.paired.states",
    "core.constants",
)


def coverage_grid(
    records: pd.DataFrame,
    coverage: float | None = None,
    *,
    tau: float | None = None,
    thresholds: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Identified intervals of every cell, each model at its own coverage threshold (or one τ).

    Parameters
    ----------
    records : DataFrame
        Paired records of any number of models and cells. The intervals are computed on the
        ``split == "eval"`` rows when there are any, else on all rows; τ comes from the
        development rows (:func:`core.paired.states.development_thresholds`).
    coverage : float in (0, 1], optional
        Clean development coverage giving each model's τ. Exactly one of ``coverage`` and
        ``tau`` is given.
    tau : float in [0, 1], optional
        One acceptance threshold for every model.
    thresholds : DataFrame, optional
        The output of ``development_thresholds(records, ...)`` when the caller already has it
        (it must hold ``coverage``).

    Returns
    -------
    DataFrame
        :func:`core.paired.bounds.identified_intervals_grid` rows of every model (models in
        sorted order), plus ``tau``: ``model, condition, source, target, level, low, high,
        observed, tau``. ``H`` and ``L`` are shares of the cell's pairs (larger = worse).
    """
    from core.paired.bounds import identified_intervals_grid
    from core.paired.states import check_tau, development_thresholds

    if (coverage is None) == (tau is None):
        raise ValueError(f"give exactly one of `coverage` and `tau`; got coverage={coverage!r}, tau={tau!r}.")
    if tau is not None:
        tau = check_tau(tau)
    elif thresholds is None:
        thresholds = development_thresholds(records, [coverage])
    evaluation = records
    if "split" in records.columns and (records["split"] == "eval").any():
        evaluation = records[records["split"] == "eval"]
    parts = []
    for model, part in evaluation.groupby("model", sort=True):
        model_tau = tau
        if model_tau is None:
            row = thresholds[(thresholds["model"] == model) & np.isclose(thresholds["coverage"], coverage)]
            if row.empty:
                raise ValueError(f"`thresholds` has no row for model {model!r} at coverage {coverage!r}.")
            model_tau = float(row["tau"].iloc[0])
        parts.append(identified_intervals_grid(part, model_tau).assign(tau=model_tau))
    return pd.concat(parts, ignore_index=True)


def grid_fingerprint(records: pd.DataFrame, coverage: float, *, records_sha256: str | None = None) -> dict:
    """What a stored grid must match to stand for ``coverage_grid(records, coverage)``.

    ``records_sha256`` is :func:`core.digests.frame_sha256` of ``records`` when the caller has
    it already (the page digests its records once, not once per grid and cell).

    Returns
    -------
    dict
        ``format``, ``records_sha256`` (every column and row of ``records``, in order, with
        their dtypes), ``coverage``, ``levels``, ``code_sha256`` (the source of the modules
        that compute the grid) and the ``numpy`` / ``pandas`` / ``scipy`` versions.
    """
    import scipy

    return {
        "format": _FORMAT,
        "records_sha256": frame_sha256(records) if records_sha256 is None else records_sha256,
        "coverage": float(coverage),
        "levels": list(LEVELS),
        "code_sha256": code_sha256(_CODE),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
    }


def write_precomputed_grid(records: pd.DataFrame, path: str | Path = PRECOMPUTED_GRID, *, coverages=COVERAGES) -> Path:
    """Compute the grid of every coverage and store it with its fingerprints (atomic write).

    Returns the path written. The file is Parquet (never pickle); its schema metadata holds
    one fingerprint per coverage, and the rows carry a ``coverage`` column.
    """
    from core.paired.states import development_thresholds

    coverages = [float(q) for q in coverages]
    thresholds = development_thresholds(records, coverages)
    frames, prints = [], []
    for q in coverages:
        frames.append(coverage_grid(records, q, thresholds=thresholds).assign(coverage=q))
        prints.append(grid_fingerprint(records, q))
    return write_signed_parquet(pd.concat(frames, ignore_index=True), path, key=_META_KEY, signature=prints)


def load_precomputed_grid(
    records: pd.DataFrame, coverage: float, path: str | Path = PRECOMPUTED_GRID, *, records_sha256: str | None = None
) -> pd.DataFrame | None:
    """The stored ``coverage_grid(records, coverage)``, or None unless its fingerprint matches exactly.

    A missing or unreadable file, other records, another coverage, an edited solver or other
    library versions all give None (the caller computes the grid instead).
    """
    prints = read_signature(path, key=_META_KEY)
    if not isinstance(prints, list) or grid_fingerprint(records, coverage, records_sha256=records_sha256) not in prints:
        return None
    try:
        frame = pd.read_parquet(path, filters=[("coverage", "==", float(coverage))])
    except (OSError, ValueError):
        return None
    return frame.drop(columns="coverage").reset_index(drop=True)
