"""Open a saved audit folder (``AuditResult.save`` / ``python -m core audit --out``) safely.

Only JSON, Parquet, Markdown, ``.npz`` read with ``allow_pickle=False`` and the task zip
(:func:`core.tabular.certify_task.load_certify_task`: skops with a fixed trust list, native model
files, ONNX) are read; a folder holding an old
``_task.pkl`` is opened without its model, which is never unpickled.

:func:`open_audit_folder` returns what the folder holds. :func:`saved_result` rebuilds the
full :class:`~core.tabular.audit.AuditResult` from the saved tables alone (the ``view/``
sub-folder written by :func:`write_view`), so every page of the dashboard works on a folder
whose model cannot be loaded; only what calls the model (``result.model is None`` then, with
``result.model_unavailable`` saying why) is off. :func:`reopen_audit` recomputes an audit from
its model and tables, for folders written before ``view/`` existed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.formats import AUDIT_VIEW, CERTIFICATE_SET, PROTOCOL, read_json_object
from core.tabular.audit_view import LABEL_ARRAYS, VIEW_DIR, VIEW_SCHEMA, read_frame, write_view
from core.tabular.lazy_model import LazyModel

__all__ = [
    "VIEW_DIR",
    "SavedAudit",
    "SavedModel",
    "SavedSpace",
    "check_audit_folder",
    "check_folder_versions",
    "labelled_certificates",
    "list_audit_folders",
    "open_audit_folder",
    "reopen_audit",
    "saved_result",
    "write_view",
]

_REQUIRED = ("protocol.json", "evaluation.json", "certificates.parquet")


@dataclass(frozen=True, eq=False, kw_only=True)
class SavedAudit:
    """The contents of an audit folder.

    Attributes
    ----------
    path : Path
    protocol : dict
        ``protocol.json`` (protocol, fingerprints, groups, baseline).
    evaluation : dict
        ``evaluation.json``.
    certificates : DataFrame
        ``certificates.parquet``, its ``y_true`` / ``pred`` as class labels
        (:func:`labelled_certificates`).
    summary : str
        ``summary.md`` ("" if absent).
    train, test : DataFrame or None
        The raw rows audited (``train.parquet`` / ``test.parquet``), None in older folders.
    task : CertifyTask or None
        The model and its feature space, None when it cannot be loaded (or was not loaded:
        ``open_audit_folder(..., load_model=False)``).
    unavailable : str or None
        Why the model cannot be used (for people), else None. Opened without loading the
        model, only what the files alone tell (no ``_task.zip``, an old ``_task.pkl``).
    made_by : str
        Who made the audit (``view/meta.json``'s ``made_by``, the signed-in user's e-mail
        address or name given to :func:`~core.tabular.audit_view.write_view`); "" when unknown.
    """

    path: Path
    protocol: dict
    evaluation: dict
    certificates: pd.DataFrame
    summary: str
    train: pd.DataFrame | None
    test: pd.DataFrame | None
    task: Any
    unavailable: str | None
    made_by: str = ""

    @property
    def fingerprint(self) -> str:
        return self.protocol.get("certificate_fingerprint", "")

    @property
    def label(self) -> str:
        return f"{self.path.name} ({self.protocol.get('model', '?')})"


def labelled_certificates(table: pd.DataFrame, protocol: dict, folder: str | Path) -> tuple[pd.DataFrame, list | None]:
    """A folder's certificate table with the class labels in ``y_true`` / ``pred``, and the classes.

    Folders written since ``protocol.json`` lists ``classes`` hold the labels already. Older
    ones hold ``predict_proba`` column indices there: they are mapped through the classes of
    ``view/meta.json`` when the folder has one, else left as stored (and the classes are None).

    Parameters
    ----------
    table : DataFrame
        ``certificates.parquet`` (or ``.csv``) as read.
    protocol : dict
        The folder's ``protocol.json``.
    folder : path
        The audit folder (for ``view/meta.json``).

    Returns
    -------
    (DataFrame, list or None)
    """
    import numpy as np

    if protocol.get("classes") is not None:
        return table, list(protocol["classes"])
    meta = Path(folder) / VIEW_DIR / "meta.json"
    try:
        classes = read_json_object(meta)["dataset"]["classes"] if meta.is_file() else None
    except (ValueError, KeyError, TypeError):
        classes = None
    if not classes:
        return table, None
    labels = np.asarray(classes, dtype=object)
    out = table.copy()
    for column in ("y_true", "pred"):
        codes = pd.to_numeric(out[column], errors="coerce") if column in out.columns else None
        if codes is None or codes.isna().any() or not codes.between(0, len(labels) - 1).all():
            return table, None  # not the column indices this fallback expects: keep what was stored
        out[column] = labels[codes.to_numpy(dtype=np.int64)]
    return out, list(classes)


def check_audit_folder(path: str | Path) -> Path:
    """``path`` as a Path when it is an audit folder this version reads.

    Its required files must exist, and the format tags of ``view/meta.json`` (the folder's
    version, :data:`core.formats.AUDIT_VIEW`) and of ``protocol.json``'s protocol
    (:data:`core.formats.PROTOCOL`) must be ones this version reads; only those two small
    JSON files are read. A folder written before ``view/`` existed has no folder version and
    passes; a damaged ``meta.json`` is left to the readers, which name the damage.

    Raises
    ------
    NewerFormatError
        The folder was written by a newer version of the tool (the message names the folder
        and says to upgrade).
    ValueError
        The folder does not exist, the first missing required file is named, or a format tag
        is not one of an audit folder.
    """
    return _checked_folder(path)[0]


def _json_object(path: Path) -> dict | None:
    """The JSON object in ``path``; None when the file is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _checked_folder(path: str | Path) -> tuple[Path, dict | None]:
    """:func:`check_audit_folder`'s path and the folder's ``view/meta.json`` (None if absent or damaged)."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"audit folder {str(path)!r} does not exist or is not a folder.")
    missing = [name for name in _REQUIRED if not (path / name).is_file()]
    if missing:
        raise ValueError(
            f"{path} is not an audit folder: {missing[0]} is missing (expected the output of "
            "`reliability-audit audit --out` or AuditResult.save)."
        )
    return path, check_folder_versions(path)


def check_folder_versions(path: str | Path) -> dict | None:
    """Refuse an audit folder whose ``view/meta.json`` or protocol a newer version wrote.

    Only the format tags are read (the folder's files are not required: the ``report``
    command reads a folder of tables alone). Returns ``view/meta.json`` (None if absent or
    damaged).

    Raises
    ------
    NewerFormatError
        Made by a newer version (the message names the folder and says to upgrade).
    ValueError
        A format tag that is not one of an audit folder.
    """
    path = Path(path)
    meta = _json_object(path / VIEW_DIR / "meta.json")
    if meta is not None:
        AUDIT_VIEW.check(meta.get("schema"), where=str(path))
    stored = _json_object(path / "protocol.json")
    protocol = stored.get("protocol") if stored is not None else None
    if isinstance(protocol, dict):
        PROTOCOL.check(protocol.get("schema"), where=str(path), missing=1)
    return meta


def open_audit_folder(path: str | Path, *, trusted: Iterable[str] = (), load_model: bool = True) -> SavedAudit:
    """Read an audit folder; the model is loaded only from a safe ``_task.zip``.

    Parameters
    ----------
    path : str or Path
    trusted : iterable of str
        skops types (beyond skops' and the tool's own) that the saved model may contain.
    load_model : bool, default=True
        Load ``_task.zip`` now. With False, ``task`` is None, ``unavailable`` says only what
        the files alone tell (an old ``_task.pkl``, no ``_task.zip``, no train / test tables)
        and the model is left to :class:`SavedModel` (``saved_result(..., lazy_model=True)``),
        so that opening the folder imports neither skops nor the model's library.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool (:func:`check_audit_folder`).
    ValueError
        Not an audit folder (the missing file is named) or a malformed file.
    """
    from core.tabular.certify_task import LEGACY_TASK_FILE, TASK_FILE, load_certify_task

    path, meta = _checked_folder(path)
    tables = {
        name: read_frame(path / f"{name}.parquet") if (path / f"{name}.parquet").is_file() else None
        for name in ("train", "test")
    }
    task, why = None, None
    if (path / TASK_FILE).is_file():
        if load_model:
            try:
                task = load_certify_task(path / TASK_FILE, trusted=trusted)
            except ValueError as exc:
                why = f"the saved model could not be loaded: {exc}"
    elif (path / LEGACY_TASK_FILE).is_file():
        why = (
            f"the folder holds a {LEGACY_TASK_FILE} (a pickle of an earlier version), which is never loaded; "
            "re-create the audit to get a safe _task.zip"
        )
    else:
        why = f"the folder holds no saved model ({TASK_FILE})"
    if why is None and (tables["train"] is None or tables["test"] is None):
        why = "the folder has no train.parquet / test.parquet (written by an earlier version)"
    summary = (path / "summary.md").read_text(encoding="utf-8") if (path / "summary.md").is_file() else ""
    protocol = read_json_object(path / "protocol.json")
    certificates, _ = labelled_certificates(read_frame(path / "certificates.parquet"), protocol, path)
    return SavedAudit(
        path=path,
        protocol=protocol,
        evaluation=read_json_object(path / "evaluation.json"),
        certificates=certificates,
        summary=summary,
        train=tables["train"],
        test=tables["test"],
        task=task if why is None else None,
        unavailable=why,
        made_by=_made_by(meta),
    )


def _made_by(meta: dict | None) -> str:
    value = (meta or {}).get("made_by", "")
    return value if isinstance(value, str) else ""


def reopen_audit(saved: SavedAudit, *, progress: Any = None):
    """The full audit of a saved folder, recomputed from its model and tables.

    Raises
    ------
    ValueError
        The model is unavailable (``saved.unavailable`` says why), or the recomputed
        fingerprint differs from the saved one (the model or tables were changed).
    """
    from core.tabular.own_model import audit_task

    if saved.task is None:
        raise ValueError(f"{saved.path}: {saved.unavailable}.")
    result = audit_task(
        saved.task, saved.train, saved.test, progress=progress, name=str(saved.protocol.get("model", "saved model"))
    )
    if saved.fingerprint and result.fingerprint != saved.fingerprint:
        raise ValueError(
            f"{saved.path}: the recomputed certificate fingerprint {result.fingerprint[:16]}… differs from "
            f"the saved {saved.fingerprint[:16]}…; the model or the tables were changed."
        )
    return result


def list_audit_folders(root: str | Path) -> list[Path]:
    """Sub-folders of ``root`` that look like audit folders (hold ``protocol.json``), sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "protocol.json").is_file())


