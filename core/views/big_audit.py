"""What the tabular pages show of a ``certify`` output folder of any size (a "big audit").

Every function queries the folder out of core through :class:`core.scale.results.CertifyResults`
(partitioned Parquet read column-wise, pyarrow datasets) and returns only what one page shows: a
page of the table, the top of a queue, one row's certificate, totals. Nothing here turns the
whole table into pandas.

==========================  ==================================================================
view                        page
==========================  ==================================================================
:func:`status_text`         every page: complete, or which part is shown of a run not finished
:func:`big_overview`        Overview: rows, summary, k* and FDS distributions, per class
:func:`explorer_page`       Explorer: one page of the sorted, filtered rows
:func:`row_certificate`     Explorer, Triage: one row's certificate from its stored trajectory
:func:`recompute_row`       Explorer: one row certified again with the run's model, in full
:func:`triage_queue`        Triage: the top of all rows by a risk score
:func:`big_report_html`     Overview: the report of every row
==========================  ==================================================================
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.scale.results import (
    FILTER_OPS,
    CertifyFolderError,
    CertifyResults,
    RecomputedRow,
    RowFilter,
    certify_run_finished,
    is_certify_folder,
    list_certify_folders,
    locate_input,
    open_certify_folder,
    recompute_row,
    run_is_live,
)

__all__ = [
    "FILTER_OPS",
    "PAGE_COLUMNS",
    "QUEUE_SCORES",
    "BigOverview",
    "CertifyFolderError",
    "CertifyResults",
    "ExplorerPage",
    "RowCertificate",
    "RecomputedRow",
    "RowFilter",
    "big_audit_key",
    "big_overview",
    "big_report_html",
    "certify_run_finished",
    "class_names",
    "explorer_page",
    "filters_from_form",
    "is_certify_folder",
    "list_certify_folders",
    "locate_input",
    "model_text",
    "open_certify_folder",
    "page_columns",
    "recompute_row",
    "row_certificate",
    "run_is_live",
    "status_text",
    "triage_queue",
]

#: Columns of the Explorer's table, in order (those the folder has).
PAGE_COLUMNS = (
    "row",
    "label",
    "pred_label",
    "correct",
    "confidence",
    "margin",
    "flip_budget",
    "fds",
    "rcma",
    "u",
    "in_fit_sample",
)
#: Triage scores of a certify folder: name -> (column, the column's order that puts risk first).
#: The names and meaning are those of :data:`core.views.ranking.SCORES` (larger = riskier).
QUEUE_SCORES = {
    "fds": ("u", "descending"),  # FDS = 1 − exp(−u) ranks as u, without saturating at 1
    "rcma": ("rcma", "descending"),
    "inv_flip_budget": ("flip_budget", "ascending"),
    "degradation": ("degradation", "descending"),
    "one_step": ("one_step_max", "descending"),
    "max_softmax": ("confidence", "ascending"),
}
#: Confidence from which a prediction counts as high-confidence (SPEC A.5 ``τ_p``).
HIGH_CONFIDENCE = 0.9


def status_text(results: CertifyResults) -> str:
    """One sentence on what is shown: every row of a finished run, or the part done so far."""
    rows = f"{results.n_rows:,} rows"
    parts = f"{results.partitions} partition{'' if results.partitions == 1 else 's'}"
    if results.complete:
        return f"All {rows} of the finished certify run ({parts})."
    being = f"; {len(results.pending)} more partition(s) being written" if results.pending else ""
    then = (
        "each partition joins them once the run records it"
        if results.running
        else "run the same certify command again to finish it"
    )
    state = "is still running" if results.running else "was interrupted"
    return (
        f"Incomplete: this certify run {state}. Shown: the {rows} of the {parts} finished so far{being}; "
        f"totals and queues cover these rows only, and {then}."
    )


def class_names(results: CertifyResults) -> list[str]:
    """The task's classes, in ``predict_proba``'s column order (the class filters, the path's predictions)."""
    return [str(c) for c in results.task_info().get("classes", [])]


def model_text(results: CertifyResults) -> str:
    """The model request as people read it (fitted here, or a saved audit's task)."""
    request = results.request
    if "fit" in request:
        fit = request["fit"]
        return f"{fit.get('model')} fitted on the first {fit.get('fit_rows'):,} rows (target {fit.get('target')})"
    info = results.task_info()
    family = (info.get("model") or {}).get("family", "saved")
    return f"a saved audit's {family} model (target {info.get('target', request.get('target'))})"


@dataclass(frozen=True, kw_only=True)
class BigOverview:
    """The Overview of a certify folder.

    Attributes
    ----------
    n_rows : int
        Rows shown (every row of a finished run).
    summary : dict
        ``_summary.json``'s totals over the held-out rows (recomputed over the rows shown when the
        run is not finished).
    flip_budget : DataFrame
        ``k*`` (as text, "no flip ≤ K" for K + 1) and ``rows`` (held-out rows).
    fds_histogram : DataFrame
        ``low``, ``high``, ``rows`` (held-out rows per FDS bin).
    classes : DataFrame
        Per true class: ``class``, ``rows``, ``predicted_as`` (rows predicted so), ``accuracy``,
        ``high_confidence`` and ``mean_fds`` (held-out rows).
    depth : int or None
    """

    n_rows: int
    summary: dict
    flip_budget: pd.DataFrame
    fds_histogram: pd.DataFrame
    classes: pd.DataFrame
    depth: int | None


def _held_out_classes(results: CertifyResults) -> pd.DataFrame:
    """Per-class totals over the held-out rows, accumulated batch by batch."""
    columns = [c for c in ("label", "pred_label", "correct", "confidence", "fds") if c in results.columns]
    held = [RowFilter(column="in_fit_sample", op="==", value=False)]
    totals: dict[str, np.ndarray] = {}  # class -> rows, predicted_as, labelled, correct, high conf, fds sum

    def add(name, slot, value):
        totals.setdefault(name, np.zeros(6))[slot] += value

    for batch in results.scan(columns, filters=held):
        t = pa.Table.from_batches([batch])
        if "label" in t.column_names:
            label = pc.fill_null(t.column("label"), "(no label)")
            g = (
                pa.table(
                    {
                        "c": label,
                        "ok": pc.cast(pc.fill_null(t.column("correct"), False), pa.int64()),
                        "has": pc.cast(pc.is_valid(t.column("correct")), pa.int64()),
                        "hc": pc.cast(pc.greater_equal(t.column("confidence"), HIGH_CONFIDENCE), pa.int64()),
                        "fds": t.column("fds"),
                    }
                )
                .group_by("c")
                .aggregate([("c", "count"), ("ok", "sum"), ("has", "sum"), ("hc", "sum"), ("fds", "sum")])
            )
            for row in g.to_pylist():
                add(row["c"], 0, row["c_count"])
                add(row["c"], 2, row["has_sum"])
                add(row["c"], 3, row["ok_sum"])
                add(row["c"], 4, row["hc_sum"])
                add(row["c"], 5, row["fds_sum"])
        vc = pc.value_counts(t.column("pred_label"))
        for value, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            add(value, 1, n)
    rows = []
    for name in sorted(totals):
        n, predicted, labelled, correct, hc, fds = totals[name]
        rows.append(
            {
                "class": name,
                "rows": int(n),
                "predicted_as": int(predicted),
                "accuracy": correct / labelled if labelled else np.nan,
                "high_confidence": int(hc),
                "mean_fds": fds / n if n else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["class", "rows", "predicted_as", "accuracy", "high_confidence", "mean_fds"])


def big_overview(results: CertifyResults) -> BigOverview:
    """The Overview of ``results``: totals, distributions and per-class table over every row shown."""
    from core.scale.certify import summarize_output

    depth = results.depth()
    if results.summary is not None:
        summary = results.summary
    elif results.partitions:
        summary = summarize_output(
            results.path, list(results.partition_infos()), operators=results.operators, depth=depth
        )
    else:
        summary = {"n_rows": 0, "n_held_out": 0, "flip_budget_counts": {}, "fds_histogram": None}
    counts = summary.get("flip_budget_counts") or {}
    flip = pd.DataFrame(
        {
            "k*": [f"no flip ≤ {depth}" if depth is not None and int(k) > depth else str(k) for k in counts],
            "rows": [int(v) for v in counts.values()],
        }
    )
    hist = summary.get("fds_histogram") or {"edges": [], "counts": []}
    edges = hist["edges"]
    fds = pd.DataFrame({"low": edges[:-1], "high": edges[1:], "rows": hist["counts"]})
    return BigOverview(
        n_rows=results.n_rows,
        summary=summary,
        flip_budget=flip,
        fds_histogram=fds,
        classes=_held_out_classes(results) if results.partitions else pd.DataFrame(),
        depth=depth,
    )


@dataclass(frozen=True, kw_only=True)
class ExplorerPage:
    """One page of the Explorer's table.

    Attributes
    ----------
    frame : DataFrame
        The page's rows (:data:`PAGE_COLUMNS` the folder has, and the id column), as stored.
    total : int
        Rows passing the filters (all pages).
    page, pages : int
        This page (0-based) and the number of pages (at least 1).
    """

    frame: pd.DataFrame
    total: int
    page: int
    pages: int


def page_columns(results: CertifyResults) -> list[str]:
    """The Explorer's columns: :data:`PAGE_COLUMNS` the folder has, the id column after ``row``."""
    have = results.columns
    id_column = (results.request.get("fit") or {}).get("id_column") or results.request.get("id_column")
    names = [c for c in PAGE_COLUMNS if c in have]
    if id_column and id_column in have:
        names.insert(1, id_column)
    return names


def explorer_page(
    results: CertifyResults,
    *,
    sort: str = "row",
    descending: bool = False,
    filters: Sequence[RowFilter] = (),
    page: int = 0,
    page_size: int = 50,
) -> ExplorerPage:
    """Page ``page`` of the rows passing ``filters``, sorted by ``sort`` (ties by row; missing last).

    Equals ``frame[mask].sort_values([sort, "row"], ascending=[not descending, True],
    na_position="last").iloc[page * page_size:(page + 1) * page_size]`` on the whole table,
    without reading it: only the sort and filter columns of every row, and the page's rows.
    A page past the last is the last.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, (int, np.integer)) or not 1 <= page_size <= 10_000:
        raise ValueError(f"`page_size` must be an int in [1, 10000]; got {page_size!r}.")
    if isinstance(page, bool) or not isinstance(page, (int, np.integer)) or page < 0:
        raise ValueError(f"`page` must be an int >= 0; got {page!r}.")
    order = results.order(sort=sort, descending=descending, filters=filters)
    total = len(order)
    pages = max(1, -(-total // page_size))
    page = min(int(page), pages - 1)
    frame = results.rows(order.slice(page * page_size, page_size), columns=page_columns(results)).to_pandas()
    return ExplorerPage(frame=frame, total=total, page=page, pages=pages)


@dataclass(frozen=True, kw_only=True)
class RowCertificate:
    """The certificate of one row, from the trajectory ``certify`` stored.

    Attributes
    ----------
    row : int
    values : dict
        The row's scalar columns (label, prediction, confidence, scores, λ* per operator).
    steps : DataFrame
        The removal path: ``step`` (0 = nothing removed), ``removed`` (group removed at that
        step), ``margin`` (original-class margin after it), ``predicted`` (class after it).
    lambdas : DataFrame
        ``operator`` and ``lambda_star`` (inf = no flip).
    flip_budget_text : str
        ``k*`` as people read it ("no flip ≤ K" when the path does not flip).
    """

    row: int
    values: dict
    steps: pd.DataFrame
    lambdas: pd.DataFrame
    flip_budget_text: str


def row_certificate(results: CertifyResults, row: int) -> RowCertificate:
    """The certificate of input row ``row`` (reads its partition only).

    Raises
    ------
    ValueError
        ``row`` is not a row the folder shows (the message says which are).
    """
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
        raise ValueError(f"`row` must be an int; got {row!r}.")
    columns = [*results.columns, "path", "path_margins", "path_preds"]
    record = results.rows([int(row)], columns=columns).to_pylist()[0]
    classes = class_names(results)
    path, margins, preds = record.pop("path"), record.pop("path_margins"), record.pop("path_preds")
    steps = pd.DataFrame(
        {
            "step": np.arange(len(margins)),
            "removed": ["(none)", *path],
            "margin": margins,
            "predicted": [classes[p] if 0 <= p < len(classes) else str(p) for p in preds],
        }
    )
    lambdas = pd.DataFrame(
        {"operator": list(results.operators), "lambda_star": [record[f"lambda_star_{op}"] for op in results.operators]}
    )
    depth = len(path)
    k = int(record["flip_budget"])
    return RowCertificate(
        row=int(row),
        values=record,
        steps=steps,
        lambdas=lambdas,
        flip_budget_text=f"no flip ≤ {depth}" if k > depth else str(k),
    )


def triage_queue(results: CertifyResults, *, score: str, length: int, high_confidence_only: bool) -> pd.DataFrame:
    """The review queue: the top ``length`` of every held-out row by the risk score ``score``.

    Columns are those the review flow reads (:mod:`core.views.ranking`): ``rank`` (1-based),
    ``sample_id`` (the input row), ``true_class``, ``predicted``, ``confidence``, ``fds``,
    ``flip_budget``, ``score_value`` (the score, larger = riskier) and ``high_confidence``.
    Ties keep row order, as :func:`core.views.ranking.rank_queue` keeps frame order.
    """
    if score not in QUEUE_SCORES:
        raise ValueError(f"`score` must be one of {list(QUEUE_SCORES)}; got {score!r}.")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or not 1 <= length <= 100_000:
        raise ValueError(f"`length` must be an int in [1, 100000]; got {length!r}.")
    column, direction = QUEUE_SCORES[score]
    filters = [RowFilter(column="in_fit_sample", op="==", value=False)]
    if high_confidence_only:
        filters.append(RowFilter(column="confidence", op=">=", value=HIGH_CONFIDENCE))
    order = results.order(sort=column, descending=direction == "descending", filters=filters)
    wanted = ["row", "label", "pred_label", "confidence", "fds", "flip_budget", column]
    have = results.columns
    top = results.rows(order.slice(0, int(length)), columns=list(dict.fromkeys(c for c in wanted if c in have)))
    frame = top.to_pandas()
    value = frame[column].astype(float)
    queue = pd.DataFrame(
        {
            "rank": np.arange(1, len(frame) + 1),
            "sample_id": frame["row"].astype(np.int64),
            "true_class": frame["label"] if "label" in frame else None,
            "predicted": frame["pred_label"],
            "confidence": frame["confidence"],
            "fds": frame["fds"],
            "flip_budget": frame["flip_budget"].astype(np.int64),
            "score_value": -value if direction == "ascending" else value,
            "high_confidence": frame["confidence"] >= HIGH_CONFIDENCE,
        }
    )
    if score == "inv_flip_budget":
        queue["score_value"] = 1.0 / value
    return queue


def big_audit_key(results: CertifyResults) -> dict:
    """Fields of the review store's ``AuditKey`` for decisions on this folder's rows.

    ``fingerprint`` is the certificates' fingerprint; ``data_fingerprint`` the SHA-256 of the
    input's identity (file names, sizes, footer digests), so two certify runs of the same input
    share it and show each other's decisions; ``model``, ``protocol_fingerprint`` as audits do.
    """
    import hashlib

    from core.cfc.protocol import Protocol

    data = json.dumps(results.config.get("data") or {}, sort_keys=True).encode()
    protocol = results.request.get("protocol")
    return {
        "fingerprint": results.fingerprint,
        "data_fingerprint": hashlib.sha256(data).hexdigest(),
        "model": model_text(results),
        "protocol_fingerprint": Protocol.from_dict(protocol).fingerprint if protocol else "",
    }


def _table_html(frame: pd.DataFrame, *, digits: int = 4) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for values in frame.itertuples(index=False):
        cells = []
        for v in values:
            if isinstance(v, float):
                text = "—" if np.isnan(v) else ("∞" if np.isinf(v) else f"{v:.{digits}g}")
            else:
                text = str(v)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _bars_html(labels: Sequence[str], counts: Sequence[int]) -> str:
    top = max([1, *counts])
    rows = "".join(
        f"<tr><td>{html.escape(str(label))}</td><td class='bar'><span style='width:{100 * n / top:.1f}%'></span></td>"
        f"<td>{n:,}</td></tr>"
        for label, n in zip(labels, counts)
    )
    return f"<table class='bars'>{rows}</table>"


def big_report_html(
    results: CertifyResults, *, title: str | None = None, top: int = 100, decisions: pd.DataFrame | None = None
) -> str:
    """A self-contained HTML report of every row shown: totals, k* and FDS distributions, per
    class, per operator, the ``top`` riskiest held-out rows by FDS, and the reviewers' latest
    ``decisions`` on its rows when given (``ReviewStore.latest``; no script, offline)."""
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or not 1 <= top <= 10_000:
        raise ValueError(f"`top` must be an int in [1, 10000]; got {top!r}.")
    view = big_overview(results)
    s = view.summary
    name = title or results.path.name

    def num(key: str, fmt: str) -> str:
        value = s.get(key)
        return "—" if value is None else format(value, fmt)

    totals = pd.DataFrame(
        [
            ("rows certified", f"{view.n_rows:,}"),
            ("held-out rows (not in the model's fitting sample)", f"{s.get('n_held_out', 0):,}"),
            ("accuracy (held-out rows with a label)", num("accuracy", ".4f")),
            ("mean FDS (risk)", num("mean_fds", ".4f")),
            ("mean RCMA (risk)", num("mean_rcma", ".4f")),
            ("share with k* ≤ 2", num("share_flip_budget_le_2", ".4f")),
            (f"share with confidence ≥ {HIGH_CONFIDENCE}", num("share_high_confidence", ".4f")),
            ("high-confidence and k* ≤ 2 (count)", f"{s.get('high_confidence_brittle', 0):,}"),
            *[(f"share flipped by {op}", num(f"share_flipped_{op}", ".4f")) for op in results.operators],
        ],
        columns=["", "value"],
    )
    riskiest = triage_queue(results, score="fds", length=top, high_confidence_only=False) if view.n_rows else None
    parts = [
        f"<h1>Certificates of {html.escape(name)}</h1>",
        f"<p class='status'>{html.escape(status_text(results))}</p>",
        f"<p>Model: {html.escape(model_text(results))}. Fingerprint <code>{html.escape(results.fingerprint)}</code>. "
        f"Made {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.</p>",
        "<h2>Totals over the held-out rows</h2>",
        _table_html(totals),
        "<h2>Flip budget k* (groups removed until the prediction flips; smaller = more fragile)</h2>",
        _bars_html(view.flip_budget["k*"], view.flip_budget["rows"]),
        "<h2>FDS (larger = more fragile)</h2>",
        _bars_html(
            [f"{lo:.2f}–{hi:.2f}" for lo, hi in zip(view.fds_histogram["low"], view.fds_histogram["high"])],
            view.fds_histogram["rows"],
        ),
        "<h2>Per true class (held-out rows)</h2>",
        _table_html(view.classes) if not view.classes.empty else "<p>No row yet.</p>",
    ]
    if riskiest is not None:
        shown = riskiest.drop(columns=["score_value"]).rename(columns={"sample_id": "row"})
        parts += [f"<h2>The {len(shown)} riskiest held-out rows by FDS</h2>", _table_html(shown)]
    if decisions is not None:
        counts = decisions["decision"].value_counts().rename_axis("decision").reset_index(name="rows")
        shown = [c for c in ("sample_id", "decision", "reviewer", "reasons", "note") if c in decisions.columns]
        parts += [
            f"<h2>Review decisions ({len(decisions):,} rows decided)</h2>",
            _table_html(counts) if len(decisions) else "<p>No row has been reviewed yet.</p>",
        ]
        if len(decisions):
            listed = decisions[shown].rename(columns={"sample_id": "row"}).head(1000)
            parts.append(_table_html(listed.astype(str)))
    style = (
        "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}"
        "th{background:#f4f4f4}.bars td.bar{width:420px}.bars span{display:block;height:12px;background:#4c78a8}"
        ".status{font-weight:600}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(name)}</title><style>{style}</style></head><body>" + "".join(parts) + "</body></html>"
    )


def filters_from_form(
    results: CertifyResults,
    *,
    true_classes: Sequence[str] = (),
    predicted: Sequence[str] = (),
    correct: str = "any",
    held_out_only: bool = False,
    min_confidence: float | None = None,
    max_flip_budget: int | None = None,
    min_fds: float | None = None,
) -> list[RowFilter]:
    """The Explorer's filter widgets as :class:`RowFilter` conditions (empty = no condition)."""
    if correct not in ("any", "yes", "no"):
        raise ValueError(f"`correct` must be 'any', 'yes' or 'no'; got {correct!r}.")
    out: list[RowFilter] = []
    have = results.columns
    if true_classes and "label" in have:
        out.append(RowFilter(column="label", op="in", value=[str(c) for c in true_classes]))
    if predicted:
        out.append(RowFilter(column="pred_label", op="in", value=[str(c) for c in predicted]))
    if correct != "any" and "correct" in have:
        out.append(RowFilter(column="correct", op="==", value=correct == "yes"))
    if held_out_only:
        out.append(RowFilter(column="in_fit_sample", op="==", value=False))
    if min_confidence is not None:
        out.append(RowFilter(column="confidence", op=">=", value=float(min_confidence)))
    if max_flip_budget is not None:
        out.append(RowFilter(column="flip_budget", op="<=", value=int(max_flip_budget)))
    if min_fds is not None:
        out.append(RowFilter(column="fds", op=">=", value=float(min_fds)))
    return out
