"""Counterfactual fragility certificates for tabular classifiers (SPEC Part A).

Model-agnostic: a model is only a ``predict_proba`` over the transformed feature space.

Typical use::

    groups = raw_origin_groups(preprocessor)              # name -> transformed columns
    baseline = baseline_vector(X_train_t, groups, "mean")  # x̄ from the training split
    cs = certify(model.predict_proba, X_test_t, groups, baseline, Protocol())
    cs.table                    # one row per sample: pred, margin, flip_budget, rcma, fds, ...
    cs.to_json("certs.json")    # bundle with protocol + fingerprint
    verify("certs.json", model.predict_proba, X_test_t).ok

Modules, one idea each: ``protocol`` (Π), ``grouping`` and ``baselines`` (groups, ``x̄``),
``operators`` (removal, attenuation, batched model calls), ``scores`` (SPEC A.2 margins),
``certification`` (``certify``), ``fds`` (collapse, RCMA, ``u``, FDS), ``fingerprint``,
``certificate_set`` (the result types), ``bundle`` (their JSON format), ``verification``
(``verify``), ``search`` (SPEC A.4); the evaluation side: ``stressors``, ``evaluation``,
``calibration``.
"""

from core.cfc.baselines import baseline_vector, categorical_groups
from core.cfc.certificate_set import CertificateSet, OperatorTrace, SampleCertificate
from core.cfc.certification import certify
from core.cfc.fds import fds_from_components
from core.cfc.fingerprint import certificate_fingerprint
from core.cfc.grouping import (
    domain_block_groups,
    group_correlation,
    raw_origin_groups,
    redundancy_merged_groups,
    trace_feature_origins,
    validate_groups,
)
from core.cfc.operators import attenuate, remove
from core.cfc.protocol import Protocol
from core.cfc.search import FlipSearchResult, SearchSummary, flip_search, search_summary
from core.cfc.verification import VerificationReport, verify

__all__ = [
    "CertificateSet",
    "FlipSearchResult",
    "OperatorTrace",
    "Protocol",
    "SampleCertificate",
    "SearchSummary",
    "VerificationReport",
    "attenuate",
    "baseline_vector",
    "categorical_groups",
    "certificate_fingerprint",
    "certify",
    "domain_block_groups",
    "fds_from_components",
    "flip_search",
    "group_correlation",
    "raw_origin_groups",
    "redundancy_merged_groups",
    "remove",
    "search_summary",
    "trace_feature_origins",
    "validate_groups",
    "verify",
]
