"""The data of every chart that the dashboard, the report and the notebook draw from one Vega-Lite
spec (issue 39): each spec against hand values or a naive reference, and its bad input refused.

These charts had plotly twins, compared with the specs in ``test_certificate_spec.py``; the twins
went with that file (and with ``test_wide_figures.py``), and the data checks their tests made
are here, on the specs.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import viz
from core.viz._style import GREY, LIGHT_GREY, OKABE_ITO, series_styles
from core.viz.certificate import _FLIPPED, _KEPT, _label_width, _step_labels, _wrap
from core.viz.ranking import _DASH_ARRAYS

N_COLUMNS = 500


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def _marks(spec: dict, kind: str) -> list[dict]:
    return [layer for layer in _layers(spec) if kind == _kind(layer["mark"])]


def _kind(mark: str | dict) -> str:
    return mark if isinstance(mark, str) else mark["type"]


def _texts(spec: dict) -> list[str]:
    return [
        layer["encoding"]["text"]["value"] for layer in _marks(spec, "text") if "value" in layer["encoding"]["text"]
    ]


def _state_colour(spec: dict, state: str) -> str:
    scale = _marks(spec, "point")[0]["encoding"]["color"]["scale"]
    return scale["range"][scale["domain"].index(state)]


# ---------------------------------------------------------------------------------- trajectory
@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 9), data=st.data())
def test_trajectory_spec_shows_every_step_its_state_and_the_flip(depth, data):
    path = [f"group {g}" for g in range(depth)]
    margins = data.draw(st.lists(st.floats(-5, 5), min_size=depth + 1, max_size=depth + 1))
    proba = data.draw(st.lists(st.floats(0, 1), min_size=depth + 1, max_size=depth + 1))
    k = data.draw(st.integers(1, depth + 1))
    predicted = [f"class {i % 2}" for i in range(depth + 1)]
    specs = viz.trajectory_spec(path, margins, proba, flip_budget=k, predicted=predicted, class_label="bad")
    rows = specs.margin["data"]["values"]
    assert specs.probability["data"] == specs.margin["data"]
    assert [r["k"] for r in rows] == list(range(depth + 1))
    assert [r["margin"] for r in rows] == margins and [r["proba"] for r in rows] == proba
    assert [r["prediction"] for r in rows] == predicted
    assert [r["step"] for r in rows] == ["0 intact", *(f"{i} −group {i - 1}" for i in range(1, depth + 1))]
    # Steps from k* on are flipped (vermillion), the earlier ones blue.
    colours = [_state_colour(specs.margin, r["state"]) for r in rows]
    assert colours == [_KEPT] * (k if k <= depth else depth + 1) + [_FLIPPED] * (depth + 1 - k if k <= depth else 0)
    # The flip step: a dashed rule on step k* itself (the first flipped point) in both panels,
    # and its note, running into the plot (issue 40: it was drawn between steps k* - 1 and k*).
    for spec in (specs.margin, specs.probability):
        rules = [layer["encoding"]["x"]["datum"] for layer in _marks(spec, "rule") if "x" in layer["encoding"]]
        assert rules == ([k] if k <= depth else [])
    if k <= depth:
        first_flipped = next(r["k"] for r in rows if _state_colour(specs.margin, r["state"]) == _FLIPPED)
        assert rules == [first_flipped]
        note = _marks(specs.margin, "text")[0]
        assert note["encoding"]["x"]["datum"] == k
        assert note["mark"]["align"] == ("right" if k > depth / 2 else "left")
    assert _texts(specs.margin) == [f"flip at k* = {k}" if k <= depth else f"no flip within K = {depth}"]
    axis = _marks(specs.probability, "point")[0]["encoding"]["x"]["axis"]
    assert axis["values"] == list(range(depth + 1))
    lines = re.findall(r"\[([^\[\]]*)\]", axis["labelExpr"].split("][datum")[0][1:])
    expected = _step_labels(path, width=_label_width(depth))
    assert [[w.strip("'") for w in line.split("','")] for line in lines] == [t.split("<br>") for t in expected]
    assert len(lines) == depth + 1
    assert specs.probability["title"]["text"] == "P(bad) along the path"


def test_trajectory_spec_hand_case():
    specs = viz.trajectory_spec(
        ["income", "debt", "age"], [2.0, 0.5, -0.3, -1.0], [0.9, 0.6, 0.45, 0.3], flip_budget=2, class_label="good"
    )
    rows = specs.margin["data"]["values"]
    assert [r["state"] for r in rows] == ["prediction unchanged"] * 2 + ["flipped"] * 2
    assert [r["step"] for r in rows] == ["0 intact", "1 −income", "2 −debt", "3 −age"]
    assert _texts(specs.margin) == ["flip at k* = 2"]
    assert specs.margin["title"]["subtitle"] == "blue = prediction unchanged · vermillion = flipped"


def test_a_step_label_with_a_quote_stays_one_vega_string():
    specs = viz.trajectory_spec(["it's"], [1.0, -1.0], [0.8, 0.3], flip_budget=1)
    assert "'it\\'s'" in _marks(specs.probability, "point")[0]["encoding"]["x"]["axis"]["labelExpr"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"margins": [1.0, 0.5]}, r"`margins` must have length 3; got 2"),
        ({"flip_budget": 4}, r"`flip_budget` must be an integer in 1..3"),
        ({"flip_budget": 0}, r"`flip_budget` must be an integer in 1..3"),
        ({"predicted": ["x"]}, r"`predicted` must have length 3; got 1"),
    ],
    ids=["short-margins", "budget-too-big", "budget-zero", "short-predicted"],
)
def test_trajectory_spec_rejects_inconsistent_inputs(kwargs, match):
    args = dict(path=["a", "b"], margins=[1.0, 0.5, 0.1], proba=[0.8, 0.7, 0.6], flip_budget=3) | kwargs
    with pytest.raises(ValueError, match=match):
        viz.trajectory_spec(args.pop("path"), args.pop("margins"), args.pop("proba"), **args)


@pytest.mark.parametrize("depth", range(1, 13))
def test_trajectory_step_labels_fit_side_by_side_in_a_420px_column(depth):
    """Every line of every step label fits its slot of the narrowest plot (340 px inside a
    420 px column) at the step axis' font, so neighbours never overlap."""
    path = [f"group_number_{i}_with_a_long_name" for i in range(depth)]
    specs = viz.trajectory_spec(path, np.linspace(2, -1, depth + 1), np.linspace(0.9, 0.2, depth + 1), flip_budget=1)
    axis = _marks(specs.probability, "point")[0]["encoding"]["x"]["axis"]
    words = re.findall(r"'((?:[^'\\]|\\.)*)'", axis["labelExpr"])
    slot = 340 / (depth + 1)
    assert max(map(len, words)) * axis["labelFontSize"] * 0.51 <= slot  # ~0.51 em per character
    assert axis["labelAngle"] == 0 and axis["values"] == list(range(depth + 1))
    scale = _marks(specs.probability, "point")[0]["encoding"]["x"]["scale"]
    assert scale["domain"] == [-0.5, depth + 0.5]  # room for the first and last tick


