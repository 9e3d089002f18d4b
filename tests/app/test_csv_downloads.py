"""The dashboard's CSV downloads neutralise formula cells (core.csv_safe, OWASP CSV injection).

Each test calls the widget function that builds a download button with Streamlit replaced by a
recorder, and reads the bytes the button would serve.
"""

from __future__ import annotations

import io
from types import SimpleNamespace
from unittest import mock

import pandas as pd

HYPERLINK = '=HYPERLINK("http://evil.example","click")'
LABELS = ("=1+1", "@SUM(1+1)")


def _read(data: bytes) -> pd.DataFrame:
    """Downloaded CSV bytes as text cells, exactly as a spreadsheet receives them."""
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def _fake_streamlit():
    """Streamlit's calls recorded (the download button's data among them), everything else a no-op."""
    fake = mock.MagicMock()
    fake.dataframe.return_value = None
    return fake


def _download(fake) -> bytes:
    data = fake.download_button.call_args.args[1]
    return data() if callable(data) else data


def test_table_download(monkeypatch):
    import ui.components as components

    fake = _fake_streamlit()
    monkeypatch.setattr(components, "st", fake)
    frame = pd.DataFrame({"=col": ["=1+1", "ok"], "x": [-1.5, 2.0]})
    components.table(frame, name="certificates", key="t")
    assert _download(fake) == b"'=col,x\n'=1+1,-1.5\nok,2.0\n"  # the header too; numbers as numbers


def test_triage_queue_download(monkeypatch):
    import ui.review as review

    fake = _fake_streamlit()
    monkeypatch.setattr(review, "st", fake)
    shown = pd.DataFrame({"sample_id": [3, 4], "pred": list(LABELS), "note": [HYPERLINK, ""], "fds": [0.5, -0.1]})
    assert review.queue_table(shown, score_label="FDS", caption="queue") == []
    back = _read(_download(fake))
    assert back["pred"].tolist() == ["'=1+1", "'@SUM(1+1)"] and back["note"].tolist() == ["'" + HYPERLINK, ""]
    assert back["fds"].tolist() == ["0.5", "-0.1"]


def test_reviews_export_download(monkeypatch, tmp_path):
    import ui.review as review
    from core.reviews import AuditKey, ReviewStore

    db = ReviewStore(tmp_path / "reviews.sqlite3")
    db.record("fp", 1, reviewer="ana", decision="acceptable", note=HYPERLINK)
    fake = _fake_streamlit()
    monkeypatch.setattr(review, "st", fake)
    monkeypatch.setattr(review, "store", lambda: db)
    monkeypatch.setattr(review, "current_access", lambda: SimpleNamespace(team_mode=False, user=None))
    review.export_button(AuditKey("fp"))
    exported = _read(_download(fake))
    assert exported["note"].tolist() == ["'" + HYPERLINK]
