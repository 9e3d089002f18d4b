"""Recapture queue: which images deserve a real (physical) re-test under a limited budget?"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import viz
from core.dashboard import coverage_by_budget, thumbnail_uri
from core.paired.screening import RISK_SIGN, recapture_queue, screening_metrics
from ui.components import figure, page_header, run_page, table
from ui.data import demo_pool, recapture_outcomes, screening_for_pool
from ui.entry import ensure_entrypoint

ensure_entrypoint()

page_header(
    "Recapture queue",
    "Physical re-tests (print, photograph, re-acquire) are expensive. Each clean-correct test image is "
    "scored from the model's own outputs on cheap synthetic probes, and the top of the ranking is re-tested "
    "first. The curves show which share of the images that really fail under the recapture conditions each "
    "score puts inside the budget. Scores are used as **risks (larger = riskier)**: low mean true-class "
    "probability under probes (**U**), low clean confidence (**S**), large drop **δ = S − U**, few probes "
    "still right (**ret**), low probe alignment (**A3**) and low test-time-augmentation probability (**TTA**). "
    "The demo's recapture conditions are *simulated* print-and-recapture.",
)

_CURVE_SCORES = ("U", "S", "delta", "ret", "A3", "TTA")
_BUDGETS = np.arange(1, 51) / 50
_POOLED = "all recapture conditions (mean)"


@st.cache_data(show_spinner="Evaluating every score under every condition…", max_entries=32)
def _metrics(model: str) -> pd.DataFrame:
    scores = screening_for_pool()
    outcomes = recapture_outcomes()
    names = [s for s in _CURVE_SCORES if f"risk_{s}" in scores.columns and scores[f"risk_{s}"].notna().any()]
    return screening_metrics(scores[scores["model"] == model], outcomes[outcomes["model"] == model],
                             score_names=names, budgets=list(_BUDGETS))


@st.cache_data(max_entries=8)
def _thumbnails(model: str) -> dict[int, str]:
    pool = demo_pool()
    ids = screening_for_pool().loc[lambda s: s["model"] == model, "record_id"].to_numpy()
    position = {int(r): i for i, r in enumerate(pool.image_ids)}
    return {int(r): thumbnail_uri(pool.images[position[int(r)]]) for r in ids if int(r) in position}


def _body() -> None:
    if st.session_state["paired_data_source"] != "demo":
        st.info("**This page shows the shipped demo pool, not your uploaded records.** Ranking images for a "
                "re-test needs the model's outputs on every synthetic probe of every image (long format "
                "`model, record_id, probe, kind, true_label, pred, max_prob, true_prob`, see docs/DEVELOPING.md); "
                "paired or unpaired records do not carry them. With those outputs, the command line ranks your "
                "own images: `python -m core paired --records FILE --probes FILE --clean-outputs FILE --tau T "
                "--out DIR` (see `python -m core paired --help`).", icon=":material/info:")
    pool = demo_pool()
    scores = screening_for_pool()
    outcomes = recapture_outcomes()
    models = sorted(scores["model"].unique())
    conditions = sorted(outcomes["condition"].unique())
    for key, options in (("recap_model", models), ("recap_condition", [_POOLED, *conditions])):
        if st.session_state[key] not in options:
            st.session_state[key] = options[0]
    c1, c2, c3, c4 = st.columns([2, 3, 2, 3])
    c1.selectbox("Model", models, key="recap_model", persist_state="session")
    c2.selectbox("Recapture condition", [_POOLED, *conditions], key="recap_condition", persist_state="session",
                 help="p = print level, g = geometry level, e = exposure level of the simulated recapture")
    c3.selectbox("Queue ranked by", [s for s in _CURVE_SCORES if s in RISK_SIGN], key="recap_score",
                 persist_state="session")
    c4.slider("Re-test budget (% of clean-correct images)", 1, 50, key="recap_budget", format="%d%%",
              persist_state="session")
    model, condition = st.session_state["recap_model"], st.session_state["recap_condition"]
    score, budget = st.session_state["recap_score"], st.session_state["recap_budget"] / 100
    cell = outcomes[outcomes["model"] == model]
    if condition != _POOLED:
        cell = cell[cell["condition"] == condition]
    mine = scores[scores["model"] == model]

    budgets, curves, ceiling, random = coverage_by_budget(_metrics(model),
                                                          condition=None if condition == _POOLED else condition)
    queue = recapture_queue(mine, score=score, budget=budget, outcomes=cell)
    m = st.columns(4)
    m[0].metric("Clean-correct test images", f"{len(mine):,}")
    m[1].metric("Re-tests in the queue", f"{int(queue['k'].iloc[0]):,}")
    m[2].metric("Failures found (expected)", f"{queue['coverage'].iloc[0]:.0%}",
                help="Share of all real failures (pooled over the chosen conditions) that the queue re-tests")
    m[3].metric("Best possible at this budget", f"{queue['ceiling'].iloc[0]:.0%}")
    figure(viz.coverage_figure(budgets, curves, ceiling=ceiling, random=random, selected=budget, highlight=score,
                               title="Real failures found within the re-test budget",
                               y_title="failure coverage (share of failures found)"),
           "Higher is better. Each line ranks the images by one score; dashed grey is the best any ranking could "
           "do, dotted grey is picking images at random. Ties at the cut-off are shared out (prorated).")

    st.subheader(f"Queue: re-test these {int(queue['k'].iloc[0])} images first")
    thumbs = _thumbnails(model)
    shown = queue.assign(image=queue["record_id"].map(lambda r: thumbs.get(int(r))))
    columns = ["rank", "image", "record_id", "true_label", score, "risk", "selection_prob", "n_failed", "n_conditions"]
    shown = shown[[c for c in columns if c in shown.columns]]
    table(shown, name=f"recapture queue {model} {score} {budget:.0%}", key="recap_table", height=420,
          download=queue, caption="selection_prob < 1 marks images tied at the cut-off (they share the last "
          "places). n_failed: in how many of the chosen conditions the image was misclassified.",
          column_config={"image": st.column_config.ImageColumn("image", width="small"),
                         score: st.column_config.NumberColumn(score, format="%.3f"),
                         "risk": st.column_config.NumberColumn("risk (larger = riskier)", format="%.3f")})
    if pool.images.size == 0:
        st.caption("These records ship no images; the queue lists record ids only.")


run_page(_body, "Recapture queue")
