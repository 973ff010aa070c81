"""Calibration diagnostics of predictive distributions of any kind.

For predictive distributions ``F_i`` of targets ``y_i`` (Gaussian
N(mu_i, sigma_i**2) given as arrays, or any
:class:`~calipers.regression.PredictiveDistribution`):

* probability integral transform (PIT) values ``F_i(y_i)`` (``Phi((y - mu) /
  sigma)`` for a Gaussian), randomised where ``F_i`` jumps at ``y_i``
  (Czado, Gneiting & Held 2009), uniform on [0, 1] when the predictions are
  calibrated in distribution, and their histogram with its distance from
  the uniform one;
* the observed coverage of central prediction intervals at nominal levels,
  the quantile calibration of Kuleshov et al. 2018;
* variance calibration: predicted variance against the squared error, per
  equal-mass bin of predicted variance (the ENCE of Levi et al. 2022) and
  overall (the MSE against the average predicted variance of Gruber &
  Buettner 2022, Table 1, and the instance-level SE/Var ratio of their
  Table 2).

Every average is weighted by ``sample_weight`` when given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError, check_integer, check_size, check_work
from .distributions import Gaussian, ProbabilisticPredictions, QuantileSet, check_predictive
from .inputs import GaussianPredictions, spread_by_name

__all__ = [
    "interval_coverage_error",
    "DEFAULT_PIT_SEED",
    "pit_values",
    "pit_histogram",
    "PITHistogram",
    "quantile_calibration",
    "QuantileCalibration",
    "variance_calibration",
    "VarianceCalibration",
]


#: The default ``seed`` of the randomised PIT (Czado, Gneiting & Held 2009):
#: results are reproducible unless another seed is given.
DEFAULT_PIT_SEED = 0


def _weights(G: GaussianPredictions | ProbabilisticPredictions) -> np.ndarray:
    if G.sample_weight is None:
        return np.ones(G.n_samples)
    return G.sample_weight


def _gaussian(P: ProbabilisticPredictions) -> GaussianPredictions | None:
    """The Gaussian arrays of ``P`` when its distribution is a :class:`Gaussian`."""
    d = P.distribution
    if not isinstance(d, Gaussian):
        return None
    return GaussianPredictions(
        mean=d._mean, variance=d._variance, targets=P.targets, sample_weight=P.sample_weight
    )


def mean_and_variance(P: ProbabilisticPredictions, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The predicted means and variances of every row, or an error naming the kind.

    A :class:`Gaussian` gives its own arrays (the numbers of the Gaussian
    functions, bit for bit); a :class:`~calipers.regression.Parametric` its
    closed-form moments; a :class:`~calipers.regression.SampleEnsemble` the
    members' mean and variance (``ddof = 0``). A quantile set has no
    variance.
    """
    d = P.distribution
    if isinstance(d, Gaussian):
        return d._mean, d._variance
    m = d.mean()
    v = d.variance()
    if m is None or v is None:
        raise CalibrationInputError(
            f"{what} needs a predicted mean and variance per row; a {type(d).__name__} "
            f"({d.kind}) states neither (give a Gaussian, a Parametric distribution or a "
            "SampleEnsemble, or use quantile_calibration for quantile sets)"
        )
    for name, arr, rule in (("mean", m, np.isfinite(m)), ("variance", v, np.isfinite(v) & (v > 0))):
        bad = ~rule
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"{what} needs a finite predicted {name}"
                + (" > 0" if name == "variance" else "")
                + f" in every row; the {type(d).__name__}'s {name} of row {i} is {float(arr[i])!r}"
            )
    return m, v


def _check_seed(seed: Any) -> Any:
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise CalibrationInputError(
            f"seed must be a non-negative integer, a numpy.random.Generator or None; got {seed!r}"
        )
    return int(seed)


#: Mixed into an integer seed, so the PIT's draws are a stream of their own: data
#: simulated with ``numpy.random.default_rng(seed)`` and the PIT of the same seed
#: would otherwise share their uniforms (and a calibrated model would look miscalibrated).
_PIT_STREAM = 2009


