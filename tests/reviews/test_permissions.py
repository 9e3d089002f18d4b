"""Roles on the server-side actions outside the review store (core.reviews.permissions): upload,
trust, run and save need the admin role unless the team file's ``[permissions]`` grants them to
reviewers; the core entry points refuse a viewer whatever the widgets show, and log it as the
store logs its own refusals. Without a team (local mode) everything is allowed."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from core.reviews.permissions import ACTIONS, Actor, allowed, check, require
from core.reviews.team import DEFAULT_PERMISSIONS, AccessRefused, Team, TeamFileError, User, load_team
from core.tabular.own_model import audit_model
from core.views.uploads import (
    load_paired_upload,
    load_screening_upload,
    load_unpaired_upload,
    parse_blocks,
    table_columns,
)

ANA = User(email="ana@example.org", name="Ana Admin")
BO = User(email="bo@example.org", name="Bo Reviewer")
DEE = User(email="dee@example.org", name="Dee Viewer")
ZED = User(email="zed@example.org", name="Zed Stranger")
MEMBERS = {"ana@example.org": "admin", "bo@example.org": "reviewer", "dee@example.org": "viewer"}
TEAM = Team(members=MEMBERS)
GRANTED = Team(members=MEMBERS, permissions={action: "reviewer" for action in ACTIONS})
LOGGER = "reliability_audit.reviews"


def _actor(user: User | None, team: Team | None = TEAM) -> Actor:
    return Actor(user=user, team=team)


class _Never:
    """A "model" whose every use fails the test: a refused audit must not touch it."""

    classes_ = np.array([0, 1])

    def predict_proba(self, x):  # pragma: no cover - reached only if the check is skipped
        raise AssertionError("the model was called although the audit was refused")


# ---------------------------------------------------------------------------------------------
# The core entry points refuse a viewer


@pytest.mark.parametrize(
    "call",
    [
        lambda actor: table_columns(b"a,b\n1,2\n", "t.csv", actor=actor),
        lambda actor: parse_blocks(b'{"m": ["a"]}', "b.json", actor=actor),
        lambda actor: load_paired_upload("records.csv", b"model\n", actor=actor),
        lambda actor: load_unpaired_upload(("c.csv", b"x\n"), ("p.csv", b"x\n"), actor=actor),
        lambda actor: load_screening_upload(("probes.csv", b"x\n"), ("clean.csv", b"x\n"), actor=actor),
    ],
    ids=["table_columns", "parse_blocks", "paired", "unpaired", "screening"],
)
def test_viewer_upload_refused_in_core(call, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        call(_actor(DEE))
    assert (info.value.user, info.value.role, info.value.action) == (DEE, "viewer", "upload")
    assert "is a viewer; to upload needs the admin role" in str(info.value)
    assert [
        r.getMessage().startswith("refused: dee@example.org (viewer) tried to upload ") for r in caplog.records
    ] == [True]


def test_upload_allowed_to_an_admin_and_in_local_mode():
    for actor in (_actor(ANA), None, Actor()):
        assert table_columns(b"a,b\n1,2\n", "t.csv", actor=actor) == ["a", "b"]
        assert parse_blocks(b'{"m": ["a"]}', "b.json", actor=actor).mapping == {"m": ["a"]}


def test_upload_refusal_names_the_uploaded_file_not_a_path(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused, match=r"\(upload t\.csv\)"):
        table_columns(b"a\n1\n", "/home/someone/secret/t.csv", actor=_actor(DEE))
    assert "/home/someone" not in caplog.text


def test_viewer_trust_refused_in_core(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        check(_actor(DEE), "trust", what="mymod.Scaler (in m.skops)")
    assert info.value.action == "trust" and info.value.role == "viewer"
    assert caplog.records[-1].getMessage() == (
        "refused: dee@example.org (viewer) tried to trust mymod.Scaler (in m.skops): "
        "is a viewer; to trust needs the admin role"
    )
    # A team file cannot hand trust to viewers (read-only), only to reviewers.
    with pytest.raises(TeamFileError, match=r"permissions\.trust: 'viewer' cannot be given 'trust'"):
        Team(members=MEMBERS, permissions={"trust": "viewer"})
    assert not GRANTED.may(DEE.email, "trust") and GRANTED.may(BO.email, "trust")


def test_viewer_save_refused_in_core(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused, match="to save needs the admin"):
        _actor(DEE).require("save", what="m-1234abcd")
    assert "tried to save m-1234abcd" in caplog.text
    _actor(ANA).require("save", what="m-1234abcd")  # the admin saves
    check(None, "save")  # local mode: the command line and notebooks save as before


def test_viewer_run_refused(caplog):
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [0, 1, 0, 1]})
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        audit_model(_Never(), frame, frame, target="y", name="m.onnx", actor=_actor(DEE))
    assert info.value.action == "run"
    assert "refused: dee@example.org (viewer) tried to run an audit of m.onnx" in caplog.text
    with pytest.raises(AccessRefused):  # a reviewer too, by default
        audit_model(_Never(), frame, frame, target="y", actor=_actor(BO))


# ---------------------------------------------------------------------------------------------
# Who may do what


@pytest.mark.parametrize("action", ACTIONS)
def test_reviewer_refused_by_default_allowed_when_granted(action):
    assert DEFAULT_PERMISSIONS[action] == "admin"
    with pytest.raises(AccessRefused, match=f"is a reviewer; to {action} needs the admin role"):
        require(TEAM, BO, action)
    require(GRANTED, BO, action)  # [permissions] action = "reviewer"
    assert not allowed(TEAM, BO, action) and allowed(GRANTED, BO, action)
    with pytest.raises(AccessRefused, match="is a viewer"):  # never a viewer
        require(GRANTED, DEE, action)


@pytest.mark.parametrize("action", ACTIONS)
def test_admin_allowed_and_local_mode_allows_everything(action):
    require(TEAM, ANA, action)
    assert allowed(TEAM, ANA, action) and Actor(user=ANA, team=TEAM).may(action)
    require(None, None, action)
    check(None, action)
    assert Actor().may(action) and allowed(None, DEE, action)


def test_no_one_signed_in_and_strangers_are_refused(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with pytest.raises(AccessRefused, match="is not signed in") as info:
            require(TEAM, None, "upload")
        assert info.value.role == "none"
        with pytest.raises(AccessRefused, match=r"has no access \(not in the team file\)"):
            require(TEAM, ZED, "run")
        with pytest.raises(AccessRefused, match="is a viewer"):  # the default role of the unlisted
            require(Team(members=MEMBERS, default_role="viewer"), ZED, "upload")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("refused: (not signed in) (none) tried to upload: ")
    assert lines[1].startswith("refused: zed@example.org (none) tried to run: ")
    assert all(r.levelno == logging.WARNING and r.name == LOGGER for r in caplog.records)


def test_an_allowed_action_logs_nothing(caplog):
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        require(TEAM, ANA, "upload", what="t.csv")
        assert allowed(TEAM, DEE, "upload") is False  # asking is not trying
    assert not caplog.records


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: require(TEAM, ANA, "delete"), r"`action` must be one of \['upload', 'trust', 'run', 'save'\]"),
        (lambda: check(None, "delete"), r"`action` must be one of"),
        (lambda: check({"user": ANA}, "upload"), r"`actor` must be a core.reviews.permissions.Actor or None"),
        (lambda: Actor(user="ana@example.org"), r"`user` must be a core.reviews.User"),
        (lambda: Actor(team={"ana@example.org": "admin"}), r"`team` must be a core.reviews.Team"),
        (lambda: TEAM.may(ANA.email, "export"), r"`action` must be one of"),
    ],
    ids=["require-action", "check-action", "check-actor", "actor-user", "actor-team", "may-action"],
)
def test_callers_mistakes_are_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------------
# The team file's [permissions]

_TEAM_FILE = '[members]\n"ana@example.org" = "admin"\n"bo@example.org" = "reviewer"\n"dee@example.org" = "viewer"\n'


def test_team_file_permissions_grant_actions_to_reviewers(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(_TEAM_FILE + '\n[permissions]\nupload = "reviewer"   # tables, models, images\nrun = "reviewer"\n')
    team = load_team(path)
    assert team.permissions == {"upload": "reviewer", "trust": "admin", "run": "reviewer", "save": "admin"}
    assert [team.may("bo@example.org", a) for a in ACTIONS] == [True, False, True, False]
    assert [team.may("dee@example.org", a) for a in ACTIONS] == [False] * 4
    assert [team.may("ana@example.org", a) for a in ACTIONS] == [True] * 4
    path.write_text(_TEAM_FILE)  # no [permissions]: admins only
    assert load_team(path).permissions == dict(DEFAULT_PERMISSIONS)


@pytest.mark.parametrize(
    "permissions, match",
    [
        (
            'upload = "viewer"\n',
            r"line 7, permissions\.upload = 'viewer': 'viewer' cannot be given 'upload': viewers are read-only",
        ),
        ('run = "reviewer"\ndelete = "admin"\n', r"line 8, permissions\.delete = 'admin': unknown action 'delete'"),
        ('save = "boss"\n', r"line 7, permissions\.save = 'boss': role 'boss' is not one of \['reviewer', 'admin'\]"),
        ('trust = "none"\n', r"permissions\.trust = 'none': role 'none' is not one of"),
        ("trust = 2\n", r"permissions\.trust = 2: role 2 is not one of"),
    ],
    ids=["viewer", "unknown-action", "unknown-role", "none", "not-text"],
)
def test_team_file_permission_errors_name_file_line_key_and_value(tmp_path, permissions, match):
    path = tmp_path / "team.toml"
    path.write_text(_TEAM_FILE + "\n[permissions]\n" + permissions)
    with pytest.raises(TeamFileError, match=match) as info:
        load_team(path)
    assert "team.toml" in str(info.value)


def test_team_file_permissions_must_be_a_table(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text('permissions = "reviewer"\n' + _TEAM_FILE)
    with pytest.raises(TeamFileError, match=r"`permissions` must be a table of action = \"role\"; got 'reviewer'"):
        load_team(path)


def test_team_checks_permissions_given_in_python():
    with pytest.raises(TeamFileError, match=r"permissions\.uplaod: unknown action 'uplaod'"):
        Team(members=MEMBERS, permissions={"uplaod": "reviewer"})
    with pytest.raises(TeamFileError, match=r"`permissions` must map actions to roles"):
        Team(members=MEMBERS, permissions=["upload"])
    assert Team(members=MEMBERS, permissions={"save": "reviewer"}).permissions == {
        **DEFAULT_PERMISSIONS,
        "save": "reviewer",
    }


# ---------------------------------------------------------------------------------------------
# The entry points that load, trust, save and probe take the actor themselves


def test_viewer_upload_of_a_model_refused_by_load_model_bytes_before_it_is_read(caplog):
    from core.tabular.model_files import load_model_bytes

    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        load_model_bytes(b"not even a model", "m.skops", actor=_actor(DEE))
    assert info.value.action == "upload" and "tried to upload m.skops" in caplog.text
    with pytest.raises(ValueError, match="m.skops"):  # an admin gets as far as reading it
        load_model_bytes(b"not even a model", "m.skops", actor=_actor(ANA))


def test_viewer_and_reviewer_trust_refused_by_load_model_bytes_granted_upload_or_not(caplog):
    from core.tabular.model_files import load_model_bytes

    uploads_only = Team(members=MEMBERS, permissions={"upload": "reviewer"})
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        load_model_bytes(b"x", "m.skops", trust=["mymod.Scaler"], actor=_actor(BO, uploads_only))
    assert info.value.action == "trust" and "tried to trust mymod.Scaler (in m.skops)" in caplog.text
    with pytest.raises(AccessRefused):
        load_model_bytes(b"x", "m.skops", trust=["mymod.Scaler"], actor=_actor(DEE))


def test_viewer_save_refused_by_audit_result_save_and_the_admin_save_records_who(tmp_path):
    from sklearn.linear_model import LogisticRegression

    from core.tabular.audit_folder import open_audit_folder
    from core.tabular.own_model import audit_model

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80)})
    frame["y"] = (frame["a"] + 0.3 * rng.normal(size=80) > 0).astype(int)
    model = LogisticRegression().fit(frame[["a", "b"]], frame["y"])
    result = audit_model(model, frame.iloc[:60], frame.iloc[60:], target="y", name="lr")
    with pytest.raises(AccessRefused, match="to save needs the admin"):
        result.save(tmp_path / "viewer", actor=_actor(DEE))
    assert not (tmp_path / "viewer").exists()
    result.save(tmp_path / "admin", actor=_actor(ANA))
    assert open_audit_folder(tmp_path / "admin").made_by == "ana@example.org"


def test_viewer_upload_of_images_refused_by_probe_uploaded(caplog):
    from core.imaging.probe import probe_uploaded

    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(AccessRefused) as info:
        probe_uploaded(("m.onnx", b"x"), ("images.zip", b"x"), actor=_actor(DEE))
    assert info.value.action == "upload" and "tried to upload m.onnx, images.zip" in caplog.text
    granted_upload = Team(members=MEMBERS, permissions={"upload": "reviewer"})
    with pytest.raises(AccessRefused) as info:  # uploading is not running
        probe_uploaded(("m.onnx", b"x"), ("images.zip", b"x"), actor=_actor(BO, granted_upload))
    assert info.value.action == "run"
