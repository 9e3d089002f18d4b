"""Credit-G by repeated stratified cross-validation, and a sweep of the label channel's strength
(docs/reproduction.md, "Credit-G on all 1,000 rows").

    python scripts/reproduce_credit_g_cv.py run --out results/credit_g_cv        # resumable
    python scripts/reproduce_credit_g_cv.py report --out results/credit_g_cv     # -> OUT/tables.md

The main sweep audits Credit-G on one 60 / 20 / 20 split per seed: 200 test rows, of which 5–135
are high-confidence, so one unit's AUROC is noisy. Here every row is a test row once per
repetition: ``--repeats`` × ``--folds`` stratified folds (scikit-learn's
``RepeatedStratifiedKFold``, seeded by ``--seed``), the preprocessing, groups, baseline and model
fitted on the other folds only, the default protocol (SPEC A.1–A.3) on the held-out fold.

The label channel is run once per fold with the union of the severities of every strength in
:data:`STRENGTHS` (``H`` draws each); a strength's brittle label is then
``1[p̂ ≥ τ_p] ∧ (some draw of one of its settings flipped or collapsed the margin)``, read from
the per-setting hits of that one run (:attr:`core.cfc.stressors.BrittleLabels.hits`). So the
strengths differ only in the label, never in the certificate, which does not see the channel;
from "mild" up they are nested (each one's settings include the weaker one's, so its brittle
rows too), while "very mild" has smaller severities of its own.

``run`` writes one Parquet file per (model, repetition, fold) under ``OUT/units``: one row per
held-out sample with ``p̂``, the risk scores and one ``hit__<stressor>__<severity>`` column per
setting; ``report`` evaluates every strength on the high-confidence rows, pooled over the folds
of a repetition (each row once), and writes ``OUT/tables.md``.
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

#: Label-channel strengths, weakest first: (masking = dropout rates ρ, noise scales σ). "main" is
#: ``LabelChannel()``'s grid; "mild" and "harsh" are the controlled re-runs' grids
#: (docs/reproduction/controlled.md), here with the same H as the others.
STRENGTHS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "very mild": ((0.05,), (0.05,)),
    "mild": ((0.1,), (0.1,)),
    "main": ((0.1, 0.2), (0.1, 0.25)),
    "harsh": ((0.1, 0.2, 0.3), (0.1, 0.25, 0.5)),
    "very harsh": ((0.1, 0.2, 0.3, 0.4, 0.5), (0.1, 0.25, 0.5, 1.0)),
}
MODELS = (
    "logreg",
    "random_forest",
    "extra_trees",
    "hist_gb",
    "xgboost",
    "lightgbm",
    "catboost",
    "mlp",
    "resmlp",
    "fr_resmlp",
)
SCORES = ("fds", "rcma", "inv_flip_budget", "one_step", "neg_energy")
SCORE_LABELS = {
    "fds": "FDS",
    "rcma": "RCMA",
    "inv_flip_budget": "1/k*",
    "one_step": "one-step",
    "neg_energy": "neg-energy",
}
#: The lowest per-dataset FDS AUROC the paper reports (docs/reproduction.md, "Side by side").
PAPER_LOW = 0.831


def union_channel(n_draws: int):
    from core.cfc.stressors import LabelChannel

    rates = tuple(sorted({r for rho, _ in STRENGTHS.values() for r in rho}))
    scales = tuple(sorted({s for _, sigma in STRENGTHS.values() for s in sigma}))
    return LabelChannel(masking_rates=rates, dropout_rates=rates, noise_scales=scales, n_draws=n_draws)


def hit_column(stressor: str, level: float) -> str:
    return f"hit__{stressor}__{level:g}"


def strength_columns(name: str) -> list[str]:
    rho, sigma = STRENGTHS[name]
    return [
        *(hit_column(s, r) for s in ("group_masking", "within_group_dropout") for r in rho),
        *(hit_column("bounded_noise", v) for v in sigma),
    ]


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------
def audit_fold(dataset, train_index, test_index, *, model: str, seed: int, channel) -> pd.DataFrame:
    """The held-out fold's records: certificate scores, confidence scores, per-setting hits."""
    from core._rng import as_generator
    from core.cfc.baselines import baseline_vector
    from core.cfc.certification import certify
    from core.cfc.evaluation import certificate_scores, confidence_scores
    from core.cfc.grouping import build_groups
    from core.cfc.protocol import Protocol
    from core.cfc.stressors import brittle_labels
    from core.tabular.audit import noise_scale
    from core.tabular.models import make_model
    from core.tabular.preprocessing import fit_preprocessor

    protocol = Protocol()
    frame = dataset.frame
    train, test = frame.iloc[train_index], frame.iloc[test_index]
    pre = fit_preprocessor(train, dataset.numeric, dataset.categorical)
    X_train, X_test = pre.transform(train), pre.transform(test)
    y_train, y_test = dataset.y[train_index], dataset.y[test_index]
    groups = build_groups(protocol.grouping, pre.transformer, X_train, threshold=protocol.merge_threshold)
    baseline = baseline_vector(X_train, groups, protocol.baseline)
    # FR-ResMLP trains with the groups and baseline it is certified under (as run_audit does).
    params = {"groups": groups, "baseline": baseline} if model == "fr_resmlp" else {}
    estimator = make_model(model, seed=seed, **params)
    estimator.fit(X_train, y_train)
    predict = estimator.predict_proba
    cert = certify(predict, pd.DataFrame(X_test, index=test.index), groups, baseline, protocol)
    labels = brittle_labels(
        predict,
        X_test,
        groups,
        baseline,
        channel=channel,
        noise_scale=noise_scale(X_train),
        seed=as_generator(seed).spawn(1)[0],
    )
    proba = np.asarray(predict(X_test), dtype=float)
    scores = certificate_scores(cert) | confidence_scores(proba)
    out = pd.DataFrame(
        {
            "row_id": test.index.to_numpy(),
            "y_true": y_test,
            "confidence": labels.confidence,
            "high_confidence": labels.high_confidence,
            **{f"score_{name}": scores[name] for name in SCORES},
        }
    )
    for j, (stressor, level) in enumerate(labels.settings):
        out[hit_column(stressor, level)] = labels.hits[:, j]
    return out


