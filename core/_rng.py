"""The one place where seeds become random generators (STYLE.md rule 8)."""
from __future__ import annotations

import numpy as np



def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    An ``int`` gives a fresh PCG64 generator (bit-identical across runs and platforms); a
    ``Generator`` is passed through so callers can share a stream; ``None`` is refused, because
    every stochastic piece of this product must be reproducible from an explicit seed.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise ValueError("`seed` must be an int or a numpy Generator; got None (results must be reproducible).")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative int; got {seed!r}.")
    return np.random.default_rng(int(seed))
