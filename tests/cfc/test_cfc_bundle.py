"""Bundles: strict-JSON round trip and verify()."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
from cfc_reference import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cfc import CertificateSet, Protocol, certify, verify
from core.cfc.bundle import decode_floats, encode_floats

F, X, GROUPS, XBAR = random_problem(0, n=25, d=7, n_groups=4, n_classes=3)


@pytest.fixture(scope="module")
def cs():
    with pytest.warns(RuntimeWarning, match="exact_cap"):
        return certify(
            F,
            pd.DataFrame(X, index=[f"id{i}" for i in range(25)]),
            GROUPS,
            XBAR,
            Protocol(exact_cap=8),
            order=["g3", "g1", "g0", "g2"],
            search="both",
        )


def _same(a: CertificateSet, b: CertificateSet):
    assert a.fingerprint == b.fingerprint and a.protocol == b.protocol
    assert (a.group_names, a.group_columns, a.depth, a.path_rule, a.order) == (
        b.group_names,
        b.group_columns,
        b.depth,
        b.path_rule,
        b.order,
    )
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
    np.testing.assert_array_equal(a.baseline, b.baseline)
    for name in ("path_idx", "traj_proba", "traj_pred", "traj_margin", "collapse", "drops"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for op in a.operators:
        for name in ("severities", "margins", "preds", "flipped"):
            np.testing.assert_array_equal(getattr(a.operators[op], name), getattr(b.operators[op], name))
    for name in ("k_exact", "exact_subset", "k_beam", "beam_subset", "exact_levels", "method"):
        np.testing.assert_array_equal(getattr(a.search, name), getattr(b.search, name))


def test_json_round_trip_is_exact_and_strict(cs, tmp_path):
    assert np.isnan(cs.table["flip_budget_exact"]).any()  # NaN survives
    assert np.isinf(cs.table["lambda_star_attenuate_all"]).any()  # inf survives
    path = cs.to_json(tmp_path / "sub" / "certs.json")
    text = path.read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    back = CertificateSet.from_json(path)
    _same(cs, back)
    assert back.table.index.tolist() == [f"id{i}" for i in range(25)]
    _same(cs, CertificateSet.from_bundle(json.loads(text)))


def test_range_index_round_trip(tmp_path):
    small = certify(F, X[:4], GROUPS, XBAR)
    back = CertificateSet.from_json(small.to_json(tmp_path / "c.json"))
    assert isinstance(back.table.index, pd.RangeIndex)
    pd.testing.assert_frame_equal(small.table, back.table, check_exact=True)
    assert back.search is None


def test_verify_accepts_the_truth(cs, tmp_path):
    path = cs.to_json(tmp_path / "certs.json")
    for claim in (cs, cs.to_bundle(), path, str(path)):
        with pytest.warns(RuntimeWarning, match="exact_cap"):
            report = verify(claim, F, X)
        assert report.ok and report.fingerprint_match and report.mismatches.empty, str(report)
        assert "verified" in str(report)


@pytest.mark.parametrize(
    "edit,field,position",
    [
        (lambda b: b["table"]["data"]["rcma"].__setitem__(3, b["table"]["data"]["rcma"][3] + 1e-3), "table.rcma", 3),
        (lambda b: b["table"]["data"]["path"][5].reverse(), "table.path", 5),
        (
            lambda b: b["table"]["data"]["lambda_star_attenuate_single"].__setitem__(0, 0.05),
            "table.lambda_star_attenuate_single",
            0,
        ),
        (lambda b: b["arrays"]["traj_proba"]["data"].__setitem__(3 * 5 * 3 + 4, 0.123), "traj_proba", 3),
        (
            lambda b: b["operators"]["attenuate_all"]["flipped"]["data"].__setitem__(10 * 10 + 2, True),
            "operators.attenuate_all.flipped",
            10,
        ),
        (lambda b: b["search"]["k_beam"]["data"].__setitem__(7, 99.0), "search.k_beam", 7),
    ],
    ids=["rcma", "path", "lambda", "traj_proba", "flipped", "k_beam"],
)
def test_verify_reports_the_tampered_field(cs, edit, field, position):
    bundle = copy.deepcopy(cs.to_bundle())
    edit(bundle)
    with pytest.warns(RuntimeWarning):
        report = verify(bundle, F, X)
    assert not report.ok and report.fingerprint_match
    hits = report.mismatches[report.mismatches["field"] == field]
    assert position in hits["position"].tolist(), report.mismatches
    assert report.mismatches.loc[report.mismatches["position"] == position, "index"].iloc[0] == f"id{position}"


def test_verify_with_another_model_changes_the_fingerprint(cs):
    g, *_ = random_problem(1, n=1, d=7, n_groups=4, n_classes=3)
    with pytest.warns(RuntimeWarning):
        report = verify(cs, g, X)
    assert not report.ok and not report.fingerprint_match
    assert "table.pred" in report.fields or "traj_proba" in report.fields
    assert "does NOT verify" in str(report)


def test_verify_bad_input(cs, tmp_path):
    with pytest.raises(ValueError, match="`X` has 24 rows but the bundle certifies 25 samples"):
        verify(cs, F, X[:24])
    with pytest.raises(ValueError, match="`bundle` must be a CertificateSet"):
        verify(42, F, X)
    with pytest.raises(ValueError, match="`rtol` must be a finite number"):
        verify(cs, F, X, rtol=-1)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    with pytest.raises(ValueError, match="not a certificate bundle"):
        verify(bad, F, X)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        CertificateSet.from_json(bad)
    broken = cs.to_bundle()
    broken["arrays"]["drops"]["data"] = broken["arrays"]["drops"]["data"][:-1]
    with pytest.raises(ValueError, match="'arrays.drops' has 99 values for shape"):
        CertificateSet.from_bundle(broken)
    del broken["arrays"]
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['arrays'\]"):
        CertificateSet.from_bundle(broken)


def test_non_json_index_is_refused():
    small = certify(F, pd.DataFrame(X[:2], index=pd.to_datetime(["2024-01-01", "2024-01-02"])), GROUPS, XBAR)
    with pytest.raises(ValueError, match="index cannot be written to JSON"):
        small.to_bundle()


def _decode_floats_twin(values):
    """The per-element loop decode_floats had before its numpy fast path: the reference."""
    table = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
    if any(v is None for v in values):
        raise TypeError("null")
    return np.array([table[v] if isinstance(v, str) else v for v in values], dtype=np.float64)


_JSON_SCALARS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.sampled_from(["inf", "-inf", "nan", "NaN", "1.5", "", "Infinity"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_JSON_SCALARS, max_size=30)
    | st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=30)
    | st.lists(st.integers(-(2**62), 2**62), max_size=30)
)
def test_decode_floats_equals_its_loop_twin(values):
    """The fast path changes nothing: same values bit for bit, same refusals (a string other
    than 'inf'/'-inf'/'nan' or a null is refused, never parsed leniently as numpy would)."""
    try:
        expected = _decode_floats_twin(values)
    except (KeyError, TypeError, ValueError, OverflowError):
        with pytest.raises(ValueError, match="Bundle field 'f'"):
            decode_floats(values, where="f")
        return
    got = decode_floats(values, where="f")
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=40))
def test_encode_decode_floats_round_trip_bit_exact(values):
    arr = np.array(values, dtype=np.float64)
    back = decode_floats(json.loads(json.dumps(encode_floats(arr), allow_nan=False)), where="f")
    np.testing.assert_array_equal(np.isnan(back), np.isnan(arr))
    finite = ~np.isnan(arr)
    np.testing.assert_array_equal(back[finite].view(np.int64), arr[finite].view(np.int64))


@pytest.mark.parametrize(
    "bad", [[[1.0], [2.0, 3.0]], [[1.0, 2.0]], "1.0", 3.0, [{"a": 1}], [1.0, None], [None], [2**1100], [1.5, 2**1100]]
)
def test_decode_floats_refuses_non_lists_nesting_nulls_and_overflow(bad):
    with pytest.raises(ValueError, match="Bundle field 'f'"):
        decode_floats(bad, where="f")
