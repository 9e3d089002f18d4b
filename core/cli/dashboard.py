"""The ``dashboard`` command: start the installed dashboard from any folder.

``reliability-audit dashboard [--audit DIR] [--reviews-db PATH] [--audits-dir DIR] [--team FILE]
[--secrets FILE] [--dask-scheduler ADDRESS] [-- STREAMLIT OPTIONS]``

Runs ``streamlit run`` on the dashboard shipped with the package (:mod:`core.resources`), with
the dashboard's own Streamlit settings (``.streamlit/config.toml`` beside ``app.py``; Streamlit
reads that file only from the working folder, so they are passed as options). Options after
``--`` go to Streamlit and win over those settings, e.g. ``-- --server.port 8600
--server.headless true``. Paths are checked first: a bad ``--audit`` exits with code 2 and one
line, and no server starts; so does a saved audit written by a newer version of the tool
(:func:`core.tabular.audit_folder.check_audit_folder` reads its format versions:
``error: DIR: made by a newer reliability-audit (format 2; this one reads up to 1): upgrade.``).

**A review team.** ``--team FILE`` gives the roles (:mod:`core.reviews.team`; checked here, so a
bad file stops the start with its line and value) and ``--secrets FILE`` the sign-in settings
(Streamlit's ``secrets.toml`` with an ``[auth]`` section), passed to Streamlit as
``secrets.files``. Without ``--secrets``, Streamlit reads ``.streamlit/secrets.toml`` of the
working folder (and ``~/.streamlit/secrets.toml``), as for any Streamlit app.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

__all__ = ["check_secrets", "register", "streamlit_command"]


def register(subparsers) -> None:
    """Add the ``dashboard`` command."""
    p = subparsers.add_parser(
        "dashboard",
        help="open the dashboard (the bundled default audit, or a saved audit with --audit)",
        usage="%(prog)s [--audit DIR] [--reviews-db PATH] [--audits-dir DIR] [--team FILE] [--secrets FILE] "
        "[--dask-scheduler ADDRESS] [-- STREAMLIT OPTIONS ...]",
        description="Start the dashboard in your browser. Streamlit options go after `--`, e.g. "
        "`-- --server.port 8600 --server.headless true`.",
    )
    p.add_argument(
        "--audit",
        metavar="DIR",
        help="open this saved audit folder (the output of `audit --out`) or certify run (`certify --out`, any size)",
    )
    p.add_argument(
        "--reviews-db",
        metavar="PATH_OR_URL",
        help="the review decisions database: an SQLite file (created if missing) or a postgresql:// URL",
    )
    p.add_argument("--audits-dir", metavar="DIR", help="folder of saved audits offered in the sidebar")
    p.add_argument(
        "--team", metavar="FILE", help="team file: admin / reviewer / viewer per e-mail address (needs sign-in)"
    )
    p.add_argument(
        "--secrets",
        metavar="FILE",
        help="Streamlit secrets file with the [auth] sign-in settings (default: .streamlit/secrets.toml here)",
    )
    p.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="Dask scheduler (tcp://host:8786) that certifies every row of large uploads (default: this machine)",
    )
    p.add_argument("streamlit_options", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _config_options(config: Path) -> list[str]:
    """The dashboard's ``config.toml`` as ``--section.option=value`` arguments of ``streamlit run``."""
    if not config.is_file():
        return []
    options = []
    for section, values in tomllib.loads(config.read_text(encoding="utf-8")).items():
        for name, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            options.append(f"--{section}.{name}={text}")
    return options


def check_secrets(path: str) -> Path:
    """A Streamlit secrets file with a usable ``[auth]`` section, as an absolute path.

    Raises
    ------
    ValueError
        Naming the file and what is missing (the file, TOML syntax, ``[auth]``, a key).
    """
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ValueError(f"--secrets {path!r} does not exist or is not a file.")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"--secrets {path!r} cannot be read as TOML: {exc}.") from None
    auth = data.get("auth")
    if not isinstance(auth, dict):
        raise ValueError(f"--secrets {path!r} has no [auth] section; sign-in needs one (see docs/review_team.md).")
    missing = [k for k in ("redirect_uri", "cookie_secret") if not auth.get(k)]
    providers = [v for v in auth.values() if isinstance(v, dict)]
    if not providers:
        missing += [k for k in ("client_id", "client_secret", "server_metadata_url") if not auth.get(k)]
    if missing:
        raise ValueError(f"--secrets {path!r}: [auth] lacks {', '.join(missing)}.")
    return file


