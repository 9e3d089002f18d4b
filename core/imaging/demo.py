"""The seeded demo pool: real small classifiers on Fashion-MNIST, perturbed and recorded.

:func:`build_demo_pool` trains eleven classifiers in five architecture groups (torch CNNs of
three widths, a small torch ResNet, torch MLPs, logistic regressions, tree ensembles on the
pixels) on a class-balanced subsample of Fashion-MNIST's training set (read from Debian's
``dataset-fashion-mnist``, :data:`FASHION_MNIST_DIR`), then records their outputs on a
class-balanced subset of its test set (development and evaluation images) under

* 18 synthetic corruptions (9 types x severities 2 and 4, :mod:`core.imaging.corruptions`),
  source ``"synthetic"``;
* 18 natural transforms (the TTA comparator), per-probe outputs only;
* 18 **simulated** screen and print re-capture conditions (:mod:`core.imaging.recapture_sim`),
  source ``"simulated-recapture"``. They stand in for physical recaptures, which this demo
  does not have.

Everything is derived from one integer seed: the subsamples, every model's initialisation and
data order, every corruption draw. Torch runs single-threaded with deterministic algorithms,
so a rerun on the same machine and library versions is bit-identical. On another CPU the
images and every condition's inputs are still identical, but training is not (SGD amplifies
kernel rounding), so the fitted models ship with the pool (:func:`save_demo_models`, no
pickle) and :func:`reevaluate_demo_pool` reproduces the outputs from them anywhere, up to
float32 kernel noise, from the shipped images alone (the dataset is needed only to re-train).
The committed script ``scripts/make_demo_pool.py`` writes the result to
``assets/paired_demo/``; the dashboard reads it back with :func:`load_demo_pool`.

Tables (columns documented on :class:`DemoPool`) follow the cross-module contracts of
``docs/DEVELOPING.md``. Predictions, maximum and true-class probabilities are the models'
float32 outputs, exactly (argmax ties to the lowest class index). Full probability vectors
(``prob_0 .. prob_9``, needed only for the A3 score) are rounded to multiples of 1e-6 to keep
the shipped files small, and probes carry them only for the images that are scored (clean-correct
evaluation images); elsewhere they are empty (NaN).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from core._rng import as_generator
from core.atomic import atomic_path, atomic_write_bytes, atomic_write_text
from core.formats import DEMO_POOL
from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS, motion_blur_image
from core.imaging.recapture_sim import SimulatedRecapture, recapture_conditions, simulate
from core.resources import ASSETS_DIR

__all__ = [
    "DEFAULT_DIR",
    "FASHION_MNIST_DIR",
    "MODEL_SPECS",
    "SEVERITIES",
    "DemoImages",
    "DemoPool",
    "ModelSpec",
    "build_demo_pool",
    "load_demo_models",
    "reevaluate_demo_pool",
    "save_demo_models",
    "demo_conditions",
    "digit_images",
    "fashion_mnist",
    "load_demo_images",
    "load_demo_pool",
    "load_demo_probes_of",
    "render_condition",
    "render_condition_image",
    "save_demo_pool",
    "pool_indices",
]

DEFAULT_DIR = ASSETS_DIR / "paired_demo"
"""Where the shipped pool lives (``assets/paired_demo/``)."""

SEVERITIES = (2, 4)
"""Corruption severities recorded (as the paper's Syn-B set)."""

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's ``dataset-fashion-mnist`` puts the four IDX files (needed only to re-train)."""

N_CLASSES = 10
IMAGE_SIZE = 28
N_TRAIN_PER_CLASS = 600
"""Training images per class, drawn from Fashion-MNIST's 60,000 (a few CPU minutes in all)."""
N_DEV_PER_CLASS = 50
N_EVAL_PER_CLASS = 100
"""Held-out images per class, drawn from the 10,000 test images: 500 development, 1,000 evaluation."""
_DIGIT_SIZE = 24
_DIGIT_PAGE = 32
_FILES = {
    "records": "records.parquet",
    "probes": "probes.parquet",
    "clean": "clean.parquet",
    "models": "models.parquet",
    "conditions": "conditions.parquet",
    "images": "images.npz",
    "manifest": "manifest.json",
}
_PROB_COLUMNS = [f"prob_{c}" for c in range(N_CLASSES)]
_VECTOR_DECIMALS = 6


# ------------------------------------------------------------------------------------------
# images
# ------------------------------------------------------------------------------------------
def digit_images() -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 ``load_digits`` images as dark ink on a white 32 x 32 page.

    Not used by the pool any more (it is built from Fashion-MNIST); kept as small bundled test
    images for the corruption tests, which need no dataset download.

    Each 8 x 8 image (0 = blank, 16 = full ink) is inverted, upsampled by 3 with a cubic
    spline to 24 x 24, centred on a white 32 x 32 page and quantised to 8 bits.

    Returns
    -------
    images : ndarray of uint8, shape (1797, 32, 32)
        255 = white paper, 0 = black ink. Row ``i`` is ``load_digits`` sample ``i``.
    labels : ndarray of int64, shape (1797,)
    """
    from scipy import ndimage
    from sklearn.datasets import load_digits

    digits = load_digits()
    paper = 1.0 - digits.images / 16.0
    up = ndimage.zoom(
        paper, (1, _DIGIT_SIZE / 8, _DIGIT_SIZE / 8), order=3, grid_mode=True, mode="grid-constant", cval=1.0
    )
    pad = (_DIGIT_PAGE - _DIGIT_SIZE) // 2
    page = np.ones((paper.shape[0], _DIGIT_PAGE, _DIGIT_PAGE))
    page[:, pad : pad + _DIGIT_SIZE, pad : pad + _DIGIT_SIZE] = up
    images = np.rint(np.clip(page, 0.0, 1.0) * 255.0).astype(np.uint8)
    return images, digits.target.astype(np.int64)


_IDX_FILES = {
    "train_images": ("train-images-idx3-ubyte", 0x803),
    "train_labels": ("train-labels-idx1-ubyte", 0x801),
    "test_images": ("t10k-images-idx3-ubyte", 0x803),
    "test_labels": ("t10k-labels-idx1-ubyte", 0x801),
}


def _read_idx(path: Path, magic: int) -> np.ndarray:
    """One IDX file (gzip or plain): big-endian magic, dimension sizes, then uint8 data."""
    import gzip

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim or int.from_bytes(raw[:4], "big") != magic:
        raise ValueError(
            f"{path}: not an IDX file of {ndim}-d uint8 data (magic {magic:#010x} expected, "
            f"got {int.from_bytes(raw[:4], 'big'):#010x})."
        )
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    body = raw[4 + 4 * ndim :]
    if len(body) != int(np.prod(shape)):
        raise ValueError(
            f"{path}: header announces shape {shape} ({int(np.prod(shape))} bytes) "
            f"but {len(body)} bytes follow; the file is truncated or corrupt."
        )
    return np.frombuffer(body, dtype=np.uint8).reshape(shape)


def fashion_mnist(directory=FASHION_MNIST_DIR) -> dict[str, np.ndarray]:
    """Read Fashion-MNIST from its four IDX files (Debian's ``dataset-fashion-mnist``).

    Parameters
    ----------
    directory : path-like, default: :data:`FASHION_MNIST_DIR`
        Holds ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``,
        ``t10k-images-idx3-ubyte[.gz]`` and ``t10k-labels-idx1-ubyte[.gz]``.

    Returns
    -------
    dict
        ``train_images`` uint8 (60000, 28, 28), ``train_labels`` int64 (60000,),
        ``test_images`` uint8 (10000, 28, 28), ``test_labels`` int64 (10000,). Pixel value =
        brightness (0 = black background, 255 = the brightest part of the garment).
    """
    directory = Path(directory)
    out = {}
    for key, (stem, magic) in _IDX_FILES.items():
        found = [directory / f"{stem}{ext}" for ext in (".gz", "") if (directory / f"{stem}{ext}").is_file()]
        if not found:
            raise FileNotFoundError(
                f"Fashion-MNIST file {directory / stem}[.gz] is missing; install the dataset with "
                "`apt-get install dataset-fashion-mnist` or pass the folder that holds it."
            )
        out[key] = _read_idx(found[0], magic)
    for part in ("train", "test"):
        images, labels = out[f"{part}_images"], out[f"{part}_labels"]
        if (
            images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE)
            or images.shape[0] != labels.shape[0]
            or labels.max() >= N_CLASSES
        ):
            raise ValueError(
                f"{directory}: {part} images {images.shape} and labels {labels.shape} "
                f"(max {labels.max()}) are not 28 x 28 images with labels 0..9 of equal count."
            )
        out[f"{part}_labels"] = labels.astype(np.int64)
    return out


def pool_indices(train_labels, test_labels, *, seed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pool's class-balanced subsamples of Fashion-MNIST.

    Parameters
    ----------
    train_labels, test_labels : array-like of int, shapes (n_train,), (n_test,)
    seed : int or numpy.random.Generator

    Returns
    -------
    train : ndarray of int64, shape (10 * N_TRAIN_PER_CLASS,)
        Sorted training-set indices used to fit the models.
    held : ndarray of int64, shape (10 * (N_DEV_PER_CLASS + N_EVAL_PER_CLASS),)
        Sorted test-set indices of the held-out images (the ``record_id``).
    split : ndarray of str, shape like ``held``
        ``"dev"`` or ``"eval"`` per held-out image.
    """
    rng = as_generator(seed)
    train_labels, test_labels = np.asarray(train_labels), np.asarray(test_labels)
    train, dev, evaluation = [], [], []
    for label in range(N_CLASSES):
        members = np.flatnonzero(train_labels == label)
        held = np.flatnonzero(test_labels == label)
        if members.size < N_TRAIN_PER_CLASS or held.size < N_DEV_PER_CLASS + N_EVAL_PER_CLASS:
            raise ValueError(
                f"class {label} has {members.size} training and {held.size} test images; the pool "
                f"needs {N_TRAIN_PER_CLASS} and {N_DEV_PER_CLASS + N_EVAL_PER_CLASS}."
            )
        train.append(rng.permutation(members)[:N_TRAIN_PER_CLASS])
        held = rng.permutation(held)
        dev.append(held[:N_DEV_PER_CLASS])
        evaluation.append(held[N_DEV_PER_CLASS : N_DEV_PER_CLASS + N_EVAL_PER_CLASS])
    held = np.concatenate(dev + evaluation)
    split = np.array(["dev"] * (N_CLASSES * N_DEV_PER_CLASS) + ["eval"] * (N_CLASSES * N_EVAL_PER_CLASS))
    order = np.argsort(held, kind="stable")
    return np.sort(np.concatenate(train)), held[order].astype(np.int64), split[order]


# ------------------------------------------------------------------------------------------
# models
# ------------------------------------------------------------------------------------------
Family = Literal["cnn", "resnet", "mlp", "logistic", "random_forest", "extra_trees"]
_TORCH_FAMILIES = ("cnn", "resnet", "mlp")


@dataclass(frozen=True)
class ModelSpec:
    """One classifier of the pool.

    Attributes
    ----------
    name : str
        Unique model name (the ``model`` column).
    group : str
        Architecture group (the ``group`` column; bootstrap resamples groups).
    family : {"cnn", "resnet", "mlp", "logistic", "random_forest", "extra_trees"}
    params : tuple of (str, value) pairs
        Family-specific hyper-parameters (hashable, so the spec stays frozen).
    description : str
        One line for the dashboard.
    """

    name: str
    group: str
    family: Family
    params: tuple[tuple[str, object], ...]
    description: str

    def param(self, key: str):
        """The hyper-parameter ``key`` (KeyError if the family does not use it)."""
        return dict(self.params)[key]


MODEL_SPECS: tuple[ModelSpec, ...] = (
    ModelSpec("cnn-w8", "cnn", "cnn", (("width", 8), ("epochs", 6)), "3-layer CNN, width 8"),
    ModelSpec("cnn-w16", "cnn", "cnn", (("width", 16), ("epochs", 6)), "3-layer CNN, width 16"),
    ModelSpec("cnn-w32", "cnn", "cnn", (("width", 32), ("epochs", 6)), "3-layer CNN, width 32"),
    ModelSpec(
        "resnet-w16",
        "resnet",
        "resnet",
        (("width", 16), ("epochs", 6)),
        "ResNet: strided stem + 3 residual blocks (batch norm), width 16",
    ),
    ModelSpec("mlp-128", "mlp", "mlp", (("hidden", (128,)), ("epochs", 15)), "MLP, one hidden layer of 128"),
    ModelSpec("mlp-256-64", "mlp", "mlp", (("hidden", (256, 64)), ("epochs", 15)), "MLP, hidden layers 256 and 64"),
    ModelSpec("logreg-c0.01", "linear", "logistic", (("C", 0.01),), "multinomial logistic regression, C = 0.01"),
    ModelSpec("logreg-c1", "linear", "logistic", (("C", 1.0),), "multinomial logistic regression, C = 1"),
    ModelSpec(
        "random-forest",
        "forest",
        "random_forest",
        (("n_estimators", 60), ("max_leaf_nodes", 256)),
        "random forest on the pixels, 60 trees of at most 256 leaves",
    ),
    ModelSpec(
        "extra-trees",
        "forest",
        "extra_trees",
        (("n_estimators", 60), ("max_leaf_nodes", 256)),
        "extremely randomised trees on the pixels, 60 trees of at most 256 leaves",
    ),
)
"""The ten classifiers, in five groups. Index in this tuple fixes each model's random stream."""

Predictor = Callable[[np.ndarray], np.ndarray]


@contextlib.contextmanager
def _single_threaded_deterministic():
    """Single-threaded, deterministic torch and BLAS/OpenMP for the duration; restored after."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _residual_block(c_in: int, c_out: int, stride: int):
    """A basic ResNet block: two 3x3 conv + batch norm, identity or 1x1 projection shortcut."""
    from torch import nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
                nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
            )
            self.shortcut = (
                nn.Identity()
                if stride == 1 and c_in == c_out
                else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
            )

        def forward(self, x):
            return (self.body(x) + self.shortcut(x)).relu()

    return Residual()


def _torch_module(spec: ModelSpec):
    from torch import nn

    if spec.family == "cnn":
        w = spec.param("width")
        return nn.Sequential(
            nn.Conv2d(1, w, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(2 * w, 4 * w, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(4 * w * (IMAGE_SIZE // 8) ** 2, N_CLASSES),
        )
    if spec.family == "resnet":
        w = spec.param("width")
        return nn.Sequential(
            # a strided stem (28 -> 14) keeps training within the few-CPU-minutes budget
            nn.Conv2d(1, w, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(w),
            nn.ReLU(),
            _residual_block(w, w, 1),
            _residual_block(w, 2 * w, 2),
            _residual_block(2 * w, 4 * w, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4 * w, N_CLASSES),
        )
    sizes = (IMAGE_SIZE * IMAGE_SIZE, *spec.param("hidden"))
    layers: list = [nn.Flatten()]
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(sizes[-1], N_CLASSES))


def _train_torch(spec: ModelSpec, x: np.ndarray, y: np.ndarray, seed: int):
    import torch
    from torch import nn

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = _torch_module(spec)
        order = torch.Generator().manual_seed(seed)
        inputs = torch.from_numpy(2.0 * x[:, None].astype(np.float32) - 1.0)
        targets = torch.from_numpy(y)
        optimiser = torch.optim.Adam(net.parameters(), lr=1e-3 if spec.family == "mlp" else 2e-3)
        loss_fn = nn.CrossEntropyLoss()
        net.train()
        for _ in range(spec.param("epochs")):
            for idx in torch.randperm(len(targets), generator=order).split(64):
                optimiser.zero_grad()
                loss_fn(net(inputs[idx]), targets[idx]).backward()
                optimiser.step()
    return net.eval()


def _train_sklearn(spec: ModelSpec, x: np.ndarray, y: np.ndarray, seed: int):
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    if spec.family == "logistic":
        model = LogisticRegression(C=spec.param("C"), max_iter=3000)
    else:
        forest = RandomForestClassifier if spec.family == "random_forest" else ExtraTreesClassifier
        model = forest(
            n_estimators=spec.param("n_estimators"),
            max_leaf_nodes=spec.param("max_leaf_nodes"),
            random_state=seed,
            n_jobs=1,
        )
    # float64: a float32 fit and predict run float32 GEMMs, whose rounding differs by 1e-5
    # between CPU kernels; in float64 it stays below the float32 output's last bit.
    return model.fit(x.reshape(len(x), -1).astype(np.float64), y)


def _train(spec: ModelSpec, x: np.ndarray, y: np.ndarray, seed: int):
    """The fitted model: a torch module in eval mode or a scikit-learn estimator."""
    if spec.family in _TORCH_FAMILIES:
        return _train_torch(spec, x, y, seed)
    return _train_sklearn(spec, x, y, seed)


def _predictor(spec: ModelSpec, model) -> Predictor:
    """``images (n, 28, 28) float32 in [0, 1] -> float32 probabilities (n, 10)``."""
    if spec.family not in _TORCH_FAMILIES:
        return lambda images: model.predict_proba(images.reshape(len(images), -1).astype(np.float64)).astype(np.float32)
    import torch

    def predict(images: np.ndarray) -> np.ndarray:
        out = []
        with torch.no_grad():
            for chunk in np.array_split(images, max(1, -(-len(images) // 1024))):
                z = torch.from_numpy(2.0 * chunk[:, None].astype(np.float32) - 1.0)
                out.append(torch.softmax(model(z), dim=1).numpy())
        return np.concatenate(out).astype(np.float32)

    return predict


_SPECS_BY_NAME = {m.name: m for m in MODEL_SPECS}
_MODELS_DIR = "models"
# The only non-default type the forests need. Loading it is safe only after _check_trees has
# bounded every node index: scikit-learn indexes them without checks.
_TREE_TYPE = "sklearn.tree._tree.Tree"
_SKLEARN_CLASSES = {
    "logistic": "LogisticRegression",
    "random_forest": "RandomForestClassifier",
    "extra_trees": "ExtraTreesClassifier",
}


def _model_file(spec: ModelSpec) -> str:
    return f"{spec.name}.pt" if spec.family in _TORCH_FAMILIES else f"{spec.name}.skops"


def save_demo_models(fitted: Mapping[str, object], directory) -> dict[str, Path]:
    """Write fitted pool models under ``directory/models/``, in formats that run no code on load.

    Torch models are saved as their ``state_dict`` (``<name>.pt``, read back with
    ``torch.load(weights_only=True)``); scikit-learn models with ``skops.io`` (``<name>.skops``).

    Parameters
    ----------
    fitted : mapping of model name to fitted model
        Names from :data:`MODEL_SPECS`; values as returned by the pool's training.
    directory : path-like
        The pool folder.

    Returns
    -------
    dict
        Model name -> file written.
    """
    import skops.io as sio
    import torch

    folder = Path(directory) / _MODELS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, model in fitted.items():
        spec = _SPECS_BY_NAME[name]
        path = folder / _model_file(spec)
        with atomic_path(path) as tmp:
            if spec.family in _TORCH_FAMILIES:
                torch.save(model.state_dict(), tmp)
            else:
                sio.dump(model, tmp, compression=8)  # zipfile.ZIP_DEFLATED
        paths[name] = path
    return paths


def _check_trees(model, n_features: int, path: Path) -> None:
    """Refuse a forest whose node arrays point outside themselves (a crafted or corrupt file)."""
    for t, est in enumerate(model.estimators_):
        tree = est.tree_
        n = tree.node_count
        left, right, feature = tree.children_left, tree.children_right, tree.feature
        leaf = left == -1
        ok = (
            left.shape == right.shape == feature.shape == (n,)
            and np.array_equal(leaf, right == -1)
            and ((left[~leaf] > 0) & (left[~leaf] < n) & (right[~leaf] > 0) & (right[~leaf] < n)).all()
            and ((feature[~leaf] >= 0) & (feature[~leaf] < n_features)).all()
            and tree.value.shape[0] == n
        )
        if not ok:
            raise ValueError(
                f"{path}: tree {t} has node indices outside its {n} nodes or "
                f"{n_features} features; the file is corrupt or was not written by this tool."
            )


def load_demo_models(directory=DEFAULT_DIR, *, models: Sequence[str] | None = None) -> dict[str, Predictor]:
    """Read the shipped pool models and return one predictor per model.

    Nothing is unpickled: torch ``state_dict`` files load with ``weights_only=True``, skops files
    with an explicit trusted-type list (``sklearn.tree._tree.Tree`` only, whose node indices are
    bounds-checked before use).

    Parameters
    ----------
    directory : path-like, default: the shipped pool
    models : sequence of str, optional
        Names from :data:`MODEL_SPECS` (default: all).

    Returns
    -------
    dict
        Model name -> ``predict(images) -> probabilities``: images ``(n, 28, 28)`` float32 in
        [0, 1] (the stored 8-bit image / 255), probabilities float32 ``(n, 10)``.
    """
    import skops.io as sio
    import torch

    names = _pool_iv(models, list(_SPECS_BY_NAME), "models")
    folder = Path(directory) / _MODELS_DIR
    out = {}
    for name in names:
        spec = _SPECS_BY_NAME[name]
        path = folder / _model_file(spec)
        if not path.is_file():
            raise FileNotFoundError(
                f"demo pool model {path} is missing; regenerate the pool with `python scripts/make_demo_pool.py`."
            )
        unreadable = f"{path} is not a readable {spec.family} model of this pool"
        if spec.family in _TORCH_FAMILIES:
            try:
                net = _torch_module(spec)
                net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            except Exception as exc:  # a planted pickle, a truncated zip, a wrong tensor shape, ...
                raise ValueError(f"{unreadable}: {exc}") from exc
            model = net.eval()
        else:
            try:
                untrusted = sio.get_untrusted_types(file=path)
            except Exception as exc:
                raise ValueError(f"{unreadable}: {exc}") from exc
            extra = sorted(set(untrusted) - {_TREE_TYPE})
            if extra:
                raise ValueError(f"{path} holds types this pool never writes: {extra}.")
            try:
                model = sio.load(path, trusted=untrusted)
            except Exception as exc:
                raise ValueError(f"{unreadable}: {exc}") from exc
            expected = _SKLEARN_CLASSES[spec.family]
            if type(model).__name__ != expected:
                raise ValueError(f"{path} holds a {type(model).__name__}; this pool's {spec.name} is a {expected}.")
            if hasattr(model, "estimators_"):
                _check_trees(model, IMAGE_SIZE * IMAGE_SIZE, path)
        out[name] = _predictor(spec, model)
    return out


# ------------------------------------------------------------------------------------------
# conditions
# ------------------------------------------------------------------------------------------
def demo_conditions() -> pd.DataFrame:
    """Every input variant of the pool, in generation order (this order fixes random streams).

    Returns
    -------
    DataFrame with one row per variant and columns

    ``condition`` : str
        Name used in the ``condition`` / ``probe`` columns: ``"<corruption> s<severity>"``,
        the natural-transform name, or ``"sim-recapture screen d<i> c<j>"`` /
        ``"sim-recapture print p<i> c<j>"`` (:mod:`core.imaging.recapture_sim`).
    ``source`` : str
        ``"synthetic"`` (corruptions), ``"transform"`` (natural transforms, probes only) or
        ``"simulated-recapture"``.
    ``kind`` : str
        Probe kind: ``"corruption"``, ``"transform"``, or ``""`` for recaptures.
    ``family`` : str
        Corruption type, transform name, or ``"simulated-recapture"``.
    ``severity`` : int
        Corruption severity (1..5); 0 otherwise.
    ``medium`` : str
        ``"screen"`` or ``"print"`` for recaptures; ``""`` otherwise.
    ``medium_level``, ``capture_level`` : int
        Recapture levels (1..3); 0 otherwise.
    """
    rows = []
    for name in CORRUPTIONS:
        for severity in SEVERITIES:
            rows.append((f"{name} s{severity}", "synthetic", "corruption", name, severity, "", 0, 0))
    for name in NATURAL_TRANSFORMS:
        rows.append((name, "transform", "transform", name, 0, "", 0, 0))
    for cond in recapture_conditions():
        rows.append(
            (
                cond.name,
                "simulated-recapture",
                "",
                "simulated-recapture",
                0,
                cond.medium,
                cond.medium_level,
                cond.capture_level,
            )
        )
    return pd.DataFrame(
        rows, columns=["condition", "source", "kind", "family", "severity", "medium", "medium_level", "capture_level"]
    )


def _perturb(images01: np.ndarray, row, rng: np.random.Generator) -> np.ndarray:
    """Apply one condition row of :func:`demo_conditions`; returns 8-bit-quantised floats."""
    if row.source == "synthetic":
        out = CORRUPTIONS[row.family](images01, int(row.severity), rng)
    elif row.source == "transform":
        out = NATURAL_TRANSFORMS[row.family](images01.astype(np.float64))
    else:
        cond = SimulatedRecapture(str(row.medium), int(row.medium_level), int(row.capture_level))
        out = simulate(images01, cond, rng)
    return _quantised(out)


def _quantised(out: np.ndarray) -> np.ndarray:
    # Every model input is an 8-bit image, so any variant could be stored and reproduced.
    return np.rint(np.clip(out, 0.0, 1.0) * 255.0) / 255.0


def _condition_streams(seed) -> list[np.random.Generator]:
    root = as_generator(seed)
    _, _, perturb = root.spawn(3)
    return perturb.spawn(len(demo_conditions()))


def _condition_input(images, condition: str) -> tuple[int, pd.Series, np.ndarray]:
    """The condition's position and row in :func:`demo_conditions`, and the checked images."""
    table = demo_conditions()
    match = np.flatnonzero(table["condition"].to_numpy() == condition)
    if match.size != 1:
        raise ValueError(f"`condition` must be one of the pool's conditions; got {condition!r}.")
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise ValueError(f"`images` must be a uint8 array (n, H, W); got {images.dtype} {images.shape}.")
    return int(match[0]), table.iloc[match[0]], images


def render_condition(images, condition: str, *, seed=0) -> np.ndarray:
    """Reproduce the inputs a condition gave the models (for thumbnails).

    Parameters
    ----------
    images : ndarray of uint8, shape (n, 28, 28)
        The **complete** held-out image array of the pool, in stored order (random draws are
        made for the whole batch, so a subset would receive different draws).
    condition : str
        A ``condition`` value of :func:`demo_conditions`.
    seed : int
        The pool's seed (``manifest.json``).

    Returns
    -------
    ndarray of uint8, shape (n, 28, 28)
    """
    position, row, images = _condition_input(images, condition)
    out = _perturb(images.astype(np.float32) / 255.0, row, _condition_streams(seed)[position])
    return np.rint(out * 255.0).astype(np.uint8)


def render_condition_image(images, index: int, condition: str, *, seed=0) -> np.ndarray | None:
    """``render_condition(images, condition, seed=seed)[index]`` rendered alone, where that is the same.

    A condition that makes no random draw (the natural transforms and the deterministic
    corruptions: defocus, contrast, brightness, pixelate, JPEG) acts on every image by itself,
    so one image is rendered from that image alone (the page's probe view needs one image,
    not 1,500). Whether the condition drew is read from its random stream's state, not from a
    list of names. Motion blur draws one angle per image for the whole batch and streaks each
    image by itself: the angles are drawn, one image streaked
    (:func:`core.imaging.corruptions.motion_blur_image`).

    Parameters
    ----------
    images : ndarray of uint8, shape (n, 28, 28)
        The complete held-out image array of the pool, in stored order.
    index : int
        Position of the image in ``images``.
    condition : str
        A ``condition`` value of :func:`demo_conditions`.
    seed : int
        The pool's seed (``manifest.json``).

    Returns
    -------
    ndarray of uint8, shape (28, 28), or None
        None when the condition draws at random from the images' values (noise, the
        simulated recaptures): its draws are made for the whole batch, so render the whole
        pool with :func:`render_condition` (and cache it).
    """
    position, row, images = _condition_input(images, condition)
    if not 0 <= int(index) < len(images):
        raise ValueError(f"`index` must be in [0, {len(images)}); got {index!r}.")
    rng = _condition_streams(seed)[position]
    index = int(index)
    if row.source == "synthetic" and row.family == "motion_blur":
        # One angle per image, drawn for the whole batch; the streak reads its own image only.
        out = motion_blur_image(images.astype(np.float32) / 255.0, index, int(row.severity), rng)
        return np.rint(_quantised(out) * 255.0).astype(np.uint8)
    before = rng.bit_generator.state
    out = _perturb(images[index : index + 1].astype(np.float32) / 255.0, row, rng)
    if rng.bit_generator.state != before:
        return None
    return np.rint(out[0] * 255.0).astype(np.uint8)


# ------------------------------------------------------------------------------------------
# the pool
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DemoImages:
    """The demo pool's images and manifest without its tables: what thumbnails and probe renders need.

    Attributes
    ----------
    images, image_ids, image_labels, image_splits, manifest
        As in :class:`DemoPool`.
    """

    images: np.ndarray
    image_ids: np.ndarray
    image_labels: np.ndarray
    image_splits: np.ndarray
    manifest: dict


@dataclass(frozen=True)
class DemoPool:
    """The demo pool's tables and images.

    Attributes
    ----------
    records : DataFrame
        Paired records, one row per (model, condition, held-out image), schema of
        ``docs/DEVELOPING.md``: ``model, condition, source, record_id, true_label,
        clean_pred, clean_max_prob, clean_true_prob, pert_pred, pert_max_prob,
        pert_true_prob, split, group``. Sources ``"synthetic"`` (18 corruption conditions)
        and ``"simulated-recapture"`` (18 simulated screen and print conditions).
    probes : DataFrame
        Per-probe outputs, long format: ``model, record_id, probe, kind, true_label, pred,
        max_prob, true_prob, prob_0 .. prob_9``; ``kind`` is ``"corruption"`` (18 probes,
        the synthetic conditions, on every held-out image) or ``"transform"`` (18 natural
        transforms, on evaluation images). ``prob_*`` (rounded to 1e-6) are filled only for
        clean-correct evaluation images, NaN elsewhere.
    clean : DataFrame
        Clean outputs, one row per (model, held-out image): ``model, group, record_id,
        true_label, split, pred, max_prob, true_prob, prob_0 .. prob_9`` (vectors rounded
        to 1e-6).
    models : DataFrame
        ``model, group, family, description, dev_accuracy, eval_accuracy`` (clean).
    conditions : DataFrame
        :func:`demo_conditions` plus ``inputs_sha256`` (SHA-256 of the condition's 8-bit model
        inputs, identical on every machine) and ``dev_accuracy`` (mean over models of the
        perturbed accuracy on development images).
    images : ndarray of uint8, shape (n_heldout, 28, 28)
        Held-out Fashion-MNIST test images (0 = black background), row ``i`` is ``image_ids[i]``.
    image_ids, image_labels : ndarray of int64, shape (n_heldout,)
        ``record_id`` (index in Fashion-MNIST's test set) and label of each stored image.
    image_splits : ndarray of str, shape (n_heldout,)
        ``"dev"`` or ``"eval"``.
    manifest : dict
        Seed, library versions, machine, sizes, input digests and notes (``manifest.json``).
    fitted : dict
        Model name -> fitted model (torch module or scikit-learn estimator) after
        :func:`build_demo_pool`; empty when read back (:func:`load_demo_models` reads the
        shipped models).
    """

    records: pd.DataFrame
    probes: pd.DataFrame
    clean: pd.DataFrame
    models: pd.DataFrame
    conditions: pd.DataFrame
    images: np.ndarray
    image_ids: np.ndarray
    image_labels: np.ndarray
    image_splits: np.ndarray
    manifest: dict = field(default_factory=dict)
    fitted: dict = field(default_factory=dict)


def _output_columns(probs: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """pred / max_prob / true_prob / prob_c columns from float32 probabilities ``(..., n, C)``.

    The scalars are the exact float32 outputs; the vector entries are rounded to 1e-6.
    """
    pred = probs.argmax(axis=-1)
    out = {
        "pred": pred,
        "max_prob": np.take_along_axis(probs, pred[..., None], axis=-1)[..., 0],
        "true_prob": np.take_along_axis(probs, np.broadcast_to(labels, probs.shape[:-1])[..., None], axis=-1)[..., 0],
    }
    rounded = np.round(probs.astype(np.float64), _VECTOR_DECIMALS).astype(np.float32)
    for c in range(probs.shape[-1]):
        out[f"prob_{c}"] = rounded[..., c]
    return out


def _pool_iv(names: Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    if names is None:
        return list(known)
    names = list(names)
    if not names or len(set(names)) != len(names) or any(n not in known for n in names):
        raise ValueError(f"`{what}` must be distinct names from {list(known)}; got {names!r}.")
    return names


def build_demo_pool(
    source=FASHION_MNIST_DIR,
    *,
    seed=0,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> DemoPool:
    """Train the pool and record every model on every held-out variant.

    Parameters
    ----------
    source : path-like, default: :data:`FASHION_MNIST_DIR`
        The Fashion-MNIST folder (:func:`fashion_mnist`).
    seed : int, default=0
        The one seed everything derives from.
    models : sequence of str, optional
        Names from :data:`MODEL_SPECS` to build (default: all). Each model's random stream is
        fixed by its position in :data:`MODEL_SPECS`, so a subset reproduces the full pool's
        rows for those models exactly (on one machine: training is not bit-reproducible across
        CPU instruction sets, which is why the fitted models ship with the pool).
    conditions : sequence of str, optional
        ``condition`` names of :func:`demo_conditions` to record (default: all). Each
        condition's random stream is fixed by its position there, so a subset reproduces the
        full pool's rows exactly.
    progress : callable, optional
        Called with a short message after each step (the script prints them).

    Returns
    -------
    DemoPool
        With ``fitted`` holding the trained models (:func:`save_demo_pool` writes them).
    """
    model_names = _pool_iv(models, [m.name for m in MODEL_SPECS], "models")
    _pool_iv(conditions, demo_conditions()["condition"].tolist(), "conditions")
    inputs = _pool_inputs(source, seed)
    _, model_rng, _ = as_generator(seed).spawn(3)
    model_seeds = [int(g.integers(2**31 - 1)) for g in model_rng.spawn(len(MODEL_SPECS))]
    say = progress or (lambda message: None)
    fitted = {}
    with _single_threaded_deterministic():
        for index, spec in enumerate(MODEL_SPECS):
            if spec.name in model_names:
                fitted[spec.name] = _train(spec, inputs.x_train, inputs.y_train, model_seeds[index])
                say(f"trained {spec.name}")
    predictors = {name: _predictor(_SPECS_BY_NAME[name], model) for name, model in fitted.items()}
    pool = _record_pool(predictors, inputs, seed=seed, conditions=conditions, say=say)
    return dataclasses.replace(pool, fitted=fitted)


def reevaluate_demo_pool(
    directory=DEFAULT_DIR,
    *,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> DemoPool:
    """Record the **shipped** models again on the regenerated inputs, without training.

    The inputs are the shipped held-out images (``images.npz``, checked against the manifest's
    digest), so Fashion-MNIST itself is not needed. Images, splits, record ids and every
    condition's inputs are reproducible on any machine; model outputs then differ from the shipped ones only by floating-point kernel noise. This is
    how the shipped pool is checked elsewhere (``tests/imaging/test_demo_pool.py``).

    Parameters
    ----------
    directory : path-like, default: the shipped pool
        A folder written by :func:`save_demo_pool` (its ``manifest.json`` gives the seed).
    models, conditions : sequence of str, optional
        Subsets, as in :func:`build_demo_pool`.
    progress : callable, optional

    Returns
    -------
    DemoPool
        ``fitted`` is empty.
    """
    manifest = json.loads((Path(directory) / _FILES["manifest"]).read_text())
    predictors = load_demo_models(directory, models=models)
    with np.load(Path(directory) / _FILES["images"], allow_pickle=False) as npz:
        inputs = _PoolInputs(
            None,
            None,
            npz["images"],
            npz["true_label"].astype(np.int64),
            npz["record_id"].astype(np.int64),
            npz["split"].astype(str),
        )
    if _digest(inputs.held_images) != manifest["images_sha256"]:
        raise ValueError(
            f"{Path(directory) / _FILES['images']}: the images do not match the manifest's "
            "images_sha256; the pool folder is corrupt or mixed from two builds."
        )
    with _single_threaded_deterministic():
        return _record_pool(
            predictors, inputs, seed=manifest["seed"], conditions=conditions, say=progress or (lambda message: None)
        )


@dataclass(frozen=True)
class _PoolInputs:
    x_train: np.ndarray | None  # (n_train, 28, 28) float32 in [0, 1]; None when only re-evaluating
    y_train: np.ndarray | None
    held_images: np.ndarray  # (n_held, 28, 28) uint8
    held_labels: np.ndarray
    held_ids: np.ndarray
    held_split: np.ndarray


def _pool_inputs(source, seed) -> _PoolInputs:
    split_rng, _, _ = as_generator(seed).spawn(3)
    data = fashion_mnist(source)
    train, held, split = pool_indices(data["train_labels"], data["test_labels"], seed=split_rng)
    return _PoolInputs(
        data["train_images"][train].astype(np.float32) / 255.0,
        data["train_labels"][train],
        data["test_images"][held],
        data["test_labels"][held],
        held,
        split,
    )


def _record_pool(
    predictors: Mapping[str, Predictor],
    inputs: _PoolInputs,
    *,
    seed,
    conditions: Sequence[str] | None,
    say: Callable[[str], None],
) -> DemoPool:
    """Every predictor on the clean held-out images and on every chosen condition's variants."""
    table = demo_conditions()
    condition_names = _pool_iv(conditions, table["condition"].tolist(), "conditions")
    held_images, held_labels, held_ids, held_split = (
        inputs.held_images,
        inputs.held_labels,
        inputs.held_ids,
        inputs.held_split,
    )
    x_held = held_images.astype(np.float32) / 255.0

    chosen = np.flatnonzero(table["condition"].isin(condition_names).to_numpy())
    streams = _condition_streams(seed)
    cond = table.iloc[chosen].reset_index(drop=True)
    variants = np.stack([_perturb(x_held, table.iloc[j], streams[j]).astype(np.float32) for j in chosen])
    say(f"perturbed {len(held_ids)} held-out images under {len(cond)} conditions")
    # What every model saw, as 8-bit images: equal on every machine (checked by the tests).
    digests = [_digest(np.rint(v * 255.0).astype(np.uint8)) for v in variants]
    cond = cond.assign(inputs_sha256=digests)

    n_var, n_img = variants.shape[:2]
    stacked = np.concatenate([x_held[None], variants]).reshape(-1, IMAGE_SIZE, IMAGE_SIZE)
    var_source = np.repeat(cond["source"].to_numpy(), n_img)
    var_kind = np.repeat(cond["kind"].to_numpy(), n_img)
    var_name = np.repeat(cond["condition"].to_numpy(), n_img)
    var_id = np.tile(held_ids, n_var)
    var_label = np.tile(held_labels, n_var)
    var_split = np.tile(held_split, n_var)
    # Natural transforms only feed TTA, which is computed for evaluation images.
    probe_rows = (var_kind == "corruption") | ((var_kind == "transform") & (var_split == "eval"))
    paired_rows = var_source != "transform"

    clean_parts, probe_parts, record_parts, model_rows = [], [], [], []
    for spec in MODEL_SPECS:
        if spec.name not in predictors:
            continue
        probs = predictors[spec.name](stacked).reshape(n_var + 1, n_img, N_CLASSES)
        cols = _output_columns(probs, held_labels)
        clean = pd.DataFrame(
            {
                "model": spec.name,
                "group": spec.group,
                "record_id": held_ids,
                "true_label": held_labels,
                "split": held_split,
                **{k: v[0] for k, v in cols.items()},
            }
        )
        clean_parts.append(clean)
        correct = clean["pred"].to_numpy() == held_labels
        model_rows.append(
            (
                spec.name,
                spec.group,
                spec.family,
                spec.description,
                correct[held_split == "dev"].mean(),
                correct[held_split == "eval"].mean(),
            )
        )

        pert = {k: v[1:].reshape(-1) for k, v in cols.items()}
        # A3 needs vectors only on scored images (clean-correct evaluation images).
        scored = np.tile(correct & (held_split == "eval"), n_var)
        vectors = np.column_stack([pert[c] for c in _PROB_COLUMNS])
        vectors[~scored] = np.nan
        probe = pd.DataFrame(
            {
                "model": spec.name,
                "record_id": var_id,
                "probe": var_name,
                "kind": var_kind,
                "true_label": var_label,
                "pred": pert["pred"],
                "max_prob": pert["max_prob"],
                "true_prob": pert["true_prob"],
            }
        )
        probe[_PROB_COLUMNS] = vectors
        probe_parts.append(probe.loc[probe_rows])

        clean_rep = {k: np.tile(clean[k].to_numpy(), n_var) for k in ("pred", "max_prob", "true_prob")}
        record_parts.append(
            pd.DataFrame(
                {
                    "model": spec.name,
                    "condition": var_name,
                    "source": var_source,
                    "record_id": var_id,
                    "true_label": var_label,
                    "clean_pred": clean_rep["pred"],
                    "clean_max_prob": clean_rep["max_prob"],
                    "clean_true_prob": clean_rep["true_prob"],
                    "pert_pred": pert["pred"],
                    "pert_max_prob": pert["max_prob"],
                    "pert_true_prob": pert["true_prob"],
                    "split": var_split,
                    "group": spec.group,
                }
            ).loc[paired_rows]
        )
        say(f"recorded {spec.name} (clean eval accuracy {model_rows[-1][5]:.3f})")

    records = pd.concat(record_parts, ignore_index=True)
    dev = records[records["split"] == "dev"]
    dev_acc = (
        dev.assign(ok=dev["pert_pred"] == dev["true_label"])
        .groupby(["condition", "model"], sort=False)["ok"]
        .mean()
        .groupby(level="condition", sort=False)
        .mean()
    )
    cond = cond.assign(dev_accuracy=cond["condition"].map(dev_acc))
    manifest = {
        "seed": int(seed),
        "generator": "core.imaging.demo.build_demo_pool (scripts/make_demo_pool.py)",
        "dataset": (
            f"Fashion-MNIST (Debian dataset-fashion-mnist): models trained on {N_TRAIN_PER_CLASS} "
            "training images per class; record_id = index in the 10,000 test images"
        ),
        "simulated": "Conditions with source 'simulated-recapture' are simulations of showing on a "
        "screen or printing, then photographing (core.imaging.recapture_sim.simulate), not "
        "physical recaptures.",
        "probability_vectors": "prob_0 .. prob_9 rounded to 1e-6; in probes only for clean-correct "
        "evaluation images (NaN elsewhere). pred, max_prob, true_prob and the "
        "records' probabilities are exact float32 model outputs.",
        "reproducibility": "Images, splits, record ids and every condition's inputs "
        "(conditions.inputs_sha256, images_sha256) are identical on any machine. "
        "Model outputs are reproducible from the shipped models (models/) up to "
        "floating-point kernel noise; re-training reproduces them exactly only "
        "on the CPU and library versions below.",
        "models": [m.name for m in MODEL_SPECS if m.name in predictors],
        "conditions": cond["condition"].tolist(),
        "n_heldout": int(n_img),
        "n_dev": int((held_split == "dev").sum()),
        "n_eval": int((held_split == "eval").sum()),
        "images_sha256": _digest(held_images),
        "versions": _versions(),
        "machine": _machine(),
    }
    return DemoPool(
        records=records,
        probes=pd.concat(probe_parts, ignore_index=True),
        clean=pd.concat(clean_parts, ignore_index=True),
        models=pd.DataFrame(
            model_rows, columns=["model", "group", "family", "description", "dev_accuracy", "eval_accuracy"]
        ),
        conditions=cond,
        images=held_images,
        image_ids=held_ids,
        image_labels=held_labels,
        image_splits=held_split,
        manifest=manifest,
    )


def _digest(images: np.ndarray) -> str:
    """SHA-256 of a uint8 image stack (C order)."""
    return hashlib.sha256(np.ascontiguousarray(images, dtype=np.uint8).tobytes()).hexdigest()


def _machine() -> dict[str, object]:
    """Which kernels wrote the outputs: they decide the last float32 bits."""
    import torch
    from numpy._core._multiarray_umath import __cpu_features__

    return {
        "platform": platform.machine(),
        "cpu_levels": sorted(k for k, on in __cpu_features__.items() if on and k.startswith("X86_V")),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def _versions() -> dict[str, str]:
    import PIL
    import scipy
    import sklearn
    import torch

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "torch": torch.__version__,
        "pillow": PIL.__version__,
        "pandas": pd.__version__,
    }


# ------------------------------------------------------------------------------------------
# storage
# ------------------------------------------------------------------------------------------
def _expand(df: pd.DataFrame) -> pd.DataFrame:
    """The in-memory dtypes callers expect: str, int64, float64 (exact widening of float32).

    Pools are written in these dtypes, so a shipped table comes back as Parquet gives it, no
    column converted or copied: converting the records' 540,000 rows from dictionary-encoded
    strings and int8 / float32 took 0.3-0.6 s of the Paired bounds page's first visit. Tables of
    pools written before (categorical strings, int8 / int16 ids, float32 probabilities) are
    converted column by column.
    """
    changed = {}
    for col in df.columns:
        dtype = df[col].dtype
        codes = df[col].cat.codes.to_numpy() if isinstance(dtype, pd.CategoricalDtype) else None
        if codes is not None and (codes >= 0).all():
            # The categories converted once and gathered: the same str column as astype(str),
            # which converts every row.
            changed[col] = pd.Series(df[col].cat.categories.astype(str).take(codes), index=df.index, name=col)
        elif codes is not None or (pd.api.types.is_string_dtype(dtype) and dtype != "str"):
            changed[col] = df[col].astype(str)
        elif isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.integer) and dtype != np.int64:
            changed[col] = df[col].astype(np.int64)
        elif dtype == np.float32:
            changed[col] = df[col].astype(np.float64)
    if not changed:
        return df
    out = df.copy(deep=False)
    for col, values in changed.items():
        out[col] = values
    return out


def save_demo_pool(pool: DemoPool, directory) -> dict[str, Path]:
    """Write ``pool`` as compressed Parquet (zstd) + NPZ + ``manifest.json`` under ``directory``.

    Tables are stored in the dtypes :func:`load_demo_pool` returns (str, int64, float64: the
    float32 probabilities widened exactly), so reading them converts nothing; Parquet's
    dictionary encoding and zstd keep the files as small as the former categorical / int8 /
    float32 tables. Fitted
    models in ``pool.fitted`` go to ``models/`` (:func:`save_demo_models`). The manifest lists
    every file with its size, and its ``format`` is the pool's version
    (:data:`core.formats.DEMO_POOL`; a pool without one, as the shipped one, is version 1).

    Returns
    -------
    dict
        File role -> path written.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {role: directory / name for role, name in _FILES.items()}
    # Every file through the one atomic writer; the manifest last, so a pool whose manifest
    # lists a file's size was written completely.
    for role in ("records", "probes", "clean", "models", "conditions"):
        with atomic_path(paths[role]) as tmp:
            _expand(getattr(pool, role)).to_parquet(
                tmp, engine="pyarrow", compression="zstd", compression_level=19, index=False
            )
    buf = io.BytesIO()
    np.savez_compressed(
        buf, images=pool.images, record_id=pool.image_ids, true_label=pool.image_labels, split=pool.image_splits
    )
    atomic_write_bytes(paths["images"], buf.getvalue())
    model_paths = save_demo_models(pool.fitted, directory)
    manifest = {**dict(pool.manifest), "format": DEMO_POOL.tag}
    manifest["files"] = {
        role: {"name": path.name, "bytes": path.stat().st_size} for role, path in paths.items() if role != "manifest"
    }
    manifest["model_files"] = {
        name: {"name": f"{_MODELS_DIR}/{path.name}", "bytes": path.stat().st_size} for name, path in model_paths.items()
    }
    atomic_write_text(paths["manifest"], json.dumps(manifest, indent=2) + "\n")
    paths.update({f"model:{name}": path for name, path in model_paths.items()})
    return paths


def _require(directory: Path, roles) -> None:
    """Raise ``FileNotFoundError`` naming every file of ``roles`` missing from the pool in ``directory``,
    and :class:`core.formats.NewerFormatError` when a newer version of the tool wrote the pool."""
    missing = [_FILES[role] for role in roles if not (directory / _FILES[role]).is_file()]
    if missing:
        raise FileNotFoundError(
            f"demo pool in {directory} is incomplete: missing {', '.join(map(repr, missing))}; "
            "regenerate it with `python scripts/make_demo_pool.py`."
        )
    if (directory / _FILES["manifest"]).is_file():
        _pool_manifest(directory)


def _pool_manifest(directory: Path) -> dict:
    """The pool's ``manifest.json``, its format checked (untagged: version 1, the shipped pool)."""
    manifest = json.loads((directory / _FILES["manifest"]).read_text())
    tag = manifest.get("format") if isinstance(manifest, dict) else None
    DEMO_POOL.check(tag, where=str(directory), missing=1)
    return manifest


def load_demo_records(directory=DEFAULT_DIR) -> pd.DataFrame:
    """Only the paired records of a pool written by :func:`save_demo_pool`: ``DemoPool.records``.

    The same frame :func:`load_demo_pool` reads, for callers that show the records alone (the
    Paired bounds page): the pool's probe outputs, 0.8 s of its 1.1 s load, are not read.
    """
    _require(Path(directory), ["records"])
    return _expand(pd.read_parquet(Path(directory) / _FILES["records"]))


def load_demo_pool(directory=DEFAULT_DIR, *, records: pd.DataFrame | None = None) -> DemoPool:
    """Read a pool written by :func:`save_demo_pool` (default: the shipped one).

    Strings come back as ``str``, integers as int64, probabilities as float64 (exact
    widening of the stored float32).

    Parameters
    ----------
    directory : path-like
    records : DataFrame, optional
        The pool's records as :func:`load_demo_records` read them from ``directory``; taken
        as they are, not read again (a server that showed the records first keeps one copy).
    """
    directory = Path(directory)
    _require(directory, _FILES)
    tables = {
        role: _expand(pd.read_parquet(directory / _FILES[role]))
        for role in ("records", "probes", "clean", "models", "conditions")
        if not (role == "records" and records is not None)
    }
    if records is not None:
        tables["records"] = records
    shown = load_demo_images(directory)
    return DemoPool(
        images=shown.images,
        image_ids=shown.image_ids,
        image_labels=shown.image_labels,
        image_splits=shown.image_splits,
        manifest=shown.manifest,
        **tables,
    )


def load_demo_images(directory=DEFAULT_DIR) -> DemoImages:
    """The images and manifest of a pool written by :func:`save_demo_pool`, without its tables
    (a twentieth of the whole pool's load): the same arrays and dict :func:`load_demo_pool` holds."""
    directory = Path(directory)
    _require(directory, ["images", "manifest"])
    with np.load(directory / _FILES["images"], allow_pickle=False) as npz:
        images, ids, labels, splits = (
            npz["images"],
            npz["record_id"].astype(np.int64),
            npz["true_label"].astype(np.int64),
            npz["split"].astype(str),
        )
    manifest = _pool_manifest(directory)
    return DemoImages(images=images, image_ids=ids, image_labels=labels, image_splits=splits, manifest=manifest)


#: The probe-output columns of one image that the Recapture queue's inspector shows.
PROBE_VIEW_COLUMNS = ("model", "record_id", "probe", "kind", "true_label", "pred", "true_prob")


def load_demo_probes_of(model: str, record_id: int, directory=DEFAULT_DIR) -> pd.DataFrame:
    """The probe outputs of one image of one model, read alone from a pool written by :func:`save_demo_pool`.

    The rows of ``load_demo_pool(directory).probes`` with that ``model`` and ``record_id``, in
    order, columns :data:`PROBE_VIEW_COLUMNS`, index reset. Read with Parquet filters: the
    other 450,000 rows of the shipped pool are neither converted nor kept (0.06 s against
    0.5-1 s for the whole table).
    """
    _require(Path(directory), ["probes"])
    rows = pd.read_parquet(
        Path(directory) / _FILES["probes"],
        columns=list(PROBE_VIEW_COLUMNS),
        filters=[("model", "==", str(model)), ("record_id", "==", int(record_id))],
    )
    return _expand(rows).reset_index(drop=True)
