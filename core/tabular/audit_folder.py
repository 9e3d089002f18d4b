"""Open a saved audit folder (``AuditResult.save`` / ``python -m core audit --out``) safely.

Only JSON, Parquet, Markdown and the task zip (:func:`core.tabular.certify_task.load_certify_task`:
skops with a fixed trust list, native model files, ONNX) are read; a folder holding an old
``_task.pkl`` is opened without its model, which is never unpickled.

:func:`open_audit_folder` returns what the folder holds; :func:`reopen_audit` recomputes the
full :class:`~core.tabular.audit.AuditResult` from its model and tables (same groups,
baseline and protocol, so the same certificate fingerprint) when the model loads.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["SavedAudit", "list_audit_folders", "open_audit_folder", "reopen_audit"]

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
        ``certificates.parquet``.
    summary : str
        ``summary.md`` ("" if absent).
    train, test : DataFrame or None
        The raw rows audited (``train.parquet`` / ``test.parquet``), None in older folders.
    task : CertifyTask or None
        The model and its feature space, None when it cannot be loaded.
    unavailable : str or None
        Why ``task`` is None (for people), else None.
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

    @property
    def fingerprint(self) -> str:
        return self.protocol.get("certificate_fingerprint", "")

    @property
    def label(self) -> str:
        return f"{self.path.name} ({self.protocol.get('model', '?')})"


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}).") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object; got {type(data).__name__}.")
    return data


def open_audit_folder(path: str | Path, *, trusted: Iterable[str] = ()) -> SavedAudit:
    """Read an audit folder; the model is loaded only from a safe ``_task.zip``.

    Parameters
    ----------
    path : str or Path
    trusted : iterable of str
        skops types (beyond skops' and the tool's own) that the saved model may contain.

    Raises
    ------
    ValueError
        Not an audit folder (the missing file is named) or a malformed file.
    """
    from core.tabular.certify_task import LEGACY_TASK_FILE, TASK_FILE, load_certify_task

    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"audit folder {str(path)!r} does not exist or is not a folder.")
    missing = [name for name in _REQUIRED if not (path / name).is_file()]
    if missing:
        raise ValueError(f"{path} is not an audit folder: {missing[0]} is missing (expected the output of "
                         "`python -m core audit --out` or AuditResult.save).")
    tables = {name: pd.read_parquet(path / f"{name}.parquet") if (path / f"{name}.parquet").is_file() else None
              for name in ("train", "test")}
    task, why = None, None
    if (path / TASK_FILE).is_file():
        try:
            task = load_certify_task(path / TASK_FILE, trusted=trusted)
        except ValueError as exc:
            why = f"the saved model could not be loaded: {exc}"
    elif (path / LEGACY_TASK_FILE).is_file():
        why = (f"the folder holds a {LEGACY_TASK_FILE} (a pickle of an earlier version), which is never loaded; "
               "re-create the audit to get a safe _task.zip")
    else:
        why = f"the folder holds no saved model ({TASK_FILE})"
    if task is not None and (tables["train"] is None or tables["test"] is None):
        why = "the folder has no train.parquet / test.parquet (written by an earlier version)"
    summary = (path / "summary.md").read_text(encoding="utf-8") if (path / "summary.md").is_file() else ""
    return SavedAudit(path=path, protocol=_json(path / "protocol.json"), evaluation=_json(path / "evaluation.json"),
                      certificates=pd.read_parquet(path / "certificates.parquet"), summary=summary,
                      train=tables["train"], test=tables["test"], task=task if why is None else None, unavailable=why)


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
    result = audit_task(saved.task, saved.train, saved.test, progress=progress,
                        name=str(saved.protocol.get("model", "saved model")))
    if saved.fingerprint and result.fingerprint != saved.fingerprint:
        raise ValueError(f"{saved.path}: the recomputed certificate fingerprint {result.fingerprint[:16]}… differs from "
                         f"the saved {saved.fingerprint[:16]}…; the model or the tables were changed.")
    return result


def list_audit_folders(root: str | Path) -> list[Path]:
    """Sub-folders of ``root`` that look like audit folders (hold ``protocol.json``), sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "protocol.json").is_file())
