"""Uploads of files written by a newer version (the Parquet files of ``probe``) are refused with the
tool's message under the uploaded name, which the pages show as it is (a ``ValueError``)."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.formats import PARQUET_FORMAT_KEY
from core.views.uploads import load_paired_upload, load_screening_upload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paired"))
from paired_records import records as _records  # noqa: E402


def _parquet(frame: pd.DataFrame, tag: str) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**table.schema.metadata, PARQUET_FORMAT_KEY: tag.encode()})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _newer(name: str) -> str:
    return f"^{re.escape(f'{name}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade.')}$"


def test_newer_probe_outputs_uploaded_on_the_recapture_page_are_refused():
    probes = ("probes.parquet", _parquet(pd.DataFrame({"model": ["cnn"]}), "probe-outputs/99"))
    clean = ("clean.parquet", _parquet(pd.DataFrame({"model": ["cnn"]}), "probe-outputs/1"))
    with pytest.raises(ValueError, match=_newer("probes.parquet (per-probe outputs)")):
        load_screening_upload(probes, clean)
    with pytest.raises(ValueError, match=_newer("clean.parquet (clean outputs)")):
        load_screening_upload((probes[0], clean[1]), (clean[0], probes[1]))


def test_newer_paired_records_uploaded_on_the_paired_bounds_page_are_refused():
    with pytest.raises(ValueError, match=_newer("records.parquet")):
        load_paired_upload("records.parquet", _parquet(_records(), "probe-outputs/99"))
    assert len(load_paired_upload("records.parquet", _parquet(_records(), "probe-outputs/1"))) == len(_records())
