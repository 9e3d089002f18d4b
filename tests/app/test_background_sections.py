"""AppTest: sections whose computation takes seconds are drawn around, not waited for — the
shipped audit's model (refitted for the explorer's live panels) and a cell's policy comparison
(Paired bounds) when no stored one matches — and fill in by themselves, the same as when
waited for."""

from __future__ import annotations

import time

import pytest
from app_checks import assert_ok

PREPARING = "being prepared in the background"
COMPARING = "being compared under every feasible pairing"


def _until(at, done, *, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done(at):
        assert time.monotonic() < deadline, "the background computation never ended"
        time.sleep(0.5)
        at.run()
        assert_ok(at)


@pytest.fixture
def no_wait(monkeypatch):
    """Nothing waited for, and nothing made yet: the job registry and the audits (their models)
    are per process, and earlier tests of this process may have made them."""
    import streamlit as st

    st.cache_resource.clear()
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")


def _explorer(at) -> dict:
    return {
        "metrics": [(m.label, m.value) for m in at.metric],
        "pills": [list(p.options) for p in at.pills],
        "markdown": [m.value for m in at.markdown],
    }


def test_the_shipped_explorer_draws_at_once_and_its_live_panels_fill_in(no_wait, new_app, monkeypatch):
    at = new_app()
    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    assert any(m.label == "FDS (risk)" for m in at.metric), "the certificate is drawn from the shipped tables"
    waiting = [i.value for i in at.info if PREPARING in i.value]
    assert len(waiting) == 2 and all("refitting the hist_gb model" in v for v in waiting), waiting
    assert len(at.get("progress")) == 1 and not at.pills
    _until(at, lambda at: bool(at.pills))
    assert not [i.value for i in at.info if PREPARING in i.value]
    live = _explorer(at)
    assert ("Exact minimum" in [label for label, _ in live["metrics"]]) and live["pills"]
    # A session that waits for the model sees the same panels.
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "600")
    waited = new_app()
    waited.switch_page("pages/explorer.py").run()
    assert_ok(waited)
    assert _explorer(waited) == live


def _paired_bounds(new_app):
    at = new_app()
    at.switch_page("pages/paired_bounds.py").run()
    assert_ok(at)
    return at


def test_paired_bounds_draws_its_cell_and_its_policy_comparison_fills_in(no_wait, new_app, monkeypatch):
    """A cell without a stored report (an upload's; here the demo's, its stored reports made
    stale) is compared in the background; a demo cell's stored report is drawn at once, the same."""
    import streamlit as st

    from core.paired import policy_store

    with monkeypatch.context() as stale:
        stale.setattr(policy_store, "_FORMAT", -1)  # no stored report matches any more
        st.cache_data.clear()  # a stored report an earlier test of this process read
        at = _paired_bounds(new_app)
        assert any(m.label == "Pairs in the cell" for m in at.metric), "the cell is drawn at once"
        assert any(COMPARING in i.value for i in at.info) and len(at.get("progress")) == 1
        assert any(s.value == "Across every model and condition" for s in at.subheader), "the grid is not waited for"
        _until(at, lambda at: not any(COMPARING in i.value for i in at.info))
        tables = [d.value.to_json() for d in at.dataframe]
        assert (len(at.get("plotly_chart")), len(at.get("vega_lite_chart"))) == (3, 1)  # intervals: Vega-Lite
        stale.setenv("AUDIT_FOREGROUND_WAIT_S", "600")
        waited = _paired_bounds(new_app)
        assert [d.value.to_json() for d in waited.dataframe] == tables
    st.cache_data.clear()  # the cell's "no stored report" of the stale files
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")
    stored = _paired_bounds(new_app)
    assert not any(COMPARING in i.value for i in stored.info) and not stored.get("progress")
    assert (len(stored.get("plotly_chart")), len(stored.get("vega_lite_chart"))) == (3, 1)
    assert [d.value.to_json() for d in stored.dataframe] == tables
