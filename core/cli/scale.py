"""Commands for large tabular audits: ``certify`` (streaming / Dask, resumable) and ``synth``.

``python -m core certify --data big.parquet --target Status --out runs/big``
    Fits preprocessing + model on the first ``--fit-rows`` rows, then certifies every row in
    partitions of ``--chunk-rows`` rows, writing ``runs/big/part-*.parquet``, ``_manifest.json``
    and ``_summary.json``. Rerunning the same command after an interruption resumes it.
``python -m core certify --audit runs/audit --data big.parquet --out runs/big``
    Certifies with the model, preprocessing and protocol of an earlier audit (or certify run)
    folder instead of fitting (``--model-from``, its old name, works for one release).
``python -m core certify ... --engine dask --workers 4``   (local Dask cluster)
``python -m core certify ... --engine dask --scheduler tcp://host:8786``   (existing cluster)
``python -m core synth --rows 1000000 --out big.parquet``
    A seeded synthetic table resembling a bundled dataset (default credit_data).

``paired-grid``, the resumable run of the paired grid, is a command of :mod:`core.cli.paired`.
"""

from __future__ import annotations

import json
import sys

from core.atomic import check_output_file
from core.cli.options import (
    add_execution_options,
    add_protocol_options,
    add_renamed_option,
    add_threads_option,
    check_run_folder,
    cluster_from_args,
    names,
    positive_int,
    protocol_from_args,
    seed_int,
    spelled,
)
from core.validation import check_input_file

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``certify`` and ``synth`` commands to ``python -m core``."""
    from core.scale.certify import DEFAULT_CHUNK_ROWS

    p = subparsers.add_parser(
        "certify",
        help="certify a large table in partitions (bounded memory, resumable, optional Dask)",
        description=(
            "Certify every row of a Parquet/CSV table, partition by partition. Memory is bounded by "
            "--chunk-rows, not by the table. Output: OUT/part-NNNNN.parquet (one per partition), "
            "OUT/_manifest.json, OUT/_summary.json, OUT/_task.zip. An interrupted run resumes when the "
            "same command is run again; other settings on the same OUT are refused."
        ),
    )
    p.add_argument("--data", required=True, help="Parquet file, directory of Parquet files, or CSV file")
    p.add_argument("--out", required=True, help="output folder (new, or an earlier run to resume)")
    model = p.add_argument_group("model (fit here, or load an earlier run's task)")
    model.add_argument("--target", help="label column (required unless --audit)")
    model.add_argument("--model", default="hist_gb", help="registry name of the model to fit (default hist_gb)")
    model.add_argument(
        "--fit-rows",
        type=positive_int,
        default=20_000,
        help="fit preprocessing and model on the first N rows (default 20000)",
    )
    model.add_argument("--seed", type=seed_int, default=0, help="model seed (default 0)")
    model.add_argument(
        "--audit",
        metavar="DIR",
        help="an earlier audit folder (or certify run, or its _task.zip): certify with its model; skips fitting",
    )
    add_renamed_option(model, "--model-from", new="--audit", dest="audit")
    model.add_argument(
        "--trust",
        type=names,
        default=[],
        metavar="TYPE[,TYPE...]",
        help="skops types outside the trusted set that the saved model may contain",
    )
    model.add_argument("--id-column", help="column copied to the output, not used as a feature")
    proto = p.add_argument_group("protocol (not with --audit, which carries its own)")
    add_protocol_options(proto)
    proto.add_argument("--blocks", metavar="FILE", help="domain blocks (YAML/JSON) for --grouping domain_block")
    run = p.add_argument_group("execution")
    run.add_argument(
        "--chunk-rows",
        type=positive_int,
        default=DEFAULT_CHUNK_ROWS,
        help=f"rows per partition (default {DEFAULT_CHUNK_ROWS}); bounds memory",
    )
    run.add_argument(
        "--batch-size",
        type=positive_int,
        default=65_536,
        help="rows per predict_proba call when fitting here (memory only)",
    )
    add_execution_options(run)
    add_threads_option(run)
    p.set_defaults(func=_certify)

    s = subparsers.add_parser(
        "synth",
        help="write a large seeded synthetic table resembling a bundled dataset",
        description=(
            "Smoothed class-conditional bootstrap of a bundled dataset (see core.scale.synthetic): "
            "the same --seed always gives the same rows, and a smaller --rows is a prefix of a larger one."
        ),
    )
    s.add_argument("--out", required=True, help="output .parquet or .csv file")
    s.add_argument("--rows", type=positive_int, required=True)
    s.add_argument("--dataset", default="credit_data", help="bundled dataset to imitate (default credit_data)")
    s.add_argument("--seed", type=seed_int, default=0)
    s.add_argument("--row-group-rows", type=positive_int, default=65_536)
    s.set_defaults(func=_synth)


def _certify(args) -> int:
    from core.scale.certify import FitSpec, certify_dataset, load_certify_task

    cluster = cluster_from_args(args)
    check_input_file(args.data, what="--data", allow_folder=True)
    check_run_folder(args.out)
    if args.audit:
        audit_flag = spelled(args, "audit", "--audit")
        fitting = [
            flag
            for flag, given in (
                ("--protocol", args.protocol),
                ("--blocks", args.blocks),
                ("--depth", args.depth),
                ("--severities", args.severities),
                ("--weights", args.weights),
                ("--grouping", args.grouping != "raw_origin"),
                ("--baseline", args.baseline != "mean"),
                ("--path", args.path != "static"),
                ("--merge-threshold", args.merge_threshold != 0.7),
                ("--id-column", args.id_column),
            )
            if given
        ]
        if fitting:
            raise ValueError(
                f"{', '.join(fitting)} cannot be combined with {audit_flag}: the saved task "
                "carries its own protocol and columns."
            )
        model = load_certify_task(args.audit, trusted=args.trust)
        if args.target and args.target != model.target:
            raise ValueError(f"--target {args.target!r} differs from the saved task's target {model.target!r}.")
    else:
        if not args.target:
            raise ValueError("--target is required unless --audit is given (an earlier audit whose model is reused).")
        blocks = None
        if args.blocks:
            from core.tabular.datasets import load_blocks

            blocks = load_blocks(args.blocks)
        model = FitSpec(
            target=args.target,
            model=args.model,
            fit_rows=args.fit_rows,
            seed=args.seed,
            protocol=protocol_from_args(args),
            id_column=args.id_column,
            blocks=blocks,
        )

    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(desc="certify", unit="row", unit_scale=True, file=sys.stderr)

    def progress(info, rows_done: int, rows_total: int | None) -> None:
        if bar is None:
            return
        if info is None:
            bar.reset(total=rows_total)
            bar.initial = rows_done  # reused rows count as done, not towards the rate
        bar.n = rows_done
        bar.refresh()

    try:
        with cluster as client:
            run = certify_dataset(
                args.data,
                args.out,
                model,
                chunk_rows=args.chunk_rows,
                engine=args.engine,
                client=client,
                batch_size=args.batch_size,
                threads=args.threads,
                progress=progress,
            )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted; finished partitions are kept in {args.out}. Run the same command to resume.",
            file=sys.stderr,
        )
        return 130
    finally:
        if bar is not None:
            bar.close()
    r, s = run.result, run.summary
    print(
        f"certified {r.n_rows} rows in {r.n_partitions} partitions "
        f"({r.computed} computed now, {r.reused} reused) -> {r.out}"
    )
    print(f"fingerprint {run.fingerprint}")
    print(
        json.dumps(
            {
                k: s[k]
                for k in (
                    "n_held_out",
                    "accuracy",
                    "mean_fds",
                    "share_flip_budget_le_2",
                    "share_high_confidence",
                    "high_confidence_brittle",
                )
            },
            indent=1,
        )
    )
    return 0


def _synth(args) -> int:
    from core.scale.synthetic import fit_synthetic, write_synthetic
    from core.tabular.datasets import load_dataset

    out = check_output_file(args.out, flag="--out")
    fmt = {".parquet": "parquet", ".csv": "csv"}.get(out.suffix.lower())
    if fmt is None:
        raise ValueError(f"--out must end in .parquet or .csv; got {args.out!r}.")
    table = fit_synthetic(load_dataset(args.dataset))
    write_synthetic(table, out, args.rows, seed=args.seed, format=fmt, row_group_rows=args.row_group_rows)
    print(f"wrote {args.rows} rows resembling {args.dataset} (seed {args.seed}) to {out}")
    return 0
