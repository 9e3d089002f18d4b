"""Paired bounds: what an evaluation can claim when clean and perturbed records are not paired."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.views.bounds import (
    COVERAGES,
    LAMBDAS,
    PolicyReport,
    cell_intervals,
    cell_policies,
    computed_grid,
    development_thresholds_of,
    five_state_table,
    load_precomputed_grid,
    records_digest,
    stored_cell_policies,
    unpaired_cell_intervals,
    unpaired_threshold,
)
from core.views.paired import (
    CellChoices,
    GridOverview,
    cell_choices,
    evaluation_cell,
    grid_summary,
    model_threshold,
    policy_comparison,
    tau_text,
    unpaired_class_summary,
)
from core.views.uploads import UPLOAD_LIMIT_MB, FilesUpload
from ui.audit_jobs import AuditJob, foreground_wait_s, job_for, progress_panel
from ui.auth import current_access
from ui.components import cached_figure, chart, figure, guarded, page_header, run_page, table, vega_spec
from ui.entry import ensure_entrypoint
from ui.layout import flow_columns
from ui.paired_data import PairedData, paired_data
from ui.state import PairedBoundsState, paired_bounds_state

ensure_entrypoint()

page_header(
    "Paired bounds",
    "A robustness evaluation often keeps the clean and the perturbed results in separate tables. Without "
    "knowing which perturbed record belongs to which clean one, many quantities are only **partially "
    "identified**: every pairing consistent with what is known gives a value, and the bar shows their range. "
    "**I0** knows both sides' records, **Ik** also the number of records correct on both sides per class, "
    "**I5** all five state counts per class (h harmful flip, r correction, s same wrong label, w changed "
    "wrong label, k correct on both). The ◆ is the value under the recorded pairing. **H** (harmful accepted "
    "flips) and **L** (lost acceptances) are shares of the records, larger = worse; **dM_k** is the mean drop "
    "of true-class probability on pairs correct on both sides.",
)

_COVERAGES = COVERAGES
_TAU_MODES = {"coverage": "from clean coverage", "fixed": "fixed value"}
_SOURCES = {
    "demo": "Shipped demo pool",
    "paired": "Upload paired records",
    "unpaired": "Upload unpaired records (clean + perturbed tables)",
}


# Caches are keyed by the data's key ("demo" or the upload's content hash); the frames
# themselves are not hashed.
@st.cache_data(show_spinner=False, max_entries=8)
def _thresholds(key: str, *, _records: pd.DataFrame) -> pd.DataFrame:
    return development_thresholds_of(_records)


@st.cache_data(show_spinner=False, max_entries=64)
def _model_thresholds(key: str, model: str, *, _records: pd.DataFrame) -> pd.DataFrame:
    """:func:`_thresholds` of one model, from its records alone (a model's thresholds depend on
    them only): the top of the page validates a tenth of the demo pool instead of all of it."""
    return development_thresholds_of(_records[_records["model"] == model])


@st.cache_data(show_spinner=False, max_entries=8)
def _digest(key: str, *, _records: pd.DataFrame) -> str:
    """The records' digest, once per records: every stored grid and cell report is checked against it."""
    return records_digest(_records)


@st.cache_data(show_spinner=False, max_entries=8)
def _choices(key: str, *, _records: pd.DataFrame) -> CellChoices:
    return cell_choices(_records)


@st.cache_data(show_spinner=False, max_entries=64)
def _cell(key: str, model: str, condition: str, source: str, *, _records: pd.DataFrame) -> pd.DataFrame:
    """The evaluation rows of one cell (a thousand of the demo pool's 540,000 rows)."""
    return evaluation_cell(_records, model=model, condition=condition, source=source)


