"""The reviewer's queue helpers (``core.reviews.queue``) against naive twins: next unreviewed,
previous / next, filters, and the minutes shown for an entry."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.reviews import DECISIONS, REASONS, QueueFilter, filter_queue, next_unreviewed, step_case
from core.reviews.queue import minutes

_ids = st.lists(st.integers(0, 30), unique=True, max_size=12)


@given(order=_ids, reviewed=st.sets(st.integers(0, 30)), current=st.one_of(st.none(), st.integers(0, 30)))
def test_next_unreviewed_matches_a_naive_scan(order, reviewed, current):
    got = next_unreviewed(order, reviewed, current)
    if current in order:
        i = order.index(current)
        ring = order[i + 1 :] + order[:i]
    else:
        ring = order
    expected = None
    for sid in ring:
        if sid not in reviewed and sid != current:
            expected = sid
            break
    assert got == expected


@given(order=_ids, current=st.integers(0, 30), delta=st.integers(-3, 3))
def test_step_case_clamps_to_the_ends(order, current, delta):
    got = step_case(order, current, delta)
    if not order:
        assert got is None
    elif current not in order:
        assert got == order[0]
    else:
        assert got == order[max(0, min(len(order) - 1, order.index(current) + delta))]


_latest_rows = st.dictionaries(
    st.integers(0, 9),
    st.tuples(
        st.sampled_from(DECISIONS), st.sampled_from(["ana", "bo"]), st.sets(st.sampled_from(list(REASONS)), max_size=2)
    ),
)


@given(
    latest_rows=_latest_rows,
    status=st.sampled_from(["all", "unreviewed", "reviewed"]),
    decisions=st.sets(st.sampled_from(DECISIONS), max_size=2),
    reviewers=st.sets(st.sampled_from(["ana", "bo"]), max_size=1),
    reasons=st.sets(st.sampled_from(list(REASONS)), max_size=2),
)
def test_filter_queue_matches_a_naive_loop(latest_rows, status, decisions, reviewers, reasons):
    queue = pd.DataFrame({"sample_id": [7, 3, 9, 0, 5, 1], "rank": range(1, 7)})
    latest = pd.DataFrame(
        [(str(s), d, r, ",".join(c for c in REASONS if c in rs)) for s, (d, r, rs) in latest_rows.items()],
        columns=["sample_id", "decision", "reviewer", "reasons"],
    )
    criteria = QueueFilter(status, tuple(decisions), tuple(reviewers), tuple(reasons))
    expected = []
    for sid in queue["sample_id"]:
        entry = latest_rows.get(sid)
        ok = {"all": True, "unreviewed": entry is None, "reviewed": entry is not None}[status]
        ok &= not decisions or (entry is not None and entry[0] in decisions)
        ok &= not reviewers or (entry is not None and entry[1] in reviewers)
        ok &= not reasons or (entry is not None and bool(entry[2] & reasons))
        if ok:
            expected.append(sid)
    assert filter_queue(queue, latest, criteria)["sample_id"].tolist() == expected


def test_queue_filter_refuses_unknown_values():
    with pytest.raises(ValueError, match=r"`status` must be one of .*got 'done'"):
        QueueFilter("done")
    with pytest.raises(ValueError, match=r"`reasons` must be among .*got \['vibes'\]"):
        QueueFilter(reasons=("vibes",))


def test_minutes_drops_seconds_and_keeps_missing():
    shown = minutes(pd.Series(["2026-01-31T09:15:59.123456+00:00", None, "2026-02-01T23:59:00.000001+01:00"]))
    assert shown.tolist() == ["2026-01-31 09:15 UTC", None, "2026-02-01 22:59 UTC"]
