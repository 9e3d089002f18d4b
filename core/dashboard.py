"""Dashboard glue that needs no Streamlit: shaping core results into the tables the pages show.

Everything here is a small, pure function over core results (tested in ``tests/app``), so
that the page files only lay out widgets.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.cfc.evaluation import SCORES, auroc, expected_top_positives, review_budget
from core.cfc.operators import remove
from core.cfc.protocol import Protocol
from core.paired.records import UnpairedRecords, read_table, load_records, load_unpaired
from core.paired.screening import screening_scores
from core.paired.summary import grid_summary as paired_grid_summary
from core.reviews import DECISION_LABELS
from core.validation import UPLOAD_LIMIT_MB, check_text_table, check_unit_interval, check_upload_size

__all__ = [
    "LARGE_TABLE_ROWS",
    "UPLOAD_LIMIT_MB",
    "attach_decisions",
    "check_upload_size",
    "cli_commands",
    "capture_curves",
    "column_summary",
    "coverage_by_budget",
    "display_frame",
    "evaluation_records",
    "grid_summary",
    "interactive_sample_rows",
    "whatif_probabilities",
    "groups_table",
    "load_paired_upload",
    "load_screening_upload",
    "load_unpaired_upload",
    "model_comparison_table",
    "parse_blocks",
    "parse_float_list",
    "path_evidence_table",
    "policy_matrix",
    "prediction_table",
    "rank_queue",
    "raw_values_table",
    "removal_steps_table",
    "sample_bundle",
    "score_summary",
    "table_columns",
    "thumbnail_uri",
    "unpaired_class_summary",
]

# Uploads are limited to this size (also ``server.maxUploadSize`` in .streamlit/config.toml):
# a browser session holds the bytes, and larger tables belong to the CLI.
# Above this many rows the interactive audit runs on a stratified sample (USERS.md: tools
# become unusable past ~20k rows); the CLI audits the full table.
LARGE_TABLE_ROWS = 20_000
# A certificate costs 1 + G + |Λ|(G + 1) + K model rows per sample, so an audit's work grows with
# rows × evidence groups: a 500-column upload took 156–200 s at the row cap alone (issue 12).
# The interactive sample also keeps rows × groups within this budget (200 rows at 500 groups,
# whose audit with hist_gb took ~20 s on a quiet 2-core machine; the whole row cap up to 5
# groups), and never goes below MIN_SAMPLE_ROWS rows.
CELL_BUDGET = 100_000
MIN_SAMPLE_ROWS = 200


def interactive_sample_rows(n_rows: int, n_groups: int) -> int:
    """Rows of the stratified sample the dashboard audits interactively (at most).

    Parameters
    ----------
    n_rows : int
        Rows of the table (at least 1).
    n_groups : int
        Evidence groups (raw feature columns) of the table (at least 1).

    Returns
    -------
    int
        ``min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // n_groups))``.

    Examples
    --------
    >>> interactive_sample_rows(5_000, 5), interactive_sample_rows(50_000, 5), interactive_sample_rows(20_000, 500)
    (5000, 20000, 200)
    """
    for name, value in (("n_rows", n_rows), ("n_groups", n_groups)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be a positive int; got {value!r}.")
    return int(min(n_rows, LARGE_TABLE_ROWS, max(MIN_SAMPLE_ROWS, CELL_BUDGET // int(n_groups))))


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` that every table widget can render.

    - list / tuple / array cells (e.g. a certificate path) become ``"a → b → c"``;
    - object columns mixing types (numbers and text, bytes, ...) become text, keeping missing
      values missing, so Arrow serialisation never fails on real-world uploads;
    - categorical columns keep their categories but are turned to text when the categories
      themselves mix types;
    - the index is dropped (tables are shown without it).

    Examples
    --------
    >>> df = pd.DataFrame({"path": [["a", "b"], []], "v": [1, "x"], "w": [np.nan, 2.0]})
    >>> display_frame(df).to_dict("list")
    {'path': ['a → b', ''], 'v': ['1', 'x'], 'w': [nan, 2.0]}
    """
    out = frame.reset_index(drop=True).copy()
    for column in out.columns:
        series = out[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            kinds = {type(c) for c in series.cat.categories}
            if len(kinds) > 1:
                out[column] = series.astype(object).where(series.notna(), None).map(_text)
            continue
        if series.dtype != object and not pd.api.types.is_string_dtype(series.dtype):
            continue
        values = series.tolist()
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            out[column] = [" → ".join(map(str, v)) if isinstance(v, (list, tuple, np.ndarray)) else _text(v)
                           for v in values]
            continue
        kinds = {type(v) for v in values if not _missing(v)}
        if len(kinds) > 1 or kinds & {bytes, dict, set}:
            out[column] = [_text(v) for v in values]
    return out


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def _text(value: object) -> object:
    if _missing(value):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def parse_float_list(text: str, name: str) -> tuple[float, ...]:
    """Parse ``"0.1, 0.2 0.5"`` (commas and/or spaces) into floats, naming ``name`` on error.

    Examples
    --------
    >>> parse_float_list("0.5, 0.1 1", "severities")
    (0.5, 0.1, 1.0)
    """
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise ValueError(f"`{name}` is empty; enter numbers separated by commas, e.g. 0.1, 0.5, 1.0.")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"`{name}` must be numbers separated by commas; {part!r} is not a number.") from None
        if not math.isfinite(value):
            raise ValueError(f"`{name}` must contain finite numbers; got {part!r}.")
        values.append(value)
    return tuple(values)



