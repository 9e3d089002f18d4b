"""A ``certify`` output folder of any size on the Overview, Explorer and Triage pages.

Opened with ``--audit DIR`` or from the audits folder (*Open a saved audit*), it is the source
``{"kind": "certify", "path": DIR}`` of ``own_model_state().audit``
(:func:`ui.own_model.certify_mode`); pages import this module only then (or for a large upload's
panel), so it is no first-screen import. The folder is checked once
per server and change of its files (:func:`core.views.big_audit.open_certify_folder`, cached);
every widget then asks :mod:`core.views.big_audit` for one page, one queue or one row, which
reads the partitioned Parquet out of core: the table itself never enters the server's memory.

The review flow is :mod:`ui.review`'s, unchanged: decisions are keyed by the certificates'
fingerprint and the input row number (the sample id).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from core.reviews.permissions import check
from core.reviews.store import AuditKey
from core.views.big_audit import (
    QUEUE_SCORES,
    CertifyResults,
    big_audit_key,
    big_overview,
    big_report_html,
    class_names,
    explorer_page,
    filters_from_form,
    locate_input,
    model_text,
    open_certify_folder,
    page_columns,
    recompute_row,
    row_certificate,
    run_is_live,
    status_text,
    triage_queue,
)
from core.views.formatting import display_frame
from core.views.ranking import SCORES, UNREVIEWED, filter_queue
from core.views.tabular import flip_budget_shown
from ui.auth import current_access
from ui.certificate import certificate_figures
from ui.layout import flow_columns
from ui.review import (
    agreement_panel,
    bulk_form,
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
from ui.selection import apply_table_selection, select_sample, selected_sample
from ui.state import BigAuditState, TriageState, big_audit_state, own_model_state, triage_state

if TYPE_CHECKING:  # the planner is imported by the panel of a large upload only
    from core.scale.upload_certify import UploadCertifyPlan

__all__ = [
    "certify_upload_panel",
    "big_explorer_page",
    "big_overview_page",
    "big_triage_page",
    "current_big_audit",
]

PAGE_SIZE = 50
_LABELS = {
    "row": "Row",
    "label": "True class",
    "pred_label": "Predicted",
    "correct": "Correct",
    "confidence": "Confidence",
    "margin": "Margin",
    "flip_budget": "k*",
    "fds": "FDS",
    "rcma": "RCMA",
    "u": "u",
    "in_fit_sample": "In the fitting sample",
}
_SCOPES = {"high-confidence": "High-confidence predictions (p̂ ≥ 0.9)", "all": "All held-out predictions"}


def _stamp(path: Path) -> str:
    """Changes whenever the run records a partition or finishes (the folder is then re-checked)."""
    names = ("_manifest.json", ".progress.jsonl", "_summary.json", ".lock")
    stats = [(path / n).stat() if (path / n).exists() else None for n in names]
    return ":".join(f"{s.st_mtime_ns}-{s.st_size}" if s else "-" for s in stats)


@st.cache_resource(show_spinner="Checking the certify run…", max_entries=4)
def _results(path: str, stamp: str) -> CertifyResults:
    try:
        return open_certify_folder(path)
    except ValueError as exc:  # the folder by its name only: the server's folders are not shown
        raise ValueError(str(exc).replace(str(Path(path)), Path(path).name)) from None


def current_big_audit() -> CertifyResults:
    """The open certify folder, checked (raises a ValueError naming a part that disagrees)."""
    path = Path(own_model_state().audit["path"])
    return _results(str(path), _stamp(path))


def _audit_line(results: CertifyResults) -> None:
    st.caption(
        f"Audit: **certify run {results.path.name}** ({results.n_rows:,} rows) · {model_text(results)} · "
        f"certificate fingerprint `{results.fingerprint[:16]}…` — change it under *Your model* in the sidebar."
    )
    if not results.complete:
        st.warning(status_text(results), icon=":material/hourglass_top:")


# -- Overview ---------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Totalling every row…", max_entries=4)
def _overview(path: str, stamp: str, *, _results: CertifyResults):
    return big_overview(_results)


def big_overview_page() -> None:
    """The Overview of the open certify folder: every row's totals, distributions, the report."""
    results = current_big_audit()
    _audit_line(results)
    view = _overview(str(results.path), _stamp(results.path), _results=results)
    s = view.summary
    m = flow_columns(4, key="big_overview_metrics", min_width=200, gap="small")
    m[0].metric("Rows certified", f"{view.n_rows:,}", help="Every row of the input table, one certificate each")
    m[1].metric("Held-out rows", f"{s.get('n_held_out', 0):,}", help="Rows not in the model's fitting sample")
    accuracy = s.get("accuracy")
    m[2].metric("Accuracy (held-out)", "—" if accuracy is None else f"{accuracy:.1%}")
    m[3].metric(
        "High-confidence and k* ≤ 2",
        f"{s.get('high_confidence_brittle', 0):,}",
        help="Held-out predictions with confidence ≥ 0.9 that flip after removing at most two groups",
    )
    if view.n_rows == 0:
        st.info("No partition of this run is finished yet.", icon=":material/hourglass_empty:")
        return
    left, right = flow_columns(2, key="big_overview_charts", min_width=320)
    with left:
        st.markdown("**Flip budget k\\*** (held-out rows; smaller = more fragile)")
        st.bar_chart(view.flip_budget, x="k*", y="rows", height=260)
    with right:
        st.markdown("**FDS** (held-out rows; larger = more fragile)")
        bins = view.fds_histogram.assign(FDS=[f"{lo:.2f}" for lo in view.fds_histogram["low"]])
        st.bar_chart(bins, x="FDS", y="rows", height=260)
    st.markdown("**Per true class** (held-out rows)")
    st.dataframe(display_frame(view.classes), hide_index=True, width="stretch")
    st.download_button(
        "Report of every row (HTML)",
        lambda: big_report_html(results).encode("utf-8"),
        file_name=f"{results.path.name}_report.html",
        mime="text/html",
        icon=":material/download:",
        on_click="ignore",
        key="big_report",
        help="Totals, distributions, per class and the riskiest rows, over every row shown",
    )


