"""The sidebar shared by every page: who is signed in (or that the app runs in single-user
local mode), the global dataset / model / seed selection and the review database location
(fixed at server start, shown read-only). Values live in :class:`ui.state.SharedState` (defaults
seeded by ``app.py``).

The image pages (paired bounds, recapture queue) have their own model selector; the tabular
selection and *Your model* are not drawn there (a second "Model" beside the page's own would
suggest it matters). Its widgets keep their values across those pages (``persist_state``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.reviews.backend import display_name
from core.tabular.dataset import OWN_MODEL_SOURCE
from core.tabular.datasets import DATASET_NAMES
from core.tabular.models import MODEL_NAMES
from ui.auth import SIGN_OUT_KEY, current_access
from ui.components import guarded
from ui.data import dataset_label, model_label, review_store
from ui.own_model import render_own_model_sidebar, saved_folder
from ui.state import SharedState, own_model_state, shared_state

#: url paths of the pages that use none of the tabular selection.
IMAGE_PAGES = frozenset({"paired_bounds", "recapture"})
#: url paths of the pages that open the review database themselves and show its errors (the
#: sidebar does not repeat them there).
DATABASE_PAGES = frozenset({"triage"})


def dataset_options() -> list[str]:
    """Bundled dataset names followed by the keys of this session's uploaded tables."""
    return list(DATASET_NAMES) + [f"upload:{name}" for name in shared_state().uploads]


def render_sidebar(page_path: str = "") -> None:
    """Draw the sidebar for the page at url path ``page_path`` (``""`` = the default page)."""
    with st.sidebar:
        _identity()
        if page_path in IMAGE_PAGES:
            st.caption(
                "This page audits image models and has its own model selector; the tabular audit selection "
                "(dataset, model, seed, your model) is in the sidebar of the tabular pages."
            )
        else:
            _tabular_selection()
        st.subheader("Review database")
        # Chosen when the server starts (`--reviews-db PATH` or AUDIT_REVIEWS_DB), never typed
        # here: a free-text path would let any visitor create files wherever the server can write.
        # A team sees the file's name only: the server's folders are not theirs to know.
        access = current_access()
        shown = display_name(shared_state().reviews_db, short=access.team_mode)  # never a password
        st.caption(
            f"`{shown}`",
            help="Where triage decisions are stored (WAL mode, safe for concurrent sessions). Set it when "
            "starting the server: `streamlit run app.py -- --reviews-db PATH` or the AUDIT_REVIEWS_DB "
            "variable.",
        )
        if page_path not in DATABASE_PAGES:
            with guarded("Review database"):
                review_store(shared_state().reviews_db)


_ROLE_TEXT = {
    "admin": "admin — assigns cases, adjudicates, exports",
    "reviewer": "reviewer — decides on assigned cases",
    "viewer": "viewer — reads only",
}


def _identity() -> None:
    """The signed-in user and their role, or the single-user local mode."""
    access = current_access()
    if access.team_mode:
        st.markdown(f"Signed in as **{access.user.name}**  \n{access.user.email} · {_ROLE_TEXT[access.role]}")
        st.button("Sign out", key=SIGN_OUT_KEY, icon=":material/logout:", on_click=st.logout, type="tertiary")
    else:
        st.caption(
            "Single-user local mode: no sign-in; decisions carry the name typed on the Triage page. "
            "To share it with a review team, configure sign-in (see 'Review team' in the documentation)."
            + (f" {access.note}" if access.note else "")
        )
    st.divider()


def open_audit_lines(source: dict, protocol: dict | None) -> list[str]:
    """What the sidebar says the tabular pages show while *Your model* is open, one line each.

    Parameters
    ----------
    source : dict
        ``OwnModelState.audit``: ``{"kind": "folder", "path": ...}`` or an upload
        (``{"kind": "upload", "target": ..., "files": {"model": (name, bytes), "test": ..., ...}}``).
    protocol : dict or None
        The open folder's ``protocol.json`` (None for an upload, or a folder that did not open).
    """
    if source["kind"] == "upload":
        files = source["files"]
        train = files.get("train")
        return [
            f"Model: **{files['model'][0]}** (your fitted model)",
            f"Data: **{files['test'][0]}**"
            + (f" and **{train[0]}**" if train else "")
            + f", target `{source['target']}`",
        ]
    lines = [f"Saved audit: **{Path(source['path']).name}**"]
    if not protocol:
        return lines
    split = protocol.get("split") or {}
    rows = (
        f" ({split['n_train']:,} training, {split['n_test']:,} test rows)"
        if {"n_train", "n_test"} <= set(split)
        else ""
    )
    if protocol.get("source") == OWN_MODEL_SOURCE:
        # The tool neither split nor fitted the user's model: no seed to show.
        model = str(protocol.get("model", "")).removeprefix("own:")
        return [*lines, f"Model: **{model}** (your fitted model)", f"Data: your tables{rows}"]
    return [
        *lines,
        f"Dataset: **{dataset_label(str(protocol.get('dataset')))}**{rows}",
        f"Model: **{model_label(str(protocol.get('model')))}**",
        f"Seed: {protocol.get('seed')}",
    ]


def _open_audit(source: dict) -> None:
    """The open audit in place of the dataset / model / seed selection, which it does not use."""
    st.subheader("Open audit")
    protocol = None
    if source["kind"] == "folder":
        try:
            protocol = saved_folder().protocol
        except ValueError:  # the pages say why; the sidebar names the folder only
            protocol = None
    st.markdown("  \n".join(open_audit_lines(source, protocol)))
    st.caption("The tool's datasets and models return with *Back to the tool's models* below.")


def _tabular_selection() -> None:
    source = own_model_state().audit
    if source is not None:
        # The bundled selection is not drawn: its widgets keep their values (persist_state).
        _open_audit(source)
        st.divider()
        render_own_model_sidebar()
        st.divider()
        return
    st.subheader("Audit selection")
    options = dataset_options()
    if shared_state().dataset_next in options:  # a table just added on the Overview page
        shared_state().dataset = shared_state().dataset_next
    shared_state().dataset_next = None
    if shared_state().dataset not in options:  # an upload from a previous session
        shared_state().dataset = options[0]
    st.selectbox(
        "Dataset",
        options,
        key=SharedState.dataset.key,
        format_func=dataset_label,
        persist_state="session",
        help="Bundled tables load offline; upload your own in the Overview's Data tab.",
    )
    st.selectbox(
        "Model",
        list(MODEL_NAMES),
        key=SharedState.model.key,
        format_func=short_model_label,
        persist_state="session",
        help="The model audited on the tabular pages (trained on the training split). FR = fragility-regularised.",
    )
    st.number_input(
        "Seed",
        min_value=0,
        max_value=2**31 - 1,
        step=1,
        key=SharedState.seed.key,
        persist_state="session",
        help="Seeds the split, the model and the held-out stressors: same seed, same audit.",
    )
    st.divider()
    render_own_model_sidebar()
    st.divider()


# The sidebar's select box shows about 28 characters; longer registry labels are abbreviated
# there ("Fragility-regularised ResMLP (torch)" read "Fragility-regularised ResMLP (tor").
_SHORT = {"Fragility-regularised": "FR"}
_SIDEBAR_CHARS = 28


def short_model_label(name: str) -> str:
    """The model's label, abbreviated to fit the sidebar's select box."""
    label = model_label(name)
    if len(label) <= _SIDEBAR_CHARS:
        return label
    for long, short in _SHORT.items():
        label = label.replace(long, short)
    return label if len(label) <= _SIDEBAR_CHARS else label[: _SIDEBAR_CHARS - 1] + "…"
