"""audit_model on models users bring: pipelines, raw models, multi-class and string labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cfc"))
from cfc_reference import naive_certificate  # noqa: E402
from own_models import as_xgboost_labels, default_tables, hist_gb_pipeline, raw_logreg, raw_xgboost, wine_tables  # noqa: E402

from core import audit_model  # noqa: E402
from core.cfc import Protocol  # noqa: E402
from core.scale.certify import load_certify_task  # noqa: E402
from core.tabular.own_model import RawSpace  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def default():
    return default_tables()


def _check_naive(result, n_rows=20):
    """Every certificate field of the first rows equals the one-sample-at-a-time reference."""
    p = result.protocol
    K = p.resolved_depth(len(result.groups))
    for i in range(n_rows):
        ref = naive_certificate(
            result.model.predict_proba,
            result.X_test[i],
            result.groups,
            result.baseline,
            depth=K,
            severities=p.severities,
            operators=p.operators,
            weights=p.weights,
        )
        row = result.certificates.table.iloc[i]
        assert row["pred"] == ref["pred"] and row["flip_budget"] == ref["flip_budget"]
        assert list(row["path"]) == ref["path"]
        for key in ("margin", "rcma", "u", "fds"):
            np.testing.assert_allclose(row[key], ref[key], rtol=1e-9, atol=1e-12, err_msg=key)
        for op in p.operators:
            assert row[f"lambda_star_{op}"] == ref["lambda_star"][op]


def test_pipeline_groups_are_traced_and_certificates_equal_the_naive_twin(default):
    train, test = default
    pipe = hist_gb_pipeline(train)
    result = audit_model(pipe, train, test, target="default")
    assert result.space_kind == "pipeline"
    # OneHotEncoder(student: No, Yes) comes first, then the two scaled numbers.
    assert result.groups == {"student": [0, 1], "balance": [2], "income": [3]}
    X_train = pipe[:-1].transform(train)
    np.testing.assert_allclose(result.baseline, X_train.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(result.X_test, pipe[:-1].transform(test))
    assert result.dataset.classes == ("No", "Yes")
    np.testing.assert_array_equal(result.y_test, (test["default"] == "Yes").to_numpy().astype(int))
    np.testing.assert_allclose(result.proba_test, pipe.predict_proba(test), rtol=0, atol=1e-12)
    assert list(result.certificates.table.index) == list(test.index)
    _check_naive(result)


def test_raw_model_certificates_run_in_raw_space(default):
    train, test = default
    model = raw_logreg(train)
    result = audit_model(model, train, test, target="default", protocol=Protocol(baseline="median"))
    assert result.space_kind == "raw"
    assert result.groups == {"balance": [0], "income": [1]}
    np.testing.assert_allclose(result.baseline, train[["balance", "income"]].median().to_numpy())
    np.testing.assert_array_equal(result.X_test, test[["balance", "income"]].to_numpy())
    _check_naive(result)


def test_multiclass_string_labels_end_to_end(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, test = wine_tables()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(
        train.drop(columns="target"), train["target"]
    )
    result = audit_model(pipe, train, test, target="target")
    assert result.dataset.classes == ("class_0", "class_1", "class_2")
    assert result.proba_test.shape == (len(test), 3)
    assert set(result.certificates.table["pred"]) <= {0, 1, 2} and len(set(result.certificates.table["pred"])) == 3
    assert len(result.groups) == 13
    _check_naive(result, n_rows=10)
    out = result.save(tmp_path / "wine")
    table = pd.read_csv(out / "certificates.csv")
    # The folder names the classes; the engine's table keeps predict_proba column indices.
    assert table["y_true"].tolist() == test["target"].tolist()
    np.testing.assert_array_equal(table["pred"], result.class_of(result.certificates.table["pred"].to_numpy()))
    assert json.loads((out / "protocol.json").read_text())["certificate_fingerprint"] == result.fingerprint
    assert "Fragility audit" in (out / "summary.md").read_text()


def test_raw_space_categories_decode_as_documented():
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0, 6.0], "job": ["b", "a", "b", None], "flag": [True, False, True, True]})
    space = RawSpace.fit(["x", "job", "flag"], [train])
    assert space.categories == {"job": (None, "a", "b"), "flag": (False, True)}
    X = space.transform(train)
    assert X.tolist()[1] == [2.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    groups = space.groups()
    assert groups == {"x": [0], "job": [1, 2, 3], "flag": [4, 5]}
    b = space.baseline(X, groups, "mean")
    assert b.tolist() == [3.0, 0.0, 0.0, 1.0, 0.0, 1.0]  # mean of x; mode "b"; mode True
    lam = np.array([0.4, 0.5, 0.6])[:, None]
    attenuated = (1 - lam) * X[1] + lam * b  # row 1 has job "a", flag False
    back = space.decode(attenuated)
    assert back["job"].tolist() == ["a", "a", "b"]  # a tie at λ = 0.5 goes to the lower index ("a")
    assert back["flag"].tolist() == [False, False, True]
    assert back["x"].tolist() == pytest.approx([2.4, 2.5, 2.6])
    assert back["job"].isna().sum() == 0 and space.decode(X)["job"].isna().tolist() == [False, False, False, True]


def test_xgboost_model_and_its_saved_task_give_the_same_fingerprint(default, tmp_path):
    train, test = (as_xgboost_labels(t) for t in default)
    result = audit_model(raw_xgboost(train), train, test, target="default")
    assert result.dataset.classes == (0, 1)
    result.save(tmp_path / "xgb")
    task = load_certify_task(tmp_path / "xgb")
    assert task.fingerprint() == result.fingerprint
    np.testing.assert_array_equal(task.model.predict_proba(result.X_test), result.model.predict_proba(result.X_test))


def test_pipeline_task_round_trip(default, tmp_path):
    train, test = default
    result = audit_model(hist_gb_pipeline(train), train, test, target="default")
    out = result.save(tmp_path / "pipe")
    assert sorted(p.name for p in out.iterdir()) == [
        "_task.zip",
        "certificates.csv",
        "certificates.parquet",
        "evaluation.json",
        "protocol.json",
        "summary.md",
        "test.parquet",
        "train.parquet",
        "view",
    ]
    task = load_certify_task(out)
    assert task.fingerprint() == result.fingerprint
    assert task.classes == ("No", "Yes") and task.target == "default"
    with pytest.raises(ValueError, match="already exists and is not an empty folder"):
        result.save(out)


# --------------------------------------------------------------------------------------------
# Bad input: a clear message, nothing written
# --------------------------------------------------------------------------------------------
class _Proba:
    classes_ = np.array(["No", "Yes"])

    def __init__(self, fn):
        self.fn = fn

    def predict_proba(self, X):
        return self.fn(X)


def _half(X):
    return np.full((len(X), 2), 0.5)


@pytest.mark.parametrize(
    "model, match",
    [
        (object(), "has no predict_proba"),
        (_Proba(lambda X: np.full((len(X), 2), 0.7)), "sum to 1"),
        (type("Wrong", (_Proba,), {"classes_": np.array(["no", "yes"])})(_half), "not one of the model's classes"),
        (_Proba(lambda X: (_ for _ in ()).throw(RuntimeError("boom"))), "predict_proba failed on the test rows"),
    ],
)
def test_bad_models_are_named(default, tmp_path, model, match):
    train, test = default
    with pytest.raises(ValueError, match=match):
        audit_model(model, train, test, target="default")


def test_model_failing_on_a_baseline_replacement_names_the_group(default):
    train, test = default
    mean_income = train["income"].mean()

    def fragile(frame):
        if np.isclose(frame["income"].to_numpy(), mean_income).any():
            raise ValueError("income out of range")
        return _half(frame)

    model = _Proba(fragile)
    model.feature_names_in_ = np.array(["balance", "income"], dtype=object)
    with pytest.raises(ValueError, match="fails when group 'income' is replaced by its baseline"):
        audit_model(model, train, test, target="default")


def test_missing_columns_and_labels_are_named(default):
    train, test = default
    model = raw_logreg(train)
    with pytest.raises(ValueError, match=r"`test` lacks the columns \['income'\]"):
        audit_model(model, train, test.drop(columns="income"), target="default")
    with pytest.raises(ValueError, match="`target` 'nope' is not a column"):
        audit_model(model, train, test, target="nope")
    bad = test.copy()
    bad.iloc[3, bad.columns.get_loc("default")] = "Maybe"
    with pytest.raises(ValueError, match="label 'Maybe'.*not one of the model's classes"):
        audit_model(model, train, bad, target="default")


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    st.lists(
        st.tuples(st.floats(-1e6, 1e6), st.sampled_from(["x", "y", "z", None]), st.booleans()), min_size=1, max_size=30
    )
)
def test_raw_space_decodes_what_it_encodes(rows):
    frame = pd.DataFrame(rows, columns=["num", "text", "flag"])
    space = RawSpace.fit(["num", "text", "flag"], [frame])
    back = space.decode(space.transform(frame))
    np.testing.assert_array_equal(back["num"].to_numpy(), frame["num"].to_numpy())
    assert back["text"].where(back["text"].notna(), None).tolist() == frame["text"].tolist()
    assert back["flag"].tolist() == frame["flag"].tolist()
