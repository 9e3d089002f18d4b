"""Uploads on the dashboard: the user's own paired / unpaired records on the Paired bounds page,
and large tables on the Overview page (interactive audit on a stratified sample + CLI line).

AppTest cannot drive every upload widget, so the pages keep the parsed upload in
``st.session_state[PairedBoundsState.upload.key]``; most tests set that key, one goes through the real
file uploader. The glue functions are checked against naive twins.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from app_checks import assert_ok, metric, only_error, open_overview_tab

from core.imaging.demo import DEFAULT_DIR, load_demo_pool
from core.paired.bounds import identified_intervals
from core.paired.records import unpair
from core.paired.states import coverage_threshold
from core.views.uploads import FilesUpload
from ui.state import PairedBoundsState, RecaptureState, SharedState

MODELS = ["cnn-w8", "logreg-c1"]


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    """Two models × two synthetic conditions of the demo pool, with their dev / eval split."""
    pool = load_demo_pool(DEFAULT_DIR).records
    conditions = sorted(pool.loc[pool["source"] == "synthetic", "condition"].unique())[:2]
    keep = pool["model"].isin(MODELS) & pool["condition"].isin(conditions) & (pool["source"] == "synthetic")
    return pool[keep].reset_index(drop=True)


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _table_with(at, *columns: str) -> pd.DataFrame:
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no table with columns {columns}")


def _paired_page(app, source: str, files: dict | None):
    app.switch_page("pages/paired_bounds.py").run()
    app.session_state[PairedBoundsState.data_source.key] = source
    app.session_state[PairedBoundsState.upload.key] = None if files is None else FilesUpload(kind=source, files=files)
    app.run()
    return app


# ---------------------------------------------------------------------------------------------
# Paired bounds page


def test_paired_upload_shows_its_own_cells_and_intervals(app, records):
    at = _paired_page(app, "paired", {"records": ("mine.csv", _csv(records))})
    assert_ok(at)
    assert at.selectbox(key="paired_model").options == sorted(MODELS)
    model, condition = at.selectbox(key="paired_model").value, at.selectbox(key="paired_condition").value
    cell = records[(records["model"] == model) & (records["condition"] == condition) & (records["split"] == "eval")]
    assert metric(at, "Pairs in the cell") == f"{len(cell):,}"
    # τ at the default 80 % coverage, from the model's clean development records (one per record id).
    dev = records[(records["model"] == model) & (records["split"] == "dev")].drop_duplicates("record_id")
    assert metric(at, "Acceptance threshold τ") == f"{coverage_threshold(dev['clean_max_prob'].to_numpy(), 0.8):.4f}"
    intervals = _table_with(at, "target", "level", "low", "high", "observed")
    assert len(intervals) == 9
    assert (intervals["low"] <= intervals["observed"] + 1e-12).all()
    assert (intervals["observed"] <= intervals["high"] + 1e-12).all()
    states = _table_with(at, "h", "r", "s", "w", "k")
    assert states.iloc[-1]["n"] == len(cell)
    assert metric(at, "Cells") == "4"  # the grid covers the uploaded cells only
    assert any("Records: **mine.csv**" in c.value for c in at.caption)


def test_paired_upload_through_the_file_uploader(app, records):
    at = _paired_page(app, "paired", None)
    assert_ok(at)
    assert any("Upload the files above" in i.value for i in at.info)
    at.get("file_uploader")[0].set_value(("mine.csv", _csv(records), "text/csv")).run()
    assert_ok(at)
    assert at.session_state[PairedBoundsState.upload.key].files["records"][0] == "mine.csv"
    assert at.selectbox(key="paired_model").options == sorted(MODELS)


@pytest.mark.parametrize("level", ["I0", "Ik", "I5"])
def test_unpaired_upload_shows_intervals_without_observed_value(app, records, level):
    cell = records[(records["model"] == MODELS[0]) & (records["split"] == "eval")]
    cell = cell[cell["condition"] == cell["condition"].iloc[0]]
    unpaired = unpair(cell, level=level)
    files = {"clean": ("clean.csv", _csv(unpaired.clean)), "perturbed": ("pert.csv", _csv(unpaired.perturbed))}
    if unpaired.counts is not None:
        files["counts"] = ("counts.csv", _csv(unpaired.counts))
    at = _paired_page(app, "unpaired", files)
    assert_ok(at)
    assert metric(at, "Highest level") == level
    assert metric(at, "Records per side") == f"{len(cell):,}"
    intervals = _table_with(at, "target", "level", "low", "high")
    shown_levels = ["I0", "Ik", "I5"][: ["I0", "Ik", "I5"].index(level) + 1]
    assert sorted(intervals["level"].unique()) == sorted(shown_levels)
    assert "observed" not in intervals.columns
    # Forgetting the pairing but keeping the level's counts must give the paired cell's intervals
    # at that level (the identified set depends only on what the level knows).
    tau = coverage_threshold(cell["clean_max_prob"].to_numpy(), 0.8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        paired = identified_intervals(cell, tau).set_index(["target", "level"])
    shown = intervals.set_index(["target", "level"])
    np.testing.assert_allclose(
        shown[["low", "high"]].to_numpy(float),
        paired.loc[shown.index, ["low", "high"]].to_numpy(float),
        rtol=0,
        atol=1e-12,
    )
    assert (
        (shown["low"] <= paired.loc[shown.index, "observed"] + 1e-12)
        & (paired.loc[shown.index, "observed"] <= shown["high"] + 1e-12)
    ).all()
    assert any("no observed value" in i.value for i in at.info)
    assert not [t for t in at.dataframe if "D_plus" in t.value.columns]  # no policy comparison without pairing


def test_forgetting_the_upload_asks_for_files_again(app, records):
    at = _paired_page(app, "paired", {"records": ("mine.csv", _csv(records))})
    at.button[[b.label for b in at.button].index("Forget the upload")].click().run()
    assert_ok(at)
    assert at.session_state[PairedBoundsState.upload.key] is None
    assert any("Upload the files above" in i.value for i in at.info)
    assert not at.metric


def test_bad_probability_names_file_row_and_column(app, records):
    bad = records.copy()
    bad.loc[2, "clean_max_prob"] = 1.7  # data row 3 (CSV line 4)
    at = _paired_page(app, "paired", {"records": ("bad.csv", _csv(bad))})
    message = only_error(at)
    assert "bad.csv, row 3 (line 4), column 'clean_max_prob'" in message
    assert "1.7" in message
    assert not at.metric  # nothing is shown from a refused file


def test_impossible_counts_name_the_counts_table(app, records):
    cell = records[(records["model"] == MODELS[0]) & (records["split"] == "eval")]
    unpaired = unpair(cell[cell["condition"] == cell["condition"].iloc[0]], level="Ik")
    counts = unpaired.counts.assign(k=unpaired.counts["k"] + 10_000)
    files = {
        "clean": ("c.csv", _csv(unpaired.clean)),
        "perturbed": ("p.csv", _csv(unpaired.perturbed)),
        "counts": ("k.csv", _csv(counts)),
    }
    at = _paired_page(app, "unpaired", files)
    assert not at.exception
    assert any("k.csv (counts table), row 1 (line 2)" in e.value and "is impossible" in e.value for e in at.error)


def test_recapture_page_says_uploads_have_no_probe_outputs(app, records):
    at = _paired_page(app, "paired", {"records": ("mine.csv", _csv(records))})
    at.switch_page("pages/recapture.py").run()
    assert_ok(at)
    assert any("not your uploaded records" in i.value for i in at.info)
    assert at.metric  # and it keeps showing the demo queue


# The upload glue's unit tests are in tests/views (test_uploads.py, test_paired.py, test_commands.py).

# ---------------------------------------------------------------------------------------------
# Large tables on the Overview page


def _large_table(n: int = 20_500) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    y = np.where(x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.5, size=n) > 0.8, "yes", "no")
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "kind": rng.choice(["p", "q", "r"], n), "y": y})


def test_large_upload_is_audited_on_a_stratified_sample(app):
    from core.tabular.datasets import load_user_data, split_dataset, subsample_dataset

    frame = _large_table()
    app.session_state[SharedState.audit_sample_rows.key] = 1_000  # keep the test fast; the default is 20,000
    open_overview_tab(app, "Data")  # the table upload is on the Data tab
    app.get("file_uploader")[0].set_value(("big.csv", _csv(frame), "text/csv")).run()
    app.selectbox(key="upload_target").set_value("y").run()
    app.button[[b.label for b in app.button].index("Add to the datasets")].click().run()
    assert_ok(app)
    assert metric(app, "Rows") == "20,500"
    assert any("stratified sample of 1,000 rows" in w.value for w in app.warning)
    code = [c.value for c in app.code]
    assert any(c.startswith("python -m core audit --data big.csv --target y --model hist_gb --seed 0") for c in code)
    assert any(c.startswith("python -m core certify --data big.csv --target y") for c in code)

    import io

    buffer = io.BytesIO(_csv(frame))
    buffer.name = "big.csv"
    dataset = load_user_data(buffer, "y")
    expected = split_dataset(subsample_dataset(dataset, 1_000, seed=0), seed=0, val_size=0.2, test_size=0.2)
    open_overview_tab(app, "At a glance")
    assert any("stratified sample of 1,000 of 20,500 rows" in c.value for c in app.caption)
    assert metric(app, "Test predictions") == f"{len(expected.test_index):,}"

    open_overview_tab(app, "Data")
    app.number_input(key="audit_sample_rows").set_value(2_000).run()
    assert_ok(app)
    expected = split_dataset(subsample_dataset(dataset, 2_000, seed=0), seed=0, val_size=0.2, test_size=0.2)
    open_overview_tab(app, "At a glance")
    assert any("stratified sample of 2,000 of 20,500 rows" in c.value for c in app.caption)
    assert metric(app, "Test predictions") == f"{len(expected.test_index):,}"


def test_small_tables_are_audited_whole(app):
    assert not app.warning
    assert not [c for c in app.code if "python -m core" in c.value]
    assert not any("stratified sample" in c.value for c in app.caption)


def test_long_tables_show_their_first_rows_and_download_all():
    from streamlit.testing.v1 import AppTest

    def script():
        import pandas as pd

        from ui.components import table

        table(pd.DataFrame({"x": range(25)}), name="long", max_shown=10)

    at = AppTest.from_function(script).run()
    assert not at.exception
    assert at.dataframe[0].value["x"].tolist() == list(range(10))
    assert any("Showing the first 10 of 25 rows; the CSV has all of them." in c.value for c in at.caption)


# ---------------------------------------------------------------------------------------------
# Recapture queue on uploaded per-probe outputs


@pytest.fixture(scope="module")
def probe_outputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Clean and per-probe outputs of 300 demo images of one model (its dev and eval images)."""
    pool = load_demo_pool(DEFAULT_DIR)
    clean = pool.clean[pool.clean["model"] == MODELS[0]]
    clean = clean[clean["record_id"].isin(clean["record_id"].iloc[:300])].reset_index(drop=True)
    probes = pool.probes[(pool.probes["model"] == MODELS[0]) & pool.probes["record_id"].isin(clean["record_id"])]
    return clean, probes.reset_index(drop=True)


