"""SPEC A.1 across machines: a certificate made under other CPU kernels verifies here.

The bundle is written by a child process whose kernels differ from this one's (emulated by
``tests/portable.py``: torch without AVX paths, OpenBLAS's SSE kernels, numpy without its
AVX2 loops), with the *same* fitted models, shipped to it in safe formats (a torch
``state_dict`` read with ``weights_only=True``, a skops file). ``verify`` here must say
"identical" or "within_tolerance", report its largest difference, and never "differs".
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from core.cfc import CertificateSet, Protocol, baseline_vector, certify, raw_origin_groups, verify
from core.tabular.datasets import load_dataset, split_dataset
from core.tabular.preprocessing import fit_preprocessor

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from portable import other_kernels_env  # noqa: E402

_CHILD = r"""
import json, sys
import numpy as np, skops.io as sio, torch
from core.cfc import Protocol, certify
folder = sys.argv[1]
spec = json.load(open(f"{folder}/problem.json"))
X = np.load(f"{folder}/X.npy")
net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
net.load_state_dict(torch.load(f"{folder}/net.pt", weights_only=True))
def torch_proba(A):
    with torch.no_grad():
        return torch.softmax(net(torch.from_numpy(np.asarray(A, dtype=np.float32))), dim=1).numpy()
mlp = sio.load(f"{folder}/mlp.skops")
for name, f in (("torch", torch_proba), ("mlp", mlp.predict_proba)):
    cs = certify(f, X, spec["groups"], np.asarray(spec["baseline"]), Protocol(), search="beam")
    cs.to_json(f"{folder}/{name}.json")
