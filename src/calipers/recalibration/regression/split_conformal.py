"""Split conformal prediction intervals around point forecasts, with their finite-sample rank.

Split (inductive) conformal prediction (Vovk, Gammerman & Shafer 2005, ch. 4;
Papadopoulos et al. 2002; Lei et al. 2018,
"Distribution-free predictive inference for regression", Algorithm 2) turns
any point forecast ``yhat`` into prediction intervals with a finite-sample
guarantee. On a calibration split of ``n`` rows not used to fit the model, the
conformity scores are the absolute residuals ``R_i = |y_i - yhat_i|`` (or, for
the normalized variant, ``|y_i - yhat_i| / s_i`` with a given spread ``s_i``;
Papadopoulos, Vovk & Gammerman 2011, the ``sigmas`` of crepes). With ``d`` the
``k``-th smallest score, ``k = ceil((n + 1) * level)``, the interval for a new
row is ``[yhat - d, yhat + d]`` (``[yhat - d s, yhat + d s]``). When the
calibration and test rows are exchangeable,

    level <= P(y in interval) <= level + 1 / (n + 1),

the upper bound when the scores have no ties (Lei et al. 2018, Thm. 2.2). The
probability is over the calibration split and the new row together: the
guarantee is marginal, an average over calibration splits, not a promise for
each split or each row.

When ``k > n`` (fewer than ``level / (1 - level)`` calibration rows: 9 at
level 0.9, 19 at 0.95) no finite interval has the guarantee: the interval is
the whole line ``(-inf, inf)``, and :meth:`SplitConformal.predict_interval`
warns. It is never shortened to a finite width.

**The rank ``k`` in floating point.** ``(n + 1) * level`` is computed in
float64 and taken as the integer it lies within 8 ulps of when there is one, so
a level given as a decimal is read as that decimal: ``ceil(25 * 0.28)`` is 7
(float64 gives ``7.000000000000001`` and its ceiling 8). MAPIE 1.6 ranks with
``ceil((1 - alpha) * (n + 1)) / n`` and NumPy's ``method="lower"`` quantile, in
plain float64; crepes 0.9.1 takes the ``int((1 - confidence) * (n + 1))``-th
largest score. All three give the same order statistic except where the
float64 product falls on the other side of an integer (crepes at
``confidence=0.9``, ``n = 99``: ``int(0.09999999999999998 * 100) = 9``, the 91st
smallest of 99 scores instead of the 90th).

**Weights** are repetition counts, as everywhere in calipers (a weight of 2
counts like the row twice); the new row counts once. With total weight ``W``
the interval's ``d`` is the smallest score whose cumulative weight reaches
``(W + 1) * level``; with integer weights this equals repeating the rows. No
score reaches it when ``W < (W + 1) * level``, that is when the total weight is
below ``level / (1 - level)``: then the interval is the whole line. (The
weighted conformal prediction of Tibshirani et al. 2019 under covariate shift
weights the new row by its own likelihood ratio; that is not this.)
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ...validation import CalibrationInputError
from .._inputs import _as_input
from .._params import user_stacklevel
from .._schema import Array, Flag, Real, Schema, Values
from .forecast_base import (
    ForecastRecalibrator,
    as_vector,
    as_weights,
    first_tensor,
    register_forecast,
)

__all__ = ["SplitConformal", "conformal_rank", "conformal_quantile"]

#: A nominal coverage: strictly between 0 and 1.
LEVEL = Real(lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def _weights_shape(v: Values) -> list[tuple[int, ...]]:
    return [(len(v["scores_"]),)]


#: The fitted state of a conformal method: the sorted scores and their weights.
SCORES = Array((None,), order="non-decreasing")
WEIGHTS = Array(_weights_shape, lo=0.0)


def positive_total(v: Values) -> str | None:
    """The weights of a fitted state must have a positive total."""
    if not float(np.sum(v["weights_"])) > 0:
        return "field 'weights_' must have a positive total (at least one weight > 0)"
    return None


def conformal_rank(level: float, total: float) -> float:
    """``total * level``, as the integer it lies within 8 ulps of when there is one.

    The cumulative weight the conformal quantile must reach: with unit weights
    and ``total = n + 1``, its ceiling is the rank ``k = ceil((n + 1) * level)``
    of the order statistic (Lei et al. 2018, §2.2). Snapping to an integer
    within 8 ulps reads a decimal level as the decimal: ``25 * 0.28`` is
    ``7.000000000000001`` in float64, read as 7.

    Examples
    --------
    >>> from calipers.recalibration.regression.split_conformal import conformal_rank
    >>> conformal_rank(0.9, 100), conformal_rank(0.28, 25), conformal_rank(0.9, 21)
    (90.0, 7.0, 18.900000000000002)
    """
    t = float(level) * float(total)
    r = float(round(t))
    if abs(t - r) <= 8.0 * math.ulp(max(abs(t), 1.0)):
        return r
    return t


def conformal_quantile(scores: np.ndarray, weights: np.ndarray, level: float) -> float:
    """The conformal quantile of sorted scores: the smallest score whose cumulative
    weight reaches ``(W + 1) * level`` (``inf`` when the total weight ``W`` does not).

    With unit weights, the ``ceil((n + 1) * level)``-th smallest of the ``n``
    scores (Lei et al. 2018, §2.2; Romano, Patterson & Candès 2019, eq. 8),
    ``inf`` when that rank exceeds ``n``. ``scores`` must be sorted
    (non-decreasing) and ``weights`` aligned with them.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.regression.split_conformal import conformal_quantile
    >>> s = np.arange(1.0, 20.0)                      # 19 scores: k = ceil(20 * 0.9) = 18
    >>> conformal_quantile(s, np.ones(19), 0.9)
    18.0
    >>> conformal_quantile(s[:8], np.ones(8), 0.9)    # k = ceil(9 * 0.9) = 9 > 8 rows
    inf
    """
    n = scores.shape[0]
    if bool(np.all(weights == 1.0)):  # unit weights: the cumulative weight of row j is j + 1
        j = math.ceil(conformal_rank(level, n + 1.0)) - 1
    else:
        cum = np.cumsum(weights)
        need = conformal_rank(level, float(cum[-1]) + 1.0)
        j = int(np.searchsorted(cum, need, side="left"))
    return float(scores[j]) if j < n else math.inf


def sorted_scores(scores: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores sorted with their weights (the order among tied scores does not change the
    conformal quantile: a tie group's cumulative weight is reached at its last member)."""
    if bool(np.all(weights == weights[0])):  # equal weights: a plain sort, no permutation
        return np.sort(scores), weights
    order = np.argsort(scores)
    return scores[order], weights[order]