@st.cache_data(show_spinner="Computing identified intervals for every cell…", max_entries=16)
def _grid(key: str, coverage: float, fixed_tau: float | None, *, _records: pd.DataFrame) -> pd.DataFrame:
    """Intervals of every cell at each model's coverage threshold, or at ``fixed_tau`` for all models.

    The shipped demo pool's grids are stored (``scripts/build_paired_grid.py``) and used only when
    their fingerprint matches these records, the coverage, the code and the libraries exactly;
    a test holds them equal to this computation.
    """
    if fixed_tau is None:
        stored = load_precomputed_grid(_records, coverage, records_sha256=_digest(key, _records=_records))
        if stored is not None:
            return stored
    if fixed_tau is not None:
        return computed_grid(_records, coverage, fixed_tau=fixed_tau)
    return computed_grid(_records, coverage, thresholds=_thresholds(key, _records=_records))


@st.cache_data(show_spinner=False, max_entries=16)
def _grid_overview(key: str, coverage: float, fixed_tau: float | None, *, _records: pd.DataFrame) -> GridOverview:
    """:func:`core.views.paired.grid_summary` of :func:`_grid` (0.16 s a rerun before this cache)."""
    return grid_summary(_grid(key, coverage, fixed_tau, _records=_records))


def _fixed_tau(data: PairedData) -> float | None:
    """The typed acceptance threshold when the user chose a fixed τ (uploads only), else None.

    The coverage-derived τ is in-sample for unpaired uploads and for paired uploads without
    ``dev`` rows; a τ fixed elsewhere (e.g. the deployed threshold) avoids that.
    """
    if data.key == "demo":
        return None
    c1, c2 = st.columns([3, 2])
    c1.segmented_control(
        "Acceptance threshold τ",
        list(_TAU_MODES),
        key=PairedBoundsState.tau_mode.key,
        format_func=_TAU_MODES.get,
        required=True,
        persist_state="session",
        help="From clean coverage: the threshold that accepts the top q of the clean images. "
        "Fixed value: a threshold you type, e.g. the one your system is deployed with.",
    )
    if paired_bounds_state().tau_mode != "fixed":
        return None
    c2.number_input(
        "Fixed τ (accepted when max probability ≥ τ)",
        min_value=0.0,
        max_value=1.0,
        step=0.01,
        format="%.4f",
        key=PairedBoundsState.tau_value.key,
        persist_state="session",
    )
    return float(paired_bounds_state().tau_value)


@st.cache_data(show_spinner=False, max_entries=64)
def _stored_policies(
    key: str, model: str, condition: str, source: str, *, _records: pd.DataFrame
) -> PolicyReport | None:
    """The shipped policy report of a demo cell (``scripts/build_paired_grid.py``), read in 0.1 s
    instead of computed in 1.4 s, or None when its fingerprint does not match these records, the
    code and the libraries exactly; a test holds it equal to :func:`cell_policies` of the cell."""
    return stored_cell_policies(_records, model, condition, source, records_sha256=_digest(key, _records=_records))


def _policy_job(data: PairedData, model: str, condition: str, source: str) -> AuditJob:
    """The policy report of one cell, computed once in a background thread: a few integer
    programs per policy pair and level (1.4 s CPU of this page's first visit, scipy.optimize's
    import included), so the rest of the page is drawn meanwhile."""
    records = data.records

    def compute(_progress):
        cell = records[
            (records["model"] == model) & (records["condition"] == condition) & (records["source"] == source)
        ]
        return cell_policies(cell)

    return job_for(
        ("policy report", data.key, model, condition, source),
        f"Policy comparison of {model} under {condition}",
        compute,
        text=f"Comparing the acceptance policies of {model} under {condition} under every feasible pairing…",
    )


