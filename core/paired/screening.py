"""Screening: which images deserve a real (physical) re-test? (SPEC B.5; 001_... Section 5.)

For each model, the **clean-correct evaluation images** are scored from the model's own
outputs on synthetic probes (corruptions) and natural transforms, then the scores are judged
by how well they rank the images that later fail under a real (here: simulated) recapture.

Scores (:func:`screening_scores`; raw value and risk orientation, larger risk = riskier):

=========== ========================================================= ===============
score       definition                                                risk column
=========== ========================================================= ===============
S           clean max probability (= true-class probability here)     ``-S``
U           mean true-class probability over the corruption probes    ``-U``
ret         share of corruption probes on which the image stays right ``-ret``
delta       ``S - U``                                                 ``delta``
A3          A3Rank-style alignment over the corruption probes         ``-A3``
TTA         mean true-class probability over the natural transforms   ``-TTA``
A3_TTA      A3 over the natural transforms                            ``-A3_TTA``
class_delta development-set class mean of ``M - U`` (all dev images)  ``class_delta``
g_SU        logistic ``g(S, U)`` fitted on development images         ``g_SU``
=========== ========================================================= ===============

A3 (001_... Appendix E.2, eq. 12). With ``p`` the clean prediction, ``m`` the modal predicted
class over the probes, ``v_a(c)`` probe ``a``'s probability of class ``c`` and ``v_0`` the
clean probabilities, distractors ``D = {a : argmax v_a not in {p, m}}``, supporters
``S = {a : argmax v_a = p}``, dominators ``G = {a : argmax v_a = m}``::

    A3 = v_0(p) - sum_D [max_c v_a(c) - v_a(p)] + sum_S [v_a(p) - v_a(m)]
                + sum_G [v_a(p) - v_a(m) + v_0(m) - v_0(p)]

Modal-count ties go to the class whose voting probes have the larger mean max-probability,
then to the lower class index. The recorded ``max_prob`` / ``true_prob`` supply every term
they can; full probability vectors (``prob_<c>`` columns) supply ``v_a(m)`` and ``v_0(m)``.

Evaluation: :func:`failure_auroc` (failure = positive class), :func:`failure_coverage` (share
of all real failures among the top ``k = max(1, round(q n))`` images, cut-off ties prorated,
with the attainable ceiling ``min(1, k / n_fail)``; random selection expects ``k / n ~ q``),
:func:`screening_metrics` per model x condition, :func:`condition_tiers` (mild / severe /
extreme by mean development accuracy), :func:`summarize_screening`,
:func:`screening_difference` (model-group or class bootstrap intervals),
:func:`identity_ablation` (within-class derangement and leave-one-out controls) and
:func:`recapture_queue` (the exportable ranked list of images to re-test).

``round`` is round-half-up throughout: ``k = max(1, floor(q n + 1/2))``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pandas as pd

from core._rng import as_generator
from core.exceptions import UndefinedMetricWarning
from core.metrics.ranking import (
    budget_sizes,
    check_budget,
    check_ranking,
    roc_auc_rows,
    tie_starts,
    top_k_coverage_rows,
)
from core.paired.records import validate_records
from core.validation import check_cells

__all__ = [
    "RISK_SIGN",
    "SCORES",
    "TIERS",
    "FailureCoverage",
    "condition_tiers",
    "failure_auroc",
    "failure_coverage",
    "identity_ablation",
    "recapture_queue",
    "risk_column",
    "screening_difference",
    "screening_metrics",
    "screening_scores",
    "summarize_screening",
]

SCORES = ("S", "U", "ret", "delta", "A3", "TTA", "A3_TTA", "class_delta", "g_SU")
"""Score names produced by :func:`screening_scores`, in display order."""

RISK_SIGN = {
    "S": -1.0,
    "U": -1.0,
    "ret": -1.0,
    "delta": 1.0,
    "A3": -1.0,
    "TTA": -1.0,
    "A3_TTA": -1.0,
    "class_delta": 1.0,
    "g_SU": 1.0,
}
"""``risk_<score> = RISK_SIGN[score] * <score>``: larger risk = more likely to fail."""

TIERS = ("mild", "severe", "extreme")
"""Condition tiers from :func:`condition_tiers`, mildest first."""
_OUTPUT_COLUMNS = ("model", "record_id", "true_label", "pred", "max_prob", "true_prob")
_PROBE_COLUMNS = ("model", "record_id", "probe", "kind", "true_label", "pred", "max_prob", "true_prob")
_KINDS = ("corruption", "transform")
_PROB_TOL = 1e-6  # float32 vs float64 writers; larger gaps are real inconsistencies


def risk_column(score: str) -> str:
    """Name of the risk-oriented column of ``score`` (``"U"`` -> ``"risk_U"``)."""
    if score not in RISK_SIGN:
        raise ValueError(f"`score` must be one of {list(SCORES)}; got {score!r}.")
    return f"risk_{score}"


# ------------------------------------------------------------------------------------------
# validation of the output tables
# ------------------------------------------------------------------------------------------
def _py(value):
    """Plain Python scalar for messages (numpy 2 reprs read ``np.float64(1.5)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _where(frame: pd.DataFrame, i: int, name: str) -> str:
    row = frame.iloc[i]
    return f"{name} row {i + 1} (model={_py(row['model'])!r}, record_id={_py(row['record_id'])!r})"


def _outcome(r: pd.Series) -> str:
    """An outcome record as the messages name it."""
    return f"`outcomes` record (model={r['model']!r}, condition={r['condition']!r}, record_id={_py(r['record_id'])!r})"


def _require(frame, name: str, columns: Sequence[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`{name}` must be a pandas DataFrame; got {type(frame).__name__}.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"`{name}` is missing column(s) {missing}; it has {list(map(str, frame.columns))}.")
    if frame.empty:
        raise ValueError(f"`{name}` has no rows.")


def _int_column(frame: pd.DataFrame, col: str, name: str) -> np.ndarray:
    return check_cells(frame[col], kind="count", noun="a class label", where=lambda i: _where(frame, i, f"`{name}`"))


def _prob_column(frame: pd.DataFrame, col: str, name: str) -> np.ndarray:
    return check_cells(
        frame[col], kind="probability", noun="a probability", where=lambda i: _where(frame, i, f"`{name}`")
    )


def _prob_names(frame: pd.DataFrame) -> list[str]:
    """``prob_0 .. prob_{C-1}`` if the frame carries full probability vectors, else []."""
    present = {c for c in frame.columns if isinstance(c, str) and c.startswith("prob_")}
    n = 0
    while f"prob_{n}" in present:
        n += 1
    return [f"prob_{c}" for c in range(n)]


def _outputs_iv(frame: pd.DataFrame, name: str, key: Sequence[str]) -> dict[str, np.ndarray]:
    """Validate one table of model outputs; returns its columns as arrays."""
    ids = frame["record_id"]
    if ids.isna().any():
        i = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise ValueError(f"{_where(frame, i, f'`{name}`')}, column 'record_id': empty cell; every image needs an id.")
    out = {
        "model": frame["model"].astype(str).to_numpy(),
        "record_id": ids.to_numpy(),
        "true_label": _int_column(frame, "true_label", name),
        "pred": _int_column(frame, "pred", name),
        "max_prob": _prob_column(frame, "max_prob", name),
        "true_prob": _prob_column(frame, "true_prob", name),
    }
    above = out["true_prob"] > out["max_prob"] + _PROB_TOL
    if above.any():
        i = int(np.flatnonzero(above)[0])
        raise ValueError(
            f"{_where(frame, i, f'`{name}`')}: true_prob={_py(out['true_prob'][i])!r} exceeds "
            f"max_prob={_py(out['max_prob'][i])!r}."
        )
    cols = _prob_names(frame)
    if cols:
        raw = frame[cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        missing = np.isnan(raw)
        # A row carries a whole probability vector or none (all prob_* empty).
        partial = missing.any(axis=1) & ~missing.all(axis=1)
        if partial.any():
            i = int(np.flatnonzero(partial)[0])
            col = cols[int(np.flatnonzero(missing[i])[0])]
            raise ValueError(
                f"{_where(frame, i, f'`{name}`')}, column {col!r}: empty, but the row has other "
                "prob_* values; give the whole probability vector or none of it."
            )
        has = ~missing.all(axis=1)
        bad = has[:, None] & (~np.isfinite(raw) | (raw < 0) | (raw > 1))
        if bad.any():
            i, j = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(
                f"{_where(frame, i, f'`{name}`')}, column {cols[j]!r}: {_py(raw[i, j])!r} is not a "
                "probability; expected a number in [0, 1]."
            )
        n_classes = raw.shape[1]
        for col in ("true_label", "pred"):
            over = has & (out[col] >= n_classes)
            if over.any():
                i = int(np.flatnonzero(over)[0])
                raise ValueError(
                    f"{_where(frame, i, f'`{name}`')}, column {col!r}: label {out[col][i]} has no "
                    f"probability column (prob_0 .. prob_{n_classes - 1})."
                )
        rows = np.flatnonzero(has)
        vec = raw[rows]
        for col, values in (
            ("max_prob", vec.max(axis=1)),
            ("true_prob", vec[np.arange(rows.size), out["true_label"][rows]]),
            ("max_prob", vec[np.arange(rows.size), out["pred"][rows]]),
        ):
            off = np.abs(out[col][rows] - values) > _PROB_TOL
            if off.any():
                i = int(rows[np.flatnonzero(off)[0]])
                got = values[np.flatnonzero(off)[0]]
                raise ValueError(
                    f"{_where(frame, i, f'`{name}`')}, column {col!r}: {_py(out[col][i])!r} disagrees "
                    f"with the probability vector (prob_* gives {_py(got)!r})."
                )
        out["probs"] = raw
    keys = (
        frame[list(key)].astype(str)
        if "probe" in key
        else pd.DataFrame({"model": out["model"], "record_id": out["record_id"]})
    )
    dup = keys.duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise ValueError(f"{_where(frame, i, f'`{name}`')}: duplicate {tuple(key)}; each must appear once.")
    return out


# ------------------------------------------------------------------------------------------
# scores
# ------------------------------------------------------------------------------------------
def _a3(
    v0_p: np.ndarray, v0: np.ndarray, p: np.ndarray, v_p: np.ndarray, v_max: np.ndarray, pred: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Vectorised A3 (eq. 12) for ``n`` images with ``P`` probes and ``C`` classes.

    ``v0_p`` (n,) clean probability of ``p``; ``v0`` (n, C) clean vectors; ``p`` (n,) clean
    predictions; ``v_p``, ``v_max``, ``pred`` (n, P) each probe's probability of ``p``, its
    maximum and its prediction; ``v`` (n, P, C) probe vectors. The recorded scalars are used
    wherever a term is one of them; the vectors only supply ``v_a(m)`` and ``v_0(m)`` for a
    modal class that is not the row's own arg-max.
    """
    n, _, n_classes = v.shape
    rows = np.arange(n)
    onehot = pred[..., None] == np.arange(n_classes)
    votes = onehot.sum(axis=1)
    mean_conf = np.divide(
        (onehot * v_max[..., None]).sum(axis=1), votes, out=np.full(votes.shape, -np.inf), where=votes > 0
    )
    tied = votes == votes.max(axis=1, keepdims=True)
    # argmax takes the first maximum: the lowest class index among exact ties.
    m = np.where(tied, mean_conf, -np.inf).argmax(axis=1)
    dominator = pred == m[:, None]
    supporter = pred == p[:, None]
    distractor = ~supporter & ~dominator
    v_m = np.where(dominator, v_max, v[rows, :, m])
    v0_m = np.where(m == p, v0_p, v0[rows, m])
    return (
        v0_p
        - np.where(distractor, v_max - v_p, 0.0).sum(axis=1)
        + np.where(supporter, v_p - v_m, 0.0).sum(axis=1)
        + np.where(dominator, v_p - v_m + (v0_m - v0_p)[:, None], 0.0).sum(axis=1)
    )


def _probe_block(
    probes: dict,
    idx: np.ndarray,
    image_pos: np.ndarray,
    required: np.ndarray,
    model: str,
    kind: str,
    record_ids: np.ndarray,
) -> dict[str, np.ndarray] | None:
    """One model's probes of one kind as ``(n_images, P)`` arrays (NaN / -1 where an image has none).

    An image has either all of the model's probes of this kind or none; ``required`` images
    (the scored ones) must have them.
    """
    if idx.size == 0:
        return None
    n_images = required.size
    pos = image_pos[idx]
    names, code = np.unique(probes["probe"][idx], return_inverse=True)
    counts = np.bincount(pos, minlength=n_images)
    bad = (counts != names.size) & ((counts > 0) | required)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`probes`: model {model!r}, record_id {_py(record_ids[i])!r} has {counts[i]} {kind} probe(s) "
            f"but the model has {names.size} distinct {kind} probes; an image has all or none of "
            "them, and every scored image (clean-correct evaluation image) needs all."
        )
    shape = (n_images, names.size)
    block = {"true_prob": np.full(shape, np.nan), "pred": np.full(shape, -1, dtype=np.int64), "present": counts > 0}
    block["max_prob"] = np.full(shape, np.nan)
    block["true_prob"][pos, code] = probes["true_prob"][idx]
    block["max_prob"][pos, code] = probes["max_prob"][idx]
    block["pred"][pos, code] = probes["pred"][idx]
    if "probs" in probes:
        block["probs"] = np.full((*shape, probes["probs"].shape[1]), np.nan)
        block["probs"][pos, code] = probes["probs"][idx]
        block["has_vectors"] = ~np.isnan(block["probs"]).any(axis=(1, 2))
    return block


def _class_mean(values: np.ndarray, labels: np.ndarray, n_labels: int) -> np.ndarray:
    total = np.bincount(labels, weights=values, minlength=n_labels)
    count = np.bincount(labels, minlength=n_labels)
    return np.divide(total, count, out=np.full(n_labels, np.nan), where=count > 0)


def _fit_g(s_dev, u_dev, fail_counts, n_conditions, s_eval, u_eval) -> np.ndarray:
    """Logistic g(S, U) on standardised development features, pooled over conditions."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x_dev = np.column_stack([s_dev, u_dev])
    scaler = StandardScaler().fit(x_dev)
    # Each development image enters once per condition: as failed rows and as retained rows,
    # the pooled data set, written as two weighted copies.
    x = np.concatenate([x_dev, x_dev])
    y = np.concatenate([np.ones(len(x_dev)), np.zeros(len(x_dev))])
    w = np.concatenate([fail_counts, n_conditions - fail_counts]).astype(np.float64)
    keep = w > 0
    model = LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000)
    model.fit(scaler.transform(x[keep]), y[keep], sample_weight=w[keep])
    return model.predict_proba(scaler.transform(np.column_stack([s_eval, u_eval])))[:, 1]


def screening_scores(
    probes: pd.DataFrame, clean: pd.DataFrame, *, outcomes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Image-level screening scores of every model's clean-correct evaluation images.

    Parameters
    ----------
    probes : DataFrame
        Per-probe outputs, long format (``docs/DEVELOPING.md``): ``model, record_id, probe,
        kind, true_label, pred, max_prob, true_prob`` and optionally the full probability
        vectors ``prob_0 .. prob_{C-1}`` (needed for A3). ``kind`` is ``"corruption"`` (the
        synthetic probes behind U, ret, delta, A3) or ``"transform"`` (natural transforms
        behind TTA, A3_TTA). Every scored image (clean-correct evaluation image) needs all
        of its model's corruption probes; transforms are optional per model, but a model
        that has any needs all of them on every scored image. Other images have all probes
        of a kind or none; development images with corruption probes feed ``class_delta``
        and ``g_SU``.
    clean : DataFrame
        Clean outputs, one row per (model, image): ``model, record_id, true_label, pred,
        max_prob, true_prob``, optionally ``split`` (``"dev"`` / ``"eval"``; without it every
        image is an evaluation image), ``group`` (model group) and ``prob_*``.
    outcomes : DataFrame, optional
        Paired records of the real conditions of **one** source (``docs/DEVELOPING.md``
        schema). Their development-image rows fit ``g(S, U)``; without them ``g_SU`` is NaN.

    Returns
    -------
    DataFrame
        One row per (model, clean-correct evaluation image), sorted by model and record_id:
        ``model``, ``group`` (if given), ``record_id``, ``true_label``, the scores of
        :data:`SCORES`, ``n_corruptions``, ``n_transforms`` and for each score
        ``risk_<score> = RISK_SIGN[score] * score`` (**larger = riskier**: ``-S, -U, -ret,
        delta, -A3, -TTA, -A3_TTA, class_delta, g_SU``).

        ``class_delta`` is the development-set mean of ``M - U`` over all development images
        of the image's class (NaN if the class has none). ``g_SU`` is the failure probability
        of a logistic regression (C = 1, features S and U standardised on the development
        clean-correct images) fitted per model on its development clean-correct images,
        pooling every condition of ``outcomes``. A3 columns are NaN without ``prob_*``
        columns, TTA columns without transform probes.

    Warns
    -----
    UndefinedMetricWarning
        When a whole score is undefined: A3 without probability vectors, class_delta / g_SU
        without development images, g_SU when a model's development outcomes are all one class.

    Examples
    --------
    >>> import pandas as pd
    >>> clean = pd.DataFrame({"model": "m", "record_id": [1, 2], "true_label": [0, 1],
    ...                       "pred": [0, 1], "max_prob": [0.9, 0.8], "true_prob": [0.9, 0.8]})
    >>> probes = pd.DataFrame({"model": "m", "record_id": [1, 1, 2, 2], "probe": ["a", "b"] * 2,
    ...                        "kind": "corruption", "true_label": [0, 0, 1, 1],
    ...                        "pred": [0, 1, 1, 1], "max_prob": [0.7, 0.6, 0.9, 0.5],
    ...                        "true_prob": [0.7, 0.4, 0.9, 0.5]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     s = screening_scores(probes, clean)
    >>> s[["record_id", "S", "U", "ret", "delta", "risk_U"]].round(3).to_string(index=False)
    ' record_id   S    U  ret  delta  risk_U\\n         1 0.9 0.55  0.5   0.35   -0.55\\n         2 0.8 0.70  1.0   0.10   -0.70'
    """
    _require(probes, "probes", _PROBE_COLUMNS)
    _require(clean, "clean", _OUTPUT_COLUMNS)
    c = _outputs_iv(clean, "clean", ("model", "record_id"))
    p = _outputs_iv(probes, "probes", ("model", "record_id", "probe"))
    p["probe"] = probes["probe"].astype(str).to_numpy()
    p["kind"] = probes["kind"].astype(str).to_numpy()
    bad_kind = ~np.isin(p["kind"], _KINDS)
    if bad_kind.any():
        i = int(np.flatnonzero(bad_kind)[0])
        raise ValueError(
            f"{_where(probes, i, '`probes`')}, column 'kind': {p['kind'][i]!r}; expected one of {list(_KINDS)}."
        )
    if "split" in clean.columns:
        split = clean["split"].astype(str).to_numpy()
        bad = ~np.isin(split, ("dev", "eval"))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{_where(clean, i, '`clean`')}, column 'split': {split[i]!r}; expected 'dev' or 'eval'.")
    else:
        split = np.full(len(clean), "eval")
    group = clean["group"].astype(str).to_numpy() if "group" in clean.columns else None
    have_probs = "probs" in c and "probs" in p
    if have_probs and c["probs"].shape[1] != p["probs"].shape[1]:
        raise ValueError(
            f"`clean` has {c['probs'].shape[1]} prob_* columns but `probes` has "
            f"{p['probs'].shape[1]}; both must cover the same classes."
        )
    clean_vectors = ~np.isnan(c["probs"]).any(axis=1) if have_probs else None

    # Locate every probe row's clean row: (model, record_id) -> clean position.
    clean_key = pd.MultiIndex.from_arrays([c["model"], c["record_id"]])
    probe_clean = clean_key.get_indexer(pd.MultiIndex.from_arrays([p["model"], p["record_id"]]))
    if np.any(probe_clean < 0):
        i = int(np.flatnonzero(probe_clean < 0)[0])
        raise ValueError(f"{_where(probes, i, '`probes`')}: no clean output for this (model, record_id) in `clean`.")
    wrong_label = p["true_label"] != c["true_label"][probe_clean]
    if wrong_label.any():
        i = int(np.flatnonzero(wrong_label)[0])
        raise ValueError(
            f"{_where(probes, i, '`probes`')}, column 'true_label': {p['true_label'][i]} but `clean` "
            f"says {c['true_label'][probe_clean[i]]} for the same image."
        )
    probe_kinds = pd.DataFrame({"probe": p["probe"], "kind": p["kind"]}).drop_duplicates()
    if probe_kinds["probe"].duplicated().any():
        name = probe_kinds.loc[probe_kinds["probe"].duplicated(), "probe"].iloc[0]
        raise ValueError(f"`probes`: probe {name!r} appears with both kinds; a probe is a corruption or a transform.")

    fail_counts, n_cond = _dev_failures(outcomes, c, split)
    n_labels = int(max(c["true_label"].max(), p["true_label"].max())) + 1
    parts = []
    undefined: set[str] = set()
    for model in sorted(pd.unique(c["model"])):
        rows = np.flatnonzero(c["model"] == model)
        rows = rows[np.argsort(c["record_id"][rows], kind="stable")]
        n_img = rows.size
        image_pos = np.full(len(clean), -1)
        image_pos[rows] = np.arange(n_img)
        in_model = p["model"] == model
        label = c["true_label"][rows]
        correct = c["pred"][rows] == label
        scored = correct & (split[rows] == "eval")
        dev = split[rows] == "dev"
        blocks = {}
        for kind in _KINDS:
            idx = np.flatnonzero(in_model & (p["kind"] == kind))
            blocks[kind] = _probe_block(p, idx, image_pos[probe_clean], scored, model, kind, c["record_id"][rows])
        corr, tta = blocks["corruption"], blocks["transform"]
        if corr is None:
            raise ValueError(f"`probes`: model {model!r} has no corruption probes; U needs them.")
        s_clean = c["max_prob"][rows]
        m_clean = c["true_prob"][rows]
        res = {name: np.full(n_img, np.nan) for name in SCORES}
        has = corr["present"]
        u = np.full(n_img, np.nan)
        u[has] = corr["true_prob"][has].mean(axis=1)
        res.update(S=s_clean, U=u, delta=s_clean - u)
        res["ret"][has] = (corr["pred"][has] == label[has, None]).mean(axis=1)
        for name, block in (("A3", corr), ("A3_TTA", tta)):
            if block is None:
                continue
            ok = scored & clean_vectors[rows] & block["has_vectors"] if have_probs else np.zeros(n_img, bool)
            if (scored & ~ok).any():
                undefined.add(name)
            if ok.any():
                v0 = c["probs"][rows][ok]
                p_ok = c["pred"][rows][ok]
                # On clean-correct images p is the true label, so v_a(p) is the recorded true_prob.
                res[name][ok] = _a3(
                    s_clean[ok],
                    v0,
                    p_ok,
                    block["true_prob"][ok],
                    block["max_prob"][ok],
                    block["pred"][ok],
                    block["probs"][ok],
                )
        if tta is None:
            undefined.add("TTA")
        else:
            res["TTA"][scored] = tta["true_prob"][scored].mean(axis=1)
        dev &= has  # development images without probes cannot contribute U
        if dev.any():
            res["class_delta"] = _class_mean((m_clean - u)[dev], label[dev], n_labels)[label]
        else:
            undefined.add("class_delta")
        dev_cc = dev & correct
        if fail_counts is None or not dev_cc.any():
            undefined.add("g_SU")
        else:
            f = fail_counts[rows][dev_cc]
            n = n_cond[rows][dev_cc]
            if f.sum() == 0 or f.sum() == n.sum():
                undefined.add("g_SU")
            elif scored.any():
                res["g_SU"][scored] = _fit_g(s_clean[dev_cc], u[dev_cc], f, n, s_clean[scored], u[scored])
        frame = {"model": model}
        if group is not None:
            frame["group"] = group[rows][scored]
        frame.update({"record_id": c["record_id"][rows][scored], "true_label": label[scored]})
        frame.update({name: res[name][scored] for name in SCORES})
        frame["n_corruptions"] = corr["true_prob"].shape[1]
        frame["n_transforms"] = 0 if tta is None else tta["true_prob"].shape[1]
        frame.update({risk_column(name): RISK_SIGN[name] * res[name][scored] for name in SCORES})
        parts.append(pd.DataFrame(frame))
    for name in sorted(undefined):
        warnings.warn(
            f"screening score {name!r} is undefined (NaN) for at least one model: " + _UNDEFINED_REASON[name],
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return pd.concat(parts, ignore_index=True)


_UNDEFINED_REASON = {
    "A3": "it needs full probability vectors (prob_0 .. prob_{C-1}) in `clean` and `probes` for every "
    "scored image and corruption probe.",
    "A3_TTA": "it needs full probability vectors (prob_0 .. prob_{C-1}) in `clean` and `probes` for every "
    "scored image and transform probe.",
    "TTA": "the model has no probes of kind 'transform'.",
    "class_delta": "there are no development images (split 'dev') with corruption probes.",
    "g_SU": "it needs `outcomes` with development images of both outcomes (failed and retained).",
}


def _dev_failures(outcomes, c, split):
    """Per clean row: number of outcome conditions failed and observed (development use)."""
    if outcomes is None:
        return None, None
    rec = validate_records(outcomes, name="`outcomes`")
    sources = pd.unique(rec["source"])
    if sources.size != 1:
        raise ValueError(
            f"`outcomes` must hold the real conditions of one source (g is fitted per source); "
            f"got sources {sorted(map(str, sources))}."
        )
    key = pd.MultiIndex.from_arrays([c["model"], c["record_id"]])
    pos = key.get_indexer(pd.MultiIndex.from_arrays([rec["model"].to_numpy(), rec["record_id"].to_numpy()]))
    known = pos >= 0
    clash = known.copy()
    clash[known] = (rec["true_label"].to_numpy()[known] != c["true_label"][pos[known]]) | (
        rec["clean_pred"].to_numpy()[known] != c["pred"][pos[known]]
    )
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        r = rec.iloc[i]
        raise ValueError(
            f"{_outcome(r)} disagrees with `clean` about the image: true_label "
            f"{_py(r['true_label'])} / clean_pred {_py(r['clean_pred'])} there, "
            f"{_py(c['true_label'][pos[i]])} / {_py(c['pred'][pos[i]])} in `clean`."
        )
    failed = (rec["pert_pred"].to_numpy() != rec["true_label"].to_numpy())[known]
    pos = pos[known]
    fail_counts = np.bincount(pos, weights=failed, minlength=len(split))
    n_cond = np.bincount(pos, minlength=len(split)).astype(np.float64)
    return fail_counts, n_cond


# ------------------------------------------------------------------------------------------
# ranking metrics (vectorised over rows of weights / outcomes)
# ------------------------------------------------------------------------------------------
def _ranking_iv(risk, failed, sample_weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, s, w = check_ranking(
        failed, risk, sample_weight=sample_weight, allow_inf=False, label_name="failed", score_name="risk"
    )
    return s, y.astype(np.float64), np.ones_like(s) if w is None else w


def failure_auroc(risk, failed, *, sample_weight=None) -> float:
    """AUROC of a risk score for separating failures (positive) from retained images.

    Ties count one half (Mann-Whitney). ``sample_weight`` are integer multiplicities: the
    result equals the AUROC of the data set with every image repeated that many times.

    Parameters
    ----------
    risk : array-like of shape (n,)
        Risk score, larger = riskier.
    failed : array-like of bool or 0/1, shape (n,)
        1 = the image failed under the real condition.
    sample_weight : array-like of non-negative int, shape (n,), optional

    Returns
    -------
    float
        NaN (with a warning) when all images failed or none did.

    Examples
    --------
    >>> failure_auroc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])
    0.875
    """
    risk, failed, weight = _ranking_iv(risk, failed, sample_weight)
    value = float(roc_auc_rows(failed[None], risk, weight[None])[0])
    if np.isnan(value):
        warnings.warn(
            "AUROC is undefined: all images have the same outcome; returning NaN.", UndefinedMetricWarning, stacklevel=2
        )
    return value


@dataclass(frozen=True)
class FailureCoverage:
    """Failure coverage of a ranked selection at one budget.

    Attributes
    ----------
    coverage : float
        Expected share of all failures among the ``k`` selected images, cut-off ties
        prorated (the expectation under uniformly random tie-breaking). NaN if no failure.
    ceiling : float
        Attainable maximum ``min(1, k / n_fail)``. NaN if no failure.
    random : float
        Expected coverage of ``k`` images drawn uniformly at random: ``k / n`` (``~ q``).
    k : int
        Number selected, ``max(1, round(q n))`` (round half up).
    n, n_fail : int
        Images ranked and failures among them (weighted counts with ``sample_weight``).
    expected_found : float
        ``coverage * n_fail``: expected number of failures the selection finds.
    """

    coverage: float
    ceiling: float
    random: float
    k: int
    n: int
    n_fail: int
    expected_found: float


def failure_coverage(risk, failed, budget, *, sample_weight=None) -> FailureCoverage:
    """Share of all real failures found by re-testing the top ``q`` fraction by risk.

    ``k = max(1, round(q n))`` images with the largest risk are selected; if the ``k``-th
    place falls inside a group of tied risks, each member of that group counts with the
    probability ``(k - #above) / #tied`` of being selected (prorated ties).

    Parameters
    ----------
    risk : array-like of shape (n,)
        Risk score, larger = riskier; finite.
    failed : array-like of bool or 0/1, shape (n,)
    budget : float
        Fraction ``q`` in (0, 1].
    sample_weight : array-like of non-negative int, shape (n,), optional
        Image multiplicities (class bootstrap); counts above are then weighted.

    Returns
    -------
    FailureCoverage

    Examples
    --------
    Four images, two failures; the budget ``k = 2`` cuts a tie of two (risks 0.5) in half:

    >>> r = failure_coverage([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0], 0.5)
    >>> r.coverage, r.ceiling, r.random, r.k
    (0.75, 1.0, 0.5, 2)
    """
    risk, failed, weight = _ranking_iv(risk, failed, sample_weight)
    r = top_k_coverage_rows(failed[None], risk, weight[None], check_budget(budget, name="budget"))
    if r.n_pos[0] == 0:
        warnings.warn(
            "failure coverage is undefined: no image failed; returning NaN.", UndefinedMetricWarning, stacklevel=2
        )
    return FailureCoverage(
        coverage=float(r.coverage[0]),
        ceiling=float(r.ceiling[0]),
        random=float(r.random[0]),
        k=int(r.k[0]),
        n=int(r.n[0]),
        n_fail=int(r.n_pos[0]),
        expected_found=float(r.found[0]),
    )


# ------------------------------------------------------------------------------------------
# evaluation over cells
# ------------------------------------------------------------------------------------------
def _scores_iv(scores, score_names=None) -> list[str]:
    _require(scores, "scores", ("model", "record_id", "true_label"))
    if score_names is None:
        names = [name for name in SCORES if risk_column(name) in scores.columns]
        if not names:
            raise ValueError(f"`scores` has no risk column (risk_<score> for a score in {list(SCORES)}).")
    else:
        names = list(score_names)
    if not names:
        raise ValueError("`score_names` must name at least one score.")
    for name in names:
        col = risk_column(name)
        if col not in scores.columns:
            raise ValueError(f"`scores` has no column {col!r}; pass the output of screening_scores.")
    return names


def _budgets_iv(budgets) -> list[float]:
    values = [budgets] if np.isscalar(budgets) else list(budgets)
    if not values or any(
        isinstance(q, (bool, np.bool_)) or not np.isscalar(q) or not 0 < float(q) <= 1 for q in values
    ):
        raise ValueError(f"`budgets` must be fractions in (0, 1]; got {budgets!r}.")
    return [float(q) for q in values]


def _outcome_matrix(scores: pd.DataFrame, outcomes: pd.DataFrame):
    """Join real outcomes onto the scored images.

    Returns the validated records restricted to scored images with a column ``row`` (the
    scores row) and ``failed``.
    """
    rec = validate_records(outcomes, name="`outcomes`")
    key = pd.MultiIndex.from_arrays([scores["model"].astype(str).to_numpy(), scores["record_id"].to_numpy()])
    row = key.get_indexer(pd.MultiIndex.from_arrays([rec["model"].to_numpy(), rec["record_id"].to_numpy()]))
    rec = rec.assign(row=row)
    rec = rec.loc[row >= 0]
    if rec.empty:
        raise ValueError(
            "`outcomes` has no record of any scored image (clean-correct evaluation images of "
            "`scores`); check the model names and record ids."
        )
    labels = scores["true_label"].to_numpy()[rec["row"].to_numpy()]
    bad = (rec["true_label"].to_numpy() != labels) | (rec["clean_pred"].to_numpy() != labels)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        r = rec.iloc[i]
        raise ValueError(
            f"{_outcome(r)} disagrees with `scores`: it must be the same clean-correct "
            f"image with true_label {labels[i]}; got true_label={r['true_label']}, "
            f"clean_pred={r['clean_pred']}."
        )
    return rec.assign(failed=(rec["pert_pred"] != rec["true_label"]).astype(np.float64))


def condition_tiers(records: pd.DataFrame, *, mild: float = 0.40, extreme: float = 0.20) -> pd.DataFrame:
    """Tier every condition by its mean development accuracy across models.

    The development accuracy of a (model, condition) cell is the share of its development
    images (``split == "dev"``, all of them, clean-correct or not) predicted correctly under
    the condition; the condition's value is the unweighted mean over models.

    Parameters
    ----------
    records : DataFrame
        Paired records with a ``split`` column containing development rows.
    mild, extreme : float, default=0.40, 0.20
        ``mild`` if accuracy >= ``mild``; ``extreme`` if < ``extreme``; ``severe`` otherwise.

    Returns
    -------
    DataFrame
        ``source, condition, dev_accuracy, n_models, tier``.
    """
    if not 0.0 <= extreme <= mild <= 1.0:
        raise ValueError(f"need 0 <= `extreme` <= `mild` <= 1; got extreme={extreme!r}, mild={mild!r}.")
    rec = validate_records(records, name="`records`")
    if "split" not in rec.columns or not (rec["split"] == "dev").any():
        raise ValueError("`records` needs development rows (split == 'dev') to define tiers.")
    dev = rec.loc[rec["split"] == "dev"]
    per_model = (
        dev.assign(correct=(dev["pert_pred"] == dev["true_label"]).astype(np.float64))
        .groupby(["source", "condition", "model"], sort=True)["correct"]
        .mean()
    )
    out = per_model.groupby(level=["source", "condition"], sort=True).agg(["mean", "size"]).reset_index()
    out = out.rename(columns={"mean": "dev_accuracy", "size": "n_models"})
    acc = out["dev_accuracy"].to_numpy()
    out["tier"] = np.select([acc >= mild, acc >= extreme], TIERS[:2], default=TIERS[2])
    return out


def _tier_map(outcomes, tiers) -> pd.DataFrame | None:
    if tiers is None:
        if "split" in outcomes.columns and (outcomes["split"].astype(str) == "dev").any():
            tiers = condition_tiers(outcomes)
        else:
            return None
    _require(tiers, "tiers", ("source", "condition", "tier"))
    return tiers[["source", "condition", "tier"]].astype(str)


def screening_metrics(
    scores: pd.DataFrame,
    outcomes: pd.DataFrame,
    *,
    score_names: Sequence[str] | None = None,
    budgets: float | Sequence[float] = (0.1, 0.2, 0.3),
    tiers: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """AUROC and failure coverage of every score in every (model, condition) cell.

    Parameters
    ----------
    scores : DataFrame
        Output of :func:`screening_scores`.
    outcomes : DataFrame
        Paired records of the real conditions (any sources). Only the scored images (the
        clean-correct evaluation images of each model) are used; the outcome of a record is
        ``failed = pert_pred != true_label``.
    score_names : sequence of str, optional
        Scores to evaluate (default: every score of :data:`SCORES` with a ``risk_<score>``
        column in ``scores``).
    budgets : float or sequence of float, default=(0.1, 0.2, 0.3)
    tiers : DataFrame, optional
        ``source, condition, tier``; default :func:`condition_tiers` of ``outcomes`` when they
        have development rows, otherwise no tiers (``tier`` = ``"untiered"``).

    Returns
    -------
    DataFrame
        One row per (model, source, condition, score, budget): ``model, group`` (if in
        ``scores``), ``source, condition, tier, score, budget, n, n_fail, k, auroc,
        coverage, ceiling, random, expected_found``. A score is evaluated on the cell's
        images where it is defined (NaN scores are left out, e.g. ``class_delta`` of a class
        without development images); ``n`` counts them. ``auroc`` is NaN when all or none
        of them failed, ``coverage`` and ``ceiling`` when none failed.
    """
    names = _scores_iv(scores, score_names)
    qs = _budgets_iv(budgets)
    rec = _outcome_matrix(scores, outcomes)
    tier_map = _tier_map(outcomes, tiers)
    rows = []
    for (model, source), cell in rec.groupby(["model", "source"], sort=True):
        conditions, cond_code = np.unique(cell["condition"].to_numpy(), return_inverse=True)
        img_rows, img_code = np.unique(cell["row"].to_numpy(), return_inverse=True)
        present = np.zeros((conditions.size, img_rows.size))
        failed = np.zeros_like(present)
        present[cond_code, img_code] = 1.0
        failed[cond_code, img_code] = cell["failed"].to_numpy()
        for name in names:
            risk = scores[risk_column(name)].to_numpy(dtype=np.float64)[img_rows]
            ok = np.isfinite(risk)
            w = present[:, ok]
            f = failed[:, ok]
            n_ok = w.sum(axis=1)
            if not ok.any():
                auc = np.full(conditions.size, np.nan)
                per_budget = {q: None for q in qs}
            else:
                auc = roc_auc_rows(f, risk[ok], w)
                per_budget = {q: top_k_coverage_rows(f, risk[ok], w, q) for q in qs}
            for j, cond in enumerate(conditions):
                for q in qs:
                    res = per_budget[q]
                    if res is None or n_ok[j] == 0:
                        vals = (np.nan, np.nan, np.nan, np.nan, 0.0, (f[j] * w[j]).sum(), np.nan)
                    else:
                        vals = (
                            res.coverage[j],
                            res.ceiling[j],
                            res.random[j],
                            res.k[j],
                            res.n[j],
                            res.n_pos[j],
                            res.found[j],
                        )
                    cov, ceil, rand, k, n, n_fail, found = vals
                    rows.append(
                        (
                            model,
                            source,
                            cond,
                            name,
                            q,
                            int(n),
                            int(n_fail),
                            np.nan if np.isnan(k) else int(k),
                            auc[j] if n_ok[j] else np.nan,
                            cov,
                            ceil,
                            rand,
                            found,
                        )
                    )
    out = pd.DataFrame(
        rows,
        columns=[
            "model",
            "source",
            "condition",
            "score",
            "budget",
            "n",
            "n_fail",
            "k",
            "auroc",
            "coverage",
            "ceiling",
            "random",
            "expected_found",
        ],
    )
    if "group" in scores.columns:
        groups = scores.groupby("model", sort=False)["group"].first()
        out.insert(1, "group", out["model"].map(groups).astype(str))
    if tier_map is None:
        out.insert(out.columns.get_loc("condition") + 1, "tier", "untiered")
    else:
        tier = out[["source", "condition"]].merge(tier_map, on=["source", "condition"], how="left")["tier"]
        out.insert(out.columns.get_loc("condition") + 1, "tier", tier.fillna("untiered").to_numpy())
    return out


def summarize_screening(
    metrics: pd.DataFrame, *, by: Sequence[str] = ("source", "tier", "score", "budget")
) -> pd.DataFrame:
    """Mean of each metric over cells, cells weighted equally (the paper's averaging).

    Parameters
    ----------
    metrics : DataFrame
        Output of :func:`screening_metrics`.
    by : sequence of str
        Grouping columns.

    Returns
    -------
    DataFrame
        ``by`` columns, ``n_cells``, ``n_cells_auroc`` (cells with a defined AUROC),
        ``auroc``, ``coverage``, ``ceiling``, ``random`` (means over defined cells).
    """
    _require(metrics, "metrics", (*by, "auroc", "coverage", "ceiling", "random"))
    grouped = metrics.groupby(list(by), sort=True)
    out = grouped[["auroc", "coverage", "ceiling", "random"]].mean()
    out.insert(0, "n_cells_auroc", grouped["auroc"].count())
    out.insert(0, "n_cells", grouped.size())
    return out.reset_index()


# ------------------------------------------------------------------------------------------
# bootstrap intervals for paired score differences
# ------------------------------------------------------------------------------------------
def _cell_arrays(scores, rec, a, b):
    """Per (model, source, condition) cell: image rows, failure vector, risks of a and b."""
    risk_a = scores[risk_column(a)].to_numpy(dtype=np.float64)
    risk_b = scores[risk_column(b)].to_numpy(dtype=np.float64)
    cells = []
    for (model, source, cond), cell in rec.groupby(["model", "source", "condition"], sort=True):
        rows = cell["row"].to_numpy()
        keep = np.isfinite(risk_a[rows]) & np.isfinite(risk_b[rows])
        rows = rows[keep]
        if rows.size:
            cells.append((model, source, cond, rows, cell["failed"].to_numpy()[keep], risk_a[rows], risk_b[rows]))
    return cells


def _metric_rows(metric, budget, risk, failed, weight):
    if metric == "auroc":
        return roc_auc_rows(failed, risk, weight)
    return top_k_coverage_rows(failed, risk, weight, budget).coverage


def screening_difference(
    scores: pd.DataFrame,
    outcomes: pd.DataFrame,
    *,
    a: str = "U",
    b: str = "S",
    metric: Literal["auroc", "coverage"] = "coverage",
    budget: float = 0.2,
    resample: Literal["group", "class"] = "group",
    n_draws: int | None = None,
    level: float = 0.95,
    seed=0,
    tiers: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Mean paired difference ``metric(a) - metric(b)`` over cells, with a bootstrap interval.

    Cells (model x condition) are weighted equally; each cell evaluates ``a`` and ``b`` on
    the same images (those where both are defined).

    * ``resample="group"`` (default 2,000 draws): model groups are drawn with replacement
      and the mean is taken over the cells of the drawn groups (a group drawn twice counts
      twice). Needs a ``group`` column in ``scores``.
    * ``resample="class"`` (default 200 draws): true classes are drawn with replacement; one
      draw is applied to every cell, each image weighted by its class's multiplicity, and
      the metrics are recomputed (coverage with the same proration). A cell whose weighted
      positives or negatives vanish is skipped in that draw.

    The interval is the percentile interval at ``level``.

    Parameters
    ----------
    scores, outcomes : DataFrame
        As in :func:`screening_metrics`.
    a, b : str
        Score names (e.g. ``"U"`` and ``"S"``).
    metric : {"auroc", "coverage"}
    budget : float
        Budget for ``metric="coverage"``.
    resample : {"group", "class"}
    n_draws : int, optional
        Default 2,000 (group) or 200 (class).
    level : float, default=0.95
    seed : int or numpy.random.Generator
    tiers : DataFrame, optional
        As in :func:`screening_metrics`.

    Returns
    -------
    DataFrame
        One row per (source, tier): ``source, tier, n_cells, mean_a, mean_b, difference,
        low, high, n_draws`` (draws with at least one usable cell).
    """
    _scores_iv(scores, [a, b])
    if metric not in ("auroc", "coverage"):
        raise ValueError(f"`metric` must be 'auroc' or 'coverage'; got {metric!r}.")
    if resample not in ("group", "class"):
        raise ValueError(f"`resample` must be 'group' or 'class'; got {resample!r}.")
    budget = _budgets_iv(budget)[0]
    if not 0.0 < level < 1.0:
        raise ValueError(f"`level` must be in (0, 1); got {level!r}.")
    if n_draws is None:
        n_draws = 2000 if resample == "group" else 200
    if isinstance(n_draws, (bool, np.bool_)) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"`n_draws` must be a positive int; got {n_draws!r}.")
    if resample == "group" and "group" not in scores.columns:
        raise ValueError("`resample='group'` needs a `group` column in `scores` (model groups).")
    rng = as_generator(seed)
    rec = _outcome_matrix(scores, outcomes)
    tier_map = _tier_map(outcomes, tiers)
    tier_of = {} if tier_map is None else dict(zip(zip(tier_map["source"], tier_map["condition"]), tier_map["tier"]))
    cells = _cell_arrays(scores, rec, a, b)
    labels = scores["true_label"].to_numpy()
    classes, label_code = np.unique(labels, return_inverse=True)

    point_a = np.array(
        [_metric_rows(metric, budget, ra, f[None], np.ones((1, f.size)))[0] for _, _, _, _, f, ra, _ in cells]
    )
    point_b = np.array(
        [_metric_rows(metric, budget, rb, f[None], np.ones((1, f.size)))[0] for _, _, _, _, f, _, rb in cells]
    )
    strata = [(src, tier_of.get((src, cond), "untiered")) for _, src, cond, *_ in cells]

    if resample == "group":
        group_of = scores.groupby("model", sort=False)["group"].first().astype(str)
        groups = np.unique(group_of.to_numpy())
        cell_group = np.searchsorted(groups, [group_of[m] for m, *_ in cells])
        counts = np.stack(
            [np.bincount(d, minlength=groups.size) for d in rng.integers(0, groups.size, size=(n_draws, groups.size))]
        )
        draw_diffs = None
    else:
        mult = np.stack(
            [
                np.bincount(d, minlength=classes.size)
                for d in rng.integers(0, classes.size, size=(n_draws, classes.size))
            ]
        ).astype(np.float64)
        draw_diffs = []
        for _, _, _, rows, f, ra, rb in cells:
            w = mult[:, label_code[rows]]
            ff = np.broadcast_to(f, w.shape)
            draw_diffs.append(_metric_rows(metric, budget, ra, ff, w) - _metric_rows(metric, budget, rb, ff, w))
        draw_diffs = np.array(draw_diffs)  # (cells, draws)

    out = []
    for stratum in sorted(set(strata)):
        member = np.array([s == stratum for s in strata])
        defined = member & np.isfinite(point_a) & np.isfinite(point_b)
        if not defined.any():
            continue
        diff = point_a[defined] - point_b[defined]
        if resample == "group":
            sums = np.bincount(cell_group[defined], weights=diff, minlength=groups.size)
            sizes = np.bincount(cell_group[defined], minlength=groups.size).astype(np.float64)
            num, den = counts @ sums, counts @ sizes
            boot = num[den > 0] / den[den > 0]
        else:
            block = draw_diffs[defined]
            usable = np.isfinite(block)
            n_cells = usable.sum(axis=0)
            total = np.where(usable, block, 0.0).sum(axis=0)
            boot = total[n_cells > 0] / n_cells[n_cells > 0]
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(boot, [tail, 1.0 - tail]) if boot.size else (np.nan, np.nan)
        out.append(
            (
                stratum[0],
                stratum[1],
                int(defined.sum()),
                point_a[defined].mean(),
                point_b[defined].mean(),
                diff.mean(),
                low,
                high,
                int(boot.size),
            )
        )
    return pd.DataFrame(
        out, columns=["source", "tier", "n_cells", "mean_a", "mean_b", "difference", "low", "high", "n_draws"]
    )


# ------------------------------------------------------------------------------------------
# identity ablation
# ------------------------------------------------------------------------------------------
def _derangements(size: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` uniformly random derangements of ``range(size)`` (size >= 2), by rejection."""
    out = np.empty((n_draws, size), dtype=np.int64)
    todo = np.arange(n_draws)
    while todo.size:
        perms = rng.permuted(np.tile(np.arange(size), (todo.size, 1)), axis=1)
        ok = ~np.any(perms == np.arange(size), axis=1)
        out[todo[ok]] = perms[ok]
        todo = todo[~ok]
    return out


def identity_ablation(
    scores: pd.DataFrame, outcomes: pd.DataFrame, *, score: str = "U", n_draws: int = 10, seed=0
) -> pd.DataFrame:
    """Does the image's *own* synthetic response matter? (001_... Appendix E.1, Table 25.)

    For each model, the score is reassigned among the clean-correct evaluation images of the
    same class by a uniformly random derangement (no image keeps its own value; ``n_draws``
    seeded draws, AUROC averaged), or replaced by the leave-one-out class mean of the other
    images' values. Images alone in their class have no control value and are left out of
    every column, so all AUROCs use the same non-singleton subset.

    Parameters
    ----------
    scores, outcomes : DataFrame
        As in :func:`screening_metrics`.
    score : str, default="U"
    n_draws : int, default=10
    seed : int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row per (model, source, condition): ``model, source, condition, n, n_fail,
        auroc_S, auroc_score, auroc_derangement, auroc_loo, gap`` (``auroc_score -
        auroc_derangement``).
    """
    _scores_iv(scores, [score, "S"])
    if isinstance(n_draws, (bool, np.bool_)) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"`n_draws` must be a positive int; got {n_draws!r}.")
    rng = as_generator(seed)
    rec = _outcome_matrix(scores, outcomes)
    raw = scores[score].to_numpy(dtype=np.float64)
    sign = RISK_SIGN[score]
    labels = scores["true_label"].to_numpy()
    models = scores["model"].astype(str).to_numpy()
    deranged = np.full((n_draws, len(scores)), np.nan)
    loo = np.full(len(scores), np.nan)
    for model in sorted(pd.unique(models)):
        in_model = np.flatnonzero((models == model) & np.isfinite(raw))
        for label in np.unique(labels[in_model]):
            members = in_model[labels[in_model] == label]
            if members.size < 2:
                continue
            perms = _derangements(members.size, n_draws, rng)
            deranged[:, members] = raw[members][perms]
            loo[members] = (raw[members].sum() - raw[members]) / (members.size - 1)
    risk_score = sign * raw
    risk_s = scores[risk_column("S")].to_numpy(dtype=np.float64)
    out = []
    for (model, source, cond), cell in rec.groupby(["model", "source", "condition"], sort=True):
        rows = cell["row"].to_numpy()
        keep = np.isfinite(loo[rows])
        rows = rows[keep]
        f = cell["failed"].to_numpy()[keep]
        if rows.size == 0:
            continue
        ones = np.ones((1, rows.size))
        auc = {
            name: roc_auc_rows(f[None], r, ones)[0]
            for name, r in (("S", risk_s[rows]), ("score", risk_score[rows]), ("loo", sign * loo[rows]))
        }
        der = np.mean([roc_auc_rows(f[None], sign * deranged[d, rows], ones)[0] for d in range(n_draws)])
        out.append(
            (model, source, cond, rows.size, int(f.sum()), auc["S"], auc["score"], der, auc["loo"], auc["score"] - der)
        )
    return pd.DataFrame(
        out,
        columns=[
            "model",
            "source",
            "condition",
            "n",
            "n_fail",
            "auroc_S",
            "auroc_score",
            "auroc_derangement",
            "auroc_loo",
            "gap",
        ],
    )


# ------------------------------------------------------------------------------------------
# recapture queue
# ------------------------------------------------------------------------------------------
def recapture_queue(
    scores: pd.DataFrame, *, score: str = "U", budget: float = 0.1, outcomes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The ranked list of images to re-test physically, per model, at a budget.

    Each model's clean-correct evaluation images are ranked by ``risk_<score>`` (larger
    first); ``k = max(1, round(q n))`` are to be re-tested. Images tied with the ``k``-th
    place share the remaining places: every member of that tie group is listed with
    ``selection_prob = (k - #above) / #tied`` (so the column sums to ``k``); list order within
    a tie is by ``record_id``. Images without a defined score are not ranked.

    Parameters
    ----------
    scores : DataFrame
        Output of :func:`screening_scores`.
    score : str, default="U"
    budget : float, default=0.1
        Fraction ``q`` in (0, 1].
    outcomes : DataFrame, optional
        Paired records of real conditions already observed for these images. Adds the
        per-image ``n_conditions``, ``n_failed`` and ``expected_failures`` (``selection_prob
        * n_failed``) and, repeated on every row of a model, the queue's totals pooled over
        conditions: ``queue_expected_failures``, ``total_failures``, ``coverage`` (their ratio)
        and ``ceiling`` = ``sum_c min(k, n_fail_c) / sum_c n_fail_c`` (per-condition ceilings
        weighted by failures; per-condition values come from :func:`screening_metrics`).

    Returns
    -------
    DataFrame
        ``model, rank, record_id, true_label, <score>, risk, selection_prob, cutoff_tie, k,
        n`` (+ outcome columns), ready for ``to_csv(index=False)``.

    Examples
    --------
    >>> s = pd.DataFrame({"model": "m", "record_id": [1, 2, 3, 4], "true_label": 0,
    ...                   "U": [0.2, 0.5, 0.5, 0.9], "risk_U": [-0.2, -0.5, -0.5, -0.9]})
    >>> recapture_queue(s, budget=0.5)[["rank", "record_id", "selection_prob"]].to_string(index=False)
    ' rank  record_id  selection_prob\\n    1          1             1.0\\n    2          2             0.5\\n    3          3             0.5'
    """
    _scores_iv(scores, [score])
    budget = _budgets_iv(budget)[0]
    if score not in scores.columns:
        raise ValueError(f"`scores` has no column {score!r}; pass the output of screening_scores.")
    risk_all = scores[risk_column(score)].to_numpy(dtype=np.float64)
    models = scores["model"].astype(str).to_numpy()
    ids = scores["record_id"].to_numpy()
    fails_per_row = n_cond_per_row = None
    totals = {}
    if outcomes is not None:
        rec = _outcome_matrix(scores, outcomes)
        # Failures of images without a score are outside the ranking, as in screening_metrics.
        rec = rec.loc[np.isfinite(risk_all[rec["row"].to_numpy()])]
        rows = rec["row"].to_numpy()
        fails_per_row = np.bincount(rows, weights=rec["failed"].to_numpy(), minlength=len(scores))
        n_cond_per_row = np.bincount(rows, minlength=len(scores))
        per_cond = rec.groupby(["model", "source", "condition"], sort=False)["failed"].sum()
        totals = {m: grp.to_numpy() for m, grp in per_cond.groupby(level="model", sort=False)}
    parts = []
    for model in pd.unique(models):
        rows = np.flatnonzero((models == model) & np.isfinite(risk_all))
        if rows.size == 0:
            continue
        rows = rows[np.lexsort((ids[rows], -risk_all[rows]))]
        risk = risk_all[rows]
        n = rows.size
        k = int(budget_sizes(budget, n)[()])
        starts = tie_starts(risk)
        size = np.diff(np.r_[starts, n])
        before = starts
        take = np.clip(k - before, 0, size)
        prob = np.repeat(take / size, size)
        partial = np.repeat((take > 0) & (take < size), size)
        listed = prob > 0
        frame = pd.DataFrame(
            {
                "model": model,
                "rank": np.arange(1, listed.sum() + 1),
                "record_id": ids[rows][listed],
                "true_label": scores["true_label"].to_numpy()[rows][listed],
                score: scores[score].to_numpy()[rows][listed],
                "risk": risk[listed],
                "selection_prob": prob[listed],
                "cutoff_tie": partial[listed],
                "k": k,
                "n": n,
            }
        )
        if fails_per_row is not None:
            frame["n_conditions"] = n_cond_per_row[rows][listed]
            frame["n_failed"] = fails_per_row[rows][listed].astype(np.int64)
            frame["expected_failures"] = frame["selection_prob"] * frame["n_failed"]
            per_condition = totals.get(model, np.zeros(0))
            total = float(per_condition.sum())
            frame["queue_expected_failures"] = frame["expected_failures"].sum()
            frame["total_failures"] = int(total)
            frame["coverage"] = frame["queue_expected_failures"] / total if total > 0 else np.nan
            frame["ceiling"] = np.minimum(k, per_condition).sum() / total if total > 0 else np.nan
        parts.append(frame)
    if not parts:
        raise ValueError(f"no image has a defined {score!r} score; nothing to queue.")
    return pd.concat(parts, ignore_index=True)
