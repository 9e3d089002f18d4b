"""LazyModel: made once on first use (by whichever thread asks first), a failure kept and said every time."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from core.tabular.lazy_model import LazyModel


class _Doubler:
    def predict_proba(self, Z):
        return np.asarray(Z, dtype=float) * 2


class _Counted(LazyModel):
    description = "counting"

    def __init__(self, *, fail: Exception | None = None, delay: float = 0.0) -> None:
        super().__init__()
        self.calls, self.fail, self.delay = 0, fail, delay

    def _make(self):
        self.calls += 1
        time.sleep(self.delay)  # long enough for the other threads to ask meanwhile
        if self.fail is not None:
            raise self.fail
        return _Doubler()


def test_made_on_the_first_call_only():
    model = _Counted()
    assert model.state == "pending" and model.error is None and model.calls == 0
    np.testing.assert_array_equal(model.predict_proba([[1.0, 2.0]]), [[2.0, 4.0]])
    np.testing.assert_array_equal(model.predict_proba([[3.0, 0.0]]), [[6.0, 0.0]])
    assert model.state == "ready" and model.calls == 1


def test_concurrent_first_calls_make_it_once():
    model = _Counted(delay=0.2)
    out = []
    threads = [threading.Thread(target=lambda: out.append(model.load())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert model.calls == 1 and len(out) == 6 and all(o is out[0] for o in out)


@pytest.mark.parametrize(
    "exc", [ValueError("the file is damaged"), OSError(5, "Input/output error")], ids=["value-error", "os-error"]
)
def test_a_failure_is_kept_and_raised_every_time_without_trying_again(exc):
    model = _Counted(fail=exc)
    for _ in range(3):
        with pytest.raises(ValueError, match="damaged|Input/output"):
            model.predict_proba([[1.0]])
    assert model.calls == 1 and model.state == "failed" and str(exc) in model.error


def test_an_unexpected_error_is_not_kept():
    """Only the failures a model file can cause are remembered; a bug propagates as itself."""
    model = _Counted(fail=KeyError("bug"))
    with pytest.raises(KeyError):
        model.load()
    assert model.state == "pending"


def test_state_never_waits_for_a_load_in_progress():
    model = _Counted(delay=1.0)
    thread = threading.Thread(target=model.load)
    thread.start()
    while model.calls == 0:
        time.sleep(0.01)
    # Answered while the loading thread holds the lock (waiting for it would read "ready").
    assert model.state == "pending" and thread.is_alive()
    thread.join()
    assert model.state == "ready"
