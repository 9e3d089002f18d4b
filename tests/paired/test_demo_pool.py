"""The shipped demo pool: contracts, a regenerated slice against the shipped files, screening on it.

Regeneration tolerance: integer columns (ids, labels, predictions, splits) and images must be
identical; probabilities must agree within 1e-5 absolute. On the machine that generated the
pool (same CPU and library versions) the slice is bit-identical; the tolerance absorbs
float32 differences between CPU instruction sets in torch and BLAS kernels.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

from core.paired.corruptions import NATURAL_TRANSFORMS
from core.paired.demo import (
    MODEL_SPECS,
    build_demo_pool,
    demo_conditions,
    digit_images,
    load_demo_pool,
    render_condition,
    save_demo_pool,
    split_images,
)
from core.paired.records import validate_records
from core.paired.screening import condition_tiers, screening_metrics, screening_scores

SLICE_MODELS = ["cnn-w8", "logreg-c1"]
SLICE_CONDITIONS = ["gaussian_noise s2", "motion_blur s4", "jpeg_compression s4", "hflip", "rotate-10",
                    "sim-recapture p1 g1 e1", "sim-recapture p2 g3 e2", "sim-recapture p3 g3 e3"]
PROB_TOL = 1e-5


@pytest.fixture(scope="module")
def shipped():
    return load_demo_pool()


@pytest.fixture(scope="module")
def regenerated(shipped):
    return build_demo_pool(seed=shipped.manifest["seed"], models=SLICE_MODELS, conditions=SLICE_CONDITIONS)


# ------------------------------------------------------------------------------------------
# the shipped files
# ------------------------------------------------------------------------------------------
def test_shipped_records_follow_the_paired_schema(shipped):
    rec = validate_records(shipped.records)
    assert set(rec["source"]) == {"synthetic", "simulated-recapture"}
    per_source = rec.groupby("source")["condition"].nunique().to_dict()
    assert per_source == {"synthetic": 18, "simulated-recapture": 27}
    assert all(c.startswith("sim-recapture ") for c in rec.loc[rec["source"] == "simulated-recapture", "condition"])
    assert set(rec["split"]) == {"dev", "eval"}
    # one cell per model x condition, each holding every held-out image once
    cells = rec.groupby(["model", "condition"]).size()
    assert len(cells) == len(MODEL_SPECS) * 45 and (cells == shipped.images.shape[0]).all()
    assert rec["model"].nunique() >= 8 and rec["group"].nunique() >= 4
    assert "simulations" in shipped.manifest["simulated"]


def test_shipped_tables_agree_with_each_other(shipped):
    clean = shipped.clean.set_index(["model", "record_id"])
    rec = shipped.records
    joined = clean.loc[pd.MultiIndex.from_frame(rec[["model", "record_id"]])]
    np.testing.assert_array_equal(rec["clean_pred"].to_numpy(), joined["pred"].to_numpy())
    np.testing.assert_array_equal(rec["clean_max_prob"].to_numpy(), joined["max_prob"].to_numpy())
    # the corruption probes are the synthetic cells' perturbed sides
    syn = rec[rec["source"] == "synthetic"].set_index(["model", "record_id", "condition"])
    probes = shipped.probes
    corr = probes[probes["kind"] == "corruption"].set_index(["model", "record_id", "probe"])
    assert len(corr) == len(syn)
    syn = syn.loc[corr.index]
    np.testing.assert_array_equal(corr["pred"].to_numpy(), syn["pert_pred"].to_numpy())
    np.testing.assert_array_equal(corr["true_prob"].to_numpy(), syn["pert_true_prob"].to_numpy())
    # transforms on evaluation images only; probability vectors only on scored images
    tta = probes[probes["kind"] == "transform"]
    assert tta["probe"].nunique() == 18
    split = shipped.clean.drop_duplicates("record_id").set_index("record_id")["split"]
    assert (split.loc[tta["record_id"]] == "eval").all()
    scored = shipped.clean[(shipped.clean["split"] == "eval") & (shipped.clean["pred"] == shipped.clean["true_label"])]
    has_vec = probes["prob_0"].notna()
    key = pd.MultiIndex.from_frame(probes[["model", "record_id"]])
    assert (has_vec.to_numpy() == key.isin(pd.MultiIndex.from_frame(scored[["model", "record_id"]]))).all()


def test_shipped_images_are_the_held_out_digits(shipped):
    images, labels = digit_images()
    assert shipped.images.dtype == np.uint8 and shipped.images.shape[1:] == (32, 32)
    np.testing.assert_array_equal(shipped.images, images[shipped.image_ids])
    np.testing.assert_array_equal(shipped.image_labels, labels[shipped.image_ids])
    clean_split = shipped.clean.drop_duplicates("record_id").set_index("record_id")["split"]
    np.testing.assert_array_equal(shipped.image_splits, clean_split.loc[shipped.image_ids].to_numpy())


def test_screening_runs_on_the_shipped_pool_and_all_tiers_occur(shipped):
    real = shipped.records[shipped.records["source"] == "simulated-recapture"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pool has everything every score needs
        scores = screening_scores(shipped.probes, shipped.clean, outcomes=real)
    cc = shipped.clean[(shipped.clean["split"] == "eval") & (shipped.clean["pred"] == shipped.clean["true_label"])]
    assert len(scores) == len(cc)
    assert scores[["U", "A3", "TTA", "A3_TTA", "class_delta", "g_SU"]].notna().all().all()
    tiers = condition_tiers(real)
    assert set(tiers["tier"]) == {"mild", "severe", "extreme"}
    metrics = screening_metrics(scores, real, score_names=["S", "U"], budgets=0.2)
    assert len(metrics) == 27 * len(MODEL_SPECS) * 2
    assert metrics["coverage"].between(0, 1).all()
    assert (metrics["coverage"] <= metrics["ceiling"] + 1e-12).all()


# ------------------------------------------------------------------------------------------
# regeneration of a slice
# ------------------------------------------------------------------------------------------
def _compare(got: pd.DataFrame, want: pd.DataFrame, keys: list[str]):
    got = got.sort_values(keys).reset_index(drop=True)
    want = want.sort_values(keys).reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want) > 0
    for col in got.columns:
        a, b = got[col].to_numpy(), want[col].to_numpy()
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=0, atol=PROB_TOL,
                                       err_msg=col)
        else:
            np.testing.assert_array_equal(a.astype(str), b.astype(str), err_msg=col)


def test_a_regenerated_slice_matches_the_shipped_files(shipped, regenerated, tmp_path):
    save_demo_pool(regenerated, tmp_path)
    fresh = load_demo_pool(tmp_path)  # through the same storage round trip as the shipped files
    in_slice = lambda df, col: df[df["model"].isin(SLICE_MODELS) & df[col].isin(SLICE_CONDITIONS)]  # noqa: E731
    _compare(fresh.records, in_slice(shipped.records, "condition"), ["model", "condition", "record_id"])
    _compare(fresh.probes, in_slice(shipped.probes, "probe"), ["model", "probe", "record_id"])
    _compare(fresh.clean, shipped.clean[shipped.clean["model"].isin(SLICE_MODELS)], ["model", "record_id"])
    _compare(fresh.models, shipped.models[shipped.models["model"].isin(SLICE_MODELS)], ["model"])
    np.testing.assert_array_equal(fresh.images, shipped.images)
    np.testing.assert_array_equal(fresh.image_ids, shipped.image_ids)


def test_render_condition_reproduces_the_model_inputs(shipped):
    seed = shipped.manifest["seed"]
    for condition in ("rotate-10", "sim-recapture p2 g1 e3"):
        a = render_condition(shipped.images, condition, seed=seed)
        np.testing.assert_array_equal(a, render_condition(shipped.images, condition, seed=seed))
        assert a.dtype == np.uint8 and a.shape == shipped.images.shape
    # the generator feeds float32 images / 255 to the float64 batch transform, then 8-bit quantises
    x = (shipped.images[:5].astype(np.float32) / 255.0).astype(np.float64)
    expected = np.rint(np.clip(NATURAL_TRANSFORMS["rotate-10"](x), 0, 1) * 255.0).astype(np.uint8)
    np.testing.assert_array_equal(render_condition(shipped.images, "rotate-10", seed=seed)[:5], expected)
    with pytest.raises(ValueError, match="`condition` must be one of the pool's conditions"):
        render_condition(shipped.images, "fog s3")


# ------------------------------------------------------------------------------------------
# building blocks
# ------------------------------------------------------------------------------------------
def test_digit_images_are_ink_on_white_pages():
    images, labels = digit_images()
    assert images.shape == (1797, 32, 32) and images.dtype == np.uint8
    assert (images[:, :4, :] == 255).all() and (images[:, :, :4] == 255).all()  # white margins
    assert images.min() == 0 and np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_split_is_stratified_and_seeded():
    _, labels = digit_images()
    split = split_images(labels, seed=3)
    np.testing.assert_array_equal(split, split_images(labels, seed=3))
    assert not np.array_equal(split, split_images(labels, seed=4))
    for label in range(10):
        n = (labels == label).sum()
        counts = pd.Series(split[labels == label]).value_counts()
        assert counts["train"] == round(2 * n / 3)
        assert counts["dev"] - counts["eval"] in (0, 1)


def test_the_condition_table_lists_every_variant_once():
    table = demo_conditions()
    assert table["condition"].is_unique and len(table) == 18 + 18 + 27
    assert table.groupby("source").size().to_dict() == {"simulated-recapture": 27, "synthetic": 18, "transform": 18}
    assert set(table.loc[table["source"] == "synthetic", "severity"]) == {2, 4}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(models=["resnet"]), "`models` must be distinct names"),
        (dict(models=["cnn-w8", "cnn-w8"]), "`models` must be distinct names"),
        (dict(models=[]), "`models` must be distinct names"),
        (dict(conditions=["fog s3"]), "`conditions` must be distinct names"),
    ],
    ids=["unknown-model", "duplicate-model", "no-model", "unknown-condition"],
)
def test_build_rejects_unknown_names(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_demo_pool(**kwargs)


def test_loading_an_incomplete_folder_names_the_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing .*records.parquet"):
        load_demo_pool(tmp_path)
