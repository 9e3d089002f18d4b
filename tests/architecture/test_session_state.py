"""Typed session state: only ``ui/state.py`` names a ``st.session_state`` key.

Pages, ``ui`` modules and ``app.py`` read and write the session through the state classes of
:mod:`ui.state` (``explorer_state().sort``); a widget bound to a session value takes its key from
there (``key=ExplorerState.sort.key``). The test parses every such file and fails naming
``file:line`` of ``st.session_state["..."]``, ``.get("...")`` / ``.pop("...")`` /
``.setdefault("...")``, ``"..." in st.session_state``, ``st.session_state.name``, the same through
a module-level string constant (``_RUN = "..."``), and a widget ``key="..."`` literal that is the
key of a declared slot.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE_MODULES = {"ui/state.py"}
_METHODS = {"get", "pop", "setdefault"}


def _files(root: Path) -> list[Path]:
    files = [*root.glob("pages/*.py"), *root.glob("ui/*.py"), root / "app.py"]
    return sorted(f for f in files if f.exists() and f.relative_to(root).as_posix() not in STATE_MODULES)


def _is_session_state(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "session_state") or (
        isinstance(node, ast.Name) and node.id == "session_state"
    )


def _string_constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return out


def _literal(node: ast.AST | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return None


def string_keys(root: Path = ROOT, declared: set[str] | None = None) -> list[str]:
    """``file:line: key`` of every session key named outside the state module(s)."""
    found: list[tuple[str, int, str]] = []
    for path in _files(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        constants = _string_constants(tree)
        where = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Subscript) and _is_session_state(node.value):
                key = _literal(node.slice, constants)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _METHODS
                and _is_session_state(node.func.value)
                and node.args
            ):
                key = _literal(node.args[0], constants)
            elif isinstance(node, ast.Compare) and any(_is_session_state(c) for c in node.comparators):
                key = _literal(node.left, constants)
            elif (
                isinstance(node, ast.Attribute)
                and _is_session_state(node.value)
                and node.attr not in _METHODS | {"keys", "items", "values", "clear", "update", "to_dict"}
            ):
                key = node.attr
            elif isinstance(node, ast.Call) and declared:
                for kw in node.keywords:
                    literal = _literal(kw.value, constants) if kw.arg == "key" else None
                    if literal in declared:
                        found.append((where, kw.value.lineno, f"widget key={literal!r} (use the slot's .key)"))
            if key is not None:
                found.append((where, node.lineno, f"st.session_state[{key!r}]"))
    return [f"{where}:{line}: {what}" for where, line, what in sorted(found)]


def _declared() -> set[str]:
    from ui.state import STATE_CLASSES

    return {slot.key for cls in STATE_CLASSES for slot in cls.slots()}


def test_no_session_key_outside_the_state_module():
    found = string_keys(declared=_declared())
    assert not found, "session keys named outside ui/state.py (use its state classes):\n" + "\n".join(found)


def test_every_slot_key_is_declared_once():
    from ui.state import STATE_CLASSES

    keys = [slot.key for cls in STATE_CLASSES for slot in cls.slots()]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


def test_planted_string_keys_are_caught(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "state.py").write_text('import streamlit as st\nst.session_state["allowed"] = 1\n')
    (tmp_path / "app.py").write_text("")
    (tmp_path / "pages" / "p.py").write_text(
        textwrap.dedent(
            """
            import streamlit as st
            from streamlit import session_state
            _RUN = "probe_run"
            st.session_state["explorer_sort"] = "fds"
            x = st.session_state.get(_RUN)
            if "seen" in st.session_state:
                st.session_state.pop("seen", None)
            y = session_state.whatif
            st.selectbox("Sort", ["fds"], key="explorer_sort")
            st.dataframe(x, key="layout_only")
            st.session_state.update({})
            """
        )
    )
    assert string_keys(tmp_path, declared={"explorer_sort"}) == [
        "pages/p.py:5: st.session_state['explorer_sort']",
        "pages/p.py:6: st.session_state['probe_run']",
        "pages/p.py:7: st.session_state['seen']",
        "pages/p.py:8: st.session_state['seen']",
        "pages/p.py:9: st.session_state['whatif']",
        "pages/p.py:10: widget key='explorer_sort' (use the slot's .key)",
    ]
