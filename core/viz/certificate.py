"""Figures of one fragility certificate (SPEC A.3) and of a set of certificates.

Inputs are plain arrays so that the builders can be tested without the certificate engine;
the dashboard passes the fields of a certificate. Margins are centred pseudo-logit margins of
the **original** predicted class (``m_y(x')``, in nats); a negative margin means the prediction
has flipped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.viz._style import COUNT_AXIS, GREY, LIGHT_GREY, OKABE_ITO, finish, finish_spec, is_finite, series_colours

__all__ = [
    "StaticFallbackFigure",
    "collapse_figure",
    "confidence_fds_figure",
    "confidence_fds_spec",
    "degradation_figure",
    "drops_figure",
    "flip_budget_histogram",
    "flip_budget_spec",
    "static_trajectory_html",
    "trajectory_figure",
    "whatif_figure",
]

_KEPT = OKABE_ITO["blue"]
_FLIPPED = OKABE_ITO["vermillion"]


def _vector(values: ArrayLike, name: str, *, length: int | None = None) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {arr.shape}.")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"`{name}` must have length {length}; got {arr.shape[0]}.")
    return arr


def _wrap(text: str, width: int, *, lines: int = 2) -> str:
    """``text`` broken at spaces / underscores into at most ``lines`` lines of ``width`` characters
    (``<br>``-joined), the rest cut with an ellipsis: long group names must not overlap their
    neighbours' tick labels or run out of the figure (plotly hides a label past the edge)."""
    words = [w for w in text.replace("_", "_ ").split(" ") if w]
    out: list[str] = []
    current = ""
    for word in words:
        while len(word) > width:  # one overlong word: hard-cut it
            if current:
                out.append(current)
                current = ""
            out.append(word[:width])
            word = word[width:]
        joined = f"{current}{'' if current.endswith('_') or not current else ' '}{word}"
        if current and len(joined) > width:
            out.append(current)
            current = word
        else:
            current = joined
    if current:
        out.append(current)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: max(1, width - 1)] + "…"
    return "<br>".join(out)


def _step_labels(path: Sequence[str], *, width: int = 16) -> list[str]:
    # No "−" before the name (the axis title says the groups are removed): in the narrowest
    # plot every character of a slot goes to the name.
    return ["0<br>intact" if width >= 6 else "0"] + [
        f"{k}<br>{_wrap(name, width)}" for k, name in enumerate(path, start=1)
    ]


#: Tick font of the step axis (px) and its mean character width in the house font.
_STEP_FONT, _STEP_CHAR_PX = 11, 5.6
#: The narrowest plot area a step axis must fit: a 420 px column (ui.layout.flow_columns keeps
#: the trajectory at least that wide, then stacks) minus the y-axis margin.
_NARROWEST_PLOT_PX = 340


def _label_width(depth: int) -> int:
    """Characters per tick-label line so that ``depth + 1`` labels fit side by side in the
    narrowest plot, with a character of space between neighbours."""
    return int(np.clip(_NARROWEST_PLOT_PX / (depth + 1) / _STEP_CHAR_PX - 1, 4, 18))


def _flip_budget_iv(flip_budget: int, depth: int) -> int:
    if not (isinstance(flip_budget, (int, np.integer)) and 1 <= flip_budget <= depth + 1):
        raise ValueError(
            f"`flip_budget` must be an integer in 1..{depth + 1} (depth + 1 = no flip); got {flip_budget!r}."
        )
    return int(flip_budget)


def flip_note_align(flip_budget: int, depth: int) -> str:
    """Side of the flip line its note runs to: away from the nearer end of the step axis, so
    that a flip on the last step keeps its note inside the plot."""
    return "left" if flip_budget <= depth / 2 else "right"


@dataclass(frozen=True)
class TrajectoryPoints:
    """The points of a removal trajectory, validated, as both of its twins draw them
    (:func:`trajectory_figure` and :func:`core.viz.certificate_spec.trajectory_spec`).

    Attributes
    ----------
    depth : int
        ``K``, the path's length.
    margins, proba : ndarray of shape (K + 1,)
        Margin (nats) and probability of the original class at steps ``0 … K``.
    flip_budget : int
        ``k*`` in ``1 … K + 1``.
    steps : ndarray of shape (K + 1,)
        ``0 … K``.
    flipped : tuple of bool, length K + 1
        Whether the prediction has flipped at each step (``k >= k*``).
    labels : tuple of str, length K + 1
        Step-axis tick labels, lines joined by ``<br>``.
    hover_steps, predicted : tuple of str, length K + 1
        ``"3 −income"`` per step, and the predicted class per step (empty when not given).
    """

    depth: int
    margins: np.ndarray
    proba: np.ndarray
    flip_budget: int
    steps: np.ndarray
    flipped: tuple[bool, ...]
    labels: tuple[str, ...]
    hover_steps: tuple[str, ...]
    predicted: tuple[str, ...]


