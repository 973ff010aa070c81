"""Bias-corrected temperature scaling: ``softmax(z / T + b)`` (Alexandari et al. 2020).

Alexandari, Kundaje and Shrikumar (2020), "Maximum likelihood with
bias-corrected calibration is hard-to-beat at label shift adaptation" (ICML):
temperature scaling plus one bias per class, fitted by the mean NLL with
L-BFGS-B and the analytic gradient from ``T = 1, b = 0`` (their abstention
package's ``TempScaling(bias_positions='all')``; docs/how-calipers-computes.md §10).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..validation import CalibrationInputError
from ._optimize import _check_positive, _lbfgs, _softmax_nll
from ._params import user_stacklevel
from ._schema import (
    ITERATIONS,
    MAX_ITER,
    POSITIVE,
    Array,
    Flag,
    Schema,
    binary_has_two_classes,
    temperature_bounds,
    temperature_in_bounds,
)
from .base import Recalibrator, register
from .temperature_scaling import _as_multiclass

__all__ = ["BiasCorrectedTemperatureScaling"]


@register
class BiasCorrectedTemperatureScaling(Recalibrator):
    """Bias-corrected temperature scaling, ``softmax(z / T + b)`` (Alexandari et al. 2020).

    Parameters ``theta = (log T, b_1, ..., b_k)``, fitted by minimising the
    weighted mean NLL with L-BFGS-B and the analytic gradient

        d NLL / d log T = -mean_i sum_k (q_ik - [y_i = k]) z_ik / T,
        d NLL / d b_k   =  mean_i (q_ik - [y_i = k]),     q_i = softmax(z_i / T + b),

    from ``theta = 0`` (``T = 1, b = 0``: the reference's ``x0 = [1, 0, ..., 0]``),
    with ``T`` searched in ``[t_min, t_max]`` on the log scale (the reference
    bounds only ``T >= 0``) and ``b`` free. The bias is defined up to a constant
    (softmax ignores it); its gradient sums to 0, so the fitted ``b`` keeps
    ``sum b = 0``. Binary scores ``(n,)`` are read as the logits ``[0, z]``,
    giving ``sigmoid(z / T + b_1 - b_0)``.

    Declared properties:

    * ``accuracy_preserving``: from the fitted state (False before fitting):
      True only when all ``b_k`` are equal (then the map is temperature
      scaling); a bias reorders classes whose logits are close.
    * ``injective``: True. For ``T`` in ``(0, inf)``, two predictions collide iff
      ``(z - z') / T = c 1``, i.e. iff ``z`` and ``z'`` differ by a constant,
      i.e. iff ``softmax(z) = softmax(z')``: the map ``p -> q`` is a bijection of
      the open simplex (its inverse is ``softmax(T (log q - b))``), the case of
      Gruber & Buettner (2022) Prop. 4.5. Unlike vector scaling it ignores the logits' row
      offsets.

    Parameters
    ----------
    t_min, t_max : float, default 0.01 and 100
        Bounds of the search for T (a warning says when T ends at one).
    tol : float, default 1e-8
        L-BFGS-B ``gtol`` on the projected gradient.
    max_iter : int, default 1000

    Attributes
    ----------
    temperature_ : float
    bias_ : ndarray of shape (k,)
    binary_ : bool
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.bias_corrected_temperature_scaling import (
    ...     BiasCorrectedTemperatureScaling)
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(4000, 3)) * 3
    >>> a = z / 2 + [0.4, 0.0, -0.4]                              # the true map
    >>> q = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    >>> y = (rng.random(4000)[:, None] > q.cumsum(1)).sum(1)
    >>> bcts = BiasCorrectedTemperatureScaling().fit(z, y)
    >>> round(bcts.temperature_, 1), np.round(bcts.bias_, 1)
    (2.0, array([ 0.4,  0. , -0.4]))
    >>> bcts.accuracy_preserving, bcts.injective
    (False, True)
    """

    input = "logits"
    _injective = True
    schema = Schema(
        params={"t_min": POSITIVE, "t_max": POSITIVE, "tol": POSITIVE, "max_iter": MAX_ITER},
        state={
            "temperature_": POSITIVE,
            "bias_": Array(("n_classes_",)),
            "binary_": Flag(),
            **ITERATIONS,
        },
        param_checks=(temperature_bounds,),
        state_checks=(binary_has_two_classes, temperature_in_bounds),
    )

    def __init__(
        self,
        t_min: float = 0.01,
        t_max: float = 100.0,
        tol: float = 1e-8,
        max_iter: int = 1000,
    ) -> None:
        self.t_min = t_min
        self.t_max = t_max
        self.tol = tol
        self.max_iter = max_iter

    @property
    def accuracy_preserving(self) -> bool:
        """True iff all fitted biases are equal (then this is temperature scaling)."""
        if not hasattr(self, "bias_"):
            return False
        b = np.asarray(self.bias_)
        return bool(np.all(b == b[0]))

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        _check_positive("tol", self.tol, "BiasCorrectedTemperatureScaling")
        if not (0 < self.t_min < self.t_max < math.inf):
            raise CalibrationInputError(
                "BiasCorrectedTemperatureScaling: need 0 < t_min < t_max < inf; got "
                f"t_min={self.t_min!r}, t_max={self.t_max!r}"
            )
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        self.binary_ = S.ndim == 1
        k = Z.shape[1]

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            inv_t = math.exp(-x[0])
            loss, G = _softmax_nll(Z * inv_t + x[1:], y, w)
            g_logt = -inv_t * float(np.einsum("ij,ij->", G, Z))
            return loss, np.concatenate([[g_logt], G.sum(axis=0)])

        lo, hi = math.log(self.t_min), math.log(self.t_max)
        bounds: list[tuple[float | None, float | None]] = [(lo, hi)] + [(None, None)] * k
        x0 = np.zeros(k + 1)
        x, self.n_iter_, self.converged_ = _lbfgs(
            fun,
            x0,
            bounds,
            tol=self.tol,
            max_iter=self.max_iter,
            name="BiasCorrectedTemperatureScaling",
        )
        self.temperature_ = float(math.exp(x[0]))
        self.bias_ = x[1:].copy()
        if x[0] <= lo or x[0] >= hi:
            warnings.warn(
                f"BiasCorrectedTemperatureScaling: the fitted temperature {self.temperature_:.6g} "
                f"is at a bound of [{self.t_min:g}, {self.t_max:g}]",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        A = Z / self.temperature_ + self.bias_
        if S.ndim == 1:
            from scipy.special import expit

            return expit(A[:, 1] - A[:, 0])
        A -= A.max(axis=1, keepdims=True)
        E = np.exp(A)
        return E / E.sum(axis=1, keepdims=True)
