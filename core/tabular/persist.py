"""Saving and loading fitted models without pickle: one small table of model families.

Nothing here unpickles. Every family writes named byte members and a JSON ``meta`` dict, and
reads them back with a format that cannot run code on load:

==============  =============================================================================
family          members
==============  =============================================================================
``xgboost``     ``model.json``: XGBoost's own JSON model (``save_model`` / ``load_model``)
``lightgbm``    ``model.txt``: LightGBM's text model (``model_to_string``); loaded as a
                :class:`BoosterClassifier` (``predict_proba`` over the booster)
``catboost``    ``model.cbm``: CatBoost's own binary model (``save_model`` / ``load_model``)
``torch``       ``state_dict.pt``: the module's ``state_dict``, read with
                ``torch.load(weights_only=True)``; constructor parameters in ``meta``
``onnx``        ``model.onnx``: run with onnxruntime (:mod:`core.tabular.onnx_model`)
``sklearn``     ``model.skops``: :mod:`skops.io`; only skops' trusted types plus
                :data:`OWN_TRUSTED_TYPES` (and types the caller names) are loaded, and
                never a type of :mod:`core.tabular.never_trusted`, whoever names it
==============  =============================================================================

A family is picked by :func:`family_of` (first match in :data:`FAMILIES` order, ``sklearn``
last). Adding a model library means adding one entry to :data:`FAMILIES`.

:func:`write_archive` / :func:`read_archive` bundle members into one deterministic zip file
(fixed timestamps, sorted names), so that equal contents give equal bytes and digests.
"""

from __future__ import annotations

import inspect
import io
import json
import sys
import tempfile
import types
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from core.atomic import atomic_write_bytes
from core.optional import require, skops_io
from core.tabular.never_trusted import NeverTrustedTypeError, check_trust_list, refuse_never_trusted

__all__ = [
    "FAMILIES",
    "HARMLESS_TYPES",
    "OWN_TRUSTED_TYPES",
    "BoosterClassifier",
    "NeverTrustedTypeError",
    "SkopsType",
    "UntrustedTypesError",
    "dump_skops",
    "family_of",
    "load_estimator",
    "load_skops",
    "normalised_zip",
    "read_archive",
    "save_estimator",
    "skops_types",
    "unzip_members",
    "write_archive",
]

