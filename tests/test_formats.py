"""The format versions (``core.formats``): tags parsed, a newer version refused in the tool's words,
an older, foreign or missing tag refused saying what was expected, and every module writing the
version the registry names."""

from __future__ import annotations

import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.formats import (
    AUDIT_VIEW,
    CERTIFY_TASK,
    FORMATS,
    PARQUET_FORMAT_KEY,
    PROBE_OUTPUTS,
    Format,
    FormatError,
    NewerFormatError,
    check_table_file,
    parquet_format_tag,
    parse_tag,
)

NEWER = "runs/a1: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."


@pytest.mark.parametrize(
    ("tag", "parsed"),
    [
        ("audit-view/3", ("audit-view", 3)),
        ("core.scale/1", ("core.scale", 1)),
        ("certify-task/12", ("certify-task", 12)),
        ("audit-view/0", None),
        ("audit-view/-1", None),
        ("audit-view/1.0", None),
        ("audit-view/01", None),
        ("audit-view", None),
        ("/1", None),
        ("Audit-View/1", None),
        (" audit-view/1", None),
        ("audit-view/1/2", None),
        (1, None),
        (None, None),
        (["audit-view/1"], None),
    ],
    ids=lambda v: repr(v),
)
def test_tags_are_family_slash_positive_integer(tag, parsed):
    assert parse_tag(tag) == parsed


def test_a_newer_version_is_refused_in_the_tools_words():
    with pytest.raises(NewerFormatError) as info:
        AUDIT_VIEW.check("audit-view/99", where="runs/a1")
    assert str(info.value) == NEWER
    assert (info.value.where, info.value.found, info.value.reads) == ("runs/a1", 99, 1)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FormatError)
    assert issubclass(NewerFormatError, ValueError)


def test_the_versions_this_build_reads_are_returned():
    assert AUDIT_VIEW.check("audit-view/1", where="x") == 1
    assert CERTIFY_TASK.check("certify-task/2", where="x") == 2
    assert AUDIT_VIEW.check(None, where="x", missing=1) == 1  # a file of before the tag existed


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        (
            "certify-task/1",
            "t.zip: a saved model task of format 1, older than this reliability-audit reads (2 to 2); "
            "re-create the audit or certify run with this version.",
        ),
        ("audit-view/1", "t.zip: not a saved model task: expected format 'certify-task/2'; got 'audit-view/1'."),
        ("garbage", "t.zip: not a saved model task: expected format 'certify-task/2'; got 'garbage'."),
        (None, "t.zip: not a saved model task: expected format 'certify-task/2'; got None."),
        (7, "t.zip: not a saved model task: expected format 'certify-task/2'; got 7."),
    ],
    ids=["older", "foreign", "garbage", "missing", "not-text"],
)
def test_an_older_foreign_or_missing_tag_says_what_was_expected(tag, message):
    with pytest.raises(FormatError) as info:
        CERTIFY_TASK.check(tag, where="t.zip")
    assert not isinstance(info.value, NewerFormatError)
    assert str(info.value) == message


def test_a_caller_may_word_the_mismatch_itself_but_never_the_newer_refusal():
    with pytest.raises(FormatError, match=r"^mine$"):
        AUDIT_VIEW.check("audit-view/0", where="x", mismatch="mine")
    with pytest.raises(NewerFormatError, match=re.escape(NEWER)):
        AUDIT_VIEW.check("audit-view/99", where="runs/a1", mismatch="mine")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"family": "Bad Name", "version": 1}, "not a valid format"),
        ({"family": "x", "version": 0}, "not a valid format"),
        ({"family": "x", "version": 2, "oldest": 3}, "not a valid format"),
    ],
    ids=["family", "version", "oldest"],
)
def test_a_format_is_checked_when_declared(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Format(what="thing", **kwargs)


def test_the_registry_holds_every_format_once_with_the_tags_the_modules_write():
    from core.cfc.bundle import SCHEMA as BUNDLE_SCHEMA
    from core.cfc.protocol import Protocol
    from core.scale import store
    from core.tabular import certify_task, shipped
    from core.tabular.audit_view import VIEW_SCHEMA
    from core.tabular.glance import GLANCE_SCHEMA

    assert all(family == fmt.family for family, fmt in FORMATS.items())
    written = {
        VIEW_SCHEMA,
        GLANCE_SCHEMA,
        BUNDLE_SCHEMA,
        Protocol().to_dict()["schema"],
        store._FORMAT,
        certify_task._TASK_SCHEMA,
        shipped._SCHEMA,
    }
    assert written <= {fmt.tag for fmt in FORMATS.values()}
    assert {tag: FORMATS[parse_tag(tag)[0]].version for tag in written} == {
        "audit-view/1": 1,
        "audit-glance/1": 1,
        "cfc-certificate-set/1": 1,
        "cfc-protocol/1": 1,
        "core.scale/1": 1,
        "certify-task/2": 2,
        "shipped-audit/1": 1,
    }


def _parquet(path, tag: str | None) -> None:
    table = pa.Table.from_pandas(pd.DataFrame({"a": [1, 2]}), preserve_index=False)
    if tag is not None:
        table = table.replace_schema_metadata({**table.schema.metadata, PARQUET_FORMAT_KEY: tag.encode()})
    pq.write_table(table, path)


def test_a_parquet_table_carries_its_tag_in_its_schema_metadata(tmp_path):
    _parquet(tmp_path / "new.parquet", "probe-outputs/99")
    _parquet(tmp_path / "plain.parquet", None)
    (tmp_path / "t.csv").write_text("a\n1\n")
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 not really")
    assert parquet_format_tag(tmp_path / "new.parquet") == "probe-outputs/99"
    assert parquet_format_tag((tmp_path / "new.parquet").read_bytes()) == "probe-outputs/99"
    for name in ("plain.parquet", "t.csv", "fake.parquet", "absent.parquet"):
        assert parquet_format_tag(tmp_path / name) is None, name
        assert check_table_file(tmp_path / name, PROBE_OUTPUTS, where=name) == 1, name
    with pytest.raises(NewerFormatError) as info:
        check_table_file(tmp_path / "new.parquet", PROBE_OUTPUTS, where="probes.parquet")
    assert str(info.value) == (
        "probes.parquet: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade."
    )
