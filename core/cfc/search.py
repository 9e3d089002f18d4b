"""Stronger flip searches: how far the greedy path is from minimal (SPEC A.4).

- Exact: ``k_exact(x) = min{|S| : S ⊆ 𝒢, |S| ≤ K, ŷ(R(x, S)) ≠ ŷ(x)}``, ``K+1`` if none, found by
  enumerating subsets by increasing size. Size ``k`` is enumerated only while the cumulative
  number of subsets per sample ``Σ_{j≤k} C(G, j)`` stays ``<= Protocol.exact_cap``; a sample
  still undecided when the cap stops the enumeration gets ``NaN`` (its ``k_exact`` is known
  to exceed the last enumerated size, not known exactly).
- Beam (width ``B``): starting from the empty set, every kept subset is extended by one unused
  group (duplicates dropped); the ``B`` candidates with the lowest original-class margin are
  kept (ties: generation order — parents in beam order, groups in declared order);
  ``k_beam`` is the first depth at which a kept subset flips the prediction, ``K+1`` if none.

Both are vectorised: all candidate subsets of all undecided samples are stacked and sent to
the model in slices of ``batch_size`` rows. Summary rates over a set of samples:
ExactMatch ``P[k* = k_exact]``, GreedyOver ``P[k* > k_exact]``, MeanGap ``E[(k* − k_exact)+]``,
PairMiss ``P[k_exact = 2 ∧ k* > 2]``, BeamImprove ``P[k_beam < k*]``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

from core.cfc.operators import (
    GroupIndex,
    PredictProba,
    ProgressCounter,
    check_baseline,
    check_features,
    predict_batched,
    stack_removals,
)
from core.cfc.protocol import Protocol
from core.cfc.scores import check_proba, class_margin, predicted_class
from core.validation import check_batch_size

__all__ = ["FlipSearchResult", "SearchMethod", "SearchSummary", "flip_search", "search_summary"]

SearchMethod = Literal["exact", "beam", "both"]
SEARCH_METHODS: tuple[str, ...] = get_args(SearchMethod)


@dataclass(frozen=True, eq=False, kw_only=True)
class FlipSearchResult:
    """Exact and/or beam flip budgets of a set of samples.

    Attributes
    ----------
    method : {"exact", "beam", "both"}
    depth : int
        Audit depth ``K``.
    group_names : tuple of str
    k_exact : ndarray of shape (n_samples,), float
        Exact flip budget in ``1..K+1``; ``NaN`` where the cap stopped the enumeration before
        the sample was decided, or when exact search was not run.
    exact_subset : ndarray of shape (n_samples, n_groups), bool
        A minimal flipping subset (the one with the lowest original-class margin; ties: the
        first in ``itertools.combinations`` order). All ``False`` when none was found.
    exact_levels : int
        Largest subset size enumerated (0 when exact search was not run).
    k_beam : ndarray of shape (n_samples,), float
        Beam flip budget in ``1..K+1``; ``NaN`` when beam search was not run.
    beam_subset : ndarray of shape (n_samples, n_groups), bool
        The kept flipping subset with the lowest margin at depth ``k_beam``.
    exact_cap, beam_width : int
        The caps used (from the protocol).
    """

    method: str
    depth: int
    group_names: tuple[str, ...]
    k_exact: np.ndarray
    exact_subset: np.ndarray
    exact_levels: int
    k_beam: np.ndarray
    beam_subset: np.ndarray
    exact_cap: int
    beam_width: int

    def __len__(self) -> int:
        return self.k_exact.shape[0]

    @property
    def exact_capped(self) -> bool:
        """True when the cap prevented a complete exact search (some ``k_exact`` are NaN)."""
        return self.method != "beam" and bool(np.isnan(self.k_exact).any())

    def subset_names(self, which: Literal["exact", "beam"], i: int) -> tuple[str, ...] | None:
        """Group names of sample ``i``'s flipping subset, or ``None`` when there is none."""
        mask = (self.exact_subset if which == "exact" else self.beam_subset)[i]
        return tuple(n for n, m in zip(self.group_names, mask) if m) if mask.any() else None


@dataclass(frozen=True)
class SearchSummary:
    """Greedy-vs-stronger-search rates (SPEC A.4); ``NaN`` where undefined.

    Rates involving ``k_exact`` are over the ``n_exact`` samples whose exact budget was decided;
    ``beam_improve`` is over the ``n_beam`` samples with a beam budget.
    """

    exact_match: float
    greedy_over: float
    mean_gap: float
    pair_miss: float
    beam_improve: float
    n_exact: int
    n_beam: int
    n_samples: int


