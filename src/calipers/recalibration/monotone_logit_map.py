"""A strictly increasing map applied to every logit: ``softmax(phi(z))``.

The "diagonal" intra order-preserving family of Rahimi et al. (2020),
"Intra order-preserving functions for calibration of multi-class neural
networks" (NeurIPS), their DIAG method: one scalar, strictly increasing
function applied to each logit of each row. Rahimi et al. parametrise phi by
an unconstrained monotonic neural network (docs/how-calipers-computes.md §10); calipers uses
a continuous piecewise-linear phi on a fixed grid of knots with positive
slopes, which keeps the fit a convex problem.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import CalibrationInputError
from ._optimize import _check_positive, _lbfgs, _softmax_nll
from ._schema import (
    ITERATIONS,
    MAX_ITER,
    NON_NEGATIVE,
    POSITIVE,
    Array,
    Integer,
    Schema,
    Values,
)
from .base import Recalibrator, register
from .temperature_scaling import _as_multiclass

__all__ = ["MonotoneLogitMap"]


def _basis(x: np.ndarray, knots: np.ndarray, j: int) -> np.ndarray:
    """The j-th ramp: phi(x) = sum_j slopes[j] * _basis(x, knots, j)."""
    m = len(knots) - 1
    lo = knots[j]
    if m == 1:
        return x - lo
    if j == 0:
        return np.minimum(x, knots[1]) - lo
    if j == m - 1:
        return np.maximum(x, lo) - lo
    return np.clip(x, lo, knots[j + 1]) - lo


def _phi(x: np.ndarray, knots: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for j in range(len(slopes)):
        out += slopes[j] * _basis(x, knots, j)
    return out


def _knots_span(v: Values) -> str | None:
    """The grid has positive width (phi is then strictly increasing for slopes > 0)."""
    k = v["knots_"]
    if k[-1] > k[0]:
        return None
    return f"field 'knots_' must span an interval of positive width; got [{k[0]!r}, {k[-1]!r}]"


def _slopes_at_least_min(v: Values) -> str | None:
    """Every slope respects the fit's bound ``min_slope``."""
    s = v["slopes_"]
    if np.all(s >= v["min_slope"]):
        return None
    j = int(np.argmin(s))
    return (
        f"field 'slopes_' must be >= parameter 'min_slope' ({v['min_slope']!r}); entry {j} is "
        f"{float(s[j])!r}"
    )


