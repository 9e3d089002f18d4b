"""The grouped view of paired records: :class:`ClassTable` (records by cell and true class).

Its own module so that the bound solvers (:mod:`core.paired._fivestate`) can name the type
without importing :mod:`core.paired.states`, which builds it from validated records
(:func:`core.paired.states.class_table`); the records validator in turn calls the solvers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ClassTable"]


@dataclass(frozen=True, kw_only=True)
class ClassTable:
    """Records of one or many cells grouped by (cell, true class).

    Groups are ordered by cell (model, condition, source, sorted) and then by label; records of
    each side are sorted by group (stable), so for paired input ``clean_*[i]`` and
    ``pert_*[i]`` are the two sides of one pair.

    Attributes
    ----------
    cells : DataFrame of shape (n_cells, 3)
        ``model, condition, source`` of each cell; row position = cell index.
    group_cell, group_label, group_n : ndarray of shape (n_groups,)
        Cell index, true label and number of records (per side) of each group.
    group_start : ndarray of shape (n_groups + 1,)
        Offsets of each group's records in the side arrays.
    clean_pred, clean_max_prob, clean_true_prob : ndarray of shape (n_records,)
    pert_pred, pert_max_prob, pert_true_prob : ndarray of shape (n_records,)
    record_group : ndarray of shape (n_records,)
        Group of each record (same for both sides).
    paired : bool
        Whether row i of both sides is an observed pair.
    observed : ndarray of shape (n_groups, 5) or None
        Observed counts ``h, r, s, w, k`` per group (paired input, or unpaired with five counts).
    observed_k : ndarray of shape (n_groups,) or None
        Observed correct–correct counts (available whenever ``observed`` is, or from ``k`` alone).
    """

    cells: pd.DataFrame
    group_cell: np.ndarray
    group_label: np.ndarray
    group_n: np.ndarray
    group_start: np.ndarray
    record_group: np.ndarray
    clean_pred: np.ndarray
    clean_max_prob: np.ndarray
    clean_true_prob: np.ndarray
    pert_pred: np.ndarray
    pert_max_prob: np.ndarray
    pert_true_prob: np.ndarray
    paired: bool
    observed: np.ndarray | None
    observed_k: np.ndarray | None

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    @property
    def level(self) -> str:
        """Highest information level available: ``I5``, ``Ik`` or ``I0``."""
        return "I5" if self.observed is not None else "Ik" if self.observed_k is not None else "I0"

    @property
    def clean_correct(self) -> np.ndarray:
        return self.clean_pred == self.group_label[self.record_group]

    @property
    def pert_correct(self) -> np.ndarray:
        return self.pert_pred == self.group_label[self.record_group]

    def per_group(self, mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Count (or sum ``weights`` of) records with ``mask`` per group; shape (n_groups,)."""
        w = mask.astype(float) if weights is None else np.where(mask, weights, 0.0)
        out = np.bincount(self.record_group, weights=w, minlength=len(self.group_n))
        return out.astype(np.int64) if weights is None else out

    def acceptance_counts(self, tau: float) -> dict[str, np.ndarray]:
        """Per-group counts behind the bounds at threshold ``tau`` (accepted when ``max_prob ≥ τ``).

        Returns
        -------
        dict of str -> ndarray of shape (n_groups,), int64
            ``n`` (records per side), ``a`` / ``b`` (clean / perturbed correct), ``u`` (clean
            correct and accepted), ``v`` (perturbed correct and rejected), ``t`` (perturbed
            wrong and accepted). None of them needs the pairing.
        """
        cc, pc = self.clean_correct, self.pert_correct
        return {
            "n": self.group_n,
            "a": self.per_group(cc),
            "b": self.per_group(pc),
            "u": self.per_group(cc & (self.clean_max_prob >= tau)),
            "v": self.per_group(pc & (self.pert_max_prob < tau)),
            "t": self.per_group(~pc & (self.pert_max_prob >= tau)),
        }

    def per_cell(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-group array over the groups of each cell; shape (n_cells,)."""
        return np.bincount(self.group_cell, weights=np.asarray(values, dtype=float), minlength=self.n_cells)
