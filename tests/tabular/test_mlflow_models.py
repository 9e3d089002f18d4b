"""Models from MLflow (``audit --model-uri``) and audits logged there (``--mlflow-experiment``).

Against a real ``mlflow server`` (SQLite backend, local artifacts, 127.0.0.1; tests/mlflow_kit.py)
shared by the module: the same logistic regression is logged with skops and as ONNX (once with
its tensors in an external data file, MLflow's default for large tensors), and two pickles are
planted whose unpickling would create a marker file. Auditing through every URI form gives the
certificates of auditing the file itself with ``--model-file``; the pickles are refused, never
downloaded (the server's access log has no request for them) and never run (no marker).
"""

from __future__ import annotations

import builtins
import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import yaml
from hypothesis import given
from hypothesis import strategies as st
from own_models import default_tables, logreg_to_onnx, raw_logreg

from core.cli import main
from core.optional import MissingExtraError
from core.tabular.mlflow_models import (
    PickleModelError,
    load_mlflow_model,
    model_file_of,
    parse_model_uri,
    tracking_uri_of,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import free_port  # noqa: E402
from mlflow_kit import MlflowServerMissingError, MlflowServerStartError, mlflow_server  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::FutureWarning")]


# --------------------------------------------------------------------------------------------
# URIs and MLmodel files (no server)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("uri", "fields"),
    [
        ("models:/credit/3", {"kind": "version", "name": "credit", "version": "3"}),
        ("models:/credit/latest", {"kind": "version", "name": "credit", "version": "latest"}),
        ("models:/credit@champion", {"kind": "alias", "name": "credit", "alias": "champion"}),
        ("runs:/0a1b2c/model", {"kind": "run", "run_id": "0a1b2c", "path": "model"}),
        ("runs:/0a1b2c/models/onnx/", {"kind": "run", "run_id": "0a1b2c", "path": "models/onnx"}),
    ],
    ids=["version", "latest", "alias", "run", "run-nested-slash"],
)
def test_model_uris_are_split(uri, fields):
    parsed = parse_model_uri(uri)
    assert {k: getattr(parsed, k) for k in fields} == fields
    assert parsed.uri == uri.rstrip("/")


@pytest.mark.parametrize(
    "uri",
    ["credit/3", "models:/credit", "models:/credit/three", "runs:/abc", "runs:/abc/../x", "s3://b/m", "models:/a@b/c"],
    ids=["no-scheme", "no-version", "word-version", "run-without-path", "dot-dot", "s3", "alias-with-path"],
)
def test_other_uris_are_refused_naming_the_forms(uri):
    with pytest.raises(ValueError, match=r"is not an MLflow model URI; expected models:/NAME/VERSION, "):
        parse_model_uri(uri)


@given(
    name=st.text(st.characters(codec="ascii", exclude_characters="/@?#", min_codepoint=33), min_size=1, max_size=20),
    version=st.integers(1, 10**6),
)
def test_any_registered_name_and_version_round_trip(name, version):
    parsed = parse_model_uri(f"models:/{name}/{version}")
    assert (parsed.kind, parsed.name, parsed.version) == ("version", name, str(version))


