"""The reviewer's side of the Triage page: queue filters, the review form, bulk decisions, and
the admin's review plan, agreement figures and adjudication queue.

Who decides comes from :mod:`ui.auth`: in team mode the signed-in user (no name is typed) with
the role the team file gives them; in local mode a typed name. Every read and write goes
through :func:`store`, a :class:`~core.reviews.ReviewStore` opened with the server's team, so
the roles are enforced by the store, not by which widgets are drawn.

State (:class:`ui.state.ReviewState`, by session key):

- ``review_reviewer`` — local mode only: the reviewer's name; seeded once per session from the
  name remembered beside the database (:mod:`core.reviews.settings`) and remembered again on
  every change;
- ``review_decision`` / ``review_reasons`` / ``review_note`` — the form; when the case under
  review changes they are reset to the case's latest decision and reasons (none when
  unreviewed) and an empty note;
- ``review_token`` — one submission id per rendered form: a second click on the same rendered
  button carries the same id and the store appends nothing (:meth:`ReviewStore.record`);
- ``review_bulk_decision`` / ``review_bulk_reasons`` / ``review_bulk_note`` — the bulk form (no
  decision chosen at first: nothing is applied until one is);
- ``review_plan_per_case`` / ``review_plan_assign`` / ``review_plan_reviewers`` — the admin's
  plan form; ``adjudicate_decision`` / ``adjudicate_note`` — the adjudication form.

The form is no ``st.form``: Enter in the reviewer field only commits the name, it never
submits a decision. Keyboard shortcuts (:mod:`ui.shortcuts`) click the keyed buttons:
Alt+1/2/3 pick a decision, Alt+S saves and moves to the next unreviewed case, Alt+N / Alt+P
move to the next / previous case of the shown queue.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from core.csv_safe import csv_bytes
from core.exceptions import UndefinedMetricWarning
from core.reviews import (
    CASE_STATES,
    DECISION_LABELS,
    DECISIONS,
    ENTRY_LABELS,
    REASONS,
    AccessRefused,
    AuditKey,
    QueueFilter,
    ReviewStore,
    Team,
    User,
    audit_key,
    case_states,
    next_unreviewed,
    reason_labels,
    remember_reviewer,
    remembered_reviewer,
    step_case,
)
from core.reviews.backend import display_name, is_url
from core.reviews.chain import KEY_ENV_VAR
from core.reviews.maintenance import verify_log
from core.reviews.queue import UNREVIEWED, minutes
from ui.auth import current_access, server_team
from ui.layout import flow_columns
from ui.selection import select_sample, selected_sample
from ui.shortcuts import shortcuts
from ui.state import Flash, ReviewState, TriageState, applied_selection, review_state, shared_state, triage_state

#: Keys of the buttons the keyboard shortcuts click (each button is created with its key here).
PICK_KEYS = tuple(f"review_pick_{i}" for i in range(len(DECISIONS)))
SAVE_NEXT_KEY, NEXT_KEY, PREVIOUS_KEY = "review_save_next", "review_next", "review_previous"
#: The hidden container of the pick buttons (clicked by their shortcuts only).
_PICK_BOX = "review_keys"
#: Keyboard shortcut of every keyed control (:func:`ui.shortcuts.shortcuts`).
SHORTCUTS: dict[str, str] = {
    **{k: f"alt+{i + 1}" for i, k in enumerate(PICK_KEYS)},
    SAVE_NEXT_KEY: "alt+s",
    NEXT_KEY: "alt+n",
    PREVIOUS_KEY: "alt+p",
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
    "near_tie": "Near-tie",
    "decision": "Decision",
    "reviewer": "Reviewer",
    "reasons": "Reasons",
    "note": "Note",
    "reviewed_at": "Reviewed (UTC)",
    "elsewhere": "Decisions under other audits of this data",
    "opinions": "Reviewers",
    "state": "Review state",
}


def clear_table_selection() -> None:
    """Forget the queue table's row selection (after a filter change, a bulk decision, save & next)."""
    del triage_state().table
    applied_selection(TriageState.table.key).clear()