def rank_queue(frame: pd.DataFrame, score: str, *, budget: float, id_column: str = "sample_id") -> pd.DataFrame:
    """The review queue: the top ``k = max(1, ⌊q·n + ½⌋)`` rows of ``frame`` by a risk score.

    Parameters
    ----------
    frame : DataFrame
        The ranked population (e.g. the high-confidence test predictions), one row per sample,
        with the columns ``id_column`` and ``score``.
    score : str
        Risk-score column (larger = riskier). NaN scores are ranked last.
    budget : float
        Review budget ``q`` in (0, 1] as a fraction of ``len(frame)``.

    Returns
    -------
    DataFrame
        The first ``k`` rows in decreasing score, with a 1-based ``rank`` column in front.
        Rows tied on the score keep their order in ``frame`` (a deterministic choice; the
        Capture@q metric instead prorates ties at the cut-off).

    Examples
    --------
    >>> f = pd.DataFrame({"sample_id": [10, 11, 12, 13], "fds": [0.2, 0.9, 0.5, 0.9]})
    >>> rank_queue(f, "fds", budget=0.5).to_dict("list")
    {'rank': [1, 2], 'sample_id': [11, 13], 'fds': [0.9, 0.9]}
    """
    for column in (id_column, score):
        if column not in frame.columns:
            raise ValueError(f"`frame` has no column {column!r}; it has {list(frame.columns)}.")
    if len(frame) == 0:
        raise ValueError("The population to rank is empty; lower the confidence threshold or use all samples.")
    k = review_budget(budget, len(frame))
    order = np.argsort(-frame[score].to_numpy(dtype=float, na_value=-np.inf), kind="stable")
    queue = frame.iloc[order[:k]].reset_index(drop=True)
    queue.insert(0, "rank", np.arange(1, k + 1))
    return queue


def attach_decisions(queue: pd.DataFrame, latest: pd.DataFrame, *, id_column: str = "sample_id") -> pd.DataFrame:
    """Add the latest review decision of every queued sample (blank when unreviewed).

    Parameters
    ----------
    queue : DataFrame
        Rows to annotate, with ``id_column``.
    latest : DataFrame
        :meth:`core.reviews.ReviewStore.latest` of the same audit.

    Returns
    -------
    DataFrame
        ``queue`` plus ``decision`` (human label), ``reviewer``, ``note`` and ``reviewed_at``.
    """
    if id_column not in queue.columns:
        raise ValueError(f"`queue` has no column {id_column!r}; it has {list(queue.columns)}.")
    reviews = latest.set_index("sample_id")[["decision", "reviewer", "note", "created_at"]]
    keys = queue[id_column].map(str).rename("_key")
    out = queue.join(keys).join(reviews, on="_key").drop(columns="_key")
    out["decision"] = out["decision"].map(DECISION_LABELS)
    return out.rename(columns={"created_at": "reviewed_at"})


