"""Protocol: validation, canonical JSON, stable fingerprint."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.cfc import Protocol

# The canonical JSON of Protocol(), written out by hand: sorted keys, no spaces, shortest floats.
DEFAULT_JSON = (
    '{"baseline":"mean","beam_width":8,"depth":null,"exact_cap":10000,"grouping":"raw_origin",'
    '"merge_threshold":0.7,"operators":["attenuate_single","attenuate_all"],"path":"static",'
    '"schema":"cfc-protocol/1","severities":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0],'
    '"weights":[0.3333333333333333,0.3333333333333333,0.3333333333333333]}'
)


def test_canonical_json_and_fingerprint_of_the_default():
    p = Protocol()
    assert p.to_json() == DEFAULT_JSON
    assert p.fingerprint == hashlib.sha256(DEFAULT_JSON.encode()).hexdigest()


def test_equivalent_declarations_share_one_fingerprint():
    a = Protocol(operators=["attenuate_all", "attenuate_single"], severities=[1, 0.5, 0.25], weights=[1, 0, 0])
    b = Protocol(operators=("attenuate_single", "attenuate_all"), severities=(0.25, 0.5, 1.0), weights=(1.0, 0.0, 0.0))
    assert a == b and a.fingerprint == b.fingerprint
    assert a.severities == (0.25, 0.5, 1.0) and a.operators == ("attenuate_single", "attenuate_all")


@pytest.mark.parametrize(
    "field,value",
    [
        ("grouping", "domain_block"),
        ("baseline", "median"),
        ("depth", 3),
        ("operators", ("attenuate_all",)),
        ("severities", (0.5, 1.0)),
        ("weights", (0.5, 0.25, 0.25)),
        ("path", "adaptive"),
        ("merge_threshold", 0.8),
        ("exact_cap", 99),
        ("beam_width", 3),
    ],
)
def test_every_field_changes_the_fingerprint(field, value):
    assert Protocol(**{field: value}).fingerprint != Protocol().fingerprint


def test_json_round_trip():
    p = Protocol(
        grouping="redundancy_merged",
        baseline="mode",
        depth=4,
        operators=("attenuate_all",),
        severities=(0.05, 0.5),
        weights=(0.2, 0.3, 0.5),
        path="adaptive",
        merge_threshold=0.9,
        exact_cap=123,
        beam_width=2,
    )
    q = Protocol.from_json(p.to_json())
    assert q == p and q.fingerprint == p.fingerprint
    assert Protocol.from_dict(json.loads(DEFAULT_JSON)) == Protocol()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (
            {"grouping": "columns"},
            r"`grouping` must be one of \('raw_origin', 'domain_block', 'redundancy_merged'\); got 'columns'",
        ),
        ({"baseline": "mean "}, r"`baseline` must be one of \('mean', 'median', 'zero', 'mode'\); got 'mean '"),
        ({"path": "greedy"}, r"`path` must be one of \('static', 'adaptive'\); got 'greedy'"),
        ({"depth": 0}, r"`depth` must be an int >= 1; got 0"),
        ({"depth": 2.0}, r"`depth` must be an int >= 1; got 2.0"),
        ({"depth": True}, r"`depth` must be an int >= 1; got True"),
        (
            {"operators": ("attenuate_single", "mask")},
            r"`operators` must be one of \('attenuate_single', 'attenuate_all'\); got 'mask'",
        ),
        ({"operators": "attenuate_all"}, r"`operators` must be a sequence"),
        ({"operators": ("attenuate_all", "attenuate_all")}, r"must not repeat"),
        ({"severities": ()}, r"at least one severity"),
        ({"severities": (0.0, 0.5)}, r"`severities` must lie in \(0, 1\]; got 0.0"),
        ({"severities": (0.5, 1.5)}, r"got 1.5"),
        ({"severities": (0.5, 0.5)}, r"duplicates"),
        ({"severities": (0.5, float("nan"))}, r"finite numbers"),
        ({"weights": (1, 1)}, r"`weights` must be three non-negative"),
        ({"weights": (1, -1, 1)}, r"`weights` must be three non-negative"),
        ({"merge_threshold": 0}, r"`merge_threshold` must be a number in \(0, 1\]; got 0"),
        ({"exact_cap": 0}, r"`exact_cap` must be an int >= 1"),
        ({"beam_width": 0}, r"`beam_width` must be an int >= 1"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_invalid_values_name_the_field_and_the_allowed_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Protocol(**kwargs)


def test_resolved_depth():
    assert Protocol().resolved_depth(3) == 3
    assert Protocol().resolved_depth(12) == 5
    assert Protocol(depth=7).resolved_depth(7) == 7
    with pytest.raises(ValueError, match=r"`depth` must be between 1 and the number of groups \(7\); got 9\."):
        Protocol(depth=9).resolved_depth(7)


def test_from_dict_rejects_unknown_fields_and_schemas():
    with pytest.raises(ValueError, match=r"Unknown protocol field\(s\) \['k'\]"):
        Protocol.from_dict({"k": 3})
    with pytest.raises(ValueError, match="schema must be 'cfc-protocol/1'"):
        Protocol.from_dict({"schema": "cfc-protocol/0"})
    with pytest.raises(ValueError, match="could not be parsed"):
        Protocol.from_json("{")


def test_frozen():
    with pytest.raises(AttributeError):
        Protocol().depth = 3  # type: ignore[misc]
