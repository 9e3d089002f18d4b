"""The certificate's Vega-Lite charts (``core.viz.certificate_spec``) against their plotly twins:
the same points, bars, colours, flip markers and titles, and the same errors for bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import viz
from core.viz.certificate import _FLIPPED, _KEPT


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def _marks(spec: dict, kind: str) -> list[dict]:
    return [layer for layer in _layers(spec) if layer["mark"]["type"] == kind]


def _texts(spec: dict) -> list[str]:
    return [
        layer["encoding"]["text"]["value"] for layer in _marks(spec, "text") if "value" in layer["encoding"]["text"]
    ]


def _state_colour(spec: dict, state: str) -> str:
    scale = _marks(spec, "point")[0]["encoding"]["color"]["scale"]
    return scale["range"][scale["domain"].index(state)]


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 9), data=st.data())
def test_trajectory_spec_shows_the_figures_points_colours_and_flip(depth, data):
    path = [f"group {g}" for g in range(depth)]
    margins = data.draw(st.lists(st.floats(-5, 5), min_size=depth + 1, max_size=depth + 1))
    proba = data.draw(st.lists(st.floats(0, 1), min_size=depth + 1, max_size=depth + 1))
    k = data.draw(st.integers(1, depth + 1))
    predicted = [f"class {i % 2}" for i in range(depth + 1)]
    fig = viz.trajectory_figure(path, margins, proba, flip_budget=k, predicted=predicted, class_label="bad")
    specs = viz.trajectory_spec(path, margins, proba, flip_budget=k, predicted=predicted, class_label="bad")
    rows = specs.margin["data"]["values"]
    assert specs.probability["data"] == specs.margin["data"]
    assert [r["margin"] for r in rows] == pytest.approx(list(fig.data[0].y), abs=0)
    assert [r["proba"] for r in rows] == pytest.approx(list(fig.data[1].y), abs=0)
    assert [r["prediction"] for r in rows] == predicted
    colours = [_state_colour(specs.margin, r["state"]) for r in rows]
    assert colours == list(fig.data[0].marker.color) == list(fig.data[1].marker.color)
    assert set(colours) <= {_KEPT, _FLIPPED}
    # The flip step: the dashed rule on step k* in both panels, and the same note as the figure.
    figure_rules = sorted({s.x0 for s in fig.layout.shapes if s.line.dash == "dash"})  # one per panel
    for spec in (specs.margin, specs.probability):
        rules = [layer["encoding"]["x"]["datum"] for layer in _marks(spec, "rule") if "x" in layer["encoding"]]
        assert rules == figure_rules == ([k] if k <= depth else [])
    assert _texts(specs.margin) == [a.text for a in fig.layout.annotations]
    note = [layer for layer in _marks(specs.margin, "text")][0]
    assert note["encoding"]["x"]["datum"] == fig.layout.annotations[0].x
    assert note["mark"]["align"] == fig.layout.annotations[0].xanchor
    # The step labels: the figure's tick texts, line by line.
    axis = _marks(specs.probability, "point")[0]["encoding"]["x"]["axis"]
    ticks = fig.layout.xaxis2.ticktext
    assert axis["values"] == list(range(depth + 1))
    lines = re.findall(r"\[([^\[\]]*)\]", axis["labelExpr"].split("][datum")[0][1:])
    assert [[w.strip("'") for w in line.split("','")] for line in lines] == [t.split("<br>") for t in ticks]
    assert specs.probability["title"]["text"] == "P(bad) along the path"


def test_a_step_label_with_a_quote_stays_one_vega_string():
    specs = viz.trajectory_spec(["it's"], [1.0, -1.0], [0.8, 0.3], flip_budget=1)
    assert "'it\\'s'" in _marks(specs.probability, "point")[0]["encoding"]["x"]["axis"]["labelExpr"]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(flip_budget=0),
        dict(flip_budget=4),
        dict(flip_budget=2, predicted=["a"]),
        dict(flip_budget=2, margins=[1.0, 0.5]),
    ],
)
def test_trajectory_spec_rejects_what_the_figure_rejects(kwargs):
    args = dict(path=["a", "b"], margins=[1.0, 0.5, -0.2], proba=[0.7, 0.6, 0.4]) | kwargs
    with pytest.raises(ValueError) as figure_error:
        viz.trajectory_figure(args.pop("path"), args.pop("margins"), args.pop("proba"), **args)
    args = dict(path=["a", "b"], margins=[1.0, 0.5, -0.2], proba=[0.7, 0.6, 0.4]) | kwargs
    with pytest.raises(ValueError) as spec_error:
        viz.trajectory_spec(args.pop("path"), args.pop("margins"), args.pop("proba"), **args)
    assert str(spec_error.value) == str(figure_error.value)


def test_collapse_spec_shows_the_figures_bars_and_levels():
    c = np.array([0.0, 0.4, 0.8, 1.05, 1.3])
    fig = viz.collapse_figure(c, rcma=float(c.mean()), path=["a", "b", "c", "d"])
    spec = viz.collapse_spec(c, rcma=float(c.mean()), path=["a", "b", "c", "d"])
    rows = spec["data"]["values"]
    assert [r["c"] for r in rows] == list(fig.data[0].y)
    assert [r["step"] for r in rows] == ["0 intact", "1 −a", "2 −b", "3 −c", "4 −d"]
    levels = [layer["encoding"]["y"]["datum"] for layer in _marks(spec, "rule")]
    assert levels == [s.y0 for s in fig.layout.shapes] == [pytest.approx(c.mean()), 1.0]
    assert _texts(spec) == [a.text for a in fig.layout.annotations]
    assert spec["title"]["text"] == fig.layout.title.text.split("<br>")[0].replace("<b>", "").replace("</b>", "")


def test_collapse_spec_rejects_a_path_of_another_length():
    with pytest.raises(ValueError, match=r"`path` must have length 2 \(len\(collapse\) - 1\); got 1"):
        viz.collapse_spec([0.0, 0.5, 1.0], rcma=0.5, path=["a"])


@pytest.mark.parametrize("margin0", [None, 2.5])
def test_degradation_spec_shows_the_figures_curves_and_stars(margin0):
    lam = [0.25, 0.5, 0.75, 1.0]
    curves = {"attenuate_all": [1.5, 0.4, -0.3, -1.0], "attenuate_single": [2.0, 1.8, 1.7, 1.6]}
    stars = {"attenuate_all": 0.75, "attenuate_single": np.inf}
    fig = viz.degradation_figure(lam, curves, stars, margin0=margin0)
    spec = viz.degradation_spec(lam, curves, stars, margin0=margin0)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    points = _marks(spec, "line")[0]["data"]["values"]
    for trace in lines:
        mine = [(r["severity"], r["margin"]) for r in points if r["operator"] == trace.name]
        assert mine == list(zip(trace.x, trace.y))
    figure_stars = [(t.x[0], t.y[0]) for t in fig.data if t.mode == "markers"]
    star_rows = _marks(spec, "point")[0]["data"]["values"]
    assert [(r["severity"], r["margin"]) for r in star_rows] == figure_stars == [(0.75, -0.3)]
    assert [r["label"] for r in star_rows] == [a.text for a in fig.layout.annotations]
    colour = _marks(spec, "line")[0]["encoding"]["color"]["scale"]
    assert dict(zip(colour["domain"], colour["range"])) == {t.name: t.line.color for t in lines}


def test_degradation_spec_without_a_flip_draws_no_star():
    spec = viz.degradation_spec([0.5, 1.0], {"attenuate_all": [1.0, 0.5]}, {"attenuate_all": np.inf})
    assert not _marks(spec, "point") and not _marks(spec, "text")


@pytest.mark.parametrize("top_n", [None, 1, 2, 5])
def test_drops_spec_shows_the_figures_bars_fold_and_title(top_n):
    names, drops = ["a", "b", "c", "d", "e"], [0.2, 0.9, -0.1, 0.5, 0.05]
    fig = viz.drops_figure(names, drops, path=["b", "e"], top_n=top_n)
    spec = viz.drops_spec(names, drops, path=["b", "e"], top_n=top_n)
    rows = spec["data"]["values"]
    bar = fig.data[0]
    assert [r["group"] for r in rows] == list(bar.y)
    assert [r["drop"] for r in rows] == list(bar.x)
    assert [r["colour"] for r in rows] == list(bar.marker.color)
    assert [r["note"] for r in rows] == [h.replace("<br>", " · ") for h in bar.hovertext]
    assert spec["title"]["text"] == fig.layout.title.text.split("<br>")[0].replace("<b>", "").replace("</b>", "")


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_drops_spec_rejects_a_bad_top_n(bad):
    with pytest.raises(ValueError, match=r"`top_n` must be a positive int or None"):
        viz.drops_spec(["a", "b"], [0.1, 0.2], top_n=bad)


def test_whatif_spec_shows_both_inputs_of_every_class():
    fig = viz.whatif_figure(["good", "bad"], [0.8, 0.2], [0.4, 0.6])
    spec = viz.whatif_spec(["good", "bad"], [0.8, 0.2], [0.4, 0.6])
    rows = spec["data"]["values"]
    for trace in fig.data:
        mine = [(r["class"], r["probability"]) for r in rows if r["input"] == trace.name]
        assert mine == list(zip(trace.x, trace.y))
    scale = spec["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"])) == {t.name: t.marker.color for t in fig.data}
    with pytest.raises(ValueError, match=r"`current` must have length 2; got 3"):
        viz.whatif_spec(["good", "bad"], [0.8, 0.2], [0.4, 0.3, 0.3])
