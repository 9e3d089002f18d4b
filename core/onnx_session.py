"""The one way an ONNX model file becomes an inference session: onnxruntime on the CPU.

One thread each, so a session's outputs do not depend on how many cores the machine has and
several sessions can share a dashboard process; warnings below errors are silenced, since
onnxruntime reports graph optimisations at warning level.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cpu_session"]


def cpu_session(model_bytes: bytes, *, where: str) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model_bytes`` on the CPU provider, one thread.

    Raises
    ------
    ValueError
        ``"{where} is not a readable ONNX model (corrupt or truncated?): …"`` when onnxruntime
        cannot parse the bytes.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(bytes(model_bytes), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail / InvalidProtobuf types
        raise ValueError(f"{where} is not a readable ONNX model (corrupt or truncated?): {exc}") from None
