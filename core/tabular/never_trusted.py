"""Types a ``.skops`` file may never load, whatever the caller trusts: a denylist and a rule.

skops refuses every type outside its trusted set until the caller names it (``trusted=[...]``
in Python, ``--trust`` on the command line, *Trust this type and retry* in the dashboard). A
type is a dotted name that skops resolves by importing its module, so a file can name any
importable function: a pipeline whose ``FunctionTransformer(func=os.system)`` is saved as
``posix.system`` runs a shell command the first time it transforms a row, and
``audit --trust posix.system`` was enough to load it. A fitted model has no use for such a
type, and the machine that loads it has every reason to fear it; so these types are refused
before skops constructs anything, and no trust list, flag or button can allow them.

The rule
--------
A type name ``a.b.c.Name`` (a class, a function, or ``Class.method`` for a bound method, as
:func:`skops.io.get_untrusted_types` reports them) is **never trusted** when

1. any dotted prefix of it (``a``, ``a.b``, ``a.b.c``, ... or the whole name) is a key of
   :data:`NEVER_TRUSTED_MODULES` (a module and everything in it: ``os``, ``subprocess``,
   ``pickle``, ``socket``, ...) or of :data:`NEVER_TRUSTED_NAMES` (one member of an otherwise
   harmless module: ``builtins.eval``, ``operator.attrgetter``, ``numpy.load``, ...); or
2. one of its parts is a dunder name (``__import__``, ``__globals__``, ``__builtins__``,
   ``__subclasses__``): such names lead from any object to the interpreter's internals.
   Single-underscore private names (``sklearn.tree._tree.Tree``) are ordinary names.

Names are compared without surrounding whitespace or empty parts, and case-insensitively (an
import on a case-insensitive file system may accept ``OS.system``), so ``" os.system"``,
``"os..system"`` and ``"OS.System"`` are refused like ``os.system``. The C twins of the
modules are listed too: ``os.system`` is saved as ``posix.system`` (``nt.system`` on
Windows), ``io.open`` as ``_io.open``, and the pickle module's C loaders sit in ``_pickle``.

Why these
---------
Each entry reaches one of: the operating system (processes, signals, the environment, native
code), arbitrary code (``eval``, importers, code objects, debuggers, other loaders such as
``skops.io.loads`` itself), pickles (which run code on load), files (read, write, delete), the
network, or any attribute of any object (``getattr``, ``operator.attrgetter``, ``vars``, ``gc``),
which leads from a harmless object to all of the above. The lists follow the usual escape
routes of Python sandboxes and pickle exploits; :data:`NEVER_TRUSTED_MODULES` and
:data:`NEVER_TRUSTED_NAMES` give the reason of each entry.

Two decisions worth stating:

- ``functools.partial`` is *not* listed: skops saves the wrapped function as its own node
  (``partial(os.system, "...")`` is reported as ``functools.partial`` *and* ``posix.system``),
  so the function is judged by its own name. ``operator.attrgetter`` / ``methodcaller`` are
  listed: they reach arbitrary attributes and methods by a string the file chooses.
- ``pathlib``, ``tempfile``, ``shutil``, ``io.open`` and the like are listed: a bound method
  such as ``pathlib.PosixPath.write_text`` is a function the file can hand to
  ``FunctionTransformer`` like any other.

A name can also be an alias: a library module that did ``from importlib import import_module``
exposes ``importlib.import_module`` as ``sklearn.utils.discovery.import_module``.
:func:`alias_of` follows such a name through the modules that are *already imported* (their
dictionaries are read, nothing is imported and no module ``__getattr__`` runs) to the name of
the object it finds, and :func:`refusal_reason` judges both names.

Limits (what no name check can catch): a trusted type whose own code does harm; a function of
a module that is not yet imported and re-exports a listed one; a user's own module (``mypkg``)
whose function calls ``os.system``; and crafted *data* for a trusted type (skops notes that a
crafted ``sklearn.tree._tree.Tree`` can crash the process). Such types still need the user's
explicit trust, which stays the user's decision.

Enforced by :func:`core.tabular.persist.load_skops` (every name in the file, and the caller's
``trusted``), :func:`core.tabular.persist.load_estimator`, the certify task loader and
:func:`core.tabular.model_files.load_model_bytes` (the caller's list, whatever the format), and
the ``audit --trust`` option; the dashboard never offers these types for trust.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = [
    "NEVER_TRUSTED_MODULES",
    "NEVER_TRUSTED_NAMES",
    "NeverTrustedTypeError",
    "alias_of",
    "check_trust_list",
    "never_trusted",
    "refusal_reason",
    "refuse_never_trusted",
]

_OS = "it can reach the operating system"
_CODE = "it can run arbitrary code"
_PICKLE = "it loads pickles, which run arbitrary code"
_FILES = "it can read, write or delete files"
_NET = "it can reach the network"
_ATTR = "it reaches any attribute of any object, and from there the operating system"
_DUNDER = "dunder names reach the interpreter's internals (__import__, __globals__, __subclasses__)"


def _table(groups: Mapping[str, str]) -> Mapping[str, str]:
    """``{"a b c": reason}`` -> ``{"a": reason, "b": reason, "c": reason}``, read-only."""
    out: dict[str, str] = {}
    for keys, reason in groups.items():
        for key in keys.split():
            if key.lower() in out:
                raise ValueError(f"{key!r} is listed twice.")
            out[key.lower()] = reason
    return MappingProxyType(out)


#: Modules (with everything under them) that are never trusted -> why.
NEVER_TRUSTED_MODULES: Mapping[str, str] = _table(
    {
        # processes, the environment, signals, native code, interpreter state
        "os posix nt posixpath ntpath genericpath subprocess _posixsubprocess _winapi msvcrt winreg _winreg "
        "sys pty tty termios signal _signal resource fcntl mmap ctypes _ctypes cffi _cffi_backend platform "
        "multiprocessing _multiprocessing concurrent threading _thread atexit faulthandler site "
        "pip ensurepip setuptools distutils venv _osx_support getpass pwd grp spwd syslog mailcap "
        "IPython numpy.ctypeslib numpy.f2py numpy.distutils torch.utils.cpp_extension sklearn.utils._testing "
        "scipy._lib._testutils": _OS,
        # importers, code objects, debuggers and everything that runs a string or a file
        "importlib _imp _frozen_importlib _frozen_importlib_external imp zipimport pkgutil runpy code codeop "
        "types timeit trace profile cProfile pdb bdb doctest pydoc idlelib tkinter _tkinter compileall py_compile "
        "numpy.testing torch.jit torch.hub skops": _CODE,
        # pickle and everything built on it (joblib's loaders included)
        "pickle _pickle cPickle copyreg copy_reg shelve marshal dill cloudpickle jsonpickle joblib yaml ruamel "
        "numpy.lib.npyio numpy.lib._npyio_impl numpy.lib.format torch.serialization torch.package "
        "sklearn.externals.joblib sklearn.utils._joblib": _PICKLE,
        # files
        "shutil tempfile pathlib _io _pyio fileinput zipfile tarfile sqlite3 _sqlite3 dbm logging zipapp "
        "pandas.io scipy.io scipy._lib._tmpdirs sklearn.datasets dask": _FILES,
        # the network
        "socket _socket ssl _ssl select selectors asyncio asyncore asynchat urllib urllib2 urllib3 http httplib "
        "ftplib smtplib smtpd poplib imaplib nntplib telnetlib xmlrpc xmlrpclib socketserver "
        "wsgiref webbrowser antigravity requests httpx aiohttp websocket websockets paramiko pycurl fsspec "
        "s3fs gcsfs boto3 botocore huggingface_hub pooch distributed numpy.lib._datasource scipy.datasets": _NET,
        # every object, every frame
        "gc inspect": _ATTR,
    }
)

#: Single members of otherwise harmless modules that are never trusted -> why.
NEVER_TRUSTED_NAMES: Mapping[str, str] = _table(
    {
        "builtins.eval builtins.exec builtins.compile builtins.__import__ builtins.breakpoint "
        "builtins.__build_class__": _CODE,
        "builtins.getattr builtins.setattr builtins.delattr builtins.globals builtins.locals builtins.vars "
        "operator.attrgetter operator.methodcaller _operator.attrgetter _operator.methodcaller": _ATTR,
        "builtins.help builtins.input builtins.exit builtins.quit": _OS,
        "builtins.open io.open io.open_code io.FileIO codecs.open gzip.open gzip.GzipFile bz2.open bz2.BZ2File lzma.open "
        "lzma.LZMAFile numpy.save numpy.savez numpy.savez_compressed numpy.savetxt numpy.loadtxt numpy.genfromtxt "
        "numpy.fromfile numpy.fromregex numpy.memmap numpy.ndarray.tofile numpy.rec.fromfile "
        "numpy._core.records.fromfile torch.save scipy.LowLevelCallable": _FILES,
        "numpy.load numpy.ndarray.dump numpy.ndarray.dumps numpy.DataSource torch.load pandas.read_pickle "
        "pandas.to_pickle": _PICKLE,
        "pandas.read_clipboard pandas.read_csv pandas.read_excel pandas.read_feather pandas.read_fwf "
        "pandas.read_hdf pandas.read_html pandas.read_json pandas.read_orc pandas.read_parquet pandas.read_sas "
        "pandas.read_spss pandas.read_sql pandas.read_sql_query pandas.read_sql_table pandas.read_stata "
        "pandas.read_table pandas.read_xml": _FILES,
    }
)


def _parts(type_name: str) -> list[str]:
    return [p.strip().lower() for p in str(type_name).split(".") if p.strip()]


def never_trusted(type_name: str) -> str | None:
    """Why ``type_name`` is never trusted, or None when the rule does not refuse it.

    Only the name is judged (nothing is imported; see :func:`alias_of` for aliases).

    Parameters
    ----------
    type_name : str
        A dotted type name as skops reports it: ``module.Name`` or ``module.Class.method``.

    Returns
    -------
    str or None
        The reason (a phrase: "it can reach the operating system"), or None.

    Examples
    --------
    >>> never_trusted("posix.system")
    'it can reach the operating system'
    >>> never_trusted("builtins.eval")
    'it can run arbitrary code'
    >>> never_trusted("sklearn.preprocessing._function_transformer.FunctionTransformer") is None
    True
    """
    parts = _parts(type_name)
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        reason = NEVER_TRUSTED_NAMES.get(prefix) or NEVER_TRUSTED_MODULES.get(prefix)
        if reason is not None:
            return reason
    if any(len(p) > 4 and p.startswith("__") and p.endswith("__") for p in parts):
        return _DUNDER
    return None


def _canonical(obj: object) -> str | None:
    """The name ``obj`` goes by (module, function or class), read without running its code."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, types.ModuleType):
        name = obj.__dict__.get("__name__")
        return name if isinstance(name, str) else None
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            return f"{module}.{qualname}"
        if isinstance(obj, types.BuiltinFunctionType) and isinstance(obj.__self__, types.ModuleType):
            return f"{obj.__self__.__name__}.{obj.__name__}"
    return None


