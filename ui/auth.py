"""Sign-in and roles: who the visitor is, and what the dashboard shows them.

Two modes, chosen by the server's configuration, never by the visitor:

- **local** (no ``[auth]`` section in Streamlit's secrets): one user on their own machine, as
  before; decisions carry a typed reviewer name and every action is allowed. The sidebar says so.
- **team** (``[auth]`` configured, Streamlit's OIDC sign-in: ``st.login`` / ``st.user`` /
  ``st.logout``): nothing but the sign-in page is shown until the visitor signs in, and a
  signed-in visitor gets the role the team file (``--team`` or ``AUDIT_TEAM``) gives their
  e-mail address; one without a role sees only a "no access" page. Decisions carry the
  signed-in address and name. The review store enforces the roles
  (:class:`core.reviews.ReviewStore` with ``team=``), and core's server-side actions (upload,
  trust, run, save: :mod:`core.reviews.permissions`) check the :attr:`Access.actor` they are
  given; the widgets only follow them (:meth:`Access.may`: a control the visitor may not use is
  not drawn).

:func:`gate` runs in ``app.py`` before the navigation; pages read :func:`current_access`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.reviews import TEAM_ENV_VAR, Team, TeamFileError, User, load_team
from core.reviews.backend import default_target
from core.reviews.permissions import Actor, allowed, check
from ui.state import auth_state, shared_state

__all__ = [
    "Access",
    "Blocked",
    "current_access",
    "gate",
    "report_reviews",
    "server_team",
    "sign_in_configured",
    "team_path",
]

_LOG = logging.getLogger("reliability_audit.ui")
#: The sign-out button's key (the no-access page and the sidebar draw it, never both in a run).
SIGN_OUT_KEY = "auth_sign_out"


@dataclass(frozen=True, kw_only=True)
class Access:
    """What the current visitor is.

    Attributes
    ----------
    mode : {"local", "team"}
    user : User or None
        The signed-in user (team mode); None in local mode (the reviewer name is typed).
    role : str
        ``"admin"``, ``"reviewer"`` or ``"viewer"`` in team mode; ``"local"`` in local mode.
    team : Team or None
        The team file's roles (team mode).
    note : str
        What the sidebar should say about the mode (e.g. a team file ignored in local mode).
    """

    mode: str
    user: User | None = None
    role: str = "local"
    team: Team | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.mode == "team" and (self.team is None or self.user is None):
            raise ValueError("A signed-in visitor's access needs the server's team and the user.")

    @property
    def team_mode(self) -> bool:
        return self.mode == "team"

    @property
    def actor(self) -> Actor | None:
        """Who acts, for the ``actor`` keyword of core's server-side actions: the signed-in user
        and the server's team; None in local mode (everything allowed)."""
        return Actor(user=self.user, team=self.team) if self.team_mode else None

    def may(self, action: str) -> bool:
        """Whether the visitor may do the server-side ``action`` (``"upload"``, ``"trust"``,
        ``"run"``, ``"save"``; the team file's ``[permissions]``); everything in local mode."""
        return allowed(self.team, self.user, action) if self.team_mode else allowed(None, None, action)

    def require(self, action: str, *, what: str = "") -> None:
        """Refuse ``action`` unless the visitor may do it (:func:`core.reviews.permissions.check`:
        :class:`core.reviews.AccessRefused`, logged); for a page calling a core function that takes
        no ``actor`` itself. Nothing in local mode."""
        check(self.actor, action, what=what)

    def needs(self, action: str) -> str:
        """The least role that may do ``action`` on this server, for people ("admin" by default)."""
        return self.team.permissions[action] if self.team is not None else "admin"

    def can(self, role: str) -> bool:
        """Whether the visitor has at least the rights of ``role`` (everything in local mode)."""
        if not self.team_mode:
            return True
        return self.team is not None and self.user is not None and self.team.allows(self.user.email, role)


def sign_in_configured() -> bool:
    """Whether Streamlit's secrets hold an ``[auth]`` section (team mode)."""
    try:
        return bool(st.secrets.load_if_toml_exists()) and "auth" in st.secrets
    except Exception:  # an unreadable secrets file: Streamlit reports it itself on st.login
        _LOG.exception("the secrets file cannot be read")
        return False


def reviews_db_path(cli_value: str | None) -> str:
    """The review database: ``--reviews-db`` on the command line (a file or a ``postgresql://``
    URL), else ``AUDIT_REVIEWS_DB``, else the per-user default file."""
    return cli_value or str(default_target())