def test_wrapped_labels_fit_their_width_and_keep_every_step():
    for width in (6, 10, 16):
        for text in ("−worst concave points", "−emp_length", "−x", "−averyveryverylongwordwithoutspaces here"):
            lines = _wrap(text, width).split("<br>")
            assert 1 <= len(lines) <= 2 and all(len(line) <= width for line in lines), (text, width, lines)
    assert _wrap("−mean radius", 16) == "−mean radius"
    labels = _step_labels(["worst concave points", "mean fractal dimension", "a", "b", "c"], width=16)
    assert [lab.split("<br>")[0] for lab in labels] == ["0", "1", "2", "3", "4", "5"]


# ---------------------------------------------------------------------------------- collapse
def test_collapse_spec_draws_c_k_rcma_and_the_gone_level():
    c = np.array([0.0, 0.4, 0.8, 1.05, 1.3])
    spec = viz.collapse_spec(c, rcma=float(c.mean()), path=["a", "b", "c", "d"])
    rows = spec["data"]["values"]
    assert [r["c"] for r in rows] == c.tolist()
    assert [r["step"] for r in rows] == ["0 intact", "1 −a", "2 −b", "3 −c", "4 −d"]
    levels = [layer["encoding"]["y"]["datum"] for layer in _marks(spec, "rule")]
    assert levels == [pytest.approx(c.mean()), 1.0]
    assert _texts(spec) == [f"RCMA = {c.mean():.3f}", "c = 1: margin gone"]
    assert spec["title"]["text"] == "Margin collapse along the path"