def _pit_rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([int(seed), _PIT_STREAM])


def randomized_pit(P: ProbabilisticPredictions, seed: Any = DEFAULT_PIT_SEED) -> np.ndarray:
    """The (randomised) PIT of every row of checked predictions.

    ``u_i = lo_i + V_i (hi_i - lo_i)`` with ``(lo_i, hi_i)`` the
    distribution's :meth:`~calipers.regression.PredictiveDistribution.pit_interval`
    (``(F(y-), F(y))``; the rank range for an ensemble) and ``V_i`` uniform on
    [0, 1], drawn for the rows where ``lo_i < hi_i`` only, in row order
    (Czado, Gneiting & Held 2009), from ``numpy.random.default_rng([seed,
    2009])`` for an integer seed (a stream of its own: not the uniforms of
    ``default_rng(seed)``, which simulated data often come from), from
    ``seed`` itself when it is a Generator. A continuous distribution gives
    ``u_i = F_i(y_i)`` and draws nothing.
    """
    G = _gaussian(P)
    if G is not None:
        from scipy.special import ndtr

        return np.asarray(ndtr((G.targets - G.mean) / G.std), dtype=np.float64)
    lo, hi = P.distribution.pit_interval(P.targets)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    jump = hi > lo
    if not jump.any():
        return hi
    rng = _pit_rng(seed)
    u = hi.copy()
    idx = np.flatnonzero(jump)
    u[idx] = lo[idx] + rng.uniform(size=idx.shape[0]) * (hi[idx] - lo[idx])
    return u


@fill_doc
@spread_by_name
def pit_values(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    seed: Any = DEFAULT_PIT_SEED,
) -> np.ndarray:
    """Probability integral transform of each target under its predictive distribution.

    ``u_i = F_i(y_i)``, the predicted CDF at the observed target
    (``Phi((y_i - mu_i) / sigma_i)`` for a Gaussian). If every target is
    drawn from its predicted distribution the ``u_i`` are independent and
    uniform on [0, 1]; Kuleshov et al. 2018 (§3) call predictions whose PIT
    values are uniform calibrated (in quantiles). Where ``F_i`` jumps at
    ``y_i`` (a count, an atom, an unknown tail of a quantile set) the PIT
    is randomised, ``u_i ~ Uniform(F_i(y_i-), F_i(y_i))`` (Czado, Gneiting &
    Held 2009), which is uniform again for calibrated predictions; for a
    :class:`~calipers.regression.SampleEnsemble` it is the randomised rank of
    ``y_i`` among the members (``Uniform(#{x < y} / (k + 1), (#{x <= y} + 1)
    / (k + 1))``, the verification rank histogram).

    Parameters
    ----------
    {mean}
        Or a predictive distribution of any kind
        (:class:`~calipers.regression.PredictiveDistribution`; then without
        ``variance`` and ``std``).
    {variance}
    {std}
    {targets}
    seed : int, numpy.random.Generator or None, default 0
        Seed of the uniform draws of the randomised PIT (``DEFAULT_PIT_SEED``
        = 0, so results repeat). An integer seeds
        ``numpy.random.default_rng([seed, 2009])``, a stream of its own (data
        simulated with ``default_rng(seed)`` do not share its uniforms); a
        Generator is used as it is; None draws fresh entropy. Continuous
        distributions draw nothing.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 values in [0, 1].

    Examples
    --------
    >>> from calipers.regression import pit_values, Parametric
    >>> pit_values([0.0, 0.0], std=[1.0, 2.0], targets=[0.0, 2.0]).round(4).tolist()
    [0.5, 0.8413]
    >>> u = pit_values(Parametric("poisson", mu=[1.0]), targets=[0.0])
    >>> bool(0.0 <= u[0] <= 0.3679)
    True
    """
    P = check_predictive(mean, variance=variance, std=std, targets=targets)
    return randomized_pit(P, _check_seed(seed))


