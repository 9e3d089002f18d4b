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
