"""Recalibration methods with one estimator contract (see :mod:`.base`).

Every method: ``fit(scores, labels)`` on a calibration split, then
``predict_proba(scores)``; declares ``accuracy_preserving`` and ``injective``;
saves to and loads from JSON (no pickle).
"""

from __future__ import annotations

from .base import Recalibrator, load_recalibrator, register
from .temperature_scaling import TemperatureScaling

__all__ = ["Recalibrator", "load_recalibrator", "register", "TemperatureScaling"]