def test_the_tracking_uri_comes_from_the_option_then_the_environment(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://from-env:5000")
    assert tracking_uri_of("http://given:5000") == "http://given:5000"
    assert tracking_uri_of(None) == "http://from-env:5000"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    with pytest.raises(ValueError, match=r"no MLflow tracking server: give --mlflow-tracking-uri"):
        tracking_uri_of(None)


@pytest.mark.parametrize(
    ("flavors", "expected"),
    [
        ({"onnx": {"data": "model.onnx"}, "python_function": {}}, "model.onnx"),
        ({"sklearn": {"pickled_model": "model.skops", "serialization_format": "skops"}}, "model.skops"),
    ],
    ids=["onnx", "sklearn-skops"],
)
def test_the_readable_flavours_name_their_file(flavors, expected):
    assert model_file_of({"flavors": flavors}, where="m") == expected


@pytest.mark.parametrize(
    ("flavors", "match"),
    [
        ({"sklearn": {"pickled_model": "model.pkl", "serialization_format": "pickle"}}, "saved as pickle"),
        ({"sklearn": {"pickled_model": "model.pkl", "serialization_format": "cloudpickle"}}, "saved as cloudpickle"),
        ({"sklearn": {"pickled_model": "model.pkl"}}, "saved as pickle"),  # MLflow's default when absent
        ({"pytorch": {"model_data": "data"}, "python_function": {}}, "of flavour python_function, pytorch"),
        ({"python_function": {"cloudpickle_version": "3.1", "python_model": "python_model.pkl"}}, "python_function"),
    ],
    ids=["pickle", "cloudpickle", "format-absent", "pytorch", "custom-pyfunc"],
)
def test_pickle_flavours_are_refused_with_the_safe_way(flavors, match):
    with pytest.raises(PickleModelError, match=match) as info:
        model_file_of({"flavors": flavors}, where="models:/m/1")
    assert 'serialization_format="skops"' in str(info.value) and "mlflow.onnx.log_model" in str(info.value)


@pytest.mark.parametrize(
    "mlmodel",
    [None, {"flavors": {}}, {"flavors": {"onnx": {"data": "../model.onnx"}}}, {"flavors": {"onnx": {}}}],
    ids=["not-a-mapping", "no-flavour", "path-outside", "no-data"],
)
def test_malformed_mlmodel_files_are_refused(mlmodel):
    with pytest.raises(ValueError, match=r"^m: its MLmodel"):
        model_file_of(mlmodel, where="m")


def test_a_missing_mlflow_names_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"install reliability-audit\[mlflow\] to use --model-uri"):
        load_mlflow_model("models:/credit/1", tracking_uri="http://127.0.0.1:1")
    code = main(["audit", "--model-uri", "models:/credit/1", "--mlflow-tracking-uri", "http://127.0.0.1:1",
                 "--train", "t.csv", "--test", "t.csv", "--target", "y", "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2 and 'pip install "reliability-audit[mlflow]"' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model-file", "m.skops", "--model-uri", "models:/a/1"], "give one of --model-file FILE or --model-uri URI, not both."),
        (["--model-uri", "s3://b/m"], "--model-uri 's3://b/m' is not an MLflow model URI; expected models:/NAME/VERSION, models:/NAME@ALIAS or runs:/RUN_ID/PATH."),
        (["--model-uri", "models:/a/1", "--dataset", "credit_data"], "--model-uri replaces --dataset/--data: give --train and --test instead."),
        (["--dataset", "credit_data", "--mlflow-tracking-uri", "http://127.0.0.1:1"], "--mlflow-tracking-uri applies to --model-uri and --mlflow-experiment only."),
    ],
    ids=["file-and-uri", "not-a-uri", "uri-and-dataset", "tracking-uri-alone"],
)  # fmt: skip
def test_option_mistakes_are_one_line_before_any_request(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tables = [] if "--dataset" in args else ["--train", "t.csv", "--test", "t.csv", "--target", "y"]
    code = main(["audit", *args, *tables, "--out", str(tmp_path / "o")])
    assert code == 2 and capsys.readouterr().err.strip() == f"error: {message}"
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------------------------
# A real server
# --------------------------------------------------------------------------------------------
class _Planted:
    """Unpickling it opens (creates) ``marker``: proof that a pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def _planted_model(folder: Path, marker: Path, *, file_name: str) -> Path:
    """An MLflow scikit-learn model folder (cloudpickle format) whose pickle is a :class:`_Planted`."""
    import mlflow
    from sklearn.dummy import DummyClassifier

    model = DummyClassifier().fit([[0.0], [1.0]], [0, 1])
    mlflow.sklearn.save_model(model, str(folder), serialization_format="cloudpickle", pip_requirements=["scikit-learn"])
    (folder / "model.pkl").unlink()
    (folder / file_name).write_bytes(pickle.dumps(_Planted(marker)))
    mlmodel = yaml.safe_load((folder / "MLmodel").read_text())
    mlmodel["flavors"]["sklearn"]["pickled_model"] = file_name
    mlmodel["flavors"]["python_function"]["model_path"] = file_name
    (folder / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    return folder


def _mlp_onnx(train: pd.DataFrame) -> bytes:
    """A scaled MLP as ONNX: its weights are initializers (tensors), which MLflow may keep outside."""
    from onnx import numpy_helper
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    mlp = make_pipeline(StandardScaler(), MLPClassifier((8,), max_iter=300, random_state=0))
    mlp.fit(train[["balance", "income"]], train["default"])
    proto = convert_sklearn(mlp, initial_types=[("X", FloatTensorType([None, 2]))], target_opset=17)
    # As exporters of large models write them (raw bytes), the form onnx moves to external files.
    for tensor in proto.graph.initializer:
        tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor), tensor.name))
    assert sum(t.HasField("raw_data") for t in proto.graph.initializer) >= 4
    return proto.SerializeToString()


@pytest.fixture(scope="session")
def tracking_server(tmp_path_factory):
    """(URL, access log) of a started ``mlflow server``."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    try:
        with mlflow_server(folder) as url:
            yield url, folder / "server.log"
    except (MlflowServerMissingError, MlflowServerStartError) as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def logged(tracking_server, tmp_path_factory):
    """The model files, their tables, and the URIs under which the server holds them."""
    import mlflow
    import onnx
    from mlflow import MlflowClient

    url, _ = tracking_server
    d = tmp_path_factory.mktemp("mlflow-models")
    train, test = default_tables(n_train=600, n_test=80)
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    model = raw_logreg(train)
    sio.dump(model, d / "logreg.skops")
    (d / "logreg.onnx").write_bytes(logreg_to_onnx(model))
    (d / "mlp.onnx").write_bytes(_mlp_onnx(train))
    (d / "order.txt").write_text("balance\nincome\n")
    markers = {"pkl": d / "ran-pkl", "renamed": d / "ran-renamed", "probe": d / "ran-probe"}
    client = MlflowClient(url)
    mlflow.set_tracking_uri(url)
    try:
        mlflow.set_experiment("models")
        with mlflow.start_run() as run:
            # Explicit requirements: MLflow would otherwise infer them by loading the model in a subprocess.
            mlflow.sklearn.log_model(
                sio.load(d / "logreg.skops", trusted=[]),
                name="model",
                serialization_format="skops",
                registered_model_name="credit-skops",
                pip_requirements=["scikit-learn"],
            )
            mlflow.onnx.log_model(
                onnx.load(str(d / "logreg.onnx")),
                name="onnx",
                registered_model_name="credit-onnx",
                pip_requirements=["onnxruntime"],
            )
            # MLflow keeps tensors over 1 kB in a file beside model.onnx; forced for this small MLP.
            external = d / "onnx_external"
            mlflow.onnx.save_model(
                onnx.load(str(d / "mlp.onnx")), str(external), pip_requirements=["onnxruntime"], size_threshold=0
            )
            mlflow.log_artifacts(str(external), "onnx_external")
            for name, file_name in (("pkl", "model.pkl"), ("renamed", "model.bin")):
                folder = _planted_model(d / f"planted-{name}", markers[name], file_name=file_name)
                mlflow.log_artifacts(str(folder), f"planted-{name}")
        client.set_registered_model_alias("credit-onnx", "champion", "1")
        mlflow.register_model(f"runs:/{run.info.run_id}/planted-pkl", "planted")
    finally:
        mlflow.set_tracking_uri(None)
    (d / "probe.pkl").write_bytes(pickle.dumps(_Planted(markers["probe"])))
    return {"dir": d, "url": url, "run": run.info.run_id, "markers": markers, "external": external}


def _audit(capsys, logged, out, *model_args, env_uri: bool = False):
    d = logged["dir"]
    tracking = [] if env_uri else ["--mlflow-tracking-uri", logged["url"]]
    code = main(["audit", *model_args, "--train", str(d / "train.csv"), "--test", str(d / "test.csv"),
                 "--target", "default", "--out", str(out), "--no-progress", *tracking])  # fmt: skip
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def file_audits(logged, tmp_path_factory):
    """``audit --model-file`` of the two files that were logged: certificates by format."""
    d, out = logged["dir"], tmp_path_factory.mktemp("file-audits")
    tables = {}
    order = ["--feature-order", str(d / "order.txt")]
    for fmt, file, extra in (("skops", "logreg.skops", []), ("onnx", "logreg.onnx", order), ("mlp", "mlp.onnx", order)):
        code = main(["audit", "--model-file", str(d / file), "--train", str(d / "train.csv"),
                     "--test", str(d / "test.csv"), "--target", "default", "--out", str(out / fmt),
                     "--no-progress", *extra])  # fmt: skip
        assert code == 0
        tables[fmt] = pd.read_parquet(out / fmt / "certificates.parquet")
    return tables


URI_CASES = {
    "skops-version": ("skops", "models:/credit-skops/1"),
    "onnx-alias": ("onnx", "models:/credit-onnx@champion"),
    "skops-run": ("skops", "runs:/{run}/model"),
    "onnx-run-external-data": ("mlp", "runs:/{run}/onnx_external"),
}


@pytest.mark.parametrize("case", list(URI_CASES))
def test_every_uri_form_gives_the_certificates_of_the_file(logged, file_audits, tmp_path, capsys, case):
    fmt, uri = URI_CASES[case]
    uri = uri.format(run=logged["run"])
    extra = ["--feature-order", str(logged["dir"] / "order.txt")] if fmt != "skops" else []
    code, err = _audit(capsys, logged, tmp_path / "out", "--model-uri", uri, *extra)
    assert code == 0, err
    got = pd.read_parquet(tmp_path / "out" / "certificates.parquet")
    pd.testing.assert_frame_equal(got, file_audits[fmt])
    assert len(got) == 80 and got["flip_budget"].notna().any()
    assert json.loads((tmp_path / "out" / "protocol.json").read_text())["model"] == uri


def test_the_tracking_uri_may_come_from_the_environment(logged, file_audits, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", logged["url"])
    code, err = _audit(capsys, logged, tmp_path / "out", "--model-uri", "models:/credit-skops/1", env_uri=True)
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "certificates.parquet"), file_audits["skops"])


