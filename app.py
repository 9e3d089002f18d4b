"""Reliability audit dashboard — entry point:
``streamlit run app.py [-- --reviews-db PATH] [--audit DIR] [--audits-dir DIR] [--team FILE]
[--dask-scheduler ADDRESS]``.

With an ``[auth]`` section in Streamlit's secrets (``.streamlit/secrets.toml``), the sign-in
gate (:func:`ui.auth.gate`) runs before the navigation: a visitor sees nothing but the sign-in
page until they sign in, and then gets the role the team file (``--team`` or ``AUDIT_TEAM``)
gives their address. Without it, the app runs in single-user local mode.

This file only declares the pages, seeds every session value's default (``ui.state``) and draws
the shared sidebar; each view lives in ``pages/`` and every computation in ``core/``.
Each page file starts with ``ui.entry.ensure_entrypoint()``: Streamlit runs a ``pages/`` file
without this script on the first visit of a fresh server (legacy multipage mode), and that
guard runs this script instead so deep links such as ``/triage`` get their state and sidebar.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ui.first_run import collector_paused


def _cli_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="streamlit run app.py --", add_help=False, allow_abbrev=False)
    parser.add_argument("--reviews-db", default=None)
    parser.add_argument("--audit", default=None, help="open this saved audit folder")
    parser.add_argument("--audits-dir", default=None, help="folder of saved audits offered in the sidebar")
    parser.add_argument("--team", default=None, help="team file: roles per e-mail address (with sign-in)")
    parser.add_argument("--dask-scheduler", default=None, help="Dask scheduler that certifies large uploads")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args


def _audit_source(path: str) -> dict:
    """The tabular pages' source for ``--audit DIR``: a certify run (every row) or a saved audit."""
    from core.views.big_audit import is_certify_folder  # only with --audit: no first-screen import

    return {"kind": "certify" if is_certify_folder(path) else "folder", "path": path}


def _main() -> None:
    # Imported here, not above: the server's first run imports them with the collector paused.
    import streamlit as st

    from ui.preload import preload_vega

    st.set_page_config(
        page_title="Reliability audit",
        page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
        layout="wide",
        initial_sidebar_state="expanded",
    )
    # First, before the app's modules are imported: the browser compiles the chart library of the
    # Overview's first screen meanwhile, not once its charts arrive.
    preload_vega()

    from ui.auth import Blocked, gate, reviews_db_path, team_path
    from ui.own_model import DASK_SCHEDULER_ENV, default_audits_dir
    from ui.prefetch import prefetch_demo_data
    from ui.sidebar import render_sidebar
    from ui.state import AuthState, BigAuditState, OwnModelState, SharedState, auth_state, seed_defaults

    args = _cli_args()
    # Every session value of the app is a typed slot of ui.state with its default (widgets read
    # their value from there, none passes its own default), so a page always opens in a defined
    # state. File uploaders and buttons hold no settable value and are not listed. Five defaults
    # come from the command line.
    seed_defaults(
        {
            SharedState.reviews_db: reviews_db_path(args.reviews_db),
            AuthState.team_file: team_path(args.team),
            OwnModelState.audit: _audit_source(args.audit) if args.audit else None,
            OwnModelState.audits_dir: args.audits_dir or str(default_audits_dir()),
            BigAuditState.scheduler: args.dask_scheduler or os.environ.get(DASK_SCHEDULER_ENV, "").strip(),
        }
    )
    pages = {
        "Tabular audit": [
            st.Page("pages/overview.py", title="Overview: data & protocol", icon=":material/dashboard:", default=True),
            st.Page("pages/explorer.py", title="Certificate explorer", icon=":material/troubleshoot:"),
            st.Page("pages/triage.py", title="Triage queue", icon=":material/fact_check:"),
            st.Page("pages/comparison.py", title="Model comparison", icon=":material/compare_arrows:"),
            st.Page("pages/calibration.py", title="Calibration", icon=":material/tune:"),
        ],
        "Paired evaluations": [
            st.Page("pages/paired_bounds.py", title="Paired bounds", icon=":material/straighten:"),
            st.Page("pages/recapture.py", title="Recapture queue", icon=":material/photo_camera:"),
        ],
    }
    # With sign-in configured, no page runs before the visitor is signed in and has a role: until
    # then the sign-in (or no-access) page answers every address, a deep link such as /triage too.
    access = gate(auth_state().team_file)
    if isinstance(access, Blocked):
        paths = [p.url_path for group in pages.values() for p in group if p.url_path]
        st.navigation(
            [st.Page(access.body, title=access.title, url_path="sign-in", default=True)]
            + [st.Page(access.body, title=access.title, url_path=path) for path in paths],
            position="hidden",
        ).run()
        st.stop()
    page = st.navigation(pages)
    render_sidebar(page.url_path)
    page.run()
    # Once per server, from its second run on: the image pages' demo data are read in the background.
    prefetch_demo_data()


# A fresh server's first run (imports, the audit read) goes without the cyclic garbage collector
# sweeping the objects it makes for good: 0.2 s of that run here (ui.first_run).
with collector_paused():
    _main()
