"""The test tree mirrors ``core/`` (docs/DEVELOPING.md, "Tests"), checked on the files.

1. Every folder ``tests/<dir>`` is a package ``core/<dir>/`` or one of ``AREAS`` (what is not
   one package of ``core``), and every package of ``core/`` has its folder.
2. The tests of ``core`` drive no dashboard: no file of a package's folder, and no top-level
   ``tests/test_<module>*.py`` of a module ``core/<module>.py``, imports one of ``DASHBOARD``
   (``app``, ``pages``, ``ui``, ``streamlit`` with its AppTest, the AppTest checks, the browser
   tests, a dashboard server of the browser kit) or asks for a fixture in ``DASHBOARD_FIXTURES``.
3. Every test module of ``tests/app`` drives the dashboard: it imports one of ``DASHBOARD`` or
   asks for one of ``DASHBOARD_FIXTURES`` (``tests/app/conftest.py``). A unit test of a ``core``
   package put there fails this.
4. A top-level test module is named for a module of ``core/`` (``test_<module>.py`` or
   ``test_<module>_<idea>.py``) or is one of ``REPOSITORY``.
5. No two modules of ``tests/`` share a file name (``conftest.py`` aside): pytest imports test
   modules by file name (no ``__init__.py``, the default "prepend" import mode) and the helpers
   are imported by name from ``sys.path``, so a second ``test_x.py`` fails with "import file
   mismatch" and a second helper shadows the first.
6. Nothing imports ``conftest``: with several ``conftest.py`` on ``sys.path`` the import picks
   whichever comes first; shared helpers are modules with their own name (``app_checks``).

``python tests/architecture/test_tests_mirror_core.py [ROOT]`` prints the same verdict.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Folders of ``tests/`` that are not one package of ``core``, each with what it holds.
AREAS = {
    "app": "the dashboard (app.py, pages/, ui/) driven through AppTest or Chromium",
    "architecture": "rules checked on the source",
    "bench": "benchmarks, run by hand (not collected)",
    "reliability": "bad input and faults across every command (issue 13)",
}
#: Top-level test modules about the repository itself rather than one module of ``core``.
REPOSITORY = ("test_docs.py", "test_packaging.py", "test_repo.py")
#: Imports that drive the dashboard, as dotted prefixes of ``module.name``: its code, Streamlit
#: (AppTest), the AppTest checks, the browser tests' helpers and a dashboard server.
DASHBOARD = (
    "app",
    "pages",
    "ui",
    "streamlit",
    "app_checks",
    "test_browser",
    "browser_kit.dashboard_server",
    "browser_kit.start_server",
)
#: Fixtures of ``tests/app/conftest.py`` that give an AppTest, a dashboard server or its browser.
DASHBOARD_FIXTURES = ("app", "new_app", "server", "browser")


def imported_names(source: str) -> set[str]:
    """Every ``module`` and ``module.name`` the source imports, function-level imports included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def requested_fixtures(source: str) -> set[str]:
    """The argument names of every function of the source (tests and fixtures ask by name)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
    return found


def dashboard_uses(source: str) -> list[str]:
    """What in the source drives the dashboard: its dashboard imports and dashboard fixtures."""
    imports = sorted(n for n in imported_names(source) if any(n == d or n.startswith(f"{d}.") for d in DASHBOARD))
    fixtures = sorted(f"fixture {f!r}" for f in requested_fixtures(source) & set(DASHBOARD_FIXTURES))
    return imports + fixtures


def core_packages(root: Path) -> set[str]:
    return {p.parent.name for p in (root / "core").glob("*/__init__.py")}


def core_modules(root: Path) -> set[str]:
    return {p.stem for p in (root / "core").glob("*.py") if not p.stem.startswith("__")}


def _named_for_a_module(name: str, modules: set[str]) -> bool:
    stem = name.removeprefix("test_").removesuffix(".py")
    return any(stem == m or stem.startswith(f"{m}_") for m in modules)


def check(root: Path = ROOT) -> list[str]:
    """Every breach of the rules above, one line each naming the file or folder; empty if none."""
    tests = root / "tests"
    packages, modules = core_packages(root), core_modules(root)
    problems: list[str] = []
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    for name in sorted(folders - packages - set(AREAS)):
        problems.append(f"tests/{name}/: neither a package core/{name}/ nor an area of AREAS")
    for name in sorted(packages - folders):
        problems.append(f"core/{name}/ has no tests/{name}/")

    core_tests = [p for name in sorted(folders & packages) for p in sorted((tests / name).rglob("*.py"))]
    core_tests += [
        p for p in sorted(tests.glob("test_*.py")) if p.name not in REPOSITORY and _named_for_a_module(p.name, modules)
    ]
    for path in core_tests:
        uses = dashboard_uses(path.read_text(encoding="utf-8"))
        if uses:
            problems.append(f"{path.relative_to(root)}: a test of core drives the dashboard ({', '.join(uses)})")
    if (tests / "app").is_dir():
        for path in sorted((tests / "app").rglob("test_*.py")):
            if not dashboard_uses(path.read_text(encoding="utf-8")):
                problems.append(
                    f"{path.relative_to(root)}: drives no dashboard (imports none of DASHBOARD, asks for none of"
                    " DASHBOARD_FIXTURES); a unit test of core goes to the folder of its package"
                )
    for path in sorted(tests.glob("test_*.py")):
        if path.name not in REPOSITORY and not _named_for_a_module(path.name, modules):
            problems.append(
                f"{path.relative_to(root)}: a top-level test is named for a module core/<module>.py"
                " (test_<module>[_<idea>].py) or listed in REPOSITORY"
            )

    seen: dict[str, Path] = {}
    for path in sorted(tests.rglob("*.py")):
        if any(part.startswith((".", "_")) for part in path.relative_to(tests).parent.parts):
            continue
        if any(n == "conftest" or n.startswith("conftest.") for n in imported_names(path.read_text(encoding="utf-8"))):
            problems.append(f"{path.relative_to(root)}: imports conftest (import the helper module by its own name)")
        if path.name == "conftest.py":
            continue
        if path.name in seen:
            problems.append(
                f"{path.relative_to(root)}: same file name as {seen[path.name].relative_to(root)} (pytest imports by name)"
            )
        else:
            seen[path.name] = path
    return problems


def test_the_test_tree_mirrors_core():
    problems = check(ROOT)
    assert problems == [], "\n".join(problems)


def test_the_dashboard_fixtures_are_those_of_the_dashboard_conftest():
    defined = {
        node.name
        for node in ast.parse((ROOT / "tests" / "app" / "conftest.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
    }
    assert set(DASHBOARD_FIXTURES) <= defined


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("from app_checks import assert_ok\n", ["app_checks", "app_checks.assert_ok"]),
        ("def test_x(app):\n    pass\n", ["fixture 'app'"]),
        (
            "def test_x():\n    from streamlit.testing.v1 import AppTest\n",
            ["streamlit.testing.v1", "streamlit.testing.v1.AppTest"],
        ),
        ("import ui.components\n", ["ui.components"]),
        ("from browser_kit import dashboard_server, launch_chromium\n", ["browser_kit.dashboard_server"]),
        ("@pytest.fixture\ndef saved(server):\n    pass\n", ["fixture 'server'"]),
        ("from browser_kit import launch_chromium\n", []),
        ("from core.reviews import ReviewStore\nimport application\n", []),
        ("def test_x(audit, tmp_path):\n    pass\n", []),
    ],
    ids=[
        "app-checks",
        "app-fixture",
        "lazy-apptest",
        "ui",
        "dashboard-server",
        "server-via-fixture",
        "chromium-alone",
        "core-only",
        "plain-fixtures",
    ],
)
def test_dashboard_uses_are_recognised(source, uses):
    assert dashboard_uses(source) == uses


def _write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_misplaced_test_tree_is_caught(tmp_path):
    for package in ("reviews", "viz", "metrics"):
        _write(tmp_path, f"core/{package}/__init__.py")
    _write(tmp_path, "core/atomic.py")
    _write(tmp_path, "tests/app/conftest.py", "def app():\n    pass\n")
    _write(tmp_path, "tests/app/test_pages.py", "def test_overview(app):\n    pass\n")
    # A unit test of core.reviews left among the dashboard tests.
    _write(tmp_path, "tests/app/test_review_store.py", "from core.reviews import ReviewStore\n")
    _write(tmp_path, "tests/reviews/test_review_team.py", "from core.reviews import Team\n")
    # A test of core.viz that needs the dashboard's code.
    _write(tmp_path, "tests/viz/test_figures.py", "import ui.components\nfrom core import viz\n")
    # A folder named for no package (a typo), and a second test_figures.py in it.
    _write(tmp_path, "tests/vis/test_figures.py", "from core import viz\n")
    _write(tmp_path, "tests/test_atomic.py", "from core.atomic import atomic_path\n")
    _write(tmp_path, "tests/test_layers.py", "from core.atomic import atomic_path\n")
    _write(tmp_path, "tests/reviews/conftest.py", "import pytest\n")
    _write(tmp_path, "tests/reviews/test_review_store.py", "from conftest import store\n")
    assert check(tmp_path) == [
        "tests/vis/: neither a package core/vis/ nor an area of AREAS",
        "core/metrics/ has no tests/metrics/",
        "tests/viz/test_figures.py: a test of core drives the dashboard (ui.components)",
        "tests/app/test_review_store.py: drives no dashboard (imports none of DASHBOARD, asks for none of"
        " DASHBOARD_FIXTURES); a unit test of core goes to the folder of its package",
        "tests/test_layers.py: a top-level test is named for a module core/<module>.py (test_<module>[_<idea>].py)"
        " or listed in REPOSITORY",
        "tests/reviews/test_review_store.py: imports conftest (import the helper module by its own name)",
        "tests/reviews/test_review_store.py: same file name as tests/app/test_review_store.py (pytest imports by name)",
        "tests/viz/test_figures.py: same file name as tests/vis/test_figures.py (pytest imports by name)",
    ]


if __name__ == "__main__":  # python tests/architecture/test_tests_mirror_core.py: print the verdict
    found = check(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found) if found else "tests mirror core: every folder a package or an area, no misplaced test")
    raise SystemExit(1 if found else 0)
