"""Two dashboard replicas on one PostgreSQL review store, reviewers signed in on both (Chromium
and the OIDC provider of ``test_review_team_browser.py``).

Each replica is its own server process (``dashboard`` command line, its own cookie secret, its
own sign-in) with ``--reviews-db postgresql://...`` on a throw-away cluster
(``tests/reviews/pg_cluster.py``). A reviewer decides two cases on replica A; signed in on
replica B, the same reviewer sees two fewer unreviewed cases in the queue, and the store holds
the two decisions made under that reviewer's address.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "reviews"))
import pg_cluster  # noqa: E402
from browser_kit import ServerStartError, team_dashboard  # noqa: E402
from test_review_team_browser import BO, USERS, _decide_five, _sign_in, _triage, provider  # noqa: E402, F401

from core.reviews import ReviewStore, Team, User  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def replicas(provider, tmp_path_factory):  # noqa: F811 - the imported fixture
    """(replica A's URL, replica B's URL, the PostgreSQL URL they share, the replicas' folders)."""
    cluster = pg_cluster.start_cluster()
    try:
        db = cluster.url(cluster.create_database())
        team = 'default_role = "none"\n[members]\n' + "".join(f'"{e}" = "{r}"\n' for e, (_, r) in USERS.items())
        folders = [tmp_path_factory.mktemp("replica_a"), tmp_path_factory.mktemp("replica_b")]
        try:
            with (
                team_dashboard(folders[0], provider, team, reviews_db=db) as a,
                team_dashboard(folders[1], provider, team, reviews_db=db) as b,
            ):
                yield a, b, db, folders
        except ServerStartError as exc:
            pytest.fail(str(exc))
    finally:
        pg_cluster.remove(cluster)


def _unreviewed(page) -> tuple[int, int]:
    """(unreviewed, queued) from the queue table's caption."""
    text = page.get_by_text(re.compile(r"\d[\d,]* of [\d,]+ queued cases unreviewed")).first.inner_text()
    found = re.search(r"([\d,]+) of ([\d,]+) queued cases unreviewed", text)
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


def test_a_decision_made_on_one_replica_shows_on_the_other(replicas, browser):
    a, b, db, folders = replicas
    bo_a = _sign_in(browser, a, "bo@example.org")
    _triage(bo_a, a)
    open_before, queued = _unreviewed(bo_a)
    assert open_before == queued > 2  # a new store
    decided = _decide_five(bo_a, BO[:2])
    bo_b = _sign_in(browser, b, "bo@example.org")
    _triage(bo_b, b)
    assert _unreviewed(bo_b) == (queued - 2, queued)  # replica B reads what replica A wrote
    team = Team(members={e: r for e, (_, r) in USERS.items()})
    entries = ReviewStore(db, team=team).export(viewer=User(email="ana@example.org", name="Ana Admin"))
    assert entries["reviewer_email"].tolist() == ["bo@example.org"] * 2
    assert entries["sample_id"].tolist() == decided
    assert not [f for folder in folders for f in folder.rglob("*.sqlite3")]  # the URL never became a file
    bo_a.context.close()
    bo_b.context.close()