def _policies() -> DeltaGenerator:
    """The policy section's heading and controls; returns the container its results go into
    (:func:`_policy_results`, called last)."""
    st.subheader("Which perturbed-side acceptance policy is safest?")
    st.markdown(
        "Five policies accept a perturbed prediction when its max probability reaches the threshold that "
        "accepts 60 … 100 % of clean development images (the clean side stays at 80 %). Their cost "
        "**J = λ·H + (1 − λ)·L** weighs harmful accepted flips against lost acceptances (larger = worse). "
        "Because every policy is judged on the *same* unknown pairing, two policies can be ordered even when "
        "their separate cost intervals overlap."
    )
    c1, c2 = st.columns([3, 2])
    c1.select_slider(
        "Cost weight λ on harmful flips H",
        options=list(LAMBDAS),
        key=PairedBoundsState.lambda_.key,
        persist_state="session",
        help="0 = only lost acceptances matter, 1 = only harmful flips",
    )
    c2.segmented_control(
        "Information level", ["I0", "Ik", "I5"], key=PairedBoundsState.level.key, persist_state="session", required=True
    )
    return st.container()


def _policy_results(data: PairedData, model: str, condition: str, source: str) -> None:
    """The comparison of the cell's policies at the chosen λ and level: the stored report of a demo
    cell, else computed in the background (:func:`_policy_job`) and its progress meanwhile."""
    lam, level = float(paired_bounds_state().lambda_), paired_bounds_state().level
    report = None
    if data.key == "demo":
        report = _stored_policies(data.key, model, condition, source, _records=data.records)
    if report is None:
        job = _policy_job(data, model, condition, source)
        # A cell's first report takes seconds: no wait unless a test asks for finished jobs.
        job.wait(foreground_wait_s(default=0.0))
        if not job.done:
            st.info(
                "The policies are being compared under every feasible pairing of this cell, in the background "
                "(once per cell). This section fills in by itself; the rest of the page is ready.",
                icon=":material/hourglass_top:",
            )
            progress_panel([job])
            return
        report = job.result()
    comparison = policy_comparison(report, level=level, lam=lam)
    matrix, regret, labels = comparison.matrix.matrix, comparison.matrix.regret, comparison.matrix.labels
    chosen = comparison.chosen
    left, right = flow_columns([3, 2], key="paired_policy_row", min_width=[400, 320])
    with left:
        figure(
            cached_figure("policy_matrix_figure", matrix, labels),
            "Cell (row j, column ℓ): the largest amount by which j can cost more than ℓ over every pairing "
            "consistent with the level. Negative (blue, ✓) = row j is cheaper than ℓ whatever the pairing.",
        )
    with right:
        figure(
            cached_figure("regret_figure", labels, regret, chosen=chosen),
            f"Worst-case regret: how much worse each policy can be than the best alternative. Minimax choice: "
            f"{chosen}; least mean cost over uniformly weighted pairings: q = {comparison.mean_coverage:.0%} "
            f"({comparison.mean_method}).",
        )
    shown = comparison.certified
    table(
        shown,
        name=f"certified orderings {model} {condition} {level} {lam:g}",
        key="paired_certified",
        height=220,
        caption=f"{len(shown)} certified ordering(s). *missed by separate* = only the shared-pairing comparison "
        "certifies it (the separate intervals overlap).",
        download=report.differences,
    )
    table(
        comparison.costs,
        name=f"policy costs {model} {condition}",
        key="paired_costs",
        download=report.costs,
        caption="Separate cost interval [J_low, J_high] of each policy, its mean over feasible pairings and the "
        "value under the recorded pairing (shares of the cell's pairs).",
    )


