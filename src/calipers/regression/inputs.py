"""Validation of Gaussian predictive distributions for probabilistic regression.

A probabilistic regression model predicts, for every row ``i``, a normal
distribution N(mu_i, sigma_i**2) for the target ``y_i`` (the variance
regression setting of Gruber & Buettner 2022, §5 and App. G.5).
:func:`check_gaussian` turns the caller's means, variances (or standard
deviations), targets and optional weights into one internal form,
:class:`GaussianPredictions`, and rejects everything else with a
:class:`~calipers.validation.CalibrationInputError` that names the argument,
the first offending row and its value. Nothing is clipped or changed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, check_sample_weight

__all__ = ["GaussianPredictions", "check_gaussian", "refuse_given", "spread_by_name"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Predictions that state their own spread (a distribution of any kind, or the checked
#: predictions holding one): a second positional argument to them can only be the targets.
#: By class name (any class in the MRO): calipers.regression.distributions imports this
#: module, so it cannot be imported here.
_CARRY_THEIR_SPREAD = frozenset({"PredictiveDistribution", "ProbabilisticPredictions"})

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def spread_by_name(func: _F) -> _F:
    """Refuse a predicted spread (or targets) passed by position, with a message saying how.

    A predicted spread is a variance (squared target units) or a standard
    deviation (target units); read as the other, it silently gives wrong
    scores (a standard deviation of 10 read as a variance is a standard
    deviation of 3.16). The Gaussian predictions of Gruber & Buettner 2022
    (§5) therefore take their spread by name everywhere in calipers:
    ``variance=`` or ``std=`` (exactly one), and ``targets=``. ``func`` must
    declare them keyword-only; its positional parameters (``mean``, and
    ``self`` for a method) stay positional. Python's own error for an extra
    positional argument does not say what to do, so the wrapper raises a
    :class:`TypeError` that does.

    Parameters
    ----------
    func : callable
        A function or method whose only positional parameters precede the
        keyword-only ``variance``, ``std`` and ``targets``.

    Returns
    -------
    callable
        ``func`` with the same signature (``inspect.signature`` shows it),
        refusing extra positional arguments.

    Examples
    --------
    >>> from calipers.regression import gaussian_nll
    >>> gaussian_nll([0.0], [1.0], targets=[0.0])
    Traceback (most recent call last):
    ...
    TypeError: gaussian_nll() takes the predicted spread by name: pass variance=... (predicted variances, squared target units) or std=... (predicted standard deviations, target units, e.g. the second output of scikit-learn's predict(X, return_std=True)), and targets=...; only the means are positional (got 2 positional arguments)
    """
    params = inspect.signature(func).parameters.values()
    n_positional = sum(p.kind in _POSITIONAL for p in params)
    is_method = next(iter(inspect.signature(func).parameters), "") == "self"
    name = func.__name__

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) > n_positional:
            got = len(args) - (1 if is_method else 0)
            where = f"{type(args[0]).__name__}.{func.__name__}" if is_method else name
            first = args[1 if is_method else 0]
            if any(c.__name__ in _CARRY_THEIR_SPREAD for c in type(first).__mro__):
                raise TypeError(
                    f"{where}() takes the targets by name: pass targets=... (a "
                    f"{type(first).__name__} states its own spread; only the predictions are "
                    f"positional, got {got} positional arguments)"
                )
            raise TypeError(
                f"{where}() takes the predicted spread by name: pass variance=... (predicted "
                "variances, squared target units) or std=... (predicted standard deviations, "
                "target units, e.g. the second output of scikit-learn's predict(X, "
                "return_std=True)), and targets=...; only the means are positional "
                f"(got {got} positional arguments)"
            )
        return func(*args, **kwargs)

    return cast(_F, wrapper)


@dataclass(frozen=True, kw_only=True)
class GaussianPredictions:
    """Validated Gaussian predictions N(mean, variance) and their targets.

    The internal form of every function of :mod:`calipers.regression`
    (Gruber & Buettner 2022, §5: a predicted mean and variance per row).
    Build it with :func:`check_gaussian`, which validates the values; its
    fields are keyword-only, so a spread is never read by position.

    Attributes
    ----------
    mean : numpy.ndarray
        ``(n,)`` float64 predicted means, in the units of the target.
    variance : numpy.ndarray
        ``(n,)`` float64 predicted variances, in squared target units, all > 0.
    targets : numpy.ndarray
        ``(n,)`` float64 observed targets.
    sample_weight : numpy.ndarray or None
        ``(n,)`` float64 non-negative weights with a positive total, or None
        for unit weights (a weight of 2 counts like the row repeated twice).

    Examples
    --------
    >>> from calipers.regression import check_gaussian
    >>> G = check_gaussian([0.0, 1.0], std=[1.0, 2.0], targets=[0.5, 0.0])
    >>> G.variance.tolist(), G.n_samples
    ([1.0, 4.0], 2)
    """

    mean: np.ndarray
    variance: np.ndarray
    targets: np.ndarray
    sample_weight: np.ndarray | None

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.mean.shape[0])

    @property
    def std(self) -> np.ndarray:
        """Predicted standard deviations ``sqrt(variance)``, in target units."""
        return np.sqrt(self.variance)

    def weighted_mean(self, values: np.ndarray) -> float:
        """Mean of per-row ``values`` under :attr:`sample_weight` (plain mean if None)."""
        if self.sample_weight is None:
            return float(np.mean(values))
        return float(np.dot(self.sample_weight, values) / np.sum(self.sample_weight))


def _as_1d_float(x: Any, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 NumPy array, or a CalibrationInputError naming ``name``."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise CalibrationInputError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise CalibrationInputError(
            f"{name} must hold real numbers (integer or float); got dtype {arr.dtype}"
        )
    if arr.ndim != 1:
        raise CalibrationInputError(
            f"{name} must be 1-D (one value per row); got shape {arr.shape}"
        )
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"{name} must be finite; row {i} is {float(arr[i])!r}")
    return arr


def refuse_given(what: str, **given: Any) -> None:
    """Refuse arguments given beside predictions that are already checked (``what`` says so)."""
    named = [k for k, v in given.items() if v is not None]
    if named:
        raise CalibrationInputError(f"{what}; pass {', '.join(named)} as None")


def _first_not_positive(arr: np.ndarray, name: str, what: str) -> None:
    bad = ~(arr > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"{name} must be > 0 {what}; row {i} is {float(arr[i])!r}")


@spread_by_name
def check_gaussian(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> GaussianPredictions:
    """Validate Gaussian predictive distributions N(mean, variance) and their targets.

    The input step of the regression measures of Gruber & Buettner 2022
    (§5: a predicted mean and variance per row, scored against the target).

    Parameters
    ----------
    mean : array-like or torch.Tensor of shape (n,), or GaussianPredictions
        Predicted means, in target units. A :class:`GaussianPredictions` is
        returned as it is (then every other argument must be None).
    variance : array-like or torch.Tensor of shape (n,), optional, keyword-only
        Predicted variances, in squared target units; each must be > 0.
        Give exactly one of ``variance`` and ``std``, by name: a spread passed
        by position raises a :class:`TypeError` (a standard deviation read as
        a variance would silently give wrong scores).
    std : array-like or torch.Tensor of shape (n,), optional, keyword-only
        Predicted standard deviations, in target units (e.g. the second
        output of scikit-learn's ``predict(X, return_std=True)``); each must
        be > 0. It is squared to a variance (an error if the square overflows
        or underflows float64).
    targets : array-like or torch.Tensor of shape (n,)
        Observed targets. Required.
    sample_weight : array-like of shape (n,), optional
        Non-negative finite row weights with a positive total. Default None
        (every row weighs 1). Checked by
        :func:`calipers.validation.check_sample_weight`, like the weights of
        classification predictions: weights beyond ``2**+-256`` are
        multiplied by a power of two, which leaves every weighted mean
        exactly as it is and keeps the sums finite.

    Returns
    -------
    GaussianPredictions
        float64 NumPy arrays; tensors are detached and moved to the CPU.

    Raises
    ------
    TypeError
        When the spread or the targets are passed by position.
    CalibrationInputError
        On a shape that is not 1-D, lengths that differ, no rows, a value
        that is not finite, a variance or std that is not > 0, or a negative
        weight; the message names the argument, the row and the value.

    Examples
    --------
    >>> from calipers.regression import check_gaussian
    >>> G = check_gaussian([0.0, 1.0], variance=[1.0, 0.5], targets=[0.2, 0.9])
    >>> G.mean.dtype, G.sample_weight is None
    (dtype('float64'), True)
    >>> check_gaussian([0.0], variance=[0.0], targets=[1.0])
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: variance must be > 0 (a Gaussian needs a positive variance); row 0 is 0.0
    """
    if isinstance(mean, GaussianPredictions):
        refuse_given(
            "mean is already a GaussianPredictions",
            variance=variance,
            std=std,
            targets=targets,
            sample_weight=sample_weight,
        )
        return mean
    if (variance is None) == (std is None):
        raise CalibrationInputError(
            "give exactly one of variance= (predicted variances, squared target units) and "
            "std= (predicted standard deviations, target units); got "
            + ("both" if variance is not None else "neither")
        )
    if targets is None:
        raise CalibrationInputError("targets is required (the observed values, one per row)")
    mu = _as_1d_float(mean, "mean")
    n = mu.shape[0]
    if n < 1:
        raise CalibrationInputError("mean has no rows; at least one row is needed")
    if variance is not None:
        var = _as_1d_float(variance, "variance")
        name = "variance"
    else:
        var = _as_1d_float(std, "std")
        name = "std"
    y = _as_1d_float(targets, "targets")
    for label, arr in ((name, var), ("targets", y)):
        if arr.shape[0] != n:
            raise CalibrationInputError(
                f"{label} has {arr.shape[0]} rows but mean has {n}; they must have the same length"
            )
    _first_not_positive(var, name, "(a Gaussian needs a positive " + name + ")")
    if std is not None:
        sd = var
        with np.errstate(over="ignore", under="ignore"):
            var = sd * sd
        bad = ~np.isfinite(var) | ~(var > 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"std squared is not a positive finite float64 variance; row {i} has std {float(sd[i])!r}"
            )
    # the one weight check of calipers (classification uses it too): extreme weights
    # are rescaled by a power of two, so every weighted mean stays exact and finite
    w = check_sample_weight(sample_weight, n, rows_of="mean")
    return GaussianPredictions(mean=mu, variance=var, targets=y, sample_weight=w)
