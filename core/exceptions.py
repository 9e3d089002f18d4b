"""The warning classes of the audit tool, in one hierarchy.

Every warning the tool raises on legal but degenerate data is an :class:`AuditWarning`, so a
caller (a test, a CLI, a page) mutes or records exactly these and nothing else::

    warnings.simplefilter("ignore", UndefinedMetricWarning)   # not every UserWarning

``AuditWarning`` derives from :class:`UserWarning`, so code that already filters
``UserWarning`` keeps working.

Examples
--------
>>> issubclass(UndefinedMetricWarning, AuditWarning), issubclass(AuditWarning, UserWarning)
(True, True)
"""

from __future__ import annotations

__all__ = [
    "AuditWarning",
    "ConstantFeatureWarning",
    "DatasetNoteWarning",
    "DeprecatedOptionWarning",
    "ModelFitWarning",
    "UndefinedMetricWarning",
    "UndefinedTargetWarning",
]


class AuditWarning(UserWarning):
    """Base class of every warning the audit tool raises."""


class UndefinedMetricWarning(AuditWarning):
    """A metric is undefined on legal data (e.g. no positive sample); the value is ``NaN``."""


class UndefinedTargetWarning(AuditWarning):
    """A paired target (a bound, a rate) is undefined on legal data (e.g. ``n = 0``); ``NaN``."""


class DatasetNoteWarning(AuditWarning):
    """A dataset was loaded with a change worth knowing (rows dropped, a column that looks like an id)."""


class ConstantFeatureWarning(AuditWarning):
    """A feature column holds one value in every row (kept, but it cannot move any prediction)."""


class ModelFitWarning(AuditWarning):
    """An image model may not fit its images: they are resampled or their channels converted,
    or its clean accuracy is near chance (:mod:`core.imaging.fit`); the probe still runs."""


class DeprecatedOptionWarning(DeprecationWarning):
    """A command-line option was given under its old name; the message names the new one.

    The old name keeps working for one release; ``reliability-audit`` prints the warning as one
    ``warning: ...`` line (not an :class:`AuditWarning`: it concerns the command, not the data).
    """
