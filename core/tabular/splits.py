"""Deterministic stratified splits and subsamples of a :class:`~core.tabular.dataset.Dataset`.

Per-class quotas by largest remainder, rows drawn by one seeded permutation: the same dataset
and seed always give the same parts, whatever the platform.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from core._rng import as_generator
from core.tabular.dataset import Dataset, DatasetSplit
from core.validation import check_seed, check_share

__all__ = ["official_split", "split_dataset", "subsample_dataset"]


def split_dataset(
    dataset: Dataset,
    *,
    seed: int,
    val_size: float = 0.2,
    test_size: float = 0.2,
) -> DatasetSplit:
    """Deterministic stratified train / validation / test split.

    Per-class quotas follow the overall shares by largest remainder (so the split sizes are
    ``round(size * n)`` whenever every class is large), and every class gets at least one
    row in every part. Rows are assigned by one seeded permutation, so the same dataset and
    seed always give the same split.

    Parameters
    ----------
    dataset : Dataset
    seed : int
        Non-negative; stored with the split.
    val_size, test_size : float, default=0.2
        Shares of rows, each in (0, 1), summing to less than 1.

    Returns
    -------
    DatasetSplit

    Raises
    ------
    ValueError
        Bad shares, or a class with fewer than 3 rows (it cannot appear in all three parts).

    Examples
    --------
    >>> from core.tabular.bundled import load_dataset
    >>> ds = load_dataset("breast_cancer")
    >>> s = split_dataset(ds, seed=0)
    >>> len(s.train_index), len(s.val_index), len(s.test_index)
    (341, 114, 114)
    """
    val_size, test_size = check_share(val_size, "val_size"), check_share(test_size, "test_size")
    if val_size + test_size >= 1:
        raise ValueError(f"`val_size + test_size` must be below 1; got {val_size} + {test_size}.")
    seed = check_seed(seed)  # stored with the split
    rng = as_generator(seed)
    codes = dataset.y
    counts = np.bincount(codes, minlength=dataset.n_classes)
    small = np.flatnonzero(counts < 3)
    if small.size:
        c = int(small[0])
        raise ValueError(
            f"Dataset {dataset.name!r}: class {dataset.classes[c]!r} has {counts[c]} rows; a stratified "
            "train/validation/test split needs at least 3 per class."
        )
    n = len(codes)
    test = _allocate(counts, _round_half_up(test_size * n))
    val = _allocate(counts, _round_half_up(val_size * n))
    test, val = np.maximum(test, 1), np.maximum(val, 1)
    # Tiny classes can be over-allocated after the bumps; give rows back to training.
    over = test + val - (counts - 1)
    while (over > 0).any():
        take_val = (over > 0) & (val >= test) & (val > 1)
        take_test = (over > 0) & ~take_val
        val -= take_val
        test -= take_test
        over = test + val - (counts - 1)
    part = _assign_parts(codes, np.stack([test, val]), rng)
    return DatasetSplit(
        dataset=dataset,
        seed=seed,
        val_size=float(val_size),
        test_size=float(test_size),
        train_index=np.flatnonzero(part == 2),
        val_index=np.flatnonzero(part == 1),
        test_index=np.flatnonzero(part == 0),
    )


def official_split(dataset: Dataset, *, seed: int, val_size: float = 0.2) -> DatasetSplit:
    """The source's own train / test split, with a stratified validation part carved from train.

    The test part is every row of ``dataset.official_test`` still present in the frame (after
    a subsample, only the kept ones); ``val_size`` of the remaining rows (per-class quotas by
    largest remainder, as in :func:`split_dataset`) become validation, the rest training.

    Parameters
    ----------
    dataset : Dataset
        With ``official_test`` set (``load_dataset("adult")``).
    seed : int
        Non-negative; draws the validation rows.
    val_size : float, default=0.2
        Share of the official training rows used for validation, in (0, 1).

    Returns
    -------
    DatasetSplit
        ``test_size`` holds the realised test share.

    Raises
    ------
    ValueError
        No official split, bad ``val_size`` or ``seed``, or a class with fewer than 2 rows in
        the training part or none in the test part.

    Examples
    --------
    >>> from core.tabular.bundled import load_dataset
    >>> s = official_split(load_dataset("adult"), seed=0)
    >>> len(s.train_index), len(s.val_index), len(s.test_index)
    (26049, 6512, 16281)
    """
    if dataset.official_test is None:
        raise ValueError(f"Dataset {dataset.name!r} has no official train/test split; use split_dataset.")
    val_size = check_share(val_size, "val_size")
    seed = check_seed(seed)  # stored with the split
    codes = dataset.y
    is_test = dataset.frame.index.isin(dataset.official_test)
    train_codes = codes[~is_test]
    counts = np.bincount(train_codes, minlength=dataset.n_classes)
    test_counts = np.bincount(codes[is_test], minlength=dataset.n_classes)
    for c in range(dataset.n_classes):
        if counts[c] < 2 or test_counts[c] < 1:
            raise ValueError(
                f"Dataset {dataset.name!r}: class {dataset.classes[c]!r} has {counts[c]} official training and "
                f"{test_counts[c]} official test rows; needs at least 2 and 1."
            )
    val = np.clip(_allocate(counts, _round_half_up(val_size * len(train_codes))), 1, counts - 1)
    part = _assign_parts(train_codes, val[None, :], as_generator(seed))  # 0 = validation, 1 = training
    train_pos = np.flatnonzero(~is_test)
    return DatasetSplit(
        dataset=dataset,
        seed=seed,
        val_size=float(val_size),
        test_size=float(is_test.mean()),
        train_index=train_pos[part == 1],
        val_index=train_pos[part == 0],
        test_index=np.flatnonzero(is_test),
    )


def subsample_dataset(dataset: Dataset, max_rows: int, *, seed: int | np.random.Generator) -> Dataset:
    """Stratified random subsample of at most ``max_rows`` rows (row order and ids kept).

    Class quotas follow the class shares by largest remainder; every class keeps at least
    ``min(3, its count)`` rows so that the subsample can still be split. A dataset that
    already has at most ``max_rows`` rows is returned unchanged.

    Parameters
    ----------
    dataset : Dataset
    max_rows : int
        At least ``3 * n_classes``.
    seed : int or numpy.random.Generator
    """
    n = len(dataset.frame)
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 3 * dataset.n_classes:
        raise ValueError(
            f"`max_rows` must be an int of at least 3 per class ({3 * dataset.n_classes}); got {max_rows!r}."
        )
    if n <= max_rows:
        return dataset
    codes = dataset.y
    counts = np.bincount(codes, minlength=dataset.n_classes)
    quota = np.maximum(_allocate(counts, int(max_rows)), np.minimum(counts, 3))
    keep = np.flatnonzero(_assign_parts(codes, quota[None, :], as_generator(seed)) == 0)
    note = f"stratified subsample of {len(keep):,} of {n:,} rows"
    return replace(dataset, frame=dataset.frame.iloc[keep], notes=dataset.notes + (note,))


def _round_half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


def _allocate(counts: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` over classes proportionally to ``counts`` (largest remainder method).

    Ties in the remainders go to the lower class index.
    """
    exact = counts * (total / counts.sum())
    base = np.floor(exact).astype(np.int64)
    short = total - int(base.sum())
    order = np.lexsort((np.arange(len(counts)), -(exact - base)))
    base[order[:short]] += 1
    return base


def _assign_parts(codes: np.ndarray, quotas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Label each row with a part: part ``j`` takes ``quotas[j, c]`` random rows of class ``c``.

    Rows beyond all quotas get label ``len(quotas)``. One permutation, then a stable sort by
    class, gives a uniformly random order within every class without a per-class loop.
    """
    n = len(codes)
    perm = rng.permutation(n)
    order = perm[np.argsort(codes[perm], kind="stable")]
    counts = np.bincount(codes, minlength=quotas.shape[1])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(n) - starts[codes[order]]
    bounds = np.cumsum(quotas, axis=0)[:, codes[order]]  # (parts, n): cumulative quota per row's class
    part_sorted = (rank[None, :] >= bounds).sum(axis=0)
    part = np.empty(n, dtype=np.int64)
    part[order] = part_sorted
    return part
