"""Paired evaluations under perturbation (SPEC Part B).

Records and validation (:mod:`~core.paired.records`), five states and targets
(:mod:`~core.paired.states`), identified intervals at I0 / Ik / I5 (:mod:`~core.paired.bounds`),
rejection-policy comparisons (:mod:`~core.paired.policies`), the grid summary
(:mod:`~core.paired.summary`) and screening and the recapture queue (:mod:`~core.paired.screening`):
numbers in, numbers out (numpy, pandas, scipy; scikit-learn lazily for ``g(S, U)``). The images
that produce those numbers (corruptions, the demo pool, the ONNX probe) are :mod:`core.imaging`,
one layer up.
"""

from core.paired.bounds import (
    LEVELS,
    TARGETS,
    accuracy_only_k,
    identified_intervals,
    identified_intervals_grid,
    unpaired_intervals,
)
from core.paired.policies import (
    COVERAGES,
    LAMBDAS,
    PolicyReport,
    evaluate_policies,
    policy_thresholds,
    select_policy,
)
from core.paired.records import (
    CELL_COLUMNS,
    PAIRED_COLUMNS,
    SIDE_COLUMNS,
    UnpairedRecords,
    load_records,
    load_unpaired,
    unpair,
    validate_records,
    validate_unpaired,
)
from core.paired.screening import (
    RISK_SIGN,
    SCORES,
    TIERS,
    FailureCoverage,
    condition_tiers,
    failure_auroc,
    failure_coverage,
    identity_ablation,
    recapture_queue,
    risk_column,
    screening_difference,
    screening_metrics,
    screening_scores,
    summarize_screening,
)
from core.paired.states import (
    STATES,
    UndefinedTargetWarning,
    class_table,
    coverage_threshold,
    development_thresholds,
    five_state_counts,
    paired_targets,
    variance_ratios,
)
from core.paired.summary import GridSummary, grid_summary

__all__ = [
    "CELL_COLUMNS",
    "COVERAGES",
    "FailureCoverage",
    "GridSummary",
    "LAMBDAS",
    "LEVELS",
    "PAIRED_COLUMNS",
    "PolicyReport",
    "RISK_SIGN",
    "SCORES",
    "SIDE_COLUMNS",
    "STATES",
    "TARGETS",
    "TIERS",
    "UndefinedTargetWarning",
    "UnpairedRecords",
    "accuracy_only_k",
    "class_table",
    "condition_tiers",
    "coverage_threshold",
    "development_thresholds",
    "evaluate_policies",
    "failure_auroc",
    "failure_coverage",
    "five_state_counts",
    "grid_summary",
    "identified_intervals",
    "identified_intervals_grid",
    "identity_ablation",
    "load_records",
    "load_unpaired",
    "paired_targets",
    "policy_thresholds",
    "recapture_queue",
    "risk_column",
    "screening_difference",
    "screening_metrics",
    "screening_scores",
    "select_policy",
    "summarize_screening",
    "unpair",
    "unpaired_intervals",
    "validate_records",
    "validate_unpaired",
    "variance_ratios",
]
