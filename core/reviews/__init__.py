"""Review decisions on flagged predictions, persisted in SQLite or PostgreSQL (see :mod:`core.reviews.store`)."""

from core.reviews import store as _store
from core.reviews.agreement import CASE_STATES, Agreement, agreement, case_states
from core.reviews.assignment import ReviewPlan, round_robin
from core.reviews.keys import audit_key, data_fingerprint
from core.reviews.queue import QueueFilter, filter_queue, next_unreviewed, step_case
from core.reviews.settings import remember_reviewer, remembered_reviewer, settings_path
from core.reviews.store import *  # noqa: F403 - the store's public names are listed once, in its __all__
from core.reviews.team import ROLES, TEAM_ENV_VAR, AccessRefused, Team, TeamFileError, User, load_team

__all__ = [
    "CASE_STATES",
    "ROLES",
    "TEAM_ENV_VAR",
    "AccessRefused",
    "Agreement",
    "QueueFilter",
    "ReviewPlan",
    "Team",
    "TeamFileError",
    "User",
    "load_team",
    "round_robin",
    "agreement",
    "audit_key",
    "case_states",
    "data_fingerprint",
    "filter_queue",
    "next_unreviewed",
    "remember_reviewer",
    "remembered_reviewer",
    "settings_path",
    "step_case",
]
__all__ += _store.__all__
