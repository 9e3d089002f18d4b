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
``mlflow``      mlflow-skinny (the client): ``--model-uri``, ``--mlflow-experiment``
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
import pkgutil
import sys
import threading
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
    "mlflow": "mlflow",
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


_SKOPS_IMPORT = threading.Lock()


def _walk_packages_but_externals(path=None, prefix="", onerror=None):
    """:func:`pkgutil.walk_packages`, except that it does not import ``sklearn.externals``'s
    sub-packages to look inside them (their names are still yielded at the first level)."""
    for info in pkgutil.iter_modules(path, prefix):
        yield info
        if not info.ispkg or info.name.startswith("sklearn.externals"):
            continue
        try:
            __import__(info.name)
        except ImportError:
            if onerror is not None:
                onerror(info.name)
            continue
        except Exception:
            if onerror is None:
                raise
            onerror(info.name)
            continue
        yield from _walk_packages_but_externals(
            getattr(sys.modules[info.name], "__path__", None) or [], info.name + ".", onerror
        )


class _PkgutilForSklearn:
    """``pkgutil`` as ``sklearn.utils.discovery`` sees it while skops is imported."""

    walk_packages = staticmethod(_walk_packages_but_externals)

    def __getattr__(self, name):
        return getattr(pkgutil, name)


def skops_io() -> ModuleType:
    """``skops.io``, imported without loading torch, dask or cupy.

    On import, skops lists scikit-learn's estimators (``sklearn.utils.all_estimators``), which
    walks and imports every scikit-learn sub-package, among them the vendored
    ``array_api_compat`` wrappers of torch, dask and cupy, which import those libraries when
    installed (torch alone took 4-6 s). ``all_estimators`` ignores every ``externals`` module
    anyway (it imports them only while looking for sub-packages), so for the time of skops'
    import ``sklearn.utils.discovery`` walks the packages without descending into
    ``sklearn.externals``: skops' trusted types stay the same (checked in
    ``tests/test_optional.py``). Nothing global changes: other threads import as usual (an
    earlier version hid the wrappers in ``sys.modules``, and a thread importing one meanwhile
    failed with ``ModuleNotFoundError``).
    """
    if "skops.io" in sys.modules:
        return sys.modules["skops.io"]
    import sklearn.utils.discovery as discovery

    with _SKOPS_IMPORT:
        real = discovery.pkgutil
        discovery.pkgutil = _PkgutilForSklearn()
        try:
            import skops.io
        finally:
            discovery.pkgutil = real
    return skops.io
