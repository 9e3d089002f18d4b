"""A CI gate on a saved audit: thresholds on its figures, one verdict, JUnit XML and Markdown.

``reliability-audit gate AUDIT_DIR --max share_brittle=0.1 --min accuracy=0.8`` (the command is
:mod:`core.cli.gate`; the page is ``docs/ci.md``) reads the figures of an audit folder
(:func:`gate_metrics`), checks every rule against them (:func:`evaluate`) and reports the
outcome for a CI service (:func:`junit_xml`), for a pull request (:func:`markdown`) and for a
terminal (:func:`summary_text`). Nothing here writes a file or prints.

**Metric names.** Flat snake_case names for the audit-wide figures of ``evaluation.json``: its
``nominal`` section (``accuracy``, ``macro_f1``, ``auroc``, ``average_precision``, ``nll``,
``ece``, ``brier``), its ``fragility`` section (``mean_rcma``, ``share_k_le_2``,
``share_brittle``, ``share_high_confidence``) and the counts ``n_test``,
``n_high_confidence``, ``n_brittle``. Dotted names for the figures of one risk score,
``SCORE.FIGURE`` (``fds.auroc``, ``fds.capture_at_20``, ``rcma.aurc``), of one score against
the naturalistic labels, ``naturalistic.SCORE.FIGURE``, and of one calibration method on one
subset of the test rows, ``calibration.METHOD.SUBSET.FIGURE``
(``calibration.uncalibrated.fragile.ece``). A figure name of ``evaluation.json`` becomes a
metric name by :func:`metric_name` (``capture@20`` → ``capture_at_20``); a rule may use either
spelling. A ``null`` of ``evaluation.json`` (undefined on this audit) is a NaN metric, and a
rule on it fails: it cannot be checked.

**Rules.** ``max`` holds when the value is at most the threshold, ``min`` when it is at least
the threshold. Rules from the command line and from a policy file are combined; the same
metric given twice in the same direction keeps the stricter threshold (a gate never loosens
by accident), and a ``min`` above the ``max`` of the same metric is refused (no value passes).

Examples
--------
>>> rules = [parse_rule("share_brittle=0.1"), parse_rule("accuracy=0.8", direction="min")]
>>> result = evaluate({"share_brittle": 0.143, "accuracy": 0.91}, rules)
>>> result.passed
False
>>> print(summary_text(result))
FAIL  share_brittle = 0.143 > 0.1 (max)
pass  accuracy = 0.91 >= 0.8 (min)
gate failed: 1 of 2 rules fail
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from xml.etree import ElementTree

__all__ = [
    "DIRECTIONS",
    "SUITE_NAME",
    "AuditMetrics",
    "GateResult",
    "GateRule",
    "RuleOutcome",
    "evaluate",
    "gate_metrics",
    "junit_xml",
    "known_metrics_text",
    "load_policy",
    "markdown",
    "metric_name",
    "metric_values",
    "parse_rule",
    "summary_text",
]

Direction = Literal["max", "min"]
#: The two directions of a rule: ``max`` fails above the threshold, ``min`` below it.
DIRECTIONS: tuple[str, ...] = ("max", "min")
#: Name of the JUnit test suite (and of the ``testsuites`` root).
SUITE_NAME = "reliability-audit gate"

#: Sections of ``evaluation.json`` whose entries are flat metrics, in the order listed.
_FLAT_SECTIONS = ("nominal", "fragility")
#: Top-level counts of ``evaluation.json`` that are metrics.
_COUNTS = ("n_test", "n_high_confidence", "n_brittle")
#: Fields of a score or calibration entry that describe it rather than measure it.
_TEXT_FIELDS = frozenset({"score", "kind", "orientation", "population", "note", "method", "subset"})
#: First parts of the dotted names that are not a score.
_PREFIXES = ("naturalistic", "calibration")
#: A policy file is a few lines; anything this large is not one.
_MAX_POLICY_BYTES = 1 << 20
_OPERATOR = {"max": "<=", "min": ">="}
_BROKEN = {"max": ">", "min": "<"}
_MARKDOWN_OPERATOR = {"max": "≤", "min": "≥"}


# --------------------------------------------------------------------------------------------
# Metric names and values
# --------------------------------------------------------------------------------------------
def metric_name(text: str) -> str:
    """The metric name of a figure name: lower case, ``@`` → ``_at_``, other signs → ``_``.

    Every dot-separated part is converted on its own, so a dotted name stays dotted.

    Examples
    --------
    >>> metric_name("capture@20"), metric_name("FDS.capture@20"), metric_name("macro-F1")
    ('capture_at_20', 'fds.capture_at_20', 'macro_f1')
    """
    parts = []
    for part in str(text).strip().lower().split("."):
        part = re.sub(r"[^a-z0-9_]+", "_", part.strip().replace("@", "_at_"))
        parts.append(part.strip("_"))
    return ".".join(parts)


def _figure(value: Any) -> float | None:
    """A metric value: a number as float, ``null`` as NaN; None when ``value`` is no figure."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _figure_fields(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fields of a family of entries that are figures (numbers or null in every entry)."""
    fields: dict[str, bool] = {}
    for entry in entries:
        for key, value in entry.items():
            is_figure = key not in _TEXT_FIELDS and _figure(value) is not None
            fields[key] = fields.get(key, True) and is_figure
    return [key for key, ok in fields.items() if ok]


