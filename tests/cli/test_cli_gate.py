"""`reliability-audit gate`: exit codes, reports and the CI set-ups of docs/ci.md, on a real audit folder.

The command is driven two ways. ``gate(...)`` builds a parser holding only this command
(``core.cli.gate.register``) and calls the command function, which returns 0 or 1 and raises
``ValueError`` on bad input. The others go through ``core.cli.main`` (exit 2 for a
``ValueError``) and ``python -m core``, as a pipeline does.

The audit folder is the shared ``audit`` fixture of ``tests/conftest.py`` (breast_cancer +
logreg, seed 0); a test that changes a file works on a copy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

import core.cli
from core.cli.gate import register
from core.gate import evaluate, gate_metrics, load_policy

ROOT = Path(__file__).resolve().parents[2]
CI_PAGE = ROOT / "docs" / "ci.md"


def gate(*argv: object) -> int:
    """Run ``gate ARGV`` through a parser of this command alone; the command's own return value."""
    parser = argparse.ArgumentParser(prog="reliability-audit")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["gate", *map(str, argv)])
    return args.func(args)


def values_of(folder: Path) -> dict:
    """The audit-wide figures, read from evaluation.json here (not through core.gate)."""
    ev = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    return {**ev["nominal"], **ev["fragility"]}


@pytest.fixture
def folder(audit):
    return audit[1]


# --------------------------------------------------------------------------------------------
# The command function (registered into its own parser)
# --------------------------------------------------------------------------------------------
def test_every_rule_holds_exit_0(folder, capsys, tmp_path):
    v = values_of(folder)
    code = gate(
        folder,
        "--max",
        f"share_brittle={v['share_brittle'] + 0.01}",
        "--min",
        f"accuracy={v['accuracy'] - 0.01}",
        "--junit",
        tmp_path / "gate.xml",
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line.split("  ")[0] for line in out[:2]] == ["pass", "pass"]
    assert out[2] == "gate passed for bc (breast_cancer / logreg, seed 0): 2 of 2 rules hold"
    root = ElementTree.parse(tmp_path / "gate.xml").getroot()
    assert root.get("failures") == "0" and root.find("testsuite").get("tests") == "2"


def test_a_failing_rule_exits_1_and_both_reports_are_written(folder, capsys, tmp_path):
    v = values_of(folder)
    junit, md = tmp_path / "reports" / "gate.xml", tmp_path / "summary.md"
    code = gate(folder, "--max", "share_brittle=0.01", "--min", "accuracy=0.5", "--junit", junit, "--markdown", md)
    out = capsys.readouterr().out
    assert code == 1
    assert f"FAIL  share_brittle = {v['share_brittle']:.3g} > 0.01 (max)" in out
    assert out.rstrip().endswith("1 of 2 rules fail")
    failure = ElementTree.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure.get("message") == f"share_brittle = {v['share_brittle']:.3g} > 0.01 (max)"
    text = md.read_text(encoding="utf-8")
    assert text.startswith("## ❌ Reliability gate failed (1 of 2 rules): bc (breast_cancer / logreg)")
    assert "| max share_brittle |" in text and str(tmp_path) not in text


def test_policy_and_flags_combine_and_the_stricter_wins(folder, capsys, tmp_path):
    v = values_of(folder)
    policy = tmp_path / "gate.toml"
    policy.write_text(f"[max]\nmean_rcma = {v['mean_rcma'] + 1}\n[min]\naccuracy = 0.5\n", encoding="utf-8")
    assert gate(folder, "--policy", policy) == 0
    capsys.readouterr()
    # The flag tightens the file's mean_rcma below its value: one rule, the flag's, and it fails.
    assert gate(folder, "--policy", policy, "--max", f"mean_rcma={v['mean_rcma'] / 2}") == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("FAIL  mean_rcma = ") and lines[1].startswith("pass  accuracy")


