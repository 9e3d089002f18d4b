"""Wide tables (issue 12 / issue 11 item 4): 500 evidence groups stay readable and interactive.

The one-step-drops chart shows the top N groups and folds the rest into one bar, the what-if
picks groups in a searchable multiselect instead of one pill per group, raw values are
rounded, and the certificate charts keep every step's tick label inside the figure.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from app_checks import assert_ok
from hypothesis import given
from hypothesis import strategies as st

from core import viz
from core.views.tabular import raw_values_table
from core.views.uploads import (
    CELL_BUDGET,
    LARGE_TABLE_ROWS,
    MIN_SAMPLE_ROWS,
    interactive_sample_rows,
)
from core.viz.certificate import _step_labels, _wrap

N_COLUMNS = 500


def _wide(n_rows: int = 300, n_columns: int = N_COLUMNS, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_columns)) * 1.234567890123
    y = X[:, :4].sum(axis=1) + rng.normal(scale=0.5, size=n_rows) > 0
    frame = pd.DataFrame(X, columns=[f"feature_{j:03d}" for j in range(n_columns)])
    frame["target"] = np.where(y, "yes", "no")
    return frame


# ---------------------------------------------------------------------------------------------
# One-step drops: top N, the rest folded


def _bars(fig):
    (bar,) = fig.data
    return list(bar.y), list(bar.x)


def test_drops_of_500_groups_show_the_top_n_and_fold_the_others():
    rng = np.random.default_rng(1)
    names = [f"g{j}" for j in range(N_COLUMNS)]
    drops = rng.normal(size=N_COLUMNS)
    fig = viz.drops_figure(names, drops, path=["g7", "g3"], top_n=15)
    labels, values = _bars(fig)
    assert len(labels) == 16  # at most N + 1 bars
    # Reference by a plain sort: the 15 largest drops, largest first.
    ranked = sorted(range(N_COLUMNS), key=lambda j: (-drops[j], j))
    assert labels[:15] == [names[j] for j in ranked[:15]]
    assert values[:15] == pytest.approx([drops[j] for j in ranked[:15]])
    assert labels[15] == "485 other groups"
    assert values[15] == pytest.approx(max(drops[j] for j in ranked[15:]))
    assert fig.layout.height < 800  # it was 14,120 px with every group
    colours = list(fig.data[0].marker.color)
    assert [c for lab, c in zip(labels, colours) if lab in ("g7", "g3")] == ["#0072B2"] * len(
        {"g7", "g3"} & set(labels[:15])
    )


def test_drops_without_top_n_or_with_a_large_one_fold_nothing():
    names, drops = ["a", "b", "c"], [0.1, 0.9, -0.2]
    assert _bars(viz.drops_figure(names, drops))[0] == ["b", "a", "c"]
    assert _bars(viz.drops_figure(names, drops, top_n=3))[0] == ["b", "a", "c"]
    labels, values = _bars(viz.drops_figure(names, drops, top_n=2))
    assert labels == ["b", "a", "1 other group"] and values == pytest.approx([0.9, 0.1, -0.2])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_drops_refuse_a_bad_top_n(bad):
    with pytest.raises(ValueError, match="`top_n` must be a positive int or None"):
        viz.drops_figure(["a", "b"], [0.1, 0.2], top_n=bad)


@given(st.lists(st.floats(-5, 5), min_size=1, max_size=60), st.integers(1, 70))
def test_drops_bar_count_and_values_invariant(drops, top_n):
    names = [f"g{j}" for j in range(len(drops))]
    labels, values = _bars(viz.drops_figure(names, drops, top_n=top_n))
    assert len(labels) == min(len(drops), top_n + 1 if top_n < len(drops) else len(drops))
    shown = values[:top_n]
    assert shown == sorted(shown, reverse=True)
    if top_n < len(drops):  # the folded bar never exceeds the smallest shown drop
        assert values[-1] <= min(shown) + 1e-12


# ---------------------------------------------------------------------------------------------
# Tick labels, padding, the decision boundary


def test_wrapped_labels_fit_their_width_and_keep_every_step():
    for width in (6, 10, 16):
        for text in ("−worst concave points", "−emp_length", "−x", "−averyveryverylongwordwithoutspaces here"):
            lines = _wrap(text, width).split("<br>")
            assert 1 <= len(lines) <= 2 and all(len(line) <= width for line in lines), (text, width, lines)
    assert _wrap("−mean radius", 16) == "−mean radius"
    labels = _step_labels(["worst concave points", "mean fractal dimension", "a", "b", "c"], width=16)
    assert [lab.split("<br>")[0] for lab in labels] == ["0", "1", "2", "3", "4", "5"]


def test_trajectory_and_collapse_leave_room_for_the_first_and_last_tick():
    path = ["worst concave points", "mean fractal dimension", "worst texture", "area error", "worst symmetry"]
    margins, proba = [2.0, 1.2, 0.4, -0.1, -0.5, -0.9], [0.9, 0.8, 0.6, 0.45, 0.4, 0.3]
    fig = viz.trajectory_figure(path, margins, proba, flip_budget=3)
    layout = fig.to_plotly_json()["layout"]
    assert tuple(layout["xaxis2"]["range"]) == (-0.5, 5.5)
    assert len(layout["xaxis2"]["ticktext"]) == 6 and layout["xaxis2"]["tickangle"] == 0
    collapse = viz.collapse_figure([0, 0.4, 0.8, 1.05, 1.2, 1.4], rcma=0.8, path=path)
    lo, hi = collapse.layout.xaxis.range
    assert lo < -0.5 and hi > 5.5  # bars of width 1 around 0..5 stay whole


def test_degradation_names_the_boundary_in_the_legend_not_over_the_stars():
    fig = viz.degradation_figure(
        [0.25, 0.5, 0.75, 1.0], {"attenuate_single": [1.0, 0.2, -0.1, -0.5]}, {"attenuate_single": 0.75}, margin0=2.0
    )
    assert not [a for a in fig.layout.annotations if "decision boundary" in (a.text or "")]
    assert [t.name for t in fig.data if t.name and "decision boundary" in t.name] == ["decision boundary (margin 0)"]


# ---------------------------------------------------------------------------------------------
# Raw values and the interactive sample


def test_raw_values_are_rounded_and_missing_stays_missing():
    row = pd.Series({"a": 0.123456789012345, "b": 3, "c": None, "d": "text", "e": 2.5e-7, "f": -1234.56789})
    groups, origins = {"A": [0], "B": [1], "C": [2], "D": [3], "E": [4], "F": [5]}, ["a", "b", "c", "d", "e", "f"]
    table = raw_values_table(row, groups, origins)
    values = table["value"].tolist()
    assert pd.isna(values[2])
    assert values[:2] + values[3:] == ["0.123", "3", "text", "0", "-1234.568"]


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


# ---------------------------------------------------------------------------------------------
# The explorer on an uploaded 500-column table (AppTest)


def _chart(at, title_start: str) -> dict:
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["layout"]["title"]["text"].startswith(title_start):
            return spec
    raise AssertionError(f"no chart titled {title_start!r}")


def test_explorer_on_a_500_column_upload(app):
    buffer = io.BytesIO()
    _wide(n_rows=400).to_csv(buffer, index=False)
    app.sidebar.selectbox(key="model").set_value("logreg").run()
    app.get("file_uploader")[0].set_value(("wide.csv", buffer.getvalue(), "text/csv")).run()
    app.selectbox(key="upload_target").set_value("target").run()
    app.button[[b.label for b in app.button].index("Add to the datasets")].click().run()
    assert_ok(app)
    # 400 rows × 500 columns exceed the rows × groups budget: audited on a stated sample of 200 rows.
    rows = interactive_sample_rows(400, N_COLUMNS)
    assert rows == 200
    assert any(f"stratified sample of {rows:,} rows" in w.value and "500 columns" in w.value for w in app.warning)
    assert any(f"capped at **{rows:,} rows**" in c.value for c in app.caption)
    app.switch_page("pages/explorer.py").run()
    assert_ok(app)
    assert any(f"stratified sample of {rows:,} of 400 rows" in c.value for c in app.caption)
    # A searchable picker, not 500 pills; the removal path is offered first.
    picker = app.multiselect(key="whatif_groups")
    assert len(picker.options) == N_COLUMNS and not app.get("button_group")
    # The drops chart: top N (default) bars plus one folded bar.
    top_n = app.number_input(key="drops_top_n").value
    bars = _chart(app, "One-step drops")["data"][0]["y"]
    assert len(bars) == top_n + 1 and bars[-1] == f"{N_COLUMNS - top_n} other groups"
    app.number_input(key="drops_top_n").set_value(5).run()
    assert_ok(app)
    assert len(_chart(app, "One-step drops")["data"][0]["y"]) == 6
    # Raw values rounded to at most 3 decimals.
    raw = next(d.value for d in app.dataframe if list(d.value.columns) == ["group", "column", "value"])
    assert len(raw) == N_COLUMNS
    assert all(re.fullmatch(r"-?\d+(\.\d{1,3})?", v) for v in raw["value"].dropna())
    # Setting path groups to the baseline through the picker changes the what-if line.
    before = next(m.value for m in app.markdown if m.value.startswith("What-if prediction"))
    picker.set_value(picker.options[:3]).run()
    assert_ok(app)
    after = next(m.value for m in app.markdown if m.value.startswith("What-if prediction"))
    assert "with 3 group(s) at the baseline" in after and before != after
