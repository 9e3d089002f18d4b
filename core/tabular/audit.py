"""The end-to-end tabular audit: dataset → certificates → held-out evaluation → calibration.

:func:`run_audit` is the pipeline behind the dashboard and the ``audit`` command. Steps 1–4 fit
the tool's model into a :class:`FittedSpace`; steps 5–7 are :func:`audit_fitted`, the one audit
pipeline that :func:`core.tabular.own_model.audit_model` (a model the user brings) runs too, so
the bundled path is the own-model path with a model it fits:

1. dataset (bundled name, :class:`~core.tabular.datasets.Dataset` or DataFrame + target),
   optionally subsampled; stratified train / validation / test split;
2. preprocessing fitted on the training split only;
3. evidence groups and baseline from the declared :class:`~core.cfc.protocol.Protocol`;
4. the model, fitted on the training split;
5. certificates of the validation and test splits (:func:`~core.cfc.certify`);
6. held-out brittle labels of the test split from the label channel
   (:mod:`core.cfc.stressors`), plus the naturalistic variant when the raw data has
   unavailable fields;
7. evaluation of every risk score (:mod:`core.cfc.evaluation`) and calibration
   (:mod:`core.cfc.calibration`, fitted on validation).

Everything is deterministic under ``seed``. The seed drives the split and the model; the
stochastic evaluation parts each get their own child stream of ``as_generator(seed)``
(label channel, random orders, permutation importance, SHAP background), so enabling one
extra never shifts the draws of another — in particular the brittle labels are the same
whichever extras run.

:func:`run_sweep` repeats the audit over datasets × models × seeds and builds the
paper-style comparison table plus paired bootstrap intervals over the units.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from core._rng import as_generator
from core.atomic import atomic_folder, atomic_path, atomic_write_text
from core.cfc.baselines import baseline_vector
from core.cfc.calibration import CalibrationReport, calibration_report
from core.cfc.certificate_set import CertificateSet
from core.cfc.certification import certify
from core.cfc.evaluation import (
    GroupImportance,
    GroupShap,
    Population,
    ProtocolVariant,
    certificate_scores,
    confidence_scores,
    evaluate_scores,
    group_shap_concentration,
    paired_bootstrap,
    permutation_group_importance,
    protocol_sensitivity,
    random_order_scores,
    search_diagnostics,
    strongest_confidence_score,
)
from core.cfc.fds import near_tie, rcma_headline, rcma_headline_text
from core.cfc.grouping import build_groups, trace_feature_origins
from core.cfc.operators import stack_removals
from core.cfc.protocol import BASELINE_RULES, GROUPING_RULES, Protocol
from core.cfc.scores import check_proba
from core.cfc.stressors import BrittleLabels, LabelChannel, brittle_labels, naturalistic_labels
from core.exceptions import UndefinedMetricWarning
from core.metrics.capture import CaptureBound, capture_bound, capture_ceiling, guarantee_text
from core.tabular.audit_view import jsonable, parquet_safe, write_view
from core.tabular.datasets import (
    Dataset,
    DatasetSplit,
    dataset_from_frame,
    load_dataset,
    official_split,
    split_dataset,
    subsample_dataset,
    with_blocks,
)
from core.tabular.metrics import NOMINAL_METRICS, nominal_metrics
from core.tabular.models import MODEL_NAMES, MODELS, make_model
from core.tabular.preprocessing import FittedPreprocessor, detect_unavailable_fields, fit_preprocessor
from core.validation import check_batch_size, check_positive_int, check_seed, check_share

__all__ = [
    "AuditConfig",
    "AuditOptions",
    "AuditResult",
    "AuditStages",
    "FittedSpace",
    "audit_fitted",
    "SweepResult",
    "SWEEP_TABLE_COLUMNS",
    "certificate_export",
    "evaluation_json",
    "markdown_table",
    "protocol_json",
    "run_audit",
    "run_sweep",
    "summary_markdown",
    "write_audit",
    "naturalistic_stage",
    "noise_scale",
]

Progress = Callable[[str, int, int], object]
SearchOption = Literal["none", "exact", "beam", "both"]
SplitRule = Literal["stratified", "official"]

#: The budgets (per cent) of the evaluation's ``capture@q`` columns.
CAPTURE_PERCENTS = (5, 10, 20)
#: The budgets and confidence of the capture guarantee the summaries state.
GUARANTEE_PERCENTS, GUARANTEE_CONFIDENCE = (5, 10, 20), 0.9

# Child streams of as_generator(seed); the position of a name never changes.
_STREAMS = ("label_channel", "random_order", "permutation", "shap_background")


@dataclass(frozen=True, kw_only=True)
class AuditOptions:
    """How :func:`run_audit` audits: the model, the seed, the declared protocol and the extras.

    Validated when built (each message names the option and echoes the bad value), so a
    command line, a page or a script refuses bad options before any data is read. A changed
    copy is ``dataclasses.replace(options, seed=1)`` (validated again).

    Attributes
    ----------
    model : str, default "hist_gb"
        Registry name (:data:`core.tabular.models.MODEL_NAMES`).
    seed : int, default 0
        Non-negative. Drives the split, the model and (through child streams) every
        stochastic evaluation.
    protocol : Protocol, default ``Protocol()``
        Declared certificate protocol.
    label_channel : LabelChannel, default ``LabelChannel()``
        Declared held-out label channel.
    blocks : mapping raw column -> block name, or a YAML / JSON file, optional
        Domain blocks (replace the dataset's own); needed for ``grouping="domain_block"`` on
        data that ships none. Either form of :func:`core.tabular.datasets.with_blocks`.
    max_rows : int, optional
        Stratified subsample of the dataset before splitting (keeps audits of big tables fast).
    split : {"stratified", "official"}, default "stratified"
        ``"stratified"``: :func:`~core.tabular.datasets.split_dataset`. ``"official"``: the
        source's own test part (Adult's adult.test, after any ``max_rows`` subsample) and a
        stratified ``val_size`` share of its training part
        (:func:`~core.tabular.datasets.official_split`).
    val_size, test_size : float, default 0.2
        Split shares, each in (0, 1) (``test_size`` only applies to the stratified split).
    model_params : mapping, optional
        Overrides of the model's defaults (see :func:`core.tabular.models.make_model`).
    search : {"none", "exact", "beam", "both"}, default "none"
        Opt-in exact / beam flip search on the test split, summarised in ``AuditResult.search``.
    sensitivity : bool, default False
        Opt-in: recompute the certificate under every other baseline and grouping rule.
    order_baselines : bool, default False
        Opt-in: the random-order (``n_random_orders`` orders) and permutation-importance-order
        baselines (each costs a few certificate passes).
    shap : bool, default False
        Opt-in: group-SHAP concentration (fast explainers only; NaN with a note otherwise).
    n_random_orders : int, default 5
        Orders of the random-order baseline.
    population : {"high_confidence", "all"}, default "high_confidence"
        Test rows on which the scores are evaluated: ``p̂ ≥ τ_p`` (SPEC default) or all.
    batch_size : int, default 65536
        Rows per model call (bounds memory).
    n_threads : int or None, default 1
        Threads of the OpenMP / BLAS pools (``threadpoolctl``) during the audit; None keeps the
        libraries' defaults. One thread is the default because the audit is many mid-sized
        model calls: on a busy 2-core machine threaded histogram boosting ran the default
        audit 8x slower than single-threaded (``tests/bench/bench_audit.py``), and the suite's
        other libraries (XGBoost, LightGBM, forests) already run with one thread.

    Examples
    --------
    >>> AuditOptions(model="logreg", seed=3).seed
    3
    >>> AuditOptions(search="greedy")
    Traceback (most recent call last):
    ...
    ValueError: `search` must be one of ('none', 'exact', 'beam', 'both'); got 'greedy'.
    """

    model: str = "hist_gb"
    seed: int = 0
    protocol: Protocol = dataclasses.field(default_factory=Protocol)
    label_channel: LabelChannel = dataclasses.field(default_factory=LabelChannel)
    blocks: Mapping[str, Any] | str | PathLike[str] | None = None
    max_rows: int | None = None
    split: SplitRule = "stratified"
    val_size: float = 0.2
    test_size: float = 0.2
    model_params: Mapping[str, Any] | None = None
    search: SearchOption = "none"
    sensitivity: bool = False
    order_baselines: bool = False
    shap: bool = False
    n_random_orders: int = 5
    population: Population = "high_confidence"
    batch_size: int = 65536
    n_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"`model` must be one of {list(MODEL_NAMES)}; got {self.model!r}.")
        object.__setattr__(self, "seed", check_seed(self.seed))
        if not isinstance(self.protocol, Protocol):
            raise ValueError(f"`protocol` must be a Protocol; got {type(self.protocol).__name__}.")
        if not isinstance(self.label_channel, LabelChannel):
            raise ValueError(f"`label_channel` must be a LabelChannel; got {type(self.label_channel).__name__}.")
        if self.blocks is not None and not isinstance(self.blocks, (Mapping, str, PathLike)):
            raise ValueError(
                f"`blocks` must be a mapping raw column -> block, a YAML / JSON file or None; "
                f"got {type(self.blocks).__name__}."
            )
        check_positive_int(self.max_rows, "max_rows", allow_none=True)
        _check_choice(self.split, "split", ("stratified", "official"))
        check_share(self.val_size, "val_size")
        check_share(self.test_size, "test_size")
        if self.model_params is not None and not isinstance(self.model_params, Mapping):
            raise ValueError(f"`model_params` must be a mapping or None; got {type(self.model_params).__name__}.")
        _check_choice(self.search, "search", ("none", "exact", "beam", "both"))
        for name in ("sensitivity", "order_baselines", "shap"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"`{name}` must be True or False; got {getattr(self, name)!r}.")
        check_positive_int(self.n_random_orders, "n_random_orders")
        _check_choice(self.population, "population", ("high_confidence", "all"))
        check_batch_size(self.batch_size)
        check_positive_int(self.n_threads, "n_threads", allow_none=True)
        # Copies: a caller's later change to its dict must not change these frozen options.
        for name in ("blocks", "model_params"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, dict(value))


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        shown = f"{choices[0]!r} or {choices[1]!r}" if len(choices) == 2 else repr(choices)
        raise ValueError(f"`{name}` must be {'' if len(choices) == 2 else 'one of '}{shown}; got {value!r}.")


@dataclass(frozen=True, eq=False, kw_only=True)
class AuditResult:
    """Everything an audit produced, ready for display without recomputation.

    Attributes
    ----------
    dataset : Dataset
        The (possibly subsampled) dataset audited.
    split : DatasetSplit
        Train / validation / test positions into ``dataset.frame``.
    seed : int
    model_name : str
        Registry name (see :data:`core.tabular.models.MODELS`).
    model : fitted estimator
        ``predict_proba`` over the transformed space.
    preprocessor : FittedPreprocessor
        Fitted on the training split.
    groups : dict of str -> list of int
        Evidence groups over the transformed columns.
    baseline : ndarray of shape (n_features,)
    protocol : Protocol
    fingerprint : str
        Fingerprint of the test certificate set (protocol, groups, baseline, model probe).
    label_channel : LabelChannel
    raw_test : DataFrame
        Raw test rows (features and target), index = source row ids.
    X_test : ndarray of shape (n_test, n_features)
        Transformed test rows.
    y_test : ndarray of shape (n_test,)
        Encoded test labels: code ``c`` is the class :attr:`classes` ``[c]``.
    proba_test : ndarray of shape (n_test, n_classes)
    certificates : CertificateSet
        Certificates of the test split (table index = source row ids).
    labels : BrittleLabels
        Held-out brittle labels of the test split (label channel).
    scores : DataFrame of shape (n_test, n_scores)
        Every evaluated risk score per test row (larger = riskier), index = source row ids.
    evaluation : DataFrame
        Per-score evaluation against ``labels`` (columns of
        :data:`core.cfc.evaluation.EVALUATION_COLUMNS`).
    unavailable : DataFrame
        Raw columns with missing / unknown / special-code values
        (:func:`core.tabular.preprocessing.detect_unavailable_fields`).
    unavailable_groups : tuple of str
        Groups holding those columns (replaced by the naturalistic channel).
    naturalistic : BrittleLabels or None
        Naturalistic labels, None when no field is unavailable.
    naturalistic_evaluation : DataFrame or None
    nominal : dict of str -> float
        Test metrics (:data:`core.tabular.metrics.NOMINAL_METRICS`).
    calibration : CalibrationReport
        Temperature scaling and BATS fitted on validation, reported on test.
    sensitivity : DataFrame or None
        Baseline- and grouping-rule sensitivity (opt-in).
    search : DataFrame or None
        Greedy vs exact/beam summary (opt-in).
    importance : GroupImportance or None
        Permutation importance behind the ``perm_order`` score (opt-in).
    group_shap : GroupShap or None
        Group-SHAP concentration (opt-in).
    timings : dict of str -> float
        Seconds per stage.
    notes : tuple of str
        What the audit skipped or changed, for people.
    source_model : object or None
        The model passed to :func:`core.tabular.own_model.audit_model` (None for the tool's
        own models, whose fitted estimator is ``model``).
    space_kind : {"tool", "pipeline", "raw"}
        Feature space of ``X_test``: the tool's preprocessing, the preprocessing steps of a
        user's pipeline, or raw space (:class:`core.tabular.own_model.RawSpace`).
    model_unavailable : str or None
        Why ``model`` is None: an audit rebuilt from a saved folder whose model cannot be
        loaded (:func:`core.tabular.audit_folder.saved_result`); what calls the model is off.
    """

    dataset: Dataset
    split: DatasetSplit
    seed: int
    model_name: str
    model: Any
    preprocessor: FittedPreprocessor
    groups: dict[str, list[int]]
    baseline: np.ndarray
    protocol: Protocol
    fingerprint: str
    label_channel: LabelChannel
    raw_test: pd.DataFrame
    X_test: np.ndarray
    y_test: np.ndarray
    proba_test: np.ndarray
    certificates: CertificateSet
    labels: BrittleLabels
    scores: pd.DataFrame
    evaluation: pd.DataFrame
    unavailable: pd.DataFrame
    unavailable_groups: tuple[str, ...]
    naturalistic: BrittleLabels | None
    naturalistic_evaluation: pd.DataFrame | None
    nominal: dict[str, float]
    calibration: CalibrationReport
    sensitivity: pd.DataFrame | None
    search: pd.DataFrame | None
    importance: GroupImportance | None
    group_shap: GroupShap | None
    timings: dict[str, float]
    notes: tuple[str, ...]
    source_model: Any = None
    space_kind: Literal["tool", "pipeline", "raw"] = "tool"
    model_unavailable: str | None = None

    def save(self, directory: str | Path, *, made_by: str = "", actor: Any = None) -> Path:
        """Write the audit into a new folder, atomically: the layout of ``python -m core audit --out``.

        Files: those of :func:`write_audit` (certificates, evaluation, protocol, summary and
        the model task ``_task.zip``) plus ``train.parquet`` and ``test.parquet`` (the raw
        rows audited), so that the dashboard (``--audit DIR``) can reopen it.

        Parameters
        ----------
        directory : str or Path
            Must not exist yet, or be empty.
        made_by : str, default=""
            Who made the audit, kept in ``view/meta.json`` and shown with the saved audit;
            default: the address of ``actor``'s user.
        actor : core.reviews.permissions.Actor, optional
            Who saves on a server with sign-in: must be allowed to ``save`` into the shared
            audits folder (:func:`core.reviews.permissions.check`). None: local mode.

        Returns
        -------
        Path
            The folder.
        """
        from core.reviews.permissions import check

        directory = Path(directory)
        check(actor, "save", what=directory.name)
        if not made_by and actor is not None and getattr(actor, "user", None) is not None:
            made_by = actor.user.email
        if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
            raise ValueError(f"{str(directory)!r} already exists and is not an empty folder; choose a new one.")
        with atomic_folder(directory) as tmp:
            write_audit(self, tmp, made_by=made_by)
        return directory

    @property
    def classes(self) -> tuple[Any, ...]:
        """The model's class labels in ``predict_proba`` column order, as the data holds them
        (``"Gentoo"``, ``"yes"``, ``1``): code ``c`` of ``y_test`` and of the certificates'
        ``pred`` is ``classes[c]``."""
        return tuple(self.dataset.classes)

    def class_of(self, codes: Any) -> np.ndarray:
        """The class labels of ``predict_proba`` column indices.

        The certificate engine works on column indices (``CertificateSet.table["pred"]``,
        ``y_test``); everything shown to people or written for them names the class through
        this mapping, the audit being the one layer that knows the labels.

        Parameters
        ----------
        codes : array-like of int, shape (n,)
            Column indices in ``0 .. n_classes - 1``.

        Returns
        -------
        ndarray of object, shape (n,)
            ``classes[c]`` for every code (the labels keep their own type).
        """
        codes = np.asarray(codes)
        n = len(self.classes)
        if codes.dtype.kind not in "iu" or (codes.size and (codes.min() < 0 or codes.max() >= n)):
            raise ValueError(f"`codes` must be class indices in 0..{n - 1}; got {codes[:5].tolist()!r}.")
        return np.asarray(self.classes, dtype=object)[codes]

    def _repr_html_(self) -> str:
        """Compact HTML summary for notebooks: protocol, model, headline metrics, top of the queue."""
        from core.views.notebook import audit_html

        return audit_html(self)

    def plot_certificate(self, sample_id: Any) -> Any:
        """The removal trajectory of one test prediction, as a Vega-Lite chart (the dashboard's).

        Margin (nats; below 0 = flipped) and probability of the predicted class, named by its
        label (``P(Gentoo)``), after each evidence group removed along the certificate's path.

        Parameters
        ----------
        sample_id : hashable
            The test row's id: its index in the ``test`` table (``certificates.table.index``).

        Returns
        -------
        core.viz.display.VegaLiteChart
            Shown live by Jupyter (``application/vnd.vegalite.v5+json``), as an SVG in an
            exported notebook; ``.spec`` is the Vega-Lite spec, ``.to_svg()`` the drawing.

        Raises
        ------
        ValueError
            ``sample_id`` is not a test row of this audit (the value is echoed).
        """
        from core.views.notebook import certificate_figure

        return certificate_figure(self, sample_id)

    def queue(
        self, budget: float = 0.2, *, score: str = "fds", population: Population = "high_confidence"
    ) -> pd.DataFrame:
        """The review queue: the riskiest ``k = max(1, round(budget · n))`` predictions by ``score``.

        Parameters
        ----------
        budget : float, default=0.2
            Review budget ``q`` in (0, 1], a fraction of the ranked predictions.
        score : str, default="fds"
            A column of :attr:`scores` (every score is a risk score: larger = riskier; ``fds``
            ranks by ``u``, which orders as FDS without its saturation).
        population : {"high_confidence", "all"}, default="high_confidence"
            Rank the high-confidence predictions (``p̂ ≥ τ_p``; all of them when none is) or all.

        Returns
        -------
        DataFrame
            One row per queued prediction, riskiest first: ``rank`` (1-based), ``sample_id``,
            ``true_class`` and ``predicted`` (class labels), ``confidence``, ``fds`` (0–1,
            larger = more fragile), ``flip_budget`` (``k*``: groups removed until the prediction
            flips, smaller = more fragile; SPEC's ``K + 1`` when it does not flip within depth
            ``K``), ``flipped`` (False = no flip within ``K``), ``rcma`` (larger = more
            fragile), ``brittle`` (held-out label) and ``score_value`` (the ranking score).

        Raises
        ------
        ValueError
            ``budget`` outside (0, 1], an unknown ``score`` or ``population`` (echoed).
        """
        from core.views.notebook import review_queue

        return review_queue(self, budget=budget, score=score, population=population)

    def _ranked_population(self) -> np.ndarray:
        """The evaluated predictions (the evaluation's population; all of them when it is empty)."""
        population = self.evaluation["population"].iloc[0] if len(self.evaluation) else "high_confidence"
        mask = np.asarray(self.labels.high_confidence, dtype=bool)
        return mask if population == "high_confidence" and mask.any() else np.ones(len(mask), dtype=bool)

    def capture_bound(self, budget: float, *, confidence: float = 0.9, score: str = "fds") -> CaptureBound:
        """A lower confidence bound on the share of brittle predictions a queue at ``budget`` catches on new data.

        The queue ranks the evaluated predictions (the high-confidence ones by default) by
        ``score`` and reviews the top ``k = max(1, round(budget · n))``; its cut falls at the
        score ``threshold``. Treating this audit's test split as i.i.d. with new data from the
        same source, the rule "review every new prediction scored at least ``threshold``"
        catches at least ``lower`` of the new brittle predictions, with probability
        ``confidence`` (a DKW band, valid although the cut is chosen on these rows:
        :func:`core.metrics.capture.capture_bound`, docs/method.md).

        Parameters
        ----------
        budget : float
            Review budget ``q`` in (0, 1].
        confidence : float, default=0.9
            In [0.5, 1).
        score : str, default="fds"
            A column of :attr:`scores` (larger = riskier; ``threshold`` is on its scale).

        Returns
        -------
        core.metrics.capture.CaptureBound
            ``lower``, ``threshold``, ``method``, ``captured``, ``capture`` (this split's own
            share), ``n``, ``n_pos`` (brittle), ``k``, ``n_reviewed``, ``review_share``,
            ``budget``, ``confidence``.

        Raises
        ------
        ValueError
            ``budget`` outside (0, 1], ``confidence`` outside [0.5, 1), an unknown ``score``.
        """
        if score not in self.scores.columns:
            raise ValueError(f"`score` must be one of {list(self.scores.columns)}; got {score!r}.")
        mask = self._ranked_population()
        return capture_bound(
            np.asarray(self.labels.labels, dtype=bool)[mask],
            self.scores[score].to_numpy(dtype=float)[mask],
            q=budget,
            confidence=confidence,
        )

    @property
    def capture_vs_ceiling(self) -> pd.DataFrame:
        """Capture@q of every score against its ceiling, the best any ranking reaches.

        Returns
        -------
        DataFrame
            One row per score and budget ``q`` (5, 10, 20 %): ``score``, ``budget``, ``capture``
            (:attr:`evaluation`'s ``capture@q``), ``ceiling`` (``min(1, k / n_brittle)`` on the
            evaluated predictions, :func:`core.metrics.capture.capture_ceiling`) and
            ``capture_ratio`` (``capture / ceiling``; 1 = as good as any ranking); NaN without
            a brittle prediction.
        """
        population = self.evaluation["population"].iloc[0] if len(self.evaluation) else "high_confidence"
        mask = self.labels.high_confidence if population == "high_confidence" else np.ones(len(self.y_test), bool)
        brittle = np.asarray(self.labels.labels, dtype=bool)[np.asarray(mask, dtype=bool)]
        ceilings = {q: capture_ceiling(brittle, q=q / 100) if brittle.any() else float("nan") for q in CAPTURE_PERCENTS}
        rows = [
            {
                "score": row["score"],
                "budget": q / 100,
                "capture": float(row[f"capture@{q}"]),
                "ceiling": ceilings[q],
                "capture_ratio": float(row[f"capture@{q}"]) / ceilings[q] if ceilings[q] > 0 else float("nan"),
            }
            for row in self.evaluation.to_dict("records")
            for q in CAPTURE_PERCENTS
        ]
        return pd.DataFrame(rows, columns=["score", "budget", "capture", "ceiling", "capture_ratio"])

    @property
    def fragility(self) -> dict[str, float]:
        """Fragility summary of the test split (the headline figures).

        ``mean_rcma`` is the mean RCMA over the test predictions that are **not near-ties**
        (``|m(x)| ≥`` :data:`~core.cfc.fds.NEAR_TIE_MARGIN`; the certificate keeps the paper's
        RCMA for every row, SPEC A.3), ``n_near_tie`` the number of near-ties left out of it,
        ``median_rcma`` the median over every row (:func:`core.cfc.fds.rcma_headline`);
        ``share_k_le_2`` (share with ``k* ≤ 2``), ``share_brittle`` (held-out brittle share),
        ``share_high_confidence``.
        """
        t = self.certificates.table
        return {
            **rcma_headline(t["rcma"].to_numpy(dtype=float), t["margin"].to_numpy(dtype=float)),
            "share_k_le_2": float((t["flip_budget"] <= 2).mean()),
            "share_brittle": float(self.labels.labels.mean()),
            "share_high_confidence": float(self.labels.high_confidence.mean()),
        }


# --------------------------------------------------------------------------------------------
# Pipeline pieces
# --------------------------------------------------------------------------------------------
def _resolve_dataset(
    data: str | Dataset | pd.DataFrame, target: str | None, blocks: Mapping[str, Any] | None
) -> Dataset:
    if isinstance(data, pd.DataFrame):
        if target is None:
            raise ValueError("`target` is required when auditing a DataFrame (name the column to predict).")
        return dataset_from_frame(data, target, blocks=blocks)
    if target is not None:
        raise ValueError("`target` applies to a DataFrame; a bundled or loaded dataset has its own target.")
    if isinstance(data, str):
        dataset = load_dataset(data)
    elif isinstance(data, Dataset):
        dataset = data
    else:
        raise ValueError(f"`data` must be a bundled dataset name, a Dataset or a DataFrame; got {type(data).__name__}.")
    return dataset if blocks is None else with_blocks(dataset, blocks)


def _groups_for(
    rule: str, pre: FittedPreprocessor, X_train: np.ndarray, dataset: Dataset, threshold: float
) -> dict[str, list[int]]:
    if rule == "domain_block" and dataset.blocks is None:
        raise ValueError(
            f"grouping='domain_block' needs domain blocks, and dataset {dataset.name!r} has none; "
            "pass `blocks` (raw column -> block name)."
        )
    return build_groups(rule, pre.transformer, X_train, blocks=dataset.blocks, threshold=threshold)


def noise_scale(X_train: np.ndarray) -> np.ndarray:
    """Training std of every transformed column with more than two distinct values, else 0.

    Binary columns (one-hot levels, missing indicators, 0/1 flags) are not numeric evidence
    that can drift by a fraction of a standard deviation, so bounded noise leaves them alone.
    """
    sorted_cols = np.sort(X_train, axis=0)
    n_distinct = 1 + (np.diff(sorted_cols, axis=0) != 0).sum(axis=0)
    return np.where(n_distinct > 2, X_train.std(axis=0), 0.0)


def naturalistic_stage(
    stages: AuditStages,
    *,
    predict: Callable[[np.ndarray], Any],
    X_test: np.ndarray,
    groups: Mapping[str, Sequence[int]],
    baseline: np.ndarray,
    unavailable_groups: tuple[str, ...],
    label_channel: LabelChannel,
    batch_size: int,
    notes: list[str],
) -> BrittleLabels | None:
    """Naturalistic labels over the groups with genuinely missing values, or None (and a note)."""
    if not unavailable_groups:
        notes.append("no raw column has missing / unknown / special-code values: no naturalistic labels")
        return None
    return stages.run(
        "naturalistic channel",
        naturalistic_labels,
        predict,
        X_test,
        groups,
        baseline,
        unavailable_groups,
        tau_p=label_channel.tau_p,
        tau_kappa=label_channel.tau_kappa,
        batch_size=batch_size,
    )


class AuditStages:
    """Times the stages and forwards progress to the caller."""

    def __init__(self, progress: Progress | None) -> None:
        if progress is not None and not callable(progress):
            raise ValueError(f"`progress` must be a callable(stage, done, total) or None; got {progress!r}.")
        self._progress = progress
        self.timings: dict[str, float] = {}

    def run(self, stage: str, fn: Callable[..., Any], *args: Any, rows: bool = False, **kwargs: Any) -> Any:
        """Call ``fn``; with ``rows=True`` it reports ``(done, total)`` rows through ``progress=``."""
        start = time.perf_counter()
        if self._progress is not None:
            self._progress(stage, 0, 1)
            if rows:
                kwargs["progress"] = lambda done, total: self._progress(stage, done, total)
        out = fn(*args, **kwargs)
        if self._progress is not None and not rows:
            self._progress(stage, 1, 1)
        self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - start
        return out


def _variants(
    protocol: Protocol,
    pre: FittedPreprocessor,
    X_train: np.ndarray,
    dataset: Dataset,
    groups: Mapping[str, Sequence[int]],
) -> list[ProtocolVariant]:
    out = []
    for rule in BASELINE_RULES:
        if rule != protocol.baseline:
            out.append(
                ProtocolVariant(
                    "baseline",
                    rule,
                    groups,
                    baseline_vector(X_train, groups, rule),
                    dataclasses.replace(protocol, baseline=rule),
                )
            )
    for rule in GROUPING_RULES:
        if rule == protocol.grouping or (rule == "domain_block" and dataset.blocks is None):
            continue
        g = _groups_for(rule, pre, X_train, dataset, protocol.merge_threshold)
        depth = None if protocol.depth is None else min(protocol.depth, len(g))
        out.append(
            ProtocolVariant(
                "grouping",
                rule,
                g,
                baseline_vector(X_train, g, protocol.baseline),
                dataclasses.replace(protocol, grouping=rule, depth=depth),
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# run_audit
# --------------------------------------------------------------------------------------------
def run_audit(
    data: str | Dataset | pd.DataFrame = "credit_data",
    *,
    options: AuditOptions | None = None,
    target: str | None = None,
    progress: Progress | None = None,
    **fields: Any,
) -> AuditResult:
    """Run a complete, deterministic fragility audit of one model on one dataset.

    Parameters
    ----------
    data : str, Dataset or DataFrame, default="credit_data"
        A bundled dataset name (:data:`core.tabular.datasets.DATASET_NAMES`), a loaded
        dataset, or a raw frame (then ``target`` is required).
    options : AuditOptions, optional
        How to audit (model, seed, protocol, label channel, split, extras); default
        ``AuditOptions()``. Built and validated by the caller: the ``audit`` command and the
        dashboard build one.
    target : str, optional
        Target column of a DataFrame.
    progress : callable(stage, done, total), optional
        Progress of every stage (``done``/``total`` in rows where known, else 0/1 then 1/1).
    **fields
        Fields of :class:`AuditOptions` by name, a shorthand for
        ``options=AuditOptions(model=..., seed=...)`` (on top of ``options`` when both are given):
        ``run_audit("credit_data", model="logreg", seed=1)``.

    Returns
    -------
    AuditResult

    Raises
    ------
    ValueError
        Unknown dataset or model, a missing target, an invalid option (see
        :class:`AuditOptions`), an invalid protocol for this data (e.g. ``depth`` above the
        number of groups, domain blocks without a mapping).
    TypeError
        A keyword that is no field of :class:`AuditOptions`.
    """
    unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(AuditOptions)})
    if unknown:
        raise TypeError(f"run_audit() got an unexpected keyword argument {unknown[0]!r}.")
    if options is None:
        options = AuditOptions(**fields)
    elif not isinstance(options, AuditOptions):
        raise ValueError(f"`options` must be an AuditOptions; got {type(options).__name__}.")
    elif fields:
        options = dataclasses.replace(options, **fields)
    with threadpool_limits(limits=options.n_threads):
        return _run_audit(data, options, target=target, progress=progress)


def _run_audit(
    data: str | Dataset | pd.DataFrame, options: AuditOptions, *, target: str | None, progress: Progress | None
) -> AuditResult:
    """The pipeline of :func:`run_audit` on validated options: fit the tool's model, then audit it."""
    stages = AuditStages(progress)
    space = _fit_tool_model(data, options, target=target, stages=stages)
    config = AuditConfig(
        protocol=options.protocol,
        label_channel=options.label_channel,
        population=options.population,
        seed=options.seed,
        batch_size=options.batch_size,
        search=options.search,
        sensitivity=options.sensitivity,
        order_baselines=options.order_baselines,
        n_random_orders=options.n_random_orders,
        shap=options.shap,
    )
    return audit_fitted(space, config=config, stages=stages)


def _fit_tool_model(
    data: str | Dataset | pd.DataFrame, options: AuditOptions, *, target: str | None, stages: AuditStages
) -> FittedSpace:
    """Steps 1–4 of :func:`run_audit`: data, split, preprocessing, groups, baseline, fitted model."""
    dataset = stages.run("load data", _resolve_dataset, data, target, options.blocks)
    if options.max_rows is not None:
        dataset = subsample_dataset(dataset, options.max_rows, seed=options.seed)
    if options.split == "official":
        split = official_split(dataset, seed=options.seed, val_size=options.val_size)
    else:
        split = split_dataset(dataset, seed=options.seed, val_size=options.val_size, test_size=options.test_size)
    pre = stages.run("preprocess", fit_preprocessor, split.train, dataset.numeric, dataset.categorical)
    X_train, X_val, X_test = (pre.transform(part) for part in (split.train, split.val, split.test))

    groups = _groups_for(options.protocol.grouping, pre, X_train, dataset, options.protocol.merge_threshold)
    options.protocol.resolved_depth(len(groups))  # refuse an impossible depth before the model is fitted
    baseline = baseline_vector(X_train, groups, options.protocol.baseline)

    params = dict(options.model_params or {})
    if options.model == "fr_resmlp":
        params.setdefault("groups", groups)
        params.setdefault("baseline", baseline)
    estimator = make_model(options.model, seed=options.seed, **params)
    stages.run("fit model", estimator.fit, X_train, split.y_train)
    return FittedSpace(
        dataset=dataset,
        split=split,
        seed=options.seed,
        model_name=options.model,
        predictor=estimator,
        preprocessor=pre,
        origins=tuple(trace_feature_origins(pre.transformer)),
        X_train=X_train,
        X_test=X_test,
        y_test=split.y_test,
        raw_test=split.test,
        groups=dict(groups),
        baseline=baseline,
        X_val=X_val,
        y_val=split.y_val,
        shap_explainer=MODELS[options.model].shap_explainer,
    )


# --------------------------------------------------------------------------------------------
# The one audit pipeline: a fitted model in its feature space -> AuditResult
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class AuditConfig:
    """How :func:`audit_fitted` audits a fitted model (whoever fitted it).

    Attributes
    ----------
    protocol : Protocol
    label_channel : LabelChannel
    population : {"high_confidence", "all"}, default "high_confidence"
    seed : int, default 0
        Root of the child streams of the stochastic evaluation parts (label channel, random
        orders, permutation importance, SHAP background), in that fixed order.
    batch_size : int, default 65536
    search : {"none", "exact", "beam", "both"}, default "none"
    sensitivity, order_baselines, shap : bool, default False
        The opt-in extras of :class:`AuditOptions`; ``sensitivity`` needs the tool's
        preprocessing (a :class:`~core.tabular.preprocessing.FittedPreprocessor`).
    n_random_orders : int, default 5
    """

    protocol: Protocol
    label_channel: LabelChannel
    population: Population = "high_confidence"
    seed: int = 0
    batch_size: int = 65536
    search: SearchOption = "none"
    sensitivity: bool = False
    order_baselines: bool = False
    n_random_orders: int = 5
    shap: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.protocol, Protocol):
            raise ValueError(f"`protocol` must be a Protocol; got {type(self.protocol).__name__}.")
        if not isinstance(self.label_channel, LabelChannel):
            raise ValueError(f"`label_channel` must be a LabelChannel; got {type(self.label_channel).__name__}.")
        _check_choice(self.population, "population", ("high_confidence", "all"))
        object.__setattr__(self, "seed", check_seed(self.seed))
        check_batch_size(self.batch_size)
        _check_choice(self.search, "search", ("none", "exact", "beam", "both"))
        check_positive_int(self.n_random_orders, "n_random_orders")


@dataclass(frozen=True, kw_only=True)
class FittedSpace:
    """A fitted model in the feature space its certificates run in, with the rows to audit.

    Built by :func:`run_audit` (the tool fits its model) and by
    :func:`core.tabular.own_model.audit_model` / ``audit_task`` (a model the user brings);
    :func:`audit_fitted` audits either the same way.

    Attributes
    ----------
    dataset : Dataset
        Every row the audit knows (training rows then test rows for a user's model).
    split : DatasetSplit
    seed : int
        The seed the audit reports (the split's and the model's; 0 for a user's model).
    model_name : str
    predictor : object
        ``predict_proba`` over the feature space.
    preprocessor : object
        Maps raw frames to the feature space (``transform``).
    origins : tuple of str
        Raw column of every feature (finds the groups holding unavailable fields).
    X_train, X_test : ndarray of shape (n, n_features)
    y_test : ndarray of int64, shape (n_test,)
        Class indices into the columns of ``predict_proba``.
    raw_test : DataFrame
        Raw test rows (features and target); its index gives the row ids.
    groups : dict of str -> list of int
    baseline : ndarray of shape (n_features,)
    X_val, y_val : ndarray or None
        Rows the model did not see for calibration (the tool's validation split).
    calibration_half : ndarray of bool, shape (n_test,), or None
        Without validation rows: the test rows calibration is fitted on (reported on the
        others).
    space_kind : {"tool", "pipeline", "raw"}, default "tool"
    source_model : object or None
        The model the user passed (None for the tool's own models).
    shap_explainer : {"tree", "linear"} or None
        The fast SHAP explainer that suits the model, if any.
    notes : tuple of str
        What building the space changed, for people.
    """

    dataset: Dataset
    split: DatasetSplit
    seed: int
    model_name: str
    predictor: Any
    preprocessor: Any
    origins: tuple[str, ...]
    X_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    raw_test: pd.DataFrame
    groups: dict[str, list[int]]
    baseline: np.ndarray
    X_val: np.ndarray | None = None
    y_val: np.ndarray | None = None
    calibration_half: np.ndarray | None = None
    space_kind: Literal["tool", "pipeline", "raw"] = "tool"
    source_model: Any = None
    shap_explainer: Literal["tree", "linear"] | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.X_val is None) == (self.calibration_half is None):
            raise ValueError("a FittedSpace needs either validation rows (`X_val`, `y_val`) or a `calibration_half`.")


