"""Display defects of issue 11 (item 4): colours, axes, titles, table text, sidebar, uploads.

Each test pins one defect seen in the browser; the figure tests read the plotly JSON the
browser receives, so "two curves share a colour" or "the axis runs to 1.04" is checked on
exactly what is drawn.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import viz
from core.views.tabular import flip_budget_shown
from core.viz._style import (
    FLIPPED,
    OKABE_ITO,
    SERIES_ORDER,
    series_colours,
    series_styles,
    wrap_label,
)
from core.viz.tables import column_label, display_values, flip_budget_text, flip_budget_texts
from core.viz.verdicts import lowest_wins

# Longest title that fits a half-width column at 1000 px (16 px font, about 8.5 px per character).
HALF_COLUMN_TITLE = 45


# ---------------------------------------------------------------------------- colour policy
def test_series_colours_never_use_the_flipped_vermillion_and_are_distinct():
    colours = series_colours(len(SERIES_ORDER))
    assert FLIPPED not in colours
    assert len(set(colours)) == len(colours) == 7
    assert set(colours) <= set(OKABE_ITO.values())


@given(st.integers(0, 28))
def test_series_styles_are_unique_pairs(n):
    styles = series_styles(n)
    assert len(styles) == n and len(set(styles)) == n
    assert all(c != FLIPPED for c, _ in styles)


def test_series_styles_refuse_more_than_they_can_tell_apart():
    with pytest.raises(ValueError, match="between 0 and 28; got 29"):
        series_styles(29)


def _lines(fig) -> list[tuple[str, str, str]]:
    """(name, colour, dash) of every line trace that is not a grey reference."""
    out = []
    for trace in fig.to_plotly_json()["data"]:
        line = trace.get("line", {})
        if line.get("color") not in (None, "#7F7F7F"):
            out.append((trace["name"], line["color"], line.get("dash", "solid")))
    return out


def _triage_like_curves() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Nine scores as on the Triage page of a binary model: the four confidence baselines
    rank alike (identical curves), the five certificate scores differ."""
    q = np.linspace(0.02, 1.0, 50)
    same = np.sqrt(q)
    curves = {
        name: q ** (0.25 + 0.13 * i)
        for i, name in enumerate(("fds", "rcma", "inv_flip_budget", "degradation", "one_step"))
    }
    curves.update({name: same.copy() for name in ("max_softmax", "entropy", "margin", "neg_energy")})
    return q, curves


def test_coverage_lines_never_share_a_style_and_identical_curves_are_one_named_line():
    q, curves = _triage_like_curves()
    fig = viz.coverage_figure(q, curves, ceiling=np.minimum(1, q * 3), random=q, highlight="fds")
    lines = _lines(fig)
    styles = [(c, d) for _, c, d in lines]
    assert len(set(styles)) == len(styles), lines  # before: fds and neg_energy both solid #0072B2
    assert len(lines) == 6  # five certificate scores + one line for the four identical baselines
    merged = [name for name, _, _ in lines if "identical" in name]
    assert len(merged) == 1
    assert all(s in merged[0] for s in ("max_softmax", "entropy", "margin", "neg_energy"))
    widths = {t.name: t.line.width for t in fig.data}
    assert widths["fds"] == 4 and widths["rcma"] == 2


def test_coverage_merges_only_exactly_equal_curves():
    q = np.array([0.5, 1.0])
    fig = viz.coverage_figure(q, {"a": [0.4, 1.0], "b": [0.4 + 1e-9, 1.0]})
    assert [t.name for t in fig.data] == ["a", "b"]