#: Types outside skops' default trusted set that the tool's own files contain (plain data
#: holders of scikit-learn's trees, boosting predictors and optimiser state, and NumPy dtypes).
#: Loaded from the tool's own task and audit files; a user's ``.skops`` file gets no such
#: allowance (its extra types must be named by the user, e.g. ``--trust``).
OWN_TRUSTED_TYPES: frozenset[str] = frozenset(
    {
        "numpy.dtype",
        "sklearn.tree._tree.Tree",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
        "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    }
)

#: Types outside skops' trusted set that any ``.skops`` file, a user's included, may hold without
#: being named: NumPy's data-type descriptor. skops stores a dtype as an empty array of that
#: dtype (``.npy``, read without pickle) and rebuilds it as ``array.dtype``; loading runs NumPy's
#: own code only, never code the file brings. skops 0.16 still reports it as untrusted, so every
#: pipeline with a ``SimpleImputer`` (whose fitted state holds a dtype) asked users to trust it
#: without anything to judge. Everything else stays the user's decision.
HARMLESS_TYPES: frozenset[str] = frozenset({"numpy.dtype"})

#: Members of one archive may not exceed this many bytes in all (refuses zip bombs).
_MAX_ARCHIVE_BYTES = 2 * 1024**3
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class UntrustedTypesError(ValueError):
    """A ``.skops`` file holds types nobody declared trusted; ``types`` lists them, ``where``
    names the file, ``described`` says what each one is (:class:`SkopsType`, where the file's
    schema names it). Callers word their own advice from these; the message is the CLI's.
    Never raised for a type of :mod:`core.tabular.never_trusted` (that is a
    :class:`NeverTrustedTypeError`, which nothing can trust)."""

    def __init__(self, where: str, types: Iterable[str], *, described: Mapping[str, SkopsType] | None = None) -> None:
        self.where = where
        self.types = tuple(types)
        self.described = {t: d for t, d in (described or {}).items() if t in self.types}
        super().__init__(
            f"{where} contains types outside skops' trusted set: {', '.join(self.types)}. Load it only if you "
            f"trust them: pass --trust {','.join(self.types)} (Python: trusted=[...])."
        )


# --------------------------------------------------------------------------------------------
# Archives and skops
# --------------------------------------------------------------------------------------------
def normalised_zip(members: Mapping[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[name])
    return buf.getvalue()


def unzip_members(data: bytes, where: str) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if sum(i.file_size for i in infos) > _MAX_ARCHIVE_BYTES:
                raise ValueError(f"{where} unpacks to more than {_MAX_ARCHIVE_BYTES} bytes; refused.")
            return {i.filename: zf.read(i) for i in infos}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError) as exc:
        raise ValueError(f"{where} is corrupt or truncated ({exc}).") from exc


def write_archive(path: str | Path, members: Mapping[str, bytes]) -> Path:
    """Write ``members`` (name -> bytes) as one deterministic zip file, atomically."""
    path = Path(path)
    atomic_write_bytes(path, normalised_zip(members))
    return path


def read_archive(path: str | Path) -> dict[str, bytes]:
    """Members of an archive written by :func:`write_archive` (or any zip file)."""
    path = Path(path)
    return unzip_members(path.read_bytes(), str(path))


def dump_skops(obj: Any) -> bytes:
    """``skops.io.dumps`` made deterministic (same object, same bytes).

    skops names nodes and array files after ``id()`` of the objects, which changes between
    runs; those ids are renumbered in order of first appearance, and the zip gets fixed
    timestamps.
    """
    import re

    sio = skops_io()

    members = unzip_members(sio.dumps(obj), "skops output")
    schema = members["schema.json"].decode("utf-8")
    ids: dict[str, str] = {}
    for match in re.finditer(r'"__id__": (\d+)', schema):
        ids.setdefault(match.group(1), str(len(ids) + 1))
    for name in members:
        stem = name.rsplit(".", 1)[0]
        if stem.isdigit():
            ids.setdefault(stem, str(len(ids) + 1))

    def renumber(text: str) -> str:
        return re.sub(r"(?<![\d.])(\d{6,})(?![\d])", lambda m: ids.get(m.group(1), m.group(1)), text)

    out = {renumber(name): data for name, data in members.items() if name != "schema.json"}
    out["schema.json"] = renumber(schema).encode("utf-8")
    return normalised_zip(out)


@dataclass(frozen=True, kw_only=True)
class SkopsType:
    """One type named in a ``.skops`` file, as the file's ``schema.json`` describes it.

    Read from the schema's nodes (``__module__``, ``__class__`` and the ``__loader__`` skops
    rebuilds the node with): no module is imported to tell a class from a function.

    Attributes
    ----------
    name : str
        The dotted name skops reports (``posix.system``; ``pathlib.PosixPath.write_text`` for a
        bound method).
    module : str
        The module the file names for it (``posix``).
    kind : {"class", "function", "method", "class or function"}
        What the name is when its module is already imported (read statically from the
        module's dictionary, :func:`inspect.getattr_static`: nothing is imported or run);
        otherwise what the node says: ``function`` for skops' ``FunctionNode`` (a Python
        function or ufunc), ``class or function`` for a ``TypeNode`` (skops saves classes and
        built-in functions such as ``posix.system`` alike), ``class`` for the other nodes (an
        instance of the class). ``method`` for a bound method (``MethodNode``).
    """

    name: str
    module: str
    kind: Literal["class", "function", "method", "class or function"]

    @property
    def description(self) -> str:
        """``"a function in module posix"``, ``"a class in module sklearn.pipeline"`` or
        ``"a method of class pathlib.PosixPath"``."""
        if self.kind == "method":
            return f"a method of class {self.name.rpartition('.')[0]}"
        return f"a {self.kind} in module {self.module}"


def _imported_kind(module: str, name: str) -> Literal["class", "function"] | None:
    """Whether ``module.name`` is a class or a function, from an already imported module's
    dictionary (nothing is imported, no ``__getattr__`` runs); None when not known."""
    found = sys.modules.get(module)
    try:
        obj = inspect.getattr_static(found, name) if found is not None else None
    except AttributeError:
        obj = None
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, (types.BuiltinFunctionType, types.FunctionType)):
        return "function"
    return None


