"""Pure figure builders (plotly; Vega-Lite specs, ``*_spec``, for the dashboard's first screen
and its certificates), importable and testable without Streamlit.

Every figure has a title, axis titles with units, and Okabe–Ito colours (colour-blind safe).
The one-line "how to read it" captions live with the pages that show the figures.
"""

from core.viz._style import OKABE_ITO, series_colours
from core.viz.calibration import reliability_figure
from core.viz.certificate import (
    collapse_figure,
    confidence_fds_figure,
    confidence_fds_spec,
    degradation_figure,
    drops_figure,
    flip_budget_histogram,
    flip_budget_spec,
    trajectory_figure,
    whatif_figure,
)
from core.viz.certificate_spec import collapse_spec, degradation_spec, drops_spec, trajectory_spec, whatif_spec
from core.viz.data import column_distribution_spec
from core.viz.models import tradeoff_figure, trajectories_by_model_figure
from core.viz.paired import grid_summary_figure, intervals_figure, policy_matrix_figure, regret_figure
from core.viz.ranking import coverage_figure, score_metrics_figure

__all__ = [
    "OKABE_ITO",
    "collapse_figure",
    "collapse_spec",
    "column_distribution_spec",
    "confidence_fds_figure",
    "confidence_fds_spec",
    "coverage_figure",
    "degradation_figure",
    "degradation_spec",
    "drops_figure",
    "drops_spec",
    "flip_budget_histogram",
    "flip_budget_spec",
    "grid_summary_figure",
    "intervals_figure",
    "policy_matrix_figure",
    "regret_figure",
    "reliability_figure",
    "score_metrics_figure",
    "series_colours",
    "tradeoff_figure",
    "trajectories_by_model_figure",
    "trajectory_figure",
    "trajectory_spec",
    "whatif_figure",
    "whatif_spec",
]
