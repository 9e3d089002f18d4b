"""The Paired bounds page: which rows are reported, the τ of a model, the grid summary, the
acceptance-policy comparison of one cell, and the class summary of an unpaired cell.

Every number comes from the engine (:mod:`core.paired`); this module only selects and shapes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from core.paired.policies import PolicyReport
    from core.paired.records import UnpairedRecords

__all__ = [
    "CellChoices",
    "GridOverview",
    "ModelThreshold",
    "PolicyComparison",
    "PolicyMatrix",
    "cell_choices",
    "evaluation_cell",
    "evaluation_records",
    "grid_summary",
    "model_threshold",
    "policy_comparison",
    "policy_matrix",
    "tau_text",
    "unpaired_class_summary",
]

Level = Literal["I0", "Ik", "I5"]


def evaluation_records(records: pd.DataFrame) -> pd.DataFrame:
    """The rows the bounds are reported on: ``split == "eval"`` when there are any, else all rows.

    Development rows only set thresholds (as in :func:`core.paired.policies.evaluate_policies`).

    Examples
    --------
    >>> evaluation_records(pd.DataFrame({"split": ["dev", "eval", "eval"], "x": [1, 2, 3]}))["x"].tolist()
    [2, 3]
    """
    mask = _evaluation_mask(records)
    return records if mask.all() else records[mask]


def _evaluation_mask(records: pd.DataFrame) -> np.ndarray:
    """Boolean mask of :func:`evaluation_records`' rows in ``records``."""
    if "split" in records.columns:
        is_eval = (records["split"] == "eval").to_numpy(dtype=bool)
        if is_eval.any():
            return is_eval
    return np.ones(len(records), dtype=bool)


@dataclass(frozen=True)
class CellChoices:
    """The cells the bounds are reported on: what the page's selectors offer.

    Attributes
    ----------
    sources, models : tuple of str
        Sorted distinct values among :func:`evaluation_records`' rows.
    conditions : dict of str to tuple of str
        Per source, the sorted conditions it has evaluation rows for.
    """

    sources: tuple[str, ...]
    models: tuple[str, ...]
    conditions: dict[str, tuple[str, ...]]


def cell_choices(records: pd.DataFrame) -> CellChoices:
    """The sources, models and conditions of ``records``' evaluation rows (:func:`evaluation_records`),
    found without gathering those rows (half of the demo pool's 540,000: 0.1-0.6 s a page run).

    Examples
    --------
    >>> records = pd.DataFrame({"split": ["dev", "eval", "eval"], "source": ["a", "b", "b"],
    ...     "model": ["m", "m", "n"], "condition": ["x", "y", "z"]})
    >>> cell_choices(records)
    CellChoices(sources=('b',), models=('m', 'n'), conditions={'b': ('y', 'z')})
    """
    mask = _evaluation_mask(records)
    # Codes, not strings: turning half a million Arrow strings into Python objects took 0.5 s.
    model_codes, model_names = pd.factorize(records["model"])
    source_codes, source_names = pd.factorize(records["source"])
    condition_codes, condition_names = pd.factorize(records["condition"])
    pairs = np.unique(source_codes[mask].astype(np.int64) * len(condition_names) + condition_codes[mask])
    conditions: dict[str, list[str]] = {}
    for pair in pairs:
        source, condition = divmod(int(pair), len(condition_names))
        conditions.setdefault(str(source_names[source]), []).append(str(condition_names[condition]))
    return CellChoices(
        sources=tuple(sorted(conditions)),
        models=tuple(sorted(str(model_names[code]) for code in np.unique(model_codes[mask]))),
        conditions={source: tuple(sorted(names)) for source, names in sorted(conditions.items())},
    )


