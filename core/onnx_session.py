"""The one way an ONNX model file becomes an inference session: onnxruntime on the CPU.

A session runs its operators on ``threads`` intra-op threads, by default every core this
process may use (:func:`default_threads`), as a plain onnxruntime session would: a probe of a
ResNet-18 on one thread took 2.1x a default session on 2 cores. The number is always resolved
to an int here, so the callers can record it (the probe's and certify's manifests): at a given
number the outputs are identical from run to run; across numbers they agree within
:data:`THREAD_RTOL` (onnxruntime splits some reductions among its threads, so float sums may
be added in another order; ``tests/imaging/test_probe_threads.py``). Warnings below errors
are silenced, since onnxruntime reports graph optimisations at warning level.
"""

from __future__ import annotations

import os
import re
from typing import Any

from core.validation import check_positive_int

__all__ = ["EXPORT_HELP", "THREAD_RTOL", "THREAD_ATOL", "check_threads", "cpu_session", "default_threads", "ort_reason"]

#: How far outputs of one model on the same inputs may differ between two thread counts
#: (``numpy.allclose(a, b, rtol=THREAD_RTOL, atol=THREAD_ATOL)`` on the raw float32 outputs);
#: at one thread count they are equal.
THREAD_RTOL = 1e-5
THREAD_ATOL = 1e-5

#: Where the documentation shows exports that onnxruntime loads (float32 inputs, ``zipmap=False``).
EXPORT_HELP = "docs/own_model.md, section 'ONNX (skl2onnx)'"
# onnxruntime prefixes its messages with "[ONNXRuntimeError] : <code> : <NAME> :".
_PREFIX = re.compile(r"^\s*\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*")


def ort_reason(exc: BaseException) -> str:
    """onnxruntime's own reason, without its ``[ONNXRuntimeError] : 1 : FAIL :`` prefix."""
    return _PREFIX.sub("", str(exc)).strip().rstrip(".") or type(exc).__name__


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def check_threads(threads: Any, *, name: str = "threads") -> int:
    """``threads`` as an int >= 1; None means :func:`default_threads`.

    Examples
    --------
    >>> check_threads(2)
    2
    >>> check_threads(0)
    Traceback (most recent call last):
    ...
    ValueError: `threads` must be a positive int or None (onnxruntime threads per session; None: every core); got 0.
    """
    if threads is None:
        return default_threads()
    return check_positive_int(threads, name, allow_none=True, what="onnxruntime threads per session; None: every core")


def cpu_session(model_bytes: bytes, *, where: str, threads: int | None = None, spinning: bool = True) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model_bytes`` on the CPU provider.

    ``threads`` intra-op threads (None: :func:`default_threads`; see :func:`check_threads`).
    ``spinning=False`` lets those threads sleep as soon as they wait, instead of spinning a
    while first (onnxruntime's default): for a caller that works on another thread beside the
    model (the probe prepares its next inputs), whose core the spinning would take. The
    outputs do not depend on it.

    Raises
    ------
    ValueError
        Bytes that are not an ONNX model: ``"{where} is not a readable ONNX model (corrupt or
        truncated?): …"``. A model onnxruntime refuses to load (a type mismatch in the graph, an
        unsupported operator or opset): ``"{where}: onnxruntime cannot load this model: <its
        reason>. …"``, pointing to :data:`EXPORT_HELP`.
    """
    import onnxruntime as ort
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidProtobuf

    options = ort.SessionOptions()
    options.intra_op_num_threads = check_threads(threads)
    options.inter_op_num_threads = 1  # the default sequential execution runs one operator at a time
    options.log_severity_level = 3
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(bytes(model_bytes), options, providers=["CPUExecutionProvider"])
    except InvalidProtobuf as exc:
        raise ValueError(f"{where} is not a readable ONNX model (corrupt or truncated?): {ort_reason(exc)}") from None
    except Exception as exc:  # Fail, InvalidGraph, NotImplemented: a model, but one onnxruntime refuses
        raise ValueError(
            f"{where}: onnxruntime cannot load this model: {ort_reason(exc)}. Export it again as shown in "
            f"{EXPORT_HELP} (float32 inputs, zipmap=False); a float64 export of a tree model is refused "
            "this way."
        ) from None
