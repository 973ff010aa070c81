"""The integrated calibration index and its quantiles (Austin & Steyerberg 2019)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._flexible_calibration_curve import (
    EXACT_WORK,
    FlexibleCalibrationCurve,
    Method,
    _check_curve_args,
    _curve,
    _Loess,
)
from ._inputs import binary_risks

__all__ = ["CalibrationIndex", "integrated_calibration_index"]


@dataclass(frozen=True)
class CalibrationIndex:
    """Summaries of the distance between the risks and the flexible calibration curve.

    Attributes
    ----------
    ici : float
        Integrated calibration index, ``Eavg``: the (weighted) mean of ``|p_i -
        curve(p_i)|`` over the observed risks.
    e50, e90 : float
        Median and 90th percentile of ``|p_i - curve(p_i)|``.
    emax : float
        Its maximum.
    method : str
        The curve, ``"loess"`` or ``"rcs"``.
    exact : bool
        True when the curve was evaluated exactly at every observed risk; False when
        it was interpolated from its grid (large ``n``; see
        :func:`integrated_calibration_index`).
    """

    ici: float
    e50: float
    e90: float
    emax: float
    method: str
    exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers."""
        return asdict(self)


def _weighted_quantile(a: np.ndarray, w: np.ndarray, q: float) -> float:
    order = np.argsort(a, kind="stable")
    cw = np.cumsum(w[order])
    i = int(np.searchsorted(cw, q * cw[-1], side="left"))
    return float(a[order][min(i, a.shape[0] - 1)])


def _index_from(
    p: np.ndarray,
    w: np.ndarray | None,
    curve: FlexibleCalibrationCurve,
    fitter: _Loess | None,
) -> CalibrationIndex:
    exact = True
    if curve.method == "loess" and fitter is not None:
        xs = fitter.x  # the risks, sorted
        new = np.empty(xs.shape[0], dtype=bool)
        new[0] = True
        np.not_equal(xs[1:], xs[:-1], out=new[1:])
        u = xs[new]
        fitted = np.empty_like(p)
        if u.shape[0] * fitter.q <= EXACT_WORK:
            fitted[fitter.order] = fitter.fit(u)[0][np.cumsum(new) - 1]
        else:
            fitted[fitter.order] = curve(xs)  # sorted: faster interpolation
            exact = False
    else:
        fitted = curve(p)
    diff = np.abs(p - fitted)
    if w is None:
        ici = float(diff.mean())
        e50, e90 = (float(v) for v in np.quantile(diff, [0.5, 0.9]))
    else:
        ici = float(np.dot(w, diff) / w.sum())
        e50 = _weighted_quantile(diff, w, 0.5)
        e90 = _weighted_quantile(diff, w, 0.9)
    emax = float(diff.max() if w is None else diff[w > 0].max())
    return CalibrationIndex(ici=ici, e50=e50, e90=e90, emax=emax, method=curve.method, exact=exact)


def integrated_calibration_index(
    probs: Any,
    labels: Any,
    *,
    method: Method = "loess",
    span: float = 0.75,
    degree: int = 2,
    n_knots: int = 5,
    sample_weight: Any = None,
    classes: Any = None,
) -> CalibrationIndex:
    """The integrated calibration index (ICI) with E50, E90 and Emax.

    Austin & Steyerberg (2019): fit a flexible calibration curve (loess of the
    outcome on the predicted risk, R's defaults), and summarise the absolute
    differences ``|p_i - curve(p_i)|`` between each observed risk and the curve at
    it: their mean (ICI, also called Eavg), median (E50), 90th percentile (E90) and
    maximum (Emax). Quantiles are R's default (type 7); with ``sample_weight``, the
    weighted mean and the smallest value whose cumulative weight reaches the level.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)``.
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    method, span, degree, n_knots
        The curve, as :func:`calipers.clinical.flexible_calibration_curve`.
    sample_weight : array-like, shape (n,), optional
        Non-negative row weights.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    CalibrationIndex

    Notes
    -----
    The loess curve is evaluated exactly at every distinct observed risk while
    ``(distinct risks) x floor(span n)`` is at most 5e6 (``n <= 2581`` distinct
    risks at the default span); above that, at 200 evenly spaced risks and interpolated by a
    cubic spline in between (``exact=False``), which keeps ``n = 10^6`` well under a
    second; the interpolated curve is within about ``1e-5`` of the exact one (below
    ``5e-5`` in the tests), and so is the ICI.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.clinical import integrated_calibration_index
    >>> rng = np.random.default_rng(2)
    >>> p = rng.uniform(0.05, 0.6, 3000)
    >>> y = rng.uniform(size=3000) < p / 2      # risks twice too high
    >>> idx = integrated_calibration_index(p, y)
    >>> round(idx.ici, 2), idx.e50 <= idx.e90 <= idx.emax
    (0.16, True)
    """
    m, sp, deg, nk = _check_curve_args(method, span, degree, n_knots)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    curve, fitter = _curve(p, y, w, m, sp, deg, nk, 200, 0.95)
    return _index_from(p, w, curve, fitter)
