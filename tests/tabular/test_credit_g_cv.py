"""scripts/reproduce_credit_g_cv.py (docs/reproduction.md, "Credit-G on all 1,000 rows"): its
channels, its pooled evaluation against a brute-force twin, one fold's determinism, and the
doc's table against the generated one."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("reproduce_credit_g_cv", ROOT / "scripts" / "reproduce_credit_g_cv.py")
cv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cv)


def test_strengths_from_mild_up_are_nested_and_all_in_the_run_channel():
    run = cv.union_channel(3)
    run_columns = {cv.hit_column(name, level) for name, level in run.settings}
    order = list(cv.STRENGTHS)
    for weaker, stronger in itertools.pairwise(order[1:]):
        assert set(cv.strength_columns(weaker)) < set(cv.strength_columns(stronger))
    for columns in cv.channels().values():
        assert columns and set(columns) <= run_columns
    assert set(cv.channels()["main"]) == {
        *(cv.hit_column(s, r) for s in ("group_masking", "within_group_dropout") for r in (0.1, 0.2)),
        *(cv.hit_column("bounded_noise", v) for v in (0.1, 0.25)),
    }, "'main' is LabelChannel()'s grid"


def _naive_auroc(scores, labels):
    pos, neg = scores[labels], scores[~labels]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    return float(np.mean(pairs))


def test_pooled_evaluation_equals_a_naive_twin():
    rng = np.random.default_rng(0)
    columns = sorted({c for cols in cv.channels().values() for c in cols})
    frames = []
    for model, repeat, fold in itertools.product(["a", "b"], [0, 1], [0, 1, 2]):
        n = 40
        frame = pd.DataFrame(
            {
                "row_id": np.arange(n) + 100 * fold,
                "high_confidence": rng.random(n) < 0.7,
                **{f"score_{s}": rng.integers(0, 6, n).astype(float) for s in cv.SCORES},  # ties on purpose
                **{c: rng.random(n) < 0.15 for c in columns},
            }
        )
        frames.append(frame.assign(model=model, repeat=repeat, fold=fold))
    records = pd.concat(frames, ignore_index=True)
    ev = cv.evaluate(records).set_index(["strength", "model", "repeat"])
    for (channel, cols), model, repeat in itertools.product(cv.channels().items(), ["a", "b"], [0, 1]):
        unit = records[(records["model"] == model) & (records["repeat"] == repeat) & records["high_confidence"]]
        y = unit[cols].to_numpy().any(axis=1)
        row = ev.loc[(channel, model, repeat)]
        assert row["n"] == len(unit) and row["n_brittle"] == y.sum()
        assert row["fds"] == pytest.approx(_naive_auroc(unit["score_fds"].to_numpy(), y))
        folds = [
            _naive_auroc(f["score_fds"].to_numpy(), f[cols].to_numpy().any(axis=1))
            for _, f in unit.groupby("fold")
            if 0 < f[cols].to_numpy().any(axis=1).sum() < len(f)
        ]
        assert row["fold-mean fds"] == pytest.approx(np.mean(folds))
        assert row["ceiling"] == pytest.approx(min(1.0, 0.2 / (y.sum() / len(unit))))


@pytest.mark.slow
def test_one_fold_is_held_out_and_deterministic():
    from sklearn.model_selection import RepeatedStratifiedKFold

    from core.tabular.datasets import load_dataset

    try:
        dataset = load_dataset("credit_g")
    except ValueError as exc:  # the paper's data is its own install step (docs/install.md)
        pytest.skip(str(exc))
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=1, random_state=0).split(np.zeros(1000), dataset.y)
    train_index, test_index = next(folds)
    channel = cv.union_channel(1)
    first, again = (
        cv.audit_fold(dataset, train_index, test_index, model="logreg", seed=0, channel=channel) for _ in range(2)
    )
    pd.testing.assert_frame_equal(first, again)
    assert first["row_id"].tolist() == dataset.frame.index[test_index].tolist()
    assert {cv.hit_column(name, level) for name, level in channel.settings} <= set(first.columns)
    assert ((first["confidence"] >= 0.9) == first["high_confidence"]).all()


def test_the_docs_table_is_the_generated_one():
    """Every row of the summary table quoted in docs/reproduction.md is in the generated file."""
    doc = (ROOT / "docs" / "reproduction.md").read_text(encoding="utf-8")
    generated = (ROOT / "docs" / "reproduction" / "credit_g_cv.md").read_text(encoding="utf-8")
    quoted = [line for line in doc.splitlines() if line.startswith(tuple(f"| {s} |" for s in cv.STRENGTHS))]
    assert len(quoted) >= len(cv.STRENGTHS)
    for line in quoted:
        assert line in generated, line
