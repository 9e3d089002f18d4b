"""Recapture queue: which images deserve a real (physical) re-test under a limited budget?"""

from __future__ import annotations

import html
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from core.views.recapture import (
    MAX_RESAMPLE_FACTOR,
    ModelFitWarning,
    counted,
    defined_scores,
    demo_probe_image,
    image_fit,
    open_upload,
    parse_floats,
    png_data_uri,
    probe_image,
    recapture_queue,
    run_probes,
    screening_metrics,
    screening_scores,
)
from core.views.screening import SIMULATED_SOURCE, coverage_by_budget, failure_source
from core.views.uploads import UPLOAD_LIMIT_MB, FilesUpload, screening_files, upload_digest
from ui.auth import current_access
from ui.components import chart, guarded, page_header, run_page, table, vega_spec
from ui.entry import ensure_entrypoint
from ui.layout import flow_columns
from ui.paired_data import ScreeningData, demo_condition, demo_images, demo_probes_of, paired_data, screening_data
from ui.state import ProbeRun, RecaptureState, paired_bounds_state, recapture_state

ensure_entrypoint()

page_header(
    "Recapture queue",
    "Physical re-tests (print, photograph, re-acquire) are expensive. Each clean-correct test image is "
    "scored from the model's own outputs on cheap synthetic probes, and the top of the ranking is re-tested "
    "first. The curves show which share of the images that fail under the re-capture conditions (yours, or "
    "the demo's simulated ones; never the probes themselves) each score puts inside the budget. Scores are "
    "used as **risks (larger = riskier)**: low mean true-class "
    "probability under probes (**U**), low clean confidence (**S**), large drop **δ = S − U**, few probes "
    "still right (**ret**), low probe alignment (**A3**) and low test-time-augmentation probability (**TTA**). "
    "The demo's recapture conditions are *simulated* print-and-recapture.",
)

_CURVE_SCORES = ("U", "S", "delta", "ret", "A3", "TTA")
_BUDGETS = np.arange(1, 51) / 50
_POOLED = "all recapture conditions (mean)"
_GALLERY = 12  # queue images shown large
_SIDE = 112  # px: thumbnails and probe images are enlarged (nearest neighbour) to at least this


# Caches are keyed by the data's key ("demo" or the upload's content hash and outcomes); the
# frames themselves are not hashed.
@st.cache_data(show_spinner="Evaluating every score under every condition…", max_entries=32)
def _metrics(key: str, model: str, *, _scores: pd.DataFrame, _outcomes: pd.DataFrame) -> pd.DataFrame:
    """:func:`screening_metrics` of ``model``'s scores against ``_outcomes``, that model's outcomes."""
    mine = _scores[_scores["model"] == model]
    return screening_metrics(mine, _outcomes, score_names=_defined(mine), budgets=list(_BUDGETS))


def _defined(scores: pd.DataFrame) -> list[str]:
    """Scores with at least one defined value (an upload without prob_* has no A3, without transforms no TTA)."""
    return defined_scores(scores, _CURVE_SCORES)


def _run() -> ProbeRun | None:
    return recapture_state().probe_run


def _image(data: ScreeningData, record_id) -> np.ndarray | None:
    """The image behind ``record_id`` as the model saw it (uint8, (H, W) or (H, W, C)), or None."""
    if data.key == "demo":
        shown = demo_images()
        where = np.flatnonzero(shown.image_ids == record_id)
        return shown.images[where[0]] if where.size else None
    run = _run()
    if run is None or not data.key.startswith("probe:"):
        return None
    images, spec = run.images, run.result.manifest["input"]
    position = run.positions.get(record_id)
    if position is None:
        return None
    return images.read([position], size=(spec["height"], spec["width"]), channels=spec["channels"])[0]


@st.cache_data(max_entries=8, show_spinner=False)
def _thumbnails(key: str, model: str, ids: tuple, *, _data: ScreeningData) -> dict:
    out = {}
    for r in ids:
        img = _image(_data, r)
        if img is not None:
            out[r] = png_data_uri(img, min_side=64)
    return out