def trajectory_points(
    path: Sequence[str],
    margins: ArrayLike,
    proba: ArrayLike,
    *,
    flip_budget: int,
    predicted: Sequence[str] | None = None,
) -> TrajectoryPoints:
    """The points :func:`trajectory_figure` draws (its parameters; see there)."""
    depth = len(path)
    m = _vector(margins, "margins", length=depth + 1)
    p = _vector(proba, "proba", length=depth + 1)
    k_star = _flip_budget_iv(flip_budget, depth)
    hover_pred = list(predicted) if predicted is not None else [""] * (depth + 1)
    if len(hover_pred) != depth + 1:
        raise ValueError(f"`predicted` must have length {depth + 1}; got {len(hover_pred)}.")
    steps = np.arange(depth + 1)
    return TrajectoryPoints(
        depth=depth,
        margins=m,
        proba=p,
        flip_budget=k_star,
        steps=steps,
        flipped=tuple(bool(k >= k_star) for k in steps),
        labels=tuple(_step_labels(path, width=_label_width(depth))),
        hover_steps=("0 intact", *(f"{k} −{name}" for k, name in enumerate(path, start=1))),
        predicted=tuple(str(c) for c in hover_pred),
    )


def trajectory_figure(
    path: Sequence[str],
    margins: ArrayLike,
    proba: ArrayLike,
    *,
    flip_budget: int,
    predicted: Sequence[str] | None = None,
    class_label: str = "original class",
) -> go.Figure:
    """Removal trajectory: margin and probability of the original class per removal step.

    Parameters
    ----------
    path : sequence of str, length K
        Group removed at step ``k = 1 … K`` (the certificate's path ``π_x``).
    margins : array-like of shape (K + 1,)
        ``m_y(x^(k))`` for ``k = 0 … K`` (nats; negative = flipped).
    proba : array-like of shape (K + 1,)
        Probability of the original class ``p̃_y(x^(k))``.
    flip_budget : int
        ``k*`` in ``1 … K + 1`` (``K + 1`` = no flip within depth ``K``).
    predicted : sequence of str, length K + 1, optional
        Predicted class name at every step (shown on hover).
    class_label : str
        Name of the original predicted class, used in axis titles.

    Returns
    -------
    plotly.graph_objects.Figure
        Two stacked panels sharing the step axis; the flip step is marked by a dashed line.
    """
    points = trajectory_points(path, margins, proba, flip_budget=flip_budget, predicted=predicted)
    depth, m, p, k_star, steps = points.depth, points.margins, points.proba, points.flip_budget, points.steps
    colours = [_FLIPPED if flipped else _KEPT for flipped in points.flipped]
    labels, hover_steps, hover_pred = list(points.labels), list(points.hover_steps), list(points.predicted)

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.55, 0.45])
    custom = np.column_stack([np.array(hover_steps, dtype=object), np.array(hover_pred, dtype=object)])
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=m,
            mode="lines+markers",
            name="margin",
            line=dict(color=GREY, width=2),
            marker=dict(color=colours, size=11, line=dict(color="white", width=1)),
            customdata=custom,
            hovertemplate="step %{customdata[0]}<br>margin %{y:.3f} nats<br>prediction %{customdata[1]}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=p,
            mode="lines+markers",
            name=f"P({class_label})",
            line=dict(color=GREY, width=2, dash="dot"),
            marker=dict(color=colours, size=11, symbol="square"),
            customdata=custom,
            hovertemplate="step %{customdata[0]}<br>probability %{y:.3f}<br>prediction %{customdata[1]}<extra></extra>",
        ),
        row=2,
        col=1,
    )
    # The boundary is named by the axis title: a text on the line sat under the path's points.
    fig.add_hline(y=0, line=dict(color=LIGHT_GREY, width=2), row=1, col=1)
    if k_star <= depth:
        # On the flip step itself, through its first flipped point: a line between steps read as
        # a flip at k* − ½, which no certificate has.
        fig.add_vline(x=k_star, line=dict(color=_FLIPPED, dash="dash", width=2))
        fig.add_annotation(
            x=k_star,
            y=1.0,
            yref="paper",
            text=f"flip at k* = {k_star}",
            showarrow=False,
            xanchor=flip_note_align(k_star, depth),
            yanchor="bottom",
            font=dict(color=_FLIPPED),
        )
    else:
        fig.add_annotation(
            x=depth,
            y=1.0,
            yref="paper",
            text=f"no flip within K = {depth}",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font=dict(color=_KEPT),
        )
    # Half a step of padding on both sides keeps the first and last tick labels inside the plot;
    # labels are wrapped, never rotated, so none runs past the figure's edge.
    fig.update_xaxes(range=[-0.5, depth + 0.5], tickangle=0)
    fig.update_xaxes(
        tickmode="array",
        tickvals=steps.tolist(),
        ticktext=labels,
        row=2,
        col=1,
        tickfont=dict(size=_STEP_FONT),
        title_text="groups removed (cumulative, → baseline)",
    )
    fig.update_yaxes(title_text="margin (nats; 0 = boundary)", row=1, col=1)
    fig.update_yaxes(title_text=f"P({class_label})", range=[0, 1.05], row=2, col=1)
    # The colour key is a subtitle, not a legend: a legend above the plot ran into the title
    # and the k* label in a half-width column, and the two panels' y titles name the lines.
    key = f"<span style='color:{_KEPT}'>●</span> prediction unchanged · <span style='color:{_FLIPPED}'>●</span> flipped"
    return finish(
        fig,
        title="Removal trajectory",
        subtitle=key,
        height=520,
        legend=False,
        tick_lines=1 + max(label.count("<br>") for label in labels),
    )


