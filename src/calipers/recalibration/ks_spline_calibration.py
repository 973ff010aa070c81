"""KS-spline calibration: the derivative of a spline fitted to cumulative accuracy (Gupta et al. 2021).

Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley (2021), "Calibration
of neural networks using splines" (ICLR). The calibration scores are sorted,
``s_(1) <= ... <= s_(n)`` with their labels ``y_(i)`` (the correctness of the
top-label prediction, or ``1{y = k}`` for a class column), and the
cumulative curves ``h_i = (1/n) sum_{j <= i} y_(j)`` (accuracy) and
``S_i = (1/n) sum_{j <= i} s_(j)`` (score) are read at the fractions
``t_i = (i - 1) / (n - 1)``. A natural cubic spline ``g`` with ``n_knots``
knots equally spaced on [0, 1] (second derivative 0 at 0 and 1) is fitted by
least squares to ``h_i - S_i``; the recalibrated score of ``s_(i)`` is
``g'(t_i) + s_(i)`` (the slope of the cumulative accuracy, the derivative of
``h - S`` plus the slope ``s_(i)`` of ``S``), and a new score is mapped by
linear interpolation between the sorted calibration scores (the end values
outside their range). Where the cumulative accuracy follows the cumulative
score (the Kolmogorov-Smirnov distance of the paper is 0) the map is the
identity.

As the authors' code (``spline-calibration``, ``get_recalibration_function``
with ``spline_method="natural"``, ``splines=6``), with three differences:
tied calibration scores (which the authors' interpolation treats by the
order of a non-stable sort) get the mean of their values; the sort is
stable; and the recalibrated value is clipped to [0, 1] (a derivative can
step outside it).

``mode="top_label"`` (default, the paper's): one map of the top-label
confidence against the correctness; the predicted class gets the mapped
confidence ``c'`` and the other classes share ``1 - c'`` in proportion to
their probabilities (binary ``(n,)`` scores: the confidence ``max(p, 1 - p)``,
the prediction ``p > 1/2``). ``mode="one_vs_rest"``: one map per class column
(binary: of P(y = 1)), rows divided by their sums.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._schema import Array, ArrayList, Integer, OneOf, Schema, Values
from .base import Recalibrator, register
from .histogram_binning import _binary_top, _renormalize_rows
from .spline_calibration import natural_cubic_basis

__all__ = ["KSSplineCalibration"]


def ks_spline_map(s: np.ndarray, y: np.ndarray, n_knots: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct scores and their recalibrated values (unclipped)."""
    order = np.argsort(s, kind="stable")
    ss = s[order]
    ys = y[order].astype(np.float64)
    n = ss.shape[0]
    h = np.cumsum(ys) / n
    S = np.cumsum(ss) / n
    t = np.linspace(0.0, 1.0, n)
    knots = np.linspace(0.0, 1.0, n_knots)
    beta = np.linalg.lstsq(natural_cubic_basis(t, knots), h - S, rcond=None)[0]
    acc = natural_cubic_basis(t, knots, derivative=True) @ beta + ss
    ux, start = np.unique(ss, return_index=True)
    counts = np.diff(np.append(start, n))
    return ux, np.add.reduceat(acc, start) / counts


def _n_maps(v: Values) -> list[int]:
    k = v["n_classes_"]
    return [1] if (k == 2 or v["mode"] == "top_label") else [k]