print(torch.backends.cpu.get_cpu_capability())
"""


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    """breast_cancer, two models that cross torch and BLAS kernels, saved for the child."""
    import skops.io as sio
    from sklearn.neural_network import MLPClassifier

    folder = tmp_path_factory.mktemp("cross_machine")
    ds = load_dataset("breast_cancer")
    split = split_dataset(ds, seed=0)
    pre = fit_preprocessor(split.train, ds.numeric, ds.categorical)
    X_train, X_test = pre.transform(split.train), pre.transform(split.test)[:60]
    groups = raw_origin_groups(pre.transformer)
    baseline = baseline_vector(X_train, groups, rule="mean")

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(X_train.shape[1], 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    xt = torch.from_numpy(X_train.astype(np.float32))
    yt = torch.from_numpy(split.y_train.astype(np.int64))
    for _ in range(100):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xt), yt).backward()
        opt.step()
    net.eval()
    torch.save(net.state_dict(), folder / "net.pt")
    mlp = MLPClassifier(hidden_layer_sizes=(32,), solver="lbfgs", max_iter=300, random_state=0).fit(
        X_train, split.y_train
    )
    sio.dump(mlp, folder / "mlp.skops")
    np.save(folder / "X.npy", X_test)
    (folder / "problem.json").write_text(json.dumps({"groups": groups, "baseline": baseline.tolist()}))

    def torch_proba(A):
        with torch.no_grad():
            return torch.softmax(net(torch.from_numpy(np.asarray(A, dtype=np.float32))), dim=1).numpy()

    torch_proba.net = net  # for the tests that re-round its logits
    return folder, X_test, {"torch": torch_proba, "mlp": mlp.predict_proba}, groups, baseline


@pytest.mark.portable
@pytest.mark.slow
def test_a_certificate_made_under_other_kernels_verifies_here(problem, cross_machine_note):
    folder, X, models, groups, baseline = problem
    env = other_kernels_env()
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    here = torch.backends.cpu.get_cpu_capability()
    for name, predict_proba in models.items():
        report = verify(folder / f"{name}.json", predict_proba, X)
        cross_machine_note(
            f"verify of a {name} certificate made under torch {done.stdout.strip()} kernels, "
            f"checked under {here}: {report}"
        )
        assert report.ok and report.verdict in ("identical", "within_tolerance"), str(report)
        assert report.mismatches.empty
        assert report.max_abs_diff <= 1e-4
        # the same bundle, checked with no tolerance at all, is only accepted if truly identical
        strict = verify(folder / f"{name}.json", predict_proba, X, rtol=0, atol=0)
        assert strict.verdict in ("identical", "differs")
        assert (strict.verdict == "identical") == (report.verdict == "identical" and report.max_abs_diff == 0)


def test_verify_says_identical_on_one_machine_and_reports_the_largest_difference(problem):
    folder, X, models, groups, baseline = problem
    cs = certify(models["torch"], X, groups, baseline, Protocol())
    report = verify(cs, models["torch"], X)
    assert report.verdict == "identical" and report.max_abs_diff == 0.0 and report.probe_max_abs_diff == 0.0
    assert "identical" in str(report)
    # A model nudged by 1e-7: not identical, but verified within the declared tolerance.
    nudged = lambda A: np.clip(models["torch"](A).astype(np.float64) * (1 + 1e-7), 0, 1)  # noqa: E731
    report = verify(cs, nudged, X)
    assert report.verdict == "within_tolerance" and report.ok, str(report)
    assert 0 < report.max_abs_diff < 1e-5 and report.max_diff_field is not None
    assert "largest difference" in str(report) and report.max_diff_field in str(report)
    # ... and refused with no tolerance, naming the fields.
    strict = verify(cs, nudged, X, rtol=0, atol=0)
    assert strict.verdict == "differs" and not strict.ok and strict.fields


def test_a_bundle_without_probe_values_cannot_pass_on_a_fingerprint_mismatch(problem):
    folder, X, models, groups, baseline = problem
    cs = certify(models["mlp"], X, groups, baseline, Protocol())
    bundle = cs.to_bundle()
    del bundle["probe_proba"]  # as written before probe values were stored
    bundle["fingerprint"] = "0" * 64
    report = verify(bundle, models["mlp"], X)
    assert report.verdict == "differs" and report.probe_max_abs_diff is None
    assert "stores no probe values" in str(report)


def _rounded_elsewhere(net, rel: float, seed: int):
    """The torch model as another CPU's float32 kernels compute it: every logit moved by up to
    ``rel`` of its size (between AVX-512 and no-AVX kernels this net's logits moved by at most
    2.9e-6 with logits up to 8.9: 3e-7 of the largest)."""
    rng = np.random.default_rng(seed)

    def proba(A):
        with torch.no_grad():
            z = net(torch.from_numpy(np.asarray(A, dtype=np.float32))).numpy().astype(np.float64)
        z = z * (1 + rel * rng.uniform(-1, 1, z.shape))
        return torch.softmax(torch.from_numpy(z.astype(np.float32)), dim=1).numpy()

    return proba


def test_drops_are_compared_at_the_size_of_their_margins(problem):
    """A drop is a difference of two margins: kernel rounding moves it by about rtol × |margin|,
    not rtol × |drop|. Such a recomputation verifies; a drop changed by 1e-3 still does not."""
    _, X, models, groups, baseline = problem
    net = models["torch"].net
    cs = certify(models["torch"], X, groups, baseline, Protocol())
    elsewhere = _rounded_elsewhere(net, 1e-6, seed=0)  # three times the measured gap
    moved = certify(elsewhere, X, groups, baseline, Protocol())
    own_size = np.isclose(moved.drops, cs.drops, rtol=1e-5, atol=1e-6)
    assert not own_size.all(), "the simulated rounding no longer exercises small drops"
    report = verify(cs, elsewhere, X)
    assert report.verdict in ("within_tolerance", "identical") and report.mismatches.empty, str(report)
    # The tolerance is still tight: a tampered drop (1e-3 log-odds) is found, with its sample.
    bundle = cs.to_bundle()
    width = len(groups)
    bundle["arrays"]["drops"]["data"][7 * width + 2] += 1e-3
    tampered = verify(bundle, models["torch"], X)
    assert not tampered.ok and "drops" in tampered.fields
    assert 7 in tampered.mismatches.loc[tampered.mismatches["field"] == "drops", "position"].tolist()


def _linear_problem(noise: float, seed: int):
    """A 2-class linear model whose logits reach 9 and many of whose samples sit near the
    boundary and flip on removal. ``noise`` moves every logit by up to that share of the sum of
    its terms' sizes, ``Σ|w_j x_j| + |b|``, the bound on a dot product's rounding that another
    CPU's kernels move within (the torch net above: 2.9e-6 at logits up to 8.9, 3e-7 of them)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0, 1, (6, 2))
    X = rng.normal(0, 1.5, (400, 6))
    X[:200] *= 0.02  # near the boundary
    groups = {"a": [0, 1], "b": [2, 3], "c": [4, 5]}
    jitter = np.random.default_rng(seed + 1)

    def proba(A):
        A = np.asarray(A, dtype=np.float64)
        z = np.clip(A @ W + (0.4, -0.4), -9, 9)
        z = z + noise * (np.abs(A) @ np.abs(W) + 0.4) * jitter.uniform(-1, 1, z.shape)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return proba, X, groups, np.zeros(6)


