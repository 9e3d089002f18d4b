"""Paired bounds: what an evaluation can claim when clean and perturbed records are not paired."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import streamlit as st

from core import viz
from core.paired.bounds import identified_intervals, identified_intervals_grid
from core.paired.states import development_thresholds, five_state_counts
from core.dashboard import grid_summary, policy_matrix
from core.paired.policies import LAMBDAS, evaluate_policies
from ui.components import figure, page_header, run_page, table
from ui.data import demo_pool
from ui.entry import ensure_entrypoint

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

_COVERAGES = (0.6, 0.7, 0.8, 0.9, 1.0)


@st.cache_data(show_spinner=False)
def _thresholds() -> pd.DataFrame:
    return development_thresholds(demo_pool().records, _COVERAGES)


@st.cache_data(show_spinner="Computing identified intervals for every cell…")
def _grid(coverage: float) -> pd.DataFrame:
    records = demo_pool().records
    evaluation = records[records["split"] == "eval"] if "split" in records.columns else records
    thresholds = _thresholds()
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dM_k undefined where no pair stays correct: NaN
        for model, part in evaluation.groupby("model", sort=True):
            tau = float(thresholds.loc[(thresholds["model"] == model) & (thresholds["coverage"] == coverage), "tau"].iloc[0])
            parts.append(identified_intervals_grid(part, tau).assign(tau=tau))
    return pd.concat(parts, ignore_index=True)


@st.cache_data(show_spinner="Comparing the acceptance policies under every feasible pairing…", max_entries=64)
def _policy_report(model: str, condition: str, source: str):
    records = demo_pool().records
    cell = records[(records["model"] == model) & (records["condition"] == condition) & (records["source"] == source)]
    return evaluate_policies(cell, lambdas=LAMBDAS)


def _policies(records: pd.DataFrame, model: str, condition: str, source: str) -> None:
    st.subheader("Which perturbed-side acceptance policy is safest?")
    st.markdown("Five policies accept a perturbed prediction when its max probability reaches the threshold that "
                "accepts 60 … 100 % of clean development images (the clean side stays at 80 %). Their cost "
                "**J = λ·H + (1 − λ)·L** weighs harmful accepted flips against lost acceptances (larger = worse). "
                "Because every policy is judged on the *same* unknown pairing, two policies can be ordered even when "
                "their separate cost intervals overlap.")
    c1, c2 = st.columns([3, 2])
    c1.select_slider("Cost weight λ on harmful flips H", options=list(LAMBDAS), key="paired_lambda",
                     persist_state="session", help="0 = only lost acceptances matter, 1 = only harmful flips")
    c2.segmented_control("Information level", ["I0", "Ik", "I5"], key="paired_level", persist_state="session",
                         required=True)
    lam, level = float(st.session_state["paired_lambda"]), st.session_state["paired_level"]
    report = _policy_report(model, condition, source)
    coverages, matrix, regret = policy_matrix(report.differences, level=level, lam=lam)
    labels = [f"q = {q:.0%}" for q in coverages]
    selection = report.selection[(report.selection["level"] == level) & np.isclose(report.selection["lambda"], lam)].iloc[0]
    chosen = f"q = {selection['minimax_coverage']:.0%}"
    left, right = st.columns([3, 2])
    with left:
        figure(viz.policy_matrix_figure(matrix, labels),
               "Cell (row j, column ℓ): the largest amount by which j can cost more than ℓ over every pairing "
               "consistent with the level. Negative (blue, ✓) = row j is cheaper than ℓ whatever the pairing.")
    with right:
        figure(viz.regret_figure(labels, regret, chosen=chosen),
               f"Worst-case regret: how much worse each policy can be than the best alternative. Minimax choice: "
               f"{chosen}; least mean cost over uniformly weighted pairings: q = {selection['mean_coverage']:.0%} "
               f"({selection['mean_method']}).")
    diffs = report.differences
    certified = diffs[(diffs["level"] == level) & np.isclose(diffs["lambda"], lam) & diffs["certified"]]
    shown = certified.assign(ordering=[f"q = {a:.0%} cheaper than q = {b:.0%}" for a, b in
                                       zip(certified["coverage"], certified["versus_coverage"])])
    table(shown[["ordering", "D_plus", "separate_gap", "certified_separately", "missed_by_separate"]],
          name=f"certified orderings {model} {condition} {level} {lam:g}", key="paired_certified", height=220,
          caption=f"{len(shown)} certified ordering(s). missed_by_separate = only the shared-pairing comparison "
                  "certifies it (the separate intervals overlap).", download=diffs)
    costs = report.costs[(report.costs["level"] == level) & np.isclose(report.costs["lambda"], lam)]
    table(costs[["coverage", "tau", "J_low", "J_high", "J_mean", "J_observed", "mean_method"]],
          name=f"policy costs {model} {condition}", key="paired_costs", download=report.costs,
          caption="Separate cost interval [J_low, J_high] of each policy, its mean over feasible pairings and the "
                  "value under the recorded pairing (shares of the cell's pairs).")


def _body() -> None:
    records = demo_pool().records
    evaluation = records[records["split"] == "eval"] if "split" in records.columns else records
    sources = sorted(evaluation["source"].unique())
    models = sorted(evaluation["model"].unique())
    for key, options in (("paired_source", sources), ("paired_model", models)):
        if st.session_state[key] not in options:
            st.session_state[key] = options[0]
    c1, c2, c3, c4 = st.columns([2, 2, 3, 2])
    c1.selectbox("Source", sources, key="paired_source", persist_state="session",
                 help="Where the perturbed side comes from (synthetic corruptions or simulated recaptures).")
    c2.selectbox("Model", models, key="paired_model", persist_state="session")
    conditions = sorted(evaluation.loc[evaluation["source"] == st.session_state["paired_source"], "condition"].unique())
    if st.session_state["paired_condition"] not in conditions:
        st.session_state["paired_condition"] = conditions[0]
    c3.selectbox("Condition", conditions, key="paired_condition", persist_state="session")
    c4.selectbox("Acceptance threshold τ from clean coverage", _COVERAGES, key="paired_coverage",
                 persist_state="session", format_func=lambda q: f"{q:.0%} of clean dev. accepted",
                 help="τ is the lowest clean max-probability among the top q of the model's clean development "
                      "images; a prediction is accepted when its max probability is ≥ τ (both sides).")
    model, condition, coverage = (st.session_state[k] for k in ("paired_model", "paired_condition", "paired_coverage"))
    thresholds = _thresholds()
    tau = float(thresholds.loc[(thresholds["model"] == model) & (thresholds["coverage"] == coverage), "tau"].iloc[0])
    cell = evaluation[(evaluation["model"] == model) & (evaluation["condition"] == condition)
                      & (evaluation["source"] == st.session_state["paired_source"])]

    m = st.columns(4)
    m[0].metric("Pairs in the cell", f"{len(cell):,}")
    m[1].metric("Acceptance threshold τ", f"{tau:.4f}")
    m[2].metric("Clean accuracy", f"{(cell['clean_pred'] == cell['true_label']).mean():.1%}")
    m[3].metric("Perturbed accuracy", f"{(cell['pert_pred'] == cell['true_label']).mean():.1%}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        intervals = identified_intervals(cell, tau)
    figure(viz.intervals_figure(intervals),
           "Each bar spans every value some pairing consistent with that level allows; narrower is better "
           "identified. The ◆ (recorded pairing) always lies inside. 'undefined' = no pair is correct on both sides.")
    left, right = st.columns([3, 2])
    with left:
        counts = five_state_counts(cell, tau)
        columns = ["true_label", "n", "h", "r", "s", "w", "k", "u", "v", "t"]
        total = counts[columns[1:]].sum().to_frame().T.assign(true_label="all")
        table(pd.concat([counts[columns], total[columns]], ignore_index=True), name=f"five states {model} {condition}",
              key="paired_states", caption="Per class: n pairs; h harmful flip, r correction, s same wrong label, "
              "w changed wrong label, k correct both; u clean correct & accepted, v perturbed correct & rejected, "
              "t perturbed wrong & accepted.")
    with right:
        table(intervals, name=f"intervals {model} {condition}", key="paired_intervals",
              column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("low", "high", "observed")})

    _policies(records, model, condition, st.session_state["paired_source"])

    st.subheader("Across every model and condition")
    grid = _grid(coverage)
    summary, stats = grid_summary(grid)
    figure(viz.grid_summary_figure(summary),
           "Mean width of the identified interval over all cells of a source. The drop from I0 to Ik shows what "
           "reporting the per-class count of records correct on both sides buys; I5 adds the other state counts.")
    s = st.columns(4)
    s[0].metric("Cells", f"{stats['cells']:,}")
    s[1].metric("Cells where I5 narrows H", f"{stats['i5_narrows_h']:.1%}",
                help="The five-state counts strictly tighten H beyond Ik")
    s[2].metric("dM_k straddles 0 (Ik)", f"{stats['dmk_straddles_zero']:.1%}",
                help="Cells where even the sign of the confidence drop is not identified")
    s[3].metric("Cells with K = 0", f"{stats['k_zero']:.1%}", help="dM_k undefined: no pair correct on both sides")
    table(grid, name=f"identified intervals grid {coverage:.0%}", key="paired_grid", height=260,
          caption="Every cell, target and level, with the threshold τ of the cell's model.")


run_page(_body, "Paired bounds")
