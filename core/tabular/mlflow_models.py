"""Models from an MLflow tracking server or registry, read without running their code.

``audit --model-uri URI`` and :func:`load_mlflow_model` take the three kinds of MLflow model URI:
``models:/NAME/VERSION``, ``models:/NAME@ALIAS`` and ``runs:/RUN_ID/PATH``. Only what the
project's own readers take is loaded, through them (:mod:`core.tabular.model_files`):

- the ``onnx`` flavour, run by onnxruntime (:class:`core.tabular.onnx_model.OnnxClassifier`);
  tensors MLflow saved as external data files beside the model are read back into it;
- the ``sklearn`` flavour saved with ``serialization_format="skops"``, read by skops with the
  trust rules of ``--model-file`` (:func:`core.tabular.persist.load_skops`,
  :mod:`core.tabular.never_trusted`).

A ``pickle`` or ``cloudpickle`` model, any other flavour, and a model folder that holds a pickle
file are refused before a byte of the model is downloaded (:class:`PickleModelError`): the
listing of the model's files and its ``MLmodel`` file (YAML, read with ``yaml.safe_load``) are
all that is read. ``mlflow.pyfunc.load_model`` and the flavours' own loaders are never called.

MLflow itself (``mlflow-skinny`` is enough: the ``mlflow`` extra) is imported only when a
function here runs (:func:`core.optional.require`). Requests to the server use short timeouts
and one retry unless ``MLFLOW_HTTP_REQUEST_*`` says otherwise, so an unreachable server is
reported in seconds, naming its URI (:class:`TrackingServerError`).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

__all__ = [
    "MODEL_URI_FORMS",
    "TRACKING_URI_ENV",
    "ModelUri",
    "PickleModelError",
    "TrackingServerError",
    "load_mlflow_model",
    "mlflow_requests",
    "model_file_of",
    "parse_model_uri",
    "require_mlflow",
    "tracking_uri_of",
]

#: The model URIs accepted, as the messages spell them.
MODEL_URI_FORMS = ("models:/NAME/VERSION", "models:/NAME@ALIAS", "runs:/RUN_ID/PATH")
#: Where the tracking URI comes from when none is given.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
#: How to log a scikit-learn model that can be read without running code.
LOG_SAFELY = (
    'log it with skops, mlflow.sklearn.log_model(model, name="model", serialization_format="skops"), '
    'or as ONNX, mlflow.onnx.log_model(skl2onnx.to_onnx(model, X[:1].astype("float32")), name="model") '
    "(docs/mlflow.md)"
)
# MLflow's own defaults wait minutes for an unreachable server (120 s timeout, 7 retries with
# exponential back-off); its download bars would clutter the command's output, and its usage
# telemetry would send data elsewhere than the server the user named. A user's own setting of
# any of these is kept.
_QUICK_REQUESTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
}
# mlflow.set_registry_uri also writes this variable; it is put back on exit.
_REGISTRY_ENV = "MLFLOW_REGISTRY_URI"
_MAX_MLMODEL_BYTES = 1 << 20
_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav", ".dill", ".cloudpkl", ".pt", ".pth")
_URI = re.compile(
    r"^models:/(?P<name>[^/@]+)(?:/(?P<version>[0-9]+|latest)|@(?P<alias>[^/@]+))/?$"
    r"|^runs:/(?P<run>[0-9A-Za-z_-]+)/(?P<path>[^?#]+?)/?$"
)


class TrackingServerError(ValueError):
    """The MLflow tracking server did not answer; the message names its URI."""


class PickleModelError(ValueError):
    """An MLflow model that only a pickle-style loader could read: refused, never downloaded."""


@dataclass(frozen=True)
class ModelUri:
    """A parsed MLflow model URI.

    Attributes
    ----------
    uri : str
        As given (a trailing ``/`` removed).
    kind : {"version", "alias", "run"}
    name : str or None
        Registered model name (``models:/`` URIs).
    version : str or None
        ``"3"`` or ``"latest"``.
    alias : str or None
    run_id, path : str or None
        ``runs:/RUN_ID/PATH``.
    """

    uri: str
    kind: Literal["version", "alias", "run"]
    name: str | None = None
    version: str | None = None
    alias: str | None = None
    run_id: str | None = None
    path: str | None = None

    @property
    def label(self) -> str:
        """The model as a sentence names it: ``registered model 'credit' version 3``."""
        if self.kind == "version":
            return f"registered model {self.name!r} version {self.version}"
        if self.kind == "alias":
            return f"registered model {self.name!r} with alias {self.alias!r}"
        return f"model {self.path!r} of run {self.run_id}"


def parse_model_uri(text: str) -> ModelUri:
    """Check and split an MLflow model URI.

    Examples
    --------
    >>> parse_model_uri("models:/credit@champion").label
    "registered model 'credit' with alias 'champion'"
    >>> parse_model_uri("runs:/0a1b/model").path
    'model'
    >>> parse_model_uri("s3://bucket/model")
    Traceback (most recent call last):
    ...
    ValueError: --model-uri 's3://bucket/model' is not an MLflow model URI; expected models:/NAME/VERSION, models:/NAME@ALIAS or runs:/RUN_ID/PATH.
    """
    if not isinstance(text, str):
        raise ValueError(f"--model-uri must be a string; got {type(text).__name__}.")
    match = _URI.match(text.strip())
    path = match["path"] if match else None
    if match is None or (path is not None and any(part in ("", ".", "..") for part in path.split("/"))):
        raise ValueError(
            f"--model-uri {text!r} is not an MLflow model URI; expected {', '.join(MODEL_URI_FORMS[:-1])} "
            f"or {MODEL_URI_FORMS[-1]}."
        )
    uri = text.strip().rstrip("/")
    if match["run"] is not None:
        return ModelUri(uri, "run", run_id=match["run"], path=path)
    if match["alias"] is not None:
        return ModelUri(uri, "alias", name=match["name"], alias=match["alias"])
    return ModelUri(uri, "version", name=match["name"], version=match["version"])


def tracking_uri_of(given: str | None) -> str:
    """The tracking server to use: ``given``, else ``$MLFLOW_TRACKING_URI``.

    Raises
    ------
    ValueError
        Neither is set (MLflow's own fallback, a folder of the working directory, would hide a
        forgotten setting behind an empty store).
    """
    uri = (given or "").strip() or os.environ.get(TRACKING_URI_ENV, "").strip()
    if not uri:
        raise ValueError(
            f"no MLflow tracking server: give --mlflow-tracking-uri URI (Python: tracking_uri=...) "
            f"or set {TRACKING_URI_ENV}."
        )
    return uri


@contextmanager
def mlflow_requests(tracking_uri: str, *, what: str) -> Iterator[Any]:
    """MLflow imported (the ``mlflow`` extra), pointed at one server, quick, failing in one line.

    Yields the ``mlflow`` module with its tracking URI set to ``tracking_uri`` and its registry
    URI to ``$MLFLOW_REGISTRY_URI`` or the same server (parts of MLflow's artifact code read
    these global settings whatever URI they are given). Inside, an MLflow error whose request
    never got an answer becomes :class:`TrackingServerError` naming ``tracking_uri``; any
    other MLflow error a ``ValueError`` quoting MLflow's reason. The process environment and
    MLflow's settings are restored on exit (a notebook keeps its own).
    """
    mlflow = require_mlflow(what)
    from mlflow.exceptions import MlflowException
    from mlflow.tracking._model_registry import utils as registry_settings
    from mlflow.tracking._tracking_service import utils as tracking_settings

    saved = {key: os.environ.get(key) for key in (*_QUICK_REQUESTS, _REGISTRY_ENV)}
    for key, value in _QUICK_REQUESTS.items():
        os.environ.setdefault(key, value)
    old_tracking = getattr(tracking_settings, "_tracking_uri", None)
    old_registry = getattr(registry_settings, "_registry_uri", None)
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(os.environ.get(_REGISTRY_ENV) or tracking_uri)
    try:
        yield mlflow
    except MlflowException as exc:
        raise _one_line(exc, tracking_uri) from None
    finally:
        mlflow.set_tracking_uri(old_tracking)
        registry_settings._registry_uri = old_registry
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def require_mlflow(what: str) -> Any:
    """``mlflow`` (``mlflow-skinny`` is enough), or :class:`core.optional.MissingExtraError`."""
    from core.optional import require

    return require("mlflow", extra="mlflow", what=what)


def _one_line(exc: Exception, tracking_uri: str) -> ValueError:
    text = " ".join(str(getattr(exc, "message", exc)).split())
    # rest_utils words every request that got no HTTP answer "API request to URL failed with
    # (timeout) exception ..."; an answer with an error status is a RestException instead.
    if text.startswith("API request to ") and " failed with " in text and "error code" not in text:
        reason = "connection refused" if "refused" in text.lower() else "no answer"
        if "timeout" in text.lower() or "timed out" in text.lower():
            reason = "timed out"
        return TrackingServerError(
            f"cannot reach the MLflow tracking server at {tracking_uri} ({reason}); check the URI "
            f"(--mlflow-tracking-uri or {TRACKING_URI_ENV}) and that the server is running."
        )
    return ValueError(f"MLflow at {tracking_uri}: {text}")


def model_file_of(mlmodel: Any, *, where: str) -> str:
    """The file of an MLflow model that the tool reads, from its parsed ``MLmodel``.

    Parameters
    ----------
    mlmodel : mapping
        The ``MLmodel`` file, parsed (``yaml.safe_load``).
    where : str
        The model's URI, for messages.

    Returns
    -------
    str
        The ``onnx`` flavour's ``data`` file, else the ``sklearn`` flavour's ``pickled_model``
        when its ``serialization_format`` is ``skops``: a plain file name of the model folder.

    Raises
    ------
    PickleModelError
        A scikit-learn model in ``pickle`` or ``cloudpickle`` format (MLflow's default when the
        field is absent), or a flavour the tool cannot read without running its code.
    ValueError
        Not an ``MLmodel`` mapping with flavours, or a file entry that is not a plain file name.

    Examples
    --------
    >>> model_file_of({"flavors": {"onnx": {"data": "model.onnx"}}}, where="m")
    'model.onnx'
    >>> model_file_of({"flavors": {"sklearn": {"pickled_model": "model.pkl"}}}, where="m")
    Traceback (most recent call last):
    ...
    core.tabular.mlflow_models.PickleModelError: m is a scikit-learn model saved as pickle: a pickle runs code when it is loaded, so it was not downloaded or read. Instead, log it with skops, mlflow.sklearn.log_model(model, name="model", serialization_format="skops"), or as ONNX, mlflow.onnx.log_model(skl2onnx.to_onnx(model, X[:1].astype("float32")), name="model") (docs/mlflow.md).
    """
    flavors = mlmodel.get("flavors") if isinstance(mlmodel, Mapping) else None
    if not isinstance(flavors, Mapping) or not flavors:
        raise ValueError(f"{where}: its MLmodel file names no flavour (a mapping 'flavors:' was expected).")
    onnx, sklearn = flavors.get("onnx"), flavors.get("sklearn")
    if isinstance(onnx, Mapping):
        return _plain_file(onnx.get("data"), where=where, field="its MLmodel 'onnx: data'")
    if isinstance(sklearn, Mapping):
        fmt = sklearn.get("serialization_format") or "pickle"
        if fmt != "skops":
            raise PickleModelError(
                f"{where} is a scikit-learn model saved as {fmt}: a pickle runs code when it is loaded, "
                f"so it was not downloaded or read. Instead, {LOG_SAFELY}."
            )
        return _plain_file(sklearn.get("pickled_model"), where=where, field="its MLmodel 'sklearn: pickled_model'")
    names = ", ".join(sorted(str(f) for f in flavors))
    raise PickleModelError(
        f"{where} is an MLflow model of flavour {names}, which only MLflow's own loader reads (it may unpickle "
        f"code); only the onnx flavour and scikit-learn saved with skops are read. Instead, {LOG_SAFELY}."
    )


def _plain_file(value: Any, *, where: str, field: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError(f"{where}: {field} should be a file name of the model folder; got {value!r}.")
    return value


def _refuse_pickles(names: Sequence[str], *, where: str) -> None:
    pickles = [n for n in names if n.lower().endswith(_PICKLE_SUFFIXES)]
    if pickles:
        raise PickleModelError(
            f"{where} holds {', '.join(sorted(pickles))}, a pickle that runs code when it is loaded; the model "
            f"was not downloaded or read. Instead, {LOG_SAFELY}."
        )


def _external_data_files(model_path: Path) -> list[str]:
    """File names of the tensors an ONNX model keeps outside itself (MLflow's default)."""
    import onnx
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    try:
        model = onnx.load(str(model_path), load_external_data=False)
    except Exception:  # not ONNX at all: the loader says so, with its own reason
        return []
    files = set()
    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            location = {e.key: e.value for e in tensor.external_data}.get("location", "")
            files.add(_plain_file(location, where=model_path.name, field="the location of its external tensor data"))
    return sorted(files)


def _inline_external_data(model_path: Path) -> bytes:
    """The ONNX model with its external tensors read back in (onnx checks each stays in the folder)."""
    import onnx

    try:
        model = onnx.load(str(model_path), load_external_data=True)
    except Exception as exc:
        raise ValueError(f"{model_path.name}: its external tensor data could not be read ({exc}).") from None
    return model.SerializeToString()


def load_mlflow_model(
    model_uri: str,
    *,
    tracking_uri: str | None = None,
    trust: Sequence[str] = (),
    feature_order: Sequence[str] | None = None,
    default_classes: Sequence[Any] | None = None,
) -> Any:
    """The fitted classifier of an MLflow model URI, read as ``audit --model-file`` reads files.

    Parameters
    ----------
    model_uri : str
        ``models:/NAME/VERSION``, ``models:/NAME@ALIAS`` or ``runs:/RUN_ID/PATH``.
    tracking_uri : str, optional
        The tracking server (``http://host:5000``); default ``$MLFLOW_TRACKING_URI``. The
        registry is the same server unless ``$MLFLOW_REGISTRY_URI`` says otherwise.
    trust, feature_order, default_classes
        As :func:`core.tabular.model_files.load_model_bytes` (``--trust``, ``--feature-order``).

    Returns
    -------
    estimator
        A skops-loaded scikit-learn model or an :class:`~core.tabular.onnx_model.OnnxClassifier`.

    Raises
    ------
    PickleModelError
        A pickle-format model, another flavour, or a pickle file in the model folder: refused
        with the way to log it instead; the model file is never downloaded.
    TrackingServerError
        The server did not answer (its URI named).
    ValueError
        Not a model URI, a model or run the server does not have (named), not an MLflow model
        folder, or the model file refused by its reader (untrusted skops types, corrupt file).
    """
    import yaml

    from core.tabular.model_files import load_model_bytes
    from core.tabular.never_trusted import check_trust_list

    parsed = parse_model_uri(model_uri)
    where = parsed.uri
    trust = check_trust_list(trust, where=where)  # a never-trusted type is refused before any request
    tracking = tracking_uri_of(tracking_uri)
    with (
        mlflow_requests(tracking, what="--model-uri (models from MLflow)") as mlflow,
        tempfile.TemporaryDirectory(prefix="mlflow-model-") as tmp,
    ):
        from mlflow.exceptions import MlflowException
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        try:
            repo = get_artifact_repository(parsed.uri, tracking_uri=tracking, registry_uri=mlflow.get_registry_uri())
            listing = repo.list_artifacts(None)
        except MlflowException as exc:
            raise _missing(exc, parsed, tracking) from None
        sizes = {PurePosixPath(f.path).name: f.file_size for f in listing or () if not f.is_dir}
        names = list(sizes)
        if not names:
            raise ValueError(f"{where}: MLflow at {tracking} has no {parsed.label}.")
        _refuse_pickles(names, where=where)
        if "MLmodel" not in names:
            raise ValueError(f"{where} is not an MLflow model (no MLmodel file among {', '.join(sorted(names)[:10])}).")
        if (sizes["MLmodel"] or 0) > _MAX_MLMODEL_BYTES:
            raise ValueError(f"{where}: its MLmodel file has {sizes['MLmodel']} bytes; an MLmodel file is a few kB.")

        def download(name: str) -> Path:
            return Path(repo.download_artifacts(name, dst_path=tmp))

        try:
            mlmodel = yaml.safe_load(download("MLmodel").read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ValueError(f"{where}: its MLmodel file is not YAML ({' '.join(str(exc).split())}).") from None
        name = model_file_of(mlmodel, where=where)
        _refuse_pickles([name], where=where)
        if name not in names:
            raise ValueError(f"{where}: its MLmodel names {name!r}, which is not among the model's files.")
        path = download(name)
        data = path.read_bytes()
        if path.suffix.lower() == ".onnx":
            external = _external_data_files(path)
            missing = [f for f in external if f not in names]
            if missing:
                raise ValueError(f"{where}: {name} keeps tensors in {', '.join(missing)}, which the model lacks.")
            if external:
                for extra in external:
                    download(extra)
                data = _inline_external_data(path)
        return load_model_bytes(
            data,
            f"{where}/{name}",
            trust=trust,
            feature_order=feature_order,
            default_classes=default_classes,
        )


def _missing(exc: Exception, parsed: ModelUri, tracking: str) -> Exception:
    """A request about the model that failed: the server unreachable, or no such model / run."""
    error = _one_line(exc, tracking)
    if isinstance(error, TrackingServerError):
        return error
    code = str(getattr(exc, "error_code", ""))
    if code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND") or "not found" in str(exc).lower():
        return ValueError(f"{parsed.uri}: MLflow at {tracking} has no {parsed.label}.")
    return error
