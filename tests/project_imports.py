"""The project modules a module imports, at module level or lazily, followed transitively.

The shipped precomputations sign the code of every project module their numbers depend on
(``_CODE`` of ``core.paired.coverage_grid``, ``core.imaging.demo_screening``,
``core.paired.policy_store``); their tests walk the imports with :func:`project_imports` so
that a module imported but left out of the digest fails a test instead of changing the
numbers unseen.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable
from pathlib import Path


def project_imports(root: str, *, ignored: Iterable[str] = ()) -> set[str]:
    """``root`` and every ``core`` module it imports, directly or through another, but ``ignored``.

    An ignored module is neither listed nor followed.
    """
    ignored = set(ignored)
    todo, seen = [root], set()
    while todo:
        name = todo.pop()
        if name in seen or name in ignored:
            continue
        seen.add(name)
        tree = ast.parse(Path(importlib.import_module(name).__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core"):
                todo.append(node.module)
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("core")]
    return seen
