"""The plotly figures (the charts only the dashboard draws): the right things are drawn where they
belong, with titles and safe colours. The Vega-Lite charts: ``test_vega_specs.py`` and
``test_chart_specs.py``."""

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
        "tradeoff_figure": viz.tradeoff_figure(models, x="auroc", y="rcma", x_title="AUROC", y_title="RCMA"),
        "trajectories_by_model_figure": viz.trajectories_by_model_figure(
            {"lr": (["a", "b"], [2.0, 1.0, -1.0], 2), "Histogram gradient boosting": (["b", "a"], [4.0, 3.0, 2.0], 3)}
        ),
        "reliability_figure": viz.reliability_figure(bins),
        "grid_summary_figure": viz.grid_summary_figure(summary),
        "policy_matrix_figure": viz.policy_matrix_figure(np.zeros((2, 2)), ["q = 90%", "q = 100%"]),
        "regret_figure": viz.regret_figure(["q = 90%", "q = 100%"], [0.1, 0.0], chosen="q = 100%"),
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


def test_grid_summary_wraps_hyphenated_sources_instead_of_rotating_them():
    fig = _every_figure()["grid_summary_figure"]
    assert set(fig.data[0].x) == {"synthetic", "simulated-<br>recapture"}
    assert fig.layout.xaxis.tickangle == 0
    assert fig.layout.margin.b == 62 + 16 + 58  # two tick lines, then the legend's rows
