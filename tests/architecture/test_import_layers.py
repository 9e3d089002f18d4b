"""The layers of docs/DEVELOPING.md, checked on the source: no upward import, no module cycle.

Every ``import`` / ``from ... import`` of ``core/``, ``ui/``, ``pages/`` and ``app.py`` counts,
the lazy ones inside functions included (a lazy import is still a dependency, it only runs
later). ``if TYPE_CHECKING:`` blocks count too. Only ``from core import __version__``-style
dunder metadata is left out.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Lowest first. A module may import its own package and any package of a lower layer; in a
#: layer marked ``peers`` its packages may also import each other (cycles are still refused).
#: Patterns are fnmatch patterns over dotted module names; the first match wins.
LAYERS: list[tuple[str, tuple[str, ...], bool]] = [
    (
        "base",
        (
            "core._rng",
            "core.constants",
            "core.exceptions",
            "core.atomic",
            "core.validation",
            "core.onnx_session",
            "core.digests",
            "core.formats",
            "core.csv_safe",
            "core.resources",
            "core.optional",
            "core.metrics",
            "core.metrics.*",
        ),
        True,
    ),
    ("engines", ("core.cfc", "core.cfc.*", "core.paired", "core.paired.*", "core.reviews", "core.reviews.*"), False),
    ("imaging", ("core.imaging", "core.imaging.*"), False),
    ("tabular", ("core.tabular", "core.tabular.*"), False),
    ("scale", ("core.scale", "core.scale.*"), False),
    ("views", ("core.viz", "core.viz.*", "core.views", "core.views.*"), True),
    ("report", ("core.report", "core.report_pdf", "core.gate"), False),
    ("cli", ("core", "core.mlflow_log", "core.cli", "core.cli.*", "core.__main__"), True),
    ("ui", ("ui", "ui.*"), False),
    ("pages", ("pages", "pages.*"), False),
    ("app", ("app",), False),
]
#: Upward edges the architecture allows, each with why. A result object's notebook views
#: (``AuditResult._repr_html_`` / ``plot_certificate`` / ``queue``) are presentation, which lives
#: in the views layer; the result delegates to it from inside those methods, and the view module
#: imports nothing of ``core.tabular``, so the cycle check still holds.
ALLOWED_UPWARD: set[tuple[str, str]] = {("core.tabular.audit", "core.views.notebook")}
#: Cycles known and not yet broken, each with who breaks it. The test fails when one is no
#: longer a cycle (so the entry is removed with the fix) and on every other cycle.
ACCEPTED_CYCLES: set[tuple[str, ...]] = set()
#: Libraries a package may not load, by its own imports or through any project module it
#: imports (lazy ones included): the paired maths stays numbers in, numbers out, so that the
#: bounds, the CLI's ``paired`` and the pages that only show numbers never load an image or
#: model library. The image wing that needs them is ``core.imaging``, one layer up.
FORBIDDEN_LIBRARIES: dict[str, tuple[str, ...]] = {"core.paired": ("torch", "PIL", "onnxruntime", "skops")}
#: The views boundary: a page (and ``app.py``, which only declares the navigation and the
#: defaults) reaches ``core`` through ``core.views`` only; widget glue that needs an engine,
#: ``core.viz`` or ``core.report`` goes through ``ui``. No base module is excepted: a constant
#: or warning class a page needs is re-exported by the view that uses it.
VIEWS_BOUNDARY: tuple[str, ...] = ("pages", "pages.*", "app")
VIEWS_ALLOWED: tuple[str, ...] = ("core.views", "core.views.*")


def module_files(root: Path = ROOT) -> dict[str, Path]:
    files = [*root.glob("core/**/*.py"), *root.glob("ui/**/*.py"), *root.glob("pages/**/*.py"), root / "app.py"]
    out = {}
    for f in files:
        parts = f.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


def import_graph(
    files: dict[str, Path], libraries: dict[str, dict[str, int]] | None = None
) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over the project's own modules.

    ``libraries``, when given, is filled with ``{module: {top-level library: first line}}``
    for every import that is not a project module (the standard library included).
    """
    graph: dict[str, dict[str, int]] = {}
    own = {n.partition(".")[0] for n in files}
    for name, path in files.items():
        edges: dict[str, int] = {}
        outside: dict[str, int] = {}
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this module's package
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for a in node.names:
                    if a.name.startswith("__"):
                        continue  # from core import __version__: metadata, not a dependency
                    sub = f"{module}.{a.name}"
                    targets.append(sub if sub in files else module)
            for t in targets:
                if t.partition(".")[0] not in own:
                    outside.setdefault(t.partition(".")[0], node.lineno)
                    continue
                while t and t not in files:  # import core.tabular.metrics.x -> the nearest module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    edges.setdefault(t, node.lineno)
        graph[name] = edges
        if libraries is not None:
            libraries[name] = outside
    return graph


