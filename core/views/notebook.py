"""An audit in a notebook: the compact HTML summary, one certificate's figure and the review queue.

These are the bodies of :meth:`~core.tabular.audit.AuditResult._repr_html_`,
:meth:`~core.tabular.audit.AuditResult.plot_certificate` and
:meth:`~core.tabular.audit.AuditResult.queue`: the result delegates its presentation here, and
this module reads the result's fields only (it imports nothing of :mod:`core.tabular`, so the
one declared upward edge of the layers, ``core.tabular.audit → core.views.notebook``, closes no
cycle). Every class is named by its label, and ``k*`` is written "no flip ≤ K" where the path
does not flip the prediction.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pandas as pd

from core.cfc.evaluation import strongest_confidence_score
from core.metrics.ranking import check_budget
from core.views.ranking import rank_queue
from core.views.tabular import flip_budget_shown, prediction_table

__all__ = ["audit_html", "certificate_figure", "review_queue"]

_POPULATIONS = ("high_confidence", "all")
_SHOWN_QUEUE = 5


def review_queue(result: Any, *, budget: float = 0.2, score: str = "fds", population: str = "high_confidence"):
    """The review queue of an audit (:meth:`AuditResult.queue <core.tabular.audit.AuditResult.queue>`).

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    budget : float, default=0.2
        Fraction in (0, 1] of the ranked predictions to review.
    score : str, default="fds"
        A column of ``result.scores`` (larger = riskier).
    population : {"high_confidence", "all"}, default="high_confidence"

    Returns
    -------
    DataFrame
        ``rank, sample_id, true_class, predicted, confidence, fds, flip_budget, flipped, rcma,
        near_tie, brittle, score_value``, riskiest first (``near_tie``: the top two classes are all
        but tied, so ``rcma`` divides by almost nothing) (see the method's docstring).
    """
    budget = check_budget(budget, name="budget")
    if score not in result.scores.columns:
        raise ValueError(f"`score` must be one of {list(result.scores.columns)}; got {score!r}.")
    if population not in _POPULATIONS:
        raise ValueError(f"`population` must be one of {_POPULATIONS}; got {population!r}.")
    frame = prediction_table(result)
    mask = frame["high_confidence"].to_numpy(dtype=bool)
    if population == "all" or not mask.any():
        mask = np.ones(len(frame), dtype=bool)
    ranked = frame[mask].assign(score_value=result.scores[score].to_numpy(dtype=float)[mask])
    columns = [
        "sample_id",
        "true_class",
        "predicted",
        "confidence",
        "fds",
        "flip_budget",
        "flipped",
        "rcma",
        "near_tie",
    ]
    ranked = ranked[[*columns, "brittle", "score_value"]]
    return rank_queue(ranked, "score_value", budget=budget)


def _position(result: Any, sample_id: Any) -> int:
    index = result.certificates.table.index
    try:
        hits = np.flatnonzero(index == sample_id) if not isinstance(sample_id, (list, tuple, np.ndarray)) else []
    except (TypeError, ValueError):
        hits = []
    if len(hits) != 1:
        shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in index[:3])
        raise ValueError(
            f"`sample_id` {sample_id!r} is not a test row of this audit; sample ids are the test table's "
            f"index ({len(index):,} rows: {shown}, …)."
        )
    return int(hits[0])


def certificate_figure(result: Any, sample_id: Any):
    """The removal trajectory of one test prediction, its probability axis named by the class.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    sample_id : hashable
        A value of ``result.certificates.table.index`` (the test table's index).

    Returns
    -------
    core.viz.display.VegaLiteChart
        The two panels of :func:`core.viz.certificate_spec.trajectory_spec` (the dashboard's
        and the report's chart) one under the other, titled with the sample's id: drawn live
        by Jupyter, as an SVG in an exported notebook.
    """
    from core.viz.certificate_spec import trajectory_spec
    from core.viz.display import VegaLiteChart, stack_specs

    cert = result.certificates.certificate(_position(result, sample_id))
    names = [str(c) for c in result.class_of(np.arange(len(result.classes)))]
    specs = trajectory_spec(
        list(cert.path),
        cert.path_margins,
        cert.proba[:, cert.pred],
        flip_budget=int(cert.flip_budget),
        predicted=[names[p] for p in cert.preds],
        class_label=names[cert.pred],
    )
    title = f"Sample {sample_id}: removal trajectory ({names[cert.pred]})"
    return VegaLiteChart(stack_specs([specs.margin, specs.probability], title=title))


def _cell(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return "–" if not math.isfinite(value) else f"{value:.3f}"
    return str(value)


def _table(frame: pd.DataFrame, headers: dict[str, str]) -> str:
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(headers.get(c, c))}</th>" for c in frame)
    rows = "".join(
        "<tr>" + "".join(f"<td style='padding:2px 8px'>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table style='border-collapse:collapse;font-size:0.9em'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def audit_html(result: Any, *, budget: float = 0.2) -> str:
    """A compact, self-contained HTML summary of an audit (no script, no style sheet, no link).

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    budget : float, default=0.2
        Review budget of the queue whose top rows are listed.

    Returns
    -------
    str
        The model, data, classes and protocol; the headline metrics (nominal, fragility, FDS
        against the strongest confidence score); the first rows of the review queue. Every
        value is HTML-escaped.
    """
    e = html.escape
    p, n = result.protocol, result.nominal
    f = result.fragility
    ev = result.evaluation.set_index("score")
    best = strongest_confidence_score(result.evaluation)
    metrics = [
        ("accuracy", n.get("accuracy")),
        ("AUROC (class)", n.get("auroc")),
        ("mean RCMA (not near-ties)", f["mean_rcma"]),
        ("near-ties left out", f["n_near_tie"]),
        ("median RCMA", f["median_rcma"]),
        ("share k* ≤ 2", f["share_k_le_2"]),
        ("share brittle", f["share_brittle"]),
        ("FDS AUROC", ev.loc["fds", "auroc"] if "fds" in ev.index else float("nan")),
    ]
    if best is not None:
        metrics.append((f"{best} AUROC (strongest confidence score)", ev.loc[best, "auroc"]))
    queue = review_queue(result, budget=budget)
    n_high = int(np.asarray(result.labels.high_confidence, dtype=bool).sum())
    ranked = f"{n_high:,} high-confidence" if n_high else f"{len(result.y_test):,}"
    shown = flip_budget_shown(queue.head(_SHOWN_QUEUE), depth=result.certificates.depth)
    shown = shown[["rank", "sample_id", "true_class", "predicted", "confidence", "fds", "flip_budget", "brittle"]]
    classes = ", ".join(str(c) for c in result.classes)
    return (
        "<div style='font-family:system-ui,sans-serif;line-height:1.4'>"
        f"<strong>Fragility audit</strong> of <code>{e(str(result.model_name))}</code> on "
        f"<code>{e(str(result.dataset.name))}</code>: {len(result.y_test):,} test rows; classes {e(classes)}."
        f"<br>Protocol: grouping <code>{e(p.grouping)}</code> ({len(result.groups)} groups), baseline "
        f"<code>{e(p.baseline)}</code>, depth K = {result.certificates.depth}; certificate fingerprint "
        f"<code>{e(result.fingerprint[:16])}…</code>"
        + _table(pd.DataFrame([dict(metrics)]), {})
        + f"<div>Review queue: the top {budget:.0%} of the {ranked} predictions by FDS, {len(queue):,} "
        f"case(s); the first {len(shown)}:</div>"
        + _table(shown, {"sample_id": "sample id", "true_class": "true class", "fds": "FDS", "flip_budget": "k*"})
        + "<div style='color:#555;font-size:0.85em'>result.queue(budget) returns the whole queue; "
        "result.plot_certificate(sample_id) draws one certificate.</div></div>"
    )
