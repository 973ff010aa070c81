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

from typing import TYPE_CHECKING

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
from .estimators import (
    BinStatistics,
    DirichletKernel,
    EqualMass,
    EqualWidth,
    FixedEdges,
    KDTree,
    NadarayaWatson,
    bin_statistics,
    select_bandwidth,
)
from .inference import (
    CalibrationTestResult,
    ConfidenceInterval,
    ParameterSweep,
    TestSizeSweep,
    Verdict,
    confidence_interval,
    consistency_test,
    paired_confidence_interval,
    parameter_sweep,
    skce_test,
    test_size_sweep,
    verdict,
)
from .metrics import (
    CalibrationSharpness,
    ProperCalibrationError,
    SliceStatistics,
    SmoothReliability,
    accuracy,
    ace,
    bin_averaged_ece,
    binned_statistics,
    brier,
    calibration_error,
    calibration_sharpness,
    calibration_upper_bound,
    ce_kl,
    ce_p,
    ce_squared_l2,
    classwise_ece,
    confidence_calibration_error,
    corp_decomposition,
    cwce_p,
    debiased_calibration_error,
    ece,
    full_ece,
    group_ece,
    interval_calibration_error,
    kde_bandwidth,
    kde_calibration_error,
    ks_calibration_error,
    mce,
    mmce,
    murphy_decomposition,
    nll,
    proper_calibration_error,
    rbs,
    recalibration_improvement,
    reliability_table,
    rmsce,
    sce,
    skce,
    smece,
    smece_bandwidth,
    smooth_reliability,
    tace,
    tce_p,
    top_k_ece,
    top_label_ece,
)
from .pipeline import (
    KL,
    TVD,
    Bregman,
    InterInterval,
    LabelSelection,
    Lp,
    Mahalanobis,
    ScoreInterval,
    binary,
    canonical,
    classwise,
    grouping,
    single_class,
    threshold,
    top_k,
    top_label,
    top_label_per_class,
)
from .recalibration import (
    BayesianBinningIntoQuantiles,
    BetaCalibration,
    BiasCorrectedTemperatureScaling,
    ConformalizedQuantileRegression,
    CrossVennAbersClassifier,
    EnsembleOfNearIsotonicRegression,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicPointRecalibration,
    IsotonicRegression,
    KSSplineCalibration,
    MatrixScaling,
    MeanReplacement,
    MonotoneLogitMap,
    PlattScaling,
    QuantileRecalibration,
    RecalibratedClassifier,
    Recalibrator,
    RegressionRecalibrator,
    ScalingBinning,
    SplineCalibration,
    SplitConformal,
    TemperatureScaling,
    VariancePlattScaling,
    VarianceScaling,
    VectorScaling,
    VennAbers,
    calibration_split,
    load_recalibrator,
)
from .regression import gaussian_skce, gaussian_skce_test
from .reports import Report, regression_report, report
from .stream import CalibrationState
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
    "BayesianBinningIntoQuantiles",
    "EnsembleOfNearIsotonicRegression",
    "SplineCalibration",
    "KSSplineCalibration",
    "ScalingBinning",
    "VennAbers",
    "CrossVennAbersClassifier",
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
    "SplitConformal",
    "ConformalizedQuantileRegression",
    "IsotonicPointRecalibration",
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

#: Packages loaded on first use as ``calipers.<name>`` (they import SciPy's statistics,
#: which ``import calipers`` does not load): ``cp.clinical.calibration_hierarchy(...)``
#: works after ``import calipers as cp`` as ``cp.regression`` does. Type checkers see
#: them as plain submodules, and a misspelt attribute of ``calipers`` stays an error.
_LAZY_PACKAGES = ("clinical", "subgroups")

if TYPE_CHECKING:
    from . import clinical, subgroups  # noqa: F401
else:

    def __getattr__(name: str) -> object:
        if name in _LAZY_PACKAGES:
            import importlib

            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
