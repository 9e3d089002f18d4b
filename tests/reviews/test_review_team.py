"""Review store under a team (schema version 4): roles enforced by the store, assignments,
blind double review, retraction of one's own latest decision, idempotent bulk decisions,
adjudication, agreement (Cohen's and Fleiss' kappa) and the migration of a version-3 file."""

from __future__ import annotations

import itertools
import logging
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from review_backends import raw

from core.exceptions import UndefinedMetricWarning
from core.reviews import (
    DECISIONS,
    AccessRefused,
    AuditKey,
    ReviewStore,
    Team,
    TeamFileError,
    User,
    agreement,
    case_states,
    load_team,
    round_robin,
)

ANA = User(email="ana@example.org", name="Ana Admin")
BO = User(email="bo@example.org", name="Bo")
CY = User(email="cy@example.org", name="Cy")
DEE = User(email="dee@example.org", name="Dee Viewer")
ZED = User(email="zed@example.org", name="Zed Stranger")
TEAM = Team(
    members={
        "ana@example.org": "admin",
        "bo@example.org": "reviewer",
        "cy@example.org": "reviewer",
        "dee@example.org": "viewer",
    }
)


@pytest.fixture
def store(store_target: str) -> ReviewStore:
    return ReviewStore(store_target, team=TEAM)


