"""Cached access to everything the pages show.

``st.cache_resource`` holds the heavy, read-only results (audits, the demo pool, the review
store) once per server process, shared by every session: a page switch or a second visitor
never recomputes. The default audits are shipped precomputed (``assets/default_audit``, used
only when their source fingerprint matches, :mod:`core.tabular.shipped`); any other audit runs
in a background thread (:mod:`ui.audit_jobs`) while its page shows the progress and the other
pages stay usable.
"""
from __future__ import annotations

import io
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import streamlit as st

from core.cfc.protocol import Protocol
from core.views.uploads import (UPLOAD_LIMIT_MB, interactive_sample_rows, load_paired_upload, load_screening_upload,
                                load_unpaired_upload, upload_digest)  # upload_digest re-exported: pages hash their uploads with it too
from core.exceptions import AuditWarning
from core.paired.demo import DEFAULT_DIR, DemoPool, load_demo_pool
from core.paired.records import UnpairedRecords
from core.paired.screening import screening_scores
from core.reviews import ReviewStore
from core.tabular.audit import AuditResult, run_audit
from core.tabular.datasets import DATASET_NAMES, Dataset, load_dataset, load_user_data
from core.tabular.models import MODELS
from core.tabular.shipped import shipped_audit
from ui.audit_jobs import AuditJob, foreground_wait_s, job_for, show_progress_and_stop

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
def _uploaded(digest: str, file_name: str, target: str, blocks_digest: str | None, *,
              _data: bytes, _blocks: dict[str, str] | None) -> Dataset:
    buffer = io.BytesIO(_data)
    buffer.name = file_name
    return load_user_data(buffer, target, blocks=_blocks, max_bytes=UPLOAD_LIMIT_MB * 1024**2)


def current_dataset() -> Dataset:
    """The dataset selected in the sidebar (bundled or uploaded in this session)."""
    key = st.session_state["dataset"]
    if key in DATASET_NAMES:
        return _bundled(key)
    upload = st.session_state["uploads"][key.split(":", 1)[1]]  # a core.views.uploads.TableUpload
    blocks = upload.blocks
    return _uploaded(upload.digest, upload.file, upload.target, blocks.digest if blocks else None,
                     _data=upload.data, _blocks=blocks.mapping if blocks else None)


def current_protocol() -> Protocol:
    stored = st.session_state["protocol"]
    return Protocol() if stored is None else Protocol.from_dict(stored)


def audit_max_rows(dataset: Dataset) -> int | None:
    """Rows of the stratified sample the interactive audit uses, or None for the whole table.

    Uploaded tables above :func:`core.views.uploads.interactive_sample_rows` rows (the row cap, or
    fewer for wide tables: rows × groups is bounded) are audited on a sample of at most that
    many rows and at most ``st.session_state["audit_sample_rows"]`` (set on the Overview page);
    the bundled tables are always audited whole.
    """
    if not st.session_state["dataset"].startswith("upload:"):
        return None
    limit = interactive_sample_rows(len(dataset.frame), max(1, len(dataset.features)))
    if len(dataset.frame) <= limit:
        return None
    return min(limit, int(st.session_state["audit_sample_rows"]))


@st.cache_resource(show_spinner=False, max_entries=24)
def _shipped(dataset_key: str, model: str, seed: int, protocol_json: str, *, _dataset: Dataset) -> AuditResult | None:
    """The precomputed audit of ``assets/default_audit`` when its source fingerprint matches."""
    return shipped_audit(_dataset, model=model, seed=seed, protocol=Protocol.from_json(protocol_json))


def _dataset_digest(key: str) -> str:
    if key in DATASET_NAMES:
        return key
    return st.session_state["uploads"][key.split(":", 1)[1]].key


def _job(model: str) -> AuditResult | AuditJob:
    """The audit of ``model`` on the selected data: shipped, or its background job."""
    key = st.session_state["dataset"]
    dataset = current_dataset()
    seed, protocol, max_rows = int(st.session_state["seed"]), current_protocol().to_json(), audit_max_rows(dataset)
    if key in DATASET_NAMES and max_rows is None:
        shipped = _shipped(key, model, seed, protocol, _dataset=dataset)
        if shipped is not None:
            return shipped

    def compute(progress):
        return run_audit(dataset, model=model, seed=seed, protocol=Protocol.from_json(protocol), max_rows=max_rows,
                         progress=progress)

    job = job_for(("audit", key, _dataset_digest(key), model, seed, protocol, max_rows),
                  f"{model_label(model)} on {dataset_label(key)}", compute)
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
    return audit_for(st.session_state["model"])


def audits_for(models: Sequence[str]) -> dict[str, AuditResult]:
    """Audits of several models under the same data, seed and protocol (all started at once)."""
    found = {m: _job(m) for m in models}
    running = [j for j in found.values() if isinstance(j, AuditJob)]
    if running:
        show_progress_and_stop(running)
    return found


@st.cache_resource(show_spinner="Loading the paired demo pool…")
def demo_pool() -> DemoPool:
    """The shipped paired demo pool (``assets/paired_demo``; ``PAIRED_DEMO_DIR`` overrides)."""
    return load_demo_pool(os.environ.get("PAIRED_DEMO_DIR") or DEFAULT_DIR)


@st.cache_resource(show_spinner="Scoring every clean-correct image from its probe outputs…")
def screening_for_pool() -> pd.DataFrame:
    """Screening scores of the demo pool, ``g(S, U)`` fitted on the simulated recaptures."""
    pool = demo_pool()
    with warnings.catch_warnings():
        # Scores undefined for the pool (e.g. A3 without probabilities) come back as NaN.
        warnings.simplefilter("ignore", AuditWarning)
        return screening_scores(pool.probes, pool.clean, outcomes=recapture_outcomes())


