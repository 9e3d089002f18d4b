"""Triage queue: rank the predictions by a risk score, review the top of the list, keep decisions."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.views.ranking import (
    SCORES,
    UNREVIEWED,
    capture_curves,
    filter_queue,
    queue_guarantee,
    rank_queue,
    review_budget,
    score_summary,
)
from core.views.tabular import flip_budget_shown, prediction_table
from ui.audit_line import audit_line
from ui.certificate import certificate_panel, flip_budget_text, lambda_text
from ui.components import chart, guarded, page_header, run_page, vega_spec
from ui.data import current_audit
from ui.entry import ensure_entrypoint
from ui.layout import flow_columns
from ui.own_model import certify_mode
from ui.review import (
    agreement_panel,
    bulk_form,
    key_of,
    plan_form,
    prepare_case,
    queue_display,
    queue_filter,
    queue_table,
    review_panel,
    seed_reviewer,
    show_log_state,
    store,
    viewer,
)
from ui.selection import (
    apply_table_selection,
    open_in_explorer,
    sample_in,
    select_sample,
    selected_sample,
)
from ui.state import TriageState, triage_state

ensure_entrypoint()

page_header(
    "Triage queue",
    "Reviewers cannot look at every prediction. Rank them by a **risk score (larger = riskier)**, review "
    "the top **q %**, and record a decision for each case. The curves show how many of the held-out brittle "
    "predictions each score would put in front of a reviewer — the brittle labels come from a separate "
    "stress channel and are never used to compute the scores. Decisions are stored in the review database "
    "(sidebar) under the audit fingerprint, so they re-attach to the same predictions after a restart.",
)

_SCOPES = {"high-confidence": "High-confidence predictions (p̂ ≥ 0.9)", "all": "All test predictions"}
_BUDGETS = np.arange(1, 101) / 100


def _score_label(name: str) -> str:
    info = SCORES.get(name)
    return f"{name} — {info.orientation}" if info else name


def _case(frame, queue, shown) -> tuple[int, list[int]]:
    """The sample under review and the sample ids selected for a bulk decision.

    The case is the shared selection when it is in this audit (the first selected row of the
    queue table when the selection changes), else the queue's top.
    """
    rows = triage_state().table or {}
    rows = [r for r in list((rows.get("selection") or {}).get("rows") or []) if r < len(shown)]
    apply_table_selection(TriageState.table.key, shown)
    if not sample_in(frame["sample_id"]):
        select_sample(queue.iloc[0]["sample_id"])
    sample_id = selected_sample()
    if not sample_in(queue["sample_id"]):
        st.info(
            f"Sample {sample_id}, selected on another page, is not in this queue; it can be reviewed all the "
            "same. Select a row in the queue to review one of its cases.",
            icon=":material/info:",
        )
    return sample_id, [int(shown.iloc[r]["sample_id"]) for r in rows]


@st.fragment  # its own controls (drops shown, Open in explorer) rerun this panel only
def _evidence(result, frame, sample_id: int) -> None:
    """The certificate of the case under review, compactly, with a link to the full explorer."""
    position = int(frame.index[frame["sample_id"] == sample_id][0])
    cert = result.certificates.certificate(position)
    row = frame.iloc[position]
    depth = result.certificates.depth
    with st.expander(
        f"Evidence for sample {sample_id}: predicted {row['predicted']} (true class {row['true_class']})",
        expanded=True,
        icon=":material/troubleshoot:",
    ):
        m = flow_columns(4, key="triage_case_metrics", min_width=200, gap="small")
        m[0].metric("Confidence", f"{cert.confidence:.3f}")
        m[1].metric("FDS (risk)", f"{cert.fds:.3f}", help="1 − exp(−u); larger = more fragile")
        m[2].metric(
            "Flip budget k*",
            flip_budget_text(cert, depth),
            help="Groups removed along the greedy path until the prediction flips",
        )
        m[3].metric("RCMA (risk)", f"{cert.rcma:.3f}", help="Mean normalised margin loss along the path")
        st.caption(
            f"Removal path (most supportive group first): {' → '.join(cert.path)} · λ* per operator, the "
            f"first blend severity towards the baseline that flips the prediction: {lambda_text(cert)}."
        )
        if st.button(
            "Open in explorer",
            key="triage_open_explorer",
            icon=":material/open_in_new:",
            help="The full certificate of this sample: flip-set search, what-if, raw values, JSON.",
        ):
            open_in_explorer(sample_id, high_confidence=bool(row["high_confidence"]))
        certificate_panel(result, cert, key="triage")


@st.cache_resource(show_spinner=False, max_entries=64)
def _ranked(fingerprint: str, result_id: int, score: str, scope: str, *, _population):
    """The whole ranked population (budget 1), once per audit, score and scope: a budget's
    queue is its first ``k`` rows (:func:`_queue`), the order is not recomputed on every step
    of the slider."""
    return rank_queue(_population, "score_value", budget=1.0)


def _queue(ranked, budget: float):
    """``rank_queue(population, "score_value", budget=budget)``, sliced from the ranked whole."""
    return ranked.head(review_budget(budget, len(ranked))).copy()  # the cached whole stays intact


@st.cache_resource(show_spinner=False, max_entries=64)
def _curves(fingerprint: str, result_id: int, scope: str, *, _scores, _brittle):
    """Capture curves of every score over the 100 budgets (budget-independent)."""
    return capture_curves(_scores, _brittle, _BUDGETS)


def _body() -> None:
    result = current_audit()
    audit_line(result)
    show_log_state()
    _triage(result, prediction_table(result))


@st.fragment
def _triage(result, frame) -> None:
    """Everything below the audit line in one fragment: the budget slider, the score and scope,
    a queue row or a review button rerun this part only (not the sidebar and the audit
    look-up). A fragment rerun does not pass through the page's :func:`run_page`, hence its own."""
    run_page(lambda: _queue_and_review(result, frame), "Triage queue")


