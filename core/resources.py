"""Where the files shipped with the package live: the dashboard and its assets.

In a checkout they sit beside ``core/`` (``app.py``, ``pages/``, ``ui/``, ``assets/``,
``.streamlit/config.toml``). An installed wheel carries the same files as package data under
``core/_dashboard/`` (``pyproject.toml`` maps them there), so the dashboard and the shipped
audits work from any folder. Every module that reads a shipped file asks this one.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ASSETS_DIR", "DASHBOARD_DIR", "dashboard_app"]

_PACKAGE = Path(__file__).resolve().parent


def _dashboard_dir() -> Path:
    installed = _PACKAGE / "_dashboard"
    return installed if (installed / "app.py").is_file() else _PACKAGE.parent


#: The folder holding ``app.py``, ``pages/``, ``ui/``, ``assets/`` and ``.streamlit/``.
DASHBOARD_DIR = _dashboard_dir()
#: Shipped data: the default audits, the paired demo pool, its precomputed grids, the favicon.
ASSETS_DIR = DASHBOARD_DIR / "assets"


def dashboard_app() -> Path:
    """The dashboard's entry script, ``app.py``.

    Raises
    ------
    FileNotFoundError
        When this installation has no dashboard (``core`` copied without its package data).
    """
    app = DASHBOARD_DIR / "app.py"
    if not app.is_file():
        raise FileNotFoundError(
            f"this installation of reliability-audit has no dashboard (no app.py in {DASHBOARD_DIR}); "
            "reinstall the package with `pip install reliability-audit` or run from a checkout."
        )
    return app
