"""``reliability-audit reviews ACTION``: the review database without opening the dashboard.

- ``export``: the decision history as CSV (formula cells neutralised, :mod:`core.csv_safe`);
- ``backup``: an online, consistent copy (SQLite's backup API) while dashboards write to it;
- ``check``: ``PRAGMA integrity_check``, and what to do when it fails;
- ``verify``: the tamper-evident chain and, with the server's key, every entry's HMAC;
- ``sign``: an admin signs an existing unsigned log with the key, once;
- ``copy``: the whole store from SQLite to PostgreSQL or back, without loss (:mod:`core.reviews.copy`).

``--reviews-db`` is an SQLite file path or a ``postgresql://`` URL (libpq syntax); a URL is
shown without its password.

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
from core.reviews.backend import default_target, display_name, is_url, open_backend
from core.reviews.store import ReviewStore

#: Exit code of ``check`` and ``verify`` when the file fails.
FAILED = 3


def _target(text: str) -> str | Path:
    """A ``postgresql://`` URL as given (never a path), else a file path."""
    return text.strip() if is_url(text) else Path(text)


def _shown(target: str | Path) -> str:
    """The database as printed: a file's name, or the URL without its password."""
    return display_name(target, short=not is_url(target))


def _db_option(parser: argparse.ArgumentParser, *, old_name: bool = False) -> None:
    parser.add_argument(
        "--reviews-db",
        type=_target,
        default=None,
        metavar="PATH_OR_URL",
        help="review database: an SQLite file or a postgresql:// URL (default: $AUDIT_REVIEWS_DB or "
        "reviews.sqlite3 in the user data folder)",
    )
    if old_name:
        add_renamed_option(parser, "--db", new="--reviews-db", dest="reviews_db", type=_target)


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

    copy = actions.add_parser(
        "copy",
        help="copy the whole store between SQLite and PostgreSQL, without loss",
        description="Copy every entry, plan, assignment, refusal and setting, ids, chain and HMACs "
        "included, from --from into --to, which must be a new SQLite file or an empty PostgreSQL "
        "database. Each is an SQLite file path or a postgresql:// URL. The row counts of both are "
        "printed; `reviews verify --reviews-db DST` then verifies the copy.",
    )
    copy.add_argument("--from", dest="source", type=_target, required=True, metavar="SRC", help="the store to copy")
    copy.add_argument("--to", dest="destination", type=_target, required=True, metavar="DST", help="the new store")
    copy.set_defaults(func=_copy)


def _existing_db(args: argparse.Namespace) -> str | Path:
    db = args.reviews_db if args.reviews_db is not None else default_target()
    if is_url(db):
        open_backend(db, timeout=10.0).require_schema()  # one line when unreachable, refused, or empty
        return db
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


def _file_only(args: argparse.Namespace, action: str, instead: str) -> Path:
    db = _existing_db(args)
    if is_url(db):
        raise ValueError(f"`reviews {action}` works on an SQLite file; for {_shown(db)!r} {instead}.")
    return db


def _backup(args: argparse.Namespace) -> int:
    from core.reviews.maintenance import backup

    done = backup(
        _file_only(args, "backup", "use pg_dump, or `reviews copy --from URL --to FILE` (docs/review_team.md)"),
        args.out,
    )
    print(f"backed up {done.entries} entries to {done.path} ({done.size_bytes:,} bytes)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from core.reviews.maintenance import check_integrity

    path = _file_only(args, "check", "the server checks its own pages; `reviews verify` checks the review log")
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
        print(f"{_shown(path)}: {found.summary}; head {found.head}")
        return 0
    where = f" (first bad entry: review_id {found.first_bad})" if found.first_bad is not None else ""
    print(f"{_shown(path)}: {found.summary}{where}", file=sys.stderr)
    return FAILED


def _sign(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    signed = ReviewStore(path).sign()
    print(f"{_shown(path)}: signed {signed} entries with the key" if signed else f"{_shown(path)}: already signed")
    return 0


def _copy(args: argparse.Namespace) -> int:
    from core.reviews.copy import copy_store

    done = copy_store(args.source, args.destination)
    counts = ", ".join(f"{table} {n:,}" for table, n in done.rows.items())
    print(f"copied {done.source} to {done.destination}: {counts}; chain head {done.head}")
    return 0
