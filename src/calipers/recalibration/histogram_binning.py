"""Histogram binning (Zadrozny & Elkan 2001; Guo et al. 2017, §4.1).

Equal-width bins ``(lo, hi]`` on [0, 1] (the first bin is ``[0, 1/B]``: the
rule of :func:`calipers.ece`, Guo et al., NN_calibration and
verified_calibration); the
recalibrated value of a score is the (weighted) fraction of positives among the
calibration scores in its bin. Two reductions of the multi-class problem:

``mode="one_vs_rest"`` (default)
    one binning per class ``k`` on the probability column ``p_k`` against the
    indicator ``1{y = k}``; the K values of a row are then divided by their sum
    (``renormalize=True``), as netcal's ``HistogramBinning`` does in Chidambaram & Ge (2024)
    (docs/how-calipers-computes.md §7.2 and §10, netcal ``HistogramBinning.py:155,279-280``).
    NN_calibration's ``HistogramBinning(M=15)`` (Gruber & Buettner (2022)) uses the same bins
    without the renormalisation.
``mode="top_label"``
    one binning of the top-label confidence ``max_k p_k`` against the
    correctness ``1{argmax = y}``; the predicted class gets the binned
    confidence ``c'`` and the remaining mass ``1 - c'`` is shared among the
    other classes in proportion to their original probabilities. This is the
    confidence-calibration reduction of Gupta & Ramdas (2022) ("top-label
    calibration and multiclass-to-binary reductions") with one binning shared
    by all predicted classes (Gupta & Ramdas fit one binning per predicted
    class, with equal-mass bins).

Empty bins: NN_calibration gives them the value 0, Kumar et al.'s
``verified_calibration`` (and netcal 1.4) the bin midpoint (docs/how-calipers-computes.md
§10). calipers offers both (``empty="midpoint"``, the default, or ``empty="zero"``); the
midpoint keeps a test score that falls in a bin never seen during fitting at
roughly its own value instead of sending it to 0.

netcal 1.4 (which Chidambaram & Ge (2024) used) agrees with this class (``empty="midpoint"``)
except for scores exactly on an edge ``j/B``: it fits with ``[lo, hi)`` bins
(``scipy.stats.binned_statistic_dd``, after clipping the scores to
``[eps, 1 - eps]``) but predicts with ``(lo, hi]`` bins
(``np.digitize(..., right=True)``), so an edge score is binned differently in
its fit and in its prediction.

The value of a bin: by default (``smoothing="laplace"``) the Laplace estimate
``(k + 1) / (n + 2)`` of its frequency, ``n`` the calibration scores in the bin
and ``k`` the positives among them (weight totals with ``sample_weight``), the
smoothing Zadrozny & Elkan (2001) apply to their probability estimates (their
m-estimate with base rate 1/2 and m = 2) and Platt (1999) to his targets. It is
never exactly 0 or 1, so the NLL of the recalibrated predictions is finite.
``smoothing="none"`` gives the plain frequency ``k / n`` (Guo et al. 2017,
netcal and NN_calibration): the outputs can then be exactly 0 on the true class
(a bin with no positives) and the NLL infinite, which is why Chidambaram & Ge
(2024) Table 1 reports ``inf`` for HB; on ``calipers demo``'s logistic
regression it turns an NLL of 0.1106 into ``inf``, where the Laplace estimate
gives a finite one (see the recalibration guide). Files written by earlier
versions, which have no ``smoothing``, load with ``"none"``: they predict as
their writer did.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..estimators.binning import equal_width_edges
from ._schema import Array, Flag, Integer, OneOf, Schema, Values
from .base import Recalibrator, register

__all__ = ["HistogramBinning"]


def _bin_ids(s: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin of each score with bins ``(lo, hi]`` (first bin ``[0, 1/B]``).

    Scores a hair outside [0, 1] (inside the validation tolerance) fall into
    the first or last bin.
    """
    inner = equal_width_edges(n_bins)[1:-1]
    return np.searchsorted(inner, s, side="left")


