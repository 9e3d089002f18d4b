"""The ``report`` command: a self-contained HTML report of an audit folder, for stakeholders.

``python -m core report AUDIT_DIR --out report.html``
    Protocol and fingerprints, nominal vs fragility metrics, FDS against the confidence scores,
    the triage queue, three example certificates. ``AUDIT_DIR`` is the output of
    ``python -m core audit``; more folders after the first add rows to the per-model table.
    A ``certify`` output folder of any size is reported alone, over every row
    (:func:`core.views.big_audit.big_report_html`: totals, distributions, per class, the
    riskiest rows, the reviewers' decisions).
``... --reviews-db PATH``
    The reviewers' decisions of this audit (default: the dashboard's database when it exists).
``... --paired DIR``
    Interval bars and the recapture-queue summary, from a demo pool (``assets/paired_demo``)
    or the output of ``python -m core paired --out``.
``... --pdf report.pdf``
    The same report printed to PDF by headless Chromium (Playwright's ``page.pdf``, network
    disabled; :mod:`core.report_pdf`), with or without ``--out``. Without Playwright or
    Chromium it exits 2 saying which is missing.

The model file of the audit folder is never read. The report is written to a temporary file
beside ``--out`` and renamed into place; bad input exits with code 2 and one line on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.cli.options import fraction

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``report`` command to ``python -m core``."""
    from core.reviews import ENV_VAR

    p = subparsers.add_parser(
        "report",
        help="self-contained HTML report of an audit folder (works offline)",
        description="Build one self-contained HTML report (charts inlined, no network needed) from the tables of "
        "an audit folder; the audit's model file is never read.",
    )
    p.add_argument(
        "audit_dirs",
        nargs="+",
        metavar="AUDIT_DIR",
        help="folder(s) written by `python -m core audit`; the first is reported in full",
    )
    p.add_argument("--out", help="HTML file to write (replaced atomically)")
    p.add_argument("--pdf", metavar="PATH", help="also (or only) print the report to this PDF file with Chromium")
    p.add_argument(
        "--chromium",
        metavar="PATH",
        help="Chromium executable for --pdf (default /usr/bin/chromium, then chromium on PATH)",
    )
    p.add_argument(
        "--reviews-db",
        metavar="PATH",
        help=f"review database (default: ${ENV_VAR} or the dashboard's default, when the file exists)",
    )
    p.add_argument("--no-reviews", action="store_true", help="leave the reviewers' decisions out")
    p.add_argument("--paired", metavar="DIR", help="demo pool or `python -m core paired` output folder")
    p.add_argument(
        "--budget",
        type=fraction,
        default=0.1,
        help="triage review budget, fraction of the high-confidence predictions (default 0.1)",
    )
    p.set_defaults(func=_report)


def _report(args) -> int:
    from core.report import write_report

    if args.out is None and args.pdf is None:
        raise ValueError("give --out report.html, --pdf report.pdf or both.")
    out = Path(args.out) if args.out is not None else None
    if out is not None and out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a folder; expected a file path such as report.html.")
    if out is not None and not out.parent.is_dir():
        raise ValueError(f"the folder of --out {str(out)!r} does not exist.")
    if args.pdf is not None:
        from core.atomic import check_output_file
        from core.report_pdf import find_chromium

        if not Path(args.pdf).parent.is_dir():
            raise ValueError(f"the folder of --pdf {str(args.pdf)!r} does not exist.")
        check_output_file(args.pdf, flag="--pdf")
        find_chromium(args.chromium)  # before any work: a missing browser is said at once
    from core.scale.results import is_certify_folder

    if is_certify_folder(args.audit_dirs[0]):
        html = _certify_report(args)
    else:
        html = _audit_report(args)
    if args.pdf is not None:  # printed first: a failed print leaves no half of the pair behind
        from core.report_pdf import write_pdf

        try:
            pdf = write_pdf(html, args.pdf, chromium=args.chromium)
        except RuntimeError as exc:  # the page did not render: said in one line, nothing written
            raise ValueError(f"--pdf {str(args.pdf)!r}: {exc}") from None
        print(f"wrote {pdf} ({pdf.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    if out is not None:
        write_report(html, out)
        print(f"wrote {out} ({len(html.encode('utf-8')) / 1e6:.1f} MB)", file=sys.stderr)
    return 0


def _certify_report(args) -> str:
    """The report of every row of a ``certify`` folder (:func:`core.views.big_audit.big_report_html`)."""
    from core.report import load_reviews
    from core.reviews import default_db_path
    from core.views.big_audit import big_report_html, open_certify_folder

    if len(args.audit_dirs) > 1 or args.paired:
        raise ValueError(f"{args.audit_dirs[0]} is a certify run: it is reported alone (no other folder, no --paired).")
    results = open_certify_folder(args.audit_dirs[0])
    db = None if args.no_reviews else (args.reviews_db or (default_db_path() if default_db_path().is_file() else None))
    decisions = load_reviews(db, results.fingerprint).latest if db is not None else None
    return big_report_html(results, decisions=decisions)


def _audit_report(args) -> str:
    from core.report import build_report, load_audit_folder, load_paired, load_reviews
    from core.reviews import default_db_path

    audits = [load_audit_folder(d) for d in args.audit_dirs]
    reviews, reviews_note = None, "no review database was given."
    if args.no_reviews:
        reviews_note = "left out on request (--no-reviews)."
    elif args.reviews_db is not None:
        reviews = load_reviews(args.reviews_db, audits[0].fingerprint)
    else:
        db = default_db_path()
        if db.is_file():
            reviews = load_reviews(db, audits[0].fingerprint)
        else:
            reviews_note = (
                f"no review database was given (--reviews-db PATH) and the default one ({db.name}) does not exist."
            )
    paired = load_paired(args.paired) if args.paired else None
    return build_report(audits, reviews=reviews, reviews_note=reviews_note, paired=paired, budget=args.budget)
