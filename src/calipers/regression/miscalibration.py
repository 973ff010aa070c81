"""Average calibration over a grid of levels: uncertainty-toolbox's three numbers.

Chung et al. 2021 (uncertainty-toolbox, ``metrics_calibration``) summarise
how far a regression model's predictive distributions are from calibration by
comparing, on ``n_levels`` equally spaced expected proportions ``p`` in
[0, 1] (both ends included), the expected proportion with the observed
proportion of targets

* inside the central ``p``-interval (``proportion="interval"``), or
* on the side of a predicted quantile (``proportion="quantile"``),

and report the mean absolute difference (``mean_absolute_calibration_error``,
an ECE over levels), its root mean square
(``root_mean_squared_calibration_error``) and the area between the observed
curve and the diagonal (``miscalibration_area``, trapezoids with the crossing
points of the two curves taken into account). For Gaussian predictions the
numbers here are theirs (their definitions, including which comparison each
function uses; see the functions). Any other kind reads the (randomised) PIT
``u`` (Czado, Gneiting & Held 2009): a target is inside the central
``p``-interval when ``(1 - p) / 2 <= u <= (1 + p) / 2``.

The proportions are computed from one sort of the rows (binary searches per
level): O(n log n) time and O(n) memory for any number of levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import PARAMETERS, substitute
from ..validation import CalibrationInputError, check_integer
from .distributions import ProbabilisticPredictions, check_predictive
from .inputs import spread_by_name
from .pit import DEFAULT_PIT_SEED, _check_seed, _gaussian, randomized_pit

__all__ = [
    "CalibrationProportions",
    "calibration_proportions",
    "miscalibration_area",
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
]

#: uncertainty-toolbox's default number of expected proportions.
DEFAULT_N_LEVELS = 100


@dataclass(frozen=True)
class CalibrationProportions:
    """Expected and observed proportions on a grid of levels.

    Returned by :func:`calibration_proportions` (Chung et al. 2021,
    uncertainty-toolbox's ``get_proportion_lists``).

    Attributes
    ----------
    expected : numpy.ndarray
        ``(n_levels,)`` expected proportions ``numpy.linspace(0, 1, n_levels)``.
    observed : numpy.ndarray
        ``(n_levels,)`` (weighted) observed proportions.
    proportion : str
        ``"interval"`` or ``"quantile"``.
    mean_absolute_error : float
        ``mean |expected - observed|``.
    root_mean_squared_error : float
        ``sqrt(mean (expected - observed)**2)``.
    miscalibration_area : float
        The area between the curve and the diagonal.

    Examples
    --------
    >>> from calipers.regression import calibration_proportions
    >>> c = calibration_proportions([0.0, 0.0], std=[1.0, 1.0], targets=[0.1, 3.0], n_levels=3)
    >>> c.expected.tolist(), c.observed.tolist()
    ([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])
    """

    expected: np.ndarray
    observed: np.ndarray
    proportion: str
    mean_absolute_error: float
    root_mean_squared_error: float
    miscalibration_area: float


def _check_proportion(proportion: Any) -> str:
    if proportion not in ("interval", "quantile"):
        raise CalibrationInputError(
            f'proportion must be "interval" or "quantile"; got {proportion!r}'
        )
    return str(proportion)


class _Sorted:
    """Values sorted once, with the total weight at or below / strictly below any threshold."""

    def __init__(self, values: np.ndarray, weight: np.ndarray | None) -> None:
        if weight is None:
            self.values = np.sort(values)
            self.cum: np.ndarray | None = None
            self.total = float(values.shape[0])
        else:
            order = np.argsort(values)
            self.values = values[order]
            self.cum = np.concatenate([[0.0], np.cumsum(weight[order])])
            self.total = float(np.sum(weight))

    def _mass(self, k: np.ndarray) -> np.ndarray:
        if self.cum is None:
            return k.astype(np.float64)
        return self.cum[k]

    def at_or_below(self, t: np.ndarray) -> np.ndarray:
        return self._mass(np.searchsorted(self.values, t, side="right"))

    def below(self, t: np.ndarray) -> np.ndarray:
        return self._mass(np.searchsorted(self.values, t, side="left"))


def _values(P: ProbabilisticPredictions, seed: Any) -> tuple[bool, np.ndarray]:
    """What the proportions count: Gaussian residuals ``(mu - y) / sigma``, or the PIT."""
    G = _gaussian(P)
    if G is not None:
        # uncertainty-toolbox's residuals: prediction minus target, over the std
        return True, (G.mean - G.targets) / G.std
    return False, randomized_pit(P, seed)


def _observed_from(
    gaussian: bool,
    v: np.ndarray,
    w: np.ndarray | None,
    expected: np.ndarray,
    proportion: str,
    form: str,
) -> np.ndarray:
    """Observed proportions; ``form`` "area" or "lists" picks uncertainty-toolbox's comparison."""
    from scipy.special import ndtri

    if gaussian:
        if proportion == "interval":
            if form == "area":
                # miscalibration_area: |r| <= Phi^-1(0.5 + p / 2)
                S = _Sorted(np.abs(v), w)
                return S.at_or_below(ndtri(0.5 + expected / 2.0)) / S.total
            # get_proportion_lists: Phi^-1(0.5 - p / 2) <= r <= Phi^-1(0.5 + p / 2)
            S = _Sorted(v, w)
            upper = S.at_or_below(ndtri(0.5 + expected / 2.0))
            lower = S.below(ndtri(0.5 - expected / 2.0))
            return np.maximum(upper - lower, 0.0) / S.total
        # quantile: r <= Phi^-1(p), the target at or above the (1 - p)-quantile
        S = _Sorted(v, w)
        return S.at_or_below(ndtri(expected)) / S.total
    if proportion == "interval":
        S = _Sorted(v, w)
        upper = S.at_or_below(0.5 + expected / 2.0)
        lower = S.below(0.5 - expected / 2.0)
        return np.maximum(upper - lower, 0.0) / S.total
    # the same orientation as the Gaussian rows: 1 - F(y) <= p
    S = _Sorted(1.0 - v, w)
    return S.at_or_below(expected) / S.total


def _observed(
    P: ProbabilisticPredictions, expected: np.ndarray, proportion: str, form: str, seed: Any
) -> np.ndarray:
    gaussian, v = _values(P, seed)
    return _observed_from(gaussian, v, P.sample_weight, expected, proportion, form)


def _area(expected: np.ndarray, observed: np.ndarray) -> float:
    """Area between the piecewise-linear curves (p, observed) and (p, p).

    Each interval between two levels is a trapezoid, or two triangles where
    the curves cross (the crossing found by the line-line intersection
    formula), as in uncertainty-toolbox's ``trapezoid_area``.
    """
    xl = expected[:-1]
    xr = expected[1:]
    al, ar = xl, xr
    bl, br = observed[:-1], observed[1:]
    dl = bl - al
    dr = br - ar
    cross = (dl * dr < 0) & ~((dl == 0) & (dr == 0))
    trapezoid = np.abs((xr - xl) * 0.5 * ((bl - al) + (br - ar)))
    with np.errstate(divide="ignore", invalid="ignore"):
        # intersection of the line (xl, bl)-(xr, br) with (xl, al)-(xr, ar)
        D = (xl - xr) * (al - ar) - (bl - br) * (xl - xr)
        x = ((xl * br - bl * xr) * (xl - xr) - (xl - xr) * (xl * ar - al * xr)) / D
        hourglass = np.abs(0.5 * (bl - al) * (x - xl)) + np.abs(0.5 * (br - ar) * (xr - x))
    return float(np.sum(np.where(cross, np.nan_to_num(hourglass), trapezoid)))


def _prepare(
    mean: Any,
    variance: Any,
    std: Any,
    targets: Any,
    sample_weight: Any,
    n_levels: Any,
    proportion: Any,
) -> tuple[ProbabilisticPredictions, np.ndarray, str]:
    P = check_predictive(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    B = check_integer(n_levels, "n_levels", minimum=2, maximum=1 << 20)
    return P, np.linspace(0.0, 1.0, B), _check_proportion(proportion)


_PARAMS = """
    Parameters
    ----------
    {mean}
        Or a predictive distribution of any kind
        (:class:`~calipers.regression.PredictiveDistribution`; then without
        ``variance`` and ``std``).
    {variance}
    {std}
    {targets}
    {sample_weight}
    n_levels : int, default 100
        Number of expected proportions ``numpy.linspace(0, 1, n_levels)``
        (uncertainty-toolbox's ``num_bins``, same default), at least 2.
    proportion : {"interval", "quantile"}, default "interval"
        (uncertainty-toolbox's ``prop_type``)
        ``"interval"``: the proportion of targets inside the central
        ``p``-interval. ``"quantile"``: uncertainty-toolbox's one-sided
        proportion, ``(mu - y) / sigma <= Phi^-1(p)`` for a Gaussian (its
        residuals are prediction minus target), that is the proportion of
        targets at or above the predicted ``(1 - p)``-quantile; other kinds
        count ``1 - u <= p`` with ``u`` the PIT.
    seed : int, numpy.random.Generator or None, default 0
        Seed of the randomised PIT of discrete kinds (see
        :func:`calipers.regression.pit_values`).
"""


@spread_by_name
def calibration_proportions(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_levels: int = DEFAULT_N_LEVELS,
    proportion: str = "interval",
    seed: Any = DEFAULT_PIT_SEED,
) -> CalibrationProportions:
    """Expected against observed proportions, and the three summaries of Chung et al. 2021.

    The curve of uncertainty-toolbox's ``get_proportion_lists`` (for
    intervals: ``Phi^-1(0.5 - p / 2) <= r <= Phi^-1(0.5 + p / 2)`` with ``r
    = (mu - y) / sigma``) with its mean absolute and root mean squared
    difference and the area between it and the diagonal.
    {params}
    Returns
    -------
    CalibrationProportions

    Examples
    --------
    >>> from calipers.regression import calibration_proportions, Parametric
    >>> L = Parametric("laplace", loc=[0.0, 0.0], scale=[1.0, 1.0])
    >>> c = calibration_proportions(L, targets=[0.1, 9.0], n_levels=3)
    >>> c.observed.tolist(), round(c.mean_absolute_error, 4)
    ([0.0, 0.5, 1.0], 0.0)
    """
    P, expected, kind = _prepare(mean, variance, std, targets, sample_weight, n_levels, proportion)
    observed = _observed(P, expected, kind, "lists", _check_seed(seed))
    diff = expected - observed
    return CalibrationProportions(
        expected=expected,
        observed=observed,
        proportion=kind,
        mean_absolute_error=float(np.mean(np.abs(diff))),
        root_mean_squared_error=float(np.sqrt(np.mean(np.square(diff)))),
        miscalibration_area=_area(expected, observed),
    )


@spread_by_name
def miscalibration_area(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_levels: int = DEFAULT_N_LEVELS,
    proportion: str = "interval",
    seed: Any = DEFAULT_PIT_SEED,
) -> float:
    """Area between the observed-proportion curve and the diagonal (Chung et al. 2021).

    uncertainty-toolbox's ``miscalibration_area``: the observed proportion
    of each expected proportion ``p`` (for Gaussian intervals ``|r| <=
    Phi^-1(0.5 + p / 2)``, ``r = (mu - y) / sigma``), joined by straight
    lines, and the area between that curve and ``p``, in [0, 0.5]. It tends
    to the mean absolute calibration error as ``n_levels`` grows.
    {params}
    Returns
    -------
    float
        The area between the curve and the diagonal of the unit square, in [0, 0.5].

    Examples
    --------
    >>> from calipers.regression import miscalibration_area
    >>> round(miscalibration_area([0.0, 0.0], std=[1.0, 1.0], targets=[5.0, -5.0]), 4)
    0.4949
    """
    P, expected, kind = _prepare(mean, variance, std, targets, sample_weight, n_levels, proportion)
    return _area(expected, _observed(P, expected, kind, "area", _check_seed(seed)))


@spread_by_name
def mean_absolute_calibration_error(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_levels: int = DEFAULT_N_LEVELS,
    proportion: str = "interval",
    seed: Any = DEFAULT_PIT_SEED,
) -> float:
    """Mean absolute difference of expected and observed proportions (Chung et al. 2021).

    uncertainty-toolbox's ``mean_absolute_calibration_error`` (an ECE over
    ``n_levels`` levels, both ends included): ``mean_p |p - obs(p)|``, in
    probability units.
    {params}
    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> from calipers.regression import mean_absolute_calibration_error
    >>> mean_absolute_calibration_error([0.0], std=[1.0], targets=[0.0], n_levels=3)
    0.5
    """
    return calibration_proportions(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        n_levels=n_levels,
        proportion=proportion,
        seed=seed,
    ).mean_absolute_error


@spread_by_name
def root_mean_squared_calibration_error(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_levels: int = DEFAULT_N_LEVELS,
    proportion: str = "interval",
    seed: Any = DEFAULT_PIT_SEED,
) -> float:
    """Root mean squared difference of expected and observed proportions (Chung et al. 2021).

    uncertainty-toolbox's ``root_mean_squared_calibration_error``:
    ``sqrt(mean_p (p - obs(p))**2)``, in probability units.
    {params}
    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> from calipers.regression import root_mean_squared_calibration_error
    >>> round(root_mean_squared_calibration_error([0.0], std=[1.0], targets=[0.0], n_levels=3), 6)
    0.645497
    """
    return calibration_proportions(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        n_levels=n_levels,
        proportion=proportion,
        seed=seed,
    ).root_mean_squared_error


for _f in (
    calibration_proportions,
    miscalibration_area,
    mean_absolute_calibration_error,
    root_mean_squared_calibration_error,
):
    assert _f.__doc__ is not None
    # the Parameters section, a blank line before and after it
    _f.__doc__ = _f.__doc__.replace(
        "    {params}\n", "\n" + substitute(_PARAMS[1:], PARAMETERS) + "\n"
    )
del _f
