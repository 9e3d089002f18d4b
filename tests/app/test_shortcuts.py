"""The reviewer's keyboard shortcuts (``ui.shortcuts``): bindings are validated (the keys in a
real browser: ``test_review_keyboard.py``)."""

from __future__ import annotations

import pytest


def test_shortcut_bindings_are_validated():
    from ui.shortcuts import shortcuts

    with pytest.raises(ValueError, match=r"'alt\+' must be modifiers plus one key"):
        shortcuts({"review_next": "alt+"})
    with pytest.raises(ValueError, match=r"shortcut 'bad key'"):
        shortcuts({"bad key": "alt+1"})
