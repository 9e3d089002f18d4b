"""The one atomic writer: every file or folder the tool publishes appears complete or not at all.

A file is written to a unique temporary name in the folder of its destination, flushed,
``fsync``-ed and renamed onto its final name with ``os.replace`` (one ``rename(2)``: readers
see the previous content or the new one, never a mix); the folder is then ``fsync``-ed so the
rename survives a power cut. A folder is built under a temporary name beside its destination,
every file in it ``fsync``-ed, and renamed into place the same way.

On any failure (``ENOSPC``, ``EFBIG`` under ``ulimit -f``, a read-only folder, a crash of the
writer) the temporary file or folder is removed and the previous output stays byte-identical.
A process killed by ``SIGKILL`` cannot clean up: what remains is a hidden ``.NAME.*.tmp``
beside the destination, never a truncated file under the destination's name.

``OSError`` raised while writing carries the *destination* path (not the temporary one) so
the command line reports the file the user named (:func:`core.cli.main` turns it into one line
and exit code 2).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_folder",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_file",
    "check_output_folder",
    "fsync_folder",
    "publish_folder",
]


def fsync_folder(path: str | os.PathLike[str]) -> None:
    """``fsync`` a directory so the renames inside it are durable (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory; the data files are synced
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _destination_error(exc: OSError, path: Path, tmp: Path | None = None) -> OSError:
    """The same error, naming the destination instead of a temporary name."""
    if exc.errno is None:
        text = str(exc) if tmp is None else str(exc).replace(str(tmp), str(path))
        return OSError(f"{path}: {text}")
    reason = exc.strerror or os.strerror(exc.errno)
    if tmp is not None:
        reason = reason.replace(str(tmp), str(path))
    return type(exc)(exc.errno, reason, str(path))


def check_output_file(path: str | os.PathLike[str], *, flag: str = "output") -> Path:
    """Refuse a file destination that cannot be replaced atomically, before any work is done.

    The destination must be a regular file or not exist; its folder must exist or be creatable.
    A folder, a device (``/dev/full``), a FIFO or a socket is refused: renaming over them
    would replace the node, not write to it.

    Returns
    -------
    Path
        The destination, with symbolic links resolved (the link's target is replaced, the link kept).
    """
    path = Path(path).expanduser()
    if path.is_symlink():
        path = path.resolve()
    if path.is_dir():
        raise IsADirectoryError(f"{flag} {str(path)!r} is a folder; expected a file name.")
    if path.exists() and not path.is_file():
        raise ValueError(
            f"{flag} {str(path)!r} exists and is not a regular file (a device, FIFO or socket); expected a file name."
        )
    parent = path.parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise NotADirectoryError(f"{flag} {str(path)!r}: {str(probe)!r} is not a folder.")
    return path


def check_output_folder(path: str | os.PathLike[str], *, flag: str = "--out", force: bool = False) -> Path:
    """Refuse a folder destination that is a file, or non-empty without ``force``."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {str(out)!r} exists and is not a folder.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"{flag} {str(out)!r} is not empty; choose a new folder or pass --force to replace it.")
    probe = out.parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise NotADirectoryError(f"{flag} {str(out)!r}: {str(probe)!r} is not a folder.")
    return out


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; publish it onto ``path`` when the block succeeds.

    For writers that want a path (``DataFrame.to_csv``, ``pyarrow.parquet.ParquetWriter``).
    The block writes the temporary file completely; it is then ``fsync``-ed and renamed onto
    ``path``. On any exception the temporary file is removed and ``path`` is untouched.
    """
    path = check_output_file(path)
    # A unique name per attempt: two writers of the same destination (a Dask task retried on
    # another worker) never write into one another's temporary file.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"the writer produced no file for {path}.")
        _fsync_file(tmp)
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except OSError as exc:
        raise _destination_error(exc, path, tmp) from exc
    finally:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        except OSError:  # a read-only folder: nothing was created there anyway
            pass


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename, fsync folder)."""
    with atomic_path(path) as tmp:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode(encoding))


def publish_folder(tmp: Path, out: Path) -> None:
    """Move the finished temporary folder ``tmp`` to ``out``, replacing an old ``out``.

    ``tmp`` must sit beside ``out`` (same file system) so each step is one rename(2): readers
    see the old folder or the new one, never a half-written one. Every file of ``tmp`` is
    ``fsync``-ed first, and the parent folder after the rename.
    """
    for root, _, files in os.walk(tmp):
        for name in files:
            _fsync_file(Path(root) / name)
        fsync_folder(root)
    if out.is_dir() and any(out.iterdir()):
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex}"
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)  # rename(2) replaces an empty folder atomically
    fsync_folder(out.parent)


@contextmanager
def atomic_folder(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new temporary folder beside ``out``; publish it as ``out`` when the block succeeds.

    On any exception (including ``KeyboardInterrupt``) the temporary folder is removed and
    ``out`` is untouched. ``OSError`` names ``out``.
    """
    out = Path(out).expanduser()
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()  # permissions from the umask, unlike mkdtemp's 0o700
    except OSError as exc:
        raise _destination_error(exc, out) from exc
    try:
        yield tmp
        publish_folder(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _destination_error(exc, out, tmp) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
