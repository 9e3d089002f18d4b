"""An audit logged to MLflow: one run with its figures, its protocol, its folder and its report.

``reliability-audit audit ... --mlflow-experiment NAME`` and, in a notebook,
``core.log_audit_to_mlflow(result, experiment=NAME)`` create one run in the experiment
``NAME`` (created when missing) of the tracking server (``--mlflow-tracking-uri`` /
``tracking_uri=``, else ``$MLFLOW_TRACKING_URI``):

- **metrics**: every finite figure of the audit under the CI gate's names
  (:func:`core.gate.metric_values`: ``share_brittle``, ``mean_rcma``, ``accuracy``,
  ``fds.auroc``, …); a figure undefined on this audit (``null`` in ``evaluation.json``) is left
  out, as MLflow would draw it as a point;
- **params**: the protocol of ``protocol.json`` (``protocol.*``, ``label_channel.*``,
  ``split.*``, the dataset, model, seed, classes and both fingerprints);
- **tags**: ``reliability_audit.certificate_fingerprint`` and, for a model read from MLflow,
  ``reliability_audit.model_uri``;
- **artifacts**: the audit folder under ``audit/`` and the HTML report ``report.html``
  (:func:`core.report.build_report`, without reviewers' decisions).

The run is created only once the report is built; a failure while it is being filled marks it
``FAILED``. MLflow is the ``mlflow`` extra (``mlflow-skinny`` is enough), imported when a
function here runs; requests fail in seconds on an unreachable server, naming its URI
(:func:`core.tabular.mlflow_models.mlflow_requests`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LoggedAudit", "check_tracking_server", "log_audit_to_mlflow", "protocol_params"]

#: Sections of ``protocol.json`` logged as dotted params.
_PARAM_SECTIONS = ("protocol", "label_channel", "split")
#: Top-level fields of ``protocol.json`` logged as params as they are.
_PARAM_FIELDS = (
    "dataset",
    "source",
    "model",
    "seed",
    "classes",
    "depth",
    "protocol_fingerprint",
    "certificate_fingerprint",
)
# MLflow's limits: 100 params and 1000 metrics a batch, 6000 characters a param value.
_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000
_MAX_PARAM_CHARS = 6000
_TAG = "reliability_audit"


@dataclass(frozen=True)
class LoggedAudit:
    """Where an audit was logged.

    Attributes
    ----------
    run_id : str
    experiment_id : str
    experiment : str
        The experiment's name.
    tracking_uri : str
    n_metrics, n_params : int
        How many metrics and params the run holds.
    """

    run_id: str
    experiment_id: str
    experiment: str
    tracking_uri: str
    n_metrics: int
    n_params: int


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= _MAX_PARAM_CHARS else text[: _MAX_PARAM_CHARS - 1] + "…"


def protocol_params(protocol: Mapping[str, Any]) -> dict[str, str]:
    """The params of a run: ``protocol.json``'s protocol, label channel, split and identity.

    The audit's data-derived fields (``groups``, ``baseline``) are left to the audit folder.

    Examples
    --------
    >>> protocol_params({"protocol": {"baseline": "mean", "severities": [0.5, 1.0]}, "seed": 0, "groups": {}})
    {'protocol.baseline': 'mean', 'protocol.severities': '[0.5,1.0]', 'seed': '0'}
    """
    params: dict[str, str] = {}
    for section in _PARAM_SECTIONS:
        entries = protocol.get(section)
        for key, value in entries.items() if isinstance(entries, Mapping) else ():
            params[f"{section}.{key}"] = _param_text(value)
    for key in _PARAM_FIELDS:
        if key in protocol:
            params[key] = _param_text(protocol[key])
    return params


def check_tracking_server(*, tracking_uri: str | None = None) -> str:
    """Ask the tracking server for one experiment, so that a bad URI is said before an audit runs.

    Returns the tracking URI used. Raises :class:`~core.tabular.mlflow_models.TrackingServerError`
    (unreachable, URI named), ``ValueError`` (no URI, or the server answered with an error) or
    :class:`~core.optional.MissingExtraError` (no MLflow).
    """
    from core.tabular.mlflow_models import mlflow_requests, tracking_uri_of

    tracking = tracking_uri_of(tracking_uri)
    with mlflow_requests(tracking, what="--mlflow-experiment (logging audits to MLflow)") as mlflow:
        mlflow.MlflowClient().search_experiments(max_results=1)
    return tracking


def _check_experiment(experiment: Any) -> str:
    if not isinstance(experiment, str) or not experiment.strip():
        raise ValueError(f"`experiment` must be a non-empty experiment name; got {experiment!r}.")
    return experiment.strip()


def _batches(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_audit_to_mlflow(
    result: Any,
    *,
    experiment: str,
    tracking_uri: str | None = None,
    run_name: str | None = None,
    model_uri: str | None = None,
) -> LoggedAudit:
    """Log one audit to MLflow as one run (metrics, protocol params, audit folder, HTML report).

    Parameters
    ----------
    result : AuditResult or path
        An audit (:func:`core.audit_model`, :func:`core.tabular.audit.run_audit`) or an audit
        folder (``reliability-audit audit --out DIR``, ``AuditResult.save``).
    experiment : str
        The experiment's name; created when the server has none of that name.
    tracking_uri : str, optional
        Default ``$MLFLOW_TRACKING_URI``.
    run_name : str, optional
        Default ``audit <model>``.
    model_uri : str, optional
        The MLflow model audited (``models:/credit/3``), kept as the tag
        ``reliability_audit.model_uri``.

    Returns
    -------
    LoggedAudit

    Raises
    ------
    TrackingServerError
        The server did not answer (its URI named).
    MissingExtraError
        MLflow is not installed (``pip install "reliability-audit[mlflow]"``).
    ValueError
        No tracking URI, an empty experiment name, not an audit folder, or an error the server
        answered with (quoted).
    """
    from core.gate import gate_metrics
    from core.report import build_report, load_audit_folder
    from core.tabular.mlflow_models import mlflow_requests, tracking_uri_of

    experiment = _check_experiment(experiment)
    tracking = tracking_uri_of(tracking_uri)
    with tempfile.TemporaryDirectory(prefix="audit-mlflow-") as tmp:
        if isinstance(result, (str, os.PathLike)):
            folder = Path(result)
            inputs = load_audit_folder(folder)
        else:
            from core.report import audit_inputs

            folder = Path(tmp) / "audit"
            result.save(folder)
            inputs = audit_inputs(result, label=str(getattr(result, "model_name", "") or "audit"))
        metrics = gate_metrics(folder)
        protocol = json.loads((folder / "protocol.json").read_text(encoding="utf-8"))
        params = protocol_params(protocol)
        report = Path(tmp) / "report.html"
        report.write_text(
            build_report(inputs, reviews_note="the reviewers' decisions are not part of the report logged to MLflow."),
            encoding="utf-8",
        )
        tags = {
            f"{_TAG}.certificate_fingerprint": str(protocol.get("certificate_fingerprint", "")),
        }
        if model_uri:
            tags[f"{_TAG}.model_uri"] = model_uri
        values = {k: v for k, v in metrics.values.items() if math.isfinite(v)}
        with mlflow_requests(tracking, what="logging audits to MLflow (--mlflow-experiment)") as mlflow:
            from mlflow.entities import Metric, Param

            client = mlflow.MlflowClient()
            found = client.get_experiment_by_name(experiment)
            experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
            run = client.create_run(experiment_id, run_name=run_name or f"audit {metrics.model}", tags=tags)
            run_id = run.info.run_id
            try:
                now = int(time.time() * 1000)
                for batch in _batches([Param(k, v) for k, v in params.items()], _PARAMS_PER_BATCH):
                    client.log_batch(run_id, params=batch)
                for batch in _batches([Metric(k, v, now, 0) for k, v in values.items()], _METRICS_PER_BATCH):
                    client.log_batch(run_id, metrics=batch)
                client.log_artifacts(run_id, str(folder), artifact_path="audit")
                client.log_artifact(run_id, str(report))
            except BaseException:
                with contextlib.suppress(Exception):  # the first error is the one to report
                    client.set_terminated(run_id, "FAILED")
                raise
            client.set_terminated(run_id, "FINISHED")
    return LoggedAudit(
        run_id=run_id,
        experiment_id=str(experiment_id),
        experiment=experiment,
        tracking_uri=tracking,
        n_metrics=len(values),
        n_params=len(params),
    )
