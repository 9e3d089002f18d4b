"""Page building blocks that show one sample's certificate (explorer and triage)."""
from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from core import viz
from core.dashboard import path_evidence_table, removal_steps_table
from core.tabular.own_model import feature_origins
from ui.components import figure, table


def lambda_text(cert: Any) -> str:
    """``λ*`` per operator for people: ``"attenuate_all: 0.4, attenuate_single: none"``."""
    return ", ".join(f"{op}: {'none' if not np.isfinite(v) else f'{v:.3g}'}" for op, v in cert.lambda_star.items())


def flip_budget_text(cert: Any, depth: int) -> str:
    """``k*`` as shown: the number, or ``"> K"`` when the path never flips the prediction."""
    return f"{cert.flip_budget}" if cert.flip_budget <= depth else f"> {depth}"


def certificate_figures(result: Any, cert: Any, *, key: str) -> None:
    """Removal trajectory, collapse with RCMA, degradation with λ*, one-step drops (2 × 2)."""
    _trajectory_row(cert, [str(c) for c in result.dataset.classes], key=key)
    _operator_row(cert, key=key)


def _trajectory_row(cert: Any, classes: list[str], *, key: str) -> None:
    left, right = st.columns([3, 2])
    with left:
        figure(viz.trajectory_figure(cert.path, cert.path_margins, cert.proba[:, cert.pred],
                                     flip_budget=cert.flip_budget, predicted=[classes[p] for p in cert.preds],
                                     class_label=classes[cert.pred]),
               "Read left to right: each step removes one more evidence group. Blue points keep the original "
               "prediction, vermillion ones have flipped; the dashed line marks the flip point k*.",
               key=f"{key}_trajectory")
    with right:
        figure(viz.collapse_figure(cert.collapse, rcma=cert.rcma, path=cert.path),
               "Bars: share of the original margin lost after k removals along the path above (1 = all of "
               "it, above 1 = flipped). RCMA is their mean — the dashed line.", key=f"{key}_collapse")


def _operator_row(cert: Any, *, key: str) -> None:
    left, right = st.columns(2)
    with left:
        figure(viz.degradation_figure(cert.severities, cert.operator_margins, cert.lambda_star, margin0=cert.margin),
               f"Margin as the evidence is blended towards the baseline with severity λ. ★ marks λ*, the "
               f"first severity that flips the prediction ({lambda_text(cert)}). attenuate_single shows the "
               "weakest single group at each λ.", key=f"{key}_degradation")
    with right:
        figure(viz.drops_figure(cert.group_names, cert.drops, path=cert.path),
               "Margin lost when only that group is removed. The path removes them in this order (largest first).",
               key=f"{key}_drops")


def steps_table(result: Any, cert: Any, *, key: str, height: int | str = "auto") -> None:
    """The prediction after each removal along the certificate's path."""
    classes = [str(c) for c in result.dataset.classes]
    table(removal_steps_table(cert, classes), name=f"sample {cert.index} removal steps", key=f"{key}_steps",
          height=height, caption="The prediction after each removal along the path; P is the probability of the "
          "originally predicted class, the margin its centred pseudo-logit margin (nats; below 0 = flipped).")


def path_values_table(result: Any, cert: Any, *, key: str, height: int | str = "auto") -> None:
    """The path groups' values (raw and as the model sees them) beside the baseline replacing them."""
    origins = feature_origins(result.preprocessor)
    names = getattr(result.preprocessor, "feature_names", None) or [f"x{j}" for j in range(len(origins))]
    evidence = path_evidence_table(result.X_test[cert.position], result.baseline, result.groups, cert.path,
                                   feature_names=names, origins=origins, raw_row=result.raw_test.loc[cert.index])
    table(evidence, name=f"sample {cert.index} path evidence", key=f"{key}_evidence", height=height,
          caption="The groups on the path in removal order: the raw value, its value as the model sees it "
          "(after preprocessing), and the baseline value that replaces it when the group is removed.")


def evidence_tables(result: Any, cert: Any, *, key: str) -> None:
    """Both evidence tables, one under the other (each needs the full width)."""
    path_values_table(result, cert, key=key)
    steps_table(result, cert, key=key)


def certificate_panel(result: Any, cert: Any, *, key: str) -> None:
    """The whole certificate of one sample in four tabs: a compact panel for the triage page."""
    classes = [str(c) for c in result.dataset.classes]
    tabs = st.tabs(["Trajectory and collapse", "λ* per operator and one-step drops", "Path values vs baseline",
                    "Prediction after each removal"])
    with tabs[0]:
        _trajectory_row(cert, classes, key=key)
    with tabs[1]:
        _operator_row(cert, key=key)
    with tabs[2]:
        path_values_table(result, cert, key=key, height=250)
    with tabs[3]:
        steps_table(result, cert, key=key, height=250)
