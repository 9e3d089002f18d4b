"""A Vega-Lite spec of :mod:`core.viz` outside the dashboard: in a notebook, as SVG, as HTML.

The dashboard draws a spec with ``st.vega_lite_chart`` and the HTML report embeds it with the
vega bundle inlined (:mod:`core.report`); :class:`VegaLiteChart` is the notebook's side of the
same spec. Jupyter front ends that render Vega-Lite (JupyterLab, VS Code, nteract) draw it live
from ``application/vnd.vegalite.v5+json``; an exported or statically rendered notebook (nbconvert
HTML, GitHub) shows the ``image/svg+xml`` drawn by ``vl-convert`` from the same spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["NOTEBOOK_WIDTH", "VEGA_LITE_VERSION", "VegaLiteChart", "stack_specs", "vega_bundle"]

#: The Vega-Lite the specs are written for (``$schema`` v5, as Streamlit's): the newest v5 of
#: ``vl-convert``, which draws the SVGs and bundles the report's JavaScript.
VEGA_LITE_VERSION = "5.21"
#: Width in px of a chart that fills its container in the dashboard (``autosize`` fit-x).
NOTEBOOK_WIDTH = 640
_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_TOP_ONLY = ("$schema", "config", "autosize")


#: The bundle's last statement: a cached file that lacks it is incomplete and built again.
_BUNDLE_END = "window.vegaLite="


def vega_bundle(*, cache: Path | None = None) -> str:
    """Vega, Vega-Lite and vega-embed as one script that needs no network (``vl-convert``'s bundle).

    ``vl_convert.javascript_bundle`` compiles the bundle on every call of a process (11 s on a
    loaded 2-core machine, 0.9 MB), so it is kept in ``cache`` (default: the user's cache
    folder, ``platformdirs.user_cache_path("reliability-audit")``), one file per
    ``vl-convert`` and Vega-Lite version. A cache that cannot be written (a read-only home)
    only costs the compile again.
    """
    import vl_convert

    if cache is None:
        import platformdirs

        cache = platformdirs.user_cache_path("reliability-audit", appauthor=False)
    path = Path(cache) / f"vega-bundle-vlconvert{vl_convert.__version__}-vl{VEGA_LITE_VERSION}.js"
    try:
        text = path.read_text(encoding="utf-8")
        if _BUNDLE_END in text[-200:]:
            return text
    except (OSError, UnicodeDecodeError):
        pass
    text = vl_convert.javascript_bundle(vl_version=VEGA_LITE_VERSION)
    try:
        from core.atomic import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    except OSError:
        pass
    return text


def _sized(spec: dict, width: int) -> dict:
    """``spec`` with a fixed width when it fills its container (a single or layered view)."""
    if "autosize" in spec and "width" not in spec:
        return {**spec, "width": width}
    return spec


def stack_specs(specs: Sequence[dict], *, title: str | None = None, width: int = NOTEBOOK_WIDTH) -> dict:
    """One spec of ``specs`` drawn one under the other (``vconcat``), each ``width`` px wide.

    Keys Vega-Lite allows only at the top (``$schema``, ``config``, ``autosize``) are lifted
    from the first spec; ``title`` titles the whole.
    """
    if not specs:
        raise ValueError("`specs` must hold at least one spec; got none.")
    parts = [{k: v for k, v in _sized(s, width).items() if k not in _TOP_ONLY} for s in specs]
    for part in parts:
        part.setdefault("width", width)
    out: dict[str, Any] = {"$schema": _SCHEMA, "vconcat": parts}
    if "config" in specs[0]:
        out["config"] = specs[0]["config"]
    if title is not None:
        out["title"] = {"text": title, "anchor": "start", "fontSize": 16}
    return out


@dataclass(frozen=True)
class VegaLiteChart:
    """A Vega-Lite 5 spec shown in a notebook, live where the front end draws Vega-Lite, as SVG elsewhere.

    Attributes
    ----------
    spec : dict
        A ``core.viz.*_spec`` (a chart that fills its container gets :data:`NOTEBOOK_WIDTH`).
    """

    spec: dict

    @property
    def display_spec(self) -> dict:
        return _sized(self.spec, NOTEBOOK_WIDTH)

    def to_svg(self) -> str:
        """The chart drawn by ``vl-convert`` (no browser, no network)."""
        import vl_convert

        return vl_convert.vegalite_to_svg(self.display_spec, vl_version=VEGA_LITE_VERSION)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {
            "application/vnd.vegalite.v5+json": self.display_spec,
            "image/svg+xml": self.to_svg(),
            "text/plain": f"<VegaLiteChart: {_title(self.spec)}>",
        }


def _title(spec: dict) -> str:
    title = spec.get("title")
    return str(title.get("text") if isinstance(title, dict) else title or "chart")
