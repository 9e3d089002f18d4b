"""The ``dashboard`` command (``core.cli.dashboard``): ``--team`` and ``--secrets`` passed to the
Streamlit server, and a team or secrets file it cannot use refused in one line."""

from __future__ import annotations

import pytest
from team_settings import AUTH, TEAM


def test_dashboard_command_passes_team_and_secrets(tmp_path):
    from core.cli.dashboard import streamlit_command

    team = tmp_path / "team.toml"
    team.write_text(TEAM)
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("[auth]\n" + "".join(f'{k} = "{v}"\n' for k, v in AUTH.items()))
    command = streamlit_command(team=str(team), secrets=str(secrets))
    assert f"--secrets.files={secrets.resolve()}" in command
    assert command[command.index("--") :][-2:] == ["--team", str(team.resolve())]


@pytest.mark.parametrize(
    "team, secrets, match",
    [
        ('[members]\n"bo@example.org" = "boss"\n', None, r"line 2, members\.'bo@example\.org': role 'boss'"),
        (None, "[auth]\n", r"--secrets turns sign-in on.*give --team"),
        (TEAM, 'title = "x"\n', r"has no \[auth\] section"),
        (TEAM, '[auth]\nredirect_uri = "http://x/oauth2callback"\n', r"\[auth\] lacks cookie_secret, client_id"),
    ],
    ids=["bad-role", "secrets-without-team", "no-auth", "auth-incomplete"],
)
def test_dashboard_command_refuses_unusable_team_or_secrets(tmp_path, capsys, team, secrets, match):
    from core.cli import main

    argv = ["dashboard"]
    if team is not None:
        (tmp_path / "team.toml").write_text(team)
        argv += ["--team", str(tmp_path / "team.toml")]
    if secrets is not None:
        (tmp_path / "secrets.toml").write_text(secrets)
        argv += ["--secrets", str(tmp_path / "secrets.toml")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and __import__("re").search(match, err), err


def test_dashboard_opens_a_certify_folder_and_refuses_one_whose_parts_disagree(tmp_path, capsys):
    """A certify run (finished or not) is passed to the app; a missing partition stops the start
    with one line naming it, exit code 2, before any server."""
    import json

    from core.cli import main
    from core.cli.dashboard import streamlit_command
    from core.scale.certify import FitSpec, certify_dataset
    from core.scale.synthetic import fit_synthetic, write_synthetic
    from core.tabular.datasets import load_dataset

    data = write_synthetic(fit_synthetic(load_dataset("credit_data")), tmp_path / "t.parquet", 900, seed=2)
    run = tmp_path / "run"
    certify_dataset(data, run, FitSpec(target="Status", model="logreg", fit_rows=300), chunk_rows=300)
    command = streamlit_command(audit=str(run))
    assert command[command.index("--audit") + 1] == str(run.resolve())
    manifest = json.loads((run / "_manifest.json").read_text())
    assert manifest["complete"] and manifest["kind"] == "certify"
    (run / "part-00001.parquet").unlink()
    assert main(["dashboard", "--audit", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "partition part-00001.parquet (rows 300..) is listed but missing" in err[0], err
