"""Counterfactual fragility certificates of many samples at once: :func:`certify` (SPEC A.3).

For a sample ``x`` with original prediction ``y = ŷ(x)`` and margin ``m(x)`` (SPEC A.3):

```
δ_g(x) = m(x) − m_y(R(x, {g}))                one-step margin drop, for every group g
π_x    = groups sorted by δ_g descending      (ties: declared group order)
x^(k)  = R(x, {π_x(1) … π_x(k)})              k = 0 … K      (x^(0) = x)
k*(x)  = min{k ∈ 1..K : ŷ(x^(k)) ≠ y},   K+1 if no flip within depth K
λ*_P(x) = min{λ ∈ Λ : ŷ(P_λ(x)) ≠ y},    +∞ if none      (per operator P)
```

- removal path ``π_x``: ``static`` sorts the groups once by ``δ_g`` (descending, ties in the
  declared group order); ``adaptive`` picks at each step the remaining group with the largest
  drop from the current state; a fixed ``order`` (evaluation baselines) overrides both;
- the trajectory ``x^(k)`` is kept with its probabilities, predictions and original-class
  margins ``m_y(x^(k))``;
- the ranking head (collapse ``c_k``, RCMA, ``u``, FDS) is :mod:`core.cfc.fds`, the
  fingerprint :mod:`core.cfc.fingerprint`, the result :mod:`core.cfc.certificate_set`.

Orientation: ``rcma``, ``u``, ``fds``, ``one_step_max`` and ``degradation`` are **risk scores
(larger = more fragile)**; ``flip_budget`` and ``lambda_star_*`` are the other way round
(smaller = more fragile).

Forward passes per sample (SPEC A.3's cost line): ``1 + G + L·(G + 1)`` in the first round
(original input, one-step removals, both operators over the grid of ``L`` severities), then
``K − 1`` path states for the static rule (``x^(1)`` is a one-step removal already evaluated),
or ``G − k + 1`` candidates at each step ``k = 2 … K`` for the adaptive rule. All of them are
stacked and evaluated in ``predict_proba`` calls of at most ``batch_size`` rows; no Python loop
runs over samples.

Some of those inputs are equal by construction, and the model sees each of them once: at
λ = 1 a single-group attenuation ``0·x + 1·x̄`` is that group's removal and the all-group one
is ``x̄`` itself, wherever ``0·x + 1·x̄`` is bitwise ``x̄`` on the attenuated columns
(``0·x + (−0.0)`` is ``+0.0`` for ``x ≥ 0``: such inputs are evaluated), and a path state
that removes every group (``K = G``) is ``x̄``. The model's output on ``x̄`` is one row per
call. With the default protocol that saves ``G + 1`` rows per sample, ``G + 2`` when
``K = G``: 114 rows instead of 125 on a 10-group table. Every stored value is still the
model's output on that very input, so the certificates are bit for bit those of evaluating
every row (``_reuse_equal_rows=False``) for a model whose output for a row does not depend on
the other rows of the call, the premise of chunking too; a BLAS-backed model may move in its
last bits, as it does between batch sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.cfc.certificate_set import CertificateSet, OperatorTrace, search_columns
from core.cfc.fds import collapse_terms, fds_from_components
from core.cfc.fingerprint import fingerprint_with_probe
from core.cfc.operators import (
    GroupIndex,
    PredictProba,
    ProgressCounter,
    attenuated,
    check_baseline,
    check_features,
    check_order,
    operator_units,
    predict_batched,
    stack_attenuations,
    stack_removals,
)
from core.cfc.protocol import Protocol
from core.cfc.scores import class_margin, clip_renormalize, predicted_class
from core.cfc.search import check_method, run_search
from core.validation import check_batch_size

__all__ = ["SearchOption", "certify"]

SearchOption = Literal["none", "exact", "beam", "both"]


class _ModelCalls:
    """The model as :func:`certify` calls it: validated, in calls of at most ``batch_size`` rows.

    With ``reuse``, the inputs equal by construction to another one are not sent again (see
    the module docstring); the model's output on ``x̄`` (``baseline_proba``) is then evaluated
    once per call of certify, as the first row of the first stack when ``wants_baseline``.
    """

    def __init__(
        self,
        predict_proba: PredictProba,
        *,
        batch_size: int,
        n_classes: int,
        reuse: bool,
        wants_baseline: bool,
    ) -> None:
        self.predict_proba = predict_proba
        self.batch_size = batch_size
        self.n_classes = n_classes
        self.reuse = reuse
        self.wants_baseline = reuse and wants_baseline
        self.baseline_proba: np.ndarray | None = None

    def __call__(self, Z: np.ndarray, *, what: str) -> np.ndarray:
        """Probabilities (m, C) of the stacked rows ``Z`` (m, d)."""
        return predict_batched(self.predict_proba, Z, batch_size=self.batch_size, n_classes=self.n_classes, what=what)


def _round_one(
    model: _ModelCalls,
    Xc: np.ndarray,
    b: np.ndarray,
    gi: GroupIndex,
    lam: np.ndarray,
    units: dict[str, np.ndarray],
    what: str,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The input, its G one-step removals and every operator state of a chunk, in one stack.

    ``units[op]`` are the group subsets (U, G) the operator attenuates. Returns the
    probabilities of the inputs (nc, C), of the one-step removals (nc, G, C) and of every
    operator (nc, U, L, C).

    With reuse, the stack leaves out the attenuations at λ = 1: a unit of one group ``g`` takes
    the probabilities of the removal ``R(x, {g})``, a unit of every group those of ``x̄``,
    wherever ``0·x + 1·x̄`` is bitwise ``x̄`` on the unit's columns; the other samples' λ = 1
    inputs go to the end of the stack and are evaluated.
    """
    nc, d = Xc.shape
    G, L, C = gi.n_groups, lam.size, model.n_classes
    at_one = np.flatnonzero(lam == 1.0) if model.reuse else np.empty(0, dtype=np.intp)
    stacked = np.ones(L, dtype=bool)
    stacked[at_one] = False
    lam_stacked = lam[stacked]
    colmasks = {op: gi.column_mask(u) for op, u in units.items()}
    # (nc, U) per operator: its λ = 1 input is not the removal's / x̄'s bit for bit.
    unequal: dict[str, np.ndarray] = {}
    if at_one.size:
        at_one_rows = attenuated(Xc, b, lam[at_one])[:, 0]  # the λ = 1 values stack_attenuations writes
        differs = at_one_rows.view(np.uint64) != b.view(np.uint64)
        unequal = {op: np.any(differs[:, None, :] & m[None], axis=2) for op, m in colmasks.items()}
    add_baseline = model.wants_baseline and model.baseline_proba is None
    n_unequal = sum(int(u.sum()) for u in unequal.values())
    R1 = 1 + G + lam_stacked.size * sum(u.shape[0] for u in units.values())
    start = int(add_baseline)
    F = np.empty((start + nc * R1 + n_unequal, d))
    if add_baseline:
        F[0] = b
    Z = F[start : start + nc * R1].reshape(nc, R1, d)
    Z[:, 0] = Xc
    stack_removals(Xc, b, gi.column_mask(np.eye(G, dtype=bool)), out=Z[:, 1 : 1 + G])
    spans = {}
    off = 1 + G
    for op, m in colmasks.items():
        U = m.shape[0]
        # Splitting one axis of a slice is always a view, so this writes straight into Z.
        stack_attenuations(Xc, b, lam_stacked, m, out=Z[:, off : off + lam_stacked.size * U].reshape(nc, -1, U, d))
        spans[op] = (off, U)
        off += lam_stacked.size * U
    pos = start + nc * R1
    for op, rows in unequal.items():
        i, j = np.nonzero(rows)
        F[pos : pos + i.size] = np.where(colmasks[op][j], at_one_rows[i], Xc[i])
        pos += i.size

    P = model(F, what=what)
    if add_baseline:
        model.baseline_proba = P[0]
    Pz = P[start : start + nc * R1].reshape(nc, R1, C)
    P_one = Pz[:, 1 : 1 + G]
    ops = {}
    pos = start + nc * R1
    for op, (o, U) in spans.items():
        block = Pz[:, o : o + lam_stacked.size * U].reshape(nc, -1, U, C)  # stacked λ-major
        if at_one.size:
            full = np.empty((nc, L, U, C))
            full[:, stacked] = block
            for j, unit in enumerate(units[op]):
                full[:, at_one[0], j] = model.baseline_proba if unit.all() else P_one[:, int(np.argmax(unit))]
            i, j = np.nonzero(unequal[op])
            full[i, at_one[0], j] = P[pos : pos + i.size]
            pos += i.size
            block = full
        ops[op] = block.transpose(0, 2, 1, 3)  # reported unit-major, one margin curve per unit
    return Pz[:, 0], P_one, ops


