"""Regenerate the precomputed identified-interval grids of the paired demo pool (or check them).

    python scripts/build_paired_grid.py [--check] [--out FILE]

Computes :func:`core.paired.coverage_grid.coverage_grid` of the shipped demo pool
(``assets/paired_demo``) at every coverage of :data:`core.constants.COVERAGES` and writes them,
with one fingerprint per coverage, to ``assets/paired_demo_grid.parquet`` (atomic write). The
Paired bounds page uses a stored grid only when its fingerprint matches the records, the
coverage, the computing code and the library versions exactly. ``--check`` only says whether
every stored grid still matches in this environment (exit 1 if not): run it after changing the
bound solvers, the demo pool or a library version.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.constants import COVERAGES  # noqa: E402
from core.exceptions import UndefinedTargetWarning  # noqa: E402
from core.paired.coverage_grid import (PRECOMPUTED_GRID, load_precomputed_grid,  # noqa: E402
                                       write_precomputed_grid)
from core.paired.demo import DEFAULT_DIR, load_demo_pool  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the stored grids match")
    parser.add_argument("--out", type=Path, default=PRECOMPUTED_GRID, help="file to write (default: %(default)s)")
    args = parser.parse_args(argv)
    records = load_demo_pool(DEFAULT_DIR).records
    if args.check:
        stale = [q for q in COVERAGES if load_precomputed_grid(records, q, args.out) is None]
        for q in stale:
            print(f"stale or missing: coverage {q:g} in {args.out}")
        print("all stored grids match" if not stale else "run: python scripts/build_paired_grid.py")
        return 1 if stale else 0
    with warnings.catch_warnings():
        # dM_k is undefined (NaN) in cells where no pair stays correct; the grid keeps the NaN.
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        path = write_precomputed_grid(records, args.out, coverages=COVERAGES)
    print(f"wrote {path} ({path.stat().st_size:,} bytes, coverages {', '.join(f'{q:g}' for q in COVERAGES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
