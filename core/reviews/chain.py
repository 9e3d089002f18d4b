"""The tamper-evident chain of the review log: a hash chain over every entry, and an HMAC.

Every entry of the ``reviews`` table carries three fields beside the decision:

- ``prev_hash``: the ``entry_hash`` of the entry before it (``review_id`` order), or
  :data:`GENESIS` for the first;
- ``entry_hash``: ``SHA-256(prev_hash + "\\n" + canonical(entry))``, where ``canonical`` is the
  compact JSON list of the entry's :data:`~core.reviews.store.REVIEW_COLUMNS` values, in that
  order (``review_id`` included, so renumbering breaks it);
- ``mac``: ``HMAC-SHA256(key, entry_hash)`` with the server's key, or empty in a store without a
  key.

The chain's *head* (number of entries, last ``entry_hash``, and its HMAC) is kept in one row of
``chain_head``, rewritten in the same write transaction as every append. An edit breaks the
entry's hash; a deletion, an insertion or a reordering in the middle breaks the next entry's
``prev_hash``; a deletion at the end disagrees with the head; an entry written without the key
has no valid HMAC. The key itself is never stored: the file holds only
:func:`key_check`, an HMAC of a fixed text, so a wrong key is told from a missing one.

What the chain cannot show (``docs/security.md``): someone who holds the key can write a valid
log; and replacing the whole file, head included, by an earlier copy of itself (a rollback) is
only seen against a backup or a head recorded earlier (:class:`LogVerification` prints it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "GENESIS",
    "KEY_ENV_VAR",
    "LogVerification",
    "entry_hash",
    "entry_mac",
    "head_mac",
    "key_bytes",
    "key_check",
    "walk_chain",
]

#: ``prev_hash`` of the first entry.
GENESIS = "0" * 64
#: Environment variable holding the server's key (never stored in the database).
KEY_ENV_VAR = "AUDIT_REVIEWS_KEY"
_MIN_KEY = 16
_KEY_CHECK_TEXT = b"reliability-audit review log key check v1"


def key_bytes(key: str | bytes | None) -> bytes | None:
    """The key as bytes, checked: at least 16 characters, or None for no key."""
    if key is None:
        return None
    if isinstance(key, str):
        raw = key.strip().encode("utf-8")
    elif isinstance(key, bytes):
        raw = key
    else:
        raise ValueError(f"The review log key must be a string; got {type(key).__name__}.")
    if len(raw) < _MIN_KEY:
        raise ValueError(
            f"The review log key must have at least {_MIN_KEY} characters; got {len(raw)} "
            '(make one with: python -c "import secrets; print(secrets.token_urlsafe(32))").'
        )
    return raw


def key_check(key: bytes) -> str:
    """What the database stores to recognise its key (an HMAC of a fixed text, not the key)."""
    return hmac.new(key, _KEY_CHECK_TEXT, hashlib.sha256).hexdigest()


def entry_hash(prev: str, values: Sequence[object]) -> str:
    """``SHA-256(prev + "\\n" + compact JSON of values)`` as 64 hex digits."""
    text = json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{prev}\n{text}".encode()).hexdigest()


def entry_mac(key: bytes, digest: str) -> str:
    """HMAC-SHA256 of an entry's hash."""
    return hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def head_mac(key: bytes, entries: int, head: str) -> str:
    """HMAC-SHA256 of the chain's head (its number of entries and last hash)."""
    return hmac.new(key, f"head:{entries}:{head}".encode("ascii"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class LogVerification:
    """The outcome of checking a review log's chain.

    Attributes
    ----------
    ok : bool
        True when every entry, the order and the head check out (and, with a key, every HMAC).
    entries : int
        Number of entries read.
    keyed : bool
        Whether the database was created with (or signed under) a key.
    checked_macs : bool
        Whether the HMACs were checked (a key was given and matches).
    head : str
        The last entry's hash (:data:`GENESIS` for an empty log): record it to detect a
        rollback of the whole file later.
    first_bad : int or None
        ``review_id`` of the first entry that fails (None when ``ok`` or when the failure is
        not an entry's, e.g. the head or the triggers).
    problem : str
        What failed, in words (empty when ``ok``).
    """

    ok: bool
    entries: int
    keyed: bool
    checked_macs: bool
    head: str
    first_bad: int | None = None
    problem: str = ""

    @property
    def summary(self) -> str:
        """One line for a report or the dashboard."""
        if self.ok:
            signed = "signed with the key" if self.checked_macs else "hash chain only, no key"
            return f"review log verified: {self.entries} entries ({signed})"
        return f"review log FAILED verification: {self.problem}"


def walk_chain(
    rows: Iterable[tuple[Sequence[object], str, str, str]],
    *,
    key: bytes | None,
    head: tuple[int, str, str] | None,
    keyed: bool,
) -> LogVerification:
    """Check a log's entries in ``review_id`` order.

    Parameters
    ----------
    rows : iterable of (values, prev_hash, entry_hash, mac)
        ``values`` are the entry's columns in the canonical order, ``review_id`` first.
    key : bytes or None
        The key to check the HMACs with (None: the hash chain only).
    head : (entries, head_hash, head_mac) or None
        The stored head (None when the database has none).
    keyed : bool
        Whether the database says it is signed.

    Returns
    -------
    LogVerification
    """
    prev, n = GENESIS, 0
    macs = key is not None

    def bad(rid: int | None, problem: str) -> LogVerification:
        return LogVerification(False, n, keyed, macs, prev, rid, problem)

    for values, stored_prev, stored_hash, mac in rows:
        rid = int(values[0])
        if stored_prev != prev:
            what = "the first entry" if n == 0 else f"the entry before it (entry {n} of the chain)"
            return bad(rid, f"entry {rid} does not follow {what}: an entry was deleted, inserted or reordered")
        digest = entry_hash(prev, values)
        if not hmac.compare_digest(digest, stored_hash or ""):
            return bad(rid, f"entry {rid} was edited after it was written (its hash does not match its fields)")
        if macs and not hmac.compare_digest(entry_mac(key, digest), mac or ""):
            return bad(rid, f"entry {rid} was not written with the server's key (its HMAC is missing or wrong)")
        prev, n = digest, n + 1
    if head is None:
        if n:
            return bad(None, "the chain's head is missing: the log was edited outside this tool")
        return LogVerification(True, 0, keyed, macs, prev)
    entries, head_hash, stored_mac = head
    if entries != n or head_hash != prev:
        return bad(
            None, f"the head names {entries} entries but {n} are stored: entries were deleted from the end or added"
        )
    if macs and not hmac.compare_digest(head_mac(key, entries, head_hash), stored_mac or ""):
        return bad(None, "the chain's head was not written with the server's key")
    return LogVerification(True, n, keyed, macs, prev)
