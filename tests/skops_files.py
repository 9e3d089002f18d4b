"""Real ``.skops`` files that reach the system: pipelines whose ``FunctionTransformer`` holds
``os.system``, ``eval``, ``subprocess.call`` or ``shutil.rmtree``, and the same pipelines edited
the way an attacker would, so that loading them *calls* the function (skops'
``ConstructorFromReduceNode`` calls the named type with the saved arguments). Shared by the
never-trusted tests of ``core.tabular`` and of the dashboard's trust offer.
"""

from __future__ import annotations

import builtins
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import skops.io as sio
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from core.tabular.persist import normalised_zip, unzip_members

SYSTEM = f"{os.system.__module__}.system"  # posix.system (nt.system on Windows)


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------
def _pipeline(func) -> Pipeline:
    return Pipeline([("f", FunctionTransformer(func=func)), ("scale", StandardScaler())])


FUNCTIONS = {  # id: (function saved in the FunctionTransformer, the type name skops reports)
    "os.system": (os.system, SYSTEM),
    "builtins.eval": (builtins.eval, "builtins.eval"),
    "subprocess.call": (subprocess.call, "subprocess.call"),
    "shutil.rmtree": (shutil.rmtree, "shutil.rmtree"),
}


def _json_node(value) -> dict:
    if isinstance(value, list):
        return {
            "__class__": "list",
            "__module__": "builtins",
            "__loader__": "ListNode",
            "content": [_json_node(v) for v in value],
        }
    return {
        "__class__": type(value).__name__,
        "__module__": "builtins",
        "__loader__": "JsonNode",
        "content": json.dumps(value),
        "is_json": True,
    }


def _calling_file(module: str, name: str, *args) -> bytes:
    """A skops file of ``_pipeline(np.log1p)`` whose ``func`` is replaced by a node that calls
    ``module.name(*args)`` while the file loads (as an attacker edits ``schema.json``)."""
    members = unzip_members(sio.dumps(_pipeline(np.log1p)), "test")
    schema = json.loads(members["schema.json"])
    stack, replaced = [schema], 0
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, child in node.items():
                if isinstance(child, dict) and child.get("__loader__") == "FunctionNode":
                    node[key] = {
                        "__class__": name,
                        "__module__": module,
                        "__loader__": "ConstructorFromReduceNode",
                        "content": {
                            "__class__": "tuple",
                            "__module__": "builtins",
                            "__loader__": "TupleNode",
                            "content": [_json_node(a) for a in args],
                        },
                    }
                    replaced += 1
                else:
                    stack.append(child)
    assert replaced == 1
    members["schema.json"] = json.dumps(schema).encode()
    return normalised_zip(members)


def _harm(kind: str, tmp_path: Path) -> tuple[bytes, str, Callable[[], bool]]:
    """(file that does harm while loading, the type it names, did-the-harm-happen check)."""
    marker = tmp_path / "marker"
    if kind == "os.system":
        data = _calling_file(os.system.__module__, "system", f"touch {shlex.quote(str(marker))}")
    elif kind == "builtins.eval":
        data = _calling_file("builtins", "eval", f"open({str(marker)!r}, 'w').close()")
    elif kind == "subprocess.call":
        data = _calling_file("subprocess", "call", [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"])
    elif kind == "shutil.rmtree":
        victim = tmp_path / "victim"
        victim.mkdir()
        (victim / "keep.txt").write_text("precious")
        return _calling_file("shutil", "rmtree", str(victim)), "shutil.rmtree", lambda: not victim.exists()
    else:
        assert kind == "builtins.open"
        data = _calling_file("builtins", "open", str(marker), "w")
    return data, FUNCTIONS[kind][1] if kind in FUNCTIONS else kind, marker.exists


HARMS = [*FUNCTIONS, "builtins.open"]
