"""Benchmark of the paired bounds engine (run: ``python tests/bench/bench_bounds.py``).

1. The analytic grid (I0 and Ik: H, L, dM_k with the variable-support I0 dM_k; L and dM_k at
   I5 are the Ik values) on 10,000 cells × 500 records, and side by side a naive per-cell,
   per-class Python loop over the same formulas on a subset of cells (ratio per cell).
2. The exact I5 bound on H for single classes of 10, 100, 1,000 and 10,000 records, against
   brute-force enumeration of every bijection where that is still feasible (10 records:
   3.6 million permutations).
3. A realistic grid with I5 (450 cells × 500 records).

Times are wall-clock on this machine; ratios are measured in the same run. Nothing here is
asserted: it prints.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.paired import identified_intervals_grid  # noqa: E402
from core.paired._fivestate import _range_cached, flip_endpoint_range  # noqa: E402


def synthetic_records(
    n_cells: int, n_records: int, *, n_classes: int = 100, n_labels: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Seeded records: ``n_cells`` cells of ``n_records`` pairs; record i is in class ``i mod n_classes``."""
    rng = np.random.default_rng(seed)
    size = n_cells * n_records
    y = np.tile(np.arange(n_records) % n_classes, n_cells)
    # The clean side of an image is the same in every cell (one model, many conditions).
    clean_ok = np.tile(rng.random(n_records) < 0.75, n_cells)
    cp = np.where(
        clean_ok, y, np.tile((np.arange(n_records) % n_classes + 1 + rng.integers(0, 4, n_records)) % n_labels, n_cells)
    )
    cs = np.tile(np.round(rng.beta(5, 1.5, n_records), 3), n_cells)
    pert_ok = rng.random(size) < 0.5
    # Wrong answers concentrate on a few confusable labels per class; half of them persist.
    other = (y + 1 + rng.integers(0, 4, size)) % n_labels
    pp = np.where(pert_ok, y, np.where((rng.random(size) < 0.5) & (cp != y), cp, other))
    ps = np.round(rng.beta(3, 1.5, size), 3)
    cells = np.repeat(np.arange(n_cells), n_records)
    return pd.DataFrame(
        {
            "model": np.char.add("m", (cells // 500).astype(str)),
            "condition": np.char.add("c", (cells % 500).astype(str)),
            "source": "synthetic",
            "record_id": np.tile(np.arange(n_records), n_cells),
            "true_label": y,
            "clean_pred": cp,
            "clean_max_prob": cs,
            "clean_true_prob": np.where(clean_ok, cs, np.round(cs * 0.3, 3)),
            "pert_pred": pp,
            "pert_max_prob": ps,
            "pert_true_prob": np.where(pert_ok, ps, np.round(ps * 0.3, 3)),
        }
    )


def naive_cell(cell: pd.DataFrame, tau: float) -> dict:
    """Per-class Python loop over the same formulas (the straightforward implementation)."""
    N = len(cell)
    sums = dict.fromkeys(["h0_lo", "h0_hi", "l0_lo", "l0_hi", "hk_lo", "hk_hi", "lk_lo", "lk_hi"], 0)
    dlo = dhi = 0.0
    K = 0
    options = []
    for y, part in cell.groupby("true_label"):
        n = len(part)
        rows = list(part.itertuples(index=False))
        a = sum(r.clean_pred == y for r in rows)
        b = sum(r.pert_pred == y for r in rows)
        u = sum(r.clean_pred == y and r.clean_max_prob >= tau for r in rows)
        v = sum(r.pert_pred == y and r.pert_max_prob < tau for r in rows)
        t = sum(r.pert_pred != y and r.pert_max_prob >= tau for r in rows)
        k = sum(r.clean_pred == y and r.pert_pred == y for r in rows)
        h = a - k
        sums["h0_lo"] += max(0, u + t - n)
        sums["h0_hi"] += min(u, t)
        sums["l0_lo"] += max(0, u + v - n)
        sums["l0_hi"] += min(u, v)
        sums["hk_lo"] += max(0, h - (a - u) - ((n - b) - t))
        sums["hk_hi"] += min(u, t, h)
        sums["lk_lo"] += max(0, k - (a - u) - (b - v))
        sums["lk_hi"] += min(u, v, k)
        x = sorted(r.clean_true_prob for r in rows if r.clean_pred == y)
        z = sorted(r.pert_true_prob for r in rows if r.pert_pred == y)
        dlo += sum(x[:k]) - sum(z[len(z) - k :]) if k else 0.0
        dhi += sum(x[len(x) - k :]) - sum(z[:k]) if k else 0.0
        K += k
        options.append(
            [(j, sum(x[:j]) - (sum(z[len(z) - j :]) if j else 0.0)) for j in range(max(0, a + b - n), min(a, b) + 1)]
        )
    lo, hi = -1.0, 1.0
    for _ in range(50):  # the paper's bisection for the I0 dM_k lower end
        mid = (lo + hi) / 2
        best = [min(d - mid * j for j, d in opts) for opts in options]
        lo, hi = (lo, mid) if sum(best) < 0 else (mid, hi)
    return {key: value / N for key, value in sums.items()} | {
        "dmk_lo": dlo / K if K else math.nan,
        "dmk_hi": dhi / K if K else math.nan,
        "dmk0_lo": hi,
    }


def bench_grid(n_cells: int, n_records: int, n_naive: int) -> None:
    print(f"\n[1] analytic grid: {n_cells:,} cells × {n_records} records ({n_cells * n_records:,} pairs)")
    t0 = time.perf_counter()
    records = synthetic_records(n_cells, n_records)
    print(f"    generated in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = identified_intervals_grid(records, 0.8, levels=("I0", "Ik"))
    fast = time.perf_counter() - t0
    print(
        f"    vectorised (validation included): {fast:.1f} s = {1e3 * fast / n_cells:.3f} ms per cell "
        f"({len(grid):,} rows)"
    )
    subset = records[records["model"] == records["model"].iloc[0]]
    cells = list(subset.groupby(["model", "condition", "source"]))[:n_naive]
    t0 = time.perf_counter()
    for _, cell in cells:
        naive_cell(cell, 0.8)
    slow = (time.perf_counter() - t0) / len(cells)
    print(f"    naive per-class loop: {1e3 * slow:.1f} ms per cell (on {len(cells)} cells)")
    print(f"    ratio naive / vectorised per cell: {slow / (fast / n_cells):.0f}×")


def _brute_i5(c_labels, p_labels, p_acc, correct_c, correct_p) -> tuple[int, int]:
    """Enumerate all bijections of one class; range of accepted flip endpoints at the observed counts."""
    n = len(c_labels)
    clean = np.array(c_labels)
    pert = np.array(p_labels)
    acc = np.array(p_acc)
    observed = None
    lo, hi = n + 1, -1
    chunk = []
    for perm in itertools.permutations(range(n)):
        chunk.append(perm)
        if len(chunk) == 200_000:
            lo, hi, observed = _fold(np.array(chunk), clean, pert, acc, correct_c, correct_p, lo, hi, observed)
            chunk = []
    if chunk:
        lo, hi, observed = _fold(np.array(chunk), clean, pert, acc, correct_c, correct_p, lo, hi, observed)
    return lo, hi


def _fold(perms, clean, pert, acc, cc, pc, lo, hi, observed):
    pp = pert[perms]
    pcorr = pc[perms]
    k = (cc & pcorr).sum(axis=1)
    s = (~cc & ~pcorr & (clean == pp)).sum(axis=1)
    if observed is None:
        observed = (k[0], s[0])
    flips = (cc & ~pcorr & acc[perms]).sum(axis=1)
    keep = (k == observed[0]) & (s == observed[1])
    return min(lo, int(flips[keep].min())), max(hi, int(flips[keep].max())), observed


def bench_i5(sizes=(10, 100, 1000, 10000), repeats=3, brute_limit=10) -> None:
    print("\n[2] exact I5 bound on H for one class (accepted flip endpoints under five-state counts)")
    rng = np.random.default_rng(1)
    timings = {}
    for n in sizes:
        n_labels = max(2, n // 10)
        y = 0
        correct_c = rng.random(n) < 0.5
        correct_p = rng.random(n) < 0.3
        c_labels = np.where(correct_c, y, 1 + rng.integers(0, n_labels, n))
        # A third of the wrong answers persist (same wrong label on both sides), as in real data.
        p_labels = np.where(correct_p, y, np.where(rng.random(n) < 0.3, c_labels, 1 + rng.integers(0, n_labels, n)))
        p_labels = np.where(correct_p | (p_labels != y), p_labels, 1)
        p_acc = rng.random(n) < 0.5
        k = int((correct_c & correct_p).sum())
        s = int((~correct_c & ~correct_p & (c_labels == p_labels)).sum())
        w = int((~correct_c & ~correct_p).sum()) - s
        labels = np.union1d(c_labels[~correct_c], p_labels[~correct_p])
        c = np.array([(c_labels[~correct_c] == lab).sum() for lab in labels])
        d_in = np.array([((p_labels == lab) & ~correct_p & p_acc).sum() for lab in labels])
        d_out = np.array([((p_labels == lab) & ~correct_p & ~p_acc).sum() for lab in labels])
        best = math.inf
        for _ in range(repeats):
            _range_cached.cache_clear()
            t0 = time.perf_counter()
            result = flip_endpoint_range(c, d_in, d_out, s=s, w=w)
            best = min(best, time.perf_counter() - t0)
        timings[n] = best
        line = (
            f"    n = {n:>5}: {len(labels):>3} wrong labels, k={k}, s={s}, w={w}: range {result} in {1e3 * best:.2f} ms"
        )
        if n <= brute_limit:
            t0 = time.perf_counter()
            brute = _brute_i5(c_labels, p_labels, p_acc, correct_c, correct_p)
            slow = time.perf_counter() - t0
            line += (
                f"; brute force {brute} over {math.factorial(n):,} permutations in {slow:.1f} s ({slow / best:,.0f}×)"
            )
        else:
            line += f"; brute force infeasible ({n}! ≈ 10^{math.lgamma(n + 1) / math.log(10):.0f} permutations)"
        print(line)
    ns = sorted(timings)
    for small, large in zip(ns, ns[1:]):
        print(
            f"    growth {small} → {large} records: ×{timings[large] / timings[small]:.1f} time "
            f"for ×{large // small} records"
        )


def bench_i5_grid(n_cells: int, n_records: int) -> None:
    print(f"\n[3] grid with I5: {n_cells} cells × {n_records} records")
    records = synthetic_records(n_cells, n_records, n_classes=200, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        identified_intervals_grid(records, 0.8, levels=("I0", "Ik"))
        analytic = time.perf_counter() - t0
        _range_cached.cache_clear()
        t0 = time.perf_counter()
        grid = identified_intervals_grid(records, 0.8)
        full = time.perf_counter() - t0
    h = grid[grid["target"] == "H"].pivot_table(
        index=["model", "condition"], columns="level", values="high", aggfunc="first"
    )
    narrowed = (
        grid[grid["target"] == "H"]
        .assign(width=lambda d: d["high"] - d["low"])
        .pivot_table(index=["model", "condition"], columns="level", values="width", aggfunc="first")
    )
    share = float((narrowed["I5"] < narrowed["Ik"] - 1e-12).mean())
    print(
        f"    analytic levels {analytic:.2f} s; with I5 {full:.2f} s (×{full / analytic:.1f}); "
        f"I5 narrows H in {share:.0%} of {len(h)} cells"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--naive-cells", type=int, default=20)
    args = parser.parse_args()
    bench_grid(args.cells, args.records, args.naive_cells)
    bench_i5()
    bench_i5_grid(450, 500)


if __name__ == "__main__":
    main()
