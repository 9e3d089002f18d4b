"""The view of a saved audit: every table the dashboard shows, readable without the model.

:func:`write_view` writes ``DIR/view/`` beside the audit's other files
(:func:`core.tabular.audit.write_audit`); :func:`core.tabular.audit_folder.saved_result` reads it
back. Only JSON, Parquet, gzip-ed JSON and an ``.npz`` of plain arrays (no object arrays, read
with ``allow_pickle=False``) are written, so nothing here ever needs unpickling.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.formats import AUDIT_VIEW
from core.tabular.glance import write_glance
from core.tabular.persist import normalised_zip
from core.tabular.spaces import feature_origins

__all__ = [
    "LABEL_ARRAYS",
    "VIEW_DIR",
    "VIEW_SCHEMA",
    "VIEW_TABLES",
    "jsonable",
    "parquet_safe",
    "read_frame",
    "write_view",
]

#: Sub-folder holding everything the dashboard shows, so that no page needs the model.
VIEW_DIR = "view"
#: Format tag of ``view/meta.json``, the saved audit folder's version (:data:`core.formats.AUDIT_VIEW`).
VIEW_SCHEMA = AUDIT_VIEW.tag
VIEW_TABLES = (
    "evaluation",
    "naturalistic_evaluation",
    "unavailable",
    "calibration_metrics",
    "calibration_reliability",
    "sensitivity",
    "search",
)


def jsonable(value: Any) -> Any:
    """Plain-JSON version of numbers / containers: NaN and inf become None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def read_frame(path: str | Path) -> pd.DataFrame:
    """A Parquet file of an audit folder as the frame ``pd.read_parquet`` returns, read faster.

    ``pd.read_parquet`` goes through ``pyarrow.dataset``, which costs about 50 ms on its first
    call in a process: a third of opening the shipped audit on a fresh server (the first screen
    reads nine such files). Reading the file with ``pyarrow.parquet`` and converting it with
    its stored pandas metadata gives the same frame (index, dtypes and values; tested on every
    file an audit folder holds).
    """
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pandas()


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing types (e.g. text with NaN floats) as text, so Parquet accepts them."""
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype == object:
            kinds = {type(v) for v in out[c].dropna()}
            if len(kinds) > 1:
                out[c] = out[c].astype("string")
    out.columns = [str(c) for c in out.columns]
    return out


def _labels_meta(labels: Any) -> dict | None:
    if labels is None:
        return None
    return {
        "settings": [list(s) for s in labels.settings],
        "tau_p": labels.tau_p,
        "tau_kappa": labels.tau_kappa,
        "n_forward": labels.n_forward,
    }


LABEL_ARRAYS = ("labels", "high_confidence", "confidence", "prediction", "flip_share", "max_collapse", "hits")


def write_view(result: Any, directory: str | Path, *, made_by: str = "") -> list[Path]:
    """Write ``directory/view/``: what :func:`core.tabular.audit_folder.saved_result` needs to rebuild ``result`` without its model.

    Files: ``meta.json`` (the format tag :data:`VIEW_SCHEMA`, who made the audit, dataset
    description, split, feature names and origins, label channel, nominal metrics, calibration
    fit, notes), ``glance.json`` (the Overview's first
    screen, :mod:`core.tabular.glance`), ``arrays.npz`` (transformed test rows,
    labels, probabilities, baseline, split positions; plain arrays, read with
    ``allow_pickle=False``), ``certificates.json.gz`` (the full certificate bundle of
    :meth:`~core.cfc.certificate_set.CertificateSet.to_bundle`, gzip without a time stamp, so the
    same audit gives the same bytes) and one Parquet file per table (evaluation, calibration,
    scores, ...). Each file goes through the atomic writer.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    directory : str or Path
        An existing folder (the audit folder being written).
    made_by : str, default=""
        Who made the audit (the signed-in user's e-mail address or name; "" when unknown),
        kept in ``meta.json`` and ``glance.json`` and read back as
        :attr:`core.tabular.audit_folder.SavedAudit.made_by` and
        :attr:`core.tabular.glance.AuditGlance.made_by`.

    Returns
    -------
    list of Path

    Raises
    ------
    ValueError
        ``made_by`` is not text.
    """
    import gzip
    import io

    import numpy as np

    from core.atomic import atomic_path, atomic_write_bytes, atomic_write_text

    if not isinstance(made_by, str):
        raise ValueError(f"`made_by` must be text (an e-mail address or a name); got {made_by!r}.")
    view = Path(directory) / VIEW_DIR
    view.mkdir(exist_ok=True)
    pre, ds, cal = result.preprocessor, result.dataset, result.calibration
    origins = [str(o) for o in feature_origins(pre)]
    names = list(getattr(pre, "feature_names", None) or [f"x{j}" for j in range(len(origins))])
    tables = {
        "evaluation": result.evaluation,
        "naturalistic_evaluation": result.naturalistic_evaluation,
        "unavailable": result.unavailable,
        "calibration_metrics": cal.metrics,
        "calibration_reliability": cal.reliability,
        "sensitivity": result.sensitivity,
        "search": result.search,
    }
    meta = {
        "schema": VIEW_SCHEMA,
        "made_by": made_by,
        "fingerprint": result.fingerprint,
        "model_name": result.model_name,
        "seed": result.seed,
        "space_kind": result.space_kind,
        "notes": list(result.notes),
        "timings": result.timings,
        "nominal": result.nominal,
        "label_channel": result.label_channel.to_dict(),
        "unavailable_groups": list(result.unavailable_groups),
        "dataset": {
            "name": ds.name,
            "target": ds.target,
            "features": list(ds.features),
            "numeric": list(ds.numeric),
            "categorical": list(ds.categorical),
            "classes": list(ds.classes),
            "positive_class": ds.positive_class,
            "blocks": ds.blocks,
            "markers": ds.markers,
            "description": ds.description,
            "source": ds.source,
            "notes": list(ds.notes),
            "real_values": ds.real_values,
            "n_rows": len(ds.frame),
        },
        "split": {"seed": result.split.seed, "val_size": result.split.val_size, "test_size": result.split.test_size},
        "preprocessor": {
            "raw_columns": list(getattr(pre, "raw_columns", ds.features)),
            "feature_names": names,
            "origins": origins,
        },
        "labels": _labels_meta(result.labels),
        "naturalistic": _labels_meta(result.naturalistic),
        "calibration": {
            "t0": cal.bats.t0,
            "eta": cal.bats.eta,
            "fds_min": cal.bats.fds_min,
            "fds_max": cal.bats.fds_max,
            "eta_grid": list(cal.bats.eta_grid),
            "validation_nll": list(cal.bats.validation_nll),
            "fragile_share": cal.fragile_share,
            "proba": list(cal.proba),
        },
        "tables": [name for name, frame in tables.items() if frame is not None],
    }
    arrays = {
        "X_test": result.X_test,
        "y_test": result.y_test,
        "proba_test": result.proba_test,
        "baseline": result.baseline,
        "train_index": result.split.train_index,
        "val_index": result.split.val_index,
        "test_index": result.split.test_index,
        "calibration_fragile": cal.fragile,
    }
    arrays |= {f"calibration_proba_{k}": v for k, v in cal.proba.items()}
    for prefix, labels in (("labels", result.labels), ("naturalistic", result.naturalistic)):
        if labels is not None:
            arrays |= {f"{prefix}_{k}": getattr(labels, k) for k in LABEL_ARRAYS}
    members = {}
    for name, value in arrays.items():
        member = io.BytesIO()
        np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
        members[f"{name}.npy"] = member.getvalue()
    written = [view / "meta.json", view / "arrays.npz", view / "certificates.json.gz"]
    atomic_write_text(written[0], json.dumps(jsonable(meta), indent=1, allow_nan=False) + "\n")
    written.append(write_glance(result, view, made_by=made_by))
    atomic_write_bytes(written[1], normalised_zip(members))  # an .npz with fixed time stamps: same bytes
    bundle = json.dumps(result.certificates.to_bundle(), allow_nan=False, separators=(",", ":")).encode()
    atomic_write_bytes(written[2], gzip.compress(bundle, mtime=0))
    for name, frame in {**tables, "scores": result.scores}.items():
        if frame is None:
            continue
        written.append(view / f"{name}.parquet")
        with atomic_path(written[-1]) as tmp:
            parquet_safe(frame).to_parquet(tmp, index=name == "scores")
    return written
