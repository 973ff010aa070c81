"""Moderate calibration: a flexible calibration curve with a pointwise band."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from ..inference.calibration_world import _logistic_fit, _rcs_basis
from ..validation import CalibrationInputError, check_integer, check_positive
from ._inputs import binary_risks, check_confidence, refuse_certain

__all__ = ["FlexibleCalibrationCurve", "flexible_calibration_curve"]

Method = Literal["loess", "rcs"]

#: Harrell's (2015, §2.4.6, Table 2.3) knot quantiles of a restricted cubic spline
#: with 3 to 7 knots.
KNOT_QUANTILES: dict[int, tuple[float, ...]] = {
    3: (0.10, 0.50, 0.90),
    4: (0.05, 0.35, 0.65, 0.95),
    5: (0.05, 0.275, 0.50, 0.725, 0.95),
    6: (0.05, 0.23, 0.41, 0.59, 0.77, 0.95),
    7: (0.025, 0.1833, 0.3417, 0.50, 0.6583, 0.8167, 0.975),
}

#: Largest ``(points evaluated) x (neighbourhood size)`` for which the loess curve is
#: computed exactly at every observed risk (above it: on the grid, then interpolated).
EXACT_WORK = 5e6


@dataclass(frozen=True)
class FlexibleCalibrationCurve:
    """A flexible calibration curve: the observed event rate as a function of the risk.

    Attributes
    ----------
    method : str
        ``"loess"`` or ``"rcs"``.
    grid : ndarray of shape (G,)
        Predicted risks where the curve is evaluated, evenly spaced from the smallest
        to the largest observed risk.
    estimate : ndarray of shape (G,)
        The estimated observed proportion at each grid risk (loess: clipped to
        ``[0, 1]`` only in ``lower``/``upper``, the estimate is the local fit as is).
    lower, upper : ndarray of shape (G,)
        Pointwise confidence band at level ``confidence``, within ``[0, 1]``.
    confidence : float
        Level of the band.
    span, degree, n_knots : float, int, int
        The settings used (``n_knots`` only for ``"rcs"``, ``span`` and ``degree``
        only for ``"loess"``).
    knots : ndarray or None
        The knots (on the logit scale) of ``"rcs"``; None for loess.

    Calling the curve, ``curve(p)``, gives the observed proportion at risks ``p``:
    exact for ``"rcs"``; for ``"loess"``, cubic interpolation of the grid values
    (``scipy.interpolate.CubicSpline``, natural ends) inside the grid and the end
    values outside it.
    """

    method: str
    grid: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float = 0.95
    span: float = 0.75
    degree: int = 2
    n_knots: int = 5
    knots: np.ndarray | None = None
    _coef: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __call__(self, p: Any) -> np.ndarray:
        """The estimated observed proportion at predicted risks ``p``."""
        x = np.asarray(p, dtype=np.float64)
        if self.method == "rcs" and self._coef is not None and self.knots is not None:
            lp = logit(np.clip(x, 1e-300, 1 - 1e-16))
            B = _design(lp.reshape(-1), self.knots)
            return np.asarray(expit(B @ self._coef)).reshape(x.shape)
        return _interpolate(self.grid, self.estimate, x)

    def to_dict(self) -> dict[str, Any]:
        """The curve as JSON-ready numbers and lists."""
        return {
            "method": self.method,
            "grid": self.grid.tolist(),
            "estimate": self.estimate.tolist(),
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "confidence": self.confidence,
            "span": self.span,
            "degree": self.degree,
            "n_knots": self.n_knots,
            "knots": None if self.knots is None else self.knots.tolist(),
        }


def _interpolate(grid: np.ndarray, values: np.ndarray, x: np.ndarray) -> np.ndarray:
    if grid.shape[0] < 2:
        return np.full(x.shape, float(values[0]) if values.size else math.nan)
    if grid.shape[0] < 4:
        return np.interp(x, grid, values)
    from scipy.interpolate import CubicSpline

    spline = CubicSpline(grid, values, bc_type="natural", extrapolate=False)
    out = spline(np.clip(x, grid[0], grid[-1]))
    return np.asarray(out)


def _design(lp: np.ndarray, knots: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(lp), _rcs_basis(lp, knots)])


# --------------------------------------------------------------------------- loess


class _Loess:
    """Local polynomial regression of ``y`` on ``x`` (Cleveland, Grosse & Shyu 1992).

    The neighbourhood of a point ``x0`` is its ``q = floor(n * span)`` nearest
    observed risks (all of them when ``span >= 1``, the distance then multiplied by
    ``span``); each gets the tricube weight ``(1 - (|x - x0| / d)^3)^3``, ``d`` the
    distance to the ``q``-th nearest, times its sample weight; the fit is weighted
    least squares of a polynomial of ``degree`` in ``r = (x - x0) / d`` (the gaussian
    family of R's ``loess``, no robustness iterations); its value at ``x0`` is the
    constant term.

    Sorted risks make every neighbourhood a contiguous window, found by a binary
    search. The sums over a window are split into blocks of about ``sqrt(n)``
    sorted rows: on one side of ``x0`` the tricube weight is a polynomial of degree
    9 in ``r``, so the window sums of a whole block follow exactly from the block's
    power sums about its own centre (a Taylor shift of that polynomial, every term
    bounded because ``|r| <= 1`` and the block is narrow); only the rows of the at
    most three blocks cut by the window ends or by ``x0`` are summed one by one. A
    point costs ``O(sqrt(n))`` after an ``O(n)`` set-up.
    """

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        w: np.ndarray | None,
        span: float,
        degree: int,
        order: np.ndarray | None = None,
    ) -> None:
        # any order of tied risks gives the same sums
        order = np.argsort(x) if order is None else order
        self.order = order
        xs = x[order]
        n = xs.shape[0]
        self.x, self.n, self.degree, self.span = xs, n, degree, span
        self.w = np.ones(n) if w is None else w[order]
        self.y = y[order]
        self.q = n if span >= 1 else max(int(math.floor(n * span)), 1)
        if self.q < n:
            self.pair = xs[: n - self.q] + xs[self.q :]
        self.blocked = n >= _BLOCKED_FROM
        if self.blocked:
            self._blocks()

    def _blocks(self) -> None:
        n, deg = self.n, self.degree
        b = max(int(math.ceil(math.sqrt(n))), 16)
        J = -(-n // b)
        xs = np.empty(J * b)
        xs[:n] = self.x
        xs[n:] = self.x[-1]
        s3 = np.zeros((3, J * b))  # w, w y and w^2 of each row
        s3[0, :n] = self.w
        np.multiply(self.w, self.y, out=s3[1, :n])
        np.multiply(self.w, self.w, out=s3[2, :n])
        stacked = s3.reshape(3, J, b).transpose(1, 0, 2)  # (J, 3, b) view, by block
        xs = xs.reshape(J, b)
        first = self.x[np.arange(J) * b]
        last = self.x[np.minimum(np.arange(J) * b + b - 1, n - 1)]
        centre = (first + last) / 2
        t = xs - centre[:, None]
        e1 = 9 + 2 * deg  # degree of W r^k, k <= 2 deg
        e2 = 18 + 2 * deg  # degree of W^2 r^k
        # power sums sum_i (w_i, w_i y_i, w_i^2) t_i^m of each block, m <= e1, by
        # chunks of blocks (a Vandermonde chunk of about 8 MB times the three weights)
        AA = np.empty((J, 3, e1 + 1))
        chunk = max(1, int(1e6 // (b * (e1 + 1))))
        with threadpool_limits(limits=1, user_api="blas"):
            for c0 in range(0, J, chunk):
                c1 = min(J, c0 + chunk)
                V = np.empty((c1 - c0, b, e1 + 1))
                V[:, :, 0] = 1.0
                V[:, :, 1:] = t[c0:c1, :, None]
                np.cumprod(V, axis=2, out=V)
                np.matmul(stacked[c0:c1], V, out=AA[c0:c1])
        self.halfwidth = (last - first) / 2
        self.b, self.J = b, J
        self.first, self.last, self.centre = first, last, centre
        self.e1, self.e2 = e1, e2
        self.AA = AA.reshape(J, 3 * (e1 + 1))
        self.Qf = {s: _shift_tensor(s, deg, 1).reshape(2 * deg + 1, -1) for s in (-1, 1)}
        # the sums of W^2 r^k use the power sums up to e1 only: exact to rounding for
        # blocks narrower than _NARROW d (the next term is below 0.05^14 of the sum);
        # wider blocks are summed row by row
        self.Q2f = {
            s: _shift_tensor(s, deg, 2)[:, :, : e1 + 1].reshape(2 * deg + 1, -1) for s in (-1, 1)
        }

    def window(self, x0: float) -> tuple[int, int, float]:
        n, q = self.n, self.q
        xs = self.x
        if q >= n:
            d = max(x0 - xs[0], xs[-1] - x0)
            if self.span > 1:
                d *= self.span
            return 0, n, d
        lo = int(np.searchsorted(self.pair, 2 * x0, side="left"))
        hi = lo + q
        return lo, hi, max(x0 - xs[lo], xs[hi - 1] - x0)

    def _direct(self, lo: int, hi: int, x0: float, d: float, out: np.ndarray) -> None:
        if hi <= lo:
            return
        deg = self.degree
        r = (self.x[lo:hi] - x0) / d
        u = np.minimum(np.abs(r), 1.0)
        W = 1.0 - u * u * u
        W = W * W * W * self.w[lo:hi]
        Wy = W * self.y[lo:hi]
        W2 = W * W
        pw = np.ones_like(r)
        for k in range(2 * deg + 1):
            out[0, k] += float(np.dot(W, pw))
            if k <= deg:
                out[1, k] += float(np.dot(Wy, pw))
            out[2, k] += float(np.dot(W2, pw))
            pw = pw * r

    def _shifted(
        self, j0: int, j1: int, side: int, x0: float, d: float, out: np.ndarray, se: bool
    ) -> None:
        if j1 < j0:
            return
        deg, e1 = self.degree, self.e1
        sl = slice(j0, j1 + 1)
        M = self.AA[sl]
        if se:
            wide = self.halfwidth[sl] > _NARROW * d
            if wide.any():
                for j in np.flatnonzero(wide) + j0:
                    self._direct(j * self.b, min((j + 1) * self.b, self.n), x0, d, out)
                M = M * (~wide)[:, None]
        E = self.e2 if se else e1
        R = np.empty((j1 + 1 - j0, E + 1))
        R[:, 0] = 1.0
        R[:, 1:] = ((self.centre[sl] - x0) / d)[:, None]
        np.cumprod(R, axis=1, out=R)
        G = R.T @ M  # sum_j rho_j^s (power sums of t of block j)
        inv = (1.0 / d) ** np.arange(e1 + 1)
        g = G[: e1 + 1, : e1 + 1] * inv
        gy = G[: e1 + 1, e1 + 1 : 2 * e1 + 2] * inv
        Qf = self.Qf[side]
        out[0, : 2 * deg + 1] += Qf @ g.ravel()
        out[1, : deg + 1] += Qf[: deg + 1] @ gy.ravel()
        if se:
            g2 = G[:, 2 * e1 + 2 :] * inv
            out[2, : 2 * deg + 1] += self.Q2f[side] @ g2.ravel()

    def sums(self, x0: float, se: bool = True) -> np.ndarray:
        """Rows: the window sums of ``W r^k``, ``W y r^k`` and ``W^2 r^k`` at ``x0``."""
        lo, hi, d = self.window(x0)
        deg = self.degree
        out = np.zeros((3, 2 * deg + 1))
        if d <= 0:  # every neighbour at x0 itself: equal weights on the ties
            xs = self.x[lo:hi]
            on = xs == x0
            wv = self.w[lo:hi] * on
            out[0, 0] = wv.sum()
            out[1, 0] = float(np.dot(wv, self.y[lo:hi]))
            out[2, 0] = float(np.dot(wv, wv))
            return out
        if not self.blocked:
            self._direct(lo, hi, x0, d, out)
            return out
        b = self.b
        jf = -(-lo // b)  # first block inside the window
        jl = hi // b - 1 if hi < self.n else self.J - 1  # last block inside it
        if jl < jf:
            self._direct(lo, hi, x0, d, out)
            return out
        a = min(jl, int(np.searchsorted(self.last, x0, side="right")) - 1)
        bb = min(max(jf, int(np.searchsorted(self.first, x0, side="left")), a + 1), jl + 1)
        a = max(a, jf - 1)
        self._shifted(jf, a, -1, x0, d, out, se)
        self._shifted(bb, jl, 1, x0, d, out, se)
        end_full = min((jl + 1) * b, self.n)
        self._direct(lo, jf * b, x0, d, out)
        self._direct((a + 1) * b, min(bb * b, self.n), x0, d, out)
        self._direct(end_full, hi, x0, d, out)
        return out

    def fit(self, at: np.ndarray, want_se: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Local fits at ``at`` and ``sqrt(sum_i l_i(x0)^2)`` (the band's factor)."""
        # small products: BLAS threads only contend (a 23 x 1000 product took 50 ms
        # instead of 0.2 ms on a busy two-core machine)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(np.asarray(at, dtype=np.float64), want_se)

    def _fit_batch(self, at: np.ndarray, want_se: bool) -> tuple[np.ndarray, np.ndarray]:
        """The same fits, row by row over each window, for many points at once."""
        n, q, deg = self.n, self.q, self.degree
        k = deg + 1
        est = np.empty(at.shape[0])
        lev = np.full(at.shape[0], math.nan)
        xs, ws, ys = self.x, self.w, self.y
        if q >= n:
            lo = np.zeros(at.shape[0], dtype=np.intp)
            d = np.maximum(at - xs[0], xs[-1] - at) * max(self.span, 1.0)
        else:
            lo = np.searchsorted(self.pair, 2 * at, side="left")
            d = np.maximum(at - xs[lo], xs[lo + q - 1] - at)
        size = min(q, n)
        step = max(1, int(2_000_000 // size))
        offs = np.arange(size)
        for c0 in range(0, at.shape[0], step):
            c1 = min(at.shape[0], c0 + step)
            x0 = at[c0:c1, None]
            dd = d[c0:c1, None]
            idx = lo[c0:c1, None] + offs
            zero = dd[:, 0] <= 0
            r = (xs[idx] - x0) / np.where(dd > 0, dd, 1.0)
            u = np.minimum(np.abs(r), 1.0)
            W = 1.0 - u * u * u
            W = W * W * W
            if zero.any():  # every neighbour at x0 itself: equal weights on the ties
                W[zero] = (r[zero] == 0).astype(np.float64)
            W *= ws[idx]
            Wy = W * ys[idx]
            S = np.empty((c1 - c0, 2 * deg + 1))
            T = np.empty((c1 - c0, k))
            S2 = np.empty((c1 - c0, 2 * deg + 1)) if want_se else None
            W2 = W * W if want_se else None
            pw = np.ones_like(r)
            for m in range(2 * deg + 1):
                S[:, m] = np.einsum("ij,ij->i", W, pw)
                if m < k:
                    T[:, m] = np.einsum("ij,ij->i", Wy, pw)
                if S2 is not None and W2 is not None:
                    S2[:, m] = np.einsum("ij,ij->i", W2, pw)
                if m < 2 * deg:
                    pw = pw * r
            A = np.stack([S[:, a : a + k] for a in range(k)], axis=1)
            e = np.zeros((c1 - c0, k, 1))
            e[:, 0, 0] = 1.0
            try:
                g = np.linalg.solve(A, e)[:, :, 0]
            except np.linalg.LinAlgError:
                g = np.stack([np.linalg.lstsq(a, e[0], rcond=None)[0][:, 0] for a in A])
            est[c0:c1] = np.einsum("ij,ij->i", g, T)
            if S2 is not None:
                B = np.stack([S2[:, a : a + k] for a in range(k)], axis=1)
                lev[c0:c1] = np.sqrt(np.maximum(np.einsum("ij,ijk,ik->i", g, B, g), 0.0))
        return est, lev

    def _fit(self, at: np.ndarray, want_se: bool) -> tuple[np.ndarray, np.ndarray]:
        if self.q <= _DIRECT_UP_TO:
            return self._fit_batch(at, want_se)
        k = self.degree + 1
        est = np.empty(at.shape[0])
        lev = np.full(at.shape[0], math.nan)
        for i, x0 in enumerate(at):
            s = self.sums(float(x0), want_se)
            A = np.empty((k, k))
            B = np.empty((k, k))
            for r in range(k):
                A[r] = s[0, r : r + k]
                B[r] = s[2, r : r + k]
            e = np.zeros(k)
            e[0] = 1.0
            try:
                g = np.linalg.solve(A, e)
            except np.linalg.LinAlgError:
                g = np.linalg.lstsq(A, e, rcond=None)[0]
            est[i] = float(g @ s[1, :k])  # A symmetric: e1' A^-1 T
            if want_se:
                lev[i] = math.sqrt(max(float(g @ B @ g), 0.0))
        return est, lev


#: Neighbourhoods of up to this many rows are summed row by row, many points at once.
_DIRECT_UP_TO = 5_000

#: Samples from which the loess sums go through blocks (below: row by row).
_BLOCKED_FROM = 512

#: Largest block half-width, in units of the neighbourhood radius, whose sums of
#: squared weights come from its power sums (wider blocks: row by row).
_NARROW = 0.05


def _shift_tensor(side: int, degree: int, power: int) -> np.ndarray:
    """``Q[k, s, m] = c_{s+m} C(s+m, m)``, ``c`` the coefficients of ``W(r)^power r^k``.

    On the side ``side`` of ``x0`` (``-1`` left, ``+1`` right) the tricube weight is
    ``W(r) = (1 - side r^3)^3``; the window sum of ``W^power r^k`` over a block is then
    ``sum_{s,m} Q[k, s, m] rho^s sum_i (t_i / d)^m`` with ``rho`` the block centre and
    ``t_i`` the rows' offsets from it, both in units of ``d``.
    """
    from math import comb

    base = np.polynomial.polynomial.polypow([1.0, 0.0, 0.0, -float(side)], 3 * power)
    E = base.shape[0] - 1 + 2 * degree
    Q = np.zeros((2 * degree + 1, E + 1, E + 1))
    for k in range(2 * degree + 1):
        c = np.zeros(E + 1)
        c[k : k + base.shape[0]] = base
        for s in range(E + 1):
            for m in range(E + 1 - s):
                Q[k, s, m] = c[s + m] * comb(s + m, m)
    return Q


def _loess_curve(
    p: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    span: float,
    degree: int,
    grid: np.ndarray,
    z: float,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Loess]:
    lo = _Loess(p, y, w, span, degree, order)
    est, lev = lo.fit(grid, want_se=True)
    # binomial variance at the curve, sum_i l_i^2 w_i^2 m (1 - m) / (sum w)-scaled weights
    m = np.clip(est, 0.0, 1.0)
    se = np.sqrt(m * (1 - m)) * lev
    lower = np.clip(est - z * se, 0.0, 1.0)
    upper = np.clip(est + z * se, 0.0, 1.0)
    return est, lower, upper, lo


def _rcs_curve(
    p: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    n_knots: int,
    grid: np.ndarray,
    z: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    refuse_certain(p, 'the flexible calibration curve of method="rcs"')
    lp = logit(p)
    knots = np.quantile(lp, KNOT_QUANTILES[n_knots])
    if not np.all(np.diff(knots) > 0):
        raise CalibrationInputError(
            f"the predicted risks take too few distinct values for {n_knots} spline knots "
            f"(knots at the logit quantiles {KNOT_QUANTILES[n_knots]} coincide); use fewer "
            'n_knots or method="loess"'
        )
    X = _design(lp, knots)
    ww = np.ones_like(p) if w is None else w
    beta = _logistic_fit(X, y, ww)
    if beta is None:
        raise CalibrationInputError(
            "the restricted cubic spline calibration model has no finite fit (the risks "
            "separate the outcomes); use fewer n_knots"
        )
    mu = expit(X @ beta)
    H = (X * (ww * mu * (1 - mu))[:, None]).T @ X
    cov = np.linalg.pinv(H)
    G = _design(logit(grid), knots)
    eta = G @ beta
    se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", G, cov, G), 0.0))
    return expit(eta), expit(eta - z * se), expit(eta + z * se), knots, beta


def _check_curve_args(
    method: Any, span: Any, degree: Any, n_knots: Any
) -> tuple[str, float, int, int]:
    if method not in ("loess", "rcs"):
        raise CalibrationInputError(f'method must be "loess" or "rcs"; got {method!r}')
    sp = check_positive(span, "span")
    deg = check_integer(degree, "degree", minimum=0, maximum=2)
    nk = check_integer(n_knots, "n_knots", minimum=3, maximum=7)
    return str(method), sp, deg, nk


def _curve(
    p: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    method: str,
    span: float,
    degree: int,
    n_knots: int,
    n_grid: int,
    confidence: float,
    order: np.ndarray | None = None,
) -> tuple[FlexibleCalibrationCurve, _Loess | None]:
    z = float(norm.ppf(0.5 + confidence / 2))
    lo_p, hi_p = float(p.min()), float(p.max())
    grid = np.linspace(lo_p, hi_p, n_grid) if hi_p > lo_p else np.array([lo_p])
    if method == "loess":
        est, lower, upper, fitter = _loess_curve(p, y, w, span, degree, grid, z, order)
        curve = FlexibleCalibrationCurve(
            method="loess",
            grid=grid,
            estimate=est,
            lower=lower,
            upper=upper,
            confidence=confidence,
            span=span,
            degree=degree,
            n_knots=n_knots,
        )
        return curve, fitter
    est, lower, upper, knots, beta = _rcs_curve(p, y, w, n_knots, grid, z)
    curve = FlexibleCalibrationCurve(
        method="rcs",
        grid=grid,
        estimate=est,
        lower=lower,
        upper=upper,
        confidence=confidence,
        span=span,
        degree=degree,
        n_knots=n_knots,
        knots=knots,
        _coef=beta,
    )
    return curve, None


def flexible_calibration_curve(
    probs: Any,
    labels: Any,
    *,
    method: Method = "loess",
    span: float = 0.75,
    degree: int = 2,
    n_knots: int = 5,
    grid: int = 200,
    confidence: float = 0.95,
    sample_weight: Any = None,
    classes: Any = None,
) -> FlexibleCalibrationCurve:
    """Moderate calibration: a flexible calibration curve with a pointwise band.

    The third level of the hierarchy of Van Calster et al. (2016): the observed event
    rate as a smooth function of the predicted risk, as ``val.prob.ci.2`` draws it.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)``.
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    method : {"loess", "rcs"}, default "loess"
        ``"loess"``: local regression of the outcome on the risk with R's
        ``loess(y ~ p)`` defaults (Cleveland, Grosse & Shyu 1992; the curve of Austin
        & Steyerberg 2019): tricube weights on the ``floor(span * n)`` nearest risks,
        a local polynomial of ``degree`` fitted by least squares, no robustness
        iterations. ``"rcs"``: logistic regression of the outcome on a restricted
        cubic spline of ``logit(p)`` with ``n_knots`` knots at Harrell's (2015)
        quantiles (risks of exactly 0 or 1 refused).
    span : float, default 0.75
        Fraction of the rows in each loess neighbourhood.
    degree : {0, 1, 2}, default 2
        Degree of the local polynomial.
    n_knots : int, 3 to 7, default 5
        Knots of the spline (``"rcs"``).
    grid : int, default 200
        Number of evenly spaced risks, from the smallest to the largest observed one,
        where the curve and band are evaluated (exactly, at each grid risk).
    confidence : float, default 0.95
        Level of the pointwise band.
    sample_weight : array-like, shape (n,), optional
        Non-negative row weights.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    FlexibleCalibrationCurve

    Notes
    -----
    The loess band is the Wald band ``m(x) +- z se(x)`` with ``se(x)^2 = m(x) (1 -
    m(x)) sum_i l_i(x)^2``, ``l_i(x)`` the weights of the local fit at ``x`` (the
    binomial variance of the outcome at the curve; R's ``predict.loess(se = TRUE)``,
    which ``val.prob.ci.2`` draws with ``z = 1.96``, uses a residual variance in its
    place), clipped to ``[0, 1]``. The spline band is the Wald band of the linear
    predictor mapped through the logistic function.

    Each grid value is the exact loess fit (to rounding, about ``1e-12``). After one
    sort, a fit costs ``O(span n)`` for neighbourhoods of up to 5000 rows (summed row
    by row) and ``O(sqrt n)`` beyond (power sums of blocks of ``sqrt n`` sorted rows;
    see ``_Loess``): ``O(n log n + grid sqrt n)`` in all, never ``O(n^2)``; 10^6 risks
    take about half a second of CPU time. Between grid points, calling the curve
    interpolates (a cubic spline through the ``grid`` exact values); with 200 grid
    points and the default span its error is about ``1e-5`` (below ``5e-5`` in the
    tests, against exact fits at the same risks).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.clinical import flexible_calibration_curve
    >>> rng = np.random.default_rng(1)
    >>> p = rng.uniform(0.05, 0.95, 5000)
    >>> y = rng.uniform(size=5000) < p          # calibrated
    >>> curve = flexible_calibration_curve(p, y)
    >>> curve.grid.shape, bool(np.max(np.abs(curve.estimate - curve.grid)) < 0.05)
    ((200,), True)
    >>> round(float(curve(0.5)), 2), bool(curve.lower[100] < 0.5 < curve.upper[100])
    (0.47, True)
    """
    m, sp, deg, nk = _check_curve_args(method, span, degree, n_knots)
    g = check_integer(grid, "grid", minimum=2)
    c = check_confidence(confidence)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    curve, _ = _curve(p, y, w, m, sp, deg, nk, g, c)
    return curve
