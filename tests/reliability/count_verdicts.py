"""Count the corpus verdicts on the checkout this script is run from.

``python tests/reliability/count_verdicts.py [--list]`` prints ``{"clear": n, ...}`` (and, with
``--list``, every case that is not clear). Run it from an older checkout, with this folder
copied in, for the "before" numbers of issue 13.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path.cwd()))
from corpus import CASES, VERDICTS, run  # noqa: E402


def main() -> None:
    counts = dict.fromkeys(VERDICTS, 0)
    rows = []
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            verdict, _, why = run(case, Path(tmp))
        counts[verdict] += 1
        rows.append((case.id, verdict, why))
    if "--list" in sys.argv:
        for row in rows:
            if row[1] != "clear":
                print(f"{row[1]:10s} {row[0]:45s} {row[2][:150]}")
    print(json.dumps({"cases": len(CASES), **counts}))


if __name__ == "__main__":
    main()
