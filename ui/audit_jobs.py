"""Audits computed in background threads, so a new audit never blocks the dashboard.

Other long computations a page can draw around go the same way: a saved audit's model, read on
the explorer's first visit (:mod:`ui.live_model`), and a cell's policy comparison on *Paired
bounds*.

A job is started once per audit key and lives in a registry held by ``st.cache_resource``
(one per server process, shared by every session). The page that needs a running audit shows
its progress in a fragment that polls the job every half second and reruns the app when the
job is over; meanwhile every other page (and every audit already computed) keeps working,
because no script run waits for the thread. Threads never call Streamlit: the audit's
progress callback only writes the job's own fields.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from core.reviews.team import AccessRefused

__all__ = ["AuditJob", "foreground_wait_s", "job_for", "progress_panel", "show_progress_and_stop"]

_LOG = logging.getLogger("reliability_audit.ui")
# Finished jobs kept (the audits themselves); the oldest finished one goes first.
_MAX_JOBS = 24
# Stages of run_audit / audit_model in order, for one overall progress fraction.
_STAGES = (
    "load data",
    "preprocess",
    "fit model",
    "certify test",
    "certify validation",
    "label channel",
    "naturalistic channel",
    "calibration",
    "save a copy",
)


class AuditJob:
    """One audit computed in a daemon thread.

    Attributes
    ----------
    label : str
        What is audited, for people.
    fraction : float
        Progress in [0, 1].
    text : str
        The current stage, for people.
    started : float
        ``time.monotonic()`` at the start.
    """

    def __init__(
        self, label: str, compute: Callable[[Callable[[str, int, int], None]], Any], *, text: str | None = None
    ) -> None:
        self.label, self.fraction, self.text = label, 0.0, text or f"{label}: starting…"
        self.started = time.monotonic()
        self._result: Any = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(compute,), name=f"audit {label}", daemon=True)
        self._thread.start()

    def _progress(self, stage: str, done: int, total: int) -> None:
        position = _STAGES.index(stage) if stage in _STAGES else len(_STAGES) - 1
        self.fraction = min((position + (done / total if total else 0.0)) / len(_STAGES), 1.0)
        rows = f" — {done:,} of {total:,} rows" if total > 1 else ""
        self.text = f"{self.label}: {stage}{rows}"

    def _run(self, compute: Callable[[Callable[[str, int, int], None]], Any]) -> None:
        try:
            self._result = compute(self._progress)
        except BaseException as exc:  # kept and re-raised in the script run that asks for the result
            if not isinstance(exc, (ValueError, AccessRefused)):  # bad input; a refusal (logged where refused)
                _LOG.exception("background audit %s failed", self.label)
            self._error = exc
        finally:
            self.fraction = 1.0
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is over (tests, scripts); True when it is."""
        return self._done.wait(timeout)

    @property
    def error(self) -> BaseException | None:
        """What the audit raised, once it is over (None while it runs or when it succeeded)."""
        return self._error if self.done else None

    def result(self) -> Any:
        """The audit; raises what the audit raised. Only call when :attr:`done`."""
        if not self.done:
            raise RuntimeError(f"the audit {self.label} is still running.")
        if self._error is not None:
            raise self._error
        return self._result


@st.cache_resource(show_spinner=False)
def _registry() -> tuple[threading.Lock, OrderedDict]:
    return threading.Lock(), OrderedDict()


def job_for(
    key: tuple, label: str, compute: Callable[[Callable[[str, int, int], None]], Any], *, text: str | None = None
) -> AuditJob:
    """The job of ``key``, started now (``compute(progress)`` in a thread) if there is none yet.

    ``text`` is what its progress says until ``compute`` reports a stage (default: starting).
    """
    lock, jobs = _registry()
    with lock:
        job = jobs.get(key)
        if job is None:
            finished = [k for k, j in jobs.items() if j.done]
            while len(jobs) >= _MAX_JOBS and finished:
                del jobs[finished.pop(0)]
            job = jobs[key] = AuditJob(label, compute, text=text)
        else:
            jobs.move_to_end(key)
        return job


@st.fragment(run_every=0.5)
def progress_panel(jobs: Sequence[AuditJob]) -> None:
    """A progress bar per job, updated every 0.5 s; the whole app reruns once every job is over.

    Polling in a fragment keeps Streamlit's running indicator off, so the page around it counts
    as drawn while the jobs run.
    """
    for job in jobs:
        st.progress(job.fraction, text=f"{job.text} ({time.monotonic() - job.started:.0f} s)")
    if all(job.done for job in jobs):
        st.rerun(scope="app")  # pick the finished audits up on the whole page


def show_progress_and_stop(jobs: Sequence[AuditJob]) -> None:
    """Show the running audits' progress (updated every 0.5 s) and end this script run.

    The page reruns by itself when every job is over; the other pages stay usable meanwhile.
    """
    st.info(
        "The audit is being computed in the background. The other pages, and every audit already "
        "computed, stay usable meanwhile; this page fills in by itself when it is ready.",
        icon=":material/hourglass_top:",
    )
    progress_panel(list(jobs))
    st.stop()


def foreground_wait_s(default: float = 0.25) -> float:
    """Seconds a script run waits for a background job before showing its progress instead.

    ``AUDIT_FOREGROUND_WAIT_S``, else ``default`` (0.25 s for an audit, so that a quick one
    shows without a flash of progress and a long one shows its progress within half a
    second); the AppTest suites set it high to get finished jobs in one run.
    """
    try:
        return max(0.0, float(os.environ.get("AUDIT_FOREGROUND_WAIT_S", default)))
    except ValueError:
        return default
