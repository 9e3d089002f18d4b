"""Model suite: registry, determinism, multi-class support, the torch ResMLP family."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.special import log_softmax
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from core.cfc.grouping import raw_origin_groups
from core.tabular.datasets import load_dataset, split_dataset, subsample_dataset
from core.tabular.models import MODEL_NAMES, MODELS, make_model
from core.tabular.preprocessing import fit_preprocessor
from core.tabular.resmlp import (
    FragilityRegularizedResMLPClassifier,
    ResMLPClassifier,
    _membership_matrix,
    attenuate_random_groups,
    fragility_regularized_loss,
)

# Small settings so that the whole suite fits the test budget.
FAST = {
    "logreg": {},
    "random_forest": {"n_estimators": 15},
    "extra_trees": {"n_estimators": 15},
    "hist_gb": {"max_iter": 15},
    "xgboost": {"n_estimators": 15},
    "lightgbm": {"n_estimators": 15},
    "catboost": {"iterations": 15},
    "mlp": {"hidden_layer_sizes": (32,), "max_iter": 100, "early_stopping": False},
    "resmlp": {"width": 16, "epochs": 3},
    "fr_resmlp": {"width": 16, "epochs": 3},
}
STOCHASTIC = ["random_forest", "extra_trees", "catboost", "mlp", "resmlp", "fr_resmlp"]


@pytest.fixture(autouse=True)
def _one_thread():
    """CI has 2 shared cores; OpenMP oversubscription makes tiny HistGradientBoosting fits
    100x slower (scikit-learn issue #30662). Results do not depend on the thread count."""
    with threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def data():
    """credit_data, 300 rows: numeric and categorical raw columns, real missing values."""
    ds = subsample_dataset(load_dataset("credit_data"), 300, seed=0)
    split = split_dataset(ds, seed=0)
    pre = fit_preprocessor(split.train, ds.numeric, ds.categorical)
    X_train, X_test = pre.transform(split.train), pre.transform(split.test)
    groups = raw_origin_groups(pre.transformer)
    return X_train, split.y_train, X_test, groups, X_train.mean(axis=0)


def _build(name, data, seed, **extra):
    X_train, _, _, groups, baseline = data
    params = {**FAST[name], **extra}
    if name == "fr_resmlp":
        params.update(groups=groups, baseline=baseline)
    return make_model(name, seed=seed, **params)


def _fit(name, data, seed, X, y, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny max_iter: sklearn's MLP warns about convergence
        return _build(name, data, seed, **extra).fit(X, y)


def _fit_predict(name, data, seed):
    X_train, y_train, X_test, _, _ = data
    model = _fit(name, data, seed, X_train, y_train)
    return model, model.predict_proba(X_test)


def test_registry_has_the_stable_short_names():
    assert MODEL_NAMES == (
        "logreg", "random_forest", "extra_trees", "hist_gb", "xgboost", "lightgbm", "catboost", "mlp", "resmlp",
        "fr_resmlp",
    )  # fmt: skip
    assert MODELS["fr_resmlp"].requires == ("groups", "baseline")
    assert {spec.family for spec in MODELS.values()} == {"linear", "tree ensemble", "boosting", "neural"}
    assert [n for n in MODEL_NAMES if MODELS[n].shap_explainer == "tree"] == [
        "random_forest", "extra_trees", "hist_gb", "xgboost", "lightgbm", "catboost",
    ]  # fmt: skip


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_same_seed_gives_identical_probabilities(data, name):
    model, P = _fit_predict(name, data, seed=7)
    _, P_again = _fit_predict(name, data, seed=7)
    np.testing.assert_array_equal(P, P_again)
    assert P.shape == (len(data[2]), 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-6)
    assert ((P >= 0) & (P <= 1)).all()
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert P.dtype == (np.float32 if name == "xgboost" else np.float64)


@pytest.mark.parametrize("name", STOCHASTIC)
def test_the_seed_matters_for_stochastic_models(data, name):
    _, P0 = _fit_predict(name, data, seed=0)
    _, P1 = _fit_predict(name, data, seed=1)
    assert not np.array_equal(P0, P1)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_multiclass_targets(data, name):
    X = data[0]
    y = np.digitize(X[:, 0] + X[:, 1], np.quantile(X[:, 0] + X[:, 1], [1 / 3, 2 / 3]))  # 3 balanced classes
    extra = {"epochs": 30, "early_stopping": False} if name.endswith("resmlp") else {}  # 3 epochs underfit
    model = _fit(name, data, 0, X, y, **extra)
    P = model.predict_proba(X)
    assert P.shape == (len(X), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    assert (P.argmax(axis=1) == y).mean() > 0.5  # learnable signal is picked up


def test_make_model_sets_seed_defaults_and_overrides():
    from lightgbm import LGBMClassifier
    from xgboost import XGBClassifier

    lgbm = make_model("lightgbm", seed=5)
    assert isinstance(lgbm, LGBMClassifier)  # the library class itself, so shap recognises it
    params = lgbm.get_params()
    assert (params["random_state"], params["n_jobs"], params["deterministic"], params["verbosity"]) == (5, 1, True, -1)
    xgb = make_model("xgboost", seed=3, max_depth=2)
    assert isinstance(xgb, XGBClassifier) and xgb.get_params()["max_depth"] == 2
    assert make_model("resmlp", seed=11).random_state == 11
    assert clone(make_model("fr_resmlp", seed=0, groups={"a": [0]}, baseline=[0.0])).get_params()["groups"] == {
        "a": [0]
    }


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("svm", {"seed": 0}, r"`name` must be one of \['logreg', .*got 'svm'"),
        ("logreg", {"seed": -1}, r"`seed` must be an int in \[0, 2\*\*32\); got -1"),
        ("logreg", {"seed": 1.5}, r"`seed` must be an int in \[0, 2\*\*32\); got 1\.5"),
        ("logreg", {"seed": None}, r"`seed` must be an int"),
        ("logreg", {"seed": 0, "random_state": 1}, r"Pass the seed as `seed`, not as `random_state`"),
        ("xgboost", {"seed": 0, "n_trees": 5}, r"Unknown parameter `n_trees` for model 'xgboost'; valid parameters:"),
        (
            "fr_resmlp",
            {"seed": 0, "baseline": [0.0]},
            r"Model 'fr_resmlp' requires `groups`, `baseline`; missing `groups`",
        ),
    ],
    ids=[
        "unknown model",
        "negative seed",
        "float seed",
        "no seed",
        "random_state",
        "unknown param",
        "fr without groups",
    ],
)
def test_make_model_rejects_bad_arguments(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_model(name, **kwargs)


def test_catboost_defaults_are_single_threaded_silent_and_seeded(tmp_path, monkeypatch):
    from catboost import CatBoostClassifier

    model = make_model("catboost", seed=9, depth=4)
    assert isinstance(model, CatBoostClassifier)
    params = model.get_params()
    assert (params["random_state"], params["thread_count"], params["depth"]) == (9, 1, 4)
    assert (params["verbose"], params["allow_writing_files"], params["iterations"]) == (False, False, 300)
    # any constructor parameter is accepted (CatBoost's get_params lists only the ones set)
    assert make_model("catboost", seed=0, l2_leaf_reg=5.0).get_params()["l2_leaf_reg"] == 5.0
    with pytest.raises(ValueError, match=r"Unknown parameter `n_trees` for model 'catboost'"):
        make_model("catboost", seed=0, n_trees=3)
    monkeypatch.chdir(tmp_path)
    make_model("catboost", seed=0, iterations=3).fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    assert list(tmp_path.iterdir()) == []  # no catboost_info/ training logs in the working directory


def test_catboost_is_deterministic_and_its_native_format_round_trips(data, tmp_path):
    """Same seed -> identical probabilities; CatBoost's own format (not a pickle) round-trips."""
    from catboost import CatBoostClassifier

    X_train, y_train, X_test, _, _ = data
    model = make_model("catboost", seed=4, iterations=30).fit(X_train, y_train)
    P = model.predict_proba(X_test)
    again = make_model("catboost", seed=4, iterations=30).fit(X_train, y_train).predict_proba(X_test)
    np.testing.assert_array_equal(P, again)
    path = tmp_path / "model.cbm"
    model.save_model(str(path), format="cbm")
    loaded = CatBoostClassifier()
    loaded.load_model(str(path), format="cbm")
    np.testing.assert_array_equal(loaded.predict_proba(X_test), P)


def test_catboost_group_shap_uses_the_tree_explainer_and_is_additive(data):
    import shap

    from core.cfc.evaluation import group_shap_concentration

    X_train, y_train, X_test, groups, _ = data
    model = make_model("catboost", seed=0, iterations=20).fit(X_train, y_train)
    res = group_shap_concentration(model, X_test, groups, explainer=MODELS["catboost"].shap_explainer)
    assert res.explainer == "tree" and res.note == ""
    values = shap.TreeExplainer(model).shap_values(X_test)
    expected = shap.TreeExplainer(model).expected_value
    raw = model.predict(X_test, prediction_type="RawFormulaVal")
    np.testing.assert_allclose(values.sum(axis=1) + expected, raw, atol=1e-6)  # SHAP on the log-odds
    # naive per-sample loop: the largest group's share of |SHAP|
    for i in range(5):
        totals = [np.abs(values[i, cols]).sum() for cols in groups.values()]
        assert res.scores[i] == pytest.approx(max(totals) / sum(totals))


# ------------------------------------------------------------------------------------------
# Torch ResMLP family
# ------------------------------------------------------------------------------------------


def _numpy_reference_loss(z, zt, y, alpha, beta):
    """SPEC A.7 loss written out in numpy from the formula."""
    lp, lq = log_softmax(z, axis=1), log_softmax(zt, axis=1)
    rows = np.arange(len(y))
    ce = -lp[rows, y].mean()
    kl_pq = (np.exp(lp) * (lp - lq)).sum(axis=1).mean()
    kl_qp = (np.exp(lq) * (lq - lp)).sum(axis=1).mean()

    def margin(logits):
        others = logits.copy()
        others[rows, y] = -np.inf
        return logits[rows, y] - others.max(axis=1)

    hinge = np.maximum(margin(z) - margin(zt), 0.0).mean()
    return ce + alpha * (kl_pq + kl_qp) + alpha * beta * hinge


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("alpha, beta", [(0.0, 1.0), (1.0, 1.0), (0.5, 3.0)])
def test_fragility_loss_matches_the_formula(n_classes, alpha, beta):
    rng = np.random.default_rng(n_classes)
    z, zt = rng.normal(size=(16, n_classes)) * 3, rng.normal(size=(16, n_classes)) * 3
    y = rng.integers(0, n_classes, 16)
    got = fragility_regularized_loss(
        torch.from_numpy(z), torch.from_numpy(zt), torch.from_numpy(y), alpha=alpha, beta=beta
    )
    assert float(got) == pytest.approx(_numpy_reference_loss(z, zt, y, alpha, beta), rel=1e-12)


def test_fragility_loss_pinned_value():
    # z = (2, 0), z~ = (0, 0), y = 0: CE = log(1 + e^-2). With s = sigmoid(2), p = (s, 1 - s) and
    # q = (1/2, 1/2): KL(p||q) + KL(q||p) = sum_c (p_c - q_c)(log p_c - log q_c) = (s - 1/2) * logit(s)
    # = 2 (s - 1/2). Margins m_0: 2 on z, 0 on z~, so the hinge is 2.
    s = 1 / (1 + np.exp(-2.0))
    sym_kl = 2 * (s - 0.5)
    expected = np.log1p(np.exp(-2.0)) + 1.0 * sym_kl + 1.0 * 0.5 * 2.0
    got = fragility_regularized_loss(
        torch.tensor([[2.0, 0.0]], dtype=torch.float64), torch.tensor([[0.0, 0.0]], dtype=torch.float64),
        torch.tensor([0]), alpha=1.0, beta=0.5,
    )  # fmt: skip
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_fragility_loss_reduces_to_cross_entropy_without_perturbation():
    z = torch.randn(8, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    ce = torch.nn.functional.cross_entropy(z, y)
    assert float(fragility_regularized_loss(z, z.clone(), y, alpha=5.0, beta=2.0)) == pytest.approx(
        float(ce), rel=1e-12
    )


def test_attenuation_moves_whole_chosen_groups_toward_the_baseline():
    groups = {"a": [0, 3], "b": [1], "c": [2, 4, 5], "d": [6]}
    membership = torch.from_numpy(_membership_matrix(groups, 7)).double()
    x = torch.randn(500, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    base = torch.linspace(-1, 1, 7, dtype=torch.float64)
    xt, chosen, lam = attenuate_random_groups(
        x, membership, base, lambda_max=0.4, max_subset=2, generator=torch.Generator().manual_seed(2)
    )
    sizes = chosen.sum(dim=1)
    assert sizes.min() == 1 and sizes.max() == 2 and set(sizes.tolist()) == {1, 2}
    assert float(lam.min()) >= 0 and float(lam.max()) <= 0.4
    group_list = list(groups.values())
    for i in range(0, 500, 37):  # naive per-row reference
        expected = x[i].clone()
        for g, cols in enumerate(group_list):
            if chosen[i, g]:
                expected[cols] = (1 - lam[i]) * x[i, cols] + lam[i] * base[cols]
        torch.testing.assert_close(xt[i], expected, rtol=1e-12, atol=1e-12)
    # every group is drawn about equally often
    freq = chosen.double().mean(dim=0)
    assert float(freq.max() - freq.min()) < 0.1
    again, _, _ = attenuate_random_groups(
        x, membership, base, lambda_max=0.4, max_subset=2, generator=torch.Generator().manual_seed(2)
    )
    assert torch.equal(xt, again)


@pytest.mark.parametrize(
    "groups, message",
    [
        ({"a": [0, 1], "b": [1, 2]}, r"column 1 is in 2 groups"),
        ({"a": [0], "b": [2]}, r"column 1 is in 0 groups"),
        ({"a": [0, 1, 2, 3]}, r"group 'a' must hold column indices in 0\.\.2"),
        ({"a": [], "b": [0, 1, 2]}, r"group 'a' is empty"),
        ({}, r"`groups` is empty"),
        (None, r"`groups` is required"),
    ],
    ids=["overlap", "gap", "out of range", "empty group", "no groups", "missing"],
)
def test_groups_must_partition_the_columns(groups, message):
    with pytest.raises(ValueError, match=message):
        _membership_matrix(groups, 3)


def test_fr_resmlp_validates_baseline_and_params(data):
    X_train, y_train, _, groups, _ = data
    with pytest.raises(ValueError, match=r"`baseline` must be a finite vector of shape \(\d+,\); got shape \(3,\)"):
        FragilityRegularizedResMLPClassifier(groups=groups, baseline=[0.0, 1.0, 2.0], epochs=1).fit(X_train, y_train)
    with pytest.raises(ValueError, match=r"`lambda_max` must be in \(0, 1\]; got 1\.5"):
        FragilityRegularizedResMLPClassifier(groups=groups, baseline=X_train.mean(0), lambda_max=1.5).fit(
            X_train, y_train
        )
    with pytest.raises(ValueError, match=r"`dropout` must be in \[0, 1\); got 1"):
        ResMLPClassifier(dropout=1).fit(X_train, y_train)
    with pytest.raises(ValueError, match=r"`epochs` must be an int >= 1; got 0"):
        ResMLPClassifier(epochs=0).fit(X_train, y_train)


def test_resmlp_validates_inputs(data):
    X_train, y_train, _, _, _ = data
    bad = X_train.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ResMLPClassifier(epochs=1).fit(bad, y_train)
    with pytest.raises(ValueError, match=r"`y` must hold at least two classes"):
        ResMLPClassifier(epochs=1).fit(X_train, np.zeros(len(X_train), dtype=int))
    model = ResMLPClassifier(width=8, epochs=1).fit(X_train, y_train)
    with pytest.raises(ValueError, match=r"X has 3 features, but ResMLPClassifier is expecting \d+ features"):
        model.predict_proba(X_train[:, :3])


def test_torch_global_state_is_restored_after_fit_and_predict(data):
    X_train, y_train, _, _, _ = data
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    model = ResMLPClassifier(width=8, epochs=2, n_threads=1).fit(X_train, y_train)
    model.predict_proba(X_train)
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.get_rng_state(), state)


def test_early_stopping_keeps_the_best_epoch(data):
    X_train, y_train, _, _, _ = data
    model = ResMLPClassifier(width=32, epochs=60, patience=3, random_state=0).fit(X_train, y_train)
    curve = model.validation_loss_curve_
    assert len(curve) == len(model.loss_curve_) < 60  # stopped early
    assert model.best_epoch_ == int(np.argmin(curve)) + 1
    assert len(curve) - model.best_epoch_ == 3  # exactly `patience` epochs without improvement
    fixed = ResMLPClassifier(width=8, epochs=4, early_stopping=False).fit(X_train, y_train)
    assert len(fixed.loss_curve_) == 4 and fixed.validation_loss_curve_ == []


def test_fragility_regularisation_reduces_sensitivity_to_group_removal(data):
    """The regulariser does what it is for: removing one group moves the prediction less."""
    X_train, y_train, X_test, groups, baseline = data
    common = dict(width=32, epochs=25, early_stopping=False, random_state=0)
    plain = ResMLPClassifier(**common).fit(X_train, y_train)
    regularised = FragilityRegularizedResMLPClassifier(groups=groups, baseline=baseline, alpha=3.0, **common).fit(
        X_train, y_train
    )

    def mean_shift(model):
        p = model.predict_proba(X_test)[:, 1]
        shifts = []
        for cols in groups.values():
            removed = X_test.copy()
            removed[:, cols] = baseline[cols]
            shifts.append(np.abs(model.predict_proba(removed)[:, 1] - p).mean())
        return float(np.mean(shifts))

    assert mean_shift(regularised) < 0.5 * mean_shift(plain)
