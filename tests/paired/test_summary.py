"""Grid summary (SPEC B.4) on hand-made interval tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.paired import grid_summary


def _rows(model, source, h, l, dmk):
    """h, l, dmk: {level: (low, high)} for one cell."""
    out = []
    for target, spec in (("H", h), ("L", l), ("dM_k", dmk)):
        for level, (low, high) in spec.items():
            out.append((model, "c", source, target, level, low, high, np.nan))
    return out


def _grid():
    rows = []
    nan = (np.nan, np.nan)
    rows += _rows(
        "a",
        "syn",
        {"I0": (0, 0.4), "Ik": (0, 0.3), "I5": (0.1, 0.3)},
        {"I0": (0, 0.2), "Ik": (0.1, 0.2), "I5": (0.1, 0.2)},
        {"I0": (-0.1, 0.3), "Ik": (0.05, 0.2), "I5": (0.05, 0.2)},
    )
    rows += _rows(
        "b",
        "syn",
        {"I0": (0, 0.2), "Ik": (0, 0.2), "I5": (0, 0.2)},
        {"I0": (0, 0.4), "Ik": (0, 0.4), "I5": (0, 0.4)},
        {"I0": (-0.2, 0.1), "Ik": nan, "I5": nan},
    )
    rows += _rows(
        "a",
        "real",
        {"I0": (0, 0.5), "Ik": (0.1, 0.4), "I5": (0.1, 0.3)},
        {"I0": (0, 0.1), "Ik": (0, 0.1), "I5": (0, 0.1)},
        {"I0": (-0.3, 0.3), "Ik": (-0.1, 0.1), "I5": (-0.1, 0.1)},
    )
    return pd.DataFrame(rows, columns=["model", "condition", "source", "target", "level", "low", "high", "observed"])


def test_widths_and_cell_counts_by_source():
    summary = grid_summary(_grid())
    w = summary.widths.set_index(["source", "target", "level"])
    assert w.loc[("syn", "H", "I0"), "mean_width"] == pytest.approx(0.3)
    assert w.loc[("syn", "H", "I5"), "mean_width"] == pytest.approx(0.2)
    assert w.loc[("syn", "dM_k", "Ik"), "mean_width"] == pytest.approx(0.15)  # undefined cell left out
    assert w.loc[("syn", "dM_k", "Ik"), "n_defined"] == 1 and w.loc[("syn", "dM_k", "Ik"), "n_cells"] == 2
    c = summary.cells.set_index("source")
    assert c.loc["syn", "n_cells"] == 2 and c.loc["real", "n_cells"] == 1
    assert c.loc["syn", "i5_narrows_h"] == 1 and c.loc["syn", "i5_narrows_h_share"] == pytest.approx(0.5)
    assert c.loc["real", "i5_narrows_h"] == 1
    assert c.loc["syn", "dmk_straddles_zero_I0"] == 2 and c.loc["syn", "dmk_straddles_zero_Ik"] == 0
    assert c.loc["syn", "dmk_straddles_zero_Ik_share"] == pytest.approx(0.0)  # among defined cells
    assert c.loc["real", "dmk_straddles_zero_Ik"] == 1
    assert c.loc["syn", "k_zero"] == 1 and c.loc["real", "k_zero"] == 0


def test_whole_grid_as_one_group_and_missing_levels():
    grid = _grid()
    summary = grid_summary(grid[grid["level"] != "I5"], by=())
    assert summary.cells["n_cells"].tolist() == [3]
    assert "i5_narrows_h" not in summary.cells.columns
    assert summary.cells["k_zero"].tolist() == [1]


def test_bad_grid_is_rejected():
    with pytest.raises(ValueError, match="lacks column"):
        grid_summary(_grid().drop(columns="low"))
    with pytest.raises(ValueError, match="`by` names column"):
        grid_summary(_grid(), by=("group",))
