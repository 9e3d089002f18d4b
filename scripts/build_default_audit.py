"""Regenerate the precomputed default audits in ``assets/default_audit`` (or check them).

    python scripts/build_default_audit.py [--check] [--out DIR]

Runs ``run_audit`` on the default dataset, seed 0 and the default protocol for every model of
:data:`core.tabular.shipped.SHIPPED_MODELS`, saves each as a saved-audit folder with its
``source.json`` (:func:`core.tabular.shipped.audit_source`), drops the model file ``_task.zip`` (the
dashboard refits the model on the first live panel, :class:`core.tabular.shipped.RefitModel`)
and ``certificates.csv`` (the Parquet file holds the same table), then replaces the output
folder in one rename. ``--check`` only says whether every shipped audit still matches its source in
this environment (exit 1 if not): run it after changing a library version or the audit code.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.atomic import atomic_folder  # noqa: E402
from core.scale.certify import TASK_FILE  # noqa: E402
from core.tabular.audit import run_audit  # noqa: E402
from core.tabular.datasets import DEFAULT_DATASET, load_dataset  # noqa: E402
from core.tabular.shipped import (  # noqa: E402
    SHIPPED_DIR,
    SHIPPED_MODELS,
    SOURCE_FILE,
    audit_source,
    shipped_folder,
    source_fingerprint,
    write_source,
)

SEED = 0


def check(root: Path) -> int:
    dataset = load_dataset(DEFAULT_DATASET)
    stale = 0
    for model in SHIPPED_MODELS:
        folder = shipped_folder(DEFAULT_DATASET, model, SEED, root=root)
        expected = audit_source(dataset, model=model, seed=SEED)
        stored = json.loads((folder / SOURCE_FILE).read_text()) if (folder / SOURCE_FILE).is_file() else None
        if stored is None:
            print(f"{folder.name}: missing")
            stale += 1
        elif stored["fingerprint"] != source_fingerprint(expected):
            differ = sorted(k for k in expected if stored["source"].get(k) != expected[k])
            print(f"{folder.name}: stale (differs in {', '.join(differ)})")
            stale += 1
        else:
            print(f"{folder.name}: matches ({stored['fingerprint'][:12]})")
    return 1 if stale else 0


def build(out: Path) -> None:
    dataset = load_dataset(DEFAULT_DATASET)
    with atomic_folder(out) as tmp:  # replaces the old folder in one rename, or leaves it untouched
        for model in SHIPPED_MODELS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                result = run_audit(dataset, model=model, seed=SEED)
            folder = result.save(shipped_folder(DEFAULT_DATASET, model, SEED, root=tmp))
            (folder / "certificates.csv").unlink()
            (folder / TASK_FILE).unlink()
            write_source(folder, audit_source(dataset, model=model, seed=SEED))
            size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            print(f"{folder.name}: {size / 1e6:.2f} MB, fingerprint {result.fingerprint[:12]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the shipped audits against their sources")
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR, help=f"output folder (default {SHIPPED_DIR})")
    args = parser.parse_args()
    if args.check:
        return check(args.out)
    build(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