# -- Explorer ---------------------------------------------------------------------------------
def _certificate(results: CertifyResults, row: int, *, key: str) -> None:
    cert = row_certificate(results, row)
    v = cert.values
    m = flow_columns(4, key=f"{key}_metrics", min_width=200, gap="small")
    m[0].metric("Confidence", f"{v['confidence']:.3f}")
    m[1].metric("FDS (risk)", f"{v['fds']:.3f}", help="1 − exp(−u); larger = more fragile")
    m[2].metric("Flip budget k*", cert.flip_budget_text, help="Groups removed along the greedy path until it flips")
    m[3].metric("RCMA (risk)", f"{v['rcma']:.3f}", help="Mean normalised margin loss along the path")
    truth = v.get("label")
    st.caption(
        f"Row {row}: predicted **{v['pred_label']}**"
        + (f", true class **{truth}**" if truth is not None else "")
        + (" · in the model's fitting sample" if v.get("in_fit_sample") else "")
        + ". From the trajectory certify stored: the original class's margin after each removal "
        "(most supportive group first), and λ* per operator (inf = no flip)."
    )
    left, right = flow_columns([3, 2], key=f"{key}_trajectory", min_width=[320, 260])
    with left:
        st.line_chart(cert.steps, x="step", y="margin", height=240)
    with right:
        st.dataframe(display_frame(cert.steps), hide_index=True, width="stretch", height=240)
    st.dataframe(display_frame(cert.lambdas), hide_index=True)
    if key == "big_explorer":
        _recomputed(results, row)


@st.cache_resource(show_spinner=False, max_entries=8)
def _input(path: str, stamp: str, *, _results: CertifyResults):
    return locate_input(_results)


@st.cache_resource(show_spinner="Certifying the row again with the run's model…", max_entries=32)
def _recompute(path: str, stamp: str, row: int, data: str, *, _results: CertifyResults):
    return recompute_row(_results, row, data=data)


@dataclass(frozen=True)
class _Classes:
    """What :func:`ui.certificate.certificate_figures` reads of an audit: its class labels."""

    classes: tuple[str, ...]

    @property
    def dataset(self) -> _Classes:
        return self


