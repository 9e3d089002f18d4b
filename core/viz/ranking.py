"""Figures for ranking scores under a review budget (SPEC A.6 and B.5).

Every score here is a **risk** score (larger = riskier): the budget reviews its top ``q``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.viz._style import GREY, HIGHLIGHT, OKABE_ITO, finish_spec, is_finite, series_styles

__all__ = ["coverage_spec", "score_metrics_spec"]


_BUDGET_TITLE = "review budget q (% of ranked items)"
#: The dash names of :func:`core.viz._style.series_styles` as Vega-Lite ``strokeDash`` arrays.
_DASH_ARRAYS = {"solid": [1, 0], "dash": [8, 4], "dot": [2, 3], "dashdot": [8, 3, 2, 3]}


def coverage_spec(
    budgets: ArrayLike,
    curves: Mapping[str, ArrayLike],
    *,
    ceiling: ArrayLike | None = None,
    random: ArrayLike | None = None,
    selected: float | None = None,
    title: str = "Share of positives found within the budget",
    y_title: str = "share of positives found (0–1)",
    highlight: str | None = None,
) -> dict:
    """Coverage (or capture) of positives against the review budget, one line per score, as a
    Vega-Lite 5 spec.

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
        Budget currently chosen (a dashed rule).
    highlight : str, optional
        Score drawn thicker (e.g. the default ranking).

    Returns
    -------
    dict
        One data row per (line, budget): ``line`` (the legend's name), ``budget`` (percent),
        ``found`` and ``width`` (4 for the highlighted score, else 2).

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
    styled = []
    for (colour, dash), (names, y) in zip(series_styles(len(lines)), lines):
        label = names[0] if len(names) == 1 else " = ".join(names) + " (identical ranking)"
        styled.append((label, y, colour, dash, 4 if highlight in names else 2))
    for ref, name, dash in ((ceiling, "ceiling (best possible)", "dash"), (random, "random selection", "dot")):
        if ref is not None:
            y = np.asarray(ref, dtype=float)
            if y.shape != q.shape:
                raise ValueError(f"`{name.split()[0]}` must have shape {q.shape}; got {y.shape}.")
            styled.append((name, y, GREY, dash, 2))
    values = [
        {"line": label, "budget": float(100 * b), "found": float(v) if np.isfinite(v) else None, "width": width}
        for label, y, _, _, width in styled
        for b, v in zip(q, y)
    ]
    names = [s[0] for s in styled]
    layers: list[dict] = [
        {
            "mark": {"type": "line", "clip": True},
            "encoding": {
                "x": {
                    "field": "budget",
                    "type": "quantitative",
                    "title": _BUDGET_TITLE,
                    "scale": {"domain": [0, float(100 * q.max())], "nice": False},
                },
                "y": {"field": "found", "type": "quantitative", "title": y_title, "scale": {"domain": [0, 1.02]}},
                "color": {
                    "field": "line",
                    "type": "nominal",
                    "scale": {"domain": names, "range": [s[2] for s in styled]},
                },
                "strokeDash": {
                    "field": "line",
                    "type": "nominal",
                    "scale": {"domain": names, "range": [_DASH_ARRAYS[s[3]] for s in styled]},
                    "legend": None,
                },
                "strokeWidth": {"field": "width", "type": "quantitative", "scale": None, "legend": None},
                "tooltip": [
                    {"field": "line", "title": "score"},
                    {"field": "budget", "title": "budget %", "format": ".1f"},
                    {"field": "found", "format": ".3f"},
                ],
            },
        }
    ]
    if selected is not None:
        at = 100 * float(selected)
        layers.append(
            {
                "data": {"values": [{"budget": at, "text": f"budget {at:.0f}%"}]},
                "layer": [
                    {"mark": {"type": "rule", "strokeDash": [4, 3], "color": OKABE_ITO["black"]}},
                    {
                        "mark": {"type": "text", "align": "left", "dx": 4, "y": "height", "dy": -8},
                        "encoding": {"text": {"field": "text"}},
                    },
                ],
                "encoding": {"x": {"field": "budget", "type": "quantitative", "title": _BUDGET_TITLE}},
            }
        )
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": values}, "layer": layers}
    return finish_spec(spec, title=title, height=360)


def score_metrics_spec(table: pd.DataFrame, *, capture_column: str, highlight: str | None = None) -> dict:
    """AUROC and capture of every ranking score, side by side, best AUROC on top (Vega-Lite 5).

    Parameters
    ----------
    table : DataFrame
        Columns ``score`` (name), ``auroc`` (0–1, NaN allowed) and ``capture_column`` (0–1).
    capture_column : str
        Name of the capture column to draw (e.g. ``"capture@10"``).
    highlight : str, optional
        Score drawn in orange (the others blue).

    Returns
    -------
    dict
        Two panels (``hconcat``), each with one data row per score: ``score``, ``metric``
        (``"AUROC"`` or ``capture_column``), ``value`` (None for NaN) and ``highlighted``; both
        x axes on [0, 1], the chance line at AUROC 0.5.
    """
    missing = {"score", "auroc", capture_column} - set(table.columns)
    if missing:
        raise ValueError(f"`table` lacks the column(s) {sorted(missing)}; it has {list(table.columns)}.")
    frame = table.sort_values("auroc", ascending=False, na_position="last")
    names = frame["score"].astype(str).tolist()

    def panel(column: str, metric: str, axis_title: str, chance: bool) -> dict:
        values = [
            {"score": n, "metric": metric, "value": float(v) if is_finite(v) else None, "highlighted": n == highlight}
            for n, v in zip(names, frame[column])
        ]
        bars = {
            "mark": "bar",
            "encoding": {
                "y": {"field": "score", "type": "nominal", "sort": names, "title": "risk score" if chance else None},
                "x": {"field": "value", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": axis_title},
                "color": {
                    "field": "highlighted",
                    "type": "nominal",
                    "scale": {"domain": [False, True], "range": [OKABE_ITO["blue"], HIGHLIGHT]},
                    "legend": None,
                },
                "tooltip": [{"field": "score"}, {"field": "value", "title": metric, "format": ".3f"}],
            },
        }
        layer = [bars]
        if chance:
            layer.append(
                {
                    "data": {"values": [{"x": 0.5}]},
                    "mark": {"type": "rule", "strokeDash": [2, 3], "color": GREY, "strokeWidth": 2},
                    "encoding": {"x": {"field": "x", "type": "quantitative"}},
                }
            )
        return {"title": metric, "data": {"values": values}, "width": 300, "height": 26 * len(names), "layer": layer}

    head: dict = {"text": "How well each risk score ranks the positives", "anchor": "start", "fontSize": 16}
    if highlight in names:
        head.update(subtitle="orange = the score ranking the queue", subtitleColor=GREY, subtitleFontSize=12)
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": head,
        "hconcat": [
            panel("auroc", "AUROC", "AUROC (0.5 = chance, higher = better)", True),
            panel(capture_column, capture_column, "share of positives found (0–1)", False),
        ],
        "resolve": {"scale": {"y": "shared"}},
        "config": {"axis": {"labelLimit": 160, "titleFontWeight": "normal"}},
    }
