"""The identified bounds as the Paired bounds page computes them: the development thresholds,
the grid of every cell (stored for the demo pool, else computed), and one cell's intervals,
five-state table and policy report (stored for the demo pool's cells, else computed).

Every number comes from the engine (:mod:`core.paired`); where a target is undefined on legal
data (no pair stays correct on both sides) the page shows NaN as "undefined", so the engine's
:class:`~core.exceptions.UndefinedTargetWarning` is muted here, and only that class. This module
imports the paired engine at module level: only the Paired bounds page uses it (the report and
the notebooks use the light :mod:`core.views.paired`).
"""

from __future__ import annotations

import warnings

import pandas as pd

from core.constants import COVERAGES
from core.digests import frame_sha256
from core.exceptions import UndefinedTargetWarning
from core.paired.bounds import identified_intervals, unpaired_intervals
from core.paired.coverage_grid import coverage_grid, load_precomputed_grid
from core.paired.policies import LAMBDAS, PolicyReport, evaluate_policies
from core.paired.policy_store import load_precomputed_policies
from core.paired.records import UnpairedRecords
from core.paired.states import coverage_threshold, development_thresholds, five_state_counts

__all__ = [
    "COVERAGES",
    "LAMBDAS",
    "PolicyReport",
    "cell_intervals",
    "cell_policies",
    "computed_grid",
    "development_thresholds_of",
    "FIVE_STATE_COLUMNS",
    "five_state_table",
    "load_precomputed_grid",
    "records_digest",
    "stored_cell_policies",
    "unpaired_cell_intervals",
    "unpaired_threshold",
]

#: The five-state table's columns as the page shows them: the class, its pairs, the five states
#: (h harmful flip, r correction, s same wrong label, w changed wrong label, k correct on both)
#: and the acceptance counts u, v, t.
FIVE_STATE_COLUMNS = ["true_label", "n", "h", "r", "s", "w", "k", "u", "v", "t"]


def development_thresholds_of(records: pd.DataFrame) -> pd.DataFrame:
    """:func:`core.paired.states.development_thresholds` at every coverage of ``COVERAGES``."""
    return development_thresholds(records, COVERAGES)


def computed_grid(
    records: pd.DataFrame,
    coverage: float,
    *,
    fixed_tau: float | None = None,
    thresholds: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Intervals of every cell at each model's coverage threshold, or at ``fixed_tau`` for all.

    :func:`core.paired.coverage_grid.coverage_grid` with ``dM_k`` NaN (not warned) where no pair
    of a cell stays correct. ``thresholds`` (:func:`development_thresholds_of` of ``records``)
    is used when ``fixed_tau`` is None.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)  # dM_k undefined where no pair stays correct: NaN
        if fixed_tau is not None:
            return coverage_grid(records, tau=fixed_tau)
        return coverage_grid(records, coverage, thresholds=thresholds)


def cell_intervals(cell: pd.DataFrame, tau: float) -> pd.DataFrame:
    """:func:`core.paired.bounds.identified_intervals` of one cell, undefined targets NaN (not warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        return identified_intervals(cell, tau)


def unpaired_cell_intervals(unpaired: UnpairedRecords, tau: float) -> pd.DataFrame:
    """:func:`core.paired.bounds.unpaired_intervals`, undefined targets NaN (not warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        return unpaired_intervals(unpaired, tau)


def unpaired_threshold(unpaired: UnpairedRecords, coverage: float) -> float:
    """τ accepting the top ``coverage`` of the uploaded clean table (in-sample: no development split)."""
    return coverage_threshold(unpaired.clean["max_prob"].to_numpy(), coverage)


def five_state_table(cell: pd.DataFrame, tau: float) -> pd.DataFrame:
    """:func:`core.paired.states.five_state_counts` of one cell, one row per class and a last row
    ``true_label == "all"`` summing every count; columns ``FIVE_STATE_COLUMNS``.

    Examples
    --------
    >>> cell = pd.DataFrame({"model": "m", "condition": "blur", "source": "synthetic", "record_id": [1, 2, 3],
    ...     "true_label": [0, 0, 1], "clean_pred": [0, 0, 1], "pert_pred": [0, 1, 1],
    ...     "clean_max_prob": [0.9, 0.9, 0.8], "clean_true_prob": [0.9, 0.9, 0.8],
    ...     "pert_max_prob": [0.9, 0.9, 0.7], "pert_true_prob": [0.9, 0.05, 0.7]})
    >>> five_state_table(cell, 0.5)[["true_label", "n", "h", "k"]].to_dict("list")
    {'true_label': [0, 1, 'all'], 'n': [2, 1, 3], 'h': [1, 0, 1], 'k': [1, 1, 2]}
    """
    counts = five_state_counts(cell, tau)
    total = counts[FIVE_STATE_COLUMNS[1:]].sum().to_frame().T.assign(true_label="all")
    return pd.concat([counts[FIVE_STATE_COLUMNS], total[FIVE_STATE_COLUMNS]], ignore_index=True)


def cell_policies(cell: pd.DataFrame) -> PolicyReport:
    """:func:`core.paired.policies.evaluate_policies` of one cell at every λ of ``LAMBDAS``."""
    return evaluate_policies(cell, lambdas=LAMBDAS)


def stored_cell_policies(
    records: pd.DataFrame, model: str, condition: str, source: str, *, records_sha256: str | None = None
) -> PolicyReport | None:
    """The shipped report of one demo cell, equal to :func:`cell_policies` of its records, or None.

    :func:`core.paired.policy_store.load_precomputed_policies` of ``records`` (all the records,
    not the cell's): None unless the stored reports' fingerprint matches these records, the
    code and the libraries exactly (an upload, an edited solver), and then the page computes
    :func:`cell_policies` instead.
    """
    return load_precomputed_policies(records, model, condition, source, records_sha256=records_sha256)


def records_digest(records: pd.DataFrame) -> str:
    """:func:`core.digests.frame_sha256` of ``records``: what the stored grids and policy reports
    are checked against, computed once per records by the page (0.1-0.3 s on the demo pool)."""
    return frame_sha256(records)
