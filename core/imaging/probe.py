"""Probe a user's ONNX image classifier: clean, corrupted and transformed outputs (SPEC B.5).

:class:`OnnxImageClassifier` runs an ``.onnx`` model with onnxruntime (CPU). Its single
float input is read from the model: ``NCHW`` or ``NHWC`` with a fixed height and width (and a
channel count of 1 or 3). Images are resized to that size, scaled to [0, 1], normalised with
``(x - mean) / std`` per channel and fed in batches. The output ``(N, C)`` is taken as
probabilities when every clean row lies in [0, 1] and sums to 1 (within 1e-3), else as logits
and soft-maxed.

:func:`run_probes` produces, for every image, the clean outputs, the synthetic probes (the 9
corruptions x 2 severities of SPEC B.5 by default, :data:`DEFAULT_PROBES`) and the natural
transforms (the 18 of :data:`core.imaging.corruptions.NATURAL_TRANSFORMS`, the TTA comparator),
in the long schemas of ``docs/DEVELOPING.md`` read by ``python -m core paired --probes ...
--clean-outputs ...`` and the Recapture page; and paired records (synthetic probes as
conditions of source ``synthetic``, optionally real re-captures of source ``recapture``).

Every variant the model sees is an 8-bit image (corruptions are quantised), so
:func:`probe_image` re-draws exactly what the model saw for one image: each (corruption,
severity, image) has its own random stream ``SeedSequence(seed, spawn_key=(type, severity,
position))``, so outputs do not depend on the batch size or on the other images.

Speed: the model (onnxruntime, on every core by default: ``threads``) runs while a second
thread prepares the next variants, and an 8-bit image becomes the model's input by one table look-up per channel
(:meth:`OnnxImageClassifier.model_input`), so a probe takes about as long as its model passes
alone (``tests/bench/bench_probe.py``). The work is cut into batches of ``batch_size`` images
(:class:`ProbePlan`, :func:`probe_raw`), which :mod:`core.scale.probe` spreads over Dask
workers; :func:`assemble_probe_result` turns the raw outputs of all batches into the tables,
whichever engine computed them.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS
from core.imaging.fit import chance_check, image_fit, warn_fit
from core.imaging.images import MAX_PIXELS, ImageSet

__all__ = [
    "DEFAULT_PROBES",
    "UPLOAD_UNPACKED_MB",
    "ModelInput",
    "OnnxImageClassifier",
    "ProbePlan",
    "ProbeResult",
    "assemble_probe_result",
    "check_classes",
    "check_perturbed",
    "open_upload",
    "output_count",
    "parse_floats",
    "parse_natural",
    "parse_probes",
    "probe_image",
    "probe_name",
    "probe_plan",
    "probe_raw",
    "probe_uploaded",
    "read_class_names",
    "run_probes",
    "write_probe_outputs",
]

DEFAULT_SEVERITIES = (2, 4)
DEFAULT_PROBES = tuple((name, s) for name in CORRUPTIONS for s in DEFAULT_SEVERITIES)
"""The 9 corruption types x severities 2 and 4 (the demo pool's probes)."""
_CORRUPTION_INDEX = {name: i for i, name in enumerate(CORRUPTIONS)}
_PROB_SUM_TOL = 1e-3
_FLOAT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}


def probe_name(corruption: str, severity: int) -> str:
    """``"gaussian_noise s2"``: the ``probe`` / ``condition`` value of a corruption probe."""
    return f"{corruption} s{int(severity)}"


def parse_probes(text: str) -> tuple[tuple[str, int], ...]:
    """``"default"`` or a comma list of ``NAME:SEVERITY`` (e.g. ``contrast:2,pixelate:4``)."""
    text = str(text).strip()
    if text == "default":
        return DEFAULT_PROBES
    out = []
    for item in (v.strip() for v in text.split(",") if v.strip()):
        name, _, sev = item.partition(":")
        if name not in CORRUPTIONS or not sev.strip().isdigit() or not 1 <= int(sev) <= 5:
            raise ValueError(
                f"--probes: {item!r} is not NAME:SEVERITY with NAME one of {list(CORRUPTIONS)} and "
                "SEVERITY in 1..5 (or say 'default')."
            )
        out.append((name, int(sev)))
    if not out or len(set(out)) != len(out):
        raise ValueError(f"--probes {text!r}: give at least one probe, each once.")
    return tuple(out)


def parse_natural(text: str) -> tuple[str, ...]:
    """``"default"`` (all 18), ``"none"`` or a comma list of natural-transform names."""
    text = str(text).strip()
    if text == "default":
        return tuple(NATURAL_TRANSFORMS)
    if text == "none":
        return ()
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [n for n in names if n not in NATURAL_TRANSFORMS]
    if bad or not names or len(set(names)) != len(names):
        raise ValueError(
            f"--natural {text!r}: expected 'default', 'none' or distinct names among "
            f"{list(NATURAL_TRANSFORMS)}; not known: {bad}."
        )
    return names


# ------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelInput:
    """What the model's image input expects (read from the ONNX graph).

    Attributes
    ----------
    name : str
    layout : {"NCHW", "NHWC"}
    height, width, channels : int
    batch : int or None
        Fixed batch size of the graph, or None when it is dynamic.
    dtype : numpy dtype
    """

    name: str
    layout: str
    height: int
    width: int
    channels: int
    batch: int | None
    dtype: type


