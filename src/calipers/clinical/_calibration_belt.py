"""The calibration belt of binary risk predictions and its test (private)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.polynomial import polynomial as npoly
from scipy.integrate import quad
from scipy.optimize import brentq, minimize
from scipy.stats import chi2

from ..validation import CalibrationInputError
from ._inputs import binary_risks, refuse_certain

__all__ = ["CalibrationBelt", "calibration_belt"]


@dataclass(frozen=True)
class CalibrationBelt:
    """The calibration belt (Finazzi et al. 2011; Nattino, Finazzi & Bertolini 2014).

    Attributes
    ----------
    degree : int
        Degree ``m`` of the polynomial in ``logit(p)`` chosen by forward selection.
    coefficients : numpy.ndarray, shape (degree + 1,)
        ``beta_0 .. beta_m`` of ``logit P(y = 1) = sum_j beta_j logit(p)^j`` (the
        bisector is ``(0, 1, 0, ...)``).
    grid : numpy.ndarray, shape (G,)
        Predicted risks where the belt is evaluated, from the smallest to the
        largest risk of the data.
    lower, upper : numpy.ndarray, shape (L, G)
        The belt: one row per confidence level, the smallest and largest
        probability of the event at each grid risk over the confidence region of
        the coefficients.
    confidence_levels : tuple of float
        The levels of the rows of ``lower`` and ``upper``, as given.
    statistic : float
        Likelihood-ratio statistic of the fitted polynomial against the bisector.
    p_value : float
        The p-value of the calibration test, from the null distribution of the
        statistic given the forward selection (Nattino, Finazzi & Bertolini 2014).
    significance : float
        ``1 -`` the level of the likelihood-ratio tests of the forward selection.
    curve : numpy.ndarray, shape (G,)
        The fitted calibration curve at ``grid``.
    """

    degree: int
    coefficients: np.ndarray
    grid: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence_levels: tuple[float, ...]
    statistic: float
    p_value: float
    significance: float
    curve: np.ndarray

    def deviations(self, level: float | None = None) -> list[tuple[float, float, str]]:
        """Ranges of risk where the belt at ``level`` excludes the bisector.

        Parameters
        ----------
        level : float, optional
            One of ``confidence_levels`` (default: the largest).

        Returns
        -------
        list of (float, float, str)
            ``(from, to, kind)`` with ``kind`` ``"over"`` where the belt lies below
            the bisector (the model over-estimates the risk: fewer events than
            predicted) and ``"under"`` where it lies above (under-estimation).
            Range ends between two grid risks are the crossing of the straight
            lines through the neighbouring belt values and the bisector; a range
            open at an end of the grid ends at the smallest or largest risk.
        """
        levels = list(self.confidence_levels)
        if level is None:
            row = int(np.argmax(levels))
        else:
            matches = [i for i, v in enumerate(levels) if math.isclose(v, float(level))]
            if not matches:
                raise CalibrationInputError(
                    f"level {level!r} is not one of the belt's confidence_levels {levels}"
                )
            row = matches[0]
        out = [(a, b, "under") for a, b in _ranges(self.grid, self.lower[row] - self.grid)]
        out += [(a, b, "over") for a, b in _ranges(self.grid, self.grid - self.upper[row])]
        out.sort()
        return out

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers and lists, with the deviations per level."""
        return {
            "degree": self.degree,
            "coefficients": self.coefficients.tolist(),
            "grid": self.grid.tolist(),
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "confidence_levels": list(self.confidence_levels),
            "statistic": self.statistic,
            "p_value": self.p_value,
            "significance": self.significance,
            "curve": self.curve.tolist(),
            "deviations": {
                str(v): [list(d) for d in self.deviations(v)] for v in self.confidence_levels
            },
        }