def _raw(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


# ---------------------------------------------------------------------------------------------
# The team file
_GOOD = '# our team\ndefault_role = "viewer"\n\n[members]\n"Ana@Example.org" = "admin"\n"bo@example.org" = "reviewer"\n'


def test_team_file_roles_and_default(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(_GOOD)
    team = load_team(path)
    assert team.role_of("ana@example.org") == "admin"  # addresses ignore case
    assert team.role_of("bo@EXAMPLE.org") == "reviewer"
    assert team.role_of("zed@example.org") == "viewer"  # the default role of the unlisted
    assert team.with_role("reviewer") == ("bo@example.org",)
    path.write_text('[members]\n"ana@example.org" = "admin"\n')
    assert load_team(path).role_of("zed@example.org") is None  # no default: no access


@pytest.mark.parametrize(
    "text, match",
    [
        (
            '[members]\n"ana@example.org" = "admin"\n"bo@example.org" = "editor"\n',
            r"line 3, members\.'bo@example\.org': role 'editor'",
        ),
        ('[members]\n"ana" = "admin"\n', r"line 2, members\.'ana': 'ana' is not an e-mail address"),
        ('default_role = "admin"\n', r"line 1: `default_role` = 'admin'"),
        ('default_role = "viewer"\nroles = 1\n', r"line 2: unknown key 'roles'"),
        ('[members]\n"a@x.org" = "admin"\n"A@x.org" = "viewer"\n', r"line 3, members\.'A@x\.org'.*listed twice"),
        ('[members\n"a@x.org" = "admin"\n', r"not valid TOML.*line 1"),
        ('members = "ana@example.org"\n', r"`members` must be a table"),
    ],
    ids=["unknown-role", "not-an-address", "admin-default", "unknown-key", "twice", "syntax", "members-not-table"],
)
def test_team_file_errors_name_file_line_key_and_value(tmp_path, text, match):
    path = tmp_path / "team.toml"
    path.write_text(text)
    with pytest.raises(TeamFileError, match=match) as info:
        load_team(path)
    assert "team.toml" in str(info.value)


def test_missing_team_file_is_named(tmp_path):
    with pytest.raises(TeamFileError, match=r"team file '.*nope\.toml' does not exist"):
        load_team(tmp_path / "nope.toml")


# ---------------------------------------------------------------------------------------------
# Roles, enforced by the store
def test_viewer_and_unassigned_reviewer_writes_are_refused_and_logged(store, caplog):
    store.plan(
        "fp", ["1", "2", "3", "4"], admin=ANA, reviewers_per_case=1, reviewers=["bo@example.org", "cy@example.org"]
    )
    assert store.assignments("fp")["reviewer_email"].tolist() == ["bo@example.org", "cy@example.org"] * 2
    caplog.set_level(logging.WARNING, logger="reliability_audit.reviews")
    with pytest.raises(
        AccessRefused, match=r"Dee Viewer <dee@example\.org> is a viewer; to decide needs the reviewer role"
    ):
        store.record("fp", "1", reviewer=DEE, decision="acceptable")
    with pytest.raises(
        AccessRefused, match=r"Bo <bo@example\.org> is not assigned sample\(s\) 2 of this audit"
    ) as info:
        store.record("fp", "2", reviewer=BO, decision="acceptable")
    assert (info.value.role, info.value.action) == ("reviewer", "decide")
    with pytest.raises(AccessRefused, match="not assigned sample"):  # one unassigned case refuses the batch
        store.record_many("fp", ["1", "2"], reviewer=BO, decision="acceptable")
    with pytest.raises(AccessRefused, match="has no access"):
        store.record("fp", "1", reviewer=ZED, decision="acceptable")
    assert raw(store, "SELECT COUNT(*) FROM reviews") == [(0,)]  # nothing stored
    refused = store.refusals()
    assert refused[["user_email", "role", "action", "sample_id"]].values.tolist() == [
        ["dee@example.org", "viewer", "decide", "1"],
        ["bo@example.org", "reviewer", "decide", "2"],
        ["bo@example.org", "reviewer", "decide", "1,2"],
        ["zed@example.org", "none", "decide", "1"],
    ]
    assert sum("refused" in r.getMessage() for r in caplog.records) == 4
    # Assigned cases go through; the refusal log is append-only like the history.
    assert store.record("fp", "1", reviewer=BO, decision="acceptable").reviewer_email == "bo@example.org"
    with pytest.raises(store._db.errors, match="append-only"):
        raw(store, "DELETE FROM access_refusals")


def test_admin_only_actions(store):
    for action, call in [
        ("assign", lambda who: store.plan("fp", ["1"], admin=who, reviewers=["bo@example.org"])),
        ("adjudicate", lambda who: store.adjudicate("fp", "1", reviewer=who, decision="acceptable")),
        ("export", lambda who: store.export(viewer=who)),
    ]:
        with pytest.raises(AccessRefused, match=f"is a reviewer; to {action} needs the admin role"):
            call(BO)
        call(ANA)
    assert store.refusals()["action"].tolist() == ["assign", "adjudicate", "export"]


def test_a_team_store_needs_the_signed_in_user(store):
    with pytest.raises(ValueError, match="names the signed-in user"):
        store.record("fp", 1, reviewer="bo", decision="acceptable")
    with pytest.raises(ValueError, match=r"names its reader \(`viewer`"):
        store.latest("fp")
    with pytest.raises(AccessRefused, match="has no access"):
        store.latest("fp", viewer=ZED)


def test_without_assignment_every_reviewer_decides_every_case(store):
    store.record("fp", 9, reviewer=BO, decision="acceptable")
    store.record("fp", 9, reviewer=ANA, decision="acceptable")  # an admin has a reviewer's rights
    store.plan("fp", ["1"], admin=ANA, reviewers=["cy@example.org"])  # assignment on: 9 is nobody's
    with pytest.raises(AccessRefused):
        store.record("fp", 9, reviewer=BO, decision="acceptable")
    store.plan("fp", admin=ANA, reviewers_per_case=2, assign=False)  # assignment off again
    store.record("fp", 9, reviewer=BO, decision="confirmed_brittle")
    assert store.current_plan("fp").reviewers_per_case == 2 and not store.current_plan("fp").assigned


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 40),
    pool=st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=7, unique=True),
    k=st.integers(1, 4),
)
def test_round_robin_deals_distinct_balanced_reviewers(n, pool, k):
    ids = [f"s{i}" for i in range(n)]
    if k > len(pool):
        with pytest.raises(ValueError, match=f"{k} reviewers per case need at least {k}"):
            round_robin(ids, pool, k)
        return
    dealt = round_robin(ids, pool, k)
    per_case: dict[str, list[str]] = {}
    for position, sid, reviewer in dealt:
        assert ids[position] == sid
        per_case.setdefault(sid, []).append(reviewer)
    assert all(len(set(r)) == k for r in per_case.values()) and len(per_case) == n
    loads = pd.Series([r for _, _, r in dealt]).value_counts().reindex(pool, fill_value=0)
    assert loads.max() - loads.min() <= 1
    # A longer queue keeps the assignment of its first cases.
    assert round_robin(ids + ["extra"], pool, k)[: len(dealt)] == dealt