@st.cache_resource(show_spinner=False, max_entries=32)
def _audit_key(fingerprint: str, result_id: int, _result) -> AuditKey:
    # Hashing the dataset costs ~0.5 s for 200,000 x 30 values: once per cached audit object.
    return audit_key(_result)


def key_of(result) -> AuditKey:
    """The :class:`AuditKey` of an audit (data fingerprint computed once per audit object)."""
    return _audit_key(result.fingerprint, id(result), result)


@dataclass(frozen=True)
class LogState:
    """Whether the review log verified, and the sentence that says so."""

    ok: bool
    text: str


@st.cache_resource(show_spinner=False, max_entries=8)
def _open_store(path: str, team_id: int, _team: Team | None) -> ReviewStore:
    _adopt_secret_key()
    store = ReviewStore(path, team=_team)
    _log_state(path)  # the log is verified when the server first opens it
    return store


@st.cache_resource(show_spinner=False)
def _adopt_secret_key() -> None:
    """The review log's key from ``[reviews] key`` in the secrets file, for every core path of
    this server (the store, the verification, the report), unless ``AUDIT_REVIEWS_KEY`` is set."""
    if os.environ.get(KEY_ENV_VAR):
        return
    try:
        key = st.secrets.get("reviews", {}).get("key") if st.secrets.load_if_toml_exists() else None
    except Exception:  # an unreadable secrets file: Streamlit reports it itself
        key = None
    if key:
        os.environ[KEY_ENV_VAR] = str(key)


@st.cache_resource(show_spinner=False, max_entries=8)
def _log_state(path: str) -> LogState:
    """The review log's verification, once per server and database (an O(entries) walk)."""
    name = display_name(path, short=True)
    try:
        found = verify_log(path)
    except ValueError as exc:  # signed but no key here, not a review database, too old...
        if "unreachable" in str(exc):
            raise  # a server down for a moment: not remembered, verified again once it is back
        text = str(exc).replace(display_name(path), name)
        return LogState(False, text if is_url(path) else text.replace(str(Path(path).expanduser()), name))
    if found.ok:
        return LogState(True, found.summary[0].upper() + found.summary[1:] + ".")
    return LogState(
        False,
        f"The review log of {name} failed its verification: {found.problem}. Decisions shown may have been "
        "changed outside this tool: ask the administrator to restore the latest backup.",
    )


def show_log_state() -> None:
    """The review log's state, for the Triage page: a caption when verified, an error otherwise."""
    path = shared_state().reviews_db
    if not path or not (is_url(path) or Path(path).expanduser().is_file()):
        return
    try:
        state = _log_state(path)
    except ValueError as exc:  # the review database's server is unreachable (core.reviews.postgres)
        st.error(str(exc).replace(display_name(path), display_name(path, short=True)))
        return
    (st.caption if state.ok else st.error)(state.text)


def store() -> ReviewStore:
    """The review store of this server, opened with its team (one object per database and team file)."""
    team = server_team()
    return _open_store(shared_state().reviews_db, id(team), team)


def viewer() -> User | None:
    """The reader passed to every store read: the signed-in user in team mode, None in local mode."""
    return current_access().user


def who() -> User | str:
    """Who writes: the signed-in user in team mode, the typed reviewer name in local mode."""
    access = current_access()
    return access.user if access.team_mode else (review_state().reviewer or "")


def _who_text() -> str:
    actor = who()
    return actor.label if isinstance(actor, User) else actor.strip()


def seed_reviewer() -> None:
    """Once per session (local mode): start from the reviewer name remembered for this database."""
    if current_access().team_mode:
        return
    if not review_state().seeded_reviewer:
        review_state().seeded_reviewer = True
        if not review_state().reviewer:
            review_state().reviewer = remembered_reviewer(shared_state().reviews_db)


def _remember() -> None:
    if not current_access().team_mode:
        remember_reviewer(shared_state().reviews_db, review_state().reviewer or "")


