"""Benchmark: certify() against the model calls it cannot avoid, and against naive loops.

Run:  python tests/bench/bench_certify.py [--n 5000] [--numeric 8] [--naive-samples 20] [--repeats 3]
      python tests/bench/bench_certify.py --rows-only --numeric 6     (10 groups, rows only)

Prints, measured side by side in one run:

0. the model rows certify() evaluates / the rows of SPEC A.3's cost line
   ``1 + G + |Λ|(G + 1) + (K − 1)`` per sample (static; adaptive: ``Σ_{k=2..K} (G − k + 1)``
   path rows), counted by a wrapper around predict_proba, and time(certify) / time(certify
   evaluating every row of the cost line), interleaved (rows equal by construction are
   evaluated once; the certificates are bit-identical, see tests/cfc/test_cfc_row_reuse.py);
1. time(certify) / time(ONE predict_proba call on the same total number of stacked rows)
   (target <= 1.5): the overhead of building stacked inputs, chunking and scoring;
   plus the split of one certify() run into time inside predict_proba and time in the engine;
2. the speed-up of certify() over a naive per-sample implementation that calls predict_proba
   once per stressed input (Algorithm 1 of the paper, one sample at a time), and over a
   per-sample implementation that stacks one sample's inputs into one call. The naive loops run
   on a subset of samples and are extrapolated linearly to n (said so in the output).

Data: a synthetic credit-like table (``--numeric`` numeric columns, 2 with missing values, 4
categoricals) preprocessed by a ColumnTransformer, so the groups are raw-origin groups traced
from it (``numeric + 4`` groups: 12 by default); model: HistGradientBoostingClassifier.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.cfc import Protocol, baseline_vector, certify, raw_origin_groups  # noqa: E402
from core.cfc.scores import class_margin, predicted_class  # noqa: E402


def make_data(n: int, seed: int = 0, numeric: int = 8) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, numeric))
    df = pd.DataFrame(num, columns=[f"num{i}" for i in range(numeric)])
    df.loc[rng.random(n) < 0.1, "num0"] = np.nan
    df.loc[rng.random(n) < 0.05, "num1"] = np.nan
    levels = [3, 4, 5, 6]
    for j, k in enumerate(levels):
        df[f"cat{j}"] = rng.choice([f"l{v}" for v in range(k)], size=n)
    logit = (
        num[:, 0]
        + num[:, 1] * num[:, 2]
        - 0.5 * num[:, 3]
        + (df["cat0"] == "l1") * 1.5
        - (df["cat2"] == "l4") * 1.0
        + 0.5 * rng.normal(size=n)
    )
    return df, (logit > 0).astype(int).to_numpy()


def preprocessor(numeric: int = 8) -> ColumnTransformer:
    num_cols = [f"num{i}" for i in range(numeric)]
    return ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(add_indicator=True), StandardScaler()), num_cols),
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), [f"cat{j}" for j in range(4)]),
        ]
    )


def naive_per_forward_pass(f, X, groups, xbar, protocol):
    """SPEC A.3 one sample at a time, one predict_proba call per stressed input."""
    cols = list(groups.values())
    G, K = len(cols), protocol.resolved_depth(len(cols))
    out = []
    for x in X:
        p0 = f(x[None])
        y = int(predicted_class(p0)[0])
        m0 = class_margin(p0, [y])[0]
        drops = []
        for c in cols:
            z = x.copy()
            z[c] = xbar[c]
            drops.append(m0 - class_margin(f(z[None]), [y])[0])
        path = np.argsort(-np.asarray(drops), kind="stable")[:K]
        z = x.copy()
        k_star = K + 1
        for k, g in enumerate(path, start=1):
            z[cols[g]] = xbar[cols[g]]
            if predicted_class(f(z[None]))[0] != y and k_star == K + 1:
                k_star = k
        lam_star = []
        for units in ([[g] for g in range(G)], [list(range(G))]):
            first = np.inf
            for lam in protocol.severities:
                for unit in units:
                    z = x.copy()
                    for g in unit:
                        z[cols[g]] = (1 - lam) * x[cols[g]] + lam * xbar[cols[g]]
                    if predicted_class(f(z[None]))[0] != y and first == np.inf:
                        first = lam
            lam_star.append(first)
        out.append((k_star, lam_star))
    return out


def per_sample_stacked(X, groups, xbar, protocol, f):
    """certify() called once per sample: every stressed input of a sample in one call."""
    for i in range(len(X)):
        certify(f, X[i : i + 1], groups, xbar, protocol)


def audit_rows(dataset: str, model_name: str) -> None:
    """Model rows of the default audit (``python -m core audit --dataset D --model M``).

    Counts the rows its certify calls evaluate (a wrapper around the audit's ``certify``)
    against SPEC A.3's formula, and every row the audit's model evaluates (a wrapper around its
    ``predict_proba``: certificates, label channel, everything), with and without the reuse of
    equal rows.
    """
    import core.tabular.audit as audit_module
    from core.tabular.audit import run_audit

    real_certify, real_make_model = audit_module.certify, audit_module.make_model
    certify_rows, audit_total = {}, {}
    for reuse in (True, False):
        used, formula, every, calls = [0], [0], [0], []

        def counted_certify(predict_proba, X, groups, baseline, protocol=None, **kwargs):
            protocol = Protocol() if protocol is None else protocol
            G = len(groups)
            K, L = protocol.resolved_depth(G), len(protocol.severities)
            units = sum(G if op == "attenuate_single" else 1 for op in protocol.operators)
            later = K - 1 if protocol.path == "static" else sum(G - k + 1 for k in range(2, K + 1))
            formula[0] += len(X) * (1 + G + L * units + later)
            before = used[0]

            def counting(Z):
                used[0] += len(Z)
                return predict_proba(Z)

            out = real_certify(counting, X, groups, baseline, protocol, _reuse_equal_rows=reuse, **kwargs)
            calls.append((len(X), G, K, used[0] - before - 8))
            return out

        def counted_model(*args, **kwargs):
            estimator = real_make_model(*args, **kwargs)
            predict_proba = estimator.predict_proba  # bound now, fitted later: the same object

            def counting(Z):
                every[0] += len(Z)
                return predict_proba(Z)

            estimator.predict_proba = counting
            return estimator

        audit_module.certify, audit_module.make_model = counted_certify, counted_model
        try:
            run_audit(dataset, model=model_name, seed=0)
        finally:
            audit_module.certify, audit_module.make_model = real_certify, real_make_model
        certify_rows[reuse], audit_total[reuse] = used[0] - 8 * len(calls), every[0]
        if reuse:
            shapes = ", ".join(f"{n} rows x G = {G}, K = {K}" for n, G, K, _ in calls)
            print(f"audit {dataset} + {model_name}: certify calls on {shapes}")
            print(
                f"[audit] RATIO certify model rows used / SPEC A.3 formula rows = {certify_rows[True]:,} / "
                f"{formula[0]:,} = {certify_rows[True] / formula[0]:.4f} (fingerprint probes aside)"
            )
    assert certify_rows[False] == formula[0], (certify_rows[False], formula[0])
    print(
        f"[audit] RATIO every model row of the audit, reused / all evaluated = {audit_total[True]:,} / "
        f"{audit_total[False]:,} = {audit_total[True] / audit_total[False]:.4f}"
    )


def timed(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="samples to certify")
    ap.add_argument("--naive-samples", type=int, default=20, help="samples for the naive per-pass loop")
    ap.add_argument("--stacked-samples", type=int, default=100, help="samples for the per-sample stacked loop")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numeric", type=int, default=8, help="numeric columns (groups = numeric + 4); at least 4")
    ap.add_argument("--rows-only", action="store_true", help="print the model rows (part 0) and stop")
    ap.add_argument(
        "--audit",
        metavar="DATASET:MODEL",
        default=None,
        help="also count the certify rows of that default audit, e.g. credit_data:hist_gb",
    )
    ap.add_argument(
        "--omp-threads",
        type=int,
        default=None,
        help="limit OpenMP threads (HistGradientBoosting); default: the library's choice",
    )
    args = ap.parse_args(argv)
    if args.omp_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.omp_threads, user_api="openmp")
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; OpenMP threads: "
        f"{args.omp_threads or 'default'}"
    )

    if args.audit is not None:
        dataset, _, model_name = args.audit.partition(":")
        audit_rows(dataset, model_name or "hist_gb")
    if args.numeric < 4:
        ap.error(f"--numeric must be at least 4 (the label uses num0..num3); got {args.numeric}")
    df, y = make_data(2 * args.n, numeric=args.numeric)
    pre = preprocessor(args.numeric).fit(df.iloc[: args.n])
    X_train = pre.transform(df.iloc[: args.n])
    X_test = pre.transform(df.iloc[args.n :])
    groups = raw_origin_groups(pre)
    xbar = baseline_vector(X_train, groups, "mean")
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(X_train, y[: args.n])
    protocol = Protocol()
    print(
        f"n = {args.n} samples, d = {X_test.shape[1]} transformed columns, G = {len(groups)} raw-origin groups, "
        f"K = {protocol.resolved_depth(len(groups))}, |Λ| = {len(protocol.severities)}, model = HistGradientBoosting"
    )

    G, K, L = len(groups), protocol.resolved_depth(len(groups)), len(protocol.severities)
    for rule in ("static", "adaptive"):
        proto = Protocol(path=rule)
        rows, calls = [0], [0]

        def counting(Z):
            rows[0] += len(Z)
            calls[0] += 1
            return model.predict_proba(Z)

        later = K - 1 if rule == "static" else sum(G - k + 1 for k in range(2, K + 1))
        formula = args.n * (1 + G + L * (G + 1) + later)
        probe = 8  # the fingerprint probe, once per call
        certify(counting, X_test, groups, xbar, proto, _reuse_equal_rows=False)
        assert rows[0] - probe == formula, (rows[0] - probe, formula)
        rows[0], calls[0] = 0, 0
        certify(counting, X_test, groups, xbar, proto)
        total_rows = rows[0]
        print(
            f"\n[{rule}] RATIO model rows used / SPEC A.3 formula rows = {total_rows - probe:,} / {formula:,} = "
            f"{(total_rows - probe) / formula:.4f} ({(total_rows - probe) / args.n:.2f} instead of "
            f"{formula // args.n} per sample, plus the 8-row fingerprint probe)"
        )
        if args.rows_only:
            continue
        t_reuse, t_every = np.inf, np.inf
        for _ in range(args.repeats):
            t_every = min(
                t_every,
                timed(lambda: certify(model.predict_proba, X_test, groups, xbar, proto, _reuse_equal_rows=False), 1),
            )
            t_reuse = min(t_reuse, timed(lambda: certify(model.predict_proba, X_test, groups, xbar, proto), 1))
        print(
            f"[{rule}] RATIO time(certify) / time(certify evaluating every formula row) = "
            f"{t_reuse:.2f} s / {t_every:.2f} s = {t_reuse / t_every:.3f} (interleaved, best of {args.repeats})"
        )
        stacked = np.resize(X_test, (total_rows, X_test.shape[1]))  # same rows, repeated
        # Interleave the measurements so machine load affects them alike.
        t_cert, t_pred, t_chunked = np.inf, np.inf, np.inf
        for _ in range(args.repeats):
            t_cert = min(t_cert, timed(lambda: certify(model.predict_proba, X_test, groups, xbar, proto), 1))
            t_pred = min(t_pred, timed(lambda: model.predict_proba(stacked), 1))
            t_chunked = min(
                t_chunked,
                timed(lambda: [model.predict_proba(stacked[s : s + 65536]) for s in range(0, total_rows, 65536)], 1),
            )
        print(
            f"[{rule}] certify: {t_cert:.2f} s for {total_rows:,} stacked rows in {calls[0]} predict_proba calls "
            f"({total_rows / args.n:.0f} per sample)"
        )
        print(f"[{rule}] one predict_proba call on {total_rows:,} rows: {t_pred:.2f} s")
        print(
            f"[{rule}] RATIO time(certify) / time(one predict_proba on the same rows) = {t_cert / t_pred:.2f} "
            "(target <= 1.5)"
        )
        print(
            f"[{rule}] control, model only: the same rows in calls of 65,536 rows / one call = "
            f"{t_chunked / t_pred:.2f} (what chunking alone costs this model on this machine)"
        )
        inside = [0.0]

        def timed_model(Z):
            t0 = time.perf_counter()
            out = model.predict_proba(Z)
            inside[0] += time.perf_counter() - t0
            return out

        t0 = time.perf_counter()
        certify(timed_model, X_test, groups, xbar, proto)
        t_all = time.perf_counter() - t0
        print(
            f"[{rule}] in the same certify run: {inside[0]:.2f} s inside predict_proba, {t_all - inside[0]:.2f} s in "
            f"the engine itself ({(t_all - inside[0]) / t_all:.0%} of {t_all:.2f} s)"
        )

        if rule == "static":
            sub = X_test[: args.naive_samples]
            t_naive = timed(lambda: naive_per_forward_pass(model.predict_proba, sub, groups, xbar, proto), 1)
            est_naive = t_naive / len(sub) * args.n
            sub2 = X_test[: args.stacked_samples]
            t_stack = timed(lambda: per_sample_stacked(sub2, groups, xbar, proto, model.predict_proba), 1)
            est_stack = t_stack / len(sub2) * args.n
            print(
                f"[{rule}] naive loop, one call per forward pass: {t_naive:.2f} s for {len(sub)} samples, "
                f"EXTRAPOLATED to n = {args.n}: {est_naive:.0f} s -> certify is {est_naive / t_cert:.0f}x faster"
            )
            print(
                f"[{rule}] per-sample loop, one stacked call per sample and round: {t_stack:.2f} s for "
                f"{len(sub2)} samples, EXTRAPOLATED to n = {args.n}: {est_stack:.0f} s -> certify is "
                f"{est_stack / t_cert:.0f}x faster"
            )


if __name__ == "__main__":
    main()