# ---------------------------------------------------------------------------------------------
# Blind double review
def test_a_reviewer_sees_others_decisions_only_after_recording_their_own(store):
    key = AuditKey("fp", data_fingerprint="data")
    store.plan(key, ["1", "2"], admin=ANA, reviewers_per_case=2, reviewers=["bo@example.org", "cy@example.org"])
    store.record(key, "1", reviewer=CY, decision="confirmed_brittle", note="cy's reason")
    reads = {
        "latest": lambda who: store.latest("fp", viewer=who),
        "history": lambda who: store.history("fp", "1", viewer=who),
        "ratings": lambda who: store.ratings("fp", viewer=who),
        "latest_across": lambda who: store.latest_across("data", viewer=who, audit="fp"),
        "history_across": lambda who: store.history_across("data", "1", viewer=who, audit="fp"),
    }
    for name, read in reads.items():
        assert len(read(BO)) == 0, name  # blind: nothing of cy's on case 1
        assert read(CY)["reviewer_email"].tolist() == ["cy@example.org"], name
    assert store.latest("fp", viewer=CY)["reviewer_email"].tolist() == ["cy@example.org"]
    assert store.latest("fp", viewer=ANA)["reviewer_email"].tolist() == ["cy@example.org"]  # admins see all
    assert store.latest("fp", viewer=DEE)["reviewer_email"].tolist() == ["cy@example.org"]  # viewers read all
    assert store.to_review("fp", ["1", "2"], reviewer=BO) == ["1", "2"]
    store.record(key, "1", reviewer=BO, decision="acceptable")
    # Once bo has recorded, both decisions are visible to bo; the retraction does not blind again.
    assert store.history("fp", "1", viewer=BO)["reviewer_email"].tolist() == ["cy@example.org", "bo@example.org"]
    store.retract("fp", reviewer=BO)
    assert len(store.history("fp", "1", viewer=BO)) == 3
    assert store.to_review("fp", ["1", "2"], reviewer=BO) == ["1", "2"]


def test_single_review_is_not_blind(store):
    store.record("fp", "1", reviewer=CY, decision="acceptable")
    assert store.latest("fp", viewer=BO)["reviewer_email"].tolist() == ["cy@example.org"]
    assert store.to_review("fp", ["1", "2"], reviewer=BO) == ["2"]  # case 1 needs no second opinion


# ---------------------------------------------------------------------------------------------
# Triage fixes: retract one's own latest decision, idempotent bulk
def test_retract_undoes_the_signed_in_reviewers_latest_decision_whichever_case(store):
    assert store.retractable("fp", reviewer=BO) is None
    first = store.record("fp", "1", reviewer=BO, decision="acceptable")
    store.record("fp", "2", reviewer=CY, decision="acceptable")  # someone else's, later
    second = store.record("fp", "3", reviewer=BO, decision="confirmed_brittle")
    assert store.retractable("fp", reviewer=BO).review_id == second.review_id
    undo = store.retract("fp", reviewer=BO)  # no case named: bo's latest, on case 3
    assert (undo.sample_id, undo.retracts, undo.reviewer_email) == ("3", second.review_id, "bo@example.org")
    assert store.retract("fp", reviewer=BO).retracts == first.review_id
    with pytest.raises(ValueError, match="no decision to retract"):
        store.retract("fp", reviewer=BO)
    assert store.retractable("fp", reviewer=BO) is None
    assert store.latest("fp", viewer=ANA)["sample_id"].tolist() == ["2"]  # cy's decision untouched
    with pytest.raises(AccessRefused, match="is a viewer; to retract"):
        store.retract("fp", reviewer=DEE)


def test_local_mode_retract_without_a_case_takes_the_latest_decision(store_target):
    store = ReviewStore(store_target)
    store.record("fp", 1, reviewer="ana", decision="acceptable")
    latest = store.record("fp", 2, reviewer="ana", decision="acceptable")
    assert store.retract("fp", reviewer="ana").retracts == latest.review_id