def layer_of(module: str) -> tuple[int, str, bool]:
    """``(layer index, package, peers)``; the package is the pattern that matched."""
    for i, (_, patterns, peers) in enumerate(LAYERS):
        for p in patterns:
            if fnmatch.fnmatchcase(module, p):
                return i, p.removesuffix(".*"), peers
    raise AssertionError(f"{module} is in no layer of LAYERS; add it to docs/DEVELOPING.md and to LAYERS.")


def upward_imports(graph: dict[str, dict[str, int]], files: dict[str, Path], root: Path = ROOT) -> list[str]:
    bad = []
    for mod, edges in sorted(graph.items()):
        li, pkg, peers = layer_of(mod)
        for dep, line in sorted(edges.items()):
            lj, dep_pkg, _ = layer_of(dep)
            if lj < li or dep_pkg == pkg or (lj == li and peers) or (mod, dep) in ALLOWED_UPWARD:
                continue
            where = files[mod].relative_to(root)
            kind = "upward" if lj > li else "sideways"
            bad.append(f"{where}:{line}: {mod} ({LAYERS[li][0]}) imports {dep} ({LAYERS[lj][0]}): {kind} import")
    return bad


def forbidden_libraries(
    graph: dict[str, dict[str, int]],
    libraries: dict[str, dict[str, int]],
    files: dict[str, Path],
    root: Path = ROOT,
    rules: dict[str, tuple[str, ...]] = FORBIDDEN_LIBRARIES,
) -> list[str]:
    """Every module of a package in ``rules`` that reaches a library refused to it.

    A direct import names the module's ``file:line``; one through other project modules names
    the chain of imports and the ``file:line`` where the library is imported.
    """
    bad = []
    for package, refused in rules.items():
        for mod in sorted(m for m in graph if m == package or m.startswith(package + ".")):
            # Breadth-first, so the chain reported is a shortest one.
            parent: dict[str, str | None] = {mod: None}
            queue = [mod]
            for here in queue:
                for dep in sorted(graph[here]):
                    if dep not in parent:
                        parent[dep] = here
                        queue.append(dep)
            for here in queue:
                for lib in refused:
                    if lib not in libraries.get(here, {}):
                        continue
                    chain, step = [], here
                    while step is not None:
                        chain.append(step)
                        step = parent[step]
                    where = f"{files[here].relative_to(root)}:{libraries[here][lib]}"
                    via = "" if here == mod else f" through {' -> '.join(reversed(chain))}"
                    bad.append(f"{where}: {mod} imports {lib}{via}; {package} may not load {', '.join(refused)}")
    return bad


def views_boundary(graph: dict[str, dict[str, int]], files: dict[str, Path], root: Path = ROOT) -> list[str]:
    """Every import of a ``core`` module other than ``core.views`` by a page or ``app.py``."""
    bad = []
    for mod, edges in sorted(graph.items()):
        if not any(fnmatch.fnmatchcase(mod, p) for p in VIEWS_BOUNDARY):
            continue
        for dep, line in sorted(edges.items()):
            if dep.partition(".")[0] != "core" or any(fnmatch.fnmatchcase(dep, p) for p in VIEWS_ALLOWED):
                continue
            where = files[mod].relative_to(root)
            bad.append(f"{where}:{line}: {mod} imports {dep}: a page reaches core through core.views (or ui) only")
    return bad


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _cycle_text(graph, comp):
    members = set(comp)
    return "cycle: " + "; ".join(
        f"{a} -> {b} (line {graph[a][b]})" for a in comp for b in sorted(graph[a]) if b in members
    )


