"""Five response states, reliability targets and acceptance thresholds (SPEC B.1).

A pair is in one of five states: ``h`` harmful flip (C=1, C′=0), ``r`` correction (0, 1),
``s`` persistent error (0, 0, ŷ = ŷ′), ``w`` changed error (0, 0, ŷ ≠ ŷ′), ``k`` retained
correctness (1, 1). Acceptance is ``Z = 1[S ≥ τ]`` (ties accepted), the same τ on both sides.

Targets under the observed pairing (rates over the N pairs of a cell unless stated):
``H = P(C=1, Z=1, C′=0, Z′=1)`` accepted correct → accepted error (larger = worse);
``L = P(T=k, Z=1, Z′=0)`` correct but no longer accepted (larger = worse);
``E_τ = P(C′=0, Z′=1)`` accepted errors after perturbation (larger = worse);
``dM_k = E[M − M′ | T=k]`` mean drop of the true-class probability on retained-correct pairs
(positive = confidence lost; undefined when no pair is retained);
``ds_s, ds_w = E[S − S′ | T=j]`` the same for the maximum probability within wrong states;
``A = E|S − S′|`` and ``Q = Corr(S, S′)``.

:class:`ClassTable` is the grouped view of records (per cell and true class) that every bound
in :mod:`core.paired.bounds` and :mod:`core.paired.policies` starts from.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.exceptions import UndefinedTargetWarning
from core.paired.grouped import ClassTable
from core.paired.records import CELL_COLUMNS, UnpairedRecords, validate_records
from core.validation import check_tau  # re-exported: the one home of the scalar checks

__all__ = [
    "STATES",
    "ClassTable",
    "UndefinedTargetWarning",
    "check_tau",
    "class_table",
    "coverage_threshold",
    "development_thresholds",
    "five_state_counts",
    "paired_targets",
    "variance_ratios",
    "warn_undefined",
]

STATES = ("h", "r", "s", "w", "k")


def warn_undefined(message: str, *, stacklevel: int = 2) -> None:
    """Warn with :class:`~core.exceptions.UndefinedTargetWarning`.

    ``stacklevel`` as in :func:`warnings.warn`, counted from the function that calls this one
    (2 = its caller): each call site states how deep below the public function it sits.
    """
    warnings.warn(message, UndefinedTargetWarning, stacklevel=stacklevel + 1)


# ---------------------------------------------------------------------------------------------
# Thresholds


def _coverage_iv(coverage) -> float:
    try:
        q = float(coverage)
    except (TypeError, ValueError):
        raise ValueError(f"`coverage` must be a number in (0, 1]; got {coverage!r}.") from None
    if not 0 < q <= 1:
        raise ValueError(f"`coverage` must be in (0, 1]; got {coverage!r}.")
    return q


def coverage_threshold(scores, coverage: float) -> float:
    """Acceptance threshold reaching a target coverage of development scores (ties accepted).

    The threshold is the descending order statistic at rank ``round(q·n)`` (half rounded up,
    at least 1): the lowest score among the top ``q`` share. Accepting ``S ≥ τ`` accepts every
    tie, so the realised coverage is at least ``q``.

    Parameters
    ----------
    scores : array-like of shape (n_dev,)
        Maximum probabilities of the development records (larger = more confident).
    coverage : float in (0, 1]
        Target share of development records accepted.

    Returns
    -------
    float

    Examples
    --------
    >>> coverage_threshold([0.9, 0.8, 0.8, 0.6, 0.3], 0.6)   # rank round(3.0) = 3
    0.8
    >>> coverage_threshold([0.9, 0.8, 0.8, 0.6, 0.3], 0.7)   # rank round(3.5) = 4 (half up)
    0.6
    """
    q = _coverage_iv(coverage)
    values = np.asarray(scores, dtype=float).ravel()
    if values.size == 0:
        raise ValueError("`scores` is empty; a coverage threshold needs development scores.")
    if not np.all(np.isfinite(values)):
        raise ValueError("`scores` must be finite.")
    rank = max(1, int(np.floor(q * values.size + 0.5 + 1e-9)))
    return float(np.sort(values)[::-1][rank - 1])


def development_thresholds(records: pd.DataFrame, coverages: Sequence[float]) -> pd.DataFrame:
    """Per-model acceptance thresholds from clean development coverage.

    The development set of a model is its clean records with ``split == "dev"``, one per
    ``record_id`` (the clean side repeats across conditions; a record whose clean maximum
    probability differs between rows is rejected). Without a ``split`` column, or for a model
    without development rows, all its clean records are used and ``scope`` says so.

    Parameters
    ----------
    records : DataFrame
        Paired records (validated here).
    coverages : sequence of float in (0, 1]

    Returns
    -------
    DataFrame
        One row per (model, coverage): ``model, coverage, tau, n_dev, scope`` with
        ``scope`` in {"dev", "all"}.
    """
    records = validate_records(records)
    qs = [_coverage_iv(q) for q in coverages]
    if not qs:
        raise ValueError("`coverages` must not be empty.")
    rows = []
    for model, part in records.groupby("model", sort=True):
        scope = "dev"
        if "split" in part.columns and (part["split"] == "dev").any():
            part = part[part["split"] == "dev"]
        else:
            scope = "all"
        unique = part.drop_duplicates(["record_id", "clean_max_prob"])
        clash = unique["record_id"].duplicated(keep=False)
        if clash.any():
            rid = unique.loc[clash, "record_id"].iloc[0]
            vals = sorted(unique.loc[unique["record_id"] == rid, "clean_max_prob"].tolist())
            rid = rid.item() if isinstance(rid, np.generic) else rid
            raise ValueError(
                f"model {model!r}, record_id {rid!r}: the clean maximum probability differs between "
                f"conditions ({vals}); the clean side of a record must be the same in every cell."
            )
        for q in qs:
            rows.append((model, q, coverage_threshold(unique["clean_max_prob"].to_numpy(), q), len(unique), scope))
    return pd.DataFrame(rows, columns=["model", "coverage", "tau", "n_dev", "scope"])


# ---------------------------------------------------------------------------------------------
# Grouped view of records


def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64), np.asarray(uniques)


def _sorted_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` by hashing (linear time on big tables)."""
    codes, uniques = pd.factorize(keys, sort=True)
    return np.asarray(uniques, dtype=np.int64), codes.astype(np.int64)


