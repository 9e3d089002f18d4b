"""`core.gate`: an audit folder's metrics, rules, policy files, the verdict and its reports.

The audit folder is the shared ``audit`` fixture of ``tests/conftest.py`` (breast_cancer +
logreg, seed 0, written as ``reliability-audit audit --out`` writes it); a test that changes a
file works on a copy.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from xml.etree import ElementTree

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.formats import NewerFormatError
from core.gate import (
    SUITE_NAME,
    AuditMetrics,
    GateRule,
    evaluate,
    gate_metrics,
    junit_xml,
    known_metrics_text,
    load_policy,
    markdown,
    metric_name,
    metric_values,
    parse_rule,
    summary_text,
)

SCORE_FIGURES = ("n", "n_brittle", "auroc", "capture@5", "capture@10", "capture@20", "aurc", "false_conf_captured@20")
CALIBRATION_FIGURES = ("n", "nll", "ece", "brier")


def copy_of(folder, tmp_path, name="bc"):
    return shutil.copytree(folder, tmp_path / name)


def evaluation_of(folder) -> dict:
    return json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))


def expected_metrics(ev: dict) -> dict[str, float]:
    """The metrics of an ``evaluation.json``, spelled out field by field (the twin of ``metric_values``)."""
    out = {**ev["nominal"], **ev["fragility"], **{k: ev[k] for k in ("n_test", "n_high_confidence", "n_brittle")}}
    for score, entry in ev["scores"].items():
        for figure in SCORE_FIGURES:
            out[f"{score}.{figure.replace('@', '_at_')}"] = entry[figure]
    for score, entry in (ev["naturalistic"] or {}).items():
        for figure in SCORE_FIGURES:
            out[f"naturalistic.{score}.{figure.replace('@', '_at_')}"] = entry[figure]
    for record in ev["calibration"]["metrics"]:
        for figure in CALIBRATION_FIGURES:
            out[f"calibration.{record['method']}.{record['subset']}.{figure}"] = record[figure]
    return {name: math.nan if value is None else float(value) for name, value in out.items()}


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# --------------------------------------------------------------------------------------------
# Metrics of a folder
# --------------------------------------------------------------------------------------------
def test_every_metric_is_the_number_evaluation_json_holds(audit):
    result, folder = audit
    metrics = gate_metrics(folder)
    expected = expected_metrics(evaluation_of(folder))
    assert set(metrics.values) == set(expected)
    assert [n for n in expected if not same(metrics.values[n], expected[n])] == []
    # The headline figures, named as the contract says, against the audit itself.
    for name, value in result.fragility.items():
        assert metrics.values[name] == pytest.approx(value, rel=1e-12)
    assert metrics.values["accuracy"] == pytest.approx(result.nominal["accuracy"], rel=1e-12)
    fds = result.evaluation.set_index("score").loc["fds"]
    assert metrics.values["fds.capture_at_20"] == pytest.approx(fds["capture@20"], rel=1e-12)
    assert (metrics.folder, metrics.dataset, metrics.model, metrics.seed) == ("bc", "breast_cancer", "logreg", 0)
    assert metrics.fingerprint == result.fingerprint
    with pytest.raises(TypeError):
        metrics.values["accuracy"] = 0.0  # read-only


def test_naturalistic_figures_and_text_fields():
    ev = {
        "nominal": {"accuracy": 0.8, "note": "text is no metric"},
        "fragility": {"share_brittle": None},
        "n_test": 10,
        "scores": {"fds": {"kind": "certificate", "note": None, "auroc": 0.7, "capture@20": None}},
        "naturalistic": {"fds": {"kind": "certificate", "note": "x", "auroc": 0.6, "capture@20": 0.5}},
        "calibration": {"metrics": [{"method": "bats", "subset": "fragile", "n": 3, "ece": 0.2}]},
    }
    values = metric_values(ev)
    assert list(values) == [
        "accuracy",
        "share_brittle",
        "n_test",
        "fds.auroc",
        "fds.capture_at_20",
        "naturalistic.fds.auroc",
        "naturalistic.fds.capture_at_20",
        "calibration.bats.fragile.n",
        "calibration.bats.fragile.ece",
    ]
    assert math.isnan(values["share_brittle"]) and math.isnan(values["fds.capture_at_20"])
    assert values["naturalistic.fds.capture_at_20"] == 0.5


def test_the_compact_listing_names_exactly_the_metrics(audit):
    """Expanding the braces of ``known_metrics_text`` gives back every name, and only those."""
    names = list(gate_metrics(audit[1]).values)
    text = known_metrics_text(names)
    expanded: list[str] = []
    for group in text.split("; "):
        for item in group.split(", ") if "{" not in group else [group]:
            options = [[""]]
            for part in item.split("."):
                options.append(part[1:-1].split(",") if part.startswith("{") else [part])
            combos = [""]
            for choice in options[1:]:
                combos = [f"{c}.{o}" if c else o for c in combos for o in choice]
            expanded += combos
    assert sorted(expanded) == sorted(names)
    assert "{fds,rcma," in text and "calibration.{uncalibrated,temperature,bats}.{all,fragile}" in text


def test_a_folder_written_by_a_newer_version_is_refused(audit, tmp_path):
    folder = copy_of(audit[1], tmp_path)
    meta_file = folder / "view" / "meta.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    meta["schema"] = "audit-view/99"
    meta_file.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(NewerFormatError, match=r"made by a newer reliability-audit \(format 99"):
        gate_metrics(folder)


def _sweep_folder(root):
    (root / "sweep").mkdir()
    (root / "sweep" / "sweep_runs.csv").write_text("dataset,model\n", encoding="utf-8")
    return root / "sweep"


def _empty_folder(root):
    (root / "empty").mkdir()
    return root / "empty"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "missing", r"audit folder '.*missing' does not exist"),
        (_sweep_folder, r"sweep is a sweep folder; gate one of its audits"),
        (_empty_folder, r"empty is not an audit folder: protocol\.json is missing"),
    ],
    ids=["missing", "sweep-folder", "not-an-audit"],
)
def test_what_is_not_one_audit_folder_is_refused(tmp_path, make, message):
    with pytest.raises(ValueError, match=message):
        gate_metrics(make(tmp_path))


def test_a_damaged_evaluation_json_is_named(audit, tmp_path):
    folder = copy_of(audit[1], tmp_path)
    (folder / "evaluation.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"evaluation\.json is not valid JSON"):
        gate_metrics(folder)


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "direction", "metric", "threshold"),
    [
        ("share_brittle=0.1", "max", "share_brittle", 0.1),
        (" accuracy = 0.8 ", "min", "accuracy", 0.8),
        ("fds.capture@20=0.3", "min", "fds.capture_at_20", 0.3),
        ("FDS.AUROC=1e-1", "min", "fds.auroc", 0.1),
        ("delta=-2", "max", "delta", -2.0),
    ],
    ids=["plain", "spaces", "json-spelling", "upper-case-exponent", "negative"],
)
def test_parse_rule(text, direction, metric, threshold):
    rule = parse_rule(text, direction=direction)
    assert (rule.metric, rule.direction, rule.threshold, rule.source) == (
        metric,
        direction,
        threshold,
        f"--{direction}",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("share_brittle", r"expected METRIC=VALUE .*got 'share_brittle'"),
        ("=0.1", r"expected a metric name .*got '=0.1'"),
        ("share_brittle=", r"expected a finite number .*got 'share_brittle='"),
        ("share_brittle=ten", r"expected a finite number .*got 'share_brittle=ten'"),
        ("share_brittle=nan", r"expected a finite number .*got 'share_brittle=nan'"),
        ("share_brittle=inf", r"expected a finite number .*got 'share_brittle=inf'"),
    ],
    ids=["no-equals", "no-metric", "no-value", "word", "nan", "inf"],
)
def test_parse_rule_refuses_echoing_the_text(text, message):
    with pytest.raises(ValueError, match=message):
        parse_rule(text)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"metric": "x", "direction": "above", "threshold": 1.0}, r"`direction` must be 'max' or 'min'; got 'above'"),
        (
            {"metric": "x", "direction": "max", "threshold": True},
            r"`threshold` of 'x' must be a finite number; got True",
        ),
        ({"metric": "x", "direction": "max", "threshold": math.nan}, r"finite number; got nan"),
        ({"metric": " ", "direction": "max", "threshold": 1.0}, r"`metric` must be a metric name"),
    ],
    ids=["direction", "bool", "nan", "blank-metric"],
)
def test_gate_rule_validates(fields, message):
    with pytest.raises(ValueError, match=message):
        GateRule(**fields)


@pytest.mark.parametrize(
    ("direction", "value", "passed", "message"),
    [
        ("max", 0.1, True, "x = 0.1 <= 0.1 (max)"),
        ("max", 0.143, False, "x = 0.143 > 0.1 (max)"),
        ("max", 0.10004, False, "x = 0.10004 > 0.1 (max)"),
        ("max", 0.0999996, True, "x = 0.0999996 <= 0.1 (max)"),
        ("min", 0.1, True, "x = 0.1 >= 0.1 (min)"),
        ("min", 0.0999996, False, "x = 0.0999996 < 0.1 (min)"),
        ("min", 32011.749, True, "x = 32012 >= 0.1 (min)"),
        ("max", math.nan, False, "x is undefined (NaN) in this audit: cannot be checked against max 0.1"),
        ("min", math.nan, False, "x is undefined (NaN) in this audit: cannot be checked against min 0.1"),
    ],
    ids=[
        "max-equal",
        "max-above",
        "max-just-above",
        "max-just-below",
        "min-equal",
        "min-just-below",
        "large",
        "nan-max",
        "nan-min",
    ],
)
def test_one_rule(direction, value, passed, message):
    result = evaluate({"x": value}, [parse_rule("x=0.1", direction=direction)])
    (outcome,) = result.outcomes
    assert (outcome.passed, outcome.message, result.passed, result.exit_code) == (
        passed,
        message,
        passed,
        int(not passed),
    )
    assert outcome.defined == (not math.isnan(value))


def test_the_stricter_rule_wins_in_either_order_and_a_tie_keeps_the_first():
    values = {"a": 0.2, "b": 0.9}
    loose, strict = parse_rule("a=0.3", source="gate.toml, line 2"), parse_rule("a=0.1")
    for rules in ([loose, strict], [strict, loose]):
        (outcome,) = evaluate(values, rules).outcomes
        assert outcome.rule == strict and not outcome.passed
    low, high = parse_rule("b=0.8", direction="min"), parse_rule("b=0.95", direction="min")
    assert evaluate(values, [low, high]).outcomes[0].rule == high
    first, second = parse_rule("a=0.3", source="policy"), parse_rule("a=0.3", source="--max")
    assert evaluate(values, [first, second]).outcomes[0].rule.source == "policy"


_threshold = st.floats(-10, 10, allow_nan=False).map(lambda x: round(x, 2))


@given(
    value=st.floats(-12, 12, allow_nan=False),
    highs=st.lists(_threshold, min_size=0, max_size=4),
    lows=st.lists(_threshold, min_size=0, max_size=4),
    order=st.randoms(use_true_random=False),
)
def test_the_verdict_is_every_rule_checked_alone(value, highs, lows, order):
    """Combining (stricter wins) never changes the verdict of checking every rule on its own."""
    rules = [parse_rule(f"a={t}") for t in highs] + [parse_rule(f"a={t}", direction="min") for t in lows]
    order.shuffle(rules)
    if not rules:
        return
    if highs and lows and max(lows) > min(highs):
        with pytest.raises(ValueError, match="no value of 'a' can pass"):
            evaluate({"a": value}, rules)
        return
    result = evaluate({"a": value}, rules)
    assert result.passed == all(rule.holds(value) for rule in rules)
    assert len(result.outcomes) == bool(highs) + bool(lows)


def test_rules_keep_the_order_first_given():
    rules = [
        parse_rule("a=1"),
        parse_rule("b=1", direction="min"),
        parse_rule("a=0.5"),
        parse_rule("a=0.1", direction="min"),
    ]
    names = [o.rule.name for o in evaluate({"a": 0.7, "b": 2.0}, rules).outcomes]
    assert names == ["max a <= 0.5", "min b >= 1", "min a >= 0.1"]


def test_a_range_is_two_rules_and_an_empty_range_is_refused():
    ok = evaluate({"a": 0.5}, [parse_rule("a=0.6"), parse_rule("a=0.4", direction="min")])
    assert ok.passed and len(ok.outcomes) == 2
    with pytest.raises(
        ValueError, match=r"no value of 'a' can pass: min a >= 0.7 \(--min\) and max a <= 0.6 \(--max\)"
    ):
        evaluate({"a": 0.5}, [parse_rule("a=0.6"), parse_rule("a=0.7", direction="min")])


def test_an_unknown_metric_lists_the_known_ones(audit):
    metrics = gate_metrics(audit[1])
    with pytest.raises(ValueError) as caught:
        evaluate(metrics, [parse_rule("share_britle=0.1")])
    text = str(caught.value)
    assert text.startswith(
        "max share_britle <= 0.1 (--max): unknown metric 'share_britle' (did you mean 'share_brittle'?)"
    )
    for name in ("accuracy", "mean_rcma", "share_k_le_2", "share_brittle", "n_test", "capture_at_20", "fds,rcma"):
        assert name in text


def test_no_rule_is_refused():
    with pytest.raises(ValueError, match="`rules` is empty"):
        evaluate({"a": 1.0}, [])


# --------------------------------------------------------------------------------------------
# Policy files
# --------------------------------------------------------------------------------------------
POLICY = """\
# the gate of this repository
[max]
share_brittle = 0.10
mean_rcma = 1         # an integer is a number too
"calibration.uncalibrated.fragile.ece" = 0.3

