"""A stakeholder report of one audit: one self-contained HTML file, built without the model.

:func:`build_report` turns what an audit wrote to disk (:func:`load_audit_folder`: the
certificate table, ``evaluation.json``, ``protocol.json``) — or the same tables of an audit
held in memory (:func:`audit_inputs`, used by the dashboard) — plus, optionally, the review
decisions (:func:`load_reviews`) and paired evaluations (:func:`load_paired`) into one HTML
page: protocol and fingerprints, nominal vs fragility metrics per model, FDS against the
confidence scores, the triage queue with the reviewers' decisions, three example
certificates with their charts, and the paired interval bars and recapture-queue summary.

The page needs no network: every figure is a Vega-Lite spec of :mod:`core.viz` (the ones the
dashboard draws), drawn by vega-embed from the Vega, Vega-Lite and vega-embed bundle of
``vl-convert-python`` inlined once (about 0.9 MB; the plotly.js it replaced was 4.7 MB); there
are no external fonts, style sheets or images. The report never loads the fitted model
(everything it shows is stored in the audit's tables), so it works on any machine that has
the folder. :func:`write_report` writes through the one atomic writer, :mod:`core.atomic`.
"""

from __future__ import annotations

import html
import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core import viz
from core.atomic import atomic_write_text
from core.cfc.fds import NEAR_TIE_MARGIN
from core.cfc.stressors import LabelChannel
from core.exceptions import UndefinedMetricWarning, UndefinedTargetWarning
from core.reviews import DECISION_LABELS, ReviewStore
from core.tabular.dataset import OWN_MODEL_SOURCE
from core.validation import check_budget
from core.views.paired import evaluation_records
from core.views.ranking import attach_decisions, capture_curves, rank_queue
from core.views.tabular import flip_budget_shown
from core.viz.display import vega_bundle
from core.viz.tables import flip_budget_text

if TYPE_CHECKING:
    from core.tabular.audit import AuditResult

__all__ = [
    "AUDIT_FILES",
    "AuditInputs",
    "PairedInputs",
    "ReviewInputs",
    "audit_inputs",
    "build_report",
    "collapse_from_margins",
    "load_audit_folder",
    "load_paired",
    "load_reviews",
    "report_for_result",
    "report_title",
    "write_report",
]

#: Files of an audit folder the report reads (the certificate table may be Parquet or CSV).
AUDIT_FILES = ("certificates.parquet", "evaluation.json", "protocol.json")
#: Certificate-table columns the report needs.
_CERT_COLUMNS = (
    "row_id",
    "y_true",
    "brittle",
    "high_confidence",
    "pred",
    "confidence",
    "margin",
    "flip_budget",
    "rcma",
    "fds",
    "path",
    "path_margins",
    "score_fds",
)
_EPS = 1e-8  # the collapse denominator's guard, as in core.cfc.fds (SPEC A.3)
_BUDGETS = np.arange(1, 101) / 100
_COVERAGE = 0.8  # clean coverage that sets the paired acceptance threshold (the dashboard's default)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class AuditInputs:
    """The stored tables of one audit, as the report reads them.

    Attributes
    ----------
    label : str
        Where the audit came from (folder path, or "dashboard").
    certificates : DataFrame
        :func:`core.tabular.audit.certificate_export`: one row per test prediction, ``y_true``
        and ``pred`` as class labels (as stored, for an older folder whose classes are unknown).
    evaluation : dict
        :func:`core.tabular.audit.evaluation_json`.
    protocol : dict
        :func:`core.tabular.audit.protocol_json`.
    """

    label: str
    certificates: pd.DataFrame
    evaluation: dict
    protocol: dict

    @property
    def classes(self) -> list | None:
        """Class labels in ``predict_proba`` column order; None for an older folder that did not
        store them (its certificate table then holds what it stored)."""
        return self.protocol.get("classes")

    @property
    def fingerprint(self) -> str:
        """Certificate fingerprint: the key the review decisions are stored under."""
        return str(self.protocol.get("certificate_fingerprint") or self.evaluation.get("fingerprint"))


@dataclass(frozen=True, eq=False)
class ReviewInputs:
    """Review decisions of one audit, as the store holds them.

    Attributes
    ----------
    path : str
        The review database: a file (the report shows its name only, never its folder) or a
        PostgreSQL URL without its password.
    latest : DataFrame
        :meth:`core.reviews.ReviewStore.latest` of the audit: the decision in force per case.
    history : DataFrame
        :meth:`core.reviews.ReviewStore.history` of the audit: every entry, retractions included.
    ratings : DataFrame
        :meth:`core.reviews.ReviewStore.ratings`: each reviewer's decision in force per case.
    reviewers_per_case : int, default=1
        Of the audit's review plan in force.
    verification : str, default=""
        The review log's verification (:func:`core.reviews.maintenance.verify_log`), in words:
        "review log verified: N entries (...)" or why it failed or could not run.
    """

    path: str
    latest: pd.DataFrame
    history: pd.DataFrame
    ratings: pd.DataFrame
    reviewers_per_case: int = 1
    verification: str = ""

    @property
    def n_decisions(self) -> int:
        """Stored decisions of the audit (adjudications included, retractions not)."""
        return int((self.history["decision"] != "retracted").sum())

    @property
    def n_retractions(self) -> int:
        """Stored retractions (undo entries) of the audit."""
        return int((self.history["decision"] == "retracted").sum())

    @property
    def n_samples(self) -> int:
        """Samples of the audit with at least one entry (whether or not a decision is still in force)."""
        return int(self.history["sample_id"].nunique())


@dataclass(frozen=True, eq=False)
class PairedInputs:
    """Paired evaluations for the report.

    Attributes
    ----------
    label : str
        The folder read.
    cell : dict
        ``model, condition, source, tau`` of the cell whose interval bars are drawn.
    intervals : DataFrame
        ``target, level, low, high, observed`` of that cell.
    queue : DataFrame or None
        :func:`core.paired.screening.recapture_queue` (None when the folder has no screening).
    notes : tuple of str
        What was chosen or is missing, for people.
    """

    label: str
    cell: dict
    intervals: pd.DataFrame
    queue: pd.DataFrame | None
    notes: tuple[str, ...] = field(default=())


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"cannot read {str(path)!r}: expected a JSON object, got {type(data).__name__}.")
    return data


