"""The entries of the review log: decisions, reasons, the audit key, validation of what a writer gives.

Shared by every part of the review store (:mod:`core.reviews.store`) and by its readers; no
database code lives here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

__all__ = [
    "ADJUDICATION",
    "DECISIONS",
    "DECISION_LABELS",
    "ENTRY_LABELS",
    "ENV_VAR",
    "REASONS",
    "RETRACTED",
    "REVIEW",
    "REVIEW_COLUMNS",
    "AuditKey",
    "Decision",
    "Review",
    "ReviewStoreError",
    "reason_labels",
]

Decision = Literal["confirmed_brittle", "acceptable", "needs_reacquisition"]
#: The closed set of decisions, in the order they are offered to a reviewer.
DECISIONS: tuple[str, ...] = get_args(Decision)
#: Human-readable label of every decision (for display and exports).
DECISION_LABELS: dict[str, str] = {
    "confirmed_brittle": "Confirmed brittle",
    "acceptable": "Acceptable",
    "needs_reacquisition": "Needs evidence re-acquisition",
}
#: ``decision`` of an undo entry (never offered as a decision, never a case's latest decision).
RETRACTED = "retracted"
#: Labels of every kind of stored entry: the decisions plus retractions.
ENTRY_LABELS: dict[str, str] = {**DECISION_LABELS, RETRACTED: "Retracted (undo)"}
#: ``kind`` of an ordinary decision (and of its retraction).
REVIEW = "review"
#: ``kind`` of an admin's final decision on a case (and of its retraction).
ADJUDICATION = "adjudication"
#: Structured reason codes a reviewer may attach to a decision (any number of them, plus a
#: free note), in the order they are offered.
REASONS: dict[str, str] = {
    "data_quality": "Data-quality issue",
    "missing_field": "Missing field",
    "over_reliance": "Model over-relies on one group",
    "label_doubt": "True label looks wrong",
    "out_of_distribution": "Unusual case (outside the training data)",
    "evidence_sufficient": "Acceptable: the evidence supports it",
    "other": "Other (see the note)",
}
#: Environment variable that overrides the default database location.
ENV_VAR = "AUDIT_REVIEWS_DB"
#: Columns of every DataFrame this module returns, in order.
REVIEW_COLUMNS: tuple[str, ...] = (
    "review_id",
    "created_at",
    "audit_fingerprint",
    "sample_id",
    "reviewer",
    "decision",
    "note",
    "reasons",
    "retracts",
    "data_fingerprint",
    "model",
    "protocol_fingerprint",
    "submission_id",
    "reviewer_email",
    "kind",
)
# The columns of versions 1 and 2 (copied verbatim by the migration).
_V1_COLUMNS: tuple[str, ...] = REVIEW_COLUMNS[:7]

_MAX_REVIEWER = 200
_MAX_NOTE = 10_000
_COLUMNS = ", ".join(REVIEW_COLUMNS)
_COLUMNS_R = ", ".join(f"r.{c}" for c in REVIEW_COLUMNS)
# A decision still in force: not a retraction, and named by no retraction.
_ACTIVE = f"decision != '{RETRACTED}' AND review_id NOT IN (SELECT retracts FROM reviews WHERE retracts IS NOT NULL)"


class ReviewStoreError(ValueError):
    """The review database cannot be used: not ours, newer, corrupted, locked, full, unwritable.

    The message names the database (a file, or a server URL without its password) and says what
    to do; the database is left as it was.
    """


@dataclass(frozen=True)
class AuditKey:
    """The audit a decision is made under, and the data it is about.

    Attributes
    ----------
    fingerprint : str
        Certificate fingerprint of the audit (protocol + model outputs on a fixed probe):
        the key decisions are stored and attached under.
    data_fingerprint : str, default=""
        Fingerprint of the dataset the sample ids refer to (:func:`core.reviews.data_fingerprint`):
        audits of the same data (another model or protocol) share it, so their decisions can
        be shown side by side. Empty when unknown (entries written before schema version 3).
    model : str, default=""
        Model of the audit (display name or key).
    protocol_fingerprint : str, default=""
        Fingerprint of the audit's protocol.
    """

    fingerprint: str
    data_fingerprint: str = ""
    model: str = ""
    protocol_fingerprint: str = ""

    def __post_init__(self) -> None:
        _text_iv(self.fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        for name in ("data_fingerprint", "model", "protocol_fingerprint"):
            _text_iv(getattr(self, name), name, max_len=512, allow_empty=True)


@dataclass(frozen=True)
class Review:
    """One stored entry: a decision, or the retraction of one.

    Attributes
    ----------
    review_id : int
        Monotone id assigned by the database; a larger id is a later entry.
    created_at : str
        UTC timestamp, ISO 8601 with microseconds (``2026-01-31T09:15:02.123456+00:00``).
    audit_fingerprint : str
        Fingerprint of the audit the sample belongs to.
    sample_id : str
        Stable id of the sample within that audit.
    reviewer : str
        Who decided (stripped of surrounding white space).
    decision : {"confirmed_brittle", "acceptable", "needs_reacquisition", "retracted"}
        The decision, or ``"retracted"`` for an undo entry.
    note : str
        Free-text justification (may be empty).
    reasons : tuple of str
        Reason codes (keys of :data:`REASONS`) in declared order; empty for a retraction.
    retracts : int or None
        For a retraction, the ``review_id`` of the decision it cancels; else None.
    data_fingerprint, model, protocol_fingerprint : str
        The :class:`AuditKey` context (empty for entries from before schema version 3).
    submission_id : str or None
        The submission that stored the entry (unique), if given.
    reviewer_email : str
        The signed-in address of the reviewer; empty in local mode (and before schema version 4).
    kind : {"review", "adjudication"}
        An ordinary decision, or an admin's final decision on the case (a retraction takes
        the kind of the entry it cancels).
    """

    review_id: int
    created_at: str
    audit_fingerprint: str
    sample_id: str
    reviewer: str
    decision: str
    note: str
    reasons: tuple[str, ...] = ()
    retracts: int | None = None
    data_fingerprint: str = ""
    model: str = ""
    protocol_fingerprint: str = ""
    submission_id: str | None = None
    reviewer_email: str = ""
    kind: str = REVIEW

    @classmethod
    def _from_row(cls, row: tuple) -> Review:
        values = dict(zip(REVIEW_COLUMNS, row))
        values["reasons"] = _split_reasons(values["reasons"])
        return cls(**values)


def _split_reasons(text: str) -> tuple[str, ...]:
    return tuple(code for code in text.split(",") if code)


def _reasons_iv(value: object) -> str:
    """Reason codes as stored: comma-joined, unique, in the declared order of :data:`REASONS`."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(
            f"`reasons` must be a list of reason codes from {list(REASONS)}; got {type(value).__name__} {value!r}."
        )
    codes = list(value)
    unknown = [c for c in codes if c not in REASONS]
    if unknown:
        raise ValueError(f"`reasons` must be codes from {list(REASONS)}; got unknown {unknown!r}.")
    return ",".join(code for code in REASONS if code in codes)


