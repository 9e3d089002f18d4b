""" "Your model": audit an uploaded ``.skops`` / ``.onnx`` model or open a saved audit folder.

The source lives in ``own_model_state().audit``: None (the tool's own models), ``{"kind":
"folder", "path": DIR}`` (``--audit DIR`` or a folder of the audits directory) or ``{"kind":
"upload", "files": {role: (file name, bytes)}, "target", "trust", "feature_order"}`` — set only
once the uploaded model has loaded. ``own_offer`` holds a pending trust offer (the types a
``.skops`` file holds beyond skops' trusted set, and the upload waiting for them), ``own_error``
the form's last error. Every
tabular page then shows that audit (:func:`ui.data.current_audit`). Nothing is unpickled:
models are read by :func:`core.tabular.model_files.load_model_bytes` and folders by
:func:`core.tabular.audit_folder.open_audit_folder`.

On a server with sign-in, uploading, trusting skops types, starting the audit and saving it in
the shared audits folder each need the role the team file gives them (admin by default,
:mod:`core.reviews.permissions`): the form, the trust button and the save are not offered to
anyone who may not use them, and each step is checked again (``check(actor, ...)``) right
before it is done, in the callback or the background job, with the signed-in user's
:attr:`ui.auth.Access.actor`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from core.reviews.permissions import ACTIONS, Actor, check
from core.reviews.team import AccessRefused
from core.tabular.audit import AuditResult
from core.tabular.audit_folder import (
    VIEW_DIR,
    SavedAudit,
    list_audit_folders,
    open_audit_folder,
    reopen_audit,
    saved_result,
)
from core.tabular.model_files import load_model_bytes
from core.tabular.never_trusted import refusal_reason
from core.tabular.own_model import audit_model
from core.tabular.persist import NeverTrustedTypeError, SkopsType, UntrustedTypesError, skops_types
from core.validation import read_table
from core.views.uploads import UPLOAD_LIMIT_MB, table_columns, upload_digest
from ui.audit_jobs import foreground_wait_s, job_for, show_progress_and_stop
from ui.auth import current_access
from ui.errors import guarded
from ui.state import FormError, OwnModelState, TrustOffer, own_model_state

__all__ = [
    "AUDITS_DIR_ENV",
    "DASK_SCHEDULER_ENV",
    "certify_mode",
    "default_audits_dir",
    "own_audit",
    "own_label",
    "own_mode",
    "render_own_model_sidebar",
    "saved_folder",
]


_LOG = logging.getLogger("reliability_audit.ui")
#: Environment variable naming the audits directory when ``--audits-dir`` is not given.
AUDITS_DIR_ENV = "AUDIT_AUDITS_DIR"
#: Environment variable naming the Dask scheduler that certifies every row of a large upload
#: (:mod:`ui.big_audit`) when ``--dask-scheduler`` is not given.
DASK_SCHEDULER_ENV = "AUDIT_DASK_SCHEDULER"


def default_audits_dir() -> Path:
    """``AUDIT_AUDITS_DIR``, else ``audits`` in the user data directory (beside the review database)."""
    env = os.environ.get(AUDITS_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("reliability-audit", appauthor=False) / "audits"


def own_mode() -> bool:
    """Whether the tabular pages show a model brought by the user."""
    return own_model_state().audit is not None


def certify_mode() -> bool:
    """Whether the tabular pages show a certify folder (every row, :mod:`ui.big_audit`)."""
    source = own_model_state().audit
    return bool(source) and source.get("kind") == "certify"


def _stamp(path: Path) -> str:
    files = [
        path / n
        for n in ("protocol.json", "_task.zip", "certificates.parquet", "view/meta.json", "view/certificates.json.gz")
    ]
    return ":".join(f"{f.stat().st_mtime_ns}-{f.stat().st_size}" if f.exists() else "-" for f in files)


@st.cache_resource(show_spinner="Opening the saved audit…", max_entries=8)
def _folder(path: str, stamp: str) -> SavedAudit:
    # The model is not read here: skops' trusted-type scan imports all of scikit-learn (a second
    # or more), and only the live panels need it (ui.live_model loads it in the background on
    # their first visit).
    return open_audit_folder(path, load_model=False)


@st.cache_resource(show_spinner="Reading the saved audit…", max_entries=8)
def _folder_result(path: str, stamp: str) -> AuditResult:
    saved = _folder(path, stamp)
    if (saved.path / VIEW_DIR).is_dir():
        return saved_result(saved, lazy_model=True)  # the saved tables; the model on first use
    if saved.unavailable is None:  # written before view/: recomputed with its model
        saved = open_audit_folder(path)
    if saved.task is None:
        raise ValueError(
            f"this folder was written before audit folders kept their tables for the pages ({VIEW_DIR}/), "
            f"and {saved.unavailable}, so it cannot be recomputed either. The saved summary and "
            "certificate table are in the Overview's Saved files tab; re-create the audit (`python -m core audit "
            "... --out DIR` or AuditResult.save) to see every page."
        )
    with st.spinner("Re-certifying the saved audit with its model (folder written before view/)…"):
        return reopen_audit(saved)


def _holdout(test, target: str):
    """Stratified half of the test table as the training (baseline) rows, seed 0."""
    rng = np.random.default_rng(0)
    labels = test[target].astype(str).to_numpy()
    base = np.zeros(len(test), dtype=bool)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        base[rng.permutation(idx)[: len(idx) // 2]] = True
    return test[base], test[~base]


def _tables(files: dict, target: str):
    """The raw train and test rows of an upload (a stratified half of the test table as train
    when none was given)."""
    test = read_table(files["test"][1], name=files["test"][0]).frame
    if target not in test.columns:
        raise ValueError(f"target {target!r} is not a column of {files['test'][0]}.")
    if files.get("train") is not None:
        return read_table(files["train"][1], name=files["train"][0]).frame, test
    return _holdout(test, target)


def _load_model(source: dict, train, actor: Actor | None = None) -> object:
    """The uploaded model (nothing unpickled); ONNX class labels default to the training labels.

    ``actor`` must be allowed to upload, and to trust the types of ``source["trust"]`` if any
    (:func:`core.reviews.permissions.check`, before a byte of the model is read).
    """
    name, data = source["files"]["model"]
    order = tuple(source["feature_order"]) if source["feature_order"] else None
    target = source["target"]
    labels = sorted({v.item() if isinstance(v, np.generic) else v for v in train[target].dropna().unique()}, key=str)
    return load_model_bytes(
        data, name, trust=tuple(source["trust"]), feature_order=order, default_classes=labels, actor=actor
    )


@dataclass(frozen=True, kw_only=True)
class _UploadAudit:
    """An upload's audit and the copy of it saved in the audits folder.

    Attributes
    ----------
    result : AuditResult
    saved : Path or None
        The audit folder written into the audits directory (None when it could not be).
    save_error : str or None
        Why it could not be saved (for people), else None.
    """

    result: AuditResult
    saved: Path | None
    save_error: str | None


def _saved_name(model_name: str, key: tuple) -> str:
    """The audits-folder name of an upload: the model file's stem and 8 hex digits of the upload's
    key (files, target, trust, feature order), so the same upload maps to the same folder."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model_name).stem).strip("._") or "model"
    return f"{stem}-{hashlib.sha256(repr(key).encode()).hexdigest()[:8]}"


