"""Statistics on the metrics: tests, intervals, sweeps and verdicts.

Consistency resampling and kernel tests of calibration, bootstrap intervals,
sweeps over test-set size and estimator settings (Gruber & Buettner 2022;
Kirchenbauer, Oaks & Heim 2022; Chidambaram & Ge 2024), and the verdict on an
estimate with its bias-corrected number at a fitted calibration curve (Roelofs et
al. 2022). The fitted curve's names (:func:`fit_calibration_world`, ...) import
SciPy, so they load on first use.

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._confidence_interval import (
    ConfidenceInterval,
    confidence_interval,
    paired_confidence_interval,
)
from ._honest_calibration_band import BandDeviation, CalibrationBand, honest_calibration_band
from ._verdict import Verdict, decide, n_to_resolve, verdict
from .bias_correction import BiasCorrection, correct
from .calibration_test import CalibrationTestResult, consistency_test, skce_test
from .sweeps import (
    ParameterSweep,
    TestSizeSweep,
    default_sizes,
    metric_name,
    parameter_sweep,
    test_size_sweep,
)

if TYPE_CHECKING:  # pragma: no cover
    from .calibration_world import CalibrationWorld, CalibrationWorldFitter, fit_calibration_world

#: Names whose module imports SciPy, loaded on first use so that ``import calipers`` does not.
_LAZY = {
    "CalibrationWorld": "calibration_world",
    "CalibrationWorldFitter": "calibration_world",
    "fit_calibration_world": "calibration_world",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CalibrationTestResult",
    "consistency_test",
    "skce_test",
    "ConfidenceInterval",
    "confidence_interval",
    "paired_confidence_interval",
    "TestSizeSweep",
    "ParameterSweep",
    "test_size_sweep",
    "parameter_sweep",
    "default_sizes",
    "metric_name",
    "Verdict",
    "verdict",
    "decide",
    "n_to_resolve",
    "BiasCorrection",
    "correct",
    "CalibrationWorld",
    "CalibrationWorldFitter",
    "fit_calibration_world",
    "honest_calibration_band",
    "CalibrationBand",
    "BandDeviation",
]
