"""The one atomic writer (``core.atomic``): files and folders published whole or not at all."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

import core.atomic
import core.validation
from core.atomic import atomic_folder, atomic_path, atomic_write_bytes, check_output_file


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_atomic_write_replaces_and_leaves_nothing(tmp_path):
    dest = tmp_path / "f.bin"
    atomic_write_bytes(dest, b"one")
    atomic_write_bytes(dest, b"two")
    assert dest.read_bytes() == b"two" and not _leftovers(tmp_path)


def test_failed_write_keeps_the_previous_bytes(tmp_path):
    dest = tmp_path / "f.csv"
    dest.write_bytes(b"previous")
    with pytest.raises(RuntimeError):
        with atomic_path(dest) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer crashed")
    assert dest.read_bytes() == b"previous" and not _leftovers(tmp_path)


def test_os_error_names_the_destination_not_the_temporary(tmp_path, monkeypatch):
    dest = tmp_path / "f.csv"

    def enospc(path):
        raise OSError(errno.ENOSPC, f"No space left on device writing {path}", str(path))

    monkeypatch.setattr(core.atomic, "_fsync_file", enospc)
    with pytest.raises(OSError) as info:
        atomic_write_bytes(dest, b"x")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(dest)
    assert ".tmp" not in str(info.value)
    assert not dest.exists() and not _leftovers(tmp_path)


def test_symlink_destination_replaces_the_target(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    atomic_write_bytes(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"


@pytest.mark.parametrize("kind", ["folder", "device", "fifo", "under-a-file"])
def test_unwritable_destinations_are_refused_up_front(tmp_path, kind):
    if kind == "folder":
        dest = tmp_path / "d"
        dest.mkdir()
        exc = IsADirectoryError
    elif kind == "device":
        dest, exc = Path("/dev/null"), ValueError
    elif kind == "fifo":
        dest = tmp_path / "p"
        os.mkfifo(dest)
        exc = ValueError
    else:
        (tmp_path / "f").write_text("x")
        dest, exc = tmp_path / "f" / "x.csv", NotADirectoryError
    with pytest.raises(exc, match=re.escape(str(dest))):
        check_output_file(dest)


def test_atomic_folder_publishes_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_folder(out) as tmp:
            (tmp / "a.txt").write_text("a")
            raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"] and not _leftovers(tmp_path)
    with atomic_folder(out) as tmp:
        (tmp / "a.txt").write_text("a")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"] and not _leftovers(tmp_path)


def test_the_two_former_writers_are_the_shared_one():
    import core.scale.store
    import core.tabular.certify_task

    assert core.scale.store._atomic_write_bytes is atomic_write_bytes
    src = Path(core.tabular.certify_task.__file__).read_text()
    assert "tmp.write_bytes" not in src and "atomic_write_bytes(path, data)" in src
