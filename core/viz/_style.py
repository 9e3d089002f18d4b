"""Shared look of every figure: the Okabe–Ito palette and one layout helper.

Okabe & Ito's eight colours stay distinguishable under the common forms of colour-vision
deficiency; every figure in the product draws from them (plus neutral greys for reference
lines such as "random" or "ceiling").
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

__all__ = ["OKABE_ITO", "GREY", "LIGHT_GREY", "DIVERGING", "SEQUENTIAL", "series_colours", "finish", "is_finite"]

OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
GREY = "#7F7F7F"
LIGHT_GREY = "#D9D9D9"
#: Blue → white → vermillion: a colour-blind-safe diverging scale (negative = blue).
DIVERGING = [[0.0, OKABE_ITO["blue"]], [0.5, "#FFFFFF"], [1.0, OKABE_ITO["vermillion"]]]
#: White → blue sequential scale.
SEQUENTIAL = [[0.0, "#FFFFFF"], [1.0, OKABE_ITO["blue"]]]

# Yellow is kept last: it is hard to read as a thin line on white.
_ORDER = ("blue", "orange", "bluish_green", "vermillion", "reddish_purple", "sky_blue", "black", "yellow")


def series_colours(n: int) -> list[str]:
    """``n`` distinct Okabe–Ito colours (cycling after eight), in a fixed order."""
    return [OKABE_ITO[_ORDER[i % len(_ORDER)]] for i in range(n)]


def is_finite(value: object) -> bool:
    """True for a real, finite number (``None``, NaN and ±inf are not)."""
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


_LEGENDS = {
    "top": dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0),
    "right": dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02),
    "bottom": dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0.0),
}


def finish(fig: go.Figure, *, title: str, x_title: str | None = None, y_title: str | None = None,
           height: int = 380, legend: bool = True, legend_at: str = "top") -> go.Figure:
    """Apply the house layout: white template, title, axis titles and the legend position
    (``"top"``: one row above the plot; ``"right"`` for many series; ``"bottom"`` under the
    x-axis title, when subplot titles occupy the top)."""
    fig.update_layout(
        template="plotly_white",
        title=dict(text=title, x=0.0, xanchor="left", font=dict(size=16)),
        height=height,
        margin=dict(l=60, r=20, t=70, b=110 if legend_at == "bottom" and legend else 60),
        showlegend=legend,
        legend=_LEGENDS[legend_at],
        font=dict(family="Source Sans Pro, DejaVu Sans, sans-serif", size=13),
        hoverlabel=dict(namelength=-1),
    )
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    return fig
