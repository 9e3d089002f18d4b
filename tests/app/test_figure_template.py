"""Figures of the certificate panels: built without plotly's default template, yet the same.

``ui.certificate`` turns plotly's default template off (plotly copies it into every new
figure, and ``core.viz._style.finish`` replaces it by ``plotly_white`` anyway). Every builder
the explorer and the triage page draw must give the same figure JSON as under Streamlit's
default (``"streamlit"``), and the figure must carry the house template.
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

_PATH = ["income", "age", "debt"]
_CASES = {
    "trajectory": (
        "trajectory_figure",
        (_PATH, np.array([2.0, 1.1, 0.3, -0.4]), np.array([0.9, 0.8, 0.6, 0.4])),
        dict(flip_budget=3, predicted=["good", "good", "good", "bad"], class_label="good"),
    ),
    "collapse": ("collapse_figure", (np.array([0.0, 0.2, 0.6, 1.3]),), dict(rcma=0.7, path=_PATH)),
    "degradation": (
        "degradation_figure",
        (
            np.array([0.25, 0.5, 1.0]),
            {"attenuate_all": np.array([1.5, 0.7, -0.2]), "attenuate_single": np.array([1.9, 1.7, 1.6])},
            {"attenuate_all": 0.75, "attenuate_single": float("inf")},
        ),
        dict(margin0=2.0),
    ),
    "drops": ("drops_figure", (_PATH + ["x4"], np.array([0.9, 0.5, 0.2, 0.05])), dict(path=_PATH, top_n=2)),
    "whatif": ("whatif_figure", (["bad", "good"], np.array([0.1, 0.9]), np.array([0.6, 0.4])), {}),
    "coverage": (
        "coverage_figure",
        (np.arange(1, 11) / 10, {"fds": np.linspace(0.1, 1, 10), "confidence": np.linspace(0.05, 1, 10)}),
        dict(
            ceiling=np.minimum(1, np.arange(1, 11) / 3),
            random=np.arange(1, 11) / 10,
            selected=0.3,
            highlight="fds",
            title="Brittle found",
            y_title="share",
        ),
    ),
    "score_metrics": (
        "score_metrics_figure",
        (
            pd.DataFrame(
                {
                    "score": ["fds", "confidence"],
                    "kind": ["certificate", "baseline"],
                    "orientation": ["larger = riskier"] * 2,
                    "auroc": [0.8, 0.6],
                    "capture@10%": [0.5, 0.2],
                }
            ),
        ),
        dict(capture_column="capture@10%", highlight="fds"),
    ),
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
