"""Platt scaling of the log variance: ``log sigma'**2 = w log sigma**2 + b``.

Gruber & Buettner 2022 (App. G.5) recalibrate the variance output of a
regression network by Platt scaling, ``x -> w x + b`` with ``w, b`` real,
fitted with L-BFGS on the validation set by the Dawid-Sebastiani score. Here
the map acts on the log variance, so that every ``(w, b)`` gives a positive
variance ``sigma'**2 = exp(b) * (sigma**2)**w``; ``w = 1`` is
:class:`~calipers.recalibration.VarianceScaling` with ``s = exp(b)``.

Objective. With ``l_i = log sigma_i**2``, ``t_i = w l_i + b`` and residuals
``r_i = y_i - mu_i``, the mean Gaussian NLL is

    L(w, b) = (1 / W) sum_i w_i [0.5 log(2 pi) + 0.5 t_i + 0.5 r_i**2 exp(-t_i)],

and the Dawid-Sebastiani score is ``2 L - log(2 pi)``: both have the same
minimiser. ``L`` is convex in ``(w, b)`` (``exp(-t)`` is convex and ``t`` is
linear), with gradient

    dL/dw = (1 / W) sum_i w_i g_i l_i,   dL/db = (1 / W) sum_i w_i g_i,
    g_i = 0.5 (1 - r_i**2 exp(-t_i)).

It is minimised by L-BFGS-B (:func:`scipy.optimize.minimize`) with this
analytic gradient, in the centred coordinates ``(w, c)``, ``t = w (l - lbar) + c``
(``lbar`` the weighted mean log variance, so the two coordinates are
uncorrelated), started at the variance-scaling optimum ``w = 1``,
``c = lbar + log s*``.

The slope ``w`` is not constrained, as in Gruber & Buettner 2022 (``w, b``
real): ``w < 1`` shrinks the spread of the variances (a model whose large
variances are too large and small ones too small), ``w < 0`` would reverse
their order. The map is injective exactly when ``w != 0``; :attr:`injective`
reports it for the fitted ``w`` (a fit with ``w = 0`` warns: every row then
gets the same variance and the improvement is no longer an estimate of a
calibration-error reduction, Gruber & Buettner 2022, Prop. 4.5). When every
predicted variance is the same, ``w`` is not identifiable and stays at its
start value 1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...regression import GaussianPredictions
from ...validation import CalibrationInputError
from .._params import user_stacklevel
from .._schema import ITERATIONS, MAX_ITER, POSITIVE, Real, Schema
from .base import _GaussianOutput, register_regression

__all__ = ["VariancePlattScaling"]

_LOG_2PI = math.log(2.0 * math.pi)
#: Largest exponent evaluated; beyond it the objective is huge anyway (the line search backs off).
_MAX_EXP = 700.0


def _nll_and_grad(
    theta: np.ndarray, lc: np.ndarray, log_r2: np.ndarray, w: np.ndarray | None
) -> tuple[float, np.ndarray]:
    """Mean Gaussian NLL and its gradient in the centred coordinates ``theta = (w, c)``.

    ``lc`` is the centred log variance ``l - lbar``, ``log_r2`` the log squared
    residual (``-inf`` for a zero residual), ``w`` the row weights or None.
    """
    slope, c = float(theta[0]), float(theta[1])
    t = slope * lc + c
    e = np.exp(np.minimum(log_r2 - t, _MAX_EXP))  # r**2 exp(-t)
    per = 0.5 * (_LOG_2PI + t + e)
    g = 0.5 * (1.0 - e)
    if w is None:
        n = float(lc.shape[0])
        return float(per.sum() / n), np.array([float(g @ lc) / n, float(g.sum()) / n])
    total = float(w.sum())
    wg = w * g
    return float(w @ per) / total, np.array([float(wg @ lc) / total, float(wg.sum()) / total])


@register_regression
class VariancePlattScaling(_GaussianOutput):
    """Platt scaling of the log variance, ``log sigma'**2 = w log sigma**2 + b``.

    The recalibration of the variance output used by Gruber & Buettner 2022
    (App. G.5): an affine map with real ``w`` and ``b``, fitted on the
    calibration split by L-BFGS on the Gaussian NLL, which has the same
    minimiser as their Dawid-Sebastiani score (``DSS = 2 NLL - log(2 pi)``);
    objective, gradient and parametrisation in the module docstring. The
    means are unchanged.

    Parameters
    ----------
    tol : float, default 1e-10
        L-BFGS-B stops when every component of the projected gradient of the
        mean NLL (nats per unit of ``w`` or ``b``) is below ``tol``.
    max_iter : int, default 200
        Largest number of L-BFGS-B iterations.

    Attributes
    ----------
    weight_ : float
        The fitted slope ``w`` (dimensionless; 1 keeps the spread of the log
        variances, 0.5 takes the square root of the variances).
    bias_ : float
        The fitted intercept ``b`` (log squared target units; ``exp(b)`` is
        the factor at ``sigma**2 = 1``).
    n_iter_ : int
        L-BFGS-B iterations.
    converged_ : bool
        Whether L-BFGS-B reported success.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration import VariancePlattScaling
    >>> rng = np.random.default_rng(0)
    >>> mu, var = rng.normal(size=20000), rng.uniform(0.1, 10.0, 20000)
    >>> y = mu + np.sqrt(3.0 * np.sqrt(var)) * rng.normal(size=20000)   # true variance 3 sigma
    >>> rc = VariancePlattScaling().fit(mu, variance=var, targets=y)
    >>> round(rc.weight_, 2), round(float(np.exp(rc.bias_)), 2)
    (0.51, 2.94)
    >>> rc.injective
    True
    """

    schema = Schema(
        params={"tol": POSITIVE, "max_iter": MAX_ITER},
        state={"weight_": Real(), "bias_": Real(), **ITERATIONS},
    )

    def __init__(self, tol: float = 1e-10, max_iter: int = 200) -> None:
        self.tol = tol
        self.max_iter = max_iter

    @property
    def injective(self) -> bool:
        """True unless the fitted slope ``w`` is 0 (then every row gets one variance).

        Before ``fit``: True (the map is injective for every ``w != 0``).
        """
        w = getattr(self, "weight_", None)
        return w is None or w != 0.0

    def _fit(self, G: GaussianPredictions) -> None:
        from scipy.optimize import minimize

        r = G.targets - G.mean
        w = G.sample_weight
        ell = np.log(G.variance)
        lbar = G.weighted_mean(ell)
        lc = ell - lbar
        with np.errstate(divide="ignore", over="ignore"):
            r2 = r * r
            log_r2 = np.log(r2)
            s0 = G.weighted_mean(r2 / G.variance)
        if not s0 > 0:
            raise CalibrationInputError(
                "VariancePlattScaling.fit: every target (with a positive weight) equals its "
                "predicted mean, so the NLL has no minimum (it falls without bound as b -> -inf)"
            )
        if not math.isfinite(s0):
            raise CalibrationInputError(
                "VariancePlattScaling.fit: the squared standardised residuals overflow float64"
            )
        res = minimize(
            _nll_and_grad,
            np.array([1.0, lbar + math.log(s0)]),
            args=(lc, log_r2, w),
            jac=True,
            method="L-BFGS-B",
            options={"gtol": self.tol, "ftol": 0.0, "maxiter": self.max_iter},
        )
        slope, c = float(res.x[0]), float(res.x[1])
        grad = np.abs(np.asarray(res.jac, dtype=np.float64))
        # L-BFGS-B may stop on an abnormal line search where no float step lowers L:
        # at a gradient near the rounding floor that is convergence.
        converged = bool(res.success) or bool(np.all(grad <= max(self.tol, 1e-8)))
        self.weight_ = slope
        self.bias_ = float(c - slope * lbar)
        self.n_iter_ = int(res.nit)
        self.converged_ = converged
        if not converged:
            warnings.warn(
                f"VariancePlattScaling did not converge in {self.max_iter} iterations "
                f"({res.message}); increase max_iter",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        if slope == 0.0:
            warnings.warn(
                "VariancePlattScaling: the fitted slope w is 0, so the map is not injective "
                "(every row gets the same variance)",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _variance(self, var: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore"):
            return np.exp(self.weight_ * np.log(var) + self.bias_)
