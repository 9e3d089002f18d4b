"""The tabular formats written by a newer version are refused in the tool's words, and a saved audit
records who made it (``write_view(..., made_by=...)``)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.formats import NewerFormatError
from core.tabular.audit_folder import check_audit_folder, open_audit_folder, saved_result
from core.tabular.audit_view import write_view
from core.tabular.certify_task import load_certify_task, task_from_bytes
from core.tabular.glance import GLANCE_FILE, read_glance
from core.tabular.persist import normalised_zip
from core.tabular.shipped import SOURCE_FILE, read_source, shipped_audit, shipped_glance

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def newer(where, reads: int = 1) -> str:
    return re.escape(f"{where}: made by a newer reliability-audit (format 99; this one reads up to {reads}): upgrade.")


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def folder(audit, tmp_path):
    """A copy of the shared saved audit (breast_cancer + logreg), to damage."""
    return shutil.copytree(audit[1], tmp_path / "my audit")


def test_a_folder_of_a_newer_version_is_refused_when_opened(folder):
    _edit_json(folder / "view" / "meta.json", lambda m: m.update(schema="audit-view/99"))
    for open_it in (check_audit_folder, open_audit_folder, lambda p: open_audit_folder(p, load_model=False)):
        with pytest.raises(NewerFormatError, match=f"^{newer(folder)}$"):
            open_it(folder)


def test_a_newer_protocol_in_a_folder_is_refused_when_opened(folder):
    _edit_json(folder / "protocol.json", lambda p: p["protocol"].update(schema="cfc-protocol/99"))
    with pytest.raises(NewerFormatError, match=f"^{newer(folder)}$"):
        check_audit_folder(folder)


def test_an_older_or_foreign_folder_tag_says_what_was_expected(folder):
    _edit_json(folder / "view" / "meta.json", lambda m: m.update(schema="audit-view/0"))
    with pytest.raises(
        ValueError, match="not a saved audit folder: expected format 'audit-view/1'; got 'audit-view/0'"
    ):
        check_audit_folder(folder)


def test_the_saved_result_refuses_a_newer_view_or_bundle(folder):
    saved = open_audit_folder(folder, load_model=False)
    meta = folder / "view" / "meta.json"
    original = meta.read_text(encoding="utf-8")
    _edit_json(meta, lambda m: m.update(schema="audit-view/99"))
    with pytest.raises(NewerFormatError, match=newer(folder)):
        saved_result(saved)
    meta.write_text(original, encoding="utf-8")
    bundle_file = folder / "view" / "certificates.json.gz"
    bundle = json.loads(gzip.decompress(bundle_file.read_bytes()))
    bundle["schema"] = "cfc-certificate-set/99"
    bundle_file.write_bytes(gzip.compress(json.dumps(bundle).encode()))
    with pytest.raises(NewerFormatError, match=newer(folder)):
        saved_result(saved)


def test_a_newer_glance_is_refused(audit, folder):
    _edit_json(folder / "view" / GLANCE_FILE, lambda g: g.update(schema="audit-glance/99"))
    with pytest.raises(NewerFormatError, match=f"^{newer(folder / 'view' / GLANCE_FILE)}$"):
        read_glance(folder / "view", audit[0].fingerprint)


def test_a_newer_task_zip_is_refused_naming_the_file(tmp_path):
    data = normalised_zip({"task.json": json.dumps({"schema": "certify-task/99"}).encode()})
    with pytest.raises(NewerFormatError, match=f"^{newer('model.zip', reads=2)}$"):
        task_from_bytes(data, "model.zip")
    run = tmp_path / "run"
    run.mkdir()
    (run / "_task.zip").write_bytes(data)
    with pytest.raises(NewerFormatError, match=newer(run / "_task.zip", reads=2)):
        load_certify_task(run)
    older = normalised_zip({"task.json": json.dumps({"schema": "certify-task/1"}).encode()})
    with pytest.raises(ValueError, match=r"task schema must be 'certify-task/2'; got 'certify-task/1'"):
        task_from_bytes(older, "model.zip")


def test_a_newer_shipped_source_is_refused_and_the_audit_computed_instead(tmp_path):
    dataset = SimpleNamespace(name="credit_data")  # the folder is found by name; nothing else is read
    shipped = tmp_path / "credit_data__logreg__seed0"
    shipped.mkdir()
    (shipped / SOURCE_FILE).write_text(json.dumps({"fingerprint": "0", "source": {"schema": "shipped-audit/99"}}))
    with pytest.raises(NewerFormatError, match=f"^{newer(shipped)}$"):
        read_source(shipped)
    assert shipped_audit(dataset, model="logreg", seed=0, root=tmp_path) is None
    assert shipped_glance(dataset, model="logreg", seed=0, root=tmp_path) is None


def test_the_shipped_sources_are_of_this_version():
    from core.tabular.shipped import SHIPPED_DIR

    folders = sorted(p for p in SHIPPED_DIR.iterdir() if (p / SOURCE_FILE).is_file())
    assert folders and all(read_source(p)["source"]["schema"] == "shipped-audit/1" for p in folders)


def test_a_saved_audit_records_who_made_it(audit, folder):
    result, _ = audit
    assert open_audit_folder(folder, load_model=False).made_by == ""
    assert json.loads((folder / "view" / "meta.json").read_text())["made_by"] == ""
    write_view(result, folder, made_by="ana@example.org")
    assert json.loads((folder / "view" / "meta.json").read_text())["made_by"] == "ana@example.org"
    saved = open_audit_folder(folder, load_model=False)
    assert saved.made_by == "ana@example.org"
    assert read_glance(folder / "view", result.fingerprint).made_by == "ana@example.org"
    assert saved_result(saved).fingerprint == result.fingerprint  # the view still reads whole


def test_a_folder_of_before_made_by_reads_as_unknown(audit, folder):
    result, _ = audit
    _edit_json(folder / "view" / "meta.json", lambda m: m.pop("made_by", None))
    _edit_json(folder / "view" / GLANCE_FILE, lambda g: g.pop("made_by", None))
    assert open_audit_folder(folder, load_model=False).made_by == ""
    assert read_glance(folder / "view", result.fingerprint).made_by == ""


@pytest.mark.parametrize("made_by", [None, 3, ["ana"]], ids=["none", "int", "list"])
def test_made_by_must_be_text(audit, folder, made_by):
    with pytest.raises(ValueError, match=r"`made_by` must be text .*; got "):
        write_view(audit[0], folder, made_by=made_by)


def test_a_glance_whose_made_by_is_not_text_is_refused(audit, folder):
    _edit_json(folder / "view" / GLANCE_FILE, lambda g: g.update(made_by=3))
    with pytest.raises(ValueError, match="'made_by' must be text; got 3"):
        read_glance(folder / "view", audit[0].fingerprint)