def _entries(section: Any) -> dict[str, Mapping[str, Any]]:
    """``{name: entry}`` of a by-score section (``scores``, ``naturalistic``); {} when absent."""
    if not isinstance(section, Mapping):
        return {}
    return {str(name): entry for name, entry in section.items() if isinstance(entry, Mapping)}


def metric_values(evaluation: Mapping[str, Any]) -> dict[str, float]:
    """Every metric of an ``evaluation.json`` (:func:`core.tabular.audit.evaluation_json`), by name.

    Parameters
    ----------
    evaluation : mapping
        The parsed ``evaluation.json`` of an audit folder.

    Returns
    -------
    dict of str to float
        In this order: the ``nominal`` and ``fragility`` figures, the counts ``n_test``,
        ``n_high_confidence`` and ``n_brittle``, ``SCORE.FIGURE`` for every score of
        ``scores``, ``naturalistic.SCORE.FIGURE``, ``calibration.METHOD.SUBSET.FIGURE``.
        A ``null`` figure is NaN; text fields (a score's ``kind``, ``note``, …) are left out.
        A section the folder does not hold gives no metric.

    Examples
    --------
    >>> metric_values({
    ...     "nominal": {"accuracy": 0.9}, "fragility": {"share_brittle": 0.25}, "n_test": 40,
    ...     "scores": {"fds": {"kind": "certificate", "auroc": 0.75, "capture@20": None}},
    ... })
    {'accuracy': 0.9, 'share_brittle': 0.25, 'n_test': 40.0, 'fds.auroc': 0.75, 'fds.capture_at_20': nan}
    """
    values: dict[str, float] = {}

    def add(name: str, value: float) -> None:
        values.setdefault(metric_name(name), value)

    for section in _FLAT_SECTIONS:
        entries = evaluation.get(section)
        for key, value in entries.items() if isinstance(entries, Mapping) else ():
            number = _figure(value)
            if number is not None:
                add(str(key), number)
    for key in _COUNTS:
        number = _figure(evaluation[key]) if key in evaluation else None
        if number is not None:
            add(key, number)
    for prefix, section in (("", "scores"), ("naturalistic.", "naturalistic")):
        entries = _entries(evaluation.get(section))
        fields = _figure_fields(entries.values())
        for score, entry in entries.items():
            for field in fields:
                add(f"{prefix}{metric_name(score)}.{metric_name(field)}", _figure(entry.get(field)))
    calibration = evaluation.get("calibration")
    records = calibration.get("metrics") if isinstance(calibration, Mapping) else None
    records = [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []
    fields = _figure_fields(records)
    for record in records:
        where = f"calibration.{metric_name(record.get('method', '?'))}.{metric_name(record.get('subset', '?'))}"
        for field in fields:
            add(f"{where}.{metric_name(field)}", _figure(record.get(field)))
    return values


@dataclass(frozen=True, kw_only=True)
class AuditMetrics:
    """The figures of one audit folder and what names the audit.

    Attributes
    ----------
    values : Mapping[str, float]
        Every metric by name (:func:`metric_values`; read-only). NaN where ``evaluation.json``
        holds ``null``.
    folder : str
        The audit folder's name only (never its path: reports may be public).
    dataset, model : str
        As ``evaluation.json`` names them ("?" when absent).
    seed : int or None
    fingerprint : str
        The certificate fingerprint ("" when absent).
    """

    values: Mapping[str, float]
    folder: str
    dataset: str = "?"
    model: str = "?"
    seed: int | None = None
    fingerprint: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @property
    def label(self) -> str:
        """``folder (dataset / model, seed k)``, as the reports name the audit."""
        seed = "" if self.seed is None else f", seed {self.seed}"
        return f"{self.folder} ({self.dataset} / {self.model}{seed})"


def gate_metrics(audit_dir: str | os.PathLike[str]) -> AuditMetrics:
    """The metrics of an audit folder (``reliability-audit audit --out DIR``, ``AuditResult.save``).

    The folder is checked first (:func:`core.tabular.audit_folder.check_audit_folder`: its
    required files, and the format version of ``view/meta.json`` and of the protocol); then
    only ``evaluation.json`` is read.

    Parameters
    ----------
    audit_dir : str or path
        One audit folder (one unit of a sweep is ``DIR/<dataset>/<model>/seed<k>``).

    Returns
    -------
    AuditMetrics

    Raises
    ------
    NewerFormatError
        The folder was written by a newer version of the tool.
    ValueError
        Not an audit folder (the missing file is named), a sweep's top folder, a malformed
        ``evaluation.json``, or one without any figure.
    """
    from core.formats import read_json_object
    from core.tabular.audit_folder import check_audit_folder

    path = Path(audit_dir)
    if path.is_dir() and (path / "sweep_runs.csv").is_file() and not (path / "evaluation.json").is_file():
        raise ValueError(
            f"{path} is a sweep folder; gate one of its audits, {path}/<dataset>/<model>/seed<k>, at a time."
        )
    path = check_audit_folder(path)
    evaluation = read_json_object(path / "evaluation.json")
    values = metric_values(evaluation)
    if not values:
        raise ValueError(f"{path / 'evaluation.json'} holds no figure to check (no nominal, fragility or scores).")
    seed = evaluation.get("seed")
    return AuditMetrics(
        values=values,
        folder=Path(os.path.abspath(path)).name,
        dataset=str(evaluation.get("dataset", "?")),
        model=str(evaluation.get("model", "?")),
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        fingerprint=str(evaluation.get("fingerprint") or ""),
    )


def known_metrics_text(names: Iterable[str]) -> str:
    """All metric names, compact: the ``SCORE.FIGURE`` names of a product written once.

    A family of dotted names (the score figures, the naturalistic ones, the calibration ones)
    that is every combination of its parts is written ``{a,b}.{x,y}``; any other is listed.

    Examples
    --------
    >>> known_metrics_text(["accuracy", "share_brittle", "fds.auroc", "fds.aurc", "rcma.auroc", "rcma.aurc"])
    'accuracy, share_brittle; {fds,rcma}.{auroc,aurc}'
    >>> known_metrics_text(["fds.auroc", "rcma.aurc"])
    'fds.auroc, rcma.aurc'
    """
    groups: dict[tuple[int, str | None], list[tuple[str, ...]]] = {}
    for name in names:
        parts = tuple(name.split("."))
        key = (len(parts), parts[0] if len(parts) > 1 and parts[0] in _PREFIXES else None)
        groups.setdefault(key, []).append(parts)
    out = []
    for (width, _), members in groups.items():
        members = list(dict.fromkeys(members))
        columns = [list(dict.fromkeys(p[i] for p in members)) for i in range(width)]
        if width > 1 and math.prod(len(c) for c in columns) == len(members):
            out.append(".".join(c[0] if len(c) == 1 else "{" + ",".join(c) + "}" for c in columns))
        else:
            out.append(", ".join(".".join(p) for p in members))
    return "; ".join(out)


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------
def _number_text(value: float) -> str:
    """The threshold as people wrote it: the shortest text that reads back the same float."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, no exponent, trailing zeros dropped."""
    if value == 0 or not math.isfinite(value):
        return _number_text(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else repr(value))
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _value_text(value: float, threshold: float) -> str:
    """``value`` rounded to 3 significant digits, or more when 3 would hide how it compares."""
    if not math.isfinite(value) or (value == int(value) and abs(value) < 1e15):
        return _significant(value, 3)
    for digits in range(3, 18):
        text = _significant(value, digits)
        shown = float(text)
        if (shown > threshold, shown < threshold) == (value > threshold, value < threshold):
            return text
    return repr(value)


@dataclass(frozen=True, kw_only=True)
class GateRule:
    """One threshold on one metric.

    Attributes
    ----------
    metric : str
        A metric name (:func:`metric_name` spelling).
    direction : {"max", "min"}
        ``max`` holds when the value is at most ``threshold``; ``min`` when at least.
    threshold : float
        A finite number.
    source : str, default=""
        Where the rule came from, for messages (``"--max"``, ``"gate.toml, line 3"``).
    """

    metric: str
    direction: Direction
    threshold: float
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.metric, str) or not metric_name(self.metric).replace(".", ""):
            raise ValueError(f"`metric` must be a metric name such as 'share_brittle'; got {self.metric!r}.")
        object.__setattr__(self, "metric", metric_name(self.metric))
        if self.direction not in DIRECTIONS:
            raise ValueError(f"`direction` must be 'max' or 'min'; got {self.direction!r}.")
        threshold = self.threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise ValueError(f"`threshold` of {self.metric!r} must be a finite number; got {threshold!r}.")
        object.__setattr__(self, "threshold", float(threshold))

    @property
    def name(self) -> str:
        """``max share_brittle <= 0.1``: the rule as the reports name it (the JUnit test case)."""
        return f"{self.direction} {self.metric} {_OPERATOR[self.direction]} {_number_text(self.threshold)}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` satisfies the rule (never for NaN: it cannot be checked)."""
        if math.isnan(value):
            return False
        return value <= self.threshold if self.direction == "max" else value >= self.threshold

    def stricter(self, other: GateRule) -> GateRule:
        """The stricter of two rules on the same metric in the same direction (self on a tie)."""
        if (other.metric, other.direction) != (self.metric, self.direction):
            raise ValueError(f"`other` must be a {self.direction} rule on {self.metric!r}; got {other.name!r}.")
        if self.direction == "max":
            return other if other.threshold < self.threshold else self
        return other if other.threshold > self.threshold else self


