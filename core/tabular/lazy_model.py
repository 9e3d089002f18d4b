"""A model made on its first use: read back from a file or refitted, once, by whichever thread asks first.

Opening an audit needs none of its model: every page is drawn from the saved tables. Only
the panels that call the model (the explorer's what-if and flip-set search) need it, and
making it costs seconds (skops' trusted-type scan imports all of scikit-learn; a refit imports
scikit-learn). :class:`LazyModel` defers that cost to the first ``predict_proba`` (or
:meth:`LazyModel.load`, which the dashboard calls in a background thread) and remembers a
failure, so a model that cannot be made is tried once and says why every time it is asked.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Literal

__all__ = ["LazyModel"]


class LazyModel(ABC):
    """``predict_proba`` of an estimator made by :meth:`_make` on the first call, once.

    Thread-safe: concurrent first calls make it once; the others wait for it. A ``ValueError``
    (or ``OSError``) raised by :meth:`_make` is kept as :attr:`error` and raised again, as a
    ``ValueError``, on every later call, without trying again.

    Subclasses implement :meth:`_make` and set :attr:`description`.

    Attributes
    ----------
    description : str
        What making the model does, for people ("reading the saved model file _task.zip").
    """

    description = "loading the model"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None
        self._error: str | None = None

    @abstractmethod
    def _make(self) -> Any:
        """The estimator (``predict_proba`` over the audit's transformed features).

        Raises
        ------
        ValueError
            It cannot be made; the message says why, for people.
        """

    def _failure(self, exc: Exception) -> str:
        """The message kept for a failure of :meth:`_make`."""
        return str(exc)

    @property
    def state(self) -> Literal["pending", "ready", "failed"]:
        """``"pending"`` until :meth:`load` has run, then ``"ready"`` or ``"failed"`` (never blocks)."""
        if self._model is not None:
            return "ready"
        return "failed" if self._error is not None else "pending"

    @property
    def error(self) -> str | None:
        """Why the model could not be made (None while pending or when ready)."""
        return self._error

    def load(self) -> Any:
        """The estimator, made on the first call.

        Raises
        ------
        ValueError
            It could not be made (:attr:`error`).
        """
        with self._lock:
            if self._model is None and self._error is None:
                try:
                    self._model = self._make()
                except (ValueError, OSError) as exc:
                    self._error = self._failure(exc)
            if self._error is not None:
                raise ValueError(self._error)
            return self._model

    def predict_proba(self, Z: Any) -> Any:
        return self.load().predict_proba(Z)
