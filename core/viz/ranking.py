"""Figures for ranking scores under a review budget (SPEC A.6 and B.5).

Every score here is a **risk** score (larger = riskier): the budget reviews its top ``q``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.viz._style import GREY, HIGHLIGHT, OKABE_ITO, finish, series_styles, wrap_label

__all__ = ["coverage_figure", "score_metrics_figure"]


def coverage_figure(
    budgets: ArrayLike,
    curves: Mapping[str, ArrayLike],
    *,
    ceiling: ArrayLike | None = None,
    random: ArrayLike | None = None,
    selected: float | None = None,
    title: str = "Share of positives found within the budget",
    y_title: str = "share of positives found (0–1)",
    highlight: str | None = None,
) -> go.Figure:
    """Coverage (or capture) of positives against the review budget, one line per score.

    Parameters
    ----------
    budgets : array-like of shape (B,)
        Budgets as fractions ``q`` in (0, 1] of the ranked population (drawn as percent).
    curves : mapping score name -> array-like of shape (B,)
        Share of all positives inside the top-``q`` of that score.
    ceiling : array-like of shape (B,), optional
        Best attainable share ``min(1, k / n_positive)`` (dashed grey).
    random : array-like of shape (B,), optional
        Expected share under random selection (dotted grey).
    selected : float, optional
        Budget currently chosen in the UI (vertical line).
    highlight : str, optional
        Score drawn thicker (e.g. the default ranking).

    Notes
    -----
    Scores whose curves are identical (e.g. max-softmax, margin, entropy and negative energy
    of a binary model, which are monotone in one another and so rank alike) are drawn as one
    line named after all of them, "(identical ranking)": overlapping lines would hide all but
    the last. Every line gets its own (colour, dash) pair (:func:`core.viz._style.series_styles`).
    """
    q = np.asarray(budgets, dtype=float)
    if q.ndim != 1 or q.size == 0 or np.any((q <= 0) | (q > 1)):
        raise ValueError(f"`budgets` must be a non-empty 1-D array of fractions in (0, 1]; got {budgets!r}.")
    x = 100 * q
    fig = go.Figure()
    lines: list[tuple[list[str], np.ndarray]] = []
    for name, curve in curves.items():
        y = np.asarray(curve, dtype=float)
        if y.shape != q.shape:
            raise ValueError(f"`curves[{name!r}]` must have shape {q.shape}; got {y.shape}.")
        same = next((names for names, other in lines if np.array_equal(other, y, equal_nan=True)), None)
        if same is None:
            lines.append(([name], y))
        else:
            same.append(name)
    for (colour, dash), (names, y) in zip(series_styles(len(lines)), lines):
        # Wrapped: a one-line legend entry of four names squeezes the plot at 1000 px.
        label = names[0] if len(names) == 1 else wrap_label(" = ".join(names), 24) + "<br>(identical ranking)"
        width = 4 if highlight in names else 2
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                name=label,
                line=dict(color=colour, width=width, dash=dash),
                hovertemplate=f"{' = '.join(names)}<br>budget %{{x:.1f}}%<br>found %{{y:.3f}}<extra></extra>",
            )
        )
    for ref, name, dash in ((ceiling, "ceiling (best possible)", "dash"), (random, "random selection", "dot")):
        if ref is not None:
            y = np.asarray(ref, dtype=float)
            if y.shape != q.shape:
                raise ValueError(f"`{name.split()[0]}` must have shape {q.shape}; got {y.shape}.")
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=name,
                    line=dict(color=GREY, dash=dash, width=2),
                    hovertemplate=f"{name}<br>budget %{{x:.1f}}%<br>%{{y:.3f}}<extra></extra>",
                )
            )
    if selected is not None:
        fig.add_vline(
            x=100 * float(selected),
            line=dict(color=OKABE_ITO["black"], dash="dash", width=1),
            annotation_text=f"budget {100 * float(selected):.0f}%",
            annotation_position="bottom right",
        )
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(range=[0, 100 * q.max()])
    return finish(
        fig, title=title, x_title="review budget q (% of ranked items)", y_title=y_title, height=420, legend_at="right"
    )


def score_metrics_figure(table: pd.DataFrame, *, capture_column: str, highlight: str | None = None) -> go.Figure:
    """AUROC and capture of every ranking score, side by side, best AUROC on top.

    Parameters
    ----------
    table : DataFrame
        Columns ``score`` (name), ``auroc`` (0–1, NaN allowed) and ``capture_column`` (0–1).
    capture_column : str
        Name of the capture column to draw (e.g. ``"capture@10"``).
    highlight : str, optional
        Score drawn in orange (the others blue).

    Both x-axes are AUROC / share axes and stay on their whole range [0, 1].
    """
    missing = {"score", "auroc", capture_column} - set(table.columns)
    if missing:
        raise ValueError(f"`table` lacks the column(s) {sorted(missing)}; it has {list(table.columns)}.")
    frame = table.sort_values("auroc", ascending=False, na_position="last")
    names = frame["score"].astype(str).tolist()
    colours = [HIGHLIGHT if n == highlight else OKABE_ITO["blue"] for n in names]
    fig = make_subplots(
        rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.07, subplot_titles=("AUROC", capture_column)
    )
    fig.add_trace(
        go.Bar(
            x=frame["auroc"],
            y=names,
            orientation="h",
            marker=dict(color=colours),
            hovertemplate="%{y}: AUROC %{x:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=frame[capture_column],
            y=names,
            orientation="h",
            marker=dict(color=colours),
            hovertemplate=f"%{{y}}: {capture_column} %{{x:.3f}}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    # The dotted chance line is named by the axis title: a label on the line would sit on a bar
    # or on the subplot title.
    fig.add_vline(x=0.5, line=dict(color=GREY, dash="dot", width=2), row=1, col=1)
    # Two-line axis titles: side by side at 1000 px, one-line titles ran into each other.
    fig.update_xaxes(range=[0, 1], title_text="AUROC<br>(0.5 = chance, higher = better)", row=1, col=1)
    fig.update_xaxes(range=[0, 1], title_text="share of positives<br>found (0–1)", row=1, col=2)
    fig.update_yaxes(autorange="reversed", type="category", title_text="risk score", row=1, col=1)
    fig = finish(
        fig,
        title="How well each risk score ranks the positives",
        legend=False,
        height=max(320, 30 * len(names) + 180),
        subtitle="orange = the score ranking the queue" if highlight in names else None,
    )
    fig.update_layout(margin_t=fig.layout.margin.t + 20, margin_b=fig.layout.margin.b + 20)  # panel and axis titles
    return fig
