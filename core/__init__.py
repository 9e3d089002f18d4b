"""Reliability audit core: counterfactual fragility certificates and paired evaluations.

Importable and testable without Streamlit. Sub-packages:

- :mod:`core.cfc` — certificate engine for tabular classifiers (SPEC Part A).
- :mod:`core.tabular` — offline datasets, preprocessing, model suite, audit pipeline.
- :mod:`core.paired` — paired evaluations under perturbation (SPEC Part B).
- :mod:`core.reviews` — persistent review decisions (SQLite).
"""

__version__ = "0.1.0"
__all__ = ["audit_model", "log_audit_to_mlflow"]


def __getattr__(name: str):
    # Lazy: ``import core`` stays light; ``from core import audit_model`` loads the audit stack,
    # ``log_audit_to_mlflow`` (core.mlflow_log) needs MLflow only when called.
    if name == "audit_model":
        from core.tabular.own_model import audit_model

        return audit_model
    if name == "log_audit_to_mlflow":
        from core.mlflow_log import log_audit_to_mlflow

        return log_audit_to_mlflow
    raise AttributeError(f"module 'core' has no attribute {name!r}")
