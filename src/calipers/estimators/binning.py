"""Binning estimators of E[target | score] and their sufficient statistics.

A binning scheme assigns every (lensed) score to a bin; the estimate of
E[target | score] in a bin is the weighted mean target of its samples
(the pipeline: lens -> selection -> *estimator* -> divergence -> aggregate).

Everything downstream is computed from per-bin totals, :class:`BinStatistics`
(weight, count, sum of scores, sum of targets, sum of squared targets), which
add together: totals of two batches merged with ``+`` give exactly the totals
of the concatenated data, so streamed or distributed evaluation can reproduce
in-memory numbers once the bin edges are fixed.

Schemes
-------
:class:`EqualWidth`
    ``n_bins`` bins of width ``1/n_bins`` on [0, 1] with one documented edge
    rule: ``edge_rule="right"`` (default) is ``(lo, hi]`` with the first bin
    closed, the rule of Guo et al. (2017), of the Popordanoska et al. 2024 / Gruber & Buettner 2022 code and of
    Kumar et al.'s ``verified_calibration``; ``"left"`` is ``[lo, hi)`` with
    the last bin closed (netcal, NumPy histograms). Edges are ``j/n_bins``
    rounded to the *input's* dtype, so a float32 0.6 and a float64 0.6 both sit
    exactly on the edge 3/5 and land in the same bin; 0 and 1 always belong to
    the first and last bin (no hidden extra bin for 1.0, no gaps).
:class:`EqualMass`
    data-dependent edges with about the same number of samples per bin, by the
    rule of Nixon et al.'s code (``rule="nixon"``, docs/how-calipers-computes.md §3.2: edges
    ``sorted(s)[round(linspace(0, n, B, endpoint=False))]``, bins
    ``[e_r, e_{r+1})``, ties go up) or of Kumar et al. (``rule="kumar"``,
    docs/how-calipers-computes.md §4.1: ``array_split`` parts, mid-point edges, ``(lo, hi]``).
:class:`FixedEdges`
    any increasing edges, to reproduce a published convention exactly.
:class:`KDTree`
    the adaptive k-d tree binning of Kirchenbauer, Oaks & Heim (2022) App. B (Vaicenavicius et al.
    2019): split a node on its highest-variance coordinate at the mean while it
    holds at least ``gamma * n`` of the weight, for multi-dimensional lenses.

Each scheme has ``assign(scores, weights) -> (bin_ids, n_bins)``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from .._backend import Array, as_float64_numpy, is_torch, to_numpy, weighted_bincount
from ..validation import DEFAULT_SUM_TOL, CalibrationInputError, check_integer
from ..validation import MAX_BINS as _MAX_BINS

__all__ = [
    "nixon_even_bins",
    "Binning",
    "BinStatistics",
    "EqualWidth",
    "EqualMass",
    "FixedEdges",
    "KDTree",
    "bin_statistics",
    "equal_width_edges",
]


class Binning(Protocol):
    """Protocol of a binning scheme (an estimator of E[target | score]).

    A scheme whose bin for a score does not depend on the other scores may set
    the class attribute ``pointwise = True``; long slices are then binned and
    totalled in chunks whose :class:`BinStatistics` are added (same result,
    less memory).
    """

    def assign(self, scores: Array, weights: Array | None) -> tuple[Array, int]:
        """Return integer bin ids (same namespace as ``scores``) and the bin count."""
        ...


# ----------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class BinStatistics:
    """Mergeable per-bin sufficient statistics.

    Attributes
    ----------
    weight : ndarray, shape (B,)
        Total sample weight per bin (the count when unweighted).
    count : ndarray, shape (B,)
        Number of samples per bin (unweighted).
    sum_score : ndarray, shape (B,) or (B, d)
        Weighted sum of the lensed scores.
    sum_target : ndarray, shape (B,) or (B, d)
        Weighted sum of the lensed targets.
    sum_target_sq : ndarray, shape (B,) or (B, d)
        Weighted sum of squared targets (for variance and debiasing terms).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import EqualWidth, bin_statistics
    >>> s = np.array([0.1, 0.4, 0.45, 0.9]); t = np.array([0.0, 1.0, 0.0, 1.0])
    >>> ids, B = EqualWidth(2).assign(s, None)
    >>> st = bin_statistics(ids, B, s, t, None)
    >>> st.count, st.mean_score, st.mean_target
    (array([3., 1.]), array([0.31666667, 0.9       ]), array([0.33333333, 1.        ]))
    >>> (st + st).count  # merging two batches adds the totals
    array([6., 2.])
    """

    weight: np.ndarray
    count: np.ndarray
    sum_score: np.ndarray
    sum_target: np.ndarray
    sum_target_sq: np.ndarray

    def __add__(self, other: BinStatistics) -> BinStatistics:
        if self.weight.shape != other.weight.shape:
            raise ValueError("cannot merge BinStatistics with different numbers of bins")
        return BinStatistics(
            self.weight + other.weight,
            self.count + other.count,
            self.sum_score + other.sum_score,
            self.sum_target + other.sum_target,
            self.sum_target_sq + other.sum_target_sq,
        )

    @property
    def nonempty(self) -> np.ndarray:
        """Boolean mask of bins with positive weight."""
        return self.weight > 0

    def _mean(self, total: np.ndarray) -> np.ndarray:
        w = self.weight if total.ndim == 1 else self.weight[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(w > 0, total / np.where(w > 0, w, 1), np.nan)

    @property
    def mean_score(self) -> np.ndarray:
        """Weighted mean score per bin (NaN for empty bins): the bin "confidence"."""
        return self._mean(self.sum_score)

    @property
    def mean_target(self) -> np.ndarray:
        """Weighted mean target per bin (NaN for empty bins): the bin "accuracy"."""
        return self._mean(self.sum_target)


def bin_statistics(
    ids: Array,
    n_bins: int,
    scores: Array,
    targets: Array,
    weights: Array | None,
    binary_targets: bool = False,
) -> BinStatistics:
    """Per-bin totals of weights, scores and targets (accumulated in float64).

    Parameters
    ----------
    ids : array of int, shape (n,)
        Bin index of each sample, in ``[0, n_bins)``.
    n_bins : int
        Number of bins.
    scores, targets : array, shape (n,) or (n, d)
        Lensed scores and targets (NumPy or PyTorch; summed on their device).
    weights : array, shape (n,), optional
        Sample weights.
    binary_targets : bool, default False
        Promise that targets are 0/1 (true for every built-in lens), so the sum
        of squared targets equals the sum of targets and is not recomputed.

    Returns
    -------
    BinStatistics

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import bin_statistics
    >>> st = bin_statistics(np.array([0, 0, 1]), 2, np.array([.2, .4, .9]), np.array([0., 1., 1.]), None)
    >>> st.weight.tolist(), st.sum_score.round(6).tolist(), st.sum_target.tolist()
    ([2.0, 1.0], [0.6, 0.9], [1.0, 1.0])
    """
    count = weighted_bincount(ids, None, n_bins)
    weight = count if weights is None else weighted_bincount(ids, weights, n_bins)
    sum_target = _weighted_sums(ids, targets, weights, n_bins)
    return BinStatistics(
        weight=weight,
        count=count,
        sum_score=_weighted_sums(ids, scores, weights, n_bins),
        sum_target=sum_target,
        sum_target_sq=sum_target.copy()
        if binary_targets
        else _weighted_sums(ids, targets * targets, weights, n_bins),
    )


def _weighted_sums(ids: Array, v: Array, weights: Array | None, n_bins: int) -> np.ndarray:
    """Per-bin totals of ``v`` (columns of a 2-D ``v`` one by one), weighted.

    A plain function, not a closure that calls itself: such a closure is a
    reference cycle that keeps ``ids`` alive until the garbage collector runs
    (one bin-id array per class slice piled up in the class-wise metrics).
    """
    if v.ndim == 1:
        vw = v if weights is None else v * weights
        return weighted_bincount(ids, vw, n_bins)
    cols = [_weighted_sums(ids, v[:, j], weights, n_bins) for j in range(v.shape[1])]
    return np.stack(cols, axis=1)


# ----------------------------------------------------------------------------- edges


#: Largest number of bins of any binning estimator: :data:`calipers.validation.MAX_BINS`
#: (2**20), the bound of every binning and grid of calipers (one cost guard).
MAX_BINS = _MAX_BINS

#: Bins are refused beyond ``max(n, FREE_BINS)`` for a slice of n samples.
FREE_BINS = 1 << 16


def check_bins_for_samples(n_bins: int, n: int) -> None:
    """Refuse more bins than ``max(n, 2**16)`` for a slice of ``n`` samples.

    With more bins than samples most bins are empty and the binned estimate
    only measures noise; below 2**16 bins the cost is negligible, so the rule
    bites only on large bin counts (``n_bins=10**6`` for 1000 samples). The
    absolute limit :data:`MAX_BINS` is checked when the estimator is made.

    Examples
    --------
    >>> check_bins_for_samples(15, 6)
    >>> check_bins_for_samples(100_000, 1000)
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: n_bins = 100000 is more than the 1000 samples to bin and more than 65536; use at most max(n, 65536) bins
    """
    if n_bins > max(n, FREE_BINS):
        raise CalibrationInputError(
            f"n_bins = {n_bins} is more than the {n} samples to bin and more than {FREE_BINS}; "
            f"use at most max(n, {FREE_BINS}) bins"
        )


def equal_width_edges(n_bins: int, dtype: Any = np.float64) -> np.ndarray:
    """Edges ``j / n_bins`` (j = 0..n_bins), correctly rounded to ``dtype``.

    Comparing scores with edges of their own dtype makes the bin of a value
    like 0.6 (= 3/5 to the dtype's precision) the same in float32 and float64.

    Examples
    --------
    >>> from calipers.estimators.binning import equal_width_edges
    >>> equal_width_edges(5)
    array([0. , 0.2, 0.4, 0.6, 0.8, 1. ])

    ``n_bins`` must be an integer in ``[1, MAX_BINS]`` (``2**20``); booleans and
    floats are refused (:func:`calipers.validation.check_integer`).
    """
    B = check_integer(n_bins, "n_bins", minimum=1, maximum=MAX_BINS)
    e = np.arange(B + 1, dtype=np.float64) / B
    return e.astype(dtype)


@functools.lru_cache(maxsize=64)
def _fast_edges(n_bins: int, dtype: np.dtype) -> tuple[np.ndarray, float]:
    """Interior edges in ``dtype`` and the near-edge tolerance of the fast path (cached)."""
    e = equal_width_edges(n_bins, dtype)[1:-1]
    e.setflags(write=False)
    return e, 8 * float(np.finfo(dtype).eps) * n_bins


def _searchsorted(edges: np.ndarray, x: Array, side: Literal["left", "right"]) -> Array:
    """``np.searchsorted(edges, x)`` in the namespace of ``x``.

    Comparisons happen in the common type of ``edges`` and ``x``, as NumPy does
    (callers pass edges already rounded to the scores' dtype when they want the
    comparison in that dtype), so both namespaces give the same bins.
    """
    if is_torch(x):
        import torch

        if edges.dtype == np.float64 and x.dtype != torch.float64:
            x = x.to(torch.float64)
        e = torch.as_tensor(edges, dtype=x.dtype, device=x.device)
        return torch.searchsorted(e, x.contiguous(), right=(side == "right"))
    if edges.shape[0] <= 32 and x.ndim == 1 and x.shape[0] > 256:
        # few edges: counting the edges below each score is branch-free and SIMD
        # friendly, several times faster than a binary search per score; the same
        # comparisons in the same common dtype give the same ids
        xc = np.ascontiguousarray(x)
        ids = np.zeros(xc.shape[0], dtype=np.intp)
        for e in edges:
            ids += (xc >= e) if side == "right" else (xc > e)
        return ids
    return np.searchsorted(edges, x, side=side)


def _np_dtype(x: Array) -> Any:
    if is_torch(x):
        import torch

        return {
            torch.float32: np.float32,
            torch.float64: np.float64,
            torch.float16: np.float16,
        }.get(x.dtype, np.float64)
    return x.dtype


def _check_unit_interval(scores: Array, where: str) -> None:
    s = to_numpy(scores)
    if s.size and not (np.min(s) >= 0 and np.max(s) <= 1):
        bad = np.flatnonzero(~((s >= 0) & (s <= 1)).reshape(-1))[0]
        raise CalibrationInputError(
            f"{where} needs scores in [0, 1]; found {s.reshape(-1)[bad]!r} at position {bad}"
        )


def _edge_rule(edge_rule: str) -> str:
    if edge_rule not in ("right", "left"):
        raise CalibrationInputError(
            f"edge_rule must be 'right' ((lo, hi], the default) or 'left' ([lo, hi)); got {edge_rule!r}"
        )
    return edge_rule


# ----------------------------------------------------------------------------- schemes


@dataclass(frozen=True)
class EqualWidth:
    """``n_bins`` equal-width bins on [0, 1].

    Parameters
    ----------
    n_bins : int, default 15
        Number of bins per coordinate (15 is the default of Guo et al. 2017 and
        of the tables of the papers calipers follows).
    edge_rule : {"right", "left"}, default "right"
        ``"right"``: bins ``(lo, hi]``, first bin ``[0, 1/B]`` (Guo et al.;
        Popordanoska et al. (2024); Gruber & Buettner (2022); Kumar et al.). ``"left"``: bins ``[lo, hi)``, last bin
        ``[1 - 1/B, 1]`` (netcal, NumPy). Edges are ``j/B`` in the score dtype.

    Notes
    -----
    For a multi-dimensional lens (d columns on a simplex) the first d - 1
    coordinates are binned this way and the cells of the product grid are the
    bins, as in Kirchenbauer, Oaks & Heim's (2022) uniform estimator (empty cells dropped); the last
    coordinate is implied by the others.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import EqualWidth
    >>> ids, B = EqualWidth(5).assign(np.array([0.0, 0.2, 0.2000001, 0.6, 1.0]), None)
    >>> ids.tolist(), B
    ([0, 0, 1, 2, 4], 5)
    >>> EqualWidth(5, edge_rule="left").assign(np.array([0.0, 0.2, 0.6, 1.0]), None)[0].tolist()
    [0, 1, 3, 4]
    """

    n_bins: int = 15
    edge_rule: Literal["right", "left"] = "right"
    #: a score's bin does not depend on the other scores (data may be binned in chunks)
    pointwise = True

    def __post_init__(self) -> None:
        equal_width_edges(self.n_bins)
        _edge_rule(self.edge_rule)

    def _assign_1d(
        self,
        s: Array,
        buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        clip: bool = True,
    ) -> Array:
        B = int(self.n_bins)
        side: Literal["left", "right"] = "left" if self.edge_rule == "right" else "right"
        if is_torch(s) or s.dtype.kind != "f" or s.size < 4096:
            return _searchsorted(equal_width_edges(B, _np_dtype(s))[1:-1], s, side)
        e, tol = _fast_edges(B, s.dtype)
        # Fast exact path: away from the edges floor(s * B) is the bin under
        # either rule (rounding is monotone and integers are representable, so
        # a product strictly between k and k + 1 means s is strictly between the
        # edges). With u = s * B + tol, a product within tol of an integer has
        # frac(u) < 2 tol; those few scores are re-binned by an exact comparison
        # with the dtype's edges, every other one is in bin floor(u).
        # ``buffers`` (two float arrays of the scores' dtype and an intp array,
        # each at least as long as ``s``) save the allocations when a caller
        # bins many chunks; the ids returned are then a view of the intp buffer.
        # ``clip=False`` leaves an id outside [0, B - 1] for a score outside
        # [0, 1] that is not within tol of 0 or 1 (for callers that detect it).
        m = s.shape[0]
        if buffers is None:
            u = s * s.dtype.type(B)
            f = np.empty_like(u)
            ids = np.empty(m, dtype=np.intp)
        else:
            u = np.multiply(s, s.dtype.type(B), out=buffers[0][:m])
            f, ids = buffers[1][:m], buffers[2][:m]
        u += s.dtype.type(tol)
        np.floor(u, out=f)
        u -= f  # frac(u), exact (Sterbenz)
        ids[...] = f
        if clip:
            np.clip(ids, 0, B - 1, out=ids)
        near = u < s.dtype.type(2 * tol)
        if near.any():
            k = np.flatnonzero(near)
            ids[k] = np.searchsorted(e, s[k], side=side)
        return ids

    def assign(self, scores: Array, weights: Array | None = None) -> tuple[Array, int]:
        """Bin ids of ``scores`` (values must lie in [0, 1])."""
        if scores.ndim == 1:
            return self._assign_1d(scores), int(self.n_bins)
        _check_unit_interval(scores, "EqualWidth")
        s = to_numpy(scores)
        d = s.shape[1]
        if d == 1:
            return self._assign_1d(scores[:, 0]), int(self.n_bins)
        cols = np.stack([to_numpy(self._assign_1d(s[:, j])) for j in range(d - 1)], axis=1)
        _, inv = np.unique(cols, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        return _like(inv, scores), int(inv.max()) + 1


def _like(ids: np.ndarray, like: Array) -> Array:
    if is_torch(like):
        import torch

        return torch.as_tensor(ids, dtype=torch.int64, device=like.device)
    return ids


def _sorted_with_cumweight(s: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(s, kind="stable")
    ss = s[order]
    cw = np.cumsum(np.ones_like(ss) if w is None else w[order])
    return ss, cw


def _expanded_at(ss: np.ndarray, cw: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Value at (0-based) position ``pos`` of the weight-expanded sorted sample.

    With integer weights this is exactly the value at that position of the
    array in which every sample is repeated ``weight`` times.
    """
    idx = np.searchsorted(cw, pos, side="right")
    return ss[np.minimum(idx, len(ss) - 1)]


@dataclass(frozen=True)
class EqualMass:
    """Equal-mass (adaptive, quantile) bins computed from the data.

    Parameters
    ----------
    n_bins : int, default 15
        Number of bins (Nixon et al.'s tables use 15; their code defaults to 30).
    rule : {"nixon", "kumar"}, default "nixon"
        ``"nixon"``: the rule of the Nixon et al. (2019) code (robustness_metrics
        ``_get_adaptive_bins``; docs/how-calipers-computes.md §3.2): with ``s`` sorted,
        ``e_r = s[min(round(r n / B), n - 1)]`` for r = 0..B-1 (NumPy's
        round-half-to-even), bins ``[e_r, e_{r+1})`` so that ties at an edge go
        to the upper bin; a score equal to 1.0 gets a bin of its own, as in that
        code. ``"kumar"``: the rule of ``verified_calibration.get_equal_bins``
        (docs/how-calipers-computes.md §4.1): ``array_split`` of the sorted scores into B parts
        (first parts one larger), edges at mid-points between consecutive
        parts, 1.0 appended, duplicates removed, bins ``(lo, hi]``; B is capped
        at n.

    Notes
    -----
    With sample weights, positions are taken in the weight-expanded sample
    (a weight of 2 acts as the row repeated twice), so the property
    "weights == repetitions" holds exactly for integer weights.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import EqualMass
    >>> s = np.array([.1, .2, .2, .2, .5, .6, .7, .8, .9, .9])
    >>> np.bincount(EqualMass(3).assign(s, None)[0]).tolist()   # ties go up
    [1, 6, 3]
    >>> np.bincount(EqualMass(3, rule="kumar").assign(s, None)[0]).tolist()
    [4, 3, 3]
    """

    n_bins: int = 15
    rule: Literal["nixon", "kumar"] = "nixon"

    def __post_init__(self) -> None:
        equal_width_edges(self.n_bins)
        if self.rule not in ("nixon", "kumar"):
            raise CalibrationInputError(f"rule must be 'nixon' or 'kumar'; got {self.rule!r}")

    def edges(self, scores: Array, weights: Array | None = None) -> np.ndarray:
        """The upper bin edges for these scores (last edge 1.0)."""
        s = to_numpy(scores).astype(np.float64, copy=False)
        w = None if weights is None else as_float64_numpy(weights)
        if s.ndim != 1:
            raise CalibrationInputError(
                "EqualMass bins one score per sample; use KDTree for vectors"
            )
        B = int(self.n_bins)
        if w is None and s.size:
            # unit weights: the order statistics straight from a plain sort (no
            # argsort, no cumulative weights); the values are the same
            return self._edges_unweighted(s, B)
        ss, cw = _sorted_with_cumweight(s, w)
        total = cw[-1]
        if self.rule == "nixon":
            pos = np.round(np.linspace(0, total, B, endpoint=False))
            pos = np.minimum(pos, total - 1)
            e = _expanded_at(ss, cw, pos)
            return np.concatenate([e[1:], [1.0]])
        # kumar: array_split of the (expanded) sorted sample into B parts
        n = int(np.floor(total + 1e-9))
        B = min(B, n)
        base, extra = divmod(n, B)
        sizes = np.full(B, base)
        sizes[:extra] += 1
        ends = np.cumsum(sizes)[:-1]
        last = _expanded_at(ss, cw, (ends - 1).astype(np.float64))
        first = _expanded_at(ss, cw, ends.astype(np.float64))
        mids = (last + first) / 2.0
        return np.array(sorted(set(mids.tolist()) | {1.0}))

    def _edges_unweighted(self, s: np.ndarray, B: int) -> np.ndarray:
        n = s.shape[0]
        if self.rule == "nixon":
            pos = np.minimum(np.round(np.linspace(0, n, B, endpoint=False)), n - 1).astype(np.int64)
            part = np.sort(s)  # NumPy's SIMD sort beats a 15-fold partition here
            return np.concatenate([part[pos][1:], [1.0]])
        B = min(B, n)
        base, extra = divmod(n, B)
        sizes = np.full(B, base)
        sizes[:extra] += 1
        ends = np.cumsum(sizes)[:-1]
        part = np.sort(s)
        mids = (part[ends - 1] + part[ends]) / 2.0
        return np.array(sorted(set(mids.tolist()) | {1.0}))

    def assign(self, scores: Array, weights: Array | None = None) -> tuple[Array, int]:
        """Bin ids of ``scores`` under the data-dependent edges."""
        upper = self.edges(scores, weights)
        if self.rule == "nixon":
            ids = _searchsorted(upper.astype(_np_dtype(scores)), scores, "right")
            return ids, len(upper) + 1
        ids = _searchsorted(upper.astype(_np_dtype(scores)), scores, "left")
        return ids, len(upper) + 1


@dataclass(frozen=True)
class FixedEdges:
    """Bins between given increasing edges (to reproduce a published rule).

    Parameters
    ----------
    edges : sequence of float
        ``B + 1`` non-decreasing edges covering every score.
    closed : {"right", "left"}, default "right"
        ``"right"``: ``(e_j, e_{j+1}]`` with the first bin closed;
        ``"left"``: ``[e_j, e_{j+1})`` with the last bin closed.

    Notes
    -----
    Scores are compared with the float64 edges as given (as ``np.digitize`` does
    in the reference code), in NumPy and PyTorch alike. Scores at most 1e-4
    outside the outer edges (float32 rounding of a probability 1) go to the
    outer bins; further out is an error.

    Examples
    --------
    Kull et al. (2019) bin with ``np.digitize(p, np.linspace(0, 1, 15)) - 1``,
    i.e. 14 bins ``[j/14, (j+1)/14)`` plus the point 1.0 alone:

    >>> import numpy as np
    >>> from calipers.estimators.binning import FixedEdges
    >>> kull = FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")
    >>> kull.assign(np.array([0.0, 0.5, 0.999, 1.0]), None)[0].tolist()
    [0, 7, 13, 14]
    """

    edges: Any
    closed: Literal["right", "left"] = "right"
    #: a score's bin does not depend on the other scores (data may be binned in chunks)
    pointwise = True

    def __post_init__(self) -> None:
        e = np.asarray(self.edges, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) < 0) or not np.all(np.isfinite(e)):
            raise CalibrationInputError(
                "edges must be a finite, non-decreasing 1-D sequence of >= 2 values"
            )
        if e.size - 1 > MAX_BINS:
            raise CalibrationInputError(
                f"edges define {e.size - 1} bins; at most {MAX_BINS} are allowed"
            )
        _edge_rule(self.closed)
        object.__setattr__(self, "edges", e)

    @property
    def n_bins(self) -> int:
        """Number of bins, ``len(edges) - 1``."""
        return int(self.edges.size) - 1

    def assign(self, scores: Array, weights: Array | None = None) -> tuple[Array, int]:
        """Bin ids of ``scores``; scores outside ``[e_0, e_B]`` are an error."""
        e: np.ndarray = self.edges
        s = to_numpy(scores)
        if s.ndim != 1:
            raise CalibrationInputError("FixedEdges bins one score per sample")
        tol = DEFAULT_SUM_TOL
        if s.size and (s.min() < e[0] - tol or s.max() > e[-1] + tol):
            raise CalibrationInputError(
                f"scores must lie within the edges [{e[0]}, {e[-1]}]; found range [{s.min()}, {s.max()}]"
            )
        B = len(e) - 1
        if self.closed == "right":
            ids = _searchsorted(e[1:-1], scores, "left")
        else:
            ids = _searchsorted(e[1:], scores, "right")
            ids = ids.clamp(max=B - 1) if is_torch(ids) else np.minimum(ids, B - 1)
        return ids, B


