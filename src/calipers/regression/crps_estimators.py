"""CRPS of ensembles (samples) and of quantile sets, per row and as means.

The continuous ranked probability score of a predictive distribution ``F``
and an observation ``y`` (Gneiting & Raftery 2007, eq. 20-21), in target units, smaller is better::

    CRPS(F, y) = integral (F(x) - 1{y <= x})**2 dx = E|X - y| - 0.5 E|X - X'|

with ``X, X'`` independent draws of ``F``. Two forms of prediction have no
closed form and are scored here, one row at a time, without any loop over rows:

* an ensemble (samples) ``x_1 .. x_k`` per row: the *standard* estimator is
  the CRPS of the ensemble's empirical distribution (the energy form with
  ``1 / k**2``; scoringrules' ``"nrg"``, ``"qd"`` and ``"int"``, properscoring's
  ``crps_ensemble``); the *fair* estimator (Ferro 2014) divides the spread
  term by ``k (k - 1)`` instead, which makes it unbiased for the CRPS of the
  distribution the members are drawn from (scoringrules' ``"fair"`` and
  ``"pwm"``). Both are computed from the sorted members in
  ``O(k log k)`` per row: with ``d_(1) <= .. <= d_(k)`` the sorted
  ``x_i - y``, ``sum_ij |x_i - x_j| = 2 sum_i (2 i - k - 1) d_(i)``;
* a quantile set ``q_1 .. q_m`` at levels ``tau_1 < .. < tau_m``: the
  quantile-averaged pinball form ``(2 / m) sum_j rho_tau_j(y - q_j)`` with the
  pinball loss ``rho_tau(u) = u (tau - 1{u < 0})`` (Gneiting & Raftery 2007,
  eq. 41 discretised; Berrisch & Ziel 2023; scoringrules' ``crps_quantile``).
  Over the levels of ``K`` central intervals and the median it equals the
  weighted interval score of Bracher et al. 2021 exactly, and over the levels
  ``(i - 0.5) / k`` with the sorted members as quantiles it equals the
  standard ensemble CRPS exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import CalibrationInputError
from ._score_arrays import as_float_array, as_levels, finite_rows, same_rows, weighted_mean

__all__ = [
    "crps_ensemble",
    "crps_ensemble_per_row",
    "crps_quantiles",
    "crps_quantiles_per_row",
]

_ESTIMATORS = ("standard", "fair")
_PEER_NAMES = {
    "nrg": "standard",
    "energy": "standard",
    "qd": "standard",
    "int": "standard",
    "pwm": "fair",
}


def _check_estimator(estimator: Any) -> str:
    if estimator in _ESTIMATORS:
        return str(estimator)
    hint = ""
    if isinstance(estimator, str) and estimator in _PEER_NAMES:
        hint = f" (scoringrules' {estimator!r} is the {_PEER_NAMES[estimator]!r} estimator here)"
    raise CalibrationInputError(f"estimator must be 'standard' or 'fair'; got {estimator!r}{hint}")


def _member_weights(member_weights: Any, n: int, k: int) -> np.ndarray:
    """Member weights ``(k,)`` or ``(n, k)`` as ``(n, k)`` or ``(1, k)``, each row summing to 1."""
    if member_weights is None:
        raise AssertionError("unreachable")
    W = as_float_array(member_weights, "member_weights", 2 if np.ndim(member_weights) == 2 else 1)
    if W.ndim == 1:
        if W.shape[0] != k:
            raise CalibrationInputError(
                f"member_weights has {W.shape[0]} entries but samples has {k} members "
                "per row; give one weight per member, (k,) or (n, k)"
            )
        W = W[None, :]
    elif W.shape != (n, k):
        raise CalibrationInputError(
            f"member_weights has shape {W.shape} but samples has shape {(n, k)}; give one "
            "weight per member, (k,) or (n, k)"
        )
    neg = W < 0
    if neg.any():
        r, c = (int(i) for i in np.argwhere(neg)[0])
        raise CalibrationInputError(
            f"member_weights must be non-negative; row {r}, member {c} is {float(W[r, c])!r}"
        )
    total = W.sum(axis=1, keepdims=True)
    zero = ~(total[:, 0] > 0)
    if zero.any():
        r = int(np.flatnonzero(zero)[0])
        raise CalibrationInputError(
            f"member_weights must have a positive total in every row; row {r} sums to 0"
        )
    return W / total


def _crps_ensemble_rows(
    X: np.ndarray, y: np.ndarray, est: str, W: np.ndarray | None = None
) -> np.ndarray:
    """The ensemble CRPS of every row (checked inputs; ``W`` normalised member weights)."""
    n, k = X.shape
    # Differences to the target: the spread term is shift-invariant, so working on
    # d = x - y loses no digits to a large common offset of members and target.
    D = X - y[:, None]
    if W is None:
        D.sort(axis=1)
        ranks = np.arange(1 - k, k, 2, dtype=np.float64)  # 2 i - k - 1, i = 1..k
        spread = D @ ranks  # 0.5 sum_ij |x_i - x_j|
        absdev = np.abs(D, out=D).sum(axis=1)  # D is ours: no second n x k array
        if est == "standard":
            return absdev / k - spread / (k * k)
        return absdev / k - spread / (k * (k - 1.0))
    order = np.argsort(D, axis=1)
    D = np.take_along_axis(D, order, axis=1)
    Ws = np.take_along_axis(np.broadcast_to(W, (n, k)), order, axis=1)
    cum = np.cumsum(Ws, axis=1)
    before = cum - Ws
    # 0.5 sum_ij w_i w_j |x_i - x_j| = sum_i w_(i) d_(i) (W_(i-1) + W_(i) - 1)
    spread = np.einsum("ij,ij->i", Ws * (before + cum - 1.0), D)
    return np.einsum("ij,ij->i", Ws, np.abs(D)) - spread


@fill_doc
def crps_ensemble_per_row(
    samples: Any,
    targets: Any,
    *,
    estimator: str = "standard",
    member_weights: Any = None,
) -> np.ndarray:
    """CRPS of each row's ensemble (samples) against its target, in target units.

    With the members ``x_1 .. x_k`` of a row and its target ``y``
    (Gneiting & Raftery 2007, eq. 21; Ferro 2014)::

        standard:  (1/k) sum_i |x_i - y| - 1 / (2 k**2)      sum_ij |x_i - x_j|
        fair:      (1/k) sum_i |x_i - y| - 1 / (2 k (k - 1)) sum_ij |x_i - x_j|

    The standard estimator is the exact CRPS of the ensemble's empirical
    distribution, the forecast the ensemble states: it is what properscoring's
    ``crps_ensemble`` computes and what scoringrules' ``crps_ensemble``
    computes by default (its default ``"qd"`` and its ``"nrg"`` and
    ``"int"`` are the same number written three ways), and it is the default
    here for that reason. The fair estimator (Ferro 2014; scoringrules'
    ``"fair"`` and ``"pwm"``) is unbiased for the CRPS of the distribution the
    members are drawn from; use it to compare ensembles of different sizes as
    samples of an underlying distribution (it is lower by the spread term over
    ``k - 1`` and can be negative). Both take ``O(k log k)`` per row: the
    members are sorted once.

    Parameters
    ----------
    samples : array-like or tensor of shape (n, k)
        ``k`` members (draws) of each row's predictive distribution, in target
        units; finite. Tensors are read on the CPU.
    {targets}
    estimator : {"standard", "fair"}, default "standard"
        Which estimator (see above). The fair one needs ``k >= 2`` and equal
        member weights.
    member_weights : array-like of shape (k,) or (n, k), optional
        Non-negative weights of the members (normalised to sum to 1 in every
        row), as properscoring's ``weights`` and scoringrules' ``ens_w``: the
        standard CRPS of the weighted empirical distribution,
        ``sum_i w_i |x_i - y| - 0.5 sum_ij w_i w_j |x_i - x_j|``. None (the
        default) weighs members equally.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, in target units.

    Raises
    ------
    CalibrationInputError
        On a shape that is not ``(n, k)`` / ``(n,)``, a value that is not
        finite (the message names row and member), an unknown estimator, the
        fair estimator with ``k = 1`` or with member weights, or member
        weights that are negative or sum to 0 in a row.

    Examples
    --------
    Two members 0 and 2 and a target 1: ``E|X - y| = 1`` and
    ``0.5 E|X - X'|`` is ``0.5`` (standard) or ``1`` (fair):

    >>> from calipers.regression import crps_ensemble_per_row
    >>> crps_ensemble_per_row([[0.0, 2.0], [1.0, 1.0]], [1.0, 3.0]).tolist()
    [0.5, 2.0]
    >>> crps_ensemble_per_row([[0.0, 2.0]], [1.0], estimator="fair").tolist()
    [0.0]
    """
    est = _check_estimator(estimator)
    X = as_float_array(samples, "samples", 2)
    y = as_float_array(targets, "targets", 1)
    n, k = X.shape
    same_rows(y, "targets", n, "samples")
    if k == 0:
        raise CalibrationInputError("samples must hold at least one member per row; got k = 0")
    if est == "fair":
        if member_weights is not None:
            raise CalibrationInputError(
                "the fair estimator is defined for equally weighted members; pass "
                "member_weights=None or estimator='standard'"
            )
        if k < 2:
            raise CalibrationInputError(
                "the fair estimator needs at least 2 members per row; samples has k = 1"
            )
    headroom = 4.0 * k * k  # |x - y| <= 2 max, a sum of k**2 / 2 rank weights
    with np.errstate(over="ignore", invalid="ignore"):
        if member_weights is None:
            out = _crps_ensemble_rows(X, y, est)
            return finite_rows(
                out, lambda Xs, ys: _crps_ensemble_rows(Xs, ys, est), (X, y), headroom=headroom
            )
        W = np.broadcast_to(_member_weights(member_weights, n, k), (n, k))
        out = _crps_ensemble_rows(X, y, est, W)
    return finite_rows(
        out,
        lambda Xs, ys, Ws: _crps_ensemble_rows(Xs, ys, est, Ws),
        (X, y),
        (W,),
        headroom=headroom,
    )


@fill_doc
def crps_ensemble(
    samples: Any,
    targets: Any,
    *,
    estimator: str = "standard",
    member_weights: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean CRPS of ensembles (samples) over rows, in target units.

    The (weighted) mean of :func:`crps_ensemble_per_row` (Gneiting & Raftery
    2007; Ferro 2014); see there for the two estimators and why
    ``"standard"`` is the default.

    Parameters
    ----------
    samples : array-like or tensor of shape (n, k)
        ``k`` members of each row's predictive distribution, finite.
    {targets}
    estimator : {"standard", "fair"}, default "standard"
        The estimator of each row's CRPS.
    member_weights : array-like of shape (k,) or (n, k), optional
        Weights of the members within each row (standard estimator only).
    {sample_weight}

    Returns
    -------
    float
        Mean CRPS, in target units.

    Examples
    --------
    >>> from calipers.regression import crps_ensemble
    >>> crps_ensemble([[0.0, 2.0], [1.0, 1.0]], [1.0, 3.0])
    1.25
    >>> crps_ensemble([[0.0, 2.0], [1.0, 1.0]], [1.0, 3.0], sample_weight=[3.0, 1.0])
    0.875
    """
    rows = crps_ensemble_per_row(
        samples, targets, estimator=estimator, member_weights=member_weights
    )
    return weighted_mean(rows, sample_weight, "samples")