def _new_token() -> None:
    review_state().token = uuid.uuid4().hex


def prepare_case(key: AuditKey, sample_id: int, latest: pd.DataFrame) -> None:
    """Reset the form to the case's latest decision when the case under review changes (in team
    mode: the signed-in reviewer's own decision in force on it)."""
    case = (key.fingerprint, int(sample_id))
    if review_state().case == case:
        return
    review_state().case = case
    access = current_access()
    if access.team_mode:
        mine = store().history(key.fingerprint, sample_id, viewer=access.user)
        mine = mine[(mine["reviewer_email"] == access.user.email) & (mine["kind"] == "review")]
        cancelled = set(mine["retracts"].dropna().astype(int))
        latest = mine[(mine["decision"] != "retracted") & ~mine["review_id"].isin(cancelled)].tail(1)
    row = latest[latest["sample_id"] == str(sample_id)]
    if len(row):
        review_state().decision = row.iloc[0]["decision"]
        review_state().reasons = [c for c in row.iloc[0]["reasons"].split(",") if c]
    else:
        review_state().decision = None
        review_state().reasons = []
    review_state().note = ""
    _new_token()


def queue_filter(latest: pd.DataFrame) -> QueueFilter:
    """The filter row above the queue (status, decision, reviewer, reason)."""
    # Two per row at 1000 px (four 100 px boxes cut "All cases" to "All case"), four at 1400 px.
    c = flow_columns([2, 3, 2, 3], key="review_filter_row", min_width=[170, 220, 170, 220], gap="small")
    clear = {"on_change": clear_table_selection, "persist_state": "session"}  # row positions change
    c[0].selectbox("Show", list(_STATUS), key=ReviewState.filter_status.key, format_func=_STATUS.get, **clear)
    c[1].multiselect(
        "Latest decision",
        list(DECISIONS),
        key=ReviewState.filter_decisions.key,
        format_func=DECISION_LABELS.get,
        placeholder="any decision",
        **clear,
    )
    # A chosen name stays an option after its last decision in force was retracted.
    names = sorted(set(latest["reviewer"]) | set(review_state().filter_reviewers or ()))
    c[2].multiselect("Decided by", names, key=ReviewState.filter_reviewers.key, placeholder="anyone", **clear)
    c[3].multiselect(
        "Reason",
        list(REASONS),
        key=ReviewState.filter_reasons.key,
        format_func=REASONS.get,
        placeholder="any reason",
        **clear,
    )
    return QueueFilter(
        review_state().filter_status or "all",
        tuple(review_state().filter_decisions or ()),
        tuple(review_state().filter_reviewers or ()),
        tuple(review_state().filter_reasons or ()),
    )


def _elsewhere(queue: pd.DataFrame, key: AuditKey) -> pd.Series:
    """Per queued case, its latest decisions under *other* audits of the same data."""
    empty = pd.Series("", index=queue.index)
    if not key.data_fingerprint:
        return empty
    across = store().latest_across(key.data_fingerprint, viewer=viewer(), audit=key.fingerprint)
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
    plan = store().current_plan(key.fingerprint)
    if plan.double or current_access().team_mode:
        states = case_states(
            store().ratings(key.fingerprint, viewer=viewer()),
            latest[latest["kind"] == "adjudication"],  # what this reader may see (blind reviewers: their cases)
            reviewers_per_case=plan.reviewers_per_case,
        )
        out["opinions"] = keys.map(states["opinions"]).fillna(0).astype(int)
        out["state"] = keys.map(states["state"]).astype(object).where(keys.isin(states.index), "open").map(CASE_STATES)
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
        key=TriageState.table.key,
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
        csv_bytes(shown, index=False),
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
    review_state().flash = Flash(kind=kind, message=text)


def _attempt(what: str, call):
    """Run one store write; when the store refuses it (role, input), say so after ``what`` and return None."""
    try:
        return call()
    except AccessRefused as exc:
        _flash("error", f"{what}: {exc} Your role is {exc.role}.")
    except ValueError as exc:
        _flash("error", f"{what}: {exc}")
    return None


