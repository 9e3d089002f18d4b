"""Read the image pages' demo data in the background once the first page of a server is drawn.

Both image pages start from the paired demo pool's 540,000 records (:func:`ui.paired_data.demo_records`),
and the Recapture queue shows an image under every probe, six of which are rendered for the
whole pool at once (:func:`ui.paired_data.random_demo_conditions`). Reading and rendering them
is mostly Parquet decoding, random draws and writing fresh memory, which pyarrow and numpy do
without holding the interpreter lock: 0.5-0.8 s of each page's first visit on a 2-core machine,
spent instead while the visitor reads the first page. The thread runs at the lowest CPU
priority (Linux: a thread's own nice value), so the page being drawn, and a browser on the same
machine, go first. The thread starts once per server process,
at the end of its second script run (the visitor's first click): started after the first run, it
slowed the first screen's drawing, which the browser still does then, from 3.3-3.5 s to
3.7-5.2 s (four cold starts each). It fills the same ``st.cache_resource`` entry the pages read: a page visited while it is still reading waits
for it instead of reading again. :mod:`ui.paired_data` is imported in the thread, so the first
screen never imports the paired engine.
"""

from __future__ import annotations

import logging
import os
import threading

from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

__all__ = ["prefetch_demo_data"]

_LOG = logging.getLogger(__name__)
_started = threading.Event()
_lock = threading.Lock()
_runs = 0


def _read() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only, on Linux
    except (AttributeError, OSError):  # no per-thread priority here: read at the usual one
        pass
    try:
        from ui.paired_data import demo_condition, demo_records, random_demo_conditions

        demo_records()
        for condition in random_demo_conditions():
            demo_condition(condition)
    except Exception as exc:  # noqa: BLE001 - the page that needs the data reports the error itself
        _LOG.debug("prefetching the paired demo data failed: %s", exc)


def prefetch_demo_data() -> None:
    """Called at the end of every script run: the second run of this process starts reading the
    demo data in a daemon thread; every other run does nothing."""
    global _runs
    with _lock:
        _runs += 1
        if _started.is_set() or _runs < 2:
            return
        _started.set()
    thread = threading.Thread(target=_read, name="prefetch paired demo data", daemon=True)
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:  # the cache reports to the session that started it, as a page's call would
        add_script_run_ctx(thread, ctx)
    thread.start()
