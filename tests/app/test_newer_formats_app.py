"""AppTest: files written by a newer version are refused on the dashboard with the tool's message
(raised by ``core``, shown as an error box): a saved audit folder opened with ``--audit``, probe
outputs uploaded on the Recapture page, paired records uploaded on Paired bounds."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from app_checks import only_error

from core.formats import PARQUET_FORMAT_KEY
from core.views.uploads import FilesUpload
from ui.state import PairedBoundsState, RecaptureState

APP = str(Path(__file__).resolve().parents[2] / "app.py")
NEWER = "made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."


def _parquet(frame: pd.DataFrame, tag: str) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**table.schema.metadata, PARQUET_FORMAT_KEY: tag.encode()})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_newer_probe_outputs_uploaded_on_the_recapture_page_are_refused(app):
    frame = pd.DataFrame({"model": ["cnn"], "record_id": [1]})
    app.session_state[RecaptureState.upload.key] = FilesUpload(
        kind="screening",
        files={
            "probes": ("probes.parquet", _parquet(frame, "probe-outputs/99")),
            "clean": ("clean.parquet", _parquet(frame, "probe-outputs/1")),
        },
    )
    app.switch_page("pages/recapture.py").run()
    assert f"probes.parquet (per-probe outputs): {NEWER}" in only_error(app)


def test_newer_paired_records_uploaded_on_paired_bounds_are_refused(app):
    records = pd.DataFrame({"model": ["cnn"], "record_id": [1]})
    app.switch_page("pages/paired_bounds.py").run()
    app.session_state[PairedBoundsState.data_source.key] = "paired"
    app.session_state[PairedBoundsState.upload.key] = FilesUpload(
        kind="paired", files={"records": ("records.parquet", _parquet(records, "probe-outputs/99"))}
    )
    app.run()
    assert f"records.parquet: {NEWER}" in only_error(app)
    assert not app.metric


def test_a_saved_audit_of_a_newer_version_opened_with_audit_is_refused(monkeypatch, reviews_db, tmp_path):
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "their audit"
    (folder / "view").mkdir(parents=True)
    (folder / "protocol.json").write_text(json.dumps({"protocol": {"schema": "cfc-protocol/1"}}))
    (folder / "evaluation.json").write_text("{}")
    (folder / "certificates.parquet").write_bytes(b"PAR1")
    (folder / "view" / "meta.json").write_text(json.dumps({"schema": "audit-view/99"}))
    monkeypatch.setattr(sys, "argv", ["app.py", "--audit", str(folder)])
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{folder}: {NEWER}" in e.value for e in at.error), [e.value for e in at.error]
