"""Reliability audit core: counterfactual fragility certificates and paired evaluations.

Importable and testable without Streamlit. Sub-packages:

- :mod:`core.cfc` — certificate engine for tabular classifiers (SPEC Part A).
- :mod:`core.tabular` — offline datasets, preprocessing, model suite, audit pipeline.
- :mod:`core.paired` — paired evaluations under perturbation (SPEC Part B).
- :mod:`core.reviews` — persistent review decisions (SQLite).
"""

__version__ = "0.1.0"