@dataclass(frozen=True)
class SavedSpace:
    """The feature space of a saved audit as the pages show it: names and raw origins only.

    ``transform`` is unavailable (the preprocessing lives in the model task); the pages never
    transform rows of a saved audit, they read the saved transformed test rows.
    """

    raw_columns: tuple[str, ...]
    feature_names: tuple[str, ...]
    origins: tuple[str, ...]

    @property
    def n_features_out(self) -> int:
        return len(self.feature_names)

    def transform(self, frame: pd.DataFrame, **_: Any) -> Any:
        raise ValueError(
            "a saved audit's feature space cannot transform new rows; open the folder's _task.zip "
            "(core.scale.certify.load_certify_task) for its preprocessing."
        )


class SavedModel(LazyModel):
    """``predict_proba`` of a folder's ``_task.zip``, loaded on the first call.

    Opening a saved audit then imports neither skops nor the model's library; the first live
    panel that calls the model pays for it once (the dashboard does it in a background thread).
    The loaded model must reproduce the saved certificate fingerprint, else every call raises
    ``ValueError`` saying so.

    Attributes
    ----------
    path : Path
        The ``_task.zip``.
    fingerprint : str
        The saved certificate fingerprint the model must reproduce.
    trusted : tuple of str
        skops types trusted beyond skops' and the tool's own.
    task : CertifyTask or None
        The loaded task (None until loaded).
    """

    def __init__(self, path: str | Path, fingerprint: str, *, trusted: Iterable[str] = ()) -> None:
        super().__init__()
        self.path, self.fingerprint, self.trusted = Path(path), fingerprint, tuple(trusted)
        self.description = f"reading the saved model file {self.path.name}"
        self.task: Any = None

    def _make(self) -> Any:
        from core.tabular.certify_task import load_certify_task

        task = load_certify_task(self.path, trusted=self.trusted)
        _check_task(task, self.fingerprint, self.path)
        self.task = task
        return task.model

    def _failure(self, exc: Exception) -> str:
        return f"the saved model could not be loaded: {exc}"


