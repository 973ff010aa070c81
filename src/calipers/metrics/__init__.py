"""Calibration errors and proper scores.

The composable pipeline :func:`calibration_error` (Kirchenbauer, Oaks & Heim
2022) and its named presets (ECE, ACE, SCE, TACE, ...), the kernel and
binning-free errors (SmoothECE, KDE, KS, MMCE, SKCE, the proper calibration
errors of Popordanoska et al. 2024, the confidence calibration error of
Chidambaram & Ge 2024), proper scores with their decompositions, the calibration
upper bound of Gruber & Buettner (2022) and the reliability table.

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from ._calibration_error import SliceStatistics, binned_statistics, calibration_error
from ._calibration_sharpness import (
    CalibrationSharpness,
    calibration_sharpness,
    confidence_calibration_error,
)
from ._debiased_calibration_error import debiased_calibration_error
from ._kde_calibration_error import kde_bandwidth, kde_calibration_error
from ._mmce import mmce
from ._proper_calibration_error import (
    ProperCalibrationError,
    ce_kl,
    ce_squared_l2,
    proper_calibration_error,
)
from ._reliability_table import RELIABILITY_TABLE_COLUMNS, reliability_table, wilson_interval
from ._skce import skce
from .binned import (
    ace,
    bin_averaged_ece,
    ce_p,
    classwise_ece,
    cwce_p,
    ece,
    full_ece,
    group_ece,
    interval_calibration_error,
    mce,
    rmsce,
    sce,
    tace,
    tce_p,
    top_k_ece,
    top_label_ece,
)
from .decomposition import (
    CORPDecomposition,
    MurphyDecomposition,
    corp_decomposition,
    murphy_decomposition,
    pav,
)
from .kolmogorov_smirnov import ks_calibration_error
from .scores import accuracy, brier, nll
from .smooth_ece import SmoothReliability, smece, smece_bandwidth, smooth_reliability
from .upper_bound import calibration_upper_bound, rbs, recalibration_improvement

__all__ = [
    "calibration_error",
    "binned_statistics",
    "SliceStatistics",
    "ece",
    "mce",
    "rmsce",
    "bin_averaged_ece",
    "top_label_ece",
    "sce",
    "ace",
    "tace",
    "classwise_ece",
    "top_k_ece",
    "full_ece",
    "group_ece",
    "interval_calibration_error",
    "tce_p",
    "cwce_p",
    "ce_p",
    "accuracy",
    "nll",
    "brier",
    "MurphyDecomposition",
    "CORPDecomposition",
    "murphy_decomposition",
    "corp_decomposition",
    "pav",
    "debiased_calibration_error",
    "smece",
    "smece_bandwidth",
    "smooth_reliability",
    "SmoothReliability",
    "kde_calibration_error",
    "kde_bandwidth",
    "ks_calibration_error",
    "mmce",
    "skce",
    "ProperCalibrationError",
    "proper_calibration_error",
    "ce_kl",
    "ce_squared_l2",
    "CalibrationSharpness",
    "calibration_sharpness",
    "confidence_calibration_error",
    "calibration_upper_bound",
    "rbs",
    "recalibration_improvement",
    "reliability_table",
    "wilson_interval",
    "RELIABILITY_TABLE_COLUMNS",
]
