"""``core.views.big_audit``: the pages' views of a certify folder, each against pandas on the
whole table (the reference; the views themselves never load it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.scale.certify import FitSpec, certify_dataset
from core.scale.synthetic import fit_synthetic, write_synthetic
from core.tabular.datasets import load_dataset
from core.views.big_audit import (
    big_audit_key,
    big_overview,
    big_report_html,
    explorer_page,
    filters_from_form,
    open_certify_folder,
    page_columns,
    row_certificate,
    status_text,
    triage_queue,
)
from core.views.ranking import rank_queue

N_ROWS, CHUNK, FIT = 3000, 700, 1000


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    generator = fit_synthetic(load_dataset("credit_data"))
    path = tmp_path_factory.mktemp("data") / "credit.parquet"
    write_synthetic(generator, path, N_ROWS, seed=11)
    frame = pd.read_parquet(path)
    frame.insert(0, "loan_id", [f"L{i:05d}" for i in range(N_ROWS)])
    frame.to_parquet(path)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory, table):
    out = tmp_path_factory.mktemp("runs") / "credit_run"
    spec = FitSpec(target="Status", model="logreg", fit_rows=FIT, id_column="loan_id")
    certify_dataset(table, out, spec, chunk_rows=CHUNK)
    return out


@pytest.fixture(scope="module")
def results(folder):
    return open_certify_folder(folder)


@pytest.fixture(scope="module")
def whole(folder) -> pd.DataFrame:
    return pd.read_parquet(folder).reset_index(drop=True)


@pytest.mark.parametrize(
    ("sort", "descending", "form", "page"),
    [
        ("row", False, {}, 0),
        ("fds", True, {"held_out_only": True}, 3),
        ("confidence", False, {"predicted": ["bad"], "correct": "no"}, 1),
        ("flip_budget", False, {"true_classes": ["good"], "max_flip_budget": 2, "min_confidence": 0.7}, 0),
        ("loan_id", True, {"min_fds": 0.5}, 99),  # past the last page: the last page
    ],
)
def test_explorer_pages_equal_pandas(results, whole, sort, descending, form, page):
    shown = explorer_page(
        results, sort=sort, descending=descending, filters=filters_from_form(results, **form), page=page, page_size=40
    )
    mask = pd.Series(True, index=whole.index)
    if form.get("held_out_only"):
        mask &= ~whole["in_fit_sample"]
    if "predicted" in form:
        mask &= whole["pred_label"].isin(form["predicted"])
    if form.get("correct") == "no":
        mask &= whole["correct"] == False  # noqa: E712 - null is not False
    if "true_classes" in form:
        mask &= whole["label"].isin(form["true_classes"])
    if "max_flip_budget" in form:
        mask &= whole["flip_budget"] <= form["max_flip_budget"]
    if "min_confidence" in form:
        mask &= whole["confidence"] >= form["min_confidence"]
    if "min_fds" in form:
        mask &= whole["fds"] >= form["min_fds"]
    kept = whole[mask]
    ordered = kept.sort_values(
        [sort, "row"] if sort != "row" else ["row"], ascending=[not descending, True][: 1 + (sort != "row")]
    )
    pages = max(1, -(-len(kept) // 40))
    last = min(page, pages - 1)
    want = ordered.iloc[last * 40 : (last + 1) * 40]
    assert (shown.total, shown.pages, shown.page) == (len(kept), pages, last)
    assert list(shown.frame.columns) == page_columns(results)
    assert shown.frame.columns[1] == "loan_id"
    pd.testing.assert_frame_equal(
        shown.frame.reset_index(drop=True), want[page_columns(results)].reset_index(drop=True), check_dtype=False
    )


@pytest.mark.parametrize(("score", "reference"), [("fds", "u"), ("inv_flip_budget", "inv"), ("max_softmax", "neg")])
@pytest.mark.parametrize("high_confidence_only", [False, True])
def test_the_queue_is_the_top_of_every_row_as_rank_queue_orders_it(
    results, whole, score, reference, high_confidence_only
):
    held = whole[~whole["in_fit_sample"]]
    if high_confidence_only:
        held = held[held["confidence"] >= 0.9]
    population = held.assign(
        sample_id=held["row"],
        value={"u": held["u"], "inv": 1.0 / held["flip_budget"], "neg": -held["confidence"]}[reference],
    )
    k = 150
    expected = rank_queue(population, "value", budget=k / len(population))
    queue = triage_queue(results, score=score, length=k, high_confidence_only=high_confidence_only)
    assert queue["sample_id"].tolist() == expected["sample_id"].tolist()
    assert queue["rank"].tolist() == list(range(1, k + 1))
    np.testing.assert_allclose(queue["score_value"], expected["value"])
    assert queue["high_confidence"].all() or not high_confidence_only
    with pytest.raises(ValueError, match=r"`score` must be one of"):
        triage_queue(results, score="entropy", length=5, high_confidence_only=False)


def test_a_row_certificate_is_its_stored_trajectory(results, whole):
    classes = sorted(whole.loc[whole["in_fit_sample"], "label"].dropna().unique())
    flipped = int(whole.loc[whole["flip_budget"] <= 2, "row"].iloc[0])
    unflipped = whole.loc[whole["flip_budget"] == whole["path"].map(len) + 1, "row"]
    for row in [flipped, *unflipped.iloc[:1].tolist()]:
        cert = row_certificate(results, row)
        stored = whole.loc[row]
        depth = len(stored["path"])
        np.testing.assert_array_equal(cert.steps["margin"], stored["path_margins"])
        assert cert.steps["removed"].tolist() == ["(none)", *stored["path"]]
        assert cert.steps["predicted"].tolist() == [classes[p] for p in stored["path_preds"]]
        assert cert.values["fds"] == stored["fds"] and cert.values["loan_id"] == stored["loan_id"]
        assert cert.lambdas["lambda_star"].tolist() == [
            stored["lambda_star_attenuate_single"],
            stored["lambda_star_attenuate_all"],
        ]
        k = int(stored["flip_budget"])
        assert cert.flip_budget_text == (f"no flip ≤ {depth}" if k > depth else str(k))
    with pytest.raises(ValueError, match=r"row 3000 is not in the table"):
        row_certificate(results, N_ROWS)


def test_the_overview_totals_every_row(results, whole, folder):
    import json

    view = big_overview(results)
    assert view.n_rows == N_ROWS
    assert view.summary == json.loads((folder / "_summary.json").read_text())
    held = whole[~whole["in_fit_sample"]]
    assert view.flip_budget["rows"].sum() == len(held) == view.fds_histogram["rows"].sum()
    per_class = held.groupby("label").agg(rows=("row", "size"), mean_fds=("fds", "mean"))
    got = view.classes.set_index("class")
    assert got["rows"].to_dict() == per_class["rows"].to_dict()
    np.testing.assert_allclose(got["mean_fds"], per_class["mean_fds"], rtol=1e-12)
    assert got["predicted_as"].to_dict() == held["pred_label"].value_counts().to_dict()
    accuracy = held.groupby("label")["correct"].mean()
    np.testing.assert_allclose(got["accuracy"], accuracy, rtol=1e-12)
    assert status_text(results).startswith(f"All {N_ROWS:,} rows")


def test_an_interrupted_run_is_totalled_over_what_is_done(tmp_path, table, whole):
    out = tmp_path / "cut"
    spec = FitSpec(target="Status", model="logreg", fit_rows=FIT, id_column="loan_id")

    class Stop(Exception):
        pass

    def stop(info, done, total):
        if info is not None and done >= 2 * CHUNK:
            raise Stop

    with pytest.raises(Stop):
        certify_dataset(table, out, spec, chunk_rows=CHUNK, progress=stop)
    results = open_certify_folder(out)
    view = big_overview(results)
    done = whole[(whole["row"] < 2 * CHUNK) & ~whole["in_fit_sample"]]
    assert view.n_rows == 2 * CHUNK and view.summary["n_held_out"] == len(done)
    assert view.summary["accuracy"] == pytest.approx(done["correct"].mean(), rel=1e-12)
    assert "Incomplete: this certify run was interrupted" in status_text(results)
    report = big_report_html(results)
    assert "Incomplete" in report and f"{2 * CHUNK:,}" in report


def test_the_report_covers_every_row_offline(results, whole):
    report = big_report_html(results, top=25)
    assert "<script" not in report and f"<td>{N_ROWS:,}</td>" in report
    riskiest = whole[~whole["in_fit_sample"]].sort_values(["u", "row"], ascending=[False, True])["row"].iloc[:25]
    for row in riskiest:
        assert f"<td>{row}</td>" in report
    with pytest.raises(ValueError, match=r"`top` must be an int in \[1, 10000\]; got 0"):
        big_report_html(results, top=0)


def test_two_runs_of_one_input_share_the_data_fingerprint(tmp_path, table, folder):
    other = tmp_path / "other"
    certify_dataset(
        table, other, FitSpec(target="Status", model="hist_gb", fit_rows=FIT, id_column="loan_id"), chunk_rows=1500
    )
    a, b = big_audit_key(open_certify_folder(folder)), big_audit_key(open_certify_folder(other))
    assert a["data_fingerprint"] == b["data_fingerprint"] and a["fingerprint"] != b["fingerprint"]
    assert a["model"].startswith("logreg fitted on the first 1,000 rows")


def test_form_values_are_checked(results):
    with pytest.raises(ValueError, match=r"`correct` must be 'any', 'yes' or 'no'; got 'maybe'"):
        filters_from_form(results, correct="maybe")
    with pytest.raises(ValueError, match=r"`page_size` must be an int in \[1, 10000\]; got 0"):
        explorer_page(results, page_size=0)


def test_the_report_command_reports_a_certify_run_with_its_decisions(results, folder, tmp_path, capsys):
    """``python -m core report RUN --out x.html`` on a certify folder: every row, and the reviewers'
    latest decisions on its rows from the review database."""
    from core.cli import main
    from core.reviews import AuditKey, ReviewStore

    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(str(db))
    key = AuditKey(**big_audit_key(results))
    store.record(key, 17, reviewer="ana", decision="acceptable", note="", reasons=[])
    store.record(key, 2999, reviewer="bo", decision="confirmed_brittle", note="", reasons=[])
    out = tmp_path / "report.html"
    assert main(["report", str(folder), "--out", str(out), "--reviews-db", str(db)]) == 0
    report = out.read_text()
    assert f"<td>{N_ROWS:,}</td>" in report and "Review decisions (2 rows decided)" in report
    assert "<td>17</td><td>acceptable</td><td>ana</td>" in report
    assert main(["report", str(folder), str(folder), "--out", str(out)]) == 2
    assert "is a certify run: it is reported alone" in capsys.readouterr().err
