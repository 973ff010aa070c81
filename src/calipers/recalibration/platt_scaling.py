"""Platt scaling: ``sigmoid(a z + b)`` on the logit of class 1 (Platt 1999).

Platt (1999), "Probabilistic outputs for support vector machines and
comparisons to regularized likelihood methods": a logistic regression of the
label on one score. Here the score is the logit ``z`` of class 1, as Guo et
al. (2017) use it for neural networks (scikit-learn's
``CalibratedClassifierCV(method="sigmoid")`` fits it on the classifier's
decision function, or on the probabilities of a classifier without one).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..validation import CalibrationInputError
from ._optimize import _check_positive, _lbfgs
from ._params import user_stacklevel
from ._schema import ITERATIONS, MAX_ITER, POSITIVE, Flag, Integer, Real, Schema
from .base import Recalibrator, register

__all__ = ["PlattScaling"]


def _binary_logit(S: np.ndarray, owner: str) -> np.ndarray:
    """The logit of class 1: ``z`` itself, or ``z_1 - z_0`` for two-column logits."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 1:
        return S
    if S.shape[1] != 2:
        raise CalibrationInputError(
            f"{owner} is a binary method: it needs (n,) scores of class 1 or (n, 2) scores; "
            f"got {S.shape[1]} classes. Only binary classification is supported: for k > 2 "
            "use TemperatureScaling, VectorScaling or MatrixScaling"
        )
    return S[:, 1] - S[:, 0]


@register
class PlattScaling(Recalibrator):
    """Platt scaling, ``P(y = 1) = sigmoid(a z + b)`` (Platt 1999).

    ``z`` is the logit of class 1: binary scores ``(n,)`` are that logit;
    two-column scores ``(n, 2)`` give ``z = z_1 - z_0`` (then
    ``softmax(z_0, z_1)_1 = sigmoid(z)``, and the output has two columns,
    ``[1 - q, q]``); probabilities ``p`` enter as ``log(p / (1 - p))``. More than
    two classes are refused (use temperature, vector or matrix scaling).

    ``(a, b)`` minimise the weighted mean cross-entropy
    ``mean_i w_i [log(1 + exp(s_i)) - t_i s_i]``, ``s_i = a z_i + b``, with
    gradient ``mean_i w_i (sigmoid(s_i) - t_i) (z_i, 1)``, by L-BFGS-B from
    ``a = 1, b = 0`` (the identity). By default (``smooth_targets=True``) the
    targets ``t_i`` are Platt's (1999, §2.2) out-of-sample targets
    ``(N+ + 1) / (N+ + 2)`` for positives and ``1 / (N- + 2)`` for negatives,
    ``N+-`` the numbers (with sample weights: the weight totals) of positives
    and negatives, as in Platt (1999) and scikit-learn's
    ``CalibratedClassifierCV(method="sigmoid")``: the fit is then always
    finite, and never gives a probability of exactly 0 or 1. With
    ``smooth_targets=False`` the targets are the labels themselves (the
    maximum-likelihood logistic regression of the label on ``z``); a
    calibration set that the logit separates then has no finite optimum: a
    warning says so (a grows until the optimiser stops) and held-out
    predictions can be 0 or 1 on the wrong side (an infinite NLL). Files
    written by earlier versions store ``smooth_targets`` and load with the
    value they were written with.

    Declared properties, from the fitted state (False before fitting):

    * ``accuracy_preserving``: iff ``a > 0`` and ``b = 0`` (the decision
      ``q > 1/2`` is then ``z > 0``); a fitted b is almost never exactly 0.
    * ``injective``: iff ``a != 0`` (``z -> sigmoid(a z + b)`` is then strictly
      monotone).

    Parameters
    ----------
    smooth_targets : bool, default True
        Platt's (1999) smoothed targets (True) or the 0/1 labels (False, the
        unsmoothed maximum-likelihood fit; the default of earlier versions).
    tol : float, default 1e-10
        L-BFGS-B ``gtol``.
    max_iter : int, default 1000

    Attributes
    ----------
    a_, b_ : float
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.platt_scaling import PlattScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=100000) * 3
    >>> y = (rng.random(100000) < 1 / (1 + np.exp(-(0.5 * z - 1)))).astype(int)
    >>> ps = PlattScaling().fit(z, y)                            # true a = 0.5, b = -1
    >>> round(ps.a_, 1), round(ps.b_, 1)
    (0.5, -1.0)
    >>> sep = PlattScaling().fit(np.array([-2.0, -1.0, 1.0, 2.0]), [0, 0, 1, 1])
    >>> bool(0 < sep.predict_proba(np.array([-9.0]))[0] < 0.5)   # separable: still finite
    True
    >>> ps.accuracy_preserving, ps.injective
    (False, True)
    """

    input = "logits"
    _binary_only = True
    schema = Schema(
        params={"smooth_targets": Flag(), "tol": POSITIVE, "max_iter": MAX_ITER},
        state={"n_classes_": Integer(lo=2, hi=2), "a_": Real(), "b_": Real(), **ITERATIONS},
    )

    def __init__(
        self, smooth_targets: bool = True, tol: float = 1e-10, max_iter: int = 1000
    ) -> None:
        self.smooth_targets = smooth_targets
        self.tol = tol
        self.max_iter = max_iter

    @property
    def accuracy_preserving(self) -> bool:
        """True iff the fitted ``a > 0`` and ``b == 0``."""
        if not hasattr(self, "a_"):
            return False
        return bool(self.a_ > 0 and self.b_ == 0)

    @property
    def injective(self) -> bool:
        """True iff the fitted ``a != 0``."""
        if not hasattr(self, "a_"):
            return False
        return bool(self.a_ != 0)

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        from scipy.special import expit

        _check_positive("tol", self.tol, "PlattScaling")
        z = _binary_logit(S, "PlattScaling")
        n = z.shape[0]
        rw = np.full(n, 1.0 / n) if w is None else w / float(w.sum())
        t = y.astype(np.float64)
        if self.smooth_targets:
            pos = float(np.sum(t)) if w is None else float(w @ t)
            neg = float(n - np.sum(t)) if w is None else float(w @ (1.0 - t))
            t = np.where(y == 1, (pos + 1.0) / (pos + 2.0), 1.0 / (neg + 2.0))

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            s = x[0] * z + x[1]
            loss = float(rw @ (np.logaddexp(0.0, s) - t * s))
            r = rw * (expit(s) - t)
            return loss, np.array([float(r @ z), float(r.sum())])

        x, self.n_iter_, self.converged_ = _lbfgs(
            fun,
            np.array([1.0, 0.0]),
            None,
            tol=self.tol,
            max_iter=self.max_iter,
            name="PlattScaling",
        )
        self.a_, self.b_ = float(x[0]), float(x[1])
        s = self.a_ * z + self.b_
        sign = np.where(y == 1, 1.0, -1.0)
        keep = rw > 0
        if not self.smooth_targets and np.all(sign[keep] * s[keep] > 0):
            warnings.warn(
                "PlattScaling: the calibration set is separated by the logit, so the "
                f"likelihood has no finite maximiser; the fit stopped at a = {self.a_:.6g}, "
                f"b = {self.b_:.6g} (use smooth_targets=True for a finite fit)",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        z = _binary_logit(S, "PlattScaling")
        s = self.a_ * z + self.b_
        if S.ndim == 1:
            return expit(s)
        return np.stack([expit(-s), expit(s)], axis=1)
