"""Spiegelhalter's z test of the calibration of binary risk predictions."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from ._inputs import binary_risks

__all__ = ["SpiegelhalterTest", "spiegelhalter_z_test"]


@dataclass(frozen=True)
class SpiegelhalterTest:
    """Spiegelhalter's z test (Spiegelhalter 1986).

    Attributes
    ----------
    z : float
        The standardised statistic: positive when the Brier score is larger than
        expected of calibrated risks.
    p_value : float
        Two-sided p-value, ``2 P(Z >= |z|)``.
    """

    z: float
    p_value: float

    @property
    def statistic(self) -> float:
        """The statistic ``z`` (the name the other tests use)."""
        return self.z

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers."""
        return asdict(self)


def _spiegelhalter(p: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> SpiegelhalterTest:
    a = 1.0 - 2.0 * p
    if w is None:
        num = float(np.dot(y - p, a))
        var = float(np.dot(a * a, p * (1.0 - p)))
    else:
        num = float(np.dot(w, (y - p) * a))
        var = float(np.dot(w, a * a * p * (1.0 - p)))
    if var > 0:
        z = num / math.sqrt(var)
        pv = float(2.0 * norm.sf(abs(z)))
    else:
        z, pv = math.nan, math.nan
    return SpiegelhalterTest(z=z, p_value=pv)


def spiegelhalter_z_test(
    probs: Any, labels: Any, *, sample_weight: Any = None, classes: Any = None
) -> SpiegelhalterTest:
    """Spiegelhalter's z test of calibrated binary risk predictions.

    Spiegelhalter (1986) standardises the Brier score by its mean and variance under
    the hypothesis that the risks are the true probabilities:

    ``z = sum (y_i - p_i)(1 - 2 p_i) / sqrt(sum (1 - 2 p_i)^2 p_i (1 - p_i))``,

    asymptotically standard normal when the predictions are calibrated. It is the
    ``S:z`` and ``S:p`` of ``val.prob`` in Harrell's R package rms.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)`` (or both columns of a binary classifier).
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    sample_weight : array-like, shape (n,), optional
        Non-negative frequency weights: a row of weight ``w`` counts as ``w`` rows in
        both sums.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    SpiegelhalterTest
        ``z`` and its two-sided p-value.

    Notes
    -----
    When every risk is 0, 1/2 or 1 the variance is 0 and ``z`` and the p-value are
    NaN. The test is sensitive to miscalibration in both directions but, like any
    single number, says nothing of where the risks are off.

    Examples
    --------
    >>> from calipers.clinical import spiegelhalter_z_test
    >>> t = spiegelhalter_z_test([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1])
    >>> round(t.z, 4), round(t.p_value, 4)
    (0.25, 0.8026)
    """
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    return _spiegelhalter(p, y, w)
