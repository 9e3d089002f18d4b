"""Held-out evaluation of brittleness rankings (SPEC A.6).

A *ranking score* ``s`` is any per-sample array oriented so that **larger = riskier**. It is
judged against held-out brittle labels ``b`` (from :mod:`core.cfc.stressors`, never from the
certificate) on the evaluated population — by default the high-confidence set ``p̂ ≥ τ_p``.

Metrics (all of them expected values under uniformly random tie-breaking, so a constant score
is exactly as good as a random ranking):

- ``auroc``: probability that a brittle sample outranks a non-brittle one, ties counted ½.
- ``capture@q``: ``E|Top_q(s) ∩ ℬ| / |ℬ|`` with ``k = max(1, ⌊q·n + ½⌋)`` reviewed samples;
  samples tied at the cut-off are *prorated*.
- ``aurc``: escalate samples from the highest score down; after ``j`` escalations
  (``j = 0 … n−1``) the residual risk is the brittle rate among the ``n − j`` samples left;
  AURC is the mean residual risk over these ``n`` coverages (lower is better).
- ``false_conf_captured@20``: ``capture@20`` with the high-confidence *misclassified* samples
  as positives instead of the brittle ones.

Besides the metrics, this module builds the non-certificate and ablation scores (confidence
scores, one-step drop, random-order and permutation-importance-order certificates, group-SHAP
concentration), the protocol-sensitivity table, the greedy-vs-exact/beam summary, and paired
bootstrap intervals over dataset–model–seed units.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._rng import as_generator
from core.cfc.certificate_set import CertificateSet
from core.cfc.certification import certify
from core.cfc.operators import GroupIndex, check_features, predict_batched
from core.cfc.protocol import Protocol
from core.cfc.scores import clip_renormalize, predicted_class, risk_scores
from core.cfc.stressors import BrittleLabels
from core.exceptions import UndefinedMetricWarning
from core.metrics import ranking as _metrics
from core.metrics.ranking import (
    aurc_from_curve,
    capture_from_curve,
    check_ranking,
    review_budget,
    roc_auc_rows,
)
from core.optional import require
from core.validation import check_batch_size

__all__ = [
    "BOOTSTRAP_COLUMNS",
    "EVALUATION_COLUMNS",
    "NON_CERTIFICATE_KINDS",
    "SCORES",
    "Population",
    "SENSITIVITY_COLUMNS",
    "GroupImportance",
    "GroupShap",
    "ProtocolVariant",
    "ScoreInfo",
    "UndefinedMetricWarning",
    "aurc",
    "auroc",
    "capture_at",
    "certificate_scores",
    "confidence_scores",
    "evaluate_scores",
    "expected_top_positives",
    "group_shap_concentration",
    "paired_bootstrap",
    "permutation_group_importance",
    "protocol_sensitivity",
    "random_order_scores",
    "review_budget",
    "search_diagnostics",
    "strongest_confidence_score",
]


# --------------------------------------------------------------------------------------------
# Ranking metrics: the formulas live in core.metrics.ranking; these keep the (scores, labels)
# names that the evaluation tables, the dashboard and the tests use.
# --------------------------------------------------------------------------------------------
def _ranking_iv(scores: ArrayLike, labels: ArrayLike, *, name: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    y, s, _ = check_ranking(labels, scores, label_name="labels", score_name=name)
    return s, y


def expected_top_positives(scores: ArrayLike, labels: ArrayLike) -> np.ndarray:
    """:func:`core.metrics.ranking.expected_top_positives` with the arguments ``(scores, labels)``.

    Examples
    --------
    >>> expected_top_positives([0.9, 0.8, 0.8, 0.1], [1, 0, 1, 0]).tolist()
    [0.0, 1.0, 1.5, 2.0, 2.0]
    """
    s, y = _ranking_iv(scores, labels)
    return _metrics.expected_top_positives(y, s)


def _auroc(s: np.ndarray, y: np.ndarray) -> float:
    return float(roc_auc_rows(y.astype(float)[None], s, np.ones((1, s.size)))[0])


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Area under the ROC curve of a risk score against binary labels, ties counted ½.

    :func:`core.metrics.ranking.roc_auc` with the arguments ``(scores, labels)``.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Risk scores, larger = riskier (more likely positive).
    labels : array-like of shape (n_samples,)
        Boolean (or 0/1) positives, e.g. held-out brittle labels.

    Returns
    -------
    float
        ``P(s_pos > s_neg) + ½·P(s_pos = s_neg)``; ``NaN`` with an
        :class:`UndefinedMetricWarning` when only one class is present.

    Examples
    --------
    >>> auroc([0.9, 0.8, 0.8, 0.1], [1, 0, 1, 0])
    0.875
    """
    s, y = _ranking_iv(scores, labels)
    value = _auroc(s, y)
    if math.isnan(value):
        warnings.warn("AUROC is undefined: the labels contain only one class.", UndefinedMetricWarning, stacklevel=2)
    return value


