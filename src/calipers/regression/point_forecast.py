"""Point forecasts of a named functional: identification functions and bias.

A point forecast ``z`` states one number per row, meant to be a named
statistical functional T of the conditional distribution of the target: its
mean, its median, its ``alpha``-quantile or its ``tau``-expectile (Gneiting
2011). A forecast is calibrated for T (conditionally on the information it
uses) when the expected identification function vanishes, ``E[V(Z, Y) | Z] =
0`` (Gneiting & Resin 2023, §2). The canonical identification functions are,
with ``1{z >= y}`` the indicator of a forecast at or above the target:

=================  ==========================================
functional         ``V(z, y)``
=================  ==========================================
``"mean"``         ``z - y``
``"median"``       ``1{z >= y} - 1/2``
``"quantile"``     ``1{z >= y} - alpha``
``"expectile"``    ``2 * abs(1{z >= y} - tau) * (z - y)``
=================  ==========================================

(the sign and the tie rule ``z >= y`` are those of model-diagnostics; the
``tau = 1/2`` expectile is the mean). Their (weighted) average is the
*generalised bias* of the forecasts, positive for over-forecasting: its mean
over all rows tests unconditional calibration, its mean within groups or bins
of a feature tests calibration conditional on that feature (Fissler,
Lorentzen & Mayer 2022, §4).

Examples
--------
>>> from calipers.regression import identification_function
>>> identification_function([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0]).tolist()
[-1.0, 1.0, 0.0, 1.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError, check_sample_weight, check_size
from .distributions import PredictiveDistribution
from .inputs import _as_1d_float

__all__ = [
    "FUNCTIONALS",
    "PointForecasts",
    "check_point_forecast",
    "identification_function",
    "bias",
    "GeneralizedBias",
    "bias_by_group",
    "BiasByGroup",
    "BIN_METHODS",
]

#: The functionals a point forecast may name.
FUNCTIONALS = ("mean", "median", "quantile", "expectile")

#: How :func:`bias_by_group` bins a numeric feature: by quantiles, into equal
#: widths, or by one of NumPy's ``histogram_bin_edges`` rules.
BIN_METHODS = (
    "quantile",
    "uniform",
    "auto",
    "fd",
    "doane",
    "scott",
    "stone",
    "rice",
    "sturges",
    "sqrt",
)


@dataclass(frozen=True)
class PointForecasts:
    """Validated point forecasts of one functional and their targets.

    Built by :func:`check_point_forecast`; the input form of the point-forecast
    diagnostics (Gneiting 2011; Gneiting & Resin 2023).

    Attributes
    ----------
    forecasts : numpy.ndarray
        ``(n,)`` float64 forecasts of the functional, in target units.
    targets : numpy.ndarray
        As for :func:`check_point_forecast`, as ``(n,)`` float64.
    functional : str
        ``"mean"``, ``"median"``, ``"quantile"`` or ``"expectile"``.
    level : float or None
        The quantile level ``alpha`` or expectile level ``tau`` in (0, 1);
        0.5 for the median; None for the mean.
    sample_weight : numpy.ndarray or None
        As for :func:`check_point_forecast`, as ``(n,)`` float64 (None: unit weights).

    Examples
    --------
    >>> from calipers.regression import check_point_forecast
    >>> P = check_point_forecast([1.0, 2.0], [1.5, 1.0], functional="median")
    >>> P.functional, P.level, P.n_samples
    ('median', 0.5, 2)
    """

    forecasts: np.ndarray
    targets: np.ndarray
    functional: str
    level: float | None
    sample_weight: np.ndarray | None

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.forecasts.shape[0])

    def weights(self) -> np.ndarray:
        """The row weights as an array (ones when none were given)."""
        if self.sample_weight is None:
            return np.ones(self.n_samples)
        return self.sample_weight

    def weighted_mean(self, values: np.ndarray) -> float:
        """Mean of per-row ``values`` under :attr:`sample_weight` (plain mean if None)."""
        if self.sample_weight is None:
            return float(np.mean(values))
        w = self.sample_weight
        return float(np.sum(w * values) / np.sum(w))


def check_functional(functional: Any, level: Any) -> tuple[str, float | None]:
    """``(functional, level)`` checked: the functional's name and its level.

    ``"mean"`` takes no level (None); ``"median"`` takes None or 0.5 and gives
    0.5; ``"quantile"`` and ``"expectile"`` need a level strictly inside (0, 1).
    """
    if not isinstance(functional, str) or functional not in FUNCTIONALS:
        raise CalibrationInputError(
            f"functional must be one of {', '.join(repr(f) for f in FUNCTIONALS)}; "
            f"got {functional!r}"
        )
    if level is not None:
        if isinstance(level, (bool, np.bool_)) or not isinstance(
            level, (int, float, np.integer, np.floating)
        ):
            raise CalibrationInputError(
                f"level must be a number in (0, 1); got {level!r} (a {type(level).__name__})"
            )
        level = float(level)
    if functional == "mean":
        if level is not None:
            raise CalibrationInputError(
                f"level = {level!r} is not used by functional='mean' (the mean has no level); "
                "for the tau-expectile pass functional='expectile'"
            )
        return functional, None
    if functional == "median":
        if level is not None and level != 0.5:
            raise CalibrationInputError(
                f"functional='median' is the 0.5-quantile; got level = {level!r} "
                "(pass functional='quantile' for another level)"
            )
        return functional, 0.5
    if level is None:
        raise CalibrationInputError(
            f"functional={functional!r} needs its level in (0, 1), e.g. level=0.9"
        )
    if not (0.0 < level < 1.0):
        raise CalibrationInputError(
            f"level must lie strictly between 0 and 1 for functional={functional!r}; got {level!r}"
        )
    return functional, level


@fill_doc
def check_point_forecast(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
) -> PointForecasts:
    """Validate point forecasts of a functional and their targets.

    The input step of the point-forecast diagnostics (Gneiting 2011; Gneiting
    & Resin 2023): forecasts and targets as float64 arrays of one value per
    row, the functional named with its level.

    Parameters
    ----------
    forecasts : array-like or torch.Tensor of shape (n,), PredictiveDistribution or PointForecasts
        Forecasts of the functional, in target units. A
        :class:`~calipers.regression.PredictiveDistribution` gives its mean
        (``functional="mean"``) or its quantile at the level (``"median"``,
        ``"quantile"``) as the point forecast. A :class:`PointForecasts` is
        returned as it is (every other argument must then be left out).
    {targets}
        NumPy, lists or PyTorch tensors. Required.
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
        The functional the forecasts state.
    level : float, optional
        Its level in (0, 1): the quantile level ``alpha`` or the expectile
        level ``tau``; required for ``"quantile"`` and ``"expectile"``, None
        (or 0.5) for ``"median"``, None for ``"mean"``.
    sample_weight : array-like of shape (n,), optional
        Non-negative finite row weights with a positive total, checked by
        :func:`calipers.validation.check_sample_weight` and kept. Default None
        (every row weighs 1).

    Returns
    -------
    PointForecasts

    Raises
    ------
    CalibrationInputError
        On an unknown functional, a level missing or outside (0, 1), arrays
        that are not 1-D, lengths that differ, no rows, a value that is not
        finite or a bad weight; the message names the argument and the row.

    Examples
    --------
    >>> from calipers.regression import check_point_forecast
    >>> P = check_point_forecast([0.5, 1.5], [1.0, 1.0], functional="quantile", level=0.9)
    >>> P.forecasts.dtype, P.level
    (dtype('float64'), 0.9)
    >>> from calipers.regression import Gaussian
    >>> G = Gaussian([0.0, 1.0], std=[1.0, 1.0])
    >>> check_point_forecast(G, [0.0, 0.0], functional="quantile", level=0.5).forecasts.tolist()
    [0.0, 1.0]
    >>> check_point_forecast([0.5], [1.0], functional="quantile")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: functional='quantile' needs its level in (0, 1), e.g. level=0.9
    """
    if isinstance(forecasts, PointForecasts):
        if targets is not None or sample_weight is not None or level is not None:
            raise CalibrationInputError(
                "forecasts is already a PointForecasts; pass targets, level and "
                "sample_weight as None"
            )
        if functional not in ("mean", forecasts.functional):
            raise CalibrationInputError(
                f"forecasts is a PointForecasts of functional={forecasts.functional!r}; "
                f"got functional={functional!r}"
            )
        return forecasts
    func, lev = check_functional(functional, level)
    if targets is None:
        raise CalibrationInputError("targets is required (the observed values, one per row)")
    if isinstance(forecasts, PredictiveDistribution):
        forecasts = _functional_of(forecasts, func, lev)
    z = _as_1d_float(forecasts, "forecasts")
    y = _as_1d_float(targets, "targets")
    if z.shape[0] != y.shape[0]:
        raise CalibrationInputError(
            f"forecasts has {z.shape[0]} rows but targets has {y.shape[0]}; they must have "
            "the same length"
        )
    if z.shape[0] == 0:
        raise CalibrationInputError("forecasts is empty; at least one row is needed")
    w = check_sample_weight(sample_weight, z.shape[0], rows_of="forecasts")
    return PointForecasts(z, y, func, lev, w)


def _functional_of(
    dist: PredictiveDistribution, functional: str, level: float | None
) -> np.ndarray:
    """The named functional of each row of a predictive distribution."""
    if functional == "mean":
        m = dist.mean()
        if m is None:
            raise CalibrationInputError(
                f"forecasts is a {type(dist).__name__} ({dist.kind}), which has no mean; pass "
                "functional='median' or functional='quantile' with a level"
            )
        return m
    if functional == "expectile":
        raise CalibrationInputError(
            "the expectile of a predictive distribution is not computed; pass the expectile "
            "forecasts as an array, or functional='mean', 'median' or 'quantile'"
        )
    return dist.quantile(float(level))  # type: ignore[arg-type]


def _identification(P: PointForecasts) -> np.ndarray:
    z, y = P.forecasts, P.targets
    if P.functional == "mean":
        return z - y
    above = (z >= y).astype(np.float64)
    level = float(P.level)  # type: ignore[arg-type]
    if P.functional == "expectile":
        return 2.0 * np.abs(above - level) * (z - y)
    return above - level


@fill_doc
def identification_function(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
) -> np.ndarray:
    """The canonical identification function of each row (a generalised residual).

    ``V(z, y)`` vanishes in expectation exactly when ``z`` is the named
    functional of the distribution of ``Y`` (Gneiting 2011, §2.4; Gneiting &
    Resin 2023, §2): ``z - y`` for the mean, ``1{z >= y} - alpha`` for the
    ``alpha``-quantile (``alpha = 1/2`` for the median) and ``2 * abs(1{z >=
    y} - tau) * (z - y)`` for the ``tau``-expectile. Positive values mean
    the forecast is too high. Same sign convention and tie rule (``z >= y``)
    as model-diagnostics' ``identification_function``.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
        The functional the forecasts state.
    level : float, optional
        The quantile or expectile level in (0, 1); see :func:`check_point_forecast`.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 values of ``V``: target units for the mean and the
        expectiles, unitless (in ``[-alpha, 1 - alpha]``) for quantiles.

    Examples
    --------
    >>> from calipers.regression import identification_function
    >>> identification_function([0.0, 1.0, 2.0], [1.0, 1.0, 1.0],
    ...                         functional="quantile", level=0.9).round(2).tolist()
    [-0.9, 0.1, 0.1]
    >>> identification_function([0.0, 2.0], [1.0, 1.0], functional="expectile",
    ...                         level=0.9).round(2).tolist()
    [-1.8, 0.2]
    """
    return _identification(
        check_point_forecast(forecasts, targets, functional=functional, level=level)
    )


@dataclass(frozen=True)
class GeneralizedBias:
    """The mean identification function of point forecasts, with its t interval.

    Returned by :func:`bias`.

    Attributes
    ----------
    bias : float
        The (weighted) mean of ``V(z_i, y_i)``; positive when the forecasts are
        too high. Units of :func:`identification_function`.
    stderr : float
        Its standard error, ``sqrt(s2 / (n - 1))`` with ``s2`` the (weighted)
        mean squared deviation of ``V`` from the bias (``s2`` when n = 1).
    count : int
        Number of rows ``n`` (rows of weight 0 included).
    weight : float
        Total weight (``n`` without weights).
    t_statistic : float
        ``bias / stderr`` (NaN when ``stderr`` is 0).
    p_value : float
        Two-sided p-value of the t test of ``bias = 0`` with ``n - 1`` degrees
        of freedom; 0 when ``stderr`` is 0 and n > 1, NaN when n = 1.
    ci_low, ci_high : float
        The ``confidence_level`` t interval ``bias -+ t_(n-1) * stderr``
        (NaN when n = 1).
    confidence_level : float
    functional : str
    level : float or None
    """

    bias: float
    stderr: float
    count: int
    weight: float
    t_statistic: float
    p_value: float
    ci_low: float
    ci_high: float
    confidence_level: float
    functional: str
    level: float | None


def _check_confidence(confidence_level: Any) -> float:
    if isinstance(confidence_level, (bool, np.bool_)) or not isinstance(
        confidence_level, (int, float, np.integer, np.floating)
    ):
        raise CalibrationInputError(
            f"confidence_level must be a number in (0, 1); got {confidence_level!r}"
        )
    c = float(confidence_level)
    if not 0.0 < c < 1.0:
        raise CalibrationInputError(f"confidence_level must lie in (0, 1); got {c!r}")
    return c


def _t_summary(
    mean: np.ndarray, stderr: np.ndarray, count: np.ndarray, confidence_level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """t statistics, two-sided p-values and t intervals, elementwise."""
    from scipy import special, stats

    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(stderr > 0, mean / np.where(stderr > 0, stderr, 1.0), np.nan)
    df = np.maximum(count - 1, 1).astype(np.float64)
    p = np.full(mean.shape, np.nan)
    pos = stderr > 0
    p[pos] = 2.0 * special.stdtr(df[pos], -np.abs(t[pos]))
    p[(count > 1) & (stderr == 0)] = 0.0
    q = stats.t.ppf(0.5 + confidence_level / 2.0, df)
    half = q * stderr
    lo = np.where(count > 1, mean - half, np.nan)
    hi = np.where(count > 1, mean + half, np.nan)
    return t, p, lo, hi


@fill_doc
def bias(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
    confidence_level: float = 0.95,
) -> GeneralizedBias:
    """Generalised bias of point forecasts: the mean identification function, with a t test.

    The (weighted) mean ``V_bar = sum_i w_i V(z_i, y_i) / sum_i w_i`` of
    :func:`identification_function` estimates ``E[V(Z, Y)]``, which is 0 for
    forecasts that are unconditionally calibrated for the functional
    (Gneiting & Resin 2023, §2; Fissler, Lorentzen & Mayer 2022, §4). For the
    mean it is the average forecast minus the average target. Its standard
    error is ``sqrt(s2 / (n - 1))`` with ``s2 = sum_i w_i (V_i - V_bar)**2 /
    sum_i w_i`` (Bessel's correction on the row count; with weights this
    treats the variance of ``V_i`` as inversely proportional to ``w_i``, so
    for frequency weights it is conservative), the p-value that of the
    two-sided t test with ``n - 1`` degrees of freedom: the numbers of
    model-diagnostics' ``compute_bias``.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights with a positive total. The bias is their
        weighted mean; the standard error divides by the row count minus 1,
        as model-diagnostics does (the variance of a row taken as inversely
        proportional to its weight), so there a weight of 2 is not the row
        counted twice. Default None: every row weighs 1.
    confidence_level : float, default 0.95
        Level of the t interval.

    Returns
    -------
    GeneralizedBias

    Examples
    --------
    >>> from calipers.regression import bias
    >>> b = bias([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0])
    >>> b.bias, round(b.stderr, 6), round(b.p_value, 6)
    (0.25, 0.478714, 0.637618)
    >>> q = bias([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 5.0, 5.0], functional="quantile", level=0.5)
    >>> q.bias, q.count
    (0.0, 4)
    """
    c = _check_confidence(confidence_level)
    P = check_point_forecast(
        forecasts, targets, functional=functional, level=level, sample_weight=sample_weight
    )
    v = _identification(P)
    n = P.n_samples
    w = P.sample_weight
    if w is None:  # (no BLAS dot: it is slow on busy cores and gains nothing here)
        total = float(n)
        mean = float(np.mean(v))
        d = v - mean
        s2 = float(np.mean(d * d))
    else:
        total = float(np.sum(w))
        mean = float(np.sum(w * v) / total)
        d = v - mean
        s2 = float(np.sum(w * (d * d)) / total)
    se = math.sqrt(s2 / max(1, n - 1))
    t, p, lo, hi = _t_summary(np.array([mean]), np.array([se]), np.array([n]), c)
    return GeneralizedBias(
        mean,
        se,
        n,
        total,
        float(t[0]),
        float(p[0]),
        float(lo[0]),
        float(hi[0]),
        c,
        P.functional,
        P.level,
    )


@dataclass(frozen=True)
class BiasByGroup:
    """Generalised bias within each group or feature bin, with t intervals.

    Returned by :func:`bias_by_group`; one entry per non-empty group, in the
    order of the group labels (of the bins along the feature).

    Attributes
    ----------
    groups : numpy.ndarray
        ``(g,)`` the group labels (with ``groups=``) or the bin numbers 0, 1,
        ... (with ``feature=``; empty bins are left out).
    edges : numpy.ndarray or None
        ``(g, 2)`` the bin ``(lower, upper]`` edges along the feature (the
        first bin starts at the smallest value, the last ends at the
        largest), or None with ``groups=``.
    feature_mean : numpy.ndarray or None
        ``(g,)`` the plain mean of the feature within each bin, or None.
    bias, stderr, t_statistic, p_value, ci_low, ci_high : numpy.ndarray
        ``(g,)`` as in :class:`GeneralizedBias`, within each group (NaN for
        a group whose rows all weigh 0).
    count : numpy.ndarray
        ``(g,)`` rows per group.
    weight : numpy.ndarray
        ``(g,)`` total weight per group.
    overall : GeneralizedBias
        The bias over all rows.
    confidence_level : float
    functional : str
    level : float or None
    """

    groups: np.ndarray
    edges: np.ndarray | None
    feature_mean: np.ndarray | None
    bias: np.ndarray
    stderr: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    t_statistic: np.ndarray
    p_value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    overall: GeneralizedBias
    confidence_level: float
    functional: str
    level: float | None

    @property
    def worst(self) -> int:
        """Index of the group with the largest absolute bias."""
        return int(np.argmax(np.abs(self.bias)))


def _group_labels(groups: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, codes)``: the sorted distinct group labels and each row's index into them."""
    if hasattr(groups, "detach"):
        groups = groups.detach().cpu().numpy()
    try:
        g = np.asarray(groups)
    except (ValueError, TypeError) as exc:
        raise CalibrationInputError(f"groups could not be read as an array: {exc}") from None
    if g.ndim != 1:
        raise CalibrationInputError(f"groups must be 1-D (one label per row); got shape {g.shape}")
    if g.shape[0] != n:
        raise CalibrationInputError(
            f"groups has {g.shape[0]} rows but forecasts has {n}; they must have the same length"
        )
    if g.dtype.kind == "f":
        bad = np.isnan(g)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(f"groups must not hold NaN; row {i} is nan")
    try:
        labels, codes = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise CalibrationInputError(
            f"groups must hold labels of one sortable kind (numbers or strings): {exc}"
        ) from None
    return labels, codes.reshape(-1)