def team_path(cli_value: str | None) -> str | None:
    """The team file: ``--team`` on the command line, else the ``AUDIT_TEAM`` variable, else None."""
    return cli_value or os.environ.get(TEAM_ENV_VAR, "").strip() or None


@st.cache_resource(show_spinner=False, max_entries=4)
def _team(path: str, mtime_ns: int) -> Team:
    # Re-read when the file changes: an admin edits roles without restarting the server.
    return load_team(path)


def _load(path: str) -> Team:
    try:
        mtime = Path(path).expanduser().stat().st_mtime_ns
    except OSError:
        mtime = -1
    return _team(path, mtime)


@dataclass(frozen=True, kw_only=True)
class Blocked:
    """The one page a visitor who may not see the dashboard gets (``app.py`` declares it alone).

    Attributes
    ----------
    title : str
    body : callable
        Draws the page (the sign-in button, or why there is no access and a sign-out button).
    """

    title: str
    body: Callable[[], None]


def _sign_in_page() -> None:
    st.title("Reliability audit")
    st.write("This dashboard is shared by a review team. Sign in with your organisation's account to continue.")
    st.button("Sign in", key="auth_sign_in", type="primary", icon=":material/login:", on_click=st.login)


def _no_access(text: str) -> Blocked:
    def body() -> None:
        st.title("Reliability audit")
        st.warning(text, icon=":material/lock:")
        st.button("Sign out", key=SIGN_OUT_KEY, icon=":material/logout:", on_click=st.logout)

    return Blocked(title="No access", body=body)


def gate(team_file: str | None) -> Access | Blocked:
    """Decide what the visitor may see.

    Parameters
    ----------
    team_file : str or None
        The team file (:func:`team_path`).

    Returns
    -------
    Access or Blocked
        :class:`Access` for a visitor who may see the dashboard (also stored in
        ``auth_state().access``); in team mode, :class:`Blocked` (the sign-in or the
        no-access page) for anyone else: ``app.py`` then shows that page alone and stops.
    """
    if not sign_in_configured():
        note = (
            "A team file was given, but sign-in is not configured (no [auth] section in the secrets): "
            "the team file is ignored."
            if team_file
            else ""
        )
        access = Access(mode="local", note=note)
        auth_state().access = access
        return access
    auth_state().access = None
    if not st.user.get("is_logged_in"):
        return Blocked(title="Sign in", body=_sign_in_page)
    if team_file is None:
        return _no_access(
            "Sign-in is configured but no team file was given (start the server with --team FILE or set "
            f"{TEAM_ENV_VAR}), so nobody has a role yet. Ask the person who runs this dashboard."
        )
    try:
        team = _load(team_file)
    except TeamFileError as exc:
        _LOG.error("team file: %s", exc)
        return _no_access(f"The team file cannot be used: {str(exc).replace(str(team_file), Path(team_file).name)}")
    try:
        user = User(email=str(st.user.get("email") or ""), name=str(st.user.get("name") or ""))
    except ValueError:
        user = None
    if user is None or not user.email:
        return _no_access(
            "Your sign-in did not give an e-mail address, and roles are given per address. Ask the person "
            "who runs this dashboard to request the `email` scope from the identity provider."
        )
    role = team.role_of(user.email)
    if role is None:
        return _no_access(
            f"You are signed in as {user.email}, which has no role in this dashboard's team. Ask an admin of "
            "the team to add you."
        )
    access = Access(mode="team", user=user, role=role, team=team)
    auth_state().access = access
    return access


def current_access() -> Access:
    """The visitor's :class:`Access`, as :func:`gate` decided it in this run.

    With sign-in configured and no access decided (a page run without the gate), the run
    stops: nothing is shown rather than anything granted.
    """
    access = auth_state().access
    if isinstance(access, Access):
        return access
    if sign_in_configured():
        st.stop()
    return Access(mode="local")


def server_team() -> Team | None:
    """The team the review store enforces: the server's team file in team mode, else None.

    Read from the server's configuration (secrets and the team file fixed at start), never
    from what the visitor's session holds, so a store opened with it enforces the roles even
    if a page forgot to check them.
    """
    if not sign_in_configured():
        return None
    path = auth_state().team_file
    if not path:
        raise TeamFileError("sign-in is configured but no team file was given; nobody may write.")
    return _load(path)


def report_reviews() -> dict:
    """The report's review options for this visitor: the database for an admin (or in local mode);
    for anyone else the decisions are left out, and the report says why (it shows every
    reviewer's decisions, which a blind reviewer must not see)."""
    access = current_access()
    if access.can("admin"):
        return {"reviews_db": shared_state().reviews_db}
    return {"reviews_db": None, "reviews_note": f"only an admin's report holds them (you are a {access.role})."}
