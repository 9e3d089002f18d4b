"""Naive one-sample-at-a-time twins of the certificate engine, written straight from SPEC A.2–A.4.

Deliberately simple: Python loops, one ``predict_proba`` call per stressed input, the margin
through the full ``p̃ → z̃`` formula. Nothing here imports ``core.cfc``.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

EPS = 1e-8


# --------------------------------------------------------------------------------------------
# Models whose output for a row never depends on the other rows of the batch
# --------------------------------------------------------------------------------------------
def softmax_linear(W: np.ndarray, c: np.ndarray):
    """``p = softmax(x W + c)`` evaluated row-independently (no BLAS, fixed summation order)."""
    d, C = W.shape

    def predict_proba(Z):
        Z = np.asarray(Z, dtype=np.float64)
        logits = np.broadcast_to(c, (Z.shape[0], C)).copy()
        for j in range(d):
            logits += Z[:, j : j + 1] * W[j]
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        total = e[:, 0].copy()
        for k in range(1, C):
            total += e[:, k]
        return e / total[:, None]

    return predict_proba


def random_problem(seed: int, *, n: int, d: int, n_groups: int, n_classes: int, tie_rows: bool = True):
    """Random softmax-linear model, data, grouping (random partition) and baseline.

    With ``tie_rows`` some rows copy the baseline on a random group, so that group's removal
    changes nothing and its one-step drop ties exactly with other such groups at 0.
    """
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=1.5, size=(d, n_classes))
    c = rng.normal(scale=0.5, size=n_classes)
    X = rng.normal(size=(n, d))
    baseline = rng.normal(scale=0.3, size=d)
    owner = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, size=d - n_groups)])
    rng.shuffle(owner)
    groups = {f"g{g}": np.flatnonzero(owner == g).tolist() for g in range(n_groups)}
    if tie_rows:
        for i in range(0, n, 3):
            g = int(rng.integers(n_groups))
            cols = groups[f"g{g}"]
            X[i, cols] = baseline[cols]
    return softmax_linear(W, c), X, groups, baseline


# --------------------------------------------------------------------------------------------
# SPEC A.2
# --------------------------------------------------------------------------------------------
def spec_margin(p: np.ndarray, y: int) -> float:
    pt = np.maximum(p, 1e-12)
    pt = pt / pt.sum()
    z = np.log(pt) - np.mean(np.log(pt))
    return float(z[y] - max(z[c] for c in range(len(z)) if c != y))


def spec_pred(p: np.ndarray) -> int:
    best = 0
    for c in range(1, len(p)):
        if p[c] > p[best]:
            best = c
    return best


# --------------------------------------------------------------------------------------------
# SPEC A.3, one sample
# --------------------------------------------------------------------------------------------
def _removed(x, xbar, cols_of, subset):
    out = x.copy()
    for g in subset:
        for c in cols_of[g]:
            out[c] = xbar[c]
    return out


def _attenuated(x, xbar, cols_of, subset, lam):
    out = x.copy()
    for g in subset:
        for c in cols_of[g]:
            out[c] = (1.0 - lam) * x[c] + lam * xbar[c]
    return out


def naive_certificate(f, x, groups, xbar, *, depth, severities, operators, weights, path_rule="static", order=None):
    """Certificate of one sample; ``order`` is a list of group names (fixed path)."""
    names = list(groups)
    cols_of = [groups[n] for n in names]
    G = len(names)

    def proba(z):
        return np.asarray(f(z[None, :]), dtype=np.float64)[0]

    p0 = proba(x)
    y = spec_pred(p0)
    m = spec_margin(p0, y)
    delta = [m - spec_margin(proba(_removed(x, xbar, cols_of, [g])), y) for g in range(G)]

    if order is not None:
        path = [names.index(o) for o in order[:depth]]
    elif path_rule == "static":
        path = sorted(range(G), key=lambda g: (-delta[g], g))[:depth]
    else:
        path = []
        m_cur = m
        for _ in range(depth):
            best, best_drop, best_m = None, None, None
            for g in range(G):
                if g in path:
                    continue
                mg = spec_margin(proba(_removed(x, xbar, cols_of, path + [g])), y)
                drop = m_cur - mg
                if best is None or drop > best_drop:
                    best, best_drop, best_m = g, drop, mg
            path.append(best)
            m_cur = best_m

    traj_p = [proba(_removed(x, xbar, cols_of, path[:k])) for k in range(depth + 1)]
    traj_pred = [spec_pred(p) for p in traj_p]
    traj_m = [spec_margin(p, y) for p in traj_p]
    k_star = depth + 1
    for k in range(1, depth + 1):
        if traj_pred[k] != y:
            k_star = k
            break
    collapse = [max(0.0, (m - traj_m[k]) / (abs(m) + EPS)) for k in range(depth + 1)]
    rcma = sum(collapse) / (depth + 1)

    lambda_star = {}
    for op in operators:
        lambda_star[op] = math.inf
        for lam in sorted(severities):
            if op == "attenuate_single":
                flipped = any(spec_pred(proba(_attenuated(x, xbar, cols_of, [g], lam))) != y for g in range(G))
            else:
                flipped = spec_pred(proba(_attenuated(x, xbar, cols_of, range(G), lam))) != y
            if flipped:
                lambda_star[op] = lam
                break
    w1, w2, w3 = weights
    deg = (sum(1.0 / (v + EPS) for v in lambda_star.values() if v < math.inf) / len(operators)) if operators else 0.0
    u = w1 * rcma + w2 * (1.0 / k_star) + w3 * deg
    return {
        "pred": y,
        "confidence": float(np.max(np.maximum(p0, 1e-12) / np.maximum(p0, 1e-12).sum())),
        "margin": m,
        "drops": delta,
        "path": [names[g] for g in path],
        "path_margins": traj_m,
        "traj_proba": traj_p,
        "traj_pred": traj_pred,
        "flip_budget": k_star,
        "collapse": collapse,
        "rcma": rcma,
        "lambda_star": lambda_star,
        "degradation": deg,
        "u": u,
        "fds": 1.0 - math.exp(-u),
    }


# --------------------------------------------------------------------------------------------
# SPEC A.4, one sample
# --------------------------------------------------------------------------------------------
def brute_force_exact(f, x, groups, xbar, *, depth):
    """(k_exact, lowest-margin flipping subset of that size, first in combination order on ties)."""
    names = list(groups)
    cols_of = [groups[n] for n in names]
    p0 = np.asarray(f(x[None, :]), dtype=np.float64)[0]
    y = spec_pred(p0)
    for k in range(1, depth + 1):
        best, best_m = None, math.inf
        for S in combinations(range(len(names)), k):
            p = np.asarray(f(_removed(x, xbar, cols_of, S)[None, :]), dtype=np.float64)[0]
            if spec_pred(p) != y:
                mS = spec_margin(p, y)
                if mS < best_m:
                    best, best_m = S, mS
        if best is not None:
            return k, tuple(names[g] for g in best)
    return depth + 1, None


def naive_beam(f, x, groups, xbar, *, depth, width):
    """Beam search as SPEC A.4 words it: keep the B lowest-margin subsets; stop when a kept one flips."""
    names = list(groups)
    cols_of = [groups[n] for n in names]
    p0 = np.asarray(f(x[None, :]), dtype=np.float64)[0]
    y = spec_pred(p0)
    beam = [()]
    for k in range(1, depth + 1):
        cands, seen = [], set()
        for parent in beam:
            for g in range(len(names)):
                if g in parent:
                    continue
                S = tuple(sorted(parent + (g,)))
                if S in seen:
                    continue
                seen.add(S)
                p = np.asarray(f(_removed(x, xbar, cols_of, S)[None, :]), dtype=np.float64)[0]
                cands.append((spec_margin(p, y), len(cands), S, spec_pred(p) != y))
        cands.sort(key=lambda t: (t[0], t[1]))
        kept = cands[:width]
        for _, _, S, flips in kept:
            if flips:
                return k, tuple(names[g] for g in S)
        beam = [S for _, _, S, _ in kept]
    return depth + 1, None


def random_mlp_problem(seed: int, *, n: int, d: int, n_groups: int, n_classes: int, hidden: int = 6):
    """Like :func:`random_problem` with a one-hidden-layer tanh network: groups interact, so
    greedy paths and narrow beams miss minimal flipping subsets now and then."""
    rng = np.random.default_rng(seed)
    W1 = rng.normal(size=(d, hidden))
    b1 = rng.normal(scale=0.5, size=hidden)
    W2 = rng.normal(scale=2.0, size=(hidden, n_classes))
    head = softmax_linear(W2, rng.normal(scale=0.3, size=n_classes))

    def predict_proba(Z):
        Z = np.asarray(Z, dtype=np.float64)
        h = np.broadcast_to(b1, (Z.shape[0], hidden)).copy()
        for j in range(d):
            h += Z[:, j : j + 1] * W1[j]
        return head(np.tanh(h))

    _, X, groups, baseline = random_problem(seed, n=n, d=d, n_groups=n_groups, n_classes=n_classes, tie_rows=False)
    return predict_proba, X * 1.5, groups, baseline