def run(args) -> int:
    from sklearn.model_selection import RepeatedStratifiedKFold

    from core.tabular.datasets import load_dataset

    out = Path(args.out)
    (out / "units").mkdir(parents=True, exist_ok=True)
    channel = union_channel(args.draws)
    config = {
        "dataset": "credit_g",
        "models": list(args.models),
        "folds": args.folds,
        "repeats": args.repeats,
        "seed": args.seed,
        "label_channel": channel.to_dict(),
        "strengths": {k: {"rho": list(r), "sigma": list(s)} for k, (r, s) in STRENGTHS.items()},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    dataset = load_dataset("credit_g")
    cv = RepeatedStratifiedKFold(n_splits=args.folds, n_repeats=args.repeats, random_state=args.seed)
    folds = list(cv.split(np.zeros(len(dataset.y)), dataset.y))
    total = len(args.models) * len(folds)
    done = 0
    for model in args.models:
        for i, (train_index, test_index) in enumerate(folds):
            done += 1
            repeat, fold = divmod(i, args.folds)
            target = out / "units" / f"{model}__r{repeat}__f{fold}.parquet"
            if target.exists():
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                records = audit_fold(dataset, train_index, test_index, model=model, seed=args.seed + i, channel=channel)
            tmp = target.with_suffix(".tmp")
            records.to_parquet(tmp, index=False)
            tmp.rename(target)  # a unit on disk is always complete
            seconds = time.perf_counter() - start
            with open(out / "runs.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"model": model, "repeat": repeat, "fold": fold, "seconds": seconds}) + "\n")
            print(f"[{done}/{total}] {model} r{repeat} f{fold}: {seconds:.1f} s", flush=True)
    return 0


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def load_runs(out: Path, config: dict) -> pd.DataFrame:
    """The units of the configured models and repetitions (a run with more repetitions before
    stored more: the folds of the first ones are the same whatever ``--repeats``)."""
    frames = []
    for path in sorted((out / "units").glob("*.parquet")):
        model, repeat, fold = path.stem.split("__")
        if model not in config["models"] or int(repeat[1:]) >= config["repeats"]:
            continue
        frames.append(pd.read_parquet(path).assign(model=model, repeat=int(repeat[1:]), fold=int(fold[1:])))
    if not frames:
        raise SystemExit(f"no unit files under {out / 'units'}; run first")
    return pd.concat(frames, ignore_index=True)


#: The main strength's settings split by stressor family: which of them makes the label.
FAMILIES = {
    "group masking only": "group_masking",
    "coordinate dropout only": "within_group_dropout",
    "bounded noise only": "bounded_noise",
}


def channels() -> dict[str, list[str]]:
    """Hit columns of every channel evaluated: the strengths, then the main one's families."""
    main = strength_columns("main")
    return {name: strength_columns(name) for name in STRENGTHS} | {
        family: [c for c in main if c.startswith(f"hit__{stressor}__")] for family, stressor in FAMILIES.items()
    }


def brittle(records: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The channel's brittle label of every record (high confidence and one of its settings hit)."""
    return records["high_confidence"].to_numpy() & records[columns].to_numpy().any(axis=1)


def evaluate(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (channel, model, repeat): the high-confidence rows of every fold pooled."""
    from core.cfc.evaluation import auroc, capture_at

    rows = []
    for strength, columns in channels().items():
        labelled = records.assign(brittle=brittle(records, columns))
        for (model, repeat), unit in labelled[labelled["high_confidence"]].groupby(["model", "repeat"], sort=False):
            y = unit["brittle"].to_numpy()
            row = {"strength": strength, "model": model, "repeat": repeat, "n": len(unit), "n_brittle": int(y.sum())}
            defined = 0 < y.sum() < len(y)
            for score in SCORES:
                s = unit[f"score_{score}"].to_numpy()
                row[score] = auroc(s, y) if defined else np.nan
                row[f"capture@20 {score}"] = capture_at(s, y, 0.2) if y.any() else np.nan
                # The mean over folds of the per-fold AUROC: the main sweep's kind of number.
                per_fold = [
                    auroc(f[f"score_{score}"], f["brittle"])
                    for _, f in unit.groupby("fold")
                    if 0 < f["brittle"].sum() < len(f)
                ]
                row[f"fold-mean {score}"] = float(np.mean(per_fold)) if per_fold else np.nan
            rows.append(row)
    ev = pd.DataFrame(rows)
    ev["brittle share"] = ev["n_brittle"] / ev["n"]
    ev["ceiling"] = np.minimum(1.0, 0.2 / ev["brittle share"].where(ev["brittle share"] > 0))
    return ev


def md(frame: pd.DataFrame, digits: int = 3) -> str:
    from core.tabular.audit import markdown_table

    return markdown_table(frame, digits=digits)


def report(args) -> int:
    from core.csv_safe import write_csv

    out = Path(args.out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    records = load_runs(out, config)
    ev = evaluate(records)
    write_csv(ev, out / "evaluation.csv", index=False)
    n_models, n_repeats = ev["model"].nunique(), ev["repeat"].nunique()
    sections = [
        f"# Credit-G, {n_repeats} × {config['folds']}-fold stratified CV, {n_models} models "
        f"(seed {config['seed']}, H = {config['label_channel']['n_draws']})",
        f"Records: {len(records)} held-out predictions ({records['high_confidence'].sum()} high-confidence).",
    ]
    # Per strength: means over models x repeats of the pooled AUROC; the spread is over repeats
    # of the mean over models.
    summary = []
    for strength in STRENGTHS:
        e = ev[ev["strength"] == strength]
        by_repeat = e.groupby("repeat")["fds"].mean()
        fds_model = e.groupby("model")["fds"].mean()
        summary.append(
            {
                "strength": strength,
                "ρ": ", ".join(f"{v:g}" for v in STRENGTHS[strength][0]),
                "σ": ", ".join(f"{v:g}" for v in STRENGTHS[strength][1]),
                "brittle share": e["n_brittle"].sum() / e["n"].sum(),
                **{SCORE_LABELS[s]: e[s].mean() for s in SCORES},
                "FDS, repeat range": f"{by_repeat.min():.3f} – {by_repeat.max():.3f}",
                "FDS fold-mean": e["fold-mean fds"].mean(),
                f"models ≥ {PAPER_LOW}": f"{int((fds_model >= PAPER_LOW).sum())}/{fds_model.notna().sum()}",
                "FDS Capture@20": e["capture@20 fds"].mean(),
                "neg-energy Capture@20": e["capture@20 neg_energy"].mean(),
                "ceiling": e["ceiling"].mean(),
            }
        )
    sections += [
        "## FDS AUROC and Capture@20 per label-channel strength "
        "(pooled over the folds of a repeat; mean over models and repeats)",
        md(pd.DataFrame(summary)),
    ]
    per_model = ev.pivot_table(index="model", columns="strength", values="fds", aggfunc="mean")[list(STRENGTHS)]
    share = ev.pivot_table(index="model", columns="strength", values="brittle share", aggfunc="mean")
    per_model.insert(0, "high-confidence rows per repeat", ev.groupby("model")["n"].mean())
    per_model.insert(1, "brittle share (main)", share["main"])
    sections += ["## FDS AUROC per model and strength (pooled, mean over repeats)", md(per_model.reset_index())]
    share = share[list(STRENGTHS)].reset_index()
    sections += ["## Brittle share per model and strength (high-confidence rows)", md(share)]
    families = []
    for family in ("main", *FAMILIES):
        e = ev[ev["strength"] == family]
        families.append(
            {
                "label channel": family,
                "brittle share": e["n_brittle"].sum() / e["n"].sum(),
                **{SCORE_LABELS[s]: e[s].mean() for s in SCORES},
                f"models ≥ {PAPER_LOW}": int((e.groupby("model")["fds"].mean() >= PAPER_LOW).sum()),
            }
        )
    sections += [
        "## The main channel by stressor family (same draws, one family at a time)",
        md(pd.DataFrame(families)),
    ]
    # What drives the level: the AUROC of every (model, repeat, strength) against its brittle share.
    ok = ev[ev["strength"].isin(list(STRENGTHS))].dropna(subset=["fds"])
    corr = float(np.corrcoef(ok["brittle share"], ok["fds"])[0, 1])
    sections.append(
        f"Correlation of FDS AUROC with the brittle share over the {len(ok)} (model, repeat, strength) "
        f"cells: {corr:+.3f}."
    )
    seconds = pd.read_json(out / "runs.jsonl", lines=True)["seconds"].sum() if (out / "runs.jsonl").exists() else 0
    sections.append(f"Summed fold time: {seconds:.0f} s.")
    text = "\n\n".join(sections) + "\n"
    (out / "tables.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--models", type=lambda t: tuple(t.split(",")), default=MODELS)
    r.add_argument("--folds", type=int, default=5)
    r.add_argument("--repeats", type=int, default=5)
    r.add_argument("--draws", type=int, default=3)
    r.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    raise SystemExit(main())
