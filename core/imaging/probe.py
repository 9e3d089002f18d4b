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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS
from core.imaging.images import ImageSet

__all__ = [
    "DEFAULT_PROBES",
    "UPLOAD_UNPACKED_MB",
    "ModelInput",
    "OnnxImageClassifier",
    "ProbeResult",
    "parse_floats",
    "parse_natural",
    "parse_probes",
    "probe_image",
    "probe_name",
    "probe_uploaded",
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

    Raises
    ------
    ValueError
        Unreadable model; not exactly one float image input of rank 4 with fixed height and
        width (the message shows the input's shape); ambiguous layout; an output that is not
        ``(N, C)``; bad ``mean`` / ``std``.
    """

    def __init__(
        self,
        model_bytes: bytes,
        *,
        where: str = "the ONNX model",
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
    ) -> None:
        from core.onnx_session import cpu_session

        self.model_bytes = bytes(model_bytes)
        self.where = where
        self.sha256 = hashlib.sha256(self.model_bytes).hexdigest()
        self._session = cpu_session(self.model_bytes, where=f"{where}:")
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
        return ModelInput(inp.name, layout, int(h), int(w), int(c), _fixed(shape[0]), _FLOAT_TYPES[inp.type])

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

    def raw_outputs(self, images01: np.ndarray) -> np.ndarray:
        """Model outputs on a batch of [0, 1] images ``(b, H, W, C)``; returns ``(b, n_out)`` float64."""
        spec = self.input
        x = ((images01.astype(np.float64) - self.mean) / self.std).astype(spec.dtype)
        if spec.layout == "NCHW":
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
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
            parts.append(np.asarray(out, dtype=np.float64)[: chunk.shape[0] - pad])
        out = np.concatenate(parts)
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


def _quantise(x: np.ndarray) -> np.ndarray:
    return (np.rint(np.clip(x, 0.0, 1.0) * 255.0) / 255.0).astype(np.float32)


def _corrupt(x01: np.ndarray, positions: np.ndarray, corruption: str, severity: int, seed: int) -> np.ndarray:
    f = CORRUPTIONS[corruption]
    return _quantise(
        np.concatenate(
            [f(x01[j : j + 1], int(severity), _stream(seed, corruption, severity, p)) for j, p in enumerate(positions)]
        )
    )


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
    x = np.asarray(image)[None].astype(np.float32) / 255.0
    if probe in NATURAL_TRANSFORMS:
        out = _quantise(NATURAL_TRANSFORMS[probe](x.astype(np.float64)))
    else:
        name, _, sev = probe.rpartition(" s")
        if name not in CORRUPTIONS or not sev.isdigit():
            raise ValueError(f"`probe` must be '<corruption> s<severity>' or a natural transform; got {probe!r}.")
        out = _corrupt(x, np.array([position]), name, int(sev), seed)
    return np.rint(out[0] * 255.0).astype(np.uint8)


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


def _check_classes(model: OnnxImageClassifier, images: ImageSet, n_out: int) -> None:
    over = np.flatnonzero(images.labels >= n_out)
    if over.size:
        i = int(over[0])
        raise ValueError(
            f"{model.where}: outputs {n_out} classes (labels 0..{n_out - 1}), but image "
            f"{images.name(i)} has label {int(images.labels[i])}; the model and the labels do not match."
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
        Images per model call; bounds memory (one batch of one variant at a time).
    seed : int
        Seed of the random corruptions.
    progress : callable(label, done, total), optional

    Returns
    -------
    ProbeResult

    Raises
    ------
    ValueError
        A label the model has no output for, a re-capture set that differs from ``images``,
        an image that cannot be decoded (the message names the file).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive int; got {batch_size!r}.")
    name = str(model_name or "model")
    probes = tuple((str(c), int(s)) for c, s in probes)
    natural = tuple(natural)
    perturbed = dict(perturbed or {})
    n = len(images)
    if model.n_classes is not None:
        _check_classes(model, images, model.n_classes)
    for cond, other in perturbed.items():
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
    spec = model.input
    size = (spec.height, spec.width)
    starts = range(0, n, batch_size)
    n_variants = 1 + len(probes) + len(natural) + len(perturbed)
    total, done = len(starts) * n_variants, 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(label, done, total)

    # Pass 1, clean: fixes logits vs probabilities and checks the labels before the long pass.
    raw_clean = []
    for s in starts:
        idx = np.arange(s, min(s + batch_size, n))
        raw_clean.append(model.raw_outputs(images.read(idx, size=size, channels=spec.channels) / np.float32(255.0)))
        tick("clean")
    raw = np.concatenate(raw_clean)
    n_out = raw.shape[1]
    _check_classes(model, images, n_out)
    logits = not _is_probabilities(raw)
    clean_probs = _to_probabilities(raw, logits)
    labels = images.labels
    clean_cols = _columns(clean_probs, labels)
    correct = clean_cols["pred"] == labels

    variants = [(probe_name(c, s), "corruption", (c, s)) for c, s in probes] + [(t, "transform", t) for t in natural]
    outputs = {v[0]: np.empty((n, n_out), dtype=np.float32) for v in variants}
    pert_out = {c: np.empty((n, n_out), dtype=np.float32) for c in perturbed}
    for s in starts:
        idx = np.arange(s, min(s + batch_size, n))
        x01 = images.read(idx, size=size, channels=spec.channels).astype(np.float32) / np.float32(255.0)
        for label, kind, what in variants:
            if kind == "corruption":
                x = _corrupt(x01, idx, what[0], what[1], seed)
            else:
                x = _quantise(NATURAL_TRANSFORMS[what](x01.astype(np.float64)))
            outputs[label][idx] = _to_probabilities(model.raw_outputs(x), logits)
            tick(label)
        for cond, other in perturbed.items():
            x = other.read(idx, size=size, channels=spec.channels).astype(np.float32) / np.float32(255.0)
            pert_out[cond][idx] = _to_probabilities(model.raw_outputs(x), logits)
            tick(cond)

    ids = np.asarray(images.record_ids, dtype=object if isinstance(images.record_ids[0], str) else np.int64)
    prob_cols = [f"prob_{c}" for c in range(n_out)]
    extra = {} if images.splits is None else {"split": images.splits}
    clean = pd.DataFrame({"model": name, "record_id": ids, "true_label": labels, **extra, **clean_cols})
    clean[prob_cols] = clean_probs
    frames = {"corruption": [], "transform": []}
    for label, kind, _ in variants:
        probs = outputs[label]
        frame = pd.DataFrame(
            {
                "model": name,
                "record_id": ids,
                "probe": label,
                "kind": kind,
                "true_label": labels,
                **_columns(probs, labels),
            }
        )
        vectors = probs.astype(np.float64)
        vectors[~correct] = np.nan  # A3 needs vectors only on the scored (clean-correct) images
        frame[prob_cols] = vectors
        frames[kind].append(frame)
    empty = pd.DataFrame(
        columns=["model", "record_id", "probe", "kind", "true_label", "pred", "max_prob", "true_prob", *prob_cols]
    )
    probes_df = pd.concat(frames["corruption"], ignore_index=True) if frames["corruption"] else empty
    natural_df = pd.concat(frames["transform"], ignore_index=True) if frames["transform"] else empty.copy()

    record_parts = []
    sides = [(probe_name(c, s), "synthetic", outputs[probe_name(c, s)]) for c, s in probes]
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
        "probes": [probe_name(c, s) for c, s in probes],
        "natural": list(natural),
        "recaptures": {cond: other.where for cond, other in perturbed.items()},
        "seed": int(seed),
        "batch_size": int(batch_size),
        "note": "Corruption parameters follow ImageNet-C with spatial sizes scaled to 32 px "
        "(core.imaging.corruptions); every probe input is an 8-bit image.",
    }
    return ProbeResult(clean, probes_df, natural_df, records, manifest)


def write_probe_outputs(result: ProbeResult, out) -> list[str]:
    """Write ``clean``, ``probes``, ``natural``, ``records`` (Parquet) and ``manifest.json`` atomically."""
    from core.atomic import atomic_folder

    names = ["clean.parquet", "probes.parquet", "natural.parquet", "records.parquet", "manifest.json"]
    with atomic_folder(Path(out)) as tmp:
        result.clean.to_parquet(tmp / "clean.parquet", index=False)
        result.probes.to_parquet(tmp / "probes.parquet", index=False)
        result.natural.to_parquet(tmp / "natural.parquet", index=False)
        result.records.to_parquet(tmp / "records.parquet", index=False)
        (tmp / "manifest.json").write_text(
            json.dumps({**result.manifest, "files": names}, indent=2) + "\n", encoding="utf-8"
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


def probe_uploaded(
    model_file: tuple[str, bytes],
    images_zip: tuple[str, bytes],
    labels_file: tuple[str, bytes] | None = None,
    *,
    mean=None,
    std=None,
    limit_mb: int = 50,
    batch_size: int = 64,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
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
    mean, std : sequence of float, optional
    limit_mb, batch_size, seed, progress
        See :func:`run_probes`.

    Returns
    -------
    (ProbeResult, ImageSet)
        The outputs and the images (for thumbnails and :func:`probe_image`).

    Raises
    ------
    ValueError
        Naming the uploaded file.
    """
    from core.imaging.images import open_zip_images
    from core.validation import check_upload_size

    files = [("model", model_file, ".onnx"), ("images", images_zip, ".zip")]
    if labels_file is not None:
        files.append(("labels", labels_file, ".csv"))
    for role, (name, data), suffix in files:
        if not str(name).lower().endswith(suffix):
            raise ValueError(f"{name!r}: the {role} upload must be a {suffix} file.")
        check_upload_size(data, str(name), limit_mb=limit_mb)
    model = OnnxImageClassifier(model_file[1], where=str(model_file[0]), mean=mean, std=std)
    images = open_zip_images(
        images_zip[1],
        where=str(images_zip[0]),
        labels=None if labels_file is None else (labels_file[1], str(labels_file[0])),
        max_bytes=UPLOAD_UNPACKED_MB * 1024**2,
    )
    name = Path(str(model_file[0])).stem or "model"
    result = run_probes(model, images, model_name=name, batch_size=batch_size, seed=seed, progress=progress)
    return result, images
