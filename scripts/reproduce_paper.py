"""The paper reproduction sweep and its tables (docs/reproduction.md).

    python scripts/reproduce_paper.py run --out results/reproduction            # the sweep (resumable)
    python scripts/reproduce_paper.py report --out results/reproduction         # tables from it

``run`` audits every dataset x model x seed with the default protocol and label channel
(SPEC's defaults, which are the paper's) and stores one Parquet file of per-sample records
per unit (:func:`core.tabular.reproduction.sample_records`) plus a JSON line of nominal
metrics and timings; units already on disk are skipped, so an interrupted run continues
where it stopped. Controlled re-runs use the same command with another ``--out`` and one
changed option (``--depth``, ``--masking-rates`` ..., ``--draws``, ``--population``).

``report`` prints (and writes to ``OUT/tables.md``) every table of docs/reproduction.md:
per-dataset AUROC, paired bootstrap aggregate and win rates, Capture@5/10/20 and AURC, the
(τ_p, τ_κ) grid, the FDS weight sensitivity and the component ablation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd

DATASETS = ("adult", "credit_g", "credit_data", "lending_club", "mlc_churn", "wa_churn", "breast_cancer")
SCORE_LABELS = {
    "fds": "FDS",
    "rcma": "RCMA",
    "inv_flip_budget": "1/k*",
    "degradation": "degradation",
    "one_step": "one-step drop",
    "max_softmax": "max-softmax",
    "entropy": "entropy",
    "margin": "margin",
    "neg_energy": "neg-energy",
}
WEIGHTS = {
    "equal (1/3, 1/3, 1/3)": (1 / 3, 1 / 3, 1 / 3),
    "RCMA-heavy (1/2, 1/4, 1/4)": (0.5, 0.25, 0.25),
    "flip-heavy (1/4, 1/2, 1/4)": (0.25, 0.5, 0.25),
    "degradation-heavy (1/4, 1/4, 1/2)": (0.25, 0.25, 0.5),
    "no degradation (1/2, 1/2, 0)": (0.5, 0.5, 0.0),
    "no 1/k* (1/2, 0, 1/2)": (0.5, 0.0, 0.5),
    "no RCMA (0, 1/2, 1/2)": (0.0, 0.5, 0.5),
}
TAU_P, TAU_KAPPA = (0.85, 0.90, 0.95), (0.25, 0.50, 0.75)


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(","))


def _rows(text: str) -> dict[str, int]:
    out = {}
    for item in filter(None, text.split(",")):
        name, _, n = item.partition("=")
        out[name] = int(n)
    return out


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------
def run(args) -> int:
    from core.cfc.protocol import Protocol
    from core.cfc.stressors import LabelChannel
    from core.tabular.audit import run_audit
    from core.tabular.datasets import load_dataset
    from core.tabular.reproduction import sample_records

    out = Path(args.out)
    (out / "units").mkdir(parents=True, exist_ok=True)
    given = {
        "masking_rates": args.masking_rates,
        "dropout_rates": args.dropout_rates,
        "noise_scales": args.noise_scales,
        "n_draws": args.draws,
    }
    channel = LabelChannel(**{k: v for k, v in given.items() if v is not None})
    protocol = Protocol(depth=args.depth)
    config = {
        "datasets": args.datasets,
        "models": args.models,
        "seeds": args.seeds,
        "max_rows": args.max_rows,
        "rows": args.rows,
        "protocol": protocol.to_dict(),
        "label_channel": channel.to_dict(),
        "population": args.population,
        "model_params": args.model_params,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    total = len(args.datasets) * len(args.models) * len(args.seeds)
    done = 0
    for name in args.datasets:
        dataset = load_dataset(name)
        rows = args.rows.get(name, args.max_rows)
        for model in args.models:
            for seed in args.seeds:
                done += 1
                target = out / "units" / f"{name}__{model}__seed{seed}.parquet"
                if target.exists():
                    continue
                start = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = run_audit(
                            dataset,
                            model=model,
                            seed=seed,
                            max_rows=rows,
                            protocol=protocol,
                            label_channel=channel,
                            population=args.population,
                            model_params=args.model_params.get(model),
                        )
                except Exception as exc:  # one failing unit must not stop a long sweep; it is recorded
                    line = {"dataset": name, "model": model, "seed": seed, "error": f"{type(exc).__name__}: {exc}"}
                    print(f"[{done}/{total}] {name} / {model} / {seed}: FAILED {line['error']}", flush=True)
                else:
                    samples = sample_records(res)
                    tmp = target.with_suffix(".tmp")
                    samples.to_parquet(tmp, index=False)
                    tmp.rename(target)  # a unit on disk is always complete
                    line = {
                        "dataset": name,
                        "model": model,
                        "seed": seed,
                        "n_rows": len(res.dataset.frame),
                        "n_test": len(res.y_test),
                        "n_high_confidence": int(res.labels.high_confidence.sum()),
                        "n_brittle": int(res.labels.labels.sum()),
                        "depth": res.certificates.depth,
                        "unavailable_groups": list(res.unavailable_groups),
                        **res.nominal,
                        "seconds": time.perf_counter() - start,
                    }
                    print(f"[{done}/{total}] {name} / {model} / {seed}: {line['seconds']:.1f} s", flush=True)
                with open(out / "runs.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(line) + "\n")
    return 0


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def load_units(out: Path) -> dict[tuple[str, str, int], pd.DataFrame]:
    units = {}
    for path in sorted((out / "units").glob("*.parquet")):
        name, model, seed = path.stem.split("__")
        units[(name, model, int(seed.removeprefix("seed")))] = pd.read_parquet(path)
    if not units:
        raise SystemExit(f"no unit files under {out / 'units'}; run the sweep first")
    return units


def evaluate_all(units, **options) -> pd.DataFrame:
    from core.tabular.reproduction import evaluate_samples

    frames = []
    for (name, model, seed), samples in units.items():
        if options.get("label") == "naturalistic_brittle" and "naturalistic_brittle" not in samples.columns:
            continue
        frames.append(evaluate_samples(samples, **options).assign(dataset=name, model=model, seed=seed))
    return pd.concat(frames, ignore_index=True)


def md(frame: pd.DataFrame, digits: int = 3) -> str:
    from core.tabular.audit import markdown_table

    return markdown_table(frame, digits=digits)


def _win(ev: pd.DataFrame, score: str, reference: str) -> float:
    wide = ev.pivot_table(index=["dataset", "model", "seed"], columns="score", values="auroc")
    ok = wide[[score, reference]].notna().all(axis=1)
    return float((wide[score] > wide[reference])[ok].mean())


def report(args) -> int:
    from core.cfc.evaluation import paired_bootstrap
    from core.csv_safe import write_csv
    from core.tabular.reproduction import weighted_u

    out = Path(args.out)
    units = load_units(out)
    ev = evaluate_all(units)
    write_csv(ev, out / "evaluation_units.csv", index=False)
    order = [d for d in DATASETS if d in set(ev["dataset"])]
    sections = [
        f"Units: {len(units)} ({ev.groupby('dataset')['seed'].size().div(ev['score'].nunique()).astype(int).to_dict()})"
    ]

    # Per-dataset AUROC (mean over models and seeds, units with a defined AUROC).
    main = ["fds", "rcma", "inv_flip_budget", "degradation", "one_step", "max_softmax", "neg_energy"]
    per = ev[ev["score"].isin(main)].pivot_table(index="dataset", columns="score", values="auroc", aggfunc="mean")
    per = per.reindex(order)[main].rename(columns=SCORE_LABELS).reset_index()
    hc = ev[ev["score"] == "fds"].groupby("dataset")[["n", "n_brittle"]].sum()
    per.insert(1, "brittle share", [hc.loc[d, "n_brittle"] / hc.loc[d, "n"] for d in per["dataset"]])
    sections += ["## Per-dataset AUROC", md(per)]

    # Per dataset x model (FDS, RCMA, max-softmax, win of FDS over the unit's best non-certificate score).
    boot = paired_bootstrap(ev, n_resamples=args.bootstrap, seed=0)
    ref = boot["reference"].iloc[0]
    wide = ev.pivot_table(index=["dataset", "model", "seed"], columns="score", values="auroc")
    nonc = [s for s in ("one_step", "max_softmax", "entropy", "margin", "neg_energy") if s in wide.columns]
    wide["best_nonc"] = wide[nonc].max(axis=1)
    wide["fds_win_vs_ref"] = (wide["fds"] > wide[ref]).where(wide[["fds", ref]].notna().all(axis=1))
    wide["fds_win_vs_best"] = (wide["fds"] > wide["best_nonc"]).where(wide[["fds", "best_nonc"]].notna().all(axis=1))
    wide["rcma_win_vs_ref"] = (wide["rcma"] > wide[ref]).where(wide[["rcma", ref]].notna().all(axis=1))
    cell = wide.groupby(["dataset", "model"])[
        ["fds", "rcma", "max_softmax", "fds_win_vs_ref", "fds_win_vs_best"]
    ].mean()
    cell = cell.reindex(order, level=0).reset_index()
    sections += ["## Per dataset x model (mean over seeds)", md(cell)]

    # Aggregate with paired bootstrap over all units.
    b = boot.assign(score=boot["score"].map(lambda s: SCORE_LABELS.get(s, s)))
    sections += [
        f"## Aggregate AUROC, paired bootstrap ({args.bootstrap} resamples), reference = {ref}",
        md(
            b[["score", "n_units", "mean", "ci_low", "ci_high", "diff_mean", "diff_ci_low", "diff_ci_high", "win_rate"]]
        ),
    ]
    for name in order:
        bd = paired_bootstrap(ev[ev["dataset"] == name], n_resamples=args.bootstrap, seed=0)
        bd = bd[bd["score"].isin(["fds", "rcma", "max_softmax", bd["reference"].iloc[0]])]
        sections += [
            f"### {name} (reference = {bd['reference'].iloc[0]})",
            md(
                bd[
                    [
                        "score",
                        "n_units",
                        "mean",
                        "ci_low",
                        "ci_high",
                        "diff_mean",
                        "diff_ci_low",
                        "diff_ci_high",
                        "win_rate",
                    ]
                ]
            ),
        ]
    conf_ref = "neg_energy"
    bc = paired_bootstrap(ev, reference=conf_ref, n_resamples=args.bootstrap, seed=0)
    bc = bc.assign(score=bc["score"].map(lambda s: SCORE_LABELS.get(s, s)))
    sections += [
        f"## Aggregate against the paper's reference ({conf_ref}, the strongest confidence score)",
        md(
            bc[bc["score"].isin(["FDS", "RCMA", "1/k*", "degradation", "one-step drop"])][
                ["score", "n_units", "mean", "diff_mean", "diff_ci_low", "diff_ci_high", "win_rate"]
            ]
        ),
    ]
    rows = []
    for name in order:
        bd = paired_bootstrap(
            ev[ev["dataset"] == name], reference=conf_ref, n_resamples=args.bootstrap, seed=0
        ).set_index("score")
        rows.append(
            {
                "dataset": name,
                "FDS - neg-energy": bd.loc["fds", "diff_mean"],
                "ci_low": bd.loc["fds", "diff_ci_low"],
                "ci_high": bd.loc["fds", "diff_ci_high"],
                "FDS win rate": bd.loc["fds", "win_rate"],
                "RCMA win rate": bd.loc["rcma", "win_rate"],
            }
        )
    sections += ["### Per dataset against neg-energy", md(pd.DataFrame(rows))]
    comp = []
    depth = {}
    if (out / "runs.jsonl").exists():
        for line in pd.read_json(out / "runs.jsonl", lines=True).dropna(subset=["depth"]).itertuples():
            depth[(line.dataset, line.model, int(line.seed))] = int(line.depth)
    for key, samples in units.items():
        hc_rows = samples[samples["high_confidence"]]
        k = hc_rows["flip_budget"].to_numpy()
        comp.append(
            {
                "dataset": key[0],
                "RCMA": hc_rows["rcma"].mean(),
                "1/k*": (1 / k).mean(),
                "degradation": hc_rows["degradation"].mean(),
                "share no flip within K": (k == depth[key] + 1).mean() if key in depth else np.nan,
                "distinct 1/k* values": len(np.unique(k)),
            }
        )
    comp = pd.DataFrame(comp).groupby("dataset").mean().reindex(order).reset_index()
    sections += ["## Scale of the FDS components on the high-confidence rows (means over units)", md(comp)]
    sections += [
        f"Win rate of FDS against the unit's own best non-certificate score: "
        f"{wide['fds_win_vs_best'].mean():.3f} over {int(wide['fds_win_vs_best'].notna().sum())} units; "
        f"against {ref}: {wide['fds_win_vs_ref'].mean():.3f}; RCMA against {ref}: "
        f"{wide['rcma_win_vs_ref'].mean():.3f}"
    ]

    # Budgeted capture and AURC (mean over units).
    cap = (
        ev[ev["score"].isin(main)]
        .groupby("score", sort=False)[["capture@5", "capture@10", "capture@20", "aurc"]]
        .mean()
    )
    cap = cap.reindex(main).rename(index=SCORE_LABELS).reset_index()
    share = ev[ev["score"] == "fds"]["n_brittle"] / ev[ev["score"] == "fds"]["n"]
    ceiling = np.minimum(1.0, 0.2 / share.where(share > 0)).mean()
    sections += [
        "## Capture@q and AURC (mean over units)",
        md(cap),
        f"Mean Capture@20 ceiling (a perfect ranking: min(1, 0.2 / brittle share)): {ceiling:.3f}",
    ]
    capd = (
        ev[ev["score"].isin(["fds", "max_softmax", "neg_energy"])]
        .pivot_table(index="dataset", columns="score", values="capture@20", aggfunc="mean")
        .reindex(order)
        .reset_index()
    )
    sections += ["### Capture@20 per dataset", md(capd)]

    # Threshold grid.
    grid = []
    for tp in TAU_P:
        for tk in TAU_KAPPA:
            g = evaluate_all(units, tau_p=tp, tau_kappa=tk)
            bg = paired_bootstrap(g, n_resamples=args.bootstrap, seed=0).set_index("score")
            r = bg["reference"].iloc[0]
            grid.append(
                {
                    "tau_p": tp,
                    "tau_kappa": tk,
                    "brittle share": g[g["score"] == "fds"]["n_brittle"].sum() / g[g["score"] == "fds"]["n"].sum(),
                    "FDS": bg.loc["fds", "mean"],
                    "RCMA": bg.loc["rcma", "mean"],
                    "max-softmax": bg.loc["max_softmax", "mean"],
                    "reference": r,
                    "ref AUROC": bg.loc[r, "mean"],
                    "FDS - ref": bg.loc["fds", "diff_mean"],
                    "FDS win rate": bg.loc["fds", "win_rate"],
                    "FDS win vs neg-energy": _win(g, "fds", "neg_energy"),
                    "FDS Capture@20": g[g["score"] == "fds"]["capture@20"].mean(),
                    "neg-energy Capture@20": g[g["score"] == "neg_energy"]["capture@20"].mean(),
                }
            )
    sections += ["## (tau_p, tau_kappa) sensitivity grid", md(pd.DataFrame(grid))]

    # FDS weights.
    rows = []
    extra_eval = []
    for label, w in WEIGHTS.items():
        key = f"u[{label}]"
        extra_eval.append((key, w))
    frames = []
    for (name, model, seed), samples in units.items():
        from core.tabular.reproduction import evaluate_samples

        extra = {key: weighted_u(samples, w) for key, w in extra_eval}
        e = evaluate_samples(samples, extra_scores=extra)
        frames.append(e.assign(dataset=name, model=model, seed=seed))
    we = pd.concat(frames, ignore_index=True)
    bw = paired_bootstrap(we, n_resamples=args.bootstrap, seed=0).set_index("score")
    for key, w in extra_eval:
        rows.append(
            {
                "weights (w1 RCMA, w2 1/k*, w3 degradation)": key[2:-1],
                "AUROC": bw.loc[key, "mean"],
                "ci_low": bw.loc[key, "ci_low"],
                "ci_high": bw.loc[key, "ci_high"],
                "vs ref": bw.loc[key, "diff_mean"],
                "win rate": bw.loc[key, "win_rate"],
                "Capture@20": we[we["score"] == key]["capture@20"].mean(),
            }
        )
    sections += [f"## FDS weight sensitivity (reference = {bw['reference'].iloc[0]})", md(pd.DataFrame(rows))]

    # Component ablation.
    abl = boot.set_index("score").loc[["fds", "rcma", "inv_flip_budget", "degradation"]].reset_index()
    abl["score"] = abl["score"].map(SCORE_LABELS)
    sections += [
        "## Component ablation (each component alone vs the full FDS)",
        md(abl[["score", "mean", "ci_low", "ci_high", "diff_mean", "win_rate"]]),
    ]

    # Naturalistic labels.
    nat = evaluate_all(units, label="naturalistic_brittle")
    if len(nat):
        nt = (
            nat[nat["score"].isin(main)]
            .groupby(["dataset", "score"])[["n_brittle", "auroc"]]
            .agg({"n_brittle": "sum", "auroc": "mean"})
            .reset_index()
        )
        nt = (
            nt.pivot(index="dataset", columns="score", values="auroc")
            .reindex([d for d in order if d in set(nt["dataset"])])[main]
            .rename(columns=SCORE_LABELS)
            .reset_index()
        )
        nb = nat[nat["score"] == "fds"].groupby("dataset")["n_brittle"].sum()
        nt.insert(1, "n brittle (all units)", [int(nb[d]) for d in nt["dataset"]])
        sections += ["## Naturalistic labels (mean AUROC over units where defined)", md(nt)]

    # Runs.
    runs_path = out / "runs.jsonl"
    if runs_path.exists():
        runs = pd.read_json(runs_path, lines=True)
        if "error" in runs.columns:
            errs = runs[runs["error"].notna()]
            if len(errs):
                sections += ["## Failed units", md(errs[["dataset", "model", "seed", "error"]])]
        ok = runs[runs.get("seconds").notna()] if "seconds" in runs.columns else runs
        t = (
            ok.groupby("dataset")
            .agg(
                n_rows=("n_rows", "max"),
                n_test=("n_test", "max"),
                seconds=("seconds", "sum"),
                accuracy=("accuracy", "mean"),
                auroc=("auroc", "mean"),
            )
            .reindex(order)
            .reset_index()
        )
        sections += ["## Sizes and time", md(t, digits=3)]
    text = "\n\n".join(sections) + "\n"
    (out / "tables.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def _summary(ev: pd.DataFrame, units) -> dict:
    wide = ev.pivot_table(index=["dataset", "model", "seed"], columns="score", values="auroc")
    ok = wide[["fds", "neg_energy"]].notna().all(axis=1)
    fds = ev[ev["score"] == "fds"]
    share = fds["n_brittle"].sum() / fds["n"].sum()
    cap = ev.pivot_table(index=["dataset", "model", "seed"], columns="score", values="capture@20")
    unit_share = (fds["n_brittle"] / fds["n"]).where(fds["n"] > 0)
    return {
        "units": int(ok.sum()),
        "brittle share": share,
        "FDS": wide["fds"].mean(),
        "RCMA": wide["rcma"].mean(),
        "1/k*": wide["inv_flip_budget"].mean(),
        "one-step": wide["one_step"].mean(),
        "neg-energy": wide["neg_energy"].mean(),
        "FDS - neg-energy": (wide["fds"] - wide["neg_energy"])[ok].mean(),
        "FDS win vs neg-energy": (wide["fds"] > wide["neg_energy"])[ok].mean(),
        "FDS win vs one-step": (wide["fds"] > wide["one_step"])[wide[["fds", "one_step"]].notna().all(axis=1)].mean(),
        "FDS Capture@20": cap["fds"].mean(),
        "neg-energy Capture@20": cap["neg_energy"].mean(),
        "Capture@20 ceiling": np.minimum(1.0, 0.2 / unit_share.where(unit_share > 0)).mean(),
    }


def compare(args) -> int:
    base = load_units(Path(args.base))
    lines = []
    for variant in args.variants:
        units = load_units(Path(variant))
        config = json.loads((Path(variant) / "config.json").read_text())
        rows = []
        for name in sorted({k[0] for k in units}, key=DATASETS.index):
            keys = [k for k in units if k[0] == name and k in base]
            # The population only changes which stored rows are evaluated; the base is the
            # main sweep's evaluation (high-confidence rows).
            b = evaluate_all({k: base[k] for k in keys})
            v = evaluate_all({k: units[k] for k in keys}, population=config.get("population", "high_confidence"))
            rows.append({"dataset": name, "run": "main sweep", **_summary(b, keys)})
            rows.append({"dataset": name, "run": Path(variant).name, **_summary(v, keys)})
        frame = pd.DataFrame(rows)
        lines += [
            f"## {Path(variant).name}",
            "",
            f"Config: `{json.dumps({k: config[k] for k in ('models', 'seeds', 'label_channel', 'population', 'model_params') if k in config})}`"
            f", depth {config['protocol'].get('depth')}",
            "",
            md(frame),
            "",
        ]
    text = "\n".join(lines)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the sweep (resumable)")
    r.add_argument("--out", required=True)
    r.add_argument("--datasets", type=lambda t: t.split(","), default=list(DATASETS))
    r.add_argument("--models", type=lambda t: t.split(","), default=None)
    r.add_argument("--seeds", type=lambda t: [int(v) for v in t.split(",")], default=[0, 1, 2])
    r.add_argument("--max-rows", type=int, default=2000, help="stratified subsample of every dataset")
    r.add_argument("--rows", type=_rows, default={}, help="per-dataset sizes, e.g. adult=5000")
    r.add_argument("--depth", type=int, default=None, help="audit depth K (default min(G, 5))")
    r.add_argument("--masking-rates", type=_floats)
    r.add_argument("--dropout-rates", type=_floats)
    r.add_argument("--noise-scales", type=_floats)
    r.add_argument("--draws", type=int)
    r.add_argument("--population", choices=("high_confidence", "all"), default="high_confidence")
    r.add_argument(
        "--model-params",
        type=json.loads,
        default={},
        help='JSON per model, e.g. {"random_forest": {"min_samples_leaf": 5}}',
    )
    r.set_defaults(func=run)
    p = sub.add_parser("report", help="tables of docs/reproduction.md from a sweep folder")
    p.add_argument("--out", required=True)
    p.add_argument("--bootstrap", type=int, default=2000)
    p.set_defaults(func=report)
    c = sub.add_parser("compare", help="controlled re-runs against the same units of the main sweep")
    c.add_argument("--base", required=True)
    c.add_argument("--variants", required=True, nargs="+")
    c.add_argument("--out", required=True, help="Markdown file to write")
    c.set_defaults(func=compare)
    args = parser.parse_args(argv)
    if args.command == "run" and args.models is None:
        from core.tabular.models import MODEL_NAMES

        args.models = list(MODEL_NAMES)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
