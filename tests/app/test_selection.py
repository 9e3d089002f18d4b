"""The triage evidence panel, the sample selection shared by the tabular pages, and the
explorer's filter / CSV / what-if behaviour (issue 11, items 1 and 4).

Expected values are recomputed here from an independent run of the default audit (same
dataset, model, seed and protocol as the app's default), never read back from the page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from app_checks import assert_ok, explorer_path, metric

from core.cfc.operators import remove
from ui.state import SharedState, TriageState


@pytest.fixture(scope="module")
def audit():
    """The app's default audit (credit_data, hist_gb, seed 0, default protocol), run directly."""
    from core.tabular.audit import run_audit

    return run_audit("credit_data", model="hist_gb", seed=0)


def _table_with(at, column: str) -> pd.DataFrame:
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with column {column!r}")


def _select(at, key: str, row: int) -> None:
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert_ok(at)


def _explorer_sample(at) -> int:
    head = at.subheader[0].value
    assert head.startswith("Sample "), head
    return int(head.split()[1].rstrip(":"))


def _click(at, label: str) -> None:
    at.button[[b.label for b in at.button].index(label)].click().run()
    assert_ok(at)


# --------------------------------------------------------------------------------------------
# Triage: the evidence of the case under review
# --------------------------------------------------------------------------------------------
def test_triage_panel_shows_the_evidence_of_the_selected_case(app, audit):
    app.switch_page("pages/triage.py").run()
    assert_ok(app)
    queue = app.dataframe(key="triage_table").value
    _select(app, "triage_table", 2)
    sample_id = int(queue.iloc[2]["sample_id"])
    assert app.session_state[SharedState.selected_sample.key] == sample_id
    assert any(e.label.startswith(f"Evidence for sample {sample_id}:") for e in app.expander)

    certs = audit.certificates
    position = int(np.flatnonzero(certs.table.index.to_numpy() == sample_id)[0])
    row = certs.table.iloc[position]
    path = list(row["path"])
    k = int(row["flip_budget"])
    assert metric(app, "Flip budget k*") == (str(k) if k <= certs.depth else f"no flip ≤ {certs.depth}")
    assert metric(app, "FDS (risk)") == f"{row['fds']:.3f}"
    assert explorer_path(app) == path

    # The prediction after each removal, recomputed from the model on R(x, path[:j]).
    x = audit.X_test[position : position + 1]
    edited = np.vstack([remove(x, audit.groups, audit.baseline, path[:j]) for j in range(len(path) + 1)])
    proba = audit.model.predict_proba(edited)
    classes = [str(c) for c in audit.dataset.classes]
    assert not any("group removed" in t.value.columns for t in app.dataframe)  # only the open tab is drawn
    app.session_state[TriageState.tab.key] = "Prediction after each removal"  # as a click on the tab sets it
    app.run()
    assert_ok(app)
    steps = _table_with(app, "group removed")
    assert steps["group removed"].tolist() == ["none (intact)", *path]
    assert steps["prediction"].tolist() == [classes[i] for i in proba.argmax(axis=1)]
    # Rounded to 3 decimals on the page; the model call crosses BLAS/OpenMP kernels.
    np.testing.assert_allclose(
        steps[f"P({classes[int(row['pred'])]})"].to_numpy(float), proba[:, int(row["pred"])], atol=6e-4
    )
    flips = steps.index[steps["flipped"] == "yes"]
    assert (flips[0] if len(flips) else certs.depth + 1) == k

    # Raw values of the path's groups beside the baseline that replaces them.
    app.session_state[TriageState.tab.key] = "Path values vs baseline"
    app.run()
    assert_ok(app)
    evidence = _table_with(app, "baseline")
    expected = [(g, c) for g in path for c in audit.groups[g]]
    assert list(zip(evidence["group"], evidence["step"])) == [(g, path.index(g) + 1) for g, _ in expected]
    np.testing.assert_allclose(
        evidence["baseline"].to_numpy(float), [audit.baseline[c] for _, c in expected], atol=5e-4
    )
    np.testing.assert_allclose(
        evidence["value"].to_numpy(float), [audit.X_test[position, c] for _, c in expected], atol=5e-4
    )
    raw = audit.raw_test.loc[sample_id]
    first = evidence.iloc[0]
    value = raw[first["raw column"]]
    if pd.isna(value):
        assert first["raw value"] == "missing"
    elif isinstance(value, (float, np.floating)):
        assert float(first["raw value"]) == pytest.approx(float(value), abs=5e-4)
    else:
        assert first["raw value"] == str(value)


# --------------------------------------------------------------------------------------------
# One selection for every tabular page
# --------------------------------------------------------------------------------------------
def test_open_in_explorer_keeps_the_triage_sample(app):
    app.switch_page("pages/triage.py").run()
    queue = app.dataframe(key="triage_table").value
    _select(app, "triage_table", 2)
    sample_id = int(queue.iloc[2]["sample_id"])
    assert sample_id != int(queue.iloc[0]["sample_id"])
    _click(app, "Open in explorer")
    assert app.title[0].value == "Certificate explorer"
    assert _explorer_sample(app) == sample_id


def test_switching_pages_keeps_the_selection_both_ways(app):
    app.switch_page("pages/triage.py").run()
    queue = app.dataframe(key="triage_table").value
    _select(app, "triage_table", 3)
    chosen = int(queue.iloc[3]["sample_id"])
    app.switch_page("pages/explorer.py").run()
    assert_ok(app)
    assert _explorer_sample(app) == chosen
    table = app.dataframe(key="explorer_table").value
    other = int(table.iloc[5]["sample_id"])
    _select(app, "explorer_table", 5)
    assert _explorer_sample(app) == other
    app.switch_page("pages/triage.py").run()
    assert_ok(app)
    assert app.session_state[SharedState.selected_sample.key] == other
    assert any(e.label.startswith(f"Evidence for sample {other}:") for e in app.expander)
    assert f"History of sample {other}" in " ".join(m.value for m in app.markdown)
    # The stale explorer selection (row 5 of its table) must not override a newer choice.
    _select(app, "triage_table", 0)
    first = int(queue.iloc[0]["sample_id"])
    app.switch_page("pages/explorer.py").run()
    assert _explorer_sample(app) == first


