"""The Hosmer-Lemeshow goodness-of-fit test over groups of predicted risk."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2

from ..validation import CalibrationInputError
from ._inputs import binary_risks

__all__ = ["HosmerLemeshowTest", "hosmer_lemeshow_test"]


@dataclass(frozen=True)
class HosmerLemeshowTest:
    """The Hosmer-Lemeshow test of binary risk predictions (Hosmer & Lemeshow 1980).

    Attributes
    ----------
    statistic : float
        The chi-square statistic, summed over the groups and over both outcomes:
        ``sum (O1 - E1)^2 / E1 + (O0 - E0)^2 / E0``.
    df : int
        Degrees of freedom: the number of groups formed minus 2.
    p_value : float
        ``P(chi2(df) >= statistic)``; NaN when fewer than 3 groups were formed.
    n_groups : int
        Number of groups formed (fewer than asked for when tied risks share
        quantile breaks, see :func:`hosmer_lemeshow_test`).
    group_sizes : numpy.ndarray
        Rows (sum of the weights) in each group, from the lowest risks up.
    observed_events : numpy.ndarray
        Observed events ``O1`` in each group.
    expected_events : numpy.ndarray
        Expected events ``E1``, the sum of the predicted risks in each group.
    mean_risk : numpy.ndarray
        Mean predicted risk in each group, ``E1 / group_sizes``.
    breaks : numpy.ndarray
        The distinct quantile breaks of the risks that delimit the groups.
    """

    statistic: float
    df: int
    p_value: float
    n_groups: int
    group_sizes: np.ndarray
    observed_events: np.ndarray
    expected_events: np.ndarray
    mean_risk: np.ndarray
    breaks: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready numbers and lists."""
        return {
            "statistic": self.statistic,
            "df": self.df,
            "p_value": self.p_value,
            "n_groups": self.n_groups,
            "group_sizes": self.group_sizes.tolist(),
            "observed_events": self.observed_events.tolist(),
            "expected_events": self.expected_events.tolist(),
            "mean_risk": self.mean_risk.tolist(),
            "breaks": self.breaks.tolist(),
        }


def _check_n_groups(n_groups: Any) -> int:
    if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)):
        raise CalibrationInputError(
            f"n_groups must be an integer of at least 3, like 10; got {n_groups!r}"
        )
    g = int(n_groups)
    if g < 3:
        raise CalibrationInputError(
            f"n_groups must be at least 3 (the test has n_groups - 2 degrees of freedom); got {g}"
        )
    return g