_NODE_KINDS: dict[Any, Literal["function", "class or function"]] = {
    "FunctionNode": "function",
    "TypeNode": "class or function",
}


def skops_types(data: bytes) -> dict[str, SkopsType]:
    """Every type the ``schema.json`` of a ``.skops`` payload names, by dotted name.

    Nothing is imported or constructed: the schema's JSON is walked (without recursion) for
    nodes with a string ``__module__`` and ``__class__``.

    Raises
    ------
    ValueError
        Not a zip archive, no ``schema.json``, or a schema that is not JSON.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            schema = json.loads(zf.read("schema.json"))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"not a readable skops schema ({type(exc).__name__}: {exc}).") from exc
    found: dict[str, SkopsType] = {}
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(node.values())
        module, cls, loader = node.get("__module__"), node.get("__class__"), node.get("__loader__")
        if not (isinstance(module, str) and isinstance(cls, str)):
            continue
        kind = _imported_kind(module, cls) or _NODE_KINDS.get(loader, "class")
        found.setdefault(f"{module}.{cls}", SkopsType(name=f"{module}.{cls}", module=module, kind=kind))
        content = node.get("content")
        if loader == "MethodNode" and isinstance(content, dict) and isinstance(content.get("func"), str):
            name = f"{module}.{cls}.{content['func']}"
            found.setdefault(name, SkopsType(name=name, module=module, kind="method"))
    return found


def load_skops(data: bytes, *, trusted: Iterable[str] = (), where: str = "the .skops file") -> Any:
    """Load a ``.skops`` payload, refusing types that are neither skops-trusted, in
    :data:`HARMLESS_TYPES` nor in ``trusted``, and every type that is never trusted.

    The never-trusted rule (:func:`core.tabular.never_trusted.never_trusted`) is applied
    before anything is constructed to the caller's ``trusted`` list, to every type skops
    reports as untrusted and to every type the file's schema names (skops-trusted ones too).

    Raises
    ------
    NeverTrustedTypeError
        ``trusted`` or the file names a type that is never trusted (nothing is constructed).
    UntrustedTypesError
        Listing every undeclared type (nothing is constructed).
    ValueError
        The payload is not a readable skops file (corrupt, truncated, another format), or
        ``trusted`` is not a list of names.
    """
    sio = skops_io()

    trusted = check_trust_list(trusted, where=where)
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ValueError(f"{where} is not a skops file (not a zip archive; corrupt, truncated or another format).")
    try:
        found = sio.get_untrusted_types(data=data)
        named = skops_types(data)
    except Exception as exc:  # skops raises many types on malformed schemas
        raise ValueError(f"{where} is corrupt or not a skops file ({type(exc).__name__}: {exc}).") from exc
    refuse_never_trusted(
        sorted(set(found) | set(named)), where=where, descriptions={n: t.description for n, t in named.items()}
    )
    allowed = set(trusted) | HARMLESS_TYPES
    missing = [t for t in found if t not in allowed]
    if missing:
        raise UntrustedTypesError(where, missing, described=named)
    try:
        return sio.loads(data, trusted=list(found))
    except Exception as exc:
        raise ValueError(f"{where} could not be loaded ({type(exc).__name__}: {exc}).") from exc


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _classes_array(values: list[Any]) -> np.ndarray:
    return np.asarray(values) if all(not isinstance(v, str) for v in values) else np.asarray(values, dtype=object)


class BoosterClassifier:
    """``predict_proba`` over a loaded LightGBM booster (binary or multi-class).

    Parameters
    ----------
    booster : lightgbm.Booster
    classes : sequence
        Labels of the probability columns, in order.
    """

    def __init__(self, booster: Any, classes: Iterable[Any]) -> None:
        self.booster_ = booster
        self.classes_ = _classes_array(list(classes))
        self.n_features_in_ = int(booster.num_feature())

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities of shape (n_samples, n_classes), columns in ``classes_`` order."""
        p = np.asarray(self.booster_.predict(np.asarray(X, dtype=np.float64), num_threads=1), dtype=np.float64)
        return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _module_of(model: Any) -> str:
    return type(model).__module__.split(".")[0]