def audit_fitted(space: FittedSpace, *, config: AuditConfig, stages: AuditStages | None = None) -> AuditResult:
    """Audit a fitted model in its feature space: certificates, held-out labels, scores, metrics.

    The one pipeline behind :func:`run_audit` and :func:`core.tabular.own_model.audit_model`:
    predictions (validated as probabilities) and a baseline probe, certificates of the test
    rows, the label channel and the naturalistic variant, every risk score and its
    evaluation, the opt-in extras of ``config``, nominal metrics and calibration.

    Parameters
    ----------
    space : FittedSpace
    config : AuditConfig
    stages : AuditStages, optional
        Times the stages and reports progress (the stages before this call included).

    Returns
    -------
    AuditResult
    """
    stages = AuditStages(None) if stages is None else stages
    streams = dict(zip(_STREAMS, as_generator(config.seed).spawn(len(_STREAMS))))
    notes = list(space.notes)
    protocol, channel, batch_size = config.protocol, config.label_channel, config.batch_size
    groups, baseline, X_test, y_test = space.groups, space.baseline, space.X_test, space.y_test
    n_classes = len(space.dataset.classes)

    predict = space.predictor.predict_proba
    try:
        P_test = predict(X_test)
    except Exception as exc:
        raise ValueError(f"the model's predict_proba failed on the test rows ({type(exc).__name__}: {exc}).") from exc
    P_test = check_proba(P_test, len(X_test), n_classes=n_classes, what="the model's predict_proba on `test`")
    owner = np.empty(X_test.shape[1], dtype=np.intp)
    for g, cols in enumerate(groups.values()):
        owner[cols] = g
    _probe_baseline(predict, X_test[0], baseline, groups, owner)

    cert = stages.run(
        "certify test",
        certify,
        predict,
        pd.DataFrame(X_test, index=space.raw_test.index),
        groups,
        baseline,
        protocol,
        search=config.search,
        batch_size=batch_size,
        rows=True,
    )
    cert_val = _certify_validation(space, config=config, stages=stages)
    # The label channel sees the model and the inputs, never the certificate.
    labels = stages.run(
        "label channel",
        brittle_labels,
        predict,
        X_test,
        groups,
        baseline,
        channel=channel,
        noise_scale=noise_scale(space.X_train),
        seed=streams["label_channel"],
        batch_size=batch_size,
    )
    dataset = space.dataset
    unavailable = detect_unavailable_fields(
        dataset.frame, dataset.features, markers=dataset.markers, real_values=dataset.real_values
    )
    wanted = set(unavailable["column"])
    unavailable_groups = tuple(g for g, cols in groups.items() if any(space.origins[c] in wanted for c in cols))
    natural = naturalistic_stage(
        stages,
        predict=predict,
        X_test=X_test,
        groups=groups,
        baseline=baseline,
        unavailable_groups=unavailable_groups,
        label_channel=channel,
        batch_size=batch_size,
        notes=notes,
    )

    scores = certificate_scores(cert) | confidence_scores(P_test)
    score_notes: dict[str, str] = {}
    importance = shap_result = None
    if config.order_baselines:
        if space.X_val is None:
            raise ValueError("the order baselines need validation rows (permutation importance is measured on them).")
        scores["random_order"] = stages.run(
            "random-order baseline",
            random_order_scores,
            predict,
            X_test,
            groups,
            baseline,
            protocol,
            n_orders=config.n_random_orders,
            seed=streams["random_order"],
            batch_size=batch_size,
        )
        importance = stages.run(
            "permutation importance",
            permutation_group_importance,
            predict,
            space.X_val,
            space.y_val,
            groups,
            seed=streams["permutation"],
            batch_size=batch_size,
        )
        perm_cert = stages.run(
            "permutation-order baseline",
            certify,
            predict,
            X_test,
            groups,
            baseline,
            protocol,
            order=importance.order,
            batch_size=batch_size,
            rows=True,
        )
        scores["perm_order"] = perm_cert.table["u"].to_numpy(dtype=float)
    if config.shap:
        shap_result = stages.run(
            "group SHAP",
            group_shap_concentration,
            space.predictor,
            X_test,
            groups,
            explainer=space.shap_explainer,
            background=space.X_train,
            seed=streams["shap_background"],
        )
        scores["group_shap"] = shap_result.scores
        if shap_result.note:
            score_notes["group_shap"] = shap_result.note
            notes.append(f"group SHAP not computed for {space.model_name}: {shap_result.note}")
    evaluation = evaluate_scores(scores, labels, y_test, population=config.population, notes=score_notes)
    natural_eval = (
        None
        if natural is None
        else evaluate_scores(scores, natural, y_test, population=config.population, notes=score_notes)
    )

    sens = None
    if config.sensitivity:
        if not isinstance(space.preprocessor, FittedPreprocessor):
            raise ValueError("the protocol sensitivity needs the tool's own preprocessing (the bundled models).")
        variants = _variants(protocol, space.preprocessor, space.X_train, dataset, groups)
        sens = stages.run(
            "sensitivity",
            protocol_sensitivity,
            predict,
            X_test,
            variants,
            labels,
            scores["fds"],
            population=config.population,
            batch_size=batch_size,
        )
    search_table = None if config.search == "none" else search_diagnostics(cert)

    with warnings.catch_warnings():
        # An undefined AUROC / AP (one class in a small test split) is reported as NaN.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        nominal = nominal_metrics(y_test, P_test)
    calib = _calibration_stage(space, cert, cert_val, P_test, stages=stages, notes=notes)
    if space.space_kind != "tool":
        notes.append(
            f"feature space: {space.space_kind}"
            + (
                " (the pipeline's preprocessing output)"
                if space.space_kind == "pipeline"
                else " (one group per raw column; categories as one-hot blocks)"
            )
        )

    return AuditResult(
        dataset=dataset,
        split=space.split,
        seed=space.seed,
        model_name=space.model_name,
        model=space.predictor,
        preprocessor=space.preprocessor,
        groups=dict(groups),
        baseline=baseline,
        protocol=protocol,
        fingerprint=cert.fingerprint,
        label_channel=channel,
        raw_test=space.raw_test,
        X_test=X_test,
        y_test=y_test,
        proba_test=P_test,
        certificates=cert,
        labels=labels,
        scores=pd.DataFrame(scores, index=space.raw_test.index),
        evaluation=evaluation,
        unavailable=unavailable,
        unavailable_groups=unavailable_groups,
        naturalistic=natural,
        naturalistic_evaluation=natural_eval,
        nominal=nominal,
        calibration=calib,
        sensitivity=sens,
        search=search_table,
        importance=importance,
        group_shap=shap_result,
        timings=dict(stages.timings),
        notes=tuple(notes),
        source_model=space.source_model,
        space_kind=space.space_kind,
    )


