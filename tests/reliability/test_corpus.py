"""Issue 13's corpus: every bad input gets a clear, specific refusal; legal input is accepted.

Each case asserts the exit code, that the message names the file / row / column / value, that
no traceback reaches the user, and the state of the output folder afterwards (see
:mod:`corpus` for the verdicts).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from corpus import CASES, run  # noqa: E402


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 120


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, tmp_path):
    verdict, outcome, why = run(case, tmp_path)
    assert verdict == "clear", f"{verdict}: {why}\n--- message ---\n{outcome.message}\n{outcome.traceback or ''}"
    assert "Traceback" not in outcome.message
    if case.code == 2 and case.call is None:
        # One error line (argparse adds its usage block above its own), not a wall of text.
        errors = [line for line in outcome.message.splitlines() if "error:" in line]
        assert len(errors) == 1, outcome.message
