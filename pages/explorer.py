"""Certificate explorer: the full fragility certificate of one prediction."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from core.views.audit_inputs import feature_origins
from core.views.tabular import (
    flip_budget_shown,
    flip_count_text,
    near_tie_note,
    prediction_table,
    raw_values_table,
    sample_bundle,
    sample_flip_search,
    whatif_probabilities,
)
from ui.audit_line import audit_line
from ui.certificate import certificate_figures, evidence_tables, flip_budget_text
from ui.components import chart, guarded, page_header, run_page, table, vega_spec
from ui.data import current_audit
from ui.entry import ensure_entrypoint
from ui.layout import flow_columns
from ui.live_model import live_model
from ui.own_model import certify_mode
from ui.selection import apply_table_selection, sample_in, select_sample, selected_sample
from ui.state import ExplorerState, explorer_state

ensure_entrypoint()

page_header(
    "Certificate explorer",
    "One prediction at a time: the evidence groups are removed one by one, most supportive first "
    "(replaced by the training baseline), and the certificate records how the model's support erodes. "
    "**Margins** are centred pseudo-logit margins of the originally predicted class (nats; below 0 the "
    "prediction has flipped). **FDS** and **RCMA** are risk scores (larger = more fragile); the **flip "
    "budget k\\*** and **λ\\*** are the other way round (smaller = more fragile). A **near-tie** is a prediction "
    "whose top two classes are all but equal: its RCMA divides by an almost-zero margin and is huge whatever the "
    "evidence does, so it is flagged and left out of the mean RCMA.",
)

_SORTS = {
    "fds": ("FDS (most fragile first)", "fds", False),
    "confidence": ("confidence (most confident first)", "confidence", False),
    "flip_budget": ("flip budget k* (fewest groups first)", "flip_budget", True),
    "rcma": ("RCMA (largest collapse first)", "rcma", False),
}


# Above this many groups the what-if offers a searchable multiselect instead of one pill per group.
_MAX_PILLS = 24


@st.cache_data(show_spinner="Searching exact and beam flip sets…", max_entries=256)
def _search(fingerprint: str, position: int, _result) -> object:
    return sample_flip_search(_result, position)


def _clear_selection() -> None:
    # Row positions of a selection refer to the old ordering; drop them when it changes.
    del explorer_state().table


def _pick_sample(frame, depth: int) -> int | None:
    """Sample table with search and sort; returns the position of the chosen sample.

    The chosen sample is always a row of the table as filtered (``None`` when no row matches),
    and it is the shared selection of the tabular pages (:mod:`ui.selection`).
    """
    # Wrapping, not shrinking: at 1000 px the toggle's label read "High con…".
    c1, c2, c3 = flow_columns([2, 2, 1.4], key="explorer_controls", min_width=[200, 200, 200], gap="small")
    c3.toggle(
        "High confidence only",
        key=ExplorerState.high_confidence.key,
        persist_state="session",
        on_change=_clear_selection,
        help="Only predictions with confidence p̂ ≥ 0.9 — confident yet fragile ones are the risky cases.",
    )
    c1.text_input(
        "Search (sample id or class)",
        key=ExplorerState.search.key,
        persist_state="session",
        on_change=_clear_selection,
        placeholder="e.g. 1234 or bad",
    )
    c2.selectbox(
        "Sort by",
        list(_SORTS),
        key=ExplorerState.sort.key,
        format_func=lambda k: _SORTS[k][0],
        persist_state="session",
        on_change=_clear_selection,
    )
    _, column, ascending = _SORTS[explorer_state().sort]
    pool = (
        frame[frame["high_confidence"]]
        if explorer_state().high_confidence and frame["high_confidence"].any()
        else frame
    )
    shown = pool.sort_values([column, "sample_id"], ascending=[ascending, True], kind="stable")
    query = explorer_state().search.strip().lower()
    if query:
        text = (
            shown["sample_id"].astype(str)
            + " "
            + shown["true_class"].astype(str)
            + " "
            + shown["predicted"].astype(str)
        ).str.lower()
        shown = shown[text.str.contains(query, regex=False)]
    if shown.empty:
        st.warning(
            f"No prediction matches {query!r}{' among the high-confidence ones' if len(pool) < len(frame) else ''}"
            "; clear the search to see a certificate.",
            icon=":material/search_off:",
        )
        return None
    visible = flip_budget_shown(shown.drop(columns="position"), depth=depth)
    table(
        visible,
        name="test predictions",
        key=ExplorerState.table.key,
        select=True,
        height=320,
        caption="Click a row to open its certificate. Brittle = broke under the held-out "
        "stressors (evaluation only). The CSV holds the rows as filtered.",
        column_config={
            "confidence": st.column_config.NumberColumn(format="%.3f"),
            "fds": st.column_config.NumberColumn("FDS", format="%.3f"),
            "rcma": st.column_config.NumberColumn("RCMA", format="%.3f"),
            "near_tie": st.column_config.CheckboxColumn(
                "Near-tie", help="The top two classes are all but tied: RCMA divides by almost nothing"
            ),
        },
    )
    apply_table_selection(ExplorerState.table.key, shown)
    if not sample_in(shown["sample_id"]):
        hidden = selected_sample()
        if hidden is not None and hidden in set(frame["sample_id"]):
            st.caption(f"Sample {hidden} (selected before) is outside this filter; showing the first match.")
        select_sample(shown.iloc[0]["sample_id"])
    return int(frame.index[frame["sample_id"] == selected_sample()][0])


def _flip_sets(result, cert, position: int, depth: int):
    """Greedy k* beside the exact and beam minimum flip sets (calls the model)."""
    search = _search(result.fingerprint, position, result)
    k_exact, k_beam = float(search.k_exact[0]), float(search.k_beam[0])

    def fmt(k: float) -> str:
        return flip_count_text(k, depth=depth)

    s = st.columns(3)
    s[0].metric("Greedy k*", fmt(float(cert.flip_budget)), help="Along the certificate's removal path")
    s[1].metric("Exact minimum", fmt(k_exact), help=f"All subsets up to size {depth} (cap {result.protocol.exact_cap})")
    s[2].metric(f"Beam search (width {result.protocol.beam_width})", fmt(k_beam))
    subsets = {"exact": search.subset_names("exact", 0), "beam": search.subset_names("beam", 0)}
    st.caption(
        " · ".join(f"{k} flipping set: {', '.join(v) if v else 'none within K'}" for k, v in subsets.items())
        + ". When exact < greedy, a smaller combination of groups flips the prediction than the path found."
    )
    return search


@st.fragment
def _whatif(result, cert, position: int, classes: list[str]) -> None:
    """Set groups to the baseline and see the live prediction: a fragment, so a toggle reruns
    only this panel (one batched ``predict_proba`` of two rows), not the whole certificate."""
    st.subheader("What if?")
    st.markdown("Set evidence groups to their baseline value and see the live prediction of the model.")
    left, right = flow_columns([3, 2], key="explorer_whatif_row", min_width=[340, 300])
    with left:
        if live_model(result, "The what-if", progress=False):  # the flip-set search shows the progress
            with guarded("What-if"):
                _whatif_live(result, cert, position, classes)
    with right:
        origins = feature_origins(result.preprocessor)
        table(
            raw_values_table(result.raw_test.loc[cert.index], result.groups, origins),
            name=f"sample {cert.index} raw values",
            key="explorer_raw",
            height=320,
            caption="Raw values of this sample (numbers rounded to 3 decimals; the CSV has the same text).",
        )


def _whatif_live(result, cert, position: int, classes: list[str]) -> None:
    """Toggles of evidence groups and the model's live prediction (calls the model)."""
    if explorer_state().whatif_sample != int(cert.index):
        # Toggles belong to one sample: carrying them to the next one would silently edit it.
        explorer_state().whatif_groups = []
        explorer_state().whatif_sample = int(cert.index)
    names = list(cert.group_names)
    if len(names) <= _MAX_PILLS:
        st.pills(
            "Groups set to the baseline",
            names,
            selection_mode="multi",
            key=ExplorerState.whatif_groups.key,
            persist_state="session",
        )
    else:
        # Hundreds of pills fill screens; a multiselect searches as one types. Path groups first.
        on_path = [g for g in cert.path if g in names]
        options = on_path + [g for g in names if g not in set(on_path)]
        st.multiselect(
            f"Groups set to the baseline (type to search {len(names)} groups)",
            options,
            key=ExplorerState.whatif_groups.key,
            persist_state="session",
            placeholder="Type a group name…",
            help="The groups on the removal path are listed first.",
        )
    chosen = [g for g in explorer_state().whatif_groups if g in cert.group_names]
    p0, p1 = whatif_probabilities(result, position, chosen)
    new_pred = classes[int(np.argmax(p1))]
    verdict = "unchanged" if int(np.argmax(p1)) == cert.pred else "**flipped**"
    st.markdown(
        f"What-if prediction: **{new_pred}** (P = {p1.max():.3f}) — {verdict}, with "
        f"{len(chosen)} group(s) at the baseline."
    )
    chart(
        vega_spec("whatif_spec", classes, p0, p1),
        "Grey: the model's probabilities for the original input; orange: with the selected groups removed.",
        key="explorer_whatif",
    )


