"""Wide tables (issue 12 / issue 11 item 4) in the certificate figures: 500 evidence groups.

The one-step-drops chart shows the top N groups and folds the rest into one bar, and the
certificate charts keep every step's tick label inside the figure.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import viz
from core.viz.certificate import _step_labels, _wrap

N_COLUMNS = 500


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
