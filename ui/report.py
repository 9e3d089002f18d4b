"""The stakeholder report of an audit as the Overview's download button builds it.

Imported on click only: the report's vega bundle and the paired engine are not first-screen costs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from core.imaging.demo import DEFAULT_DIR as PAIRED_DEMO_DIR
from core.report import report_for_result

if TYPE_CHECKING:
    from core.tabular.audit import AuditResult


def audit_report(result: AuditResult, **options: Any) -> str:
    """:func:`core.report.report_for_result` of ``result`` with the paired demo pool the server
    was given (``PAIRED_DEMO_DIR``, else the shipped one); ``options`` are its keyword options."""
    return report_for_result(result, paired_dir=os.environ.get("PAIRED_DEMO_DIR") or PAIRED_DEMO_DIR, **options)
