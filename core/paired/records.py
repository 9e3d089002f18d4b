"""Paired-evaluation records: schema, loading and validation (SPEC B.1).

Two forms are accepted.

**Paired** (long format, one row per clean/perturbed pair; columns in ``docs/DEVELOPING.md``):
``model, condition, source`` name the *cell*; ``record_id`` is unique within a cell;
``true_label``; clean side ``clean_pred, clean_max_prob, clean_true_prob`` (ŷ, S, M);
perturbed side ``pert_pred, pert_max_prob, pert_true_prob`` (ŷ′, S′, M′); optional ``split``
(``dev`` / ``eval``) and ``group``. Other columns are kept untouched.

**Unpaired** (one cell, the situation the bounds are for): a clean table and a perturbed table,
each ``record_id, true_label, pred, max_prob, true_prob``, with equal counts per class and no
pairing, optionally a per-class counts table ``true_label, k`` (level Ik) or
``true_label, h, r, s, w, k`` (level I5). Counts that no bijection can realise are rejected with
the class and the violated constraint.

Files are read by :func:`core.validation.read_table`, the one reader of a user's table. Every
check raises :class:`ValueError` naming the file (or table), the row (1-based data row; for CSV
also the file line) and the column, the bad value and what was expected. Validation is
vectorised; only the first offending row is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from core.formats import PROBE_OUTPUTS, check_table_file
from core.validation import TableOrigin, check_cells, read_table

__all__ = [
    "CELL_COLUMNS",
    "COUNT_COLUMNS",
    "PAIRED_COLUMNS",
    "SIDE_COLUMNS",
    "TableOrigin",
    "UnpairedRecords",
    "load_records",
    "load_unpaired",
    "unpair",
    "validate_records",
    "validate_records_at",
    "validate_unpaired",
]

CELL_COLUMNS = ("model", "condition", "source")
PAIRED_COLUMNS = (
    *CELL_COLUMNS,
    "record_id",
    "true_label",
    "clean_pred",
    "clean_max_prob",
    "clean_true_prob",
    "pert_pred",
    "pert_max_prob",
    "pert_true_prob",
)
SIDE_COLUMNS = ("record_id", "true_label", "pred", "max_prob", "true_prob")
COUNT_COLUMNS = ("h", "r", "s", "w", "k")
SPLITS = ("dev", "eval")
# Probabilities written by different code paths (float32 vs float64, CSV rounding) may differ
# in the last digits; larger gaps are real inconsistencies.
PROB_TOL = 1e-6


def _show(value) -> str:
    """repr of a cell value as the user wrote it (numpy 2 would print ``np.float64(1.2)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _read(path: str | Path) -> tuple[pd.DataFrame, TableOrigin]:
    # The one table reader (core.validation): the file named as given, rows with their CSV line.
    table = read_table(path)
    # The records.parquet of `probe` carries its format version; a newer one is refused.
    check_table_file(path, PROBE_OUTPUTS, where=str(path))
    return table.frame, table.origin


# ---------------------------------------------------------------------------------------------
# Column-level checks shared by both forms


def _require_columns(frame: pd.DataFrame, needed: Iterable[str], origin: TableOrigin) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{origin.name} must be a pandas DataFrame; got {type(frame).__name__}.")
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{origin.name}: missing column(s) {missing}; it has {list(map(str, frame.columns))}.")
    if frame.empty:
        raise ValueError(f"{origin.name}: has no rows.")


def _no_empty_cells(frame: pd.DataFrame, columns: Iterable[str], origin: TableOrigin) -> None:
    for col in columns:
        values = frame[col]
        empty = values.isna().to_numpy()
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            # Blank strings are empty cells too; test the distinct values only (cheap on big tables).
            uniques = pd.unique(values[~empty])
            blank = [v for v in uniques if isinstance(v, str) and not v.strip()]
            if blank:
                empty = empty | values.isin(blank).to_numpy()
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise ValueError(
                f"{origin.row(i, frame.index[i])}, column {col!r}: empty cell; every record needs a value."
            )


def _as_labels(frame: pd.DataFrame, col: str, origin: TableOrigin, known: np.ndarray | None) -> np.ndarray:
    labels = _as_counts(frame, col, origin, what="a class label")
    if known is not None:
        unknown = ~np.isin(labels, known)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise ValueError(
                f"{origin.row(i, frame.index[i])}, column {col!r}: unknown label {labels[i]}; "
                f"the declared labels are {known.tolist()}."
            )
    return labels


def _as_counts(frame: pd.DataFrame, col: str, origin: TableOrigin, *, what: str) -> np.ndarray:
    return check_cells(frame[col], kind="count", noun=what, where=lambda i: origin.row(i, frame.index[i]))


def _as_probs(frame: pd.DataFrame, col: str, origin: TableOrigin) -> np.ndarray:
    return check_cells(
        frame[col], kind="probability", noun="a probability", where=lambda i: origin.row(i, frame.index[i])
    )


def _check_side(
    frame: pd.DataFrame,
    origin: TableOrigin,
    label: np.ndarray,
    pred_col: str,
    max_col: str,
    true_col: str,
    known: np.ndarray | None,
) -> dict[str, np.ndarray]:
    pred = _as_labels(frame, pred_col, origin, known)
    smax = _as_probs(frame, max_col, origin)
    mtrue = _as_probs(frame, true_col, origin)
    above = mtrue > smax + PROB_TOL
    if above.any():
        i = int(np.flatnonzero(above)[0])
        raise ValueError(
            f"{origin.row(i, frame.index[i])}, column {true_col!r}: true-class probability "
            f"{_show(mtrue[i])} exceeds the maximum probability {max_col}={_show(smax[i])}."
        )
    # A correct prediction's true class *is* the arg-max, so its probability is the maximum.
    mismatch = (pred == label) & (np.abs(mtrue - smax) > PROB_TOL)
    if mismatch.any():
        i = int(np.flatnonzero(mismatch)[0])
        raise ValueError(
            f"{origin.row(i, frame.index[i])}, column {true_col!r}: the prediction {pred_col}={pred[i]} "
            f"is the true label, so the true-class probability ({_show(mtrue[i])}) must equal "
            f"{max_col} ({_show(smax[i])})."
        )
    return {pred_col: pred, max_col: smax, true_col: mtrue}


def _known_labels(labels) -> np.ndarray | None:
    if labels is None:
        return None
    known = np.unique(np.asarray(list(labels)))
    if known.size == 0 or not np.issubdtype(known.dtype, np.integer):
        raise ValueError(f"`labels` must be a non-empty collection of integer class labels; got {labels!r}.")
    return known.astype(np.int64)


def _first_duplicate(keys: pd.DataFrame) -> tuple[int, int] | None:
    """Positions of the first row whose key (all columns) repeats, and of its first repeat."""
    combined = np.zeros(len(keys), dtype=np.int64)
    for col in keys.columns:
        codes, uniques = pd.factorize(keys[col])
        # Re-factorise after each column so the mixed-radix key never overflows.
        combined, _ = pd.factorize(combined * len(uniques) + codes)
    dup = pd.Series(combined).duplicated(keep=False).to_numpy()
    if not dup.any():
        return None
    first = int(np.flatnonzero(dup)[0])
    second = int(np.flatnonzero(combined == combined[first])[1])
    return first, second


# ---------------------------------------------------------------------------------------------
# Paired form


def validate_records(
    records: pd.DataFrame, *, labels: Iterable[int] | None = None, name: str = "`records`"
) -> pd.DataFrame:
    """Check paired records against the schema and return a normalised copy.

    Parameters
    ----------
    records : DataFrame of shape (n_pairs, n_columns)
        One row per clean/perturbed pair with at least the columns of :data:`PAIRED_COLUMNS`.
    labels : iterable of int, optional
        The declared class labels; any true or predicted label outside it is rejected.
        By default any non-negative integer is a label.
    name : str
        How messages refer to the table (a file name when called by :func:`load_records`).

    Returns
    -------
    DataFrame
        Same rows and order; ``model, condition, source, split, group`` as ``str``, labels as
        ``int64``, probabilities as ``float64``; extra columns unchanged.

    Raises
    ------
    ValueError
        Missing columns, empty cells, labels that are not non-negative integers (or not among
        ``labels``), probabilities outside [0, 1], a true-class probability above the maximum
        probability (or different from it when the prediction is correct), a ``split`` other
        than ``dev`` / ``eval``, or a ``record_id`` repeated within a cell. The message names
        the row and column.
    """
    return validate_records_at(records, TableOrigin(name), _known_labels(labels))


def validate_records_at(records: pd.DataFrame, origin: TableOrigin, known: np.ndarray | None) -> pd.DataFrame:
    _require_columns(records, PAIRED_COLUMNS, origin)
    optional = [c for c in ("split", "group") if c in records.columns]
    _no_empty_cells(records, [*PAIRED_COLUMNS, *optional], origin)
    out = records.copy()
    label = _as_labels(records, "true_label", origin, known)
    out["true_label"] = label
    for side in ("clean", "pert"):
        out = out.assign(
            **_check_side(records, origin, label, f"{side}_pred", f"{side}_max_prob", f"{side}_true_prob", known)
        )
    for col in (*CELL_COLUMNS, *optional):
        out[col] = records[col].astype(str)
    if "split" in optional:
        bad = ~out["split"].isin(SPLITS).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{origin.row(i, records.index[i])}, column 'split': {_show(records['split'].iloc[i])} "
                f"is not a split; expected one of {list(SPLITS)}."
            )
    dup = _first_duplicate(out[[*CELL_COLUMNS, "record_id"]].reset_index(drop=True))
    if dup is not None:
        i, j = dup
        cell = ", ".join(f"{c}={out[c].iloc[i]!r}" for c in CELL_COLUMNS)
        rid = _show(records["record_id"].iloc[j])
        raise ValueError(
            f"{origin.row(j, records.index[j])}, column 'record_id': {rid} "
            f"already appears in row {i + 1} of the same cell ({cell}); ids must be unique within a cell."
        )
    return out


