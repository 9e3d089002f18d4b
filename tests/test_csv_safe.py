"""CSV exports neutralise formula cells (OWASP CSV injection): ``core.csv_safe`` and every writer.

The unit tests pin the rule on toy frames; a hypothesis property checks it on any frame of
text and number columns; one test per writer shows that the neutralisation reaches the file
the tool writes (certificates, sweep tables, the synthetic table, the reviews export on
stdout), while Parquet keeps raw values; an AST check finds every CSV writer of the source and
refuses one that bypasses the module. The paired command's outputs are checked in
``tests/cli/test_cli_paired_csv_safe.py``, the dashboard's download buttons in
``tests/app/test_csv_downloads.py`` (the tests of ``core`` drive no dashboard).
"""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.csv_safe import FORMULA_PREFIXES, csv_bytes, neutralise, write_csv

ROOT = Path(__file__).resolve().parents[1]
HYPERLINK = '=HYPERLINK("http://evil.example","click")'
LABELS = ("=1+1", "@SUM(1+1)")


def _read(data: bytes | str | Path) -> pd.DataFrame:
    """A written CSV as text cells, exactly as a spreadsheet receives them (no NaN guessing)."""
    source = io.BytesIO(data) if isinstance(data, bytes) else io.StringIO(data) if isinstance(data, str) else data
    return pd.read_csv(source, dtype=str, keep_default_na=False)


def _no_formula_cell(frame: pd.DataFrame) -> None:
    """No header or text cell of a CSV read back with :func:`_read` starts like a formula.

    A number written by a numeric column (``-1.5``) is read back as text here too; those are
    told apart by parsing: a cell that is a number is no formula.
    """
    for name in frame.columns:
        assert not str(name).startswith(FORMULA_PREFIXES), name
        for cell in frame[name]:
            if cell.startswith(FORMULA_PREFIXES):
                float(cell)  # ValueError (test failure) unless the cell is a plain number


# --------------------------------------------------------------------------------------------
# The rule on toy frames


def test_the_prefixes_are_owasps():
    assert FORMULA_PREFIXES == ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("-1.5", "'-1.5"),  # text that looks like a number still begins with "-" (OWASP)
        ("@SUM(1+1)", "'@SUM(1+1)"),
        ("\tx", "'\tx"),
        ("\r=1", "'\r=1"),
        (HYPERLINK, "'" + HYPERLINK),
        ("ok", "ok"),
        ("a=1", "a=1"),
        (" =1", " =1"),
        ("'=1", "'=1"),  # already quoted: begins with "'", left alone
        ("", ""),
        ("é=", "é="),
    ],
    ids=[
        "equals",
        "plus",
        "minus",
        "negative-number-as-text",
        "at",
        "tab",
        "carriage-return",
        "hyperlink",
        "plain",
        "inner-equals",
        "leading-space",
        "quoted",
        "empty",
        "unicode",
    ],
)
def test_a_text_cell_is_prefixed_when_it_begins_like_a_formula(cell, written):
    for dtype in (object, "string", "category"):
        out = neutralise(pd.DataFrame({"c": pd.Series([cell, "x"], dtype=dtype)}))
        assert out["c"].iloc[0] == written, dtype
        assert out["c"].iloc[1] == "x"


def test_numbers_missing_values_and_other_cells_stay_as_they_are():
    frame = pd.DataFrame(
        {
            "float": [-1.5, np.nan, 2.0],
            "int": [-1, 0, 1],
            "bool": [True, False, True],
            "date": pd.to_datetime(["2020-01-01", None, "2021-05-05"]),
            "mixed": pd.Series([-2.5, None, ["=x"]], dtype=object),
        }
    )
    out = neutralise(frame)
    pd.testing.assert_frame_equal(out, frame)
    assert csv_bytes(frame, index=False).decode().splitlines()[1].startswith("-1.5,-1,True,2020-01-01,-2.5")


def test_a_mixed_object_column_prefixes_its_text_cells_only():
    frame = pd.DataFrame({"o": pd.Series(["=a", -1, None, -2.5, "-1.5", np.nan, "ok"], dtype=object)})
    assert neutralise(frame)["o"].tolist()[:5] == ["'=a", -1, None, -2.5, "'-1.5"]
    assert neutralise(frame)["o"].tolist()[6] == "ok" and np.isnan(neutralise(frame)["o"].iloc[5])


