"""Consistent scoring functions of point forecasts, per row and as means.

A point forecast ``z`` of a functional of the predictive distribution (its
mean, a quantile, an expectile) is scored against the observation ``y`` with
a scoring function that is *strictly consistent* for that functional: its
expectation is smallest at the true functional (Gneiting 2011). Smaller is
better; every score here is 0 when ``z = y``.

* quantile at level ``alpha``: the pinball (check) loss
  ``rho_alpha(y - z) = (1{y < z} - alpha) (z - y)`` (Koenker & Bassett 1978;
  Gneiting 2011, Theorem 9), scikit-learn's ``mean_pinball_loss``;
* mean: the Bregman scores ``phi(y) - phi(z) - phi'(z) (y - z)`` of a convex
  ``phi`` (Savage 1971; Gneiting 2011, Theorem 7), among them the homogeneous
  family of degree ``h`` (Patton 2020), normalised as model-diagnostics'
  ``HomogeneousExpectileScore``: ``h = 2`` the squared error, ``h = 1`` the
  Poisson deviance, ``h = 0`` the Gamma deviance (the Tweedie deviance of
  power ``p = 2 - h``);
* expectile at level ``tau``: the asymmetric Bregman score
  ``2 |1{z >= y} - tau|`` times the Bregman score (Newey & Powell 1987;
  Gneiting 2011, Theorem 10), the squared error at ``tau = 0.5``.

The argument order is always ``(forecasts, targets)``, the order of the rest
of :mod:`calipers.regression` (prediction first), the reverse of
scikit-learn's ``(y_true, y_pred)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from ._score_arrays import as_float_array, as_level, finite_rows, same_rows, weighted_mean

__all__ = [
    "pinball_loss",
    "pinball_loss_per_row",
    "squared_error",
    "squared_error_per_row",
    "bregman_score",
    "bregman_score_per_row",
    "expectile_score",
    "expectile_score_per_row",
]

#: A convex function and its derivative, both acting on float64 arrays.
PhiPair = tuple[Callable[[np.ndarray], Any], Callable[[np.ndarray], Any]]


def _pair(forecasts: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    z = as_float_array(forecasts, "forecasts", 1)
    y = as_float_array(targets, "targets", 1)
    same_rows(y, "targets", z.shape[0], "forecasts")
    return z, y


@fill_doc
def pinball_loss_per_row(
    forecasts: Any, targets: Any, *, level: float = 0.5, degree: float = 1.0
) -> np.ndarray:
    """Pinball (check) loss of each quantile forecast, in target units.

    ``rho_alpha(y - z) = (1{y < z} - alpha) (z - y)``, i.e. ``alpha (y - z)``
    when the target is at or above the forecast and ``(1 - alpha) (z - y)``
    below it: strictly consistent for the ``alpha``-quantile (Koenker &
    Bassett 1978; Gneiting 2011, Theorem 9). At ``level=0.5`` it is half the
    absolute error.

    Another ``degree`` ``h`` gives the homogeneous member of the generalized
    piecewise linear scores, ``(1{y < z} - alpha) (g(z) - g(y))`` with
    ``g(x) = x**h / h`` (``log x`` for ``h = 0``; Gneiting 2011, Theorem 9),
    also consistent for the quantile, normalised as model-diagnostics'
    ``HomogeneousQuantileScore``: for ``h = 1`` and odd positive integers any
    real values, otherwise ``y > 0`` and ``z > 0``. Degree 0 scores the
    relative error of a positive quantity.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted ``level``-quantiles, in target units; finite.
    {targets}
    level : float, default 0.5
        The quantile level ``alpha``, strictly inside (0, 1) (scikit-learn's
        ``alpha``, model-diagnostics' ``level``; both default to 0.5).
    degree : float, default 1.0
        Degree of homogeneity ``h``; 1 is the pinball loss.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 losses, all ``>= 0`` (in target units for degree 1).

    Examples
    --------
    A 0.9-quantile forecast of 1 scores 0.9 per unit below the target and 0.1
    per unit above it:

    >>> from calipers.regression import pinball_loss_per_row
    >>> pinball_loss_per_row([1.0, 1.0], [3.0, 0.0], level=0.9).round(12).tolist()
    [1.8, 0.1]
    """
    alpha = as_level(level)
    h = _degree(degree)
    if h is None:
        raise CalibrationInputError(f"degree must be a number; got {degree!r}")
    z, y = _pair(forecasts, targets)
    if h != 1.0:
        return _homogeneous_quantile(z, y, alpha, h)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _pinball(z, y, alpha)
    return finite_rows(out, lambda a, b: _pinball(a, b, alpha), (z, y), headroom=4.0)


def _pinball(z: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    u = y - z
    # tau u - min(u, 0): alpha u above the forecast, (alpha - 1) u below it
    return alpha * u - np.minimum(u, 0.0)


def _homogeneous_quantile(z: np.ndarray, y: np.ndarray, alpha: float, h: float) -> np.ndarray:
    """``(1{y < z} - alpha) (g(z) - g(y))`` with ``g(x) = x**h / h`` (``log x`` at ``h = 0``)."""
    if not (h > 1.0 and h == int(h) and int(h) % 2 == 1):
        for arr, name in ((y, "targets"), (z, "forecasts")):
            bad = ~(arr > 0.0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise CalibrationInputError(
                    f"{name} must be > 0 for the quantile score of degree {h:g}; row {i} is "
                    f"{float(arr[i])!r}"
                )
    g = np.log(z) - np.log(y) if h == 0.0 else (np.power(z, h) - np.power(y, h)) / h
    return ((y < z) - alpha) * g


@fill_doc
def pinball_loss(
    forecasts: Any,
    targets: Any,
    *,
    level: float = 0.5,
    degree: float = 1.0,
    sample_weight: Any = None,
) -> float:
    """Mean pinball loss of quantile forecasts, in target units.

    The (weighted) mean of :func:`pinball_loss_per_row` (Koenker & Bassett
    1978; Gneiting 2011): equal to scikit-learn's
    ``mean_pinball_loss(targets, forecasts, alpha=level, sample_weight=...)``.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted ``level``-quantiles.
    {targets}
    level : float, default 0.5
        The quantile level, strictly inside (0, 1).
    degree : float, default 1.0
        Degree of homogeneity; 1 is the pinball loss (see
        :func:`pinball_loss_per_row` for the others and their domains).
    {sample_weight}

    Returns
    -------
    float
        Mean loss, in target units for degree 1.

    Examples
    --------
    >>> from calipers.regression import pinball_loss
    >>> round(pinball_loss([1.0, 1.0], [3.0, 0.0], level=0.9), 12)
    0.95
    """
    return weighted_mean(
        pinball_loss_per_row(forecasts, targets, level=level, degree=degree),
        sample_weight,
        "forecasts",
    )


@fill_doc
def squared_error_per_row(forecasts: Any, targets: Any) -> np.ndarray:
    """Squared error ``(z - y)**2`` of each mean forecast, in squared target units.

    The Bregman score of ``phi(x) = x**2`` (Gneiting 2011, Theorem 7), the
    homogeneous score of degree 2 (:func:`bregman_score_per_row` with
    ``phi=2``, the same numbers bit for bit).

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted means, in target units.
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 squared errors.

    Examples
    --------
    >>> from calipers.regression import squared_error_per_row
    >>> squared_error_per_row([1.0, 2.0], [3.0, 2.0]).tolist()
    [4.0, 0.0]
    """
    z, y = _pair(forecasts, targets)
    return np.square(z - y)


@fill_doc
def squared_error(forecasts: Any, targets: Any, *, sample_weight: Any = None) -> float:
    """Mean squared error of mean forecasts, in squared target units.

    The (weighted) mean of :func:`squared_error_per_row` (Gneiting 2011):
    scikit-learn's ``mean_squared_error(targets, forecasts, sample_weight=...)``.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted means.
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean squared error.

    Examples
    --------
    >>> from calipers.regression import squared_error
    >>> squared_error([1.0, 2.0], [3.0, 2.0])
    2.0
    """
    return weighted_mean(squared_error_per_row(forecasts, targets), sample_weight, "forecasts")


def _homogeneous(z: np.ndarray, y: np.ndarray, h: float) -> np.ndarray:
    """The homogeneous Bregman score of degree ``h`` (model-diagnostics' normalisation)."""
    if h == 2.0:
        return np.square(z - y)
    if h > 1.0:
        za = np.abs(z)
        return 2.0 * (
            (np.power(np.abs(y), h) - np.power(za, h)) / (h * (h - 1.0))
            - np.sign(z) / (h - 1.0) * np.power(za, h - 1.0) * (y - z)
        )
    strict = h <= 0.0
    bad = ~(y > 0.0) if strict else ~(y >= 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        need = "> 0" if strict else ">= 0"
        raise CalibrationInputError(
            f"targets must be {need} for the Bregman score of degree {h:g}; row {i} is "
            f"{float(y[i])!r}"
        )
    bad = ~(z > 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"forecasts must be > 0 for the Bregman score of degree {h:g}; row {i} is "
            f"{float(z[i])!r}"
        )
    if h == 1.0:  # Poisson deviance
        with np.errstate(divide="ignore", invalid="ignore"):
            ylog = np.where(y > 0.0, y * np.log(y / z), 0.0)
        return 2.0 * (ylog - y + z)
    if h == 0.0:  # Gamma deviance
        r = y / z
        return 2.0 * (r - np.log(r) - 1.0)
    return 2.0 * (
        (np.power(y, h) - np.power(z, h)) / (h * (h - 1.0))
        - np.power(z, h - 1.0) / (h - 1.0) * (y - z)
    )


def _degree(phi: Any) -> float | None:
    if isinstance(phi, (bool, np.bool_)):
        return None
    if isinstance(phi, (int, float, np.integer, np.floating)):
        h = float(phi)
        if not np.isfinite(h):
            raise CalibrationInputError(f"phi (a degree) must be finite; got {phi!r}")
        return h
    return None


@fill_doc
def bregman_score_per_row(
    forecasts: Any, targets: Any, *, phi: float | PhiPair = 2.0
) -> np.ndarray:
    """Bregman score of each mean forecast: ``phi(y) - phi(z) - phi'(z) (y - z)``.

    The Bregman scores of convex functions ``phi`` are the consistent
    scoring functions for the mean (Savage 1971; Gneiting 2011, Theorem 7).
    A number ``phi = h`` picks the homogeneous member of degree ``h``
    (Patton 2020), normalised as model-diagnostics' ``HomogeneousExpectileScore``
    with ``level=0.5`` (the minimum 0 at ``z = y``; ``phi(x) = 2 |x|**h / (h
    (h - 1))`` up to an affine term):

    * ``h = 2``: the squared error ``(y - z)**2``, any real values;
    * ``h = 1``: the Poisson deviance ``2 (y log(y / z) - y + z)``, ``y >= 0``,
      ``z > 0``;
    * ``h = 0``: the Gamma deviance ``2 (y / z - log(y / z) - 1)``, ``y > 0``,
      ``z > 0``;
    * any other ``h``: the Tweedie deviance of power ``2 - h`` (scikit-learn's
      ``mean_tweedie_deviance``); ``h > 1`` accepts all reals, ``0 < h < 1``
      needs ``y >= 0`` and ``z > 0``, ``h < 0`` needs ``y > 0`` and ``z > 0``.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted means, in target units; finite.
    {targets}
    phi : float or (callable, callable), default 2.0
        The degree ``h`` of the homogeneous family, or a pair
        ``(phi, phi_prime)`` of a strictly convex function and its derivative,
        each mapping a float64 array to an array of the same shape; the score
        is then ``phi(y) - phi(z) - phi_prime(z) * (y - z)`` as given.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, all ``>= 0`` up to rounding.

    Raises
    ------
    CalibrationInputError
        On targets or forecasts outside the domain of the degree (the message
        names the row), on a ``phi`` that is neither a number nor a pair of
        callables, or on a non-finite value of a given ``phi``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import bregman_score_per_row
    >>> bregman_score_per_row([1.0, 2.0], [3.0, 2.0]).tolist()
    [4.0, 0.0]
    >>> bregman_score_per_row([1.0], [np.e], phi=1).round(12).tolist()  # 2 (e - e + 1)
    [2.0]
    >>> bregman_score_per_row([1.0], [3.0], phi=(np.square, lambda x: 2 * x)).tolist()
    [4.0]
    """
    z, y = _pair(forecasts, targets)
    h = _degree(phi)
    if h is not None:
        return _homogeneous(z, y, h)
    if not (isinstance(phi, tuple) and len(phi) == 2 and all(callable(f) for f in phi)):
        raise CalibrationInputError(
            "phi must be a degree (a number: 2 squared error, 1 Poisson deviance, 0 Gamma "
            f"deviance) or a pair (phi, phi_prime) of callables; got {phi!r}"
        )
    f, fprime = phi
    with np.errstate(all="ignore"):
        out = np.asarray(f(y), dtype=np.float64) - np.asarray(f(z), dtype=np.float64)
        out = out - np.asarray(fprime(z), dtype=np.float64) * (y - z)
    if out.shape != z.shape:
        raise CalibrationInputError(
            f"phi and phi_prime must return one value per row (shape {z.shape}); got "
            f"shape {out.shape}"
        )
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"the Bregman score of the given phi is not finite at row {i} (forecast "
            f"{float(z[i])!r}, target {float(y[i])!r}): outside the domain of phi?"
        )
    return out


@fill_doc
def bregman_score(
    forecasts: Any,
    targets: Any,
    *,
    phi: float | PhiPair = 2.0,
    sample_weight: Any = None,
) -> float:
    """Mean Bregman score of mean forecasts.

    The (weighted) mean of :func:`bregman_score_per_row` (Gneiting 2011;
    Patton 2020): with ``phi=2`` the mean squared error, ``phi=1`` scikit-learn's
    ``mean_poisson_deviance``, ``phi=0`` its ``mean_gamma_deviance``, and
    ``phi=h`` its ``mean_tweedie_deviance(power=2 - h)``.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted means.
    {targets}
    phi : float or (callable, callable), default 2.0
        The degree of the homogeneous family, or ``(phi, phi_prime)``.
    {sample_weight}

    Returns
    -------
    float
        Mean score.

    Examples
    --------
    >>> from calipers.regression import bregman_score
    >>> round(bregman_score([2.0, 2.0], [1.0, 4.0], phi=0), 6)  # mean Gamma deviance
    0.5
    """
    return weighted_mean(
        bregman_score_per_row(forecasts, targets, phi=phi), sample_weight, "forecasts"
    )


@fill_doc
def expectile_score_per_row(
    forecasts: Any, targets: Any, *, level: float = 0.5, degree: float = 2.0
) -> np.ndarray:
    """Asymmetric Bregman score of each expectile forecast.

    ``2 |1{z >= y} - tau|`` times the homogeneous Bregman score of degree
    ``degree`` (:func:`bregman_score_per_row`): strictly consistent for the
    ``tau``-expectile (Newey & Powell 1987; Gneiting 2011, Theorem 10); with
    the default degree 2 it is the asymmetric squared loss
    ``2 |1{z >= y} - tau| (y - z)**2``, the squared error at ``tau = 0.5``.
    The same numbers as model-diagnostics'
    ``HomogeneousExpectileScore(degree, level)``.

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted ``level``-expectiles, in target units; finite.
    {targets}
    level : float, default 0.5
        The expectile level ``tau``, strictly inside (0, 1); 0.5 is the mean.
    degree : float, default 2.0
        Degree of homogeneity of the Bregman part (see
        :func:`bregman_score_per_row` for the domains).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores.

    Examples
    --------
    A 0.9-expectile forecast of 0: a target of 1 above it costs
    ``2 * 0.9 * 1``, a target of -1 below it ``2 * 0.1 * 1``:

    >>> from calipers.regression import expectile_score_per_row
    >>> expectile_score_per_row([0.0, 0.0], [1.0, -1.0], level=0.9).round(12).tolist()
    [1.8, 0.2]
    """
    tau = as_level(level)
    h = _degree(degree)
    if h is None:
        raise CalibrationInputError(f"degree must be a number; got {degree!r}")
    z, y = _pair(forecasts, targets)
    score = _homogeneous(z, y, h)
    if tau == 0.5:
        return score
    return 2.0 * np.abs((z >= y) - tau) * score


@fill_doc
def expectile_score(
    forecasts: Any,
    targets: Any,
    *,
    level: float = 0.5,
    degree: float = 2.0,
    sample_weight: Any = None,
) -> float:
    """Mean asymmetric Bregman score of expectile forecasts.

    The (weighted) mean of :func:`expectile_score_per_row` (Newey & Powell
    1987; Gneiting 2011).

    Parameters
    ----------
    forecasts : array-like or tensor of shape (n,)
        Predicted ``level``-expectiles.
    {targets}
    level : float, default 0.5
        The expectile level, strictly inside (0, 1).
    degree : float, default 2.0
        Degree of homogeneity of the Bregman part.
    {sample_weight}

    Returns
    -------
    float
        Mean score.

    Examples
    --------
    >>> from calipers.regression import expectile_score
    >>> round(expectile_score([0.0, 0.0], [1.0, -1.0], level=0.9), 12)
    1.0
    """
    return weighted_mean(
        expectile_score_per_row(forecasts, targets, level=level, degree=degree),
        sample_weight,
        "forecasts",
    )
