"""Label-channel stressors and held-out brittle labels (SPEC A.5)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.cfc.stressors as stressors
from core._rng import as_generator
from core.cfc.stressors import (
    BrittleLabels,
    LabelChannel,
    bounded_noise,
    brittle_labels,
    dropout_coordinates,
    mask_groups,
    naturalistic_labels,
)

GROUPS = {"a": [0, 1], "b": [2], "c": [3, 4]}
BASELINE = np.array([0.0, 0.0, 0.5, 0.0, 0.0])
W = np.array([[2.0, 1.0, -1.0, 0.5, 0.0], [-1.0, 0.5, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0, -1.0]])


def softmax_model(Z):
    """A 3-class linear-softmax model on 5 features."""
    logits = np.asarray(Z) @ W.T
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(7).normal(scale=2.0, size=(40, 5))


NOISE_SCALE = np.array([1.0, 0.5, 0.0, 2.0, 1.0])


# ------------------------------------------------------------------------------------------
# Declaration
# ------------------------------------------------------------------------------------------
def test_channel_settings_in_declaration_order():
    ch = LabelChannel(stressors=("bounded_noise", "group_masking"), masking_rates=(0.2,), noise_scales=(0.1, 0.3))
    assert ch.settings == (("bounded_noise", 0.1), ("bounded_noise", 0.3), ("group_masking", 0.2))
    assert ch.to_dict()["stressors"] == ["bounded_noise", "group_masking"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stressors": ("masking",)}, "one of"),
        ({"stressors": ()}, "at least one"),
        ({"stressors": ("group_masking", "group_masking")}, "repeat"),
        ({"masking_rates": (0.0,)}, r"`masking_rates` must be a non-empty tuple of values in \(0, 1.0\]"),
        ({"dropout_rates": (1.5,)}, "dropout_rates"),
        ({"noise_scales": ()}, "noise_scales"),
        ({"n_draws": 0}, "`n_draws` must be a positive int; got 0"),
        ({"tau_p": 1.2}, "tau_p"),
        ({"tau_kappa": 0.0}, "tau_kappa"),
    ],
    ids=["unknown", "empty", "repeat", "zero-rate", "rate>1", "empty-grid", "draws", "tau_p", "tau_kappa"],
)
def test_channel_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LabelChannel(**kwargs)


def test_thresholds_default_to_spec_values():
    # SPEC A.5: τ_p = 0.90, τ_κ = 0.50, for the stochastic and the naturalistic channel alike.
    ch = LabelChannel()
    assert (ch.tau_p, ch.tau_kappa) == (0.90, 0.50)
    defaults = inspect.signature(naturalistic_labels).parameters
    assert (defaults["tau_p"].default, defaults["tau_kappa"].default) == (0.90, 0.50)


def test_confidence_exactly_tau_p_is_high_confidence():
    # b(x) needs p̂ ≥ τ_p (inclusive). p = (0.9, 0.1) gives p̂ = 0.9 exactly; removing the only
    # group moves p to (0.2, 0.8), a flip, so both rows are brittle iff p̂ ≥ τ_p is inclusive.
    def model(Z):
        p1 = np.where(np.asarray(Z)[:, 0] > 0.5, 0.1, 0.8)
        return np.column_stack([1.0 - p1, p1])

    X = np.ones((2, 1))
    res = naturalistic_labels(model, X, {"a": [0]}, np.zeros(1), ["a"])
    assert res.confidence.tolist() == [0.9, 0.9]
    assert res.high_confidence.all() and res.labels.all()
    strict = naturalistic_labels(model, X, {"a": [0]}, np.zeros(1), ["a"], tau_p=np.nextafter(0.9, 1.0))
    assert not strict.labels.any()


# ------------------------------------------------------------------------------------------
# Stressors
# ------------------------------------------------------------------------------------------
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.3, 0.7, 1.0]))
def test_masking_replaces_whole_groups(seed, rate):
    X = np.random.default_rng(seed).normal(size=(25, 5)) + 10.0  # never equal to the baseline
    Z = mask_groups(X, GROUPS, BASELINE, rate, seed=seed)
    for cols in GROUPS.values():
        replaced = Z[:, cols] == BASELINE[cols]
        kept = Z[:, cols] == X[:, cols]
        assert (replaced.all(axis=1) | kept.all(axis=1)).all()  # all of a group or none of it
        assert (replaced.all(axis=1) ^ kept.all(axis=1)).all()
    if rate == 0.0:
        np.testing.assert_array_equal(Z, X)
    if rate == 1.0:
        np.testing.assert_array_equal(Z, np.broadcast_to(BASELINE, X.shape))


def test_masking_and_dropout_rates_are_respected():
    X = np.ones((20000, 5)) * 3.0
    masked = mask_groups(X, GROUPS, BASELINE, 0.3, seed=1)
    share = (masked[:, [0, 2, 3]] != 3.0).mean(axis=0)  # one column per group
    np.testing.assert_allclose(share, 0.3, atol=0.015)
    dropped = dropout_coordinates(X, BASELINE, 0.2, seed=1)
    np.testing.assert_allclose((dropped != 3.0).mean(axis=0), 0.2, atol=0.015)


@given(st.integers(0, 2**32 - 1))
def test_dropout_sets_single_coordinates(seed):
    X = np.random.default_rng(seed).normal(size=(30, 5)) + 10.0
    Z = dropout_coordinates(X, BASELINE, 0.5, seed=seed)
    assert ((Z == X) | (Z == BASELINE)).all()


@given(st.integers(0, 2**32 - 1), st.floats(0.0, 3.0))
def test_noise_is_bounded_and_spares_zero_scale_columns(seed, sigma):
    X = np.random.default_rng(seed).normal(size=(30, 5))
    Z = bounded_noise(X, NOISE_SCALE, sigma, seed=seed)
    assert (np.abs(Z - X) <= sigma * NOISE_SCALE + 1e-12).all()
    np.testing.assert_array_equal(Z[:, 2], X[:, 2])


def test_noise_is_symmetric_and_uniform_on_the_whole_interval():
    # U(−σ, σ)·scale: the noise/(σ·scale) must spread evenly over [−1, 1] (not one-sided).
    X = np.zeros((20000, 5))
    sigma = 0.25
    Z = bounded_noise(X, NOISE_SCALE, sigma, seed=3)
    u = Z[:, NOISE_SCALE > 0] / (sigma * NOISE_SCALE[NOISE_SCALE > 0])
    counts = np.array([np.histogram(col, bins=4, range=(-1.0, 1.0))[0] for col in u.T])
    np.testing.assert_allclose(counts / u.shape[0], 0.25, atol=0.015)  # 4 equal quarters of [−1, 1]


def test_stressors_reproducible_from_seed():
    X = np.random.default_rng(0).normal(size=(10, 5))
    np.testing.assert_array_equal(
        mask_groups(X, GROUPS, BASELINE, 0.5, seed=3), mask_groups(X, GROUPS, BASELINE, 0.5, seed=3)
    )
    assert not np.array_equal(
        mask_groups(X, GROUPS, BASELINE, 0.5, seed=3), mask_groups(X, GROUPS, BASELINE, 0.5, seed=4)
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X: mask_groups(X, {"a": [0, 1]}, BASELINE, 0.2, seed=0), "columns"),
        (lambda X: mask_groups(X, GROUPS, BASELINE[:3], 0.2, seed=0), r"`baseline` must have shape \(5,\)"),
        (lambda X: mask_groups(X, GROUPS, BASELINE, 1.2, seed=0), r"`rate` must be a probability in \[0, 1\]; got 1.2"),
        (lambda X: dropout_coordinates(X, BASELINE, 0.2, seed=None), "seed"),
        (lambda X: bounded_noise(X, NOISE_SCALE[:2], 0.2, seed=0), r"`noise_scale` must have shape \(5,\)"),
        (lambda X: bounded_noise(X, -NOISE_SCALE, 0.2, seed=0), "non-negative"),
        (lambda X: bounded_noise(X, NOISE_SCALE, -1.0, seed=0), "`sigma` must be non-negative"),
        (lambda X: dropout_coordinates(np.where(X > 0, np.nan, X), BASELINE, 0.2, seed=0), "finite"),
    ],
    ids=["partition", "baseline", "rate", "seed-none", "scale-shape", "scale-negative", "sigma", "nan-X"],
)
def test_stressor_bad_input(X, call, match):
    with pytest.raises(ValueError, match=match):
        call(X)


# ------------------------------------------------------------------------------------------
# Brittle labels against a per-sample naive twin
# ------------------------------------------------------------------------------------------
def _naive_labels(X, channel, seed):
    """Per-sample, per-draw loop with the documented child-stream layout."""
    settings = channel.settings
    H = channel.n_draws
    children = as_generator(seed).spawn(len(settings) * H)
    stressed = []
    for b, rng in enumerate(children):
        name, level = settings[b // H]
        if name == "group_masking":
            stressed.append(mask_groups(X, GROUPS, BASELINE, level, seed=rng))
        elif name == "within_group_dropout":
            stressed.append(dropout_coordinates(X, BASELINE, level, seed=rng))
        else:
            stressed.append(bounded_noise(X, NOISE_SCALE, level, seed=rng))
    labels = []
    for i in range(X.shape[0]):
        p = softmax_model(X[i : i + 1])[0]
        y = int(np.argmax(p))
        logp = np.log(p)
        m = logp[y] - np.max(np.delete(logp, y))
        brittle = False
        for Z in stressed:
            q = softmax_model(Z[i : i + 1])[0]
            logq = np.log(q)
            m2 = logq[y] - np.max(np.delete(logq, y))
            kappa = max(0.0, (m - m2) / (abs(m) + 1e-8))
            brittle |= (int(np.argmax(q)) != y) or kappa >= channel.tau_kappa
        labels.append(bool(p.max() >= channel.tau_p and brittle))
    return np.array(labels)


@pytest.mark.parametrize("tau_p", [0.0, 0.6, 0.9])
def test_brittle_labels_match_naive_loop(X, tau_p):
    channel = LabelChannel(masking_rates=(0.1, 0.3), noise_scales=(0.2,), n_draws=2, tau_p=tau_p)
    res = brittle_labels(softmax_model, X, GROUPS, BASELINE, channel=channel, noise_scale=NOISE_SCALE, seed=11)
    np.testing.assert_array_equal(res.labels, _naive_labels(X, channel, 11))
    assert 0 < res.labels.sum() < res.high_confidence.sum()  # both outcomes occur
    assert res.n_forward == X.shape[0] * 5 * 2
    assert res.hits.shape == (X.shape[0], 5)
    np.testing.assert_array_equal(res.labels, res.high_confidence & res.hits.any(axis=1))


def test_labels_do_not_depend_on_batch_size_and_are_reproducible(X):
    kw = dict(noise_scale=NOISE_SCALE, seed=5)
    ref = brittle_labels(softmax_model, X, GROUPS, BASELINE, **kw)
    for batch_size in (1, 7, 40, 1000):
        other = brittle_labels(softmax_model, X, GROUPS, BASELINE, batch_size=batch_size, **kw)
        for field in ("labels", "hits", "flip_share"):
            np.testing.assert_array_equal(getattr(ref, field), getattr(other, field))
        # BLAS may round a matrix product differently for another number of rows.
        np.testing.assert_allclose(ref.max_collapse, other.max_collapse, rtol=1e-12)
    again = brittle_labels(softmax_model, X, GROUPS, BASELINE, **kw)
    np.testing.assert_array_equal(ref.max_collapse, again.max_collapse)
    different = brittle_labels(softmax_model, X, GROUPS, BASELINE, noise_scale=NOISE_SCALE, seed=6)
    assert not np.array_equal(ref.max_collapse, different.max_collapse)


def test_model_calls_are_batched(X):
    calls = []

    def spy(Z):
        calls.append(Z.shape[0])
        return softmax_model(Z)

    brittle_labels(spy, X, GROUPS, BASELINE, noise_scale=NOISE_SCALE, seed=0, batch_size=400)
    # 1 call for the clean inputs, then 6 settings x 3 draws x 40 rows = 720 rows in 400-row calls.
    assert calls == [40, 400, 320]


def test_groups_the_model_ignores_never_make_a_sample_brittle():
    # Class 0 iff feature 0 > 0; the other groups carry nothing.
    def model(Z):
        p0 = np.where(Z[:, 0] > 0, 0.99, 0.01)
        return np.column_stack([p0, 1 - p0])

    X = np.column_stack([np.full(20, 3.0), np.random.default_rng(1).normal(size=(20, 4))])
    only_b = LabelChannel(stressors=("group_masking",), masking_rates=(1.0,), n_draws=1)
    groups = {"b": [1, 2], "a": [0], "c": [3, 4]}
    res = brittle_labels(model, X, groups, np.zeros(5), channel=only_b, seed=0)
    assert res.labels.all()  # a masked -> feature 0 at baseline 0 -> class 1: every sample flips
    res = naturalistic_labels(model, X, groups, np.zeros(5), ["b", "c"])
    assert not res.labels.any() and res.max_collapse.max() == 0.0
    res = naturalistic_labels(model, X, groups, np.zeros(5), ["a"])
    assert res.labels.all() and res.flip_share.min() == 1.0


def test_naturalistic_labels_by_hand(X):
    res = naturalistic_labels(softmax_model, X, GROUPS, BASELINE, ["c"], tau_p=0.0)
    Z = X.copy()
    Z[:, [3, 4]] = 0.0
    P, Q = softmax_model(X), softmax_model(Z)
    y = P.argmax(axis=1)
    own = np.eye(3, dtype=bool)[y]
    m = np.log(P[own]) - np.log(np.where(own, -np.inf, P).max(axis=1))
    m2 = np.log(Q[own]) - np.log(np.where(own, -np.inf, Q).max(axis=1))
    expected = (Q.argmax(axis=1) != y) | (np.maximum(0, (m - m2) / (np.abs(m) + 1e-8)) >= 0.5)
    np.testing.assert_array_equal(res.labels, expected)
    assert res.settings == (("naturalistic", 1.0),)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X: brittle_labels(softmax_model, X, GROUPS, BASELINE, seed=0), "`noise_scale` is required"),
        (lambda X: brittle_labels(softmax_model, X, GROUPS, BASELINE, channel={"n_draws": 2}, seed=0), "LabelChannel"),
        (
            lambda X: brittle_labels(softmax_model, X, GROUPS, BASELINE, noise_scale=NOISE_SCALE, seed=0, batch_size=0),
            "batch_size",
        ),
        (
            lambda X: brittle_labels(
                lambda Z: np.ones((len(Z), 2)), X, GROUPS, BASELINE, noise_scale=NOISE_SCALE, seed=0
            ),
            "sum to 1",
        ),
        (lambda X: naturalistic_labels(softmax_model, X, GROUPS, BASELINE, []), "`unavailable` is empty"),
        (lambda X: naturalistic_labels(softmax_model, X, GROUPS, BASELINE, ["zz"]), "unknown group 'zz'"),
    ],
    ids=["noise-scale", "channel-type", "batch", "not-proba", "nat-empty", "nat-unknown"],
)
def test_labels_bad_input(X, call, match):
    with pytest.raises(ValueError, match=match):
        call(X)


# ------------------------------------------------------------------------------------------
# Structural separation from the score channel
# ------------------------------------------------------------------------------------------
def test_label_functions_cannot_receive_a_certificate():
    allowed = {
        brittle_labels: ["predict_proba", "X", "groups", "baseline", "channel", "noise_scale", "seed", "batch_size"],
        naturalistic_labels: [
            "predict_proba",
            "X",
            "groups",
            "baseline",
            "unavailable",
            "tau_p",
            "tau_kappa",
            "batch_size",
        ],
    }
    for fn, names in allowed.items():
        params = inspect.signature(fn).parameters
        assert list(params) == names
        assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values())


def test_label_channel_module_never_touches_the_score_channel():
    tree = ast.parse(Path(stressors.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert imported <= {
        "__future__",
        "dataclasses",
        "collections.abc",
        "typing",
        "numpy",
        "numpy.typing",
        "core._rng",
        "core.cfc.operators",
        "core.cfc.scores",
        "core.validation",
    }  # argument checks only: no certificate code
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }
    assert not {n for n in names if any(k in n.lower() for k in ("fds", "certif", "rcma", "flip_budget"))}


def test_result_is_frozen(X):
    res = brittle_labels(softmax_model, X, GROUPS, BASELINE, noise_scale=NOISE_SCALE, seed=0)
    assert isinstance(res, BrittleLabels)
    with pytest.raises(AttributeError):
        res.labels = None