def test_dtypes_index_and_column_order_are_kept_and_the_input_is_untouched():
    frame = pd.DataFrame(
        {
            "=cmd": ["=1+1", "b", "c"],
            "s": pd.array(["@x", None, "y"], dtype="string"),
            "k": pd.Categorical(["-a", "b", "-a"]),
            "x": [-1.0, 0.0, 1.0],
        },
        index=pd.Index(["=r0", "r1", "=r0"], name="@id"),
    )
    before = frame.copy(deep=True)
    out = neutralise(frame)
    pd.testing.assert_frame_equal(frame, before)  # input untouched, header included
    assert out is not frame
    pd.testing.assert_index_equal(out.index, frame.index)  # the index is the caller's business
    assert list(out.columns) == ["'=cmd", "s", "k", "x"]
    assert [type(d) for d in out.dtypes] == [type(d) for d in frame.dtypes]
    assert out["k"].cat.categories.dtype == frame["k"].cat.categories.dtype
    assert out["k"].cat.categories.tolist() == ["'-a", "b"] and out["k"].tolist() == ["'-a", "b", "'-a"]
    assert out["s"].tolist()[::2] == ["'@x", "y"] and out["s"].isna().tolist() == [False, True, False]


def test_colliding_categories_become_text():
    frame = pd.DataFrame({"k": pd.Categorical(["=x", "'=x", "y"])})
    assert neutralise(frame)["k"].tolist() == ["'=x", "'=x", "y"]


def test_duplicate_column_names_and_row_labels():
    frame = pd.DataFrame([["=a", "=b"], ["c", "+d"]], columns=["=n", "=n"], index=[7, 7])
    out = neutralise(frame)
    assert out.values.tolist() == [["'=a", "'=b"], ["c", "'+d"]] and list(out.columns) == ["'=n", "'=n"]


def test_multiindex_columns_are_neutralised_level_by_level():
    frame = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("=a", "x"), ("b", "@y")]))
    assert list(neutralise(frame).columns) == [("'=a", "x"), ("b", "'@y")]


def test_write_csv_writes_the_index_safely_when_it_is_written(tmp_path):
    frame = pd.DataFrame({"v": [1, 2]}, index=pd.Index(["=r", "s"], name="-i"))
    write_csv(frame, tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text().splitlines() == ["'-i,v", "'=r,1", "s,2"]
    write_csv(frame, tmp_path / "b.csv", index=False)
    assert (tmp_path / "b.csv").read_text().splitlines() == ["v", "1", "2"]
    write_csv(frame, tmp_path / "c.csv", index_label="=id", header=["+v"])
    assert (tmp_path / "c.csv").read_text().splitlines()[0] == "'=id,'+v"


def test_write_csv_to_a_text_buffer_and_stdout(capsys):
    frame = pd.DataFrame({"note": [HYPERLINK], "n": [-3]})
    buffer = io.StringIO()
    write_csv(frame, buffer, index=False)
    write_csv(frame, sys.stdout, index=False)
    expected = 'note,n\n"\'=HYPERLINK(""http://evil.example"",""click"")",-3\n'
    assert buffer.getvalue() == capsys.readouterr().out == expected
    assert _read(expected)["note"].item() == "'" + HYPERLINK


def test_columns_are_chosen_by_their_raw_names():
    frame = pd.DataFrame({"=a": ["=1"], "b": ["x"]})
    assert csv_bytes(frame, index=False, columns=["=a"]) == b"'=a\n'=1\n"


def test_csv_bytes_is_utf8():
    data = csv_bytes(pd.DataFrame({"naïve": ["-é", "ü"]}), index=False)
    assert data == "naïve\n'-é\nü\n".encode()


def test_a_carriage_return_inside_a_cell_cannot_start_a_row():
    # Unquoted, "ok\r=HYPERLINK(...)" is two rows in a spreadsheet, the second a formula.
    frame = pd.DataFrame({"note": ["ok\r" + HYPERLINK, "plain"], "n": [1, 2]})
    data = csv_bytes(frame, index=False)
    assert b'"ok\r=HYPERLINK(' in data  # quoted: one cell
    back = _read(data)
    assert back["note"].tolist() == frame["note"].tolist() and back["n"].tolist() == ["1", "2"]
    assert csv_bytes(frame.iloc[1:], index=False) == b"note,n\nplain,2\n"  # no \r: lines as pandas ends them


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: neutralise([["=1"]]), r"`frame` must be a pandas DataFrame; got list\."),
        (lambda: csv_bytes(pd.Series(["=1"])), r"`frame` must be a pandas DataFrame; got Series\."),
        (lambda: write_csv(pd.DataFrame(), 3), r"`dest` must be a file path or a text buffer .*; got int\."),
        (lambda: write_csv(pd.DataFrame(), "x.csv", path_or_buf="y.csv"), r"`path_or_buf` .*; got 'y\.csv'"),
        (lambda: csv_bytes(pd.DataFrame(), encoding="latin-1"), r"always UTF-8; got 'latin-1'"),
    ],
    ids=["list", "series", "dest", "path-or-buf", "encoding"],
)
def test_bad_arguments_are_refused_echoing_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_million_rows_in_vectorised_time():
    n = 1_000_000
    frame = pd.DataFrame(
        {
            "text": np.where(np.arange(n) % 3 == 0, "=1+1", "fine"),
            "object": pd.Series(np.where(np.arange(n) % 2 == 0, "-1", "ok"), dtype=object),
            "category": pd.Categorical(np.where(np.arange(n) % 2 == 0, "@a", "b")),
            "x": np.linspace(-1, 1, n),
        }
    )
    import time

    start = time.perf_counter()
    out = neutralise(frame)
    elapsed = time.perf_counter() - start
    assert out["text"].iloc[0] == "'=1+1" and out["object"].iloc[0] == "'-1" and out["category"].iloc[0] == "'@a"
    assert elapsed < 15, f"neutralise took {elapsed:.1f} s on 1M rows"  # ~0.5 s; a per-cell loop is far slower


