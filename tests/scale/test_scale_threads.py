"""``certify``'s threads (issue 39): every core by default, ``threads`` / ``--threads`` to set them.

The number goes in the manifest (``execution.threads``); the certificates of the tool's model
do not depend on it; an ONNX model's session is rebuilt with it in every process, and its
probabilities agree within the stated tolerance across numbers (identical at one number).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scale_constants import CHUNK_ROWS

from core.cli import main
from core.onnx_session import THREAD_ATOL, THREAD_RTOL, default_threads
from core.scale.certify import ThreadedTask, certify_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))


def _files(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "_manifest.json"}


def test_manifest_records_the_threads_and_the_certificates_do_not_depend_on_them(tmp_path, credit_parquet, spec):
    one = certify_dataset(credit_parquet, tmp_path / "one", spec, chunk_rows=CHUNK_ROWS, threads=1)
    default = certify_dataset(credit_parquet, tmp_path / "default", spec, chunk_rows=CHUNK_ROWS)
    threads = {
        name: json.loads((tmp_path / name / "_manifest.json").read_text())["execution"]["threads"]
        for name in ("one", "default")
    }
    assert threads == {"one": 1, "default": default_threads()}
    assert one.fingerprint == default.fingerprint
    assert _files(tmp_path / "one") == _files(tmp_path / "default")


def test_cli_threads_option(tmp_path, credit_parquet, capsys):
    argv = ["certify", "--data", str(credit_parquet), "--target", "Status", "--model", "logreg", "--fit-rows", "1000"]
    argv += ["--chunk-rows", str(CHUNK_ROWS), "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--threads", "1"]) == 0
    assert json.loads((tmp_path / "out" / "_manifest.json").read_text())["execution"] == {"threads": 1}
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(tmp_path / "bad"), "--threads", "-2"])
    assert exit_.value.code == 2
    assert "--threads" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_threads_are_checked_before_any_work(tmp_path, credit_parquet, spec):
    with pytest.raises(ValueError, match=r"`threads` must be a positive int or None .*got 0"):
        certify_dataset(credit_parquet, tmp_path / "out", spec, threads=0)
    assert not (tmp_path / "out").exists()


def test_an_onnx_model_runs_on_the_tasks_threads():
    from own_models import default_tables, logreg_to_onnx, raw_logreg

    from core.tabular.onnx_model import OnnxClassifier

    train, test = default_tables(n_train=600, n_test=300)
    onnx_bytes = logreg_to_onnx(raw_logreg(train))
    model = OnnxClassifier(onnx_bytes, feature_order=["balance", "income"], classes=["No", "Yes"], threads=2)
    assert model.threads == 2 and model.with_threads(2) is model
    single = model.with_threads(1)
    assert single.threads == 1 and single._session.get_session_options().intra_op_num_threads == 1
    frame = pd.DataFrame(test[["balance", "income"]])
    p1, p2 = single.predict_proba(frame), model.predict_proba(frame)
    np.testing.assert_allclose(p2, p1, rtol=THREAD_RTOL, atol=THREAD_ATOL)
    np.testing.assert_array_equal(model.with_threads(2).predict_proba(frame), p2)

    @dataclass(frozen=True)
    class Probe:  # what ThreadedTask needs of a CertifyTask: a dataclass with a model, called per partition
        model: object

        def __call__(self, table, row_start):
            return self.model

    wrapped = ThreadedTask(Probe(model), 1)
    used = wrapped(None, 0)
    assert used.threads == 1 and wrapped(None, 0) is used  # rebuilt once per process
    assert ThreadedTask(Probe(model), 2)(None, 0) is model
