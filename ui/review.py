"""The reviewer's side of the Triage page: queue filters, the review form, bulk decisions.

State (``st.session_state``):

- ``review_reviewer`` — the reviewer's name; seeded once per session from the name remembered
  beside the database (:mod:`core.reviews.settings`) and remembered again on every change;
- ``review_decision`` / ``review_reasons`` / ``review_note`` — the form; when the case under
  review changes they are reset to the case's latest decision and reasons (none when
  unreviewed) and an empty note;
- ``review_token`` — one submission id per rendered form: a second click on the same rendered
  button carries the same id and the store appends nothing (:meth:`ReviewStore.record`).

The form is no ``st.form``: Enter in the reviewer field only commits the name, it never
submits a decision. Keyboard shortcuts (:mod:`ui.shortcuts`) click the keyed buttons:
Alt+1/2/3 pick a decision, Alt+S saves and moves to the next unreviewed case, Alt+N / Alt+P
move to the next / previous case of the shown queue.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from core.reviews import (
    DECISION_LABELS,
    DECISIONS,
    ENTRY_LABELS,
    REASONS,
    AuditKey,
    QueueFilter,
    ReviewStore,
    audit_key,
    next_unreviewed,
    reason_labels,
    remember_reviewer,
    remembered_reviewer,
    step_case,
)
from core.reviews.queue import UNREVIEWED, minutes
from ui.data import review_store
from ui.layout import flow_columns
from ui.selection import select_sample, selected_sample
from ui.shortcuts import shortcuts

#: Keyboard shortcut of every keyed control (:func:`ui.shortcuts.shortcuts`).
SHORTCUTS: dict[str, str] = {
    **{f"review_pick_{i}": f"alt+{i + 1}" for i in range(len(DECISIONS))},
    "review_save_next": "alt+s",
    "review_next": "alt+n",
    "review_previous": "alt+p",
}
_STATUS = {"all": "All cases", "unreviewed": "Unreviewed", "reviewed": "Reviewed"}
#: Display names of the queue table's columns (the data keeps its snake_case names).
COLUMN_LABELS = {
    "rank": "Rank",
    "sample_id": "Sample",
    "true_class": "True class",
    "predicted": "Predicted",
    "confidence": "Confidence",
    "fds": "FDS",
    "flip_budget": "k*",
    "brittle": "Held-out brittle",
    "decision": "Decision",
    "reviewer": "Reviewer",
    "reasons": "Reasons",
    "note": "Note",
    "reviewed_at": "Reviewed (UTC)",
    "elsewhere": "Decisions under other audits of this data",
}


def clear_table_selection() -> None:
    """Forget the queue table's row selection (after a filter change, a bulk decision, save & next)."""
    st.session_state.pop("triage_table", None)
    st.session_state.pop("_triage_table_applied", None)


@st.cache_resource(show_spinner=False, max_entries=32)
def _audit_key(fingerprint: str, result_id: int, _result) -> AuditKey:
    # Hashing the dataset costs ~0.5 s for 200,000 x 30 values: once per cached audit object.
    return audit_key(_result)


def key_of(result) -> AuditKey:
    """The :class:`AuditKey` of an audit (data fingerprint computed once per audit object)."""
    return _audit_key(result.fingerprint, id(result), result)


def _store() -> ReviewStore:
    return review_store(st.session_state["reviews_db"])


def seed_reviewer() -> None:
    """Once per session: start from the reviewer name remembered for this database."""
    if not st.session_state.get("_review_seeded"):
        st.session_state["_review_seeded"] = True
        if not st.session_state.get("review_reviewer"):
            st.session_state["review_reviewer"] = remembered_reviewer(st.session_state["reviews_db"])


def _remember() -> None:
    remember_reviewer(st.session_state["reviews_db"], st.session_state.get("review_reviewer") or "")


def _new_token() -> None:
    st.session_state["review_token"] = uuid.uuid4().hex


def prepare_case(key: AuditKey, sample_id: int, latest: pd.DataFrame) -> None:
    """Reset the form to the case's latest decision when the case under review changes."""
    case = (key.fingerprint, int(sample_id))
    if st.session_state.get("_review_case") == case:
        return
    st.session_state["_review_case"] = case
    row = latest[latest["sample_id"] == str(sample_id)]
    if len(row):
        st.session_state["review_decision"] = row.iloc[0]["decision"]
        st.session_state["review_reasons"] = [c for c in row.iloc[0]["reasons"].split(",") if c]
    else:
        st.session_state["review_decision"] = None
        st.session_state["review_reasons"] = []
    st.session_state["review_note"] = ""
    _new_token()