# --------------------------------------------------------------------------------------------
# The property

_text = st.text(alphabet=st.sampled_from([*FORMULA_PREFIXES, "'", "a", "1", ".", " ", '"', ",", "\n", "é"]), max_size=6)


@st.composite
def _frames(draw):
    n = draw(st.integers(0, 6))
    names = draw(st.lists(_text, min_size=1, max_size=4, unique=True))
    columns = {}
    for name in names:
        kind = draw(st.sampled_from(["object", "string", "category", "float", "int"]))
        if kind == "float":
            columns[name] = pd.Series(draw(st.lists(st.floats(allow_nan=True), min_size=n, max_size=n)), dtype=float)
        elif kind == "int":
            columns[name] = pd.Series(draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n)))
        else:
            cells = draw(st.lists(st.one_of(_text, st.none()), min_size=n, max_size=n))
            columns[name] = pd.Series(cells, dtype=kind)
    return pd.DataFrame(columns)


def _prefixed(original, written) -> None:
    if isinstance(original, str) and original.startswith(FORMULA_PREFIXES):
        assert written == "'" + original and written[1:] == original
    elif isinstance(original, str):
        assert written == original
    else:  # missing
        assert pd.isna(written)


@given(_frames())
def test_after_neutralise_no_text_cell_starts_like_a_formula(frame):
    before = frame.copy(deep=True)
    out = neutralise(frame)
    pd.testing.assert_frame_equal(frame, before)
    assert out.shape == frame.shape
    for original, written in zip(frame.columns, out.columns):
        _prefixed(original, written)
    for position in range(frame.shape[1]):
        raw, safe = frame.iloc[:, position], out.iloc[:, position]
        if raw.dtype.kind in "fi":
            pd.testing.assert_series_equal(safe, raw, check_names=False)  # numbers unchanged
            continue
        for original, written in zip(raw, safe):
            assert not (isinstance(written, str) and written.startswith(FORMULA_PREFIXES))
            _prefixed(original, written)


@given(_frames())
def test_the_written_csv_has_no_formula_cell_and_reads_back_the_prefixed_values(frame):
    back = _read(csv_bytes(frame, index=False))
    assert back.shape == frame.shape
    _no_formula_cell(back)
    expected = neutralise(frame)
    for position in range(frame.shape[1]):
        if frame.iloc[:, position].dtype.kind not in "fi":
            cells = ["" if pd.isna(v) else v for v in expected.iloc[:, position]]
            assert back.iloc[:, position].tolist() == cells


# --------------------------------------------------------------------------------------------
# Every writer of the tool


@pytest.fixture(scope="module")
def formula_frame() -> pd.DataFrame:
    """breast_cancer with its two classes renamed ``=1+1`` and ``@SUM(1+1)`` (569 rows, numeric)."""
    from core.tabular.datasets import load_dataset

    frame = load_dataset("breast_cancer").frame
    first, second = frame["diagnosis"].unique()[:2]
    return frame.assign(diagnosis=frame["diagnosis"].map({first: LABELS[0], second: LABELS[1]}))


def test_certificates_csv_of_an_audit_with_formula_labels(formula_frame, tmp_path):
    from core.tabular.audit import run_audit, write_audit

    result = run_audit(formula_frame, target="diagnosis", model="logreg", seed=0)
    write_audit(result, tmp_path)
    written = _read(tmp_path / "certificates.csv")
    _no_formula_cell(written)
    assert set(written["y_true"]) == set(written["pred"]) == {"'=1+1", "'@SUM(1+1)"}
    # The Parquet file keeps the raw labels.
    assert set(pd.read_parquet(tmp_path / "certificates.parquet")["y_true"]) == set(LABELS)


