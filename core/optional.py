"""Optional libraries: imported when first needed, with one clear error when missing.

``pip install reliability-audit`` (the base) audits scikit-learn, skops and ONNX tabular models,
probes ONNX image models, keeps the team's reviews and opens the dashboard. Everything else
comes with an extra of ``pyproject.toml``:

==============  ===========================================================================
extra           what it adds
==============  ===========================================================================
``torch``       torch: the ResMLP models (``resmlp``, ``fr_resmlp``), the demo pool's CNNs
``boosting``    xgboost, lightgbm, catboost: the suite's boosting models and their files
``dask``        dask and distributed: ``--engine dask`` (``certify``, ``paired-grid``, ``probe``)
``shap``        shap: the group-SHAP concentration (``--shap``)
``export``      skl2onnx, onnxmltools: saving your own models as ONNX
``paper``       the paper's model suite and scores (``torch``, ``boosting``, ``shap``)
``all``         every extra above
==============  ===========================================================================

No module of ``core``, ``ui`` or ``pages`` imports one of these at import time
(``tests/test_optional.py``); code that needs one calls :func:`require` inside the function
that uses it, so a missing library is reported as :class:`MissingExtraError` naming the
extra to install, never as a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["EXTRAS", "OPTIONAL_MODULES", "MissingExtraError", "require", "skops_io"]

#: The extra that installs each optional top-level module.
EXTRAS: dict[str, str] = {
    "torch": "torch",
    "xgboost": "boosting",
    "lightgbm": "boosting",
    "catboost": "boosting",
    "dask": "dask",
    "distributed": "dask",
    "shap": "shap",
    "skl2onnx": "export",
    "onnxmltools": "export",
}

#: Top-level modules the base install does not have (and that no import of the base loads).
OPTIONAL_MODULES: frozenset[str] = frozenset(EXTRAS)


class MissingExtraError(ImportError, ValueError):
    """An optional library is not installed; the message names the extra that installs it.

    An ``ImportError`` (code that tries an import still catches it) and a ``ValueError`` (the
    command line prints it as one ``error:`` line with exit code 2, the dashboard as a message).

    Attributes
    ----------
    name : str
        The missing module (``ImportError.name``).
    extra : str
        The extra of ``reliability-audit`` that installs it.
    what : str
        What needed it, as people say it (``"fr_resmlp"``).
    """

    def __init__(self, module: str, *, extra: str, what: str) -> None:
        self.extra = extra
        self.what = what
        super().__init__(
            f"{what} needs {module.split('.')[0]}, which is not installed: "
            f'install reliability-audit[{extra}] to use {what} (pip install "reliability-audit[{extra}]").',
            name=module,
        )


def require(module: str, *, extra: str | None = None, what: str) -> ModuleType:
    """Import ``module`` (dotted names too) or raise :class:`MissingExtraError`.

    Parameters
    ----------
    module : str
        The module to import (``"torch"``, ``"distributed.client"``).
    extra : str, optional
        The extra that installs it; default: :data:`EXTRAS` of its top-level package.
    what : str
        What needs it, for the message (``"fr_resmlp"``, ``"--engine dask"``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        The module (or a library it imports on import, such as ``distributed`` for
        ``dask.distributed``) is not installed.

    Examples
    --------
    >>> require("json", extra="none", what="the example").__name__
    'json'
    >>> require("no_such_library_xyz", extra="torch", what="fr_resmlp")
    Traceback (most recent call last):
    ...
    core.optional.MissingExtraError: fr_resmlp needs no_such_library_xyz, which is not installed: install reliability-audit[torch] to use fr_resmlp (pip install "reliability-audit[torch]").
    """
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or top).split(".")[0]
        if missing != top and missing not in EXTRAS:
            raise  # the library is there but broken (a dependency of its own is missing)
        raise MissingExtraError(module, extra=extra or EXTRAS.get(top, top), what=what) from exc


#: Array libraries scikit-learn's vendored ``array_api_compat`` wraps, one sub-package each.
#: Importing the sub-package imports the library (torch: seconds; dask.array).
_ARRAY_API_WRAPPERS = tuple(f"sklearn.externals.array_api_compat.{lib}" for lib in ("torch", "dask", "cupy"))


def skops_io() -> ModuleType:
    """``skops.io``, imported without loading torch, dask or cupy.

    On import, skops lists scikit-learn's estimators (``sklearn.utils.all_estimators``), which
    walks and imports every scikit-learn sub-package, among them the vendored
    ``array_api_compat`` wrappers of torch, dask and cupy, which import those libraries when
    installed (torch alone took 4-6 s). ``all_estimators`` skips every ``externals`` module
    anyway (it imports them only while looking for sub-packages), so the walk is made to skip
    them: an import that fails is passed over by :func:`pkgutil.walk_packages`, and skops'
    trusted types stay the same (checked in ``tests/test_optional.py``). The wrappers import
    normally afterwards (scikit-learn's array-API dispatch imports them when asked).
    """
    if "skops.io" in sys.modules:
        return sys.modules["skops.io"]
    blocked = [name for name in _ARRAY_API_WRAPPERS if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        import skops.io
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return skops.io
