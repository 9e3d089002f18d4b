"""Residual MLP classifiers in torch: ResMLP and the fragility-regularised ResMLP (SPEC A.7).

Both are scikit-learn estimators (``fit(X, y)``, ``predict_proba(X)``, ``classes_``) over the
transformed feature space. Training is reproducible bit for bit: inside ``fit`` and
``predict_proba`` torch runs with a fixed number of threads and deterministic algorithms,
and every random draw (initialisation, dropout, shuffling, attenuation) comes from the
estimator's ``random_state``; the caller's global torch settings and RNG state are restored
afterwards.

Architecture (Gorishniy et al., 2021, "ResNet" for tabular data)::

    h = Linear(d, width)(x)
    repeat n_blocks:  h = h + Dropout(Linear(Dropout(ReLU(Linear(LayerNorm(h))))))
    logits = Linear(width, C)(ReLU(LayerNorm(h)))

The block's inner layer is twice as wide as ``width``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from core._rng import as_generator

__all__ = [
    "FragilityRegularizedResMLPClassifier",
    "ResMLPClassifier",
    "attenuate_random_groups",
    "fragility_regularized_loss",
]


class _Block(nn.Module):
    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.inner = nn.Linear(width, 2 * width)
        self.outer = nn.Linear(2 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.dropout(self.outer(self.dropout(F.relu(self.inner(self.norm(h))))))


class _ResMLP(nn.Module):
    def __init__(self, n_in: int, n_classes: int, width: int, n_blocks: int, dropout: float) -> None:
        super().__init__()
        self.stem = nn.Linear(n_in, width)
        self.blocks = nn.Sequential(*(_Block(width, dropout) for _ in range(n_blocks)))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.norm(self.blocks(self.stem(x)))))


@contextmanager
def _torch_session(n_threads: int, seed: int | None = None) -> Iterator[None]:
    """Fixed threads, deterministic algorithms and (optionally) a seeded global RNG, restored on exit."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(n_threads)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


