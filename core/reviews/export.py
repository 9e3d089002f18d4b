"""The review log as a table and as a CSV file, for an admin (with a team) or the one local user.

A mixin of :class:`core.reviews.store.ReviewStore`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from core.atomic import atomic_path
from core.csv_safe import write_csv
from core.reviews.records import _COLUMNS, ENTRY_LABELS, _text_iv, reason_labels
from core.reviews.team import User


class _Export:
    """The export of :class:`~core.reviews.store.ReviewStore`."""

    def export(
        self,
        dest: str | os.PathLike[str] | None = None,
        *,
        audit_fingerprint: str | None = None,
        viewer: User | None = None,
    ) -> pd.DataFrame:
        """Full history (all audits, or one), optionally written to a CSV file.

        Parameters
        ----------
        dest : str or os.PathLike, optional
            CSV file to write (UTF-8, header row, no index), replaced atomically: on failure
            the previous export stays byte-identical. A folder or a device is refused.
        audit_fingerprint : str, optional
            Restrict to one audit.
        viewer : User, optional
            Who exports; with a team it must be an admin (else :class:`AccessRefused`, recorded).

        Returns
        -------
        DataFrame
            Columns :data:`REVIEW_COLUMNS` plus ``decision_label`` and ``reason_labels``
            (``"; "``-joined), ordered by ``review_id``. Retractions are rows with
            ``decision == "retracted"`` and ``retracts`` = the cancelled ``review_id``.
        """
        if self.team is not None:
            if not isinstance(viewer, User):
                raise ValueError(f"With a team, an export names who exports (`viewer`); got {viewer!r}.")
            if not self.team.allows(viewer.email, "admin"):
                role = self.team.role_of(viewer.email) or "none"
                raise self._refuse(
                    viewer, "export", audit_fingerprint or "", [], f"is a {role}; to export needs the admin role"
                )
        frame = self._query(
            f"SELECT {_COLUMNS} FROM reviews"
            + (" WHERE audit_fingerprint = ?" if audit_fingerprint is not None else "")
            + " ORDER BY review_id",
            ()
            if audit_fingerprint is None
            else (_text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False),),
        )
        frame = frame.assign(
            decision_label=frame["decision"].map(ENTRY_LABELS), reason_labels=frame["reasons"].map(reason_labels)
        )
        if dest is not None:
            if self._db.same_file(Path(dest)):
                raise ValueError(f"Export file {str(dest)!r} is the review database itself; choose another file.")
            with atomic_path(dest) as tmp:
                write_csv(frame, tmp, index=False)  # a note such as "=HYPERLINK(...)" is not a formula
        return frame
