"""core.digests.code_sha256: the digest of modules' code, kept per version of each file."""

from __future__ import annotations

import importlib
import os
import sys

from core.digests import code_sha256


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
