"""AppTest: a certify folder opens on the Overview, the Certificate explorer and the Triage queue
(``--audit DIR`` and the audits folder), every row queried out of core; a half-written run says
so, a folder whose parts disagree is refused naming the part, and a decision saved on the Triage
page is stored under the run's fingerprint and the input row."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from app_checks import assert_ok, metric

from ui.state import OwnModelState

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]
APP, TIMEOUT = str(ROOT / "app.py"), 180
N_ROWS, CHUNK = 2400, 600


def _certify(out: Path, *, stop_after: int | None = None) -> Path:
    from core.scale.certify import FitSpec, certify_dataset
    from core.scale.synthetic import fit_synthetic, write_synthetic
    from core.tabular.datasets import load_dataset

    data = out.parent / "credit.parquet"
    if not data.exists():
        write_synthetic(fit_synthetic(load_dataset("credit_data")), data, N_ROWS, seed=5)
    spec = FitSpec(target="Status", model="logreg", fit_rows=800)

    class Stop(Exception):
        pass

    def stop(info, done, total):
        if stop_after is not None and info is not None and done >= stop_after * CHUNK:
            raise Stop

    try:
        certify_dataset(data, out, spec, chunk_rows=CHUNK, progress=stop)
    except Stop:
        pass
    return out


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    return _certify(tmp_path_factory.mktemp("runs") / "credit_big")


def _app(monkeypatch, *args):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(sys, "argv", ["app.py", *args])
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    return at


def _table_with(at, column: str) -> pd.DataFrame:
    """The one table shown with ``column`` (the Explorer's has "Row", the queue "sample_id")."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def test_a_certify_folder_opens_on_overview_explorer_and_triage(monkeypatch, reviews_db, run_folder):
    whole = pd.read_parquet(run_folder)
    at = _app(monkeypatch, "--audit", str(run_folder))
    assert_ok(at)
    assert metric(at, "Rows certified") == f"{N_ROWS:,}"
    assert not at.warning  # finished: never shown as incomplete
    assert any(b.label == "Report of every row (HTML)" for b in at.get("download_button"))

    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    assert any(f"of {N_ROWS:,} rows match" in c.value for c in at.caption)
    at.selectbox(key="big_sort").set_value("fds").run()
    at.toggle(key="big_descending").set_value(True).run()
    at.number_input(key="big_page").set_value(2).run()
    assert_ok(at)
    expected = whole.sort_values(["fds", "row"], ascending=[False, True])["row"].iloc[50:100].tolist()
    assert _table_with(at, "Row")["Row"].tolist() == expected
    at.multiselect(key="big_predicted").select("bad").run()
    at.selectbox(key="big_correct").set_value("no").run()
    wrong = whole[(whole["pred_label"] == "bad") & (whole["correct"] == False)]  # noqa: E712
    assert any(f"{len(wrong):,} of {N_ROWS:,} rows match" in c.value for c in at.caption)
    assert at.number_input(key="big_page").value == 1  # a new filter starts on its first page
    at.number_input(key="big_goto").set_value(2222).run()  # any row, whatever the filters
    assert any(s.value == "Certificate of row 2,222" for s in at.subheader)
    assert any(s.value.startswith("Certificate of row") for s in at.subheader)
    assert metric(at, "FDS (risk)")
    # On demand, the full certificate from the input table beside the run and the saved model.
    charts = len(at.get("vega_lite_chart"))
    next(b for b in at.button if b.label == "Recompute with the run's model").click().run()
    assert_ok(at)
    assert any(
        c.value == "Recomputed from credit.parquet with the run's model: equal to the stored certificate."
        for c in at.caption
    )
    assert len(at.get("vega_lite_chart")) >= charts + 3  # trajectory, collapse, degradation, drops

    at.switch_page("pages/triage.py").run()
    assert_ok(at)
    held = whole[~whole["in_fit_sample"] & (whole["confidence"] >= 0.9)]
    top = held.sort_values(["u", "row"], ascending=[False, True])["row"].iloc[:200].tolist()
    assert any(s.value == f"Queue: top 200 of {N_ROWS:,} rows by fds" for s in at.subheader)
    queue = _table_with(at, "sample_id")
    assert queue["sample_id"].tolist() == top
    # The review flow of the audits: a decision is stored under the run's fingerprint and the row.
    at.text_input(key="review_reviewer").set_value("ana").run()
    case = int(at.session_state["selected_sample"])
    at.radio(key="review_decision").set_value("acceptable")
    next(b for b in at.button if b.label == "Save decision").click().run()
    assert_ok(at)
    from core.reviews import ReviewStore

    manifest = __import__("json").loads((run_folder / "_manifest.json").read_text())
    latest = ReviewStore(str(reviews_db)).latest(manifest["fingerprint"])
    assert latest[["sample_id", "reviewer", "decision"]].values.tolist() == [[str(case), "ana", "acceptable"]]


def test_a_half_written_run_says_what_is_shown(monkeypatch, reviews_db, tmp_path):
    folder = _certify(tmp_path / "cut", stop_after=2)
    at = _app(monkeypatch, "--audit", str(folder))
    assert_ok(at)
    assert metric(at, "Rows certified") == f"{2 * CHUNK:,}"
    assert any("Incomplete: this certify run was interrupted" in w.value for w in at.warning)
    at.switch_page("pages/triage.py").run()
    assert_ok(at)
    assert any("Incomplete" in w.value for w in at.warning)


def test_a_run_whose_parts_disagree_is_refused_naming_the_part(monkeypatch, reviews_db, run_folder, tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(run_folder, folder)
    (folder / "part-00002.parquet").unlink()
    at = _app(monkeypatch, "--audit", str(folder))
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("partition part-00002.parquet (rows 1200..) is listed but missing" in e for e in errors), errors
    assert not any(str(tmp_path) in e for e in errors)  # the folder by its name, never the server path


def test_the_audits_folder_lists_certify_runs(monkeypatch, reviews_db, run_folder, _audits_dir):
    _audits_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_folder, _audits_dir / "credit_big")
    _certify(_audits_dir / "credit_cut", stop_after=1)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.folders_open.key] = True
    at.run()
    box = at.selectbox(key=OwnModelState.folder.key)
    # A half-written run is listed, never as complete.
    assert box.options == ["credit_big (certify run, every row)", "credit_cut (certify run, incomplete)"]
    next(b for b in at.button if b.label == "Open").click().run()
    assert_ok(at)
    assert metric(at, "Rows certified") == f"{N_ROWS:,}"