def _top_rows(S: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Rows whose arg-max gets ``c``; the others share ``1 - c`` in proportion."""
    n, K = S.shape
    rows = np.arange(n)
    pred = np.argmax(S, axis=1)
    others = S.copy()
    others[rows, pred] = 0.0
    rest = others.sum(axis=1)
    share = np.full_like(S, 1.0 / (K - 1))
    pos = rest > 0
    share[pos] = others[pos] / rest[pos, None]
    out = share * (1.0 - c)[:, None]
    out[rows, pred] = c
    return out


@register
class KSSplineCalibration(Recalibrator):
    """Spline calibration of Gupta et al. (2021): the slope of the cumulative accuracy.

    See the module docstring for the construction and the two modes.

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). Not accuracy-preserving (the mapped confidence can
    fall below another class's share) and not injective (flat where the
    map is clipped, and the map need not be monotone).

    Parameters
    ----------
    n_knots : int, default 6
        Knots of the natural cubic spline, equally spaced on [0, 1] (the
        authors' ``splines=6``); at least 2 (2 gives a straight line, one
        constant slope).
    mode : {"top_label", "one_vs_rest"}, default "top_label"
        One map of the top-label confidence (the paper's), or one per class
        column with rows renormalised.

    Attributes
    ----------
    thresholds_ : list of numpy.ndarray
        The distinct calibration scores of each map, increasing.
    values_ : list of numpy.ndarray
        Their recalibrated values (before clipping to [0, 1]).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.ks_spline_calibration import KSSplineCalibration
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 20000)
    >>> y = (rng.random(20000) < 0.5 + 0.6 * (p - 0.5)).astype(int)   # over-confident
    >>> ks = KSSplineCalibration(mode="one_vs_rest").fit(p, y)
    >>> np.round(ks.predict_proba(np.array([0.1, 0.5, 0.9])), 1)
    array([0.3, 0.5, 0.7])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={"n_knots": Integer(lo=2), "mode": OneOf(("top_label", "one_vs_rest"))},
        state={
            "thresholds_": ArrayList(Array((None,), order="increasing"), _n_maps),
            "values_": ArrayList(
                Array((None,)), lambda v: [len(v["thresholds_"])], like="thresholds_"
            ),
        },
    )

    def __init__(
        self, n_knots: int = 6, mode: Literal["top_label", "one_vs_rest"] = "top_label"
    ) -> None:
        self.n_knots = n_knots
        self.mode = mode

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if w is not None:
            raise CalibrationInputError(
                "KSSplineCalibration does not take sample_weight: its cumulative curves are "
                "read at the ranks of the rows (repeat the rows instead)"
            )
        if S.ndim == 2 and S.shape[1] == 2:
            S = np.ascontiguousarray(S[:, 1])
        if self.mode == "top_label":
            if S.ndim == 1:
                conf, correct = _binary_top(S, y)
            else:
                pred = np.argmax(S, axis=1)
                conf = S[np.arange(S.shape[0]), pred]
                correct = (pred == y).astype(np.float64)
            pairs = [(conf, correct)]
        elif S.ndim == 1:
            pairs = [(S, (y == 1).astype(np.float64))]
        else:
            pairs = [(S[:, k], (y == k).astype(np.float64)) for k in range(S.shape[1])]
        n = S.shape[0]
        if n < int(self.n_knots):
            raise CalibrationInputError(
                f"KSSplineCalibration needs at least n_knots = {self.n_knots} calibration rows; "
                f"got {n}"
            )
        thr, val = [], []
        for s, t in pairs:
            a, b = ks_spline_map(np.ascontiguousarray(s), t, int(self.n_knots))
            thr.append(a)
            val.append(b)
        self.thresholds_, self.values_ = thr, val

    def _map(self, x: np.ndarray, j: int) -> np.ndarray:
        xs = np.asarray(self.thresholds_[j], dtype=np.float64)
        vs = np.asarray(self.values_[j], dtype=np.float64)
        return np.clip(np.interp(x, xs, vs), 0.0, 1.0)

    def _transform(self, S: np.ndarray) -> np.ndarray:
        two = S.ndim == 2 and S.shape[1] == 2
        if two:
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if self.mode == "top_label":
            if S.ndim == 1:
                c = self._map(np.maximum(S, 1.0 - S), 0)
                return np.where(S > 0.5, c, 1.0 - c)
            conf = S.max(axis=1)
            return _top_rows(S, self._map(conf, 0))
        if S.ndim == 1:
            return self._map(S, 0)
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = self._map(S[:, k], k)
        return _renormalize_rows(Q)
