"""Proper scores of Gaussian predictive distributions (probabilistic regression).

For a prediction N(mu, sigma**2) and an observed target ``y`` (smaller is
better for all three; each is strictly proper for Gaussian predictions):

* the negative log-likelihood (log score), in nats,
  ``0.5 * log(2 * pi * sigma**2) + (y - mu)**2 / (2 * sigma**2)``;
* the Dawid-Sebastiani score ``log(sigma**2) + (y - mu)**2 / sigma**2``, as
  written by Gruber & Buettner 2022 (§2.3) and Gneiting & Raftery 2007:
  twice the NLL minus ``log(2 * pi)``, without the factor 1/2 and without the
  constant; it extends the MSE to variance regression;
* the continuous ranked probability score, in target units, with the closed
  form of Gneiting et al. 2005:
  ``sigma * [z * (2 * Phi(z) - 1) + 2 * phi(z) - 1 / sqrt(pi)]`` with
  ``z = (y - mu) / sigma``.

Each comes as a per-row array (``*_per_row``) and as its (weighted) mean over
rows, the expected score that Gruber & Buettner 2022 (§3, §4) decompose into
calibration and sharpness terms.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from .inputs import GaussianPredictions, check_gaussian, spread_by_name

__all__ = [
    "gaussian_nll",
    "gaussian_nll_per_row",
    "dawid_sebastiani",
    "dawid_sebastiani_per_row",
    "crps_gaussian",
    "crps_gaussian_per_row",
]

_LOG_2PI = math.log(2.0 * math.pi)


def _checked(
    mean: Any, variance: Any, std: Any, targets: Any, sample_weight: Any = None
) -> GaussianPredictions:
    return check_gaussian(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )


_TINY = float(np.finfo(np.float64).tiny)


def _squared_z(G: GaussianPredictions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y - mu)**2 / sigma**2`` of every row, finite wherever the true value is.

    Returns ``(z2, bad, q)``: ``z2 = r * r / v`` (``r = y - mu``, ``v =
    sigma**2``) as before, bit for bit, for ordinary values; ``bad`` marks the
    rows where ``r * r`` overflows or leaves the normal range (or ``r``
    itself overflows), and ``q = h * (h / v)`` with the exact halves ``h = y / 2
    - mu / 2`` is their quarter ``z**2 / 4``, finite wherever ``z**2 / 4`` is:
    targets and means of order 1e300 with variances of the same order give a
    finite score rather than ``inf``, and tiny residuals over tiny variances
    are not flushed to 0. ``z2[bad]`` holds ``4 * q``.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        r = G.targets - G.mean
        rr = r * r
        z2 = rr / G.variance
        bad = (~(rr >= _TINY) & (r != 0)) | ~np.isfinite(rr)
        q = np.empty(0)
        if bad.any():
            h = 0.5 * G.targets[bad] - 0.5 * G.mean[bad]
            q = h * (h / G.variance[bad])
            z2[bad] = 4.0 * q
    return z2, bad, q


@fill_doc
@spread_by_name
def gaussian_nll_per_row(
    mean: Any, *, variance: Any = None, std: Any = None, targets: Any = None
) -> np.ndarray:
    """Negative log-likelihood of each target under its predicted Gaussian.

    The log score of a Gaussian prediction (Gneiting & Raftery 2007;
    Gruber & Buettner 2022, §2.3): ``-log N(y; mu, sigma**2) =
    0.5 * log(2 * pi) + 0.5 * log(sigma**2) + (y - mu)**2 / (2 * sigma**2)``,
    in nats, the constant ``0.5 * log(2 * pi)`` included.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores in nats.

    Examples
    --------
    >>> from calipers.regression import gaussian_nll_per_row
    >>> gaussian_nll_per_row([0.0, 0.0], variance=[1.0, 1.0], targets=[0.0, 1.0]).round(4).tolist()
    [0.9189, 1.4189]
    """
    G = _checked(mean, variance, std, targets)
    z2, bad, q = _squared_z(G)
    out = 0.5 * (_LOG_2PI + np.log(G.variance) + z2)
    if q.size:  # z**2 / 2 = 2 q: finite even where z**2 itself overflows
        with np.errstate(over="ignore"):
            out[bad] = 0.5 * (_LOG_2PI + np.log(G.variance[bad])) + 2.0 * q
    return out


@fill_doc
@spread_by_name
def gaussian_nll(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean Gaussian negative log-likelihood over rows, in nats.

    The (weighted) mean of :func:`gaussian_nll_per_row`: the empirical
    expected log score (Gneiting & Raftery 2007; Gruber & Buettner
    2022, §2.3), including the constant ``0.5 * log(2 * pi)`` per row, so it
    equals ``torch.nn.GaussianNLLLoss(full=True)`` on the same values.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean negative log-likelihood in nats.

    Examples
    --------
    >>> from calipers.regression import gaussian_nll
    >>> round(gaussian_nll([0.0, 0.0], std=[1.0, 1.0], targets=[0.0, 1.0]), 4)
    1.1689
    """
    G = _checked(mean, variance, std, targets, sample_weight)
    return G.weighted_mean(gaussian_nll_per_row(G))


