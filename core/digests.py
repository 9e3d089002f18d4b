"""Content digests and signed Parquet files: whether a shipped precomputation still stands for a fresh one.

A precomputed result (the demo pool's coverage grids, its screening scores) is stored by
:func:`write_signed_parquet` with its fingerprint in the file's schema metadata, and used only
when :func:`read_signature` gives back the fingerprint computed here and now: the inputs'
content (:func:`frame_sha256`), the source of the modules that compute the numbers
(:func:`code_sha256`) and the library versions. Both digests are plain SHA-256 hex strings.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["code_sha256", "file_sha256", "frame_sha256", "read_signature", "write_signed_parquet"]


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


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks (64 hex characters).

    For inputs read from files that a loader turns into frames: their bytes, with the loader's
    code (:func:`code_sha256`) and library versions, fix the frames without reading them
    (hashing the shipped demo pool's files takes a tenth of loading them and digesting the frames).
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def code_sha256(modules: Iterable[str]) -> str:
    """SHA-256 of the names and the code of ``modules``, in the order given.

    The code is each file's syntax tree without docstrings, so what changes the digest is what
    can change a computed number: re-formatting, comments and docstrings leave it as it is
    (a shipped precomputation survives ``ruff format``), any edit of a statement or an
    expression changes it.

    Parameters
    ----------
    modules : iterable of str
        Dotted module names; each is imported to find its file.

    Returns
    -------
    str
        64 hex characters.

    >>> code_sha256(["core.digests"]) == code_sha256(["core.digests"]), len(code_sha256([]))
    (True, 64)
    """
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode())
        path = Path(importlib.import_module(name).__file__)
        stat = path.stat()
        digest.update(_file_code(str(path), stat.st_mtime_ns, stat.st_size).encode())
    return digest.hexdigest()


@functools.lru_cache(maxsize=128)
def _file_code(path: str, mtime_ns: int, size: int) -> str:
    """:func:`_code_dump` of a file, kept per version of the file (path, modification time, size):
    a shipped precomputation is checked on every page visit that uses it, and parsing its
    modules took 0.2 s each time."""
    return _code_dump(Path(path).read_bytes())


def _code_dump(source: bytes) -> str:
    """The syntax tree of ``source`` as text, docstrings removed, positions left out."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def write_signed_parquet(
    frame: pd.DataFrame, path: str | Path, *, key: bytes, signature: Any, row_group_size: int | None = None
) -> Path:
    """Write ``frame`` as zstd Parquet (never pickle) with ``signature`` as JSON under ``key``.

    Parameters
    ----------
    frame : DataFrame
        Stored without its index.
    path : str or Path
        Written atomically (:func:`core.atomic.atomic_write_bytes`).
    key : bytes
        The schema-metadata key of the signature.
    signature : JSON-serialisable
        What :func:`read_signature` gives back, e.g. one fingerprint or a list of them.
    row_group_size : int, optional
        Rows per row group (by default pyarrow's, one group for up to a million rows). A read
        with ``filters`` skips the row groups whose statistics exclude the filter.

    Returns
    -------
    Path
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.atomic import atomic_write_bytes

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), key: json.dumps(signature).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", row_group_size=row_group_size)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def read_signature(path: str | Path, *, key: bytes) -> Any:
    """The signature :func:`write_signed_parquet` stored under ``key``, read from the schema only.

    Returns
    -------
    object or None
        None for a missing, unreadable or unsigned file.
    """
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        return None
    try:
        return json.loads(pq.read_schema(path).metadata[key])
    except (OSError, KeyError, TypeError, ValueError):
        return None
