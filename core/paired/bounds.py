"""Identified intervals of H, L and dM_k at the information levels I0, Ik, I5 (SPEC B.2).

Within each true class a *correspondence* is any bijection clean → perturbed. A level keeps
both sides' records and, at ``Ik``, the correct–correct count ``k_y`` of every class; at
``I5`` all five state counts. The identified interval of a target is ``[min, max]`` of its
value over every correspondence consistent with the level; the observed pairing is always
inside, and ``I5 ⊆ Ik ⊆ I0``. Classes are independent, so class-wise extremes of counts add.

Per class (``n`` records per side, ``a``/``b`` clean/perturbed correct, ``u`` clean correct and
accepted, ``v`` perturbed correct and rejected, ``t`` perturbed wrong and accepted,
``h = a − k``)::

    I0  H, L   [Σ max(0, u + x − n), Σ min(u, x)] / N        x = t for H, v for L
    Ik  L      [Σ max(0, k − (a−u) − (b−v)), Σ min(u, v, k)] / N         (= I5)
    Ik  H      [Σ max(0, h − (a−u) − ((n−b) − t)), Σ min(u, t, h)] / N
    I5  H      [Σ max(0, t_min − (a−u)), Σ min(u, t_max)] / N
    Ik  dM_k   [Σ (k smallest x − k largest z), Σ (k largest x − k smallest z)] / K   (= I5)

with ``t_min, t_max`` the extreme numbers of accepted records among the perturbed wrong
records opposite clean-correct ones under the five-state counts (exact integer program on
label types, :mod:`core.paired._fivestate`), and ``x``/``z`` the true-class probabilities of
the correct clean/perturbed records. ``dM_k`` is undefined (NaN, with a warning) when
``K = Σ k_y = 0``. At ``I0`` the support ``k_y`` is free in ``[max(0, a+b−n), min(a, b)]`` with
``K > 0``; the ratio endpoints are found by Dinkelbach's method on the same oracle as the
paper's bisection (001, App. A.10): a ratio below ``r`` exists iff
``min Σ_y (D_y(k_y) − r·k_y) < 0`` over choices with ``K > 0``. Each step moves to a ratio
attained by a feasible choice, so the result is exact, not a bisection tolerance.

Orientation: ``H`` and ``L`` are shares of the cell's pairs (larger = worse); ``dM_k`` is a
drop in probability (positive = confidence lost).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.constants import LEVELS
from core.paired._fivestate import flip_ranges
from core.paired.records import CELL_COLUMNS, UnpairedRecords, validate_records
from core.paired.states import ClassTable, check_tau, class_table, warn_undefined

__all__ = [
    "LEVELS",
    "TARGETS",
    "accuracy_only_k",
    "check_levels",
    "identified_intervals",
    "identified_intervals_grid",
    "unpaired_intervals",
]

TARGETS = ("H", "L", "dM_k")
_LEVEL_RANK = {level: i for i, level in enumerate(LEVELS)}
# Dinkelbach stops once no choice improves the ratio by more than this (probability units).
_RATIO_TOL = 1e-12


# ---------------------------------------------------------------------------------------------
# Public API


def identified_intervals(records: pd.DataFrame, tau: float) -> pd.DataFrame:
    """Identified intervals of one cell's targets at every information level.

    Parameters
    ----------
    records : DataFrame of shape (n_pairs, n_columns)
        Paired records of a single cell (one model × condition × source; the three cell
        columns may be omitted).
    tau : float in [0, 1]
        Acceptance threshold, the same on both sides (``S ≥ τ`` accepted; ties accepted).

    Returns
    -------
    DataFrame
        Nine rows, one per (``target`` in H, L, dM_k) × (``level`` in I0, Ik, I5), with
        columns ``target, level, low, high, observed``. ``H`` and ``L`` are rates over the
        cell's ``N`` pairs; ``dM_k`` is a mean over retained-correct pairs and NaN (with a
        warning) where undefined. ``observed`` is the value under the recorded pairing.

    Examples
    --------
    Paper 001, §3.1: two records of one class; the recorded pairing loses acceptance.

    >>> import pandas as pd
    >>> rec = pd.DataFrame({"record_id": [1, 2], "true_label": 0, "clean_pred": 0,
    ...     "clean_max_prob": [0.9, 0.6], "clean_true_prob": [0.9, 0.6],
    ...     "pert_pred": [0, 1], "pert_max_prob": [0.6, 0.8], "pert_true_prob": [0.6, 0.2]})
    >>> out = identified_intervals(rec, 0.8)
    >>> print(out[out.level == "I0"].round(12).to_string(index=False))
    target level  low  high  observed
         H    I0  0.0   0.5       0.0
         L    I0  0.0   0.5       0.5
      dM_k    I0  0.0   0.3       0.3
    """
    records = _single_cell(records)
    table = class_table(records, validate=False)
    return _long(table, check_tau(tau), LEVELS, observed=True).drop(columns=list(CELL_COLUMNS))


def identified_intervals_grid(records: pd.DataFrame, tau: float, *, levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """Identified intervals for every model × condition × source cell, vectorised over cells.

    Parameters
    ----------
    records : DataFrame
        Paired records of any number of cells.
    tau : float in [0, 1]
        Acceptance threshold on both sides.
    levels : sequence of {"I0", "Ik", "I5"}, default=("I0", "Ik", "I5")
        Levels to compute. ``I5`` for ``H`` solves a small integer program for every class
        whose five-state counts can bind; the other entries are closed forms.

    Returns
    -------
    DataFrame
        One row per (cell, target, level): ``model, condition, source, target, level, low,
        high, observed`` (see :func:`identified_intervals`).
    """
    tau = check_tau(tau)
    levels = check_levels(levels)
    table = class_table(records)
    return _long(table, tau, levels, observed=True)


def unpaired_intervals(unpaired: UnpairedRecords, tau: float) -> pd.DataFrame:
    """Identified intervals of an unpaired cell, up to the highest level its counts allow.

    Parameters
    ----------
    unpaired : UnpairedRecords
        From :func:`core.paired.records.validate_unpaired` / ``load_unpaired`` / ``unpair``.
    tau : float in [0, 1]
        Acceptance threshold on both sides.

    Returns
    -------
    DataFrame
        Columns ``target, level, low, high, observed`` for every level up to
        ``unpaired.level`` (I0 without counts, I0–Ik with ``k``, I0–I5 with all five counts);
        ``observed`` is NaN because the pairing is unknown.
    """
    if not isinstance(unpaired, UnpairedRecords):
        raise ValueError(
            "`unpaired` must be an UnpairedRecords (see core.paired.records.validate_unpaired); "
            f"got {type(unpaired).__name__}."
        )
    tau = check_tau(tau)
    table = class_table(unpaired)
    levels = LEVELS[: _LEVEL_RANK[table.level] + 1]
    return _long(table, tau, levels, observed=False).drop(columns=list(CELL_COLUMNS)).reset_index(drop=True)


def accuracy_only_k(records: pd.DataFrame) -> pd.DataFrame:
    """Bounds on the total correct–correct count ``K`` from accuracies alone (001, App. C.3).

    Class-wise: ``Σ_y [max(0, a_y + b_y − n_y), min(a_y, b_y)]`` (per-class accuracies known);
    global: ``[max(0, A + B − N), min(A, B)]`` (only total accuracies known). Gross flips
    ``h + r = A + B − 2K`` inherit twice the width.

    Parameters
    ----------
    records : DataFrame
        Paired records.

    Returns
    -------
    DataFrame
        One row per cell: ``model, condition, source, N, K_observed, K_low_classwise,
        K_high_classwise, K_low_global, K_high_global`` (counts), ``width_classwise,
        width_global`` (shares of ``N``) and ``pinned_share`` (share of classes whose
        interval is a single value).
    """
    table = class_table(records)
    n, a, b = table.group_n, table.per_group(table.clean_correct), table.per_group(table.pert_correct)
    lo, hi = np.maximum(0, a + b - n), np.minimum(a, b)
    N, A, B = table.per_cell(n), table.per_cell(a), table.per_cell(b)
    out = table.cells.copy()
    out["N"] = N.astype(np.int64)
    out["K_observed"] = table.per_cell(table.observed_k).astype(np.int64)
    out["K_low_classwise"] = table.per_cell(lo).astype(np.int64)
    out["K_high_classwise"] = table.per_cell(hi).astype(np.int64)
    out["K_low_global"] = np.maximum(0, A + B - N).astype(np.int64)
    out["K_high_global"] = np.minimum(A, B).astype(np.int64)
    out["width_classwise"] = (out["K_high_classwise"] - out["K_low_classwise"]) / N
    out["width_global"] = (out["K_high_global"] - out["K_low_global"]) / N
    out["pinned_share"] = table.per_cell(lo == hi) / np.bincount(table.group_cell, minlength=table.n_cells)
    return out


# ---------------------------------------------------------------------------------------------
# Validation helpers


def check_levels(levels) -> tuple[str, ...]:
    if isinstance(levels, str):
        levels = (levels,)
    levels = tuple(levels)
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad or not levels:
        raise ValueError(f"`levels` must be a non-empty subset of {list(LEVELS)}; got {list(levels)!r}.")
    return tuple(lv for lv in LEVELS if lv in levels)


def _single_cell(records: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(records, pd.DataFrame):
        raise ValueError(f"`records` must be a pandas DataFrame; got {type(records).__name__}.")
    records = records.assign(**{c: "-" for c in CELL_COLUMNS if c not in records.columns})
    records = validate_records(records)
    cells = records[list(CELL_COLUMNS)].drop_duplicates()
    if len(cells) != 1:
        raise ValueError(
            f"`records` holds {len(cells)} cells (model × condition × source); "
            "identified_intervals takes one — use identified_intervals_grid for many."
        )
    return records


# ---------------------------------------------------------------------------------------------
# Computation


def _long(table: ClassTable, tau: float, levels: tuple[str, ...], *, observed: bool) -> pd.DataFrame:
    bounds = _interval_arrays(table, tau, levels)
    obs = _observed_arrays(table, tau) if observed else {}
    combos = [(target, level) for target in TARGETS for level in levels]
    n_cells = table.n_cells
    nan = np.full(n_cells, np.nan)
    cell_idx = np.repeat(np.arange(n_cells), len(combos))
    columns = {c: table.cells[c].to_numpy()[cell_idx] for c in CELL_COLUMNS}
    columns["target"] = np.tile([t for t, _ in combos], n_cells)
    columns["level"] = np.tile([lv for _, lv in combos], n_cells)
    # (n_cells, n_combos) arrays flattened row-major: cell-major, then target, then level.
    columns["low"] = np.stack([bounds[key][0] for key in combos], axis=1).ravel()
    columns["high"] = np.stack([bounds[key][1] for key in combos], axis=1).ravel()
    columns["observed"] = np.stack([obs.get(t, nan) for t, _ in combos], axis=1).ravel()
    return pd.DataFrame(columns)


def _group_counts(table: ClassTable, tau: float) -> dict[str, np.ndarray]:
    return table.acceptance_counts(tau)


def _interval_arrays(table: ClassTable, tau: float, levels: tuple[str, ...]) -> dict:
    g = _group_counts(table, tau)
    n, a, b, u, v, t = (g[c] for c in ("n", "a", "b", "u", "v", "t"))
    N = table.per_cell(n)
    cell = table.per_cell
    # Every level has a dM_k row, so both sides' sorted true-class probabilities are needed.
    sides = (
        _SortedSide(table, table.clean_true_prob, table.clean_correct),
        _SortedSide(table, table.pert_true_prob, table.pert_correct),
    )
    out = {}
    if "I0" in levels:
        out["H", "I0"] = (cell(np.maximum(0, u + t - n)) / N, cell(np.minimum(u, t)) / N)
        out["L", "I0"] = (cell(np.maximum(0, u + v - n)) / N, cell(np.minimum(u, v)) / N)
        out["dM_k", "I0"] = _dmk_variable_support(sides, a, b, n, table)
    if "Ik" in levels or "I5" in levels:
        k = table.observed_k
        h = a - k
        l_bounds = (cell(np.maximum(0, k - (a - u) - (b - v))) / N, cell(np.minimum(np.minimum(u, v), k)) / N)
        dmk = _dmk_fixed_support(sides, k, table)
        if "Ik" in levels:
            out["H", "Ik"] = (
                cell(np.maximum(0, h - (a - u) - ((n - b) - t))) / N,
                cell(np.minimum(np.minimum(u, t), h)) / N,
            )
            out["L", "Ik"] = l_bounds
            out["dM_k", "Ik"] = dmk
        if "I5" in levels:
            # With no clean record correct and accepted, H is 0 whatever the flip endpoints are.
            # Only max(0, t_min − (a − u)) and min(u, t_max) are used: the solver may clip there.
            t_min, t_max = flip_ranges(table, table.pert_max_prob >= tau, skip=u == 0, floor=a - u, cap=u)
            out["H", "I5"] = (cell(np.maximum(0, t_min - (a - u))) / N, cell(np.minimum(u, t_max)) / N)
            # Theorem 1 (001): five-state counts add nothing for L and dM_k.
            out["L", "I5"] = l_bounds
            out["dM_k", "I5"] = dmk
    return out


def _observed_arrays(table: ClassTable, tau: float) -> dict[str, np.ndarray]:
    cc, pc = table.clean_correct, table.pert_correct
    zc, zp = table.clean_max_prob >= tau, table.pert_max_prob >= tau
    N = table.per_cell(table.group_n)
    kk = cc & pc
    K = table.per_cell(table.per_group(kk))
    drop = table.per_cell(table.per_group(kk, table.clean_true_prob - table.pert_true_prob))
    return {
        "H": table.per_cell(table.per_group(cc & zc & ~pc & zp)) / N,
        "L": table.per_cell(table.per_group(kk & zc & ~zp)) / N,
        "dM_k": np.where(K > 0, drop / np.where(K > 0, K, 1), np.nan),
    }


# --- dM_k -------------------------------------------------------------------------------------


class _SortedSide:
    """Values of one side's correct records, sorted within each group."""

    def __init__(self, table: ClassTable, values: np.ndarray, mask: np.ndarray):
        groups = table.record_group[mask]
        order = np.lexsort((values[mask], groups))
        self.values = values[mask][order]
        self.group = groups[order]
        self.count = np.bincount(groups, minlength=len(table.group_n))
        self.start = np.concatenate([[0], np.cumsum(self.count)])
        self.rank = np.arange(len(self.values)) - self.start[self.group]
        self._cum = None

    def sum_smallest(self, j: np.ndarray) -> np.ndarray:
        """Per group, the sum of its ``j[group]`` smallest values (sequential, exact to rounding)."""
        keep = self.rank < j[self.group]
        return np.bincount(self.group, weights=np.where(keep, self.values, 0.0), minlength=len(self.count))

    def sum_largest(self, j: np.ndarray) -> np.ndarray:
        keep = self.rank >= self.count[self.group] - j[self.group]
        return np.bincount(self.group, weights=np.where(keep, self.values, 0.0), minlength=len(self.count))

    def prefix(self, group: np.ndarray, j: np.ndarray, *, largest: bool) -> np.ndarray:
        """Sums of the ``j`` smallest (or largest) values of ``group``, for many (group, j) pairs."""
        if self._cum is None:
            # Extended precision keeps differences of one long running sum exact to ~1e-13.
            self._cum = np.concatenate([[0], np.cumsum(self.values.astype(np.longdouble))])
        if largest:
            e = self.start[group + 1]
            return (self._cum[e] - self._cum[e - j]).astype(float)
        s = self.start[group]
        return (self._cum[s + j] - self._cum[s]).astype(float)


