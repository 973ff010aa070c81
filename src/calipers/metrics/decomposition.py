"""Decompositions of proper scores into calibration and sharpness terms.

* :func:`murphy_decomposition` — the binned decomposition of the Brier score
  (Murphy 1973; with the two within-bin terms of Stephenson et al. 2008 that
  make it an exact identity for any binning):
  ``BS = REL - RES + UNC + WBV - 2 WBC``.
* :func:`corp_decomposition` — the CORP decomposition of Dimitriadis, Gneiting
  & Jordan (2021, PNAS): recalibrate with isotonic (PAV) regression and split
  the score ``S`` into miscalibration, discrimination and uncertainty,
  ``S = MCB - DSC + UNC`` with ``MCB = S(p) - S(PAV(p))``,
  ``DSC = S(climatology) - S(PAV(p))``, ``UNC = S(climatology)``; exact, and
  MCB, DSC >= 0 by construction. Brier (default) or log score.

Both work on Bernoulli problems: a binary forecast, or every class one-vs-rest
(summed over classes, so the multi-class Brier score is decomposed), or the
top-label confidence vs correctness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import as_float64_numpy
from .._docstrings import fill_doc
from ..estimators.binning import Binning, EqualWidth
from ..pipeline.lenses import get_lens
from ..validation import CalibrationInputError, check_predictions

__all__ = [
    "MurphyDecomposition",
    "CORPDecomposition",
    "murphy_decomposition",
    "corp_decomposition",
    "pav",
]


def _bernoulli_slices(  # type: ignore[no-untyped-def]
    probs: Any, labels: Any, lens: str, sample_weight: Any, logits: bool, classes: Any = None
):
    P = check_predictions(
        probs, labels, logits=logits, sample_weight=sample_weight, classes=classes
    )
    use = ("binary" if P.binary else "classwise") if lens == "auto" else lens
    if use not in ("binary", "classwise", "top_label"):
        raise CalibrationInputError(
            f"lens must be 'auto', 'binary', 'classwise' or 'top_label'; got {lens!r}"
        )
    for sl in get_lens(use)(P):
        s = as_float64_numpy(sl.scores)
        t = as_float64_numpy(sl.targets)
        w = np.ones_like(s) if sl.weights is None else as_float64_numpy(sl.weights)
        yield s, t, w


@dataclass(frozen=True)
class MurphyDecomposition:
    """Binned Brier decomposition ``brier = reliability - resolution + uncertainty
    + within_bin_variance - 2 * within_bin_covariance`` (all sums over slices)."""

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


@fill_doc
def murphy_decomposition(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "binary", "classwise", "top_label"] = "auto",
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
) -> MurphyDecomposition:
    """Murphy's (1973) binned decomposition of the Brier score, made exact.

    Per Bernoulli slice with bins b (weights ``W_b``, mean forecast ``s_b``,
    observed frequency ``o_b``, overall frequency ``o``):
    ``REL = sum_b W_b/W (s_b - o_b)^2`` (the binned squared calibration error),
    ``RES = sum_b W_b/W (o_b - o)^2``, ``UNC = o (1 - o)``, and the within-bin
    terms of Stephenson, Coelho & Jolliffe (2008)
    ``WBV = 1/W sum_i w_i (s_i - s_b(i))^2``,
    ``WBC = 1/W sum_i w_i (s_i - s_b(i)) (y_i - o_b(i))``, so that
    ``BS = REL - RES + UNC + WBV - 2 WBC`` holds exactly.

    Parameters
    ----------
    {probs}
    {labels}
    lens : {"auto", "binary", "classwise", "top_label"}, default "auto"
        ``"auto"``: binary for 1-D input, else class-wise (then the terms are
        summed over classes and ``brier`` is the multi-class Brier score).
    estimator : Binning, default ``EqualWidth(15)``
    {sample_weight}
    {logits}
    {classes}

    Returns
    -------
    MurphyDecomposition

    Examples
    --------
    >>> import calipers as cp
    >>> d = cp.murphy_decomposition([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], estimator=cp.EqualWidth(2))
    >>> round(d.brier, 4), round(d.reliability, 4), round(d.resolution, 4), round(d.uncertainty, 4)
    (0.19, 0.065, 0.0625, 0.1875)
    """
    est = EqualWidth(15) if estimator is None else estimator
    tot = np.zeros(6)
    for s, t, w in _bernoulli_slices(probs, labels, lens, sample_weight, logits, classes):
        ids, B = est.assign(s, w)
        ids = np.asarray(ids)
        W = w.sum()
        Wb = np.bincount(ids, w, B)
        ne = Wb > 0
        sb = np.zeros(B)
        ob = np.zeros(B)
        sb[ne] = np.bincount(ids, w * s, B)[ne] / Wb[ne]
        ob[ne] = np.bincount(ids, w * t, B)[ne] / Wb[ne]
        o = np.dot(w, t) / W
        bs = np.dot(w, (s - t) ** 2) / W
        rel = np.dot(Wb, (sb - ob) ** 2) / W
        res = np.dot(Wb, (ob - o) ** 2) / W
        unc = o * (1 - o)
        ds = s - sb[ids]
        wbv = np.dot(w, ds**2) / W
        wbc = np.dot(w, ds * (t - ob[ids])) / W
        tot += (bs, rel, res, unc, wbv, wbc)
    return MurphyDecomposition(*map(float, tot))


def pav(x: Any, y: Any, sample_weight: Any = None) -> np.ndarray:
    """Isotonic (non-decreasing) least-squares fit of ``y`` on ``x`` by PAV.

    Samples with equal ``x`` are pooled first, so equal forecasts always get
    equal fitted values (the CORP convention). Returns the fitted value of every
    sample, in the input order.

    Examples
    --------
    >>> from calipers.metrics.decomposition import pav
    >>> pav([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1]).tolist()
    [0.0, 0.5, 0.5, 1.0]
    """
    from scipy.optimize import isotonic_regression

    xv = np.asarray(x, dtype=np.float64)
    yv = np.asarray(y, dtype=np.float64)
    w = np.ones_like(xv) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    ux, inv = np.unique(xv, return_inverse=True)
    wg = np.bincount(inv, w, len(ux))
    keep = wg > 0
    yg = np.zeros(len(ux))
    yg[keep] = np.bincount(inv, w * yv, len(ux))[keep] / wg[keep]
    fit = np.zeros(len(ux))
    if keep.any():
        fit[keep] = isotonic_regression(yg[keep], weights=wg[keep], increasing=True).x
    # groups with zero total weight take the value of the nearest fitted group below (or above)
    if not keep.all() and keep.any():
        idx = np.maximum.accumulate(np.where(keep, np.arange(len(ux)), -1))
        first = int(np.flatnonzero(keep)[0])
        idx[idx < 0] = first
        fit = fit[idx]
    return fit[inv.reshape(-1)]


@dataclass(frozen=True)
class CORPDecomposition:
    """``score = miscalibration - discrimination + uncertainty`` (CORP)."""

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float


def _score(kind: str, p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    W = w.sum()
    if kind == "brier":
        return float(np.dot(w, (p - y) ** 2) / W)
    with np.errstate(divide="ignore", invalid="ignore"):
        from scipy.special import xlogy  # lazily: scipy.special costs ~0.4 s to import

        ls = -(xlogy(y, p) + xlogy(1 - y, 1 - p))
    return float(np.dot(w, ls) / W)


@fill_doc
def corp_decomposition(
    probs: Any,
    labels: Any,
    *,
    score: Literal["brier", "log"] = "brier",
    lens: Literal["auto", "binary", "classwise", "top_label"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
) -> CORPDecomposition:
    """CORP score decomposition (Dimitriadis, Gneiting & Jordan 2021, eq. 7 and §4).

    The forecast is recalibrated by isotonic regression of the outcome on the
    forecast (PAV, ties pooled); with the climatological forecast ``o`` (the
    observed frequency):

    ``MCB = S(p) - S(p_PAV)``, ``DSC = S(o) - S(p_PAV)``, ``UNC = S(o)``, and
    ``S(p) = MCB - DSC + UNC``. The R package ``reliabilitydiag`` prints the
    same quantities.

    Parameters
    ----------
    {probs}
    {labels}
    score : {"brier", "log"}, default "brier"
        Squared error ``(p - y)^2`` or the binary log score.
    lens : {"auto", "binary", "classwise", "top_label"}, default "auto"
        Binary for 1-D input, else one-vs-rest for every class with the terms
        summed (the multi-class Brier score for ``score="brier"``).
    {sample_weight}
    {logits}
    {classes}

    Returns
    -------
    CORPDecomposition

    Examples
    --------
    >>> import calipers as cp
    >>> d = cp.corp_decomposition([0.1, 0.3, 0.6, 0.9], [0, 1, 0, 1])
    >>> round(d.score, 4), round(d.miscalibration, 4), round(d.discrimination, 4), d.uncertainty
    (0.2175, 0.0925, 0.125, 0.25)
    """
    if score not in ("brier", "log"):
        raise CalibrationInputError(f"score must be 'brier' or 'log'; got {score!r}")
    tot = np.zeros(4)
    for s, t, w in _bernoulli_slices(probs, labels, lens, sample_weight, logits, classes):
        r = pav(s, t, w)
        o = np.full_like(s, np.dot(w, t) / w.sum())
        S_p = _score(score, s, t, w)
        S_r = _score(score, r, t, w)
        S_o = _score(score, o, t, w)
        tot += (S_p, S_p - S_r, S_o - S_r, S_o)
    return CORPDecomposition(*map(float, tot))
