"""``python -m core reviews export``: the review decisions as CSV, without opening the dashboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.atomic import check_output_file
from core.cli_options import add_renamed_option, spelled
from core.reviews.store import ReviewStore, default_db_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reviews",
        help="export review decisions stored by the dashboard",
        description="Work with the review decisions stored by the dashboard (SQLite).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="write the decision history as CSV",
        description="Write the full history (oldest first) as CSV: decisions and "
        "retractions, reason codes, notes, and the audit each entry was made "
        "under (audit, data and protocol fingerprints, model).",
    )
    export.add_argument(
        "--reviews-db",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"review database (default: $AUDIT_REVIEWS_DB or {default_db_path()})",
    )
    add_renamed_option(export, "--db", new="--reviews-db", dest="reviews_db", type=Path)
    export.add_argument(
        "--fingerprint",
        default=None,
        metavar="FINGERPRINT",
        help="only the decisions of this audit (its certificate fingerprint)",
    )
    add_renamed_option(export, "--audit", new="--fingerprint", dest="fingerprint")
    export.add_argument("--out", type=Path, default=None, help="CSV file to write (default: standard output)")
    export.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    db = args.reviews_db if args.reviews_db is not None else default_db_path()
    flag = spelled(args, "reviews_db", "--reviews-db")
    path = Path(db).expanduser()
    if path.is_dir():
        raise ValueError(f"{flag} {str(db)!r} is a folder; expected the review database file.")
    if not path.is_file():
        raise ValueError(
            f"Review database {str(db)!r} does not exist; pass {flag} PATH (the dashboard's sidebar shows it)."
        )
    if args.out is not None:
        check_output_file(args.out, flag="--out")  # before reading: a folder or /dev/full is refused up front
    frame = ReviewStore(db).export(args.out, audit_fingerprint=args.fingerprint)
    if args.out is None:
        frame.to_csv(sys.stdout, index=False)
    else:
        print(f"wrote {len(frame)} decision(s) to {args.out}", file=sys.stderr)
    return 0