def test_reapplying_an_identical_bulk_decision_records_nothing(store):
    args = dict(reviewer=BO, decision="acceptable", reasons=["evidence_sufficient"], note="ok", skip_identical=True)
    assert len(store.record_many("fp", ["1", "2", "3"], **args)) == 3
    assert store.record_many("fp", ["1", "2", "3"], **args) == []
    assert [r.sample_id for r in store.record_many("fp", ["1", "2", "3", "4"], **args)] == ["4"]
    changed = store.record_many("fp", ["1", "2"], **{**args, "note": "re-checked"})
    assert [r.sample_id for r in changed] == ["1", "2"]
    store.record("fp", "3", reviewer=CY, decision="acceptable", reasons=["evidence_sufficient"], note="ok")
    assert store.record_many("fp", ["3"], **args) == []  # bo's own decision in force is what counts
    assert len(store.history("fp", viewer=ANA)) == 3 + 1 + 2 + 1


# ---------------------------------------------------------------------------------------------
# Adjudication and agreement
def test_adjudication_is_the_final_decision_and_history_stays_append_only(store):
    store.plan("fp", ["1", "2"], admin=ANA, reviewers_per_case=2, reviewers=["bo@example.org", "cy@example.org"])
    store.record("fp", "1", reviewer=BO, decision="acceptable")
    store.record("fp", "1", reviewer=CY, decision="confirmed_brittle")
    store.record("fp", "2", reviewer=BO, decision="acceptable")
    store.record("fp", "2", reviewer=CY, decision="acceptable")
    states = case_states(store.ratings("fp"), store.adjudications("fp"), reviewers_per_case=2)
    assert states["state"].to_dict() == {"1": "disagreement", "2": "agreed"}
    final = store.adjudicate("fp", "1", reviewer=ANA, decision="needs_reacquisition", note="rescan")
    assert final.kind == "adjudication"
    store.record("fp", "1", reviewer=BO, decision="acceptable", note="later")  # does not override the adjudication
    latest = store.latest("fp", viewer=ANA).set_index("sample_id")
    assert latest.loc["1", "decision"] == "needs_reacquisition" and latest.loc["1", "kind"] == "adjudication"
    states = case_states(store.ratings("fp"), store.adjudications("fp"), reviewers_per_case=2)
    assert states.loc["1", "state"] == "adjudicated"
    undo = store.retract("fp", reviewer=ANA)  # the admin's own latest: the adjudication
    assert (undo.retracts, undo.kind) == (final.review_id, "adjudication")
    assert store.latest("fp", viewer=ANA).set_index("sample_id").loc["1", "reviewer"] == "Bo"
    with pytest.raises(store._db.errors, match="append-only"):
        raw(store, "UPDATE reviews SET decision = 'acceptable' WHERE kind = 'adjudication'")


def _naive_cohen(y1, y2) -> float:
    n = len(y1)
    po = sum(a == b for a, b in zip(y1, y2)) / n
    pe = sum((list(y1).count(d) / n) * (list(y2).count(d) / n) for d in DECISIONS)
    return (po - pe) / (1 - pe)


