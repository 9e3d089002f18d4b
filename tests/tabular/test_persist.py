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