class ResMLPClassifier(ClassifierMixin, BaseEstimator):
    """Residual MLP with LayerNorm, dropout and skip connections, trained with AdamW.

    Parameters
    ----------
    width : int, default=128
        Width of the residual stream.
    n_blocks : int, default=2
        Number of residual blocks.
    dropout : float, default=0.1
        Dropout probability inside the blocks, in [0, 1).
    learning_rate : float, default=1e-3
    weight_decay : float, default=1e-4
        AdamW decoupled weight decay.
    epochs : int, default=100
        Most passes over the training data.
    early_stopping : bool, default=True
        Hold out a stratified ``validation_fraction`` of the training rows, stop once the
        held-out cross-entropy has not improved (by 1e-4) for ``patience`` epochs, and keep
        the weights of the best epoch. False trains on all rows for ``epochs`` epochs.
    validation_fraction : float, default=0.1
        Share of training rows held out for early stopping, in (0, 0.5].
    patience : int, default=5
    batch_size : int, default=256
    n_threads : int, default=1
        Torch CPU threads inside ``fit`` / ``predict_proba``; part of what makes results
        reproducible across machines.
    random_state : int, default=0
        Seeds initialisation, dropout, shuffling (and, in the fragility-regularised
        variant, the attenuation draws).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    module_ : torch.nn.Module
        The trained network (in eval mode).
    loss_curve_ : list of float
        Mean training loss of every epoch.
    validation_loss_curve_ : list of float
        Held-out cross-entropy of every epoch (empty without early stopping).
    best_epoch_ : int
        Number of epochs of the kept weights.
    """

    def __init__(
        self,
        *,
        width: int = 128,
        n_blocks: int = 2,
        dropout: float = 0.1,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        epochs: int = 100,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 5,
        batch_size: int = 256,
        n_threads: int = 1,
        random_state: int = 0,
    ) -> None:
        self.width = width
        self.n_blocks = n_blocks
        self.dropout = dropout
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.batch_size = batch_size
        self.n_threads = n_threads
        self.random_state = random_state

    # -- training --------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> ResMLPClassifier:
        """Train on transformed features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite transformed features.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float32, reset=True)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"`y` must hold at least two classes; got only {self.classes_.tolist()}.")
        self._prepare_fit(X)
        # Derive torch's seed from the product's one seed helper (core._rng).
        rng = as_generator(self.random_state)
        seed = int(rng.integers(2**62))
        held_out = _stratified_holdout(codes, self.validation_fraction, rng) if self.early_stopping else None
        with _torch_session(self.n_threads, seed):
            generator = torch.Generator().manual_seed(seed)
            module = _ResMLP(X.shape[1], len(self.classes_), self.width, self.n_blocks, self.dropout)
            optimiser = torch.optim.AdamW(module.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
            xt, yt = torch.from_numpy(np.ascontiguousarray(X)), torch.from_numpy(codes.astype(np.int64))
            if held_out is not None:
                x_val, y_val = xt[held_out], yt[held_out]
                xt, yt = xt[~held_out], yt[~held_out]
            n = len(yt)
            self.loss_curve_, self.validation_loss_curve_ = [], []
            best_loss, best_state, self.best_epoch_, waited = float("inf"), None, self.epochs, 0
            for epoch in range(1, self.epochs + 1):
                module.train()
                order = torch.randperm(n, generator=generator)
                total = 0.0
                for start in range(0, n, self.batch_size):
                    batch = order[start : start + self.batch_size]
                    loss = self._batch_loss(module, xt[batch], yt[batch], generator)
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
                    total += float(loss.detach()) * len(batch)
                self.loss_curve_.append(total / n)
                if held_out is None:
                    continue
                module.eval()
                with torch.no_grad():
                    val_loss = float(F.cross_entropy(module(x_val), y_val))
                self.validation_loss_curve_.append(val_loss)
                if val_loss < best_loss - 1e-4:
                    best_loss, best_state, self.best_epoch_, waited = (
                        val_loss,
                        copy.deepcopy(module.state_dict()),
                        epoch,
                        0,
                    )
                else:
                    waited += 1
                    if waited >= self.patience:
                        break
            if best_state is not None:
                module.load_state_dict(best_state)
            module.eval()
        self.module_ = module
        return self

    def _prepare_fit(self, X: np.ndarray) -> None:
        """Hook for subclasses that need the training matrix before the loop."""

    def _batch_loss(
        self, module: nn.Module, xb: torch.Tensor, yb: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        return F.cross_entropy(module(xb), yb)

    def _check_params(self) -> None:
        for name, low in (
            ("width", 1), ("n_blocks", 0), ("epochs", 1), ("patience", 1), ("batch_size", 1), ("n_threads", 1),
        ):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"`{name}` must be an int >= {low}; got {value!r}.")
        if not isinstance(self.early_stopping, (bool, np.bool_)):
            raise ValueError(f"`early_stopping` must be True or False; got {self.early_stopping!r}.")
        if self.early_stopping and not 0 < self.validation_fraction <= 0.5:
            raise ValueError(f"`validation_fraction` must be in (0, 0.5]; got {self.validation_fraction!r}.")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"`dropout` must be in [0, 1); got {self.dropout!r}.")
        for name in ("learning_rate", "weight_decay"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.floating)) and np.isfinite(value) and value >= 0):
                raise ValueError(f"`{name}` must be a finite number >= 0; got {value!r}.")
        if self.learning_rate == 0:
            raise ValueError("`learning_rate` must be positive; got 0.")

    # -- inference -------------------------------------------------------------------------
    def predict_proba(self, X: Any, *, batch_size: int = 8192) -> np.ndarray:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        batch_size : int, default=8192
            Rows per forward pass (bounds memory).

        Returns
        -------
        P : ndarray of shape (n_samples, n_classes), float64
            Rows sum to 1; columns follow ``classes_``.
        """
        check_is_fitted(self, "module_")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        xt = torch.from_numpy(np.ascontiguousarray(X))
        out = np.empty((len(X), len(self.classes_)), dtype=np.float64)
        with _torch_session(self.n_threads), torch.no_grad():
            for start in range(0, len(X), batch_size):
                logits = self.module_(xt[start : start + batch_size]).double()
                out[start : start + batch_size] = torch.softmax(logits, dim=1).numpy()
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class (ties to the lowest class index), shape (n_samples,)."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _stratified_holdout(codes: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of a random ``fraction`` of the rows of every class (at least one row of
    every class with two or more rows, never all of a class)."""
    n = len(codes)
    counts = np.bincount(codes)
    quota = np.clip(np.floor(counts * fraction + 0.5), np.minimum(counts - 1, 1), counts - 1).astype(np.int64)
    perm = rng.permutation(n)
    order = perm[np.argsort(codes[perm], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    mask = np.zeros(n, dtype=bool)
    mask[order] = (np.arange(n) - starts[codes[order]]) < quota[codes[order]]
    return mask


# --------------------------------------------------------------------------------------------
# Fragility regularisation
# --------------------------------------------------------------------------------------------


def _class_margin(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``m_y = z_y - max_{c != y} z_c`` per row, shape (B,)."""
    own = logits.gather(1, y[:, None]).squeeze(1)
    others = logits.masked_fill(F.one_hot(y, logits.shape[1]).bool(), float("-inf"))
    return own - others.max(dim=1).values


