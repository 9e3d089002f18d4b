"""Who may do what in the review store: the team file, its roles and the signed-in user.

A team file is TOML, given to the dashboard with ``--team team.toml`` (or the ``AUDIT_TEAM``
environment variable)::

    # team.toml
    default_role = "none"          # a signed-in user who is not listed: none (no access), viewer or reviewer

    [members]
    "ana@example.org" = "admin"    # assigns cases, adjudicates disagreements, exports
    "bo@example.org" = "reviewer"  # decides on the cases assigned to them (all, when assignment is off)
    "cy@example.org" = "viewer"    # reads

    [permissions]                  # optional: who may act on the server (admin when not given)
    upload = "reviewer"            # upload tables, models and images
    trust = "admin"                # trust the skops types of an uploaded model
    run = "reviewer"               # start an audit of an uploaded model or table, or a probe run
    save = "reviewer"              # save an audit into the shared audits folder

E-mail addresses are compared without regard to case. The roles are ordered: an admin may do
everything a reviewer may, a reviewer everything a viewer may. :class:`ReviewStore
<core.reviews.store.ReviewStore>` enforces them on every write (:class:`AccessRefused`); the
server-side actions of :data:`ACTIONS` need the role :attr:`Team.permissions` gives them
(:meth:`Team.may`), enforced by :func:`core.reviews.permissions.require`. A viewer is read-only:
no action can be granted to viewers.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

__all__ = [
    "ACTIONS",
    "DEFAULT_PERMISSIONS",
    "ROLES",
    "TEAM_ENV_VAR",
    "AccessRefused",
    "Action",
    "Role",
    "Team",
    "TeamFileError",
    "User",
    "load_team",
]

Role = Literal["admin", "reviewer", "viewer"]
#: The roles, most rights first.
ROLES: tuple[str, ...] = get_args(Role)
#: What an unlisted user may be given by ``default_role`` ("none" = no access; never admin).
_DEFAULT_ROLES = ("none", "viewer", "reviewer")
#: Environment variable naming the team file when ``--team`` is not given.
TEAM_ENV_VAR = "AUDIT_TEAM"
_RANK = {"viewer": 1, "reviewer": 2, "admin": 3}

Action = Literal["upload", "trust", "run", "save"]
#: The server-side actions a team file's ``[permissions]`` table grants (besides the review
#: store's own): upload a table, a model or images; trust the skops types of an uploaded model;
#: start an audit of an uploaded model or table, or a probe run; save an audit into the shared
#: audits folder.
ACTIONS: tuple[str, ...] = get_args(Action)
#: Who may do each action when the team file does not say: admins only.
DEFAULT_PERMISSIONS: Mapping[str, str] = {action: "admin" for action in ACTIONS}
#: The roles an action may be granted to (viewers are read-only).
_GRANTABLE = ("reviewer", "admin")
# Deliberately loose (one "@", no blanks, a dot in the domain): identity providers decide what
# an address is; this only catches a name or a typo typed where an address belongs.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAX_NAME = 200


class TeamFileError(ValueError):
    """The team file cannot be used; the message names the file, the line or key and the value."""


class AccessRefused(PermissionError):
    """A user tried something their role does not allow (the store logged the attempt).

    Attributes
    ----------
    user : User
        Who tried.
    role : str
        Their role (``"none"`` when they have no access).
    action : str
        What they tried: a review store action (``"decide"``, ``"retract"``, ``"adjudicate"``,
        ``"assign"``, ``"export"``, ``"read"``) or a server-side action of :data:`ACTIONS`.
    """

    def __init__(self, message: str, *, user: User, role: str, action: str) -> None:
        super().__init__(message)
        self.user, self.role, self.action = user, role, action


@dataclass(frozen=True, kw_only=True)
class User:
    """A person acting in the dashboard.

    Attributes
    ----------
    email : str
        The signed-in address (lower-cased); empty in single-user local mode.
    name : str
        Display name (from the identity provider, or typed in local mode); the address when
        the provider gives none.
    """

    email: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        for attr in ("email", "name"):
            value = getattr(self, attr)
            if not isinstance(value, str):
                raise ValueError(f"`{attr}` of a user must be a string; got {type(value).__name__} {value!r}.")
        email = self.email.strip().lower()
        if email and not _EMAIL.match(email):
            raise ValueError(f"`email` must be an e-mail address such as ana@example.org; got {self.email!r}.")
        name = self.name.strip()[:_MAX_NAME] or email
        if not name:
            raise ValueError("A user needs an e-mail address or a name; got neither.")
        object.__setattr__(self, "email", email)
        object.__setattr__(self, "name", name)

    @property
    def label(self) -> str:
        """``Name <email>`` (or just the name in local mode)."""
        return f"{self.name} <{self.email}>" if self.email and self.name != self.email else self.name


@dataclass(frozen=True, kw_only=True)
class Team:
    """Roles per e-mail address, and the role of everyone else.

    Attributes
    ----------
    members : mapping of str to str
        Lower-cased e-mail address -> role (one of :data:`ROLES`), in the file's order.
    default_role : {"none", "viewer", "reviewer"}, default="none"
        Role of a signed-in user who is not listed; ``"none"`` means no access.
    source : str, default=""
        Where the team was read from (for messages).
    permissions : mapping of str to str, default=:data:`DEFAULT_PERMISSIONS`
        Action (one of :data:`ACTIONS`) -> the least role that may do it (``"reviewer"`` or
        ``"admin"``); actions not given need ``"admin"``.

    Examples
    --------
    >>> team = Team(members={"Ana@Example.org": "admin", "bo@example.org": "reviewer"})
    >>> team.role_of("ana@example.org"), team.role_of("zed@example.org")
    ('admin', None)
    >>> team.allows("bo@example.org", "reviewer"), team.allows("bo@example.org", "admin")
    (True, False)
    >>> team.may("bo@example.org", "upload"), Team(members=team.members, permissions={"upload": "reviewer"}).may(
    ...     "bo@example.org", "upload"
    ... )
    (False, True)
    """

    members: Mapping[str, str] = field(default_factory=dict)
    default_role: str = "none"
    source: str = ""
    permissions: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PERMISSIONS))

    def __post_init__(self) -> None:
        where = f"team {self.source!r}" if self.source else "team"
        if self.default_role not in _DEFAULT_ROLES:
            raise TeamFileError(
                f"{where}: `default_role` must be one of {list(_DEFAULT_ROLES)}; got {self.default_role!r}."
            )
        members: dict[str, str] = {}
        for email, role in dict(self.members).items():
            address = str(email).strip().lower()
            if not _EMAIL.match(address):
                raise TeamFileError(f"{where}: member {email!r} is not an e-mail address such as ana@example.org.")
            if role not in ROLES:
                raise TeamFileError(f"{where}: member {email!r} has role {role!r}; expected one of {list(ROLES)}.")
            if address in members:
                raise TeamFileError(f"{where}: member {email!r} is listed twice (addresses ignore case).")
            members[address] = role
        object.__setattr__(self, "members", members)
        if not isinstance(self.permissions, Mapping):
            raise TeamFileError(
                f"{where}: `permissions` must map actions to roles; got {type(self.permissions).__name__}."
            )
        permissions = dict(DEFAULT_PERMISSIONS)
        for action, role in dict(self.permissions).items():
            problem = _permission_problem(action, role)
            if problem:
                raise TeamFileError(f"{where}: permissions.{action}: {problem}")
            permissions[action] = role
        object.__setattr__(self, "permissions", permissions)

    def role_of(self, email: str) -> str | None:
        """The role of ``email`` (listed, else the default role), or None for no access."""
        role = self.members.get(str(email).strip().lower())
        if role is None and self.default_role != "none":
            role = self.default_role
        return role

    def allows(self, email: str, role: str) -> bool:
        """Whether ``email`` has at least the rights of ``role``."""
        mine = self.role_of(email)
        return mine is not None and _RANK[mine] >= _RANK[role]

    def may(self, email: str, action: str) -> bool:
        """Whether ``email`` may do the server-side ``action`` (one of :data:`ACTIONS`).

        Raises
        ------
        ValueError
            ``action`` is not one of :data:`ACTIONS`.
        """
        if action not in ACTIONS:
            raise ValueError(f"`action` must be one of {list(ACTIONS)}; got {action!r}.")
        return self.allows(email, self.permissions[action])

    def with_role(self, *roles: str) -> tuple[str, ...]:
        """The listed addresses whose role is one of ``roles``, in the file's order."""
        return tuple(email for email, role in self.members.items() if role in roles)


