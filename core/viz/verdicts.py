"""One-sentence verdicts that name the winner of a side-by-side comparison (ties as ties)."""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["lowest_wins"]


def lowest_wins(
    values: Mapping[str, float], *, metric: str, labels: Mapping[str, str] | None = None, digits: int = 4
) -> str:
    """Name the option(s) with the lowest ``metric`` (lower = better), then the others in order.

    Parameters
    ----------
    values : mapping option -> value
        Finite values; at least one. Order breaks exact ties in the listing only.
    metric : str
        Name of the metric as shown ("ECE").
    labels : mapping option -> str, optional
        Display names (default: the keys).
    digits : int
        Decimals shown. Options within half a unit of the last shown decimal of the best one
        tie: a reader could not tell them apart from the numbers.

    Examples
    --------
    >>> lowest_wins({"raw": 0.0717, "temperature": 0.0486, "bats": 0.0511}, metric="ECE")
    '**temperature** has the lowest ECE (0.0486); then bats 0.0511, raw 0.0717.'
    >>> lowest_wins({"a": 0.04276, "b": 0.04276}, metric="ECE")
    '**a** and **b** tie for the lowest ECE (0.0428).'
    """
    if not values:
        raise ValueError("`values` is empty; pass at least one option.")
    bad = {k: v for k, v in values.items() if not math.isfinite(float(v))}
    if bad:
        raise ValueError(f"`values` must be finite; got {bad!r}.")
    if digits < 0:
        raise ValueError(f"`digits` must be >= 0; got {digits}.")
    names = dict(labels or {})
    order = list(values)
    ranked = sorted(order, key=lambda k: (float(values[k]), order.index(k)))
    best_value = float(values[ranked[0]])
    tie = 0.5 * 10.0**-digits
    best = [k for k in ranked if float(values[k]) - best_value <= tie]
    shown = " and ".join(f"**{names.get(k, k)}**" for k in best)
    verb = f"tie for the lowest {metric}" if len(best) > 1 else f"has the lowest {metric}"
    rest = ", ".join(f"{names.get(k, k)} {float(values[k]):.{digits}f}" for k in ranked if k not in best)
    return f"{shown} {verb} ({best_value:.{digits}f})" + (f"; then {rest}." if rest else ".")
