"""Audit a fitted model you bring: :func:`audit_model`.

The model is any fitted classifier with ``predict_proba`` on the **raw** frame and
``classes_``. Nothing is refitted; ``train`` supplies the baseline and the label channel's
noise scales, ``test`` is certified.

Two feature spaces:

- **pipeline**: a scikit-learn ``Pipeline`` whose steps before the final estimator are the
  preprocessing. The raw-origin groups are traced from those steps
  (:func:`core.cfc.grouping.build_groups`), and the certificate runs in their output space
  with the final estimator's ``predict_proba`` (:class:`PipelineSpace`).
- **raw**: anything else (or a pipeline whose steps cannot be traced, noted). Each raw column
  is one evidence group and the certificate runs in raw space (:class:`RawSpace`): a numeric
  column is one coordinate; a categorical / text / boolean column is the one-hot indicator
  block of its categories, decoded back to the category with the largest weight (ties to the
  lowest category index) before the model is called. So removal puts the baseline category
  in, and attenuation by ``λ`` keeps the row's own category while ``λ < 0.5`` and switches to
  the baseline category beyond. Baselines per column: numeric columns follow the protocol
  rule (mean / median / zero; ``mode`` keeps the mean, as in
  :func:`core.cfc.baselines.baseline_vector`), categorical columns always take their most
  frequent training category (ties to the lowest category index).

Once the space, groups and baseline are fixed, the audit is
:func:`core.tabular.audit.audit_fitted`, the pipeline :func:`core.tabular.audit.run_audit` runs on
the tool's own models. Calibration (temperature scaling, BATS) needs held-out rows the model did not see: it is
fitted on a stratified half of ``test`` (fixed seed) and reported on the other half; the
certificates, labels and evaluation cover every test row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core._rng import as_generator
from core.cfc.baselines import baseline_vector
from core.cfc.evaluation import Population
from core.cfc.grouping import build_groups, domain_block_groups, redundancy_merged_groups
from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.tabular.dataset import OWN_MODEL_SOURCE
from core.tabular.datasets import Dataset, DatasetSplit
from core.tabular.spaces import PipelineSpace, RawModel, RawSpace, feature_origins, is_categorical, plain_value
from core.validation import check_informative_features, warn_constant_features

if TYPE_CHECKING:
    from core.reviews.permissions import Actor
    from core.tabular.audit import AuditConfig, FittedSpace

__all__ = ["PipelineSpace", "RawModel", "RawSpace", "audit_model", "feature_origins", "model_space"]

_SEED = 0  # label channel and calibration halves: audit_model has no seed argument by contract


# --------------------------------------------------------------------------------------------
# Feature spaces
# --------------------------------------------------------------------------------------------
def _model_columns(model: Any, train: pd.DataFrame, target: str) -> tuple[str, ...]:
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return tuple(c for c in train.columns if c != target)
    return tuple(str(c) for c in names)


def model_space(model: Any, train: pd.DataFrame, test: pd.DataFrame, *, target: str) -> tuple[Any, Any, str, list[str]]:
    """The feature space an audit of ``model`` runs in.

    Returns
    -------
    (space, predictor, kind, notes)
        ``space`` maps raw frames to features (``transform``, ``raw_columns``, ``origins``),
        ``predictor`` has ``predict_proba`` on those features, ``kind`` is ``"pipeline"`` or
        ``"raw"``; ``notes`` says why a pipeline fell back to raw space.
    """
    notes: list[str] = []
    columns = _model_columns(model, train, target)
    if target in columns:
        raise ValueError(f"the model reads the target column {target!r} as a feature; audit it without the target.")
    for name, frame in (("train", train), ("test", test)):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"`{name}` lacks the columns {missing} that the model needs (it reads {list(columns)}).")
    steps = getattr(model, "steps", None)
    if type(model).__name__ == "Pipeline" and steps is not None and len(steps) >= 2:
        prefix = model[:-1]
        try:
            space = PipelineSpace(prefix, columns)
            space.origins  # noqa: B018 - traces, raises if a step cannot be traced
            return space, model[-1], "pipeline", notes
        except ValueError as exc:
            notes.append(
                f"the pipeline's preprocessing could not be traced to raw columns ({exc}); "
                "the certificate runs in raw space, one group per raw column"
            )
    space = RawSpace.fit(columns, [train, test])
    return space, RawModel(model, space), "raw", notes


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------
def _check_frames(train: Any, test: Any, target: Any) -> None:
    for name, frame in (("train", train), ("test", test)):
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"`{name}` must be a pandas DataFrame of raw rows; got {type(frame).__name__}.")
        if len(frame) == 0:
            raise ValueError(f"`{name}` has no rows.")
    if not isinstance(target, str) or target not in test.columns or target not in train.columns:
        where = "test" if isinstance(target, str) and target not in test.columns else "train"
        raise ValueError(
            f"`target` {target!r} is not a column of `{where}`; columns: "
            f"{list((test if where == 'test' else train).columns)[:20]}."
        )


def _encode_labels(labels: pd.Series, classes: np.ndarray, name: str) -> np.ndarray:
    missing = labels.isna().to_numpy()
    if missing.any():
        r = int(np.flatnonzero(missing)[0])
        raise ValueError(f"`{name}` has a missing label in the target at row {labels.index[r]!r}.")
    codes = pd.Index(list(classes)).get_indexer(labels.to_numpy(dtype=object))
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        r = int(bad[0])
        raise ValueError(
            f"`{name}` holds the label {labels.iloc[r]!r} (row {labels.index[r]!r}) that is not one of the "
            f"model's classes {list(classes)}; the model's classes do not match the labels."
        )
    return codes.astype(np.int64)


# --------------------------------------------------------------------------------------------
# audit_model
# --------------------------------------------------------------------------------------------
def audit_model(
    model: Any,
    train: pd.DataFrame,
    test: pd.DataFrame,
    *,
    target: str,
    protocol: Protocol | None = None,
    label_channel: LabelChannel | None = None,
    blocks: Mapping[str, str] | None = None,
    population: Population = "high_confidence",
    progress: Any = None,
    name: str | None = None,
    batch_size: int = 65536,
    actor: Actor | None = None,
):
    """Audit a fitted classifier on your own train / test tables.

    Parameters
    ----------
    model : fitted classifier
        ``predict_proba`` on the raw frame (DataFrame) and ``classes_`` (the class order of
        the probability columns; string labels work). A scikit-learn ``Pipeline`` is audited
        in the output space of its preprocessing steps (see the module docstring).
    train : DataFrame of shape (n_train, ...)
        Raw rows containing ``target``; supplies the baseline and the noise scales.
    test : DataFrame of shape (n_test, ...)
        Raw rows containing ``target``; every row is certified. Its index gives the row ids.
    target : str
        The label column.
    protocol : Protocol, optional
        Default ``Protocol()``.
    label_channel : LabelChannel, optional
        Default ``LabelChannel()``; drawn with seed 0.
    blocks : mapping raw column -> block name, optional
        Domain blocks for ``grouping="domain_block"`` (unmapped columns keep their own group).
    population : {"high_confidence", "all"}, default="high_confidence"
    progress : callable(stage, done, total), optional
    name : str, optional
        Model name shown in summaries; default ``"own:<class name>"``.
    batch_size : int, default=65536
        Rows per model call.
    actor : core.reviews.permissions.Actor, optional
        Who starts the audit on a server with sign-in (the signed-in user and the server's
        team): refused unless they may ``run`` (:func:`core.reviews.permissions.check`). None:
        local mode (the command line, a notebook), allowed.

    Returns
    -------
    AuditResult
        ``model_name`` is ``name``; ``model`` has ``predict_proba`` over ``X_test``'s space;
        ``preprocessor`` is a :class:`PipelineSpace` or :class:`RawSpace`; ``split`` has the
        training rows then the test rows of ``dataset.frame`` and no validation rows.

    Raises
    ------
    ValueError
        A model without ``predict_proba`` / ``classes_``; classes that do not match the
        labels of ``test``; probabilities that do not sum to 1; missing columns; every
        feature column the model reads constant over ``train`` and ``test`` (named); a model
        that fails on a baseline replacement (the group is named). Nothing is written.
    core.reviews.AccessRefused
        ``actor`` may not start an audit (logged; nothing is computed).
    """
    from core.tabular.audit import AuditStages, audit_fitted

    if actor is not None:
        from core.reviews.permissions import check

        check(actor, "run", what=f"an audit of {name or type(model).__name__}")

    if not callable(getattr(model, "predict_proba", None)):
        raise ValueError(f"`model` ({type(model).__name__}) has no predict_proba; a fitted classifier is needed.")
    if getattr(model, "classes_", None) is None:
        raise ValueError(
            f"`model` ({type(model).__name__}) has no classes_ (is it fitted?); the class order of "
            "predict_proba's columns is needed."
        )
    _check_frames(train, test, target)
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(f"`protocol` must be a Protocol; got {type(protocol).__name__}.")
    label_channel = LabelChannel() if label_channel is None else label_channel
    if not isinstance(label_channel, LabelChannel):
        raise ValueError(f"`label_channel` must be a LabelChannel; got {type(label_channel).__name__}.")
    if population not in ("high_confidence", "all"):
        raise ValueError(f"`population` must be 'high_confidence' or 'all'; got {population!r}.")
    if test.index.has_duplicates:
        raise ValueError("`test` has duplicate index values; its index gives the row ids (reset_index() first).")
    classes = np.asarray(model.classes_)
    if classes.ndim != 1 or len(classes) < 2:
        raise ValueError(f"`model.classes_` must list at least two classes; got {classes!r}.")
    _encode_labels(train[target], classes, "train")  # validation only: nothing is fitted on train
    y_test = _encode_labels(test[target], classes, "test")

    stages = AuditStages(progress)
    space, predictor, kind, notes = stages.run("load data", model_space, model, train, test, target=target)
    columns = list(space.raw_columns)
    both = pd.concat([train[columns], test[columns]])
    check_informative_features(both, columns, "the train and test tables")
    warn_constant_features(both, columns, "the train and test tables")
    X_train = stages.run("preprocess", space.transform, train, where="`train`")
    X_test = space.transform(test, where="`test`")
    for name_, X in (("train", X_train), ("test", X_test)):
        bad = ~np.isfinite(X)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                f"the preprocessing of `{name_}` gives a non-finite value at row {r}, feature "
                f"{space.feature_names[c]!r}; certificates need finite features."
            )
    origins = list(space.origins)

    if kind == "pipeline":
        groups = build_groups(
            protocol.grouping, space.transformer, X_train, blocks=blocks, threshold=protocol.merge_threshold
        )
        baseline = baseline_vector(X_train, groups, protocol.baseline)
    else:
        raw = space.groups()
        if protocol.grouping == "raw_origin":
            groups = raw
        elif protocol.grouping == "redundancy_merged":
            groups = redundancy_merged_groups(X_train, raw, threshold=protocol.merge_threshold)
        else:
            if blocks is None:
                raise ValueError("grouping 'domain_block' needs `blocks` (raw column -> block name).")
            groups = domain_block_groups(raw, {c: b for c, b in blocks.items() if c in raw}, unmapped="keep")
        baseline = space.baseline(X_train, groups, protocol.baseline)
    protocol.resolved_depth(len(groups))
    space = _own_space(
        predictor=predictor,
        preprocessor=space,
        kind=kind,
        notes=notes,
        train=train,
        test=test,
        target=target,
        X_train=X_train,
        X_test=X_test,
        origins=origins,
        groups=groups,
        baseline=baseline,
        classes=classes,
        y_test=y_test,
        name=name or f"own:{type(model).__name__}",
        source_model=model,
    )
    return audit_fitted(space, config=_own_config(protocol, label_channel, population, batch_size), stages=stages)


def _own_config(
    protocol: Protocol, label_channel: LabelChannel, population: Population, batch_size: int
) -> AuditConfig:
    from core.tabular.audit import AuditConfig

    return AuditConfig(
        protocol=protocol, label_channel=label_channel, population=population, seed=_SEED, batch_size=batch_size
    )


def _own_space(
    *,
    predictor: Any,
    preprocessor: Any,
    kind: str,
    notes: Sequence[str],
    train: pd.DataFrame,
    test: pd.DataFrame,
    target: str,
    X_train: np.ndarray,
    X_test: np.ndarray,
    origins: Sequence[str],
    groups: Mapping[str, Sequence[int]],
    baseline: np.ndarray,
    classes: np.ndarray,
    y_test: np.ndarray,
    name: str,
    source_model: Any,
) -> FittedSpace:
    """The user's model in its feature space, over a dataset of the train rows then the test rows.

    No validation rows: calibration is fitted on a stratified half of the test rows.
    """
    from core.tabular.audit import FittedSpace

    notes = list(notes)
    columns = list(preprocessor.raw_columns)
    raw_test = test[columns + [target]]
    frame = pd.concat([train[columns + [target]], raw_test], axis=0)
    if frame.index.has_duplicates:
        frame = frame.reset_index(drop=True)
        notes.append(
            "train and test share row ids: `dataset.frame` numbers rows by position (train first); "
            "certificates keep the test table's own index"
        )
    if isinstance(preprocessor, RawSpace):
        numeric = tuple(c for c, k in zip(preprocessor.columns, preprocessor.kinds) if k == "numeric")
    else:
        numeric = tuple(c for c in columns if not is_categorical(train[c]))
    categorical = tuple(c for c in columns if c not in numeric)
    dataset = Dataset(
        name="own data",
        frame=frame,
        target=target,
        features=tuple(columns),
        numeric=numeric,
        categorical=categorical,
        classes=tuple(plain_value(c) for c in classes),
        description="Tables passed to audit_model.",
        source=OWN_MODEL_SOURCE,
    )
    n_train = len(train)
    split = DatasetSplit(
        dataset=dataset,
        seed=_SEED,
        val_size=0.0,
        test_size=len(test) / len(frame),
        train_index=np.arange(n_train, dtype=np.int64),
        val_index=np.zeros(0, dtype=np.int64),
        test_index=np.arange(n_train, len(frame), dtype=np.int64),
    )
    # The second child stream of seed 0 (the first is the label channel's), as always.
    calibration_stream = as_generator(_SEED).spawn(2)[1]
    return FittedSpace(
        dataset=dataset,
        split=split,
        seed=_SEED,
        model_name=name,
        predictor=predictor,
        preprocessor=preprocessor,
        origins=tuple(origins),
        X_train=X_train,
        X_test=X_test,
        y_test=y_test,
        raw_test=raw_test,
        groups=dict(groups),
        baseline=np.asarray(baseline),
        calibration_half=_stratified_half(y_test, calibration_stream),
        space_kind=kind,
        source_model=source_model,
        notes=tuple(notes),
    )


def audit_task(
    task: Any,
    train: pd.DataFrame,
    test: pd.DataFrame,
    *,
    label_channel: LabelChannel | None = None,
    population: Population = "high_confidence",
    progress: Any = None,
    name: str = "saved model",
    batch_size: int = 65536,
):
    """Re-audit a saved task (:func:`core.scale.certify.load_certify_task`) on raw tables.

    The task's own groups, baseline and protocol are used, so the certificates carry the
    saved audit's fingerprint; ``train`` gives the noise scales, ``test`` is certified.
    Labels are matched to ``task.classes`` as text.

    Returns
    -------
    AuditResult
    """
    from core.tabular.audit import AuditStages, audit_fitted

    target = task.target
    _check_frames(train, test, target)
    label_channel = LabelChannel() if label_channel is None else label_channel
    classes = np.asarray(task.classes, dtype=object)
    y_test = _encode_labels(test[target].astype(str), classes, "test")
    stages = AuditStages(progress)
    space = task.preprocessor
    kind = "raw" if isinstance(space, RawSpace) else "pipeline" if isinstance(space, PipelineSpace) else "tool"
    X_train = stages.run("preprocess", space.transform, train)
    X_test = space.transform(test)
    own = _own_space(
        predictor=task.model,
        preprocessor=space,
        kind=kind,
        notes=[],
        train=train,
        test=test,
        target=target,
        X_train=X_train,
        X_test=X_test,
        origins=feature_origins(space),
        groups=dict(task.groups),
        baseline=np.asarray(task.baseline),
        classes=classes,
        y_test=y_test,
        name=name,
        source_model=None,
    )
    return audit_fitted(own, config=_own_config(task.protocol, label_channel, population, batch_size), stages=stages)


def _stratified_half(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of about half the rows of every class (at least one row of each class with two)."""
    mask = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        idx = idx[rng.permutation(len(idx))]
        mask[idx[: len(idx) // 2 if len(idx) > 1 else len(idx)]] = True
    if mask.all() or not mask.any():
        raise ValueError("`test` needs at least two rows of some class to hold out half for calibration.")
    return mask
