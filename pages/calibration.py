"""Calibration: do the probabilities mean what they say — overall and on the fragile predictions?"""

from __future__ import annotations

import streamlit as st

from core.views.calibration import ece_verdict
from ui.audit_line import audit_line
from ui.components import cached_figure, figure, page_header, run_page, table
from ui.data import current_audit
from ui.entry import ensure_entrypoint
from ui.state import CalibrationState

ensure_entrypoint()

page_header(
    "Calibration",
    "A calibrated model that says 90 % is right 90 % of the time. Three versions of the same model are "
    "compared, all fitted on the validation split: the **uncalibrated** probabilities, one **global "
    "temperature** T0, and **brittleness-aware temperature scaling (BATS)**, whose temperature grows with the "
    "prediction's normalised FDS, T(x) = T0 + η·Norm(FDS). The fragile subset is the 20 % most fragile test "
    "predictions, chosen without test labels. Lower NLL, ECE and Brier are better.",
)

_METHODS = {"uncalibrated": "uncalibrated", "temperature": "global temperature", "bats": "BATS"}
_PANELS = {"all": "All test predictions", "fragile": "Fragile top 20 % (by FDS)"}


def _body() -> None:
    result = current_audit()
    audit_line(result)
    report = result.calibration
    m = st.columns(3)  # four columns cut "Global temperature T0" at 1000 px
    m[0].metric("Global temperature T0", f"{report.bats.t0:.3f}", help="> 1 softens over-confident probabilities")
    m[1].metric(
        "BATS η",
        f"{report.bats.eta:g}",
        help="Chosen by validation NLL from the grid "
        f"{', '.join(f'{e:g}' for e in report.bats.eta_grid)}; 0 = plain temperature scaling",
    )
    metrics = report.metrics.set_index(["method", "subset"])
    st.markdown(
        "**Expected calibration error** (15 equal-width bins; lower is better), the three methods side by side:"
    )
    for subset in ("all", "fragile"):
        ece = {method: float(metrics.loc[(method, subset), "ece"]) for method in _METHODS}
        verdict = ece_verdict(ece, labels=_METHODS, bats_eta=report.bats.eta)
        # The verdict on its own line and short labels: three metrics and a sentence in one row
        # were cut at 1000 px ("global temperature · frag…", "vs uncalibra…").
        st.markdown(f"{_PANELS[subset]} — {verdict}")
        for col, method in zip(st.columns(3), _METHODS):
            delta = None if method == "uncalibrated" else f"{ece[method] - ece['uncalibrated']:+.4f}"
            col.metric(
                _METHODS[method],
                f"{ece[method]:.4f}",
                delta=delta,
                delta_color="inverse",
                help=None if delta is None else "Change of ECE against the uncalibrated model",
            )
    chosen = st.multiselect(
        "Methods shown",
        list(_METHODS),
        key=CalibrationState.methods.key,
        format_func=_METHODS.get,
        persist_state="session",
    )
    bins = report.reliability[report.reliability["method"].isin(chosen)]
    bins = bins.assign(panel=bins["panel"].map(_PANELS), method=bins["method"].map(_METHODS))
    if bins.empty:
        st.info("Pick at least one method to draw the reliability diagrams.", icon=":material/info:")
    else:
        figure(
            cached_figure("reliability_figure", bins),
            "Each point is a confidence bin (bigger = more predictions). On the diagonal the stated confidence "
            "matches the observed accuracy; points below it are over-confident. Compare the two panels: "
            "fragile predictions are typically the over-confident ones.",
        )
    shown = report.metrics.assign(
        method=report.metrics["method"].map(_METHODS), subset=report.metrics["subset"].map(_PANELS)
    )
    table(
        shown,
        name="calibration metrics",
        key="calib_metrics",
        column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("nll", "ece", "brier")},
        caption="NLL: negative log-likelihood; ECE: expected calibration error (15 bins); Brier: mean squared "
        "error of the probability vector. Lower is better for all three.",
    )
    filled = report.reliability[report.reliability["count"] > 0]
    table(
        filled,
        name="reliability bins",
        key="calib_bins",
        height=240,
        download=report.reliability,
        caption=f"The diagram's data: one row per panel, method and non-empty confidence bin "
        f"({len(report.reliability) - len(filled)} empty bins are left out here; the CSV has every bin, "
        "empty ones with NaN).",
    )


run_page(_body, "Calibration")
