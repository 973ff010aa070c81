"""Inductive Venn-Abers predictors (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015).

A Venn-Abers predictor turns the score ``s`` of a test object into two
probabilities of class 1 (the *multiprobability*): ``p0`` is the value at
``s`` of the isotonic regression fitted to the calibration split with the
test object added with label 0, and ``p1`` with label 1 (Vovk & Petej 2014).
One of the two is the prediction of a Venn predictor, which is perfectly
calibrated in the sense of Vovk & Petej (2014): the probability chosen by
the true label, ``p_y``, satisfies ``P(y = 1 | p_y) = p_y`` when the
calibration and test pairs are exchangeable; the interval ``[p0, p1]`` is
not a confidence interval for the true conditional probability. The point
prediction is the log-loss merge ``p = p1 / (1 - p0 + p1)`` (Vovk, Petej &
Fedorova 2015, section 4), a number strictly between 0 and 1.

Computation (Vovk, Petej & Fedorova 2015, section 3, algorithms 1-6): the
isotonic values ``p1`` and ``p0`` depend on the test score only through its
position among the ``k`` distinct calibration scores, so both are tabulated
once from the greatest convex minorant of the cumulative sum diagram, swept
by a stack: ``O(n log n)`` for the sort, then ``O(n)``. A prediction is one
binary search per score (``O(log k)``); the fit is never repeated per test
object. Tied calibration scores are pooled, and a test score equal to a
calibration score is pooled with it, as the isotonic regression does.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..validation import CalibrationInputError
from ._inputs import _as_input
from ._schema import Array, ArrayList, OneOf, Schema, Values
from .base import Recalibrator, register

__all__ = ["VennAbers"]


def _upper_slopes(w: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator of ``p1`` before each block of tied scores.

    ``w`` holds the number of calibration scores of each distinct score (in
    increasing order) and ``pos`` the number of positives among them. Entry
    ``i`` is the isotonic value of a test object of label 1 placed before
    block ``i`` (after blocks ``0 .. i-1``): the slope of the greatest convex
    minorant of the cumulative sum diagram over the test object's step.

    The diagram is read with the test object moved from the left end to the
    right one unit at a time (a block of ``w`` tied scores as ``w`` units of
    label ``pos / w``): the points left of the test object are those of the
    diagram shifted by ``(-1, -1)``, and each move lowers one point. A stack
    holds the minorant from the left end of the test object's segment
    onwards; points left of it never return (Vovk, Petej & Fedorova 2015,
    algorithm 2).
    """
    from scipy.optimize import isotonic_regression

    k = len(w)
    n = int(w.sum())
    ends = np.concatenate([[0], np.cumsum(w)])  # cumulative counts W_0 .. W_k
    ycum = np.concatenate([[0.0], np.cumsum(pos)])  # cumulative positives Y_0 .. Y_k
    if n == k:  # no ties: one unit per block
        height = ycum
    else:  # inside a block of ties the diagram is the straight segment between its ends
        block = np.repeat(np.arange(k), w)
        step = np.arange(n) - ends[block] + 1
        height = np.empty(n + 1)
        height[0] = 0.0
        height[1:] = ycum[block] + step * (pos[block] / w[block])
        height[ends] = ycum  # exact at the ends of the blocks
    # the minorant with the test object first: (-1, -1), then the diagram; its corners
    # are where the isotonic regression of [1, block means] rises
    fit = isotonic_regression(
        np.concatenate([[1.0], pos / w]), weights=np.concatenate([[1.0], w.astype(np.float64)])
    ).x
    corners = np.unique(np.concatenate([[-1], ends[np.flatnonzero(fit[1:] > fit[:-1])], [n]]))
    hx = corners[::-1].astype(np.float64).tolist()  # the stack: its end is the leftmost point
    hy = np.concatenate([[-1.0], height[corners[1:]]])[::-1].tolist()
    num = np.empty(k)
    den = np.empty(k)
    lowered = (height[1:] - 1.0).tolist()  # the point at unit j once the test object passed it
    starts = ends[:-1].tolist()
    starts.append(-1)
    b, nxt = 0, starts[0]
    for j, qy in enumerate(lowered):
        if j == nxt:  # the test object stands before block b: read the slope of its segment
            num[b] = hy[-2] - hy[-1]
            den[b] = hx[-2] - hx[-1]
            b += 1
            nxt = starts[b]
        ax, ay = hx[-1], hy[-1]
        if (hx[-2] - ax) * (qy - ay) > (hy[-2] - ay) * (j - ax):
            continue  # the lowered point stays above the minorant
        hx.pop()
        hy.pop()
        while len(hx) >= 2 and (hx[-2] - j) * (hy[-1] - qy) >= (hy[-2] - qy) * (hx[-1] - j):
            hx.pop()
            hy.pop()
        hx.append(float(j))
        hy.append(qy)
    return num, den


