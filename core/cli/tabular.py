"""The ``audit`` command: headless and batch fragility audits.

``python -m core audit --dataset credit_data --model hist_gb --seed 0 --out results/``
    One audit. Writes ``certificates.parquet`` / ``.csv``, ``evaluation.json`` (one entry per
    score), ``protocol.json`` (with fingerprints) and ``summary.md`` into ``results/``.
``python -m core audit --data loans.csv --target Status [--blocks blocks.yaml] --out results/``
    The same on a user table.
``python -m core audit --model-file model.skops --train train.csv --test test.csv --target y --out results/``
    Audit your own fitted model (``.skops``, or ``.onnx`` run with onnxruntime); nothing is
    refitted. ``--trust TYPE[,TYPE...]`` names skops types outside skops' trusted set (a type
    that is never trusted, :mod:`core.tabular.never_trusted`, is refused with exit code 2
    whatever ``--trust`` says), ``--feature-order FILE`` the column order of a single 2-D ONNX
    input.
``python -m core audit --model-uri models:/credit@champion --train train.csv --test test.csv --target y --out results/``
    The same for a model of an MLflow registry or run (``models:/NAME/VERSION``,
    ``models:/NAME@ALIAS``, ``runs:/RUN_ID/PATH``; ``--mlflow-tracking-uri`` or
    ``$MLFLOW_TRACKING_URI``): the ONNX flavour, or scikit-learn logged with skops; a pickle
    model is refused unread (:mod:`core.tabular.mlflow_models`, docs/mlflow.md).
``... --mlflow-experiment NAME``
    Also log a single audit to MLflow: one run with its figures, protocol, folder and HTML
    report (:mod:`core.mlflow_log`).
``python -m core audit --datasets credit_data,wa_churn --models logreg,hist_gb --seeds 0,1,2 --out results/``
    A sweep: one sub-folder ``<dataset>/<model>/seed<k>/`` per unit plus ``sweep_table.csv`` /
    ``.md`` (per-model nominal metrics beside mean RCMA, FDS AUROC and Capture@20),
    ``sweep_units.csv``, ``sweep_runs.csv`` and ``sweep_bootstrap.csv``; the table is printed.

Output is written to a temporary folder beside ``--out`` and renamed into place at the end,
so a failed run leaves nothing half-written. Bad input exits with code 2 and one line on
stderr (see :mod:`core.cli`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.atomic import atomic_folder, check_output_folder
from core.cli.options import (
    add_mlflow_options,
    add_protocol_options,
    argument_type,
    float_list,
    names,
    positive_int,
    protocol_from_args,
)
from core.validation import check_seed

__all__ = ["register"]


_seeds = argument_type(
    lambda text: [int(v) for v in names(text)],
    lambda seeds: bool(seeds) and all(_is_seed(v) for v in seeds),
    expected="comma-separated non-negative integers",
    number_list=True,  # "-1,2" reaches this check instead of reading as an option
)


def _is_seed(value: int) -> bool:
    try:
        check_seed(value)
    except ValueError:
        return False
    return True


def register(subparsers) -> None:
    """Add the ``audit`` command to ``python -m core``."""
    from core.cfc.stressors import LabelChannel
    from core.tabular.datasets import DATASET_NAMES
    from core.tabular.models import MODEL_NAMES

    p = subparsers.add_parser(
        "audit",
        help="fragility audit of tabular models: certificates, held-out evaluation, calibration",
        description=(
            "Audit one model on one dataset, or sweep datasets x models x seeds. Output goes to --out "
            "(written to a temporary folder first, renamed into place when complete)."
        ),
    )
    data = p.add_argument_group("data")
    data.add_argument(
        "--dataset",
        "--datasets",
        dest="datasets",
        type=names,
        help=f"bundled dataset(s), comma-separated: {', '.join(DATASET_NAMES)}",
    )
    data.add_argument("--data", metavar="FILE", help="a CSV or Parquet table instead of a bundled dataset")
    data.add_argument("--target", help="label column of --data")
    data.add_argument("--blocks", metavar="FILE", help="domain blocks (YAML/JSON: raw column -> block)")
    data.add_argument("--max-rows", type=positive_int, help="stratified subsample before splitting")
    data.add_argument(
        "--split",
        choices=("stratified", "official"),
        default="stratified",
        help="train/test split: stratified (default) or the source's own test part (adult)",
    )
    own = p.add_argument_group("your own fitted model (instead of --dataset/--data and --model)")
    own.add_argument("--model-file", metavar="MODEL", help="a .skops or .onnx file of a fitted classifier")
    own.add_argument(
        "--model-uri",
        metavar="URI",
        help="instead of --model-file: an MLflow model, models:/NAME/VERSION, models:/NAME@ALIAS or "
        "runs:/RUN_ID/PATH (ONNX flavour, or scikit-learn logged with skops; pickles are refused)",
    )
    own.add_argument("--train", metavar="TRAIN", help="CSV/Parquet training rows (baseline, noise scales)")
    own.add_argument("--test", metavar="TEST", help="CSV/Parquet rows to certify")
    own.add_argument(
        "--trust",
        type=names,
        default=[],
        metavar="TYPE[,TYPE...]",
        help="skops types outside skops' trusted set that may be loaded (the error lists them); "
        "types that reach the system (os.system, eval, subprocess, pickle, ...) are never trusted",
    )
    own.add_argument(
        "--feature-order", metavar="FILE", help="raw column of each column of a single 2-D ONNX input (one name a line)"
    )
    model = p.add_argument_group("models and seeds")
    model.add_argument(
        "--model",
        "--models",
        dest="models",
        type=names,
        default=["hist_gb"],
        help=f"model(s), comma-separated: {', '.join(MODEL_NAMES)} (default hist_gb)",
    )
    model.add_argument(
        "--seed", "--seeds", dest="seeds", type=_seeds, default=[0], help="seed(s), comma-separated (default 0)"
    )
    proto = p.add_argument_group("protocol")
    add_protocol_options(proto)
    label = p.add_argument_group("held-out label channel")
    default = LabelChannel()
    label.add_argument("--tau-p", type=float, help=f"high-confidence threshold (default {default.tau_p:.2f})")
    label.add_argument("--tau-kappa", type=float, help=f"margin-collapse threshold (default {default.tau_kappa:.2f})")
    label.add_argument("--draws", type=positive_int, help="draws per stressor and severity (default 3)")
    label.add_argument("--masking-rates", type=float_list, help="group-masking probabilities (default 0.1,0.2)")
    label.add_argument("--dropout-rates", type=float_list, help="coordinate-dropout probabilities (default 0.1,0.2)")
    label.add_argument(
        "--noise-scales", type=float_list, help="bounded-noise half-widths in training stds (default 0.1,0.25)"
    )
    label.add_argument(
        "--population",
        choices=("high_confidence", "all"),
        default="high_confidence",
        help="test rows the scores are evaluated on (default: p̂ ≥ tau-p)",
    )
    extra = p.add_argument_group("opt-in extras (slower)")
    extra.add_argument(
        "--search",
        choices=("none", "exact", "beam", "both"),
        default="none",
        help="exact / beam flip search diagnostics",
    )
    extra.add_argument("--sensitivity", action="store_true", help="baseline- and grouping-rule sensitivity")
    extra.add_argument(
        "--order-baselines", action="store_true", help="random-order and permutation-importance-order baselines"
    )
    extra.add_argument("--shap", action="store_true", help="group-SHAP concentration (tree / linear models)")
    extra.add_argument("--bootstrap", type=positive_int, default=2000, help="sweep bootstrap resamples")
    out = p.add_argument_group("output")
    out.add_argument("--out", required=True, help="output folder (created; must be new or empty unless --force)")
    out.add_argument("--force", action="store_true", help="replace an existing non-empty --out")
    out.add_argument("--batch-size", type=positive_int, default=65_536, help="rows per model call")
    out.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OpenMP/BLAS threads during the audit (default 1; 0 = the libraries' defaults)",
    )
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_mlflow_options(p.add_argument_group("MLflow (docs/mlflow.md)"))
    p.set_defaults(func=_audit)


def _label_channel(args):
    """The label channel declared by the label-channel options; unset options keep its defaults."""
    from core.cfc.stressors import LabelChannel

    given = {
        "masking_rates": args.masking_rates,
        "dropout_rates": args.dropout_rates,
        "noise_scales": args.noise_scales,
        "n_draws": args.draws,
        "tau_p": args.tau_p,
        "tau_kappa": args.tau_kappa,
    }
    return LabelChannel(**{k: v for k, v in given.items() if v is not None})


def _check_out(out: Path, force: bool) -> None:
    check_output_folder(out, force=force)


def _bar_progress(bar):
    """A ``progress(label, done, total)`` callback driving one tqdm bar."""

    def progress(label: str, done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.set_description(label)  # also refreshes the bar

    return progress


def _audit(args) -> int:
    from core.cfc.evaluation import BOOTSTRAP_COLUMNS
    from core.tabular.audit import AuditOptions, markdown_table, run_audit, run_sweep, summary_markdown, write_audit
    from core.tabular.datasets import DATASET_NAMES, load_blocks, load_user_data
    from core.tabular.models import MODEL_NAMES

    if args.trust:  # a never-trusted type is refused first, whatever else the command line says
        from core.tabular.never_trusted import check_trust_list

        check_trust_list(args.trust, where=args.model_file or args.model_uri or "the model file")
    mlflow = _mlflow_logging(args)
    if args.model_file is not None or args.model_uri is not None:
        return _audit_own(args, mlflow)
    for flag in ("train", "test", "feature_order"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag.replace('_', '-')} applies to --model-file only.")
    if args.trust:
        raise ValueError("--trust applies to --model-file only.")
    if args.mlflow_tracking_uri is not None and mlflow is None:
        raise ValueError("--mlflow-tracking-uri applies to --model-uri and --mlflow-experiment only.")
    # Validate everything cheap before any computation.
    if (args.data is None) == (args.datasets is None):
        raise ValueError("give exactly one of --dataset NAME[,NAME...] or --data FILE.")
    if args.data is not None and not args.target:
        raise ValueError("--target is required with --data (the label column to predict).")
    if args.data is None and args.target:
        raise ValueError("--target only applies to --data; bundled datasets have their own target.")
    if args.datasets is not None:
        unknown = [d for d in args.datasets if d not in DATASET_NAMES]
        if not args.datasets or unknown:
            raise ValueError(
                f"unknown dataset {unknown[0] if unknown else ''!r}; choose from {', '.join(DATASET_NAMES)}."
            )
    unknown = [m for m in args.models if m not in MODEL_NAMES]
    if not args.models or unknown:
        raise ValueError(f"unknown model {unknown[0] if unknown else ''!r}; choose from {', '.join(MODEL_NAMES)}.")
    for flag, values in (("--dataset", args.datasets or []), ("--model", args.models), ("--seed", args.seeds)):
        if len(set(values)) != len(values):
            raise ValueError(f"{flag} repeats an entry: {values}.")
    out = Path(args.out)
    _check_out(out, args.force)
    protocol = protocol_from_args(args)
    channel = _label_channel(args)
    blocks = load_blocks(args.blocks) if args.blocks else None
    options = AuditOptions(
        model=args.models[0],
        seed=args.seeds[0],
        protocol=protocol,
        label_channel=channel,
        blocks=None if args.data is not None else blocks,  # a user table carries its blocks (below)
        max_rows=args.max_rows,
        population=args.population,
        split=args.split,
        search=args.search,
        sensitivity=args.sensitivity,
        order_baselines=args.order_baselines,
        shap=args.shap,
        batch_size=args.batch_size,
        n_threads=args.threads or None,
    )
    datasets = [load_user_data(args.data, args.target, blocks=blocks)] if args.data is not None else args.datasets
    sweep = len(datasets) * len(args.models) * len(args.seeds) > 1
    if sweep and mlflow is not None:
        raise ValueError("--mlflow-experiment logs one audit; run the sweep's audits one at a time to log them.")

    bar = None
    try:
        with atomic_folder(out) as tmp:
            if not args.no_progress:
                from tqdm import tqdm

                bar = tqdm(
                    file=sys.stderr,
                    leave=False,
                    bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}]",
                )
            if sweep:

                def on_result(res) -> None:
                    unit = tmp / res.dataset.name / res.model_name / f"seed{res.seed}"
                    unit.mkdir(parents=True)
                    write_audit(res, unit)

                result = run_sweep(
                    datasets,
                    args.models,
                    args.seeds,
                    n_resamples=args.bootstrap,
                    progress=None if bar is None else _bar_progress(bar),
                    on_result=on_result,
                    options=options,
                )
                table = markdown_table(result.table)
                from core.csv_safe import write_csv  # formula cells neutralised (CSV injection)

                write_csv(result.table, tmp / "sweep_table.csv", index=False)
                (tmp / "sweep_table.md").write_text(table + "\n", encoding="utf-8")
                write_csv(result.units, tmp / "sweep_units.csv", index=False)
                write_csv(result.runs, tmp / "sweep_runs.csv", index=False)
                write_csv(result.bootstrap, tmp / "sweep_bootstrap.csv", index=False)
                message = (
                    table
                    + "\n\n"
                    + markdown_table(
                        # Printed without the difference's interval; sweep_bootstrap.csv has every column.
                        result.bootstrap[[c for c in BOOTSTRAP_COLUMNS if c not in ("diff_ci_low", "diff_ci_high")]]
                    )
                )
            else:
                res = run_audit(datasets[0], options=options, progress=None if bar is None else _bar_progress(bar))
                write_audit(res, tmp)
                message = summary_markdown(res)
    finally:
        if bar is not None:
            bar.close()
    print(message)
    print(f"wrote {out}", file=sys.stderr)
    if mlflow is not None:
        _log_to_mlflow(out, args, mlflow)
    return 0


def _mlflow_logging(args) -> str | None:
    """The tracking URI when ``--mlflow-experiment`` asks to log the audit, its server checked
    now (before the audit runs); None when nothing is logged."""
    if args.mlflow_experiment is None:
        return None
    if not args.mlflow_experiment.strip():
        raise ValueError("--mlflow-experiment needs an experiment name; got ''.")
    from core.mlflow_log import check_tracking_server

    return check_tracking_server(tracking_uri=args.mlflow_tracking_uri)


def _log_to_mlflow(out: Path, args, tracking: str) -> None:
    from core.mlflow_log import log_audit_to_mlflow

    logged = log_audit_to_mlflow(
        out, experiment=args.mlflow_experiment, tracking_uri=tracking, model_uri=args.model_uri
    )
    print(
        f"logged to MLflow at {logged.tracking_uri}: experiment {logged.experiment!r}, run {logged.run_id} "
        f"({logged.n_metrics} metrics, {logged.n_params} params, the audit folder and report.html)",
        file=sys.stderr,
    )


def _audit_own(args, mlflow: str | None) -> int:
    """``audit --model-file`` / ``--model-uri``: load the model safely, audit it, publish the folder atomically."""
    from core.tabular.audit import summary_markdown, write_audit
    from core.tabular.model_files import load_model_file, read_feature_order
    from core.tabular.own_model import audit_model
    from core.validation import read_table

    flag = "--model-file" if args.model_file is not None else "--model-uri"
    if args.model_file is not None and args.model_uri is not None:
        raise ValueError("give one of --model-file FILE or --model-uri URI, not both.")
    if args.datasets is not None or args.data is not None:
        raise ValueError(f"{flag} replaces --dataset/--data: give --train and --test instead.")
    if args.models != ["hist_gb"] or args.seeds != [0]:
        raise ValueError(f"--model and --seed do not apply to {flag} (the model is already fitted).")
    for required in ("train", "test", "target"):
        if not getattr(args, required):
            raise ValueError(f"--{required} is required with {flag}.")
    if args.model_uri is not None:
        from core.tabular.mlflow_models import parse_model_uri, require_mlflow, tracking_uri_of

        # A malformed URI, no tracking server or no MLflow is said before any file is read.
        parse_model_uri(args.model_uri)
        tracking = mlflow or tracking_uri_of(args.mlflow_tracking_uri)
        require_mlflow("--model-uri (models from MLflow)")
    unsupported = [
        f
        for f, on in (
            ("--search", args.search != "none"),
            ("--sensitivity", args.sensitivity),
            ("--order-baselines", args.order_baselines),
            ("--shap", args.shap),
            ("--max-rows", args.max_rows is not None),
            ("--blocks", False),
        )
        if on
    ]
    if unsupported:
        raise ValueError(f"{', '.join(unsupported)} not available with {flag}.")
    out = Path(args.out)
    _check_out(out, args.force)
    protocol = protocol_from_args(args)
    channel = _label_channel(args)
    blocks = None
    if args.blocks:
        from core.tabular.datasets import load_blocks

        blocks = load_blocks(args.blocks)
    train, test = read_table(args.train).frame, read_table(args.test).frame
    if args.target not in train.columns:
        raise ValueError(
            f"--target {args.target!r} is not a column of {args.train}; columns: {list(train.columns)[:20]}."
        )
    order = read_feature_order(args.feature_order) if args.feature_order else None
    labels = sorted(pd_unique(train[args.target]))
    if args.model_uri is not None:
        from core.tabular.mlflow_models import load_mlflow_model

        model = load_mlflow_model(
            args.model_uri, tracking_uri=tracking, trust=args.trust, feature_order=order, default_classes=labels
        )
        name = args.model_uri
    else:
        model = load_model_file(args.model_file, trust=args.trust, feature_order=order, default_classes=labels)
        name = Path(args.model_file).name
    result = audit_model(
        model,
        train,
        test,
        target=args.target,
        protocol=protocol,
        label_channel=channel,
        blocks=blocks,
        population=args.population,
        batch_size=args.batch_size,
        name=name,
    )
    with atomic_folder(out) as tmp:
        write_audit(result, tmp)
    print(summary_markdown(result))
    print(f"wrote {out}", file=sys.stderr)
    if mlflow is not None:
        _log_to_mlflow(out, args, mlflow)
    return 0


def pd_unique(series) -> list:
    """Distinct non-missing values as plain Python scalars."""
    import numpy as np

    return [v.item() if isinstance(v, np.generic) else v for v in series.dropna().unique()]