def load_records(path: str | Path, *, labels: Iterable[int] | None = None) -> pd.DataFrame:
    """Read paired records from CSV or Parquet and validate them (see :func:`validate_records`).

    Parameters
    ----------
    path : str or Path
        ``.csv`` (optionally compressed) or ``.parquet`` file.
    labels : iterable of int, optional
        Declared class labels.

    Returns
    -------
    DataFrame
        The validated, normalised records.
    """
    frame, origin = _read(path)
    return validate_records_at(frame, origin, _known_labels(labels))


# ---------------------------------------------------------------------------------------------
# Unpaired form


@dataclass(frozen=True)
class UnpairedRecords:
    """One cell's records without their pairing.

    Attributes
    ----------
    clean, perturbed : DataFrame
        Validated tables with columns :data:`SIDE_COLUMNS` (labels ``int64``, probabilities
        ``float64``), equal record counts per class.
    counts : DataFrame or None
        One row per class present in the records, column ``true_label`` plus ``k`` (level Ik)
        or ``h, r, s, w, k`` (level I5), all checked to be realisable; ``None`` at level I0.
    level : {"I0", "Ik", "I5"}
        The highest information level the counts allow.
    """

    clean: pd.DataFrame
    perturbed: pd.DataFrame
    counts: pd.DataFrame | None
    level: Literal["I0", "Ik", "I5"]


