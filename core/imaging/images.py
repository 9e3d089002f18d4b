"""Labelled test images for ``python -m core probe``: a folder, a zip archive or an ``.npz``.

Three sources give the same :class:`ImageSet` (images read lazily, a batch at a time, so
memory stays bounded by the batch size):

* a **folder** of PNG / JPEG files (sub-folders allowed) plus a labels CSV with columns
  ``file, label`` (and optionally ``split`` = ``dev`` / ``eval``); ``file`` is the path
  relative to the folder holding the CSV and becomes the ``record_id``;
* a **zip archive** of the same (read in place, never extracted).

A folder and a zip follow one labels rule: the labels CSV is the one ``.csv`` inside them (at
any depth; file names relative to the folder holding it), or a file given alongside (file names
relative to the folder, or to the archive's single top folder). A label is a class index (the
model's output column) or, when the column is not all integers, a class name mapped through
the model's class list (``classes``);
* an **.npz** with ``images`` (``(N, H, W)`` or ``(N, H, W, C)``, ``uint8``, C = 1 or 3) and
  ``labels`` (``(N,)`` non-negative integers); the ``record_id`` is the row index. Read with
  ``allow_pickle=False``.

Everything is validated up front, before any model runs: every listed file exists, every
image file is listed (hidden files and ``__MACOSX/`` are ignored), every image opens as PNG or
JPEG within :data:`MAX_PIXELS`, archive members stay inside the archive's root (no absolute
paths, no ``..``, no links) and the archive stays within its size limits. Errors are
``ValueError`` naming the file.

Every image file is opened by :func:`open_image`, which reads its size from the header and
refuses one above :data:`MAX_PIXELS` before a pixel is decoded, in the tool's words (the file,
its size, the limit), so a "decompression bomb" (a small file whose header claims 100,000 x
100,000 pixels) costs nothing; Pillow's own bomb check (``Image.MAX_IMAGE_PIXELS``, above the
tool's limit) is never what the user reads.
"""

from __future__ import annotations

import io
import stat
import struct
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from core.validation import check_input_file, csv_header_duplicate

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_PIXELS",
    "ImageRefused",
    "ImageSet",
    "ImageShapes",
    "open_image",
    "open_images",
    "open_zip_images",
    "png_data_uri",
    "too_large",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
MAX_PIXELS = 40_000_000
"""Largest image accepted, in pixels (width x height): 40 million, e.g. 8000 x 5000.

Read from the file's header and checked before the image is decoded (:func:`open_image`); an
``.npz``'s images are checked from its array header likewise, and an ONNX model whose input is
larger is refused (:class:`core.imaging.probe.OnnxImageClassifier`). A probe resizes every
image to its model's input size, so larger files would only cost memory and time.
"""
_FORMATS = {"PNG", "JPEG", "MPO"}  # MPO: a JPEG with extra frames, as many phone cameras write
ZIP_LIMITS = {"max_members": 200_000, "max_bytes": 4 * 1024**3, "max_ratio": 200}
"""Default archive limits: members, total uncompressed bytes, compression ratio of a member."""


@dataclass(frozen=True, kw_only=True)
class ImageShapes:
    """The sizes and channel counts of a set of images as stored (before any resizing).

    Attributes
    ----------
    min_height, max_height, min_width, max_width : int
        Extremes over the images, in pixels.
    grey, colour : int
        How many images are stored with 1 channel (grey) and with 3 (colour).

    Examples
    --------
    >>> ImageShapes.of([(28, 28, 1), (30, 20, 3)]).size_text()
    '20-28 x 28-30'
    """

    min_height: int
    max_height: int
    min_width: int
    max_width: int
    grey: int
    colour: int

    @classmethod
    def of(cls, shapes) -> ImageShapes:
        """From ``(height, width, channels)`` of every image."""
        arr = np.asarray(list(shapes), dtype=np.int64).reshape(-1, 3)
        h, w, c = arr[:, 0], arr[:, 1], arr[:, 2]
        return cls(
            min_height=int(h.min()),
            max_height=int(h.max()),
            min_width=int(w.min()),
            max_width=int(w.max()),
            grey=int((c == 1).sum()),
            colour=int((c != 1).sum()),
        )

    def size_text(self) -> str:
        """``"28 x 28"`` (width x height), or the ranges when the images differ."""

        def span(lo: int, hi: int) -> str:
            return f"{lo}" if lo == hi else f"{lo}-{hi}"

        return f"{span(self.min_width, self.max_width)} x {span(self.min_height, self.max_height)}"


