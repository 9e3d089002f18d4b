"""The charts of one certificate (SPEC A.3) as Vega-Lite specs: the one definition the
dashboard, the HTML report and the notebook draw (issue 39).

The explorer redraws a certificate on every row click, and the Triage queue on every *Save &
next*. Drawn by plotly.js, its four charts and the what-if chart were most of a row click: in
paired browser probes (48 clicks each) the click took 0.37 s at the median and 0.54 s at p95
with plotly, 0.28 / 0.35 s with these specs; with no chart at all (another set), 0.23 / 0.26 s
(``docs/performance.md``). Their plotly twins, which the report and the notebook drew, are
gone: the report embeds these specs (:mod:`core.report`), the notebook shows them through
:class:`core.viz.display.VegaLiteChart`.

Each returns a Vega-Lite 5 spec with its data inline, laid out by
:func:`core.viz._style.finish_spec` (the trajectory two: :class:`TrajectorySpecs`); the points
and bars come from the validated helpers of :mod:`core.viz.certificate`
(:func:`~core.viz.certificate.trajectory_points`, :func:`~core.viz.certificate.fold_drops`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.viz._style import GREY, LIGHT_GREY, OKABE_ITO, finish_spec, is_finite, series_colours
from core.viz.certificate import (
    _FLIPPED,
    _KEPT,
    _vector,
    flip_note_align,
    fold_drops,
    trajectory_points,
)

__all__ = ["TrajectorySpecs", "collapse_spec", "degradation_spec", "drops_spec", "trajectory_spec", "whatif_spec"]

#: The two states of a trajectory point, in the colour key's order.
_STATES = ("prediction unchanged", "flipped")
_STEP_TITLE = "groups removed (cumulative, → baseline)"
#: The y axis of both trajectory panels: labels and ticks in a fixed width.
_Y_AXIS = {"minExtent": 44, "maxExtent": 44}
#: A five-pointed star (Vega's symbols have none), for λ*.
_STAR = "M0,-1L0.22,-0.31L0.95,-0.31L0.36,0.12L0.59,0.81L0,0.38L-0.59,0.81L-0.36,0.12L-0.95,-0.31L-0.22,-0.31Z"


def _lines(label: str) -> list[str]:
    """A tick label of :func:`core.viz.certificate._step_labels` as Vega's multi-line text."""
    return label.split("<br>")


def _step_axis(steps: np.ndarray, labels: list[str], title: str | None) -> dict:
    """A quantitative step axis labelled with the group removed at each step (multi-line)."""
    lookup = "[" + ",".join("[" + ",".join(_js(line) for line in _lines(lab)) + "]" for lab in labels) + "]"
    return {
        "values": steps.tolist(),
        "labelExpr": f"{lookup}[datum.value]",
        "labelAngle": 0,
        "labelFontSize": 11,
        "grid": False,
        "title": title,
    }