def _read_certificates(directory: Path) -> pd.DataFrame:
    parquet, csv = directory / "certificates.parquet", directory / "certificates.csv"
    path = parquet if parquet.is_file() else csv
    try:
        if path is parquet:
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path)
            for col in ("path", "path_margins"):  # list cells are JSON text in the CSV
                if col in table.columns:
                    table[col] = [
                        np.asarray(json.loads(v), dtype=object if col == "path" else float) for v in table[col]
                    ]
    except Exception as exc:  # pyarrow / parser errors have no common base class
        raise ValueError(f"cannot read {str(path)!r}: {type(exc).__name__}: {exc}") from None
    missing = [c for c in _CERT_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{str(path)!r} lacks the column(s) {missing}; expected the certificate table written "
            "by `python -m core audit`."
        )
    if len(table) == 0:
        raise ValueError(f"{str(path)!r} has no rows.")
    return table


def load_audit_folder(directory: str | os.PathLike[str]) -> AuditInputs:
    """Read an audit folder written by ``python -m core audit`` (never its model file).

    Parameters
    ----------
    directory : path
        Holds ``certificates.parquet`` (or ``certificates.csv``), ``evaluation.json`` and
        ``protocol.json``.

    Raises
    ------
    ValueError
        Naming the path: missing folder, not an audit folder, or an unreadable file.
    """
    path = Path(directory)
    if not path.exists():
        raise ValueError(f"audit folder {str(path)!r} does not exist.")
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is not a folder; expected an audit folder written by `python -m core audit`.")
    missing = [name for name in ("evaluation.json", "protocol.json") if not (path / name).is_file()]
    if not (path / "certificates.parquet").is_file() and not (path / "certificates.csv").is_file():
        missing.insert(0, "certificates.parquet")
    if missing:
        hint = (
            " (a sweep folder: pass one of its <dataset>/<model>/seed<k> folders)"
            if (path / "sweep_table.csv").is_file()
            else ""
        )
        raise ValueError(
            f"{str(path)!r} is not an audit folder: missing {', '.join(missing)}{hint}; expected the "
            "output of `python -m core audit --out DIR`."
        )
    from core.tabular.audit_folder import check_folder_versions

    check_folder_versions(path)  # a folder made by a newer version is refused before it is read
    evaluation = _read_json(path / "evaluation.json")
    protocol = _read_json(path / "protocol.json")
    for name, data, keys in (
        ("evaluation.json", evaluation, ("scores", "nominal", "fragility")),
        ("protocol.json", protocol, ("protocol", "certificate_fingerprint")),
    ):
        absent = [k for k in keys if k not in data]
        if absent:
            raise ValueError(
                f"{str(path / name)!r} lacks the key(s) {absent}; expected the file written by `python -m core audit`."
            )
    from core.tabular.audit_folder import labelled_certificates

    certificates, classes = labelled_certificates(_read_certificates(path), protocol, path)
    return AuditInputs(str(path), certificates, evaluation, {**protocol, "classes": classes})


def audit_inputs(result: AuditResult, *, label: str = "dashboard") -> AuditInputs:
    """The same tables as an audit folder, from an in-memory :class:`~core.tabular.audit.AuditResult`.

    Goes through the very functions that write the folder, so the report of an audit is the
    same whether it is built from the dashboard or from ``python -m core report``.
    """
    from core.tabular.audit import certificate_export, evaluation_json, protocol_json

    return AuditInputs(
        label,
        certificate_export(result),
        json.loads(json.dumps(evaluation_json(result))),
        json.loads(json.dumps(protocol_json(result))),
    )


def load_reviews(path: str | os.PathLike[str], fingerprint: str) -> ReviewInputs:
    """Review decisions of one audit from an existing review database.

    Parameters
    ----------
    path : str or os.PathLike
        An SQLite file, or a ``postgresql://`` URL (its store must exist: nothing is created).
    fingerprint : str
        The audit's protocol fingerprint.

    Raises
    ------
    ValueError
        When ``path`` is not an existing file or server store, or cannot be read as a review
        database. Messages name a server without its password.
    """
    from core.reviews.backend import display_name, is_url, open_backend

    if is_url(path):
        shown = display_name(path)
        try:
            open_backend(str(path), timeout=10.0).require_schema()  # a report never creates a store
            store = ReviewStore(str(path))
        except Exception as exc:  # ReviewStoreError: unreachable, wrong password, no store
            raise ValueError(f"cannot read the review database {shown!r}: {exc}") from None
        return _review_inputs(store, fingerprint, shown, _verification(str(path), shown))
    db = Path(path).expanduser()
    if not db.is_file():
        raise ValueError(f"review database {str(db)!r} does not exist.")
    try:
        return _review_inputs(ReviewStore(db), fingerprint, str(db), _verification(db, db.name))
    except Exception as exc:  # sqlite3.DatabaseError on a file that is not a database
        raise ValueError(f"cannot read the review database {str(db)!r}: {exc}") from None


def _review_inputs(store: ReviewStore, fingerprint: str, name: str, verification: str) -> ReviewInputs:
    return ReviewInputs(
        name,
        store.latest(fingerprint),
        store.history(fingerprint),
        store.ratings(fingerprint),
        store.current_plan(fingerprint).reviewers_per_case,
        verification,
    )


def _verification(db: str | Path, shown: str) -> str:
    """The review log's verification in one sentence (a file's name or a server without its password)."""
    from core.reviews.maintenance import verify_log

    try:
        return verify_log(db).summary
    except ValueError as exc:
        return "review log not verified: " + str(exc).replace(str(db), shown)