def _certify_validation(space: FittedSpace, *, config: AuditConfig, stages: AuditStages) -> CertificateSet | None:
    """Certificates of the validation rows (BATS is fitted on their FDS); None without them."""
    if space.X_val is None:
        return None
    return stages.run(
        "certify validation",
        certify,
        space.predictor.predict_proba,
        space.X_val,
        space.groups,
        space.baseline,
        config.protocol,
        batch_size=config.batch_size,
        rows=True,
    )


def _calibration_stage(
    space: FittedSpace,
    cert: CertificateSet,
    cert_val: CertificateSet | None,
    P_test: np.ndarray,
    *,
    stages: AuditStages,
    notes: list[str],
) -> CalibrationReport:
    """Temperature scaling and BATS fitted on rows the model did not see, reported on test.

    BATS normalises FDS itself (SPEC A.7), not its monotone pre-image ``u``.
    """
    fds = cert.table["fds"].to_numpy()
    if cert_val is not None:
        P_val = check_proba(
            space.predictor.predict_proba(space.X_val), len(space.X_val), what="the model's predict_proba on validation"
        )
        return stages.run(
            "calibration",
            calibration_report,
            P_val,
            space.y_val,
            cert_val.table["fds"].to_numpy(),
            P_test,
            space.y_test,
            fds,
        )
    fit = space.calibration_half
    calib = stages.run(
        "calibration",
        calibration_report,
        P_test[fit],
        space.y_test[fit],
        fds[fit],
        P_test[~fit],
        space.y_test[~fit],
        fds[~fit],
    )
    notes.append(
        f"calibration fitted on a stratified half of the test rows ({int(fit.sum())}) and reported "
        f"on the other half ({int((~fit).sum())})"
    )
    return calib


