"""Scores, coverage and width of prediction intervals, per row and as means.

A central prediction interval ``[l, u]`` at nominal coverage ``level``
(``1 - alpha``: the ``alpha / 2`` and ``1 - alpha / 2`` quantiles) is scored
with the interval score of Gneiting & Raftery 2007 (eq. 43; Winkler 1972), in
target units, smaller is better::

    IS_alpha(l, u; y) = (u - l) + (2 / alpha) (l - y) 1{y < l} + (2 / alpha) (y - u) 1{y > u}

the width plus a penalty for a miss, proper for the pair of quantiles. A set
of ``K`` central intervals and the median is scored with the weighted
interval score of Bracher et al. 2021::

    WIS(y) = (0.5 |y - m| + sum_k (alpha_k / 2) IS_alpha_k(l_k, u_k; y)) / (K + 0.5)

which equals the quantile-averaged pinball CRPS
(:func:`calipers.regression.crps_quantiles_per_row`) over the ``2 K + 1``
levels exactly. :func:`interval_coverage` and :func:`interval_width` give
the two things a practitioner reads first: how often the interval holds the
target (the closed interval ``l <= y <= u``), against the nominal level, and
how wide it is on average.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from ._score_arrays import (
    as_float_array,
    as_level,
    as_levels,
    finite_rows,
    same_rows,
    weighted_mean,
)

__all__ = [
    "interval_score",
    "interval_score_per_row",
    "weighted_interval_score",
    "weighted_interval_score_per_row",
    "interval_coverage",
    "interval_width",
]


def _bounds(lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray]:
    lo = as_float_array(lower, "lower", 1)
    hi = as_float_array(upper, "upper", 1)
    same_rows(hi, "upper", lo.shape[0], "lower")
    bad = lo > hi
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"lower must not exceed upper; row {i} has lower {float(lo[i])!r} > upper "
            f"{float(hi[i])!r}"
        )
    return lo, hi


def _is(lo: np.ndarray, hi: np.ndarray, y: np.ndarray, alpha: Any) -> np.ndarray:
    """The interval score of bounds and targets of the same shape (``alpha`` broadcast)."""
    miss = np.maximum(lo - y, 0.0)  # below the interval
    miss += np.maximum(y - hi, 0.0)  # above it (at most one of the two is positive)
    miss *= 2.0 / alpha
    miss += hi - lo
    return miss


@fill_doc
def interval_score_per_row(
    lower: Any, upper: Any, targets: Any, *, level: float = 0.9
) -> np.ndarray:
    """Interval score of each central prediction interval, in target units.

    ``IS = (u - l) + (2 / alpha) (l - y) 1{y < l} + (2 / alpha) (y - u) 1{y > u}``
    with ``alpha = 1 - level`` (Gneiting & Raftery 2007, eq. 43); the same
    numbers as scoringrules' ``interval_score(obs, lower, upper, alpha)``.

    Parameters
    ----------
    lower, upper : array-like or tensor of shape (n,)
        Bounds of each row's central interval, ``lower <= upper``, in target
        units; finite.
    {targets}
    level : float, default 0.9
        Nominal coverage ``1 - alpha`` of the intervals (0.9 for the 5 % and
        95 % quantiles), strictly inside (0, 1).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, in target units.

    Raises
    ------
    CalibrationInputError
        On a row with ``lower > upper`` (the message names it), shapes that do
        not match, a value that is not finite, or a level outside (0, 1).

    Examples
    --------
    An 80 % interval [0, 2] (``2 / alpha = 10``): width 2 when it holds the
    target, plus 10 per unit of a miss:

    >>> from calipers.regression import interval_score_per_row
    >>> interval_score_per_row([0.0, 0.0], [2.0, 2.0], [1.0, 2.5], level=0.8).round(12).tolist()
    [2.0, 7.0]
    """
    alpha = 1.0 - as_level(level)
    lo, hi = _bounds(lower, upper)
    y = as_float_array(targets, "targets", 1)
    same_rows(y, "targets", lo.shape[0], "lower")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _is(lo, hi, y, alpha)
    return finite_rows(out, lambda a, b, c: _is(a, b, c, alpha), (lo, hi, y), headroom=8.0 / alpha)


@fill_doc
def interval_score(
    lower: Any,
    upper: Any,
    targets: Any,
    *,
    level: float = 0.9,
    sample_weight: Any = None,
) -> float:
    """Mean interval score of central prediction intervals, in target units.

    The (weighted) mean of :func:`interval_score_per_row` (Gneiting & Raftery
    2007, eq. 43).

    Parameters
    ----------
    lower, upper : array-like or tensor of shape (n,)
        Interval bounds, ``lower <= upper``.
    {targets}
    level : float, default 0.9
        Nominal coverage of the intervals, strictly inside (0, 1).
    {sample_weight}

    Returns
    -------
    float
        Mean interval score, in target units.

    Examples
    --------
    >>> from calipers.regression import interval_score
    >>> round(interval_score([0.0, 0.0], [2.0, 2.0], [1.0, 2.5], level=0.8), 12)
    4.5
    """
    rows = interval_score_per_row(lower, upper, targets, level=level)
    return weighted_mean(rows, sample_weight, "lower")


def _symmetric(levels: Any, quantiles: Any) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Levels, quantiles, the column of the median and ``K``; refuses asymmetric level sets."""
    tau = as_levels(levels)
    Q = as_float_array(quantiles, "quantiles", 2)
    m = tau.shape[0]
    if Q.shape[1] != m:
        raise CalibrationInputError(
            f"quantiles has {Q.shape[1]} columns but levels has {m} entries; give one "
            "column per level"
        )
    if m % 2 == 0 or tau[m // 2] != 0.5:
        raise CalibrationInputError(
            "the weighted interval score needs the median (level 0.5) and pairs of levels "
            f"tau and 1 - tau (Bracher et al.); got levels {tau.tolist()}"
        )
    K = m // 2
    gap = np.abs(tau[:K] + tau[::-1][:K] - 1.0)
    bad = gap > 1e-9
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"levels must come in pairs tau and 1 - tau around the median; level "
            f"{float(tau[j])!r} is paired with {float(tau[m - 1 - j])!r}"
        )
    cross = Q[:, :K] > Q[:, ::-1][:, :K]
    if cross.any():
        r, j = (int(i) for i in np.argwhere(cross)[0])
        raise CalibrationInputError(
            f"quantiles cross: row {r} has the {float(tau[j])!r}-quantile "
            f"{float(Q[r, j])!r} above the {float(tau[m - 1 - j])!r}-quantile "
            f"{float(Q[r, m - 1 - j])!r}; sort them first (QuantileSet(..., crossing='sort'))"
        )
    return tau, Q, K, m // 2


