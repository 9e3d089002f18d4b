"""Display defects of issue 11 (item 4) in the figures: colours, axes and titles.

Each test pins one defect seen in the browser; the tests read the plotly JSON the browser
receives, so "two curves share a colour" or "the axis runs to 1.04" is checked on exactly what
is drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import viz
from core.viz._style import (
    FLIPPED,
    OKABE_ITO,
    SERIES_ORDER,
    series_colours,
    series_styles,
    wrap_label,
)

# Longest title that fits a half-width column at 1000 px (16 px font, about 8.5 px per character).
HALF_COLUMN_TITLE = 45


# ---------------------------------------------------------------------------- colour policy
def test_series_colours_never_use_the_flipped_vermillion_and_are_distinct():
    colours = series_colours(len(SERIES_ORDER))
    assert FLIPPED not in colours
    assert len(set(colours)) == len(colours) == 7
    assert set(colours) <= set(OKABE_ITO.values())


@given(st.integers(0, 28))
def test_series_styles_are_unique_pairs(n):
    styles = series_styles(n)
    assert len(styles) == n and len(set(styles)) == n
    assert all(c != FLIPPED for c, _ in styles)


def test_series_styles_refuse_more_than_they_can_tell_apart():
    with pytest.raises(ValueError, match="between 0 and 28; got 29"):
        series_styles(29)


def test_fourth_model_is_not_drawn_in_the_flipped_colour_and_titles_are_wrapped():
    names = [
        "Logistic regression",
        "Random forest",
        "Histogram gradient boosting",
        "Fragility-regularised ResMLP (torch)",
    ]
    trajectories = {n: (["a", "b"], [2.0, 1.0, 0.5], 3) for n in names}  # nothing flips
    fig = viz.trajectories_by_model_figure(trajectories)
    for trace in fig.data:
        assert trace.line.color != FLIPPED, trace.name  # before: the 4th model was vermillion
        assert FLIPPED not in trace.marker.color  # no step flips, so no vermillion point
    titles = [a.text for a in fig.layout.annotations]
    width = max(10, 60 // len(names))
    assert all(len(line) <= width for t in titles for line in t.split("<br>") if " " in line), titles
    assert [t.replace("<br>", " ") for t in titles] == names


def test_flipped_steps_of_a_model_are_vermillion():
    fig = viz.trajectories_by_model_figure({"m": (["a", "b"], [2.0, 0.5, -1.0], 2)})
    assert list(fig.data[0].marker.color) == [OKABE_ITO["blue"], OKABE_ITO["blue"], FLIPPED]


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("Histogram gradient boosting", 21, "Histogram gradient<br>boosting"),
        ("a b c", 1, "a<br>b<br>c"),
        ("Supercalifragilistic x", 5, "Supercalifragilistic<br>x"),
        ("", 5, ""),
    ],
)
def test_wrap_label_hand_cases(text, width, expected):
    assert wrap_label(text, width) == expected


@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=12), min_size=1, max_size=8), st.integers(1, 30))
def test_wrap_label_keeps_every_word_in_order(words, width):
    wrapped = wrap_label(" ".join(words), width)
    assert wrapped.replace("<br>", " ").split() == words
    assert all(len(line) <= width or " " not in line for line in wrapped.split("<br>"))


# ---------------------------------------------------------------------------- axes
def test_tradeoff_axes_stay_inside_the_metric_range():
    # breast_cancer: every model reaches AUROC 1.0 -> the axis ran 0.95..1.05 (ticks 0.96..1.04).
    frame = pd.DataFrame({"model": ["a", "b", "c"], "auroc": [1.0, 1.0, 1.0], "share": [0.0, 0.02, 0.01]})
    fig = viz.tradeoff_figure(
        frame, x="auroc", y="share", x_title="AUROC", y_title="share", x_bounds=(0, 1), y_bounds=(0, 1)
    )
    low, high = fig.layout.xaxis.range
    assert high <= 1.0 and low == pytest.approx(0.95)
    assert fig.layout.yaxis.range[0] >= 0.0
    unbounded = viz.tradeoff_figure(frame, x="auroc", y="share", x_title="AUROC", y_title="share")
    assert unbounded.layout.xaxis.range[1] == pytest.approx(1.05)  # what the bounds prevent


def test_tradeoff_labels_lean_inwards_at_the_ends():
    frame = pd.DataFrame({"model": ["left", "mid", "right"], "auroc": [0.80, 0.81, 0.83], "s": [0.3, 0.2, 0.1]})
    fig = viz.tradeoff_figure(frame, x="auroc", y="s", x_title="x", y_title="y")
    assert list(fig.data[0].textposition) == ["top right", "top center", "top left"]


# ---------------------------------------------------------------------------- titles
def test_half_column_titles_fit_and_keep_their_key_in_the_subtitle():
    regret = viz.regret_figure(["q = 60%", "q = 100%"], [0.2, 0.0], chosen="q = 100%")
    matrix = viz.policy_matrix_figure(np.zeros((2, 2)), ["q = 60%", "q = 100%"])
    for fig in (regret, matrix):
        assert len(fig.layout.title.text) <= HALF_COLUMN_TITLE, fig.layout.title.text
    assert "orange" in regret.layout.title.subtitle.text
    assert "✓" in matrix.layout.title.subtitle.text
