"""certify() skips the model rows that equal another row by construction, and nothing changes.

SPEC A.3's cost line counts ``1 + G + |Λ|(G + 1) + (K − 1)`` model rows per sample (static path).
Some are the same input twice: the attenuation at λ = 1 of one group is that group's removal,
of every group it is ``x̄`` (the same for every sample), and removing every group leaves ``x̄``.
certify evaluates each such input once where the stacked inputs are bitwise equal, and the
private ``_reuse_equal_rows=False`` evaluates every row. Both must give the same certificates
bit for bit, on any model whose output for a row does not depend on the other rows of the call.
"""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest
from cfc_reference import random_problem, softmax_linear
from hypothesis import given
from hypothesis import strategies as st

from core.cfc import CertificateSet, Protocol, certify

GROUPS = {"a": [0, 1], "b": [2], "c": [3, 4], "d": [5], "e": [6, 7]}


def _bits(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).view(np.uint64)


def _assert_bit_identical(a: CertificateSet, b: CertificateSet) -> None:
    """Every table column, array, operator trace, search field and the fingerprint, bit for bit."""
    assert a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(_bits(a.probe_proba), _bits(b.probe_proba))
    assert list(a.table.columns) == list(b.table.columns)
    pd.testing.assert_index_equal(a.table.index, b.table.index)
    for col in a.table.columns:
        x, y = a.table[col], b.table[col]
        assert x.dtype == y.dtype, col
        if col == "path":
            assert x.tolist() == y.tolist()
        elif col == "path_margins":
            np.testing.assert_array_equal(_bits(x.tolist()), _bits(y.tolist()), err_msg=col)
        elif x.dtype.kind == "f":
            np.testing.assert_array_equal(_bits(x), _bits(y), err_msg=col)
        else:
            np.testing.assert_array_equal(x.to_numpy(), y.to_numpy(), err_msg=col)
    for name in ("path_idx", "traj_pred"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("traj_proba", "traj_margin", "collapse", "drops"):
        np.testing.assert_array_equal(_bits(getattr(a, name)), _bits(getattr(b, name)), err_msg=name)
    assert list(a.operators) == list(b.operators)
    for op in a.operators:
        ta, tb = a.operators[op], b.operators[op]
        np.testing.assert_array_equal(_bits(ta.margins), _bits(tb.margins), err_msg=f"{op}.margins")
        assert ta.preds.dtype == tb.preds.dtype
        np.testing.assert_array_equal(ta.preds, tb.preds, err_msg=f"{op}.preds")
        np.testing.assert_array_equal(ta.flipped, tb.flipped, err_msg=f"{op}.flipped")
    assert (a.search is None) == (b.search is None)
    if a.search is not None:
        for name in ("k_exact", "k_beam"):
            np.testing.assert_array_equal(_bits(getattr(a.search, name)), _bits(getattr(b.search, name)))
        for name in ("exact_subset", "beam_subset"):
            np.testing.assert_array_equal(getattr(a.search, name), getattr(b.search, name))


# --------------------------------------------------------------------------------------------
# Models: fitted scikit-learn models. Trees are evaluated by scikit-learn itself (a row's
# output never depends on the other rows). The linear model and the MLP are evaluated from their
# fitted weights row by row in a fixed summation order: scikit-learn evaluates them through
# BLAS, whose result for a row can depend on the size of the call and on the row's place in it
# (one-row products and the last rows of a matrix-vector product take other code paths, and
# some CPUs have other kernels for small products), so skipping rows moves their last bits.
# --------------------------------------------------------------------------------------------
def _rowwise_affine(Z: np.ndarray, W: np.ndarray, c: np.ndarray) -> np.ndarray:
    out = np.broadcast_to(c, (Z.shape[0], W.shape[1])).copy()
    for j in range(W.shape[0]):
        out += Z[:, j : j + 1] * W[j]
    return out


def _mlp_rowwise(mlp):
    *hidden, last = list(zip(mlp.coefs_, mlp.intercepts_))
    head = softmax_linear(*last)

    def predict_proba(Z):
        h = np.asarray(Z, dtype=np.float64)
        for W, c in hidden:
            h = np.maximum(_rowwise_affine(h, W, c), 0.0)
        return head(h)

    return predict_proba


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 8))
    y = (X[:, 0] + X[:, 2] * X[:, 3] > 0).astype(int) + (X[:, 5] - X[:, 7] > 0.8)
    baseline = X[:300].mean(axis=0)
    # -0.0 in the baseline: 0·x + 1·(-0.0) is +0.0 for x > 0, so those λ = 1 attenuations are
    # not the removal bit for bit and must be evaluated; for x < 0 they are and are reused.
    baseline[2] = -0.0
    X_test = X[300:340].copy()
    X_test[:5, 2] = 0.0  # +0.0 against the baseline's -0.0: differs bitwise
    X_test[5:10, 2] = -0.0
    return X[:300], y[:300], X_test, baseline


