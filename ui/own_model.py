""" "Your model": audit an uploaded ``.skops`` / ``.onnx`` model or open a saved audit folder.

The source lives in ``st.session_state["own_audit"]``: None (the tool's own models), ``{"kind":
"folder", "path": DIR}`` (``--audit DIR`` or a folder of the audits directory) or ``{"kind":
"upload", "files": {role: (file name, bytes)}, "target", "trust", "feature_order"}``. Every
tabular page then shows that audit (:func:`ui.data.current_audit`). Nothing is unpickled:
models are read by :func:`core.tabular.model_files.load_model_bytes` and folders by
:func:`core.tabular.audit_folder.open_audit_folder`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from core.tabular.audit import AuditResult
from core.tabular.audit_folder import (
    VIEW_DIR,
    SavedAudit,
    list_audit_folders,
    open_audit_folder,
    reopen_audit,
    saved_result,
)
from core.tabular.model_files import load_model_bytes, read_table
from core.tabular.own_model import audit_model
from core.views.uploads import UPLOAD_LIMIT_MB, table_columns, upload_digest
from ui.audit_jobs import foreground_wait_s, job_for, show_progress_and_stop
from ui.errors import guarded

__all__ = [
    "default_audits_dir",
    "live_model_off",
    "own_audit",
    "own_label",
    "own_mode",
    "render_own_model_sidebar",
    "saved_folder",
]


def default_audits_dir() -> Path:
    """``audits`` in the user data directory (beside the review database)."""
    import platformdirs

    return platformdirs.user_data_path("reliability-audit", appauthor=False) / "audits"


def own_mode() -> bool:
    """Whether the tabular pages show a model brought by the user."""
    return st.session_state.get("own_audit") is not None


def _stamp(path: Path) -> str:
    files = [
        path / n
        for n in ("protocol.json", "_task.zip", "certificates.parquet", "view/meta.json", "view/certificates.json.gz")
    ]
    return ":".join(f"{f.stat().st_mtime_ns}-{f.stat().st_size}" if f.exists() else "-" for f in files)


@st.cache_resource(show_spinner="Opening the saved audit…", max_entries=8)
def _folder(path: str, stamp: str) -> SavedAudit:
    return open_audit_folder(path)


@st.cache_resource(show_spinner="Reading the saved audit…", max_entries=8)
def _folder_result(path: str, stamp: str) -> AuditResult:
    saved = _folder(path, stamp)
    if (saved.path / VIEW_DIR).is_dir():
        return saved_result(saved)  # the saved tables; the model (if it loads) only for the live panels
    if saved.task is None:
        raise ValueError(
            f"this folder was written before audit folders kept their tables for the pages ({VIEW_DIR}/), "
            f"and {saved.unavailable}, so it cannot be recomputed either. The saved summary and "
            "certificate table are on the Overview page; re-create the audit (`python -m core audit "
            "... --out DIR` or AuditResult.save) to see every page."
        )
    with st.spinner("Re-certifying the saved audit with its model (folder written before view/)…"):
        return reopen_audit(saved)


def live_model_off(result: AuditResult, what: str) -> bool:
    """Say why ``what`` (a panel that calls the model) is off, and return True, when the
    audit has no usable model (a saved audit whose model cannot be loaded)."""
    if result.model is not None:
        return False
    st.info(
        f"**{what} is off:** it calls the model, and {result.model_unavailable or 'no model is available'}. "
        "Everything else on this page comes from the saved tables. To turn it on, save the audit again with a "
        "loadable model (`python -m core audit ... --out DIR` or `AuditResult.save`), or name the extra skops "
        "types you trust when auditing (`--trust TYPE`).",
        icon=":material/power_off:",
    )
    return True


def _holdout(test, target: str):
    """Stratified half of the test table as the training (baseline) rows, seed 0."""
    rng = np.random.default_rng(0)
    labels = test[target].astype(str).to_numpy()
    base = np.zeros(len(test), dtype=bool)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        base[rng.permutation(idx)[: len(idx) // 2]] = True
    return test[base], test[~base]


def _upload_result(
    target: str, trust: tuple[str, ...], order: tuple[str, ...] | None, files: dict, progress=None
) -> AuditResult:
    if progress is not None:  # reading a .skops model imports skops (seconds): say so at once
        progress("load data", 0, 1)
    model_name, model_bytes = files["model"]
    test = read_table(files["test"][1], files["test"][0])
    if target not in test.columns:
        raise ValueError(f"target {target!r} is not a column of {files['test'][0]}.")
    if files.get("train") is not None:
        train = read_table(files["train"][1], files["train"][0])
    else:
        train, test = _holdout(test, target)
    labels = sorted({v.item() if isinstance(v, np.generic) else v for v in train[target].dropna().unique()}, key=str)
    model = load_model_bytes(model_bytes, model_name, trust=trust, feature_order=order, default_classes=labels)
    return audit_model(model, train, test, target=target, name=model_name, progress=progress)


def saved_folder() -> SavedAudit | None:
    """The open audit folder, or None (no folder is open)."""
    source = st.session_state.get("own_audit")
    if not source or source["kind"] != "folder":
        return None
    path = Path(source["path"])
    return _folder(str(path), _stamp(path))


def own_audit() -> AuditResult:
    """The audit of the user's model.

    A saved folder is shown from its saved tables (``result.model`` is None when its model
    cannot be loaded; :func:`live_model_off`).

    Raises
    ------
    ValueError
        The folder is unreadable, predates ``view/`` and has no loadable model, or the upload
        is invalid (the message says why).
    """
    source = st.session_state["own_audit"]
    if source["kind"] == "folder":
        saved = saved_folder()
        return _folder_result(str(saved.path), _stamp(saved.path))
    files = {role: tuple(v) for role, v in source["files"].items() if v is not None}
    target, trust = source["target"], tuple(source["trust"])
    order = tuple(source["feature_order"]) if source["feature_order"] else None
    # In the background like every new audit: the other pages stay usable while it runs.
    job = job_for(
        ("own", upload_digest(files), target, trust, order),
        f"your model {files['model'][0]}",
        lambda progress: _upload_result(target, trust, order, files, progress),
    )
    job.wait(foreground_wait_s())
    if not job.done:
        show_progress_and_stop([job])
    return job.result()


def own_label() -> str:
    source = st.session_state["own_audit"]
    if source["kind"] == "folder":
        return f"saved audit {Path(source['path']).name}"
    return f"your model {source['files']['model'][0]}"


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.replace("\n", ",").split(",") if v.strip()]


def render_own_model_sidebar() -> None:
    """The sidebar's "Your model" section."""
    st.subheader("Your model")
    if own_mode():
        st.caption(f"Showing **{own_label()}** on the tabular pages.")
        if st.button("Back to the tool's models", key="own_close", icon=":material/close:"):
            st.session_state["own_audit"] = None
            st.rerun()
    with st.expander("Audit a fitted model (.skops / .onnx)", icon=":material/upload_file:"):
        st.caption(
            "Only .skops (skops, trusted types) and .onnx (onnxruntime) are read — never pickles. "
            f"At most {UPLOAD_LIMIT_MB} MB a file."
        )
        model = st.file_uploader("Model", type=["skops", "onnx"], key="own_model_file", max_upload_size=UPLOAD_LIMIT_MB)
        test = st.file_uploader(
            "Test table (CSV / Parquet)", type=["csv", "parquet"], key="own_test_file", max_upload_size=UPLOAD_LIMIT_MB
        )
        train = st.file_uploader(
            "Training table (optional)",
            type=["csv", "parquet"],
            key="own_train_file",
            max_upload_size=UPLOAD_LIMIT_MB,
            help="Supplies the baseline and the noise scales. Without it, a stratified "
            "half of the test table (seed 0) is held out for that.",
        )
        if model is not None and test is not None:
            with guarded(f"Reading {test.name}"):
                columns = table_columns(test.getvalue(), test.name)
                if st.session_state["own_target"] not in columns:
                    st.session_state["own_target"] = None
                st.selectbox("Target column", columns, key="own_target", placeholder="choose the label column")
                st.text_input(
                    "Trusted skops types (comma-separated)",
                    key="own_trust",
                    help="Types outside skops' trusted set; the error lists them if needed.",
                )
                st.text_input(
                    "ONNX feature order (comma-separated)",
                    key="own_feature_order",
                    help="Only for an ONNX model with one 2-D input and no 'feature_order' metadata.",
                )
                if st.button(
                    "Audit my model", type="primary", key="own_run", disabled=st.session_state["own_target"] is None
                ):
                    st.session_state["own_audit"] = {
                        "kind": "upload",
                        "target": st.session_state["own_target"],
                        "trust": _names(st.session_state["own_trust"]),
                        "feature_order": _names(st.session_state["own_feature_order"]) or None,
                        "files": {
                            "model": (model.name, model.getvalue()),
                            "test": (test.name, test.getvalue()),
                            "train": (train.name, train.getvalue()) if train is not None else None,
                        },
                    }
                    st.rerun()
    with st.expander("Open a saved audit", icon=":material/folder_open:"):
        root = Path(st.session_state["audits_dir"])
        folders = list_audit_folders(root)
        st.caption(
            f"Audit folders in `{root}` (`--audits-dir`); write one with `python -m core audit ... --out` "
            "or `AuditResult.save`."
        )
        if not folders:
            st.caption("No audit folder there yet.")
            return
        names = [p.name for p in folders]
        if st.session_state["own_folder"] not in names:
            st.session_state["own_folder"] = names[0]
        st.selectbox("Audit folder", names, key="own_folder")
        if st.button("Open", key="own_open"):
            st.session_state["own_audit"] = {"kind": "folder", "path": str(root / st.session_state["own_folder"])}
            st.rerun()