def _validate_side_table(frame: pd.DataFrame, origin: TableOrigin, known) -> pd.DataFrame:
    _require_columns(frame, SIDE_COLUMNS, origin)
    _no_empty_cells(frame, SIDE_COLUMNS, origin)
    label = _as_labels(frame, "true_label", origin, known)
    side = _check_side(frame, origin, label, "pred", "max_prob", "true_prob", known)
    out = frame.copy()
    out["true_label"] = label
    out = out.assign(**side)
    dup = _first_duplicate(out[["record_id"]].reset_index(drop=True))
    if dup is not None:
        i, j = dup
        raise ValueError(
            f"{origin.row(j, frame.index[j])}, column 'record_id': {_show(frame['record_id'].iloc[j])} "
            f"already appears in row {i + 1}; ids must be unique."
        )
    return out


def validate_unpaired(
    clean: pd.DataFrame,
    perturbed: pd.DataFrame,
    counts: pd.DataFrame | None = None,
    *,
    labels: Iterable[int] | None = None,
) -> UnpairedRecords:
    """Check an unpaired cell (clean table, perturbed table, optional counts).

    Parameters
    ----------
    clean, perturbed : DataFrame
        Columns :data:`SIDE_COLUMNS`; every class must have as many clean as perturbed records.
    counts : DataFrame, optional
        Per-class counts: ``true_label, k`` or ``true_label, h, r, s, w, k``; one row per class.
    labels : iterable of int, optional
        Declared class labels.

    Returns
    -------
    UnpairedRecords

    Raises
    ------
    ValueError
        Any record-level problem (as :func:`validate_records`), a class present on one side only
        or with different counts on the two sides, a counts table that misses or adds classes,
        or counts that no within-class bijection can realise (naming the class and the violated
        constraint).
    """
    return _validate_unpaired(
        clean,
        perturbed,
        counts,
        TableOrigin("`clean`"),
        TableOrigin("`perturbed`"),
        TableOrigin("`counts`"),
        _known_labels(labels),
    )


