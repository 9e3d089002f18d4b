"""Uploads: tables and block files read from bytes, the staged record loaders, an upload's state.

The browser hands the dashboard file names and bytes. This module reads a table's header
(:func:`table_columns`) and a domain-block file (:func:`parse_blocks`), validates paired,
unpaired and screening uploads with the core loaders under the uploaded names
(:func:`load_paired_upload`, :func:`load_unpaired_upload`, :func:`load_screening_upload`),
holds what a session keeps of an upload (:class:`TableUpload`, :class:`FilesUpload`), and sizes
the interactive sample of a large table (:func:`interactive_sample_rows`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from core.validation import (
    UPLOAD_LIMIT_MB,
    check_positive_int,
    check_table_content,
    check_upload_size,
    csv_delimiter,
    table_format,
)

if TYPE_CHECKING:
    import pandas as pd

    from core.paired.records import UnpairedRecords
    from core.reviews.permissions import Actor

__all__ = [
    "CELL_BUDGET",
    "PROBE_FOLDER_FILES",
    "LARGE_TABLE_ROWS",
    "MIN_SAMPLE_ROWS",
    "UPLOAD_LIMIT_MB",
    "BlockFile",
    "FilesUpload",
    "TableUpload",
    "check_upload_size",
    "interactive_sample_rows",
    "load_paired_upload",
    "load_screening_upload",
    "load_unpaired_upload",
    "parse_blocks",
    "screening_files",
    "table_columns",
    "upload_digest",
]

# Uploads are limited to UPLOAD_LIMIT_MB (also ``server.maxUploadSize`` in .streamlit/config.toml):
# a browser session holds the bytes, and larger tables belong to the CLI.
# Above this many rows the interactive audit runs on a stratified sample (USERS.md: tools
# become unusable past ~20k rows); the CLI audits the full table.
LARGE_TABLE_ROWS = 20_000
# A certificate costs 1 + G + |Λ|(G + 1) + K model rows per sample, so an audit's work grows with
# rows × evidence groups: a 500-column upload took 156–200 s at the row cap alone (issue 12).
# The interactive sample also keeps rows × groups within this budget (200 rows at 500 groups,
# whose audit with hist_gb took ~20 s on a quiet 2-core machine; the whole row cap up to 5
# groups), and never goes below MIN_SAMPLE_ROWS rows.
CELL_BUDGET = 100_000
MIN_SAMPLE_ROWS = 200

T = TypeVar("T")


def interactive_sample_rows(n_rows: int, n_groups: int) -> int:
    """Rows of the stratified sample the dashboard audits interactively (at most).

    Parameters
    ----------
    n_rows : int
        Rows of the table (at least 1).
    n_groups : int
        Evidence groups (raw feature columns) of the table (at least 1).

    Returns
    -------
    int
        ``min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // n_groups))``.

    Examples
    --------
    >>> interactive_sample_rows(5_000, 5), interactive_sample_rows(50_000, 5), interactive_sample_rows(20_000, 500)
    (5000, 20000, 200)
    """
    n_rows, n_groups = check_positive_int(n_rows, "n_rows"), check_positive_int(n_groups, "n_groups")
    return int(min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // n_groups)))


# ---------------------------------------------------------------------------------------------
# What a session keeps of an upload


@dataclass(frozen=True, kw_only=True)
class BlockFile:
    """An uploaded domain-block file, parsed.

    Attributes
    ----------
    name : str
        The name it was uploaded with (the CLI line passes it as ``--blocks``).
    digest : str
        SHA-256 of its bytes (keys the cached dataset).
    mapping : dict
        ``{raw column: block}`` or ``{block: [raw columns]}``, as in the file; checked against
        the table by :func:`core.tabular.datasets.load_user_data`.
    """

    name: str
    digest: str
    mapping: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class TableUpload:
    """A table uploaded on the Overview page (``st.session_state["uploads"][name]``).

    Attributes
    ----------
    data : bytes
        The file's content.
    file : str
        The name it was uploaded with.
    digest : str
        SHA-256 of ``data``.
    target : str
        The target column chosen for it.
    blocks : BlockFile or None
        The domain-block file uploaded with it.
    """

    data: bytes = field(repr=False)
    file: str
    digest: str
    target: str
    blocks: BlockFile | None = None

    @classmethod
    def of(cls, data: bytes, file: str, *, target: str, blocks: BlockFile | None = None) -> TableUpload:
        """The upload of ``data`` named ``file`` (its digest computed here)."""
        return cls(data=data, file=file, digest=hashlib.sha256(data).hexdigest(), target=target, blocks=blocks)

    @property
    def key(self) -> str:
        """``digest:target:blocks digest``: what the validated dataset depends on."""
        return f"{self.digest}:{self.target}:{self.blocks.digest if self.blocks else None}"


@dataclass(frozen=True, kw_only=True)
class FilesUpload:
    """Uploaded record files of the Paired bounds or the Recapture page.

    ``st.session_state["paired_upload"]`` (``kind`` ``"paired"``: role ``records``;
    ``"unpaired"``: roles ``clean``, ``perturbed`` and optionally ``counts``) and
    ``st.session_state["recapture_upload"]`` (``kind`` ``"screening"``: roles ``probes`` and
    ``clean``, and ``probes.2``, ``probes.3``, … for further per-probe files) hold one, or None.

    Attributes
    ----------
    kind : {"paired", "unpaired", "screening"}
    files : mapping of role -> (file name, bytes)
    """

    kind: Literal["paired", "unpaired", "screening"]
    files: Mapping[str, tuple[str, bytes]] = field(repr=False)

    def __post_init__(self) -> None:
        roles = {
            "paired": ({"records"}, set()),
            "unpaired": ({"clean", "perturbed"}, {"counts"}),
            "screening": ({"probes", "clean"}, set()),
        }
        if self.kind not in roles:
            raise ValueError(f"`kind` must be one of {sorted(roles)}; got {self.kind!r}.")
        required, optional = roles[self.kind]
        given = set(self.files)
        if self.kind == "screening":  # several per-probe files (probes.parquet and natural.parquet)
            optional = {r for r in given if re.fullmatch(r"probes\.[2-9]\d*", r)}
        if not required <= given <= required | optional:
            raise ValueError(
                f"A {self.kind!r} upload needs the files {sorted(required)} (optional: "
                f"{sorted(optional)}); got {sorted(given)}."
            )

    @property
    def names(self) -> str:
        """The uploaded file names, comma-separated, in role order."""
        return ", ".join(name for name, _ in self.files.values())


def upload_digest(files: Mapping[str, tuple[str, bytes] | None]) -> str:
    """Content hash of an upload (roles, names and bytes); keys the caches of what it parses to.

    Examples
    --------
    >>> upload_digest({"a": ("x.csv", b"1")}) == upload_digest({"a": ("x.csv", b"1"), "b": None})
    True
    >>> upload_digest({"a": ("x.csv", b"1")}) == upload_digest({"a": ("y.csv", b"1")})
    False
    """
    h = hashlib.sha256()
    for role in sorted(files):
        if files[role] is not None:
            name, data = files[role]
            h.update(f"{role}\0{name}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Tables and block files read from bytes


def table_columns(data: bytes, file_name: str, *, actor: Actor | None = None) -> list[str]:
    """Column names of an uploaded CSV / TSV / Parquet table, read from its header only.

    Used to offer the target column before the full validation of
    :func:`core.tabular.datasets.load_user_data`; the format, content and header checks are
    those of :func:`core.validation.read_table` (an image renamed ``.csv`` is refused here,
    before any column is offered), the CSV delimiter is :func:`core.validation.csv_delimiter`'s.
    With ``actor`` (the signed-in user and the server's team, team mode) the upload is refused
    first unless they may upload (:class:`core.reviews.AccessRefused`, logged).

    Examples
    --------
    >>> table_columns(b"a;b;c\\n1;2;3\\n", "x.csv")
    ['a', 'b', 'c']
    """
    _check_upload(actor, file_name)
    fmt = table_format(file_name)
    raw = check_table_content(data, file_name, fmt)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.ParquetFile(io.BytesIO(raw)).schema_arrow.names]
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            raise ValueError(f"{file_name!r} could not be read as Parquet: {exc}") from None
    head = raw[:65536].decode("utf-8-sig", errors="replace").splitlines()
    if not head or not head[0].strip():
        raise ValueError(f"{file_name!r} has no header line.")
    delimiter = csv_delimiter(head[0], file_name)
    return [c.strip() for c in next(csv.reader([head[0]], delimiter=delimiter))]


def parse_blocks(data: bytes, file_name: str, *, actor: Actor | None = None) -> BlockFile:
    """Parse an uploaded domain-block file (YAML, or JSON for ``.json``).

    With ``actor`` the upload is refused first unless they may upload (as :func:`table_columns`).

    Returns
    -------
    BlockFile
        Its ``mapping`` (``{raw column: block}`` or ``{block: [raw columns]}``) is checked
        against the table by :func:`core.tabular.datasets.load_user_data`.

    Examples
    --------
    >>> parse_blocks(b'{"money": ["Income", "Debt"]}', "b.json").mapping
    {'money': ['Income', 'Debt']}
    """
    _check_upload(actor, file_name)
    text = data.decode("utf-8", errors="replace")
    try:
        if Path(file_name).suffix.lower() == ".json":
            content = json.loads(text)
        else:
            import yaml

            content = yaml.safe_load(text)
    except Exception as exc:  # json.JSONDecodeError / yaml.YAMLError
        raise ValueError(f"Block file {file_name!r} could not be parsed: {exc}") from None
    if not isinstance(content, dict) or not content:
        raise ValueError(
            f"Block file {file_name!r} must hold a non-empty mapping {{column: block}} or "
            f"{{block: [columns]}}; got {type(content).__name__}."
        )
    return BlockFile(name=file_name, digest=hashlib.sha256(data).hexdigest(), mapping=content)


# ---------------------------------------------------------------------------------------------
# Uploads of paired / unpaired records and of screening outputs


def _check_upload(actor: Actor | None, *file_names: str) -> None:
    """Refuse the upload unless ``actor`` may upload (:func:`core.reviews.permissions.check`;
    None: local mode). Raises :class:`core.reviews.AccessRefused`, logged."""
    if actor is not None:
        from core.reviews.permissions import check

        check(actor, "upload", what=", ".join(_safe_name(str(name), "a file") for name in file_names))


def _safe_name(file_name: str, fallback: str) -> str:
    # The name comes from the browser: keep only its last component.
    name = Path(str(file_name).replace("\\", "/")).name
    return name if name not in ("", ".", "..") else fallback


def _staged(
    files: Mapping[str, tuple[str, bytes] | None],
    labels: Mapping[str, str],
    load: Callable[[dict[str, Path | None]], T],
) -> T:
    """Write uploads to a private folder, call ``load(paths)``, and name the files as uploaded.

    The core loaders read paths and name the file, row, CSV line and column in their messages;
    the temporary folder is replaced by the uploaded name (and its role) in any ``ValueError``.
    """
    for role, item in files.items():
        if item is not None:
            check_upload_size(item[1], _safe_name(item[0], role))
    with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
        paths: dict[str, Path | None] = {}
        shown: dict[str, str] = {}
        for role, item in files.items():
            if item is None:
                paths[role] = None
                continue
            name = _safe_name(item[0], f"{role}.csv")
            folder = Path(tmp) / role
            folder.mkdir()
            paths[role] = folder / name
            paths[role].write_bytes(item[1])
            shown[str(paths[role])] = labels[role].format(name=name)
        try:
            return load(paths)
        except ValueError as exc:
            message = str(exc)
            for path, label in shown.items():
                message = message.replace(path, label)
            raise ValueError(message) from None


def load_paired_upload(file_name: str, data: bytes, *, actor: Actor | None = None) -> pd.DataFrame:
    """Validate uploaded paired records (CSV or Parquet bytes) with :func:`core.paired.records.load_records`.

    Parameters
    ----------
    file_name : str
        The name the file was uploaded with (its suffix picks the reader; messages use it).
    data : bytes
        The file's content, at most :data:`UPLOAD_LIMIT_MB` MB.
    actor : core.reviews.permissions.Actor, optional
        Who uploads (team mode): refused unless they may upload. None: local mode.

    Returns
    -------
    DataFrame
        The validated, normalised records (schema in ``docs/DEVELOPING.md``).

    Raises
    ------
    ValueError
        Too large, unreadable, or failing validation; the message names the file, the row (and
        CSV line) and the column.
    core.reviews.AccessRefused
        ``actor`` may not upload (logged; nothing is read).
    """
    from core.paired.records import load_records

    _check_upload(actor, file_name)
    return _staged({"records": (file_name, data)}, {"records": "{name}"}, lambda p: load_records(p["records"]))


def load_unpaired_upload(
    clean: tuple[str, bytes],
    perturbed: tuple[str, bytes],
    counts: tuple[str, bytes] | None = None,
    *,
    actor: Actor | None = None,
) -> UnpairedRecords:
    """Validate an uploaded unpaired cell with :func:`core.paired.records.load_unpaired`.

    Parameters
    ----------
    clean, perturbed : (file name, bytes)
        Tables ``record_id, true_label, pred, max_prob, true_prob`` of the two sides.
    counts : (file name, bytes), optional
        Per-class counts ``true_label, k`` (level Ik) or ``true_label, h, r, s, w, k`` (I5).
    actor : core.reviews.permissions.Actor, optional
        As :func:`load_paired_upload`.

    Returns
    -------
    UnpairedRecords
        ``level`` is the highest information level the counts allow.

    Raises
    ------
    ValueError
        As :func:`load_paired_upload`; messages say which of the tables is meant.
    """
    from core.paired.records import load_unpaired

    _check_upload(actor, *(item[0] for item in (clean, perturbed, counts) if item is not None))
    files = {"clean": clean, "perturbed": perturbed, "counts": counts}
    labels = {role: "{name} (" + role + " table)" for role in files}
    return _staged(files, labels, lambda p: load_unpaired(p["clean"], p["perturbed"], p["counts"]))


def load_screening_upload(
    probes: tuple[str, bytes] | Sequence[tuple[str, bytes]],
    clean: tuple[str, bytes],
    *,
    outcomes: pd.DataFrame | None = None,
    actor: Actor | None = None,
) -> pd.DataFrame:
    """Validate uploaded per-probe and clean outputs and score them with
    :func:`core.paired.screening.screening_scores` (as ``python -m core paired --probes``).

    Parameters
    ----------
    probes : (file name, bytes), or a sequence of them
        Per-probe outputs, CSV or Parquet, long format ``model, record_id, probe, kind,
        true_label, pred, max_prob, true_prob`` (optional ``prob_0 .. prob_{C-1}``; ``kind`` in
        ``{"corruption", "transform"}``); several files are concatenated, as
        ``python -m core paired --probes probes.parquet natural.parquet`` does (the
        ``transform`` rows of ``natural.parquet`` give TTA).
    clean : (file name, bytes)
        Clean outputs, one row per (model, image): ``model, record_id, true_label, pred,
        max_prob, true_prob``, optional ``split`` (``dev`` / ``eval``), ``group``, ``prob_*``.
    outcomes : DataFrame, optional
        Validated paired records of one source (the real conditions); their development rows
        fit ``g(S, U)``. Without them ``g_SU`` is NaN.
    actor : core.reviews.permissions.Actor, optional
        As :func:`load_paired_upload`.

    Returns
    -------
    DataFrame
        One row per (model, clean-correct evaluation image) with every score and its
        ``risk_<score>`` column (larger = riskier); see ``screening_scores``.

    Raises
    ------
    ValueError
        Too large, unreadable, or failing validation; the message names the file (and which of
        the two tables it is), the row (and CSV line) and the column.
    """
    import pandas as pd

    from core.paired.screening import screening_scores
    from core.validation import read_table

    many = [probes] if isinstance(probes, tuple) and len(probes) == 2 and isinstance(probes[1], bytes) else probes
    many = list(many)
    if not many:
        raise ValueError("no per-probe outputs uploaded; expected at least one file.")
    _check_upload(actor, *(f[0] for f in many), clean[0])
    labels = {"probes": "{name} (per-probe outputs)", "clean": "{name} (clean outputs)"}
    files = {"clean": clean}
    for i, item in enumerate(many):
        role = "probes" if i == 0 else f"probes.{i + 1}"
        files[role] = item
        labels[role] = labels["probes"]

    def load(paths: dict[str, Path | None]) -> pd.DataFrame:
        from core.formats import PROBE_OUTPUTS, check_table_file

        frames, origins = {}, {}
        for role, path in paths.items():
            table = read_table(path)
            check_table_file(path, PROBE_OUTPUTS, where=str(path))  # `probe`'s files name their version
            frames[role], origins[role] = table.frame, table.origin
        probe_roles = [r for r in frames if r != "clean"]
        if len(probe_roles) > 1:
            # Row numbers in messages are those of the concatenation: name them per file below.
            for role in probe_roles:
                frames[role] = frames[role].assign(_file=role)
        stacked = pd.concat([frames[r] for r in probe_roles], ignore_index=True)
        try:
            return screening_scores(stacked.drop(columns="_file", errors="ignore"), frames["clean"], outcomes=outcomes)
        except ValueError as exc:
            # screening_scores names tables as `probes` / `clean` and rows 1-based in file order.
            message = str(exc)
            offsets = dict(zip(probe_roles, accumulate([0] + [len(frames[r]) for r in probe_roles])))

            def probes_row(m: re.Match) -> str:
                row = int(m.group(1)) - 1
                role = [r for r in probe_roles if offsets[r] <= row][-1]
                origin = origins[role]
                label = labels[role].format(name=Path(origin.name).name)
                return origin.row(row - int(offsets[role])).replace(origin.name, label)

            message = re.sub(r"`probes` row (\d+)", probes_row, message)
            origin = origins["clean"]
            clean_label = labels["clean"].format(name=Path(origin.name).name)
            message = re.sub(
                r"`clean` row (\d+)",
                lambda m: origin.row(int(m.group(1)) - 1).replace(origin.name, clean_label),
                message,
            )
            names = ", ".join(labels[r].format(name=Path(origins[r].name).name) for r in probe_roles)
            message = message.replace("`probes`", names).replace("`clean`", clean_label)
            raise ValueError(message) from None

    return _staged(files, labels, load)


#: The files of ``python -m core probe``'s output folder a zip of it is read for.
PROBE_FOLDER_FILES = ("probes.parquet", "natural.parquet", "clean.parquet")


def screening_files(
    probe_files: Sequence[tuple[str, bytes]], clean: tuple[str, bytes] | None = None
) -> dict[str, tuple[str, bytes]] | None:
    """The roles of a screening upload (:class:`FilesUpload` ``kind="screening"``) from what was uploaded.

    Parameters
    ----------
    probe_files : sequence of (file name, bytes)
        Per-probe output files (CSV / Parquet: e.g. ``probes.parquet`` and ``natural.parquet``,
        both, so that TTA is kept), or one ``.zip`` of ``probe``'s output folder, whose
        ``probes.parquet``, ``natural.parquet`` and ``clean.parquet`` are read (the folder may
        be the archive's root or its one top folder).
    clean : (file name, bytes), optional
        The clean outputs; optional when the zip holds ``clean.parquet``.

    Returns
    -------
    dict or None
        Roles ``probes``, ``probes.2``, … and ``clean``; None until both sides are there.

    Raises
    ------
    ValueError
        A zip that is unreadable, holds none of the files, or is too large; a zip beside other files.

    Examples
    --------
    >>> sorted(screening_files([("probes.parquet", b"p"), ("natural.parquet", b"n")], ("clean.csv", b"c")))
    ['clean', 'probes', 'probes.2']
    """
    probe_files = list(probe_files)
    zips = [f for f in probe_files if str(f[0]).lower().endswith(".zip")]
    if zips and len(probe_files) > 1:
        raise ValueError(
            f"{_safe_name(zips[0][0], 'the zip')}: upload either one zip of the probe's output folder or its "
            "table files, not both."
        )
    if zips:
        members = _probe_folder_members(*zips[0])
        probe_files = [members[n] for n in PROBE_FOLDER_FILES[:2] if n in members]
        if clean is None and "clean.parquet" in members:
            clean = members["clean.parquet"]
        if not probe_files:
            raise ValueError(
                f"{_safe_name(zips[0][0], 'the zip')}: holds no probes.parquet; expected a zip of the output "
                "folder of the probe command."
            )
    if not probe_files or clean is None:
        return None
    roles = {"probes" if i == 0 else f"probes.{i + 1}": item for i, item in enumerate(probe_files)}
    return {**roles, "clean": clean}


def _probe_folder_members(name: str, data: bytes) -> dict[str, tuple[str, bytes]]:
    """``PROBE_FOLDER_FILES`` found in a zip of the output folder, as (``zip/file``, bytes)."""
    import zipfile

    shown = _safe_name(name, "the zip")
    check_upload_size(data, shown)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in archive.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{shown}: is not a readable zip archive ({exc}).") from None
    found: dict[str, tuple[str, bytes]] = {}
    for info in infos:
        parts = Path(info.filename.replace("\\", "/")).parts
        base = parts[-1] if parts else ""
        if base not in PROBE_FOLDER_FILES or len(parts) > 2 or base in found:
            continue
        if info.flag_bits & 0x1:
            raise ValueError(f"{shown}: member {info.filename!r} is encrypted; give an unencrypted archive.")
        if info.file_size > UPLOAD_LIMIT_MB * 1024**2:
            raise ValueError(
                f"{shown}: member {info.filename!r} unpacks to {info.file_size / 1024**2:,.0f} MB; each file is "
                f"limited to {UPLOAD_LIMIT_MB} MB."
            )
        found[base] = (f"{shown}/{base}", archive.read(info))
    return found