def _check_task(task: Any, fingerprint: str, where: Path) -> None:
    actual = task.fingerprint()
    if fingerprint and actual != fingerprint:
        raise ValueError(
            f"{where} gives the certificate fingerprint {actual[:16]}…, but the saved certificates "
            f"were made with {fingerprint[:16]}…; the model file was changed or belongs to another "
            "audit."
        )


def _labels_from(meta: dict | None, arrays: Any, prefix: str) -> Any:
    from core.cfc.stressors import BrittleLabels

    if meta is None:
        return None
    return BrittleLabels(
        **{k: arrays[f"{prefix}_{k}"] for k in LABEL_ARRAYS},
        settings=tuple((str(s), float(v)) for s, v in meta["settings"]),
        tau_p=float(meta["tau_p"]),
        tau_kappa=float(meta["tau_kappa"]),
        n_forward=int(meta["n_forward"]),
    )


def _view_dataset(meta: dict, saved: SavedAudit, arrays: Any, dataset: Any) -> tuple[Any, Any]:
    """The audited dataset and split: the given ``dataset`` (checked) or the saved train + test rows."""
    import numpy as np

    from core.tabular.datasets import Dataset, DatasetSplit

    d, split = meta["dataset"], meta["split"]
    test_ids = saved.test.index if saved.test is not None else None
    if dataset is not None:
        index = arrays["test_index"]
        if (
            len(dataset.frame) != int(d["n_rows"])
            or test_ids is None
            or not dataset.frame.index[index].equals(test_ids)
        ):
            raise ValueError(
                f"{saved.path}: the given dataset {dataset.name!r} is not the one audited "
                f"({d['name']!r}, {d['n_rows']} rows)."
            )
        positions = arrays["train_index"], arrays["val_index"], index
    else:
        if saved.train is None or saved.test is None:
            raise ValueError(f"{saved.path} has no train.parquet / test.parquet (written by an earlier version).")
        frame = pd.concat([saved.train, saved.test], axis=0)
        if frame.index.has_duplicates:
            frame = frame.reset_index(drop=True)
        n_train = len(saved.train)
        dataset = Dataset(
            name=d["name"],
            frame=frame,
            target=d["target"],
            features=tuple(d["features"]),
            numeric=tuple(d["numeric"]),
            categorical=tuple(d["categorical"]),
            classes=tuple(d["classes"]),
            positive_class=d["positive_class"],
            blocks=d["blocks"],
            markers={k: tuple(v) for k, v in (d["markers"] or {}).items()},
            description=d["description"],
            source=d["source"],
            notes=tuple(d["notes"]),
            real_values={k: tuple(v) for k, v in (d["real_values"] or {}).items()},
        )
        positions = (
            np.arange(n_train, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.arange(n_train, len(frame), dtype=np.int64),
        )
    return dataset, DatasetSplit(
        dataset=dataset,
        seed=int(split["seed"]),
        val_size=float(split["val_size"]),
        test_size=float(split["test_size"]),
        train_index=positions[0],
        val_index=positions[1],
        test_index=positions[2],
    )


def saved_result(saved: SavedAudit, *, dataset: Any = None, lazy_model: bool = False):
    """The :class:`~core.tabular.audit.AuditResult` of a saved folder, from its saved tables.

    Nothing is recomputed: the certificates, labels, scores, evaluation and calibration are
    those saved. The model is ``saved.task``'s when it loaded and reproduces the saved
    certificate fingerprint; otherwise ``result.model`` is None and
    ``result.model_unavailable`` says why (which file, what failed, how to fix it).

    Parameters
    ----------
    saved : SavedAudit
        From :func:`open_audit_folder`.
    dataset : Dataset, optional
        The full dataset the audit was drawn from (e.g. a bundled one); checked against the
        saved test rows. Without it the dataset is the saved train + test rows.
    lazy_model : bool, default=False
        Use a :class:`SavedModel` over the folder's ``_task.zip`` (loaded on the first call)
        instead of ``saved.task``; for folders opened with ``load_model=False``. A reason the
        files alone give (``saved.unavailable``) still leaves ``result.model`` None.

    Raises
    ------
    NewerFormatError
        The view was written by a newer version of the tool.
    ValueError
        The folder has no ``view/`` (written before it existed: recompute with
        :func:`reopen_audit`), a view file is malformed, or the view does not belong to the
        folder's certificates (fingerprints differ).
    """
    import gzip

    import numpy as np

    from core.cfc.calibration import BATS, CalibrationReport
    from core.cfc.certificate_set import CertificateSet
    from core.cfc.protocol import Protocol
    from core.cfc.stressors import LabelChannel
    from core.tabular.audit import AuditResult
    from core.tabular.certify_task import TASK_FILE

    view = saved.path / VIEW_DIR
    if not (view / "meta.json").is_file():
        raise ValueError(
            f"{saved.path} has no {VIEW_DIR}/meta.json (written by an earlier version); "
            "re-create the audit, or reopen it with its model."
        )
    meta = read_json_object(view / "meta.json")
    AUDIT_VIEW.check(
        meta.get("schema"),
        where=str(saved.path),
        mismatch=f"{view / 'meta.json'}: schema must be {VIEW_SCHEMA!r}; got {meta.get('schema')!r}.",
    )
    try:
        bundle = json.loads(gzip.decompress((view / "certificates.json.gz").read_bytes()))
        with np.load(view / "arrays.npz", allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, EOFError, ValueError, KeyError) as exc:
        raise ValueError(f"{view}: a view file is missing or damaged ({exc}); re-create the audit.") from exc
    if isinstance(bundle, dict):  # anything else is refused by from_bundle, naming what it is
        CERTIFICATE_SET.check(
            bundle.get("schema"),
            where=str(saved.path),
            mismatch=f"{view / 'certificates.json.gz'}: not a certificate bundle (schema {bundle.get('schema')!r}, "
            f"expected {CERTIFICATE_SET.tag!r}).",
        )
    certificates = CertificateSet.from_bundle(bundle)
    for what, value in (
        ("view/meta.json", meta["fingerprint"]),
        ("view/certificates.json.gz", certificates.fingerprint),
    ):
        if saved.fingerprint and value != saved.fingerprint:
            raise ValueError(
                f"{saved.path}: {what} holds fingerprint {value[:16]}…, protocol.json "
                f"{saved.fingerprint[:16]}…; the folder mixes two audits."
            )
    tables = {name: read_frame(view / f"{name}.parquet") for name in meta["tables"]}
    scores = read_frame(view / "scores.parquet")
    dataset, split = _view_dataset(meta, saved, arrays, dataset)
    pre = meta["preprocessor"]
    c = meta["calibration"]
    nan = float("nan")
    calibration = CalibrationReport(
        bats=BATS(
            t0=float(c["t0"]),
            eta=float(c["eta"]),
            fds_min=nan if c["fds_min"] is None else float(c["fds_min"]),
            fds_max=nan if c["fds_max"] is None else float(c["fds_max"]),
            eta_grid=tuple(float(v) for v in c["eta_grid"]),
            validation_nll=tuple(nan if v is None else float(v) for v in c["validation_nll"]),
        ),
        metrics=tables["calibration_metrics"],
        reliability=tables["calibration_reliability"],
        fragile=arrays["calibration_fragile"],
        fragile_share=float(c["fragile_share"]),
        proba={k: arrays[f"calibration_proba_{k}"] for k in c["proba"]},
    )
    channel = LabelChannel(**{k: tuple(v) if isinstance(v, list) else v for k, v in meta["label_channel"].items()})
    model, why = None, None
    task_file = saved.path / TASK_FILE
    if saved.unavailable is not None:
        why = saved.unavailable
    elif lazy_model and task_file.is_file():
        model = SavedModel(task_file, saved.fingerprint)
    elif saved.task is not None:
        try:
            _check_task(saved.task, saved.fingerprint, task_file)
            model = saved.task.model
        except ValueError as exc:
            why = f"the saved model could not be used: {exc}"
    else:
        why = f"the folder holds no saved model ({TASK_FILE})"
    return AuditResult(
        dataset=dataset,
        split=split,
        seed=int(meta["seed"]),
        model_name=str(meta["model_name"]),
        model=model,
        preprocessor=SavedSpace(tuple(pre["raw_columns"]), tuple(pre["feature_names"]), tuple(pre["origins"])),
        groups=certificates.groups,
        baseline=arrays["baseline"],
        protocol=Protocol.from_dict(saved.protocol["protocol"], where=str(saved.path)),
        fingerprint=certificates.fingerprint,
        label_channel=channel,
        raw_test=saved.test,
        X_test=arrays["X_test"],
        y_test=arrays["y_test"],
        proba_test=arrays["proba_test"],
        certificates=certificates,
        labels=_labels_from(meta["labels"], arrays, "labels"),
        scores=scores,
        evaluation=tables["evaluation"],
        unavailable=tables["unavailable"],
        unavailable_groups=tuple(meta["unavailable_groups"]),
        naturalistic=_labels_from(meta["naturalistic"], arrays, "naturalistic"),
        naturalistic_evaluation=tables.get("naturalistic_evaluation"),
        nominal={k: nan if v is None else float(v) for k, v in meta["nominal"].items()},
        calibration=calibration,
        sensitivity=tables.get("sensitivity"),
        search=tables.get("search"),
        importance=None,
        group_shap=None,
        timings=dict(meta["timings"]),
        notes=tuple(meta["notes"]),
        space_kind=meta["space_kind"],
        model_unavailable=None if model is not None else why,
    )
