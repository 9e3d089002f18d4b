"""Per-sample audit records and the re-analyses of the paper reproduction (docs/reproduction.md).

An audit's brittle label is ``b = 1[p̂ ≥ τ_p] ∧ (some draw flipped ∨ max_draws κ ≥ τ_κ)``
(:mod:`core.cfc.stressors`), and its FDS is ``u = w1·RCMA + w2/k* + w3·degradation``
(:func:`core.cfc.fds.fds_from_components`), where RCMA, k*, degradation and the
greedy path do not depend on the weights. So one stored record per test sample — ``p̂``, the
share of flipped draws, the largest κ and the three components — is enough to re-evaluate
the same audits under every ``(τ_p, τ_κ)`` pair of the sensitivity grid and every weight
vector, exactly, without refitting or recertifying anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from core.cfc.evaluation import Population, evaluate_scores
from core.cfc.stressors import BrittleLabels

__all__ = ["SAMPLE_COLUMNS", "evaluate_samples", "relabel", "sample_records", "weighted_u"]

#: Columns of :func:`sample_records` besides the ``score_<name>`` columns.
SAMPLE_COLUMNS = (
    "row_id",
    "y_true",
    "pred",
    "confidence",
    "high_confidence",
    "brittle",
    "flip_share",
    "max_collapse",
    "tau_p",
    "tau_kappa",
    "rcma",
    "flip_budget",
    "degradation",
)


def sample_records(result) -> pd.DataFrame:
    """One row per test sample of an audit: label-channel outcome, certificate components, scores.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult

    Returns
    -------
    DataFrame
        Columns :data:`SAMPLE_COLUMNS`, ``naturalistic_brittle`` when the audit had a
        naturalistic channel, then ``score_<name>`` for every evaluated risk score
        (larger = riskier). ``flip_budget`` is ``K+1`` when no removal up to depth K flipped
        (the certificate's convention).
    """
    lab = result.labels
    t = result.certificates.table
    out = pd.DataFrame(
        {
            "row_id": t.index.to_numpy(),
            "y_true": result.y_test,
            "pred": lab.prediction,
            "confidence": lab.confidence,
            "high_confidence": lab.high_confidence,
            "brittle": lab.labels,
            "flip_share": lab.flip_share,
            "max_collapse": lab.max_collapse,
            "tau_p": np.full(len(t), lab.tau_p),
            "tau_kappa": np.full(len(t), lab.tau_kappa),
            "rcma": t["rcma"].to_numpy(dtype=float),
            "flip_budget": t["flip_budget"].to_numpy(dtype=float),
            "degradation": t["degradation"].to_numpy(dtype=float),
        }
    )
    if result.naturalistic is not None:
        out["naturalistic_brittle"] = result.naturalistic.labels
    scores = result.scores.reset_index(drop=True).add_prefix("score_")
    return pd.concat([out, scores], axis=1)


def relabel(samples: pd.DataFrame, *, tau_p: float, tau_kappa: float) -> BrittleLabels:
    """The brittle labels of stored samples under other thresholds.

    ``b = 1[p̂ ≥ τ_p] ∧ (flip_share > 0 ∨ max_collapse ≥ τ_κ)``, which equals the label
    channel's "some draw flipped or collapsed" because a draw collapses iff its κ ≥ τ_κ and
    the largest κ over draws is stored.

    Parameters
    ----------
    samples : DataFrame
        From :func:`sample_records` (one audit).
    tau_p, tau_kappa : float
        In (0, 1].

    Returns
    -------
    BrittleLabels
        ``hits`` has one column (the settings are pooled); ``n_forward`` is 0 (nothing was
        recomputed).
    """
    for name, value in (("tau_p", tau_p), ("tau_kappa", tau_kappa)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0 < value <= 1:
            raise ValueError(f"`{name}` must be in (0, 1]; got {value!r}.")
    missing = [c for c in ("confidence", "flip_share", "max_collapse", "pred") if c not in samples.columns]
    if missing:
        raise ValueError(f"`samples` lacks the column {missing[0]!r}; build it with sample_records.")
    confidence = samples["confidence"].to_numpy(dtype=float)
    hit = (samples["flip_share"].to_numpy(dtype=float) > 0) | (
        samples["max_collapse"].to_numpy(dtype=float) >= tau_kappa
    )
    high = confidence >= tau_p
    return BrittleLabels(
        labels=high & hit,
        high_confidence=high,
        confidence=confidence,
        prediction=samples["pred"].to_numpy(dtype=np.int64),
        flip_share=samples["flip_share"].to_numpy(dtype=float),
        max_collapse=samples["max_collapse"].to_numpy(dtype=float),
        hits=hit[:, None],
        settings=(("pooled", float("nan")),),
        tau_p=float(tau_p),
        tau_kappa=float(tau_kappa),
        n_forward=0,
    )


def weighted_u(samples: pd.DataFrame, weights: Sequence[float]) -> np.ndarray:
    """``u = w1·RCMA + w2/k* + w3·degradation`` of stored samples (FDS is monotone in ``u``).

    Parameters
    ----------
    samples : DataFrame
        With ``rcma``, ``flip_budget`` (``k*`` in ``1..K+1``, ``K+1`` = no flip within depth K)
        and ``degradation``.
    weights : sequence of 3 non-negative floats

    Returns
    -------
    ndarray of shape (n_samples,)
        Risk score, larger = riskier.
    """
    w = np.asarray(weights, dtype=float)
    if w.shape != (3,) or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"`weights` must be three non-negative finite numbers; got {weights!r}.")
    k = samples["flip_budget"].to_numpy(dtype=float)
    return w[0] * samples["rcma"].to_numpy(dtype=float) + w[1] / k + w[2] * samples["degradation"].to_numpy(dtype=float)


def evaluate_samples(
    samples: pd.DataFrame,
    *,
    tau_p: float | None = None,
    tau_kappa: float | None = None,
    extra_scores: Mapping[str, np.ndarray] | None = None,
    population: Population = "high_confidence",
    label: str = "brittle",
) -> pd.DataFrame:
    """Evaluate every stored score of one audit (and optional extra scores) against its labels.

    Parameters
    ----------
    samples : DataFrame
        From :func:`sample_records`.
    tau_p, tau_kappa : float, optional
        Re-threshold the held-out labels (:func:`relabel`); default: the audit's own.
    extra_scores : mapping str -> ndarray of shape (n_samples,), optional
        More risk scores (e.g. :func:`weighted_u` under other weights).
    population : {"high_confidence", "all"}, default="high_confidence"
    label : {"brittle", "naturalistic_brittle"}, default="brittle"
        Which labels; ``naturalistic_brittle`` keeps the audit's thresholds.

    Returns
    -------
    DataFrame
        :func:`core.cfc.evaluation.evaluate_scores` table.
    """
    if label not in ("brittle", "naturalistic_brittle"):
        raise ValueError(f"`label` must be 'brittle' or 'naturalistic_brittle'; got {label!r}.")
    if label not in samples.columns:
        raise ValueError(f"`samples` has no {label!r} column (the audit had no such labels).")
    tau_p = float(samples["tau_p"].iloc[0]) if tau_p is None else tau_p
    tau_kappa = float(samples["tau_kappa"].iloc[0]) if tau_kappa is None else tau_kappa
    labels = relabel(samples, tau_p=tau_p, tau_kappa=tau_kappa)
    if label == "naturalistic_brittle":
        natural = samples["naturalistic_brittle"].to_numpy(dtype=bool)
        labels = BrittleLabels(
            labels=natural & labels.high_confidence,
            high_confidence=labels.high_confidence,
            confidence=labels.confidence,
            prediction=labels.prediction,
            flip_share=labels.flip_share,
            max_collapse=labels.max_collapse,
            hits=natural[:, None],
            settings=labels.settings,
            tau_p=labels.tau_p,
            tau_kappa=labels.tau_kappa,
            n_forward=0,
        )
    scores = {
        c.removeprefix("score_"): samples[c].to_numpy(dtype=float) for c in samples.columns if c.startswith("score_")
    }
    scores |= dict(extra_scores or {})
    return evaluate_scores(scores, labels, samples["y_true"].to_numpy(), population=population)