def venn_abers_tables(
    scores: np.ndarray, labels: np.ndarray, counts: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct calibration scores and the tables of ``p0`` and ``p1``.

    Returns ``(c, p0, p1)``: ``c`` the ``k`` distinct scores in increasing
    order; a test score ``s`` has ``p0 = p0[searchsorted(c, s, "right")]``
    and ``p1 = p1[searchsorted(c, s, "left")]`` (tables of ``k + 1`` values,
    ``p0[0] = 0``, ``p1[k] = 1``), as in Vovk, Petej & Fedorova (2015),
    algorithms 5-6. ``labels`` are 0/1; ``counts`` (non-negative integers)
    repeat rows.
    """
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(labels, dtype=np.float64)
    if counts is not None:
        keep = counts > 0
        s, t, counts = s[keep], t[keep], counts[keep]
    c, inv = np.unique(s, return_inverse=True)
    if counts is None:
        w = np.bincount(inv)
        pos = np.bincount(inv, weights=t)
    else:
        w = np.rint(np.bincount(inv, weights=counts)).astype(np.int64)
        pos = np.rint(np.bincount(inv, weights=counts * t))
    n1, d1 = _upper_slopes(w, pos)
    p1 = np.append(n1 / d1, 1.0)
    # p0 is p1 of the mirrored problem (scores reversed, labels flipped), complemented
    n0, d0 = _upper_slopes(w[::-1], (w - pos)[::-1])
    p0 = np.append((d0 - n0) / d0, 0.0)[::-1]
    # both are non-decreasing in the score; remove last-ulp dips from tied blocks
    return c, np.maximum.accumulate(p0), np.maximum.accumulate(p1)


def _lookup(
    c: np.ndarray, t0: np.ndarray, t1: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(p0, p1)`` of the scores ``s``: one binary search each (O(log k))."""
    return t0[np.searchsorted(c, s, side="right")], t1[np.searchsorted(c, s, side="left")]


def _merge(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """The log-loss merge ``p1 / (1 - p0 + p1)`` (Vovk, Petej & Fedorova 2015)."""
    return p1 / (1.0 - p0 + p1)


def _n_maps(v: Values) -> list[int]:
    """One map for binary scores; K (one-vs-rest) or K (K - 1) / 2 (one-vs-one) otherwise."""
    k = int(v["n_classes_"])
    if k == 2:
        return [1]
    return [k] if v["multiclass"] == "one_vs_rest" else [k * (k - 1) // 2]


def _tables_agree(v: Values) -> str | None:
    """Tables one longer than the scores, starting at 0 and ending at 1, with ``p0 <= p1``."""
    for i, (c, t0, t1) in enumerate(zip(v["thresholds_"], v["p0_"], v["p1_"], strict=True)):
        if len(t0) != len(c) + 1 or len(t1) != len(c) + 1:
            return f"p0_[{i}] and p1_[{i}] must hold len(thresholds_[{i}]) + 1 values"
        if t0[0] != 0.0 or t1[-1] != 1.0:
            return f"p0_[{i}] must start at 0 and p1_[{i}] end at 1"
        if np.any(t0 > t1 + 1e-12) or np.any(t0[1:] > t1[:-1] + 1e-12):
            return f"p0_[{i}] must not exceed p1_[{i}] (the lower probability is above the upper)"
    return None


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(k) for b in range(a + 1, k)]


def _pair_scores(S: np.ndarray, a: int, b: int) -> np.ndarray:
    """``p_b / (p_a + p_b)`` (0.5 where both are 0): the binary score of the pair (a, b)."""
    tot = S[:, a] + S[:, b]
    with np.errstate(invalid="ignore", divide="ignore"):
        q = S[:, b] / tot
    return np.where(tot > 0, q, 0.5)


@register
class VennAbers(Recalibrator):
    """Inductive Venn-Abers predictor, IVAP (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015).

    ``fit`` on a calibration split tabulates, for every position of a test
    score among the calibration scores, the isotonic values ``p0`` (test
    object added with label 0) and ``p1`` (label 1); :meth:`predict_interval`
    returns ``(p0, p1)`` and :meth:`predict_proba` the merged probability
    ``p1 / (1 - p0 + p1)``, never exactly 0 or 1. The fitted state is those
    tables (the distinct calibration scores and ``2 (k + 1)`` probabilities),
    not the calibration split: a loaded file predicts by binary search
    without refitting, and holds no labels.

    Natural input: probabilities (logits pass through a sigmoid or softmax;
    any increasing transform of the scores gives the same predictions).
    Binary scores use P(y = 1); ``(n, 2)`` scores their second column. With
    more than two classes, ``multiclass="one_vs_one"`` (the default, that of
    the ``venn-abers`` package): one predictor per pair of classes on the
    calibration rows of the pair, with score ``p_b / (p_a + p_b)``, merged by
    ``p_i = 1 / (sum_{j != i} 1 / p_{i|ij} - (K - 2))`` (Price, Knerr,
    Personnaz & Dreyfus 1995) and rows divided by their sums;
    ``"one_vs_rest"``: one predictor per class on column ``i`` against the
    rest, rows divided by their sums.

    Not accuracy-preserving (the maps are flat on whole intervals and differ
    per class), not injective. ``sample_weight`` must hold integers: a
    weight repeats its row (the guarantee counts exchangeable objects; a
    fractional weight has no such reading and is refused).

    Parameters
    ----------
    multiclass : {"one_vs_one", "one_vs_rest"}, default "one_vs_one"
        How more than two classes are reduced to binary problems.

    Attributes
    ----------
    thresholds_ : list of numpy.ndarray
        Per binary problem the distinct calibration scores, increasing.
    p0_, p1_ : list of numpy.ndarray
        Per binary problem the tables of ``p0`` and ``p1`` (``k + 1`` values,
        non-decreasing): a score ``s`` has ``p0 = p0_[searchsorted(thresholds_,
        s, "right")]`` and ``p1 = p1_[searchsorted(thresholds_, s, "left")]``.
    pairs_ : list of (int, int)
        With ``multiclass="one_vs_one"`` and K > 2: the class pair of each map.

    References
    ----------
    Vovk, V. & Petej, I. (2014). Venn-Abers predictors. UAI.
    Vovk, V., Petej, I. & Fedorova, V. (2015). Large-scale probabilistic
    predictors with and without guarantees of validity. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> s = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])    # P(y = 1) on the calibration split
    >>> y = np.array([0, 1, 0, 1, 1, 1])
    >>> va = cp.VennAbers().fit(s, y)
    >>> p0, p1 = va.predict_interval(np.array([0.35, 0.95]))
    >>> p0, p1   # 0.35 labelled 0: PAV of 0, 1, [0], 0, 1, 1, 1 pools 1, 0, 0 -> 1/3
    (array([0.33333333, 0.75      ]), array([0.66666667, 1.        ]))
    >>> va.predict_proba(np.array([0.35, 0.95]))        # p1 / (1 - p0 + p1)
    array([0.5, 0.8])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={"multiclass": OneOf(("one_vs_one", "one_vs_rest"))},
        state={
            "thresholds_": ArrayList(Array((None,), order="increasing"), _n_maps),
            "p0_": ArrayList(
                Array((None,), lo=0.0, hi=1.0, order="non-decreasing"),
                lambda v: [len(v["thresholds_"])],
            ),
            "p1_": ArrayList(
                Array((None,), lo=0.0, hi=1.0, order="non-decreasing"),
                lambda v: [len(v["thresholds_"])],
            ),
        },
        state_checks=(_tables_agree,),
    )

    def __init__(self, multiclass: Literal["one_vs_one", "one_vs_rest"] = "one_vs_one") -> None:
        self.multiclass = multiclass

    # ------------------------------------------------------------------ fitting

    def _problems(
        self, S: np.ndarray, y: np.ndarray | None, w: np.ndarray | None = None
    ) -> list[tuple[np.ndarray, Any, Any]]:
        """The binary problems: (scores, 0/1 labels, counts) per map (labels None to predict)."""
        if S.ndim == 1 or S.shape[1] == 2:
            s = S if S.ndim == 1 else S[:, 1]
            return [(s, None if y is None else (y == 1), w)]
        k = S.shape[1]
        if self.multiclass == "one_vs_rest":
            return [(S[:, i], None if y is None else (y == i), w) for i in range(k)]
        out: list[tuple[np.ndarray, Any, Any]] = []
        for a, b in _pairs(k):
            if y is None:
                out.append((_pair_scores(S, a, b), None, None))
                continue
            rows = (y == a) | (y == b)
            if not rows.any():
                raise CalibrationInputError(
                    f"VennAbers(multiclass='one_vs_one') needs calibration rows of class {a} "
                    f"or class {b}; there are none (use multiclass='one_vs_rest')"
                )
            out.append((_pair_scores(S[rows], a, b), y[rows] == b, None if w is None else w[rows]))
        return out

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if w is not None and not np.all(w == np.rint(w)):
            i = int(np.flatnonzero(w != np.rint(w))[0])
            raise CalibrationInputError(
                f"VennAbers takes integer sample_weight only (a weight repeats a row; its validity "
                f"counts exchangeable objects); row {i} has weight {w[i]!r}"
            )
        if self.multiclass not in ("one_vs_one", "one_vs_rest"):
            raise CalibrationInputError(
                "VennAbers: multiclass must be 'one_vs_one' or 'one_vs_rest'; "
                f"got {self.multiclass!r}"
            )
        thr, t0s, t1s = [], [], []
        for s, t, counts in self._problems(S, y, w):
            if counts is not None and not np.any(counts > 0):
                raise CalibrationInputError(
                    "VennAbers: every calibration row of a binary problem has weight 0"
                )
            c, t0, t1 = venn_abers_tables(s, t, counts)
            thr.append(c)
            t0s.append(t0)
            t1s.append(t1)
        self.thresholds_ = thr
        self.p0_ = t0s
        self.p1_ = t1s

    @property
    def pairs_(self) -> list[tuple[int, int]]:
        """The class pair ``(a, b)`` of each one-vs-one map (``p`` is that of class ``b``)."""
        self._check_fitted()
        return _pairs(int(self.n_classes_))

    # ------------------------------------------------------------------ predicting

    def _intervals(self, S: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        lo, hi = [], []
        for m, (s, _, _) in enumerate(self._problems(S, None)):
            c = np.asarray(self.thresholds_[m], dtype=np.float64)
            a, b = _lookup(c, np.asarray(self.p0_[m]), np.asarray(self.p1_[m]), s)
            lo.append(a)
            hi.append(b)
        return lo, hi

    def _transform(self, S: np.ndarray) -> np.ndarray:
        lo, hi = self._intervals(S)
        if S.ndim == 1:
            return _merge(lo[0], hi[0])
        if S.shape[1] == 2:
            p = _merge(lo[0], hi[0])
            return np.stack([1.0 - p, p], axis=1)
        k = S.shape[1]
        merged = [_merge(a, b) for a, b in zip(lo, hi, strict=True)]
        if self.multiclass == "one_vs_rest":
            Q = np.stack(merged, axis=1)
        else:  # pairwise coupling of P(b | a or b) (Price et al. 1995), as venn-abers does
            inv = np.zeros((S.shape[0], k))
            for (a, b), p in zip(_pairs(k), merged, strict=True):
                inv[:, b] += 1.0 / p
                inv[:, a] += 1.0 / (1.0 - p)
            Q = 1.0 / (inv - (k - 2))
        return Q / Q.sum(axis=1, keepdims=True)

    def predict_interval(self, scores: Any, *, logits: bool | None = None) -> tuple[Any, Any]:
        """The multiprobability ``(p0, p1)``: lower and upper probability of class 1.

        ``p0 <= p1``; the probability chosen by the true label (``p1`` for
        class 1, ``p0`` for class 0) is calibrated (Vovk & Petej 2014).

        Parameters
        ----------
        scores : array-like or tensor of shape (n,), (n, 1), (n, 2) or (n, K)
            As :meth:`predict_proba` takes them.
        logits : bool, optional
            As in :meth:`predict_proba`.

        Returns
        -------
        (p0, p1) : pair of numpy.ndarray or torch.Tensor
            Binary scores: each of shape ``(n,)``, probabilities of class 1.
            K > 2 classes: shape ``(n, K)`` (one-vs-rest, the probability of
            each class) or ``(n, K (K - 1) / 2)`` (one-vs-one, the probability
            of class ``b`` within the pair ``pairs_[m] = (a, b)``). Tensors
            back for tensors, as :meth:`predict_proba`.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> va = cp.VennAbers().fit(np.array([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1])
        >>> va.predict_interval(np.array([0.1, 0.5, 0.9]))
        (array([0.        , 0.33333333, 0.5       ]), array([0.5       , 0.66666667, 1.        ]))
        """
        self._check_fitted()
        self._check_state(type(self).__name__)
        r = self._read_all(scores, logits, fitted=self._fitted_kind())
        lo, hi = self._intervals(r.S)
        if len(lo) == 1:
            a, b = lo[0], hi[0]
        else:
            a, b = np.stack(lo, axis=1), np.stack(hi, axis=1)
        return _as_input(a, r.like), _as_input(b, r.like)
