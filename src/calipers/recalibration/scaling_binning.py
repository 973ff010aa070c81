"""The scaling-binning calibrator of Kumar, Liang & Ma (2019).

Kumar, Liang & Ma (2019), "Verified uncertainty calibration" (NeurIPS), §4:
a scaling function is fitted first, then its outputs are binned, so that
the recalibrated model takes finitely many values (its calibration error
can then be estimated, e.g. by :func:`calipers.debiased_calibration_error`)
while keeping most of the sharpness of the scaling. The calibration rows are
split in two (``split`` = 0.5 of them first, in a random order drawn from
``numpy.random.default_rng(random_state).permutation(n)``, or in the given
order with ``shuffle=False``):

1. Platt scaling ``g(p) = sigmoid(a logit(p) + b)`` (:class:`PlattScaling`,
   ``p`` clipped to ``[1e-12, 1 - 1e-12]`` first, as the authors'
   ``calibration`` package does) is fitted on the first part;
2. the values ``g(p)`` of the second part are cut into ``n_bins`` bins of
   equal mass: sorted, split into ``n_bins`` runs as ``numpy.array_split``
   does (the first ``n mod B`` runs one longer), each boundary halfway
   between the last value of a run and the first of the next; a bin is
   ``(lo, hi]``;
3. every score is mapped to the mean of the second part's ``g`` values in
   the bin of its own ``g(p)`` (a bin with none: its midpoint).

Steps 2 and 3 are those of the authors' ``calibration`` package
(``PlattBinnerCalibrator``, ``get_equal_bins``, ``get_discrete_calibrator``),
which fits both steps on the data it is given; its experiments split the
data beforehand. Its Platt step is scikit-learn's logistic regression with
``C = 1e10`` (the maximum-likelihood fit): ``smooth_targets=False`` gives
that fit, the default (``True``) Platt's smoothed targets, finite on
separable data.

``mode="marginal"`` (default): one scaling-binning map per class column
against ``1{y = k}`` (the package's ``PlattBinnerMarginalCalibrator``;
binary: of P(y = 1)); rows are then divided by their sums
(``renormalize=True``; the package returns the raw values, ``False``).
``mode="top_label"``: one map of the top-label confidence against the
correctness (``PlattBinnerTopCalibrator``, which returns the confidence
only); here the predicted class gets the mapped confidence and the others
share the rest in proportion to their probabilities.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._schema import Array, Flag, Integer, OneOf, Real, Schema, Values
from .base import Recalibrator, register
from .histogram_binning import _binary_top, _renormalize_rows
from .ks_spline_calibration import _top_rows
from .platt_scaling import PlattScaling

__all__ = ["ScalingBinning"]

#: Clipping of the probabilities before the log-odds (the ``calibration`` package's).
EPS = 1e-12


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, EPS, 1.0 - EPS)
    return np.log(q / (1.0 - q))


def equal_mass_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """The ``n_bins - 1`` inner boundaries of equal-mass bins of ``values`` (see step 2).

    Fewer values than bins: one bin per value, the missing boundaries set to 1 (the
    bins ``(1, 1]`` stay empty), as the authors' package uses as many bins as values.
    """
    v = np.sort(values)
    n = v.shape[0]
    if n < n_bins:
        return np.concatenate((equal_mass_edges(values, n), np.ones(n_bins - n)))
    q, r = divmod(n, n_bins)
    sizes = np.full(n_bins, q)
    sizes[:r] += 1
    ends = np.cumsum(sizes)[:-1]  # index of the first value of runs 2 .. B
    return (v[ends - 1] + v[ends]) / 2.0


def bin_means(values: np.ndarray, edges: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Mean of ``values`` in each bin ``(lo, hi]`` of ``edges`` (empty bins: the midpoint)."""
    B = edges.shape[0] + 1
    ids = np.searchsorted(edges, values, side="left")
    wt = np.ones_like(values) if w is None else w
    tot = np.bincount(ids, weights=wt, minlength=B)
    s = np.bincount(ids, weights=wt * values, minlength=B)
    bounds = np.concatenate(([0.0], edges, [1.0]))
    mid = (bounds[:-1] + bounds[1:]) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), mid)


def _n_maps(v: Values) -> list[tuple[int | str | None, ...]]:
    k = v["n_classes_"]
    m = 1 if (k == 2 or v["mode"] == "top_label") else k
    return [(m,)]


def _edge_shape(v: Values) -> list[tuple[int | str | None, ...]]:
    return [(_n_maps(v)[0][0], v["n_bins"] - 1)]


def _value_shape(v: Values) -> list[tuple[int | str | None, ...]]:
    return [(_n_maps(v)[0][0], v["n_bins"])]