def test_a_large_upload_is_certified_in_full_in_the_background_and_opened(app, _audits_dir):
    """Above the interactive size, the Data tab offers to certify every row; the run goes on in a
    child process while the pages stay usable, and its folder opens on every page once done."""
    import time

    import numpy as np
    from app_checks import open_overview_tab

    from ui.state import SharedState

    rng = np.random.default_rng(0)
    n = 20_500
    x = rng.normal(size=(n, 3))
    y = np.where(x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.5, size=n) > 0.8, "yes", "no")
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "kind": rng.choice(["p", "q", "r"], n), "y": y})
    app.session_state[SharedState.audit_sample_rows.key] = 1_000
    app.session_state[SharedState.model.key] = "logreg"
    open_overview_tab(app, "Data")
    app.get("file_uploader")[0].set_value(("big.csv", frame.to_csv(index=False).encode(), "text/csv")).run()
    app.selectbox(key="upload_target").set_value("y").run()
    app.button[[b.label for b in app.button].index("Add to the datasets")].click().run()
    assert_ok(app)
    assert any(s.value == "Certify every row" for s in app.subheader)
    next(b for b in app.button if b.label == f"Certify all {n:,} rows in the background").click().run()
    assert_ok(app)
    deadline = time.monotonic() + 170
    while not any(m.label == "Rows certified" for m in app.metric) and time.monotonic() < deadline:
        time.sleep(1.0)
        app.run()
    assert_ok(app)
    assert metric(app, "Rows certified") == f"{n:,}"  # opened by itself once complete
    (folder,) = [p for p in _audits_dir.iterdir() if p.name.startswith("big-logreg-")]
    assert folder.name.endswith("-certify") and (folder / "_summary.json").is_file()
    assert app.session_state[OwnModelState.audit.key] == {"kind": "certify", "path": str(folder)}
