"""The one way an ONNX model file becomes an inference session: onnxruntime on the CPU.

One thread each, so a session's outputs do not depend on how many cores the machine has and
several sessions can share a dashboard process; warnings below errors are silenced, since
onnxruntime reports graph optimisations at warning level.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["EXPORT_HELP", "cpu_session", "ort_reason"]

#: Where the documentation shows exports that onnxruntime loads (float32 inputs, ``zipmap=False``).
EXPORT_HELP = "docs/own_model.md, section 'ONNX (skl2onnx)'"
# onnxruntime prefixes its messages with "[ONNXRuntimeError] : <code> : <NAME> :".
_PREFIX = re.compile(r"^\s*\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*")


def ort_reason(exc: BaseException) -> str:
    """onnxruntime's own reason, without its ``[ONNXRuntimeError] : 1 : FAIL :`` prefix."""
    return _PREFIX.sub("", str(exc)).strip().rstrip(".") or type(exc).__name__


def cpu_session(model_bytes: bytes, *, where: str) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model_bytes`` on the CPU provider, one thread.

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
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
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