def alias_of(type_name: str) -> str | None:
    """The real name of what ``type_name`` names, when an imported module re-exports it.

    The longest prefix of ``type_name`` that is an *already imported* module is looked up in
    ``sys.modules``, and the rest of the name is followed through ``__dict__`` lookups
    (:func:`inspect.getattr_static`): nothing is imported and no ``__getattr__`` or property
    runs. Best effort: a module that is not imported yet is not followed.

    Parameters
    ----------
    type_name : str

    Returns
    -------
    str or None
        ``module.qualname`` of the object found, when it differs from ``type_name``; else None.

    Examples
    --------
    >>> import sklearn.utils.discovery  # does ``from importlib import import_module``
    >>> alias_of("sklearn.utils.discovery.import_module")
    'importlib.import_module'
    >>> alias_of("importlib.import_module") is None
    True
    """
    parts = [p.strip() for p in str(type_name).split(".") if p.strip()]
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        obj: object = module
        for part in parts[cut:]:
            try:
                obj = inspect.getattr_static(obj, part)
            except AttributeError:
                return None
        real = _canonical(obj)
        return real if real is not None and real != ".".join(parts) else None
    return None


def refusal_reason(type_name: str) -> tuple[str, str | None] | None:
    """Why ``type_name`` is never trusted, judging the name and the name it is an alias of.

    Returns
    -------
    (reason, alias) or None
        ``alias`` is the real name when only that one is refused (else None).

    Examples
    --------
    >>> refusal_reason("posix.system")
    ('it can reach the operating system', None)
    >>> import sklearn.utils.discovery
    >>> refusal_reason("sklearn.utils.discovery.import_module")
    ('it can run arbitrary code', 'importlib.import_module')
    """
    reason = never_trusted(type_name)
    if reason is not None:
        return reason, None
    alias = alias_of(type_name)
    if alias is not None and (reason := never_trusted(alias)) is not None:
        return reason, alias
    return None