@dataclass(frozen=True)
class ImageSet:
    """Labelled images, read a batch at a time.

    Attributes
    ----------
    record_ids : tuple
        ``record_id`` of every image: the relative file name (folder, zip) or the row index
        (npz), in the order of the labels.
    labels : ndarray of int64, shape (n,)
        True class of every image.
    splits : ndarray of str, shape (n,), or None
        ``"dev"`` / ``"eval"`` when the labels carry a ``split`` column.
    where : str
        The source, as messages name it.
    channels : int
        3 when any image is stored in colour, else 1 (grey).
    shapes : ImageShapes
        The stored sizes and channel counts, read from the headers when the set was opened
        (what :func:`core.imaging.fit.image_fit` compares with a model's input).
    """

    record_ids: tuple
    labels: np.ndarray
    splits: np.ndarray | None
    where: str
    channels: int
    _open: Callable[[int], Image.Image] = field(repr=False, compare=False)
    shapes: ImageShapes = field(compare=False)
    # The openers below are plain picklable objects, so an ImageSet travels to Dask workers
    # (core.scale.probe), which read their own images.

    def __len__(self) -> int:
        return len(self.record_ids)

    def name(self, i: int) -> str:
        """How messages name image ``i`` (the file inside its source)."""
        return (
            f"{self.where}/{self.record_ids[i]}"
            if not isinstance(self.record_ids[i], (int, np.integer))
            else f"{self.where}[{self.record_ids[i]}]"
        )

    def read(self, index, *, size: tuple[int, int], channels: int) -> np.ndarray:
        """Decode images ``index`` at ``size = (H, W)`` with ``channels`` (1 or 3).

        Resizing is bilinear (Pillow) and only when the stored size differs; grey becomes
        RGB by repetition, RGB becomes grey by ITU-R 601 luma; transparency is dropped.

        Returns
        -------
        ndarray of uint8, shape (len(index), H, W, channels)
        """
        h, w = size
        out = np.empty((len(index), h, w, channels), dtype=np.uint8)
        mode = "L" if channels == 1 else "RGB"
        for j, i in enumerate(index):
            try:
                img = self._open(int(i))
                img = img.convert(mode) if img.mode != mode else img
                if img.size != (w, h):
                    img = img.resize((w, h), Image.BILINEAR)
                out[j] = np.asarray(img, dtype=np.uint8).reshape(h, w, channels)
            except ImageRefused:  # a file changed since it was validated: refused from its header again
                raise
            except (OSError, ValueError, SyntaxError) as exc:
                raise ValueError(f"{self.name(int(i))}: could not be decoded as an image ({exc}).") from None
        return out


# ------------------------------------------------------------------------------------------
# labels
# ------------------------------------------------------------------------------------------
def _class_indices(column: pd.Series, where: str, classes: Sequence[str] | None) -> np.ndarray:
    """The class index of every label: a column of non-negative integers is read as indices (the
    model's output columns); any other column as class names, looked up in ``classes``."""
    text = column.astype(str).str.strip()
    empty = (text == "").to_numpy()
    if empty.any():
        raise ValueError(
            f"{where} row {int(np.flatnonzero(empty)[0]) + 1}, column 'label': is empty; expected a class name "
            "or index."
        )
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    if np.isfinite(numbers).all():
        bad = (numbers < 0) | (numbers != np.round(numbers))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{where} row {i + 1}, column 'label': {column.iloc[i]!r} is not a class; expected a class "
                "name or a non-negative integer (the model's output column)."
            )
        return numbers.astype(np.int64)
    if classes is None:
        i = int(np.flatnonzero(~np.isfinite(numbers))[0])
        raise ValueError(
            f"{where} row {i + 1}, column 'label': {column.iloc[i]!r} is a class name, but the model's class "
            "list is unknown; write the class names, in the order of the model's outputs, into the model's "
            "metadata ('classes', a JSON list) or a classes file (one name a line), or give class indices."
        )
    index = {str(name).strip(): k for k, name in enumerate(classes)}
    found = text.map(index)
    if found.isna().any():
        i = int(np.flatnonzero(found.isna().to_numpy())[0])
        shown = list(index)[:12]
        raise ValueError(
            f"{where} row {i + 1}, column 'label': {column.iloc[i]!r} is not one of the model's "
            f"{len(index)} classes {shown}{' …' if len(index) > 12 else ''}; expected one of those names "
            "(every label a name, or every label an index)."
        )
    return found.to_numpy(dtype=np.int64)


