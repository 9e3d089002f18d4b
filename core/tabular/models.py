"""The model suite behind one interface, and its registry.

Every model is a scikit-learn-style classifier on the *transformed* features:
``fit(X, y)``, ``predict_proba(X) -> (n, C)`` with columns in ``classes_`` order. The library
models are returned as the library's own estimator class (so ``shap.TreeExplainer`` and
friends recognise them); the two torch models live in :mod:`core.tabular.resmlp`.

Seeds make every fit reproducible: the seed becomes each library's ``random_state``;
XGBoost, LightGBM and CatBoost run with a fixed thread count (``n_jobs=1`` /
``thread_count=1`` by default) and LightGBM in its ``deterministic`` mode; the torch models fix threads, deterministic algorithms and their
RNG inside ``fit`` (see :mod:`core.tabular.resmlp`). Library chatter is off (LightGBM
``verbosity=-1``, XGBoost ``verbosity=0``, CatBoost ``verbose=False`` and no ``catboost_info/``
training logs written to the working directory).

``predict_proba`` returns float64 for every model except XGBoost, which returns float32;
consumers that need float64 (pseudo-logits, certificates) cast.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from core.optional import require
from core.validation import check_seed

__all__ = ["MODELS", "MODEL_NAMES", "ModelName", "ModelSpec", "make_model"]

ModelName = Literal[
    "logreg", "random_forest", "extra_trees", "hist_gb", "xgboost", "lightgbm", "catboost", "mlp", "resmlp",
    "fr_resmlp",
]  # fmt: skip


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """One entry of the model registry.

    Attributes
    ----------
    name : str
        Stable short name (CLI, protocol objects, result tables).
    label : str
        Name for people.
    family : {'linear', 'tree ensemble', 'boosting', 'neural'}
    defaults : mapping
        Parameters this product sets on top of the library defaults.
    requires : tuple of str
        Parameters without a default that :func:`make_model` must be given.
    shap_explainer : {'tree', 'linear'} or None
        The fast SHAP explainer that supports the fitted model; None means only the slow
        model-agnostic explainers apply.
    """

    name: str
    label: str
    family: Literal["linear", "tree ensemble", "boosting", "neural"]
    defaults: Mapping[str, Any]
    requires: tuple[str, ...]
    shap_explainer: Literal["tree", "linear"] | None
    _factory: Callable[[], type]

    def estimator_class(self) -> type:
        """The estimator class, imported on first use (torch, xgboost, lightgbm and catboost are
        heavy, and optional: :class:`core.optional.MissingExtraError` names the extra to install)."""
        return self._factory()


def _logreg() -> type:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression


def _random_forest() -> type:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier


def _extra_trees() -> type:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier


def _hist_gb() -> type:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier


def _xgboost() -> type:
    return require("xgboost", what="the xgboost model").XGBClassifier


def _lightgbm() -> type:
    return require("lightgbm", what="the lightgbm model").LGBMClassifier


def _catboost() -> type:
    return require("catboost", what="the catboost model").CatBoostClassifier


def _mlp() -> type:
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier


def _resmlp() -> type:
    require("torch", what="the resmlp model")
    from core.tabular.resmlp import ResMLPClassifier

    return ResMLPClassifier


def _fr_resmlp() -> type:
    require("torch", what="the fr_resmlp model")
    from core.tabular.resmlp import FragilityRegularizedResMLPClassifier

    return FragilityRegularizedResMLPClassifier


def _spec(name, label, family, factory, defaults, *, requires=(), shap=None) -> ModelSpec:
    return ModelSpec(name, label, family, MappingProxyType(defaults), requires, shap, factory)


#: The registry: short name -> :class:`ModelSpec`, in display order.
MODELS: Mapping[str, ModelSpec] = MappingProxyType(
    {
        s.name: s
        for s in (
            _spec("logreg", "Logistic regression", "linear", _logreg, {"C": 1.0, "max_iter": 2000}, shap="linear"),
            _spec(
                "random_forest",
                "Random forest",
                "tree ensemble",
                _random_forest,
                {"n_estimators": 300, "n_jobs": 1},
                shap="tree",
            ),
            _spec(
                "extra_trees",
                "Extra trees",
                "tree ensemble",
                _extra_trees,
                {"n_estimators": 300, "n_jobs": 1},
                shap="tree",
            ),
            _spec(
                "hist_gb",
                "Histogram gradient boosting",
                "boosting",
                _hist_gb,
                {},
                shap="tree",
            ),
            _spec(
                "xgboost",
                "XGBoost",
                "boosting",
                _xgboost,
                {
                    "n_estimators": 300,
                    "learning_rate": 0.05,
                    "max_depth": 5,
                    "tree_method": "hist",
                    "n_jobs": 1,
                    "verbosity": 0,
                },
                shap="tree",
            ),
            _spec(
                "lightgbm",
                "LightGBM",
                "boosting",
                _lightgbm,
                {
                    "n_estimators": 300,
                    "learning_rate": 0.05,
                    "num_leaves": 31,
                    "n_jobs": 1,
                    "deterministic": True,
                    "force_col_wise": True,
                    "verbosity": -1,
                },
                shap="tree",
            ),
            # 300 rounds at rate 0.05 like XGBoost and LightGBM (CatBoost's own default of 1,000
            # rounds would make it the slowest model of the suite by far).
            _spec(
                "catboost",
                "CatBoost",
                "boosting",
                _catboost,
                {
                    "iterations": 300,
                    "learning_rate": 0.05,
                    "depth": 6,
                    "thread_count": 1,
                    "verbose": False,
                    "allow_writing_files": False,
                },
                shap="tree",
            ),
            _spec(
                "mlp",
                "MLP (scikit-learn)",
                "neural",
                _mlp,
                {"hidden_layer_sizes": (128, 64), "early_stopping": True, "max_iter": 300},
            ),
            _spec("resmlp", "ResMLP (torch)", "neural", _resmlp, {}),
            _spec(
                "fr_resmlp",
                "Fragility-regularised ResMLP (torch)",
                "neural",
                _fr_resmlp,
                {},
                requires=("groups", "baseline"),
            ),
        )  # fmt: skip
    }
)

#: Registry names, in display order.
MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


def make_model(name: ModelName, *, seed: int, **params: Any) -> Any:
    """Build an unfitted model of the suite.

    Parameters
    ----------
    name : {'logreg', 'random_forest', 'extra_trees', 'hist_gb', 'xgboost', 'lightgbm', 'catboost', 'mlp', 'resmlp', 'fr_resmlp'}
        Registry name, see :data:`MODELS`.
    seed : int
        Non-negative, below 2**32; becomes the model's ``random_state``. Same seed, same
        data -> identical ``predict_proba``.
    **params
        Overrides of :attr:`ModelSpec.defaults` or other constructor parameters of the
        estimator class. ``fr_resmlp`` requires ``groups`` (evidence groups over the
        transformed columns, ``name -> indices``) and ``baseline`` (shape ``(d,)``).

    Returns
    -------
    estimator
        Unfitted; ``fit(X, y)`` then ``predict_proba(X)``.

    Examples
    --------
    >>> model = make_model("logreg", seed=0)
    >>> model.fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]).predict_proba([[1.5]]).round(3)
    array([[0.5, 0.5]])
    """
    if name not in MODELS:
        raise ValueError(f"`name` must be one of {list(MODEL_NAMES)}; got {name!r}.")
    seed = check_seed(seed, max_bits=32)  # scikit-learn's random_state range
    spec = MODELS[name]
    if "random_state" in params:
        raise ValueError("Pass the seed as `seed`, not as `random_state`.")
    cls = spec.estimator_class()  # first: a library not installed is told before a missing parameter
    missing = [p for p in spec.requires if params.get(p) is None]
    if missing:
        raise ValueError(
            f"Model {name!r} requires {', '.join(f'`{p}`' for p in spec.requires)}; missing `{missing[0]}`."
        )
    # CatBoost's get_params lists only the parameters set explicitly, so the constructor's
    # signature is the complete list.
    signature = set(inspect.signature(cls.__init__).parameters) - {"self", "args", "kwargs"}
    allowed = set(cls().get_params(deep=False)) | signature | set(spec.defaults)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(
            f"Unknown parameter `{unknown[0]}` for model {name!r}; valid parameters: {sorted(allowed - {'random_state'})}."
        )
    return cls(**{**spec.defaults, **params, "random_state": int(seed)})
