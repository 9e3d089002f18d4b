"""Regenerate the precomputed grids, screening scores and policy reports of the paired demo pool (or check them).

    python scripts/build_paired_grid.py [--check] [--out FILE] [--screening-out FILE] [--policies-out FOLDER]

Computes :func:`core.paired.coverage_grid.coverage_grid` of the shipped demo pool
(``assets/paired_demo``) at every coverage of :data:`core.constants.COVERAGES` and writes them,
with one fingerprint per coverage, to ``assets/paired_demo_grid.parquet``; the pool's
screening scores (:func:`core.imaging.demo_screening.demo_screening`) with their fingerprint to
``assets/paired_demo_screening.parquet``; and the policy report of every cell of the pool
(:func:`core.paired.policies.evaluate_policies`, as the Paired bounds page computes it; a few
minutes, on two processes) with its fingerprint to the four Parquet files of
``assets/paired_demo_policies/`` (atomic writes). The Paired bounds and Recapture queue
pages use a stored result only when its fingerprint matches the pool, the computing code and
the library versions exactly. ``--check`` only says whether every stored result still matches
in this environment (exit 1 if not): run it after changing the bound solvers, the policy
comparison, the screening scores, the demo pool or a library version.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.constants import COVERAGES  # noqa: E402
from core.exceptions import UndefinedTargetWarning  # noqa: E402
from core.imaging.demo import DEFAULT_DIR, load_demo_pool  # noqa: E402
from core.imaging.demo_screening import PRECOMPUTED_SCREENING, load_precomputed_screening, write_precomputed_screening  # noqa: E402
from core.paired.coverage_grid import PRECOMPUTED_GRID, load_precomputed_grid, write_precomputed_grid  # noqa: E402
from core.paired.policy_store import (  # noqa: E402
    PRECOMPUTED_POLICIES,
    policy_cells,
    stored_policies_match,
    write_precomputed_policies,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the stored results match")
    parser.add_argument("--out", type=Path, default=PRECOMPUTED_GRID, help="grid file (default: %(default)s)")
    parser.add_argument(
        "--screening-out", type=Path, default=PRECOMPUTED_SCREENING, help="screening file (default: %(default)s)"
    )
    parser.add_argument(
        "--policies-out",
        type=Path,
        default=PRECOMPUTED_POLICIES,
        help="policy reports folder (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    pool = load_demo_pool(DEFAULT_DIR)
    if args.check:
        stale = [
            f"coverage {q:g} in {args.out}"
            for q in COVERAGES
            if load_precomputed_grid(pool.records, q, args.out) is None
        ]
        if load_precomputed_screening(DEFAULT_DIR, args.screening_out) is None:
            stale.append(f"screening scores in {args.screening_out}")
        if not stored_policies_match(pool.records, args.policies_out):
            stale.append(f"policy reports in {args.policies_out}")
        for what in stale:
            print(f"stale or missing: {what}")
        print("all stored results match" if not stale else "run: python scripts/build_paired_grid.py")
        return 1 if stale else 0
    with warnings.catch_warnings():
        # dM_k is undefined (NaN) in cells where no pair stays correct; the grid keeps the NaN.
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        path = write_precomputed_grid(pool.records, args.out, coverages=COVERAGES)
    print(f"wrote {path} ({path.stat().st_size:,} bytes, coverages {', '.join(f'{q:g}' for q in COVERAGES)})")
    path = write_precomputed_screening(DEFAULT_DIR, args.screening_out)
    print(
        f"wrote {path} ({path.stat().st_size:,} bytes, screening scores of {len(pool.clean['model'].unique())} models)"
    )
    start = time.perf_counter()
    path = write_precomputed_policies(pool.records, args.policies_out)
    size = sum(file.stat().st_size for file in path.glob("*.parquet"))
    print(
        f"wrote {path} ({size:,} bytes, policy reports of {len(policy_cells(pool.records))} cells "
        f"in {time.perf_counter() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