def warn_infinite(who: str, level: float, weights: np.ndarray) -> None:
    """Warn that the intervals are the whole line, and say how many rows would do."""
    total = float(np.sum(weights))
    need = math.ceil(conformal_rank(level / (1.0 - level), 1.0))
    unit = bool(np.all(weights == 1.0))
    have = (
        f"{weights.shape[0]} calibration rows are too few"
        if unit
        else f"a total calibration weight of {total!r} is too small"
    )
    warnings.warn(
        f"{who}: {have} for level {level!r}: the conformal rank "
        f"ceil((n + 1) * level) exceeds n, so the intervals with the coverage guarantee are "
        f"the whole line (-inf, inf); at least {need} calibration rows give finite ones",
        RuntimeWarning,
        stacklevel=user_stacklevel(),
    )


@register_forecast
class SplitConformal(ForecastRecalibrator):
    """Split conformal prediction intervals ``yhat +- d`` around point forecasts.

    Fitted on a calibration split of point forecasts and targets (rows not
    used to fit the model), it keeps the sorted conformity scores
    ``|y - yhat|`` (or ``|y - yhat| / std`` when ``std=`` is given: the
    normalized conformal regressor of Papadopoulos, Vovk & Gammerman 2011).
    The interval for a new row is ``[yhat - d, yhat + d]``
    (``[yhat - d std, yhat + d std]``), ``d`` the ``ceil((n + 1) level)``-th
    smallest score (Vovk, Gammerman & Shafer 2005; Lei et al. 2018,
    Algorithm 2). On exchangeable data its coverage is at least ``level`` and,
    without ties among the scores, at most ``level + 1 / (n + 1)`` (Lei et al.
    2018, Thm. 2.2), whatever the model. The module docstring gives the
    conventions (the rank in floating point, weights, and how MAPIE and
    crepes differ).

    Parameters
    ----------
    level : float, default 0.9
        Nominal coverage ``1 - alpha``, strictly between 0 and 1. The scores do
        not depend on it: ``set_params(level=...)`` takes effect without a refit.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n,)
        The calibration conformity scores, sorted (target units, or units of
        ``std`` for the normalized variant).
    weights_ : numpy.ndarray of shape (n,)
        Their weights (ones without ``sample_weight``).
    normalized_ : bool
        Whether the scores were divided by a given ``std`` (then predictions
        need ``std=`` too).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.regression import SplitConformal
    >>> rng = np.random.default_rng(0)
    >>> yhat = rng.normal(size=20000); y = yhat + rng.normal(size=20000)
    >>> sc = SplitConformal(level=0.9).fit(yhat[:10000], y[:10000])   # calibration half
    >>> round(sc.conformity_quantile(), 3)             # d: near 1.645 for N(0, 1) noise
    1.626
    >>> lo, hi = sc.predict_interval(yhat[10000:])
    >>> float(np.mean((lo <= y[10000:]) & (y[10000:] <= hi)))   # held-out coverage
    0.8909
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     SplitConformal(level=0.95).fit([0.0] * 10, np.arange(10.0)).predict_interval([0.0])
    (array([-inf]), array([inf]))
    >>> print(seen[0].message)  # doctest: +ELLIPSIS
    SplitConformal: 10 calibration rows are too few for level 0.95: ... at least 19 calibration rows give finite ones
    """

    schema = Schema(
        params={"level": LEVEL},
        state={"scores_": SCORES, "weights_": WEIGHTS, "normalized_": Flag()},
        state_checks=(positive_total,),
    )
    _fit_call = "fit(forecasts, targets) (with std=... for normalized intervals)"

    def __init__(self, level: float = 0.9) -> None:
        self.level = level

    def fit(
        self, forecasts: Any, targets: Any, *, std: Any = None, sample_weight: Any = None
    ) -> SplitConformal:
        """Keep the conformity scores of a calibration split.

        Parameters
        ----------
        forecasts : array-like or tensor of shape (n,)
            Point forecasts ``yhat`` of the calibration rows (target units), from
            a model not fitted on them.
        targets : array-like or tensor of shape (n,)
            Observed targets.
        std : array-like or tensor of shape (n,), optional
            A spread per row (> 0, target units: a predicted standard deviation,
            an absolute-residual model, any difficulty estimate) for normalized
            scores ``|y - yhat| / std``; predictions then need ``std=`` too.
        sample_weight : array-like of shape (n,), optional
            Non-negative repetition weights (a weight of 2 counts like the row
            twice).

        Returns
        -------
        self
        """
        self._start_fit()
        f = as_vector(forecasts, "forecasts")
        n = f.shape[0]
        y = as_vector(targets, "targets", n, rows_of="forecasts")
        w = as_weights(sample_weight, n, "forecasts")
        scores = np.abs(y - f)
        if std is not None:
            scores = scores / _spread(std, n)
        self.scores_, self.weights_ = sorted_scores(scores, w)
        self.normalized_ = std is not None
        self._end_fit()
        return self

    def conformity_quantile(self, level: float | None = None) -> float:
        """The interval's half-width ``d`` (in units of ``std`` when normalized).

        The smallest calibration score whose cumulative weight reaches
        ``(W + 1) * level`` (unit weights: the ``ceil((n + 1) level)``-th
        smallest); ``inf`` when there are too few rows.

        Parameters
        ----------
        level : float, optional
            Nominal coverage; default: the ``level`` parameter.

        Returns
        -------
        float
            ``d``, in target units (units of ``std`` when normalized), or ``inf``.

        Examples
        --------
        >>> from calipers.recalibration import SplitConformal
        >>> sc = SplitConformal().fit([0.0] * 19, [float(i) for i in range(1, 20)])
        >>> sc.conformity_quantile(), sc.conformity_quantile(0.5)     # ranks 18 and 10 of 19
        (18.0, 10.0)
        """
        self._ready()
        a = self._level(level)
        return conformal_quantile(self.scores_, self.weights_, a)

    def predict_interval(self, forecasts: Any, *, std: Any = None) -> tuple[Any, Any]:
        """Prediction intervals ``[yhat - d, yhat + d]`` at the nominal ``level``.

        Parameters
        ----------
        forecasts : array-like or tensor of shape (m,)
            Point forecasts of new rows.
        std : array-like or tensor of shape (m,), optional
            Their spreads (> 0); required when the fit had ``std=``, refused
            otherwise. The interval is then ``[yhat - d std, yhat + d std]``.

        Returns
        -------
        (lower, upper) : tuple of numpy.ndarray or torch.Tensor
            Each ``(m,)`` in target units (tensors on the input's device for
            tensor forecasts). ``-inf`` and ``inf`` when the calibration split
            is too small for ``level`` (with a ``RuntimeWarning`` saying so).
        """
        self._ready()
        f = as_vector(forecasts, "forecasts")
        if self.normalized_ and std is None:
            raise CalibrationInputError(
                "SplitConformal.predict_interval: this recalibrator was fitted with std= "
                "(normalized scores), so its intervals need std= for the new rows too"
            )
        if not self.normalized_ and std is not None:
            raise CalibrationInputError(
                "SplitConformal.predict_interval: std= was given, but the fit had no std= "
                "(absolute-residual scores); fit with std= for normalized intervals"
            )
        a = self._level(None)
        d = conformal_quantile(self.scores_, self.weights_, a)
        if math.isinf(d):
            warn_infinite("SplitConformal", a, self.weights_)
        half = d if std is None else d * _spread(std, f.shape[0], "forecasts")
        with np.errstate(over="ignore", invalid="ignore"):
            lower, upper = f - half, f + half
        like = first_tensor(forecasts, std)
        return _as_input(lower, like), _as_input(upper, like)

    def _level(self, level: float | None) -> float:
        if level is None:
            return float(self._check_params("SplitConformal")["level"])
        if not _is_level(level):
            raise CalibrationInputError(
                f"level must be a number strictly between 0 and 1; got {level!r}"
            )
        return float(level)


def _is_level(v: Any) -> bool:
    return (
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and 0.0 < float(v) < 1.0
    )


def _spread(std: Any, n: int, rows_of: str = "forecasts") -> np.ndarray:
    s = as_vector(std, "std", n, rows_of=rows_of)
    bad = ~(s > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"std must be > 0 (a spread); row {i} is {float(s[i])!r}")
    return s
