"""Print the screening summary of a demo pool, as in ``docs/screening.md`` ("What the demo shows").

``python scripts/demo_screening_summary.py [--pool DIR]`` (default: the shipped pool; about a
minute). AUROC / coverage at q = 0.2 per tier, cells weighted equally; the mild-tier U − S
coverage difference with group and class bootstrap intervals; the identity ablation of U.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.paired.demo import DEFAULT_DIR, load_demo_pool  # noqa: E402
from core.paired.screening import (  # noqa: E402
    condition_tiers,
    identity_ablation,
    screening_difference,
    screening_metrics,
    screening_scores,
    summarize_screening,
)

SCORES = ["S", "U", "TTA", "A3", "g_SU"]
TIERS = ["mild", "severe", "extreme"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=DEFAULT_DIR, help=f"pool folder (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    pool = load_demo_pool(args.pool)
    real = pool.records[pool.records["source"] == "simulated-recapture"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = screening_scores(pool.probes, pool.clean, outcomes=real)
    tiers = condition_tiers(real)
    metrics = screening_metrics(scores, real, score_names=SCORES, budgets=0.2, tiers=tiers)
    summary = summarize_screening(metrics).set_index(["tier", "score"])
    counts = tiers.drop_duplicates("condition")["tier"].value_counts()
    print(f"conditions per tier: {', '.join(f'{t} {counts.get(t, 0)}' for t in TIERS)}")
    print("| tier | " + " | ".join(SCORES) + " | ceiling |")
    print("|---|" + "---|" * (len(SCORES) + 1))
    for tier in TIERS:
        cells = [f"{summary.loc[(tier, s), 'auroc']:.3f} / {summary.loc[(tier, s), 'coverage']:.3f}" for s in SCORES]
        print(f"| {tier} | " + " | ".join(cells) + f" | {summary.loc[(tier, 'S'), 'ceiling']:.3f} |")
    for resample in ("group", "class"):
        diff = screening_difference(scores, real, a="U", b="S", budget=0.2, resample=resample, tiers=tiers)
        row = diff[diff["tier"] == "mild"].iloc[0]
        print(f"mild U - S coverage: {row['difference']:+.3f}, 95 % {resample} interval "
              f"[{row['low']:+.3f}, {row['high']:+.3f}]")
    ablation = identity_ablation(scores, real, score="U")
    gap = ablation["gap"].dropna()
    print(f"identity ablation: U above its derangement in {(gap > 0).mean():.0%} of cells, "
          f"mean AUROC gap {gap.mean():+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
