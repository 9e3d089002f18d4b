"""Identification grid summary over many cells (SPEC B.4).

Input: the long table of :func:`core.paired.bounds.identified_intervals_grid` (one row per
cell × target × level). Output, per group of cells (default: per ``source``):

* mean interval width per target and level (undefined intervals left out; width in the
  target's units — shares of pairs for ``H``/``L``, probability for ``dM_k``; larger = less
  identified);
* how many cells have an ``H`` interval strictly narrower at I5 than at Ik (five-state
  counts add information), how many have a ``dM_k`` interval that straddles 0
  (``low < 0 < high``: the sign of the confidence change is not identified), and how many
  have no retained-correct pair (``K = 0``: ``dM_k`` undefined at Ik).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from core.paired.records import CELL_COLUMNS

__all__ = ["GridSummary", "grid_summary"]

# Widths closer than this count as equal (rounding of sums of probabilities).
_NARROW_TOL = 1e-12


@dataclass(frozen=True, kw_only=True)
class GridSummary:
    """Summary of identified intervals over a grid of cells.

    Attributes
    ----------
    widths : DataFrame
        One row per (group, target, level): the ``by`` columns, ``target, level, n_cells,
        n_defined, mean_width``.
    cells : DataFrame
        One row per group: the ``by`` columns, ``n_cells``, then counts with their shares:
        ``i5_narrows_h`` / ``i5_narrows_h_share`` (among cells with Ik and I5 intervals for H),
        ``dmk_straddles_zero_<level>`` / ``_share`` for each level present (among cells where
        dM_k is defined there), ``k_zero`` / ``k_zero_share`` (cells whose Ik dM_k is
        undefined). A column is absent when the grid lacks the levels it needs.
    """

    widths: pd.DataFrame
    cells: pd.DataFrame


def grid_summary(grid: pd.DataFrame, *, by: Sequence[str] = ("source",)) -> GridSummary:
    """Summarise identified intervals over many cells.

    Parameters
    ----------
    grid : DataFrame
        Rows of :func:`core.paired.bounds.identified_intervals_grid`: ``model, condition,
        source, target, level, low, high`` (``observed`` optional).
    by : sequence of str, default=("source",)
        Columns grouping the cells (empty: one group for the whole grid).

    Returns
    -------
    GridSummary
    """
    needed = [*CELL_COLUMNS, "target", "level", "low", "high"]
    if not isinstance(grid, pd.DataFrame):
        raise ValueError(f"`grid` must be a DataFrame; got {type(grid).__name__}.")
    missing = [c for c in needed if c not in grid.columns]
    if missing:
        raise ValueError(f"`grid` lacks column(s) {missing}; it has {list(grid.columns)}.")
    by = list(by)
    unknown = [c for c in by if c not in grid.columns]
    if unknown:
        raise ValueError(f"`by` names column(s) {unknown} that `grid` does not have.")
    if grid.empty:
        raise ValueError("`grid` has no rows.")
    group_cols = by or ["_all"]
    data = grid.assign(width=grid["high"] - grid["low"], _all="all")
    keys = list(dict.fromkeys([*group_cols, *CELL_COLUMNS]))
    widths = (
        data.groupby([*group_cols, "target", "level"], sort=True)
        .agg(n_cells=("width", "size"), n_defined=("width", "count"), mean_width=("width", "mean"))
        .reset_index()
    )
    # Natural order of targets and levels (H, L, dM_k; I0, Ik, I5) within each group.
    rank = {name: i for i, name in enumerate(("H", "L", "dM_k", "I0", "Ik", "I5"))}
    widths = widths.sort_values(
        [*group_cols, "target", "level"],
        kind="stable",
        key=lambda col: col.map(rank) if col.name in ("target", "level") else col,
    )
    widths = widths.reset_index(drop=True)
    wide = data.set_index([*keys, "target", "level"])[["low", "high", "width"]].unstack(["target", "level"])

    def col(value: str, target: str, level: str) -> pd.Series | None:
        key = (value, target, level)
        return wide[key] if key in wide.columns else None

    flags = pd.DataFrame(index=wide.index)
    h_ik, h_i5 = col("width", "H", "Ik"), col("width", "H", "I5")
    if h_ik is not None and h_i5 is not None:
        both = h_ik.notna() & h_i5.notna()
        flags["i5_narrows_h"] = (h_i5 < h_ik - _NARROW_TOL).astype(float).where(both)
    for level in ("I0", "Ik", "I5"):
        low, high = col("low", "dM_k", level), col("high", "dM_k", level)
        if low is not None:
            flags[f"dmk_straddles_zero_{level}"] = ((low < 0) & (high > 0)).astype(float).where(low.notna())
    if col("low", "dM_k", "Ik") is not None:
        flags["k_zero"] = col("low", "dM_k", "Ik").isna().astype(float)
    flags = flags.reset_index()
    counted = [c for c in flags.columns if c not in keys]
    grouped = flags.groupby(group_cols, sort=True)
    cells = grouped.size().rename("n_cells").reset_index()
    for name in counted:
        cells[name] = grouped[name].sum(min_count=1).round().astype("Int64").to_numpy()
        cells[f"{name}_share"] = grouped[name].mean().to_numpy()
    if not by:
        widths, cells = widths.drop(columns="_all"), cells.drop(columns="_all")
    return GridSummary(widths=widths, cells=cells)
