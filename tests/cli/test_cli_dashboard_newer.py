"""``reliability-audit dashboard --audit DIR`` on a folder written by a newer version: exit code 2 and
the tool's one line on stderr, before any server starts (no traceback, no Streamlit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def newer_folder(root: Path, *, view: str = "audit-view/99", protocol: str = "cfc-protocol/1") -> Path:
    """The files the dashboard checks before it starts (nothing else of an audit is needed to be refused)."""
    folder = root / "saved audit"
    (folder / "view").mkdir(parents=True)
    (folder / "protocol.json").write_text(json.dumps({"protocol": {"schema": protocol}}))
    (folder / "evaluation.json").write_text("{}")
    (folder / "certificates.parquet").write_bytes(b"PAR1")
    (folder / "view" / "meta.json").write_text(json.dumps({"schema": view}))
    return folder


def _message(folder: Path) -> str:
    return f"error: {folder}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."


@pytest.mark.parametrize(
    "tags", [{}, {"view": "audit-view/1", "protocol": "cfc-protocol/99"}], ids=["view", "protocol"]
)
def test_the_dashboard_command_refuses_a_newer_folder_before_any_server(tmp_path, capsys, monkeypatch, tags):
    from core.cli import main

    def no_server(*args, **kwargs):  # pragma: no cover - reached only if the check is skipped
        raise AssertionError("a server was started")

    monkeypatch.setattr(os, "execv", no_server)
    monkeypatch.setattr(subprocess, "Popen", no_server)
    folder = newer_folder(tmp_path, **tags)
    assert main(["dashboard", "--audit", str(folder)]) == 2
    assert capsys.readouterr().err.splitlines() == [_message(folder)]


def test_python_m_core_dashboard_exits_2_quickly_without_streamlit(tmp_path):
    folder = newer_folder(tmp_path)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "core", "dashboard", "--audit", str(folder), "--", "--server.headless", "true"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [_message(folder)]
    assert "Traceback" not in done.stderr and "streamlit" not in (done.stdout + done.stderr).lower()
    assert time.monotonic() - start < 60  # a started server would not return at all


def test_a_folder_of_this_version_still_gives_the_streamlit_command(tmp_path):
    from core.cli.dashboard import streamlit_command

    folder = newer_folder(tmp_path, view="audit-view/1")
    command = streamlit_command(audit=str(folder))
    assert command[-2:] == ["--audit", str(folder.resolve())]
