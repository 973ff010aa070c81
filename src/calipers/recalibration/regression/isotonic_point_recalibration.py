"""Isotonic recalibration of point forecasts of a functional (auto-calibration), as a recalibrator.

A point forecast ``z`` of a functional T (the mean, the median, an
``alpha``-quantile or a ``tau``-expectile) is auto-calibrated when
``T(Y | Z = z) = z``. The isotonic T-regression of the targets on the
forecasts, fitted by the pool-adjacent-violators algorithm under T
(Dimitriadis, Gneiting & Jordan 2021; Jordan, Mühlemann & Ziegel 2022), is a
non-decreasing estimate of ``z -> T(Y | Z = z)``, the T-reliability curve of
Gneiting & Resin 2023 (§3). Mapping forecasts through it recalibrates them:
on the calibration rows the recalibrated forecasts are auto-calibrated and
never score worse under any consistent scoring function for T (their
miscalibration term, MCB, is what they save).

:class:`IsotonicPointRecalibration` fits the curve with
:func:`calipers.regression.t_reliability_curve` on a calibration split and
maps new forecasts through it: linear between the distinct calibration
forecasts (the knots), constant beyond the first and the last (as
scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` and
model-diagnostics predict). On the calibration rows themselves its
predictions are :func:`calipers.regression.isotonic_recalibration`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...regression import FUNCTIONALS, t_reliability_curve
from .._inputs import _as_input
from .._schema import Array, OneOf, Real, Schema, Values
from .forecast_base import ForecastRecalibrator, as_vector, first_tensor, register_forecast

__all__ = ["IsotonicPointRecalibration"]


def _level_fits_functional(v: Values) -> str | None:
    """The rule of :func:`calipers.regression.check_point_forecast` for a file's parameters."""
    functional, level = v["functional"], v["level"]
    if functional == "mean" and level is not None:
        return "parameter 'level' must be null for functional 'mean' (the mean has no level)"
    if functional == "median" and level not in (None, 0.5):
        return f"parameter 'level' must be null or 0.5 for functional 'median'; got {level!r}"
    if functional in ("quantile", "expectile") and level is None:
        return f"parameter 'level' must be a number in (0, 1) for functional {functional!r}"
    return None


def _values_shape(v: Values) -> list[tuple[int, ...]]:
    return [(len(v["knots_"]),)]


@register_forecast
class IsotonicPointRecalibration(ForecastRecalibrator):
    """Recalibrate point forecasts of a functional by isotonic regression (auto-calibration).

    Fits the isotonic T-reliability curve ``z -> T(Y | Z = z)`` of the
    forecasts on a calibration split (pool-adjacent violators under the
    functional: Dimitriadis, Gneiting & Jordan 2021; Gneiting & Resin 2023,
    §3; for quantiles the midpoint of the smallest and largest solutions,
    Jordan, Mühlemann & Ziegel 2022) and maps forecasts through it, linearly
    between the calibration forecasts and constant beyond them. The map is
    non-decreasing, so the forecasts' order is kept (ties may form: not
    injective).

    Parameters
    ----------
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
        The functional the forecasts state.
    level : float, optional
        Its level in (0, 1): the quantile level or expectile level; required for
        ``"quantile"`` and ``"expectile"``, None (or 0.5) for ``"median"``, None
        for ``"mean"``.

    Attributes
    ----------
    knots_ : numpy.ndarray of shape (g,)
        The distinct calibration forecasts (rows of positive weight), increasing.
    values_ : numpy.ndarray of shape (g,)
        The recalibrated forecast at each knot, non-decreasing (target units).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.regression import IsotonicPointRecalibration
    >>> rc = IsotonicPointRecalibration().fit([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 5.0])
    >>> rc.values_.tolist()                               # PAV: 2 and 1 are pooled
    [0.0, 1.5, 1.5, 5.0]
    >>> rc.predict([0.0, 3.5, 9.0]).tolist()              # constant, linear, constant
    [0.0, 3.25, 5.0]
    >>> rng = np.random.default_rng(0)
    >>> z = rng.uniform(0, 4, 4000); y = rng.poisson(z ** 1.5)       # forecasts of the mean, too low
    >>> rc = IsotonicPointRecalibration().fit(z[:2000], y[:2000])
    >>> new = rc.predict(z[2000:])
    >>> mse = lambda f: round(float(np.mean((f - y[2000:]) ** 2)), 2)
    >>> mse(z[2000:]), mse(new)            # held-out MSE; the noise variance alone is 3.2
    (6.46, 3.31)
    """

    schema = Schema(
        params={
            "functional": OneOf(FUNCTIONALS),
            "level": Real(lo=0.0, hi=1.0, lo_open=True, hi_open=True, none_ok=True),
        },
        state={
            "knots_": Array((None,), order="increasing"),
            "values_": Array(_values_shape, order="non-decreasing"),
        },
        param_checks=(_level_fits_functional,),
    )
    _fit_call = "fit(forecasts, targets)"

    def __init__(self, functional: str = "mean", level: float | None = None) -> None:
        self.functional = functional
        self.level = level

    def fit(
        self, forecasts: Any, targets: Any, *, sample_weight: Any = None
    ) -> IsotonicPointRecalibration:
        """Fit the isotonic T-reliability curve on a calibration split.

        Parameters
        ----------
        forecasts : array-like or tensor of shape (n,)
            Point forecasts of the functional (target units).
        targets : array-like or tensor of shape (n,)
            Observed targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative repetition weights (a weight of 2 counts like the row
            twice); rows of weight 0 take no part.

        Returns
        -------
        self
        """
        self._start_fit()
        f = as_vector(forecasts, "forecasts")
        y = as_vector(targets, "targets", f.shape[0], rows_of="forecasts")
        curve = t_reliability_curve(
            f, y, functional=self.functional, level=self.level, sample_weight=sample_weight
        )
        self.knots_ = np.asarray(curve.forecasts, dtype=np.float64)
        self.values_ = np.asarray(curve.recalibrated, dtype=np.float64)
        self._end_fit()
        return self

    def predict(self, forecasts: Any) -> Any:
        """Recalibrated forecasts: the fitted curve at each forecast.

        Parameters
        ----------
        forecasts : array-like or tensor of shape (m,)
            Point forecasts of new rows.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(m,)`` in target units (a tensor on the input's device for a
            tensor).
        """
        self._ready()
        f = as_vector(forecasts, "forecasts")
        out = np.interp(f, self.knots_, self.values_)
        return _as_input(out, first_tensor(forecasts))
