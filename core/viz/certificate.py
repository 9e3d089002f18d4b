"""The validated points of one certificate's charts (SPEC A.3) and the charts of a set of certificates.

Inputs are plain arrays so that the builders can be tested without the certificate engine;
the dashboard passes the fields of a certificate. Margins are centred pseudo-logit margins of
the **original** predicted class (``m_y(x')``, in nats); a negative margin means the prediction
has flipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.viz._style import COUNT_AXIS, GREY, LIGHT_GREY, OKABE_ITO, finish_spec

__all__ = ["confidence_fds_spec", "flip_budget_spec"]

_KEPT = OKABE_ITO["blue"]
_FLIPPED = OKABE_ITO["vermillion"]


def _vector(values: ArrayLike, name: str, *, length: int | None = None) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {arr.shape}.")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"`{name}` must have length {length}; got {arr.shape[0]}.")
    return arr


def _wrap(text: str, width: int, *, lines: int = 2) -> str:
    """``text`` broken at spaces / underscores into at most ``lines`` lines of ``width`` characters
    (``<br>``-joined), the rest cut with an ellipsis: long group names must not overlap their
    neighbours' tick labels or run out of the figure (a label past the edge is cut)."""
    words = [w for w in text.replace("_", "_ ").split(" ") if w]
    out: list[str] = []
    current = ""
    for word in words:
        while len(word) > width:  # one overlong word: hard-cut it
            if current:
                out.append(current)
                current = ""
            out.append(word[:width])
            word = word[width:]
        joined = f"{current}{'' if current.endswith('_') or not current else ' '}{word}"
        if current and len(joined) > width:
            out.append(current)
            current = word
        else:
            current = joined
    if current:
        out.append(current)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: max(1, width - 1)] + "…"
    return "<br>".join(out)


def _step_labels(path: Sequence[str], *, width: int = 16) -> list[str]:
    # No "−" before the name (the axis title says the groups are removed): in the narrowest
    # plot every character of a slot goes to the name.
    return ["0<br>intact" if width >= 6 else "0"] + [
        f"{k}<br>{_wrap(name, width)}" for k, name in enumerate(path, start=1)
    ]


#: Tick font of the step axis (px) and its mean character width in the house font.
_STEP_FONT, _STEP_CHAR_PX = 11, 5.6
#: The narrowest plot area a step axis must fit: a 420 px column (ui.layout.flow_columns keeps
#: the trajectory at least that wide, then stacks) minus the y-axis margin.
_NARROWEST_PLOT_PX = 340


def _label_width(depth: int) -> int:
    """Characters per tick-label line so that ``depth + 1`` labels fit side by side in the
    narrowest plot, with a character of space between neighbours."""
    return int(np.clip(_NARROWEST_PLOT_PX / (depth + 1) / _STEP_CHAR_PX - 1, 4, 18))


def _flip_budget_iv(flip_budget: int, depth: int) -> int:
    if not (isinstance(flip_budget, (int, np.integer)) and 1 <= flip_budget <= depth + 1):
        raise ValueError(
            f"`flip_budget` must be an integer in 1..{depth + 1} (depth + 1 = no flip); got {flip_budget!r}."
        )
    return int(flip_budget)


@dataclass(frozen=True)
class TrajectoryPoints:
    """The points of a removal trajectory, validated, as
    :func:`core.viz.certificate_spec.trajectory_spec` draws them.

    Attributes
    ----------
    depth : int
        ``K``, the path's length.
    margins, proba : ndarray of shape (K + 1,)
        Margin (nats) and probability of the original class at steps ``0 … K``.
    flip_budget : int
        ``k*`` in ``1 … K + 1``.
    steps : ndarray of shape (K + 1,)
        ``0 … K``.
    flipped : tuple of bool, length K + 1
        Whether the prediction has flipped at each step (``k >= k*``).
    labels : tuple of str, length K + 1
        Step-axis tick labels, lines joined by ``<br>``.
    hover_steps, predicted : tuple of str, length K + 1
        ``"3 −income"`` per step, and the predicted class per step (empty when not given).
    """

    depth: int
    margins: np.ndarray
    proba: np.ndarray
    flip_budget: int
    steps: np.ndarray
    flipped: tuple[bool, ...]
    labels: tuple[str, ...]
    hover_steps: tuple[str, ...]
    predicted: tuple[str, ...]


def flip_note_align(flip_budget: int, depth: int) -> str:
    """Side of the flip line its note runs to: away from the nearer end of the step axis, so
    that a flip on the last step keeps its note inside the plot."""
    return "left" if flip_budget <= depth / 2 else "right"


