"""Rejection policies compared under a shared correspondence (SPEC B.3).

The clean threshold ``τ0`` is fixed at the clean-development coverage ``clean_coverage``
(default 80 %); perturbed-side policies ``j`` accept ``S′ ≥ τ_j`` with ``τ_j`` reaching the
clean-development coverages ``q_j`` (default .6, .7, .8, .9, 1.0; all ties accepted). Per cell
and correspondence π,

    H_j(π) = P(C=1, Z=1, C′=0, Z′_j=1)        L_j(π) = P(C=1, Z=1, C′=1, Z′_j=0)
    J_j(π) = λ·H_j(π) + (1−λ)·L_j(π)           J′_j(π) = λ·E_τj + (1−λ)·L_j(π)

(costs: larger = worse). For every information level (I0, Ik, I5) this module reports

* the separate interval ``[J̲_j, J̄_j]``: the upper end by Lemma 1 (001, App. A.7) — per class
  maximise ``λh + (1−λ)l`` over the sharp count intervals of ``h``, ``l`` with ``h + l ≤ u`` —
  and the lower end exactly;
* the shared-correspondence difference ``D⁺_jℓ = max_π [J_j(π) − J_ℓ(π)]``. ``D⁺_jℓ < −1e-12``
  certifies that ``j`` costs less than ``ℓ`` under *every* feasible correspondence, even where
  the separate intervals overlap (``J̄_j − J̲_ℓ ≥ 0``);
* worst-case regret ``R_j = max_ℓ D⁺_jℓ`` and the minimax-regret policy, against the policy of
  least mean cost over uniformly weighted feasible correspondences;
* the same for ``J′`` (Corollary 1: Ik and I5 coincide).

How the optimisation is exact. Within a class only the ``u`` clean records that are correct
and accepted carry cost, each according to the perturbed record it is matched to. At Ik
(and I0) the ``k`` perturbed correct partners and the ``h`` wrong partners of clean-correct
records can be any subsets, so the class maximum is ``max_g [top_{u−g}(correct values) +
top_g(wrong values)]`` over the ``g`` clean-correct-and-accepted records facing wrong ones —
a concave piecewise-linear function of ``g``, maximised at a kink. At I5 the wrong partners
must be a five-state-feasible placement; every cost compared here gives the wrong records at
most two values (0 and one signed weight), so only the extreme number of flip endpoints in
one record subset matters, which :func:`core.paired._fivestate.flip_ranges` computes exactly.
The feasible mean is a closed form at I0 and Ik; at I5 it is exact where the placements can be
listed (``mean_method = "exact"``) and a seeded Monte Carlo estimate otherwise
(``mean_method = "estimate"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core._rng import as_generator, keyed_generator
from core.constants import CLEAN_COVERAGE, COVERAGES
from core.paired._fivestate import expected_flips, flip_ranges, sampled_flips
from core.paired.bounds import LEVELS, check_levels
from core.paired.records import CELL_COLUMNS, validate_records
from core.paired.states import ClassTable, class_table, development_thresholds

__all__ = [
    "COVERAGES",
    "LAMBDAS",
    "PolicyReport",
    "evaluate_policies",
    "policy_thresholds",
    "select_policy",
]

LAMBDAS = tuple(round(0.1 * i, 1) for i in range(11))
# Certificates and ties use the paper's numerical strictness.
TOL = 1e-12


# ---------------------------------------------------------------------------------------------
# Thresholds and the tie rule


def policy_thresholds(
    records: pd.DataFrame, *, coverages: Sequence[float] = COVERAGES, clean_coverage: float = CLEAN_COVERAGE
) -> pd.DataFrame:
    """Clean and perturbed-side thresholds of every model from clean development coverage.

    Parameters
    ----------
    records : DataFrame
        Paired records; development rows are those with ``split == "dev"`` (all rows of a model
        without any, ``scope = "all"``), see :func:`core.paired.states.development_thresholds`.
    coverages : sequence of float in (0, 1]
        Nominal coverages ``q_j`` of the perturbed-side policies, in policy order.
    clean_coverage : float in (0, 1]
        Coverage of the fixed clean threshold ``τ0``.

    Returns
    -------
    DataFrame
        One row per (model, policy): ``model, policy`` (0-based index), ``coverage, tau,
        tau_clean, n_dev, scope``.
    """
    qs = _coverages_iv(coverages)
    found = development_thresholds(records, sorted(set(qs) | {float(clean_coverage)}))
    rows = []
    for model, part in found.groupby("model", sort=True):
        by_q = dict(zip(part["coverage"], part["tau"]))
        for j, q in enumerate(qs):
            rows.append(
                (model, j, q, by_q[q], by_q[float(clean_coverage)], int(part["n_dev"].iloc[0]), part["scope"].iloc[0])
            )
    return pd.DataFrame(rows, columns=["model", "policy", "coverage", "tau", "tau_clean", "n_dev", "scope"])


def select_policy(values, coverages, *, nominal: float = 0.8, tol: float = TOL) -> int:
    """Index of the smallest value, with the paper's tie rule (001, App. D).

    Values within ``tol`` of the minimum are tied; ties favour the nominal coverage closest to
    ``nominal``, then the lower coverage, then the lower policy index.

    Examples
    --------
    >>> select_policy([0.2, 0.1, 0.1 + 1e-13, 0.3], [0.6, 0.7, 0.8, 0.9])
    2
    """
    v = np.asarray(values, dtype=float)
    q = np.asarray(coverages, dtype=float)
    if v.shape != q.shape or v.ndim != 1 or v.size == 0:
        raise ValueError(f"`values` and `coverages` must be 1-D of equal length; got {v.shape} and {q.shape}.")
    if np.isnan(v).all():
        raise ValueError("`values` are all NaN; no policy can be selected.")
    return int(_select(v[None], q[None], nominal, tol)[0])


def _coverages_iv(coverages) -> list[float]:
    qs = [float(q) for q in coverages]
    if not qs or any(not 0 < q <= 1 for q in qs) or len(set(qs)) != len(qs):
        raise ValueError(f"`coverages` must be distinct numbers in (0, 1]; got {list(coverages)!r}.")
    return qs


def _lambdas_iv(lambdas) -> np.ndarray:
    lam = np.asarray(list(lambdas), dtype=float)
    if lam.ndim != 1 or lam.size == 0 or np.any((lam < 0) | (lam > 1)) or np.isnan(lam).any():
        raise ValueError(f"`lambdas` must be a non-empty sequence of weights in [0, 1]; got {list(lambdas)!r}.")
    return lam


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True, kw_only=True)
class PolicyReport:
    """Policy costs, comparisons and selections for every cell, level and cost weight.

    Attributes
    ----------
    thresholds : DataFrame
        ``model, policy, coverage, tau, tau_clean, n_dev, scope`` (see :func:`policy_thresholds`).
    costs : DataFrame
        One row per (cell, level, lambda, policy): ``model, condition, source, level, lambda,
        policy, coverage, tau, J_low, J_high, J_mean, mean_method, J_observed, E_tau,
        Jp_low, Jp_high, Jp_observed``. ``J_high`` is Lemma 1's bound; ``J_mean`` the mean over
        uniformly weighted feasible correspondences; ``*_observed`` use the recorded pairing
        (NaN without one); ``Jp_*`` the cost ``J′``. Costs are shares of the cell's pairs.
    differences : DataFrame
        One row per (cell, level, lambda, ordered pair ``policy ≠ versus``): ``D_plus``
        (= ``D⁺``), ``separate_gap`` (= ``J̄_policy − J̲_versus``), ``certified``
        (``D_plus < −1e-12``), ``certified_separately`` (``separate_gap < −1e-12``),
        ``missed_by_separate`` (certified only through the shared correspondence),
        ``mixed_switch`` (the records whose acceptance differs between the two thresholds
        include correct and wrong ones), ``Dp_plus`` and ``certified_prime`` for ``J′``.
    selection : DataFrame
        One row per (cell, level, lambda): ``minimax_policy, minimax_coverage,
        worst_case_regret, mean_policy, mean_coverage, mean_method``, and with a recorded
        pairing ``best_observed_policy, observed_regret_minimax, observed_regret_mean``.
    """

    thresholds: pd.DataFrame
    costs: pd.DataFrame
    differences: pd.DataFrame
    selection: pd.DataFrame


# ---------------------------------------------------------------------------------------------
# Per-class optimisation over the clean records that are correct and accepted


def _top(m, size, value, count):
    """Sum of the ``m`` largest of ``size`` numbers: ``count`` equal to ``value``, the rest 0."""
    return np.where(value >= 0, value * np.minimum(m, count), value * np.maximum(0, m - (size - count)))


def _best_allocation(u, g_lo, g_hi, corr_size, corr_value, corr_count, wrong_size, wrong_value, wrong_count):
    """max over g ∈ [g_lo, g_hi] of top_{u−g}(correct) + top_g(wrong); concave in g."""
    kink_c = u - np.where(corr_value >= 0, corr_count, corr_size - corr_count)
    kink_w = np.where(wrong_value >= 0, wrong_count, wrong_size - wrong_count)
    best = None
    for g in (g_lo, g_hi, np.clip(kink_c, g_lo, g_hi), np.clip(kink_w, g_lo, g_hi)):
        value = _top(u - g, corr_size, corr_value, corr_count) + _top(g, wrong_size, wrong_value, wrong_count)
        best = value if best is None else np.maximum(best, value)
    return best


def _lemma1(h_lo, h_hi, l_lo, l_hi, u, lam):
    """Lemma 1: max λh + (1−λ)l over the two sharp count intervals with h + l ≤ u."""
    fits = h_hi + l_hi <= u
    corner1 = lam * h_hi + (1 - lam) * np.clip(u - h_hi, l_lo, l_hi)
    corner2 = lam * np.clip(u - l_hi, h_lo, h_hi) + (1 - lam) * l_hi
    return np.where(fits, lam * h_hi + (1 - lam) * l_hi, np.maximum(corner1, corner2))


# ---------------------------------------------------------------------------------------------
# Main entry point


def evaluate_policies(
    records: pd.DataFrame,
    *,
    thresholds: pd.DataFrame | None = None,
    coverages: Sequence[float] = COVERAGES,
    clean_coverage: float = CLEAN_COVERAGE,
    lambdas: Sequence[float] = LAMBDAS,
    levels: Sequence[str] = LEVELS,
    seed: int | np.random.Generator = 0,
    n_draws: int = 4000,
    max_placements: int = 20000,
) -> PolicyReport:
    """Policy costs, shared-correspondence certificates and selections (SPEC B.3).

    Parameters
    ----------
    records : DataFrame
        Paired records of any number of cells. Rows with ``split == "dev"`` set the thresholds;
        the comparison uses ``split == "eval"`` rows (all rows without a ``split`` column).
    thresholds : DataFrame, optional
        Precomputed thresholds with columns ``model, coverage, tau, tau_clean`` (one row per
        model and policy, in policy order); by default :func:`policy_thresholds`.
    coverages : sequence of float in (0, 1], default=(.6, .7, .8, .9, 1.0)
        Nominal coverages of the policies (ignored when ``thresholds`` is given).
    clean_coverage : float in (0, 1], default=0.8
        Coverage of the clean threshold, and the nominal coverage favoured by ties.
    lambdas : sequence of float in [0, 1], default=(0, .1, …, 1)
        Cost weights of accepted errors (``λ``) against lost acceptances (``1 − λ``).
    levels : sequence of {"I0", "Ik", "I5"}
        Information levels to evaluate.
    seed : int or numpy Generator, default=0
        Seeds the Monte Carlo estimate of the I5 feasible mean for classes too large to list.
        Each class draws from its own stream keyed by this seed and the class's model,
        condition, source and label, so the estimate of a class does not depend on the other
        records of the call or on row order.
    n_draws : int, default=4000
        Accepted draws per class for that estimate.
    max_placements : int, default=20000
        Classes with at most this many placements get the exact I5 feasible mean.

    Returns
    -------
    PolicyReport
    """
    records = validate_records(records)
    lam = _lambdas_iv(lambdas)
    levels = check_levels(levels)
    for name, value in (("n_draws", n_draws), ("max_placements", max_placements)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be a positive integer; got {value!r}.")
    if thresholds is None:
        thresholds = policy_thresholds(records, coverages=coverages, clean_coverage=clean_coverage)
    taus, tau_clean, cov = _threshold_arrays(thresholds)
    evaluation = records
    if "split" in records.columns and (records["split"] == "eval").any():
        evaluation = records[records["split"] == "eval"]
    table = class_table(evaluation, validate=False)
    model_index = pd.Index(sorted(thresholds["model"].astype(str).unique()))
    cell_model = model_index.get_indexer(table.cells["model"])
    if (cell_model < 0).any():
        missing = table.cells["model"][cell_model < 0].iloc[0]
        raise ValueError(f"`thresholds` has no row for model {missing!r}.")
    engine = _Engine(table, taus[cell_model], tau_clean[cell_model], as_generator(seed), n_draws, max_placements)
    return engine.report(thresholds, taus[cell_model], cov[cell_model], lam, levels, nominal=float(clean_coverage))


def _threshold_arrays(thresholds: pd.DataFrame):
    needed = ("model", "coverage", "tau", "tau_clean")
    missing = [c for c in needed if c not in thresholds.columns]
    if missing:
        raise ValueError(f"`thresholds` lacks column(s) {missing}; it has {list(thresholds.columns)}.")
    named = thresholds.assign(model=thresholds["model"].astype(str))
    frames = dict(tuple(named.groupby("model", sort=True)))
    sizes = {len(p) for p in frames.values()}
    if len(sizes) != 1:
        raise ValueError(f"`thresholds` must give every model the same number of policies; got sizes {sorted(sizes)}.")
    taus = np.stack([p["tau"].to_numpy(dtype=float) for p in frames.values()])
    cov = np.stack([p["coverage"].to_numpy(dtype=float) for p in frames.values()])
    tau_clean = np.array([p["tau_clean"].iloc[0] for p in frames.values()], dtype=float)
    if np.any((taus < 0) | (taus > 1)) or np.any((tau_clean < 0) | (tau_clean > 1)) or np.isnan(taus).any():
        raise ValueError("`thresholds` must hold thresholds in [0, 1].")
    return taus, tau_clean, cov


class _Engine:
    """Per-group counts for one set of records and thresholds, and the steps that turn them
    into a :class:`PolicyReport`: the sharp count intervals (:meth:`count_intervals`), the
    five-state flip ranges and feasible means (:meth:`flip_range`, :meth:`mean_flips_inside`),
    the costs of one (level, λ) (:meth:`costs`), the shared-correspondence differences
    (:meth:`differences`), then the selection and the long frames (:meth:`report`)."""

    def __init__(self, table: ClassTable, taus: np.ndarray, tau_clean: np.ndarray, rng, n_draws, max_placements):
        self.table = table
        self.P = taus.shape[1]
        rec_cell = table.group_cell[table.record_group]
        cc, pc = table.clean_correct, table.pert_correct
        self.cc, self.pc = cc, pc
        self.zc = table.clean_max_prob >= tau_clean[rec_cell]
        self.accept = [table.pert_max_prob >= taus[rec_cell, j] for j in range(self.P)]
        self.taus_group = taus[table.group_cell]  # (G, P)
        g = table.per_group
        self.n, self.a, self.b = table.group_n, g(cc), g(pc)
        self.u = g(cc & self.zc)
        self.k = table.observed_k
        self.h = self.a - self.k
        self.N = table.per_cell(self.n)
        self.v = [g(pc & ~acc) for acc in self.accept]  # correct, rejected by j
        self.t = [g(~pc & acc) for acc in self.accept]  # wrong, accepted by j
        self.E = [table.per_cell(t) / self.N for t in self.t]
        self.pairs = [(j, l) for j in range(self.P) for l in range(self.P) if j != l]
        self.band_c, self.band_w = self._band_counts()
        # One draw from the caller's stream keys every class's own Monte Carlo stream.
        self.stream_key = int(rng.integers(2**63))
        self.n_draws, self.max_placements = n_draws, max_placements
        self._ranges = {}
        self._means = None

    def _band_counts(self) -> tuple[dict, dict]:
        """Per group, the correct and the wrong perturbed records accepted by exactly one of
        the policies ``j < l``, keyed by ``(j, l)``."""
        band_c, band_w = {}, {}
        for j in range(self.P):
            for l in range(j + 1, self.P):
                band = self.accept[j] ^ self.accept[l]
                band_c[j, l] = self.table.per_group(self.pc & band)
                band_w[j, l] = self.table.per_group(~self.pc & band)
        return band_c, band_w

    # -- five-state extremes, computed once per record subset
    def flip_range(self, key) -> tuple[np.ndarray, np.ndarray]:
        if key not in self._ranges:
            mask = self.accept[key] if isinstance(key, int) else self.accept[key[0]] ^ self.accept[key[1]]
            self._ranges[key] = flip_ranges(self.table, mask, skip=self.u == 0)
        return self._ranges[key]

    def _g_range(self, level):
        if level == "I0":
            return np.maximum(0, self.u - self.b), np.minimum(self.u, self.n - self.b)
        return np.maximum(0, self.u - self.k), np.minimum(self.u, self.h)

    def _best(self, level, corr_value, corr_count, wrong_value, wrong_count, subset):
        """Per-group max of the summed record values over the level's correspondences."""
        g_lo, g_hi = self._g_range(level)
        wrong_size = self.n - self.b
        if level == "I5" and subset is not None:
            low, high = self.flip_range(subset)
            wrong_count = np.where(wrong_value >= 0, high, low)
            wrong_size = self.h
        return _best_allocation(
            self.u, g_lo, g_hi, self.b, corr_value, corr_count, wrong_size, wrong_value, wrong_count
        )

    def count_intervals(self, level, j):
        """Sharp per-group intervals of the H_j and L_j counts."""
        n, a, b, u, k, h, v, t = self.n, self.a, self.b, self.u, self.k, self.h, self.v[j], self.t[j]
        if level == "I0":
            return (np.maximum(0, u + t - n), np.minimum(u, t)), (np.maximum(0, u + v - n), np.minimum(u, v))
        l_iv = (np.maximum(0, k - (a - u) - (b - v)), np.minimum(np.minimum(u, v), k))
        if level == "Ik":
            return (np.maximum(0, h - (a - u) - ((n - b) - t)), np.minimum(np.minimum(u, t), h)), l_iv
        low, high = self.flip_range(j)
        return (np.maximum(0, low - (a - u)), np.minimum(u, high)), l_iv

    def observed_counts(self, j):
        hit = self.cc & self.zc
        return (
            self.table.per_group(hit & ~self.pc & self.accept[j]),
            self.table.per_group(hit & self.pc & ~self.accept[j]),
        )

    # -- feasible mean
    def mean_flips_inside(self, level, j) -> np.ndarray:
        """Expected flip endpoints accepted by j per group under uniform feasible bijections."""
        wrong = self.n - self.b
        uniform = np.where(wrong > 0, self.h * self.t[j] / np.maximum(wrong, 1), 0.0)
        if level != "I5":
            return uniform
        per_label, _ = self._i5_flip_means()
        out = uniform.copy()
        for grp, (labels, mean) in per_label.items():
            sl = slice(self.table.group_start[grp], self.table.group_start[grp + 1])
            wp = ~self.pc[sl]
            pl = self.table.pert_pred[sl][wp]
            acc = self.accept[j][sl][wp]
            d = np.bincount(np.searchsorted(labels, pl), minlength=len(labels))
            d_in = np.bincount(np.searchsorted(labels, pl[acc]), minlength=len(labels))
            out[grp] = float(np.sum(mean * np.where(d > 0, d_in / np.maximum(d, 1), 0.0)))
        return out

    def mean_method(self, level) -> np.ndarray:
        """How each cell's feasible mean was found: ``closed form``, ``exact`` or ``estimate``."""
        if level == "I5":
            return np.where(self.table.per_cell(self._i5_flip_means()[1]) > 0, "estimate", "exact").astype(object)
        return np.full(self.table.n_cells, "closed form", dtype=object)

    def _group_stream(self, grp: int) -> np.random.Generator:
        """A generator for class ``grp`` keyed by (caller's seed, model, condition, source, label)."""
        cell = self.table.cells.iloc[int(self.table.group_cell[grp])]
        return keyed_generator(self.stream_key, *cell.tolist(), self.table.group_label[grp])

    def _i5_flip_means(self):
        """Per group needing it, (labels, E[flip endpoints per label]) under uniform I5 bijections,
        and which groups were estimated by Monte Carlo (bool, shape (n_groups,))."""
        if self._means is not None:
            return self._means
        table = self.table
        obs = table.observed
        s, w = obs[:, 2], obs[:, 3]
        mixed = np.zeros(len(self.n), dtype=bool)
        wrong = self.n - self.b
        for t in self.t:
            mixed |= (t > 0) & (t < wrong)
        need = (self.h > 0) & (s + w > 0) & (self.u > 0) & mixed
        per_label, estimated = {}, np.zeros(len(self.n), dtype=bool)
        for grp in np.flatnonzero(need):
            sl = slice(table.group_start[grp], table.group_start[grp + 1])
            cw = table.clean_pred[sl][~self.cc[sl]]
            pw = table.pert_pred[sl][~self.pc[sl]]
            labels = np.union1d(cw, pw)
            if len(labels) < 2:
                continue
            c = np.bincount(np.searchsorted(labels, cw), minlength=len(labels))
            d = np.bincount(np.searchsorted(labels, pw), minlength=len(labels))
            mean = expected_flips(c, d, s=int(s[grp]), w=int(w[grp]), limit=self.max_placements)
            if mean is None:
                # The estimate must depend on the class alone, not on which other classes share the
                # call or on row order (a sharded grid must equal one call): sorted labels and a
                # stream keyed by the class's cell and label.
                mean, _ = sampled_flips(
                    np.sort(cw),
                    np.sort(pw),
                    s=int(s[grp]),
                    w=int(w[grp]),
                    seed=self._group_stream(grp),
                    n_draws=self.n_draws,
                )
                estimated[grp] = True
            per_label[grp] = (labels, mean)
        self._means = (per_label, estimated)
        return self._means

    # -- the costs of one (level, λ)
    def costs(self, level, x, intervals, inside, observed) -> dict[str, np.ndarray]:
        """``J`` (separate interval, feasible mean, observed) and ``J′`` of every policy: arrays
        of shape (n_cells, P), shares of the cell's pairs."""
        per_cell, N, P = self.table.per_cell, self.N, self.P
        ca_share = np.where(self.a > 0, self.u / np.maximum(self.a, 1), 0.0)
        cost = {
            name: np.full((self.table.n_cells, P), np.nan)
            for name in ("J_low", "J_high", "J_mean", "J_observed", "Jp_low", "Jp_high", "Jp_observed")
        }
        for j in range(P):
            (h_lo, h_hi), (l_lo, l_hi) = intervals[j]
            cost["J_high"][:, j] = per_cell(_lemma1(h_lo, h_hi, l_lo, l_hi, self.u, x)) / N
            cost["J_low"][:, j] = -per_cell(self._best(level, -(1 - x), self.v[j], -x, self.t[j], j)) / N
            if level == "I0":
                mean_h, mean_l = self.u * self.t[j] / self.n, self.u * self.v[j] / self.n
            else:
                mean_h = ca_share * inside[j]
                mean_l = ca_share * self.v[j] * self.k / np.maximum(self.b, 1)
            cost["J_mean"][:, j] = per_cell(x * mean_h + (1 - x) * mean_l) / N
            cost["Jp_low"][:, j] = x * self.E[j] + (1 - x) * per_cell(l_lo) / N
            cost["Jp_high"][:, j] = x * self.E[j] + (1 - x) * per_cell(l_hi) / N
            if self.table.paired:
                cost["J_observed"][:, j] = per_cell(x * observed[j][0] + (1 - x) * observed[j][1]) / N
                cost["Jp_observed"][:, j] = x * self.E[j] + (1 - x) * per_cell(observed[j][1]) / N
        return cost

    def differences(self, level, x) -> tuple[np.ndarray, np.ndarray]:
        """``D⁺_jl`` and its ``J′`` twin for every ordered pair: arrays of shape (n_cells, P, P)
        (zero on the diagonal)."""
        per_cell, N = self.table.per_cell, self.N
        # sign[g, j, l] = +1 if τ_j < τ_l: policy j accepts records that l rejects.
        sign = np.sign(self.taus_group[:, None, :] - self.taus_group[:, :, None])
        D = np.zeros((self.table.n_cells, self.P, self.P))
        Dp = np.zeros((self.table.n_cells, self.P, self.P))
        for j, l in self.pairs:
            key = (min(j, l), max(j, l))
            sg = sign[:, j, l]
            corr_value = -(1 - x) * sg
            D[:, j, l] = per_cell(self._best(level, corr_value, self.band_c[key], x * sg, self.band_w[key], key)) / N
            # J′ charges accepted errors through the marginal E_τ: only L moves with π.
            Dp[:, j, l] = (
                x * (self.E[j] - self.E[l])
                + per_cell(self._best(level, corr_value, self.band_c[key], 0.0, 0, None)) / N
            )
        return D, Dp

    def mixed_switch(self) -> np.ndarray:
        """(n_cells, n_pairs) bool: the records accepted by exactly one policy of a pair include
        correct and wrong ones."""
        per_cell = self.table.per_cell
        keys = [(min(p), max(p)) for p in self.pairs]
        return np.stack([(per_cell(self.band_c[key]) > 0) & (per_cell(self.band_w[key]) > 0) for key in keys], axis=1)

    # -- assemble
    def report(self, thresholds, taus_cells, cov_cells, lam, levels, *, nominal) -> PolicyReport:
        cells = self.table.cells
        observed = [self.observed_counts(j) for j in range(self.P)]
        mixed = self.mixed_switch()
        blocks = {"costs": [], "differences": [], "selection": []}
        for level in levels:
            intervals = [self.count_intervals(level, j) for j in range(self.P)]
            inside = [self.mean_flips_inside(level, j) for j in range(self.P)]
            method = self.mean_method(level)
            for x in lam:
                cost = self.costs(level, x, intervals, inside, observed)
                D, Dp = self.differences(level, x)
                selection = _selection(cost, D, cov_cells, method, nominal, paired=self.table.paired)
                blocks["costs"].append(_cost_frame(cells, level, x, cost, taus_cells, cov_cells, method, self.E))
                blocks["differences"].append(
                    _difference_frame(cells, level, x, self.pairs, cost, D, Dp, cov_cells, mixed)
                )
                blocks["selection"].append(_frame(cells, level, x, 1, {k: v[:, None] for k, v in selection.items()}))
        return PolicyReport(
            thresholds=thresholds.reset_index(drop=True),
            **{name: pd.concat(parts, ignore_index=True) for name, parts in blocks.items()},
        )


