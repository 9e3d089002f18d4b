"""The one input boundary, ``core.validation``: ``read_table``, the scalar checks, the table and
header checks, and the text sniffing of the dashboard's header peek.

Every reader of a user's table (the audit's data, the ``--model-file`` tables, paired records,
the dashboard's header peek) gives one file one verdict, and the CLI types accept exactly what
the checks of the Python API accept.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import math
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli.options import fraction, positive_int, seed_int, unit_float
from core.paired.records import load_records
from core.tabular.datasets import load_user_data
from core.validation import (
    ConstantFeatureWarning,
    check_batch_size,
    check_budget,
    check_positive_int,
    check_seed,
    check_share,
    check_table,
    check_tau,
    check_unit_interval,
    csv_header_duplicate,
    read_table,
    warn_constant_features,
)
from core.views.uploads import table_columns

GOOD = b"x1,x2,y\n0.5,a,0\n1.5,b,1\n2.5,a,0\n"

# name -> (file name, bytes, pattern every reader's message holds; a path may be shown in full)
BAD = {
    "png-renamed-csv": ("t.csv", b"\x89PNG\r\n\x1a\n" + bytes(64), r"t\.csv' is a PNG image.*not a text table"),
    "gzip-renamed-csv": ("t.csv", gzip.compress(GOOD), r"t\.csv' is a gzip archive"),
    "zip-renamed-csv": ("t.csv", b"PK\x03\x04" + bytes(40), r"t\.csv' is a ZIP archive"),
    "parquet-renamed-csv": ("t.csv", b"PAR1" + bytes(40), r"t\.csv' is a Parquet file \(name it \.parquet\)"),
    "pickle-renamed-csv": ("t.csv", b"\x80\x04\x95" + bytes(20), r"t\.csv' is a Python pickle"),
    "nul-bytes": ("t.csv", b"x,y\n1,\x00\n", r"t\.csv' holds binary content"),
    "latin-1": ("t.csv", "x,y\nZürich,1\n".encode("latin-1"), r"t\.csv' is not UTF-8 text"),
    "duplicate-header": ("t.csv", b"x,y,x\n1,2,3\n", r"t\.csv': column name 'x' occurs more than once"),
    "csv-renamed-parquet": ("t.parquet", GOOD, r"t\.parquet' is not a Parquet file"),
    "empty": ("t.csv", b"", r"t\.csv' is empty"),
    "header-only": ("t.csv", b"x,y\n", r"t\.csv' has a header but no data rows"),
    "unknown-suffix": ("t.xlsx", GOOD, r"t\.xlsx': cannot tell the format from the suffix '\.xlsx'"),
    "gzip-suffix-plain-content": ("t.csv.gz", GOOD, r"t\.csv\.gz' is not a gzip file"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_one_file_gets_one_verdict_from_every_reader(tmp_path, case):
    name, data, pattern = BAD[case]
    path = tmp_path / name
    path.write_bytes(data)
    readers = {
        "read_table(path)": lambda: read_table(path, name=name),
        "read_table(bytes)": lambda: read_table(data, name=name),
        "read_table(file object)": lambda: read_table(io.BytesIO(data), name=name),
        "load_user_data": lambda: load_user_data(path, "y"),
        "load_records": lambda: load_records(path),
    }
    if case not in ("empty", "header-only"):  # the header peek reads no data rows
        readers["table_columns"] = lambda: table_columns(data, name)
    for reader, call in readers.items():
        with pytest.raises(ValueError, match=pattern):
            call()
        assert reader  # (named for the failure report)


def test_a_missing_path_and_a_folder_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"table '.*nope\.csv' does not exist"):
        read_table(tmp_path / "nope.csv")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ValueError, match=r"'.*d\.csv' is a folder"):
        read_table(tmp_path / "d.csv")


def _zip(data: bytes, members: int = 1) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for i in range(members):
            zf.writestr(f"t{i}.csv", data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("suffix", "pack"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress), (".zip", _zip)],
)
def test_a_compressed_csv_reads_as_the_plain_one(suffix, pack):
    plain = read_table(GOOD, name="t.csv")
    packed = read_table(pack(GOOD), name=f"t.csv{suffix}")
    pd.testing.assert_frame_equal(packed.frame, plain.frame)
    assert packed.format == "csv" and packed.name == f"t.csv{suffix}"


def test_a_zip_of_two_tables_and_a_broken_archive_are_refused():
    with pytest.raises(ValueError, match=r"'t\.csv\.zip' holds 2 files; a zipped table must hold exactly one"):
        read_table(_zip(GOOD, members=2), name="t.csv.zip")
    with pytest.raises(ValueError, match=r"'t\.csv\.gz' could not be decompressed as gzip"):
        read_table(b"\x1f\x8b" + bytes(10), name="t.csv.gz")


def test_delimiters_bom_and_na_values():
    semicolon = read_table("\ufeffx;y\n1;a\n2;b\n".encode(), name="t.csv")
    assert list(semicolon.frame.columns) == ["x", "y"] and semicolon.delimiter == ";"
    tsv = read_table(b"x\ty\n1\ta\n", name="t.tsv")
    assert list(tsv.frame.columns) == ["x", "y"] and tsv.delimiter == "\t"
    coded = read_table(b"x,y\n99999999,a\n2,b\n", name="t.csv", na_values=[99999999]).frame
    assert math.isnan(coded["x"].iloc[0]) and coded["x"].iloc[1] == 2


def test_the_size_limit_and_the_file_format_option():
    with pytest.raises(ValueError, match=r"'t\.csv' is 0\.0 MiB, over the limit of 0\.0 MiB"):
        read_table(GOOD, name="t.csv", max_bytes=10)
    with pytest.raises(ValueError, match=r"`max_bytes` must be a positive int; got 0"):
        read_table(GOOD, name="t.csv", max_bytes=0)
    assert read_table(GOOD, name="t.dat", file_format="csv").frame.shape == (3, 3)
    with pytest.raises(ValueError, match=r"`file_format` must be 'auto', 'csv' or 'parquet'; got 'xls'"):
        read_table(GOOD, name="t.csv", file_format="xls")
    with pytest.raises(ValueError, match=r"open the file in binary mode"):
        read_table(io.StringIO(GOOD.decode()), name="t.csv")


@given(
    st.lists(
        st.tuples(st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from(["a", "b", "c d"])),
        min_size=1,
        max_size=30,
    )
)
def test_a_good_table_reads_as_pandas_reads_it(rows):
    frame = pd.DataFrame(rows, columns=["n", "f", "s"])
    csv = frame.to_csv(index=False).encode()
    pd.testing.assert_frame_equal(read_table(csv, name="t.csv").frame, pd.read_csv(io.BytesIO(csv)))
    parquet = frame.to_parquet(index=False)
    pd.testing.assert_frame_equal(read_table(parquet, name="t.parquet").frame, frame)


# ---------------------------------------------------------------------------------------------
# Scalars: one check per kind, the CLI types agree with them


@pytest.mark.parametrize(
    ("check", "good", "bad", "message"),
    [
        (check_seed, [0, 7, np.int64(3), 2**40], [-1, True, 1.0, "1", None], r"`seed` must be a non-negative int"),
        (
            lambda v: check_seed(v, max_bits=32),
            [0, 2**32 - 1],
            [2**32, -1],
            r"`seed` must be an int in \[0, 2\*\*32\)",
        ),
        (lambda v: check_positive_int(v, "n"), [1, np.int32(5)], [0, -2, 1.0, True], r"`n` must be a positive int"),
        (
            check_batch_size,
            [1, 65536],
            [0, 2.5],
            r"`batch_size` must be a positive int \(rows per predict_proba call\)",
        ),
        (check_budget, [0.1, 1, 1.0], [0, 0.0, 1.5, True, "0.1", math.nan], r"`q` must be a fraction in \(0, 1\]"),
        (lambda v: check_share(v, "val_size"), [0.2, 0.99], [0, 1, 1.0, True, math.nan], r"`val_size` must be a share"),
        (check_tau, [0, 0.8, 1], [-0.1, 1.1, True, "0.8", math.nan], r"`tau` must be"),
    ],
    ids=["seed", "seed-32-bit", "positive-int", "batch-size", "budget", "share", "tau"],
)
def test_each_scalar_check_accepts_and_refuses_with_the_value_echoed(check, good, bad, message):
    for value in good:
        check(value)
    for value in bad:
        with pytest.raises(ValueError, match=message) as refused:
            check(value)
        assert repr(value.item() if isinstance(value, np.generic) else value) in str(refused.value)


@given(st.one_of(st.integers(-5, 5).map(str), st.floats(allow_nan=True).map(repr), st.sampled_from(["", "x", "1e3"])))
def test_the_cli_types_accept_exactly_what_the_checks_accept(text):
    def verdict(parse, check, convert):
        try:
            parse(text)
            cli = True
        except Exception:  # noqa: BLE001 - argparse.ArgumentTypeError
            cli = False
        try:
            check(convert(text))
            api = True
        except ValueError:
            api = False
        return cli, api

    for parse, check, convert in (
        (positive_int, lambda v: check_positive_int(v, "n"), int),
        (seed_int, check_seed, int),
        (unit_float, check_tau, float),
        (fraction, check_budget, float),
    ):
        cli, api = verdict(parse, check, convert)
        assert cli == api, (parse, text)


# ------------------------------------------------------------------------------------------
# check_unit_interval


@given(st.floats(0.0, 1.0))
def test_unit_interval_returns_the_same_float(x):
    assert check_unit_interval(x, "tau") == x
    assert check_unit_interval(np.float32(x), "tau") == float(np.float32(x))


@given(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0.0 <= v <= 1.0))
def test_unit_interval_refuses_outside(x):
    with pytest.raises(ValueError, match=r"`tau` must be in \[0, 1\]"):
        check_unit_interval(x, "tau")


@pytest.mark.parametrize(
    "value",
    ["0.8", b"1", True, False, np.bool_(True), None, [0.5], 0.5j],
    ids=["str", "bytes", "True", "False", "np-bool", "None", "list", "complex"],
)
def test_unit_interval_is_type_strict(value):
    with pytest.raises(ValueError, match=r"`tau` must be a real number in \[0, 1\]; got .*\(\w+\)"):
        check_unit_interval(value, "tau")


def test_unit_interval_accepts_ints_and_numpy_scalars():
    assert check_unit_interval(0, "t") == 0.0 and check_unit_interval(1, "t") == 1.0
    assert check_unit_interval(np.int64(1), "t") == 1.0
    assert check_unit_interval(np.float64(0.25), "t") == 0.25


# ------------------------------------------------------------------------------------------
# CSV headers


def _naive_duplicate(header: list[str]) -> str | None:
    seen = []
    for h in header:
        h = h.strip()
        if h and h in seen:
            return h
        seen.append(h)
    return None


@given(
    st.lists(st.sampled_from(["a", "b", "Time", "x y", "q,uoted", "é"]), min_size=1, max_size=8),
    st.sampled_from([",", ";", "\t"]),
)
def test_csv_header_duplicate_matches_a_naive_scan(header, sep):
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep).writerow(header)
    raw = ("\ufeff" + buf.getvalue() + "1\n").encode()
    assert csv_header_duplicate(raw, sep) == _naive_duplicate(header)


# ------------------------------------------------------------------------------------------
# check_table


def _frame():
    return pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "x", "y"], "y": [0, 1, 0, 1]})


def test_check_table_names_the_first_infinite_cell():
    f = _frame()
    f.loc[2, "a"] = -np.inf
    with pytest.raises(ValueError, match=r"t\.csv: column 'a', row 3: value -inf is infinite"):
        check_table(f, target="y", features=["a", "b"], where="t.csv")
    with pytest.raises(ValueError, match=r"row 103"):
        check_table(f, target="y", features=["a", "b"], where="t.csv", row_offset=100)


def test_check_table_refusals():
    f = _frame()
    with pytest.raises(ValueError, match="'a' occurs more than once"):
        check_table(f.rename(columns={"b": "a"}), target="y", features=["a"], where="t")
    with pytest.raises(ValueError, match="'z' not found"):
        check_table(f, target="z", features=["a"], where="t")
    with pytest.raises(ValueError, match="'b' is entirely missing"):
        check_table(f.assign(b=None), target="y", features=["a", "b"], where="t")
    with pytest.raises(ValueError, match="4 distinct values; at most 3"):
        check_table(f.assign(y=[0, 1, 2, 3]), target="y", features=["a"], where="t", max_classes=3)
    with pytest.raises(ValueError, match="blocks name column 'q'"):
        check_table(f, target="y", features=["a", "b"], where="t", blocks={"q": "B"})


def test_constant_features_warn_with_their_names():
    f = _frame().assign(c=7.0, d=np.nan)
    with pytest.warns(ConstantFeatureWarning, match=r"2 of 4 features are constant \('c', 'd'\)"):
        got = warn_constant_features(f, ["a", "b", "c", "d"], "t")
    assert got == ["c", "d"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_constant_features(f, ["a", "b"], "t") == []


# ---------------------------------------------------------------------------- upload sniffing
@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "a JPEG image"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"PK\x03\x04\x14\x00", "a ZIP archive"),
        (b"PAR1\x15\x04", "a Parquet file"),
        (b"\x80\x04\x95\x10", "a Python pickle"),
    ],
)
def test_binary_files_renamed_csv_are_refused_before_any_column_is_offered(head, kind):
    from core.views.uploads import table_columns

    with pytest.raises(ValueError, match=rf"'photo\.csv' is {kind}.*not a text table"):
        table_columns(head + bytes(100), "photo.csv")


def test_text_tables_pass_the_sniffing():
    from core.validation import check_text_table
    from core.views.uploads import table_columns

    assert table_columns("\ufeffx;y\n1;a\n".encode("utf-8"), "ok.csv") == ["x", "y"]
    big = ("é," * 40000).encode("utf-8")  # a two-byte character straddles the 64 KiB cut
    check_text_table(big, "big.csv")
    with pytest.raises(ValueError, match=r"'latin\.csv' is not UTF-8 text .* at byte 9\)"):
        check_text_table("ville,y\nZürich,a\n".encode("latin-1"), "latin.csv")
    with pytest.raises(ValueError, match="holds binary content"):
        check_text_table(b"x,y\n1,\x00\n", "nul.csv")
