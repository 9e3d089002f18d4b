"""A partitioned run's folder (``certify`` / ``paired-grid`` output) written by a newer version is
refused when the run would resume in it, before anything is touched."""

from __future__ import annotations

import json
import re

import pytest

from core.formats import NewerFormatError
from core.scale.store import MANIFEST, RunStore

CONFIG = {"input": "x", "chunk_rows": 10}


def test_a_run_folder_of_a_newer_version_is_refused(tmp_path):
    out = tmp_path / "runs" / "big"
    RunStore.open(out, CONFIG, "fp", kind="certify").close()
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == "core.scale/1"
    (out / MANIFEST).write_text(json.dumps({**manifest, "format": "core.scale/99"}))
    before = sorted(p.name for p in out.iterdir())
    message = f"{out}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."
    with pytest.raises(NewerFormatError, match=f"^{re.escape(message)}$"):
        RunStore.open(out, CONFIG, "fp", kind="certify")
    assert sorted(p.name for p in out.iterdir()) == before  # lock released, nothing written


def test_a_run_folder_of_another_format_is_still_refused_as_before(tmp_path):
    out = tmp_path / "out"
    RunStore.open(out, CONFIG, "fp", kind="certify").close()
    manifest = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({**manifest, "format": "something/1"}))
    with pytest.raises(ValueError, match=r"belongs to a 'certify' run \(something/1\), not a 'certify' run"):
        RunStore.open(out, CONFIG, "fp", kind="certify")
    (out / MANIFEST).write_text(json.dumps([1]))
    with pytest.raises(ValueError, match=r"belongs to a None run \(None\)"):
        RunStore.open(out, CONFIG, "fp", kind="certify")


def test_paired_grid_refuses_records_of_a_newer_probe(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.formats import PARQUET_FORMAT_KEY
    from core.scale.paired_grid import scan_records

    table = pa.Table.from_pandas(pd.DataFrame({"model": ["m"]}), preserve_index=False)
    table = table.replace_schema_metadata({**table.schema.metadata, PARQUET_FORMAT_KEY: b"probe-outputs/99"})
    pq.write_table(table, tmp_path / "records.parquet")
    path = (tmp_path / "records.parquet").resolve()
    message = f"{path}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."
    with pytest.raises(NewerFormatError, match=f"^{re.escape(message)}$"):
        scan_records(tmp_path / "records.parquet")