def test_fourth_model_is_not_drawn_in_the_flipped_colour_and_titles_are_wrapped():
    names = [
        "Logistic regression",
        "Random forest",
        "Histogram gradient boosting",
        "Fragility-regularised ResMLP (torch)",
    ]
    trajectories = {n: (["a", "b"], [2.0, 1.0, 0.5], 3) for n in names}  # nothing flips
    fig = viz.trajectories_by_model_figure(trajectories)
    for trace in fig.data:
        assert trace.line.color != FLIPPED, trace.name  # before: the 4th model was vermillion
        assert FLIPPED not in trace.marker.color  # no step flips, so no vermillion point
    titles = [a.text for a in fig.layout.annotations]
    width = max(10, 60 // len(names))
    assert all(len(line) <= width for t in titles for line in t.split("<br>") if " " in line), titles
    assert [t.replace("<br>", " ") for t in titles] == names


def test_flipped_steps_of_a_model_are_vermillion():
    fig = viz.trajectories_by_model_figure({"m": (["a", "b"], [2.0, 0.5, -1.0], 2)})
    assert list(fig.data[0].marker.color) == [OKABE_ITO["blue"], OKABE_ITO["blue"], FLIPPED]


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("Histogram gradient boosting", 21, "Histogram gradient<br>boosting"),
        ("a b c", 1, "a<br>b<br>c"),
        ("Supercalifragilistic x", 5, "Supercalifragilistic<br>x"),
        ("", 5, ""),
    ],
)
def test_wrap_label_hand_cases(text, width, expected):
    assert wrap_label(text, width) == expected


@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=12), min_size=1, max_size=8), st.integers(1, 30))
def test_wrap_label_keeps_every_word_in_order(words, width):
    wrapped = wrap_label(" ".join(words), width)
    assert wrapped.replace("<br>", " ").split() == words
    assert all(len(line) <= width or " " not in line for line in wrapped.split("<br>"))


# ---------------------------------------------------------------------------- axes
def test_tradeoff_axes_stay_inside_the_metric_range():
    # breast_cancer: every model reaches AUROC 1.0 -> the axis ran 0.95..1.05 (ticks 0.96..1.04).
    frame = pd.DataFrame({"model": ["a", "b", "c"], "auroc": [1.0, 1.0, 1.0], "share": [0.0, 0.02, 0.01]})
    fig = viz.tradeoff_figure(
        frame, x="auroc", y="share", x_title="AUROC", y_title="share", x_bounds=(0, 1), y_bounds=(0, 1)
    )
    low, high = fig.layout.xaxis.range
    assert high <= 1.0 and low == pytest.approx(0.95)
    assert fig.layout.yaxis.range[0] >= 0.0
    unbounded = viz.tradeoff_figure(frame, x="auroc", y="share", x_title="AUROC", y_title="share")
    assert unbounded.layout.xaxis.range[1] == pytest.approx(1.05)  # what the bounds prevent


def test_tradeoff_labels_lean_inwards_at_the_ends():
    frame = pd.DataFrame({"model": ["left", "mid", "right"], "auroc": [0.80, 0.81, 0.83], "s": [0.3, 0.2, 0.1]})
    fig = viz.tradeoff_figure(frame, x="auroc", y="s", x_title="x", y_title="y")
    assert list(fig.data[0].textposition) == ["top right", "top center", "top left"]


def _intervals(h=(0.0, 0.0, 0.0), dm=(-0.0004, 0.0083, 0.0046)) -> pd.DataFrame:
    rows = []
    for level in ("I0", "Ik", "I5"):
        rows.append(dict(target="H", level=level, low=h[0], high=h[1], observed=h[2]))
        rows.append(dict(target="L", level=level, low=0.07, high=0.21, observed=0.13))
        rows.append(dict(target="dM_k", level=level, low=dm[0], high=dm[1], observed=dm[2]))
    return pd.DataFrame(rows)


def test_zero_width_h_interval_is_not_drawn_on_minus_one_to_one():
    fig = viz.intervals_figure(_intervals())
    h_range = list(fig.layout.xaxis.range)  # panel 1 = H
    assert h_range[0] >= 0.0 and h_range[1] <= 1.0  # before: autorange -1..1 for [0, 0]
    assert h_range[1] - h_range[0] >= 0.01 - 1e-12
    assert h_range[0] <= 0.0 <= h_range[1]


def test_interval_axes_cover_the_bars_inside_each_target_range():
    fig = viz.intervals_figure(_intervals(h=(0.98, 1.0, 0.99), dm=(-0.3, 0.2, 0.0)))
    h_low, h_high = fig.layout.xaxis.range
    assert h_low <= 0.98 and h_high == 1.0  # clipped at the share's maximum
    d_low, d_high = fig.layout.xaxis3.range
    assert -1.0 <= d_low <= -0.3 and 0.2 <= d_high <= 1.0