@st.cache_resource(max_entries=400, show_spinner=False)
def _demo_probe_image(probe: str, position: int) -> np.ndarray:
    """One demo image under one probe: rendered alone when the probe draws nothing at random."""
    alone = demo_probe_image(demo_images(), position, probe)
    return alone if alone is not None else demo_condition(probe)[position]


def _probe_view(data: ScreeningData, record_id, probe: str) -> np.ndarray | None:
    """What the model saw of ``record_id`` under ``probe``."""
    if data.key == "demo":
        where = np.flatnonzero(demo_images().image_ids == record_id)
        return _demo_probe_image(probe, int(where[0])) if where.size else None
    run = _run()
    image = _image(data, record_id)
    if image is None:
        return None
    return probe_image(image, probe, position=run.positions[record_id], seed=int(run.result.manifest["seed"]))


def _has_probe_rows(data: ScreeningData) -> bool:
    """Whether the per-probe outputs behind ``data``'s scores are at hand (the demo pool's, or
    this session's probe run; an upload of scores alone has none)."""
    return data.key == "demo" or (_run() is not None and data.key.startswith("probe:"))


def _probe_rows(data: ScreeningData, model: str, record_id) -> pd.DataFrame:
    """The per-probe outputs of one image of one model (:func:`_has_probe_rows` must hold)."""
    if data.key == "demo":
        return demo_probes_of(model, int(record_id))
    run = _run()
    rows = pd.concat([run.result.probes, run.result.natural], ignore_index=True)
    return rows[(rows["model"].astype(str) == model) & (rows["record_id"] == record_id)]


@st.cache_data(max_entries=4, show_spinner="Scoring every clean-correct image from its probe outputs…")
def _run_scores(key: str, *, _probes: pd.DataFrame, _clean: pd.DataFrame) -> pd.DataFrame:
    with warnings.catch_warnings():
        # Without development images and real outcomes, class_delta and g_SU are NaN.
        warnings.simplefilter("ignore", UserWarning)
        return screening_scores(_probes, _clean)


def _probe_run_data(run: dict) -> ScreeningData:
    result = run.result
    probes = pd.concat([result.probes, result.natural], ignore_index=True)
    scores = _run_scores(run.key, _probes=probes, _clean=result.clean)
    return ScreeningData(f"probe:{run.key}", run.label, scores, None, images=True)