def streamlit_command(
    *,
    audit: str | None = None,
    reviews_db: str | None = None,
    audits_dir: str | None = None,
    team: str | None = None,
    secrets: str | None = None,
    dask_scheduler: str | None = None,
    streamlit_options: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The ``streamlit run`` command line that starts the dashboard.

    Parameters
    ----------
    audit, reviews_db, audits_dir, team : str, optional
        Passed to ``app.py`` as absolute paths (the server keeps the caller's working folder);
        the team file is validated first (:func:`core.reviews.load_team`).
    secrets : str, optional
        Streamlit secrets file with the ``[auth]`` sign-in settings, passed as ``secrets.files``
        (needs ``team``).
    dask_scheduler : str, optional
        Address of the Dask scheduler on which the dashboard certifies every row of a large upload.
    streamlit_options : sequence of str
        Streamlit options, placed after the dashboard's own settings so that they win.

    Returns
    -------
    list of str
        ``[python, "-m", "streamlit", "run", app.py, options..., "--", app options...]``.

    Raises
    ------
    ValueError
        ``audit`` is not an audit folder nor a ``certify`` folder whose parts agree
        (:func:`core.scale.results.open_certify_folder`), or was written by a newer version of the tool
        (:class:`core.formats.NewerFormatError`), ``audits_dir`` is not a folder, ``reviews_db``
        is a folder or its parent folder does not exist, the team file or the secrets file
        is unusable, or ``secrets`` is given without ``team``.
    """
    from core.resources import dashboard_app

    app = dashboard_app()
    app_args: list[str] = []
    if audit is not None:
        from core.scale.results import is_certify_folder, open_certify_folder
        from core.tabular.audit_folder import check_audit_folder

        folder = Path(audit).expanduser()
        if is_certify_folder(folder):  # a certify run, finished or not: refused only if its parts disagree
            open_certify_folder(folder)
            app_args += ["--audit", str(folder.resolve())]
        else:
            app_args += ["--audit", str(check_audit_folder(folder).resolve())]
    from core.reviews.backend import is_url

    if reviews_db is not None and is_url(reviews_db):
        app_args += ["--reviews-db", reviews_db.strip()]  # a PostgreSQL server, never a path
    elif reviews_db is not None:
        db = Path(reviews_db).expanduser().resolve()
        if db.is_dir():
            raise ValueError(f"--reviews-db {reviews_db!r} is a folder; expected a database file (created if missing).")
        if not db.parent.is_dir():
            raise ValueError(f"--reviews-db {reviews_db!r}: the folder {str(db.parent)!r} does not exist.")
        app_args += ["--reviews-db", str(db)]
    if audits_dir is not None:
        folder = Path(audits_dir).expanduser().resolve()
        if not folder.is_dir():
            raise ValueError(f"--audits-dir {audits_dir!r} does not exist or is not a folder.")
        app_args += ["--audits-dir", str(folder)]
    if team is not None:
        from core.reviews import load_team

        load_team(team)  # a TeamFileError (a ValueError) names the file, line, key and value
        app_args += ["--team", str(Path(team).expanduser().resolve())]
    if dask_scheduler is not None:
        if not re.fullmatch(r"[a-z]+://\S+", dask_scheduler):
            raise ValueError(f"--dask-scheduler must be an address such as tcp://host:8786; got {dask_scheduler!r}.")
        app_args += ["--dask-scheduler", dask_scheduler]
    options = [*_config_options(app.parent / ".streamlit" / "config.toml")]
    if secrets is not None:
        if team is None:
            raise ValueError("--secrets turns sign-in on, and then roles come from a team file: give --team FILE too.")
        options.append(f"--secrets.files={check_secrets(secrets)}")
    options += list(streamlit_options)
    return [sys.executable, "-m", "streamlit", "run", str(app), *options, "--", *app_args]


def run(args) -> int:
    """Execute ``dashboard``: replace this process by the Streamlit server (POSIX), or wait for it."""
    command = streamlit_command(
        audit=args.audit,
        reviews_db=args.reviews_db,
        audits_dir=args.audits_dir,
        team=args.team,
        secrets=args.secrets,
        dask_scheduler=args.dask_scheduler,
        streamlit_options=args.streamlit_options,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(command[0], command)  # signals (Ctrl-C, a service manager's SIGTERM) reach Streamlit itself
    process = subprocess.Popen(command)
    try:
        return process.wait()
    except KeyboardInterrupt:  # Streamlit received the same Ctrl-C and is shutting down
        return process.wait()