def _save_copy(result: AuditResult, folder: Path, actor: Actor | None = None) -> tuple[Path | None, str | None]:
    """Save ``result`` as ``folder``; the folder, or None and why not (no server path in it).

    Only for an ``actor`` who may save into the shared audits folder (the team file's
    ``[permissions] save``); anyone else's audit is shown and not saved.
    """
    if actor is not None and not actor.may("save"):
        need = actor.team.permissions["save"] if actor.team is not None else "admin"
        return None, f"saving there needs the {need} role"
    if folder.exists():
        if (folder / "protocol.json").is_file():  # the same upload, audited before
            return folder, None
        return None, f"a folder named {folder.name} is there already and holds no audit"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        return result.save(folder, actor=actor), None  # records who made it
    except OSError as exc:
        _LOG.warning("the audit of an upload could not be saved as %s: %s", folder, exc)
        return None, exc.strerror or type(exc).__name__
    except ValueError as exc:  # a model the audit folder cannot store
        _LOG.warning("the audit of an upload could not be saved as %s: %s", folder, exc)
        return None, str(exc)


def _upload_result(source: dict, folder: Path, progress=None, actor: Actor | None = None) -> _UploadAudit:
    if progress is not None:  # reading a .skops model imports skops (seconds): say so at once
        progress("load data", 0, 1)
    files, target = source["files"], source["target"]
    check(actor, "run", what=f"an audit of {files['model'][0]}")
    train, test = _tables(files, target)
    model = _load_model(source, train, actor)
    result = audit_model(model, train, test, target=target, name=files["model"][0], progress=progress, actor=actor)
    if progress is not None:
        progress("save a copy", 0, 1)
    # Kept in the audits folder, so that after a restart it opens from its saved tables in
    # seconds (*Open a saved audit*) instead of being uploaded and audited again.
    saved, error = _save_copy(result, folder, actor)
    return _UploadAudit(result=result, saved=saved, save_error=error)


