"""The Vega-Lite charts (``core.viz.*_spec``): the counts against independent references and
the house layout (the data of the certificate, coverage, score and interval charts:
``test_chart_specs.py``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import viz
from core.viz._style import GREY, OKABE_ITO, finish_spec, series_colours


def _every_spec() -> dict[str, dict]:
    return {
        "column_distribution_spec (numeric)": viz.column_distribution_spec(
            pd.Series([1.0, 2.0, None, 4.0], name="Income"), pd.Series(["a", "b", "a", "b"])
        ),
        "column_distribution_spec (category)": viz.column_distribution_spec(
            pd.Series(["x", None, "y", "x"], name="Job"), pd.Series(["a", "b", "a", "b"])
        ),
        "confidence_fds_spec": viz.confidence_fds_spec([0.6, 0.95], [0.2, 0.9], brittle=[False, True]),
        "flip_budget_spec": viz.flip_budget_spec([1, 2, 6], depth=5),
        "trajectory_spec (margin)": _trajectory.margin,
        "trajectory_spec (probability)": _trajectory.probability,
        "collapse_spec": viz.collapse_spec([0.0, 0.4, 1.2], rcma=0.53, path=["a", "b"]),
        "degradation_spec": viz.degradation_spec(
            [0.5, 1.0], {"attenuate_all": [0.5, -0.2], "attenuate_single": [1.0, 0.4]}, {"attenuate_all": 1.0}
        ),
        "drops_spec": viz.drops_spec(["a", "b", "c"], [0.3, -0.1, 0.2], path=["a"], top_n=2),
        "whatif_spec": viz.whatif_spec(["good", "bad"], [0.8, 0.2], [0.4, 0.6]),
        "coverage_spec": viz.coverage_spec([0.5, 1.0], {"fds": [0.6, 1.0]}, ceiling=[1.0, 1.0], selected=0.5),
    }


def _concat_specs() -> dict[str, dict]:
    """Charts of several panels side by side (Vega-Lite fits no concatenation to a column)."""
    intervals = pd.DataFrame(
        {"target": ["H", "L"], "level": ["I0", "I0"], "low": [0.1, 0.2], "high": [0.3, 0.4], "observed": [0.2, 0.3]}
    )
    metrics = pd.DataFrame({"score": ["fds", "margin"], "auroc": [0.8, 0.6], "capture@10%": [0.4, 0.2]})
    return {
        "intervals_spec": viz.intervals_spec(intervals),
        "score_metrics_spec": viz.score_metrics_spec(metrics, capture_column="capture@10%", highlight="fds"),
    }


_trajectory = viz.trajectory_spec(["a", "b"], [1.0, 0.2, -0.5], [0.7, 0.55, 0.4], flip_budget=2)


def _fields(encoding: dict) -> set[str]:
    return {e["field"] for e in encoding.values() if isinstance(e, dict) and "field" in e}


def test_the_layout_checks_cover_every_spec_builder():
    builders = {n for n in viz.__all__ if n.endswith("_spec")}
    assert builders == {name.split(" ")[0] for name in (*_every_spec(), *_concat_specs())}


@pytest.mark.parametrize("name", sorted(_every_spec()))
def test_every_spec_has_the_house_layout_and_encodes_only_fields_of_its_data(name):
    spec = _every_spec()[name]
    assert spec["title"]["anchor"] == "start" and spec["title"]["text"]
    assert spec["config"]["legend"]["orient"] == "bottom"  # never beside the title
    assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}
    assert isinstance(spec["height"], int) and spec["height"] >= 150
    layers = spec.get("layer", [spec])
    for layer in layers:
        data = layer.get("data", spec.get("data")) or {"values": []}  # a rule at a datum has none
        columns = set().union(*(row.keys() for row in data["values"]))
        assert _fields(layer["encoding"]) <= columns, (name, _fields(layer["encoding"]) - columns)
        for axis in ("x", "y"):
            if "field" in layer["encoding"].get(axis, {}):
                assert layer["encoding"][axis]["title"], (name, axis)


def test_finish_spec_rejects_a_bad_height():
    with pytest.raises(ValueError, match=r"`height` must be an int >= 1 \(px\); got 0"):
        finish_spec({}, title="t", height=0)


# ---------------------------------------------------------------------------------------------
# Column distribution


def _numeric_rows(spec: dict) -> pd.DataFrame:
    return pd.DataFrame(spec["data"]["values"])


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.none(), st.floats(-1e6, 1e6), st.sampled_from([np.inf, -np.inf])), min_size=1, max_size=60
    ),
    seed=st.integers(0, 10),
    bins=st.integers(1, 12),
)
def test_numeric_histogram_counts_every_finite_value_once_per_class(values, seed, bins):
    classes = np.random.default_rng(seed).choice(["good", "bad"], size=len(values))
    v = pd.Series([np.nan if x is None else x for x in values], name="Income", dtype=float)
    t = pd.Series(classes)
    spec = viz.column_distribution_spec(v, t, classes=["good", "bad"], bins=bins)
    rows = pd.DataFrame(spec["data"]["values"], columns=["class", "start", "end", "rows"])
    finite = np.isfinite(v.to_numpy())
    for label in ("good", "bad"):
        shown = int(rows.loc[rows["class"] == label, "rows"].sum())
        assert shown == int((finite & (classes == label)).sum())
    if finite.any():
        lo, hi = v[finite].min(), v[finite].max()
        assert rows["start"].min() == pytest.approx(lo if lo < hi else lo - 0.5)
        assert len(rows) == 2 * bins
    else:
        assert rows.empty
    missing, infinite = int(v.isna().sum()), int(np.isinf(v.to_numpy()).sum())
    assert spec["title"]["subtitle"].startswith(f"{missing:,} missing")
    assert (f"and {infinite:,} infinite" in spec["title"]["subtitle"]) == (infinite > 0)


def test_numeric_histogram_matches_a_hand_count():
    v = pd.Series([0.0, 1.0, 2.0, 3.0, 4.0, None], name="Age")
    t = pd.Series(["a", "a", "b", "b", "b", "a"])
    spec = viz.column_distribution_spec(v, t, bins=2)
    rows = pd.DataFrame(spec["data"]["values"])
    # Edges 0, 2, 4: [0, 2) holds 0 and 1, [2, 4] holds 2, 3 and 4.
    assert rows[["class", "start", "end", "rows"]].values.tolist() == [
        ["a", 0.0, 2.0, 2],
        ["a", 2.0, 4.0, 0],
        ["b", 0.0, 2.0, 0],
        ["b", 2.0, 4.0, 3],
    ]
    assert spec["title"]["subtitle"] == "1 missing value not shown"
    assert spec["encoding"]["color"]["scale"] == {"domain": ["a", "b"], "range": series_colours(2)}


def test_categories_are_counted_per_class_with_missing_as_a_category():
    v = pd.Series(["rent", None, "own", "rent", "rent", None], name="Home")
    t = pd.Series(["bad", "good", "good", "good", "bad", "bad"])
    spec = viz.column_distribution_spec(v, t, classes=["good", "bad"])
    rows = pd.DataFrame(spec["data"]["values"])
    expected = pd.crosstab(v.fillna("(missing)"), t)
    for _, row in rows.iterrows():
        assert row["rows"] == expected.loc[row["category"], row["class"]]
    assert spec["encoding"]["x"]["sort"] == ["rent", "(missing)", "own"]  # most frequent first
    assert spec["encoding"]["color"]["sort"] == ["good", "bad"]
    assert spec["title"]["subtitle"] == "missing values shown as (missing)"


def test_a_boolean_column_is_drawn_as_categories():
    spec = viz.column_distribution_spec(pd.Series([True, False, True], name="flag"), pd.Series([0, 1, 0]))
    assert spec["encoding"]["x"]["field"] == "category"
    assert sorted(r["category"] for r in spec["data"]["values"] if r["rows"]) == ["False", "True"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"values": pd.Series([1.0, 2.0]), "target": pd.Series([0])}, r"same length; got 2 and 1"),
        ({"values": pd.Series([1.0]), "target": pd.Series([0]), "bins": 0}, r"`bins` must be an int >= 1; got 0"),
    ],
)
def test_column_distribution_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        viz.column_distribution_spec(**kwargs)


# ---------------------------------------------------------------------------------------------
# Confidence vs FDS and the flip budget: the same data as the plotly twins


@pytest.mark.parametrize("name", sorted(_concat_specs()))
def test_every_concatenated_spec_titles_its_panels_and_encodes_only_fields_of_its_data(name):
    spec = _concat_specs()[name]
    assert spec["title"]["anchor"] == "start" and spec["title"]["text"]
    for panel in spec["hconcat"]:
        assert panel["title"] and isinstance(panel["width"], int) and isinstance(panel["height"], int)
        for layer in panel["layer"]:
            data = layer.get("data", panel.get("data"))
            columns = set().union(*(row.keys() for row in data["values"]))
            assert _fields(layer["encoding"]) <= columns, (name, _fields(layer["encoding"]) - columns)


@pytest.mark.parametrize("brittle", [None, "half"])
@pytest.mark.parametrize("max_points", [10, 3000])
def test_confidence_spec_shows_a_sample_of_the_points_with_their_held_out_label(brittle, max_points):
    rng = np.random.default_rng(3)
    conf, fds = rng.uniform(0.5, 1, 40), rng.uniform(0, 1, 40)
    b = None if brittle is None else rng.uniform(size=40) < 0.5
    spec = viz.confidence_fds_spec(conf, fds, brittle=b, threshold=0.8, max_points=max_points, seed=1)
    points = [(r["label"], r["confidence"], r["fds"]) for r in spec["data"]["values"]]
    assert len(points) == len(set(points)) == min(40, max_points)
    labels = (
        ["prediction"] * 40
        if b is None
        else ["brittle (held-out label)" if bi else "not brittle (held-out label)" for bi in b]
    )
    assert set(points) <= {(lab, float(c), float(f)) for lab, c, f in zip(labels, conf, fds)}
    colour = spec["layer"][0]["encoding"]["color"]["scale"]
    if b is not None:
        assert dict(zip(colour["domain"], colour["range"])) == {
            "not brittle (held-out label)": OKABE_ITO["blue"],
            "brittle (held-out label)": OKABE_ITO["vermillion"],
        }
    rule = spec["layer"][1]
    assert rule["mark"]["type"] == "rule" and rule["mark"]["color"] == GREY
    assert rule["encoding"]["x"]["datum"] == 0.8
    assert spec["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0, 1]
    assert spec["title"]["subtitle"] == "dashed = high confidence (p̂ ≥ 0.8)"


def test_confidence_spec_rejects_a_brittle_mask_of_another_shape():
    with pytest.raises(ValueError, match=r"`brittle` must have shape \(2,\); got \(3,\)"):
        viz.confidence_fds_spec([0.6, 0.9], [0.1, 0.2], brittle=[True, False, True])


@settings(max_examples=60, deadline=None)
@given(k=st.lists(st.integers(1, 6), max_size=40), depth=st.just(5))
def test_flip_budget_spec_counts_like_a_naive_tally(k, depth):
    spec = viz.flip_budget_spec(k, depth=depth)
    tally = Counter(k)
    rows = spec["data"]["values"]
    assert [r["predictions"] for r in rows] == [tally.get(v, 0) for v in range(1, depth + 2)]
    assert [r["k"] for r in rows] == [str(v) for v in range(1, depth + 1)] + [f"no flip ≤ {depth}"]
    scale = spec["encoding"]["color"]["scale"]
    assert scale["range"] == [OKABE_ITO["vermillion"]] * depth + [OKABE_ITO["blue"]]
    assert spec["encoding"]["x"]["sort"] == [r["k"] for r in rows]


def test_flip_budget_spec_rejects_values_outside_the_depth():
    with pytest.raises(ValueError, match=r"`flip_budget` values must lie in 1..4; got range 0..2"):
        viz.flip_budget_spec([0, 2], depth=3)