def recapture_outcomes() -> pd.DataFrame:
    """Paired records of the (simulated) physical recapture conditions of the demo pool."""
    records = demo_pool().records
    return records[records["source"] == "simulated-recapture"]


@dataclass(frozen=True)
class PairedData:
    """The records the paired pages show: the demo pool or this session's upload.

    Attributes
    ----------
    kind : {"paired", "unpaired"}
    key : str
        ``"demo"`` or the uploaded files' content hash; keys every cache of the pages.
    label : str
        What the page names as its data (the demo pool or the uploaded file names).
    records : DataFrame or None
        Validated paired records (``kind == "paired"``).
    unpaired : UnpairedRecords or None
        The validated unpaired cell (``kind == "unpaired"``).
    """

    kind: Literal["paired", "unpaired"]
    key: str
    label: str
    records: pd.DataFrame | None = None
    unpaired: UnpairedRecords | None = None


@st.cache_data(show_spinner="Validating the uploaded records…", max_entries=4)
def _paired_upload(content: str, file_name: str, *, _data: bytes) -> pd.DataFrame:
    return load_paired_upload(file_name, _data)


@st.cache_data(show_spinner="Validating the uploaded tables…", max_entries=4)
def _unpaired_upload(content: str, *, _files: dict) -> UnpairedRecords:
    return load_unpaired_upload(_files["clean"], _files["perturbed"], _files.get("counts"))


def paired_data() -> PairedData | None:
    """The records chosen on the Paired bounds page; None while a chosen upload is missing.

    ``st.session_state["paired_data_source"]`` is ``"demo"``, ``"paired"`` or ``"unpaired"``;
    an upload lives in ``st.session_state["paired_upload"]`` as a
    :class:`core.views.uploads.FilesUpload` with roles ``records`` (paired) or ``clean``,
    ``perturbed`` and optionally ``counts`` (unpaired). Parsing is cached by content hash.

    Raises
    ------
    ValueError
        The upload fails validation (the message names the file, row and column).
    """
    source = st.session_state["paired_data_source"]
    if source == "demo":
        return PairedData("paired", "demo", "the shipped demo pool", records=demo_pool().records)
    upload = st.session_state["paired_upload"]
    if not upload or upload.kind != source:
        return None
    files = {role: tuple(item) for role, item in upload.files.items() if item is not None}
    content = upload_digest(files)
    label = ", ".join(name for name, _ in files.values())
    if source == "paired":
        name, data = files["records"]
        return PairedData("paired", content, label, records=_paired_upload(content, name, _data=data))
    return PairedData("unpaired", content, label,
                      unpaired=_unpaired_upload(content, _files=files))


@st.cache_data(show_spinner="Validating and scoring the uploaded probe outputs…", max_entries=4)
def _screening_upload(content: str, outcomes_key: str | None, *, _files: dict,
                      _outcomes: pd.DataFrame | None) -> pd.DataFrame:
    with warnings.catch_warnings():
        # Scores the upload cannot define (A3 without prob_*, TTA without transforms) are NaN.
        warnings.simplefilter("ignore", AuditWarning)
        return load_screening_upload(_files["probes"], _files["clean"], outcomes=_outcomes)


@dataclass(frozen=True)
class ScreeningData:
    """The scored images the Recapture queue shows: the demo pool or this session's upload.

    Attributes
    ----------
    key : str
        ``"demo"`` or the upload's content hash plus the outcomes used; keys the page's caches.
    label : str
        What the page names as its data.
    scores : DataFrame
        :func:`core.paired.screening.screening_scores` output (one row per model and
        clean-correct evaluation image; ``risk_<score>`` larger = riskier).
    outcomes : DataFrame or None
        Paired records of the real conditions of one source (failure = ``pert_pred !=
        true_label``), or None when there are none to judge the scores by.
    images : bool
        Whether :func:`demo_pool` holds the images (thumbnails are shown for the demo only).
    """

    key: str
    label: str
    scores: pd.DataFrame
    outcomes: pd.DataFrame | None
    images: bool = False


def screening_data(outcome_records: pd.DataFrame | None = None, records_key: str | None = None) -> ScreeningData:
    """The demo pool's screening, or the per-probe outputs uploaded in this session.

    The upload lives in ``st.session_state["recapture_upload"]`` as a
    :class:`core.views.uploads.FilesUpload` (roles ``probes`` and ``clean``) or None (the demo pool).

    Parameters
    ----------
    outcome_records : DataFrame, optional
        Paired records of one source whose perturbed side gives the real failures of the
        uploaded images (e.g. an upload on the Paired bounds page); ignored for the demo.
    records_key : str, optional
        Cache key of ``outcome_records`` (content hash and source); required with them.

    Raises
    ------
    ValueError
        The upload fails validation (the message names the file, row and column).
    """
    upload = st.session_state["recapture_upload"]
    if not upload:
        pool = demo_pool()
        return ScreeningData("demo", "the shipped demo pool", screening_for_pool(), recapture_outcomes(),
                             images=pool.images.size > 0)
    if outcome_records is not None and records_key is None:
        raise ValueError("`records_key` is required with `outcome_records`.")
    files = {role: tuple(item) for role, item in upload.files.items()}
    content = upload_digest(files)
    scores = _screening_upload(content, records_key, _files=files, _outcomes=outcome_records)
    label = ", ".join(name for name, _ in files.values())
    return ScreeningData(f"{content}:{records_key}", label, scores, outcome_records)
