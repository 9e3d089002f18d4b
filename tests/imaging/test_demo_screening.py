"""The demo pool's screening scores: what the Recapture queue ranks, and their shipped precomputation."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from core.digests import code_sha256, frame_sha256
from core.imaging.demo import load_demo_pool
from core.imaging.demo_screening import (
    OUTCOME_SOURCE,
    PRECOMPUTED_SCREENING,
    demo_outcomes,
    demo_screening,
    load_precomputed_screening,
    screening_fingerprint,
    write_precomputed_screening,
)
from core.paired.screening import screening_scores


@pytest.fixture(scope="module")
def pool():
    return load_demo_pool()


@pytest.fixture(scope="module")
def fresh(pool):
    return demo_screening(pool)


def test_demo_screening_is_screening_scores_on_the_simulated_recaptures(pool, fresh):
    outcomes = pool.records[pool.records["source"] == "simulated-recapture"]
    pd.testing.assert_frame_equal(demo_outcomes(pool), outcomes)
    assert OUTCOME_SOURCE == "simulated-recapture"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = screening_scores(pool.probes, pool.clean, outcomes=outcomes)
    pd.testing.assert_frame_equal(fresh, direct, check_exact=True)
    assert fresh["g_SU"].notna().all()  # fitted on the simulated recaptures for every model


def test_stored_scores_are_returned_only_on_an_exact_fingerprint_match(pool, fresh, tmp_path):
    path = write_precomputed_screening(pool, tmp_path / "screening.parquet")
    pd.testing.assert_frame_equal(load_precomputed_screening(pool, path), fresh, check_exact=True)
    # one value of one probe output, of one clean output, one outcome record: each retires the file
    probes = pool.probes.copy()
    probes.loc[3, "true_prob"] = 0.5
    clean = pool.clean.copy()
    clean.loc[3, "max_prob"] = 0.5
    records = pool.records.copy()
    first = int(np.flatnonzero(records["source"].to_numpy() == "simulated-recapture")[0])
    records.loc[first, "pert_pred"] = (records.loc[first, "pert_pred"] + 1) % 10
    for changed in (
        dataclasses.replace(pool, probes=probes),
        dataclasses.replace(pool, clean=clean),
        dataclasses.replace(pool, records=records),
    ):
        assert load_precomputed_screening(changed, path) is None
    # records of the other sources do not enter the scores
    synthetic = pool.records.copy()
    other = int(np.flatnonzero(synthetic["source"].to_numpy() != "simulated-recapture")[0])
    synthetic.loc[other, "pert_pred"] = (synthetic.loc[other, "pert_pred"] + 1) % 10
    assert load_precomputed_screening(dataclasses.replace(pool, records=synthetic), path) is not None
    assert load_precomputed_screening(pool, tmp_path / "missing.parquet") is None
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    assert load_precomputed_screening(pool, tmp_path / "bad.parquet") is None
    fresh.to_parquet(tmp_path / "unsigned.parquet")  # the right numbers without a fingerprint
    assert load_precomputed_screening(pool, tmp_path / "unsigned.parquet") is None


def test_fingerprint_names_inputs_code_and_library_versions(pool):
    fp = screening_fingerprint(pool)
    assert set(fp) == {
        "format",
        "probes_sha256",
        "clean_sha256",
        "outcomes_sha256",
        "code_sha256",
        "numpy",
        "pandas",
        "scipy",
        "sklearn",
    }
    assert fp["probes_sha256"] == frame_sha256(pool.probes)
    assert fp["outcomes_sha256"] == frame_sha256(demo_outcomes(pool))
    from core.imaging import demo_screening

    assert fp["code_sha256"] == code_sha256(demo_screening._CODE)
    assert fp != screening_fingerprint(dataclasses.replace(pool, clean=pool.clean.astype({"record_id": "int32"})))


def test_shipped_scores_match_the_shipped_pool_and_this_code(pool):
    """Fails after an edit of the screening code, the pool or a library: regenerate the file."""
    assert load_precomputed_screening(pool) is not None, (
        f"{PRECOMPUTED_SCREENING.name} does not match here; run: python scripts/build_paired_grid.py"
    )


@pytest.mark.portable
def test_shipped_scores_equal_a_fresh_computation(pool, fresh):
    """Every score but g(S, U) is arithmetic in a fixed order; g(S, U) is an lbfgs fit whose last
    bits follow the CPU's kernels (the refitted logistic regressions of the tabular audit moved
    by 4e-11 between machines), so it is compared within 1e-7."""
    stored = pd.read_parquet(PRECOMPUTED_SCREENING)
    fitted = ["g_SU", "risk_g_SU"]
    pd.testing.assert_frame_equal(stored.drop(columns=fitted), fresh.drop(columns=fitted), check_exact=True)
    pd.testing.assert_frame_equal(stored[fitted], fresh[fitted], check_exact=False, rtol=1e-7, atol=1e-9)


def test_the_code_digest_covers_every_project_module_the_scores_run():
    """A module the scores import but the digest leaves out could change the numbers unseen."""
    from project_imports import project_imports

    from core.imaging import demo_screening

    # Imported for names that do not enter the numbers: warning classes, the random stream
    # (screening_scores draws nothing; the bootstrap functions that do are not run).
    # core.atomic and core.digests write and sign the file, core.resources says where it lives;
    # core.imaging.demo is the pool's loader: its output is hashed, not its code.
    ignored = {"core.exceptions", "core._rng", "core.atomic", "core.digests", "core.resources", "core.imaging.demo"}
    seen = project_imports("core.imaging.demo_screening", ignored=ignored)
    assert seen <= set(demo_screening._CODE), sorted(seen - set(demo_screening._CODE))