def _paired_body(data: PairedData) -> None:
    records = data.records
    choices = _choices(data.key, _records=records)
    sources, models = list(choices.sources), list(choices.models)
    state = paired_bounds_state()
    if state.source not in sources:
        state.source = sources[0]
    if state.model not in models:
        state.model = models[0]
    fixed_tau = _fixed_tau(data)
    # Two rows of two: four selectors in one row cut their values at 1000 px ("sim-recapture p1 g1").
    c1, c2 = st.columns(2)
    c3, c4 = st.columns(2)
    c1.selectbox(
        "Source",
        sources,
        key=PairedBoundsState.source.key,
        persist_state="session",
        help="Where the perturbed side comes from (synthetic corruptions or simulated recaptures).",
    )
    c2.selectbox("Model", models, key=PairedBoundsState.model.key, persist_state="session")
    conditions = list(choices.conditions[paired_bounds_state().source])
    if paired_bounds_state().condition not in conditions:
        paired_bounds_state().condition = conditions[0]
    c3.selectbox("Condition", conditions, key=PairedBoundsState.condition.key, persist_state="session")
    # Short option text ("80% of clean dev. accepte" was cut).
    c4.selectbox(
        "Acceptance threshold τ from clean coverage",
        _COVERAGES,
        key=PairedBoundsState.coverage.key,
        persist_state="session",
        format_func=lambda q: f"{q:.0%} of clean dev. accepted",
        disabled=fixed_tau is not None,
        help="A coverage, not τ: τ is then the lowest clean max-probability among the top q of the model's "
        "clean development images, shown below; a prediction is accepted when its max probability is ≥ τ "
        "(both sides).",
    )
    model, condition, coverage = state.model, state.condition, state.coverage
    threshold = model_threshold(_model_thresholds(data.key, model, _records=records), model, coverage)
    tau = threshold.tau if fixed_tau is None else fixed_tau
    if fixed_tau is None:
        in_sample = (
            ""
            if threshold.scope == "dev"
            else f' No `split == "dev"` rows for {model}: τ is set from all its clean records (n = '
            f"{threshold.n_dev:,}), so the coverage is in-sample."
        )
        scope = "clean development images" if threshold.scope == "dev" else "clean records"
        st.caption(tau_text(tau, coverage=coverage, model=model, scope=scope) + in_sample)
    else:
        st.caption(tau_text(tau))
    cell = _cell(data.key, model, condition, paired_bounds_state().source, _records=records)

    m = flow_columns([1, 1.5, 1, 1], key="paired_cell_metrics", min_width=[150, 190, 150, 180], gap="small")
    m[0].metric("Pairs in the cell", f"{len(cell):,}")
    m[1].metric("Acceptance threshold τ", f"{tau:.4f}")
    m[2].metric("Clean accuracy", f"{(cell['clean_pred'] == cell['true_label']).mean():.1%}")
    m[3].metric("Perturbed accuracy", f"{(cell['pert_pred'] == cell['true_label']).mean():.1%}")

    intervals = cell_intervals(cell, tau)
    chart(
        vega_spec("intervals_spec", intervals),
        "Each bar spans every value some pairing consistent with that level allows; narrower is better "
        "identified. The ◆ (recorded pairing) always lies inside. 'undefined' = no pair is correct on both sides.",
    )
    left, right = flow_columns([3, 2], key="paired_tables_row", min_width=[380, 300])
    with left:
        table(
            five_state_table(cell, tau),
            name=f"five states {model} {condition}",
            key="paired_states",
            caption="Per class: n pairs; h harmful flip, r correction, s same wrong label, "
            "w changed wrong label, k correct both; u clean correct & accepted, v perturbed correct & rejected, "
            "t perturbed wrong & accepted.",
        )
    with right:
        table(
            intervals,
            name=f"intervals {model} {condition}",
            key="paired_intervals",
            column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("low", "high", "observed")},
        )

    policy_slot = _policies()

    st.subheader("Across every model and condition")
    grid = _grid(data.key, coverage, fixed_tau, _records=records)
    overview = _grid_overview(data.key, coverage, fixed_tau, _records=records)
    figure(
        cached_figure("grid_summary_figure", overview.widths),
        "Mean width of the identified interval over all cells of a source. The drop from I0 to Ik shows what "
        "reporting the per-class count of records correct on both sides buys; I5 adds the other state counts.",
    )
    s = flow_columns(4, key="paired_grid_metrics", min_width=210, gap="small")
    s[0].metric("Cells", f"{overview.cells:,}")
    s[1].metric(
        "Cells where I5 narrows H",
        f"{overview.i5_narrows_h:.1%}",
        help="The five-state counts strictly tighten H beyond Ik",
    )
    s[2].metric(
        "dM_k straddles 0 (Ik)",
        f"{overview.dmk_straddles_zero:.1%}",
        help="Among cells with dM_k defined: even the sign of the confidence drop is not identified",
    )
    s[3].metric("Cells with K = 0", f"{overview.k_zero:.1%}", help="dM_k undefined: no pair correct on both sides")
    # Opened on demand: every cell's rows (3,240 on the demo pool, 0.4 MB) were sent and drawn on
    # every run of the page, though the chart and the figures above summarise them.
    with st.expander(
        f"Every cell, target and level: {len(grid):,} rows", key="paired_grid_open", on_change="rerun"
    ) as grid_box:
        if grid_box.open:
            table(
                grid,
                name=(
                    f"identified intervals grid {coverage:.0%}"
                    if fixed_tau is None
                    else f"identified intervals grid tau {fixed_tau:g}"
                ),
                key="paired_grid",
                height=260,
                caption="Every cell, target and level, with the threshold τ of the cell's model."
                if fixed_tau is None
                else f"Every cell, target and level, at the fixed τ = {fixed_tau:g}.",
            )
    # Last: a new cell's comparison is computed in a thread, which would otherwise slow the
    # drawing of the grid above (they share one interpreter).
    with policy_slot:
        _policy_results(data, model, condition, paired_bounds_state().source)


