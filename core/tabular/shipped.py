"""Precomputed audits shipped in ``assets/default_audit``, used only when their source matches.

Every shipped audit is a saved-audit folder (:mod:`core.tabular.audit_folder`) plus
``source.json``: what produced it — the protocol and label-channel fingerprints, a digest of
the data, the model's registry entry and seed, and the versions of the libraries that compute
it. :func:`audit_source` recomputes that description for a requested audit from cheap facts
(no model is fitted, no heavy library imported); :func:`shipped_audit` returns the shipped
result only when the two fingerprints are equal, and None otherwise — the caller then
computes the audit as usual. ``scripts/build_default_audit.py`` regenerates the folders.

The shipped folders hold no model file: the live panels' model is refitted on first use
(:class:`RefitModel`: same split, preprocessing, registry parameters and seed give the same
model, checked against the certificate fingerprint). Refitting the default model costs less
than reading it back with skops, whose trusted-type scan imports every scikit-learn module.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.formats import SHIPPED_AUDIT
from core.resources import ASSETS_DIR
from core.tabular.lazy_model import LazyModel

__all__ = [
    "SHIPPED_DIR",
    "SHIPPED_MODELS",
    "SOURCE_FILE",
    "RefitModel",
    "audit_source",
    "read_source",
    "shipped_audit",
    "shipped_folder",
    "shipped_glance",
    "source_fingerprint",
    "write_source",
]

#: Where the shipped audits live (``AUDIT_SHIPPED_DIR`` overrides it, e.g. in tests).
SHIPPED_DIR = ASSETS_DIR / "default_audit"
SOURCE_FILE = "source.json"
#: What ``scripts/build_default_audit.py`` ships: the default dataset at seed 0 under the default
#: protocol, for the sidebar's default model and the Model comparison page's default models.
SHIPPED_MODELS = ("logreg", "random_forest", "hist_gb")
# Bump (core.formats.SHIPPED_AUDIT) when the audit pipeline changes what it computes from the
# same inputs.
_SCHEMA = SHIPPED_AUDIT.tag
# Libraries whose kernels or defaults decide the numbers of every audit.
_CORE_LIBRARIES = ("numpy", "pandas", "scipy", "scikit-learn", "pyarrow")
# Models computed by a library other than scikit-learn (no import: names only).
_MODEL_LIBRARY = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "catboost": "catboost",
    "resmlp": "torch",
    "fr_resmlp": "torch",
}


def _root() -> Path:
    return Path(os.environ.get("AUDIT_SHIPPED_DIR") or SHIPPED_DIR)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _data_digest(dataset: Any) -> str:
    """SHA-256 of the table's values, index, columns and dtypes, and of its declared roles."""
    frame = dataset.frame
    h = hashlib.sha256()
    h.update(
        json.dumps(
            {
                "name": dataset.name,
                "target": dataset.target,
                "numeric": list(dataset.numeric),
                "categorical": list(dataset.categorical),
                "classes": [str(c) for c in dataset.classes],
                "columns": [str(c) for c in frame.columns],
                "dtypes": [str(t) for t in frame.dtypes],
                "rows": len(frame),
            },
            sort_keys=True,
        ).encode()
    )
    h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return h.hexdigest()


def audit_source(
    dataset: Any, *, model: str, seed: int, protocol: Protocol | None = None, label_channel: LabelChannel | None = None
) -> dict[str, Any]:
    """What an audit of ``run_audit(dataset, model=model, seed=seed, protocol=protocol)`` depends on.

    Parameters
    ----------
    dataset : Dataset
    model : str
        Registry name (:data:`core.tabular.models.MODELS`).
    seed : int
    protocol : Protocol, optional
        Default: ``Protocol()``.
    label_channel : LabelChannel, optional
        Default: ``LabelChannel()``.

    Returns
    -------
    dict
        Plain JSON: ``schema``, ``protocol`` (fingerprint), ``label_channel``, ``data``
        (digest), ``model`` (name, seed, registry parameters) and ``libraries`` (versions).
    """
    from core.tabular.models import MODELS

    if model not in MODELS:
        raise ValueError(f"`model` must be one of {sorted(MODELS)}; got {model!r}.")
    protocol = Protocol() if protocol is None else protocol
    channel = LabelChannel() if label_channel is None else label_channel
    libraries = (*_CORE_LIBRARIES, *([_MODEL_LIBRARY[model]] if model in _MODEL_LIBRARY else []))
    return {
        "schema": _SCHEMA,
        "protocol": protocol.fingerprint,
        "label_channel": channel.to_dict(),
        "data": _data_digest(dataset),
        "model": {
            "name": model,
            "seed": int(seed),
            "parameters": json.loads(json.dumps(dict(MODELS[model].defaults), default=list)),
        },
        "libraries": {
            "python": ".".join(platform.python_version_tuple()[:2]),
            **{name: _version(name) for name in libraries},
        },
    }