@fill_doc
@spread_by_name
def dawid_sebastiani_per_row(
    mean: Any, *, variance: Any = None, std: Any = None, targets: Any = None
) -> np.ndarray:
    """Dawid-Sebastiani score of each row: ``log(sigma**2) + (y - mu)**2 / sigma**2``.

    As written by Gruber & Buettner 2022 (§2.3) and Gneiting & Raftery 2007:
    no factor 1/2 and no ``log(2 * pi)`` constant, so it equals
    ``2 * NLL - log(2 * pi)`` for a Gaussian prediction. It depends on the
    prediction only through its mean and variance and is proper for every
    target distribution with a finite variance.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores (dimensionless, up to the log of the units).

    Examples
    --------
    >>> import math
    >>> from calipers.regression import dawid_sebastiani_per_row
    >>> s = dawid_sebastiani_per_row([1.0], variance=[math.e], targets=[1.0 + math.sqrt(math.e)])
    >>> s.round(6).tolist()
    [2.0]
    """
    G = _checked(mean, variance, std, targets)
    with np.errstate(over="ignore"):
        return np.log(G.variance) + _squared_z(G)[0]


@fill_doc
@spread_by_name
def dawid_sebastiani(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean Dawid-Sebastiani score over rows.

    The (weighted) mean of :func:`dawid_sebastiani_per_row`, the score
    Gruber & Buettner 2022 (§5, App. G.5) use for variance regression and its
    recalibration; ``log(sigma**2) + (y - mu)**2 / sigma**2`` per row
    (Gneiting & Raftery 2007), without the factor 1/2 and without a
    constant.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean Dawid-Sebastiani score.

    Examples
    --------
    >>> from calipers.regression import dawid_sebastiani
    >>> dawid_sebastiani([0.0, 0.0], variance=[1.0, 1.0], targets=[1.0, 3.0])
    5.0
    """
    G = _checked(mean, variance, std, targets, sample_weight)
    return G.weighted_mean(dawid_sebastiani_per_row(G))


@fill_doc
@spread_by_name
def crps_gaussian_per_row(
    mean: Any, *, variance: Any = None, std: Any = None, targets: Any = None
) -> np.ndarray:
    """Continuous ranked probability score of each row, closed form for a Gaussian.

    ``CRPS(N(mu, sigma**2), y) = sigma * [z * (2 * Phi(z) - 1) + 2 * phi(z)
    - 1 / sqrt(pi)]`` with ``z = (y - mu) / sigma`` (Gneiting et al. 2005),
    which equals the integral of ``(F(x) - 1{x >= y})**2`` over the
    real line (Gneiting & Raftery 2007). In target units.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, >= 0, in target units.

    Examples
    --------
    >>> from calipers.regression import crps_gaussian_per_row
    >>> crps_gaussian_per_row([0.0], std=[1.0], targets=[0.0]).round(6).tolist()
    [0.233695]
    """
    from scipy.special import ndtr

    G = _checked(mean, variance, std, targets)
    sigma = G.std
    z = (G.targets - G.mean) / sigma
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return sigma * (z * (2.0 * ndtr(z) - 1.0) + 2.0 * pdf - 1.0 / math.sqrt(math.pi))


@fill_doc
@spread_by_name
def crps_gaussian(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean continuous ranked probability score of Gaussian predictions.

    The (weighted) mean of :func:`crps_gaussian_per_row` (Gneiting et al.
    2005; Gneiting & Raftery 2007), in target units. For a
    point prediction (``sigma -> 0``) it tends to the mean absolute error.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean CRPS in target units.

    Examples
    --------
    >>> from calipers.regression import crps_gaussian
    >>> round(crps_gaussian([0.0, 0.0], std=[1e-9, 1e-9], targets=[1.0, -3.0]), 6)
    2.0
    """
    G = _checked(mean, variance, std, targets, sample_weight)
    return G.weighted_mean(crps_gaussian_per_row(G))
