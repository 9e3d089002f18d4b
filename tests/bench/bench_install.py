"""Install benchmark: the base ``pip install reliability-audit`` beside ``pip install explainerdashboard``.

    python tests/bench/bench_install.py [--rounds 3] [--baseline explainerdashboard] [--keep DIR]

Measures, in one run and side by side:

- **ours**: ``pip install <this checkout>`` (the base: no extra; pip builds the wheel with
  hatchling, as ``pip install .`` does) into a fresh ``python -m venv``;
- **baseline**: ``pip install explainerdashboard`` (another dashboard for auditing tabular
  models) into another fresh venv;

each with the machine's own pip configuration (``pip config list``: its indexes, find-links,
constraints and HTTP cache), the venv's own pip. A first round, untimed for the ratio, fills
pip's cache for both (it is printed: downloads and wheel builds); then ``--rounds`` timed
rounds alternate which side goes first, each side in a new venv. Only the ``pip install``
command is timed (creating the venv is the same for both and left out). Printed: every time,
the medians and their ratio (goal: ours <= 1.0 x the baseline), the size of each
site-packages on disk (``du``, minus the empty venv's) and how many distributions each
install brought.

Then, in the last base venv, from a folder outside the checkout: ``import core; from core
import audit_model``, ``reliability-audit --help``, a small scikit-learn pipeline audited
through the Python API, a skops round trip (``core.tabular.persist``), a model of an extra
refused with the extra's name, and no optional library (torch, xgboost, …) installed or in
``sys.modules``. The bench fails (exit 1) when one of these checks fails; the timing goal is
reported, not asserted. Not collected by pytest; figures in ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Optional top-level modules no base install may have (core.optional.OPTIONAL_MODULES).
OPTIONAL = ("torch", "xgboost", "lightgbm", "catboost", "dask", "distributed", "mlflow", "shap", "skl2onnx")

#: Run in the base venv, from a folder outside the checkout.
CHECK = textwrap.dedent(
    """
    import importlib.util, sys, time
    t0 = time.perf_counter()
    import core
    from core import audit_model
    t_import = time.perf_counter() - t0
    import numpy as np, pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], n)})
    frame["y"] = np.where(frame["a"] + 0.5 * frame["b"] + (frame["c"] == "x") + rng.normal(0, 0.5, n) > 0.5, "yes", "no")
    train, test = frame.iloc[:300], frame.iloc[300:]
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["c"]), ("num", StandardScaler(), ["a", "b"])])
    pipe = Pipeline([("pre", pre), ("model", LogisticRegression())]).fit(train.drop(columns="y"), train["y"])
    t0 = time.perf_counter()
    result = audit_model(pipe, train, test, target="y")
    t_audit = time.perf_counter() - t0
    assert len(result.certificates) == len(test), len(result.certificates)
    assert result.groups == {"c": [0, 1, 2], "a": [3], "b": [4]}, result.groups

    from core.tabular.persist import dump_skops, load_skops
    t0 = time.perf_counter()
    back = load_skops(dump_skops(pipe), trusted=[])
    t_skops = time.perf_counter() - t0
    assert (back.predict_proba(test.drop(columns="y")) == pipe.predict_proba(test.drop(columns="y"))).all()

    from core.optional import MissingExtraError
    from core.tabular.models import make_model
    try:
        make_model("fr_resmlp", seed=0)
    except MissingExtraError as exc:
        assert "install reliability-audit[torch] to use the fr_resmlp model" in str(exc), exc
    else:
        raise AssertionError("fr_resmlp built without torch")

    OPTIONAL = %r
    loaded = sorted(set(OPTIONAL) & {m.split(".")[0] for m in sys.modules})
    installed = sorted(m for m in OPTIONAL if importlib.util.find_spec(m) is not None)
    assert not loaded, f"optional libraries imported: {loaded}"
    assert not installed, f"optional libraries installed by the base: {installed}"
    print(f"import core + audit_model {t_import:.2f} s; audit of 100 rows {t_audit:.2f} s; skops round trip {t_skops:.2f} s")
    """
    % (OPTIONAL,)
)


def _env() -> dict[str, str]:
    # Nothing may lead a venv's Python back to the checkout or to this interpreter's packages.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def _run(args: list[str], *, cwd: Path, check: bool = True, timeout: float = 1800) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def _site_packages(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    return site


def _du(path: Path) -> int:
    """Bytes on disk (``du -s --block-size=1``: allocated blocks, as a user's disk sees them)."""
    return int(
        subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True).stdout.split()[0]
    )


