"""The coverage grid of the Paired bounds page and its stored precomputation for the demo pool."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from core.constants import COVERAGES
from core.digests import frame_sha256
from core.exceptions import UndefinedTargetWarning
from core.paired.bounds import identified_intervals_grid
from core.paired.coverage_grid import (
    PRECOMPUTED_GRID,
    coverage_grid,
    grid_fingerprint,
    load_precomputed_grid,
    write_precomputed_grid,
)
from core.paired.states import development_thresholds


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        return fn(*args, **kwargs)


def _records(seed: int = 0) -> pd.DataFrame:
    """Two models × two conditions, 60 records each, a dev / eval split."""
    rng = np.random.default_rng(seed)
    frames = []
    for model in ("beta", "alpha"):
        n = 60
        y = rng.integers(0, 3, n)
        cp = np.where(rng.random(n) < 0.7, y, (y + 1 + rng.integers(0, 3, n)) % 5)
        cs = np.round(rng.uniform(0.4, 1.0, n), 3)
        for condition in ("fog", "blur"):
            pp = np.where(rng.random(n) < 0.5, y, (y + 1 + rng.integers(0, 3, n)) % 5)
            ps = np.round(rng.uniform(0.4, 1.0, n), 3)
            frames.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "condition": condition,
                        "source": "synthetic",
                        "record_id": np.arange(n),
                        "true_label": y,
                        "clean_pred": cp,
                        "clean_max_prob": cs,
                        "clean_true_prob": np.where(cp == y, cs, 0.05),
                        "pert_pred": pp,
                        "pert_max_prob": ps,
                        "pert_true_prob": np.where(pp == y, ps, 0.05),
                        "split": np.where(np.arange(n) < 20, "dev", "eval"),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def test_grid_is_every_models_eval_cells_at_its_own_development_threshold():
    records = _records()
    grid = _quiet(coverage_grid, records, 0.7)
    thresholds = development_thresholds(records, [0.7])
    for model in ("alpha", "beta"):
        tau = float(thresholds.loc[thresholds["model"] == model, "tau"].iloc[0])
        mine = records[(records["model"] == model) & (records["split"] == "eval")]
        expected = _quiet(identified_intervals_grid, mine, tau).assign(tau=tau)
        got = grid[grid["model"] == model].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert grid["model"].tolist() == sorted(grid["model"])  # models in sorted order, as the page lists them


def test_fixed_tau_grid_and_argument_checks():
    records = _records()
    grid = _quiet(coverage_grid, records, tau=0.75)
    assert (grid["tau"] == 0.75).all()
    expected = _quiet(
        identified_intervals_grid, records[(records["model"] == "alpha") & (records["split"] == "eval")], 0.75
    )
    pd.testing.assert_frame_equal(grid[grid["model"] == "alpha"].drop(columns="tau").reset_index(drop=True), expected)
    with pytest.raises(ValueError, match="exactly one of `coverage` and `tau`"):
        coverage_grid(records, 0.7, tau=0.5)
    with pytest.raises(ValueError, match="exactly one of `coverage` and `tau`"):
        coverage_grid(records)
    with pytest.raises(ValueError, match="no row for model 'alpha' at coverage 0.7"):
        coverage_grid(records, 0.7, thresholds=development_thresholds(records, [0.9]))


def test_stored_grid_is_returned_only_on_an_exact_fingerprint_match(tmp_path):
    records = _records()
    path = _quiet(write_precomputed_grid, records, tmp_path / "grid.parquet", coverages=(0.7, 0.9))
    for q in (0.7, 0.9):
        pd.testing.assert_frame_equal(
            load_precomputed_grid(records, q, path), _quiet(coverage_grid, records, q), check_exact=True
        )
    assert load_precomputed_grid(records, 0.8, path) is None  # a coverage that was not stored
    changed = records.copy()
    changed.loc[5, "pert_max_prob"] = 0.999  # one value of one record
    assert load_precomputed_grid(changed, 0.7, path) is None
    # The records' digest given by a caller that has it stands for the records it digests.
    pd.testing.assert_frame_equal(
        load_precomputed_grid(changed, 0.7, path, records_sha256=frame_sha256(records)),
        load_precomputed_grid(records, 0.7, path),
    )
    assert load_precomputed_grid(records, 0.7, path, records_sha256=frame_sha256(changed)) is None
    assert load_precomputed_grid(records.iloc[::-1].reset_index(drop=True), 0.7, path) is None
    assert load_precomputed_grid(records, 0.7, tmp_path / "missing.parquet") is None
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    assert load_precomputed_grid(records, 0.7, tmp_path / "bad.parquet") is None


def test_fingerprint_names_code_and_library_versions():
    records = _records()
    fp = grid_fingerprint(records, 0.7)
    assert set(fp) == {"format", "records_sha256", "coverage", "levels", "code_sha256", "numpy", "pandas", "scipy"}
    assert fp == grid_fingerprint(records.copy(), 0.7)
    assert fp["records_sha256"] != grid_fingerprint(records.astype({"record_id": "int32"}), 0.7)["records_sha256"]
    assert grid_fingerprint(records, 0.8)["coverage"] == 0.8


def _demo_records() -> pd.DataFrame:
    from core.imaging.demo import load_demo_pool

    return load_demo_pool().records


def test_shipped_grid_matches_the_shipped_pool_and_this_code():
    """Fails after an edit of the bound solvers, the pool or a library: regenerate the file."""
    records = _demo_records()
    stale = [q for q in COVERAGES if load_precomputed_grid(records, q) is None]
    assert not stale, (
        f"{PRECOMPUTED_GRID.name} does not match coverages {stale} here; run: python scripts/build_paired_grid.py"
    )


@pytest.mark.slow
@pytest.mark.portable
@pytest.mark.parametrize("coverage", COVERAGES)
def test_shipped_grid_equals_a_fresh_computation(coverage):
    """The bounds are combinatorial (counts over N) and dM_k sums in a fixed order: exact on any CPU."""
    import pyarrow.parquet as pq

    records = _demo_records()
    stored = pq.read_table(PRECOMPUTED_GRID, filters=[("coverage", "==", coverage)]).to_pandas()
    fresh = _quiet(coverage_grid, records, coverage)
    pd.testing.assert_frame_equal(stored.drop(columns="coverage"), fresh, check_exact=True)
