"""One audit pipeline (issue 40): the bundled audit is the own-model audit of the model it fits.

``run_audit`` fits the tool's preprocessing and model, then hands them to the same
``audit_fitted`` that ``audit_model`` uses. Audited as a user's model (a scikit-learn
``Pipeline`` of the same fitted preprocessing and estimator), the tool's model must give the
same certificates, held-out labels, scores and evaluation, bit for bit: only calibration
differs by design (validation rows vs a stratified half of the test rows).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.pipeline import Pipeline

from core import audit_model
from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.tabular.audit import AuditConfig, FittedSpace, audit_fitted, run_audit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class _Labelled(ClassifierMixin, BaseEstimator):
    """The tool's fitted estimator (classes 0..C-1) under the data's own class labels."""

    def __init__(self, model=None, classes=None):
        self.model, self.classes = model, classes

    def fit(self, X, y):
        return self

    def __sklearn_is_fitted__(self):
        return True

    @property
    def classes_(self):
        return np.asarray(self.classes, dtype=object)

    def predict_proba(self, X):
        return self.model.predict_proba(X)


@pytest.fixture(
    scope="module",
    params=[Protocol(), Protocol(grouping="redundancy_merged", baseline="median")],
    ids=["default", "merged-median"],
)
def pair(request):
    bundled = run_audit("credit_data", model="logreg", seed=0, max_rows=600, protocol=request.param)
    pipe = Pipeline([("pre", bundled.preprocessor.transformer), ("model", _Labelled(bundled.model, bundled.classes))])
    own = audit_model(
        pipe, bundled.split.train, bundled.split.test, target=bundled.dataset.target, protocol=request.param
    )
    return bundled, own


def test_the_bundled_audit_is_the_own_model_audit_of_its_model(pair):
    bundled, own = pair
    assert own.space_kind == "pipeline" and bundled.space_kind == "tool"
    assert own.groups == bundled.groups and own.fingerprint == bundled.fingerprint
    np.testing.assert_array_equal(own.X_test, bundled.X_test)
    np.testing.assert_array_equal(own.baseline, bundled.baseline)
    pd.testing.assert_frame_equal(own.certificates.table, bundled.certificates.table)
    for name in ("labels", "high_confidence", "max_collapse"):
        np.testing.assert_array_equal(getattr(own.labels, name), getattr(bundled.labels, name), err_msg=name)
    # Missing values are found in both; the bundled dataset also declares special codes (a
    # 'Home' code meaning unknown) that plain user tables cannot declare.
    assert set(own.unavailable_groups) <= set(bundled.unavailable_groups) and own.unavailable_groups
    pd.testing.assert_frame_equal(own.scores, bundled.scores)
    pd.testing.assert_frame_equal(own.evaluation, bundled.evaluation)
    assert own.nominal == bundled.nominal


def test_audit_fitted_on_the_bundled_space_reproduces_run_audit(pair):
    bundled, _ = pair
    split = bundled.split
    space = FittedSpace(
        dataset=bundled.dataset,
        split=split,
        seed=bundled.seed,
        model_name=bundled.model_name,
        predictor=bundled.model,
        preprocessor=bundled.preprocessor,
        origins=_origins(bundled),
        X_train=bundled.preprocessor.transform(split.train),
        X_test=bundled.X_test,
        y_test=bundled.y_test,
        raw_test=bundled.raw_test,
        groups=bundled.groups,
        baseline=bundled.baseline,
        X_val=bundled.preprocessor.transform(split.val),
        y_val=split.y_val,
    )
    again = audit_fitted(space, config=AuditConfig(protocol=bundled.protocol, label_channel=bundled.label_channel))
    pd.testing.assert_frame_equal(again.certificates.table, bundled.certificates.table)
    pd.testing.assert_frame_equal(again.evaluation, bundled.evaluation)
    pd.testing.assert_frame_equal(again.calibration.metrics, bundled.calibration.metrics)
    assert again.notes == bundled.notes


def _origins(result):
    from core.tabular.spaces import feature_origins

    return tuple(feature_origins(result.preprocessor))


def test_a_fitted_space_needs_one_source_of_calibration_rows(pair):
    bundled, _ = pair
    fields = dict(
        dataset=bundled.dataset,
        split=bundled.split,
        seed=0,
        model_name="m",
        predictor=bundled.model,
        preprocessor=bundled.preprocessor,
        origins=_origins(bundled),
        X_train=bundled.X_test,
        X_test=bundled.X_test,
        y_test=bundled.y_test,
        raw_test=bundled.raw_test,
        groups=bundled.groups,
        baseline=bundled.baseline,
    )
    with pytest.raises(ValueError, match="either validation rows"):
        FittedSpace(**fields)
    with pytest.raises(ValueError, match="either validation rows"):
        FittedSpace(**fields, X_val=bundled.X_test, y_val=bundled.y_test, calibration_half=bundled.y_test == 0)


@pytest.mark.parametrize(
    ("change", "match"),
    [({"population": "most"}, "population"), ({"search": "greedy"}, "search"), ({"batch_size": 0}, "batch_size")],
    ids=["population", "search", "batch_size"],
)
def test_audit_config_refuses_bad_options(change, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(AuditConfig(protocol=Protocol(), label_channel=LabelChannel()), **change)
