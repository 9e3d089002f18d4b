"""Brute-force twin of the paired-evaluation bounds: enumerate every within-class bijection.

Shared by test_bounds.py and test_policies.py. Deliberately naive: plain Python over
``itertools.permutations`` of each class, no aggregation, no formulas from SPEC beyond the
definitions of the states and targets. Only usable for classes of a handful of records.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVELS = ("I0", "Ik", "I5")


@dataclass
class ClassOutcomes:
    """Everything a single class can produce, one entry per permutation."""

    n: int
    u: int  # clean records correct and accepted (at the clean threshold)
    states: np.ndarray  # (n_perm, 5) counts h, r, s, w, k
    observed: tuple  # the five counts of the identity permutation (the recorded pairing)
    H: np.ndarray  # (n_perm,) count of accepted-correct -> accepted-wrong pairs
    L: np.ndarray  # (n_perm,) count of retained-correct pairs that lose acceptance
    dm_num: np.ndarray  # (n_perm,) Σ (M − M′) over retained-correct pairs
    cost_h: np.ndarray  # (n_perm, n_policies) H_j counts
    cost_l: np.ndarray  # (n_perm, n_policies) L_j counts

    def mask(self, level: str) -> np.ndarray:
        if level == "I0":
            return np.ones(len(self.states), dtype=bool)
        if level == "Ik":
            return self.states[:, 4] == self.observed[4]
        return np.all(self.states == np.array(self.observed), axis=1)


def class_outcomes(part: pd.DataFrame, tau: float, clean_tau: float | None = None, policy_taus=()) -> ClassOutcomes:
    """Enumerate all bijections of one class (rows of ``part`` are the recorded pairs)."""
    y = int(part["true_label"].iloc[0])
    cp, cs, cm = part["clean_pred"].tolist(), part["clean_max_prob"].tolist(), part["clean_true_prob"].tolist()
    pp, ps, pm = part["pert_pred"].tolist(), part["pert_max_prob"].tolist(), part["pert_true_prob"].tolist()
    clean_tau = tau if clean_tau is None else clean_tau
    n = len(cp)
    states, H, L, num, ch, cl = [], [], [], [], [], []
    for perm in itertools.permutations(range(n)):
        st = [0, 0, 0, 0, 0]
        hh = ll = 0
        dn = 0.0
        hj = [0] * len(policy_taus)
        lj = [0] * len(policy_taus)
        for i, j in enumerate(perm):
            c_ok, p_ok = cp[i] == y, pp[j] == y
            if c_ok and not p_ok:
                st[0] += 1
            elif p_ok and not c_ok:
                st[1] += 1
            elif not c_ok and not p_ok:
                st[2 if cp[i] == pp[j] else 3] += 1
            else:
                st[4] += 1
                dn += cm[i] - pm[j]
            if c_ok and cs[i] >= tau and not p_ok and ps[j] >= tau:
                hh += 1
            if c_ok and p_ok and cs[i] >= tau and ps[j] < tau:
                ll += 1
            if c_ok and cs[i] >= clean_tau:
                for q, tj in enumerate(policy_taus):
                    if not p_ok and ps[j] >= tj:
                        hj[q] += 1
                    if p_ok and ps[j] < tj:
                        lj[q] += 1
        states.append(st)
        H.append(hh)
        L.append(ll)
        num.append(dn)
        ch.append(hj)
        cl.append(lj)
    states = np.array(states)
    u = sum(1 for i in range(n) if cp[i] == y and cs[i] >= clean_tau)
    return ClassOutcomes(
        n=n,
        u=u,
        states=states,
        observed=tuple(states[0]),
        H=np.array(H),
        L=np.array(L),
        dm_num=np.array(num),
        cost_h=np.array(ch).reshape(len(states), -1),
        cost_l=np.array(cl).reshape(len(states), -1),
    )


def cell_outcomes(cell: pd.DataFrame, tau: float, clean_tau: float | None = None, policy_taus=()):
    return [class_outcomes(part, tau, clean_tau, policy_taus) for _, part in cell.groupby("true_label", sort=True)]


def brute_intervals(cell: pd.DataFrame, tau: float) -> dict:
    """{(target, level): (low, high)} and {target: observed} by enumeration."""
    classes = cell_outcomes(cell, tau)
    N = sum(c.n for c in classes)
    out = {}
    for level in LEVELS:
        masks = [c.mask(level) for c in classes]
        for target in ("H", "L"):
            lo = sum(getattr(c, target)[m].min() for c, m in zip(classes, masks))
            hi = sum(getattr(c, target)[m].max() for c, m in zip(classes, masks))
            out[target, level] = (lo / N, hi / N)
        # dM_k: for each class, the extreme numerators per retained count k; then every
        # combination of per-class k (a ratio of sums is monotone in the numerator).
        per_class = []
        for c, m in zip(classes, masks):
            ks = c.states[m, 4]
            nums = c.dm_num[m]
            per_class.append({int(k): (nums[ks == k].min(), nums[ks == k].max()) for k in np.unique(ks)})
        lo = hi = None
        for combo in itertools.product(*[sorted(d.items()) for d in per_class]):
            K = sum(k for k, _ in combo)
            if K == 0:
                continue
            r_lo = sum(v[0] for _, v in combo) / K
            r_hi = sum(v[1] for _, v in combo) / K
            lo = r_lo if lo is None else min(lo, r_lo)
            hi = r_hi if hi is None else max(hi, r_hi)
        out["dM_k", level] = (np.nan, np.nan) if lo is None else (lo, hi)
    K_obs = sum(c.observed[4] for c in classes)
    observed = {
        "H": sum(c.H[0] for c in classes) / N,
        "L": sum(c.L[0] for c in classes) / N,
        "dM_k": sum(c.dm_num[0] for c in classes) / K_obs if K_obs else np.nan,
    }
    return out, observed


def n_permutations(cell: pd.DataFrame) -> int:
    sizes = cell.groupby("true_label").size()
    return int(sum(np.prod(range(1, s + 1)) for s in sizes))