def queue_filter(latest: pd.DataFrame) -> QueueFilter:
    """The filter row above the queue (status, decision, reviewer, reason)."""
    # Two per row at 1000 px (four 100 px boxes cut "All cases" to "All case"), four at 1400 px.
    c = flow_columns([2, 3, 2, 3], key="review_filter_row", min_width=[170, 220, 170, 220], gap="small")
    clear = {"on_change": clear_table_selection, "persist_state": "session"}  # row positions change
    c[0].selectbox("Show", list(_STATUS), key="review_filter_status", format_func=_STATUS.get, **clear)
    c[1].multiselect(
        "Latest decision",
        list(DECISIONS),
        key="review_filter_decisions",
        format_func=DECISION_LABELS.get,
        placeholder="any decision",
        **clear,
    )
    # A chosen name stays an option after its last decision in force was retracted.
    names = sorted(set(latest["reviewer"]) | set(st.session_state.get("review_filter_reviewers") or ()))
    c[2].multiselect("Decided by", names, key="review_filter_reviewers", placeholder="anyone", **clear)
    c[3].multiselect(
        "Reason", list(REASONS), key="review_filter_reasons", format_func=REASONS.get, placeholder="any reason", **clear
    )
    return QueueFilter(
        st.session_state.get("review_filter_status") or "all",
        tuple(st.session_state.get("review_filter_decisions") or ()),
        tuple(st.session_state.get("review_filter_reviewers") or ()),
        tuple(st.session_state.get("review_filter_reasons") or ()),
    )


def _elsewhere(queue: pd.DataFrame, key: AuditKey) -> pd.Series:
    """Per queued case, its latest decisions under *other* audits of the same data."""
    empty = pd.Series("", index=queue.index)
    if not key.data_fingerprint:
        return empty
    across = _store().latest_across(key.data_fingerprint)
    across = across[across["audit_fingerprint"] != key.fingerprint]
    if across.empty:
        return empty
    text = across.assign(
        t=[
            f"{DECISION_LABELS[d]} ({m or 'audit ' + a[:8]})"
            for d, m, a in zip(across["decision"], across["model"], across["audit_fingerprint"])
        ]
    )
    joined = text.groupby("sample_id")["t"].agg("; ".join)
    return queue["sample_id"].map(str).map(joined).fillna("")


def queue_display(queue: pd.DataFrame, latest: pd.DataFrame, key: AuditKey) -> pd.DataFrame:
    """The queue with the latest decisions, shown with labels: "Unreviewed", minutes, reasons in words."""
    from core.views.ranking import attach_decisions

    latest_by = latest.set_index("sample_id")
    out = attach_decisions(queue, latest)
    keys = out["sample_id"].map(str)
    out["decision"] = out["decision"].fillna(UNREVIEWED)
    out["reviewer"] = out["reviewer"].fillna("")
    out["note"] = out["note"].fillna("")
    out["reasons"] = keys.map(latest_by["reasons"]).astype(object).fillna("").map(reason_labels)
    out["reviewed_at"] = minutes(out["reviewed_at"]).fillna("")
    out["elsewhere"] = _elsewhere(out, key)
    return out


def queue_table(shown: pd.DataFrame, *, score_label: str, caption: str) -> list[int]:
    """The queue as a multi-row-selectable table; returns the selected row positions."""
    from core.views.formatting import display_frame

    labels = {**COLUMN_LABELS, "score_value": score_label}
    config = {c: st.column_config.Column(labels[c]) for c in shown.columns if c in labels}
    config["confidence"] = st.column_config.NumberColumn("Confidence", format="%.3f")
    config["fds"] = st.column_config.NumberColumn("FDS", format="%.3f")
    config["score_value"] = st.column_config.NumberColumn(score_label, format="%.4g")
    event = st.dataframe(
        display_frame(shown),
        key="triage_table",
        on_select="rerun",
        selection_mode="multi-row",
        hide_index=True,
        column_config=config,
        height=300,
        width="stretch",
    )
    st.caption(caption)
    st.download_button(
        "CSV",
        shown.to_csv(index=False).encode("utf-8"),
        file_name="triage_queue.csv",
        mime="text/csv",
        key="dl_triage_table",
        on_click="ignore",
        icon=":material/download:",
        help=f"Download the shown queue ({len(shown):,} rows) with the latest decisions as CSV",
        type="tertiary",
    )
    rows = list(((event or {}).get("selection") or {}).get("rows") or []) if event is not None else []
    return [r for r in rows if r < len(shown)]


# ---------------------------------------------------------------------------------------------
def _flash(kind: str, text: str) -> None:
    st.session_state["review_flash"] = (kind, text)