def _queue_and_review(result, frame) -> None:
    scores = result.scores.reset_index(drop=True)
    if triage_state().score not in scores.columns:
        triage_state().score = "fds"
    c1, c2, c3 = flow_columns([2, 2, 3], key="triage_controls", min_width=[300, 240, 240], gap="small")
    c1.selectbox(
        "Rank by",
        list(scores.columns),
        key=TriageState.score.key,
        format_func=_score_label,
        persist_state="session",
        help="Every score is oriented larger = riskier.",
    )
    c2.radio(
        "Ranked predictions", list(_SCOPES), key=TriageState.scope.key, format_func=_SCOPES.get, persist_state="session"
    )
    c3.slider(
        "Review budget (% of the ranked predictions)",
        1,
        50,
        key=TriageState.budget.key,
        format="%d%%",
        persist_state="session",
    )
    score, budget = triage_state().score, triage_state().budget / 100
    mask = (
        frame["high_confidence"].to_numpy() if triage_state().scope == "high-confidence" else np.ones(len(frame), bool)
    )
    if not mask.any():
        st.warning("No prediction reaches the high-confidence threshold; ranking all test predictions instead.")
        mask = np.ones(len(frame), bool)
    population = frame[mask].assign(score_value=scores[score].to_numpy()[mask])
    brittle = population["brittle"].to_numpy()
    scope = triage_state().scope if mask.sum() < len(mask) else "all"
    capture = _curves(result.fingerprint, id(result), scope, _scores=scores[mask], _brittle=brittle)
    curves, ceiling, random = capture.curves, capture.ceiling, capture.random
    queue = _queue(_ranked(result.fingerprint, id(result), score, scope, _population=population), budget)
    summary = score_summary(scores[mask], brittle, budget)
    guarantee = queue_guarantee(population["score_value"].to_numpy(), brittle, budget, score_name=score)
    c3.markdown(f"**Guarantee:** {guarantee.text}.", help=guarantee.detail)

    m = flow_columns(4, key="triage_metrics", min_width=200, gap="small")
    m[0].metric("Ranked predictions", f"{len(population):,}")
    m[1].metric(
        "Held-out brittle",
        f"{int(brittle.sum()):,}",
        help="Brittle under the held-out stressors, among the ranked predictions (evaluation label only)",
    )
    m[2].metric("Queue length", f"{len(queue):,}", help="k = max(1, round(q·n)) predictions to review")
    found, ceiling_here, ratio = summary.set_index("score").loc[score, ["capture", "ceiling", "capture_ratio"]]
    m[3].metric(
        f"Brittle found by {score}",
        "—" if np.isnan(found) else f"{found:.0%} of {ceiling_here:.0%} possible",
        help="Expected share of all brittle predictions inside the queue (ties at the cut-off prorated), and the "
        "best share any ranking could reach with this many reviews: min(1, queue length ÷ brittle)"
        + ("" if np.isnan(ratio) else f". {score} reaches {ratio:.0%} of that ceiling."),
    )

    chart(
        vega_spec(
            "coverage_spec",
            _BUDGETS,
            curves,
            ceiling=ceiling,
            random=random,
            selected=budget,
            highlight=score,
            title="Brittle predictions found within the budget",
            y_title="share of held-out brittle found (0–1)",
        ),
        "Higher is better: each line ranks the predictions by one score and counts the brittle ones in its "
        "top q. Dashed grey: the best possible ranking; dotted grey: picking at random.",
    )
    chart(
        vega_spec(
            "score_metrics_spec",
            summary.rename(columns={"capture": f"capture@{budget:.0%}"}),
            capture_column=f"capture@{budget:.0%}",
            highlight=score,
        ),
        "Left, AUROC: the chance that a brittle prediction outranks a sound one (0.5 = chance). Right: the "
        "share of brittle predictions inside the chosen budget. Orange = the score ranking the queue.",
    )

    st.subheader(f"Queue: top {len(queue)} by {score}")
    with guarded("Review database"):
        key = key_of(result)
        seed_reviewer()
        latest = store().latest(result.fingerprint, viewer=viewer())
        plan_form(key, [str(s) for s in queue["sample_id"]])
        agreement_panel(key)
        criteria = queue_filter(latest)
        decided = queue_display(queue, latest, key)
        shown = filter_queue(decided, latest, criteria)
        columns = [
            c
            for c in (
                "rank",
                "sample_id",
                "true_class",
                "predicted",
                "confidence",
                "fds",
                "flip_budget",
                "score_value",
                "brittle",
                "near_tie",
                "decision",
                "reviewer",
                "reasons",
                "note",
                "reviewed_at",
                "opinions",
                "state",
                "elsewhere",
            )
            if c in shown.columns
        ]
        if not decided["elsewhere"].astype(bool).any():
            columns.remove("elsewhere")
        value_name = "u (orders as FDS)" if score == "fds" else f"{score} (risk)"
        n_open = int((decided["decision"] == UNREVIEWED).sum())
        queue_table(
            flip_budget_shown(shown[columns].reset_index(drop=True), depth=result.certificates.depth),
            score_label=value_name,
            caption=f"{n_open} of {len(queue)} queued cases unreviewed"
            + (f"; the filter shows {len(shown)}" if criteria.active else "")
            + ". Select a row to review it below; select several for a bulk decision.",
        )
        if shown.empty:
            st.info("No queued case matches the filter.", icon=":material/filter_alt_off:")
        sample_id, chosen = _case(frame, queue, shown.reset_index(drop=True))
        prepare_case(key, sample_id, latest)
        if len(chosen) > 1:
            bulk_form(key, chosen)
        _evidence(result, frame, sample_id)
        review_panel(key, sample_id, queue, shown, noun="Sample", layout_key="triage_review_row")


def _certify_body() -> None:
    from ui.big_audit import big_triage_page  # a certify folder of any size, queried out of core

    big_triage_page()


run_page(_certify_body if certify_mode() else _body, "Triage queue")