class StaticFallbackFigure(go.Figure):
    """A plotly ``Figure`` that also shows without JavaScript.

    Its notebook display bundle holds plotly's own mime type (interactive wherever the front-end
    renders it: JupyterLab, Notebook 7, VS Code) and, as ``text/html``, a static rendering
    (``static_html``: no script), which is what a notebook exported to HTML (nbconvert) or shown
    on a code host displays, since plotly's HTML output needs plotly.js and such a page does
    not load it. ``show()`` and ``write_html()`` are plotly's, unchanged. The static rendering
    is the figure as built; later edits show in the interactive view only.
    """

    def __init__(self, figure: Any = None, *, static_html: str = "", **kwargs: Any) -> None:
        super().__init__(figure, **kwargs)
        self._static_html = static_html

    def _ipython_display_(self) -> None:
        # plotly's own hook sends its renderers' output only; IPython asks this one first.
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, validate: bool = True, **kwargs: Any) -> dict:
        bundle = {
            "application/vnd.plotly.v1+json": json.loads(pio.to_json(self, validate=validate)),
            "text/html": self._static_html,
            "text/plain": f"<{type(self).__name__}: {self.layout.title.text}>",
        }
        return {k: v for k, v in bundle.items() if (not include or k in include) and (not exclude or k not in exclude)}


