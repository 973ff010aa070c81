"""Beta calibration (Kull, Silva Filho and Flach 2017) for binary problems.

Kull, Silva Filho and Flach (2017), "Beta calibration: a well-founded and
easily implemented improvement on logistic calibration for binary
classifiers" (AISTATS): the three-parameter map

    logit(q) = a log p - b log(1 - p) + c,          a, b >= 0,

fitted as a logistic regression of the label on the two features
``log p`` and ``-log(1 - p)``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..validation import CalibrationInputError
from ._optimize import _check_positive, _lbfgs
from ._params import user_stacklevel
from ._schema import ITERATIONS, MAX_ITER, NON_NEGATIVE, POSITIVE, Integer, Real, Schema
from .base import Recalibrator, register

__all__ = ["BetaCalibration"]


def _binary_probs(S: np.ndarray) -> np.ndarray:
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 2:
        if S.shape[1] != 2:
            raise CalibrationInputError(
                "BetaCalibration is a binary method: it needs (n,) probabilities of class 1 or "
                f"(n, 2) probabilities; got {S.shape[1]} classes. Only binary classification "
                "is supported: for k > 2, Dirichlet calibration is MatrixScaling fitted on the "
                "probabilities"
            )
        S = S[:, 1]
    bad = (S <= 0) | (S >= 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            "BetaCalibration needs probabilities strictly between 0 and 1 (it uses log p and "
            f"log(1 - p)); entry {i} is {S[i]!r}. Clip them yourself if that is what you want"
        )
    return S


@register
class BetaCalibration(Recalibrator):
    """Beta calibration, ``logit(q) = a log p - b log(1 - p) + c`` (Kull et al. 2017).

    Natural input: the probability ``p`` of class 1, ``(n,)`` (or ``(n, 2)``
    probabilities, using the second column and returning two columns;
    logits are turned into probabilities first). Probabilities of exactly 0
    or 1 are refused (``log 0``). More than two classes are refused.

    The fit (Kull et al. 2017) is a logistic regression of the label on
    ``(log p, -log(1 - p))`` with an intercept, without penalty: the weighted
    mean cross-entropy is minimised by L-BFGS-B with its analytic gradient
    from ``a = b = 1, c = 0`` (the identity map). The paper requires
    ``a, b >= 0`` (then q is non-decreasing in p) and enforces it by refitting:
    when the fitted ``a`` is negative it is fixed at 0 and the regression is
    refitted on ``-log(1 - p)`` alone; otherwise, when ``b`` is negative, b is
    fixed at 0 and the regression refitted on ``log p`` alone. Should the
    remaining coefficient again come out negative, it is fixed at 0 too and
    only ``c`` is fitted (a constant map).

    Declared properties:

    * ``accuracy_preserving``: False. The decision ``q > 1/2`` is ``p > 1/2``
      only when ``c = (a - b) log 2`` exactly.
    * ``injective`` (from the fitted state; False before fitting): iff
      ``a + b > 0``; then ``a log p - b log(1 - p)`` is strictly increasing in p.

    Parameters
    ----------
    tol : float, default 1e-10
        L-BFGS-B ``gtol``.
    max_iter : int, default 1000

    Attributes
    ----------
    a_, b_, c_ : float
    n_iter_ : int
        L-BFGS-B iterations of all fits.
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.beta_calibration import BetaCalibration
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, size=100000)
    >>> s = 2.0 * np.log(p) - 0.5 * np.log(1 - p) + 0.3     # the true map, a=2, b=0.5
    >>> y = (rng.random(100000) < 1 / (1 + np.exp(-s))).astype(int)
    >>> bc = BetaCalibration().fit(p, y)
    >>> round(bc.a_, 1), round(bc.b_, 1), round(bc.c_, 1)
    (2.0, 0.5, 0.3)
    >>> bc.injective
    True
    """

    input = "probs"
    _binary_only = True
    _accuracy_preserving = False
    schema = Schema(
        params={"tol": POSITIVE, "max_iter": MAX_ITER},
        state={
            "n_classes_": Integer(lo=2, hi=2),
            "a_": NON_NEGATIVE,  # a, b >= 0: the map is non-decreasing in p
            "b_": NON_NEGATIVE,
            "c_": Real(),
            **ITERATIONS,
        },
    )

    def __init__(self, tol: float = 1e-10, max_iter: int = 1000) -> None:
        self.tol = tol
        self.max_iter = max_iter

    @property
    def injective(self) -> bool:
        """True iff the fitted ``a + b > 0``."""
        if not hasattr(self, "a_"):
            return False
        return bool(self.a_ + self.b_ > 0)

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        _check_positive("tol", self.tol, "BetaCalibration")
        p = _binary_probs(S)
        n = p.shape[0]
        rw = np.full(n, 1.0 / n) if w is None else w / float(w.sum())
        t = y.astype(np.float64)
        X = np.stack([np.log(p), -np.log1p(-p), np.ones(n)], axis=1)
        iters = 0
        ok = True

        def fit(cols: list[int], x0: np.ndarray) -> np.ndarray:
            nonlocal iters, ok
            from scipy.special import expit

            Xc = X[:, cols]

            def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
                s = Xc @ x
                loss = float(rw @ (np.logaddexp(0.0, s) - t * s))
                return loss, Xc.T @ (rw * (expit(s) - t))

            x, it, conv = _lbfgs(
                fun, x0, None, tol=self.tol, max_iter=self.max_iter, name="BetaCalibration"
            )
            iters += it
            ok = ok and conv
            return x

        a, b, c = fit([0, 1, 2], np.array([1.0, 1.0, 0.0]))
        if a < 0:
            a = 0.0
            b, c = fit([1, 2], np.array([1.0, 0.0]))
        elif b < 0:
            b = 0.0
            a, c = fit([0, 2], np.array([1.0, 0.0]))
        if a < 0 or b < 0:
            a, b = max(a, 0.0), max(b, 0.0)
            (c,) = fit([2], np.array([0.0]))
        self.a_, self.b_, self.c_ = float(a), float(b), float(c)
        self.n_iter_ = iters
        self.converged_ = ok
        s = X @ np.array([self.a_, self.b_, self.c_])
        keep = rw > 0
        if np.all(np.where(y == 1, 1.0, -1.0)[keep] * s[keep] > 0):
            warnings.warn(
                "BetaCalibration: the calibration set is separated by the fitted map, so the "
                "likelihood has no finite maximiser; the parameters are where the optimiser "
                "stopped",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        p = _binary_probs(S)
        s = self.a_ * np.log(p) - self.b_ * np.log1p(-p) + self.c_
        if np.asarray(S).ndim == 1:
            return expit(s)
        return np.stack([expit(-s), expit(s)], axis=1)
