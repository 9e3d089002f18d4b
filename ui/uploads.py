"""Content hashes of uploaded files, the cache keys of everything parsed from an upload.

Below :mod:`ui.data` and :mod:`ui.own_model`, which both key their caches by it.
"""
from __future__ import annotations

import hashlib

__all__ = ["upload_digest"]


def upload_digest(files: dict[str, tuple[str, bytes] | None]) -> str:
    """Content hash of an upload (roles, names and bytes)."""
    h = hashlib.sha256()
    for role in sorted(files):
        if files[role] is not None:
            name, data = files[role]
            h.update(f"{role}\0{name}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()