def _save(key: AuditKey, sample_id: int, token: str, order: Sequence[int], then_next: bool) -> None:
    """Submit callback (runs before the rerun, so it may reset the widgets)."""
    decision, reasons = review_state().decision, list(review_state().reasons or [])
    note, actor = review_state().note or "", who()
    fingerprint = (key.fingerprint, int(sample_id), decision, tuple(reasons), note.strip(), _who_text())
    if review_state().last_saved == fingerprint:
        # Identical to this session's previous save, with nothing stored or undone since: the same
        # click delivered twice (a double click racing the rerun), not a new decision.
        _flash("success", f"Already saved: sample {sample_id} — {DECISION_LABELS[decision]} by {_who_text()}.")
        return
    if decision is None and _who_text():
        _flash("error", "Decision not saved: choose a decision first (Alt+1, Alt+2 or Alt+3).")
        return
    review = _attempt(
        "Decision not saved",
        lambda: store().record(
            key, sample_id, reviewer=actor, decision=decision, note=note, reasons=reasons, submission_id=token
        ),
    )
    if review is None:
        return
    review_state().last_saved = fingerprint
    _remember()
    review_state().note = ""
    _new_token()
    text = f"Saved: sample {review.sample_id} — {DECISION_LABELS[review.decision]} by {review.reviewer}."
    if then_next:
        ids = [str(s) for s in order]
        waiting = set(store().to_review(key.fingerprint, ids, reviewer=actor))
        target = next_unreviewed(ids, set(ids) - waiting, str(sample_id))
        if target is None:
            text += " No case of the queue is waiting for you any more."
        else:
            select_sample(int(target))
            clear_table_selection()
            text += f" Next case waiting for you: sample {target}."
    _flash("success", text)


def _retract(key: AuditKey, token: str) -> None:
    """Undo the reviewer's latest saved decision in this audit, whichever case it was on."""
    review = _attempt(
        "Nothing retracted",
        lambda: store().retract(key, reviewer=who(), note=review_state().note or "", submission_id=f"retract-{token}"),
    )
    if review is None:
        return
    del review_state().last_saved
    _remember()
    del review_state().case  # the form takes the case's new latest decision
    select_sample(int(review.sample_id))  # show the case whose decision was undone
    latest = store().latest(key.fingerprint, [review.sample_id], viewer=viewer())
    now = (
        f"its decision is again {DECISION_LABELS[latest.iloc[0]['decision']]}"
        if len(latest)
        else "it is unreviewed again"
    )
    _flash("success", f"Retracted your decision #{review.retracts} on sample {review.sample_id}; {now}.")
    _new_token()


def _pick(decision: str) -> None:
    review_state().decision = decision


def _move(order: Sequence[int], delta: int) -> None:
    target = step_case(list(order), selected_sample(), delta)
    if target is not None:
        select_sample(target)


def _bulk(key: AuditKey, sample_ids: Sequence[int], token: str) -> None:
    decision = review_state().bulk_decision
    if decision is None:  # the button is disabled then; a stale click still records nothing
        _flash("error", "Bulk decision not saved: choose a decision first.")
        return
    stored = _attempt(
        "Bulk decision not saved",
        lambda: store().record_many(
            key,
            list(sample_ids),
            reviewer=who(),
            decision=decision,
            reasons=list(review_state().bulk_reasons or []),
            note=review_state().bulk_note or "",
            submission_id=f"bulk-{token}",
            skip_identical=True,
        ),
    )
    if stored is None:
        return
    del review_state().last_saved
    _remember()
    del review_state().case
    clear_table_selection()
    _new_token()
    label = DECISION_LABELS[decision]
    same = len(sample_ids) - len(stored)
    if not stored:
        _flash(
            "success",
            f"Nothing new recorded: all {len(sample_ids)} cases already carry {label} by you, with these reasons and note.",
        )
        return
    _flash(
        "success",
        f"Saved {label} for {len(stored)} cases ({', '.join(r.sample_id for r in stored)}) by {stored[0].reviewer}"
        + (f"; {same} already carried this decision and were left as they were." if same else "."),
    )


