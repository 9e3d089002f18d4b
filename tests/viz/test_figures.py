"""Figure builders: the right things are drawn where they belong, with titles and safe colours."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from core import viz
from core.viz._style import OKABE_ITO, finish, series_colours

PALETTE = set(OKABE_ITO.values()) | {"#7F7F7F", "#D9D9D9", "#FFFFFF"}


def _axis_titles(fig: go.Figure) -> list[str]:
    layout = fig.to_plotly_json()["layout"]
    return [
        v["title"]["text"]
        for k, v in layout.items()
        if k.startswith(("xaxis", "yaxis")) and isinstance(v, dict) and v.get("title", {}).get("text")
    ]


def _colours(fig: go.Figure) -> set[str]:
    found: set[str] = set()
    for trace in fig.to_plotly_json()["data"]:
        for part in ("marker", "line"):
            colour = trace.get(part, {}).get("color")
            if isinstance(colour, str):
                found.add(colour)
            elif isinstance(colour, (list, tuple)):
                found.update(c for c in colour if isinstance(c, str))
    return found


def _check_common(fig: go.Figure, *, n_axis_titles: int = 2) -> None:
    assert fig.layout.title.text
    assert len(_axis_titles(fig)) >= n_axis_titles
    assert _colours(fig) <= PALETTE, _colours(fig) - PALETTE
    json.loads(fig.to_json())  # serialisable for the browser (no NaN surprises)


def test_palette_is_okabe_ito_without_yellow_first():
    assert series_colours(3) == [OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["bluish_green"]]
    assert series_colours(8)[7] == series_colours(8)[0]  # seven series colours: vermillion is reserved


def test_trajectory_marks_the_flip_on_the_first_flipped_step():
    fig = viz.trajectory_figure(
        ["income", "debt", "age"],
        [2.0, 0.5, -0.3, -1.0],
        [0.9, 0.6, 0.45, 0.3],
        flip_budget=2,
        predicted=["good", "good", "bad", "bad"],
    )
    _check_common(fig)
    shapes = [s for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]
    assert [s.x0 for s in shapes] == [2, 2]  # one line through each panel, on step k* = 2
    margin_trace = fig.data[0]
    assert list(margin_trace.marker.color) == [OKABE_ITO["blue"]] * 2 + [OKABE_ITO["vermillion"]] * 2
    assert "flip at k* = 2" in [a.text for a in fig.layout.annotations]
    assert list(fig.layout.xaxis2.ticktext) == ["0<br>intact", "1<br>income", "2<br>debt", "3<br>age"]


@pytest.mark.parametrize(("depth", "k_star"), [(3, 1), (3, 3), (1, 1), (5, 2)], ids=["first", "last", "only", "inner"])
def test_the_flip_line_passes_through_the_first_flipped_point(depth, k_star):
    # Issue 40: "flip at k* = 1" was drawn between steps 0 and 1.
    margins = [1.0 - k for k in range(depth + 1)]
    margins = [m if k < k_star else -abs(m) - 0.1 for k, m in enumerate(margins)]
    fig = viz.trajectory_figure([f"g{g}" for g in range(depth)], margins, [0.5] * (depth + 1), flip_budget=k_star)
    first_flipped = [x for x, c in zip(fig.data[0].x, fig.data[0].marker.color) if c == OKABE_ITO["vermillion"]][0]
    lines = {s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1}
    assert lines == {first_flipped} == {k_star}
    note = next(a for a in fig.layout.annotations if a.text == f"flip at k* = {k_star}")
    assert note.x == k_star
    # The note runs into the plot, never past its last step.
    assert note.xanchor == ("right" if k_star > depth / 2 else "left")


def test_trajectory_without_flip_says_so():
    fig = viz.trajectory_figure(["a", "b"], [2.0, 1.5, 1.0], [0.9, 0.8, 0.7], flip_budget=3)
    assert "no flip within K = 2" in [a.text for a in fig.layout.annotations]
    assert not [s for s in fig.layout.shapes if s.x0 == s.x1]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"margins": [1.0, 0.5]}, r"`margins` must have length 3; got 2"),
        ({"flip_budget": 4}, r"`flip_budget` must be an integer in 1..3"),
        ({"flip_budget": 0}, r"`flip_budget` must be an integer in 1..3"),
        ({"predicted": ["x"]}, r"`predicted` must have length 3; got 1"),
    ],
    ids=["short-margins", "budget-too-big", "budget-zero", "short-predicted"],
)
def test_trajectory_rejects_inconsistent_inputs(kwargs, match):
    args = dict(path=["a", "b"], margins=[1.0, 0.5, 0.1], proba=[0.8, 0.7, 0.6], flip_budget=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        viz.trajectory_figure(args.pop("path"), args.pop("margins"), args.pop("proba"), **args)


def test_collapse_draws_rcma_as_the_mean_bar_height():
    c = np.array([0.0, 0.2, 0.7, 1.3])
    fig = viz.collapse_figure(c, rcma=float(c.mean()), path=["a", "b", "c"])
    _check_common(fig)
    bars = fig.data[0]
    assert list(bars.y) == list(c) and bars.width == 1.0
    assert fig.layout.shapes[0].y0 == pytest.approx(c.mean())
    with pytest.raises(ValueError, match=r"`path` must have length 3"):
        viz.collapse_figure(c, rcma=0.5, path=["a"])


def test_degradation_marks_lambda_star_on_its_curve_and_skips_infinite():
    lam = [0.25, 0.5, 0.75, 1.0]
    fig = viz.degradation_figure(
        lam,
        {"attenuate_single": [1.0, 0.2, -0.1, -0.5], "attenuate_all": [1.5, 1.2, 1.0, 0.9]},
        {"attenuate_single": 0.75, "attenuate_all": float("inf")},
        margin0=2.0,
    )
    _check_common(fig)
    stars = [t for t in fig.data if t.marker.symbol == "star"]
    assert len(stars) == 1 and stars[0].x == (0.75,) and stars[0].y == (-0.1,)
    assert fig.data[0].x[0] == 0.0 and fig.data[0].y[0] == 2.0


def test_drops_sorted_and_path_highlighted():
    fig = viz.drops_figure(["a", "b", "c"], [0.1, 0.9, -0.2], path=["b"])
    _check_common(fig)
    assert list(fig.data[0].y) == ["b", "a", "c"]
    assert list(fig.data[0].marker.color) == [OKABE_ITO["blue"], "#7F7F7F", "#7F7F7F"]


def test_whatif_and_scatter_and_histogram():
    _check_common(viz.whatif_figure(["good", "bad"], [0.8, 0.2], [0.4, 0.6]))
    fig = viz.confidence_fds_figure(np.linspace(0.5, 1, 50), np.linspace(0, 1, 50), brittle=np.arange(50) % 2 == 0)
    _check_common(fig)
    assert sum(len(t.x) for t in fig.data) == 50
    many = viz.confidence_fds_figure(np.full(30, 0.9), np.full(30, 0.5), max_points=10)
    assert sum(len(t.x) for t in many.data) == 10
    hist = viz.flip_budget_histogram([1, 1, 3, 4], depth=3)
    _check_common(hist)
    assert list(hist.data[0].y) == [2, 0, 1, 1]
    with pytest.raises(ValueError, match=r"`flip_budget` values must lie in 1..4"):
        viz.flip_budget_histogram([0, 2], depth=3)


def test_coverage_curves_with_references_and_selected_budget():
    q = np.array([0.05, 0.1, 0.5, 1.0])
    fig = viz.coverage_figure(
        q,
        {"fds": [0.3, 0.5, 0.9, 1.0], "confidence": [0.1, 0.2, 0.6, 1.0]},
        ceiling=np.minimum(1, q * 4),
        random=q,
        selected=0.1,
        highlight="fds",
    )
    _check_common(fig)
    assert list(fig.data[0].x) == [5.0, 10.0, 50.0, 100.0]
    assert fig.data[0].line.width > fig.data[1].line.width
    assert [t.name for t in fig.data][-2:] == ["ceiling (best possible)", "random selection"]
    assert fig.layout.shapes[0].x0 == 10.0
    with pytest.raises(ValueError, match="fractions in"):
        viz.coverage_figure([0, 0.5], {"a": [0, 1]})
    with pytest.raises(ValueError, match=r"`curves\['a'\]` must have shape"):
        viz.coverage_figure([0.5, 1.0], {"a": [0.1]})


def test_score_metrics_sorted_by_auroc_with_nan_last():
    table = pd.DataFrame({"score": ["a", "fds", "c"], "auroc": [0.6, 0.9, np.nan], "capture@10": [0.2, 0.5, 0.1]})
    fig = viz.score_metrics_figure(table, capture_column="capture@10", highlight="fds")
    _check_common(fig)
    assert list(fig.data[0].y) == ["fds", "a", "c"]
    assert fig.data[0].marker.color[0] == OKABE_ITO["orange"]
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['capture@20'\]"):
        viz.score_metrics_figure(table, capture_column="capture@20")


def test_model_figures():
    frame = pd.DataFrame({"model": ["lr", "gb", "nan"], "auroc": [0.8, 0.9, np.nan], "rcma": [0.1, 0.4, 0.2]})
    fig = viz.tradeoff_figure(frame, x="auroc", y="rcma", x_title="AUROC", y_title="mean RCMA")
    _check_common(fig)
    assert list(fig.data[0].text) == ["lr", "gb"]
    traj = viz.trajectories_by_model_figure(
        {"lr": (["a", "b"], [2.0, 1.0, -1.0], 2), "gb": (["b", "a"], [4.0, 3.0, 2.0], 3)}
    )
    _check_common(traj, n_axis_titles=1)
    assert list(traj.data[0].y) == pytest.approx([1.0, 0.5, -0.5])
    with pytest.raises(ValueError, match="margins of model 'x' must have shape"):
        viz.trajectories_by_model_figure({"x": (["a"], [1.0], 2)})


def test_reliability_skips_empty_bins_and_draws_one_panel_per_subset():
    bins = pd.DataFrame(
        {
            "panel": ["all"] * 4 + ["fragile"] * 2,
            "method": ["raw", "raw", "BATS", "BATS", "raw", "BATS"],
            "confidence": [0.6, 0.9, 0.55, 0.85, 0.9, np.nan],
            "accuracy": [0.5, 0.8, 0.55, 0.86, 0.4, np.nan],
            "count": [10, 30, 12, 28, 5, 0],
        }
    )
    fig = viz.reliability_figure(bins)
    _check_common(fig)
    assert [a.text for a in fig.layout.annotations] == ["all", "fragile"]
    fragile_bats = [t for t in fig.data if t.name == "BATS" and t.xaxis == "x2"]
    assert len(fragile_bats[0].x) == 0


def _intervals() -> pd.DataFrame:
    rows = []
    for target, base in (("H", 0.1), ("L", 0.05), ("dM_k", 0.2)):
        for level, width in (("I0", 0.3), ("Ik", 0.1), ("I5", 0.05)):
            rows.append({"target": target, "level": level, "low": base, "high": base + width, "observed": base + 0.02})
    return pd.DataFrame(rows)


def test_interval_bars_span_low_to_high_and_mark_observed():
    fig = viz.intervals_figure(_intervals())
    _check_common(fig)
    bars = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(bars) == 9
    assert tuple(bars[0].x) == pytest.approx((0.1, 0.4)) and bars[0].y == ("I0", "I0")
    observed = [t for t in fig.data if t.marker.symbol == "diamond"]
    assert len(observed) == 9 and observed[0].x == (pytest.approx(0.12),)


def test_interval_bars_show_undefined_dmk():
    frame = _intervals()
    frame.loc[frame["target"] == "dM_k", ["low", "high", "observed"]] = np.nan
    fig = viz.intervals_figure(frame)
    assert sum(1 for t in fig.data if t.mode == "text" and t.text == ("undefined",)) == 3
    with pytest.raises(ValueError, match="has none of the targets"):
        viz.intervals_figure(frame.assign(target="Q"))


def test_interval_bars_without_pairing_have_no_observed_marker():
    fig = viz.intervals_figure(_intervals().assign(observed=np.nan))
    assert not [t for t in fig.data if t.marker.symbol == "diamond"]
    key = fig.layout.title.subtitle.text  # the reading key sits under the (short) title
    assert "pairing unknown" in key and "◆" not in key
    assert "◆ = observed pairing" in viz.intervals_figure(_intervals()).layout.title.subtitle.text


def test_grid_policy_regret():
    summary = pd.DataFrame(
        {
            "source": ["synthetic"] * 2 + ["recapture"] * 2,
            "target": ["H"] * 4,
            "level": ["I0", "Ik"] * 2,
            "mean_width": [0.3, 0.1, 0.2, 0.05],
        }
    )
    _check_common(viz.grid_summary_figure(summary))
    d = np.array([[0.0, -0.02, 0.01], [0.03, 0.0, 0.02], [-1e-15, 0.01, 0.0]])
    fig = viz.policy_matrix_figure(d, ["τ.6", "τ.7", "τ.8"])
    assert fig.data[0].text[0][1].startswith("✓") and not fig.data[0].text[2][0].startswith("✓")
    assert fig.data[0].zmid == 0
    with pytest.raises(ValueError, match=r"`matrix` must have shape \(2, 2\)"):
        viz.policy_matrix_figure(d, ["a", "b"])
    reg = viz.regret_figure(["a", "b"], [0.1, 0.0], chosen="b")
    _check_common(reg)
    assert list(reg.data[0].marker.color) == [OKABE_ITO["blue"], OKABE_ITO["orange"]]


def test_viz_never_imports_streamlit():
    import subprocess
    import sys

    views = ", ".join(
        f"core.views.{m}"
        for m in ("formatting", "uploads", "tabular", "ranking", "comparison", "paired", "screening", "commands")
    )
    code = f"import sys, core.viz, {views}, core.reviews; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------
# Layout of every builder: nothing shares the title's top margin, long labels push margins.
_LONG = [
    "worst concave points of the tumour",
    "mean fractal dimension",
    "Income",
    "a_very_long_feature_name_x",
    "Seniority",
]


def _every_figure() -> dict[str, go.Figure]:
    q = np.array([0.05, 0.1, 0.5, 1.0])
    summary = pd.DataFrame(
        {
            "source": ["synthetic"] * 2 + ["simulated-recapture"] * 2,
            "target": ["H"] * 4,
            "level": ["I0", "Ik"] * 2,
            "mean_width": [0.3, 0.1, 0.2, 0.05],
        }
    )
    bins = pd.DataFrame(
        {
            "panel": ["all", "all", "fragile"],
            "method": ["raw", "BATS", "raw"],
            "confidence": [0.6, 0.7, 0.9],
            "accuracy": [0.5, 0.75, 0.4],
            "count": [10, 30, 5],
        }
    )
    models = pd.DataFrame({"model": ["Histogram gradient boosting", "lr"], "auroc": [0.8, 0.9], "rcma": [0.1, 0.4]})
    return {
        "trajectory_figure": viz.trajectory_figure(
            _LONG, [2.0, 1.2, 0.4, -0.1, -0.5, -0.9], [0.9, 0.8, 0.6, 0.45, 0.4, 0.3], flip_budget=3
        ),
        "collapse_figure": viz.collapse_figure([0, 0.4, 0.8, 1.05, 1.2, 1.4], rcma=0.8, path=_LONG),
        "degradation_figure": viz.degradation_figure(
            [0.5, 1.0],
            {"attenuate_single": [0.5, -0.5], "attenuate_all": [1.0, 0.5]},
            {"attenuate_single": 1.0},
            margin0=2.0,
        ),
        "drops_figure": viz.drops_figure(_LONG, [0.5, 0.4, 0.3, 0.2, 0.1], path=_LONG[:2]),
        "whatif_figure": viz.whatif_figure(["good", "bad"], [0.8, 0.2], [0.4, 0.6]),
        "confidence_fds_figure": viz.confidence_fds_figure([0.6, 0.95], [0.2, 0.9], brittle=[False, True]),
        "flip_budget_histogram": viz.flip_budget_histogram([1, 2, 6], depth=5),
        "tradeoff_figure": viz.tradeoff_figure(models, x="auroc", y="rcma", x_title="AUROC", y_title="RCMA"),
        "trajectories_by_model_figure": viz.trajectories_by_model_figure(
            {"lr": (["a", "b"], [2.0, 1.0, -1.0], 2), "Histogram gradient boosting": (["b", "a"], [4.0, 3.0, 2.0], 3)}
        ),
        "reliability_figure": viz.reliability_figure(bins),
        "intervals_figure": viz.intervals_figure(_intervals()),
        "grid_summary_figure": viz.grid_summary_figure(summary),
        "policy_matrix_figure": viz.policy_matrix_figure(np.zeros((2, 2)), ["q = 90%", "q = 100%"]),
        "regret_figure": viz.regret_figure(["q = 90%", "q = 100%"], [0.1, 0.0], chosen="q = 100%"),
        "coverage_figure": viz.coverage_figure(q, {"fds": [0.3, 0.5, 0.9, 1.0]}, ceiling=q, random=q, selected=0.1),
        "score_metrics_figure": viz.score_metrics_figure(
            pd.DataFrame({"score": ["fds", "margin"], "auroc": [0.8, 0.6], "c": [0.4, 0.2]}), capture_column="c"
        ),
    }


def test_the_layout_checks_cover_every_figure_builder():
    builders = {n for n in viz.__all__ if n.endswith(("_figure", "_histogram"))}
    assert builders == set(_every_figure())


def _legend_entries(fig: go.Figure) -> list[str]:
    return [t.name for t in fig.data if t.name and t.showlegend is not False]


@pytest.mark.parametrize("name", sorted(_every_figure()))
def test_no_legend_shares_the_top_margin_with_the_title(name):
    """The title is pinned to the top of the figure; a visible legend is below the plot area
    (horizontal, top edge under the axis) or beside it (vertical, right of it), never above the
    plot, where a wrapped legend ran into the title at 1000 px."""
    fig = _every_figure()[name]
    title = fig.layout.title
    assert (title.yref, title.y, title.yanchor) == ("container", 1.0, "top")
    if not fig.layout.showlegend or len(_legend_entries(fig)) < 1:
        return
    legend = fig.layout.legend
    if legend.orientation == "h":
        assert legend.yanchor == "top" and legend.y < 0, (name, legend.y, legend.yanchor)
    else:
        assert legend.xanchor == "left" and legend.x > 1, (name, legend.x)


@pytest.mark.parametrize("name", sorted(_every_figure()))
def test_every_axis_pushes_its_margin_for_long_labels(name):
    layout = _every_figure()[name].to_plotly_json()["layout"]
    axes = {k: v for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))}
    assert axes
    assert all(v.get("automargin") is True for v in axes.values()), {k: v.get("automargin") for k, v in axes.items()}


def _plot_height(fig: go.Figure) -> float:
    return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b


@pytest.mark.parametrize("tick_lines", [1, 2, 3])
def test_a_bottom_legend_clears_the_tick_labels_and_the_axis_title(tick_lines):
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], name="a"))
    finish(fig, title="t", x_title="x", tick_lines=tick_lines)
    below = -fig.layout.legend.y * _plot_height(fig)  # px between the plot's bottom and the legend
    # One line of tick labels (~16 px) per line, ~46 px for the gap, standoff and axis title.
    assert below == pytest.approx(46 + 16 * tick_lines)
    # ... and at least two rows of legend (~20 px each) fit inside the bottom margin.
    assert fig.layout.margin.b - below >= 40


def test_finish_rejects_a_legend_above_the_plot():
    with pytest.raises(ValueError, match=r"`legend_at` must be one of \('bottom', 'right'\); got 'top'"):
        finish(go.Figure(), title="t", legend_at="top")
    with pytest.raises(ValueError, match=r"`tick_lines` must be an int >= 1; got 0"):
        finish(go.Figure(), title="t", tick_lines=0)


def test_wrapped_tick_labels_raise_the_bottom_margin_by_their_extra_lines():
    one = finish(go.Figure(), title="t", legend=False)
    three = finish(go.Figure(), title="t", legend=False, tick_lines=3)
    assert three.layout.margin.b - one.layout.margin.b == 32
    assert _plot_height(three) == _plot_height(one)  # the figure grows, the plot keeps its size


@pytest.mark.parametrize("depth", range(1, 13))
def test_trajectory_step_labels_fit_side_by_side_in_a_420px_column(depth):
    """Every line of every step label fits its slot of the narrowest plot (340 px inside a
    420 px column) at the step-axis font, so neighbours never overlap."""
    path = [f"group_number_{i}_with_a_long_name" for i in range(depth)]
    fig = viz.trajectory_figure(path, np.linspace(2, -1, depth + 1), np.linspace(0.9, 0.2, depth + 1), flip_budget=1)
    axis = fig.layout.xaxis2
    slot = 340 / (depth + 1)
    widest = max(len(line) for label in axis.ticktext for line in label.split("<br>"))
    assert widest * axis.tickfont.size * 0.51 <= slot  # Source Sans: ~0.51 em per character
    assert axis.tickangle == 0 and len(axis.ticktext) == depth + 1


def test_trajectory_has_no_legend_and_keys_its_colours_in_the_subtitle():
    fig = _every_figure()["trajectory_figure"]
    assert fig.layout.showlegend is False
    key = fig.layout.title.subtitle.text
    assert OKABE_ITO["blue"] in key and OKABE_ITO["vermillion"] in key and "flipped" in key
    # The bottom margin grows with the wrapped step labels (3 lines here: number + 2 of name).
    assert fig.layout.margin.b == 60 + 16 * 2


def test_long_group_names_in_the_drops_chart_are_whole_and_push_the_margin():
    fig = _every_figure()["drops_figure"]
    assert set(fig.data[0].y) == set(_LONG)  # categories are never cut: automargin makes room
    assert fig.layout.yaxis.automargin is True and fig.layout.yaxis.type == "category"


def test_grid_summary_wraps_hyphenated_sources_instead_of_rotating_them():
    fig = _every_figure()["grid_summary_figure"]
    assert set(fig.data[0].x) == {"synthetic", "simulated-<br>recapture"}
    assert fig.layout.xaxis.tickangle == 0
    assert fig.layout.margin.b == 62 + 16 + 58  # two tick lines, then the legend's rows


def test_collapse_labels_each_reference_line_at_opposite_ends():
    fig = viz.collapse_figure([0, 0.4, 0.8, 1.05, 1.2, 1.4], rcma=0.8, path=_LONG)
    labels = [(a.text, a.y, a.xanchor) for a in fig.layout.annotations]
    # One dict per label: a shared one was filled in by the second line and lost the RCMA label.
    assert labels == [("RCMA = 0.800", 0.8, "left"), ("c = 1: margin gone", 1.0, "right")]


def test_lambda_star_labels_are_boxed_annotations_above_their_star():
    fig = _every_figure()["degradation_figure"]
    (label,) = [a for a in fig.layout.annotations if a.text.startswith("λ*")]
    assert (label.text, label.x, label.y, label.yshift) == ("λ* = 1.00", 1.0, -0.5, 18)
    assert label.bgcolor and label.font.color == OKABE_ITO["blue"]
