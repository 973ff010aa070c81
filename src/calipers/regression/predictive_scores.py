"""The CRPS and the log score of a predictive distribution of any kind.

Two proper scores (Gneiting & Raftery 2007), dispatched on the kind of
:class:`~calipers.regression.PredictiveDistribution`:

* the continuous ranked probability score ``CRPS(F, y) = int (F(x) -
  1{x >= y})**2 dx``, in target units: closed forms for a Gaussian (Gneiting
  et al. 2005) and the named parametric families (Baran & Lerch 2015; Wei &
  Held 2014; see :class:`~calipers.regression.Parametric`), the ensemble
  estimators for samples (standard or fair, Ferro 2014) and the
  quantile-averaged pinball form for quantile sets;
* the log score ``-log f(y)`` (negative log density, or mass for counts), in
  nats, for the kinds with a density: Gaussian and parametric. Quantile sets
  and samples have none and are refused.

Each comes per row (``*_per_row``) and as its (weighted) mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from .distributions import ProbabilisticPredictions, SampleEnsemble, check_predictive
from .inputs import spread_by_name

__all__ = ["crps", "crps_per_row", "log_score", "log_score_per_row"]


def _crps_rows(P: ProbabilisticPredictions, estimator: str | None) -> np.ndarray:
    d = P.distribution
    if isinstance(d, SampleEnsemble):
        return d.crps(P.targets, estimator=estimator)
    if estimator is not None:
        raise CalibrationInputError(
            f"estimator= applies to a SampleEnsemble only; the {type(d).__name__} ({d.kind}) "
            "has one CRPS"
        )
    return np.asarray(d.crps(P.targets), dtype=np.float64)


@fill_doc
@spread_by_name
def crps_per_row(
    predictions: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    estimator: str | None = None,
) -> np.ndarray:
    """CRPS of every row, for a predictive distribution of any kind.

    ``CRPS(F_i, y_i)`` (Gneiting & Raftery 2007), in target units, by the
    distribution's own :meth:`~calipers.regression.PredictiveDistribution.crps`:
    closed form for Gaussian and parametric kinds, the ensemble estimator
    for samples (``estimator``), the quantile-averaged pinball form for
    quantile sets.

    Parameters
    ----------
    predictions : PredictiveDistribution, array-like of shape (n,) or GaussianPredictions
        A predictive distribution of any kind, or Gaussian means (with
        ``variance=`` or ``std=``, by name).
    {variance}
    {std}
    {targets}
    estimator : {"standard", "fair"}, optional
        The ensemble estimator of a :class:`~calipers.regression.SampleEnsemble`
        (default: that of :func:`calipers.regression.crps_ensemble_per_row`);
        refused for other kinds.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, target units.

    Examples
    --------
    >>> from calipers.regression import crps_per_row, Parametric
    >>> crps_per_row(Parametric("laplace", loc=[0.0], scale=[2.0]), targets=[0.0]).tolist()
    [0.5]
    >>> crps_per_row([0.0], std=[1.0], targets=[0.0]).round(6).tolist()
    [0.233695]
    """
    P = check_predictive(predictions, variance=variance, std=std, targets=targets)
    return _crps_rows(P, estimator)


@fill_doc
@spread_by_name
def crps(
    predictions: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    estimator: str | None = None,
) -> float:
    """Mean CRPS of predictive distributions of any kind (Gneiting & Raftery 2007).

    The (weighted) mean of :func:`crps_per_row`, in target units.

    Parameters
    ----------
    predictions : PredictiveDistribution, array-like of shape (n,) or GaussianPredictions
        A predictive distribution of any kind, or Gaussian means.
    {variance}
    {std}
    {targets}
    {sample_weight}
    estimator : {"standard", "fair"}, optional
        The ensemble estimator (samples only).

    Returns
    -------
    float
        Mean CRPS, target units.

    Examples
    --------
    >>> from calipers.regression import crps
    >>> from calipers.regression import SampleEnsemble
    >>> crps(SampleEnsemble([[0.0, 2.0], [1.0, 1.0]]), targets=[1.0, 1.0], sample_weight=[3.0, 1.0])
    0.375
    """
    P = check_predictive(
        predictions, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    return P.weighted_mean(_crps_rows(P, estimator))


@fill_doc
@spread_by_name
def log_score_per_row(
    predictions: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
) -> np.ndarray:
    """Log score ``-log f_i(y_i)`` of every row, in nats (Gneiting & Raftery 2007).

    The negative log density (the negative log mass for Poisson and negative
    binomial predictions); for a Gaussian, the negative log-likelihood of
    :func:`calipers.regression.gaussian_nll_per_row`, bit for bit.

    Parameters
    ----------
    predictions : PredictiveDistribution, array-like of shape (n,) or GaussianPredictions
        A Gaussian or parametric distribution, or Gaussian means.
    {variance}
    {std}
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores in nats (``inf`` where the density is 0).

    Raises
    ------
    CalibrationInputError
        For quantile sets and samples, which state no density.

    Examples
    --------
    >>> from calipers.regression import log_score_per_row, Parametric
    >>> log_score_per_row(Parametric("poisson", mu=[1.0]), targets=[0.0]).tolist()
    [1.0]
    """
    P = check_predictive(predictions, variance=variance, std=std, targets=targets)
    return -np.asarray(P.distribution.logpdf(P.targets), dtype=np.float64)


@fill_doc
@spread_by_name
def log_score(
    predictions: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean log score of Gaussian or parametric predictive distributions, in nats.

    The (weighted) mean of :func:`log_score_per_row` (Gneiting & Raftery
    2007); for a Gaussian, :func:`calipers.regression.gaussian_nll`.

    Parameters
    ----------
    predictions : PredictiveDistribution, array-like of shape (n,) or GaussianPredictions
        A Gaussian or parametric distribution, or Gaussian means.
    {variance}
    {std}
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean log score, nats.

    Examples
    --------
    >>> from calipers.regression import log_score
    >>> round(log_score([0.0], variance=[1.0], targets=[0.0]), 6)
    0.918939
    """
    P = check_predictive(
        predictions, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    return P.weighted_mean(-np.asarray(P.distribution.logpdf(P.targets), dtype=np.float64))
