"""Cached access to what the tabular pages show (the paired pages': :mod:`ui.paired_data`).

``st.cache_resource`` holds the heavy, read-only results (datasets, audits, the review store)
once per server process, shared by every session: a page switch or a second visitor
never recomputes. The default audits are shipped precomputed (``assets/default_audit``, used
only when their source fingerprint matches, :mod:`core.tabular.shipped`); any other audit runs
in a background thread (:mod:`ui.audit_jobs`) while its page shows the progress and the other
pages stay usable.

On a server with sign-in, a table uploaded in this session is read and audited only for a
role that may upload and run (:mod:`core.reviews.permissions`, checked in the script run
before the cached read and before the background audit starts); the bundled tables are
reading, open to every role.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import streamlit as st

from core.cfc.protocol import Protocol
from core.reviews import ReviewStore
from core.reviews.permissions import check
from core.tabular.audit import AuditOptions, AuditResult, run_audit
from core.tabular.datasets import DATASET_NAMES, Dataset, load_dataset, load_user_data
from core.tabular.models import MODELS
from core.tabular.shipped import shipped_audit
from core.views.uploads import UPLOAD_LIMIT_MB, interactive_sample_rows
from ui.audit_jobs import AuditJob, foreground_wait_s, job_for, show_progress_and_stop
from ui.auth import current_access
from ui.state import shared_state


def dataset_label(key: str) -> str:
    """Display name of a dataset key (bundled name or ``upload:<name>``)."""
    return f"{key.split(':', 1)[1]} (uploaded)" if key.startswith("upload:") else key


def model_label(name: str) -> str:
    return MODELS[name].label if name in MODELS else name


@st.cache_resource(show_spinner=False)
def review_store(path: str) -> ReviewStore:
    """The review store at ``path`` (one object per path, shared by all sessions)."""
    return ReviewStore(path)


@st.cache_resource(show_spinner="Loading the dataset…")
def _bundled(name: str) -> Dataset:
    return load_dataset(name)


@st.cache_resource(show_spinner="Validating the uploaded table…")
def _uploaded(
    digest: str, file_name: str, target: str, blocks_digest: str | None, *, _data: bytes, _blocks: dict[str, str] | None
) -> Dataset:
    buffer = io.BytesIO(_data)
    buffer.name = file_name
    return load_user_data(buffer, target, blocks=_blocks, max_bytes=UPLOAD_LIMIT_MB * 1024**2)


def current_dataset() -> Dataset:
    """The dataset selected in the sidebar (bundled or uploaded in this session)."""
    key = shared_state().dataset
    if key in DATASET_NAMES:
        return _bundled(key)
    upload = shared_state().uploads[key.split(":", 1)[1]]  # a core.views.uploads.TableUpload
    check(current_access().actor, "upload", what=upload.file)  # before the cache, shared by all sessions
    blocks = upload.blocks
    return _uploaded(
        upload.digest,
        upload.file,
        upload.target,
        blocks.digest if blocks else None,
        _data=upload.data,
        _blocks=blocks.mapping if blocks else None,
    )


def current_protocol() -> Protocol:
    stored = shared_state().protocol
    return Protocol() if stored is None else Protocol.from_dict(stored)


def audit_max_rows(dataset: Dataset) -> int | None:
    """Rows of the stratified sample the interactive audit uses, or None for the whole table.

    Uploaded tables above :func:`core.views.uploads.interactive_sample_rows` rows (the row cap, or
    fewer for wide tables: rows × groups is bounded) are audited on a sample of at most that
    many rows and at most ``shared_state().audit_sample_rows`` (set on the Overview page);
    the bundled tables are always audited whole.
    """
    if not shared_state().dataset.startswith("upload:"):
        return None
    limit = interactive_sample_rows(len(dataset.frame), max(1, len(dataset.features)))
    if len(dataset.frame) <= limit:
        return None
    return min(limit, int(shared_state().audit_sample_rows))


@st.cache_resource(show_spinner=False, max_entries=24)
def _shipped(dataset_key: str, model: str, seed: int, protocol_json: str, *, _dataset: Dataset) -> AuditResult | None:
    """The precomputed audit of ``assets/default_audit`` when its source fingerprint matches."""
    return shipped_audit(_dataset, model=model, seed=seed, protocol=Protocol.from_json(protocol_json))


def _dataset_digest(key: str) -> str:
    if key in DATASET_NAMES:
        return key
    return shared_state().uploads[key.split(":", 1)[1]].key


def _job(model: str) -> AuditResult | AuditJob:
    """The audit of ``model`` on the selected data: shipped, or its background job."""
    key = shared_state().dataset
    dataset = current_dataset()
    seed, protocol, max_rows = int(shared_state().seed), current_protocol().to_json(), audit_max_rows(dataset)
    if key in DATASET_NAMES and max_rows is None:
        shipped = _shipped(key, model, seed, protocol, _dataset=dataset)
        if shipped is not None:
            return shipped

    if key not in DATASET_NAMES:  # an uploaded table: starting its audit is the `run` action
        check(current_access().actor, "run", what=f"an audit of {dataset_label(key)}")

    def compute(progress):
        options = AuditOptions(model=model, seed=seed, protocol=Protocol.from_json(protocol), max_rows=max_rows)
        return run_audit(dataset, options=options, progress=progress)

    job = job_for(
        ("audit", key, _dataset_digest(key), model, seed, protocol, max_rows),
        f"{model_label(model)} on {dataset_label(key)}",
        compute,
    )
    job.wait(foreground_wait_s())  # a quick audit completes without a flash of progress
    return job.result() if job.done else job


def audit_for(model: str) -> AuditResult:
    """The audit of ``model`` on the selected dataset, seed and protocol (computed once).

    A precomputed audit (``assets/default_audit``) is used when its fingerprint matches;
    otherwise the audit runs in a background thread and this script run ends with its
    progress shown (:func:`ui.audit_jobs.show_progress_and_stop`).
    """
    return audits_for([model])[model]


def current_audit() -> AuditResult:
    """The audit of the model selected in the sidebar, or of the user's own model / saved audit."""
    from ui.own_model import own_audit, own_mode

    if own_mode():
        return own_audit()
    return audit_for(shared_state().model)


def audits_for(models: Sequence[str]) -> dict[str, AuditResult]:
    """Audits of several models under the same data, seed and protocol (all started at once)."""
    found = {m: _job(m) for m in models}
    running = [j for j in found.values() if isinstance(j, AuditJob)]
    if running:
        show_progress_and_stop(running)
    return found
