"""The fingerprint of a certificate set: which protocol, grouping, baseline and model (SPEC A.3).

SPEC A.3 makes the protocol fingerprint part of every certificate. The fingerprint of a set
is the SHA-256 of a canonical JSON holding

- the protocol's canonical JSON (:meth:`core.cfc.protocol.Protocol.to_dict`);
- the groups (names and transformed columns, in declared order);
- the baseline ``x̄`` (12 significant digits, ``-0.0`` folded into ``0.0``);
- the fixed removal ``order``, if any;
- the model's probabilities (6 decimals) on a fixed probe: ``x̄`` and 7 rows
  ``x̄ + z·max(|x̄|, 1)`` with ``z`` standard normal from a fixed seed.

It never depends on the certified rows, so chunks of one dataset share it. The rounding keeps
BLAS noise out of the hash; the unrounded probe probabilities are returned too, so that
:func:`core.cfc.verify` on another machine can tell kernel noise from another model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from core._rng import as_generator
from core.cfc.operators import GroupIndex, PredictProba, check_baseline, check_order
from core.cfc.protocol import Protocol
from core.cfc.scores import check_proba

__all__ = ["certificate_fingerprint", "fingerprint_with_probe", "probe_rows"]

_PROBE_SEED = 20_240_607
_PROBE_ROWS = 7
_FINGERPRINT_SCHEMA = "cfc-certificate/1"


def probe_rows(baseline: np.ndarray) -> np.ndarray:
    """The fixed probe, shape ``(8, n_features)``: the baseline (row 0, bit-exact) and 7 rows
    scattered around it, independent of any data row."""
    z = as_generator(_PROBE_SEED).standard_normal((_PROBE_ROWS, baseline.size))
    return np.vstack([baseline, baseline + z * np.maximum(np.abs(baseline), 1.0)])


def fingerprint_with_probe(
    predict_proba: PredictProba, protocol: Protocol, gi: GroupIndex, baseline: np.ndarray, order: tuple[str, ...] | None
) -> tuple[str, np.ndarray]:
    """The fingerprint of validated inputs and the model's probabilities on the probe, ``(8, C)``."""
    probe = probe_rows(baseline)
    P = check_proba(predict_proba(probe), probe.shape[0], what="`predict_proba` (fingerprint probe)")
    payload = {
        "schema": _FINGERPRINT_SCHEMA,
        "protocol": protocol.to_dict(),
        "groups": [[name, list(cols)] for name, cols in zip(gi.names, gi.columns)],
        # +0.0 folds -0.0 into 0.0; rounding keeps BLAS noise out of the hash.
        "baseline": [format(v + 0.0, ".12g") for v in baseline.tolist()],
        "order": None if order is None else list(order),
        "probe": [[format(v, ".6f") for v in row] for row in P.tolist()],
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), P


def certificate_fingerprint(
    predict_proba: Callable[[np.ndarray], ArrayLike],
    groups: Mapping[str, Sequence[int]],
    baseline: ArrayLike,
    protocol: Protocol | None = None,
    *,
    order: Sequence[str] | None = None,
) -> str:
    """The fingerprint :func:`~core.cfc.certify` gives any rows under these inputs, without
    certifying any.

    It hashes the protocol's canonical JSON, the groups, the baseline (12 significant digits),
    the fixed ``order`` and the model's probabilities (6 decimals) on a fixed probe: the
    baseline and 7 rows scattered around it with a fixed seed. It never depends on ``X``.

    Parameters
    ----------
    predict_proba, groups, baseline, protocol, order
        As in :func:`~core.cfc.certify`.

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol or None; got {type(protocol).__name__}.")
    b = np.asarray(baseline, dtype=np.float64)
    if b.ndim != 1:
        raise ValueError(f"`baseline` must be 1-D (n_features,); got shape {b.shape}.")
    b = check_baseline(b, b.shape[0])
    gi = GroupIndex.from_groups(groups, b.shape[0])
    order_names, _ = check_order(order, gi, protocol.resolved_depth(gi.n_groups))
    return fingerprint_with_probe(predict_proba, protocol, gi, b, order_names)[0]
