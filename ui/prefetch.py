"""Read the image pages' demo data in the background, once per server, from its second script run.

Both image pages start from the paired demo pool's 540,000 records (:func:`ui.paired_data.demo_records`),
and the Recapture queue shows an image under every probe, six of which are rendered for the
whole pool at once (:func:`ui.paired_data.random_demo_conditions`). Reading and rendering them
is mostly Parquet decoding, random draws and writing fresh memory, which pyarrow and numpy do
without holding the interpreter lock: 0.5-0.8 s of each page's first visit on a 2-core machine,
spent instead while the visitor reads another page.

- **When:** a second after the end of the server's second script run (the visitor's first
  click). Started after the first run, it slowed the first screen's drawing, which the browser
  still does then: cold start 3.3-3.5 s without it, 3.7-5.2 s with it (four starts each); and
  started at once, the drawing of the page that started it (see ``_SETTLE_S``).
- **How:** a daemon thread at the lowest CPU priority (on Linux a thread has its own nice
  value), so the page being drawn, and a browser on the same machine, go first. It belongs to
  no session: nothing it does is shown on a page.
- **Where to:** the same ``st.cache_resource`` entries the pages read (:func:`ui.paired_data.warm_demo`);
  a page visited while they are being filled waits for them instead of computing them again.
  :mod:`ui.paired_data` is imported in the thread, so the first screen never imports the paired engine.
"""

from __future__ import annotations

import logging
import os
import threading
import time

__all__ = ["prefetch_demo_data"]

_LOG = logging.getLogger(__name__)
_started = threading.Event()
_lock = threading.Lock()
_runs = 0
#: Seconds the thread waits before it reads: the browser is still drawing the page whose run
#: started it (server restarted, Overview, then Triage: Triage's first visit 0.95-1.16 s without
#: the prefetch, 1.05-1.48 s with it started at once, 0.90-1.13 s a second later; five each).
_SETTLE_S = 1.0


def _read() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only, on Linux
    except (AttributeError, OSError):  # no per-thread priority here: read at the usual one
        pass
    time.sleep(_SETTLE_S)
    try:
        from ui.paired_data import warm_demo

        warm_demo()
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
    # No script-run context: the thread belongs to no session, so nothing it does is sent to one
    # (with the starting session's context it showed that session a spinner, and died when that
    # session's next run stopped the previous one).
    threading.Thread(target=_read, name="prefetch paired demo data", daemon=True).start()
