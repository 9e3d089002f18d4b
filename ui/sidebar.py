"""The sidebar shared by every page: the global dataset / model / seed selection and the
review database location (fixed at server start, shown read-only). Values live in
``st.session_state`` (defaults in ``app.py``)."""
from __future__ import annotations

import streamlit as st

from core.tabular.datasets import DATASET_NAMES
from core.tabular.models import MODEL_NAMES
from ui.data import dataset_label, model_label, review_store
from ui.components import guarded
from ui.own_model import render_own_model_sidebar


def dataset_options() -> list[str]:
    """Bundled dataset names followed by the keys of this session's uploaded tables."""
    return list(DATASET_NAMES) + [f"upload:{name}" for name in st.session_state["uploads"]]


def render_sidebar() -> None:
    with st.sidebar:
        st.subheader("Audit selection")
        if st.session_state.get("own_audit") is not None:
            st.caption("Not used while *Your model* (below) is open.")
        options = dataset_options()
        if st.session_state["dataset_next"] in options:  # a table just added on the Overview page
            st.session_state["dataset"] = st.session_state["dataset_next"]
        st.session_state["dataset_next"] = None
        if st.session_state["dataset"] not in options:  # an upload from a previous session
            st.session_state["dataset"] = options[0]
        st.selectbox("Dataset", options, key="dataset", format_func=dataset_label,
                     help="Bundled tables load offline; upload your own on the Overview page.")
        st.selectbox("Model", list(MODEL_NAMES), key="model", format_func=model_label,
                     help="The model audited on the tabular pages (trained on the training split).")
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                        help="Seeds the split, the model and the held-out stressors: same seed, same audit.")
        st.divider()
        render_own_model_sidebar()
        st.divider()
        st.subheader("Review database")
        # Chosen when the server starts (`--reviews-db PATH` or AUDIT_REVIEWS_DB), never typed
        # here: a free-text path would let any visitor create files wherever the server can write.
        st.caption(f"`{st.session_state['reviews_db']}`",
                   help="Where triage decisions are stored (WAL mode, safe for concurrent sessions). Set it when "
                        "starting the server: `streamlit run app.py -- --reviews-db PATH` or the AUDIT_REVIEWS_DB "
                        "variable.")
        with guarded("Review database"):
            review_store(st.session_state["reviews_db"])
