"""Roles on the dashboard's server-side actions (AppTest, signed in as in test_review_team_app): a
viewer sees no upload, trust, start-audit, probe or save control on any page, an admin does, and
state that bypasses the widgets (a session holding an upload) is refused by core's check
(core.reviews.permissions) and never saved in the shared audits folder. A reviewer whose team
file grants upload and run, but not save, audits an uploaded model that is not saved."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import skops.io as sio
from app_checks import assert_ok, open_overview_tab
from team_settings import AUTH, TEAM

from core.views.uploads import FilesUpload, TableUpload
from ui.state import OwnModelState, RecaptureState, SharedState, TrustOffer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))
from own_models import default_tables, hist_gb_pipeline, raw_logreg  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 180
UPLOAD_CONTROLS = (
    "Audit a fitted model",
    "Upload your own table",
    "Probe your own ONNX model",
    "Your per-probe outputs",
)
TREE = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"


def _team(tmp_path, monkeypatch, permissions: str = "") -> Path:
    path = tmp_path / "team.toml"
    path.write_text(TEAM + (f"\n[permissions]\n{permissions}" if permissions else ""))
    monkeypatch.setenv("AUDIT_TEAM", str(path))
    return path


@pytest.fixture
def team_file(tmp_path, monkeypatch):
    return _team(tmp_path, monkeypatch)


def _session(email: str, name: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.secrets = {"auth": AUTH}
    at.user = {"is_logged_in": True, "email": email, "name": name}
    return at.run()


def _expanders(at) -> list[str]:
    return [e.label for e in at.expander]


def _upload_controls(at) -> list[str]:
    """Every upload, trust, start-audit, probe or save control the run drew."""
    found = [label for label in _expanders(at) if label.startswith(UPLOAD_CONTROLS)]
    found += [f"uploader {u.label}" for u in at.file_uploader]
    found += [b.label for b in at.button if b.label.startswith(("Trust", "Audit my model", "Run the probes", "Save"))]
    found += [f"records {s.label}" for s in at.segmented_control if s.label == "Records"]
    return found


def _pages(at) -> dict[str, list[str]]:
    """The controls of the Overview (its three tabs, the sidebar), Paired bounds and Recapture."""
    shown = {}
    for tab in ("At a glance", "Data", "Protocol"):
        open_overview_tab(at, tab)
        shown[f"overview {tab}"] = _upload_controls(at)
    for page in ("paired_bounds", "recapture"):
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        shown[page] = _upload_controls(at)
    return shown


def _untrusted_upload(train, test) -> dict:
    return {
        "kind": "upload",
        "target": "default",
        "trust": [],
        "feature_order": None,
        "files": {
            "model": ("pipe.skops", sio.dumps(hist_gb_pipeline(train))),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": ("train.csv", train.to_csv(index=False).encode()),
        },
    }


def test_viewer_sees_no_upload_trust_run_or_save_control(reviews_db, team_file):
    at = _session("dee@example.org", "Dee")
    assert_ok(at)
    assert "viewer — reads only" in " ".join(m.value for m in at.sidebar.markdown)
    assert {page: controls for page, controls in _pages(at).items() if controls} == {}
    # Even with the own-model form marked open and a trust offer pending in the session (as a
    # crafted session could hold them), no uploader and no trust button is drawn.
    train, test = default_tables(n_train=300, n_test=60)
    source = _untrusted_upload(train, test)
    at.switch_page("pages/overview.py").run()
    at.session_state[OwnModelState.form_open.key] = True
    at.session_state[OwnModelState.offer.key] = TrustOffer(digest="0" * 64, types=[TREE], source=source)
    at.run()
    assert_ok(at)
    assert _upload_controls(at) == []
    assert at.sidebar.subheader and "Your model" in [s.value for s in at.sidebar.subheader]
    assert [e for e in _expanders(at) if e.startswith("Open a saved audit")], "reading saved audits stays open"


def test_admin_sees_upload_trust_run_controls(reviews_db, team_file):
    at = _session("ana@example.org", "Ana")
    assert_ok(at)
    shown = _pages(at)
    assert "Audit a fitted model (.skops / .onnx)" in shown["overview At a glance"]
    assert "Upload your own table (CSV or Parquet)" in shown["overview Data"]
    assert "records Records" in shown["paired_bounds"]
    assert {"Probe your own ONNX model on your images", "Your per-probe outputs", "Run the probes"} <= set(
        shown["recapture"]
    )
    assert {
        "uploader Per-probe outputs (CSV or Parquet, several files; or a .zip of the output folder)",
        "uploader ONNX model (.onnx)",
    } <= set(shown["recapture"])
    at.switch_page("pages/overview.py").run()
    at.session_state[OwnModelState.form_open.key] = True
    train, test = default_tables(n_train=300, n_test=60)
    at.session_state[OwnModelState.offer.key] = TrustOffer(
        digest="0" * 64, types=[TREE], source=_untrusted_upload(train, test)
    )
    at.run()
    assert {"uploader Model", "uploader Test table (CSV / Parquet)", "Trust this type and retry"} <= set(
        _upload_controls(at)
    )


def test_viewer_upload_in_session_is_refused_by_core_and_not_saved(reviews_db, team_file, _audits_dir, caplog):
    """A session holding an upload (the widgets bypassed) gets nothing from the server: the model
    is not loaded, audited or saved, the table and the probe outputs are not read."""
    train, test = default_tables(n_train=300, n_test=60)
    at = _session("dee@example.org", "Dee")
    source = _untrusted_upload(train, test)
    source["trust"] = [TREE]
    at.session_state[OwnModelState.audit.key] = source
    at.run()
    refused = [e.value for e in at.sidebar.error]
    assert refused and "is a viewer; to run needs the admin role" in refused[0], refused
    assert not [b for b in at.button if b.label.startswith("Trust")]
    assert not _audits_dir.exists() or not any(_audits_dir.iterdir()), "nothing saved in the audits folder"
    assert "refused: dee@example.org (viewer) tried to run an audit of pipe.skops" in caplog.text

    # An uploaded table in the session: refused before it is read.
    at.session_state[OwnModelState.audit.key] = None
    data = test.to_csv(index=False).encode()
    at.session_state[SharedState.uploads.key] = {"mine": TableUpload.of(data, "mine.csv", target="default")}
    at.session_state[SharedState.dataset_next.key] = "upload:mine"  # as the Overview's upload sets it
    at.run()
    assert any("is a viewer; to upload needs the admin role" in e.value for e in at.error), [e.value for e in at.error]

    # Per-probe outputs in the session of the Recapture page: refused too.
    at.switch_page("pages/recapture.py").run()
    at.session_state[RecaptureState.upload.key] = FilesUpload(
        kind="screening", files={"probes": ("probes.csv", b"x\n"), "clean": ("clean.csv", b"x\n")}
    )
    at.run()
    assert any("is a viewer; to upload needs the admin role" in e.value for e in at.error), [e.value for e in at.error]
    assert "tried to upload probes.csv, clean.csv" in caplog.text


def test_reviewer_granted_upload_and_run_audits_without_saving_or_trust_admin_saves(
    reviews_db, tmp_path, monkeypatch, _audits_dir
):
    _team(tmp_path, monkeypatch, 'upload = "reviewer"\nrun = "reviewer"\n')
    train, test = default_tables(n_train=600, n_test=80)
    plain = {
        **_untrusted_upload(train, test),
        "files": {
            "model": ("logreg.skops", sio.dumps(raw_logreg(train))),  # nothing to trust
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": ("train.csv", train.to_csv(index=False).encode()),
        },
    }

    bo = _session("bo@example.org", "Bo")
    assert "Audit a fitted model (.skops / .onnx)" in _expanders(bo)  # granted: the form is offered
    bo.session_state[OwnModelState.audit.key] = plain
    bo.run()
    assert_ok(bo)
    captions = " ".join(c.value for c in bo.sidebar.caption)
    assert "Showing **your model logreg.skops**" in captions
    assert "Not saved in the shared audits folder: saving there needs the admin role." in captions
    assert not _audits_dir.exists() or not any(_audits_dir.iterdir())

    # Trust stays an admin's: a pending offer shows the types but no button for the reviewer, and
    # an upload trusting them anyway is refused before the model is read.
    untrusted = {**_untrusted_upload(train, test), "trust": [TREE]}
    bo.session_state[OwnModelState.form_open.key] = True
    bo.session_state[OwnModelState.offer.key] = TrustOffer(digest="0" * 64, types=[TREE], source=untrusted)
    bo.run()
    assert any(TREE in w.value for w in bo.sidebar.warning)
    assert not [b for b in bo.button if b.label.startswith("Trust")]
    assert "Trusting types needs the admin role (you are a reviewer)" in " ".join(c.value for c in bo.sidebar.caption)
    bo.session_state[OwnModelState.audit.key] = untrusted
    bo.run()
    assert any("is a reviewer; to trust needs the admin role" in e.value for e in bo.sidebar.error)

    ana = _session("ana@example.org", "Ana")
    ana.session_state[OwnModelState.audit.key] = plain
    ana.run()
    assert_ok(ana)
    assert "Saved in the audits folder as" in " ".join(c.value for c in ana.sidebar.caption)
    saved = [p for p in _audits_dir.iterdir() if (p / "protocol.json").is_file()]
    assert len(saved) == 1 and saved[0].name.startswith("logreg-")
