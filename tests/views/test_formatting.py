"""core.views.formatting: display safety, rounded raw cells, number lists typed by people."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from core.views.formatting import display_frame, parse_float_list


def test_display_frame_makes_awkward_columns_arrow_safe():
    frame = pd.DataFrame(
        {
            "mixed": [1, "a", None, 2.5],
            "bytes": [b"x", None, b"\xff", b"z"],
            "path": [["a", "b"], ("c",), np.array(["d", "e"]), []],
            "cat_mixed": pd.Categorical([1, "x", None, 1]),
            "cat_plain": pd.Categorical(["u", "v", None, "u"]),
            "num": [np.nan, 1.0, np.inf, -2.0],
        },
        index=[10, 11, 12, 13],
    )
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        pa.Table.from_pandas(frame)
    shown = display_frame(frame)
    pa.Table.from_pandas(shown)  # what Streamlit does; must not raise

    def values(column):
        return [None if pd.isna(v) else v for v in shown[column].tolist()]

    assert values("mixed") == ["1", "a", None, "2.5"]
    assert values("bytes") == ["x", None, "\ufffd", "z"]
    assert values("path") == ["a → b", "c", "d → e", ""]
    assert values("cat_mixed") == ["1", "x", None, "1"]
    assert isinstance(shown["cat_plain"].dtype, pd.CategoricalDtype)
    assert shown["num"].isna().tolist() == [True, False, False, False]
    assert list(shown.index) == [0, 1, 2, 3]
    assert frame.index[0] == 10  # input untouched


@pytest.mark.parametrize(
    ("text", "match"),
    [("", "is empty"), ("0.1, abc", "'abc' is not a number"), ("0.1 nan", "finite numbers")],
    ids=["empty", "word", "nan"],
)
def test_parse_float_list_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_float_list(text, "severities")
