"""The examples in the docstrings of the paired bounds engine run and print what they claim."""
from __future__ import annotations

import doctest
import importlib
import warnings

import pytest

MODULES = ["core.paired._fivestate", "core.paired.records", "core.paired.states", "core.paired.bounds",
           "core.paired.policies", "core.paired.summary"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the examples show values, not the NaN warnings
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
