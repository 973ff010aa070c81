"""Mergeable fine-grid histogram of scores, and equal-mass bins from it.

Equal-mass ("adaptive") bins (Nixon et al. 2019, §4: ACE, TACE and the RMSCE
of their code) put their edges at order statistics of all the scores, so per-bin
totals of separate batches cannot be added. A :class:`ScoreGrid` keeps, per cell
of a fixed fine grid of [0, 1], the totals a bin needs (weight, count, weighted
sums of scores, targets and squared targets) and the smallest and largest score
with positive weight. Cells only add (and min/max), so grids of batches merge
exactly into the grid of the concatenated data, and the state size depends on
the spread of the scores, never on their number.

The grid
--------
Top-label confidences pile up near 1 and class-wise probabilities near 0, so
the cells are uniform in the float64 bit pattern of ``m = min(s, 1 - s)``: with
``bits`` = 7 (the default) every binade ``[2^-j, 2^-(j-1))`` of ``m`` is cut
into 2^7 = 128 cells of relative width 1/128, on both sides of 1/2 (``1 - s``
is exact in float64 for ``s >= 1/2``). The cell index is non-decreasing in the
score, so every cell is an interval of scores; ``s = 1`` (and ``s = 0``) have
cells of their own. At most ``2 * (1022 * 2^bits + 1)`` cells exist (about
2.6e5 for 7 bits); only occupied cells are stored.

Equal-mass bins from the grid
-----------------------------
The rule of :class:`~calipers.estimators.binning.EqualMass` ``rule="nixon"`` puts edge r
at the score of rank ``pos_r = min(round(r W / B), W - 1)`` of the
weight-expanded sorted sample (W the total weight). The cumulative cell weights
locate every ``pos_r`` in one cell. A cell whose weight range starts exactly at
``pos_r``, or that holds one distinct score (``min == max``; ties go up), gives
the edge and the bins exactly. Only an edge strictly inside a cell with several
distinct scores is uncertain: its rank error is at most that cell's weight.

* ``equal_mass_statistics(B)`` (one pass): such a cell is split between the
  bins it straddles in proportion to the rank ranges (linear interpolation of
  the cumulative totals in rank). Writing ``D_b`` for a bin's sum of
  ``w (target - score)``, the split cell c moves at most
  ``A_c = T_c (1 - min_c) + (W_c - T_c) max_c`` of ``|target - score|`` mass
  (T_c its weighted sum of 0/1 targets), so ``sum_b |D_b' - D_b| <= 2 sum_c A_c``
  over the split cells; the L1 equal-mass ECE of the slice, ``sum_b |D_b| / W``,
  is then off by at most ``2 sum_c A_c / W`` (returned as the bound). Cells at
  the low end with no positive targets, or at the high end with only positive
  ones, contribute almost nothing.
* ``equal_mass_statistics(B, rows)`` (two passes): given the rows of the
  straddled cells (:meth:`ScoreGrid.edge_cells` says which; a second pass over
  the data collects them), the edges are the exact order statistics and every
  row lands in its in-memory bin: the totals equal the in-memory ones up to
  summation order (bound 0). The rows kept grow with the data (a few per cent
  of the scores: 334 MB for 10^7 rows of 10 classes in ``calipers table``).
* :class:`EdgeSearch` (exact, in memory that does not grow with the rows):
  each further pass cuts every uncertain range into at most
  :data:`SEARCH_CELLS` sub-ranges of the scores' float64 bit patterns and keeps
  their totals, or, while the uncertain ranges hold at most :data:`SEARCH_ROWS`
  rows in all, keeps those rows. A sub-range that holds no edge rank strictly
  inside, or one distinct score, is added to its bin at once, so the search
  holds per-range arrays of fixed size and never the rows of the data. Each
  pass divides the bit range of an uncertain range by 256; a pass that keeps
  rows ends it. Two or three passes after the first one sufficed in the
  measurements (float32 scores: at most two histogram passes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..estimators.binning import BinStatistics
from ..validation import CalibrationInputError

__all__ = ["EdgeSearch", "ScoreGrid", "score_cells"]

#: Mantissa bits of ``min(s, 1 - s)`` that index a cell (128 cells per binade).
DEFAULT_BITS = 7

#: Sub-cells per uncertain range in one pass of :class:`EdgeSearch` (2**8).
SEARCH_CELLS = 256

#: Rows one :class:`EdgeSearch` may keep in one pass (scores, targets, weights in
#: float64: 24 bytes a row, 6 MiB), whatever the number of rows of the data.
SEARCH_ROWS = 2**18

_FIELDS = ("weight", "count", "sum_score", "sum_target", "sum_target_sq", "min_score", "max_score")


def _n_side(bits: int) -> int:
    return 1022 * (1 << bits) + 1


def _check_bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 0 <= bits <= 12:
        raise CalibrationInputError(f"bits must be an integer in [0, 12]; got {bits!r}")
    return int(bits)


def score_cells(scores: Any, bits: int = DEFAULT_BITS) -> np.ndarray:
    """Cell index of every score on the fine grid of :class:`ScoreGrid`.

    The index is the top ``bits`` mantissa bits (and the exponent) of the
    float64 ``m = min(s, 1 - s)``, mirrored for ``s >= 1/2``, so it is
    non-decreasing in ``s`` and cells have relative width ``2^-bits`` in the
    distance to the nearer end of [0, 1]; the grid used for the equal-mass bins
    of Nixon et al. (2019, §4).

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Scores in [0, 1] (values just outside are put in the end cells).
    bits : int, default 7
        Cells per binade ``2^bits``; in [0, 12].

    Returns
    -------
    ndarray of int64, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.stream.score_grid import score_cells
    >>> k = score_cells(np.array([0.0, 1e-9, 0.3, 0.5, 0.999, 1.0]))
    >>> bool(np.all(np.diff(k) > 0)), int(k[-1])
    (True, 261633)
    """
    bits = _check_bits(bits)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    upper = s >= 0.5
    m = np.where(upper, 1.0 - s, s)
    np.clip(m, 0.0, 0.5, out=m)
    q = m.view(np.int64) >> (52 - bits)
    return np.where(upper, 2 * _n_side(bits) - 1 - q, q)


@dataclass
class ScoreGrid:
    """Per-cell totals of scores on a fixed fine grid (mergeable with ``+``).

    The one-pass summary behind streamed equal-mass bins (Nixon et al. 2019,
    §4; the bin rule of :class:`~calipers.estimators.binning.EqualMass` ``"nixon"``); see
    the module docstring for the grid, the bins and the error bound.

    Attributes
    ----------
    keys : ndarray of int64, shape (c,)
        Occupied cells (:func:`score_cells`), increasing.
    weight, count, sum_score, sum_target, sum_target_sq : ndarray, shape (c,)
        Total weight, number of rows and weighted sums per cell.
    min_score, max_score : ndarray, shape (c,)
        Smallest and largest score of positive weight per cell (``inf`` and
        ``-inf`` for a cell of zero-weight rows only).
    bits : int, default 7
        Cells per binade ``2^bits``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.stream.score_grid import ScoreGrid
    >>> s = np.array([.1, .2, .2, .2, .5, .6, .7, .8, .9, .9]); t = (s > .4) * 1.0
    >>> g = ScoreGrid.from_arrays(s[:4], t[:4]) + ScoreGrid.from_arrays(s[4:], t[4:])
    >>> st, bound = g.equal_mass_statistics(3)
    >>> st.weight.tolist(), bound          # the in-memory bins: EqualMass(3) gives [1, 6, 3]
    ([1.0, 6.0, 3.0, 0.0], 0.0)
    """

    keys: np.ndarray
    weight: np.ndarray
    count: np.ndarray
    sum_score: np.ndarray
    sum_target: np.ndarray
    sum_target_sq: np.ndarray
    min_score: np.ndarray
    max_score: np.ndarray
    bits: int = DEFAULT_BITS

    # ------------------------------------------------------------------ building

    @classmethod
    def from_arrays(
        cls, scores: Any, targets: Any, weights: Any = None, bits: int = DEFAULT_BITS
    ) -> ScoreGrid:
        """The grid of one batch of 1-D scores, targets and optional weights.

        Parameters
        ----------
        scores, targets : array-like of float, shape (n,)
        weights : array-like of float, shape (n,), optional
            Sample weights (default 1).
        bits : int, default 7

        Returns
        -------
        ScoreGrid

        Examples
        --------
        >>> from calipers.stream.score_grid import ScoreGrid
        >>> ScoreGrid.from_arrays([0.2, 0.2, 0.9], [0, 1, 1]).count.tolist()
        [2.0, 1.0]
        """
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        t = np.asarray(targets, dtype=np.float64).reshape(-1)
        w = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
        if t.shape != s.shape or (w is not None and w.shape != s.shape):
            raise CalibrationInputError(
                f"scores, targets (and weights) must have one length; got {s.shape}, {t.shape}"
                f"{'' if w is None else f', {w.shape}'}"
            )
        keys, ids = np.unique(score_cells(s, bits), return_inverse=True)
        ids = ids.reshape(-1)
        c = int(keys.shape[0])
        count = np.bincount(ids, None, c).astype(np.float64)
        pos = np.ones(s.shape, dtype=bool) if w is None else w > 0
        lo = np.full(c, np.inf)
        hi = np.full(c, -np.inf)
        np.minimum.at(lo, ids[pos], s[pos])
        np.maximum.at(hi, ids[pos], s[pos])
        return cls(
            keys.astype(np.int64),
            count if w is None else np.bincount(ids, w, c),
            count,
            np.bincount(ids, s if w is None else s * w, c),
            np.bincount(ids, t if w is None else t * w, c),
            np.bincount(ids, t * t if w is None else t * t * w, c),
            lo,
            hi,
            _check_bits(bits),
        )

    @classmethod
    def empty(cls, bits: int = DEFAULT_BITS) -> ScoreGrid:
        """A grid with no cells."""
        z = np.zeros(0)
        return cls(np.zeros(0, dtype=np.int64), z, z, z, z, z, z, z, _check_bits(bits))

    def __add__(self, other: ScoreGrid) -> ScoreGrid:
        if not isinstance(other, ScoreGrid) or other.bits != self.bits:
            raise CalibrationInputError("can only merge ScoreGrids with the same bits")
        keys = np.union1d(self.keys, other.keys).astype(np.int64)
        ia, ib = np.searchsorted(keys, self.keys), np.searchsorted(keys, other.keys)
        out: dict[str, np.ndarray] = {}
        for f in _FIELDS:
            fill = np.inf if f == "min_score" else -np.inf if f == "max_score" else 0.0
            z = np.full(keys.shape[0], fill)
            a, b = getattr(self, f), getattr(other, f)
            if f == "min_score":
                z[ia] = a
                z[ib] = np.minimum(z[ib], b)
            elif f == "max_score":
                z[ia] = a
                z[ib] = np.maximum(z[ib], b)
            else:
                z[ia] += a
                z[ib] += b
            out[f] = z
        return ScoreGrid(keys, **out, bits=self.bits)

    def same_as(self, other: ScoreGrid) -> bool:
        """Whether ``other`` holds exactly the same cells and totals (bit for bit).

        Examples
        --------
        >>> from calipers.stream.score_grid import ScoreGrid
        >>> a = ScoreGrid.from_arrays([0.2, 0.7], [0, 1])
        >>> a.same_as(ScoreGrid.from_arrays([0.2, 0.7], [0, 1])), a.same_as(a + a)
        (True, False)
        """
        return self.bits == other.bits and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in ("keys", *_FIELDS)
        )

    @property
    def n_cells(self) -> int:
        """Number of occupied cells (the state size is 7 floats per cell)."""
        return int(self.keys.shape[0])

    # ------------------------------------------------------------------ equal-mass bins

    def _layout(self, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Rank positions of edges 1..B-1, cell rank starts/ends, and each edge's cell."""
        w = self.weight
        b = np.cumsum(w)
        a = b - w
        total = float(b[-1]) if b.size else 0.0
        pos = np.round(np.linspace(0, total, int(n_bins), endpoint=False))
        pos = np.minimum(pos, total - 1)[1:]
        cell = np.minimum(np.searchsorted(b, pos, side="right"), max(b.size - 1, 0))
        return pos, a, b, cell

    def _split_edges(self, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pos, a, b, cell = self._layout(n_bins)
        inside = (a[cell] < pos) & (self.min_score[cell] < self.max_score[cell])
        return pos, a, b, np.where(inside, cell, -1)

    def edge_cells(self, n_bins: int) -> np.ndarray:
        """Cells (keys) whose rows a second pass must collect for exact edges.

        Those holding an equal-mass edge rank strictly inside and more than one
        distinct score (Nixon et al. 2019, §4 bins, rule of
        :class:`~calipers.estimators.binning.EqualMass` ``"nixon"``); at most ``n_bins - 1``.

        Parameters
        ----------
        n_bins : int
            Number of equal-mass bins B.

        Returns
        -------
        ndarray of int64

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.stream.score_grid import ScoreGrid
        >>> s = np.linspace(0.3, 0.3001, 10)        # ten scores in one cell
        >>> ScoreGrid.from_arrays(s, s * 0).edge_cells(2).size
        1
        """
        if self.n_cells == 0:
            return np.zeros(0, dtype=np.int64)
        _, _, _, split = self._split_edges(n_bins)
        return np.unique(self.keys[split[split >= 0]]).astype(np.int64)

    def equal_mass_statistics(
        self, n_bins: int, rows: tuple[Any, Any, Any] | None = None
    ) -> tuple[BinStatistics, float]:
        """Per-bin totals of the ``n_bins`` equal-mass bins, and an error bound.

        Bins as :class:`~calipers.estimators.binning.EqualMass` ``(n_bins, "nixon")``
        makes them from all the rows (Nixon et al. 2019, §4): ``n_bins + 1``
        bins, the last holding the scores equal to 1.

        Parameters
        ----------
        n_bins : int
            Number of bins B.
        rows : (scores, targets, weights), optional
            Every row of the cells of :meth:`edge_cells` (a second pass; weights
            may be None for unit weights). Then the bins are exact and the bound
            is 0. Missing or extra rows raise.

        Returns
        -------
        stats : BinStatistics
            ``n_bins + 1`` bins; ``count`` of the one-pass split is fractional.
        bound : float
            ``2 sum_c A_c`` over the split cells (module docstring), in weight
            units: ``sum_b |D_b' - D_b|`` is at most this, so the weighted L1
            error ``sum_b |D_b| / W`` is off by at most ``bound / W``.

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.stream.score_grid import ScoreGrid
        >>> s = np.linspace(0.3, 0.3001, 10); t = np.r_[np.zeros(5), np.ones(5)]
        >>> g = ScoreGrid.from_arrays(s, t)
        >>> st, bound = g.equal_mass_statistics(2)           # one pass: split in proportion
        >>> st.sum_target.tolist(), round(bound, 4)
        ([2.5, 2.5, 0.0], 10.001)
        >>> st, bound = g.equal_mass_statistics(2, rows=(s, t, None))   # exact
        >>> st.sum_target.tolist(), bound
        ([0.0, 5.0, 0.0], 0.0)
        """
        B = int(n_bins)
        if B < 1:
            raise CalibrationInputError(f"n_bins must be at least 1; got {n_bins!r}")
        out = np.zeros((5, B + 1))
        if self.n_cells == 0 or not float(self.weight.sum()) > 0:
            return BinStatistics(*out), 0.0
        pos, a, b, split = self._split_edges(B)
        vals = np.stack(
            [self.weight, self.count, self.sum_score, self.sum_target, self.sum_target_sq]
        )
        if rows is not None:
            return self._exact(B, pos, a, split, vals, rows), 0.0
        start = np.searchsorted(pos, a, side="right")
        end = np.searchsorted(pos, b, side="left")
        point = self.min_score >= self.max_score
        binid = np.where(self.min_score >= 1.0, B, end)
        whole = point | (start == end) | (self.weight <= 0)
        for r in range(5):
            out[r] += np.bincount(binid[whole], vals[r, whole], B + 1)
        bound = 0.0
        edges = np.r_[-np.inf, pos, np.inf]
        for c in np.flatnonzero(~whole):
            j = np.arange(start[c], end[c] + 1)
            share = (np.minimum(b[c], edges[j + 1]) - np.maximum(a[c], edges[j])) / self.weight[c]
            out[:, j] += vals[:, c : c + 1] * share
            t, w = self.sum_target[c], self.weight[c]
            bound += 2.0 * (t * (1.0 - self.min_score[c]) + (w - t) * self.max_score[c])
        return BinStatistics(*out), float(bound)

    def _exact(
        self,
        B: int,
        pos: np.ndarray,
        a: np.ndarray,
        split: np.ndarray,
        vals: np.ndarray,
        rows: tuple[Any, Any, Any],
    ) -> BinStatistics:
        s = np.asarray(rows[0], dtype=np.float64).reshape(-1)
        t = np.asarray(rows[1], dtype=np.float64).reshape(-1)
        w = np.ones_like(s) if rows[2] is None else np.asarray(rows[2], dtype=np.float64)
        need = self.edge_cells(B)
        rk = score_cells(s, self.bits)
        idx = np.searchsorted(self.keys, need)
        have = np.bincount(np.searchsorted(need, rk), None, need.size + 1)
        if np.any(~np.isin(rk, need)) or not np.array_equal(have[: need.size], self.count[idx]):
            raise CalibrationInputError(
                "the second pass collected rows that do not match the first pass: "
                f"{int(rk.size)} rows for {int(self.count[idx].sum())} rows in {need.size} edge "
                "cells (every batch of the first pass must be passed once to the second)"
            )
        _, _, _, cell = self._layout(B)
        e = self.min_score[cell].copy()
        for k in np.flatnonzero(split >= 0):
            c = split[k]
            mine = rk == self.keys[c]
            order = np.argsort(s[mine], kind="stable")
            ss = s[mine][order]
            cw = a[c] + np.cumsum(w[mine][order])
            e[k] = ss[min(int(np.searchsorted(cw, pos[k], side="right")), ss.size - 1)]
        upper = np.r_[e, 1.0]
        out = np.zeros((5, B + 1))
        whole = ~np.isin(self.keys, need)
        binid = np.searchsorted(upper, np.where(self.weight > 0, self.min_score, 1.0), "right")
        for r in range(5):
            out[r] += np.bincount(binid[whole], vals[r, whole], B + 1)
        rb = np.searchsorted(upper, s, "right")
        row_vals = (w, np.ones_like(w), s * w, t * w, t * t * w)
        for r in range(5):
            out[r] += np.bincount(rb, row_vals[r], B + 1)
        return BinStatistics(*out)

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready content (floats as exact ``float.hex`` strings).

        Examples
        --------
        >>> from calipers.stream.score_grid import ScoreGrid
        >>> g = ScoreGrid.from_arrays([0.25, 0.75], [0, 1])
        >>> ScoreGrid.from_dict(g.to_dict()).to_dict() == g.to_dict()
        True
        """
        d: dict[str, Any] = {"bits": self.bits, "keys": [int(k) for k in self.keys]}
        for f in _FIELDS:
            d[f] = [float(v).hex() for v in getattr(self, f)]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreGrid:
        """Rebuild a grid from :meth:`to_dict` output (exact round trip)."""
        try:
            keys = np.array(data["keys"], dtype=np.int64)
            arrs = {f: np.array([float.fromhex(v) for v in data[f]]) for f in _FIELDS}
            bits = _check_bits(data["bits"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationInputError(f"not a ScoreGrid document: {exc}") from None
        if any(v.shape != keys.shape for v in arrs.values()):
            raise CalibrationInputError("not a ScoreGrid document: arrays of different lengths")
        return cls(keys, **arrs, bits=bits)


# ----------------------------------------------------------------------------- exact search


def _monotone_keys(s: np.ndarray) -> np.ndarray:
    """int64 keys in the order of the float64 values (the bit pattern, sign-folded)."""
    b = np.ascontiguousarray(s, dtype=np.float64).view(np.int64)
    return b ^ ((b >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


@dataclass
class _Range:
    """An uncertain range of one grid cell: the rows whose clipped key is in [k0, k1]."""

    cell: int  # the grid cell (score_cells key)
    clip: tuple[int, int]  # keys of the cell's smallest and largest positive-weight score
    k0: int
    k1: int
    base: float  # weight of all rows before the range (its first rank)
    count: float  # rows in the range (known from the previous pass)
    ranks: np.ndarray  # indices of the edges whose rank is uncertain inside the range
    collect: bool = False
    shift: int = 0
    sums: np.ndarray | None = None  # (5, m): weight, count, scores, targets, squared targets
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)


class EdgeSearch:
    """Exact equal-mass bins from further passes over the data, in bounded memory.

    The rule of :class:`~calipers.estimators.binning.EqualMass` ``"nixon"``
    (Nixon et al. 2019, §4) puts the bin edges at order statistics of all the
    scores. A first pass gives a :class:`ScoreGrid`; the edges whose rank falls
    strictly inside a grid cell of several distinct scores are then found by
    further passes over the same rows (see the module docstring): each pass
    calls :meth:`update` on every batch and then :meth:`next_pass`, until that
    returns False; :meth:`statistics` then gives the per-bin totals of the
    in-memory bins (equal up to summation order). The memory held is at most
    :data:`SEARCH_CELLS` sub-ranges (7 floats each) per uncertain edge and
    :data:`SEARCH_ROWS` rows, whatever the number of rows.

    Parameters
    ----------
    grid : ScoreGrid
        The first pass over all the rows.
    n_bins : int
        Number of equal-mass bins B.
    cells : int, default 256
        Sub-ranges per uncertain range and pass (at least 2).
    max_rows : int, default 262144
        Rows kept in one pass, for all uncertain ranges together (24 bytes each).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.binning import EqualMass, bin_statistics
    >>> from calipers.stream.score_grid import EdgeSearch, ScoreGrid
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(0.3, 0.3001, 5000); t = (rng.uniform(size=5000) < s) * 1.0
    >>> batches = [(s[:2000], t[:2000]), (s[2000:], t[2000:])]
    >>> grid = ScoreGrid.from_arrays(s[:2000], t[:2000]) + ScoreGrid.from_arrays(s[2000:], t[2000:])
    >>> search = EdgeSearch(grid, 10, max_rows=100)     # keep at most 100 rows in a pass
    >>> passes = 1
    >>> while search.active:
    ...     for bs, bt in batches:
    ...         search.update(bs, bt)
    ...     passes += 1
    ...     _ = search.next_pass()
    >>> st = search.statistics()
    >>> ids, nb = EqualMass(10, "nixon").assign(s, None)
    >>> ref = bin_statistics(ids, nb, s, t, None)
    >>> passes, bool(np.allclose(st.sum_target[:nb], ref.sum_target, rtol=1e-12, atol=0))
    (4, True)
    """

    def __init__(
        self,
        grid: ScoreGrid,
        n_bins: int,
        *,
        cells: int = SEARCH_CELLS,
        max_rows: int = SEARCH_ROWS,
    ) -> None:
        B = int(n_bins)
        if B < 1:
            raise CalibrationInputError(f"n_bins must be at least 1; got {n_bins!r}")
        if int(cells) < 2 or int(max_rows) < 0:
            raise CalibrationInputError(
                f"cells must be at least 2 and max_rows at least 0; got {cells!r}, {max_rows!r}"
            )
        self.bits = grid.bits
        self.n_bins = B
        self.cells = int(cells)
        self.max_rows = int(max_rows)
        self.passes = 0
        self.totals = np.zeros((5, B + 1))
        self.ranges: list[_Range] = []
        if grid.n_cells == 0 or not float(grid.weight.sum()) > 0:
            self.pos = np.zeros(0)
            self.edges = np.zeros(0)
            return
        pos, a, b, split = grid._split_edges(B)
        _, _, _, cell = grid._layout(B)
        self.pos = pos
        self.edges = grid.min_score[cell].copy()
        vals = np.stack(
            [grid.weight, grid.count, grid.sum_score, grid.sum_target, grid.sum_target_sq]
        )
        open_cells = np.unique(split[split >= 0])
        whole = np.ones(grid.n_cells, dtype=bool)
        whole[open_cells] = False
        self._deposit(vals[:, whole], b[whole], grid.min_score[whole], grid.weight[whole])
        for c in open_cells:
            lo, hi = _monotone_keys(np.array([grid.min_score[c], grid.max_score[c]]))
            self.ranges.append(
                _Range(
                    int(grid.keys[c]),
                    (int(lo), int(hi)),
                    int(lo),
                    int(hi),
                    float(a[c]),
                    float(grid.count[c]),
                    np.flatnonzero(split == c),
                )
            )
        self._plan()

    @property
    def active(self) -> bool:
        """True while some edge is still uncertain (another pass is needed)."""
        return bool(self.ranges)

    def _deposit(self, vals: np.ndarray, ends: np.ndarray, lo: np.ndarray, w: np.ndarray) -> None:
        """Add whole (sub-)cells to their bins: the edges with rank below their end."""
        binid = np.searchsorted(self.pos, ends, side="left")
        binid = np.where((w > 0) & (lo < 1.0), binid, self.n_bins)
        for r in range(5):
            self.totals[r] += np.bincount(binid, vals[r], self.n_bins + 1)

    def _plan(self) -> None:
        """Keep the rows of the smallest ranges (within ``max_rows``), histogram the others."""
        budget = self.max_rows
        for rg in sorted(self.ranges, key=lambda r: r.count):
            if rg.count <= budget:
                rg.collect = True
                budget -= int(rg.count)
                continue
            m = self.cells.bit_length() - 1  # floor(log2(cells))
            rg.shift = max(0, (rg.k1 - rg.k0).bit_length() - m)
            n = ((rg.k1 - rg.k0) >> rg.shift) + 1
            rg.sums = np.zeros((5, n))
            rg.lo = np.full(n, np.inf)
            rg.hi = np.full(n, -np.inf)

    def update(self, scores: Any, targets: Any, weights: Any = None) -> None:
        """Add a batch of the current pass (every row of the data once per pass).

        Parameters
        ----------
        scores, targets : array-like of float, shape (n,)
        weights : array-like of float, shape (n,), optional
        """
        if not self.ranges:
            return
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        cells = score_cells(s, self.bits)
        mine = np.isin(cells, [rg.cell for rg in self.ranges])
        if not mine.any():
            return
        s, cells = s[mine], cells[mine]
        t = np.asarray(targets, dtype=np.float64).reshape(-1)[mine]
        w = (
            np.ones(s.shape)
            if weights is None
            else np.asarray(weights, dtype=np.float64).reshape(-1)[mine]
        )
        keys = _monotone_keys(s)
        for rg in self.ranges:
            k = np.clip(keys, rg.clip[0], rg.clip[1])
            sel = (cells == rg.cell) & (k >= rg.k0) & (k <= rg.k1)
            if not sel.any():
                continue
            if rg.collect:
                rg.rows.append((s[sel], t[sel], w[sel]))
                continue
            assert rg.sums is not None and rg.lo is not None and rg.hi is not None
            ids = ((k[sel] - rg.k0) >> rg.shift).astype(np.intp)
            n = rg.sums.shape[1]
            ss, tt, ww = s[sel], t[sel], w[sel]
            for r, v in enumerate((ww, np.ones_like(ww), ss * ww, tt * ww, tt * tt * ww)):
                rg.sums[r] += np.bincount(ids, v, n)
            pos = ww > 0
            np.minimum.at(rg.lo, ids[pos], ss[pos])
            np.maximum.at(rg.hi, ids[pos], ss[pos])

    def next_pass(self) -> bool:
        """Close the pass: settle the edges it found; True when another pass is needed."""
        self.passes += 1
        new: list[_Range] = []
        for rg in self.ranges:
            if rg.collect:
                self._settle_rows(rg)
            else:
                new.extend(self._settle_cells(rg))
        self.ranges = new
        self._plan()
        return self.active

    def _mismatch(self, rg: _Range, seen: float) -> CalibrationInputError:
        return CalibrationInputError(
            f"the passes over the data saw different rows: {int(seen)} rows in a range of "
            f"scores that held {int(rg.count)} in the previous pass (every batch must be "
            "passed once in every pass)"
        )

    def _settle_rows(self, rg: _Range) -> None:
        if rg.rows:
            s, t, w = (np.concatenate(x) for x in zip(*rg.rows, strict=True))
        else:
            s = t = w = np.zeros(0)
        if s.size != rg.count:
            raise self._mismatch(rg, s.size)
        order = np.argsort(s, kind="stable")
        ss = s[order]
        cw = rg.base + np.cumsum(w[order])
        for k in rg.ranks:
            self.edges[k] = ss[
                min(int(np.searchsorted(cw, self.pos[k], side="right")), ss.size - 1)
            ]
        first = int(np.searchsorted(self.pos, rg.base, side="left"))
        last = int(np.searchsorted(self.pos, rg.base + float(w.sum()), side="left"))
        binid = first + np.searchsorted(self.edges[first:last], s, side="right")
        binid = np.where(s >= 1.0, self.n_bins, binid)
        for r, v in enumerate((w, np.ones_like(w), s * w, t * w, t * t * w)):
            self.totals[r] += np.bincount(binid, v, self.n_bins + 1)
        rg.rows = []

    def _settle_cells(self, rg: _Range) -> list[_Range]:
        assert rg.sums is not None and rg.lo is not None and rg.hi is not None
        sums, lo, hi = rg.sums, rg.lo, rg.hi
        if sums[1].sum() != rg.count:
            raise self._mismatch(rg, float(sums[1].sum()))
        b = rg.base + np.cumsum(sums[0])
        a = b - sums[0]
        found: dict[int, list[int]] = {}
        for k in rg.ranks:
            p = self.pos[k]
            j = min(int(np.searchsorted(b, p, side="right")), b.size - 1)
            if a[j] < p and lo[j] < hi[j]:
                found.setdefault(j, []).append(int(k))
            else:
                self.edges[k] = lo[j]
        whole = sums[1] > 0
        whole[list(found)] = False
        self._deposit(sums[:, whole], b[whole], lo[whole], sums[0][whole])
        out = []
        for j, ks in sorted(found.items()):
            k0 = rg.k0 + (j << rg.shift)
            k1 = min(rg.k0 + ((j + 1) << rg.shift) - 1, rg.k1)
            out.append(
                _Range(rg.cell, rg.clip, k0, k1, float(a[j]), float(sums[1, j]), np.array(ks))
            )
        return out

    def statistics(self) -> BinStatistics:
        """Per-bin totals of the ``n_bins + 1`` bins (as :meth:`ScoreGrid.equal_mass_statistics`).

        Raises while an edge is still uncertain (:attr:`active`).
        """
        if self.ranges:
            raise CalibrationInputError(
                "the exact equal-mass edges need another pass over the data (EdgeSearch.active)"
            )
        return BinStatistics(*self.totals.copy())
