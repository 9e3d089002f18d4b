"""Which wrong perturbed records can sit opposite clean-correct records under five-state counts.

Within one true class, fix the observed five-state counts ``(h, r, s, w, k)``. A bijection
clean → perturbed then consists of four blocks: ``k`` correct–correct pairs, ``h`` harmful
flips (clean correct → perturbed wrong), ``r`` corrections (clean wrong → perturbed correct)
and a wrong–wrong block of ``m = s + w`` pairs of which exactly ``s`` keep the predicted label.
Correct records are interchangeable at every level (paper 001, App. A.3), and wrong records
matter only through their predicted label, so a bijection is feasible exactly when its
*placement* is: ``p_ℓ`` perturbed wrong records of label ℓ go to the harmful-flip block,
``q_ℓ`` clean wrong records of label ℓ go to the correction block, and the rest admits a
wrong–wrong bijection with exactly ``s`` same-label pairs (SPEC B.2). With ``x_ℓ`` same-label
pairs of label ℓ, a zero-diagonal completion of the other ``w`` pairs exists iff no label holds
more than ``w`` of their endpoints, so the placement polytope per label is

    q_ℓ + x_ℓ ≤ c_ℓ,   p_ℓ + x_ℓ ≤ d_ℓ,   p_ℓ + q_ℓ + 2 x_ℓ ≥ c_ℓ + d_ℓ − w,

with ``Σ p = h, Σ q = r, Σ x = s`` and everything a non-negative integer (``c_ℓ``, ``d_ℓ``:
clean and perturbed wrong records predicting ℓ). The coefficient 2 is what makes the
five-state level non-trivial: not every count between the extremes is attainable.

:func:`flip_endpoint_range` returns the smallest and largest number of harmful-flip endpoints
that fall in a chosen subset of the perturbed wrong records (e.g. the accepted ones, for the
I5 bound on ``H``). Records are aggregated into label types, so the problem has at most four
integer variables per distinct wrong label whatever the class size. It is solved exactly by,
in order: closed forms where the counts cannot bind; listing every ``p`` with the O(L)
feasibility test :func:`placement_is_feasible` when the label box is small; otherwise an integer
program (HiGHS branch and bound, zero gap, presolve off — see :func:`_solve`) whose optimum is
re-checked with the same feasibility test. Results are cached per canonical class signature.

:func:`expected_flips` / :func:`sampled_flips` give the mean placement under uniformly weighted
five-state-feasible bijections (exact by rook polynomials, or a seeded Monte Carlo estimate),
for the feasible-mean policy rule of :mod:`core.paired.policies`.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, factorial

import numpy as np

from core.paired.grouped import ClassTable

__all__ = ["expected_flips", "flip_endpoint_range", "flip_ranges", "placement_is_feasible", "sampled_flips"]

# Label boxes up to this many placements are listed exhaustively; larger ones go to the solver.
_ENUMERATION_LIMIT = 4096


def placement_is_feasible(c, d, p, *, s: int, w: int):
    """Whether harmful-flip endpoints ``p`` can be completed into a five-state-feasible bijection.

    Closed form (no search): given ``p`` the remaining choices are ``x`` (same-label pairs) and
    ``q`` (correction sources). For fixed ``x``, ``q`` exists iff
    ``Σ_ℓ max(0, c_ℓ + d_ℓ − w − p_ℓ − 2x_ℓ) ≤ r``; that sum is separable and convex in ``x``,
    so its minimum under ``Σ x = s`` and the box ``max(0, d_ℓ − p_ℓ − w) ≤ x_ℓ ≤
    min(c_ℓ, d_ℓ − p_ℓ)`` is reached greedily (marginal decreases 2, then 1, then 0).

    Parameters
    ----------
    c, d : array-like of int, shape (n_labels,)
        Clean / perturbed wrong-record counts per predicted label.
    p : array-like of int, shape (n_labels,) or (n_candidates, n_labels)
        Perturbed wrong records per label placed opposite clean-correct records.
    s, w : int
        Persistent and changed error counts of the class.

    Returns
    -------
    bool, or ndarray of bool of shape (n_candidates,) for a 2-D ``p``
    """
    c = np.asarray(c, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    p = np.asarray(p, dtype=np.int64)
    single = p.ndim == 1
    p = np.atleast_2d(p)
    r = int(c.sum()) - s - w
    rest = d - p
    x_lo = np.maximum(0, rest - w)
    x_hi = np.minimum(c, rest)
    ok = (
        (r >= 0)
        & (rest.sum(axis=1) == s + w)
        & np.all((p >= 0) & (rest >= 0), axis=1)
        & np.all(x_lo <= x_hi, axis=1)
        & (x_lo.sum(axis=1) <= s)
        & (x_hi.sum(axis=1) >= s)
    )
    deficit = np.maximum(0, c + rest - w - 2 * x_lo)
    room = np.maximum(x_hi - x_lo, 0)
    twos = np.minimum(deficit // 2, room)
    ones = ((deficit - 2 * twos) == 1) & (twos < room)
    extra = s - x_lo.sum(axis=1)
    used_twos = np.minimum(extra, twos.sum(axis=1))
    used_ones = np.minimum(extra - used_twos, ones.sum(axis=1))
    ok &= deficit.sum(axis=1) - 2 * used_twos - used_ones <= r
    return bool(ok[0]) if single else ok


def flip_endpoint_range(c, d_in, d_out, *, s: int, w: int) -> tuple[int, int] | None:
    """Extremes of the number of harmful-flip endpoints inside a subset of the perturbed wrong records.

    Parameters
    ----------
    c : array-like of int, shape (n_labels,)
        Clean wrong records per predicted label.
    d_in, d_out : array-like of int, shape (n_labels,)
        Perturbed wrong records per predicted label inside / outside the subset of interest
        (same label order as ``c``).
    s, w : int
        Persistent (same wrong label) and changed error counts of the class.

    Returns
    -------
    (low, high) : tuple of int, or None
        Smallest and largest ``Σ_ℓ p_ℓ^in`` over all five-state-feasible bijections; ``None``
        when no bijection realises the counts.

    Examples
    --------
    Paper 001, Table 5 (one class, ``k = 0``, τ = 0.6): both clean wrong records predict A; the
    perturbed wrong records predict A (accepted, S′ = 0.8) and B (rejected, S′ = 0.4). Count the
    accepted flip endpoints (labels in the order A, B):

    >>> flip_endpoint_range([2, 0], [1, 0], [0, 1], s=1, w=0)   # A–A persists: B is flipped
    (0, 0)
    >>> flip_endpoint_range([2, 0], [1, 0], [0, 1], s=0, w=1)   # A–B changes: A is flipped
    (1, 1)
    """
    c = np.asarray(c, dtype=np.int64)
    d_in = np.asarray(d_in, dtype=np.int64)
    d_out = np.asarray(d_out, dtype=np.int64)
    key = tuple(sorted(zip(c.tolist(), d_in.tolist(), d_out.tolist())))
    return _range_cached(key, int(s), int(w))


@lru_cache(maxsize=65536)
def _range_cached(key: tuple[tuple[int, int, int], ...], s: int, w: int) -> tuple[int, int] | None:
    return _clipped_range(key, s, w, None, None)


def _clipped_range(key, s: int, w: int, floor: int | None, cap: int | None) -> tuple[int, int] | None:
    """``(max(low, floor), min(high, cap))`` of the exact range; a bound is solved only if needed."""
    quick = _quick_range(key, s, w)
    if quick is None or quick[0] == "exact":
        if quick is None:
            return None
        low, high = quick[1], quick[2]
    else:
        _, box_low, box_high, seen_low, seen_high = quick
        # seen_low / seen_high are attained by feasible placements, so low ≤ seen_low and
        # high ≥ seen_high; either settles its bound when it meets the box or the clip.
        if seen_low == box_low or (floor is not None and seen_low <= floor):
            low = seen_low
        else:
            low = _solved_bound(key, s, w, "low")
        if seen_high == box_high or (cap is not None and seen_high >= cap):
            high = seen_high
        else:
            high = _solved_bound(key, s, w, "high")
    if floor is not None:
        low = max(low, floor)
    if cap is not None:
        high = min(high, cap)
    return int(low), int(high)


@lru_cache(maxsize=65536)
def _quick_range(key: tuple[tuple[int, int, int], ...], s: int, w: int):
    """Everything short of the integer program: ``None`` (not realisable), ``("exact", low, high)``
    or ``("open", box_low, box_high, seen_low, seen_high)`` with the extremes of the feasible
    placements found by :func:`_witness_placements`."""
    c, d_in, d_out = _types(key)
    d = d_in + d_out
    h = int(d.sum()) - s - w
    r = int(c.sum()) - s - w
    if h < 0 or r < 0 or s < 0 or w < 0:
        return None
    total_in, total_out = int(d_in.sum()), int(d_out.sum())
    ik_range = (max(0, h - total_out), min(h, total_in))
    if h == 0 or s + w == 0:
        # The flip block is forced (nothing, or every perturbed wrong record).
        forced = np.zeros_like(d) if h == 0 else d
        return ("exact", *ik_range) if placement_is_feasible(c, d, forced, s=s, w=w) else None
    # With s = 0 and no label able to hold more than w endpoints of the changed pairs, no
    # constraint involves p beyond its box: every choice of h endpoints is feasible.
    if s == 0 and not np.any(c + d > w):
        return ("exact", *ik_range)
    if np.log(d + 1.0).sum() <= np.log(_ENUMERATION_LIMIT):
        found = _enumerate(c, d_in, d_out, h=h, s=s, w=w)
        return None if found is None else ("exact", *found)
    seen = _witness_placements(c, d_in, d_out, h=h, s=s, w=w)
    if seen is None:
        if _solve(c, d_in, d_out, h=h, r=r, s=s, w=w, objective=False) is None:
            return None
        if total_in == 0 or total_out == 0:
            return ("exact", *ik_range)
        return ("open", *ik_range, ik_range[1], ik_range[0])  # nothing seen: both bounds are solved
    if total_in == 0 or total_out == 0 or seen == ik_range:
        # Every placement gives the same count, or feasible placements attain both box ends.
        return ("exact", *ik_range)
    return ("open", *ik_range, *seen)


@lru_cache(maxsize=65536)
def _solved_bound(key: tuple[tuple[int, int, int], ...], s: int, w: int, which: str) -> int:
    c, d_in, d_out = _types(key)
    h = int((d_in + d_out).sum()) - s - w
    r = int(c.sum()) - s - w
    found = _solve(c, d_in, d_out, h=h, r=r, s=s, w=w, which=which)
    if found is None:  # a placement was seen, so the program cannot be infeasible
        raise RuntimeError("the five-state placement program found no placement where one is known.")
    return found[0] if which == "low" else found[1]


def _types(key) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    types = np.array(key, dtype=np.int64).reshape(-1, 3)
    return types[:, 0], types[:, 1], types[:, 2]


# Candidate placements tried per box before the integer program is asked.
_WITNESS_DRAWS = 64


def _witness_placements(c, d_in, d_out, *, h, s, w) -> tuple[int, int] | None:
    """Extremes of the flip endpoints inside the subset over a set of feasible candidate placements.

    A cheap search that can only prove attainability: candidates are drawn (a fixed seed, so the
    same problem always takes the same path) in the whole box and in the two sub-boxes where the
    Ik extremes would be attained (``p ≤ d_in`` or ``p ≥ d_in`` for the largest count,
    ``p ≤ d_out`` or ``p ≥ d_out`` for the smallest), and checked exactly by
    :func:`placement_is_feasible`. Returns ``(min, max)`` of ``Σ p_in`` over the feasible ones,
    or ``None`` when none was found (which proves nothing).
    """
    from core._rng import as_generator

    rng = as_generator(0)
    d = d_in + d_out
    zero = np.zeros_like(d)
    total_in, total_out = int(d_in.sum()), int(d_out.sum())
    boxes = [(zero, d), (zero, d_in) if h <= total_in else (d_in, d), (zero, d_out) if h <= total_out else (d_out, d)]
    cand = np.concatenate([_box_candidates(lo, hi, h, rng) for lo, hi in boxes])
    cand = cand[placement_is_feasible(c, d, cand, s=s, w=w)]
    if len(cand) == 0:
        return None
    return int(np.maximum(0, cand - d_out).sum(axis=1).min()), int(np.minimum(cand, d_in).sum(axis=1).max())


def _box_candidates(lo: np.ndarray, hi: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integer vectors ``lo ≤ v ≤ hi`` with ``Σ v = total``: random unit fills and vertices.

    Half are ``lo`` plus ``total − Σ lo`` units drawn without replacement from the box's spare
    capacity (near the proportional split); half fill labels to capacity in a random order (the
    vertices of the box slice, where linear optima sit). Shape (n, n_labels); empty when the
    box cannot hold ``total``.
    """
    n, L = _WITNESS_DRAWS, len(lo)
    spare = hi - lo
    extra = total - int(lo.sum())
    if extra < 0 or extra > int(spare.sum()):
        return np.empty((0, L), dtype=np.int64)
    units = np.repeat(np.arange(L), spare)
    drawn = rng.permuted(np.broadcast_to(units, (n, len(units))), axis=1)[:, :extra]
    offsets = (np.arange(n) * L)[:, None]
    fills = np.bincount((drawn + offsets).ravel(), minlength=n * L).reshape(n, L)
    order = np.argsort(rng.random((n, L)), axis=1)
    spare_ordered = spare[order]
    before = np.cumsum(spare_ordered, axis=1) - spare_ordered
    vertex = np.empty((n, L), dtype=np.int64)
    np.put_along_axis(vertex, order, np.clip(extra - before, 0, spare_ordered), axis=1)
    return np.concatenate([lo + fills, lo + vertex])


