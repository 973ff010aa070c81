"""Honest calibration bands for binary predictions (Dimitriadis, Dümbgen, Henzi, Puke & Ziegel 2023).

The calibration curve ``p(x) = P(Y = 1 | prediction = x)`` of a binary
predictor is assumed non-decreasing, and nothing else. Sort the rows by their
prediction and pool equal predictions into ``G`` groups ``x_1 < ... < x_G``.
For every index interval ``j..k`` of groups, the ``S`` events among its ``n``
rows are a sum of independent Bernoulli variables whose mean success
probability ``p_bar`` lies between ``p(x_j)`` and ``p(x_k)``. By Hoeffding
(1956) the one-sided Clopper & Pearson (1934) bounds of a binomial proportion
stay valid for ``p_bar``; with the Bonferroni correction over the
``G (G + 1) / 2`` intervals and the two sides, level ``a = alpha / (G (G + 1))``
each, the band

* ``lower(x_i) = max over j <= k <= i of B(a; S_jk, n_jk - S_jk + 1)``
  (it bounds ``p(x_k) <= p(x_i)`` from below),
* ``upper(x_i) = min over i <= j <= k of B(1 - a; S_jk + 1, n_jk - S_jk)``,

with ``B(q; s, t)`` the ``q``-quantile of the Beta(s, t) distribution (0 for
``s = 0``, 1 for ``t = 0``), holds the whole curve with probability at least
``1 - alpha`` for every sample size. Between groups the lower bound extends to
the right and the upper bound to the left (both are valid there by
monotonicity); below the smallest prediction the lower bound is 0, above the
largest the upper bound is 1. This is the construction and the output of the R
package calibrationband (Puke & Dimitriadis), ``method = "standard"``, and its
``method = "round"``: the predictions are grouped by ``floor`` (upper bound,
the group standing at its smallest prediction) and ``ceiling`` (lower bound,
at its largest prediction) of ``x * 10**digits``, which caps ``G`` at
``10**digits + 1``. ``nc=True`` widens the band to contain the isotonic (PAV)
estimate (R's non-crossing variant); without it the two bounds may cross,
which rejects the monotonicity of the calibration curve where they do.

Computation. The maximum over the ``O(G^2)`` intervals is exact, but most
intervals are never evaluated: an interval that starts at a group without an
event, or right after a group without a failure, or that ends at a group
without an event, is dominated by one a group shorter or longer with the same
failures and at least as many events; and a record ``R`` of the running
maximum rules out every interval with ``S <= n R`` or ``2 n KL(S/n, R) <= z^2``
(``z`` the upper ``a`` normal quantile, ``KL`` the Bernoulli Kullback-Leibler
divergence): its Clopper-Pearson bound cannot exceed ``R`` by the lower bound
on the binomial tail of Zubkov & Serov (2013). The rule is applied to blocks
of 64 starts at once (the block's most events and fewest failures) and to
chunks of 128 ends, the record raised first by the intervals of the last
record's start and length. Only a few intervals per group reach the Beta
quantile; the bounds equal the full maximum (the tests compare with the
brute force over all intervals). About 0.5 to 1.5 s for ``10^4``
distinct predictions and 7 to 30 s for ``10^5`` on two shared cores, where the
``G (G + 1)`` Beta quantiles that calibrationband's C++ loop evaluates would
take minutes and hours (``benchmarks/bench_honest_band.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import to_numpy
from .._docstrings import fill_doc
from ..estimators.quadratic_cost import check_quadratic_cost
from ..metrics.decomposition import pav
from ..validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["honest_calibration_band", "CalibrationBand", "BandDeviation"]

#: Starts per block of the pruning rule, ends per chunk.
_BLOCK = 64
_CHUNK = 128
#: Measured seconds per pair of groups of the pruned loop on one core (both sides,
#: benchmarks/bench_honest_band.py: about 7 s for 10^5 groups); only warns past 30 s.
_SECONDS_PER_PAIR = 7e-10


@dataclass(frozen=True)
class BandDeviation:
    """A range of predictions where the honest band excludes the diagonal.

    Attributes
    ----------
    start, end : float
        The range of predictions ``x`` (``start < end``).
    direction : {"above", "below"}
        ``"above"``: the band lies above the diagonal, ``p(x) > x``: the events
        happen more often than predicted (the predictions are too low there);
        ``"below"``: ``p(x) < x``, the predictions are too high.
    """

    start: float
    end: float
    direction: Literal["above", "below"]


@dataclass(frozen=True)
class CalibrationBand:
    """A simultaneous confidence band for a monotone calibration curve.

    Returned by :func:`honest_calibration_band` (Dimitriadis, Dümbgen, Henzi,
    Puke & Ziegel 2023).

    Attributes
    ----------
    x : numpy.ndarray
        ``(m,)`` ascending knots: the distinct predictions (``method="standard"``)
        or the predictions standing for the rounding groups (``"round"``).
    lower, upper : numpy.ndarray
        ``(m,)`` the band at the knots. Between knots the lower bound holds
        from a knot to the next one (``lower_at``), the upper bound from the
        previous knot up to it (``upper_at``).
    isotonic : numpy.ndarray
        ``(m,)`` the isotonic (PAV) estimate of the calibration curve at the
        knots (equal predictions pooled).
    alpha : float
        The band holds the whole curve with probability at least ``1 - alpha``.
    method : {"standard", "round"}
    digits : int or None
        The rounding of ``method="round"``.
    nc : bool
        Whether the band was widened to contain the isotonic estimate.
    n : int
        Rows.
    n_distinct : int
        Distinct predictions.
    """

    x: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    isotonic: np.ndarray
    alpha: float
    method: str
    digits: int | None
    nc: bool
    n: int
    n_distinct: int

    def _knots(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The knots extended to 0 and 1 (lower 0 at 0, upper 1 at 1), as calibrationband."""
        x, lo, up = self.x, self.lower, self.upper
        if x[0] > 0.0:
            x, lo, up = np.r_[0.0, x], np.r_[0.0, lo], np.r_[up[0], up]
        if x[-1] < 1.0:
            x, lo, up = np.r_[x, 1.0], np.r_[lo, lo[-1]], np.r_[up, 1.0]
        return x, lo, up

    @staticmethod
    def _points(s: Any) -> np.ndarray:
        v = np.asarray(s, dtype=np.float64)
        if not np.all((v >= 0.0) & (v <= 1.0)):
            raise CalibrationInputError("the band is defined for predictions in [0, 1]")
        return v

    def lower_at(self, s: Any) -> np.ndarray:
        """The lower bound at predictions ``s`` in [0, 1] (that of the nearest knot at or below)."""
        x, lo, _ = self._knots()
        v = self._points(s)
        return lo[np.clip(np.searchsorted(x, v, side="right") - 1, 0, len(x) - 1)]

    def upper_at(self, s: Any) -> np.ndarray:
        """The upper bound at predictions ``s`` in [0, 1] (that of the nearest knot at or above)."""
        x, _, up = self._knots()
        v = self._points(s)
        return up[np.clip(np.searchsorted(x, v, side="left"), 0, len(x) - 1)]

    def covers(self, curve: Callable[[np.ndarray], Any]) -> bool:
        """Whether a non-decreasing curve lies in the band on all of [0, 1].

        For a non-decreasing ``curve`` it is enough to look at the knots:
        ``lower <= curve(x) <= upper`` there gives it everywhere.
        """
        c = np.asarray(curve(self.x), dtype=np.float64)
        return bool(np.all(self.lower <= c) and np.all(c <= self.upper))

    def deviations(self) -> tuple[BandDeviation, ...]:
        """The ranges of predictions where the band excludes the diagonal.

        Where the lower bound exceeds ``x`` (``"above"``) or the upper bound
        falls below it (``"below"``), the calibration curve differs from the
        diagonal with confidence ``1 - alpha`` (simultaneously over all
        ranges): evidence of miscalibration there. Computed exactly on the
        step functions (calibrationband reads them off a grid of 10 000
        points). Where the bounds cross (:meth:`crossings`) the band is empty
        and a deviation there speaks against the monotonicity of the curve
        rather than for a direction of miscalibration.
        """
        x, lo, up = self._knots()
        pieces: list[tuple[float, float, str]] = []
        for i in range(len(x) - 1):
            top = min(float(lo[i]), float(x[i + 1]))
            if top > x[i]:
                pieces.append((float(x[i]), top, "above"))
            bottom = max(float(up[i + 1]), float(x[i]))
            if bottom < x[i + 1]:
                pieces.append((bottom, float(x[i + 1]), "below"))
        pieces.sort()
        merged: list[list[Any]] = []
        for a, b, d in pieces:
            if merged and merged[-1][2] == d and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b, d])
        return tuple(BandDeviation(a, b, d) for a, b, d in merged)

    def crossings(self) -> tuple[tuple[float, float], ...]:
        """The ranges of predictions where the lower bound exceeds the upper bound.

        A crossing rejects a non-decreasing calibration curve there (at level
        ``alpha``); with ``nc=True`` there are none.
        """
        x, lo, up = self._knots()
        out: list[list[float]] = []
        for i in range(len(x)):
            spans = []
            if lo[i] > up[i]:
                spans.append((float(x[i]), float(x[i])))
            if i + 1 < len(x) and lo[i] > up[i + 1]:
                spans.append((float(x[i]), float(x[i + 1])))
            for a, b in spans:
                if out and a <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], b)
                else:
                    out.append([a, b])
        return tuple((a, b) for a, b in out)

    @property
    def max_width(self) -> float:
        """The largest ``upper - lower`` at the knots."""
        return float(np.max(self.upper - self.lower))