def _html_table(frame) -> str:
    """``frame`` as a plain HTML table (floats to 3 decimals, every cell escaped)."""

    def cell(v: Any) -> str:
        return "–" if isinstance(v, float) and not np.isfinite(v) else f"{v:.3f}" if isinstance(v, float) else str(v)

    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(str(c))}</th>" for c in frame)
    rows = "".join(
        "<tr>" + "".join(f"<td style='padding:2px 8px'>{html.escape(cell(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table style='border-collapse:collapse;font-size:0.9em'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


# The static picture's geometry (px): plot area, margins for the y labels and the step labels.
_W, _H, _LEFT, _TOP, _BOTTOM = 560, 200, 56, 30, 44


def static_trajectory_html(points: Any, *, title: str, class_label: str) -> str:
    """A removal trajectory as static HTML: an inline SVG of the margin per step and a table.

    Parameters
    ----------
    points : core.viz.certificate.TrajectoryPoints
        The trajectory, as :func:`core.viz.certificate.trajectory_figure` draws it.
    title : str
        Heading of the picture.
    class_label : str
        The original predicted class, naming the probability column.

    Returns
    -------
    str
        HTML without script, style sheet or link: the margins (nats; below 0 = flipped) as a
        line with one point per step, blue while the prediction is unchanged and vermillion
        once flipped, the boundary at 0, a dashed line on step k* (or "no flip within K"),
        then one table row per step (group removed, margin, probability, prediction). Every
        text is HTML-escaped.
    """
    e = html.escape
    m, depth = np.asarray(points.margins, dtype=float), points.depth
    finite = m[np.isfinite(m)]
    low, high = min(0.0, *finite) if finite.size else 0.0, max(0.0, *finite) if finite.size else 1.0
    pad = 0.08 * (high - low or 1.0)
    low, high = low - pad, high + pad

    def x(k: float) -> float:
        return _LEFT + (k + 0.5) * (_W - _LEFT - 10) / (depth + 1)

    def y(v: float) -> float:
        return _TOP + (high - v) / (high - low) * (_H - _TOP - _BOTTOM)

    marks = [
        f"<text x='4' y='14' font-size='12' fill='{GREY}'>margin (nats; 0 = boundary)</text>",
        f"<line x1='{_LEFT}' x2='{_W - 10}' y1='{y(0):.1f}' y2='{y(0):.1f}' stroke='{LIGHT_GREY}' stroke-width='2'/>",
        f"<text x='{_LEFT - 6}' y='{y(0) + 4:.1f}' font-size='11' text-anchor='end' fill='{GREY}'>0</text>",
    ]
    for v in (finite.max(initial=0.0), finite.min(initial=0.0)):
        if abs(v) > 1e-12:
            marks.append(f"<text x='{_LEFT - 6}' y='{y(v) + 4:.1f}' font-size='11' text-anchor='end'>{v:.2f}</text>")
    line = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in enumerate(m) if np.isfinite(v))
    marks.append(f"<polyline points='{line}' fill='none' stroke='{GREY}' stroke-width='2'/>")
    k_star = points.flip_budget
    if k_star <= depth:
        marks.append(
            f"<line x1='{x(k_star):.1f}' x2='{x(k_star):.1f}' y1='{_TOP}' y2='{_H - _BOTTOM}' stroke='{_FLIPPED}' "
            "stroke-width='2' stroke-dasharray='6 4'/>"
        )
        note, colour, at = f"flip at k* = {k_star}", _FLIPPED, x(k_star)
    else:
        note, colour, at = f"no flip within K = {depth}", _KEPT, x(depth)
    anchor = "start" if k_star <= depth / 2 else "end"
    marks.append(
        f"<text x='{at:.1f}' y='{_TOP - 6}' font-size='12' text-anchor='{anchor}' fill='{colour}'>{e(note)}</text>"
    )
    for k, (v, flipped) in enumerate(zip(m, points.flipped)):
        if np.isfinite(v):
            marks.append(
                f"<circle cx='{x(k):.1f}' cy='{y(v):.1f}' r='5' fill='{_FLIPPED if flipped else _KEPT}' stroke='white'/>"
            )
        # The whole group name, cut to the width of its step: the tick labels' wrapped lines
        # would need one text element per line.
        first, name = points.hover_steps[k].split(" ", 1)
        name = name.removeprefix("−")
        room = max(3, int((_W - _LEFT - 10) / (depth + 1) / 6))
        name = name if len(name) <= room else name[: room - 1] + "…"
        marks.append(
            f"<text x='{x(k):.1f}' y='{_H - _BOTTOM + 16}' font-size='11' text-anchor='middle'>{e(first)}</text>"
            f"<text x='{x(k):.1f}' y='{_H - _BOTTOM + 30}' font-size='10' text-anchor='middle' fill='{GREY}'>{e(name)}</text>"
        )
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{_W}' height='{_H}' viewBox='0 0 {_W} {_H}' "
        f"role='img' aria-label='{e(title)}' font-family='system-ui,sans-serif'>" + "".join(marks) + "</svg>"
    )
    steps = pd.DataFrame(
        {
            "step": points.hover_steps,
            "margin (nats)": m,
            f"P({class_label})": np.asarray(points.proba, dtype=float),
            "prediction": points.predicted,
        }
    )
    return (
        "<div style='font-family:system-ui,sans-serif'>"
        f"<strong>{e(title)}</strong><br>{svg}"
        f"<div style='font-size:0.85em'><span style='color:{_KEPT}'>●</span> prediction unchanged · "
        f"<span style='color:{_FLIPPED}'>●</span> flipped</div>" + _html_table(steps) + "</div>"
    )


