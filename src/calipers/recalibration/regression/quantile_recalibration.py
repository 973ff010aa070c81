"""Quantile recalibration (Kuleshov, Fenner & Ermon 2018, Algorithm 1).

A Gaussian prediction with CDF ``F(y) = Phi((y - mu) / sigma)`` becomes the
distribution with CDF ``F'(y) = R(F(y))``, where ``R: [0, 1] -> [0, 1]`` is an
increasing map fitted on the calibration split to the pairs
``(p_t, P_hat(p_t))``: the PIT value ``p_t = F_t(y_t)`` and the (weighted)
fraction of calibration PIT values at or below it. If ``R`` is the CDF of the
PIT values, ``R(F(Y))`` is uniform: the recalibrated predictions are
calibrated in distribution (Kuleshov et al. 2018, §3). The output is no
longer Gaussian (``gaussian = False``).

How calipers builds ``R``:

* the targets are mid-ranks, ``P_hat(p_t) = (sum of the weights of PIT
  values below p_t + half the weight of those equal to it) / W``, strictly
  inside (0, 1). Kuleshov et al. use ``#{p_s <= p_t} / n``, whose largest
  value is 1: ``R`` would reach 1 at the largest calibration PIT, and every
  test target beyond it would get density 0 (an infinite NLL);
* equal PIT values are merged (weights summed), then a weighted
  pool-adjacent-violators (PAV) pass makes the levels strictly increasing
  (mid-ranks of distinct values already are; the pass only matters for
  hand-made targets, and is kept general);
* runs of adjacent blocks are pooled into ``n_knots`` groups of equal weight
  (default: the larger of sqrt(n) and n / 10, at most 100): through every calibration PIT, ``R`` would be the
  interpolated empirical CDF, whose density ``R'`` is the reciprocal of the
  gaps between neighbouring PIT values, so noisy that the held-out NLL gets
  worse by about 0.4 nats (measured on N(mu, (c sigma)**2) data, c = 0.5,
  n = 20000) even where the CRPS improves; pooling is itself a coarser
  isotonic fit of the same pairs;
* ``R`` is the piecewise-linear interpolation through the block centres
  (weighted mean PIT of each PAV block) at the block levels, anchored at
  (0, 0) and (1, 1): continuous and strictly increasing, hence injective,
  with a positive, piecewise-constant density ``R'`` and a piecewise-linear
  inverse (quantiles). A block whose centre is exactly 0 or 1 (a PIT that
  rounded to 0 or 1) is pooled with its neighbour.

The recalibrated law of ``Z' = (Y - mu) / sigma`` has density
``R'(Phi(z)) phi(z)``: on each segment of ``R`` a normal density times a
constant ``s_k``. Its scores follow in closed form (no quadrature), per row:

* NLL: ``-log R'(Phi(z)) + 0.5 log(2 pi sigma**2) + z**2 / 2``;
* DSS: ``(y - m)**2 / v + log v`` with the recalibrated mean
  ``m = mu + sigma E[Z']`` and variance ``v = sigma**2 Var[Z']``, where, with
  ``a_k, b_k = Phi^-1`` of the segment ends, ``E[Z'] = sum_k s_k (phi(a_k) -
  phi(b_k))`` and ``E[Z'**2] = sum_k s_k [(b_k' - a_k') - (b_k phi(b_k) -
  a_k phi(a_k))]`` (``a_k', b_k'`` the segment ends in PIT space);
* CRPS, from its quantile form ``2 int_0^1 (1{y <= F'^-1(tau)} - tau)
  (F'^-1(tau) - y) d tau``: with ``F'^-1(tau) = mu + sigma Phi^-1(R^-1(tau))``
  the integral splits at ``tau = F'(y)`` into
  ``sigma * 2 [Q(z) + z (F'(y) - 1/2) - C]``, where ``Q(z) = int_{F'(y)}^1
  Phi^-1(R^-1(tau)) d tau`` and ``C = int_0^1 tau Phi^-1(R^-1(tau)) d tau`` are
  sums over segments of ``int z phi(z) dz = -phi(z)`` and
  ``int Phi(z) z phi(z) dz = -phi(z) Phi(z) + Phi(sqrt(2) z) / (2 sqrt(pi))``.

The closed forms are exact up to float64 rounding (about 1e-13 relative for
maps with a few thousand knots); the tests compare them with numerical
integration of the CDF, and with the Gaussian closed forms of
:mod:`calipers.regression.scores` when ``R`` is the identity.

The fitted map has at most ``n_knots + 2`` knots (about 40 bytes each in a
JSON file).

Any predictive distribution. Nothing above needs a Gaussian but the closed
forms: for a :class:`~calipers.regression.PredictiveDistribution` ``F`` of
another kind (a Gaussian, or a normal ``Parametric``, is read as Gaussian
arrays and gets the closed forms):

* the map is fitted, as above, to the PIT values ``U = F(y)``, randomised over
  ``[F(y-), F(y)]`` where the distribution has an atom or unknown tails
  (counts; a quantile set below its first or above its last quantile),
  ``U = F(y-) + V (F(y) - F(y-))`` with ``V`` uniform (Czado, Gneiting & Held
  2009), drawn as :func:`calipers.regression.pit.randomized_pit` draws them
  (``numpy.random.default_rng([seed, 2009])``, a stream apart from data
  simulated with ``default_rng(seed)``);
* ``predict_cdf`` is ``R(F(y))``, ``predict_pit`` is ``R(U)`` with ``U``
  randomised as in the fit (uniform when ``R`` is the CDF of ``U``), and
  ``predict_quantile`` is ``F^-1(R^-1(q))``, one level at a time
  (``PredictiveDistribution.quantile``), so ``R(F(F^-1(R^-1(q)))) = q``
  wherever ``F`` is continuous and invertible;
* an ensemble of ``k`` members is read as the quantile set of its sorted
  members at the levels ``j / (k + 1)`` of their ranks: linear between
  members, unknown tails of mass ``1 / (k + 1)`` on either side. Like any
  quantile set it says nothing beyond its outermost quantiles, so the
  recalibrated quantiles stop at the outermost member (or quantile): an
  under-dispersed ensemble is widened only within its members' range;
* scores: the NLL where the distribution has a density or a mass function
  (``-log R'(F(y)) - log f(y)``, with the mass function for counts whose
  atom ``[F(y-), F(y)]`` lies within one segment of ``R``, else
  ``-log(R(F(y)) - R(F(y-)))``; so an atom far in the tail, whose CDF rounds
  to 1, keeps its finite log mass);
  the CRPS of a continuous family as its own CRPS (closed forms of
  :class:`~calipers.regression.Parametric`) plus the integral of
  ``R(F)**2 - F**2`` below ``y`` and ``(1 - R(F))**2 - (1 - F)**2`` above,
  by 256-node Gauss-Legendre quadrature on each half line (CDF evaluations
  only; on Gaussian data against the closed form, 2000-4000 rows: mean
  CRPS within 5e-6 relative, each row within 2e-4 relative, the largest errors for targets
  several standard deviations out, where the kinks of ``R`` sit far from
  ``y``); of a count distribution as the exact sum over
  the integers (up to the 1e-13 tails of the recalibrated distribution; a
  target beyond them adds its distance, not a loop over it); of a quantile set (or an ensemble
  read as one) as the quantile-averaged pinball form at the set's own
  levels, ``(2 / m) sum_j rho_tau_j(y - F^-1(R^-1(tau_j)))``, the form
  :meth:`calipers.regression.QuantileSet.crps` scores the set by. No DSS
  (it needs the recalibrated moments). ``improvement`` compares each score
  with the same computation for ``R`` the identity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...regression import (
    GaussianPredictions,
    PredictiveDistribution,
    ProbabilisticPredictions,
    QuantileSet,
    SampleEnsemble,
)
from ...regression.pit import randomized_pit
from ...validation import CalibrationInputError, check_work
from .._schema import Array, Integer, Schema, Values
from .base import ALL_KINDS, RegressionRecalibrator, register_regression

__all__ = ["QuantileRecalibration"]

_LOG_2PI = math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _pav(y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted pool-adjacent-violators with strictly increasing levels.

    Returns ``(levels, weights, starts)`` of the blocks: adjacent entries are
    pooled (weighted mean) while a level is not above the one before it, so
    the levels are strictly increasing; ``starts[j]`` is the index of the
    first entry of block ``j``. ``w`` must be positive.

    The pooling is the left-to-right stack pass (push an entry, merge the top
    two blocks while they are out of order), with its float operations in the
    same order; runs of entries that rise above their predecessor can be pushed
    whole, because an entry above an unmerged top merges with nothing. Only the
    entries that fall to or below their predecessor, and those right after a
    merge, go through the Python loop: none at all for mid-ranks of distinct
    values (the fitted map's case), where the levels come back unchanged.
    """
    n = y.shape[0]
    viol = np.flatnonzero(y[1:] <= y[:-1]) + 1  # entries not above their predecessor
    if viol.shape[0] == 0:
        return (
            np.array(y, dtype=np.float64),
            np.array(w, dtype=np.float64),
            np.arange(n, dtype=np.int64),
        )
    vs = viol.tolist() + [n]
    lev: list[float] = []
    wt: list[float] = []
    start: list[int] = []
    p = 0
    i = 0
    while i < n:
        lev.append(float(y[i]))
        wt.append(float(w[i]))
        start.append(i)
        merged = False
        while len(lev) > 1 and lev[-2] >= lev[-1]:
            w2 = wt[-2] + wt[-1]
            lev[-2] = (wt[-2] * lev[-2] + wt[-1] * lev[-1]) / w2
            wt[-2] = w2
            del lev[-1], wt[-1], start[-1]
            merged = True
        if merged:  # the next entry meets a merged block: it goes through the check
            i += 1
            continue
        while vs[p] <= i:
            p += 1
        j = vs[p]  # entries i+1 .. j-1 each rise above the one before: push them whole
        lev.extend(y[i + 1 : j].tolist())
        wt.extend(w[i + 1 : j].tolist())
        start.extend(range(i + 1, j))
        i = j
    return np.array(lev), np.array(wt), np.array(start, dtype=np.int64)


