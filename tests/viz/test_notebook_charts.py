"""A spec outside the dashboard (``core.viz.display``): the notebook's chart object, the stacked
trajectory and the report's cached vega bundle."""

from __future__ import annotations

import pytest
import vl_convert

from core import viz
from core.viz.display import NOTEBOOK_WIDTH, VEGA_LITE_VERSION, VegaLiteChart, stack_specs, vega_bundle


def test_the_notebook_chart_offers_live_vega_lite_and_an_svg_of_the_same_spec():
    spec = viz.flip_budget_spec([1, 1, 2, 4], depth=3)
    chart = VegaLiteChart(spec)
    bundle = chart._repr_mimebundle_()
    live = bundle["application/vnd.vegalite.v5+json"]
    assert live == {**spec, "width": NOTEBOOK_WIDTH}  # the dashboard's spec, at a fixed width
    svg = bundle["image/svg+xml"]
    assert svg.lstrip().startswith("<svg") and spec["title"]["text"] in svg
    assert bundle["text/plain"] == f"<VegaLiteChart: {spec['title']['text']}>"


def test_stacked_specs_keep_their_panels_and_lift_the_top_level_keys():
    specs = viz.trajectory_spec(["a", "b"], [1.0, 0.2, -0.5], [0.7, 0.55, 0.4], flip_budget=2)
    stacked = stack_specs([specs.margin, specs.probability], title="Sample 7")
    top, bottom = stacked["vconcat"]
    assert stacked["title"]["text"] == "Sample 7" and stacked["config"] == specs.margin["config"]
    for part, original in ((top, specs.margin), (bottom, specs.probability)):
        assert not {"$schema", "config", "autosize"} & set(part)
        assert part["width"] == NOTEBOOK_WIDTH and part["layer"] == original["layer"]
    assert "<svg" in VegaLiteChart(stacked).to_svg()  # valid Vega-Lite as a whole
    with pytest.raises(ValueError, match="at least one spec"):
        stack_specs([])


def test_the_bundle_is_compiled_once_and_then_read_from_the_cache(tmp_path, monkeypatch):
    calls = []

    def compile_bundle(*, vl_version):
        calls.append(vl_version)
        return "/* vega */ window.vegaEmbed=a;window.vega=b;window.vegaLite=c;"

    monkeypatch.setattr(vl_convert, "javascript_bundle", compile_bundle)
    first = vega_bundle(cache=tmp_path)
    assert vega_bundle(cache=tmp_path) == first and calls == [VEGA_LITE_VERSION]
    (cached,) = tmp_path.iterdir()
    assert vl_convert.__version__ in cached.name and VEGA_LITE_VERSION in cached.name
    cached.write_text(first[:20], encoding="utf-8")  # cut short (a full disk): built again
    assert vega_bundle(cache=tmp_path) == first and len(calls) == 2


def test_an_unwritable_cache_only_costs_the_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda *, vl_version: "x;window.vegaLite=c;")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert vega_bundle(cache=blocked / "cache") == "x;window.vegaLite=c;"
