"""Review decisions on flagged predictions, persisted in SQLite (see :mod:`core.reviews.store`)."""
from core.reviews.store import (
    APPLICATION_ID,
    DECISION_LABELS,
    DECISIONS,
    ENV_VAR,
    REVIEW_COLUMNS,
    Decision,
    Review,
    ReviewStore,
    ReviewStoreError,
    default_db_path,
)

__all__ = [
    "APPLICATION_ID",
    "DECISIONS",
    "DECISION_LABELS",
    "ENV_VAR",
    "REVIEW_COLUMNS",
    "Decision",
    "Review",
    "ReviewStore",
    "ReviewStoreError",
    "default_db_path",
]