@register
class ScalingBinning(Recalibrator):
    """Scaling-binning calibrator (Kumar, Liang & Ma 2019): Platt scaling, then equal-mass bins.

    See the module docstring for the three steps, the split and the two
    modes. Natural input: probabilities (logits are turned into
    probabilities with a softmax / sigmoid). Not accuracy-preserving and not
    injective (all scores of a bin map to one value).

    Parameters
    ----------
    n_bins : int, default 10
        Number of equal-mass bins of the scaled values (at least 2; a second
        part of fewer rows makes one bin per row, as the authors' package does).
    mode : {"marginal", "top_label"}, default "marginal"
        One map per class (binary: of P(y = 1)) or one of the top-label
        confidence.
    split : float, default 0.5
        Fraction of the calibration rows that fit the Platt step
        (``floor(split * n)`` rows); the rest make and fill the bins.
    shuffle : bool, default True
        Split in a random order (``random_state``) or in the given order.
    random_state : int, default 0
        Seed of the order (``numpy.random.default_rng``).
    smooth_targets : bool, default True
        Platt's smoothed targets in the Platt step (``False``: the
        maximum-likelihood fit of the authors' package).
    renormalize : bool, default True
        ``marginal`` with more than two classes: divide each row by its sum.

    Attributes
    ----------
    a_, b_ : numpy.ndarray
        The Platt slope and intercept of each map (one map for binary scores
        and for ``top_label``).
    bin_edges_ : numpy.ndarray
        Shape ``(maps, n_bins - 1)``: the inner boundaries of the bins of
        ``g`` (non-decreasing; equal boundaries bound an empty bin).
    bin_values_ : numpy.ndarray
        Shape ``(maps, n_bins)``: the value of each bin.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.scaling_binning import ScalingBinning
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(0, 2, 2000)
    >>> y = (rng.random(2000) < 1 / (1 + np.exp(-z / 2))).astype(int)  # over-confident
    >>> sb = ScalingBinning(n_bins=5).fit(z, y, logits=True)
    >>> np.unique(sb.predict_proba(z, logits=True)).size                # five values
    5
    >>> bool(np.all(np.diff(sb.bin_values_[0]) > 0))
    True
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "n_bins": Integer(lo=2),
            "mode": OneOf(("marginal", "top_label")),
            "split": Real(lo=0, hi=1, lo_open=True, hi_open=True),
            "shuffle": Flag(),
            "random_state": Integer(lo=0),
            "smooth_targets": Flag(),
            "renormalize": Flag(),
        },
        state={
            "a_": Array(_n_maps),
            "b_": Array(_n_maps),
            "bin_edges_": Array(_edge_shape, lo=0.0, hi=1.0, order="non-decreasing"),
            "bin_values_": Array(_value_shape, lo=0.0, hi=1.0),
        },
    )

    def __init__(
        self,
        n_bins: int = 10,
        mode: Literal["marginal", "top_label"] = "marginal",
        split: float = 0.5,
        shuffle: bool = True,
        random_state: int = 0,
        smooth_targets: bool = True,
        renormalize: bool = True,
    ) -> None:
        self.n_bins = n_bins
        self.mode = mode
        self.split = split
        self.shuffle = shuffle
        self.random_state = random_state
        self.smooth_targets = smooth_targets
        self.renormalize = renormalize

    def split_indices(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the Platt step and those of the bins, for ``n`` calibration rows.

        Examples
        --------
        >>> from calipers.recalibration.scaling_binning import ScalingBinning
        >>> ScalingBinning(shuffle=False, split=0.4).split_indices(5)
        (array([0, 1]), array([2, 3, 4]))
        """
        order = (
            np.random.default_rng(int(self.random_state)).permutation(n)
            if self.shuffle
            else np.arange(n)
        )
        m = int(np.floor(float(self.split) * n))
        return order[:m], order[m:]

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if w is not None:
            raise CalibrationInputError(
                "ScalingBinning does not take sample_weight: its split and its equal-mass bins "
                "are made of rows (repeat the rows instead)"
            )
        B = int(self.n_bins)
        if S.ndim == 2 and S.shape[1] == 2:
            S = np.ascontiguousarray(S[:, 1])
        n = S.shape[0]
        first, second = self.split_indices(n)
        if first.size < 2 or second.size < 1:
            raise CalibrationInputError(
                f"ScalingBinning: {n} calibration rows split into {first.size} for the Platt "
                f"step and {second.size} for the bins; it needs at least 2 and 1: pass more "
                "rows or another split"
            )
        if self.mode == "top_label":
            if S.ndim == 1:
                conf, correct = _binary_top(S, y)
            else:
                pred = np.argmax(S, axis=1)
                conf = S[np.arange(n), pred]
                correct = (pred == y).astype(np.float64)
            pairs = [(conf, correct)]
        elif S.ndim == 1:
            pairs = [(S, (y == 1).astype(np.float64))]
        else:
            pairs = [(S[:, k], (y == k).astype(np.float64)) for k in range(S.shape[1])]
        m = len(pairs)
        a, b = np.empty(m), np.empty(m)
        edges, values = np.empty((m, B - 1)), np.empty((m, B))
        for j, (s, t) in enumerate(pairs):
            z = _logit(s)
            ps = PlattScaling(smooth_targets=bool(self.smooth_targets))
            ps._fit(z[first], t[first].astype(np.int64), None)
            a[j], b[j] = ps.a_, ps.b_
            g = self._scale(z[second], ps.a_, ps.b_)
            edges[j] = equal_mass_edges(g, B)
            values[j] = bin_means(g, edges[j])
        self.a_, self.b_, self.bin_edges_, self.bin_values_ = a, b, edges, values

    @staticmethod
    def _scale(z: np.ndarray, a: float, b: float) -> np.ndarray:
        from scipy.special import expit

        return expit(a * z + b)

    def _map(self, p: np.ndarray, j: int) -> np.ndarray:
        g = self._scale(_logit(p), float(self.a_[j]), float(self.b_[j]))
        edges = np.asarray(self.bin_edges_[j], dtype=np.float64)
        return np.asarray(self.bin_values_[j], dtype=np.float64)[
            np.searchsorted(edges, g, side="left")
        ]

    def _transform(self, S: np.ndarray) -> np.ndarray:
        if S.ndim == 2 and S.shape[1] == 2:
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if self.mode == "top_label":
            if S.ndim == 1:
                c = self._map(np.maximum(S, 1.0 - S), 0)
                return np.where(S > 0.5, c, 1.0 - c)
            return _top_rows(S, self._map(S.max(axis=1), 0))
        if S.ndim == 1:
            return self._map(S, 0)
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = self._map(S[:, k], k)
        return _renormalize_rows(Q) if self.renormalize else Q