def table_columns(data: bytes, file_name: str) -> list[str]:
    """Column names of an uploaded CSV / TSV / Parquet table, read from its header only.

    Used to offer the target column before the full validation of
    :func:`core.tabular.datasets.load_user_data`. The CSV delimiter is sniffed among
    ``, ; TAB |``.
    """
    suffix = Path(file_name).suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.ParquetFile(io.BytesIO(data)).schema_arrow.names]
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            raise ValueError(f"{file_name!r} could not be read as Parquet: {exc}") from None
    if suffix not in (".csv", ".tsv", ".txt"):
        raise ValueError(f"{file_name!r}: expected a .csv, .tsv or .parquet file; got suffix {suffix!r}.")
    check_text_table(data, file_name)  # an image renamed .csv is refused here, before any column is offered
    head = data[:65536].decode("utf-8-sig", errors="replace").splitlines()
    if not head or not head[0].strip():
        raise ValueError(f"{file_name!r} has no header line.")
    try:
        dialect = csv.Sniffer().sniff(head[0], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if suffix == ".tsv" else csv.excel
    return [c.strip() for c in next(csv.reader([head[0]], dialect))]


def parse_blocks(data: bytes, file_name: str) -> dict[str, Any]:
    """Parse an uploaded domain-block file (YAML, or JSON for ``.json``) into a mapping.

    The mapping (``{raw column: block}`` or ``{block: [raw columns]}``) is checked against the
    table by :func:`core.tabular.datasets.load_user_data`.
    """
    text = data.decode("utf-8", errors="replace")
    try:
        if Path(file_name).suffix.lower() == ".json":
            content = json.loads(text)
        else:
            import yaml

            content = yaml.safe_load(text)
    except Exception as exc:  # json.JSONDecodeError / yaml.YAMLError
        raise ValueError(f"Block file {file_name!r} could not be parsed: {exc}") from None
    if not isinstance(content, dict) or not content:
        raise ValueError(f"Block file {file_name!r} must hold a non-empty mapping {{column: block}} or "
                         f"{{block: [columns]}}; got {type(content).__name__}.")
    return content


def groups_table(groups: dict[str, list[int]], feature_names: Sequence[str], origins: Sequence[str]) -> pd.DataFrame:
    """One row per evidence group: its raw columns and transformed columns.

    Parameters
    ----------
    groups : dict of str -> list of int
        Evidence groups over the transformed columns, in declared order.
    feature_names : sequence of str, length d
        Transformed column names.
    origins : sequence of str, length d
        Raw column of origin of every transformed column.

    Returns
    -------
    DataFrame
        Columns ``group``, ``raw_columns`` (comma-separated, in first-use order),
        ``n_transformed`` and ``transformed_columns``.
    """
    if len(feature_names) != len(origins):
        raise ValueError(f"`feature_names` ({len(feature_names)}) and `origins` ({len(origins)}) must have one "
                         "entry per transformed column.")
    rows = []
    for name, cols in groups.items():
        raw = list(dict.fromkeys(origins[c] for c in cols))
        rows.append({"group": name, "raw_columns": ", ".join(raw), "n_transformed": len(cols),
                     "transformed_columns": ", ".join(feature_names[c] for c in cols)})
    return pd.DataFrame(rows, columns=["group", "raw_columns", "n_transformed", "transformed_columns"])


def column_summary(dataset: Any) -> pd.DataFrame:
    """One row per raw feature of a :class:`~core.tabular.datasets.Dataset`.

    Columns ``column``, ``kind`` (numeric / categorical), ``missing`` (count of missing
    values), ``distinct`` (distinct non-missing values) and ``block`` (domain block, if any).
    """
    frame = dataset.frame
    blocks = dataset.blocks or {}
    rows = [{"column": c, "kind": "numeric" if c in dataset.numeric else "categorical",
             "missing": int(frame[c].isna().sum()), "distinct": int(frame[c].nunique(dropna=True)),
             "block": blocks.get(c)} for c in dataset.features]
    return pd.DataFrame(rows, columns=["column", "kind", "missing", "distinct", "block"])


def prediction_table(result: Any) -> pd.DataFrame:
    """One row per test prediction of an audit, for the explorer and the triage queue.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult

    Returns
    -------
    DataFrame
        ``sample_id`` (source row id), ``position`` (row in the certificate set),
        ``true_class``, ``predicted``, ``confidence``, ``fds`` (risk, 0–1), ``flip_budget``
        (``k*``, smaller = more fragile; ``K+1`` = no flip), ``rcma`` (risk),
        ``lambda_star_<operator>`` (smaller = more fragile, ``inf`` = none), ``high_confidence``
        and ``brittle`` (held-out label), in certificate order.
    """
    cert = result.certificates.table
    classes = np.asarray(result.dataset.classes, dtype=object)
    out = pd.DataFrame({
        "sample_id": cert.index.to_numpy(),
        "position": np.arange(len(cert)),
        "true_class": classes[np.asarray(result.y_test, dtype=int)],
        "predicted": classes[cert["pred"].to_numpy(dtype=int)],
        "confidence": cert["confidence"].to_numpy(),
        "fds": cert["fds"].to_numpy(),
        "flip_budget": cert["flip_budget"].to_numpy(),
        "rcma": cert["rcma"].to_numpy(),
    })
    for column in cert.columns:
        if column.startswith("lambda_star_"):
            out[column] = cert[column].to_numpy()
    out["high_confidence"] = np.asarray(result.labels.high_confidence, dtype=bool)
    out["brittle"] = np.asarray(result.labels.labels, dtype=bool)
    return out


def sample_bundle(certificates: Any, position: int, *, search: Any = None) -> dict[str, Any]:
    """The certificate of one sample as a strict-JSON bundle (same format as a whole set).

    The bundle carries the protocol, the certificate fingerprint, the groups and baseline and
    every trajectory array of that one sample, so it can be stored and re-checked with
    :func:`core.cfc.certificate.verify` against the model and the sample's features.

    Parameters
    ----------
    certificates : core.cfc.certificate.CertificateSet
    position : int
        Row of the sample in the set (0-based).
    search : core.cfc.search.FlipSearchResult, optional
        Exact / beam search of this one sample, included when given.
    """
    n = len(certificates)
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not 0 <= position < n:
        raise ValueError(f"`position` must be a row in 0..{n - 1}; got {position!r}.")
    if search is not None and len(search) != 1:
        raise ValueError(f"`search` must hold exactly this one sample; got {len(search)} samples.")
    one = certificates.take([int(position)])
    table = one.table.copy()
    if search is not None:
        if search.method in ("exact", "both"):
            table["flip_budget_exact"] = search.k_exact
        if search.method in ("beam", "both"):
            table["flip_budget_beam"] = search.k_beam.astype(np.int64)
    # As before, the one-sample bundle carries this sample's search (or none) and no model probe.
    return dataclasses.replace(one, table=table, search=search, probe_proba=None).to_bundle()


def whatif_probabilities(result: Any, position: int, removed: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of one test prediction as it is and with some evidence groups removed.

    Parameters
    ----------
    result : core.tabular.audit.AuditResult
    position : int
        Row of ``result.X_test``.
    removed : sequence of str
        Group names set to the baseline (``R(x, S)``, SPEC A.1).

    Returns
    -------
    original, edited : ndarray of shape (n_classes,)
        One batched ``predict_proba`` call over both rows.
    """
    from threadpoolctl import threadpool_limits

    x = result.X_test[position:position + 1]
    stacked = np.vstack([x, remove(x, result.groups, result.baseline, list(removed))])
    # Two rows: waking an OpenMP pool costs more than it gives (hist_gb, busy 2 cores: 83 ms
    # threaded vs 7 ms on one thread), and this runs on every what-if toggle.
    with threadpool_limits(limits=1):
        proba = np.asarray(result.model.predict_proba(stacked), dtype=float)
    return proba[0], proba[1]


def raw_values_table(raw_row: pd.Series, groups: dict[str, list[int]], origins: Sequence[str]) -> pd.DataFrame:
    """Raw feature values of one sample with the evidence group each column belongs to.

    Parameters
    ----------
    raw_row : Series
        The sample's raw row (feature columns; other entries such as the target are skipped
        unless they feed a group).
    groups : dict of str -> list of int
        Evidence groups over the transformed columns.
    origins : sequence of str
        Raw column of origin of every transformed column.

    Returns
    -------
    DataFrame
        Columns ``group``, ``column``, ``value`` (text, floats rounded to 3 decimals as in
        :func:`path_evidence_table`; missing shown as missing), in group order.
    """
    rows = []
    for name, cols in groups.items():
        for column in dict.fromkeys(origins[c] for c in cols):
            rows.append({"group": name, "column": column, "value": _rounded(raw_row.get(column))})
    return pd.DataFrame(rows, columns=["group", "column", "value"])


def _rounded(value: object, digits: int = 3) -> object:
    """A raw cell as people read it: floats rounded (trailing zeros dropped), missing kept missing."""
    if _missing(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        text = f"{float(value):.{digits}f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return _text(value)


def removal_steps_table(certificate: Any, classes: Sequence[object]) -> pd.DataFrame:
    """The prediction after each removal along one certificate's path, for people.

    Parameters
    ----------
    certificate : core.cfc.certificate.SampleCertificate
        ``path`` (K group names) and the step arrays ``preds``, ``proba`` and ``path_margins``
        of shape (K+1, ...) with step 0 the intact input.
    classes : sequence
        Class names in encoded order.

    Returns
    -------
    DataFrame
        One row per step 0..K: ``step``, ``group removed`` (``"none (intact)"`` at step 0),
        ``prediction`` (class name after the removals so far), ``P(original class)`` and
        ``margin`` (centred pseudo-logit margin of the original class, nats; below 0 =
        flipped), both rounded to 3 decimals, and ``flipped`` (``"yes"`` / ``"no"``).
    """
    cert = certificate
    names = np.asarray([str(c) for c in classes], dtype=object)
    steps = len(cert.path_margins)
    if len(cert.path) != steps - 1:
        raise ValueError(f"`certificate` has {len(cert.path)} path groups but {steps} steps; expected one step "
                         "more than groups (step 0 is the intact input).")
    preds = np.asarray(cert.preds, dtype=int)
    return pd.DataFrame({
        "step": np.arange(steps),
        "group removed": ["none (intact)", *map(str, cert.path)],
        "prediction": names[preds],
        "P(original class)": np.round(np.asarray(cert.proba, dtype=float)[:, cert.pred], 3),
        "margin": np.round(np.asarray(cert.path_margins, dtype=float), 3),
        "flipped": np.where(preds != cert.pred, "yes", "no"),
    })


def path_evidence_table(x: np.ndarray, baseline: np.ndarray, groups: Mapping[str, Sequence[int]],
                        path: Sequence[str], *, feature_names: Sequence[str], origins: Sequence[str],
                        raw_row: pd.Series) -> pd.DataFrame:
    """The values of the groups on a removal path next to the baseline that replaces them.

    Parameters
    ----------
    x : ndarray of shape (d,)
        The sample's transformed features (model space).
    baseline : ndarray of shape (d,)
        The protocol's baseline (model space); removing a group sets its columns to it.
    groups : mapping of str -> sequence of int
        Evidence groups over the ``d`` transformed columns.
    path : sequence of str
        Group names in removal order (most supportive first).
    feature_names : sequence of str, length d
        Name of every transformed column.
    origins : sequence of str, length d
        Raw column of origin of every transformed column.
    raw_row : Series
        The sample's raw row (raw values are looked up by origin; absent ones are missing).

    Returns
    -------
    DataFrame
        One row per transformed column of every path group, in path order: ``step`` (1 =
        removed first), ``group``, ``raw column``, ``raw value`` (text, floats rounded to 3
        decimals, ``"missing"`` when missing), ``feature``, ``value`` and ``baseline`` (model space, rounded to 3 decimals).
    """
    x = np.asarray(x, dtype=float).ravel()
    b = np.asarray(baseline, dtype=float).ravel()
    d = x.size
    if b.size != d or len(feature_names) != d or len(origins) != d:
        raise ValueError(f"`x` has {d} features but `baseline` has {b.size}, `feature_names` {len(feature_names)} "
                         f"and `origins` {len(origins)}; expected the same length.")
    unknown = [g for g in path if g not in groups]
    if unknown:
        raise ValueError(f"`path` names groups that are not in `groups`: {unknown!r} (groups: {list(groups)}).")
    rows = []
    for step, name in enumerate(path, start=1):
        for c in groups[name]:
            raw = raw_row.get(origins[c])
            rows.append({"step": step, "group": str(name), "raw column": str(origins[c]),
                         "raw value": "missing" if _missing(raw) else _rounded(raw),
                         "feature": str(feature_names[c]),
                         "value": round(float(x[c]), 3), "baseline": round(float(b[c]), 3)})
    return pd.DataFrame(rows, columns=["step", "group", "raw column", "raw value", "feature", "value", "baseline"])


def capture_curves(scores: pd.DataFrame, positives: np.ndarray,
                   budgets: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Share of the positives inside the top ``q`` of every risk score, for every budget.

    Parameters
    ----------
    scores : DataFrame of shape (n, n_scores)
        Risk scores (larger = riskier) of the ranked population, one column per score.
    positives : ndarray of shape (n,), bool
        The positives (e.g. held-out brittle labels).
    budgets : ndarray of shape (B,)
        Budgets ``q`` in (0, 1]; ``k = max(1, ⌊q·n + ½⌋)`` items are reviewed.

    Returns
    -------
    curves : dict of str -> ndarray of shape (B,)
        ``E|Top_k ∩ positives| / |positives|`` with ties at the cut-off prorated (NaN when there
        is no positive).
    ceiling : ndarray of shape (B,)
        Best attainable share ``min(1, k / n_positive)``.
    random : ndarray of shape (B,)
        Expected share under random selection, ``k / n``.
    """
    y = np.asarray(positives, dtype=bool)
    n = y.size
    if len(scores) != n:
        raise ValueError(f"`scores` has {len(scores)} rows but `positives` has {n}.")
    k = np.array([review_budget(float(q), n) for q in np.asarray(budgets, dtype=float)])
    n_pos = int(y.sum())
    curves = {}
    for name in scores.columns:
        top = expected_top_positives(scores[name].to_numpy(dtype=float), y)
        curves[str(name)] = top[k] / n_pos if n_pos else np.full(k.shape, np.nan)
    ceiling = np.minimum(1.0, k / n_pos) if n_pos else np.full(k.shape, np.nan)
    return curves, ceiling, k / n


def score_summary(scores: pd.DataFrame, positives: np.ndarray, budget: float) -> pd.DataFrame:
    """AUROC and Capture@q of every risk score on one population.

    Returns
    -------
    DataFrame
        Columns ``score``, ``kind`` and ``orientation`` (from :data:`core.cfc.evaluation.SCORES`),
        ``auroc`` and ``capture`` (share of positives in the top ``q``; NaN without positives).
    """
    y = np.asarray(positives, dtype=bool)
    curves, _, _ = capture_curves(scores, y, np.array([budget]))
    rows = []
    for name in scores.columns:
        info = SCORES.get(str(name))
        s = scores[name].to_numpy(dtype=float)
        value = auroc(s, y) if 0 < y.sum() < y.size else np.nan
        rows.append({"score": str(name), "kind": info.kind if info else "custom",
                     "orientation": info.orientation if info else "larger = riskier",
                     "auroc": value, "capture": float(curves[str(name)][0])})
    return pd.DataFrame(rows, columns=["score", "kind", "orientation", "auroc", "capture"])


def model_comparison_table(audits: dict[str, Any]) -> pd.DataFrame:
    """Nominal and fragility metrics of several audits of the same data, one row per model.

    Parameters
    ----------
    audits : dict of model name -> core.tabular.audit.AuditResult

    Returns
    -------
    DataFrame
        ``model``, ``family``, the nominal test metrics (``accuracy, macro_f1, auroc, ap`` —
        higher is better; ``nll, ece, brier`` — lower is better), the fragility summary
        (``mean_rcma``, ``median_rcma``, ``share_k_le_2``, ``share_brittle`` — lower is more
        stable; the median is robust to near-tie predictions whose tiny margin inflates RCMA)
        and ``fds_auroc`` (how well FDS finds that model's brittle predictions).
    """
    from core.tabular.metrics import NOMINAL_METRICS
    from core.tabular.models import MODELS

    rows = []
    for name, result in audits.items():
        fragility = result.fragility
        evaluation = result.evaluation.set_index("score")
        rows.append({"model": name, "family": MODELS[name].family if name in MODELS else "",
                     **{m: result.nominal.get(m, np.nan) for m in NOMINAL_METRICS},
                     "mean_rcma": fragility["mean_rcma"],
                "median_rcma": float(result.certificates.table["rcma"].median()),
                "share_k_le_2": fragility["share_k_le_2"],
                     "share_brittle": fragility["share_brittle"],
                     "fds_auroc": evaluation.loc["fds", "auroc"] if "fds" in evaluation.index else np.nan})
    return pd.DataFrame(rows)


def coverage_by_budget(metrics: pd.DataFrame, *, condition: str | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Failure-coverage curves from :func:`core.paired.screening.screening_metrics` rows.

    Parameters
    ----------
    metrics : DataFrame
        Rows of one model (any number of conditions, scores and budgets).
    condition : str, optional
        One condition; default: the mean over conditions, every condition weighted equally
        (conditions where no image failed have no coverage and are left out).

    Returns
    -------
    budgets : ndarray of shape (B,)
    curves : dict of score -> ndarray of shape (B,)
        Coverage per budget.
    ceiling, random : ndarray of shape (B,)
        Mean attainable ceiling and mean coverage of a random selection.
    """
    rows = metrics if condition is None else metrics[metrics["condition"] == condition]
    if rows.empty:
        raise ValueError(f"No screening metrics for condition {condition!r}.")
    rows = rows[rows["n_fail"] > 0]
    if rows.empty:
        raise ValueError("No image failed under the chosen condition(s), so failure coverage is undefined; "
                         "pick a harsher condition.")
    mean = rows.groupby(["score", "budget"], sort=False)[["coverage", "ceiling", "random"]].mean().reset_index()
    budgets = np.sort(mean["budget"].unique())
    curves = {score: part.set_index("budget")["coverage"].reindex(budgets).to_numpy()
              for score, part in mean.groupby("score", sort=False)}
    first = mean[mean["score"] == mean["score"].iloc[0]].set_index("budget").reindex(budgets)
    return budgets, curves, first["ceiling"].to_numpy(), first["random"].to_numpy()


def thumbnail_uri(image: np.ndarray, *, scale: int = 2) -> str:
    """A grey-scale ``uint8`` image of shape (H, W) as a PNG data URI (for image table columns)."""
    import base64

    from PIL import Image

    arr = np.asarray(image)
    if arr.ndim != 2 or arr.dtype != np.uint8:
        raise ValueError(f"`image` must be a 2-D uint8 array; got shape {arr.shape} and dtype {arr.dtype}.")
    big = np.kron(arr, np.ones((scale, scale), dtype=np.uint8))  # nearest-neighbour: crisp pixels
    buffer = io.BytesIO()
    Image.fromarray(big, mode="L").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def grid_summary(grid: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """The SPEC B.4 summary of :func:`core.paired.summary.grid_summary`, shaped for the page.

    Parameters
    ----------
    grid : DataFrame
        :func:`core.paired.bounds.identified_intervals_grid` rows (``model, condition, source,
        target, level, low, high, observed``), possibly of several models.

    Returns
    -------
    summary : DataFrame
        ``source, target, level, mean_width``: mean interval width over the cells of a source
        (undefined intervals left out).
    stats : dict
        Over all cells: ``cells``, ``i5_narrows_h`` (share whose H interval is strictly narrower
        at I5 than at Ik), ``dmk_straddles_zero`` (share, among cells where dM_k is defined at
        Ik, whose interval has ``low < 0 < high``) and ``k_zero`` (share with dM_k undefined).
    """
    by_source = paired_grid_summary(grid, by=("source",))
    overall = paired_grid_summary(grid, by=()).cells.iloc[0]
    stats = {
        "cells": int(overall["n_cells"]),
        "i5_narrows_h": float(overall.get("i5_narrows_h_share", math.nan)),
        "dmk_straddles_zero": float(overall.get("dmk_straddles_zero_Ik_share", math.nan)),
        "k_zero": float(overall.get("k_zero_share", math.nan)),
    }
    return by_source.widths[["source", "target", "level", "mean_width"]], stats


def policy_matrix(differences: pd.DataFrame, *, level: str, lam: float
                  ) -> tuple[list[float], np.ndarray, np.ndarray]:
    """Shared-correspondence comparison matrix of one cell at one level and cost weight.

    Parameters
    ----------
    differences : DataFrame
        :attr:`core.paired.policies.PolicyReport.differences` of a single cell.
    level : {"I0", "Ik", "I5"}
    lam : float
        Cost weight ``λ`` (must be one the report was computed for).

    Returns
    -------
    coverages : list of float, length P
        Nominal coverage of every policy, in policy order.
    matrix : ndarray of shape (P, P)
        ``D⁺[j, ℓ] = max_π (J_j − J_ℓ)``, zero on the diagonal (cost units; negative = row
        certainly cheaper).
    regret : ndarray of shape (P,)
        Worst-case regret ``R_j = max_{ℓ ≠ j} D⁺[j, ℓ]``.
    """
    rows = differences[(differences["level"] == level) & np.isclose(differences["lambda"], lam)]
    if rows.empty:
        raise ValueError(f"No policy differences at level {level!r} and λ = {lam!r}.")
    if rows[["model", "condition", "source"]].drop_duplicates().shape[0] != 1:
        raise ValueError("`differences` must hold a single cell.")
    order = rows.drop_duplicates("policy").sort_values("policy")
    policies = order["policy"].tolist()
    index = {p: i for i, p in enumerate(policies)}
    matrix = np.zeros((len(policies), len(policies)))
    matrix[rows["policy"].map(index).to_numpy(), rows["versus"].map(index).to_numpy()] = rows["D_plus"].to_numpy()
    off = np.where(np.eye(len(policies), dtype=bool), -np.inf, matrix)
    return order["coverage"].astype(float).tolist(), matrix, off.max(axis=1)


# ---------------------------------------------------------------------------------------------
# Uploads of paired / unpaired records

def _safe_name(file_name: str, fallback: str) -> str:
    # The name comes from the browser: keep only its last component.
    name = Path(str(file_name).replace("\\", "/")).name
    return name if name not in ("", ".", "..") else fallback


def _staged(files: Mapping[str, tuple[str, bytes] | None], labels: Mapping[str, str], load):
    """Write uploads to a private folder, call ``load(paths)``, and name the files as uploaded.

    The core loaders read paths and name the file, row, CSV line and column in their messages;
    the temporary folder is replaced by the uploaded name (and its role) in any ``ValueError``.
    """
    for role, item in files.items():
        if item is not None:
            check_upload_size(item[1], _safe_name(item[0], role))
    with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
        paths: dict[str, Path | None] = {}
        shown: dict[str, str] = {}
        for role, item in files.items():
            if item is None:
                paths[role] = None
                continue
            name = _safe_name(item[0], f"{role}.csv")
            folder = Path(tmp) / role
            folder.mkdir()
            paths[role] = folder / name
            paths[role].write_bytes(item[1])
            shown[str(paths[role])] = labels[role].format(name=name)
        try:
            return load(paths)
        except ValueError as exc:
            message = str(exc)
            for path, label in shown.items():
                message = message.replace(path, label)
            raise ValueError(message) from None


def load_paired_upload(file_name: str, data: bytes) -> pd.DataFrame:
    """Validate uploaded paired records (CSV or Parquet bytes) with :func:`core.paired.records.load_records`.

    Parameters
    ----------
    file_name : str
        The name the file was uploaded with (its suffix picks the reader; messages use it).
    data : bytes
        The file's content, at most :data:`UPLOAD_LIMIT_MB` MB.

    Returns
    -------
    DataFrame
        The validated, normalised records (schema in ``docs/DEVELOPING.md``).

    Raises
    ------
    ValueError
        Too large, unreadable, or failing validation; the message names the file, the row (and
        CSV line) and the column.
    """
    return _staged({"records": (file_name, data)}, {"records": "{name}"}, lambda p: load_records(p["records"]))


def load_unpaired_upload(clean: tuple[str, bytes], perturbed: tuple[str, bytes],
                         counts: tuple[str, bytes] | None = None) -> UnpairedRecords:
    """Validate an uploaded unpaired cell with :func:`core.paired.records.load_unpaired`.

    Parameters
    ----------
    clean, perturbed : (file name, bytes)
        Tables ``record_id, true_label, pred, max_prob, true_prob`` of the two sides.
    counts : (file name, bytes), optional
        Per-class counts ``true_label, k`` (level Ik) or ``true_label, h, r, s, w, k`` (I5).

    Returns
    -------
    UnpairedRecords
        ``level`` is the highest information level the counts allow.

    Raises
    ------
    ValueError
        As :func:`load_paired_upload`; messages say which of the tables is meant.
    """
    files = {"clean": clean, "perturbed": perturbed, "counts": counts}
    labels = {role: "{name} (" + role + " table)" for role in files}
    return _staged(files, labels, lambda p: load_unpaired(p["clean"], p["perturbed"], p["counts"]))


def load_screening_upload(probes: tuple[str, bytes], clean: tuple[str, bytes], *,
                          outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Validate uploaded per-probe and clean outputs and score them with
    :func:`core.paired.screening.screening_scores` (as ``python -m core paired --probes``).

    Parameters
    ----------
    probes : (file name, bytes)
        Per-probe outputs, CSV or Parquet, long format ``model, record_id, probe, kind,
        true_label, pred, max_prob, true_prob`` (optional ``prob_0 .. prob_{C-1}``; ``kind`` in
        ``{"corruption", "transform"}``).
    clean : (file name, bytes)
        Clean outputs, one row per (model, image): ``model, record_id, true_label, pred,
        max_prob, true_prob``, optional ``split`` (``dev`` / ``eval``), ``group``, ``prob_*``.
    outcomes : DataFrame, optional
        Validated paired records of one source (the real conditions); their development rows
        fit ``g(S, U)``. Without them ``g_SU`` is NaN.

    Returns
    -------
    DataFrame
        One row per (model, clean-correct evaluation image) with every score and its
        ``risk_<score>`` column (larger = riskier); see ``screening_scores``.

    Raises
    ------
    ValueError
        Too large, unreadable, or failing validation; the message names the file (and which of
        the two tables it is), the row (and CSV line) and the column.
    """
    labels = {"probes": "{name} (per-probe outputs)", "clean": "{name} (clean outputs)"}

    def load(paths):
        frames, origins = {}, {}
        for role, path in paths.items():
            frames[role], origins[role] = read_table(path)
        try:
            return screening_scores(frames["probes"], frames["clean"], outcomes=outcomes)
        except ValueError as exc:
            # screening_scores names tables as `probes` / `clean` and rows 1-based in file order.
            message = str(exc)
            for role, origin in origins.items():
                label = labels[role].format(name=Path(origin.name).name)
                message = re.sub(rf"`{role}` row (\d+)",
                                 lambda m: origin.row(int(m.group(1)) - 1).replace(origin.name, label), message)
                message = message.replace(f"`{role}`", label)
            raise ValueError(message) from None

    return _staged({"probes": probes, "clean": clean}, labels, load)


def evaluation_records(records: pd.DataFrame) -> pd.DataFrame:
    """The rows the bounds are reported on: ``split == "eval"`` when there are any, else all rows.

    Development rows only set thresholds (as in :func:`core.paired.policies.evaluate_policies`).
    """
    if "split" in records.columns and (records["split"] == "eval").any():
        return records[records["split"] == "eval"]
    return records


def unpaired_class_summary(unpaired: UnpairedRecords, tau: float) -> pd.DataFrame:
    """Per-class quantities an unpaired cell identifies without its pairing.

    Parameters
    ----------
    unpaired : UnpairedRecords
    tau : float in [0, 1]
        Acceptance threshold on both sides (``max_prob ≥ τ`` accepted).

    Returns
    -------
    DataFrame
        One row per true class, sorted: ``true_label, n`` (records per side), ``a``/``b``
        (clean / perturbed correct), ``u`` (clean correct and accepted), ``v`` (perturbed
        correct and rejected), ``t`` (perturbed wrong and accepted), then the uploaded counts
        (``k``, or ``h, r, s, w, k``) when there are any.
    """
    tau = check_unit_interval(tau, "tau")

    def side(frame: pd.DataFrame, prefix: str) -> pd.DataFrame:
        correct = frame["pred"].to_numpy() == frame["true_label"].to_numpy()
        accepted = frame["max_prob"].to_numpy() >= tau
        return pd.DataFrame({"true_label": frame["true_label"].to_numpy(), f"{prefix}n": 1, f"{prefix}correct": correct,
                             f"{prefix}correct_accepted": correct & accepted,
                             f"{prefix}correct_rejected": correct & ~accepted,
                             f"{prefix}wrong_accepted": ~correct & accepted}).groupby("true_label").sum()

    clean, pert = side(unpaired.clean, "c_"), side(unpaired.perturbed, "p_")
    out = pd.DataFrame({"n": clean["c_n"], "a": clean["c_correct"], "b": pert["p_correct"],
                        "u": clean["c_correct_accepted"], "v": pert["p_correct_rejected"],
                        "t": pert["p_wrong_accepted"]}).astype(np.int64).sort_index().reset_index()
    if unpaired.counts is not None:
        out = out.merge(unpaired.counts, on="true_label", how="left", validate="one_to_one")
    return out


# ---------------------------------------------------------------------------------------------
# Large tables

def cli_commands(file_name: str, target: str, *, model: str, seed: int, protocol: Protocol,
                 blocks_file: str | None = None) -> dict[str, str]:
    """Shell commands that run the interactive audit's settings on the full table.

    Parameters
    ----------
    file_name : str
        The table's file name (the user runs the command where the file is).
    target : str
        Target column.
    model, seed : str, int
        As in the sidebar.
    protocol : Protocol
        The applied protocol; every field is spelt out, so the CLI's own defaults do not matter.
    blocks_file : str, optional
        Name of the domain-block file, when one was uploaded.

    Returns
    -------
    dict
        ``"audit"``: ``python -m core audit`` (the complete audit: certificates, held-out
        labels, evaluation, calibration) on every row; ``"certify"``: ``python -m core certify``
        (certificates of every row in partitions, bounded memory, resumable).
    """
    stem = Path(file_name).stem or "table"
    proto = ["--grouping", protocol.grouping, "--baseline", protocol.baseline, "--path", protocol.path,
             "--operators", ",".join(protocol.operators),
             "--severities", ",".join(repr(float(v)) for v in protocol.severities),
             "--weights", ",".join(repr(float(v)) for v in protocol.weights),
             "--merge-threshold", repr(float(protocol.merge_threshold))]
    if protocol.depth is not None:
        proto += ["--depth", str(int(protocol.depth))]
    if blocks_file is not None:
        proto += ["--blocks", blocks_file]
    common = ["--data", file_name, "--target", target, "--model", model, "--seed", str(int(seed))]
    commands = {
        "audit": ["python", "-m", "core", "audit", *common, *proto, "--out", f"{stem}-audit"],
        "certify": ["python", "-m", "core", "certify", *common, *proto, "--out", f"{stem}-certificates"],
    }
    return {name: shlex.join(argv) for name, argv in commands.items()}
