"""Benchmark of the default audit (the dashboard's cold-start computation).

    python tests/bench/bench_audit.py [--dataset credit_data] [--model hist_gb] [--rounds 2]

Runs :func:`core.tabular.audit.run_audit` with default options and prints, side by side in one
run:

1. the wall time per stage (best of ``--rounds``) and each stage's share of the total;
2. the same audit with the libraries' default thread pools (``n_threads=None``) beside the
   default one thread, and the ratio threaded / single-threaded (above 1 means threads hurt,
   e.g. on a busy shared machine);
3. the ratio of the total to the 5-second target of the dashboard default.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.tabular.audit import run_audit  # noqa: E402

TARGET_S = 5.0


def _best(args, rounds: int, n_threads: int | None) -> tuple[float, dict[str, float]]:
    best_total, best_stages = float("inf"), {}
    for _ in range(rounds):
        start = time.perf_counter()
        res = run_audit(args.dataset, model=args.model, seed=0, n_threads=n_threads)
        total = time.perf_counter() - start
        if total < best_total:
            best_total, best_stages = total, res.timings
    return best_total, best_stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="credit_data")
    parser.add_argument("--model", default="hist_gb")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    run_audit("breast_cancer", model="logreg", seed=0)  # warm imports (shap, sklearn, ...)

    single, single_stages = _best(args, args.rounds, 1)
    threaded, stages = _best(args, args.rounds, None)
    print(f"{args.dataset} / {args.model}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'stage':24s} {'1 thread':>9s} {'share':>7s} {'threads':>9s}")
    for stage, seconds in single_stages.items():
        print(f"{stage:24s} {seconds:8.2f}s {seconds / single:7.1%} {stages.get(stage, float('nan')):8.2f}s")
    print(f"{'total (incl. glue)':24s} {single:8.2f}s {'':7s} {threaded:8.2f}s")
    print(f"ratio threaded / single-threaded: {threaded / single:.2f}")
    print(f"ratio default (1 thread) total / {TARGET_S:.0f} s target: {single / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
