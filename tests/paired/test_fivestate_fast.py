"""The five-state solver's fast path (feasible witnesses, clipped bounds) against the plain program.

``core.paired._fivestate`` settles most flip-endpoint ranges without the integer program: a
bound is taken from a feasible placement when that placement reaches the Ik box's end (or the
caller's clip), and only the other bounds are solved. These tests hold that path to the
exhaustive listing of placements (``_enumerate``) and to the plain two-sided program
(``_solve``), with the listing shortcut switched off so that small problems take the fast path.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pytest
from _pairs_strategies import five_state_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from paired_records import cell_from_arrays

import core.paired._fivestate as fs
from core.paired.states import class_table


@contextlib.contextmanager
def _fast_path_only():
    """No exhaustive listing (every problem goes to the witnesses / program), fresh caches."""
    caches = (fs._range_cached, fs._quick_range, fs._solved_bound)
    for cache in caches:
        cache.cache_clear()
    try:
        with mock.patch.object(fs, "_ENUMERATION_LIMIT", 1):
            yield
    finally:
        for cache in caches:
            cache.cache_clear()


def _key(c, d_in, d_out):
    return tuple(sorted(zip(np.asarray(c).tolist(), np.asarray(d_in).tolist(), np.asarray(d_out).tolist())))


@st.composite
def placement_problem(draw):
    n_labels = draw(st.integers(2, 5))
    c = np.array(draw(st.lists(st.integers(0, 4), min_size=n_labels, max_size=n_labels)))
    d_in = np.array(draw(st.lists(st.integers(0, 4), min_size=n_labels, max_size=n_labels)))
    d_out = np.array(draw(st.lists(st.integers(0, 4), min_size=n_labels, max_size=n_labels)))
    m = draw(st.integers(0, int(min(c.sum(), (d_in + d_out).sum()))))
    s = draw(st.integers(0, m))
    return c, d_in, d_out, s, m - s


@settings(max_examples=250)
@given(problem=placement_problem(), data=st.data())
def test_fast_range_equals_exhaustive_listing_and_the_plain_program(problem, data):
    c, d_in, d_out, s, w = problem
    h, r = int((d_in + d_out).sum()) - s - w, int(c.sum()) - s - w
    truth = fs._enumerate(c, d_in, d_out, h=h, s=s, w=w)
    box_low, box_high = max(0, h - int(d_out.sum())), min(h, int(d_in.sum()))
    floor = data.draw(st.integers(box_low - 1, box_high + 1))
    cap = data.draw(st.integers(box_low - 1, box_high + 1))
    with _fast_path_only():
        fast = fs._clipped_range(_key(c, d_in, d_out), s, w, None, None)
        clipped = fs._clipped_range(_key(c, d_in, d_out), s, w, floor, cap)
    assert fast == truth
    if truth is None:
        assert clipped is None
        return
    assert fs._solve(c, d_in, d_out, h=h, r=r, s=s, w=w) == truth
    assert clipped == (max(truth[0], floor), min(truth[1], cap))


@settings(max_examples=150)
@given(problem=placement_problem())
def test_witnesses_are_feasible_placements_inside_the_box(problem):
    c, d_in, d_out, s, w = problem
    d = d_in + d_out
    h = int(d.sum()) - s - w
    rng = np.random.default_rng(0)
    for lo, hi in ((np.zeros_like(d), d), (np.minimum(d_in, d), d)):
        cand = fs._box_candidates(lo, hi, h, rng)
        if lo.sum() <= h <= hi.sum():
            assert len(cand) == 2 * fs._WITNESS_DRAWS
            assert (cand >= lo).all() and (cand <= hi).all() and (cand.sum(axis=1) == h).all()
        else:
            assert len(cand) == 0
    seen = fs._witness_placements(c, d_in, d_out, h=h, s=s, w=w)
    truth = fs._enumerate(c, d_in, d_out, h=h, s=s, w=w)
    if truth is None:
        assert seen is None
    elif seen is not None:  # attained counts lie inside the exact range
        assert truth[0] <= seen[0] <= seen[1] <= truth[1]


def _counting_solve():
    calls = []
    real = fs._solve

    def solve(*args, **kwargs):
        calls.append(kwargs.get("which", "both"))
        return real(*args, **kwargs)

    return calls, mock.patch.object(fs, "_solve", solve)


def test_a_range_strictly_inside_the_box_is_solved_and_an_attained_one_is_not():
    # From the shipped demo pool: the five-state counts lift the smallest count from 3 to 5.
    c, d_in, d_out = np.array([0, 0, 0, 0, 1, 4]), np.array([0, 0, 0, 5, 1, 1]), np.array([1, 2, 2, 7, 6, 7])
    s, w = 4, 0
    h = int((d_in + d_out).sum()) - s - w
    truth = fs._enumerate(c, d_in, d_out, h=h, s=s, w=w)
    assert truth == (5, 7) and (max(0, h - d_out.sum()), min(h, d_in.sum())) == (3, 7)
    calls, patch = _counting_solve()
    with _fast_path_only(), patch:
        assert fs.flip_endpoint_range(c, d_in, d_out, s=s, w=w) == truth
        assert calls == ["low"]  # the top of the box is attained by a witness
        calls.clear()
        # A caller clipping at the smallest count seen (5) or above needs no program at all ...
        fs._solved_bound.cache_clear()
        assert fs._clipped_range(_key(c, d_in, d_out), s, w, 5, None) == (5, 7)
        assert fs._clipped_range(_key(c, d_in, d_out), s, w, 6, 6) == (6, 6)
        assert calls == []
        # ... below it, the bound is solved.
        assert fs._clipped_range(_key(c, d_in, d_out), s, w, 4, None) == (5, 7)
        assert calls == ["low"]


@settings(max_examples=60)
@given(cell=five_state_cell(max_classes=3, max_size=8), data=st.data())
def test_clipped_driver_equals_the_clipped_exact_ranges(cell, data):
    table = class_table(cell)
    inside = table.pert_max_prob >= 0.6
    n_groups = len(table.group_n)
    floor = np.array(data.draw(st.lists(st.integers(-1, 8), min_size=n_groups, max_size=n_groups)))
    cap = np.array(data.draw(st.lists(st.integers(-1, 8), min_size=n_groups, max_size=n_groups)))
    low, high = fs.flip_ranges(table, inside)
    with _fast_path_only():
        fast_low, fast_high = fs.flip_ranges(table, inside)
        clip_low, clip_high = fs.flip_ranges(table, inside, floor=floor, cap=cap)
    np.testing.assert_array_equal(fast_low, low)
    np.testing.assert_array_equal(fast_high, high)
    np.testing.assert_array_equal(clip_low, np.maximum(low, floor))
    np.testing.assert_array_equal(clip_high, np.minimum(high, cap))


@pytest.mark.parametrize("seed", range(3))
def test_fast_driver_equals_the_plain_program_on_larger_classes(seed):
    """Classes of 120 records and six wrong labels: the regime of the demo pool's grid."""

    rng = np.random.default_rng(seed)
    n = 360
    y = rng.integers(0, 3, n)
    cp = np.where(rng.random(n) < 0.6, y, (y + 1 + rng.integers(0, 6, n)) % 9)
    pp = np.where(rng.random(n) < 0.4, y, (y + 1 + rng.integers(0, 6, n)) % 9)
    ps = np.round(rng.uniform(0.3, 1, n), 2)
    cell = cell_from_arrays(y, cp, 0.9, np.where(cp == y, 0.9, 0.05), pp, ps, np.where(pp == y, ps, 0.05))
    table = class_table(cell)
    inside = table.pert_max_prob >= 0.6
    wrong = ~table.pert_correct
    expected = []
    for grp in range(len(table.group_n)):
        sl = slice(table.group_start[grp], table.group_start[grp + 1])
        cw, pw = table.clean_pred[sl][~table.clean_correct[sl]], table.pert_pred[sl][wrong[sl]]
        pin = inside[sl][wrong[sl]]
        labels = np.union1d(cw, pw)
        c = np.bincount(np.searchsorted(labels, cw), minlength=len(labels))
        di = np.bincount(np.searchsorted(labels, pw[pin]), minlength=len(labels))
        do = np.bincount(np.searchsorted(labels, pw[~pin]), minlength=len(labels))
        _, _, s, w, _ = table.observed[grp]
        h, r = int((di + do).sum()) - s - w, int(c.sum()) - s - w
        expected.append(fs._solve(c, di, do, h=h, r=r, s=int(s), w=int(w)))
    with _fast_path_only():
        low, high = fs.flip_ranges(table, inside)
    assert list(zip(low.tolist(), high.tolist())) == expected