def _recomputed(results: CertifyResults, row: int) -> None:
    """The row's full certificate, recomputed on demand from the input table and ``_task.zip``."""
    stamp = _stamp(results.path)
    data = _input(str(results.path), stamp, _results=results)
    if data is None:
        names = ", ".join(f["name"] for f in (results.config.get("data") or {}).get("files", []))
        st.caption(
            f"The full certificate (operator curves, one-step drops) is recomputed from the input table ({names}); "
            "it is not beside this run, so only the stored trajectory is shown."
        )
        return
    state = big_audit_state()
    if state.recomputed != row:
        st.button(
            "Recompute with the run's model",
            key="big_recompute",
            icon=":material/refresh:",
            help="Certifies this row again from the input table with the saved model: the operator curves and the "
            "one-step drops of every group, and a check of the stored values.",
            on_click=lambda: setattr(state, "recomputed", row),
        )
        return
    again = _recompute(str(results.path), stamp, row, str(data), _results=results)
    worst = max(again.differences.values())
    st.caption(
        f"Recomputed from {data.name} with the run's model: "
        + (
            "equal to the stored certificate."
            if worst == 0
            else f"largest difference from the stored values {worst:.3g}."
        )
    )
    certificate_figures(_Classes(tuple(again.classes)), again.certificate, key="big_full_certificate")
    st.dataframe(display_frame(pd.DataFrame([again.raw])), hide_index=True)


def _first_page() -> None:
    big_audit_state().page = 1


def _go_to_row() -> None:
    row = big_audit_state().goto
    if row is not None:
        select_sample(int(row))


def big_explorer_page() -> None:
    """The Explorer of the open certify folder: every row, sorted, filtered and paged."""
    results = current_big_audit()
    _audit_line(results)
    state = big_audit_state()
    columns = page_columns(results)
    classes = class_names(results)
    # A new filter or order starts on its first page (the old page number may not exist in it).
    first = {"on_change": _first_page}
    f = flow_columns([3, 3, 2, 2], key="big_filters", min_width=[200, 200, 140, 160], gap="small")
    f[0].multiselect("True class", classes, key=BigAuditState.true_classes.key, placeholder="any", **first)
    f[1].multiselect("Predicted", classes, key=BigAuditState.predicted.key, placeholder="any", **first)
    f[2].selectbox("Correct", ["any", "yes", "no"], key=BigAuditState.correct.key, **first)
    f[3].checkbox("Held-out rows only", key=BigAuditState.held_out.key, **first)
    g = flow_columns([2, 2, 3, 2], key="big_sorting", min_width=[160, 160, 200, 140], gap="small")
    g[0].number_input("Confidence at least", 0.0, 1.0, step=0.05, key=BigAuditState.min_confidence.key, **first)
    g[1].number_input("k* at most (0 = any)", 0, 1000, step=1, key=BigAuditState.max_flip_budget.key, **first)
    if state.sort not in columns:
        state.sort = "row"
    g[2].selectbox("Sort by", columns, key=BigAuditState.sort.key, format_func=lambda c: _LABELS.get(c, c), **first)
    g[3].toggle("Descending", key=BigAuditState.descending.key, **first)
    filters = filters_from_form(
        results,
        true_classes=state.true_classes,
        predicted=state.predicted,
        correct=state.correct,
        held_out_only=state.held_out,
        min_confidence=state.min_confidence or None,
        max_flip_budget=state.max_flip_budget or None,
    )
    page = explorer_page(
        results,
        sort=state.sort,
        descending=state.descending,
        filters=filters,
        page=max(0, int(state.page) - 1),
        page_size=PAGE_SIZE,
    )
    shown = page.frame
    state.page = page.page + 1  # the page shown (the last, when the number asked is past it)
    st.dataframe(
        display_frame(shown.rename(columns=_LABELS)),
        key=BigAuditState.table.key,
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        height=420,
    )
    p = flow_columns([1, 1, 3], key="big_pager", min_width=[140, 160, 300], gap="small")
    p[0].number_input("Page", 1, page.pages, key=BigAuditState.page.key)
    p[1].number_input(
        "Open row number",
        0,
        max(results.n_rows - 1, 0),
        key=BigAuditState.goto.key,
        placeholder="any row",
        on_change=_go_to_row,
        help="The certificate of any row of the input, whatever the filters and the page.",
    )
    p[2].caption(
        f"Page {page.page + 1:,} of {page.pages:,} · {page.total:,} of {results.n_rows:,} rows match "
        f"· sorted by {_LABELS.get(state.sort, state.sort)}{' (descending)' if state.descending else ''}. "
        "Select a row to open its certificate."
    )
    apply_table_selection(BigAuditState.table.key, shown, id_column="row")
    current = selected_sample()
    if current is None or not 0 <= current < results.n_rows:
        if shown.empty:
            st.info("No row matches the filters.", icon=":material/filter_alt_off:")
            return
        select_sample(int(shown.iloc[0]["row"]))
    st.subheader(f"Certificate of row {selected_sample():,}")
    _certificate(results, selected_sample(), key="big_explorer")