def _upload_job(source: dict):
    """The background audit of an upload (started on first use; the same upload, the same job).

    The job checks the signed-in user's role at each step (:func:`_upload_result`); jobs are
    shared by every session, so what this user may do is part of its key: an admin's upload is
    saved even when a reviewer who may not save audited the same files first, and a refused
    job is never handed to someone allowed.
    """
    files = {role: tuple(v) for role, v in source["files"].items() if v is not None}
    order = tuple(source["feature_order"]) if source["feature_order"] else None
    key = ("own", upload_digest(files), source["target"], tuple(source["trust"]), order)
    folder = Path(own_model_state().audits_dir) / _saved_name(files["model"][0], key)
    plain = {**source, "files": files}
    access = current_access()
    actor = access.actor
    return job_for(
        (*key, str(folder), tuple(access.may(action) for action in ACTIONS)),
        f"your model {files['model'][0]}",
        lambda progress: _upload_result(plain, folder, progress, actor),
    )


def _untrusted_message(exc: UntrustedTypesError) -> str:
    """The dashboard's wording of a skops file that holds types nobody trusted yet."""
    return (
        f"{exc.where} holds {len(exc.types)} type(s) outside skops' trusted set: {', '.join(exc.types)}. "
        "Trust them in the sidebar (*Your model*) to load it."
    )


def _never_trusted_message(exc: NeverTrustedTypeError) -> str:
    """The dashboard's wording of types that are never trusted (no offer: nothing can trust them)."""
    items = "; ".join(
        f"`{t}` ({exc.descriptions[t] + ': ' if t in exc.descriptions else ''}{exc.reasons[t]})" for t in exc.types
    )
    subject = "The types trusted for this upload include" if exc.named_by_caller else f"{exc.where} holds"
    it = "it" if len(exc.types) == 1 else "them"
    return (
        f"{subject} {len(exc.types)} type(s) that are never trusted: {items}. Nothing was loaded, and "
        f"the dashboard cannot trust {it}: re-save the model without {it}."
    )


def _described(data: bytes) -> dict[str, SkopsType]:
    """What each type of an uploaded ``.skops`` file is (class, function or method, and its
    module), read from the file's schema without importing anything; empty if unreadable."""
    try:
        return skops_types(data)
    except ValueError:
        return {}


def _type_line(name: str, described: dict[str, SkopsType]) -> str:
    kind = described.get(name)
    return f"- `{name}` — {kind.description}" if kind is not None else f"- `{name}`"


def saved_folder() -> SavedAudit | None:
    """The open audit folder, or None (no folder is open)."""
    source = own_model_state().audit
    if not source or source["kind"] != "folder":
        return None
    path = Path(source["path"])
    return _folder(str(path), _stamp(path))