def _distributions(venv: Path) -> int:
    return len(list(_site_packages(venv).glob("*.dist-info")))


def _install(side: str, target: str, work: Path, label: str) -> dict:
    venv = work / f"{side}-{label}"
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    empty = _du(_site_packages(venv))
    empty_dists = _distributions(venv)
    t0 = time.perf_counter()
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", target], cwd=work)
    seconds = time.perf_counter() - t0
    return {
        "venv": venv,
        "seconds": seconds,
        "bytes": _du(_site_packages(venv)) - empty,
        "distributions": _distributions(venv) - empty_dists,
    }


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds after the cache-filling one")
    parser.add_argument("--baseline", default="explainerdashboard", help="what the baseline side installs")
    parser.add_argument("--keep", type=Path, help="build the venvs here and keep them (default: a temporary folder)")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_install_"))
    work.mkdir(parents=True, exist_ok=True)
    sides = {"ours": str(ROOT), "baseline": args.baseline}
    print(f"python {sys.version.split()[0]}; pip config:")
    print(textwrap.indent(_run([sys.executable, "-m", "pip", "config", "list"], cwd=work).stdout.strip(), "  "))
    print(f"load average at start: {os.getloadavg()}")
    try:
        runs: dict[str, list[dict]] = {side: [] for side in sides}
        for rnd in range(args.rounds + 1):
            order = list(sides) if rnd % 2 == 0 else list(reversed(sides))
            for side in order:
                run = _install(side, sides[side], work, f"r{rnd}")
                tag = "cache-filling" if rnd == 0 else f"round {rnd}"
                print(
                    f"{tag:>13} {side:>8}: {run['seconds']:6.1f} s, {_mb(run['bytes'])}, "
                    f"{run['distributions']} distributions (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
                runs[side].append(run)
                last = run["venv"]
                if not (side == "ours" and rnd == args.rounds):
                    shutil.rmtree(last, ignore_errors=True)
        timed = {side: [r["seconds"] for r in runs[side][1:]] for side in sides}
        med = {side: statistics.median(v) for side, v in timed.items()}
        ratio = med["ours"] / med["baseline"]
        print()
        for side in sides:
            last = runs[side][-1]
            print(
                f"{side:>8} ({sides[side]}): median {med[side]:.1f} s of {', '.join(f'{s:.1f}' for s in timed[side])}; "
                f"first (filling the cache) {runs[side][0]['seconds']:.1f} s; site-packages +{_mb(last['bytes'])}, "
                f"{last['distributions']} distributions"
            )
        verdict = "goal met" if ratio <= 1.0 else "goal NOT met"
        print(f"ratio ours / baseline (medians): {ratio:.2f} ({verdict}: <= 1.0)")
        print(f"size ratio ours / baseline: {runs['ours'][-1]['bytes'] / runs['baseline'][-1]['bytes']:.2f}")

        base = runs["ours"][-1]["venv"]
        elsewhere = work / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        done = _run([str(base / "bin" / "python"), "-c", CHECK], cwd=elsewhere)
        print("base venv:", done.stdout.strip())
        done = _run([str(base / "bin" / "reliability-audit"), "--help"], cwd=elsewhere)
        assert done.stdout.startswith("usage: reliability-audit"), done.stdout[:200]
        print("base venv: `reliability-audit --help` ok; no optional library installed or imported")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