def test_the_planted_pickle_runs_when_unpickled(logged):
    # The plant is live: unpickled (in a child process), it creates its marker.
    marker = logged["markers"]["probe"]
    code = "import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read())"
    subprocess.run([sys.executable, "-c", code, str(logged["dir"] / "probe.pkl")], check=True, timeout=60)
    assert marker.exists()


@pytest.mark.parametrize(
    ("uri", "marker", "files", "match"),
    [
        ("models:/planted/1", "pkl", ("model.pkl",), "holds model.pkl, a pickle that runs code"),
        ("runs:/{run}/planted-pkl", "pkl", ("model.pkl",), "holds model.pkl, a pickle that runs code"),
        ("runs:/{run}/planted-renamed", "renamed", ("model.bin",), "is a scikit-learn model saved as cloudpickle"),
    ],
    ids=["registered", "run", "renamed-file-mlmodel-says-cloudpickle"],
)
def test_pickle_models_are_refused_unread(logged, tracking_server, tmp_path, capsys, uri, marker, files, match):
    uri = uri.format(run=logged["run"])
    _, log = tracking_server
    before = log.read_text()
    code, err = _audit(capsys, logged, tmp_path / "out", "--model-uri", uri)
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: ") and uri in line and match in line
    assert 'serialization_format="skops"' in line and "mlflow.onnx.log_model" in line
    assert not logged["markers"][marker].exists()
    requests = log.read_text()[len(before) :]
    assert "GET" in requests  # the listing (and the MLmodel file) were asked for ...
    assert not any(f in requests for f in files)  # ... the pickle never was
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("models:/no-such-model/1", "registered model 'no-such-model' version 1"),
        ("models:/credit-onnx/9", "registered model 'credit-onnx' version 9"),
        ("models:/credit-onnx@no-such-alias", "registered model 'credit-onnx' with alias 'no-such-alias'"),
        ("runs:/0123456789abcdef0123456789abcdef/model", "model 'model' of run 0123456789abcdef0123456789abcdef"),
        ("runs:/{run}/no-such-path", "model 'no-such-path' of run {run}"),
    ],
    ids=["model", "version", "alias", "run", "path"],
)
def test_an_unknown_model_is_named(logged, tmp_path, capsys, uri, named):
    uri, named = uri.format(run=logged["run"]), named.format(run=logged["run"])
    code, err = _audit(capsys, logged, tmp_path / "out", "--model-uri", uri)
    assert code == 2
    assert err.strip() == f"error: {uri}: MLflow at {logged['url']} has no {named}."