class NeverTrustedTypeError(ValueError):
    """A ``.skops`` file holds, or a caller's trust list names, types that are never trusted.

    Not an :class:`~core.tabular.persist.UntrustedTypesError`: nothing can be offered for
    trust, and a caller that offers trust for untrusted types must not catch this one.

    Attributes
    ----------
    where : str
        The file as the user named it (no server path is added).
    types : tuple of str
        The never-trusted names, sorted.
    reasons : dict of str -> str
        Why each one is never trusted.
    descriptions : dict of str -> str
        What each one is ("a function in module posix"), where known.
    named_by_caller : bool
        True when the caller's trust list named them (the file may not even hold them).
    details : str
        The message without the advice (callers word their own advice from it).
    """

    def __init__(
        self,
        where: str,
        types: Iterable[str],
        *,
        reasons: Mapping[str, str],
        descriptions: Mapping[str, str] | None = None,
        named_by_caller: bool = False,
    ) -> None:
        self.where = where
        self.types = tuple(sorted(set(types)))
        self.reasons = {t: reasons[t] for t in self.types}
        self.descriptions = {t: d for t, d in (descriptions or {}).items() if t in self.types}
        self.named_by_caller = named_by_caller
        self.details = self._details()
        it = "it" if len(self.types) == 1 else "them"
        if named_by_caller:
            advice = (
                f"No --trust (Python: trusted=[...]) can allow {it}; leave {it} out, and re-save the model "
                f"without {it} if {where} holds {it}."
            )
        else:
            advice = f"No --trust can allow {it}; re-save the model without {it}."
        super().__init__(f"{self.details} {advice}")

    def _item(self, name: str) -> str:
        description = self.descriptions.get(name)
        return f"{name} ({description})" if description else name

    def _details(self) -> str:
        subject = "--trust names" if self.named_by_caller else f"{self.where} contains"
        if len(self.types) == 1:
            (name,) = self.types
            return f"{subject} {self._item(name)}, which is never trusted: {self.reasons[name]}."
        items = "; ".join(f"{self._item(t)}: {self.reasons[t]}" for t in self.types)
        return f"{subject} {len(self.types)} types that are never trusted: {items}."


