"""The report's review sections against the store: counts from the store's own rows, agreement
(Cohen's kappa per pair, Fleiss' kappa) and adjudicated decisions, and no path or user name of
the serving machine anywhere in the HTML. The ``audit`` fixture is in ``conftest.py``."""

from __future__ import annotations

import getpass
import os
import re
import sqlite3
import tempfile
from pathlib import Path

import numpy as np

from core.reviews import DECISION_LABELS, DECISIONS, ReviewStore, Team, User

ROOT = Path(__file__).resolve().parents[1]
ANA = User(email="ana@example.org", name="Ana")
BO = User(email="bo@example.org", name="Bo")
CY = User(email="cy@example.org", name="Cy")
TEAM = Team(members={"ana@example.org": "admin", "bo@example.org": "reviewer", "cy@example.org": "reviewer"})


def _queue(result, budget=0.1) -> list[str]:
    table = result.certificates.table
    hc = np.asarray(result.labels.high_confidence, bool)
    ids, u = table.index.to_numpy()[hc], result.scores["fds"].to_numpy()[hc]
    k = max(1, int(np.floor(budget * hc.sum() + 0.5)))
    return [str(i) for i in ids[np.argsort(-u, kind="stable")[:k]]]


def _team_history(db: Path, fp: str, ids: list[str]) -> None:
    """A double review with a retraction that empties one case, a disagreement and its adjudication."""
    store = ReviewStore(db, team=TEAM)
    store.plan(fp, ids[:6], admin=ANA, reviewers_per_case=2, reviewers=["bo@example.org", "cy@example.org"])
    bo = ["acceptable", "confirmed_brittle", "confirmed_brittle", "needs_reacquisition", "acceptable", "acceptable"]
    cy = ["acceptable", "confirmed_brittle", "acceptable", "needs_reacquisition", "confirmed_brittle", "acceptable"]
    for sid, b, c in zip(ids[:6], bo, cy):
        store.record(fp, sid, reviewer=BO, decision=b)
        store.record(fp, sid, reviewer=CY, decision=c, note="looked at the path")
    store.adjudicate(fp, ids[2], reviewer=ANA, decision="needs_reacquisition", note="rescan the form")
    # A seventh case with an entry but nothing in force: decided, then retracted (a misclick).
    store.plan(fp, ids[:7], admin=ANA, reviewers_per_case=2, reviewers=["bo@example.org", "cy@example.org"])
    owner = store.assignments(fp).query("sample_id == @ids[6]")["reviewer_email"].iloc[0]
    who = BO if owner == BO.email else CY
    store.record(fp, ids[6], reviewer=who, decision="acceptable")
    store.retract(fp, reviewer=who)


