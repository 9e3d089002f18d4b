"""The reviewer's name, remembered across restarts in a small JSON file beside the database.

The file is ``<database stem>.settings.json`` in the database's folder (by default the user
data directory), so a second review database (``--reviews-db``) has its own, and tests with
a throw-away database never touch the user's. A database on a PostgreSQL server
(``postgresql://`` URL) has no folder: its file is in the user data directory, named by the
database and a digest of its URL without the password (a URL never becomes a path). It holds ``{"reviewer": NAME}`` only; it is
written atomically, and an unreadable or malformed file is treated as absent (the name is a
convenience, never a reason to refuse to open the dashboard).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from core.atomic import atomic_write_text
from core.reviews.backend import is_url
from core.reviews.postgres import redact

__all__ = ["remember_reviewer", "remembered_reviewer", "settings_path"]

_MAX_REVIEWER = 200


def settings_path(db_path: str | os.PathLike[str]) -> Path:
    """Settings file of the review database at ``db_path`` (a file path or a PostgreSQL URL)."""
    if is_url(db_path):
        import platformdirs

        shown = redact(str(db_path).strip())
        digest = hashlib.sha256(shown.encode()).hexdigest()[:12]
        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in shown.rsplit("/", 1)[-1])[:40]
        return platformdirs.user_data_path("reliability-audit", appauthor=False) / f"{name}-{digest}.settings.json"
    db = Path(db_path).expanduser()
    return db.with_name(f"{db.stem}.settings.json")


def remembered_reviewer(db_path: str | os.PathLike[str]) -> str:
    """The last reviewer name remembered for this database, or ``""``."""
    try:
        data = json.loads(settings_path(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    name = data.get("reviewer") if isinstance(data, dict) else None
    return name.strip()[:_MAX_REVIEWER] if isinstance(name, str) else ""


def remember_reviewer(db_path: str | os.PathLike[str], name: str) -> bool:
    """Remember ``name`` (stripped) for this database; ``False`` when the file cannot be written.

    A blank name is not remembered (the previous one stays).
    """
    if not isinstance(name, str):
        raise ValueError(f"`name` must be a string; got {type(name).__name__} {name!r}.")
    text = name.strip()[:_MAX_REVIEWER]
    if not text or text == remembered_reviewer(db_path):
        return bool(text)
    try:
        atomic_write_text(settings_path(db_path), json.dumps({"reviewer": text}))
    except OSError:
        return False
    return True
