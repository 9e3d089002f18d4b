"""core.optional: the one error for a missing extra, and no optional library loaded at import time.

The base install (``pip install reliability-audit``) has none of torch, xgboost, lightgbm,
catboost, dask, distributed, shap, skl2onnx or onnxmltools. These tests run in the full
development environment (where those libraries are installed) and check, in fresh
interpreters, that importing every module of ``core`` and ``ui``, loading a skops model and
opening every page of the dashboard load none of them; nothing is installed for that.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.optional import EXTRAS, OPTIONAL_MODULES, MissingExtraError, require

ROOT = Path(__file__).resolve().parents[1]

#: Modules that are the optional wing itself: imported only behind :func:`core.optional.require`.
OPTIONAL_WING = {"core/tabular/resmlp.py": "torch"}


def _fresh(script: str, *, timeout: float = 600, env: dict[str, str] | None = None) -> dict:
    """Run ``script`` in a fresh interpreter at the checkout; its last stdout line is JSON."""
    env = {**os.environ, "AUDIT_FOREGROUND_WAIT_S": "0", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------
# require
# --------------------------------------------------------------------------------------------
def test_require_returns_the_module():
    import json as json_module

    assert require("json", what="x") is json_module
    assert require("os.path", what="x") is os.path


@pytest.mark.parametrize(
    ("module", "extra", "what"),
    [
        ("no_such_library_xyz", "torch", "the fr_resmlp model"),
        ("no_such_library_xyz.sub", "dask", "the Dask engine (--engine dask)"),
    ],
    ids=["top-level", "submodule"],
)
def test_a_missing_library_names_the_extra(module, extra, what):
    with pytest.raises(MissingExtraError) as info:
        require(module, extra=extra, what=what)
    exc = info.value
    assert str(exc).startswith(f"{what} needs no_such_library_xyz, which is not installed: ")
    assert f"install reliability-audit[{extra}] to use {what}" in str(exc)
    # Caught as an ImportError by code that tries an import, and as bad input (a ValueError)
    # by the command line (one `error:` line, exit 2) and the dashboard.
    assert isinstance(exc, ImportError) and isinstance(exc, ValueError)
    assert (exc.name, exc.extra, exc.what) == (module, extra, what)


def test_the_extra_defaults_to_the_table(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"install reliability-audit\[boosting\] to use the xgboost model"):
        require("xgboost", what="the xgboost model")


def test_a_broken_install_is_not_reported_as_a_missing_extra(tmp_path, monkeypatch):
    # The library is there but one of its own dependencies is not: that is pip's error to show.
    (tmp_path / "half_installed_lib.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("half_installed_lib", extra="torch", what="x")
    assert not isinstance(info.value, MissingExtraError)
    assert info.value.name == "no_such_dependency_xyz"


@pytest.mark.parametrize(
    ("model", "library", "extra"),
    [("fr_resmlp", "torch", "torch"), ("resmlp", "torch", "torch"), ("xgboost", "xgboost", "boosting"),
     ("lightgbm", "lightgbm", "boosting"), ("catboost", "catboost", "boosting")],
    ids=["fr_resmlp", "resmlp", "xgboost", "lightgbm", "catboost"],
)  # fmt: skip
def test_a_model_of_an_extra_names_it(model, library, extra, monkeypatch):
    from core.tabular.models import make_model

    monkeypatch.setitem(sys.modules, library, None)
    monkeypatch.delitem(sys.modules, "core.tabular.resmlp", raising=False)
    with pytest.raises(MissingExtraError, match=rf"install reliability-audit\[{extra}\] to use the {model} model"):
        make_model(model, seed=0)


def test_the_extras_table_matches_pyproject():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)
    assert OPTIONAL_MODULES == set(EXTRAS)


# --------------------------------------------------------------------------------------------
# Nothing optional at import time
# --------------------------------------------------------------------------------------------
def _project_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("core", "ui", "pages"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def test_no_module_imports_an_optional_library_at_module_level():
    found = []
    for path in _project_files():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # Module level: the body, and blocks at module level (if / try), not functions or classes.
        todo = list(tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                todo += [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)]
                if isinstance(node, ast.Try):
                    todo += [n for h in node.handlers for n in h.body]
                continue
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in OPTIONAL_MODULES and OPTIONAL_WING.get(rel) != top:
                    found.append(f"{rel}:{node.lineno} imports {name}")
    assert not found, "import it inside the function that needs it, through core.optional.require:\n" + "\n".join(found)


def test_importing_every_module_and_reading_a_skops_model_loads_no_optional_library():
    # Every module of core and ui, in a fresh interpreter where every optional library is
    # installed: a module-level import, or one made by a library on import (skops' scan of
    # scikit-learn imports torch and dask), shows in sys.modules.
    report = _fresh(
        f"""
        import importlib, json, pkgutil, sys, time
        import core, ui
        skipped = {sorted(m.removesuffix(".py").replace("/", ".") for m in OPTIONAL_WING)!r}
        names = []
        for package in (core, ui):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if info.name in skipped or info.name.endswith(".__main__"):
                    continue
                importlib.import_module(info.name)
                names.append(info.name)
        import numpy as np
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from core.tabular.persist import dump_skops, load_skops
        X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
        data = dump_skops(model)
        t0 = time.perf_counter()
        back = load_skops(data, trusted=[])
        seconds = time.perf_counter() - t0
        assert (back.predict_proba(X) == model.predict_proba(X)).all()
        loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({sorted(OPTIONAL_MODULES)!r}))
        print(json.dumps({{"modules": len(names), "loaded": loaded, "skops_seconds": seconds,
                          "wrapper": "sklearn.externals.array_api_compat.torch" in sys.modules}}))
        """
    )
    assert report["modules"] > 100, report
    assert report["loaded"] == [], report
    assert not report["wrapper"]


def test_the_dashboard_pages_load_no_optional_library(tmp_path):
    # What `reliability-audit dashboard` imports from the start and on the first visit of each
    # page (the shipped audit, the demo pool's stored outputs).
    pages = sorted(p.name for p in (ROOT / "pages").glob("*.py"))
    report = _fresh(
        f"""
        import json, sys
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file("app.py", default_timeout=300)
        at.run()
        errors = [e.value for e in at.exception]
        for page in {pages!r}:
            at.switch_page("pages/" + page).run()
            errors += [page + ": " + str(e.value) for e in at.exception]
        loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({sorted(OPTIONAL_MODULES)!r}))
        print(json.dumps({{"errors": errors, "loaded": loaded}}))
        """,
        timeout=900,
        env={"AUDIT_REVIEWS_DB": str(tmp_path / "reviews.sqlite3")},
    )
    assert report["errors"] == [], report["errors"]
    assert report["loaded"] == [], report["loaded"]


@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask is not installed")
def test_skops_trusts_the_same_types_without_the_array_wrappers():
    # core.optional.skops_io keeps scikit-learn's torch / dask / cupy wrappers out of skops'
    # estimator scan; the types skops trusts must not change for it, and the wrappers must
    # still import afterwards (scikit-learn's array-API dispatch imports them when asked).
    script = """
        import json, sys
        {prepare}
        import skops.io._trusted_types as t
        types = {{k: sorted(map(str, v)) for k, v in vars(t).items() if k.isupper() and isinstance(v, (list, set, tuple))}}
        scanned = "dask" in sys.modules
        import sklearn.externals.array_api_compat.dask
        print(json.dumps({{"types": types, "dask_during_scan": scanned}}))
    """
    ours = _fresh(script.format(prepare="from core.optional import skops_io; skops_io()"))
    plain = _fresh(script.format(prepare=""))
    assert (ours["dask_during_scan"], plain["dask_during_scan"]) == (False, True)
    assert ours["types"] == plain["types"]
    assert sum(len(v) for v in ours["types"].values()) > 100
