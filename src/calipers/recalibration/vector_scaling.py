"""Vector scaling: ``softmax(w * z + b)`` with one weight and one bias per class.

Guo et al. (2017) §4.2 ("vector scaling", the diagonal special case of matrix
scaling); fitted here as in the abstention package of Alexandari et al. (2020)
(docs/how-calipers-computes.md §10): mean NLL, L-BFGS-B with the analytic gradient, start
``w = 1, b = 0`` (the identity map), bounds ``w >= 0``, ``b`` free. Without the
bias (``bias=False``) it is sharpcal's ``VectorScaler`` (Chidambaram & Ge (2024)).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from ._optimize import (
    MAX_SCALE,
    TEMPERATURE_LAMBDA,
    TEMPERATURE_MU,
    _check_positive,
    _lbfgs,
    _logit_spread,
    _n_eff,
    _softmax_nll,
)
from ._params import user_stacklevel
from ._schema import (
    ITERATIONS,
    MAX_ITER,
    NON_NEGATIVE,
    POSITIVE,
    Array,
    Flag,
    OneOf,
    Schema,
    Values,
    binary_has_two_classes,
)
from .base import Recalibrator, register
from .temperature_scaling import _as_multiclass

__all__ = ["VectorScaling"]


def _no_bias_is_zero(v: Values) -> str | None:
    """``bias=False`` fits no bias: ``bias_`` is all zeros."""
    if v["bias"] or not np.any(v["bias_"]):
        return None
    return "parameter 'bias' is false, but field 'bias_' is not all zeros"


# ----------------------------------------------------------------------------- the method


@register
class VectorScaling(Recalibrator):
    """Vector scaling, ``softmax(w * z + b)`` (Guo et al. 2017, §4.2).

    One weight ``w_k >= 0`` and (with ``bias=True``) one bias ``b_k`` per class,
    fitted by minimising the weighted mean NLL on the calibration split with
    L-BFGS-B and the analytic gradient

        d NLL / d w_k = mean_i (q_ik - [y_i = k]) z_ik,
        d NLL / d b_k = mean_i (q_ik - [y_i = k]),    q_i = softmax(w * z_i + b),

    from ``w = 1, b = 0`` (the identity), with bounds ``w >= 0`` as in the
    abstention package (Alexandari et al. 2020; docs/how-calipers-computes.md §10).

    By default (``reg="temperature"``) the objective has a penalty that pulls
    the map towards temperature scaling::

        L(w, b) = NLL(w, b) + lambda_ s^2 / n * (1 - 1/k) * sum_k (w_k - mean w)^2
                            + mu / n * sum_k (b_k - mean b)^2,

    ``NLL`` the mean over the ``n`` calibration rows (with ``sample_weight``:
    the weighted mean, and ``n`` the weight total: weights count as rows),
    ``s^2`` the mean variance of the logit columns on the calibration split
    (so that ``lambda_`` does not depend on the logits' units). Divided by
    ``n``, the penalty acts as a Gaussian prior of fixed strength on the summed
    log-likelihood: it matters on a small calibration split and fades as the
    split grows (the fit tends to maximum likelihood). The common
    scale of the weights (the inverse temperature) is not penalised, so a
    strong penalty gives temperature scaling, and a weak one vector scaling.
    The mean weight is kept below 100 (``+ max(0, mean w - 100)^2``), the bound
    of temperature scaling's ``t_min = 0.01``: a calibration split that the
    arg-max separates has no finite optimum otherwise.
    This follows the idea of Kull et al.'s (2019) off-diagonal and intercept
    regularisation (ODIR) of matrix scaling, shrinking what temperature scaling
    does not have (here: unequal weights, and the intercepts, with ODIR's
    intercept term). Unregularised vector scaling has no finite optimum when a
    class's logit separates the calibration split (digits with an SVC's
    decision values, 539 rows, 10 classes: weights up to 197, 1000 iterations,
    an infinite held-out NLL); the penalty makes the optimum finite and unique
    and the fit fast. ``reg="none"`` is the unregularised maximum-likelihood
    fit of Guo et al. (2017) (and of files written by earlier versions). The
    optimiser works in standardised coordinates (each logit column centred
    and scaled by its weighted mean and standard deviation on the calibration
    split; without bias only scaled), a change of variables that leaves the
    objective and its minimiser unchanged and makes L-BFGS converge in far
    fewer iterations. The bias is defined up to a constant (softmax ignores
    it) and is returned centred (``sum b = 0``). Binary scores
    ``(n,)`` (the logit z of class 1) are treated as the two logits ``[0, z]``,
    which gives ``sigmoid(w_1 z + b_1 - b_0)``, i.e. Platt scaling.

    Declared properties, from the fitted state (before fitting: the guarantee
    that holds for every fit, False for both):

    * ``accuracy_preserving``: True iff the map is temperature scaling, i.e.
      all ``w_k`` equal and positive and all ``b_k`` equal. Distinct positive
      weights can reorder classes (``z = (1, 0.9)``, ``w = (1, 2)``), and so
      can a bias. Binary ``(n,)`` input: iff ``w_1 > 0`` and ``b_1 = b_0``.
    * ``injective``: Gruber & Buettner's (2022) notion, a one-to-one map ``p -> q`` of the open
      simplex, the method reading ``z = log p`` (Gruber & Buettner (2022) Prop. 4.5). With
      ``D = log p - log p'``, outputs collide iff ``w * D = c 1``; since ``D``
      must change sign unless 0, this is impossible iff at most one ``w_k`` is
      0 and the others share one sign (with ``w >= 0``: at most one zero
      weight). Applied to raw logits the output also depends on each row's
      offset (``w * (z + c 1) != w * z + c' 1`` unless all ``w_k`` are equal),
      so the statement refers to one fixed representative such as ``log p``.
      Binary ``(n,)`` input (``z -> sigmoid(w_1 z + b_1 - b_0)``): iff ``w_1 != 0``.

    Parameters
    ----------
    bias : bool, default True
        Fit the per-class bias ``b`` (abstention's form) or keep ``b = 0``
        (sharpcal's ``VectorScaler``).
    tol : float, default 1e-8
        L-BFGS-B ``gtol`` on the projected gradient of the objective.
    max_iter : int, default 1000
    reg : {"temperature", "none"}, default "temperature"
        The penalty towards temperature scaling, or none (maximum likelihood).
    lambda_ : float, default 10
        Weight of the spread of the weights (unitless: relative to ``s^2``),
        in units of calibration rows (the prior weighs like that many rows).
    mu : float, default 10
        Weight of the squared centred intercepts (logit units; ignored with
        ``bias=False``). The defaults were chosen by
        ``benchmarks/study_recalibration_defaults.py`` (the recalibration
        guide's table).

    Attributes
    ----------
    weights_ : ndarray of shape (k,)
    bias_ : ndarray of shape (k,)
        Zeros when ``bias=False``.
    binary_ : bool
        Fitted on ``(n,)`` binary scores (read as the logits ``[0, z]``); such a
        fit reads ``(n, 2)`` scores as ``z = z_1 - z_0``.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.vector_scaling import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(20000, 3)) * 2
    >>> a = z * [0.5, 1.0, 2.0] + [0.3, 0.0, -0.3]                # the true map
    >>> q = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    >>> y = (rng.random(20000)[:, None] > q.cumsum(1)).sum(1)     # labels drawn from q
    >>> vs = VectorScaling(reg="none").fit(z, y)                  # maximum likelihood
    >>> np.round(vs.weights_, 1) + 0.0, np.round(vs.bias_, 1) + 0.0
    (array([0.5, 1. , 2. ]), array([ 0.3,  0. , -0.3]))
    >>> vs.accuracy_preserving, vs.injective
    (False, True)
    >>> reg = VectorScaling().fit(z, y)            # shrunk towards temperature scaling
    >>> bool(np.ptp(reg.weights_) < np.ptp(vs.weights_))
    True
    """

    input = "logits"
    schema = Schema(
        params={
            "bias": Flag(),
            "tol": POSITIVE,
            "max_iter": MAX_ITER,
            "reg": OneOf(("temperature", "none")),
            "lambda_": NON_NEGATIVE,
            "mu": NON_NEGATIVE,
        },
        state={
            # any sign: the fit keeps w >= 0, and the declared properties follow the state
            "weights_": Array(("n_classes_",)),
            "bias_": Array(("n_classes_",)),
            "binary_": Flag(),
            **ITERATIONS,
        },
        state_checks=(binary_has_two_classes, _no_bias_is_zero),
        # files written before the penalty existed hold unregularised fits
        legacy_params={"reg": "none", "lambda_": TEMPERATURE_LAMBDA, "mu": TEMPERATURE_MU},
    )

    def __init__(
        self,
        bias: bool = True,
        tol: float = 1e-8,
        max_iter: int = 1000,
        reg: Literal["temperature", "none"] = "temperature",
        lambda_: float = TEMPERATURE_LAMBDA,
        mu: float = TEMPERATURE_MU,
    ) -> None:
        self.bias = bias
        self.tol = tol
        self.max_iter = max_iter
        self.reg = reg
        self.lambda_ = lambda_
        self.mu = mu

    @property
    def accuracy_preserving(self) -> bool:
        """True iff the fitted map is temperature scaling (equal positive w, equal b)."""
        if not hasattr(self, "weights_"):
            return False
        w, b = np.asarray(self.weights_), np.asarray(self.bias_)
        if self.binary_:  # sigmoid(w_1 z + b_1 - b_0): the sign of z must decide
            return bool(w[1] > 0 and b[1] == b[0])
        return bool(w[0] > 0 and np.all(w == w[0]) and np.all(b == b[0]))

    @property
    def injective(self) -> bool:
        """True iff at most one fitted weight is 0 and the others share a sign."""
        if not hasattr(self, "weights_"):
            return False
        w = np.asarray(self.weights_)
        if self.binary_:  # z -> sigmoid(w_1 z + b_1 - b_0)
            return bool(w[1] != 0)
        return bool(np.sum(w == 0) <= 1 and (np.all(w >= 0) or np.all(w <= 0)))

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        _check_positive("tol", self.tol, "VectorScaling")
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        k = Z.shape[1]
        bias = bool(self.bias)
        self.binary_ = S.ndim == 1

        # optimise in standardised coordinates: z_k = mu_k + sd_k u_k, so that
        # w_k z_k + b_k = (w_k sd_k) u_k + (b_k + w_k mu_k): the same objective and
        # minimiser, but far better conditioned for L-BFGS
        mu = np.average(Z, axis=0, weights=w) if bias else np.zeros(k)  # no bias: scale only
        sd = np.sqrt(np.average((Z - mu) ** 2, axis=0, weights=w))
        sd = np.where(sd > 1e-12 * max(float(sd.max()), 1e-300), sd, 1.0)
        U = (Z - mu) / sd

        lam = mu_reg = 0.0
        towards = self.reg == "temperature"
        if towards:  # the penalty's weights, in the units of w and b
            n = _n_eff(Z.shape[0], w)
            lam = float(self.lambda_) * _logit_spread(Z, w) * (1.0 - 1.0 / k) / n
            mu_reg = float(self.mu) / n if bias else 0.0

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            A = U * x[:k]
            if bias:
                A += x[k:]
            loss, G = _softmax_nll(A, y, w)
            gw = np.einsum("ij,ij->j", G, U)
            gb = G.sum(axis=0)
            if towards:  # w = x_w / sd, b = x_b - w * mu
                wt = x[:k] / sd
                dev = wt - wt.mean()
                loss += lam * float(dev @ dev)
                pw = 2.0 * lam * dev
                over = float(wt.mean()) - MAX_SCALE  # the mean weight kept below MAX_SCALE
                if over > 0:
                    loss += over * over
                    pw = pw + 2.0 * over / k
                if bias:
                    rb = x[k:] - wt * mu
                    rb -= rb.mean()
                    loss += mu_reg * float(rb @ rb)
                    pb = 2.0 * mu_reg * rb
                    pw = pw - pb * mu
                    gb = gb + pb
                gw = gw + pw / sd
            return loss, (np.concatenate([gw, gb]) if bias else gw)

        # start at the identity w = 1, b = 0
        x0 = np.concatenate([sd, mu]) if bias else sd.copy()
        bounds: list[tuple[float | None, float | None]] = [(0.0, None)] * k
        if bias:
            bounds += [(None, None)] * k
        x, self.n_iter_, self.converged_ = _lbfgs(
            fun,
            x0,
            bounds,
            tol=self.tol,
            max_iter=self.max_iter,
            name="VectorScaling",
            maxcor=min(2 * k + 2, 100),  # L-BFGS-B's memory: all 2k parameters' curvature
        )
        self.weights_ = x[:k] / sd
        if bias:
            b = x[k:] - self.weights_ * mu
            self.bias_ = b - b.mean()  # softmax ignores a common shift: centre it
        else:
            self.bias_ = np.zeros(k)
        if np.sum(self.weights_ == 0) > 0:
            warnings.warn(
                "VectorScaling: the weight of class(es) "
                f"{np.flatnonzero(self.weights_ == 0).tolist()} is at the bound 0 (that "
                "logit is ignored)",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        if self.binary_ and S.ndim == 2:
            # fitted on the logit z of class 1 (as [0, z]): two columns are read as
            # z = z_1 - z_0, the representation the fit saw, not as [z_0, z_1]
            q = self._transform(S[:, 1] - S[:, 0])
            return np.stack([1.0 - q, q], axis=1)
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        A = Z * self.weights_ + self.bias_
        if S.ndim == 1:
            from scipy.special import expit

            return expit(A[:, 1] - A[:, 0])
        A -= A.max(axis=1, keepdims=True)
        E = np.exp(A)
        return E / E.sum(axis=1, keepdims=True)
