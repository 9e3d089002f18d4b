"""Argument types and option groups shared by the ``python -m core`` commands.

One definition of the protocol options, the list/number parsers and the atomic publication of
an output folder, so ``audit``, ``certify`` and ``paired`` accept and write the same way.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.atomic import publish_folder  # re-exported: the one atomic writer lives in core.atomic
from core.constants import LEVELS

__all__ = [
    "add_protocol_options",
    "add_tau_levels_options",
    "argument_type",
    "comma_floats",
    "float_list",
    "fraction",
    "levels_list",
    "names",
    "positive_int",
    "protocol_from_args",
    "publish_folder",
    "unit_float",
]


def argument_type(
    convert: Callable[[str], Any],
    accept: Callable[[Any], bool] = lambda value: True,
    *,
    expected: str,
    refused: str | None = None,
) -> Callable[[str], Any]:
    """An argparse ``type=``: ``convert(text)``, kept when ``accept(value)`` holds.

    Bad text is refused with ``expected <expected>; got '<text>'`` (``<refused>`` instead of
    ``<expected>`` when the text converts but ``accept`` fails), the one wording of every
    ``python -m core`` option.

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

    return parse


def comma_floats(text: str) -> tuple[float, ...]:
    """Comma-separated numbers, empty items dropped (``ValueError`` on a non-number)."""
    return tuple(float(v) for v in text.split(",") if v.strip())


#: argparse type: an integer >= 1.
positive_int = argument_type(int, lambda v: v >= 1, expected="a positive integer")
#: argparse type: a number in [0, 1] (``nan`` refused).
unit_float = argument_type(float, lambda v: not math.isnan(v) and 0 <= v <= 1, expected="a number in [0, 1]")
#: argparse type: a fraction in (0, 1], e.g. a review budget (``nan`` refused).
fraction = argument_type(float, lambda v: 0 < v <= 1, expected="a fraction in (0, 1]")
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
