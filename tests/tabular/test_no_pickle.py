"""A planted pickle payload never runs, wherever the tool reads models or tasks.

The payload's ``__reduce__`` creates a marker file when unpickled. It is planted as the
legacy ``_task.pkl`` (``certify --model-from``, resume of ``certify --out``, an audit folder
opened by the dashboard), inside a ``_task.zip`` in place of each model member, and as an
uploaded / ``--model-file`` model under every suffix. Every read must refuse it (a clear
error or "model unavailable") and the marker must never appear.
"""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from core.cli import main
from core.scale.certify import load_certify_task
from core.tabular.audit_folder import open_audit_folder
from core.tabular.model_files import load_model_bytes

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "the planted pickle payload ran"


@pytest.fixture
def payload(marker) -> bytes:
    data = pickle.dumps(Payload(marker))
    # The fixture itself proves the payload is live: unpickling it in a child process fires it.
    probe = marker.with_name("probe")
    subprocess.run(
        [sys.executable, "-c", "import pickle,sys; pickle.loads(sys.stdin.buffer.read())"],
        input=pickle.dumps(Payload(probe)),
        check=True,
    )
    assert probe.exists()
    return data


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory):
    """A real audit folder of the tool (tiny logreg audit) with a genuine _task.zip."""
    out = tmp_path_factory.mktemp("audit") / "a"
    code = main(
        [
            "audit",
            "--dataset",
            "breast_cancer",
            "--model",
            "logreg",
            "--depth",
            "2",
            "--draws",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_legacy_task_pkl_is_refused_everywhere(tmp_path, payload, marker, audit_dir, capsys):
    legacy = _copy(audit_dir, tmp_path / "legacy")
    (legacy / "_task.zip").unlink()
    (legacy / "_task.pkl").write_bytes(payload)
    data = tmp_path / "data.csv"
    import pandas as pd

    pd.read_parquet(legacy / "test.parquet").to_csv(data, index=False)
    # certify --model-from FOLDER and --model-from FILE
    for source in (legacy, legacy / "_task.pkl"):
        code = main(["certify", "--model-from", str(source), "--data", str(data), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and "pickles are no longer loaded" in err and "Re-create it" in err
    # resume of certify --out over a folder holding an old _task.pkl
    out = tmp_path / "resume"
    out.mkdir()
    (out / "_task.pkl").write_bytes(payload)
    (out / "_manifest.json").write_text("{}")
    code = main(["certify", "--data", str(data), "--target", "target", "--out", str(out)])
    assert code == 2 and "pickles are no longer loaded" in capsys.readouterr().err
    # the dashboard's --audit DIR / audits directory
    saved = open_audit_folder(legacy)
    assert saved.task is None and "_task.pkl" in saved.unavailable and "never loaded" in saved.unavailable


@pytest.mark.parametrize("member", ["model/model.skops", "pre/transformer.skops", "task.json"])
def test_pickles_inside_a_task_zip_never_run(tmp_path, payload, marker, audit_dir, member):
    folder = _copy(audit_dir, tmp_path / "planted")
    with zipfile.ZipFile(folder / "_task.zip") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    assert member in members
    members[member] = payload
    with zipfile.ZipFile(folder / "_task.zip", "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(ValueError):
        load_certify_task(folder)
    saved = open_audit_folder(folder)
    assert saved.task is None and "could not be loaded" in saved.unavailable


def test_a_torch_state_dict_holding_a_payload_is_refused(tmp_path, payload, marker):
    import torch

    from core.tabular.persist import load_estimator

    buf = io.BytesIO()
    torch.save({"weight": Payload(marker)}, buf)  # a torch file whose pickle carries the payload
    spec = {
        "family": "torch",
        "meta": {"class": "ResMLPClassifier", "params": {}, "classes": [0, 1], "n_features_in": 3},
    }
    with pytest.raises(ValueError, match="not weights-only|corrupt"):
        load_estimator({"model/state_dict.pt": buf.getvalue()}, spec, "model/")


@pytest.mark.parametrize("name", ["model.skops", "model.onnx", "model.pkl", "model.joblib", "model.pickle"])
def test_model_uploads_and_model_files_never_unpickle(tmp_path, payload, marker, capsys, name):
    with pytest.raises(ValueError):
        load_model_bytes(payload, name)  # the dashboard's upload path
    path = tmp_path / name
    path.write_bytes(payload)
    train = tmp_path / "t.csv"
    train.write_text("a,y\n1,0\n2,1\n")
    code = main(
        [
            "audit",
            "--model-file",
            str(path),
            "--train",
            str(train),
            "--test",
            str(train),
            "--target",
            "y",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2 and not (tmp_path / "out").exists()
    capsys.readouterr()


def test_skops_file_with_a_payload_member_never_runs(tmp_path, payload, marker):
    """A zip that looks like skops but carries a pickled member under an untrusted type."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    good = sio.dumps(LogisticRegression().fit([[0.0], [1.0]], [0, 1]))
    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    schema = json.loads(members["schema.json"])
    schema["content"]["content"]["evil"] = {
        "__class__": "Payload",
        "__module__": "builtins",
        "__loader__": "ObjectNode",
        "content": {
            "__class__": "dict",
            "__module__": "builtins",
            "__loader__": "DictNode",
            "content": {},
            "__id__": 1,
        },
        "__id__": 2,
    }
    members["schema.json"] = json.dumps(schema).encode()
    members["evil.pkl"] = payload
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    with pytest.raises(ValueError):
        load_model_bytes(buf.getvalue(), "crafted.skops")


def test_no_load_of_user_data_goes_through_pickle_or_joblib():
    """``grep -rn "pickle\\|joblib" core ui pages app.py`` names no load: only refusals and docs."""
    hits = subprocess.run(
        ["grep", "-rn", r"pickle\|joblib", "core", "ui", "pages", "app.py"], cwd=ROOT, capture_output=True, text=True
    ).stdout.splitlines()
    loads = [
        h
        for h in hits
        if any(
            k in h
            for k in (
                "pickle.load",
                "joblib.load",
                "import pickle",
                "import joblib",
                "allow_pickle=True",
                "weights_only=False",
            )
        )
    ]
    assert loads == [], loads
