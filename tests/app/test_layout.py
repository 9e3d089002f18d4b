"""ui.layout.flow_columns: columns that wrap below their minimum width instead of shrinking."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from ui.layout import flow_columns, flow_css


def test_css_gives_every_column_its_weight_and_minimum():
    css = flow_css("row", [3.0, 2.0], [420, 340])
    rules = re.findall(
        r"\.st-key-row > div:nth-child\((\d)\) \{flex: (\S+) 1 (\d+)px !important; "
        r"min-width: min\((\d+)px, 100%\) !important;",
        css,
    )
    assert rules == [("1", "3", "420", "420"), ("2", "2", "340", "340")]


def _app() -> None:
    import streamlit as st

    from ui.layout import flow_columns

    cols = flow_columns([3, 2], key="demo_row", min_width=[420, 340])
    cols[0].markdown("left")
    cols[1].markdown("right")
    st.markdown("after")


def test_columns_render_in_order_inside_one_keyed_row():
    app = AppTest.from_function(_app).run(timeout=60)
    assert not app.exception
    assert [m.value for m in app.markdown] == ["left", "right", "after"]
    # The style rules are on the page, and they name the row's key.
    styles = [h.proto.body for h in app.get("html")]
    assert any(".st-key-demo_row > div:nth-child(2)" in s and "340px" in s for s in styles)


@pytest.mark.parametrize(
    ("spec", "kwargs", "match"),
    [
        (0, {}, r"`spec` must be >= 1 columns; got 0"),
        ([1, 0], {}, r"`spec` must be a column count or a sequence of positive weights; got \[1, 0\]"),
        (True, {}, r"`spec` must be a column count"),
        (2, {"min_width": [300]}, r"`min_width` must be an int >= 40 or one such int per column \(2\); got \[300\]"),
        (2, {"min_width": 10}, r"`min_width` must be an int >= 40"),
        (2, {"key": "bad key!"}, r"`key` must be a non-empty name of letters, digits, '_' or '-'; got 'bad key!'"),
    ],
    ids=["zero", "zero-weight", "bool", "widths-length", "too-narrow", "bad-key"],
)
def test_bad_arguments_are_refused_with_the_value(spec, kwargs, match):
    with pytest.raises(ValueError, match=match):
        flow_columns(spec, **{"key": "row", **kwargs})