def _read_labels(raw: bytes, where: str, classes: Sequence[str] | None = None) -> pd.DataFrame:
    if b"\x00" in raw[:8192]:
        raise ValueError(f"{where}: binary content; expected a CSV with columns file,label.")
    dup = csv_header_duplicate(raw)
    if dup is not None:
        raise ValueError(f"{where}: column name {dup!r} occurs more than once in the header.")
    try:
        frame = pd.read_csv(io.BytesIO(raw), dtype={"file": str}, keep_default_na=False)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: could not be read as a CSV ({exc}).") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in ("file", "label") if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{where}: missing column(s) {missing}; expected columns file,label (optional split); "
            f"it has {list(frame.columns)}."
        )
    if frame.empty:
        raise ValueError(f"{where}: has no rows; expected one row per image.")
    files = frame["file"].astype(str).str.strip()
    for i, name in enumerate(files):
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if not name or name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
            raise ValueError(
                f"{where} row {i + 1}, column 'file': {name!r} is not a relative file name inside the image folder."
            )
    dup_rows = files.duplicated().to_numpy()
    if dup_rows.any():
        i = int(np.flatnonzero(dup_rows)[0])
        raise ValueError(f"{where} row {i + 1}, column 'file': {files.iloc[i]!r} is listed twice.")
    out = pd.DataFrame(
        {"file": files.str.replace("\\", "/", regex=False), "label": _class_indices(frame["label"], where, classes)}
    )
    if "split" in frame.columns:
        split = frame["split"].astype(str).str.strip()
        wrong = ~split.isin(["dev", "eval"]).to_numpy()
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise ValueError(f"{where} row {i + 1}, column 'split': {split.iloc[i]!r}; expected 'dev' or 'eval'.")
        out["split"] = split
    return out


def _check_membership(listed: list[str], found: list[str], where: str, labels_where: str) -> None:
    """The image files found must be exactly the files the labels list."""
    listed_set, found_set = set(listed), set(found)
    if listed_set == found_set:
        return
    absent = [f for f in listed if f not in found_set]
    extra = sorted(found_set - listed_set)
    parts = []
    if absent:
        parts.append(f"listed but not found: {absent[:5]}{' …' if len(absent) > 5 else ''}")
    if extra:
        parts.append(f"found but not listed: {extra[:5]}{' …' if len(extra) > 5 else ''}")
    raise ValueError(
        f"{where} holds {len(found)} image(s) but {labels_where} lists {len(listed)}; "
        + "; ".join(parts)
        + ". Every image needs exactly one row of labels."
    )


