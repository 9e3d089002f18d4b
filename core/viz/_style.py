"""Shared look of every figure: the Okabe–Ito palette, its colour policy and one layout helper.

Okabe & Ito's eight colours stay distinguishable under the common forms of colour-vision
deficiency; every figure in the product draws from them (plus neutral greys for reference
lines such as "random" or "ceiling").

Colour policy (one for the whole product):

- **vermillion** means *flipped / failed / observed* and is never a series colour, so a
  series can never be mistaken for a flipped point;
- **orange** is the *highlighted* item in single-colour charts (the chosen score, the
  minimax choice; the others blue); in multi-series charts it is an ordinary series colour
  and the highlighted series is drawn thicker instead;
- **greys** are references (diagonal, ceiling, random, chance);
- series take :data:`SERIES_ORDER` in turn; past its seven colours, :func:`series_styles`
  changes the dash pattern, so every (colour, dash) pair of a figure stays unique.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import plotly.io as pio

__all__ = [
    "OKABE_ITO",
    "GREY",
    "LIGHT_GREY",
    "DIVERGING",
    "SEQUENTIAL",
    "FLIPPED",
    "HIGHLIGHT",
    "SERIES_ORDER",
    "series_colours",
    "series_styles",
    "wrap_label",
    "finish",
    "finish_spec",
    "COUNT_AXIS",
    "is_finite",
]

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

#: Flipped / failed / observed (reserved: never a series colour).
FLIPPED = OKABE_ITO["vermillion"]
#: The highlighted item of a single-colour chart.
HIGHLIGHT = OKABE_ITO["orange"]
#: Series colours in turn. Vermillion is reserved (see the module docstring); yellow is kept
#: last: it is hard to read as a thin line on white.
SERIES_ORDER = ("blue", "orange", "bluish_green", "reddish_purple", "sky_blue", "black", "yellow")
_DASHES = ("solid", "dash", "dot", "dashdot")


def series_colours(n: int) -> list[str]:
    """``n`` Okabe–Ito series colours in a fixed order, distinct up to seven (then cycling).

    Use :func:`series_styles` for lines, which stay distinct beyond seven by their dash.
    """
    if n < 0:
        raise ValueError(f"`n` must be >= 0; got {n}.")
    return [OKABE_ITO[SERIES_ORDER[i % len(SERIES_ORDER)]] for i in range(n)]


def series_styles(n: int) -> list[tuple[str, str]]:
    """``n`` unique ``(colour, dash)`` pairs for line series: the colours of
    :func:`series_colours`, solid first, then dashed, dotted and dash-dotted on each further
    round of seven (28 unique lines)."""
    if not 0 <= n <= len(SERIES_ORDER) * len(_DASHES):
        raise ValueError(f"`n` must be between 0 and {len(SERIES_ORDER) * len(_DASHES)}; got {n}.")
    return [(c, _DASHES[i // len(SERIES_ORDER)]) for i, c in enumerate(series_colours(n))]


def wrap_label(text: str, width: int) -> str:
    """Break ``text`` at spaces into lines of at most ``width`` characters (plotly ``<br>``),
    for subplot titles and tick labels that would otherwise run into their neighbours. A word
    longer than ``width`` stays whole."""
    if width < 1:
        raise ValueError(f"`width` must be >= 1; got {width}.")
    lines: list[str] = []
    for word in str(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def is_finite(value: object) -> bool:
    """True for a real, finite number (``None``, NaN and ±inf are not)."""
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


#: Where :func:`finish` may put the legend.
_LEGEND_PLACES = ("bottom", "right")


#: Below the x-axis title, in px under the plot area: tick labels (one line) plus the axis title.
_BELOW_AXIS_PX = 62


def _legend(at: str, plot_height: int, below_px: int) -> dict:
    # Never above the plot: that is the top margin, where the title and subtitle are, and a
    # horizontal legend wraps to more rows in a narrow column and grows up into them.
    if at == "right":
        return dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02)
    return dict(orientation="h", yanchor="top", y=-below_px / max(plot_height, 1), xanchor="left", x=0.0)


def _house_template(fig: go.Figure) -> None:
    """Give ``fig`` the registered ``plotly_white`` template without re-validating it.

    ``update_layout(template="plotly_white")`` validates every property of the template again
    (30 ms a figure, most of a new certificate's build: a row click draws five). Plotly applies
    its registered default template with validation off (``_initialize_layout_template``); this
    does the same for the house template, which plotly validated when it registered it. The
    figure JSON is identical (``tests/app/test_figure_template.py``). The switch is plotly's
    private ``_validate`` attribute: should it go, the validated public path is used.
    """
    layout = fig.layout
    if not hasattr(layout, "_validate"):
        fig.update_layout(template="plotly_white")
        return
    layout._validate = False
    try:
        layout.template = pio.templates["plotly_white"]
    finally:
        layout._validate = getattr(fig, "_validate", True)


def finish(
    fig: go.Figure,
    *,
    title: str,
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = 380,
    legend: bool = True,
    legend_at: str = "bottom",
    subtitle: str | None = None,
    tick_lines: int = 1,
) -> go.Figure:
    """Apply the house layout: white template, title, axis titles and the legend position
    (``"bottom"``: horizontal rows under the x-axis title; ``"right"``: one column beside the
    plot, for many series). No legend goes above the plot, where the title is: at 1000 px a
    half-width column wraps a horizontal legend into rows that ran into the title.

    Plotly never wraps a title: keep ``title`` short enough for a half-width column (about 45
    characters) and put the reading key ("orange = …", "◆ = …") in ``subtitle``, a smaller
    second line (break it with ``<br>`` or :func:`wrap_label` when it is long). Every axis gets
    ``automargin``, so long or wrapped tick labels push the margin instead of being cut;
    ``tick_lines`` is the number of lines of the x tick labels, which a bottom legend clears.
    """
    if legend_at not in _LEGEND_PLACES:
        raise ValueError(f"`legend_at` must be one of {_LEGEND_PLACES}; got {legend_at!r}.")
    if not (isinstance(tick_lines, int) and tick_lines >= 1):
        raise ValueError(f"`tick_lines` must be an int >= 1; got {tick_lines!r}.")
    lines = 0 if subtitle is None else subtitle.count("<br>") + 1
    below = _BELOW_AXIS_PX + 16 * (tick_lines - 1)
    top = 70 + 16 * lines
    bottom = below + 58 if legend_at == "bottom" and legend else 60 + 16 * (tick_lines - 1)
    total = height + 16 * lines + (bottom - 60)
    _house_template(fig)
    fig.update_layout(
        # Pinned to the top of the figure: plotly centres a title in the top margin, so a larger
        # margin (for panel titles) would otherwise push the subtitle onto them.
        title=dict(
            text=title,
            x=0.0,
            xanchor="left",
            y=1.0,
            yref="container",
            yanchor="top",
            pad=dict(t=14),
            font=dict(size=16),
            subtitle=dict(text=subtitle or "", font=dict(size=12, color=GREY)),
        ),
        height=total,
        margin=dict(l=60, r=20, t=top, b=bottom),
        showlegend=legend,
        legend=_legend(legend_at, total - top - bottom, below),
        font=dict(family="Source Sans Pro, DejaVu Sans, sans-serif", size=13),
        hoverlabel=dict(namelength=-1),
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    return fig


def finish_spec(spec: dict, *, title: str, subtitle: str | None = None, height: int = 300) -> dict:
    """The house layout of a Vega-Lite chart, which the dashboard, the report and the notebook
    draw (:func:`finish` is a plotly figure's).

    ``spec`` holds the chart's data, marks and encodings (Vega-Lite 5 JSON); this adds the title
    pinned left with its reading key as ``subtitle``, the plot height in px (the width fills the
    column) and every legend below the plot, never beside the title. Vega-Lite wraps neither: keep the title short (about 45
    characters for a half-width column), as for :func:`finish`.
    """
    if not isinstance(height, int) or height < 1:
        raise ValueError(f"`height` must be an int >= 1 (px); got {height!r}.")
    head: dict = {"text": title, "anchor": "start", "fontSize": 16}
    if subtitle:
        head.update(subtitle=subtitle, subtitleColor=GREY, subtitleFontSize=12)
    return {
        **spec,
        "title": head,
        "height": height,
        # Fill the column's width and keep ``height`` for the plot: Streamlit's default fit
        # squeezed a layered chart into a third of its height and cut its title.
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {
            "legend": {"orient": "bottom", "title": None, "labelLimit": 260},
            "axis": {"labelLimit": 160, "titleFontWeight": "normal"},
        },
    }


#: Axis of a count: whole numbers only (Vega-Lite would label 0.5, 1.5 rows on a small count).
COUNT_AXIS = {"tickMinStep": 1, "format": "~d"}