def _probe_widgets() -> None:
    """Uploaders of an ONNX model and an image zip; "Run the probes" stores the run in ``recapture_probe_run``."""
    st.markdown(
        "Upload an **ONNX image classifier** (one float input, NCHW or NHWC, with a fixed height and width; "
        "output logits or probabilities) and a **zip of PNG / JPEG test images** with a labels CSV (columns "
        "`file,label`, optional `split` = `dev`/`eval`) inside the zip or alongside; a label is a class index "
        "or a class name of the model. Every image is resized "
        "to the model's input, scaled to [0, 1], normalised with the mean and std below, and run clean, under "
        "the 18 corruption probes (9 types × severities 2 and 4) and the 18 natural transforms. Nothing is "
        "unpickled; archive members outside the zip's root, links and non-image files are refused. The same "
        f"as `python -m core probe`. Limits: {UPLOAD_LIMIT_MB} MB per file. You are warned before the probes "
        f"run when the images are resized more than {MAX_RESAMPLE_FACTOR:g} times or their colour mode converted "
        "to fit the model, and after the clean pass when its accuracy is near chance."
    )
    kwargs = {"max_upload_size": UPLOAD_LIMIT_MB}
    c1, c2 = st.columns(2)
    model_f = c1.file_uploader("ONNX model (.onnx)", type=["onnx"], key="recap_onnx_file", **kwargs)
    zip_f = c2.file_uploader("Images (.zip of PNG / JPEG)", type=["zip"], key="recap_zip_file", **kwargs)
    c1, c2 = st.columns(2)
    labels_f = c1.file_uploader("Labels CSV (if not inside the zip)", type=["csv"], key="recap_labels_file", **kwargs)
    classes_f = c2.file_uploader(
        "Class names (optional)",
        type=["txt", "csv"],
        key="recap_classes_file",
        help="One class name a line, in the order of the model's outputs: needed when the labels are class "
        "names and the model does not list its classes in its metadata ('classes').",
        **kwargs,
    )
    c1, c2 = st.columns(2)
    c1.text_input(
        "Mean per channel (after scaling to [0, 1])",
        key=RecaptureState.mean.key,
        placeholder="0  (e.g. 0.485,0.456,0.406)",
    )
    c2.text_input("Std per channel", key=RecaptureState.std.key, placeholder="1  (e.g. 0.229,0.224,0.225)")
    if st.button(
        "Run the probes",
        type="primary",
        icon=":material/play_arrow:",
        key="recap_run_probes",
        disabled=model_f is None or zip_f is None,
    ):
        files = {
            "model": (model_f.name, model_f.getvalue()),
            "images": (zip_f.name, zip_f.getvalue()),
            "labels": None if labels_f is None else (labels_f.name, labels_f.getvalue()),
            "classes": None if classes_f is None else (classes_f.name, classes_f.getvalue()),
        }
        bar = st.progress(0.0, text="Reading the model and the images…")

        def progress(label: str, done: int, total: int) -> None:
            bar.progress(done / total, text=f"Probing: {label} (batch {done} of {total})")

        with guarded("Probing the uploaded model"):
            names = ", ".join(f[0] for f in files.values() if f is not None)
            mean = parse_floats(recapture_state().mean, "Mean per channel")
            std = parse_floats(recapture_state().std, "Std per channel")
            model, images = open_upload(
                files["model"],
                files["images"],
                files["labels"],
                files["classes"],
                mean=mean,
                std=std,
                limit_mb=UPLOAD_LIMIT_MB,
                actor=current_access().actor,
            )
            # Shown before the probes run (they take a while); the run's warnings stay below.
            fit = image_fit(images, model.input)
            early = st.empty()
            if fit.messages:
                early.warning("\n\n".join(fit.messages), icon=":material/warning:")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ModelFitWarning)  # shown from the run's manifest
                result = run_probes(
                    model,
                    images,
                    model_name=Path(model_f.name).stem or "model",
                    batch_size=64,
                    progress=progress,
                )
            early.empty()
            key = upload_digest(files) + f":{mean}:{std}"
            recapture_state().probe_run = ProbeRun(
                key=key,
                label=names,
                result=result,
                images=images,
                positions={r: i for i, r in enumerate(result.clean["record_id"])},
            )
            recapture_state().inspect = None
        bar.empty()
    run = _run()
    if run:
        m = run.result.manifest
        c1, c2 = st.columns([5, 1])
        c1.caption(
            f"Ranking **{run.label}**: {counted(m['n_images'], 'image')}, input {m['input']['layout']} "
            f"{m['input']['width']}×{m['input']['height']}×{m['input']['channels']}, output {m['output']}, "
            f"clean accuracy {m['clean_accuracy']:.1%}. It lives in this browser session only."
        )
        if c2.button("Forget the run", type="tertiary", icon=":material/delete:", key="recap_forget_run"):
            recapture_state().probe_run = None
            st.rerun()
        for message in m.get("warnings", ()):
            st.warning(message, icon=":material/warning:")