def _unpaired_body(data: PairedData) -> None:
    unpaired = data.unpaired
    st.info(
        f"**Unpaired records, highest level {unpaired.level}.** The pairing is unknown, so the bars have no "
        "observed value (◆), and the five-state table, the policy comparison and the grid (which need "
        "the pairing) are not shown. Intervals are given up to the level the counts allow: no counts → I0, "
        "a `k` per class → Ik, all of `h, r, s, w, k` → I5.",
        icon=":material/info:",
    )
    fixed_tau = _fixed_tau(data)
    st.selectbox(
        "Acceptance threshold τ from clean coverage",
        _COVERAGES,
        key=PairedBoundsState.coverage.key,
        persist_state="session",
        format_func=lambda q: f"{q:.0%} of the clean table accepted",
        disabled=fixed_tau is not None,
        help="τ is the lowest clean max-probability among the top q of the uploaded clean table "
        "(in-sample: there is no development split); accepted when max probability ≥ τ.",
    )
    coverage = float(paired_bounds_state().coverage)
    tau = unpaired_threshold(unpaired, coverage) if fixed_tau is None else fixed_tau
    scope = "records of the uploaded clean table (in-sample: there is no development split)"
    st.caption(tau_text(tau) if fixed_tau is not None else tau_text(tau, coverage=coverage, scope=scope))
    clean, pert = unpaired.clean, unpaired.perturbed
    m = flow_columns(5, key="paired_unpaired_metrics", min_width=170, gap="small")
    m[0].metric("Records per side", f"{len(clean):,}")
    m[1].metric("Highest level", unpaired.level)
    m[2].metric("Acceptance threshold τ", f"{tau:.4f}")
    m[3].metric("Clean accuracy", f"{(clean['pred'] == clean['true_label']).mean():.1%}")
    m[4].metric("Perturbed accuracy", f"{(pert['pred'] == pert['true_label']).mean():.1%}")
    intervals = unpaired_cell_intervals(unpaired, tau)
    chart(
        vega_spec("intervals_spec", intervals),
        f"Each bar spans every value some pairing consistent with that level allows; narrower is better "
        f"identified. Levels above {unpaired.level} need more counts. 'undefined' = no pair can be correct on "
        "both sides.",
    )
    left, right = flow_columns([3, 2], key="paired_unpaired_tables", min_width=[380, 300])
    with left:
        table(
            unpaired_class_summary(unpaired, tau),
            name="unpaired class summary",
            key="paired_unpaired_classes",
            caption="Per class: n records per side; a / b clean / perturbed correct; u clean correct & accepted, "
            "v perturbed correct & rejected, t perturbed wrong & accepted; then the uploaded counts.",
        )
    with right:
        # No observed column: the pairing is unknown, so there is no observed value to show.
        table(
            intervals.drop(columns="observed"),
            name="unpaired intervals",
            key="paired_intervals",
            column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("low", "high")},
        )