def collapse_figure(collapse: ArrayLike, *, rcma: float, path: Sequence[str] | None = None) -> go.Figure:
    """Margin-collapse curve ``c_k`` with RCMA as the shaded area.

    Parameters
    ----------
    collapse : array-like of shape (K + 1,)
        ``c_k = max(0, (m − m_k) / (|m| + 1e-8))``, ``c_0 = 0`` (unitless; 1 = margin gone,
        > 1 = flipped).
    rcma : float
        ``mean_k c_k`` — the shaded area divided by ``K + 1``.
    path : sequence of str, length K, optional
        Group names for the step axis.
    """
    c = _vector(collapse, "collapse")
    depth = c.shape[0] - 1
    if path is not None and len(path) != depth:
        raise ValueError(f"`path` must have length {depth} (len(collapse) - 1); got {len(path)}.")
    steps = np.arange(depth + 1)
    fig = go.Figure()
    names = ["intact"] + [f"−{g}" for g in path] if path is not None else [""] * (depth + 1)
    fig.add_trace(
        go.Bar(
            x=steps,
            y=c,
            width=1.0,
            name="collapse c_k",
            marker=dict(color=OKABE_ITO["sky_blue"], line=dict(color=_KEPT, width=1)),
            customdata=names,
            hovertemplate="step %{x} %{customdata}<br>c_k %{y:.3f}<extra></extra>",
        )
    )
    # Short labels on white boxes at opposite ends of their lines: in a narrow column the longer
    # ones ran into each other (and past the figure's edge), and below its line the c = 1 label
    # sat behind the bars of c_k ≥ 1.
    fig.add_hline(
        y=rcma,
        line=dict(color=OKABE_ITO["orange"], dash="dash", width=2),
        annotation_text=f"RCMA = {rcma:.3f}",
        annotation_position="top left",
        annotation=dict(bgcolor="rgba(255,255,255,0.85)"),
    )  # one dict each: plotly fills it in
    fig.add_hline(
        y=1.0,
        line=dict(color=GREY, dash="dot"),
        annotation_text="c = 1: margin gone",
        annotation_position="top right",
        annotation=dict(bgcolor="rgba(255,255,255,0.85)"),
    )
    fig.update_xaxes(tickmode="array", tickvals=steps.tolist(), range=[-0.6, depth + 0.6], tickangle=0)
    fig.update_yaxes(rangemode="tozero")
    return finish(
        fig,
        title="Margin collapse along the path",
        subtitle="dashed = RCMA, the mean bar height",
        x_title="groups removed (step k)",
        y_title="margin loss c_k",
        legend=False,
    )


def degradation_figure(
    severities: ArrayLike,
    curves: Mapping[str, ArrayLike],
    lambda_star: Mapping[str, float],
    *,
    margin0: float | None = None,
) -> go.Figure:
    """Margin of the original class under each degradation operator, as severity λ grows.

    Parameters
    ----------
    severities : array-like of shape (L,)
        The severity grid Λ (0 = intact, 1 = fully replaced by the baseline).
    curves : mapping operator name -> array-like of shape (L,)
        Margin (nats) of the original class at every severity; for ``attenuate_single`` the
        lowest margin over the single-group attenuations.
    lambda_star : mapping operator name -> float
        First flipping severity ``λ*_P`` (``inf`` = no flip on the grid).
    margin0 : float, optional
        Margin of the intact input, drawn at λ = 0.
    """
    lam = _vector(severities, "severities")
    fig = go.Figure()
    for colour, (name, curve) in zip(series_colours(len(curves)), curves.items()):
        curve_m = _vector(curve, f"curves[{name!r}]", length=lam.shape[0])
        x, y = lam, curve_m
        if margin0 is not None:
            x, y = np.concatenate([[0.0], lam]), np.concatenate([[margin0], curve_m])
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=2),
                hovertemplate=f"{name}<br>λ %{{x:.2f}}<br>margin %{{y:.3f}} nats<extra></extra>",
            )
        )
        star = lambda_star.get(name, np.inf)
        if is_finite(star):
            at = int(np.argmin(np.abs(lam - float(star))))
            fig.add_trace(
                go.Scatter(
                    x=[float(star)],
                    y=[float(curve_m[at])],
                    mode="markers",
                    showlegend=False,
                    marker=dict(symbol="star", size=16, color=colour, line=dict(color="black", width=1)),
                    hovertemplate=f"{name}: first flip at λ* = %{{x:.2f}}<extra></extra>",
                )
            )
            # An annotation on a white box, not the marker's text: that sat on the other curve.
            fig.add_annotation(
                x=float(star),
                y=float(curve_m[at]),
                text=f"λ* = {float(star):.2f}",
                showarrow=False,
                yshift=18,
                font=dict(color=colour),
                bgcolor="rgba(255,255,255,0.85)",
            )
    # The boundary is named in the legend, not by a text on the line: the ★ of λ* sit on that
    # line (the first flip is where the margin crosses 0) and would cover the text.
    fig.add_hline(y=0, line=dict(color=LIGHT_GREY, width=2))
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            line=dict(color=LIGHT_GREY, width=2),
            name="decision boundary (margin 0)",
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(range=[-0.02, 1.05])
    # The key in a subtitle and the legend under the axis: with the key in the title, the title
    # ran into the legend above the plot even at 1400 px.
    return finish(
        fig,
        title="Partial degradation per operator",
        subtitle="★ = λ*, the first severity that flips",
        x_title="severity λ (0 = intact, 1 = baseline)",
        y_title="margin (nats)",
    )