# ---------------------------------------------------------------------------- titles
def test_half_column_titles_fit_and_keep_their_key_in_the_subtitle():
    regret = viz.regret_figure(["q = 60%", "q = 100%"], [0.2, 0.0], chosen="q = 100%")
    matrix = viz.policy_matrix_figure(np.zeros((2, 2)), ["q = 60%", "q = 100%"])
    intervals = viz.intervals_figure(_intervals())
    for fig in (regret, matrix, intervals):
        assert len(fig.layout.title.text) <= HALF_COLUMN_TITLE, fig.layout.title.text
    assert "orange" in regret.layout.title.subtitle.text
    assert "✓" in matrix.layout.title.subtitle.text
    # The three panel titles of the interval chart are at most 22 characters a line.
    panel_lines = [line for a in intervals.layout.annotations for line in a.text.split("<br>")]
    assert max(map(len, panel_lines)) <= 22, panel_lines


def test_chance_line_has_no_label_on_the_bars():
    table = pd.DataFrame({"score": ["fds", "rcma"], "auroc": [0.8, 0.7], "capture@10%": [0.3, 0.2]})
    fig = viz.score_metrics_figure(table, capture_column="capture@10%", highlight="fds")
    assert "chance" not in [a.text for a in fig.layout.annotations]
    assert "0.5 = chance" in fig.layout.xaxis.title.text


# ---------------------------------------------------------------------------- table text
@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("flip_budget", "k*"),
        ("mean_rcma", "mean RCMA"),
        ("share_k_le_2", "share k* ≤ 2"),
        ("lambda_star_attenuate_single", "λ* attenuate_single"),
        ("true_label", "true label"),
        ("average_precision", "AP"),
        ("macro_f1", "macro-F1"),
        ("dM_k", "dM_k"),
        ("J_low", "J_low"),
        ("D_plus", "D⁺"),
        ("model", "model"),
        ("capture@20", "capture @ 20"),
        ("n_failed", "n failed"),
    ],
)
def test_column_labels(name, label):
    assert column_label(name) == label


def test_display_values_writes_infinity_and_whole_seconds():
    frame = pd.DataFrame(
        {
            "lambda_star_attenuate_all": [0.3, np.inf, np.nan],
            "rcma": [1.0, 2.5, 3.0],
            "created_at": ["2026-12-01T20:03:11.123456+00:00", "2026-12-01T22:03:11.5+02:00", None],
            "when": pd.to_datetime(["2026-01-02 03:04:05.678901", None, "2026-01-02 03:04:06"], format="ISO8601"),
        }
    )
    shown = display_values(frame)
    assert shown["lambda_star_attenuate_all"].tolist() == ["0.3", "∞", None]
    assert shown["rcma"].tolist() == [1.0, 2.5, 3.0] and shown["rcma"].dtype.kind == "f"  # untouched
    assert shown["created_at"].tolist() == ["2026-12-01 20:03:11", "2026-12-01 20:03:11", None]
    assert shown["when"].tolist() == ["2026-01-02 03:04:05", None, "2026-01-02 03:04:06"]
    assert frame["lambda_star_attenuate_all"].iloc[1] == np.inf  # the input is not modified


@given(
    st.lists(
        st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=32), st.sampled_from([math.inf, -math.inf])),
        min_size=1,
        max_size=20,
    )
)
def test_display_values_round_trips_every_finite_value_to_four_digits(values):
    shown = display_values(pd.DataFrame({"v": values}))["v"].tolist()
    for raw, text in zip(values, shown):
        if math.isinf(raw):
            assert text == ("∞" if raw > 0 else "−∞")
        elif any(math.isinf(v) for v in values):
            assert float(text) == pytest.approx(raw, rel=5e-4, abs=1e-300)
        else:
            assert text == raw


def test_flip_budget_text_says_no_flip_within_depth():
    assert flip_budget_text(6, 5) == "no flip ≤ 5"  # before: "6" under a "> 5" header, then "> 5"
    assert flip_budget_text(5, 5) == "5"
    with pytest.raises(ValueError, match=r"between 1 and depth \+ 1 \(6\); got 7"):
        flip_budget_text(7, 5)


