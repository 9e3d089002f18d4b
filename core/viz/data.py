"""Figures of raw data columns (missing values and categories shown, never dropped)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.viz._style import finish, series_colours

__all__ = ["column_distribution_figure"]

_MISSING = "(missing)"


def column_distribution_figure(values: pd.Series, target: pd.Series, *, classes: Sequence[object] | None = None,
                               bins: int = 30) -> go.Figure:
    """Distribution of one raw column, split by class.

    Numeric columns are drawn as overlaid histograms (missing values counted in the title);
    text / categorical columns as grouped bars per category, with missing values as their own
    ``(missing)`` category.

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
    """
    if len(values) != len(target):
        raise ValueError(f"`values` and `target` must have the same length; got {len(values)} and {len(target)}.")
    name = str(values.name)
    labels = list(classes) if classes is not None else sorted(pd.unique(target.dropna()), key=str)
    colours = series_colours(len(labels))
    fig = go.Figure()
    v = values.reset_index(drop=True)
    t = target.reset_index(drop=True)
    missing = int(v.isna().sum())
    if pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v):
        finite = v[np.isfinite(v.to_numpy(dtype=float, na_value=np.nan))]
        edges = np.histogram_bin_edges(finite.to_numpy(dtype=float), bins=bins) if len(finite) else None
        for colour, label in zip(colours, labels):
            part = v[(t == label) & v.notna()].to_numpy(dtype=float)
            fig.add_trace(go.Histogram(
                x=part, name=str(label), opacity=0.6, marker=dict(color=colour),
                xbins=None if edges is None else dict(start=edges[0], end=edges[-1], size=(edges[-1] - edges[0]) / bins or 1),
                hovertemplate=f"{label}<br>{name} %{{x}}<br>rows %{{y}}<extra></extra>",
            ))
        fig.update_layout(barmode="overlay")
        x_title = f"{name} (raw value)"
        note = f"{missing:,} missing value{'' if missing == 1 else 's'} not shown"
    else:
        text = v.astype(object).where(v.notna(), _MISSING).map(str)
        order = text.value_counts().index.tolist()
        for colour, label in zip(colours, labels):
            counts = text[t == label].value_counts().reindex(order, fill_value=0)
            fig.add_trace(go.Bar(x=order, y=counts.to_numpy(), name=str(label), marker=dict(color=colour),
                                 hovertemplate=f"{label}<br>%{{x}}: %{{y}} rows<extra></extra>"))
        fig.update_layout(barmode="group")
        fig.update_xaxes(type="category")
        x_title = f"{name} (category)"
        note = f"missing values shown as {_MISSING}"
    # The note is a subtitle: in the x-axis title it made the title run past a half-width figure.
    return finish(fig, title=f"Distribution of {name} by class", subtitle=note, x_title=x_title,
                  y_title="rows (count)", height=360)