def fragility_regularized_loss(
    logits: torch.Tensor,
    logits_tilde: torch.Tensor,
    y: torch.Tensor,
    *,
    alpha: float,
    beta: float,
) -> torch.Tensor:
    """SPEC A.7 training loss for one batch.

    ``CE(x, y) + alpha * (KL(p_x || p_x~) + KL(p_x~ || p_x)) + alpha * beta * mean(relu(m_y(x) - m_y(x~)))``

    with ``p = softmax(logits)``, the KL terms averaged over the batch, and the margin
    ``m_y(z) = z_y - max_{c != y} z_c`` taken on the logits for the true class ``y``.

    Parameters
    ----------
    logits, logits_tilde : Tensor of shape (B, C)
        Logits of the clean inputs ``x`` and of their attenuated copies ``x~``.
    y : Tensor of shape (B,), int64
        True class codes.
    alpha, beta : float
        Weight of the consistency terms, and of the margin term relative to them.

    Returns
    -------
    Tensor
        Scalar loss.
    """
    log_p, log_q = F.log_softmax(logits, dim=1), F.log_softmax(logits_tilde, dim=1)
    kl_pq = (log_p.exp() * (log_p - log_q)).sum(dim=1).mean()
    kl_qp = (log_q.exp() * (log_q - log_p)).sum(dim=1).mean()
    margin_loss = F.relu(_class_margin(logits, y) - _class_margin(logits_tilde, y)).mean()
    return F.cross_entropy(logits, y) + alpha * (kl_pq + kl_qp) + alpha * beta * margin_loss


