"""Image-level screening scores (SPEC B.5): U, ret, delta, A3, TTA and the development controls."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

import core.paired.screening as screening
from core.paired.screening import RISK_SIGN, SCORES, risk_column, screening_scores


# ------------------------------------------------------------------------------------------
# toy tables
# ------------------------------------------------------------------------------------------
def _outputs(probs: np.ndarray, labels: np.ndarray) -> dict:
    pred = probs.argmax(axis=1)
    rows = np.arange(len(probs))
    out = {"true_label": labels, "pred": pred, "max_prob": probs[rows, pred], "true_prob": probs[rows, labels]}
    out.update({f"prob_{c}": probs[:, c] for c in range(probs.shape[1])})
    return out


def toy_tables(seed=0, *, models=("m1", "m2"), n_images=24, n_corr=4, n_tta=3, n_classes=3, sharp=3.0):
    """Random but internally consistent clean / probe / outcome tables."""
    rng = np.random.default_rng(seed)
    clean, probes, outcomes = [], [], []
    for g, model in enumerate(models):
        labels = np.arange(n_images) % n_classes
        ids = np.arange(100, 100 + n_images)
        split = np.where(np.arange(n_images) < n_images // 2, "dev", "eval")
        boost = np.eye(n_classes)[labels] * sharp
        p0 = rng.dirichlet(np.ones(n_classes), size=n_images) + boost
        p0 /= p0.sum(axis=1, keepdims=True)
        clean.append(
            pd.DataFrame(
                {"model": model, "group": f"g{g % 2}", "record_id": ids, "split": split, **_outputs(p0, labels)}
            )
        )
        for kind, count in (("corruption", n_corr), ("transform", n_tta)):
            for j in range(count):
                pj = rng.dirichlet(np.ones(n_classes), size=n_images) + boost * rng.uniform(0, 1.5, (n_images, 1))
                pj /= pj.sum(axis=1, keepdims=True)
                probes.append(
                    pd.DataFrame(
                        {
                            "model": model,
                            "record_id": ids,
                            "probe": f"{kind[0]}{j}",
                            "kind": kind,
                            **_outputs(pj, labels),
                        }
                    )
                )
        for cond in ("real-a", "real-b", "real-c"):
            pc = rng.dirichlet(np.ones(n_classes), size=n_images) + boost * rng.uniform(0, 1.2, (n_images, 1))
            pc /= pc.sum(axis=1, keepdims=True)
            o, c0 = _outputs(pc, labels), _outputs(p0, labels)
            outcomes.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "condition": cond,
                        "source": "real",
                        "record_id": ids,
                        "true_label": labels,
                        "clean_pred": c0["pred"],
                        "clean_max_prob": c0["max_prob"],
                        "clean_true_prob": c0["true_prob"],
                        "pert_pred": o["pred"],
                        "pert_max_prob": o["max_prob"],
                        "pert_true_prob": o["true_prob"],
                        "split": split,
                        "group": f"g{g % 2}",
                    }
                )
            )
    return (
        pd.concat(probes, ignore_index=True),
        pd.concat(clean, ignore_index=True),
        pd.concat(outcomes, ignore_index=True),
    )


# ------------------------------------------------------------------------------------------
# A3: naive twin written from the paper's text (001_... Appendix E.2, eq. 12)
# ------------------------------------------------------------------------------------------
def a3_naive(v0, probe_probs):
    p = int(np.argmax(v0))
    preds = [int(np.argmax(v)) for v in probe_probs]
    counts = {c: preds.count(c) for c in set(preds)}
    best = max(counts.values())
    tied = sorted(c for c, k in counts.items() if k == best)

    def mean_conf(c):
        return np.mean([max(v) for v, q in zip(probe_probs, preds) if q == c])

    top_conf = max(mean_conf(c) for c in tied)
    m = min(c for c in tied if mean_conf(c) == top_conf)
    total = v0[p]
    for v, q in zip(probe_probs, preds):
        if q not in (p, m):
            total -= max(v) - v[p]
        if q == p:
            total += v[p] - v[m]
        if q == m:
            total += v[p] - v[m] + v0[m] - v0[p]
    return total


def _call_a3(v0, pp):
    """screening._a3 on clean vectors (n, C) and probe vectors (n, P, C), p = clean arg-max."""
    n, n_probes, _ = pp.shape
    p = v0.argmax(axis=1)
    v_p = pp[np.arange(n)[:, None], np.arange(n_probes)[None, :], p[:, None]]
    return screening._a3(v0[np.arange(n), p], v0, p, v_p, pp.max(axis=2), pp.argmax(axis=2), pp)


def _a3_vectorised(v0, probe_probs):
    return _call_a3(np.asarray(v0, dtype=float)[None], np.asarray(probe_probs, dtype=float)[None])[0]


def test_a3_hand_value():
    # p = 0; votes: class 1 twice (a1, a2), class 2 once (a3), class 0 once (a4) -> m = 1.
    v0 = [0.6, 0.3, 0.1]
    probes = [[0.2, 0.7, 0.1], [0.3, 0.6, 0.1], [0.2, 0.3, 0.5], [0.5, 0.4, 0.1]]
    # 0.6 - (0.5 - 0.2) + (0.5 - 0.4) + [(0.2 - 0.7) + (0.3 - 0.6) + 2 (0.3 - 0.6)] = -1.0
    assert _a3_vectorised(v0, probes) == pytest.approx(-1.0, abs=1e-12)
    assert a3_naive(np.array(v0), [np.array(v) for v in probes]) == pytest.approx(-1.0, abs=1e-12)


def test_a3_when_the_clean_class_is_modal_only_distractors_count():
    v0 = [0.7, 0.2, 0.1]
    probes = [[0.6, 0.3, 0.1], [0.5, 0.1, 0.4], [0.2, 0.1, 0.7]]
    assert _a3_vectorised(v0, probes) == pytest.approx(0.7 - (0.7 - 0.2), abs=1e-12)


@pytest.mark.parametrize(
    "probes, expected_m",
    [
        # classes 1 and 2 tie with one vote each; class 2's voter is more confident -> m = 2.
        ([[0.1, 0.5, 0.4], [0.1, 0.2, 0.7]], 2),
        # equal votes and equal mean confidence -> the lower class index, 1.
        ([[0.1, 0.6, 0.3], [0.1, 0.3, 0.6]], 1),
    ],
    ids=["confidence-breaks-tie", "index-breaks-tie"],
)
def test_a3_modal_ties(probes, expected_m):
    v0 = np.array([0.8, 0.15, 0.05])
    pp = np.array(probes)
    m = expected_m
    expected = (
        v0[0]
        + sum(v[0] - v[m] + v0[m] - v0[0] for v in pp if np.argmax(v) == m)
        - sum(max(v) - v[0] for v in pp if np.argmax(v) not in (0, m))
    )
    assert _a3_vectorised(v0, pp) == pytest.approx(expected, abs=1e-12)
    assert a3_naive(v0, list(pp)) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=60)
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(2, 5))
def test_a3_matches_the_naive_twin(seed, n_probes, n_classes):
    rng = np.random.default_rng(seed)
    # Coarse probabilities make count and confidence ties frequent.
    raw = rng.integers(1, 5, size=(6, n_probes + 1, n_classes)).astype(float)
    probs = raw / raw.sum(axis=2, keepdims=True)
    v0, pp = probs[:, 0], probs[:, 1:]
    got = _call_a3(v0, pp)
    expected = [a3_naive(v0[i], list(pp[i])) for i in range(6)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------
# screening_scores
# ------------------------------------------------------------------------------------------
def _scores(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return screening_scores(*args, **kwargs)


def test_scores_by_hand_on_a_tiny_pool():
    clean = pd.DataFrame(
        {
            "model": "m",
            "record_id": [1, 2, 3, 4],
            "true_label": [0, 0, 1, 0],
            "pred": [0, 1, 1, 0],
            "max_prob": [0.9, 0.6, 0.7, 0.8],
            "true_prob": [0.9, 0.4, 0.7, 0.8],
            "split": ["eval", "eval", "eval", "dev"],
        }
    )
    probes = pd.DataFrame(
        {
            "model": "m",
            "record_id": [1, 1, 2, 2, 3, 3, 4, 4, 1, 3],
            "probe": ["a", "b"] * 4 + ["t", "t"],
            "kind": ["corruption"] * 8 + ["transform"] * 2,
            "true_label": [0, 0, 0, 0, 1, 1, 0, 0, 0, 1],
            "pred": [0, 1, 1, 1, 1, 1, 0, 1, 0, 0],
            "max_prob": [0.8, 0.7, 0.9, 0.6, 0.6, 0.5, 0.7, 0.6, 0.95, 0.6],
            "true_prob": [0.8, 0.3, 0.1, 0.4, 0.6, 0.5, 0.7, 0.4, 0.95, 0.4],
        }
    )
    s = _scores(probes, clean)
    # record 2 is wrong on the clean side, record 4 is a development image: only 1 and 3 are scored.
    assert s["record_id"].tolist() == [1, 3]
    np.testing.assert_allclose(s["U"], [0.55, 0.55])
    np.testing.assert_allclose(s["ret"], [0.5, 1.0])
    np.testing.assert_allclose(s["delta"], [0.9 - 0.55, 0.7 - 0.55])
    np.testing.assert_allclose(s["TTA"], [0.95, 0.4])
    # class 0 has one development image (record 4): M - U = 0.8 - 0.55; class 1 has none.
    np.testing.assert_allclose(s["class_delta"], [0.25, np.nan])
    assert s["A3"].isna().all() and s["g_SU"].isna().all()
    assert (s["n_corruptions"] == 2).all() and (s["n_transforms"] == 1).all()


def test_risk_columns_are_signed_scores():
    probes, clean, outcomes = toy_tables(1)
    s = _scores(probes, clean, outcomes=outcomes[outcomes["source"] == "real"])
    for name in SCORES:
        np.testing.assert_array_equal(s[risk_column(name)].to_numpy(), RISK_SIGN[name] * s[name].to_numpy())
    assert RISK_SIGN == {
        "S": -1,
        "U": -1,
        "ret": -1,
        "delta": 1,
        "A3": -1,
        "TTA": -1,
        "A3_TTA": -1,
        "class_delta": 1,
        "g_SU": 1,
    }


def test_scores_agree_with_a_per_image_loop():
    probes, clean, outcomes = toy_tables(2)
    s = _scores(probes, clean, outcomes=outcomes).set_index(["model", "record_id"])
    prob_cols = [f"prob_{c}" for c in range(3)]
    cc = clean[(clean["pred"] == clean["true_label"]) & (clean["split"] == "eval")]
    assert len(s) == len(cc)
    for _, row in cc.iterrows():
        got = s.loc[(row["model"], row["record_id"])]
        mine = probes[(probes["model"] == row["model"]) & (probes["record_id"] == row["record_id"])]
        corr = mine[mine["kind"] == "corruption"].sort_values("probe")
        tta = mine[mine["kind"] == "transform"].sort_values("probe")
        assert got["S"] == row["max_prob"]
        assert got["U"] == pytest.approx(corr["true_prob"].mean(), abs=1e-12)
        assert got["ret"] == pytest.approx((corr["pred"] == row["true_label"]).mean(), abs=1e-12)
        assert got["TTA"] == pytest.approx(tta["true_prob"].mean(), abs=1e-12)
        v0 = row[prob_cols].to_numpy(dtype=float)
        assert got["A3"] == pytest.approx(a3_naive(v0, list(corr[prob_cols].to_numpy(dtype=float))), abs=1e-12)
        assert got["A3_TTA"] == pytest.approx(a3_naive(v0, list(tta[prob_cols].to_numpy(dtype=float))), abs=1e-12)
        dev = clean[
            (clean["model"] == row["model"]) & (clean["split"] == "dev") & (clean["true_label"] == row["true_label"])
        ]
        drops = [
            r["true_prob"]
            - probes[
                (probes["model"] == row["model"])
                & (probes["record_id"] == r["record_id"])
                & (probes["kind"] == "corruption")
            ]["true_prob"].mean()
            for _, r in dev.iterrows()
        ]
        assert got["class_delta"] == pytest.approx(np.mean(drops), abs=1e-12)


def test_g_su_matches_a_fit_on_the_explicitly_pooled_rows():
    probes, clean, outcomes = toy_tables(3, n_images=60)
    s = _scores(probes, clean, outcomes=outcomes)
    for model in ("m1", "m2"):
        c = clean[clean["model"] == model].set_index("record_id")
        u = (
            probes[(probes["model"] == model) & (probes["kind"] == "corruption")]
            .groupby("record_id")["true_prob"]
            .mean()
        )
        dev_cc = c.index[(c["split"] == "dev") & (c["pred"] == c["true_label"])]
        feats = np.column_stack([c.loc[dev_cc, "max_prob"], u.loc[dev_cc]])
        scaler = StandardScaler().fit(feats)
        o = outcomes[(outcomes["model"] == model) & outcomes["record_id"].isin(dev_cc)]
        pooled = np.column_stack([c.loc[o["record_id"], "max_prob"], u.loc[o["record_id"]]])
        y = (o["pert_pred"] != o["true_label"]).to_numpy()
        fit = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(scaler.transform(pooled), y)
        mine = s[s["model"] == model]
        x_eval = np.column_stack([mine["S"], mine["U"]])
        np.testing.assert_allclose(mine["g_SU"], fit.predict_proba(scaler.transform(x_eval))[:, 1], atol=1e-3)


def test_missing_pieces_warn_and_leave_nan():
    probes, clean, _ = toy_tables(4)
    no_probs = [c for c in clean.columns if not c.startswith("prob_")]
    with pytest.warns(UserWarning) as caught:
        s = screening_scores(probes[[c for c in probes.columns if not c.startswith("prob_")]], clean[no_probs])
    messages = " ".join(str(w.message) for w in caught)
    assert "'A3'" in messages and "'g_SU'" in messages
    assert s["A3"].isna().all() and s["A3_TTA"].isna().all() and s["U"].notna().all()
    with pytest.warns(UserWarning, match="'TTA'"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*g_SU")
        s = screening_scores(probes[probes["kind"] == "corruption"], clean)
    assert s["TTA"].isna().all() and (s["n_transforms"] == 0).all()
    with pytest.warns(UserWarning, match="'class_delta'"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*g_SU")
        s = screening_scores(probes, clean.drop(columns="split"))
    # without a split column every image is an evaluation image
    assert len(s) == int((clean["pred"] == clean["true_label"]).sum())


def test_development_images_without_probes_only_drop_the_controls():
    probes, clean, outcomes = toy_tables(10)
    dev_ids = clean.loc[clean["split"] == "dev", ["model", "record_id"]]
    is_dev = pd.MultiIndex.from_frame(probes[["model", "record_id"]]).isin(pd.MultiIndex.from_frame(dev_ids))
    full = _scores(probes, clean, outcomes=outcomes)
    with pytest.warns(UserWarning, match="'class_delta'"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*g_SU")
        reduced = screening_scores(probes[~is_dev], clean, outcomes=outcomes)
    pd.testing.assert_frame_equal(
        reduced[["model", "record_id", "U", "A3", "TTA"]], full[["model", "record_id", "U", "A3", "TTA"]]
    )
    assert reduced["class_delta"].isna().all() and reduced["g_SU"].isna().all()


def _relabel(frame, row, label):
    """Change a row's true label consistently with its probability vector."""
    frame = _break(frame, "true_label", label, row)
    return _break(frame, "true_prob", frame[f"prob_{label}"].iloc[row], row)