def _shortcuts() -> None:
    # The decision buttons are clicked by their shortcuts only; the radio shows the choice.
    st.html(f"<style>.st-key-{_PICK_BOX} {{display: none;}}</style>")
    shortcuts(SHORTCUTS)


def _may_decide(key: AuditKey, sample_id: int) -> str:
    """Why the visitor may not decide this case ("" when they may)."""
    access = current_access()
    if not access.team_mode:
        return ""
    if not access.can("reviewer"):
        return f"You are a {access.role}: you can read the queue, the evidence and the decisions, not decide."
    plan = store().current_plan(key.fingerprint)
    if plan.assigned:
        table = store().assignments(key.fingerprint)
        mine = table[table["reviewer_email"] == access.user.email]
        if str(sample_id) not in set(mine["sample_id"]):
            owners = ", ".join(table.loc[table["sample_id"] == str(sample_id), "reviewer_email"]) or "nobody"
            return f"Sample {sample_id} is assigned to {owners}, not to you; you have {len(mine)} assigned cases."
    return ""


def review_form(key: AuditKey, sample_id: int, *, queue_order: Sequence[int], shown_order: Sequence[int]) -> None:
    """The review form of one case: reviewer, decision, reasons, note, save / save & next / undo.

    A viewer (and a reviewer on a case assigned to someone else) gets no decision control,
    only the navigation.
    """
    token = review_state().token
    access = current_access()
    refusal = _may_decide(key, sample_id)
    if access.team_mode:
        st.caption(f"Deciding as **{access.user.label}** ({access.role}).")
    else:
        st.text_input(
            "Reviewer",
            key=ReviewState.reviewer.key,
            placeholder="your name",
            on_change=_remember,
            help="Remembered for this review database (also after a restart).",
        )
    if refusal:
        st.info(refusal, icon=":material/visibility:")
    else:
        st.radio(
            "Decision",
            DECISIONS,
            key=ReviewState.decision.key,
            format_func=lambda d: f"{DECISION_LABELS[d]}  (Alt+{DECISIONS.index(d) + 1})",
            help="Starts on your decision in force on this case; none when you have not decided it.",
        )
        with st.container(key=_PICK_BOX):
            for i, decision in enumerate(DECISIONS):
                st.button(DECISION_LABELS[decision], key=PICK_KEYS[i], on_click=_pick, args=(decision,))
        st.multiselect(
            "Reasons",
            list(REASONS),
            key=ReviewState.reasons.key,
            format_func=REASONS.get,
            placeholder="structured reasons (any number)",
        )
        st.text_area("Note", key=ReviewState.note.key, placeholder="why — what did you check?", height=80)
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
            key=SAVE_NEXT_KEY,
            on_click=_save,
            args=(key, sample_id, token, list(queue_order), True),
            width="stretch",
            help="Save, then open the next case in queue order still waiting for your decision (wrapping to the top).",
        )
    n = flow_columns(3, key="review_nav_row", min_width=[150, 130, 170], gap="small")
    n[0].button(
        "Previous (Alt+P)",
        key=PREVIOUS_KEY,
        on_click=_move,
        args=(list(shown_order), -1),
        width="stretch",
        icon=":material/arrow_back:",
    )
    n[1].button(
        "Next (Alt+N)",
        key=NEXT_KEY,
        on_click=_move,
        args=(list(shown_order), 1),
        width="stretch",
        icon=":material/arrow_forward:",
    )
    if access.can("reviewer"):
        actor = who()
        undoable = store().retractable(key.fingerprint, reviewer=actor) if _who_text() else None
        n[2].button(
            f"Retract my latest (sample {undoable.sample_id})" if undoable is not None else "Retract my latest",
            key="review_retract",
            on_click=_retract,
            args=(key, token),
            width="stretch",
            icon=":material/undo:",
            disabled=undoable is None,
            help="Undo your latest saved decision in this audit, whichever case it was on: appends a 'retracted' "
            "entry, and that case's decision becomes the previous one (or none). Nothing is deleted."
            if undoable is not None
            else "Nothing to undo: you have no saved decision in force in this audit.",
        )
    if not refusal:
        _shortcuts()


