"""Benchmark of large audits: time and peak memory against rows, and Dask scale-out.

    python tests/bench/bench_scale.py            # 10k, 30k, 100k, 300k rows
    python tests/bench/bench_scale.py --full     # ... and 1M rows
    python tests/bench/bench_scale.py --model hist_gb --sizes 10000,100000

Data: synthetic rows drawn (seeded) from a smoothed class-conditional bootstrap fitted to the
bundled credit_data (:mod:`core.scale.synthetic`), written as Parquet in 64k-row groups.
One task (preprocessing + model, fitted on 20k synthetic rows) is certified on every size, so
only certification is timed.

Every measurement runs in a fresh child process, sampled every 20 ms with psutil for the
summed resident memory of its whole process tree (driver + Dask workers); the driver's own
peak is also read from ``os.wait4``. Printed side by side in one run:

1. rows -> seconds, rows/s, peak RSS, and ratios to the smallest size (time per row and
   peak memory should stay flat: linear time, memory bounded by --chunk-rows);
2. at one size: 1 process (1 thread) vs 2 Dask worker processes (1 thread each), vs
   1 process with default threads, and a control of two independent single-thread processes
   run at once on half the rows each (the parallel speed-up the machine offers at that
   moment, the ceiling for Dask), as ratios. "certify s" excludes starting the local cluster
   and importing the libraries on its workers (a long-lived cluster has done both); "with
   start s" includes them.

This machine may be shared with other jobs while the benchmark runs: the numbers are then
noisy, and the ratios are what to read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _child(args) -> None:
    """Run one certification and print its timing as JSON (executed in a fresh process)."""
    from contextlib import nullcontext

    from core.scale.certify import certify_dataset, load_certify_task
    from core.scale.cluster import connect

    task = load_certify_task(args.task)
    cluster = connect(workers=args.workers) if args.engine == "dask" else nullcontext()
    t0 = time.perf_counter()
    with cluster as client:
        if client is not None:
            # Workers of a long-lived cluster have their libraries imported already; loading
            # the task once on each does it here, so the timed part is certification.
            client.run(load_certify_task, args.task)
        t1 = time.perf_counter()
        run = certify_dataset(args.data, args.out, task, chunk_rows=args.chunk_rows, engine=args.engine, client=client)
        t2 = time.perf_counter()
    print(json.dumps({"rows": run.result.n_rows, "certify_s": t2 - t1, "total_s": time.perf_counter() - t0}))


def _tree_rss(proc) -> int:
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _measure(cmd: list[str], env: dict[str, str]) -> dict:
    import psutil

    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    proc = psutil.Process(child.pid)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss(proc))
            except psutil.Error:
                return
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    done.set()
    sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({child.returncode}): {' '.join(cmd)}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["peak_tree_mb"] = peak[0] / 2**20
    result["peak_driver_mb"] = usage.ru_maxrss / 1024  # KiB on Linux
    return result


def _run(
    work: Path,
    task: Path,
    data: Path,
    *,
    chunk_rows: int,
    engine: str = "local",
    workers: int = 0,
    single_thread: bool = True,
) -> dict:
    out = Path(tempfile.mkdtemp(dir=work, prefix="out-"))
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--task",
        str(task),
        "--data",
        str(data),
        "--out",
        str(out / "o"),
        "--chunk-rows",
        str(chunk_rows),
        "--engine",
        engine,
        "--workers",
        str(workers),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(_SINGLE_THREAD if single_thread else {})}
    return _measure(cmd, env)


def _side_by_side(work: Path, task: Path, halves: list[Path], *, chunk_rows: int) -> dict:
    """Two independent local runs at once, one per half; time = the slower, memory = the sum."""
    results: list[dict] = [{}, {}]

    def one(k: int) -> None:
        results[k] = _run(work, task, halves[k], chunk_rows=chunk_rows)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "certify_s": max(r["certify_s"] for r in results),
        "total_s": max(r["total_s"] for r in results),
        "peak_tree_mb": sum(r["peak_tree_mb"] for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,30000,100000,300000", help="comma-separated row counts")
    parser.add_argument("--full", action="store_true", help="add 1,000,000 rows")
    parser.add_argument("--model", default="logreg", help="model to certify (default logreg; hist_gb is ~10x slower)")
    parser.add_argument("--chunk-rows", type=int, default=25_000)
    parser.add_argument("--dask-rows", type=int, default=100_000, help="size of the 1 process vs 2 workers run")
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the comparison (best is kept)")
    parser.add_argument("--workdir", help="where to write data and outputs (default: a temporary folder)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--engine", default="local", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return

    from core.scale.certify import FitSpec, fit_certify_task, save_certify_task
    from core.scale.sources import open_source
    from core.scale.synthetic import fit_synthetic, write_synthetic
    from core.tabular.datasets import load_dataset

    sizes = sorted({int(s) for s in args.sizes.split(",")} | ({1_000_000} if args.full else set()))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_scale-"))
    work.mkdir(parents=True, exist_ok=True)
    gen = fit_synthetic(load_dataset("credit_data"))
    largest = max(sizes + [args.dask_rows])
    t = time.perf_counter()
    data = {
        n: write_synthetic(gen, work / f"credit_{n}.parquet", n, seed=0) for n in sorted(set(sizes + [args.dask_rows]))
    }
    print(f"synthetic data: {len(data)} files up to {largest:,} rows in {time.perf_counter() - t:.1f} s ({work})")
    fit_path = write_synthetic(gen, work / "fit.parquet", 20_000, seed=1)
    task = fit_certify_task(open_source(fit_path), FitSpec(target="Status", model=args.model, fit_rows=20_000))
    task_path = save_certify_task(task, work / "task.zip")
    print(
        f"model {args.model}, {len(task.groups)} groups, depth {task.protocol.resolved_depth(len(task.groups))}, "
        f"{len(task.protocol.severities)} severities; chunk {args.chunk_rows:,} rows; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}\n"
    )

    print("1) local engine, 1 process, 1 thread: time and peak memory against rows")
    header = f"{'rows':>10} {'seconds':>9} {'rows/s':>9} {'us/row':>8} {'peak MB':>8} {'time/row ratio':>15} {'peak ratio':>11}"
    print(header)
    base = None
    points = []
    for n in sizes:
        r = _run(work, task_path, data[n], chunk_rows=args.chunk_rows)
        per_row = r["certify_s"] / n
        base = base or (per_row, r["peak_tree_mb"])
        points.append((n, r["certify_s"]))
        print(
            f"{n:>10,} {r['certify_s']:>9.2f} {n / r['certify_s']:>9.0f} {per_row * 1e6:>8.1f} "
            f"{r['peak_tree_mb']:>8.0f} {per_row / base[0]:>15.2f} {r['peak_tree_mb'] / base[1]:>11.2f}"
        )
    if len(points) >= 2:
        import numpy as np

        slope = np.polyfit(np.log([p[0] for p in points]), np.log([p[1] for p in points]), 1)[0]
        print(f"log-log slope of seconds against rows: {slope:.3f} (1 = linear)")

    n = args.dask_rows
    halves = [write_synthetic(gen, work / f"half{k}_{n}.parquet", n // 2, seed=10 + k) for k in range(2)]
    print(
        f"\n2) {n:,} rows: one process against two Dask worker processes "
        f"(best of {args.repeat}, runs interleaved). The control runs two independent single-thread "
        "processes at once on half the rows each: the speed-up this machine allows right now."
    )
    configs = {
        "local, 1 process, 1 thread": {},
        "local, 1 process, default threads": {"single_thread": False},
        "dask, 2 workers x 1 thread": {"engine": "dask", "workers": 2},
    }
    control = "control: 2 plain processes, half each"
    best: dict[str, dict] = {}

    def keep(label: str, r: dict) -> None:
        if label not in best or r["certify_s"] < best[label]["certify_s"]:
            best[label] = r

    for _ in range(args.repeat):
        for label, kwargs in configs.items():
            keep(label, _run(work, task_path, data[n], chunk_rows=args.chunk_rows, **kwargs))
        keep(control, _side_by_side(work, task_path, halves, chunk_rows=args.chunk_rows))
    one = best["local, 1 process, 1 thread"]
    print(f"{'run':<40} {'certify s':>10} {'with start s':>13} {'peak MB':>8} {'speed-up':>9}")
    for label, r in best.items():
        print(
            f"{label:<40} {r['certify_s']:>10.2f} {r['total_s']:>13.2f} {r['peak_tree_mb']:>8.0f} "
            f"{one['certify_s'] / r['certify_s']:>9.2f}"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (other jobs on this machine add noise)")


if __name__ == "__main__":
    main()