def _body() -> None:
    result = current_audit()
    audit_line(result)
    _explore(result, prediction_table(result))


@st.fragment
def _explore(result, frame) -> None:
    """The sample table and the certificate of the chosen row: one fragment, so a row click (or
    a filter change) reruns this part only, not the sidebar, the audit look-up and the page
    header (the audit and its table are the arguments of the last full run). A fragment rerun
    does not pass through the page's :func:`run_page`, hence its own."""
    run_page(lambda: _certificate(result, frame), "Certificate explorer")


def _certificate(result, frame) -> None:
    position = _pick_sample(frame, result.certificates.depth)
    if position is None:
        return
    cert = result.certificates.certificate(position)
    row = frame.iloc[position]
    classes = [str(c) for c in result.dataset.classes]
    depth = result.certificates.depth

    st.subheader(f"Sample {cert.index}: predicted **{row['predicted']}** with confidence {cert.confidence:.3f}")
    m = flow_columns(6, key="explorer_metrics", min_width=130, gap="small")  # six 85 px metrics read "0.…"
    m[0].metric("True class", str(row["true_class"]))
    m[1].metric("FDS (risk)", f"{cert.fds:.3f}", help="1 − exp(−u); larger = more fragile")
    m[2].metric(
        "Flip budget k*",
        flip_budget_text(cert, depth),
        help="Groups removed along the greedy path until the prediction flips",
    )
    m[3].metric("RCMA (risk)", f"{cert.rcma:.3f}", help="Mean normalised margin loss along the path")
    m[4].metric("Margin m(x)", f"{cert.margin:.3f}", help="Centred pseudo-logit margin of the prediction, in nats")
    m[5].metric(
        "Held-out brittle",
        "yes" if row["brittle"] else "no",
        help="Evaluation label from the separate label channel; never used by the certificate",
    )
    tie = near_tie_note(cert.margin, cert.rcma)
    if tie:
        st.info(tie, icon=":material/balance:")

    certificate_figures(result, cert, key="explorer")
    with st.expander("Prediction after each removal, and the path's values beside their baseline"):
        evidence_tables(result, cert, key="explorer")

    st.subheader("Is the greedy path minimal?")
    search = None
    if live_model(result, "The exact / beam flip-set search"):
        with guarded("Flip-set search"):
            search = _flip_sets(result, cert, position, depth)

    _whatif(result, cert, position, classes)

    certificates = result.certificates
    # Built on click only (Streamlit calls it on the download): the bundle holds every trajectory
    # array, |Λ| × G margins per operator, which is large for wide tables.
    st.download_button(
        "Download this certificate (JSON)",
        lambda: json.dumps(sample_bundle(certificates, position, search=search), allow_nan=False, indent=1),
        file_name=f"certificate_{cert.index}_{result.fingerprint[:12]}.json",
        mime="application/json",
        icon=":material/download:",
        type="primary",
        on_click="ignore",
        key="explorer_download",
    )
    st.caption(
        f"Certificate fingerprint `{result.fingerprint}`. The file holds the protocol, groups, baseline and "
        "every trajectory array, and can be re-checked with `core.cfc.verify` against the model."
    )


def _certify_body() -> None:
    from ui.big_audit import big_explorer_page  # a certify folder of any size, queried out of core

    big_explorer_page()


run_page(_certify_body if certify_mode() else _body, "Certificate explorer")
