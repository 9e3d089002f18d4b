"""The shipped demo pool: contracts, re-evaluation from the shipped models, re-training, screening.

What is reproducible where:

* everywhere, exactly: the images, the split, record ids and every condition's 8-bit model
  inputs (SHA-256 digests in the shipped files);
* everywhere, within float tolerance: the model outputs, re-evaluated from the shipped models
  (``assets/paired_demo/models/``). Probabilities agree within ``PROB_TOL``; a label may differ
  only where the re-evaluated top-2 gap is below ``PROB_TOL`` (a near-tie), and such labels are
  counted, reported and bounded by ``MAX_NEAR_TIES``;
* on one machine only, exactly: re-training. Elsewhere SGD amplifies kernel rounding, so a
  re-trained slice is only checked for agreement with the shipped labels.

Re-evaluation needs only the shipped files. Re-training, and checking the shipped images against
Fashion-MNIST, need Debian's ``dataset-fashion-mnist`` (``scripts/install.sh dev`` installs it);
those tests skip, saying so, when the folder is absent.
"""

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from core.imaging.corruptions import NATURAL_TRANSFORMS
from core.imaging.demo import (
    FASHION_MNIST_DIR,
    MODEL_SPECS,
    N_DEV_PER_CLASS,
    N_EVAL_PER_CLASS,
    N_TRAIN_PER_CLASS,
    build_demo_pool,
    demo_conditions,
    digit_images,
    fashion_mnist,
    load_demo_models,
    load_demo_pool,
    load_demo_records,
    pool_indices,
    reevaluate_demo_pool,
    render_condition,
    render_condition_image,
    save_demo_models,
    save_demo_pool,
)
from core.paired.records import validate_records
from core.paired.screening import condition_tiers, screening_metrics, screening_scores

SLICE_MODELS = ["cnn-w8", "logreg-c1"]
SLICE_CONDITIONS = [
    "gaussian_noise s2",
    "motion_blur s4",
    "jpeg_compression s4",
    "hflip",
    "rotate-10",
    "sim-recapture screen d1 c1",
    "sim-recapture screen d3 c2",
    "sim-recapture print p2 c1",
    "sim-recapture print p3 c3",
]
N_SIM = 18
needs_fashion_mnist = pytest.mark.skipif(
    not FASHION_MNIST_DIR.is_dir(),
    reason=f"Fashion-MNIST is not installed at {FASHION_MNIST_DIR} (apt-get install dataset-fashion-mnist); "
    "needed only to re-train the pool and to check its images against the dataset",
)
PROB_TOL = 1e-5
"""float32 probabilities of these small models differ by ~1e-7 between CPU kernels; 100x margin."""
MAX_NEAR_TIES = 5
"""Near-tie labels excused per comparison (expected 0 or a handful)."""
RETRAIN_AGREEMENT = 0.95
"""Share of clean labels a re-trained slice model must share with the shipped one. Training
amplifies last-bit differences over its epochs, so another CPU re-trains a sibling of the
shipped model, not a copy: on an AVX-512 machine cnn-w8 agreed on 97.5 % of the labels (eval
accuracy 0.822 vs 0.812), logreg-c1 on 99.9 %. 0.95 allows twice that measured gap; the
accuracy bound below (0.02) checks the sibling is as good."""


@pytest.fixture(scope="module")
def shipped():
    return load_demo_pool()


@pytest.fixture(scope="module")
def retrained(shipped):
    if not FASHION_MNIST_DIR.is_dir():
        pytest.skip(needs_fashion_mnist.kwargs["reason"])
    return build_demo_pool(seed=shipped.manifest["seed"], models=SLICE_MODELS, conditions=SLICE_CONDITIONS)