def _ranges(x: np.ndarray, d: np.ndarray) -> list[tuple[float, float]]:
    """Ranges of x where d > 0, ends interpolated linearly between grid points."""
    pos = d > 0
    out: list[tuple[float, float]] = []
    i, n = 0, x.shape[0]
    while i < n:
        if not pos[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and pos[j + 1]:
            j += 1
        a = float(x[0]) if i == 0 else _cross(x[i - 1], x[i], d[i - 1], d[i])
        b = float(x[-1]) if j == n - 1 else _cross(x[j], x[j + 1], d[j], d[j + 1])
        out.append((a, b))
        i = j + 1
    return out


def _cross(x0: float, x1: float, d0: float, d1: float) -> float:
    return float(x0 + (x1 - x0) * d0 / (d0 - d1))


# -- the null distribution of the statistic ----------------------------------------


def _statistic_cdf(t: float, m: int, significance: float) -> float:
    """CDF of the test statistic given that forward selection stopped at degree ``m``.

    Validation on an independent sample (selection started at degree 1): the
    distributions derived by Nattino, Finazzi & Bertolini (2014), with
    ``k = chi2_1`` quantile at ``significance`` and ``a = 1 - significance``.
    """
    a = 1.0 - significance
    k = float(chi2.ppf(significance, 1))
    if t <= (m - 1) * k:
        return 0.0
    if m == 1:
        v = float(chi2.cdf(t, 2))
    elif m == 2:
        v = (
            float(chi2.cdf(t, 1))
            - 1.0
            + a
            - math.sqrt(2.0 / math.pi) * math.exp(-t / 2.0) * (math.sqrt(t) - math.sqrt(k))
        ) / a
    elif m == 3:
        if t - k <= k:
            return 0.0
        i1 = quad(lambda u: (chi2.cdf(t - u, 1) - 1.0 + a) * chi2.pdf(u, 1), k, t - k)[0]
        i2 = quad(lambda u: (math.sqrt(t - u) - math.sqrt(k)) / math.sqrt(u), k, t - k)[0]
        v = (i1 - math.exp(-t / 2.0) / math.pi * i2) / a**2
    else:
        sk = math.sqrt(k)

        def f(r: float) -> float:
            q = r * r / k
            return (
                r
                * r
                * (math.exp(-r * r / 2.0) - math.exp(-t / 2.0))
                * (
                    -math.pi * sk / (2.0 * r)
                    + 2.0 * sk / r * math.asin((q - 1.0) ** -0.5)
                    - 2.0 * math.atan((1.0 - 2.0 / q) ** -0.5)
                    + 2.0 * sk / r * math.atan((q - 2.0) ** -0.5)
                    + 2.0 * math.atan(r / sk * math.sqrt(q - 2.0))
                    - 2.0 * sk / r * math.atan(math.sqrt(q - 2.0))
                )
            )

        v = (2.0 / (math.pi * a**2)) ** 1.5 * quad(f, math.sqrt(3.0 * k), math.sqrt(t))[0]
    return min(max(v, 0.0), 1.0)


def _statistic_quantile(level: float, m: int, significance: float) -> float:
    k = float(chi2.ppf(significance, 1))
    lo = (m - 1) * k
    hi = max(40.0, lo + 40.0)
    while _statistic_cdf(hi, m, significance) < level:
        hi *= 2.0
    return float(brentq(lambda t: _statistic_cdf(t, m, significance) - level, lo, hi, xtol=1e-12))


# -- polynomial logistic fits -------------------------------------------------------


class _Poly:
    """Log-likelihood of logistic regression on powers of ``x / s`` (scaled basis)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, w: np.ndarray | None, m: int) -> None:
        self.s = max(float(np.max(np.abs(x))), 1e-300)
        self.u = x / self.s
        # powers 0 .. 2m of u, one row per power (contiguous rows for the products)
        P = np.empty((2 * m + 1, self.u.shape[0]))
        P[0] = 1.0
        for k in range(1, 2 * m + 1):
            np.multiply(P[k - 1], self.u, out=P[k])
        self.P = P
        self.y = y
        self.w = np.ones_like(y) if w is None else w
        self.wy = self.w * y

    def eval(self, g: np.ndarray, hessian: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
        """``(loglik, gradient, Hessian)`` at scaled coefficients ``g``."""
        d = g.shape[0]
        X = self.P[:d]
        eta = g @ X
        # log(1 + e^eta) and the probability, stable on both sides
        e = np.exp(-np.abs(eta))
        ll = float(np.dot(self.wy, eta) - np.dot(self.w, np.maximum(eta, 0.0) + np.log1p(e)))
        pi = np.where(eta >= 0.0, 1.0, e) / (1.0 + e)
        grad = X @ (self.wy - self.w * pi)
        if not hessian:
            return ll, grad, np.empty((0, 0))
        mom = self.P[: 2 * d - 1] @ (self.w * pi * (1.0 - pi))
        H = -mom[np.add.outer(np.arange(d), np.arange(d))]
        return ll, grad, H

    def fit(self, start: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        g = start.astype(np.float64).copy()
        ll, grad, H = self.eval(g)
        for _ in range(100):
            step = np.linalg.solve(H, -grad)
            t = 1.0
            while True:
                g_new = g + t * step
                ll_new, grad_new, H_new = self.eval(g_new)
                if ll_new >= ll - 1e-12 * abs(ll) or t < 1e-8:
                    break
                t *= 0.5
            done = abs(ll_new - ll) <= 1e-13 * max(abs(ll), 1.0)
            g, ll, grad, H = g_new, ll_new, grad_new, H_new
            if done:
                break
        return g, ll, H


def _sigmoid_derivatives(order: int) -> list[np.ndarray]:
    """Coefficients of the polynomials ``D_j`` with ``sigma^(j) = D_j(sigma)``, j = 0..order."""
    out = [np.array([0.0, 1.0])]
    base = np.array([0.0, 1.0, -1.0])  # sigma (1 - sigma)
    for _ in range(order):
        out.append(npoly.polymul(npoly.polyder(out[-1]), base))
    return out


_ORDER = 10  # terms of the expansion: derivatives 2 .. _ORDER of log(1 + e^eta)
_SIGMA_DER = _sigmoid_derivatives(_ORDER)
# sup over eta of the remainder's derivative psi^(ORDER + 1) = sigma^(ORDER), with margin
_SUP_REMAINDER = 1.01 * float(
    np.max(np.abs(npoly.polyval(np.linspace(0.0, 1.0, 100001), _SIGMA_DER[_ORDER])))
)


def _windows(v: np.ndarray, width: int) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(v, width)


class _Expansion:
    """The log-likelihood of ``_Poly`` expanded around its maximum, exact up to a bound.

    ``loglik(g_hat + delta) = loglik(g_hat) + S . delta - sum_k M_k . conv^k(delta) / k!
    - R`` with ``M_k[j] = sum_i w_i psi^(k)(eta_i) u_i^j`` (``psi = log(1 + e^eta)``):
    the powers of ``d_i = sum_a delta_a u_i^a`` are polynomials in ``u_i``, so every
    term is a product of a few moments computed in one pass over the rows. The
    remainder is at most ``W sup|psi^(K+1)| D^(K+1) / (K+1)!`` with ``D`` the largest
    ``|d(u)|`` over the range of ``u``.
    """

    def __init__(self, model: _Poly, g_hat: np.ndarray, ll_hat: float) -> None:
        m = g_hat.shape[0] - 1
        self.m, self.g_hat, self.ll_hat = m, g_hat, ll_hat
        K = _ORDER
        cols = K * m + 1
        M = np.zeros((K + 1, cols))
        S = np.zeros(m + 1)
        u_all, w_all, y_all = model.u, model.w, model.y
        step = 1 << 15
        for a in range(0, u_all.shape[0], step):
            u = u_all[a : a + step]
            w = w_all[a : a + step]
            V = np.vander(u, cols, increasing=True)
            sig = 0.5 * (1.0 + np.tanh(0.5 * (V[:, : m + 1] @ g_hat)))
            S += (w * (y_all[a : a + step] - sig)) @ V[:, : m + 1]
            Psi = np.stack([w * npoly.polyval(sig, _SIGMA_DER[k - 1]) for k in range(2, K + 1)])
            M[2:] += Psi @ V
        self.M, self.S = M, S
        # the terms as three linear maps of the powers of delta (Hankel blocks of M)
        d = m + 1
        fk = [float(math.factorial(k)) for k in range(K + 1)]
        self.A_value = np.concatenate([M[k, : k * m + 1] / fk[k] for k in range(2, K + 1)])
        self.A_grad = np.hstack(
            [(k / fk[k]) * _windows(M[k], (k - 1) * m + 1)[:d] for k in range(2, K + 1)]
        )
        self.A_hess = np.hstack(
            [
                (k * (k - 1) / fk[k]) * _windows(M[k], (k - 2) * m + 1)[: 2 * d - 1]
                for k in range(2, K + 1)
            ]
        )
        self.W = float(w_all.sum())
        self.u_range = (float(u_all.min()), float(u_all.max()))
        self.edges = np.linspace(self.u_range[0], self.u_range[1], 257)
        self.bin_weight = np.histogram(u_all, bins=self.edges, weights=w_all)[0]

    def _powers(self, delta: np.ndarray) -> list[np.ndarray]:
        out = [np.ones(1), delta]
        for _ in range(2, _ORDER + 1):
            out.append(np.convolve(out[-1], delta))
        return out

    def eval(self, g: np.ndarray, hessian: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
        d = g.shape[0]
        delta = g - self.g_hat
        c = self._powers(delta)
        ll = self.ll_hat + float(self.S @ delta) - float(self.A_value @ np.concatenate(c[2:]))
        grad = self.S - self.A_grad @ np.concatenate(c[1:-1])
        h = -(self.A_hess @ np.concatenate(c[:-2]))
        H = h[np.add.outer(np.arange(d), np.arange(d))]
        return ll, grad, H

    def error_bound(self, g: np.ndarray) -> float:
        """Bound on the error of the expansion's value and gradient at ``g``.

        ``sum_i w_i |d(u_i)|^(K+1)`` is bounded bin by bin over a histogram of ``u``
        (weight of the bin times the largest ``|d|`` over the bin, found at the bin's
        ends and at the roots of ``d'`` inside it); ``|u| <= 1`` bounds the powers.
        """
        delta = g - self.g_hat
        lo, hi = self.u_range
        edges = self.edges
        vals = np.abs(npoly.polyval(edges, delta))
        binmax = np.maximum(vals[:-1], vals[1:])
        der = npoly.polyder(delta)
        if der.shape[0] > 1 and np.any(der != 0):
            for r in np.roots(der[::-1]):
                x = float(r.real)
                if abs(r.imag) <= 1e-6 * (1.0 + abs(x)) and lo < x < hi:
                    b = min(max(int(np.searchsorted(edges, x)) - 1, 0), binmax.shape[0] - 1)
                    binmax[b] = max(binmax[b], abs(float(npoly.polyval(x, delta))))
        K = _ORDER
        value = float(self.bin_weight @ binmax ** (K + 1)) / math.factorial(K + 1)
        gradient = float(self.bin_weight @ binmax**K) / math.factorial(K)
        return _SUP_REMAINDER * max(value, gradient)


def _check_args(
    confidence_levels: Any, max_degree: Any, grid: Any, significance: Any
) -> tuple[tuple[float, ...], int, int, float]:
    try:
        levels = tuple(float(v) for v in np.atleast_1d(np.asarray(confidence_levels, float)))
    except (TypeError, ValueError):
        raise CalibrationInputError(
            f"confidence_levels must be numbers in (0, 1), like (0.8, 0.95); got "
            f"{confidence_levels!r}"
        ) from None
    if not levels or not all(0.0 < v < 1.0 for v in levels):
        raise CalibrationInputError(
            f"confidence_levels must be numbers in (0, 1), like (0.8, 0.95); got "
            f"{confidence_levels!r}"
        )
    if (
        isinstance(max_degree, bool)
        or not isinstance(max_degree, (int, np.integer))
        or not 1 <= int(max_degree) <= 4
    ):
        raise CalibrationInputError(
            f"max_degree must be an integer from 1 to 4 (the null distribution of the "
            f"belt's test is known up to degree 4); got {max_degree!r}"
        )
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or int(grid) < 2:
        raise CalibrationInputError(
            f"grid must be an integer of at least 2, like 200; got {grid!r}"
        )
    try:
        q = float(significance)
    except (TypeError, ValueError):
        q = math.nan
    if not 0.0 < q < 1.0:
        raise CalibrationInputError(
            f"significance must be in (0, 1), like 0.95 (the forward selection adds a degree "
            f"when its likelihood-ratio test is significant at 1 - significance); got "
            f"{significance!r}"
        )
    return levels, int(max_degree), int(grid), q


def _refuse_data(p: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
    ww = np.ones_like(y) if w is None else w
    events = float(np.dot(ww, y))
    non_events = float(ww.sum()) - events
    if events < 2 or non_events < 2:
        raise CalibrationInputError(
            f"the calibration belt needs at least 2 events and 2 non-events; labels have "
            f"{events:g} events and {non_events:g} non-events"
        )
    pos = (y > 0) & (ww > 0)
    neg = (y == 0) & (ww > 0)
    if float(np.max(p[neg])) <= float(np.min(p[pos])):
        raise CalibrationInputError(
            "probs separate the outcomes (no non-event has a higher risk than any event): "
            "the polynomial logistic fit of the calibration belt has no maximum"
        )


_TOLERANCE = 1e-9  # largest error of the expansion's log-likelihood and gradient


def _extreme(
    model: _Poly | _Expansion,
    g0: np.ndarray,
    c: np.ndarray,
    target: float,
    start: np.ndarray,
    mu0: float,
) -> tuple[np.ndarray, float, bool]:
    """Maximise ``c . g`` subject to ``loglik(g) = target`` (Newton on the KKT system).

    Stationarity ``c + mu grad = 0`` with ``mu > 0`` and the constraint; the start is
    the previous grid point's solution (or the quadratic approximation). Returns the
    solution, its multiplier and whether Newton's steps converged.
    """
    d = g0.shape[0]
    g, mu = start.copy(), mu0
    converged = False
    for _ in range(60):
        ll, grad, H = model.eval(g)
        F = np.concatenate([c + mu * grad, [ll - target]])
        J = np.zeros((d + 1, d + 1))
        J[:d, :d] = mu * H
        J[:d, d] = grad
        J[d, :d] = grad
        try:
            delta = np.linalg.solve(J, -F)
        except np.linalg.LinAlgError:
            break
        scale = 1.0
        g_new, mu_new = g + delta[:d], mu + float(delta[d])
        while mu_new <= 0 and scale > 1e-6:
            scale *= 0.5
            g_new, mu_new = g + scale * delta[:d], mu + scale * float(delta[d])
        g, mu = g_new, mu_new
        if scale == 1.0 and np.max(np.abs(delta[:d])) <= 1e-10 * (1.0 + np.max(np.abs(g))):
            converged = bool(np.all(np.isfinite(g)))
            break
    return g, mu, converged


def _extreme_slsqp(
    model: _Poly, c: np.ndarray, target: float, g_fit: np.ndarray, risk: float
) -> np.ndarray:
    """The same optimum by SLSQP from the fit, when Newton's steps do not converge."""
    cons = {
        "type": "ineq",
        "fun": lambda v: model.eval(v, hessian=False)[0] - target,
        "jac": lambda v: model.eval(v, hessian=False)[1],
    }
    res = minimize(
        lambda v: -float(c @ v),
        g_fit,
        jac=lambda v: -c,
        constraints=[cons],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    ll, grad, _ = model.eval(np.asarray(res.x, dtype=np.float64), hessian=False)
    # the optimum lies on the boundary, where the gradient points against c
    cos = -float(grad @ c) / max(float(np.linalg.norm(grad) * np.linalg.norm(c)), 1e-300)
    if abs(ll - target) > 1e-7 * max(1.0, abs(target)) or not cos > 1.0 - 1e-8:
        raise CalibrationInputError(
            f"the calibration belt at risk {risk:.6g} did not converge (the likelihood "
            "region of the polynomial is too flat there); pass a smaller max_degree or "
            "restrict the grid to the range of the data"
        )
    return np.asarray(res.x, dtype=np.float64)


def calibration_belt(
    probs: Any,
    labels: Any,
    *,
    confidence_levels: Any = (0.8, 0.95),
    max_degree: int = 4,
    grid: int = 200,
    significance: float = 0.95,
    sample_weight: Any = None,
    classes: Any = None,
) -> CalibrationBelt:
    """The calibration belt and its test for binary risk predictions.

    Finazzi et al. (2011) model the probability of the event as a polynomial in the
    logit of the predicted risk, ``logit P(y = 1) = b0 + b1 g + ... + bm g^m`` with
    ``g = logit(p)``; the bisector (perfect calibration) is ``b = (0, 1, 0, ...)``.
    The degree ``m`` is chosen by forward selection: starting from ``m = 1``, a
    degree is added while the likelihood-ratio test of ``m + 1`` against ``m`` is
    significant (its chi-square(1) CDF at least ``significance``), up to
    ``max_degree``. The calibration test is the likelihood ratio of the selected
    polynomial against the bisector; its p-value comes from the null distribution of
    the statistic given the selection (Nattino, Finazzi & Bertolini 2014), not from
    a chi-square. The belt at level ``1 - alpha`` is the range of the curve over the
    coefficients whose log-likelihood is within ``c / 2`` of the maximum, ``c``
    the ``1 - alpha`` quantile of that same null distribution.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)``, strictly between 0 and 1 (or both columns of
        a binary classifier).
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    confidence_levels : sequence of float, default (0.8, 0.95)
        Levels of the belts (the two shades of the usual plot).
    max_degree : int, default 4
        Largest degree of the forward selection (1 to 4: the null distribution is
        known up to 4).
    grid : int, default 200
        Number of risks where the belt is evaluated: half equally spaced in the
        logit and half in the risk, between the smallest and largest risk, as in
        the authors' R package givitiR.
    significance : float, default 0.95
        ``1 -`` the level of the likelihood-ratio tests of the forward selection
        (givitiR's ``thres``).
    sample_weight : array-like, shape (n,), optional
        Non-negative frequency weights of the rows in the log-likelihood.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    CalibrationBelt
        Degree, coefficients, the belt on the grid, the test and ``deviations()``.

    Raises
    ------
    CalibrationInputError
        Risks of exactly 0 or 1, fewer than 2 events or non-events, or risks that
        separate the outcomes completely.

    Notes
    -----
    This is the belt for validation on an independent sample (givitiR's
    ``devel = "external"``): the selection starts at degree 1. The fits are
    Newton's method on the polynomial basis (powers of ``logit(p)`` scaled by its
    largest absolute value, coefficients reported in the unscaled basis). Each end
    of the belt at a grid risk solves the optimum of a linear function over the
    likelihood region exactly (Newton's method on its Lagrange conditions, started
    from the previous grid risk), with no quadratic (Wald) approximation of the
    region. The log-likelihood there is evaluated through its expansion to ten
    terms around the fit, whose coefficients are moments of the data computed in
    one pass; a solution is kept only where a proven bound on the expansion's
    error in value and gradient is below 1e-9, and is solved on every row
    otherwise (small samples, wide belts). Where Newton's steps do not converge,
    SLSQP from the fit takes over, and its answer is kept only on the boundary of
    the region with the gradient against the direction; otherwise a
    ``CalibrationInputError`` names the risk. The givitiR package solves each end
    on every row with ``rootSolve::multiroot`` (tolerance 1e-2) and
    ``alabama::constrOptim.nl``; both answer the same optimisation problem.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.clinical import calibration_belt
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 2000)
    >>> y = rng.binomial(1, np.clip(1.3 * p - 0.05, 0, 1))  # risks too moderate
    >>> belt = calibration_belt(p, y, grid=50)
    >>> belt.degree, round(belt.statistic, 1), belt.p_value < 0.001
    (3, 161.7, True)
    >>> [(round(a, 2), round(b, 2), kind) for a, b, kind in belt.deviations(0.95)]
    [(0.54, 0.95, 'under')]
    """
    levels, max_deg, n_grid, q = _check_args(confidence_levels, max_degree, grid, significance)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    refuse_certain(p, "the calibration belt")
    _refuse_data(p, y, w)
    x = np.log(p) - np.log1p(-p)
    model = _Poly(x, y, w, max_deg)
    s = model.s

    # forward selection from degree 1
    start = np.array([0.0, s])
    g_fit, ll_fit, H_fit = model.fit(start)
    m = 1
    for deg in range(2, max_deg + 1):
        g_new, ll_new, H_new = model.fit(np.append(g_fit, 0.0))
        if chi2.cdf(2.0 * (ll_new - ll_fit), 1) < q:
            break
        g_fit, ll_fit, H_fit, m = g_new, ll_new, H_new, deg

    ww = np.ones_like(y) if w is None else w
    ll_bis = float(np.dot(ww, y * np.log(p) + (1.0 - y) * np.log1p(-p)))
    stat = max(2.0 * (ll_fit - ll_bis), 0.0)
    p_value = 1.0 - _statistic_cdf(stat, m, q)
    beta = g_fit / s ** np.arange(m + 1)

    # the grid of givitiR: half equally spaced in logit, half in probability
    half = int(round(n_grid / 2.0))
    pg = np.linspace(float(p.min()), float(p.max()), n_grid - half)
    xg = np.sort(
        np.concatenate(
            [np.linspace(float(x.min()), float(x.max()), half), np.log(pg) - np.log1p(-pg)]
        )
    )
    risks = 0.5 * (1.0 + np.tanh(0.5 * xg))
    C = np.vander(xg / s, m + 1, increasing=True)
    curve = 0.5 * (1.0 + np.tanh(0.5 * (C @ g_fit)))

    cov = np.linalg.inv(-H_fit)
    expansion = _Expansion(model, g_fit, ll_fit)
    lower = np.empty((len(levels), xg.shape[0]))
    upper = np.empty_like(lower)
    for li, level in enumerate(levels):
        kq = _statistic_quantile(level, m, q)
        target = ll_fit - kq / 2.0
        for sign, out in ((1.0, upper), (-1.0, lower)):
            prev: np.ndarray | None = None
            mu_prev = 0.0
            for j in range(xg.shape[0]):
                c = sign * C[j]
                sc = cov @ c
                r = math.sqrt(kq / float(c @ sc))
                if prev is None:
                    st, mu0 = g_fit + r * sc, 1.0 / r
                else:
                    st, mu0 = prev, mu_prev
                g_opt, mu, ok = _extreme(expansion, g_fit, c, target, st, mu0)
                if not ok or expansion.error_bound(g_opt) > _TOLERANCE:
                    if ok:
                        st, mu0 = g_opt, mu
                    g_opt, mu, ok = _extreme(model, g_fit, c, target, st, mu0)
                    if not ok:
                        g_opt = _extreme_slsqp(model, c, target, g_fit, float(risks[j]))
                        mu = 1.0 / r
                prev, mu_prev = g_opt, mu
                out[li, j] = 0.5 * (1.0 + np.tanh(0.5 * float(C[j] @ g_opt)))
    return CalibrationBelt(
        degree=m,
        coefficients=beta,
        grid=risks,
        lower=lower,
        upper=upper,
        confidence_levels=levels,
        statistic=float(stat),
        p_value=float(min(max(p_value, 0.0), 1.0)),
        significance=q,
        curve=curve,
    )
