"""``python -m core paired``: every CSV it writes has its formula cells neutralised (core.csv_safe)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from core.cli import main
from core.csv_safe import FORMULA_PREFIXES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paired"))
from paired_records import records  # noqa: E402

NAMES = {"cnn": "=cmd|' /C calc'!A0", "blur": "@SUM(1+1)", "print": "+print"}


def _read(path) -> pd.DataFrame:
    """A written CSV as text cells, exactly as a spreadsheet receives them."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _text_cells(frame: pd.DataFrame) -> list[str]:
    """The header and every cell that is not a plain number (``-0.25`` of a numeric column is one)."""
    cells = [str(c) for c in frame.columns]
    for value in frame.to_numpy().ravel():
        try:
            float(value)
        except ValueError:
            cells.append(value)
    return cells


def test_paired_outputs_with_formula_model_and_condition_names(tmp_path, capsys):
    frame = records().replace({"model": NAMES, "condition": NAMES})
    frame.to_csv(tmp_path / "records.csv", index=False)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["paired", "--records", str(tmp_path / "records.csv"), "--tau", "0.8", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    files = sorted(out.glob("*.csv"))
    assert len(files) == 11
    for file in files:
        assert not [c for c in _text_cells(_read(file)) if c.startswith(FORMULA_PREFIXES)], file.name
    intervals = _read(out / "intervals.csv")
    assert set(intervals["model"]) == {"'=cmd|' /C calc'!A0", "vit"}
    assert set(intervals["condition"]) == {"'@SUM(1+1)", "'+print"}
    # Numbers are written as numbers: the interval bounds read back as the same floats.
    np.testing.assert_array_equal(
        pd.read_csv(out / "intervals.csv")["low"].to_numpy(), intervals["low"].astype(float).to_numpy()
    )
