"""Print the screening summary of a demo pool, as in ``docs/screening.md`` ("What the demo shows").

``python scripts/demo_screening_summary.py [--pool DIR] [--class-draws 200]`` (default: the
shipped pool; a few minutes). Markdown on stdout. The simulated re-captures are evaluated per
medium (screen, print), as the paper evaluates its two physical sources (ES, Diverse) apart:
scores (g(S, U) is fitted per medium), AUROC and failure coverage at q = 0.1 / 0.2 / 0.3 per
SPEC B.5 tier with ceilings and the random expectation, cells (model x condition) weighted
equally; paired differences U - S and U - TTA with 95 % model-group (2,000 draws) and class
(200 draws) bootstrap intervals; the identity ablation of U (within-class derangement,
10 seeded draws; leave-one-out class mean).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.imaging.demo import DEFAULT_DIR, load_demo_pool  # noqa: E402
from core.paired.screening import (  # noqa: E402
    condition_tiers,
    identity_ablation,
    screening_difference,
    screening_metrics,
    screening_scores,
    summarize_screening,
)

SCORES = ["U", "S", "delta", "ret", "A3", "TTA", "class_delta", "g_SU"]
LABELS = {
    "U": "U",
    "S": "S (clean confidence)",
    "delta": "δ = S − U",
    "ret": "ret",
    "A3": "A3",
    "TTA": "TTA (natural transforms)",
    "class_delta": "control: class mean of M − U",
    "g_SU": "control: g(S, U)",
}
TIERS = ["mild", "severe", "extreme"]
BUDGETS = (0.1, 0.2, 0.3)
PAPER = {"screen": {"U": 0.67, "S": 0.58, "TTA": 0.60}, "print": {"U": 0.45, "S": 0.36, "TTA": 0.37}}
"""001_... at q = 0.2 on mild conditions: ES screen recaptures and Diverse print recaptures."""


def _fmt(value: float) -> str:
    return "–" if value != value else f"{value:.3f}"


def _medium(pool, medium: str, class_draws: int) -> dict:
    cond = pool.conditions
    names = cond.loc[cond["medium"] == medium, "condition"]
    real = pool.records[pool.records["condition"].isin(names)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pool has everything every score needs
        scores = screening_scores(pool.probes, pool.clean, outcomes=real)
    tiers = condition_tiers(real)
    metrics = screening_metrics(scores, real, score_names=SCORES, budgets=BUDGETS, tiers=tiers)
    summary = summarize_screening(metrics, by=("tier", "score", "budget")).set_index(["tier", "score", "budget"])
    diffs = {}
    for other in ("S", "TTA"):
        for resample, draws in (("group", 2000), ("class", class_draws)):
            d = screening_difference(
                scores, real, a="U", b=other, budget=0.2, resample=resample, n_draws=draws, tiers=tiers
            )
            diffs[(other, resample)] = d.set_index("tier")
    ablation = identity_ablation(scores, real, score="U").merge(
        tiers[["condition", "tier"]], on="condition", how="left"
    )
    return {"tiers": tiers, "summary": summary, "diffs": diffs, "ablation": ablation}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=DEFAULT_DIR, help=f"pool folder (default {DEFAULT_DIR})")
    parser.add_argument("--class-draws", type=int, default=200, help="class bootstrap draws (default 200)")
    args = parser.parse_args(argv)
    pool = load_demo_pool(args.pool)
    results = {m: _medium(pool, m, args.class_draws) for m in ("screen", "print")}

    n_models, n_groups = pool.models["model"].nunique(), pool.models["group"].nunique()
    ev = pool.clean[pool.clean["split"] == "eval"]
    cc = (ev["pred"] == ev["true_label"]).groupby(ev["model"]).sum()
    print(
        f"{n_models} models in {n_groups} groups; clean-correct evaluation images per model "
        f"{int(cc.min())}–{int(cc.max())} of {ev['record_id'].nunique()}."
    )
    for medium, r in results.items():
        counts = r["tiers"]["tier"].value_counts()
        print(f"{medium}: conditions per tier " + ", ".join(f"{t} {counts.get(t, 0)}" for t in TIERS))
    print()

    print(
        "**Side by side with the paper** (mild tier, failure coverage at q = 0.2; paper: 44 ImageNet "
        "models, physical ES screen / Diverse print recaptures; here: simulated screen / print):\n"
    )
    print("| score | screen (sim.) | paper ES screen | print (sim.) | paper Diverse print |")
    print("|---|---|---|---|---|")
    for score in ("U", "S", "TTA"):
        cells = []
        for medium in ("screen", "print"):
            cells += [
                _fmt(results[medium]["summary"].loc[("mild", score, 0.2), "coverage"]),
                f"{PAPER[medium][score]:.2f}",
            ]
        print(f"| {LABELS[score]} | " + " | ".join(cells) + " |")
    for key in ("ceiling", "random"):
        cells = [_fmt(results[m]["summary"].loc[("mild", "S", 0.2), key]) for m in ("screen", "print")]
        print(f"| {key} | {cells[0]} | | {cells[1]} | |")
    print()

    for medium, r in results.items():
        s = r["summary"]
        print(f"**{medium.capitalize()}, per tier** (AUROC, then failure coverage at q = 0.1 / 0.2 / 0.3):\n")
        print("| score | " + " | ".join(f"{t} AUROC | {t} cov@.1/.2/.3" for t in TIERS) + " |")
        print("|---|" + "---|---|" * len(TIERS))
        for score in SCORES:
            cells = []
            for tier in TIERS:
                if (tier, score, 0.2) not in s.index:
                    cells += ["–", "–"]
                    continue
                cells += [
                    _fmt(s.loc[(tier, score, 0.2), "auroc"]),
                    " / ".join(_fmt(s.loc[(tier, score, q), "coverage"]) for q in BUDGETS),
                ]
            print(f"| {LABELS[score]} | " + " | ".join(cells) + " |")
        for key in ("ceiling", "random"):
            cells = []
            for tier in TIERS:
                cells += [
                    "",
                    " / ".join(_fmt(s.loc[(tier, "S", q), key]) if (tier, "S", q) in s.index else "–" for q in BUDGETS),
                ]
            print(f"| {key} | " + " | ".join(cells) + " |")
        print()
        print(f"{medium.capitalize()}, coverage differences at q = 0.2 (95 % intervals, model groups / classes):\n")
        print("| tier | U − S | group interval | class interval | U − TTA | group interval | class interval |")
        print("|---|---|---|---|---|---|---|")
        for tier in TIERS:
            cells = []
            for other in ("S", "TTA"):
                g, c = r["diffs"][(other, "group")], r["diffs"][(other, "class")]
                if tier not in g.index:
                    cells += ["–", "–", "–"]
                    continue
                cells += [
                    f"{g.loc[tier, 'difference']:+.3f}",
                    f"[{g.loc[tier, 'low']:+.3f}, {g.loc[tier, 'high']:+.3f}]",
                    f"[{c.loc[tier, 'low']:+.3f}, {c.loc[tier, 'high']:+.3f}]",
                ]
            print(f"| {tier} | " + " | ".join(cells) + " |")
        print()
        a = r["ablation"]
        print(f"{medium.capitalize()}, identity ablation of U (AUROC, cells weighted equally):\n")
        print("| tier | U | within-class derangement | leave-one-out class mean | S | cells with U above derangement |")
        print("|---|---|---|---|---|---|")
        for tier in TIERS:
            t = a[a["tier"] == tier]
            if t.empty:
                continue
            gap = t["gap"].dropna()
            print(
                f"| {tier} | {_fmt(t['auroc_score'].mean())} | {_fmt(t['auroc_derangement'].mean())} | "
                f"{_fmt(t['auroc_loo'].mean())} | {_fmt(t['auroc_S'].mean())} | {(gap > 0).mean():.0%} |"
            )
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