def bulk_form(key: AuditKey, sample_ids: Sequence[int]) -> None:
    """One decision for every selected row of the queue (one transaction); none chosen at first."""
    if not current_access().can("reviewer"):
        return
    token = review_state().token
    with st.container(border=True):
        st.markdown(
            f"**Bulk decision for the {len(sample_ids)} selected cases** "
            f"({', '.join(str(s) for s in sample_ids[:12])}{' …' if len(sample_ids) > 12 else ''})"
        )
        c = flow_columns([2, 3, 3, 2], key="review_bulk_row", min_width=[200, 220, 200, 160], gap="small")
        c[0].selectbox(
            "Decision",
            DECISIONS,
            key=ReviewState.bulk_decision.key,
            format_func=DECISION_LABELS.get,
            placeholder="choose a decision",
        )
        c[1].multiselect("Reasons", list(REASONS), key=ReviewState.bulk_reasons.key, format_func=REASONS.get)
        c[2].text_input("Note", key=ReviewState.bulk_note.key)
        chosen = review_state().bulk_decision
        c[3].button(
            f"Apply to {len(sample_ids)} cases",
            key="review_bulk_apply",
            type="primary",
            on_click=_bulk,
            args=(key, list(sample_ids), token),
            width="stretch",
            disabled=chosen is None,
            help="Choose a decision first." if chosen is None else None,
        )


def history_panel(key: AuditKey, sample_id: int) -> None:
    """Every entry about the case, under this audit and under other audits of the same data."""
    reader = viewer()
    frames = [store().history(key.fingerprint, sample_id, viewer=reader)]
    if key.data_fingerprint:
        frames.append(store().history_across(key.data_fingerprint, sample_id, viewer=reader, audit=key.fingerprint))
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
                ENTRY_LABELS[d]
                + (f" #{int(r)}" if d == "retracted" else "")
                + (" (adjudication)" if k == "adjudication" else "")
                for d, r, k in zip(history["decision"], history["retracts"], history["kind"])
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


# ---------------------------------------------------------------------------------------------
# The admin's side (team mode): the review plan, agreement, adjudication
def _plan(key: AuditKey, queue_ids: Sequence[str]) -> None:
    assign = bool(review_state().plan_assign)
    plan = _attempt(
        "Plan not saved",
        lambda: store().plan(
            key,
            list(queue_ids) if assign else [],
            admin=who(),
            reviewers_per_case=int(review_state().plan_per_case or 1),
            reviewers=list(review_state().plan_reviewers or []) or None,
            assign=assign,
        ),
    )
    if plan is None:
        return
    _flash("success", f"Plan saved: {plan_text(plan)}.")


def plan_text(plan) -> str:
    """The plan in words."""
    per = (
        "one reviewer per case"
        if plan.reviewers_per_case == 1
        else f"{plan.reviewers_per_case} reviewers per case, blind"
    )
    if not plan.assigned:
        return f"{per}; no assignment (every reviewer may decide every case)"
    return f"{per}; {plan.n_cases} queued cases assigned round-robin to {', '.join(plan.reviewers)}"


