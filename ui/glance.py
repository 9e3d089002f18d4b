"""The glance of the audit the tabular pages show (:mod:`core.tabular.glance`), for the Overview's
first screen: read alone when the audit is saved, taken from the audit otherwise.

A shipped or saved audit's glance is its ``view/glance.json``: a fresh server draws the first
screen from that file and reads the whole audit only for the page that needs it (0.1 s or more
of every start, ``docs/performance.md``). An audit computed in this session, or an uploaded
model's, is read or computed as :func:`ui.data.current_audit` does and its glance taken from it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.atomic import atomic_write_text
from core.cfc.protocol import Protocol
from core.tabular.audit import AuditOptions, AuditResult, run_audit
from core.tabular.audit_folder import VIEW_DIR, open_audit_folder, saved_result
from core.tabular.datasets import DATASET_NAMES, Dataset
from core.tabular.glance import GLANCE_FILE, AuditGlance, read_glance
from core.tabular.shipped import shipped_audit, shipped_glance
from ui.data import audit_for, audit_max_rows, current_dataset, current_protocol
from ui.own_model import own_audit, own_mode, saved_folder
from ui.state import shared_state

__all__ = ["GlanceView", "current_glance"]

_LOG = logging.getLogger("reliability_audit.ui")


@dataclass(frozen=True)
class GlanceView:
    """The audit the Overview's first screen shows: its glance, and how to read all of it.

    Attributes
    ----------
    glance : AuditGlance
    load : callable () -> AuditResult
        The whole audit. It needs no script run (no session state, no Streamlit call), so it
        also serves a download button's deferred builder, which runs on another thread.
    """

    glance: AuditGlance
    load: Callable[[], AuditResult]


def current_glance() -> GlanceView:
    """The glance of :func:`ui.data.current_audit`'s audit.

    Raises
    ------
    ValueError
        As :func:`ui.data.current_audit`, or a malformed ``view/glance.json`` of a saved audit.
    """
    if own_mode():
        return _own_glance()
    key, model = shared_state().dataset, shared_state().model
    dataset = current_dataset()
    seed, protocol = int(shared_state().seed), current_protocol().to_json()
    if key in DATASET_NAMES and audit_max_rows(dataset) is None:
        glance = _shipped_glance(key, model, seed, protocol, _dataset=dataset)
        if glance is not None:
            return GlanceView(glance, functools.partial(_read_shipped, dataset, model, seed, protocol))
    result = audit_for(model)
    return GlanceView(AuditGlance.of(result), lambda: result)


@st.cache_resource(show_spinner=False, max_entries=24)
def _shipped_glance(
    dataset_key: str, model: str, seed: int, protocol_json: str, *, _dataset: Dataset
) -> AuditGlance | None:
    """The glance of the shipped audit ``ui.data`` would open for the same arguments."""
    return shipped_glance(_dataset, model=model, seed=seed, protocol=Protocol.from_json(protocol_json))


def _read_shipped(dataset: Dataset, model: str, seed: int, protocol_json: str) -> AuditResult:
    """The shipped audit whose glance was shown; computed if its folder broke since."""
    protocol = Protocol.from_json(protocol_json)
    result = shipped_audit(dataset, model=model, seed=seed, protocol=protocol)
    if result is None:
        result = run_audit(dataset, options=AuditOptions(model=model, seed=seed, protocol=protocol))
    return result


def _own_glance() -> GlanceView:
    saved = saved_folder()
    if saved is None:  # an uploaded model: its audit is in memory
        result = own_audit()
        return GlanceView(AuditGlance.of(result), lambda: result)
    view = saved.path / VIEW_DIR
    glance = _folder_glance(str(view), saved.fingerprint, _mtime(view / GLANCE_FILE))
    if glance is None:  # written before glance.json: taken from the whole audit, and kept
        result = own_audit()
        return GlanceView(_kept_glance(result, view), lambda: result)
    path = str(saved.path)
    return GlanceView(glance, lambda: saved_result(open_audit_folder(path, load_model=False), lazy_model=True))


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_resource(show_spinner=False, max_entries=8)
def _folder_glance(view: str, fingerprint: str, mtime: int) -> AuditGlance | None:
    return read_glance(view, fingerprint) if fingerprint and mtime else None


def _kept_glance(result: AuditResult, view: Path) -> AuditGlance:
    """``result``'s glance, also written into ``view`` when it is a writable folder (keyed by the
    certificate fingerprint, like the rest of the view): the next start reads that file alone."""
    glance = AuditGlance.of(result)
    if view.is_dir():
        try:
            atomic_write_text(view / GLANCE_FILE, glance.to_json())
        except OSError as exc:  # a read-only folder: the glance is taken from the audit every time
            _LOG.info("could not keep the glance in %s: %s", view, exc)
    return glance