def capture_at(scores: ArrayLike, labels: ArrayLike, q: float) -> float:
    """Share of the positives found by reviewing the top ``q`` fraction of a risk ranking.

    ``Capture@q = E|Top_k(s) ∩ ℬ| / |ℬ|`` with ``k = review_budget(q, n)``; samples tied at the
    cut-off are prorated (:mod:`core.metrics.ranking`).

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Risk scores, larger = riskier.
    labels : array-like of shape (n_samples,)
        Boolean (or 0/1) positives ``ℬ``.
    q : float
        Review budget as a fraction in (0, 1], e.g. 0.2 for Capture@20.

    Returns
    -------
    float
        In [0, 1]; ``NaN`` with an :class:`UndefinedMetricWarning` when there is no positive.

    Examples
    --------
    >>> capture_at([0.9, 0.8, 0.8, 0.1], [1, 0, 1, 0], 0.5)
    0.75
    """
    s, y = _ranking_iv(scores, labels)
    review_budget(q, s.size)  # validate q before the work
    value = capture_from_curve(_metrics.expected_top_positives(y, s), q)
    if math.isnan(value):
        warnings.warn("Capture@q is undefined: there is no positive sample.", UndefinedMetricWarning, stacklevel=2)
    return value


def aurc(scores: ArrayLike, labels: ArrayLike) -> float:
    """:func:`core.metrics.ranking.aurc` (lower is better) with the arguments ``(scores, labels)``.

    Examples
    --------
    >>> round(aurc([0.9, 0.8, 0.8, 0.1], [1, 0, 1, 0]), 6)
    0.270833
    """
    s, y = _ranking_iv(scores, labels)
    return _metrics.aurc(y, s)


# --------------------------------------------------------------------------------------------
# The scores under evaluation
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreInfo:
    """What a ranking score is.

    Attributes
    ----------
    kind : {"certificate", "certificate_ablation", "confidence", "perturbation", "attribution"}
        ``certificate`` scores come from the certificate itself; ``certificate_ablation`` are
        certificates under a non-greedy path; the other three kinds are the non-certificate
        scores that win rates are measured against.
    orientation : str
        How the risk score is computed (every score: larger = riskier).
    """

    kind: ScoreKind
    orientation: str


ScoreKind = Literal["certificate", "certificate_ablation", "confidence", "perturbation", "attribution"]
NON_CERTIFICATE_KINDS: tuple[str, ...] = ("confidence", "perturbation", "attribution")

#: Every score this module knows, in display order.
SCORES: Mapping[str, ScoreInfo] = MappingProxyType(
    {
        "fds": ScoreInfo("certificate", "FDS = 1 − exp(−u), ranked by u (same order, no float saturation)"),
        "rcma": ScoreInfo("certificate", "RCMA, normalised margin-collapse area"),
        "inv_flip_budget": ScoreInfo("certificate", "1/k*, reciprocal greedy flip budget"),
        "degradation": ScoreInfo("certificate", "(1/|ℙ|) Σ_P 1[λ*_P < ∞]/(λ*_P + 1e-8)"),
        "max_softmax": ScoreInfo("confidence", "−max p̃"),
        "entropy": ScoreInfo("confidence", "+entropy of p̃"),
        "margin": ScoreInfo("confidence", "−(z̃(1) − z̃(2))"),
        "neg_energy": ScoreInfo("confidence", "−log Σ exp z̃"),
        "one_step": ScoreInfo("perturbation", "max_g δ_g, largest one-step margin drop"),
        "random_order": ScoreInfo("certificate_ablation", "mean u over random global group orders"),
        "perm_order": ScoreInfo("certificate_ablation", "u under the permutation-importance group order"),
        "group_shap": ScoreInfo("attribution", "largest group's share of Σ|SHAP|"),
    }
)


