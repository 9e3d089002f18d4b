"""``reliability-audit gate AUDIT_DIR``: fail a CI job when an audit breaks its thresholds.

``reliability-audit gate AUDIT_DIR --max share_brittle=0.1 --min accuracy=0.8``
    Check the figures of an audit folder (``reliability-audit audit --out DIR``,
    ``AuditResult.save``) against thresholds: ``--max METRIC=VALUE`` fails when the metric is
    above ``VALUE``, ``--min METRIC=VALUE`` when it is below; both repeatable.
``... --policy gate.toml``
    More rules from a TOML file (a ``[max]`` and a ``[min]`` table of ``METRIC = VALUE``),
    combined with the flags: the same metric twice in one direction keeps the stricter one.
``... --junit gate.xml --markdown summary.md``
    The outcome as JUnit XML (one test case per rule) and as Markdown (a pull-request comment,
    ``$GITHUB_STEP_SUMMARY``), each replaced atomically.

One line per rule and the verdict go to stdout. The logic is :mod:`core.gate`; the metric names
and a CI set-up are ``docs/ci.md``.

Exit codes: 0 every rule holds, 1 a rule fails (a NaN metric cannot be checked: it fails),
2 bad input — an unknown metric (the known ones are listed), a malformed rule or policy file
(its line and value named), no rule at all, not an audit folder or one written by a newer
version (:mod:`core.cli` turns the ``ValueError`` into one ``error:`` line).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.atomic import atomic_write_text, check_output_file

__all__ = ["register"]


def _rule_type(direction: str):
    """argparse ``type=`` of ``--max`` / ``--min``: ``METRIC=VALUE`` as a :class:`core.gate.GateRule`."""
    from core.gate import parse_rule

    def parse(text: str):
        try:
            return parse_rule(text, direction=direction, source=f"--{direction}")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).rstrip(".")) from None

    parse.__name__ = f"{direction} rule"
    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gate`` command to ``reliability-audit``."""
    parser = subparsers.add_parser(
        "gate",
        help="check an audit folder against thresholds, for CI (exit 1 when a rule fails)",
        description="Check the figures of an audit folder (fragility, nominal metrics, each score's ranking "
        "figures, calibration) against thresholds. Exit 0 when every rule holds, 1 when one fails (a metric "
        "undefined on this audit cannot be checked: its rule fails), 2 on bad input. Metric names and a "
        "GitHub Actions / GitLab CI set-up: docs/ci.md.",
    )
    parser.add_argument(
        "audit_dir",
        type=Path,
        metavar="AUDIT_DIR",
        help="audit folder written by `reliability-audit audit --out DIR` or AuditResult.save",
    )
    parser.add_argument(
        "--max",
        dest="rules",
        action="append",
        type=_rule_type("max"),
        metavar="METRIC=VALUE",
        help="fail when METRIC is above VALUE (repeatable), e.g. --max share_brittle=0.1",
    )
    parser.add_argument(
        "--min",
        dest="rules",
        action="append",
        type=_rule_type("min"),
        metavar="METRIC=VALUE",
        help="fail when METRIC is below VALUE (repeatable), e.g. --min accuracy=0.8",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        metavar="FILE.toml",
        help="rules from a TOML file: [max] and [min] tables of METRIC = VALUE, combined with the flags",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write the outcome as JUnit XML")
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help='write the outcome as Markdown (a pull-request comment, "$GITHUB_STEP_SUMMARY")',
    )
    parser.set_defaults(func=_gate)


def _outputs(args: argparse.Namespace) -> dict[str, Path]:
    """The report files asked for, checked before anything is read (a folder or a device refused)."""
    outputs = {
        flag: check_output_file(path, flag=flag)
        for flag, path in (("--junit", args.junit), ("--markdown", args.markdown))
        if path is not None
    }
    if len(outputs) == 2 and outputs["--junit"] == outputs["--markdown"]:
        raise ValueError(f"--junit and --markdown name the same file {str(args.junit)!r}; give two files.")
    return outputs


def _gate(args: argparse.Namespace) -> int:
    from core.gate import evaluate, gate_metrics, junit_xml, load_policy, markdown, summary_text

    outputs = _outputs(args)
    metrics = gate_metrics(args.audit_dir)
    rules = list(load_policy(args.policy, metrics=metrics.values)) if args.policy is not None else []
    rules += args.rules or []
    if not rules:
        where = f" ({args.policy} holds none)" if args.policy is not None else ""
        raise ValueError(
            f"no rule to check{where}: give --max METRIC=VALUE, --min METRIC=VALUE or --policy FILE.toml "
            "(metric names: docs/ci.md)."
        )
    result = evaluate(metrics, rules)
    if "--junit" in outputs:
        atomic_write_text(outputs["--junit"], junit_xml(result))
    if "--markdown" in outputs:
        atomic_write_text(outputs["--markdown"], markdown(result))
    print(summary_text(result))
    return result.exit_code
