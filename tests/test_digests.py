"""core.digests.code_sha256: the digest of modules' code, kept per version of each file."""

from __future__ import annotations

import hashlib
import importlib
import os
import sys

from core.digests import code_sha256, file_sha256


def test_an_edited_module_changes_the_digest_a_docstring_or_comment_does_not(tmp_path, monkeypatch):
    module = tmp_path / "digest_probe_module.py"
    module.write_text('"""Docstring."""\n\nX = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    first = code_sha256(["digest_probe_module"])
    assert code_sha256(["digest_probe_module"]) == first  # read from the per-file cache

    stat = module.stat()
    module.write_text('"""Another docstring."""\n\n# a comment\nX = 1\n')
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert code_sha256(["digest_probe_module"]) == first, "docstrings and comments leave the code as it is"

    stat = module.stat()
    module.write_text('"""Another docstring."""\n\n# a comment\nX = 2\n')
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert code_sha256(["digest_probe_module"]) != first, "an edited statement retires the digest"
    sys.modules.pop("digest_probe_module", None)


def test_file_sha256_is_the_digest_of_the_bytes_read_in_blocks(tmp_path):
    """Across the 1 MiB block boundary, and for an empty file; one changed byte changes it."""
    for size in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 7):
        data = os.urandom(size)
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        assert file_sha256(path) == hashlib.sha256(data).hexdigest(), size
    changed = bytearray(data)
    changed[-1] ^= 1
    path.write_bytes(bytes(changed))
    assert file_sha256(path) != hashlib.sha256(data).hexdigest()
