"""The Calibration page: the verdict on one subset's expected calibration error."""

from __future__ import annotations

from collections.abc import Mapping

from core.viz.verdicts import lowest_wins

__all__ = ["ece_verdict"]


def ece_verdict(ece: Mapping[str, float], *, labels: Mapping[str, str], bats_eta: float) -> str:
    """Which calibration method has the lowest ECE (lower = better), then the others in order.

    Parameters
    ----------
    ece : mapping method -> float
        Finite ECE of each method on one subset.
    labels : mapping method -> str
        The methods' display names.
    bats_eta : float
        The η BATS chose; at 0 BATS is plain global temperature scaling, and the verdict says so.

    Examples
    --------
    >>> ece_verdict({"raw": 0.07, "bats": 0.05}, labels={"raw": "uncalibrated", "bats": "BATS"}, bats_eta=0.0)
    '**BATS** has the lowest ECE (0.0500); then uncalibrated 0.0700. BATS chose η = 0 here, which is plain global temperature scaling.'
    """
    verdict = lowest_wins(ece, metric="ECE", labels=labels)
    if bats_eta == 0:
        verdict += " BATS chose η = 0 here, which is plain global temperature scaling."
    return verdict
