"""``python -m core probe``: run a user's ONNX image classifier on clean, corrupted and transformed images.

``python -m core probe --model-file MODEL.onnx --images IMAGES [--labels LABELS.csv] --out DIR``
``    [--probes default] [--natural default] [--mean M,... --std S,...] [--batch-size 256]``
``    [--perturbed DIR2 ...] [--seed 0] [--name NAME] [--force] [--no-progress]``
``    [--engine dask --workers N | --scheduler ADDRESS] [--threads N]``

``IMAGES`` is a folder of PNG / JPEG files (names in ``LABELS.csv``, columns ``file,label``),
a ``.zip`` of them or an ``.npz`` (``images``, ``labels``). Writes ``DIR/clean.parquet``,
``DIR/probes.parquet``, ``DIR/natural.parquet``, ``DIR/records.parquet`` and
``DIR/manifest.json`` (:mod:`core.imaging.probe`); then

``python -m core paired --records DIR/records.parquet --probes DIR/probes.parquet DIR/natural.parquet``
``    --clean-outputs DIR/clean.parquet --tau 0.8 --out QUEUE``

gives the bounds and the recapture queue. Everything is validated before the model runs;
the output folder appears only when complete. Bad input exits with code 2 and one line.
``--model`` is a registry name across the product; ``--model PATH`` still works here for one
release, as a renamed option (:func:`core.cli.options.add_renamed_option`) that says so in a
``warning:`` line. ``--engine dask`` computes the batches on a Dask
cluster (:mod:`core.scale.probe`) with outputs identical to the local run's.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from core.atomic import check_output_folder
from core.cli.options import (
    add_execution_options,
    add_renamed_option,
    add_threads_option,
    argument_type,
    cluster_from_args,
    comma_floats,
    positive_int,
    seed_int,
    spelled,
)
from core.validation import check_input_file

__all__ = ["register"]


#: Per-channel statistics: at least one number (``inf`` passes here, the model check refuses it).
_floats = argument_type(comma_floats, bool, expected="comma-separated numbers")


def register(subparsers) -> None:
    """Add the ``probe`` command to ``python -m core``."""
    p = subparsers.add_parser(
        "probe",
        help="run your ONNX image classifier on corruption probes and natural transforms",
        description="Clean, corrupted (9 types x 2 severities) and transformed (18 natural transforms) outputs of an "
        "ONNX image classifier, in the tables `python -m core paired --probes ... --clean-outputs ...` "
        "and the dashboard's Recapture page read.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model-file", metavar="MODEL.onnx", help="ONNX image classifier (NCHW or NHWC float input)")
    add_renamed_option(which, "--model", new="--model-file", dest="model_file")
    p.add_argument("--images", required=True, metavar="IMAGES", help="folder of PNG/JPEG, .zip of them, or .npz")
    p.add_argument(
        "--labels",
        metavar="LABELS.csv",
        help="columns file,label (optional split); default: the one .csv inside the folder or zip",
    )
    p.add_argument(
        "--classes",
        metavar="CLASSES.txt",
        help="class names, one a line in the model's output order, for labels given as names "
        "(default: the model's metadata 'classes')",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out folder")
    p.add_argument(
        "--probes", default="default", help="'default' (9 corruptions x severities 2,4) or NAME:SEVERITY,..."
    )
    p.add_argument("--natural", default="default", help="'default' (18 natural transforms), 'none', or names")
    p.add_argument("--mean", type=_floats, default=None, help="per-channel mean subtracted after scaling to [0, 1]")
    p.add_argument("--std", type=_floats, default=None, help="per-channel std divided by after the mean")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        help="images per model call (bounds memory); with --engine dask, images per task",
    )
    p.add_argument(
        "--perturbed",
        action="append",
        default=[],
        metavar="DIR2",
        help="the same images after a real re-capture (same file names); repeatable",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the random corruptions")
    p.add_argument("--name", help="model name in the tables (default: the model file's stem)")
    execution = p.add_argument_group("execution")
    add_execution_options(execution)
    add_threads_option(execution)
    p.set_defaults(func=run)


def run(args) -> int:
    """Execute ``python -m core probe``; returns the exit code."""
    from core.imaging.fit import counted
    from core.imaging.images import open_images
    from core.imaging.probe import (
        OnnxImageClassifier,
        parse_natural,
        parse_probes,
        read_class_names,
        run_probes,
        write_probe_outputs,
    )

    flag, given = spelled(args, "model_file", "--model-file"), args.model_file
    probes, natural = parse_probes(args.probes), parse_natural(args.natural)
    model_path = check_input_file(given, what=flag)
    if model_path.suffix.lower() != ".onnx":
        raise ValueError(f"{flag} {given!r}: expected an .onnx file (nothing else is read: no pickles).")
    check_output_folder(args.out, force=args.force)
    cluster = cluster_from_args(args)
    classes = None
    if args.classes is not None:
        classes_path = check_input_file(args.classes, what="--classes")
        classes = read_class_names(classes_path.read_bytes(), str(classes_path))
    # Locally the session takes --threads (default: every core); on Dask the workers' sessions
    # do, and this one only reads the graph and runs one clean image.
    threads = args.threads if args.engine == "local" else 1
    model = OnnxImageClassifier(
        model_path.read_bytes(), where=str(model_path), mean=args.mean, std=args.std, classes=classes, threads=threads
    )
    images = open_images(args.images, args.labels, classes=model.classes)
    perturbed = {}
    for path in args.perturbed:
        cond = Path(path).name if Path(path).is_dir() else Path(path).stem
        if cond in perturbed:
            raise ValueError(f"--perturbed {path!r}: a second re-capture named {cond!r}; give each a distinct name.")
        labels = args.labels if Path(path).suffix.lower() != ".npz" else None
        perturbed[cond] = open_images(path, labels, classes=model.classes)
    # The bar opens at the first batch and closes after the last, so that the model-fit warnings
    # (before probing, after the clean pass) print as whole lines, not inside the bar.
    bar = None

    def progress(label: str, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(
                file=sys.stderr,
                leave=False,
                total=total,
                bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]",
            )
        bar.total = total
        bar.n = done
        bar.set_description(label)
        if done >= total:
            bar.close()

    settings = dict(
        model_name=args.name or model_path.stem,
        probes=probes,
        natural=natural,
        perturbed=perturbed,
        batch_size=args.batch_size,
        seed=args.seed,
        progress=None if args.no_progress else progress,
    )
    work = None
    try:
        if args.engine == "local":
            result = run_probes(model, images, **settings)
        else:
            from core.scale.probe import probe_on_dask, work_folder

            work = work_folder(args.out)
            with cluster as client:
                result = probe_on_dask(model, images, work=work, client=client, threads=args.threads, **settings)
    finally:
        if bar is not None:
            bar.close()
    write_probe_outputs(result, args.out)
    if work is not None:  # published: the partitions are no longer needed for a resume
        shutil.rmtree(work, ignore_errors=True)
    m = result.manifest
    print(
        f"{counted(m['n_images'], 'image')}, {m['n_classes']} classes, images {m['fit']['images']} -> input "
        f"{m['input']['layout']} {m['input']['width']}x{m['input']['height']}x{m['input']['channels']}, output "
        f"{m['output']}; clean accuracy {m['clean_accuracy']:.3f}; {counted(len(m['probes']), 'probe')}, "
        f"{counted(len(m['natural']), 'transform')}, {counted(len(m['recaptures']), 're-capture')}"
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
