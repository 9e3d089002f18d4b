"""core.views.uploads: table headers, block files, staged uploads named as uploaded."""

from __future__ import annotations

import pandas as pd
import pytest
from view_data import csv_bytes as _csv

from core.views.uploads import check_upload_size, load_paired_upload, parse_blocks, table_columns


def test_upload_helpers():
    assert table_columns(b"a;b;c\n1;2;3\n", "x.csv") == ["a", "b", "c"]
    assert table_columns(b"a\tb\n1\t2\n", "x.tsv") == ["a", "b"]
    buffer = __import__("io").BytesIO()
    pd.DataFrame({"u": [1], "v": ["x"]}).to_parquet(buffer)
    assert table_columns(buffer.getvalue(), "t.parquet") == ["u", "v"]
    with pytest.raises(ValueError, match="could not be read as Parquet"):
        table_columns(b"not parquet", "t.parquet")
    with pytest.raises(ValueError, match="expected a .csv"):
        table_columns(b"a,b", "t.xlsx")
    assert parse_blocks(b'{"money": ["Income", "Debt"]}', "b.json").mapping == {"money": ["Income", "Debt"]}
    assert parse_blocks(b"Age: person\n", "b.yaml").mapping == {"Age": "person"}
    with pytest.raises(ValueError, match="could not be parsed"):
        parse_blocks(b"{not json", "b.json")
    with pytest.raises(ValueError, match="non-empty mapping"):
        parse_blocks(b"- a\n- b\n", "b.yaml")


def test_upload_size_limit_names_the_file():
    check_upload_size(b"x" * 1024**2, "ok.csv", limit_mb=1)
    with pytest.raises(ValueError, match=r"'big\.csv' is 1\.0 MB; uploads are limited to 1 MB"):
        check_upload_size(b"x" * (1024**2 + 1), "big.csv", limit_mb=1)


def test_paired_upload_reads_parquet_and_strips_client_paths(records):
    data = records.head(50).to_parquet(index=False)
    out = load_paired_upload("../../etc/mine.parquet", data)
    assert len(out) == 50
    bad = records.head(5).drop(columns="pert_pred").to_parquet(index=False)
    with pytest.raises(ValueError, match=r"^mine\.parquet: missing column\(s\) \['pert_pred'\]"):
        load_paired_upload("C:\\Users\\ana\\mine.parquet", bad)
    with pytest.raises(ValueError, match=r"mine\.xlsx.*cannot tell the format from the suffix"):
        load_paired_upload("mine.xlsx", b"a,b\n1,2\n")


def test_probe_upload_glue_names_parquet_rows_and_missing_columns(probe_outputs):
    from core.views.uploads import load_screening_upload

    clean, probes = probe_outputs
    bad = probes.copy()
    bad.loc[4, "kind"] = "blur"
    with pytest.raises(
        ValueError,
        match=r"^p\.parquet \(per-probe outputs\), row 5 \(model='cnn-w8', .*column "
        r"'kind': 'blur'",
    ):
        load_screening_upload(("dir/p.parquet", bad.to_parquet(index=False)), ("c.csv", _csv(clean)))
    with pytest.raises(ValueError, match=r"^c\.csv \(clean outputs\) is missing column\(s\) \['pred'\]"):
        load_screening_upload(("p.csv", _csv(probes)), ("c.csv", _csv(clean.drop(columns="pred"))))
    with pytest.raises(ValueError, match=r"'big\.csv' is .* MB; uploads are limited"):
        load_screening_upload(("big.csv", b"x" * (50 * 1024**2 + 1)), ("c.csv", _csv(clean)))


def test_upload_state_holds_what_the_pages_read():
    import hashlib

    from core.views.uploads import FilesUpload, TableUpload

    blocks = parse_blocks(b"Age: person\n", "my blocks.yaml")
    assert (blocks.name, blocks.digest) == ("my blocks.yaml", hashlib.sha256(b"Age: person\n").hexdigest())
    up = TableUpload.of(b"a,b\n1,2\n", "t.csv", target="b", blocks=blocks)
    assert up.digest == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert up.key == f"{up.digest}:b:{blocks.digest}"
    assert TableUpload.of(b"x", "t.csv", target="b").key.endswith(":b:None")
    files = FilesUpload(kind="unpaired", files={"clean": ("c.csv", b"1"), "perturbed": ("p.csv", b"2")})
    assert files.names == "c.csv, p.csv"
    assert files == FilesUpload(kind="unpaired", files={"clean": ("c.csv", b"1"), "perturbed": ("p.csv", b"2")})
    with pytest.raises(ValueError, match=r"A 'paired' upload needs the files \['records'\]"):
        FilesUpload(kind="paired", files={"clean": ("c.csv", b"1")})
    with pytest.raises(ValueError, match=r"A 'screening' upload needs the files \['clean', 'probes'\]"):
        FilesUpload(kind="screening", files={"probes": ("p.csv", b"1")})
    with pytest.raises(ValueError, match="`kind` must be one of"):
        FilesUpload(kind="images", files={})