@dataclass(frozen=True)
class DropsFold:
    """The bars of a one-step-drops chart, largest first, the smaller ones folded into one.

    Shared by :func:`drops_figure` and its Vega-Lite twin, so both show the same bars.

    Attributes
    ----------
    names, colours, values, hover : tuple, length B
        Per bar: the group (or ``"<n> other groups"``), its colour (blue on the path, grey off
        it, light grey folded), its length in nats and its hover text (lines joined by ``<br>``).
    title : str
        The chart's title (says how many groups are shown when some are folded).
    """

    names: tuple[str, ...]
    colours: tuple[str, ...]
    values: tuple[float, ...]
    hover: tuple[str, ...]
    title: str


def fold_drops(
    groups: Sequence[str], drops: ArrayLike, *, path: Sequence[str] = (), top_n: int | None = None
) -> DropsFold:
    """The bars :func:`drops_figure` draws (its parameters; see there)."""
    d = _vector(drops, "drops", length=len(groups))
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, (int, np.integer)) or top_n < 1):
        raise ValueError(f"`top_n` must be a positive int or None; got {top_n!r}.")
    order = np.argsort(-d, kind="stable")
    shown = order if top_n is None else order[:top_n]
    folded = order[shown.shape[0] :]
    names = [str(groups[i]) for i in shown]
    on_path = set(path)
    colours = [_KEPT if n in on_path else GREY for n in names]
    values = d[shown].tolist()
    hover = [f"{n}<br>δ = {v:.3f} nats" for n, v in zip(names, values)]
    title = "One-step drops δ_g"
    if folded.shape[0]:
        rest = d[folded]
        label = f"{folded.shape[0]} other group{'s' if folded.shape[0] > 1 else ''}"
        names.append(label)
        colours.append(LIGHT_GREY)
        values.append(float(rest.max()))
        hover.append(
            f"{label} (folded)<br>largest δ = {rest.max():.3f}, smallest δ = {rest.min():.3f} nats<br>"
            f"{int((rest > 0).sum())} of them support the prediction"
        )
        title = f"One-step drops δ_g: top {shown.shape[0]} of {len(groups)} groups"
    return DropsFold(tuple(names), tuple(colours), tuple(values), tuple(hover), title)


