"""The standard reports of classification and of probabilistic regression.

:func:`report` puts calibration beside accuracy, proper scores and sharpness
(calibration never alone, Chidambaram & Ge 2024); :func:`regression_report` does
the same for Gaussian regression predictions (Gruber & Buettner 2022). Both
render as Markdown, JSON, LaTeX and HTML; matplotlib is imported only to draw.

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from ._document import COLUMNS, Report, ReportRow
from ._regression_report import regression_report
from ._report import report

__all__ = [
    "Report",
    "ReportRow",
    "report",
    "COLUMNS",
    "regression_report",
]
