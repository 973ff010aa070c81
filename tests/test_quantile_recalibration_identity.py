"""QuantileRecalibration.fit, vectorised: the fitted maps are bit-identical to the loop it replaced.

The oracle below is the fitting code as it was before the vectorisation (the
pool-adjacent-violators stack loop over every PIT value, ``np.unique`` with
``bincount``, the list-based anchoring), kept verbatim here and run on the
same inputs; every knot must be equal, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

from calipers.recalibration import QuantileRecalibration
from calipers.recalibration.regression.quantile_recalibration import _fit_knots, _pav


def _old_pav(y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lev: list[float] = []
    wt: list[float] = []
    start: list[int] = []
    for i in range(y.shape[0]):
        lev.append(float(y[i]))
        wt.append(float(w[i]))
        start.append(i)
        while len(lev) > 1 and lev[-2] >= lev[-1]:
            w2 = wt[-2] + wt[-1]
            lev[-2] = (wt[-2] * lev[-2] + wt[-1] * lev[-1]) / w2
            wt[-2] = w2
            del lev[-1], wt[-1], start[-1]
    return np.array(lev), np.array(wt), np.array(start, dtype=np.int64)


def _old_knot_count(n_knots: int | None, n_blocks: int, n_rows: int) -> int:
    if n_knots is None:
        return min(100, max(math.ceil(math.sqrt(n_rows)), n_rows // 10), n_blocks)
    return min(int(n_knots), n_blocks)


def _old_fit(
    u: np.ndarray, sample_weight: np.ndarray | None, n_knots: int | None
) -> tuple[np.ndarray, np.ndarray]:
    w = np.ones_like(u) if sample_weight is None else sample_weight
    keep = w > 0
    u, w = u[keep], w[keep]
    ux, inv = np.unique(u, return_inverse=True)
    wg = np.bincount(inv.reshape(-1), weights=w, minlength=ux.shape[0])
    total = float(wg.sum())
    below = np.cumsum(wg) - wg
    level = (below + 0.5 * wg) / total
    lev, wb, starts = _old_pav(level, wg)
    ends = np.append(starts[1:], ux.shape[0])
    sums = np.add.reduceat(wg * ux, starts)
    centre = np.clip(sums / wb, ux[starts], ux[ends - 1])
    k = _old_knot_count(n_knots, lev.shape[0], max(int(u.shape[0]), int(total)))
    if lev.shape[0] > k:
        mid = (np.cumsum(wb) - 0.5 * wb) / total
        group = np.minimum((mid * k).astype(np.int64), k - 1)
        first = np.flatnonzero(np.diff(group, prepend=-1))
        gw = np.add.reduceat(wb, first)
        lo = centre[first]
        hi = centre[np.append(first[1:], centre.shape[0]) - 1]
        centre = np.clip(np.add.reduceat(wb * centre, first) / gw, lo, hi)
        lev = np.add.reduceat(wb * lev, first) / gw
        wb = gw
    cx, cy, cw = list(centre), list(lev), list(wb)
    while cx and cx[0] <= 0.0:
        if len(cx) == 1:
            cx, cy, cw = [], [], []
            break
        t = cw[0] + cw[1]
        cx[1] = (cw[0] * cx[0] + cw[1] * cx[1]) / t
        cy[1] = (cw[0] * cy[0] + cw[1] * cy[1]) / t
        cw[1] = t
        del cx[0], cy[0], cw[0]
    while cx and cx[-1] >= 1.0:
        if len(cx) == 1:
            cx, cy, cw = [], [], []
            break
        t = cw[-1] + cw[-2]
        cx[-2] = (cw[-1] * cx[-1] + cw[-2] * cx[-2]) / t
        cy[-2] = (cw[-1] * cy[-1] + cw[-2] * cy[-2]) / t
        cw[-2] = t
        del cx[-1], cy[-1], cw[-1]
    return np.concatenate([[0.0], cx, [1.0]]), np.concatenate([[0.0], cy, [1.0]])


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), np.flatnonzero(a != b)[:5]


def _cases() -> list[tuple[str, np.ndarray, np.ndarray | None, int | None]]:
    rng = np.random.default_rng(20261127)
    out: list[tuple[str, np.ndarray, np.ndarray | None, int | None]] = []
    for n in (1, 2, 3, 7, 50, 333, 5000):
        u = ndtr(rng.normal(size=n) * rng.uniform(0.3, 3.0))
        out.append((f"continuous n={n}", u, None, None))
        out.append((f"weighted n={n}", u, rng.exponential(size=n), None))
        out.append((f"integer weights n={n}", u, rng.integers(0, 4, n).astype(float), None))
    u = np.round(ndtr(rng.normal(size=4000)), 2)  # heavy ties
    out.append(("ties", u, None, None))
    out.append(("ties weighted", u, rng.uniform(0.0, 3.0, 4000), None))
    out.append(("ties many knots", u, None, 10**6))
    u = ndtr(rng.normal(size=3000))
    out.append(("n_knots=1", u, None, 1))
    out.append(("n_knots=7", u, rng.uniform(size=3000), 7))
    out.append(("n_knots >= n", u, None, 10**6))
    # weights spanning 40 orders of magnitude: mid-ranks of neighbours round to equal values,
    # the PAV pass pools them
    w = 10.0 ** rng.uniform(-20, 20, 3000)
    out.append(("pooling by rounding", u, w, None))
    out.append(("pooling by rounding, every knot", u, w, 10**6))
    # PIT values at exactly 0 and 1 (targets far in the tails): anchoring pools
    v = u.copy()
    v[:40] = 0.0
    v[40:90] = 1.0
    out.append(("PIT at 0 and 1", v, None, None))
    out.append(("PIT at 0 and 1, every knot", v, rng.uniform(0.5, 2.0, 3000), 10**6))
    out.append(("all PIT at 0", np.zeros(10), None, None))
    out.append(("all PIT at 1 but one", np.append(np.ones(9), 0.5), None, 10**6))
    return out


@pytest.mark.parametrize(("name", "u", "w", "n_knots"), _cases(), ids=lambda c: str(c)[:40])
def test_fit_knots_bit_identical_to_the_loop(
    name: str, u: np.ndarray, w: np.ndarray | None, n_knots: int | None
) -> None:
    rc = QuantileRecalibration(n_knots=n_knots)
    x_new, y_new = _fit_knots(u, w, rc._knot_count)
    x_old, y_old = _old_fit(u, w, n_knots)
    _same(x_new, x_old)
    _same(y_new, y_old)


def test_pav_bit_identical_to_the_loop_on_arbitrary_sequences() -> None:
    """The PAV pass itself, on sequences with many violators (not only mid-ranks)."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(1, 200))
        kind = trial % 4
        if kind == 0:
            y = rng.normal(size=n)
        elif kind == 1:
            y = np.sort(rng.normal(size=n)) + 0.3 * rng.normal(size=n)
        elif kind == 2:
            y = np.round(np.cumsum(rng.normal(size=n)), 1)
        else:
            y = np.sort(rng.integers(0, 5, n).astype(float))  # ties only
        w = rng.exponential(size=n) if trial % 3 else np.ones(n)
        new = _pav(y, w)
        old = _old_pav(y, w)
        for a, b in zip(new, old, strict=True):
            _same(a, b)


