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
    from core.viz.display import VegaLiteChart

    assert isinstance(namespace["figure"], VegaLiteChart)


def test_the_categorical_onnx_recipe_exports_audits_and_agrees_with_the_pipeline(tmp_path, monkeypatch):
    """The page's ONNX recipe for text columns with imputers, run as written (after the block that
    makes the tables): the export loads through the tool's loader, audits from the command line,
    and gives the pipeline's probabilities to 1e-4 (float32), on rows with an empty cell too."""
    import numpy as np

    from core import audit_model
    from core.tabular.model_files import load_model_file

    monkeypatch.chdir(tmp_path)
    code = blocks()
    recipe = next(i for i, (kind, text) in enumerate(code) if kind == "python" and "penguins.onnx" in text)
    command = code[recipe + 1][1]
    assert code[recipe + 1][0] == "bash" and "penguins.onnx" in command
    namespace: dict = {"__name__": "__docs__"}
    for _, text in (code[0], code[recipe]):
        exec(compile(text, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    train, test, mixed, marked = (namespace[k] for k in ("onnx_train", "onnx_test", "mixed", "marked"))
    assert test["sex"].isna().any(), "the test table has empty cells in a text column"

    model = load_model_file(tmp_path / "penguins.onnx")
    assert list(model.classes_) == ["Adelie", "Chinstrap", "Gentoo"]
    features = test.drop(columns="species")
    expected = mixed.predict_proba(marked(features[mixed.feature_names_in_]))
    np.testing.assert_allclose(model.predict_proba(features), expected, atol=1e-4, rtol=0)

    result = audit_model(model, train, test, target="species")
    np.testing.assert_allclose(result.proba_test, expected, atol=1e-4, rtol=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = command.replace("\\\n", " ").replace("reliability-audit", f"{sys.executable} -m core")
    done = subprocess.run(["bash", "-ec", run], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "penguins_onnx_audit" / "certificates.csv")
    assert len(table) == len(test) and set(table["pred"]) <= {"Adelie", "Chinstrap", "Gentoo"}