@fill_doc
def crps_quantiles_per_row(levels: Any, quantiles: Any, targets: Any) -> np.ndarray:
    """Quantile-averaged pinball form of the CRPS of each row, in target units.

    With levels ``tau_1 < .. < tau_m`` and the predicted quantiles
    ``q_1 .. q_m`` of a row, and the pinball loss
    ``rho_tau(u) = u (tau - 1{u < 0})`` of ``u = y - q``::

        CRPS_Q(q, y) = (2 / m) sum_j rho_tau_j(y - q_j)

    the CRPS written as twice the integral of the pinball loss over levels
    (Gneiting & Raftery 2007, eq. 41) with the integral
    replaced by the mean over the given levels; this is the normalisation of
    scoringrules' ``crps_quantile`` (Berrisch & Ziel 2023), the same number.
    When the levels are those of ``K`` central intervals and the median
    (``m = 2 K + 1``), it equals the weighted interval score of Bracher et al.
    2021 with weights ``alpha_k / 2`` exactly; it approaches the CRPS of the
    distribution as the levels fill (0, 1) evenly. Crossing quantiles are
    scored as they are (a :class:`QuantileSet` refuses or sorts them first).

    Parameters
    ----------
    levels : array-like of shape (m,)
        Probability levels, strictly inside (0, 1) and strictly increasing.
    quantiles : array-like or tensor of shape (n, m)
        The predicted ``levels[j]``-quantile of each row in column ``j``, in
        target units; finite.
    {targets}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64 scores, in target units.

    Raises
    ------
    CalibrationInputError
        On levels outside (0, 1) or not increasing, shapes that do not match,
        or a value that is not finite (the message names row and column).

    Examples
    --------
    The median 0 of a row with target 1: ``(2 / 1) * 0.5 * 1 = 1``, the
    absolute error. Quartiles -1 and 1 with target 2:
    ``(2 / 2) * (0.25 * 3 + 0.75 * 1) = 1.5``.

    >>> from calipers.regression import crps_quantiles_per_row
    >>> crps_quantiles_per_row([0.5], [[0.0]], [1.0]).tolist()
    [1.0]
    >>> crps_quantiles_per_row([0.25, 0.75], [[-1.0, 1.0]], [2.0]).tolist()
    [1.5]
    """
    tau = as_levels(levels)
    Q = as_float_array(quantiles, "quantiles", 2)
    y = as_float_array(targets, "targets", 1)
    n, m = Q.shape
    if m != tau.shape[0]:
        raise CalibrationInputError(
            f"quantiles has {m} columns but levels has {tau.shape[0]} entries; give one "
            "column per level"
        )
    same_rows(y, "targets", n, "quantiles")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _crps_quantile_rows(tau, Q, y)
    return finite_rows(
        out, lambda Qs, ys: _crps_quantile_rows(tau, Qs, ys), (Q, y), headroom=4.0 * m
    )