# --------------------------------------------------------------------------------------------
# Exact search
# --------------------------------------------------------------------------------------------
def exact_levels_within_cap(n_groups: int, depth: int, cap: int) -> int:
    """Largest ``k <= depth`` with ``Σ_{j=1..k} C(n_groups, j) <= cap``."""
    total, levels = 0, 0
    for k in range(1, depth + 1):
        total += math.comb(n_groups, k)
        if total > cap:
            break
        levels = k
    return levels


def _exact(
    predict_proba: PredictProba,
    A: np.ndarray,
    y: np.ndarray,
    gi: GroupIndex,
    b: np.ndarray,
    depth: int,
    cap: int,
    batch_size: int,
    n_classes: int,
    counter: ProgressCounter,
) -> tuple[np.ndarray, np.ndarray, int]:
    n, G = A.shape[0], gi.n_groups
    levels = exact_levels_within_cap(G, depth, cap)
    k_exact = np.full(n, np.nan)
    best_subset = np.zeros((n, G), dtype=bool)
    undecided = np.arange(n)
    progressed = 0.0
    for k in range(1, levels + 1):
        if undecided.size == 0:
            break
        combos = np.array(list(combinations(range(G), k)), dtype=np.intp)
        S = np.zeros((combos.shape[0], G), dtype=bool)
        S[np.arange(combos.shape[0])[:, None], combos] = True
        masks = gi.column_mask(S)
        s = S.shape[0]
        best_m = np.full(undecided.size, np.inf)
        best_j = np.full(undecided.size, -1, dtype=np.intp)
        sc = min(s, batch_size)
        ns = max(1, batch_size // sc)
        for r0 in range(0, undecided.size, ns):
            rows = undecided[r0 : r0 + ns]
            yr = y[rows]
            for s0 in range(0, s, sc):
                Z = stack_removals(A[rows], b, masks[s0 : s0 + sc])
                P = predict_batched(
                    predict_proba,
                    Z.reshape(-1, A.shape[1]),
                    batch_size=batch_size,
                    n_classes=n_classes,
                    what=f"exact-search subsets of size {k}",
                ).reshape(rows.size, -1, n_classes)
                m = np.where(predicted_class(P) != yr[:, None], class_margin(P, yr[:, None]), np.inf)
                j = np.argmin(m, axis=1)  # first minimum: earliest subset in combination order
                mj = m[np.arange(rows.size), j]
                # Strict '<' keeps the earlier subset when a later slice ties on the margin.
                better = mj < best_m[r0 : r0 + ns]
                best_m[r0 : r0 + ns][better] = mj[better]
                best_j[r0 : r0 + ns][better] = j[better] + s0
        found = best_j >= 0
        k_exact[undecided[found]] = k
        best_subset[undecided[found]] = S[best_j[found]]
        undecided = undecided[~found]
        counter.advance(n / depth)
        progressed += n / depth
    if levels == depth:
        k_exact[undecided] = depth + 1
    counter.advance(n - progressed)  # levels left out by the cap or by early resolution
    return k_exact, best_subset, levels


# --------------------------------------------------------------------------------------------
# Beam search
# --------------------------------------------------------------------------------------------
def _dedupe_first(sample: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of every (sample, subset) pair, in original order."""
    packed = np.packbits(subsets, axis=1)
    key = np.empty((sample.size, 8 + packed.shape[1]), dtype=np.uint8)
    key[:, :8] = sample.astype(">i8").view(np.uint8).reshape(-1, 8)
    key[:, 8:] = packed
    _, first = np.unique(key.view(f"V{key.shape[1]}").ravel(), return_index=True)
    return np.sort(first)


def _beam(
    predict_proba: PredictProba,
    A: np.ndarray,
    y: np.ndarray,
    gi: GroupIndex,
    b: np.ndarray,
    depth: int,
    width: int,
    batch_size: int,
    n_classes: int,
    counter: ProgressCounter,
) -> tuple[np.ndarray, np.ndarray]:
    n, G = A.shape[0], gi.n_groups
    k_beam = np.full(n, float(depth + 1))
    best_subset = np.zeros((n, G), dtype=bool)
    active = np.arange(n)
    parents = np.zeros((n, 1, G), dtype=bool)  # the beam B_0 = {∅}
    parent_ok = np.ones((n, 1), dtype=bool)
    progressed = 0.0
    for k in range(1, depth + 1):
        if active.size == 0:
            break
        # Candidates in generation order: samples, then parents in beam order, then groups.
        si, pi, gj = np.nonzero(parent_ok[:, :, None] & ~parents)
        cand = parents[si, pi]
        cand[np.arange(si.size), gj] = True
        keep = _dedupe_first(si, cand)
        si, cand = si[keep], cand[keep]
        T = si.size

        margin = np.empty(T)
        flips = np.empty(T, dtype=bool)
        masks = gi.column_mask(cand)
        for t0 in range(0, T, batch_size):
            sl = slice(t0, t0 + batch_size)
            rows = active[si[sl]]
            Z = np.where(masks[sl], b, A[rows])
            P = predict_batched(
                predict_proba,
                Z,
                batch_size=batch_size,
                n_classes=n_classes,
                what=f"beam-search candidates of depth {k}",
            )
            margin[sl] = class_margin(P, y[rows])
            flips[sl] = predicted_class(P) != y[rows]

        # Rank candidates within each sample by margin, ties by generation order.
        order = np.lexsort((np.arange(T), margin, si))
        s_sorted = si[order]
        starts = np.searchsorted(s_sorted, np.arange(active.size))
        rank = np.arange(T) - starts[s_sorted]
        cand_rank = np.empty(T, dtype=np.intp)
        cand_rank[order] = rank
        kept = order[rank < width]
        kept_s = si[kept]

        hit = flips[kept]
        flipped_samples = np.zeros(active.size, dtype=bool)
        flipped_samples[kept_s[hit]] = True
        # The first hit of a sample in `kept` order is its lowest-margin flipping subset.
        first_hit = np.flatnonzero(hit)
        first_hit = first_hit[np.unique(kept_s[first_hit], return_index=True)[1]]
        k_beam[active[kept_s[first_hit]]] = k
        best_subset[active[kept_s[first_hit]]] = cand[kept[first_hit]]

        # The unresolved samples carry their kept subsets to the next depth, padded to B.
        stay = ~flipped_samples
        remap = np.cumsum(stay) - 1
        sel = stay[kept_s]
        ks, kc = kept_s[sel], kept[sel]
        slot = cand_rank[kc]
        n_next = int(stay.sum())
        parents = np.zeros((n_next, width, G), dtype=bool)
        parent_ok = np.zeros((n_next, width), dtype=bool)
        parents[remap[ks], slot] = cand[kc]
        parent_ok[remap[ks], slot] = True
        active = active[stay]
        counter.advance(n / depth)
        progressed += n / depth
    counter.advance(n - progressed)  # depths skipped once every sample flipped
    return k_beam, best_subset


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------
def run_search(
    predict_proba: PredictProba,
    A: np.ndarray,
    y: np.ndarray,
    gi: GroupIndex,
    b: np.ndarray,
    depth: int,
    protocol: Protocol,
    method: str,
    *,
    batch_size: int,
    n_classes: int,
    counter: ProgressCounter,
) -> FlipSearchResult:
    """Searches on already validated inputs (shared by :func:`flip_search` and ``certify``)."""
    n, G = A.shape[0], gi.n_groups
    k_exact, exact_subset, levels = np.full(n, np.nan), np.zeros((n, G), dtype=bool), 0
    k_beam, beam_subset = np.full(n, np.nan), np.zeros((n, G), dtype=bool)
    if method in ("exact", "both"):
        k_exact, exact_subset, levels = _exact(
            predict_proba, A, y, gi, b, depth, protocol.exact_cap, batch_size, n_classes, counter
        )
    if method in ("beam", "both"):
        # Samples are independent; chunks keep the candidate masks near batch_size rows.
        per_chunk = max(1, batch_size // (protocol.beam_width * G))
        for start in range(0, n, per_chunk):
            sl = slice(start, min(n, start + per_chunk))
            k_beam[sl], beam_subset[sl] = _beam(
                predict_proba, A[sl], y[sl], gi, b, depth, protocol.beam_width, batch_size, n_classes, counter
            )
    if method != "beam" and np.isnan(k_exact).any():
        warnings.warn(
            f"Exact flip search stopped at subset size {levels} of {depth}: the cumulative number of "
            f"subsets exceeds exact_cap={protocol.exact_cap}; {int(np.isnan(k_exact).sum())} undecided "
            "sample(s) get k_exact = NaN.",
            RuntimeWarning,
            stacklevel=3,
        )
    return FlipSearchResult(
        method=method,
        depth=depth,
        group_names=gi.names,
        k_exact=k_exact,
        exact_subset=exact_subset,
        exact_levels=levels,
        k_beam=k_beam,
        beam_subset=beam_subset,
        exact_cap=protocol.exact_cap,
        beam_width=protocol.beam_width,
    )


def check_method(method: str) -> str:
    if method not in SEARCH_METHODS:
        raise ValueError(f"`method` must be one of {SEARCH_METHODS}; got {method!r}.")
    return method


def flip_search(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    protocol: Protocol | None = None,
    *,
    method: SearchMethod = "both",
    batch_size: int = 65536,
    progress: Callable[[int, int], object] | None = None,
) -> FlipSearchResult:
    """Exact and/or beam flip search for every row of ``X`` (SPEC A.4).

    Parameters
    ----------
    predict_proba : callable
        ``predict_proba(Z) -> (m, C)`` class probabilities over the transformed space.
    X : array-like of shape (n_samples, n_features)
        Transformed, finite features.
    groups : mapping of str to sequence of int
        Ordered partition of the columns of ``X``.
    baseline : array-like of shape (n_features,)
    protocol : Protocol, optional
        Supplies ``depth``, ``exact_cap`` and ``beam_width`` (default ``Protocol()``).
    method : {"exact", "beam", "both"}, default="both"
    batch_size : int, default=65536
        Maximum rows per ``predict_proba`` call.
    progress : callable(done_rows, total_rows), optional

    Returns
    -------
    FlipSearchResult

    Warns
    -----
    RuntimeWarning
        When ``exact_cap`` leaves samples undecided (their ``k_exact`` is ``NaN``).

    Examples
    --------
    >>> import numpy as np
    >>> def proba(Z):  # class 1 iff at least two of the three features are on
    ...     p1 = (Z.sum(axis=1) >= 2).astype(float) * 0.8 + 0.1
    ...     return np.column_stack([1 - p1, p1])
    >>> res = flip_search(proba, [[1.0, 1.0, 1.0]], {"a": [0], "b": [1], "c": [2]}, [0.0, 0.0, 0.0])
    >>> res.k_exact.tolist(), res.k_beam.tolist(), res.subset_names("exact", 0)
    ([2.0], [2.0], ('a', 'b'))
    """
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol or None; got {type(protocol).__name__}.")
    check_method(method)
    batch_size = check_batch_size(batch_size)
    A, _ = check_features(X)
    b = check_baseline(baseline, A.shape[1])
    gi = GroupIndex.from_groups(groups, A.shape[1])
    depth = protocol.resolved_depth(gi.n_groups)
    counter = ProgressCounter(progress, A.shape[0] * (2 if method == "both" else 1))
    P0 = check_proba(predict_proba(A), A.shape[0])
    return run_search(
        predict_proba,
        A,
        predicted_class(P0),
        gi,
        b,
        depth,
        protocol,
        method,
        batch_size=batch_size,
        n_classes=P0.shape[1],
        counter=counter,
    )


def search_summary(
    k_star: ArrayLike, k_exact: ArrayLike | None = None, k_beam: ArrayLike | None = None
) -> SearchSummary:
    """ExactMatch, GreedyOver, MeanGap, PairMiss and BeamImprove over a set of samples.

    Parameters
    ----------
    k_star : array-like of shape (n_samples,)
        Greedy flip budgets ``k*``.
    k_exact, k_beam : array-like of shape (n_samples,), optional
        ``NaN`` entries (undecided) are left out of the rates that use them.

    Returns
    -------
    SearchSummary

    Examples
    --------
    >>> s = search_summary([1, 3, 4, 2], [1, 2, 2, 2], [1, 2, 4, 2])
    >>> s.exact_match, s.greedy_over, s.mean_gap, s.pair_miss, s.beam_improve
    (0.5, 0.5, 0.75, 0.5, 0.25)
    """
    ks = np.asarray(k_star, dtype=float)
    if ks.ndim != 1:
        raise ValueError(f"`k_star` must be 1-D (n_samples,); got shape {ks.shape}.")
    if np.isnan(ks).any():
        raise ValueError("`k_star` must not contain NaN.")

    def _other(values: ArrayLike | None, name: str) -> np.ndarray:
        if values is None:
            return np.full(ks.shape, np.nan)
        v = np.asarray(values, dtype=float)
        if v.shape != ks.shape:
            raise ValueError(f"`{name}` must have the shape of `k_star` {ks.shape}; got {v.shape}.")
        return v

    ke, kb = _other(k_exact, "k_exact"), _other(k_beam, "k_beam")
    de, db = ~np.isnan(ke), ~np.isnan(kb)
    nan = float("nan")
    if de.any():
        a, e = ks[de], ke[de]
        exact = (
            float(np.mean(a == e)),
            float(np.mean(a > e)),
            float(np.mean(np.maximum(a - e, 0))),
            float(np.mean((e == 2) & (a > 2))),
        )
    else:
        if k_exact is not None:
            warnings.warn("No sample has a decided k_exact; exact-search rates are NaN.", RuntimeWarning, stacklevel=2)
        exact = (nan, nan, nan, nan)
    if db.any():
        beam = float(np.mean(kb[db] < ks[db]))
    else:
        if k_beam is not None:
            warnings.warn("No sample has a beam budget; BeamImprove is NaN.", RuntimeWarning, stacklevel=2)
        beam = nan
    return SearchSummary(*exact, beam, int(de.sum()), int(db.sum()), int(ks.size))
