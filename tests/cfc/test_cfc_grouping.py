"""Grouping: raw-origin tracing checked against what the fitted transform actually does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.decomposition import PCA
from sklearn.feature_selection import VarianceThreshold
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MinMaxScaler,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from core.cfc import (
    domain_block_groups,
    group_correlation,
    raw_origin_groups,
    redundancy_merged_groups,
    trace_feature_origins,
    validate_groups,
)


def _raw_frame(n=120, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "income": rng.normal(50, 10, n),
            "job": rng.choice(
                ["clerk", "nurse", "pilot", "chef", "rare1", "rare2"], n, p=[0.3, 0.3, 0.2, 0.16, 0.02, 0.02]
            ),
            "age": rng.integers(18, 80, n).astype(float),
            "empty": np.full(n, np.nan),
            "city": rng.choice(["north", "south", "east"], n),
            "score": rng.normal(size=n),
            "flag": rng.integers(0, 2, n).astype(float),
        }
    )
    df.loc[rng.random(n) < 0.1, "income"] = np.nan
    df.loc[rng.random(n) < 0.1, "job"] = None
    df.loc[rng.random(n) < 0.05, "score"] = np.nan
    return df.astype({"job": object, "city": object})


def _perturbations(s: pd.Series):
    yield s.iloc[::-1].to_numpy()
    yield np.roll(s.to_numpy(), 7)
    yield np.full(len(s), np.nan, dtype=s.dtype if s.dtype == object else float)
    if s.dtype == object:
        yield np.full(len(s), "never-seen", dtype=object)
    else:
        yield np.full(len(s), 1.0)
        yield s.to_numpy() * 10 + 7


def _observed_groups(preprocessor, df):
    """Which output columns move when one raw column is perturbed — found by running transform."""
    base = np.asarray(preprocessor.transform(df), dtype=float)
    observed = {}
    for col in df.columns:
        moved = np.zeros(base.shape[1], dtype=bool)
        for values in _perturbations(df[col]):
            d2 = df.copy()
            d2[col] = values
            try:
                out = np.asarray(preprocessor.transform(d2), dtype=float)
            except ValueError:  # e.g. NaN where a step does not accept missing values
                continue
            moved |= ~np.isclose(out, base, equal_nan=True).all(axis=0)
        if moved.any():
            observed[col] = np.flatnonzero(moved).tolist()
    return observed


def _column_transformer(remainder="passthrough"):
    num = make_pipeline(SimpleImputer(add_indicator=True), StandardScaler())
    cat = make_pipeline(
        SimpleImputer(strategy="constant", fill_value="missing", add_indicator=True),
        OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=5, sparse_output=False),
    )
    return ColumnTransformer(
        [
            ("num", num, ["income", "empty", "score"]),
            ("cat", cat, make_column_selector(pattern="^job$")),
            ("city", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["city"]),
            (
                "age",
                KBinsDiscretizer(n_bins=4, encode="onehot-dense", quantile_method="averaged_inverted_cdf"),
                ["age"],
            ),
        ],
        remainder=remainder,
    )


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("remainder", ["passthrough", "drop", MinMaxScaler()], ids=["passthrough", "drop", "scaler"])
def test_raw_origin_groups_match_the_transform(remainder):
    df = _raw_frame()
    ct = _column_transformer(remainder).fit(df)
    groups = raw_origin_groups(ct)
    d = ct.transform(df).shape[1]
    assert validate_groups(groups, d) == groups
    assert groups == _observed_groups(ct, df)
    # Declared order follows the raw columns; the all-missing column keeps only its indicator.
    assert list(groups)[:3] == ["income", "job", "age"]
    assert len(groups["empty"]) == 1 and len(groups["job"]) >= 4
    assert ("flag" in groups) == (remainder != "drop")


def test_pipeline_around_a_column_transformer_and_feature_union():
    df = _raw_frame()[["income", "score", "city"]]
    inner = ColumnTransformer(
        [
            ("num", FeatureUnion([("imp", SimpleImputer()), ("ind", MissingIndicator())]), ["income", "score"]),
            ("cat", OrdinalEncoder(), ["city"]),
        ]
    )
    pre = Pipeline([("ct", inner), ("scale", StandardScaler()), ("var", VarianceThreshold(0.0))]).fit(df)
    groups = raw_origin_groups(pre)
    assert groups == _observed_groups(pre, df)
    assert groups == {"income": [0, 2], "score": [1, 3], "city": [4]}


def test_bare_pipeline_and_bare_encoder_on_arrays():
    X = np.array([[1.0, np.nan], [2.0, 3.0], [np.nan, 4.0], [5.0, 6.0]])
    pipe = make_pipeline(SimpleImputer(add_indicator=True), StandardScaler()).fit(X)
    assert raw_origin_groups(pipe) == {"x0": [0, 2], "x1": [1, 3]}
    assert raw_origin_groups(pipe, input_features=["a", "b"]) == {"a": [0, 2], "b": [1, 3]}
    enc = OneHotEncoder(drop="first").fit(np.array([["a", "u"], ["b", "v"], ["c", "u"]], dtype=object))
    assert raw_origin_groups(enc) == {"x0": [0, 1], "x1": [2]}
    assert trace_feature_origins(enc) == ["x0", "x0", "x1"]


@pytest.mark.parametrize(
    "step,name",
    [
        (PCA(n_components=2), "PCA"),
        (Normalizer(), "Normalizer"),
        (FunctionTransformer(np.log1p), "FunctionTransformer"),
    ],
)
def test_untraceable_steps_are_refused(step, name):
    X = np.abs(np.random.default_rng(0).normal(size=(20, 3)))
    pre = make_pipeline(StandardScaler(), step).fit(X) if name != "FunctionTransformer" else make_pipeline(step).fit(X)
    with pytest.raises(ValueError, match=name):
        raw_origin_groups(pre)


def test_unfitted_preprocessor_is_refused():
    with pytest.raises(ValueError, match="not fitted"):
        raw_origin_groups(ColumnTransformer([("s", StandardScaler(), [0])]))
    with pytest.raises(ValueError, match="`input_features` has 1 names"):
        raw_origin_groups(StandardScaler().fit(np.ones((3, 2))), input_features=["a"])


# --------------------------------------------------------------------------------------------
# Domain blocks
# --------------------------------------------------------------------------------------------
def test_domain_blocks():
    raw = {"age": [0], "job": [1, 2, 3], "income": [4, 5], "city": [6]}
    blocks = domain_block_groups(raw, {"age": "person", "job": "work", "income": "work", "city": "person"})
    assert blocks == {"person": [0, 6], "work": [1, 2, 3, 4, 5]}
    kept = domain_block_groups(raw, {"job": "work", "income": "work"}, unmapped="keep")
    assert kept == {"age": [0], "work": [1, 2, 3, 4, 5], "city": [6]}
    with pytest.raises(ValueError, match=r"no block for raw columns \['age', 'city'\]"):
        domain_block_groups(raw, {"job": "work", "income": "work"})
    with pytest.raises(ValueError, match=r"raw columns \['salary'\] that are not groups"):
        domain_block_groups(raw, {"salary": "work"}, unmapped="keep")
    with pytest.raises(ValueError, match="clashes with the block name 'age'"):
        domain_block_groups(raw, {"job": "age"}, unmapped="keep")
    with pytest.raises(ValueError, match="`unmapped` must be one of"):
        domain_block_groups(raw, {}, unmapped="drop")


# --------------------------------------------------------------------------------------------
# Redundancy merging
# --------------------------------------------------------------------------------------------
def _correlated(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = a + 0.1 * rng.normal(size=n)  # ρ(a, b) ≈ 0.995
    c = a + 1.2 * rng.normal(size=n)  # ρ(a, c) ≈ 0.64: below 0.7
    d = rng.normal(size=n)
    level = np.digitize(d, [-0.6, 0.0, 0.6])  # a 4-level categorical carried by d
    e = np.eye(4)[level]
    X = np.column_stack([a, b, c, d, e])
    groups = {"a": [0], "b": [1], "c": [2], "d": [3], "e": [4, 5, 6, 7]}
    return X, groups


def test_group_correlation_is_the_canonical_correlation():
    X, groups = _correlated()
    R = group_correlation(X, groups)
    np.testing.assert_allclose(np.diag(R), 1.0)
    np.testing.assert_allclose(R, R.T)
    # Singletons: |Pearson r|.
    np.testing.assert_allclose(R[0, 1], abs(np.corrcoef(X[:, 0], X[:, 1])[0, 1]), rtol=1e-10)
    np.testing.assert_allclose(R[0, 2], abs(np.corrcoef(X[:, 0], X[:, 2])[0, 1]), rtol=1e-10)
    # A singleton against a block: the square root of the R² of regressing it on the block.
    design = np.column_stack([np.ones(len(X)), X[:, 4:8]])
    coef, *_ = np.linalg.lstsq(design, X[:, 3], rcond=None)
    resid = X[:, 3] - design @ coef
    r2 = 1 - resid.var() / X[:, 3].var()
    np.testing.assert_allclose(R[3, 4], np.sqrt(r2), rtol=1e-8)


def test_redundancy_merging_uses_complete_linkage_at_the_threshold():
    X, groups = _correlated()
    merged = redundancy_merged_groups(X, groups, threshold=0.7)
    assert merged == {"a+b": [0, 1], "c": [2], "d+e": [3, 4, 5, 6, 7]}
    assert redundancy_merged_groups(X, groups, threshold=0.999) == groups
    # Lower threshold: c joins a and b (every pair of the three is now above it).
    assert list(redundancy_merged_groups(X, groups, threshold=0.6)) == ["a+b+c", "d+e"]


def test_redundancy_merging_does_not_chain():
    # A chain a – b – c: ρ(a, b) ≈ 0.74 and ρ(b, c) ≈ 0.67 pass the threshold 0.6, ρ(a, c) ≈ 0
    # does not. Complete linkage merges only the strongest pair; single linkage would chain all three.
    rng = np.random.default_rng(3)
    a, c = rng.normal(size=(2, 5000))
    b = a + 0.9 * c
    X = np.column_stack([a, b, c])
    groups = {"a": [0], "b": [1], "c": [2]}
    R = group_correlation(X, groups)
    assert R[0, 1] > R[1, 2] > 0.6 > 0.1 > R[0, 2]
    assert redundancy_merged_groups(X, groups, threshold=0.6) == {"a+b": [0, 1], "c": [2]}


def test_constant_group_is_never_merged():
    X, groups = _correlated(n=200)
    X = np.column_stack([X, np.ones(len(X))])
    groups = {**groups, "const": [8]}
    R = group_correlation(X, groups)
    assert (R[-1, :-1] == 0).all()
    assert "const" in redundancy_merged_groups(X, groups)


def test_redundancy_merging_bad_input():
    X, groups = _correlated(n=50)
    with pytest.raises(ValueError, match=r"`threshold` must be a number in \(0, 1\]"):
        redundancy_merged_groups(X, groups, threshold=1.5)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="found nan at row 3, column 2"):
        redundancy_merged_groups(X, groups)


def test_build_groups_dispatches_every_rule():
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from core.cfc.grouping import build_groups

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 4.0, 6.0, 8.1], "c": ["x", "y", "x", "z"]})
    pre = ColumnTransformer([("num", StandardScaler(), ["a", "b"]), ("cat", OneHotEncoder(), ["c"])]).fit(frame)
    X = pre.transform(frame)
    assert build_groups("raw_origin", pre, X) == {"a": [0], "b": [1], "c": [2, 3, 4]}
    blocks = {"a": "size", "b": "size", "target": "ignored"}
    assert build_groups("domain_block", pre, X, blocks=blocks) == {"size": [0, 1], "c": [2, 3, 4]}
    merged = build_groups("redundancy_merged", pre, X, threshold=0.9)
    assert sorted(map(sorted, merged.values())) == [[0, 1], [2, 3, 4]]  # a and b are collinear
    with pytest.raises(ValueError, match="needs `blocks`"):
        build_groups("domain_block", pre, X)
    with pytest.raises(ValueError, match="`rule` must be one of"):
        build_groups("by_name", pre, X)