def _save(key: AuditKey, sample_id: int, token: str, order: Sequence[int], then_next: bool) -> None:
    """Submit callback (runs before the rerun, so it may reset the widgets)."""
    store = _store()
    decision, reasons = st.session_state.get("review_decision"), list(st.session_state.get("review_reasons") or [])
    note, who = st.session_state.get("review_note") or "", st.session_state.get("review_reviewer") or ""
    fingerprint = (key.fingerprint, int(sample_id), decision, tuple(reasons), note.strip(), who.strip())
    if st.session_state.get("_review_last_saved") == fingerprint:
        # Identical to this session's previous save, with nothing stored or undone since: the same
        # click delivered twice (a double click racing the rerun), not a new decision.
        _flash("success", f"Already saved: sample {sample_id} — {DECISION_LABELS[decision]} by {who.strip()}.")
        return
    try:
        review = store.record(
            key, sample_id, reviewer=who, decision=decision, note=note, reasons=reasons, submission_id=token
        )
    except ValueError as exc:
        if decision is None and who.strip():
            _flash("error", "Decision not saved: choose a decision first (Alt+1, Alt+2 or Alt+3).")
        else:
            _flash("error", f"Decision not saved: {exc}")
        return
    st.session_state["_review_last_saved"] = fingerprint
    _remember()
    st.session_state["review_note"] = ""
    _new_token()
    text = f"Saved: sample {review.sample_id} — {DECISION_LABELS[review.decision]} by {review.reviewer}."
    if then_next:
        reviewed = set(store.latest(key.fingerprint)["sample_id"])
        target = next_unreviewed([str(s) for s in order], reviewed, str(sample_id))
        if target is None:
            text += " Every case of the queue is reviewed."
        else:
            select_sample(int(target))
            clear_table_selection()
            text += f" Next unreviewed: sample {target}."
    _flash("success", text)


def _retract(key: AuditKey, sample_id: int, token: str) -> None:
    try:
        review = _store().retract(
            key,
            sample_id,
            reviewer=st.session_state.get("review_reviewer") or "",
            note=st.session_state.get("review_note") or "",
            submission_id=f"retract-{token}",
        )
    except ValueError as exc:
        _flash("error", f"Nothing retracted: {exc}")
        return
    st.session_state.pop("_review_last_saved", None)
    _remember()
    latest = _store().latest(key.fingerprint, [sample_id])
    st.session_state.pop("_review_case", None)  # the form takes the case's new latest decision
    now = (
        f"its latest decision is again {DECISION_LABELS[latest.iloc[0]['decision']]}"
        if len(latest)
        else "it is unreviewed again"
    )
    _flash("success", f"Retracted decision #{review.retracts} of sample {sample_id}; {now}.")


def _pick(decision: str) -> None:
    st.session_state["review_decision"] = decision


def _move(order: Sequence[int], delta: int) -> None:
    target = step_case(list(order), selected_sample(), delta)
    if target is not None:
        select_sample(target)


def _bulk(key: AuditKey, sample_ids: Sequence[int], token: str) -> None:
    try:
        stored = _store().record_many(
            key,
            list(sample_ids),
            reviewer=st.session_state.get("review_reviewer") or "",
            decision=st.session_state.get("review_bulk_decision"),
            reasons=list(st.session_state.get("review_bulk_reasons") or []),
            note=st.session_state.get("review_bulk_note") or "",
            submission_id=f"bulk-{token}",
        )
    except ValueError as exc:
        _flash("error", f"Bulk decision not saved: {exc}")
        return
    st.session_state.pop("_review_last_saved", None)
    _remember()
    st.session_state["review_bulk_note"] = ""
    st.session_state.pop("_review_case", None)
    clear_table_selection()
    _new_token()
    _flash(
        "success",
        f"Saved {DECISION_LABELS[stored[0].decision]} for {len(stored)} cases "
        f"({', '.join(r.sample_id for r in stored)}) by {stored[0].reviewer}.",
    )


def _shortcuts() -> None:
    # The decision buttons are clicked by their shortcuts only; the radio shows the choice.
    st.html("<style>.st-key-review_keys {display: none;}</style>")
    shortcuts(SHORTCUTS)