def _bin_edges(x: np.ndarray, n_bins: int, bin_method: str) -> np.ndarray:
    """The inner bin edges of a numeric feature (a row falls in ``(e[i-1], e[i]]``)."""
    if bin_method == "quantile":
        q = np.quantile(x, np.arange(1, n_bins) / n_bins, method="inverted_cdf")
        return np.unique(q)
    lo, hi = float(np.min(x)), float(np.max(x))
    if bin_method == "uniform":
        return lo + (hi - lo) * np.arange(1, n_bins) / n_bins
    return np.histogram_bin_edges(x, bins=bin_method)[1:-1]


@fill_doc
def bias_by_group(
    forecasts: Any,
    targets: Any = None,
    *,
    groups: Any = None,
    feature: Any = None,
    n_bins: int = 10,
    bin_method: str = "quantile",
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
    confidence_level: float = 0.95,
) -> BiasByGroup:
    """Generalised bias of point forecasts within groups or along a feature.

    Forecasts calibrated conditionally on a feature ``X`` have ``E[V(Z, Y) |
    X] = 0`` (Gneiting & Resin 2023, §2); the mean identification function
    within each group of rows (or bin of a numeric feature) estimates it, with
    the standard error, t test and t interval of :func:`bias` computed within
    the group (Fissler, Lorentzen & Mayer 2022, §4). A numeric ``feature`` is
    cut into at most ``n_bins`` bins ``(e[i-1], e[i]]``: with
    ``bin_method="quantile"`` at its ``1/n_bins, ..., (n_bins - 1)/n_bins``
    quantiles (inverted-CDF quantiles, repeated edges merged), with
    ``"uniform"`` into equal widths, or with a NumPy ``histogram_bin_edges``
    rule (``"sturges"``, ``"fd"``, ...; ``n_bins`` is then not used). These
    are the bins and numbers of model-diagnostics' ``compute_bias`` with the
    same ``bin_method``.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PointForecasts
        Point forecasts of the functional (target units).
    {targets}
    groups : array-like of shape (n,), optional
        A group label per row (numbers or strings); one result per distinct
        label. Give exactly one of ``groups`` and ``feature``.
    feature : array-like of shape (n,), optional
        A numeric feature (finite), binned as described.
    n_bins : int, default 10
        Number of bins of ``feature`` (at least 2; fewer when quantiles coincide).
    bin_method : str, default "quantile"
        One of :data:`BIN_METHODS`.
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights with a positive total. The bias is their
        weighted mean; the standard error divides by the row count minus 1,
        as model-diagnostics does (the variance of a row taken as inversely
        proportional to its weight), so there a weight of 2 is not the row
        counted twice. Default None: every row weighs 1.
    confidence_level : float, default 0.95
        Level of the t intervals.

    Returns
    -------
    BiasByGroup

    Examples
    --------
    >>> from calipers.regression import bias_by_group
    >>> r = bias_by_group([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0], groups=["a", "a", "b", "b"])
    >>> r.groups.tolist(), r.bias.tolist(), r.stderr.tolist(), r.p_value.round(6).tolist()
    (['a', 'b'], [0.0, 0.5], [1.0, 0.5], [1.0, 0.5])
    >>> r = bias_by_group([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 2.0, 2.0], feature=[1, 2, 3, 4], n_bins=2)
    >>> r.edges.tolist(), r.bias.tolist()
    ([[1.0, 2.0], [2.0, 4.0]], [0.0, 1.5])
    """
    c = _check_confidence(confidence_level)
    if (groups is None) == (feature is None):
        raise CalibrationInputError(
            "give exactly one of groups= (a label per row) and feature= (a numeric feature "
            "to bin); got " + ("both" if groups is not None else "neither")
        )
    P = check_point_forecast(
        forecasts, targets, functional=functional, level=level, sample_weight=sample_weight
    )
    n = P.n_samples
    v = _identification(P)
    w = P.weights()
    edges: np.ndarray | None = None
    feature_mean: np.ndarray | None = None
    if groups is not None:
        labels, codes = _group_labels(groups, n)
    else:
        if not isinstance(bin_method, str) or bin_method not in BIN_METHODS:
            raise CalibrationInputError(
                f"bin_method must be one of {', '.join(repr(b) for b in BIN_METHODS)}; "
                f"got {bin_method!r}"
            )
        nb = check_size(n_bins, "n_bins", "MAX_BINS", minimum=2)
        x = _as_1d_float(feature, "feature")
        if x.shape[0] != n:
            raise CalibrationInputError(
                f"feature has {x.shape[0]} rows but forecasts has {n}; they must have the "
                "same length"
            )
        inner = _bin_edges(x, nb, bin_method)
        raw = np.searchsorted(inner, x, side="left")  # bin i holds (inner[i-1], inner[i]]
        filled = np.bincount(raw, minlength=inner.shape[0] + 1)
        present = np.flatnonzero(filled)
        slot = np.zeros(filled.shape[0], dtype=np.intp)
        slot[present] = np.arange(present.shape[0])
        codes = slot[raw]
        labels = present
        full = np.concatenate([[np.min(x)], inner, [np.max(x)]])
        edges = np.stack([full[present], full[present + 1]], axis=1)
        cnt = np.bincount(codes, minlength=present.shape[0])
        feature_mean = np.bincount(codes, weights=x, minlength=present.shape[0]) / cnt
    g = labels.shape[0]
    count = np.bincount(codes, minlength=g)
    wsum = np.bincount(codes, weights=w, minlength=g)
    with np.errstate(divide="ignore", invalid="ignore"):  # a group of weight 0: NaN
        mean = np.bincount(codes, weights=w * v, minlength=g) / wsum
        d = v - mean[codes]
        s2 = np.bincount(codes, weights=w * d * d, minlength=g) / wsum
    se = np.sqrt(np.where(count > 1, s2 / np.maximum(count - 1, 1), s2))
    t, p, lo, hi = _t_summary(mean, se, count, c)
    overall = bias(P, confidence_level=c)
    return BiasByGroup(
        labels,
        edges,
        feature_mean,
        mean,
        se,
        count,
        wsum,
        t,
        p,
        lo,
        hi,
        overall,
        c,
        P.functional,
        P.level,
    )