def test_sweep_tables_of_a_user_table_named_like_a_formula(formula_frame, tmp_path, capsys):
    from core.cli import main

    data = tmp_path / "=1+1.csv"  # the dataset's name is the file stem
    formula_frame.to_csv(data, index=False)
    out = tmp_path / "sweep"
    argv = ["audit", "--data", str(data), "--target", "diagnosis", "--models", "logreg", "--seeds", "0,1"]
    code = main([*argv, "--bootstrap", "50", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    for name in ("sweep_table.csv", "sweep_units.csv", "sweep_runs.csv", "sweep_bootstrap.csv"):
        _no_formula_cell(_read(out / name))
    assert set(_read(out / "sweep_table.csv")["dataset"]) == {"'=1+1"}
    assert set(_read(out / "sweep_units.csv")["dataset"]) == {"'=1+1"}
    unit = _read(out / "=1+1" / "logreg" / "seed0" / "certificates.csv")
    assert set(unit["y_true"]) == {"'=1+1", "'@SUM(1+1)"}


def test_synthetic_csv_neutralises_and_parquet_keeps_raw_values(formula_frame, tmp_path):
    from core.scale.synthetic import fit_synthetic, write_synthetic
    from core.tabular.dataset import build_dataset

    dataset = build_dataset(formula_frame, "diagnosis", name="bc", where="test", detect_ids=False)
    table = fit_synthetic(dataset)
    write_synthetic(table, tmp_path / "s.csv", 200, seed=0, format="csv")
    write_synthetic(table, tmp_path / "s.parquet", 200, seed=0, format="parquet")
    written = _read(tmp_path / "s.csv")
    _no_formula_cell(written)
    assert set(written["diagnosis"]) == {"'=1+1", "'@SUM(1+1)"}
    assert set(pd.read_parquet(tmp_path / "s.parquet")["diagnosis"]) == set(LABELS)
    write_synthetic(table, tmp_path / "empty.csv", 0, seed=0, format="csv")
    assert (tmp_path / "empty.csv").read_text().startswith('"mean radius"')


def test_reviews_export_to_stdout_neutralises_a_note(tmp_path, capsys):
    from core.cli import main
    from core.reviews import ReviewStore

    db = tmp_path / "reviews.sqlite3"
    ReviewStore(db).record("fp", 1, reviewer="ana", decision="acceptable", note=HYPERLINK)
    assert main(["reviews", "export", "--reviews-db", str(db)]) == 0
    exported = _read(capsys.readouterr().out)
    assert exported["note"].tolist() == ["'" + HYPERLINK]
    _no_formula_cell(exported)


# --------------------------------------------------------------------------------------------
# No writer bypasses the module

#: Files that write CSV without core.csv_safe's writers, each with why.
ALLOWED = {
    "core/csv_safe.py": "the module itself",
    "core/scale/synthetic.py": "streams pyarrow blocks, each neutralised by core.csv_safe.neutralise first",
}
#: Files known to bypass it and not converted yet, each with who converts it. The test fails when
#: one no longer bypasses it, so that the entry goes too.
PENDING: dict[str, str] = {}


def _raw_csv_writes(path: Path) -> list[int]:
    """Lines of calls that write CSV without core.csv_safe: .to_csv(), csv.writer, pyarrow's writers."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        attr, base = node.func.attr, node.func.value
        owner = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        if (
            attr == "to_csv"
            or (attr in ("writer", "DictWriter") and owner == "csv")
            or attr == "CSVWriter"
            or (attr == "write_csv" and owner != "csv_safe")
        ):
            lines.append(node.lineno)
    return lines


def test_every_csv_writer_goes_through_csv_safe():
    files = [*ROOT.glob("core/**/*.py"), *ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/**/*.py"), ROOT / "app.py"]
    files += [*ROOT.glob("scripts/**/*.py")]
    raw = {}
    for file in files:
        where = file.relative_to(ROOT).as_posix()
        if where not in ALLOWED and (lines := _raw_csv_writes(file)):
            raw[where] = lines
    bypassing = {where: lines for where, lines in raw.items() if where not in PENDING}
    assert not bypassing, f"CSV written without core.csv_safe (write_csv / csv_bytes): {bypassing}"
    stale = sorted(set(PENDING) - set(raw))
    assert not stale, f"{stale} no longer bypass core.csv_safe: remove them from PENDING"
