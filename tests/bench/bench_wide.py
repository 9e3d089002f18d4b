"""Benchmark of the interactive audit of a wide table (500 columns), as the dashboard runs it.

    python tests/bench/bench_wide.py [--columns 500] [--rows 20000] [--model hist_gb]

Builds a synthetic table of ``--rows`` rows and ``--columns`` numeric columns (a few of them
informative, the rest noise, some missing values), uploads it the way the Overview does
(CSV bytes through :func:`core.tabular.datasets.load_user_data`), then runs
:func:`core.tabular.audit.run_audit` on the interactive sample the dashboard picks for it
(:func:`core.views.uploads.interactive_sample_rows`). Prints the wall time per stage, the sample
and the ratio of the total to the 30-second target of the issue.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.tabular.audit import run_audit  # noqa: E402
from core.tabular.datasets import load_user_data  # noqa: E402
from core.views.uploads import interactive_sample_rows  # noqa: E402

TARGET_S = 30.0


def wide_table(n_rows: int, n_columns: int, *, seed: int = 0) -> pd.DataFrame:
    """A binary-target table whose first 8 columns carry the signal; 2 % missing values."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_columns))
    logit = X[:, :8] @ np.linspace(1.5, 0.2, 8)
    y = rng.random(n_rows) < 1 / (1 + np.exp(-logit))
    X[rng.random(X.shape) < 0.02] = np.nan
    frame = pd.DataFrame(X, columns=[f"f{j:03d}" for j in range(n_columns)])
    frame["target"] = np.where(y, "yes", "no")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=500)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--model", default="hist_gb")
    parser.add_argument(
        "--sample-rows",
        type=int,
        default=None,
        help="override the interactive sample (default: the dashboard's choice)",
    )
    args = parser.parse_args()

    buffer = io.BytesIO(wide_table(args.rows, args.columns).to_csv(index=False).encode())
    buffer.name = "wide.csv"
    start = time.perf_counter()
    dataset = load_user_data(buffer, "target")
    t_load = time.perf_counter() - start
    rows = args.sample_rows or interactive_sample_rows(len(dataset.frame), len(dataset.features))
    start = time.perf_counter()
    result = run_audit(dataset, model=args.model, seed=0, max_rows=rows if rows < len(dataset.frame) else None)
    total = time.perf_counter() - start
    print(
        f"{args.rows:,} rows x {args.columns} columns, {args.model}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"upload validation {t_load:.2f} s; interactive sample {len(result.dataset.frame):,} rows, "
        f"{len(result.y_test):,} test predictions, {len(result.groups)} groups"
    )
    for stage, seconds in result.timings.items():
        print(f"  {stage:24s} {seconds:8.2f} s {seconds / total:7.1%}")
    print(f"audit total {total:.2f} s  ratio to {TARGET_S:.0f} s target: {total / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
