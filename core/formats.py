"""The versions of the files and folders the tool writes and reads back, in one place.

Every format carries a tag ``family/N``: ``audit-view/1`` in a saved audit's ``view/meta.json``,
``certify-task/2`` in a task zip's ``task.json``, and so on (:data:`FORMATS` lists them all). A
reader checks the tag with :meth:`Format.check` before it reads anything else:

- the same family at a version this build reads: the version is returned;
- the same family at a **newer** version: :class:`NewerFormatError`, whose message says
  ``"runs/a1: made by a newer reliability-audit (format 2; this one reads up to 1): upgrade."``
  (a newer writer may have changed what a field means, so nothing is guessed);
- an older version than the oldest still read, another family, or no tag at all (unless the
  caller reads untagged files of before tags existed as a given version): :class:`FormatError`,
  saying what was expected.

Both are ``ValueError``: the commands print them as one ``error:`` line with exit code 2, the
dashboard shows them as the message of the file it was given. A format changes its version
when an older reader would misread the new files; adding an optional field that older readers
ignore does not.

Examples
--------
>>> parse_tag("audit-view/3")
('audit-view', 3)
>>> AUDIT_VIEW.check("audit-view/1", where="a1")
1
>>> AUDIT_VIEW.check("audit-view/99", where="a1")
Traceback (most recent call last):
...
core.formats.NewerFormatError: a1: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "AUDIT_GLANCE",
    "AUDIT_VIEW",
    "CERTIFICATE_SET",
    "CERTIFY_TASK",
    "DEMO_POOL",
    "FORMATS",
    "PAIRED_OUTPUT",
    "PARQUET_FORMAT_KEY",
    "PROBE_OUTPUTS",
    "PROTOCOL",
    "RUN_FOLDER",
    "SHIPPED_AUDIT",
    "Format",
    "FormatError",
    "NewerFormatError",
    "check_table_file",
    "parquet_format_tag",
    "parse_tag",
    "read_json_object",
]

_TAG = re.compile(r"^(?P<family>[a-z][a-z0-9.\-]*)/(?P<version>[1-9][0-9]{0,8})$")
#: Key of a Parquet file's schema metadata that holds its format tag (``probe-outputs/1``).
PARQUET_FORMAT_KEY = b"reliability_audit_format"


class FormatError(ValueError):
    """A file or folder is not of the format expected (another family, too old, no tag)."""


class NewerFormatError(FormatError):
    """A file or folder was written by a newer version of the tool than this one.

    Attributes
    ----------
    where : str
        The file or folder, as the user named it.
    found : int
        Its format version.
    reads : int
        The newest version of that format this build reads.
    """

    def __init__(self, where: str, found: int, reads: int) -> None:
        self.where, self.found, self.reads = str(where), int(found), int(reads)
        super().__init__(
            f"{self.where}: made by a newer reliability-audit (format {self.found}; this one reads up to "
            f"{self.reads}): upgrade."
        )


def parse_tag(tag: Any) -> tuple[str, int] | None:
    """``(family, version)`` of a tag ``family/N`` (``N`` a positive integer), else None.

    Examples
    --------
    >>> parse_tag("core.scale/1"), parse_tag("audit-view/0"), parse_tag(3)
    (('core.scale', 1), None, None)
    """
    if not isinstance(tag, str):
        return None
    match = _TAG.match(tag)
    return None if match is None else (match["family"], int(match["version"]))


@dataclass(frozen=True)
class Format:
    """One format the tool writes and reads back.

    Attributes
    ----------
    family : str
        The tag's name part (``"audit-view"``).
    version : int
        The version this build writes, and the newest it reads.
    what : str
        What people call a file of the format (``"saved audit folder"``).
    oldest : int, default=1
        The oldest version still read; older ones are refused with :attr:`remedy`.
    remedy : str
        What to do with a file older than :attr:`oldest`.
    """

    family: str
    version: int
    what: str
    oldest: int = 1
    remedy: str = "re-create it with this version"

    def __post_init__(self) -> None:
        if parse_tag(f"{self.family}/{self.version}") is None or not 1 <= self.oldest <= self.version:
            raise ValueError(f"not a valid format: {self.family!r} version {self.version}, oldest {self.oldest}.")

    @property
    def tag(self) -> str:
        """``family/version``: the tag this build writes."""
        return f"{self.family}/{self.version}"

    def check(self, tag: Any, *, where: str, missing: int | None = None, mismatch: str | None = None) -> int:
        """The version of a file whose tag is ``tag``, if this build reads it.

        Parameters
        ----------
        tag : str or None
            The tag as read (None when the file has none).
        where : str
            The file or folder as the user named it; every message starts with it.
        missing : int, optional
            The version of an untagged file (``tag`` None), for files written before the tag
            existed; without it an untagged file is refused.
        mismatch : str, optional
            The whole message for a file of another family, of an older version or untagged
            (default: ``"<where>: not a <what>: expected format '<tag>'; got <tag read>."``).

        Returns
        -------
        int
            Between :attr:`oldest` and :attr:`version`.

        Raises
        ------
        NewerFormatError
            The file is of a newer version.
        FormatError
            Another family, an older version than :attr:`oldest`, or no tag.
        """
        if tag is None and missing is not None:
            return int(missing)
        parsed = parse_tag(tag)
        if parsed is not None and parsed[0] == self.family:
            found = parsed[1]
            if found > self.version:
                raise NewerFormatError(where, found, self.version)
            if found >= self.oldest:
                return found
            raise FormatError(
                mismatch
                or f"{where}: a {self.what} of format {found}, older than this reliability-audit reads "
                f"({self.oldest} to {self.version}); {self.remedy}."
            )
        raise FormatError(mismatch or f"{where}: not a {self.what}: expected format {self.tag!r}; got {tag!r}.")


#: A saved audit folder: ``view/meta.json`` (:mod:`core.tabular.audit_view`), checked when the
#: folder is opened (:func:`core.tabular.audit_folder.check_audit_folder`).
AUDIT_VIEW = Format("audit-view", 1, "saved audit folder")
#: A saved audit's first screen, ``view/glance.json`` (:mod:`core.tabular.glance`).
AUDIT_GLANCE = Format("audit-glance", 1, "saved audit's glance file")
#: ``source.json`` of a shipped audit (:mod:`core.tabular.shipped`).
SHIPPED_AUDIT = Format("shipped-audit", 1, "shipped audit source")
#: ``task.json`` inside a ``_task.zip`` (:mod:`core.tabular.certify_task`); version 1 was a pickle.
CERTIFY_TASK = Format(
    "certify-task", 2, "saved model task", oldest=2, remedy="re-create the audit or certify run with this version"
)
#: A protocol's JSON (:class:`core.cfc.protocol.Protocol`), alone or inside the files above.
PROTOCOL = Format("cfc-protocol", 1, "certificate protocol")
#: A certificate bundle (:mod:`core.cfc.bundle`), e.g. ``view/certificates.json.gz``.
CERTIFICATE_SET = Format("cfc-certificate-set", 1, "certificate bundle")
#: ``_manifest.json`` of a partitioned run's output folder (``certify``, ``paired-grid``;
#: :mod:`core.scale.store`), checked when a run resumes.
RUN_FOLDER = Format("core.scale", 1, "partitioned run folder")
#: The output folder of ``probe`` (``manifest.json`` and the schema metadata of its Parquet
#: files, :mod:`core.imaging.probe`); read back by ``paired`` and the dashboard's uploads.
PROBE_OUTPUTS = Format("probe-outputs", 1, "probe output file")
#: The output folder of ``paired`` (``manifest.json``, :mod:`core.cli.paired`); written only.
PAIRED_OUTPUT = Format("paired-output", 1, "paired output folder")
#: The demo pool (``manifest.json``, :mod:`core.imaging.demo`); the shipped one is untagged (1).
DEMO_POOL = Format("demo-pool", 1, "demo pool")

#: Every format, by family.
FORMATS: dict[str, Format] = {
    f.family: f
    for f in (
        AUDIT_VIEW,
        AUDIT_GLANCE,
        SHIPPED_AUDIT,
        CERTIFY_TASK,
        PROTOCOL,
        CERTIFICATE_SET,
        RUN_FOLDER,
        PROBE_OUTPUTS,
        PAIRED_OUTPUT,
        DEMO_POOL,
    )
}


def parquet_format_tag(source: Any) -> str | None:
    """The format tag in a Parquet file's schema metadata (:data:`PARQUET_FORMAT_KEY`), or None.

    Only the footer is read. ``source`` is a path or the file's bytes; a file that is not
    Parquet (a CSV) or cannot be read has no tag here, and its reader says what is wrong with it.
    """
    import io

    try:
        if isinstance(source, (bytes, bytearray)):
            head, handle = bytes(source[:4]), io.BytesIO(source)
        else:
            with open(source, "rb") as fh:
                head = fh.read(4)
            handle = source
        if head != b"PAR1":
            return None
        import pyarrow.parquet as pq

        metadata = pq.read_schema(handle).metadata
    except Exception:  # OSError, or one of pyarrow's several types for a damaged file
        return None
    value = (metadata or {}).get(PARQUET_FORMAT_KEY)
    return None if value is None else value.decode("utf-8", errors="replace")


def check_table_file(source: Any, fmt: Format, *, where: str) -> int:
    """The format version of a table file that the tool may have written as ``fmt``.

    A Parquet file carries its tag in its schema metadata (:func:`parquet_format_tag`); a CSV,
    or a table made by other programs, has none and is version 1.

    Parameters
    ----------
    source : path or bytes
    fmt : Format
    where : str
        The file as the user named it.

    Raises
    ------
    NewerFormatError
        Written by a newer version of the tool.
    FormatError
        Tagged with another format.
    """
    return fmt.check(parquet_format_tag(source), where=where, missing=1)


def read_json_object(path: Path) -> dict:
    """The JSON object in the file ``path`` (one of the tool's JSON files).

    Raises
    ------
    ValueError
        Naming the file: not valid JSON, not UTF-8, or not an object.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}).") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object; got {type(data).__name__}.")
    return data