def _probe_baseline(
    predict: Any, x: np.ndarray, baseline: np.ndarray, groups: Mapping[str, Sequence[int]], owner: np.ndarray
) -> None:
    """Call the model on the row with every group replaced by its baseline, one at a time.

    A model that fails there would fail deep inside the certificate; this names the group.
    """
    names = list(groups)
    masks = np.stack([owner == g for g in range(len(names))])
    rows = stack_removals(x[None, :], baseline, masks)[0]
    try:
        predict(np.vstack([rows, baseline[None, :]]))
        return
    except Exception:
        pass
    for g, name in enumerate(names):
        try:
            predict(rows[g : g + 1])
        except Exception as exc:
            raise ValueError(
                f"the model fails when group {name!r} is replaced by its baseline value ({type(exc).__name__}: {exc})."
            ) from exc
    try:
        predict(baseline[None, :])
    except Exception as exc:
        raise ValueError(
            f"the model fails on the baseline row (every group replaced) ({type(exc).__name__}: {exc})."
        ) from exc


# --------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------
def certificate_export(result: AuditResult) -> pd.DataFrame:
    """The certificate table of the test split, joined with labels and every risk score.

    Returns
    -------
    DataFrame
        One row per test row: ``row_id`` (source row id), ``y_true`` (the true class label),
        ``brittle``, ``high_confidence``, ``naturalistic_brittle`` (when available),
        ``near_tie`` (``|margin| <`` :data:`~core.cfc.fds.NEAR_TIE_MARGIN`: the top two classes
        are all but tied, so the row's RCMA divides by almost nothing), the
        certificate columns (``pred`` — the predicted class label —, ``confidence, margin,
        flip_budget, flipped, rcma, fds, u, one_step_max, degradation, path, path_margins,
        lambda_star_*`` …) and ``score_<name>`` for every evaluated risk score (larger =
        riskier). ``y_true`` and ``pred`` hold the model's class labels (:attr:`AuditResult.classes`),
        never ``predict_proba`` column indices. ``flip_budget`` keeps SPEC's ``K + 1`` where the
        path does not flip the prediction within depth ``K`` (``flipped`` False): numeric for
        sorting and verification, shown to people as "no flip ≤ K".
    """
    out = pd.DataFrame(
        {
            "row_id": result.certificates.table.index.to_numpy(),
            "y_true": result.class_of(result.y_test),
            "brittle": result.labels.labels,
            "high_confidence": result.labels.high_confidence,
        }
    )
    if result.naturalistic is not None:
        out["naturalistic_brittle"] = result.naturalistic.labels
    out["near_tie"] = near_tie(result.certificates.table["margin"].to_numpy(dtype=float))
    cert = result.certificates.table.reset_index(drop=True)
    cert["pred"] = result.class_of(cert["pred"].to_numpy())
    scores = result.scores.reset_index(drop=True).add_prefix("score_")
    return pd.concat([out, cert, scores], axis=1)


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    return None if frame is None else [jsonable(r) for r in frame.to_dict("records")]


