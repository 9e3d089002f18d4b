"""``audit --model-file``: the same model in Python, as .skops and as .onnx gives the same certificates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from own_models import (
    as_xgboost_labels,
    default_tables,
    hist_gb_pipeline,
    logreg_to_onnx,
    pipeline_to_onnx,
    raw_logreg,
    raw_xgboost,
    xgboost_to_onnx,
)

from core import audit_model
from core.cfc import Protocol
from core.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# ONNX runs the model in float32: certificates agree to this tolerance (pred / k* exactly),
# absolute, or relative for the large RCMA of near-tie rows (RCMA divides by |m(x)|, so a
# float32 error in a tiny margin is amplified: one row of 300 has RCMA 17.2, off by 6.7e-4).
ONNX_TOL = 1e-4
SKOPS_TOL = 1e-6
HGB_TRUST = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"
XGB_TRUST = "xgboost.core.Booster,xgboost.sklearn.XGBClassifier"
# The pipeline holds a text column: as ONNX it is a black box on raw columns, so its certificate
# runs in raw space (category blocks decoded to categories), while the Python pipeline runs in
# its one-hot space. The two agree where the spaces coincide: removal only, with the mode
# baseline (one-hot of the most frequent category = that category; mean of scaled = scaled mean).
REMOVAL_MODE = ["--baseline", "mode", "--operators", ""]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("own")
    train, test = default_tables(n_test=300)
    train_x, test_x = as_xgboost_labels(train), as_xgboost_labels(test)
    for name, frame in (("train.csv", train), ("test.csv", test), ("train_x.csv", train_x), ("test_x.csv", test_x)):
        frame.to_csv(d / name, index=False)
    pipe, logreg, xgb = hist_gb_pipeline(train), raw_logreg(train), raw_xgboost(train_x)
    sio.dump(pipe, d / "pipe.skops")
    sio.dump(logreg, d / "logreg.skops")
    sio.dump(xgb, d / "xgb.skops")
    (d / "pipe.onnx").write_bytes(pipeline_to_onnx(pipe))
    (d / "logreg.onnx").write_bytes(logreg_to_onnx(logreg))
    (d / "xgb.onnx").write_bytes(xgboost_to_onnx(xgb))
    (d / "order.txt").write_text("balance\nincome\n")
    # Python reads the CSVs back, exactly as the CLI does.
    tables = {k: pd.read_csv(d / f"{k}.csv") for k in ("train", "test", "train_x", "test_x")}
    return d, {"pipe": pipe, "logreg": logreg, "xgb": xgb}, tables


CASES = {  # name: (tables, extra CLI options for skops, for onnx, python protocol for the onnx comparison)
    "pipe": ("", ["--trust", HGB_TRUST], REMOVAL_MODE, Protocol(baseline="mode", operators=())),
    "logreg": ("", [], ["--feature-order", "{d}/order.txt"], Protocol()),
    "xgb": ("_x", ["--trust", XGB_TRUST], [], Protocol()),
}


def _cli(capsys, d, model_file, suffix, out, *extra):
    """``audit --model-file d/model_file`` (an absolute ``model_file`` is used as it is)."""
    code = main(
        [
            "audit",
            "--model-file",
            str(d / model_file),
            "--train",
            str(d / f"train{suffix}.csv"),
            "--test",
            str(d / f"test{suffix}.csv"),
            "--target",
            "default",
            "--out",
            str(out),
            *[e.format(d=d) for e in extra],
        ]
    )
    captured = capsys.readouterr()
    return code, captured.err


def _compare(got: pd.DataFrame, want, tol: float) -> None:
    """``got``: an audit folder's certificate table (class labels); ``want``: an AuditResult."""
    labels = want.class_of(want.certificates.table["pred"].to_numpy())
    want = want.certificates.table.reset_index(drop=True)
    np.testing.assert_array_equal(got["pred"].to_numpy(dtype=object), labels)
    np.testing.assert_array_equal(got["flip_budget"], want["flip_budget"])
    for col in ("rcma", "fds"):
        np.testing.assert_allclose(got[col], want[col], rtol=tol if tol == ONNX_TOL else 0, atol=tol, err_msg=col)