def _distinct(u: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``u`` in increasing order and the total weight of each.

    ``w`` None means unit weights: the totals are then the counts, exact in
    float64, found from a plain sort (no argsort). With weights, a value that
    occurs once keeps its weight and repeated values are summed by
    :func:`numpy.bincount` in row order, the sums :func:`numpy.unique` and
    ``bincount`` give.
    """
    n = u.shape[0]
    if w is None:
        us = np.sort(u)
    else:
        order = np.argsort(u)
        us = u[order]
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(us[1:], us[:-1], out=new[1:])
    if new.all():  # no ties: every value is its own group
        return us, np.ones(n) if w is None else w[order]
    first = np.flatnonzero(new)
    ux = us[first]
    if w is None:
        return ux, np.diff(first, append=n).astype(np.float64)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return ux, np.bincount(inv, weights=w, minlength=ux.shape[0])


def _phi(z: np.ndarray) -> np.ndarray:
    """Standard normal density (0 at +-inf)."""
    return np.exp(-0.5 * z * z) * _INV_SQRT_2PI


#: Segments narrower than this (in PIT space) are integrated by Gauss-Legendre quadrature.
_NARROW = 1e-3
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _segment_integrals(
    xk: np.ndarray, zk: np.ndarray, phi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment ``[x_k, x_k+1]`` of PIT space, with ``q = Phi^-1``:
    ``I0 = int q du``, ``I1 = int (u - x_k) q du`` and ``I2 = int q**2 du``.

    Closed forms (``int z phi = -phi``, ``int z**2 phi = Phi - z phi``,
    ``int Phi z phi = -phi Phi + Phi(sqrt 2 z) / (2 sqrt pi)``) on wide
    segments and on the two end segments; on narrow interior segments, where
    the closed forms are differences of nearly equal numbers multiplied by
    large slopes, 8-point Gauss-Legendre quadrature in ``u`` (``q`` is smooth
    there; error far below float64 rounding of the result).
    """
    from scipy.special import ndtr, ndtri

    dx = np.diff(xk)
    finite = np.isfinite(zk)
    zphi = np.where(finite, np.where(finite, zk, 0.0) * phi, 0.0)
    jz = -phi * xk + ndtr(math.sqrt(2.0) * zk) / (2.0 * math.sqrt(math.pi))
    i0 = phi[:-1] - phi[1:]
    i1 = np.diff(jz) - xk[:-1] * i0
    # last segment [x, 1]: by the reflection u -> 1 - u, I1 = Phi(-sqrt 2 a) / (2 sqrt pi)
    i1[-1] = ndtr(-math.sqrt(2.0) * zk[-2]) / (2.0 * math.sqrt(math.pi))
    i2 = dx - np.diff(zphi)
    narrow = np.flatnonzero(dx < _NARROW)
    narrow = narrow[(narrow > 0) & (narrow < dx.shape[0] - 1)]
    if narrow.size:
        h = dx[narrow][:, None]
        t = 0.5 * h * (_GL_NODES[None, :] + 1.0)
        q = ndtri(xk[narrow][:, None] + t)
        wq = 0.5 * h * _GL_WEIGHTS[None, :]
        i0[narrow] = (wq * q).sum(1)
        i1[narrow] = (wq * t * q).sum(1)
        i2[narrow] = (wq * q * q).sum(1)
    return i0, i1, i2


#: Above this PIT value ``x = R^-1(q)`` the quantile is computed from ``1 - x`` (where
#: :func:`scipy.special.ndtri` itself switches to the complement, ``1 - exp(-2)``).
_UPPER_TAIL = 1.0 - math.exp(-2.0)
_TINY = float(np.finfo(np.float64).tiny)


def _standard_quantile(xk: np.ndarray, yk: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``Phi^-1(R^-1(q))`` for levels ``q`` in (0, 1), finite for every such level.

    ``R^-1`` is the piecewise-linear inverse of the map with knots ``(xk, yk)``.
    In the upper tail (``x = R^-1(q) > 1 - exp(-2)``) the complement ``1 - x =
    (1 - x_(k+1)) + (y_(k+1) - q) (x_(k+1) - x_k) / (y_(k+1) - y_k)`` is formed
    directly, without rounding ``x`` first: a level such as ``1 - 1e-16``, whose
    ``x`` rounds to 1.0 when the last segment of ``R`` is steep, gets its finite
    quantile ``-Phi^-1(1 - x)`` rather than ``inf`` (``1 - x >= 1e-32`` for any
    level below 1). In the first segment, where ``x = q x_1 / y_1`` can fall
    below the normal range (``q = 5e-324``), ``Phi^-1`` is taken of
    ``log x = log q + log x_1 - log y_1`` (:func:`scipy.special.ndtri_exp`).
    Elsewhere ``Phi^-1(np.interp(q, yk, xk))``, as before.
    """
    from scipy.special import ndtri, ndtri_exp

    x = np.interp(q, yk, xk)
    z = np.asarray(ndtri(x), dtype=np.float64)
    up = x > _UPPER_TAIL
    if up.any():
        qu = q[up]
        k = np.clip(np.searchsorted(yk, qu, side="right") - 1, 0, yk.shape[0] - 2)
        c = (1.0 - xk[k + 1]) + (yk[k + 1] - qu) * ((xk[k + 1] - xk[k]) / (yk[k + 1] - yk[k]))
        z[up] = -ndtri(c)
    low = (x < _TINY) & (q < yk[1])
    if low.any():
        z[low] = ndtri_exp(np.log(q[low]) + (math.log(xk[1]) - math.log(yk[1])))
    return z


def _fit_knots(
    u: np.ndarray, w: np.ndarray | None, knot_count: Callable[[int, int], int]
) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(x, y)`` of the map ``R`` fitted to the PIT values ``u`` (module docstring).

    ``w`` holds the row weights (None: every row weighs 1; rows of weight 0
    are dropped); ``knot_count(n_blocks, n_rows)`` gives the number of groups.
    Full-length work is vectorised: the sort, the mid-ranks, the PAV pass
    (which leaves mid-ranks of distinct values as they are, see :func:`_pav`)
    and the pooling into groups; the anchoring loops touch only the groups.
    """
    if w is not None:
        keep = w > 0
        u, w = u[keep], w[keep]
    ux, wg = _distinct(u, w)
    total = float(wg.sum())
    cs = np.cumsum(wg)
    level = (cs - wg + 0.5 * wg) / total  # mid-ranks, strictly inside (0, 1)
    if np.all(level[1:] > level[:-1]):  # PAV pools nothing: each block is one PIT value
        lev, wb, centre = level, wg, ux
    else:
        lev, wb, starts = _pav(level, wg)
        ends = np.append(starts[1:], ux.shape[0])
        sums = np.add.reduceat(wg * ux, starts)
        centre = np.clip(sums / wb, ux[starts], ux[ends - 1])  # rounding cannot leave the block
        cs = np.cumsum(wb)
    k = knot_count(lev.shape[0], max(int(u.shape[0]), int(total)))
    if lev.shape[0] > k:  # pool runs of adjacent blocks into k groups of equal weight
        # block i joins group min(floor(k * mid_i), k - 1), mid_i its mid-rank: the groups
        # are runs, and group j starts at the first block with k * mid_i >= j
        mk = (cs - 0.5 * wb) / total * k
        first = np.unique(np.searchsorted(mk, np.arange(k, dtype=np.float64), side="left"))
        first = first[first < mk.shape[0]]
        gw = np.add.reduceat(wb, first)
        lo = centre[first]
        hi = centre[np.append(first[1:], centre.shape[0]) - 1]
        centre = np.clip(np.add.reduceat(wb * centre, first) / gw, lo, hi)
        lev = np.add.reduceat(wb * lev, first) / gw
        wb = gw
    if centre.shape[0] and (
        centre[0] <= 0.0 or centre[-1] >= 1.0 or lev[0] <= 0.0 or lev[-1] >= 1.0
    ):
        centre, lev = _off_anchors(list(centre), list(lev), list(wb))
    xk = np.concatenate([[0.0], centre, [1.0]])
    yk = np.concatenate([[0.0], lev, [1.0]])
    if not (np.all(np.diff(xk) > 0) and np.all(np.diff(yk) > 0)):
        raise CalibrationInputError(  # pragma: no cover - guarded by construction
            "QuantileRecalibration.fit: the fitted map is not strictly increasing"
        )
    return xk, yk


def _off_anchors(
    cx: list[float], cy: list[float], cw: list[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Pool a block centred exactly at 0 or 1 (it would sit on an anchor) with its neighbour.

    The same for a block whose level rounds to 0 or 1: a mid-rank is inside (0, 1),
    but ``(below + w / 2) / W`` rounds to 1.0 when the last weight is below about
    1e-16 of the total (weights spanning 20 orders of magnitude).
    """
    while cx and (cx[0] <= 0.0 or cy[0] <= 0.0):
        if len(cx) == 1:
            cx, cy, cw = [], [], []
            break
        t = cw[0] + cw[1]
        cx[1] = (cw[0] * cx[0] + cw[1] * cx[1]) / t
        cy[1] = (cw[0] * cy[0] + cw[1] * cy[1]) / t
        cw[1] = t
        del cx[0], cy[0], cw[0]
    while cx and (cx[-1] >= 1.0 or cy[-1] >= 1.0):
        if len(cx) == 1:
            cx, cy, cw = [], [], []
            break
        t = cw[-1] + cw[-2]
        cx[-2] = (cw[-1] * cx[-1] + cw[-2] * cx[-2]) / t
        cy[-2] = (cw[-1] * cy[-1] + cw[-2] * cy[-2]) / t
        cw[-2] = t
        del cx[-1], cy[-1], cw[-1]
    return np.array(cx, dtype=np.float64), np.array(cy, dtype=np.float64)


def _knots_valid(v: Values) -> str | None:
    x, y = v["knots_x_"], v["knots_y_"]
    if x.shape != y.shape:
        return (
            f"fields 'knots_x_' and 'knots_y_' must have the same length; got {x.shape[0]} "
            f"and {y.shape[0]}"
        )
    if x.shape[0] < 2:
        return "field 'knots_x_' must hold at least the two anchors 0 and 1"
    for name, a in (("knots_x_", x), ("knots_y_", y)):
        if a[0] != 0.0 or a[-1] != 1.0:
            return (
                f"field {name!r} must start at 0 and end at 1 (the map is anchored at (0, 0) "
                f"and (1, 1)); got {float(a[0])!r} ... {float(a[-1])!r}"
            )
    return None


class _Segments:
    """The pieces of the recalibrated law of ``Z' = (Y - mu) / sigma``.

    For a map ``R`` with knots ``(x_k, y_k)``: slopes ``s_k``, the knots in
    z-space ``zk = Phi^-1(x_k)`` (``-inf`` and ``+inf`` at the ends), the
    moments of ``Z'`` and the constants of the CRPS (module docstring).
    """

    def __init__(self, xk: np.ndarray, yk: np.ndarray) -> None:
        from scipy.special import ndtri

        self.xk, self.yk = xk, yk
        self.s = np.diff(yk) / np.diff(xk)
        zk = ndtri(xk)
        zk[0], zk[-1] = -np.inf, np.inf
        self.zk = zk
        self.inner = zk[1:-1]
        phi = _phi(zk)
        self.phi = phi
        i0, i1, i2 = _segment_integrals(xk, zk, phi)
        self.m1 = float((self.s * i0).sum())
        self.var = float((self.s * i2).sum()) - self.m1 * self.m1
        self.c = float((self.s * (yk[:-1] * i0 + self.s * i1)).sum())
        # tail[k] = sum_{j > k} s_j int_{segment j} Phi^-1(u) du
        rev = np.cumsum((self.s * i0)[::-1])[::-1]
        self.tail = np.append(rev[1:], 0.0)

    def segment(self, z: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.inner, z, side="right")

    def cdf(self, z: np.ndarray, k: np.ndarray) -> np.ndarray:
        from scipy.special import ndtr

        return np.asarray(self.yk[k] + self.s[k] * (ndtr(z) - self.xk[k]))


# --------------------------------------------------------------------------- any distribution


def _view(d: PredictiveDistribution) -> PredictiveDistribution:
    """The distribution the map acts on: ``d`` itself, or for an ensemble its quantile set.

    An ensemble of ``k`` members is read as the quantile set of its sorted
    members at the levels ``j / (k + 1)`` of their ranks (the ``k`` members
    and the target are exchangeable when the ensemble is calibrated, so the
    ``j``-th smallest member is the ``j / (k + 1)`` quantile of the target on
    average): linear between members, unknown tails of mass ``1 / (k + 1)``
    beyond the outermost members (randomised in the PIT).
    """
    if isinstance(d, SampleEnsemble):
        k = d.n_members
        return QuantileSet(np.arange(1, k + 1) / (k + 1), np.sort(d.samples, axis=1))
    return d


def _randomised_pit(view: PredictiveDistribution, y: np.ndarray, seed: Any) -> np.ndarray:
    """``U = lo + V (hi - lo)``, ``V ~ U(0, 1)`` seeded, over the PIT interval of each row.

    Czado, Gneiting & Held 2009: uniform on [0, 1] when the predictions are
    calibrated; ``lo == hi`` (continuous at ``y``) gives the PIT itself. The
    draws are those of :func:`calipers.regression.pit.randomized_pit` (the
    PIT of the diagnostics, with the same seed): a stream of their own,
    ``numpy.random.default_rng([seed, 2009])``, for the rows with a jump.
    """
    P = ProbabilisticPredictions(distribution=view, targets=y, sample_weight=None)
    return np.clip(randomized_pit(P, seed), 0.0, 1.0)


def _inverse_map(xk: np.ndarray, yk: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``R^-1(q)``, kept inside (0, 1) so that every quantile of the base distribution is finite."""
    return np.clip(np.interp(q, yk, xk), _TINY, 1.0 - 2.0**-53)


def _crps_quantile_form(
    view: QuantileSet, y: np.ndarray, xk: np.ndarray, yk: np.ndarray
) -> np.ndarray:
    """Quantile-averaged pinball form of the CRPS at the set's own levels, recalibrated.

    ``(2 / m) sum_j rho_tau_j(y - Q'(tau_j))`` with ``Q'(tau) = Q(R^-1(tau))``
    (the form :meth:`calipers.regression.QuantileSet.crps` scores a quantile
    set by; with ``R`` the identity it is that number). One level at a time:
    O(n) memory.
    """
    levels = view.levels
    s = _inverse_map(xk, yk, levels)
    total = np.zeros(y.shape[0])
    for tau, sj in zip(levels, s, strict=True):
        u = y - view.quantile(float(sj))
        total += u * (tau - (u < 0))
    return 2.0 * total / levels.shape[0]


#: Gauss-Legendre nodes per half line of the CRPS integral of a continuous distribution.
_CRPS_NODES = 256
_CRPS_T, _CRPS_W = np.polynomial.legendre.leggauss(_CRPS_NODES)
_CRPS_T = 0.5 * (_CRPS_T + 1.0)
_CRPS_W = 0.5 * _CRPS_W


def _crps_continuous(
    view: PredictiveDistribution, y: np.ndarray, xk: np.ndarray, yk: np.ndarray
) -> np.ndarray:
    """CRPS ``int (F'(x) - 1{x >= y})**2 dx`` of ``F' = R(F)``: the CRPS of ``F`` plus a quadrature.

    The distribution's own CRPS (closed form for the named families) plus
    the integral of the difference of the integrands, ``R(F)**2 - F**2``
    below ``y`` and ``(1 - R(F))**2 - (1 - F)**2`` above, which is small where
    ``R`` is near the identity. Each half line ``x = y -+ c t / (1 - t)``, ``t`` in [0, 1) (``c`` the
    row's interquartile range), is integrated by Gauss-Legendre in ``t``
    with :data:`_CRPS_NODES` nodes: one CDF evaluation per node and half, no
    quantile function (which is slow for some families). The integrand is
    smooth between the knots of ``R``; the tests measure the error against
    the closed forms (Gaussian predictions through the generic path).
    """
    exact = view.crps(y)
    if xk.shape[0] == 2:  # R is the identity: the distribution's own CRPS
        return exact
    c = view.quantile(0.75) - view.quantile(0.25)
    c = np.where(np.isfinite(c) & (c > 0), c, 1.0)
    total = np.zeros(y.shape[0])
    for t, w in zip(_CRPS_T, _CRPS_W, strict=True):
        step = c * (t / (1.0 - t))
        jac = w * c / (1.0 - t) ** 2
        F = view.cdf(y - step)
        G = np.interp(F, xk, yk)
        total += jac * ((G - F) * (G + F))  # R(F)**2 - F**2, below y
        F = view.cdf(y + step)
        G = np.interp(F, xk, yk)
        total += jac * ((F - G) * (2.0 - F - G))  # (1 - R(F))**2 - (1 - F)**2, above y
    return exact + total


#: Tail probability beyond which the terms of a count distribution's CRPS sum are dropped.
_COUNT_TAIL = 1e-13


def _crps_counts(
    view: PredictiveDistribution, y: np.ndarray, xk: np.ndarray, yk: np.ndarray
) -> np.ndarray:
    """CRPS of a recalibrated count distribution: a sum over the integers.

    ``F'`` is constant on ``[k, k + 1)``, so ``int (F'(x) - 1{x >= y})**2 dx``
    is the sum over ``k`` of ``F'(k)**2 (length below y) + (1 - F'(k))**2
    (length above y)`` on that unit interval. The sum runs over the window
    ``[a, b]`` from the ``1e-13`` to the ``1 - 1e-13`` quantile of the
    recalibrated distribution of each row (one unit wider); outside it ``F'``
    is within ``1e-13`` of 0 or 1, so the rest is the length of the target's side beyond the
    window, ``max(0, a - y) + max(0, y - b - 1)``. The loop length is the
    width of the distribution, whatever the target (an outlying target adds
    one term, not one per unit).
    """
    s_lo, s_hi = _inverse_map(xk, yk, np.array([_COUNT_TAIL, 1.0 - _COUNT_TAIL]))
    a = np.floor(view.quantile(float(s_lo))) - 1.0
    b = np.floor(view.quantile(float(s_hi))) + 1.0
    total = np.maximum(a - y, 0.0) + np.maximum(y - (b + 1.0), 0.0)
    bad = ~(np.isfinite(a) & np.isfinite(b))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"QuantileRecalibration: the CRPS of the counts of row {i} cannot be summed: their "
            f"quantiles at {float(s_lo)!r} and {float(s_hi)!r} are {float(a[i] + 1)!r} and "
            f"{float(b[i] - 1)!r} (scipy.stats could not compute them)"
        )
    span = int(np.max(b - a)) + 1
    check_work(
        "mean",
        f"a {type(view).__name__} of counts",
        [("rows", y.shape[0]), ("integers in the widest row's central range", span)],
        unit="CDF evaluations",
        advice="the CRPS of counts sums over the integers each distribution covers; score "
        "fewer rows at a time",
    )
    for j in range(span):
        k = a + j
        inside = k <= b
        Fk = np.interp(view.cdf(k), xk, yk)
        below = np.clip(y - k, 0.0, 1.0)  # the part of [k, k + 1) below y
        total += np.where(inside, Fk * Fk * below + (1.0 - Fk) ** 2 * (1.0 - below), 0.0)
    return total


@register_regression
class QuantileRecalibration(RegressionRecalibrator):
    """Quantile recalibration of any predictive distribution: ``F'(y) = R(F(y))`` (Kuleshov et al. 2018).

    ``R`` is a continuous, strictly increasing piecewise-linear map of [0, 1]
    onto itself, fitted on the calibration split to the empirical CDF of the
    PIT values (Kuleshov, Fenner & Ermon 2018, Algorithm 1; construction,
    deviations and the closed-form scores in the module docstring). The output
    is not Gaussian (``gaussian = False``, no ``predict_variance``); it is
    injective (``R`` is strictly increasing).

    Gaussian predictions are given as arrays (``mean`` with ``variance=`` or
    ``std=``) or as a :class:`~calipers.regression.Gaussian`; every other
    :class:`~calipers.regression.PredictiveDistribution` (``Parametric``,
    ``QuantileSet``, ``SampleEnsemble``) is passed in place of the means,
    without a spread. Their PIT is randomised at atoms and in unknown tails
    (Czado, Gneiting & Held 2009; ``fit(..., seed=0)``), an ensemble is read as
    the quantile set of its members at their rank levels, and the recalibrated
    quantiles of a quantile set or ensemble stay within its outermost
    quantiles (module docstring).

    Parameters
    ----------
    n_knots : int or None, default None
        Largest number of interior knots of ``R`` (adjacent PAV blocks are
        pooled into this many groups of equal weight; fewer knots when there
        are fewer distinct calibration PIT values). None: the larger of
        ``ceil(sqrt(n))`` and ``n // 10`` for ``n`` calibration rows, at most
        100 (with ``sample_weight``: ``n`` is the larger of the number of rows
        of positive weight and the total weight, so an integer weight counts
        as that many repeated rows). Held-out NLL gain on N(mu, (2 sigma)**2)
        data, mean of 20 seeded splits: n = 50: 0.50 with 8 knots, 0.41 with 5;
        n = 100: 0.53 with 10 knots, 0.23 with 100; n = 300: 0.69 with 30, 0.66
        with 18; n = 1000: 0.74 with 100, 0.71 with 32. Too many knots for the
        data make the density ``R'`` noisy and the NLL worse.

    Attributes
    ----------
    knots_x_ : numpy.ndarray
        ``(K + 1,)`` PIT values of the knots, strictly increasing from 0 to 1.
    knots_y_ : numpy.ndarray
        ``(K + 1,)`` values of ``R`` at the knots, strictly increasing from 0 to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration import QuantileRecalibration
    >>> from calipers.regression import pit_values
    >>> rng = np.random.default_rng(0)
    >>> mu, sd = rng.normal(size=4000), rng.uniform(0.5, 2.0, 4000)
    >>> y = mu + 0.5 * sd * rng.normal(size=4000)          # over-dispersed predictions
    >>> rc = QuantileRecalibration().fit(mu[:2000], std=sd[:2000], targets=y[:2000])
    >>> before = pit_values(mu[2000:], std=sd[2000:], targets=y[2000:])
    >>> after = rc.predict_cdf(mu[2000:], std=sd[2000:], targets=y[2000:])
    >>> [round(float(np.mean((u > 0.25) & (u < 0.75))), 2) for u in (before, after)]
    [0.83, 0.5]
    >>> {k: round(v, 2) for k, v in rc.improvement(mu[2000:], std=sd[2000:], targets=y[2000:]).items()}
    {'nll': 0.29, 'dss': 0.64, 'crps': 0.06}

    A Student-t model whose scales are 2.5 times too small:

    >>> from calipers.regression import Parametric
    >>> y = mu + 2.5 * sd * rng.standard_t(4, size=4000)
    >>> T = Parametric("student_t", df=4.0, loc=mu, scale=sd)
    >>> fit, held = np.arange(2000), np.arange(2000, 4000)
    >>> rc = QuantileRecalibration().fit(T.take(fit), targets=y[fit])
    >>> before = T.take(held).cdf(y[held])
    >>> after = rc.predict_pit(T.take(held), targets=y[held])
    >>> [round(float(np.mean((u > 0.25) & (u < 0.75))), 2) for u in (before, after)]
    [0.23, 0.5]
    >>> lo, hi = rc.predict_interval(T.take(held), level=0.9)
    >>> round(float(np.mean((lo <= y[held]) & (y[held] <= hi))), 2)
    0.89
    >>> sorted(rc.improvement(T.take(held), targets=y[held]))
    ['crps', 'nll']
    """

    gaussian = False
    kinds = ALL_KINDS
    _injective = True
    schema = Schema(
        params={"n_knots": Integer(lo=1, none_ok=True)},
        state={
            "knots_x_": Array((None,), lo=0.0, hi=1.0, order="increasing"),
            "knots_y_": Array((None,), lo=0.0, hi=1.0, order="increasing"),
        },
        state_checks=(_knots_valid,),
    )

    def __init__(self, n_knots: int | None = None) -> None:
        self.n_knots = n_knots

    def _knot_count(self, n_blocks: int, n_rows: int) -> int:
        if self.n_knots is None:
            return min(100, max(math.ceil(math.sqrt(n_rows)), n_rows // 10), n_blocks)
        return min(int(self.n_knots), n_blocks)

    def _fit(self, G: GaussianPredictions) -> None:
        from scipy.special import ndtr

        u = np.asarray(ndtr((G.targets - G.mean) / G.std))
        self.knots_x_, self.knots_y_ = _fit_knots(u, G.sample_weight, self._knot_count)

    def _segments(self) -> _Segments:
        return _Segments(self.knots_x_, self.knots_y_)

    def _cdf(self, mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
        seg = self._segments()
        z = (y - mu) / np.sqrt(var)
        return np.clip(seg.cdf(z, seg.segment(z)), 0.0, 1.0)

    def _quantile(self, mu: np.ndarray, var: np.ndarray, q: np.ndarray) -> np.ndarray:
        z = _standard_quantile(self.knots_x_, self.knots_y_, q)
        return np.asarray(mu[:, None] + np.sqrt(var)[:, None] * z[None, :])

    def _score_rows(self, mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        seg = self._segments()
        sd = np.sqrt(var)
        z = (y - mu) / sd
        k = seg.segment(z)
        nll = 0.5 * (_LOG_2PI + np.log(var) + z * z) - np.log(seg.s[k])
        m = mu + sd * seg.m1
        v = var * seg.var
        dss = (y - m) ** 2 / v + np.log(v)
        F = seg.cdf(z, k)
        Q = seg.s[k] * (_phi(z) - seg.phi[k + 1]) + seg.tail[k]
        crps = sd * 2.0 * (Q + z * (F - 0.5) - seg.c)
        return {"nll": nll, "dss": dss, "crps": crps}

    # ------------------------------------------------------------------ any predictive distribution

    def _map(self, identity: bool) -> tuple[np.ndarray, np.ndarray]:
        if identity:
            return np.array([0.0, 1.0]), np.array([0.0, 1.0])
        return self.knots_x_, self.knots_y_

    def _fit_distribution(self, P: ProbabilisticPredictions, seed: Any) -> None:
        view = _view(P.distribution)
        u = _randomised_pit(view, P.targets, seed)
        self.knots_x_, self.knots_y_ = _fit_knots(u, P.sample_weight, self._knot_count)

    def _cdf_distribution(self, d: PredictiveDistribution, y: np.ndarray) -> np.ndarray:
        F = _view(d).cdf(y)
        return np.clip(np.interp(F, self.knots_x_, self.knots_y_), 0.0, 1.0)

    def _pit_distribution(self, d: PredictiveDistribution, y: np.ndarray, seed: Any) -> np.ndarray:
        u = _randomised_pit(_view(d), y, seed)
        return np.clip(np.interp(u, self.knots_x_, self.knots_y_), 0.0, 1.0)

    def _quantile_distribution(self, d: PredictiveDistribution, q: np.ndarray) -> np.ndarray:
        view = _view(d)
        s = _inverse_map(self.knots_x_, self.knots_y_, q)
        out = np.empty((view.n_samples, q.shape[0]))
        for j in range(q.shape[0]):
            out[:, j] = view.quantile(float(s[j]))
        return out

    def _score_rows_distribution(
        self, d: PredictiveDistribution, y: np.ndarray, identity: bool = False
    ) -> dict[str, np.ndarray]:
        xk, yk = self._map(identity)
        view = _view(d)
        if view.kind != "parametric":  # a quantile set (or an ensemble read as one)
            assert isinstance(view, QuantileSet)
            return {"crps": _crps_quantile_form(view, y, xk, yk)}
        F = view.cdf(y)
        slope = np.diff(yk) / np.diff(xk)
        k = np.clip(np.searchsorted(xk, F, side="right") - 1, 0, slope.shape[0] - 1)
        # on one segment of R the density (or mass) is the slope times the original one
        nll = -(np.log(slope[k]) + view.logpdf(y))
        if view.is_discrete:
            # an atom whose mass spans knots of R: R(F(y)) - R(F(y-)) (no cancellation:
            # it is at least the mass between the knots inside it)
            F_left = view.cdf_left(y)
            k_left = np.searchsorted(xk, F_left, side="right") - 1
            spans = np.clip(k_left, 0, slope.shape[0] - 1) != k
            if spans.any():
                mass = np.interp(F[spans], xk, yk) - np.interp(F_left[spans], xk, yk)
                nll[spans] = -np.log(mass)
            crps = _crps_counts(view, y, xk, yk)
        else:
            crps = _crps_continuous(view, y, xk, yk)
        return {"nll": nll, "crps": crps}
