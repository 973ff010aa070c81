"""Calibration within groups of rows: given groups, feature bins, adversarial groups.

Average calibration over all rows can hide groups of rows whose predictive
distributions are far off in opposite directions. Two ways to look:

* :func:`calibration_by_group` -- the calibration error within groups the
  user names (a category), or within equal-mass bins of each feature column,
  with the worst group;
* :func:`adversarial_group_calibration` -- the adversarial group calibration
  of Zhao, Ma & Ermon 2020 as uncertainty-toolbox computes it (Chung et al.
  2021): for group sizes from 0 to all rows, the worst calibration error
  over random groups of that size, averaged over trials.

The calibration error of a group is uncertainty-toolbox's mean absolute
(or root mean squared) calibration error over ``n_levels`` proportions
(:func:`calipers.regression.mean_absolute_calibration_error`), for any kind
of predictive distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import is_torch
from .._docstrings import fill_doc
from ..validation import CalibrationInputError, check_integer, check_work
from .distributions import check_predictive
from .inputs import spread_by_name
from .miscalibration import (
    DEFAULT_N_LEVELS,
    _check_proportion,
    _observed_from,
    _values,
)
from .pit import DEFAULT_PIT_SEED, _check_seed

__all__ = [
    "AdversarialGroupCalibration",
    "adversarial_group_calibration",
    "GroupCalibration",
    "calibration_by_group",
]


def _check_cali_type(cali_type: Any) -> str:
    if cali_type not in ("mean_abs", "root_mean_sq"):
        raise CalibrationInputError(
            f'cali_type must be "mean_abs" or "root_mean_sq"; got {cali_type!r}'
        )
    return str(cali_type)


def _error(observed: np.ndarray, expected: np.ndarray, cali_type: str) -> float:
    diff = expected - observed
    if cali_type == "mean_abs":
        return float(np.mean(np.abs(diff)))
    return float(np.sqrt(np.mean(np.square(diff))))


@dataclass(frozen=True)
class AdversarialGroupCalibration:
    """The worst calibration error of random groups, per group size.

    Returned by :func:`adversarial_group_calibration` (uncertainty-toolbox's
    ``adversarial_group_calibration``; Zhao, Ma & Ermon 2020).

    Attributes
    ----------
    group_size : numpy.ndarray
        ``(num_group_bins,)`` group sizes as fractions of the rows,
        ``numpy.linspace(0, 1, num_group_bins)``.
    score_mean : numpy.ndarray
        ``(num_group_bins,)`` mean over trials of the worst group's error.
    score_stderr : numpy.ndarray
        ``(num_group_bins,)`` standard deviation over trials (``ddof=1``; NaN
        for one trial), the number uncertainty-toolbox reports as the
        standard error.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import adversarial_group_calibration
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=200)
    >>> a = adversarial_group_calibration(np.zeros(200), std=np.ones(200), targets=y,
    ...                                   num_group_bins=3, num_trials=2, num_group_draws=2)
    >>> a.group_size.tolist(), bool(a.score_mean[0] > a.score_mean[-1])
    ([0.0, 0.5, 1.0], True)
    """

    group_size: np.ndarray
    score_mean: np.ndarray
    score_stderr: np.ndarray


@fill_doc
@spread_by_name
def adversarial_group_calibration(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    cali_type: str = "mean_abs",
    proportion: str = "interval",
    n_levels: int = DEFAULT_N_LEVELS,
    num_group_bins: int = 10,
    draw_with_replacement: bool = False,
    num_trials: int = 10,
    num_group_draws: int = 10,
    seed: Any = DEFAULT_PIT_SEED,
) -> AdversarialGroupCalibration:
    """Worst calibration error over random groups of each size (Zhao, Ma & Ermon 2020).

    uncertainty-toolbox's algorithm (Chung et al. 2021): for each group
    fraction ``r`` in ``numpy.linspace(0, 1, num_group_bins)`` the group size
    is ``max(round(n * r), 2)``; in each of ``num_trials`` trials,
    ``num_group_draws`` groups of that size are drawn (without replacement
    unless ``draw_with_replacement``) and the largest calibration error among
    them is kept; the mean and the standard deviation (``ddof=1``) of the
    trials' maxima are reported. A model calibrated on average but not
    within groups keeps a large error as the groups grow; every model's
    error grows as groups shrink (fewer rows, noisier proportions).

    The groups are drawn with ``numpy.random.RandomState(seed).choice``, the
    generator uncertainty-toolbox's ``numpy.random.choice`` uses, in the same
    order: after ``numpy.random.seed(seed)`` its result for Gaussian
    predictions is the same, to rounding.

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
        Non-negative row weights, used within each drawn group's proportions
        (groups are drawn by row: a weight of 2 is not the row drawn twice).
        Default None.
    cali_type : {"mean_abs", "root_mean_sq"}, default "mean_abs"
        The calibration error of a group:
        :func:`~calipers.regression.mean_absolute_calibration_error` or
        :func:`~calipers.regression.root_mean_squared_calibration_error`.
    proportion : {"interval", "quantile"}, default "interval"
        Central intervals or one-sided quantiles (see
        :func:`~calipers.regression.calibration_proportions`).
    n_levels : int, default 100
        Expected proportions per group error.
    num_group_bins : int, default 10
        Number of group fractions from 0 to 1.
    draw_with_replacement : bool, default False
        Draw a group's rows with replacement.
    num_trials : int, default 10
        Trials per group size (at most 10 000).
    num_group_draws : int, default 10
        Groups drawn per trial (at most 10 000).
    seed : int, default 0
        Seed of the group draws (a ``RandomState``), and of the randomised PIT
        of discrete kinds (computed once for all rows).

    Returns
    -------
    AdversarialGroupCalibration
    """
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    kind = _check_cali_type(cali_type)
    ptype = _check_proportion(proportion)
    B = check_integer(n_levels, "n_levels", minimum=2, maximum=1 << 20)
    G = check_integer(num_group_bins, "num_group_bins", minimum=1, maximum=10_000)
    T = check_integer(num_trials, "num_trials", minimum=1, maximum=10_000)
    D = check_integer(num_group_draws, "num_group_draws", minimum=1, maximum=10_000)
    if not isinstance(draw_with_replacement, (bool, np.bool_)):
        raise CalibrationInputError(
            f"draw_with_replacement must be True or False; got {draw_with_replacement!r}"
        )
    s = _check_seed(seed)
    if not isinstance(s, int):
        raise CalibrationInputError(
            f"seed must be a non-negative integer (it seeds a RandomState); got {seed!r}"
        )
    n = P.n_samples
    if n < 2 and not draw_with_replacement:
        raise CalibrationInputError(
            "adversarial group calibration needs at least 2 rows (groups have at least 2)"
        )
    ratios = np.linspace(0.0, 1.0, G)
    drawn = sum(max(int(round(n * r)), 2) for r in ratios)
    check_work(
        "num_trials",
        T,
        [("group rows", drawn), ("trials", T), ("draws", D)],
        unit="drawn rows",
        advice="use fewer trials, draws or group sizes",
    )
    gaussian, v = _values(P, s)
    w = P.sample_weight
    expected = np.linspace(0.0, 1.0, B)
    rs = np.random.RandomState(s)
    score_mean = np.empty(G)
    score_stderr = np.empty(G)
    for g, r in enumerate(ratios):
        size = max(int(round(n * r)), 2)
        worst = np.empty(T)
        for t in range(T):
            best = -np.inf
            for _ in range(D):
                idx = rs.choice(n, size, replace=bool(draw_with_replacement))
                obs = _observed_from(
                    gaussian, v[idx], None if w is None else w[idx], expected, ptype, "lists"
                )
                best = max(best, _error(obs, expected, kind))
            worst[t] = best
        score_mean[g] = np.mean(worst)
        score_stderr[g] = np.std(worst, ddof=1) if T > 1 else np.nan
    return AdversarialGroupCalibration(
        group_size=ratios, score_mean=score_mean, score_stderr=score_stderr
    )


@dataclass(frozen=True)
class GroupCalibration:
    """Calibration error within each group, and the worst group.

    Returned by :func:`calibration_by_group`.

    Attributes
    ----------
    groups : list
        The group of each entry: a label, or ``(feature, bin)`` for feature
        bins (``bin`` counts from 0, low values first).
    weight : numpy.ndarray
        Total weight (row count without weights) of each group.
    error : numpy.ndarray
        Calibration error of each group (NaN for a group with fewer than
        ``min_rows`` rows).
    bounds : numpy.ndarray or None
        ``(g, 2)`` smallest and largest feature value of each feature bin;
        None for labelled groups.
    worst : object
        The group with the largest error (ties: the first).
    worst_error : float
        Its error.
    overall_error : float
        The error over all rows.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import calibration_by_group
    >>> y = np.concatenate([np.zeros(50), np.full(50, 3.0)])
    >>> g = calibration_by_group(np.zeros(100), std=np.ones(100), targets=y,
    ...                          groups=["a"] * 50 + ["b"] * 50, n_levels=11)
    >>> g.groups, g.worst
    (['a', 'b'], 'a')
    """

    groups: list[Any]
    weight: np.ndarray
    error: np.ndarray
    bounds: np.ndarray | None
    worst: Any
    worst_error: float
    overall_error: float


def _labels(groups: Any, n: int) -> np.ndarray:
    if is_torch(groups):
        groups = groups.detach().cpu().numpy()
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n:
        raise CalibrationInputError(
            f"groups must hold one label per row, shape ({n},); got shape {g.shape}"
        )
    return g


def _features(features: Any, n: int) -> np.ndarray:
    if is_torch(features):
        features = features.detach().cpu().numpy()
    X = np.asarray(features)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != n:
        raise CalibrationInputError(
            f"features must be (n, d) with n = {n} rows; got shape {X.shape}"
        )
    if X.dtype.kind not in "iufb":
        raise CalibrationInputError(f"features must be numbers; got dtype {X.dtype}")
    X = X.astype(np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = (int(a) for a in np.argwhere(bad)[0])
        raise CalibrationInputError(f"features must be finite; row {i}, column {j} is {X[i, j]!r}")
    return X


@fill_doc
@spread_by_name
def calibration_by_group(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    groups: Any = None,
    features: Any = None,
    n_feature_bins: int = 5,
    cali_type: str = "mean_abs",
    proportion: str = "interval",
    n_levels: int = DEFAULT_N_LEVELS,
    min_rows: int = 2,
    seed: Any = DEFAULT_PIT_SEED,
) -> GroupCalibration:
    """Calibration error within each group of rows, and the worst group.

    The error of each group is uncertainty-toolbox's mean absolute (or root
    mean squared) calibration error of the group's rows (Chung et al. 2021;
    :func:`~calipers.regression.mean_absolute_calibration_error`). Give
    either ``groups`` (one label per row) or ``features`` (an ``(n, d)``
    matrix): each feature column is cut into ``n_feature_bins`` equal-mass
    bins of its values (rows sorted by the column, equal values kept in one
    bin), the groups of every column are scored and the worst group over all
    features is reported, the calibration-by-feature check of Zhao, Ma &
    Ermon 2020 (individual calibration needs it within every region of the
    features, not only on average).

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
        Non-negative row weights, used within each group (a weight of 2
        counts the row twice). Default None.
    groups : array-like of shape (n,), optional
        A label per row (numbers or strings).
    features : array-like of shape (n, d) or (n,), optional
        Numeric features; binned per column.
    n_feature_bins : int, default 5
        Equal-mass bins per feature column.
    cali_type : {"mean_abs", "root_mean_sq"}, default "mean_abs"
        The error of a group.
    proportion : {"interval", "quantile"}, default "interval"
        Central intervals or one-sided quantiles.
    n_levels : int, default 100
        Expected proportions per group error.
    min_rows : int, default 2
        Groups with fewer rows get a NaN error and cannot be the worst.
    seed : int, numpy.random.Generator or None, default 0
        Seed of the randomised PIT of discrete kinds (drawn once for all rows).

    Returns
    -------
    GroupCalibration
    """
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    kind = _check_cali_type(cali_type)
    ptype = _check_proportion(proportion)
    B = check_integer(n_levels, "n_levels", minimum=2, maximum=1 << 20)
    m = check_integer(min_rows, "min_rows", minimum=1)
    if (groups is None) == (features is None):
        raise CalibrationInputError(
            "give exactly one of groups= (a label per row) and features= (an (n, d) matrix "
            "binned per column)"
        )
    n = P.n_samples
    gaussian, v = _values(P, _check_seed(seed))
    w = P.sample_weight
    expected = np.linspace(0.0, 1.0, B)
    members: list[tuple[Any, np.ndarray, tuple[float, float] | None]] = []
    if groups is not None:
        g = _labels(groups, n)
        uniq, inverse = np.unique(g, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        cuts = np.searchsorted(inverse[order], np.arange(uniq.shape[0] + 1))
        for j, label in enumerate(uniq.tolist()):
            members.append((label, order[cuts[j] : cuts[j + 1]], None))
    else:
        X = _features(features, n)
        k = check_integer(n_feature_bins, "n_feature_bins", minimum=1, maximum=n)
        for c in range(X.shape[1]):
            col = X[:, c]
            order = np.argsort(col, kind="stable")
            sc = col[order]
            # equal-mass cut points, moved to the end of a run of equal values
            cut = np.searchsorted(sc, sc[np.minimum((np.arange(1, k) * n) // k, n - 1)], "left")
            cut = np.unique(np.concatenate([[0], cut, [n]]))
            for b in range(cut.shape[0] - 1):
                idx = order[cut[b] : cut[b + 1]]
                if idx.shape[0]:
                    members.append(((c, b), idx, (float(sc[cut[b]]), float(sc[cut[b + 1] - 1]))))
    weight = np.empty(len(members))
    error = np.full(len(members), np.nan)
    for j, (_, idx, _) in enumerate(members):
        wi = None if w is None else w[idx]
        weight[j] = idx.shape[0] if wi is None else float(np.sum(wi))
        if idx.shape[0] >= m and weight[j] > 0:
            obs = _observed_from(gaussian, v[idx], wi, expected, ptype, "lists")
            error[j] = _error(obs, expected, kind)
    overall = _error(_observed_from(gaussian, v, w, expected, ptype, "lists"), expected, kind)
    if np.all(np.isnan(error)):
        raise CalibrationInputError(
            f"no group has min_rows = {m} rows or more; lower min_rows or use larger groups"
        )
    worst = int(np.nanargmax(error))
    bounds = None if groups is not None else np.array([b for _, _, b in members], dtype=float)
    return GroupCalibration(
        groups=[label for label, _, _ in members],
        weight=weight,
        error=error,
        bounds=bounds,
        worst=members[worst][0],
        worst_error=float(error[worst]),
        overall_error=overall,
    )
