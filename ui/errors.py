"""Failures shown to the user as ``st.error`` with what to do, never as a traceback.

The lowest ui module (it imports no other): every ui module and page may guard its work with
:func:`guarded`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from core.reviews.team import AccessRefused

__all__ = ["guarded"]

_LOG = logging.getLogger("reliability_audit.ui")


@contextmanager
def guarded(what: str) -> Iterator[None]:
    """Show failures inside the block as ``st.error`` with what to do — never a traceback.

    ``ValueError`` is bad input (its message names the file, column or parameter to fix);
    an action the visitor's role does not allow (:class:`core.reviews.AccessRefused`, logged
    where it was refused) says so; a locked review database asks to retry; anything else is logged with its traceback on
    the server and summarised for the user.
    """
    try:
        yield
    except ValueError as exc:
        st.error(f"**{what}:** {exc}", icon=":material/error:")
    except AccessRefused as exc:
        st.error(f"**{what}:** {exc}", icon=":material/lock:")
    except sqlite3.OperationalError as exc:
        st.error(
            f"**{what}:** the review database is busy or unwritable ({exc}). Retry in a moment, "
            "or restart the server with another `--reviews-db` file.",
            icon=":material/error:",
        )
    except Exception as exc:  # the page must stay usable; details go to the server log
        _LOG.exception("%s failed", what)
        st.error(
            f"**{what} failed unexpectedly** ({type(exc).__name__}: {exc}). The details are in the "
            "server log; try another dataset, model or protocol.",
            icon=":material/error:",
        )
