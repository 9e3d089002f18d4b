"""``reliability-audit reviews ACTION``: the review database without opening the dashboard.

- ``export``: the decision history as CSV (formula cells neutralised, :mod:`core.csv_safe`);
- ``backup``: an online, consistent copy (SQLite's backup API) while dashboards write to it;
- ``check``: ``PRAGMA integrity_check``, and what to do when it fails;
- ``verify``: the tamper-evident chain and, with the server's key, every entry's HMAC;
- ``sign``: an admin signs an existing unsigned log with the key, once.

Exit codes: 0 success (for ``check`` and ``verify``: the file is sound), 3 the file failed the
check or the verification, 2 bad input (:mod:`core.cli`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.atomic import check_output_file
from core.cli.options import add_renamed_option, spelled
from core.csv_safe import write_csv
from core.reviews.store import ReviewStore, default_db_path

#: Exit code of ``check`` and ``verify`` when the file fails.
FAILED = 3


def _db_option(parser: argparse.ArgumentParser, *, old_name: bool = False) -> None:
    parser.add_argument(
        "--reviews-db",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"review database (default: $AUDIT_REVIEWS_DB or {default_db_path()})",
    )
    if old_name:
        add_renamed_option(parser, "--db", new="--reviews-db", dest="reviews_db", type=Path)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reviews",
        help="export, back up, check and verify the review decisions",
        description="Work with the review decisions stored by the dashboard (SQLite), also while it runs.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="write the decision history as CSV",
        description="Write the full history (oldest first) as CSV: decisions and "
        "retractions, reason codes, notes, and the audit each entry was made "
        "under (audit, data and protocol fingerprints, model). Cells that a spreadsheet "
        "would run as a formula are written with a leading '.",
    )
    _db_option(export, old_name=True)
    export.add_argument(
        "--fingerprint",
        default=None,
        metavar="FINGERPRINT",
        help="only the decisions of this audit (its certificate fingerprint)",
    )
    add_renamed_option(export, "--audit", new="--fingerprint", dest="fingerprint")
    export.add_argument("--out", type=Path, default=None, help="CSV file to write (default: standard output)")
    export.set_defaults(func=_export)

    backup = actions.add_parser(
        "backup",
        help="copy the database, online and consistent, into a new file",
        description="Copy the review database with SQLite's backup API: a consistent snapshot "
        "even while dashboards and scripts write to it. The backup is a new, self-contained "
        "file; an existing file is never replaced.",
    )
    _db_option(backup)
    backup.add_argument("--out", type=Path, required=True, metavar="FILE", help="the new backup file")
    backup.set_defaults(func=_backup)

    check = actions.add_parser(
        "check",
        help="run SQLite's integrity check (exit 3 when it fails)",
        description="Run PRAGMA integrity_check on the review database (read-only, while it is "
        "in use). Exit 0 when it is sound, 3 when it is damaged (with what to do).",
    )
    _db_option(check)
    check.set_defaults(func=_check)

    verify = actions.add_parser(
        "verify",
        help="verify the tamper-evident review log (exit 3 when it was changed)",
        description="Walk the review log's hash chain and, with the server's key "
        "($AUDIT_REVIEWS_KEY), every entry's HMAC. Exit 0 when it is intact, 3 when any "
        "entry was edited, deleted, reordered or written without the key (the first bad entry "
        "is named), 2 on bad input.",
    )
    _db_option(verify)
    verify.set_defaults(func=_verify)

    sign = actions.add_parser(
        "sign",
        help="sign an existing unsigned log with the server's key, once",
        description="Sign every entry of a review log started without a key with the key in "
        "$AUDIT_REVIEWS_KEY, after checking its hash chain. From then on, only processes that "
        "hold the key may write to it.",
    )
    _db_option(sign)
    sign.set_defaults(func=_sign)


def _existing_db(args: argparse.Namespace) -> Path:
    db = args.reviews_db if args.reviews_db is not None else default_db_path()
    flag = spelled(args, "reviews_db", "--reviews-db")
    path = Path(db).expanduser()
    if path.is_dir():
        raise ValueError(f"{flag} {str(db)!r} is a folder; expected the review database file.")
    if not path.is_file():
        raise ValueError(
            f"Review database {str(db)!r} does not exist; pass {flag} PATH (the dashboard's sidebar shows it)."
        )
    return path


def _export(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    if args.out is not None:
        check_output_file(args.out, flag="--out")  # before reading: a folder or /dev/full is refused up front
    frame = ReviewStore(path).export(args.out, audit_fingerprint=args.fingerprint)
    if args.out is None:
        write_csv(frame, sys.stdout, index=False)  # formula cells neutralised (core.csv_safe)
    else:
        print(f"wrote {len(frame)} decision(s) to {args.out}", file=sys.stderr)
    return 0


def _backup(args: argparse.Namespace) -> int:
    from core.reviews.maintenance import backup

    done = backup(_existing_db(args), args.out)
    print(f"backed up {done.entries} entries to {done.path} ({done.size_bytes:,} bytes)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from core.reviews.maintenance import check_integrity

    path = _existing_db(args)
    found = check_integrity(path)
    if found.ok:
        print(f"{path.name}: integrity check ok")
        return 0
    print(f"{path.name}: integrity check FAILED", file=sys.stderr)
    for problem in found.problems:
        print(f"  {problem}", file=sys.stderr)
    print(found.advice, file=sys.stderr)
    return FAILED


def _verify(args: argparse.Namespace) -> int:
    from core.reviews.maintenance import verify_log

    path = _existing_db(args)
    found = verify_log(path)
    if found.ok:
        print(f"{path.name}: {found.summary}; head {found.head}")
        return 0
    where = f" (first bad entry: review_id {found.first_bad})" if found.first_bad is not None else ""
    print(f"{path.name}: {found.summary}{where}", file=sys.stderr)
    return FAILED


def _sign(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    signed = ReviewStore(path).sign()
    print(f"{path.name}: signed {signed} entries with the key" if signed else f"{path.name}: already signed")
    return 0
