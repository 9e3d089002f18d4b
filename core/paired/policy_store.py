"""The shipped precomputation of every demo cell's policy report (SPEC B.3).

The Paired bounds page compares the acceptance policies of the selected cell with
``evaluate_policies(cell, lambdas=LAMBDAS)`` (:func:`core.views.bounds.cell_policies`), where
``cell`` is every record of one (model, condition, source), development rows included (they
set the cell's thresholds). That takes about a second of CPU per cell, so
``scripts/build_paired_grid.py`` stores the report of every cell of the shipped demo pool in
``assets/paired_demo_policies/``: one Parquet file per table of :class:`PolicyReport`
(``thresholds``, ``costs``, ``differences``, ``selection``; their columns and dtypes differ,
and one file each gives every frame back exactly). :func:`load_precomputed_policies` reads
one cell's rows only when every file's fingerprint (:func:`policy_fingerprint`) matches
exactly: the records' content, the cost weights, the source of the modules that compute a
report, and the numpy / pandas / scipy versions. Anything else (an upload, an edited solver,
other libraries, a missing or damaged file) gets ``None`` and is computed afresh; a test holds
the stored reports equal to a fresh computation.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from core.digests import code_sha256, frame_sha256, read_signature, write_signed_parquet
from core.paired.policies import LAMBDAS, PolicyReport, evaluate_policies
from core.resources import ASSETS_DIR

__all__ = [
    "PRECOMPUTED_POLICIES",
    "load_precomputed_policies",
    "policy_cells",
    "policy_fingerprint",
    "stored_policies_match",
    "write_precomputed_policies",
]

#: The folder of the demo pool's stored policy reports (``scripts/build_paired_grid.py`` writes it).
PRECOMPUTED_POLICIES = ASSETS_DIR / "paired_demo_policies"
_FORMAT = 1
_META_KEY = b"paired_policies_fingerprint"
# The PolicyReport fields, one file each.
_TABLES = ("thresholds", "costs", "differences", "selection")
_CELL = ("model", "condition", "source")
# The modules whose code decides a report's numbers (every project module evaluate_policies
# imports; a test walks the imports): an edit to any of them retires the files. core._rng is
# one of them: the I5 feasible mean of a large class is a seeded estimate.
_CODE = (
    "core.paired.policy_store",
    "core.paired.policies",
    "core.paired.bounds",
    "core.paired._fivestate",
    "core.paired.grouped",
    "core.paired.records",
    "core.paired.states",
    "core._rng",
    "core.constants",
    "core.validation",
)


def policy_cells(records: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The (model, condition, source) cells of the evaluation rows of ``records``, sorted.

    The evaluation rows are those with ``split == "eval"`` when there are any, else all rows:
    the cells the Paired bounds page offers.

    >>> policy_cells(pd.DataFrame({"model": ["b", "a", "a"], "condition": ["fog", "fog", "fog"],
    ...     "source": ["s", "s", "s"], "split": ["eval", "dev", "eval"]}))
    [('a', 'fog', 's'), ('b', 'fog', 's')]
    """
    evaluation = records
    if "split" in records.columns and (records["split"] == "eval").any():
        evaluation = records[records["split"] == "eval"]
    cells = evaluation[list(_CELL)].drop_duplicates()
    return sorted((str(m), str(c), str(s)) for m, c, s in cells.itertuples(index=False))


def policy_fingerprint(
    records: pd.DataFrame, *, lambdas: Sequence[float] = LAMBDAS, records_sha256: str | None = None
) -> dict:
    """What stored reports must match to stand for ``evaluate_policies(cell, lambdas=lambdas)``
    of the cells of ``records``.

    ``records_sha256`` is :func:`core.digests.frame_sha256` of ``records`` when the caller has
    it already (the page digests its records once, not once per cell).

    Returns
    -------
    dict
        ``format``, ``records_sha256`` (every column and row of ``records``, in order, with
        their dtypes), ``lambdas``, ``code_sha256`` (the source of the modules that compute a
        report) and the ``numpy`` / ``pandas`` / ``scipy`` versions.
    """
    import scipy

    return {
        "format": _FORMAT,
        "records_sha256": frame_sha256(records) if records_sha256 is None else records_sha256,
        "lambdas": [float(x) for x in lambdas],
        "code_sha256": code_sha256(_CODE),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
    }


def _cell_records(records: pd.DataFrame, model: str, condition: str, source: str) -> pd.DataFrame:
    """Every record of one cell, selected as the Paired bounds page selects it."""
    return records[(records["model"] == model) & (records["condition"] == condition) & (records["source"] == source)]


