"""Certify every row of an uploaded table in a background process, resumably.

The dashboard audits a large upload on a sample; this module certifies all of it with the
``certify`` command in a child process (locally, or on a Dask scheduler), so the server stays
responsive and the run outlives a page reload or a server restart:

- :func:`plan_upload_certify` writes the upload, its protocol and its domain blocks once under
  ``ROOT/.certify-inputs/NAME/`` and names the output folder ``ROOT/NAME`` — ``NAME`` is the
  table's stem and a digest of the table and every setting, so the same request always maps to
  the same folder (and is resumed there), another request to another;
- :func:`start` runs ``python -m core certify ... --out ROOT/NAME`` detached, its output in
  ``certify.log`` beside the input;
- :func:`progress` reads how far the run is from the folder's journal alone (no partition is
  opened), whoever started it.

The output folder is an ordinary ``certify`` folder: the dashboard opens it while it is
written (what is done, said to be incomplete) and when it is complete, and it is listed in
the audits folder. A run that stopped (the server or the machine restarted, the process was
killed) is resumed by starting it again: finished partitions are kept (:mod:`core.scale.store`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_write_bytes
from core.cfc.protocol import Protocol
from core.scale.store import MANIFEST

__all__ = ["INPUTS_DIR", "RunProgress", "UploadCertifyPlan", "plan_upload_certify", "progress", "start"]

#: Folder of the audits folder holding the uploads being certified (hidden: not an audit).
INPUTS_DIR = ".certify-inputs"
#: Rows the model is fitted on at most (``certify --fit-rows``'s default).
FIT_ROWS = 20_000
_SUFFIXES = {".csv": ".csv", ".parquet": ".parquet", ".pq": ".parquet"}
_LOG = "certify.log"


@dataclass(frozen=True, kw_only=True)
class UploadCertifyPlan:
    """Where an upload's full certification reads, writes and logs, and its command.

    Attributes
    ----------
    name : str
        The output folder's name (also the inputs' sub-folder).
    data : Path
        The uploaded table, as uploaded.
    out : Path
        The ``certify`` output folder.
    log : Path
        The child process's output.
    rows : int
        Rows of the table (the run's total).
    fit_rows : int
        Rows the model is fitted on (the first ones).
    argv : tuple of str
        The ``python -m core certify`` command.
    files : dict of str to str
        The settings files the command reads (``protocol.json``, ``blocks.json``), by name.
    """

    name: str
    data: Path
    out: Path
    log: Path
    rows: int
    fit_rows: int
    argv: tuple[str, ...]
    files: dict[str, str]


def plan_upload_certify(
    data: bytes,
    file_name: str,
    root: str | Path,
    *,
    target: str,
    rows: int,
    model: str,
    seed: int,
    protocol: Protocol,
    blocks: dict[str, str] | None = None,
    scheduler: str | None = None,
    digest: str | None = None,
) -> UploadCertifyPlan:
    """The plan of certifying every row of an upload into the audits folder ``root`` (nothing written).

    Parameters
    ----------
    data : bytes
        The uploaded table (``.csv`` or ``.parquet``, as the ``certify`` command reads them).
    file_name : str
        Its name as uploaded.
    root : path
        The audits folder: the output folder is made in it.
    target : str
        Label column.
    rows : int
        Rows of the table; the model is fitted on the first ``min(20000, rows // 2)``.
    model, seed, protocol, blocks
        The audit's settings (as in the sidebar and the Protocol tab).
    scheduler : str, optional
        Address of a Dask scheduler to certify on (``tcp://host:8786``); default local.
    digest : str, optional
        SHA-256 of ``data`` when already known (an upload's), so a page rerun does not hash it again.

    Raises
    ------
    ValueError
        The file is neither CSV nor Parquet, ``rows`` is below 4, or a setting is invalid.
    """
    suffix = _SUFFIXES.get(Path(file_name).suffix.lower())
    if suffix is None:
        raise ValueError(
            f"{file_name}: certifying every row reads .csv and .parquet tables; upload it as one of them "
            "(uncompressed)."
        )
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 4:
        raise ValueError(f"`rows` must be an int >= 4; got {rows!r}.")
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol; got {type(protocol).__name__}.")
    if scheduler is not None and not re.fullmatch(r"[a-z]+://\S+", scheduler):
        raise ValueError(f"`scheduler` must be an address such as tcp://host:8786; got {scheduler!r}.")
    request = json.dumps(
        {
            "table": digest or hashlib.sha256(data).hexdigest(),
            "target": target,
            "model": model,
            "seed": int(seed),
            "protocol": protocol.fingerprint,
            "blocks": dict(sorted(blocks.items())) if blocks else None,
        },
        sort_keys=True,
    )
    from core.scale.certify import DEFAULT_CHUNK_ROWS  # the engine itself is not needed to plan

    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(file_name).stem).strip("._") or "table"
    name = f"{stem}-{model}-{hashlib.sha256(request.encode()).hexdigest()[:10]}-certify"
    root = Path(root)
    inputs = root / INPUTS_DIR / name
    table = inputs / f"table{suffix}"
    fit_rows = min(FIT_ROWS, rows // 2)
    argv = [
        *(sys.executable, "-m", "core", "certify"),
        *("--data", str(table), "--target", target, "--model", model, "--seed", str(int(seed))),
        *("--fit-rows", str(fit_rows), "--chunk-rows", str(DEFAULT_CHUNK_ROWS)),
        *("--protocol", str(inputs / "protocol.json")),
    ]
    files = {"protocol.json": protocol.to_json()}
    if blocks:
        files["blocks.json"] = json.dumps(dict(sorted(blocks.items())))
        argv += ["--blocks", str(inputs / "blocks.json")]
    if scheduler is not None:
        argv += ["--engine", "dask", "--scheduler", scheduler]
    argv += ["--out", str(root / name), "--no-progress"]
    return UploadCertifyPlan(
        name=name,
        data=table,
        out=root / name,
        log=inputs / _LOG,
        rows=rows,
        fit_rows=fit_rows,
        argv=tuple(argv),
        files=files,
    )


def start(plan: UploadCertifyPlan, data: bytes) -> subprocess.Popen:
    """Start (or resume) the plan's run in a detached child process; its output goes to ``plan.log``.

    Writes the uploaded table ``data`` (once) and the settings files first. The child is in its
    own session, so it finishes even if the dashboard stops; starting the same plan while it
    runs is refused by the output folder's lock (the child says so in its log).
    """
    plan.data.parent.mkdir(parents=True, exist_ok=True)
    if not plan.data.exists() or plan.data.stat().st_size != len(data):
        atomic_write_bytes(plan.data, data)
    for name, text in plan.files.items():
        atomic_write_bytes(plan.data.parent / name, text.encode())
    package_root = Path(__file__).resolve().parents[2]  # where `core` is importable from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package_root), os.environ.get("PYTHONPATH")]))}
    with open(plan.log, "wb") as log:  # this attempt's output only
        return subprocess.Popen(
            plan.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )


@dataclass(frozen=True, kw_only=True)
class RunProgress:
    """How far a run is, from its folder.

    Attributes
    ----------
    rows_done : int
        Rows of the partitions finished (journalled, or listed by the finished manifest).
    rows : int
        Rows of the table.
    complete : bool
        The run finished.
    started : bool
        The output folder has a manifest (the run got past fitting its model).
    error : str or None
        The last ``error:`` line of the log, when the child stopped on one.
    """

    rows_done: int
    rows: int
    complete: bool
    started: bool
    error: str | None

    @property
    def fraction(self) -> float:
        return 1.0 if self.complete else min(self.rows_done / self.rows, 1.0) if self.rows else 0.0


def progress(plan: UploadCertifyPlan) -> RunProgress:
    """The plan's progress, read from its output folder's manifest and journal (no partition read)."""
    manifest, journal = plan.out / MANIFEST, plan.out / ".progress.jsonl"
    complete, done = False, 0
    try:
        stored = json.loads(manifest.read_text(encoding="utf-8"))
        complete = stored.get("complete") is True
        if complete:
            done = int(stored.get("n_rows", 0))
    except (OSError, ValueError):
        stored = None
    if not complete and journal.exists():
        seen: dict[int, int] = {}
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                seen[int(record["index"])] = int(record["rows"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line
        done = sum(seen.values())
    error = None
    if plan.log.exists():
        lines = [ln for ln in plan.log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        if lines and lines[-1].startswith("error:"):
            error = lines[-1].removeprefix("error:").strip()
    return RunProgress(rows_done=done, rows=plan.rows, complete=complete, started=stored is not None, error=error)
