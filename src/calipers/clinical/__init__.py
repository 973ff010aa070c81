"""The calibration hierarchy of clinical risk models.

Van Calster et al. (2016) order the calibration of predicted risks in levels:
calibration in the large (mean predicted risk against the observed event rate),
weak calibration (the calibration intercept and slope of Cox 1958), moderate
calibration (a flexible calibration curve) and, for summaries of that curve,
the integrated calibration index and its quantiles (Austin & Steyerberg 2019);
beside them the classic tests (Hosmer & Lemeshow 1980, Spiegelhalter 1986) and
the calibration belt (Finazzi et al. 2011; Nattino, Finazzi & Bertolini 2014).
"""

from __future__ import annotations

from ._calibration_belt import CalibrationBelt, calibration_belt
from ._calibration_hierarchy import (
    CalibrationHierarchy,
    calibration_hierarchy,
    calibration_hierarchy_by_class,
)
from ._calibration_in_the_large import CalibrationInTheLarge, calibration_in_the_large
from ._calibration_intercept_slope import WeakCalibration, calibration_intercept_slope
from ._flexible_calibration_curve import FlexibleCalibrationCurve, flexible_calibration_curve
from ._hosmer_lemeshow import HosmerLemeshowTest, hosmer_lemeshow_test
from ._integrated_calibration_index import CalibrationIndex, integrated_calibration_index
from ._spiegelhalter import SpiegelhalterTest, spiegelhalter_z_test

__all__: list[str] = [
    "CalibrationBelt",
    "CalibrationHierarchy",
    "CalibrationInTheLarge",
    "CalibrationIndex",
    "FlexibleCalibrationCurve",
    "HosmerLemeshowTest",
    "SpiegelhalterTest",
    "WeakCalibration",
    "calibration_belt",
    "calibration_hierarchy",
    "calibration_hierarchy_by_class",
    "calibration_in_the_large",
    "calibration_intercept_slope",
    "flexible_calibration_curve",
    "hosmer_lemeshow_test",
    "integrated_calibration_index",
    "spiegelhalter_z_test",
]