def _capture_vs_ceiling_json(result: AuditResult) -> dict[str, dict[str, float]]:
    """``{score: {"capture@q", "ceiling@q", "capture/ceiling@q"}}`` for every budget of the evaluation."""
    out: dict[str, dict[str, float]] = {}
    for row in result.capture_vs_ceiling.to_dict("records"):
        q = round(100 * row["budget"])
        out.setdefault(row["score"], {}).update(
            {
                f"capture@{q}": row["capture"],
                f"ceiling@{q}": row["ceiling"],
                f"capture/ceiling@{q}": row["capture_ratio"],
            }
        )
    return out


def _guarantee_json(result: AuditResult) -> dict[str, Any]:
    """The FDS queue's capture guarantee at the summary budgets (:meth:`AuditResult.capture_bound`)."""
    bounds = [result.capture_bound(q / 100, confidence=GUARANTEE_CONFIDENCE, score="fds") for q in GUARANTEE_PERCENTS]
    return {
        "score": "fds",
        "confidence": GUARANTEE_CONFIDENCE,
        "method": bounds[0].method,
        "statement": "with probability at least `confidence`, the rule 'review every new prediction whose "
        "score is at least `threshold`' catches at least `lower` of the brittle predictions of new data from "
        "the same source (docs/method.md, A.6)",
        "budgets": [
            {
                **{k: v for k, v in dataclasses.asdict(b).items() if k not in ("method", "confidence")},
                "text": guarantee_text(b),
            }
            for b in bounds
        ],
    }