def _permission_problem(action: object, role: object) -> str:
    """Why ``action = role`` cannot stand in ``[permissions]`` ("" when it can)."""
    if action not in ACTIONS:
        return f"unknown action {action!r}; expected one of {list(ACTIONS)}."
    if role == "viewer":
        return f"{role!r} cannot be given {action!r}: viewers are read-only; expected one of {list(_GRANTABLE)}."
    if not isinstance(role, str) or role not in _GRANTABLE:
        return f"role {role!r} is not one of {list(_GRANTABLE)}."
    return ""


def _line_of(text: str, needle: str, *, after: str | None = None, key: bool = False) -> int | None:
    """The first line holding ``needle`` (not a comment), after the line holding ``after``; with
    ``key``, the first line whose key is ``needle`` (bare or quoted)."""
    start = 0
    if after is not None:
        start = _line_of(text, after) or 0
    for number, line in enumerate(text.splitlines(), start=1):
        bare = line.lstrip()
        if number <= start or bare.startswith("#"):
            continue
        if (bare.partition("=")[0].strip().strip("\"'") == needle) if key else (needle in line):
            return number
    return None


def load_team(path: str | os.PathLike[str]) -> Team:
    """Read and validate a team file (see the module docstring for its format).

    Raises
    ------
    TeamFileError
        Naming the file, and the line or key and the value that is wrong: a missing file, TOML
        syntax, an unknown key, a role that does not exist, an address that is not one, an
        address listed twice, an admin as default role; in ``[permissions]``, an action not in
        :data:`ACTIONS` or a role other than ``"reviewer"`` / ``"admin"`` (viewers are read-only).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "team.toml"
    >>> _ = p.write_text('[members]\\n"ana@example.org" = "admin"\\n')
    >>> load_team(p).role_of("ANA@example.org")
    'admin'
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise TeamFileError(f"team file {str(path)!r} does not exist or is not a file.")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TeamFileError(f"team file {str(path)!r} cannot be read: {exc}.") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TeamFileError(f"team file {str(path)!r} is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - {"default_role", "members", "permissions"})
    if unknown:
        line = _line_of(text, unknown[0])
        raise TeamFileError(
            f"team file {str(path)!r}{f', line {line}' if line else ''}: unknown key {unknown[0]!r}; "
            "expected `default_role`, a [members] table and a [permissions] table."
        )
    members = data.get("members", {})
    if not isinstance(members, dict):
        raise TeamFileError(
            f'team file {str(path)!r}: `members` must be a table of "address" = "role"; got {members!r}.'
        )
    default = data.get("default_role", "none")
    if not isinstance(default, str) or default not in _DEFAULT_ROLES:
        line = _line_of(text, "default_role")
        raise TeamFileError(
            f"team file {str(path)!r}{f', line {line}' if line else ''}: `default_role` = {default!r}; "
            f"expected one of {list(_DEFAULT_ROLES)} (an admin must be listed by address)."
        )
    seen: dict[str, str] = {}
    for email, role in members.items():
        line = _line_of(text, email)
        at = f"team file {str(path)!r}{f', line {line}' if line else ''}, members.{email!r}"
        if not _EMAIL.match(email.strip()):
            raise TeamFileError(f"{at}: {email!r} is not an e-mail address such as ana@example.org.")
        if not isinstance(role, str) or role not in ROLES:
            raise TeamFileError(f"{at}: role {role!r} is not one of {list(ROLES)}.")
        address = email.strip().lower()
        if address in seen:
            raise TeamFileError(f"{at}: {email!r} is listed twice (as {seen[address]!r}; addresses ignore case).")
        seen[address] = email
    permissions = data.get("permissions", {})
    if not isinstance(permissions, dict):
        raise TeamFileError(
            f'team file {str(path)!r}: `permissions` must be a table of action = "role"; got {permissions!r}.'
        )
    for action, role in permissions.items():
        problem = _permission_problem(action, role)
        if problem:
            line = _line_of(text, action, after="[permissions]", key=True)
            raise TeamFileError(
                f"team file {str(path)!r}{f', line {line}' if line else ''}, permissions.{action} = {role!r}: {problem}"
            )
    return Team(members=members, default_role=default, source=str(path), permissions=permissions)