def own_audit() -> AuditResult:
    """The audit of the user's model.

    A saved folder is shown from its saved tables; its model is a
    :class:`~core.tabular.audit_folder.SavedModel`, read on the first use of a live panel
    (:func:`ui.live_model.live_model`), or None when the files already say it cannot be.

    Raises
    ------
    ValueError
        The folder is unreadable, predates ``view/`` and has no loadable model, or the upload
        is invalid (the message says why).
    """
    source = own_model_state().audit
    if source["kind"] == "certify":
        raise ValueError(
            f"{Path(source['path']).name} is a certify run: its rows are shown on the Overview, the "
            "Certificate explorer and the Triage queue; this page needs an audit of a test split."
        )
    if source["kind"] == "folder":
        saved = saved_folder()
        return _folder_result(str(saved.path), _stamp(saved.path))
    # In the background like every new audit: the other pages stay usable while it runs. The
    # sidebar, drawn before every tabular page, already waited the foreground time for it, so
    # that what it says of the model and what the page shows come from one look at the job.
    job = _upload_job(source)
    if not job.done:
        show_progress_and_stop([job])
    try:
        return job.result().result
    except UntrustedTypesError as exc:
        raise ValueError(_untrusted_message(exc)) from None
    except NeverTrustedTypeError as exc:
        raise ValueError(_never_trusted_message(exc)) from None


def own_label() -> str:
    source = own_model_state().audit
    if source["kind"] == "certify":
        return f"certify run {Path(source['path']).name}"
    if source["kind"] == "folder":
        return f"saved audit {Path(source['path']).name}"
    return f"your model {source['files']['model'][0]}"


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.replace("\n", ",").split(",") if v.strip()]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_and_open(source: dict, actor: Actor | None = None) -> None:
    """Load the model of ``source`` now; open it on the tabular pages only when it loads.

    A button callback (it runs before the next script run, so it may open the form).
    A file holding types outside skops' trusted set becomes a trust offer (the types listed,
    nothing loaded); any other failure is kept as the form's error, a role that may not upload,
    trust or start the audit (``actor``, :mod:`core.reviews.permissions`) too. Either way the
    form stays open, filled as it was, and the pages keep what they showed.
    """
    own_model_state().offer = own_model_state().error = None
    data = source["files"]["model"][1]
    try:
        check(actor, "upload", what=source["files"]["model"][0])
        check(actor, "run", what=f"an audit of {source['files']['model'][0]}")
        train, _ = _tables(source["files"], source["target"])
        _load_model(source, train, actor)
    except UntrustedTypesError as exc:
        own_model_state().offer = TrustOffer(digest=_digest(data), types=list(exc.types), source=source)
    except NeverTrustedTypeError as exc:  # never offered for trust: the form's error says why
        own_model_state().error = FormError(digest=_digest(data), message=_never_trusted_message(exc))
    except (ValueError, AccessRefused) as exc:
        own_model_state().error = FormError(digest=_digest(data), message=str(exc))
    else:
        # The form stays open and filled: its files are gone once it is closed (it is drawn only
        # while open), and an audit that fails in the background is fixed from them.
        own_model_state().audit = source
        return
    own_model_state().form_open = True


def _trust_and_retry(source: dict, types: list[str], actor: Actor | None = None) -> None:
    offered = {t for t in types if refusal_reason(t) is None}  # never a never-trusted type, whatever the offer held
    _check_and_open({**source, "trust": sorted(set(source["trust"]) | offered)}, actor)


