"""Calibration in the large: the mean predicted risk against the observed event rate."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from ._inputs import binary_risks, check_confidence

__all__ = ["CalibrationInTheLarge", "calibration_in_the_large"]


@dataclass(frozen=True)
class CalibrationInTheLarge:
    """Calibration in the large of binary risk predictions (Van Calster et al. 2016).

    Attributes
    ----------
    n : int
        Number of rows.
    n_events : float
        Observed events ``O`` (the weighted sum of the outcomes).
    mean_predicted : float
        Mean predicted risk (weighted).
    observed_rate : float
        Observed event rate (weighted).
    difference : float
        ``observed_rate - mean_predicted``: positive when the model under-estimates
        the risk on average.
    difference_interval : tuple of float
        Wald interval of the difference (see :func:`calibration_in_the_large`).
    oe_ratio : float
        Observed over expected events, ``O / E`` with ``E`` the sum of the
        predicted risks: above 1 when the model under-estimates the risk.
    oe_interval : tuple of float
        Interval of ``O / E`` on the log scale (see :func:`calibration_in_the_large`).
    confidence : float
        Level of both intervals.
    """

    n: int
    n_events: float
    mean_predicted: float
    observed_rate: float
    difference: float
    difference_interval: tuple[float, float]
    oe_ratio: float
    oe_interval: tuple[float, float]
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers and lists."""
        d = asdict(self)
        d["difference_interval"] = list(self.difference_interval)
        d["oe_interval"] = list(self.oe_interval)
        return d


def _ciltl(
    p: np.ndarray, y: np.ndarray, w: np.ndarray | None, confidence: float
) -> CalibrationInTheLarge:
    n = int(p.shape[0])
    z = float(norm.ppf(0.5 + confidence / 2))
    if w is None:
        sw = float(n)
        observed = float(y.sum())
        expected = float(p.sum())
        r = y - p
        rbar = float(r.mean())
        se_d = math.sqrt(float(np.sum((r - rbar) ** 2)) / (n * max(n - 1, 1)))
    else:
        sw = float(w.sum())
        observed = float(np.dot(w, y))
        expected = float(np.dot(w, p))
        r = y - p
        rbar = float(np.dot(w, r)) / sw
        # frequency weights: a weight of 2 is the row repeated twice
        var = float(np.dot(w, (r - rbar) ** 2)) / max(sw - 1.0, 1e-300)
        se_d = math.sqrt(var / sw)
    obs = observed / sw
    mean_p = expected / sw
    d = obs - mean_p
    d_int = (d - z * se_d, d + z * se_d)
    oe = observed / expected if expected > 0 else math.nan
    if observed > 0 and expected > 0 and obs < 1:
        se_log = math.sqrt((1.0 - obs) / observed)
        oe_int = (oe * math.exp(-z * se_log), oe * math.exp(z * se_log))
    else:
        oe_int = (math.nan, math.nan)
    return CalibrationInTheLarge(
        n=n,
        n_events=observed,
        mean_predicted=mean_p,
        observed_rate=obs,
        difference=d,
        difference_interval=d_int,
        oe_ratio=oe,
        oe_interval=oe_int,
        confidence=confidence,
    )


def calibration_in_the_large(
    probs: Any,
    labels: Any,
    *,
    confidence: float = 0.95,
    sample_weight: Any = None,
    classes: Any = None,
) -> CalibrationInTheLarge:
    """Calibration in the large: mean predicted risk against the observed event rate.

    The first level of the calibration hierarchy of Van Calster et al. (2016): does
    the model predict, on average, as many events as happen?

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)`` (or both columns of a binary classifier).
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    confidence : float, default 0.95
        Level of the intervals.
    sample_weight : array-like, shape (n,), optional
        Non-negative row weights (frequency weights).
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    CalibrationInTheLarge

    Notes
    -----
    The difference ``observed - mean predicted`` is the mean of the residuals
    ``y_i - p_i``; its interval is the Wald interval ``d +- z s / sqrt(n)`` with ``s``
    the standard deviation of the residuals (``n - 1`` in the denominator; weights
    are frequency weights, ``n`` the sum of the weights). The ratio ``O / E`` of observed to expected events gets the log-scale
    interval of Debray et al. (2017), ``exp(log(O/E) +- z sqrt((1 - O/N) / O))``,
    which treats the expected events as fixed and the observed ones as binomial
    (the Poisson interval ``sqrt(1 / O)`` is its rare-event limit); it is NaN when no
    event was observed.

    Examples
    --------
    >>> from calipers.clinical import calibration_in_the_large
    >>> r = calibration_in_the_large([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    >>> r.mean_predicted, r.observed_rate, round(r.oe_ratio, 4)
    (0.25, 0.5, 2.0)
    """
    c = check_confidence(confidence)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    return _ciltl(p, y, w, c)
