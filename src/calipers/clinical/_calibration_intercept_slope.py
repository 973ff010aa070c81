"""Weak calibration: the calibration intercept and slope (Cox 1958)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import expit, logit

from ..validation import CalibrationInputError
from ._inputs import binary_risks, check_confidence, refuse_certain

__all__ = ["WeakCalibration", "calibration_intercept_slope"]


@dataclass(frozen=True)
class WeakCalibration:
    """The calibration intercept and slope of binary risk predictions.

    Attributes
    ----------
    intercept : float
        Calibration intercept ("calibration in the large" of the logistic
        recalibration framework): ``a`` in ``logit P(y = 1) = a + logit(p)``. 0 when
        the predicted risks are right on average; above 0 when they are too low.
    intercept_se, intercept_interval : float, tuple of float
        Its standard error and Wald interval.
    slope : float
        Calibration slope: ``b`` in ``logit P(y = 1) = c + b logit(p)``. 1 when the
        predictions spread as far as they should; below 1 when they are too extreme
        (over-fitting), above 1 when too moderate.
    slope_se, slope_interval : float, tuple of float
        Its standard error and Wald interval.
    slope_model_intercept : float
        ``c``, the intercept of the slope model (not the calibration intercept).
    confidence : float
        Level of the intervals.
    """

    intercept: float
    intercept_se: float
    intercept_interval: tuple[float, float]
    slope: float
    slope_se: float
    slope_interval: tuple[float, float]
    slope_model_intercept: float
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers and lists."""
        d = asdict(self)
        d["intercept_interval"] = list(self.intercept_interval)
        d["slope_interval"] = list(self.slope_interval)
        return d


def _nll(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(w, np.logaddexp(0.0, eta) - y * eta))


def _fit_intercept(lp: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """``a`` maximising the likelihood of ``logit P = a + lp`` and its standard error."""
    a = 0.0
    f = _nll(lp, y, w)
    for _ in range(100):
        mu = expit(a + lp)
        g = float(np.dot(w, y - mu))
        h = float(np.dot(w, mu * (1 - mu)))
        if h <= 0:
            break
        step = g / h
        s = 1.0
        while True:
            f_new = _nll(a + s * step + lp, y, w)
            if f_new <= f + 1e-12 * max(1.0, abs(f)) or s < 1e-8:
                break
            s /= 2
        a += s * step
        f = f_new
        if abs(s * step) < 1e-12 * max(1.0, abs(a)):
            break
    mu = expit(a + lp)
    h = float(np.dot(w, mu * (1 - mu)))
    return a, (1.0 / math.sqrt(h) if h > 0 else math.inf)


def _fit_slope(lp: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(c, b)`` maximising the likelihood of ``logit P = c + b lp`` and their covariance."""
    beta = np.array([0.0, 1.0])
    eta = beta[0] + beta[1] * lp
    f = _nll(eta, y, w)
    for _ in range(100):
        mu = expit(eta)
        r = w * (y - mu)
        g = np.array([r.sum(), np.dot(r, lp)])
        v = w * mu * (1 - mu)
        vl = v * lp
        H = np.array([[v.sum(), vl.sum()], [vl.sum(), np.dot(vl, lp)]])
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        d_eta = step[0] + step[1] * lp
        s = 1.0
        while True:
            f_new = _nll(eta + s * d_eta, y, w)
            if f_new <= f + 1e-12 * max(1.0, abs(f)) or s < 1e-8:
                break
            s /= 2
        beta = beta + s * step
        eta = beta[0] + beta[1] * lp
        f = f_new
        if float(np.max(np.abs(s * step))) < 1e-12 * max(1.0, float(np.max(np.abs(beta)))):
            break
    mu = expit(eta)
    v = w * mu * (1 - mu)
    vl = v * lp
    H = np.array([[v.sum(), vl.sum()], [vl.sum(), np.dot(vl, lp)]])
    try:
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        cov = np.full((2, 2), math.inf)
    return beta, cov


def _weak(p: np.ndarray, y: np.ndarray, w: np.ndarray | None, confidence: float) -> WeakCalibration:
    from scipy.stats import norm

    refuse_certain(p, "the calibration intercept and slope")
    if np.all(y == y[0]):
        raise CalibrationInputError(
            "labels are all "
            f"{int(y[0])}: the calibration intercept and slope need both outcomes "
            "(the logistic regression has no finite optimum)"
        )
    lp = logit(p)
    ww = np.ones_like(p) if w is None else w
    z = float(norm.ppf(0.5 + confidence / 2))
    a, se_a = _fit_intercept(lp, y, ww)
    (c, b), cov = _fit_slope(lp, y, ww)
    se_b = math.sqrt(cov[1, 1]) if cov[1, 1] >= 0 else math.nan
    if not (math.isfinite(a) and math.isfinite(b)) or abs(b) > 1e6:
        raise CalibrationInputError(
            "the calibration slope has no finite estimate: the predicted risks separate "
            "the outcomes perfectly"
        )
    return WeakCalibration(
        intercept=float(a),
        intercept_se=float(se_a),
        intercept_interval=(float(a - z * se_a), float(a + z * se_a)),
        slope=float(b),
        slope_se=float(se_b),
        slope_interval=(float(b - z * se_b), float(b + z * se_b)),
        slope_model_intercept=float(c),
        confidence=confidence,
    )


def calibration_intercept_slope(
    probs: Any,
    labels: Any,
    *,
    confidence: float = 0.95,
    sample_weight: Any = None,
    classes: Any = None,
) -> WeakCalibration:
    """Weak calibration: the calibration intercept and slope (Cox 1958).

    The second level of the hierarchy of Van Calster et al. (2016). The slope ``b``
    and its intercept ``c`` are the logistic regression ``logit P(y = 1) = c + b
    logit(p)`` of the outcomes on the logit of the predicted risks; the calibration
    intercept ``a`` is the intercept of the same regression with the slope fixed at
    1, ``logit P(y = 1) = a + logit(p)`` (``logit(p)`` an offset), as
    ``rms::val.prob`` and ``CalibrationCurves::val.prob.ci.2`` report them.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)``, strictly between 0 and 1 (a risk of exactly 0
        or 1 has an infinite logit and is refused, naming its row).
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    confidence : float, default 0.95
        Level of the Wald intervals ``estimate +- z se`` (``z`` the normal quantile;
        the standard errors from the inverse Fisher information, as R's
        ``confint.default`` of the ``glm``).
    sample_weight : array-like, shape (n,), optional
        Non-negative row weights (frequency weights of the likelihood).
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    WeakCalibration

    Notes
    -----
    Both models are fitted by Newton's method with step halving to a relative step
    below 1e-12 (they agree with a statsmodels ``GLM(family=Binomial())`` to 1e-8).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from calipers.clinical import calibration_intercept_slope
    >>> rng = np.random.default_rng(0)
    >>> lp = rng.normal(-1, 1.5, 20000)          # the model's linear predictor
    >>> y = rng.uniform(size=20000) < expit(0.7 * lp)   # its truth is less extreme
    >>> weak = calibration_intercept_slope(expit(lp), y)
    >>> round(weak.slope, 2), weak.slope_interval[1] < 1
    (0.71, True)
    """
    c = check_confidence(confidence)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    return _weak(p, y, w, c)