def certificate_scores(certificates: CertificateSet) -> dict[str, np.ndarray]:
    """Certificate and one-step risk scores of a certificate set.

    Parameters
    ----------
    certificates : CertificateSet

    Returns
    -------
    dict of str -> ndarray of shape (n_samples,)
        ``fds`` (the value of ``u``; FDS is monotone in it), ``rcma``, ``inv_flip_budget``
        (``1/k*``), ``degradation`` and ``one_step`` (``max_g δ_g``); larger = riskier.
    """
    t = certificates.table
    return {
        "fds": t["u"].to_numpy(dtype=float),
        "rcma": t["rcma"].to_numpy(dtype=float),
        "inv_flip_budget": 1.0 / t["flip_budget"].to_numpy(dtype=float),
        "degradation": t["degradation"].to_numpy(dtype=float),
        "one_step": t["one_step_max"].to_numpy(dtype=float),
    }


def confidence_scores(proba: ArrayLike) -> dict[str, np.ndarray]:
    """The four confidence baselines of SPEC A.2 as risk scores (larger = riskier).

    Parameters
    ----------
    proba : array-like of shape (n_samples, n_classes)

    Returns
    -------
    dict of str -> ndarray of shape (n_samples,)
        ``max_softmax``, ``entropy``, ``margin``, ``neg_energy``.
    """
    frame = risk_scores(proba)
    return {name.removeprefix("risk_"): frame[name].to_numpy() for name in frame.columns}


# --------------------------------------------------------------------------------------------
# Evaluating many scores at once
# --------------------------------------------------------------------------------------------
Population = Literal["high_confidence", "all"]

#: Columns of :func:`evaluate_scores`.
EVALUATION_COLUMNS = (
    "score",
    "kind",
    "orientation",
    "population",
    "n",
    "n_brittle",
    "auroc",
    "capture@5",
    "capture@10",
    "capture@20",
    "aurc",
    "false_conf_captured@20",
    "note",
)


