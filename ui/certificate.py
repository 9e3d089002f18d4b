"""Page building blocks that show one sample's certificate (explorer and triage)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from core.tabular.own_model import feature_origins
from core.views.tabular import path_evidence_table, removal_steps_table
from core.viz.tables import flip_budget_text as budget_text
from ui.components import chart, table, vega_spec
from ui.layout import flow_columns
from ui.state import DEFAULT_TOP_GROUPS, PANEL_TABS, CertificateState

if TYPE_CHECKING:
    from core.cfc.certificate_set import SampleCertificate
    from core.tabular.audit import AuditResult


def lambda_text(cert: SampleCertificate) -> str:
    """``λ*`` per operator for people: ``"attenuate_all: 0.4, attenuate_single: none"``."""
    return ", ".join(f"{op}: {'none' if not np.isfinite(v) else f'{v:.3g}'}" for op, v in cert.lambda_star.items())


def flip_budget_text(cert: SampleCertificate, depth: int) -> str:
    """``k*`` of one sample's certificate as shown: the number, or ``"no flip ≤ K"``."""
    return budget_text(int(cert.flip_budget), depth)


def certificate_figures(result: AuditResult, cert: SampleCertificate, *, key: str) -> None:
    """Removal trajectory, collapse with RCMA, degradation with λ*, one-step drops (2 × 2)."""
    _trajectory_row(cert, [str(c) for c in result.dataset.classes], key=key)
    _operator_row(cert, key=key)


def _trajectory_row(cert: SampleCertificate, classes: list[str], *, key: str) -> None:
    # Side by side from about 800 px of page width, stacked below (the step labels need 420 px).
    left, right = flow_columns([3, 2], key=f"{key}_trajectory_row", min_width=[420, 340])
    with left:
        trajectory = vega_spec(
            "trajectory_spec",
            list(cert.path),
            cert.path_margins,
            cert.proba[:, cert.pred],
            flip_budget=int(cert.flip_budget),
            predicted=[classes[p] for p in cert.preds],
            class_label=classes[cert.pred],
        )
        chart(trajectory.margin, None, key=f"{key}_trajectory")
        chart(
            trajectory.probability,
            "Read left to right: each step removes one more evidence group. Blue points keep the original "
            "prediction, vermillion ones have flipped; the dashed line marks the flip point k*.",
            key=f"{key}_trajectory_proba",
        )
    with right:
        chart(
            vega_spec("collapse_spec", cert.collapse, rcma=float(cert.rcma), path=list(cert.path)),
            "Bars: share of the original margin lost after k removals along the path above (1 = all of "
            "it, above 1 = flipped). RCMA is their mean — the dashed line.",
            key=f"{key}_collapse",
        )


def _operator_row(cert: SampleCertificate, *, key: str) -> None:
    left, right = flow_columns(2, key=f"{key}_operator_row", min_width=380)
    with left:
        chart(
            vega_spec(
                "degradation_spec",
                cert.severities,
                dict(cert.operator_margins),
                dict(cert.lambda_star),
                margin0=float(cert.margin),
            ),
            f"Margin as the evidence is blended towards the baseline with severity λ. ★ marks λ*, the "
            f"first severity that flips the prediction ({lambda_text(cert)}). attenuate_single shows the "
            "weakest single group at each λ.",
            key=f"{key}_degradation",
        )
    with right:
        drops_chart(cert, key=key)


@st.fragment
def drops_chart(cert: SampleCertificate, *, key: str) -> None:
    """One-step drops, the top N groups with the others folded (N adjustable when there are more).

    A fragment: changing N redraws this chart only.
    """
    n_groups = len(cert.group_names)
    top_n = None
    if n_groups > DEFAULT_TOP_GROUPS:
        top_n = st.number_input(
            "Groups shown (the rest folded into one bar)",
            min_value=1,
            max_value=n_groups,
            step=5,
            key=CertificateState.drops_top_n.key,
            persist_state="session",
            help=f"The largest one-step drops of the {n_groups} groups; the last bar folds the "
            "others (its length is the largest of their drops).",
        )
        top_n = int(top_n)
    folded = (
        ""
        if top_n is None or top_n >= n_groups
        else (f" The {n_groups - top_n} smaller ones are folded into the last (light grey) bar.")
    )
    chart(
        vega_spec("drops_spec", list(cert.group_names), cert.drops, path=list(cert.path), top_n=top_n),
        "Margin lost when only that group is removed. The path removes them in this order (largest first)." + folded,
        key=f"{key}_drops",
    )


def steps_table(result: AuditResult, cert: SampleCertificate, *, key: str, height: int | str = "auto") -> None:
    """The prediction after each removal along the certificate's path."""
    classes = [str(c) for c in result.dataset.classes]
    table(
        removal_steps_table(cert, classes),
        name=f"sample {cert.index} removal steps",
        key=f"{key}_steps",
        height=height,
        caption="The prediction after each removal along the path; P is the probability of the "
        "originally predicted class, the margin its centred pseudo-logit margin (nats; below 0 = flipped).",
    )


def path_values_table(result: AuditResult, cert: SampleCertificate, *, key: str, height: int | str = "auto") -> None:
    """The path groups' values (raw and as the model sees them) beside the baseline replacing them."""
    origins = feature_origins(result.preprocessor)
    names = getattr(result.preprocessor, "feature_names", None) or [f"x{j}" for j in range(len(origins))]
    evidence = path_evidence_table(
        result.X_test[cert.position],
        result.baseline,
        result.groups,
        cert.path,
        feature_names=names,
        origins=origins,
        raw_row=result.raw_test.loc[cert.index],
    )
    table(
        evidence,
        name=f"sample {cert.index} path evidence",
        key=f"{key}_evidence",
        height=height,
        caption="The groups on the path in removal order: the raw value, its value as the model sees it "
        "(after preprocessing), and the baseline value that replaces it when the group is removed.",
    )


def evidence_tables(result: AuditResult, cert: SampleCertificate, *, key: str) -> None:
    """Both evidence tables, one under the other (each needs the full width)."""
    path_values_table(result, cert, key=key)
    steps_table(result, cert, key=key)


def certificate_panel(result: AuditResult, cert: SampleCertificate, *, key: str) -> None:
    """The whole certificate of one sample in four tabs: a compact panel for the triage page.

    Only the open tab is drawn (``st.session_state[f"{key}_tab"]``, its label): the four tabs
    held four plotly charts and two grids the browser drew on every new case, most of a Triage
    visit. Opening another tab reruns the fragment this panel is in.
    """
    classes = [str(c) for c in result.dataset.classes]
    draws = (
        lambda: _trajectory_row(cert, classes, key=key),
        lambda: _operator_row(cert, key=key),
        lambda: path_values_table(result, cert, key=key, height=250),
        lambda: steps_table(result, cert, key=key, height=250),
    )
    for tab, draw in zip(st.tabs(list(PANEL_TABS), key=f"{key}_tab", on_change="rerun"), draws):
        if tab.open:
            with tab:
                draw()
