"""Hypothesis strategies for small paired cells (shared by the paired bound and policy tests)."""

from __future__ import annotations

from hypothesis import strategies as st
from paired_records import cell

# Coarse grids make ties, threshold equality and same-label wrong answers common.
PROB_GRID = (0.2, 0.4, 0.5, 0.6, 0.8, 1.0)
TAU_GRID = (0.4, 0.5, 0.6, 0.8)


@st.composite
def side(draw, y: int, wrong_labels: tuple[int, ...], correct_percent: int = 50):
    correct = draw(st.integers(0, 99)) < correct_percent
    s = draw(st.sampled_from(PROB_GRID))
    if correct:
        return y, s, s
    pred = draw(st.sampled_from(wrong_labels))
    m = draw(st.sampled_from([v for v in (0.0, 0.1, 0.2, 0.4) if v <= s]))
    return pred, s, m


@st.composite
def small_cell(draw, max_classes: int = 3, max_size: int = 5):
    """One cell (single model × condition × source) with 1–3 classes of 1–5 records each."""
    n_classes = draw(st.integers(1, max_classes))
    rows = []
    for y in range(n_classes):
        size = draw(st.integers(1, max_size))
        wrong = tuple(v for v in range(4) if v != y)[: draw(st.integers(1, 3))]
        # Per-class accuracies vary so that retained pairs, flips and wrong–wrong blocks all occur.
        clean_pct, pert_pct = draw(st.sampled_from([30, 60, 85])), draw(st.sampled_from([20, 45, 70]))
        for _ in range(size):
            cp, cs, cm = draw(side(y, wrong, clean_pct))
            pp, ps, pm = draw(side(y, wrong, pert_pct))
            rows.append((len(rows), y, cp, cs, cm, pp, ps, pm))
    return cell(rows)


@st.composite
def five_state_cell(draw, max_classes: int = 2, max_size: int = 6):
    """Cells where five-state counts tend to bind for H: clean-correct accepted records, and
    wrong records on both sides that share two labels with mixed acceptance (τ = 0.6)."""
    rows = []
    for y in range(draw(st.integers(1, max_classes))):
        size = draw(st.integers(3, max_size))
        labels = (y + 1, y + 2)
        for _ in range(size):
            if draw(st.integers(0, 99)) < 45:
                cp, cs, cm = y, 0.9, 0.9
            else:
                cp = draw(st.sampled_from(labels))
                cs, cm = 0.7, 0.1
            if draw(st.integers(0, 99)) < 25:
                pp = y
                ps = pm = draw(st.sampled_from([0.5, 0.9]))
            else:
                pp = draw(st.sampled_from(labels))
                ps, pm = draw(st.sampled_from([0.4, 0.8])), 0.1
            rows.append((len(rows), y, cp, cs, cm, pp, ps, pm))
    return cell(rows)