def _recapture_page(app, probes: pd.DataFrame, clean: pd.DataFrame, *, probes_name: str = "probes.csv"):
    app.session_state[RecaptureState.upload.key] = FilesUpload(
        kind="screening", files={"probes": (probes_name, _csv(probes)), "clean": ("clean.csv", _csv(clean))}
    )
    app.switch_page("pages/recapture.py").run()
    return app


def _expected_scores(probes, clean, outcomes=None) -> pd.DataFrame:
    from core.paired.screening import screening_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return screening_scores(probes, clean, outcomes=outcomes)


def test_probe_upload_ranks_its_own_images_and_follows_the_budget(app, probe_outputs):
    from core.paired.screening import recapture_queue

    clean, probes = probe_outputs
    at = _recapture_page(app, probes, clean)
    assert_ok(at)
    scores = _expected_scores(probes, clean)
    n = len(scores)
    assert metric(at, "Clean-correct test images") == f"{n:,}"
    assert any("Images: **probes.csv, clean.csv**" in c.value for c in at.caption)
    # No paired records uploaded: the queue is ranked by the score alone, the curves are hidden.
    assert any("No failures to judge the scores by" in i.value for i in at.info)
    assert not at.get("vega_lite_chart") and not at.get("plotly_chart")
    assert "Failures found (expected)" not in [m.label for m in at.metric]
    for percent in (10, 30):
        at.slider(key="recap_budget").set_value(percent).run()
        assert_ok(at)
        k = max(1, int(np.floor(percent / 100 * n + 0.5)))
        assert metric(at, "Re-tests in the queue") == f"{k:,}"
        shown = _table_with(at, "rank", "record_id", "selection_prob")
        assert "image" not in shown.columns  # thumbnails only for the demo pool
        assert shown["selection_prob"].sum() == pytest.approx(k)
        expected = recapture_queue(scores, score="U", budget=percent / 100)
        assert shown["record_id"].tolist() == expected["record_id"].tolist()


