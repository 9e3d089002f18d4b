"""AppTest of the issue-40 headline on the pages: the guarantee beside Triage's budget slider, the
capture ceiling, the RCMA line of the Overview and the near-tie flag of the Explorer."""

from __future__ import annotations

import math

import numpy as np
from app_checks import assert_ok, metric

from core.tabular.audit import run_audit
from core.tabular.datasets import load_dataset
from core.tabular.shipped import shipped_audit
from ui.state import ExplorerState, SharedState


def _default(model: str = "hist_gb"):
    dataset = load_dataset("credit_data")
    return shipped_audit(dataset, model=model, seed=0) or run_audit(dataset, model=model, seed=0)


def _guarantee(at) -> str:
    lines = [m.value for m in at.markdown if m.value.startswith("**Guarantee:**")]
    assert len(lines) == 1, [m.value for m in at.markdown][:10]
    return lines[0]


def test_triage_states_the_guarantee_beside_the_budget_and_the_ceiling(app):
    app.switch_page("pages/triage.py").run()
    assert_ok(app)
    result = _default()
    queue = app.dataframe(key="triage_table").value
    tied = np.abs(result.certificates.table.loc[queue["sample_id"], "margin"].to_numpy()) < 1e-3
    assert queue["near_tie"].tolist() == tied.tolist()
    for percent in (10, 30):
        if percent != 10:
            app.slider(key="triage_budget").set_value(percent).run()
            assert_ok(app)
        bound = result.capture_bound(percent / 100)
        assert _guarantee(app) == (
            f"**Guarantee:** reviewing the top {percent} % catches at least {math.floor(100 * bound.lower)} % of "
            "brittle cases (90 % confidence)."
        )
        ceiling = result.capture_vs_ceiling  # at 10 %: the evaluation's own budget
        found = metric(app, "Brittle found by fds")
        assert found.endswith("possible") and " of " in found
        if percent == 10:
            row = ceiling[(ceiling["score"] == "fds") & (ceiling["budget"] == 0.1)].iloc[0]
            assert found == f"{row['capture']:.0%} of {row['ceiling']:.0%} possible"


def test_overview_states_the_rcma_headline_with_its_near_ties(app):
    assert_ok(app)
    f = _default().fragility
    lines = [c.value for c in app.caption if "near-ties left out" in c.value]
    assert len(lines) == 1 and f"mean RCMA {f['mean_rcma']:.3f}" in lines[0]


def test_explorer_flags_a_near_tie_in_plain_words(app):
    forest = _default("random_forest")
    t = forest.certificates.table
    tied = t.index[np.abs(t["margin"].to_numpy()) < 1e-3]
    assert len(tied), "the default random forest has near-ties (exact 50 / 50 votes)"
    app.sidebar.selectbox(key="model").set_value("random_forest").run()
    app.session_state[SharedState.selected_sample.key] = int(tied[0])
    app.session_state[ExplorerState.high_confidence.key] = False  # a near-tie (p̂ = 0.5) is not confident
    app.switch_page("pages/explorer.py").run()
    assert_ok(app)
    notes = [i.value for i in app.info if i.value.startswith("Near-tie:")]
    assert len(notes) == 1 and "coin flip" in notes[0]
    intro = [m.value for m in app.markdown if m.value.startswith("One prediction at a time")]
    assert len(intro) == 1 and "A **near-tie** is a prediction whose top two classes are all but equal" in intro[0]