def _selection(cost, D, cov_cells, method, nominal, *, paired) -> dict[str, np.ndarray]:
    """Minimax-regret and least-mean-cost policies of every cell (and, with a recorded pairing,
    the best observed one and the regrets of both picks against it): arrays of shape (n_cells,)."""
    regret = D.max(axis=2)
    minimax = _select(regret, cov_cells, nominal)
    mean_pick = _select(cost["J_mean"], cov_cells, nominal)
    n_cells = len(regret)
    rows = np.arange(n_cells)
    selection = {
        "minimax_policy": minimax,
        "minimax_coverage": cov_cells[rows, minimax],
        "worst_case_regret": regret[rows, minimax],
        "mean_policy": mean_pick,
        "mean_coverage": cov_cells[rows, mean_pick],
        "mean_method": method,
        "best_observed_policy": np.full(n_cells, -1),
        "observed_regret_minimax": np.full(n_cells, np.nan),
        "observed_regret_mean": np.full(n_cells, np.nan),
    }
    if paired:
        floor = cost["J_observed"].min(axis=1)
        selection["best_observed_policy"] = _select(cost["J_observed"], cov_cells, nominal)
        selection["observed_regret_minimax"] = cost["J_observed"][rows, minimax] - floor
        selection["observed_regret_mean"] = cost["J_observed"][rows, mean_pick] - floor
    return selection