def drops_figure(
    groups: Sequence[str], drops: ArrayLike, *, path: Sequence[str] = (), top_n: int | None = None
) -> go.Figure:
    """One-step margin drops ``δ_g``, largest first; groups on the removal path highlighted.

    Parameters
    ----------
    groups : sequence of str, length G
    drops : array-like of shape (G,)
        ``δ_g = m(x) − m_y(R(x, {g}))`` in nats; positive = the group supports the prediction.
    path : sequence of str
        Groups on the certificate's path (coloured blue; the others grey).
    top_n : int, optional
        Show the ``top_n`` largest drops and fold the other ``G − top_n`` groups into one
        last bar, ``"<n> other groups"``, whose length is the largest of their drops (so no
        folded group supports the prediction more than that bar shows); None shows all.

    Returns
    -------
    plotly.graph_objects.Figure
        At most ``top_n + 1`` horizontal bars.
    """
    fold = fold_drops(groups, drops, path=path, top_n=top_n)
    names, colours, values, hover = list(fold.names), list(fold.colours), list(fold.values), list(fold.hover)
    fig = go.Figure(
        go.Bar(
            x=values,
            y=names,
            orientation="h",
            marker=dict(color=colours),
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.add_vline(x=0, line=dict(color="black", width=1))
    fig.update_yaxes(autorange="reversed", type="category", automargin=True)
    return finish(
        fig,
        title=fold.title,
        subtitle="blue = on the removal path",
        x_title="margin drop δ_g (nats)",
        y_title="evidence group",
        height=max(300, 28 * len(names) + 120),
        legend=False,
    )


def whatif_figure(class_names: Sequence[str], original: ArrayLike, current: ArrayLike) -> go.Figure:
    """Class probabilities of the original input beside those of the edited (what-if) input."""
    p0 = _vector(original, "original", length=len(class_names))
    p1 = _vector(current, "current", length=len(class_names))
    names = [str(c) for c in class_names]
    fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=p0,
                name="original input",
                marker=dict(color=GREY),
                hovertemplate="%{x}: %{y:.3f}<extra>original</extra>",
            ),
            go.Bar(
                x=names,
                y=p1,
                name="with selected groups at baseline",
                marker=dict(color=OKABE_ITO["orange"]),
                hovertemplate="%{x}: %{y:.3f}<extra>what-if</extra>",
            ),
        ]
    )
    fig.update_yaxes(range=[0, 1.05])
    return finish(fig, title="What-if prediction", x_title="class", y_title="predicted probability", height=340)


def _confidence_series(
    confidence: ArrayLike, fds: ArrayLike, brittle: ArrayLike | None, *, max_points: int, seed: int
) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """``(name, colour, confidence, fds)`` of every series of the confidence-vs-FDS chart, on a
    display sample of at most ``max_points`` (the same points for the plotly and Vega-Lite charts)."""
    conf = _vector(confidence, "confidence")
    f = _vector(fds, "fds", length=conf.shape[0])
    idx = np.arange(conf.shape[0])
    if idx.shape[0] > max_points:  # display only: thousands of SVG markers make the browser crawl
        idx = np.sort(np.random.default_rng(seed).choice(idx, size=max_points, replace=False))
    if brittle is None:
        return [("prediction", _KEPT, conf[idx], f[idx])]
    b = np.asarray(brittle).astype(bool)
    if b.shape != conf.shape:
        raise ValueError(f"`brittle` must have shape {conf.shape}; got {b.shape}.")
    series = []
    for mask, colour, name in ((~b, _KEPT, "not brittle (held-out label)"), (b, _FLIPPED, "brittle (held-out label)")):
        sel = idx[mask[idx]]
        series.append((name, colour, conf[sel], f[sel]))
    return series


_CONFIDENCE_TITLE = "Confidence is not stability"
_CONFIDENCE_AXES = ("confidence p̂ (max probability)", "FDS (larger = more fragile)")


def confidence_fds_figure(
    confidence: ArrayLike,
    fds: ArrayLike,
    *,
    brittle: ArrayLike | None = None,
    threshold: float = 0.9,
    max_points: int = 3000,
    seed: int = 0,
) -> go.Figure:
    """Confidence against FDS for a set of certificates (a sample of at most ``max_points``).

    Shows that confidence and fragility are different axes: high-confidence predictions spread
    over the whole FDS range. Points are coloured by the held-out brittle label when given.
    """
    fig = go.Figure()
    for name, colour, x, y in _confidence_series(confidence, fds, brittle, max_points=max_points, seed=seed):
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=name, marker=dict(color=colour, size=6, opacity=0.6)))
    # Named in the subtitle: a text on the line sat on the points near FDS = 1.
    fig.add_vline(x=threshold, line=dict(color=GREY, dash="dash"))
    fig.update_yaxes(range=[0, 1])
    # Below the plot: its entries wrap to a second row in a half-width column and ran into the title.
    return finish(
        fig,
        title=_CONFIDENCE_TITLE,
        subtitle=f"dashed = high confidence (p̂ ≥ {threshold:g})",
        x_title=_CONFIDENCE_AXES[0],
        y_title=_CONFIDENCE_AXES[1],
        legend_at="bottom",
    )


