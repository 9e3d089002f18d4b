"""Fixtures of the view tests: a small real audit, demo-pool records and probe outputs."""

from __future__ import annotations

import pandas as pd
import pytest
from view_data import MODELS

from core.imaging.demo import DEFAULT_DIR, load_demo_pool


@pytest.fixture(scope="module")
def small_audit():
    from core.tabular.audit import run_audit

    return run_audit("breast_cancer", model="logreg", seed=0)


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    """Two models × two synthetic conditions of the demo pool, with their dev / eval split."""
    pool = load_demo_pool(DEFAULT_DIR).records
    conditions = sorted(pool.loc[pool["source"] == "synthetic", "condition"].unique())[:2]
    keep = pool["model"].isin(MODELS) & pool["condition"].isin(conditions) & (pool["source"] == "synthetic")
    return pool[keep].reset_index(drop=True)


@pytest.fixture(scope="module")
def probe_outputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Clean and per-probe outputs of 300 demo images of one model (its dev and eval images)."""
    pool = load_demo_pool(DEFAULT_DIR)
    clean = pool.clean[pool.clean["model"] == MODELS[0]]
    clean = clean[clean["record_id"].isin(clean["record_id"].iloc[:300])].reset_index(drop=True)
    probes = pool.probes[(pool.probes["model"] == MODELS[0]) & pool.probes["record_id"].isin(clean["record_id"])]
    return clean, probes.reset_index(drop=True)
