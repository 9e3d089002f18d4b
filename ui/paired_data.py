"""Cached access to what the paired pages show: the demo pool, its screening scores and uploads.

Apart from :mod:`ui.data` so that the first screen (the tabular Overview) never imports the
paired engine (``core.paired``: 0.18 s of every cold start). ``st.cache_resource`` holds the
demo pool and its scores once per server process; uploads are validated once per content
(``st.cache_data``, keyed by :func:`core.views.uploads.upload_digest`). On a server with
sign-in an upload is read only for a role that may upload (:mod:`core.reviews.permissions`):
checked before the cache, which every session shares, and by the core loader it calls.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import streamlit as st

from core.exceptions import AuditWarning
from core.imaging.demo import (
    DEFAULT_DIR,
    DemoImages,
    DemoPool,
    demo_conditions,
    load_demo_images,
    load_demo_pool,
    load_demo_probes_of,
    load_demo_records,
    render_condition,
    render_condition_image,
)
from core.imaging.demo_screening import demo_screening, load_precomputed_screening, recapture_records
from core.paired.records import UnpairedRecords
from core.reviews.permissions import Actor, check
from core.views.uploads import load_paired_upload, load_screening_upload, load_unpaired_upload, upload_digest
from ui.auth import current_access
from ui.state import paired_bounds_state, recapture_state


@st.cache_resource(show_spinner="Loading the paired demo pool…")
def demo_pool() -> DemoPool:
    """The shipped paired demo pool (``assets/paired_demo``; ``PAIRED_DEMO_DIR`` overrides)."""
    return load_demo_pool(_demo_dir(), records=demo_records())


def _demo_dir():
    return os.environ.get("PAIRED_DEMO_DIR") or DEFAULT_DIR


@st.cache_resource(show_spinner="Loading the paired demo records…")
def demo_records() -> pd.DataFrame:
    """The demo pool's paired records alone: what Paired bounds shows, without the probe outputs
    that only the Recapture queue needs (0.8 s of the whole pool's 1.1 s load). The pool reuses it."""
    return load_demo_records(_demo_dir())


@st.cache_resource(show_spinner=False)
def demo_images() -> DemoImages:
    """The demo pool's images and manifest alone: the Recapture queue's thumbnails and probe
    renders, without the pool's tables."""
    return load_demo_images(_demo_dir())


@st.cache_resource(max_entries=40, show_spinner="Rendering the probe images of the demo pool…")
def demo_condition(condition: str) -> np.ndarray:
    """Every demo image under one probe condition, uint8 ``(n, 28, 28)``, as the models were given
    them (a condition that draws at random draws for the whole pool at once)."""
    shown = demo_images()
    return render_condition(shown.images, condition, seed=int(shown.manifest.get("seed", 0)))


def random_demo_conditions() -> list[str]:
    """The synthetic conditions whose images can only be rendered for the whole pool at once
    (they draw at random across it): the Recapture queue's probe views of one image need those
    renders; the others render the one image alone."""
    shown = demo_images()
    seed = int(shown.manifest.get("seed", 0))
    table = demo_conditions()
    names = table.loc[table["source"] == "synthetic", "condition"]
    return [c for c in names if render_condition_image(shown.images, 0, c, seed=seed) is None]


@st.cache_resource(show_spinner=False)
def warm_demo() -> bool:
    """Read the demo records and render :func:`random_demo_conditions` into their caches, once
    (:mod:`ui.prefetch` runs it in the background). Nested in this cached function, theirs show
    no spinner: the page the visitor is on is not told of it."""
    demo_records()
    for condition in random_demo_conditions():
        demo_condition(condition)
    return True


@st.cache_data(max_entries=64, show_spinner=False)
def demo_probes_of(model: str, record_id: int) -> pd.DataFrame:
    """The demo pool's probe outputs of one image of one model, read alone
    (:func:`core.imaging.demo.load_demo_probes_of`): what the Recapture queue's inspector shows."""
    return load_demo_probes_of(model, record_id, _demo_dir())


@st.cache_resource(show_spinner="Scoring every clean-correct image from its probe outputs…")
def screening_for_pool() -> pd.DataFrame:
    """Screening scores of the demo pool, ``g(S, U)`` fitted on the simulated recaptures.

    The shipped precomputation when its fingerprint matches this pool's files, code and
    libraries (no table of the pool read), else computed from the whole pool (1.8 s).
    """
    stored = load_precomputed_screening(_demo_dir())
    return stored if stored is not None else demo_screening(demo_pool())


@st.cache_resource(show_spinner=False, max_entries=16)
def recapture_outcomes(model: str) -> pd.DataFrame:
    """Paired records of the (simulated) physical recapture conditions of one model of the demo
    pool, selected once per model from the records Paired bounds also shows: the Recapture
    queue judges one model at a time, and gathering all ten models' 270,000 rows took 0.3-0.6 s
    of its first visit."""
    records = demo_records()
    return recapture_records(records[(records["model"] == model).to_numpy(dtype=bool)])


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
def _paired_upload(content: str, file_name: str, *, _data: bytes, _actor: Actor | None) -> pd.DataFrame:
    return load_paired_upload(file_name, _data, actor=_actor)


@st.cache_data(show_spinner="Validating the uploaded tables…", max_entries=4)
def _unpaired_upload(content: str, *, _files: dict, _actor: Actor | None) -> UnpairedRecords:
    return load_unpaired_upload(_files["clean"], _files["perturbed"], _files.get("counts"), actor=_actor)


def paired_data() -> PairedData | None:
    """The records chosen on the Paired bounds page; None while a chosen upload is missing.

    ``paired_bounds_state().data_source`` is ``"demo"``, ``"paired"`` or ``"unpaired"``;
    an upload lives in ``paired_bounds_state().upload`` as a
    :class:`core.views.uploads.FilesUpload` with roles ``records`` (paired) or ``clean``,
    ``perturbed`` and optionally ``counts`` (unpaired). Parsing is cached by content hash.

    Raises
    ------
    ValueError
        The upload fails validation (the message names the file, row and column).
    """
    source = paired_bounds_state().data_source
    if source == "demo":
        return PairedData("paired", "demo", "the shipped demo pool", records=demo_records())
    upload = paired_bounds_state().upload
    if not upload or upload.kind != source:
        return None
    files = {role: tuple(item) for role, item in upload.files.items() if item is not None}
    content = upload_digest(files)
    label = ", ".join(name for name, _ in files.values())
    actor = current_access().actor
    check(actor, "upload", what=label)  # before the cache: a cached upload is not read again
    if source == "paired":
        name, data = files["records"]
        return PairedData("paired", content, label, records=_paired_upload(content, name, _data=data, _actor=actor))
    return PairedData("unpaired", content, label, unpaired=_unpaired_upload(content, _files=files, _actor=actor))


@st.cache_data(show_spinner="Validating and scoring the uploaded probe outputs…", max_entries=4)
def _screening_upload(
    content: str, outcomes_key: str | None, *, _files: dict, _outcomes: pd.DataFrame | None, _actor: Actor | None
) -> pd.DataFrame:
    with warnings.catch_warnings():
        # Scores the upload cannot define (A3 without prob_*, TTA without transforms) are NaN.
        warnings.simplefilter("ignore", AuditWarning)
        probes = [item for role, item in _files.items() if role != "clean"]
        return load_screening_upload(probes, _files["clean"], outcomes=_outcomes, actor=_actor)


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
        true_label``), or None when there are none to judge the scores by; None for the demo
        pool too, whose outcomes are read one model at a time (:meth:`outcomes_of`).
    images : bool
        Whether :func:`demo_images` holds the images (thumbnails are shown for the demo only).
    """

    key: str
    label: str
    scores: pd.DataFrame
    outcomes: pd.DataFrame | None
    images: bool = False

    @property
    def has_outcomes(self) -> bool:
        """Whether there are real outcomes to judge the scores by."""
        return self.key == "demo" or self.outcomes is not None

    def outcomes_of(self, model: str) -> pd.DataFrame | None:
        """The outcomes of ``model``'s images, or None without outcomes (:attr:`has_outcomes`)."""
        if self.key == "demo":
            return recapture_outcomes(model)
        if self.outcomes is None:
            return None
        return self.outcomes[self.outcomes["model"] == model]


def screening_data(outcome_records: pd.DataFrame | None = None, records_key: str | None = None) -> ScreeningData:
    """The demo pool's screening, or the per-probe outputs uploaded in this session.

    The upload lives in ``recapture_state().upload`` as a
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
    upload = recapture_state().upload
    if not upload:
        return ScreeningData(
            "demo",
            "the shipped demo pool",
            screening_for_pool(),
            None,
            images=demo_images().images.size > 0,
        )
    if outcome_records is not None and records_key is None:
        raise ValueError("`records_key` is required with `outcome_records`.")
    files = {role: tuple(item) for role, item in upload.files.items()}
    content = upload_digest(files)
    label = ", ".join(name for name, _ in files.values())
    actor = current_access().actor
    check(actor, "upload", what=label)  # before the cache: a cached upload is not read again
    scores = _screening_upload(content, records_key, _files=files, _outcomes=outcome_records, _actor=actor)
    return ScreeningData(f"{content}:{records_key}", label, scores, outcome_records)