def confidence_fds_spec(
    confidence: ArrayLike,
    fds: ArrayLike,
    *,
    brittle: ArrayLike | None = None,
    threshold: float = 0.9,
    max_points: int = 3000,
    seed: int = 0,
) -> dict:
    """:func:`confidence_fds_figure` as a Vega-Lite spec: the same points, colours and threshold line.

    The Overview draws it without plotly.js, whose 4.7 MB bundle the browser would otherwise load
    and compile on every start. Returns a Vega-Lite 5 spec with its data inline (one row per
    shown point: ``confidence``, ``fds``, ``label``).
    """
    series = _confidence_series(confidence, fds, brittle, max_points=max_points, seed=seed)
    values = [
        {"confidence": x, "fds": y, "label": name}
        for name, _, xs, ys in series
        for x, y in zip(xs.tolist(), ys.tolist())
    ]
    points = {
        "mark": {"type": "circle", "size": 36, "opacity": 0.6},
        "encoding": {
            "x": {
                "field": "confidence",
                "type": "quantitative",
                "title": _CONFIDENCE_AXES[0],
                "scale": {"zero": False, "nice": False},
            },
            "y": {"field": "fds", "type": "quantitative", "title": _CONFIDENCE_AXES[1], "scale": {"domain": [0, 1]}},
            "color": {
                "field": "label",
                "type": "nominal",
                "scale": {"domain": [s[0] for s in series], "range": [s[1] for s in series]},
            },
            "tooltip": [
                {"field": "label", "title": "held-out label"},
                {"field": "confidence", "type": "quantitative", "format": ".3f"},
                {"field": "fds", "type": "quantitative", "title": "FDS", "format": ".3f"},
            ],
        },
    }
    line = {
        "mark": {"type": "rule", "color": GREY, "strokeDash": [6, 4]},
        "encoding": {"x": {"datum": float(threshold), "type": "quantitative"}},
    }
    return finish_spec(
        {"data": {"values": values}, "layer": [points, line]},
        title=_CONFIDENCE_TITLE,
        subtitle=f"dashed = high confidence (p̂ ≥ {threshold:g})",
    )


def _flip_counts(flip_budget: ArrayLike, depth: int) -> np.ndarray:
    """Predictions per flip budget ``k* = 1 .. depth + 1`` (the last: no flip within ``depth``)."""
    k = np.asarray(flip_budget, dtype=int)
    if k.size and (k.min() < 1 or k.max() > depth + 1):
        raise ValueError(f"`flip_budget` values must lie in 1..{depth + 1}; got range {k.min()}..{k.max()}.")
    return np.bincount(k, minlength=depth + 2)[1:]


_FLIP_TITLE = "Flip budget k* of the evaluated predictions"
_FLIP_AXES = ("groups removed until it flips (k*)", "predictions (count)")


def flip_budget_histogram(flip_budget: ArrayLike, *, depth: int) -> go.Figure:
    """How many groups must be removed to flip each prediction (``k* = K + 1``: never, within K)."""
    counts = _flip_counts(flip_budget, depth)
    labels = [str(v) for v in range(1, depth + 1)] + [f"no flip<br>≤ {depth}"]
    colours = [_FLIPPED] * depth + [_KEPT]
    fig = go.Figure(
        go.Bar(
            x=labels, y=counts, marker=dict(color=colours), hovertemplate="k* = %{x}: %{y} predictions<extra></extra>"
        )
    )
    fig.update_xaxes(type="category", tickangle=0)
    return finish(fig, title=_FLIP_TITLE, x_title=_FLIP_AXES[0], y_title=_FLIP_AXES[1], legend=False, tick_lines=2)


def flip_budget_spec(flip_budget: ArrayLike, *, depth: int) -> dict:
    """:func:`flip_budget_histogram` as a Vega-Lite spec (the Overview's chart, drawn without
    plotly.js). One row per bar: ``k`` (``"1"`` … ``"K"``, ``"no flip ≤ K"``) and ``predictions``."""
    counts = _flip_counts(flip_budget, depth)
    labels = [str(v) for v in range(1, depth + 1)] + [f"no flip ≤ {depth}"]
    values = [{"k": label, "predictions": int(c)} for label, c in zip(labels, counts)]
    spec = {
        "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "k", "type": "ordinal", "sort": labels, "title": _FLIP_AXES[0], "axis": {"labelAngle": 0}},
            "y": {"field": "predictions", "type": "quantitative", "title": _FLIP_AXES[1], "axis": COUNT_AXIS},
            "color": {
                "field": "k",
                "type": "ordinal",
                "legend": None,
                "scale": {"domain": labels, "range": [_FLIPPED] * depth + [_KEPT]},
            },
            "tooltip": [{"field": "k", "title": "k*"}, {"field": "predictions", "type": "quantitative"}],
        },
    }
    return finish_spec(spec, title=_FLIP_TITLE)