def test_an_unreachable_server_is_named(logged, tmp_path):
    # A separate process with MLflow's retry settings unset: the tool's own quick ones apply.
    # (The timeout only stops a hang; the time is not a check.)
    d, url = logged["dir"], f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    for model_args in (
        ["--model-uri", "models:/credit-skops/1"],  # reading the model
        ["--model-file", str(d / "logreg.skops"), "--mlflow-experiment", "audits"],  # checked before the audit
    ):
        args = [sys.executable, "-m", "core", "audit", *model_args, "--mlflow-tracking-uri", url,
                "--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--target", "default",
                "--out", str(tmp_path / "out")]  # fmt: skip
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert done.stderr.strip() == (
            f"error: cannot reach the MLflow tracking server at {url} (connection refused); check the URI "
            "(--mlflow-tracking-uri or MLFLOW_TRACKING_URI) and that the server is running."
        )
        assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# Audits logged to MLflow
# --------------------------------------------------------------------------------------------
def _check_run(client, run_id, folder: Path, *, model_uri: str | None):
    """The run holds the folder's finite figures, its protocol params, the folder and the report."""
    from core.gate import gate_metrics
    from core.mlflow_log import protocol_params

    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    want = {k: v for k, v in gate_metrics(folder).values.items() if math.isfinite(v)}
    assert run.data.metrics == want
    assert {"share_brittle", "mean_rcma", "share_k_le_2", "accuracy", "n_test"} <= set(want)
    assert any(k.startswith("calibration.") for k in want) and any(k.startswith("fds.") for k in want)
    protocol = json.loads((folder / "protocol.json").read_text())
    assert run.data.params == protocol_params(protocol)
    assert run.data.params["protocol.baseline"] == protocol["protocol"]["baseline"]
    assert run.data.params["label_channel.tau_p"] == str(protocol["label_channel"]["tau_p"])
    tags = run.data.tags
    assert tags["reliability_audit.certificate_fingerprint"] == protocol["certificate_fingerprint"]
    assert tags.get("reliability_audit.model_uri") == model_uri
    top = {f.path for f in client.list_artifacts(run_id)}
    assert top == {"audit", "report.html"}
    logged_files = {Path(f.path).name for f in client.list_artifacts(run_id, "audit")}
    assert logged_files == {p.name for p in folder.iterdir()}
    return run


