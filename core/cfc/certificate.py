"""Counterfactual fragility certificates of many samples at once (SPEC A.3).

For a sample ``x`` with original prediction ``y = ŷ(x)`` and margin ``m(x)``:

- one-step drops ``δ_g = m(x) − m_y(R(x, {g}))`` for every group;
- removal path ``π_x``: ``static`` sorts the groups once by ``δ_g`` (descending, ties in the
  declared group order); ``adaptive`` picks at each step the remaining group with the largest
  drop from the current state; a fixed ``order`` (evaluation baselines) overrides both;
- trajectory ``x^(k) = R(x, {π(1) … π(k)})``, ``k = 0 … K``, with its probabilities,
  predictions and original-class margins ``m_y(x^(k))``;
- flip budget ``k* = min{k ≥ 1 : ŷ(x^(k)) ≠ y}`` (``K+1`` if none);
- collapse ``c_k = max(0, (m(x) − m_y(x^(k))) / (|m(x)| + 1e-8))``, ``RCMA = mean_k c_k``;
- per operator ``λ*_P = min{λ ∈ Λ : ŷ(P_λ(x)) ≠ y}`` (``inf`` if none);
- ``u = w1·RCMA + w2/k* + w3·(1/|ℙ|) Σ_P 1[λ*_P < ∞] / (λ*_P + 1e-8)``, ``FDS = 1 − exp(−u)``.

Orientation: ``rcma``, ``u``, ``fds``, ``one_step_max`` and ``degradation`` are **risk scores
(larger = more fragile)**; ``flip_budget`` and ``lambda_star_*`` are the other way round
(smaller = more fragile).

Forward passes per sample: ``1 + G + L·(G + 1)`` in the first round (original input, one-step
removals, both operators over the grid of ``L`` severities), then ``K − 1`` path states for the
static rule (``x^(1)`` is a one-step removal already evaluated), or ``G − k + 1`` candidates at
each step ``k = 2 … K`` for the adaptive rule. All of them are stacked and evaluated in
``predict_proba`` calls of at most ``batch_size`` rows; no Python loop runs over samples.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core._rng import as_generator
from core.cfc import bundle as _bundle
from core.cfc.operators import (
    GroupIndex,
    PredictProba,
    ProgressCounter,
    check_baseline,
    check_batch_size,
    check_features,
    operator_units,
    predict_batched,
    stack_attenuations,
    stack_removals,
)
from core.cfc.protocol import Protocol
from core.cfc.scores import check_proba, class_margin, clip_renormalize, predicted_class
from core.cfc.search import FlipSearchResult, SearchSummary, check_method, run_search, search_summary

__all__ = [
    "CertificateSet",
    "OperatorTrace",
    "SampleCertificate",
    "VerificationReport",
    "certificate_fingerprint",
    "certify",
    "fds_from_components",
    "verify",
]

_EPS = 1e-8
_PROBE_SEED = 20_240_607
_PROBE_ROWS = 7
_FINGERPRINT_SCHEMA = "cfc-certificate/1"
SearchOption = Literal["none", "exact", "beam", "both"]


# --------------------------------------------------------------------------------------------
# Result objects
# --------------------------------------------------------------------------------------------
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
            table = table.assign(**_search_columns(search))
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
        enc = _bundle.encode_array
        index = self.table.index
        if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
            index_out = None
        else:
            index_out = index.tolist()
            try:
                json.dumps(index_out, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    "The table index cannot be written to JSON (only str / int labels can); "
                    "reset it or certify with a plain array."
                ) from exc
        columns, dtypes, data = list(self.table.columns), {}, {}
        for col in columns:
            values = self.table[col]
            if col == "path":
                dtypes[col], data[col] = "list[str]", [list(v) for v in values]
            elif col == "path_margins":
                dtypes[col], data[col] = "list[float64]", self.traj_margin.tolist()
            elif values.dtype == bool:
                dtypes[col], data[col] = "bool", values.tolist()
            elif np.issubdtype(values.dtype, np.integer):
                dtypes[col], data[col] = "int64", values.astype(np.int64).tolist()
            else:
                dtypes[col], data[col] = "float64", _bundle.encode_floats(values.to_numpy(dtype=np.float64))
        s = self.search
        return {
            "schema": _bundle.SCHEMA,
            "fingerprint": self.fingerprint,
            "protocol": self.protocol.to_dict(),
            "protocol_fingerprint": self.protocol.fingerprint,
            "groups": [{"name": n, "columns": list(c)} for n, c in zip(self.group_names, self.group_columns)],
            "baseline": enc(self.baseline),
            "depth": self.depth,
            "path_rule": self.path_rule,
            "order": None if self.order is None else list(self.order),
            "n_samples": len(self),
            "index": index_out,
            "table": {"columns": columns, "dtypes": dtypes, "data": data},
            "arrays": {name: enc(getattr(self, name)) for name in _ARRAY_FIELDS},
            "operators": {
                op: {
                    "severities": enc(tr.severities),
                    "unit_names": list(tr.unit_names),
                    "margins": enc(tr.margins),
                    "preds": enc(tr.preds),
                    "flipped": enc(tr.flipped),
                }
                for op, tr in self.operators.items()
            },
            "probe_proba": None if self.probe_proba is None else enc(self.probe_proba),
            "search": None
            if s is None
            else {
                "method": s.method,
                "depth": s.depth,
                "exact_levels": s.exact_levels,
                "exact_cap": s.exact_cap,
                "beam_width": s.beam_width,
                "k_exact": enc(s.k_exact),
                "exact_subset": enc(s.exact_subset),
                "k_beam": enc(s.k_beam),
                "beam_subset": enc(s.beam_subset),
            },
        }

    def to_json(self, path: str | Path) -> Path:
        """Write :meth:`to_bundle` as strict JSON; returns the path."""
        return _bundle.write_bundle(self.to_bundle(), path)

    @classmethod
    def from_bundle(cls, data: Mapping[str, Any]) -> CertificateSet:
        """Rebuild a set from :meth:`to_bundle` output, exactly as stored."""
        return _from_bundle(data)

    @classmethod
    def from_json(cls, path: str | Path) -> CertificateSet:
        """Read a set written by :meth:`to_json`."""
        return _from_bundle(_bundle.read_bundle(path))


_ARRAY_FIELDS = ("path_idx", "traj_proba", "traj_pred", "traj_margin", "collapse", "drops")


def _from_bundle(data: Mapping[str, Any]) -> CertificateSet:
    if not isinstance(data, Mapping) or data.get("schema") != _bundle.SCHEMA:
        found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(f"Not a certificate bundle (schema {found!r}, expected {_bundle.SCHEMA!r}).")
    required = (
        "fingerprint",
        "protocol",
        "groups",
        "baseline",
        "depth",
        "path_rule",
        "order",
        "n_samples",
        "index",
        "table",
        "arrays",
        "operators",
        "search",
    )
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"Certificate bundle lacks field(s) {missing}.")
    dec = _bundle.decode_array
    protocol = Protocol.from_dict(data["protocol"])
    try:
        names = tuple(str(g["name"]) for g in data["groups"])
        columns = tuple(tuple(int(c) for c in g["columns"]) for g in data["groups"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Bundle field 'groups' must be a list of {{name, columns}} objects; {exc!r}.") from exc
    n = int(data["n_samples"])
    arrays = {name: dec(data["arrays"][name], where=f"arrays.{name}") for name in _ARRAY_FIELDS}
    for name, arr in arrays.items():
        if arr.shape[0] != n:
            raise ValueError(f"Bundle field 'arrays.{name}' has {arr.shape[0]} rows; n_samples is {n}.")
    tab = data["table"]
    cols = {}
    for col in tab["columns"]:
        dtype, values = tab["dtypes"][col], tab["data"][col]
        if len(values) != n:
            raise ValueError(f"Bundle field 'table.{col}' has {len(values)} rows; n_samples is {n}.")
        if dtype == "list[str]":
            cols[col] = [list(v) for v in values]
        elif dtype == "list[float64]":
            cols[col] = [list(map(float, v)) for v in values]
        elif dtype == "int64":
            cols[col] = np.asarray(values, dtype=np.int64)
        elif dtype == "bool":
            if not all(isinstance(v, bool) for v in values):
                raise ValueError(f"Bundle field 'table.{col}' must hold only true / false.")
            cols[col] = np.asarray(values, dtype=bool)
        elif dtype == "float64":
            cols[col] = _bundle.decode_floats(values, where=f"table.{col}")
        else:
            raise ValueError(f"Bundle field 'table.{col}' has an unknown dtype {dtype!r}.")
    index = pd.RangeIndex(n) if data["index"] is None else pd.Index(data["index"])
    order = list(tab["columns"])
    if "flipped" not in cols and "flip_budget" in cols:  # bundles written before the column existed
        cols["flipped"] = cols["flip_budget"] <= int(data["depth"])
        order.insert(order.index("flip_budget") + 1, "flipped")
    table = pd.DataFrame(cols, index=index, columns=order)
    ops = {
        op: OperatorTrace(
            name=op,
            severities=dec(o["severities"], where=f"operators.{op}.severities"),
            unit_names=tuple(o["unit_names"]),
            margins=dec(o["margins"], where=f"operators.{op}.margins"),
            preds=dec(o["preds"], where=f"operators.{op}.preds"),
            flipped=dec(o["flipped"], where=f"operators.{op}.flipped"),
        )
        for op, o in data["operators"].items()
    }
    s = data["search"]
    search = (
        None
        if s is None
        else FlipSearchResult(
            method=s["method"],
            depth=int(s["depth"]),
            group_names=names,
            k_exact=dec(s["k_exact"], where="search.k_exact"),
            exact_subset=dec(s["exact_subset"], where="search.exact_subset"),
            exact_levels=int(s["exact_levels"]),
            k_beam=dec(s["k_beam"], where="search.k_beam"),
            beam_subset=dec(s["beam_subset"], where="search.beam_subset"),
            exact_cap=int(s["exact_cap"]),
            beam_width=int(s["beam_width"]),
        )
    )
    order = None if data["order"] is None else tuple(data["order"])
    probe = data.get("probe_proba")  # absent from bundles written before it was stored
    return CertificateSet(
        table=table,
        protocol=protocol,
        group_names=names,
        group_columns=columns,
        baseline=dec(data["baseline"], where="baseline"),
        fingerprint=str(data["fingerprint"]),
        depth=int(data["depth"]),
        path_rule=str(data["path_rule"]),
        order=order,
        path_idx=arrays["path_idx"],
        traj_proba=arrays["traj_proba"],
        traj_pred=arrays["traj_pred"],
        traj_margin=arrays["traj_margin"],
        collapse=arrays["collapse"],
        drops=arrays["drops"],
        operators=ops,
        search=search,
        probe_proba=None if probe is None else dec(probe, where="probe_proba"),
    )


# --------------------------------------------------------------------------------------------
# The ranking head
# --------------------------------------------------------------------------------------------
def _collapse_terms(traj_margin: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``collapse`` (n, K+1) ``= max(0, (m0 − m_k) / (|m0| + 1e-8))`` and ``rcma`` (n,) (SPEC A.2)."""
    m0 = traj_margin[:, 0]
    collapse = np.maximum(0.0, (m0[:, None] - traj_margin) / (np.abs(m0)[:, None] + _EPS))
    return collapse, collapse.sum(axis=1) / (depth + 1)