def source_fingerprint(source: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of an :func:`audit_source` description."""
    return hashlib.sha256(json.dumps(source, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def shipped_folder(dataset_name: str, model: str, seed: int, *, root: str | Path | None = None) -> Path:
    """Folder of the shipped audit of one dataset, model and seed (may not exist)."""
    return Path(root or _root()) / f"{dataset_name}__{model}__seed{int(seed)}"


def write_source(folder: str | Path, source: dict[str, Any]) -> Path:
    """Write ``source.json`` (the description and its fingerprint) into a saved-audit folder."""
    from core.atomic import atomic_write_text

    path = Path(folder) / SOURCE_FILE
    atomic_write_text(
        path, json.dumps({"fingerprint": source_fingerprint(source), "source": source}, indent=1, sort_keys=True) + "\n"
    )
    return path


class RefitModel(LazyModel):
    """``predict_proba`` of a shipped audit's model, refitted on the first call.

    The audit's own split, the tool's preprocessing fitted on its training rows and
    ``make_model(model, seed=seed)`` give the model ``run_audit`` fitted; its certificate
    fingerprint must equal the shipped one, else every call raises ``ValueError``.

    Parameters
    ----------
    result : AuditResult
        The shipped audit (its dataset, split, groups, baseline, protocol and fingerprint).
    """

    def __init__(self, result: Any) -> None:
        super().__init__()
        self._result = result
        self.description = f"refitting the {result.model_name} model on the audit's training rows"

    def _make(self) -> Any:
        import numpy as np
        from threadpoolctl import threadpool_limits

        from core.cfc.certification import certify
        from core.tabular.models import make_model
        from core.tabular.preprocessing import fit_preprocessor

        r = self._result
        split, ds = r.split, r.dataset
        params = {"groups": r.groups, "baseline": r.baseline} if r.model_name == "fr_resmlp" else {}
        # One thread: the dashboard serves other sessions meanwhile, and OpenMP threads that
        # compete for a busy CPU make a 2 s fit last a minute. Threads change float sums only.
        with threadpool_limits(limits=1):
            pre = fit_preprocessor(split.train, ds.numeric, ds.categorical)
            estimator = make_model(r.model_name, seed=r.seed, **params).fit(pre.transform(split.train), split.y_train)
            probe = certify(estimator.predict_proba, r.baseline[None, :], r.groups, r.baseline, r.protocol)
        expected = r.certificates.probe_proba
        # The rule of core.cfc.verify: the same fingerprint, or probe probabilities
        # within its default tolerances (another CPU's kernels may round the 6-decimal hash apart).
        if probe.fingerprint != r.fingerprint and not (
            expected is not None
            and expected.shape == probe.probe_proba.shape
            and np.isclose(probe.probe_proba, expected, rtol=1e-5, atol=1e-6).all()
        ):
            raise ValueError(
                f"the refitted {r.model_name} gives the certificate fingerprint "
                f"{probe.fingerprint[:16]}…, not the shipped {r.fingerprint[:16]}…; regenerate the "
                "shipped audit (python scripts/build_default_audit.py)."
            )
        return estimator


def shipped_audit(
    dataset: Any, *, model: str, seed: int, protocol: Protocol | None = None, root: str | Path | None = None
):
    """The shipped audit of this dataset, model, seed and protocol, or None.

    None when nothing is shipped for them, or when the shipped ``source.json`` does not match
    :func:`audit_source` (other data, protocol, model parameters or library versions), or when
    the folder is damaged. Its model is a :class:`RefitModel` (fitted on the first live
    panel), so opening a shipped audit fits nothing and imports no model library.

    Returns
    -------
    AuditResult or None
    """
    import dataclasses

    from core.tabular.audit_folder import open_audit_folder, saved_result

    folder = shipped_folder(dataset.name, model, seed, root=root)
    try:
        if not _matches(folder, dataset, model=model, seed=seed, protocol=protocol):
            return None
        result = saved_result(open_audit_folder(folder, load_model=False), dataset=dataset)
    except (OSError, ValueError):
        # A damaged shipped folder is not an error for the user: the audit is computed instead.
        return None
    return dataclasses.replace(result, model=RefitModel(result), model_unavailable=None)


def shipped_glance(
    dataset: Any, *, model: str, seed: int, protocol: Protocol | None = None, root: str | Path | None = None
):
    """The glance (:mod:`core.tabular.glance`) of the shipped audit :func:`shipped_audit` returns.

    Read from the folder's ``view/glance.json`` alone, under the same source check: the
    dashboard's first screen needs nothing else of the audit. None where :func:`shipped_audit`
    returns None for a missing or changed source, and when the folder holds no glance of its
    certificate fingerprint.

    Returns
    -------
    AuditGlance or None
    """
    from core.tabular.audit_view import VIEW_DIR
    from core.tabular.glance import read_glance

    folder = shipped_folder(dataset.name, model, seed, root=root)
    try:
        if not _matches(folder, dataset, model=model, seed=seed, protocol=protocol):
            return None
        stored = json.loads((folder / "protocol.json").read_text(encoding="utf-8"))
        return read_glance(folder / VIEW_DIR, str(stored["certificate_fingerprint"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # damaged: as shipped_audit, the audit is computed instead


def read_source(folder: str | Path) -> dict[str, Any]:
    """The ``source.json`` of a shipped audit folder (written by :func:`write_source`).

    Returns
    -------
    dict
        ``{"fingerprint": ..., "source": audit_source(...)}``.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool (``source.schema``, :data:`core.formats.SHIPPED_AUDIT`).
    ValueError
        Not valid JSON, or not a shipped audit's source.
    OSError
        The file cannot be read.
    """
    path = Path(folder) / SOURCE_FILE
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}).") from exc
    source = stored.get("source") if isinstance(stored, dict) else None
    SHIPPED_AUDIT.check(source.get("schema") if isinstance(source, dict) else None, where=str(folder))
    return stored


def _matches(folder: Path, dataset: Any, *, model: str, seed: int, protocol: Protocol | None) -> bool:
    """Whether ``folder``'s ``source.json`` is the source of this audit in this environment.

    A source of a newer or another format raises (:func:`read_source`); the callers then compute
    the audit instead.
    """
    if not (folder / SOURCE_FILE).is_file():
        return False
    stored = read_source(folder)
    expected = source_fingerprint(audit_source(dataset, model=model, seed=seed, protocol=protocol))
    return stored.get("fingerprint") == expected