def evaluate_scores(
    scores: Mapping[str, ArrayLike],
    labels: BrittleLabels,
    y_true: ArrayLike,
    *,
    population: Population = "high_confidence",
    notes: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Evaluate ranking scores against held-out brittle labels (SPEC A.6).

    Parameters
    ----------
    scores : mapping str -> array-like of shape (n_samples,)
        Risk scores, larger = riskier. A score that is entirely ``NaN`` is reported with NaN
        metrics and its ``notes`` entry (e.g. SHAP not available for the model); a partly
        ``NaN`` score is an error.
    labels : BrittleLabels
        Held-out labels of the same samples (also supplies ``p̂``, ``ŷ`` and the
        high-confidence mask).
    y_true : array-like of shape (n_samples,)
        True class indices, used only by ``false_conf_captured@20``.
    population : {"high_confidence", "all"}, default="high_confidence"
        Evaluate on ``p̂ ≥ τ_p`` (SPEC default) or on every sample.
    notes : mapping str -> str, optional
        Explanations attached to scores (shown in ``note``).

    Returns
    -------
    DataFrame
        One row per score with the columns of :data:`EVALUATION_COLUMNS`: ``kind`` and
        ``orientation`` from :data:`SCORES` (``"custom"`` / ``"larger = riskier"`` for unknown
        names), ``n`` evaluated samples, ``n_brittle``, ``auroc`` (higher better),
        ``capture@5/10/20`` (higher better), ``aurc`` (lower better),
        ``false_conf_captured@20`` (higher better) and ``note``. Undefined metrics are NaN and
        ``note`` says why; no warning is raised.
    """
    if population not in ("high_confidence", "all"):
        raise ValueError(f"`population` must be 'high_confidence' or 'all'; got {population!r}.")
    if not isinstance(labels, BrittleLabels):
        raise ValueError(f"`labels` must be BrittleLabels (from core.cfc.stressors); got {type(labels).__name__}.")
    n = labels.labels.shape[0]
    y_true = np.asarray(y_true)
    if y_true.shape != (n,):
        raise ValueError(f"`y_true` must have shape ({n},) like the labels; got {y_true.shape}.")
    notes = dict(notes or {})
    mask = labels.high_confidence if population == "high_confidence" else np.ones(n, dtype=bool)
    b = labels.labels[mask]
    false_conf = ((labels.prediction != y_true) & labels.high_confidence)[mask]
    rows = []
    for name, values in scores.items():
        s = np.asarray(values, dtype=float)
        if s.shape != (n,):
            raise ValueError(f"Score {name!r} must have shape ({n},) like the labels; got {s.shape}.")
        info = SCORES.get(name, ScoreInfo("custom", "larger = riskier"))  # type: ignore[arg-type]
        row = {
            "score": name,
            "kind": info.kind,
            "orientation": info.orientation,
            "population": population,
            "n": int(mask.sum()),
            "n_brittle": int(b.sum()),
            "auroc": math.nan,
            "capture@5": math.nan,
            "capture@10": math.nan,
            "capture@20": math.nan,
            "aurc": math.nan,
            "false_conf_captured@20": math.nan,
        }
        why = [notes[name]] if name in notes else []
        if np.isnan(s).all():
            why = why or ["score not available"]
        elif not mask.any():
            why.append(f"no sample with p̂ ≥ {labels.tau_p}")
        else:
            sv, bv = _ranking_iv(s[mask], b, name=f"scores[{name!r}]")
            top = _metrics.expected_top_positives(bv, sv)
            row["auroc"] = _auroc(sv, bv)
            for q in (5, 10, 20):
                row[f"capture@{q}"] = capture_from_curve(top, q / 100)
            row["aurc"] = aurc_from_curve(top)
            row["false_conf_captured@20"] = capture_from_curve(_metrics.expected_top_positives(false_conf, sv), 0.2)
            if not bv.any():
                why.append("no brittle sample: AUROC and capture undefined")
            elif bv.all():
                why.append("every sample brittle: AUROC undefined")
            if not false_conf.any():
                why.append("no high-confidence error: false_conf_captured@20 undefined")
        row["note"] = "; ".join(why)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(EVALUATION_COLUMNS))


# --------------------------------------------------------------------------------------------
# Ordering and attribution baselines
# --------------------------------------------------------------------------------------------
def strongest_confidence_score(evaluation: pd.DataFrame) -> str | None:
    """The confidence score FDS is compared with: the one of highest AUROC in an evaluation table.

    Parameters
    ----------
    evaluation : DataFrame
        :func:`evaluate_scores` rows (columns ``score``, ``kind``, ``auroc``).

    Returns
    -------
    str or None
        The ``score`` of kind ``"confidence"`` with the highest AUROC (ties: the first in table
        order). **None** when no confidence score has a defined AUROC (one class only in the
        population, or no confidence score in the table): there is then nothing to compare
        with, and callers show no comparison (NaN in tables) rather than an undefined one.

    Examples
    --------
    >>> ev = pd.DataFrame({"score": ["fds", "max_softmax", "margin"], "kind": ["certificate", "confidence",
    ...                    "confidence"], "auroc": [0.9, 0.6, 0.7]})
    >>> strongest_confidence_score(ev)
    'margin'
    >>> print(strongest_confidence_score(ev.assign(auroc=np.nan)))
    None
    """
    missing = {"score", "kind", "auroc"} - set(evaluation.columns)
    if missing:
        raise ValueError(f"`evaluation` must have the columns score, kind and auroc; missing {sorted(missing)}.")
    conf = evaluation[(evaluation["kind"] == "confidence") & evaluation["auroc"].notna()]
    if conf.empty:
        return None
    return str(conf["score"].iloc[int(np.argmax(conf["auroc"].to_numpy(dtype=float)))])


def random_order_scores(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    protocol: Protocol | None = None,
    *,
    n_orders: int = 5,
    seed: int | np.random.Generator,
    batch_size: int = 65536,
) -> np.ndarray:
    """Random-group-order baseline: the certificate with a random global path, averaged.

    For each of ``n_orders`` random permutations of the groups, every sample is certified
    with that fixed removal order (:func:`core.cfc.certify` with ``order=``); the
    score is the mean of ``u`` (the monotone form of FDS) over the orders. The degradation term
    does not depend on the path, so this isolates what the per-sample greedy path adds.

    Parameters
    ----------
    predict_proba, X, groups, baseline, protocol
        As in :func:`core.cfc.certify`.
    n_orders : int, default=5
        Number ``R`` of random orders.
    seed : int or numpy.random.Generator
        Stream of the random orders (independent of the label channel's).
    batch_size : int, default=65536

    Returns
    -------
    ndarray of shape (n_samples,)
        Risk score, larger = riskier.
    """
    if isinstance(n_orders, bool) or not isinstance(n_orders, (int, np.integer)) or n_orders < 1:
        raise ValueError(f"`n_orders` must be a positive int; got {n_orders!r}.")
    rng = as_generator(seed)
    names = list(groups)
    total = None
    for _ in range(n_orders):
        order = [names[i] for i in rng.permutation(len(names))]
        u = certify(predict_proba, X, groups, baseline, protocol, order=order, batch_size=batch_size).table["u"]
        total = u.to_numpy(dtype=float) if total is None else total + u.to_numpy(dtype=float)
    return total / n_orders


@dataclass(frozen=True)
class GroupImportance:
    """Group permutation importance on held-out data.

    Attributes
    ----------
    importance : pandas.Series
        Mean increase of the log-loss when the group's columns are permuted jointly across
        rows, indexed by group name in declared order.
    order : tuple of str
        Groups by decreasing importance (ties in declared order).
    baseline_loss : float
        Log-loss of the unpermuted data.
    n_repeats : int
    """

    importance: pd.Series
    order: tuple[str, ...]
    baseline_loss: float
    n_repeats: int


def permutation_group_importance(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    y: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    *,
    n_repeats: int = 5,
    seed: int | np.random.Generator,
    batch_size: int = 65536,
) -> GroupImportance:
    """Global group order from validation loss increase under joint permutation of each group.

    All ``G · n_repeats`` permuted copies of ``X`` are stacked and scored in batched calls.

    Parameters
    ----------
    predict_proba : callable
    X : array-like of shape (n_samples, n_features)
        Transformed validation inputs.
    y : array-like of shape (n_samples,)
        Validation class indices.
    groups : mapping str -> sequence of int
    n_repeats : int, default=5
    seed : int or numpy.random.Generator
    batch_size : int, default=65536

    Returns
    -------
    GroupImportance
    """
    A, _ = check_features(X)
    gi = GroupIndex.from_groups(groups, A.shape[1])
    batch_size = check_batch_size(batch_size)
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, (int, np.integer)) or n_repeats < 1:
        raise ValueError(f"`n_repeats` must be a positive int; got {n_repeats!r}.")
    y = np.asarray(y)
    n = A.shape[0]
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"`y` must be integer class indices of shape ({n},); got dtype {y.dtype}, shape {y.shape}.")
    rng = as_generator(seed)

    def log_loss(P, yy):
        return -np.log(clip_renormalize(P)[np.arange(yy.size), yy])

    P0 = predict_batched(predict_proba, A, batch_size=batch_size, n_classes=None)
    if y.min() < 0 or y.max() >= P0.shape[1]:
        raise ValueError(f"`y` must hold class indices in 0..{P0.shape[1] - 1}.")
    base = float(log_loss(P0, y).mean())
    G = gi.n_groups
    # One row permutation per (group, repeat); a group's columns move together.
    perms = np.stack([rng.permutation(n) for _ in range(G * n_repeats)]).reshape(G, n_repeats, n)
    rows_per_group = n_repeats * n
    losses = np.empty((G, n_repeats))
    groups_per_call = max(1, batch_size // rows_per_group)
    for g0 in range(0, G, groups_per_call):
        block = range(g0, min(G, g0 + groups_per_call))
        Z = np.broadcast_to(A, (len(block), n_repeats, n, A.shape[1])).copy()
        for j, g in enumerate(block):
            cols = np.asarray(gi.columns[g])
            Z[j][:, :, cols] = A[perms[g]][:, :, cols]
        P = predict_batched(predict_proba, Z.reshape(-1, A.shape[1]), batch_size=batch_size, n_classes=P0.shape[1])
        losses[g0 : g0 + len(block)] = (
            log_loss(P, np.tile(y, len(block) * n_repeats)).reshape(len(block), n_repeats, n).mean(axis=2)
        )
    importance = pd.Series(losses.mean(axis=1) - base, index=list(gi.names), name="importance")
    order = tuple(np.asarray(gi.names, dtype=object)[np.argsort(-importance.to_numpy(), kind="stable")])
    return GroupImportance(importance, order, base, int(n_repeats))


@dataclass(frozen=True)
class GroupShap:
    """Group-SHAP concentration scores.

    Attributes
    ----------
    scores : ndarray of shape (n_samples,)
        ``max_g T_g / Σ_g T_g`` with ``T_g = Σ_{j∈g} |SHAP_j|`` (see
        :func:`group_shap_concentration`); risk, larger = riskier. All ``NaN`` when SHAP was
        not computed.
    group_totals : ndarray of shape (n_samples, n_groups) or None
        Per-group sums of absolute SHAP values.
    explainer : str or None
        ``"tree"`` or ``"linear"``; None when not computed.
    note : str
        Why SHAP was not computed, or empty.
    """

    scores: np.ndarray
    group_totals: np.ndarray | None
    explainer: str | None
    note: str


def group_shap_concentration(
    model: object,
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    *,
    explainer: Literal["tree", "linear"] | None,
    background: ArrayLike | None = None,
    max_background: int = 200,
    seed: int | np.random.Generator = 0,
) -> GroupShap:
    """Group-SHAP concentration: the largest group's share of the absolute attribution.

    For every sample the SHAP values of its predicted class are computed with ``shap``'s fast
    exact explainers, ``|SHAP|`` is summed within each group, and the score is
    ``max_g T_g / Σ_g T_g`` (1 = all attribution in one group; 0 when every value is 0). The
    slow model-agnostic explainers are never used: for models without a fast explainer the
    scores are ``NaN`` and ``note`` says so.

    Parameters
    ----------
    model : fitted estimator
        Must expose ``predict_proba``; the explainer is built on the estimator itself.
    X : array-like of shape (n_samples, n_features)
        Transformed inputs to explain.
    groups : mapping str -> sequence of int
    explainer : {"tree", "linear"} or None
        Which fast explainer applies (e.g. ``core.tabular.models.MODELS[name].shap_explainer``).
    background : array-like of shape (m, n_features), optional
        Background rows (training split) for the linear explainer's masker; required for
        ``"linear"``.
    max_background : int, default=200
        Background rows kept (a seeded subsample when there are more).
    seed : int or numpy.random.Generator, default=0
        Stream of the background subsample.

    Returns
    -------
    GroupShap
    """
    A, _ = check_features(X)
    gi = GroupIndex.from_groups(groups, A.shape[1])
    if explainer is None:
        return GroupShap(
            np.full(A.shape[0], np.nan),
            None,
            None,
            "no fast exact SHAP explainer for this model (the permutation explainer is too slow)",
        )
    if explainer not in ("tree", "linear"):
        raise ValueError(f"`explainer` must be 'tree', 'linear' or None; got {explainer!r}.")
    shap = require("shap", what="the group-SHAP concentration (--shap)")  # heavy: only when requested

    if explainer == "tree":
        values = shap.TreeExplainer(model).shap_values(A, check_additivity=False)
    else:
        if background is None:
            raise ValueError("`background` (training rows) is required for the linear SHAP explainer.")
        B, _ = check_features(background, name="background")
        if B.shape[0] > max_background:
            B = B[np.sort(as_generator(seed).choice(B.shape[0], max_background, replace=False))]
        # An explicit masker: shap's default one would silently subsample to 100 rows.
        masker = shap.maskers.Independent(B, max_samples=B.shape[0])
        values = shap.LinearExplainer(model, masker).shap_values(A)
    values = np.asarray(values, dtype=float)
    if values.ndim == 3:  # (n, d, C): one explanation per class; keep the predicted class's
        pred = predicted_class(np.asarray(model.predict_proba(A), dtype=float))
        values = values[np.arange(A.shape[0]), :, pred]
    # A binary single-output explanation is the positive class's; |SHAP| is the same for both.
    totals = np.abs(values) @ np.eye(gi.n_groups)[gi.owner]
    sums = totals.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(sums > 0, totals.max(axis=1) / sums, 0.0)
    return GroupShap(share, totals, explainer, "")


# --------------------------------------------------------------------------------------------
# Protocol sensitivity and search diagnostics
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ProtocolVariant:
    """An alternative admissible protocol for sensitivity analysis.

    Attributes
    ----------
    kind : {"baseline", "grouping"}
        Which rule is varied.
    rule : str
        The rule's name (e.g. ``"median"``, ``"redundancy_merged"``).
    groups : mapping str -> list of int
        Groups under this variant.
    baseline : ndarray of shape (n_features,)
        Baseline under this variant.
    protocol : Protocol
        The declared protocol (its ``grouping`` / ``baseline`` name the rule).
    """

    kind: Literal["baseline", "grouping"]
    rule: str
    groups: Mapping[str, Sequence[int]]
    baseline: np.ndarray
    protocol: Protocol


#: Columns of :func:`protocol_sensitivity`.
SENSITIVITY_COLUMNS = ("kind", "rule", "n_groups", "auroc", "spearman", "fingerprint")


def protocol_sensitivity(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    variants: Sequence[ProtocolVariant],
    labels: BrittleLabels,
    reference: ArrayLike,
    *,
    population: Population = "high_confidence",
    batch_size: int = 65536,
) -> pd.DataFrame:
    """Recompute the certificate under other baseline / grouping rules (SPEC A.6 sensitivity).

    The model, split, depth, operators and the held-out labels stay fixed; only the variant's
    groups, baseline and protocol change.

    Parameters
    ----------
    predict_proba : callable
    X : array-like of shape (n_samples, n_features)
    variants : sequence of ProtocolVariant
    labels : BrittleLabels
        Held-out labels of the default protocol's evaluation (never recomputed per variant).
    reference : array-like of shape (n_samples,)
        FDS (or ``u``) of the default protocol.
    population : {"high_confidence", "all"}, default="high_confidence"
    batch_size : int, default=65536

    Returns
    -------
    DataFrame
        One row per variant with :data:`SENSITIVITY_COLUMNS`: ``auroc`` of the variant's FDS
        against the labels and ``spearman`` rank correlation with ``reference``, both on the
        evaluated population; ``fingerprint`` of the variant's certificate set.

    Warns
    -----
    UndefinedMetricWarning
        When a variant's ``auroc`` (one label class only) or ``spearman`` (a constant ranking,
        fewer than two samples) is undefined; the value is ``NaN``.
    """
    if population not in ("high_confidence", "all"):
        raise ValueError(f"`population` must be 'high_confidence' or 'all'; got {population!r}.")
    ref = np.asarray(reference, dtype=float)
    n = labels.labels.shape[0]
    if ref.shape != (n,):
        raise ValueError(f"`reference` must have shape ({n},); got {ref.shape}.")
    mask = labels.high_confidence if population == "high_confidence" else np.ones(n, dtype=bool)
    rows = []
    for v in variants:
        if not isinstance(v, ProtocolVariant):
            raise ValueError(f"`variants` must hold ProtocolVariant objects; got {type(v).__name__}.")
        cs = certify(predict_proba, X, v.groups, v.baseline, v.protocol, batch_size=batch_size)
        u = cs.table["u"].to_numpy(dtype=float)
        auc = _auroc(u[mask], labels.labels[mask]) if mask.any() else math.nan
        rho = _spearman(u[mask], ref[mask]) if mask.sum() > 1 else math.nan
        undefined = [name for name, value in (("AUROC", auc), ("Spearman", rho)) if math.isnan(value)]
        if undefined:
            warnings.warn(
                f"Sensitivity variant {v.kind}={v.rule!r}: {' and '.join(undefined)} undefined on the "
                f"{int(mask.sum())} evaluated samples ({int(labels.labels[mask].sum())} brittle, or a constant "
                "ranking); reported as NaN.",
                UndefinedMetricWarning,
                stacklevel=2,
            )
        rows.append(
            {
                "kind": v.kind,
                "rule": v.rule,
                "n_groups": len(cs.group_names),
                "auroc": auc,
                "spearman": rho,
                "fingerprint": cs.fingerprint,
            }
        )
    return pd.DataFrame(rows, columns=list(SENSITIVITY_COLUMNS))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    # scipy.stats costs seconds to import: not on the dashboard's first screen
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan  # a constant ranking has no rank correlation
    return float(spearmanr(a, b).statistic)


def search_diagnostics(certificates: CertificateSet) -> pd.DataFrame:
    """Greedy-vs-exact/beam summary of a certificate set certified with ``search=...``.

    Returns
    -------
    DataFrame
        One row per statistic (``exact_match``, ``greedy_over``, ``mean_gap``, ``pair_miss``,
        ``beam_improve``) with columns ``statistic, value, n`` (samples it is computed over).
    """
    s = certificates.search_summary()
    return pd.DataFrame(
        {
            "statistic": ["exact_match", "greedy_over", "mean_gap", "pair_miss", "beam_improve"],
            "value": [s.exact_match, s.greedy_over, s.mean_gap, s.pair_miss, s.beam_improve],
            "n": [s.n_exact] * 4 + [s.n_beam],
        }
    )


# --------------------------------------------------------------------------------------------
# Paired bootstrap over dataset–model–seed units
# --------------------------------------------------------------------------------------------
#: Columns of :func:`paired_bootstrap`.
BOOTSTRAP_COLUMNS = (
    "score",
    "kind",
    "n_units",
    "mean",
    "ci_low",
    "ci_high",
    "reference",
    "diff_mean",
    "diff_ci_low",
    "diff_ci_high",
    "win_rate",
)
_UNIT = ("dataset", "model", "seed")


def paired_bootstrap(
    units: pd.DataFrame,
    *,
    metric: str = "auroc",
    reference: str | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator = 0,
) -> pd.DataFrame:
    """Paired bootstrap intervals and win rates over dataset–model–seed units (SPEC A.6).

    Each unit (one trained model on one dataset under one seed) contributes one value of
    ``metric`` per score. Units are resampled with replacement; the same resample serves every
    score, so differences to the reference are paired.

    Parameters
    ----------
    units : DataFrame
        Long format with columns ``dataset, model, seed, score`` and ``metric`` (e.g. the
        stacked :func:`evaluate_scores` tables of many audits). One row per unit and score.
    metric : str, default="auroc"
        Column to summarise. ``aurc`` is lower-is-better; every other metric higher-is-better.
    reference : str, optional
        Score to compare with. Default: the non-certificate score (kind in
        :data:`NON_CERTIFICATE_KINDS`) with the best mean over units — "the strongest
        non-certificate score".
    n_resamples : int, default=2000
    confidence_level : float, default=0.95
        Percentile intervals.
    seed : int or numpy.random.Generator, default=0

    Returns
    -------
    DataFrame
        One row per score with :data:`BOOTSTRAP_COLUMNS`. ``mean`` and its interval are over the
        units where the score is defined; ``diff_*`` is score − reference (for ``aurc``:
        reference − score, so positive = better) over units where both are defined;
        ``win_rate`` = share of those units where the score is strictly better than the
        reference.
    """
    needed = set(_UNIT) | {"score", metric}
    missing = sorted(needed - set(units.columns))
    if missing:
        raise ValueError(f"`units` lacks the column(s) {missing}; it has {list(units.columns)}.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive int; got {n_resamples!r}.")
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"`confidence_level` must be in (0, 1); got {confidence_level!r}.")
    dup = units.duplicated(list(_UNIT) + ["score"])
    if dup.any():
        row = units.loc[dup].iloc[0]
        raise ValueError(
            f"`units` has more than one row for unit {tuple(row[list(_UNIT)])} and score {row['score']!r}."
        )
    wide = units.pivot(index=list(_UNIT), columns="score", values=metric).astype(float)
    wide = wide[list(dict.fromkeys(units["score"]))]
    sign = -1.0 if metric == "aurc" else 1.0
    kinds = {name: SCORES[name].kind if name in SCORES else "custom" for name in wide.columns}
    if reference is None:
        candidates = [c for c in wide.columns if kinds[c] in NON_CERTIFICATE_KINDS and wide[c].notna().any()]
        if not candidates:
            raise ValueError("`units` has no non-certificate score with a defined value; pass `reference`.")
        reference = max(candidates, key=lambda c: (sign * wide[c].mean(), -candidates.index(c)))
    elif reference not in wide.columns:
        raise ValueError(f"`reference` {reference!r} is not a score in `units`; scores: {list(wide.columns)}.")

    rng = as_generator(seed)
    m = wide.shape[0]
    idx = rng.integers(0, m, size=(n_resamples, m))
    alpha = (1.0 - confidence_level) / 2.0
    values = wide.to_numpy()
    ref = wide[reference].to_numpy()
    rows = []
    for j, name in enumerate(wide.columns):
        v = values[:, j]
        ok = ~np.isnan(v)
        both = ok & ~np.isnan(ref)
        lo, hi = _percentile_mean(v, ok, idx, alpha)
        d = sign * (v - ref)
        dlo, dhi = _percentile_mean(d, both, idx, alpha)
        rows.append(
            {
                "score": name,
                "kind": kinds[name],
                "n_units": int(ok.sum()),
                "mean": float(v[ok].mean()) if ok.any() else math.nan,
                "ci_low": lo,
                "ci_high": hi,
                "reference": reference,
                "diff_mean": float(d[both].mean()) if both.any() else math.nan,
                "diff_ci_low": dlo,
                "diff_ci_high": dhi,
                "win_rate": float((d[both] > 0).mean()) if both.any() else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(BOOTSTRAP_COLUMNS))


def _percentile_mean(v: np.ndarray, ok: np.ndarray, idx: np.ndarray, alpha: float) -> tuple[float, float]:
    """Percentile interval of the mean of ``v[ok]`` under the unit resamples ``idx``."""
    if not ok.any():
        return math.nan, math.nan
    w = ok[idx]
    # Units where the value is undefined drop out of a resample; a resample with none is skipped.
    counts = w.sum(axis=1)
    sums = np.where(w, np.nan_to_num(v)[idx], 0.0).sum(axis=1)
    means = sums[counts > 0] / counts[counts > 0]
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))