def test_an_audit_is_logged_to_an_experiment(logged, tmp_path, capsys):
    from mlflow import MlflowClient

    out = tmp_path / "out"
    code, err = _audit(capsys, logged, out, "--model-uri", "models:/credit-skops/1", "--mlflow-experiment", "audits")
    assert code == 0, err
    client = MlflowClient(logged["url"])
    experiment = client.get_experiment_by_name("audits")
    (run,) = client.search_runs([experiment.experiment_id])
    assert f"run {run.info.run_id}" in err.splitlines()[-1]
    _check_run(client, run.info.run_id, out, model_uri="models:/credit-skops/1")
    local = client.download_artifacts(run.info.run_id, "audit/evaluation.json", str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (out / "evaluation.json").read_bytes()
    report = Path(client.download_artifacts(run.info.run_id, "report.html", str(tmp_path / "dl"))).read_text()
    fingerprint = json.loads((out / "protocol.json").read_text())["certificate_fingerprint"]
    assert report.startswith("<!DOCTYPE html>") and fingerprint[:12] in report


def test_the_notebook_api_logs_an_audit_result(logged, tmp_path):
    from mlflow import MlflowClient

    from core import audit_model, log_audit_to_mlflow

    d = logged["dir"]
    model = sio.load(d / "logreg.skops", trusted=[])
    result = audit_model(model, pd.read_csv(d / "train.csv"), pd.read_csv(d / "test.csv"), target="default")
    done = log_audit_to_mlflow(result, experiment="notebook", tracking_uri=logged["url"], run_name="from python")
    client = MlflowClient(logged["url"])
    assert client.get_experiment(done.experiment_id).name == "notebook"
    assert client.get_run(done.run_id).info.run_name == "from python"
    result.save(tmp_path / "saved")
    _check_run(client, done.run_id, tmp_path / "saved", model_uri=None)
    assert done.n_metrics == len(client.get_run(done.run_id).data.metrics) > 10
    # The same audit, logged from its folder, gives the same figures.
    again = log_audit_to_mlflow(tmp_path / "saved", experiment="notebook", tracking_uri=logged["url"])
    assert client.get_run(again.run_id).data.metrics == client.get_run(done.run_id).data.metrics


def test_bad_logging_input_is_one_line(logged, tmp_path, capsys):
    from core import log_audit_to_mlflow

    with pytest.raises(ValueError, match=r"`experiment` must be a non-empty experiment name; got ' '"):
        log_audit_to_mlflow(tmp_path, experiment=" ", tracking_uri=logged["url"])
    with pytest.raises(ValueError, match=r"is not an audit folder"):
        log_audit_to_mlflow(tmp_path, experiment="x", tracking_uri=logged["url"])
    code, err = _audit(capsys, logged, tmp_path / "o", "--model-file", str(logged["dir"] / "logreg.skops"),
                       "--mlflow-experiment", "")  # fmt: skip
    assert code == 2 and err.strip() == "error: --mlflow-experiment needs an experiment name; got ''."
    code = main(["audit", "--datasets", "breast_cancer,wa_churn", "--model", "logreg", "--out", str(tmp_path / "s"),
                 "--mlflow-experiment", "x", "--mlflow-tracking-uri", logged["url"]])  # fmt: skip
    assert code == 2 and "--mlflow-experiment logs one audit" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_onnx_external_data_is_read_back(logged):
    """The ONNX model with external tensors gives the probabilities of the single-file one."""
    from core.tabular.mlflow_models import _external_data_files, _inline_external_data
    from core.tabular.model_files import load_model_file

    external = logged["external"] / "model.onnx"
    files = _external_data_files(external)
    assert files and all((logged["external"] / f).is_file() for f in files)
    order = ["balance", "income"]
    single = load_model_file(logged["dir"] / "mlp.onnx", feature_order=order)
    from core.tabular.onnx_model import OnnxClassifier

    inlined = OnnxClassifier(_inline_external_data(external), feature_order=order)
    test = pd.read_csv(logged["dir"] / "test.csv")
    np.testing.assert_array_equal(inlined.predict_proba(test), single.predict_proba(test))
