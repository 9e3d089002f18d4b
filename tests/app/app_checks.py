"""Checks shared by the AppTest suites of ``tests/app`` (import as ``from app_checks import ...``)."""

from __future__ import annotations

import json


def assert_ok(at) -> None:
    """The run shows no exception box and no error message."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metric(at, label: str) -> str:
    """The value of the one ``st.metric`` labelled ``label`` (fails listing the labels shown)."""
    values = [m.value for m in at.metric if m.label == label]
    assert values, f"no metric {label!r}; metrics: {[m.label for m in at.metric]}"
    return values[0]


def explorer_path(at) -> list[str]:
    """The removal path of the open certificate, read from the trajectory chart's ticks."""
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        ticks = spec["layout"].get("xaxis2", {}).get("ticktext")
        if ticks and ticks[0] == "0<br>intact":
            return [t.split("<br>", 1)[1] for t in ticks[1:]]  # "step<br>group"
    raise AssertionError("trajectory chart not found")


def only_error(at) -> str:
    """The one error message of a run that raised no exception (fails on none or several)."""
    assert not at.exception, [e.value for e in at.exception]
    messages = [e.value for e in at.error]
    assert len(messages) == 1, messages
    return messages[0]


def open_overview_tab(at, name: str) -> None:
    """Open the Overview's tab ``name`` (as a click on it does: its content is drawn once open)."""
    from ui.state import OverviewState

    at.session_state[OverviewState.tab.key] = name
    at.run()
    assert_ok(at)
