"""One tabular audit as tables: the dataset's columns, its evidence groups, its predictions, and
one sample's raw values, removal steps, path evidence, what-if probabilities and certificate bundle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.views.formatting import is_missing, rounded_text

# No import of core.tabular.audit, even for typing: AuditResult delegates its notebook views to
# core.views.notebook, which uses this module (docs/DEVELOPING.md, "Layers").
if TYPE_CHECKING:
    from core.cfc.certificate_set import CertificateSet, SampleCertificate
    from core.cfc.search import FlipSearchResult
    from core.tabular.datasets import Dataset

__all__ = [
    "column_summary",
    "flip_budget_shown",
    "flip_count_text",
    "groups_table",
    "path_evidence_table",
    "prediction_table",
    "raw_values_table",
    "removal_steps_table",
    "sample_bundle",
    "sample_flip_search",
    "strongest_confidence_score",
    "whatif_probabilities",
]


def groups_table(
    groups: Mapping[str, Sequence[int]], feature_names: Sequence[str], origins: Sequence[str]
) -> pd.DataFrame:
    """One row per evidence group: its raw columns and transformed columns.

    Parameters
    ----------
    groups : mapping of str -> sequence of int
        Evidence groups over the transformed columns, in declared order.
    feature_names : sequence of str, length d
        Transformed column names.
    origins : sequence of str, length d
        Raw column of origin of every transformed column.

    Returns
    -------
    DataFrame
        Columns ``group``, ``raw_columns`` (comma-separated, in first-use order),
        ``n_transformed`` and ``transformed_columns``.

    Examples
    --------
    >>> groups_table({"age": [0], "home": [1, 2]}, ["age", "home_own", "home_rent"],
    ...              ["age", "home", "home"]).to_dict("records")[1]
    {'group': 'home', 'raw_columns': 'home', 'n_transformed': 2, 'transformed_columns': 'home_own, home_rent'}
    """
    if len(feature_names) != len(origins):
        raise ValueError(
            f"`feature_names` ({len(feature_names)}) and `origins` ({len(origins)}) must have one "
            "entry per transformed column."
        )
    rows = []
    for name, cols in groups.items():
        raw = list(dict.fromkeys(origins[c] for c in cols))
        rows.append(
            {
                "group": name,
                "raw_columns": ", ".join(raw),
                "n_transformed": len(cols),
                "transformed_columns": ", ".join(feature_names[c] for c in cols),
            }
        )
    return pd.DataFrame(rows, columns=["group", "raw_columns", "n_transformed", "transformed_columns"])


def column_summary(dataset: Dataset) -> pd.DataFrame:
    """One row per raw feature of a :class:`~core.tabular.datasets.Dataset`.

    Columns ``column``, ``kind`` (numeric / categorical), ``missing`` (count of missing
    values), ``distinct`` (distinct non-missing values) and ``block`` (domain block, if any).
    """
    frame = dataset.frame
    blocks = dataset.blocks or {}
    rows = [
        {
            "column": c,
            "kind": "numeric" if c in dataset.numeric else "categorical",
            "missing": int(frame[c].isna().sum()),
            "distinct": int(frame[c].nunique(dropna=True)),
            "block": blocks.get(c),
        }
        for c in dataset.features
    ]
    return pd.DataFrame(rows, columns=["column", "kind", "missing", "distinct", "block"])


def prediction_table(result: Any) -> pd.DataFrame:
    """One row per test prediction of an audit, for the explorer and the triage queue.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult

    Returns
    -------
    DataFrame
        ``sample_id`` (source row id), ``position`` (row in the certificate set),
        ``true_class``, ``predicted`` (class labels), ``confidence``, ``fds`` (risk, 0–1),
        ``flip_budget`` (``k*``, smaller = more fragile; SPEC's ``K+1`` = no flip, for sorting),
        ``flipped`` (False = no flip within depth ``K``; :func:`flip_budget_shown` turns the
        pair into the text people read), ``rcma`` (risk), ``near_tie`` (the top two classes
        all but tied, ``|m(x)| <`` :data:`~core.cfc.fds.NEAR_TIE_MARGIN`: :func:`near_tie_note`),
        ``lambda_star_<operator>`` (smaller = more fragile, ``inf`` = none), ``high_confidence``
        and ``brittle`` (held-out label), in certificate order.
    """
    from core.cfc.fds import near_tie

    cert = result.certificates.table
    out = pd.DataFrame(
        {
            "sample_id": cert.index.to_numpy(),
            "position": np.arange(len(cert)),
            "true_class": result.class_of(np.asarray(result.y_test, dtype=int)),
            "predicted": result.class_of(cert["pred"].to_numpy(dtype=int)),
            "confidence": cert["confidence"].to_numpy(),
            "fds": cert["fds"].to_numpy(),
            "flip_budget": cert["flip_budget"].to_numpy(),
            "flipped": cert["flipped"].to_numpy(dtype=bool),
            "rcma": cert["rcma"].to_numpy(),
            "near_tie": near_tie(cert["margin"].to_numpy(dtype=float)),
        }
    )
    for column in cert.columns:
        if column.startswith("lambda_star_"):
            out[column] = cert[column].to_numpy()
    out["high_confidence"] = np.asarray(result.labels.high_confidence, dtype=bool)
    out["brittle"] = np.asarray(result.labels.labels, dtype=bool)
    return out


def near_tie_note(margin: float, rcma: float) -> str | None:
    """Plain words for a near-tie prediction (the explorer's header), None for any other.

    Examples
    --------
    >>> near_tie_note(8.9e-7, 222293.0)[:41]
    'Near-tie: the model’s top two classes are'
    >>> near_tie_note(0.4, 0.2) is None
    True
    """
    from core.cfc.fds import NEAR_TIE_MARGIN, near_tie

    if not near_tie(np.array([margin]))[0]:
        return None
    return (
        f"Near-tie: the model’s top two classes are all but tied here (margin {abs(margin):.2g} nats, below "
        f"{NEAR_TIE_MARGIN:g}): the prediction is close to a coin flip. Its RCMA ({rcma:,.0f}) divides the margin "
        "lost by this almost-zero margin, so it is huge whatever the evidence does and says little about it. "
        "Summaries leave near-ties out of the mean RCMA and count them instead."
    )


def rcma_glance_text(glance: Any) -> str | None:
    """The Overview's line on RCMA: the mean over the predictions that are not near-ties, their count, the median.

    ``glance`` is a :class:`core.tabular.glance.AuditGlance`; None for a glance written before it
    held the RCMA headline.
    """
    from core.cfc.fds import rcma_headline_text

    if glance.n_near_tie is None:
        return None
    headline = {"mean_rcma": glance.mean_rcma, "n_near_tie": glance.n_near_tie, "median_rcma": glance.median_rcma}
    return (
        f"Over the test predictions: {rcma_headline_text(headline, n=glance.test_rows)}. RCMA is the mean share of "
        "the margin lost along the removal path (larger = more fragile); a near-tie's RCMA divides by an "
        "almost-zero margin, so it would swamp the mean."
    )


def flip_budget_shown(frame: pd.DataFrame, *, depth: int) -> pd.DataFrame:
    """``frame`` as people read it: ``flip_budget`` as text, ``"no flip ≤ K"`` where the path
    does not flip the prediction within depth ``K`` (never SPEC's stored ``K + 1``).

    Parameters
    ----------
    frame : DataFrame
        With ``flip_budget`` (``k*`` in ``1 … K + 1``) and, from certificate tables written
        since it exists, ``flipped`` (bool); without it, ``flipped`` is ``flip_budget <= K``.
    depth : int
        The audit depth ``K``.

    Returns
    -------
    DataFrame
        A copy; ``flip_budget`` holds text (``"2"``, ``"no flip ≤ 5"``) and ``flipped`` is
        dropped (the text says it). Frames without ``flip_budget`` come back unchanged.

    Examples
    --------
    >>> f = pd.DataFrame({"sample_id": [4, 9], "flip_budget": [2, 6], "flipped": [True, False]})
    >>> flip_budget_shown(f, depth=5).to_dict("list")
    {'sample_id': [4, 9], 'flip_budget': ['2', 'no flip ≤ 5']}
    """
    from core.viz.tables import flip_budget_texts

    if "flip_budget" not in frame.columns:
        return frame
    k = frame["flip_budget"].to_numpy(dtype=np.int64)
    flipped = frame["flipped"].to_numpy(dtype=bool) if "flipped" in frame.columns else k <= depth
    return frame.drop(columns="flipped", errors="ignore").assign(flip_budget=flip_budget_texts(k, flipped, depth=depth))


def sample_bundle(
    certificates: CertificateSet, position: int, *, search: FlipSearchResult | None = None
) -> dict[str, Any]:
    """The certificate of one sample as a strict-JSON bundle (same format as a whole set).

    The bundle carries the protocol, the certificate fingerprint, the groups and baseline and
    every trajectory array of that one sample, so it can be stored and re-checked with
    :func:`core.cfc.verify` against the model and the sample's features. It is
    ``certificates.take([position]).with_search(search)`` without the model probe, written by
    :meth:`~core.cfc.certificate_set.CertificateSet.to_bundle` (schema: :mod:`core.cfc.bundle`).

    Parameters
    ----------
    certificates : core.cfc.certificate_set.CertificateSet
    position : int
        Row of the sample in the set (0-based).
    search : core.cfc.search.FlipSearchResult, optional
        Exact / beam search of this one sample, included when given.
    """
    from dataclasses import replace

    n = len(certificates)
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not 0 <= position < n:
        raise ValueError(f"`position` must be a row in 0..{n - 1}; got {position!r}.")
    if search is not None and len(search) != 1:
        raise ValueError(f"`search` must hold exactly this one sample; got {len(search)} samples.")
    one = certificates.take([int(position)]).with_search(search)
    # The one-sample bundle carries this sample's search (or none) and no model probe.
    return replace(one, probe_proba=None).to_bundle()


def whatif_probabilities(result: Any, position: int, removed: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of one test prediction as it is and with some evidence groups removed.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
        Only ``X_test``, ``groups``, ``baseline`` and ``model`` are read.
    position : int
        Row of ``result.X_test``.
    removed : sequence of str
        Group names set to the baseline (``R(x, S)``, SPEC A.1).

    Returns
    -------
    original, edited : ndarray of shape (n_classes,)
        One batched ``predict_proba`` call over both rows.
    """
    from threadpoolctl import threadpool_limits

    from core.cfc.operators import remove

    x = result.X_test[position : position + 1]
    stacked = np.vstack([x, remove(x, result.groups, result.baseline, list(removed))])
    # Two rows: waking an OpenMP pool costs more than it gives (hist_gb, busy 2 cores: 83 ms
    # threaded vs 7 ms on one thread), and this runs on every what-if toggle.
    with threadpool_limits(limits=1):
        proba = np.asarray(result.model.predict_proba(stacked), dtype=float)
    return proba[0], proba[1]


def sample_flip_search(result: Any, position: int) -> FlipSearchResult:
    """Exact minimum and beam search (SPEC A.4) of one test prediction, ``method="both"``.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
        Only ``X_test``, ``groups``, ``baseline``, ``protocol`` and ``model`` are read.
    position : int
        Row of ``result.X_test``.

    Returns
    -------
    core.cfc.search.FlipSearchResult
        Of this one sample (``len == 1``).
    """
    from threadpoolctl import threadpool_limits

    from core.cfc.search import flip_search

    x = result.X_test[position : position + 1]
    with threadpool_limits(limits=1):  # mid-sized model calls: one thread is faster (run_audit's n_threads)
        return flip_search(
            result.model.predict_proba, x, result.groups, result.baseline, result.protocol, method="both"
        )


def flip_count_text(k: float, *, depth: int) -> str:
    """One search's ``k`` as people read it: ``"undecided (cap)"`` for NaN (the exact search hit
    its cap), ``"no flip ≤ K"`` beyond ``depth``, else the whole number.

    Examples
    --------
    >>> [flip_count_text(k, depth=5) for k in (float("nan"), 6.0, 2.0)]
    ['undecided (cap)', 'no flip ≤ 5', '2']
    """
    from core.viz.tables import no_flip_text

    return "undecided (cap)" if np.isnan(k) else (no_flip_text(depth) if k > depth else f"{int(k)}")


def strongest_confidence_score(evaluation: pd.DataFrame) -> str | None:
    """:func:`core.cfc.evaluation.strongest_confidence_score` of an audit's evaluation table: the
    confidence score FDS is compared with (highest AUROC), None when none is defined."""
    from core.cfc.evaluation import strongest_confidence_score as strongest

    return strongest(evaluation)


def raw_values_table(raw_row: pd.Series, groups: Mapping[str, Sequence[int]], origins: Sequence[str]) -> pd.DataFrame:
    """Raw feature values of one sample with the evidence group each column belongs to.

    Parameters
    ----------
    raw_row : Series
        The sample's raw row (feature columns; other entries such as the target are skipped
        unless they feed a group).
    groups : mapping of str -> sequence of int
        Evidence groups over the transformed columns.
    origins : sequence of str
        Raw column of origin of every transformed column.

    Returns
    -------
    DataFrame
        Columns ``group``, ``column``, ``value`` (text, floats rounded to 3 decimals as in
        :func:`path_evidence_table`; missing shown as missing), in group order.
    """
    rows = []
    for name, cols in groups.items():
        for column in dict.fromkeys(origins[c] for c in cols):
            rows.append({"group": name, "column": column, "value": rounded_text(raw_row.get(column))})
    return pd.DataFrame(rows, columns=["group", "column", "value"])


def removal_steps_table(certificate: SampleCertificate, classes: Sequence[object]) -> pd.DataFrame:
    """The prediction after each removal along one certificate's path, for people.

    Parameters
    ----------
    certificate : core.cfc.certificate_set.SampleCertificate
        ``path`` (K group names) and the step arrays ``preds``, ``proba`` and ``path_margins``
        of shape (K+1, ...) with step 0 the intact input.
    classes : sequence
        Class names in encoded order.

    Returns
    -------
    DataFrame
        One row per step 0..K: ``step``, ``group removed`` (``"none (intact)"`` at step 0),
        ``prediction`` (class name after the removals so far), ``P(<predicted class>)`` (the
        probability of the originally predicted class, named by its label: ``P(yes)``) and
        ``margin`` (centred pseudo-logit margin of the original class, nats; below 0 =
        flipped), both rounded to 3 decimals, and ``flipped`` (``"yes"`` / ``"no"``).
    """
    cert = certificate
    names = np.asarray([str(c) for c in classes], dtype=object)
    steps = len(cert.path_margins)
    if len(cert.path) != steps - 1:
        raise ValueError(
            f"`certificate` has {len(cert.path)} path groups but {steps} steps; expected one step "
            "more than groups (step 0 is the intact input)."
        )
    preds = np.asarray(cert.preds, dtype=int)
    return pd.DataFrame(
        {
            "step": np.arange(steps),
            "group removed": ["none (intact)", *map(str, cert.path)],
            "prediction": names[preds],
            f"P({names[cert.pred]})": np.round(np.asarray(cert.proba, dtype=float)[:, cert.pred], 3),
            "margin": np.round(np.asarray(cert.path_margins, dtype=float), 3),
            "flipped": np.where(preds != cert.pred, "yes", "no"),
        }
    )


def path_evidence_table(
    x: np.ndarray,
    baseline: np.ndarray,
    groups: Mapping[str, Sequence[int]],
    path: Sequence[str],
    *,
    feature_names: Sequence[str],
    origins: Sequence[str],
    raw_row: pd.Series,
) -> pd.DataFrame:
    """The values of the groups on a removal path next to the baseline that replaces them.

    Parameters
    ----------
    x : ndarray of shape (d,)
        The sample's transformed features (model space).
    baseline : ndarray of shape (d,)
        The protocol's baseline (model space); removing a group sets its columns to it.
    groups : mapping of str -> sequence of int
        Evidence groups over the ``d`` transformed columns.
    path : sequence of str
        Group names in removal order (most supportive first).
    feature_names : sequence of str, length d
        Name of every transformed column.
    origins : sequence of str, length d
        Raw column of origin of every transformed column.
    raw_row : Series
        The sample's raw row (raw values are looked up by origin; absent ones are missing).

    Returns
    -------
    DataFrame
        One row per transformed column of every path group, in path order: ``step`` (1 =
        removed first), ``group``, ``raw column``, ``raw value`` (text, floats rounded to 3
        decimals, ``"missing"`` when missing), ``feature``, ``value`` and ``baseline`` (model space, rounded to 3 decimals).
    """
    x = np.asarray(x, dtype=float).ravel()
    b = np.asarray(baseline, dtype=float).ravel()
    d = x.size
    if b.size != d or len(feature_names) != d or len(origins) != d:
        raise ValueError(
            f"`x` has {d} features but `baseline` has {b.size}, `feature_names` {len(feature_names)} "
            f"and `origins` {len(origins)}; expected the same length."
        )
    unknown = [g for g in path if g not in groups]
    if unknown:
        raise ValueError(f"`path` names groups that are not in `groups`: {unknown!r} (groups: {list(groups)}).")
    rows = []
    for step, name in enumerate(path, start=1):
        for c in groups[name]:
            raw = raw_row.get(origins[c])
            rows.append(
                {
                    "step": step,
                    "group": str(name),
                    "raw column": str(origins[c]),
                    "raw value": "missing" if is_missing(raw) else rounded_text(raw),
                    "feature": str(feature_names[c]),
                    "value": round(float(x[c]), 3),
                    "baseline": round(float(b[c]), 3),
                }
            )
    return pd.DataFrame(rows, columns=["step", "group", "raw column", "raw value", "feature", "value", "baseline"])
