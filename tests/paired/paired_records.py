"""Shared paired-record builders for the tests (the paired maths and CLI tests, the bad-input corpus)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.paired.records import CELL_COLUMNS, PAIRED_COLUMNS

#: A record's columns within one cell: the order of the row tuples :func:`cell` takes.
RECORD_COLUMNS = PAIRED_COLUMNS[len(CELL_COLUMNS) :]


def cell(rows, *, model: str = "m", condition: str = "c", source: str = "s") -> pd.DataFrame:
    """The paired records of one cell from row tuples in :data:`RECORD_COLUMNS` order."""
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS)).assign(model=model, condition=condition, source=source)


def cell_from_arrays(
    true_label,
    clean_pred,
    clean_max_prob,
    clean_true_prob,
    pert_pred,
    pert_max_prob,
    pert_true_prob,
    *,
    model="m",
    condition="c",
    source="s",
) -> pd.DataFrame:
    """The paired records of one cell from one array (or scalar) per record column; ids 0..n-1."""
    values = (true_label, clean_pred, clean_max_prob, clean_true_prob, pert_pred, pert_max_prob, pert_true_prob)
    return pd.DataFrame(
        {
            "model": model,
            "condition": condition,
            "source": source,
            "record_id": np.arange(len(true_label)),
            **dict(zip(RECORD_COLUMNS[1:], values)),
        }
    )


def records(n: int = 30, seed: int = 0) -> pd.DataFrame:
    """Legal paired records: 2 models x 2 conditions, 3 classes, dev/eval split."""
    rng = np.random.default_rng(seed)
    parts = []
    y = rng.integers(0, 3, n)
    cp = np.where(rng.random(n) < 0.8, y, (y + 1) % 3)
    cs = np.round(rng.uniform(0.4, 1, n), 2)
    for model in ("cnn", "vit"):
        for condition, source in (("blur", "synthetic"), ("print", "recapture")):
            pp = np.where(rng.random(n) < 0.6, y, (y + 1 + rng.integers(0, 2, n)) % 3)
            ps = np.round(rng.uniform(0.4, 1, n), 2)
            parts.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "condition": condition,
                        "source": source,
                        "record_id": np.arange(n),
                        "true_label": y,
                        "clean_pred": cp,
                        "clean_max_prob": cs,
                        "clean_true_prob": np.where(cp == y, cs, np.round(cs / 3, 3)),
                        "pert_pred": pp,
                        "pert_max_prob": ps,
                        "pert_true_prob": np.where(pp == y, ps, np.round(ps / 3, 3)),
                        "split": np.where(np.arange(n) % 3 == 0, "dev", "eval"),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)