def review_form(key: AuditKey, sample_id: int, *, queue_order: Sequence[int], shown_order: Sequence[int]) -> None:
    """The review form of one case: reviewer, decision, reasons, note, save / save & next / undo."""
    token = st.session_state["review_token"]
    st.text_input(
        "Reviewer",
        key="review_reviewer",
        placeholder="your name",
        on_change=_remember,
        help="Remembered for this review database (also after a restart).",
    )
    st.radio(
        "Decision",
        DECISIONS,
        key="review_decision",
        format_func=lambda d: f"{DECISION_LABELS[d]}  (Alt+{DECISIONS.index(d) + 1})",
        help="Starts on the case's latest decision; none for an unreviewed case.",
    )
    with st.container(key="review_keys"):
        for i, decision in enumerate(DECISIONS):
            st.button(DECISION_LABELS[decision], key=f"review_pick_{i}", on_click=_pick, args=(decision,))
    st.multiselect(
        "Reasons",
        list(REASONS),
        key="review_reasons",
        format_func=REASONS.get,
        placeholder="structured reasons (any number)",
    )
    st.text_area("Note", key="review_note", placeholder="why — what did you check?", height=80)
    # Rows that wrap instead of columns that shrink: in a 210 px form the labels read "Save d…"
    # and "Save &…", and the navigation buttons lost their text.
    b = flow_columns([1, 1], key="review_save_row", min_width=[130, 170], gap="small")
    b[0].button(
        "Save decision",
        type="secondary",
        key="review_save",
        on_click=_save,
        args=(key, sample_id, token, list(queue_order), False),
        width="stretch",
    )
    b[1].button(
        "Save & next (Alt+S)",
        type="primary",
        key="review_save_next",
        on_click=_save,
        args=(key, sample_id, token, list(queue_order), True),
        width="stretch",
        help="Save, then open the next unreviewed case in queue order (wrapping to the top).",
    )
    n = flow_columns(3, key="review_nav_row", min_width=[150, 130, 140], gap="small")
    n[0].button(
        "Previous (Alt+P)",
        key="review_previous",
        on_click=_move,
        args=(list(shown_order), -1),
        width="stretch",
        icon=":material/arrow_back:",
    )
    n[1].button(
        "Next (Alt+N)",
        key="review_next",
        on_click=_move,
        args=(list(shown_order), 1),
        width="stretch",
        icon=":material/arrow_forward:",
    )
    n[2].button(
        "Retract latest",
        key="review_retract",
        on_click=_retract,
        args=(key, sample_id, token),
        width="stretch",
        icon=":material/undo:",
        help="Undo: appends a 'retracted' entry; the case's latest decision becomes the previous one "
        "(or none). Nothing is deleted.",
    )
    _shortcuts()


def bulk_form(key: AuditKey, sample_ids: Sequence[int]) -> None:
    """One decision for every selected row of the queue (one transaction)."""
    token = st.session_state["review_token"]
    with st.container(border=True):
        st.markdown(
            f"**Bulk decision for the {len(sample_ids)} selected cases** "
            f"({', '.join(str(s) for s in sample_ids[:12])}{' …' if len(sample_ids) > 12 else ''})"
        )
        c = flow_columns([2, 3, 3, 2], key="review_bulk_row", min_width=[200, 220, 200, 160], gap="small")
        c[0].selectbox("Decision", DECISIONS, key="review_bulk_decision", format_func=DECISION_LABELS.get)
        c[1].multiselect("Reasons", list(REASONS), key="review_bulk_reasons", format_func=REASONS.get)
        c[2].text_input("Note", key="review_bulk_note")
        c[3].button(
            f"Apply to {len(sample_ids)} cases",
            key="review_bulk_apply",
            type="primary",
            on_click=_bulk,
            args=(key, list(sample_ids), token),
            width="stretch",
        )


def history_panel(key: AuditKey, sample_id: int) -> None:
    """Every entry about the case, under this audit and under other audits of the same data."""
    store = _store()
    frames = [store.history(key.fingerprint, sample_id)]
    if key.data_fingerprint:
        frames.append(store.history_across(key.data_fingerprint, sample_id))
    history = pd.concat(frames).drop_duplicates("review_id").sort_values("review_id")
    audit = [
        ("this audit" if a == key.fingerprint else f"{m or 'model ?'} · protocol {p[:8] or '?'}")
        for a, m, p in zip(history["audit_fingerprint"], history["model"], history["protocol_fingerprint"])
    ]
    shown = pd.DataFrame(
        {
            "created_at": minutes(history["created_at"]).to_numpy(),
            "reviewer": history["reviewer"].to_numpy(),
            "decision": [
                ENTRY_LABELS[d] + (f" #{int(r)}" if d == "retracted" else "")
                for d, r in zip(history["decision"], history["retracts"])
            ],
            "reasons": history["reasons"].map(reason_labels).to_numpy(),
            "note": history["note"].to_numpy(),
            "audit": audit,
            "entry": history["review_id"].to_numpy(),
        }
    )
    others = int((history["audit_fingerprint"] != key.fingerprint).sum())
    st.markdown(
        f"**History of sample {sample_id}** ({len(history)} entries, newest last"
        + (f"; {others} under other audits of the same data" if others else "")
        + ")"
    )
    st.dataframe(
        shown,
        key="triage_history",
        hide_index=True,
        height=200,
        width="stretch",
        column_config={
            "created_at": st.column_config.Column("When (UTC)"),
            "reviewer": "Reviewer",
            "decision": "Decision",
            "reasons": "Reasons",
            "note": "Note",
            "audit": st.column_config.Column("Made under"),
            "entry": st.column_config.NumberColumn("Entry #", format="%d"),
        },
    )