def check_trust_list(trusted: Iterable[str], *, where: str) -> list[str]:
    """The caller's trust list as a list, refused if it names a never-trusted type.

    Parameters
    ----------
    trusted : iterable of str
        Type names the caller trusts (``--trust``, ``trusted=[...]``); a bare string is refused.
    where : str
        The file the list is for (named in the message).

    Returns
    -------
    list of str

    Raises
    ------
    NeverTrustedTypeError
        Naming each never-trusted entry and why.
    ValueError
        ``trusted`` is a string or holds something other than strings.

    Examples
    --------
    >>> check_trust_list(["sklearn.tree._tree.Tree"], where="model.skops")
    ['sklearn.tree._tree.Tree']
    >>> check_trust_list(["posix.system"], where="model.skops")
    Traceback (most recent call last):
    ...
    core.tabular.never_trusted.NeverTrustedTypeError: --trust names posix.system, which is never trusted: ...
    """
    if isinstance(trusted, (str, bytes)):
        raise ValueError(f"`trusted` must be a list of type names; got the string {trusted!r}.")
    names = list(trusted)
    bad = [t for t in names if not isinstance(t, str)]
    if bad:
        raise ValueError(f"`trusted` must hold type names (str); got {bad[0]!r}.")
    refuse_never_trusted(names, where=where, named_by_caller=True)
    return names


def refuse_never_trusted(
    type_names: Iterable[str],
    *,
    where: str,
    descriptions: Mapping[str, str] | None = None,
    named_by_caller: bool = False,
) -> None:
    """Raise :class:`NeverTrustedTypeError` if any of ``type_names`` is never trusted.

    ``descriptions`` (name -> "a function in module posix") enrich the message; an alias is
    described by the name it stands for.
    """
    reasons: dict[str, str] = {}
    described = dict(descriptions or {})
    for name in type_names:
        found = refusal_reason(name)
        if found is None:
            continue
        reasons[name], alias = found
        if alias is not None:
            described[name] = "; ".join(d for d in (described.get(name), f"it is {alias}") if d)
    if reasons:
        raise NeverTrustedTypeError(
            where, reasons, reasons=reasons, descriptions=described, named_by_caller=named_by_caller
        )