def test_collapse_spec_rejects_a_path_of_another_length():
    with pytest.raises(ValueError, match=r"`path` must have length 2 \(len\(collapse\) - 1\); got 1"):
        viz.collapse_spec([0.0, 0.5, 1.0], rcma=0.5, path=["a"])


# ---------------------------------------------------------------------------------- degradation
@pytest.mark.parametrize("margin0", [None, 2.5])
def test_degradation_spec_draws_each_curve_and_the_star_at_lambda_star(margin0):
    lam = [0.25, 0.5, 0.75, 1.0]
    curves = {"attenuate_all": [1.5, 0.4, -0.3, -1.0], "attenuate_single": [2.0, 1.8, 1.7, 1.6]}
    stars = {"attenuate_all": 0.75, "attenuate_single": np.inf}
    spec = viz.degradation_spec(lam, curves, stars, margin0=margin0)
    points = _marks(spec, "line")[0]["data"]["values"]
    for name, margins in curves.items():
        expected = ([(0.0, margin0)] if margin0 is not None else []) + list(zip(lam, margins))
        assert [(r["severity"], r["margin"]) for r in points if r["operator"] == name] == expected
    star_rows = _marks(spec, "point")[0]["data"]["values"]
    assert [(r["operator"], r["severity"], r["margin"]) for r in star_rows] == [("attenuate_all", 0.75, -0.3)]
    assert [r["label"] for r in star_rows] == ["λ* = 0.75"]
    colour = _marks(spec, "line")[0]["encoding"]["color"]["scale"]
    assert len(set(colour["range"])) == len(colour["domain"]) == 2


def test_degradation_spec_without_a_flip_draws_no_star():
    spec = viz.degradation_spec([0.5, 1.0], {"attenuate_all": [1.0, 0.5]}, {"attenuate_all": np.inf})
    assert not _marks(spec, "point") and not _marks(spec, "text")


# ---------------------------------------------------------------------------------- drops
def test_drops_spec_sorts_largest_first_and_highlights_the_path():
    spec = viz.drops_spec(["a", "b", "c"], [0.1, 0.9, -0.2], path=["b"])
    rows = spec["data"]["values"]
    assert [r["group"] for r in rows] == ["b", "a", "c"]
    assert [r["drop"] for r in rows] == [0.9, 0.1, -0.2]
    assert [r["colour"] for r in rows] == [OKABE_ITO["blue"], GREY, GREY]
    assert [r["note"] for r in rows] == [f"{g} · δ = {d:.3f} nats" for g, d in (("b", 0.9), ("a", 0.1), ("c", -0.2))]