def _dmk_fixed_support(sides, k: np.ndarray, table: ClassTable) -> tuple[np.ndarray, np.ndarray]:
    x, z = sides
    low = table.per_cell(x.sum_smallest(k) - z.sum_largest(k))
    high = table.per_cell(x.sum_largest(k) - z.sum_smallest(k))
    K = table.per_cell(k)
    undefined = K == 0
    if undefined.any():
        # stacklevel 5: _interval_arrays, _long, the public function, its caller.
        warn_undefined(
            f"dM_k is undefined (NaN) in {int(undefined.sum())} cell(s) with no retained-correct pair (K = 0).",
            stacklevel=5,
        )
    safe = np.where(undefined, 1, K)
    return np.where(undefined, np.nan, low / safe), np.where(undefined, np.nan, high / safe)


def _dmk_variable_support(
    sides, a: np.ndarray, b: np.ndarray, n: np.ndarray, table: ClassTable
) -> tuple[np.ndarray, np.ndarray]:
    x, z = sides
    k_lo, k_hi = np.maximum(0, a + b - n), np.minimum(a, b)
    n_opt = k_hi - k_lo + 1
    opt_start = np.concatenate([[0], np.cumsum(n_opt)])
    opt_group = np.repeat(np.arange(len(n)), n_opt)
    opt_k = k_lo[opt_group] + (np.arange(opt_start[-1]) - opt_start[opt_group])
    low_num = x.prefix(opt_group, opt_k, largest=False) - z.prefix(opt_group, opt_k, largest=True)
    high_num = x.prefix(opt_group, opt_k, largest=True) - z.prefix(opt_group, opt_k, largest=False)
    low = _min_ratio(low_num, opt_k, opt_group, opt_start, table.group_cell, table.n_cells)
    high = 0.0 - _min_ratio(-high_num, opt_k, opt_group, opt_start, table.group_cell, table.n_cells)
    undefined = np.isnan(low)
    if undefined.any():
        warn_undefined(
            f"dM_k at I0 is undefined (NaN) in {int(undefined.sum())} cell(s): no class can retain a correct pair.",
            stacklevel=5,
        )
    return low, high