# ------------------------------------------------------------------------------------------
# the shipped files
# ------------------------------------------------------------------------------------------
def test_shipped_records_follow_the_paired_schema(shipped):
    rec = validate_records(shipped.records)
    assert set(rec["source"]) == {"synthetic", "simulated-recapture"}
    per_source = rec.groupby("source")["condition"].nunique().to_dict()
    assert per_source == {"synthetic": 18, "simulated-recapture": N_SIM}
    assert all(c.startswith("sim-recapture ") for c in rec.loc[rec["source"] == "simulated-recapture", "condition"])
    assert set(rec["split"]) == {"dev", "eval"}
    # one cell per model x condition, each holding every held-out image once
    cells = rec.groupby(["model", "condition"]).size()
    assert len(cells) == len(MODEL_SPECS) * (18 + N_SIM) and (cells == shipped.images.shape[0]).all()
    assert rec["model"].nunique() >= 10 and rec["group"].nunique() >= 4
    families = shipped.models["family"]
    assert {"cnn", "resnet", "mlp", "logistic"} <= set(families) and families.isin(
        ["random_forest", "extra_trees"]
    ).any()
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


def test_shipped_images_are_a_balanced_held_out_set(shipped):
    assert shipped.images.dtype == np.uint8 and shipped.images.shape[1:] == (28, 28)
    assert len(shipped.images) == 10 * (N_DEV_PER_CLASS + N_EVAL_PER_CLASS)
    counts = pd.crosstab(shipped.image_labels, shipped.image_splits)
    assert (counts["dev"] == N_DEV_PER_CLASS).all() and (counts["eval"] == N_EVAL_PER_CLASS).all()
    assert np.all(np.diff(shipped.image_ids) > 0)
    clean_split = shipped.clean.drop_duplicates("record_id").set_index("record_id")["split"]
    np.testing.assert_array_equal(shipped.image_splits, clean_split.loc[shipped.image_ids].to_numpy())


@needs_fashion_mnist
def test_shipped_images_are_the_fashion_mnist_test_images(shipped):
    data = fashion_mnist()
    np.testing.assert_array_equal(shipped.images, data["test_images"][shipped.image_ids])
    np.testing.assert_array_equal(shipped.image_labels, data["test_labels"][shipped.image_ids])
    from core._rng import as_generator

    split_rng, _, _ = as_generator(shipped.manifest["seed"]).spawn(3)
    train, held, split = pool_indices(data["train_labels"], data["test_labels"], seed=split_rng)
    np.testing.assert_array_equal(held, shipped.image_ids)
    np.testing.assert_array_equal(split, shipped.image_splits)


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
    assert len(metrics) == N_SIM * len(MODEL_SPECS) * 2
    assert metrics["coverage"].between(0, 1).all()
    assert (metrics["coverage"] <= metrics["ceiling"] + 1e-12).all()


# ------------------------------------------------------------------------------------------
# re-evaluation from the shipped models (any machine) and re-training (agreement only)
# ------------------------------------------------------------------------------------------
@pytest.mark.portable
def test_every_condition_renders_the_shipped_model_inputs(shipped):
    from core.imaging.demo import _digest

    assert _digest(shipped.images) == shipped.manifest["images_sha256"]
    seed = shipped.manifest["seed"]
    for row in shipped.conditions.itertuples():
        assert _digest(render_condition(shipped.images, row.condition, seed=seed)) == row.inputs_sha256, row.condition


def _outputs(predict, images_uint8):
    return predict(images_uint8.astype(np.float32) / 255.0).astype(np.float64)


def _check_labels(probs, shipped_pred, what):
    """Labels equal except near-ties; returns the number excused."""
    fresh = probs.argmax(axis=1)
    differ = np.flatnonzero(fresh != shipped_pred)
    gap = probs[differ, fresh[differ]] - probs[differ, shipped_pred[differ]]
    assert (gap < PROB_TOL).all(), (
        f"{what}: labels differ beyond near-ties at rows {differ[gap >= PROB_TOL][:10].tolist()} "
        f"(top-2 gaps {gap[gap >= PROB_TOL][:5].tolist()})"
    )
    return differ.size


