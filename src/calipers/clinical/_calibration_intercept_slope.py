"""Weak calibration: the calibration intercept and slope (Cox 1958)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import expit, logit
from threadpoolctl import threadpool_limits

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


def _nll(eta: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
    v = np.logaddexp(0.0, eta) - y * eta
    return float(v.sum() if w is None else np.dot(w, v))


def _newton(
    lp: np.ndarray, y: np.ndarray, w: np.ndarray | None, with_slope: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood ``a`` of ``logit P = a + lp`` (``with_slope=False``) or ``(c, b)``
    of ``logit P = c + b lp``, and the inverse Fisher information.

    Newton's method from the identity (``a = 0``; ``c = 0, b = 1``); a step longer than
    1 in any coefficient is halved until the likelihood increases (near the optimum
    the full Newton step of this concave likelihood is taken without the check), and
    the iteration stops after a step below ``1e-8`` (relative) in every coefficient:
    Newton's quadratic convergence leaves an error of the order of its square. The
    information is the one that step was computed from.
    """
    k = 2 if with_slope else 1
    beta = np.array([0.0, 1.0]) if with_slope else np.array([0.0])
    eta = lp.copy()
    f = math.nan
    H = np.eye(k)
    converged = False
    for _ in range(200):
        mu = expit(eta)
        r = y - mu
        v = mu * (1.0 - mu)
        if w is not None:
            r *= w
            v *= w
        if with_slope:
            vl = v * lp
            g = np.array([r.sum(), np.dot(r, lp)])
            H = np.array([[v.sum(), vl.sum()], [vl.sum(), np.dot(vl, lp)]])
        else:
            g = np.array([r.sum()])
            H = np.array([[v.sum()]])
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        if float(np.max(np.abs(step))) > 1.0:  # far from the optimum: guard the step
            if not math.isfinite(f):
                f = _nll(eta, y, w)
            s = 1.0
            while True:
                trial = beta + s * step
                eta_t = trial[0] + trial[1] * lp if with_slope else trial[0] + lp
                f_t = _nll(eta_t, y, w)
                if f_t <= f or s < 1e-10:
                    break
                s /= 2
            beta, eta, f = trial, eta_t, f_t
            continue
        beta = beta + step
        eta = beta[0] + beta[1] * lp if with_slope else beta[0] + lp
        f = math.nan
        if float(np.max(np.abs(step))) <= 1e-8 * max(1.0, float(np.max(np.abs(beta)))):
            converged = True
            break
    if not converged:
        mu = expit(eta)
        v = mu * (1.0 - mu)
        if w is not None:
            v *= w
        if with_slope:
            vl = v * lp
            H = np.array([[v.sum(), vl.sum()], [vl.sum(), np.dot(vl, lp)]])
        else:
            H = np.array([[v.sum()]])
    try:
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        cov = np.full((k, k), math.inf)
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
    z = float(norm.ppf(0.5 + confidence / 2))
    with threadpool_limits(limits=1, user_api="blas"):
        (a,), cov_a = _newton(lp, y, w, with_slope=False)
        (c, b), cov = _newton(lp, y, w, with_slope=True)
    se_a = math.sqrt(cov_a[0, 0]) if cov_a[0, 0] >= 0 else math.nan
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
    Both models are fitted by Newton's method with step halving, to a last step below
    1e-8 (relative); they agree with a statsmodels ``GLM(family=Binomial())`` to 1e-8
    (tested; about 1e-14 in practice).

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
