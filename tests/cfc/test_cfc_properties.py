"""Invariants of certificates on random models (hypothesis)."""

from __future__ import annotations

import dataclasses

import numpy as np
from cfc_reference import random_mlp_problem, random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cfc import Protocol, certify, fds_from_components

problems = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 10_000),
        "n": st.integers(1, 8),
        "G": st.integers(1, 5),
        "extra": st.integers(0, 3),
        "C": st.integers(2, 4),
        "mlp": st.booleans(),
    }
)
protocols = st.builds(
    Protocol,
    depth=st.none() | st.integers(1, 5),
    path=st.sampled_from(["static", "adaptive"]),
    operators=st.sampled_from([(), ("attenuate_single",), ("attenuate_all",), ("attenuate_single", "attenuate_all")]),
    severities=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=4, unique=True),
    # all-zero weights are refused by Protocol (FDS would carry no information)
    weights=st.tuples(*[st.floats(0, 2)] * 3).filter(any),
)


def _make(p):
    make = random_mlp_problem if p["mlp"] else random_problem
    return make(p["seed"], n=p["n"], d=p["G"] + p["extra"], n_groups=p["G"], n_classes=p["C"])


@settings(max_examples=60)
@given(problems, protocols)
def test_certificate_invariants(p, protocol):
    f, X, groups, xbar = _make(p)
    if protocol.depth is not None and protocol.depth > p["G"]:
        protocol = dataclasses.replace(protocol, depth=p["G"])
    cs = certify(f, X, groups, xbar, protocol)
    t, K = cs.table, cs.depth
    y = t["pred"].to_numpy()
    k = t["flip_budget"].to_numpy()

    assert (t["rcma"] >= 0).all() and (cs.collapse >= 0).all() and (cs.collapse[:, 0] == 0).all()
    assert ((1 <= k) & (k <= K + 1)).all()
    fds, u = t["fds"].to_numpy(), t["u"].to_numpy()
    assert ((fds >= 0) & (fds <= 1)).all()
    assert (fds[u < 30] < 1).all()  # below saturation of 1 − exp(−u) in float64
    w1, w2, w3 = protocol.weights
    assert (u >= w2 / k - 1e-12).all()
    # k* is the first flip on the path.
    for i in range(len(cs)):
        assert (cs.traj_pred[i, 1 : k[i]] == y[i]).all()
        if k[i] <= K:
            assert cs.traj_pred[i, k[i]] != y[i]
    np.testing.assert_array_equal(cs.traj_margin[:, 0], t["margin"])
    assert (t["margin"] >= 0).all()
    # The path removes K distinct groups; a static path follows descending one-step drops.
    assert all(len(set(row)) == K for row in t["path"])
    if protocol.path == "static":
        along = np.take_along_axis(cs.drops, cs.path_idx, axis=1)
        assert (np.diff(along, axis=1) <= 0).all()
    # λ* is on the grid or inf, and it is the first flipped severity.
    for op, tr in cs.operators.items():
        lam = t[f"lambda_star_{op}"].to_numpy()
        assert np.isin(lam[np.isfinite(lam)], protocol.severities).all()
        np.testing.assert_array_equal(np.isfinite(lam), tr.flipped.any(axis=1))


@settings(max_examples=30)
@given(problems)
def test_rows_are_certified_independently(p):
    f, X, groups, xbar = _make(p)
    perm = np.random.default_rng(p["seed"]).permutation(len(X))
    a = certify(f, X, groups, xbar)
    b = certify(f, X[perm], groups, xbar)
    np.testing.assert_array_equal(a.traj_proba[perm], b.traj_proba)
    np.testing.assert_array_equal(a.table["fds"].to_numpy()[perm], b.table["fds"])
    assert a.fingerprint == b.fingerprint


components = st.integers(1, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0, 50), min_size=n, max_size=n),
        st.lists(st.integers(1, 6), min_size=n, max_size=n),
        st.lists(
            st.lists(st.sampled_from([0.1, 0.25, 0.5, 1.0, np.inf]), min_size=2, max_size=2), min_size=n, max_size=n
        ),
    )
)


@given(components, st.tuples(*[st.floats(0, 3)] * 3), st.integers(0, 2), st.floats(0, 3))
def test_raising_any_weight_never_lowers_fds(comp, weights, which, increase):
    rcma, k, lam = comp
    fds0, u0, _ = fds_from_components(rcma, k, lam, weights)
    raised = list(weights)
    raised[which] += increase
    fds1, u1, _ = fds_from_components(rcma, k, lam, raised)
    assert (u1 >= u0).all() and (fds1 >= fds0).all()


@settings(max_examples=15)
@given(problems, st.integers(0, 2))
def test_raising_a_protocol_weight_never_lowers_fds(p, which):
    f, X, groups, xbar = _make(p)
    w = [0.2, 0.3, 0.4]
    low = certify(f, X, groups, xbar, Protocol(weights=w))
    w[which] += 0.5
    high = certify(f, X, groups, xbar, Protocol(weights=w))
    assert (high.table["fds"].to_numpy() >= low.table["fds"].to_numpy()).all()


def test_fds_components_hand_values():
    fds, u, deg = fds_from_components([0.5, 0.0], [2, 6], [[0.5, np.inf], [np.inf, np.inf]], (1 / 3, 1 / 3, 1 / 3))
    np.testing.assert_allclose(deg, [0.5 / (0.5 + 1e-8), 0.0])
    np.testing.assert_allclose(u, [(0.5 + 0.5 + 0.5 / (0.5 + 1e-8)) / 3, (1 / 6) / 3])
    np.testing.assert_allclose(fds, 1 - np.exp(-u))
    fds0, u0, deg0 = fds_from_components([0.2], [1], np.zeros((1, 0)), (1, 1, 1))
    assert deg0.tolist() == [0.0] and u0.tolist() == [1.2]