def _cost_frame(cells, level, x, cost, taus_cells, cov_cells, method, E) -> pd.DataFrame:
    """The rows of :attr:`PolicyReport.costs` of one (level, λ)."""
    P = cov_cells.shape[1]
    columns = {
        "policy": np.arange(P),
        "coverage": cov_cells,
        "tau": taus_cells,
        **cost,
        "mean_method": np.repeat(method[:, None], P, axis=1),
        "E_tau": np.stack(E, axis=1),
    }
    return _frame(cells, level, x, P, columns)


def _difference_frame(cells, level, x, pairs, cost, D, Dp, cov_cells, mixed) -> pd.DataFrame:
    """The rows of :attr:`PolicyReport.differences` of one (level, λ)."""
    jj, ll = np.array(pairs).T
    gap = cost["J_high"][:, jj] - cost["J_low"][:, ll]
    d_plus, dp_plus = D[:, jj, ll], Dp[:, jj, ll]
    columns = {
        "policy": jj,
        "versus": ll,
        "coverage": cov_cells[:, jj],
        "versus_coverage": cov_cells[:, ll],
        "D_plus": d_plus,
        "separate_gap": gap,
        "certified": d_plus < -TOL,
        "certified_separately": gap < -TOL,
        "missed_by_separate": (d_plus < -TOL) & ~(gap < -TOL),
        "mixed_switch": mixed,
        "Dp_plus": dp_plus,
        "certified_prime": dp_plus < -TOL,
    }
    return _frame(cells, level, x, len(pairs), columns)


