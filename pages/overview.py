"""Overview: the data, the declared protocol, and the audit at a glance."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import streamlit as st

from core.views.audit_inputs import (
    BASELINE_RULES,
    DATASET_NAMES,
    GROUPING_RULES,
    OPERATORS,
    PATH_RULES,
    Protocol,
    feature_origins,
    load_user_data,
    protocol_from_form,
)
from core.views.tabular import column_summary, flip_budget_shown, groups_table, rcma_glance_text
from core.views.uploads import CELL_BUDGET, LARGE_TABLE_ROWS, UPLOAD_LIMIT_MB, TableUpload, parse_blocks, table_columns
from ui.audit_line import audit_line
from ui.auth import current_access, report_reviews
from ui.components import chart, guarded, page_header, run_page, table, vega_spec
from ui.data import audit_max_rows, current_audit, current_dataset, current_protocol, dataset_label
from ui.entry import ensure_entrypoint
from ui.glance import current_glance
from ui.layout import flow_columns
from ui.own_model import certify_mode, own_label, own_mode, saved_folder
from ui.preload import preload_plotly
from ui.state import OverviewState, SharedState, overview_state, shared_state, triage_state

if TYPE_CHECKING:
    from streamlit.elements.lib.mutable_tab_container import TabContainer

ensure_entrypoint()

page_header(
    "Overview: data & protocol",
    "An audit asks, for every test prediction: **which evidence has to go missing before the model "
    "changes its mind, and how fast does its support collapse?** Pick the data and the model in the "
    "sidebar, declare the protocol in the *Protocol* tab, and every page follows. The audit is computed "
    "once and cached.",
)

GLANCE, DATA, PROTOCOL, SAVED = "At a glance", "Data", "Protocol", "Saved files"

_GROUPING_HELP = {
    "raw_origin": "one group per raw column (all its one-hot / missing-indicator columns together)",
    "domain_block": "groups from the dataset's domain blocks (raw column → block)",
    "redundancy_merged": "raw-column groups merged when strongly correlated (|ρ| ≥ threshold)",
}


def _upload_section() -> None:
    """The table upload, for a role that may upload (every role in local mode; core refuses the
    others' uploads too: ``table_columns(..., actor=...)``)."""
    access = current_access()
    if not access.may("upload"):
        return
    with st.expander("Upload your own table (CSV or Parquet)", icon=":material/upload_file:"):
        st.markdown(
            "The file is validated (target, types, missing values, identifier columns) before it "
            "is audited. At most 50 MB; only data is read — never code or pickled models."
        )
        upload = st.file_uploader(
            "Table", type=["csv", "tsv", "txt", "parquet", "pq"], key="upload_file", max_upload_size=UPLOAD_LIMIT_MB
        )
        if upload is None:
            return
        data = upload.getvalue()
        with guarded(f"Reading {upload.name}"):
            columns = table_columns(data, upload.name, actor=access.actor)
            if overview_state().upload_target not in columns:
                overview_state().upload_target = None
            target = st.selectbox(
                "Target column (what the model predicts)",
                columns,
                key=OverviewState.upload_target.key,
                placeholder="choose the target column",
            )
            blocks_file = st.file_uploader(
                "Optional domain blocks (YAML or JSON: column → block)",
                type=["yaml", "yml", "json"],
                key="upload_blocks_file",
            )
            if st.button("Add to the datasets", type="primary", disabled=target is None):
                blocks = (
                    parse_blocks(blocks_file.getvalue(), blocks_file.name, actor=access.actor) if blocks_file else None
                )
                dataset = load_user_data(
                    _named(data, upload.name),
                    target,
                    blocks=blocks.mapping if blocks else None,
                    max_bytes=UPLOAD_LIMIT_MB * 1024**2,
                )
                name = dataset.name
                shared_state().uploads = {
                    **shared_state().uploads,
                    name: TableUpload.of(data, upload.name, target=target, blocks=blocks),
                }
                # The sidebar's dataset widget already exists in this run: the sidebar switches to
                # the new table at the start of the next run.
                shared_state().dataset_next = f"upload:{name}"
                st.rerun()


def _named(data: bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(data)
    buffer.name = name
    return buffer


def _sample_section(dataset) -> None:
    """Sample size of the interactive audit of a large upload, and the CLI line for the full table."""
    n = len(dataset.frame)
    if audit_max_rows(dataset) is None:
        return
    if shared_state().audit_sample_rows > n:
        shared_state().audit_sample_rows = n
    st.subheader("Large table: the interactive audit runs on a sample")
    st.number_input(
        "Interactive sample size (rows)",
        min_value=min(1_000, n),
        max_value=n,
        step=1_000,
        key=SharedState.audit_sample_rows.key,
        persist_state="session",
        help=f"Stratified by class and seeded by the sidebar seed; tables above {LARGE_TABLE_ROWS:,} "
        "rows are sampled so that every page stays interactive.",
    )
    rows = audit_max_rows(dataset)
    n_groups = len(dataset.features)
    if rows < int(shared_state().audit_sample_rows):
        st.caption(
            f"With {n_groups:,} columns the interactive sample is capped at **{rows:,} rows**: a certificate's "
            f"cost grows with rows × evidence groups (at most {CELL_BUDGET:,} here, so that a page answers "
            "within seconds). The command line below audits every row."
        )
    from core.views.commands import cli_commands  # lazy: only a large upload shows the commands

    upload = shared_state().uploads[shared_state().dataset.split(":", 1)[1]]
    commands = cli_commands(
        upload.file,
        upload.target,
        model=shared_state().model,
        seed=int(shared_state().seed),
        protocol=current_protocol(),
        blocks_file=upload.blocks.name if upload.blocks else None,
    )
    st.warning(
        f"This table has **{n:,} rows** × {n_groups:,} columns. Every page audits a **stratified sample of "
        f"{min(rows, n):,} rows** "
        f"(seed {int(shared_state().seed)}); the full table is audited on the command line, with the "
        "model, seed and protocol chosen here:",
        icon=":material/warning:",
    )
    st.code(commands["audit"], language="bash")
    st.caption(
        "The complete audit (certificates, held-out brittle labels, score evaluation, calibration) of every "
        "row. For certificates only, in bounded memory and resumable (model fitted on the first "
        "`--fit-rows` rows, default 20,000):"
    )
    st.code(commands["certify"], language="bash")
    from ui.big_audit import certify_upload_panel  # lazy: only a large upload offers it

    certify_upload_panel(
        upload, n, model=shared_state().model, seed=int(shared_state().seed), protocol=current_protocol()
    )


def _protocol_form(n_groups: int) -> None:
    st.subheader("Protocol")
    st.markdown(
        "A certificate is only meaningful relative to its declared protocol; its fingerprint "
        "(SHA-256 of the canonical JSON) is stored with every certificate and review."
    )
    with st.form("protocol_form", border=True):
        # Two per row at 1000 px: a third of the form cut the severity grid ("0.1, 0.2, … 0.6").
        c1, c2, c3 = flow_columns(3, key="overview_protocol_row", min_width=220, gap="small")
        # The rule's name only: with its description the option was cut at the box's edge
        # ("raw_origin — one group per raw column (i"); the descriptions are in the help.
        c1.selectbox(
            "Grouping",
            GROUPING_RULES,
            key=OverviewState.proto_grouping.key,
            persist_state="session",
            help="; ".join(f"**{r}**: {text}" for r, text in _GROUPING_HELP.items()),
        )
        c1.selectbox(
            "Baseline x̄ (replaces removed evidence)",
            BASELINE_RULES,
            key=OverviewState.proto_baseline.key,
            persist_state="session",
            help="Computed on the training split only.",
        )
        c1.number_input(
            "Merge threshold |ρ| (redundancy-merged grouping)",
            0.05,
            1.0,
            step=0.05,
            key=OverviewState.proto_merge_threshold.key,
            persist_state="session",
        )
        c2.selectbox(
            "Depth K (removal steps)",
            ["auto"] + list(range(1, max(n_groups, 1) + 1)),
            key=OverviewState.proto_depth.key,
            persist_state="session",
            help="auto = min(number of groups, 5)",
        )
        c2.radio(
            "Path rule",
            PATH_RULES,
            key=OverviewState.proto_path_rule.key,
            horizontal=True,
            persist_state="session",
            help="static: sort groups once by their one-step drop; adaptive: re-rank at every step",
        )
        c3.text_input(
            "Severity grid Λ (comma-separated, each in (0, 1])",
            key=OverviewState.proto_severities.key,
            persist_state="session",
        )
        # Full-width rows: inside a third of the form at 1000 px the operators' chips and the
        # weights' values were cut ("attenuate_al", "0.3").
        st.pills(
            "Degradation operators ℙ",
            OPERATORS,
            selection_mode="multi",
            key=OverviewState.proto_operators.key,
            persist_state="session",
        )
        st.markdown("FDS weights of u = w1·RCMA + w2/k* + w3·degradation")
        w = st.columns(3)
        w[0].number_input("w1", 0.0, 10.0, step=0.05, key=OverviewState.proto_w1.key, persist_state="session")
        w[1].number_input("w2", 0.0, 10.0, step=0.05, key=OverviewState.proto_w2.key, persist_state="session")
        w[2].number_input("w3", 0.0, 10.0, step=0.05, key=OverviewState.proto_w3.key, persist_state="session")
        applied = st.form_submit_button("Apply protocol", type="primary")
    if applied:
        with guarded("Protocol"):
            protocol = protocol_from_form(
                grouping=overview_state().proto_grouping,
                baseline=overview_state().proto_baseline,
                depth=overview_state().proto_depth,
                operators=overview_state().proto_operators,
                severities=overview_state().proto_severities,
                weights=(overview_state().proto_w1, overview_state().proto_w2, overview_state().proto_w3),
                path=overview_state().proto_path_rule,
                merge_threshold=overview_state().proto_merge_threshold,
            )
            shared_state().protocol = protocol.to_dict()
            st.rerun()
    protocol = current_protocol()
    default = protocol == Protocol()
    st.markdown(
        f"Applied protocol fingerprint: `{protocol.fingerprint}`"
        + (" (the default protocol)" if default else "")
        + f". The audit under it is on the *{GLANCE}* tab and on every page."
    )
    if not default and st.button("Reset to the default protocol"):
        shared_state().protocol = None
        st.rerun()


def _data_section(dataset, label: str | None = None) -> None:
    st.subheader(f"Data: {label or dataset_label(shared_state().dataset)}")
    if dataset.description:
        st.markdown(dataset.description)
    frame = dataset.frame
    counts = frame[dataset.target].value_counts().reindex(list(dataset.classes), fill_value=0)
    cols = flow_columns(4, key="overview_data_metrics", min_width=170, gap="small")
    cols[0].metric("Rows", f"{len(frame):,}")
    cols[1].metric(
        "Raw features",
        f"{len(dataset.features)}",
        help=f"{len(dataset.numeric)} numeric, {len(dataset.categorical)} categorical",
    )
    cols[2].metric("Target", dataset.target, help="Classes in encoding order: " + ", ".join(map(str, dataset.classes)))
    if dataset.positive_class is not None:
        cols[3].metric(
            f"Share '{dataset.positive_class}'",
            f"{counts[dataset.positive_class] / len(frame):.1%}",
            help=" / ".join(f"{c}: {n:,}" for c, n in counts.items()),
        )
    else:
        cols[3].metric("Classes", f"{len(dataset.classes)}", help=" / ".join(f"{c}: {n:,}" for c, n in counts.items()))
    for note in dataset.notes:
        st.info(note, icon=":material/info:")
    # Stacked at 1000 px: beside the column table the histogram was 300 px wide (axis title cut).
    left, right = flow_columns([2, 3], key="overview_data_row", min_width=[280, 400])
    with left:
        table(column_summary(dataset), name=f"{dataset.name} columns", key="overview_columns", height=380)
    with right:
        if overview_state().column not in dataset.features:
            overview_state().column = dataset.features[0]
        column = st.selectbox(
            "Column to inspect", list(dataset.features), key=OverviewState.column.key, persist_state="session"
        )
        chart(
            vega_spec("column_distribution_spec", frame[column], frame[dataset.target], classes=dataset.classes),
            "Bars per class; missing values are counted, never dropped. A column whose classes separate "
            "cleanly is strong evidence — and a single point of failure if it goes missing.",
        )
    # Drawn only once opened (a rerun): a 500-row grid is no work for the first screen.
    with st.expander(
        f"Raw data preview (first 500 of {len(frame):,} rows; the CSV has all of them)",
        key=OverviewState.preview_open.key,
        on_change="rerun",
    ) as preview:
        if preview.open:
            table(
                frame.head(500).reset_index(names="row_id"),
                name=f"{dataset.name} raw data",
                key="overview_preview",
                download=frame.reset_index(names="row_id"),
                height=300,
            )


def _report(result, **options) -> str:
    from ui.report import audit_report  # imported on click: the report's libraries are not first-screen costs

    return audit_report(result, **options)


def _glance_section(progress_at=None) -> None:
    # A new audit's progress bar goes where the audit is first asked for; ``progress_at`` (a
    # container at the top of the page) keeps it in view instead of below the stale page.
    with progress_at if progress_at is not None else st.container():
        # A saved audit's glance is read alone: the whole audit is read for the expanders below
        # when opened, and for the report on click.
        view = current_glance()
    g = view.glance
    audit_line(g)
    st.subheader("The audit at a glance")
    # Built only on click (on Streamlit's download thread): the file inlines the Vega bundle (~1 MB).
    reviews, budget, load = report_reviews(), triage_state().budget / 100, view.load
    st.download_button(
        "Download report",
        lambda: _report(load(), budget=budget, **reviews),
        file_name=f"report_{g.dataset_name}_{g.model_name}_seed{g.seed}.html",
        mime="text/html",
        icon=":material/download:",
        on_click="ignore",
        key="overview_report",
        help="One self-contained HTML file for stakeholders (opens offline): protocol, metrics, "
        "FDS vs confidence, triage decisions, example certificates, paired demo summary.",
    )
    best_conf = g.confidence_score  # None: no confidence AUROC to compare with
    # Wrapping at 210 px each: five metrics in one row cut their labels at 1000 px ("High confiden…").
    cols = flow_columns(5, key="overview_glance_metrics", min_width=210, gap="small")
    cols[0].metric("Test predictions", f"{g.test_rows:,}")
    cols[1].metric(f"High confidence (p̂ ≥ {g.tau_p:g})", f"{g.high_confidence:,}")
    cols[2].metric(
        "Held-out brittle",
        f"{g.brittle_count:,}",
        help="High-confidence predictions that flip or collapse under the held-out stressors "
        "(random masking, dropout, noise) — never used to compute FDS.",
    )
    cols[3].metric(
        "FDS AUROC (brittle vs not)",
        f"{g.fds_auroc:.3f}",
        delta=(f"{g.fds_auroc - g.confidence_auroc:+.3f} vs {best_conf}" if best_conf else None),
        help="How well FDS ranks the held-out brittle cases above the others (0.5 = chance).",
    )
    cols[4].metric(
        "Capture@20 of FDS",
        f"{g.fds_capture:.2f}",
        delta=(f"{g.fds_capture - g.confidence_capture:+.2f} vs {best_conf}" if best_conf else None),
        help="Share of all brittle cases found by reviewing the 20 % highest-FDS predictions.",
    )
    rcma_line = rcma_glance_text(g)
    if rcma_line:
        st.caption(rcma_line)
    left, right = flow_columns(2, key="overview_glance_charts", min_width=380)
    with left:
        chart(
            vega_spec("confidence_fds_spec", g.confidence, g.fds, brittle=g.brittle, threshold=g.tau_p),
            "Each dot is a test prediction. Right of the dashed line the model is confident; high up it is "
            "fragile (FDS, larger = more fragile). Red-orange dots broke under held-out stress.",
        )
    with right:
        chart(
            vega_spec("flip_budget_spec", g.flip_budget, depth=g.depth),
            "How many evidence groups (removed greedily, most supportive first) it takes to flip each "
            "prediction. Bars on the left are predictions that hinge on one or two groups.",
        )
    # Drawn only once opened, like the groups below: a data grid is the costliest element of the
    # first screen to draw (0.2 s of a second start here, docs/dashboard.md).
    with st.expander(
        "Every risk score against the held-out brittle labels",
        key=OverviewState.evaluation_open.key,
        on_change="rerun",
    ) as evaluation:
        if evaluation.open:
            st.caption(
                "How well each risk score ranks the held-out brittle cases among the high-confidence test "
                "predictions (AUROC, capture at 5, 10 and 20 % reviewed, AURC); every score is oriented "
                "larger = riskier."
            )
            table(current_audit().evaluation, name="score evaluation", key="overview_evaluation")
    with st.expander(
        "Evidence groups of this protocol", key=OverviewState.groups_open.key, on_change="rerun"
    ) as groups:
        if groups.open:
            result = current_audit()
            pre = result.preprocessor
            table(
                groups_table(result.groups, pre.feature_names, feature_origins(pre)),
                name="evidence groups",
                key="overview_groups",
            )
    for note in g.notes:
        st.caption(f"Note: {note}")


def _tabs(names: list[str]) -> dict[str, TabContainer]:
    """The page's tabs, of which only the open one is drawn: the first screen is the audit at a
    glance, not the data section and the protocol form below it (about 40 elements fewer)."""
    if overview_state().tab not in names:  # e.g. "Protocol" of the bundled data, now on a saved audit
        overview_state().tab = names[0]
    return dict(zip(names, st.tabs(names, key=OverviewState.tab.key, on_change="rerun")))


def _saved_header(saved) -> None:
    st.subheader(f"Saved audit: {saved.path.name}")
    st.caption(f"Model {saved.protocol.get('model', '?')} · certificate fingerprint `{saved.fingerprint[:16]}…`")
    if saved.unavailable:
        st.warning(
            f"The model is unavailable: {saved.unavailable}. Every page shows the saved tables; only "
            "the panels that call the model (what-if, flip-set search) are off.",
            icon=":material/warning:",
        )


def _saved_files(saved) -> None:
    with st.expander("Saved summary (summary.md)", expanded=False):
        st.markdown(saved.summary or "_no summary.md_")
    table(
        flip_budget_shown(
            saved.certificates.drop(columns=["path", "path_margins"], errors="ignore"),
            depth=int(saved.protocol["depth"]),
        ),
        name="saved certificates",
        key="overview_saved_certificates",
        height=300,
        caption="The certificate table as saved (certificates.parquet).",
    )


def _own_body() -> None:
    """Overview of the user's own model or of a saved audit folder."""
    saved = saved_folder()
    tabs = _tabs([GLANCE, DATA] + ([SAVED] if saved is not None else []))
    if tabs[GLANCE].open:
        with tabs[GLANCE]:
            if saved is not None:
                _saved_header(saved)
            with guarded("Audit"):
                _glance_section()
    if tabs[DATA].open:
        with tabs[DATA], guarded("Audit"):
            _data_section(current_audit().dataset, label=own_label())
            st.caption("The protocol is the one the audit was made with; it was chosen when the audit was run.")
    if saved is not None and tabs[SAVED].open:
        with tabs[SAVED]:
            _saved_files(saved)


def _body() -> None:
    if certify_mode():  # a certify folder of any size, queried out of core
        from ui.big_audit import big_overview_page

        big_overview_page()
        return
    if own_mode():
        _own_body()
        return
    top = st.container()  # the progress of a new audit (see _glance_section)
    if shared_state().dataset not in DATASET_NAMES and not shared_state().uploads:
        shared_state().dataset = DATASET_NAMES[0]
    tabs = _tabs([GLANCE, DATA, PROTOCOL])
    if tabs[GLANCE].open:
        with tabs[GLANCE], guarded("Audit"):
            _glance_section(top)
    if tabs[DATA].open:
        with tabs[DATA]:
            _upload_section()
            with guarded("Loading the dataset"):
                dataset = current_dataset()
                _data_section(dataset)
                _sample_section(dataset)
    if tabs[PROTOCOL].open:
        with tabs[PROTOCOL], guarded("Loading the dataset"):
            _protocol_form(len(current_dataset().features))


run_page(_body, "Overview")
preload_plotly()  # Calibration, Model comparison and Paired bounds draw plotly: loaded while the Overview is read