def _crps_quantile_rows(tau: np.ndarray, Q: np.ndarray, y: np.ndarray) -> np.ndarray:
    U = y[:, None] - Q  # u = y - q
    # rho_tau(u) = tau u - min(u, 0): one pass, no boolean temporaries
    loss = U @ tau - np.minimum(U, 0.0).sum(axis=1)
    return (2.0 / Q.shape[1]) * loss


@fill_doc
def crps_quantiles(
    levels: Any, quantiles: Any, targets: Any, *, sample_weight: Any = None
) -> float:
    """Mean quantile-averaged pinball CRPS over rows, in target units.

    The (weighted) mean of :func:`crps_quantiles_per_row`: ``(2 / m)`` times
    the sum over the ``m`` levels of the pinball losses, averaged over rows
    (Gneiting & Raftery 2007; Bracher et al. 2021).

    Parameters
    ----------
    levels : array-like of shape (m,)
        Probability levels, strictly inside (0, 1) and strictly increasing.
    quantiles : array-like or tensor of shape (n, m)
        Predicted quantiles, one column per level.
    {targets}
    {sample_weight}

    Returns
    -------
    float
        Mean score, in target units.

    Examples
    --------
    >>> from calipers.regression import crps_quantiles
    >>> crps_quantiles([0.25, 0.75], [[-1.0, 1.0], [-1.0, 1.0]], [2.0, 0.0])
    1.0
    """
    rows = crps_quantiles_per_row(levels, quantiles, targets)
    return weighted_mean(rows, sample_weight, "quantiles")
