"""Defaults that more than one module, command or page states: one definition each.

The certificate protocol's defaults are the fields of :class:`core.cfc.protocol.Protocol`
(``Protocol()``) and the label channel's, ``τ_p = 0.90`` and ``τ_κ = 0.50`` included, those of
:class:`core.cfc.stressors.LabelChannel` (``LabelChannel()``); the names below are the
defaults that belong to neither class. The CLIs, the app and docs/*.md read them
from here.

Examples
--------
>>> LEVELS, COVERAGES, CLEAN_COVERAGE
(('I0', 'Ik', 'I5'), (0.6, 0.7, 0.8, 0.9, 1.0), 0.8)
"""

from __future__ import annotations

__all__ = ["CLEAN_COVERAGE", "COVERAGES", "LEVELS"]

#: Information levels of the paired identified intervals (SPEC B.3), lowest first.
LEVELS: tuple[str, ...] = ("I0", "Ik", "I5")
#: Clean-development coverages of the perturbed-side rejection policies (SPEC B.4).
COVERAGES: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9, 1.0)
#: Coverage of the fixed clean threshold the policies are compared against (SPEC B.4).
CLEAN_COVERAGE: float = 0.8
