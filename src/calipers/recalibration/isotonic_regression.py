"""Isotonic regression recalibration, one-vs-rest (Zadrozny & Elkan 2002).

For every class ``k`` a non-decreasing function ``g_k`` is fitted by weighted
least squares to the pairs ``(p_ik, 1{y_i = k})`` of the calibration split
(the pool-adjacent-violators solution, computed by
:func:`scipy.optimize.isotonic_regression`); a test row becomes
``(g_1(p_1), ..., g_K(p_K))``, divided by its sum when ``renormalize=True``.
This is the construction of netcal's ``IsotonicRegression`` and of
robustness_metrics that Chidambaram & Ge (2024) Table 1 uses (docs/how-calipers-computes.md §7.2, §10: one
isotonic fit per class on the softmax columns, then rows renormalised).

Fitting details (the scikit-learn ``IsotonicRegression`` conventions, which
netcal wraps): calibration scores that are exactly equal are merged first
(their targets averaged with their weights, their weights summed); the PAV
solution is stored at the distinct scores, and between them a test score is
mapped by linear interpolation (``interpolation="linear"``, scikit-learn's
rule) or by the value at the largest fitted score not above it
(``interpolation="step"``, a right-continuous step function whose values are
exactly the fitted bin means). Outside the fitted range the end values are
used (scikit-learn's ``out_of_bounds="clip"``). scikit-learn merges scores
closer than about 1e-15; calipers merges only exact ties.

Popordanoska et al. (2024) fits a different variant (min-max-scaled scores, no
renormalisation, outputs clamped to [1e-7, 1 - 1e-7]; docs/how-calipers-computes.md §10);
with ``renormalize=False, smoothing="none"`` this class gives the unscaled,
unclamped version.

Smoothing (``smoothing="laplace"``, the default): the PAV solution is
constant on blocks of consecutive scores (isotonic regression is histogram
binning with bins chosen by the data); each block's value, the frequency
``k / n`` of its ``n`` calibration scores with ``k`` positives (weight totals
with ``sample_weight``), becomes the Laplace estimate ``(k + 1) / (n + 2)``
(Zadrozny & Elkan 2001; the value ``HistogramBinning`` gives its bins), and
where that reverses the order of two adjacent blocks (small blocks only) they
are pooled again (PAV with weights ``n + 2``), so the map stays non-decreasing.
No output is then exactly 0 or 1 and the NLL is finite. With
``smoothing="none"`` (the exact form of scikit-learn and netcal) outputs can
be exactly 0 on the true class, so the NLL can be infinite (Chidambaram & Ge
(2024) Table 1 reports ``inf`` for IR; on ``calipers demo``'s logistic
regression the NLL goes from 0.1106 to ``inf``). Files written by earlier
versions, which have no ``smoothing``, load with ``"none"``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._schema import Array, ArrayList, Flag, OneOf, Schema, Values
from .base import Recalibrator, register
from .histogram_binning import _renormalize_rows

__all__ = ["IsotonicRegression"]


def _fit_isotonic(
    x: np.ndarray, t: np.ndarray, w: np.ndarray | None, smoothing: str = "none"
) -> tuple[np.ndarray, np.ndarray]:
    """Knots ``(x_j, g_j)`` of the weighted PAV fit of ``t`` on ``x`` (non-decreasing).

    Only the end points of each constant run are kept, which changes neither
    the linear interpolation nor the step function. ``smoothing="laplace"``:
    each constant run's value ``k / n`` becomes ``(k + 1) / (n + 2)``, then
    runs are pooled again (weights ``n + 2``) where that broke the order.
    """
    from scipy.optimize import isotonic_regression

    if w is not None:
        keep = w > 0
        x, t, w = x[keep], t[keep], w[keep]
    wt = np.ones_like(x) if w is None else w
    # tied scores are merged below, so the order among ties does not matter
    order = np.argsort(x)
    xs, ts, ws = x[order], t[order], wt[order]
    ux, start = np.unique(xs, return_index=True)
    wsum = np.add.reduceat(ws, start)
    ym = np.add.reduceat(ws * ts, start) / wsum
    g = np.asarray(isotonic_regression(ym, weights=wsum, increasing=True).x, dtype=np.float64)
    g = np.clip(g, 0.0, 1.0)  # PAV means of 0/1 targets; removes last-ulp excursions only
    if smoothing == "laplace":
        run = np.concatenate([[0], np.cumsum(g[1:] != g[:-1])])  # constant run of each score
        n_run = np.bincount(run, weights=wsum)
        k_run = np.bincount(run, weights=wsum * ym)
        v = np.asarray(
            isotonic_regression((k_run + 1.0) / (n_run + 2.0), weights=n_run + 2.0).x,
            dtype=np.float64,
        )
        g = np.clip(v, 0.0, 1.0)[run]
    keep_pt = np.ones(len(ux), dtype=bool)
    if len(ux) > 2:
        keep_pt[1:-1] = (g[1:-1] != g[:-2]) | (g[1:-1] != g[2:])
    return ux[keep_pt], g[keep_pt]


def _predict(
    x: np.ndarray, knots: np.ndarray, values: np.ndarray, interpolation: str
) -> np.ndarray:
    if interpolation == "linear":
        return np.interp(x, knots, values)
    j = np.searchsorted(knots, x, side="right") - 1
    return values[np.clip(j, 0, len(knots) - 1)]


def _n_maps(v: Values) -> list[int]:
    """One map per class, or one for a binary fit on P(y = 1)."""
    k = v["n_classes_"]
    return [k, 1] if k == 2 else [k]


@register
class IsotonicRegression(Recalibrator):
    """One-vs-rest isotonic regression recalibration (Zadrozny & Elkan 2002).

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). Not accuracy-preserving (the per-class maps differ and
    are flat on whole intervals, so classes can be reordered or tied; ties go
    to the lowest class index) and not injective.

    Parameters
    ----------
    renormalize : bool, default True
        Divide each row of the K fitted values by its sum (netcal; Chidambaram & Ge (2024)).
        A row whose K values are all 0 becomes uniform (1/K). With ``False``
        the raw one-vs-rest values are returned (they need not sum to 1).
        Binary ``(n,)`` input has a single fit and no renormalisation.
    interpolation : {"linear", "step"}, default "linear"
        Between fitted scores: linear interpolation (scikit-learn and netcal)
        or the step function (the value at the largest fitted score ``<= x``).
        Outside the fitted range the end values are used in both cases.
    smoothing : {"laplace", "none"}, default "laplace"
        The value of each constant run of the fit: the Laplace estimate
        ``(k + 1) / (n + 2)`` (never 0 or 1: a finite NLL) or the frequency
        ``k / n`` (scikit-learn's and netcal's exact isotonic regression).

    Attributes
    ----------
    thresholds_ : list of numpy.ndarray
        Per class (one entry for binary input) the increasing fitted scores
        (end points of the constant runs of the PAV solution).
    values_ : list of numpy.ndarray
        The fitted values at ``thresholds_``, non-decreasing, in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.isotonic_regression import IsotonicRegression
    >>> p1 = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])      # binary: P(y = 1)
    >>> y = np.array([0, 1, 0, 1, 1, 1])
    >>> ir = IsotonicRegression(smoothing="none").fit(p1, y)
    >>> ir.thresholds_[0], ir.values_[0]                    # PAV pools 0.3 and 0.4
    (array([0.1, 0.3, 0.4, 0.6, 0.9]), array([0. , 0.5, 0.5, 1. , 1. ]))
    >>> ir.predict_proba(np.array([0.05, 0.2, 0.5, 0.95]))
    array([0.  , 0.25, 0.75, 1.  ])
    >>> IsotonicRegression(interpolation="step", smoothing="none").fit(p1, y).predict_proba(
    ...     np.array([0.2, 0.5])
    ... )
    array([0. , 0.5])
    >>> IsotonicRegression().fit(p1, y).values_[0]         # (0+1)/(1+2), (1+1)/(2+2), (3+1)/(3+2)
    array([0.33333333, 0.5       , 0.5       , 0.8       , 0.8       ])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "renormalize": Flag(),
            "interpolation": OneOf(("linear", "step")),
            "smoothing": OneOf(("laplace", "none")),
        },
        state={
            # the fitted scores strictly increase; the fitted values do not decrease
            "thresholds_": ArrayList(Array((None,), order="increasing"), _n_maps),
            "values_": ArrayList(
                Array((None,), lo=0.0, hi=1.0, order="non-decreasing"),
                lambda v: [len(v["thresholds_"])],
                like="thresholds_",
            ),
        },
        # files written before the parameter existed hold unsmoothed fits
        legacy_params={"smoothing": "none"},
    )

    def __init__(
        self,
        renormalize: bool = True,
        interpolation: Literal["linear", "step"] = "linear",
        smoothing: Literal["laplace", "none"] = "laplace",
    ) -> None:
        self.renormalize = renormalize
        self.interpolation = interpolation
        self.smoothing = smoothing

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if self.interpolation not in ("linear", "step"):
            raise CalibrationInputError(
                "IsotonicRegression: interpolation must be 'linear' or 'step'; "
                f"got {self.interpolation!r}"
            )
        # one transpose: every column is then contiguous for its sort
        cols = [S] if S.ndim == 1 else list(np.ascontiguousarray(S.T))
        targets = [y == 1] if S.ndim == 1 else [y == k for k in range(S.shape[1])]
        thr, val = [], []
        for x, t in zip(cols, targets, strict=True):
            a, b = _fit_isotonic(x, t.astype(np.float64), w, str(self.smoothing))
            thr.append(a)
            val.append(b)
        self.thresholds_ = thr
        self.values_ = val

    def _transform(self, S: np.ndarray) -> np.ndarray:
        knots = [np.asarray(a, dtype=np.float64) for a in self.thresholds_]
        vals = [np.asarray(b, dtype=np.float64) for b in self.values_]
        if (S.ndim == 1) != (len(knots) == 1):
            # fitted on (n, 2) columns and given P(y = 1), or the other way round:
            # the same map, on the scores' other form ([1 - p, p] <-> p)
            if S.ndim == 1:
                return self._transform(np.stack([1.0 - S, S], axis=1))[:, 1]
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if S.ndim == 1:
            return _predict(S, knots[0], vals[0], self.interpolation)
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = _predict(S[:, k], knots[k], vals[k], self.interpolation)
        return _renormalize_rows(Q) if self.renormalize else Q
