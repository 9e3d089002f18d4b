"""Small Streamlit building blocks shared by the pages: headers, figures, tables, errors (:mod:`ui.errors`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from core import viz
from core.csv_safe import csv_bytes
from core.views.formatting import display_frame
from core.viz.tables import column_label, display_values
from ui.errors import guarded  # re-exported: the pages take their building blocks from here

# Tables longer than this show their first rows only (a browser grid of 10^5+ rows stalls the
# page); the CSV download always holds every row.
MAX_SHOWN_ROWS = 10_000
_PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}

# Plotly copies (and validates, property by property) the default template into every new
# figure: 30-100 ms a figure, a third of a certificate chart's build and most of a row click
# on a sample not seen yet. Streamlit sets that default to its own "streamlit" template, and
# every figure of the product replaces it in core.viz._style.finish (plotly_white), so the
# copy is thrown away: no default template, the same figures (tests/app/test_figure_template.py).
pio.templates.default = None


@st.cache_resource(show_spinner=False, max_entries=512)
def cached_figure(builder: str, *args: Any, **kwargs: Any) -> go.Figure:
    """``core.viz.<builder>(*args, **kwargs)``, built once per content and shared read-only.

    Building a plotly figure validates its whole layout: 0.05–0.2 s a chart (0.8 s of a 0.95 s
    explorer rerun before this cache, 0.45 s of a Paired bounds rerun). The arguments are the
    chart's own data (small arrays and frames), so they key it exactly; ``st.plotly_chart``
    copies the figure (``to_dict``) and never mutates it.
    """
    return getattr(viz, builder)(*args, **kwargs)


def page_header(title: str, intro: str) -> None:
    """Page title and a short explanation of what the page shows and how to read it."""
    st.title(title)
    st.markdown(intro)


def figure(fig: go.Figure, caption: str, *, key: str | None = None) -> None:
    """A full-width plotly chart with its one-line reading guide underneath."""
    st.plotly_chart(fig, width="stretch", config=_PLOTLY_CONFIG, key=key)
    st.caption(caption)


def vega_spec(builder: str, *args: Any, **kwargs: Any) -> Any:
    """``core.viz.<builder>(*args, **kwargs)``: a Vega-Lite spec for :func:`chart` (or specs, as
    :class:`core.viz.certificate_spec.TrajectorySpecs`), named like :func:`cached_figure`'s
    builders so that a page reaches ``core.viz`` through ``ui`` only. Not cached: a spec is
    plain JSON data, built in about a millisecond."""
    return getattr(viz, builder)(*args, **kwargs)


def chart(spec: dict, caption: str | None, *, key: str | None = None) -> None:
    """A full-width Vega-Lite chart (``core.viz.*_spec``) with its one-line reading guide
    underneath (none for a chart whose guide is under the next one).

    For the first screen: Streamlit's Vega-Lite bundle is a sixth of its plotly bundle, which the
    browser would otherwise load and compile before it draws anything (about 3 s a start here).
    """
    # A concatenation keeps its panels' own widths: Vega-Lite fits only a single or layered view
    # to the column, and a stretched concatenation ran past it.
    concat = any(k in spec for k in ("hconcat", "vconcat", "concat"))
    st.vega_lite_chart(spec=spec, width="content" if concat else "stretch", key=key)
    if caption:
        st.caption(caption)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "table"


def table(
    frame: pd.DataFrame,
    *,
    name: str,
    caption: str | None = None,
    key: str | None = None,
    column_config: dict[str, Any] | None = None,
    height: int | str = "auto",
    select: bool = False,
    download: pd.DataFrame | None = None,
    max_shown: int = MAX_SHOWN_ROWS,
) -> Any:
    """Show a table (NaN and categoricals made display-safe) with a CSV download button.

    Parameters
    ----------
    frame : DataFrame
        What to show.
    name : str
        Human name; also the download file name.
    select : bool
        Single-row selection (returns the selection event); needs ``key``.
    download : DataFrame, optional
        What the CSV holds when it should differ from what is shown (e.g. all columns).
    max_shown : int
        Show at most this many (leading) rows, with a note; row positions of a selection stay
        those of ``frame``.

    Headers are shown for people (``flip_budget`` → ``k*``, snake_case → words; a label given
    in ``column_config`` wins), infinities as ``∞`` and timestamps to the second
    (:mod:`core.viz.tables`); the CSV keeps the machine names and raw values.
    """
    shown = display_values(display_frame(frame.head(max_shown)))
    config: dict[str, Any] = {}
    for column in shown.columns:
        given = (column_config or {}).get(column)
        if given is None and column_config is not None and column in column_config:
            config[column] = None  # hidden by the caller
        elif isinstance(given, str):
            config[column] = given
        else:
            entry = dict(given or {})
            if not entry.get("label"):
                entry["label"] = column_label(column)
            if shown[column].dtype.kind not in "biufc" and (entry.get("type_config") or {}).get("type") == "number":
                entry.pop("type_config")  # turned to text (∞): a number format no longer applies
            config[column] = entry
    kwargs: dict[str, Any] = dict(hide_index=True, column_config=config, height=height, width="stretch")
    if select:
        event = st.dataframe(shown, key=key, on_select="rerun", selection_mode="single-row", **kwargs)
    else:
        event = st.dataframe(shown, key=key, **kwargs)
    full = download if download is not None else frame
    if caption:
        st.caption(caption)
    if len(frame) > max_shown:
        st.caption(f"Showing the first {max_shown:,} of {len(frame):,} rows; the CSV has all of them.")
    # Written on click (Streamlit's download thread), not on every rerun: 50 ms for the raw data.
    st.download_button(
        "CSV",
        lambda: csv_bytes(full, index=False),  # formula cells neutralised (core.csv_safe)
        file_name=f"{_slug(name)}.csv",
        mime="text/csv",
        key=f"dl_{key or _slug(name)}",
        on_click="ignore",
        icon=":material/download:",
        help=f"Download {name} ({len(full):,} rows) as CSV",
        type="tertiary",
    )
    return event


def run_page(body: Callable[[], None], what: str) -> None:
    """Run a page body under :func:`guarded`."""
    with guarded(what):
        body()