def _naive_fleiss(rows: list[list[str]]) -> float:
    """Fleiss (1971) by hand: rows = the m decisions of each case."""
    n, m = len(rows), len(rows[0])
    counts = [[row.count(d) for d in DECISIONS] for row in rows]
    p_j = [sum(c[j] for c in counts) / (n * m) for j in range(len(DECISIONS))]
    p_i = [(sum(x * x for x in c) - m) / (m * (m - 1)) for c in counts]
    p_bar, pe = sum(p_i) / n, sum(p * p for p in p_j)
    return (p_bar - pe) / (1 - pe)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda m: st.lists(st.lists(st.integers(0, 3), min_size=m, max_size=m), min_size=1, max_size=25)
    )
)
def test_fleiss_kappa_equals_statsmodels_on_any_table(rows):
    """The base computes Fleiss' kappa itself (statsmodels is a test tool only); any table of
    m ratings per case over 4 categories, chance agreement below 1."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as reference

    from core.reviews.agreement import fleiss_kappa

    table = aggregate_raters(np.array(rows), n_cat=4)[0]
    shares = table.sum(axis=0) / table.sum()
    if (shares * shares).sum() > 1 - 1e-9:  # one category only: undefined (agreement() warns, NaN)
        return
    assert fleiss_kappa(table) == pytest.approx(reference(table, method="fleiss"), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    "table", [np.zeros((0, 3)), np.array([[2, 0], [1, 0]]), np.array([[1, 0], [0, 1]]), np.ones(3)]
)
def test_fleiss_kappa_refuses_tables_it_cannot_score(table):
    from core.reviews.agreement import fleiss_kappa

    with pytest.raises(ValueError, match="same number >= 2 of ratings per case"):
        fleiss_kappa(table)


def test_kappa_equals_scikit_learn_and_statsmodels_on_the_stored_decisions(tmp_path):
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    store = ReviewStore(tmp_path / "k.sqlite3", team=TEAM)
    rng = np.random.default_rng(3)
    three = ["bo@example.org", "cy@example.org", "ana@example.org"]
    users = {u.email: u for u in (ANA, BO, CY)}
    for case in range(30):
        truth = rng.integers(0, 3)
        for email in three:
            d = truth if rng.random() < 0.7 else rng.integers(0, 3)
            store.record("fp", case, reviewer=users[email], decision=DECISIONS[d])
    # Noise the history: a retraction and a re-decision; the figures use the decisions in force.
    store.record("fp", 0, reviewer=BO, decision="needs_reacquisition")
    store.retract("fp", reviewer=BO)
    store.record("fp", 1, reviewer=CY, decision="acceptable")
    result = agreement(store.ratings("fp"))

    # Independent reference: replay the exported history (latest non-retracted decision per reviewer).
    history = store.export(viewer=ANA)
    retracted = set(history["retracts"].dropna().astype(int))
    alive = history[(history["decision"] != "retracted") & ~history["review_id"].isin(retracted)]
    final = alive.groupby(["sample_id", "reviewer_email"])["decision"].last().unstack()
    for a, b in itertools.combinations(sorted(three), 2):
        row = result.pairs.set_index(["rater_a", "rater_b"]).loc[(a, b)]
        expected = cohen_kappa_score(final[a], final[b], labels=list(DECISIONS))
        assert row["kappa"] == pytest.approx(expected, abs=1e-12)
        assert row["kappa"] == pytest.approx(_naive_cohen(final[a].tolist(), final[b].tolist()), abs=1e-12)
        assert row["cases"] == 30
    codes = final[sorted(three)].apply(lambda c: c.map(DECISIONS.index)).to_numpy()
    assert result.fleiss == pytest.approx(fleiss_kappa(aggregate_raters(codes)[0]), abs=1e-12)
    assert result.fleiss == pytest.approx(_naive_fleiss(final[sorted(three)].values.tolist()), abs=1e-12)
    assert (result.fleiss_cases, result.raters_per_case, result.multi_rated) == (30, 3, 30)
    assert result.disagreements == int((final.nunique(axis=1) > 1).sum())


def test_fleiss_by_hand_on_a_toy_table():
    # Three cases, two reviewers: agree, agree, disagree. Hand-computed: P_i = 1, 1, 0; P̄ = 2/3;
    # p = (3/6 acceptable, 3/6 brittle); P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    ratings = pd.DataFrame(
        {
            "sample_id": ["1", "1", "2", "2", "3", "3", "4"],
            "rater": ["a", "b", "a", "b", "a", "b", "a"],
            "decision": ["acceptable"] * 2
            + ["confirmed_brittle"] * 2
            + ["acceptable", "confirmed_brittle"]
            + ["acceptable"],
        }
    )
    result = agreement(ratings)
    assert result.fleiss == pytest.approx(1 / 3, abs=1e-12)
    assert (result.fleiss_cases, result.raters_per_case, result.multi_rated, result.disagreements) == (3, 2, 3, 1)
    assert result.pairs[["cases", "agreed"]].values.tolist() == [[3, 2]]


def test_undefined_kappa_is_nan_with_a_named_warning():
    same = pd.DataFrame({"sample_id": ["1", "1", "2", "2"], "rater": ["a", "b"] * 2, "decision": ["acceptable"] * 4})
    with pytest.warns(UndefinedMetricWarning) as caught:
        result = agreement(same)
    assert np.isnan(result.fleiss) and np.isnan(result.pairs.loc[0, "kappa"]) and result.pairs.loc[0, "cases"] == 2
    text = " ".join(str(w.message) for w in caught)
    assert "Cohen's kappa of a and b is undefined" in text and "Fleiss' kappa is undefined" in text
    with pytest.warns(UndefinedMetricWarning, match="no case has been decided by two or more reviewers"):
        lone = agreement(same.iloc[[0, 2]].assign(rater=["a", "b"]))
    assert lone.pairs.empty and lone.fleiss_cases == 0 and np.isnan(lone.fleiss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agreement(same.assign(decision=["acceptable", "acceptable", "acceptable", "confirmed_brittle"]))


# ---------------------------------------------------------------------------------------------
# Migration of a version-3 file
_V3_SCRIPT = """
CREATE TABLE reviews (
    review_id            INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at           TEXT    NOT NULL,
    audit_fingerprint    TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    sample_id            TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer             TEXT    NOT NULL CHECK (length(trim(reviewer)) > 0),
    decision             TEXT    NOT NULL CHECK (decision IN ('confirmed_brittle', 'acceptable', 'needs_reacquisition', 'retracted')),
    note                 TEXT    NOT NULL DEFAULT '',
    reasons              TEXT    NOT NULL DEFAULT '',
    retracts             INTEGER CHECK ((decision = 'retracted') = (retracts IS NOT NULL)),
    data_fingerprint     TEXT    NOT NULL DEFAULT '',
    model                TEXT    NOT NULL DEFAULT '',
    protocol_fingerprint TEXT    NOT NULL DEFAULT '',
    submission_id        TEXT
);

