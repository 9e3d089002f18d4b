"""AppTest of the dashboard: every page runs on the default data and its key widgets act.

All runs start from ``app.py`` (the ``app`` fixture), so the session defaults, the sidebar and
``st.navigation`` are exercised exactly as in the browser.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from app_checks import assert_ok, explorer_path, metric, open_overview_tab

from core.reviews import ReviewStore
from ui.state import ExplorerState, OverviewState, SharedState

PAGES = ["overview", "explorer", "triage", "comparison", "calibration", "paired_bounds", "recapture"]


def _tables_with(at, column: str) -> list:
    return [t for t in at.dataframe if column in t.value.columns]


def _table_with(at, column: str):
    """The first table showing ``column`` (only selectable tables carry their key in AppTest)."""
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame
    raise AssertionError(f"no table with column {column!r}")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_without_error(app, page):
    assert_ok(app)
    app.switch_page(f"pages/{page}.py").run()
    assert_ok(app)
    assert app.title, "every page starts with a title"
    assert app.caption, "every page explains its charts"
    if page in ("paired_bounds", "recapture"):  # image pages: no tabular selection in the sidebar
        assert not [w for w in app.sidebar.selectbox if w.key in ("dataset", "model")]
        assert app.session_state[SharedState.dataset.key] == "credit_data"
    else:
        assert app.sidebar.selectbox(key="dataset").value == "credit_data"


def test_default_overview_shows_the_default_audit(app):
    assert app.title[0].value == "Overview: data & protocol"
    assert re.fullmatch(r"0\.\d{3}", metric(app, "FDS AUROC (brittle vs not)"))
    assert any("certificate fingerprint" in c.value for c in app.caption)
    assert not [m for m in app.metric if m.label == "Rows"], "the Data tab is drawn once opened"
    assert not [b for b in app.button if b.label == "Apply protocol"], "the Protocol tab too"
    open_overview_tab(app, "Data")
    assert metric(app, "Rows") == "4,454"
    assert not [m for m in app.metric if m.label.startswith("FDS AUROC")], "only the open tab is drawn"
    open_overview_tab(app, "Protocol")
    assert [b for b in app.button if b.label == "Apply protocol"]


def test_overview_draws_the_preview_and_the_groups_only_once_opened(app):
    from ui.data import _bundled

    frame = _bundled("credit_data").frame
    assert not app.dataframe, "no table on the first screen: every one is drawn once opened"
    app.session_state[OverviewState.groups_open.key] = True  # as a click on the expander sets it
    app.session_state[OverviewState.evaluation_open.key] = True
    app.run()
    assert_ok(app)
    groups = _tables_with(app, "group")
    assert len(groups) == 1 and len(groups[0].value) == 13  # one group per raw column of credit_data
    evaluation = _tables_with(app, "auroc")
    assert len(evaluation) == 1 and "fds" in evaluation[0].value["score"].tolist()
    open_overview_tab(app, "Data")
    assert not _tables_with(app, "row_id")  # closed: not drawn
    app.session_state[OverviewState.preview_open.key] = True
    app.run()
    assert_ok(app)
    preview = _tables_with(app, "row_id")[0].value
    assert len(preview) == 500 and preview["row_id"].tolist() == frame.index[:500].tolist()


def test_budget_slider_changes_the_queue_length(app):
    app.switch_page("pages/triage.py").run()
    n = int(metric(app, "Ranked predictions").replace(",", ""))
    assert int(metric(app, "Queue length")) == max(1, int(n * 0.10 + 0.5))
    queue = app.dataframe(key="triage_table").value
    assert len(queue) == int(metric(app, "Queue length"))
    app.slider(key="triage_budget").set_value(30).run()
    assert_ok(app)
    assert int(metric(app, "Queue length")) == max(1, int(n * 0.30 + 0.5))
    assert len(app.dataframe(key="triage_table").value) == int(metric(app, "Queue length"))
    # The budget survives a page switch (persisted widget state).
    app.switch_page("pages/overview.py").run()
    app.switch_page("pages/triage.py").run()
    assert app.slider(key="triage_budget").value == 30


def _whatif_line(at) -> str:
    lines = [m.value for m in at.markdown if m.value.startswith("What-if prediction")]
    assert lines
    return lines[0]


def test_group_toggle_changes_the_whatif_prediction(app):
    app.switch_page("pages/explorer.py").run()
    before = _whatif_line(app)
    assert "unchanged, with 0 group(s)" in before
    budget = metric(app, "Flip budget k*")
    pills = app.button_group(key="whatif_groups")
    path = explorer_path(app)
    assert set(path) <= set(pills.options)
    # Removing the certificate's path up to k* must flip the prediction: that is what k* means.
    chosen = path[: int(budget)] if budget.isdigit() else path
    pills.set_value(chosen).run()
    assert_ok(app)
    after = _whatif_line(app)
    assert after != before
    assert f"with {len(chosen)} group(s)" in after
    if budget.isdigit():
        assert "**flipped**" in after


def test_selecting_a_table_row_opens_that_sample(app):
    app.switch_page("pages/explorer.py").run()
    table = app.dataframe(key="explorer_table").value
    second = int(table.iloc[1]["sample_id"])
    assert f"Sample {second}:" not in app.subheader[0].value
    app.session_state[ExplorerState.table.key] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    app.run()
    assert_ok(app)
    assert app.subheader[0].value.startswith(f"Sample {second}:")
    # The choice survives a page switch.
    app.switch_page("pages/triage.py").run()
    app.switch_page("pages/explorer.py").run()
    assert app.subheader[0].value.startswith(f"Sample {second}:")


def test_review_decision_is_stored_and_read_back_after_restart(app, new_app, reviews_db):
    app.switch_page("pages/triage.py").run()
    first = int(app.dataframe(key="triage_table").value.iloc[0]["sample_id"])
    app.text_input(key="review_reviewer").input("ana")
    app.radio(key="review_decision").set_value("needs_reacquisition")
    app.text_area(key="review_note").input("Income looks imputed; re-check the source file.")
    app.button[[b.label for b in app.button].index("Save decision")].click().run()
    assert_ok(app)
    assert any(f"Saved: sample {first}" in s.value for s in app.success)
    assert app.text_area(key="review_note").value == ""  # cleared for the next case

    # A fresh session (as after a server restart) finds the decision in the same database.
    fresh = new_app()
    fresh.switch_page("pages/triage.py").run()
    assert_ok(fresh)
    queue = fresh.dataframe(key="triage_table").value
    row = queue[queue["sample_id"] == first].iloc[0]
    assert (row["decision"], row["reviewer"]) == ("Needs evidence re-acquisition", "ana")
    history = _table_with(fresh, "created_at").value
    assert history["note"].tolist() == ["Income looks imputed; re-check the source file."]
    stored = ReviewStore(reviews_db).export()
    assert stored[["sample_id", "reviewer", "decision"]].values.tolist() == [[str(first), "ana", "needs_reacquisition"]]


def test_blank_reviewer_is_refused_with_a_message(app, reviews_db):
    app.switch_page("pages/triage.py").run()
    app.button[[b.label for b in app.button].index("Save decision")].click().run()
    assert not app.exception
    assert any("`reviewer` must not be empty" in e.value for e in app.error)
    assert ReviewStore(reviews_db).export().empty


def test_unwritable_review_database_is_an_error_message_not_a_crash(new_app, tmp_path, monkeypatch):
    # The path is chosen at server start (here the env var), never typed into the sidebar.
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(blocker / "sub" / "r.sqlite3"))
    app = new_app()
    assert not app.exception
    assert any("Cannot open the review database" in e.value for e in app.sidebar.error)
    assert not [w for w in app.sidebar.text_input if w.key == "reviews_db"]
    assert blocker.read_text() == "x"


def test_all_zero_fds_weights_are_refused_on_the_protocol_form(app):
    # FDS would be 0 for every row: refused (core.cfc.protocol), shown as a message, protocol kept.
    before = app.session_state[SharedState.protocol.key]
    open_overview_tab(app, "Protocol")
    for key in ("proto_w1", "proto_w2", "proto_w3"):
        app.number_input(key=key).set_value(0.0)
    app.button[[b.label for b in app.button].index("Apply protocol")].click().run()
    assert not app.exception
    assert any("`weights` must not all be zero" in e.value for e in app.error)
    assert app.session_state[SharedState.protocol.key] == before


def test_bad_upload_shows_what_to_fix(app):
    csv = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": ["a", "a", "a", "a"]}).to_csv(index=False).encode()
    open_overview_tab(app, "Data")
    app.get("file_uploader")[0].set_value(("single_class.csv", csv, "text/csv")).run()
    assert_ok(app)
    app.selectbox(key="upload_target").set_value("y").run()
    app.button[[b.label for b in app.button].index("Add to the datasets")].click().run()
    assert not app.exception
    assert any("single_class.csv" in e.value for e in app.error)
    assert app.sidebar.selectbox(key="dataset").value == "credit_data"


def test_calibration_method_filter_changes_the_diagram(app):
    app.switch_page("pages/calibration.py").run()

    def traces(at):
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        return {t.get("name") for t in spec["data"]}

    assert {"uncalibrated", "global temperature", "BATS"} <= traces(app)
    app.multiselect(key="calib_methods").set_value(["bats"]).run()
    assert_ok(app)
    assert "uncalibrated" not in traces(app) and "BATS" in traces(app)


def test_paired_condition_changes_the_five_state_table(app):
    app.switch_page("pages/paired_bounds.py").run()
    before = _table_with(app, "h").value
    options = app.selectbox(key="paired_condition").options
    app.selectbox(key="paired_condition").set_value(options[-1]).run()
    assert_ok(app)
    after = _table_with(app, "h").value
    assert not before.equals(after)
    assert after.iloc[-1]["true_label"] == "all"
    assert after.iloc[-1][["h", "r", "s", "w", "k"]].sum() == after.iloc[-1]["n"]


def test_recapture_budget_changes_the_queue(app):
    app.switch_page("pages/recapture.py").run()
    n = int(metric(app, "Clean-correct test images").replace(",", ""))
    assert int(metric(app, "Re-tests in the queue")) == max(1, int(n * 0.10 + 0.5))
    app.slider(key="recap_budget").set_value(25).run()
    assert_ok(app)
    k = int(metric(app, "Re-tests in the queue"))
    assert k == max(1, int(n * 0.25 + 0.5))
    assert _table_with(app, "selection_prob").value["selection_prob"].sum() == pytest.approx(k)


def test_paired_cost_weight_changes_the_policy_comparison(app):
    app.switch_page("pages/paired_bounds.py").run()

    def heatmap(at):
        for chart in at.get("plotly_chart"):
            spec = json.loads(chart.proto.spec)
            if spec["data"] and spec["data"][0].get("type") == "heatmap":
                return spec["data"][0]["text"]  # z is sent as a typed array; the labels are plain
        raise AssertionError("policy matrix not found")

    before = heatmap(app)
    app.select_slider(key="paired_lambda").set_value(1.0).run()
    assert_ok(app)
    after = heatmap(app)
    assert before != after
    assert all(row[i] == "+0.0000" for i, row in enumerate(after))  # D⁺[j, j] = 0


def test_recapture_outcomes_are_read_per_model_as_the_pool_holds_them():
    """The demo's outcomes, read one model at a time, are that model's rows of the pool's
    simulated recaptures; an upload without paired records has none."""
    from core.imaging.demo import load_demo_pool
    from core.imaging.demo_screening import demo_outcomes
    from ui.paired_data import ScreeningData

    outcomes = demo_outcomes(load_demo_pool())
    demo = ScreeningData("demo", "the shipped demo pool", pd.DataFrame(), None)
    assert demo.has_outcomes
    for model in sorted(outcomes["model"].unique())[::4]:
        want = outcomes[outcomes["model"] == model]
        assert len(want) > 0
        pd.testing.assert_frame_equal(demo.outcomes_of(model), want, check_exact=True)
    bare = ScreeningData("probe:abc", "a probe run", pd.DataFrame(), None)
    assert not bare.has_outcomes and bare.outcomes_of("cnn-w8") is None
    uploaded = ScreeningData("abc:key", "files", pd.DataFrame(), outcomes)
    pd.testing.assert_frame_equal(uploaded.outcomes_of("cnn-w8"), outcomes[outcomes["model"] == "cnn-w8"])


def test_the_prefetched_demo_renders_are_the_conditions_drawn_for_the_whole_pool():
    """What the background prefetch renders (ui.prefetch): the synthetic conditions whose one-image
    render is not available, each rendered as the Recapture queue's probe views read it."""
    import numpy as np

    from core.imaging.demo import load_demo_images, render_condition
    from ui.paired_data import demo_condition, random_demo_conditions

    names = random_demo_conditions()
    assert sorted(names) == sorted(
        f"{n} s{s}" for n in ("gaussian_noise", "shot_noise", "impulse_noise") for s in (2, 4)
    )
    shown = load_demo_images()
    np.testing.assert_array_equal(
        demo_condition(names[0]), render_condition(shown.images, names[0], seed=int(shown.manifest["seed"]))
    )


def test_the_prefetch_starts_once_per_process_at_its_second_run(monkeypatch):
    import threading
    import time

    import ui.prefetch

    started = []
    monkeypatch.setattr(ui.prefetch, "_read", lambda: started.append(1))
    monkeypatch.setattr(ui.prefetch, "_started", threading.Event())
    monkeypatch.setattr(ui.prefetch, "_runs", 0)
    ui.prefetch.prefetch_demo_data()  # the first run draws the first screen: nothing starts
    time.sleep(0.2)
    assert started == []
    for _ in range(3):
        ui.prefetch.prefetch_demo_data()
    deadline = time.monotonic() + 10
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started == [1]
