"""Argument types and option groups shared by the ``python -m core`` commands.

One definition of the protocol options, the execution options of the resumable runs, the
list/number parsers and the atomic publication of an output folder, so ``audit``, ``certify``,
``paired`` and ``paired-grid`` accept and write the same way (the vocabulary is ``docs/cli.md``).

The argparse types check a value with the checks of :mod:`core.validation` (the one home of
the scalar checks, shared with the Python API and the views) and answer ``expected …; got '…'``.
A type built on :func:`comma_floats` takes a comma-separated list of numbers, which
:mod:`core.cli` lets start with ``-`` (``--weights -1,1,1``). An option renamed in this release
keeps its old spelling for one release through :func:`add_renamed_option`.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.atomic import publish_folder  # re-exported: the one atomic writer lives in core.atomic
from core.constants import LEVELS
from core.exceptions import DeprecatedOptionWarning
from core.validation import check_budget, check_positive_int, check_seed, check_unit_interval

__all__ = [
    "add_execution_options",
    "add_mlflow_options",
    "add_protocol_options",
    "add_renamed_option",
    "add_tau_levels_options",
    "add_threads_option",
    "argument_type",
    "check_run_folder",
    "cluster_from_args",
    "comma_floats",
    "float_list",
    "fraction",
    "levels_list",
    "names",
    "positive_int",
    "protocol_from_args",
    "publish_folder",
    "seed_int",
    "spelled",
    "takes_number_list",
    "unit_float",
]


def argument_type(
    convert: Callable[[str], Any],
    accept: Callable[[Any], bool] = lambda value: True,
    *,
    expected: str,
    refused: str | None = None,
    number_list: bool | None = None,
) -> Callable[[str], Any]:
    """An argparse ``type=``: ``convert(text)``, kept when ``accept(value)`` holds.

    Bad text is refused with ``expected <expected>; got '<text>'`` (``<refused>`` instead of
    ``<expected>`` when the text converts but ``accept`` fails), the one wording of every
    ``python -m core`` option. ``number_list`` (default: ``convert`` is :func:`comma_floats`)
    declares that the value is a list of numbers that may start with ``-``, which
    :func:`core.cli.main` then passes as the option's value instead of taking it for an option
    (:func:`takes_number_list`).

    Examples
    --------
    >>> even = argument_type(int, lambda v: v % 2 == 0, expected="an even integer")
    >>> even("4")
    4
    >>> even("3")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected an even integer; got '3'
    """

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {refused or expected}; got {text!r}")
        return value

    parse.number_list = convert is comma_floats if number_list is None else number_list
    return parse


def takes_number_list(type_: Any) -> bool:
    """Whether an argparse ``type=`` parses a list of numbers (see :func:`argument_type`)."""
    return bool(getattr(type_, "number_list", False))


def _passes(check: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[Any], bool]:
    """``accept`` of :func:`argument_type` from a :mod:`core.validation` check (which raises)."""

    def accept(value: Any) -> bool:
        try:
            check(value, *args, **kwargs)
        except ValueError:
            return False
        return True

    return accept


def comma_floats(text: str) -> tuple[float, ...]:
    """Comma-separated numbers, empty items dropped (``ValueError`` on a non-number)."""
    return tuple(float(v) for v in text.split(",") if v.strip())


#: argparse type: an integer >= 1.
positive_int = argument_type(int, _passes(check_positive_int, "value"), expected="a positive integer")
#: argparse type: a seed, an integer >= 0.
seed_int = argument_type(int, _passes(check_seed), expected="a non-negative integer")
#: argparse type: a number in [0, 1] (``nan`` refused).
unit_float = argument_type(float, _passes(check_unit_interval, "value"), expected="a number in [0, 1]")
#: argparse type: a fraction in (0, 1], e.g. a review budget (``nan`` refused).
fraction = argument_type(float, _passes(check_budget), expected="a fraction in (0, 1]")
#: argparse type: comma-separated finite numbers (empty items ignored).
float_list = argument_type(
    comma_floats,
    lambda vs: all(math.isfinite(v) for v in vs),
    expected="comma-separated numbers",
    refused="comma-separated finite numbers",
)


def names(text: str) -> list[str]:
    """Comma-separated names, stripped, empty items dropped."""
    return [v.strip() for v in text.split(",") if v.strip()]


def levels_list(text: str) -> tuple[str, ...]:
    """argparse type: comma-separated information levels among :data:`core.constants.LEVELS`."""
    levels = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in levels if v not in LEVELS]
    if bad or not levels:
        raise argparse.ArgumentTypeError(f"expected levels among {','.join(LEVELS)}; got {text!r}")
    return levels


def add_tau_levels_options(group: argparse._ActionsContainer, *, tau_help: str) -> None:
    """``--tau`` (required, in [0, 1]) and ``--levels`` of the paired commands (``paired``, ``paired-grid``)."""
    group.add_argument("--tau", type=unit_float, required=True, help=tau_help)
    group.add_argument(
        "--levels",
        type=levels_list,
        default=LEVELS,
        help=f"comma-separated information levels (default {','.join(LEVELS)})",
    )


def add_mlflow_options(group: argparse._ActionsContainer) -> None:
    """``--mlflow-tracking-uri`` and ``--mlflow-experiment`` (docs/mlflow.md)."""
    group.add_argument(
        "--mlflow-tracking-uri",
        metavar="URI",
        help="MLflow tracking server of --model-uri and --mlflow-experiment (default $MLFLOW_TRACKING_URI)",
    )
    group.add_argument(
        "--mlflow-experiment",
        metavar="NAME",
        help="also log the audit to this MLflow experiment (created if missing): one run with the figures as "
        "metrics, the protocol as params, the audit folder and the HTML report as artifacts",
    )


def add_protocol_options(group: argparse._ActionsContainer) -> None:
    """The options of :class:`core.cfc.protocol.Protocol` (read back by :func:`protocol_from_args`).

    Every default is the field of ``Protocol()``: one source of the protocol defaults.
    """
    from core.cfc.protocol import BASELINE_RULES, GROUPING_RULES, OPERATORS, PATH_RULES, Protocol

    d = Protocol()
    group.add_argument("--protocol", metavar="JSON", help="protocol file (canonical JSON); overrides the options below")
    group.add_argument("--grouping", choices=GROUPING_RULES, default=d.grouping)
    group.add_argument("--baseline", choices=BASELINE_RULES, default=d.baseline)
    group.add_argument("--depth", type=positive_int, help="audit depth K (default min(G, 5))")
    group.add_argument("--path", choices=PATH_RULES, default=d.path, help=f"removal path rule (default {d.path})")
    group.add_argument(
        "--operators",
        default=",".join(d.operators),
        help=f"comma-separated subset of {', '.join(OPERATORS)} ('' for none)",
    )
    group.add_argument(
        "--severities",
        type=float_list,
        help=f"comma-separated severity grid (default {d.severities[0]:g}..{d.severities[-1]:g})",
    )
    group.add_argument("--weights", type=float_list, help="w1,w2,w3 of the FDS head (default 1/3 each)")
    group.add_argument("--merge-threshold", type=float, default=d.merge_threshold, help="|rho| of redundancy merging")


def protocol_from_args(args: argparse.Namespace):
    """The :class:`~core.cfc.protocol.Protocol` declared by :func:`add_protocol_options`."""
    from core.cfc.protocol import Protocol

    if args.protocol:
        path = Path(args.protocol)
        if not path.is_file():
            raise FileNotFoundError(f"Protocol file {args.protocol!r} does not exist.")
        return Protocol.from_json(path.read_text(encoding="utf-8"))
    kwargs: dict[str, Any] = {
        "grouping": args.grouping,
        "baseline": args.baseline,
        "depth": args.depth,
        "operators": tuple(names(args.operators)),
        "path": args.path,
        "merge_threshold": args.merge_threshold,
    }
    if args.severities is not None:
        kwargs["severities"] = args.severities
    if args.weights is not None:
        kwargs["weights"] = args.weights
    return Protocol(**kwargs)


# ---------------------------------------------------------------------------------------------
# Options renamed in this release


class _RenamedOption(argparse.Action):
    """The old spelling of an option: stores into the new option's ``dest`` and warns."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        warnings.warn(
            f"{option_string} is deprecated and will be removed in the next release; use {self.new} instead.",
            DeprecatedOptionWarning,
            stacklevel=2,
        )
        setattr(namespace, self.dest, values)
        spellings = dict(getattr(namespace, "_spelled", {}))
        spellings[self.dest] = option_string
        setattr(namespace, "_spelled", spellings)


