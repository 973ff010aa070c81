"""Calibration / sharpness decompositions of proper scores of Gaussian predictions.

Two decompositions of the expected score of Gaussian predictions
N(mu_i, sigma_i**2) of targets ``y_i``:

* :func:`crps_decomposition` -- the CRPS is the integral over thresholds
  ``t`` of the Brier score of the event ``{Y <= t}`` forecast with
  probability ``Phi((t - mu) / sigma)`` (Gneiting & Raftery 2007; Hersbach
  2000). Binning the forecast probabilities at every threshold gives Murphy's
  (1973) decomposition ``REL(t) - RES(t) + UNC(t)`` of the binned Brier
  score; integrated over a threshold grid it splits the CRPS into
  reliability, resolution and uncertainty, the uncertainty being half the
  Gini mean difference of the targets.
* :func:`gaussian_score_decomposition` -- the calibration-sharpness
  decomposition of a proper score of Gruber & Buettner 2022 (Lemma 4.1),
  ``E[S(P, Y)] = g_S(P_Y) - sharpness + calibration``, for the
  Dawid-Sebastiani score (and the Gaussian log score, half of it plus a
  constant) with the calibrated prediction Q, the law of Y given P, estimated
  by the mean and variance of the targets in groups of equal predictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError, check_size, check_work
from .inputs import GaussianPredictions, _as_1d_float, check_gaussian, spread_by_name

__all__ = [
    "CRPSDecomposition",
    "crps_decomposition",
    "gini_half_mean_difference",
    "GaussianScoreDecomposition",
    "gaussian_score_decomposition",
]

_LOG_2PI = math.log(2.0 * math.pi)
#: Rows x thresholds evaluated at once by :func:`crps_decomposition`.
_BLOCK = 1 << 21


def _weights(G: GaussianPredictions) -> np.ndarray:
    return np.ones(G.n_samples) if G.sample_weight is None else G.sample_weight


@fill_doc
def gini_half_mean_difference(targets: Any, sample_weight: Any = None) -> float:
    """Half the (weighted) Gini mean difference of the targets.

    ``(1 / 2) sum_i sum_j w_i w_j |y_i - y_j| / W**2``, which equals
    ``integral F_n(t) (1 - F_n(t)) dt`` with ``F_n`` the (weighted)
    empirical CDF of the targets: the CRPS of the climatological forecast
    ``F_n`` averaged over the same targets, the uncertainty term of the CRPS
    decomposition (Hersbach 2000; Gneiting & Raftery 2007). Computed exactly
    in ``O(n log n)`` by sorting.

    Parameters
    ----------
    targets : array-like of shape (n,)
        Observed targets (finite).
    {sample_weight}

    Returns
    -------
    float
        In target units, >= 0.

    Examples
    --------
    >>> from calipers.regression import gini_half_mean_difference
    >>> gini_half_mean_difference([0.0, 1.0, 3.0])  # (1 + 3 + 2) * 2 / (2 * 9)
    0.6666666666666666
    """
    y = _as_1d_float(targets, "targets")
    G = check_gaussian(
        np.zeros_like(y), variance=np.ones_like(y), targets=y, sample_weight=sample_weight
    )
    w = _weights(G)
    order = np.argsort(G.targets, kind="stable")
    ys = G.targets[order]
    ws = w[order]
    cw = np.cumsum(ws) - ws  # weight strictly before each sorted row
    cwy = np.cumsum(ws * ys) - ws * ys
    # sum over pairs i < j (sorted) of w_i w_j (y_j - y_i)
    pairs = float(np.dot(ws, ys * cw - cwy))
    W = float(np.sum(ws))
    return pairs / (W * W)


@dataclass(frozen=True)
class CRPSDecomposition:
    """Threshold-integrated Brier decomposition of the CRPS of Gaussian predictions.

    Returned by :func:`crps_decomposition`. All integrals are over the grid
    ``edges`` ``e_0 < ... < e_K`` by the midpoint rule ``sum_k d_k f(t_k)``,
    ``t_k = (e_k + e_{k+1}) / 2`` (``thresholds``), ``d_k = e_{k+1} - e_k``
    (``threshold_weights``); every value is in target units. ``binned_crps = reliability - resolution + uncertainty`` holds
    exactly (Murphy 1973 at every threshold).

    Attributes
    ----------
    crps : float
        Mean CRPS from the closed form of Gneiting et al. 2005 (no grid).
    crps_grid : float
        ``integral BS(t) dt`` on the grid, with the unbinned probabilities
        ``Phi((t - mu) / sigma)``; ``crps - crps_grid`` is the quadrature
        error (:attr:`discretisation_error`).
    binned_crps : float
        The same integral with every probability replaced by the mean
        probability of its bin at that threshold;
        ``= reliability - resolution + uncertainty``.
    reliability : float
        ``integral REL(t) dt``, ``REL(t) = sum_b W_b / W (p_b - o_b)**2``;
        >= 0, 0 when every bin's observed frequency equals its mean forecast.
    resolution : float
        ``integral RES(t) dt``, ``RES(t) = sum_b W_b / W (o_b - o)**2``; >= 0.
    uncertainty : float
        ``integral o(t) (1 - o(t)) dt`` with ``o(t)`` the (weighted) fraction
        of targets ``<= t`` on the grid; equals
        :attr:`uncertainty_closed_form` when every target is an edge of the
        grid (the step function ``o(t)`` is then constant on every cell).
    uncertainty_closed_form : float
        Half the Gini mean difference of the targets
        (:func:`gini_half_mean_difference`), the exact integral.
    edges : numpy.ndarray
        ``(K + 1,)`` strictly increasing grid edges ``e_k``.
    thresholds : numpy.ndarray
        ``(K,)`` cell midpoints ``t_k``, where the Brier scores are evaluated.
    threshold_weights : numpy.ndarray
        ``(K,)`` quadrature weights ``d_k``, the cell widths.
    brier : numpy.ndarray
        ``(K,)`` unbinned Brier score ``BS(t_k)``.
    reliability_t, resolution_t, uncertainty_t : numpy.ndarray
        ``(K,)`` Murphy terms at each threshold.
    n_bins : int
        Number of equal-width probability bins at each threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import crps_decomposition
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=2000)
    >>> d = crps_decomposition(mu, variance=np.ones(2000), targets=rng.normal(mu, 1.0))
    >>> bool(abs(d.binned_crps - (d.reliability - d.resolution + d.uncertainty)) < 1e-12)
    True
    """

    crps: float
    crps_grid: float
    binned_crps: float
    reliability: float
    resolution: float
    uncertainty: float
    uncertainty_closed_form: float
    edges: np.ndarray
    thresholds: np.ndarray
    threshold_weights: np.ndarray
    brier: np.ndarray
    reliability_t: np.ndarray
    resolution_t: np.ndarray
    uncertainty_t: np.ndarray
    n_bins: int

    @property
    def discretisation_error(self) -> float:
        """``crps - crps_grid``: the error of the threshold quadrature (target units)."""
        return self.crps - self.crps_grid

    @property
    def within_bin(self) -> float:
        """``crps_grid - binned_crps``: what binning the probabilities changes (target units)."""
        return self.crps_grid - self.binned_crps


def _default_thresholds(G: GaussianPredictions, k: int) -> np.ndarray:
    """Union of target quantiles (or every distinct target) and an even grid."""
    y = G.targets
    sd = G.std
    lo = min(float(np.min(y)), float(np.min(G.mean - 8.0 * sd)))
    hi = max(float(np.max(y)), float(np.max(G.mean + 8.0 * sd)))
    distinct = np.unique(y)
    if distinct.shape[0] > 4 * k:
        distinct = np.unique(np.quantile(y, np.linspace(0.0, 1.0, 2 * k)))
    return np.unique(np.concatenate([distinct, np.linspace(lo, hi, k)]))


def _check_thresholds(thresholds: Any, G: GaussianPredictions) -> np.ndarray:
    if thresholds is None:
        return _default_thresholds(G, 500)
    if isinstance(thresholds, (int, np.integer)) and not isinstance(thresholds, bool):
        k = check_size(thresholds, "thresholds", "MAX_BINS", minimum=2)
        return _default_thresholds(G, k)
    t = np.asarray(thresholds)
    if t.dtype.kind not in "iuf" or t.ndim != 1 or t.shape[0] < 2:
        raise CalibrationInputError(
            "thresholds must be None, an integer >= 2, or a 1-D array of at least 2 numbers; "
            f"got {thresholds!r}"
        )
    check_size(t.shape[0] - 1, "thresholds (cells between the edges)", "MAX_BINS")
    t = t.astype(np.float64)
    bad = ~np.isfinite(t)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"thresholds must be finite; entry {i} is {float(t[i])!r}")
    step = np.diff(t)
    if not np.all(step > 0):
        i = int(np.flatnonzero(~(step > 0))[0]) + 1
        raise CalibrationInputError(
            f"thresholds must be strictly increasing; entry {i} is {float(t[i])!r} "
            f"after {float(t[i - 1])!r}"
        )
    return t


@fill_doc
@spread_by_name
def crps_decomposition(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    thresholds: Any = None,
    n_bins: int = 10,
) -> CRPSDecomposition:
    """Reliability, resolution and uncertainty of the CRPS of Gaussian predictions.

    The CRPS is the integral over thresholds ``t`` of the Brier score of the
    binary event ``{Y <= t}`` forecast with probability
    ``F_i(t) = Phi((t - mu_i) / sigma_i)``:
    ``CRPS(F, y) = integral (F(t) - 1{y <= t})**2 dt`` (Gneiting & Raftery
    2007; Hersbach 2000, §4). At each threshold the probabilities are put in
    ``n_bins`` equal-width bins on [0, 1], and the Brier score of the binned
    forecasts (each probability replaced by its bin's mean) splits exactly
    into Murphy's (1973) ``REL(t) - RES(t) + UNC(t)``. Integrating over the
    threshold grid gives ``binned_crps = reliability - resolution +
    uncertainty`` exactly; ``binned_crps`` differs from the CRPS by the
    quadrature error (:attr:`CRPSDecomposition.discretisation_error`) and by
    the within-bin spread of the probabilities
    (:attr:`CRPSDecomposition.within_bin`), both reported.

    Reliability is a binned calibration error: it is biased upwards by
    about ``n_bins / n`` times the width of the region where the forecasts
    are uncertain (the binomial noise of the observed frequencies), so it
    is small, not 0, for calibrated predictions.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    thresholds : None, int or array-like of shape (K + 1,), optional
        The edges of the threshold grid (target units). An array: strictly
        increasing edges, used as given (the integral then covers only
        ``[e_0, e_K]``). An integer ``k >= 2``: the union of the distinct
        targets (or ``2 k`` quantiles of them when there are more than
        ``4 k`` distinct values) and ``k`` equally spaced points from
        ``min(y, mu - 8 sigma)`` to ``max(y, mu + 8 sigma)``, so the tails left
        out weigh less than ``1e-14 * sigma`` per row. At most
        ``calipers.validation.MAX_BINS`` (2**20) cells, and rows times cells
        at most ``calipers.validation.MAX_WORK``. Default None: ``k = 500``
        (every target is an edge when there are at most 2000 distinct ones).
        The cost is ``O(n * K)`` time, in blocks of about two million
        row-thresholds.
        The rule is the midpoint rule on the cells between edges: it
        integrates the indicators ``1{y <= t}`` exactly when every target is
        an edge, and then has an ``O(spacing**2)`` error from the smooth
        predicted CDFs (``O(spacing)`` from targets inside cells), so the
        spacing must be small against the predicted standard deviations.
    n_bins : int, default 10
        Equal-width probability bins per threshold (at most
        ``calipers.validation.MAX_BINS``).

    Returns
    -------
    CRPSDecomposition

    Raises
    ------
    CalibrationInputError
        On invalid predictions, thresholds or ``n_bins``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import crps_decomposition
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=4000)
    >>> y = rng.normal(mu, 1.0)
    >>> good = crps_decomposition(mu, variance=np.ones(4000), targets=y)
    >>> bad = crps_decomposition(mu, variance=np.full(4000, 0.1), targets=y)
    >>> bool(good.reliability < 0.01 < bad.reliability), bool(abs(good.discretisation_error) < 1e-3)
    (True, True)
    """
    from scipy.special import ndtr

    from .scores import crps_gaussian

    G = check_gaussian(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    B = check_size(n_bins, "n_bins", "MAX_BINS")
    edges = _check_thresholds(thresholds, G)
    t = 0.5 * (edges[:-1] + edges[1:])
    K = t.shape[0]
    check_work(
        "thresholds",
        thresholds if isinstance(thresholds, (int, np.integer)) else f"<{K + 1} edges>",
        [("rows", G.n_samples), ("thresholds", K)],
        unit="row-thresholds",
        advice="use fewer thresholds or a subsample of the rows",
    )
    dt = np.diff(edges)
    w = _weights(G)
    W = float(np.sum(w))
    mu, sd, y = G.mean, G.std, G.targets
    brier = np.empty(K)
    binned = np.empty(K)
    rel = np.empty(K)
    res = np.empty(K)
    unc = np.empty(K)
    # thresholds per block: about _BLOCK rows x thresholds, and _BLOCK bins x thresholds
    step = max(1, _BLOCK // max(G.n_samples, B))
    for start in range(0, K, step):
        tk = t[start : start + step]
        m = tk.shape[0]
        p = ndtr((tk[:, None] - mu[None, :]) / sd[None, :])
        o = (y[None, :] <= tk[:, None]).astype(np.float64)
        brier[start : start + m] = ((p - o) ** 2) @ w / W
        ids = np.minimum((p * B).astype(np.int64), B - 1) + B * np.arange(m)[:, None]
        flat = ids.ravel()
        ww = np.broadcast_to(w, p.shape).ravel()
        Wb = np.bincount(flat, ww, m * B)
        Sb = np.bincount(flat, ww * p.ravel(), m * B)
        Ob = np.bincount(flat, ww * o.ravel(), m * B)
        ne = Wb > 0
        pbar = np.zeros(m * B)
        obar = np.zeros(m * B)
        pbar[ne] = Sb[ne] / Wb[ne]
        obar[ne] = Ob[ne] / Wb[ne]
        binned[start : start + m] = ((pbar[ids] - o) ** 2) @ w / W
        ok = (o @ w / W)[:, None]
        rel[start : start + m] = (Wb * (pbar - obar) ** 2).reshape(m, B).sum(axis=1) / W
        res[start : start + m] = (Wb.reshape(m, B) * (obar.reshape(m, B) - ok) ** 2).sum(axis=1) / W
        unc[start : start + m] = (ok * (1.0 - ok))[:, 0]
    return CRPSDecomposition(
        crps=crps_gaussian(G),
        crps_grid=float(np.dot(dt, brier)),
        binned_crps=float(np.dot(dt, binned)),
        reliability=float(np.dot(dt, rel)),
        resolution=float(np.dot(dt, res)),
        uncertainty=float(np.dot(dt, unc)),
        uncertainty_closed_form=gini_half_mean_difference(y, G.sample_weight),
        edges=edges,
        thresholds=t,
        threshold_weights=dt,
        brier=brier,
        reliability_t=rel,
        resolution_t=res,
        uncertainty_t=unc,
        n_bins=B,
    )


@dataclass(frozen=True)
class GaussianScoreDecomposition:
    """Calibration-sharpness decomposition of the DSS or Gaussian NLL.

    Returned by :func:`gaussian_score_decomposition`: the decomposition of
    Gruber & Buettner 2022 (Lemma 4.1), ``score = uncertainty - sharpness +
    calibration`` (exact), with the calibrated prediction of row ``i``
    estimated as ``Q_i = N(mu_i + sigma_i a_g, sigma_i**2 b_g)`` from the mean
    ``a_g`` and variance ``b_g`` of the standardized residuals
    ``z = (y - mu) / sigma`` in its group ``g``.

    Attributes
    ----------
    score_name : str
        ``"dss"`` (Dawid-Sebastiani score) or ``"nll"`` (Gaussian negative
        log-likelihood, nats).
    score : float
        Mean score of the predictions.
    uncertainty : float
        ``g_S(P_Y)``, the entropy of the score at the Gaussian with the
        targets' (weighted) mean and variance ``v_Y``: ``log v_Y + 1`` for the
        DSS, ``(log(2 pi v_Y) + 1) / 2`` for the NLL.
    sharpness : float
        ``uncertainty - recalibrated_score``: how much better the calibrated
        predictions score than the climatological Gaussian (the sharpness
        term ``E[d_S(P_Y, Q)]`` of Lemma 4.1). >= 0 in the population; the
        estimate can be negative when the predictions carry no information.
    calibration : float
        Mean divergence ``d_S(P_i, Q_i)`` = ``sum_g W_g / W (a_g**2 + b_g -
        1 - log b_g)`` for the DSS (half of it, the Kullback-Leibler
        divergence ``KL(Q || P)``, for the NLL); >= 0, and equal to
        ``score - recalibrated_score``.
    recalibrated_score : float
        Mean score of the recalibrated predictions ``Q_i``.
    group_weight : numpy.ndarray
        ``(G,)`` total weight of each group (row counts without weights).
    group_bias : numpy.ndarray
        ``(G,)`` mean standardized residual ``a_g`` of each group (0 when
        calibrated; > 0 when the targets lie above the predicted means).
    group_variance_ratio : numpy.ndarray
        ``(G,)`` variance ``b_g`` of the standardized residuals of each group
        (1 when calibrated; > 1 when the predicted variances are too small).

    Examples
    --------
    >>> from calipers.regression import gaussian_score_decomposition
    >>> d = gaussian_score_decomposition([0.0] * 4, variance=[1.0] * 4, targets=[-2.0, -2.0, 2.0, 2.0],
    ...                                  n_bins=None)
    >>> d.score, round(d.calibration, 4), d.sharpness, d.group_variance_ratio.tolist()
    (4.0, 1.6137, 0.0, [4.0])
    """

    score_name: str
    score: float
    uncertainty: float
    sharpness: float
    calibration: float
    recalibrated_score: float
    group_weight: np.ndarray
    group_bias: np.ndarray
    group_variance_ratio: np.ndarray

    @property
    def n_groups(self) -> int:
        """Number of groups with a positive weight."""
        return int(self.group_weight.shape[0])


def _equal_mass(values: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Bin of each row when rows sorted by ``values`` are cut into ``k`` equal-weight bins."""
    order = np.argsort(values, kind="stable")
    ws = w[order]
    total = float(np.sum(ws))
    before = np.cumsum(ws) - ws
    out = np.empty(values.shape[0], dtype=np.int64)
    if total > 0:
        out[order] = np.minimum((k * before / total).astype(np.int64), k - 1)
    else:
        out[order] = 0
    return out


