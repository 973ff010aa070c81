"""Temperature scaling (Guo et al. 2017): ``softmax(z / T)`` with one fitted T > 0.

Fitted by minimising the (weighted) NLL on a calibration split. With
``beta = 1 / T`` the NLL ``mean_i [LSE(beta z_i) - beta z_{i y_i}]`` is convex in
``beta`` with derivatives

    f'(beta)  = mean_i (E_{p_i}[z_i] - z_{i y_i}),
    f''(beta) = mean_i Var_{p_i}[z_i],          p_i = softmax(beta z_i),

so a safeguarded Newton iteration (bisection in ``log beta`` whenever a step
leaves the bracket) converges in a handful of passes over the logits; each
pass reads the logits once, in blocks. The search is bounded to
``T in [t_min, t_max]``; when the optimum lies at a bound (e.g. a separable
calibration set drives T to 0) a warning says so. With ``loss="brier"`` the
Brier score is minimised over ``log T`` by a bounded Brent search instead
(seed 003 and seed 000 offer this option; conventions.md §10).

References: Guo et al. (2017), "On calibration of modern neural networks";
conventions.md §10 lists how each seed fits T (LBFGS, BFGS, grids), all
minimising the same convex objective.
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from .base import Recalibrator, register

__all__ = ["TemperatureScaling"]

_ROWS = 1 << 14


def _as_multiclass(S: np.ndarray) -> np.ndarray:
    """Binary logit z becomes the two-class logits [0, z] (softmax = sigmoid)."""
    if S.ndim == 1:
        return np.stack([np.zeros_like(S), S], axis=1)
    return S


def _nll_derivatives(
    Z: np.ndarray, y: np.ndarray, w: np.ndarray | None, beta: float
) -> tuple[float, float, float]:
    """Weighted mean NLL of softmax(beta Z) and its first two derivatives in beta."""
    n = Z.shape[0]
    wt = np.ones(n) if w is None else w
    W = float(wt.sum())
    f = g = h = 0.0
    rows = np.arange(n)
    for i in range(0, n, _ROWS):
        z = Z[i : i + _ROWS]
        zy = z[rows[: len(z)], y[i : i + _ROWS]]
        zmax = z.max(axis=1)
        e = np.exp(beta * (z - zmax[:, None]))
        s0 = e.sum(axis=1)
        s1 = np.einsum("ij,ij->i", e, z)
        s2 = np.einsum("ij,ij->i", e, z * z)
        mean = s1 / s0
        var = np.maximum(s2 / s0 - mean * mean, 0.0)
        lse = beta * zmax + np.log(s0)
        wi = wt[i : i + _ROWS]
        f += float(wi @ (lse - beta * zy))
        g += float(wi @ (mean - zy))
        h += float(wi @ var)
    return f / W, g / W, h / W


@register
class TemperatureScaling(Recalibrator):
    """Temperature scaling, ``softmax(z / T)`` (Guo et al. 2017).

    Accuracy-preserving and injective (for T > 0, ``z -> z / T`` is a
    bijection of logits, and ``softmax`` is injective up to the per-row
    constant it ignores). Natural input: logits (probabilities are turned into
    ``log p``, which gives the same result).

    Parameters
    ----------
    loss : {"nll", "brier"}, default "nll"
        The objective minimised on the calibration split.
    t_min, t_max : float, default 0.01 and 100
        Bounds of the search for T.
    tol : float, default 1e-10
        Relative tolerance on ``1 / T``.
    max_iter : int, default 100

    Attributes
    ----------
    temperature_ : float
        The fitted T.
    n_iter_ : int
        Newton / Brent iterations used.
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 3)) * 2
    >>> p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    >>> y = (rng.random(2000)[:, None] > p.cumsum(1)).sum(1)     # labels from softmax(z)
    >>> ts = cp.TemperatureScaling().fit(3 * z, y)                # overconfident logits 3 z
    >>> round(ts.temperature_, 2)
    2.98
    >>> ts.accuracy_preserving, ts.injective
    (True, True)
    """

    input = "logits"
    _accuracy_preserving = True
    _injective = True

    def __init__(
        self,
        loss: Literal["nll", "brier"] = "nll",
        t_min: float = 0.01,
        t_max: float = 100.0,
        tol: float = 1e-10,
        max_iter: int = 100,
    ) -> None:
        self.loss = loss
        self.t_min = t_min
        self.t_max = t_max
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if self.loss not in ("nll", "brier"):
            raise CalibrationInputError(f"loss must be 'nll' or 'brier'; got {self.loss!r}")
        if not (0 < self.t_min < self.t_max < math.inf):
            raise CalibrationInputError(
                f"need 0 < t_min < t_max < inf; got t_min={self.t_min!r}, t_max={self.t_max!r}"
            )
        Z = _as_multiclass(S)
        if self.loss == "brier":
            self._fit_brier(Z, y, w)
        else:
            self._fit_nll(Z, y, w)

    def _fit_nll(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        lo, hi = 1.0 / self.t_max, 1.0 / self.t_min  # bracket on beta = 1 / T
        beta = min(max(1.0, lo), hi)
        converged = False
        it = 0
        reason = ""
        g_lo = _nll_derivatives(Z, y, w, lo)[1]
        if g_lo >= 0:  # f increasing already at the smallest beta: optimum T >= t_max
            beta, converged, reason = lo, True, f"at the upper bound T = t_max = {self.t_max:g}"
        else:
            g_hi = _nll_derivatives(Z, y, w, hi)[1]
            if g_hi <= 0:
                beta, converged, reason = (
                    hi,
                    True,
                    (
                        f"at the lower bound T = t_min = {self.t_min:g} (the calibration set is "
                        "separable or nearly so: the NLL keeps falling as T -> 0)"
                    ),
                )
            else:
                for it in range(1, self.max_iter + 1):  # noqa: B007
                    _, g, h = _nll_derivatives(Z, y, w, beta)
                    if g > 0:
                        hi = beta
                    else:
                        lo = beta
                    step = beta - g / h if h > 0 else math.nan
                    new = step if lo < step < hi else math.sqrt(lo * hi)
                    if abs(new - beta) <= self.tol * beta or g == 0:
                        beta, converged = new, True
                        break
                    beta = new
        self.temperature_ = float(1.0 / beta)
        self.n_iter_ = int(it)
        self.converged_ = bool(converged)
        if reason:
            warnings.warn(
                f"TemperatureScaling: the fitted temperature is {reason}",
                RuntimeWarning,
                stacklevel=3,
            )
        elif not converged:
            warnings.warn(
                f"TemperatureScaling did not converge in {self.max_iter} iterations "
                f"(T = {self.temperature_:.6g}); increase max_iter",
                RuntimeWarning,
                stacklevel=3,
            )

    def _fit_brier(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        from scipy.optimize import minimize_scalar

        onehot = np.zeros_like(Z)
        onehot[np.arange(len(y)), y] = 1.0

        def brier(log_t: float) -> float:
            p = _softmax_rows(Z / math.exp(log_t))
            per = ((p - onehot) ** 2).sum(1)
            return float(np.average(per, weights=w))

        res = minimize_scalar(
            brier,
            bounds=(math.log(self.t_min), math.log(self.t_max)),
            method="bounded",
            options={"xatol": 1e-8, "maxiter": self.max_iter},
        )
        self.temperature_ = float(math.exp(res.x))
        self.n_iter_ = int(res.nfev)
        self.converged_ = bool(res.success)
        edge = min(abs(res.x - math.log(self.t_min)), abs(res.x - math.log(self.t_max)))
        if not res.success:
            warnings.warn(
                f"TemperatureScaling (Brier) did not converge: {res.message}",
                RuntimeWarning,
                stacklevel=3,
            )
        elif edge < 1e-6:
            warnings.warn(
                f"TemperatureScaling: the fitted temperature {self.temperature_:.6g} is at a bound "
                f"of [{self.t_min:g}, {self.t_max:g}]",
                RuntimeWarning,
                stacklevel=3,
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        if S.ndim == 1:
            return 1.0 / (1.0 + np.exp(-S / self.temperature_))
        return _softmax_rows(S / self.temperature_)


def _softmax_rows(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
