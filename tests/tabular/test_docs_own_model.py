"""docs/own_model.md runs: every code block, in order, in a fresh folder.

``python`` blocks share one namespace (as in a notebook); ``bash`` blocks run with
``reliability-audit`` spelled ``python -m core`` (the console command is that module). A block
whose next lines are ``# ...`` comments after a ``print`` states its output, which is checked.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "own_model.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def _stated_output(code: str) -> list[str]:
    """The ``# value`` lines right after each ``print(...)`` line."""
    lines, out = code.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("print("):
            out += [lines[j][2:] for j in range(i + 1, len(lines)) if lines[j].startswith("# ")][:1]
    return out


def test_the_page_shows_each_export():
    text = DOC.read_text(encoding="utf-8")
    kinds = [k for k, _ in blocks()]
    assert set(kinds) == {"python", "bash"}
    for needle in ("sio.dump(", "get_untrusted_types", "trusted=[", '"zipmap": False', "np.float32", "dynamo=False"):
        assert needle in text, needle
    for page in ("audit.md", "dashboard.md"):
        assert "own_model.md" in (ROOT / "docs" / page).read_text(encoding="utf-8"), f"{page} links the page"


@pytest.mark.slow
def test_every_code_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for kind, code in blocks():
        if kind == "python":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
            assert printed.getvalue().splitlines() == _stated_output(code), code
        else:
            command = code.replace("\\\n", " ").replace("reliability-audit", f"{sys.executable} -m core")
            done = subprocess.run(["bash", "-ec", command], env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
    # What the blocks made is what the page says.
    table = pd.read_csv(tmp_path / "penguins_audit" / "certificates.csv")
    assert set(table["pred"]) <= {"Adelie", "Chinstrap", "Gentoo"}
    assert {"flip_budget", "flipped"} <= set(table.columns)
    mroz = pd.read_csv(tmp_path / "mroz_audit" / "certificates.csv")
    assert set(mroz["pred"]) <= {"no", "yes"}
    from core.onnx_session import cpu_session

    session = cpu_session((tmp_path / "images.onnx").read_bytes(), where="images.onnx")
    (image,) = session.get_inputs()
    assert image.shape[1:] == [3, 32, 32] and image.type == "tensor(float)"
    import numpy as np

    (logits,) = session.run(None, {image.name: np.zeros((2, 3, 32, 32), np.float32)})
    assert logits.shape == (2, 10)
    assert type(namespace["figure"]).__name__ == "Figure"
