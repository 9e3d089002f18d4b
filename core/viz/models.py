"""Figures comparing trained models: nominal quality against stability (SPEC A.7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.viz._style import FLIPPED, LIGHT_GREY, finish, series_colours, wrap_label

__all__ = ["tradeoff_figure", "trajectories_by_model_figure"]


def _padded_range(
    values: pd.Series, bounds: tuple[float, float] | None, *, share: float = 0.15, least: float = 0.05
) -> list[float]:
    """``[min - pad, max + pad]`` with ``pad = share * span`` (``least`` when all values are
    equal), clipped to the metric's own ``bounds``: an AUROC axis never shows 1.04."""
    low, high = float(values.min()), float(values.max())
    pad = share * (high - low) if high > low else least
    low, high = low - pad, high + pad
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return [low, high]


def tradeoff_figure(
    frame: pd.DataFrame,
    *,
    x: str,
    y: str,
    x_title: str,
    y_title: str,
    label: str = "model",
    x_bounds: tuple[float, float] | None = None,
    y_bounds: tuple[float, float] | None = None,
    title: str = "Nominal quality vs stability",
) -> go.Figure:
    """One point per model: a nominal metric against a fragility metric.

    Parameters
    ----------
    frame : DataFrame
        One row per model with columns ``label``, ``x`` and ``y``; rows with NaN are skipped.
    x, y : str
        Columns to plot.
    x_title, y_title : str
        Axis titles (with units and orientation, e.g. "mean RCMA (larger = more fragile)").
    x_bounds, y_bounds : (float, float), optional
        The range a metric can take (``(0, 1)`` for AUROC and shares): the padded axis is
        clipped to it.
    title : str
        Figure title; two tradeoffs side by side need different ones.
    """
    missing = {label, x, y} - set(frame.columns)
    if missing:
        raise ValueError(f"`frame` lacks the column(s) {sorted(missing)}; it has {list(frame.columns)}.")
    data = frame[[label, x, y]].dropna()
    colours = series_colours(len(data))
    # Labels lean inwards at both ends of the x-axis, so none runs past the plot's edge.
    rank = (data[x] - data[x].min()) / (float(data[x].max() - data[x].min()) or 1.0)
    positions = np.where(rank > 0.67, "top left", np.where(rank < 0.33, "top right", "top center"))
    if len(data) and float(data[x].max()) == float(data[x].min()):
        positions[:] = "top center"
    # Wrapped: in a half-width column at 1000 px one line of "Histogram gradient boosting" ran
    # over the axis.
    fig = go.Figure(
        go.Scatter(
            x=data[x],
            y=data[y],
            mode="markers+text",
            text=[wrap_label(t, 16) for t in data[label].astype(str)],
            textposition=positions.tolist(),
            cliponaxis=False,
            marker=dict(color=colours, size=14, line=dict(color="black", width=1)),
            hovertemplate="%{text}<br>" + x + " %{x:.3f}<br>" + y + " %{y:.3f}<extra></extra>",
        )
    )
    if len(data):  # room for the markers and their labels, inside the metric's range
        fig.update_xaxes(range=_padded_range(data[x], x_bounds))
        fig.update_yaxes(range=_padded_range(data[y], y_bounds, share=0.35))
    return finish(fig, title=title, x_title=x_title, y_title=y_title, legend=False, height=420)


def trajectories_by_model_figure(trajectories: Mapping[str, tuple[Sequence[str], ArrayLike, int]]) -> go.Figure:
    """The same sample's removal trajectory under each model, side by side.

    Parameters
    ----------
    trajectories : mapping model name -> (path, margins, flip_budget)
        ``path`` the K group names of that model's path, ``margins`` the original-class margins
        ``m_k`` for ``k = 0 … K`` and ``flip_budget`` its ``k*``.

    Notes
    -----
    Margins are drawn as remaining support ``m_k / |m_0|`` (1 = intact, 0 = decision boundary,
    < 0 = flipped) so that models with different margin scales share one axis.
    """
    if not trajectories:
        raise ValueError("`trajectories` is empty; pass at least one model.")
    names = list(trajectories)
    # Long model names are wrapped to their panel's width, so neighbouring titles never touch.
    # 60 characters share the row: a 1000 px window gives the figure about 560 px (14 px font).
    titles = [wrap_label(n, max(10, 60 // len(names))) for n in names]
    fig = make_subplots(rows=1, cols=len(names), shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.04)
    for col, (colour, name) in enumerate(zip(series_colours(len(names)), names), start=1):
        path, margins, k_star = trajectories[name]
        m = np.asarray(margins, dtype=float)
        if m.shape != (len(path) + 1,):
            raise ValueError(f"margins of model {name!r} must have shape ({len(path) + 1},); got {m.shape}.")
        support = m / (abs(m[0]) + 1e-8)
        steps = np.arange(m.shape[0])
        labels = ["intact"] + [f"−{g}" for g in path]
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=support,
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=3),
                marker=dict(size=9, color=np.where(steps >= k_star, FLIPPED, colour).tolist()),
                text=labels,
                hovertemplate=f"{name}<br>%{{text}}<br>support %{{y:.2f}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(tickmode="array", tickvals=steps.tolist(), ticktext=labels, tickangle=-45, row=1, col=col)
        fig.add_hline(y=0, line=dict(color=LIGHT_GREY, width=2), row=1, col=col)
    fig.update_yaxes(title_text="remaining support m_k / m_0 (< 0 = flipped)", row=1, col=1)
    lines = max(t.count("<br>") + 1 for t in titles)
    fig.update_annotations(font_size=14)
    fig = finish(
        fig,
        title="Same prediction, different models: support as groups are removed",
        subtitle="vermillion points = the prediction has flipped",
        legend=False,
        height=440 + 20 * lines,
    )
    fig.update_layout(margin_t=fig.layout.margin.t + 20 * lines)  # panel titles sit under the subtitle
    return fig
