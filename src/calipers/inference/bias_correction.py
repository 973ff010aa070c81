"""The recommended number: a calibration-error estimate corrected for its bias where the data are.

An estimate ``T`` of a calibration error is biased at finite n, and for the absolute-value
estimators (binned ECE, SmoothECE, the Dirichlet-kernel CE_KL) the bias is not
additive: it is largest for a calibrated model and shrinks as the calibration error
grows (``E|a + e| ~ |a|`` once ``|a|`` is well above the noise ``e``). Subtracting the
bias measured on a calibrated model therefore over-corrects a miscalibrated one.

The correction here is a model-based (parametric) bootstrap at the *estimated* model,
as Roelofs et al. (2022) measured estimator bias with labels drawn from calibration
curves fitted to real predictions:

1. fit a calibration curve ``q = E[Y | p]`` to the data
   (:func:`calipers.inference.calibration_world.fit_calibration_world`; the calibrated
   ``q = p`` is one of the candidates);
2. ``theta(q)``: the quantity the estimator estimates, computed exactly under ``q``
   with the predictions held fixed (:func:`estimand`);
3. draw labels ``y*_b ~ q`` and recompute the estimator: ``bias = mean(T*) - theta(q)``;
4. the recommended number is ``T - bias`` (reported as 0 when negative).

The interval is the basic bootstrap interval of the corrected estimate in the fitted
world. So that it also carries the uncertainty of the bias correction itself, the
curve is refitted on every draw (``theta_b``) and each draw is corrected with the bias
at its own refit, interpolated linearly in ``theta`` between the calibrated null
``(0, mean of the calibrated draws)`` and the fitted world ``(theta(q), bias)``:
``rec*_b = T*_b - bias(theta_b)``; the interval is
``[rec - q_{1-a/2}(rec* - theta(q)), rec - q_{a/2}(rec* - theta(q))]``, its lower end
clipped at 0. benchmarks/study_verdicts.py measures its coverage on predictors with a
known calibration error (docs/intervals.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BiasCorrection", "correct"]


@dataclass(frozen=True)
class BiasCorrection:
    """A bias-corrected calibration-error estimate with its interval (:func:`correct`).

    Attributes
    ----------
    recommended : float
        ``max(0, T - bias)``.
    corrected : float
        ``T - bias`` (may be negative).
    bias : float
        The estimator's bias in the world it was measured in.
    interval : tuple of float
        Interval of the recommended number at the requested level (lower end >= 0).
    method : str
        ``"fitted calibration curve"`` or ``"calibrated null"`` (no curve could be
        used: the bias at calibration, an over-correction for a miscalibrated model).
    world_model : str or None
        The fitted model the labels were drawn from.
    world_estimand : float or None
        ``theta(q)``: the calibration error of the fitted model itself.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.bias_correction import correct
    >>> c = correct(0.05, np.full(99, 0.02))        # calibrated null only
    >>> round(c.recommended, 3), c.method
    (0.03, 'calibrated null')
    """

    recommended: float
    corrected: float
    bias: float
    interval: tuple[float, float]
    method: str
    world_model: str | None = None
    world_estimand: float | None = None


def _basic(rec: float, pivot: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo = rec - float(np.quantile(pivot, 1 - a))
    hi = rec - float(np.quantile(pivot, a))
    return (max(0.0, lo), max(0.0, hi))


def correct(
    estimate: float,
    null: np.ndarray,
    *,
    world_draws: np.ndarray | None = None,
    world_estimand: float | None = None,
    refit_estimands: np.ndarray | None = None,
    world_model: str | None = None,
    level: float = 0.95,
) -> BiasCorrection:
    """Correct ``estimate`` for the estimator's bias in the fitted world (module docstring).

    Parameters
    ----------
    estimate : float
        ``T``, the metric on the data.
    null : ndarray of shape (B,)
        The metric on labels drawn from the predictions (a calibrated model,
        Vaicenavicius et al. 2019): its mean is the bias at calibration.
    world_draws : ndarray of shape (B,), optional
        The metric on labels drawn from the fitted curve ``q``; None when no curve
        could be used (then the calibrated null corrects, :attr:`BiasCorrection.method`
        says so) or when the fitted curve is the identity (``world_draws = null``).
    world_estimand : float, optional
        ``theta(q)`` (0 for the identity).
    refit_estimands : ndarray of shape (B,), optional
        ``theta`` of the curve refitted on each of ``world_draws``' label draws.
    world_model : str, optional
        The fitted model, in words.
    level : float, default 0.95
        Level of the interval.

    Returns
    -------
    BiasCorrection

    Examples
    --------
    A miscalibrated world whose draws average 0.032 around its own error 0.030 has a
    bias of about 0.001, where the calibrated draws say 0.018:

    >>> import numpy as np
    >>> from calipers.inference.bias_correction import correct
    >>> rng = np.random.default_rng(0)
    >>> null = 0.018 + 0.004 * rng.standard_normal(200)
    >>> world = 0.032 + 0.006 * rng.standard_normal(200)
    >>> c = correct(0.033, null, world_draws=world, world_estimand=0.030,
    ...             world_model="logistic in logit(score)")
    >>> round(c.recommended, 3), c.interval[0] > 0.015
    (0.032, True)
    """
    null = np.asarray(null, dtype=np.float64)
    mu0 = float(null.mean())
    if world_draws is None or world_estimand is None:
        rec = float(estimate) - mu0
        return BiasCorrection(
            recommended=max(0.0, rec),
            corrected=rec,
            bias=mu0,
            interval=_basic(rec, null - mu0, level),
            method="calibrated null",
        )
    Ts = np.asarray(world_draws, dtype=np.float64)
    theta = float(world_estimand)
    bias = float(Ts.mean()) - theta
    rec = float(estimate) - bias
    if refit_estimands is not None and theta > 0:
        th = np.asarray(refit_estimands, dtype=np.float64)
        slope = (bias - mu0) / theta
        rec_star = Ts - (bias + slope * (th - theta))
    else:
        rec_star = Ts - bias
    return BiasCorrection(
        recommended=max(0.0, rec),
        corrected=rec,
        bias=bias,
        interval=_basic(rec, rec_star - theta, level),
        method="fitted calibration curve",
        world_model=world_model,
        world_estimand=theta,
    )


def soft_targets(lens: Callable[[Any], Any], P: Any, q: np.ndarray) -> list[np.ndarray] | None:
    """Each lens slice's targets in expectation under label distribution ``q``.

    Every built-in lens's target is linear in the one-hot label, so its expectation is
    ``sum_k q_k * target(y = k)``; returns None when the slices differ between labels
    (a lens that selects rows by label).
    """
    from ..validation import check_predictions

    n = P.n_samples
    qm = np.column_stack([1 - q, q]) if q.ndim == 1 else q
    out: list[np.ndarray] | None = None
    for k in range(qm.shape[1]):
        Pk = check_predictions(
            P.probs, np.full(n, k), sample_weight=P.sample_weight, validate=False
        )
        sl = list(lens(Pk))
        t = [np.asarray(s.targets, dtype=np.float64) for s in sl]
        if any(s.n != n for s in sl):
            return None
        if out is None:
            out = [np.zeros_like(x) for x in t]
        if len(t) != len(out) or any(a.shape != b.shape for a, b in zip(t, out, strict=True)):
            return None
        for a, b in zip(out, t, strict=True):
            a += (qm[:, k] if b.ndim == 1 else qm[:, k][:, None]) * b
    return out