@register
class MonotoneLogitMap(Recalibrator):
    """One strictly increasing map applied to every logit, ``softmax(phi(z))``.

    Rahimi et al. (2020)'s DIAG family. ``phi`` is continuous and piecewise
    linear on ``n_knots`` equally spaced knots ``t_0 < ... < t_m`` spanning the
    calibration logits (those of rows with positive weight; ``m = n_knots - 1`` segments; beyond the outer knots
    it continues with the outer slopes), ``phi(t_0) = 0``, with slope
    ``s_j >= min_slope > 0`` on segment j:

        phi(x) = sum_j s_j B_j(x),   B_j(x) = clip(x, t_j, t_{j+1}) - t_j

    (the first ramp unbounded below, the last unbounded above). The logits
    ``phi(z)`` are linear in ``s``, so the objective

        L(s) = NLL(s) + smoothness * sum_j (s_{j+1} - s_j)^2,

    NLL the weighted mean negative log-likelihood of ``softmax(phi(z))``, is
    convex in ``s``; it is minimised by L-BFGS-B with the analytic gradient
    (``d NLL / d s_j = sum_ik G_ik B_j(z_ik)``, ``G = (q - onehot) w / sum w``)
    from ``s = 1`` (the identity) under the bounds ``s_j >= min_slope``. The
    knots are fixed before the fit, so the result is the global optimum over
    this family. The penalty ties neighbouring slopes together (its limit is
    temperature scaling, a single slope): without it, the outer segments,
    which hold only a few extreme logits, take slopes of hundreds or
    thousands and predict probabilities of exactly 0 or 1. Its weight does
    not shrink with n. Binary scores ``(n,)`` are
    read as the logits ``[0, z]``: ``q = sigmoid(phi(z) - phi(0))``.

    Declared properties: both True (for every fit):

    * ``accuracy_preserving``: phi is strictly increasing, so it keeps the
      order of the logits in every row, ties included (equal logits give equal
      values, larger ones larger values); up to floating-point rounding of
      logits closer than the precision.
    * ``injective``: Gruber & Buettner's (2022) one-to-one map ``p -> q`` of the open simplex
      (reading ``z = log p``): two outputs agree iff
      ``phi(log p'_k) - phi(log p_k)`` is one constant c for all k; a strictly
      increasing phi then makes every ``log p'_k - log p_k`` share the sign of
      c, impossible for two distinct probability vectors unless ``c = 0``,
      which forces ``p' = p``. Applied to raw logits the output also depends
      on each row's offset (phi is not a translation), so the statement refers
      to one fixed representative such as ``log p``.

    Parameters
    ----------
    n_knots : int, default 8
        Knots of the grid (>= 2).
    smoothness : float, default 1e-2
        Weight of the penalty on squared differences of neighbouring slopes.
    min_slope : float, default 1e-3
        Lower bound of every slope (strict monotonicity).
    tol : float, default 1e-8
        L-BFGS-B ``gtol``.
    max_iter : int, default 1000

    Attributes
    ----------
    knots_ : ndarray of shape (n_knots,)
    slopes_ : ndarray of shape (n_knots - 1,)
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.monotone_logit_map import MonotoneLogitMap
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(4000, 3)) * 3
    >>> q = np.exp(z / 2) / np.exp(z / 2).sum(1, keepdims=True)   # labels from T = 2
    >>> y = (rng.random(4000)[:, None] > q.cumsum(1)).sum(1)
    >>> mlm = MonotoneLogitMap(n_knots=3).fit(z, y)
    >>> np.round(mlm.slopes_, 1)                                 # phi(x) ~ x / 2
    array([0.5, 0.5])
    >>> mlm.accuracy_preserving, mlm.injective
    (True, True)
    """

    input = "logits"
    _accuracy_preserving = True
    _injective = True
    schema = Schema(
        params={
            "n_knots": Integer(lo=2),
            "smoothness": NON_NEGATIVE,
            "min_slope": POSITIVE,
            "tol": POSITIVE,
            "max_iter": MAX_ITER,
        },
        state={
            "knots_": Array(("n_knots",), order="non-decreasing"),
            "slopes_": Array(lambda v: [(v["n_knots"] - 1,)], lo=0.0, lo_open=True),
            **ITERATIONS,
        },
        state_checks=(_knots_span, _slopes_at_least_min),
    )

    def __init__(
        self,
        n_knots: int = 8,
        smoothness: float = 1e-2,
        min_slope: float = 1e-3,
        tol: float = 1e-8,
        max_iter: int = 1000,
    ) -> None:
        self.n_knots = n_knots
        self.smoothness = smoothness
        self.min_slope = min_slope
        self.tol = tol
        self.max_iter = max_iter

    def _check(self) -> None:
        nk: Any = self.n_knots
        if not (isinstance(nk, (int, np.integer)) and not isinstance(nk, bool) and nk >= 2):
            raise CalibrationInputError(
                f"MonotoneLogitMap: n_knots must be an integer >= 2; got {nk!r}"
            )
        sm: Any = self.smoothness
        if not (isinstance(sm, (int, float, np.integer, np.floating)) and sm >= 0):
            raise CalibrationInputError(
                f"MonotoneLogitMap: smoothness must be a non-negative number; got {sm!r}"
            )
        _check_positive("min_slope", self.min_slope, "MonotoneLogitMap")
        _check_positive("tol", self.tol, "MonotoneLogitMap")

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        self._check()
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        used = Z if w is None else Z[w > 0]  # rows of weight 0 do not place knots
        lo, hi = float(used.min()), float(used.max())
        if hi - lo <= 0:  # constant logits: any unit-width grid
            lo, hi = lo - 0.5, hi + 0.5
        knots = np.linspace(lo, hi, int(self.n_knots))
        m = len(knots) - 1
        B = [_basis(Z, knots, j) for j in range(m)] if Z.size * m <= 1 << 24 else None

        def ramp(j: int) -> np.ndarray:
            return B[j] if B is not None else _basis(Z, knots, j)

        lam = float(self.smoothness)

        def fun(s: np.ndarray) -> tuple[float, np.ndarray]:
            A = np.zeros_like(Z)
            for j in range(m):
                A += s[j] * ramp(j)
            loss, G = _softmax_nll(A, y, w)
            grad = np.array([float(np.einsum("ij,ij->", G, ramp(j))) for j in range(m)])
            d = np.diff(s)
            loss += lam * float(d @ d)
            grad[:-1] -= 2.0 * lam * d
            grad[1:] += 2.0 * lam * d
            return loss, grad

        s, self.n_iter_, self.converged_ = _lbfgs(
            fun,
            np.ones(m),
            [(float(self.min_slope), None)] * m,
            tol=self.tol,
            max_iter=self.max_iter,
            name="MonotoneLogitMap",
        )
        self.knots_ = knots
        self.slopes_ = np.maximum(s, float(self.min_slope))

    def _transform(self, S: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        A = _phi(Z, np.asarray(self.knots_), np.asarray(self.slopes_))
        if S.ndim == 1:
            return expit(A[:, 1] - A[:, 0])
        A -= A.max(axis=1, keepdims=True)
        E = np.exp(A)
        return E / E.sum(axis=1, keepdims=True)
