"""Types that are never trusted when a ``.skops`` file is loaded, whatever ``trust`` says.

The files here are real skops files: pipelines saved with ``skops.io.dumps`` whose
``FunctionTransformer`` holds ``os.system``, ``eval``, ``subprocess.call`` or ``shutil.rmtree``,
and the same pipelines edited the way an attacker would, so that loading them *calls* the
function (skops' ``ConstructorFromReduceNode`` calls the named type with the saved arguments).
Plain skops, told to trust the type, runs it; every loader of the tool refuses the file first.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from skops_files import FUNCTIONS, HARMS, SYSTEM, _harm, _pipeline

from core.cli import main
from core.tabular.certify_task import _TASK_SCHEMA, task_from_bytes
from core.tabular.model_files import load_model_bytes, load_model_file
from core.tabular.never_trusted import (
    NEVER_TRUSTED_MODULES,
    NEVER_TRUSTED_NAMES,
    NeverTrustedTypeError,
    alias_of,
    check_trust_list,
    never_trusted,
    refusal_reason,
)
from core.tabular.persist import (
    HARMLESS_TYPES,
    OWN_TRUSTED_TYPES,
    UntrustedTypesError,
    load_estimator,
    load_skops,
    normalised_zip,
    skops_types,
)

ROOT = Path(__file__).resolve().parents[2]
LISTED = {**NEVER_TRUSTED_MODULES, **NEVER_TRUSTED_NAMES}


# --------------------------------------------------------------------------------------------
# The threat, and the refusal
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", HARMS)
def test_plain_skops_told_to_trust_the_type_runs_it_while_loading(tmp_path, kind):
    """The control: these files really do harm when a loader trusts what they name."""
    data, name, harmed = _harm(kind, tmp_path)
    assert sio.get_untrusted_types(data=data) == [name]
    assert not harmed()
    sio.loads(data, trusted=[name])
    assert harmed(), "the crafted file did not call the function: the refusal tests below would prove nothing"


@pytest.mark.parametrize("trust", ["named", "not named"])
@pytest.mark.parametrize("kind", HARMS)
def test_a_file_calling_a_never_trusted_type_is_refused_before_it_runs_whatever_trust(tmp_path, kind, trust):
    data, name, harmed = _harm(kind, tmp_path)
    trusted = [name] if trust == "named" else []
    for load in (
        lambda: load_skops(data, trusted=trusted, where="evil.skops"),
        lambda: load_model_bytes(data, "evil.skops", trust=trusted),
    ):
        with pytest.raises(NeverTrustedTypeError, match="never trusted") as info:
            load()
        assert name in str(info.value) and not harmed()
    assert not harmed()


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_a_function_transformer_of_a_never_trusted_function_is_refused_when_trusted(kind):
    func, name = FUNCTIONS[kind]
    data = sio.dumps(_pipeline(func))
    assert name in sio.get_untrusted_types(data=data)
    with pytest.raises(NeverTrustedTypeError) as info:  # the trust list is judged first
        load_model_bytes(data, "model.skops", trust=[name])
    assert info.value.types == (name,) and info.value.named_by_caller
    assert str(info.value).startswith(f"--trust names {name}, which is never trusted: ")
    assert not isinstance(info.value, UntrustedTypesError), "never caught as something that can be trusted"

    with pytest.raises(NeverTrustedTypeError) as info:  # then the file, whatever else is trusted
        load_model_bytes(data, "model.skops", trust=["functools.partial"])
    message = str(info.value)
    module = name.rpartition(".")[0]
    assert message.startswith(f"model.skops contains {name} (a function in module {module}), which is never trusted: ")
    assert message.endswith("No --trust can allow it; re-save the model without it.")
    assert info.value.types == (name,) and not info.value.named_by_caller


def test_the_message_of_os_system_says_it_reaches_the_operating_system_and_no_trust_allows_it():
    with pytest.raises(NeverTrustedTypeError) as info:
        load_skops(sio.dumps(_pipeline(os.system)), where="model.skops")
    assert str(info.value) == (
        f"model.skops contains {SYSTEM} (a function in module {os.system.__module__}), which is never trusted: "
        "it can reach the operating system. No --trust can allow it; re-save the model without it."
    )


def test_a_partial_of_os_system_is_judged_by_the_function_it_wraps_even_with_trust():
    data = sio.dumps(_pipeline(functools.partial(os.system, "echo hi")))
    assert set(sio.get_untrusted_types(data=data)) == {"functools.partial", SYSTEM}
    with pytest.raises(NeverTrustedTypeError) as info:
        load_skops(data, trusted=["functools.partial"])
    assert info.value.types == (SYSTEM,) and not info.value.named_by_caller
    with pytest.raises(NeverTrustedTypeError, match=f"--trust names {SYSTEM}"):
        load_skops(data, trusted=["functools.partial", SYSTEM])


def test_a_bound_method_of_pathlib_is_refused_and_described_as_a_method(tmp_path):
    target = tmp_path / "written.txt"
    data = sio.dumps(_pipeline(target.write_text))
    kinds = skops_types(data)
    method = f"{type(target).__module__}.{type(target).__name__}.write_text"
    assert kinds[method].kind == "method" and kinds[method].description.startswith("a method of class pathlib.")
    with pytest.raises(NeverTrustedTypeError) as info:
        load_skops(data)
    owner = method.rpartition(".")[0]
    assert info.value.types == (owner, method)
    assert f"contains 2 types that are never trusted: {owner} (a class in module pathlib): " in str(info.value)
    assert f"; {method} (a method of class {owner}): it can read, write or delete files." in str(info.value)
    with pytest.raises(NeverTrustedTypeError, match="--trust names 2 types that are never trusted: pathlib"):
        load_skops(data, trusted=sio.get_untrusted_types(data=data))
    assert not target.exists()


def test_several_never_trusted_types_are_all_named_in_one_message():
    data = sio.dumps(
        Pipeline([("a", FunctionTransformer(func=os.system)), ("b", FunctionTransformer(func=shutil.rmtree))])
    )
    with pytest.raises(NeverTrustedTypeError) as info:
        load_skops(data, where="two.skops")
    assert info.value.types == tuple(sorted([SYSTEM, "shutil.rmtree"]))
    assert str(info.value).startswith("two.skops contains 2 types that are never trusted: ")
    assert "No --trust can allow them; re-save the model without them." in str(info.value)


# --------------------------------------------------------------------------------------------
# The caller's trust list, on every loader
# --------------------------------------------------------------------------------------------
def _benign() -> bytes:
    return sio.dumps(_pipeline(np.log1p))


def test_a_trust_list_naming_a_never_trusted_type_is_refused_even_for_a_benign_file():
    with pytest.raises(NeverTrustedTypeError) as info:
        load_skops(_benign(), trusted=["posix.system"], where="good.skops")
    assert info.value.named_by_caller and info.value.types == ("posix.system",)
    assert str(info.value).startswith("--trust names posix.system, which is never trusted: it can reach the operating")
    assert load_skops(_benign()) is not None  # the same file without the bad trust loads


@pytest.mark.parametrize(
    "load",
    [
        pytest.param(lambda trust: load_model_bytes(b"\x00", "m.onnx", trust=trust), id="model_bytes-onnx"),
        pytest.param(lambda trust: load_model_bytes(_benign(), "m.skops", trust=trust), id="model_bytes-skops"),
        pytest.param(
            lambda trust: load_estimator({"model/model.json": b"{}"}, {"family": "xgboost"}, "model/", trusted=trust),
            id="load_estimator-xgboost",
        ),
        pytest.param(
            lambda trust: load_estimator(
                {"model/model.skops": _benign()}, {"family": "sklearn"}, "model/", trusted=trust
            ),
            id="load_estimator-sklearn",
        ),
        pytest.param(lambda trust: task_from_bytes(normalised_zip({}), "t.zip", trusted=trust), id="certify_task"),
    ],
)
def test_every_loader_refuses_a_never_trusted_trust_entry_first(load):
    with pytest.raises(NeverTrustedTypeError, match=r"--trust names builtins\.eval, which is never trusted"):
        load(["sklearn.tree._tree.Tree", "builtins.eval"])


def test_load_model_file_refuses_a_file_holding_a_never_trusted_type(tmp_path):
    path = tmp_path / "evil.skops"
    path.write_bytes(sio.dumps(_pipeline(subprocess.call)))
    with pytest.raises(NeverTrustedTypeError, match=r"evil\.skops contains subprocess\.call \(a function"):
        load_model_file(path)
    with pytest.raises(NeverTrustedTypeError, match=r"--trust names subprocess\.call"):
        load_model_file(path, trust=["subprocess.call"])


def test_a_certify_task_whose_transformer_holds_a_never_trusted_type_is_refused(tmp_path):
    spec = {
        "schema": _TASK_SCHEMA,
        "preprocessor": {"kind": "pipeline", "raw_columns": ["a"]},
        "model": {"family": "sklearn", "meta": {}},
    }
    data, _, harmed = _harm("builtins.eval", tmp_path)
    task = normalised_zip({"task.json": json.dumps(spec).encode(), "pre/transformer.skops": data})
    with pytest.raises(NeverTrustedTypeError, match=r"t\.zip: pre/transformer\.skops contains builtins\.eval"):
        task_from_bytes(task, "t.zip")
    with pytest.raises(NeverTrustedTypeError, match=r"--trust names builtins\.eval"):
        task_from_bytes(task, "t.zip", trusted=["builtins.eval"])
    assert not harmed()


def test_a_trust_list_must_be_a_list_of_names():
    with pytest.raises(ValueError, match="`trusted` must be a list of type names; got the string 'posix.system'"):
        check_trust_list("posix.system", where="m.skops")
    with pytest.raises(ValueError, match="must hold type names"):
        check_trust_list([3], where="m.skops")


def test_an_alias_of_a_never_trusted_function_in_an_imported_module_is_refused_too():
    import sklearn.utils.discovery  # noqa: F401  (does `from importlib import import_module`)

    name = "sklearn.utils.discovery.import_module"
    assert never_trusted(name) is None and alias_of(name) == "importlib.import_module"
    assert refusal_reason(name) == ("it can run arbitrary code", "importlib.import_module")
    with pytest.raises(NeverTrustedTypeError, match=r"import_module \(it is importlib\.import_module\)"):
        check_trust_list([name], where="m.skops")
    assert alias_of("sklearn.pipeline.Pipeline") is None and alias_of("no_such_module_xyz.f") is None


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------
@pytest.fixture
def cli_files(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40), "y": ["no", "yes"] * 20})
    frame.to_csv(tmp_path / "train.csv", index=False)
    frame.to_csv(tmp_path / "test.csv", index=False)
    good = Pipeline([("scale", StandardScaler()), ("m", LogisticRegression())]).fit(frame[["a", "b"]], frame["y"])
    sio.dump(good, tmp_path / "good.skops")
    (tmp_path / "evil.skops").write_bytes(sio.dumps(_pipeline(os.system)))
    return tmp_path


def _audit_args(d: Path, model: str, *extra: str) -> list[str]:
    return [
        "audit",
        "--model-file",
        str(d / model),
        "--train",
        str(d / "train.csv"),
        "--test",
        str(d / "test.csv"),
        "--target",
        "y",
        "--out",
        str(d / "out"),
        "--no-progress",
        *extra,
    ]


@pytest.mark.parametrize("model", ["good.skops", "evil.skops"])
def test_cli_trust_of_a_never_trusted_type_exits_2_with_one_line(cli_files, capsys, model):
    code = main(_audit_args(cli_files, model, "--trust", f"sklearn.tree._tree.Tree,{SYSTEM}"))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: --trust names {SYSTEM}, which is never trusted: it can reach the operating system.")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (cli_files / "out").exists()


def test_cli_a_model_file_holding_a_never_trusted_type_exits_2_without_any_trust(cli_files, capsys):
    code = main(_audit_args(cli_files, "evil.skops"))
    err = capsys.readouterr().err
    assert code == 2
    assert f"evil.skops contains {SYSTEM} (a function in module {os.system.__module__}), which is never trusted" in err
    assert "No --trust can allow it" in err and len(err.strip().splitlines()) == 1
    assert not (cli_files / "out").exists()


def test_cli_trust_as_a_command_exits_2_with_the_message_and_no_traceback(cli_files):
    """``python -m core audit --model-file ... --trust posix.system``, as a user runs it."""
    run = subprocess.run(
        [sys.executable, "-m", "core", *_audit_args(cli_files, "evil.skops", "--trust", SYSTEM)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2, run.stderr
    assert f"--trust names {SYSTEM}, which is never trusted" in run.stderr and "Traceback" not in run.stderr
    assert not (cli_files / "out").exists()


# --------------------------------------------------------------------------------------------
# The lists and the rule
# --------------------------------------------------------------------------------------------
def test_the_tools_own_trusted_and_harmless_types_contain_no_never_trusted_type():
    assert not [t for t in OWN_TRUSTED_TYPES | HARMLESS_TYPES if refusal_reason(t) is not None]


def _common_model_types() -> list[str]:
    from sklearn.utils import all_estimators

    estimators = [f"{c.__module__}.{c.__qualname__}" for _, c in all_estimators()]
    ufuncs = [f"numpy.{n}" for n in dir(np) if isinstance(getattr(np, n), np.ufunc)]
    others = [
        "numpy.ndarray",
        "numpy.dtype",
        "numpy.float64",
        "numpy.random._generator.Generator",
        "numpy.random.PCG64",
        "numpy.random.mtrand.RandomState",
        "scipy.sparse._csr.csr_matrix",
        "scipy.special._special_ufuncs.expit",
        "sklearn.tree._tree.Tree",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
        "sklearn._loss.loss.HalfBinomialLoss",
        "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
        "sklearn.metrics.cosine_similarity",
        "xgboost.core.Booster",
        "xgboost.sklearn.XGBClassifier",
        "lightgbm.sklearn.LGBMClassifier",
        "catboost.core.CatBoostClassifier",
        "builtins.dict",
        "builtins.list",
        "builtins.tuple",
        "builtins.set",
        "builtins.str",
        "builtins.int",
        "builtins.float",
        "builtins.bool",
        "builtins.slice",
        "builtins.map",
        "builtins.method_descriptor",
        "functools.partial",
        "collections.OrderedDict",
        "collections.defaultdict",
        "datetime.timezone",
        "osx_helper.thing",  # "os" only as a whole part
        "numpy.loadings",  # "numpy.load" only as a whole part
    ]
    return [*estimators, *ufuncs, *others]


def test_types_common_in_fitted_models_are_never_refused_by_the_rule():
    refused = {t: refusal_reason(t) for t in _common_model_types() if refusal_reason(t) is not None}
    assert refused == {}


def test_every_type_of_a_real_pipeline_file_passes_and_the_file_loads():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), np.array([0, 1] * 30)
    pipe = Pipeline(
        [
            ("impute", SimpleImputer()),
            ("log", FunctionTransformer(func=np.log1p)),
            ("m", HistGradientBoostingClassifier(max_iter=5)),
        ]
    ).fit(np.abs(X), y)
    data = sio.dumps(pipe)
    named = skops_types(data)
    assert named["numpy.log1p"].kind == "function" and named["sklearn.pipeline.Pipeline"].kind == "class"
    assert not [t for t in named if refusal_reason(t) is not None]
    loaded = load_skops(data, trusted=[t for t in sio.get_untrusted_types(data=data) if t != "numpy.dtype"])
    np.testing.assert_array_equal(loaded.predict_proba(np.abs(X)), pipe.predict_proba(np.abs(X)))


_IDENT = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,10}", fullmatch=True)


@given(
    prefix=st.sampled_from(sorted(LISTED)),
    rest=st.lists(_IDENT, max_size=3),
    case=st.sampled_from([str, str.upper, str.title]),
    pad=st.sampled_from(["", " ", "\t"]),
)
def test_trust_is_refused_for_every_name_under_a_never_trusted_prefix(prefix, rest, case, pad):
    name = pad + case(".".join([prefix, *rest])) + pad
    assert never_trusted(name) is not None
    with pytest.raises(NeverTrustedTypeError):
        check_trust_list(["sklearn.tree._tree.Tree", name], where="m.skops")


@given(
    module=st.sampled_from(
        ["sklearn", "sklearn.preprocessing", "sklearn.ensemble._hist_gradient_boosting", "numpy", "numpy.random"]
        + ["scipy.special", "xgboost", "lightgbm", "builtins", "collections"]
    ),
    rest=st.lists(_IDENT, min_size=1, max_size=3),
)
def test_trust_of_model_library_names_is_refused_only_for_listed_prefixes(module, rest):
    parts = [*module.split("."), *rest]
    listed = any(".".join(parts[:i]).lower() in LISTED for i in range(1, len(parts) + 1))
    assert (never_trusted(".".join(parts)) is not None) == listed


@given(
    head=st.sampled_from(sorted(LISTED) + ["sklearn.pipeline", "numpy", "builtins"]),
    rest=st.lists(_IDENT | st.sampled_from(["__import__", "__globals__", "__subclasses__"]), max_size=2),
    extra=_IDENT | st.just("__class__"),
)
def test_trust_refusal_holds_for_every_longer_name(head, rest, extra):
    name = ".".join([head, *rest])
    if never_trusted(name) is not None:
        assert never_trusted(f"{name}.{extra}") is not None


@pytest.mark.parametrize(
    "name",
    ["builtins.__import__", "sklearn.base.__builtins__", "numpy.__loader__", "x.y.__globals__", "__builtin__.eval"],
)
def test_trust_of_dunder_names_is_refused(name):
    assert never_trusted(name) is not None
