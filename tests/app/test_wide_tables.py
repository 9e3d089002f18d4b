"""Wide tables (issue 12 / issue 11 item 4): 500 evidence groups stay readable and interactive.

The explorer on an uploaded 500-column table (AppTest): the one-step-drops chart shows the top
N groups and folds the rest into one bar, the what-if picks groups in a searchable multiselect
instead of one pill per group, and raw values are rounded. The figures alone are tested in
``tests/viz/test_chart_specs.py``, the raw values and the interactive sample size in
``tests/views/test_sample_tables.py`` and ``tests/views/test_interactive_sample.py``.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
from app_checks import assert_ok, open_overview_tab, vega_chart

from core.views.uploads import interactive_sample_rows

N_COLUMNS = 500


def _wide(n_rows: int = 300, n_columns: int = N_COLUMNS, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_columns)) * 1.234567890123
    y = X[:, :4].sum(axis=1) + rng.normal(scale=0.5, size=n_rows) > 0
    frame = pd.DataFrame(X, columns=[f"feature_{j:03d}" for j in range(n_columns)])
    frame["target"] = np.where(y, "yes", "no")
    return frame


# ---------------------------------------------------------------------------------------------
# The explorer on an uploaded 500-column table (AppTest)


def _bars(at) -> list[str]:
    _, rows = vega_chart(at, "One-step drops")
    return [row["group"] for row in rows]


def test_explorer_on_a_500_column_upload(app):
    buffer = io.BytesIO()
    _wide(n_rows=400).to_csv(buffer, index=False)
    app.sidebar.selectbox(key="model").set_value("logreg").run()
    open_overview_tab(app, "Data")  # the table upload is on the Data tab
    app.get("file_uploader")[0].set_value(("wide.csv", buffer.getvalue(), "text/csv")).run()
    app.selectbox(key="upload_target").set_value("target").run()
    app.button[[b.label for b in app.button].index("Add to the datasets")].click().run()
    assert_ok(app)
    # 400 rows × 500 columns exceed the rows × groups budget: audited on a stated sample of 200 rows.
    rows = interactive_sample_rows(400, N_COLUMNS)
    assert rows == 200
    assert any(f"stratified sample of {rows:,} rows" in w.value and "500 columns" in w.value for w in app.warning)
    assert any(f"capped at **{rows:,} rows**" in c.value for c in app.caption)
    app.switch_page("pages/explorer.py").run()
    assert_ok(app)
    assert any(f"stratified sample of {rows:,} of 400 rows" in c.value for c in app.caption)
    # A searchable picker, not 500 pills; the removal path is offered first.
    picker = app.multiselect(key="whatif_groups")
    assert len(picker.options) == N_COLUMNS and not app.get("button_group")
    # The drops chart: top N (default) bars plus one folded bar.
    top_n = app.number_input(key="drops_top_n").value
    bars = _bars(app)
    assert len(bars) == top_n + 1 and bars[-1] == f"{N_COLUMNS - top_n} other groups"
    app.number_input(key="drops_top_n").set_value(5).run()
    assert_ok(app)
    assert len(_bars(app)) == 6
    # Raw values rounded to at most 3 decimals.
    raw = next(d.value for d in app.dataframe if list(d.value.columns) == ["group", "column", "value"])
    assert len(raw) == N_COLUMNS
    assert all(re.fullmatch(r"-?\d+(\.\d{1,3})?", v) for v in raw["value"].dropna())
    # Setting path groups to the baseline through the picker changes the what-if line.
    before = next(m.value for m in app.markdown if m.value.startswith("What-if prediction"))
    picker.set_value(picker.options[:3]).run()
    assert_ok(app)
    after = next(m.value for m in app.markdown if m.value.startswith("What-if prediction"))
    assert "with 3 group(s) at the baseline" in after and before != after