def fds_from_components(
    rcma: ArrayLike, flip_budget: ArrayLike, lambda_stars: ArrayLike, weights: Sequence[float] = (1 / 3, 1 / 3, 1 / 3)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``FDS = 1 − exp(−u)`` from certificate components (SPEC A.3).

    Parameters
    ----------
    rcma : array-like of shape (n,)
    flip_budget : array-like of shape (n,)
        ``k*`` (``>= 1``).
    lambda_stars : array-like of shape (n, n_operators)
        ``λ*`` per operator, ``inf`` = no flip. With zero operators the degradation term is 0.
    weights : sequence of 3 floats
        ``(w1, w2, w3)``.

    Returns
    -------
    fds, u, degradation : ndarrays of shape (n,)
        ``degradation = (1/|ℙ|) Σ_P 1[λ*_P < ∞] / (λ*_P + 1e-8)``. ``fds`` is in ``[0, 1)``
        mathematically; in floating point it reaches 1.0 once ``u`` exceeds about 37, so rank
        by ``u`` to separate such extreme cases.

    Examples
    --------
    >>> fds, u, deg = fds_from_components([0.3], [1], [[0.5, float("inf")]], (1.0, 1.0, 1.0))
    >>> round(float(deg[0]), 6), round(float(u[0]), 6), round(float(fds[0]), 6)
    (1.0, 2.3, 0.899741)
    """
    rcma = np.asarray(rcma, dtype=np.float64)
    k = np.asarray(flip_budget, dtype=np.float64)
    lam = np.asarray(lambda_stars, dtype=np.float64).reshape(rcma.shape[0], -1)
    w1, w2, w3 = (float(w) for w in weights)
    if lam.shape[1]:
        finite = np.isfinite(lam)
        degradation = np.where(finite, 1.0 / (np.where(finite, lam, 0.0) + _EPS), 0.0).mean(axis=1)
    else:
        degradation = np.zeros(rcma.shape[0])
    u = w1 * rcma + w2 / k + w3 * degradation
    return -np.expm1(-u), u, degradation


# --------------------------------------------------------------------------------------------
# certify
# --------------------------------------------------------------------------------------------
def _probe_rows(baseline: np.ndarray) -> np.ndarray:
    """Fixed probe: the baseline and rows scattered around it, independent of any data row."""
    z = as_generator(_PROBE_SEED).standard_normal((_PROBE_ROWS, baseline.size))
    return np.vstack([baseline, baseline + z * np.maximum(np.abs(baseline), 1.0)])


def _fingerprint(
    predict_proba: PredictProba, protocol: Protocol, gi: GroupIndex, baseline: np.ndarray, order: tuple[str, ...] | None
) -> tuple[str, np.ndarray]:
    probe = _probe_rows(baseline)
    P = check_proba(predict_proba(probe), probe.shape[0], what="`predict_proba` (fingerprint probe)")
    payload = {
        "schema": _FINGERPRINT_SCHEMA,
        "protocol": protocol.to_dict(),
        "groups": [[name, list(cols)] for name, cols in zip(gi.names, gi.columns)],
        # +0.0 folds -0.0 into 0.0; rounding keeps BLAS noise out of the hash.
        "baseline": [format(v + 0.0, ".12g") for v in baseline.tolist()],
        "order": None if order is None else list(order),
        "probe": [[format(v, ".6f") for v in row] for row in P.tolist()],
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), P


def certificate_fingerprint(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    protocol: Protocol | None = None,
    *,
    order: Sequence[str] | None = None,
) -> str:
    """The fingerprint :func:`certify` gives any rows under these inputs, without certifying any.

    It hashes the protocol's canonical JSON, the groups, the baseline (12 significant digits),
    the fixed ``order`` and the model's probabilities (6 decimals) on a fixed probe: the
    baseline and 7 rows scattered around it with a fixed seed. It never depends on ``X``.

    Parameters
    ----------
    predict_proba, groups, baseline, protocol, order
        As in :func:`certify`.

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol or None; got {type(protocol).__name__}.")
    b = np.asarray(baseline, dtype=np.float64)
    if b.ndim != 1:
        raise ValueError(f"`baseline` must be 1-D (n_features,); got shape {b.shape}.")
    b = check_baseline(b, b.shape[0])
    gi = GroupIndex.from_groups(groups, b.shape[0])
    order_names, _ = _order_iv(order, gi, protocol.resolved_depth(gi.n_groups))
    return _fingerprint(predict_proba, protocol, gi, b, order_names)[0]


def _order_iv(
    order: Sequence[str] | None, gi: GroupIndex, depth: int
) -> tuple[tuple[str, ...] | None, np.ndarray | None]:
    if order is None:
        return None, None
    if isinstance(order, str) or not isinstance(order, (Sequence, np.ndarray)):
        raise ValueError(f"`order` must be a sequence of group names; got {order!r}.")
    names = tuple(order)
    lookup = {n: i for i, n in enumerate(gi.names)}
    unknown = [n for n in names if n not in lookup]
    if unknown:
        raise ValueError(f"`order` names unknown group(s) {unknown}; groups are {list(gi.names)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"`order` must not repeat a group; got {list(names)}.")
    if len(names) < depth:
        raise ValueError(f"`order` must list at least `depth` ({depth}) distinct group names; got {len(names)}.")
    return names, np.array([lookup[n] for n in names[:depth]], dtype=np.intp)


def _round_one(
    predict_proba: PredictProba,
    Xc: np.ndarray,
    b: np.ndarray,
    gi: GroupIndex,
    lam: np.ndarray,
    unit_masks: dict[str, np.ndarray],
    batch_size: int,
    n_classes: int,
    what: str,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The input, its G one-step removals and every operator state of a chunk, in one stack.

    Returns the probabilities of the inputs (nc, C), of the one-step removals (nc, G, C) and of
    every operator (nc, U, L, C).
    """
    nc, d = Xc.shape
    G, L, C = gi.n_groups, lam.size, n_classes
    R1 = 1 + G + L * sum(m.shape[0] for m in unit_masks.values())
    Z = np.empty((nc, R1, d))
    Z[:, 0] = Xc
    stack_removals(Xc, b, gi.column_mask(np.eye(G, dtype=bool)), out=Z[:, 1 : 1 + G])
    spans = {}
    off = 1 + G
    for op, um in unit_masks.items():
        U = um.shape[0]
        # Splitting one axis of a slice is always a view, so this writes straight into Z.
        stack_attenuations(Xc, b, lam, um, out=Z[:, off : off + L * U].reshape(nc, L, U, d))
        spans[op] = (off, U)
        off += L * U
    P = predict_batched(predict_proba, Z.reshape(nc * R1, d), batch_size=batch_size, n_classes=C, what=what).reshape(
        nc, R1, C
    )
    # Stacked λ-major; reported unit-major, one margin curve per unit.
    ops = {op: P[:, o : o + L * U].reshape(nc, L, U, C).transpose(0, 2, 1, 3) for op, (o, U) in spans.items()}
    return P[:, 0], P[:, 1 : 1 + G], ops


def _removal_states(
    predict_proba: PredictProba,
    Xc: np.ndarray,
    b: np.ndarray,
    gi: GroupIndex,
    subsets: np.ndarray,
    batch_size: int,
    n_classes: int,
    what: str,
) -> np.ndarray:
    """Probabilities (nc, t, C) of ``R(x_i, S_ij)`` for group-subset masks ``subsets`` (nc, t, G)."""
    nc, t = subsets.shape[:2]
    Z = stack_removals(Xc, b, gi.column_mask(subsets))
    return predict_batched(
        predict_proba, Z.reshape(nc * t, Xc.shape[1]), batch_size=batch_size, n_classes=n_classes, what=what
    ).reshape(nc, t, n_classes)


def _chunks(n: int, size: int):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def _certify_iv(
    predict_proba: Any, X: ArrayLike, groups: Any, baseline: ArrayLike, protocol: Any, search: str
) -> tuple[Protocol, np.ndarray, pd.Index | None, GroupIndex, np.ndarray, int]:
    if not callable(predict_proba):
        raise ValueError(
            f"`predict_proba` must be callable (e.g. model.predict_proba); got {type(predict_proba).__name__}."
        )
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol or None; got {type(protocol).__name__}.")
    if search != "none":
        check_method(search)
    A, index = check_features(X)
    b = check_baseline(baseline, A.shape[1])
    gi = GroupIndex.from_groups(groups, A.shape[1])
    return protocol, A, index, gi, b, protocol.resolved_depth(gi.n_groups)


def certify(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    protocol: Protocol | None = None,
    *,
    order: Sequence[str] | None = None,
    search: SearchOption = "none",
    batch_size: int = 65536,
    progress: Callable[[int, int], object] | None = None,
) -> CertificateSet:
    """Counterfactual fragility certificates of every row of ``X`` (SPEC A.3, A.4).

    Parameters
    ----------
    predict_proba : callable
        ``predict_proba(Z) -> (m, C)`` class probabilities for a float64 array ``Z`` of shape
        ``(m, n_features)`` in the transformed space (wrap models fitted on DataFrames).
        Rows must be probabilities; anything else raises ``ValueError``.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Transformed, finite features. A DataFrame's index becomes the table index.
    groups : mapping of str to sequence of int
        Ordered partition ``name -> column indices`` of the columns of ``X`` (declared order
        breaks ties).
    baseline : array-like of shape (n_features,)
        Baseline ``x̄`` (training split, transformed space).
    protocol : Protocol, optional
        Default ``Protocol()``.
    order : sequence of str, optional
        Fixed removal order used for every sample (at least ``depth`` distinct group names);
        overrides the path rule (``path_rule = "fixed"``) and enters the fingerprint.
    search : {"none", "exact", "beam", "both"}, default="none"
        Also run the exact and/or beam flip search (costlier; see :mod:`core.cfc.search`),
        adding ``flip_budget_exact`` / ``flip_budget_beam`` to the table.
    batch_size : int, default=65536
        Maximum rows per ``predict_proba`` call (bounds memory).
    progress : callable(done_rows, total_rows), optional
        Called after each chunk; ``total_rows`` counts every pass over ``X`` (the certificate,
        then each search).

    Returns
    -------
    CertificateSet

    Raises
    ------
    ValueError
        Non-finite ``X``; groups that overlap, miss columns or are empty; a baseline of the
        wrong length; ``depth`` larger than the number of groups; an invalid ``order``; a
        ``predict_proba`` whose output is not a probability matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> def proba(Z):  # logistic model with logit 3·x0 − x1 + 0.5·x2 − 0.5
    ...     z = Z @ np.array([3.0, -1.0, 0.5]) - 0.5
    ...     return np.column_stack([expit(-z), expit(z)])
    >>> cs = certify(proba, [[1.0, 1.0, 2.0]], {"a": [0], "b": [1], "c": [2]}, np.zeros(3))
    >>> row = cs.table.iloc[0]
    >>> int(row["pred"]), round(float(row["margin"]), 6), int(row["flip_budget"]), row["path"]
    (1, 2.5, 1, ['a', 'c', 'b'])
    >>> round(float(row["rcma"]), 6), float(row["lambda_star_attenuate_single"])
    (1.0, 0.9)
    """
    protocol, A, index, gi, b, depth = _certify_iv(predict_proba, X, groups, baseline, protocol, search)
    batch_size = check_batch_size(batch_size)
    order_names, order_idx = _order_iv(order, gi, depth)
    path_rule = "fixed" if order_names is not None else protocol.path
    fingerprint, probe_proba = _fingerprint(predict_proba, protocol, gi, b, order_names)
    n_classes = probe_proba.shape[1]

    n, G, K, C = A.shape[0], gi.n_groups, depth, n_classes
    lam = np.asarray(protocol.severities, dtype=np.float64)
    unit_masks = {op: gi.column_mask(operator_units(op, G)) for op in protocol.operators}
    rows_one = 1 + G + lam.size * sum(m.shape[0] for m in unit_masks.values())
    rows_later = K - 1 if path_rule != "adaptive" else sum(G - k + 1 for k in range(2, K + 1))
    passes = 1 + {"none": 0, "exact": 1, "beam": 1, "both": 2}[search]
    counter = ProgressCounter(progress, n * passes)
    share_one = rows_one / (rows_one + rows_later)  # of the certificate pass, for progress

    y = np.empty(n, dtype=np.intp)
    path = np.empty((n, K), dtype=np.intp)
    traj = np.empty((n, K + 1, C))
    drops = np.empty((n, G))
    m_prev = np.empty(n)  # adaptive rule: original-class margin of the current state
    # Per-unit predictions are the bulkiest integers kept: store them in the smallest dtype.
    pred_dtype = np.min_scalar_type(C - 1)
    op_arrays = {
        op: (
            np.empty((n, m.shape[0], lam.size)),
            np.empty((n, m.shape[0], lam.size), dtype=pred_dtype),
            np.empty((n, lam.size), dtype=bool),
        )
        for op, m in unit_masks.items()
    }

    # Round 1, chunked so that one chunk's stack holds about batch_size rows.
    for sl in _chunks(n, max(1, batch_size // rows_one)):
        what = f"the stressed inputs of rows {sl.start}..{sl.stop - 1} of X"
        P0, P_one, ops_p = _round_one(predict_proba, A[sl], b, gi, lam, unit_masks, batch_size, C, what)
        yc = predicted_class(P0)
        ar = np.arange(yc.size)
        m_one = class_margin(P_one, yc[:, None])
        dc = class_margin(P0, yc)[:, None] - m_one
        y[sl], drops[sl], traj[sl, 0] = yc, dc, P0
        for op, Pop in ops_p.items():
            margins, preds, flipped = op_arrays[op]
            margins[sl] = class_margin(Pop, yc[:, None, None])
            preds[sl] = predicted_class(Pop)
            flipped[sl] = (preds[sl] != yc[:, None, None]).any(axis=1)
        if order_idx is not None:
            path[sl] = order_idx
        elif path_rule == "static":
            # Stable sort of −δ: descending drops, ties in declared group order.
            path[sl] = np.argsort(-dc, axis=1, kind="stable")[:, :K]
        else:
            path[sl, 0] = np.argmax(dc, axis=1)  # first maximum = declared order on ties
            m_prev[sl] = m_one[ar, path[sl, 0]]
        # x^(1) is a one-step removal: reuse it rather than evaluating it again.
        traj[sl, 1] = P_one[ar, path[sl, 0]]
        counter.advance(yc.size * share_one)

    # Later rounds, batched over all samples.
    eye = np.eye(G, dtype=bool)
    if path_rule != "adaptive" and K > 1:
        for sl in _chunks(n, max(1, batch_size // (K - 1))):
            subsets = np.logical_or.accumulate(eye[path[sl]], axis=1)[:, 1:]
            traj[sl, 2:] = _removal_states(
                predict_proba,
                A[sl],
                b,
                gi,
                subsets,
                batch_size,
                C,
                f"the removal path of rows {sl.start}..{sl.stop - 1} of X",
            )
            counter.advance((sl.stop - sl.start) * (1 - share_one))
    elif path_rule == "adaptive":
        removed = np.zeros((n, G), dtype=bool)
        removed[np.arange(n), path[:, 0]] = True
        for k in range(2, K + 1):
            R = G - k + 1
            for sl in _chunks(n, max(1, batch_size // R)):
                rs = removed[sl]
                ar = np.arange(rs.shape[0])
                rem = np.nonzero(~rs)[1].reshape(-1, R)  # remaining groups, declared order
                Pk = _removal_states(
                    predict_proba,
                    A[sl],
                    b,
                    gi,
                    rs[:, None, :] | eye[rem],
                    batch_size,
                    C,
                    f"step {k} of the adaptive path of rows {sl.start}..{sl.stop - 1} of X",
                )
                mk = class_margin(Pk, y[sl, None])
                j = np.argmax(m_prev[sl, None] - mk, axis=1)
                g = rem[ar, j]
                rs[ar, g] = True
                path[sl, k - 1], traj[sl, k], m_prev[sl] = g, Pk[ar, j], mk[ar, j]
                counter.advance((sl.stop - sl.start) * (1 - share_one) * R / rows_later)

    traj_pred = predicted_class(traj)
    traj_margin = class_margin(traj, y[:, None])
    m0 = traj_margin[:, 0]
    collapse, rcma = _collapse_terms(traj_margin, depth)
    flips = traj_pred[:, 1:] != y[:, None]
    k_star = np.where(flips.any(axis=1), np.argmax(flips, axis=1) + 1, depth + 1)
    ops = {
        op: OperatorTrace(
            name=op,
            severities=lam.copy(),
            unit_names=gi.names if op == "attenuate_single" else ("all",),
            margins=op_arrays[op][0],
            preds=op_arrays[op][1],
            flipped=op_arrays[op][2],
        )
        for op in protocol.operators
    }
    lambda_stars = np.column_stack([tr.lambda_star for tr in ops.values()]) if ops else np.zeros((n, 0))
    fds, u, degradation = fds_from_components(rcma, k_star, lambda_stars, protocol.weights)

    result = None
    if search != "none":
        result = run_search(
            predict_proba,
            A,
            y,
            gi,
            b,
            depth,
            protocol,
            search,
            batch_size=batch_size,
            n_classes=n_classes,
            counter=counter,
        )

    names = np.array(gi.names, dtype=object)
    columns: dict[str, Any] = {
        "pred": y.astype(np.int64),
        "confidence": clip_renormalize(traj[:, 0]).max(axis=1),
        "margin": m0,
        "flip_budget": k_star.astype(np.int64),
        "flipped": k_star <= depth,
        "rcma": rcma,
        "fds": fds,
        "u": u,
        "one_step_max": drops.max(axis=1),
        "degradation": degradation,
        "path": names[path].tolist(),
        "path_margins": traj_margin.tolist(),
    }
    for j, op in enumerate(ops):
        columns[f"lambda_star_{op}"] = lambda_stars[:, j]
    if result is not None:
        columns.update(_search_columns(result))
    table = pd.DataFrame(columns, index=pd.RangeIndex(n) if index is None else index)
    return CertificateSet(
        table=table,
        protocol=protocol,
        group_names=gi.names,
        group_columns=gi.columns,
        baseline=b,
        fingerprint=fingerprint,
        depth=depth,
        path_rule=path_rule,
        order=order_names,
        path_idx=path,
        traj_proba=traj,
        traj_pred=traj_pred,
        traj_margin=traj_margin,
        collapse=collapse,
        drops=drops,
        operators=ops,
        search=result,
        probe_proba=probe_proba,
    )


def _search_columns(search: FlipSearchResult) -> dict[str, np.ndarray]:
    """The table columns of a flip search: ``flip_budget_exact`` (float, NaN = undecided under
    the cap) and/or ``flip_budget_beam`` (int), by its method."""
    columns = {}
    if search.method in ("exact", "both"):
        columns["flip_budget_exact"] = search.k_exact
    if search.method in ("beam", "both"):
        columns["flip_budget_beam"] = search.k_beam.astype(np.int64)
    return columns


# --------------------------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class VerificationReport:
    """Outcome of :func:`verify`.

    Attributes
    ----------
    ok : bool
        ``verdict != "differs"``.
    fingerprint_expected, fingerprint_actual : str
    n_samples : int
    mismatches : DataFrame
        One row per (sample, field) that differs beyond the tolerances: ``position``,
        ``index``, ``field``, ``expected`` (bundle), ``actual`` (recomputed). Array fields show
        the sample's whole sub-array; a shape disagreement is reported once with
        ``position = -1``.
    rtol, atol : float
        Tolerances used for floating-point fields (``|a - e| <= atol + rtol * max(|e|, scale)``,
        ``scale`` the sample's margin size for fields computed from differences of margins;
        see :func:`verify`).
    verdict : {"identical", "within_tolerance", "differs"}
        ``identical``: same fingerprint and every field bit-equal (same machine, same model).
        ``within_tolerance``: every discrete field equal, every float field and the model's
        fingerprint-probe probabilities within ``rtol``/``atol`` (another CPU's kernels, or a
        fingerprint whose 6-decimal rounding fell the other way). ``differs``: anything else.
    max_abs_diff : float
        Largest absolute difference over the finite float entries of every field (0.0 when
        all are bit-equal).
    max_diff_field : str or None
        The field holding it.
    probe_max_abs_diff : float or None
        Largest absolute difference of the fingerprint-probe probabilities; ``None`` when the
        bundle predates stored probe values.
    """

    ok: bool
    fingerprint_expected: str
    fingerprint_actual: str
    n_samples: int
    mismatches: pd.DataFrame
    rtol: float
    atol: float
    verdict: str = "differs"
    max_abs_diff: float = 0.0
    max_diff_field: str | None = None
    probe_max_abs_diff: float | None = None

    @property
    def fingerprint_match(self) -> bool:
        return self.fingerprint_expected == self.fingerprint_actual

    @property
    def fields(self) -> list[str]:
        """Names of the fields that differ, sorted."""
        return sorted(set(self.mismatches["field"]))

    def __str__(self) -> str:
        largest = (
            f"largest difference {self.max_abs_diff:.3g} in {self.max_diff_field}"
            if self.max_diff_field is not None and self.max_abs_diff > 0
            else "no float difference"
        )
        tol = f"rtol={self.rtol:g}, atol={self.atol:g}"
        if self.verdict == "identical":
            return (
                f"Certificate bundle verified: {self.n_samples} samples, identical, "
                f"fingerprint {self.fingerprint_actual[:12]}."
            )
        if self.verdict == "within_tolerance":
            fp = (
                "same fingerprint"
                if self.fingerprint_match
                else f"fingerprint hash differs ({self.fingerprint_expected[:12]} vs {self.fingerprint_actual[:12]}) "
                f"but the probe probabilities agree within {self.probe_max_abs_diff:.3g}"
            )
            return f"Certificate bundle verified within tolerance ({tol}): {self.n_samples} samples, {largest}; {fp}."
        parts = []
        if not self.fingerprint_match:
            why = (
                "the bundle stores no probe values to tell rounding from another model"
                if self.probe_max_abs_diff is None
                else f"probe probabilities differ by up to {self.probe_max_abs_diff:.3g}"
            )
            parts.append(
                f"fingerprint differs ({self.fingerprint_expected[:12]} vs {self.fingerprint_actual[:12]}; {why})"
            )
        if len(self.mismatches):
            parts.append(f"{len(self.mismatches)} (sample, field) mismatches beyond {tol} in {', '.join(self.fields)}")
        return "Certificate bundle does NOT verify: " + "; ".join(parts) + f"; {largest}."


def _comparable_fields(cs: CertificateSet) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for col in cs.table.columns:
        if col == "path":
            out["table.path"] = np.array(cs.table["path"].tolist(), dtype=object).reshape(len(cs), -1)
        elif col == "path_margins":
            margins = np.array(cs.table["path_margins"].tolist(), dtype=np.float64)
            out["table.path_margins"] = margins.reshape(len(cs), -1)
        else:
            out[f"table.{col}"] = cs.table[col].to_numpy()
    for name in _ARRAY_FIELDS:
        out[name] = getattr(cs, name)
    for op, tr in cs.operators.items():
        for name in ("margins", "preds", "flipped"):
            out[f"operators.{op}.{name}"] = getattr(tr, name)
    if cs.search is not None:
        for name in ("k_exact", "exact_subset", "k_beam", "beam_subset"):
            out[f"search.{name}"] = getattr(cs.search, name)
    return out


#: Fields in margin units (differences of clipped log-probabilities, log-odds).
_MARGIN_FIELDS = ("table.margin", "table.path_margins", "table.one_step_max", "traj_margin", "drops")


def _margin_scales(cs: CertificateSet) -> dict[str, np.ndarray]:
    """Magnitudes that :func:`verify`'s ``rtol`` is relative to, beside ``|expected|``.

    A model's rounding moves each log-probability of a sample by about ``rtol`` times the
    size of the sample's margins, so a *difference* of margins (a one-step drop, a margin
    near 0) carries an error of that size, however small the difference itself is
    (cancellation: on an AVX-512 CPU a float32 torch model's drops of 1e-4 log-odds moved by
    3e-6 against a build without AVX). With ``S_i`` the largest finite ``|margin|`` or
    ``|drop|`` anywhere in sample ``i``'s certificate, each margin moves by at most about
    ``ε S_i``, and so:

    - margin fields (drops, margins, ``one_step_max``, path and operator margins): ``S_i``;
    - ``c_k = (m0 − m_k) / |m0|`` moves by ``(|δm0| + |δm_k| + |c_k| |δm0|) / |m0|``:
      ``S_i (2 + |c_k|) / |m0_i|``, elementwise;
    - ``rcma`` (the mean of the ``c_k ≥ 0``): ``S_i (2 + rcma_i) / |m0_i|``;
    - ``u = w1 rcma + …`` and ``fds`` (``dfds ≤ du``): ``w1`` times rcma's.

    Near ``m0 = 0`` these grow without bound, as the true rounding error does; a tampered
    collapse or RCMA is still caught there, by :func:`_inconsistent_rows`. Returns arrays
    of shape ``(n,)`` (per sample) or of the field's own shape.
    """
    parts = [np.abs(cs.traj_margin).reshape(len(cs), -1), np.abs(cs.drops).reshape(len(cs), -1)]
    parts += [np.abs(tr.margins).reshape(len(cs), -1) for tr in cs.operators.values()]
    stacked = np.concatenate(parts, axis=1)
    S = np.where(np.isfinite(stacked), stacked, 0.0).max(axis=1, initial=0.0)
    ratio = S / (np.abs(cs.traj_margin[:, 0]) + _EPS)
    # The claimed collapse and RCMA: verify holds them to the claim's own margins separately.
    collapse, rcma = cs.collapse, cs.table["rcma"].to_numpy(dtype=np.float64)
    collapse_scale = ratio[:, None] * (2.0 + np.where(np.isfinite(collapse), collapse, 0.0))
    rcma_scale = ratio * (2.0 + np.where(np.isfinite(rcma), rcma, 0.0))
    w1 = float(cs.protocol.weights[0])
    scales = {name: S for name in _MARGIN_FIELDS}
    scales.update({f"operators.{op}.margins": S for op in cs.operators})
    scales.update(
        {"collapse": collapse_scale, "table.rcma": rcma_scale, "table.u": w1 * rcma_scale, "table.fds": w1 * rcma_scale}
    )
    return scales


def _inconsistent_rows(cs: CertificateSet, fields: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows whose derived fields disagree with the bundle's own ``traj_margin`` / ``drops`` / ``λ*``.

    Collapse, RCMA, ``u``, FDS and the degradation term are recomputed from the claimed base
    arrays with the same code as :func:`certify` and must match to 1e-12 (only ``exp`` may
    differ in its last bit between CPUs). Without this a claim could move a derived field
    within the wide tolerance it gets near ``m0 = 0`` (:func:`_margin_scales`).
    """
    m = cs.traj_margin
    collapse, rcma = _collapse_terms(m, cs.depth)
    lam = np.column_stack([tr.lambda_star for tr in cs.operators.values()]) if cs.operators else np.zeros((len(cs), 0))
    fds, u, degradation = fds_from_components(rcma, cs.table["flip_budget"].to_numpy(), lam, cs.protocol.weights)
    derived = {
        "collapse": collapse,
        "table.rcma": rcma,
        "table.u": u,
        "table.fds": fds,
        "table.degradation": degradation,
        "table.margin": m[:, 0],
        "table.path_margins": m,
        "table.one_step_max": cs.drops.max(axis=1) if cs.drops.shape[1] else None,
    }
    out = {}
    for name, want in derived.items():
        have = fields.get(name)
        if want is None or have is None or np.shape(have) != np.shape(want):
            continue
        bad = ~np.isclose(np.asarray(have, dtype=np.float64), want, rtol=1e-12, atol=1e-12, equal_nan=True)
        rows = np.flatnonzero(bad.reshape(len(cs), -1).any(axis=1))
        if rows.size:
            out[name] = rows
    return out


def verify(
    bundle: CertificateSet | Mapping[str, Any] | str | Path,
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    batch_size: int = 65536,
    progress: Callable[[int, int], object] | None = None,
) -> VerificationReport:
    """Recompute a stored certificate set and report every field that differs.

    On the machine that wrote the bundle the recomputation is bit-identical (verdict
    ``"identical"``). On another CPU, BLAS / OpenMP / torch kernels round differently: float
    fields differ in their last bits, and the fingerprint (which hashes the probe
    probabilities rounded to 6 decimals) differs when a value sits on a rounding boundary.
    The verdict is then ``"within_tolerance"`` when every discrete field (predictions, paths,
    ``k*``, flip flags, ``λ*``) is equal and every float field and every probe probability lies
    within the declared tolerances; the report gives the largest difference.

    Parameters
    ----------
    bundle : CertificateSet, bundle dict, or path to a JSON bundle
        What is claimed. Its protocol, groups, baseline, order and search method are reused.
    predict_proba : callable
        The model to check the claim against.
    X : array-like of shape (n_samples, n_features)
        The same rows, in the same order, that were certified.
    rtol, atol : float, default=1e-5, 1e-6
        Declared tolerances for floating-point fields, ``|actual - expected| <= atol +
        rtol * max(|expected|, scale)``; ``inf``/``NaN`` must match. ``scale`` is 0 except for
        the fields computed from differences of margins, whose rounding error follows the
        size of the sample's margins rather than their own: drops and margins get the
        sample's largest ``|margin|`` or ``|drop|``, ``S``; collapse, RCMA, ``u`` and FDS
        that divided by ``|m0|`` and grown by their own size (``docs/cfc.md``). Those derived
        fields must also agree with the bundle's own margins and ``λ*`` to 1e-12, so a claim
        cannot move them within that wider tolerance. Measured for a float32 torch MLP
        between AVX-512 and no-AVX kernels: the largest difference is 0.09 of its tolerance
        (compared to their own size alone, its drops were up to 3.8 times theirs); float64
        models agree to about 1e-12. Another model's rounding may come closer to the bound.
    batch_size : int, default=65536
    progress : callable(done_rows, total_rows), optional

    Returns
    -------
    VerificationReport
    """
    if isinstance(bundle, CertificateSet):
        expected = bundle
    elif isinstance(bundle, Mapping):
        expected = _from_bundle(bundle)
    elif isinstance(bundle, (str, Path)):
        expected = CertificateSet.from_json(bundle)
    else:
        raise ValueError(f"`bundle` must be a CertificateSet, a bundle dict or a path; got {type(bundle).__name__}.")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
            raise ValueError(f"`{name}` must be a finite number >= 0; got {tol!r}.")
    A, _ = check_features(X)
    if A.shape[0] != len(expected):
        raise ValueError(f"`X` has {A.shape[0]} rows but the bundle certifies {len(expected)} samples.")
    actual = certify(
        predict_proba,
        A,
        expected.groups,
        expected.baseline,
        expected.protocol,
        order=expected.order,
        search="none" if expected.search is None else expected.search.method,
        batch_size=batch_size,
        progress=progress,
    )

    records = []
    identical = True
    max_diff, max_field = 0.0, None
    exp_fields, act_fields = _comparable_fields(expected), _comparable_fields(actual)
    scales = _margin_scales(expected)
    for field, rows in _inconsistent_rows(expected, exp_fields).items():
        identical = False
        for i in rows.tolist():
            e = exp_fields[field][i]
            records.append(
                (
                    i,
                    expected.table.index[i],
                    field,
                    e.tolist() if isinstance(e, np.ndarray) else e,
                    "inconsistent with the bundle's own traj_margin / drops / λ*",
                )
            )
    for field, E in exp_fields.items():
        Acur = act_fields.get(field)
        if Acur is None or Acur.shape != E.shape:
            identical = False
            records.append((-1, None, field, getattr(E, "shape", None), getattr(Acur, "shape", None)))
            continue
        if E.dtype.kind == "f" or Acur.dtype.kind == "f":
            e64, a64 = E.astype(np.float64), Acur.astype(np.float64)
            both = np.isfinite(e64) & np.isfinite(a64)
            close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
            if field in scales:
                scale = scales[field]
                if scale.shape != e64.shape:  # per sample
                    scale = scale.reshape((-1,) + (1,) * (e64.ndim - 1))
                with np.errstate(invalid="ignore"):
                    close |= both & (np.abs(a64 - e64) <= atol + rtol * np.maximum(np.abs(e64), scale))
            bad = ~close
            if both.any():
                diff = float(np.max(np.abs(e64[both] - a64[both])))
                if diff > max_diff:
                    max_diff, max_field = diff, field
            identical = identical and bool(np.array_equal(e64, a64, equal_nan=True))
        else:
            bad = E != Acur
        identical = identical and not bad.any()
        bad_rows = np.flatnonzero(bad.reshape(E.shape[0], -1).any(axis=1))
        for i in bad_rows.tolist():
            e, a = E[i], Acur[i]
            records.append(
                (
                    i,
                    expected.table.index[i],
                    field,
                    e.tolist() if isinstance(e, np.ndarray) else e,
                    a.tolist() if isinstance(a, np.ndarray) else a,
                )
            )
    for field in act_fields.keys() - exp_fields.keys():
        identical = False
        records.append((-1, None, field, None, act_fields[field].shape))
    mismatches = pd.DataFrame(records, columns=["position", "index", "field", "expected", "actual"])

    probe_diff, probe_ok = None, False
    if expected.probe_proba is not None and expected.probe_proba.shape == actual.probe_proba.shape:
        probe_diff = float(np.max(np.abs(expected.probe_proba - actual.probe_proba), initial=0.0))
        probe_ok = bool(np.isclose(actual.probe_proba, expected.probe_proba, rtol=rtol, atol=atol).all())
    fingerprint_match = expected.fingerprint == actual.fingerprint
    if fingerprint_match and identical:
        verdict = "identical"
    elif mismatches.empty and (fingerprint_match or probe_ok):
        verdict = "within_tolerance"
    else:
        verdict = "differs"
    return VerificationReport(
        verdict != "differs",
        expected.fingerprint,
        actual.fingerprint,
        len(expected),
        mismatches,
        float(rtol),
        float(atol),
        verdict,
        max_diff,
        max_field,
        probe_diff,
    )
