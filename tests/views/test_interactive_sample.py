"""How many rows of an uploaded table the dashboard audits interactively
(``core.views.uploads.interactive_sample_rows``): the row cap and the rows × groups budget."""

from __future__ import annotations

import pytest

from core.views.uploads import CELL_BUDGET, LARGE_TABLE_ROWS, MIN_SAMPLE_ROWS, interactive_sample_rows


def test_interactive_sample_rows_by_hand_and_invariants():
    assert interactive_sample_rows(5_000, 5) == 5_000
    assert interactive_sample_rows(50_000, 5) == LARGE_TABLE_ROWS
    assert interactive_sample_rows(50_000, 20) == CELL_BUDGET // 20 == 5_000
    assert interactive_sample_rows(20_000, 400) == CELL_BUDGET // 400 == 250
    assert interactive_sample_rows(20_000, 500) == CELL_BUDGET // 500 == MIN_SAMPLE_ROWS == 200
    assert interactive_sample_rows(20_000, 5_000) == MIN_SAMPLE_ROWS
    assert interactive_sample_rows(100, 500) == 100
    for n in (10, 999, 5_000, 30_000):
        sizes = [interactive_sample_rows(n, g) for g in (1, 5, 25, 100, 500, 5_000)]
        assert sizes == sorted(sizes, reverse=True) and all(min(n, MIN_SAMPLE_ROWS) <= s <= n for s in sizes)
    with pytest.raises(ValueError, match="`n_groups` must be a positive int; got 0"):
        interactive_sample_rows(10, 0)