def evaluation_cell(records: pd.DataFrame, *, model: str, condition: str, source: str) -> pd.DataFrame:
    """The evaluation rows of one cell: ``evaluation_records(records)`` of that model, condition
    and source (the same rows, order and index), selected in one pass over ``records``.

    Examples
    --------
    >>> records = pd.DataFrame({"split": ["dev", "eval", "eval"], "source": "s", "model": "m",
    ...     "condition": ["c", "c", "d"], "x": [1, 2, 3]})
    >>> evaluation_cell(records, model="m", condition="c", source="s")["x"].tolist()
    [2]
    """
    mask = (
        _evaluation_mask(records)
        & (records["model"] == model).to_numpy(dtype=bool)
        & (records["condition"] == condition).to_numpy(dtype=bool)
        & (records["source"] == source).to_numpy(dtype=bool)
    )
    return records[mask]


@dataclass(frozen=True, kw_only=True)
class ModelThreshold:
    """The acceptance threshold of one model at one clean coverage.

    Attributes
    ----------
    tau : float
        ``max_prob ≥ τ`` is accepted (both sides).
    scope : {"dev", "all"}
        ``"dev"`` when τ comes from the model's ``split == "dev"`` clean records, ``"all"``
        when it had none (τ is then in-sample).
    n_dev : int
        Clean records τ was set from.
    """

    tau: float
    scope: Literal["dev", "all"]
    n_dev: int


def model_threshold(thresholds: pd.DataFrame, model: str, coverage: float) -> ModelThreshold:
    """Look up a model's τ in :func:`core.paired.states.development_thresholds` rows.

    Examples
    --------
    >>> t = pd.DataFrame({"model": ["a", "a"], "coverage": [0.8, 0.9], "tau": [0.7, 0.6],
    ...                   "n_dev": [10, 10], "scope": ["dev", "dev"]})
    >>> model_threshold(t, "a", 0.9)
    ModelThreshold(tau=0.6, scope='dev', n_dev=10)
    """
    rows = thresholds[(thresholds["model"] == model) & np.isclose(thresholds["coverage"], coverage)]
    if rows.empty:
        raise ValueError(
            f"No threshold for model {model!r} at coverage {coverage!r}; the thresholds hold the "
            f"models {sorted(thresholds['model'].unique())} and coverages "
            f"{sorted(thresholds['coverage'].unique())}."
        )
    row = rows.iloc[0]
    return ModelThreshold(tau=float(row["tau"]), scope=str(row["scope"]), n_dev=int(row["n_dev"]))


def tau_text(tau: float, *, coverage: float | None = None, model: str | None = None, scope: str = "") -> str:
    """What τ is, in the page's words: always a max-probability threshold; a coverage only derives it.

    τ means one thing across the tool: a prediction is accepted when its max probability is
    ≥ τ, on both sides (the command line's ``--tau`` too). A page that derives τ from a
    coverage says so and shows the value, so the same intervals can be had elsewhere from it.

    Examples
    --------
    >>> tau_text(0.66314, coverage=0.8, model="cnn", scope="clean development images")
    'τ = 0.6631, derived from a coverage: the threshold that accepts 80% of the clean development images of cnn. τ is a max-probability threshold (accepted when max probability ≥ τ, on both sides); 80% is the coverage, not τ. The same τ gives the same intervals anywhere in the tool.'
    >>> tau_text(0.8)
    'τ = 0.8000, fixed: accepted when max probability ≥ τ, on both sides.'
    """
    if coverage is None:
        return f"τ = {tau:.4f}, fixed: accepted when max probability ≥ τ, on both sides."
    of = f" of {model}" if model else ""
    return (
        f"τ = {tau:.4f}, derived from a coverage: the threshold that accepts {coverage:.0%} of the {scope}{of}. "
        "τ is a max-probability threshold (accepted when max probability ≥ τ, on both sides); "
        f"{coverage:.0%} is the coverage, not τ. The same τ gives the same intervals anywhere in the tool."
    )


