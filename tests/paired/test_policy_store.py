"""The shipped policy reports of the demo pool's cells: stored, signed, read back exactly."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from paired_records import records as paired_records

from core.digests import code_sha256, frame_sha256
from core.paired import policy_store
from core.paired.policies import LAMBDAS, PolicyReport, evaluate_policies
from core.paired.policy_store import (
    PRECOMPUTED_POLICIES,
    load_precomputed_policies,
    policy_cells,
    policy_fingerprint,
    stored_policies_match,
    write_precomputed_policies,
)

TABLES = ("thresholds", "costs", "differences", "selection")
ROOT = Path(__file__).resolve().parents[2]


def _cell(records: pd.DataFrame, model: str, condition: str, source: str) -> pd.DataFrame:
    """The cell as the Paired bounds page selects it: every record of it, development rows too."""
    return records[(records["model"] == model) & (records["condition"] == condition) & (records["source"] == source)]


def _assert_reports_equal(got: PolicyReport, expected: PolicyReport) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(got, name), getattr(expected, name), check_exact=True, obj=name)


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    """2 models × 2 cells, 40 records each (a dev / eval split), and a cell with no eval rows."""
    frame = paired_records(40, seed=3)
    dev_only = frame[(frame["model"] == "vit") & (frame["condition"] == "blur")].assign(condition="fog", split="dev")
    return pd.concat([frame, dev_only], ignore_index=True)


@pytest.fixture(scope="module")
def stored(records, tmp_path_factory) -> Path:
    return write_precomputed_policies(records, tmp_path_factory.mktemp("policies") / "store")


def test_cells_are_the_evaluation_cells_sorted(records):
    assert policy_cells(records) == [
        ("cnn", "blur", "synthetic"),
        ("cnn", "print", "recapture"),
        ("vit", "blur", "synthetic"),
        ("vit", "print", "recapture"),
    ]  # the dev-only cell ("vit", "fog") is no cell the page offers
    # Without a split every row is evaluated: the fog cell too.
    assert policy_cells(records.drop(columns="split")) == sorted([*policy_cells(records), ("vit", "fog", "synthetic")])


def test_every_stored_report_equals_the_pages_computation_exactly(records, stored):
    assert sorted(p.name for p in stored.iterdir()) == sorted(f"{name}.parquet" for name in TABLES)
    for cell in policy_cells(records):
        got = load_precomputed_policies(records, *cell, path=stored)
        assert got is not None, cell
        _assert_reports_equal(got, evaluate_policies(_cell(records, *cell), lambdas=LAMBDAS))
    assert load_precomputed_policies(records, "vit", "fog", "synthetic", path=stored) is None  # not stored


def test_one_process_and_two_write_the_same_files(records, stored, tmp_path):
    alone = write_precomputed_policies(records, tmp_path / "alone", workers=1)
    for name in TABLES:
        assert (alone / f"{name}.parquet").read_bytes() == (stored / f"{name}.parquet").read_bytes(), name


def test_a_stored_report_stands_only_for_the_same_records(records, stored):
    assert stored_policies_match(records, stored)
    changed = records.copy()
    changed.loc[7, "pert_max_prob"] = 0.999  # one value of one record, of a cell other than the one read
    assert load_precomputed_policies(changed, "vit", "print", "recapture", path=stored) is None
    reversed_rows = records.iloc[::-1].reset_index(drop=True)
    assert load_precomputed_policies(reversed_rows, "cnn", "blur", "synthetic", path=stored) is None
    recast = records.astype({"record_id": "int32"})
    assert load_precomputed_policies(recast, "cnn", "blur", "synthetic", path=stored) is None
    # The records' digest given by a caller that has it stands for the records it digests.
    digest, other = frame_sha256(records), frame_sha256(changed)
    assert stored_policies_match(changed, stored, records_sha256=digest)
    assert not stored_policies_match(records, stored, records_sha256=other)
    _assert_reports_equal(
        load_precomputed_policies(records, "cnn", "blur", "synthetic", path=stored, records_sha256=digest),
        load_precomputed_policies(records, "cnn", "blur", "synthetic", path=stored),
    )
    assert load_precomputed_policies(records, "cnn", "blur", "synthetic", path=stored, records_sha256=other) is None


def test_other_weights_code_or_libraries_retire_the_store(records, stored, tmp_path, monkeypatch):
    cell = ("cnn", "blur", "synthetic")
    other = write_precomputed_policies(records, tmp_path / "other", lambdas=(0.0, 0.5, 1.0), workers=1)
    assert not stored_policies_match(records, other)
    assert load_precomputed_policies(records, *cell, path=other) is None  # the page asks for LAMBDAS
    with monkeypatch.context() as patch:
        patch.setattr(policy_store, "_CODE", policy_store._CODE[:-1])  # the code digest of another code
        assert load_precomputed_policies(records, *cell, path=stored) is None
    with monkeypatch.context() as patch:
        patch.setattr(np, "__version__", "0.0.1")
        assert load_precomputed_policies(records, *cell, path=stored) is None
    assert load_precomputed_policies(records, *cell, path=stored) is not None


@pytest.mark.parametrize("damage", ["missing folder", "missing file", "corrupt file", "unsigned file"])
def test_a_missing_or_damaged_store_gives_none(records, stored, tmp_path, damage):
    copy = tmp_path / "store"
    if damage != "missing folder":
        shutil.copytree(stored, copy)
    if damage == "missing file":
        (copy / "selection.parquet").unlink()
    elif damage == "corrupt file":
        (copy / "costs.parquet").write_bytes(b"not a parquet file")
    elif damage == "unsigned file":
        pd.read_parquet(stored / "differences.parquet").to_parquet(copy / "differences.parquet", index=False)
    assert not stored_policies_match(records, copy)
    assert load_precomputed_policies(records, "cnn", "blur", "synthetic", path=copy) is None


def test_fingerprint_names_records_weights_code_and_library_versions(records):
    import scipy

    fp = policy_fingerprint(records)
    assert fp == {
        "format": 1,
        "records_sha256": frame_sha256(records),
        "lambdas": list(LAMBDAS),
        "code_sha256": code_sha256(policy_store._CODE),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
    }
    assert policy_fingerprint(records, lambdas=(0.5,))["lambdas"] == [0.5]


def test_bad_arguments_are_refused(records, tmp_path):
    with pytest.raises(ValueError, match="`workers` must be a positive integer; got 0"):
        write_precomputed_policies(records, tmp_path, workers=0)
    with pytest.raises(ValueError, match="no rows"):
        write_precomputed_policies(records.iloc[:0], tmp_path)


def test_the_code_digest_covers_every_project_module_a_report_runs():
    """A module the reports import but the digest leaves out could change the numbers unseen."""
    from project_imports import project_imports

    # Imported for names that do not enter the numbers: warning classes; core.atomic and
    # core.digests write and sign the files, core.resources says where they live; core.formats
    # checks a file's version tag before it is read (it refuses, it computes nothing).
    ignored = {"core.exceptions", "core.atomic", "core.digests", "core.resources", "core.formats"}
    seen = project_imports("core.paired.policy_store", ignored=ignored)
    assert seen <= set(policy_store._CODE), sorted(seen - set(policy_store._CODE))
    assert "core._rng" in seen  # the I5 feasible mean of a large class is a seeded estimate


# -- the shipped store


@pytest.fixture(scope="module")
def demo_records() -> pd.DataFrame:
    from core.imaging.demo import load_demo_pool

    return load_demo_pool().records


def test_shipped_store_matches_the_shipped_pool_and_this_code(demo_records):
    """Fails after an edit of the policy comparison, the pool or a library: regenerate the files."""
    assert stored_policies_match(demo_records), (
        f"{PRECOMPUTED_POLICIES.name} does not match here; run: python scripts/build_paired_grid.py"
    )
    assert len(policy_cells(demo_records)) == 360


def _first_cell(records: pd.DataFrame) -> tuple[str, str, str]:
    """The cell the Paired bounds page opens on: first source, model and condition, sorted."""
    evaluation = records[records["split"] == "eval"]
    source = sorted(evaluation["source"].unique())[0]
    model = sorted(evaluation["model"].unique())[0]
    condition = sorted(evaluation.loc[evaluation["source"] == source, "condition"].unique())[0]
    return model, condition, source


@pytest.mark.portable
@pytest.mark.parametrize("which", ["first", "other model, other source", "last"])
def test_shipped_reports_equal_a_fresh_computation(demo_records, which):
    """Three cells of the 360 (1 s each): the page's first cell, one of another model and
    source, and the last. Exact: counts over the cell's pairs and sums in a fixed order."""
    from core.views.bounds import cell_policies, stored_cell_policies

    cells = policy_cells(demo_records)
    first = _first_cell(demo_records)
    cell = {
        "first": first,
        "other model, other source": next(c for c in cells if c[0] != first[0] and c[2] != first[2]),
        "last": cells[-1],
    }[which]
    stored = stored_cell_policies(demo_records, *cell)
    assert stored is not None, cell
    _assert_reports_equal(stored, cell_policies(_cell(demo_records, *cell)))


def _build_script():
    spec = importlib.util.spec_from_file_location("build_paired_grid", ROOT / "scripts" / "build_paired_grid.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_scripts_check_reports_a_stale_store(tmp_path, capsys):
    script = _build_script()
    copy = tmp_path / "policies"
    shutil.copytree(PRECOMPUTED_POLICIES, copy)
    assert script.main(["--check", "--policies-out", str(copy)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "all stored results match"
    (copy / "thresholds.parquet").write_bytes(b"damaged")
    assert script.main(["--check", "--policies-out", str(copy)]) == 1
    assert capsys.readouterr().out.strip().splitlines() == [
        f"stale or missing: policy reports in {copy}",
        "run: python scripts/build_paired_grid.py",
    ]
