"""Streamlit's "magic" is off (``.streamlit/config.toml``), so no page may rely on it.

With ``runner.magicEnabled = false`` a bare expression on its own line in ``app.py`` or a page
(``df`` or ``"text"``) is evaluated and silently *not* shown. This test finds every statement
magic would have written, the same way Streamlit's ``magic.py`` picks them (an expression
statement that is not a call, a docstring, a ``yield`` or an ``await``), so a page that needs
it fails here instead of losing an element without a word.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def magic_statements(source: str) -> list[int]:
    """Line numbers of the statements Streamlit's magic would wrap in ``st.write``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        for block in ("body", "orelse", "finalbody"):  # the statement lists magic.py rewrites
            lines += _block_statements(node, block)
    return sorted(lines)


def _block_statements(node: ast.AST, block: str) -> list[int]:
    body = getattr(node, block, None)
    if not isinstance(body, list):
        return []
    lines = []
    for i, stmt in enumerate(body):
        if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)):
            continue
        docstring = (
            block == "body"
            and i == 0
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            and isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        )
        if not docstring:
            lines.append(stmt.lineno)
    return lines


def test_magic_is_off():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["magicEnabled"] is False


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_writes_by_magic(script):
    assert magic_statements(script.read_text(encoding="utf-8")) == [], (
        f"{script.name}: a bare expression would be shown by magic, which is off; write it with st.write/st.markdown"
    )


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ('"""doc"""\nx = 1\nx\n', [3]),
        ('def f():\n    """doc"""\n    "shown"\n', [3]),
        ("st.write(1)\nfor i in range(2):\n    i,\n", [3]),
        ('"""doc"""\nst.title("t")\n', []),
        ("if x:\n    pass\nelse:\n    df\n", [4]),
        ("try:\n    pass\nexcept ValueError:\n    err\nfinally:\n    df\n", [4, 6]),
        ('for i in x:\n    pass\nelse:\n    "done"\n', [4]),
    ],
)
def test_the_scan_finds_what_magic_would_write(source, lines):
    assert magic_statements(source) == lines
