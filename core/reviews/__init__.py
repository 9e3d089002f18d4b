"""Review decisions on flagged predictions, persisted in SQLite (see :mod:`core.reviews.store`)."""
from core.reviews.store import (
    DECISION_LABELS,
    DECISIONS,
    ENV_VAR,
    REVIEW_COLUMNS,
    Decision,
    Review,
    ReviewStore,
    default_db_path,
)

__all__ = [
    "DECISIONS",
    "DECISION_LABELS",
    "ENV_VAR",
    "REVIEW_COLUMNS",
    "Decision",
    "Review",
    "ReviewStore",
    "default_db_path",
]
