"""A fitted classifier exported to ONNX, run with onnxruntime (CPU) on raw DataFrames.

:class:`OnnxClassifier` gives an ``.onnx`` file the interface the audit needs:
``predict_proba(frame)`` on raw rows, ``classes_`` and ``feature_names_in_``.

Inputs are matched to raw columns by name: either one input per column (shape ``[N, 1]``,
as skl2onnx writes for a ``ColumnTransformer`` pipeline), or a single 2-D float input whose
column order comes from ``feature_order`` or the model's metadata (``feature_order`` or
``feature_names``: a JSON list or comma-separated names). The probability output is the one
named like ``prob*`` or else the only float output of shape ``[N, C]``; a ZipMap output (a
sequence of label -> probability maps, skl2onnx's default) also names the classes. Without a
ZipMap, classes come from ``classes`` or the metadata ``classes`` (JSON list).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["OnnxClassifier"]

_NUMPY_OF = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(string)": object,
    "tensor(bool)": np.bool_,
}


def _names(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("["):
        return [str(v) for v in json.loads(value)]
    return [v.strip() for v in value.split(",") if v.strip()]


class OnnxClassifier:
    """An ONNX classifier with ``predict_proba`` on raw DataFrames.

    Parameters
    ----------
    model_bytes : bytes
        The ``.onnx`` file.
    feature_order : sequence of str, optional
        Raw column of every column of a single 2-D input (overrides the metadata).
    classes : sequence, optional
        Class labels of the probability columns (overrides the ZipMap and the metadata).
    default_classes : sequence, optional
        Used only when neither a ZipMap output nor the metadata names the classes (e.g. the
        sorted labels of the training table, as scikit-learn orders ``classes_``).
    where : str
        Name of the file, for error messages.
    threads : int, optional
        onnxruntime's intra-op threads (None: every core; :func:`core.onnx_session.cpu_session`),
        kept resolved in :attr:`threads`.

    Raises
    ------
    ValueError
        Not a readable ONNX model, no probability output, a single 2-D input without a
        column order, classes unknown.
    """

    def __init__(
        self,
        model_bytes: bytes,
        *,
        feature_order: Sequence[str] | None = None,
        classes: Sequence[Any] | None = None,
        default_classes: Sequence[Any] | None = None,
        where: str = "the ONNX model",
        threads: int | None = None,
    ) -> None:
        from core.onnx_session import check_threads, cpu_session

        self.model_bytes = bytes(model_bytes)
        self._where = where
        self.threads = check_threads(threads)
        self._session = cpu_session(self.model_bytes, where=where, threads=self.threads)
        meta = self._session.get_modelmeta().custom_metadata_map
        inputs = self._session.get_inputs()
        self._inputs = [(i.name, i.type, i.shape) for i in inputs]
        single = len(inputs) == 1 and len(inputs[0].shape) == 2 and inputs[0].shape[1] not in (1, None)
        order = list(feature_order) if feature_order is not None else None
        if order is None and single:
            for key in ("feature_order", "feature_names"):
                if key in meta:
                    order = _names(meta[key])
                    break
        if single:
            if order is None:
                raise ValueError(
                    f"{where} has one 2-D input {inputs[0].name!r} of width {inputs[0].shape[1]}; give the raw column "
                    "of each of its columns with --feature-order FILE (one name a line) or metadata 'feature_order'."
                )
            if len(order) != inputs[0].shape[1]:
                raise ValueError(
                    f"{where}: the feature order names {len(order)} columns; the input "
                    f"{inputs[0].name!r} has {inputs[0].shape[1]}."
                )
            self._feature_order: list[str] | None = order
            self.feature_names_in_ = np.asarray(order, dtype=object)
        else:
            self._feature_order = None
            self.feature_names_in_ = np.asarray([i.name for i in inputs], dtype=object)
        outputs = self._session.get_outputs()
        prob = [o for o in outputs if "prob" in o.name.lower()]
        if not prob:
            prob = [o for o in outputs if o.type in ("tensor(float)", "tensor(double)") and len(o.shape) == 2]
        if len(prob) != 1:
            raise ValueError(
                f"{where}: cannot tell which output holds the probabilities; outputs: "
                f"{[(o.name, o.type, o.shape) for o in outputs]}."
            )
        self._prob_name = prob[0].name
        self._zipmap = prob[0].type.startswith("seq(map")
        if classes is None and "classes" in meta:
            classes = json.loads(meta["classes"])
        self._declared_classes = None if classes is None else list(classes)
        self.classes_ = None if classes is None else _as_classes(classes)
        if self._zipmap and self.classes_ is None:
            self.classes_ = _zipmap_classes(self.model_bytes)
        if self._zipmap:
            # A ZipMap returns one Python dict per row; read the tensor it is built from instead,
            # exposed as an extra graph output (same numbers, no per-row Python).
            tensor_name, patched = _expose_zipmap_input(self.model_bytes)
            self._session = cpu_session(patched, where=where, threads=self.threads)
            self._prob_name, self._zipmap = tensor_name, False
        if self.classes_ is None and default_classes is not None:
            self.classes_ = _as_classes(default_classes)
        if self.classes_ is None:
            raise ValueError(
                f"{where} does not state its class labels (no ZipMap output, no 'classes' metadata); "
                "pass them (Python: classes=[...])."
            )

    # ----------------------------------------------------------------------------------------
    def config(self) -> dict:
        """JSON settings that rebuild this object from the same bytes (:meth:`from_config`)."""
        return {
            "feature_order": self._feature_order,
            "classes": [c.item() if isinstance(c, np.generic) else c for c in self.classes_],
        }

    def __reduce__(self):
        # In-memory transport (e.g. to Dask workers) rebuilds the session from the model bytes.
        return (OnnxClassifier.from_config, (self.model_bytes, self.config()))

    @classmethod
    def from_config(cls, model_bytes: bytes, config: dict, *, threads: int | None = None) -> OnnxClassifier:
        return cls(
            model_bytes, feature_order=config.get("feature_order"), classes=config.get("classes"), threads=threads
        )

    def with_threads(self, threads: int | None) -> OnnxClassifier:
        """The same model on a session of ``threads`` threads (``self`` when it already has them)."""
        from core.onnx_session import check_threads

        if check_threads(threads) == self.threads:
            return self
        config = self.config()
        return OnnxClassifier(
            self.model_bytes,
            feature_order=config["feature_order"],
            classes=config["classes"],
            where=self._where,
            threads=threads,
        )

    def _feeds(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"{self._where} needs a DataFrame of raw columns; got {type(frame).__name__}.")
        missing = [c for c in self.feature_names_in_ if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{self._where} needs columns {missing} that the table does not have "
                f"(inputs: {list(self.feature_names_in_)})."
            )
        if self._feature_order is not None:
            name, kind, _ = self._inputs[0]
            return {name: frame[self._feature_order].to_numpy(dtype=_NUMPY_OF.get(kind, np.float32))}
        feeds = {}
        for name, kind, _ in self._inputs:
            dtype = _NUMPY_OF.get(kind)
            if dtype is None:
                raise ValueError(f"{self._where}: input {name!r} has unsupported type {kind}.")
            col = frame[name]
            if dtype is object:
                # An empty cell of a text input is sent as "" (pandas' NaN reached onnxruntime as
                # the text "nan"): the marker skl2onnx's text imputer is given in docs/own_model.md.
                values = col.astype(object).where(col.notna(), "").astype(str).to_numpy(dtype=object)
            else:
                values = col.to_numpy(dtype=dtype)
            feeds[name] = values.reshape(-1, 1)
        return feeds

    def _run(self, frame: pd.DataFrame) -> list:
        feeds = self._feeds(frame)
        try:
            return self._session.run([self._prob_name], feeds)
        except Exception as exc:  # onnxruntime's Fail / InvalidArgument / RuntimeException
            from core.onnx_session import EXPORT_HELP, ort_reason

            raise ValueError(
                f"{self._where}: onnxruntime cannot run this model on the table: {ort_reason(exc)}. "
                f"See {EXPORT_HELP} for exports that run."
            ) from None

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Probabilities of shape (n_rows, n_classes), float64, columns in ``classes_`` order."""
        (out,) = self._run(frame)
        if self._zipmap:
            keys = list(self.classes_)
            P = np.array([[row[k] for k in keys] for row in out], dtype=np.float64)
        else:
            P = np.asarray(out, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != len(self.classes_):
            raise ValueError(
                f"{self._where}: output {self._prob_name!r} has shape {P.shape}; expected "
                f"(n_rows, {len(self.classes_)}) for classes {list(self.classes_)}."
            )
        total = P.sum(axis=1)
        bad = np.flatnonzero(np.abs(total - 1.0) > 1e-4)
        if bad.size:
            raise ValueError(
                f"{self._where}: output {self._prob_name!r} does not sum to 1 (row {int(bad[0])} sums to "
                f"{float(total[bad[0]]):.6g}); is it a probability output (not scores/logits)?"
            )
        return P

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(frame), axis=1)]


def _as_classes(values: Sequence[Any]) -> np.ndarray:
    values = list(values)
    return np.asarray(values, dtype=object) if any(isinstance(v, str) for v in values) else np.asarray(values)


def _zipmap_classes(model_bytes: bytes) -> np.ndarray | None:
    """Class labels of the graph's ZipMap node (its ``classlabels_*`` attribute)."""
    import onnx

    graph = onnx.load_from_string(model_bytes).graph
    for node in graph.node:
        if node.op_type == "ZipMap":
            for attr in node.attribute:
                if attr.name == "classlabels_strings":
                    return _as_classes([v.decode("utf-8") for v in attr.strings])
                if attr.name == "classlabels_int64s":
                    return _as_classes(list(attr.ints))
    return None


def _expose_zipmap_input(model_bytes: bytes) -> tuple[str, bytes]:
    """The name of the ZipMap node's input tensor and the model with it added as an output."""
    import onnx

    model = onnx.load_from_string(model_bytes)
    node = next(n for n in model.graph.node if n.op_type == "ZipMap")
    name = node.input[0]
    model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return name, model.SerializeToString()
