"""Who may act on the server: the role check of uploads, trust, audit and probe runs, and saves.

The review store checks its own writes (:class:`core.reviews.store.ReviewStore`); this module
checks the dashboard's other server-side actions (:data:`core.reviews.team.ACTIONS`):

- ``upload``: upload a table, a model or images;
- ``trust``: trust the skops types of an uploaded model (loading it runs their code);
- ``run``: start an audit of an uploaded model or table, or a probe run;
- ``save``: save an audit into the shared audits folder.

Each needs the admin role unless the team file's ``[permissions]`` table grants it to
reviewers (never to viewers, who are read-only: :func:`core.reviews.team.load_team` refuses
that). The core functions that perform these actions take a keyword-only ``actor`` (an :class:`Actor`, the signed-in user and the server's
team) and call :func:`check` first, so a call that bypasses the dashboard's widgets is refused
too. ``actor=None`` (the command line, a notebook) and an actor without a team are the
single-user local mode: everything is allowed.

A refusal raises :class:`core.reviews.team.AccessRefused` and is logged on the
``reliability_audit.reviews`` logger, as the review store logs its own::

    refused: dee@example.org (viewer) tried to upload model.skops: is a viewer; to upload needs the admin role
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.reviews.team import ACTIONS, AccessRefused, Action, Team, User

__all__ = ["ACTIONS", "Action", "Actor", "allowed", "check", "require"]

_LOG = logging.getLogger("reliability_audit.reviews")
#: Who a refusal names when nobody is signed in (team mode only).
_NOBODY = "(not signed in)"


def _action_iv(action: object) -> str:
    if action not in ACTIONS:
        raise ValueError(f"`action` must be one of {list(ACTIONS)}; got {action!r}.")
    return action  # type: ignore[return-value]


def _why_refused(team: Team, user: User | None, action: Action) -> tuple[str, str]:
    """``(role, reason)``: the user's role and why ``action`` is refused (reason "" when allowed)."""
    if user is None or not user.email:
        return "none", "is not signed in; on a server with sign-in every action names its user"
    role = team.role_of(user.email)
    if role is None:
        return "none", "has no access (not in the team file)"
    if not team.may(user.email, action):
        need = team.permissions[action]
        return role, f"is a {role}; to {action} needs the {need} role"
    return role, ""


def allowed(team: Team | None, user: User | None, action: Action) -> bool:
    """Whether ``user`` may do ``action`` under ``team`` (always, without a team); nothing is logged.

    For showing or hiding a control; the action itself is checked by :func:`require`.

    Examples
    --------
    >>> team = Team(members={"ana@example.org": "admin", "dee@example.org": "viewer"})
    >>> allowed(team, User(email="dee@example.org"), "upload"), allowed(team, User(email="ana@example.org"), "upload")
    (False, True)
    >>> allowed(None, None, "trust")  # local mode
    True
    """
    action = _action_iv(action)
    if team is None:
        return True
    return not _why_refused(team, user, action)[1]


def require(team: Team | None, user: User | None, action: Action, *, what: str = "") -> None:
    """Refuse ``action`` unless ``user``'s role under ``team`` allows it (no team: local mode, allowed).

    Parameters
    ----------
    team : Team or None
        The server's team (its ``[permissions]``); None in single-user local mode.
    user : User or None
        The signed-in user (None: nobody signed in, refused under a team).
    action : {"upload", "trust", "run", "save"}
    what : str, default=""
        What exactly was tried, for the log and the message (``"model.skops"``); no server path.

    Raises
    ------
    AccessRefused
        The role does not allow it; the refusal is logged (warning, ``reliability_audit.reviews``).
    ValueError
        ``action`` is not one of :data:`ACTIONS`.

    Examples
    --------
    >>> team = Team(members={"dee@example.org": "viewer"})
    >>> require(None, None, "upload")  # local mode: allowed
    >>> require(team, User(email="dee@example.org", name="Dee"), "upload", what="m.skops")
    Traceback (most recent call last):
    ...
    core.reviews.team.AccessRefused: Dee <dee@example.org> is a viewer; to upload needs the admin role: nothing was done (upload m.skops).
    """
    action = _action_iv(action)
    if team is None:
        return
    role, reason = _why_refused(team, user, action)
    if not reason:
        return
    who = user if user is not None else User(name=_NOBODY)
    tried = f"{action} {what}" if what else action
    _LOG.warning("refused: %s (%s) tried to %s: %s", who.email or who.name, role, tried, reason)
    raise AccessRefused(f"{who.label} {reason}: nothing was done ({tried}).", user=who, role=role, action=action)


@dataclass(frozen=True, kw_only=True)
class Actor:
    """Who asks the server for an action, and the team whose roles decide.

    Attributes
    ----------
    user : User or None
        The signed-in user (None: nobody, or local mode).
    team : Team or None
        The server's team file; None is the single-user local mode (everything allowed).

    Examples
    --------
    >>> team = Team(members={"bo@example.org": "reviewer"}, permissions={"run": "reviewer"})
    >>> bo = Actor(user=User(email="bo@example.org"), team=team)
    >>> bo.may("run"), bo.may("save"), Actor().may("save")
    (True, False, True)
    """

    user: User | None = None
    team: Team | None = None

    def __post_init__(self) -> None:
        if self.user is not None and not isinstance(self.user, User):
            raise ValueError(f"`user` must be a core.reviews.User or None; got {type(self.user).__name__}.")
        if self.team is not None and not isinstance(self.team, Team):
            raise ValueError(f"`team` must be a core.reviews.Team or None; got {type(self.team).__name__}.")

    def may(self, action: Action) -> bool:
        """Whether this actor may do ``action`` (:func:`allowed`)."""
        return allowed(self.team, self.user, action)

    def require(self, action: Action, *, what: str = "") -> None:
        """Refuse ``action`` unless allowed (:func:`require`)."""
        require(self.team, self.user, action, what=what)


def check(actor: Actor | None, action: Action, *, what: str = "") -> None:
    """:func:`require` for the ``actor`` keyword of a core entry point (None: local mode, allowed).

    Raises
    ------
    AccessRefused
        As :func:`require`.
    ValueError
        ``actor`` is neither an :class:`Actor` nor None, or ``action`` is unknown.
    """
    if actor is None:
        _action_iv(action)
        return
    if not isinstance(actor, Actor):
        raise ValueError(f"`actor` must be a core.reviews.permissions.Actor or None; got {type(actor).__name__}.")
    actor.require(action, what=what)