@dataclass(frozen=True, kw_only=True)
class GridOverview:
    """The SPEC B.4 summary of :func:`core.paired.summary.grid_summary`, shaped for the page.

    Attributes
    ----------
    widths : DataFrame
        ``source, target, level, mean_width``: mean interval width over the cells of a source
        (undefined intervals left out).
    cells : int
        Cells of the grid.
    i5_narrows_h : float
        Share of cells whose H interval is strictly narrower at I5 than at Ik.
    dmk_straddles_zero : float
        Share, among cells where dM_k is defined at Ik, whose interval has ``low < 0 < high``.
    k_zero : float
        Share of cells with dM_k undefined (no pair correct on both sides).
    """

    widths: pd.DataFrame
    cells: int
    i5_narrows_h: float
    dmk_straddles_zero: float
    k_zero: float


def grid_summary(grid: pd.DataFrame) -> GridOverview:
    """The identification grid summarised by source and over every cell.

    Parameters
    ----------
    grid : DataFrame
        :func:`core.paired.bounds.identified_intervals_grid` rows (``model, condition, source,
        target, level, low, high, observed``), possibly of several models.

    Returns
    -------
    GridOverview
    """
    from core.paired.summary import grid_summary as paired_grid_summary

    by_source = paired_grid_summary(grid, by=("source",))
    overall = paired_grid_summary(grid, by=()).cells.iloc[0]
    return GridOverview(
        widths=by_source.widths[["source", "target", "level", "mean_width"]],
        cells=int(overall["n_cells"]),
        i5_narrows_h=float(overall.get("i5_narrows_h_share", math.nan)),
        dmk_straddles_zero=float(overall.get("dmk_straddles_zero_Ik_share", math.nan)),
        k_zero=float(overall.get("k_zero_share", math.nan)),
    )


def _at(frame: pd.DataFrame, level: str, lam: float) -> pd.DataFrame:
    """The rows of a :class:`~core.paired.policies.PolicyReport` frame at one level and cost weight."""
    return frame[(frame["level"] == level) & np.isclose(frame["lambda"], lam)]


@dataclass(frozen=True, kw_only=True)
class PolicyMatrix:
    """Shared-correspondence comparison of the acceptance policies of one cell.

    Attributes
    ----------
    coverages : list of float, length P
        Nominal clean coverage of every policy, in policy order.
    matrix : ndarray of shape (P, P)
        ``D⁺[j, ℓ] = max_π (J_j − J_ℓ)``, zero on the diagonal (cost units; negative = row
        certainly cheaper).
    regret : ndarray of shape (P,)
        Worst-case regret ``R_j = max_{ℓ ≠ j} D⁺[j, ℓ]``.
    """

    coverages: list[float]
    matrix: np.ndarray
    regret: np.ndarray

    @property
    def labels(self) -> list[str]:
        """``"q = 60%"`` … : how the page names the policies."""
        return [f"q = {q:.0%}" for q in self.coverages]


def policy_matrix(differences: pd.DataFrame, *, level: Level, lam: float) -> PolicyMatrix:
    """Shared-correspondence comparison matrix of one cell at one level and cost weight.

    Parameters
    ----------
    differences : DataFrame
        :attr:`core.paired.policies.PolicyReport.differences` of a single cell.
    level : {"I0", "Ik", "I5"}
    lam : float
        Cost weight ``λ`` (must be one the report was computed for).

    Returns
    -------
    PolicyMatrix
    """
    rows = _at(differences, level, lam)
    if rows.empty:
        raise ValueError(f"No policy differences at level {level!r} and λ = {lam!r}.")
    if rows[["model", "condition", "source"]].drop_duplicates().shape[0] != 1:
        raise ValueError("`differences` must hold a single cell.")
    order = rows.drop_duplicates("policy").sort_values("policy")
    policies = order["policy"].tolist()
    index = {p: i for i, p in enumerate(policies)}
    matrix = np.zeros((len(policies), len(policies)))
    matrix[rows["policy"].map(index).to_numpy(), rows["versus"].map(index).to_numpy()] = rows["D_plus"].to_numpy()
    off = np.where(np.eye(len(policies), dtype=bool), -np.inf, matrix)
    return PolicyMatrix(coverages=order["coverage"].astype(float).tolist(), matrix=matrix, regret=off.max(axis=1))


