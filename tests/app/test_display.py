"""Display defects of issue 11 (item 4) on the pages (AppTest): the three-way ECE headline, the
RCMA note, the recapture score column, the image pages' sidebar, one database error, uploads.

The figures' colours, axes and titles are tested in ``tests/viz/test_figure_style.py``, the table
text in ``tests/viz/test_tables.py``, the verdict in ``tests/viz/test_verdicts.py`` and the upload
sniffing in ``tests/test_validation.py``.
"""

from __future__ import annotations

from app_checks import open_overview_tab


# ---------------------------------------------------------------------------- pages (AppTest)
def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_calibration_headline_shows_all_three_methods_and_names_the_lowest(app):
    app.switch_page("pages/calibration.py").run()
    assert not app.exception and not app.error
    labels = [m.label for m in app.metric]
    for method in ("uncalibrated", "global temperature", "BATS"):
        assert labels.count(method) == 2  # once per subset
    # Independent reference: the metrics table on the same page.
    metrics = next(df.value for df in app.dataframe if "ece" in df.value.columns)
    names = {"uncalibrated": "uncalibrated", "global temperature": "global temperature", "BATS": "BATS"}
    for subset in ("All test predictions", "Fragile top 20 % (by FDS)"):
        part = metrics[metrics["subset"] == subset].set_index("method")["ece"]
        best = part.idxmin()
        tied = [m for m in part.index if part[m] - part.min() <= 5e-5]
        sentence = next(line for line in _markdown(app).splitlines() if line.startswith(f"{subset} — "))
        assert f"**{names[best]}**" in sentence
        assert ("tie" in sentence) == (len(tied) > 1)


def test_comparison_table_explains_a_huge_mean_rcma_and_k_star_reads_no_flip(app):
    app.switch_page("pages/comparison.py").run()
    assert not app.exception and not app.error
    captions = "\n".join(c.value for c in app.caption)
    assert "near-tie" in captions and "median RCMA is robust" in captions
    table = next(df.value for df in app.dataframe if "mean_rcma" in df.value.columns)
    assert "n_near_tie" in table.columns and (table["mean_rcma"] < 100).all(), "near-ties no longer swamp the mean"
    by_model = next(df.value for df in app.dataframe if "path" in df.value.columns)
    ks = by_model["flip_budget"].tolist()
    assert all(isinstance(k, str) and (k.isdigit() or k.startswith("> ")) for k in ks), ks


def test_recapture_queue_shows_the_score_not_a_negated_risk(app):
    app.switch_page("pages/recapture.py").run()
    assert not app.exception and not app.error
    queue = next(df.value for df in app.dataframe if "rank" in df.value.columns and "U" in df.value.columns)
    assert "risk" not in queue.columns
    assert (queue["U"] >= 0).all()
    assert queue["U"].is_monotonic_increasing  # the queue re-tests the lowest U first (risk = −U)
    assert any("lowest first" in c.value for c in app.caption)


def test_image_pages_hide_the_tabular_selection_and_keep_it(app):
    app.sidebar.selectbox(key="model").set_value("logreg").run()
    for page in ("pages/paired_bounds.py", "pages/recapture.py"):
        app.switch_page(page).run()
        assert not app.exception
        assert not [w for w in app.sidebar.selectbox if w.key in ("dataset", "model")]
        assert not [w for w in app.sidebar.number_input if w.key == "seed"]
    app.switch_page("pages/calibration.py").run()
    assert app.sidebar.selectbox(key="model").value == "logreg"  # survived the image pages


def test_long_model_names_fit_the_sidebar_select():
    from core.tabular.models import MODEL_NAMES
    from ui.sidebar import _SIDEBAR_CHARS, short_model_label

    labels = [short_model_label(m) for m in MODEL_NAMES]
    assert all(len(label) <= _SIDEBAR_CHARS for label in labels), labels
    assert short_model_label("fr_resmlp") == "FR ResMLP (torch)"
    assert len(set(labels)) == len(labels)


def test_unwritable_database_error_is_shown_once_on_triage(new_app, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(blocker / "sub" / "r.sqlite3"))
    app = new_app()
    app.switch_page("pages/triage.py").run()
    assert not app.exception
    shown = [e.value for e in app.error if "review database" in e.value.lower()]
    shown += [e.value for e in app.sidebar.error if "review database" in e.value.lower()]
    assert len(shown) == 1, shown


def test_png_renamed_csv_is_refused_at_upload_without_offering_columns(app):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)
    open_overview_tab(app, "Data")  # the table upload is on the Data tab
    app.get("file_uploader")[0].set_value(("photo.csv", png, "text/csv")).run()
    assert not app.exception
    assert any("'photo.csv' is a PNG image" in e.value for e in app.error)
    assert not [w for w in app.selectbox if w.key == "upload_target"]  # no "\ufffdPNG" target offered