def test_flip_budget_texts_read_the_flipped_column():
    got = flip_budget_texts(np.array([1, 5, 6, 6]), np.array([True, True, False, False]), depth=5)
    assert got.tolist() == ["1", "5", "no flip ≤ 5", "no flip ≤ 5"]
    with pytest.raises(ValueError, match=r"row 1: k\* = 6, flipped = True \(depth 5\)"):
        flip_budget_texts([2, 6], [True, True], depth=5)
    with pytest.raises(ValueError, match="1-D of one length"):
        flip_budget_texts([2, 6], [True], depth=5)


def test_flip_budget_shown_never_writes_k_plus_one():
    frame = pd.DataFrame({"sample_id": [1, 2, 3], "flip_budget": [3, 4, 4], "flipped": [True, False, False]})
    shown = flip_budget_shown(frame, depth=3)
    assert shown["flip_budget"].tolist() == ["3", "no flip ≤ 3", "no flip ≤ 3"]
    assert "flipped" not in shown and "flipped" in frame  # a copy
    # a table written before the flipped column existed: derived from k* <= K
    old = flip_budget_shown(frame.drop(columns="flipped"), depth=3)
    assert old["flip_budget"].tolist() == ["3", "no flip ≤ 3", "no flip ≤ 3"]
    assert flip_budget_shown(frame[["sample_id"]], depth=3).equals(frame[["sample_id"]])


# ---------------------------------------------------------------------------- verdict
def test_calibration_verdict_names_the_lowest_even_when_it_is_not_bats():
    # The numbers: global temperature 0.0486 beat BATS 0.0511 overall.
    line = lowest_wins(
        {"uncalibrated": 0.0717, "temperature": 0.0486, "bats": 0.0511},
        metric="ECE",
        labels={"uncalibrated": "uncalibrated", "temperature": "global temperature", "bats": "BATS"},
    )
    assert line == "**global temperature** has the lowest ECE (0.0486); then BATS 0.0511, uncalibrated 0.0717."


def test_calibration_verdict_ties_and_errors():
    assert lowest_wins({"a": 0.04276, "b": 0.042764, "c": 0.05}, metric="ECE").startswith("**a** and **b** tie")
    assert "tie" not in lowest_wins({"a": 0.0427, "b": 0.0428}, metric="ECE")
    with pytest.raises(ValueError, match="finite"):
        lowest_wins({"a": float("nan")}, metric="ECE")
    with pytest.raises(ValueError, match="empty"):
        lowest_wins({}, metric="ECE")


# ---------------------------------------------------------------------------- upload sniffing
@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "a JPEG image"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"PK\x03\x04\x14\x00", "a ZIP archive"),
        (b"PAR1\x15\x04", "a Parquet file"),
        (b"\x80\x04\x95\x10", "a Python pickle"),
    ],
)
def test_binary_files_renamed_csv_are_refused_before_any_column_is_offered(head, kind):
    from core.views.uploads import table_columns

    with pytest.raises(ValueError, match=rf"'photo\.csv' is {kind}.*not a text table"):
        table_columns(head + bytes(100), "photo.csv")


def test_text_tables_pass_the_sniffing():
    from core.validation import check_text_table
    from core.views.uploads import table_columns

    assert table_columns("\ufeffx;y\n1;a\n".encode("utf-8"), "ok.csv") == ["x", "y"]
    big = ("é," * 40000).encode("utf-8")  # a two-byte character straddles the 64 KiB cut
    check_text_table(big, "big.csv")
    with pytest.raises(ValueError, match=r"'latin\.csv' is not UTF-8 text .* at byte 9\)"):
        check_text_table("ville,y\nZürich,a\n".encode("latin-1"), "latin.csv")
    with pytest.raises(ValueError, match="holds binary content"):
        check_text_table(b"x,y\n1,\x00\n", "nul.csv")


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
    app.get("file_uploader")[0].set_value(("photo.csv", png, "text/csv")).run()
    assert not app.exception
    assert any("'photo.csv' is a PNG image" in e.value for e in app.error)
    assert not [w for w in app.selectbox if w.key == "upload_target"]  # no "\ufffdPNG" target offered
