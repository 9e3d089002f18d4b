"""Several models' audits of one table side by side: their metrics, and one sample under each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from core.tabular.audit import AuditResult

__all__ = ["SampleAcrossModels", "comparison_samples", "model_comparison_table", "sample_across_models"]


def model_comparison_table(audits: Mapping[str, AuditResult]) -> pd.DataFrame:
    """Nominal and fragility metrics of several audits of the same data, one row per model.

    Parameters
    ----------
    audits : mapping of model name -> core.tabular.audit.AuditResult

    Returns
    -------
    DataFrame
        ``model``, ``family``, the nominal test metrics (``accuracy, macro_f1, auroc, ap`` —
        higher is better; ``nll, ece, brier`` — lower is better), the fragility summary
        (``mean_rcma`` over the predictions that are not near-ties, ``n_near_tie`` those left
        out, ``median_rcma`` over all, ``share_k_le_2``, ``share_brittle`` — lower is more
        stable; :attr:`core.tabular.audit.AuditResult.fragility`)
        and ``fds_auroc`` (how well FDS finds that model's brittle predictions).
    """
    from core.tabular.metrics import NOMINAL_METRICS
    from core.tabular.models import MODELS

    rows = []
    for name, result in audits.items():
        fragility = result.fragility
        evaluation = result.evaluation.set_index("score")
        rows.append(
            {
                "model": name,
                "family": MODELS[name].family if name in MODELS else "",
                **{m: result.nominal.get(m, np.nan) for m in NOMINAL_METRICS},
                "mean_rcma": fragility["mean_rcma"],
                "n_near_tie": fragility["n_near_tie"],
                "median_rcma": fragility["median_rcma"],
                "share_k_le_2": fragility["share_k_le_2"],
                "share_brittle": fragility["share_brittle"],
                "fds_auroc": evaluation.loc["fds", "auroc"] if "fds" in evaluation.index else np.nan,
            }
        )
    return pd.DataFrame(rows)


def comparison_samples(result: AuditResult) -> pd.Series:
    """The samples offered for "one prediction, every model": most fragile first.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
        The audit of the model selected in the sidebar.

    Returns
    -------
    Series
        FDS (risk, larger = more fragile) indexed by sample id, in decreasing FDS (ties in
        certificate order), over the high-confidence test predictions, or over every test
        prediction when none is high-confidence.
    """
    cert = result.certificates.table
    fds = cert["fds"].to_numpy(dtype=float)
    confident = np.asarray(result.labels.high_confidence, dtype=bool)
    pool = np.flatnonzero(confident) if confident.any() else np.arange(len(cert))
    order = pool[np.argsort(-fds[pool], kind="stable")]
    return pd.Series(fds[order], index=cert.index[order], name="fds")


@dataclass(frozen=True, kw_only=True)
class SampleAcrossModels:
    """One sample's certificate under every model.

    Attributes
    ----------
    table : DataFrame
        One row per model, in the order of the audits: ``model`` (name), ``predicted`` (class
        name), ``confidence``, ``flip_budget`` (text: ``k*``, or ``"> K"`` when the path never
        flips), ``rcma`` and ``fds`` (risk, larger = more fragile) and ``path`` (group names
        in removal order).
    trajectories : dict of model name -> (path, path margins, flip budget)
        What :func:`core.viz.trajectories_by_model_figure` draws: the path's group names, the
        margins of shape (K+1,) (step 0 intact) and ``k*``.
    """

    table: pd.DataFrame
    trajectories: dict[str, tuple[tuple[str, ...], np.ndarray, int]]


def sample_across_models(audits: Mapping[str, AuditResult], sample_id: object) -> SampleAcrossModels:
    """The certificate of the sample ``sample_id`` under each audit.

    Parameters
    ----------
    audits : mapping of model name -> core.tabular.audit.AuditResult
        Audits of the same test split (every one holds ``sample_id``).
    sample_id : object
        Row id of the sample (an index label of the certificate tables).

    Returns
    -------
    SampleAcrossModels
    """
    from core.viz.tables import flip_budget_text

    trajectories, rows = {}, []
    for name, result in audits.items():
        hits = np.flatnonzero(result.certificates.table.index.to_numpy() == sample_id)
        if hits.size == 0:
            raise ValueError(
                f"Sample {sample_id!r} is not in the audit of {name!r}; the audits must share their test split."
            )
        cert = result.certificates.certificate(int(hits[0]))
        trajectories[name] = (cert.path, cert.path_margins, cert.flip_budget)
        rows.append(
            {
                "model": name,
                "predicted": str(result.dataset.classes[cert.pred]),
                "confidence": cert.confidence,
                "flip_budget": flip_budget_text(cert.flip_budget, len(cert.path)),
                "rcma": cert.rcma,
                "fds": cert.fds,
                "path": list(cert.path),
            }
        )
    columns = ["model", "predicted", "confidence", "flip_budget", "rcma", "fds", "path"]
    return SampleAcrossModels(table=pd.DataFrame(rows, columns=columns), trajectories=trajectories)