def load_paired(directory: str | os.PathLike[str], *, coverage: float = _COVERAGE) -> PairedInputs:
    """Paired evaluations from a demo-pool folder or the output of ``python -m core paired``.

    A demo-pool folder (``records.parquet``, ``probes.parquet``, ``clean.parquet``, … as in
    ``assets/paired_demo``) gives the identified intervals of its first model on its first
    condition (sorted), at the threshold ``τ`` accepting ``coverage`` of the model's clean
    development images, and the recapture queue ranked by ``U`` at a 10 % budget with the
    simulated recaptures as outcomes. A ``paired`` output folder gives the first cell of its
    ``intervals.csv`` and its ``recapture_queue.csv`` when present.
    """
    path = Path(directory)
    if not path.is_dir():
        raise ValueError(f"paired folder {str(path)!r} does not exist or is not a folder.")
    if (path / "records.parquet").is_file() and (path / "manifest.json").is_file():
        return _paired_from_pool(path, coverage)
    if (path / "intervals.csv").is_file():
        return _paired_from_output(path)
    raise ValueError(
        f"{str(path)!r} is not a paired folder: expected records.parquet + manifest.json (a demo pool "
        "such as assets/paired_demo) or intervals.csv (the output of `python -m core paired --out`)."
    )


def _paired_from_pool(path: Path, coverage: float) -> PairedInputs:
    from core.imaging.demo import load_demo_pool
    from core.paired.bounds import identified_intervals
    from core.paired.screening import recapture_queue, screening_scores
    from core.paired.states import development_thresholds

    try:
        pool = load_demo_pool(path)
    except Exception as exc:
        raise ValueError(f"cannot read the paired folder {str(path)!r}: {type(exc).__name__}: {exc}") from None
    records = pool.records
    evaluation = evaluation_records(records)
    model = sorted(evaluation["model"].unique())[0]
    sources = sorted(evaluation["source"].unique())
    source = "synthetic" if "synthetic" in sources else sources[0]
    mine = evaluation[(evaluation["model"] == model) & (evaluation["source"] == source)]
    # The condition that hurts the model most (lowest perturbed accuracy; ties by name) shows
    # the widest spread of outcomes.
    accuracy = (mine["pert_pred"] == mine["true_label"]).groupby(mine["condition"]).mean()
    condition = sorted(accuracy.index, key=lambda c: (accuracy[c], c))[0]
    thresholds = development_thresholds(records, [coverage])
    tau = float(thresholds.loc[thresholds["model"] == model, "tau"].iloc[0])
    cell = evaluation[
        (evaluation["model"] == model) & (evaluation["condition"] == condition) & (evaluation["source"] == source)
    ]
    with warnings.catch_warnings():
        # dM_k undefined when no pair stays correct: drawn as such
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        intervals = identified_intervals(cell, tau)
    outcomes = records[records["source"] == "simulated-recapture"]
    notes = [
        f"Interval bars: model {model} (first by name) on {condition} ({source}), the condition with its "
        f"lowest perturbed accuracy ({accuracy[condition]:.1%}); τ = {tau:.4f} accepts {coverage:.0%} of the "
        "model's clean development images; evaluation images only."
    ]
    queue = None
    if len(pool.probes) and len(outcomes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)  # scores undefined for the pool come back as NaN
            scores = screening_scores(pool.probes, pool.clean, outcomes=outcomes)
        queue = recapture_queue(scores, score="U", budget=0.1, outcomes=outcomes)
        notes.append(
            "Recapture queue: ranked by U (larger = riskier) at a 10 % re-test budget; failures are the "
            "simulated recapture conditions of the pool."
        )
    else:
        notes.append("Recapture queue: this pool has no per-probe outputs or no recapture conditions.")
    return PairedInputs(
        str(path),
        {"model": model, "condition": condition, "source": source, "tau": tau},
        intervals.reset_index(drop=True),
        queue,
        tuple(notes),
    )


def _paired_from_output(path: Path) -> PairedInputs:
    from core.formats import PAIRED_OUTPUT

    manifest = _read_json(path / "manifest.json") if (path / "manifest.json").is_file() else {}
    PAIRED_OUTPUT.check(manifest.get("format") if isinstance(manifest, dict) else None, where=str(path), missing=1)

    def read(name: str) -> pd.DataFrame:
        try:
            return pd.read_csv(path / name)
        except Exception as exc:
            raise ValueError(f"cannot read {str(path / name)!r}: {type(exc).__name__}: {exc}") from None

    grid = read("intervals.csv")
    need = ["target", "level", "low", "high", "observed"]
    missing = [c for c in need if c not in grid.columns]
    if missing or len(grid) == 0:
        raise ValueError(
            f"{str(path / 'intervals.csv')!r} lacks the column(s) {missing or need} or has no rows; "
            "expected the intervals written by `python -m core paired`."
        )
    keys = [c for c in ("model", "condition", "source") if c in grid.columns]
    cell_of = grid[keys].drop_duplicates().sort_values(keys).iloc[0].to_dict() if keys else {}
    mask = np.ones(len(grid), bool)
    for k, v in cell_of.items():
        mask &= (grid[k] == v).to_numpy()
    cell = grid[mask]
    tau = float(cell["tau"].iloc[0]) if "tau" in cell.columns else float("nan")
    n_cells = len(grid[keys].drop_duplicates()) if keys else 1
    notes = [
        f"Interval bars: the first of {n_cells} cell(s) of intervals.csv ("
        + (", ".join(f"{k} {v}" for k, v in cell_of.items()) or "a single cell")
        + ")."
    ]
    queue = None
    if (path / "recapture_queue.csv").is_file():
        queue = read("recapture_queue.csv")
    else:
        notes.append(
            "Recapture queue: the folder has no recapture_queue.csv (run `python -m core paired` with "
            "--probes and --clean-outputs to get one)."
        )
    return PairedInputs(str(path), {**cell_of, "tau": tau}, cell[need].reset_index(drop=True), queue, tuple(notes))


