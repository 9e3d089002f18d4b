"""The model behind the live panels (the explorer's what-if and flip-set search), made on their first visit.

A shipped or saved audit opens without its model (:class:`core.tabular.lazy_model.LazyModel`:
refitted, or read back from ``_task.zip``), so the pages draw from the saved tables at once.
The first panel that needs the model starts making it in a background thread
(:mod:`ui.audit_jobs`) and shows what is happening; the rest of the page is drawn meanwhile,
and the panels fill in by themselves when the model is ready. A model that cannot be made turns
the panels off with the reason, as an audit without a model does.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.tabular.lazy_model import LazyModel
from ui.audit_jobs import foreground_wait_s, job_for, progress_panel

__all__ = ["live_model"]


def _off(what: str, why: str | None) -> None:
    st.info(
        f"**{what} is off:** it calls the model, and {why or 'no model is available'}. "
        "Everything else on this page comes from the saved tables. To turn it on, save the audit again "
        "with a model that loads (`AuditResult.save`).",
        icon=":material/power_off:",
    )


def live_model(result: Any, what: str, *, progress: bool = True) -> bool:
    """Whether ``what`` (a panel that calls ``result.model``) can call it now.

    False, with a message in its place, when the audit has no usable model (why it is off) or
    while the model is being made in the background (what is being done; with ``progress``, a
    bar that reruns the page when it is over). The first call for a model starts making it.

    Parameters
    ----------
    result : AuditResult
    what : str
        The panel, for people ("The what-if").
    progress : bool, default=True
        Show the progress bar (one per page is enough when several panels wait for one model).
    """
    model = result.model
    if model is None:
        _off(what, result.model_unavailable)
        return False
    if not isinstance(model, LazyModel) or model.state == "ready":
        return True
    if model.state == "pending":
        job = job_for(
            ("live model", id(model)),
            "The model",
            lambda _progress: model.load(),
            text=f"The model of the live panels: {model.description}…",
        )
        # A model is never made in a blink (seconds of imports at least): no wait unless a
        # test asks for finished jobs (AUDIT_FOREGROUND_WAIT_S).
        job.wait(foreground_wait_s(default=0.0))
        if job.done and model.state == "pending":  # it raised something unexpected (logged)
            st.error(
                f"**{what}:** the model could not be made ({type(job.error).__name__}); the details are in "
                "the server log. Everything else on this page comes from the saved tables.",
                icon=":material/error:",
            )
            return False
        if model.state == "pending":
            st.info(
                f"**{what}** calls the model, which is being prepared in the background ({model.description}; "
                "first use only, a few seconds). This panel fills in by itself.",
                icon=":material/hourglass_top:",
            )
            if progress:
                progress_panel([job])
            return False
    if model.state == "failed":
        _off(what, model.error)
        return False
    return True
