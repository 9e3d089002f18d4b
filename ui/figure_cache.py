"""Chart figures built once per content and kept between server processes as plotly JSON.

Building a plotly figure validates its layout and the whole template: 0.05–0.3 s per chart,
and a fresh process pays about 0.4 s more for its first one. :func:`persisted_figure` keys a
``core.viz`` builder call by a SHA-256 of its name, its arguments' content and the code that
draws it (the ``core.viz`` sources, the plotly and Streamlit versions), and keeps the figure

- in this process (a bounded LRU shared by every session: a rerun rebuilds nothing), and
- on disk as the figure's plotly JSON, one file per key in :func:`cache_dir`, so the next
  server start (the same machine) reads the charts back instead of building them.

Only JSON is written and read (never pickle); a file that does not parse as a plotly figure
is ignored and rebuilt. A figure read back is not re-validated: it is the JSON that plotly
itself wrote from a validated figure. Deleting the folder at any time is safe.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = ["CACHE_ENV", "MAX_FILES", "cache_dir", "figure_key", "persisted_figure"]

#: Environment variable naming the cache folder (default: :func:`cache_dir`).
CACHE_ENV = "AUDIT_CACHE_DIR"
#: Figure files kept on disk; the least recently written beyond this are removed.
MAX_FILES = 2_000
_MEMORY_ENTRIES = 256
# Bump when the file format or the key's recipe changes.
_SCHEMA = "figure-cache/1"
_VIZ_DIR = Path(__file__).resolve().parents[1] / "core" / "viz"
_LOG = logging.getLogger("reliability_audit.ui")
_LOCK = threading.Lock()
_MEMORY: OrderedDict[str, go.Figure] = OrderedDict()


def cache_dir() -> Path:
    """Folder of the persisted figures: ``$AUDIT_CACHE_DIR/figures``, else the user cache folder's
    ``reliability-audit/figures`` (``~/.cache/reliability-audit/figures`` on Linux)."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root) / "figures"
    import platformdirs

    return platformdirs.user_cache_path("reliability-audit", appauthor=False) / "figures"


@lru_cache(maxsize=1)
def _code_version() -> str:
    """Digest of what draws a figure: the ``core.viz`` sources and the plotly / Streamlit versions."""
    h = hashlib.sha256(_SCHEMA.encode())
    for package in ("plotly", "streamlit"):
        h.update(f"{package}={metadata.version(package)}\0".encode())
    for path in sorted(_VIZ_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _feed(h: Any, value: Any) -> None:
    """Update ``h`` with a type-tagged, unambiguous encoding of ``value``'s content."""
    if value is None or isinstance(value, (bool, int, float, str)):
        h.update(f"{type(value).__name__}:{value!r}\0".encode())
    elif isinstance(value, np.generic):
        _feed(h, value.item())
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            h.update(f"object{value.shape}\0".encode())
            for item in value.ravel().tolist():
                _feed(h, item)
        else:
            h.update(f"ndarray{value.dtype.str}{value.shape}\0".encode())
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, pd.Series):
        h.update(f"Series:{value.name!r}:{value.dtype}:{len(value)}\0".encode())
        h.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}[{len(value)}]\0".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, Mapping):
        h.update(f"dict[{len(value)}]\0".encode())
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    else:
        raise TypeError(f"persisted_figure cannot key an argument of type {type(value).__name__}; pass numbers, "
                        "strings, arrays, Series, lists or dicts of them.")


def figure_key(builder: str, *args: Any, **kwargs: Any) -> str:
    """SHA-256 (hex) of a ``core.viz.<builder>(*args, **kwargs)`` call and of the code that draws it.

    Raises
    ------
    TypeError
        An argument is not made of numbers, strings, arrays, Series, lists or dicts.
    """
    h = hashlib.sha256(_code_version().encode())
    _feed(h, builder)
    _feed(h, list(args))
    _feed(h, dict(kwargs))
    return h.hexdigest()


def _remember(key: str, fig: go.Figure) -> go.Figure:
    with _LOCK:
        _MEMORY[key] = fig
        _MEMORY.move_to_end(key)
        while len(_MEMORY) > _MEMORY_ENTRIES:
            _MEMORY.popitem(last=False)
    return fig


def _read(path: Path) -> go.Figure | None:
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(spec, dict) and isinstance(spec.get("data"), list) and isinstance(spec.get("layout"), dict)):
        return None
    try:
        # plotly's private switch: the JSON is plotly's own output of a validated figure.
        return go.Figure(spec, _validate=False)
    except (TypeError, ValueError):
        try:
            return go.Figure(spec)
        except (TypeError, ValueError):
            return None


def _write(folder: Path, key: str, fig: go.Figure) -> None:
    from core.atomic import atomic_write_text

    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / f"{key}.json", fig.to_json(validate=False))
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in files[: max(0, len(files) - MAX_FILES)]:
            old.unlink(missing_ok=True)
    except OSError as exc:  # a read-only or full cache folder costs speed, never the page
        _LOG.warning("figure cache %s not written: %s", folder, exc)


def persisted_figure(builder: str, *args: Any, **kwargs: Any) -> go.Figure:
    """``core.viz.<builder>(*args, **kwargs)``, from this process, the cache folder, or built.

    The returned figure is shared: read it (``st.plotly_chart`` copies it), never mutate it.

    Parameters
    ----------
    builder : str
        Name of a figure function of :mod:`core.viz`.
    *args, **kwargs
        Its arguments: numbers, strings, arrays, Series, lists or dicts of them (they key
        the cache by content).
    """
    from core import viz

    key = figure_key(builder, *args, **kwargs)
    with _LOCK:
        fig = _MEMORY.get(key)
        if fig is not None:
            _MEMORY.move_to_end(key)
            return fig
    folder = cache_dir()
    fig = _read(folder / f"{key}.json")
    if fig is None:
        fig = getattr(viz, builder)(*args, **kwargs)
        _write(folder, key, fig)
    return _remember(key, fig)