@pytest.mark.portable
def test_the_shipped_models_reproduce_the_shipped_outputs(shipped, cross_machine_note):
    """Every shipped model, on the clean images and a slice of conditions, against the shipped tables."""
    models = load_demo_models()
    assert list(models) == [m.name for m in MODEL_SPECS]
    seed = shipped.manifest["seed"]
    inputs = {"clean": shipped.images}
    inputs.update({c: render_condition(shipped.images, c, seed=seed) for c in SLICE_CONDITIONS})
    excused, compared, largest = 0, 0, 0.0
    clean = shipped.clean.set_index(["model", "record_id"]).sort_index()
    pert = shipped.records.rename(
        columns={"pert_pred": "pred", "pert_max_prob": "max_prob", "pert_true_prob": "true_prob"}
    )
    # transforms exist as probes only, on evaluation images
    outputs = pd.concat([pert[pert["source"] != "synthetic"].rename(columns={"condition": "probe"}), shipped.probes])
    outputs = outputs.set_index(["model", "probe", "record_id"]).sort_index()
    for name, predict in models.items():
        for condition, images in inputs.items():
            probs = _outputs(predict, images)
            if condition == "clean":
                want = clean.loc[name].loc[shipped.image_ids]
                vectors = want[[f"prob_{c}" for c in range(10)]].to_numpy()
                np.testing.assert_allclose(probs, vectors, rtol=0, atol=PROB_TOL + 5e-7, err_msg=name)
            else:
                want = outputs.loc[(name, condition)]
                keep = np.isin(shipped.image_ids, want.index.to_numpy())
                probs, want = probs[keep], want.loc[shipped.image_ids[keep]]
            pred, max_prob, true_prob = want["pred"], want["max_prob"], want["true_prob"]
            y = want["true_label"].to_numpy()
            rows = np.arange(y.size)
            what = f"{name} / {condition}"
            excused += _check_labels(probs, pred.to_numpy(), what)
            compared += y.size
            for got, exp in ((probs.max(axis=1), max_prob), (probs[rows, y], true_prob)):
                np.testing.assert_allclose(got, exp.to_numpy(), rtol=0, atol=PROB_TOL, err_msg=what)
                largest = max(largest, float(np.abs(got - exp.to_numpy()).max()))
    cross_machine_note(
        f"demo pool re-evaluated from the shipped models: {compared} labels compared, "
        f"{excused} near-tie labels excused (bound {MAX_NEAR_TIES}), largest probability "
        f"difference {largest:.2e} (tolerance {PROB_TOL:g})"
    )
    assert excused <= MAX_NEAR_TIES


@pytest.mark.portable
def test_reevaluation_rebuilds_the_shipped_tables(shipped, tmp_path):
    """The library path (reevaluate_demo_pool) through the storage round trip, on a slice."""
    conditions = SLICE_CONDITIONS[:3]
    fresh = reevaluate_demo_pool(models=SLICE_MODELS, conditions=conditions)
    save_demo_pool(fresh, tmp_path)
    back = load_demo_pool(tmp_path)
    keys = ["model", "condition", "record_id"]
    got = back.records.sort_values(keys).reset_index(drop=True)
    want = shipped.records[shipped.records["model"].isin(SLICE_MODELS) & shipped.records["condition"].isin(conditions)]
    want = want.sort_values(keys).reset_index(drop=True)
    assert list(got.columns) == list(want.columns) and len(got) == len(want) > 0
    for col in got.columns:
        if pd.api.types.is_float_dtype(got[col].dtype):
            np.testing.assert_allclose(got[col], want[col], rtol=0, atol=PROB_TOL, err_msg=col)
        elif col not in ("clean_pred", "pert_pred"):  # labels: near-ties checked above
            np.testing.assert_array_equal(got[col].astype(str), want[col].astype(str), err_msg=col)
    differ = (got["pert_pred"] != want["pert_pred"]) | (got["clean_pred"] != want["clean_pred"])
    assert differ.sum() <= MAX_NEAR_TIES
    cond = back.conditions.set_index("condition")["inputs_sha256"]
    assert cond.to_dict() == shipped.conditions.set_index("condition").loc[conditions, "inputs_sha256"].to_dict()
    np.testing.assert_array_equal(back.images, shipped.images)
    np.testing.assert_array_equal(back.image_ids, shipped.image_ids)


