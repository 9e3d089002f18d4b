"""Recapture queue: which images deserve a real (physical) re-test under a limited budget?"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import viz
from core.dashboard import UPLOAD_LIMIT_MB, coverage_by_budget, thumbnail_uri
from core.paired.screening import recapture_queue, risk_column, screening_metrics
from ui.components import figure, guarded, page_header, run_page, table
from ui.data import ScreeningData, demo_pool, paired_data, screening_data, screening_for_pool
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


# Caches are keyed by the data's key ("demo" or the upload's content hash and outcomes); the
# frames themselves are not hashed.
@st.cache_data(show_spinner="Evaluating every score under every condition…", max_entries=32)
def _metrics(key: str, model: str, *, _scores: pd.DataFrame, _outcomes: pd.DataFrame) -> pd.DataFrame:
    mine = _scores[_scores["model"] == model]
    return screening_metrics(mine, _outcomes[_outcomes["model"] == model], score_names=_defined(mine),
                             budgets=list(_BUDGETS))


def _defined(scores: pd.DataFrame) -> list[str]:
    """Scores with at least one defined value (an upload without prob_* has no A3, without transforms no TTA)."""
    return [s for s in _CURVE_SCORES if risk_column(s) in scores.columns and scores[risk_column(s)].notna().any()]


@st.cache_data(max_entries=8)
def _thumbnails(model: str) -> dict[int, str]:
    pool = demo_pool()
    ids = screening_for_pool().loc[lambda s: s["model"] == model, "record_id"].to_numpy()
    position = {int(r): i for i, r in enumerate(pool.image_ids)}
    return {int(r): thumbnail_uri(pool.images[position[int(r)]]) for r in ids if int(r) in position}


def _upload_widgets() -> None:
    """File uploaders of the per-probe and clean outputs; a complete pair replaces ``recapture_upload``."""
    st.markdown("**Per-probe outputs**, one row per (model, image, probe): `model, record_id, probe, kind, "
                "true_label, pred, max_prob, true_prob`, optional `prob_0 … prob_{C-1}` (needed for A3); `kind` is "
                "`corruption` (behind U, δ, ret, A3) or `transform` (behind TTA). **Clean outputs**, one row per "
                "(model, image): `model, record_id, true_label, pred, max_prob, true_prob`, optional `split` "
                "(`dev` / `eval`; only clean-correct `eval` images are ranked) and `group`. The real failures come "
                "from the paired records uploaded on the *Paired bounds* page (their perturbed side), when their "
                "model names and record ids match.")
    kwargs = dict(type=["csv", "parquet", "pq"], max_upload_size=UPLOAD_LIMIT_MB)
    c1, c2 = st.columns(2)
    files = {"probes": c1.file_uploader("Per-probe outputs (CSV or Parquet)", key="recap_probes_file", **kwargs),
             "clean": c2.file_uploader("Clean outputs (CSV or Parquet)", key="recap_clean_file", **kwargs)}
    if all(f is not None for f in files.values()):
        upload = {"files": {role: (f.name, f.getvalue()) for role, f in files.items()}}
        if upload != st.session_state["recapture_upload"]:
            st.session_state["recapture_upload"] = upload
    current = st.session_state["recapture_upload"]
    if current:
        names = ", ".join(name for name, _ in current["files"].values())
        c1, c2 = st.columns([5, 1])
        c1.caption(f"Ranking the uploaded {names}. Upload other files to replace them; they live in this browser "
                   "session only.")
        if c2.button("Forget the upload", type="tertiary", icon=":material/delete:", key="recap_forget"):
            st.session_state["recapture_upload"] = None
            st.rerun()


def _uploaded_outcomes() -> tuple[pd.DataFrame | None, str | None]:
    """Paired records of one source from the Paired bounds upload, with their cache key (or None, None)."""
    if st.session_state["paired_data_source"] != "paired":
        return None, None
    data = None
    with guarded("Reading the paired records uploaded on Paired bounds"):
        data = paired_data()
    if data is None:
        return None, None
    sources = sorted(data.records["source"].unique())
    if st.session_state["recap_outcome_source"] not in sources:
        recaptures = [s for s in sources if "recapture" in s]
        st.session_state["recap_outcome_source"] = (recaptures or sources)[0]
    st.selectbox("Real failures from the source", sources, key="recap_outcome_source", persist_state="session",
                 help="The conditions of this source in your paired records count as the real re-tests: an image "
                      "failed a condition when its perturbed prediction is wrong.")
    source = st.session_state["recap_outcome_source"]
    return data.records[data.records["source"] == source], f"{data.key}:{source}"


def _body() -> None:
    with st.expander("Your per-probe outputs", expanded=bool(st.session_state["recapture_upload"]),
                     icon=":material/upload_file:"):
        _upload_widgets()
    uploaded = bool(st.session_state["recapture_upload"])
    if not uploaded and st.session_state["paired_data_source"] != "demo":
        st.info("**This page shows the shipped demo pool, not your uploaded records.** Ranking images for a "
                "re-test needs the model's outputs on every synthetic probe of every image, which paired or "
                "unpaired records do not carry: upload them under *Your per-probe outputs* above (or use "
                "`python -m core paired --records FILE --probes FILE --clean-outputs FILE --tau T --out DIR`).",
                icon=":material/info:")
    outcomes, outcomes_key = _uploaded_outcomes() if uploaded else (None, None)
    data = None
    with guarded("Reading the uploaded probe outputs"):
        data = screening_data(outcomes, outcomes_key)
    if data is None:
        return
    if uploaded:
        st.caption(f"Images: **{data.label}**.")
    _queue(data)


def _queue(data: ScreeningData) -> None:
    scores = data.scores
    models = sorted(scores["model"].unique())
    if st.session_state["recap_model"] not in models:
        st.session_state["recap_model"] = models[0]
    c1, c2, c3, c4 = st.columns([2, 3, 2, 3])
    c1.selectbox("Model", models, key="recap_model", persist_state="session")
    model = st.session_state["recap_model"]
    mine = scores[scores["model"] == model]
    names = _defined(mine)
    # Only the outcomes of this model's ranked images can judge the ranking.
    outcomes = data.outcomes
    if outcomes is not None:
        outcomes = outcomes[(outcomes["model"] == model) & outcomes["record_id"].isin(mine["record_id"])]
        outcomes = outcomes if len(outcomes) else None
    if outcomes is not None:
        conditions = sorted(outcomes["condition"].unique())
        if st.session_state["recap_condition"] not in [_POOLED, *conditions]:
            st.session_state["recap_condition"] = _POOLED
        c2.selectbox("Recapture condition", [_POOLED, *conditions], key="recap_condition", persist_state="session",
                     help="p = print level, g = geometry level, e = exposure level of the simulated recapture"
                     if data.key == "demo" else "A condition of the chosen source of your paired records")
    if st.session_state["recap_score"] not in names:
        st.session_state["recap_score"] = names[0]
    c3.selectbox("Queue ranked by", names, key="recap_score", persist_state="session")
    c4.slider("Re-test budget (% of clean-correct images)", 1, 50, key="recap_budget", format="%d%%",
              persist_state="session")
    score, budget = st.session_state["recap_score"], st.session_state["recap_budget"] / 100
    condition = st.session_state["recap_condition"] if outcomes is not None else _POOLED
    cell = outcomes
    if outcomes is not None and condition != _POOLED:
        cell = outcomes[outcomes["condition"] == condition]
    queue = recapture_queue(mine, score=score, budget=budget, outcomes=cell)

    m = st.columns(4)
    m[0].metric("Clean-correct test images", f"{len(mine):,}")
    m[1].metric("Re-tests in the queue", f"{int(queue['k'].iloc[0]):,}")
    if outcomes is None:
        st.info(f"**No real failures to judge the scores by:** {_why_no_outcomes(data)} The queue below ranks "
                "the images by the score alone; the coverage curves need the outcomes and are hidden.",
                icon=":material/info:")
    else:
        m[2].metric("Failures found (expected)", f"{queue['coverage'].iloc[0]:.0%}",
                    help="Share of all real failures (pooled over the chosen conditions) that the queue re-tests")
        m[3].metric("Best possible at this budget", f"{queue['ceiling'].iloc[0]:.0%}")
        budgets, curves, ceiling, random = coverage_by_budget(
            _metrics(data.key, model, _scores=scores, _outcomes=data.outcomes),
            condition=None if condition == _POOLED else condition)
        figure(viz.coverage_figure(budgets, curves, ceiling=ceiling, random=random, selected=budget, highlight=score,
                                   title="Real failures found within the re-test budget",
                                   y_title="failure coverage (share of failures found)"),
               "Higher is better. Each line ranks the images by one score; dashed grey is the best any ranking "
               "could do, dotted grey is picking images at random. Ties at the cut-off are shared out (prorated).")

    st.subheader(f"Queue: re-test these {int(queue['k'].iloc[0])} images first")
    shown = queue
    if data.images:
        thumbs = _thumbnails(model)
        shown = queue.assign(image=queue["record_id"].map(lambda r: thumbs.get(int(r))))
    # The queue ranks by risk = ±score (SPEC B.5: −U, −S, δ, …); a negated probability reads as
    # nonsense ("risk −0.4"), so the score is shown as it is, with the direction that ranks first.
    lower_first = bool(len(queue)) and np.allclose(queue["risk"], -queue[score], equal_nan=True)
    direction = "lowest first" if lower_first else "highest first"
    columns = ["rank", "image", "record_id", "true_label", score, "selection_prob", "n_failed", "n_conditions"]
    shown = shown[[c for c in columns if c in shown.columns]]
    caption = (f"Ranked by {score}, {direction} (risk = {'−' if lower_first else ''}{score}, larger = riskier; the "
               "CSV has the risk column). Selection probability < 1 marks images tied at the cut-off (they share "
               "the last places).")
    if outcomes is not None:
        caption += " n failed: in how many of the chosen conditions the image was misclassified."
    table(shown, name=f"recapture queue {model} {score} {budget:.0%}", key="recap_table", height=420,
          download=queue, caption=caption,
          column_config={"image": st.column_config.ImageColumn("image", width="small"),
                         score: st.column_config.NumberColumn(f"{score} ({direction})", format="%.3f")})
    if data.key == "demo" and not data.images:
        st.caption("These records ship no images; the queue lists record ids only.")


def _why_no_outcomes(data: ScreeningData) -> str:
    if data.outcomes is None:
        return ("upload paired records on the *Paired bounds* page (*Upload paired records*) whose perturbed side "
                "holds the real re-tests of these images.")
    return (f"the chosen source of your paired records has no record of model {st.session_state['recap_model']!r} "
            "with a record id of the ranked images (clean-correct evaluation images); check the model names and "
            "record ids.")


run_page(_body, "Recapture queue")
