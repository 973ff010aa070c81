"""Recalibration methods with one estimator contract (see :mod:`.base`).

Every method: ``fit(scores, labels)`` on a calibration split, then
``predict_proba(scores)``; declares ``accuracy_preserving`` and ``injective``;
saves to and loads from JSON (no pickle); is a scikit-learn classifier of
scores (``classes_``, ``score``, ``__sklearn_tags__``: ``GridSearchCV`` and
``cross_val_score`` work on (scores, labels)). :class:`RecalibratedClassifier`
puts a method on top of any fitted classifier (docs/scikit-learn.md).
"""

from __future__ import annotations

from .base import NotFittedError, Recalibrator, load_recalibrator, register
from .bayesian_binning_into_quantiles import BayesianBinningIntoQuantiles
from .beta_calibration import BetaCalibration
from .bias_corrected_temperature_scaling import BiasCorrectedTemperatureScaling
from .cross_venn_abers import CrossVennAbersClassifier
from .ensemble_of_near_isotonic_regression import EnsembleOfNearIsotonicRegression
from .ensemble_temperature_scaling import EnsembleTemperatureScaling
from .histogram_binning import HistogramBinning
from .isotonic_regression import IsotonicRegression
from .ks_spline_calibration import KSSplineCalibration
from .matrix_scaling import MatrixScaling
from .mean_replacement import MeanReplacement
from .monotone_logit_map import MonotoneLogitMap
from .platt_scaling import PlattScaling
from .recalibrated_classifier import RecalibratedClassifier
from .regression.base import RegressionRecalibrator
from .regression.conformalized_quantile_regression import ConformalizedQuantileRegression
from .regression.forecast_base import ForecastRecalibrator
from .regression.isotonic_point_recalibration import IsotonicPointRecalibration
from .regression.quantile_recalibration import QuantileRecalibration
from .regression.split_conformal import SplitConformal
from .regression.variance_platt_scaling import VariancePlattScaling
from .regression.variance_scaling import VarianceScaling
from .scaling_binning import ScalingBinning
from .spline_calibration import SplineCalibration
from .split import (
    CalibrationSplit,
    calibration_split,
    calibration_split_indices,
    cross_val_predict_proba,
    cross_val_score,
    stratified_folds,
)
from .temperature_scaling import TemperatureScaling
from .vector_scaling import VectorScaling
from .venn_abers import VennAbers

__all__ = [
    "Recalibrator",
    "RecalibratedClassifier",
    "NotFittedError",
    "load_recalibrator",
    "register",
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
    "CalibrationSplit",
    "calibration_split",
    "calibration_split_indices",
    "cross_val_predict_proba",
    "cross_val_score",
    "stratified_folds",
    "RegressionRecalibrator",
    "VarianceScaling",
    "VariancePlattScaling",
    "QuantileRecalibration",
    "ForecastRecalibrator",
    "SplitConformal",
    "ConformalizedQuantileRegression",
    "IsotonicPointRecalibration",
    "VennAbers",
    "CrossVennAbersClassifier",
]