@fill_doc
def weighted_interval_score_per_row(levels: Any, quantiles: Any, targets: Any) -> np.ndarray:
    """Weighted interval score of each row's quantile set, in target units.

    ``WIS = (0.5 |y - m| + sum_k (alpha_k / 2) IS_alpha_k) / (K + 0.5)`` over the
    median ``m`` and the ``K`` central intervals ``[q_(alpha_k / 2), q_(1 -
    alpha_k / 2)]`` of the quantile set (Bracher et al. 2021, with their
    weights ``w_0 = 1/2``, ``w_k = alpha_k / 2``). It equals
    :func:`calipers.regression.crps_quantiles_per_row` over the same ``2 K +
    1`` levels exactly (each interval's weighted score is the sum of the
    pinball losses of its two bounds). For a :class:`QuantileSet` ``qs``, pass
    ``qs.levels, qs.quantiles``.

    Parameters
    ----------
    levels : array-like of shape (2 K + 1,)
        Increasing levels in (0, 1): the median 0.5 and pairs ``tau`` and
        ``1 - tau`` (to 1e-9), e.g. ``[0.05, 0.25, 0.5, 0.75, 0.95]``.
    quantiles : array-like or tensor of shape (n, 2 K + 1)
        Predicted quantiles, one column per level, in target units; the lower
        bound of each pair must not exceed the upper one.
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, in target units.

    Raises
    ------
    CalibrationInputError
        On levels without the median or not paired around it, crossing pairs
        (row and levels named), shapes that do not match, or non-finite values.

    Examples
    --------
    Median 1 and the 50 % interval [0, 2], target 3:
    ``(0.5 * 2 + 0.25 * (2 + 4 * 1)) / 1.5 = 5 / 3``.

    >>> from calipers.regression import weighted_interval_score_per_row
    >>> weighted_interval_score_per_row([0.25, 0.5, 0.75], [[0.0, 1.0, 2.0]], [3.0]).round(12).tolist()
    [1.666666666667]
    """
    tau, Q, K, mid = _symmetric(levels, quantiles)
    y = as_float_array(targets, "targets", 1)
    same_rows(y, "targets", Q.shape[0], "quantiles")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _wis(tau, Q, y, K, mid)
    return finite_rows(
        out,
        lambda Qs, ys: _wis(tau, Qs, ys, K, mid),
        (Q, y),
        headroom=8.0 * (K + 1) / float(tau[0]),
    )


