"""Paired evaluations under perturbation (SPEC Part B).

Records and validation (:mod:`~core.paired.records`), five states and targets
(:mod:`~core.paired.states`), identified intervals at I0 / Ik / I5 (:mod:`~core.paired.bounds`),
rejection-policy comparisons (:mod:`~core.paired.policies`), the grid summary
(:mod:`~core.paired.summary`), screening and the recapture queue (:mod:`~core.paired.screening`),
and the seeded Fashion-MNIST demo pool (:mod:`~core.paired.demo`, :mod:`~core.paired.corruptions`,
:mod:`~core.paired.recapture_sim`; torch and scikit-learn load lazily).
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
from core.paired.corruptions import (
    CORRUPTIONS,
    NATURAL_TRANSFORMS,
    SEVERITY_PARAMETERS,
    RecaptureCondition,
    natural_transform,
    recapture_grid,
    simulate_recapture,
)
from core.paired.demo import (
    DEFAULT_DIR,
    MODEL_SPECS,
    DemoPool,
    build_demo_pool,
    load_demo_models,
    load_demo_pool,
    reevaluate_demo_pool,
    render_condition,
    save_demo_pool,
)
from core.paired.recapture_sim import SimulatedRecapture, recapture_conditions, simulate