def _quantile_type7(sorted_p: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(x, probs)`` of its default type 7, on sorted data."""
    n = sorted_p.shape[0]
    index = (n - 1) * probs  # 0-based position
    lo = np.floor(index).astype(np.int64)
    hi = np.minimum(np.ceil(index).astype(np.int64), n - 1)
    h = index - lo
    qs = sorted_p[lo].copy()
    xhi = sorted_p[hi]
    mix = (index > lo) & (xhi != qs)
    qs[mix] = (1.0 - h[mix]) * qs[mix] + h[mix] * xhi[mix]
    return qs


def _term(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (observed - expected) ** 2 / expected
    t[(expected == 0) & (observed == 0)] = 0.0
    t[(expected == 0) & (observed != 0)] = math.inf
    return t


def _hosmer_lemeshow(
    p: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_groups: int
) -> HosmerLemeshowTest:
    if p.shape[0] == 0:
        raise CalibrationInputError("probs is empty: the Hosmer-Lemeshow test needs rows")
    probs = np.arange(n_groups + 1) * (1.0 / n_groups)
    breaks = np.unique(_quantile_type7(np.sort(p), probs))
    # cut(p, breaks, include.lowest = TRUE): right-closed (b[k-1], b[k]], the first
    # interval closed on the left too
    group = np.maximum(np.searchsorted(breaks, p, side="left") - 1, 0)
    k = max(breaks.shape[0] - 1, 1)
    ww = np.ones_like(p) if w is None else w
    size = np.bincount(group, weights=ww, minlength=k)
    o1 = np.bincount(group, weights=ww * y, minlength=k)
    e1 = np.bincount(group, weights=ww * p, minlength=k)
    keep = np.bincount(group, minlength=k) > 0  # intervals that hold no risk are dropped
    size, o1, e1 = size[keep], o1[keep], e1[keep]
    o0, e0 = size - o1, size - e1
    stat = float(np.sum(_term(o1, e1)) + np.sum(_term(o0, e0)))
    g = int(size.shape[0])
    df = g - 2
    if df >= 1 and math.isfinite(stat):
        pv = float(chi2.sf(stat, df))
    elif df >= 1:
        pv = 0.0
    else:
        pv = math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_risk = e1 / size
    return HosmerLemeshowTest(
        statistic=stat,
        df=df,
        p_value=pv,
        n_groups=g,
        group_sizes=size,
        observed_events=o1,
        expected_events=e1,
        mean_risk=mean_risk,
        breaks=breaks,
    )


def hosmer_lemeshow_test(
    probs: Any,
    labels: Any,
    *,
    n_groups: int = 10,
    sample_weight: Any = None,
    classes: Any = None,
) -> HosmerLemeshowTest:
    """The Hosmer-Lemeshow goodness-of-fit test over groups of predicted risk.

    Hosmer & Lemeshow (1980): sort the rows by predicted risk, cut them into
    ``n_groups`` groups at the quantiles of the risks ("deciles of risk" for 10),
    and compare observed with expected events and non-events in each group by a
    chi-square statistic with ``n_groups - 2`` degrees of freedom.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)`` (or both columns of a binary classifier).
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    n_groups : int, default 10
        Groups of risk asked for (at least 3).
    sample_weight : array-like, shape (n,), optional
        Non-negative frequency weights: they weight the counts in each group; the
        quantile breaks are those of the risks of the rows, unweighted.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    HosmerLemeshowTest
        The statistic, degrees of freedom, p-value and the table of groups.

    Notes
    -----
    The groups are those of ``hoslem.test`` in the R package ResourceSelection
    (Lele, Keim & Solymos): the breaks are ``quantile(p, seq(0, 1, 1 / n_groups))``
    with R's default quantile rule (type 7: linear interpolation between order
    statistics, ``numpy.quantile``'s ``"linear"``), repeated breaks are merged,
    and a risk belongs to the group ``(b[k-1], b[k]]`` (right-closed; the lowest
    group also holds the smallest risk). Tied risks therefore never straddle two
    groups: when many rows share a risk, breaks coincide and fewer groups are
    formed (intervals holding no risk are dropped too). The statistic is
    ``sum over groups and both outcomes of (O - E)^2 / E``, equivalently
    ``sum (O1 - E1)^2 / (E1 (1 - E1 / n_k))``. The degrees of freedom are the
    number of groups actually formed minus 2, so that a merge lowers them;
    ``hoslem.test`` keeps ``n_groups - 2`` whatever the merges (both agree
    whenever the risks give ``n_groups`` distinct groups). With fewer than 3
    groups the p-value is NaN. A group whose expected count is 0 contributes 0
    when its observed count is 0 too, and makes the statistic infinite otherwise.

    The test depends on the number of groups and has little power at moderate
    sizes and too much at large ones (Hosmer et al. 1997; Kramer & Zimmerman
    2007); prefer the calibration curve and its summaries for a description.

    Examples
    --------
    >>> from calipers.clinical import hosmer_lemeshow_test
    >>> p = [0.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    >>> y = [0, 0, 0, 1, 0, 1, 1, 0, 1, 1]
    >>> t = hosmer_lemeshow_test(p, y, n_groups=5)
    >>> t.n_groups, t.df, t.group_sizes.tolist(), t.observed_events.tolist()
    (5, 3, [2.0, 2.0, 2.0, 2.0, 2.0], [0.0, 1.0, 1.0, 1.0, 2.0])
    >>> round(t.statistic, 4), round(t.p_value, 4)
    (1.4598, 0.6916)
    """
    g = _check_n_groups(n_groups)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    return _hosmer_lemeshow(p, y, w, g)
