"""Paired evaluations under perturbation (SPEC Part B).

Records and validation (:mod:`~core.paired.records`), five states and targets
(:mod:`~core.paired.states`), identified intervals at I0 / Ik / I5 (:mod:`~core.paired.bounds`),
rejection-policy comparisons (:mod:`~core.paired.policies`) and the grid summary
(:mod:`~core.paired.summary`).
"""
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
from core.paired.summary import GridSummary, grid_summary
