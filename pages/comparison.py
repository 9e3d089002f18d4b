"""Model comparison: nominal quality beside stability, and one prediction under every model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.views.audit_inputs import MODEL_NAMES
from core.views.comparison import comparison_samples, model_comparison_table, sample_across_models
from ui.audit_line import audit_line
from ui.components import cached_figure, figure, page_header, run_page, table
from ui.data import audits_for, current_audit, model_label
from ui.entry import ensure_entrypoint
from ui.layout import flow_columns
from ui.own_model import own_mode
from ui.selection import sample_in, select_sample, selected_sample
from ui.state import ComparisonState, comparison_state

ensure_entrypoint()

page_header(
    "Model comparison",
    "The model with the best accuracy or AUROC is not necessarily the one whose predictions hold up when "
    "evidence goes missing. Every model here is trained on the same split and audited under the same "
    "protocol. **Nominal metrics** (higher AUROC / accuracy is better; lower NLL / ECE / Brier is better) sit "
    "beside **fragility metrics** (mean RCMA, share of predictions flipped by removing ≤ 2 groups, share "
    "held-out brittle — all lower is better).",
)


def _body() -> None:
    primary = current_audit()
    audit_line(primary)
    if own_mode():
        st.info(
            "Your model is compared with itself only: the other models of this page are trained by the tool on "
            "a bundled or uploaded table. Close *Your model* in the sidebar to compare them.",
            icon=":material/info:",
        )
        chosen = [primary.model_name]
        audits = {primary.model_name: primary}
    else:
        chosen = st.multiselect(
            "Models to compare",
            list(MODEL_NAMES),
            key=ComparisonState.models.key,
            format_func=model_label,
            persist_state="session",
            help="Each model is trained and audited once, then cached (the torch models take longest).",
        )
        if not chosen:
            st.info("Pick at least one model to compare.", icon=":material/info:")
            return
        audits = audits_for(chosen)
    frame = model_comparison_table(audits)
    config = {c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns if frame[c].dtype.kind == "f"}
    config["mean_rcma"] = st.column_config.NumberColumn(
        "mean RCMA",
        format="%.3f",
        help="Mean margin-collapse area over the predictions that are not near-ties (see below the table)",
    )
    config["n_near_tie"] = st.column_config.NumberColumn(
        "near-ties", help="Predictions whose top two classes are all but tied, left out of the mean RCMA"
    )
    config["model"] = st.column_config.TextColumn("model")
    table(
        frame.assign(model=frame["model"].map(model_label)),
        name="model comparison",
        key="compare_table",
        column_config=config,
        download=frame,
    )
    best = frame.loc[frame["auroc"].idxmax(), "model"] if frame["auroc"].notna().any() else None
    stable = frame.loc[frame["share_k_le_2"].idxmin(), "model"]
    if best is not None:
        st.markdown(
            f"Nominal winner (AUROC): **{model_label(best)}** · most stable (fewest predictions flipped by "
            f"≤ 2 groups): **{model_label(stable)}**" + (" — the same model." if best == stable else ".")
        )
    st.caption(_rcma_note(frame))
    labelled = frame.assign(model=frame["model"].map(model_label))
    left, right = flow_columns(2, key="comparison_tradeoffs", min_width=380)
    with left:
        figure(
            cached_figure(
                "tradeoff_figure",
                labelled,
                x="auroc",
                y="share_k_le_2",
                x_title="test AUROC (higher = better)",
                y_title="share flipped by ≤ 2 groups (lower = better)",
                x_bounds=(0, 1),
                y_bounds=(0, 1),
                title="AUROC vs flips by ≤ 2 groups",
            ),
            "Bottom-right would be ideal: accurate, and few predictions hinge on one or two evidence groups.",
        )
    with right:
        figure(
            cached_figure(
                "tradeoff_figure",
                labelled,
                x="auroc",
                y="share_brittle",
                x_title="test AUROC (higher = better)",
                y_title="share held-out brittle (lower = better)",
                x_bounds=(0, 1),
                y_bounds=(0, 1),
                title="AUROC vs held-out brittle",
            ),
            "Share of all test predictions that are confident yet break under the held-out stressors.",
        )

    st.subheader("One prediction, every model")
    candidates = comparison_samples(primary)
    options = [int(i) for i in candidates.index]
    if sample_in(options):  # the sample selected on another tabular page
        comparison_state().sample = selected_sample()
    if comparison_state().sample not in options:
        comparison_state().sample = options[0]
    fds_by_id = dict(zip(options, candidates.tolist()))
    st.selectbox(
        "Sample shown under every model",
        options,
        key=ComparisonState.sample.key,
        persist_state="session",
        on_change=lambda: select_sample(comparison_state().sample),
        format_func=lambda i: f"{i} — FDS {fds_by_id[i]:.3f} under {model_label(primary.model_name)}",
        help="High-confidence test predictions of the model selected in the sidebar, most fragile first.",
    )
    sample = comparison_state().sample
    across = sample_across_models(audits, sample)
    trajectories = {model_label(name): trajectory for name, trajectory in across.trajectories.items()}
    figure(
        cached_figure("trajectories_by_model_figure", trajectories),
        "Each panel removes that model's own most supportive groups first. 1 = the original support, 0 = the "
        "decision boundary, below 0 = flipped (vermillion points).",
    )
    table(
        across.table.assign(model=across.table["model"].map(model_label)),
        name=f"sample {sample} by model",
        key="compare_sample_table",
    )


def _rcma_note(frame: pd.DataFrame) -> str:
    """How the mean RCMA is taken, with the near-tie counts of the models that have some."""
    note = (
        "Mean RCMA leaves out near-ties: RCMA divides a margin loss by the original margin |m|, so a "
        "prediction whose top two classes are all but tied gets a huge RCMA however little it changes, and "
        "a few of them would dominate the mean. The median RCMA is robust to them and is taken over every "
        "prediction."
    )
    parts = [
        f"{model_label(row['model'])}: {int(row['n_near_tie']):,} near-tie(s) left out"
        for _, row in frame.iterrows()
        if row["n_near_tie"]
    ]
    return note + (" " + "; ".join(parts) + "." if parts else "")


run_page(_body, "Model comparison")
