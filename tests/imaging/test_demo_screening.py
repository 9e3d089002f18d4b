"""The demo pool's screening scores: what the Recapture queue ranks, and their shipped precomputation."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from core.digests import code_sha256
from core.imaging.demo import _FILES, DEFAULT_DIR, load_demo_pool
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


@pytest.fixture(scope="module")
def pool_copy(tmp_path_factory) -> Path:
    """A copy of the shipped pool's files, to change one of them."""
    folder = tmp_path_factory.mktemp("pool")
    for name in _FILES.values():
        if (DEFAULT_DIR / name).is_file():
            shutil.copyfile(DEFAULT_DIR / name, folder / name)
    return folder


def _rewrite(folder: Path, role: str, change) -> None:
    """Change one value of one table of the pool in ``folder``, written as the pool writes it."""
    path = folder / _FILES[role]
    frame = pd.read_parquet(path)
    change(frame)
    frame.to_parquet(path, engine="pyarrow", compression="zstd", compression_level=19, index=False)


def test_stored_scores_are_returned_only_on_an_exact_fingerprint_match(pool_copy, fresh, tmp_path):
    path = write_precomputed_screening(pool_copy, tmp_path / "screening.parquet")
    pd.testing.assert_frame_equal(load_precomputed_screening(pool_copy, path), fresh, check_exact=True)
    assert load_precomputed_screening(DEFAULT_DIR, path) is not None  # the same files elsewhere
    assert load_precomputed_screening(pool_copy, tmp_path / "missing.parquet") is None
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    assert load_precomputed_screening(pool_copy, tmp_path / "bad.parquet") is None
    fresh.to_parquet(tmp_path / "unsigned.parquet")  # the right numbers without a fingerprint
    assert load_precomputed_screening(pool_copy, tmp_path / "unsigned.parquet") is None

    def one_value(column, value):
        def change(frame):
            assert frame.loc[3, column] != value  # a real change of content, not only of the bytes
            frame.loc[3, column] = value

        return change

    # one value of one probe output, of one clean output, of one record: each retires the file;
    # so does a missing pool file (the models' and conditions' tables do not enter the scores)
    for role, column, value in (("probes", "true_prob", 0.5), ("clean", "max_prob", 0.5), ("records", "pert_pred", 9)):
        original = (pool_copy / _FILES[role]).read_bytes()
        _rewrite(pool_copy, role, one_value(column, value))
        assert load_precomputed_screening(pool_copy, path) is None, role
        (pool_copy / _FILES[role]).write_bytes(original)
        assert load_precomputed_screening(pool_copy, path) is not None, role
    _rewrite(pool_copy, "models", one_value("dev_accuracy", 0.5))
    assert load_precomputed_screening(pool_copy, path) is not None
    (pool_copy / _FILES["probes"]).rename(pool_copy / "moved.parquet")
    try:
        assert load_precomputed_screening(pool_copy, path) is None
    finally:
        (pool_copy / "moved.parquet").rename(pool_copy / _FILES["probes"])


def test_fingerprint_names_inputs_code_and_library_versions(pool_copy):
    fp = screening_fingerprint(DEFAULT_DIR)
    assert set(fp) == {"format", "files_sha256", "code_sha256", "numpy", "pandas", "pyarrow", "scipy", "sklearn"}
    assert fp["files_sha256"] == {
        role: hashlib.sha256((DEFAULT_DIR / _FILES[role]).read_bytes()).hexdigest()
        for role in ("records", "probes", "clean")
    }
    from core.imaging import demo_screening

    assert fp["code_sha256"] == code_sha256(demo_screening._CODE)
    assert "core.imaging.demo" in demo_screening._CODE  # the loader decides the frames the files give
    assert screening_fingerprint(pool_copy) == fp


def test_shipped_scores_match_the_shipped_pool_and_this_code(pool):
    """Fails after an edit of the screening code, the pool or a library: regenerate the file."""
    assert load_precomputed_screening() is not None, (
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
    # core.imaging.demo is the pool's loader: its code is in the digest (the files are hashed,
    # not the frames it reads from them), and its imports render and train, which reading a
    # pool never runs, so they are not followed. core.formats checks a file's version tag before
    # it is read (it refuses, it computes nothing).
    ignored = {
        "core.exceptions",
        "core._rng",
        "core.atomic",
        "core.digests",
        "core.resources",
        "core.imaging.demo",
        "core.formats",
    }
    seen = project_imports("core.imaging.demo_screening", ignored=ignored)
    assert seen <= set(demo_screening._CODE), sorted(seen - set(demo_screening._CODE))
