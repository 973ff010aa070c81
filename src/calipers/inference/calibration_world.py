"""A fitted calibration curve to resample from: the estimated model behind a verdict.

A calibration-error estimator's bias depends on the calibration error itself: a binned
ECE on a calibrated model is all bias, on a strongly miscalibrated one the noise mostly
averages out (``E|a + e| ~ |a|`` once ``|a|`` is well above the noise). The bias that
matters is the bias at the model the data came from. Roelofs et al. (2022) measured
estimator bias by drawing labels from calibration curves fitted to real predictions;
this module fits such a curve to the user's own ``(prediction, label)`` pairs, so that
:mod:`calipers.inference` can draw labels from it and measure the bias there.

Two families, each a short list of nested models chosen by Akaike's information
criterion (AIC = 2 k - 2 log L, with the log-likelihood of the labels):

* **curve** (binary predictions, and the top-label lens): the probability that the
  label is the predicted class, ``g(c) = sigmoid(f(logit c))`` at confidence ``c``, with
  ``f`` the identity (calibrated, 0 parameters), linear (Platt's logistic curve on the
  logit, 2) or a restricted cubic spline of the logit with 3 or 5 knots at Harrell's
  (2015, §2.4.6) quantiles (3 and 5 parameters). A wrong prediction's label is drawn
  among the other classes in proportion to their predicted probabilities;
* **canonical** (the canonical and class-wise lenses, K > 2 classes):
  ``q = softmax(a log p + b)``: the identity (0 parameters), temperature scaling (Guo et
  al. 2017, 1) or temperature scaling with a bias per class (K).

The identity is one of the candidates, so a model whose labels look calibrated gets
the calibrated world (the consistency-resampling null of Vaicenavicius et al. 2019).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, logit, softmax

__all__ = ["CalibrationWorld", "CalibrationWorldFitter", "fit_calibration_world"]

Family = Literal["curve", "canonical"]

#: Harrell's (2015, §2.4.6, Table 2.3) knot quantiles of a restricted cubic spline.
_KNOT_QUANTILES: dict[int, tuple[float, ...]] = {
    3: (0.10, 0.50, 0.90),
    5: (0.05, 0.275, 0.50, 0.725, 0.95),
}

#: Scores are kept in ``[_EPS, 1 - _EPS]`` before the logit / log.
_EPS = 1e-6


@dataclass(frozen=True)
class CalibrationWorld:
    """A calibration curve fitted to ``(prediction, label)`` pairs, to draw labels from.

    Attributes
    ----------
    probs : ndarray of shape (n,) or (n, K)
        The fitted distribution of each row's label, ``q_i = E[Y | p_i]`` under the
        fitted model (binary: ``P(y = 1)``).
    model : str
        The model AIC chose, in words (e.g. ``"logistic in logit(score)"``).
    n_params : int
        Its number of parameters (0: calibrated, ``q = p``).
    aic : float
        Its AIC, ``2 n_params - 2 log L``.
    candidates : tuple of (str, float)
        Every candidate's AIC.
    coefficients : tuple of (str, ndarray)
        Every fitted candidate's coefficients (warm starts of a refit).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.calibration_world import fit_calibration_world
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, size=4000)
    >>> y = (rng.uniform(size=4000) < p**2).astype(int)
    >>> world = fit_calibration_world(p, y)
    >>> world.n_params > 0, float(np.abs(world.probs - p**2).mean()) < 0.02
    (True, True)
    """

    probs: np.ndarray
    model: str
    n_params: int
    aic: float
    candidates: tuple[tuple[str, float], ...] = field(default=(), repr=False)
    coefficients: tuple[tuple[str, np.ndarray], ...] = field(default=(), repr=False)

    @property
    def calibrated(self) -> bool:
        """True when the chosen model is the identity (``q = p``)."""
        return self.n_params == 0


def _rcs_basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """``x`` and the ``len(knots) - 2`` nonlinear terms of a restricted cubic spline.

    Harrell (2015, eq. 2.25): linear beyond the outer knots; the terms are divided by
    ``(t_K - t_1)^2`` to keep them on the scale of ``x``.
    """
    t = knots
    k = t.shape[0]
    cols = [x]
    scale = (t[-1] - t[0]) ** 2

    def cube(u: np.ndarray) -> np.ndarray:
        return np.maximum(u, 0.0) ** 3

    for j in range(k - 2):
        c = (
            cube(x - t[j])
            - cube(x - t[k - 2]) * (t[k - 1] - t[j]) / (t[k - 1] - t[k - 2])
            + cube(x - t[k - 1]) * (t[k - 2] - t[j]) / (t[k - 1] - t[k - 2])
        )
        cols.append(c / scale)
    return np.column_stack(cols)


def _bernoulli_loglik(q: np.ndarray, t: np.ndarray, w: np.ndarray) -> float:
    qc = np.clip(q, 1e-15, 1 - 1e-15)
    return float(np.sum(w * (t * np.log(qc) + (1 - t) * np.log1p(-qc))))


def _logistic_fit(
    X: np.ndarray, t: np.ndarray, w: np.ndarray, start: np.ndarray | None = None
) -> np.ndarray | None:
    """Weighted logistic regression by Newton's method with step halving; None if it fails.

    ``start``: initial coefficients (default: the identity, intercept 0 and slope 1 on
    the first basis column).
    """
    k = X.shape[1]
    ridge = 1e-8 * np.eye(k)
    if start is not None:
        # a refit from a nearby optimum: plain Newton steps (quadratic convergence, no
        # line search); anything unusual falls back to the guarded iteration below
        beta = start.copy()
        for _ in range(6):
            mu = expit(X @ beta)
            H = (X * (w * mu * (1 - mu))[:, None]).T @ X + ridge
            try:
                step = np.linalg.solve(H, X.T @ (w * (t - mu)))
            except np.linalg.LinAlgError:
                break
            beta = beta + step
            if not np.all(np.isfinite(beta)) or float(np.max(np.abs(step))) < 1e-9:
                break
        if np.all(np.isfinite(beta)) and float(np.max(np.abs(step))) < 1e-9:
            return beta if np.max(np.abs(beta)) <= 1e3 else None
    beta = np.zeros(k)
    beta[1] = 1.0

    def nll(eta: np.ndarray) -> float:
        return float(np.dot(w, np.logaddexp(0.0, eta) - t * eta))

    eta = X @ beta
    f = nll(eta)
    for _ in range(100):
        mu = expit(eta)
        grad = X.T @ (w * (t - mu))
        H = (X * (w * mu * (1 - mu))[:, None]).T @ X + ridge
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return None
        d_eta = X @ step
        s = 1.0
        while True:
            f_new = nll(eta + s * d_eta)
            if f_new <= f + 1e-12 or s < 1e-6:
                break
            s /= 2
        beta = beta + s * step
        eta = eta + s * d_eta
        done = abs(f - f_new) <= 1e-10 * max(1.0, abs(f))
        f = f_new
        if done or float(np.max(np.abs(s * step))) < 1e-9:
            break
    if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > 1e3:
        return None  # separated data: the likelihood has no finite optimum
    return beta


def _softmax_newton(
    L: np.ndarray,
    y: np.ndarray,
    onehot: np.ndarray,
    w: np.ndarray,
    with_bias: bool,
    x0: np.ndarray,
) -> tuple[np.ndarray, float] | None:
    """Newton's method for ``q = softmax(a L + b)`` (``b_0 = 0``) by weighted likelihood.

    With ``R = w (q - onehot)`` the gradient of the negative log-likelihood is
    ``(sum R L, sum_i R_i[1:])`` and its Hessian, from ``d^2/dZ_k dZ_l = w (q_k delta_kl -
    q_k q_l)``, is assembled in closed form; steps are halved until the likelihood does
    not fall. Returns ``(theta, nll)``, or None when it does not converge.
    """
    n, K = L.shape
    rows = np.arange(n)
    theta = np.array(x0, dtype=np.float64)

    def evaluate(th: np.ndarray) -> tuple[float, np.ndarray]:
        b = np.concatenate([[0.0], th[1:]]) if with_bias else 0.0
        ls = log_softmax(th[0] * L + b, axis=1)
        return -float(np.dot(w, ls[rows, y])), np.exp(ls)

    f, q = evaluate(theta)
    for _ in range(50):
        R = (q - onehot) * w[:, None]
        qL = (q * L).sum(1)
        g = [float(np.sum(R * L))]
        haa = float(np.dot(w, (q * L * L).sum(1) - qL**2))
        if with_bias:
            wq = q * w[:, None]
            hab = (wq * L - wq * qL[:, None]).sum(0)[1:]
            hbb = (np.diag(wq.sum(0)) - wq.T @ q)[1:, 1:]
            H = np.block([[np.array([[haa]]), hab[None, :]], [hab[:, None], hbb]])
            grad = np.concatenate([g, R.sum(0)[1:]])
        else:
            H = np.array([[haa]])
            grad = np.array(g)
        try:
            step = np.linalg.solve(H + 1e-12 * np.eye(H.shape[0]), grad)
        except np.linalg.LinAlgError:
            return None
        s = 1.0
        while True:
            f_new, q_new = evaluate(theta - s * step)
            if f_new <= f + 1e-12 * max(1.0, abs(f)) or s < 1e-8:
                break
            s /= 2
        if not np.isfinite(f_new) or f_new > f + 1e-9 * max(1.0, abs(f)):
            return None
        theta = theta - s * step
        done = abs(f - f_new) <= 1e-13 * max(1.0, abs(f))
        f, q = f_new, q_new
        if done or float(np.max(np.abs(s * step))) < 1e-10:
            return theta, f
    return None


#: One fitted candidate: (model, n_params, fitted probabilities, log L, coefficients).
_Candidate = tuple[str, int, np.ndarray, float, "np.ndarray | None"]


class CalibrationWorldFitter:
    """Fits :class:`CalibrationWorld` to many label vectors for the same predictions.

    The design (the spline bases of the logit, the log-probabilities) depends on the
    predictions only, so it is built once; a refit on labels drawn from a fitted world
    starts from that world's coefficients (:func:`calipers.verdict` refits on every
    draw to carry the correction's own uncertainty into the interval).

    Parameters
    ----------
    probs : ndarray of shape (n,) or (n, K)
        Validated probabilities (binary: ``P(y = 1)``).
    family : {"curve", "canonical"}, default "curve"
        See :func:`fit_calibration_world`.
    sample_weight : ndarray of shape (n,), optional
        Row weights of the log-likelihood (scaled to mean 1 for the AIC).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.calibration_world import CalibrationWorldFitter
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, size=2000)
    >>> fitter = CalibrationWorldFitter(p)
    >>> y = (rng.uniform(size=2000) < p**2).astype(int)
    >>> world = fitter.fit(y)
    >>> again = fitter.fit((rng.uniform(size=2000) < world.probs).astype(int), start=world)
    >>> again.n_params > 0
    True
    """

    def __init__(
        self,
        probs: np.ndarray,
        family: Family = "curve",
        sample_weight: np.ndarray | None = None,
    ) -> None:
        p = np.asarray(probs, dtype=np.float64)
        self.probs = p
        n = p.shape[0]
        self.n = n
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self.w = w * (n / w.sum())
        self.canonical = family == "canonical" and p.ndim == 2 and p.shape[1] > 2
        if self.canonical:
            self.L = np.log(np.clip(p, _EPS, 1.0))
            return
        if p.ndim == 1:
            self.c = p
        elif p.shape[1] == 2:
            self.c = p[:, 1]
        else:
            self.top = np.argmax(p, axis=1)
            self.c = p[np.arange(n), self.top]
        x = logit(np.clip(self.c, _EPS, 1 - _EPS))
        self.x = x
        # each basis is built when it is fitted and only the last one is kept: a refit
        # reuses it, and a large n never holds the three designs at once
        self.knots: dict[str, np.ndarray | None] = {"logistic in logit(score)": None}
        if np.unique(x).shape[0] >= 8:
            for k, qs in _KNOT_QUANTILES.items():
                knots = np.quantile(x, qs)
                if np.all(np.diff(knots) > 1e-6):
                    self.knots[f"restricted cubic spline in logit(score), {k} knots"] = knots
        self._design: tuple[str, np.ndarray] | None = None

    def _basis(self, name: str) -> np.ndarray:
        if self._design is None or self._design[0] != name:
            self._design = None  # free the previous design first
            knots = self.knots[name]
            B = self.x[:, None] if knots is None else _rcs_basis(self.x, knots)
            self._design = (name, np.column_stack([np.ones_like(self.x), B]))
        return self._design[1]

    def _curve(
        self, y: np.ndarray, start: dict[str, np.ndarray], only: str | None = None
    ) -> list[_Candidate]:
        p = self.probs
        t = (y == self.top).astype(np.float64) if p.ndim == 2 and p.shape[1] > 2 else y * 1.0
        # a refit of one model needs no likelihoods (no model is chosen)
        ll: Callable[[np.ndarray], float] = (
            (lambda g: math.nan)
            if only is not None
            else (lambda g: _bernoulli_loglik(g, t, self.w))
        )
        out: list[_Candidate] = [("calibrated (identity)", 0, self.c, ll(self.c), None)]
        for name in self.knots:
            if only is not None and name != only:
                continue
            X = self._basis(name)
            beta = _logistic_fit(X, t, self.w, start.get(name))
            if beta is not None:
                g = expit(X @ beta)
                out.append((name, X.shape[1], g, ll(g), beta))
        return out

    def _canonical(
        self, y: np.ndarray, start: dict[str, np.ndarray], only: str | None = None
    ) -> list[_Candidate]:
        p, L, w, n = self.probs, self.L, self.w, self.n
        K = p.shape[1]
        rows = np.arange(n)
        onehot = np.zeros((n, K))
        onehot[rows, y] = 1.0
        out: list[_Candidate] = [
            (
                "calibrated (identity)",
                0,
                p,
                float(np.sum(w * np.log(np.clip(p[rows, y], 1e-15, 1)))),
                None,
            )
        ]

        def unpack(theta: np.ndarray, with_bias: bool) -> tuple[float, np.ndarray]:
            return theta[0], (np.concatenate([[0.0], theta[1:]]) if with_bias else np.zeros(K))

        for name, k, with_bias in (
            ("temperature scaling", 1, False),
            ("temperature scaling with a bias per class", K, True),
        ):
            if only is not None and name != only:
                continue
            x0 = start.get(name)
            if x0 is None:
                x0 = np.zeros(k)
                x0[0] = 1.0
            got = _softmax_newton(L, y, onehot, w, with_bias, x0)
            if got is None:

                def f(theta: np.ndarray, with_bias: bool = with_bias) -> tuple[float, np.ndarray]:
                    a, b = unpack(theta, with_bias)
                    ls = log_softmax(a * L + b, axis=1)
                    R = (np.exp(ls) - onehot) * w[:, None]
                    ga = float(np.sum(R * L))
                    g = np.concatenate([[ga], R.sum(0)[1:]]) if with_bias else np.array([ga])
                    return -float(np.dot(w, ls[rows, y])), g

                res = minimize(f, x0, jac=True, method="L-BFGS-B")
                got = (res.x, float(res.fun))
            theta, nll = got
            if np.all(np.isfinite(theta)):
                a, b = unpack(theta, with_bias)
                out.append((name, k, softmax(a * L + b, axis=1), -nll, theta))
        return out

    def fit(
        self,
        labels: np.ndarray,
        *,
        include_identity: bool = True,
        start: CalibrationWorld | None = None,
    ) -> CalibrationWorld:
        """The AIC-best world for ``labels`` (see :func:`fit_calibration_world`).

        ``start``: a world fitted by this fitter. Only its model is refitted, from its
        coefficients (no new choice of model: the refits measure the fit's noise; no
        likelihood is computed, so the refit's ``aic`` is NaN).
        """
        y = np.asarray(labels).astype(np.int64)
        init = {} if start is None else dict(start.coefficients)
        only = None if start is None or start.calibrated else start.model
        if self.canonical:
            cands = self._canonical(y, init, only)
        else:
            cands = self._curve(y, init, only)
        if not include_identity or only is not None:
            cands = cands[1:] or cands
        best = min(cands, key=lambda c_: 2 * c_[1] - 2 * c_[3])
        g = best[2]
        p, n = self.probs, self.n
        if self.canonical or p.ndim == 1:
            q = g
        elif p.shape[1] == 2:
            q = np.column_stack([1 - g, g])
        else:
            # the top class gets g(c); the others share 1 - g(c) as the prediction does
            rest = p.copy()
            rest[np.arange(n), self.top] = 0.0
            s = rest.sum(1, keepdims=True)
            k = p.shape[1]
            rest = np.where(s > 0, rest / np.where(s > 0, s, 1.0), 1.0 / (k - 1))
            rest[np.arange(n), self.top] = 0.0
            q = rest * (1 - g)[:, None]
            q[np.arange(n), self.top] = g
        return CalibrationWorld(
            probs=q,
            model=best[0],
            n_params=int(best[1]),
            aic=float(2 * best[1] - 2 * best[3]),
            candidates=tuple((c_[0], 2 * c_[1] - 2 * c_[3]) for c_ in cands),
            coefficients=tuple((c_[0], c_[4]) for c_ in cands if c_[4] is not None),
        )


def fit_calibration_world(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    family: Family = "curve",
    sample_weight: np.ndarray | None = None,
    include_identity: bool = True,
) -> CalibrationWorld:
    """Fit a calibration curve to ``(probs, labels)`` and choose its model by AIC.

    The estimated model that :func:`calipers.verdict` draws labels from to measure an
    estimator's bias where the data are (after Roelofs et al. 2022, who drew labels
    from fitted calibration curves). Candidates and families: module docstring of
    :mod:`calipers.inference.calibration_world`.

    Parameters
    ----------
    probs : ndarray of shape (n,) or (n, K)
        Validated probabilities (binary: ``P(y = 1)``).
    labels : ndarray of shape (n,)
        Integer labels in ``0..K-1`` (binary: 0/1).
    family : {"curve", "canonical"}, default "curve"
        ``"curve"``: the top-label (binary: positive-class) curve; ``"canonical"``:
        ``softmax(a log p + b)`` over all K classes (needs K > 2 columns).
    sample_weight : ndarray of shape (n,), optional
        Row weights of the log-likelihood (scaled to mean 1 for the AIC).
    include_identity : bool, default True
        Whether the calibrated ``q = p`` is a candidate. :func:`calipers.verdict`
        leaves it out once the test of calibration has rejected it.

    Returns
    -------
    CalibrationWorld

    Examples
    --------
    Calibrated labels get the calibrated world most of the time (AIC's penalty):

    >>> import numpy as np
    >>> from calipers.inference.calibration_world import fit_calibration_world
    >>> rng = np.random.default_rng(3)
    >>> p = rng.dirichlet(np.ones(4), size=3000)
    >>> y = (rng.random(3000)[:, None] > p.cumsum(1)).sum(1).clip(0, 3)
    >>> fit_calibration_world(p, y, family="canonical").model
    'calibrated (identity)'
    """
    return CalibrationWorldFitter(probs, family, sample_weight).fit(
        labels, include_identity=include_identity
    )