def _fixed(dim) -> int | None:
    return int(dim) if isinstance(dim, (int, np.integer)) and int(dim) > 0 else None


class OnnxImageClassifier:
    """An ONNX image classifier run with onnxruntime on batches of [0, 1] images.

    Parameters
    ----------
    model_bytes : bytes
        The ``.onnx`` file.
    where : str
        Its name, for messages.
    mean, std : sequence of float, optional
        Per-channel normalisation (one value, or one per input channel); default 0 and 1.
    classes : sequence of str, optional
        The class names in the order of the outputs; default: the model's metadata
        ``classes`` (a JSON list), else unknown (None).
    threads : int, optional
        onnxruntime's intra-op threads; None: every core of this process
        (:func:`core.onnx_session.default_threads`). Kept, resolved, in :attr:`threads` and the
        probe's manifest: outputs are identical at one thread count and agree within
        :data:`core.onnx_session.THREAD_RTOL` across counts.

    Attributes
    ----------
    classes : tuple of str or None
        The class names (labels given as names are mapped through them), or None.

    Raises
    ------
    ValueError
        A ``threads`` that is not a positive int; unreadable model; not exactly one float image input of rank 4 with fixed height and
        width (the message shows the input's shape) of at most
        :data:`core.imaging.images.MAX_PIXELS` pixels; ambiguous layout; an output that is not
        ``(N, C)``; bad ``mean`` / ``std``.
    """

    def __init__(
        self,
        model_bytes: bytes,
        *,
        where: str = "the ONNX model",
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        classes: Sequence[str] | None = None,
        threads: int | None = None,
    ) -> None:
        from core.onnx_session import check_threads, cpu_session

        self.model_bytes = bytes(model_bytes)
        self.where = where
        self.sha256 = hashlib.sha256(self.model_bytes).hexdigest()
        self.threads = check_threads(threads)
        # Not spinning: the probe prepares the next inputs on a thread beside the model
        # (_prepared_ahead), and spinning threads took its core (the probe 3% slower).
        self._session = cpu_session(self.model_bytes, where=f"{where}:", threads=self.threads, spinning=False)
        self.input = self._read_input()
        outputs = self._session.get_outputs()
        shape = outputs[0].shape
        if len(shape) != 2:
            raise ValueError(
                f"{where}: output {outputs[0].name!r} has shape {shape}; expected (N, n_classes) "
                "logits or probabilities."
            )
        self._output = outputs[0].name
        self.n_classes = _fixed(shape[1])
        c = self.input.channels
        self.mean = self._norm(mean, 0.0, "--mean", c)
        self.std = self._norm(std, 1.0, "--std", c)
        if (self.std <= 0).any():
            raise ValueError(f"--std must be positive; got {self.std.tolist()}.")
        self.classes = self._class_names(classes)
        self._levels: np.ndarray | None = None

    def _read_input(self) -> ModelInput:
        inputs = self._session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(
                f"{self.where}: has {len(inputs)} inputs {[i.name for i in inputs]}; expected one image input."
            )
        inp = inputs[0]
        shape = list(inp.shape)
        if inp.type not in _FLOAT_TYPES:
            raise ValueError(f"{self.where}: input {inp.name!r} is {inp.type}; expected a float tensor.")
        if len(shape) != 4:
            raise ValueError(
                f"{self.where}: input {inp.name!r} has shape {shape}; expected an image batch NCHW or NHWC (rank 4)."
            )
        first, last = _fixed(shape[1]), _fixed(shape[3])
        if first in (1, 3) and last not in (1, 3):
            layout, c, h, w = "NCHW", first, shape[2], shape[3]
        elif last in (1, 3) and first not in (1, 3):
            layout, c, h, w = "NHWC", last, shape[1], shape[2]
        elif first in (1, 3) and last in (1, 3):
            raise ValueError(
                f"{self.where}: input {inp.name!r} has shape {shape}: both NCHW and NHWC fit; cannot "
                "tell the channel axis."
            )
        else:
            raise ValueError(
                f"{self.where}: input {inp.name!r} has shape {shape}; cannot read the image size: "
                "expected NCHW or NHWC with 1 or 3 channels and a fixed height and width "
                "(re-export the model with a static input size)."
            )
        if _fixed(h) is None or _fixed(w) is None:
            raise ValueError(
                f"{self.where}: input {inp.name!r} has shape {shape}; cannot read the image size: "
                "its height and width are not fixed numbers (re-export the model with a static "
                "input size)."
            )
        if int(h) * int(w) > MAX_PIXELS:  # every image is resized to this size: bounded like a file
            raise ValueError(
                f"{self.where}: input {inp.name!r} takes {int(w):,} x {int(h):,} images ({int(h) * int(w):,} "
                f"pixels); images are limited to {MAX_PIXELS:,} pixels."
            )
        return ModelInput(inp.name, layout, int(h), int(w), int(c), _fixed(shape[0]), _FLOAT_TYPES[inp.type])

    def _class_names(self, given: Sequence[str] | None) -> tuple[str, ...] | None:
        """``given``, else the metadata ``classes``; checked against the output's width when fixed."""
        where = "the class list"
        if given is None:
            meta = self._session.get_modelmeta().custom_metadata_map
            if "classes" not in meta:
                return None
            where = f"{self.where}: metadata 'classes'"
            try:
                given = json.loads(meta["classes"])
            except ValueError:
                raise ValueError(f"{where} is not a JSON list of class names; got {meta['classes'][:80]!r}.") from None
            if not isinstance(given, list):
                raise ValueError(f"{where} is not a JSON list of class names; got {meta['classes'][:80]!r}.")
        names = tuple(str(c).strip() for c in given)
        if not names or any(not n for n in names) or len(set(names)) != len(names):
            raise ValueError(f"{where}: expected distinct, non-empty class names; got {list(names)[:12]}.")
        if self.n_classes is not None and len(names) != self.n_classes:
            raise ValueError(
                f"{where} names {len(names)} classes, but {self.where} outputs {self.n_classes}; expected one "
                "name per output, in output order."
            )
        return names

    @staticmethod
    def _norm(values, default: float, flag: str, channels: int) -> np.ndarray:
        if values is None:
            return np.full(channels, default, dtype=np.float64)
        arr = np.asarray(list(values), dtype=np.float64)
        if arr.size == 1:
            arr = np.repeat(arr, channels)
        if arr.size != channels or not np.isfinite(arr).all():
            raise ValueError(
                f"{flag} needs 1 or {channels} finite values (the model has {channels} input "
                f"channel(s)); got {list(values)}."
            )
        return arr

    def model_input(self, levels: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
        """The model's input for 8-bit images ``(b, H, W, C)``: scaled to [0, 1], normalised, in its layout.

        Every probe input is an 8-bit image, so this is one table look-up per channel: the
        256 values of ``((k / 255) - mean) / std`` in the input's dtype, computed as the
        arithmetic would compute them pixel by pixel (``k / 255`` rounded to float32 first).
        ``out``: an array to write into, used when its shape and dtype are the input's.
        """
        if self._levels is None:
            k = np.arange(256, dtype=np.uint8)
            scaled = (k / np.float32(255.0)).astype(np.float64)
            self._levels = ((scaled[None, :] - self.mean[:, None]) / self.std[:, None]).astype(self.input.dtype)
        table = self._levels
        b, h, w, c = levels.shape
        shape = (b, c, h, w) if self.input.layout == "NCHW" else (b, h, w, c)
        if out is None or out.shape != shape or out.dtype != table.dtype:
            out = np.empty(shape, dtype=table.dtype)
        for ch in range(c):
            np.take(table[ch], levels[..., ch], out=out[:, ch] if self.input.layout == "NCHW" else out[..., ch])
        return out

    def raw_outputs(self, images01: np.ndarray) -> np.ndarray:
        """Model outputs on a batch of [0, 1] images ``(b, H, W, C)``; returns ``(b, n_out)`` float64."""
        spec = self.input
        x = ((images01.astype(np.float64) - self.mean) / self.std).astype(spec.dtype)
        if spec.layout == "NCHW":
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        return np.asarray(self.run(x), dtype=np.float64)

    def run(self, x: np.ndarray) -> np.ndarray:
        """Model outputs ``(b, n_out)`` on a prepared input batch (:meth:`model_input`), in the output's dtype."""
        spec = self.input
        b = x.shape[0]
        step = spec.batch or b
        parts = []
        for start in range(0, b, step):
            chunk = x[start : start + step]
            pad = step - chunk.shape[0]
            if pad:  # a graph with a fixed batch size: fill the last chunk
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
            try:
                out = self._session.run([self._output], {spec.name: chunk})[0]
            except Exception as exc:  # onnxruntime's own error types
                raise ValueError(f"{self.where}: failed on a batch of shape {chunk.shape}: {exc}") from None
            parts.append(np.asarray(out)[: chunk.shape[0] - pad])
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if out.ndim != 2 or out.shape[0] != b:
            raise ValueError(f"{self.where}: returned shape {out.shape} for {b} images; expected ({b}, n_classes).")
        return out


def _is_probabilities(raw: np.ndarray) -> bool:
    return bool(
        np.all(raw >= -1e-6) and np.all(raw <= 1 + 1e-6) and np.all(np.abs(raw.sum(axis=1) - 1.0) <= _PROB_SUM_TOL)
    )


def _to_probabilities(raw: np.ndarray, logits: bool) -> np.ndarray:
    if not logits:
        return np.clip(raw, 0.0, 1.0).astype(np.float32)
    z = np.exp(raw - raw.max(axis=1, keepdims=True))
    return (z / z.sum(axis=1, keepdims=True)).astype(np.float32)


# ------------------------------------------------------------------------------------------
# probes
# ------------------------------------------------------------------------------------------
def _stream(seed: int, corruption: str, severity: int, position: int) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence(int(seed), spawn_key=(_CORRUPTION_INDEX[corruption], int(severity), int(position)))
    )