@pytest.fixture(scope="module")
def models(data):
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    X, y, _, _ = data
    with threadpool_limits(limits=1, user_api="openmp"):
        linear = LogisticRegression(max_iter=1000).fit(X, y)
        mlp = MLPClassifier((12, 6), max_iter=2000, random_state=0).fit(X, y)
        hgb = HistGradientBoostingClassifier(max_iter=25, random_state=0).fit(X, y)
        forest = RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0).fit(X, y > 0)
    return {
        "linear-3cls": softmax_linear(linear.coef_.T, linear.intercept_),
        "mlp-3cls": _mlp_rowwise(mlp),
        "hist_gb-3cls": hgb.predict_proba,
        "random_forest-binary": forest.predict_proba,
    }


CONFIGS = {
    # name: (protocol, order, search); K = G = 5 by default, so the last path state is x̄.
    "static": (Protocol(), None, "none"),
    "adaptive": (Protocol(path="adaptive"), None, "none"),
    "static-K3-search": (Protocol(depth=3), None, "both"),
    "fixed-order": (Protocol(depth=4), ["e", "b", "d", "a", "c"], "none"),
    "adaptive-grid-without-1": (Protocol(path="adaptive", severities=(0.3, 0.6, 0.9)), None, "none"),
}


@pytest.mark.parametrize("batch_size", [65536, 97], ids=["one-call", "chunked-97"])
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("model", ["linear-3cls", "mlp-3cls", "hist_gb-3cls", "random_forest-binary"])
def test_reused_rows_give_the_full_computation_bit_for_bit(data, models, model, config, batch_size):
    from threadpoolctl import threadpool_limits

    _, _, X, baseline = data
    protocol, order, search = CONFIGS[config]
    f = models[model]
    kwargs = dict(order=order, search=search, batch_size=batch_size)
    with threadpool_limits(limits=1, user_api="openmp"):
        fast = certify(f, pd.DataFrame(X, index=range(100, 140)), GROUPS, baseline, protocol, **kwargs)
        full = certify(
            f, pd.DataFrame(X, index=range(100, 140)), GROUPS, baseline, protocol, _reuse_equal_rows=False, **kwargs
        )
    _assert_bit_identical(fast, full)


