"""How tables read on screen: column headers for people, and cell values no grid garbles.

The data keep their machine names and raw values (the CSV downloads hold them unchanged);
only what a table widget shows goes through here:

- :func:`column_label` turns ``flip_budget`` into ``k*``, ``mean_rcma`` into ``mean RCMA``,
  ``lambda_star_attenuate_all`` into ``λ* attenuate_all`` and any other snake_case name
  into words; names with a capital (``dM_k``, ``J_low``) are symbols and stay as they are;
- :func:`display_values` writes ``±inf`` as ``∞`` / ``−∞`` (a grid prints "Infinity") and
  ISO timestamps to the second in UTC (no microseconds).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["column_label", "display_values", "flip_budget_text", "flip_budget_texts", "no_flip_text"]

_LABELS = {
    "flip_budget": "k*",
    "k_star": "k*",
    "rcma": "RCMA",
    "mean_rcma": "mean RCMA",
    "median_rcma": "median RCMA",
    "fds": "FDS",
    "fds_auroc": "FDS AUROC",
    "share_k_le_2": "share k* ≤ 2",
    "share_brittle": "share brittle",
    "auroc": "AUROC",
    "aurc": "AURC",
    "ap": "AP",
    "average_precision": "AP",
    "macro_f1": "macro-F1",
    "nll": "NLL",
    "ece": "ECE",
    "brier": "Brier",
    "tau": "τ",
    "D_plus": "D⁺",
    "n": "n",
    "u": "u",
    "selection_prob": "selection probability",
    "created_at": "saved at (UTC)",
    "reviewed_at": "reviewed at (UTC)",
}
_SNAKE = re.compile(r"[a-z0-9]+(_[a-z0-9]+)+")
# ISO 8601 with a time part, e.g. 2026-12-01T20:03:11.123456+00:00 (what the review store writes).
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:?\d{2}|Z)?$")


def column_label(name: object) -> str:
    """Header shown for a column (see the module docstring).

    Examples
    --------
    >>> [column_label(c) for c in ("flip_budget", "lambda_star_attenuate_all", "true_label", "dM_k")]
    ['k*', 'λ* attenuate_all', 'true label', 'dM_k']
    """
    text = str(name)
    if text in _LABELS:
        return _LABELS[text]
    if text.startswith("lambda_star_"):
        return f"λ* {text.removeprefix('lambda_star_')}"
    if text.startswith("capture@"):
        return text.replace("capture@", "capture @ ")
    if _SNAKE.fullmatch(text):
        return " ".join(_LABELS.get(word, word) for word in text.split("_"))
    return text


def _infinite_text(value: object) -> object:
    if isinstance(value, (float, np.floating)) and math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return None
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return value


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _second(value: object) -> object:
    if isinstance(value, str) and _ISO.match(value):
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_convert("UTC") if stamp.tzinfo is not None else stamp
        return stamp.strftime("%Y-%m-%d %H:%M:%S")
    return value


def display_values(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose infinite floats read ``∞`` and whose timestamps stop at the
    second (UTC).

    A float column holding an infinity becomes text (its finite values to four significant
    digits, NaN missing), since a numeric grid column cannot show ``∞``; other columns are
    untouched. Datetime columns and ISO-timestamp text columns are shown as
    ``YYYY-MM-DD HH:MM:SS`` in UTC.

    Examples
    --------
    >>> df = pd.DataFrame({"lam": [0.3, np.inf], "at": ["2026-12-01T20:03:11.123456+00:00", None]})
    >>> display_values(df).to_dict("list")
    {'lam': ['0.3', '∞'], 'at': ['2026-12-01 20:03:11', None]}
    """
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype.kind == "f" and np.isinf(series.to_numpy()).any():
            out[column] = pd.Series([_infinite_text(v) for v in series.tolist()], index=out.index, dtype=object)
        elif series.dtype.kind == "M":
            values = series.dt.tz_convert("UTC") if series.dt.tz is not None else series
            text = values.dt.strftime("%Y-%m-%d %H:%M:%S")
            out[column] = pd.Series(
                [t if ok else None for t, ok in zip(text, series.notna())], index=out.index, dtype=object
            )
        elif (series.dtype == object or pd.api.types.is_string_dtype(series.dtype)) and any(
            isinstance(v, str) and _ISO.match(v) for v in series.tolist()
        ):
            out[column] = pd.Series(
                [None if _missing(v) else _second(v) for v in series.tolist()], index=out.index, dtype=object
            )
    return out


def flip_budget_text(flip_budget: int, depth: int) -> str:
    """``k*`` as shown: the number, or ``"no flip ≤ K"`` when the path of depth ``K`` never flips
    the prediction (stored as ``K + 1``, SPEC A.3, which is never shown).

    Examples
    --------
    >>> flip_budget_text(2, 5), flip_budget_text(6, 5)
    ('2', 'no flip ≤ 5')
    """
    if depth < 0 or flip_budget < 1 or flip_budget > depth + 1:
        raise ValueError(
            f"`flip_budget` must be between 1 and depth + 1 ({depth + 1}); got {flip_budget} (depth {depth})."
        )
    return no_flip_text(depth) if flip_budget > depth else f"{flip_budget}"


def no_flip_text(depth: int) -> str:
    """What a certificate whose path never flips the prediction within depth ``K`` shows as ``k*``.

    Examples
    --------
    >>> no_flip_text(5)
    'no flip ≤ 5'
    """
    return f"no flip ≤ {depth}"


def flip_budget_texts(flip_budget: ArrayLike, flipped: ArrayLike, *, depth: int) -> np.ndarray:
    """:func:`flip_budget_text` of a whole column, read from the certificate's ``flipped`` column.

    Parameters
    ----------
    flip_budget : array-like of int, shape (n,)
        ``k*`` in ``1 … K + 1`` (SPEC's value; ``K + 1`` = no flip within depth ``K``).
    flipped : array-like of bool, shape (n,)
        Whether the path flips the prediction within depth ``K`` (``flip_budget <= K``).
    depth : int
        The audit depth ``K``.

    Returns
    -------
    ndarray of object, shape (n,)
        ``"3"`` where it flips, ``"no flip ≤ K"`` where it does not.

    Examples
    --------
    >>> flip_budget_texts([1, 6], [True, False], depth=5).tolist()
    ['1', 'no flip ≤ 5']
    """
    k = np.asarray(flip_budget)
    hit = np.asarray(flipped, dtype=bool)
    if k.shape != hit.shape or k.ndim != 1:
        raise ValueError(f"`flip_budget` and `flipped` must be 1-D of one length; got {k.shape} and {hit.shape}.")
    wrong = np.flatnonzero(hit != (k.astype(np.int64) <= depth))
    if wrong.size:
        i = int(wrong[0])
        raise ValueError(
            f"`flipped` disagrees with `flip_budget` at row {i}: k* = {k[i]}, flipped = {bool(hit[i])} "
            f"(depth {depth}); the table mixes two audits."
        )
    return np.where(hit, k.astype(np.int64).astype(str), no_flip_text(depth)).astype(object)
