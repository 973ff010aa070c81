"""Conformalized quantile regression: a predicted quantile pair widened to a guaranteed interval.

Romano, Patterson & Candès (2019), "Conformalized quantile regression", §3:
a quantile model predicts, for every row, the lower and upper quantiles
``q_lo = q_{alpha/2}(x)`` and ``q_hi = q_{1 - alpha/2}(x)``. On a calibration
split of ``n`` rows not used to fit it, the conformity scores are (eq. 6)

    E_i = max(q_lo(x_i) - y_i, y_i - q_hi(x_i)),

negative when ``y_i`` lies inside its interval, positive outside. With
``Q`` the ``ceil((n + 1)(1 - alpha))``-th smallest score (eq. 8, the
empirical ``(1 - alpha)(1 + 1/n)``-quantile), the interval for a new row is
(eq. 7)

    C(x) = [q_lo(x) - Q, q_hi(x) + Q].

On exchangeable data ``P(y in C(x)) >= 1 - alpha`` for any quantile model
(Thm. 1), and ``<= 1 - alpha + 1 / (n + 1)`` when the scores have no ties.
Unlike split conformal intervals around a point forecast (same half-width on
every row), the width follows the quantile model, so on heteroscedastic data
the intervals are shorter where the noise is small (their §6).

``Q`` may be negative (a quantile model whose intervals are too wide is
narrowed); an interval is returned as computed, even where the narrowing makes
``lower > upper`` (a row whose interval is then empty; the guarantee is
marginal). The rank convention, weights and the whole line for too small a
calibration split are those of :mod:`.split_conformal`. MAPIE 1.6's
``ConformalizedQuantileRegressor`` with ``symmetric_correction=True`` computes
the same ``Q`` (its default, ``False``, corrects the two ends separately, the
asymmetric variant of Romano et al.'s Thm. 2).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...regression import PredictiveDistribution
from ...validation import CalibrationInputError
from .._inputs import _as_input
from .._schema import Schema
from .forecast_base import (
    ForecastRecalibrator,
    as_vector,
    as_weights,
    first_tensor,
    register_forecast,
)
from .split_conformal import (
    LEVEL,
    SCORES,
    WEIGHTS,
    conformal_quantile,
    positive_total,
    sorted_scores,
    warn_infinite,
)

__all__ = ["ConformalizedQuantileRegression"]


@register_forecast
class ConformalizedQuantileRegression(ForecastRecalibrator):
    """Conformalized quantile regression (CQR): ``[q_lo - Q, q_hi + Q]`` with coverage >= level.

    Fitted on a calibration split of predicted lower and upper quantiles
    (at ``(1 - level) / 2`` and ``(1 + level) / 2``) and targets, it keeps the
    sorted conformity scores ``E = max(q_lo - y, y - q_hi)`` (Romano,
    Patterson & Candès 2019, eq. 6). New intervals are ``[q_lo - Q, q_hi + Q]``
    with ``Q`` the ``ceil((n + 1) level)``-th smallest score (eq. 7-8); on
    exchangeable data their coverage is at least ``level``, and at most
    ``level + 1 / (n + 1)`` without ties among the scores (Thm. 1).

    The quantiles may come as two arrays, or as a predictive distribution
    (:class:`calipers.regression.PredictiveDistribution`, for instance a
    :class:`~calipers.regression.QuantileSet` of a quantile model's levels):
    the pair is then its quantiles at ``(1 - level) / 2`` and
    ``(1 + level) / 2`` (``distribution.quantile``; a quantile set's own
    column when one of its levels lies within 1e-12 of these, as
    ``(1 - 0.9) / 2 = 0.04999999999999999`` does of 0.05).

    Parameters
    ----------
    level : float, default 0.9
        Nominal coverage ``1 - alpha``, strictly between 0 and 1: the level of
        the quantile pair and of the conformal correction (one ``alpha``, as in
        Romano et al.). A different level needs a new fit.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n,)
        The calibration conformity scores, sorted (target units).
    weights_ : numpy.ndarray of shape (n,)
        Their weights (ones without ``sample_weight``).
    level_ : float
        The level at which the scores were computed.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.regression import ConformalizedQuantileRegression
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 20000); y = rng.normal(0, 0.1 + x)    # heteroscedastic noise
    >>> lo, hi = -1.2 * (0.1 + x), 1.2 * (0.1 + x)                  # quantile model too narrow
    >>> cqr = ConformalizedQuantileRegression(level=0.9)
    >>> cqr = cqr.fit(lo[:10000], hi[:10000], y[:10000])            # calibration half
    >>> round(cqr.correction(), 3)                                 # Q > 0: the intervals widen
    0.232
    >>> a, b = cqr.predict_interval(lo[10000:], hi[10000:])
    >>> float(np.mean((a <= y[10000:]) & (y[10000:] <= b)))        # held-out coverage
    0.8955
    """

    schema = Schema(
        params={"level": LEVEL},
        state={"scores_": SCORES, "weights_": WEIGHTS, "level_": LEVEL},
        state_checks=(positive_total,),
    )
    _fit_call = "fit(lower, upper, targets)"

    def __init__(self, level: float = 0.9) -> None:
        self.level = level

    def fit(
        self, lower: Any, upper: Any = None, targets: Any = None, *, sample_weight: Any = None
    ) -> ConformalizedQuantileRegression:
        """Keep the conformity scores ``max(q_lo - y, y - q_hi)`` of a calibration split.

        Parameters
        ----------
        lower : array-like or tensor of shape (n,), or PredictiveDistribution
            Predicted lower quantiles at ``(1 - level) / 2`` (target units), from
            a model not fitted on these rows; or a predictive distribution of
            ``n`` rows, whose quantiles at ``(1 - level) / 2`` and
            ``(1 + level) / 2`` are the pair (then leave ``upper`` out).
        upper : array-like or tensor of shape (n,)
            Predicted upper quantiles at ``(1 + level) / 2``, each at least its
            ``lower``.
        targets : array-like or tensor of shape (n,)
            Observed targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative repetition weights (a weight of 2 counts like the row
            twice).

        Returns
        -------
        self
        """
        self._start_fit()
        a = float(self._check_params("ConformalizedQuantileRegression.fit")["level"])
        lo, hi = self._pair(lower, upper, a, "fit")
        if targets is None:
            raise CalibrationInputError(
                "ConformalizedQuantileRegression.fit needs targets (fit(lower, upper, targets), "
                "or fit(distribution, targets=...))"
            )
        n = lo.shape[0]
        y = as_vector(targets, "targets", n, rows_of="lower")
        w = as_weights(sample_weight, n, "lower")
        self.scores_, self.weights_ = sorted_scores(np.maximum(lo - y, y - hi), w)
        self.level_ = a
        self._end_fit()
        return self

    def correction(self) -> float:
        """The conformal correction ``Q`` of Romano, Patterson & Candès 2019 (eq. 8).

        The smallest calibration score whose cumulative weight reaches
        ``(W + 1) * level`` (unit weights: the ``ceil((n + 1) level)``-th
        smallest).

        Returns
        -------
        float
            ``Q`` in target units (negative when the quantile model's intervals
            are too wide), or ``inf`` when there are too few calibration rows.

        Examples
        --------
        >>> from calipers.recalibration import ConformalizedQuantileRegression
        >>> y = [0.0, 2.0, -3.0, 0.5, 1.5, -1.25, 4.0, 0.0, 0.25]       # scores max(-1 - y, y - 1)
        >>> cqr = ConformalizedQuantileRegression(level=0.8).fit([-1.0] * 9, [1.0] * 9, y)
        >>> cqr.correction()                                           # the 8th smallest of 9
        2.0
        """
        self._ready()
        return conformal_quantile(self.scores_, self.weights_, self._fitted_level())

    def predict_interval(self, lower: Any, upper: Any = None) -> tuple[Any, Any]:
        """Prediction intervals ``[q_lo - Q, q_hi + Q]``.

        Parameters
        ----------
        lower, upper : array-like or tensor of shape (m,)
            The quantile model's lower and upper quantiles for new rows (as in
            :meth:`fit`); or ``lower`` a predictive distribution (``upper`` left
            out).

        Returns
        -------
        (lower, upper) : tuple of numpy.ndarray or torch.Tensor
            Each ``(m,)`` in target units (tensors on the input's device for
            tensor quantiles). ``-inf`` and ``inf`` when the calibration split
            is too small for ``level`` (with a ``RuntimeWarning`` saying so).
        """
        self._ready()
        a = self._fitted_level()
        lo, hi = self._pair(lower, upper, a, "predict_interval")
        q = conformal_quantile(self.scores_, self.weights_, a)
        if math.isinf(q):
            warn_infinite("ConformalizedQuantileRegression", a, self.weights_)
        with np.errstate(over="ignore", invalid="ignore"):
            out_lo, out_hi = lo - q, hi + q
        like = first_tensor(lower, upper)
        return _as_input(out_lo, like), _as_input(out_hi, like)

    # ------------------------------------------------------------------ helpers

    def _fitted_level(self) -> float:
        a = float(self._check_params("ConformalizedQuantileRegression")["level"])
        if a != self.level_:
            raise CalibrationInputError(
                f"ConformalizedQuantileRegression: the scores were computed at level "
                f"{self.level_!r}, but level is now {a!r}; fit again at the new level (the "
                "quantile pair and the correction share one level)"
            )
        return a

    def _pair(self, lower: Any, upper: Any, level: float, method: str) -> tuple[Any, Any]:
        """The (lower, upper) quantile arrays, checked; from a distribution when given one."""
        where = f"ConformalizedQuantileRegression.{method}"
        if isinstance(lower, PredictiveDistribution):
            if upper is not None:
                raise CalibrationInputError(
                    f"{where}: lower is a predictive distribution, which gives both quantiles; "
                    "leave upper out (and pass the targets as targets=...)"
                )
            lo = _quantile_at(lower, (1.0 - level) / 2.0)
            hi = _quantile_at(lower, (1.0 + level) / 2.0)
            what = "the distribution's quantiles"
        else:
            if upper is None:
                raise CalibrationInputError(
                    f"{where} needs the upper quantiles too: {method}(lower, upper"
                    f"{', targets' if method == 'fit' else ''})"
                )
            lo = as_vector(lower, "lower")
            hi = as_vector(upper, "upper", lo.shape[0], rows_of="lower")
            what = "upper"
        crossed = hi < lo
        if crossed.any():
            i = int(np.flatnonzero(crossed)[0])
            raise CalibrationInputError(
                f"{where}: {what} at level {(1.0 + level) / 2.0!r} lies below the lower quantile "
                f"at row {i} ({float(hi[i])!r} < {float(lo[i])!r}); the quantile model's "
                "quantiles cross there (sort each row's pair, or fix the model)"
            )
        return lo, hi


def _quantile_at(dist: PredictiveDistribution, p: float) -> np.ndarray:
    """``dist.quantile(p)``; a quantile set's own column when one of its levels lies within
    1e-12 of ``p`` (``(1 - 0.9) / 2`` is ``0.04999999999999999`` in float64, read as 0.05)."""
    levels = getattr(dist, "levels", None)
    if isinstance(levels, np.ndarray) and levels.ndim == 1 and levels.size:
        j = int(np.argmin(np.abs(levels - p)))
        if abs(float(levels[j]) - p) <= 1e-12:
            p = float(levels[j])
    return np.asarray(dist.quantile(p), dtype=np.float64)