CREATE INDEX IF NOT EXISTS reviews_by_sample ON reviews (audit_fingerprint, sample_id, review_id);
CREATE INDEX IF NOT EXISTS reviews_by_data ON reviews (data_fingerprint, sample_id, review_id);
CREATE UNIQUE INDEX IF NOT EXISTS reviews_one_submission ON reviews (submission_id) WHERE submission_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS reviews_retracted_once ON reviews (retracts) WHERE retracts IS NOT NULL;
CREATE TABLE IF NOT EXISTS reliability_audit_marker (marker TEXT NOT NULL);
INSERT INTO reliability_audit_marker (marker) SELECT 'reliability-audit review store' WHERE NOT EXISTS (SELECT 1 FROM reliability_audit_marker);
CREATE TRIGGER IF NOT EXISTS reviews_append_only_update BEFORE UPDATE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: record a new decision instead of updating one'); END;
CREATE TRIGGER IF NOT EXISTS reviews_append_only_delete BEFORE DELETE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: decisions cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS reviews_retraction_target BEFORE INSERT ON reviews WHEN NEW.retracts IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'a retraction must name an earlier decision of the same case') WHERE NOT EXISTS (
    SELECT 1 FROM reviews WHERE review_id = NEW.retracts AND audit_fingerprint = NEW.audit_fingerprint
    AND sample_id = NEW.sample_id AND decision != 'retracted'); END;
PRAGMA application_id = 1380021604;
PRAGMA user_version = 3;
"""


def test_a_version_3_file_is_upgraded_in_place_with_its_history(tmp_path):
    path = tmp_path / "v3.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(_V3_SCRIPT)
        conn.executemany(
            "INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note, reasons, retracts,"
            " data_fingerprint, model, protocol_fingerprint, submission_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    "2026-01-01T09:00:00.000001+00:00",
                    "fp",
                    "1",
                    "ana",
                    "acceptable",
                    "n",
                    "other",
                    None,
                    "d",
                    "m",
                    "p",
                    "s1",
                ),
                (
                    "2026-01-01T09:01:00.000001+00:00",
                    "fp",
                    "2",
                    "bo",
                    "confirmed_brittle",
                    "",
                    "",
                    None,
                    "d",
                    "m",
                    "p",
                    None,
                ),
                ("2026-01-01T09:02:00.000001+00:00", "fp", "2", "bo", "retracted", "", "", 2, "d", "m", "p", None),
            ],
        )
    before = pd.read_sql("SELECT * FROM reviews ORDER BY review_id", sqlite3.connect(path))
    store = ReviewStore(path)
    assert _raw(path, "PRAGMA user_version") == [(5,)]
    after = store.export()
    pd.testing.assert_frame_equal(
        after[list(before.columns)].astype({"retracts": "float64"}), before.astype({"retracts": "float64"})
    )
    assert (after["reviewer_email"] == "").all() and (after["kind"] == "review").all()
    assert store.latest("fp")["sample_id"].tolist() == ["1"]
    # The upgraded file takes team entries and keeps refusing updates.
    team = ReviewStore(path, team=TEAM)
    assert team.record("fp", "2", reviewer=BO, decision="acceptable").review_id == 4
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE reviews SET note = 'x'")
    assert ReviewStore(path).export()["review_id"].tolist() == [1, 2, 3, 4]  # reopening changes nothing
