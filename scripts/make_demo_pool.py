"""Regenerate the shipped demo pool: ``python scripts/make_demo_pool.py [--source DIR] [--out DIR] [--seed N]``.

A thin wrapper around :func:`core.imaging.demo.build_demo_pool` and
:func:`core.imaging.demo.save_demo_pool`; see ``docs/screening.md``. Needs Fashion-MNIST
(Debian's ``dataset-fashion-mnist``, default ``/usr/share/datasets/fashion-mnist``). Runs
single-threaded (determinism; the machine may be shared).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.imaging.demo import DEFAULT_DIR, FASHION_MNIST_DIR, MODEL_SPECS, build_demo_pool, save_demo_pool  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source", type=Path, default=FASHION_MNIST_DIR, help=f"the Fashion-MNIST folder (default {FASHION_MNIST_DIR})"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help=f"output folder (default {DEFAULT_DIR})")
    parser.add_argument("--seed", type=int, default=0, help="the one seed everything derives from (default 0)")
    parser.add_argument(
        "--models", default=None, help="comma-separated subset of " + ",".join(m.name for m in MODEL_SPECS)
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", flush=True)

    try:
        pool = build_demo_pool(
            args.source, seed=args.seed, models=args.models.split(",") if args.models else None, progress=say
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    paths = save_demo_pool(pool, args.out)
    total = sum(p.stat().st_size for p in paths.values())
    for role, path in paths.items():
        say(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    say(f"done: {total / 1e6:.2f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
