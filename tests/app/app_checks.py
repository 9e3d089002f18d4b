"""Checks shared by the AppTest suites of ``tests/app`` (import as ``from app_checks import ...``)."""

from __future__ import annotations

import json

import pyarrow as pa


def assert_ok(at) -> None:
    """The run shows no exception box and no error message."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metric(at, label: str) -> str:
    """The value of the one ``st.metric`` labelled ``label`` (fails listing the labels shown)."""
    values = [m.value for m in at.metric if m.label == label]
    assert values, f"no metric {label!r}; metrics: {[m.label for m in at.metric]}"
    return values[0]


def vega_chart(at, title_start: str) -> tuple[dict, list[dict]]:
    """The spec of the Vega-Lite chart whose title starts with ``title_start``, and its data rows
    (Streamlit sends a spec's top-level ``data.values`` beside it, as Arrow)."""
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["title"]["text"].startswith(title_start):
            return spec, pa.ipc.open_stream(chart.proto.data.data).read_all().to_pylist()
    raise AssertionError(f"no chart titled {title_start!r}")


def explorer_path(at) -> list[str]:
    """The removal path of the open certificate, read from the trajectory chart's steps."""
    _, rows = vega_chart(at, "Removal trajectory")
    return [row["step"].split(" −", 1)[1] for row in rows[1:]]  # "3 −income"


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
