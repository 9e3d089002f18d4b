"""The glance of an audit (core.tabular.glance): the file the Overview's first screen is drawn
from equals what the whole audit gives, bit for bit, for the shipped audits and for an audit the
CLI writes; and a file that is missing, of another audit or malformed is never shown."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import viz
from core.cfc.protocol import Protocol
from core.tabular.audit_folder import open_audit_folder, saved_result
from core.tabular.datasets import DEFAULT_DATASET, load_dataset
from core.tabular.glance import GLANCE_FILE, GLANCE_SCHEMA, AuditGlance, read_glance
from core.tabular.shipped import SHIPPED_DIR, SHIPPED_MODELS, shipped_audit, shipped_folder, shipped_glance

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _same(a: AuditGlance, b: AuditGlance) -> None:
    """Every field equal, the arrays in value and dtype (NaN equal to NaN)."""
    assert a.to_json() == b.to_json()
    for name in ("confidence", "fds", "brittle", "flip_budget"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def _page_specs(result) -> list[dict]:
    """The Overview's two charts as the page built them from the whole audit before the glance."""
    cert = result.certificates.table
    return [
        viz.confidence_fds_spec(
            cert["confidence"].to_numpy(),
            cert["fds"].to_numpy(),
            brittle=result.labels.labels,
            threshold=result.labels.tau_p,
        ),
        viz.flip_budget_spec(cert["flip_budget"].to_numpy(), depth=result.certificates.depth),
    ]


def _glance_specs(g: AuditGlance) -> list[dict]:
    return [
        viz.confidence_fds_spec(g.confidence, g.fds, brittle=g.brittle, threshold=g.tau_p),
        viz.flip_budget_spec(g.flip_budget, depth=g.depth),
    ]


def _metrics(result) -> dict:
    """The Overview's metrics as the page computed them from the whole audit before the glance."""
    from core.cfc.evaluation import strongest_confidence_score

    ev = result.evaluation.set_index("score")
    best = strongest_confidence_score(result.evaluation)
    return {
        "test": len(result.certificates.table),
        "tau": result.label_channel.tau_p,
        "high": int(result.labels.high_confidence.sum()),
        "brittle": int(result.labels.labels.sum()),
        "auroc": ev.loc["fds", "auroc"],
        "capture": ev.loc["fds", "capture@20"],
        "best": best,
        "best_auroc": ev.loc[best, "auroc"] if best else None,
        "best_capture": ev.loc[best, "capture@20"] if best else None,
    }


def _glance_metrics(g: AuditGlance) -> dict:
    best = g.confidence_score
    return {
        "test": g.test_rows,
        "tau": g.tau_p,
        "high": g.high_confidence,
        "brittle": g.brittle_count,
        "auroc": g.fds_auroc,
        "capture": g.fds_capture,
        "best": best,
        "best_auroc": g.confidence_auroc if best else None,
        "best_capture": g.confidence_capture if best else None,
    }


@pytest.fixture(scope="module")
def dataset():
    return load_dataset(DEFAULT_DATASET)


@pytest.mark.parametrize("model", SHIPPED_MODELS)
def test_the_shipped_glance_is_the_glance_of_the_shipped_audit(dataset, model):
    """The two sources of the Overview's first screen: the file alone, and the whole audit."""
    result = shipped_audit(dataset, model=model, seed=0)
    glance = shipped_glance(dataset, model=model, seed=0)
    assert result is not None and glance is not None, "regenerate: python scripts/build_default_audit.py"
    _same(glance, AuditGlance.of(result))
    assert _glance_specs(glance) == _page_specs(result)
    assert _glance_metrics(glance) == _metrics(result)
    assert glance.dataset_name == result.dataset.name and glance.model_name == model and glance.seed == 0
    assert glance.notes == tuple(result.notes)


def test_a_written_audit_keeps_its_glance(audit):
    """``python -m core audit --out`` writes view/glance.json; read back it is the computed audit's
    glance, and the glance of the audit the folder rebuilds."""
    result, folder = audit
    glance = read_glance(folder / "view", result.fingerprint)
    assert glance is not None
    _same(glance, AuditGlance.of(result))
    # Rebuilt without its dataset, the folder's table is its train and test rows (the validation
    # rows are not saved); the glance keeps the size of the table that was audited.
    rebuilt = AuditGlance.of(saved_result(open_audit_folder(folder, load_model=False)))
    assert rebuilt.audited_rows < glance.audited_rows
    _same(glance, dataclasses.replace(rebuilt, audited_rows=glance.audited_rows))
    assert _glance_specs(glance) == _page_specs(result)
    assert _glance_metrics(glance) == _metrics(result)
    assert glance.audited_rows == len(result.dataset.frame)
    assert glance.protocol_fingerprint == result.protocol.fingerprint


def test_the_glance_file_is_byte_deterministic(audit, tmp_path):
    result, folder = audit
    again = result.save(tmp_path / "again")
    assert (again / "view" / GLANCE_FILE).read_bytes() == (folder / "view" / GLANCE_FILE).read_bytes()