def _store_counts(db: Path, fp: str) -> dict:
    """The store's own rows, read with plain SQL and replayed by hand (independent of core.reviews)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT review_id, sample_id, decision, retracts, kind FROM reviews WHERE audit_fingerprint = ?"
            " ORDER BY review_id",
            (fp,),
        ).fetchall()
    cancelled = {r[3] for r in rows if r[3] is not None}
    alive = [r for r in rows if r[2] != "retracted" and r[0] not in cancelled]
    final: dict[str, tuple] = {}
    for r in alive:  # the latest adjudication wins, else the latest decision
        if r[1] not in final or r[4] == "adjudication" or final[r[1]][4] != "adjudication":
            final[r[1]] = r
    per_decision: dict[str, int] = {}
    for r in final.values():
        per_decision[DECISION_LABELS[r[2]]] = per_decision.get(DECISION_LABELS[r[2]], 0) + 1
    return {
        "entries": len(rows),
        "samples": len({r[1] for r in rows}),
        "decisions": sum(r[2] != "retracted" for r in rows),
        "retractions": sum(r[2] == "retracted" for r in rows),
        "in_force": len(final),
        "per_decision": per_decision,
    }


def test_report_counts_agreement_and_adjudication_match_the_store(audit, tmp_path):
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    from core.report import report_for_result

    result, _ = audit
    ids = _queue(result)
    assert len(ids) >= 7
    db = tmp_path / "team.sqlite3"
    _team_history(db, result.fingerprint, ids)
    text = report_for_result(result, reviews_db=db)
    triage = text[text.index("id='triage'") : text.index("id='examples'")]
    expected = _store_counts(db, result.fingerprint)
    assert (expected["samples"], expected["in_force"], expected["retractions"]) == (7, 6, 1)  # the reported defect
    assert (
        f"{expected['entries']} entries on {expected['samples']} sample(s) of this audit — {expected['decisions']} "
        f"decision(s) (1 of them adjudications) and {expected['retractions']} retraction(s); "
        f"{expected['in_force']} sample(s) have a decision in force"
    ) in triage
    counts = {k: int(v) for k, v in re.findall(r"<tr><td>([A-Za-z -]+)</td><td class=num>(\d+)</td></tr>", triage)}
    assert counts == expected["per_decision"]
    # Agreement: Cohen's kappa of the pair and Fleiss' kappa, recomputed from the raw decisions.
    bo = ["acceptable", "confirmed_brittle", "confirmed_brittle", "needs_reacquisition", "acceptable", "acceptable"]
    cy = ["acceptable", "confirmed_brittle", "acceptable", "needs_reacquisition", "confirmed_brittle", "acceptable"]
    kappa = cohen_kappa_score(bo, cy, labels=list(DECISIONS))
    codes = np.array([[DECISIONS.index(b), DECISIONS.index(c)] for b, c in zip(bo, cy)])
    fleiss = fleiss_kappa(aggregate_raters(codes)[0])
    assert (
        f"<td>bo@example.org</td><td>cy@example.org</td><td class=num>6</td><td class=num>4</td><td>{kappa:.3f}</td>"
        in triage
    )
    assert (
        f"Fleiss' kappa over all reviewers: <strong>{fleiss:.3f}</strong> on 6 case(s) decided by exactly 2" in triage
    )
    assert "6 case(s) have two or more decisions, 2 of them disagree" in triage
    # The adjudicated case, with the reviewers' decisions it settled.
    adjudicated = triage[triage.index("Adjudicated decisions") :]
    assert f"<td>{ids[2]}</td><td>Needs evidence re-acquisition</td><td>Ana</td>" in adjudicated
    assert "Bo: Confirmed brittle; Cy: Acceptable" in adjudicated and "rescan the form" in adjudicated
    # The review log's verification, with the count of every entry of the database (all audits).
    with sqlite3.connect(db) as conn:
        n_all = conn.execute("SELECT COUNT(*) FROM reviews").fetchone()[0]
    assert f"Review log verified: {n_all} entries (hash chain only, no key)." in triage
    # An entry edited behind the tool's back: the report says the log failed, and where.
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER reviews_append_only_update")
        conn.execute("UPDATE reviews SET decision = 'confirmed_brittle' WHERE review_id = 2")
        conn.execute(
            "CREATE TRIGGER reviews_append_only_update BEFORE UPDATE ON reviews "
            "BEGIN SELECT RAISE(ABORT, 'reviews are append-only'); END"
        )
    tampered = report_for_result(result, reviews_db=db)
    assert "Review log FAILED verification: entry 2 was edited" in tampered


def _machine_paths(*extra: Path) -> list[str]:
    import platformdirs

    paths = {
        str(Path.home()),
        str(ROOT),
        tempfile.gettempdir() + os.sep,
        str(platformdirs.user_data_path("reliability-audit", appauthor=False)),
        *(str(p) for p in extra),
    }
    return sorted(p for p in paths if len(p) > 1)


def test_report_names_no_folder_or_user_of_the_serving_machine(audit, tmp_path, capsys):
    from core.cli import main
    from core.report import report_for_result

    result, folder = audit
    db = tmp_path / "data" / "reviews.sqlite3"
    db.parent.mkdir()
    _team_history(db, result.fingerprint, _queue(result))
    paired = ROOT / "assets" / "paired_demo"
    user = f"{os.sep}{getpass.getuser()}{os.sep}"
    # The dashboard's button (an in-memory audit) and the command (an audit folder), both with the
    # review database and the paired demo pool of the checkout.
    built = report_for_result(result, reviews_db=db, paired_dir=paired)
    out = tmp_path / "report.html"
    assert main(["report", str(folder), "--out", str(out), "--reviews-db", str(db), "--paired", str(paired)]) == 0
    missing = tmp_path / "absent.sqlite3"
    absent = report_for_result(result, reviews_db=missing)
    for text in (built, out.read_text(encoding="utf-8"), absent):
        for path in _machine_paths(tmp_path, db, folder, paired, missing):
            assert path not in text, path
        assert user not in text
    assert "<code>reviews.sqlite3</code>" in built and "From <code>paired_demo</code>" in built
    assert "UTC from <code>bc</code>" in out.read_text(encoding="utf-8")
    assert "the review database 'absent.sqlite3' holds no decision yet" in absent
