"""Charts of raw data columns (missing values and categories shown, never dropped).

Vega-Lite specs, not plotly figures: the column chart is on the Overview, the first screen,
which then draws without loading plotly.js (a 4.7 MB bundle the browser compiles on every start).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.viz._style import COUNT_AXIS, finish_spec, series_colours

__all__ = ["column_distribution_spec"]

_MISSING = "(missing)"


def column_distribution_spec(
    values: pd.Series, target: pd.Series, *, classes: Sequence[object] | None = None, bins: int = 30
) -> dict:
    """Distribution of one raw column, split by class, as a Vega-Lite spec.

    Numeric columns are drawn as overlaid histograms on ``bins`` shared bins (missing and
    infinite values counted in the subtitle); text / categorical / boolean columns as grouped
    bars per category, most frequent first, with missing values as their own ``(missing)``
    category.

    Parameters
    ----------
    values : Series of shape (n_rows,)
        The raw column.
    target : Series of shape (n_rows,)
        Class label of every row.
    classes : sequence, optional
        Class order of the legend (default: sorted distinct labels).
    bins : int
        Histogram bins for a numeric column.

    Returns
    -------
    dict
        Vega-Lite 5 spec with its data inline, one row per (bin or category, class): ``class``,
        ``rows`` and either ``start`` / ``end`` (numeric) or ``category``.
    """
    if len(values) != len(target):
        raise ValueError(f"`values` and `target` must have the same length; got {len(values)} and {len(target)}.")
    if not (isinstance(bins, (int, np.integer)) and bins >= 1):
        raise ValueError(f"`bins` must be an int >= 1; got {bins!r}.")
    name = str(values.name)
    labels = list(classes) if classes is not None else sorted(pd.unique(target.dropna()), key=str)
    names = [str(c) for c in labels]
    colour = {
        "field": "class",
        "type": "nominal",
        "sort": names,
        "scale": {"domain": names, "range": series_colours(len(labels))},
    }
    v = values.reset_index(drop=True)
    t = target.reset_index(drop=True)
    missing = int(v.isna().sum())
    if pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v):
        x = v.to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(x)
        edges = np.histogram_bin_edges(x[finite], bins=bins) if finite.any() else None
        rows = []
        if edges is not None:  # no finite value: an empty chart, the subtitle says why
            for label, shown in zip(labels, names):
                counts, _ = np.histogram(x[finite & (t == label).to_numpy()], bins=edges)
                rows += [
                    {"class": shown, "start": a, "end": b, "rows": int(c)}
                    for a, b, c in zip(edges[:-1].tolist(), edges[1:].tolist(), counts)
                ]
        infinite = int((~finite).sum()) - missing
        hidden = f"{missing:,} missing" + (f" and {infinite:,} infinite" if infinite else "")
        note = f"{hidden} value{'' if missing + infinite == 1 else 's'} not shown"
        spec = {
            "mark": {"type": "bar", "opacity": 0.6, "binSpacing": 0},
            "encoding": {
                "x": {
                    "field": "start",
                    "type": "quantitative",
                    "bin": {"binned": True},
                    "title": f"{name} (raw value)",
                },
                "x2": {"field": "end"},
                "y": {
                    "field": "rows",
                    "type": "quantitative",
                    "stack": None,
                    "title": "rows (count)",
                    "axis": COUNT_AXIS,
                },
                "color": colour,
                "tooltip": [
                    {"field": "class"},
                    {"field": "start", "title": "from", "format": ".4~g"},
                    {"field": "end", "title": "to", "format": ".4~g"},
                    {"field": "rows"},
                ],
            },
        }
    else:
        text = v.astype(object).where(v.notna(), _MISSING).map(str)
        order = text.value_counts().index.tolist()
        rows = []
        for label, shown in zip(labels, names):
            counts = text[t == label].value_counts().reindex(order, fill_value=0)
            rows += [{"class": shown, "category": cat, "rows": int(c)} for cat, c in counts.items()]
        note = f"missing values shown as {_MISSING}"
        spec = {
            "mark": {"type": "bar"},
            "encoding": {
                "x": {
                    "field": "category",
                    "type": "nominal",
                    "sort": order,
                    "title": f"{name} (category)",
                    "axis": {"labelAngle": -30 if len(order) > 6 else 0},
                },
                "xOffset": {"field": "class", "sort": names},
                "y": {"field": "rows", "type": "quantitative", "title": "rows (count)", "axis": COUNT_AXIS},
                "color": colour,
                "tooltip": [{"field": "class"}, {"field": "category"}, {"field": "rows"}],
            },
        }
    return finish_spec(
        {"data": {"values": rows}, **spec}, title=f"Distribution of {name} by class", subtitle=note, height=300
    )
