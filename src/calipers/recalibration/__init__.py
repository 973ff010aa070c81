"""Recalibration methods with one estimator contract (see :mod:`.base`).

Every method: ``fit(scores, labels)`` on a calibration split, then
``predict_proba(scores)``; declares ``accuracy_preserving`` and ``injective``;
saves to and loads from JSON (no pickle).
"""

from __future__ import annotations

from .base import Recalibrator, load_recalibrator, register
from .histogram_binning import HistogramBinning
from .isotonic_regression import IsotonicRegression
from .mean_replacement import MeanReplacement
from .split import (
    CalibrationSplit,
    calibration_split,
    calibration_split_indices,
    cross_val_predict_proba,
    cross_val_score,
    stratified_folds,
)
from .temperature_scaling import TemperatureScaling

__all__ = [
    "Recalibrator",
    "load_recalibrator",
    "register",
    "TemperatureScaling",
    "HistogramBinning",
    "IsotonicRegression",
    "MeanReplacement",
    "CalibrationSplit",
    "calibration_split",
    "calibration_split_indices",
    "cross_val_predict_proba",
    "cross_val_score",
    "stratified_folds",
]