def _validate_unpaired(clean, perturbed, counts, o_clean, o_pert, o_counts, known) -> UnpairedRecords:
    clean = _validate_side_table(clean, o_clean, known)
    perturbed = _validate_side_table(perturbed, o_pert, known)
    n_clean = clean["true_label"].value_counts()
    n_pert = perturbed["true_label"].value_counts()
    for only, other, mine, theirs in ((o_clean, o_pert, n_clean, n_pert), (o_pert, o_clean, n_pert, n_clean)):
        lonely = sorted(set(mine.index) - set(theirs.index))
        if lonely:
            label = lonely[0]
            raise ValueError(
                f"class {label} appears only in {only.name} ({int(mine[label])} record(s)), not in "
                f"{other.name}; every class needs its records on both sides."
            )
    for label in sorted(n_clean.index):
        a, b = int(n_clean[label]), int(n_pert[label])
        if a != b:
            raise ValueError(
                f"class {label} has {a} records in {o_clean.name} but {b} in {o_pert.name}; "
                "the two sides of a class must have the same number of records."
            )
    if counts is None:
        return UnpairedRecords(clean, perturbed, None, "I0")
    table, level = _validate_counts(counts, o_counts, clean, perturbed)
    return UnpairedRecords(clean, perturbed, table, level)


def _validate_counts(
    counts: pd.DataFrame, origin: TableOrigin, clean: pd.DataFrame, perturbed: pd.DataFrame
) -> tuple[pd.DataFrame, str]:
    from core.paired._fivestate import flip_endpoint_range

    _require_columns(counts, ("true_label", "k"), origin)
    five = [c for c in COUNT_COLUMNS if c in counts.columns]
    if len(five) not in (1, 5):
        missing = [c for c in COUNT_COLUMNS if c not in counts.columns]
        raise ValueError(
            f"{origin.name}: has {five} but not {missing}; give either 'k' alone (level Ik) "
            "or all of h, r, s, w, k (level I5)."
        )
    level = "I5" if len(five) == 5 else "Ik"
    cols = list(COUNT_COLUMNS) if level == "I5" else ["k"]
    _no_empty_cells(counts, ["true_label", *cols], origin)
    out = pd.DataFrame({"true_label": _as_labels(counts, "true_label", origin, None)})
    for col in cols:
        out[col] = _as_counts(counts, col, origin, what="a count")
    dup = _first_duplicate(out[["true_label"]])
    if dup is not None:
        i, j = dup
        raise ValueError(
            f"{origin.row(j, counts.index[j])}, column 'true_label': class {out['true_label'].iloc[j]} "
            f"already has counts in row {i + 1}."
        )
    present = set(clean["true_label"].unique())
    extra = sorted(set(out["true_label"]) - present)
    if extra:
        raise ValueError(f"{origin.name}: class {extra[0]} has counts but no records.")
    lacking = sorted(present - set(out["true_label"]))
    if lacking:
        raise ValueError(f"{origin.name}: no counts for class {lacking[0]}; give one row per class.")
    for i, row in enumerate(out.itertuples(index=False)):
        y = row.true_label
        cs, ps = clean[clean["true_label"] == y], perturbed[perturbed["true_label"] == y]
        n = len(cs)
        a = int((cs["pred"] == y).sum())
        b = int((ps["pred"] == y).sum())
        where = f"{origin.row(i, counts.index[i])} (class {y}: n={n}, a={a} clean correct, b={b} perturbed correct)"
        k_lo, k_hi = max(0, a + b - n), min(a, b)
        if not k_lo <= row.k <= k_hi:
            raise ValueError(
                f"{where}: k={row.k} is impossible; the correct–correct count must lie in "
                f"[max(0, a+b−n), min(a, b)] = [{k_lo}, {k_hi}]."
            )
        if level == "Ik":
            continue
        for col, expected, rule in (("h", a - row.k, "a − k"), ("r", b - row.k, "b − k")):
            if getattr(row, col) != expected:
                raise ValueError(
                    f"{where}: {col}={getattr(row, col)} contradicts the records; {col} = {rule} = {expected}."
                )
        m = n - a - b + row.k
        if row.s + row.w != m:
            raise ValueError(
                f"{where}: s + w = {row.s + row.w} but the wrong–wrong block has n − a − b + k = {m} pairs."
            )
        cw = cs.loc[cs["pred"] != y, "pred"]
        pw = ps.loc[ps["pred"] != y, "pred"]
        wl = np.union1d(cw.unique(), pw.unique())
        c = cw.value_counts().reindex(wl, fill_value=0).to_numpy()
        d = pw.value_counts().reindex(wl, fill_value=0).to_numpy()
        if flip_endpoint_range(c, d, np.zeros_like(d), s=int(row.s), w=int(row.w)) is None:
            same_max = int(np.minimum(c, d).sum())
            raise ValueError(
                f"{where}: no bijection has s={row.s} persistent and w={row.w} changed errors; the "
                f"wrong predicted labels allow at most {same_max} same-label pairs and not every "
                "split below that is attainable."
            )
    return out, level


