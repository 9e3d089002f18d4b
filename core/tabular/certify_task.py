"""The certify task: a fitted tabular model with everything needed to certify raw rows.

A :class:`CertifyTask` is the fitted preprocessing (the tool's, a user pipeline's, or raw
space), model, classes, groups, baseline and protocol. An audit saves it beside its results
(``AuditResult.save``, ``_task.zip``), the audit-folder reader reopens it, and
:mod:`core.scale.certify` ships it to every partition of a large table. It lives in
:mod:`core.tabular` because it is made of tabular parts (:mod:`core.tabular.persist` saves its
model, :mod:`core.tabular.spaces` defines the user spaces); :mod:`core.scale` depends on it,
never the other way round.

Saved form: one deterministic zip of JSON and model files (``task.json``,
``pre/transformer.skops``, ``model/...``); nothing is unpickled, and the ``_task.pkl`` of earlier
versions is refused with how to re-create it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.atomic import atomic_write_bytes
from core.cfc import Protocol, certificate_fingerprint, certify
from core.formats import CERTIFY_TASK
from core.tabular.never_trusted import check_trust_list
from core.tabular.persist import (
    OWN_TRUSTED_TYPES,
    dump_skops,
    json_member,
    load_estimator,
    load_skops,
    normalised_zip,
    save_estimator,
    unzip_members,
)
from core.tabular.preprocessing import FittedPreprocessor
from core.tabular.spaces import PipelineSpace, RawModel, RawSpace
from core.validation import check_finite_features

__all__ = [
    "LEGACY_TASK_FILE",
    "TASK_FILE",
    "CertifyTask",
    "label_text",
    "legacy_refusal",
    "load_certify_task",
    "save_certify_task",
    "task_bytes",
    "task_from_audit",
    "task_from_bytes",
]

TASK_FILE = "_task.zip"
#: The pickle file of earlier versions: refused, never read.
LEGACY_TASK_FILE = "_task.pkl"
_TASK_SCHEMA = CERTIFY_TASK.tag  # "certify-task/2" (core.formats.CERTIFY_TASK)


def label_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Labels as text, vectorised: integral numbers without a decimal point ("1", not "1.0");
    missing (null or NaN) stays null."""
    if not pa.types.is_floating(column.type):
        return pc.cast(column, pa.large_string())
    integral = pc.and_(pc.is_finite(column), pc.equal(pc.floor(column), column))
    as_int = pc.cast(pc.cast(pc.if_else(integral, column, 0.0), pa.int64()), pa.large_string())
    text = pc.if_else(integral, as_int, pc.cast(column, pa.large_string()))
    return pc.if_else(pc.is_nan(column), pa.scalar(None, pa.large_string()), text)


