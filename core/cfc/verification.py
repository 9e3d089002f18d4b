"""Re-checking a stored certificate set against a model: :func:`verify` (SPEC A.3).

SPEC A.3 makes the whole certificate tuple and its protocol fingerprint the claim; :func:`verify`
recomputes it with :func:`core.cfc.certify` under the bundle's own protocol, groups, baseline,
order and search method, and compares every field. Bit-equal on the machine that wrote it
(``identical``); on another CPU within declared tolerances (``within_tolerance``), where the
fields computed from differences of margins (the drops ``δ_g``, the collapse terms
``c_k = max(0, (m(x) − m_y(x^(k))) / (|m(x)| + 1e-8))``, RCMA, ``u``, FDS) are compared at the
size of the sample's margins (:func:`_margin_scales`) and must also agree with the bundle's
own margins (:func:`_inconsistent_rows`, the ranking head of :mod:`core.cfc.fds`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.cfc.bundle import ARRAY_FIELDS
from core.cfc.certificate_set import CertificateSet
from core.cfc.certification import certify
from core.cfc.fds import EPS, collapse_terms, fds_from_components
from core.cfc.operators import check_features

__all__ = ["VerificationReport", "verify"]


@dataclass(frozen=True, eq=False)
class VerificationReport:
    """Outcome of :func:`verify`.

    Attributes
    ----------
    ok : bool
        ``verdict != "differs"``.
    fingerprint_expected, fingerprint_actual : str
    n_samples : int
    mismatches : DataFrame
        One row per (sample, field) that differs beyond the tolerances: ``position``,
        ``index``, ``field``, ``expected`` (bundle), ``actual`` (recomputed). Array fields show
        the sample's whole sub-array; a shape disagreement is reported once with
        ``position = -1``.
    rtol, atol : float
        Tolerances used for floating-point fields (``|a - e| <= atol + rtol * max(|e|, scale)``,
        ``scale`` the sample's margin size for fields computed from differences of margins;
        see :func:`verify`).
    verdict : {"identical", "within_tolerance", "differs"}
        ``identical``: same fingerprint and every field bit-equal (same machine, same model).
        ``within_tolerance``: every discrete field equal, every float field and the model's
        fingerprint-probe probabilities within ``rtol``/``atol`` (another CPU's kernels, or a
        fingerprint whose 6-decimal rounding fell the other way). ``differs``: anything else.
    max_abs_diff : float
        Largest absolute difference over the finite float entries of every field (0.0 when
        all are bit-equal).
    max_diff_field : str or None
        The field holding it.
    probe_max_abs_diff : float or None
        Largest absolute difference of the fingerprint-probe probabilities; ``None`` when the
        bundle predates stored probe values.
    """

    ok: bool
    fingerprint_expected: str
    fingerprint_actual: str
    n_samples: int
    mismatches: pd.DataFrame
    rtol: float
    atol: float
    verdict: str = "differs"
    max_abs_diff: float = 0.0
    max_diff_field: str | None = None
    probe_max_abs_diff: float | None = None

    @property
    def fingerprint_match(self) -> bool:
        return self.fingerprint_expected == self.fingerprint_actual

    @property
    def fields(self) -> list[str]:
        """Names of the fields that differ, sorted."""
        return sorted(set(self.mismatches["field"]))

    def __str__(self) -> str:
        largest = (
            f"largest difference {self.max_abs_diff:.3g} in {self.max_diff_field}"
            if self.max_diff_field is not None and self.max_abs_diff > 0
            else "no float difference"
        )
        tol = f"rtol={self.rtol:g}, atol={self.atol:g}"
        if self.verdict == "identical":
            return (
                f"Certificate bundle verified: {self.n_samples} samples, identical, "
                f"fingerprint {self.fingerprint_actual[:12]}."
            )
        if self.verdict == "within_tolerance":
            fp = (
                "same fingerprint"
                if self.fingerprint_match
                else f"fingerprint hash differs ({self.fingerprint_expected[:12]} vs {self.fingerprint_actual[:12]}) "
                f"but the probe probabilities agree within {self.probe_max_abs_diff:.3g}"
            )
            return f"Certificate bundle verified within tolerance ({tol}): {self.n_samples} samples, {largest}; {fp}."
        parts = []
        if not self.fingerprint_match:
            why = (
                "the bundle stores no probe values to tell rounding from another model"
                if self.probe_max_abs_diff is None
                else f"probe probabilities differ by up to {self.probe_max_abs_diff:.3g}"
            )
            parts.append(
                f"fingerprint differs ({self.fingerprint_expected[:12]} vs {self.fingerprint_actual[:12]}; {why})"
            )
        if len(self.mismatches):
            parts.append(f"{len(self.mismatches)} (sample, field) mismatches beyond {tol} in {', '.join(self.fields)}")
        return "Certificate bundle does NOT verify: " + "; ".join(parts) + f"; {largest}."


def _comparable_fields(cs: CertificateSet) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for col in cs.table.columns:
        if col == "path":
            out["table.path"] = np.array(cs.table["path"].tolist(), dtype=object).reshape(len(cs), -1)
        elif col == "path_margins":
            margins = np.array(cs.table["path_margins"].tolist(), dtype=np.float64)
            out["table.path_margins"] = margins.reshape(len(cs), -1)
        else:
            out[f"table.{col}"] = cs.table[col].to_numpy()
    for name in ARRAY_FIELDS:
        out[name] = getattr(cs, name)
    for op, tr in cs.operators.items():
        for name in ("margins", "preds", "flipped"):
            out[f"operators.{op}.{name}"] = getattr(tr, name)
    if cs.search is not None:
        for name in ("k_exact", "exact_subset", "k_beam", "beam_subset"):
            out[f"search.{name}"] = getattr(cs.search, name)
    return out


#: Fields in margin units (differences of clipped log-probabilities, log-odds).
_MARGIN_FIELDS = ("table.margin", "table.path_margins", "table.one_step_max", "traj_margin", "drops")


def _margin_scales(cs: CertificateSet) -> dict[str, np.ndarray]:
    """Magnitudes that :func:`verify`'s ``rtol`` is relative to, beside ``|expected|``.

    A model's rounding moves each log-probability of a sample by about ``rtol`` times the
    size of the sample's margins, so a *difference* of margins (a one-step drop, a margin
    near 0) carries an error of that size, however small the difference itself is
    (cancellation: on an AVX-512 CPU a float32 torch model's drops of 1e-4 log-odds moved by
    3e-6 against a build without AVX). With ``S_i`` the largest finite ``|margin|`` or
    ``|drop|`` anywhere in sample ``i``'s certificate, each margin moves by at most about
    ``ε S_i``, and so:

    - margin fields (drops, margins, ``one_step_max``, path and operator margins): ``S_i``;
    - ``c_k = (m0 − m_k) / |m0|`` moves by ``(|δm0| + |δm_k| + |c_k| |δm0|) / |m0|``:
      ``S_i (2 + |c_k|) / |m0_i|``, elementwise;
    - ``rcma`` (the mean of the ``c_k ≥ 0``): ``S_i (2 + rcma_i) / |m0_i|``;
    - ``u = w1 rcma + …`` and ``fds`` (``dfds ≤ du``): ``w1`` times rcma's.

    Near ``m0 = 0`` these grow without bound, as the true rounding error does; a tampered
    collapse or RCMA is still caught there, by :func:`_inconsistent_rows`. Returns arrays
    of shape ``(n,)`` (per sample) or of the field's own shape.
    """
    parts = [np.abs(cs.traj_margin).reshape(len(cs), -1), np.abs(cs.drops).reshape(len(cs), -1)]
    parts += [np.abs(tr.margins).reshape(len(cs), -1) for tr in cs.operators.values()]
    stacked = np.concatenate(parts, axis=1)
    S = np.where(np.isfinite(stacked), stacked, 0.0).max(axis=1, initial=0.0)
    ratio = S / (np.abs(cs.traj_margin[:, 0]) + EPS)
    # The claimed collapse and RCMA: verify holds them to the claim's own margins separately.
    collapse, rcma = cs.collapse, cs.table["rcma"].to_numpy(dtype=np.float64)
    collapse_scale = ratio[:, None] * (2.0 + np.where(np.isfinite(collapse), collapse, 0.0))
    rcma_scale = ratio * (2.0 + np.where(np.isfinite(rcma), rcma, 0.0))
    w1 = float(cs.protocol.weights[0])
    scales = {name: S for name in _MARGIN_FIELDS}
    scales.update({f"operators.{op}.margins": S for op in cs.operators})
    scales.update(
        {"collapse": collapse_scale, "table.rcma": rcma_scale, "table.u": w1 * rcma_scale, "table.fds": w1 * rcma_scale}
    )
    return scales


def _inconsistent_rows(cs: CertificateSet, fields: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows whose derived fields disagree with the bundle's own ``traj_margin`` / ``drops`` / ``λ*``.

    Collapse, RCMA, ``u``, FDS and the degradation term are recomputed from the claimed base
    arrays with the same code as :func:`certify` and must match to 1e-12 (only ``exp`` may
    differ in its last bit between CPUs). Without this a claim could move a derived field
    within the wide tolerance it gets near ``m0 = 0`` (:func:`_margin_scales`).
    """
    m = cs.traj_margin
    collapse, rcma = collapse_terms(m, cs.depth)
    lam = np.column_stack([tr.lambda_star for tr in cs.operators.values()]) if cs.operators else np.zeros((len(cs), 0))
    fds, u, degradation = fds_from_components(rcma, cs.table["flip_budget"].to_numpy(), lam, cs.protocol.weights)
    derived = {
        "collapse": collapse,
        "table.rcma": rcma,
        "table.u": u,
        "table.fds": fds,
        "table.degradation": degradation,
        "table.margin": m[:, 0],
        "table.path_margins": m,
        "table.one_step_max": cs.drops.max(axis=1) if cs.drops.shape[1] else None,
    }
    out = {}
    for name, want in derived.items():
        have = fields.get(name)
        if want is None or have is None or np.shape(have) != np.shape(want):
            continue
        bad = ~np.isclose(np.asarray(have, dtype=np.float64), want, rtol=1e-12, atol=1e-12, equal_nan=True)
        rows = np.flatnonzero(bad.reshape(len(cs), -1).any(axis=1))
        if rows.size:
            out[name] = rows
    return out


