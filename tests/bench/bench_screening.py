"""Screening speed: the vectorised code against naive loops, measured side by side in one run.

Run with ``python tests/bench/bench_screening.py`` (about half a minute). Prints seconds per
unit of work and the speed-up ratio; nothing is asserted.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.imaging.demo import load_demo_pool  # noqa: E402
from core.paired import screening  # noqa: E402


def _timed(fn, repeat=3):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_class_bootstrap(n=400, draws=200, classes=10):
    rng = np.random.default_rng(0)
    risk = rng.normal(size=n).round(1)  # ties, as with real scores
    failed = rng.random(n) < 0.3
    labels = rng.integers(0, classes, n)
    mult = np.stack([np.bincount(d, minlength=classes) for d in rng.integers(0, classes, (draws, classes))])
    weights = mult[:, labels].astype(np.float64)

    def vectorised():
        screening._coverage_rows(risk, np.broadcast_to(failed, weights.shape).astype(float), weights, 0.2)
        screening._auroc_rows(risk, np.broadcast_to(failed, weights.shape).astype(float), weights)

    def loop():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for w in mult[:, labels]:
                rr, ff = np.repeat(risk, w), np.repeat(failed, w)
                screening.failure_coverage(rr, ff, 0.2)
                screening.failure_auroc(rr, ff)

    return _timed(vectorised), _timed(loop, repeat=1)


def bench_scores(pool, n_images=150):
    probes, clean = pool.probes, pool.clean
    real = pool.records[pool.records["source"] == "simulated-recapture"]

    def vectorised():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            screening.screening_scores(probes, clean, outcomes=real)

    cc = clean[(clean["split"] == "eval") & (clean["pred"] == clean["true_label"])].head(n_images)

    def loop():  # U and ret only, one pandas filter per image
        for row in cc.itertuples(index=False):
            mine = probes[
                (probes["model"] == row.model)
                & (probes["record_id"] == row.record_id)
                & (probes["kind"] == "corruption")
            ]
            _ = mine["true_prob"].mean(), (mine["pred"] == row.true_label).mean()

    n_scored = int(((clean["split"] == "eval") & (clean["pred"] == clean["true_label"])).sum())
    return _timed(vectorised, repeat=2) / n_scored, _timed(loop, repeat=1) / n_images, n_scored


def main():
    fast, slow = bench_class_bootstrap()
    print(
        f"class bootstrap, 200 draws x 400 images, coverage + AUROC: vectorised {fast * 1e3:.1f} ms, "
        f"loop over draws {slow * 1e3:.0f} ms, ratio {slow / fast:.0f}x"
    )
    pool = load_demo_pool()
    fast, slow, n = bench_scores(pool)
    print(
        f"screening_scores on the demo pool ({n} scored images, all scores incl. A3, g fits): "
        f"{fast * 1e6:.0f} us/image; naive per-image pandas loop for U and ret alone: {slow * 1e6:.0f} us/image, "
        f"ratio {slow / fast:.0f}x"
    )


if __name__ == "__main__":
    main()