def _groups(G: GaussianPredictions, w: np.ndarray, n_bins: Any) -> np.ndarray:
    if n_bins is None:
        _, inv = np.unique(np.stack([G.mean, G.variance], axis=1), axis=0, return_inverse=True)
        return np.asarray(inv, dtype=np.int64).ravel()
    if isinstance(n_bins, tuple):
        if len(n_bins) != 2:
            raise CalibrationInputError(
                f"n_bins must be None, an integer or a pair (mean bins, variance bins); got {n_bins!r}"
            )
        k1 = check_size(n_bins[0], "n_bins[0] (bins of the predicted mean)", "MAX_BINS")
        k2 = check_size(n_bins[1], "n_bins[1] (bins of the predicted variance)", "MAX_BINS")
    else:
        k1 = k2 = check_size(n_bins, "n_bins", "MAX_BINS")
    check_work(
        "n_bins",
        n_bins,
        [("bins of the mean", k1), ("bins of the variance", k2)],
        limit="MAX_BINS",
        unit="groups",
    )
    first = _equal_mass(G.mean, w, k1)
    if k2 == 1:  # one variance bin: every row's variance bin is 0
        return first
    out = np.empty(G.n_samples, dtype=np.int64)
    # the rows of each non-empty bin of the mean, in row order (as np.flatnonzero gives
    # them), from one stable sort: O(n log n) however many bins are asked for
    order = np.argsort(first, kind="stable")
    sorted_bins = first[order]
    starts = np.flatnonzero(np.diff(sorted_bins, prepend=-1))
    for a, e in zip(starts, np.append(starts[1:], order.shape[0]), strict=True):
        rows = order[a:e]
        out[rows] = int(sorted_bins[a]) * k2 + _equal_mass(G.variance[rows], w[rows], k2)
    return out