def _min_ratio(
    num: np.ndarray, k: np.ndarray, opt_group: np.ndarray, opt_start: np.ndarray, group_cell: np.ndarray, n_cells: int
) -> np.ndarray:
    """Per cell, ``min Σ_y num_y(k_y) / Σ_y k_y`` over one option per group with ``Σ k > 0``.

    Options of a group are contiguous (``opt_start``) with ``k`` increasing. Dinkelbach's
    iteration: with ``r`` the ratio of the current choice, pick per group the option
    minimising ``num − r·k`` (forcing one group to ``k ≥ 1`` if all chose 0); if the total is
    not negative, ``r`` is optimal, else move to the new choice's (strictly smaller) ratio.
    Returns NaN for cells where every group has only ``k = 0``.
    """
    n_groups = len(opt_start) - 1
    starts = opt_start[:-1]
    idx = np.arange(len(num))
    cell_of_opt = group_cell[opt_group]
    cell_first_group = np.searchsorted(group_cell, np.arange(n_cells))
    last = opt_start[1:] - 1

    def per_cell(values_per_group):
        return np.bincount(group_cell, weights=values_per_group, minlength=n_cells)

    K = per_cell(k[last].astype(float))
    defined = K > 0
    ratio = np.where(defined, per_cell(num[last]) / np.where(defined, K, 1), 0.0)
    active = defined.copy()
    for _ in range(200):
        if not active.any():
            break
        val = num - ratio[cell_of_opt] * k
        best = np.minimum.reduceat(val, starts)
        choice = np.maximum.reduceat(np.where(val <= best[opt_group], idx, -1), starts)
        zero = active & (per_cell(k[choice].astype(float)) == 0)
        if zero.any():
            positive = np.where(k >= 1, val, np.inf)
            best1 = np.minimum.reduceat(positive, starts)
            choice1 = np.maximum.reduceat(np.where((positive <= best1[opt_group]) & (k >= 1), idx, -1), starts)
            penalty = best1 - best
            cheapest = np.minimum.reduceat(penalty, cell_first_group)
            pick = np.minimum.reduceat(
                np.where(penalty <= cheapest[group_cell], np.arange(n_groups), n_groups), cell_first_group
            )
            switch = pick[zero]
            choice[switch] = choice1[switch]
        total = per_cell(val[choice])
        K_new = per_cell(k[choice].astype(float))
        improve = active & (total < -_RATIO_TOL * np.maximum(1.0, K_new))
        new_ratio = per_cell(num[choice]) / np.where(K_new > 0, K_new, 1)
        # Guard against rounding cycles: only strictly smaller ratios count as progress.
        improve &= new_ratio < ratio
        ratio = np.where(improve, new_ratio, ratio)
        active = improve
    return np.where(defined, ratio, np.nan)
