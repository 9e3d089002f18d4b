"""The server's first script run, without the cyclic garbage collector.

A fresh server's first run imports pandas, pyarrow, Streamlit's elements and the pages' modules
and reads the audit shown: about 140,000 objects that live as long as the process. While they
are made, the collector sweeps the growing heap again and again and frees nothing: in-process,
that run took 0.88–0.95 s with the collector and 0.70–0.75 s without it (``docs/dashboard.md``).
So it is paused for the first run only, and what that run built is then frozen
(:func:`gc.freeze`: moved out of the generations the collector sweeps, as CPython's docs advise
for objects made at start-up), so later full collections skip it too.

The collector is paused process-wide but for one run only (a few seconds at most: a new audit
runs in a background job, not in the run), and resumed whatever way the run ends (an exception,
``st.rerun``, ``st.stop``). Memory is still freed by reference counting meanwhile; only cycles
wait. A process whose collector was already off is left as it is.

This module imports nothing but the standard library: it runs before the heavy imports.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_started = False


@contextmanager
def collector_paused() -> Iterator[bool]:
    """Run the body with the cyclic collector paused if this is the process's first run.

    Yields
    ------
    bool
        Whether this run paused it (the first run of the process, with the collector on).
    """
    global _started
    with _lock:
        pause = not _started and gc.isenabled()
        _started = True
        if pause:
            gc.disable()
    try:
        yield pause
    finally:
        if pause:
            gc.freeze()
            gc.enable()
