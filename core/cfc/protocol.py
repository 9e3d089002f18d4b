"""The declared audit protocol Π of a certificate (SPEC A.1).

A certificate is only meaningful relative to the protocol it was computed under, so the
protocol is a frozen, validated value object with a canonical JSON form and a stable SHA-256
``fingerprint``. Two protocols with the same canonical JSON are the same protocol.

The protocol declares *rules* (grouping rule name, baseline rule name); the concrete groups
and baseline vector are computed from the training split by :mod:`core.cfc.grouping` and
:mod:`core.cfc.baselines` and enter the certificate set's own fingerprint (see
:func:`core.cfc.certify`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from core.formats import PROTOCOL

__all__ = [
    "BASELINE_RULES",
    "DEFAULT_SEVERITIES",
    "GROUPING_RULES",
    "OPERATORS",
    "PATH_RULES",
    "BaselineRule",
    "GroupingRule",
    "OperatorName",
    "PathRule",
    "Protocol",
]

GroupingRule = Literal["raw_origin", "domain_block", "redundancy_merged"]
BaselineRule = Literal["mean", "median", "zero", "mode"]
OperatorName = Literal["attenuate_single", "attenuate_all"]
PathRule = Literal["static", "adaptive"]

GROUPING_RULES: tuple[str, ...] = get_args(GroupingRule)
BASELINE_RULES: tuple[str, ...] = get_args(BaselineRule)
OPERATORS: tuple[str, ...] = get_args(OperatorName)
PATH_RULES: tuple[str, ...] = get_args(PathRule)

DEFAULT_SEVERITIES: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_DEFAULT_DEPTH_CAP = 5
_SCHEMA = PROTOCOL.tag  # "cfc-protocol/1" (core.formats.PROTOCOL)


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"`{name}` must be one of {allowed}; got {value!r}.")
    return value


def _int_at_least(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"`{name}` must be an int >= {low}; got {value!r}.")
    return int(value)


def _float_tuple(value: Any, name: str) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"`{name}` must be a sequence of numbers; got {value!r}.")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise ValueError(f"`{name}` must contain finite numbers; got {v!r} in {tuple(value)!r}.")
        out.append(float(v))
    return tuple(out)


@dataclass(frozen=True)
class Protocol:
    """Declared counterfactual-fragility audit protocol Π (SPEC A.1, A.3, A.4).

    Parameters
    ----------
    grouping : {"raw_origin", "domain_block", "redundancy_merged"}, default="raw_origin"
        Name of the rule that built the evidence groups (see :mod:`core.cfc.grouping`).
    baseline : {"mean", "median", "zero", "mode"}, default="mean"
        Name of the rule that built the baseline vector ``x̄`` (see :mod:`core.cfc.baselines`).
    depth : int or None, default=None
        Audit depth ``K`` (removal steps). ``None`` resolves to ``min(G, 5)`` at certification
        time; an explicit depth larger than the number of groups ``G`` is an error there.
    operators : tuple of {"attenuate_single", "attenuate_all"}, default=both
        Score-channel degradation operators ℙ. Stored in the canonical order above whatever
        order they are given in. May be empty, in which case the degradation term of ``u`` is 0.
    severities : tuple of float, default=(0.1, 0.2, ..., 1.0)
        Severity grid Λ, each in ``(0, 1]``, no duplicates; stored sorted ascending.
    weights : tuple of 3 floats, default=(1/3, 1/3, 1/3)
        ``(w1, w2, w3)`` of ``u = w1·RCMA + w2/k* + w3·degradation``; non-negative, finite, not
        all zero (FDS would then be 0 everywhere and rank nothing).
    path : {"static", "adaptive"}, default="static"
        ``static`` sorts groups once by their one-step drop; ``adaptive`` re-ranks the
        remaining groups from the current state at every step.
    merge_threshold : float, default=0.7
        ``|ρ|`` threshold of the ``redundancy_merged`` grouping, in ``(0, 1]``.
    exact_cap : int, default=10000
        Exact flip search enumerates subset sizes ``1, 2, …`` only while the cumulative number
        of subsets per sample stays ``<= exact_cap``; samples left undecided get ``NaN``.
    beam_width : int, default=8
        Beam width ``B`` of the beam flip search.

    Examples
    --------
    >>> p = Protocol(depth=3, severities=(0.5, 0.25))
    >>> p.severities
    (0.25, 0.5)
    >>> p.resolved_depth(7)
    3
    >>> Protocol().resolved_depth(3)
    3
    >>> len(p.fingerprint)
    64
    """

    grouping: GroupingRule = "raw_origin"
    baseline: BaselineRule = "mean"
    depth: int | None = None
    operators: tuple[OperatorName, ...] = OPERATORS  # type: ignore[assignment]
    severities: tuple[float, ...] = DEFAULT_SEVERITIES
    weights: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3)
    path: PathRule = "static"
    merge_threshold: float = 0.7
    exact_cap: int = 10_000
    beam_width: int = 8

    def __post_init__(self) -> None:
        _choice(self.grouping, "grouping", GROUPING_RULES)
        _choice(self.baseline, "baseline", BASELINE_RULES)
        _choice(self.path, "path", PATH_RULES)
        if self.depth is not None:
            _int_at_least(self.depth, "depth", 1)

        if isinstance(self.operators, str) or not isinstance(self.operators, Iterable):
            raise ValueError(f"`operators` must be a sequence of names from {OPERATORS}; got {self.operators!r}.")
        ops = tuple(self.operators)
        for op in ops:
            _choice(op, "operators", OPERATORS)
        if len(set(ops)) != len(ops):
            raise ValueError(f"`operators` must not repeat a name; got {ops!r}.")
        # Canonical order, so that equivalent declarations share one fingerprint.
        object.__setattr__(self, "operators", tuple(op for op in OPERATORS if op in ops))

        sev = _float_tuple(self.severities, "severities")
        if not sev:
            raise ValueError("`severities` must contain at least one severity in (0, 1]; got ().")
        bad = [s for s in sev if not 0.0 < s <= 1.0]
        if bad:
            raise ValueError(f"`severities` must lie in (0, 1]; got {bad[0]!r} in {sev!r}.")
        if len(set(sev)) != len(sev):
            raise ValueError(f"`severities` must not contain duplicates; got {sev!r}.")
        object.__setattr__(self, "severities", tuple(sorted(sev)))

        w = _float_tuple(self.weights, "weights")
        if len(w) != 3 or any(v < 0 for v in w):
            raise ValueError(f"`weights` must be three non-negative finite numbers (w1, w2, w3); got {w!r}.")
        if not any(w):  # FDS = 0 on every row: a ranking that carries no information
            raise ValueError(f"`weights` must not all be zero (FDS would be 0 for every sample); got {w!r}.")
        object.__setattr__(self, "weights", w)

        thr = self.merge_threshold
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0.0 < float(thr) <= 1.0:
            raise ValueError(f"`merge_threshold` must be a number in (0, 1]; got {thr!r}.")
        object.__setattr__(self, "merge_threshold", float(thr))

        _int_at_least(self.exact_cap, "exact_cap", 1)
        _int_at_least(self.beam_width, "beam_width", 1)

    # ----------------------------------------------------------------------------------------
    def resolved_depth(self, n_groups: int) -> int:
        """Audit depth ``K`` for ``n_groups`` groups: ``depth`` or ``min(G, 5)``.

        Raises
        ------
        ValueError
            If an explicit ``depth`` exceeds ``n_groups``.
        """
        if self.depth is None:
            return min(n_groups, _DEFAULT_DEPTH_CAP)
        if self.depth > n_groups:
            raise ValueError(f"`depth` must be between 1 and the number of groups ({n_groups}); got {self.depth}.")
        return self.depth

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dictionary of every field plus the schema tag."""
        out: dict[str, Any] = {"schema": _SCHEMA}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no whitespace, floats in Python's shortest repr."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex digest of :meth:`to_json`."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "protocol") -> Protocol:
        """Inverse of :meth:`to_dict`; unknown keys or another schema are refused.

        A dictionary without ``schema`` is read as ``cfc-protocol/1``. ``where`` names the
        file the protocol came from in the message of a newer one
        (:class:`core.formats.NewerFormatError`: ``"<where>: made by a newer reliability-audit
        (format 2; this one reads up to 1): upgrade."``).
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"A protocol must be a JSON object; got {type(data).__name__}.")
        body = dict(data)
        tagged = "schema" in body
        schema = body.pop("schema", None)
        mismatch = f"Protocol schema must be {_SCHEMA!r}; got {schema!r}."
        PROTOCOL.check(schema, where=where, missing=None if tagged else 1, mismatch=mismatch)
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(body) - names)
        if unknown:
            raise ValueError(f"Unknown protocol field(s) {unknown}; expected a subset of {sorted(names)}.")
        for key in ("operators", "severities", "weights"):
            if key in body and isinstance(body[key], list):
                body[key] = tuple(body[key])
        return cls(**body)

    @classmethod
    def from_json(cls, text: str, *, where: str = "protocol") -> Protocol:
        """Inverse of :meth:`to_json`; ``where`` as in :meth:`from_dict`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Protocol JSON could not be parsed: {exc}.") from exc
        return cls.from_dict(data, where=where)
