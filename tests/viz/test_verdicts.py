"""The calibration verdict (``core.viz.verdicts.lowest_wins``): the lowest named, ties said."""

from __future__ import annotations

import pytest

from core.viz.verdicts import lowest_wins


def test_calibration_verdict_names_the_lowest_even_when_it_is_not_bats():
    # The numbers: global temperature 0.0486 beat BATS 0.0511 overall.
    line = lowest_wins(
        {"uncalibrated": 0.0717, "temperature": 0.0486, "bats": 0.0511},
        metric="ECE",
        labels={"uncalibrated": "uncalibrated", "temperature": "global temperature", "bats": "BATS"},
    )
    assert line == "**global temperature** has the lowest ECE (0.0486); then BATS 0.0511, uncalibrated 0.0717."


def test_calibration_verdict_ties_and_errors():
    assert lowest_wins({"a": 0.04276, "b": 0.042764, "c": 0.05}, metric="ECE").startswith("**a** and **b** tie")
    assert "tie" not in lowest_wins({"a": 0.0427, "b": 0.0428}, metric="ECE")
    with pytest.raises(ValueError, match="finite"):
        lowest_wins({"a": float("nan")}, metric="ECE")
    with pytest.raises(ValueError, match="empty"):
        lowest_wins({}, metric="ECE")