def _ignored(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return any(p.startswith(".") for p in parts) or (parts and parts[0] == "__MACOSX")


class ImageRefused(ValueError):
    """An image file the tool refuses (not PNG / JPEG, unreadable header, above :data:`MAX_PIXELS`)."""


def too_large(name: str, width: int, height: int) -> str | None:
    """The refusal of an image of ``width x height`` pixels named ``name``; None within :data:`MAX_PIXELS`.

    Examples
    --------
    >>> too_large("a.png", 20_000, 20_000)
    'a.png: is 20,000 x 20,000 pixels (400,000,000 pixels); images are limited to 40,000,000 pixels.'
    >>> too_large("b.png", 32, 32) is None
    True
    """
    if int(width) * int(height) <= MAX_PIXELS:
        return None
    return (
        f"{name}: is {int(width):,} x {int(height):,} pixels ({int(width) * int(height):,} pixels); images are "
        f"limited to {MAX_PIXELS:,} pixels."
    )


def open_image(source, name: str) -> Image.Image:
    """Open a PNG or JPEG file lazily, refusing it from its header when above :data:`MAX_PIXELS`.

    Only the header is read here (Pillow decodes on first use), and Pillow's own
    decompression-bomb check is not reached: the size is compared with the tool's limit first.

    Parameters
    ----------
    source : str, Path, bytes or file object
        The file, its bytes, or a binary stream positioned at its start.
    name : str
        The file as messages name it.

    Returns
    -------
    PIL.Image.Image
        Not yet decoded; close it (``with open_image(...) as img``).

    Raises
    ------
    ImageRefused
        A ``ValueError`` naming the file: not PNG / JPEG, a damaged header, or larger than
        :data:`MAX_PIXELS` (its size and the limit given).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    try:
        if isinstance(source, (str, Path)):
            with open(source, "rb") as fh:
                prefix = fh.read(16)
        else:
            prefix = source.read(16)
            source.seek(0)
    except OSError as exc:
        raise ImageRefused(f"{name}: could not be read ({exc}).") from None
    Image.preinit()  # registers the PNG and JPEG plugins (MPO through the JPEG factory)
    for kind in ("PNG", "JPEG"):
        factory, accept = Image.OPEN[kind]
        if accept is not None and accept(prefix) is not True:
            continue
        try:
            img = factory(source, name)  # header only; unlike Image.open, no bomb check here
        except (OSError, SyntaxError, IndexError, TypeError, ValueError, struct.error) as exc:
            raise ImageRefused(f"{name}: is not a readable PNG or JPEG image ({exc}).") from None
        refusal = too_large(name, *img.size)
        if refusal is not None:
            img.close()
            raise ImageRefused(refusal)
        return img
    raise ImageRefused(_not_png_or_jpeg(source, name))


def _not_png_or_jpeg(source, name: str) -> str:
    """Why a file that is neither PNG nor JPEG is refused, naming its format when Pillow knows it."""
    import warnings

    try:
        if not isinstance(source, (str, Path)):
            source.seek(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(source) as img:  # only to name the format; never decoded
                kind = img.format
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        kind = None
    if kind is None:
        return f"{name}: is not a readable PNG or JPEG image (unrecognised content)."
    return f"{name}: is a {kind} image; expected PNG or JPEG."


def _check_image(source, name: str) -> tuple[int, int, int]:
    """Open (:func:`open_image`), check format and size, verify; returns ``(height, width, channels)``
    with channels 1 (grey) or 3."""
    try:
        with open_image(source, name) as img:
            if img.format not in _FORMATS:  # pragma: no cover - open_image reads PNG / JPEG only
                raise ImageRefused(f"{name}: is a {img.format} image; expected PNG or JPEG.")
            channels = 1 if img.mode in ("1", "L", "I", "I;16", "I;16B", "F", "LA") else 3
            width, height = img.size
            img.verify()
            return int(height), int(width), channels
    except (OSError, SyntaxError, struct.error) as exc:
        raise ValueError(f"{name}: is not a readable PNG or JPEG image ({exc}).") from None


def _non_image(rel: str, where: str) -> ValueError:
    return ValueError(
        f"{where}/{rel}: is not an image file (expected {', '.join(IMAGE_SUFFIXES)}); remove it "
        "or move it out of the image folder."
    )


# ------------------------------------------------------------------------------------------
# sources
# ------------------------------------------------------------------------------------------
def open_images(images, labels=None, *, classes: Sequence[str] | None = None) -> ImageSet:
    """Open and validate a folder, ``.zip`` or ``.npz`` of labelled images.

    A folder and a zip follow one rule: the labels CSV is ``labels`` when given (file names
    relative to the folder, or to the archive's single top folder), else the one ``.csv``
    inside them at any depth (file names relative to the folder holding it).

    Parameters
    ----------
    images : str or Path
        A folder of PNG / JPEG files, a ``.zip`` of them, or an ``.npz`` with ``images`` and
        ``labels``.
    labels : str or Path, optional
        CSV with columns ``file, label`` (optional ``split``). Optional for a folder or a zip
        holding exactly one ``.csv``; refused for an ``.npz`` (which carries its labels).
    classes : sequence of str, optional
        The model's class names in the order of its outputs: labels given as names are
        mapped to their index through it (a column of integers is read as indices).

    Returns
    -------
    ImageSet

    Raises
    ------
    ValueError
        Anything the module docstring lists, naming the file.
    """
    path = check_input_file(images, what="--images", allow_folder=True)
    if path.is_dir():
        lpath = None if labels is None else check_input_file(labels, what="--labels")
        return _folder_images(path, lpath, classes=classes)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        if labels is not None:
            raise ValueError(
                f"--labels is for image folders and archives; {path} is an .npz that carries its own `labels` array."
            )
        return _npz_images(path)
    if suffix == ".zip":
        extra = None
        if labels is not None:
            lpath = check_input_file(labels, what="--labels")
            extra = (lpath.read_bytes(), str(lpath))
        return open_zip_images(path.read_bytes(), where=str(path), labels=extra, path=path, classes=classes)
    raise ValueError(
        f"--images {str(images)!r}: expected a folder of PNG/JPEG files, a .zip or an .npz; "
        f"got a {suffix or 'suffix-less'} file."
    )


def _labels_member(names: list[str], where: str, *, holder: str) -> str:
    """The one ``.csv`` among ``names`` (the labels of a folder or an archive), else a ValueError."""
    csvs = [m for m in names if m.lower().endswith(".csv")]
    if len(csvs) != 1:
        raise ValueError(
            f"{where}: holds {len(csvs)} .csv file(s) {csvs[:5]}; put exactly one labels CSV (columns "
            f"file,label) in the {holder}, or give the labels file separately."
        )
    return csvs[0]


def _folder_images(root: Path, labels: Path | None, *, classes: Sequence[str] | None) -> ImageSet:
    where = str(root)
    files = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir() or _ignored(rel):
            continue
        if p.is_symlink() and not p.resolve().is_relative_to(root.resolve()):
            raise ValueError(f"{where}/{rel}: links outside the image folder; copy the file in instead.")
        files.append((rel, p))
    if labels is None:
        member = _labels_member([rel for rel, _ in files], where, holder="folder")
        labels, labels_where = root / member, f"{where}/{member}"
        base = PurePosixPath(member).parent.as_posix()
    else:
        labels_where, base = str(labels), "."
    skip = labels.resolve()
    table = _read_labels(labels.read_bytes(), labels_where, classes)
    prefix = "" if base in ("", ".") else base + "/"
    found = []
    for rel, p in files:
        if p.resolve() == skip:
            continue
        if not rel.startswith(prefix):
            raise ValueError(
                f"{where}/{rel}: lies outside {base!r}, the folder of the labels; keep every image under it."
            )
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise _non_image(rel, where)
        found.append(rel[len(prefix) :])
    listed = table["file"].tolist()
    _check_membership(listed, found, where, labels_where)
    images_root = root / base if prefix else root
    shapes = [_check_image(images_root / f, f"{where}/{prefix}{f}") for f in listed]
    return ImageSet(
        tuple(listed),
        table["label"].to_numpy(),
        _splits(table),
        where,
        max(c for _, _, c in shapes),
        _FolderOpener(images_root, tuple(listed)),
        shapes=ImageShapes.of(shapes),
    )


@dataclass(frozen=True)
class _FolderOpener:
    root: Path
    files: tuple[str, ...]

    def __call__(self, i: int) -> Image.Image:
        return open_image(self.root / self.files[i], f"{self.root}/{self.files[i]}")


@dataclass(frozen=True)
class _ArrayOpener:
    images: np.ndarray

    def __call__(self, i: int) -> Image.Image:
        return Image.fromarray(self.images[i])


class _ZipOpener:
    """Members of a zip archive, by position; the archive is re-opened lazily after unpickling.

    Holds the archive's path when it came from a file (a worker re-reads it there) and its
    bytes otherwise (an upload).
    """

    def __init__(self, members: tuple[str, ...], *, data: bytes | None = None, path: Path | None = None):
        self.members, self.data, self.path = members, data, path
        self._archive: zipfile.ZipFile | None = None

    def __getstate__(self) -> dict:
        return {"members": self.members, "data": self.data if self.path is None else None, "path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["members"], data=state["data"], path=state["path"])

    def __call__(self, i: int) -> Image.Image:
        if self._archive is None:
            source = io.BytesIO(self.data) if self.data is not None else io.BytesIO(Path(self.path).read_bytes())
            self._archive = zipfile.ZipFile(source)
        return open_image(self._archive.read(self.members[i]), self.members[i])


def _splits(table: pd.DataFrame):
    return table["split"].to_numpy(dtype=object) if "split" in table.columns else None


def _npz_shape(data, key: str) -> tuple | None:
    """The shape of array ``key`` of an open ``.npz``, read from its header only (None if unreadable)."""
    try:
        with data.zip.open(f"{key}.npy") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            return tuple(read(fh)[0])
    except Exception:  # an unusual member: np.load's own reading reports it
        return None


def _npz_images(path: Path) -> ImageSet:
    where = str(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in ("images", "labels") if k not in data.files]
            if missing:
                raise ValueError(
                    f"{where}: has no array(s) {missing}; expected `images` (N, H, W[, C]) uint8 and "
                    f"`labels` (N,); it has {sorted(data.files)}."
                )
            shape = _npz_shape(data, "images")
            if shape is not None and len(shape) in (3, 4):  # refused before the array is read
                refusal = too_large(f"{where} (`images`)", shape[2], shape[1])
                if refusal is not None:
                    raise ImageRefused(refusal)
            images, labels = data["images"], data["labels"]
    except (OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{where}: could not be read as an .npz ({exc}).") from None
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ValueError(
                f"{where}: holds Python objects (pickled); expected plain uint8 / integer arrays."
            ) from None
        raise
    if (
        images.dtype != np.uint8
        or images.ndim not in (3, 4)
        or (images.ndim == 4 and images.shape[-1] not in (1, 3))
        or images.shape[0] == 0
    ):
        raise ValueError(
            f"{where}: `images` must be uint8 of shape (N, H, W) or (N, H, W, C) with C = 1 or 3, N > 0; "
            f"got {images.dtype} {images.shape}."
        )
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{where}: `images` holds {images.shape[0]} image(s) but `labels` has shape "
            f"{labels.shape}; expected one label per image."
        )
    if not np.issubdtype(labels.dtype, np.integer) or (labels < 0).any():
        raise ValueError(
            f"{where}: `labels` must be non-negative integers; got dtype {labels.dtype}"
            f"{'' if not np.issubdtype(labels.dtype, np.number) else f', min {labels.min()}'}."
        )
    images = images[..., 0] if images.ndim == 4 and images.shape[-1] == 1 else images
    channels = 1 if images.ndim == 3 else 3
    return ImageSet(
        tuple(range(images.shape[0])),
        labels.astype(np.int64),
        None,
        where,
        channels,
        _ArrayOpener(images),
        shapes=ImageShapes.of([(images.shape[1], images.shape[2], channels)] * images.shape[0]),
    )


def open_zip_images(
    data: bytes,
    *,
    where: str,
    labels: tuple[bytes, str] | None = None,
    max_members: int = ZIP_LIMITS["max_members"],
    max_bytes: int = ZIP_LIMITS["max_bytes"],
    max_ratio: int = ZIP_LIMITS["max_ratio"],
    path: Path | None = None,
    classes: Sequence[str] | None = None,
) -> ImageSet:
    """Validate a zip archive of labelled images and read its members in place.

    Parameters
    ----------
    data : bytes
        The archive.
    where : str
        Its name in messages (the uploaded file name or path).
    labels : (bytes, str), optional
        A labels CSV given alongside, and its name; otherwise the one ``.csv`` inside.
    max_members, max_bytes, max_ratio : int
        Refuse archives with more members, more uncompressed bytes in total, or a member
        compressed more than ``max_ratio`` : 1 (zip bombs).
    path : Path, optional
        The file ``data`` was read from; a pickled ImageSet then carries the path, not the
        bytes (Dask workers re-read the archive there).
    classes : sequence of str, optional
        The model's class names, for labels given as names (:func:`open_images`).

    Returns
    -------
    ImageSet
        ``record_id`` = member path relative to the labels' folder.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{where}: is not a readable zip archive ({exc}).") from None
    if len(infos) > max_members:
        raise ValueError(f"{where}: has {len(infos):,} members; archives are limited to {max_members:,}.")
    total = 0
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
            raise ValueError(f"{where}: member {name!r} points outside the archive's root; refused.")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ValueError(f"{where}: member {name!r} is a symbolic link; refused.")
        if info.flag_bits & 0x1:
            raise ValueError(f"{where}: member {name!r} is encrypted; give an unencrypted archive.")
        total += info.file_size
        if total > max_bytes:
            raise ValueError(f"{where}: unpacks to more than {max_bytes / 1024**2:,.0f} MB; refused.")
        if info.compress_size and info.file_size / info.compress_size > max_ratio:
            raise ValueError(
                f"{where}: member {name!r} is compressed {info.file_size / info.compress_size:,.0f}:1 "
                f"(more than {max_ratio}:1, a zip bomb?); refused."
            )
        rel = PurePosixPath(name.replace("\\", "/")).as_posix()
        if not info.is_dir() and not _ignored(rel):
            members[rel] = info
    if labels is None:
        labels_member = _labels_member(list(members), where, holder="archive")
        labels_where = f"{where}/{labels_member}"
        table = _read_labels(archive.read(members[labels_member]), labels_where, classes)
        base = PurePosixPath(labels_member).parent.as_posix()
    else:
        labels_member = None
        table = _read_labels(labels[0], labels[1], classes)
        labels_where = labels[1]
        tops = {PurePosixPath(m).parts[0] for m in members}
        single_top = len(tops) == 1 and all(len(PurePosixPath(m).parts) > 1 for m in members)
        base = next(iter(tops)) if single_top else "."
    prefix = "" if base in ("", ".") else base + "/"
    found = []
    for m in members:
        if m == labels_member:
            continue
        if not m.startswith(prefix):
            raise ValueError(
                f"{where}/{m}: lies outside {base!r}, the folder of the labels; keep every image under it."
            )
        rel = m[len(prefix) :]
        if not rel.lower().endswith(IMAGE_SUFFIXES):
            raise _non_image(m, where)
        found.append(rel)
    listed = table["file"].tolist()
    _check_membership(listed, found, where, labels_where)

    shapes = [_check_image(archive.read(members[prefix + f]), f"{where}/{prefix}{f}") for f in listed]
    positions = _ZipOpener(tuple(members[prefix + f].filename for f in listed), data=data, path=path)
    return ImageSet(
        tuple(listed),
        table["label"].to_numpy(),
        _splits(table),
        where,
        max(c for _, _, c in shapes),
        positions,
        shapes=ImageShapes.of(shapes),
    )


def png_data_uri(image: np.ndarray, *, min_side: int = 96) -> str:
    """A ``uint8`` image ``(H, W)`` or ``(H, W, C)`` as a PNG data URI, enlarged to at least ``min_side`` px.

    Enlargement is by an integer nearest-neighbour factor (crisp pixels, nothing invented).
    """
    import base64

    arr = np.asarray(image)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 3)):
        raise ValueError(f"`image` must be uint8 (H, W) or (H, W, C) with C = 1 or 3; got {arr.dtype} {arr.shape}.")
    arr = arr[..., 0] if arr.ndim == 3 and arr.shape[-1] == 1 else arr
    factor = max(1, -(-int(min_side) // min(arr.shape[:2])))
    big = arr.repeat(factor, axis=0).repeat(factor, axis=1)
    buffer = io.BytesIO()
    Image.fromarray(big).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