def test_open_in_explorer_shows_a_low_confidence_case_too(app):
    app.switch_page("pages/triage.py").run()
    app.radio(key="triage_scope").set_value("all").run()
    app.slider(key="triage_budget").set_value(50).run()
    assert_ok(app)
    queue = app.dataframe(key="triage_table").value
    low = np.flatnonzero(queue["confidence"].to_numpy(float) < 0.9)
    assert low.size, "the top half of all predictions holds low-confidence ones on the default audit"
    _select(app, "triage_table", int(low[0]))
    sample_id = int(queue.iloc[int(low[0])]["sample_id"])
    _click(app, "Open in explorer")
    assert _explorer_sample(app) == sample_id
    assert app.toggle(key="explorer_hc").value is False


# --------------------------------------------------------------------------------------------
# Explorer: the certificate is a row of the filtered table; the CSV is the filtered table
# --------------------------------------------------------------------------------------------
@pytest.fixture
def downloads(monkeypatch):
    """Every file a download button would hand over, by its download file name (latest run last).

    Files given as bytes are recorded as they are stored; files generated on click (a callable,
    as the tables' CSVs are) are generated here at once, as a click would.
    """
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    seen: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id
    original_deferred = MediaFileManager.add_deferred

    def record(self, path_or_data, mimetype, kind, filename=None):
        if isinstance(path_or_data, bytes) and filename:
            seen[filename] = path_or_data
        return original(self, path_or_data, mimetype, kind, filename)

    def record_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        if file_name:
            data = data_callable()
            seen[file_name] = data.encode("utf-8") if isinstance(data, str) else data
        return original_deferred(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    monkeypatch.setattr(MediaFileManager, "add_deferred", record_deferred)
    return seen


def _csv(downloads, name: str) -> pd.DataFrame:
    import io

    return pd.read_csv(io.BytesIO(downloads[name]))


def test_explorer_search_shows_a_certificate_of_the_filtered_rows(app, downloads):
    app.switch_page("pages/explorer.py").run()
    full = app.dataframe(key="explorer_table").value
    before = _explorer_sample(app)
    assert len(_csv(downloads, "test_predictions.csv")) == len(full)
    # A sample id as query: the filter drops the sample shown so far.
    target = next(int(s) for s in full["sample_id"] if str(before) not in str(s))
    app.text_input(key="explorer_search").input(str(target)).run()
    assert_ok(app)
    filtered = app.dataframe(key="explorer_table").value
    ids = set(filtered["sample_id"].astype(int))
    expected = {int(s) for s in full["sample_id"] if str(target) in str(s)}
    assert ids == expected and before not in ids
    assert _explorer_sample(app) in ids
    csv = _csv(downloads, "test_predictions.csv")
    assert len(csv) == len(filtered)
    assert set(csv["sample_id"]) == ids
    # Nothing matches: say so and show no certificate.
    app.text_input(key="explorer_search").input("no such sample").run()
    assert not app.exception
    assert any("No prediction matches 'no such sample'" in w.value for w in app.warning)
    assert not [s for s in app.subheader if s.value.startswith("Sample ")]


def test_explorer_class_search_keeps_a_matching_selection(app):
    app.switch_page("pages/explorer.py").run()
    full = app.dataframe(key="explorer_table").value
    cls = str(full.iloc[0]["predicted"])
    match = full[(full["predicted"].astype(str) == cls) | (full["true_class"].astype(str) == cls)]
    _select(app, "explorer_table", int(np.flatnonzero(full["sample_id"].isin(match["sample_id"]))[-1]))
    chosen = _explorer_sample(app)
    app.text_input(key="explorer_search").input(cls).run()
    assert_ok(app)
    ids = set(app.dataframe(key="explorer_table").value["sample_id"].astype(int))
    assert chosen in ids
    assert _explorer_sample(app) == chosen  # still in the filter: kept


def test_whatif_toggles_reset_when_the_sample_changes(app):
    app.switch_page("pages/explorer.py").run()
    path = explorer_path(app)
    app.button_group(key="whatif_groups").set_value(path[:1]).run()
    assert_ok(app)
    app.run()  # same sample: the toggles stay
    assert app.button_group(key="whatif_groups").value == path[:1]
    assert any("with 1 group(s)" in m.value for m in app.markdown)
    _select(app, "explorer_table", 1)
    assert app.button_group(key="whatif_groups").value == []
    assert any("with 0 group(s)" in m.value for m in app.markdown)


def test_model_comparison_opens_on_the_shared_sample(app):
    app.switch_page("pages/explorer.py").run()
    table = app.dataframe(key="explorer_table").value
    _select(app, "explorer_table", 4)
    chosen = int(table.iloc[4]["sample_id"])
    app.switch_page("pages/comparison.py").run()
    assert_ok(app)
    box = app.selectbox(key="compare_sample")
    assert box.value == chosen
    other = next(o for o in box.options if int(o.split(" ")[0]) != chosen)
    box.select(int(other.split(" ")[0])).run()
    assert_ok(app)
    assert app.session_state[SharedState.selected_sample.key] == int(other.split(" ")[0])
    app.switch_page("pages/explorer.py").run()
    assert _explorer_sample(app) == int(other.split(" ")[0])
