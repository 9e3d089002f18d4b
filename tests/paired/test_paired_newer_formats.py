"""The Parquet files of ``probe`` name their version (``probe-outputs/N`` in the schema metadata):
the paired loaders and ``python -m core paired`` refuse a newer one in one line; untagged tables
(CSV, tables made by other programs) and this version's read as before. The ``paired`` output
folder names its own version."""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paired_records import records as _records

from core.cli import main
from core.formats import PARQUET_FORMAT_KEY, NewerFormatError
from core.paired.records import load_records


def _tagged(frame: pd.DataFrame, path, tag: str | None):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if tag is not None:
        table = table.replace_schema_metadata({**table.schema.metadata, PARQUET_FORMAT_KEY: tag.encode()})
    pq.write_table(table, path)
    return path


def _message(where) -> str:
    return f"{where}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."


@pytest.mark.parametrize("tag", [None, "probe-outputs/1"], ids=["untagged", "this-version"])
def test_records_of_this_version_or_untagged_are_read(tmp_path, tag):
    path = _tagged(_records(), tmp_path / "records.parquet", tag)
    assert len(load_records(path)) == len(_records())


def test_newer_records_are_refused_naming_the_file(tmp_path):
    path = _tagged(_records(), tmp_path / "records.parquet", "probe-outputs/99")
    with pytest.raises(NewerFormatError, match=f"^{re.escape(_message(path))}$"):
        load_records(path)


def _run(argv, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    return code, capsys.readouterr().err


def test_the_paired_command_refuses_newer_records_or_probe_outputs(tmp_path, capsys):
    newer = _tagged(_records(), tmp_path / "records.parquet", "probe-outputs/99")
    code, err = _run(["paired", "--records", str(newer), "--tau", "0.8", "--out", str(tmp_path / "a")], capsys)
    assert code == 2 and err.splitlines() == [f"error: {_message(newer)}"]
    assert not (tmp_path / "a").exists()

    records = _tagged(_records(), tmp_path / "ok.parquet", "probe-outputs/1")
    probes = _tagged(pd.DataFrame({"model": ["cnn"]}), tmp_path / "probes.parquet", "probe-outputs/99")
    clean = _tagged(pd.DataFrame({"model": ["cnn"]}), tmp_path / "clean.parquet", "probe-outputs/1")
    argv = ["paired", "--records", str(records), "--tau", "0.8", "--out", str(tmp_path / "b"), "--no-policies"]
    code, err = _run([*argv, "--probes", str(probes), "--clean-outputs", str(clean)], capsys)
    assert code == 2 and err.splitlines() == [f"error: {_message(probes)}"]
    assert not (tmp_path / "b").exists()


def test_the_paired_output_folder_names_its_version(tmp_path, capsys):
    _records().to_csv(tmp_path / "records.csv", index=False)
    argv = ["paired", "--records", str(tmp_path / "records.csv"), "--tau", "0.8", "--out", str(tmp_path / "o")]
    code, _ = _run([*argv, "--no-policies"], capsys)
    assert code == 0
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["format"] == "paired-output/1"