@pytest.mark.parametrize("name", ["LogisticRegression", "MLPClassifier"])
def test_blas_models_agree_within_rounding(data, name):
    """scikit-learn's own BLAS evaluation: the same discrete fields, floats within 1e-12.

    Skipping rows moves the others within their calls, where BLAS may round them in their last
    bits (measured: at most 6.7e-16 on the shipped logreg audit, see docs/cfc.md).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    X_train, y, X, baseline = data
    est = (
        LogisticRegression(max_iter=1000)
        if name == "LogisticRegression"
        else MLPClassifier((12, 6), max_iter=2000, random_state=0)
    ).fit(X_train, y)
    fast = certify(est.predict_proba, X, GROUPS, baseline, Protocol(path="adaptive"))
    full = certify(est.predict_proba, X, GROUPS, baseline, Protocol(path="adaptive"), _reuse_equal_rows=False)
    for col in ("pred", "flip_budget", "flipped", "lambda_star_attenuate_single", "lambda_star_attenuate_all"):
        np.testing.assert_array_equal(fast.table[col], full.table[col], err_msg=col)
    assert fast.table["path"].tolist() == full.table["path"].tolist()
    for name_ in ("traj_proba", "traj_margin", "drops", "collapse"):
        np.testing.assert_allclose(getattr(fast, name_), getattr(full, name_), rtol=1e-12, atol=1e-12, err_msg=name_)
    for op in fast.operators:
        np.testing.assert_array_equal(fast.operators[op].preds, full.operators[op].preds)
        np.testing.assert_allclose(fast.operators[op].margins, full.operators[op].margins, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Which rows are reused: counted against the definition
# --------------------------------------------------------------------------------------------
def _float_bits(v: float) -> bytes:
    return struct.pack("<d", v)


def _expected_rows(X, groups, baseline, *, severities, operators, depth, path):
    """Model rows certify should evaluate (probe excluded), from the definition, one sample at a time."""
    G = len(groups)
    cols = list(groups.values())
    at_one = 1.0 in severities
    L = len(severities)
    total = 0
    for x in X:
        # 0·x + 1·x̄ in Python floats, the same IEEE operations numpy performs.
        same = [
            _float_bits((1.0 - 1.0) * float(x[c]) + 1.0 * float(baseline[c])) == _float_bits(baseline[c])
            for c in range(len(x))
        ]
        rows = 1 + G  # the input and its one-step removals
        for op in operators:
            units = [[g] for g in range(G)] if op == "attenuate_single" else [list(range(G))]
            for unit in units:
                rows += L
                if at_one and all(same[c] for g in unit for c in cols[g]):
                    rows -= 1  # the removal of that group, or x̄
        steps = [G - k + 1 for k in range(2, depth + 1)] if path == "adaptive" else [1] * (depth - 1)
        for k, candidates in enumerate(steps, start=2):
            if k < G:  # at k = G every group is removed: x̄
                rows += candidates
        total += rows
    # x̄ itself, once per call, when a state can be it.
    return total + (1 < depth == G or (at_one and "attenuate_all" in operators))


def _spec_rows(n, G, L, depth, path, n_ops_units):
    later = depth - 1 if path != "adaptive" else sum(G - k + 1 for k in range(2, depth + 1))
    return n * (1 + G + L * n_ops_units + later)


@pytest.mark.parametrize(
    "path,depth,operators,severities",
    [
        ("static", None, ("attenuate_single", "attenuate_all"), (0.1, 0.5, 1.0)),
        ("adaptive", None, ("attenuate_single", "attenuate_all"), (0.5, 1.0)),
        ("static", 2, ("attenuate_all",), (0.25, 1.0)),
        ("adaptive", 3, ("attenuate_single",), (1.0,)),
        ("static", None, ("attenuate_single", "attenuate_all"), (0.4, 0.8)),  # no λ = 1
    ],
    ids=["static-K=G", "adaptive-K=G", "all-only-K2", "single-only-adaptive-K3", "grid-without-1"],
)
def test_rows_evaluated_match_the_definition(path, depth, operators, severities):
    f, X, groups, baseline = random_problem(21, n=30, d=7, n_groups=4, n_classes=3)
    baseline[[1, 4]] = -0.0  # some λ = 1 attenuations differ bitwise from the removal
    X[::4, 1] = 0.0
    X[1::4, 4] = -0.0
    rows = []

    def counting(Z):
        rows.append(len(Z))
        return f(Z)

    protocol = Protocol(path=path, depth=depth, operators=operators, severities=severities)
    fast = certify(counting, X, groups, baseline, protocol)
    K, G, L = fast.depth, len(groups), len(severities)
    assert sum(rows[1:]) == _expected_rows(
        X, groups, baseline, severities=severities, operators=protocol.operators, depth=K, path=path
    )
    rows.clear()
    full = certify(counting, X, groups, baseline, protocol, _reuse_equal_rows=False)
    units = sum(G if op == "attenuate_single" else 1 for op in protocol.operators)
    assert sum(rows[1:]) == _spec_rows(len(X), G, L, K, path, units)
    _assert_bit_identical(fast, full)


def test_the_baseline_row_is_evaluated_once_per_call():
    # No row copies the baseline on a group, so no removal state is x̄ but the full one.
    f, X, groups, baseline = random_problem(22, n=50, d=6, n_groups=3, n_classes=2, tie_rows=False)
    calls = []

    def counting(Z):
        calls.append(np.array(Z, copy=True))
        return f(Z)

    certify(counting, X, groups, baseline, batch_size=40)  # many calls
    stacked = np.concatenate(calls[1:])  # the probe aside
    assert int(np.sum(np.all(stacked.view(np.uint64) == baseline.view(np.uint64), axis=1))) == 1


@given(
    seed=st.integers(0, 10_000),
    G=st.integers(1, 6),
    C=st.integers(2, 4),
    path=st.sampled_from(["static", "adaptive"]),
    depth_cap=st.integers(1, 6),
    severities=st.sampled_from([(1.0,), (0.5, 1.0), (0.2, 0.6), (0.1, 0.4, 0.7, 1.0)]),
    signed_zeros=st.booleans(),
    batch_size=st.sampled_from([7, 64, 65536]),
)
def test_reuse_never_changes_a_certificate(seed, G, C, path, depth_cap, severities, signed_zeros, batch_size):
    f, X, groups, baseline = random_problem(seed, n=9, d=G + 2, n_groups=G, n_classes=C)
    if signed_zeros:
        rng = np.random.default_rng(seed)
        baseline[rng.random(baseline.size) < 0.5] = -0.0
        X[rng.random(X.shape) < 0.3] = 0.0
    protocol = Protocol(path=path, depth=min(depth_cap, G), severities=severities)
    fast = certify(f, X, groups, baseline, protocol, batch_size=batch_size)
    full = certify(f, X, groups, baseline, protocol, batch_size=batch_size, _reuse_equal_rows=False)
    _assert_bit_identical(fast, full)
