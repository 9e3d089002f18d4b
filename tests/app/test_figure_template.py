"""The plotly figures (the pages' charts that are not Vega-Lite): built without plotly's default
template, yet the same.

``ui.components`` turns plotly's default template off (plotly copies it into every new figure,
and ``core.viz._style.finish`` replaces it by ``plotly_white`` anyway). Every plotly builder a
page draws must give the same figure JSON as under Streamlit's default (``"streamlit"``), and
the figure must carry the house template.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import ui.components  # noqa: F401 - sets the default template off, as in the app
from core import viz

_CASES = {
    "reliability": (
        "reliability_figure",
        (
            pd.DataFrame(
                {
                    "panel": ["all", "all", "fragile"],
                    "method": ["raw", "BATS", "raw"],
                    "confidence": [0.6, 0.7, 0.9],
                    "accuracy": [0.5, 0.75, 0.4],
                    "count": [10, 30, 5],
                }
            ),
        ),
        {},
    ),
    "tradeoff": (
        "tradeoff_figure",
        (pd.DataFrame({"model": ["lr", "gb"], "auroc": [0.8, 0.9], "rcma": [0.1, 0.4]}),),
        dict(x="auroc", y="rcma", x_title="AUROC", y_title="mean RCMA"),
    ),
    "trajectories_by_model": (
        "trajectories_by_model_figure",
        ({"lr": (["a", "b"], [2.0, 1.0, -1.0], 2), "gb": (["b", "a"], [4.0, 3.0, 2.0], 3)},),
        {},
    ),
    "grid_summary": (
        "grid_summary_figure",
        (
            pd.DataFrame(
                {
                    "source": ["synthetic", "recapture"],
                    "target": ["H", "H"],
                    "level": ["I0", "I0"],
                    "mean_width": [0.3, 0.2],
                }
            ),
        ),
        {},
    ),
    "policy_matrix": ("policy_matrix_figure", (np.zeros((2, 2)), ["q = 90%", "q = 100%"]), {}),
    "regret": ("regret_figure", (["q = 90%", "q = 100%"], [0.1, 0.0]), dict(chosen="q = 100%")),
}


def _build(name: str, default: str | None) -> dict:
    builder, args, kwargs = _CASES[name]
    before = pio.templates.default
    pio.templates.default = default
    try:
        return json.loads(getattr(viz, builder)(*args, **kwargs).to_json())
    finally:
        pio.templates.default = before


def test_the_app_builds_figures_without_a_default_template():
    assert pio.templates.default is None


@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_figure_is_the_same_with_or_without_the_default_template(name):
    plain = _build(name, None)
    assert plain == _build(name, "streamlit")
    assert plain == _build(name, "plotly")
    white = json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())["layout"]["template"]
    assert plain["layout"]["template"] == white


@pytest.mark.parametrize("name", sorted(_CASES))
def test_the_unvalidated_house_template_gives_the_validated_figure(name, monkeypatch):
    from core.viz import _style

    fast = _build(name, None)
    monkeypatch.setattr(_style, "_house_template", lambda fig: fig.update_layout(template="plotly_white"))
    assert fast == _build(name, None)


def test_the_house_template_falls_back_to_the_public_path_without_plotly_s_switch():
    from core.viz._style import _house_template

    class NoSwitch:  # a layout without plotly's private `_validate`: the public call is made
        calls: list[dict] = []

        def __init__(self):
            self.layout = object()

        def update_layout(self, **kwargs):
            self.calls.append(kwargs)

    fig = NoSwitch()
    _house_template(fig)
    assert fig.calls == [{"template": "plotly_white"}]