# -- Triage -----------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Ranking every row…", max_entries=16)
def _queue(path: str, stamp: str, score: str, scope: str, length: int, *, _results: CertifyResults) -> pd.DataFrame:
    return triage_queue(_results, score=score, length=length, high_confidence_only=scope == "high-confidence")


def _score_label(name: str) -> str:
    info = SCORES.get(name)
    return f"{name} — {info.orientation}" if info else name


def big_triage_page() -> None:
    """The Triage queue of the open certify folder: the top of every row by a risk score, and the
    review flow of :mod:`ui.review`."""
    results = current_big_audit()
    _audit_line(results)
    show_log_state()
    if results.n_rows == 0:
        st.info("No partition of this run is finished yet.", icon=":material/hourglass_empty:")
        return
    if triage_state().score not in QUEUE_SCORES:
        triage_state().score = "fds"
    c = flow_columns([2, 2, 2], key="big_triage_controls", min_width=[300, 240, 200], gap="small")
    c[0].selectbox(
        "Rank by", list(QUEUE_SCORES), key=TriageState.score.key, format_func=_score_label, help="Larger = riskier."
    )
    c[1].radio("Ranked predictions", list(_SCOPES), key=TriageState.scope.key, format_func=_SCOPES.get)
    c[2].number_input("Queue length", 10, 10_000, step=10, key=BigAuditState.queue_length.key)
    score = triage_state().score
    queue = _queue(
        str(results.path),
        _stamp(results.path),
        score,
        triage_state().scope,
        int(big_audit_state().queue_length),
        _results=results,
    ).copy()  # the cached queue stays intact whatever the review flow adds to it
    if queue.empty:
        st.info("No held-out prediction in this scope.", icon=":material/filter_alt_off:")
        return
    st.subheader(f"Queue: top {len(queue):,} of {results.n_rows:,} rows by {score}")
    st.caption(
        "Held-out brittle labels (the capture curves) come from the audit's separate stress channel, which a "
        "certify run does not compute; the queue ranks every row by the chosen certificate score."
    )
    key = AuditKey(**big_audit_key(results))
    seed_reviewer()
    latest = store().latest(key.fingerprint, viewer=viewer())
    plan_form(key, [str(s) for s in queue["sample_id"]])
    agreement_panel(key)
    criteria = queue_filter(latest)
    decided = queue_display(queue, latest, key)
    shown = filter_queue(decided, latest, criteria)
    wanted = (
        "rank",
        "sample_id",
        "true_class",
        "predicted",
        "confidence",
        "fds",
        "flip_budget",
        "score_value",
        "decision",
        "reviewer",
        "reasons",
        "note",
        "reviewed_at",
        "opinions",
        "state",
        "elsewhere",
    )
    columns = [c for c in wanted if c in shown.columns]
    if not decided["elsewhere"].astype(bool).any():
        columns.remove("elsewhere")
    n_open = int((decided["decision"] == UNREVIEWED).sum())
    shown = shown.reset_index(drop=True)
    depth = results.depth()
    queue_table(
        flip_budget_shown(shown[columns], depth=depth),
        score_label="u (orders as FDS)" if score == "fds" else f"{score} (risk)",
        caption=f"{n_open} of {len(queue)} queued cases unreviewed"
        + (f"; the filter shows {len(shown)}" if criteria.active else "")
        + ". Select a row to review it below; select several for a bulk decision.",
    )
    if shown.empty:
        st.info("No queued case matches the filter.", icon=":material/filter_alt_off:")
    selection = triage_state().table or {}
    chosen = [r for r in list((selection.get("selection") or {}).get("rows") or []) if r < len(shown)]
    apply_table_selection(TriageState.table.key, shown)
    current = selected_sample()
    if current is None or not 0 <= current < results.n_rows:
        select_sample(queue.iloc[0]["sample_id"])
    sample_id = selected_sample()
    if sample_id not in set(queue["sample_id"].tolist()):
        st.info(
            f"Row {sample_id}, selected on another page, is not in this queue; it can be reviewed all the same. "
            "Select a row in the queue to review one of its cases.",
            icon=":material/info:",
        )
    prepare_case(key, sample_id, latest)
    if len(chosen) > 1:
        bulk_form(key, [int(shown.iloc[r]["sample_id"]) for r in chosen])
    with st.expander(f"Evidence for row {sample_id:,}", expanded=True, icon=":material/troubleshoot:"):
        _certificate(results, sample_id, key="big_triage")
    review_panel(key, sample_id, queue, shown, noun="Row", layout_key="big_review_row")


