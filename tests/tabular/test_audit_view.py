"""A saved audit folder rebuilds the whole AuditResult from its tables (``view/``), without the model."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import audit_model
from core.tabular.audit import certificate_export, evaluation_json, protocol_json, run_audit
from core.tabular.audit_folder import SavedModel, open_audit_folder, saved_result
from core.tabular.datasets import load_dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_models import wine_tables  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, test = wine_tables()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(
        train.drop(columns="target"), train["target"]
    )
    result = audit_model(pipe, train, test, target="target")
    return result, result.save(tmp_path_factory.mktemp("view") / "wine")


def _same(a, b) -> None:
    """Every field the pages and the report read is equal (same machine: exact)."""
    assert a.fingerprint == b.fingerprint
    assert json.dumps(a.certificates.to_bundle(), sort_keys=True) == json.dumps(
        b.certificates.to_bundle(), sort_keys=True
    )
    pd.testing.assert_frame_equal(a.evaluation, b.evaluation)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    pd.testing.assert_frame_equal(a.calibration.metrics, b.calibration.metrics)
    pd.testing.assert_frame_equal(a.calibration.reliability, b.calibration.reliability)
    assert a.calibration.bats == b.calibration.bats
    for name in ("labels", "high_confidence", "confidence", "prediction", "flip_share", "max_collapse", "hits"):
        np.testing.assert_array_equal(getattr(a.labels, name), getattr(b.labels, name))
    for name in ("X_test", "y_test", "proba_test", "baseline"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.groups == b.groups and a.nominal == b.nominal and a.notes == b.notes
    assert list(a.preprocessor.feature_names) == list(b.preprocessor.feature_names)
    pd.testing.assert_frame_equal(certificate_export(a), certificate_export(b))
    assert evaluation_json(a) == evaluation_json(b)
    assert protocol_json(a) == protocol_json(b)


def test_a_saved_own_model_audit_is_rebuilt_exactly(wine):
    result, folder = wine
    saved = saved_result(open_audit_folder(folder))
    _same(saved, result)
    assert saved.model_unavailable is None
    np.testing.assert_array_equal(saved.model.predict_proba(saved.X_test), result.proba_test)
    assert list(saved.dataset.classes) == ["class_0", "class_1", "class_2"]


def test_a_tool_audit_is_rebuilt_on_its_full_dataset(tmp_path):
    result = run_audit("credit_data", model="logreg", seed=1)
    folder = result.save(tmp_path / "credit")
    dataset = load_dataset("credit_data")
    saved = saved_result(open_audit_folder(folder, load_model=False), dataset=dataset, lazy_model=True)
    _same(saved, result)
    assert saved.dataset is dataset
    np.testing.assert_array_equal(saved.split.test_index, result.split.test_index)
    assert isinstance(saved.model, SavedModel)
    np.testing.assert_array_equal(saved.model.predict_proba(saved.X_test), result.proba_test)
    other = load_dataset("credit_data")
    other = type(other)(**{**other.__dict__, "frame": other.frame.iloc[:-5]})
    with pytest.raises(ValueError, match="is not the one audited"):
        saved_result(open_audit_folder(folder, load_model=False), dataset=other)


def test_without_a_usable_model_the_tables_stay_and_the_reason_is_given(wine, tmp_path):
    result, folder = wine
    broken = shutil.copytree(folder, tmp_path / "broken")
    data = (broken / "_task.zip").read_bytes()
    (broken / "_task.zip").write_bytes(data[:100])
    saved = saved_result(open_audit_folder(broken))
    assert saved.model is None and "_task.zip" in saved.model_unavailable
    _same(saved, result)
    lazy = saved_result(open_audit_folder(broken, load_model=False), lazy_model=True)
    with pytest.raises(ValueError, match="could not be loaded"):
        lazy.model.predict_proba(lazy.X_test[:1])


def test_a_view_from_another_audit_is_refused(wine, tmp_path):
    _, folder = wine
    mixed = shutil.copytree(folder, tmp_path / "mixed")
    meta = json.loads((mixed / "view" / "meta.json").read_text())
    meta["fingerprint"] = "0" * 64
    (mixed / "view" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="mixes two audits"):
        saved_result(open_audit_folder(mixed))


def test_a_damaged_view_file_is_named(wine, tmp_path):
    _, folder = wine
    bad = shutil.copytree(folder, tmp_path / "bad")
    (bad / "view" / "certificates.json.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="view file is missing or damaged"):
        saved_result(open_audit_folder(bad))


def test_the_view_is_byte_deterministic(wine, tmp_path):
    result, folder = wine
    again = result.save(tmp_path / "again")
    for name in ("meta.json", "glance.json", "arrays.npz", "certificates.json.gz"):
        assert (again / "view" / name).read_bytes() == (folder / "view" / name).read_bytes(), name


def _legacy_pickle(folder: Path) -> None:
    (folder / "_task.zip").unlink()
    (folder / "_task.pkl").write_bytes(b"\x80\x04not read")


def _no_model(folder: Path) -> None:
    (folder / "_task.zip").unlink()


@pytest.mark.parametrize(
    "damage, reason",
    [(_legacy_pickle, "_task.pkl .*never loaded"), (_no_model, r"holds no saved model \(_task.zip\)")],
    ids=["old-pickle", "no-model"],
)
def test_opened_without_its_model_a_folder_still_says_what_its_files_tell(wine, tmp_path, damage, reason):
    result, folder = wine
    damaged = shutil.copytree(folder, tmp_path / "damaged")
    damage(damaged)
    saved = open_audit_folder(damaged, load_model=False)
    assert saved.task is None
    assert saved.unavailable is not None and re.search(reason, saved.unavailable)
    lazy = saved_result(saved, lazy_model=True)
    assert lazy.model is None and lazy.model_unavailable == saved.unavailable
    _same(lazy, result)


def test_opened_without_its_model_a_loadable_folder_defers_it(wine):
    result, folder = wine
    saved = open_audit_folder(folder, load_model=False)
    assert saved.task is None and saved.unavailable is None
    lazy = saved_result(saved, lazy_model=True)
    assert isinstance(lazy.model, SavedModel) and lazy.model.state == "pending" and lazy.model_unavailable is None
    np.testing.assert_array_equal(lazy.model.predict_proba(lazy.X_test), result.proba_test)
    assert lazy.model.state == "ready" and lazy.model.task is not None


def test_opening_a_saved_folder_imports_no_model_library_until_the_model_is_used(wine):
    """In a fresh interpreter: the tables are read without skops (whose trusted-type scan imports
    torch), scikit-learn or scipy.stats; the first predict_proba loads them."""
    _, folder = wine
    script = f"""