def _upload_widgets(source: str) -> None:
    """File uploaders of the chosen form; complete uploads replace ``paired_upload``."""
    kwargs = dict(type=["csv", "parquet", "pq"], max_upload_size=UPLOAD_LIMIT_MB)
    if source == "paired":
        st.markdown(
            "One row per (model, condition, record) pair: `model, condition, source, record_id, true_label, "
            "clean_pred, clean_max_prob, clean_true_prob, pert_pred, pert_max_prob, pert_true_prob`, "
            "optional `split` (`dev` rows set τ, `eval` rows are reported) and `group`."
        )
        files = {"records": st.file_uploader("Paired records (CSV or Parquet)", key="paired_records_file", **kwargs)}
        required = ("records",)
    else:
        st.markdown(
            "Two tables of one cell, each `record_id, true_label, pred, max_prob, true_prob` (same number "
            "of records per class), and optionally per-class counts `true_label, k` or "
            "`true_label, h, r, s, w, k`."
        )
        c1, c2, c3 = st.columns(3)
        files = {
            "clean": c1.file_uploader("Clean table", key="paired_clean_file", **kwargs),
            "perturbed": c2.file_uploader("Perturbed table", key="paired_pert_file", **kwargs),
            "counts": c3.file_uploader("Per-class counts (optional)", key="paired_counts_file", **kwargs),
        }
        required = ("clean", "perturbed")
    if all(files[role] is not None for role in required):
        upload = FilesUpload(
            kind=source, files={role: (f.name, f.getvalue()) for role, f in files.items() if f is not None}
        )
        if upload != paired_bounds_state().upload:
            paired_bounds_state().upload = upload
    current = paired_bounds_state().upload
    if current and current.kind == source:
        names = current.names
        c1, c2 = st.columns([5, 1])
        c1.caption(
            f"Showing the uploaded {names}. Upload other files to replace them; they live in this browser session only."
        )
        if c2.button("Forget the upload", type="tertiary", icon=":material/delete:"):
            paired_bounds_state().upload = None
            st.rerun()


def _body() -> None:
    access = current_access()
    if access.may("upload"):
        st.segmented_control(
            "Records",
            list(_SOURCES),
            key=PairedBoundsState.data_source.key,
            format_func=_SOURCES.get,
            required=True,
            persist_state="session",
        )
    else:  # a role that may not upload (a viewer; a reviewer unless granted): the demo pool only
        paired_bounds_state().data_source = "demo"
        st.caption(f"Records: **{_SOURCES['demo']}** (uploading records needs the {access.needs('upload')} role).")
    source = paired_bounds_state().data_source
    if source != "demo":
        with st.expander("Your records", expanded=True, icon=":material/upload_file:"):
            _upload_widgets(source)
    data = None
    with guarded("Reading the uploaded records"):
        data = paired_data()
    if data is None:
        if source != "demo" and getattr(paired_bounds_state().upload, "kind", None) != source:
            st.info("Upload the files above to see their bounds.", icon=":material/upload_file:")
        return
    if source != "demo":
        st.caption(f"Records: **{data.label}**.")
    if data.kind == "paired":
        _paired_body(data)
    else:
        _unpaired_body(data)


run_page(_body, "Paired bounds")