def _model_tables(records: pd.DataFrame, cells: list[tuple[str, str, str]], lambdas: list[float]) -> dict:
    """The four tables of the reports of ``cells`` (of one model), cell after cell."""
    parts = {name: [] for name in _TABLES}
    for model, condition, source in cells:
        report = evaluate_policies(_cell_records(records, model, condition, source), lambdas=lambdas)
        for name in _TABLES:
            frame = getattr(report, name)
            if name == "thresholds":
                # The only table without the cell's columns: they are what a read filters on.
                frame = frame.assign(condition=condition, source=source)
            parts[name].append(frame)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}


def write_precomputed_policies(
    records: pd.DataFrame,
    path: str | Path = PRECOMPUTED_POLICIES,
    *,
    lambdas: Sequence[float] = LAMBDAS,
    workers: int = 2,
) -> Path:
    """Compute the policy report of every cell of ``records`` and store it with its fingerprint.

    Parameters
    ----------
    records : DataFrame
        Paired records; one report per cell of :func:`policy_cells`, each computed from all
        the cell's records (development rows included), as the Paired bounds page does.
    path : str or Path
        The folder written: ``thresholds.parquet``, ``costs.parquet``, ``differences.parquet``
        and ``selection.parquet`` (zstd Parquet, never pickle), each written atomically and
        signed in its schema metadata. Rows are in the order of the sorted cells, one row
        group per model.
    lambdas : sequence of float in [0, 1]
        The cost weights of every report.
    workers : int, default=2
        Processes computing the reports, one model at a time each.

    Returns
    -------
    Path
        The folder.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"`workers` must be a positive integer; got {workers!r}.")
    lambdas = [float(x) for x in lambdas]
    fingerprint = policy_fingerprint(records, lambdas=lambdas)
    cells = policy_cells(records)
    if not cells:
        raise ValueError("`records` has no rows: there is no cell to store a policy report of.")
    models = sorted({model for model, _, _ in cells})
    jobs = [
        (records[records["model"] == model], [cell for cell in cells if cell[0] == model], lambdas) for model in models
    ]
    if workers == 1 or len(jobs) == 1:
        results = [_model_tables(*job) for job in jobs]
    else:
        with ProcessPoolExecutor(min(workers, len(jobs))) as pool:
            # map keeps the models' order whatever process finishes first.
            results = list(pool.map(_model_tables, *zip(*jobs)))
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for name in _TABLES:
        frame = pd.concat([tables[name] for tables in results], ignore_index=True)
        # A row group per model (when the models have as many cells): a page's read of one cell
        # skips the other models' groups by their statistics.
        size = max(len(tables[name]) for tables in results)
        write_signed_parquet(frame, path / f"{name}.parquet", key=_META_KEY, signature=fingerprint, row_group_size=size)
    return path


def stored_policies_match(
    records: pd.DataFrame, path: str | Path = PRECOMPUTED_POLICIES, *, records_sha256: str | None = None
) -> bool:
    """Whether every file in ``path`` is signed with the fingerprint of ``records`` here and now.

    False for a missing, unreadable or unsigned file, or one stored for other records, cost
    weights, code or library versions.
    """
    fingerprint = policy_fingerprint(records, records_sha256=records_sha256)
    return all(read_signature(Path(path) / f"{name}.parquet", key=_META_KEY) == fingerprint for name in _TABLES)


def load_precomputed_policies(
    records: pd.DataFrame,
    model: str,
    condition: str,
    source: str,
    path: str | Path = PRECOMPUTED_POLICIES,
    *,
    records_sha256: str | None = None,
) -> PolicyReport | None:
    """The stored report of one cell, or None unless every file's fingerprint matches exactly.

    Equal, frame by frame, to ``evaluate_policies(cell, lambdas=LAMBDAS)`` of the cell's
    records. A missing or unreadable file, other records, an edited solver, other library
    versions or a cell that was not stored all give None (the caller computes the report).
    Only the cell's rows are read. ``records_sha256`` as in :func:`policy_fingerprint`.
    """
    if not stored_policies_match(records, path, records_sha256=records_sha256):
        return None
    where = [("model", "==", model), ("condition", "==", condition), ("source", "==", source)]
    frames = {}
    for name in _TABLES:
        try:
            frame = pd.read_parquet(Path(path) / f"{name}.parquet", filters=where)
        except (OSError, ValueError):
            return None
        if frame.empty:
            return None
        if name == "thresholds":
            frame = frame.drop(columns=["condition", "source"])
        frames[name] = frame.reset_index(drop=True)
    return PolicyReport(**frames)