def verify(
    bundle: CertificateSet | Mapping[str, Any] | str | Path,
    predict_proba: Callable[[np.ndarray], ArrayLike],
    X: ArrayLike,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    batch_size: int = 65536,
    progress: Callable[[int, int], object] | None = None,
) -> VerificationReport:
    """Recompute a stored certificate set and report every field that differs.

    On the machine that wrote the bundle the recomputation is bit-identical (verdict
    ``"identical"``). On another CPU, BLAS / OpenMP / torch kernels round differently: float
    fields differ in their last bits, and the fingerprint (which hashes the probe
    probabilities rounded to 6 decimals) differs when a value sits on a rounding boundary.
    The verdict is then ``"within_tolerance"`` when every discrete field (predictions, paths,
    ``k*``, flip flags, ``λ*``) is equal and every float field and every probe probability lies
    within the declared tolerances; the report gives the largest difference.

    Parameters
    ----------
    bundle : CertificateSet, bundle dict, or path to a JSON bundle
        What is claimed. Its protocol, groups, baseline, order and search method are reused.
    predict_proba : callable
        The model to check the claim against.
    X : array-like of shape (n_samples, n_features)
        The same rows, in the same order, that were certified.
    rtol, atol : float, default=1e-5, 1e-6
        Declared tolerances for floating-point fields, ``|actual - expected| <= atol +
        rtol * max(|expected|, scale)``; ``inf``/``NaN`` must match. ``scale`` is 0 except for
        the fields computed from differences of margins, whose rounding error follows the
        size of the sample's margins rather than their own: drops and margins get the
        sample's largest ``|margin|`` or ``|drop|``, ``S``; collapse, RCMA, ``u`` and FDS
        that divided by ``|m0|`` and grown by their own size (``docs/cfc.md``). Those derived
        fields must also agree with the bundle's own margins and ``λ*`` to 1e-12, so a claim
        cannot move them within that wider tolerance. Measured for a float32 torch MLP
        between AVX-512 and no-AVX kernels: the largest difference is 0.09 of its tolerance
        (compared to their own size alone, its drops were up to 3.8 times theirs); float64
        models agree to about 1e-12. Another model's rounding may come closer to the bound.
    batch_size : int, default=65536
    progress : callable(done_rows, total_rows), optional

    Returns
    -------
    VerificationReport
    """
    if isinstance(bundle, CertificateSet):
        expected = bundle
    elif isinstance(bundle, Mapping):
        expected = CertificateSet.from_bundle(bundle)
    elif isinstance(bundle, (str, Path)):
        expected = CertificateSet.from_json(bundle)
    else:
        raise ValueError(f"`bundle` must be a CertificateSet, a bundle dict or a path; got {type(bundle).__name__}.")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
            raise ValueError(f"`{name}` must be a finite number >= 0; got {tol!r}.")
    A, _ = check_features(X)
    if A.shape[0] != len(expected):
        raise ValueError(f"`X` has {A.shape[0]} rows but the bundle certifies {len(expected)} samples.")
    actual = certify(
        predict_proba,
        A,
        expected.groups,
        expected.baseline,
        expected.protocol,
        order=expected.order,
        search="none" if expected.search is None else expected.search.method,
        batch_size=batch_size,
        progress=progress,
    )

    records = []
    identical = True
    max_diff, max_field = 0.0, None
    exp_fields, act_fields = _comparable_fields(expected), _comparable_fields(actual)
    scales = _margin_scales(expected)
    for field, rows in _inconsistent_rows(expected, exp_fields).items():
        identical = False
        for i in rows.tolist():
            e = exp_fields[field][i]
            records.append(
                (
                    i,
                    expected.table.index[i],
                    field,
                    e.tolist() if isinstance(e, np.ndarray) else e,
                    "inconsistent with the bundle's own traj_margin / drops / λ*",
                )
            )
    for field, E in exp_fields.items():
        Acur = act_fields.get(field)
        if Acur is None or Acur.shape != E.shape:
            identical = False
            records.append((-1, None, field, getattr(E, "shape", None), getattr(Acur, "shape", None)))
            continue
        if E.dtype.kind == "f" or Acur.dtype.kind == "f":
            e64, a64 = E.astype(np.float64), Acur.astype(np.float64)
            both = np.isfinite(e64) & np.isfinite(a64)
            close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
            if field in scales:
                scale = scales[field]
                if scale.shape != e64.shape:  # per sample
                    scale = scale.reshape((-1,) + (1,) * (e64.ndim - 1))
                with np.errstate(invalid="ignore"):
                    close |= both & (np.abs(a64 - e64) <= atol + rtol * np.maximum(np.abs(e64), scale))
            bad = ~close
            if both.any():
                diff = float(np.max(np.abs(e64[both] - a64[both])))
                if diff > max_diff:
                    max_diff, max_field = diff, field
            identical = identical and bool(np.array_equal(e64, a64, equal_nan=True))
        else:
            bad = E != Acur
        identical = identical and not bad.any()
        bad_rows = np.flatnonzero(bad.reshape(E.shape[0], -1).any(axis=1))
        for i in bad_rows.tolist():
            e, a = E[i], Acur[i]
            records.append(
                (
                    i,
                    expected.table.index[i],
                    field,
                    e.tolist() if isinstance(e, np.ndarray) else e,
                    a.tolist() if isinstance(a, np.ndarray) else a,
                )
            )
    for field in act_fields.keys() - exp_fields.keys():
        identical = False
        records.append((-1, None, field, None, act_fields[field].shape))
    mismatches = pd.DataFrame(records, columns=["position", "index", "field", "expected", "actual"])

    probe_diff, probe_ok = None, False
    if expected.probe_proba is not None and expected.probe_proba.shape == actual.probe_proba.shape:
        probe_diff = float(np.max(np.abs(expected.probe_proba - actual.probe_proba), initial=0.0))
        probe_ok = bool(np.isclose(actual.probe_proba, expected.probe_proba, rtol=rtol, atol=atol).all())
    fingerprint_match = expected.fingerprint == actual.fingerprint
    if fingerprint_match and identical:
        verdict = "identical"
    elif mismatches.empty and (fingerprint_match or probe_ok):
        verdict = "within_tolerance"
    else:
        verdict = "differs"
    return VerificationReport(
        verdict != "differs",
        expected.fingerprint,
        actual.fingerprint,
        len(expected),
        mismatches,
        float(rtol),
        float(atol),
        verdict,
        max_diff,
        max_field,
        probe_diff,
    )
