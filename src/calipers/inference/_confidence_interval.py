"""Bootstrap confidence intervals for any calipers metric, and for paired differences.

:func:`confidence_interval` resamples the rows of one set of predictions;
:func:`paired_confidence_interval` resamples the *same* rows for two sets of
predictions of the same labels (two models, or one model before and after
recalibration) and gives an interval for the difference of the metric.

The default interval is the basic (reverse-percentile) bootstrap interval
``[2 e - q(1 - alpha/2), 2 e - q(alpha/2)]`` (Davison & Hinkley 1997, §5.2): it
approximates the distribution of ``estimate - truth`` by that of
``resample value - estimate``, and so carries the bootstrap's own estimate of the
estimator's bias into the interval. Calibration errors (binned, kernel, smooth) are
biased upward by their noise; the percentile interval ``[q(alpha/2), q(1 - alpha/2)]``
then sits above the estimate, which is itself above the truth, and covers the truth
almost never, and BCa (Efron 1987; also available) corrects that bias by moving
along the quantiles of the same distribution, which fails once the bias is a few
standard errors (every resample above the estimate). docs/intervals.md has the
coverage of all three measured on predictors with a known calibration error, the
argument, and when not to trust any of them: at or near a calibration error of 0 a
binned estimate is biased by its noise and no bootstrap interval of it is reliable
(use :func:`calipers.consistency_test` to ask whether the error differs from 0).

The resampling is done with weights: a bootstrap resample is the original rows
with multinomial counts as sample weights (every calipers metric treats a weight
of 2 as a repeated row), so ``B`` resamples are a ``(B, n)`` weight matrix and the
common metrics (accuracy, NLL, Brier, ECE, ACE, TACE, SmoothECE) are evaluated on
the whole matrix at once (:mod:`calipers.inference`); other metrics are called
once per resample.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_predictions,
    check_size,
    check_work,
)
from . import _resampling as rs

__all__ = ["ConfidenceInterval", "confidence_interval", "paired_confidence_interval"]


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap confidence interval of a metric (or of a difference of two).

    Attributes
    ----------
    estimate : float
        The metric on the data (for a paired interval: ``metric(b) - metric(a)``).
    low, high : float
        The interval's endpoints.
    method : str
        ``"bca"``, ``"basic"`` or ``"percentile"``.
    confidence_level : float
        Nominal coverage, e.g. 0.95.
    n_resamples : int
        Bootstrap resamples used.
    standard_error : float
        Standard deviation of the bootstrap distribution (inf when some resample
        gave an infinite value).
    bootstrap_bias : float
        Mean of the bootstrap distribution minus the estimate: the bootstrap's
        estimate of the bias of the metric as an estimator (e.g. the upward bias of
        a binned calibration error), not a correction that was applied.
    """

    estimate: float
    low: float
    high: float
    method: str
    confidence_level: float
    n_resamples: int
    standard_error: float
    bootstrap_bias: float

    def __repr__(self) -> str:
        pct = f"{100 * self.confidence_level:g}%"
        return (
            f"ConfidenceInterval(estimate={self.estimate:.4g}, {pct} {self.method} "
            f"[{self.low:.4g}, {self.high:.4g}], standard_error={self.standard_error:.2g}, "
            f"bootstrap_bias={self.bootstrap_bias:.2g}, n_resamples={self.n_resamples})"
        )

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)