def _js(text: str) -> str:
    """``text`` as a Vega expression string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class TrajectorySpecs:
    """The removal trajectory as two charts for one column, one under the other.

    Two charts, not one Vega-Lite concatenation: Vega-Lite fits only a single or layered view to
    its container's width, and Streamlit's stretched concatenation ran past the column by its
    axis (into the chart beside it).

    Attributes
    ----------
    margin : dict
        The margin ``m_y(x^(k))`` per step (nats), with the chart's title, the boundary at 0 and
        the flip step ``k*`` marked.
    probability : dict
        The probability of the original class per step, the step axis labelled with the groups
        removed, and the colour key.
    """

    margin: dict
    probability: dict


def trajectory_spec(
    path: Sequence[str],
    margins: ArrayLike,
    proba: ArrayLike,
    *,
    flip_budget: int,
    predicted: Sequence[str] | None = None,
    class_label: str = "original class",
) -> TrajectorySpecs:
    """Removal trajectory as Vega-Lite specs: two panels, margin above and the probability of
    the original class below, on the same step axis; the flip step marked by a dashed line.

    Parameters
    ----------
    path : sequence of str, length K
        Group removed at step ``k = 1 … K`` (the certificate's path ``π_x``).
    margins : array-like of shape (K + 1,)
        ``m_y(x^(k))`` for ``k = 0 … K`` (nats; negative = flipped).
    proba : array-like of shape (K + 1,)
        Probability of the original class ``p̃_y(x^(k))`` (NaN where unknown).
    flip_budget : int
        ``k*`` in ``1 … K + 1`` (``K + 1`` = no flip within depth ``K``).
    predicted : sequence of str, length K + 1, optional
        Predicted class name at every step (shown in the tooltip).
    class_label : str
        Name of the original predicted class, used in axis titles.

    Returns
    -------
    TrajectorySpecs
        One data row per step ``k = 0 … K``: ``k``, ``step`` (``"3 −income"``), ``margin``,
        ``proba``, ``prediction`` and ``state`` (``"prediction unchanged"`` / ``"flipped"``).
    """
    points = trajectory_points(path, margins, proba, flip_budget=flip_budget, predicted=predicted)
    depth, m, p, k_star, steps = points.depth, points.margins, points.proba, points.flip_budget, points.steps
    labels, hover_steps, hover_pred = list(points.labels), points.hover_steps, points.predicted
    values = [
        {
            "k": int(k),
            "step": hover_steps[k],
            "margin": float(m[k]),
            "proba": float(p[k]) if np.isfinite(p[k]) else None,
            "prediction": str(hover_pred[k]),
            "state": _STATES[int(points.flipped[k])],
        }
        for k in steps
    ]
    x_scale = {"domain": [-0.5, depth + 0.5], "nice": False, "zero": False}
    colour = {
        "field": "state",
        "type": "nominal",
        "scale": {"domain": list(_STATES), "range": [_KEPT, _FLIPPED]},
        "legend": None,  # named in the subtitle
    }
    flip_marks: list[dict] = []
    if k_star <= depth:
        flip_marks.append(
            {
                "mark": {"type": "rule", "color": _FLIPPED, "strokeDash": [6, 4], "strokeWidth": 2},
                "encoding": {"x": {"datum": k_star, "type": "quantitative"}},
            }
        )
    note = (
        {"text": f"flip at k* = {k_star}", "x": k_star, "align": flip_note_align(k_star, depth), "colour": _FLIPPED}
        if k_star <= depth
        else {"text": f"no flip within K = {depth}", "x": depth, "align": "right", "colour": _KEPT}
    )
    note_mark = {
        "mark": {
            "type": "text",
            "align": note["align"],
            "baseline": "top",
            "dx": 3 if note["align"] == "left" else -3,
            "dy": 2,
            "fontSize": 12,
            "color": note["colour"],
        },
        "encoding": {
            "x": {"datum": note["x"], "type": "quantitative"},
            "y": {"value": 0},
            "text": {"value": note["text"]},
        },
    }

    def panel(field: str, title: str, shape: str, dash: list[int] | None, axis: dict, *, y_scale: dict) -> dict:
        line = {"type": "line", "color": GREY, "strokeWidth": 2}
        if dash:
            line["strokeDash"] = dash
        tooltip = [
            {"field": "step", "title": "step"},
            {"field": field, "type": "quantitative", "title": title.split(" (")[0], "format": ".3f"},
            {"field": "prediction"},
        ]
        x = {"field": "k", "type": "quantitative", "title": _STEP_TITLE, "scale": x_scale, "axis": axis}
        # One y-axis width for both panels, so that their steps line up in the column.
        y = {"field": field, "type": "quantitative", "title": title, "scale": y_scale, "axis": _Y_AXIS}
        return {
            "layer": [
                {"mark": line, "encoding": {"x": x, "y": y}},
                {
                    "mark": {
                        "type": "point",
                        "shape": shape,
                        "filled": True,
                        "size": 110,
                        "opacity": 1,
                        "stroke": "white",
                        "strokeWidth": 1,
                    },
                    "encoding": {"x": x, "y": y, "color": colour, "tooltip": tooltip},
                },
                *flip_marks,
            ]
        }

    margin = panel(
        "margin",
        "margin (nats; 0 = boundary)",
        "circle",
        None,
        {"labels": False, "ticks": False, "title": None, "grid": False},
        y_scale={"zero": False},
    )
    # The boundary is named by the axis title: a text on the line sat under the path's points.
    margin["layer"].insert(
        0, {"mark": {"type": "rule", "color": LIGHT_GREY, "strokeWidth": 2}, "encoding": {"y": {"datum": 0}}}
    )
    margin["layer"].append(note_mark)
    probability = panel(
        "proba",
        f"P({class_label})",
        "square",
        [2, 3],
        _step_axis(steps, labels, _STEP_TITLE),
        y_scale={"domain": [0, 1.05], "nice": False},
    )
    data = {"values": values}
    return TrajectorySpecs(
        margin=finish_spec(
            {"data": data, **margin},
            title="Removal trajectory",
            subtitle="blue = prediction unchanged · vermillion = flipped",
            height=230,
        ),
        probability=finish_spec({"data": data, **probability}, title=f"P({class_label}) along the path", height=150),
    )


def collapse_spec(collapse: ArrayLike, *, rcma: float, path: Sequence[str] | None = None) -> dict:
    """Margin-collapse curve ``c_k`` as a Vega-Lite spec: the bars ``c_k``, RCMA dashed and
    ``c = 1`` dotted. One data row per step: ``k``, ``step``, ``c``.

    Parameters
    ----------
    collapse : array-like of shape (K + 1,)
        ``c_k = max(0, (m − m_k) / (|m| + 1e-8))``, ``c_0 = 0`` (unitless; 1 = margin gone,
        > 1 = flipped).
    rcma : float
        ``mean_k c_k``.
    path : sequence of str, length K, optional
        Group names for the step axis."""
    c = _vector(collapse, "collapse")
    depth = c.shape[0] - 1
    if path is not None and len(path) != depth:
        raise ValueError(f"`path` must have length {depth} (len(collapse) - 1); got {len(path)}.")
    names = ["intact"] + [f"−{g}" for g in path] if path is not None else [""] * (depth + 1)
    values = [{"k": k, "step": f"{k} {names[k]}".strip(), "c": float(c[k])} for k in range(depth + 1)]

    def level(y: float, dash: list[int], colour: str, text: str, *, left: bool) -> list[dict]:
        return [
            {
                "mark": {"type": "rule", "color": colour, "strokeDash": dash, "strokeWidth": 2},
                "encoding": {"y": {"datum": y}},
            },
            {
                # Short labels at opposite ends of their lines: in a narrow column longer ones ran
                # into each other.
                "mark": {
                    "type": "text",
                    "align": "left" if left else "right",
                    "baseline": "bottom",
                    "dy": -3,
                    "color": colour if left else GREY,
                },
                "encoding": {
                    "x": {"value": 4} if left else {"value": "width"},
                    "y": {"datum": y},
                    "text": {"value": text},
                },
            },
        ]

    spec = {
        "data": {"values": values},
        "layer": [
            {
                "mark": {"type": "bar", "color": OKABE_ITO["sky_blue"], "stroke": _KEPT, "strokeWidth": 1},
                "encoding": {
                    "x": {
                        "field": "k",
                        "type": "ordinal",
                        "title": "groups removed (step k)",
                        "scale": {"paddingInner": 0, "paddingOuter": 0.1},
                        "axis": {"labelAngle": 0},
                    },
                    "y": {"field": "c", "type": "quantitative", "title": "margin loss c_k", "scale": {"zero": True}},
                    "tooltip": [
                        {"field": "step"},
                        {"field": "c", "type": "quantitative", "title": "c_k", "format": ".3f"},
                    ],
                },
            },
            *level(float(rcma), [6, 4], OKABE_ITO["orange"], f"RCMA = {float(rcma):.3f}", left=True),
            *level(1.0, [2, 3], GREY, "c = 1: margin gone", left=False),
        ],
    }
    return finish_spec(
        spec, title="Margin collapse along the path", subtitle="dashed = RCMA, the mean bar height", height=300
    )


def degradation_spec(
    severities: ArrayLike,
    curves: Mapping[str, ArrayLike],
    lambda_star: Mapping[str, float],
    *,
    margin0: float | None = None,
) -> dict:
    """Margin of the original class under each degradation operator as severity λ grows, as a
    Vega-Lite spec: one line per operator, ★ at λ* with its value, the decision boundary at
    margin 0. Data rows: ``operator``, ``severity``, ``margin``; and one per finite λ*:
    ``operator``, ``severity`` (λ*), ``margin`` (at the nearest grid severity) and ``label``.

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
        Margin of the intact input, drawn at λ = 0."""
    lam = _vector(severities, "severities")
    points: list[dict] = []
    stars: list[dict] = []
    colours = series_colours(len(curves))
    for name, curve in curves.items():
        curve_m = _vector(curve, f"curves[{name!r}]", length=lam.shape[0])
        x, y = lam, curve_m
        if margin0 is not None:
            x, y = np.concatenate([[0.0], lam]), np.concatenate([[margin0], curve_m])
        points += [{"operator": name, "severity": float(a), "margin": float(b)} for a, b in zip(x, y)]
        star = lambda_star.get(name, np.inf)
        if is_finite(star):
            at = int(np.argmin(np.abs(lam - float(star))))
            stars.append(
                {
                    "operator": name,
                    "severity": float(star),
                    "margin": float(curve_m[at]),
                    "label": f"λ* = {float(star):.2f}",
                }
            )
    colour = {
        "field": "operator",
        "type": "nominal",
        "scale": {"domain": list(curves), "range": colours},
        "legend": {"title": None},
    }
    x = {
        "field": "severity",
        "type": "quantitative",
        "title": "severity λ (0 = intact, 1 = baseline)",
        "scale": {"domain": [-0.02, 1.05], "nice": False},
    }
    y = {"field": "margin", "type": "quantitative", "title": "margin (nats)", "scale": {"zero": False}}
    layers: list[dict] = [
        # The boundary is named in the subtitle: the ★ of λ* sit on this line and would cover a text.
        {"mark": {"type": "rule", "color": LIGHT_GREY, "strokeWidth": 2}, "encoding": {"y": {"datum": 0}}},
        {
            "data": {"values": points},
            "mark": {"type": "line", "point": {"size": 30}, "strokeWidth": 2},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour,
                "tooltip": [
                    {"field": "operator"},
                    {"field": "severity", "type": "quantitative", "title": "λ", "format": ".2f"},
                    {"field": "margin", "type": "quantitative", "title": "margin (nats)", "format": ".3f"},
                ],
            },
        },
    ]
    if stars:
        star_colour = {**colour, "legend": None}
        layers += [
            {
                "data": {"values": stars},
                "mark": {
                    "type": "point",
                    "shape": _STAR,
                    "size": 260,
                    "filled": True,
                    "opacity": 1,
                    "stroke": "black",
                    "strokeWidth": 1,
                },
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": star_colour,
                    "tooltip": [
                        {"field": "operator"},
                        {"field": "severity", "type": "quantitative", "title": "first flip at λ*", "format": ".2f"},
                    ],
                },
            },
            {
                "data": {"values": stars},
                "mark": {"type": "text", "dy": -16, "fontWeight": "bold"},
                "encoding": {"x": x, "y": y, "color": star_colour, "text": {"field": "label"}},
            },
        ]
    return finish_spec(
        {"layer": layers},
        title="Partial degradation per operator",
        subtitle="★ = λ*, the first severity that flips; grey line = decision boundary (margin 0)",
        height=300,
    )


def drops_spec(groups: Sequence[str], drops: ArrayLike, *, path: Sequence[str] = (), top_n: int | None = None) -> dict:
    """One-step margin drops ``δ_g`` as a Vega-Lite spec, largest first, groups on the removal
    path highlighted (:func:`core.viz.certificate.fold_drops`). One data row per bar:
    ``group``, ``drop`` (nats), ``colour`` and ``note`` (its tooltip, one line).

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
        folded group supports the prediction more than that bar shows); None shows all."""
    fold = fold_drops(groups, drops, path=path, top_n=top_n)
    values = [
        {"group": n, "drop": v, "colour": c, "note": h.replace("<br>", " · ")}
        for n, v, c, h in zip(fold.names, fold.values, fold.colours, fold.hover)
    ]
    spec = {
        "data": {"values": values},
        "layer": [
            {
                "mark": {"type": "bar"},
                "encoding": {
                    "y": {
                        "field": "group",
                        "type": "nominal",
                        "sort": None,
                        "title": "evidence group",
                        "axis": {"labelLimit": 180},
                    },
                    "x": {"field": "drop", "type": "quantitative", "title": "margin drop δ_g (nats)"},
                    "color": {"field": "colour", "type": "nominal", "scale": None, "legend": None},
                    "tooltip": [{"field": "note", "title": "drop"}],
                },
            },
            {"mark": {"type": "rule", "color": "black", "strokeWidth": 1}, "encoding": {"x": {"datum": 0}}},
        ],
    }
    return finish_spec(
        spec, title=fold.title, subtitle="blue = on the removal path", height=max(200, 24 * len(fold.names))
    )


def whatif_spec(class_names: Sequence[str], original: ArrayLike, current: ArrayLike) -> dict:
    """Class probabilities of the original input (grey) beside those of the edited, what-if
    input (orange), as a Vega-Lite spec. Data rows: ``class``,
    ``input``, ``probability``."""
    p0 = _vector(original, "original", length=len(class_names))
    p1 = _vector(current, "current", length=len(class_names))
    inputs = ("original input", "with selected groups at baseline")
    values = [
        {"class": str(name), "input": which, "probability": float(prob)}
        for which, probs in zip(inputs, (p0, p1))
        for name, prob in zip(class_names, probs)
    ]
    spec = {
        "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "x": {
                "field": "class",
                "type": "nominal",
                "title": "class",
                "sort": [str(c) for c in class_names],
                "axis": {"labelAngle": 0},
            },
            "xOffset": {"field": "input", "sort": list(inputs)},
            "y": {
                "field": "probability",
                "type": "quantitative",
                "title": "predicted probability",
                "scale": {"domain": [0, 1.05], "nice": False},
            },
            "color": {
                "field": "input",
                "type": "nominal",
                "scale": {"domain": list(inputs), "range": [GREY, OKABE_ITO["orange"]]},
            },
            "tooltip": [
                {"field": "class"},
                {"field": "input"},
                {"field": "probability", "type": "quantitative", "format": ".3f"},
            ],
        },
    }
    return finish_spec(spec, title="What-if prediction", height=260)
