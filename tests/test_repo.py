"""Repository-level contracts: README's set-up commands and CI stay in step."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines()]


def test_readme_starts_with_the_two_setup_commands():
    head = (ROOT / "README.md").read_text().splitlines()[:6]
    assert "```bash" in head
    app_cmd, test_cmd = _readme_commands()
    assert app_cmd.endswith("streamlit run app.py")
    assert "pytest" in test_cmd


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = _readme_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines


def test_required_top_level_layout():
    for name in ("app.py", "pages", "core", "assets", "tests", "requirements.txt", "README.md"):
        assert (ROOT / name).exists(), name


def test_torch_is_pinned_by_the_lock():
    # The requirements give a range (tests/test_packaging.py); CI installs the lock's CPU build.
    lock = (ROOT / "requirements-lock.txt").read_text().splitlines()
    assert "torch==2.13.0" in [r.strip() for r in lock]


def test_the_engine_example_of_docs_cfc_runs(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "cfc.md").read_text()
    block = text.split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)  # the example writes certs.json into the working directory
    namespace: dict = {}
    exec(compile(block, "docs/cfc.md", "exec"), namespace)
    assert len(namespace["cs"]) == len(namespace["split"].test)
    report = namespace["verify"]("certs.json", namespace["model"].predict_proba, namespace["X_test"])
    assert report.ok


def _requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = line.split(";")[0]
            for sep in ("==", ">=", "<=", "~=", ">", "<", "["):
                name = name.split(sep)[0]
            names.add(name.strip().lower().replace("_", "-"))
    return names


def test_installs_follow_an_exact_lock_of_every_requirement():
    lock = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and "+" not in version, f"lock line {line!r} is not an exact public pin"
            lock[name.strip().lower().replace("_", "-")] = version
    wanted = set().union(
        *(_requirement_names(ROOT / f) for f in ("requirements.txt", "requirements-all.txt", "requirements-dev.txt"))
    )
    assert wanted <= lock.keys(), f"not in the lock: {sorted(wanted - lock.keys())}"
    assert lock["torch"] == "2.13.0"
    install = (ROOT / "scripts" / "install.sh").read_text()
    assert "-c requirements-lock.txt" in install


def test_ci_reruns_the_portable_tests_under_other_kernels():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    test_cmd = _readme_commands()[1]
    assert ci_lines.index("python3 tests/portable.py") > ci_lines.index(test_cmd)
    marked = [p for p in (ROOT / "tests").rglob("test_*.py") if "@pytest.mark.portable" in p.read_text()]
    assert len(marked) >= 2, marked


def test_readme_own_model_example_runs(tmp_path, monkeypatch):
    import warnings

    text = (ROOT / "README.md").read_text()
    section = text.split("### 2. Your tabular model", 1)[1]
    block = section.split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)  # the example saves my_audit into the working directory
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.groups == {"student": [0, 1], "balance": [2], "income": [3]}
    assert len(result.certificates) == 500
    assert sorted(p.name for p in (tmp_path / "my_audit").iterdir())[:2] == ["_task.zip", "certificates.csv"]
    from core.scale.certify import load_certify_task

    assert load_certify_task(tmp_path / "my_audit").fingerprint() == result.fingerprint