def _fit_bins(
    s: np.ndarray,
    target: np.ndarray,
    w: np.ndarray | None,
    n_bins: int,
    empty: str,
    smoothing: str = "none",
) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin positive fraction (empty bins: midpoint or 0) and per-bin weight.

    ``smoothing="laplace"``: ``(pos + 1) / (tot + 2)`` in the bins with data.
    """
    ids = _bin_ids(s, n_bins)
    wt = np.ones_like(s) if w is None else w
    tot = np.bincount(ids, weights=wt, minlength=n_bins)
    pos = np.bincount(ids, weights=wt * target, minlength=n_bins)
    if empty == "midpoint":
        fill = (np.arange(n_bins) + 0.5) / n_bins
    else:
        fill = np.zeros(n_bins)
    num, den = (pos + 1.0, tot + 2.0) if smoothing == "laplace" else (pos, tot)
    with np.errstate(invalid="ignore", divide="ignore"):
        val = np.where(tot > 0, num / np.where(tot > 0, den, 1.0), fill)
    return val, tot


def _renormalize_rows(Q: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; a row summing to 0 becomes uniform (1/K)."""
    s = Q.sum(axis=1, keepdims=True)
    k = Q.shape[1]
    zero = s[:, 0] <= 0
    out = Q / np.where(s > 0, s, 1.0)
    if np.any(zero):
        out[zero] = 1.0 / k
    return out


def _bin_shapes(v: Values) -> list[tuple[int | str | None, ...]]:
    """``(K, B)`` one-vs-rest (``(B,)`` also for a binary fit); ``(B,)`` top-label."""
    B = v["n_bins"]
    if v["mode"] == "top_label":
        return [(B,)]
    return [("n_classes_", B), (B,)] if v["n_classes_"] == 2 else [("n_classes_", B)]


def _bins_consistent(v: Values) -> str | None:
    """Values and weights have one shape; a bin without weight holds the empty-bin value."""
    vals, wts = v["bin_values_"], v["bin_weights_"]
    if vals.shape != wts.shape:
        return (
            f"fields 'bin_values_' and 'bin_weights_' must have one shape; got {vals.shape} "
            f"and {wts.shape}"
        )
    B = v["n_bins"]
    fill = (np.arange(B) + 0.5) / B if v["empty"] == "midpoint" else np.zeros(B)
    wrong = (wts == 0) & (vals != fill)
    if wrong.any():
        idx = tuple(int(i) for i in np.argwhere(wrong)[0])
        return (
            f"field 'bin_values_' must hold the empty-bin value ({v['empty']}: "
            f"{float(fill[idx[-1]])!r}) where 'bin_weights_' is 0; entry {idx} is "
            f"{float(vals[idx])!r}"
        )
    return None