[min]
accuracy = 0.8
"fds.capture@20" = 0.2

[min.rcma]
auroc = 0.6
"""


def test_a_policy_file_gives_its_rules_with_their_lines(tmp_path, audit):
    path = tmp_path / "gate.toml"
    path.write_text(POLICY, encoding="utf-8")
    rules = load_policy(path, metrics=gate_metrics(audit[1]).values)
    assert [(r.name, r.source) for r in rules] == [
        ("max share_brittle <= 0.1", f"{path}, line 3"),
        ("max mean_rcma <= 1", f"{path}, line 4"),
        ("max calibration.uncalibrated.fragile.ece <= 0.3", f"{path}, line 5"),
        ("min accuracy >= 0.8", f"{path}, line 8"),
        ("min fds.capture_at_20 >= 0.2", f"{path}, line 9"),
        ("min rcma.auroc >= 0.6", f"{path}, line 12"),
    ]
    assert load_policy(path) == rules  # without the names, the same rules (checked later by evaluate)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[max]\nshare_brittle = 0.1.2\n",
            r"gate\.toml, line 2, column \d+: not valid TOML \(.*\): 'share_brittle = 0.1.2'",
        ),
        ("[max\nshare_brittle = 0.1\n", r"gate\.toml, line 1, column \d+: not valid TOML .*: '\[max'"),
        ("[maximum]\nshare_brittle = 0.1\n", r"gate\.toml, line 1: unknown table \[maximum\]; a policy has the tables"),
        ("share_brittle = 0.1\n", r"gate\.toml, line 1: share_brittle = 0.1 is outside the tables"),
        (
            '[max]\nmean_rcma = "0.5"\n',
            r"gate\.toml, line 2: \[max\] mean_rcma = \"0.5\": expected a number; got a string",
        ),
        (
            "[min]\n\naccuracy = true\n",
            r"gate\.toml, line 3: \[min\] accuracy = true: expected a number; got a boolean",
        ),
        ("[max]\nmean_rcma = [1]\n", r"gate\.toml, line 2: \[max\] mean_rcma = \[1\]: expected a number; got an array"),
        ("[max]\nmean_rcma = nan\n", r"gate\.toml, line 2: \[max\] mean_rcma = nan: expected a finite number"),
        (
            "[max]\nshare_britle = 0.1\n",
            r"gate\.toml, line 2: \[max\] share_britle = 0.1: unknown metric 'share_britle' \(did you mean "
            r"'share_brittle'\?\); known metrics of this audit: accuracy, ",
        ),
        ("[min.fdss]\nauroc = 0.7\n", r"gate\.toml, line 2: \[min\] fdss.auroc = 0.7: unknown metric 'fdss.auroc'"),
    ],
    ids=[
        "syntax",
        "header",
        "unknown-table",
        "outside-tables",
        "string",
        "boolean",
        "array",
        "nan",
        "unknown-metric",
        "unknown-score",
    ],
)
def test_a_malformed_policy_names_the_file_the_line_and_the_value(tmp_path, audit, text, message):
    path = tmp_path / "gate.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_policy(path, metrics=gate_metrics(audit[1]).values)


def test_a_policy_that_is_not_a_file_or_not_text(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"policy file '.*nope\.toml' does not exist"):
        load_policy(tmp_path / "nope.toml")
    with pytest.raises(ValueError, match="is not a regular file"):
        load_policy(tmp_path)
    (tmp_path / "bin.toml").write_bytes(b"[max]\nx = 1\n\xff\xfe")
    with pytest.raises(ValueError, match=r"bin\.toml: not a TOML policy file: not UTF-8 text \(at byte offset 12\)"):
        load_policy(tmp_path / "bin.toml")


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------
_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
_ALLOWED = {  # element: (required attributes, optional attributes, children)
    "testsuites": (
        {"tests", "failures", "errors", "time"},
        {"name", "skipped", "disabled", "timestamp"},
        {"testsuite"},
    ),
    "testsuite": (
        {"name", "tests", "failures", "errors", "time"},
        {"skipped", "disabled", "timestamp", "hostname", "id", "package", "file"},
        {"properties", "testcase", "system-out", "system-err"},
    ),
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, set(), set()),
    "testcase": (
        {"name", "classname", "time"},
        {"file", "line", "assertions"},
        {"failure", "error", "skipped", "system-out", "system-err"},
    ),
    "failure": ({"message"}, {"type"}, set()),
    "system-out": (set(), set(), set()),
}


def check_junit_shape(root: ElementTree.Element) -> None:
    """The JUnit shape GitHub's test reporters, GitLab and Jenkins read (the Ant/Surefire schema's elements)."""
    assert root.tag == "testsuites"
    for element in root.iter():
        assert element.tag in _ALLOWED, element.tag
        required, optional, children = _ALLOWED[element.tag]
        assert required <= set(element.attrib) <= required | optional, (element.tag, element.attrib)
        assert {child.tag for child in element} <= children, element.tag
        if "time" in element.attrib:
            assert _DECIMAL.match(element.attrib["time"])
    for suite in [root, *root.iter("testsuite")]:
        cases = list(suite.iter("testcase"))
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(case.find("failure") is not None for case in cases)
        assert int(suite.get("errors")) == 0
    suite = root.find("testsuite")
    assert [child.tag for child in suite][0] == "properties" and [child.tag for child in suite][-1] == "system-out"


def test_junit_xml_parses_and_names_value_and_threshold(audit):
    metrics = gate_metrics(audit[1])
    share = metrics.values["share_brittle"]
    half = round(share / 2, 2)
    rules = [
        parse_rule(f"share_brittle={half}"),
        parse_rule("accuracy=0.5", direction="min"),
        GateRule(metric="n_test", direction="min", threshold=metrics.values["n_test"] + 1, source="gate.toml, line 7"),
    ]
    result = evaluate(metrics, rules)
    text = junit_xml(result)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n') and text == junit_xml(result)
    root = ElementTree.fromstring(text.encode("utf-8"))
    check_junit_shape(root)
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == root.get("name") == SUITE_NAME
    assert (suite.get("tests"), suite.get("failures")) == ("3", "2")
    cases = suite.findall("testcase")
    n_test = int(metrics.values["n_test"])
    assert [c.get("name") for c in cases] == [
        f"max share_brittle <= {half!r}",
        "min accuracy >= 0.5",
        f"min n_test >= {n_test + 1}",
    ]
    assert {c.get("classname") for c in cases} == {f"{SUITE_NAME}.bc"}
    first = cases[0].find("failure")
    assert first.get("message") == f"share_brittle = {share:.3g} > {half!r} (max)"
    assert first.get("type") == "threshold" and "rule from: --max" in first.text
    assert cases[1].find("failure") is None
    assert cases[2].find("failure").get("message") == f"n_test = {n_test} < {n_test + 1} (min)"
    assert "rule from: gate.toml, line 7" in cases[2].find("failure").text
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties == {
        "audit": "bc",
        "dataset": "breast_cancer",
        "model": "logreg",
        "seed": "0",
        "fingerprint": metrics.fingerprint,
    }
    assert suite.find("system-out").text == summary_text(result)


def test_junit_and_markdown_of_a_nan_rule():
    result = evaluate({"x": math.nan}, [parse_rule("x=1")])
    root = ElementTree.fromstring(junit_xml(result))
    failure = root.find("testsuite/testcase/failure")
    assert failure.get("type") == "undefined" and "cannot be checked" in failure.get("message")
    assert "| max x | NaN | ≤ 1 | ❌ undefined: cannot be checked |" in markdown(result)


def test_names_with_markup_or_control_characters_stay_valid_xml_and_one_markdown_row():
    audit = AuditMetrics(values={"x": 2.0}, folder='a<b>&"c|d\x01', dataset="data|set\nnext", model="m|1", seed=3)
    result = evaluate(audit, [parse_rule("x=1")])
    root = ElementTree.fromstring(junit_xml(result))
    check_junit_shape(root)
    assert root.find("testsuite/testcase").get("classname") == f'{SUITE_NAME}.a<b>&"c|d\ufffd'
    text = markdown(result)
    assert "data\\|set next" in text and "m\\|1" in text
    row = next(line for line in text.splitlines() if line.startswith("| max x"))
    assert len(re.split(r"(?<!\\)\|", row)) == 6  # four cells between the outer bars


def test_markdown_has_the_verdict_the_table_and_no_server_path(audit):
    folder = audit[1]
    metrics = gate_metrics(folder)
    passed = markdown(evaluate(metrics, [parse_rule("accuracy=0.5", direction="min")]))
    failed = markdown(evaluate(metrics, [parse_rule("accuracy=0.5", direction="min"), parse_rule("mean_rcma=0")]))
    assert passed.startswith("## ✅ Reliability gate passed: bc (breast_cancer / logreg)\n")
    assert failed.startswith("## ❌ Reliability gate failed (1 of 2 rules): bc (breast_cancer / logreg)\n")
    lines = failed.splitlines()
    header = lines.index("| rule | value | threshold | result |")
    assert lines[header + 1] == "|---|---:|---:|---|"
    assert lines[header + 2] == f"| min accuracy | {metrics.values['accuracy']:.3f} | ≥ 0.5 | ✅ pass |"
    assert lines[header + 3] == f"| max mean_rcma | {metrics.values['mean_rcma']:.3f} | ≤ 0 | ❌ fail |"
    assert "dataset breast_cancer, model logreg, seed 0" in failed
    assert str(folder.parent) not in failed and str(folder) not in passed


def test_summary_text_is_one_line_per_rule_then_the_verdict(audit):
    metrics = gate_metrics(audit[1])
    text = summary_text(evaluate(metrics, [parse_rule("accuracy=0.5", direction="min"), parse_rule("mean_rcma=0")]))
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("pass  accuracy = ") and lines[1].startswith("FAIL  mean_rcma = ")
    assert lines[2] == "gate failed for bc (breast_cancer / logreg, seed 0): 1 of 2 rules fail"


def test_metric_name_matches_the_figure_names_of_the_audit():
    assert [metric_name(n) for n in ("capture@5", "false_conf_captured@20", "macro_f1", " Share_Brittle ")] == [
        "capture_at_5",
        "false_conf_captured_at_20",
        "macro_f1",
        "share_brittle",
    ]
