"""Tables every widget can render, raw cells as people read them, number lists typed by people."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["cell_text", "display_frame", "is_missing", "parse_float_list", "rounded_text"]


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` that every table widget can render.

    - list / tuple / array cells (e.g. a certificate path) become ``"a → b → c"``;
    - object columns mixing types (numbers and text, bytes, ...) become text, keeping missing
      values missing, so Arrow serialisation never fails on real-world uploads;
    - categorical columns keep their categories but are turned to text when the categories
      themselves mix types;
    - the index is dropped (tables are shown without it).

    Examples
    --------
    >>> df = pd.DataFrame({"path": [["a", "b"], []], "v": [1, "x"], "w": [np.nan, 2.0]})
    >>> display_frame(df).to_dict("list")
    {'path': ['a → b', ''], 'v': ['1', 'x'], 'w': [nan, 2.0]}
    """
    out = frame.reset_index(drop=True).copy()
    for column in out.columns:
        series = out[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            kinds = {type(c) for c in series.cat.categories}
            if len(kinds) > 1:
                out[column] = series.astype(object).where(series.notna(), None).map(cell_text)
            continue
        if series.dtype != object and not pd.api.types.is_string_dtype(series.dtype):
            continue
        values = series.tolist()
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            out[column] = [
                " → ".join(map(str, v)) if isinstance(v, (list, tuple, np.ndarray)) else cell_text(v) for v in values
            ]
            continue
        kinds = {type(v) for v in values if not is_missing(v)}
        if len(kinds) > 1 or kinds & {bytes, dict, set}:
            out[column] = [cell_text(v) for v in values]
    return out


def is_missing(value: object) -> bool:
    """Whether a cell is missing (``None``, float NaN, ``pd.NA`` or ``pd.NaT``).

    Examples
    --------
    >>> [is_missing(v) for v in (None, float("nan"), pd.NA, 0, "")]
    [True, True, True, False, False]
    """
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def cell_text(value: object) -> object:
    """A cell as text (bytes decoded as UTF-8, undecodable bytes replaced); missing stays ``None``."""
    if is_missing(value):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def rounded_text(value: object, digits: int = 3) -> object:
    """A raw cell as people read it: floats rounded (trailing zeros dropped), missing kept missing.

    Examples
    --------
    >>> [rounded_text(v) for v in (1.23456, 2.0, -0.0001, 7, True, None, "a")]
    ['1.235', '2', '0', '7', 'True', None, 'a']
    """
    if is_missing(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        text = f"{float(value):.{digits}f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return cell_text(value)


def parse_float_list(text: str, name: str) -> tuple[float, ...]:
    """Parse ``"0.1, 0.2 0.5"`` (commas and/or spaces) into floats, naming ``name`` on error.

    Examples
    --------
    >>> parse_float_list("0.5, 0.1 1", "severities")
    (0.5, 0.1, 1.0)
    """
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise ValueError(f"`{name}` is empty; enter numbers separated by commas, e.g. 0.1, 0.5, 1.0.")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"`{name}` must be numbers separated by commas; {part!r} is not a number.") from None
        if not math.isfinite(value):
            raise ValueError(f"`{name}` must contain finite numbers; got {part!r}.")
        values.append(value)
    return tuple(values)