def evaluation_json(result: AuditResult) -> dict[str, Any]:
    """Evaluation of an audit as plain JSON (NaN → ``null``).

    ``scores`` holds one entry per risk score (its kind, orientation and metrics against the
    held-out labels); ``capture_vs_ceiling`` per score its ``capture@q``, ``ceiling@q`` (the
    best any ranking reaches) and ``capture/ceiling@q``; ``capture_guarantee`` the FDS queue's
    lower confidence bound on what it catches on new data (:meth:`AuditResult.capture_bound`)
    at 5, 10 and 20 %; ``naturalistic`` the same as ``scores`` against the naturalistic labels (or null);
    then nominal metrics, fragility summary, calibration, sensitivity and search diagnostics.
    """

    def by_score(frame: pd.DataFrame | None) -> dict[str, Any] | None:
        if frame is None:
            return None
        return {row["score"]: {k: v for k, v in row.items() if k != "score"} for row in _records(frame)}

    return jsonable(
        {
            "dataset": result.dataset.name,
            "model": result.model_name,
            "seed": result.seed,
            "fingerprint": result.fingerprint,
            "n_test": int(len(result.y_test)),
            "n_high_confidence": int(result.labels.high_confidence.sum()),
            "n_brittle": int(result.labels.labels.sum()),
            "scores": by_score(result.evaluation),
            "capture_vs_ceiling": _capture_vs_ceiling_json(result),
            "capture_guarantee": _guarantee_json(result),
            "naturalistic": by_score(result.naturalistic_evaluation),
            "unavailable_groups": list(result.unavailable_groups),
            "nominal": result.nominal,
            "fragility": result.fragility,
            "calibration": {
                "t0": result.calibration.bats.t0,
                "eta": result.calibration.bats.eta,
                "metrics": _records(result.calibration.metrics),
            },
            "sensitivity": _records(result.sensitivity),
            "search": _records(result.search),
            "notes": list(result.notes),
        }
    )


