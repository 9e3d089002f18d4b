"""How many rows the dashboard's interactive audit of an uploaded table uses.

A certificate costs ``1 + G + |Λ|(G + 1) + K`` model rows per test sample (README, "Cost"), so
the work of an audit grows with rows × evidence groups, not rows alone: a 500-column table at
the 20,000-row cap of narrow tables took 156–200 s (issue 12). The interactive sample is
therefore bounded by a budget of rows × groups as well as by a number of rows.
"""
from __future__ import annotations

import numpy as np

__all__ = ["CELL_BUDGET", "LARGE_TABLE_ROWS", "MIN_SAMPLE_ROWS", "interactive_sample_rows"]

#: Above this many rows the interactive audit runs on a stratified sample.
LARGE_TABLE_ROWS = 20_000
#: Rows × groups of the interactive audit: 20,000 rows × 25 groups, the size of the bundled
#: tables whose audit stays within seconds.
CELL_BUDGET = 500_000
#: The smallest sample worth auditing (a test split of a few hundred predictions).
MIN_SAMPLE_ROWS = 1_000


def interactive_sample_rows(n_rows: int, n_groups: int) -> int:
    """Rows of the stratified sample the dashboard audits interactively.

    Parameters
    ----------
    n_rows : int
        Rows of the table (at least 1).
    n_groups : int
        Evidence groups (raw feature columns) of the table (at least 1).

    Returns
    -------
    int
        ``min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // n_groups))``:
        the whole table when it is small, otherwise as many rows as the budget allows.

    Examples
    --------
    >>> interactive_sample_rows(5_000, 20), interactive_sample_rows(50_000, 20), interactive_sample_rows(20_000, 500)
    (5000, 20000, 1000)
    """
    for name, value in (("n_rows", n_rows), ("n_groups", n_groups)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be a positive int; got {value!r}.")
    return int(min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // int(n_groups))))