@pytest.mark.parametrize("name", list(CASES))
def test_skops_and_onnx_give_the_python_certificates(files, tmp_path, capsys, name):
    d, models, tables = files
    suffix, skops_opts, onnx_opts, onnx_protocol = CASES[name]
    train, test = tables[f"train{suffix}"], tables[f"test{suffix}"]
    python = audit_model(models[name], train, test, target="default")

    code, err = _cli(capsys, d, f"{name}.skops", suffix, tmp_path / "skops", *skops_opts)
    assert code == 0, err
    _compare(pd.read_parquet(tmp_path / "skops" / "certificates.parquet"), python, SKOPS_TOL)

    code, err = _cli(capsys, d, f"{name}.onnx", suffix, tmp_path / "onnx", *onnx_opts)
    assert code == 0, err
    reference = audit_model(models[name], train, test, target="default", protocol=onnx_protocol)
    onnx = pd.read_parquet(tmp_path / "onnx" / "certificates.parquet")
    _compare(onnx, reference, ONNX_TOL)
    protocol = json.loads((tmp_path / "onnx" / "protocol.json").read_text())
    # raw space: one group per ONNX input; student is the block of its categories (No, Yes)
    assert protocol["groups"] == (
        {"student": [0, 1], "balance": [2], "income": [3]} if name == "pipe" else {"balance": [0], "income": [1]}
    )


def test_untrusted_skops_types_are_listed_and_nothing_is_written(files, tmp_path, capsys):
    d, _, _ = files
    code, err = _cli(capsys, d, "pipe.skops", "", tmp_path / "out")
    assert code == 2
    assert HGB_TRUST in err and "--trust" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda b: b[: len(b) // 2], "corrupt or truncated|not a skops file|could not be loaded"),
        (lambda b: b"", "is empty"),
    ],
)
@pytest.mark.parametrize("kind", ["skops", "onnx"])
def test_corrupt_or_truncated_model_files(files, tmp_path, capsys, mutate, match, kind):
    d, _, _ = files
    bad = tmp_path / f"bad.{kind}"
    bad.write_bytes(mutate((d / f"logreg.{kind}").read_bytes()))
    code, err = _cli(capsys, d, bad, "", tmp_path / "out", "--feature-order", "{d}/order.txt")
    assert code == 2
    assert (kind == "onnx" and ("not a readable ONNX model" in err or "is empty" in err)) or __import__("re").search(
        match, err
    ), err
    assert not (tmp_path / "out").exists()


def test_pickle_files_are_refused_by_name(files, tmp_path, capsys):
    d, _, _ = files
    for suffix in (".pkl", ".joblib"):
        code, err = _cli(capsys, d, tmp_path / f"model{suffix}", "", tmp_path / "out")
        assert code == 2 and "never read" in err


