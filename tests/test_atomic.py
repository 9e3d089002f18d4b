"""Unit tests of the shared validation layer (core.validation) and the atomic writer (core.atomic)."""

from __future__ import annotations

import csv
import errno
import io
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.atomic
import core.validation
from core.atomic import atomic_folder, atomic_path, atomic_write_bytes, check_output_file
from core.validation import (
    ConstantFeatureWarning,
    check_table,
    check_unit_interval,
    csv_header_duplicate,
    warn_constant_features,
)

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


# ------------------------------------------------------------------------------------------
# atomic writer


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_atomic_write_replaces_and_leaves_nothing(tmp_path):
    dest = tmp_path / "f.bin"
    atomic_write_bytes(dest, b"one")
    atomic_write_bytes(dest, b"two")
    assert dest.read_bytes() == b"two" and not _leftovers(tmp_path)


def test_failed_write_keeps_the_previous_bytes(tmp_path):
    dest = tmp_path / "f.csv"
    dest.write_bytes(b"previous")
    with pytest.raises(RuntimeError):
        with atomic_path(dest) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer crashed")
    assert dest.read_bytes() == b"previous" and not _leftovers(tmp_path)


def test_os_error_names_the_destination_not_the_temporary(tmp_path, monkeypatch):
    dest = tmp_path / "f.csv"

    def enospc(path):
        raise OSError(errno.ENOSPC, f"No space left on device writing {path}", str(path))

    monkeypatch.setattr(core.atomic, "_fsync_file", enospc)
    with pytest.raises(OSError) as info:
        atomic_write_bytes(dest, b"x")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(dest)
    assert ".tmp" not in str(info.value)
    assert not dest.exists() and not _leftovers(tmp_path)


def test_symlink_destination_replaces_the_target(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    atomic_write_bytes(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"


@pytest.mark.parametrize("kind", ["folder", "device", "fifo", "under-a-file"])
def test_unwritable_destinations_are_refused_up_front(tmp_path, kind):
    if kind == "folder":
        dest = tmp_path / "d"
        dest.mkdir()
        exc = IsADirectoryError
    elif kind == "device":
        dest, exc = Path("/dev/null"), ValueError
    elif kind == "fifo":
        dest = tmp_path / "p"
        os.mkfifo(dest)
        exc = ValueError
    else:
        (tmp_path / "f").write_text("x")
        dest, exc = tmp_path / "f" / "x.csv", NotADirectoryError
    with pytest.raises(exc, match=re.escape(str(dest))):
        check_output_file(dest)


def test_atomic_folder_publishes_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_folder(out) as tmp:
            (tmp / "a.txt").write_text("a")
            raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"] and not _leftovers(tmp_path)
    with atomic_folder(out) as tmp:
        (tmp / "a.txt").write_text("a")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"] and not _leftovers(tmp_path)


def test_the_two_former_writers_are_the_shared_one():
    import core.scale.store
    import core.tabular.certify_task

    assert core.scale.store._atomic_write_bytes is atomic_write_bytes
    src = Path(core.tabular.certify_task.__file__).read_text()
    assert "tmp.write_bytes" not in src and "atomic_write_bytes(path, data)" in src