def protocol_json(result: AuditResult) -> dict[str, Any]:
    """The declared protocol with its fingerprints, groups and label channel, as plain JSON.

    ``classes`` lists the class labels in ``predict_proba`` column order (the labels of the
    certificate table's ``y_true`` / ``pred``); folders written before it existed lack it and
    hold column indices there.
    """
    return jsonable(
        {
            "protocol": result.protocol.to_dict(),
            "protocol_fingerprint": result.protocol.fingerprint,
            "certificate_fingerprint": result.fingerprint,
            "label_channel": result.label_channel.to_dict(),
            "dataset": result.dataset.name,
            "source": result.dataset.source,
            "model": result.model_name,
            "seed": result.seed,
            "classes": list(result.classes),
            "split": {
                "val_size": result.split.val_size,
                "test_size": result.split.test_size,
                "n_train": len(result.split.train_index),
                "n_val": len(result.split.val_index),
                "n_test": len(result.split.test_index),
            },
            "groups": result.groups,
            "baseline": result.baseline,
            "depth": result.certificates.depth,
        }
    )


def markdown_table(frame: pd.DataFrame, *, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (floats rounded, NaN shown as ``–``)."""

    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "–" if not math.isfinite(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(str(c).replace("|", "\\|") for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def summary_markdown(result: AuditResult) -> str:
    """A short human-readable summary of an audit (Markdown)."""
    f = result.fragility
    ev = result.evaluation.set_index("score")
    conf = ev[ev["kind"] == "confidence"]
    best_conf = strongest_confidence_score(result.evaluation)
    lines = [
        f"# Fragility audit: {result.dataset.name} / {result.model_name} / seed {result.seed}",
        "",
        f"- Certificate fingerprint: `{result.fingerprint}`",
        f"- Protocol: grouping `{result.protocol.grouping}` ({len(result.groups)} groups), baseline "
        f"`{result.protocol.baseline}`, depth {result.certificates.depth}, path `{result.certificates.path_rule}`",
        f"- Classes (predict_proba column order): {', '.join(map(str, result.classes))}",
        f"- Test rows: {len(result.y_test)}; high-confidence (p̂ ≥ {result.label_channel.tau_p}): "
        f"{int(result.labels.high_confidence.sum())}; held-out brittle: {int(result.labels.labels.sum())}",
        f"- Nominal: accuracy {result.nominal['accuracy']:.3f}, AUROC {result.nominal['auroc']:.3f}, "
        f"NLL {result.nominal['nll']:.3f}, ECE {result.nominal['ece']:.3f}",
        f"- Fragility: {rcma_headline_text(f, n=len(result.y_test))}; share with k* ≤ 2 {f['share_k_le_2']:.3f}, "
        f"share brittle {f['share_brittle']:.3f}",
    ]
    ceiling = result.capture_vs_ceiling.set_index(["score", "budget"])
    if best_conf is not None:
        lines.append(
            f"- FDS AUROC {ev.loc['fds', 'auroc']:.3f} vs strongest confidence score ({best_conf}) "
            f"{conf.loc[best_conf, 'auroc']:.3f}; Capture@20 {ev.loc['fds', 'capture@20']:.3f} vs "
            f"{conf.loc[best_conf, 'capture@20']:.3f}, of a best possible {ceiling.loc[('fds', 0.2), 'ceiling']:.3f} "
            f"({ceiling.loc[('fds', 0.2), 'capture_ratio']:.2f} vs {ceiling.loc[(best_conf, 0.2), 'capture_ratio']:.2f} "
            "of the ceiling)"
        )
    guarantee = _guarantee_json(result)
    lines += [
        "- Capture guarantee (FDS queue, new data from the same source): "
        + "; ".join(b["text"] for b in guarantee["budgets"])
        + f" [{guarantee['method']}; docs/method.md, A.6]"
    ]
    population = (
        "high-confidence test rows" if result.evaluation["population"].iloc[0] == "high_confidence" else "all test rows"
    )
    lines += [
        "",
        f"## Held-out brittle-case ranking ({population})",
        "",
        markdown_table(
            result.evaluation[
                ["score", "kind", "auroc", "capture@5", "capture@10", "capture@20", "aurc", "false_conf_captured@20"]
            ]
        ),
    ]
    wide = result.capture_vs_ceiling.pivot(index="score", columns="budget")
    table = pd.DataFrame({"score": wide.index})
    for budget in sorted(result.capture_vs_ceiling["budget"].unique()):
        q = round(100 * budget)
        table[f"capture@{q}"] = wide[("capture", budget)].to_numpy()
        table[f"ceiling@{q}"] = wide[("ceiling", budget)].to_numpy()
        table[f"÷ceiling@{q}"] = wide[("capture_ratio", budget)].to_numpy()
    order = {name: i for i, name in enumerate(result.evaluation["score"])}
    table = table.sort_values("score", key=lambda c: c.map(order))
    lines += [
        "",
        "## Capture against its ceiling",
        "",
        "The ceiling is the best capture any ranking reaches with the budget's k reviews, min(1, k / brittle); "
        "÷ceiling = capture / ceiling (1 = as good as possible).",
        "",
        markdown_table(table),
    ]
    if result.naturalistic_evaluation is not None:
        lines += [
            "",
            f"## Naturalistic labels (groups replaced: {', '.join(result.unavailable_groups)})",
            "",
            markdown_table(result.naturalistic_evaluation[["score", "n_brittle", "auroc", "capture@20"]]),
        ]
    lines += [
        "",
        "## Calibration (fitted on validation)",
        "",
        f"T0 = {result.calibration.bats.t0:.3f}, BATS η = {result.calibration.bats.eta:g}",
        "",
        markdown_table(result.calibration.metrics),
    ]
    if result.sensitivity is not None:
        lines += [
            "",
            "## Protocol sensitivity",
            "",
            markdown_table(result.sensitivity[["kind", "rule", "n_groups", "auroc", "spearman"]]),
        ]
    if result.search is not None:
        lines += ["", "## Greedy vs exact / beam flip search", "", markdown_table(result.search)]
    if result.notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in result.notes]]
    return "\n".join(lines) + "\n"


def write_audit(result: AuditResult, directory: str | Path, *, made_by: str = "") -> list[Path]:
    """Write the audit's files into an existing ``directory``.

    Files: ``certificates.parquet`` and ``certificates.csv`` (:func:`certificate_export`;
    list cells as JSON in the CSV), ``evaluation.json`` (:func:`evaluation_json`),
    ``protocol.json`` (:func:`protocol_json`), ``summary.md`` (:func:`summary_markdown`),
    ``train.parquet`` / ``test.parquet`` (the raw rows) and ``_task.zip`` — the fitted
    preprocessing, model, groups, baseline and protocol in safe formats (skops, native model
    files, JSON; :mod:`core.tabular.certify_task`), so that ``python -m core certify --audit DIR
    --data BIG`` certifies a large table with this audit's model under this audit's
    fingerprint, and the dashboard can reopen the folder.

    Returns
    -------
    list of Path
        The files written.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"Output directory {str(directory)!r} does not exist.")
    table = certificate_export(result)
    written = [
        directory / name
        for name in ("certificates.parquet", "certificates.csv", "evaluation.json", "protocol.json", "summary.md")
    ]
    # Each file through the one atomic writer (the CLI also builds the folder atomically).
    with atomic_path(written[0]) as tmp:
        table.to_parquet(tmp, index=False)
    flat = table.copy()
    for col in ("path", "path_margins"):
        flat[col] = [json.dumps(jsonable(v)) for v in flat[col]]
    from core.csv_safe import write_csv  # formula cells neutralised (CSV injection); Parquet keeps raw values

    with atomic_path(written[1]) as tmp:
        write_csv(flat, tmp, index=False)
    atomic_write_text(written[2], json.dumps(evaluation_json(result), indent=2, allow_nan=False) + "\n")
    atomic_write_text(written[3], json.dumps(protocol_json(result), indent=2, allow_nan=False) + "\n")
    atomic_write_text(written[4], summary_markdown(result))
    for name, part in (("train.parquet", result.split.train), ("test.parquet", result.raw_test)):
        written.append(directory / name)
        with atomic_path(written[-1]) as tmp:
            parquet_safe(part).to_parquet(tmp, index=True)
    # Imported here so that importing the audit does not load pyarrow's compute kernels.
    from core.tabular.certify_task import TASK_FILE, save_certify_task, task_from_audit

    written.append(save_certify_task(task_from_audit(result), directory / TASK_FILE))

    return written + write_view(result, directory, made_by=made_by)