def test_a_nan_metric_fails_its_rule(folder, capsys, tmp_path):
    copy = shutil.copytree(folder, tmp_path / "bc")
    ev = json.loads((copy / "evaluation.json").read_text(encoding="utf-8"))
    ev["fragility"]["mean_rcma"] = None  # as evaluation.json writes NaN
    (copy / "evaluation.json").write_text(json.dumps(ev), encoding="utf-8")
    assert gate(copy, "--max", "mean_rcma=1000", "--junit", tmp_path / "g.xml") == 1
    out = capsys.readouterr().out
    assert "FAIL  mean_rcma is undefined (NaN) in this audit: cannot be checked against max 1000" in out
    failure = ElementTree.parse(tmp_path / "g.xml").getroot().find("testsuite/testcase/failure")
    assert failure.get("type") == "undefined"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max", "share_britle=0.1"],
            r"unknown metric 'share_britle' \(did you mean 'share_brittle'\?\); known metrics",
        ),
        ([], r"no rule to check: give --max METRIC=VALUE, --min METRIC=VALUE or --policy FILE\.toml"),
        (["--max", "accuracy=0.9", "--min", "accuracy=0.95"], r"no value of 'accuracy' can pass"),
        (["--max", "accuracy=1", "--junit", "same.out", "--markdown", "same.out"], r"name the same file"),
    ],
    ids=["unknown-metric", "no-rule", "empty-range", "same-output"],
)
def test_bad_input_raises_and_writes_nothing(folder, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        gate(folder, *argv)
    assert list(tmp_path.iterdir()) == []


def test_the_unknown_metric_message_lists_the_known_ones(folder):
    with pytest.raises(ValueError) as caught:
        gate(folder, "--min", "fds.auc=0.5")
    text = str(caught.value)
    for name in ("accuracy", "share_brittle", "share_k_le_2", "mean_rcma", "n_test", "auroc", "capture_at_20"):
        assert re.search(rf"\b{name}\b", text), name
    assert "fds" in text and "calibration." in text


def test_a_malformed_policy_names_file_line_and_value(folder, tmp_path):
    policy = tmp_path / "gate.toml"
    policy.write_text('[max]\nshare_brittle = 0.1\nmean_rcma = "high"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"gate\.toml, line 3: \[max\] mean_rcma = \"high\": expected a number"):
        gate(folder, "--policy", policy, "--junit", tmp_path / "g.xml")
    assert not (tmp_path / "g.xml").exists()


def test_a_newer_audit_folder_is_refused(folder, tmp_path):
    copy = shutil.copytree(folder, tmp_path / "bc")
    meta = json.loads((copy / "view" / "meta.json").read_text(encoding="utf-8"))
    meta["schema"] = "audit-view/2"
    (copy / "view" / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match=r"made by a newer reliability-audit \(format 2; this one reads up to 1\)"):
        gate(copy, "--max", "share_brittle=1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("share_brittle", r"argument --max: expected METRIC=VALUE \(e\.g\. share_brittle=0\.1\); got 'share_brittle'"),
        ("share_brittle=lots", r"argument --max: expected a finite number after '='"),
    ],
    ids=["no-equals", "not-a-number"],
)
def test_a_malformed_flag_is_refused_by_the_parser(folder, capsys, value, message):
    with pytest.raises(SystemExit) as caught:
        gate(folder, "--max", value)
    assert caught.value.code == 2
    assert re.search(message, capsys.readouterr().err)


# --------------------------------------------------------------------------------------------
# Through core.cli.main and python -m core
# --------------------------------------------------------------------------------------------
def test_main_exit_codes(folder, tmp_path, capsys):
    v = values_of(folder)
    assert core.cli.main(["gate", str(folder), "--min", f"accuracy={v['accuracy']}"]) == 0
    assert core.cli.main(["gate", str(folder), "--max", "share_brittle=0"]) == 1
    capsys.readouterr()
    assert core.cli.main(["gate", str(folder), "--max", "share_britle=0.1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: max share_britle <= 0.1 (--max): unknown metric")
    assert core.cli.main(["gate", str(tmp_path / "nope"), "--max", "share_brittle=1"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_main_refuses_a_newer_folder_with_exit_2(folder, tmp_path, capsys):
    copy = shutil.copytree(folder, tmp_path / "bc")
    stored = json.loads((copy / "protocol.json").read_text(encoding="utf-8"))
    stored["protocol"]["schema"] = "cfc-protocol/9"
    (copy / "protocol.json").write_text(json.dumps(stored), encoding="utf-8")
    assert core.cli.main(["gate", str(copy), "--max", "share_brittle=1", "--junit", str(tmp_path / "g.xml")]) == 2
    assert "made by a newer reliability-audit" in capsys.readouterr().err
    assert not (tmp_path / "g.xml").exists()


def test_main_reports_an_unwritable_output_with_exit_2(folder, tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    assert core.cli.main(["gate", str(folder), "--max", "share_brittle=1", "--junit", str(tmp_path / "taken")]) == 2
    assert "--junit" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# The CI set-ups of docs/ci.md
# --------------------------------------------------------------------------------------------
def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def ci_commands() -> dict[str, list[str]]:
    """``{"github" | "gitlab": [shell lines]}`` of the YAML blocks of docs/ci.md."""
    found: dict[str, list[str]] = {}
    for block in fenced_blocks(CI_PAGE.read_text(encoding="utf-8"), "yaml"):
        doc = yaml.safe_load(block)
        if "jobs" in doc:
            lines = [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]
            found["github"] = [line for run in lines for line in run.splitlines()]
        else:
            found["gitlab"] = [line for job in doc.values() for line in job["script"]]
    return found


def policy_of_the_page() -> str:
    """The first TOML block of docs/ci.md: the ``gate.toml`` its workflows use."""
    return fenced_blocks(CI_PAGE.read_text(encoding="utf-8"), "toml")[0]


@pytest.fixture
def workspace(folder, tmp_path, monkeypatch):
    """A CI job's checkout: the audit folder as ``audit/`` and the page's policy as ``gate.toml``."""
    shutil.copytree(folder, tmp_path / "audit")
    (tmp_path / "gate.toml").write_text(policy_of_the_page(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary.md"))
    return tmp_path


def expected_code(workspace: Path) -> int:
    return evaluate(gate_metrics(workspace / "audit"), load_policy(workspace / "gate.toml")).exit_code


def check_reports(workspace: Path, markdown_file: Path) -> None:
    root = ElementTree.parse(workspace / "gate.xml").getroot()
    assert root.tag == "testsuites" and root.find("testsuite").get("name") == "reliability-audit gate"
    assert int(root.get("tests")) == len(load_policy(workspace / "gate.toml"))
    text = markdown_file.read_text(encoding="utf-8")
    assert (
        re.match(r"## (✅|❌) Reliability gate (passed|failed)", text)
        and "| rule | value | threshold | result |" in text
    )
    assert str(workspace) not in text


def test_the_page_has_a_github_and_a_gitlab_gate_and_its_audit_lines_parse():
    commands = ci_commands()
    assert set(commands) == {"github", "gitlab"}
    parser = core.cli.build_parser()
    for where, lines in commands.items():
        gates = [line for line in lines if line.startswith("reliability-audit gate ")]
        audits = [line for line in lines if line.startswith("reliability-audit audit ")]
        assert len(gates) == 1 and len(audits) == 1, where
        assert "--junit gate.xml" in gates[0] and "--policy gate.toml" in gates[0]
        args = parser.parse_args(shlex.split(audits[0])[1:])
        assert args.command == "audit" and str(args.out) == "audit", where
    assert '--markdown "$GITHUB_STEP_SUMMARY"' in next(x for x in commands["github"] if "gate" in x)
    gitlab = yaml.safe_load(fenced_blocks(CI_PAGE.read_text(encoding="utf-8"), "yaml")[1])
    (job,) = gitlab.values()
    assert job["artifacts"]["reports"]["junit"] == "gate.xml" and job["artifacts"]["when"] == "always"


@pytest.mark.parametrize("service", ["github", "gitlab"])
def test_the_gate_lines_of_the_page_run_in_process(workspace, service, capsys):
    (line,) = [x for x in ci_commands()[service] if x.startswith("reliability-audit gate ")]
    argv = shlex.split(os.path.expandvars(line))
    assert argv[:2] == ["reliability-audit", "gate"]
    assert gate(*argv[2:]) == expected_code(workspace)
    markdown_file = workspace / ("step_summary.md" if service == "github" else "gate.md")
    check_reports(workspace, markdown_file)


@pytest.mark.parametrize("service", ["github", "gitlab"])
def test_the_gate_lines_of_the_page_run_in_a_shell(workspace, service):
    """As the CI service runs them: bash -eo pipefail, ``reliability-audit`` being ``python -m core``."""
    lines = [x for x in ci_commands()[service] if x.startswith("reliability-audit gate ")]
    script = 'reliability-audit() { "$PYTHON" -m core "$@"; }\n' + "\n".join(lines) + "\n"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": path}
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=workspace, env=env, capture_output=True, text=True
    )
    assert done.returncode == expected_code(workspace), done.stderr
    markdown_file = workspace / ("step_summary.md" if service == "github" else "gate.md")
    check_reports(workspace, markdown_file)