def test_gaussian_fit_bit_identical_end_to_end() -> None:
    """The public fit on Gaussian arrays: the PIT values, then the old fitting code."""
    rng = np.random.default_rng(11)
    n = 20000
    mu, sd = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    y = mu + 1.7 * sd * rng.standard_t(4, size=n)
    w = rng.uniform(0.0, 2.0, n)
    for weights in (None, w):
        rc = QuantileRecalibration().fit(mu, std=sd, targets=y, sample_weight=weights)
        var = sd * sd
        u = np.asarray(ndtr((y - mu) / np.sqrt(var)))
        x_old, y_old = _old_fit(u, weights, None)
        _same(rc.knots_x_, x_old)
        _same(rc.knots_y_, y_old)


def test_a_level_rounding_to_one_is_pooled_not_refused() -> None:
    """A last weight below 1e-16 of the total: its mid-rank rounds to 1.0 (was an error).

    Nine unit rows at PIT 0.05, 0.15, ..., 0.85 and one row of weight 1e-20 at
    0.95: with a knot per block the map is the nine mid-ranks (i + 1/2) / 9 at
    the nine PIT values (the negligible row pooled into the last), by hand.
    """
    from scipy.special import ndtri

    u = np.linspace(0.05, 0.95, 10)
    w = np.ones(10)
    w[-1] = 1e-20
    rc = QuantileRecalibration(n_knots=10**6).fit(
        np.zeros(10), std=np.ones(10), targets=ndtri(u), sample_weight=w
    )
    np.testing.assert_allclose(rc.knots_x_, np.r_[0.0, u[:9], 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        rc.knots_y_, np.r_[0.0, (np.arange(9) + 0.5) / 9, 1.0], rtol=0, atol=1e-15
    )