def plan_form(key: AuditKey, queue_ids: Sequence[str]) -> None:
    """Reviewers per case and round-robin assignment of the queued cases (admins only)."""
    access = current_access()
    if not (access.team_mode and access.can("admin")):
        return
    plan = store().current_plan(key.fingerprint)
    with st.expander(f"Review plan — {plan_text(plan)}", icon=":material/group:"):
        options = list(access.team.with_role("reviewer", "admin"))
        if not review_state().plan_reviewers:
            review_state().plan_reviewers = list(plan.reviewers) or list(access.team.with_role("reviewer"))
        c = flow_columns([1, 1, 3], key="review_plan_row", min_width=[160, 200, 260], gap="small")
        c[0].number_input(
            "Reviewers per case", min_value=1, max_value=max(1, len(options)), key=ReviewState.plan_per_case.key
        )
        c[1].toggle("Assign the queued cases", key=ReviewState.plan_assign.key, help="Round-robin in queue order.")
        c[2].multiselect("Deal the cases to", options, key=ReviewState.plan_reviewers.key)
        st.button(
            f"Apply the plan to the {len(queue_ids)} queued cases",
            key="review_plan_apply",
            on_click=_plan,
            args=(key, list(queue_ids)),
            icon=":material/assignment_ind:",
            help="Stored as a new plan (the previous ones stay in the history). With assignment, a reviewer "
            "decides only on their cases; with two or more reviewers per case they do not see each other's "
            "decisions on a case before recording their own.",
        )


def _kappa_text(value: float) -> str:
    return "undefined" if np.isnan(value) else f"{value:.3f}"


def agreement_panel(key: AuditKey) -> None:
    """Cohen's kappa per pair and Fleiss' kappa, with their case counts (not for blind reviewers)."""
    from core.reviews import agreement

    access = current_access()
    plan = store().current_plan(key.fingerprint)
    if access.team_mode and access.role == "reviewer" and plan.double:
        return  # aggregate figures over cases a blind reviewer has not decided would leak their outcome
    ratings = store().ratings(key.fingerprint, viewer=viewer())
    if ratings.empty or ratings.groupby("sample_id")["rater"].nunique().max() < 2:
        if plan.double:
            st.caption("Agreement: no case has two reviewers' decisions yet.")
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        result = agreement(ratings)
    st.markdown("**Agreement between reviewers** (kappa: 1 = perfect, 0 = chance level)")
    m = flow_columns(3, key="review_agreement_metrics", min_width=180, gap="small")
    m[0].metric(
        "Fleiss' kappa (all reviewers)",
        _kappa_text(result.fleiss),
        help=f"On the {result.fleiss_cases} cases decided by exactly {result.raters_per_case} reviewers.",
    )
    m[1].metric("Cases with two or more decisions", f"{result.multi_rated}")
    m[2].metric("Disagreements", f"{result.disagreements}")
    if len(result.pairs):
        st.dataframe(
            result.pairs.assign(kappa=result.pairs["kappa"].map(_kappa_text)),
            hide_index=True,
            key="review_agreement_pairs",
            column_config={
                "rater_a": "Reviewer",
                "rater_b": "Reviewer",
                "cases": st.column_config.NumberColumn("Cases (both decided)", format="%d"),
                "agreed": st.column_config.NumberColumn("Same decision", format="%d"),
                "kappa": "Cohen's kappa",
            },
        )
    for w in caught:
        if issubclass(w.category, UndefinedMetricWarning):
            st.caption(str(w.message))


def _adjudicate(key: AuditKey, sample_id: int, token: str) -> None:
    decision = review_state().adjudicate_decision
    if decision is None:
        _flash("error", "Not adjudicated: choose the final decision first.")
        return
    review = _attempt(
        "Not adjudicated",
        lambda: store().adjudicate(
            key,
            sample_id,
            reviewer=who(),
            decision=decision,
            note=review_state().adjudicate_note or "",
            submission_id=f"adjudicate-{token}",
        ),
    )
    if review is None:
        return
    review_state().adjudicate_decision = None
    review_state().adjudicate_note = ""
    del review_state().case
    _new_token()
    _flash(
        "success", f"Adjudicated sample {review.sample_id}: {DECISION_LABELS[review.decision]} is its final decision."
    )


