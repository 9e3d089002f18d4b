"""Fingerprint of the data a review's sample ids refer to, and the audit key of an audit.

A decision is stored under the audit's certificate fingerprint; the *data* fingerprint lets
the decisions made under other audits of the same table (another model, another protocol)
be shown next to it: sample ids are row ids of the dataset, so equal data fingerprints mean
equal ids name equal rows.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from core.reviews.store import AuditKey

__all__ = ["audit_key", "data_fingerprint"]


def data_fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's row ids, column names, dtypes and values.

    Parameters
    ----------
    frame : DataFrame of shape (n_rows, n_columns)
        The dataset, indexed by its stable row ids (the sample ids).

    Returns
    -------
    str
        64 hex digits; identical for identical tables on any machine (pandas' row hash uses
        a fixed key), different when a value, a row id, a column or its type changes.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}.")
    digest = hashlib.sha256()
    digest.update(repr([(str(c), str(t)) for c, t in frame.dtypes.items()]).encode("utf-8"))
    rows = pd.util.hash_pandas_object(frame, index=True, categorize=True).to_numpy(dtype=np.uint64)
    digest.update(np.ascontiguousarray(rows).astype("<u8").tobytes())
    return digest.hexdigest()


def audit_key(result) -> AuditKey:
    """The :class:`AuditKey` of a tabular audit (:class:`core.tabular.audit.AuditResult`).

    An audit without its dataset (none attached) gets an empty data fingerprint: its
    decisions are then shown under that audit only.
    """
    frame = getattr(getattr(result, "dataset", None), "frame", None)
    data = data_fingerprint(frame) if isinstance(frame, pd.DataFrame) else ""
    return AuditKey(
        result.fingerprint,
        data_fingerprint=data,
        model=str(result.model_name),
        protocol_fingerprint=result.protocol.fingerprint,
    )