def attenuate_random_groups(
    x: torch.Tensor,
    membership: torch.Tensor,
    baseline: torch.Tensor,
    *,
    lambda_max: float,
    max_subset: int,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw ``x~ = A_lambda(x, S)`` independently for every row.

    Each row gets its own subset ``S`` of ``|S| ~ U{1, ..., min(max_subset, G)}`` groups
    (uniform without replacement) and its own ``lambda ~ U(0, lambda_max)``; the coordinates
    of the groups in ``S`` move to ``(1 - lambda) * x + lambda * baseline``, others stay.

    Parameters
    ----------
    x : Tensor of shape (B, d)
    membership : Tensor of shape (G, d)
        0/1 matrix; row ``g`` marks the coordinates of group ``g`` (a partition).
    baseline : Tensor of shape (d,)
    lambda_max : float
        In (0, 1].
    max_subset : int
        Largest subset size.
    generator : torch.Generator

    Returns
    -------
    x_tilde : Tensor of shape (B, d)
    chosen : Tensor of shape (B, G), bool
        The groups attenuated in each row.
    lam : Tensor of shape (B,)
        The severity of each row.
    """
    n_rows, n_groups = x.shape[0], membership.shape[0]
    sizes = torch.randint(1, min(max_subset, n_groups) + 1, (n_rows,), generator=generator)
    # Rank of i.i.d. uniform keys = a uniform random permutation per row; the first |S| win.
    ranks = torch.rand(n_rows, n_groups, generator=generator).argsort(dim=1).argsort(dim=1)
    chosen = ranks < sizes[:, None]
    lam = torch.rand(n_rows, generator=generator, dtype=x.dtype) * lambda_max
    coords = chosen.to(x.dtype) @ membership.to(x.dtype)
    x_tilde = x + (lam[:, None] * coords) * (baseline[None, :] - x)
    return x_tilde, chosen, lam


class FragilityRegularizedResMLPClassifier(ResMLPClassifier):
    """ResMLP trained to keep its decision support under mild group attenuation (SPEC A.7).

    Every training batch pairs each row ``x`` with ``x~ = A_lambda(x, S)``: a random subset
    ``S`` of at most ``max_subset`` evidence groups attenuated toward ``baseline`` with
    ``lambda ~ U(0, lambda_max)``, drawn independently per row (see
    :func:`attenuate_random_groups`); the loss is :func:`fragility_regularized_loss`.

    Parameters
    ----------
    groups : mapping of str to sequence of int, or sequence of sequences of int
        Evidence groups over the transformed columns (``name -> column indices``), a
        partition of ``range(n_features)``; e.g. the raw-origin groups of the preprocessing.
    baseline : array-like of shape (n_features,)
        Finite replacement state in the transformed space (e.g. the training mean).
    alpha : float, default=1.0
        Weight of the symmetric-KL consistency term.
    beta : float, default=1.0
        Weight of the margin-preservation term relative to ``alpha``.
    lambda_max : float, default=0.5
        Largest attenuation severity drawn, in (0, 1].
    max_subset : int, default=2
        Largest number of groups attenuated together.
    **other parameters
        ``width``, ``n_blocks``, ``dropout``, ``learning_rate``, ``weight_decay``, ``epochs``,
        ``early_stopping``, ``validation_fraction``, ``patience``, ``batch_size``,
        ``n_threads``, ``random_state``: as in :class:`ResMLPClassifier` (early stopping
        watches the clean held-out cross-entropy).
    """

    def __init__(
        self,
        *,
        groups: Mapping[str, Sequence[int]] | Sequence[Sequence[int]] | None = None,
        baseline: Any = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        lambda_max: float = 0.5,
        max_subset: int = 2,
        width: int = 128,
        n_blocks: int = 2,
        dropout: float = 0.1,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        epochs: int = 100,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 5,
        batch_size: int = 256,
        n_threads: int = 1,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            width=width,
            n_blocks=n_blocks,
            dropout=dropout,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            epochs=epochs,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            patience=patience,
            batch_size=batch_size,
            n_threads=n_threads,
            random_state=random_state,
        )
        self.groups = groups
        self.baseline = baseline
        self.alpha = alpha
        self.beta = beta
        self.lambda_max = lambda_max
        self.max_subset = max_subset

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.floating)) and np.isfinite(value) and value >= 0):
                raise ValueError(f"`{name}` must be a finite number >= 0; got {value!r}.")
        if not (isinstance(self.lambda_max, (int, float, np.floating)) and 0 < self.lambda_max <= 1):
            raise ValueError(f"`lambda_max` must be in (0, 1]; got {self.lambda_max!r}.")
        if (
            isinstance(self.max_subset, bool)
            or not isinstance(self.max_subset, (int, np.integer))
            or self.max_subset < 1
        ):
            raise ValueError(f"`max_subset` must be an int >= 1; got {self.max_subset!r}.")

    def _prepare_fit(self, X: np.ndarray) -> None:
        d = X.shape[1]
        self.membership_ = _membership_matrix(self.groups, d)
        if self.baseline is None:
            raise ValueError("`baseline` is required: a vector of shape (n_features,) in the transformed space.")
        baseline = np.asarray(self.baseline, dtype=np.float64)
        if baseline.shape != (d,) or not np.isfinite(baseline).all():
            raise ValueError(f"`baseline` must be a finite vector of shape ({d},); got shape {baseline.shape}.")
        self.baseline_ = baseline.astype(np.float32)

    def _batch_loss(
        self, module: nn.Module, xb: torch.Tensor, yb: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        x_tilde, _, _ = attenuate_random_groups(
            xb,
            torch.from_numpy(self.membership_),
            torch.from_numpy(self.baseline_),
            lambda_max=float(self.lambda_max),
            max_subset=int(self.max_subset),
            generator=generator,
        )
        logits = module(torch.cat([xb, x_tilde]))  # one forward pass for both views
        return fragility_regularized_loss(
            logits[: len(xb)], logits[len(xb) :], yb, alpha=float(self.alpha), beta=float(self.beta)
        )


def _membership_matrix(groups: Any, d: int) -> np.ndarray:
    """Validate ``groups`` as a partition of ``range(d)``; return the (G, d) 0/1 matrix."""
    if groups is None:
        raise ValueError("`groups` is required: evidence groups (name -> column indices) over the transformed columns.")
    items = list(groups.items()) if isinstance(groups, Mapping) else list(enumerate(groups))
    if not items:
        raise ValueError("`groups` is empty; it must partition the transformed columns.")
    membership = np.zeros((len(items), d), dtype=np.float32)
    for g, (name, cols) in enumerate(items):
        idx = np.asarray(list(cols))
        if idx.size == 0:
            raise ValueError(f"group {name!r} is empty.")
        if not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= d:
            raise ValueError(f"group {name!r} must hold column indices in 0..{d - 1}; got {idx.tolist()}.")
        membership[g, idx] = 1.0
    coverage = membership.sum(axis=0)
    if (coverage != 1).any():
        col = int(np.flatnonzero(coverage != 1)[0])
        raise ValueError(
            f"`groups` must partition the {d} transformed columns; column {col} is in {int(coverage[col])} groups."
        )
    return membership
