"""A protocol or certificate bundle written by a newer version is refused in the tool's words; an
untagged protocol (written before the tag) still reads as version 1."""

from __future__ import annotations

import json
import re

import pytest
from cfc_reference import random_problem

from core.cfc import CertificateSet, Protocol, certify
from core.cfc.bundle import decode_certificate_set, read_bundle
from core.formats import FormatError, NewerFormatError

F, X, GROUPS, XBAR = random_problem(0, n=6, d=4, n_groups=2, n_classes=2)


def newer(where) -> str:
    return f"^{re.escape(f'{where}: made by a newer reliability-audit (format 99; this one reads up to 1): upgrade.')}$"


@pytest.fixture(scope="module")
def bundle():
    return certify(F, X, GROUPS, XBAR, Protocol()).to_bundle()


def test_a_newer_protocol_is_refused_naming_its_file():
    with pytest.raises(NewerFormatError, match=newer("p.json")):
        Protocol.from_dict({"schema": "cfc-protocol/99"}, where="p.json")
    with pytest.raises(NewerFormatError, match=newer("p.json")):
        Protocol.from_json(json.dumps({"schema": "cfc-protocol/99", "depth": 2}), where="p.json")
    with pytest.raises(NewerFormatError, match=newer("protocol")):
        Protocol.from_dict({"schema": "cfc-protocol/99"})


def test_an_untagged_protocol_reads_as_version_one_and_a_foreign_tag_is_refused():
    assert Protocol.from_dict({"depth": 2}) == Protocol(depth=2)
    for tag in ("cfc-protocol/0", "audit-view/1", None, "x"):
        with pytest.raises(FormatError, match=re.escape(f"Protocol schema must be 'cfc-protocol/1'; got {tag!r}.")):
            Protocol.from_dict({"schema": tag})


def test_a_newer_bundle_is_refused_by_every_reader(bundle, tmp_path):
    data = {**bundle, "schema": "cfc-certificate-set/99"}
    path = tmp_path / "certs.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NewerFormatError, match=newer(path)):
        read_bundle(path)
    with pytest.raises(NewerFormatError, match=newer(path)):
        CertificateSet.from_json(path)
    with pytest.raises(NewerFormatError, match=newer("certificate bundle")):
        CertificateSet.from_bundle(data)
    with pytest.raises(NewerFormatError, match=newer("certs.json")):
        decode_certificate_set(data, where="certs.json")


def test_a_bundle_holding_a_newer_protocol_is_refused(bundle, tmp_path):
    data = {**bundle, "protocol": {**bundle["protocol"], "schema": "cfc-protocol/99"}}
    with pytest.raises(NewerFormatError, match=newer("certs.json")):
        decode_certificate_set(data, where="certs.json")


def test_this_versions_bundle_still_round_trips(bundle):
    assert CertificateSet.from_bundle(json.loads(json.dumps(bundle))).fingerprint == bundle["fingerprint"]