def add_renamed_option(
    group: argparse._ActionsContainer, old: str, *, new: str, dest: str, type: Callable[[str], Any] | None = None
) -> None:
    """Keep ``old`` working for one release as a hidden spelling of the option ``new`` (``dest``).

    Using it stores the value as ``new`` would and emits a :class:`DeprecatedOptionWarning`
    naming ``new`` (:func:`core.cli.main` prints it as one ``warning: ...`` line); messages
    name the spelling the user typed through :func:`spelled`.
    """
    group.add_argument(
        old, dest=dest, type=type, action=_RenamedOption, new=new, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def spelled(args: argparse.Namespace, dest: str, flag: str) -> str:
    """The option of ``dest`` as the user typed it: ``flag``, or its old spelling if that was used."""
    return getattr(args, "_spelled", {}).get(dest, flag)


# ---------------------------------------------------------------------------------------------
# Execution of the resumable runs (``certify``, ``paired-grid``)


def add_execution_options(group: argparse._ActionsContainer) -> None:
    """``--engine``, ``--workers`` / ``--scheduler`` and ``--no-progress`` (read by :func:`cluster_from_args`)."""
    group.add_argument("--engine", choices=("local", "dask"), default="local")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, help="dask: start a local cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS", help="dask: address of an existing scheduler")
    group.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_threads_option(group: argparse._ActionsContainer) -> None:
    """``--threads N``: onnxruntime threads per model session (default: every core; on Dask, each
    worker's share of its host's cores)."""
    group.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="threads of every onnxruntime session (default: every core; with --engine dask, each worker's "
        "share of its host's cores); outputs are identical at one number, within 1e-5 across numbers",
    )


def cluster_from_args(args: argparse.Namespace):
    """The Dask client context of ``--engine`` / ``--workers`` / ``--scheduler`` (a no-op for local runs)."""
    from contextlib import nullcontext

    from core.scale.cluster import connect

    if args.engine == "local" and (args.workers or args.scheduler):
        raise ValueError("--workers / --scheduler only apply to --engine dask.")
    if args.engine == "dask" and not (args.workers or args.scheduler):
        raise ValueError("--engine dask needs --workers N (local cluster) or --scheduler ADDRESS.")
    if args.engine == "local":
        return nullcontext()
    return connect(workers=args.workers, scheduler=args.scheduler)


def check_run_folder(out: str) -> None:
    """A resumable run's ``--out``: new, or a folder (an earlier run's, checked by its manifest)."""
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {out!r} exists and is not a folder.")