def test_reevaluation_is_bit_identical_on_one_machine():
    a = reevaluate_demo_pool(models=["cnn-w8", "random-forest"], conditions=SLICE_CONDITIONS[:2])
    b = reevaluate_demo_pool(models=["cnn-w8", "random-forest"], conditions=SLICE_CONDITIONS[:2])
    for role in ("records", "probes", "clean"):
        pd.testing.assert_frame_equal(getattr(a, role), getattr(b, role), check_exact=True)


def test_retraining_agrees_with_the_shipped_models(shipped, retrained, cross_machine_note):
    """Re-training is exact only on the machine that trained the pool; elsewhere it must agree."""
    assert set(retrained.fitted) == set(SLICE_MODELS)
    for name in SLICE_MODELS:
        got = retrained.clean[retrained.clean["model"] == name].set_index("record_id")["pred"]
        want = shipped.clean[shipped.clean["model"] == name].set_index("record_id").loc[got.index, "pred"]
        agreement = float((got == want).mean())
        acc = shipped.models.set_index("model").loc[name, "eval_accuracy"]
        racc = retrained.models.set_index("model").loc[name, "eval_accuracy"]
        cross_machine_note(
            f"re-trained {name}: {agreement:.2%} of clean labels equal the shipped model's; "
            f"eval accuracy {racc:.3f} vs {acc:.3f}"
        )
        assert agreement >= RETRAIN_AGREEMENT, name
        assert abs(racc - acc) <= 0.02, name
    # the conditions' inputs do not depend on the models
    digests = retrained.conditions.set_index("condition")["inputs_sha256"]
    assert digests.to_dict() == shipped.conditions.set_index("condition").loc[digests.index, "inputs_sha256"].to_dict()


def test_saved_models_predict_exactly_what_was_trained(retrained, tmp_path):
    """The storage formats lose nothing: a saved and re-loaded model gives the same bits."""
    save_demo_models(retrained.fitted, tmp_path)
    loaded = load_demo_models(tmp_path, models=SLICE_MODELS)
    x = retrained.images[:64].astype(np.float32) / 255.0
    from core.imaging.demo import _SPECS_BY_NAME, _predictor

    for name, model in retrained.fitted.items():
        np.testing.assert_array_equal(loaded[name](x), _predictor(_SPECS_BY_NAME[name], model)(x), err_msg=name)