def _enumerate(c, d_in, d_out, *, h, s, w):
    """Exact by listing every placement ``p`` (small label boxes only) and the closed-form check."""
    d = d_in + d_out
    grid = np.indices(tuple(int(v) + 1 for v in d)).reshape(len(d), -1).T
    grid = grid[grid.sum(axis=1) == h]
    grid = grid[placement_is_feasible(c, d, grid, s=s, w=w)]
    if len(grid) == 0:
        return None
    low = np.maximum(0, grid - d_out).sum(axis=1).min()
    high = np.minimum(grid, d_in).sum(axis=1).max()
    return int(low), int(high)


def _solve(c, d_in, d_out, *, h, r, s, w, objective: bool = True, which: str = "both"):
    """Exact integer program over label types; see the module docstring for the polytope.

    Returns ``(low, high)`` of the flip endpoints inside the subset (with ``which="low"`` or
    ``"high"`` only that bound is solved and the other is None), or with ``objective=False`` a
    truthy value when the placement polytope has an integer point; ``None`` when it has none.
    """
    # Imported here: scipy.optimize costs ~0.5 s at start-up and most classes never need it.
    from scipy import sparse
    from scipy.optimize import Bounds, LinearConstraint, milp

    d = d_in + d_out
    # Labels on one side only whose count cannot exceed w carry no constraint of their own:
    # pool them into one type per role so the program stays small.
    free_pert = (c == 0) & (d <= w)
    free_clean = (d == 0) & (c <= w)
    keep = ~(free_pert | free_clean)
    ck, dink, doutk = c[keep], d_in[keep], d_out[keep]
    dk = dink + doutk
    L = len(ck)
    # Variable blocks: p_in (L), p_out (L), q (L), x (L), then pooled p_in, p_out, q.
    n_var = 4 * L + 3
    pin, pout, q, x = (np.arange(L) + i * L for i in range(4))
    pool_pin, pool_pout, pool_q = 4 * L, 4 * L + 1, 4 * L + 2
    upper = np.concatenate(
        [dink, doutk, ck, np.minimum(ck, dk), [d_in[free_pert].sum(), d_out[free_pert].sum(), c[free_clean].sum()]]
    ).astype(float)
    lab = np.arange(L)
    # Rows: Σp = h, Σq = r, Σx = s, then per label q+x ≤ c, p+x ≤ d, p+q+2x ≥ c+d−w.
    row_ids = [
        np.zeros(2 * L + 2),
        np.ones(L + 1),
        np.full(L, 2),
        3 + lab,
        3 + lab,
        3 + L + lab,
        3 + L + lab,
        3 + L + lab,
        3 + 2 * L + lab,
        3 + 2 * L + lab,
        3 + 2 * L + lab,
        3 + 2 * L + lab,
    ]
    col_ids = [
        np.concatenate([pin, pout, [pool_pin, pool_pout]]),
        np.concatenate([q, [pool_q]]),
        x,
        q,
        x,
        pin,
        pout,
        x,
        pin,
        pout,
        q,
        x,
    ]
    vals = [
        np.ones(2 * L + 2),
        np.ones(L + 1),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.ones(L),
        np.full(L, 2.0),
    ]
    A = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(row_ids).astype(int), np.concatenate(col_ids))), shape=(3 + 3 * L, n_var)
    )
    lower_b = np.concatenate([[h, r, s], np.full(2 * L, -np.inf), ck + dk - w]).astype(float)
    upper_b = np.concatenate([[h, r, s], ck, dk, np.full(L, np.inf)]).astype(float)
    problem = dict(
        integrality=np.ones(n_var),
        bounds=Bounds(np.zeros(n_var), upper),
        constraints=LinearConstraint(A, lower_b, upper_b),
        # HiGHS presolve (scipy 1.17) declares some feasible instances of this
        # program infeasible; the programs are small, so solve without it.
        options={"mip_rel_gap": 0.0, "presolve": False},
    )

    def placement(res) -> np.ndarray:
        # Flip endpoints per original label; pooled labels are free, so any split is feasible.
        sol = np.round(res.x).astype(np.int64)
        p = np.zeros(len(c), dtype=np.int64)
        p[keep] = sol[pin] + sol[pout]
        pooled = np.flatnonzero(free_pert)
        left = sol[pool_pin] + sol[pool_pout]
        take = np.minimum(d[pooled], np.maximum(0, left - np.concatenate([[0], np.cumsum(d[pooled])[:-1]])))
        p[pooled] = take
        return p

    def checked(res):
        if res is not None and not placement_is_feasible(c, d, placement(res), s=s, w=w):
            raise RuntimeError("the five-state placement program returned an infeasible placement.")
        return res

    if not objective:
        return checked(_status(milp(np.zeros(n_var), **problem)))
    goal = np.zeros(n_var)
    goal[pin] = 1
    goal[pool_pin] = 1
    low = high = None
    if which in ("both", "low"):
        lowest = checked(_status(milp(goal, **problem)))
        if lowest is None:
            return None
        low = int(round(lowest.fun))
    if which in ("both", "high"):
        highest = checked(_status(milp(-goal, **problem)))
        if highest is None:
            return None
        high = int(round(-highest.fun))
    return low, high