@dataclass(frozen=True)
class KDTree:
    """Adaptive k-d tree binning of Kirchenbauer, Oaks & Heim (2022) App. B (Vaicenavicius et al. 2019).

    A node holding at least ``gamma`` of the total weight is split on the
    coordinate with the largest (weighted, population) variance, ties to the
    first coordinate, at that coordinate's (weighted) mean; samples strictly
    below the mean go left. A node is not split when one side would be empty.
    Leaves therefore hold less than ``gamma`` of the weight unless they are
    unsplittable, i.e. ``max_i |B_i| <= gamma N`` (Kirchenbauer, Oaks & Heim (2022) B.1). The mean is
    the correctly rounded weighted mean (``math.fsum``), so the tree does not
    depend on the order of the rows. The code of
    Kirchenbauer, Oaks & Heim (2022) (``DataDependentBinning(min_size=round(N * frac))``) uses the same
    rule with ``min_size = round(gamma N)``, which this class follows.

    Parameters
    ----------
    gamma : float, default 0.1
        Upper bound of the fraction of samples per bin (Kirchenbauer, Oaks & Heim (2022) B.4 baseline;
        B.2 finds estimates stabilise near 2**-4).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import KDTree
    >>> s = np.array([0.1, 0.2, 0.7, 0.9])       # mean 0.475: {0.1, 0.2} | {0.7, 0.9}
    >>> KDTree(0.75).assign(s, None)[0].tolist()  # nodes of < 3 samples are leaves
    [0, 0, 1, 1]
    """

    gamma: float = 0.1

    def __post_init__(self) -> None:
        if not (0 < self.gamma <= 1):
            raise CalibrationInputError(f"gamma must be in (0, 1]; got {self.gamma!r}")

    def assign(self, scores: Array, weights: Array | None = None) -> tuple[Array, int]:
        """Leaf index of every sample."""
        X = to_numpy(scores).astype(np.float64, copy=False)
        if X.ndim == 1:
            X = X[:, None]
        n = X.shape[0]
        w = np.ones(n) if weights is None else as_float64_numpy(weights)
        min_size = np.round(w.sum() * self.gamma)
        ids = np.zeros(n, dtype=np.int64)
        stack = [np.arange(n)]
        leaf = 0
        while stack:
            idx = stack.pop()
            wi = w[idx]
            W = np.sort(wi).sum()
            if W >= min_size and len(idx) > 1 and W > 0:
                Xi = X[idx]
                mu = (wi[:, None] * Xi).sum(0) / W
                var = (wi[:, None] * (Xi - mu) ** 2).sum(0) / W
                # the split must not depend on the order of the rows: variances
                # equal up to rounding count as ties (first axis wins), and the
                # split point is the correctly rounded weighted mean (math.fsum)
                var = np.round(var / max(var.max(), 1e-300), 9)
                axis = int(np.argmax(var))
                m = math.fsum((wi * Xi[:, axis]).tolist()) / math.fsum(wi.tolist())
                low = Xi[:, axis] < m
                if low.any() and not low.all():
                    # push right first so that the left child gets the lower leaf id
                    stack.append(idx[~low])
                    stack.append(idx[low])
                    continue
            ids[idx] = leaf
            leaf += 1
        return _like(ids, scores), leaf


def nixon_even_bins(n_bins: int = 15) -> FixedEdges:
    """The equal-width bins of the Nixon et al. (2019) code, reproduced exactly.

    robustness_metrics / uncertainty-metrics use upper edges
    ``np.histogram_bin_edges([], n_bins, (0, 1))[1:]`` with ``np.digitize``:
    bins ``[lo, hi)`` on those float edges (so ``0.6000000000000001`` is an
    edge for 5 bins) and a score of exactly 1.0 in a bin of its own
    (docs/how-calipers-computes.md §3.2). Used by :func:`calipers.sce` and its relatives.

    Examples
    --------
    >>> from calipers.estimators.binning import nixon_even_bins
    >>> nixon_even_bins(5).edges.tolist()
    [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0, 1.0]
    """
    B = check_integer(n_bins, "n_bins", minimum=1, maximum=MAX_BINS)
    upper = np.histogram_bin_edges([], B, (0.0, 1.0))[1:]
    return FixedEdges(np.r_[0.0, upper, 1.0], closed="left")
