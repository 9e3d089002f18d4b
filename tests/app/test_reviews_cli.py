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
