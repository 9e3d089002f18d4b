"""The session state of the dashboard, typed: one class per page, and one per part several pages
share (the sidebar's choices, the own-model source, sign-in, the review session).

Streamlit keeps a session's values in ``st.session_state``, a dict of string keys, and binds a
widget to a value by its string ``key``. So a widget's value cannot live inside one stored object:
each value keeps its own key. Every key is declared here once, as a :class:`Slot` of the state
class of its page, with its type and its default; code reads and writes ``explorer_state().sort``
(typed) and a widget takes ``key=ExplorerState.sort.key``. Nothing outside this module indexes
``st.session_state`` with a string (``tests/architecture/test_session_state.py``). The keys keep
the names they had, so a session, a deep link and a test that sets a key see the same values.

``app.py`` seeds every default once per session (:func:`seed_defaults`); a slot declared with
``seeded=False`` is a widget that takes its own initial value (Streamlit refuses a widget given
both a value and a session default) or a value only some runs set, read with its default until set.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

import streamlit as st

from core.views.audit_inputs import DEFAULT_DATASET, Protocol
from core.views.uploads import LARGE_TABLE_ROWS, FilesUpload, TableUpload

if TYPE_CHECKING:  # annotations only: the image wing is not a first-screen import
    from core.imaging.images import ImageSet
    from core.imaging.probe import ProbeResult

T = TypeVar("T")

#: One-step drops shown before the rest is folded (explorer, triage): the default of
#: :attr:`CertificateState.drops_top_n`.
DEFAULT_TOP_GROUPS = 15
#: The tabs of the triage page's certificate panel (``ui.certificate.certificate_panel``), in order.
PANEL_TABS = (
    "Trajectory and collapse",
    "λ* per operator and one-step drops",
    "Path values vs baseline",
    "Prediction after each removal",
)
_NO_SELECTION = {"selection": {"rows": [], "columns": [], "cells": []}}


@dataclass(frozen=True, kw_only=True)
class ProbeRun:
    """An uploaded ONNX model's probe run, kept for the browser session (Recapture queue).

    Attributes
    ----------
    key : str
        Digest of the uploaded files and the typed normalisation: the caches' key.
    label : str
        The uploaded files' names, as the page shows them.
    result : core.imaging.probe.ProbeResult
    images : core.imaging.images.ImageSet
        The uploaded images, read again on demand (thumbnails, the inspector).
    positions : dict of record id -> int
        Row of each record's image in ``images``.
    """

    key: str
    label: str
    result: ProbeResult
    images: ImageSet
    positions: dict[Any, int]


@dataclass(frozen=True, kw_only=True)
class TrustOffer:
    """A pending skops trust offer of the own-model form: nothing is loaded until it is accepted.

    Attributes
    ----------
    digest : str
        Digest of the model file the offer is about (shown only while that file is chosen).
    types : list of str
        The types the file holds beyond skops' trusted set.
    source : dict
        The upload waiting for them (``OwnModelState.audit``'s form).
    """

    digest: str
    types: list[str]
    source: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class FormError:
    """The own-model form's last error, shown while the same model file is chosen."""

    digest: str
    message: str


@dataclass(frozen=True, kw_only=True)
class Flash:
    """A message shown once, on the next run, after a review action."""

    kind: Literal["success", "error"]
    message: str


class Slot(Generic[T]):
    """One typed value of the session, stored in ``st.session_state[key]``.

    On a state class, ``State.field`` is the slot (``.key`` for a widget, ``.default``); on an
    instance, ``state.field`` is the value (the default when no run has set it yet), and
    ``state.field = v`` / ``del state.field`` set and drop it.
    """

    __slots__ = ("default", "key", "name", "seeded")

    def __init__(self, key: str, default: T, *, seeded: bool = True) -> None:
        self.key = key
        self.default = default
        self.seeded = seeded
        self.name = key

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Slot[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Slot[T] | T:
        if obj is None:
            return self
        if self.key in st.session_state:
            return st.session_state[self.key]
        return copy.deepcopy(self.default)

    def __set__(self, obj: object, value: T) -> None:
        st.session_state[self.key] = value

    def __delete__(self, obj: object) -> None:
        st.session_state.pop(self.key, None)

    def read(self) -> T:
        """The value (the default when unset): for a slot made outside a state class."""
        return self.__get__(self, type(self))  # type: ignore[return-value]

    def write(self, value: T) -> None:
        self.__set__(None, value)

    def clear(self) -> None:
        self.__delete__(None)

    def is_set(self) -> bool:
        """Whether a run (or the seeding) has stored a value under :attr:`key`."""
        return self.key in st.session_state

    def __repr__(self) -> str:
        return f"Slot({self.key!r}, {self.default!r})"


class PageState:
    """A state class: its :class:`Slot` attributes are the session values of one page or part.

    Instances hold nothing themselves; they read and write ``st.session_state`` through the slots.
    """

    __slots__ = ()

    @classmethod
    def slots(cls) -> list[Slot[Any]]:
        """Every slot of the class, in declaration order."""
        out: dict[str, Slot[Any]] = {}
        for klass in reversed(cls.__mro__):
            out.update({name: v for name, v in vars(klass).items() if isinstance(v, Slot)})
        return list(out.values())


class SharedState(PageState):
    """The sidebar's choices shared by every tabular page, and the tables uploaded this session."""

    __slots__ = ()
    dataset = Slot[str]("dataset", DEFAULT_DATASET)
    model = Slot[str]("model", "hist_gb")
    seed = Slot[int]("seed", 0)
    #: The review database (``--reviews-db``, else the per-user default; set by ``app.py``).
    reviews_db = Slot[str]("reviews_db", "")
    #: Dataset to select at the start of the next run (set after an upload).
    dataset_next = Slot[str | None]("dataset_next", None)
    #: name -> core.views.uploads.TableUpload
    uploads = Slot[dict[str, TableUpload]]("uploads", {})
    #: The applied Protocol as a dict; None = the default protocol.
    protocol = Slot[dict[str, Any] | None]("protocol", None)
    #: Interactive audit sample of uploads above that many rows.
    audit_sample_rows = Slot[int]("audit_sample_rows", LARGE_TABLE_ROWS)
    #: The sample selected on the tabular pages (dataset sample id, not a row position;
    #: ``ui.selection``); None = each page starts on its most fragile case.
    selected_sample = Slot[int | None]("selected_sample", None)


class AuthState(PageState):
    """Sign-in (``ui.auth``): the team file fixed at server start, and what the gate decided this run."""

    __slots__ = ()
    team_file = Slot[str | None]("team_file", None)
    access = Slot[Any]("access", None)


class OwnModelState(PageState):
    """Your own model (the sidebar's "Your model"; ``ui.own_model``): None = the tool's models."""

    __slots__ = ()
    #: ``{"kind": "folder", "path": ...}`` or an upload's audit source; None = the tool's models.
    audit = Slot[dict[str, Any] | None]("own_audit", None)
    audits_dir = Slot[str]("audits_dir", "")
    target = Slot[str | None]("own_target", None)
    feature_order = Slot[str]("own_feature_order", "")
    #: The upload form's expander (kept open after an error or a trust offer).
    form_open = Slot[bool]("own_form_open", False)
    #: A pending skops trust offer: ``{"digest", "types", "source"}``.
    offer = Slot[TrustOffer | None]("own_offer", None)
    #: The upload form's last error: ``{"digest", "message"}``.
    error = Slot[FormError | None]("own_error", None)
    #: The saved-audit list's expander (the audits folder is listed only while it is open).
    folders_open = Slot[bool]("own_folders_open", False)
    folder = Slot[str | None]("own_folder", None)


_PROTOCOL = Protocol()


class OverviewState(PageState):
    """The Overview: the upload form, the protocol form, the column inspected, its expanders.

    Every ``proto_*`` default is the field of ``Protocol()``: one source of the protocol defaults.
    """

    __slots__ = ()
    upload_target = Slot[str | None]("upload_target", None)
    proto_grouping = Slot[str]("proto_grouping", _PROTOCOL.grouping)
    proto_baseline = Slot[str]("proto_baseline", _PROTOCOL.baseline)
    proto_depth = Slot[int | Literal["auto"]]("proto_depth", "auto" if _PROTOCOL.depth is None else _PROTOCOL.depth)
    proto_operators = Slot[list[str]]("proto_operators", list(_PROTOCOL.operators))
    proto_severities = Slot[str]("proto_severities", ", ".join(str(v) for v in _PROTOCOL.severities))
    proto_w1 = Slot[float]("proto_w1", _PROTOCOL.weights[0])
    proto_w2 = Slot[float]("proto_w2", _PROTOCOL.weights[1])
    proto_w3 = Slot[float]("proto_w3", _PROTOCOL.weights[2])
    proto_path_rule = Slot[str]("proto_path_rule", _PROTOCOL.path)
    proto_merge_threshold = Slot[float]("proto_merge_threshold", _PROTOCOL.merge_threshold)
    column = Slot[str | None]("overview_column", None)
    #: The open tab (``pages/overview.py``: only its content is drawn).
    tab = Slot[str]("overview_tab", "At a glance")
    #: Raw-data preview expander (its table is drawn only when open).
    preview_open = Slot[bool]("overview_preview_open", False)
    #: Evidence-groups expander (idem).
    groups_open = Slot[bool]("overview_groups_open", False)
    #: Score-evaluation expander (idem).
    evaluation_open = Slot[bool]("overview_evaluation_open", False)


class ExplorerState(PageState):
    """The Certificate explorer: the table's order, filters and selection, and the what-if."""

    __slots__ = ()
    sort = Slot[str]("explorer_sort", "fds")
    search = Slot[str]("explorer_search", "")
    high_confidence = Slot[bool]("explorer_hc", True)
    table = Slot[dict[str, Any]]("explorer_table", _NO_SELECTION)
    whatif_groups = Slot[list[str]]("whatif_groups", [])
    #: Sample id the what-if toggles belong to (reset when it changes).
    whatif_sample = Slot[int | None]("whatif_sample", None)


class CertificateState(PageState):
    """The certificate panels of the explorer and the triage page (``ui.certificate``)."""

    __slots__ = ()
    #: One-step drops shown before the rest is folded.
    drops_top_n = Slot[int]("drops_top_n", DEFAULT_TOP_GROUPS)


class TriageState(PageState):
    """The Triage queue: its score, budget, scope, table selection and the panel's open tab."""

    __slots__ = ()
    score = Slot[str]("triage_score", "fds")
    budget = Slot[int]("triage_budget", 10)
    scope = Slot[str]("triage_scope", "high-confidence")
    table = Slot[dict[str, Any]]("triage_table", _NO_SELECTION)
    #: The open tab of the evidence panel (only it is drawn).
    tab = Slot[str]("triage_tab", PANEL_TABS[0])


class BigAuditState(PageState):
    """A certify folder on the Explorer and Triage pages (``ui.big_audit``): the table's sort,
    filters and page, and the queue's length."""

    __slots__ = ()
    sort = Slot[str]("big_sort", "row")
    descending = Slot[bool]("big_descending", False)
    page = Slot[int]("big_page", 1)
    true_classes = Slot[list[str]]("big_true_classes", [])
    predicted = Slot[list[str]]("big_predicted", [])
    correct = Slot[str]("big_correct", "any")
    held_out = Slot[bool]("big_held_out", False)
    min_confidence = Slot[float]("big_min_confidence", 0.0)
    max_flip_budget = Slot[int]("big_max_flip_budget", 0)
    table = Slot[dict[str, Any]]("big_table", _NO_SELECTION)
    #: A row number typed to open its certificate directly (any row of the run).
    goto = Slot[int | None]("big_goto", None)
    queue_length = Slot[int]("big_queue_length", 200)
    #: Address of the Dask scheduler full certifications run on ("" = this machine): the
    #: dashboard's ``--dask-scheduler`` or ``AUDIT_DASK_SCHEDULER``.
    scheduler = Slot[str]("big_dask_scheduler", "")
    #: The full certification of an upload to open once it is complete (its folder name).
    open_when_done = Slot[str | None]("big_open_when_done", None)
    #: The row whose certificate was recomputed with the run's model (shown while it is selected).
    recomputed = Slot[int | None]("big_recomputed", None)


class ComparisonState(PageState):
    """The Model comparison."""

    __slots__ = ()
    models = Slot[list[str]]("compare_models", ["logreg", "random_forest", "hist_gb"])
    sample = Slot[int | None]("compare_sample", None)


class CalibrationState(PageState):
    """The Calibration page."""

    __slots__ = ()
    methods = Slot[list[str]]("calib_methods", ["uncalibrated", "temperature", "bats"])


class PairedBoundsState(PageState):
    """The Paired bounds page: the data source, the cell, τ, λ and the information level."""

    __slots__ = ()
    data_source = Slot[Literal["demo", "paired", "unpaired"]]("paired_data_source", "demo")
    #: core.views.uploads.FilesUpload (kind "paired" | "unpaired") or None.
    upload = Slot[FilesUpload | None]("paired_upload", None)
    source = Slot[str | None]("paired_source", None)
    model = Slot[str | None]("paired_model", None)
    condition = Slot[str | None]("paired_condition", None)
    coverage = Slot[float]("paired_coverage", 0.8)
    #: Uploads: "coverage" (τ from clean coverage) | "fixed" (typed τ).
    tau_mode = Slot[Literal["coverage", "fixed"]]("paired_tau_mode", "coverage")
    #: The fixed τ in [0, 1].
    tau_value = Slot[float]("paired_tau_value", 0.9)
    lambda_ = Slot[float]("paired_lambda", 0.5)
    level = Slot[Literal["I0", "Ik", "I5"]]("paired_level", "Ik")


class RecaptureState(PageState):
    """The Recapture queue: the screening upload, the cell, the score and budget, the probe run."""

    __slots__ = ()
    #: core.views.uploads.FilesUpload (kind "screening") or None.
    upload = Slot[FilesUpload | None]("recapture_upload", None)
    #: Source of the Paired bounds upload whose conditions are the real re-tests.
    outcome_source = Slot[str | None]("recap_outcome_source", None)
    model = Slot[str | None]("recap_model", None)
    condition = Slot[str | None]("recap_condition", None)
    score = Slot[str]("recap_score", "U")
    budget = Slot[int]("recap_budget", 10)
    #: The record whose probe images are shown (a widget with its own first value).
    inspect = Slot[Any]("recap_inspect", None, seeded=False)
    #: Normalisation typed for an uploaded ONNX model (text inputs with their own first value).
    mean = Slot[str | None]("recap_mean", None, seeded=False)
    std = Slot[str | None]("recap_std", None, seeded=False)
    #: ``{"key", "label", "result": ProbeResult, "images": ImageSet, "positions"}`` of an ONNX upload.
    probe_run = Slot[ProbeRun | None]("recapture_probe_run", None, seeded=False)


class ReviewState(PageState):
    """The review session of the triage page (``ui.review``): the decision form, the bulk form,
    the admin's plan and adjudication forms, the queue's filters, and what a save left behind."""

    __slots__ = ()
    #: Local mode only: with sign-in, the signed-in user decides.
    reviewer = Slot[str]("review_reviewer", "")
    #: The form starts on the reviewer's own decision in force, none if unreviewed.
    decision = Slot[str | None]("review_decision", None)
    reasons = Slot[list[str]]("review_reasons", [])
    note = Slot[str]("review_note", "")
    #: No default: a bulk decision is applied only once one is chosen.
    bulk_decision = Slot[str | None]("review_bulk_decision", None)
    bulk_reasons = Slot[list[str]]("review_bulk_reasons", [])
    bulk_note = Slot[str]("review_bulk_note", "")
    #: The admin's plan form (team mode): reviewers per case, ...
    plan_per_case = Slot[int]("review_plan_per_case", 1)
    #: ... assign the queued cases round-robin ...
    plan_assign = Slot[bool]("review_plan_assign", True)
    #: ... to these addresses (empty: every reviewer of the team file).
    plan_reviewers = Slot[list[str]]("review_plan_reviewers", [])
    #: The admin's final decision on a case, none chosen at first.
    adjudicate_decision = Slot[str | None]("adjudicate_decision", None)
    adjudicate_note = Slot[str]("adjudicate_note", "")
    #: ``(kind, message)`` shown once after saving a decision.
    flash = Slot[Flash | None]("review_flash", None)
    #: The queue's filters (widgets with their own first value).
    filter_status = Slot[str | None]("review_filter_status", None, seeded=False)
    filter_decisions = Slot[list[str] | None]("review_filter_decisions", None, seeded=False)
    filter_reviewers = Slot[list[str] | None]("review_filter_reviewers", None, seeded=False)
    filter_reasons = Slot[list[str] | None]("review_filter_reasons", None, seeded=False)
    #: One submission id per rendered form (a second click on the same form saves nothing).
    token = Slot[str | None]("review_token", None, seeded=False)
    #: The case the decision form was last filled for.
    case = Slot[Any]("_review_case", None, seeded=False)
    #: Whether the local reviewer name was read from the remembered settings this session.
    seeded_reviewer = Slot[bool]("_review_seeded", False, seeded=False)
    #: Fingerprint of the last saved submission (a rerun does not save it twice).
    last_saved = Slot[Any]("_review_last_saved", None, seeded=False)


def applied_selection(table_key: str) -> Slot[list[int]]:
    """The rows of the table ``table_key`` last turned into the shared sample (``ui.selection``):
    a selection is applied once, when it changes."""
    return Slot(f"_{table_key}_applied", [], seeded=False)


def table_state(table_key: str) -> Slot[dict[str, Any] | None]:
    """The widget state of the table ``table_key`` (its row selection), None before any."""
    return Slot(table_key, None, seeded=False)


def shared_state() -> SharedState:
    """The sidebar's choices and the session's uploads."""
    return SharedState()


def auth_state() -> AuthState:
    return AuthState()


def own_model_state() -> OwnModelState:
    return OwnModelState()


def overview_state() -> OverviewState:
    return OverviewState()


def explorer_state() -> ExplorerState:
    return ExplorerState()


def certificate_state() -> CertificateState:
    return CertificateState()


def triage_state() -> TriageState:
    return TriageState()


def comparison_state() -> ComparisonState:
    return ComparisonState()


def calibration_state() -> CalibrationState:
    return CalibrationState()


def paired_bounds_state() -> PairedBoundsState:
    return PairedBoundsState()


def recapture_state() -> RecaptureState:
    return RecaptureState()


def big_audit_state() -> BigAuditState:
    return BigAuditState()


def review_state() -> ReviewState:
    return ReviewState()


#: Every state class, whose seeded slots :func:`seed_defaults` seeds.
STATE_CLASSES: list[type[PageState]] = [
    SharedState,
    AuthState,
    OwnModelState,
    OverviewState,
    ExplorerState,
    CertificateState,
    TriageState,
    BigAuditState,
    ComparisonState,
    CalibrationState,
    PairedBoundsState,
    RecaptureState,
    ReviewState,
]


def seed_defaults(overrides: Mapping[Slot[Any], Any] | None = None) -> None:
    """Give every seeded slot its default, once per session (a value already set is kept).

    ``overrides`` replaces the declared default of some slots (those ``app.py`` learns from
    its command line: the review database, the team file, the audit folder, the audits folder).
    """
    overrides = dict(overrides or {})
    for cls in STATE_CLASSES:
        for slot in cls.slots():
            if slot.seeded and slot.key not in st.session_state:
                st.session_state[slot.key] = overrides[slot] if slot in overrides else copy.deepcopy(slot.default)