def _status(res):
    if res.status == 0:
        return res
    if res.status == 2:  # infeasible
        return None
    raise RuntimeError(f"five-state placement program did not solve to optimality: {res.message}")


# ---------------------------------------------------------------------------------------------
# Per-group driver


def flip_ranges(
    table: ClassTable,
    inside: np.ndarray,
    *,
    skip: np.ndarray | None = None,
    floor: np.ndarray | None = None,
    cap: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per (cell, class) group, the I5 range of harmful-flip endpoints inside a record subset.

    Parameters
    ----------
    table : ClassTable
        Grouped records with five observed counts (``table.observed``).
    inside : ndarray of bool, shape (n_records,)
        Marks the perturbed records of the subset (only wrong ones matter).
    skip : ndarray of bool, shape (n_groups,), optional
        Groups whose answer the caller does not need; they keep the Ik range.
    floor, cap : ndarray of int, shape (n_groups,), optional
        For a caller that only uses ``max(low, floor)`` and ``min(high, cap)`` (the I5 bound
        on ``H`` clips at ``a − u`` and ``u``): those are returned instead, and a bound that a
        feasible placement already shows to be beyond its clip is not solved.

    Returns
    -------
    low, high : ndarray of int, shape (n_groups,)
        Extremes of the number of subset records among the perturbed wrong records opposite
        clean-correct ones (clipped by ``floor`` / ``cap`` when given). Groups where the counts
        cannot bind keep the Ik (box) range ``[max(0, h − d_out), min(h, d_in)]`` without
        solving anything.
    """
    h_obs, _, s_obs, w_obs, _ = table.observed.T
    wrong_pert = ~table.pert_correct
    wrong_clean = ~table.clean_correct
    d_in = table.per_group(wrong_pert & inside)
    d_out = table.per_group(wrong_pert & ~inside)
    low = np.maximum(0, h_obs - d_out)
    high = np.minimum(h_obs, d_in)
    candidates = (h_obs > 0) & (s_obs + w_obs > 0) & (d_in > 0) & (d_out > 0) & (low < high)
    floor = None if floor is None else np.asarray(floor, dtype=np.int64)
    cap = None if cap is None else np.asarray(cap, dtype=np.int64)
    if floor is not None and cap is not None:
        # Both clipped bounds are known from the box alone: max(low, floor) = floor when
        # floor ≥ the box's top, min(high, cap) = cap when cap ≤ the box's bottom.
        candidates &= ~((floor >= high) & (cap <= low))
    if skip is not None:
        candidates &= ~skip
    if candidates.any():
        labels_per_group = _distinct_wrong_labels(table, wrong_clean, wrong_pert)
        candidates &= labels_per_group >= 2
    for grp in np.flatnonzero(candidates):
        sl = slice(table.group_start[grp], table.group_start[grp + 1])
        cw = table.clean_pred[sl][wrong_clean[sl]]
        pw = table.pert_pred[sl][wrong_pert[sl]]
        pin = inside[sl][wrong_pert[sl]]
        labels = np.union1d(cw, pw)
        c = np.bincount(np.searchsorted(labels, cw), minlength=len(labels))
        di = np.bincount(np.searchsorted(labels, pw[pin]), minlength=len(labels))
        do = np.bincount(np.searchsorted(labels, pw[~pin]), minlength=len(labels))
        key = tuple(sorted(zip(c.tolist(), di.tolist(), do.tolist())))
        rng = _clipped_range(
            key,
            int(s_obs[grp]),
            int(w_obs[grp]),
            None if floor is None else int(floor[grp]),
            None if cap is None else int(cap[grp]),
        )
        if rng is None:  # validated counts are always realisable; this is a bug, not bad input
            raise RuntimeError(f"five-state counts of group {grp} are not realisable.")
        low[grp], high[grp] = rng
    if floor is not None:
        low = np.maximum(low, floor)
    if cap is not None:
        high = np.minimum(high, cap)
    return low, high


def _distinct_wrong_labels(table: ClassTable, wrong_clean: np.ndarray, wrong_pert: np.ndarray) -> np.ndarray:
    groups = np.concatenate([table.record_group[wrong_clean], table.record_group[wrong_pert]])
    labels = np.concatenate([table.clean_pred[wrong_clean], table.pert_pred[wrong_pert]])
    if groups.size == 0:
        return np.zeros(len(table.group_n), dtype=np.int64)
    pairs = np.unique(np.stack([groups, labels], axis=1), axis=0)
    return np.bincount(pairs[:, 0], minlength=len(table.group_n))


# ---------------------------------------------------------------------------------------------
# Uniform distribution over five-state-feasible bijections


def _box_vectors(caps: np.ndarray, total: int, limit: int) -> np.ndarray | None:
    """All integer vectors ``0 ≤ v ≤ caps`` with ``Σ v = total``; None if there are over ``limit``."""
    if np.log(caps + 1.0).sum() > np.log(64 * limit):
        return None
    grid = np.indices(tuple(int(v) + 1 for v in caps)).reshape(len(caps), -1).T
    grid = grid[grid.sum(axis=1) == total]
    return grid if len(grid) <= limit else None


def _same_label_bijections(c: list[int], d: list[int], s: int) -> int:
    """Number of bijections between two label multisets with exactly ``s`` same-label pairs.

    Rook polynomial of the same-label board, ``R(z) = Π_ℓ Σ_i C(c_ℓ,i) C(d_ℓ,i) i! z^i``, then
    inclusion–exclusion: ``Σ_{j ≥ s} (−1)^{j−s} C(j, s) R_j (m − j)!``. Exact integers.
    """
    poly = [1]
    for cl, dl in zip(c, d):
        term = [comb(cl, i) * comb(dl, i) * factorial(i) for i in range(min(cl, dl) + 1)]
        prod = [0] * (len(poly) + len(term) - 1)
        for i, a in enumerate(poly):
            for j, b in enumerate(term):
                prod[i + j] += a * b
        poly = prod
    m = sum(c)
    return sum((-1) ** (j - s) * comb(j, s) * poly[j] * factorial(m - j) for j in range(s, len(poly)))


def expected_flips(c, d, *, s: int, w: int, limit: int = 20000) -> np.ndarray | None:
    """Mean number of harmful-flip endpoints per label under the uniform five-state distribution.

    Every bijection with the class's five counts is equally likely (records, not count tables,
    are weighted uniformly). A placement ``(p, q)`` is realised by
    ``Π_ℓ C(d_ℓ, p_ℓ) C(c_ℓ, q_ℓ) · N_s(c − q, d − p)`` bijections up to a constant factor, with
    ``N_s`` the number of wrong–wrong bijections with exactly ``s`` same-label pairs.

    Parameters
    ----------
    c, d : array-like of int, shape (n_labels,)
        Clean / perturbed wrong records per predicted label.
    s, w : int
        Persistent and changed error counts.
    limit : int
        Largest number of placements to list; beyond it the answer is not computed.

    Returns
    -------
    ndarray of float, shape (n_labels,), or None
        ``E[p_ℓ]``; None when there are more than ``limit`` placements (use
        :func:`sampled_flips`) or the counts are not realisable.
    """
    c = np.asarray(c, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    h, r = int(d.sum()) - s - w, int(c.sum()) - s - w
    if h < 0 or r < 0:
        return None
    ps = _box_vectors(d, h, limit)
    qs = _box_vectors(c, r, limit)
    if ps is None or qs is None or len(ps) * len(qs) > limit:
        return None
    ways_p = [_prod(comb(int(a), int(b)) for a, b in zip(d, p)) for p in ps]
    ways_q = [_prod(comb(int(a), int(b)) for a, b in zip(c, q)) for q in qs]
    total = 0
    weighted = [0] * len(c)
    for p, wp in zip(ps, ways_p):
        rest_d = (d - p).tolist()
        mass = 0
        for q, wq in zip(qs, ways_q):
            mass += wq * _same_label_bijections((c - q).tolist(), rest_d, s)
        mass *= wp
        total += mass
        for i, v in enumerate(p.tolist()):
            weighted[i] += mass * v
    if total == 0:
        return None
    return np.array([Fraction(v, total) for v in weighted], dtype=float)


def sampled_flips(
    clean_labels, pert_labels, *, s: int, w: int, seed, n_draws: int = 4000, max_batches: int = 25
) -> tuple[np.ndarray, int]:
    """Monte Carlo estimate of :func:`expected_flips` for classes too large to list.

    Draws uniform bijections of the wrong records that respect ``h`` and ``r`` (random flip
    endpoints, random correction sources, random wrong–wrong pairing) and keeps those with
    exactly ``s`` same-label pairs: the kept draws are uniform over the five-state set.

    Parameters
    ----------
    clean_labels, pert_labels : array-like of int
        Predicted labels of the clean / perturbed wrong records of the class.
    s, w : int
    seed : int or numpy Generator
    n_draws : int
        Accepted draws to aim for.
    max_batches : int
        Batches of ``n_draws`` proposals at most.

    Returns
    -------
    estimate : ndarray of shape (n_labels,)
        Mean flip endpoints per label, labels in ``np.unique(concat(clean, pert))`` order; NaN
        when no draw was accepted.
    accepted : int
    """
    from core._rng import as_generator

    rng = as_generator(seed)
    cl = np.asarray(clean_labels)
    pl = np.asarray(pert_labels)
    labels = np.unique(np.concatenate([cl, pl]))
    h, r = len(pl) - s - w, len(cl) - s - w
    sums = np.zeros(len(labels))
    accepted = 0
    for _ in range(max_batches):
        P = rng.permuted(np.broadcast_to(pl, (n_draws, len(pl))), axis=1)
        C = rng.permuted(np.broadcast_to(cl, (n_draws, len(cl))), axis=1)
        keep = (P[:, h:] == C[:, r:]).sum(axis=1) == s
        if keep.any():
            flips = P[keep, :h]
            sums += (flips[:, :, None] == labels[None, None, :]).sum(axis=(0, 1))
            accepted += int(keep.sum())
        if accepted >= n_draws:
            break
    estimate = sums / accepted if accepted else np.full(len(labels), np.nan)
    return estimate, accepted


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out
