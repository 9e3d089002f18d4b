"""Reading a user's model file for ``audit --model-file`` and the dashboard.

Only formats that cannot run code when read are accepted: ``.skops`` (:mod:`skops.io`, types
outside skops' trusted set refused unless named in ``trust``, and the types of
:mod:`core.tabular.never_trusted` refused whatever ``trust`` says) and ``.onnx`` (onnxruntime).
Pickle and joblib files are refused by name, never opened. The tables that go with the model
are read by :func:`core.validation.read_table`, the one reader of a user's table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MODEL_SUFFIXES", "load_model_bytes", "load_model_file", "read_feature_order"]

#: Model file suffixes the tool reads.
MODEL_SUFFIXES = (".skops", ".onnx")
_REFUSED = (".pkl", ".pickle", ".joblib", ".sav", ".pt", ".pth", ".dill", ".cloudpkl")


def load_model_bytes(
    data: bytes,
    name: str,
    *,
    trust: Iterable[str] = (),
    feature_order: Sequence[str] | None = None,
    default_classes: Sequence[Any] | None = None,
    actor: Any = None,
) -> Any:
    """The fitted model in ``data`` (the bytes of the file called ``name``).

    Parameters
    ----------
    data : bytes
    name : str
        File name; its suffix picks the format (``.skops`` or ``.onnx``).
    trust : iterable of str
        Types outside skops' trusted set that may be loaded (``--trust``); a never-trusted
        type here is refused whatever the format.
    feature_order : sequence of str, optional
        Raw column of each column of a single 2-D ONNX input (``--feature-order``).
    default_classes : sequence, optional
        Class labels for an ONNX model that does not state them.
    actor : core.reviews.permissions.Actor, optional
        Who loads it on a server with sign-in: must be allowed to ``upload``, and to ``trust``
        when ``trust`` names any type (checked before a byte is read). None: local mode.

    Raises
    ------
    NeverTrustedTypeError
        ``trust`` names, or the ``.skops`` file holds, a type that is never trusted
        (:class:`core.tabular.never_trusted.NeverTrustedTypeError`, a ``ValueError``).
    ValueError
        Another format (pickle / joblib refused by name), untrusted skops types (listed:
        :class:`core.tabular.persist.UntrustedTypesError`), a corrupt or truncated file, an
        ONNX model onnxruntime refuses (its own reason quoted, and where the documentation
        shows an export that loads: :func:`core.onnx_session.cpu_session`).
    """
    from core.reviews.permissions import check
    from core.tabular.never_trusted import check_trust_list

    check(actor, "upload", what=name)
    trust = check_trust_list(trust, where=name)
    if trust:
        check(actor, "trust", what=f"{', '.join(trust)} (in {name})")
    suffix = Path(name).suffix.lower()
    if suffix in _REFUSED:
        raise ValueError(
            f"{name}: {suffix} files are pickles, which can run code when loaded; they are never read. "
            "Save the model with skops (skops.io.dump(model, 'model.skops')) or export it to ONNX "
            "(docs/own_model.md shows both)."
        )
    if suffix not in MODEL_SUFFIXES:
        raise ValueError(f"{name}: unknown model format {suffix or '(no suffix)'!r}; expected one of {MODEL_SUFFIXES}.")
    if not data:
        raise ValueError(f"{name} is empty.")
    if suffix == ".skops":
        from core.tabular.persist import load_skops

        return load_skops(data, trusted=trust, where=name)
    from core.tabular.onnx_model import OnnxClassifier

    return OnnxClassifier(data, feature_order=feature_order, default_classes=default_classes, where=name)


def load_model_file(path: str | Path, **options: Any) -> Any:
    """:func:`load_model_bytes` on a file (its suffix is checked before it is read)."""
    path = Path(path)
    if path.suffix.lower() in _REFUSED or path.suffix.lower() not in MODEL_SUFFIXES:
        return load_model_bytes(b"-", path.name, **options)  # raises the refusal without reading
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.")
    return load_model_bytes(path.read_bytes(), str(path), **options)


def read_feature_order(path: str | Path) -> list[str]:
    """Column names from a file: one per line, or a JSON list."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"feature-order file {str(path)!r} does not exist.")
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("["):
        try:
            names = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not a JSON list of column names ({exc}).") from exc
    else:
        names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}: expected column names (one a line or a JSON list); got {names!r}.")
    return names