# --------------------------------------------------------------------------------------------
# Sweeps over datasets × models × seeds
# --------------------------------------------------------------------------------------------
#: Columns of :attr:`SweepResult.table` (means over seeds per dataset and model).
SWEEP_TABLE_COLUMNS = (
    "dataset",
    "model",
    "n_seeds",
    *NOMINAL_METRICS,
    "mean_rcma",
    "n_near_tie",
    "share_k_le_2",
    "share_brittle",
    "fds_auroc",
    "conf_auroc",
    "fds_capture@20",
    "conf_capture@20",
    "fds_win_rate",
)


@dataclass(frozen=True, kw_only=True)
class SweepResult:
    """Audits of many dataset–model–seed units.

    Attributes
    ----------
    units : DataFrame
        Long format: ``dataset, model, seed`` + the :func:`~core.cfc.evaluation.evaluate_scores`
        columns, one row per unit and score.
    runs : DataFrame
        One row per unit: nominal metrics, fragility summary, ``fds_auroc`` / ``fds_capture@20``
        and ``conf_auroc`` / ``conf_capture@20`` of the unit's strongest confidence score
        (:func:`~core.cfc.evaluation.strongest_confidence_score`; NaN when no confidence score
        has a defined AUROC), ``fingerprint`` and ``seconds``.
    table : DataFrame
        Means over seeds per (dataset, model), columns :data:`SWEEP_TABLE_COLUMNS`;
        ``fds_win_rate`` is the share of seeds where FDS AUROC beats the strongest confidence
        score's.
    bootstrap : DataFrame
        :func:`~core.cfc.evaluation.paired_bootstrap` of AUROC over all units.
    """

    units: pd.DataFrame
    runs: pd.DataFrame
    table: pd.DataFrame
    bootstrap: pd.DataFrame


def _name_list(values: Sequence[Any] | str | int, name: str) -> list[Any]:
    items = [values] if isinstance(values, (str, int)) else list(values)
    if not items:
        raise ValueError(f"`{name}` must name at least one entry.")
    if len(set(items)) != len(items):
        raise ValueError(f"`{name}` repeats an entry: {items}.")
    return items


def run_sweep(
    datasets: Sequence[str | Dataset] | str,
    models: Sequence[str] | str,
    seeds: Sequence[int] | int,
    *,
    n_resamples: int = 2000,
    bootstrap_seed: int = 0,
    progress: Progress | None = None,
    on_result: Callable[[AuditResult], object] | None = None,
    options: AuditOptions | None = None,
    **audit_options: Any,
) -> SweepResult:
    """Audit every dataset × model × seed and summarise (paper-style table, bootstrap).

    Parameters
    ----------
    datasets : sequence of str or Dataset
        Bundled names or loaded datasets.
    models : sequence of str
    seeds : sequence of int
    n_resamples : int, default=2000
        Bootstrap resamples over the units.
    bootstrap_seed : int, default=0
        Seed of the bootstrap resamples.
    progress : callable(label, done, total), optional
        Called before each unit with ``("dataset / model / seed k", units done, units in all)``
        and once at the end.
    on_result : callable(AuditResult), optional
        Called with every unit's full result (e.g. to write it out); the sweep itself keeps
        only the summaries, so memory does not grow with the number of units.
    options : AuditOptions, optional
        The options of every unit (``protocol``, ``label_channel``, ``max_rows``,
        ``order_baselines``, ``shap``, …); its ``model`` and ``seed`` are set per unit.
    **audit_options
        Fields of :class:`AuditOptions` by name (on top of ``options``), except ``model`` and
        ``seed``.

    Returns
    -------
    SweepResult
    """
    datasets, models, seeds = (
        _name_list(v, n) for v, n in ((datasets, "datasets"), (models, "models"), (seeds, "seeds"))
    )
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"`models` names unknown model {unknown[0]!r}; known: {list(MODEL_NAMES)}.")
    for key in ("data", "model", "seed"):
        if key in audit_options:
            raise ValueError(f"`{key}` is set by the sweep itself; it cannot be passed through.")
    unknown = sorted(set(audit_options) - {f.name for f in dataclasses.fields(AuditOptions)})
    if unknown:
        raise TypeError(f"run_sweep() got an unexpected keyword argument {unknown[0]!r}.")
    if options is not None and not isinstance(options, AuditOptions):
        raise ValueError(f"`options` must be an AuditOptions; got {type(options).__name__}.")
    base = dataclasses.replace(AuditOptions() if options is None else options, **audit_options)
    loaded = [load_dataset(d) if isinstance(d, str) else d for d in datasets]  # fail fast on a bad name
    total = len(loaded) * len(models) * len(seeds)
    units, runs = [], []
    i = 0
    for ds in loaded:
        for m in models:
            for s in seeds:
                if progress is not None:
                    progress(f"{ds.name} / {m} / seed {s}", i, total)
                i += 1
                start = time.perf_counter()
                res = run_audit(ds, options=dataclasses.replace(base, model=m, seed=s))
                if on_result is not None:
                    on_result(res)
                key = {"dataset": ds.name, "model": m, "seed": s}
                units.append(res.evaluation.assign(**key))
                ev = res.evaluation.set_index("score")
                best = strongest_confidence_score(res.evaluation)  # None: no confidence AUROC defined -> NaN
                runs.append(
                    {
                        **key,
                        **res.nominal,
                        **res.fragility,
                        "fds_auroc": ev.loc["fds", "auroc"],
                        "conf_auroc": ev.loc[best, "auroc"] if best else np.nan,
                        "fds_capture@20": ev.loc["fds", "capture@20"],
                        "conf_capture@20": ev.loc[best, "capture@20"] if best else np.nan,
                        "fingerprint": res.fingerprint,
                        "seconds": time.perf_counter() - start,
                    }
                )
    if progress is not None:
        progress("sweep done", total, total)
    units_df = pd.concat(units, ignore_index=True)
    units_df = units_df[
        ["dataset", "model", "seed", *[c for c in units_df.columns if c not in ("dataset", "model", "seed")]]
    ]
    runs_df = pd.DataFrame(runs)
    runs_df["fds_win"] = (runs_df["fds_auroc"] > runs_df["conf_auroc"]).astype(float)
    runs_df.loc[runs_df[["fds_auroc", "conf_auroc"]].isna().any(axis=1), "fds_win"] = np.nan
    metrics = [c for c in SWEEP_TABLE_COLUMNS if c not in ("dataset", "model", "n_seeds", "fds_win_rate")]
    grouped = runs_df.groupby(["dataset", "model"], sort=False)
    table = grouped[metrics].mean()
    table.insert(0, "n_seeds", grouped.size())
    table["fds_win_rate"] = grouped["fds_win"].mean()
    table = table.reset_index()[list(SWEEP_TABLE_COLUMNS)]
    return SweepResult(
        units=units_df,
        runs=runs_df.drop(columns="fds_win"),
        table=table,
        bootstrap=paired_bootstrap(units_df, n_resamples=n_resamples, seed=bootstrap_seed),
    )