def test_drops_of_500_groups_show_the_top_n_and_fold_the_others():
    rng = np.random.default_rng(1)
    names = [f"g{j}" for j in range(N_COLUMNS)]
    drops = rng.normal(size=N_COLUMNS)
    spec = viz.drops_spec(names, drops, path=["g7", "g3"], top_n=15)
    rows = spec["data"]["values"]
    labels, values = [r["group"] for r in rows], [r["drop"] for r in rows]
    assert len(labels) == 16  # at most N + 1 bars
    ranked = sorted(range(N_COLUMNS), key=lambda j: (-drops[j], j))  # reference: a plain sort
    assert labels[:15] == [names[j] for j in ranked[:15]]
    assert values[:15] == pytest.approx([drops[j] for j in ranked[:15]])
    assert labels[15] == "485 other groups" and rows[15]["colour"] == LIGHT_GREY
    assert values[15] == pytest.approx(max(drops[j] for j in ranked[15:]))
    assert spec["title"]["text"] == "One-step drops δ_g: top 15 of 500 groups"
    assert spec["height"] < 800
    on_path = [r["colour"] for r in rows if r["group"] in ("g7", "g3")]
    assert on_path == [OKABE_ITO["blue"]] * len(on_path)


def test_drops_without_top_n_or_with_a_large_one_fold_nothing():
    names, drops = ["a", "b", "c"], [0.1, 0.9, -0.2]
    for top_n in (None, 3):
        assert [r["group"] for r in viz.drops_spec(names, drops, top_n=top_n)["data"]["values"]] == ["b", "a", "c"]
    rows = viz.drops_spec(names, drops, top_n=2)["data"]["values"]
    assert [r["group"] for r in rows] == ["b", "a", "1 other group"]
    assert [r["drop"] for r in rows] == pytest.approx([0.9, 0.1, -0.2])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_drops_spec_refuses_a_bad_top_n(bad):
    with pytest.raises(ValueError, match=r"`top_n` must be a positive int or None"):
        viz.drops_spec(["a", "b"], [0.1, 0.2], top_n=bad)


@given(st.lists(st.floats(-5, 5), min_size=1, max_size=60), st.integers(1, 70))
def test_drops_bar_count_and_values_invariant(drops, top_n):
    names = [f"g{j}" for j in range(len(drops))]
    values = [r["drop"] for r in viz.drops_spec(names, drops, top_n=top_n)["data"]["values"]]
    assert len(values) == (top_n + 1 if top_n < len(drops) else len(drops))
    shown = values[:top_n]
    assert shown == sorted(shown, reverse=True)
    if top_n < len(drops):  # the folded bar never exceeds the smallest shown drop
        assert values[-1] <= min(shown) + 1e-12


# ---------------------------------------------------------------------------------- what-if
def test_whatif_spec_shows_both_inputs_of_every_class():
    spec = viz.whatif_spec(["good", "bad"], [0.8, 0.2], [0.4, 0.6])
    rows = spec["data"]["values"]
    by_input: dict[str, list] = {}
    for r in rows:
        by_input.setdefault(r["input"], []).append((r["class"], r["probability"]))
    assert list(by_input.values()) == [[("good", 0.8), ("bad", 0.2)], [("good", 0.4), ("bad", 0.6)]]
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domain"] == list(by_input) and scale["range"] == [GREY, OKABE_ITO["orange"]]
    with pytest.raises(ValueError, match=r"`current` must have length 2; got 3"):
        viz.whatif_spec(["good", "bad"], [0.8, 0.2], [0.4, 0.3, 0.3])


# ---------------------------------------------------------------------------------- coverage
def _lines(spec: dict) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list] = {}
    for r in spec["data"]["values"]:
        out.setdefault(r["line"], []).append((r["budget"], r["found"]))
    return out