def parse_rule(text: str, *, direction: Direction = "max", source: str = "") -> GateRule:
    """A rule from ``METRIC=VALUE``, as ``--max`` and ``--min`` take it.

    Parameters
    ----------
    text : str
        ``METRIC=VALUE``: a metric name (either spelling, :func:`metric_name`) and a finite number.
    direction : {"max", "min"}, default="max"
    source : str, default=""
        Where the text came from (default: ``--max`` / ``--min``).

    Returns
    -------
    GateRule

    Raises
    ------
    ValueError
        No ``=``, no metric, or a value that is not a finite number; the message echoes ``text``.

    Examples
    --------
    >>> parse_rule("share_brittle=0.1")
    GateRule(metric='share_brittle', direction='max', threshold=0.1, source='--max')
    >>> parse_rule("fds.capture@20 = 0.3", direction="min").name
    'min fds.capture_at_20 >= 0.3'
    >>> parse_rule("accuracy")
    Traceback (most recent call last):
    ...
    ValueError: expected METRIC=VALUE (e.g. share_brittle=0.1); got 'accuracy'.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"`direction` must be 'max' or 'min'; got {direction!r}.")
    if not isinstance(text, str) or "=" not in text:
        raise ValueError(f"expected METRIC=VALUE (e.g. share_brittle=0.1); got {text!r}.")
    name, _, number = text.partition("=")
    metric = metric_name(name)
    if not metric.replace(".", ""):
        raise ValueError(f"expected a metric name before '=' (e.g. share_brittle=0.1); got {text!r}.")
    try:
        threshold = float(number.strip())
    except ValueError:
        threshold = math.nan
    if not math.isfinite(threshold):
        raise ValueError(f"expected a finite number after '=' (e.g. {metric}=0.1); got {text!r}.")
    return GateRule(metric=metric, direction=direction, threshold=threshold, source=source or f"--{direction}")


# --------------------------------------------------------------------------------------------
# Policy files
# --------------------------------------------------------------------------------------------
_KEY_PART = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)')
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY_LINE = re.compile(
    r"""^\s*((?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*="""
)


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(next(g for g in m.groups() if g is not None) for m in _KEY_PART.finditer(text))


def _line_of(text: str, path: tuple[str, ...]) -> int | None:
    """The line that defines the TOML key ``path`` (a table header or a key), else the nearest one.

    Found by reading the lines (``tomllib`` keeps no positions): an exact definition first,
    else the longest one that encloses it (an inline table ``max = {...}``), else the first one
    inside it (a table known only from ``[max.fds]``).
    """
    best, best_len, inside, table = None, 0, None, ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header and not line.lstrip().startswith("[["):
            table = _key_parts(header.group(1))
            full = table
        else:
            key = _KEY_LINE.match(line)
            if not key:
                continue
            full = table + _key_parts(key.group(1))
        if full == path:
            return number
        if len(full) > best_len and path[: len(full)] == full:
            best, best_len = number, len(full)
        if inside is None and full[: len(path)] == path:
            inside = number
    return best if best is not None else inside


def _leaves(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    """``(key path, value)`` of every non-table value under ``table`` (dotted keys are nested)."""
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def _toml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value) if isinstance(value, float) else str(value)


def _kind(value: Any) -> str:
    kinds = {bool: "a boolean", str: "a string", list: "an array", dict: "a table"}
    return next((word for kind, word in kinds.items() if isinstance(value, kind)), type(value).__name__)


def _unknown_metric(metric: str, known: Iterable[str]) -> str:
    """``unknown metric 'x' (did you mean 'y'?); known metrics of this audit: ...`` (no final period)."""
    known = list(known)
    close = difflib.get_close_matches(metric, known, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown metric {metric!r}{hint}; known metrics of this audit: {known_metrics_text(known)}"


def load_policy(path: str | os.PathLike[str], *, metrics: Iterable[str] | None = None) -> tuple[GateRule, ...]:
    """The rules of a policy file (TOML): a ``[max]`` and a ``[min]`` table of ``METRIC = VALUE``.

    A per-score table is a dotted table: ``[min.fds]`` with ``auroc = 0.7`` is the rule
    ``min fds.auroc >= 0.7``, as is ``fds.auroc = 0.7`` (or ``"fds.auroc" = 0.7``) under
    ``[min]``.

    Parameters
    ----------
    path : str or path
        The policy file, UTF-8 TOML.
    metrics : iterable of str, optional
        The metric names a rule may name (an audit's ``AuditMetrics.values``); without it the
        names are checked later, by :func:`evaluate`.

    Returns
    -------
    tuple of GateRule
        In file order; each rule's ``source`` is ``"<path>, line <n>"``.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Anything else the file cannot be: not UTF-8, not TOML (the line, the column and the
        line's text), a table other than ``[max]`` / ``[min]``, a value outside them, a value
        that is not a finite number, an unknown metric; each names the file, the line, the key
        and the value.
    """
    where = str(path)
    file = Path(path).expanduser()
    if not file.exists():
        raise FileNotFoundError(f"policy file {where!r} does not exist.")
    if not file.is_file():
        raise ValueError(f"policy file {where!r} is not a regular file; expected a TOML file.")
    if file.stat().st_size > _MAX_POLICY_BYTES:
        raise ValueError(f"policy file {where!r} is larger than {_MAX_POLICY_BYTES} bytes; a policy is a few lines.")
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not a TOML policy file: not UTF-8 text (at byte offset {exc.start}).") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
        if at is None:
            raise ValueError(f"{where}: not valid TOML: {message}.") from None
        number, column = int(at.group(1)), int(at.group(2))
        lines = text.splitlines()
        shown = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        raise ValueError(
            f"{where}, line {number}, column {column}: not valid TOML ({message[: at.start()]}): {shown!r}."
        ) from None
    known = None if metrics is None else list(metrics)
    rules = []
    for table, content in data.items():
        line = _line_of(text, (table,))
        at = f"{where}, line {line}" if line else where
        if not isinstance(content, dict):
            raise ValueError(
                f"{at}: {table} = {_toml_text(content)} is outside the tables; a policy holds METRIC = VALUE "
                "lines under [max] and [min]."
            )
        if table not in DIRECTIONS:
            raise ValueError(f"{at}: unknown table [{table}]; a policy has the tables [max] and [min].")
        for key, value in _leaves(content):
            line = _line_of(text, (table, *key))
            at = f"{where}, line {line}" if line else where
            shown = f"[{table}] {'.'.join(key)} = {_toml_text(value)}"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{at}: {shown}: expected a number; got {_kind(value)}.")
            if not math.isfinite(value):
                raise ValueError(f"{at}: {shown}: expected a finite number.")
            metric = metric_name(".".join(key))
            if known is not None and metric not in known:
                raise ValueError(f"{at}: {shown}: {_unknown_metric(metric, known)}.")
            rules.append(GateRule(metric=metric, direction=table, threshold=float(value), source=at))
    return tuple(rules)


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RuleOutcome:
    """One rule checked against the audit.

    Attributes
    ----------
    rule : GateRule
    value : float
        The metric's value (NaN: undefined on this audit, the rule fails).
    passed : bool
    message : str
        ``share_brittle = 0.143 > 0.1 (max)``; for NaN, why it cannot be checked.
    """

    rule: GateRule
    value: float
    passed: bool
    message: str

    @property
    def defined(self) -> bool:
        """False when the value is NaN (the rule could not be checked)."""
        return not math.isnan(self.value)


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """The verdict of a gate.

    Attributes
    ----------
    outcomes : tuple of RuleOutcome
        One per rule, in the order the rules were first given (after combining duplicates).
    audit : AuditMetrics or None
        The audit checked (None when :func:`evaluate` was given a plain mapping).
    """

    outcomes: tuple[RuleOutcome, ...]
    audit: AuditMetrics | None = None

    @property
    def passed(self) -> bool:
        """True when every rule holds."""
        return all(o.passed for o in self.outcomes)

    @property
    def failures(self) -> tuple[RuleOutcome, ...]:
        """The outcomes whose rule failed (NaN included)."""
        return tuple(o for o in self.outcomes if not o.passed)

    @property
    def exit_code(self) -> int:
        """0 when every rule holds, 1 when any fails (the command's exit code)."""
        return 0 if self.passed else 1


def _combined(rules: Iterable[GateRule]) -> list[GateRule]:
    """One rule per metric and direction (the stricter), in first-given order; a min above a max refused."""
    kept: dict[tuple[str, str], GateRule] = {}
    for rule in rules:
        key = (rule.metric, rule.direction)
        kept[key] = kept[key].stricter(rule) if key in kept else rule
    for (metric, direction), low in kept.items():
        high = kept.get((metric, "max"))
        if direction == "min" and high is not None and low.threshold > high.threshold:
            raise ValueError(
                f"no value of {metric!r} can pass: {low.name} ({low.source}) and {high.name} ({high.source})."
            )
    return list(kept.values())


def _outcome(rule: GateRule, value: float) -> RuleOutcome:
    threshold = _number_text(rule.threshold)
    if math.isnan(value):
        message = (
            f"{rule.metric} is undefined (NaN) in this audit: cannot be checked against {rule.direction} {threshold}"
        )
        return RuleOutcome(rule=rule, value=value, passed=False, message=message)
    passed = rule.holds(value)
    sign = _OPERATOR[rule.direction] if passed else _BROKEN[rule.direction]
    message = f"{rule.metric} = {_value_text(value, rule.threshold)} {sign} {threshold} ({rule.direction})"
    return RuleOutcome(rule=rule, value=value, passed=passed, message=message)


def evaluate(metrics: AuditMetrics | Mapping[str, float], rules: Iterable[GateRule]) -> GateResult:
    """Check every rule against an audit's metrics.

    Parameters
    ----------
    metrics : AuditMetrics or mapping of str to float
        :func:`gate_metrics` of a folder, or plain values by metric name.
    rules : iterable of GateRule
        At least one. The same metric in the same direction twice keeps the stricter
        threshold (the first given on a tie, with its ``source``).

    Returns
    -------
    GateResult

    Raises
    ------
    ValueError
        No rule, a rule on a metric the audit does not have (the message lists the known
        ones), or a ``min`` above the ``max`` of the same metric.

    Examples
    --------
    >>> result = evaluate({"mean_rcma": 0.4, "fds.aurc": float("nan")},
    ...                   [parse_rule("mean_rcma=0.5"), parse_rule("fds.aurc=0.3"), parse_rule("mean_rcma=0.45")])
    >>> [(o.rule.name, o.passed) for o in result.outcomes]
    [('max mean_rcma <= 0.45', True), ('max fds.aurc <= 0.3', False)]
    >>> result.failures[0].message
    'fds.aurc is undefined (NaN) in this audit: cannot be checked against max 0.3'
    """
    audit = metrics if isinstance(metrics, AuditMetrics) else None
    values = audit.values if audit is not None else metrics
    rules = list(rules)
    for rule in rules:
        if not isinstance(rule, GateRule):
            raise ValueError(f"`rules` must hold GateRule objects; got {rule!r}.")
    if not rules:
        raise ValueError("`rules` is empty: a gate needs at least one rule.")
    for rule in rules:
        if rule.metric not in values:
            source = f" ({rule.source})" if rule.source else ""
            raise ValueError(f"{rule.name}{source}: {_unknown_metric(rule.metric, values)}.")
    outcomes = tuple(_outcome(rule, float(values[rule.metric])) for rule in _combined(rules))
    return GateResult(outcomes=outcomes, audit=audit)


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------
def _verdict(result: GateResult) -> str:
    """``gate failed for bc (breast_cancer / logreg, seed 0): 1 of 3 rules fail``."""
    n, failed = len(result.outcomes), len(result.failures)
    rules = f"rule{'s' if n != 1 else ''}"
    counted = f"{failed} of {n} {rules} fail" if failed else f"{n} of {n} {rules} hold"
    audit = f" for {result.audit.label}" if result.audit is not None else ""
    return f"gate {'failed' if failed else 'passed'}{audit}: {counted}"


def summary_text(result: GateResult) -> str:
    """What the command prints: one line per rule (``pass`` / ``FAIL`` and why), then the verdict."""
    lines = [f"{'pass' if o.passed else 'FAIL'}  {o.message}" for o in result.outcomes]
    return "\n".join([*lines, _verdict(result)])


# Characters XML 1.0 cannot hold at all (a folder name or a label may carry them).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml(text: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def junit_xml(result: GateResult) -> str:
    """The result as JUnit XML, as GitHub (test-reporter actions), GitLab and Jenkins read it.

    One ``<testsuites>`` root holding one ``<testsuite name="reliability-audit gate">``; its
    ``<properties>`` name the audit; one ``<testcase>`` per rule, named as the rule
    (``max share_brittle <= 0.1``), with ``classname`` ``reliability-audit gate.<folder>``; a
    failed rule holds ``<failure message="share_brittle = 0.143 > 0.1 (max)" type="threshold">``
    (``type="undefined"`` for a NaN value). ``tests``, ``failures``, ``errors`` (0), ``skipped``
    (0) and ``time`` (0: nothing is timed) are set on the suite and the root. The suite's
    ``<system-out>`` is :func:`summary_text`. The same result gives the same text.

    Returns
    -------
    str
        The document, with its XML declaration (UTF-8).
    """
    n, failed = str(len(result.outcomes)), str(len(result.failures))
    counts = {"tests": n, "failures": failed, "errors": "0"}
    root = ElementTree.Element("testsuites", {"name": SUITE_NAME, **counts, "time": "0"})
    suite = ElementTree.SubElement(root, "testsuite", {"name": SUITE_NAME, **counts, "skipped": "0", "time": "0"})
    audit = result.audit
    if audit is not None:
        properties = ElementTree.SubElement(suite, "properties")
        named = {"audit": audit.folder, "dataset": audit.dataset, "model": audit.model}
        named |= {"seed": "" if audit.seed is None else audit.seed, "fingerprint": audit.fingerprint}
        for name, value in named.items():
            ElementTree.SubElement(properties, "property", {"name": name, "value": _xml(value)})
    classname = SUITE_NAME + (f".{_xml(audit.folder)}" if audit is not None else "")
    for outcome in result.outcomes:
        case = ElementTree.SubElement(
            suite, "testcase", {"name": _xml(outcome.rule.name), "classname": classname, "time": "0"}
        )
        if not outcome.passed:
            kind = "threshold" if outcome.defined else "undefined"
            failure = ElementTree.SubElement(case, "failure", {"message": _xml(outcome.message), "type": kind})
            source = f"\nrule from: {outcome.rule.source}" if outcome.rule.source else ""
            failure.text = _xml(outcome.message + source)
    ElementTree.SubElement(suite, "system-out").text = _xml(summary_text(result))
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _cell(text: Any) -> str:
    """Plain text in a Markdown table cell: ``|`` escaped, line breaks as spaces."""
    return " ".join(str(text).split("\n")).replace("\r", " ").replace("|", "\\|")


def markdown(result: GateResult) -> str:
    """The result as Markdown, for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

    A title with the verdict (✅ / ❌) and the audit's name, a line naming the audit (folder
    name only, dataset, model, seed, certificate fingerprint), then a table ``rule | value |
    threshold | result``. Text cells escape ``|``.

    Examples
    --------
    >>> print(markdown(evaluate({"accuracy": 0.91}, [parse_rule("accuracy=0.8", direction="min")])))
    ## ✅ Reliability gate passed
    <BLANKLINE>
    | rule | value | threshold | result |
    |---|---:|---:|---|
    | min accuracy | 0.91 | ≥ 0.8 | ✅ pass |
    <BLANKLINE>
    """
    n, failed = len(result.outcomes), len(result.failures)
    verdict = "✅ Reliability gate passed" if not failed else f"❌ Reliability gate failed ({failed} of {n} rules)"
    audit = result.audit
    lines = [
        f"## {verdict}" + (f": {_cell(audit.folder)} ({_cell(audit.dataset)} / {_cell(audit.model)})" if audit else "")
    ]
    if audit is not None:
        seed = "" if audit.seed is None else f", seed {audit.seed}"
        fingerprint = f", certificate fingerprint `{_cell(audit.fingerprint[:12])}`" if audit.fingerprint else ""
        lines += [
            "",
            f"Audit folder {_cell(audit.folder)}: dataset {_cell(audit.dataset)}, model {_cell(audit.model)}"
            f"{seed}{fingerprint}.",
        ]
    lines += ["", "| rule | value | threshold | result |", "|---|---:|---:|---|"]
    for o in result.outcomes:
        rule = o.rule
        value = _value_text(o.value, rule.threshold) if o.defined else "NaN"
        threshold = f"{_MARKDOWN_OPERATOR[rule.direction]} {_number_text(rule.threshold)}"
        verdict = "✅ pass" if o.passed else ("❌ fail" if o.defined else "❌ undefined: cannot be checked")
        lines.append(f"| {_cell(f'{rule.direction} {rule.metric}')} | {value} | {threshold} | {verdict} |")
    return "\n".join(lines) + "\n"