def trajectory_points(
    path: Sequence[str],
    margins: ArrayLike,
    proba: ArrayLike,
    *,
    flip_budget: int,
    predicted: Sequence[str] | None = None,
) -> TrajectoryPoints:
    """The points :func:`core.viz.certificate_spec.trajectory_spec` draws (its parameters; see there)."""
    depth = len(path)
    m = _vector(margins, "margins", length=depth + 1)
    p = _vector(proba, "proba", length=depth + 1)
    k_star = _flip_budget_iv(flip_budget, depth)
    hover_pred = list(predicted) if predicted is not None else [""] * (depth + 1)
    if len(hover_pred) != depth + 1:
        raise ValueError(f"`predicted` must have length {depth + 1}; got {len(hover_pred)}.")
    steps = np.arange(depth + 1)
    return TrajectoryPoints(
        depth=depth,
        margins=m,
        proba=p,
        flip_budget=k_star,
        steps=steps,
        flipped=tuple(bool(k >= k_star) for k in steps),
        labels=tuple(_step_labels(path, width=_label_width(depth))),
        hover_steps=("0 intact", *(f"{k} −{name}" for k, name in enumerate(path, start=1))),
        predicted=tuple(str(c) for c in hover_pred),
    )


@dataclass(frozen=True)
class DropsFold:
    """The bars of a one-step-drops chart, largest first, the smaller ones folded into one.

    What :func:`core.viz.certificate_spec.drops_spec` draws.

    Attributes
    ----------
    names, colours, values, hover : tuple, length B
        Per bar: the group (or ``"<n> other groups"``), its colour (blue on the path, grey off
        it, light grey folded), its length in nats and its hover text (lines joined by ``<br>``).
    title : str
        The chart's title (says how many groups are shown when some are folded).
    """

    names: tuple[str, ...]
    colours: tuple[str, ...]
    values: tuple[float, ...]
    hover: tuple[str, ...]
    title: str


def fold_drops(
    groups: Sequence[str], drops: ArrayLike, *, path: Sequence[str] = (), top_n: int | None = None
) -> DropsFold:
    """The bars :func:`core.viz.certificate_spec.drops_spec` draws (its parameters; see there)."""
    d = _vector(drops, "drops", length=len(groups))
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, (int, np.integer)) or top_n < 1):
        raise ValueError(f"`top_n` must be a positive int or None; got {top_n!r}.")
    order = np.argsort(-d, kind="stable")
    shown = order if top_n is None else order[:top_n]
    folded = order[shown.shape[0] :]
    names = [str(groups[i]) for i in shown]
    on_path = set(path)
    colours = [_KEPT if n in on_path else GREY for n in names]
    values = d[shown].tolist()
    hover = [f"{n}<br>δ = {v:.3f} nats" for n, v in zip(names, values)]
    title = "One-step drops δ_g"
    if folded.shape[0]:
        rest = d[folded]
        label = f"{folded.shape[0]} other group{'s' if folded.shape[0] > 1 else ''}"
        names.append(label)
        colours.append(LIGHT_GREY)
        values.append(float(rest.max()))
        hover.append(
            f"{label} (folded)<br>largest δ = {rest.max():.3f}, smallest δ = {rest.min():.3f} nats<br>"
            f"{int((rest > 0).sum())} of them support the prediction"
        )
        title = f"One-step drops δ_g: top {shown.shape[0]} of {len(groups)} groups"
    return DropsFold(tuple(names), tuple(colours), tuple(values), tuple(hover), title)


def _confidence_series(
    confidence: ArrayLike, fds: ArrayLike, brittle: ArrayLike | None, *, max_points: int, seed: int
) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """``(name, colour, confidence, fds)`` of every series of the confidence-vs-FDS chart, on a
    display sample of at most ``max_points``."""
    conf = _vector(confidence, "confidence")
    f = _vector(fds, "fds", length=conf.shape[0])
    idx = np.arange(conf.shape[0])
    if idx.shape[0] > max_points:  # display only: thousands of SVG markers make the browser crawl
        idx = np.sort(np.random.default_rng(seed).choice(idx, size=max_points, replace=False))
    if brittle is None:
        return [("prediction", _KEPT, conf[idx], f[idx])]
    b = np.asarray(brittle).astype(bool)
    if b.shape != conf.shape:
        raise ValueError(f"`brittle` must have shape {conf.shape}; got {b.shape}.")
    series = []
    for mask, colour, name in ((~b, _KEPT, "not brittle (held-out label)"), (b, _FLIPPED, "brittle (held-out label)")):
        sel = idx[mask[idx]]
        series.append((name, colour, conf[sel], f[sel]))
    return series