def _trust_offer(model_bytes: bytes | None) -> None:
    """The pending trust offer of the uploaded model, if any: its types and a plain warning."""
    offer = own_model_state().offer
    if offer is None or (model_bytes is not None and offer.digest != _digest(model_bytes)):
        return
    name, data = offer.source["files"]["model"]
    described = _described(data)  # class or function, and its module: from the file's schema
    refused = [t for t in offer.types if refusal_reason(t) is not None]
    if refused:  # the loader refuses these before any offer; never offered if one slips through
        st.error(
            f"**{name} holds {len(refused)} type(s) that are never trusted:**\n\n"
            + "\n".join(f"{_type_line(t, described)}: {refusal_reason(t)[0]}" for t in refused)
            + "\n\nNo one can trust these here: re-save the model without them. Nothing has been loaded.",
            icon=":material/dangerous:",
        )
        return
    types = offer.types
    st.warning(
        f"**{name} holds {len(types)} type(s) outside skops' trusted set:**\n\n"
        + "\n".join(_type_line(t, described) for t in types)
        + "\n\nLoading the model runs code that these types define. Trust them only if you trust "
        "whoever made the file; nothing has been loaded yet.",
        icon=":material/gpp_maybe:",
    )
    access = current_access()
    if not access.may("trust"):
        st.caption(
            f"Trusting types needs the {access.needs('trust')} role (you are a {access.role}): ask one to load this model."
        )
        return
    st.button(
        f"Trust {'this type' if len(types) == 1 else f'these {len(types)} types'} and retry",
        key="own_trust_retry",
        icon=":material/verified_user:",
        on_click=_trust_and_retry,
        args=(offer.source, types, access.actor),
    )


def _upload_status(source: dict) -> None:
    """What the sidebar says of an uploaded model: auditing, shown, or why it could not be."""
    name = source["files"]["model"][0]
    job = _upload_job(source)
    job.wait(foreground_wait_s())  # a quick audit is reported done at once (the page does not wait again)
    if not job.done:
        st.caption(f"Auditing **your model {name}**… the tabular pages fill in when it is ready.")
        return
    if job.error is None:
        st.caption(f"Showing **your model {name}** on the tabular pages.")
        done = job.result()
        if done.saved is not None:
            st.caption(
                f"Saved in the audits folder as **{done.saved.name}**: after a restart it opens from there "
                "in seconds (*Open a saved audit*)."
            )
        elif not current_access().may("save"):  # not an error: this role does not save there
            st.caption(f"Not saved in the shared audits folder: {done.save_error}.")
        else:
            st.warning(f"A copy could not be saved in the audits folder: {done.save_error}", icon=":material/warning:")
        return
    st.error(f"**Your model {name} could not be audited:** {_error_text(job.error)}", icon=":material/error:")
    if isinstance(job.error, UntrustedTypesError) and own_model_state().offer is None:
        # Seen once: the offer opens the form; closing it afterwards is the user's choice.
        own_model_state().offer = TrustOffer(
            digest=_digest(source["files"]["model"][1]), types=list(job.error.types), source=source
        )
        own_model_state().form_open = True


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, UntrustedTypesError):
        return _untrusted_message(exc)
    if isinstance(exc, NeverTrustedTypeError):
        return _never_trusted_message(exc)
    if isinstance(exc, (ValueError, AccessRefused)):
        return str(exc)
    return f"the audit failed unexpectedly ({type(exc).__name__}: {exc}); the details are in the server log."


def render_own_model_sidebar() -> None:
    """The sidebar's "Your model" section.

    An uploaded model is read when *Audit my model* is pressed: only a model that loads is
    opened on the tabular pages (the sidebar never names one it failed to load); types outside
    skops' trusted set are listed and offered for trust, never trusted silently; and the form
    stays open and filled after an error. On a server with sign-in the upload form is drawn only
    for a role that may upload (admin by default: :meth:`ui.auth.Access.may`); *Open a saved
    audit* is reading, open to every role.
    """
    st.subheader("Your model")
    source = own_model_state().audit
    if source is not None:
        if source["kind"] == "upload":
            _upload_status(source)
        else:
            st.caption(f"Showing **{own_label()}** on the tabular pages.")
        if st.button("Back to the tool's models", key="own_close", icon=":material/close:"):
            own_model_state().audit = None
            own_model_state().offer = own_model_state().error = None
            st.rerun()
    # Keyed and state-tracked, so an error or a trust offer keeps it open. Its widgets are drawn
    # only while it is open: three file uploaders cost a tenth of a second of every start in the
    # browser (docs/dashboard.md); closing the form discards the files chosen and not yet audited.
    # Not drawn at all for a role that may not upload (a viewer; a reviewer unless the team file
    # grants it): core refuses the upload anyway.
    if current_access().may("upload"):
        with st.expander(
            "Audit a fitted model (.skops / .onnx)",
            key=OwnModelState.form_open.key,
            on_change="rerun",
            icon=":material/upload_file:",
        ) as form:
            if form.open:
                _upload_form()
    # Drawn only while open: its folder listing reads the disk, on every run of every page.
    with st.expander(
        "Open a saved audit", key=OwnModelState.folders_open.key, on_change="rerun", icon=":material/folder_open:"
    ) as folders:
        if folders.open:
            _saved_audit_choice()