def _frame(cells: pd.DataFrame, level, x, width, columns: dict) -> pd.DataFrame:
    """Long frame of (n_cells, width) arrays, cell-major; 1-D arrays repeat for every cell."""
    n_cells = len(cells)
    cell_idx = np.repeat(np.arange(n_cells), width)
    out = {c: cells[c].to_numpy()[cell_idx] for c in CELL_COLUMNS}
    out["level"] = np.full(n_cells * width, level)
    out["lambda"] = np.full(n_cells * width, x)
    for name, values in columns.items():
        values = np.asarray(values)
        out[name] = np.tile(values, n_cells) if values.ndim == 1 else values.reshape(-1)
    return pd.DataFrame(out)


def _select(values: np.ndarray, coverages: np.ndarray, nominal: float, tol: float = TOL) -> np.ndarray:
    """Row-wise :func:`select_policy` for arrays of shape (n_rows, P)."""
    values = np.asarray(values, dtype=float)
    idx = np.broadcast_to(np.arange(values.shape[1]), values.shape)
    # Rounded so that e.g. |0.6 − 0.8| and |1.0 − 0.8| count as equal despite float error.
    distance = np.round(np.abs(coverages - nominal), 9)
    order = np.lexsort((idx, coverages, distance), axis=-1)
    finite = ~np.isnan(values).all(axis=1)
    floor = np.min(np.where(np.isnan(values), np.inf, values), axis=1, keepdims=True)
    tied = values <= floor + tol
    first = np.argmax(np.take_along_axis(tied, order, axis=1), axis=1)
    return np.where(finite, order[np.arange(len(values)), first], -1)