def adjudication_panel(key: AuditKey, sample_id: int) -> None:
    """The adjudication queue (cases whose reviewers disagree) and the final decision on the case
    under review (admins only)."""
    access = current_access()
    if not (access.team_mode and access.can("admin")):
        return
    plan = store().current_plan(key.fingerprint)
    ratings = store().ratings(key.fingerprint, viewer=access.user)
    states = case_states(ratings, store().adjudications(key.fingerprint), reviewers_per_case=plan.reviewers_per_case)
    waiting = states[states["state"] == "disagreement"]
    st.markdown(f"**Adjudication queue** — {len(waiting)} case(s) whose reviewers disagree")
    if len(waiting):
        table = waiting.reset_index()[["sample_id", "decisions"]]
        event = st.dataframe(
            table,
            key="adjudication_table",
            on_select="rerun",
            selection_mode="single-row",
            hide_index=True,
            column_config={"sample_id": "Sample", "decisions": "Reviewers' decisions"},
        )
        rows = list(((event or {}).get("selection") or {}).get("rows") or [])
        if rows and rows[0] < len(table) and str(table.iloc[rows[0]]["sample_id"]) != str(sample_id):
            select_sample(int(table.iloc[rows[0]]["sample_id"]))
            st.rerun(scope="fragment")
    mine = ratings[ratings["sample_id"] == str(sample_id)]
    if mine.empty:
        return
    state = states["state"].get(str(sample_id), "open")
    with st.container(border=True, key="adjudicate_box"):
        st.markdown(
            f"**Final decision on sample {sample_id}** ({CASE_STATES[state].lower()}; reviewers: "
            + "; ".join(f"{r} — {DECISION_LABELS[d]}" for r, d in zip(mine["reviewer"], mine["decision"]))
            + ")"
        )
        c = flow_columns([3, 3, 2], key="adjudicate_row", min_width=[200, 200, 150], gap="small")
        c[0].selectbox(
            "Final decision",
            DECISIONS,
            key=ReviewState.adjudicate_decision.key,
            format_func=DECISION_LABELS.get,
            placeholder="choose the final decision",
        )
        c[1].text_input("Note", key=ReviewState.adjudicate_note.key, placeholder="why")
        c[2].button(
            "Adjudicate",
            key="adjudicate_apply",
            type="primary",
            on_click=_adjudicate,
            args=(key, sample_id, review_state().token),
            disabled=review_state().adjudicate_decision is None,
            width="stretch",
        )


def export_button(key: AuditKey) -> None:
    """The CSV of every entry of this audit (admins only in team mode: it shows every decision)."""
    access = current_access()
    if access.team_mode and not access.can("admin"):
        return
    everything = store().export(audit_fingerprint=key.fingerprint, viewer=access.user)
    st.download_button(
        f"Export all {len(everything)} entries of this audit (CSV)",
        csv_bytes(everything, index=False),
        file_name=f"reviews_{key.fingerprint[:12]}.csv",
        mime="text/csv",
        icon=":material/download:",
        on_click="ignore",
        key="triage_export_reviews",
    )


def review_panel(
    key: AuditKey, sample_id: int, queue: pd.DataFrame, shown: pd.DataFrame, *, noun: str, layout_key: str
) -> None:
    """The review of one case: the last save's message, the decision form beside the case's history
    and the export, then adjudication. ``queue`` / ``shown``: the whole queue and its shown rows
    (their ``sample_id`` order drives Alt+S / Alt+N / Alt+P); ``noun``: what a case is called
    ("Sample", "Row"); ``layout_key``: the key of its columns."""
    st.subheader("Review")
    flash, review_state().flash = review_state().flash, None
    if flash:
        (st.success if flash.kind == "success" else st.error)(flash.message)
    # Stacked below about 750 px of page width: beside the history the form was 210 px wide.
    left, right = flow_columns([2, 3], key=layout_key, min_width=[340, 380])
    with left:
        st.markdown(
            f"**{noun} {sample_id}** — Alt+1/2/3 pick a decision, Alt+S saves and opens the next "
            "unreviewed case, Alt+N / Alt+P step through the shown queue."
        )
        with st.container(border=True):
            review_form(
                key,
                sample_id,
                queue_order=[int(s) for s in queue["sample_id"]],
                shown_order=[int(s) for s in shown["sample_id"]],
            )
    with right:
        history_panel(key, sample_id)
        export_button(key)
    adjudication_panel(key, sample_id)
