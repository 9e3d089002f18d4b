"""ui.figure_cache: a persisted chart is the chart a fresh build gives, keyed by content and code."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import viz
from ui import figure_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(figure_cache.CACHE_ENV, str(tmp_path))
    figure_cache._MEMORY.clear()
    yield tmp_path / "figures"
    figure_cache._MEMORY.clear()


def _spec(fig) -> dict:
    """What st.plotly_chart sends to the browser, parsed (key order aside)."""
    return json.loads(pio.to_json(fig.to_dict(), validate=False))


def _forget_process() -> None:
    """What a new server process starts with: nothing in memory, the folder on disk."""
    figure_cache._MEMORY.clear()


def _no_build(monkeypatch) -> list[str]:
    calls: list[str] = []
    for name in ("flip_budget_histogram", "confidence_fds_figure", "column_distribution_figure"):
        monkeypatch.setattr(viz, name, lambda *a, _n=name, **k: calls.append(_n))
    return calls


def test_a_figure_read_back_from_disk_is_the_one_built(cache, monkeypatch):
    rng = np.random.default_rng(0)
    conf, fds = rng.uniform(0.5, 1.0, 300), rng.uniform(0.0, 1.0, 300)
    brittle = rng.uniform(size=300) < 0.2
    frame = pd.DataFrame({"age": rng.normal(40, 10, 300).round(), "y": rng.choice(["good", "bad"], 300)})
    frame.loc[::17, "age"] = np.nan
    calls = [
        ("flip_budget_histogram", (rng.integers(1, 7, 300),), {"depth": 5}),
        ("confidence_fds_figure", (conf, fds), {"brittle": brittle, "threshold": 0.9}),
        ("column_distribution_figure", (frame["age"], frame["y"]), {"classes": ("bad", "good")}),
    ]
    fresh = [_spec(getattr(viz, name)(*args, **kwargs)) for name, args, kwargs in calls]
    built = [_spec(figure_cache.persisted_figure(name, *args, **kwargs)) for name, args, kwargs in calls]
    assert built == fresh
    assert len(list(cache.glob("*.json"))) == 3
    _forget_process()
    made = _no_build(monkeypatch)
    read = [_spec(figure_cache.persisted_figure(name, *args, **kwargs)) for name, args, kwargs in calls]
    assert made == [], "a second process reads the charts back, it builds none"
    assert read == fresh


def test_the_same_call_is_served_from_memory(cache, monkeypatch):
    first = figure_cache.persisted_figure("flip_budget_histogram", np.array([1, 2, 2, 6]), depth=5)
    for path in cache.glob("*.json"):
        path.unlink()
    made = _no_build(monkeypatch)
    assert figure_cache.persisted_figure("flip_budget_histogram", np.array([1, 2, 2, 6]), depth=5) is first
    assert made == []


def test_a_damaged_file_is_rebuilt_and_rewritten(cache):
    args = (np.array([1, 1, 3]),)
    expected = _spec(viz.flip_budget_histogram(*args, depth=4))
    figure_cache.persisted_figure("flip_budget_histogram", *args, depth=4)
    (path,) = cache.glob("*.json")
    for damage in ("{not json", json.dumps({"data": "x", "layout": {}}), json.dumps([1, 2])):
        path.write_text(damage, encoding="utf-8")
        _forget_process()
        assert _spec(figure_cache.persisted_figure("flip_budget_histogram", *args, depth=4)) == expected
        assert json.loads(path.read_text(encoding="utf-8"))["data"], "the damaged file was replaced"


def test_an_unwritable_cache_folder_costs_speed_not_the_chart(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(figure_cache.CACHE_ENV, str(blocker))  # figures/ cannot be created under a file
    figure_cache._MEMORY.clear()
    fig = figure_cache.persisted_figure("flip_budget_histogram", np.array([2, 3]), depth=3)
    assert _spec(fig) == _spec(viz.flip_budget_histogram(np.array([2, 3]), depth=3))


def test_the_default_folder_is_in_the_user_cache(monkeypatch):
    import platformdirs

    monkeypatch.delenv(figure_cache.CACHE_ENV, raising=False)
    assert figure_cache.cache_dir() == platformdirs.user_cache_path("reliability-audit", appauthor=False) / "figures"


def test_the_oldest_files_go_beyond_the_limit(cache, monkeypatch):
    monkeypatch.setattr(figure_cache, "MAX_FILES", 2)
    for k in range(1, 5):
        figure_cache.persisted_figure("flip_budget_histogram", np.array([k]), depth=5)
    assert len(list(cache.glob("*.json"))) == 2


def test_the_key_follows_the_code_that_draws(monkeypatch):
    args = (np.array([1, 2]),)
    before = figure_cache.figure_key("flip_budget_histogram", *args, depth=3)
    monkeypatch.setattr(figure_cache, "_code_version", lambda: "another core.viz")
    assert figure_cache.figure_key("flip_budget_histogram", *args, depth=3) != before


def test_an_argument_that_cannot_be_keyed_is_refused():
    with pytest.raises(TypeError, match="cannot key an argument of type object"):
        figure_cache.figure_key("flip_budget_histogram", object())


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=32),
                     st.text(max_size=3))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.tuples(inner, inner),
                                                         st.dictionaries(st.text(max_size=2), inner, max_size=3)),
                       max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(a=_values, b=_values)
def test_keys_are_equal_exactly_for_equal_content(a, b):
    # type-tagged: 1, 1.0, True and "1" are different arguments, and so are [1] and (1,)
    same = figure_cache.figure_key("f", a) == figure_cache.figure_key("f", b)
    assert same == (_canonical(a) == _canonical(b))


def _canonical(value):
    """An independent content identity: the value with every type recorded, dicts sorted."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((repr(k), _canonical(k)), _canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_canonical(v) for v in value))
    return (type(value).__name__, repr(value))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
       position=st.integers(0, 19))
def test_arrays_and_series_keys_change_with_any_value(values, position):
    x = np.array(values)
    y = x.copy()
    i = position % len(y)
    y[i] = 0.5 if y[i] != 0.5 else -0.5
    assert figure_cache.figure_key("f", x) == figure_cache.figure_key("f", x.copy())
    assert figure_cache.figure_key("f", x) != figure_cache.figure_key("f", y)
    assert figure_cache.figure_key("f", pd.Series(x)) != figure_cache.figure_key("f", pd.Series(y))
    assert figure_cache.figure_key("f", x) != figure_cache.figure_key("f", x.reshape(1, -1))
    with np.errstate(over="ignore"):
        assert figure_cache.figure_key("f", x) != figure_cache.figure_key("f", x.astype(np.float32))
