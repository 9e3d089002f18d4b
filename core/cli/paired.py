"""The ``paired`` and ``paired-grid`` commands: identified intervals, policy certificates, screening.

``python -m core paired --records FILE --tau 0.8 --out DIR``
    Paired records (CSV / Parquet, schema in ``docs/DEVELOPING.md``) of any number of cells.
    With a ``split`` column the evaluation rows are analysed and the development rows set the
    policy thresholds. Writes ``intervals.csv`` (every cell × target × level), ``targets.csv``,
    ``five_states.csv``, ``k_identification.csv``, ``variance_ratios.csv``,
    ``summary_widths.csv`` / ``summary_cells.csv`` (grid summary by source), the policy tables
    ``policy_thresholds.csv``, ``policy_costs.csv``, ``policy_differences.csv``,
    ``policy_selection.csv`` (unless ``--no-policies``) and ``manifest.json``.
``... --probes FILE --clean-outputs FILE [--outcome-source SOURCE] [--score U] [--budget 0.1]``
    Also the screening table ``screening_scores.csv`` and the recapture queue
    ``recapture_queue.csv`` (:mod:`core.paired.screening`).
``python -m core paired --clean FILE --perturbed FILE [--counts FILE] --tau 0.8 --out DIR``
    One unpaired cell: intervals up to the level the counts allow (``intervals.csv``).
``python -m core paired-grid --records records.parquet --tau 0.8 --out runs/grid``
    The same intervals and policy certificates for a records table of any size, shard by shard
    (:func:`core.scale.paired_grid.paired_grid`: bounded memory, resumable, optional Dask).

Everything is validated before anything is written; output goes to a temporary folder beside
``--out`` that is renamed into place at the end. Bad input exits with code 2 and one line on
stderr naming the file, row and column (see :mod:`core.cli`).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

from core.atomic import atomic_folder, check_output_folder
from core.cli.options import (
    add_execution_options,
    add_tau_levels_options,
    check_run_folder,
    cluster_from_args,
    float_list,
    fraction,
    positive_int,
    seed_int,
    unit_float,
)
from core.constants import CLEAN_COVERAGE, COVERAGES
from core.csv_safe import write_csv
from core.validation import check_input_file

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``paired`` and ``paired-grid`` commands to ``python -m core``."""
    p = subparsers.add_parser(
        "paired",
        help="paired evaluations: identified intervals, policy certificates, screening queue",
        description=(
            "Identified intervals of H, L and dM_k at I0/Ik/I5 for every model x condition x source cell, "
            "rejection-policy certificates and (with per-probe outputs) the recapture queue. Output goes to "
            "--out (written to a temporary folder first, renamed into place when complete)."
        ),
    )
    src = p.add_argument_group("input (paired records, or one unpaired cell)")
    src.add_argument("--records", metavar="FILE", help="paired records, CSV or Parquet")
    src.add_argument(
        "--clean", metavar="FILE", help="unpaired: clean table (record_id,true_label,pred,max_prob,true_prob)"
    )
    src.add_argument("--perturbed", metavar="FILE", help="unpaired: perturbed table (same columns)")
    src.add_argument("--counts", metavar="FILE", help="unpaired: per-class counts true_label,k or true_label,h,r,s,w,k")
    add_tau_levels_options(
        p,
        tau_help="acceptance threshold on max probability, both sides (accepted when S >= tau); a "
        "coverage such as the dashboard's '80%% of clean dev. accepted' is not tau, it derives one",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out folder")
    pol = p.add_argument_group("policies (paired records only)")
    pol.add_argument("--no-policies", action="store_true", help="skip the rejection-policy comparison")
    pol.add_argument(
        "--coverages",
        type=float_list,
        default=COVERAGES,
        help="clean-development coverages of the perturbed-side policies",
    )
    pol.add_argument(
        "--clean-coverage", type=unit_float, default=CLEAN_COVERAGE, help="coverage of the fixed clean threshold"
    )
    pol.add_argument("--lambdas", type=float_list, default=None, help="cost weights (default 0,0.1,...,1)")
    pol.add_argument(
        "--seed", type=seed_int, default=0, help="seed of the Monte Carlo I5 feasible mean (large classes)"
    )
    scr = p.add_argument_group("screening (optional)")
    scr.add_argument(
        "--probes",
        metavar="FILE",
        nargs="+",
        help="per-probe outputs (model,record_id,probe,kind,...); several files are concatenated "
        "(e.g. probes.parquet natural.parquet of `python -m core probe`)",
    )
    scr.add_argument("--clean-outputs", metavar="FILE", help="clean outputs per model and image, for screening")
    scr.add_argument(
        "--outcome-source",
        metavar="SOURCE",
        help="source of --records whose conditions are the real outcomes (fits g(S,U), fills the queue)",
    )
    scr.add_argument("--score", default="U", help="screening score ranking the recapture queue (default U)")
    scr.add_argument("--budget", type=fraction, default=0.1, help="share of images to re-test (default 0.1)")
    p.set_defaults(func=run)
    _register_grid(subparsers)


def _register_grid(subparsers) -> None:
    g = subparsers.add_parser(
        "paired-grid",
        help="identified intervals and policy certificates of every paired cell, partitioned (resumable, optional Dask)",
        description=(
            "The paired identification grid (I0/Ik/I5 intervals of H, L, dM_k) and the policy report "
            "(costs, shared-correspondence certificates D+, selections) of every model x condition x "
            "source cell of a Parquet records table, shard by shard. Output: OUT/intervals/, "
            "OUT/policy_costs/, OUT/policy_differences/, OUT/policy_selection/ (partitioned Parquet), "
            "OUT/_manifest.json, OUT/_summary.json. Rerun the same command to resume."
        ),
    )
    g.add_argument("--records", required=True, help="paired records: a Parquet file or folder of files")
    g.add_argument("--out", required=True, help="output folder (new, or an earlier run to resume)")
    add_tau_levels_options(g, tau_help="acceptance threshold of the intervals, in [0, 1]")
    g.add_argument(
        "--coverages", type=float_list, help=f"policy coverages (default {','.join(f'{c:g}' for c in COVERAGES)})"
    )
    g.add_argument("--clean-coverage", type=unit_float, default=CLEAN_COVERAGE)
    g.add_argument("--lambdas", type=float_list, help="cost weights (default 0,0.1,...,1)")
    g.add_argument("--seed", type=seed_int, default=0, help="seed of the I5 feasible-mean estimate (default 0)")
    g.add_argument("--cells-per-task", type=positive_int, default=16, help="cells per shard (default 16)")
    add_execution_options(g)
    g.set_defaults(func=_paired_grid)


def _check_args(args) -> None:
    unpaired = [args.clean, args.perturbed, args.counts]
    if args.records and any(unpaired):
        raise ValueError("give either --records or --clean/--perturbed[/--counts], not both.")
    if not args.records and not (args.clean and args.perturbed):
        raise ValueError("give --records FILE, or --clean FILE and --perturbed FILE for an unpaired cell.")
    if args.clean is None and args.counts:
        raise ValueError("--counts needs --clean and --perturbed.")
    if bool(args.probes) != bool(args.clean_outputs):
        raise ValueError("screening needs both --probes and --clean-outputs.")
    if args.probes and not args.records:
        raise ValueError("screening (--probes) needs paired --records.")
    for flag, path in (
        ("--records", args.records),
        ("--clean", args.clean),
        ("--perturbed", args.perturbed),
        ("--counts", args.counts),
        ("--clean-outputs", args.clean_outputs),
        *(("--probes", f) for f in args.probes or ()),
    ):
        if path is not None:
            check_input_file(path, what=flag)
    check_output_folder(args.out, force=args.force)


def run(args) -> int:
    """Execute ``python -m core paired``; returns the exit code."""
    _check_args(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables, manifest = _paired(args) if args.records else _unpaired(args)
    notes = sorted({str(w.message) for w in caught})
    from core.formats import PAIRED_OUTPUT

    manifest = {"format": PAIRED_OUTPUT.tag, **manifest, "warnings": notes}
    out = Path(args.out)
    with atomic_folder(out) as tmp:
        for name, frame in tables.items():
            write_csv(frame, tmp / f"{name}.csv", index=False)
        manifest["files"] = sorted(f"{name}.csv" for name in tables) + ["manifest.json"]
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(_summary_text(tables, manifest))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _paired(args):
    from core.paired.bounds import accuracy_only_k, identified_intervals_grid
    from core.paired.policies import LAMBDAS, evaluate_policies
    from core.paired.records import load_records
    from core.paired.states import five_state_counts, paired_targets, variance_ratios
    from core.paired.summary import grid_summary

    records = load_records(args.records)
    has_split = "split" in records.columns and (records["split"] == "eval").any()
    evaluation = records[records["split"] == "eval"] if has_split else records
    intervals = identified_intervals_grid(evaluation, args.tau, levels=args.levels)
    summary = grid_summary(intervals)
    tables = {
        "intervals": intervals,
        "targets": paired_targets(evaluation, args.tau),
        "five_states": five_state_counts(evaluation, args.tau),
        "k_identification": accuracy_only_k(evaluation),
        "variance_ratios": variance_ratios(evaluation),
        "summary_widths": summary.widths,
        "summary_cells": summary.cells,
    }
    manifest = {
        "command": "paired",
        "records": str(args.records),
        "tau": args.tau,
        "levels": list(args.levels),
        "n_rows": len(records),
        "rows_analysed": "split == 'eval'" if has_split else "all",
        "n_cells": int(intervals[["model", "condition", "source"]].drop_duplicates().shape[0]),
    }
    if not args.no_policies:
        report = evaluate_policies(
            records,
            coverages=args.coverages,
            clean_coverage=args.clean_coverage,
            lambdas=args.lambdas or LAMBDAS,
            levels=args.levels,
            seed=args.seed,
        )
        tables.update(
            policy_thresholds=report.thresholds,
            policy_costs=report.costs,
            policy_differences=report.differences,
            policy_selection=report.selection,
        )
        manifest["policies"] = {
            "coverages": list(args.coverages),
            "clean_coverage": args.clean_coverage,
            "lambdas": list(args.lambdas or LAMBDAS),
            "seed": args.seed,
            "threshold_scope": sorted(set(report.thresholds["scope"])),
        }
    if args.probes:
        tables.update(_screening(args, records))
        manifest["screening"] = {
            "probes": [str(f) for f in args.probes],
            "clean_outputs": str(args.clean_outputs),
            "outcome_source": args.outcome_source,
            "score": args.score,
            "budget": args.budget,
        }
    return tables, manifest


def _screening(args, records):
    from core.validation import read_table

    try:
        from core.paired.screening import recapture_queue, screening_scores
    except ImportError as exc:  # pragma: no cover - depends on the build
        raise ValueError(f"screening is not available in this build ({exc}).") from None
    import pandas as pd

    from core.formats import PROBE_OUTPUTS, check_table_file

    for f in (*args.probes, args.clean_outputs):  # the files of `probe` carry their version
        check_table_file(f, PROBE_OUTPUTS, where=str(f))
    probes = pd.concat([read_table(f).frame for f in args.probes], ignore_index=True)
    clean = read_table(args.clean_outputs).frame
    from core.views.screening import failure_source

    outcomes = None
    kind = failure_source(args.outcome_source) if args.outcome_source is not None else None
    if kind is not None and not kind.usable:
        raise ValueError(
            f"--outcome-source {args.outcome_source!r}: {kind.reason} Give the source of real re-captures "
            "(e.g. 'recapture', written by `probe --perturbed`)."
        )
    if args.outcome_source is not None:
        outcomes = records[records["source"] == args.outcome_source]
        if outcomes.empty:
            raise ValueError(
                f"--outcome-source {args.outcome_source!r} matches no record; sources are "
                f"{sorted(records['source'].unique())}."
            )
    scores = screening_scores(probes, clean, outcomes=outcomes)
    queue = recapture_queue(scores, score=args.score, budget=args.budget, outcomes=outcomes)
    return {"screening_scores": scores, "recapture_queue": queue}


def _unpaired(args):
    from core.paired.bounds import unpaired_intervals
    from core.paired.records import load_unpaired

    unpaired = load_unpaired(args.clean, args.perturbed, args.counts)
    intervals = unpaired_intervals(unpaired, args.tau)
    intervals = intervals[intervals["level"].isin(args.levels)].reset_index(drop=True)
    manifest = {
        "command": "paired",
        "clean": str(args.clean),
        "perturbed": str(args.perturbed),
        "counts": None if args.counts is None else str(args.counts),
        "tau": args.tau,
        "level_available": unpaired.level,
        "levels": sorted(set(intervals["level"])),
        "n_records": len(unpaired.clean),
    }
    return {"intervals": intervals}, manifest


def _summary_text(tables, manifest) -> str:
    intervals = tables["intervals"]
    widths = (
        intervals.assign(width=intervals["high"] - intervals["low"])
        .groupby(["target", "level"], sort=False)["width"]
        .mean()
        .unstack("level")
    )
    head = f"{manifest.get('n_cells', 1)} cell(s), τ = {manifest['tau']:g}; mean interval width:"
    return head + "\n" + widths.to_string(float_format=lambda v: f"{v:.4f}")


def _paired_grid(args) -> int:
    from core.paired.policies import LAMBDAS
    from core.scale.paired_grid import paired_grid  # the CLI layer may import the scale layer

    cluster = cluster_from_args(args)
    check_input_file(args.records, what="--records", allow_folder=True)
    check_run_folder(args.out)
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(desc="paired grid", unit="record", unit_scale=True, file=sys.stderr)
    try:
        with cluster as client:
            run = paired_grid(
                args.records,
                args.out,
                tau=args.tau,
                levels=args.levels,
                coverages=args.coverages if args.coverages is not None else COVERAGES,
                clean_coverage=args.clean_coverage,
                lambdas=args.lambdas if args.lambdas is not None else LAMBDAS,
                seed=args.seed,
                cells_per_task=args.cells_per_task,
                engine=args.engine,
                client=client,
                progress=(lambda info: bar.update(info.rows)) if bar is not None else None,
            )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted; finished shards are kept in {args.out}. Run the same command to resume.", file=sys.stderr
        )
        return 130
    finally:
        if bar is not None:
            bar.close()
    r = run.result
    print(
        f"{run.summary['n_cells']} cells, {r.n_rows} records in {r.n_partitions} shards "
        f"({r.computed} computed now, {r.reused} reused) -> {r.out}"
    )
    print(json.dumps(run.summary["policy_pairs_at_lambda_0.5"], indent=1))
    return 0
