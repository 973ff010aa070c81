"""Variance scaling: one factor ``s`` on every predicted variance, fitted by NLL.

The regression analogue of temperature scaling (Guo et al. 2017): the
prediction N(mu, sigma**2) becomes N(mu, s * sigma**2) with one ``s > 0``
fitted on a calibration split. It is the Platt scaling of the log variance of
Gruber & Buettner 2022 (App. G.5) with the slope fixed at 1,
``log(s sigma**2) = log sigma**2 + log s``.

The fit has a closed form. With residuals ``r_i = y_i - mu_i`` and weights
``w_i`` (total ``W``), the mean Gaussian NLL of the scaled predictions is

    L(s) = (1 / W) sum_i w_i [0.5 log(2 pi s sigma_i**2) + r_i**2 / (2 s sigma_i**2)],

    L'(s) = (1 / W) sum_i w_i [1 / (2 s) - r_i**2 / (2 s**2 sigma_i**2)],

which vanishes only at

    s* = (1 / W) sum_i w_i r_i**2 / sigma_i**2,

the weighted mean squared standardised residual. ``L'(s) < 0`` below ``s*``
and ``> 0`` above (``L'(s) = (s - s*) / (2 s**2)``), so ``s*`` is the unique
minimiser on ``s > 0``. The Dawid-Sebastiani score is ``2 L(s) - log(2 pi)``,
so ``s*`` minimises it too.
"""

from __future__ import annotations

import math

import numpy as np

from ...regression import GaussianPredictions
from ...validation import CalibrationInputError
from .._schema import POSITIVE, Schema
from .base import _GaussianOutput, register_regression

__all__ = ["VarianceScaling"]


@register_regression
class VarianceScaling(_GaussianOutput):
    """Scale every predicted variance by one fitted factor: ``sigma'**2 = s * sigma**2``.

    The regression analogue of temperature scaling; ``s`` minimises the
    Gaussian NLL (equivalently the Dawid-Sebastiani score, Gruber & Buettner
    2022, §2.3) on the calibration split, in closed form: the (weighted) mean
    of ``(y - mu)**2 / sigma**2`` (derivation in the module docstring). The
    means are unchanged. Injective (``s > 0``), so the score improvement on
    held-out data estimates the reduction of the calibration error (Gruber &
    Buettner 2022, Prop. 4.5). No parameters.

    Attributes
    ----------
    scale_ : float
        The fitted factor ``s`` (> 0, dimensionless); the standard deviations
        are multiplied by ``sqrt(s)``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration import VarianceScaling
    >>> rng = np.random.default_rng(0)
    >>> mu, sd = rng.normal(size=20000), rng.uniform(0.5, 2.0, 20000)
    >>> y = mu + 2.0 * sd * rng.normal(size=20000)          # the true sd is twice the predicted
    >>> rc = VarianceScaling().fit(mu, std=sd, targets=y)
    >>> round(rc.scale_, 2)
    3.98
    >>> rc.predict_variance(mu[:2], std=sd[:2]) / sd[:2] ** 2
    array([3.98..., 3.98...])
    >>> lo, hi = rc.predict_interval(mu, std=sd, level=0.9)
    >>> round(float(np.mean((lo <= y) & (y <= hi))), 2)
    0.9
    >>> rc.injective, rc.gaussian
    (True, True)
    """

    _injective = True
    schema = Schema(params={}, state={"scale_": POSITIVE})

    def __init__(self) -> None:
        pass

    def _fit(self, G: GaussianPredictions) -> None:
        r = G.targets - G.mean
        with np.errstate(over="ignore"):
            s = G.weighted_mean(r * r / G.variance)
        if not (s > 0 and math.isfinite(s)):
            what = (
                "every target (with a positive weight) equals its predicted mean, so the NLL "
                "has no minimum (it falls without bound as s -> 0)"
                if s == 0
                else f"the mean squared standardised residual is {s!r} (it overflows float64)"
            )
            raise CalibrationInputError(f"VarianceScaling.fit: {what}")
        self.scale_ = float(s)

    def _variance(self, var: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore"):
            return var * self.scale_
