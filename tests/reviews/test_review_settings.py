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


def test_a_server_url_gets_its_settings_file_in_the_user_data_folder_never_a_path_from_the_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = "postgresql://ana:hunter2@db.example:5432/reviews"
    path = settings_path(url)
    assert path.parent == tmp_path / "data" / "reliability-audit"
    assert path.name.startswith("reviews-") and "hunter2" not in str(path)
    assert settings_path(url.replace("hunter2", "other")) == path  # the password is not part of the name
    assert settings_path(url.replace("/reviews", "/other")) != path
    assert remember_reviewer(url, "ana") is True and remembered_reviewer(url) == "ana"
    assert [p.name for p in tmp_path.iterdir()] == ["data"]
