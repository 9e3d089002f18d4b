"""The certificate-set bundle: a strict-JSON document that can be stored and re-checked.

A bundle holds the protocol, the fingerprint, the groups, the baseline, the per-sample table
and every trajectory array of a :class:`~core.cfc.certificate.CertificateSet`. It is plain JSON
(``allow_nan=False``): non-finite numbers are written as the strings ``"inf"``, ``"-inf"`` and
``"nan"``; arrays are ``{"dtype", "shape", "data"}`` with ``data`` flattened in C order; floats
are written in Python's shortest round-trip repr, so loading gives back bit-identical values.

This module knows only the format; building and checking certificates lives in
:mod:`core.cfc.certificate` (``CertificateSet.to_bundle`` / ``from_bundle`` and ``verify``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from core.atomic import atomic_write_text

__all__ = ["SCHEMA", "decode_array", "decode_floats", "encode_array", "encode_floats", "read_bundle", "write_bundle"]

SCHEMA = "cfc-certificate-set/1"
_NONFINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
_DTYPES = ("float64", "int64", "bool")


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
    """Read a bundle written by :func:`write_bundle` and check its schema tag."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}).") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: not a certificate bundle (schema {found!r}, expected {SCHEMA!r}).")
    return data