def _save_xgboost(model: Any) -> tuple[dict[str, bytes], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        model.save_model(path)
        data = path.read_bytes()
    # Scalar constructor parameters only (the model file holds the trees); `missing` is NaN by
    # default and JSON has no NaN, so non-finite numbers keep the library default.
    params = {
        k: v
        for k, v in model.get_params().items()
        if isinstance(v, (int, str, bool, type(None))) or (isinstance(v, float) and np.isfinite(v))
    }
    return {"model.json": data}, {"class": type(model).__name__, "params": _jsonable(params)}


def _load_xgboost(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    xgboost = require("xgboost", what="a saved XGBoost model")
    if meta.get("class") != "XGBClassifier":
        raise ValueError(f"xgboost model class {meta.get('class')!r} is not supported (XGBClassifier only).")
    model = xgboost.XGBClassifier(**dict(meta.get("params", {})))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        path.write_bytes(members["model.json"])
        try:
            model.load_model(path)
        except xgboost.core.XGBoostError as exc:
            raise ValueError(f"the XGBoost model is corrupt or truncated ({exc}).") from exc
    return model


def _save_lightgbm(model: Any) -> tuple[dict[str, bytes], dict]:
    booster = model.booster_ if hasattr(model, "booster_") else model
    return {"model.txt": booster.model_to_string().encode("utf-8")}, {"classes": _jsonable(model.classes_)}


def _load_lightgbm(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    lightgbm = require("lightgbm", what="a saved LightGBM model")
    try:
        booster = lightgbm.Booster(model_str=members["model.txt"].decode("utf-8"))
    except (lightgbm.basic.LightGBMError, UnicodeDecodeError) as exc:
        raise ValueError(f"the LightGBM model is corrupt or truncated ({exc}).") from exc
    return BoosterClassifier(booster, meta["classes"])


def _save_catboost(model: Any) -> tuple[dict[str, bytes], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.cbm"
        model.save_model(str(path), format="cbm")
        data = path.read_bytes()
    if type(model).__name__ != "CatBoostClassifier":
        raise ValueError(f"catboost model class {type(model).__name__!r} is not supported (CatBoostClassifier only).")
    return {"model.cbm": data}, {"class": "CatBoostClassifier"}


def _load_catboost(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    catboost = require("catboost", what="a saved CatBoost model")
    CatBoostClassifier, CatBoostError = catboost.CatBoostClassifier, catboost.CatBoostError
    if meta.get("class") != "CatBoostClassifier":
        raise ValueError(f"catboost model class {meta.get('class')!r} is not supported (CatBoostClassifier only).")
    model = CatBoostClassifier(thread_count=1, verbose=False, allow_writing_files=False)
    try:
        model.load_model(blob=members["model.cbm"], format="cbm")
    except CatBoostError as exc:
        raise ValueError(f"the CatBoost model is corrupt or truncated ({exc}).") from exc
    return model


def _is_torch_model(model: Any) -> bool:
    return type(model).__module__ == "core.tabular.resmlp"


def _save_torch(model: Any) -> tuple[dict[str, bytes], dict]:
    torch = require("torch", what="a ResMLP model")

    buf = io.BytesIO()
    torch.save(model.module_.state_dict(), buf)
    return {"state_dict.pt": buf.getvalue()}, {
        "class": type(model).__name__,
        "params": _jsonable(model.get_params()),
        "classes": _jsonable(model.classes_),
        "n_features_in": int(model.n_features_in_),
    }


def _load_torch(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    torch = require("torch", what="a saved ResMLP model")
    from core.tabular import resmlp

    classes = {
        "ResMLPClassifier": resmlp.ResMLPClassifier,
        "FragilityRegularizedResMLPClassifier": resmlp.FragilityRegularizedResMLPClassifier,
    }
    if meta.get("class") not in classes:
        raise ValueError(f"torch model class {meta.get('class')!r} is not one of {sorted(classes)}.")
    params = dict(meta["params"])
    if params.get("baseline") is not None:
        params["baseline"] = np.asarray(params["baseline"], dtype=np.float64)
    model = classes[meta["class"]](**params)
    model.classes_ = _classes_array(list(meta["classes"]))
    model.n_features_in_ = int(meta["n_features_in"])
    module = resmlp._ResMLP(model.n_features_in_, len(model.classes_), model.width, model.n_blocks, model.dropout)
    try:
        state = torch.load(io.BytesIO(members["state_dict.pt"]), weights_only=True)
        module.load_state_dict(state)
    except Exception as exc:  # torch raises RuntimeError / UnpicklingError / EOFError on bad files
        raise ValueError(f"the torch state_dict is corrupt, truncated or not weights-only ({exc}).") from exc
    module.eval()
    model.module_ = module
    return model


def _is_onnx_model(model: Any) -> bool:
    return type(model).__module__ == "core.tabular.onnx_model"


def _save_onnx(model: Any) -> tuple[dict[str, bytes], dict]:
    return {"model.onnx": model.model_bytes}, model.config()


def _load_onnx(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    from core.tabular.onnx_model import OnnxClassifier

    return OnnxClassifier.from_config(members["model.onnx"], meta)


def _save_sklearn(model: Any) -> tuple[dict[str, bytes], dict]:
    try:
        data = dump_skops(model)
    except Exception as exc:
        raise ValueError(f"the model ({type(model).__name__}) cannot be saved with skops ({exc}).") from exc
    return {"model.skops": data}, {"class": f"{type(model).__module__}.{type(model).__qualname__}"}


def _load_sklearn(members: Mapping[str, bytes], meta: Mapping, trusted: Iterable[str]) -> Any:
    return load_skops(members["model.skops"], trusted=set(trusted) | OWN_TRUSTED_TYPES, where="the saved model")


@dataclass(frozen=True)
class Family:
    """How one kind of model is saved and loaded.

    Attributes
    ----------
    matches : callable(model) -> bool
    save : callable(model) -> (members, meta)
        Byte members (name -> bytes) and a JSON-ready dict.
    load : callable(members, meta, trusted) -> model
    """

    matches: Callable[[Any], bool]
    save: Callable[[Any], tuple[dict[str, bytes], dict]]
    load: Callable[[Mapping[str, bytes], Mapping, Iterable[str]], Any]


#: Model families in detection order (the first whose ``matches`` accepts a model saves it).
FAMILIES: Mapping[str, Family] = {
    "xgboost": Family(lambda m: _module_of(m) == "xgboost", _save_xgboost, _load_xgboost),
    "lightgbm": Family(
        lambda m: _module_of(m) == "lightgbm" or isinstance(m, BoosterClassifier), _save_lightgbm, _load_lightgbm
    ),
    "catboost": Family(lambda m: _module_of(m) == "catboost", _save_catboost, _load_catboost),
    "torch": Family(_is_torch_model, _save_torch, _load_torch),
    "onnx": Family(_is_onnx_model, _save_onnx, _load_onnx),
    "sklearn": Family(lambda m: True, _save_sklearn, _load_sklearn),
}


def family_of(model: Any) -> str:
    """Name of the family in :data:`FAMILIES` that saves ``model``."""
    return next(name for name, fam in FAMILIES.items() if fam.matches(model))


def save_estimator(model: Any, prefix: str) -> tuple[dict[str, bytes], dict]:
    """Members (names prefixed with ``prefix``) and the JSON spec ``{"family", "meta"}`` of ``model``."""
    family = family_of(model)
    members, meta = FAMILIES[family].save(model)
    return {f"{prefix}{k}": v for k, v in members.items()}, {"family": family, "meta": _jsonable(meta)}


def load_estimator(members: Mapping[str, bytes], spec: Mapping, prefix: str, *, trusted: Iterable[str] = ()) -> Any:
    """Inverse of :func:`save_estimator`; ``trusted`` extends the skops allowance.

    A ``trusted`` list naming a never-trusted type is refused whatever the family
    (:class:`NeverTrustedTypeError`).
    """
    trusted = check_trust_list(trusted, where="the saved model")
    family = spec.get("family") if isinstance(spec, Mapping) else None
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; known: {list(FAMILIES)}.")
    own = {k[len(prefix) :]: v for k, v in members.items() if k.startswith(prefix)}
    if not own:
        raise ValueError(f"the saved {family} model has no files (members starting with {prefix!r}).")
    return FAMILIES[family].load(own, spec.get("meta", {}), trusted)


def json_member(data: Any) -> bytes:
    """JSON bytes of a member (no NaN). Keys keep their order: group order is meaningful."""
    return json.dumps(_jsonable(data), indent=1, allow_nan=False).encode("utf-8")