def _candidates(S: np.ndarray, n: np.ndarray, R: Any, z2: float) -> np.ndarray:
    """False where the Clopper-Pearson lower bound of ``S`` events in ``n`` is surely ``<= R``.

    The bound is below ``S / n``; and when ``S > n R`` the binomial tail
    ``P(Bin(n, R) >= S) >= Phi(-sqrt(2 n KL(S / n, R)))`` (Zubkov & Serov 2013),
    so ``2 n KL <= z^2`` keeps the tail at or above ``a`` and the bound at or
    below ``R``. Margins keep rounding on the safe (evaluating) side.
    """
    from scipy.special import xlogy

    ph = S / np.where(n > 0, n, 1.0)
    Rb = np.asarray(R, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = xlogy(ph, ph / Rb) + xlogy(1.0 - ph, (1.0 - ph) / (1.0 - Rb))
    keep = (S > n * Rb * (1.0 + 1e-12)) & ((Rb <= 0.0) | ~(2.0 * n * kl <= z2 * (1.0 - 1e-9)))
    return np.asarray(keep)


def _lower_bounds(ys: np.ndarray, ns: np.ndarray, a: float) -> np.ndarray:
    """``max over j <= k <= i`` of the level-``a`` Clopper-Pearson lower bounds, for every ``i``.

    ``ys`` events and ``ns`` rows per group, groups in ascending order of the
    prediction. Exact maximum with the pruning of the module docstring.
    """
    from scipy.special import betaincinv, ndtri

    G = len(ys)
    A = np.concatenate(([0.0], np.cumsum(ys)))
    C = np.concatenate(([0.0], np.cumsum(ns)))
    fails = ns - ys
    z = -float(ndtri(a))
    z2 = z * z
    # an interval may start only at a group with an event whose preceding group has a
    # failure: otherwise one more or one less group has the same failures and more events
    starts = np.flatnonzero((ys > 0) & np.concatenate(([True], fails[:-1] > 0)))
    SA, SC = A[starts], C[starts]
    out = np.empty(G)
    R = 0.0
    rec_start, rec_end = -1, -1  # the interval that set the record (start index into ``starts``)
    for m0 in range(0, G, _CHUNK):
        m1 = min(G, m0 + _CHUNK)
        # an interval may end only at a group with an event (else one group less is better)
        ends = m0 + np.flatnonzero(ys[m0:m1] > 0)
        if ends.size == 0:
            out[m0:m1] = R
            continue
        Ae, Ce = A[ends + 1], C[ends + 1]
        n_starts = np.searchsorted(starts, ends, side="right")  # starts <= each end
        best = np.zeros(m1 - m0)
        best_start = np.full(m1 - m0, -1)
        if rec_start >= 0:
            # probes: the record's start, and the start that keeps the record's length
            length = starts[rec_start] + (ends - rec_end)
            shifted = np.searchsorted(starts, length, side="right") - 1
            for p in (np.full(ends.size, rec_start), np.clip(shifted, 0, n_starts - 1)):
                Sp, Np = Ae - SA[p], Ce - SC[p]
                ok = (p < n_starts) & (Sp > 0)
                qp = np.zeros(ends.size)
                qp[ok] = betaincinv(Sp[ok], Np[ok] - Sp[ok] + 1.0, a)
                better = qp > best[ends - m0]
                best[ends[better] - m0] = qp[better]
                best_start[ends[better] - m0] = p[better]
        # the record each end must beat (a lower bound of the running maximum there)
        floor = np.maximum(np.maximum.accumulate(best), R)[ends - m0]
        first_end = ends[0]
        n_before = np.searchsorted(starts, first_end, side="left")
        n_blocks = n_before // _BLOCK
        parts = []
        if n_blocks:
            head = np.arange(n_blocks) * _BLOCK
            tail = head + (_BLOCK - 1)
            s_most = Ae[-1] - SA[head]  # the longest interval of the block: most events
            f_fewest = (Ce[0] - SC[tail]) - (Ae[0] - SA[tail])  # the shortest: fewest failures
            keep = np.flatnonzero(_candidates(s_most, s_most + f_fewest, floor[0], z2))
            if keep.size:
                parts.append((keep[:, None] * _BLOCK + np.arange(_BLOCK)).ravel())
        parts.append(np.arange(n_blocks * _BLOCK, n_starts[-1]))
        idx = np.concatenate(parts) if len(parts) > 1 else parts[0]
        S = Ae[:, None] - SA[idx][None, :]
        N = Ce[:, None] - SC[idx][None, :]
        mask = _candidates(S, N, floor[:, None], z2) & (starts[idx][None, :] <= ends[:, None])
        if mask.any():
            r, c = np.nonzero(mask)
            Sk, Nk = S[r, c], N[r, c]
            q = betaincinv(Sk, Nk - Sk + 1.0, a)
            order = np.lexsort((q, r))
            last = np.r_[np.flatnonzero(np.diff(r[order])), order.size - 1]
            rows, qmax, jmax = r[order][last], q[order][last], idx[c[order][last]]
            at = ends[rows] - m0
            better = qmax > best[at]
            best[at[better]] = qmax[better]
            best_start[at[better]] = jmax[better]
        best[0] = max(best[0], R)
        run = np.maximum.accumulate(best)
        out[m0:m1] = run
        if run[-1] > R:
            k = int(np.argmax(best))
            if best_start[k] >= 0:
                rec_start, rec_end = int(best_start[k]), m0 + k
        R = float(run[-1])
    return out


def _band(ys: np.ndarray, ns: np.ndarray, alpha: float, side: str) -> np.ndarray:
    """The lower (``side="lower"``) or upper bounds of groups, Bonferroni over their intervals."""
    G = len(ys)
    a = alpha / (G * (G + 1.0))
    if side == "lower":
        return _lower_bounds(ys, ns, a)
    # the upper bound of p is one minus the lower bound of 1 - p, groups reversed
    return 1.0 - _lower_bounds((ns - ys)[::-1], ns[::-1], a)[::-1]


def _binary_inputs(
    probs: Any, labels: Any, logits: bool, classes: Any
) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(probs, Predictions):
        if labels is not None:
            raise CalibrationInputError(
                "labels must be None when probs is a Predictions (it holds its labels)"
            )
        P = probs
    else:
        P = check_predictions(probs, labels, logits=logits, classes=classes)
    if P.sample_weight is not None:
        raise CalibrationInputError(
            "honest_calibration_band counts events (binomial bounds) and takes no sample_weight"
        )
    p = np.asarray(to_numpy(P.probs), dtype=np.float64)
    y = np.asarray(to_numpy(P.labels))
    if p.ndim == 2:
        if p.shape[1] != 2:
            raise CalibrationInputError(
                f"honest_calibration_band is for binary predictions; probs has {p.shape[1]} "
                "classes. For class c pass its one-vs-rest column: "
                "honest_calibration_band(probs[:, c], labels == c)"
            )
        p = p[:, 1]
    return p, (y == 1).astype(np.float64)


@fill_doc
def honest_calibration_band(
    probs: Any,
    labels: Any = None,
    *,
    alpha: float = 0.05,
    method: Literal["standard", "round"] = "standard",
    digits: int | None = None,
    nc: bool = False,
    logits: bool = False,
    classes: Any = None,
) -> CalibrationBand:
    """Honest simultaneous confidence band for the calibration curve of binary predictions.

    The band of Dimitriadis, Dümbgen, Henzi, Puke & Ziegel (2023) holds the
    calibration curve ``p(x) = P(Y = 1 | prediction = x)`` on all of [0, 1]
    with probability at least ``1 - alpha`` for every sample size, assuming
    only that the curve is non-decreasing: the one-sided Clopper & Pearson
    (1934) bounds of every interval of sorted predictions, valid for unequal
    success probabilities by Hoeffding (1956), Bonferroni-corrected over all
    intervals (see :mod:`calipers.inference._honest_calibration_band`). The
    numbers are those of the R package calibrationband's
    ``calibration_bands`` with the same ``method``, ``digits`` and ``nc``
    (knots, bounds; the isotonic estimate pools equal predictions, which R's
    ``isoreg`` does not). Where the band excludes the diagonal the predictions
    are miscalibrated (:meth:`CalibrationBand.deviations`); unlike per-bin
    intervals (Wilson 1927), which each hold their bin's frequency with
    probability ``1 - alpha`` but together far less often, the band's
    guarantee is for all predictions at once.

    Parameters
    ----------
    {probs}
        Binary predictions only, ``(n,)`` or ``(n, 2)``, or a validated
        Predictions (then ``labels=None``). Multi-class predictions are
        refused: pass one class's column against ``labels == c`` (one-vs-rest).
    {labels}
    alpha : float, default 0.05
        One minus the simultaneous confidence level, in (0, 1).
    method : {"standard", "round"}, default "standard"
        ``"standard"``: one knot per distinct prediction (exact; the cost grows
        with the square of the number of distinct predictions, warned about
        past 30 s). ``"round"``: predictions grouped by ``10**-digits``
        (at most ``10**digits + 1`` knots per side, any ``n``; the band is valid
        and somewhat wider).
    digits : int, optional
        Decimal digits of ``method="round"``, 1 to 6; default 2 (calibrationband's).
    nc : bool, default False
        Widen the band to contain the isotonic estimate (no crossings).
    {logits}
    {classes}

    Returns
    -------
    CalibrationBand
        Knots, bounds, the isotonic estimate, and the ranges where the band
        excludes the diagonal (``deviations()``).

    Examples
    --------
    Ten rows with predictions 0.1 ... 1.0: the lower bound at 1.0 is the
    Clopper-Pearson bound of the longest run of events, 0.6 ... 1.0 (five
    events), at level ``0.05 / (10 * 11)``:

    >>> import numpy as np
    >>> from calipers.inference import honest_calibration_band
    >>> x = np.arange(1, 11) / 10
    >>> y = np.array([0, 0, 1, 0, 0, 1, 1, 1, 1, 1])
    >>> band = honest_calibration_band(x, y)
    >>> round(float(band.lower[-1]), 4), round((0.05 / 110) ** (1 / 5), 4)
    (0.2145, 0.2145)
    >>> band.isotonic.round(3).tolist()
    [0.0, 0.0, 0.333, 0.333, 0.333, 1.0, 1.0, 1.0, 1.0, 1.0]
    >>> band.deviations()
    ()

    Over-confident predictions of 2000 rows: the band lies above the
    diagonal for low predictions (between 0.015 and 0.235, with gaps where
    the diagonal touches the band's steps) and below it from 0.81 to 0.83.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < 1 / (1 + ((1 - x) / x) ** 0.4)
    >>> devs = honest_calibration_band(x, y).deviations()
    >>> [(round(d.start, 3), round(d.end, 3), d.direction) for d in devs[-2:]]
    [(0.163, 0.235, 'above'), (0.81, 0.831, 'below')]
    """
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(
        alpha, (int, float, np.integer, np.floating)
    ):
        raise CalibrationInputError(f"alpha must be a number in (0, 1); got {alpha!r}")
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise CalibrationInputError(f"alpha must lie in (0, 1); got {alpha!r}")
    if method not in ("standard", "round"):
        raise CalibrationInputError(f"method must be 'standard' or 'round'; got {method!r}")
    if digits is not None and method != "round":
        raise CalibrationInputError("digits applies to method='round' only")
    if method == "round":
        d = 2 if digits is None else digits
        if (
            isinstance(d, (bool, np.bool_))
            or not isinstance(d, (int, np.integer))
            or not 1 <= d <= 6
        ):
            raise CalibrationInputError(f"digits must be an integer from 1 to 6; got {digits!r}")
        digits = int(d)
    if not isinstance(nc, (bool, np.bool_)):
        raise CalibrationInputError(f"nc must be True or False; got {nc!r}")
    p, y = _binary_inputs(probs, labels, logits, classes)
    if np.any((p < 0.0) | (p > 1.0)):
        i = int(np.flatnonzero((p < 0.0) | (p > 1.0))[0])
        raise CalibrationInputError(
            f"probs must lie in [0, 1] for the band; row {i} holds {p[i]!r}"
        )
    ux, inv = np.unique(p, return_inverse=True)
    inv = inv.reshape(-1)
    ns = np.bincount(inv, minlength=len(ux)).astype(np.float64)
    ys = np.bincount(inv, weights=y, minlength=len(ux))
    iso = pav(ux, ys / ns, sample_weight=ns)
    if method == "standard":
        check_quadratic_cost(
            len(ux),
            1,
            seconds_per_pair=_SECONDS_PER_PAIR,
            what="honest_calibration_band(method='standard') over its distinct predictions",
            alternative="method='round' (digits=2 or 3: at most 101 or 1001 knots)",
        )
        x = ux
        lower = _band(ys, ns, alpha, "lower")
        upper = _band(ys, ns, alpha, "upper")
        iso_x = iso
    else:
        scale = 10.0 ** int(digits or 2)
        # upper bound: groups by floor, standing at their smallest prediction
        g_up = np.floor(ux * scale)
        first_up = np.r_[0, np.flatnonzero(np.diff(g_up)) + 1]
        up_x = ux[first_up]
        up_b = _band(np.add.reduceat(ys, first_up), np.add.reduceat(ns, first_up), alpha, "upper")
        # lower bound: groups by ceiling, standing at their largest prediction
        g_lo = np.ceil(ux * scale)
        first_lo = np.r_[0, np.flatnonzero(np.diff(g_lo)) + 1]
        last_lo = np.r_[first_lo[1:] - 1, len(ux) - 1]
        lo_x = ux[last_lo]
        lo_b = _band(np.add.reduceat(ys, first_lo), np.add.reduceat(ns, first_lo), alpha, "lower")
        x = np.union1d(up_x, lo_x)
        upper = np.ones(len(x))
        upper[np.searchsorted(x, up_x)] = up_b
        upper = np.minimum.accumulate(upper[::-1])[::-1]
        lower = np.zeros(len(x))
        lower[np.searchsorted(x, lo_x)] = lo_b
        lower = np.maximum.accumulate(lower)
        iso_x = iso[np.searchsorted(ux, x)]
    if nc:
        upper = np.maximum(upper, iso_x)
        lower = np.minimum(lower, iso_x)
    return CalibrationBand(
        x=x,
        lower=lower,
        upper=upper,
        isotonic=iso_x,
        alpha=alpha,
        method=method,
        digits=digits if method == "round" else None,
        nc=bool(nc),
        n=int(p.shape[0]),
        n_distinct=len(ux),
    )