import json, sys
from core.tabular.audit_folder import open_audit_folder, saved_result
heavy = lambda: sorted({{m.split(".")[0] for m in sys.modules if m.split(".")[0] in
    ("torch", "skops", "sklearn", "shap", "onnxruntime", "xgboost", "lightgbm")}} | ({{"scipy.stats"}} & set(sys.modules)))
result = saved_result(open_audit_folder({str(folder)!r}, load_model=False), lazy_model=True)
opened = heavy()
result.model.predict_proba(result.X_test[:2])
print(json.dumps({{"opened": opened, "used": heavy()}}))
"""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["opened"] == [], report
    assert "skops" in report["used"] and "sklearn" in report["used"], report


def _parquets(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) + sorted((folder / "view").glob("*.parquet"))


def test_read_frame_equals_pandas_on_every_file_of_a_folder(wine, tmp_path):
    """``read_frame`` (pyarrow.parquet, faster on a fresh server) returns ``pd.read_parquet``'s
    frame: index, dtypes, values, on a saved folder, the shipped default and every dtype kind."""
    from core.tabular.audit_view import read_frame
    from core.tabular.shipped import SHIPPED_DIR

    files = _parquets(wine[1]) + [p for d in sorted(Path(SHIPPED_DIR).iterdir()) for p in _parquets(d)]
    assert len(files) >= 20
    kinds = pd.DataFrame(
        {
            "text": pd.Series(["a", None, "ç"], dtype="str"),
            "category": pd.Categorical(["x", "y", None]),
            "flag": [True, False, True],
            "count": pd.array([1, None, 3], dtype="Int64"),
            "value": [0.5, float("nan"), float("inf")],
            "when": pd.to_datetime(["2026-01-01", None, "2026-12-03"]),
        },
        index=pd.Index([10, 20, 30], name="row_id"),
    )
    kinds.to_parquet(tmp_path / "kinds.parquet")
    for path in [*files, tmp_path / "kinds.parquet"]:
        pd.testing.assert_frame_equal(read_frame(path), pd.read_parquet(path), check_exact=True, obj=str(path))