def test_coverage_spec_draws_each_curve_the_references_and_the_budget():
    q = np.array([0.05, 0.1, 0.5, 1.0])
    spec = viz.coverage_spec(
        q,
        {"fds": [0.3, 0.5, 0.9, 1.0], "confidence": [0.1, 0.2, 0.6, 1.0]},
        ceiling=np.minimum(1, q * 4),
        random=q,
        selected=0.1,
        highlight="fds",
    )
    lines = _lines(spec)
    assert list(lines) == ["fds", "confidence", "ceiling (best possible)", "random selection"]
    assert lines["fds"] == [(5.0, 0.3), (10.0, 0.5), (50.0, 0.9), (100.0, 1.0)]
    assert lines["ceiling (best possible)"] == list(zip([5.0, 10.0, 50.0, 100.0], [0.2, 0.4, 1.0, 1.0]))
    widths = {r["line"]: r["width"] for r in spec["data"]["values"]}
    assert widths["fds"] == 4 and widths["confidence"] == 2
    line = spec["layer"][0]["encoding"]
    assert line["color"]["scale"]["range"][-2:] == [GREY, GREY]
    assert line["strokeDash"]["scale"]["range"][-2:] == [_DASH_ARRAYS["dash"], _DASH_ARRAYS["dot"]]
    budget = spec["layer"][1]
    assert budget["data"]["values"] == [{"budget": 10.0, "text": "budget 10%"}]
    with pytest.raises(ValueError, match="fractions in"):
        viz.coverage_spec([0, 0.5], {"a": [0, 1]})
    with pytest.raises(ValueError, match=r"`curves\['a'\]` must have shape"):
        viz.coverage_spec([0.5, 1.0], {"a": [0.1]})
    with pytest.raises(ValueError, match=r"`ceiling` must have shape"):
        viz.coverage_spec([0.5, 1.0], {"a": [0.1, 1.0]}, ceiling=[1.0])


def test_coverage_lines_never_share_a_style_and_identical_curves_are_one_named_line():
    """Nine scores as on the Triage page of a binary model: the four confidence baselines rank
    alike (identical curves), the five certificate scores differ."""
    q = np.linspace(0.02, 1.0, 50)
    curves = {
        name: q ** (0.25 + 0.13 * i)
        for i, name in enumerate(("fds", "rcma", "inv_flip_budget", "degradation", "one_step"))
    }
    curves.update({name: np.sqrt(q) for name in ("max_softmax", "entropy", "margin", "neg_energy")})
    spec = viz.coverage_spec(q, curves, ceiling=np.minimum(1, q * 3), random=q, highlight="fds")
    encoding = spec["layer"][0]["encoding"]
    names = encoding["color"]["scale"]["domain"][:-2]  # the two grey references aside
    assert len(names) == 6  # five certificate scores + one line for the four identical baselines
    (merged,) = [n for n in names if "identical" in n]
    assert merged == "max_softmax = entropy = margin = neg_energy (identical ranking)"
    styles = list(zip(encoding["color"]["scale"]["range"], map(tuple, encoding["strokeDash"]["scale"]["range"])))
    assert len(set(styles[:-2])) == 6
    assert styles[:-2] == [(c, tuple(_DASH_ARRAYS[d])) for c, d in series_styles(6)]


def test_coverage_merges_only_exactly_equal_curves():
    spec = viz.coverage_spec(np.array([0.5, 1.0]), {"a": [0.4, 1.0], "b": [0.4 + 1e-9, 1.0]})
    assert list(_lines(spec)) == ["a", "b"]


# ---------------------------------------------------------------------------------- score metrics
def test_score_metrics_spec_sorted_by_auroc_with_nan_last():
    table = pd.DataFrame({"score": ["a", "fds", "c"], "auroc": [0.6, 0.9, np.nan], "capture@10": [0.2, 0.5, 0.1]})
    spec = viz.score_metrics_spec(table, capture_column="capture@10", highlight="fds")
    auroc, capture = spec["hconcat"]
    assert [(r["score"], r["value"]) for r in auroc["data"]["values"]] == [("fds", 0.9), ("a", 0.6), ("c", None)]
    assert [(r["score"], r["value"]) for r in capture["data"]["values"]] == [("fds", 0.5), ("a", 0.2), ("c", 0.1)]
    assert [r["highlighted"] for r in auroc["data"]["values"]] == [True, False, False]
    bars = auroc["layer"][0]["encoding"]
    assert bars["y"]["sort"] == ["fds", "a", "c"]
    assert bars["color"]["scale"] == {"domain": [False, True], "range": [OKABE_ITO["blue"], OKABE_ITO["orange"]]}
    assert bars["x"]["scale"]["domain"] == [0, 1] and "0.5 = chance" in bars["x"]["title"]
    (chance,) = _marks(auroc, "rule")
    assert chance["data"]["values"] == [{"x": 0.5}] and not _marks(auroc, "text")  # no label on the bars
    assert not _marks(capture, "rule")
    assert spec["title"]["subtitle"] == "orange = the score ranking the queue"
    assert "subtitle" not in viz.score_metrics_spec(table, capture_column="capture@10")["title"]
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['capture@20'\]"):
        viz.score_metrics_spec(table, capture_column="capture@20")