# ------------------------------------------------------------------------------------------
# loading models: nothing foreign runs, nothing corrupt is used
# ------------------------------------------------------------------------------------------
class _Payload:
    """A pickle that would create a marker file if it were ever unpickled."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _pool_copy(tmp_path, names):
    import shutil

    from core.imaging.demo import DEFAULT_DIR

    (tmp_path / "models").mkdir()
    shutil.copy(DEFAULT_DIR / "manifest.json", tmp_path / "manifest.json")
    for name in names:
        for ext in (".pt", ".skops"):
            src = DEFAULT_DIR / "models" / f"{name}{ext}"
            if src.exists():
                shutil.copy(src, tmp_path / "models" / src.name)
    return tmp_path


def test_a_pickle_planted_as_a_torch_model_never_runs(tmp_path):
    import pickle

    import torch

    folder = _pool_copy(tmp_path, ["cnn-w8"])
    marker = tmp_path / "pwned"
    torch.save({"weight": _Payload(marker)}, folder / "models" / "cnn-w8.pt", pickle_module=pickle)
    with pytest.raises(ValueError, match="cnn-w8.pt is not a readable cnn model"):
        load_demo_models(folder, models=["cnn-w8"])
    assert not marker.exists()


def test_a_skops_model_with_foreign_types_is_refused(tmp_path):
    import skops.io as sio
    from sklearn.pipeline import FunctionTransformer

    folder = _pool_copy(tmp_path, [])
    sio.dump(FunctionTransformer(func=os.system), folder / "models" / "logreg-c1.skops")
    with pytest.raises(ValueError, match=r"holds types this pool never writes: \['posix.system'\]"):
        load_demo_models(folder, models=["logreg-c1"])
    sio.dump(FunctionTransformer(), folder / "models" / "logreg-c1.skops")  # trusted, but not the model
    with pytest.raises(ValueError, match="holds a FunctionTransformer; this pool's logreg-c1 is a LogisticRegression"):
        load_demo_models(folder, models=["logreg-c1"])


def test_a_forest_with_out_of_range_nodes_is_refused(tmp_path, shipped):
    import skops.io as sio

    folder = _pool_copy(tmp_path, ["random-forest"])
    path = folder / "models" / "random-forest.skops"
    forest = sio.load(path, trusted=["sklearn.tree._tree.Tree"])
    state = forest.estimators_[3].tree_.__getstate__()
    state["nodes"]["left_child"][0] = 10**6
    forest.estimators_[3].tree_.__setstate__(state)
    sio.dump(forest, path)
    with pytest.raises(ValueError, match="tree 3 has node indices outside"):
        load_demo_models(folder, models=["random-forest"])


def test_truncated_and_missing_model_files_name_the_file(tmp_path):
    folder = _pool_copy(tmp_path, ["cnn-w8", "extra-trees"])
    for name in ("cnn-w8.pt", "extra-trees.skops"):
        path = folder / "models" / name
        path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="cnn-w8.pt is not a readable cnn model"):
        load_demo_models(folder, models=["cnn-w8"])
    with pytest.raises(ValueError, match="extra-trees.skops is not a readable extra_trees model"):
        load_demo_models(folder, models=["extra-trees"])
    with pytest.raises(FileNotFoundError, match="mlp-128.pt is missing"):
        load_demo_models(folder, models=["mlp-128"])
    with pytest.raises(ValueError, match="`models` must be distinct names"):
        load_demo_models(folder, models=["resnet-w99"])


def test_render_condition_reproduces_the_model_inputs(shipped):
    seed = shipped.manifest["seed"]
    for condition in ("rotate-10", "sim-recapture print p2 c3", "sim-recapture screen d2 c1"):
        a = render_condition(shipped.images, condition, seed=seed)
        np.testing.assert_array_equal(a, render_condition(shipped.images, condition, seed=seed))
        assert a.dtype == np.uint8 and a.shape == shipped.images.shape
    # the generator feeds float32 images / 255 to the float64 batch transform, then 8-bit quantises
    x = (shipped.images[:5].astype(np.float32) / 255.0).astype(np.float64)
    expected = np.rint(np.clip(NATURAL_TRANSFORMS["rotate-10"](x), 0, 1) * 255.0).astype(np.uint8)
    np.testing.assert_array_equal(render_condition(shipped.images, "rotate-10", seed=seed)[:5], expected)
    with pytest.raises(ValueError, match="`condition` must be one of the pool's conditions"):
        render_condition(shipped.images, "fog s3")


@pytest.mark.slow
def test_one_image_rendered_alone_equals_its_image_in_the_whole_pools_render(shipped):
    """The Recapture page renders the inspected image alone under every probe that draws nothing."""
    seed = shipped.manifest["seed"]
    n = len(shipped.images)
    positions = [0, 1, n // 3, n // 2, n - 2, n - 1]
    alone = []
    for condition in demo_conditions()["condition"]:
        first = render_condition_image(shipped.images, positions[0], condition, seed=seed)
        if first is None:
            continue
        alone.append(condition)
        full = render_condition(shipped.images, condition, seed=seed)
        for i in positions:
            got = first if i == positions[0] else render_condition_image(shipped.images, i, condition, seed=seed)
            np.testing.assert_array_equal(got, full[i], err_msg=f"{condition}, image {i}")
    # Every natural transform, the five deterministic corruptions and motion blur (its angles
    # drawn for the batch, one image streaked; two severities each) go alone; noise and the
    # simulated recaptures draw from the images' values and need the whole batch.
    families = set(demo_conditions().set_index("condition").loc[alone, "family"])
    assert families == set(NATURAL_TRANSFORMS) | {
        "defocus_blur",
        "motion_blur",
        "contrast",
        "brightness",
        "pixelate",
        "jpeg_compression",
    }
    with pytest.raises(ValueError, match=r"`index` must be in \[0, 1500\); got 1500"):
        render_condition_image(shipped.images, n, "hflip", seed=seed)


# ------------------------------------------------------------------------------------------
# building blocks
# ------------------------------------------------------------------------------------------
def test_digit_images_are_ink_on_white_pages():
    """The bundled digits (not the pool any more) stay the corruption tests' small images."""
    images, labels = digit_images()
    assert images.shape == (1797, 32, 32) and images.dtype == np.uint8
    assert (images[:, :4, :] == 255).all() and (images[:, :, :4] == 255).all()  # white margins
    assert images.min() == 0 and np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_pool_indices_are_balanced_disjoint_and_seeded():
    rng = np.random.default_rng(0)
    train_labels = np.repeat(np.arange(10), 700)[rng.permutation(7000)]
    test_labels = np.repeat(np.arange(10), 160)[rng.permutation(1600)]
    train, held, split = pool_indices(train_labels, test_labels, seed=3)
    again = pool_indices(train_labels, test_labels, seed=3)
    for a, b in zip((train, held, split), again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(held, pool_indices(train_labels, test_labels, seed=4)[1])
    assert np.bincount(train_labels[train]).tolist() == [N_TRAIN_PER_CLASS] * 10
    assert np.unique(train).size == train.size and np.unique(held).size == held.size
    assert np.all(np.diff(held) > 0)
    table = pd.crosstab(test_labels[held], split)
    assert (table["dev"] == N_DEV_PER_CLASS).all() and (table["eval"] == N_EVAL_PER_CLASS).all()
    with pytest.raises(ValueError, match="class 0 has 10 training"):
        pool_indices(np.zeros(10, int), test_labels, seed=0)


def _idx(path, magic, shape, body=None):
    import gzip

    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in shape)
    body = bytes(int(np.prod(shape))) if body is None else body
    path.write_bytes(gzip.compress(header + body))