@dataclass(frozen=True, kw_only=True)
class PolicyComparison:
    """Everything the policy section of the Paired bounds page shows for one cell, level and λ.

    Attributes
    ----------
    matrix : PolicyMatrix
    minimax_coverage : float
        Coverage of the policy with the least worst-case regret.
    mean_coverage : float
        Coverage of the policy with the least mean cost over uniformly weighted pairings.
    mean_method : str
        How that mean was computed (exact / sampled).
    certified : DataFrame
        The certified orderings (``D⁺ < 0``): ``ordering`` (``"q = 60% cheaper than q = 80%"``),
        ``D_plus``, ``separate_gap``, ``certified_separately``, ``missed_by_separate``.
    costs : DataFrame
        Each policy's ``coverage, tau, J_low, J_high, J_mean, J_observed, mean_method``
        (shares of the cell's pairs; larger = worse).
    """

    matrix: PolicyMatrix
    minimax_coverage: float
    mean_coverage: float
    mean_method: str
    certified: pd.DataFrame
    costs: pd.DataFrame

    @property
    def chosen(self) -> str:
        """The minimax policy as the page names it."""
        return f"q = {self.minimax_coverage:.0%}"


def policy_comparison(report: PolicyReport, *, level: Level, lam: float) -> PolicyComparison:
    """The policy comparison of a single-cell :class:`~core.paired.policies.PolicyReport`.

    Parameters
    ----------
    report : core.paired.policies.PolicyReport
        :func:`core.paired.policies.evaluate_policies` of one cell.
    level : {"I0", "Ik", "I5"}
    lam : float
        Cost weight ``λ`` (one the report was computed for).

    Returns
    -------
    PolicyComparison
    """
    matrix = policy_matrix(report.differences, level=level, lam=lam)
    selection = _at(report.selection, level, lam).iloc[0]
    diffs = _at(report.differences, level, lam)
    certified = diffs[diffs["certified"]]
    certified = certified.assign(
        ordering=[
            f"q = {a:.0%} cheaper than q = {b:.0%}" for a, b in zip(certified["coverage"], certified["versus_coverage"])
        ]
    )
    columns = ["ordering", "D_plus", "separate_gap", "certified_separately", "missed_by_separate"]
    costs = _at(report.costs, level, lam)
    return PolicyComparison(
        matrix=matrix,
        minimax_coverage=float(selection["minimax_coverage"]),
        mean_coverage=float(selection["mean_coverage"]),
        mean_method=str(selection["mean_method"]),
        certified=certified[columns],
        costs=costs[["coverage", "tau", "J_low", "J_high", "J_mean", "J_observed", "mean_method"]],
    )


def unpaired_class_summary(unpaired: UnpairedRecords, tau: float) -> pd.DataFrame:
    """Per-class quantities an unpaired cell identifies without its pairing.

    The counts are the engine's (:meth:`core.paired.grouped.ClassTable.acceptance_counts`,
    the ones :func:`core.paired.bounds.unpaired_intervals` bounds with).

    Parameters
    ----------
    unpaired : UnpairedRecords
    tau : float in [0, 1]
        Acceptance threshold on both sides (``max_prob ≥ τ`` accepted).

    Returns
    -------
    DataFrame
        One row per true class, sorted: ``true_label, n`` (records per side), ``a``/``b``
        (clean / perturbed correct), ``u`` (clean correct and accepted), ``v`` (perturbed
        correct and rejected), ``t`` (perturbed wrong and accepted), then the uploaded counts
        (``k``, or ``h, r, s, w, k``) when there are any.
    """
    from core.paired.states import class_table
    from core.validation import check_tau

    tau = check_tau(tau)
    table = class_table(unpaired)
    counts = table.acceptance_counts(tau)
    out = pd.DataFrame(
        {"true_label": table.group_label, **{c: counts[c] for c in ("n", "a", "b", "u", "v", "t")}}
    ).astype(np.int64)
    if unpaired.counts is not None:
        out = out.merge(unpaired.counts, on="true_label", how="left", validate="one_to_one")
    return out
