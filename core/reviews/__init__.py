"""Review decisions on flagged predictions, persisted in SQLite (see :mod:`core.reviews.store`)."""
from core.reviews.keys import audit_key, data_fingerprint
from core.reviews.queue import QueueFilter, filter_queue, next_unreviewed, step_case
from core.reviews.settings import remember_reviewer, remembered_reviewer, settings_path
from core.reviews.store import (
    APPLICATION_ID,
    DECISION_LABELS,
    DECISIONS,
    ENTRY_LABELS,
    ENV_VAR,
    REASONS,
    RETRACTED,
    REVIEW_COLUMNS,
    AuditKey,
    Decision,
    Review,
    ReviewStore,
    ReviewStoreError,
    default_db_path,
    reason_labels,
)

__all__ = [
    "APPLICATION_ID",
    "DECISIONS",
    "DECISION_LABELS",
    "ENTRY_LABELS",
    "ENV_VAR",
    "REASONS",
    "RETRACTED",
    "REVIEW_COLUMNS",
    "AuditKey",
    "Decision",
    "QueueFilter",
    "Review",
    "ReviewStore",
    "ReviewStoreError",
    "audit_key",
    "data_fingerprint",
    "default_db_path",
    "filter_queue",
    "next_unreviewed",
    "reason_labels",
    "remember_reviewer",
    "remembered_reviewer",
    "settings_path",
    "step_case",
]
