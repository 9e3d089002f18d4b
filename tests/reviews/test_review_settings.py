"""The reviewer's name, remembered beside the review database (``core.reviews.settings``)."""

from __future__ import annotations

import pytest

from core.reviews import remember_reviewer, remembered_reviewer, settings_path


def test_reviewer_name_is_remembered_beside_the_database(tmp_path):
    db = tmp_path / "reviews.sqlite3"
    assert remembered_reviewer(db) == ""
    assert remember_reviewer(db, "  ana ") is True
    assert settings_path(db) == tmp_path / "reviews.settings.json"
    assert remembered_reviewer(db) == "ana"
    assert remember_reviewer(db, "   ") is False and remembered_reviewer(db) == "ana"  # blank keeps the old name
    settings_path(db).write_text("{not json")
    assert remembered_reviewer(db) == ""  # a damaged file is ignored, never fatal
    assert remembered_reviewer(tmp_path / "other.sqlite3") == ""
    with pytest.raises(ValueError, match="`name` must be a string"):
        remember_reviewer(db, None)