def _upload_widgets() -> None:
    """File uploaders of the per-probe and clean outputs; a complete pair replaces ``recapture_upload``."""
    st.markdown(
        "**Per-probe outputs**, one row per (model, image, probe): `model, record_id, probe, kind, "
        "true_label, pred, max_prob, true_prob`, optional `prob_0 … prob_{C-1}` (needed for A3); `kind` is "
        "`corruption` (behind U, δ, ret, A3) or `transform` (behind TTA). Upload several files at once "
        "(the probe command's `probes.parquet` **and** `natural.parquet`: without the second, TTA is "
        "missing), or one **zip of the probe's output folder**, which also holds the clean outputs. "
        "**Clean outputs**, one row per "
        "(model, image): `model, record_id, true_label, pred, max_prob, true_prob`, optional `split` "
        "(`dev` / `eval`; only clean-correct `eval` images are ranked) and `group`. The failures that judge "
        "the scores come from the paired records uploaded on the *Paired bounds* page (their perturbed side), "
        "when their model names and record ids match; the probe's own corruptions (source `synthetic`) are "
        "never used for that: the scores are computed from them."
    )
    c1, c2 = st.columns(2)
    probe_files = c1.file_uploader(
        "Per-probe outputs (CSV or Parquet, several files; or a .zip of the output folder)",
        key="recap_probes_file",
        type=["csv", "parquet", "pq", "zip"],
        accept_multiple_files=True,
        max_upload_size=UPLOAD_LIMIT_MB,
    )
    clean_f = c2.file_uploader(
        "Clean outputs (CSV or Parquet; not needed with a zip)",
        key="recap_clean_file",
        type=["csv", "parquet", "pq"],
        max_upload_size=UPLOAD_LIMIT_MB,
    )
    files = None
    with guarded("Reading the uploaded probe outputs"):
        files = screening_files(
            [(f.name, f.getvalue()) for f in probe_files or ()],
            None if clean_f is None else (clean_f.name, clean_f.getvalue()),
        )
    if files is not None:
        upload = FilesUpload(kind="screening", files=files)
        if upload != recapture_state().upload:
            recapture_state().upload = upload
    current = recapture_state().upload
    if current:
        names = current.names
        c1, c2 = st.columns([5, 1])
        c1.caption(
            f"Ranking the uploaded {names}. Upload other files to replace them; they live in this browser session only."
        )
        if c2.button("Forget the upload", type="tertiary", icon=":material/delete:", key="recap_forget"):
            recapture_state().upload = None
            st.rerun()


def _uploaded_outcomes() -> tuple[pd.DataFrame | None, str | None, str | None]:
    """Paired records of one source from the Paired bounds upload, with their cache key, or
    ``(None, None, why)``: ``why`` says why there are none to use (None when nothing is uploaded)."""
    if paired_bounds_state().data_source != "paired":
        return None, None, None
    data = None
    with guarded("Reading the paired records uploaded on Paired bounds"):
        data = paired_data()
    if data is None:
        return None, None, None
    kinds = [failure_source(s) for s in sorted(data.records["source"].unique())]
    sources = [k.source for k in kinds if k.usable]
    left_out = [k for k in kinds if not k.usable]
    if not sources:
        why = " ".join(k.reason for k in left_out)
        return None, None, why[:1].upper() + why[1:]
    if recapture_state().outcome_source not in sources:
        recaptures = [s for s in sources if "recapture" in s]
        recapture_state().outcome_source = (recaptures or sources)[0]
    st.selectbox(
        "Failures from the source",
        sources,
        key=RecaptureState.outcome_source.key,
        persist_state="session",
        help="The conditions of this source in your paired records count as the re-tests: an image failed a "
        "condition when its perturbed prediction is wrong." + "".join(f" Not offered: {k.reason}" for k in left_out),
    )
    source = recapture_state().outcome_source
    return data.records[data.records["source"] == source], f"{data.key}:{source}", None


