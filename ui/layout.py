"""Columns that stack when the page is narrow.

``st.columns`` stacks only on viewports of at most 640 px; at 1000 px with the sidebar open the
main column is about 540 px wide, so a 3 : 2 split left the charts 300 and 200 px wide (cut
titles, overlapping tick labels, legends on titles) and form buttons 100 px wide ("Save d…").
:func:`flow_columns` puts its containers in one wrapping flex row instead: each keeps at
least ``min_width`` px and grows by its weight, so the row is side by side when they fit and
stacked when they do not, whatever the viewport and sidebar.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

__all__ = ["flow_columns", "flow_css"]


def _weights(spec: int | Sequence[float]) -> list[float]:
    if isinstance(spec, bool):
        raise ValueError(f"`spec` must be a column count or a sequence of positive weights; got {spec!r}.")
    if isinstance(spec, int):
        if spec < 1:
            raise ValueError(f"`spec` must be >= 1 columns; got {spec}.")
        return [1.0] * spec
    weights = list(spec)
    if not weights or not all(isinstance(w, Real) and not isinstance(w, bool) and w > 0 for w in weights):
        raise ValueError(f"`spec` must be a column count or a sequence of positive weights; got {spec!r}.")
    return [float(w) for w in weights]


def flow_css(key: str, weights: Sequence[float], min_widths: Sequence[int]) -> str:
    """The style rules of a flow row keyed ``key``: child ``i`` grows by ``weights[i]`` from a
    basis of ``min_widths[i]`` px and never shrinks below it (nor beyond the row's width)."""
    return "".join(
        f".st-key-{key} > div:nth-child({i}) {{flex: {w:g} 1 {m}px !important; "
        f"min-width: min({m}px, 100%) !important; width: auto !important;}}"
        for i, (w, m) in enumerate(zip(weights, min_widths), start=1)
    )


def flow_columns(
    spec: int | Sequence[float], *, key: str, min_width: int | Sequence[int] = 360, gap: str = "medium"
) -> list[DeltaGenerator]:
    """Containers side by side while each gets ``min_width`` px, stacked (wrapped) otherwise.

    Parameters
    ----------
    spec : int or sequence of float
        Number of equal columns, or their relative weights (as in ``st.columns``): the space
        left over once every column has its minimum is shared in these proportions.
    key : str
        Unique on the page; names the row (``st-key-<key>``) that the style rules address.
    min_width : int or sequence of int
        Narrowest a column may get (px), one for all or one per column; pick it so that the
        column's content (a chart title, a button label) fits.
    gap : str
        Gap between columns, as in ``st.container``.

    Returns
    -------
    list of DeltaGenerator
        One container per column, in order.
    """
    weights = _weights(spec)
    widths = [min_width] * len(weights) if isinstance(min_width, int) else list(min_width)
    if len(widths) != len(weights) or not all(
        isinstance(m, int) and not isinstance(m, bool) and m >= 40 for m in widths
    ):
        raise ValueError(
            f"`min_width` must be an int >= 40 or one such int per column ({len(weights)}); got {min_width!r}."
        )
    if not key or not key.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"`key` must be a non-empty name of letters, digits, '_' or '-'; got {key!r}.")
    # Outside the row: a style-only st.html takes no space, but inside it would be a flex child.
    st.html(f"<style>{flow_css(key, weights, widths)}</style>")
    row = st.container(horizontal=True, wrap=True, gap=gap, key=key)
    return [row.container(key=f"{key}_{i}") for i in range(len(weights))]
