"""Shared test configuration.

Hypothesis runs derandomised so CI is reproducible: a failure seen once is seen every time.
"""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_MAIN_MODULE = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Undo Streamlit's AppTest replacing ``sys.modules["__main__"]`` with its script module.

    Left in place, it makes every later ``multiprocessing`` spawn (Dask's worker processes)
    re-run that AppTest script as the child's main module, and the workers fail to start.
    """
    yield
    sys.modules["__main__"] = _MAIN_MODULE


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """(AuditResult, folder) of breast_cancer + logreg, seed 0, the folder written as ``python -m core audit``
    writes it (the report tests, ``tests/test_report*.py``; a test module may define its own ``audit``)."""
    from core.tabular.audit import run_audit, write_audit

    result = run_audit("breast_cancer", model="logreg", seed=0)
    folder = tmp_path_factory.mktemp("audit") / "bc"
    folder.mkdir()
    write_audit(result, folder)
    return result, folder


_CROSS_MACHINE_NOTES: list[str] = []


@pytest.fixture
def cross_machine_note():
    """Record one line for the run's "cross-machine checks" summary (what a tolerance excused)."""
    return _CROSS_MACHINE_NOTES.append


def pytest_terminal_summary(terminalreporter):
    if _CROSS_MACHINE_NOTES:
        terminalreporter.section("cross-machine checks")
        for line in _CROSS_MACHINE_NOTES:
            terminalreporter.write_line(line)
