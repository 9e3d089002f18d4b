"""Figures of paired-evaluation bounds, grid summaries and policy comparisons (SPEC Part B)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from core.viz._style import DIVERGING, FLIPPED, GREY, HIGHLIGHT, OKABE_ITO, finish, is_finite, wrap_label

__all__ = ["grid_summary_figure", "intervals_spec", "policy_matrix_figure", "regret_figure"]

_LEVEL_COLOURS = {"I0": OKABE_ITO["sky_blue"], "Ik": OKABE_ITO["blue"], "I5": OKABE_ITO["bluish_green"]}
# Two short lines each: a third of a half-width figure holds about 25 characters.
_TARGET_TITLES = {
    "H": "H: harmful<br>accepted flips",
    "L": "L: lost<br>acceptances",
    "dM_k": "dM_k: confidence drop<br>of retained pairs",
}
#: The range each target can take: H and L are shares, dM_k a difference of probabilities.
TARGET_BOUNDS = {"H": (0.0, 1.0), "L": (0.0, 1.0), "dM_k": (-1.0, 1.0)}
# Smallest axis span: a zero-width interval (H = [0, 0]) is drawn on [0, 0.01], not -1…1.
_MIN_SPAN = 0.01


def _target_range(values: Sequence[float], bounds: tuple[float, float]) -> list[float]:
    """Padded axis range of a target's finite values, at least ``_MIN_SPAN`` wide and inside
    ``bounds``."""
    finite = [float(v) for v in values if is_finite(v)]
    if not finite:
        return [max(bounds[0], 0.0), min(bounds[1], 1.0)]
    low, high = min(finite), max(finite)
    pad = max(0.08 * (high - low), _MIN_SPAN / 2)
    low, high = max(bounds[0], low - pad), min(bounds[1], high + pad)
    if high - low < _MIN_SPAN:  # pinned at a bound: grow away from it
        low, high = (low, low + _MIN_SPAN) if low <= bounds[0] else (high - _MIN_SPAN, high)
    return [low, high]


def _columns_iv(frame: pd.DataFrame, needed: Sequence[str], name: str) -> None:
    missing = set(needed) - set(frame.columns)
    if missing:
        raise ValueError(f"`{name}` lacks the column(s) {sorted(missing)}; it has {list(frame.columns)}.")


def intervals_spec(
    intervals: pd.DataFrame, *, targets: Sequence[str] = ("H", "L", "dM_k"), levels: Sequence[str] = ("I0", "Ik", "I5")
) -> dict:
    """Identified intervals per target and information level, the observed value marked (Vega-Lite 5).

    Parameters
    ----------
    intervals : DataFrame
        One row per (target, level) with columns ``target``, ``level``, ``low``, ``high`` and
        ``observed`` (NaN when the pairing is unknown). A NaN interval is drawn as "undefined"
        (e.g. ``dM_k`` when no class retains a correct pair).
    targets, levels : sequence of str
        Panels (left to right) and rows (top to bottom) to draw, in order.

    Returns
    -------
    dict
        One panel per target (``hconcat``); its data rows: ``level``, ``low``, ``high``,
        ``observed`` (None when unknown), ``undefined`` and ``middle``; its x scale is padded
        around the values and clipped to the range the target can take (:data:`TARGET_BOUNDS`).
    """
    _columns_iv(intervals, ("target", "level", "low", "high", "observed"), "intervals")
    present = [t for t in targets if (intervals["target"] == t).any()]
    if not present:
        raise ValueError(
            f"`intervals` has none of the targets {list(targets)}; got {sorted(set(intervals['target']))}."
        )
    level_order = [lv for lv in levels if (intervals["level"] == lv).any()]
    colour = {
        "field": "level",
        "type": "nominal",
        "scale": {"domain": level_order, "range": [_LEVEL_COLOURS.get(lv, GREY) for lv in level_order]},
        "title": None,
    }
    panels = []
    for i, target in enumerate(present):
        rows = intervals[intervals["target"] == target].set_index("level")
        shown = rows.loc[[lv for lv in levels if lv in rows.index], ["low", "high", "observed"]]
        x_range = _target_range(shown.to_numpy().ravel().tolist(), TARGET_BOUNDS.get(target, (-np.inf, np.inf)))
        values = []
        for level in levels:
            if level not in rows.index:
                continue
            low, high, observed = (rows.at[level, c] for c in ("low", "high", "observed"))
            defined = is_finite(low) and is_finite(high)
            values.append(
                {
                    "level": level,
                    "low": float(low) if defined else None,
                    "high": float(high) if defined else None,
                    "observed": float(observed) if defined and is_finite(observed) else None,
                    "undefined": not defined,
                    "middle": sum(x_range) / 2,
                }
            )
        x = {
            "type": "quantitative",
            "scale": {"domain": x_range, "nice": False},
            "axis": {"tickCount": 4},
            "title": "share of records" if target in ("H", "L") else "probability drop",
        }
        y = {
            "field": "level",
            "type": "nominal",
            "sort": list(levels),
            "title": "information level" if i == 0 else None,
        }
        defined_only = {"filter": "!datum.undefined"}
        panels.append(
            {
                "title": _TARGET_TITLES.get(target, target).replace("<br>", " "),
                "data": {"values": values},
                "width": 220,
                "height": 150,
                "layer": [
                    {
                        "transform": [defined_only],
                        "mark": {"type": "bar", "height": 14},
                        "encoding": {
                            "y": y,
                            "x": {**x, "field": "low"},
                            "x2": {"field": "high"},
                            "color": colour,
                            "tooltip": [
                                {"field": "level"},
                                {"field": "low", "format": ".4f"},
                                {"field": "high", "format": ".4f"},
                            ],
                        },
                    },
                    {
                        "transform": [defined_only, {"filter": "isValid(datum.observed)"}],
                        "mark": {
                            "type": "point",
                            "shape": "diamond",
                            "size": 130,
                            "fill": FLIPPED,
                            "fillOpacity": 1,
                            "stroke": "black",
                            "strokeWidth": 1,
                        },
                        "encoding": {
                            "y": y,
                            "x": {**x, "field": "observed"},
                            "tooltip": [{"field": "observed", "format": ".4f"}],
                        },
                    },
                    {
                        "transform": [{"filter": "datum.undefined"}],
                        "mark": {"type": "text", "color": GREY},
                        "encoding": {"y": y, "x": {**x, "field": "middle"}, "text": {"value": "undefined"}},
                    },
                ],
            }
        )
    observed = intervals["observed"].notna().any()
    key = "bar = every value some pairing allows; " + ("◆ = observed pairing" if observed else "pairing unknown")
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": {
            "text": "Identified intervals",
            "anchor": "start",
            "fontSize": 16,
            "subtitle": key,
            "subtitleColor": GREY,
        },
        "hconcat": panels,
        "config": {"legend": {"orient": "bottom", "title": None}, "axis": {"titleFontWeight": "normal"}},
    }


def grid_summary_figure(
    summary: pd.DataFrame, *, value: str = "mean_width", value_title: str = "mean interval width (probability units)"
) -> go.Figure:
    """Mean interval width by source and information level, one panel per target.

    Parameters
    ----------
    summary : DataFrame
        Columns ``source``, ``target``, ``level`` and ``value``.
    """
    _columns_iv(summary, ("source", "target", "level", value), "summary")
    targets = list(dict.fromkeys(summary["target"]))
    levels = list(dict.fromkeys(summary["level"]))
    # Each panel has its own y-axis: the gap holds the next panel's tick labels ("0.05"), which
    # ran into the bars beside them at 0.05.
    fig = make_subplots(
        rows=1,
        cols=max(1, len(targets)),
        subplot_titles=[_TARGET_TITLES.get(t, t).split(":")[0] for t in targets],
        horizontal_spacing=0.09,
    )
    # Source names broken after their hyphens, not rotated: rotated, "simulated-recapture" ran
    # under the legend and into the neighbouring panel.
    sources = {str(v): wrap_label(str(v).replace("-", "- "), 10).replace("- ", "-") for v in summary["source"]}
    for col, target in enumerate(targets, start=1):
        part = summary[summary["target"] == target]
        for level in levels:
            rows = part[part["level"] == level]
            fig.add_trace(
                go.Bar(
                    x=rows["source"].astype(str).map(sources),
                    y=rows[value],
                    name=str(level),
                    legendgroup=str(level),
                    showlegend=col == 1,
                    marker=dict(color=_LEVEL_COLOURS.get(level, GREY)),
                    hovertemplate=f"{target} · {level}<br>%{{x}}: %{{y:.4f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="source", type="category", tickangle=0, tickfont=dict(size=11), row=1, col=col)
    fig.update_yaxes(title_text=value_title, row=1, col=1)
    fig.update_layout(barmode="group")
    lines = 1 + max((t.count("<br>") for t in sources.values()), default=0)
    return finish(
        fig,
        title="How much each information level narrows the intervals",
        height=420,
        legend_at="bottom",
        tick_lines=lines,
    )


def policy_matrix_figure(matrix: ArrayLike, policies: Sequence[str], *, tol: float = 1e-12) -> go.Figure:
    """Shared-correspondence comparison ``D⁺[j, ℓ] = max_π (J_j(π) − J_ℓ(π))``.

    Parameters
    ----------
    matrix : array-like of shape (P, P)
        ``D⁺`` between every pair of policies (diagonal 0); row ``j`` against column ``ℓ``.
    policies : sequence of str, length P
    tol : float
        A cell below ``-tol`` certifies that the row policy costs less than the column policy
        under every feasible correspondence (marked ✓).
    """
    d = np.asarray(matrix, dtype=float)
    if d.shape != (len(policies), len(policies)):
        raise ValueError(f"`matrix` must have shape ({len(policies)}, {len(policies)}); got {d.shape}.")
    names = [str(p) for p in policies]
    text = [[("✓ " if v < -tol else "") + (f"{v:+.4f}" if np.isfinite(v) else "—") for v in row] for row in d]
    bound = float(np.nanmax(np.abs(d))) if np.isfinite(d).any() else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=d,
            x=names,
            y=names,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            text=text,
            texttemplate="%{text}",
            colorbar=dict(title="D⁺ (cost units)"),
            hovertemplate="row %{y} vs column %{x}<br>D⁺ = %{z:.5f}<extra></extra>",
        )
    )
    fig.update_xaxes(type="category", tickangle=-30)  # "q = 90%" beside "q = 100%" would touch
    fig.update_yaxes(type="category", autorange="reversed")
    return finish(
        fig,
        title="Worst-case cost difference, row − column",
        subtitle="✓ = the row policy is cheaper under every pairing",
        x_title="compared policy ℓ",
        y_title="policy j",
        legend=False,
        height=150 + 60 * len(names),
    )


def regret_figure(policies: Sequence[str], regret: ArrayLike, *, chosen: str | None = None) -> go.Figure:
    """Worst-case regret ``R_j = max_ℓ D⁺[j, ℓ]`` of every policy (lower = safer choice)."""
    r = np.asarray(regret, dtype=float)
    if r.shape != (len(policies),):
        raise ValueError(f"`regret` must have shape ({len(policies)},); got {r.shape}.")
    names = [str(p) for p in policies]
    colours = [HIGHLIGHT if n == chosen else OKABE_ITO["blue"] for n in names]
    fig = go.Figure(
        go.Bar(
            x=names, y=r, marker=dict(color=colours), hovertemplate="%{x}: worst-case regret %{y:.5f}<extra></extra>"
        )
    )
    fig.update_xaxes(type="category", tickangle=-30)
    return finish(
        fig,
        title="Worst-case regret per policy",
        subtitle="orange = the minimax-regret choice" if chosen in names else None,
        x_title="perturbed acceptance policy",
        y_title="regret (cost units)",
        legend=False,
        height=150 + 60 * len(names),
    )
