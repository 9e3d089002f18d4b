"""Reliability audit dashboard — entry point:
``streamlit run app.py [-- --reviews-db PATH] [--audit DIR] [--audits-dir DIR] [--team FILE]``.

With an ``[auth]`` section in Streamlit's secrets (``.streamlit/secrets.toml``), the sign-in
gate (:func:`ui.auth.gate`) runs before the navigation: a visitor sees nothing but the sign-in
page until they sign in, and then gets the role the team file (``--team`` or ``AUDIT_TEAM``)
gives their address. Without it, the app runs in single-user local mode.

This file only declares the pages, gives every ``st.session_state`` key its default and draws
the shared sidebar; each view lives in ``pages/`` and every computation in ``core/``.
Each page file starts with ``ui.entry.ensure_entrypoint()``: Streamlit runs a ``pages/`` file
without this script on the first visit of a fresh server (legacy multipage mode), and that
guard runs this script instead so deep links such as ``/triage`` get their state and sidebar.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import streamlit as st

from core.views.audit_inputs import DEFAULT_DATASET, Protocol
from core.views.uploads import LARGE_TABLE_ROWS
from ui.auth import Blocked, gate, reviews_db_path, team_path
from ui.certificate import DEFAULT_TOP_GROUPS, PANEL_TABS
from ui.own_model import default_audits_dir
from ui.sidebar import render_sidebar


def _cli_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="streamlit run app.py --", add_help=False, allow_abbrev=False)
    parser.add_argument("--reviews-db", default=None)
    parser.add_argument("--audit", default=None, help="open this saved audit folder")
    parser.add_argument("--audits-dir", default=None, help="folder of saved audits offered in the sidebar")
    parser.add_argument("--team", default=None, help="team file: roles per e-mail address (with sign-in)")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args


_ARGS = _cli_args()


st.set_page_config(
    page_title="Reliability audit",
    page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
    layout="wide",
    initial_sidebar_state="expanded",
)

# Every session-state key of the app and its default. Widgets read their value from here
# (none passes its own default), so a page always opens in a defined state. File uploaders and
# buttons hold no settable value and are not listed.
_PROTOCOL = Protocol()
DEFAULTS: dict[str, object] = {
    # global selection (sidebar)
    "dataset": DEFAULT_DATASET,
    "model": "hist_gb",
    "seed": 0,
    "reviews_db": reviews_db_path(_ARGS.reviews_db),
    # sign-in (ui/auth.py): the team file fixed at server start, and what the gate decided this run
    "team_file": team_path(_ARGS.team),
    "access": None,
    # your own model (sidebar "Your model"): None = the tool's models; see ui/own_model.py
    "own_audit": {"kind": "folder", "path": _ARGS.audit} if _ARGS.audit else None,
    "audits_dir": _ARGS.audits_dir or str(default_audits_dir()),
    "own_target": None,
    "own_feature_order": "",
    "own_form_open": False,  # the upload form's expander (kept open after an error or a trust offer)
    "own_offer": None,  # a pending skops trust offer: {"digest", "types", "source"}
    "own_error": None,  # the upload form's last error: {"digest", "message"}
    "own_folder": None,
    "dataset_next": None,  # dataset to select at the start of the next run (set after an upload)
    "uploads": {},  # name -> core.views.uploads.TableUpload
    "protocol": None,  # applied Protocol as a dict; None = the default protocol
    # overview: protocol form
    # (every proto_* default is the field of Protocol(): one source of the protocol defaults)
    "proto_grouping": _PROTOCOL.grouping,
    "proto_baseline": _PROTOCOL.baseline,
    "proto_depth": "auto" if _PROTOCOL.depth is None else _PROTOCOL.depth,
    "proto_operators": list(_PROTOCOL.operators),
    "proto_severities": ", ".join(str(v) for v in _PROTOCOL.severities),
    "proto_w1": _PROTOCOL.weights[0],
    "proto_w2": _PROTOCOL.weights[1],
    "proto_w3": _PROTOCOL.weights[2],
    "proto_path_rule": _PROTOCOL.path,
    "proto_merge_threshold": _PROTOCOL.merge_threshold,
    "upload_target": None,
    "audit_sample_rows": LARGE_TABLE_ROWS,  # interactive audit sample of uploads above that many rows
    "overview_column": None,
    "overview_preview_open": False,  # raw-data preview expander (its table is drawn only when open)
    "overview_groups_open": False,  # evidence-groups expander (idem)
    # the sample selected on the tabular pages (dataset sample id, not a row position; ui/selection.py)
    "selected_sample": None,  # None = each page starts on its most fragile case
    # certificate explorer
    "explorer_sort": "fds",
    "explorer_search": "",
    "explorer_hc": True,
    "explorer_table": {"selection": {"rows": [], "columns": [], "cells": []}},
    "whatif_groups": [],
    "whatif_sample": None,  # sample id the what-if toggles belong to (reset when it changes)
    "drops_top_n": DEFAULT_TOP_GROUPS,  # one-step drops shown before the rest is folded (explorer, triage)
    # triage queue
    "triage_score": "fds",
    "triage_budget": 10,
    "triage_scope": "high-confidence",
    "triage_table": {"selection": {"rows": [], "columns": [], "cells": []}},
    "triage_tab": PANEL_TABS[0],  # the open tab of the evidence panel (only it is drawn)
    "review_reviewer": "",  # local mode only: with sign-in, the signed-in user decides
    "review_decision": None,  # the form starts on the reviewer's own decision in force, none if unreviewed
    "review_reasons": [],
    "review_note": "",
    "review_bulk_decision": None,  # no default: a bulk decision is applied only once one is chosen
    "review_bulk_reasons": [],
    "review_bulk_note": "",
    "review_plan_per_case": 1,  # admin's plan form (team mode): reviewers per case
    "review_plan_assign": True,  # ... assign the queued cases round-robin
    "review_plan_reviewers": [],  # ... to these addresses (empty: every reviewer of the team file)
    "adjudicate_decision": None,  # admin's final decision on a case, none chosen at first
    "adjudicate_note": "",
    "review_flash": None,  # (kind, message) shown once after saving a decision
    # model comparison
    "compare_models": ["logreg", "random_forest", "hist_gb"],
    "compare_sample": None,
    # calibration
    "calib_methods": ["uncalibrated", "temperature", "bats"],
    # paired bounds
    "paired_data_source": "demo",  # "demo" | "paired" | "unpaired"
    "paired_upload": None,  # core.views.uploads.FilesUpload (kind "paired" | "unpaired") or None
    "paired_source": None,
    "paired_model": None,
    "paired_condition": None,
    "paired_coverage": 0.8,
    "paired_tau_mode": "coverage",  # uploads: "coverage" (τ from clean coverage) | "fixed" (typed τ)
    "paired_tau_value": 0.9,  # the fixed τ in [0, 1]
    "paired_lambda": 0.5,
    "paired_level": "Ik",
    # recapture queue
    "recapture_upload": None,  # core.views.uploads.FilesUpload (kind "screening") or None
    "recap_outcome_source": None,  # source of the Paired bounds upload whose conditions are the real re-tests
    "recap_model": None,
    "recap_condition": None,
    "recap_score": "U",
    "recap_budget": 10,
}
for _key, _value in DEFAULTS.items():
    if _key not in st.session_state:
        st.session_state[_key] = _value

_pages = {
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
_access = gate(st.session_state["team_file"])
if isinstance(_access, Blocked):
    _paths = [p.url_path for group in _pages.values() for p in group if p.url_path]
    st.navigation(
        [st.Page(_access.body, title=_access.title, url_path="sign-in", default=True)]
        + [st.Page(_access.body, title=_access.title, url_path=path) for path in _paths],
        position="hidden",
    ).run()
    st.stop()
_page = st.navigation(_pages)
render_sidebar(_page.url_path)
_page.run()