@dataclass(frozen=True)
class PITHistogram:
    """Histogram of PIT values and their distance from the uniform distribution.

    Returned by :func:`pit_histogram` (Kuleshov et al. 2018, §3).

    Attributes
    ----------
    edges : numpy.ndarray
        ``(n_bins + 1,)`` equally spaced bin edges on [0, 1].
    counts : numpy.ndarray
        ``(n_bins,)`` total weight of the rows in each bin (row counts without
        weights). Bins are ``[e_b, e_{b+1})``, the last one closed.
    l1_distance : float
        ``sum_b |counts_b / total - 1 / n_bins|``: the L1 distance between the
        binned PIT distribution and the uniform one, in [0, 2 - 2 / n_bins].
    ks_statistic : float
        ``sup_u |F_n(u) - u|``, the Kolmogorov-Smirnov statistic of the
        (weighted) empirical distribution ``F_n`` of the unbinned PIT values
        against the uniform distribution, in [0, 1].

    Examples
    --------
    >>> from calipers.regression import pit_histogram
    >>> h = pit_histogram([0.0, 0.0], variance=[1.0, 1.0], targets=[-1.0, 1.0], n_bins=2)
    >>> h.counts.tolist(), h.l1_distance
    ([1.0, 1.0], 0.0)
    """

    edges: np.ndarray
    counts: np.ndarray
    l1_distance: float
    ks_statistic: float


@fill_doc
@spread_by_name
def pit_histogram(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 10,
    seed: Any = DEFAULT_PIT_SEED,
) -> PITHistogram:
    """Histogram of the PIT values and two distances from uniformity.

    The PIT histogram diagnoses calibration in distribution (Kuleshov et al.
    2018, §3; Gneiting & Raftery 2007): flat when calibrated, U-shaped when
    the predicted spread is too small, hump-shaped when too large. Any kind
    of predictive distribution; the PIT is randomised where the distribution
    jumps (:func:`pit_values`; Czado, Gneiting & Held 2009).

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
    n_bins : int, default 10
        Number of equal-width bins on [0, 1], at most
        ``calipers.validation.MAX_BINS`` (2**20).
    seed : int, numpy.random.Generator or None, default 0
        Seed of the randomised PIT (see :func:`pit_values`).

    Returns
    -------
    PITHistogram
        The counts, the L1 distance of the binned distribution from uniform
        and the KS statistic of the unbinned PIT values.

    Examples
    --------
    >>> from calipers.regression import pit_histogram
    >>> h = pit_histogram([0.0], variance=[1.0], targets=[0.0], n_bins=4)
    >>> h.counts.tolist(), h.l1_distance, h.ks_statistic
    ([0.0, 0.0, 1.0, 0.0], 1.5, 0.5)
    """
    B = check_size(n_bins, "n_bins", "MAX_BINS")
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    u = randomized_pit(P, _check_seed(seed))
    counts, l1, ks = _histogram_and_ks(u, P.sample_weight, B)
    return PITHistogram(
        edges=np.linspace(0.0, 1.0, B + 1), counts=counts, l1_distance=l1, ks_statistic=ks
    )


def _histogram_and_ks(
    u: np.ndarray, sample_weight: np.ndarray | None, B: int
) -> tuple[np.ndarray, float, float]:
    """Counts in ``B`` equal bins, their L1 distance from uniform, and the KS statistic.

    Without weights the PIT values are sorted with :func:`numpy.sort` (no
    permutation is needed: every weight is 1) and the counts are integers;
    the numbers are those of the weighted formulas with unit weights, bit
    for bit.
    """
    n = u.shape[0]
    idx = np.minimum((u * B).astype(np.int64), B - 1)
    if sample_weight is None:
        total = float(n)
        counts = np.bincount(idx, minlength=B).astype(np.float64)
        us = np.sort(u)
        # cumsum of unit weights is exact: k / n; the step below each value is 1 / n
        cdf_after = np.arange(1, n + 1, dtype=np.float64) / total
        cdf_before = cdf_after - 1.0 / total
    else:
        w = sample_weight
        total = float(np.sum(w))
        counts = np.bincount(idx, weights=w, minlength=B).astype(np.float64)
        order = np.argsort(u)
        us = u[order]
        if n > 1 and not np.all(us[1:] != us[:-1]):
            # ties: the stable order, so the partial sums are added as before
            order = np.argsort(u, kind="stable")
            us = u[order]
        cdf_after = np.cumsum(w[order]) / total
        cdf_before = cdf_after - w[order] / total
    l1 = float(np.sum(np.abs(counts / total - 1.0 / B)))
    ks = float(max(np.max(cdf_after - us), np.max(us - cdf_before)))
    return counts, l1, ks