def load_unpaired(
    clean_path: str | Path,
    perturbed_path: str | Path,
    counts_path: str | Path | None = None,
    *,
    labels: Iterable[int] | None = None,
) -> UnpairedRecords:
    """Read and validate an unpaired cell from CSV / Parquet files (see :func:`validate_unpaired`)."""
    clean, o_clean = _read(clean_path)
    perturbed, o_pert = _read(perturbed_path)
    counts, o_counts = (None, TableOrigin("counts")) if counts_path is None else _read(counts_path)
    return _validate_unpaired(clean, perturbed, counts, o_clean, o_pert, o_counts, _known_labels(labels))


def unpair(records: pd.DataFrame, *, level: Literal["I0", "Ik", "I5"] = "I5") -> UnpairedRecords:
    """Forget the pairing of one cell, keeping the observed counts up to ``level``.

    Parameters
    ----------
    records : DataFrame
        Validated paired records of a single cell.
    level : {"I0", "Ik", "I5"}
        Which observed counts to keep: none, ``k`` per class, or all five per class.

    Returns
    -------
    UnpairedRecords
        Both sides in their original row order (the pairing is *not* hidden by shuffling; it
        is simply no longer used).
    """
    if level not in ("I0", "Ik", "I5"):
        raise ValueError(f"`level` must be one of ['I0', 'Ik', 'I5']; got {level!r}.")
    records = validate_records(records)
    if records[list(CELL_COLUMNS)].drop_duplicates().shape[0] != 1:
        raise ValueError("`records` must hold a single cell (one model × condition × source) to be unpaired.")
    side = {}
    for prefix, name in (("clean", "clean"), ("pert", "perturbed")):
        side[name] = pd.DataFrame(
            {
                "record_id": records["record_id"].to_numpy(),
                "true_label": records["true_label"].to_numpy(),
                "pred": records[f"{prefix}_pred"].to_numpy(),
                "max_prob": records[f"{prefix}_max_prob"].to_numpy(),
                "true_prob": records[f"{prefix}_true_prob"].to_numpy(),
            }
        )
    if level == "I0":
        return UnpairedRecords(side["clean"], side["perturbed"], None, "I0")
    y = records["true_label"].to_numpy()
    cc = records["clean_pred"].to_numpy() == y
    pc = records["pert_pred"].to_numpy() == y
    same = records["clean_pred"].to_numpy() == records["pert_pred"].to_numpy()
    states = pd.DataFrame(
        {"true_label": y, "h": cc & ~pc, "r": ~cc & pc, "s": ~cc & ~pc & same, "w": ~cc & ~pc & ~same, "k": cc & pc}
    )
    counts = states.groupby("true_label", sort=True).sum().astype(np.int64).reset_index()
    if level == "Ik":
        counts = counts[["true_label", "k"]]
    return UnpairedRecords(side["clean"], side["perturbed"], counts, level)