def _body() -> None:
    # Uploads and probe runs only for a role that may do them (a viewer sees neither; a reviewer
    # unless the team file grants them): the checks in the handlers refuse the others anyway.
    access = current_access()
    if access.may("upload") and access.may("run"):
        with st.expander(
            "Probe your own ONNX model on your images", expanded=bool(_run()), icon=":material/model_training:"
        ):
            _probe_widgets()
    if access.may("upload"):
        with st.expander(
            "Your per-probe outputs", expanded=bool(recapture_state().upload), icon=":material/upload_file:"
        ):
            _upload_widgets()
    else:
        st.caption(f"Images: the shipped demo pool (uploading needs the {access.needs('upload')} role).")
    run = _run()
    if run:
        data = None
        with guarded("Scoring the probed images"):
            data = _probe_run_data(run)
        if data is not None:
            st.caption(f"Images: **{data.label}** (probed here).")
            _queue(data)
        return
    uploaded = bool(recapture_state().upload)
    if not uploaded and paired_bounds_state().data_source != "demo":
        st.info(
            "**This page shows the shipped demo pool, not your uploaded records.** Ranking images for a "
            "re-test needs the model's outputs on every synthetic probe of every image, which paired or "
            "unpaired records do not carry: upload them under *Your per-probe outputs* above (or use "
            "`python -m core paired --records FILE --probes FILE --clean-outputs FILE --tau T --out DIR`).",
            icon=":material/info:",
        )
    outcomes, outcomes_key, left_out = _uploaded_outcomes() if uploaded else (None, None, None)
    data = None
    with guarded("Reading the uploaded probe outputs"):
        data = screening_data(outcomes, outcomes_key)
    if data is None:
        return
    if uploaded:
        st.caption(f"Images: **{data.label}**.")
    _queue(data, left_out=left_out)


def _failure_name(data: ScreeningData) -> str:
    """What the page calls the failures judging the scores: never "real" for a simulation."""
    if data.key == "demo":
        return failure_source(SIMULATED_SOURCE).name
    return failure_source(recapture_state().outcome_source or "").name