def _fake_fashion(folder, n_train=3, n_test=2):
    _idx(folder / "train-images-idx3-ubyte.gz", 0x803, (n_train, 28, 28))
    _idx(folder / "train-labels-idx1-ubyte.gz", 0x801, (n_train,), bytes(range(n_train)))
    _idx(folder / "t10k-images-idx3-ubyte.gz", 0x803, (n_test, 28, 28))
    _idx(folder / "t10k-labels-idx1-ubyte.gz", 0x801, (n_test,), bytes([9] * n_test))


def test_the_fashion_mnist_reader_parses_idx_and_names_bad_files(tmp_path):
    _fake_fashion(tmp_path)
    data = fashion_mnist(tmp_path)
    assert data["train_images"].shape == (3, 28, 28) and data["train_labels"].tolist() == [0, 1, 2]
    assert data["test_labels"].dtype == np.int64 and data["test_labels"].tolist() == [9, 9]
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 0x801, (5,), bytes(4))
    with pytest.raises(
        ValueError,
        match=r"t10k-labels-idx1-ubyte.gz: header announces shape \(5,\) \(5 bytes\) "
        "but 4 bytes follow",
    ):
        fashion_mnist(tmp_path)
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 0x803, (2,), bytes(2))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz: not an IDX file of 1-d uint8 data"):
        fashion_mnist(tmp_path)
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 0x801, (3,), bytes(3))
    with pytest.raises(ValueError, match=r"test images \(2, 28, 28\) and labels \(3,\)"):
        fashion_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte.*is missing; install the dataset"):
        fashion_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        build_demo_pool(tmp_path / "nowhere", models=["cnn-w8"])


