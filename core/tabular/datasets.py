"""Tabular classification datasets: the public names, gathered from the modules of each idea.

- :mod:`core.tabular.dataset` — the :class:`Dataset` type, its construction from a raw frame
  (:func:`dataset_from_frame`) and domain blocks (:func:`load_blocks`, :func:`with_blocks`);
- :mod:`core.tabular.bundled` — the offline bundled tables (:func:`load_dataset`,
  :data:`DATASET_NAMES`, :data:`DEFAULT_DATASET`);
- :mod:`core.tabular.user_data` — a user's CSV / Parquet file or upload
  (:func:`load_user_data`, read by :func:`core.validation.read_table`);
- :mod:`core.tabular.splits` — stratified splits and subsamples (:func:`split_dataset`,
  :func:`official_split`, :func:`subsample_dataset`).

Callers (README, pages, the audit) import from here; the modules above hold the code.
"""

from __future__ import annotations

from core.tabular.bundled import DATASET_NAMES, DEFAULT_DATASET, load_dataset
from core.tabular.dataset import (
    MAX_CLASSES,
    UNKNOWN_TOKEN,
    Dataset,
    DatasetSplit,
    dataset_from_frame,
    load_blocks,
    with_blocks,
)
from core.tabular.splits import official_split, split_dataset, subsample_dataset
from core.tabular.user_data import DEFAULT_MAX_BYTES, load_user_data

__all__ = [
    "DATASET_NAMES",
    "DEFAULT_DATASET",
    "DEFAULT_MAX_BYTES",
    "MAX_CLASSES",
    "UNKNOWN_TOKEN",
    "Dataset",
    "DatasetSplit",
    "dataset_from_frame",
    "load_blocks",
    "load_dataset",
    "load_user_data",
    "official_split",
    "split_dataset",
    "subsample_dataset",
    "with_blocks",
]