def check(root: Path = ROOT) -> list[str]:
    files = module_files(root)
    libraries: dict[str, dict[str, int]] = {}
    graph = import_graph(files, libraries)
    problems = upward_imports(graph, files, root)
    problems += forbidden_libraries(graph, libraries, files, root)
    problems += views_boundary(graph, files, root)
    # A package's __init__ re-exporting its modules, and those modules importing a sibling
    # through the package, is the usual Python shape; only cycles between modules are refused.
    found = cycles(graph)
    problems += [_cycle_text(graph, c) for c in found if tuple(c) not in ACCEPTED_CYCLES]
    if root == ROOT:
        problems += [
            f"accepted cycle {c} is no longer a cycle: remove it from ACCEPTED_CYCLES"
            for c in sorted(ACCEPTED_CYCLES)
            if list(c) not in found
        ]
    return problems


def test_no_upward_import_and_no_cycle():
    problems = check()
    assert not problems, "layering broken (docs/DEVELOPING.md, 'Layers'):\n" + "\n".join(problems)


def test_every_module_has_a_layer():
    for module in module_files():
        layer_of(module)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_a_planted_upward_lazy_import_is_caught(tmp_path):
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/cfc/__init__.py", "")
    _write(
        tmp_path,
        "core/cfc/protocol.py",
        """
        def f():
            from core.tabular.audit import run_audit  # lazy, still a dependency
            return run_audit
    """,
    )
    _write(tmp_path, "core/tabular/__init__.py", "")
    _write(tmp_path, "core/tabular/audit.py", "from core.cfc.protocol import f\n")
    (tmp_path / "app.py").write_text("")
    problems = check(tmp_path)
    assert any(
        "core/cfc/protocol.py:3: core.cfc.protocol (engines) imports core.tabular.audit (tabular): upward" in p
        for p in problems
    ), problems
    assert any(p.startswith("cycle: core.cfc.protocol -> core.tabular.audit") for p in problems), problems


def test_a_planted_sideways_import_and_a_package_cycle_are_caught(tmp_path):
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/paired/__init__.py", "")
    _write(tmp_path, "core/paired/a.py", "import core.paired.b\nfrom core.cfc import x\n")
    _write(tmp_path, "core/paired/b.py", "from core.paired import a\n")
    _write(tmp_path, "core/cfc/__init__.py", "x = 1\n")
    (tmp_path / "app.py").write_text("")
    problems = check(tmp_path)
    assert "core/paired/a.py:2: core.paired.a (engines) imports core.cfc (engines): sideways import" in problems
    assert "cycle: core.paired.a -> core.paired.b (line 1); core.paired.b -> core.paired.a (line 1)" in problems


def test_a_planted_image_library_in_the_paired_maths_is_caught(tmp_path):
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/validation.py", "import numpy as np\nfrom PIL import Image\n")
    _write(tmp_path, "core/paired/__init__.py", "")
    _write(
        tmp_path,
        "core/paired/bounds.py",
        """
        import numpy as np

        def f():
            import torch.nn  # lazy, still loaded when f runs
            return torch.nn
    """,
    )
    _write(tmp_path, "core/paired/records.py", "from core.validation import check_cells\n")
    _write(tmp_path, "core/paired/summary.py", "from core.paired.records import x\n")
    _write(tmp_path, "core/imaging/__init__.py", "")
    _write(tmp_path, "core/imaging/probe.py", "import onnxruntime\nfrom PIL import Image\nimport torch\n")
    (tmp_path / "app.py").write_text("")
    problems = check(tmp_path)
    refused = "core.paired may not load torch, PIL, onnxruntime, skops"
    assert f"core/paired/bounds.py:5: core.paired.bounds imports torch; {refused}" in problems, problems
    assert (
        "core/validation.py:2: core.paired.summary imports PIL through core.paired.summary -> "
        f"core.paired.records -> core.validation; {refused}"
    ) in problems, problems
    assert not any("numpy" in p or "core.imaging" in p for p in problems), problems  # allowed there


def test_a_planted_import_of_the_image_wing_from_below_is_caught(tmp_path):
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/paired/__init__.py", "")
    _write(tmp_path, "core/paired/screening.py", "def f():\n    from core.imaging.demo import DemoPool\n")
    _write(tmp_path, "core/imaging/__init__.py", "")
    _write(tmp_path, "core/imaging/demo.py", "from core.paired.screening import f\n")
    _write(tmp_path, "core/scale/__init__.py", "")
    _write(tmp_path, "core/scale/probe.py", "from core.imaging.demo import DemoPool\n")
    (tmp_path / "app.py").write_text("")
    problems = check(tmp_path)
    assert (
        "core/paired/screening.py:2: core.paired.screening (engines) imports core.imaging.demo (imaging): upward import"
    ) in problems, problems
    assert not any(p.startswith("core/scale/") or p.startswith("core/imaging/") for p in problems), problems


