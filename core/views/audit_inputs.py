"""What an audit is made from, as the Overview, the sidebar and the Model comparison offer it:
the bundled datasets and models, a user's table read as a dataset, the raw column behind each
model input, and the protocol form (its rules, and the protocol it applies).

The names are the engines' own (:mod:`core.tabular`, :mod:`core.cfc.protocol`), re-exported so
that a page reaches them through the views layer only; :func:`protocol_from_form` is the form's
one computation step.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.cfc.protocol import BASELINE_RULES, GROUPING_RULES, OPERATORS, PATH_RULES, Protocol
from core.tabular.datasets import DATASET_NAMES, DEFAULT_DATASET, load_user_data
from core.tabular.models import MODEL_NAMES
from core.tabular.spaces import feature_origins
from core.views.formatting import parse_float_list

__all__ = [
    "BASELINE_RULES",
    "DATASET_NAMES",
    "DEFAULT_DATASET",
    "GROUPING_RULES",
    "MODEL_NAMES",
    "OPERATORS",
    "PATH_RULES",
    "Protocol",
    "feature_origins",
    "load_user_data",
    "protocol_from_form",
]


def protocol_from_form(
    *,
    grouping: str,
    baseline: str,
    depth: int | str,
    operators: Sequence[str],
    severities: str,
    weights: Sequence[float],
    path: str,
    merge_threshold: float,
) -> Protocol:
    """The :class:`~core.cfc.protocol.Protocol` the Overview's protocol form describes.

    ``depth`` is ``"auto"`` (the protocol's own choice) or a number of removal steps;
    ``severities`` is the typed text of the severity grid ("0.1, 0.2"). A bad value raises the
    ``ValueError`` of :func:`~core.views.formatting.parse_float_list` or of ``Protocol``.

    Examples
    --------
    >>> p = protocol_from_form(grouping="raw_origin", baseline="median", depth="auto",
    ...     operators=["attenuate_all"], severities="0.5, 1", weights=(1, 0, 0), path="static",
    ...     merge_threshold=0.9)
    >>> p.depth is None, p.severities, p.weights
    (True, (0.5, 1.0), (1.0, 0.0, 0.0))
    """
    return Protocol(
        grouping=grouping,
        baseline=baseline,
        depth=None if depth == "auto" else int(depth),
        operators=tuple(operators),
        severities=parse_float_list(severities, "severities"),
        weights=tuple(weights),
        path=path,
        merge_threshold=float(merge_threshold),
    )
