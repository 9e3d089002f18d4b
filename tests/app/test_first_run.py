"""``ui.first_run.collector_paused``: the cyclic GC is off for the process's first run only."""

from __future__ import annotations

import gc

import pytest

import ui.first_run as first_run


@pytest.fixture
def fresh(monkeypatch):
    """A process that has not run the app yet; the collector restored and unfrozen afterwards."""
    monkeypatch.setattr(first_run, "_started", False)
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    (gc.enable if was_enabled else gc.disable)()


def test_the_first_run_pauses_the_collector_and_freezes_what_it_made(fresh):
    frozen = gc.get_freeze_count()
    with first_run.collector_paused() as paused:
        assert paused and not gc.isenabled()
        made = [[i] for i in range(1000)]  # long-lived objects of the run
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)
    with first_run.collector_paused() as again:  # every later run: nothing changes
        assert not again and gc.isenabled()


def test_the_collector_is_back_whatever_way_the_run_ends(fresh):
    with pytest.raises(RuntimeError, match="stopped"), first_run.collector_paused():
        raise RuntimeError("stopped")  # st.stop / st.rerun end a run with an exception too
    assert gc.isenabled()


def test_a_collector_already_off_is_left_off(fresh):
    gc.disable()
    with first_run.collector_paused() as paused:
        assert not paused
    assert not gc.isenabled()