def fixed_lists(values: pa.Array, width: int) -> pa.ListArray:
    """Rows of ``width`` consecutive ``values`` as a list column (no per-row Python)."""
    offsets = pa.array(np.arange(0, len(values) + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, values)


@dataclass(frozen=True, eq=False, kw_only=True)
class CertifyTask:
    """Everything needed to certify raw rows; shipped to a Dask cluster once.

    Saved without pickle by :func:`save_certify_task` (one zip of JSON and model files).

    Attributes
    ----------
    preprocessor : FittedPreprocessor, PipelineSpace or RawSpace
        Maps raw rows to the model's transformed features (the tool's preprocessing, the
        preprocessing steps of a user's pipeline, or raw space; :mod:`core.tabular.own_model`).
    model : estimator
        Fitted, with ``predict_proba`` over the transformed features.
    classes : tuple of str
        Label text of each ``predict_proba`` column.
    groups : dict of str to list of int
        Evidence groups over the transformed columns.
    baseline : ndarray of shape (n_features,)
    protocol : Protocol
    target : str or None
        Raw column holding the true label, if any.
    id_column : str or None
        Raw column copied to the output unchanged.
    fit_rows : int
        Rows ``0 .. fit_rows-1`` of the input were used to fit (0 for a model from elsewhere).
    identity : dict
        JSON description of the model (name, parameters, seed, fitting sample) for the manifest.
    batch_size : int
        Rows per ``predict_proba`` call inside :func:`core.cfc.certify` (memory only; results do
        not depend on it).
    """

    preprocessor: Any
    model: Any
    classes: tuple[str, ...]
    groups: dict[str, list[int]]
    baseline: np.ndarray
    protocol: Protocol
    target: str | None
    id_column: str | None
    fit_rows: int
    identity: dict = field(default_factory=dict)
    batch_size: int = 65_536

    @property
    def columns(self) -> list[str]:
        """Raw columns read from the input."""
        cols = list(self.preprocessor.raw_columns)
        cols += [c for c in (self.target, self.id_column) if c is not None and c not in cols]
        return cols

    def _predict_proba(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_proba(Z), dtype=np.float64)

    def fingerprint(self) -> str:
        """The certificate fingerprint (protocol, groups, baseline, model probe): the one that
        :func:`core.cfc.certify` gives any rows of this task, computed without certifying any."""
        return certificate_fingerprint(self._predict_proba, self.groups, self.baseline, self.protocol)

    def __call__(self, table: pa.Table, row_start: int) -> pa.Table:
        """Certificates of the rows of ``table`` (input rows ``row_start ...``); see module doc."""
        frame = table.select(list(self.preprocessor.raw_columns)).to_pandas()
        check_finite_features(frame, list(frame.columns), "input table", row_offset=row_start)
        X = self.preprocessor.transform(frame)
        cs = certify(self._predict_proba, X, self.groups, self.baseline, self.protocol, batch_size=self.batch_size)
        n = table.num_rows
        rows = np.arange(row_start, row_start + n, dtype=np.int64)
        cols: dict[str, Any] = {"row": rows}
        if self.id_column is not None:
            cols[self.id_column] = table.column(self.id_column)
        pred = cs.table["pred"].to_numpy()
        pred_label = pa.array(self.classes, pa.large_string()).take(pred)
        label = None
        if self.target is not None:
            label = label_text(table.column(self.target))
            cols["label"] = label
        cols["in_fit_sample"] = rows < self.fit_rows
        cols["pred"] = pred.astype(np.int64)
        cols["pred_label"] = pred_label
        cols["correct"] = pc.equal(pred_label, label) if label is not None else pa.nulls(n, pa.bool_())
        for name in ("confidence", "margin"):
            cols[name] = cs.table[name].to_numpy(dtype=np.float64)
        cols["flip_budget"] = cs.table["flip_budget"].to_numpy().astype(np.int64)
        for name in ("rcma", "fds", "u", "one_step_max", "degradation"):
            cols[name] = cs.table[name].to_numpy(dtype=np.float64)
        depth = cs.path_idx.shape[1]
        names = pa.array(cs.group_names, pa.large_string())
        cols["path"] = fixed_lists(names.take(cs.path_idx.ravel()), depth)
        cols["path_margins"] = fixed_lists(pa.array(cs.traj_margin.ravel()), depth + 1)
        cols["path_preds"] = fixed_lists(pa.array(cs.traj_pred.astype(np.int64).ravel()), depth + 1)
        for op in self.protocol.operators:
            cols[f"lambda_star_{op}"] = cs.table[f"lambda_star_{op}"].to_numpy(dtype=np.float64)
        return pa.table(cols)


def task_from_audit(result) -> CertifyTask:
    """The task of a finished single-machine audit (:func:`core.tabular.audit.run_audit`).

    Lets a model audited on a sample be certified on the full table: same preprocessing,
    model, groups, baseline and protocol, so the certificates share the audit's fingerprint.
    Save it with :func:`save_certify_task` and pass the file to ``certify --audit``.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult

    Returns
    -------
    CertifyTask
        ``fit_rows=0`` (no row of the big table was used for fitting).
    """
    ds = result.dataset
    identity = {
        "audit": {
            "dataset": ds.name,
            "model": result.model_name,
            "seed": result.seed,
            "fingerprint": result.fingerprint,
        }
    }
    return CertifyTask(
        preprocessor=result.preprocessor,
        model=result.model,
        classes=tuple(str(c) for c in ds.classes),
        groups=dict(result.groups),
        baseline=np.asarray(result.baseline, dtype=np.float64),
        protocol=result.protocol,
        target=ds.target,
        id_column=None,
        fit_rows=0,
        identity=identity,
    )


def legacy_refusal(path: Path) -> ValueError:
    return ValueError(
        f"{path} is a task saved by an earlier version as a pickle ({LEGACY_TASK_FILE}); pickles are no longer "
        "loaded (they can run code). Re-create it: run the `python -m core audit ... --out DIR` (or `certify`) "
        "command again into a new folder, which writes a safe _task.zip."
    )


def _task_members(task: CertifyTask) -> dict[str, bytes]:
    pre, members = task.preprocessor, {}
    if isinstance(pre, FittedPreprocessor):
        members["pre/transformer.skops"] = dump_skops(pre.transformer)
        pre_spec = {
            "kind": "tool",
            "numeric": list(pre.numeric),
            "categorical": list(pre.categorical),
            "feature_names": list(pre.feature_names),
        }
        model = task.model
    elif isinstance(pre, PipelineSpace):
        members["pre/transformer.skops"] = dump_skops(pre.transformer)
        pre_spec = {"kind": "pipeline", "raw_columns": list(pre.raw_columns)}
        model = task.model
    elif isinstance(pre, RawSpace):
        pre_spec = {"kind": "raw", "space": pre.to_dict()}
        model = task.model.model if isinstance(task.model, RawModel) else task.model
    else:
        raise ValueError(f"cannot save a task whose preprocessor is a {type(pre).__name__}.")
    model_members, model_spec = save_estimator(model, "model/")
    members.update(model_members)
    members["task.json"] = json_member(
        {
            "schema": _TASK_SCHEMA,
            "preprocessor": pre_spec,
            "model": model_spec,
            "classes": list(task.classes),
            "groups": task.groups,
            "baseline": np.asarray(task.baseline, dtype=np.float64).tolist(),
            "protocol": task.protocol.to_dict(),
            "target": task.target,
            "id_column": task.id_column,
            "fit_rows": task.fit_rows,
            "identity": task.identity,
            "batch_size": task.batch_size,
        }
    )
    return members


def _task_from_members(members: dict[str, bytes], where: str, trusted) -> CertifyTask:
    trusted = check_trust_list(trusted, where=where)  # never-trusted types: refused before anything is read
    if "task.json" not in members:
        raise ValueError(f"{where} holds no task.json; it is not a saved task.")
    try:
        spec = json.loads(members["task.json"])
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: task.json is not valid JSON ({exc}).") from exc
    found = spec.get("schema") if isinstance(spec, dict) else type(spec).__name__
    CERTIFY_TASK.check(
        found if isinstance(spec, dict) else None,
        where=where,
        mismatch=f"{where}: task schema must be {_TASK_SCHEMA!r}; got {found!r}.",
    )
    trusted = set(trusted) | OWN_TRUSTED_TYPES
    pre_spec = spec["preprocessor"]
    kind = pre_spec.get("kind")
    if kind in ("tool", "pipeline"):
        transformer = load_skops(
            members.get("pre/transformer.skops", b""), trusted=trusted, where=f"{where}: pre/transformer.skops"
        )
    model = load_estimator(members, spec["model"], "model/", trusted=trusted)
    if kind == "tool":
        pre = FittedPreprocessor(
            transformer=transformer,
            numeric=tuple(pre_spec["numeric"]),
            categorical=tuple(pre_spec["categorical"]),
            feature_names=tuple(pre_spec["feature_names"]),
        )
    elif kind == "pipeline":
        pre = PipelineSpace(transformer, tuple(pre_spec["raw_columns"]))
    elif kind == "raw":
        pre = RawSpace.from_dict(pre_spec["space"])
        model = RawModel(model, pre)
    else:
        raise ValueError(f"{where}: unknown preprocessor kind {kind!r}.")
    return CertifyTask(
        preprocessor=pre,
        model=model,
        classes=tuple(spec["classes"]),
        groups={k: list(v) for k, v in spec["groups"].items()},
        baseline=np.asarray(spec["baseline"], dtype=np.float64),
        protocol=Protocol.from_dict(spec["protocol"], where=where),
        target=spec["target"],
        id_column=spec["id_column"],
        fit_rows=int(spec["fit_rows"]),
        identity=dict(spec["identity"]),
        batch_size=int(spec["batch_size"]),
    )


def task_from_bytes(data: bytes, where: str, *, trusted=()) -> CertifyTask:
    """The task saved as ``data`` (the bytes of a ``_task.zip``); ``where`` names it in errors."""
    return _task_from_members(unzip_members(data, where), where, trusted)


def task_bytes(task: CertifyTask) -> bytes:
    """The saved form of ``task``: a deterministic zip (same task, same bytes)."""
    return normalised_zip(_task_members(task))


def save_certify_task(task: CertifyTask, path: str | Path) -> Path:
    """Save ``task`` to ``path`` (atomically) as a zip of JSON and model files; no pickle.

    Members: ``task.json`` (classes, groups, baseline, protocol, identity, the preprocessor's
    layout, the model family), ``pre/transformer.skops`` (scikit-learn preprocessing) and
    ``model/...`` (:mod:`core.tabular.persist`: skops, XGBoost JSON, LightGBM text, torch
    ``state_dict``, ONNX). For ``certify --audit PATH``.
    """
    if not isinstance(task, CertifyTask):
        raise ValueError(f"`task` must be a CertifyTask; got {type(task).__name__}.")
    path = Path(path)
    if path.suffix == ".pkl":
        raise ValueError(f"{path}: tasks are no longer pickles; save to a .zip path (e.g. {path.with_suffix('.zip')}).")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = task_bytes(task)
    atomic_write_bytes(path, data)  # the one atomic writer (temporary file, fsync, rename)
    return path


def _task_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():  # before the suffix: a missing nope.pkl is missing, not a legacy pickle
        raise FileNotFoundError(
            f"no saved task at {path}: it does not exist (expected the folder of an earlier audit or certify "
            f"run, or its {TASK_FILE})."
        )
    if path.is_dir():
        if (path / TASK_FILE).exists():
            return path / TASK_FILE
        if (path / LEGACY_TASK_FILE).exists():
            raise legacy_refusal(path / LEGACY_TASK_FILE)
        path = path / TASK_FILE
    if path.suffix == ".pkl":
        raise legacy_refusal(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no saved task at {path} (expected the {TASK_FILE} of an earlier audit or certify run)."
        )
    return path


def load_certify_task(path: str | Path, *, trusted=()) -> CertifyTask:
    """Load a task saved by an earlier run (``OUT/_task.zip``, or that run's folder).

    The task's ``identity`` gains ``loaded_from_sha256`` (the file's digest), so a resumed
    run that loads a different file is refused. Nothing is unpickled: a ``_task.pkl`` of an
    earlier version is refused with how to re-create it.

    Parameters
    ----------
    path : str or Path
    trusted : iterable of str, optional
        Types (beyond skops' and the tool's own) that a user's model in the task may contain;
        a never-trusted one (:mod:`core.tabular.never_trusted`) is refused with
        :class:`~core.tabular.never_trusted.NeverTrustedTypeError`, as is a task holding one.
    """
    path = _task_file(path)
    data = path.read_bytes()
    task = task_from_bytes(data, str(path), trusted=trusted)
    identity = {**task.identity, "loaded_from_sha256": hashlib.sha256(data).hexdigest()}
    return dataclasses.replace(task, identity=identity)
