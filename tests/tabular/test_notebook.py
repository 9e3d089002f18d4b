"""Notebook use of an audit: ``AuditResult._repr_html_``, ``queue``, ``plot_certificate`` and
``examples/own_model.ipynb`` executed with nbclient."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import numpy as np
import pytest
from own_models import penguin_pipeline, penguin_tables

from core import audit_model
from core.metrics.ranking import review_budget

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "own_model.ipynb"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def result():
    from sklearn.linear_model import LogisticRegression

    train, test = penguin_tables()
    # A label and a column name with markup in them: the HTML must escape both.
    train, test = (t.replace({"species": {"Gentoo": "<Gentoo & co>"}}) for t in (train, test))
    return audit_model(
        penguin_pipeline(train, LogisticRegression(C=0.05, max_iter=1000)), train, test, target="species"
    )


def test_queue_is_the_top_of_the_ranking_by_a_naive_sort(result):
    for budget, population in ((0.2, "high_confidence"), (1.0, "all"), (0.05, "all")):
        queue = result.queue(budget, population=population)
        hc = result.labels.high_confidence if population == "high_confidence" else np.ones(len(result.y_test), bool)
        ids = result.certificates.table.index.to_numpy()[hc]
        u = result.scores["fds"].to_numpy()[hc]
        # naive twin: sort (-u, position) and take k = max(1, round(q n))
        order = sorted(range(len(u)), key=lambda i: (-u[i], i))[: review_budget(budget, len(u))]
        assert queue["sample_id"].tolist() == [ids[i] for i in order]
        assert queue["rank"].tolist() == list(range(1, len(order) + 1))
        assert (np.diff(queue["score_value"]) <= 0).all(), "riskiest first (larger = riskier)"
    assert list(queue.columns) == [
        "rank",
        "sample_id",
        "true_class",
        "predicted",
        "confidence",
        "fds",
        "flip_budget",
        "flipped",
        "rcma",
        "near_tie",
        "brittle",
        "score_value",
    ]
    assert set(queue["predicted"]) <= {"Adelie", "Chinstrap", "<Gentoo & co>"}, "class labels, not codes"
    np.testing.assert_array_equal(queue["flipped"], queue["flip_budget"] <= result.certificates.depth)
    other = result.queue(0.1, score="max_softmax")
    assert len(other) == review_budget(0.1, int(result.labels.high_confidence.sum()))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"budget": 0}, r"`budget` must be a fraction in \(0, 1\]; got 0\."),
        ({"budget": 1.5}, r"got 1\.5"),
        ({"budget": True}, r"got True"),
        ({"budget": "0.2"}, r"got '0\.2'"),
        ({"score": "nope"}, r"`score` must be one of \[.*'fds'.*\]; got 'nope'"),
        ({"population": "some"}, r"`population` must be one of .*; got 'some'"),
    ],
    ids=["zero", "above-one", "bool", "text", "unknown-score", "unknown-population"],
)
def test_queue_refuses_bad_arguments_echoing_them(result, kwargs, match):
    with pytest.raises(ValueError, match=match):
        result.queue(**kwargs)


def test_plot_certificate_names_the_class_and_refuses_unknown_ids(result):
    sample_id = result.certificates.table.index[3]
    position = 3
    chart = result.plot_certificate(sample_id)
    cert = result.certificates.certificate(position)
    label = str(result.classes[cert.pred])
    margin, probability = chart.spec["vconcat"]
    assert str(sample_id) in chart.spec["title"]["text"] and label in chart.spec["title"]["text"]
    assert probability["layer"][0]["encoding"]["y"]["title"] == f"P({label})"
    rows = margin["data"]["values"]
    assert probability["data"]["values"] == rows
    np.testing.assert_array_equal([r["margin"] for r in rows], cert.path_margins)
    np.testing.assert_allclose([r["proba"] for r in rows], cert.proba[:, cert.pred], rtol=0, atol=0)
    assert [r["k"] for r in rows] == list(range(len(cert.path_margins)))
    bundle = chart._repr_mimebundle_()
    assert bundle["application/vnd.vegalite.v5+json"] == chart.spec
    assert bundle["image/svg+xml"].lstrip().startswith("<svg") and f"P({label})" in bundle["image/svg+xml"]
    for bad in (-1, "3", 10**9, None, [sample_id]):
        with pytest.raises(ValueError, match=rf"`sample_id` {re.escape(repr(bad))} is not a test row"):
            result.plot_certificate(bad)


def test_plot_certificate_shows_without_javascript(result):
    # Issue 40: an exported notebook (nbconvert to HTML) showed nothing where the figure was:
    # plotly's output needs plotly.js. The chart carries a static SVG beside its Vega-Lite spec,
    # and no text/html (which an export would prefer, script and all).
    import json

    table = result.certificates.table
    for position in range(len(table)):
        cert = result.certificates.certificate(position)
        if str(result.classes[cert.pred]) == "<Gentoo & co>" and cert.flip_budget <= result.certificates.depth:
            break
    else:
        pytest.fail("no flipped Gentoo prediction in the fixture")
    bundle = result.plot_certificate(table.index[position])._repr_mimebundle_()
    json.dumps(bundle)  # what the kernel sends
    assert set(bundle) == {"application/vnd.vegalite.v5+json", "image/svg+xml", "text/plain"}
    svg = bundle["image/svg+xml"]
    assert svg.lstrip().startswith("<svg") and "<script" not in svg.lower()
    assert "&lt;Gentoo &amp; co&gt;" in svg and "<Gentoo & co>" not in svg
    assert f"flip at k* = {int(cert.flip_budget)}" in svg


def test_repr_html_is_compact_escaped_and_self_contained(result):
    text = result._repr_html_()
    assert "<script" not in text.lower() and "<link" not in text.lower() and "http" not in text
    assert "&lt;Gentoo &amp; co&gt;" in text and "<Gentoo & co>" not in text
    assert html.escape(result.model_name) in text and result.fingerprint[:16] in text
    assert f"depth K = {result.certificates.depth}" in text
    for name in ("accuracy", "FDS AUROC", "mean RCMA", "share brittle"):
        assert name in text
    assert text.count("<tr>") == 1 + 1 + 1 + 5, "one metrics row and five queued cases (plus headers)"
    # The queued cases' k* cells: the number, or "no flip ≤ K" (never SPEC's stored K + 1).
    depth = result.certificates.depth
    queue = result.queue(0.2).head(5)
    rows = re.findall(r"<tr>(.*?)</tr>", text)[-5:]
    shown = [re.findall(r"<td[^>]*>(.*?)</td>", row)[6] for row in rows]
    assert shown == [str(k) if k <= depth else f"no flip ≤ {depth}" for k in queue["flip_budget"]]
    assert len(text) < 8000


@pytest.mark.slow
def test_the_example_notebook_runs(monkeypatch, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code"), (
        "the committed notebook has its outputs cleared"
    )
    source = "\n".join(c.source for c in nb.cells)
    assert "from core import audit_model" in source
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    bundles = [o.get("data", {}) for o in outputs if o.output_type in ("execute_result", "display_data")]
    assert any("Fragility audit" in b.get("text/html", "") for b in bundles), "the result's HTML repr"
    chart = next(b for b in bundles if "application/vnd.vegalite.v5+json" in b)  # the certificate chart
    assert chart["image/svg+xml"].lstrip().startswith("<svg"), "a static drawing for exported notebooks"
    queue = next(b for b in bundles if "rank" in b.get("text/plain", "") and "sample_id" in b.get("text/plain", ""))
    assert any(name in queue["text/plain"] for name in ("Adelie", "Chinstrap", "Gentoo"))
