"""Figures comparing trained models: nominal quality against stability (SPEC A.7)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.viz._style import LIGHT_GREY, OKABE_ITO, finish, series_colours

__all__ = ["tradeoff_figure", "trajectories_by_model_figure"]


def tradeoff_figure(frame: pd.DataFrame, *, x: str, y: str, x_title: str, y_title: str,
                    label: str = "model") -> go.Figure:
    """One point per model: a nominal metric against a fragility metric.

    Parameters
    ----------
    frame : DataFrame
        One row per model with columns ``label``, ``x`` and ``y``; rows with NaN are skipped.
    x, y : str
        Columns to plot.
    x_title, y_title : str
        Axis titles (with units and orientation, e.g. "mean RCMA (larger = more fragile)").
    """
    missing = {label, x, y} - set(frame.columns)
    if missing:
        raise ValueError(f"`frame` lacks the column(s) {sorted(missing)}; it has {list(frame.columns)}.")
    data = frame[[label, x, y]].dropna()
    colours = series_colours(len(data))
    span = float(data[x].max() - data[x].min()) if len(data) else 0.0
    pad = 0.15 * span if span > 0 else 0.05
    fig = go.Figure(go.Scatter(
        x=data[x], y=data[y], mode="markers+text", text=data[label].astype(str), textposition="top center",
        cliponaxis=False,
        marker=dict(color=colours, size=14, line=dict(color="black", width=1)),
        hovertemplate="%{text}<br>" + x + " %{x:.3f}<br>" + y + " %{y:.3f}<extra></extra>",
    ))
    if len(data):  # room for the text labels at both ends
        fig.update_xaxes(range=[float(data[x].min()) - pad, float(data[x].max()) + pad])
    return finish(fig, title="Nominal quality vs stability", x_title=x_title, y_title=y_title, legend=False, height=420)


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
    fig = make_subplots(rows=1, cols=len(names), shared_yaxes=True, subplot_titles=names, horizontal_spacing=0.03)
    for col, (colour, name) in enumerate(zip(series_colours(len(names)), names), start=1):
        path, margins, k_star = trajectories[name]
        m = np.asarray(margins, dtype=float)
        if m.shape != (len(path) + 1,):
            raise ValueError(f"margins of model {name!r} must have shape ({len(path) + 1},); got {m.shape}.")
        support = m / (abs(m[0]) + 1e-8)
        steps = np.arange(m.shape[0])
        labels = ["intact"] + [f"−{g}" for g in path]
        fig.add_trace(go.Scatter(
            x=steps, y=support, mode="lines+markers", name=name, line=dict(color=colour, width=3),
            marker=dict(size=9, color=np.where(steps >= k_star, OKABE_ITO["vermillion"], colour).tolist()),
            text=labels, hovertemplate=f"{name}<br>%{{text}}<br>support %{{y:.2f}}<extra></extra>",
        ), row=1, col=col)
        fig.update_xaxes(tickmode="array", tickvals=steps.tolist(), ticktext=labels, tickangle=-45, row=1, col=col)
        fig.add_hline(y=0, line=dict(color=LIGHT_GREY, width=2), row=1, col=col)
    fig.update_yaxes(title_text="remaining support m_k / m_0 (< 0 = flipped)", row=1, col=1)
    return finish(fig, title="Same prediction, different models: support as groups are removed",
                  legend=False, height=440)
