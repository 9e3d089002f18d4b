"""AuditOptions: the one validated, frozen set of options :func:`run_audit` runs under."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pandas as pd
import pytest

from core.cfc.protocol import Protocol
from core.cfc.stressors import LabelChannel
from core.tabular.audit import AuditOptions, run_audit, run_sweep

SMALL = dict(model="logreg", seed=2, max_rows=300, protocol=Protocol(depth=2))


def test_the_defaults_are_the_documented_ones():
    o = AuditOptions()
    assert (o.model, o.seed, o.split, o.val_size, o.test_size, o.search, o.population) == (
        "hist_gb",
        0,
        "stratified",
        0.2,
        0.2,
        "none",
        "high_confidence",
    )
    assert o.protocol == Protocol() and o.label_channel == LabelChannel()
    assert (o.blocks, o.max_rows, o.model_params, o.n_random_orders, o.batch_size, o.n_threads) == (
        None,
        None,
        None,
        5,
        65536,
        1,
    )
    assert not (o.sensitivity or o.order_baselines or o.shap)
    # Every field is documented in the class docstring (numpydoc "Attributes").
    doc = inspect.getdoc(AuditOptions)
    for f in dataclasses.fields(AuditOptions):
        assert f"{f.name} :" in doc or f", {f.name} :" in doc or f"{f.name}, " in doc, f.name


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("model", "svm", r"`model` must be one of \[.*'hist_gb'.*\]; got 'svm'"),
        ("seed", -1, r"`seed` must be a non-negative int; got -1"),
        ("seed", True, r"`seed` must be a non-negative int; got True"),
        ("seed", 1.5, r"`seed` must be a non-negative int; got 1\.5"),
        ("protocol", "raw_origin", r"`protocol` must be a Protocol; got str"),
        ("label_channel", {"tau_p": 0.9}, r"`label_channel` must be a LabelChannel; got dict"),
        ("blocks", ["a", "b"], r"`blocks` must be a mapping .*; got list"),
        ("max_rows", 0, r"`max_rows` must be a positive int or None; got 0"),
        ("split", "random", r"`split` must be 'stratified' or 'official'; got 'random'"),
        ("val_size", 1.0, r"`val_size` must be a share in \(0, 1\); got 1\.0"),
        ("test_size", "0.2", r"`test_size` must be a share in \(0, 1\); got '0\.2'"),
        ("model_params", [("C", 1)], r"`model_params` must be a mapping or None; got list"),
        ("search", "greedy", r"`search` must be one of \('none', 'exact', 'beam', 'both'\); got 'greedy'"),
        ("sensitivity", 1, r"`sensitivity` must be True or False; got 1"),
        ("shap", "yes", r"`shap` must be True or False; got 'yes'"),
        ("n_random_orders", 0, r"`n_random_orders` must be a positive int; got 0"),
        ("population", "everyone", r"`population` must be 'high_confidence' or 'all'; got 'everyone'"),
        ("batch_size", 0, r"`batch_size` must be a positive int \(rows per predict_proba call\); got 0"),
        ("n_threads", -1, r"`n_threads` must be a positive int or None; got -1"),
    ],
)
def test_a_bad_option_is_refused_when_built_naming_it_and_its_value(field, value, match):
    with pytest.raises(ValueError, match=match):
        AuditOptions(**{field: value})
    # A changed copy is validated again.
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(AuditOptions(), **{field: value})


def test_options_are_frozen_keyword_only_and_keep_their_own_mappings():
    with pytest.raises(TypeError):
        AuditOptions("logreg")  # keyword-only
    o = AuditOptions(model="logreg")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.seed = 3
    blocks, params = {"Income": "money"}, {"C": 0.5}
    o = AuditOptions(blocks=blocks, model_params=params)
    blocks["Debt"], params["C"] = "money", 9.0
    assert o.blocks == {"Income": "money"} and o.model_params == {"C": 0.5}
    assert AuditOptions(model="logreg", seed=1) == AuditOptions(seed=1, model="logreg")


def test_run_audit_under_options_equals_the_field_shorthand():
    by_options = run_audit("breast_cancer", options=AuditOptions(**SMALL))
    by_fields = run_audit("breast_cancer", **SMALL)
    on_top = run_audit(
        "breast_cancer", options=AuditOptions(model="logreg"), seed=2, max_rows=300, protocol=Protocol(depth=2)
    )
    for other in (by_fields, on_top):
        assert other.fingerprint == by_options.fingerprint
        pd.testing.assert_frame_equal(other.evaluation, by_options.evaluation)
        np.testing.assert_array_equal(other.split.test_index, by_options.split.test_index)
    assert by_options.seed == 2 and by_options.model_name == "logreg" and by_options.protocol == Protocol(depth=2)


def test_run_audit_refuses_an_unknown_keyword_and_options_of_another_type():
    with pytest.raises(TypeError, match="unexpected keyword argument 'seeds'"):
        run_audit("breast_cancer", seeds=[0, 1])
    with pytest.raises(ValueError, match="`options` must be an AuditOptions; got dict"):
        run_audit("breast_cancer", options={"model": "logreg"})


def test_run_sweep_takes_the_options_and_sets_model_and_seed_per_unit():
    seen = []
    result = run_sweep(
        ["breast_cancer"],
        ["logreg"],
        [0, 1],
        n_resamples=10,
        options=AuditOptions(model="hist_gb", seed=9, max_rows=200, protocol=Protocol(depth=2)),
        on_result=lambda r: seen.append((r.model_name, r.seed, r.protocol.depth, len(r.dataset.frame))),
    )
    assert seen == [("logreg", 0, 2, 200), ("logreg", 1, 2, 200)]
    assert list(result.runs["seed"]) == [0, 1]
    with pytest.raises(TypeError, match="unexpected keyword argument 'verbose'"):
        run_sweep(["breast_cancer"], ["logreg"], [0], verbose=True)
    with pytest.raises(ValueError, match="`seed` is set by the sweep itself"):
        run_sweep(["breast_cancer"], ["logreg"], [0], seed=1)