_CONFIDENCE_TITLE = "Confidence is not stability"
_CONFIDENCE_AXES = ("confidence p̂ (max probability)", "FDS (larger = more fragile)")


def confidence_fds_spec(
    confidence: ArrayLike,
    fds: ArrayLike,
    *,
    brittle: ArrayLike | None = None,
    threshold: float = 0.9,
    max_points: int = 3000,
    seed: int = 0,
) -> dict:
    """Confidence against FDS for a set of certificates (a sample of at most ``max_points``).

    Shows that confidence and fragility are different axes: high-confidence predictions spread
    over the whole FDS range. Points are coloured by the held-out brittle label when given; the
    dashed line is the high-confidence threshold. Returns a Vega-Lite 5 spec with its data
    inline (one row per shown point: ``confidence``, ``fds``, ``label``), drawn by the Overview
    and the report.
    """
    series = _confidence_series(confidence, fds, brittle, max_points=max_points, seed=seed)
    values = [
        {"confidence": x, "fds": y, "label": name}
        for name, _, xs, ys in series
        for x, y in zip(xs.tolist(), ys.tolist())
    ]
    points = {
        "mark": {"type": "circle", "size": 36, "opacity": 0.6},
        "encoding": {
            "x": {
                "field": "confidence",
                "type": "quantitative",
                "title": _CONFIDENCE_AXES[0],
                "scale": {"zero": False, "nice": False},
            },
            "y": {"field": "fds", "type": "quantitative", "title": _CONFIDENCE_AXES[1], "scale": {"domain": [0, 1]}},
            "color": {
                "field": "label",
                "type": "nominal",
                "scale": {"domain": [s[0] for s in series], "range": [s[1] for s in series]},
            },
            "tooltip": [
                {"field": "label", "title": "held-out label"},
                {"field": "confidence", "type": "quantitative", "format": ".3f"},
                {"field": "fds", "type": "quantitative", "title": "FDS", "format": ".3f"},
            ],
        },
    }
    line = {
        "mark": {"type": "rule", "color": GREY, "strokeDash": [6, 4]},
        "encoding": {"x": {"datum": float(threshold), "type": "quantitative"}},
    }
    return finish_spec(
        {"data": {"values": values}, "layer": [points, line]},
        title=_CONFIDENCE_TITLE,
        subtitle=f"dashed = high confidence (p̂ ≥ {threshold:g})",
    )


def _flip_counts(flip_budget: ArrayLike, depth: int) -> np.ndarray:
    """Predictions per flip budget ``k* = 1 .. depth + 1`` (the last: no flip within ``depth``)."""
    k = np.asarray(flip_budget, dtype=int)
    if k.size and (k.min() < 1 or k.max() > depth + 1):
        raise ValueError(f"`flip_budget` values must lie in 1..{depth + 1}; got range {k.min()}..{k.max()}.")
    return np.bincount(k, minlength=depth + 2)[1:]


_FLIP_TITLE = "Flip budget k* of the evaluated predictions"
_FLIP_AXES = ("groups removed until it flips (k*)", "predictions (count)")


def flip_budget_spec(flip_budget: ArrayLike, *, depth: int) -> dict:
    """How many groups must be removed to flip each prediction (``k* = K + 1``: never, within K),
    as a Vega-Lite spec (the Overview's and the report's chart). One row per bar: ``k``
    (``"1"`` … ``"K"``, ``"no flip ≤ K"``) and ``predictions``."""
    counts = _flip_counts(flip_budget, depth)
    labels = [str(v) for v in range(1, depth + 1)] + [f"no flip ≤ {depth}"]
    values = [{"k": label, "predictions": int(c)} for label, c in zip(labels, counts)]
    spec = {
        "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "k", "type": "ordinal", "sort": labels, "title": _FLIP_AXES[0], "axis": {"labelAngle": 0}},
            "y": {"field": "predictions", "type": "quantitative", "title": _FLIP_AXES[1], "axis": COUNT_AXIS},
            "color": {
                "field": "k",
                "type": "ordinal",
                "legend": None,
                "scale": {"domain": labels, "range": [_FLIPPED] * depth + [_KEPT]},
            },
            "tooltip": [{"field": "k", "title": "k*"}, {"field": "predictions", "type": "quantitative"}],
        },
    }
    return finish_spec(spec, title=_FLIP_TITLE)
