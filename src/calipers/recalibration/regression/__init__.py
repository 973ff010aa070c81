"""Recalibration of Gaussian regression predictions.

Variance scaling and Platt scaling of the log variance (Gruber & Buettner 2022),
and quantile recalibration of the PIT (Kuleshov et al. 2018), under one
estimator contract (:class:`RegressionRecalibrator`). Point forecasts and
prediction intervals have their own recalibrators (:class:`ForecastRecalibrator`):
split conformal intervals (Lei et al. 2018), conformalized quantile regression
(Romano, Patterson & Candès 2019) and isotonic recalibration of point forecasts
(Gneiting & Resin 2023).

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from .base import RegressionRecalibrator, register_regression
from .conformalized_quantile_regression import ConformalizedQuantileRegression
from .forecast_base import ForecastRecalibrator, register_forecast
from .isotonic_point_recalibration import IsotonicPointRecalibration
from .quantile_recalibration import QuantileRecalibration
from .split_conformal import SplitConformal
from .variance_platt_scaling import VariancePlattScaling
from .variance_scaling import VarianceScaling

__all__ = [
    "RegressionRecalibrator",
    "register_regression",
    "VarianceScaling",
    "VariancePlattScaling",
    "QuantileRecalibration",
    "ForecastRecalibrator",
    "register_forecast",
    "SplitConformal",
    "ConformalizedQuantileRegression",
    "IsotonicPointRecalibration",
]
