"""Matrix scaling: ``softmax(W z + b)`` with a full ``k x k`` matrix W.

Guo et al. (2017) §4.2; with ``reg="odir"`` the off-diagonal and intercept
regularisation (ODIR) of Kull et al. (2019), "Beyond temperature scaling:
obtaining well-calibrated multiclass probabilities with Dirichlet
calibration" (NeurIPS). Applied to ``log p`` (pass probabilities) this is
their Dirichlet calibration; applied to logits it is ODIR matrix scaling.
By default (``reg="temperature"``) a penalty pulls the map towards
temperature scaling (off-diagonal entries, unequal diagonal entries and
intercepts), which keeps the fit finite and fast where the unregularised one
has no optimum.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._optimize import (
    MAX_SCALE,
    TEMPERATURE_LAMBDA,
    TEMPERATURE_MU,
    _check_positive,
    _lbfgs,
    _linear_map_injective,
    _logit_spread,
    _n_eff,
    _softmax_nll,
    _temperature_distance,
    _whitener,
)
from ._schema import (
    ITERATIONS,
    MAX_ITER,
    NON_NEGATIVE_OR_NONE,
    POSITIVE,
    Array,
    Flag,
    OneOf,
    Schema,
    binary_has_two_classes,
)
from .base import Recalibrator, register
from .temperature_scaling import _as_multiclass

__all__ = ["MatrixScaling"]


def _shift(W: np.ndarray) -> np.ndarray:
    """``W + 1 u^T`` with each ``u_j`` minus the mean of the off-diagonal entries of column j.

    Among the matrices giving the same softmax, the one with the least sum of
    squared off-diagonal entries.
    """
    k = W.shape[0]
    off_mean = (W.sum(axis=0) - np.diag(W)) / (k - 1)
    return W - off_mean[None, :]


def _memory(n_params: int) -> int:
    """L-BFGS memory (correction pairs): 100 for up to 30 000 parameters (k <= 172), fewer
    above, so that its two ``m x n_params`` float64 arrays stay within ~48 MB (never below
    SciPy's default 10)."""
    return int(min(100, max(10, 3_000_000 // max(n_params, 1))))


@register
class MatrixScaling(Recalibrator):
    """Matrix scaling, ``softmax(W z + b)`` (Guo et al. 2017; ODIR: Kull et al. 2019).

    Fitted by minimising, with L-BFGS-B and the analytic gradient, from
    ``W = I, b = 0`` (the identity map)::

        L(W, b) = NLL(W, b) + lambda_ s^2 / n * D(W)
                            + mu / n * sum_j (b_j - mean b)^2   (reg="temperature", default)
        L(W, b) = NLL(W, b) + lambda_ / (k (k - 1)) * sum_{i != j} W_ij^2
                            + mu / k * sum_j b_j^2              (reg="odir"),

    ``NLL`` the weighted mean negative log-likelihood of ``softmax(W z_i + b)``
    on the calibration split; ``reg="none"`` drops the penalties (the
    maximum-likelihood fit of Guo et al. 2017, and that of files written by
    earlier versions, which store ``reg``). ``reg="odir"`` is the
    ODIR objective of Kull et al. (2019, §4 "Off-diagonal and intercept
    regularisation"), with the NLL averaged (not summed) over the samples.
    ``reg="temperature"`` extends its idea (shrink what temperature scaling
    does not have): ``D(W) = min_s ||P (W - s I)||_F^2``, ``P = I - 11^T / k``,
    is the squared distance from W to the nearest temperature scaling
    ``s I`` in the directions softmax sees, so off-diagonal entries and unequal
    diagonal entries are penalised and the common scale (the inverse
    temperature) is not; ``s^2`` is the mean variance of the logit columns on
    the calibration split, which makes ``lambda_`` unitless, and ``n`` the
    number of calibration rows (the weight total with ``sample_weight``:
    weights count as rows): the penalty is a prior of fixed strength on the
    summed log-likelihood, strong on a small split and fading on a large one.
    A strong penalty gives temperature scaling (with a bias). The inverse
    temperature ``s* = tr(P W) / (k - 1)`` of the nearest temperature scaling is
    kept below 100 (``+ max(0, s* - 100)^2``), the bound of temperature scaling's
    ``t_min = 0.01``: a calibration split that the arg-max separates has no
    finite optimum otherwise (the fit would sharpen without end, and give
    held-out rows of probability 0). ODIR leaves the diagonal free:
    on digits with an SVC's decision values (539 rows, 10 classes), where a
    class's logit separates the calibration split, unregularised matrix
    scaling has weights in the thousands and an infinite held-out NLL, and
    ODIR needs thousands of iterations; ``reg="temperature"`` converges in a
    few hundred, with a held-out NLL close to temperature scaling's (see the
    recalibration guide's table).
    The gradient (ODIR) is ``G^T Z + 2 lambda_ / (k (k - 1)) offdiag(W)`` for W and
    ``sum_i G_i + 2 mu b / k`` for b, ``G_i = (q_i - onehot(y_i)) w_i / sum w``
    (towards temperature scaling: ``G^T Z + 2 lambda_ s^2 / n P (W - s* I)`` and
    ``sum_i G_i + 2 mu / n (b - mean b)``).

    The optimiser works in whitened coordinates (the logits centred and
    decorrelated by their weighted mean and covariance on the calibration
    split), a change of variables that leaves the objective and its minimiser
    unchanged and cuts the L-BFGS iterations about twentyfold on DenseNet-40
    (with a penalty on W, the covariance gets a ridge, twice its weight (ODIR:
    ``2 lambda_ / (k (k - 1))``) divided
    by the mean ``q (1 - q)`` of the starting softmax, the penalty's curvature
    relative to the NLL's, so that a strong penalty is not badly scaled).
    Softmax ignores adding ``1 u^T`` to W and a constant to b; the gradient of
    the NLL has columns summing to 0, so without regularisation the fit keeps
    the column sums of its start (``1^T W = 1^T``, ``sum b = 0``, up to
    rounding), and so does the fit towards temperature scaling, whose penalty
    ignores those directions too. ODIR makes the minimiser unique, but its tiny curvature along
    those directions (``2 lambda_ / (k (k - 1))``) would make L-BFGS crawl; so
    the penalty is first minimised over them in closed form (``u_j`` = minus
    the mean off-diagonal entry of column j, the constant = minus the mean of
    b), the profiled objective is minimised, and the fitted (W, b) is moved to
    that penalty-minimising representative: the same minimiser of L, found in
    about as many iterations as without regularisation. Chidambaram & Ge's (2024) sharpcal fits the unregularised form with Adam
    (docs/how-calipers-computes.md §10); a convex objective, so both reach the same map up to
    that optimiser's tolerance. Binary scores ``(n,)`` are read as the logits
    ``[0, z]``.

    Declared properties:

    * ``accuracy_preserving``: False. A general W reorders the classes (only
      ``P W = a P`` with ``a > 0`` and a constant b, ``P = I - 11^T / k``, would
      not, and a fit does not produce that exactly).
    * ``injective`` (from the fitted state; False before fitting): Gruber & Buettner's (2022)
      one-to-one map ``p -> q`` of the open simplex, the method reading
      ``z = log p``. Predictions collide iff ``D = log p - log p'`` (0, or a
      vector that changes sign) solves ``P W D = 0``; so the map is injective
      iff ``P W`` has rank ``k - 1`` and its null vector does not change sign.
      An invertible W passes iff ``W^{-1} 1`` does not change sign (W = I: it
      is 1); a singular W can still pass (``W = P`` is plain softmax). Binary
      ``(n,)`` input (``z -> sigmoid((W_11 - W_01) z + b_1 - b_0)``): iff
      ``W_11 != W_01``. Applied to raw logits the output also depends on each
      row's offset unless ``W 1`` is a multiple of 1.

    Parameters
    ----------
    reg : {"temperature", "odir", "none"}, default "temperature"
    lambda_ : float or None, default None
        Weight of the penalty on W: None means 10 for ``"temperature"`` (chosen
        by ``benchmarks/study_recalibration_defaults.py``, the recalibration
        guide's table) and 1e-3 (the weight of the mean squared off-diagonal
        entry) for ``"odir"``.
    mu : float or None, default None
        Weight of the penalty on the intercepts: None means 10 for
        ``"temperature"`` and 1e-3 for ``"odir"``.
    tol : float, default 1e-8
        L-BFGS-B ``gtol`` on the projected gradient.
    max_iter : int, default 5000

    Attributes
    ----------
    weights_ : ndarray of shape (k, k)
    bias_ : ndarray of shape (k,)
    binary_ : bool
        Fitted on ``(n,)`` binary scores (read as the logits ``[0, z]``); such a
        fit reads ``(n, 2)`` scores as ``z = z_1 - z_0``.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.matrix_scaling import MatrixScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(20000, 3)) * 2
    >>> W = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, -0.5, 1.0]])
    >>> a = z @ W.T + [0.2, 0.0, -0.2]                           # the true map
    >>> q = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    >>> y = (rng.random(20000)[:, None] > q.cumsum(1)).sum(1)     # labels drawn from q
    >>> ms = MatrixScaling(reg="none").fit(z, y)                  # maximum likelihood
    >>> np.round(ms.weights_, 1) + 0.0
    array([[ 1. ,  0.5,  0. ],
           [ 0. ,  1. ,  0. ],
           [ 0. , -0.5,  1. ]])
    >>> ms.accuracy_preserving, ms.injective
    (False, True)
    """

    input = "logits"
    _accuracy_preserving = False
    schema = Schema(
        params={
            "reg": OneOf(("temperature", "odir", "none")),
            "lambda_": NON_NEGATIVE_OR_NONE,
            "mu": NON_NEGATIVE_OR_NONE,
            "tol": POSITIVE,
            "max_iter": MAX_ITER,
        },
        state={
            "weights_": Array(("n_classes_", "n_classes_")),
            "bias_": Array(("n_classes_",)),
            "binary_": Flag(),
            **ITERATIONS,
        },
        state_checks=(binary_has_two_classes,),
    )

    def __init__(
        self,
        reg: Literal["temperature", "odir", "none"] = "temperature",
        lambda_: float | None = None,
        mu: float | None = None,
        tol: float = 1e-8,
        max_iter: int = 5000,
    ) -> None:
        self.reg = reg
        self.lambda_ = lambda_
        self.mu = mu
        self.tol = tol
        self.max_iter = max_iter

    @property
    def injective(self) -> bool:
        """From the fitted W (see the class docstring); False before fitting."""
        if not hasattr(self, "weights_"):
            return False
        W = np.asarray(self.weights_, dtype=np.float64)
        if self.binary_:
            return bool(W[1, 1] != W[0, 1])
        return _linear_map_injective(W)

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if self.reg not in ("temperature", "none", "odir"):
            raise CalibrationInputError(
                f"MatrixScaling: reg must be 'temperature', 'odir' or 'none'; got {self.reg!r}"
            )
        _check_positive("tol", self.tol, "MatrixScaling")
        lam = mu_reg = 0.0
        if self.reg != "none":
            defaults = (
                (TEMPERATURE_LAMBDA, TEMPERATURE_MU) if self.reg == "temperature" else (1e-3, 1e-3)
            )
            for name, default in zip(("lambda_", "mu"), defaults, strict=True):
                v = getattr(self, name)
                v = default if v is None else v
                if not (isinstance(v, (int, float, np.integer, np.floating)) and v >= 0):
                    raise CalibrationInputError(
                        f"MatrixScaling: {name} must be a non-negative number; got {v!r}"
                    )
                if name == "lambda_":
                    lam = float(v)
                else:
                    mu_reg = float(v)
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        self.binary_ = S.ndim == 1
        k = Z.shape[1]
        towards_t = self.reg == "temperature"
        off = 1.0 - np.eye(k)
        # the weights of the penalties (the logits' spread s^2 makes lambda_ unitless)
        if towards_t:  # a prior: its weight relative to the mean NLL falls as 1 / n
            n = _n_eff(Z.shape[0], w)
            c_w, c_b = lam * _logit_spread(Z, w) / n, mu_reg / n
        else:
            c_w, c_b = lam / (k * (k - 1)), mu_reg / k

        # optimise in whitened coordinates: with Z = U M^{-1} + mu (U = (Z - mu) M has
        # identity covariance), W z + b = Wt u + bt for Wt = W M^{-1}, bt = b + W mu; the
        # objective and its minimiser are unchanged, the conditioning far better
        ridge = 0.0
        if lam:  # penalty curvature relative to the NLL's (mean q (1 - q) at the start)
            Q0 = np.exp(Z - Z.max(axis=1, keepdims=True))
            Q0 /= Q0.sum(axis=1, keepdims=True)
            curv = float(np.average(np.sum(Q0 * (1.0 - Q0), axis=1), weights=w)) / k
            ridge = 2.0 * c_w / max(curv, 1e-12)
        try:
            mu, M = _whitener(Z, w, ridge)
            W0 = np.linalg.solve(M, np.eye(k))  # W = I in whitened coordinates: M^{-1}
        except np.linalg.LinAlgError as exc:
            raise CalibrationInputError(
                f"MatrixScaling cannot fit these logits ({exc}): their covariance is too "
                f"ill-conditioned (logits from {float(Z.min()):.6g} to {float(Z.max()):.6g})"
            ) from None
        U = (Z - mu) @ M
        Mmu = M @ mu

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            Wt = x[: k * k].reshape(k, k)
            bt = x[k * k :]
            loss, G = _softmax_nll(U @ Wt.T + bt, y, w)
            gW = G.T @ U
            gb = G.sum(axis=0)
            if lam or mu_reg or towards_t:  # the penalty (ODIR: over softmax's directions)
                W = Wt @ M
                b = bt - Wt @ Mmu
                Rb = b - b.mean()
                if towards_t:
                    d, dW = _temperature_distance(W)
                    loss += c_w * d + c_b * float(Rb @ Rb)
                    pW = c_w * dW
                    # the inverse temperature tr(P W) / (k - 1) kept below MAX_SCALE
                    over = (float(np.trace(W)) - float(W.sum()) / k) / (k - 1) - MAX_SCALE
                    if over > 0:
                        loss += over * over
                        pW = pW + 2.0 * over / (k - 1) * (np.eye(k) - 1.0 / k)
                else:
                    Rw = _shift(W) * off
                    loss += c_w * float(np.sum(Rw * Rw)) + c_b * float(Rb @ Rb)
                    pW = 2.0 * c_w * Rw
                pb = 2.0 * c_b * Rb  # d penalty / d (W, b)
                gW += pW @ M - np.outer(pb, Mmu)
                gb += pb
            return loss, np.concatenate([gW.ravel(), gb])

        x0 = np.concatenate([W0.ravel(), mu])
        # a long memory (100 pairs, about the k (k + 1) parameters at k = 10): on digits with
        # an SVC's decision values it cuts the iterations of the default fit from ~500 to ~80
        x, self.n_iter_, self.converged_ = _lbfgs(
            fun,
            x0,
            None,
            tol=self.tol,
            max_iter=self.max_iter,
            name="MatrixScaling",
            maxcor=_memory(x0.size),
        )
        Wt = x[: k * k].reshape(k, k)
        W = Wt @ M
        b = x[k * k :] - Wt @ Mmu
        if not towards_t and (lam or mu_reg):  # the representative minimising ODIR's penalty
            W = _shift(W) if lam else W
            b = b - b.mean() if mu_reg else b
        # (the penalty towards temperature scaling ignores W + 1 u^T and b + c 1, as the NLL
        # does: the fit keeps the start's column sums 1^T W = 1^T and sum b = 0)
        self.weights_ = W
        self.bias_ = b

    def _transform(self, S: np.ndarray) -> np.ndarray:
        if self.binary_ and S.ndim == 2:
            # fitted on the logit z of class 1 (as [0, z]): two columns are read as
            # z = z_1 - z_0, the representation the fit saw, not as [z_0, z_1]
            q = self._transform(S[:, 1] - S[:, 0])
            return np.stack([1.0 - q, q], axis=1)
        Z = _as_multiclass(np.asarray(S, dtype=np.float64))
        A = Z @ np.asarray(self.weights_).T + self.bias_
        if S.ndim == 1:
            from scipy.special import expit

            return expit(A[:, 1] - A[:, 0])
        A -= A.max(axis=1, keepdims=True)
        E = np.exp(A)
        return E / E.sum(axis=1, keepdims=True)
