"""An audit at a glance: what the Overview's first screen shows, small enough to be read first.

The *At a glance* tab shows an audit's counts (test predictions, high-confidence ones with
p̂ ≥ τ_p, held-out brittle ones: SPEC B.2), how well FDS ranks the brittle ones (AUROC and
Capture@20 against the strongest confidence score, SPEC B.3), and two charts: FDS against
confidence, and the flip budget k* of every test prediction (SPEC A.3). None of that needs the
certificate paths, the scores table or the test rows, which make up nearly all of an audit's
view. :class:`AuditGlance` holds exactly that part; :meth:`AuditGlance.of` takes it from an
:class:`~core.tabular.audit.AuditResult`, and every saved audit also keeps it as
``view/glance.json`` (:func:`write_glance`, called by :func:`core.tabular.audit_view.write_view`).
A fresh dashboard server draws its first screen from that file, then reads the whole audit
for the page that needs it. That saves a tenth of a second or more of every start
(``docs/performance.md``).

The file is plain JSON. Floats are written with Python's shortest round-trip ``repr``, so
:func:`read_glance` gives back the values :meth:`AuditGlance.of` took, bit for bit (NaN is
written as ``null``). A file belongs to the audit whose certificate fingerprint it names:
:func:`read_glance` returns None for a missing file or one of another audit, and raises
``ValueError`` for a malformed one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from core.formats import AUDIT_GLANCE

__all__ = ["GLANCE_FILE", "GLANCE_SCHEMA", "AuditGlance", "read_glance", "write_glance"]

GLANCE_FILE = "glance.json"
#: Format tag of ``glance.json`` (:data:`core.formats.AUDIT_GLANCE`).
GLANCE_SCHEMA = AUDIT_GLANCE.tag
_ARRAYS = ("confidence", "fds", "brittle", "flip_budget")
# Fields a file may lack (written before they existed), read as their defaults.
_OPTIONAL = ("made_by", "mean_rcma", "n_near_tie", "median_rcma")


@dataclass(frozen=True, eq=False)
class AuditGlance:
    """What the Overview's *At a glance* tab shows of one audit.

    Attributes
    ----------
    fingerprint : str
        Certificate fingerprint of the audit (SPEC A.1); the file's identity.
    protocol_fingerprint : str
    dataset_name, model_name : str
    seed : int
    audited_rows : int
        Rows of the audit's table (``len(result.dataset.frame)``: a stratified sample's own
        size; for an audit rebuilt from a folder without its dataset, the saved train and test
        rows).
    tau_p : float
        Confidence threshold τ_p of the held-out label channel (high confidence: p̂ ≥ τ_p).
    high_confidence : int
        Test predictions with p̂ ≥ τ_p.
    depth : int
        Removal depth K of the protocol (k* = K + 1: no flip within K).
    confidence, fds : ndarray of shape (n_test,), float
        Confidence p̂ and FDS of every test prediction (FDS larger = more fragile).
    brittle : ndarray of shape (n_test,), bool
        Held-out brittle label of every test prediction.
    flip_budget : ndarray of shape (n_test,), int
        k* of every test prediction, in ``1..K+1``.
    fds_auroc, fds_capture : float
        AUROC and Capture@20 of FDS against the brittle labels (NaN when undefined).
    confidence_score : str or None
        The confidence score FDS is compared with (highest AUROC), None when none is defined.
    confidence_auroc, confidence_capture : float
        That score's AUROC and Capture@20 (NaN without one).
    notes : tuple of str
        The audit's notes.
    made_by : str, default=""
        Who made the audit (the signed-in user's e-mail address or name), as
        :func:`core.tabular.audit_view.write_view` was told; "" when unknown (audits made by a
        command, files written before the field existed).
    mean_rcma, median_rcma : float, default NaN
        The RCMA headline (:func:`core.cfc.fds.rcma_headline`): the mean over the test
        predictions that are not near-ties, the median over all; NaN in glances written before
        the fields existed.
    n_near_tie : int or None, default None
        Near-ties left out of ``mean_rcma`` (None: an older glance).
    """

    fingerprint: str
    protocol_fingerprint: str
    dataset_name: str
    model_name: str
    seed: int
    audited_rows: int
    tau_p: float
    high_confidence: int
    depth: int
    confidence: np.ndarray
    fds: np.ndarray
    brittle: np.ndarray
    flip_budget: np.ndarray
    fds_auroc: float
    fds_capture: float
    confidence_score: str | None
    confidence_auroc: float
    confidence_capture: float
    notes: tuple[str, ...]
    made_by: str = ""
    mean_rcma: float = float("nan")
    n_near_tie: int | None = None
    median_rcma: float = float("nan")

    @property
    def test_rows(self) -> int:
        """Test predictions of the audit."""
        return len(self.fds)

    @property
    def brittle_count(self) -> int:
        """Held-out brittle test predictions."""
        return int(self.brittle.sum())

    @classmethod
    def of(cls, result: Any, *, made_by: str = "") -> AuditGlance:
        """The glance of an :class:`~core.tabular.audit.AuditResult`; ``made_by`` as in :attr:`made_by`."""
        from core.cfc.evaluation import strongest_confidence_score

        cert = result.certificates.table
        ev = result.evaluation.set_index("score")
        best = strongest_confidence_score(result.evaluation)
        nan = float("nan")
        fragility = result.fragility
        rcma = {name: fragility[name] for name in ("mean_rcma", "n_near_tie", "median_rcma")}
        return cls(
            fingerprint=str(result.fingerprint),
            protocol_fingerprint=str(result.protocol.fingerprint),
            dataset_name=str(result.dataset.name),
            model_name=str(result.model_name),
            seed=int(result.seed),
            audited_rows=len(result.dataset.frame),
            tau_p=float(result.labels.tau_p),
            high_confidence=int(result.labels.high_confidence.sum()),
            depth=int(result.certificates.depth),
            confidence=cert["confidence"].to_numpy(dtype=float),
            fds=cert["fds"].to_numpy(dtype=float),
            brittle=np.asarray(result.labels.labels, dtype=bool),
            flip_budget=cert["flip_budget"].to_numpy(dtype=np.int64),
            fds_auroc=float(ev.loc["fds", "auroc"]),
            fds_capture=float(ev.loc["fds", "capture@20"]),
            confidence_score=best,
            confidence_auroc=nan if best is None else float(ev.loc[best, "auroc"]),
            confidence_capture=nan if best is None else float(ev.loc[best, "capture@20"]),
            notes=tuple(str(n) for n in result.notes),
            made_by=str(made_by),
            **rcma,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (NaN as None), keyed by field name, with ``schema``."""

        def plain(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return [plain(v) for v in value.tolist()]
            if isinstance(value, tuple):
                return list(value)
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return value

        return {"schema": GLANCE_SCHEMA, **{f.name: plain(getattr(self, f.name)) for f in fields(self)}}

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "glance") -> AuditGlance:
        """The glance of :meth:`to_dict`'s output; ``source`` names it in errors.

        Raises
        ------
        NewerFormatError
            Written by a newer version of the tool (a later ``audit-glance/N``).
        ValueError
            Not an object of schema :data:`GLANCE_SCHEMA`, a field missing or of the wrong
            type, or arrays of different lengths.
        """
        tag = data.get("schema") if isinstance(data, dict) else None  # a non-object has no tag: refused
        got = tag if isinstance(data, dict) else type(data).__name__
        AUDIT_GLANCE.check(
            tag, where=source, mismatch=f"{source}: expected an object of schema {GLANCE_SCHEMA!r}; got {got!r}."
        )
        missing = [f.name for f in fields(cls) if f.name not in data and f.name not in _OPTIONAL]
        if missing:
            raise ValueError(f"{source}: field {missing[0]!r} is missing.")

        def number(name: str) -> float:
            value = data[name]
            if value is None:
                return float("nan")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{source}: {name!r} must be a number or null; got {value!r}.")
            return float(value)

        def integer(name: str) -> int:
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{source}: {name!r} must be an integer; got {value!r}.")
            return value

        def text(name: str, *, optional: bool = False) -> str | None:
            value = data[name]
            if not isinstance(value, str) and not (optional and value is None):
                raise ValueError(f"{source}: {name!r} must be text; got {value!r}.")
            return value

        arrays = {}
        for name in _ARRAYS:
            values = data[name]
            if not isinstance(values, list):
                raise ValueError(f"{source}: {name!r} must be a list; got {type(values).__name__}.")
            try:
                if name == "brittle":
                    arrays[name] = np.array(values, dtype=bool) if all(isinstance(v, bool) for v in values) else None
                elif name == "flip_budget":
                    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
                    arrays[name] = np.array(values, dtype=np.int64) if ok else None
                else:
                    arrays[name] = np.array([np.nan if v is None else v for v in values], dtype=float)
            except (TypeError, ValueError):
                arrays[name] = None
            if arrays[name] is None or arrays[name].ndim != 1:
                kind = {"brittle": "true / false", "flip_budget": "integers"}.get(name, "numbers or null")
                raise ValueError(f"{source}: {name!r} must be a list of {kind}.")
        lengths = {name: len(a) for name, a in arrays.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{source}: the arrays must have one length each; got {lengths}.")
        notes = data["notes"]
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise ValueError(f"{source}: 'notes' must be a list of text; got {notes!r}.")
        made_by = data.get("made_by", "")
        if not isinstance(made_by, str):
            raise ValueError(f"{source}: 'made_by' must be text; got {made_by!r}.")
        ties = data.get("n_near_tie")
        if ties is not None and (isinstance(ties, bool) or not isinstance(ties, int) or ties < 0):
            raise ValueError(f"{source}: 'n_near_tie' must be a non-negative integer or null; got {ties!r}.")
        return cls(
            fingerprint=text("fingerprint"),
            protocol_fingerprint=text("protocol_fingerprint"),
            dataset_name=text("dataset_name"),
            model_name=text("model_name"),
            seed=integer("seed"),
            audited_rows=integer("audited_rows"),
            tau_p=number("tau_p"),
            high_confidence=integer("high_confidence"),
            depth=integer("depth"),
            **arrays,
            fds_auroc=number("fds_auroc"),
            fds_capture=number("fds_capture"),
            confidence_score=text("confidence_score", optional=True),
            confidence_auroc=number("confidence_auroc"),
            confidence_capture=number("confidence_capture"),
            notes=tuple(notes),
            made_by=made_by,
            mean_rcma=number("mean_rcma") if "mean_rcma" in data else float("nan"),
            n_near_tie=ties,
            median_rcma=number("median_rcma") if "median_rcma" in data else float("nan"),
        )

    def to_json(self) -> str:
        """Canonical JSON text of :meth:`to_dict` (sorted keys: the same glance, the same bytes)."""
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n"


def write_glance(result: Any, view: str | Path, *, made_by: str = "") -> Path:
    """Write ``view/glance.json``, the :class:`AuditGlance` of ``result``, atomically.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    view : str or Path
        An existing folder: an audit folder's ``view/``.
    made_by : str, default=""
        Who made the audit (:attr:`AuditGlance.made_by`).

    Returns
    -------
    Path
    """
    from core.atomic import atomic_write_text

    path = Path(view) / GLANCE_FILE
    atomic_write_text(path, AuditGlance.of(result, made_by=made_by).to_json())
    return path


def read_glance(view: str | Path, fingerprint: str) -> AuditGlance | None:
    """The glance in ``view/glance.json`` when it belongs to the audit of ``fingerprint``.

    Parameters
    ----------
    view : str or Path
        An audit folder's ``view/``.
    fingerprint : str
        The audit's certificate fingerprint (``protocol.json``'s ``certificate_fingerprint``).

    Returns
    -------
    AuditGlance or None
        None when the file is missing (a folder written before it existed) or names another
        fingerprint.

    Raises
    ------
    NewerFormatError
        The file was written by a newer version of the tool.
    ValueError
        The file is not valid JSON or not a glance (the file and the field are named).
    """
    path = Path(view) / GLANCE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} could not be read ({exc}).") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}).") from exc
    glance = AuditGlance.from_dict(data, source=str(path))
    return glance if glance.fingerprint == fingerprint else None
