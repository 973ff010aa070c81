"""calipers: measure, explain and improve the calibration of probabilistic predictions.

Every calibration error is one pipeline (lens -> selection -> estimator of
E[target | score] -> divergence -> aggregate; see ``calibration_error``); the
named metrics (``ece``, ``ace``, ``sce``, ``tace``, ...) are presets of it, and
proper scores (``accuracy``, ``nll``, ``brier``) and their decompositions sit
beside it.

Examples
--------
>>> import calipers as cp
>>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]]
>>> labels = [0, 1, 1]
>>> round(cp.ece(probs, labels), 4), round(cp.nll(probs, labels), 4)
(0.4, 0.6905)
"""

from __future__ import annotations

from . import diagrams, regression
from .diagrams import (
    calibration_sharpness_diagram,
    classwise_reliability_grid,
    group_bar_chart,
    interval_diagram,
    pit_histogram_diagram,
    quantile_reliability_diagram,
    reliability_diagram,
    smooth_reliability_diagram,
    sweep_diagram,
    top_k_bar_chart,
    variance_error_diagram,
)
from .estimators.binning import (
    BinStatistics,
    EqualMass,
    EqualWidth,
    FixedEdges,
    KDTree,
    bin_statistics,
)
from .estimators.dirichlet_kernel import DirichletKernel, select_bandwidth
from .estimators.nadaraya_watson import NadarayaWatson
from .inference._confidence_interval import (
    ConfidenceInterval,
    confidence_interval,
    paired_confidence_interval,
)
from .inference._verdict import Verdict, verdict
from .inference.calibration_test import CalibrationTestResult, consistency_test, skce_test
from .inference.sweeps import ParameterSweep, TestSizeSweep, parameter_sweep, test_size_sweep
from .metrics._calibration_error import SliceStatistics, binned_statistics, calibration_error
from .metrics._calibration_sharpness import (
    CalibrationSharpness,
    calibration_sharpness,
    confidence_calibration_error,
)
from .metrics._debiased_calibration_error import debiased_calibration_error
from .metrics._kde_calibration_error import kde_bandwidth, kde_calibration_error
from .metrics._mmce import mmce
from .metrics._proper_calibration_error import (
    ProperCalibrationError,
    ce_kl,
    ce_squared_l2,
    proper_calibration_error,
)
from .metrics._reliability_table import reliability_table
from .metrics._skce import skce
from .metrics.binned import (
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
from .metrics.decomposition import corp_decomposition, murphy_decomposition
from .metrics.kolmogorov_smirnov import ks_calibration_error
from .metrics.scores import accuracy, brier, nll
from .metrics.smooth_ece import SmoothReliability, smece, smece_bandwidth, smooth_reliability
from .metrics.upper_bound import calibration_upper_bound, rbs, recalibration_improvement
from .pipeline.divergences import KL, TVD, Bregman, InterInterval, Lp, Mahalanobis
from .pipeline.lenses import (
    binary,
    canonical,
    classwise,
    grouping,
    single_class,
    top_k,
    top_label,
    top_label_per_class,
)
from .pipeline.selection import LabelSelection, ScoreInterval, threshold
from .recalibration import (
    BetaCalibration,
    BiasCorrectedTemperatureScaling,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicRegression,
    MatrixScaling,
    MeanReplacement,
    MonotoneLogitMap,
    PlattScaling,
    QuantileRecalibration,
    RecalibratedClassifier,
    Recalibrator,
    RegressionRecalibrator,
    TemperatureScaling,
    VariancePlattScaling,
    VarianceScaling,
    VectorScaling,
    calibration_split,
    load_recalibrator,
)
from .regression.skce import gaussian_skce, gaussian_skce_test
from .reports._document import Report
from .reports._regression_report import regression_report
from .reports._report import report
from .stream.calibration_state import CalibrationState
from .validation import CalibrationInputError, Predictions, check_predictions

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # pipeline
    "calibration_error",
    "binned_statistics",
    "SliceStatistics",
    "BinStatistics",
    "bin_statistics",
    "EqualWidth",
    "EqualMass",
    "FixedEdges",
    "KDTree",
    "DirichletKernel",
    "NadarayaWatson",
    "select_bandwidth",
    "Lp",
    "TVD",
    "KL",
    "Bregman",
    "InterInterval",
    "Mahalanobis",
    "top_label",
    "top_label_per_class",
    "binary",
    "top_k",
    "classwise",
    "single_class",
    "canonical",
    "grouping",
    "LabelSelection",
    "ScoreInterval",
    "threshold",
    # named metrics
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
    # consistent kernel estimators
    "proper_calibration_error",
    "ProperCalibrationError",
    "ce_kl",
    "ce_squared_l2",
    "confidence_calibration_error",
    "calibration_sharpness",
    "CalibrationSharpness",
    "smece",
    "kde_calibration_error",
    "kde_bandwidth",
    "smece_bandwidth",
    "smooth_reliability",
    "SmoothReliability",
    "debiased_calibration_error",
    # upper bounds (Gruber & Buettner (2022))
    "calibration_upper_bound",
    "rbs",
    "recalibration_improvement",
    # calibration tests
    "consistency_test",
    "verdict",
    "Verdict",
    "confidence_interval",
    "paired_confidence_interval",
    "ConfidenceInterval",
    "skce_test",
    "CalibrationTestResult",
    # sweeps (Gruber & Buettner (2022); Kirchenbauer, Oaks & Heim (2022); Chidambaram & Ge (2024))
    "test_size_sweep",
    "parameter_sweep",
    "TestSizeSweep",
    "ParameterSweep",
    # binning-free calibration errors
    "ks_calibration_error",
    "mmce",
    "skce",
    # scores
    "accuracy",
    "nll",
    "brier",
    "murphy_decomposition",
    "corp_decomposition",
    # recalibration
    "Recalibrator",
    "RecalibratedClassifier",
    "TemperatureScaling",
    "VectorScaling",
    "MatrixScaling",
    "BiasCorrectedTemperatureScaling",
    "EnsembleTemperatureScaling",
    "PlattScaling",
    "BetaCalibration",
    "MonotoneLogitMap",
    "HistogramBinning",
    "IsotonicRegression",
    "MeanReplacement",
    "calibration_split",
    "load_recalibrator",
    # probabilistic regression (Gruber & Buettner (2022) §5, App. G.5)
    "regression",
    "gaussian_skce",
    "gaussian_skce_test",
    "RegressionRecalibrator",
    "VarianceScaling",
    "VariancePlattScaling",
    "QuantileRecalibration",
    "pit_histogram_diagram",
    "quantile_reliability_diagram",
    "variance_error_diagram",
    "regression_report",
    # diagrams
    "diagrams",
    "reliability_diagram",
    "calibration_sharpness_diagram",
    "smooth_reliability_diagram",
    "classwise_reliability_grid",
    "top_k_bar_chart",
    "group_bar_chart",
    "interval_diagram",
    "sweep_diagram",
    # reports
    "report",
    "Report",
    "reliability_table",
    "CalibrationState",
    # validation
    "check_predictions",
    "Predictions",
    "CalibrationInputError",
]
