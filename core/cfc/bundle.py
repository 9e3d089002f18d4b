"""The certificate-set bundle: a strict-JSON document that can be stored and re-checked.

A bundle holds the protocol, the fingerprint, the groups, the baseline, the per-sample table
and every trajectory array of a :class:`~core.cfc.certificate_set.CertificateSet`, that is
the whole certificate tuple of SPEC A.3 (trajectory, ``k*``, collapse curve, RCMA, every
``λ*_P``, the one-step drops, FDS and the fingerprint). It is plain JSON
(``allow_nan=False``): non-finite numbers are written as the strings ``"inf"``, ``"-inf"`` and
``"nan"``; arrays are ``{"dtype", "shape", "data"}`` with ``data`` flattened in C order; floats
are written in Python's shortest round-trip repr, so loading gives back bit-identical values.

This module is the format both ways: :func:`encode_certificate_set` lays a set out as a bundle
and :func:`decode_certificate_set` checks a bundle and returns the set's fields, from which
``CertificateSet.from_bundle`` builds the set (the set's class is not imported here, so that
``CertificateSet.to_bundle`` can call this module). :func:`core.cfc.verify` re-checks a bundle
against a model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.atomic import atomic_write_text
from core.cfc.protocol import Protocol
from core.cfc.search import FlipSearchResult
from core.formats import CERTIFICATE_SET

__all__ = [
    "ARRAY_FIELDS",
    "SCHEMA",
    "decode_array",
    "decode_certificate_set",
    "decode_floats",
    "encode_array",
    "encode_certificate_set",
    "encode_floats",
    "read_bundle",
    "write_bundle",
]

SCHEMA = CERTIFICATE_SET.tag  # "cfc-certificate-set/1" (core.formats.CERTIFICATE_SET)
_NONFINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
_DTYPES = ("float64", "int64", "bool")
#: The per-sample arrays of a certificate set, stored under ``"arrays"``.
ARRAY_FIELDS = ("path_idx", "traj_proba", "traj_pred", "traj_margin", "collapse", "drops")
_REQUIRED = (
    "fingerprint",
    "protocol",
    "groups",
    "baseline",
    "depth",
    "path_rule",
    "order",
    "n_samples",
    "index",
    "table",
    "arrays",
    "operators",
    "search",
)


def encode_floats(values: np.ndarray) -> list[Any]:
    """Flat list of a float array with non-finite entries as strings."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    out: list[Any] = flat.tolist()
    for i in np.flatnonzero(~np.isfinite(flat)).tolist():
        v = flat[i]
        out[i] = "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return out


def decode_floats(values: list[Any], *, where: str) -> np.ndarray:
    """Inverse of :func:`encode_floats`: a flat list -> float64 array of shape ``(len(values),)``."""
    # Most lists hold numbers only: numpy converts those in C (a saved audit's tables are
    # ~10^5 values, 0.09 s per Overview start in the per-element loop below). Strings, nulls
    # and anything else numpy would coerce leniently take the strict loop.
    try:
        fast = np.asarray(values)
    except (TypeError, ValueError, OverflowError):  # ragged nesting: the loop below names the field
        fast = None
    if fast is not None and fast.ndim == 1 and fast.dtype.kind in "fi":
        return fast.astype(np.float64, copy=False)
    try:
        out = np.array([_NONFINITE[v] if isinstance(v, str) else _not_null(v) for v in values], dtype=np.float64)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"Bundle field {where!r} must hold numbers or 'inf'/'-inf'/'nan'; {exc!r}.") from exc
    if out.ndim != 1:
        raise ValueError(
            f"Bundle field {where!r} must be a flat list of numbers; got nested lists of shape {out.shape}."
        )
    return out


def _not_null(value: Any) -> Any:
    # numpy reads None as NaN; a bundle writes NaN as "nan", so a null is a damaged file.
    if value is None:
        raise TypeError("null is not a number")
    return value


def encode_array(a: np.ndarray) -> dict[str, Any]:
    """``{"dtype", "shape", "data"}`` of a float64, int64 or bool array."""
    a = np.asarray(a)
    if a.dtype == bool:
        dtype, data = "bool", a.ravel().tolist()
    elif np.issubdtype(a.dtype, np.integer):
        dtype, data = "int64", a.astype(np.int64).ravel().tolist()
    else:
        dtype, data = "float64", encode_floats(a)
    return {"dtype": dtype, "shape": list(a.shape), "data": data}


