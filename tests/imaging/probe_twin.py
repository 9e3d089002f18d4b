"""The probe as it was before it was made faster: the naive twin its outputs must equal exactly.

A verbatim copy of the former ``core/imaging/probe.py`` code path (commit 3437729): every
variant of a batch made in float, quantised to 8 bits as a float32 image, normalised pixel by
pixel; all clean batches first, then every batch's variants one after another, each model call
converted to float64 at once. The only edits: the model's ``raw_outputs`` method is a function
here, and the result is a dict of the four frames and the manifest.
"""

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS
from core.imaging.images import ImageSet
from core.imaging.probe import DEFAULT_PROBES, OnnxImageClassifier, probe_name

_CORRUPTION_INDEX = {name: i for i, name in enumerate(CORRUPTIONS)}
_PROB_SUM_TOL = 1e-3


def raw_outputs(self: OnnxImageClassifier, images01: np.ndarray) -> np.ndarray:  # the method, with the model as `self`
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


def naive_probe_image(image: np.ndarray, probe: str, *, position: int, seed: int = 0) -> np.ndarray:
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


def naive_run_probes(
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
) -> dict:
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
        raw_clean.append(raw_outputs(model, images.read(idx, size=size, channels=spec.channels) / np.float32(255.0)))
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
            outputs[label][idx] = _to_probabilities(raw_outputs(model, x), logits)
            tick(label)
        for cond, other in perturbed.items():
            x = other.read(idx, size=size, channels=spec.channels).astype(np.float32) / np.float32(255.0)
            pert_out[cond][idx] = _to_probabilities(raw_outputs(model, x), logits)
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
        "threads": int(model.threads),  # the session's, resolved (issue 39)
        "note": "Corruption parameters follow ImageNet-C with spatial sizes scaled to 32 px "
        "(core.imaging.corruptions); every probe input is an 8-bit image.",
    }
    return {"clean": clean, "probes": probes_df, "natural": natural_df, "records": records, "manifest": manifest}


# The former resampling: one 3-D call over the whole batch (the image index an exact
# coordinate). Now one 2-D call per image; the twins hold the two equal.
def naive_streak(x: np.ndarray, angle: np.ndarray, radius: float, sigma: float) -> np.ndarray:
    """Motion-blur taps of a grey batch ``(n, H, W)`` along one angle per image."""
    from scipy import ndimage

    n, h, w = x.shape
    dist = np.arange(2 * int(np.ceil(radius)) + 1, dtype=np.float64)
    weights = np.exp(-(dist**2) / (2.0 * sigma**2))
    weights /= weights.sum()
    rows = (
        np.arange(h, dtype=np.float64)[None, None, :, None]
        + dist[None, :, None, None] * np.sin(angle)[:, None, None, None]
    )
    cols = (
        np.arange(w, dtype=np.float64)[None, None, None, :]
        + dist[None, :, None, None] * np.cos(angle)[:, None, None, None]
    )
    shape = (n, dist.size, h, w)
    coords = np.stack(
        [
            np.broadcast_to(np.arange(n, dtype=np.float64)[:, None, None, None], shape),
            np.broadcast_to(rows, shape),
            np.broadcast_to(cols, shape),
        ]
    )
    taps = ndimage.map_coordinates(x, coords, order=1, mode="nearest")
    # Summed tap by tap, as the product now does: the former np.tensordot's summation order
    # followed the batch's size, so an image streaked alone (the Recapture queue's inspected
    # case) was not always the same bytes as in its batch. The twin holds the resampling.
    out = taps[:, 0] * weights[0]
    for k in range(1, dist.size):
        out += taps[:, k] * weights[k]
    return out


def naive_affine(x: np.ndarray, matrix: np.ndarray, *, shift=(0.0, 0.0), cval: float | None = None):
    """Resample every image at ``matrix @ (p - centre) + centre - shift`` (output -> input).

    Bilinear; outside the image ``mirror`` (torchvision's "reflect") unless ``cval`` is given.
    """
    from scipy import ndimage

    if x.ndim == 4:  # colour: each channel alike (a 4-D bilinear resampling would cost 4x the taps)
        return np.stack([naive_affine(x[..., c], matrix, shift=shift, cval=cval) for c in range(x.shape[-1])], -1)
    _, h, w = x.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    full = np.eye(3)
    full[1:, 1:] = matrix
    offset = np.zeros(3)
    offset[1:] = centre - matrix @ centre - np.asarray(shift, dtype=np.float64)
    mode, fill = ("mirror", 0.0) if cval is None else ("constant", cval)
    return ndimage.affine_transform(x, full, offset=offset, order=1, mode=mode, cval=fill)
