"""Reliability diagrams (SPEC A.7, brittleness-aware temperature scaling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.viz._style import GREY, finish, series_colours

__all__ = ["reliability_figure"]

_COLUMNS = ("panel", "method", "confidence", "accuracy", "count")


def reliability_figure(bins: pd.DataFrame) -> go.Figure:
    """Reliability diagrams: observed accuracy against mean confidence per confidence bin.

    Parameters
    ----------
    bins : DataFrame
        Long format, one row per (panel, method, bin) with columns ``panel`` (e.g. "all test
        samples", "fragile top 20 %"), ``method`` (e.g. "raw", "temperature", "BATS"),
        ``confidence`` (mean predicted confidence in the bin), ``accuracy`` (share correct)
        and ``count`` (samples in the bin). Empty bins (count 0 or NaN values) are skipped.

    Returns
    -------
    plotly.graph_objects.Figure
        One panel per ``panel`` value, one line per method, the diagonal = perfect calibration;
        marker area grows with the bin count. Points below the diagonal are over-confident.
    """
    missing = set(_COLUMNS) - set(bins.columns)
    if missing:
        raise ValueError(f"`bins` lacks the column(s) {sorted(missing)}; it has {list(bins.columns)}.")
    data = bins[(bins["count"] > 0) & bins["confidence"].notna() & bins["accuracy"].notna()]
    panels = list(dict.fromkeys(bins["panel"]))
    methods = list(dict.fromkeys(bins["method"]))
    colours = dict(zip(methods, series_colours(len(methods))))
    fig = make_subplots(
        rows=1, cols=max(1, len(panels)), shared_yaxes=True, subplot_titles=panels, horizontal_spacing=0.09
    )
    biggest = max(float(data["count"].max()), 1.0) if len(data) else 1.0
    # Zoom to the populated part (confidence never goes below 1/C) but keep the diagonal's origin
    # visible in tenths, so panels stay comparable.
    lowest = min(data["confidence"].min(), data["accuracy"].min()) if len(data) else 0.0
    low = max(0.0, float(np.floor(lowest * 10) / 10) - 0.05)
    for col, panel in enumerate(panels, start=1):
        fig.add_trace(
            go.Scatter(
                x=[low, 1],
                y=[low, 1],
                mode="lines",
                line=dict(color=GREY, dash="dash"),
                name="perfect calibration",
                showlegend=col == 1,
                hoverinfo="skip",
            ),
            row=1,
            col=col,
        )
        for method in methods:
            part = data[(data["panel"] == panel) & (data["method"] == method)].sort_values("confidence")
            fig.add_trace(
                go.Scatter(
                    x=part["confidence"],
                    y=part["accuracy"],
                    mode="lines+markers",
                    name=str(method),
                    legendgroup=str(method),
                    showlegend=col == 1,
                    line=dict(color=colours[method], width=2),
                    marker=dict(size=(6 + 14 * (part["count"] / biggest) ** 0.5).tolist(), color=colours[method]),
                    customdata=part["count"],
                    hovertemplate=f"{method}<br>confidence %{{x:.3f}}<br>accuracy %{{y:.3f}}<br>n = %{{customdata}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(range=[low, 1.02], title_text="mean confidence", row=1, col=col)
    fig.update_yaxes(range=[low, 1.02], title_text="observed accuracy (0–1)", row=1, col=1)
    # Short per-panel axis titles: at 1000 px "mean predicted confidence (0–1)" ran into its
    # neighbour's; the reading key is a subtitle (a long title ran past a narrow figure).
    return finish(
        fig,
        title="Reliability diagrams",
        subtitle="below the diagonal = over-confident",
        height=460,
        legend_at="bottom",
    )
