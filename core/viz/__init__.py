"""Pure figure builders, importable and testable without Streamlit.

One definition per chart (issue 39). A chart the report or a notebook shows is a Vega-Lite 5
spec (``*_spec``): the dashboard draws it with ``st.vega_lite_chart``, the HTML report with the
vega bundle inlined (:mod:`core.report`), a notebook through :class:`core.viz.display.VegaLiteChart`
(live, with an SVG for exported notebooks). The charts only the dashboard draws (calibration,
model comparison, the paired grid and policy pages) are plotly figures (``*_figure``), each
defined once too.

Every figure has a title, axis titles with units, and Okabe–Ito colours (colour-blind safe).
The one-line "how to read it" captions live with the pages that show the figures.
"""

from core.viz._style import OKABE_ITO, series_colours
from core.viz.calibration import reliability_figure
from core.viz.certificate import (
    confidence_fds_spec,
    flip_budget_spec,
)
from core.viz.certificate_spec import (
    TrajectorySpecs,
    collapse_spec,
    degradation_spec,
    drops_spec,
    trajectory_spec,
    whatif_spec,
)
from core.viz.data import column_distribution_spec
from core.viz.models import tradeoff_figure, trajectories_by_model_figure
from core.viz.paired import (
    grid_summary_figure,
    intervals_spec,
    policy_matrix_figure,
    regret_figure,
)
from core.viz.ranking import coverage_spec, score_metrics_spec

__all__ = [
    "OKABE_ITO",
    "TrajectorySpecs",
    "collapse_spec",
    "column_distribution_spec",
    "confidence_fds_spec",
    "coverage_spec",
    "degradation_spec",
    "drops_spec",
    "flip_budget_spec",
    "grid_summary_figure",
    "intervals_spec",
    "policy_matrix_figure",
    "regret_figure",
    "reliability_figure",
    "score_metrics_spec",
    "series_colours",
    "tradeoff_figure",
    "trajectories_by_model_figure",
    "trajectory_spec",
    "whatif_spec",
]
