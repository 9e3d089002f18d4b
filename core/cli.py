"""Command line entry point: ``reliability-audit <command> ...`` (alias ``python -m core <command> ...``).

Each sub-package that offers a command exposes ``register(subparsers)`` in its own ``cli``
module; this file only wires them together, so adding a command never touches another one.
Exit codes: 0 success, 2 bad input or an unwritable / full destination (one line on stderr,
nothing written), 1 unexpected error.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
import warnings
from pathlib import Path

# Modules that register sub-commands, in the order they appear in ``--help``.
_COMMAND_MODULES = (
    "core.tabular.cli",
    "core.paired.cli",
    "core.imaging.cli",
    "core.scale.cli",
    "core.reviews.cli",
    "core.report_cli",
    "core.dashboard_cli",
)


class InputError(ValueError):
    """Bad user input: reported as one line on stderr with exit code 2."""


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


# Options whose value is a comma-separated list of numbers that may start with "-": argparse
# would otherwise take "-1,1,1" for an option and answer "expected one argument".
_NUMBER_LIST_OPTIONS = frozenset(
    {
        "--weights",
        "--severities",
        "--coverages",
        "--lambdas",
        "--masking-rates",
        "--dropout-rates",
        "--noise-scales",
        "--mean",
        "--std",
    }
)
_NUMBERS = re.compile(r"^-[0-9.,eE+\-\s]*$|^-(?:inf|nan)", re.IGNORECASE)


def _join_number_lists(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _NUMBER_LIST_OPTIONS and i + 1 < len(argv) and _NUMBERS.match(argv[i + 1]):
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
    argv = _join_number_lists(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args) or 0)
    except OSError as exc:
        # FileNotFoundError raised by our checks carries a full sentence; OS-level errors
        # (EACCES, ENOSPC, EFBIG, EISDIR, EROFS) carry errno and the path.
        text = _os_error_line(exc, getattr(args, "out", None)) if exc.errno is not None else str(exc)
        print(f"error: {text}", file=sys.stderr)
        return 2
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
