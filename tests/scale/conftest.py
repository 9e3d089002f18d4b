"""Shared fixtures of the large-audit tests: a synthetic credit table, a fitted task, and one
Dask ``LocalCluster`` (2 worker processes) for the whole session, always shut down.

The model is logistic regression: it fits in a fraction of a second, so the tests spend
their time on the machinery under test, not on training.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from scale_constants import FIT_ROWS, N_ROWS

from core.scale.certify import FitSpec, fit_certify_task
from core.scale.cluster import connect
from core.scale.sources import open_source
from core.scale.synthetic import fit_synthetic, write_synthetic
from core.tabular.datasets import load_dataset

_TEST_TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _no_hang():
    """Fail, rather than hang CI, if a cluster or a child process stops answering."""

    def expired(signum, frame):
        raise TimeoutError(f"test exceeded {_TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(_TEST_TIMEOUT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def generator():
    return fit_synthetic(load_dataset("credit_data"))


@pytest.fixture(scope="session")
def credit_parquet(tmp_path_factory, generator) -> Path:
    """4,000 synthetic credit rows, row groups of 700 (not aligned with the 500-row chunks)."""
    path = tmp_path_factory.mktemp("data") / "credit.parquet"
    return write_synthetic(generator, path, N_ROWS, seed=7, row_group_rows=700)


@pytest.fixture(scope="session")
def credit_csv(tmp_path_factory, generator) -> Path:
    path = tmp_path_factory.mktemp("data") / "credit.csv"
    return write_synthetic(generator, path, N_ROWS, seed=7, format="csv")


@pytest.fixture(scope="session")
def spec() -> FitSpec:
    return FitSpec(target="Status", model="logreg", fit_rows=FIT_ROWS, seed=0)


@pytest.fixture(scope="session")
def task(credit_parquet, spec):
    return fit_certify_task(open_source(credit_parquet), spec)


@pytest.fixture(scope="session")
def dask_client():
    """A client of a local cluster of 2 single-threaded worker processes."""
    with connect(workers=2, timeout=120) as client:
        yield client
