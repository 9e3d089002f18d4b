"""Metrics: the one home of the ranking and calibration formulas (no dependency but numpy).

:mod:`core.metrics.ranking` — AUROC with half-ties, the review budget
``k = max(1, round(q·n))``, prorated top-``k`` coverage / capture, AURC.
:mod:`core.metrics.calibration` — NLL, ECE, Brier.

Signatures follow scikit-learn: ``(y_true, y_score, *, options)``.
"""

from core.metrics.calibration import brier, check_probabilities, ece, nll
from core.metrics.ranking import (
    TopKCoverage,
    aurc,
    check_ranking,
    expected_top_positives,
    review_budget,
    roc_auc,
    top_k_coverage,
)

__all__ = [
    "TopKCoverage",
    "aurc",
    "brier",
    "check_probabilities",
    "check_ranking",
    "ece",
    "expected_top_positives",
    "nll",
    "review_budget",
    "roc_auc",
    "top_k_coverage",
]