def test_onnx_input_matching_no_column(files, tmp_path, capsys):
    d, _, tables = files
    tables["test"].drop(columns="student").to_csv(tmp_path / "test.csv", index=False)
    code = main(
        [
            "audit",
            "--model-file",
            str(d / "pipe.onnx"),
            "--train",
            str(d / "train.csv"),
            "--test",
            str(tmp_path / "test.csv"),
            "--target",
            "default",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "['student']" in err and "lacks the columns" in err
    code, err = _cli(capsys, d, "logreg.onnx", "", tmp_path / "out")
    assert code == 2 and "--feature-order" in err
    assert not (tmp_path / "out").exists()


def test_multiclass_string_labels_through_the_cli(tmp_path, capsys):
    from own_models import wine_tables
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, test = wine_tables()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(
        train.drop(columns="target"), train["target"]
    )
    sio.dump(pipe, tmp_path / "wine.skops")
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    code = main(
        [
            "audit",
            "--model-file",
            str(tmp_path / "wine.skops"),
            "--train",
            str(tmp_path / "train.csv"),
            "--test",
            str(tmp_path / "test.csv"),
            "--target",
            "target",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    python = audit_model(pipe, pd.read_csv(tmp_path / "train.csv"), pd.read_csv(tmp_path / "test.csv"), target="target")
    for got in (
        pd.read_parquet(tmp_path / "out" / "certificates.parquet"),
        pd.read_csv(tmp_path / "out" / "certificates.csv"),
    ):
        _compare(got, python, SKOPS_TOL)
        # The model's own labels, never predict_proba column indices.
        assert set(got["pred"]) == {"class_0", "class_1", "class_2"}
        assert got["y_true"].tolist() == test["target"].tolist()
    assert json.loads((tmp_path / "out" / "protocol.json").read_text())["classes"] == ["class_0", "class_1", "class_2"]


@pytest.mark.parametrize(
    "name, suffix, opts",
    [("pipe", "skops", ["--trust", HGB_TRUST]), ("logreg", "onnx", ["--feature-order", "{d}/order.txt"])],
)
def test_certify_model_from_an_own_model_audit(files, tmp_path, capsys, name, suffix, opts):
    d, _, _ = files
    code, err = _cli(capsys, d, f"{name}.{suffix}", "", tmp_path / "audit", *opts)
    assert code == 0, err
    code = main(
        [
            "certify",
            "--model-from",
            str(tmp_path / "audit"),
            "--data",
            str(d / "test.csv"),
            "--out",
            str(tmp_path / "big"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    saved = json.loads((tmp_path / "audit" / "protocol.json").read_text())
    manifest = json.loads((tmp_path / "big" / "_manifest.json").read_text())
    assert manifest["fingerprint"] == saved["certificate_fingerprint"]
    big = pd.read_parquet(tmp_path / "big")
    audit = pd.read_parquet(tmp_path / "audit" / "certificates.parquet")
    np.testing.assert_array_equal(big["pred_label"], audit["pred"])  # the audit's table holds the labels
    np.testing.assert_array_equal(big["flip_budget"], audit["flip_budget"])
    np.testing.assert_allclose(big["fds"], audit["fds"], rtol=0, atol=1e-12)
    assert big["pred"].tolist() == [("No", "Yes").index(p) for p in audit["pred"]]


def test_a_float64_skl2onnx_export_is_refused_with_onnxruntimes_reason(files, tmp_path, capsys):
    """skl2onnx 1.20 with float64 inputs writes a tree ensemble whose output type onnxruntime
    refuses; the message quotes onnxruntime and points to the export that works."""
    from skl2onnx import to_onnx
    from sklearn.ensemble import GradientBoostingClassifier

    d, _, tables = files
    train = tables["train"]
    X = train[["balance", "income"]]
    model = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, train["default"])
    onx = to_onnx(model, X.to_numpy()[:1], options={"zipmap": False}, target_opset=17)  # float64
    (tmp_path / "gb64.onnx").write_bytes(onx.SerializeToString())
    code, err = _cli(capsys, d, str(tmp_path / "gb64.onnx"), "", tmp_path / "out", "--feature-order", "{d}/order.txt")
    assert code == 2, err
    assert "onnxruntime cannot load this model: Type Error" in err and "tensor(double)" in err
    assert "corrupt or truncated" not in err
    assert "docs/own_model.md" in err and "float32" in err
    assert not (tmp_path / "out").exists()
    # The same model exported with float32 inputs loads and is audited.
    onx = to_onnx(model, X.to_numpy("float32")[:1], options={"zipmap": False}, target_opset=17)
    (tmp_path / "gb32.onnx").write_bytes(onx.SerializeToString())
    code, err = _cli(capsys, d, str(tmp_path / "gb32.onnx"), "", tmp_path / "ok", "--feature-order", "{d}/order.txt")
    assert code == 0, err
