"""Regenerate the precomputed grids and screening scores of the paired demo pool (or check them).

    python scripts/build_paired_grid.py [--check] [--out FILE] [--screening-out FILE]

Computes :func:`core.paired.coverage_grid.coverage_grid` of the shipped demo pool
(``assets/paired_demo``) at every coverage of :data:`core.constants.COVERAGES` and writes them,
with one fingerprint per coverage, to ``assets/paired_demo_grid.parquet``; and the pool's
screening scores (:func:`core.imaging.demo_screening.demo_screening`) with their fingerprint to
``assets/paired_demo_screening.parquet`` (atomic writes). The Paired bounds and Recapture queue
pages use a stored result only when its fingerprint matches the pool, the computing code and
the library versions exactly. ``--check`` only says whether every stored result still matches
in this environment (exit 1 if not): run it after changing the bound solvers, the screening
scores, the demo pool or a library version.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.constants import COVERAGES  # noqa: E402
from core.exceptions import UndefinedTargetWarning  # noqa: E402
from core.imaging.demo import DEFAULT_DIR, load_demo_pool  # noqa: E402
from core.imaging.demo_screening import PRECOMPUTED_SCREENING, load_precomputed_screening, write_precomputed_screening  # noqa: E402
from core.paired.coverage_grid import PRECOMPUTED_GRID, load_precomputed_grid, write_precomputed_grid  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the stored results match")
    parser.add_argument("--out", type=Path, default=PRECOMPUTED_GRID, help="grid file (default: %(default)s)")
    parser.add_argument(
        "--screening-out", type=Path, default=PRECOMPUTED_SCREENING, help="screening file (default: %(default)s)"
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
