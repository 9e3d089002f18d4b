"""Command line entry point: ``python -m core <command> ...``.

Each sub-package that offers a command exposes ``register(subparsers)`` in its own ``cli``
module; this file only wires them together, so adding a command never touches another one.
Exit codes: 0 success, 2 bad input (message on stderr, nothing written), 1 unexpected error.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules that register sub-commands, in the order they appear in ``--help``.
_COMMAND_MODULES = ("core.tabular.cli", "core.paired.cli", "core.scale.cli", "core.reviews.cli", "core.report_cli")


class InputError(ValueError):
    """Bad user input: reported as one line on stderr with exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core",
        description="Reliability audit: fragility certificates and paired evaluations.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # command not shipped in this build
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (InputError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