@dataclass(frozen=True)
class QuantileCalibration:
    """Observed coverage of central prediction intervals at nominal levels.

    Returned by :func:`quantile_calibration` (Kuleshov et al. 2018, §3).

    Attributes
    ----------
    levels : numpy.ndarray
        ``(m,)`` nominal levels ``p`` in (0, 1).
    coverage : numpy.ndarray
        ``(m,)`` (weighted) fraction of targets inside the central interval
        ``mu +- sigma * Phi^-1((1 + p) / 2)`` of each level.
    mean_absolute_error : float
        ``mean_j |coverage_j - levels_j|``, the mean absolute calibration
        error over the levels (in probability units, [0, 1]).
    max_absolute_error : float
        ``max_j |coverage_j - levels_j|``.

    Examples
    --------
    >>> from calipers.regression import quantile_calibration
    >>> q = quantile_calibration([0.0, 0.0], variance=[1.0, 1.0], targets=[0.1, 5.0], levels=[0.5])
    >>> q.coverage.tolist(), q.mean_absolute_error
    ([0.5], 0.0)
    """

    levels: np.ndarray
    coverage: np.ndarray
    mean_absolute_error: float
    max_absolute_error: float


@fill_doc
@spread_by_name
def quantile_calibration(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
) -> QuantileCalibration:
    """Coverage of central prediction intervals, and its error over nominal levels.

    Kuleshov et al. 2018 (§3) call a regression model calibrated when, for
    every level ``p``, a fraction ``p`` of the targets falls below the
    predicted ``p``-quantile. This function checks the equivalent two-sided
    statement for central intervals: the fraction of targets in
    ``[F^-1((1 - p) / 2), F^-1((1 + p) / 2)]`` (for a Gaussian
    ``[mu - c_p * sigma, mu + c_p * sigma]``, ``c_p = Phi^-1((1 + p) / 2)``)
    should be ``p``. Central intervals test the spread; they cannot see a
    shift of the mean that keeps ``|y - mu|`` distributed alike, which the
    one-sided quantiles (the PIT values of :func:`pit_histogram`) do. An
    observed coverage below the level means overconfidence.

    Memory is O(n) whatever the number of levels: Gaussian rows are sorted
    once by ``|y - mu| / sigma`` and each level's count is a binary search
    (unit weights: the same integer counts, so the same numbers as the
    matrix of comparisons bit for bit; with weights, the weights of the
    sorted rows are summed between consecutive levels, exact to rounding);
    other kinds compute the interval of one level at a time from
    :meth:`~calipers.regression.PredictiveDistribution.quantile`.

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
        Nominal levels, each strictly inside (0, 1). Default
        ``numpy.linspace(0.05, 0.95, 19)``; for a
        :class:`~calipers.regression.QuantileSet`, the central intervals it
        states itself (its levels ``tau`` and ``1 - tau``, level ``1 - 2
        tau``), or that grid when it has no such pair.

    Returns
    -------
    QuantileCalibration
        Coverage per level, and the mean and maximum absolute difference
        between coverage and level.

    Examples
    --------
    >>> from calipers.regression import quantile_calibration
    >>> q = quantile_calibration([0.0, 0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0, 1.0],
    ...                          targets=[0.5, -0.5, 1.5, 2.5], levels=[0.6827, 0.9545])
    >>> q.coverage.tolist()
    [0.5, 0.75]
    """
    from scipy.special import ndtri

    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    if levels is None and isinstance(P.distribution, QuantileSet):
        lv = _central_levels(P.distribution.levels)
    elif levels is None:
        lv = np.linspace(0.05, 0.95, 19)
    else:
        lv = np.asarray(levels)
        if lv.dtype.kind not in "iuf" or lv.ndim != 1 or lv.shape[0] < 1:
            raise CalibrationInputError(
                f"levels must be a non-empty 1-D array of numbers; got {levels!r}"
            )
        lv = lv.astype(np.float64)
        bad = ~((lv > 0) & (lv < 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"levels must lie strictly between 0 and 1; entry {i} is {float(lv[i])!r}"
            )
    total = float(np.sum(_weights(P)))
    check_work(
        "levels",
        f"<{lv.shape[0]} levels>",
        [("rows", P.n_samples), ("levels", lv.shape[0])],
        unit="row-levels",
        advice="use fewer levels",
    )
    G = _gaussian(P)
    if G is not None:
        absz = np.abs(G.targets - G.mean) / G.std
        half_width = ndtri((1.0 + lv) / 2.0)
        coverage = _weight_at_or_below(absz, half_width, G.sample_weight) / total
    else:
        d = P.distribution
        y = P.targets
        w = P.sample_weight
        coverage = np.empty(lv.shape[0])
        for j, p in enumerate(lv):
            inside = (d.quantile((1.0 - p) / 2.0) <= y) & (y <= d.quantile((1.0 + p) / 2.0))
            coverage[j] = (
                np.count_nonzero(inside) if w is None else float(w[inside].sum())
            ) / total
    err = np.abs(coverage - lv)
    return QuantileCalibration(
        levels=lv,
        coverage=coverage,
        mean_absolute_error=float(np.mean(err)),
        max_absolute_error=float(np.max(err)),
    )


def _central_levels(taus: np.ndarray) -> np.ndarray:
    """The central levels ``tau_hi - tau_lo`` of a quantile set's symmetric pairs.

    Pairs ``tau_lo < 0.5 < tau_hi`` with ``tau_lo + tau_hi = 1`` (to 1e-9):
    the intervals the set states itself. Without such a pair: the default
    grid 0.05, ..., 0.95.
    """
    out = []
    for lo in taus[taus < 0.5]:
        hi = taus[np.abs(taus - (1.0 - lo)) <= 1e-9]
        if hi.shape[0]:
            out.append(1.0 - 2.0 * float(lo))
    if not out:
        return np.linspace(0.05, 0.95, 19)
    return np.array(sorted(out))


def _weight_at_or_below(
    values: np.ndarray, thresholds: np.ndarray, sample_weight: np.ndarray | None
) -> np.ndarray:
    """``sum_i w_i 1{values_i <= t}`` for every threshold ``t``, in O(n) memory.

    Without weights: the count, ``searchsorted`` on the sorted values (exact
    integers). With weights: the rows sorted once, the weight between
    consecutive thresholds summed (pairwise) and accumulated over thresholds.
    """
    if sample_weight is None:
        sv = np.sort(values)
        return np.searchsorted(sv, thresholds, side="right").astype(np.float64)
    order = np.argsort(values)
    sv = values[order]
    ws = sample_weight[order]
    t_order = np.argsort(thresholds, kind="stable")
    ends = np.searchsorted(sv, thresholds[t_order], side="right")
    sums = np.empty(ends.shape[0])
    acc = 0.0
    start = 0
    for j, e in enumerate(ends):
        if e > start:
            acc += float(np.sum(ws[start:e]))
            start = int(e)
        sums[j] = acc
    out = np.empty_like(sums)
    out[t_order] = sums
    return out


@fill_doc
@spread_by_name
def interval_coverage_error(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
) -> float:
    """Mean absolute coverage error of central prediction intervals.

    ``mean_j |coverage_j - p_j|`` over the nominal levels ``p_j``, where
    ``coverage_j`` is the (weighted) fraction of targets inside the central
    interval ``mu +- sigma * Phi^-1((1 + p_j) / 2)``: the
    ``mean_absolute_error`` of :func:`quantile_calibration`, the two-sided
    (interval) form of the quantile calibration of Kuleshov et al. 2018 (§3).
    In probability units, in [0, 1]; 0 when every interval covers its level.
    It is the ``interval_ce`` column of the regression table and report.

    It is not :func:`quantile_calibration_error`, the error Kuleshov et al.
    2018 define: that one uses one-sided coverage ``P(F(y) <= p_j)`` and a
    sum of squared gaps, so it also sees a shift of the predicted means,
    which central intervals cannot see, and is in squared probability units.

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
        Nominal levels, each strictly inside (0, 1). Default
        ``numpy.linspace(0.05, 0.95, 19)`` (0.05, 0.10, ..., 0.95).

    Returns
    -------
    float
        The mean absolute coverage error, in [0, 1].

    Examples
    --------
    >>> from calipers.regression import interval_coverage_error
    >>> interval_coverage_error([0.0, 0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0, 1.0],
    ...                         targets=[0.5, -0.5, 1.5, 2.5], levels=[0.6827, 0.9545])
    0.1936
    """
    return quantile_calibration(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        levels=levels,
    ).mean_absolute_error


@dataclass(frozen=True)
class VarianceCalibration:
    """Predicted variance against squared error, per bin and overall.

    Returned by :func:`variance_calibration`. Per bin of predicted variance
    (Levi et al. 2022, §3) and over all rows (Gruber & Buettner 2022,
    Tables 1 and 2). Variances and squared errors are in squared target
    units; ratios are dimensionless. Averages are weighted by
    ``sample_weight``.

    Attributes
    ----------
    bin_weight : numpy.ndarray
        ``(b,)`` total weight of each non-empty bin (rows without weights).
    bin_variance_range : numpy.ndarray
        ``(b, 2)`` smallest and largest predicted variance in each bin.
    bin_mean_variance : numpy.ndarray
        ``(b,)`` mean predicted variance (MV) of each bin.
    bin_mse : numpy.ndarray
        ``(b,)`` mean squared error ``(y - mu)**2`` of each bin.
    bin_rmv : numpy.ndarray
        ``(b,)`` root mean variance ``sqrt(MV)``, in target units.
    bin_rmse : numpy.ndarray
        ``(b,)`` root mean squared error ``sqrt(MSE)``, in target units.
    ence : float
        Expected normalized calibration error of Levi et al. 2022:
        ``mean_j |RMV_j - RMSE_j| / RMV_j`` over the non-empty bins (each bin
        counts once, as in the paper).
    mse : float
        Mean squared error of the predicted means over all rows (Gruber &
        Buettner 2022, Table 1, "MSE").
    avg_var : float
        Mean predicted variance over all rows (Table 1, "Avg Var").
    mse_over_avg_var : float
        ``mse / avg_var``: the ratio of the two rows of Table 1; 1 when the
        variances are right on average, > 1 when they are too small.
    se_var_ratio : float
        Mean over rows of ``(y - mu)**2 / sigma**2`` (Table 2, "SE Var
        Ratio", instance level): 1 for calibrated Gaussian predictions, 10
        when the squared errors are ten times the predicted variances.
    se_var_ratio_std : float
        Standard deviation over rows of the same ratios (ddof 0, weighted),
        the spread that Table 2 gives after "±".

    Examples
    --------
    >>> from calipers.regression import variance_calibration
    >>> v = variance_calibration([0.0, 0.0], variance=[1.0, 4.0], targets=[2.0, 4.0], n_bins=2)
    >>> v.bin_rmse.tolist(), v.ence, v.se_var_ratio
    ([2.0, 4.0], 1.0, 4.0)
    """

    bin_weight: np.ndarray
    bin_variance_range: np.ndarray
    bin_mean_variance: np.ndarray
    bin_mse: np.ndarray
    bin_rmv: np.ndarray
    bin_rmse: np.ndarray
    ence: float
    mse: float
    avg_var: float
    mse_over_avg_var: float
    se_var_ratio: float
    se_var_ratio_std: float


@fill_doc
@spread_by_name
def variance_calibration(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 15,
) -> VarianceCalibration:
    """Compare predicted variances with squared errors, binned and overall.

    Rows are sorted by predicted variance and cut into ``n_bins`` equal-mass
    bins (equal total weight, up to one row: row ``i`` in sorted order goes
    to bin ``floor(n_bins * W_before_i / W)``, with ``W_before_i`` the
    weight of the rows before it; rows with equal variance may fall in
    adjacent bins). In each bin the root mean predicted variance (RMV) is
    compared with the root mean squared error (RMSE); their normalized
    difference averaged over bins is the ENCE of Levi et al. 2022 (§3).
    Overall, the mean squared error is compared with the average predicted
    variance (Gruber & Buettner 2022, Table 1) and the squared error is
    divided by the predicted variance row by row (their Table 2).

    Any kind with a mean and a variance: Gaussian, parametric (closed-form
    moments; a Student t needs ``df > 2``) and sample ensembles (the
    members' mean and variance, ``ddof = 0``). A quantile set states no
    variance and is refused (use :func:`quantile_calibration`).

    Parameters
    ----------
    {mean}
        Or a predictive distribution of any kind
        (:class:`~calipers.regression.PredictiveDistribution`; then without
        ``variance`` and ``std``).
    {variance}
    {std}
    {targets}
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights. Default None (unit weights).
    n_bins : int, default 15
        Number of equal-mass bins of predicted variance; at most ``n``. Bins
        left with zero weight (possible with weights) are dropped.

    Returns
    -------
    VarianceCalibration
        Per-bin MV, MSE, RMV, RMSE, the ENCE, and the overall MSE, average
        variance and SE/Var ratios.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import variance_calibration
    >>> rng = np.random.default_rng(0)
    >>> sigma = rng.uniform(0.5, 2.0, size=20000)
    >>> y = rng.normal(0.0, sigma)
    >>> v = variance_calibration(np.zeros_like(y), std=sigma / 2, targets=y)
    >>> bool(abs(v.se_var_ratio - 4) < 0.2), bool(abs(v.mse_over_avg_var - 4) < 0.2)
    (True, True)
    """
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    mu, var = mean_and_variance(P, "variance calibration")
    B = check_integer(n_bins, "n_bins", minimum=1, maximum=P.n_samples)
    w = _weights(P)
    total = float(np.sum(w))
    se = (P.targets - mu) ** 2
    order = np.argsort(var, kind="stable")
    w_sorted = w[order]
    before = np.cumsum(w_sorted) - w_sorted
    bin_sorted = np.minimum((B * before / total).astype(np.int64), B - 1)
    bins = np.empty(P.n_samples, dtype=np.int64)
    bins[order] = bin_sorted
    bw = np.bincount(bins, weights=w, minlength=B)
    keep = bw > 0
    mv = np.bincount(bins, weights=w * var, minlength=B)[keep] / bw[keep]
    mse_b = np.bincount(bins, weights=w * se, minlength=B)[keep] / bw[keep]
    lo = np.full(B, np.inf)
    hi = np.full(B, -np.inf)
    np.minimum.at(lo, bins, var)
    np.maximum.at(hi, bins, var)
    rmv = np.sqrt(mv)
    rmse = np.sqrt(mse_b)
    ratio = se / var
    r_mean = P.weighted_mean(ratio)
    r_std = float(np.sqrt(P.weighted_mean((ratio - r_mean) ** 2)))
    mse = P.weighted_mean(se)
    avg_var = P.weighted_mean(var)
    return VarianceCalibration(
        bin_weight=bw[keep],
        bin_variance_range=np.stack([lo[keep], hi[keep]], axis=1),
        bin_mean_variance=mv,
        bin_mse=mse_b,
        bin_rmv=rmv,
        bin_rmse=rmse,
        ence=float(np.mean(np.abs(rmv - rmse) / rmv)),
        mse=mse,
        avg_var=avg_var,
        mse_over_avg_var=mse / avg_var,
        se_var_ratio=r_mean,
        se_var_ratio_std=r_std,
    )
