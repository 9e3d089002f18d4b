"""The examples in the docstrings of core.cfc are executed and must print what they claim."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["protocol", "scores", "grouping", "baselines", "operators", "search", "certificate"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"core.cfc.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"core.cfc.{name} has no example"
    assert result.failed == 0
