"""Every model family of the registry survives the pickle-free task format exactly."""

from __future__ import annotations

import numpy as np
import pytest

from core.cfc import Protocol
from core.scale.certify import load_certify_task, save_certify_task, task_bytes, task_from_audit
from core.tabular.audit import run_audit
from core.tabular.models import MODEL_NAMES
from core.tabular.persist import FAMILIES, family_of

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
FAST = {
    "resmlp": {"epochs": 3},
    "fr_resmlp": {"epochs": 3},
    "random_forest": {"n_estimators": 20},
    "extra_trees": {"n_estimators": 20},
    "xgboost": {"n_estimators": 30},
    "lightgbm": {"n_estimators": 30},
    "mlp": {"max_iter": 50},
    "catboost": {"iterations": 30},
}
EXPECTED_FAMILY = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "catboost": "catboost",
    "resmlp": "torch",
    "fr_resmlp": "torch",
}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_saved_task_reloads_to_the_same_predictions_and_fingerprint(tmp_path, name):
    result = run_audit(
        "breast_cancer", model=name, seed=0, max_rows=240, protocol=Protocol(depth=2), model_params=FAST.get(name)
    )
    task = task_from_audit(result)
    assert family_of(task.model) == EXPECTED_FAMILY.get(name, "sklearn")
    path = save_certify_task(task, tmp_path / "task.zip")
    assert task_bytes(task) == path.read_bytes()  # deterministic: same task, same bytes
    back = load_certify_task(path)
    np.testing.assert_array_equal(back.model.predict_proba(result.X_test), task.model.predict_proba(result.X_test))
    np.testing.assert_array_equal(back.preprocessor.transform(result.raw_test), result.X_test)
    assert back.fingerprint() == result.fingerprint
    assert (back.groups, back.classes, back.protocol) == (task.groups, task.classes, task.protocol)


def test_sklearn_is_the_last_family_and_catches_everything_else():
    assert list(FAMILIES)[-1] == "sklearn"
    assert family_of(object()) == "sklearn"


def test_a_user_skops_file_needs_no_trust_for_numpy_dtype_only():
    """An imputer pipeline's only non-skops type is numpy.dtype (HARMLESS_TYPES): it loads as is.
    Gradient-boosting trees stay the user's decision: refused, and listed without numpy.dtype."""
    import skops.io as sio
    from own_models import penguin_pipeline, penguin_tables
    from sklearn.linear_model import LogisticRegression

    from core.tabular.model_files import load_model_bytes
    from core.tabular.persist import HARMLESS_TYPES, UntrustedTypesError

    assert HARMLESS_TYPES == {"numpy.dtype"}
    train, test = penguin_tables()
    plain = penguin_pipeline(train, LogisticRegression(max_iter=1000))
    data = sio.dumps(plain)
    assert sio.get_untrusted_types(data=data) == ["numpy.dtype"]  # skops itself still lists it
    loaded = load_model_bytes(data, "plain.skops")
    X = test.drop(columns="species")
    np.testing.assert_array_equal(loaded.predict_proba(X), plain.predict_proba(X))

    boosted = sio.dumps(penguin_pipeline(train))
    with pytest.raises(UntrustedTypesError) as info:
        load_model_bytes(boosted, "boosted.skops")
    assert info.value.types == ("sklearn.tree._tree.Tree",) and info.value.where == "boosted.skops"
    assert load_model_bytes(boosted, "boosted.skops", trust=["sklearn.tree._tree.Tree"]) is not None
