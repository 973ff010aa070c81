"""Isotonic (auto-)calibration of point forecasts and the decomposition of consistent scores.

A point forecast ``z`` of a functional T (mean, median, quantile, expectile) is
*auto-calibrated* when ``T(Y | Z = z) = z`` for every ``z``. The T-reliability
curve ``z -> T(Y | Z = z)`` is estimated without tuning by isotonic regression
of the targets on the forecasts under T, by the pool-adjacent-violators
algorithm (PAV): in the mean for the mean (Dimitriadis, Gneiting & Jordan
2021's CORP approach), and for quantiles and expectiles with the block
functional taken as that quantile or expectile, which gives an optimal
solution for every consistent scoring function at once (Jordan, Mühlemann &
Ziegel 2022). Gneiting & Resin 2023 (§3) draw this curve as the T-reliability
diagram and split the mean score ``S`` of any consistent scoring function as

    ``S = MCB - DSC + UNC``,

``MCB = S(z) - S(z_rc)`` the miscalibration (the score the recalibration
saves), ``DSC = S(m) - S(z_rc)`` the discrimination of the recalibrated
forecasts against the marginal functional ``m`` of the targets, and ``UNC =
S(m)`` the uncertainty; ``1 - S / UNC = (DSC - MCB) / UNC`` is their
coefficient of determination (Gneiting & Resin 2023, §4).

Examples
--------
>>> from calipers.regression import isotonic_recalibration
>>> isotonic_recalibration([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 5.0]).tolist()
[0.0, 1.5, 1.5, 5.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from .point_forecast import PointForecasts, check_point_forecast

__all__ = [
    "isotonic_recalibration",
    "t_reliability_curve",
    "TReliabilityCurve",
    "score_decomposition",
    "ScoreDecomposition",
    "SCORING_FUNCTIONS",
]


# ---------------------------------------------------------------- block functionals
#
# Each takes the values of one block sorted ascending and their weights (None
# for unit weights) and returns the block's functional.


def _lower_quantile(sy: np.ndarray, sw: np.ndarray | None, level: float) -> float:
    """Smallest ``v`` among the values with ``W(y <= v) >= level * W`` (inverted CDF)."""
    n = sy.shape[0]
    if sw is None:  # the first k with k + 1 >= level * n
        return float(sy[min(max(math.ceil(level * n) - 1, 0), n - 1)])
    cw = np.cumsum(sw)
    k = int(np.searchsorted(cw, level * cw[-1], side="left"))
    return float(sy[min(k, n - 1)])


def _upper_quantile(sy: np.ndarray, sw: np.ndarray | None, level: float) -> float:
    """Smallest ``v`` among the values with ``W(y <= v) > level * W``."""
    n = sy.shape[0]
    if sw is None:  # the first k with k + 1 > level * n
        return float(sy[min(math.floor(level * n), n - 1)])
    cw = np.cumsum(sw)
    k = int(np.searchsorted(cw, level * cw[-1], side="right"))
    return float(sy[min(k, n - 1)])


def _expectile(sy: np.ndarray, sw: np.ndarray | None, level: float) -> float:
    """The ``level``-expectile: the root of ``sum w |1{y <= z} - level| (z - y)``, exactly.

    The sum is piecewise linear and increasing in ``z``; between the sorted
    values it is solved in closed form.
    """
    w = np.ones(sy.shape[0]) if sw is None else sw
    cw = np.cumsum(w)
    cs = np.cumsum(w * sy)
    W, S = cw[-1], cs[-1]
    g = (1.0 - level) * (cw * sy - cs) + level * ((W - cw) * sy - (S - cs))
    k = int(np.searchsorted(g, 0.0, side="left"))  # first index with g >= 0
    k = min(k, sy.shape[0] - 1)
    if k == 0 or g[k] == 0.0:
        return float(sy[k])
    a, b = cw[k - 1], cs[k - 1]
    z = ((1.0 - level) * b + level * (S - b)) / ((1.0 - level) * a + level * (W - a))
    return float(min(max(z, sy[k - 1]), sy[k]))


def _block_function(functional: str, level: float | None) -> Any:
    if functional == "expectile":
        return lambda sy, sw: _expectile(sy, sw, float(level))  # type: ignore[arg-type]
    return lambda sy, sw: _lower_quantile(sy, sw, float(level))  # type: ignore[arg-type]


def _pav(
    y: np.ndarray, w: np.ndarray | None, bounds: np.ndarray, fn: Any
) -> tuple[np.ndarray, np.ndarray]:
    """PAV over the tie groups ``y[bounds[i]:bounds[i+1]]`` with the block functional ``fn``.

    Returns ``(values, starts)``: the value of each final block (strictly
    increasing) and its first row; adjacent blocks are pooled while the left
    one's value is at least the right one's (Busing 2022's rule), which gives
    the smallest solution for quantiles (Jordan, Mühlemann & Ziegel 2022).
    """
    st_start: list[int] = []
    st_y: list[np.ndarray] = []
    st_w: list[np.ndarray | None] = []
    st_v: list[float] = []
    sw: np.ndarray | None
    for i in range(bounds.shape[0] - 1):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if b - a == 1:  # a single row: its own functional
            sy = y[a:b]
            sw = None if w is None else w[a:b]
            v = float(sy[0])
        else:
            order = np.argsort(y[a:b], kind="stable")
            sy = y[a:b][order]
            sw = None if w is None else w[a:b][order]
            v = fn(sy, sw)
        start = a
        while st_v and st_v[-1] >= v:
            py, pw = st_y.pop(), st_w.pop()
            st_v.pop()
            start = st_start.pop()
            cat = np.concatenate([py, sy])
            if w is None:
                cat.sort(kind="stable")
                sy = cat
            else:
                order = np.argsort(cat, kind="stable")
                sy = cat[order]
                sw = np.concatenate([pw, sw])[order]  # type: ignore[list-item]
            v = fn(sy, sw)
        st_start.append(start)
        st_y.append(sy)
        st_w.append(sw)
        st_v.append(v)
    return np.asarray(st_v, dtype=np.float64), np.asarray(st_start, dtype=np.intp)


#: Relative distance within which a target counts as lying on the fit.
_ULPS = 8.0 * float(np.finfo(np.float64).eps)


def _kth_of_union(A: np.ndarray, P: np.ndarray, k: int) -> float:
    """The ``k``-th smallest (0-based) of two sorted arrays together, without merging them."""
    if P.shape[0] == 0:
        return float(A[k])
    pos = np.searchsorted(A, P, side="right") + np.arange(P.shape[0])
    j = int(np.searchsorted(pos, k, side="left"))  # elements of P before position k
    if j < P.shape[0] and pos[j] == k:
        return float(P[j])
    return float(A[k - j])


def _pav_quantile(y: np.ndarray, bounds: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_pav` with the unweighted lower quantile, each block's values kept as a
    sorted main array and a small sorted pending array.

    A block absorbing a few rows keeps them pending (the order statistic of
    the two arrays is found by binary search) and merges them into the main
    array once they exceed ``sqrt(size) / 2``: ``O(n sqrt(n))`` copies where
    merging every time costs ``O(n**2)`` (forecasts decreasing against their
    targets pool one row at a time into one growing block). The same blocks
    and values as :func:`_pav`.
    """
    st_start: list[int] = []
    st_a: list[np.ndarray] = []
    st_p: list[np.ndarray] = []
    st_v: list[float] = []
    empty = np.empty(0)
    for i in range(bounds.shape[0] - 1):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if b - a == 1:
            A, P, v = y[a:b], empty, float(y[a])
        else:
            A, P = np.sort(y[a:b], kind="stable"), empty
            v = float(A[min(max(math.ceil(level * (b - a)) - 1, 0), b - a - 1)])
        start = a
        while st_v and st_v[-1] >= v:
            pa, pp = st_a.pop(), st_p.pop()
            st_v.pop()
            start = st_start.pop()
            if pa.shape[0] < 1024 and A.shape[0] < 1024:  # small blocks (none pending): merge
                A = np.concatenate([pa, A])
                A.sort(kind="stable")
                P = empty
                N = A.shape[0]
                v = float(A[min(max(math.ceil(level * N) - 1, 0), N - 1)])
                continue
            if pa.shape[0] >= A.shape[0]:
                big_a, big_p, small = pa, pp, (A, P)
            else:
                big_a, big_p, small = A, P, (pa, pp)
            P = np.sort(np.concatenate([big_p, small[0], small[1]]))
            if P.shape[0] > max(32, math.isqrt(big_a.shape[0]) // 2):
                A = np.sort(np.concatenate([big_a, P]), kind="stable")
                P = empty
            else:
                A = big_a
            N = A.shape[0] + P.shape[0]
            v = _kth_of_union(A, P, min(max(math.ceil(level * N) - 1, 0), N - 1))
        st_start.append(start)
        st_a.append(A)
        st_p.append(P)
        st_v.append(v)
    return np.asarray(st_v, dtype=np.float64), np.asarray(st_start, dtype=np.intp)


def _expectile_by_reweighting(
    ys: np.ndarray, ws: np.ndarray | None, codes: np.ndarray, g: int, level: float
) -> np.ndarray | None:
    """The isotonic ``level``-expectile regression over tie groups, by reweighted PAV.

    The asymmetric squared loss is convex with a continuous gradient
    ``2 w c (x - y)``, ``c = 1 - level`` for ``y <= x`` and ``level`` above:
    the isotonic mean regression with the weights ``w c`` of its own solution
    satisfies the optimality conditions of the expectile problem, whose
    solution is unique. Starting from the unweighted mean fit, the weights
    are updated until the sides no longer change (the asymmetric least
    squares iteration of Newey & Powell 1987; rows on the fit, up to
    rounding, may sit on either side), a few passes of SciPy's PAV;
    None if that takes more than 100 passes (the caller then pools block by
    block).
    """
    from scipy.optimize import isotonic_regression

    base = np.ones(ys.shape[0]) if ws is None else ws
    c = np.full(ys.shape[0], 0.5)
    for _ in range(100):
        cw = base * c
        gw = np.bincount(codes, weights=cw, minlength=g)
        gy = np.bincount(codes, weights=cw * ys, minlength=g) / gw
        v = np.asarray(isotonic_regression(gy, weights=gw).x, dtype=np.float64)
        vr = v[codes]
        new = np.where(ys <= vr, 1.0 - level, level)
        flip = new != c
        # a row on the fit itself adds nothing to the gradient, whatever its
        # side: sides that change only there (a rounding of the fit) are final
        if not np.any(flip & (np.abs(ys - vr) > _ULPS * (np.abs(ys) + np.abs(vr)))):
            return v
        c = new
    return None  # pragma: no cover - not met in the tests


def _fit(P: PointForecasts) -> tuple[np.ndarray, np.ndarray]:
    """``(knots, values)``: the distinct forecasts of the rows of positive weight, ascending,
    and the isotonic T-regression of the targets at each."""
    z, y, w = P.forecasts, P.targets, P.sample_weight
    if w is not None:
        keep = w > 0
        if not keep.all():
            z, y, w = z[keep], y[keep], w[keep]
    order = np.argsort(z, kind="stable")
    zs, ys = z[order], y[order]
    ws = None if w is None else w[order]
    new = np.empty(zs.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(zs[1:], zs[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    knots = zs[starts]
    g = knots.shape[0]
    codes = np.cumsum(new) - 1
    if P.functional == "mean":
        from scipy.optimize import isotonic_regression

        gw = np.bincount(codes, weights=ws, minlength=g).astype(np.float64)
        gy = np.bincount(codes, weights=ys if ws is None else ws * ys, minlength=g) / gw
        values = np.asarray(isotonic_regression(gy, weights=gw).x, dtype=np.float64)
        return knots, values
    bounds = np.append(starts, zs.shape[0])
    level = float(P.level)  # type: ignore[arg-type]
    if P.functional == "expectile":
        fast = _expectile_by_reweighting(ys, ws, codes, g, level)
        if fast is not None:
            return knots, fast
    if ws is None and P.functional != "expectile":
        bv, bstart = _pav_quantile(ys, bounds, level)
    else:
        bv, bstart = _pav(ys, ws, bounds, _block_function(P.functional, level))
    # which block each tie group belongs to
    gblock = np.searchsorted(bstart, starts, side="right") - 1
    if P.functional == "expectile":
        return knots, bv[gblock]
    # quantiles: the smallest solution bv and an upper one on the same blocks
    # (each block's upper quantile, then the running minimum from the right);
    # every isotonic function between them is optimal, the midpoint is returned.
    rbounds = np.append(bstart, zs.shape[0])
    upper = np.empty(bv.shape[0])
    for j in range(bv.shape[0]):
        a, b = int(rbounds[j]), int(rbounds[j + 1])
        order = np.argsort(ys[a:b], kind="stable")
        upper[j] = _upper_quantile(ys[a:b][order], None if ws is None else ws[a:b][order], level)
    upper = np.minimum.accumulate(upper[::-1])[::-1]
    mid = 0.5 * (bv + upper)
    return knots, mid[gblock]


@dataclass(frozen=True)
class TReliabilityCurve:
    """The isotonic T-reliability curve of point forecasts, a map from forecast to recalibrated forecast.

    Returned by :func:`t_reliability_curve`. Between its knots (the distinct
    forecasts it was fitted on) the curve is interpolated linearly, and
    outside them it is constant at the first and last values (as
    scikit-learn's and model-diagnostics' isotonic regressions predict).

    Attributes
    ----------
    forecasts : numpy.ndarray
        ``(g,)`` the distinct forecasts (rows of positive weight), ascending.
    recalibrated : numpy.ndarray
        ``(g,)`` the isotonic T-regression of the targets at each: a
        non-decreasing estimate of ``T(Y | Z = z)``.
    functional : str
    level : float or None
    """

    forecasts: np.ndarray
    recalibrated: np.ndarray
    functional: str
    level: float | None

    def predict(self, forecasts: Any) -> np.ndarray:
        """The recalibrated forecasts of new forecasts ``(n,)`` (the curve at each)."""
        from .inputs import _as_1d_float

        z = _as_1d_float(forecasts, "forecasts")
        return np.interp(z, self.forecasts, self.recalibrated)


@fill_doc
def t_reliability_curve(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
) -> TReliabilityCurve:
    """Fit the isotonic T-reliability curve of point forecasts (auto-calibration map).

    The isotonic regression of the targets on the forecasts under the
    functional T, by the pool-adjacent-violators algorithm (Dimitriadis,
    Gneiting & Jordan 2021; Gneiting & Resin 2023, §3): rows with equal
    forecasts are pooled first, then adjacent blocks are pooled while their
    T-values decrease, each block's value being the (weighted) mean, the
    ``tau``-expectile (exact, in closed form) or the ``alpha``-quantile of its
    targets. For quantiles the solution is a set (Jordan, Mühlemann &
    Ziegel 2022): the smallest solution uses the lower (inverted-CDF)
    quantiles; an upper solution takes each of its blocks' upper quantiles
    (then the running minimum from the right), and the curve is their
    midpoint, as model-diagnostics' ``IsotonicRegression`` does. Every
    solution minimises the mean of every consistent scoring function at once.
    Rows of weight 0 take no part in the fit.

    Cost: the mean and expectiles run SciPy's PAV (expectiles a few times,
    reweighted), ``O(n log n)`` with the sort: 10**5 rows in about 0.1 s.
    Quantiles pool blocks of sorted targets, ``O(n log n)`` on typical data
    (10**6 rows in 6-9 s on one core) and ``O(n sqrt(n))`` when long runs
    of forecasts decrease against their targets (10**6 such rows: about
    36 s).

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    {sample_weight}

    Returns
    -------
    TReliabilityCurve

    Examples
    --------
    >>> from calipers.regression import t_reliability_curve
    >>> c = t_reliability_curve([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 5.0])
    >>> c.recalibrated.tolist(), c.predict([0.0, 3.5, 9.0]).tolist()
    ([0.0, 1.5, 1.5, 5.0], [0.0, 3.25, 5.0])
    >>> t_reliability_curve([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], functional="median").recalibrated.tolist()
    [2.0, 2.0, 2.0]
    """
    P = check_point_forecast(
        forecasts, targets, functional=functional, level=level, sample_weight=sample_weight
    )
    knots, values = _fit(P)
    return TReliabilityCurve(knots, values, P.functional, P.level)


@fill_doc
def isotonic_recalibration(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
) -> np.ndarray:
    """Recalibrated point forecasts: the isotonic T-reliability curve at each row's forecast.

    ``z_rc_i = T(Y | Z = z_i)`` estimated by isotonic regression under the
    functional (Dimitriadis, Gneiting & Jordan 2021; Gneiting & Resin 2023,
    §3; Jordan, Mühlemann & Ziegel 2022 for quantiles and expectiles): the
    in-sample values of :func:`t_reliability_curve`, in the rows' order. The
    recalibrated forecasts are auto-calibrated on these rows and never
    score worse than the forecasts under any consistent scoring function.
    Rows of weight 0 get the curve's (interpolated) value at their forecast.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    {sample_weight}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 recalibrated forecasts, target units.

    Examples
    --------
    >>> from calipers.regression import isotonic_recalibration
    >>> isotonic_recalibration([3.0, 1.0, 2.0], [1.0, 0.0, 2.0]).tolist()
    [1.5, 0.0, 1.5]
    >>> isotonic_recalibration([1.0, 2.0, 3.0, 4.0], [4.0, 0.0, 1.0, 3.0],
    ...                        functional="quantile", level=0.5).tolist()
    [0.5, 0.5, 1.0, 3.0]
    """
    P = check_point_forecast(
        forecasts, targets, functional=functional, level=level, sample_weight=sample_weight
    )
    knots, values = _fit(P)
    return np.interp(P.forecasts, knots, values)


def marginal_functional(P: PointForecasts) -> float:
    """The functional of the (weighted) targets: the constant forecast of the uncertainty term."""
    y, w = P.targets, P.sample_weight
    if w is not None:
        keep = w > 0
        y, w = y[keep], w[keep]
    if P.functional == "mean":
        return float(np.mean(y)) if w is None else float(np.dot(w, y) / np.sum(w))
    order = np.argsort(y, kind="stable")
    sy = y[order]
    sw = None if w is None else w[order]
    level = float(P.level)  # type: ignore[arg-type]
    if P.functional == "expectile":
        return _expectile(sy, sw, level)
    return 0.5 * (_lower_quantile(sy, sw, level) + _upper_quantile(sy, sw, level))


#: The named scoring functions of :func:`score_decomposition`: name -> (the
#: functional it is consistent for, whether it needs forecasts > 0).
SCORING_FUNCTIONS: dict[str, tuple[str, bool]] = {
    "squared_error": ("mean", False),
    "poisson_deviance": ("mean", True),
    "gamma_deviance": ("mean", True),
    "pinball": ("quantile", False),
    "expectile": ("expectile", False),
}


@dataclass(frozen=True)
class ScoreDecomposition:
    """``score = miscalibration - discrimination + uncertainty`` of point forecasts.

    Returned by :func:`score_decomposition` (Gneiting & Resin 2023, §3-4;
    Dimitriadis, Gneiting & Jordan 2021). All terms are (weighted) mean
    scores, in the units of the scoring function, and ``>= 0`` up to rounding.

    Attributes
    ----------
    score : float
        The mean score ``S(z)`` of the forecasts.
    miscalibration : float
        ``MCB = S(z) - S(z_rc)``, with ``z_rc`` the isotonic recalibration.
    discrimination : float
        ``DSC = S(m) - S(z_rc)``, with ``m`` the marginal functional of the targets.
    uncertainty : float
        ``UNC = S(m)``.
    scoring_function : str
        Its name (``"callable"`` for a given function).
    functional : str
    level : float or None
    """

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    scoring_function: str
    functional: str
    level: float | None

    @property
    def skill(self) -> float:
        """``1 - score / uncertainty = (DSC - MCB) / UNC``: Gneiting & Resin 2023's universal coefficient of determination R* (NaN when UNC is 0)."""
        if self.uncertainty == 0.0:
            return float("nan")
        return 1.0 - self.score / self.uncertainty


def _scorer(
    scoring_function: Any, functional: str | None, level: float | None, degree: float | None
) -> tuple[Any, str, str, float | None, bool]:
    """``(per_row(z, y), name, functional, level, needs_positive)`` of the scoring function."""
    from . import consistent_scores as cs
    from .point_forecast import check_functional

    if callable(scoring_function):
        if functional is None:
            raise CalibrationInputError(
                "functional is required with a scoring function given as a callable (the "
                "functional it is consistent for: 'mean', 'median', 'quantile' or 'expectile')"
            )
        func, lev = check_functional(functional, level)
        return scoring_function, "callable", func, lev, False
    if not isinstance(scoring_function, str) or scoring_function not in SCORING_FUNCTIONS:
        raise CalibrationInputError(
            "scoring_function must be one of "
            + ", ".join(repr(s) for s in SCORING_FUNCTIONS)
            + f", or a callable f(forecasts, targets) -> per-row scores; got {scoring_function!r}"
        )
    own, positive = SCORING_FUNCTIONS[scoring_function]
    name = scoring_function
    if functional is None:
        functional = own
    if scoring_function == "pinball":
        if functional not in ("quantile", "median"):
            raise CalibrationInputError(
                f"scoring_function='pinball' is consistent for quantiles; got functional={functional!r}"
            )
        func, lev = check_functional(functional, level)
        a = float(lev)  # type: ignore[arg-type]
        return (lambda z, y: cs.pinball_loss_per_row(z, y, level=a)), name, func, lev, False
    if functional != own:
        raise CalibrationInputError(
            f"scoring_function={scoring_function!r} is consistent for the {own}; got "
            f"functional={functional!r}"
        )
    func, lev = check_functional(functional, level)
    if scoring_function == "expectile":
        h = 2.0 if degree is None else float(degree)
        t = float(lev)  # type: ignore[arg-type]
        return (
            (lambda z, y: cs.expectile_score_per_row(z, y, level=t, degree=h)),
            name,
            func,
            lev,
            h <= 1.0,
        )
    if degree is not None:
        raise CalibrationInputError(
            f"degree is used with scoring_function='expectile' only; got degree={degree!r} "
            f"with {scoring_function!r}"
        )
    h = {"squared_error": 2.0, "poisson_deviance": 1.0, "gamma_deviance": 0.0}[scoring_function]
    return (lambda z, y: cs.bregman_score_per_row(z, y, phi=h)), name, func, lev, positive


def _pool_lowest_blocks(P: PointForecasts, knots: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Pool the two lowest blocks of the curve into one (its functional of their targets)."""
    low = values[0]
    second = values[values > low]
    top = second[0] if second.shape[0] else low
    pooled_knots = knots[values <= top]
    rows = np.isin(P.forecasts, pooled_knots)
    w = None if P.sample_weight is None else P.sample_weight[rows]
    sub = PointForecasts(np.zeros(int(rows.sum())), P.targets[rows], P.functional, P.level, w)
    out = values.copy()
    out[values <= top] = marginal_functional(sub)
    return out


@fill_doc
def score_decomposition(
    forecasts: Any,
    targets: Any = None,
    *,
    scoring_function: Any = "squared_error",
    functional: str | None = None,
    level: float | None = None,
    degree: float | None = None,
    sample_weight: Any = None,
) -> ScoreDecomposition:
    """Split the mean score of point forecasts into miscalibration, discrimination and uncertainty.

    For a scoring function ``S`` consistent for the functional T (Gneiting
    2011), Gneiting & Resin 2023 (§3-4, following Dimitriadis, Gneiting &
    Jordan 2021's CORP) write the mean score as ``S(z) = MCB - DSC + UNC``:
    ``MCB = S(z) - S(z_rc)`` with ``z_rc`` the isotonic T-recalibration of
    the forecasts (:func:`isotonic_recalibration`), ``DSC = S(m) - S(z_rc)``
    with ``m`` the functional of the targets' distribution (the midpoint of
    the lower and upper quantile for quantiles), and ``UNC = S(m)``. Because
    the isotonic fit is optimal for every consistent scoring function at once
    (Jordan, Mühlemann & Ziegel 2022), ``MCB >= 0`` and ``DSC >= 0``. The same
    numbers as model-diagnostics' ``decompose``.

    For the Poisson and Gamma deviances (and expectile scores of degree <= 1)
    forecasts must be positive: when the lowest block of the isotonic fit is
    0 (targets all 0 there) it is pooled with the next block, as
    model-diagnostics does.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    scoring_function : str or callable, default "squared_error"
        ``"squared_error"``, ``"poisson_deviance"``, ``"gamma_deviance"``
        (the mean; Bregman scores of degree 2, 1, 0 of
        :func:`calipers.regression.bregman_score_per_row`), ``"pinball"``
        (quantiles, :func:`calipers.regression.pinball_loss_per_row`),
        ``"expectile"`` (expectiles, :func:`calipers.regression.expectile_score_per_row`
        of degree ``degree``), or a callable ``f(forecasts, targets) ->
        (n,) scores``, consistent for ``functional``.
    functional : {"mean", "median", "quantile", "expectile"}, optional
        The functional of the forecasts; default: that of the named scoring
        function (required with a callable).
    level : float, optional
        The quantile or expectile level in (0, 1) (required for ``"pinball"``
        unless ``functional="median"``, and for ``"expectile"``).
    degree : float, optional
        Degree of homogeneity of the ``"expectile"`` score (default 2: the
        asymmetric squared loss).
    {sample_weight}

    Returns
    -------
    ScoreDecomposition

    Examples
    --------
    >>> from calipers.regression import score_decomposition
    >>> d = score_decomposition([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0])
    >>> d.score, d.miscalibration, d.discrimination, d.uncertainty
    (0.75, 0.625, 0.125, 0.25)
    >>> q = score_decomposition([1.0, 2.0, 3.0, 4.0], [0.0, 3.0, 2.0, 6.0],
    ...                         scoring_function="pinball", level=0.5)
    >>> q.score, q.miscalibration, q.discrimination, q.uncertainty
    (0.625, 0.5, 0.75, 0.875)
    """
    per_row, name, func, lev, positive = _scorer(scoring_function, functional, level, degree)
    P = check_point_forecast(
        forecasts, targets, functional=func, level=lev, sample_weight=sample_weight
    )
    knots, values = _fit(P)
    if positive and values[0] <= 0.0:
        values = _pool_lowest_blocks(P, knots, values)
    rc = np.interp(P.forecasts, knots, values)
    m = marginal_functional(P)
    if positive and not m > 0.0:
        raise CalibrationInputError(
            f"scoring_function={name!r} needs forecasts > 0, but the {func} of the targets is "
            f"{m!r} (all targets 0?): the uncertainty term is not defined"
        )

    def mean_score(f: np.ndarray, what: str) -> float:
        s = np.asarray(per_row(f, P.targets), dtype=np.float64)
        if s.shape != (P.n_samples,):
            raise CalibrationInputError(
                f"scoring_function must return one score per row, shape ({P.n_samples},); "
                f"got shape {s.shape} for the {what}"
            )
        return P.weighted_mean(s)

    s_z = mean_score(P.forecasts, "forecasts")
    s_rc = mean_score(rc, "recalibrated forecasts")
    s_m = mean_score(np.full(P.n_samples, m), "marginal functional")
    return ScoreDecomposition(s_z, s_z - s_rc, s_m - s_rc, s_m, name, func, lev)