def _removal_states(
    model: _ModelCalls, Xc: np.ndarray, b: np.ndarray, gi: GroupIndex, subsets: np.ndarray, what: str
) -> np.ndarray:
    """Probabilities (nc, t, C) of ``R(x_i, S_ij)`` for group-subset masks ``subsets`` (nc, t, G)."""
    nc, t = subsets.shape[:2]
    Z = stack_removals(Xc, b, gi.column_mask(subsets))
    return model(Z.reshape(nc * t, Xc.shape[1]), what=what).reshape(nc, t, model.n_classes)


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
    _reuse_equal_rows: bool = True,
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
    order_names, order_idx = check_order(order, gi, depth)
    path_rule = "fixed" if order_names is not None else protocol.path
    fingerprint, probe_proba = fingerprint_with_probe(predict_proba, protocol, gi, b, order_names)
    n_classes = probe_proba.shape[1]

    n, G, K, C = A.shape[0], gi.n_groups, depth, n_classes
    lam = np.asarray(protocol.severities, dtype=np.float64)
    units = {op: operator_units(op, G) for op in protocol.operators}
    # Removing every group (K = G) and attenuating every group at λ = 1 give x̄ itself.
    baseline_states = 1 < K == G or (lam[-1] == 1.0 and any(u.all(axis=1).any() for u in units.values()))
    # `_reuse_equal_rows=False` evaluates every row SPEC's cost line counts (the tests' reference).
    model = _ModelCalls(
        predict_proba, batch_size=batch_size, n_classes=C, reuse=_reuse_equal_rows, wants_baseline=baseline_states
    )
    last_is_baseline = model.reuse and K == G
    rows_one = 1 + G + lam.size * sum(u.shape[0] for u in units.values())
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
        for op, m in units.items()
    }

    # Round 1, chunked so that one chunk's stack holds about batch_size rows.
    for sl in _chunks(n, max(1, batch_size // rows_one)):
        what = f"the stressed inputs of rows {sl.start}..{sl.stop - 1} of X"
        P0, P_one, ops_p = _round_one(model, A[sl], b, gi, lam, units, what)
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
        steps = K - 1 - last_is_baseline  # x^(2) … x^(K), x^(K) = x̄ when it removes every group
        if last_is_baseline:
            traj[:, K] = model.baseline_proba
        for sl in _chunks(n, max(1, batch_size // max(1, steps))):
            if steps:
                subsets = np.logical_or.accumulate(eye[path[sl]], axis=1)[:, 1 : 1 + steps]
                traj[sl, 2 : 2 + steps] = _removal_states(
                    model, A[sl], b, gi, subsets, f"the removal path of rows {sl.start}..{sl.stop - 1} of X"
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
                if last_is_baseline and k == G:  # the one candidate left removes every group: x̄
                    Pk = np.broadcast_to(model.baseline_proba, (rs.shape[0], 1, C))
                else:
                    Pk = _removal_states(
                        model,
                        A[sl],
                        b,
                        gi,
                        rs[:, None, :] | eye[rem],
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
    collapse, rcma = collapse_terms(traj_margin, depth)
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
        columns.update(search_columns(result))
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
