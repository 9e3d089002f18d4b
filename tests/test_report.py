"""The stakeholder report: ``core.report`` and ``python -m core report`` (the Overview's button is
tested in ``tests/app/test_report_button.py``).

The audit folder is a real small audit (breast_cancer + logistic regression) written by the
same ``write_audit`` as ``python -m core audit``; the in-memory result is kept as the
independent reference for what the report recomputes from the stored tables.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.cli import main
from core.report import (
    audit_inputs,
    build_report,
    collapse_from_margins,
    load_audit_folder,
    load_paired,
    report_for_result,
    write_report,
)
from core.reviews import ReviewStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import ChromiumMissingError, launch_chromium  # noqa: E402

PAIRED_DEMO = ROOT / "assets" / "paired_demo"
SECTIONS = ("protocol", "models", "fds", "triage", "examples", "paired")


@pytest.fixture(autouse=True)
def _no_default_db(tmp_path, monkeypatch):
    # The CLI falls back to the dashboard's default database: point it at a file that does not exist.
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(tmp_path / "absent.sqlite3"))


def _run(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().err


def _queue_ids(result, budget=0.1) -> list[str]:
    """Independent reference: the top round(q n) high-confidence predictions by u (stable order)."""
    table = result.certificates.table
    hc = np.asarray(result.labels.high_confidence, bool)
    ids = table.index.to_numpy()[hc]
    u = result.scores["fds"].to_numpy()[hc]
    k = max(1, int(np.floor(budget * hc.sum() + 0.5)))
    return [str(i) for i in ids[np.argsort(-u, kind="stable")[:k]]]


# --------------------------------------------------------------------------------------------
def test_report_has_every_section_and_the_audit_values(audit, tmp_path, capsys):
    result, folder = audit
    out = tmp_path / "report.html"
    code, err = _run(["report", str(folder), "--out", str(out)], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f"id='{section}'" in text, section
    protocol = json.loads((folder / "protocol.json").read_text())
    assert protocol["protocol_fingerprint"] in text
    assert result.fingerprint in text
    ev = result.evaluation.set_index("score")
    assert f"{ev.loc['fds', 'auroc']:.3f}" in text and f"{ev.loc['fds', 'capture@20']:.3f}" in text
    assert f"{result.nominal['accuracy']:.3f}" in text and f"{result.fragility['mean_rcma']:.3f}" in text
    # Absent inputs are said plainly.
    assert "Not in this report:</strong> reviewers' decisions" in text
    assert "Not in this report:</strong> interval bars and the recapture queue" in text
    # Issue 40: the near-ties beside the mean RCMA, capture against its ceiling, the guarantee.
    assert "near-ties left out" in text and f"{result.fragility['median_rcma']:.3f}" in text
    ceiling = result.capture_vs_ceiling.set_index(["score", "budget"])
    assert "Capture against its ceiling." in text
    assert f"{ceiling.loc[('fds', 0.2), 'ceiling']:.3f}" in text
    assert f"{ceiling.loc[('fds', 0.2), 'capture_ratio']:.3f}" in text
    for q in (0.05, 0.1, 0.2):
        bound = result.capture_bound(q)
        assert (
            f"reviewing the top {round(100 * q)} % catches at least {int(100 * bound.lower)} % of brittle cases "
            "(90 % confidence)" in text
        )
    # Three example certificates, each with its trajectory and collapse chart.
    assert text.count("<h3>") == 3
    assert text.count("Removal trajectory") == 3 and text.count("Margin collapse along the path") == 3


def test_report_is_one_self_contained_file(audit):
    text = build_report(load_audit_folder(audit[1]))
    assert text.count("window.vegaEmbed=") == 1, "the vega bundle is inlined exactly once"
    # The page outside the bundle's code (whose tooltip handler writes an <img> for a tooltip
    # field named "image", which no spec here has) loads nothing.
    at = text.index("window.vegaEmbed=")
    page = text[: text.rfind("<script>", 0, at)] + text[text.index("</script>", at) :]
    assert len(page) < 300_000
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)
    assert not re.search(r"<link\b", text, re.I)
    assert not re.search(r"<img\b|<iframe\b|@import|url\(\s*['\"]?https?:", page, re.I)
    assert '"image"' not in page
    assert "plotly" not in text.lower()
    n_figures = len(re.findall(r'class="vega-fig"', text))
    # 2 score figures + 2 population figures + 3 × (trajectory's two panels, collapse)
    assert n_figures == text.count('"renderer": "svg"') == 13
    assert f"<!-- figures: {n_figures} -->" in text


def test_report_is_small(audit):
    """Issue 39: the report of an audit stays under 1.5 MB (it was 4.96 MB with plotly.js)."""
    assert len(build_report(load_audit_folder(audit[1])).encode("utf-8")) < 1.5e6


def test_report_figures_hold_the_audits_data(audit):
    """Every figure's data, read back from its embedded spec, is the audit's (the specs' own
    data tests live in tests/viz)."""
    inputs = load_audit_folder(audit[1])
    text = build_report(inputs)
    specs = [json.loads(m) for m in re.findall(r'vegaEmbed\("#figure-\d+", (.*?), \{"actions"', text)]
    assert len(specs) == 13
    cert = inputs.certificates
    (scatter,) = [s for s in specs if any({"confidence", "fds", "label"} <= set(v) for v in _values(s))]
    points = [v for v in _values(scatter) if "fds" in v]
    assert sorted(v["fds"] for v in points) == sorted(cert["fds"].astype(float).tolist())
    (histogram,) = [s for s in specs if any("predictions" in v for v in _values(s))]
    counts = [v["predictions"] for v in _values(histogram)]
    depth = int(inputs.protocol["depth"])
    assert counts == np.bincount(cert["flip_budget"].astype(int), minlength=depth + 2)[1:].tolist()
    trajectories = [s for s in specs if s.get("title", {}).get("text") == "Removal trajectory"]
    assert len(trajectories) == 3
    for spec in trajectories:  # every step of a stored path, margins as stored
        rows = _values(spec)
        assert [r["k"] for r in rows] == list(range(len(rows)))
        assert any(np.allclose([r["margin"] for r in rows], m) for m in cert["path_margins"])


def _values(spec: dict) -> list[dict]:
    """Every inline data row of a spec (its own data and its layers')."""
    out = list(spec.get("data", {}).get("values", []))
    for part in (*spec.get("layer", []), *spec.get("hconcat", []), *spec.get("vconcat", [])):
        out += _values(part)
    return out


def test_folder_and_in_memory_audit_give_the_same_tables(audit):
    result, folder = audit
    disk, memory = load_audit_folder(folder), audit_inputs(result)
    assert disk.evaluation == memory.evaluation and disk.protocol == memory.protocol
    for col in memory.certificates.columns:
        a, b = disk.certificates[col], memory.certificates[col]
        if col in ("path", "path_margins"):
            assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b)), col
        else:
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=col)