def test_the_condition_table_lists_every_variant_once():
    table = demo_conditions()
    assert table["condition"].is_unique and len(table) == 18 + 18 + N_SIM
    assert table.groupby("source").size().to_dict() == {"simulated-recapture": N_SIM, "synthetic": 18, "transform": 18}
    sim = table[table["source"] == "simulated-recapture"]
    assert sim["medium"].value_counts().to_dict() == {"screen": 9, "print": 9}
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
    with pytest.raises(FileNotFoundError, match="missing 'records.parquet'"):
        load_demo_records(tmp_path)


def test_the_records_alone_are_the_pools_records(shipped):
    """Paired bounds reads the records without the rest of the pool; the pool built on them
    afterwards holds the same frame, read once."""
    records = load_demo_records()
    pd.testing.assert_frame_equal(records, shipped.records, check_exact=True)
    pool = load_demo_pool(records=records)
    assert pool.records is records
    pd.testing.assert_frame_equal(pool.probes, shipped.probes, check_exact=True)


def _expand_twin(df: pd.DataFrame) -> pd.DataFrame:
    """The per-row conversion ``_expand`` made before it gathered categories: the reference."""
    out = df.copy()
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].astype(str)
        elif np.issubdtype(out[col].dtype, np.integer):
            out[col] = out[col].astype(np.int64)
        elif out[col].dtype == np.float32:
            out[col] = out[col].astype(np.float64)
    return out


def test_expand_equals_the_row_by_row_conversion():
    """Every shipped table, and (as pools written before stored them) categoricals with unused and
    missing categories, int8 and float32 columns, read back as the row-by-row ``astype(str)``
    reads them, dtypes included."""
    from core.imaging.demo import _FILES, DEFAULT_DIR, _expand

    for role in ("records", "probes", "clean", "models", "conditions"):
        stored = pd.read_parquet(DEFAULT_DIR / _FILES[role])
        pd.testing.assert_frame_equal(_expand(stored), _expand_twin(stored), check_exact=True)
        # Shipped tables are stored as they are used: read back without a conversion or a copy.
        assert _expand(stored) is stored, role
    odd = pd.DataFrame(
        {
            "unused": pd.Categorical(["b", "a", "b"], categories=["a", "b", "z"]),
            "missing": pd.Categorical(["a", None, "a"]),
            "numbers": pd.Categorical([3, 1, 3]),
            "plain": pd.array(["x", "y", None], dtype="string"),
            "k": np.array([1, 2, 3], dtype=np.int8),
            "p": np.array([0.5, 0.25, 1.0], dtype=np.float32),
        }
    )
    pd.testing.assert_frame_equal(_expand(odd), _expand_twin(odd), check_exact=True)


def test_the_images_alone_and_one_images_probes_are_the_pools(shipped):
    """The Recapture queue reads the images, and one image's probe outputs, without the pool's tables."""
    from core.imaging.demo import PROBE_VIEW_COLUMNS, load_demo_images, load_demo_probes_of

    shown = load_demo_images()
    for name in ("images", "image_ids", "image_labels", "image_splits"):
        np.testing.assert_array_equal(getattr(shown, name), getattr(shipped, name), err_msg=name)
        assert getattr(shown, name).dtype == getattr(shipped, name).dtype, name
    assert shown.manifest == shipped.manifest
    probes = shipped.probes
    for model, record_id in [
        (probes["model"].iloc[0], probes["record_id"].iloc[0]),
        (probes["model"].iloc[-1], probes["record_id"].iloc[-1]),
    ]:
        want = probes[(probes["model"] == model) & (probes["record_id"] == record_id)][list(PROBE_VIEW_COLUMNS)]
        got = load_demo_probes_of(model, record_id)
        assert len(got) == len(want) > 0
        pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_exact=True)
    assert load_demo_probes_of("no such model", 0).empty


def test_the_partial_readers_name_a_missing_file(tmp_path):
    from core.imaging.demo import load_demo_images, load_demo_probes_of

    with pytest.raises(FileNotFoundError, match="missing 'images.npz', 'manifest.json'"):
        load_demo_images(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing 'probes.parquet'"):
        load_demo_probes_of("cnn-w8", 0, tmp_path)
