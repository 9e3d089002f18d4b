"""Command line entry point: ``reliability-audit <command> ...`` (alias ``python -m core <command> ...``).

Every command lives in this package, one module per command group (``core.cli.tabular`` for
``audit``, ``core.cli.paired`` for ``paired`` and ``paired-grid``, …: ``_COMMAND_MODULES``), each
exposing ``register(subparsers)`` and calling its engine package; the argument types they share
are :mod:`core.cli.options`. This module only wires them together, so adding a command never
touches another one (the shared vocabulary of the commands is ``docs/cli.md``). An option
whose argparse type parses a list of numbers (:func:`core.cli.options.takes_number_list`) may
get a value starting with ``-``; this module learns which options those are from the parsers,
and names none itself.

Exit codes: 0 success, 2 bad input — any ``ValueError`` a command raises, the one way user
input is refused — or an unwritable / full destination (one line on stderr, nothing written),
1 unexpected error. Warnings (a constant feature, an option under its old name) are printed as
one ``warning: ...`` line each.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
import warnings
from pathlib import Path

from core.cli.options import takes_number_list
from core.exceptions import DeprecatedOptionWarning

# Modules that register sub-commands, in the order they appear in ``--help``.
_COMMAND_MODULES = (
    "core.cli.tabular",
    "core.cli.paired",
    "core.cli.imaging",
    "core.cli.scale",
    "core.cli.reviews",
    "core.cli.report",
    "core.cli.gate",
    "core.cli.dashboard",
)


def _prog() -> str:
    """``reliability-audit`` when run as the console command, else ``python -m core``."""
    return "reliability-audit" if Path(sys.argv[0]).name.startswith("reliability-audit") else "python -m core"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(),
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


# A value that argparse would take for an option ("-1,1,1", "-inf"): argparse only accepts
# plain negative numbers such as "-1" as values.
_NUMBERS = re.compile(r"^-[0-9.,eE+\-\s]*$|^-(?:inf|nan)", re.IGNORECASE)


def _number_list_options(parser: argparse.ArgumentParser) -> dict[str, frozenset[str]]:
    """Per command, the option strings whose argparse type parses a list of numbers."""
    options: dict[str, frozenset[str]] = {}
    for action in parser._actions:  # argparse has no public way to list a parser's options
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                options[command] = frozenset(
                    flag for a in sub._actions if takes_number_list(a.type) for flag in a.option_strings
                )
    return options


def _join_number_lists(argv: list[str], options: dict[str, frozenset[str]]) -> list[str]:
    """``--weights -1,1,1`` as ``--weights=-1,1,1`` for the number-list options of the command in ``argv``."""
    command = next((arg for arg in argv if arg in options), None)
    wanted = options.get(command, frozenset())
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in wanted and i + 1 < len(argv) and _NUMBERS.match(argv[i + 1]):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _os_error_line(exc: OSError, out: object = None) -> str:
    """One line naming the path and the reason (permission, disk full, file too large, a folder).

    An error raised without a file name (a write into an already open file) happened while
    writing the command's output, so ``out`` is named instead.
    """
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    tag = f" [{name}]" if name else ""
    if exc.filename is not None:
        return f"cannot write or read {str(exc.filename)!r}: {reason}{tag}"
    if out is not None:
        return f"cannot write {str(out)!r}: {reason}{tag}"
    return f"{reason}{tag}"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # One line per warning, without the source line Python prints by default.
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = _join_number_lists(list(sys.argv[1:] if argv is None else argv), _number_list_options(parser))
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        # Python hides a DeprecationWarning raised outside __main__; an old option name must be seen.
        warnings.simplefilter("always", DeprecatedOptionWarning)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        try:
            return int(args.func(args) or 0)
        except OSError as exc:
            # FileNotFoundError raised by our checks carries a full sentence; OS-level errors
            # (EACCES, ENOSPC, EFBIG, EISDIR, EROFS) carry errno and the path.
            text = _os_error_line(exc, getattr(args, "out", None)) if exc.errno is not None else str(exc)
            print(f"error: {text}", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