def class_table(records: pd.DataFrame | UnpairedRecords, *, validate: bool = True) -> ClassTable:
    """Group paired records (any number of cells) or one unpaired cell by (cell, true class).

    Parameters
    ----------
    records : DataFrame or UnpairedRecords
        Paired records (see :func:`core.paired.records.validate_records`), or the result of
        :func:`core.paired.records.validate_unpaired`.
    validate : bool, default=True
        Validate paired records first; pass False only for records that were just validated.

    Returns
    -------
    ClassTable
    """
    if isinstance(records, UnpairedRecords):
        return _unpaired_table(records)
    if validate:
        records = validate_records(records)
    n_rows = len(records)
    parts = [_codes(records[c]) for c in CELL_COLUMNS]
    key = np.zeros(n_rows, dtype=np.int64)
    for codes, uniques in parts:
        key = key * len(uniques) + codes
    cell_keys, cell_of_row = _sorted_codes(key)
    cells = {}
    rest = cell_keys.copy()
    for col, (_, uniques) in zip(reversed(CELL_COLUMNS), reversed(parts)):
        cells[col] = uniques[rest % len(uniques)]
        rest //= len(uniques)
    cells = pd.DataFrame({c: cells[c] for c in CELL_COLUMNS})
    label = records["true_label"].to_numpy(dtype=np.int64)
    label_codes, label_uniques = _codes(pd.Series(label))
    group_keys, group_of_row = _sorted_codes(cell_of_row * len(label_uniques) + label_codes)
    order = np.argsort(group_of_row, kind="stable")
    record_group = group_of_row[order]
    n_groups = len(group_keys)
    group_n = np.bincount(record_group, minlength=n_groups)
    arrays = {
        c: records[c].to_numpy()[order]
        for c in ("clean_pred", "clean_max_prob", "clean_true_prob", "pert_pred", "pert_max_prob", "pert_true_prob")
    }
    group_label = label_uniques[group_keys % len(label_uniques)].astype(np.int64)
    y = group_label[record_group]
    cc = arrays["clean_pred"] == y
    pc = arrays["pert_pred"] == y
    same = arrays["clean_pred"] == arrays["pert_pred"]
    masks = (cc & ~pc, ~cc & pc, ~cc & ~pc & same, ~cc & ~pc & ~same, cc & pc)
    observed = np.stack(
        [np.bincount(record_group, weights=m.astype(float), minlength=n_groups) for m in masks], axis=1
    ).astype(np.int64)
    return ClassTable(
        cells=cells,
        group_cell=(group_keys // len(label_uniques)).astype(np.int64),
        group_label=group_label,
        group_n=group_n.astype(np.int64),
        group_start=np.concatenate([[0], np.cumsum(group_n)]).astype(np.int64),
        record_group=record_group.astype(np.int64),
        clean_pred=arrays["clean_pred"].astype(np.int64),
        clean_max_prob=arrays["clean_max_prob"].astype(float),
        clean_true_prob=arrays["clean_true_prob"].astype(float),
        pert_pred=arrays["pert_pred"].astype(np.int64),
        pert_max_prob=arrays["pert_max_prob"].astype(float),
        pert_true_prob=arrays["pert_true_prob"].astype(float),
        paired=True,
        observed=observed,
        observed_k=observed[:, 4].copy(),
    )


def _unpaired_table(unpaired: UnpairedRecords) -> ClassTable:
    clean = unpaired.clean.sort_values("true_label", kind="stable")
    pert = unpaired.perturbed.sort_values("true_label", kind="stable")
    labels, group_n = np.unique(clean["true_label"].to_numpy(dtype=np.int64), return_counts=True)
    record_group = np.repeat(np.arange(len(labels)), group_n)
    observed = observed_k = None
    if unpaired.counts is not None:
        counts = unpaired.counts.set_index("true_label").reindex(labels)
        observed_k = counts["k"].to_numpy(dtype=np.int64)
        if unpaired.level == "I5":
            observed = counts[list(STATES)].to_numpy(dtype=np.int64)
    return ClassTable(
        cells=pd.DataFrame({c: ["-"] for c in CELL_COLUMNS}),
        group_cell=np.zeros(len(labels), dtype=np.int64),
        group_label=labels,
        group_n=group_n.astype(np.int64),
        group_start=np.concatenate([[0], np.cumsum(group_n)]).astype(np.int64),
        record_group=record_group,
        clean_pred=clean["pred"].to_numpy(dtype=np.int64),
        clean_max_prob=clean["max_prob"].to_numpy(dtype=float),
        clean_true_prob=clean["true_prob"].to_numpy(dtype=float),
        pert_pred=pert["pred"].to_numpy(dtype=np.int64),
        pert_max_prob=pert["max_prob"].to_numpy(dtype=float),
        pert_true_prob=pert["true_prob"].to_numpy(dtype=float),
        paired=False,
        observed=observed,
        observed_k=observed_k,
    )


# ---------------------------------------------------------------------------------------------
# Counts and targets


def five_state_counts(records: pd.DataFrame, tau: float | None = None) -> pd.DataFrame:
    """Observed five-state counts per (cell, true class).

    Parameters
    ----------
    records : DataFrame
        Paired records.
    tau : float in [0, 1], optional
        Acceptance threshold; when given, the acceptance counts used by the bounds are added.

    Returns
    -------
    DataFrame
        One row per (cell, class): ``model, condition, source, true_label, n, a, b,
        h, r, s, w, k`` where ``a``/``b`` count clean/perturbed correct records; with ``tau``
        also ``u`` (clean correct and accepted), ``v`` (perturbed correct and rejected) and
        ``t`` (perturbed wrong and accepted).
    """
    table = class_table(records)
    out = table.cells.iloc[table.group_cell].reset_index(drop=True)
    out["true_label"] = table.group_label
    counts = table.acceptance_counts(check_tau(tau) if tau is not None else 0.0)
    for name in ("n", "a", "b"):
        out[name] = counts[name]
    for j, name in enumerate(STATES):
        out[name] = table.observed[:, j]
    if tau is not None:
        for name in ("u", "v", "t"):
            out[name] = counts[name]
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def paired_targets(records: pd.DataFrame, tau: float) -> pd.DataFrame:
    """Reliability targets of every cell under its observed pairing.

    Parameters
    ----------
    records : DataFrame
        Paired records.
    tau : float in [0, 1]
        Acceptance threshold on both sides (``S ≥ τ`` accepted).

    Returns
    -------
    DataFrame
        One row per cell: ``model, condition, source, N, K`` (retained-correct pairs), the state
        shares ``h, r, s, w, k``, accuracies ``a0, a1``, label-change rate ``F``, and the targets
        ``H, L, E_tau, dM_k, ds_s, ds_w, A, Q`` (see the module docstring; rates over ``N``).
        Conditional means with an empty state and ``Q`` with a constant side are NaN, with one
        warning per call.

    Examples
    --------
    Paper 001, §3.1, the pairing that loses acceptance (τ = 0.8):

    >>> import pandas as pd
    >>> rec = pd.DataFrame({"model": "m", "condition": "c", "source": "s", "record_id": [1, 2],
    ...     "true_label": 0, "clean_pred": 0, "clean_max_prob": [0.9, 0.6], "clean_true_prob": [0.9, 0.6],
    ...     "pert_pred": [0, 1], "pert_max_prob": [0.6, 0.8], "pert_true_prob": [0.6, 0.2]})
    >>> paired_targets(rec, 0.8)[["H", "L", "dM_k"]].round(12).to_dict("records")
    [{'H': 0.0, 'L': 0.5, 'dM_k': 0.3}]
    """
    t = check_tau(tau)
    table = class_table(records)
    cell = table.group_cell[table.record_group]
    n_cells = table.n_cells

    def cell_sum(mask, weights=None):
        w = mask.astype(float) if weights is None else np.where(mask, weights, 0.0)
        return np.bincount(cell, weights=w, minlength=n_cells)

    cc, pc = table.clean_correct, table.pert_correct
    zc, zp = table.clean_max_prob >= t, table.pert_max_prob >= t
    same = table.clean_pred == table.pert_pred
    state = {"h": cc & ~pc, "r": ~cc & pc, "s": ~cc & ~pc & same, "w": ~cc & ~pc & ~same, "k": cc & pc}
    N = cell_sum(np.ones_like(cc))
    out = table.cells.copy()
    out["N"] = N.astype(np.int64)
    out["K"] = cell_sum(state["k"]).astype(np.int64)
    for name, mask in state.items():
        out[name] = cell_sum(mask) / N
    out["a0"] = out["h"] + out["k"]
    out["a1"] = out["r"] + out["k"]
    out["F"] = out["h"] + out["r"] + out["w"]
    out["H"] = cell_sum(cc & zc & ~pc & zp) / N
    out["L"] = cell_sum(state["k"] & zc & ~zp) / N
    out["E_tau"] = cell_sum(~pc & zp) / N
    dm = table.clean_true_prob - table.pert_true_prob
    ds = table.clean_max_prob - table.pert_max_prob
    out["dM_k"] = _ratio(cell_sum(state["k"], dm), out["K"].to_numpy())
    out["ds_s"] = _ratio(cell_sum(state["s"], ds), cell_sum(state["s"]))
    out["ds_w"] = _ratio(cell_sum(state["w"], ds), cell_sum(state["w"]))
    out["A"] = cell_sum(np.ones_like(cc), np.abs(ds)) / N
    out["Q"] = _cell_corr(table.clean_max_prob, table.pert_max_prob, cell, n_cells)
    undefined = {c: int(out[c].isna().sum()) for c in _UNDEFINED_BECAUSE if out[c].isna().any()}
    if undefined:
        parts = [f"{c} in {n} cell{'' if n == 1 else 's'} ({_UNDEFINED_BECAUSE[c]})" for c, n in undefined.items()]
        warn_undefined(f"some targets have no value, left empty: {'; '.join(parts)}.", stacklevel=2)
    return out


#: Why a target of :func:`paired_targets` has no value in a cell, in the words its warning uses.
_UNDEFINED_BECAUSE = {
    "dM_k": "no pair is correct on both sides",
    "ds_s": "no pair is wrong on both sides with the same label",
    "ds_w": "no pair is wrong on both sides with two different labels",
    "Q": "the clean or the perturbed confidence is the same for every pair",
}


def _cell_corr(x: np.ndarray, y: np.ndarray, cell: np.ndarray, n_cells: int) -> np.ndarray:
    n = np.bincount(cell, minlength=n_cells).astype(float)
    mx = np.bincount(cell, weights=x, minlength=n_cells) / n
    my = np.bincount(cell, weights=y, minlength=n_cells) / n
    dx, dy = x - mx[cell], y - my[cell]
    sxy = np.bincount(cell, weights=dx * dy, minlength=n_cells)
    sxx = np.bincount(cell, weights=dx * dx, minlength=n_cells)
    syy = np.bincount(cell, weights=dy * dy, minlength=n_cells)
    den = np.sqrt(sxx * syy)
    # Constant sides give a zero denominator up to rounding; the correlation is undefined there.
    tiny = 1e-24 * np.maximum(1.0, n)
    return np.where(den > tiny, sxy / np.where(den > tiny, den, 1.0), np.nan)


def variance_ratios(records: pd.DataFrame) -> pd.DataFrame:
    """Paired-to-unpaired variance ratio ``Var(X − X′) / (Var X + Var X′)`` per cell.

    A ratio below 1 means the pairing makes the measured change more precise than comparing
    two independent samples of the same sizes (paper 001, App. C.2); 1 = no gain.

    Parameters
    ----------
    records : DataFrame
        Paired records.

    Returns
    -------
    DataFrame
        One row per cell: ``model, condition, source, N, ratio_C, ratio_S, ratio_M`` for
        correctness ``C``, maximum probability ``S`` and true-class probability ``M``
        (population variances; NaN, with a warning, when both sides are constant).
    """
    table = class_table(records)
    cell = table.group_cell[table.record_group]
    n_cells = table.n_cells
    n = np.bincount(cell, minlength=n_cells).astype(float)

    def var(x):
        m = np.bincount(cell, weights=x, minlength=n_cells) / n
        return np.bincount(cell, weights=(x - m[cell]) ** 2, minlength=n_cells) / n

    out = table.cells.copy()
    out["N"] = n.astype(np.int64)
    for name, (x, y) in {
        "C": (table.clean_correct.astype(float), table.pert_correct.astype(float)),
        "S": (table.clean_max_prob, table.pert_max_prob),
        "M": (table.clean_true_prob, table.pert_true_prob),
    }.items():
        den = var(x) + var(y)
        out[f"ratio_{name}"] = np.where(den > 1e-15, var(x - y) / np.where(den > 1e-15, den, 1.0), np.nan)
    cols = [c for c in ("ratio_C", "ratio_S", "ratio_M") if out[c].isna().any()]
    if cols:
        warn_undefined(f"variance ratio undefined (both sides constant) for {cols} in some cells.", stacklevel=2)
    return out