@dataclass(frozen=True)
class ProbeResult:
    """Outputs of :func:`run_probes` (schemas of ``docs/DEVELOPING.md``).

    Attributes
    ----------
    clean : DataFrame
        One row per image: ``model, record_id, true_label, pred, max_prob, true_prob,
        prob_0 .. prob_{C-1}`` (+ ``split`` when the labels carry one).
    probes : DataFrame
        One row per image x corruption probe: ``model, record_id, probe, kind
        ("corruption"), true_label, pred, max_prob, true_prob, prob_*`` (vectors only on
        clean-correct images, which are the ones scored; NaN elsewhere).
    natural : DataFrame
        Same columns, ``kind = "transform"``, one row per image x natural transform.
    records : DataFrame
        Paired records: every probe as a condition of source ``"synthetic"``, and every
        re-capture folder as a condition of source ``"recapture"``.
    manifest : dict
    """

    clean: pd.DataFrame
    probes: pd.DataFrame
    natural: pd.DataFrame
    records: pd.DataFrame
    manifest: dict = field(default_factory=dict)


def _columns(probs: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    pred = probs.argmax(axis=1)
    rows = np.arange(probs.shape[0])
    return {"pred": pred.astype(np.int64), "max_prob": probs[rows, pred], "true_prob": probs[rows, labels]}


def _prob_columns(probs: np.ndarray) -> dict[str, np.ndarray]:
    # One column per class, given to the DataFrame constructor at once: assigning a thousand
    # columns to an existing frame inserts them one by one (minutes, and pandas' fragmentation
    # warning per column).
    return {f"prob_{c}": probs[:, c] for c in range(probs.shape[1])}


def check_classes(model: OnnxImageClassifier, images: ImageSet, n_out: int) -> None:
    """Every label has a model output (``0 .. n_out - 1``); else a ValueError naming the image."""
    over = np.flatnonzero(images.labels >= n_out)
    if over.size:
        i = int(over[0])
        raise ValueError(
            f"{model.where}: outputs {n_out} classes (labels 0..{n_out - 1}), but image "
            f"{images.name(i)} has label {int(images.labels[i])}; the model and the labels do not match."
        )


def _levels(x: np.ndarray) -> np.ndarray:
    """The 8-bit image a probe input is: ``rint(255 clip(x, 0, 1))`` in ``x``'s own dtype, as uint8."""
    scaled = np.clip(x, 0.0, 1.0)
    scaled *= 255.0  # in place: the same product in x's dtype, one array fewer
    return np.rint(scaled, out=scaled).astype(np.uint8)


def _corrupt(x01: np.ndarray, positions: np.ndarray, corruption: str, severity: int, seed: int) -> np.ndarray:
    """The 8-bit corrupted images ``(b, H, W, C)``, each from its own random stream."""
    f = CORRUPTIONS[corruption]
    out = np.empty(x01.shape, dtype=np.uint8)
    for j, p in enumerate(positions):
        out[j] = _levels(f(x01[j : j + 1], int(severity), _stream(seed, corruption, severity, p)))[0]
    return out


def _transformed(x01: np.ndarray, transform: str) -> np.ndarray:
    """The 8-bit images ``(b, H, W, C)`` under a natural transform, computed in float64.

    One image at a time (each is transformed alone), so the float64 intermediates stay in
    the cache instead of a new batch-sized array per step.
    """
    f = NATURAL_TRANSFORMS[transform]
    out = np.empty(x01.shape, dtype=np.uint8)
    for j in range(len(x01)):
        out[j] = _levels(f(x01[j : j + 1].astype(np.float64)))[0]
    return out


def probe_image(image: np.ndarray, probe: str, *, position: int, seed: int = 0) -> np.ndarray:
    """Re-draw what the model saw for one image under one probe or natural transform.

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W, C)
        The image at the model's input size (:meth:`ImageSet.read`).
    probe : str
        A ``probe`` value: ``"<corruption> s<severity>"`` or a natural-transform name.
    position : int
        The image's position in its :class:`ImageSet` (it keys the random stream).
    seed : int

    Returns
    -------
    ndarray of uint8, shape (H, W, C)
    """
    x = np.asarray(image)[None].astype(np.float32) / np.float32(255.0)
    if probe in NATURAL_TRANSFORMS:
        return _transformed(x, probe)[0]
    name, _, sev = probe.rpartition(" s")
    if name not in CORRUPTIONS or not sev.isdigit():
        raise ValueError(f"`probe` must be '<corruption> s<severity>' or a natural transform; got {probe!r}.")
    return _corrupt(x, np.array([position]), name, int(sev), seed)[0]


@dataclass(frozen=True, kw_only=True)
class ProbePlan:
    """What every image goes through, in the order of the model calls.

    Attributes
    ----------
    probes : tuple of (corruption, severity)
    natural : tuple of str
        Natural-transform names.
    recaptures : tuple of str
        Condition names of the re-capture image sets, in the order given.
    batch_size : int
        Images per model call: batch ``i`` is images ``i * batch_size`` up to the next one,
        whatever engine runs it, so the outputs do not depend on the engine.
    seed : int
        Seed of the random corruptions.
    """

    probes: tuple[tuple[str, int], ...]
    natural: tuple[str, ...]
    recaptures: tuple[str, ...]
    batch_size: int
    seed: int

    @property
    def variants(self) -> tuple[str, ...]:
        """Labels of the model calls on one batch: ``clean``, the probes, the transforms, the re-captures."""
        return ("clean", *(probe_name(c, s) for c, s in self.probes), *self.natural, *self.recaptures)

    def n_batches(self, n_images: int) -> int:
        return -(-int(n_images) // self.batch_size)


def _batch_levels(model: OnnxImageClassifier, images: ImageSet, perturbed: Sequence[ImageSet], plan: ProbePlan, idx):
    """Yield ``(label, 8-bit images)`` of every variant of the images ``idx``, in ``plan.variants`` order."""
    spec = model.input
    size = (spec.height, spec.width)
    clean = images.read(idx, size=size, channels=spec.channels)
    yield "clean", clean
    x01 = clean.astype(np.float32) / np.float32(255.0)
    for c, s in plan.probes:
        yield probe_name(c, s), _corrupt(x01, idx, c, s, plan.seed)
    for t in plan.natural:
        yield t, _transformed(x01, t)
    for cond, other in zip(plan.recaptures, perturbed):
        yield cond, other.read(idx, size=size, channels=spec.channels)


_DONE = object()
_AHEAD = 2
"""Batches of model inputs :func:`_prepared_ahead` keeps ready beyond the one the model holds."""


def _prepared_ahead(items, depth: int = _AHEAD):
    """Iterate ``items`` while a second thread computes the next ``depth`` of them.

    The model (onnxruntime, its own threads) and the image arithmetic (numpy, scipy.ndimage
    and Pillow, which release the GIL in their loops) then run at once. At most
    ``depth + 1`` prepared batches exist beyond the one the model holds, so memory stays
    bounded by the batch size. An error in the preparing thread is raised here; leaving the
    loop early stops that thread.
    """
    box: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        box.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            box.put((_DONE, None))
        except BaseException as exc:  # handed to the consumer, which raises it
            box.put((_DONE, exc))

    worker = threading.Thread(target=produce, name="probe-inputs", daemon=True)
    worker.start()
    try:
        while True:
            item, error = box.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                box.get_nowait()
            except queue.Empty:
                worker.join(0.05)


def probe_raw(
    model: OnnxImageClassifier,
    images: ImageSet,
    perturbed: Sequence[ImageSet],
    plan: ProbePlan,
    batches: Sequence[int],
    *,
    progress: Callable[[str], None] | None = None,
) -> np.ndarray:
    """Raw model outputs of every variant of the images of ``batches`` (SPEC B.5 probes).

    Parameters
    ----------
    model : OnnxImageClassifier
    images : ImageSet
    perturbed : sequence of ImageSet
        The re-capture sets, in the order of ``plan.recaptures``.
    plan : ProbePlan
    batches : sequence of int
        Batch indices, ascending: batch ``i`` is images ``i * plan.batch_size`` up to
        ``(i + 1) * plan.batch_size`` (fewer for the last).
    progress : callable(label), optional
        Called after every model call with the variant's label.

    Returns
    -------
    ndarray, shape (len(plan.variants), n_batch_images, n_out)
        In the dtype of the model's output; variant axis in ``plan.variants`` order.
    """
    n = len(images)
    size = plan.batch_size
    ranges = [np.arange(b * size, min((b + 1) * size, n)) for b in batches]
    m = sum(len(r) for r in ranges)
    out = None
    n_variants = len(plan.variants)

    # Model inputs are written into `_AHEAD + 2` arrays in turn: while the model reads input
    # k, the preparing thread may be writing input k + _AHEAD + 1 at the most (inputs k + 1 ..
    # k + _AHEAD queued), so k's array is not written before the model is done with it. A new
    # 24 MB array per call (224 px, 40 images) cost the probe ~0.4 s of page faults.
    ring: list[np.ndarray | None] = [None] * (_AHEAD + 2)

    def inputs():
        k = 0
        for idx in ranges:
            for v, (label, levels) in enumerate(_batch_levels(model, images, perturbed, plan, idx)):
                x = ring[k % len(ring)] = model.model_input(levels, out=ring[k % len(ring)])
                k += 1
                yield idx, v, label, x

    offset = {int(r[0]): sum(len(q) for q in ranges[:i]) for i, r in enumerate(ranges)}
    with _one_blas_thread():
        for idx, v, label, x in _prepared_ahead(inputs(), depth=_AHEAD):
            out = _store(out, model, model.run(x), idx, v, offset, n_variants, m)
            if progress is not None:
                progress(label)
    return out


def _store(out, model, raw, idx, v, offset, n_variants, m):
    """Put one model call's outputs in place (the array is made at the first call)."""
    if out is None:
        out = np.empty((n_variants, m, raw.shape[1]), dtype=raw.dtype)
    elif raw.shape[1] != out.shape[2]:
        raise ValueError(
            f"{model.where}: returned {raw.shape[1]} outputs per image, {out.shape[2]} on an earlier batch."
        )
    start = offset[int(idx[0])]
    out[v, start : start + len(idx)] = raw
    return out


def _one_blas_thread():
    """OpenBLAS (pixelate's and motion blur's products) on one thread while a probe runs.

    The limit is process-wide for the duration of the run (a dashboard process shares it).

    Its worker threads spin between calls and took the model's core: with two BLAS threads
    the model ran 2-3x slower beside pixelate or motion blur (measured in one process). The
    products split the output among threads, never a sum, so the bits do not change
    (``tests/imaging/test_probe_equals_twin.py``).
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def output_count(model: OnnxImageClassifier, images: ImageSet) -> int:
    """Number of model outputs: from the graph, or from one clean image when the graph leaves it open."""
    if model.n_classes is not None:
        return model.n_classes
    spec = model.input
    first = images.read(np.arange(1), size=(spec.height, spec.width), channels=spec.channels)
    return int(model.run(model.model_input(first)).shape[1])


def check_perturbed(images: ImageSet, perturbed: Mapping[str, ImageSet]) -> None:
    """Every re-capture set holds the same images, in the same order, with the same labels."""
    for other in perturbed.values():
        if tuple(map(str, other.record_ids)) != tuple(map(str, images.record_ids)):
            a, b = set(map(str, images.record_ids)), set(map(str, other.record_ids))
            diff = sorted(a ^ b)[:5]
            raise ValueError(
                f"--perturbed {other.where}: must hold the same images as --images {images.where} "
                f"(same file names, same order of labels); differing: {diff or 'the order'}."
            )
        if not np.array_equal(other.labels, images.labels):
            i = int(np.flatnonzero(other.labels != images.labels)[0])
            raise ValueError(
                f"--perturbed {other.where}: label of {other.record_ids[i]!r} is {other.labels[i]}, "
                f"but {images.labels[i]} in {images.where}."
            )


def probe_plan(
    model: OnnxImageClassifier,
    images: ImageSet,
    *,
    probes: Sequence[tuple[str, int]] = DEFAULT_PROBES,
    natural: Sequence[str] = tuple(NATURAL_TRANSFORMS),
    perturbed: Mapping[str, ImageSet] | None = None,
    batch_size: int = 256,
    seed: int = 0,
) -> ProbePlan:
    """The :class:`ProbePlan` of a probe run, once everything it needs is checked (before any batch).

    Parameters are those of :func:`run_probes`. Raises ValueError for a bad ``batch_size``,
    a re-capture set that differs from ``images`` and a label the model has no output for.
    Warns (:class:`core.exceptions.ModelFitWarning`) when the images are resampled by more
    than :data:`core.imaging.fit.MAX_RESAMPLE_FACTOR` or their channels converted
    (:func:`core.imaging.fit.image_fit`).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive int; got {batch_size!r}.")
    perturbed = dict(perturbed or {})
    check_perturbed(images, perturbed)
    check_classes(model, images, output_count(model, images))
    warn_fit(image_fit(images, model.input).messages, stacklevel=2)
    return ProbePlan(
        probes=tuple((str(c), int(s)) for c, s in probes),
        natural=tuple(natural),
        recaptures=tuple(map(str, perturbed)),
        batch_size=int(batch_size),
        seed=int(seed),
    )


def run_probes(
    model: OnnxImageClassifier,
    images: ImageSet,
    *,
    model_name: str | None = None,
    probes: Sequence[tuple[str, int]] = DEFAULT_PROBES,
    natural: Sequence[str] = tuple(NATURAL_TRANSFORMS),
    perturbed: Mapping[str, ImageSet] | None = None,
    batch_size: int = 256,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> ProbeResult:
    """Clean, probe and natural-transform outputs of ``model`` on every image.

    Parameters
    ----------
    model : OnnxImageClassifier
    images : ImageSet
    model_name : str, optional
        The ``model`` column (default: ``"model"``).
    probes : sequence of (corruption, severity)
    natural : sequence of str
        Natural transforms (the TTA comparator); may be empty.
    perturbed : mapping of condition name -> ImageSet, optional
        Real re-captures of the same images (same record ids and labels).
    batch_size : int
        Images per model call; bounds memory (a few batches of one variant at a time: the
        next inputs are prepared while the model runs).
    seed : int
        Seed of the random corruptions.
    progress : callable(label, done, total), optional
        Called after every model call (``total`` = batches x variants).

    Returns
    -------
    ProbeResult

    Raises
    ------
    ValueError
        A label the model has no output for, a re-capture set that differs from ``images``,
        an image that cannot be decoded (the message names the file).
    """
    perturbed = dict(perturbed or {})
    plan = probe_plan(
        model, images, probes=probes, natural=natural, perturbed=perturbed, batch_size=batch_size, seed=seed
    )
    n_batches = plan.n_batches(len(images))
    total, done = n_batches * len(plan.variants), 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(label, done, total)

    raw = probe_raw(model, images, list(perturbed.values()), plan, range(n_batches), progress=tick)
    return assemble_probe_result(raw, model, images, plan, model_name=model_name, perturbed=perturbed)


def assemble_probe_result(
    raw: np.ndarray,
    model: OnnxImageClassifier,
    images: ImageSet,
    plan: ProbePlan,
    *,
    model_name: str | None,
    perturbed: Mapping[str, ImageSet],
    threads: int | None = None,
) -> ProbeResult:
    """The :class:`ProbeResult` of the raw outputs of every image (:func:`probe_raw` over all batches).

    Whether the model gives logits or probabilities is decided here, on every clean row. Warns
    (:class:`core.exceptions.ModelFitWarning`) when the clean accuracy is near chance
    (:func:`core.imaging.fit.chance_check`); the manifest's ``warnings`` list every warning of
    the run, those of :func:`probe_plan` too. ``threads``: the onnxruntime threads of the
    sessions that computed ``raw``, for the manifest (None: ``model.threads``).
    """
    name = str(model_name or "model")
    spec = model.input
    n = len(images)
    n_out = raw.shape[2]
    check_classes(model, images, n_out)
    clean_raw = raw[0].astype(np.float64)
    logits = not _is_probabilities(clean_raw)
    clean_probs = _to_probabilities(clean_raw, logits)
    labels = images.labels
    clean_cols = _columns(clean_probs, labels)
    correct = clean_cols["pred"] == labels
    fit = image_fit(images, model.input)
    chance = chance_check(int(correct.sum()), n, n_out) if n_out >= 2 else None
    if chance is not None and chance.near_chance:
        warn_fit([chance.message], stacklevel=2)
    n_probes = len(plan.probes)

    def probs_of(v: int) -> np.ndarray:
        return _to_probabilities(raw[v].astype(np.float64), logits)

    variants = [(probe_name(c, s), "corruption", 1 + i) for i, (c, s) in enumerate(plan.probes)]
    variants += [(t, "transform", 1 + n_probes + i) for i, t in enumerate(plan.natural)]
    outputs = {label: probs_of(v) for label, _, v in variants}
    recapture_at = 1 + n_probes + len(plan.natural)
    pert_out = {cond: probs_of(recapture_at + i) for i, cond in enumerate(plan.recaptures)}

    ids = np.asarray(images.record_ids, dtype=object if isinstance(images.record_ids[0], str) else np.int64)
    prob_cols = [f"prob_{c}" for c in range(n_out)]
    extra = {} if images.splits is None else {"split": images.splits}
    clean = pd.DataFrame(
        {"model": name, "record_id": ids, "true_label": labels, **extra, **clean_cols, **_prob_columns(clean_probs)}
    )
    frames = {"corruption": [], "transform": []}
    for label, kind, _ in variants:
        probs = outputs[label]
        vectors = probs.astype(np.float64)
        vectors[~correct] = np.nan  # A3 needs vectors only on the scored (clean-correct) images
        frame = pd.DataFrame(
            {
                "model": name,
                "record_id": ids,
                "probe": label,
                "kind": kind,
                "true_label": labels,
                **_columns(probs, labels),
                **_prob_columns(vectors),
            }
        )
        frames[kind].append(frame)
    empty = pd.DataFrame(
        columns=["model", "record_id", "probe", "kind", "true_label", "pred", "max_prob", "true_prob", *prob_cols]
    )
    probes_df = pd.concat(frames["corruption"], ignore_index=True) if frames["corruption"] else empty
    natural_df = pd.concat(frames["transform"], ignore_index=True) if frames["transform"] else empty.copy()

    record_parts = []
    sides = [(probe_name(c, s), "synthetic", outputs[probe_name(c, s)]) for c, s in plan.probes]
    sides += [(cond, "recapture", pert_out[cond]) for cond in perturbed]
    for cond, source, probs in sides:
        pert = _columns(probs, labels)
        record_parts.append(
            pd.DataFrame(
                {
                    "model": name,
                    "condition": cond,
                    "source": source,
                    "record_id": ids,
                    "true_label": labels,
                    "clean_pred": clean_cols["pred"],
                    "clean_max_prob": clean_cols["max_prob"],
                    "clean_true_prob": clean_cols["true_prob"],
                    "pert_pred": pert["pred"],
                    "pert_max_prob": pert["max_prob"],
                    "pert_true_prob": pert["true_prob"],
                    **extra,
                }
            )
        )
    records = pd.concat(record_parts, ignore_index=True)
    manifest = {
        "command": "probe",
        "model": name,
        "model_file": model.where,
        "model_sha256": model.sha256,
        "input": {
            "name": spec.name,
            "layout": spec.layout,
            "height": spec.height,
            "width": spec.width,
            "channels": spec.channels,
            "batch": spec.batch,
        },
        "normalisation": {"mean": model.mean.tolist(), "std": model.std.tolist()},
        "output": "logits (soft-maxed)" if logits else "probabilities",
        "n_classes": int(n_out),
        "images": images.where,
        "n_images": int(n),
        "clean_accuracy": float(correct.mean()),
        "classes": None if model.classes is None else list(model.classes),
        "fit": {
            "images": fit.image_size,
            "model_input": fit.model_size,
            "resample_factor": round(fit.factor, 6),
            "channels_converted": fit.converted,
            "chance_accuracy": None if chance is None else chance.chance,
            "chance_p_value": None if chance is None else chance.p_value,
        },
        "warnings": [*fit.messages, *([chance.message] if chance is not None and chance.near_chance else [])],
        "probes": [probe_name(c, s) for c, s in plan.probes],
        "natural": list(plan.natural),
        "recaptures": {cond: other.where for cond, other in perturbed.items()},
        "seed": plan.seed,
        "batch_size": plan.batch_size,
        "threads": int(model.threads if threads is None else threads),
        "note": "Corruption parameters follow ImageNet-C with spatial sizes scaled to 32 px "
        "(core.imaging.corruptions); every probe input is an 8-bit image.",
    }
    return ProbeResult(clean, probes_df, natural_df, records, manifest)


def write_probe_outputs(result: ProbeResult, out) -> list[str]:
    """Write ``clean``, ``probes``, ``natural``, ``records`` (Parquet) and ``manifest.json`` atomically.

    The folder's version (:data:`core.formats.PROBE_OUTPUTS`, ``probe-outputs/1``) is the
    manifest's ``format`` and the schema metadata of every Parquet file
    (:data:`core.formats.PARQUET_FORMAT_KEY`), so that a file read alone (``paired --probes``,
    an upload) is refused when a newer version wrote it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.atomic import atomic_folder
    from core.formats import PARQUET_FORMAT_KEY, PROBE_OUTPUTS

    names = ["clean.parquet", "probes.parquet", "natural.parquet", "records.parquet", "manifest.json"]
    with atomic_folder(Path(out)) as tmp:
        for name, frame in zip(names, (result.clean, result.probes, result.natural, result.records)):
            table = pa.Table.from_pandas(frame, preserve_index=False)
            tag = {PARQUET_FORMAT_KEY: PROBE_OUTPUTS.tag.encode()}
            pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **tag}), tmp / name)
        (tmp / "manifest.json").write_text(
            json.dumps({"format": PROBE_OUTPUTS.tag, **result.manifest, "files": names}, indent=2) + "\n",
            encoding="utf-8",
        )
    return names


UPLOAD_UNPACKED_MB = 1024
"""An uploaded image archive may unpack to at most this many MB."""


def parse_floats(text: str | None, flag: str) -> tuple[float, ...] | None:
    """``"0.485, 0.456, 0.406"`` -> floats; empty -> None (the default normalisation)."""
    if text is None or not str(text).strip():
        return None
    try:
        return tuple(float(v) for v in str(text).split(",") if v.strip())
    except ValueError:
        raise ValueError(f"{flag}: expected comma-separated numbers; got {text!r}.") from None


def read_class_names(raw: bytes, where: str) -> tuple[str, ...]:
    """A classes file: one class name a line, in the order of the model's outputs (blank lines skipped).

    Examples
    --------
    >>> read_class_names(b"t-shirt\\nboot\\n\\n", "classes.txt")
    ('t-shirt', 'boot')
    """
    try:
        text = bytes(raw).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: is not UTF-8 text; expected one class name a line.") from None
    names = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not names:
        raise ValueError(f"{where}: names no class; expected one class name a line, in the model's output order.")
    return names


def open_upload(
    model_file: tuple[str, bytes],
    images_zip: tuple[str, bytes],
    labels_file: tuple[str, bytes] | None = None,
    classes_file: tuple[str, bytes] | None = None,
    *,
    mean=None,
    std=None,
    limit_mb: int = 50,
    threads: int | None = None,
    actor=None,
) -> tuple[OnnxImageClassifier, ImageSet]:
    """The model and the images of an upload, validated, before anything is probed.

    Parameters are those of :func:`probe_uploaded`; ``classes_file`` (one class name a line)
    overrides the model's metadata ``classes``.
    """
    from core.imaging.images import open_zip_images
    from core.reviews.permissions import check
    from core.validation import check_upload_size

    names = ", ".join(f[0] for f in (model_file, images_zip, labels_file, classes_file) if f is not None)
    check(actor, "upload", what=names)
    check(actor, "run", what=f"a probe run of {model_file[0]}")

    files = [("model", model_file, (".onnx",)), ("images", images_zip, (".zip",))]
    if labels_file is not None:
        files.append(("labels", labels_file, (".csv",)))
    if classes_file is not None:
        files.append(("classes", classes_file, (".txt", ".csv")))
    for role, (name, data), suffixes in files:
        if not str(name).lower().endswith(suffixes):
            raise ValueError(f"{name!r}: the {role} upload must be a {' or '.join(suffixes)} file.")
        check_upload_size(data, str(name), limit_mb=limit_mb)
    classes = None if classes_file is None else read_class_names(classes_file[1], str(classes_file[0]))
    model = OnnxImageClassifier(
        model_file[1], where=str(model_file[0]), mean=mean, std=std, classes=classes, threads=threads
    )
    images = open_zip_images(
        images_zip[1],
        where=str(images_zip[0]),
        labels=None if labels_file is None else (labels_file[1], str(labels_file[0])),
        max_bytes=UPLOAD_UNPACKED_MB * 1024**2,
        classes=model.classes,
    )
    return model, images


def probe_uploaded(
    model_file: tuple[str, bytes],
    images_zip: tuple[str, bytes],
    labels_file: tuple[str, bytes] | None = None,
    classes_file: tuple[str, bytes] | None = None,
    *,
    mean=None,
    std=None,
    limit_mb: int = 50,
    batch_size: int = 64,
    seed: int = 0,
    threads: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    actor=None,
) -> tuple[ProbeResult, ImageSet]:
    """:func:`run_probes` on an uploaded ``.onnx`` model and ``.zip`` of labelled images.

    Parameters
    ----------
    model_file, images_zip : (file name, bytes)
        As uploaded; each at most ``limit_mb`` MB. The archive unpacks to at most
        :data:`UPLOAD_UNPACKED_MB` MB, keeps every member inside its root and holds only
        PNG / JPEG images and (unless ``labels_file`` is given) one labels CSV.
    labels_file : (file name, bytes), optional
        The labels CSV uploaded alongside the archive.
    classes_file : (file name, bytes), optional
        The model's class names, one a line in output order (:func:`read_class_names`), for
        labels given as names; default: the model's metadata ``classes``.
    mean, std : sequence of float, optional
    limit_mb, batch_size, seed, progress
        See :func:`run_probes`.
    threads : int, optional
        See :class:`OnnxImageClassifier`.
    actor : core.reviews.permissions.Actor, optional
        Who runs it on a server with sign-in: must be allowed to ``upload`` and to ``run``
        (checked before anything is read). None: local mode.

    Returns
    -------
    (ProbeResult, ImageSet)
        The outputs and the images (for thumbnails and :func:`probe_image`).

    Raises
    ------
    ValueError
        Naming the uploaded file.
    AccessRefused
        ``actor`` may not upload or run.
    """
    model, images = open_upload(
        model_file,
        images_zip,
        labels_file,
        classes_file,
        mean=mean,
        std=std,
        limit_mb=limit_mb,
        threads=threads,
        actor=actor,
    )
    name = Path(str(model_file[0])).stem or "model"
    result = run_probes(model, images, model_name=name, batch_size=batch_size, seed=seed, progress=progress)
    return result, images