# -- Certify every row of a large upload ------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _children() -> dict:
    """The certify processes this server started, by output folder (polled, so none lingers as a
    zombie once it exits)."""
    return {}


def _running_here(plan: UploadCertifyPlan) -> bool:
    child = _children().get(str(plan.out))
    return child is not None and child.poll() is None


def _start(plan: UploadCertifyPlan, data: bytes, actor) -> None:
    """Button callback: start (or resume) the run and open its result once it is complete."""
    from core.scale.upload_certify import start

    check(actor, "run", what=f"certifying every row of {plan.name}")
    check(actor, "save", what=f"{plan.name} in the shared audits folder")
    if not _running_here(plan) and not run_is_live(plan.out):
        _children()[str(plan.out)] = start(plan, data)
    big_audit_state().open_when_done = plan.name


def _open(plan: UploadCertifyPlan) -> None:
    big_audit_state().open_when_done = None
    own_model_state().audit = {"kind": "certify", "path": str(plan.out)}


@st.fragment(run_every=1.0)
def _progress(plan: UploadCertifyPlan) -> None:
    """The run's progress, read from its folder every second; the app reruns once it is over."""
    from core.scale.upload_certify import progress

    done = progress(plan)
    if _running_here(plan) or run_is_live(plan.out):
        stage = f"{done.rows_done:,} of {done.rows:,} rows" if done.started else "fitting the model"
        st.progress(done.fraction, text=f"Certifying every row: {stage}")
        return
    if done.complete and big_audit_state().open_when_done == plan.name:
        _open(plan)
    st.rerun(scope="app")


def certify_upload_panel(upload, rows: int, *, model: str, seed: int, protocol) -> None:
    """Offer to certify every row of a large upload in the background, show its progress, and open
    the result when it is complete (the certify engine, locally or on the configured Dask cluster)."""
    from core.scale.upload_certify import plan_upload_certify, progress

    st.subheader("Certify every row")
    access = current_access()
    root = Path(own_model_state().audits_dir)
    scheduler = big_audit_state().scheduler or None
    try:
        plan = plan_upload_certify(
            upload.data,
            upload.file,
            root,
            target=upload.target,
            rows=rows,
            model=model,
            seed=seed,
            protocol=protocol,
            blocks=dict(upload.blocks.mapping) if upload.blocks else None,
            scheduler=scheduler,
            digest=upload.digest,
        )
    except ValueError as exc:  # a table certify cannot read (e.g. compressed): the command lines above
        st.info(str(exc), icon=":material/info:")
        return
    where = "on the Dask cluster" if scheduler else "on this machine"
    st.caption(
        f"Certificates of all {rows:,} rows with the certify engine, {where}, in the background: the model "
        f"({model}, seed {seed}, this protocol) is fitted on the first {plan.fit_rows:,} rows, then every row is "
        "certified in partitions of bounded memory. The run is saved in the audits folder as "
        f"**{plan.name}**: it resumes where it stopped if it is interrupted, and the Overview, Explorer and "
        "Triage pages then show every row."
    )
    done = progress(plan)
    if done.complete and big_audit_state().open_when_done == plan.name:  # finished while away
        _open(plan)
        st.rerun()
    if done.complete:
        st.success(f"All {rows:,} rows are certified.", icon=":material/task_alt:")
        st.button("Open the certified table", key="big_open_certified", type="primary", on_click=_open, args=(plan,))
        return
    if _running_here(plan) or run_is_live(plan.out):
        _progress(plan)
        st.caption("The pages open it by themselves when it is done; the other pages stay usable meanwhile.")
        return
    refused = next((action for action in ("run", "save") if not access.may(action)), None)
    if refused is not None:  # it runs a model and saves the result in the shared audits folder
        st.caption(f"Starting it needs the {access.needs(refused)} role (you are a {access.role}).")
        return
    if done.error:
        st.error(
            f"**The last run stopped:** {done.error.replace(str(root), 'the audits folder')}",
            icon=":material/error:",
        )
    label = (
        f"Resume: {done.rows_done:,} of {rows:,} rows are done"
        if done.rows_done
        else f"Certify all {rows:,} rows in the background"
    )
    st.button(
        label,
        key="big_certify_start",
        icon=":material/play_arrow:",
        on_click=_start,
        args=(plan, upload.data, access.actor),
    )
