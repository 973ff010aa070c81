"""One-sided quantile calibration error of Kuleshov et al. 2018.

A regression model that predicts a CDF ``F_t`` for every target ``y_t`` is
calibrated in quantiles (Kuleshov et al. 2018, §3) when, for every level
``p``, a fraction ``p`` of the targets falls at or below the predicted
``p``-quantile, that is when ``P(F_t(y_t) <= p) = p``. Their calibration
error compares the observed one-sided coverage

``p_hat_j = |{t : F_t(y_t) <= p_j}| / T``

with the nominal level at ``m`` levels ``0 < p_1 < ... < p_m < 1``:

``cal = sum_j w_j (p_j - p_hat_j)**2``.

Here ``F_t`` is any predictive distribution (a Gaussian given by arrays, or
any :class:`~calipers.regression.PredictiveDistribution`) and ``F_t(y_t)``
is the PIT value of :func:`calipers.regression.pit_values`, randomised where
``F_t`` jumps (Czado, Gneiting & Held 2009). For a
:class:`~calipers.regression.QuantileSet` at its own levels, ``F_t(y_t) <=
p_j`` is exactly ``y_t <= q_tj``: the coverage of its own quantiles. Unlike the central-interval
coverage of :func:`calipers.regression.quantile_calibration`, the one-sided
coverage sees a shift of the predicted means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from .distributions import QuantileSet, check_predictive
from .inputs import spread_by_name
from .pit import DEFAULT_PIT_SEED, _check_seed, randomized_pit

__all__ = [
    "QuantileCalibrationCurve",
    "quantile_calibration_curve",
    "quantile_calibration_error",
]

#: Default levels: 0.05, 0.10, ..., 0.95, the grid of
#: :func:`calipers.regression.quantile_calibration`.
DEFAULT_LEVELS = np.linspace(0.05, 0.95, 19)


def _check_vector(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1 or arr.shape[0] < 1:
        raise CalibrationInputError(
            f"{name} must be a non-empty 1-D array of numbers; got {values!r}"
        )
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"{name} must be finite; entry {i} is {float(arr[i])!r}")
    return arr


def _check_levels(levels: Any) -> np.ndarray:
    if levels is None:
        return DEFAULT_LEVELS.copy()
    lv = _check_vector(levels, "levels")
    bad = ~((lv > 0) & (lv < 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"levels must lie strictly between 0 and 1; entry {i} is {float(lv[i])!r}"
        )
    if lv.shape[0] > 1 and not np.all(np.diff(lv) > 0):
        i = int(np.flatnonzero(~(np.diff(lv) > 0))[0]) + 1
        raise CalibrationInputError(
            f"levels must be strictly increasing; entry {i} is {float(lv[i])!r} "
            f"after {float(lv[i - 1])!r}"
        )
    return lv


def _check_level_weights(weights: Any, m: int) -> np.ndarray:
    if weights is None:
        return np.ones(m)
    wj = _check_vector(weights, "weights")
    if wj.shape[0] != m:
        raise CalibrationInputError(
            f"weights has {wj.shape[0]} entries but there are {m} levels; give one weight per level"
        )
    neg = wj < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise CalibrationInputError(f"weights must be >= 0; entry {i} is {float(wj[i])!r}")
    return wj


@dataclass(frozen=True)
class QuantileCalibrationCurve:
    """Observed one-sided coverage at nominal levels, and the error it gives.

    Returned by :func:`quantile_calibration_curve` (Kuleshov et al. 2018,
    §3: the calibration plot of ``p_hat_j`` against ``p_j`` and the error
    ``cal``).

    Attributes
    ----------
    levels : numpy.ndarray
        ``(m,)`` nominal levels ``p_j``, strictly increasing in (0, 1).
    observed : numpy.ndarray
        ``(m,)`` (weighted) fraction ``p_hat_j`` of rows whose PIT value
        ``F_t(y_t)`` is ``<= p_j``. Below the diagonal at small levels and
        above it at large ones (an S-shaped curve) when the predicted
        variances are too large; the reverse when they are too small.
    weights : numpy.ndarray
        ``(m,)`` level weights ``w_j``.
    error : float
        ``sum_j w_j (p_j - p_hat_j)**2``, in squared probability units.

    Examples
    --------
    >>> from calipers.regression import quantile_calibration_curve
    >>> c = quantile_calibration_curve([0.0, 0.0], variance=[1.0, 1.0], targets=[-1.0, 1.0], levels=[0.5])
    >>> c.observed.tolist(), c.error
    ([0.5], 0.0)
    """

    levels: np.ndarray
    observed: np.ndarray
    weights: np.ndarray
    error: float


@fill_doc
@spread_by_name
def quantile_calibration_curve(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
    weights: Any = None,
    seed: Any = DEFAULT_PIT_SEED,
) -> QuantileCalibrationCurve:
    """One-sided coverage ``p_hat_j`` of predictive distributions and Kuleshov's error.

    ``p_hat_j = sum_t v_t 1{F_t(y_t) <= p_j} / sum_t v_t`` with ``F_t`` the
    predicted CDF (N(mu_t, sigma_t**2) for Gaussian arrays; the randomised
    PIT where ``F_t`` jumps) and ``v_t`` the row weights (1 by
    default, which gives ``|{t : F_t(y_t) <= p_j}| / T`` of Kuleshov et al.
    2018, §3), and ``cal = sum_j w_j (p_j - p_hat_j)**2``.

    Parameters
    ----------
    {mean}
        Or a predictive distribution of any kind
        (:class:`~calipers.regression.PredictiveDistribution`; then without
        ``variance`` and ``std``).
    {variance}
    {std}
    {targets}
    {sample_weight}
    levels : array-like of shape (m,), optional
        Nominal levels ``p_j``, strictly increasing and strictly inside
        (0, 1). Default ``0.05, 0.10, ..., 0.95`` (19 levels, the grid of
        :func:`calipers.regression.quantile_calibration`): the tails beyond
        5% and 95% are left out because their coverage is estimated from few
        rows. For a :class:`~calipers.regression.QuantileSet` the default is
        its own levels, where the coverage counts the targets below each
        predicted quantile.
    weights : array-like of shape (m,), optional
        Non-negative level weights ``w_j``. Default None: all 1, the plain
        sum over levels (pass ``numpy.full(m, 1 / m)`` for the mean squared
        gap, which does not grow with the number of levels).
    seed : int, numpy.random.Generator or None, default 0
        Seed of the randomised PIT (:func:`calipers.regression.pit_values`);
        continuous distributions draw nothing.

    Returns
    -------
    QuantileCalibrationCurve
        The levels, the observed coverage, the level weights and the error.

    Examples
    --------
    >>> from calipers.regression import quantile_calibration_curve
    >>> c = quantile_calibration_curve([0.0, 0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0, 1.0],
    ...                                targets=[-2.0, -1.0, -0.5, 3.0], levels=[0.25, 0.75])
    >>> c.observed.tolist(), c.error
    ([0.5, 0.75], 0.0625)
    """
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    if levels is None and isinstance(P.distribution, QuantileSet):
        lv = P.distribution.levels.copy()  # the set's own levels
    else:
        lv = _check_levels(levels)
    wj = _check_level_weights(weights, lv.shape[0])
    u = randomized_pit(P, _check_seed(seed))
    v = np.ones(P.n_samples) if P.sample_weight is None else P.sample_weight
    order = np.argsort(u, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(v[order])])
    # rows with u <= p_j are the first searchsorted(..., side="right") in sorted order
    k = np.searchsorted(u[order], lv, side="right")
    observed = cum[k] / cum[-1]
    error = float(np.dot(wj, (lv - observed) ** 2))
    return QuantileCalibrationCurve(levels=lv, observed=observed, weights=wj, error=error)


@fill_doc
@spread_by_name
def quantile_calibration_error(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
    weights: Any = None,
    seed: Any = DEFAULT_PIT_SEED,
) -> float:
    """Quantile calibration error of Kuleshov et al. 2018 for predictive distributions.

    ``cal = sum_j w_j (p_j - p_hat_j)**2`` with the one-sided coverage
    ``p_hat_j = |{t : F_t(y_t) <= p_j}| / T`` (Kuleshov et al. 2018, §3,
    the calibration error of their diagnostic tools). 0 when the observed
    coverage matches every level; about ``sum_j w_j p_j (1 - p_j) / T`` in
    expectation for calibrated predictions (the binomial variance of
    ``p_hat_j``), so it is biased upwards in small samples. The curve
    ``p_hat_j`` is returned by :func:`quantile_calibration_curve`.

    Parameters
    ----------
    {mean}
        Or a predictive distribution of any kind
        (:class:`~calipers.regression.PredictiveDistribution`; then without
        ``variance`` and ``std``).
    {variance}
    {std}
    {targets}
    {sample_weight}
    levels : array-like of shape (m,), optional
        Nominal levels, strictly increasing in (0, 1). Default
        ``0.05, 0.10, ..., 0.95`` (19 levels).
    weights : array-like of shape (m,), optional
        Non-negative level weights. Default None (all 1).
    seed : int, numpy.random.Generator or None, default 0
        Seed of the randomised PIT (:func:`calipers.regression.pit_values`).

    Returns
    -------
    float
        The error, in squared probability units (>= 0).

    Examples
    --------
    >>> from calipers.regression import quantile_calibration_error
    >>> quantile_calibration_error([0.0, 0.0], std=[1.0, 1.0], targets=[5.0, 6.0],
    ...                            levels=[0.1, 0.5], weights=[1.0, 2.0])
    0.51
    """
    return quantile_calibration_curve(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        levels=levels,
        weights=weights,
        seed=seed,
    ).error