@register
class HistogramBinning(Recalibrator):
    """Histogram binning recalibration (Zadrozny & Elkan 2001; Guo et al. 2017).

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). See the module docstring for the two modes and the two
    empty-bin conventions.

    Not accuracy-preserving (the binned values can reorder or tie the classes
    of a row, and a tie goes to the lowest class index) and not injective (all
    scores of a bin map to one value).

    Parameters
    ----------
    n_bins : int, default 15
        Number B of equal-width bins ``(lo, hi]`` on [0, 1] (15 as in Guo et
        al. 2017, netcal and Chidambaram & Ge (2024)).
    mode : {"one_vs_rest", "top_label"}, default "one_vs_rest"
        Binning of every class column (then row renormalisation), or of the
        top-label confidence only.
    renormalize : bool, default True
        ``one_vs_rest`` only: divide each row of the K binned values by its sum
        (netcal; Chidambaram & Ge (2024)). A row whose K values are all 0 becomes uniform
        (1/K). With ``False`` the raw one-vs-rest values are returned (they do
        not sum to 1: NN_calibration's convention). Ignored by ``top_label``
        (rows sum to 1 by construction) and for binary ``(n,)`` input.
    empty : {"midpoint", "zero"}, default "midpoint"
        Value of a bin without calibration data: its midpoint ``(b + 1/2)/B``
        (Kumar et al.'s ``verified_calibration``, netcal) or 0 (NN_calibration).
    smoothing : {"laplace", "none"}, default "laplace"
        Value of a bin with data: the Laplace estimate ``(k + 1) / (n + 2)``
        (never 0 or 1: a finite NLL) or the frequency ``k / n`` (the exact
        form of Guo et al. 2017 and netcal; outputs can be 0 or 1).

    Attributes
    ----------
    bin_values_ : numpy.ndarray
        Recalibrated value of each bin: shape ``(K, n_bins)`` for
        ``one_vs_rest`` (row k: class k), ``(n_bins,)`` for ``top_label`` and
        for binary input (probability of class 1, or top-label confidence).
    bin_weights_ : numpy.ndarray
        Calibration weight (count without ``sample_weight``) in each bin, same
        shape.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.recalibration.histogram_binning import HistogramBinning
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
    >>> y = np.array([0, 1, 0, 0])
    >>> hb = HistogramBinning(n_bins=2, renormalize=False, smoothing="none").fit(p, y)
    >>> hb.bin_values_          # class 0: bin (.5, 1] holds 3 of 4 positives
    array([[0.25, 0.75],
           [0.25, 0.75]])
    >>> hb.predict_proba(np.array([[0.95, 0.05]]))
    array([[0.75, 0.25]])
    >>> HistogramBinning(n_bins=2, renormalize=False).fit(p, y).bin_values_  # (3+1)/(4+2)
    array([[0.25      , 0.66666667],
           [0.33333333, 0.75      ]])
    >>> top = HistogramBinning(n_bins=2, mode="top_label", smoothing="none").fit(p, y)
    >>> top.predict_proba(np.array([[0.6, 0.4], [0.2, 0.8]]))
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "n_bins": Integer(lo=1),
            "mode": OneOf(("one_vs_rest", "top_label")),
            "renormalize": Flag(),
            "empty": OneOf(("midpoint", "zero")),
            "smoothing": OneOf(("laplace", "none")),
        },
        state={
            "bin_values_": Array(_bin_shapes, lo=0.0, hi=1.0),
            "bin_weights_": Array(_bin_shapes, lo=0.0),
        },
        state_checks=(_bins_consistent,),
        # files written before the parameter existed hold unsmoothed bin frequencies
        legacy_params={"smoothing": "none"},
    )

    def __init__(
        self,
        n_bins: int = 15,
        mode: Literal["one_vs_rest", "top_label"] = "one_vs_rest",
        renormalize: bool = True,
        empty: Literal["midpoint", "zero"] = "midpoint",
        smoothing: Literal["laplace", "none"] = "laplace",
    ) -> None:
        self.n_bins = n_bins
        self.mode = mode
        self.renormalize = renormalize
        self.empty = empty
        self.smoothing = smoothing

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        B = int(self.n_bins)  # checked by the schema (a positive integer)
        sm = str(self.smoothing)  # checked by the schema
        if S.ndim == 1:
            if self.mode == "top_label":
                conf, correct = _binary_top(S, y)
                self.bin_values_, self.bin_weights_ = _fit_bins(conf, correct, w, B, self.empty, sm)
            else:
                t = (y == 1).astype(np.float64)
                self.bin_values_, self.bin_weights_ = _fit_bins(S, t, w, B, self.empty, sm)
            return
        if self.mode == "top_label":
            pred = np.argmax(S, axis=1)
            conf = S[np.arange(S.shape[0]), pred]
            correct = (pred == y).astype(np.float64)
            self.bin_values_, self.bin_weights_ = _fit_bins(conf, correct, w, B, self.empty, sm)
            return
        K = S.shape[1]
        vals = np.empty((K, B))
        wts = np.empty((K, B))
        for k in range(K):
            vals[k], wts[k] = _fit_bins(S[:, k], (y == k).astype(np.float64), w, B, self.empty, sm)
        self.bin_values_, self.bin_weights_ = vals, wts

    def _transform(self, S: np.ndarray) -> np.ndarray:
        B = int(self.n_bins)
        values = np.asarray(self.bin_values_, dtype=np.float64)
        if self.mode == "one_vs_rest" and S.ndim != values.ndim:
            # fitted on (n, 2) columns and given P(y = 1), or the other way round:
            # the same map, on the scores' other form ([1 - p, p] <-> p)
            if S.ndim == 1:
                return self._transform(np.stack([1.0 - S, S], axis=1))[:, 1]
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if S.ndim == 1:
            if self.mode == "top_label":
                pred = S > 0.5
                c = values[_bin_ids(np.maximum(S, 1.0 - S), B)]
                return np.where(pred, c, 1.0 - c)
            return values[_bin_ids(S, B)]
        n, K = S.shape
        if self.mode == "top_label":
            rows = np.arange(n)
            pred = np.argmax(S, axis=1)
            conf = S[rows, pred]
            c = values[_bin_ids(conf, B)]
            others = S.copy()
            others[rows, pred] = 0.0
            rest = others.sum(axis=1)
            share = np.empty_like(S)
            pos = rest > 0
            share[pos] = others[pos] / rest[pos, None]
            share[~pos] = 1.0 / (K - 1)  # all other mass was 0: share it equally
            out = share * (1.0 - c)[:, None]
            out[rows, pred] = c
            return out
        Q = np.empty_like(S)
        for k in range(K):
            Q[:, k] = values[k][_bin_ids(S[:, k], B)]
        return _renormalize_rows(Q) if self.renormalize else Q


def _binary_top(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-label confidence and correctness of binary P(y = 1) scores (p = 0.5 predicts 0)."""
    pred = (p > 0.5).astype(np.int64)
    return np.maximum(p, 1.0 - p), (pred == y).astype(np.float64)