def decode_array(obj: Mapping[str, Any], *, where: str) -> np.ndarray:
    """Inverse of :func:`encode_array`; ``where`` names the field in error messages."""
    if not isinstance(obj, Mapping) or set(obj) != {"dtype", "shape", "data"}:
        raise ValueError(f"Bundle field {where!r} must be an object with keys dtype, shape, data.")
    dtype, shape, data = obj["dtype"], obj["shape"], obj["data"]
    if dtype not in _DTYPES:
        raise ValueError(f"Bundle field {where!r} has dtype {dtype!r}; expected one of {_DTYPES}.")
    good_shape = isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)
    if not good_shape or not isinstance(data, list):
        raise ValueError(f"Bundle field {where!r} has a malformed shape or data.")
    if len(data) != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"Bundle field {where!r} has {len(data)} values for shape {tuple(shape)}.")
    if dtype == "float64":
        arr = decode_floats(data, where=where)
    else:
        arr = np.array(data, dtype=np.int64 if dtype == "int64" else bool)
    return arr.reshape(shape)


def write_bundle(bundle: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``bundle`` as strict JSON to ``path`` (parent folders are created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(bundle, allow_nan=False, separators=(",", ":"))
    atomic_write_text(path, text)  # a failed write keeps the previous file byte-identical
    return path


def read_bundle(path: str | Path) -> dict[str, Any]:
    """Read a bundle written by :func:`write_bundle` and check its schema tag.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool (the message names the file).
    ValueError
        Not JSON, or not a certificate bundle.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}).") from exc
    _check_schema(data, str(path), prefix=f"{path}: not")
    return data


def _check_schema(data: Any, where: str, *, prefix: str) -> None:
    found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
    CERTIFICATE_SET.check(
        found if isinstance(data, Mapping) else None,
        where=where,
        mismatch=f"{prefix} a certificate bundle (schema {found!r}, expected {SCHEMA!r}).",
    )


# --------------------------------------------------------------------------------------------
# A certificate set, both ways
# --------------------------------------------------------------------------------------------
def encode_certificate_set(cs: Any) -> dict[str, Any]:
    """Strict-JSON-ready dict of every field of a ``CertificateSet``.

    Raises
    ------
    ValueError
        When the table index holds labels JSON cannot write (only str / int labels can).
    """
    index = cs.table.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        index_out = None
    else:
        index_out = index.tolist()
        try:
            json.dumps(index_out, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                "The table index cannot be written to JSON (only str / int labels can); "
                "reset it or certify with a plain array."
            ) from exc
    columns, dtypes, data = list(cs.table.columns), {}, {}
    for col in columns:
        values = cs.table[col]
        if col == "path":
            dtypes[col], data[col] = "list[str]", [list(v) for v in values]
        elif col == "path_margins":
            dtypes[col], data[col] = "list[float64]", cs.traj_margin.tolist()
        elif values.dtype == bool:
            dtypes[col], data[col] = "bool", values.tolist()
        elif np.issubdtype(values.dtype, np.integer):
            dtypes[col], data[col] = "int64", values.astype(np.int64).tolist()
        else:
            dtypes[col], data[col] = "float64", encode_floats(values.to_numpy(dtype=np.float64))
    s = cs.search
    return {
        "schema": SCHEMA,
        "fingerprint": cs.fingerprint,
        "protocol": cs.protocol.to_dict(),
        "protocol_fingerprint": cs.protocol.fingerprint,
        "groups": [{"name": n, "columns": list(c)} for n, c in zip(cs.group_names, cs.group_columns)],
        "baseline": encode_array(cs.baseline),
        "depth": cs.depth,
        "path_rule": cs.path_rule,
        "order": None if cs.order is None else list(cs.order),
        "n_samples": len(cs),
        "index": index_out,
        "table": {"columns": columns, "dtypes": dtypes, "data": data},
        "arrays": {name: encode_array(getattr(cs, name)) for name in ARRAY_FIELDS},
        "operators": {
            op: {
                "severities": encode_array(tr.severities),
                "unit_names": list(tr.unit_names),
                "margins": encode_array(tr.margins),
                "preds": encode_array(tr.preds),
                "flipped": encode_array(tr.flipped),
            }
            for op, tr in cs.operators.items()
        },
        "probe_proba": None if cs.probe_proba is None else encode_array(cs.probe_proba),
        "search": None
        if s is None
        else {
            "method": s.method,
            "depth": s.depth,
            "exact_levels": s.exact_levels,
            "exact_cap": s.exact_cap,
            "beam_width": s.beam_width,
            "k_exact": encode_array(s.k_exact),
            "exact_subset": encode_array(s.exact_subset),
            "k_beam": encode_array(s.k_beam),
            "beam_subset": encode_array(s.beam_subset),
        },
    }


def decode_certificate_set(data: Mapping[str, Any], *, where: str = "certificate bundle") -> dict[str, Any]:
    """The fields of the ``CertificateSet`` a bundle holds, exactly as stored.

    Returns the keyword arguments of ``CertificateSet`` except that ``operators`` maps every
    operator name to the keyword arguments of its ``OperatorTrace``. ``where`` names the
    bundle's file in the message of a newer bundle.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool.
    ValueError
        Naming the field of a bundle that is not one, lacks fields or holds malformed values.
    """
    _check_schema(data, where, prefix="Not")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ValueError(f"Certificate bundle lacks field(s) {missing}.")
    dec = decode_array
    protocol = Protocol.from_dict(data["protocol"], where=where)
    try:
        names = tuple(str(g["name"]) for g in data["groups"])
        columns = tuple(tuple(int(c) for c in g["columns"]) for g in data["groups"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Bundle field 'groups' must be a list of {{name, columns}} objects; {exc!r}.") from exc
    n = int(data["n_samples"])
    arrays = {name: dec(data["arrays"][name], where=f"arrays.{name}") for name in ARRAY_FIELDS}
    for name, arr in arrays.items():
        if arr.shape[0] != n:
            raise ValueError(f"Bundle field 'arrays.{name}' has {arr.shape[0]} rows; n_samples is {n}.")
    table = _decode_table(data, n)
    operators = {
        op: {
            "name": op,
            "severities": dec(o["severities"], where=f"operators.{op}.severities"),
            "unit_names": tuple(o["unit_names"]),
            "margins": dec(o["margins"], where=f"operators.{op}.margins"),
            "preds": dec(o["preds"], where=f"operators.{op}.preds"),
            "flipped": dec(o["flipped"], where=f"operators.{op}.flipped"),
        }
        for op, o in data["operators"].items()
    }
    s = data["search"]
    search = (
        None
        if s is None
        else FlipSearchResult(
            method=s["method"],
            depth=int(s["depth"]),
            group_names=names,
            k_exact=dec(s["k_exact"], where="search.k_exact"),
            exact_subset=dec(s["exact_subset"], where="search.exact_subset"),
            exact_levels=int(s["exact_levels"]),
            k_beam=dec(s["k_beam"], where="search.k_beam"),
            beam_subset=dec(s["beam_subset"], where="search.beam_subset"),
            exact_cap=int(s["exact_cap"]),
            beam_width=int(s["beam_width"]),
        )
    )
    probe = data.get("probe_proba")  # absent from bundles written before it was stored
    return {
        "table": table,
        "protocol": protocol,
        "group_names": names,
        "group_columns": columns,
        "baseline": dec(data["baseline"], where="baseline"),
        "fingerprint": str(data["fingerprint"]),
        "depth": int(data["depth"]),
        "path_rule": str(data["path_rule"]),
        "order": None if data["order"] is None else tuple(data["order"]),
        **arrays,
        "operators": operators,
        "search": search,
        "probe_proba": None if probe is None else dec(probe, where="probe_proba"),
    }


def _decode_table(data: Mapping[str, Any], n: int) -> pd.DataFrame:
    tab = data["table"]
    cols = {}
    for col in tab["columns"]:
        dtype, values = tab["dtypes"][col], tab["data"][col]
        if len(values) != n:
            raise ValueError(f"Bundle field 'table.{col}' has {len(values)} rows; n_samples is {n}.")
        if dtype == "list[str]":
            cols[col] = [list(v) for v in values]
        elif dtype == "list[float64]":
            cols[col] = [list(map(float, v)) for v in values]
        elif dtype == "int64":
            cols[col] = np.asarray(values, dtype=np.int64)
        elif dtype == "bool":
            if not all(isinstance(v, bool) for v in values):
                raise ValueError(f"Bundle field 'table.{col}' must hold only true / false.")
            cols[col] = np.asarray(values, dtype=bool)
        elif dtype == "float64":
            cols[col] = decode_floats(values, where=f"table.{col}")
        else:
            raise ValueError(f"Bundle field 'table.{col}' has an unknown dtype {dtype!r}.")
    index = pd.RangeIndex(n) if data["index"] is None else pd.Index(data["index"])
    order = list(tab["columns"])
    if "flipped" not in cols and "flip_budget" in cols:  # bundles written before the column existed
        cols["flipped"] = cols["flip_budget"] <= int(data["depth"])
        order.insert(order.index("flip_budget") + 1, "flipped")
    return pd.DataFrame(cols, index=index, columns=order)
