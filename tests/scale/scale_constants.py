"""Sizes of the synthetic credit table shared by the large-audit tests (see conftest.py)."""

N_ROWS = 4000
FIT_ROWS = 1500
CHUNK_ROWS = 500