def _queue(data: ScreeningData, *, left_out: str | None = None) -> None:
    scores = data.scores
    models = sorted(scores["model"].unique())
    if recapture_state().model not in models:
        recapture_state().model = models[0]
    # Two per row at 1000 px: four columns cut "cnn-w16" and "all recapture conditions".
    c1, c2, c3, c4 = flow_columns([2, 3, 2, 3], key="recap_controls", min_width=[170, 230, 170, 230], gap="small")
    c1.selectbox("Model", models, key=RecaptureState.model.key, persist_state="session")
    model = recapture_state().model
    mine = scores[scores["model"] == model]
    names = _defined(mine)
    # Only the outcomes of this model's ranked images can judge the ranking.
    model_outcomes = data.outcomes_of(model)
    outcomes = model_outcomes
    if outcomes is not None:
        outcomes = outcomes[outcomes["record_id"].isin(mine["record_id"])]
        outcomes = outcomes if len(outcomes) else None
    if outcomes is not None:
        conditions = sorted(outcomes["condition"].unique())
        if recapture_state().condition not in [_POOLED, *conditions]:
            recapture_state().condition = _POOLED
        c2.selectbox(
            "Recapture condition",
            [_POOLED, *conditions],
            key=RecaptureState.condition.key,
            persist_state="session",
            help="p = print level, g = geometry level, e = exposure level of the simulated recapture"
            if data.key == "demo"
            else "A condition of the chosen source of your paired records",
        )
    if recapture_state().score not in names:
        recapture_state().score = names[0]
    c3.selectbox("Queue ranked by", names, key=RecaptureState.score.key, persist_state="session")
    c4.slider(
        "Re-test budget (% of clean-correct images)",
        1,
        50,
        key=RecaptureState.budget.key,
        format="%d%%",
        persist_state="session",
    )
    score, budget = recapture_state().score, recapture_state().budget / 100
    condition = recapture_state().condition if outcomes is not None else _POOLED
    cell = outcomes
    if outcomes is not None and condition != _POOLED:
        cell = outcomes[outcomes["condition"] == condition]
    queue = recapture_queue(mine, score=score, budget=budget, outcomes=cell)

    m = flow_columns(4, key="recap_metrics", min_width=210, gap="small")
    m[0].metric("Clean-correct test images", f"{len(mine):,}")
    m[1].metric("Re-tests in the queue", f"{int(queue['k'].iloc[0]):,}")
    if outcomes is None:
        st.info(
            f"**No failures to judge the scores by:** {left_out or _why_no_outcomes(data)} The queue below "
            "ranks the images by the score alone; the coverage curves need the outcomes and are hidden.",
            icon=":material/info:",
        )
    else:
        failures = _failure_name(data)
        m[2].metric(
            "Failures found (expected)",
            f"{queue['coverage'].iloc[0]:.0%}",
            help=f"Share of all {failures.lower()} (pooled over the chosen conditions) that the queue re-tests",
        )
        m[3].metric("Best possible at this budget", f"{queue['ceiling'].iloc[0]:.0%}")
        coverage = coverage_by_budget(
            _metrics(data.key, model, _scores=scores, _outcomes=model_outcomes),
            condition=None if condition == _POOLED else condition,
        )
        budgets, curves, ceiling, random = coverage.budgets, coverage.curves, coverage.ceiling, coverage.random
        chart(
            vega_spec(
                "coverage_spec",
                budgets,
                curves,
                ceiling=ceiling,
                random=random,
                selected=budget,
                highlight=score,
                title=f"{failures} found within the re-test budget",
                y_title="failure coverage (share of failures found)",
            ),
            "Higher is better. Each line ranks the images by one score; dashed grey is the best any ranking "
            "could do, dotted grey is picking images at random. Ties at the cut-off are shared out (prorated).",
        )

    k = int(queue["k"].iloc[0])
    st.subheader(f"Queue: re-test {'this' if k == 1 else 'these'} {counted(k, 'image')} first")
    shown = queue
    if data.images:
        thumbs = _thumbnails(data.key, model, tuple(queue["record_id"].tolist()), _data=data)
        shown = queue.assign(image=queue["record_id"].map(thumbs.get))
    # The queue ranks by risk = ±score (SPEC B.5: −U, −S, δ, …); a negated probability reads as
    # nonsense ("risk −0.4"), so the score is shown as it is, with the direction that ranks first.
    lower_first = bool(len(queue)) and np.allclose(queue["risk"], -queue[score], equal_nan=True)
    direction = "lowest first" if lower_first else "highest first"
    columns = ["rank", "image", "record_id", "true_label", score, "selection_prob", "n_failed", "n_conditions"]
    shown = shown[[c for c in columns if c in shown.columns]]
    caption = (
        f"Ranked by {score}, {direction} (risk = {'−' if lower_first else ''}{score}, larger = riskier; the "
        "CSV has the risk column). Selection probability < 1 marks images tied at the cut-off (they share "
        "the last places)."
    )
    if outcomes is not None:
        caption += " n failed: in how many of the chosen conditions the image was misclassified."
    table(
        shown,
        name=f"recapture queue {model} {score} {budget:.0%}",
        key="recap_table",
        height=420,
        download=queue,
        caption=caption,
        column_config={
            "image": st.column_config.ImageColumn("image", width="small"),
            score: st.column_config.NumberColumn(f"{score} ({direction})", format="%.3f"),
        },
    )
    if data.key == "demo" and not data.images:
        st.caption("These records ship no images; the queue lists record ids only.")
    if data.images:
        _gallery(data, queue, score)
        _inspect(data, model, queue, score)


def _gallery(data: ScreeningData, queue: pd.DataFrame, score: str) -> None:
    top = queue.head(_GALLERY)
    st.markdown(f"**Top of the queue** ({len(top)} of {len(queue)}), as the model sees them:")
    tiles = []
    for row in top.itertuples(index=False):
        img = _image(data, row.record_id)
        if img is not None:
            tiles.append((img, f"#{row.rank} · {row.record_id} · {score} {getattr(row, score):.2f}"))
    _tiles(tiles)


def _probe_label(probe: str) -> str:
    """A probe's name as a tile caption: "jpeg_compression s2" -> "jpeg compression s2".

    A caption breaks only at spaces; at 110 px the long names otherwise broke mid-word
    ("jpeg_compressio / n").
    """
    return probe.replace("_", " ")