def _check_options(
    method: str, confidence_level: float, n_resamples: int, jackknife_groups: int
) -> None:
    if method not in rs.METHODS:
        raise CalibrationInputError(f"method must be one of {rs.METHODS}; got {method!r}")
    if isinstance(confidence_level, bool) or not (0 < float(confidence_level) < 1):
        raise CalibrationInputError(
            f"confidence_level must be in (0, 1), e.g. 0.95; got {confidence_level!r}"
        )
    for name, v, least in (
        ("n_resamples", n_resamples, 2),
        ("jackknife_groups", jackknife_groups, 2),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise CalibrationInputError(f"{name} must be an integer >= {least}; got {v!r}")
    check_size(n_resamples, "n_resamples", "MAX_RESAMPLES", minimum=2)


def _finish(
    name: str,
    estimate: float,
    boot: np.ndarray,
    jack: np.ndarray | None,
    method: str,
    confidence_level: float,
) -> ConfidenceInterval:
    if not math.isfinite(estimate):
        raise CalibrationInputError(
            f"{name} is {estimate} on the data itself, so it has no confidence interval "
            "(an NLL of inf means some true class has probability 0; nll(..., clip=1e-15) "
            "gives a finite, clipped score)"
        )
    bad = int(np.isnan(boot).sum())
    if bad:
        raise CalibrationInputError(
            f"{name} is NaN (undefined) on {bad} of {boot.size} bootstrap resamples; "
            "the metric is not defined for every resample of these rows"
        )
    if method == "bca" and jack is not None and not np.all(np.isfinite(jack)):
        raise CalibrationInputError(
            f"{name} is not finite on some jackknife subsamples, so the BCa acceleration "
            "is undefined; use method='percentile' or 'basic'"
        )
    parts = rs.interval(estimate, boot, jack, method, float(confidence_level))
    if method == "bca" and not math.isfinite(parts.z0):
        side = "above" if parts.z0 < 0 else "below"
        raise CalibrationInputError(
            f"every bootstrap value of {name} lies {side} the estimate {estimate:.6g}, so the "
            "BCa bias correction is infinite; the metric's bootstrap distribution says "
            "nothing about where its population value lies on the other side (typical of a "
            "binned calibration error near 0: see docs/intervals.md); use method='basic', "
            "or calipers.consistency_test to ask whether the error differs from 0"
        )
    return ConfidenceInterval(
        estimate=float(estimate),
        low=float(parts.low),
        high=float(parts.high),
        method=method,
        confidence_level=float(confidence_level),
        n_resamples=int(boot.size),
        standard_error=parts.standard_error,
        bootstrap_bias=parts.bias,
    )


def _validate(
    probs: Any, labels: Any, logits: bool, sample_weight: Any, classes: Any = None
) -> Predictions:
    if isinstance(probs, Predictions) and (
        sample_weight is not None or logits or classes is not None
    ):
        raise CalibrationInputError(
            "probs is already a calipers.Predictions: give its weights, logits and classes "
            "to check_predictions, not here (sample_weight, logits and classes would be "
            "ignored)"
        )
    P = check_predictions(
        probs, labels, logits=logits, sample_weight=sample_weight, classes=classes
    )
    return rs.numpy_predictions(P)


def _metric_name(metric: Callable[..., Any]) -> str:
    return getattr(metric, "__name__", type(metric).__name__)


def _values(
    metric: Callable[..., Any],
    Ps: list[Predictions],
    kwargs: dict[str, Any],
    n_resamples: int,
    jackknife_groups: int,
    method: str,
    seed: int | None,
) -> tuple[list[float], np.ndarray, np.ndarray | None]:
    """Estimates, bootstrap values ``(len(Ps), B)`` and jackknife values on shared rows."""
    n = Ps[0].n_samples
    check_work(
        "n_resamples",
        n_resamples,
        [("rows", n), ("resamples", n_resamples), ("models", len(Ps))],
        unit="row evaluations",
        advice="use fewer resamples or a subsample of the rows",
    )
    w = Ps[0].sample_weight
    base = None if w is None else np.asarray(w, dtype=np.float64)
    evs = [rs.evaluator(metric, P, kwargs)[0] for P in Ps]
    ones = (np.ones((1, n)) if base is None else base[None, :]).copy()
    estimates = [float(ev(ones)[0]) for ev in evs]
    rng = np.random.default_rng(seed)
    boot = np.zeros((len(Ps), n_resamples))
    done = 0
    for C in rs.bootstrap_counts(rng, n, n_resamples):
        Wb = C if base is None else C * base
        for i, ev in enumerate(evs):
            boot[i, done : done + C.shape[0]] = ev(Wb)
        done += C.shape[0]
    jack = None
    if method == "bca":
        group = rs.jackknife_groups(n, jackknife_groups, rng)
        jack = np.stack([rs.evaluate(ev, rs.jackknife_weights(group), base) for ev in evs])
    return estimates, boot, jack


@fill_doc
def confidence_interval(
    metric: Callable[..., Any],
    probs: Any,
    labels: Any = None,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    method: str = "basic",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    jackknife_groups: int = 100,
    seed: int | None = 0,
    **metric_kwargs: Any,
) -> ConfidenceInterval:
    """Bootstrap confidence interval of ``metric(probs, labels)`` (basic bootstrap by default).

    The rows (prediction, label, weight) are resampled with replacement
    ``n_resamples`` times; the interval is computed from the metric's values on
    the resamples (Efron 1987; Efron & Tibshirani 1993, ch. 13-14; the numbers of
    :func:`scipy.stats.bootstrap` on the same resamples).

    Parameters
    ----------
    metric : callable
        A calipers metric, ``metric(probs, labels, *, sample_weight=..., **kw) ->
        float`` (``cp.ece``, ``cp.ace``, ``cp.smece``, ``cp.nll``, ``cp.brier``,
        ``cp.accuracy``, ``cp.ce_kl``, ...). It is called with a validated
        :class:`calipers.Predictions` (carrying the resample as ``sample_weight``) and
        ``None`` as labels, which every calipers metric accepts; wrap a function of
        your own as ``lambda P, _, **kw: f(P.probs, P.labels, P.sample_weight)``.
    probs : array-like or tensor, shape (n, k) or (n,), or Predictions
        Probabilities (logits with ``logits=True``); validated once.
    labels : array-like, shape (n,)
        True classes (None when ``probs`` is a Predictions).
    {sample_weight}
        A resample carries each drawn row's weight (times its count).
    {logits}
    {classes}
        The labels are mapped to column indices once, before resampling, so
        every resample (and the metric) sees the same mapping.
    method : {"basic", "bca", "percentile"}, default "basic"
        ``"basic"``: ``[2 e - q(1 - alpha/2), 2 e - q(alpha/2)]`` with ``e`` the
        estimate and ``q`` the quantiles of the bootstrap values (Davison & Hinkley
        1997, §5.2; the interval can lie below a biased estimate, and its lower end
        below 0 for a metric that cannot be negative: read that as "down to 0").
        ``"bca"``: bias-corrected and accelerated (Efron 1987), second-order
        accurate for smooth metrics (NLL, Brier, accuracy) but not for a
        calibration error whose bias is several standard errors.
        ``"percentile"``: ``[q(alpha/2), q(1 - alpha/2)]``; doubles the bias of a
        biased metric instead of removing it. docs/intervals.md measures all three.
    confidence_level : float, default 0.95
    n_resamples : int, default 2000
        Bootstrap resamples (at least 1000 are advised for the tails of BCa);
        at most ``calipers.validation.MAX_RESAMPLES`` (10**6), and rows times resamples at most
        ``calipers.validation.MAX_WORK``.
    jackknife_groups : int, default 100
        BCa only: the acceleration ``a`` comes from a grouped (delete-d) jackknife
        (Shao & Wu 1989; Efron & Tibshirani 1993, ch. 11) with this many groups of
        rows, assigned at random (seeded): ``n`` metric calls would cost too much
        for a quadratic metric at ``n = 10^4``. With ``n <= jackknife_groups`` it is
        the delete-one jackknife (then the interval equals
        ``scipy.stats.bootstrap(..., method="BCa")`` on the same resamples). The
        acceleration is a skewness, and its estimate from ``G`` groups has a
        standard error of about ``sqrt(6) / (6 G)`` (0.004 at ``G = 100``), which
        moves a 95 % endpoint by about 0.015 standard errors.
    seed : int or None, default 0
        Seed of :func:`numpy.random.default_rng` for the resamples and the
        jackknife groups; the same seed gives the same interval.
    **metric_kwargs
        Passed to ``metric`` (e.g. ``n_bins=10``, ``clip=1e-15``).

    Returns
    -------
    ConfidenceInterval
        ``estimate``, ``low``, ``high``, ``method``, ``confidence_level``,
        ``n_resamples``, ``standard_error`` and ``bootstrap_bias``.

    Raises
    ------
    CalibrationInputError
        Bad input or options; a metric that is not finite on the data itself
        (e.g. an NLL of inf: some true class has probability 0 — every resample
        holding that row has NLL inf too; use ``clip=``); a metric that is NaN on
        some resample; BCa when every resample lies on one side of the estimate
        (the bias correction is infinite).

    Notes
    -----
    A metric that is +inf on some resamples but finite on the data cannot occur
    for NLL (a resample holds a subset of the rows); for other metrics the
    infinite values are kept, and an endpoint may then be infinite.

    Leave-one-out kernel estimates (``cp.ce_kl``, ``cp.proper_calibration_error``)
    are evaluated on a resample as the weighted estimate, in which a row drawn
    twice is left out together with its copy; resampling copies would put a
    duplicate at distance 0 into every leave-one-out sum and bias the bootstrap.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = (rng.uniform(size=2000) < p**2).astype(int)      # over-confident: P(y=1|p) = p^2
    >>> ci = cp.confidence_interval(cp.ece, p, y, n_resamples=500)
    >>> ci.low < 1 / 6 < ci.high, ci.method, ci.n_resamples   # population ECE: 1/6
    (True, 'basic', 500)
    >>> cp.confidence_interval(cp.ece, p, y, n_resamples=500) == ci   # seeded
    True
    """
    _check_options(method, confidence_level, n_resamples, jackknife_groups)
    P = _validate(probs, labels, logits, sample_weight, classes)
    est, boot, jack = _values(
        metric, [P], metric_kwargs, int(n_resamples), int(jackknife_groups), method, seed
    )
    return _finish(
        _metric_name(metric),
        est[0],
        boot[0],
        None if jack is None else jack[0],
        method,
        confidence_level,
    )


@fill_doc
def paired_confidence_interval(
    metric: Callable[..., Any],
    probs_a: Any,
    probs_b: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool | tuple[bool, bool] = False,
    classes: Any = None,
    method: str = "basic",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    jackknife_groups: int = 100,
    seed: int | None = 0,
    **metric_kwargs: Any,
) -> ConfidenceInterval:
    """Bootstrap interval of ``metric(b) - metric(a)`` on the same rows (paired).

    For two models scored on the same labelled rows, or one model before (``a``)
    and after (``b``) recalibration: every resample draws one set of row indices
    and evaluates both predictions on it, so the row-to-row variation common to
    both cancels in the difference (Efron & Tibshirani 1993, §13; the paired
    design). An interval that excludes 0 says the difference is beyond the
    resampling noise of these rows.

    Parameters
    ----------
    metric : callable
        As in :func:`confidence_interval`.
    probs_a, probs_b : array-like or tensor
        The two sets of predictions of the same ``n`` rows (probabilities, or
        logits with ``logits``); the number of classes may differ only in form
        (both must fit ``labels``).
    {labels}
    {sample_weight}
    logits : bool or (bool, bool), default False
        Whether ``probs_a`` and ``probs_b`` are logits (one flag for both, or one each).
    classes : array-like or fitted classifier, optional
        The class of each column of ``probs_a`` and ``probs_b`` (both the same
        classes), as in :func:`confidence_interval`.
    method, confidence_level, n_resamples, jackknife_groups, seed, **metric_kwargs
        As in :func:`confidence_interval`.

    Returns
    -------
    ConfidenceInterval
        Of the difference ``metric(b) - metric(a)`` (positive: ``b`` has the
        larger value; for a loss or a calibration error, ``b`` is worse).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(3000, 4)) * 2
    >>> e = np.exp(z); p = e / e.sum(1, keepdims=True)
    >>> y = (rng.uniform(size=3000)[:, None] > p.cumsum(1)).sum(1).clip(0, 3)
    >>> d = cp.paired_confidence_interval(cp.nll, 2 * z, z, y, logits=True, n_resamples=500)
    >>> d.estimate < 0 and d.high < 0        # z itself is calibrated: NLL falls, beyond noise
    True
    """
    _check_options(method, confidence_level, n_resamples, jackknife_groups)
    la, lb = (logits, logits) if isinstance(logits, bool) else tuple(logits)
    Pa = _validate(probs_a, labels, bool(la), sample_weight, classes)
    Pb = _validate(probs_b, labels, bool(lb), sample_weight, classes)
    est, boot, jack = _values(
        metric, [Pa, Pb], metric_kwargs, int(n_resamples), int(jackknife_groups), method, seed
    )
    name = f"the difference of {_metric_name(metric)}"
    for e, what in zip(est, ("a", "b"), strict=True):
        if not math.isfinite(e):
            raise CalibrationInputError(
                f"{_metric_name(metric)} of probs_{what} is {e} on the data itself; the "
                "difference has no confidence interval (for NLL: clip=1e-15)"
            )
    with np.errstate(invalid="ignore"):
        diff_boot = boot[1] - boot[0]
        diff_jack = None if jack is None else jack[1] - jack[0]
    return _finish(name, est[1] - est[0], diff_boot, diff_jack, method, confidence_level)