# ---------------------------------------------------------------------------------- intervals
def _intervals(h=(0.0, 0.0, 0.0), dm=(-0.0004, 0.0083, 0.0046)) -> pd.DataFrame:
    rows = []
    for level in ("I0", "Ik", "I5"):
        rows.append(dict(target="H", level=level, low=h[0], high=h[1], observed=h[2]))
        rows.append(dict(target="L", level=level, low=0.07, high=0.21, observed=0.13))
        rows.append(dict(target="dM_k", level=level, low=dm[0], high=dm[1], observed=dm[2]))
    return pd.DataFrame(rows)


def _domain(panel: dict) -> list[float]:
    return panel["layer"][0]["encoding"]["x"]["scale"]["domain"]


def test_interval_bars_span_low_to_high_and_mark_observed():
    frame = _intervals(h=(0.1, 0.4, 0.12))
    spec = viz.intervals_spec(frame)
    panels = spec["hconcat"]
    assert [p["title"] for p in panels] == [
        "H: harmful accepted flips",
        "L: lost acceptances",
        "dM_k: confidence drop of retained pairs",
    ]
    for panel, target in zip(panels, ("H", "L", "dM_k")):
        rows = panel["data"]["values"]
        expected = frame[frame["target"] == target]
        assert [(r["level"], r["low"], r["high"], r["observed"]) for r in rows] == [
            (t.level, t.low, t.high, t.observed) for t in expected.itertuples()
        ]
        assert not any(r["undefined"] for r in rows)
    assert spec["title"]["subtitle"] == "bar = every value some pairing allows; ◆ = observed pairing"
    assert max(len(p["title"]) for p in panels) <= 45 and len(spec["title"]["text"]) <= 45


def test_interval_bars_show_undefined_dmk_and_no_diamond_without_pairing():
    frame = _intervals()
    frame.loc[frame["target"] == "dM_k", ["low", "high", "observed"]] = np.nan
    rows = viz.intervals_spec(frame)["hconcat"][2]["data"]["values"]
    assert [r["undefined"] for r in rows] == [True] * 3 and all(r["low"] is None for r in rows)
    unpaired = viz.intervals_spec(_intervals().assign(observed=np.nan))
    assert all(r["observed"] is None for p in unpaired["hconcat"] for r in p["data"]["values"])
    key = unpaired["title"]["subtitle"]
    assert "pairing unknown" in key and "◆" not in key
    with pytest.raises(ValueError, match="has none of the targets"):
        viz.intervals_spec(frame.assign(target="Q"))
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['observed'\]"):
        viz.intervals_spec(frame.drop(columns="observed"))


def test_zero_width_h_interval_is_not_drawn_on_minus_one_to_one():
    low, high = _domain(viz.intervals_spec(_intervals())["hconcat"][0])
    assert low >= 0.0 and high <= 1.0 and high - low >= 0.01 - 1e-12 and low <= 0.0 <= high


def test_interval_axes_cover_the_bars_inside_each_target_range():
    panels = viz.intervals_spec(_intervals(h=(0.98, 1.0, 0.99), dm=(-0.3, 0.2, 0.0)))["hconcat"]
    h_low, h_high = _domain(panels[0])
    assert h_low <= 0.98 and h_high == 1.0  # clipped at the share's maximum
    d_low, d_high = _domain(panels[2])
    assert -1.0 <= d_low <= -0.3 and 0.2 <= d_high <= 1.0