def _wis(tau: np.ndarray, Q: np.ndarray, y: np.ndarray, K: int, mid: int) -> np.ndarray:
    total = 0.5 * np.abs(y - Q[:, mid])
    if K:
        alpha = 2.0 * tau[:K]  # the lower level of each pair is alpha_k / 2
        IS = _is(Q[:, :K], Q[:, ::-1][:, :K], y[:, None], alpha)
        total = total + IS @ (alpha / 2.0)
    return total / (K + 0.5)


@fill_doc
def weighted_interval_score(
    levels: Any, quantiles: Any, targets: Any, *, sample_weight: Any = None
) -> float:
    """Mean weighted interval score of quantile sets, in target units.

    The (weighted) mean of :func:`weighted_interval_score_per_row` (Bracher et
    al. 2021).

    Parameters
    ----------
    levels : array-like of shape (2 K + 1,)
        The median and pairs of levels ``tau``, ``1 - tau``.
    quantiles : array-like or tensor of shape (n, 2 K + 1)
        Predicted quantiles, one column per level.
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean score, in target units.

    Examples
    --------
    >>> from calipers.regression import weighted_interval_score
    >>> q = [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    >>> round(weighted_interval_score([0.25, 0.5, 0.75], q, [3.0, 1.0]), 12)
    1.0
    """
    rows = weighted_interval_score_per_row(levels, quantiles, targets)
    return weighted_mean(rows, sample_weight, "quantiles")


@fill_doc
def interval_coverage(lower: Any, upper: Any, targets: Any, *, sample_weight: Any = None) -> float:
    """Fraction of targets inside their prediction interval ``[lower, upper]``.

    The (weighted) share of rows with ``lower <= y <= upper`` (the closed
    interval, so a target on a bound counts as covered), to compare with the
    interval's nominal level (Gneiting & Raftery 2007, §6.2; a conformal
    interval at level ``1 - alpha`` covers at least that share on exchangeable
    data).

    Parameters
    ----------
    lower, upper : array-like or tensor of shape (n,)
        Interval bounds, ``lower <= upper``.
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Coverage in [0, 1].

    Examples
    --------
    >>> from calipers.regression import interval_coverage
    >>> interval_coverage([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 1.5, -2.0])
    0.5
    """
    lo, hi = _bounds(lower, upper)
    y = as_float_array(targets, "targets", 1)
    same_rows(y, "targets", lo.shape[0], "lower")
    inside = ((lo <= y) & (y <= hi)).astype(np.float64)
    return weighted_mean(inside, sample_weight, "lower")


@fill_doc
def interval_width(lower: Any, upper: Any, *, sample_weight: Any = None) -> float:
    """Mean width ``upper - lower`` of prediction intervals, in target units.

    The sharpness half of an interval's quality (Gneiting & Raftery 2007,
    §6.2: the interval score is the width plus the miss penalty).

    Parameters
    ----------
    lower, upper : array-like or tensor of shape (n,)
        Interval bounds, ``lower <= upper``.
    {sample_weight}

    Returns
    -------
    float
        Mean width, in target units.

    Examples
    --------
    >>> from calipers.regression import interval_width
    >>> interval_width([0.0, 1.0], [1.0, 4.0])
    2.0
    """
    lo, hi = _bounds(lower, upper)
    return weighted_mean(hi - lo, sample_weight, "lower")