def _key_iv(audit: str | AuditKey) -> AuditKey:
    if isinstance(audit, AuditKey):
        return audit
    _text_iv(audit, "audit_fingerprint", max_len=512, allow_empty=False)
    return AuditKey(audit.strip())


def _submission_iv(value: object) -> str | None:
    return None if value is None else _text_iv(value, "submission_id", max_len=200, allow_empty=False)


def _text_iv(value: object, name: str, *, max_len: int, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise ValueError(f"`{name}` must be a string; got {type(value).__name__} {value!r}.")
    text = value.strip()
    if not text and not allow_empty:
        raise ValueError(f"`{name}` must not be empty; got {value!r}.")
    if len(text) > max_len:
        raise ValueError(f"`{name}` must have at most {max_len} characters; got {len(text)}.")
    return text


def _sample_id_iv(value: object) -> str:
    # ints (dataset row ids) and strings (record ids) are both legitimate sample ids; floats
    # are refused because 3.0 and "3" would silently become two different keys.
    if isinstance(value, str):
        text = value.strip()
    elif hasattr(value, "__index__") and not isinstance(value, bool):
        text = str(value.__index__())
    else:
        raise ValueError(f"`sample_id` must be a string or an integer; got {type(value).__name__} {value!r}.")
    if not text:
        raise ValueError(f"`sample_id` must not be empty; got {value!r}.")
    return text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class _NothingToRetract(ValueError):
    """Raised inside the transaction (rolled back) when a case has nothing to retract."""


def reason_labels(codes: str | Iterable[str]) -> str:
    """Human labels of stored reason codes (``"data_quality,missing_field"`` or a list), ``"; "``-joined."""
    items = _split_reasons(codes) if isinstance(codes, str) else tuple(codes)
    return "; ".join(REASONS.get(code, code) for code in items)