def test_probability_vectors_are_only_needed_for_scored_images():
    probes, clean, _ = toy_tables(8)
    prob_cols = [c for c in clean.columns if c.startswith("prob_")]
    full = _scores(probes, clean)
    unscored = ~((clean["split"] == "eval") & (clean["pred"] == clean["true_label"]))
    ids = clean.loc[unscored, ["model", "record_id"]]
    c2 = clean.copy()
    c2.loc[unscored, prob_cols] = np.nan
    p2 = probes.copy()
    p2.loc[p2.set_index(["model", "record_id"]).index.isin(pd.MultiIndex.from_frame(ids)), prob_cols] = np.nan
    pd.testing.assert_frame_equal(_scores(p2, c2), full)
    # one scored image without its vectors: A3 is NaN there only, with a warning
    target = clean.loc[~unscored].iloc[0]
    hole = (p2["model"] == target["model"]) & (p2["record_id"] == target["record_id"]) & (p2["kind"] == "corruption")
    p2.loc[hole, prob_cols] = np.nan
    with pytest.warns(UserWarning, match="'A3' is undefined"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*g_SU")
        got = screening_scores(p2, c2).set_index(["model", "record_id"])
    assert np.isnan(got.loc[(target["model"], target["record_id"]), "A3"])
    assert got["A3"].notna().sum() == len(got) - 1


def _break(frame, column, value, row=0):
    frame = frame.copy()
    frame.loc[frame.index[row], column] = value
    return frame


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p, c: (p.drop(columns="kind"), c), "`probes` is missing column\\(s\\) \\['kind'\\]"),
        (lambda p, c: (p, c.iloc[:0]), "`clean` has no rows"),
        (lambda p, c: (_break(p, "kind", "blur"), c), "column 'kind': 'blur'"),
        (lambda p, c: (_break(p, "max_prob", 1.5), c), "column 'max_prob': 1.5 is not a probability"),
        (lambda p, c: (p, _break(c, "true_label", -1)), "column 'true_label': -1 is not a class label"),
        (lambda p, c: (p, _break(c, "split", "train")), "column 'split': 'train'"),
        (lambda p, c: (p.drop(index=p.index[0]), c), "has 3 corruption probe\\(s\\) but the model has 4"),
        (lambda p, c: (pd.concat([p, p.iloc[:1]]), c), "duplicate \\('model', 'record_id', 'probe'\\)"),
        (lambda p, c: (p, pd.concat([c, c.iloc[:1]])), "duplicate \\('model', 'record_id'\\)"),
        (lambda p, c: (_relabel(p, 1, 2), c), "`clean` says"),
        (lambda p, c: (p, c.iloc[1:]), "no clean output for this"),
        (lambda p, c: (_break(p, "kind", "transform"), c), "probe 'c0' appears with both kinds"),
        (lambda p, c: (_break(p, "true_prob", 0.999), c), "exceeds max_prob"),
        (lambda p, c: (p, _break(c, "max_prob", 0.99)), "disagrees with the probability vector"),
        (lambda p, c: (p, c.assign(prob_3=0.0)), "4 prob_\\* columns but `probes` has 3"),
        (lambda p, c: (_break(p, "prob_1", np.nan), c), "column 'prob_1': empty, but the row has other"),
    ],
    ids=[
        "missing-column",
        "empty",
        "bad-kind",
        "prob-range",
        "negative-label",
        "bad-split",
        "incomplete-probes",
        "duplicate-probe",
        "duplicate-clean",
        "label-mismatch",
        "orphan-probe",
        "kind-clash",
        "true-above-max",
        "vector-mismatch",
        "class-count-mismatch",
        "partial-vector",
    ],
)
def test_bad_tables_are_rejected_naming_the_problem(mutate, message):
    probes, clean, _ = toy_tables(5)
    probes, clean = mutate(probes, clean)
    with pytest.raises(ValueError, match=message):
        _scores(probes, clean)


def test_outcomes_of_several_sources_are_refused_for_g():
    probes, clean, outcomes = toy_tables(6)
    mixed = outcomes.assign(source=np.where(outcomes["condition"] == "real-a", "print", "screen"))
    with pytest.raises(ValueError, match="one source"):
        _scores(probes, clean, outcomes=mixed)


def test_outcomes_must_describe_the_same_clean_images():
    probes, clean, outcomes = toy_tables(9)
    bad = outcomes.copy()
    row = bad.index[(bad["clean_pred"] == bad["true_label"])][0]
    bad.loc[row, "clean_pred"] = (bad.loc[row, "true_label"] + 1) % 3
    bad.loc[row, "clean_true_prob"] = 0.0
    with pytest.raises(ValueError, match="disagrees with `clean` about the image"):
        _scores(probes, clean, outcomes=bad)


def test_scores_are_deterministic_and_ignore_row_order():
    probes, clean, outcomes = toy_tables(7)
    a = _scores(probes, clean, outcomes=outcomes)
    b = _scores(probes.sample(frac=1.0, random_state=1), clean.sample(frac=1.0, random_state=2), outcomes=outcomes)
    pd.testing.assert_frame_equal(a, b)
