"""`python -m core reviews export` reads what the dashboard stored."""

import pandas as pd

from core.cli import main
from core.reviews import ReviewStore


def test_export_writes_every_decision_and_filters_by_audit(tmp_path, capsys):
    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(db)
    store.record("audit-a", 17, reviewer="ana", decision="confirmed_brittle", note="income missing")
    store.record("audit-a", 17, reviewer="bo", decision="acceptable")
    store.record("audit-b", 3, reviewer="ana", decision="needs_reacquisition")
    out = tmp_path / "all.csv"
    assert main(["reviews", "export", "--db", str(db), "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 3 and list(frame["reviewer"]) == ["ana", "bo", "ana"]
    assert main(["reviews", "export", "--db", str(db), "--audit", "audit-b"]) == 0
    only_b = capsys.readouterr().out
    assert "audit-b" in only_b and "audit-a" not in only_b


def test_missing_database_is_a_clear_error(tmp_path, capsys):
    assert main(["reviews", "export", "--db", str(tmp_path / "nope.sqlite3")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "nope.sqlite3" in err
    assert not (tmp_path / "nope.sqlite3").exists()


def test_export_carries_reasons_retractions_and_the_audit_context(tmp_path):
    from core.reviews import AuditKey

    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(db)
    key = AuditKey("audit-a", data_fingerprint="d" * 64, model="random_forest", protocol_fingerprint="p" * 64)
    store.record(
        key,
        17,
        reviewer="ana",
        decision="confirmed_brittle",
        reasons=["missing_field", "data_quality"],
        note="income missing",
        submission_id="s1",
    )
    store.retract(key, 17, reviewer="bo", note="wrong case")
    out = tmp_path / "all.csv"
    assert main(["reviews", "export", "--db", str(db), "--out", str(out)]) == 0
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert frame["decision"].tolist() == ["confirmed_brittle", "retracted"]
    assert frame["decision_label"].tolist() == ["Confirmed brittle", "Retracted (undo)"]
    assert frame["retracts"].tolist() == ["", "1"]  # the undo names the decision it cancels, as an integer
    assert frame["reasons"].tolist() == ["data_quality,missing_field", ""]
    assert frame["reason_labels"].tolist() == ["Data-quality issue; Missing field", ""]
    assert (frame["data_fingerprint"] == "d" * 64).all() and (frame["model"] == "random_forest").all()
    assert (frame["protocol_fingerprint"] == "p" * 64).all()
    assert frame["submission_id"].tolist() == ["s1", ""]
