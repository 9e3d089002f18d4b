"""The image wing's folders name their version: ``probe``'s output (manifest and every Parquet
file) and the demo pool (manifest; the shipped pool, written before the tag, reads as version 1).
A pool written by a newer version is refused in the tool's words."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from core.formats import NewerFormatError, parquet_format_tag
from core.imaging.demo import DEFAULT_DIR, load_demo_images, load_demo_records
from core.imaging.probe import ProbeResult, write_probe_outputs


def test_probe_outputs_name_their_version_in_the_manifest_and_every_parquet_file(tmp_path):
    frames = {name: pd.DataFrame({"model": ["m", "m"], "record_id": [name, "b"]}) for name in ("c", "p", "n", "r")}
    result = ProbeResult(frames["c"], frames["p"], frames["n"], frames["r"], {"command": "probe"})
    names = write_probe_outputs(result, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["format"] == "probe-outputs/1" and manifest["command"] == "probe"
    for name, frame in zip(names[:4], frames.values()):
        assert parquet_format_tag(tmp_path / "out" / name) == "probe-outputs/1", name
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / name), frame)


def test_the_shipped_demo_pool_has_no_tag_and_reads_as_version_one():
    assert "format" not in json.loads((DEFAULT_DIR / "manifest.json").read_text())
    assert load_demo_images().manifest["seed"] == json.loads((DEFAULT_DIR / "manifest.json").read_text())["seed"]


def test_a_demo_pool_of_a_newer_version_is_refused(tmp_path):
    manifest = json.loads((DEFAULT_DIR / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "format": "demo-pool/99"}))
    for name in ("images.npz", "records.parquet"):
        (tmp_path / name).write_bytes((DEFAULT_DIR / name).read_bytes())
    message = f"{tmp_path}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."
    for load in (load_demo_images, load_demo_records):
        with pytest.raises(NewerFormatError, match=f"^{re.escape(message)}$"):
            load(tmp_path)
