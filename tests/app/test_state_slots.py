"""ui.state: the typed session slots read, write, drop and seed exactly like the string keys
they replace (same key in ``st.session_state``, defaults never shared between sessions)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import ui.state as state
from core.cfc.protocol import Protocol
from core.tabular.datasets import DEFAULT_DATASET
from ui.state import (
    STATE_CLASSES,
    ExplorerState,
    OverviewState,
    RecaptureState,
    SharedState,
    applied_selection,
    explorer_state,
    seed_defaults,
)


@pytest.fixture
def session(monkeypatch) -> dict:
    store: dict = {}
    monkeypatch.setattr(state, "st", SimpleNamespace(session_state=store))
    return store


def test_a_slot_reads_writes_and_drops_its_key(session):
    assert ExplorerState.sort.key == "explorer_sort"
    assert explorer_state().sort == "fds"  # unset: the default, nothing stored
    assert session == {}
    explorer_state().sort = "rcma"
    assert session == {"explorer_sort": "rcma"}
    assert explorer_state().sort == "rcma"
    session["explorer_sort"] = "kstar"  # a widget writing its key is read back
    assert explorer_state().sort == "kstar"
    del explorer_state().sort
    assert "explorer_sort" not in session and explorer_state().sort == "fds"
    del explorer_state().sort  # dropping an unset value is no error (as pop(key, None))


def test_a_mutable_default_is_never_shared(session):
    groups = explorer_state().whatif_groups
    groups.append("age")
    assert explorer_state().whatif_groups == []
    seed_defaults()
    session["whatif_groups"].append("age")
    assert ExplorerState.whatif_groups.default == []


def test_seeding_sets_every_seeded_default_once_and_keeps_set_values(session):
    session["seed"] = 7
    seed_defaults({SharedState.reviews_db: "/tmp/r.sqlite"})
    assert session["seed"] == 7  # a value already set is kept
    assert session["reviews_db"] == "/tmp/r.sqlite"
    assert session["dataset"] == DEFAULT_DATASET
    p = Protocol()
    assert (session["proto_grouping"], session["proto_w2"], session["proto_operators"]) == (
        p.grouping,
        p.weights[1],
        list(p.operators),
    )
    assert session["proto_depth"] == ("auto" if p.depth is None else p.depth)
    assert "recap_mean" not in session  # a widget with its own first value is not seeded
    seeded = {s.key for cls in STATE_CLASSES for s in cls.slots() if s.seeded}
    assert seeded <= set(session) and len(seeded) == 95
    session.clear()
    seed_defaults()
    assert session["reviews_db"] == SharedState.reviews_db.default


def test_slots_of_a_class_in_order_and_standalone_slots(session):
    assert [s.name for s in OverviewState.slots()][:3] == ["upload_target", "proto_grouping", "proto_baseline"]
    assert RecaptureState.probe_run.seeded is False
    applied = applied_selection("triage_table")
    assert applied.key == "_triage_table_applied" and applied.read() == []
    applied.write([3])
    assert session == {"_triage_table_applied": [3]}
    applied.clear()
    assert session == {}