def _away_from_ties(cs: CertificateSet, gap: float) -> np.ndarray:
    """Rows none of whose margins (path, one-step, operators) lies within ``gap`` of 0: rounding of
    ``gap`` cannot flip any of their predictions, so only float fields may move."""
    parts = [cs.traj_margin, *[tr.margins.reshape(len(cs), -1) for tr in cs.operators.values()]]
    m = np.abs(np.concatenate([p.reshape(len(cs), -1) for p in parts], axis=1))
    return np.flatnonzero(np.nanmin(m, axis=1) > gap)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_samples_at_the_decision_boundary_verify_across_rounding(seed):
    """Collapse terms divide by |m0|: near the boundary their rounding error is large and grows
    with their own size; an honest recomputation with moved logits must still verify."""
    exact, X, groups, baseline = _linear_problem(0.0, seed)
    keep = _away_from_ties(certify(exact, X, groups, baseline, Protocol()), 1e-4)
    cs = certify(exact, X[keep], groups, baseline, Protocol())
    m0 = np.abs(cs.traj_margin[:, 0])
    assert m0.min() < 0.1 and (cs.table["flip_budget"] <= cs.depth).sum() > 50
    assert cs.table["rcma"].max() > 10  # large collapse terms exist
    moved, *_ = _linear_problem(3e-7, seed)  # the torch net's measured share
    report = verify(cs, moved, X[keep])
    assert report.ok and report.mismatches.empty, str(report)
    # ... where compared to their own size alone, or at S / |m0| without their own size, they would not
    again = certify(moved, X[keep], groups, baseline, Protocol())
    assert not np.isclose(again.collapse, cs.collapse, rtol=1e-5, atol=1e-6).all()
    S = np.abs(np.concatenate([cs.traj_margin, cs.drops], axis=1)).max(axis=1)
    for tr in cs.operators.values():
        S = np.maximum(S, np.abs(tr.margins).reshape(len(cs), -1).max(axis=1))
    assert (np.abs(again.collapse - cs.collapse) > 1e-6 + 1e-5 * (S / m0)[:, None]).any()


def test_a_derived_field_moved_within_its_wide_tolerance_is_still_caught():
    """Near m0 = 0 RCMA's tolerance is wide; the bundle's own margins pin it to 1e-12."""
    exact, X, groups, baseline = _linear_problem(0.0, 0)
    cs = certify(exact, X, groups, baseline, Protocol())
    i = int(np.argmin(np.abs(cs.traj_margin[:, 0])))
    bundle = cs.to_bundle()
    for field in ("rcma", "fds"):
        edited = copy.deepcopy(bundle)
        edited["table"]["data"][field][i] += 0.01
        report = verify(edited, exact, X)
        assert not report.ok and f"table.{field}" in report.fields, str(report)
        row = report.mismatches[report.mismatches["field"] == f"table.{field}"]
        assert i in row["position"].tolist() and "inconsistent" in str(row["actual"].iloc[0])