@fill_doc
@spread_by_name
def gaussian_score_decomposition(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int | tuple[int, int] | None = (5, 5),
    score: Literal["dss", "nll"] = "dss",
) -> GaussianScoreDecomposition:
    """Decompose the mean DSS (or Gaussian NLL) into uncertainty, sharpness and calibration.

    Gruber & Buettner 2022 (Lemma 4.1) decompose the expected proper score
    of a prediction P as ``E[S(P, Y)] = g_S(P_Y) - E[d_S(P_Y, Q)] +
    E[d_S(P, Q)]`` (entropy - sharpness + calibration) with Q the law of Y
    given P, and call ``E[d_S(P, Q)]`` a proper calibration error
    (Definition 4.2). The Dawid-Sebastiani score ``log sigma**2 +
    (y - mu)**2 / sigma**2`` depends on a distribution only through its mean
    and variance, so only ``m_Q = E[Y | P]`` and ``v_Q = Var[Y | P]`` matter:
    with ``a = (m_Q - mu) / sigma`` and ``b = v_Q / sigma**2``,
    ``d_S(P, Q) = a**2 + b - 1 - log b``.

    Estimator: rows are put in groups of similar predictions, and in each
    group ``g`` the standardized residuals ``z = (y - mu) / sigma`` give
    ``a_g`` (their weighted mean) and ``b_g`` (their weighted variance,
    ``ddof=0``); row ``i`` is recalibrated to ``Q_i = N(mu_i + sigma_i a_g,
    sigma_i**2 b_g)``. Then ``score - mean S(Q_i, y_i) = sum_g W_g / W
    (a_g**2 + b_g - 1 - log b_g)`` exactly: the calibration term is the score
    improvement of this group-wise shift-and-scale recalibration
    (Gruber & Buettner 2022, Proposition 4.5). Its biases:

    * the group moments are estimated, so ``calibration`` is biased upwards:
      for calibrated predictions its expectation is about ``2 / n_g`` per
      row in groups of ``n_g`` rows for the DSS (``1 / n_g`` for the NLL),
      so about ``2 * n_groups / n`` overall;
    * ``Q_i`` is a function of P, so in the population (infinite groups) the
      recalibrated score cannot beat ``N(E[Y | P], Var[Y | P])`` and the
      calibration term is a lower bound on the calibration error of
      Definition 4.2, equal to it when ``a`` and ``b`` are constant within
      groups (always with ``n_bins=None``).

    With ``score="nll"`` every term is half the DSS term and the uncertainty
    and scores gain ``log(2 pi) / 2``: the decomposition of the Gaussian log
    score with Q restricted to Gaussians. When Y given P is not Gaussian the
    log-score calibration error is larger than this by
    ``E[KL(law of Y given P || N(m_Q, v_Q))]``, which this estimator does
    not see.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights. Default None (unit weights).
    n_bins : None, int or (int, int), default (5, 5)
        How rows are grouped. None: one group per distinct predicted
        (mean, variance) pair, the exact plug-in when the predictions take
        few values. A pair ``(k1, k2)``: ``k1`` equal-mass bins of the
        predicted mean, each cut into ``k2`` equal-mass bins of the predicted
        variance (``k1 * k2`` groups of about ``n / (k1 * k2)`` rows; equal
        predictions may be split between neighbouring bins). An integer
        ``k``: ``(k, k)``. ``(1, 1)`` is one global shift and scale. At most
        ``calipers.validation.MAX_BINS`` (2**20) groups ``k1 * k2``.
    score : {"dss", "nll"}, default "dss"
        The Dawid-Sebastiani score (as :func:`calipers.regression.dawid_sebastiani`)
        or the Gaussian negative log-likelihood in nats (as
        :func:`calipers.regression.gaussian_nll`).

    Returns
    -------
    GaussianScoreDecomposition

    Raises
    ------
    CalibrationInputError
        On invalid predictions, ``n_bins`` or ``score``, when the targets
        all have one value, or when the standardized residuals of a group
        all have one value (a group of one row, say): use fewer bins.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from calipers.regression import gaussian_score_decomposition
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.choice([-1.0, 0.0, 1.0], size=30000)
    >>> y = rng.normal(mu, 2.0)  # the variance is 4, the model says 1
    >>> d = gaussian_score_decomposition(mu, variance=np.ones(30000), targets=y, n_bins=None)
    >>> bool(abs(d.calibration - (3 - math.log(4))) < 0.05)  # a**2 + b - 1 - log b, b = 4
    True
    >>> bool(abs(d.score - (d.uncertainty - d.sharpness + d.calibration)) < 1e-12)
    True
    """
    if score not in ("dss", "nll"):
        raise CalibrationInputError(f"score must be 'dss' or 'nll'; got {score!r}")
    G = check_gaussian(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    w = _weights(G)
    g = _groups(G, w, n_bins)
    n_g = int(g.max()) + 1
    Wg = np.bincount(g, w, n_g)
    keep = Wg > 0
    W = float(np.sum(w))
    y = G.targets
    mY = float(np.dot(w, y) / W)
    vY = float(np.dot(w, (y - mY) ** 2) / W)
    if not vY > 0:
        raise CalibrationInputError(
            "targets all have one value (zero variance); the uncertainty term log Var(Y) "
            "is undefined"
        )
    z = (y - G.mean) / G.std
    a = np.zeros(n_g)
    a[keep] = np.bincount(g, w * z, n_g)[keep] / Wg[keep]
    b = np.ones(n_g)
    b[keep] = np.bincount(g, w * (z - a[g]) ** 2, n_g)[keep] / Wg[keep]
    zero = keep & ~(b > 0)
    if zero.any():
        bad = int(np.flatnonzero(zero)[0])
        rows = np.flatnonzero((g == bad) & (w > 0))
        raise CalibrationInputError(
            f"a group of {rows.shape[0]} row(s) (first row {int(rows[0])}, predicted means "
            f"{float(G.mean[rows].min())!r}..{float(G.mean[rows].max())!r}) has standardized "
            "residuals (y - mean) / std of zero variance, so the variance of Y given the "
            "prediction cannot be estimated there; use fewer bins"
        )
    a, b, Wg = a[keep], b[keep], Wg[keep]
    log_s2 = np.log(G.variance)
    terms = {
        "score": float(np.dot(w, log_s2 + z * z) / W),
        "uncertainty": math.log(vY) + 1.0,
        "recalibrated_score": float(np.dot(w, log_s2) / W + np.dot(Wg, np.log(b)) / W + 1.0),
        "calibration": float(np.dot(Wg, a * a + b - 1.0 - np.log(b)) / W),
    }
    if score == "nll":
        terms = {
            k: 0.5 * (val + (_LOG_2PI if k != "calibration" else 0.0)) for k, val in terms.items()
        }
    return GaussianScoreDecomposition(
        score_name=score,
        score=terms["score"],
        uncertainty=terms["uncertainty"],
        sharpness=terms["uncertainty"] - terms["recalibrated_score"],
        calibration=terms["calibration"],
        recalibrated_score=terms["recalibrated_score"],
        group_weight=Wg,
        group_bias=a,
        group_variance_ratio=b,
    )