def _upload_form() -> None:
    """The upload form: the model and its tables, the target column, the trust offer or error."""
    st.caption(
        "Only .skops (skops) and .onnx (onnxruntime) files are read — never pickles. "
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
    model_bytes = model.getvalue() if model is not None else None
    error = own_model_state().error
    if error is not None and (model_bytes is None or error.digest == _digest(model_bytes)):
        st.error(error.message, icon=":material/error:")
    _trust_offer(model_bytes)
    if model is not None and test is not None:
        with guarded(f"Reading {test.name}"):
            columns = table_columns(test.getvalue(), test.name, actor=current_access().actor)
            if own_model_state().target not in columns:
                own_model_state().target = None
            st.selectbox("Target column", columns, key=OwnModelState.target.key, placeholder="choose the label column")
            st.text_input(
                "ONNX feature order (comma-separated)",
                key=OwnModelState.feature_order.key,
                help="Only for an ONNX model with one 2-D input and no 'feature_order' metadata.",
            )
            access = current_access()
            if not access.may("run"):
                st.caption(f"Starting an audit needs the {access.needs('run')} role (you are a {access.role}).")
                return
            st.button(
                "Audit my model",
                type="primary",
                key="own_run",
                disabled=own_model_state().target is None,
                on_click=_check_and_open,
                args=(
                    {
                        "kind": "upload",
                        "target": own_model_state().target,
                        "trust": [],
                        "feature_order": _names(own_model_state().feature_order) or None,
                        "files": {
                            "model": (model.name, model_bytes),
                            "test": (test.name, test.getvalue()),
                            "train": (train.name, train.getvalue()) if train is not None else None,
                        },
                    },
                    access.actor,
                ),
            )


def _saved_audit_choice() -> None:
    """The audits folder's saved audits, one to open."""
    from core.views.big_audit import certify_run_finished, list_certify_folders  # only while the expander is open

    root = Path(own_model_state().audits_dir)
    kinds = {p.name: "folder" for p in list_audit_folders(root)}
    # A certify run still going (or interrupted) opens with what is done: never listed as complete.
    kinds.update(
        {p.name: "certify" if certify_run_finished(p) else "certify-partial" for p in list_certify_folders(root)}
    )
    st.caption(
        "Audits saved in the dashboard's audits folder, set when it was started; save one there with "
        "`AuditResult.save` (Python) or the `audit` command, or certify a large table into it with the "
        "`certify` command (every row is then shown)."
    )
    if not kinds:
        st.caption("No audit folder there yet.")
        return
    names = sorted(kinds)
    if own_model_state().folder not in names:
        own_model_state().folder = names[0]
    st.selectbox(
        "Audit folder",
        names,
        key=OwnModelState.folder.key,
        format_func=lambda n: {
            "certify": f"{n} (certify run, every row)",
            "certify-partial": f"{n} (certify run, incomplete)",
        }.get(kinds[n], n),
    )
    if st.button("Open", key="own_open"):
        name = own_model_state().folder
        kind = "folder" if kinds[name] == "folder" else "certify"
        own_model_state().audit = {"kind": kind, "path": str(root / name)}
        st.rerun()