def test_a_missing_or_foreign_glance_is_not_read(audit, tmp_path):
    result, folder = audit
    view = shutil.copytree(folder / "view", tmp_path / "view")
    assert read_glance(view, "0" * 64) is None  # another audit's file
    (view / GLANCE_FILE).unlink()
    assert read_glance(view, result.fingerprint) is None  # a folder written before the file


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: "not json", "is not valid JSON"),
        (
            lambda d: {**d, "schema": "audit-glance/0"},
            "expected an object of schema 'audit-glance/1'; got 'audit-glance/0'",
        ),
        (lambda d: [d], "expected an object of schema"),
        (lambda d: {k: v for k, v in d.items() if k != "depth"}, "field 'depth' is missing"),
        (lambda d: {**d, "seed": 1.5}, "'seed' must be an integer; got 1.5"),
        (lambda d: {**d, "seed": True}, "'seed' must be an integer; got True"),
        (lambda d: {**d, "fds_auroc": "0.7"}, "'fds_auroc' must be a number or null; got '0.7'"),
        (lambda d: {**d, "model_name": 3}, "'model_name' must be text; got 3"),
        (lambda d: {**d, "fds": d["fds"][:-1]}, "the arrays must have one length each"),
        (lambda d: {**d, "fds": ["x"] * len(d["fds"])}, "'fds' must be a list of numbers or null"),
        (lambda d: {**d, "brittle": [1] * len(d["brittle"])}, "'brittle' must be a list of true / false"),
        (lambda d: {**d, "flip_budget": [1.0] * len(d["flip_budget"])}, "'flip_budget' must be a list of integers"),
        (lambda d: {**d, "confidence": 0.5}, "'confidence' must be a list; got float"),
        (lambda d: {**d, "notes": "one"}, "'notes' must be a list of text"),
    ],
)
def test_a_malformed_glance_is_named(audit, tmp_path, change, message):
    result, folder = audit
    view = shutil.copytree(folder / "view", tmp_path / "view")
    data = json.loads((view / GLANCE_FILE).read_text())
    changed = change(data)
    (view / GLANCE_FILE).write_text(changed if isinstance(changed, str) else json.dumps(changed))
    with pytest.raises(ValueError, match=re.escape(str(view / GLANCE_FILE))) as info:
        read_glance(view, result.fingerprint)
    assert message in str(info.value)


def test_the_shipped_glance_follows_the_shipped_audit(dataset, tmp_path):
    """None wherever the shipped audit is not used (another source, no folder), and None for a
    folder without a glance of its fingerprint."""
    root = tmp_path / "shipped"
    folder = shutil.copytree(
        shipped_folder(DEFAULT_DATASET, "hist_gb", 0, root=SHIPPED_DIR),
        shipped_folder(DEFAULT_DATASET, "hist_gb", 0, root=root),
    )
    assert shipped_glance(dataset, model="hist_gb", seed=0, root=root) is not None
    assert shipped_glance(dataset, model="hist_gb", seed=1, root=root) is None  # nothing shipped
    other = Protocol(depth=3)
    assert shipped_audit(dataset, model="hist_gb", seed=0, protocol=other, root=root) is None
    assert shipped_glance(dataset, model="hist_gb", seed=0, protocol=other, root=root) is None
    (folder / "view" / GLANCE_FILE).write_text((folder / "view" / GLANCE_FILE).read_text().replace("a", "b", 1))
    assert shipped_glance(dataset, model="hist_gb", seed=0, root=root) is None  # damaged or foreign
    (folder / "view" / GLANCE_FILE).unlink()
    assert shipped_glance(dataset, model="hist_gb", seed=0, root=root) is None
    assert shipped_audit(dataset, model="hist_gb", seed=0, root=root) is not None  # the audit still opens


_floats = st.floats(allow_nan=True, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_floats, _floats, st.booleans(), st.integers(1, 6)), max_size=40),
    numbers=st.lists(_floats, min_size=5, max_size=5),
    best=st.one_of(st.none(), st.sampled_from(["max_softmax", "margin"])),
    notes=st.lists(st.text(max_size=20), max_size=3),
)
def test_any_glance_round_trips_bit_for_bit(rows, numbers, best, notes):
    glance = AuditGlance(
        fingerprint="f" * 64,
        protocol_fingerprint="p" * 64,
        dataset_name="d",
        model_name="m",
        seed=3,
        audited_rows=100,
        tau_p=numbers[0],
        high_confidence=len(rows),
        depth=5,
        confidence=np.array([r[0] for r in rows], dtype=float),
        fds=np.array([r[1] for r in rows], dtype=float),
        brittle=np.array([r[2] for r in rows], dtype=bool),
        flip_budget=np.array([r[3] for r in rows], dtype=np.int64),
        fds_auroc=numbers[1],
        fds_capture=numbers[2],
        confidence_score=best,
        confidence_auroc=numbers[3],
        confidence_capture=numbers[4],
        notes=tuple(notes),
    )
    text = glance.to_json()
    back = AuditGlance.from_dict(json.loads(text))
    _same(back, glance)
    assert back.to_json() == text
    for name in ("confidence", "fds"):  # bit for bit, NaN where NaN
        a, b = getattr(back, name), getattr(glance, name)
        assert a.tobytes() == b.tobytes() or all(
            (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a.tolist(), b.tolist())
        )
    assert json.loads(text)["schema"] == GLANCE_SCHEMA
