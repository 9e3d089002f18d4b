"""Content digests that decide whether a shipped precomputation still stands for a fresh one.

A precomputed result (the demo pool's coverage grids, its screening scores) is used only when
its fingerprint equals the one computed here and now: the inputs' content
(:func:`frame_sha256`), the source of the modules that compute the numbers
(:func:`code_sha256`) and the library versions. Both digests are plain SHA-256 hex strings.
"""
from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

__all__ = ["code_sha256", "frame_sha256"]


def frame_sha256(frame: pd.DataFrame) -> str:
    """SHA-256 over pandas' 64-bit hash of every row of ``frame`` in order, and the columns' dtypes.

    The index is left out. Two frames with the same values, order and dtypes give the same
    digest; any changed value, row order or dtype changes it (up to a 64-bit row-hash collision).

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    str
        64 hex characters.

    >>> a = pd.DataFrame({"x": [1, 2]})
    >>> frame_sha256(a) == frame_sha256(a.copy()), frame_sha256(a) == frame_sha256(a.iloc[::-1])
    (True, False)
    """
    row_hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    digest = hashlib.sha256(row_hashes.tobytes())
    digest.update(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    return digest.hexdigest()


def code_sha256(modules: Iterable[str]) -> str:
    """SHA-256 of the names and source bytes of ``modules``, in the order given.

    Parameters
    ----------
    modules : iterable of str
        Dotted module names; each is imported to find its file.

    Returns
    -------
    str
        64 hex characters. Any edit of one of the files changes it (so does a checkout that
        rewrites line endings).
    """
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode())
        digest.update(Path(importlib.import_module(name).__file__).read_bytes())
    return digest.hexdigest()