def test_probe_upload_with_paired_records_shows_failure_coverage(app, probe_outputs):
    from core.paired.screening import recapture_queue

    clean, probes = probe_outputs
    pool = load_demo_pool(DEFAULT_DIR).records
    outcomes = pool[
        (pool["model"] == MODELS[0])
        & pool["record_id"].isin(clean["record_id"])
        & (pool["source"] == "simulated-recapture")
    ].reset_index(drop=True)
    _paired_page(app, "paired", {"records": ("recaptures.csv", _csv(outcomes))})
    at = _recapture_page(app, probes, clean)
    assert_ok(at)
    assert at.selectbox(key="recap_outcome_source").value == "simulated-recapture"
    scores = _expected_scores(probes, clean, outcomes)
    queue = recapture_queue(scores, score="U", budget=0.1, outcomes=outcomes)
    assert metric(at, "Failures found (expected)") == f"{queue['coverage'].iloc[0]:.0%}"
    assert metric(at, "Best possible at this budget") == f"{queue['ceiling'].iloc[0]:.0%}"
    (coverage,) = at.get("vega_lite_chart")  # the failure-coverage curves
    spec = json.loads(coverage.proto.spec)
    assert spec["title"]["text"] == "Simulated re-capture failures found within the re-test budget"
    lines = spec["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert lines[-2:] == ["ceiling (best possible)", "random selection"]
    shown = _table_with(at, "rank", "record_id", "n_failed")
    assert shown["n_failed"].tolist() == queue["n_failed"].tolist()


def test_bad_probe_file_names_file_row_and_column(app, probe_outputs):
    clean, probes = probe_outputs
    bad = probes.copy()
    bad.loc[1, "max_prob"] = 1.7  # data row 2 (CSV line 3)
    at = _recapture_page(app, bad, clean, probes_name="bad probes.csv")
    message = only_error(at)
    assert "bad probes.csv (per-probe outputs), row 2 (line 3)" in message
    assert "column 'max_prob': 1.7 is not a probability" in message
    assert not at.metric  # nothing is ranked from a refused file


# ---------------------------------------------------------------------------------------------
# Fixed acceptance threshold on Paired bounds


def test_fixed_tau_replaces_the_coverage_threshold(app, records):
    at = _paired_page(app, "paired", {"records": ("mine.csv", _csv(records))})
    assert_ok(at)
    model, condition = at.selectbox(key="paired_model").value, at.selectbox(key="paired_condition").value
    cell = records[(records["model"] == model) & (records["condition"] == condition) & (records["split"] == "eval")]
    before = _table_with(at, "target", "level", "low", "high", "observed")
    at.session_state[PairedBoundsState.tau_mode.key] = "fixed"
    at.session_state[PairedBoundsState.tau_value.key] = 0.55
    at.run()
    assert_ok(at)
    assert metric(at, "Acceptance threshold τ") == "0.5500"
    shown = _table_with(at, "target", "level", "low", "high", "observed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = identified_intervals(cell, 0.55)
    cols = ["low", "high", "observed"]
    np.testing.assert_allclose(shown[cols].to_numpy(float), expected[cols].to_numpy(float), rtol=0, atol=1e-12)
    assert not np.allclose(shown[cols].to_numpy(float), before[cols].to_numpy(float), equal_nan=True)
    assert not [t for t in at.dataframe if {"condition", "tau"} <= set(t.value.columns)]  # the grid: once opened
    at.session_state["paired_grid_open"] = True
    at.run()
    grid = _table_with(at, "model", "condition", "tau")
    assert np.allclose(grid["tau"], 0.55)


def test_fixed_tau_is_offered_for_uploads_only(app):
    app.switch_page("pages/paired_bounds.py").run()
    assert_ok(app)
    assert "paired_tau_mode" not in [c.key for c in app.get("button_group")]
