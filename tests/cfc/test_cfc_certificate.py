"""certify(): hand-computed certificates, parity with the naive twin, determinism, chunking."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from cfc_reference import naive_certificate, random_mlp_problem, random_problem
from scipy.special import expit

from core.cfc import CertificateSet, Protocol, certify

E = 1e-8
CONTRACT_COLUMNS = [
    "pred",
    "confidence",
    "margin",
    "flip_budget",
    "flipped",
    "rcma",
    "fds",
    "path",
    "path_margins",
    "lambda_star_attenuate_single",
    "lambda_star_attenuate_all",
]


def logistic(w, b):
    """Binary logistic model with logit ``Z @ w + b``: its margin m(x) is |logit|."""
    w = np.asarray(w, dtype=float)

    def predict_proba(Z):
        z = np.asarray(Z, dtype=float) @ w + b
        return np.column_stack([expit(-z), expit(z)])

    return predict_proba


LINEAR = logistic([3.0, -1.0, 0.5], -0.5)
GROUPS3 = {"a": [0], "b": [1], "c": [2]}


# --------------------------------------------------------------------------------------------
# Hand-computed certificates
# --------------------------------------------------------------------------------------------
def test_hand_computed_linear_model():
    # logit z = 3·x0 − x1 + 0.5·x2 − 0.5, baseline 0, K = 3, Λ = {0.1..1}, weights 1/3.
    X = np.array(
        [
            [1.0, 1.0, 2.0],  # z = 2.5
            [-1.0, 0.0, 0.0],  # z = -3.5, b and c already at the baseline
            [2.0, -1.0, 2.0],
        ]
    )  # z = 7.5, removing b or c gives the same logit 6.5
    cs = certify(LINEAR, X, GROUPS3, np.zeros(3))
    t = cs.table

    assert cs.depth == 3 and cs.path_rule == "static"
    assert t["pred"].tolist() == [1, 0, 1]
    np.testing.assert_allclose(t["margin"], [2.5, 3.5, 7.5], rtol=1e-12)
    np.testing.assert_allclose(
        t["confidence"], [1 / (1 + math.exp(-2.5)), 1 / (1 + math.exp(-3.5)), 1 / (1 + math.exp(-7.5))], rtol=1e-12
    )
    # One-step drops: removing a / b / c changes the logit to -0.5 / 3.5 / 1.5 for sample 0, ...
    np.testing.assert_allclose(cs.drops, [[3.0, -1.0, 1.0], [3.0, 0.0, 0.0], [6.0, 1.0, 1.0]], atol=1e-12)
    # ... so the paths are a, c, b; and a, then the ties b, c in declared order.
    assert t["path"].tolist() == [["a", "c", "b"], ["a", "b", "c"], ["a", "b", "c"]]
    # Margins of the original class along the path: ±logit of x^(k).
    np.testing.assert_allclose(
        np.array(t["path_margins"].tolist()),
        [[2.5, -0.5, -1.5, -0.5], [3.5, 0.5, 0.5, 0.5], [7.5, 1.5, 0.5, -0.5]],
        atol=1e-12,
    )
    assert t["flip_budget"].tolist() == [1, 4, 3]
    rcma = [(3 + 4 + 3) / (2.5 + E) / 4, (3 + 3 + 3) / (3.5 + E) / 4, (6 + 7 + 8) / (7.5 + E) / 4]
    np.testing.assert_allclose(t["rcma"], rcma, rtol=1e-9)
    np.testing.assert_allclose(cs.collapse[0], [0, 3 / (2.5 + E), 4 / (2.5 + E), 3 / (2.5 + E)], rtol=1e-9)
    # Attenuating a alone: logit 2.5 − 3λ < 0 first at λ = 0.9; all groups: 3(1−λ) − 0.5 < 0 at 0.9.
    # Sample 2: only the joint attenuation flips, 8(1−λ) − 0.5 < 0 first at λ = 1.
    np.testing.assert_array_equal(t["lambda_star_attenuate_single"], [0.9, np.inf, np.inf])
    np.testing.assert_array_equal(t["lambda_star_attenuate_all"], [0.9, np.inf, 1.0])
    deg = [1 / (0.9 + E), 0.0, 0.5 / (1.0 + E)]
    np.testing.assert_allclose(t["degradation"], deg, rtol=1e-12)
    u = [(rcma[0] + 1 / 1 + deg[0]) / 3, (rcma[1] + 1 / 4 + deg[1]) / 3, (rcma[2] + 1 / 3 + deg[2]) / 3]
    np.testing.assert_allclose(t["u"], u, rtol=1e-9)
    np.testing.assert_allclose(t["fds"], [1 - math.exp(-v) for v in u], rtol=1e-9)
    np.testing.assert_allclose(t["one_step_max"], [3.0, 3.0, 6.0], atol=1e-12)


def test_hand_computed_static_versus_adaptive():
    # logit z = 1.2·x0 + 1.5·x1 + x2 + 2·x0·x2 − 0.9 at x = (1, 1, 1), baseline 0: z = 4.8.
    def proba(Z):
        Z = np.asarray(Z, dtype=float)
        z = 1.2 * Z[:, 0] + 1.5 * Z[:, 1] + Z[:, 2] + 2 * Z[:, 0] * Z[:, 2] - 0.9
        return np.column_stack([expit(-z), expit(z)])

    x = np.ones((1, 3))
    # One-step logits: without a 1.6 (δ 3.2), without b 3.3 (δ 1.5), without c 1.8 (δ 3.0).
    static = certify(proba, x, GROUPS3, np.zeros(3), Protocol(path="static"))
    adaptive = certify(proba, x, GROUPS3, np.zeros(3), Protocol(path="adaptive"))
    assert static.table["path"][0] == ["a", "c", "b"]
    # From x without a (1.6): dropping b leaves 0.1 (drop 1.5), dropping c leaves 0.6 (drop 1.0).
    assert adaptive.table["path"][0] == ["a", "b", "c"]
    np.testing.assert_allclose(static.table["path_margins"][0], [4.8, 1.6, 0.6, -0.9], atol=1e-12)
    np.testing.assert_allclose(adaptive.table["path_margins"][0], [4.8, 1.6, 0.1, -0.9], atol=1e-12)
    assert static.table["flip_budget"][0] == adaptive.table["flip_budget"][0] == 3
    np.testing.assert_allclose(static.table["rcma"][0], (3.2 + 4.2 + 5.7) / (4.8 + E) / 4, rtol=1e-9)
    np.testing.assert_allclose(adaptive.table["rcma"][0], (3.2 + 4.7 + 5.7) / (4.8 + E) / 4, rtol=1e-9)


def test_adaptive_path_breaks_ties_in_declared_order():
    # Row 0 (z = −3.5): b and c sit at the baseline, so after removing a (drop 3) their drops
    # from the current state tie at 0. Row 1 (z = −0.5, x = baseline): every drop ties at 0,
    # already at the first step. Ties go to the declared order b before c (a before b before c).
    X = np.array([[-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    groups = {"a": [0], "b": [1], "c": [2]}
    adaptive = certify(LINEAR, X, groups, np.zeros(3), Protocol(path="adaptive"))
    assert adaptive.table["path"].tolist() == [["a", "b", "c"], ["a", "b", "c"]]
    # The same removals declared in another order follow that order instead.
    reordered = certify(LINEAR, X, {"a": [0], "c": [2], "b": [1]}, np.zeros(3), Protocol(path="adaptive"))
    assert reordered.table["path"].tolist() == [["a", "c", "b"], ["a", "c", "b"]]


def test_spec_reference_binary_margin_and_single_group_flip():
    # SPEC reference: for a binary model m(x) = log(p̂ / (1 − p̂)); a sample whose single most
    # important group flips it has k* = 1 and u >= 1/3.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3)) * 2
    cs = certify(LINEAR, X, GROUPS3, np.zeros(3))
    p_hat = cs.table["confidence"].to_numpy()
    moderate = p_hat < 0.999  # 1 − p̂ cancels catastrophically beyond that; use the other class there
    np.testing.assert_allclose(cs.table["margin"][moderate], np.log(p_hat / (1 - p_hat))[moderate], rtol=1e-9)
    np.testing.assert_allclose(cs.table["margin"], np.log(p_hat / cs.traj_proba[:, 0].min(axis=1)), rtol=1e-12)
    top = cs.path_idx[:, 0]
    one_flip = cs.traj_pred[:, 1] != cs.table["pred"].to_numpy()
    assert one_flip.sum() > 10  # the test data contains such samples
    assert (cs.table["flip_budget"][one_flip] == 1).all()
    assert (cs.table["u"][one_flip] >= 1 / 3).all()
    # ... and "most important" is the group with the largest one-step drop.
    np.testing.assert_array_equal(top, np.argmax(cs.drops, axis=1))


# --------------------------------------------------------------------------------------------
# Parity with the naive twin
# --------------------------------------------------------------------------------------------
BOTH = ("attenuate_single", "attenuate_all")
PARITY_CASES = [
    # (problem, seed, n, d, G, C, path_rule, depth, operators, fixed order)
    (random_problem, 0, 12, 6, 4, 3, "static", None, BOTH, None),
    (random_problem, 1, 12, 7, 5, 2, "adaptive", None, BOTH, None),
    (random_problem, 2, 10, 8, 6, 4, "static", 3, ("attenuate_all",), None),
    (random_problem, 3, 10, 8, 6, 4, "adaptive", 6, ("attenuate_single",), None),
    (random_problem, 4, 9, 5, 5, 3, "static", 4, (), None),
    (random_problem, 5, 9, 6, 4, 2, "static", 3, BOTH, ["g2", "g0", "g3", "g1"]),
    (random_problem, 6, 8, 3, 1, 3, "adaptive", None, BOTH, None),
    (random_mlp_problem, 7, 12, 9, 6, 3, "static", None, BOTH, None),
    (random_mlp_problem, 8, 12, 9, 6, 3, "adaptive", None, BOTH, None),
]


@pytest.mark.parametrize(
    "problem,seed,n,d,G,C,rule,depth,ops,order",
    PARITY_CASES,
    ids=[
        "static-3cls",
        "adaptive-binary",
        "static-K3-all",
        "adaptive-K=G",
        "no-operators",
        "fixed-order",
        "single-group",
        "mlp-static",
        "mlp-adaptive",
    ],
)
def test_parity_with_naive_implementation(problem, seed, n, d, G, C, rule, depth, ops, order):
    f, X, groups, xbar = problem(seed, n=n, d=d, n_groups=G, n_classes=C)
    protocol = Protocol(
        depth=depth, path=rule, operators=ops, severities=(0.25, 0.5, 0.75, 1.0), weights=(0.5, 0.2, 0.3)
    )
    cs = certify(f, X, groups, xbar, protocol, order=order, batch_size=50)
    K = cs.depth
    assert K == (min(G, 5) if depth is None else depth)
    assert cs.path_rule == ("fixed" if order else rule)
    for i in range(n):
        ref = naive_certificate(
            f,
            X[i],
            groups,
            xbar,
            depth=K,
            severities=protocol.severities,
            operators=protocol.operators,
            weights=protocol.weights,
            path_rule=rule,
            order=order,
        )
        row = cs.table.iloc[i]
        assert row["pred"] == ref["pred"]
        assert row["path"] == ref["path"]
        assert row["flip_budget"] == ref["flip_budget"]
        np.testing.assert_array_equal(cs.traj_pred[i], ref["traj_pred"])
        np.testing.assert_allclose(cs.traj_proba[i], np.array(ref["traj_proba"]), rtol=0, atol=0)
        np.testing.assert_allclose(row["path_margins"], ref["path_margins"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(cs.drops[i], ref["drops"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(row["one_step_max"], max(ref["drops"]), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(cs.collapse[i], ref["collapse"], rtol=1e-8, atol=1e-9)
        for key in ("margin", "confidence", "rcma", "degradation", "u", "fds"):
            np.testing.assert_allclose(row[key], ref[key], rtol=1e-8, atol=1e-10, err_msg=key)
        for op in protocol.operators:
            assert row[f"lambda_star_{op}"] == ref["lambda_star"][op], op
        assert [c for c in cs.table.columns if c.startswith("lambda_star_")] == [
            f"lambda_star_{op}" for op in protocol.operators
        ]


def test_operator_traces_match_their_definition():
    f, X, groups, xbar = random_problem(11, n=6, d=5, n_groups=3, n_classes=3)
    lam = (0.5, 1.0)
    cs = certify(f, X, groups, xbar, Protocol(severities=lam))
    single, joint = cs.operators["attenuate_single"], cs.operators["attenuate_all"]
    assert single.margins.shape == (6, 3, 2) and joint.margins.shape == (6, 1, 2)
    assert single.unit_names == tuple(groups) and joint.unit_names == ("all",)
    y = cs.table["pred"].to_numpy()
    for i in range(6):
        for li, lv in enumerate(lam):
            for gi, cols in enumerate(groups.values()):
                z = X[i].copy()
                z[cols] = (1 - lv) * X[i, cols] + lv * xbar[cols]
                p = f(z[None])[0]
                assert single.preds[i, gi, li] == np.argmax(p)
                np.testing.assert_allclose(
                    single.margins[i, gi, li], np.log(p[y[i]]) - np.log(np.delete(p, y[i]).max()), rtol=1e-9
                )
            assert single.flipped[i, li] == (single.preds[i, :, li] != y[i]).any()
    np.testing.assert_array_equal(single.margin_curve, single.margins.min(axis=1))
    # At λ = 1 attenuating one group is removing it.
    np.testing.assert_allclose(
        cs.drops, cs.table["margin"].to_numpy()[:, None] - single.margins[:, :, 1], rtol=1e-12, atol=1e-12
    )


# --------------------------------------------------------------------------------------------
# Contract, determinism, chunking
# --------------------------------------------------------------------------------------------
def test_table_contract_columns_and_types():
    f, X, groups, xbar = random_problem(7, n=5, d=6, n_groups=4, n_classes=3)
    cs = certify(f, X, groups, xbar)
    for col in CONTRACT_COLUMNS:
        assert col in cs.table.columns
    assert len(cs) == 5 and cs.table.index.tolist() == list(range(5))
    assert cs.table["flip_budget"].dtype == np.int64 and cs.table["pred"].dtype == np.int64
    assert all(isinstance(p, list) and len(p) == cs.depth for p in cs.table["path"])
    assert all(isinstance(p, list) and len(p) == cs.depth + 1 for p in cs.table["path_margins"])
    assert cs.traj_proba.shape == (5, cs.depth + 1, 3)
    assert cs.drops.shape == (5, 4) and cs.path_idx.shape == (5, cs.depth)


def test_flipped_says_whether_the_path_flips_within_depth():
    # a: one step flips (k* = 1); b: the full path of depth 2 never flips (k* = K + 1 = 3).
    def predict_proba(Z):
        z = np.asarray(Z, dtype=float) @ np.array([4.0, 0.1, 0.1]) - 1.0
        return np.column_stack([expit(-z), expit(z)])

    X = np.array([[1.0, 0.0, 0.0], [0.0, 5.0, 5.0]])
    cs = certify(predict_proba, X, GROUPS3, np.zeros(3), Protocol(depth=2))
    assert cs.table["flip_budget"].tolist() == [1, 3]
    assert cs.table["flipped"].tolist() == [True, False]
    assert cs.table["flipped"].dtype == bool
    assert list(cs.table.columns).index("flipped") == list(cs.table.columns).index("flip_budget") + 1


def test_flipped_survives_the_bundle_and_is_derived_for_older_bundles():
    f, X, groups, xbar = random_problem(11, n=30, d=6, n_groups=4, n_classes=3)
    cs = certify(f, X, groups, xbar, Protocol(depth=2))
    assert cs.table["flipped"].any() and not cs.table["flipped"].all()
    again = CertificateSet.from_bundle(cs.to_bundle())
    pd.testing.assert_frame_equal(again.table, cs.table)
    old = cs.to_bundle()
    old["table"]["columns"].remove("flipped")
    del old["table"]["dtypes"]["flipped"], old["table"]["data"]["flipped"]
    pd.testing.assert_frame_equal(CertificateSet.from_bundle(old).table, cs.table)
    bad = cs.to_bundle()
    bad["table"]["data"]["flipped"][0] = 1
    with pytest.raises(ValueError, match="table.flipped' must hold only true / false"):
        CertificateSet.from_bundle(bad)


def test_dataframe_index_is_kept_and_certificate_of_one_sample():
    f, X, groups, xbar = random_problem(8, n=4, d=5, n_groups=3, n_classes=2)
    df = pd.DataFrame(X, index=["r1", "r2", "r3", "r4"])
    cs = certify(f, df, groups, xbar, search="both")
    assert cs.table.index.tolist() == ["r1", "r2", "r3", "r4"]
    c = cs.certificate(2)
    row = cs.table.iloc[2]
    assert c.index == "r3" and c.position == 2
    assert c.path == tuple(row["path"]) and c.flip_budget == row["flip_budget"]
    assert c.lambda_star == {op: row[f"lambda_star_{op}"] for op in cs.protocol.operators}
    np.testing.assert_array_equal(c.proba, cs.traj_proba[2])
    assert c.single_group_margins.shape == (3, len(cs.protocol.severities))
    assert c.flip_budget_exact == row["flip_budget_exact"] and c.flip_budget_beam == row["flip_budget_beam"]
    assert c.fingerprint == cs.fingerprint
    assert cs.certificate(-1).position == 3
    with pytest.raises(ValueError, match="position in 0..3"):
        cs.certificate(4)


def _assert_same_sets(a: CertificateSet, b: CertificateSet) -> None:
    assert a.fingerprint == b.fingerprint
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
    for name in ("path_idx", "traj_proba", "traj_pred", "traj_margin", "collapse", "drops"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for op in a.operators:
        for name in ("margins", "preds", "flipped"):
            np.testing.assert_array_equal(getattr(a.operators[op], name), getattr(b.operators[op], name))
    if a.search is not None:
        for name in ("k_exact", "exact_subset", "k_beam", "beam_subset"):
            np.testing.assert_array_equal(getattr(a.search, name), getattr(b.search, name))


@pytest.mark.parametrize("rule", ["static", "adaptive"])
def test_deterministic_and_batch_size_invariant(rule):
    f, X, groups, xbar = random_problem(9, n=40, d=8, n_groups=5, n_classes=3)
    protocol = Protocol(path=rule)
    first = certify(f, X, groups, xbar, protocol, search="both")
    _assert_same_sets(first, certify(f, X, groups, xbar, protocol, search="both"))
    # batch_size 7 is smaller than one sample's stack: every call sees a different mix of rows.
    _assert_same_sets(first, certify(f, X, groups, xbar, protocol, search="both", batch_size=7))


def test_chunk_invariance_with_a_tree_model():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int) + (X[:, 3] > 1)
    groups = {"a": [0, 1], "b": [2], "c": [3, 4], "d": [5]}
    xbar = X.mean(axis=0)
    df = pd.DataFrame(X[:90], index=np.arange(1000, 1090))
    # One OpenMP thread: on a busy 2-core machine many small predict calls are otherwise
    # dominated by thread start-up. Results do not depend on it.
    with threadpool_limits(limits=1, user_api="openmp"):
        model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
        whole = certify(model.predict_proba, df, groups, xbar, search="both")
        parts = [
            certify(model.predict_proba, df.iloc[s], groups, xbar, search="both", batch_size=bs)
            for s, bs in ((slice(0, 31), 700), (slice(31, 32), 65536), (slice(32, 90), 3000))
        ]
        arr_parts = [
            certify(model.predict_proba, X[:90][s], groups, xbar, search="both") for s in (slice(0, 45), slice(45, 90))
        ]
        arr_whole = certify(model.predict_proba, X[:90], groups, xbar, search="both")
    assert len({p.fingerprint for p in parts}) == 1
    _assert_same_sets(whole, CertificateSet.concat(parts))
    # Plain arrays: the indexes restart at 0 in every part, so concat must be told to renumber.
    with pytest.raises(ValueError, match="ignore_index=True"):
        CertificateSet.concat(arr_parts)
    _assert_same_sets(arr_whole, CertificateSet.concat(arr_parts, ignore_index=True))


def test_concat_refuses_incompatible_parts():
    f, X, groups, xbar = random_problem(10, n=6, d=5, n_groups=3, n_classes=2)
    a = certify(f, X[:3], groups, xbar)
    b = certify(f, X[3:], groups, xbar, Protocol(path="adaptive"))
    with pytest.raises(ValueError, match="different fingerprint, protocol, path_rule"):
        CertificateSet.concat([a, b], ignore_index=True)
    with pytest.raises(ValueError, match="non-empty"):
        CertificateSet.concat([])


def test_fingerprint_depends_on_protocol_model_groups_baseline_and_order_but_not_rows():
    f, X, groups, xbar = random_problem(12, n=10, d=6, n_groups=3, n_classes=3)
    base = certify(f, X, groups, xbar).fingerprint
    assert certify(f, X[:2], groups, xbar).fingerprint == base
    assert certify(f, X[5:] * 3, groups, xbar).fingerprint == base
    g2 = {"h0": groups["g0"], "h1": groups["g1"], "h2": groups["g2"]}
    f2, *_ = random_problem(13, n=1, d=6, n_groups=3, n_classes=3)
    others = [
        certify(f, X, groups, xbar, Protocol(path="adaptive")).fingerprint,
        certify(f2, X, groups, xbar).fingerprint,
        certify(f, X, g2, xbar).fingerprint,
        certify(f, X, groups, xbar + 0.01).fingerprint,
        certify(f, X, groups, xbar, order=["g2", "g1", "g0"]).fingerprint,
    ]
    assert len({base, *others}) == 6


def test_progress_reports_every_pass():
    f, X, groups, xbar = random_problem(14, n=30, d=5, n_groups=3, n_classes=2)
    calls = []
    certify(f, X, groups, xbar, search="both", batch_size=100, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (90, 90)
    assert all(t == 90 for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert len(calls) > 3


def test_model_calls_are_batched_not_per_sample():
    f, X, groups, xbar = random_problem(15, n=200, d=6, n_groups=4, n_classes=3)
    sizes = []

    def counting(Z):
        sizes.append(len(Z))
        return f(Z)

    certify(counting, X, groups, xbar, batch_size=65536)
    # fingerprint probe, one stacked round, one path round — independent of n.
    assert len(sizes) == 3
    G, L, K = 4, 10, 4
    # At λ = 1 an attenuation is a removal (G rows per sample) or x̄ (one row for the call), and
    # the last path state (K = G) is x̄: those rows are not evaluated again (test_cfc_row_reuse).
    assert sizes[1:] == [200 * (1 + G + (L - 1) * (G + 1)) + 1, 200 * (K - 2)]
    sizes.clear()
    certify(counting, X, groups, xbar, Protocol(path="adaptive"))
    assert sizes[1:] == [200 * (1 + G + (L - 1) * (G + 1)) + 1] + [200 * (G - k + 1) for k in range(2, K)]
    sizes.clear()
    certify(counting, X, groups, xbar, Protocol(path="adaptive"), _reuse_equal_rows=False)  # SPEC's count
    assert sizes[1:] == [200 * (1 + G + L * (G + 1))] + [200 * (G - k + 1) for k in range(2, K + 1)]


def test_certificate_fingerprint_without_certifying():
    from core.cfc import certificate_fingerprint

    f, X, groups, xbar = random_problem(16, n=5, d=6, n_groups=3, n_classes=3)
    protocol = Protocol(path="adaptive")
    calls = []

    def counting(Z):
        calls.append(len(Z))
        return f(Z)

    fp = certificate_fingerprint(counting, groups, xbar, protocol)
    assert calls == [8]  # the probe only
    assert fp == certify(f, X, groups, xbar, protocol).fingerprint
    assert (
        certificate_fingerprint(f, groups, xbar, protocol, order=["g1", "g0", "g2"])
        == certify(f, X, groups, xbar, protocol, order=["g1", "g0", "g2"]).fingerprint
    )
    with pytest.raises(ValueError, match="do not cover the columns"):
        certificate_fingerprint(f, {"g0": [0]}, xbar)


def test_take_gives_the_certificates_of_a_row_subset():
    f, X, groups, xbar = random_problem(17, n=12, d=6, n_groups=3, n_classes=2)
    cs = certify(f, pd.DataFrame(X), groups, xbar, search="both")
    rows = [7, 2, 9]
    sub = cs.take(rows)
    assert sub.table.index.tolist() == rows and len(sub) == 3
    # Rows are certified independently, so this equals certifying only those rows.
    _assert_same_sets(sub, certify(f, pd.DataFrame(X).iloc[rows], groups, xbar, search="both"))
    with pytest.raises(ValueError, match="must lie in 0..11"):
        cs.take([12])
