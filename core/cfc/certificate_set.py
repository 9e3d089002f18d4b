"""The certificates of a set of samples: the result types of :func:`core.cfc.certify` (SPEC A.3).

SPEC A.3: "the certificate is the whole tuple: trajectory (path, margins, probabilities and
predictions at every k), ``k*``, the collapse curve ``c_k``, RCMA, every ``λ*_P``, the one-step
drops, FDS, and the protocol fingerprint". A :class:`CertificateSet` holds that tuple for many
samples at once: a per-sample table (the scalars) beside arrays (the curves), one
:class:`OperatorTrace` per degradation operator ``P`` over the severity grid Λ with

```
λ*_P(x) = min{λ ∈ Λ : ŷ(P_λ(x)) ≠ ŷ(x)},     +∞ if none
```

and the flip search of SPEC A.4 when one was run. :class:`SampleCertificate` is the whole
certificate of one sample (the dashboard explorer's). Sets are cut and joined by row
(:meth:`CertificateSet.take`, :meth:`CertificateSet.concat`) and stored as strict-JSON bundles
(:mod:`core.cfc.bundle`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.cfc import bundle as _bundle
from core.cfc.protocol import Protocol
from core.cfc.search import FlipSearchResult, SearchSummary, search_summary

__all__ = ["CertificateSet", "OperatorTrace", "SampleCertificate", "search_columns"]


@dataclass(frozen=True, eq=False, kw_only=True)
class OperatorTrace:
    """One degradation operator over the severity grid, for every sample.

    Attributes
    ----------
    name : str
        ``attenuate_single`` or ``attenuate_all``.
    severities : ndarray of shape (L,)
        The grid Λ, ascending.
    unit_names : tuple of str, length U
        What each unit attenuates: one group per unit for ``attenuate_single``, ``("all",)``
        for ``attenuate_all``.
    margins : ndarray of shape (n_samples, U, L)
        Original-class margin ``m_y`` of the attenuated input: one curve over the severity grid
        per unit (for ``attenuate_single``: per group, in declared order).
    preds : ndarray of shape (n_samples, U, L)
        Prediction of the attenuated input.
    flipped : ndarray of shape (n_samples, L), bool
        Whether any unit's prediction differs from the original one at that severity.
    """

    name: str
    severities: np.ndarray
    unit_names: tuple[str, ...]
    margins: np.ndarray
    preds: np.ndarray
    flipped: np.ndarray

    @property
    def margin_curve(self) -> np.ndarray:
        """Per-severity minimum over units of the original-class margin, shape (n_samples, L)."""
        return self.margins.min(axis=1)

    @property
    def lambda_star(self) -> np.ndarray:
        """``λ*``: smallest severity at which the prediction flips, ``inf`` if none; shape (n,)."""
        first = np.argmax(self.flipped, axis=1)
        return np.where(self.flipped.any(axis=1), self.severities[first], np.inf)


@dataclass(frozen=True, eq=False, kw_only=True)
class SampleCertificate:
    """The full certificate of one sample (for the dashboard explorer).

    Arrays: ``path_margins``, ``preds``, ``collapse`` have shape (K+1,), ``proba`` (K+1, C),
    ``drops`` (G,) in declared group order, ``operator_margins[op]`` and
    ``operator_flipped[op]`` (L,), ``single_group_margins`` (G, L) when ``attenuate_single``
    was declared. Search fields are ``None`` when no search was run.
    """

    position: int
    index: Any
    group_names: tuple[str, ...]
    pred: int
    confidence: float
    margin: float
    flip_budget: int
    rcma: float
    fds: float
    u: float
    one_step_max: float
    degradation: float
    path: tuple[str, ...]
    path_margins: np.ndarray
    proba: np.ndarray
    preds: np.ndarray
    collapse: np.ndarray
    drops: np.ndarray
    severities: np.ndarray
    lambda_star: dict[str, float]
    operator_margins: dict[str, np.ndarray]
    operator_flipped: dict[str, np.ndarray]
    single_group_margins: np.ndarray | None
    flip_budget_exact: float | None
    flip_budget_beam: float | None
    exact_subset: tuple[str, ...] | None
    beam_subset: tuple[str, ...] | None
    fingerprint: str


@dataclass(frozen=True, eq=False, kw_only=True)
class CertificateSet:
    """Certificates of a set of samples under one protocol, model, grouping and baseline.

    Attributes
    ----------
    table : DataFrame
        One row per sample (index: the index of ``X`` when it was a DataFrame, else 0..n−1).
        Columns:

        - ``pred`` (int): original predicted class index ``ŷ(x)`` (column of ``predict_proba``);
        - ``confidence``: ``p̂ = max p̃``; ``margin``: ``m(x)``;
        - ``flip_budget`` (int): ``k*`` in ``1..K+1`` (``K+1`` = no flip within depth, SPEC's
          value, kept for sorting and verification);
        - ``flipped`` (bool): whether the removal path flips the prediction within depth ``K``
          (``flip_budget <= K``); show "no flip ≤ K" where it is False, never ``K+1``;
        - ``rcma``, ``fds``, ``u`` (risk, larger = more fragile);
        - ``one_step_max``: ``max_g δ_g`` (risk); ``degradation``: the third term of ``u``
          before its weight, ``(1/|ℙ|) Σ_P 1[λ*_P<∞]/(λ*_P+1e-8)`` (risk);
        - ``path``: list of the K removed group names in order;
          ``path_margins``: list of the K+1 margins ``m_y(x^(k))``;
        - ``lambda_star_<operator>``: ``λ*`` per declared operator (``inf`` = no flip);
        - ``flip_budget_exact`` (float, ``NaN`` = undecided under the cap) and
          ``flip_budget_beam`` (int) when a search was requested.
    protocol : Protocol
    group_names : tuple of str, length G
    group_columns : tuple of tuple of int
        Transformed columns of every group.
    baseline : ndarray of shape (n_features,)
    fingerprint : str
        SHA-256 over the protocol, groups, baseline, fixed ``order`` and the model's rounded
        predictions on a fixed probe built from the baseline. It does not depend on which rows
        were certified, so chunks of one dataset share it.
    depth : int
        Resolved audit depth ``K``.
    path_rule : {"static", "adaptive", "fixed"}
        ``fixed`` when a fixed ``order`` was given.
    order : tuple of str or None
        The fixed removal order, if any.
    path_idx : ndarray of shape (n_samples, K)
        Removed group indices, in removal order.
    traj_proba : ndarray of shape (n_samples, K+1, n_classes)
        Probabilities of ``x^(0) … x^(K)``.
    traj_pred : ndarray of shape (n_samples, K+1)
    traj_margin : ndarray of shape (n_samples, K+1)
        Original-class margins ``m_y(x^(k))``.
    collapse : ndarray of shape (n_samples, K+1)
        ``c_k``.
    drops : ndarray of shape (n_samples, G)
        One-step drops ``δ_g`` in declared group order.
    operators : mapping of str to OperatorTrace
    search : FlipSearchResult or None
    probe_proba : ndarray of shape (8, n_classes) or None
        The model's probabilities on the fingerprint probe, unrounded. They let :func:`verify`
        on another machine tell kernel noise (within tolerance) from another model; ``None`` in
        bundles written before they were stored.
    """

    table: pd.DataFrame
    protocol: Protocol
    group_names: tuple[str, ...]
    group_columns: tuple[tuple[int, ...], ...]
    baseline: np.ndarray
    fingerprint: str
    depth: int
    path_rule: str
    order: tuple[str, ...] | None
    path_idx: np.ndarray
    traj_proba: np.ndarray
    traj_pred: np.ndarray
    traj_margin: np.ndarray
    collapse: np.ndarray
    drops: np.ndarray
    operators: Mapping[str, OperatorTrace]
    search: FlipSearchResult | None = None
    probe_proba: np.ndarray | None = None

    def __len__(self) -> int:
        return self.path_idx.shape[0]

    @property
    def groups(self) -> dict[str, list[int]]:
        """The grouping as an ordered ``name -> columns`` dict."""
        return {n: list(c) for n, c in zip(self.group_names, self.group_columns)}

    @property
    def n_classes(self) -> int:
        return self.traj_proba.shape[2]

    @property
    def severities(self) -> np.ndarray:
        return np.asarray(self.protocol.severities)

    def search_summary(self) -> SearchSummary:
        """ExactMatch, GreedyOver, MeanGap, PairMiss, BeamImprove of this set (needs a search)."""
        if self.search is None:
            raise ValueError("No flip search was run; call certify(..., search='both') or flip_search().")
        k_exact = None if self.search.method == "beam" else self.search.k_exact
        k_beam = None if self.search.method == "exact" else self.search.k_beam
        return search_summary(self.table["flip_budget"].to_numpy(), k_exact, k_beam)

    def certificate(self, i: int) -> SampleCertificate:
        """The full certificate of the sample at position ``i`` (0-based)."""
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise ValueError(f"`i` must be a position in 0..{n - 1}; got {i!r}.")
        i = int(i) % n
        row = self.table.iloc[i]
        single = self.operators.get("attenuate_single")
        s = self.search
        return SampleCertificate(
            position=i,
            index=self.table.index[i],
            group_names=self.group_names,
            pred=int(row["pred"]),
            confidence=float(row["confidence"]),
            margin=float(row["margin"]),
            flip_budget=int(row["flip_budget"]),
            rcma=float(row["rcma"]),
            fds=float(row["fds"]),
            u=float(row["u"]),
            one_step_max=float(row["one_step_max"]),
            degradation=float(row["degradation"]),
            path=tuple(row["path"]),
            path_margins=self.traj_margin[i].copy(),
            proba=self.traj_proba[i].copy(),
            preds=self.traj_pred[i].copy(),
            collapse=self.collapse[i].copy(),
            drops=self.drops[i].copy(),
            severities=self.severities,
            lambda_star={op: float(tr.lambda_star[i]) for op, tr in self.operators.items()},
            operator_margins={op: tr.margin_curve[i] for op, tr in self.operators.items()},
            operator_flipped={op: tr.flipped[i].copy() for op, tr in self.operators.items()},
            single_group_margins=None if single is None else single.margins[i].copy(),
            flip_budget_exact=None if s is None or s.method == "beam" else float(s.k_exact[i]),
            flip_budget_beam=None if s is None or s.method == "exact" else float(s.k_beam[i]),
            exact_subset=None if s is None or s.method == "beam" else s.subset_names("exact", i),
            beam_subset=None if s is None or s.method == "exact" else s.subset_names("beam", i),
            fingerprint=self.fingerprint,
        )

    # ----------------------------------------------------------------------------------------
    # Row subsets and chunks
    # ----------------------------------------------------------------------------------------
    def take(self, positions: ArrayLike) -> CertificateSet:
        """The certificates of the samples at ``positions`` (0-based), as a new set.

        Examples
        --------
        ``cs.take([i]).to_bundle()`` is the bundle of one sample, verifiable on its own.
        """
        idx = np.asarray(positions)
        if idx.ndim != 1 or not (idx.size == 0 or np.issubdtype(idx.dtype, np.integer)):
            raise ValueError(f"`positions` must be a 1-D sequence of row positions; got {positions!r}.")
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise ValueError(f"`positions` must lie in 0..{n - 1}; got {idx.tolist()}.")
        ops = {
            op: replace(tr, margins=tr.margins[idx], preds=tr.preds[idx], flipped=tr.flipped[idx])
            for op, tr in self.operators.items()
        }
        s = self.search
        search = (
            None
            if s is None
            else replace(
                s,
                k_exact=s.k_exact[idx],
                exact_subset=s.exact_subset[idx],
                k_beam=s.k_beam[idx],
                beam_subset=s.beam_subset[idx],
            )
        )
        return replace(
            self,
            table=self.table.iloc[idx],
            path_idx=self.path_idx[idx],
            traj_proba=self.traj_proba[idx],
            traj_pred=self.traj_pred[idx],
            traj_margin=self.traj_margin[idx],
            collapse=self.collapse[idx],
            drops=self.drops[idx],
            operators=ops,
            search=search,
        )

    def with_search(self, search: FlipSearchResult | None) -> CertificateSet:
        """This set with ``search`` as its flip search (its ``flip_budget_exact`` /
        ``flip_budget_beam`` columns replaced, as :func:`certify` writes them), or none.

        ``search`` must hold one result per sample of this set, in the same order.
        """
        if search is not None and len(search) != len(self):
            raise ValueError(f"`search` must hold the {len(self)} samples of this set; got {len(search)} samples.")
        table = self.table.drop(columns=[c for c in ("flip_budget_exact", "flip_budget_beam") if c in self.table])
        if search is not None:
            table = table.assign(**search_columns(search))
        return replace(self, table=table, search=search)

    @classmethod
    def concat(cls, parts: Sequence[CertificateSet], *, ignore_index: bool = False) -> CertificateSet:
        """Concatenate certificate sets of disjoint row chunks computed under one protocol.

        Parameters
        ----------
        parts : sequence of CertificateSet
            Must share fingerprint, grouping, baseline, depth, path rule, order, operators and
            search method.
        ignore_index : bool, default=False
            Renumber the table 0..n−1. Otherwise the indexes are kept and must not repeat
            (certify DataFrames whose index identifies the rows to keep row identity).

        Raises
        ------
        ValueError
            On an empty list, incompatible parts, or a repeated index.
        """
        parts = list(parts)
        if not parts or not all(isinstance(p, CertificateSet) for p in parts):
            raise ValueError("`parts` must be a non-empty sequence of CertificateSet.")
        first = parts[0]
        for j, p in enumerate(parts[1:], start=1):
            checks = {
                "fingerprint": p.fingerprint == first.fingerprint,
                "protocol": p.protocol == first.protocol,
                "groups": p.group_names == first.group_names and p.group_columns == first.group_columns,
                "depth": p.depth == first.depth,
                "path_rule": p.path_rule == first.path_rule and p.order == first.order,
                "operators": tuple(p.operators) == tuple(first.operators),
                "search": (p.search is None) == (first.search is None)
                and (p.search is None or p.search.method == first.search.method),
            }
            bad = [k for k, ok in checks.items() if not ok]
            if bad:
                raise ValueError(f"Part {j} cannot be concatenated with part 0: different {', '.join(bad)}.")
        table = pd.concat([p.table for p in parts], ignore_index=ignore_index)
        if not ignore_index and table.index.has_duplicates:
            dup = table.index[table.index.duplicated()][0]
            raise ValueError(
                f"The parts' table indexes repeat (e.g. {dup!r}); pass ignore_index=True or certify "
                "DataFrames whose index identifies the rows."
            )

        def cat(name: str) -> np.ndarray:
            return np.concatenate([getattr(p, name) for p in parts])

        ops = {
            op: replace(
                tr,
                margins=np.concatenate([p.operators[op].margins for p in parts]),
                preds=np.concatenate([p.operators[op].preds for p in parts]),
                flipped=np.concatenate([p.operators[op].flipped for p in parts]),
            )
            for op, tr in first.operators.items()
        }
        search = None
        if first.search is not None:
            s = first.search
            search = replace(
                s,
                k_exact=np.concatenate([p.search.k_exact for p in parts]),
                exact_subset=np.concatenate([p.search.exact_subset for p in parts]),
                exact_levels=min(p.search.exact_levels for p in parts),
                k_beam=np.concatenate([p.search.k_beam for p in parts]),
                beam_subset=np.concatenate([p.search.beam_subset for p in parts]),
            )
        return replace(
            first,
            table=table,
            path_idx=cat("path_idx"),
            traj_proba=cat("traj_proba"),
            traj_pred=cat("traj_pred"),
            traj_margin=cat("traj_margin"),
            collapse=cat("collapse"),
            drops=cat("drops"),
            operators=ops,
            search=search,
        )

    # ----------------------------------------------------------------------------------------
    # Serialisation
    # ----------------------------------------------------------------------------------------
    def to_bundle(self) -> dict[str, Any]:
        """Strict-JSON-ready dict of everything in this set (see :mod:`core.cfc.bundle`)."""
        return _bundle.encode_certificate_set(self)

    def to_json(self, path: str | Path) -> Path:
        """Write :meth:`to_bundle` as strict JSON; returns the path."""
        return _bundle.write_bundle(self.to_bundle(), path)

    @classmethod
    def from_bundle(cls, data: Mapping[str, Any]) -> CertificateSet:
        """Rebuild a set from :meth:`to_bundle` output, exactly as stored."""
        fields = _bundle.decode_certificate_set(data)
        operators = {op: OperatorTrace(**trace) for op, trace in fields.pop("operators").items()}
        return cls(**fields, operators=operators)

    @classmethod
    def from_json(cls, path: str | Path) -> CertificateSet:
        """Read a set written by :meth:`to_json`."""
        return cls.from_bundle(_bundle.read_bundle(path))


def search_columns(search: FlipSearchResult) -> dict[str, np.ndarray]:
    """The table columns of a flip search: ``flip_budget_exact`` (float, NaN = undecided under
    the cap) and/or ``flip_budget_beam`` (int), by its method."""
    columns = {}
    if search.method in ("exact", "both"):
        columns["flip_budget_exact"] = search.k_exact
    if search.method in ("beam", "both"):
        columns["flip_budget_beam"] = search.k_beam.astype(np.int64)
    return columns