def test_charts_recomputed_from_the_table_match_the_certificate_engine(audit):
    result, folder = audit
    cs = result.certificates
    table = load_audit_folder(folder).certificates
    for i in range(len(table)):
        margins = np.asarray(table["path_margins"].iloc[i], dtype=float)
        np.testing.assert_allclose(collapse_from_margins(margins), cs.collapse[i], rtol=0, atol=1e-12)
        assert collapse_from_margins(margins).mean() == pytest.approx(table["rcma"].iloc[i], abs=1e-12)
        # Binary margins are log-odds of the clipped probabilities: sigmoid(m) is P(original class).
        pred = result.classes.index(table["pred"].iloc[i])  # the table names the class
        np.testing.assert_allclose(1 / (1 + np.exp(-margins)), cs.traj_proba[i, :, pred], rtol=0, atol=1e-9)


def test_collapse_hand_computed():
    # m0 = 2: c_k = max(0, (2 − m_k) / 2)
    np.testing.assert_allclose(collapse_from_margins([2.0, 1.0, 3.0, -2.0]), [0.0, 0.5, 0.0, 2.0], atol=1e-8)
    with pytest.raises(ValueError, match="1-D"):
        collapse_from_margins([[1.0]])


def test_triage_summary_with_reviewers_decisions(audit, tmp_path, capsys):
    result, folder = audit
    queue = _queue_ids(result)
    outside = next(str(i) for i in result.certificates.table.index if str(i) not in queue)
    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(db)
    store.record(result.fingerprint, queue[0], reviewer="ana", decision="acceptable")
    store.record(result.fingerprint, queue[0], reviewer="bo", decision="confirmed_brittle", note="hinges on one group")
    store.record(result.fingerprint, queue[1], reviewer="ana", decision="needs_reacquisition")
    store.record(result.fingerprint, outside, reviewer="ana", decision="acceptable")
    store.record("another-audit", queue[2], reviewer="cy", decision="acceptable")
    out = tmp_path / "r.html"
    code, err = _run(["report", str(folder), "--out", str(out), "--reviews-db", str(db)], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    triage = text[text.index("id='triage'") : text.index("id='examples'")]
    assert (
        "<code>reviews.sqlite3</code>: 4 entries on 3 sample(s) of this audit — 4 decision(s) and 0 retraction(s); "
        f"3 sample(s) have a decision in force; 2 of the {len(queue)} queued cases are reviewed"
    ) in triage
    rows = re.findall(r"<tr><td class=num>(\d+)</td><td>(\d+)</td>(.*?)</tr>", triage)
    assert [r[1] for r in rows] == queue  # the queue, in rank order
    decisions = {sid: rest for _, sid, rest in rows}
    assert "Confirmed brittle" in decisions[queue[0]] and "bo" in decisions[queue[0]]
    assert "Needs evidence re-acquisition" in decisions[queue[1]]
    assert "not reviewed" in decisions[queue[2]]  # the other audit's decision does not leak in
    # Decision counts over the audit's latest decisions (3 samples).
    counts = dict(re.findall(r"<tr><td>([A-Za-z -]+)</td><td class=num>(\d+)</td></tr>", triage))
    assert counts == {"Confirmed brittle": "1", "Needs evidence re-acquisition": "1", "Acceptable": "1"}


def test_paired_demo_pool_section(audit, tmp_path, capsys):
    from core.imaging.demo import load_demo_pool

    out = tmp_path / "r.html"
    code, err = _run(["report", str(audit[1]), "--out", str(out), "--paired", str(PAIRED_DEMO)], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    paired = text[text.index("id='paired'") :]
    assert "Identified intervals" in paired and "Recapture queue" in paired and "Not in this report" not in paired
    models = sorted(load_demo_pool(PAIRED_DEMO).models["model"])
    rows = re.findall(r"<tr><td>([\w.-]+)</td><td class=num>(\d+)</td><td class=num>(\d+)</td>", paired)
    assert [r[0] for r in rows] == models
    for _, k, n in rows:  # a 10 % budget: k = max(1, round(0.1 n))
        assert int(k) == max(1, int(np.floor(0.1 * int(n) + 0.5)))
    assert len(re.findall(r'class="vega-fig"', text)) == 14


def test_paired_output_folder_without_queue(tmp_path):
    frame = pd.DataFrame(
        {
            "model": ["m"] * 2 + ["a"] * 2,
            "condition": "c",
            "source": "s",
            "target": "H",
            "level": ["I0", "I5"] * 2,
            "low": [0.1, 0.2, 0.0, 0.05],
            "high": [0.4, 0.3, 0.5, 0.1],
            "observed": [0.25, 0.25, 0.07, 0.07],
            "tau": 0.8,
        }
    )
    frame.to_csv(tmp_path / "intervals.csv", index=False)
    paired = load_paired(tmp_path)
    assert paired.cell["model"] == "a" and paired.queue is None
    np.testing.assert_array_equal(paired.intervals["high"], [0.5, 0.1])
    assert any("no recapture_queue.csv" in n for n in paired.notes)


def test_report_for_result_does_not_create_a_review_database(audit, tmp_path):
    db = tmp_path / "never.sqlite3"
    text = report_for_result(audit[0], reviews_db=db)
    assert not db.exists()
    assert "holds no decision yet" in text


# --------------------------------------------------------------------------------------------
def _bad_inputs(tmp_path: Path, folder: Path) -> dict[str, tuple[list[str], str]]:
    import shutil

    def copy(name):
        dest = tmp_path / name
        shutil.copytree(folder, dest)
        return dest

    no_eval = copy("no_eval")
    (no_eval / "evaluation.json").unlink()
    bad_json = copy("bad_json")
    (bad_json / "evaluation.json").write_text("{not json", encoding="utf-8")
    bad_parquet = copy("bad_parquet")
    (bad_parquet / "certificates.parquet").write_bytes(b"PAR1 garbage")
    not_db = tmp_path / "not_a_db.sqlite3"
    not_db.write_bytes(b"this is not sqlite" * 100)
    return {
        "missing folder": ([str(tmp_path / "nope")], str(tmp_path / "nope")),
        "not an audit folder": ([str(no_eval)], "evaluation.json"),
        "unreadable json": ([str(bad_json)], str(bad_json / "evaluation.json")),
        "unreadable parquet": ([str(bad_parquet)], str(bad_parquet / "certificates.parquet")),
        "missing reviews db": ([str(folder), "--reviews-db", str(tmp_path / "x.sqlite3")], "x.sqlite3"),
        "not a reviews db": ([str(folder), "--reviews-db", str(not_db)], str(not_db)),
        "bad paired folder": ([str(folder), "--paired", str(tmp_path)], str(tmp_path)),
    }


def test_cli_bad_input_exits_2_naming_the_path_and_writes_nothing(audit, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (tmp_path / "inputs").mkdir()
    cases = _bad_inputs(tmp_path / "inputs", audit[1])
    for name, (args, named) in cases.items():
        out = out_dir / "report.html"
        code, err = _run(["report", *args, "--out", str(out)], capsys)
        assert code == 2, name
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], (name, err)
        assert list(out_dir.iterdir()) == [], name  # no report, no temporary file


def test_cli_bad_out_exits_2(audit, tmp_path, capsys):
    code, err = _run(["report", str(audit[1]), "--out", str(tmp_path / "missing" / "r.html")], capsys)
    assert code == 2 and "does not exist" in err
    code, err = _run(["report", str(audit[1]), "--out", str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in err


def test_failed_write_keeps_the_previous_report(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("previous", encoding="utf-8")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("core.report.os.replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_report("<html>new</html>", out)
    assert out.read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_several_audit_folders_give_one_row_per_model(audit, tmp_path, capsys):
    from core.tabular.audit import run_audit, write_audit

    other = tmp_path / "hgb"
    other.mkdir()
    res = run_audit("breast_cancer", model="hist_gb", seed=0)
    write_audit(res, other)
    out = tmp_path / "r.html"
    code, err = _run(["report", str(audit[1]), str(other), "--out", str(out)], capsys)
    assert code == 0, err
    models = out.read_text(encoding="utf-8").split("id='models'")[1].split("id='fds'")[0]
    rows = re.findall(r"<tr><td>breast_cancer</td><td>(\w+)</td>", models)
    assert rows == ["logreg", "hist_gb"]
    assert f"{res.nominal['accuracy']:.3f}" in models


# --------------------------------------------------------------------------------------------
@pytest.mark.browser
def test_report_renders_offline_in_chromium(audit, tmp_path, capsys):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    code, err = _run(["report", str(audit[1]), "--out", str(out), "--paired", str(PAIRED_DEMO)], capsys)
    assert code == 0, err
    n_figures = len(re.findall(r'class="vega-fig"', out.read_text(encoding="utf-8")))
    assert n_figures == 14
    with sync_playwright() as pw:
        try:
            browser = launch_chromium(pw)
        except ChromiumMissingError as exc:
            pytest.fail(str(exc))
        try:
            context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
            blocked: list[str] = []

            def route(r):
                if r.request.url.startswith("file:"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.as_uri())
            page.wait_for_function(
                f"document.querySelectorAll('.vega-fig svg.marks').length >= {n_figures}", timeout=30_000
            )
            assert page.locator(".vega-fig svg.marks").count() == n_figures
            sizes = page.evaluate(
                "Array.from(document.querySelectorAll('.vega-fig svg.marks')).map(s => s.getBoundingClientRect().width)"
            )
            assert min(sizes) > 200  # drawn, at a readable size
            assert errors == [] and blocked == []
        finally:
            browser.close()


def test_text_from_the_folder_is_escaped(audit):
    import dataclasses

    inputs = load_audit_folder(audit[1])
    cert = inputs.certificates.copy()
    evil = "<script>alert(1)</script>"
    cert["path"] = [np.array([evil, *p[1:]], dtype=object) for p in cert["path"]]
    text = build_report(dataclasses.replace(inputs, certificates=cert, label=evil))
    assert evil not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-50, 50)))
def test_collapse_invariants(margins):
    c = collapse_from_margins(margins)
    m0 = margins[0]
    assert c[0] == 0 and (c >= 0).all()
    # The margin is at least gone (c >= 1) exactly when m_k <= 0 for a positive start margin.
    if m0 > 1e-6:
        gone = margins <= 0
        assert (c[gone] >= 1 - 1e-6).all() and (c[~gone] < 1 + 1e-6).all()


def test_report_module_imports_no_streamlit():
    import subprocess
    import sys

    code = "import sys, core.report, core.cli.report; assert 'streamlit' not in sys.modules, 'streamlit imported'"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_multiclass_audit_reports_what_it_cannot_show(tmp_path):
    from sklearn.datasets import load_iris

    from core.tabular.audit import run_audit, write_audit

    iris = load_iris(as_frame=True).frame.rename(columns=lambda c: c.replace(" (cm)", "").replace(" ", "_"))
    result = run_audit(iris, target="target", model="logreg", seed=0)
    write_audit(result, tmp_path)
    text = build_report(load_audit_folder(tmp_path))
    assert "the probability panel of the trajectories" in text
    assert len(re.findall(r'class="vega-fig"', text)) == 13


def test_paired_pool_cell_is_the_hardest_condition_of_the_first_model():
    from core.imaging.demo import load_demo_pool
    from core.views.paired import evaluation_records

    paired = load_paired(PAIRED_DEMO)
    ev = evaluation_records(load_demo_pool(PAIRED_DEMO).records)
    mine = ev[(ev["model"] == paired.cell["model"]) & (ev["source"] == paired.cell["source"])]
    accuracy = {c: float(np.mean(g["pert_pred"] == g["true_label"])) for c, g in mine.groupby("condition")}
    assert paired.cell["model"] == sorted(ev["model"].unique())[0]
    assert accuracy[paired.cell["condition"]] == min(accuracy.values())
    assert set(paired.intervals["target"]) == {"H", "L", "dM_k"}
    assert (paired.intervals["low"].dropna() <= paired.intervals["high"].dropna()).all()


def test_default_review_database_is_found_and_can_be_left_out(audit, tmp_path, monkeypatch, capsys):
    result, folder = audit
    db = tmp_path / "default.sqlite3"
    ReviewStore(db).record(result.fingerprint, _queue_ids(result)[0], reviewer="ana", decision="acceptable")
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(db))
    out = tmp_path / "r.html"
    assert _run(["report", str(folder), "--out", str(out)], capsys)[0] == 0
    text = out.read_text(encoding="utf-8")
    assert "Review database <code>default.sqlite3</code>: 1 entry on 1 sample(s)" in text and str(db) not in text
    assert _run(["report", str(folder), "--out", str(out), "--no-reviews"], capsys)[0] == 0
    text = out.read_text(encoding="utf-8")
    assert "left out on request (--no-reviews)" in text and str(db) not in text


def test_report_needs_only_the_tables_not_the_model(audit, tmp_path, capsys):
    import shutil

    folder = tmp_path / "tables_only"
    folder.mkdir()
    for name in ("certificates.parquet", "evaluation.json", "protocol.json"):
        shutil.copy(audit[1] / name, folder / name)
    out = tmp_path / "r.html"
    assert _run(["report", str(folder), "--out", str(out)], capsys)[0] == 0
    # The CSV alone (list cells as JSON text) gives the same report body.
    csv_only = tmp_path / "csv_only"
    csv_only.mkdir()
    for name in ("certificates.csv", "evaluation.json", "protocol.json"):
        shutil.copy(audit[1] / name, csv_only / name)
    a, b = load_audit_folder(folder), load_audit_folder(csv_only)
    strip = lambda t: re.sub(r"Built .*? UTC from <code>.*?</code>", "", t)  # noqa: E731
    assert strip(build_report(a)) == strip(build_report(b))


def test_report_refuses_an_audit_folder_made_by_a_newer_version(audit, tmp_path, capsys):
    import json
    import shutil

    folder = tmp_path / "newer"
    shutil.copytree(audit[1], folder)
    meta = folder / "view" / "meta.json"
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "schema": "audit-view/99"}))
    code, err = _run(["report", str(folder), "--out", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "made by a newer reliability-audit (format 99; this one reads up to 1): upgrade" in err
    assert not (tmp_path / "r.html").exists()


def test_the_title_of_a_users_model_names_it_without_a_seed(tmp_path):
    # Issue 40: the report of the user's own model was titled "own data / own:Pipeline / seed 0",
    # a seed the tool never used to split or fit that model.
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from core import audit_model
    from core.tabular.audit import write_audit

    sys.path.insert(0, str(Path(__file__).resolve().parent / "tabular"))
    from own_models import wine_tables

    train, test = wine_tables()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    pipe.fit(train.drop(columns="target"), train["target"])
    result = audit_model(pipe, train, test, target="target", name="wine.skops")
    (tmp_path / "own").mkdir()
    write_audit(result, tmp_path / "own")
    for inputs in (audit_inputs(result), load_audit_folder(tmp_path / "own")):
        text = build_report(inputs)
        assert "<h1>Fragility audit: your model wine.skops</h1>" in text
        assert "<title>Fragility audit: your model wine.skops</title>" in text
        assert "seed 0</h1>" not in text


def test_the_title_of_a_tool_fitted_audit_keeps_its_seed(audit):
    result, folder = audit
    title = f"Fragility audit: {result.dataset.name} / {result.model_name} / seed {result.seed}"
    for inputs in (audit_inputs(result), load_audit_folder(folder)):
        assert f"<h1>{title}</h1>" in build_report(inputs)