# --------------------------------------------------------------------------------------------
# Computations from the stored tables
# --------------------------------------------------------------------------------------------
def collapse_from_margins(path_margins: Sequence[float]) -> np.ndarray:
    """Margin-collapse curve ``c_k = max(0, (m_0 − m_k) / (|m_0| + 1e-8))`` (SPEC A.3).

    Parameters
    ----------
    path_margins : array-like of shape (K + 1,)
        Margins of the original class along the removal path, ``k = 0 … K`` (nats).

    Returns
    -------
    ndarray of shape (K + 1,)
        Unitless; ``c_0 = 0``; its mean is the certificate's RCMA.
    """
    m = np.asarray(path_margins, dtype=float)
    if m.ndim != 1 or m.size == 0:
        raise ValueError(f"`path_margins` must be a non-empty 1-D array; got shape {m.shape}.")
    return np.maximum(0.0, (m[0] - m) / (abs(m[0]) + _EPS))


def _n_classes(a: AuditInputs) -> int:
    if a.classes is not None:
        return len(a.classes)
    cert = a.certificates  # an older folder without its classes: column indices as stored
    return int(max(cert["y_true"].max(), cert["pred"].max())) + 1


def _examples(cert: pd.DataFrame, n: int = 3) -> list[tuple[str, int]]:
    """Most fragile, median and most stable high-confidence predictions by FDS (positions)."""
    pool = cert[cert["high_confidence"].astype(bool)]
    if len(pool) < n:
        pool = cert
    # u orders as FDS without saturation; ties broken by row id for a deterministic pick.
    order = pool.assign(_u=pool["score_fds"].astype(float)).sort_values(
        ["_u", "row_id"], ascending=[False, True], kind="stable"
    )
    picks = [("most fragile", 0), ("median", len(order) // 2), ("most stable", len(order) - 1)][:n]
    out, seen = [], set()
    for name, i in picks:
        pos = int(cert.index.get_loc(order.index[i]))
        if pos not in seen:
            seen.add(pos)
            out.append((name, pos))
    return out


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1180px;padding:24px;color:#1a1a1a;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #0072B2;padding-bottom:4px;margin-top:2em}
h3{margin-top:1.4em}table{border-collapse:collapse;margin:8px 0 16px;font-size:.9em}
th,td{border:1px solid #d0d0d0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:.88em;word-break:break-all}
.missing{background:#fff4e5;border-left:4px solid #E69F00;padding:8px 12px;margin:8px 0}
.note{color:#555;font-size:.9em}.fig{margin:8px 0 24px}.vega-fig{width:100%}.grid{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
@media print{.fig,table{break-inside:avoid}h2,h3{break-after:avoid}}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: object, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if math.isinf(value):
            return "none" if value > 0 else "−∞"
        return f"{float(value):.{digits}f}"
    return str(value)


def _table(frame: pd.DataFrame, *, digits: int = 3, headers: Mapping[str, str] | None = None) -> str:
    headers = headers or {}
    head = "".join(f"<th>{_e(headers.get(c, c))}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for v in row:
            numeric = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
            cells.append(f"<td{' class=num' if numeric else ''}>{_e(_fmt(v, digits))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _missing(text: str) -> str:
    return f'<div class="missing"><strong>Not in this report:</strong> {text}</div>'


class _Figures:
    """Renders Vega-Lite specs to HTML divs; the vega bundle is inlined with the first one only.

    Each chart is drawn as SVG (crisp in print and in the PDF, :mod:`core.report_pdf`) into
    ``<div class="vega-fig">``; a chart whose spec fills its container's width gets the div's.
    """

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, spec: dict | viz.TrajectorySpecs, caption: str) -> str:
        specs = [spec.margin, spec.probability] if isinstance(spec, viz.TrajectorySpecs) else [spec]
        parts = []
        if self.count == 0:
            parts.append(f"<script>{vega_bundle()}</script>")
        for one in specs:
            div_id = f"figure-{self.count}"
            self.count += 1
            if "autosize" in one and "width" not in one:  # fit-x: the div's width, as a dashboard column's
                one = {**one, "width": "container"}
            data = json.dumps(one, allow_nan=False).replace("</", "<\\/")
            parts.append(
                f'<div class="vega-fig" id="{div_id}"></div><script>vegaEmbed("#{div_id}", {data}, '
                '{"actions": false, "renderer": "svg"});</script>'
            )
        return f'<div class="fig">{"".join(parts)}<p class="note">{_e(caption)}</p></div>'


def _model_rows(audits: Sequence[AuditInputs]) -> pd.DataFrame:
    rows = []
    for a in audits:
        ev, scores = a.evaluation, a.evaluation.get("scores") or {}
        conf = {k: v for k, v in scores.items() if v.get("kind") == "confidence" and v.get("auroc") is not None}
        best = max(conf, key=lambda k: conf[k]["auroc"]) if conf else None
        fds = scores.get("fds", {})
        nominal, frag = ev.get("nominal", {}), ev.get("fragility", {})
        rows.append(
            {
                "dataset": ev.get("dataset"),
                "model": ev.get("model"),
                "seed": ev.get("seed"),
                "accuracy": nominal.get("accuracy"),
                "AUROC (class)": nominal.get("auroc"),
                "NLL": nominal.get("nll"),
                "ECE": nominal.get("ece"),
                "mean RCMA (not near-ties)": frag.get("mean_rcma"),
                "near-ties left out": frag.get("n_near_tie"),
                "median RCMA": frag.get("median_rcma"),
                "share k* ≤ 2": frag.get("share_k_le_2"),
                "share brittle": frag.get("share_brittle"),
                "FDS AUROC": fds.get("auroc"),
                "best confidence score": best,
                "its AUROC": conf[best]["auroc"] if best else None,
                "FDS Capture@20": fds.get("capture@20"),
                "its Capture@20": conf[best].get("capture@20") if best else None,
            }
        )
    return pd.DataFrame(rows).astype(object).where(lambda f: f.notna(), None)


def _protocol_section(a: AuditInputs) -> str:
    p, proto = a.protocol, a.protocol.get("protocol", {})
    split = p.get("split", {})
    facts = pd.DataFrame(
        [
            ("dataset", f"{p.get('dataset')} ({p.get('source', '')})"),
            ("model", p.get("model")),
            ("seed", p.get("seed")),
            ("classes", ", ".join(map(str, a.classes)) if a.classes is not None else "not stored (older folder)"),
            ("split", ", ".join(f"{k} {v}" for k, v in split.items())),
            ("grouping", f"{proto.get('grouping')} ({len(p.get('groups', {}))} evidence groups)"),
            ("baseline", proto.get("baseline")),
            ("depth K", p.get("depth")),
            ("path rule", proto.get("path")),
            ("operators", ", ".join(proto.get("operators", []))),
            ("severities Λ", ", ".join(f"{v:g}" for v in proto.get("severities", []))),
            ("FDS weights (w1, w2, w3)", ", ".join(f"{v:.4g}" for v in proto.get("weights", []))),
            ("label channel", json.dumps(p.get("label_channel", {}), ensure_ascii=False)),
        ],
        columns=["item", "value"],
    ).astype({"value": str})
    prints = pd.DataFrame(
        [("protocol fingerprint", p.get("protocol_fingerprint")), ("certificate fingerprint", a.fingerprint)],
        columns=["fingerprint", "SHA-256"],
    )
    notes = a.evaluation.get("notes") or []
    return (
        "<h2 id='protocol'>Protocol and fingerprints</h2>"
        "<p>A certificate is only meaningful relative to its declared protocol. The certificate fingerprint "
        "covers the protocol, the groups, the baseline and the model's outputs on a fixed probe; review "
        "decisions are stored under it.</p>"
        + _table(facts)
        + _table(prints)
        + "".join(f"<p class='note'>Audit note: {_e(n)}</p>" for n in notes)
    )


def _metrics_section(audits: Sequence[AuditInputs]) -> str:
    return (
        "<h2 id='models'>Nominal vs fragility metrics per model</h2>"
        "<p>Nominal metrics (test split) say how often the model is right; the fragility metrics say how much "
        "of its confident support survives when evidence goes missing. Mean RCMA: mean normalised margin "
        "loss along the removal path (0 = none; above 1 = the prediction flipped), over the predictions that "
        f"are not near-ties: a near-tie (top two classes within a margin of {NEAR_TIE_MARGIN:g} nats) divides by an almost-zero "
        "margin and one of them can swamp the mean, so they are counted beside it and the median is shown over "
        "all predictions (folders written before this show the mean over every prediction and no count). "
        "Share k* ≤ 2: predictions that flip after removing at most two "
        "evidence groups. Share brittle: test predictions that are confident and break under the held-out "
        "stressors.</p>"
        + _table(_model_rows(audits))
        + (
            ""
            if len(audits) > 1
            else "<p class='note'>One audit was given; pass several audit folders to "
            "<code>python -m core report</code> for one row per model.</p>"
        )
    )


def _capture_ceiling_block(frame: pd.DataFrame, population: pd.DataFrame, brittle: np.ndarray) -> str:
    """Capture@q against its ceiling for every score, and the FDS queue's guarantee for new data."""
    from core.metrics.capture import capture_bound, capture_ceiling, guarantee_text

    if not brittle.any() or "score" not in frame:
        return _missing("capture against its ceiling — no held-out brittle prediction in this population.")
    table = pd.DataFrame({"score": frame["score"]})
    for q in (5, 10, 20):
        if f"capture@{q}" not in frame:
            continue
        ceiling = capture_ceiling(brittle, q=q / 100)
        table[f"capture@{q}"] = frame[f"capture@{q}"].astype(float)
        table[f"ceiling@{q}"] = ceiling
        table[f"÷ ceiling@{q}"] = frame[f"capture@{q}"].astype(float) / ceiling
    out = (
        "<p id='ceiling'><strong>Capture against its ceiling.</strong> With few brittle predictions even a "
        "perfect ranking captures little: the ceiling is the best share any ranking reaches with the budget's k reviews, "
        "min(1, k ÷ brittle), and ÷ ceiling says how close each score comes (1 = as good as possible).</p>"
        + _table(table)
    )
    if "score_fds" in population:
        bounds = [
            capture_bound(brittle, population["score_fds"].to_numpy(dtype=float), q=q / 100, confidence=0.9)
            for q in (5, 10, 20)
        ]
        out += (
            "<p><strong>Guarantee for new data (FDS queue):</strong> "
            + "; ".join(_e(guarantee_text(b)) for b in bounds)
            + ".</p><p class='note'>If new predictions come from the same source as this test split, reviewing "
            "every one whose FDS is at least the queue's cut catches at least that share of the brittle ones, with "
            "90 % confidence. The bound holds for any score distribution and although the cut is chosen on these "
            f"rows (DKW band; {len(population):,} ranked, {int(brittle.sum()):,} brittle; docs/method.md, A.6).</p>"
        )
    return out


def _fds_section(a: AuditInputs, figure: _Figures) -> str:
    scores = a.evaluation.get("scores") or {}
    frame = pd.DataFrame([{"score": k, **v} for k, v in scores.items()])
    cols = [c for c in ("score", "kind", "auroc", "capture@5", "capture@10", "capture@20", "aurc") if c in frame]
    cert = a.certificates
    population = cert[cert["high_confidence"].astype(bool)]
    pop_text = "high-confidence test predictions"
    if len(population) == 0 or str(frame.get("population", pd.Series(["high_confidence"])).iloc[0]) == "all":
        population, pop_text = cert, "all test predictions"
    score_cols = [c for c in cert.columns if c.startswith("score_")]
    brittle = population["brittle"].to_numpy(dtype=bool)
    out = [
        "<h2 id='fds'>FDS against the confidence scores</h2>",
        f"<p>Every score is a risk score (larger = riskier), evaluated on the {len(population):,} {pop_text} "
        f"against the held-out brittle labels ({int(brittle.sum()):,} brittle), which come from a separate "
        "stress channel and never enter the scores. AUROC: chance that a brittle prediction outranks a sound "
        "one (0.5 = chance). Capture@q: share of the brittle predictions among the top q % by the score.</p>",
        _table(frame[cols], headers={"auroc": "AUROC", "aurc": "AURC"}),
    ]
    if {"auroc", "capture@20"} <= set(frame.columns):
        out.append(
            figure(
                viz.score_metrics_spec(frame, capture_column="capture@20", highlight="fds"),
                "Orange: FDS. Left AUROC, right the share of brittle predictions in the top 20 %.",
            )
        )
    if brittle.any():
        capture = capture_curves(
            population[score_cols].rename(columns=lambda c: c.removeprefix("score_")).reset_index(drop=True),
            brittle,
            _BUDGETS,
        )
        curves, ceiling, random = capture.curves, capture.ceiling, capture.random
        out.append(
            figure(
                viz.coverage_spec(
                    _BUDGETS,
                    curves,
                    ceiling=ceiling,
                    random=random,
                    selected=0.2,
                    highlight="fds",
                    title="Brittle predictions found within the budget",
                    y_title="share of held-out brittle found (0–1)",
                ),
                "Each line ranks the predictions by one score. Dashed grey: best possible; dotted grey: "
                "random. Scores that order the predictions identically draw on top of each other.",
            )
        )
    else:
        out.append(_missing("coverage curves — no held-out brittle prediction in this population."))
    out.append(_capture_ceiling_block(frame, population, brittle))
    tau_p = float(a.protocol.get("label_channel", {}).get("tau_p", LabelChannel().tau_p))
    out.append(
        "<div class='grid'>"
        + figure(
            viz.confidence_fds_spec(
                cert["confidence"].to_numpy(float),
                cert["fds"].to_numpy(float),
                brittle=cert["brittle"].to_numpy(bool),
                threshold=tau_p,
            ),
            "Each dot is a test prediction; high up = fragile. Confident predictions spread over the whole FDS range.",
        )
        + figure(
            viz.flip_budget_spec(cert["flip_budget"].to_numpy(int), depth=int(a.protocol.get("depth"))),
            "Groups removed (most supportive first) until the prediction flips.",
        )
        + "</div>"
    )
    return "".join(out)


def _triage_section(a: AuditInputs, reviews: ReviewInputs | None, reviews_note: str, budget: float) -> str:
    cert = a.certificates
    population = cert[cert["high_confidence"].astype(bool)]
    scope = "high-confidence test predictions"
    if len(population) == 0:
        population, scope = cert, "test predictions (none is high-confidence)"
    depth = int(a.protocol.get("depth") or cert["flip_budget"].max())
    frame = pd.DataFrame(
        {
            "sample_id": population["row_id"].map(str).to_numpy(),
            "true_class": population["y_true"].map(str).to_numpy(),
            "predicted": population["pred"].map(str).to_numpy(),
            "confidence": population["confidence"],
            "fds": population["fds"],
            "flip_budget": population["flip_budget"],
            "flipped": population["flipped"] if "flipped" in population else population["flip_budget"] <= depth,
            "brittle": population["brittle"].astype(bool),
            "u": population["score_fds"],
        }
    )
    queue = rank_queue(frame, "u", budget=budget)
    out = [
        f"<h2 id='triage'>Triage summary</h2><p>The review queue: the top {budget:.0%} of the {len(frame):,} "
        f"{scope} by FDS — {len(queue):,} cases, {int(queue['brittle'].sum()):,} of them held-out brittle.</p>"
    ]
    shown = queue.drop(columns="u")
    if reviews is None:
        out.append(_missing(f"reviewers' decisions — {reviews_note}"))
    else:
        latest = reviews.latest
        decided = latest.assign(label=latest["decision"].map(lambda d: DECISION_LABELS.get(d, d)))
        counts = decided["label"].value_counts().rename_axis("decision").reset_index(name="samples")
        in_queue = decided["sample_id"].isin(queue["sample_id"].map(str))
        n_adjudications = int(
            ((reviews.history["kind"] == "adjudication") & (reviews.history["decision"] != "retracted")).sum()
        )
        out.append(
            f"<p>Review database <code>{_e(_name(reviews.path))}</code>: {len(reviews.history):,} entr{'y' if len(reviews.history) == 1 else 'ies'} on "
            f"{reviews.n_samples:,} sample(s) of this audit — {reviews.n_decisions:,} decision(s)"
            + (f" ({n_adjudications:,} of them adjudications)" if n_adjudications else "")
            + f" and {reviews.n_retractions:,} retraction(s); {len(latest):,} sample(s) have a decision in force; "
            f"{int(in_queue.sum()):,} of the {len(queue):,} queued cases are reviewed (the decision in force per "
            "sample below).</p>"
        )
        if reviews.verification:
            out.append(f"<p><strong>{_e(reviews.verification[0].upper() + reviews.verification[1:])}.</strong></p>")
        if len(latest):
            out.append(_table(counts))
        else:
            out.append(_missing("reviewers' decisions — none is in force for this audit's fingerprint."))
        out.append(_agreement_section(reviews))
        shown = attach_decisions(queue, latest).drop(columns=["u", "reviewed_at"])
        shown["decision"] = shown["decision"].astype(object).where(shown["decision"].notna(), "not reviewed")
    shown = flip_budget_shown(shown, depth=depth)
    limit = 50
    out.append(
        _table(
            shown.head(limit),
            headers={
                "sample_id": "sample id",
                "true_class": "true class",
                "flip_budget": "k*",
                "fds": "FDS",
                "rank": "rank",
            },
        )
    )
    if len(shown) > limit:
        out.append(f"<p class='note'>First {limit} of {len(shown):,} queued cases.</p>")
    return "".join(out)


def _name(label: str) -> str:
    """A file or folder as the report names it: its last part, never the machine's folders."""
    return Path(str(label)).name or str(label)


def _kappa(value: float) -> str:
    return "undefined" if math.isnan(value) else f"{value:.3f}"


def _agreement_section(reviews: ReviewInputs) -> str:
    """Agreement between reviewers (Cohen's kappa per pair, Fleiss' kappa) and the adjudicated decisions."""
    from core.reviews import agreement

    ratings = reviews.ratings
    out = ["<h3>Agreement between reviewers</h3>"]
    if ratings.empty or ratings.groupby("sample_id")["rater"].nunique().max() < 2:
        out.append(
            f"<p class='note'>No case has decisions by two or more reviewers (the plan asks for "
            f"{reviews.reviewers_per_case} per case), so there is no agreement to measure.</p>"
        )
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UndefinedMetricWarning)
            result = agreement(ratings)
        out.append(
            f"<p>Each reviewer's decision in force per case ({reviews.reviewers_per_case} reviewer(s) per case "
            f"planned; adjudications are not ratings). {result.multi_rated:,} case(s) have two or more decisions, "
            f"{result.disagreements:,} of them disagree. Fleiss' kappa over all reviewers: "
            f"<strong>{_kappa(result.fleiss)}</strong> on {result.fleiss_cases:,} case(s) decided by exactly "
            f"{result.raters_per_case} reviewers. Kappa is 1 for perfect agreement and 0 at chance level.</p>"
        )
        if len(result.pairs):
            out.append(
                _table(
                    result.pairs.assign(kappa=result.pairs["kappa"].map(_kappa)),
                    headers={
                        "rater_a": "reviewer",
                        "rater_b": "reviewer",
                        "cases": "cases both decided",
                        "agreed": "same decision",
                        "kappa": "Cohen's kappa",
                    },
                )
            )
        out += [
            f"<p class='note'>{_e(w.message)}</p>" for w in caught if issubclass(w.category, UndefinedMetricWarning)
        ]
    final = reviews.latest[reviews.latest["kind"] == "adjudication"]
    out.append("<h3>Adjudicated decisions</h3>")
    if final.empty:
        out.append("<p class='note'>No case is adjudicated.</p>")
    else:
        by_case = ratings.groupby("sample_id").apply(
            lambda g: "; ".join(f"{r}: {DECISION_LABELS.get(d, d)}" for r, d in zip(g["reviewer"], g["decision"])),
            include_groups=False,
        )
        table = pd.DataFrame(
            {
                "sample_id": final["sample_id"].to_numpy(),
                "final decision": final["decision"].map(lambda d: DECISION_LABELS.get(d, d)).to_numpy(),
                "adjudicated by": final["reviewer"].to_numpy(),
                "reviewers' decisions": final["sample_id"].map(by_case).fillna("").to_numpy(),
                "note": final["note"].to_numpy(),
            }
        )
        out.append(
            f"<p>{len(final):,} case(s) carry an admin's final decision, which overrides the reviewers'.</p>"
            + _table(table, headers={"sample_id": "sample id"})
        )
    return "".join(out)


def _examples_section(a: AuditInputs, figure: _Figures) -> str:
    cert = a.certificates
    binary = _n_classes(a) == 2
    depth = int(a.protocol.get("depth") or cert["flip_budget"].max())
    out = [
        "<h2 id='examples'>Example certificates</h2>",
        "<p>Three high-confidence predictions: the most fragile, the median and the most stable by FDS. The "
        "trajectory removes the most supportive evidence group at each step (replaced by the baseline); the "
        "collapse curve shows the share of the original margin lost, whose mean is RCMA.</p>",
    ]
    if not binary:
        out.append(
            _missing(
                "the probability panel of the trajectories — the audit folder stores the margins "
                "along the path, and for more than two classes the probabilities cannot be recovered "
                "from them."
            )
        )
    for name, pos in _examples(cert):
        row = cert.iloc[pos]
        path = [str(g) for g in row["path"]]
        margins = np.asarray(row["path_margins"], dtype=float)
        # Binary margins are log-odds of the clipped probabilities, so p = sigmoid(m) exactly.
        proba = 1.0 / (1.0 + np.exp(-margins)) if binary else np.full(margins.shape, np.nan)
        k = int(row["flip_budget"])
        facts = (
            f"sample {row['row_id']}: confidence {row['confidence']:.3f}, FDS {row['fds']:.3f}, "
            f"predicted {row['pred']} (true class {row['y_true']}), k* {flip_budget_text(k, depth)}, "
            f"RCMA {row['rcma']:.3f}, "
            f"held-out brittle: {'yes' if row['brittle'] else 'no'}; path: {' → '.join(path)}"
        )
        out.append(f"<h3>{_e(name.capitalize())}</h3><p>{_e(facts)}</p><div class='grid'>")
        out.append(
            figure(
                viz.trajectory_spec(path, margins, proba, flip_budget=k, class_label=str(row["pred"])),
                f"Margin (nats) and probability of the predicted class ({row['pred']}) after each removal; "
                "vermillion = flipped.",
            )
        )
        out.append(
            figure(
                viz.collapse_spec(collapse_from_margins(margins), rcma=float(row["rcma"]), path=path),
                "Share of the original margin lost after k removals (1 = all of it).",
            )
        )
        out.append("</div>")
    return "".join(out)


def _paired_section(paired: PairedInputs | None, note: str, figure: _Figures) -> str:
    out = ["<h2 id='paired'>Paired evaluations</h2>"]
    if paired is None:
        return out[0] + _missing(f"interval bars and the recapture queue — {note}")
    out.append(
        f"<p>From <code>{_e(_name(paired.label))}</code>. Identified intervals: every value of the transition "
        "metrics (H harmful accepted flips, L lost acceptances, dM_k confidence drop) that some pairing "
        "consistent with the information level allows.</p>"
    )
    out += [f"<p class='note'>{_e(n)}</p>" for n in paired.notes]
    out.append(
        figure(viz.intervals_spec(paired.intervals), "Narrower bars = better identified; ◆ = the observed pairing.")
    )
    out.append(_table(paired.intervals, digits=4))
    q = paired.queue
    if q is None:
        out.append(_missing("the recapture-queue summary — no screening in the paired folder."))
    elif len(q) == 0:
        out.append(_missing("the recapture-queue summary — the queue is empty."))
    else:
        cols = [
            c for c in ("k", "n", "queue_expected_failures", "total_failures", "coverage", "ceiling") if c in q.columns
        ]
        summary = q.groupby("model", sort=True)[cols].first().reset_index()
        if "queue_expected_failures" in summary:  # an expectation over tied places: one decimal is honest
            summary["queue_expected_failures"] = [f"{v:,.1f}" for v in summary["queue_expected_failures"]]
        out.append(
            "<h3>Recapture queue</h3><p>Images to re-test physically, per model: k re-tests among n "
            "clean-correct images; coverage = expected share of the failures under the outcome conditions (real "
            "re-captures, or the demo pool's simulated ones) that the queue re-tests, "
            "ceiling = the best any ranking could do at this budget.</p>"
        )
        out.append(
            _table(
                summary, headers={"queue_expected_failures": "expected failures found", "total_failures": "failures"}
            )
        )
    return "".join(out)


def report_title(audit: AuditInputs) -> str:
    """The report's default title: dataset, model and seed of a tool-fitted audit; for the user's
    own fitted model its name alone, since the tool neither split its data nor fitted it by a seed
    (its seed only draws the label channel, listed under *Protocol*).

    Examples
    --------
    >>> own = AuditInputs("m", pd.DataFrame(), {"model": "own:Pipeline", "seed": 0}, {"source": "audit_model"})
    >>> report_title(own)
    'Fragility audit: your model Pipeline'
    >>> report_title(AuditInputs("b", pd.DataFrame(), {"dataset": "adult", "model": "logreg", "seed": 2}, {}))
    'Fragility audit: adult / logreg / seed 2'
    """
    ev = audit.evaluation
    if audit.protocol.get("source") == OWN_MODEL_SOURCE:
        return f"Fragility audit: your model {str(ev.get('model')).removeprefix('own:')}"
    return f"Fragility audit: {ev.get('dataset')} / {ev.get('model')} / seed {ev.get('seed')}"


def build_report(
    audits: AuditInputs | Sequence[AuditInputs],
    *,
    reviews: ReviewInputs | None = None,
    reviews_note: str = "no review database was given.",
    paired: PairedInputs | None = None,
    paired_note: str = "no paired data was given (pass --paired DIR).",
    budget: float = 0.1,
    title: str | None = None,
) -> str:
    """The report as one self-contained HTML document.

    Parameters
    ----------
    audits : AuditInputs or sequence of AuditInputs
        The first is reported in full; all appear in the per-model table.
    reviews : ReviewInputs, optional
        Decisions of the first audit; ``reviews_note`` says why they are absent otherwise.
    paired : PairedInputs, optional
        Paired evaluations; ``paired_note`` says why they are absent otherwise.
    budget : float, default=0.1
        Review budget of the triage queue, as a fraction of the high-confidence predictions
        (the Triage page's default).

    Returns
    -------
    str
        HTML5 with the vega bundle inlined once; nothing is fetched when it is opened.
    """
    audits = [audits] if isinstance(audits, AuditInputs) else list(audits)
    if not audits:
        raise ValueError("`audits` must hold at least one audit.")
    budget = check_budget(budget, name="budget")
    a = audits[0]
    ev = a.evaluation
    title = title or report_title(a)
    figure = _Figures()
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<p class='note'>Built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from <code>{_e(_name(a.label))}</code>. "
        f"{ev.get('n_test', len(a.certificates)):,} test predictions, {ev.get('n_high_confidence', 0):,} "
        f"high-confidence, {ev.get('n_brittle', 0):,} held-out brittle. This file is self-contained and works "
        "offline.</p>",
        "<nav><a href='#protocol'>Protocol</a> · <a href='#models'>Metrics per model</a> · <a href='#fds'>FDS vs "
        "confidence</a> · <a href='#triage'>Triage</a> · <a href='#examples'>Example certificates</a> · "
        "<a href='#paired'>Paired evaluations</a></nav>",
        _protocol_section(a),
        _metrics_section(audits),
        _fds_section(a, figure),
        _triage_section(a, reviews, reviews_note, budget),
        _examples_section(a, figure),
        _paired_section(paired, paired_note, figure),
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "".join(body)
        + f"<!-- figures: {figure.count} --></body></html>\n"
    )


def report_for_result(
    result: AuditResult,
    *,
    reviews_db: str | os.PathLike[str] | None = None,
    paired_dir: str | os.PathLike[str] | None = None,
    budget: float = 0.1,
    reviews_note: str = "no review database is configured.",
) -> str:
    """The report of an in-memory audit (the dashboard's "Download report").

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    reviews_db : path, optional
        Review database; left out (and said so) when None or when the file does not exist yet.
    paired_dir : path, optional
        Demo pool or ``python -m core paired`` output folder.
    reviews_note : str, optional
        Why the decisions are left out when ``reviews_db`` is None.
    """
    audit = audit_inputs(result)
    reviews, note = None, reviews_note
    if reviews_db is not None:
        from core.reviews.backend import is_url

        if is_url(reviews_db) or Path(reviews_db).expanduser().is_file():
            reviews = load_reviews(reviews_db, audit.fingerprint)
        else:
            note = f"the review database {_name(reviews_db)!r} holds no decision yet (the file does not exist)."
    paired = load_paired(paired_dir) if paired_dir is not None else None
    return build_report(
        audit,
        reviews=reviews,
        reviews_note=note,
        paired=paired,
        paired_note="no paired folder was given.",
        budget=budget,
    )


def write_report(text: str, out: str | os.PathLike[str]) -> Path:
    """Write ``text`` to ``out`` atomically: a temporary file in the same folder, then ``os.replace``.

    Raises
    ------
    ValueError
        When the folder of ``out`` does not exist or ``out`` is a folder.
    """
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a folder; expected a file path such as report.html.")
    if not out.parent.is_dir():
        raise ValueError(f"the folder of --out {str(out)!r} does not exist.")
    atomic_write_text(out, text)  # the one atomic writer: temporary file, fsync, os.replace
    return out
