"""Ensemble temperature scaling (Zhang, Kailkhura and Han 2020, "Mix-n-Match").

``q = w0 softmax(z / t) + w1 softmax(z) + w2 / K``: a temperature-scaled
prediction, the original one and the uniform distribution, mixed with weights
on the probability simplex. Fitted as in the authors' code (docs/how-calipers-computes.md
§10, Mix-n-Match ``ets_calibrate``): first t by the mean squared error, then
the weights by the same mean squared error.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._inputs import _softmax
from ._optimize import _check_positive, _lbfgs
from ._params import user_stacklevel
from ._schema import ITERATIONS, MAX_ITER, Array, Real, Schema
from .base import Recalibrator, register
from .temperature_scaling import _as_multiclass

__all__ = ["EnsembleTemperatureScaling"]

_T_BOUNDS = (0.05, 5.0)
_TOL = 1e-12


@register
class EnsembleTemperatureScaling(Recalibrator):
    """Ensemble temperature scaling (Zhang et al. 2020), Gruber & Buettner's (2022) ETS.

    Output ``q_i = w0 softmax(z_i / t) + w1 softmax(z_i) + w2 / K``. The fit
    follows the reference code exactly (docs/how-calipers-computes.md §10):

    1. ``t`` minimises the mean squared error over all ``n K`` entries,
       ``mean_{i,k} (softmax(z_i / t)_k - [y_i = k])^2`` (the reference fits t by
       MSE even when asked for cross-entropy), by L-BFGS-B from ``t = 1`` with
       bounds ``(0.05, 5)`` and tolerance 1e-12; calipers supplies the analytic
       gradient ``d softmax_k / d t = -softmax_k (z_k - E[z]) / t^2``.
    2. ``w`` minimises the same mean squared error of the mixture, a quadratic
       ``w^T A w - 2 c^T w + 1/K`` in w, by SLSQP subject to ``sum w = 1`` and
       ``w in [0, 1]^3`` from ``w = (1, 0, 0)`` with tolerance 1e-12. SLSQP's
       answer may violate the constraints by rounding (e.g. -1e-17); it is
       clipped to [0, 1] and divided by its sum, so the output is a convex
       combination exactly.

    Sample weights weight the rows of both means. Binary scores ``(n,)`` are
    read as the logits ``[0, z]`` (K = 2).

    Declared properties, from the fitted state (False before fitting):

    * ``accuracy_preserving``: True iff ``w0 + w1 > 0``. ``softmax(z / t)`` and
      ``softmax(z)`` are both strictly increasing in the rank of ``z_k`` within a
      row (``z_i > z_j`` gives a strictly larger entry in both, ``z_i = z_j``
      equal entries), so the mixture has exactly the arg-max set of ``z``,
      ties included, and the lowest-index rule picks the same class. With
      ``w0 = w1 = 0`` the output is uniform (a constant map).
    * ``injective``: True iff ``w0 + w1 > 0``. In logit space
      ``q - w2 / K`` is the gradient of ``Phi(x) = w0 t LSE(x / t) + w1 LSE(x)``,
      strictly convex on the logits modulo constants when ``w0 + w1 > 0``; the
      gradient of a strictly convex function is one-to-one, so ``p -> q`` is
      one-to-one on the open simplex (Gruber & Buettner (2022) Prop. 4.5 counts ETS among the
      injective methods). Floating-point rounding can of course merge outputs
      that differ by less than the precision.

    Parameters
    ----------
    max_iter : int, default 1000
        Iteration limit of each optimiser.

    Attributes
    ----------
    temperature_ : float
        The fitted t.
    weights_ : ndarray of shape (3,)
        ``(w0, w1, w2)``.
    n_iter_ : int
        L-BFGS-B iterations for t plus SLSQP iterations for w.
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.ensemble_temperature_scaling import (
    ...     EnsembleTemperatureScaling)
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(20000, 4)) * 3
    >>> q = np.exp(z / 2) / np.exp(z / 2).sum(1, keepdims=True)   # labels from T = 2
    >>> y = (rng.random(20000)[:, None] > q.cumsum(1)).sum(1)
    >>> ets = EnsembleTemperatureScaling().fit(z, y)
    >>> round(ets.temperature_, 1), np.round(ets.weights_, 1) + 0.0
    (2.0, array([1., 0., 0.]))
    >>> ets.accuracy_preserving, ets.injective
    (True, True)
    """

    input = "logits"
    schema = Schema(
        params={"max_iter": MAX_ITER},
        state={
            "temperature_": Real(lo=_T_BOUNDS[0], hi=_T_BOUNDS[1]),  # the fit's bounds
            "weights_": Array((3,), lo=0.0, hi=1.0, simplex=True),
            **ITERATIONS,
        },
    )

    def __init__(self, max_iter: int = 1000) -> None:
        self.max_iter = max_iter

    def _mixing(self) -> bool:
        if not hasattr(self, "weights_"):
            return False
        w = np.asarray(self.weights_)
        return bool(w[0] + w[1] > 0)

    @property
    def accuracy_preserving(self) -> bool:
        """True iff the fitted ``w0 + w1 > 0`` (see the class docstring)."""
        return self._mixing()

    @property
    def injective(self) -> bool:
        """True iff the fitted ``w0 + w1 > 0`` (see the class docstring)."""
        return self._mixing()

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        from scipy.optimize import minimize

        _check_positive("max_iter", self.max_iter, "EnsembleTemperatureScaling")
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        n, k = Z.shape
        rows = np.arange(n)
        rw = np.full(n, 1.0 / (n * k)) if w is None else w / (float(w.sum()) * k)

        block = max(1, (1 << 18) // max(k, 1))  # rows per block: temporaries stay in cache

        def mse_t(x: np.ndarray) -> tuple[float, np.ndarray]:
            t = float(x[0])
            loss = grad = 0.0
            for i in range(0, n, block):
                Zb = Z[i : i + block]
                P = _softmax(Zb / t)
                R = P.copy()
                R[rows[: len(Zb)], y[i : i + block]] -= 1.0  # P - onehot
                wb = rw[i : i + block]
                loss += float(wb @ np.einsum("ij,ij->i", R, R))
                mean_z = np.einsum("ij,ij->i", P, Zb)
                dP = -P * (Zb - mean_z[:, None]) / (t * t)
                grad += 2.0 * float(wb @ np.einsum("ij,ij->i", R, dP))
            return loss, np.array([grad])

        x, it_t, ok_t = _lbfgs(
            mse_t,
            np.array([1.0]),
            [_T_BOUNDS],
            tol=_TOL,
            ftol=_TOL,
            accept=1e-8,
            max_iter=self.max_iter,
            name="EnsembleTemperatureScaling (temperature)",
        )
        t = float(x[0])
        if t <= _T_BOUNDS[0] or t >= _T_BOUNDS[1]:
            warnings.warn(
                f"EnsembleTemperatureScaling: the fitted temperature {t:.6g} is at a bound of "
                f"{_T_BOUNDS}",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        # the mixture's MSE is the quadratic w^T A w - 2 c^T w + 1/K
        comps = [_softmax(Z / t), _softmax(Z)]
        A = np.empty((3, 3))
        c = np.empty(3)
        for a in range(2):
            for b in range(a, 2):
                A[a, b] = A[b, a] = float(rw @ np.einsum("ij,ij->i", comps[a], comps[b]))
            A[a, 2] = A[2, a] = float(rw.sum()) / k  # <P_a, 1/K>: rows of P sum to 1
            c[a] = float(rw @ comps[a][rows, y])
        A[2, 2] = float(rw.sum()) / k
        c[2] = float(rw.sum()) / k

        res = minimize(
            lambda v: (float(v @ A @ v - 2.0 * c @ v), 2.0 * (A @ v) - 2.0 * c),
            np.array([1.0, 0.0, 0.0]),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * 3,
            constraints=[
                {"type": "eq", "fun": lambda v: v.sum() - 1.0, "jac": lambda v: np.ones(3)}
            ],
            tol=_TOL,
            options={"maxiter": int(self.max_iter)},
        )
        if not res.success:
            warnings.warn(
                f"EnsembleTemperatureScaling: SLSQP did not converge for the weights: "
                f"{res.message}",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        # SLSQP may return -1e-17 or a sum of 1 - 1e-16: put the weights on the simplex
        wts = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, 1.0)
        self.temperature_ = t
        self.weights_ = wts / wts.sum()
        self.n_iter_ = int(it_t) + int(res.nit)
        self.converged_ = bool(ok_t and res.success)

    def _transform(self, S: np.ndarray) -> np.ndarray:
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        k = Z.shape[1]
        w0, w1, w2 = (float(v) for v in self.weights_)
        Q = w0 * _softmax(Z / self.temperature_) + w1 * _softmax(Z) + w2 / k
        return Q[:, 1] if S.ndim == 1 else Q