def _tiles(tiles: list[tuple[np.ndarray, str]], width: int = 110) -> None:
    """Images with captions, ``width`` px each, as many to a row as fit.

    Fixed-width tiles in one wrapping row: seven columns of a 540 px page (1000 px with the
    sidebar) were 70 px wide and broke the probe names mid-word ("shot_noi se s2"). One HTML
    block of inline PNGs (enlarged, nearest neighbour, to at least ``_SIDE`` px: crisp pixels,
    nothing invented) rather than an image element and a container per tile: the page drew
    about fifty of each, and the browser fetched each image separately.
    """
    figures = "".join(
        f'<figure><img src="{png_data_uri(img, min_side=_SIDE)}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        for img, caption in tiles
    )
    st.html(
        f'<div class="audit-tiles">{figures}</div><style>'
        f".audit-tiles {{display: flex; flex-wrap: wrap; gap: 0.5rem;}}"
        f".audit-tiles figure {{width: {width}px; margin: 0;}}"
        ".audit-tiles img {width: 100%; image-rendering: pixelated; display: block;}"
        ".audit-tiles figcaption {font-size: 0.8rem; opacity: 0.7; text-align: center; overflow-wrap: break-word;}"
        "</style>"
    )


def _inspect(data: ScreeningData, model: str, queue: pd.DataFrame, score: str) -> None:
    """The selected image under every probe, with the model's true-class probability under each."""
    if not _has_probe_rows(data):
        return
    st.subheader("Why is it queued?")
    ids = queue["record_id"].tolist()
    if recapture_state().inspect not in ids:
        recapture_state().inspect = ids[0]
    rank = dict(zip(queue["record_id"], queue["rank"]))
    record = st.selectbox(
        "Image of the queue", ids, key=RecaptureState.inspect.key, format_func=lambda r: f"#{rank[r]} · {r}"
    )
    mine = _probe_rows(data, model, record)
    scored = data.scores[(data.scores["model"] == model) & (data.scores["record_id"] == record)].iloc[0]
    image = _image(data, record)
    st.caption(
        f"Clean: the model gives the true class a probability of **S = {scored['S']:.3f}** (its confidence, "
        "not the chance that it is right); under the probes its mean true-class probability is "
        f"**U = {scored['U']:.3f}**. Each probe image below is exactly what the model was given, with its "
        "true-class probability; ✗ marks a probe on which it is wrong."
    )
    for kind, title in (
        ("corruption", "Corruption probes (behind U, δ, ret, A3)"),
        ("transform", "Natural transforms (behind TTA)"),
    ):
        part = mine[mine["kind"] == kind]
        if part.empty:
            continue
        with st.expander(f"{title}: {len(part)}", expanded=kind == "corruption"):
            tiles = [(image, f"clean · p(true) {scored['S']:.2f}")]
            for row in part.itertuples(index=False):
                view = _probe_view(data, record, row.probe)
                if view is not None:
                    wrong = " ✗" if int(row.pred) != int(row.true_label) else ""
                    tiles.append((view, f"{_probe_label(row.probe)} · p(true) {row.true_prob:.2f}{wrong}"))
            _tiles(tiles)


def _why_no_outcomes(data: ScreeningData) -> str:
    if data.key.startswith("probe:"):
        return (
            "a probe run has no real re-captures. Re-capture the images (print / screen and photograph), then "
            "run `python -m core probe ... --perturbed DIR2` and `python -m core paired --outcome-source "
            "recapture ...`, or upload its records on *Paired bounds* and its probe tables here."
        )
    if not data.has_outcomes:
        return (
            "upload paired records on the *Paired bounds* page (*Upload paired records*) whose perturbed side "
            "holds the real re-tests of these images."
        )
    return (
        f"the chosen source of your paired records has no record of model {recapture_state().model!r} "
        "with a record id of the ranked images (clean-correct evaluation images); check the model names and "
        "record ids."
    )


run_page(_body, "Recapture queue")