def test_a_command_module_outside_core_cli_has_its_packages_layer(tmp_path):
    # Every command lives in core/cli/ (the cli layer); a command module left in an engine
    # package is that package's module, and its import of the scale layer runs upward.
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/scale/__init__.py", "")
    _write(tmp_path, "core/scale/paired_grid.py", "def paired_grid(): ...\n")
    _write(tmp_path, "core/paired/__init__.py", "")
    _write(tmp_path, "core/paired/cli.py", "def run():\n    from core.scale.paired_grid import paired_grid\n")
    _write(tmp_path, "core/cli/__init__.py", "from core.cli.options import x\n")
    _write(tmp_path, "core/cli/options.py", "x = 1\n")
    _write(
        tmp_path,
        "core/cli/paired.py",
        "from core.cli.options import x\nfrom core.scale.paired_grid import paired_grid\n",
    )
    (tmp_path / "app.py").write_text("")
    problems = check(tmp_path)
    assert problems == [
        "core/paired/cli.py:2: core.paired.cli (engines) imports core.scale.paired_grid (scale): upward import"
    ], problems


def test_a_planted_engine_import_in_a_page_is_caught(tmp_path):
    _write(tmp_path, "core/__init__.py", "")
    _write(tmp_path, "core/constants.py", "COVERAGES = (0.8,)\n")
    _write(tmp_path, "core/cfc/__init__.py", "")
    _write(tmp_path, "core/cfc/search.py", "def flip_search(): ...\n")
    _write(tmp_path, "core/views/__init__.py", "")
    _write(tmp_path, "core/views/tabular.py", "from core.cfc.search import flip_search\n")
    _write(tmp_path, "ui/__init__.py", "")
    _write(tmp_path, "ui/components.py", "from core.cfc import search\n")
    _write(
        tmp_path,
        "pages/explorer.py",
        """
        from core.views.tabular import flip_search
        from ui.components import search

        def body():
            from core.cfc.search import flip_search  # lazy, still a dependency
            from core import constants
    """,
    )
    (tmp_path / "app.py").write_text("import core.constants\nimport core.views.tabular\n")
    problems = check(tmp_path)
    boundary = "a page reaches core through core.views (or ui) only"
    assert sorted(p for p in problems if boundary in p) == [
        f"app.py:1: app imports core.constants: {boundary}",
        f"pages/explorer.py:6: pages.explorer imports core.cfc.search: {boundary}",
        f"pages/explorer.py:7: pages.explorer imports core.constants: {boundary}",
    ], problems
    assert not any(p.startswith(("core/", "ui/")) for p in problems), problems  # views and ui may import engines


if __name__ == "__main__":  # python tests/architecture/test_import_layers.py: print the verdict
    found = check(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found) if found else "layers ok: no upward import, no cycle")
    raise SystemExit(1 if found else 0)


def test_pytest_runs_every_docstring_example_of_core():
    """The docstring examples run through pytest.ini, not a hand-kept module list."""
    import configparser

    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    assert "--doctest-modules" in ini["pytest"]["addopts"].split()
    assert "core" in ini["pytest"]["testpaths"].split()


#: Modules whose examples the former hand-kept doctest tests required to exist (attempted > 0);
#: pytest.ini runs them now, this keeps the promise that they are there.
MODULES_WITH_EXAMPLES = (
    *(
        f"core.cfc.{m}"
        for m in (
            "protocol",
            "scores",
            "grouping",
            "baselines",
            "operators",
            "search",
            "certification",
            "fds",
            "calibration",
            "evaluation",
        )
    ),
    "core.imaging.corruptions",
    "core.paired.screening",
    "core.reviews.store",
    *(f"core.views.{m}" for m in ("formatting", "uploads", "tabular", "ranking", "paired")),
    "core.scale.synthetic",
    "core.metrics.ranking",
    "core.metrics.calibration",
)


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_modules_keep_their_docstring_examples(name):
    import doctest
    import importlib

    examples = sum(len(t.examples) for t in doctest.DocTestFinder().find(importlib.import_module(name)))
    assert examples > 0, f"{name} has no docstring example left"
