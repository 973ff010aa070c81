"""The resampling engine behind :func:`calipers.confidence_interval` and the report.

A bootstrap resample of ``n`` rows is the same data set as the original rows with
integer weights ``c ~ Multinomial(n, 1/n)`` (how often each row was drawn), and every
calipers metric that takes ``sample_weight`` gives the same value for a row repeated
``c`` times as for the row with weight ``c`` (the validation layer's contract; a
metric's own tests check it). So ``B`` resamples are a ``(B, n)`` weight matrix, and
so is a (grouped) jackknife: weight 0 on the deleted group, 1 elsewhere. An
*evaluator* maps a batch of weight rows ``W`` (``(r, n)``, already multiplied by the
user's sample weights) to the metric's ``r`` values at once:

* means of per-row terms (accuracy, NLL, Brier): ``(W @ t) / W.sum(1)``;
* equal-width binned errors (ECE): the bin of a row does not depend on the other
  rows, so the per-bin sums are ``W @ A`` with ``A`` the sparse ``(n, bins)`` matrix of
  per-row residuals;
* equal-mass binned errors (ACE, TACE): the edges *do* depend on the resample; they
  are recomputed for every weight row from the cumulative weights along each class's
  presorted scores (the same weighted order statistics as
  :class:`calipers.estimators.binning.EqualMass`), O(n) per row after one sort per class;
* SmoothECE: the kernel-grid masses are linear in the weights (``W @ M`` with the
  sparse linear-interpolation matrix ``M``); the fixed-point search then runs on the
  grid of each resample;
* anything else: one call of the metric per weight row (``sample_weight=w``).

Each fast evaluator is checked once against the metric itself (on the data's own
weights and on one random resample) before it is used; when they disagree beyond
rounding, the generic path is used instead, so a change of a metric's conventions
can slow the resampling down but never change its numbers.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._backend import row_logsumexp, row_sum_of_squares, take_rows, to_numpy
from ..validation import CalibrationInputError, Predictions

#: An evaluator: ``(r, n)`` weight rows -> ``(r,)`` metric values.
Evaluator = Callable[[np.ndarray], np.ndarray]

#: Weight-matrix entries per batch (2**20 float64 = 8 MiB; a batch makes a few such arrays).
BATCH_ENTRIES = 1 << 20

#: Relative tolerance of the one-off check of a fast evaluator against the metric.
CHECK_RTOL = 1e-9


# ----------------------------------------------------------------------------- weights


def batch_rows(n: int, total: int) -> int:
    """Weight rows per batch so that a batch holds about ``BATCH_ENTRIES`` entries."""
    return max(1, min(total, BATCH_ENTRIES // max(n, 1)))


def bootstrap_counts(rng: np.random.Generator, n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Batches of ``(r, n)`` float64 bootstrap counts (how often each row is drawn).

    Row indices are drawn as ``rng.integers(0, n, (r, n))`` per batch, as
    :func:`scipy.stats.bootstrap` draws them (one batch when ``n_resamples * n``
    fits ``BATCH_ENTRIES``: then the resamples are scipy's for the same generator).
    """
    done = 0
    step = batch_rows(n, n_resamples)
    while done < n_resamples:
        r = min(step, n_resamples - done)
        idx = rng.integers(0, n, (r, n))
        counts = np.empty((r, n))
        for j in range(r):  # row by row: each count vector stays in cache
            counts[j] = np.bincount(idx[j], minlength=n)
        yield counts
        done += r


def jackknife_groups(n: int, groups: int, rng: np.random.Generator) -> np.ndarray:
    """Group of every row for a grouped (delete-d) jackknife; delete-one when ``n <= groups``.

    Rows are assigned to ``min(n, groups)`` groups of sizes differing by at most one,
    at random (seeded), so that an ordering of the data (by class, by time) does not
    end up in one group.
    """
    if n <= groups:
        return np.arange(n)
    g = np.empty(n, dtype=np.intp)
    g[rng.permutation(n)] = np.arange(n) % groups
    return g


def jackknife_weights(group: np.ndarray) -> Iterator[np.ndarray]:
    """Batches of ``(r, n)`` 0/1 weights: row ``g`` deletes the rows of group ``g``."""
    n = group.shape[0]
    G = int(group.max()) + 1
    step = batch_rows(n, G)
    for g0 in range(0, G, step):
        gs = np.arange(g0, min(G, g0 + step))
        yield (group[None, :] != gs[:, None]).astype(np.float64)


def evaluate(
    ev: Evaluator, batches: Iterator[np.ndarray], base_weight: np.ndarray | None
) -> np.ndarray:
    """Metric values for every weight row of ``batches`` (times ``base_weight``)."""
    out = []
    for W in batches:
        out.append(np.asarray(ev(W if base_weight is None else W * base_weight), dtype=np.float64))
    return np.concatenate(out) if out else np.zeros(0)


# ----------------------------------------------------------------------------- intervals

METHODS = ("bca", "basic", "percentile")


def _quantile(sorted_v: np.ndarray, q: float) -> float:
    """Linear-interpolation quantile (NumPy's default rule) that lets +-inf through."""
    B = sorted_v.shape[0]
    h = (B - 1) * min(max(q, 0.0), 1.0)
    lo = int(math.floor(h))
    frac = h - lo
    a = float(sorted_v[lo])
    if frac == 0 or lo + 1 >= B:
        return a
    b = float(sorted_v[lo + 1])
    if math.isinf(a) or math.isinf(b):
        return b if frac > 0 and math.isinf(b) else a
    return a + frac * (b - a)


@dataclasses.dataclass(frozen=True)
class IntervalParts:
    """Endpoints and the by-products of one bootstrap interval."""

    low: float
    high: float
    standard_error: float
    bias: float
    z0: float
    acceleration: float


def acceleration(jack: np.ndarray) -> float:
    """BCa acceleration from jackknife values (Efron & Tibshirani 1993, eq. 14.15).

    ``a = sum d^3 / (6 (sum d^2)^(3/2))`` with ``d = mean(jack) - jack``. The same
    formula on delete-d (grouped) jackknife values estimates the same ``a``: the
    group influences are sums of the row influences, whose second and third
    cumulants add up, and the common scale factor cancels.
    """
    d = jack.mean() - jack
    s2 = float(np.sum(d * d))
    if s2 <= 0:
        return 0.0
    return float(np.sum(d**3) / (6.0 * s2**1.5))


def interval(
    estimate: float,
    boot: np.ndarray,
    jack: np.ndarray | None,
    method: str,
    confidence_level: float,
) -> IntervalParts:
    """The ``method`` interval from the bootstrap values ``boot`` (and ``jack`` for BCa).

    ``boot`` may hold +-inf (then an endpoint may be infinite) but no NaN; the
    caller checks. BCa whose bootstrap distribution lies entirely on one side of
    the estimate (bias correction ``z0 = +-inf``) gives NaN endpoints; the caller
    decides what to do with them.
    """
    alpha = (1.0 - confidence_level) / 2.0
    v = np.sort(boot)
    fin = v[np.isfinite(v)]
    se = float(fin.std(ddof=1)) if fin.size > 1 and fin.size == v.size else math.inf
    bias = float(fin.mean() - estimate) if fin.size == v.size else math.inf
    if method == "percentile":
        return IntervalParts(
            _quantile(v, alpha), _quantile(v, 1 - alpha), se, bias, math.nan, math.nan
        )
    if method == "basic":
        lo = 2 * estimate - _quantile(v, 1 - alpha)
        hi = 2 * estimate - _quantile(v, alpha)
        return IntervalParts(lo, hi, se, bias, math.nan, math.nan)
    if method != "bca":
        raise CalibrationInputError(f"method must be one of {METHODS}; got {method!r}")
    from scipy.special import ndtr, ndtri

    B = v.size
    prop = (np.count_nonzero(v < estimate) + np.count_nonzero(v <= estimate)) / (2.0 * B)
    z0 = float(ndtri(prop))
    a = acceleration(np.asarray(jack, dtype=np.float64)) if jack is not None else 0.0
    if not math.isfinite(z0) or not math.isfinite(a):
        return IntervalParts(math.nan, math.nan, se, bias, z0, a)
    ends = []
    for z in (float(ndtri(alpha)), float(ndtri(1 - alpha))):
        num = z0 + z
        ends.append(_quantile(v, float(ndtr(z0 + num / (1 - a * num)))))
    return IntervalParts(ends[0], ends[1], se, bias, z0, a)


# ----------------------------------------------------------------------------- evaluators


def _row_sums(W: np.ndarray) -> np.ndarray:
    return W.sum(axis=1)


def mean_of_terms(terms: np.ndarray) -> Evaluator:
    """Weighted mean of per-row terms; a row of weight 0 is absent even where its term is inf."""
    t = np.asarray(terms, dtype=np.float64)
    bad = ~np.isfinite(t)
    if not bad.any():
        return lambda W: (W @ t) / _row_sums(W)
    tf = np.where(bad, 0.0, t)
    pos, neg, nan = (t == np.inf), (t == -np.inf), np.isnan(t)

    def ev(W: np.ndarray) -> np.ndarray:
        out = (W @ tf) / _row_sums(W)
        hp = (W[:, pos] > 0).any(1)
        hn = (W[:, neg] > 0).any(1)
        hx = (W[:, nan] > 0).any(1) | (hp & hn)
        out[hp] = np.inf
        out[hn] = -np.inf
        out[hx] = np.nan
        return out

    return ev


def fixed_bins(ids: np.ndarray, n_bins: int, resid: np.ndarray) -> Evaluator:
    """``sum_b |sum_{i in b} w_i r_i| / sum_i w_i`` for fixed bins (the L1 binned error)."""
    from scipy import sparse

    n = ids.shape[0]
    A = sparse.csc_matrix(
        (np.asarray(resid, dtype=np.float64), (np.arange(n), np.asarray(ids))),
        shape=(n, int(n_bins)),
    )
    At = A.T.tocsr()

    def ev(W: np.ndarray) -> np.ndarray:
        D = np.asarray(At @ W.T).T  # (r, bins)
        return np.abs(D).sum(axis=1) / _row_sums(W)

    return ev


def _search_rows(cw: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``#{cw[j] <= pos[j, q]}`` for every row ``j``: one search over the rows laid end
    to end, shifted apart by more than any row's values (``cw`` nondecreasing per row,
    integer-valued, so the shifted values are exact in float64)."""
    r, m = cw.shape
    shift = (float(cw[:, -1].max()) + 2.0) * np.arange(r)[:, None]
    flat = (cw + shift).ravel()
    at = np.searchsorted(flat, (pos + shift).ravel(), side="right").reshape(pos.shape)
    return at - (m * np.arange(r))[:, None]


#: Rows per block of the block sums of :func:`_equal_mass_l1`.
_BLOCK = 64


def _bin_cuts(ss: np.ndarray, e: np.ndarray, m: int) -> np.ndarray:
    """Positions in the sorted scores ``ss`` where the bins ``[e_b, e_{b+1})`` of each
    resample (one row of edges ``e``) begin, with 0 first and ``m`` last."""
    r = e.shape[0]
    return np.concatenate(
        [np.zeros((r, 1), np.intp), np.searchsorted(ss, e[:, 1:], side="left"), np.full((r, 1), m)],
        axis=1,
    )


def _equal_mass_l1(Wc: np.ndarray, ss: np.ndarray, d: np.ndarray, lin: np.ndarray) -> np.ndarray:
    """Count-weighted L1 error of Nixon-rule equal-mass bins, for weight rows ``Wc``.

    ``ss``: the slice's scores sorted; ``d``: target - score in that order; ``Wc``:
    ``(r, m)`` weights in that order (consumed). The edges of row ``j`` are the
    weighted order statistics ``ss[min(#{cw_j <= pos}, m - 1)]`` at positions
    ``pos = min(round(lin * total), total - 1)``, ``cw_j`` the cumulative weights
    (:class:`calipers.estimators.binning.EqualMass`); the error is ``sum_b |sum_{i in b} w_i d_i|
    / total``. Integer weights (bootstrap counts) take a shortcut: sums over blocks of
    64 sorted rows, and prefix sums only inside the blocks that hold an edge or a cut
    (exact: integers); other weights take full cumulative sums, as EqualMass does.
    """
    r, m = Wc.shape
    if bool(np.array_equal(Wc, np.floor(Wc))) and float(Wc.sum(1).max()) * (r + 1) < 2**52:
        s = _BLOCK
        nb = -(-m // s)
        pad = nb * s - m
        dp = np.concatenate([d, np.zeros(pad)]) if pad else d
        Wp = np.concatenate([Wc, np.zeros((r, pad))], 1) if pad else Wc
        W3 = Wp.reshape(r, nb, s)
        D3 = (Wp * dp).reshape(r, nb, s)
        cbw = np.cumsum(W3.sum(2), axis=1)  # cumulative weight at each block's end
        cbd = np.zeros((r, nb + 1))
        np.cumsum(D3.sum(2), axis=1, out=cbd[:, 1:])  # sum of w d before each block
        tot = cbw[:, -1]
        pos = np.minimum(np.round(lin[None, :] * tot[:, None]), tot[:, None] - 1)
        kb = np.minimum(_search_rows(cbw, pos), nb - 1)  # the block where cw passes pos
        base = np.where(kb > 0, np.take_along_axis(cbw, np.maximum(kb - 1, 0), 1), 0.0)
        inner = np.cumsum(np.take_along_axis(W3, kb[:, :, None], 1), axis=2) + base[:, :, None]
        at = kb * s + (inner <= pos[:, :, None]).sum(axis=2)
        e = ss[np.minimum(at, m - 1)]
        cuts = _bin_cuts(ss, e, m)
        cb, off = np.divmod(cuts, s)
        blk = np.take_along_axis(D3, np.minimum(cb, nb - 1)[:, :, None], 1)
        partial = np.where(np.arange(s)[None, None, :] < off[:, :, None], blk, 0.0).sum(axis=2)
        at_cut = np.take_along_axis(cbd, cb, 1) + partial
        sums = np.diff(at_cut, axis=1)
    else:
        cw = np.cumsum(Wc, axis=1)
        Wc *= d
        cd = np.zeros((r, m + 1))
        np.cumsum(Wc, axis=1, out=cd[:, 1:])
        tot = cw[:, -1]
        pos = np.minimum(np.round(lin[None, :] * tot[:, None]), tot[:, None] - 1)
        at = np.stack([np.searchsorted(cw[j], pos[j], side="right") for j in range(r)])
        e = ss[np.minimum(at, m - 1)]
        cuts = _bin_cuts(ss, e, m)
        sums = np.take_along_axis(cd, cuts[:, 1:], 1) - np.take_along_axis(cd, cuts[:, :-1], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.abs(sums).sum(axis=1) / tot
    return np.where(tot > 0, out, 0.0)


def classwise_equal_mass(
    probs: np.ndarray, labels: np.ndarray, n_bins: int, threshold: float
) -> Evaluator:
    """Nixon et al.'s (2019) ACE/TACE with resampling weights, edges recomputed per row.

    Class ``c``: entries ``p_ic > threshold``, equal-mass edges by the Nixon rule on
    the weight-expanded sorted scores (:class:`calipers.estimators.binning.EqualMass`,
    ``rule="nixon"``), bins ``[e_r, e_{r+1})``, the count-weighted L1 error of the
    class; the mean over the classes (a class without weight counts as 0).
    """
    k = probs.shape[1]
    B = int(n_bins)
    per_class = []
    for c in range(k):
        s = np.asarray(probs[:, c], dtype=np.float64)
        sel = np.flatnonzero(s > threshold)
        order = sel[np.argsort(s[sel], kind="stable")]
        ss = s[order]
        d = (labels[order] == c).astype(np.float64) - ss
        per_class.append((order, ss, d))
    lin = np.linspace(0, 1, B, endpoint=False)

    def ev(W: np.ndarray) -> np.ndarray:
        r = W.shape[0]
        total = np.zeros(r)
        # a few weight rows at a time, so that the gathered and summed rows stay in cache
        n = W.shape[1]
        step = max(8, (1 << 16) // max(n, 1))
        for j0 in range(0, r, step):
            Wj = W[j0 : j0 + step]
            for order, ss, d in per_class:
                if order.shape[0]:
                    total[j0 : j0 + Wj.shape[0]] += _equal_mass_l1(Wj[:, order], ss, d, lin)
        return total / k

    return ev


def smooth_ece_values(f: np.ndarray, y: np.ndarray, bandwidth: float | None) -> Evaluator:
    """SmoothECE (Błasiok & Nakkiran 2023, relplot's discretisation) for weight rows.

    The grid masses of every grid size are ``W @ M_E`` with ``M_E`` the sparse
    linear-splitting matrix of :func:`calipers.metrics.smooth_ece._bin_masses`; the
    reflected convolution is the circular one of :class:`calipers.metrics.smooth_ece._Grid`;
    the bisection for the fixed-point bandwidth (:func:`calipers.metrics.smooth_ece._fixed_point`)
    runs for all weight rows in step, rows at the same bandwidth sharing one batched
    inverse transform.
    """
    from scipy import sparse

    from ..metrics import smooth_ece as sm

    f = np.ascontiguousarray(f, dtype=np.float64)
    resid = f - np.asarray(y, dtype=np.float64)
    n = f.shape[0]
    mats: dict[int, Any] = {}
    kernels: dict[tuple[int, float], np.ndarray] = {}
    meshes: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def split(E: int) -> Any:
        M = mats.get(E)
        if M is None:
            s = f * float(E - 1)
            idx = s.astype(np.intp)
            np.clip(idx, 0, E - 2, out=idx)
            up = s - idx
            rows = np.concatenate([np.arange(n), np.arange(n)])
            cols = np.concatenate([idx, idx + 1])
            vals = np.concatenate([1.0 - up, up])
            M = mats[E] = sparse.csr_matrix((vals, (rows, cols)), shape=(n, E)).T.tocsr()
        return M

    def kernel_hat(E: int, sigma: float) -> np.ndarray:
        kh = kernels.get((E, sigma))
        if kh is None:
            N = 2 * (E - 1)
            d = np.arange(E // 2 - (E - 1), E // 2 + 1)
            off = ((E // 2 - (E - 1) / 2) - d) / (E - 1)
            ker = np.zeros(N)
            ker[(-d) % N] = np.exp(-0.5 * (off / sigma) ** 2) / (sigma * math.sqrt(2.0 * math.pi))
            kh = kernels[(E, sigma)] = np.fft.rfft(ker)
        return kh

    def mesh(E: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        # np.interp(linspace(0, 1, m), linspace(0, 1, E), v) as fixed indices and shares
        got = meshes.get(m * 1_000_003 + E)
        if got is None:
            t = np.linspace(0.0, 1.0, m) * (E - 1)
            j = np.minimum(t.astype(np.intp), E - 2)
            got = meshes[m * 1_000_003 + E] = (j, t - j)
        return got

    def ev(W: np.ndarray) -> np.ndarray:
        r = W.shape[0]
        hats: dict[int, np.ndarray] = {}

        def masses_hat(E: int) -> np.ndarray:
            h = hats.get(E)
            if h is None:
                M = split(E)
                m2 = np.stack([np.asarray(M @ W.T).T, np.asarray(M @ (W * resid).T).T], 1)
                periodic = np.concatenate([m2, m2[:, :, E - 2 : 0 : -1]], axis=2)
                h = hats[E] = np.fft.rfft(periodic, axis=2)
            return h

        def values(rows: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
            out = np.empty(rows.shape[0])
            for sigma in np.unique(sigmas):
                at = np.flatnonzero(sigmas == sigma)
                sg = float(sigma)
                E = sm._grid_size(sg)
                N = 2 * (E - 1)
                full = np.fft.irfft(masses_hat(E)[rows[at]] * kernel_hat(E, sg), n=N, axis=2)
                j, u = mesh(E, sm._mesh_size(sg))
                g = full[:, :, :E]
                on = g[:, :, j] * (1 - u) + g[:, :, j + 1] * u
                dens = on[:, 0] + sm.DENSITY_FLOOR
                num = on[:, 1]
                out[at] = np.sum(np.abs(num / dens) * dens, axis=1) / np.sum(dens, axis=1)
            return out

        every = np.arange(r)
        if bandwidth is not None:
            return values(every, np.full(r, float(bandwidth)))
        lo, hi = np.zeros(r), np.ones(r)
        for _ in range(sm.SEARCH_STEPS):
            mid = 0.5 * (hi + lo)
            go_up = mid < sm.SEARCH_EPS
            ask = np.flatnonzero(~go_up)
            if ask.size:
                go_up[ask] = mid[ask] < values(ask, mid[ask])
            lo = np.where(go_up, mid, lo)
            hi = np.where(go_up, hi, mid)
        return values(every, hi)

    return ev


def beta_kernel_values(
    scores: np.ndarray, targets: np.ndarray, bandwidth: float, clip: float = 1e-7
) -> Callable[[np.ndarray], np.ndarray]:
    """CE_KL, CE_2^2 and REF_KL of the leave-one-out Beta-kernel estimate, per weight row.

    Popordanoska et al. (2024) eq. 7, 10, 15 on a Bernoulli problem (``scores`` in
    [0, 1], ``targets`` 0/1), as :func:`calipers.proper_calibration_error` with the
    binary lens and ``sample_weight=w`` computes them: each block of rows of the
    kernel matrix (diagonal removed, each row shifted by its maximum as in
    :class:`calipers.DirichletKernel`) is formed once per call and multiplied with all
    weight rows at once (blocks on a thread pool; memory O(block x m), never m x m). A row of weight ``c`` is left out of its
    own estimate with all its copies (the weighted estimate); a weight row in which
    some row with positive weight has no other row with positive weight near it (no
    support) gives NaN. Returns ``(r, 3)``.
    """
    from scipy.special import xlogy

    from .._parallel import thread_map
    from ..estimators.dirichlet_kernel import _LOG_FLOOR, _as_simplex, _log_beta

    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(targets, dtype=np.float64)
    m = s.shape[0]
    h = float(bandwidth)
    G = _as_simplex(s, clip)
    # log(k_ij) = <log g_i / h, g_j> - log B_j: the same product as DirichletKernel's
    A = np.concatenate([np.log(G) / h, np.ones((m, 1))], 1)
    BT = np.ascontiguousarray(np.concatenate([G, -_log_beta(G, h)[:, None]], 1).T)
    step = max(1, (1 << 20) // max(m, 1))
    g = G[:, 1]
    F_g = xlogy(g, g) + xlogy(1 - g, 1 - g)
    grad_g = np.log(g) - np.log(1 - g)

    def ev(W: np.ndarray) -> np.ndarray:
        r = W.shape[0]
        X = np.ascontiguousarray(np.concatenate([W * t, W]).T)  # (m, 2r)
        Y = np.empty((m, 2 * r))

        def block(i0: int) -> None:
            # rows i0.. of the kernel matrix (diagonal removed, shifted by the row
            # maximum and floored as in DirichletKernel), times every weight row
            rows = slice(i0, min(m, i0 + step))
            L = A[rows] @ BT
            ar = np.arange(L.shape[0])
            L[ar, ar + i0] = -np.inf
            L -= L.max(axis=1, keepdims=True)
            np.maximum(L, _LOG_FLOOR, out=L)
            L[ar, ar + i0] = -np.inf
            Y[rows] = np.exp(L, out=L) @ X

        thread_map(block, range(0, m, step))
        num, den = Y[:, :r].T, Y[:, r:].T
        keep = W > 0
        ok = np.all(den > 0, axis=1, where=keep)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(keep, num / np.where(keep, den, 1.0), t)
        np.clip(q, 0.0, 1.0, out=q)
        tot = W.sum(axis=1)
        F_q = xlogy(q, q) + xlogy(1 - q, 1 - q)
        kl = F_q - F_g - grad_g * (q - g)
        l2 = (q - g) ** 2
        out = np.stack(
            [(W * kl).sum(1) / tot, (W * l2).sum(1) / tot, -(W * F_q).sum(1) / tot], axis=1
        )
        out[~ok] = np.nan
        return out

    return ev


# ----------------------------------------------------------------------------- dispatch


def numpy_predictions(P: Predictions) -> Predictions:
    """``P`` with NumPy arrays (a no-op for NumPy input); the cached top label is kept."""
    if not P.is_torch:
        return P
    top = None if P._top is None else (to_numpy(P._top[0]), to_numpy(P._top[1]))
    return Predictions(
        probs=to_numpy(P.probs),
        labels=to_numpy(P.labels),
        sample_weight=None if P.sample_weight is None else to_numpy(P.sample_weight),
        logits=None if P.logits is None else to_numpy(P.logits),
        n_classes=P.n_classes,
        _top=top,
        classes=P.classes,
    )


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise CalibrationInputError(
            f"the metric must return a number (a float or a 0-d array); got {type(v).__name__}"
        ) from None


def generic(metric: Callable[..., Any], P: Predictions, kwargs: dict[str, Any]) -> Evaluator:
    """One call of ``metric`` per weight row, with the row as ``sample_weight``."""

    def ev(W: np.ndarray) -> np.ndarray:
        out = np.empty(W.shape[0])
        for j in range(W.shape[0]):
            Pj = dataclasses.replace(P, sample_weight=W[j])
            out[j] = _float(metric(Pj, None, **kwargs))
        return out

    return ev


def _top_or_binary(P: Predictions, lens: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(score, target) of the one-slice lens a metric uses (``None``: not one we know)."""
    from ..pipeline.lenses import lens_arrays

    try:
        s, t, _ = lens_arrays(P, lens)
    except CalibrationInputError:
        return None
    return s, t


def _nll_terms(P: Predictions, clip: float | None) -> np.ndarray:
    y = np.asarray(P.labels)
    if P.logits is not None and clip is None:
        if P.binary:
            z = np.asarray(P.logits, dtype=np.float64)
            return np.logaddexp(0.0, -(2 * y - 1) * z)
        # row blocks: no float64 copy of the (n, k) logits
        zy = np.asarray(take_rows(np.asarray(P.logits), y), dtype=np.float64)
        return row_logsumexp(np.asarray(P.logits)) - zy
    p = np.asarray(P.probs)
    if P.binary:
        p = p.astype(np.float64, copy=False)
        py = np.where(y == 1, p, 1 - p)
    else:
        py = np.asarray(take_rows(p, y), dtype=np.float64)
    if clip is not None:
        py = np.clip(py, clip, 1 - clip)
    with np.errstate(divide="ignore"):
        return -np.log(py)


def _brier_terms(P: Predictions, reduction: str) -> np.ndarray:
    y = np.asarray(P.labels)
    p = np.asarray(P.probs)
    if P.binary:
        return (p.astype(np.float64, copy=False) - y) ** 2
    # row blocks: no float64 copy of the (n, k) probabilities
    per = row_sum_of_squares(p) - 2 * np.asarray(take_rows(p, y), dtype=np.float64) + 1
    return per / P.n_classes if reduction == "mean" else per


def _accuracy_terms(P: Predictions) -> np.ndarray:
    pred, _ = P.top_label()
    return (np.asarray(pred) == np.asarray(P.labels)).astype(np.float64)


def _fast_fixed_bins(P: Predictions, kw: dict[str, Any], default: Any) -> Evaluator | None:
    from ..estimators.binning import EqualWidth

    st = _top_or_binary(P, kw.get("lens", "auto"))
    if st is None:
        return None
    s, t = st
    est = EqualWidth(int(kw.get("n_bins", 15)), kw.get("edge_rule", "right"))
    ids, nb = est.assign(s, None)
    return fixed_bins(np.asarray(to_numpy(ids)), nb, t - s)


def _fast_classwise_equal_mass(P: Predictions, kw: dict[str, Any], default: Any) -> Evaluator:
    thr = float(kw.get("threshold", default("threshold")))
    return classwise_equal_mass(
        np.asarray(P.full_probs()), np.asarray(P.labels), int(kw.get("n_bins", 15)), thr
    )


def _fast_smooth_ece(P: Predictions, kw: dict[str, Any], default: Any) -> Evaluator | None:
    st = _top_or_binary(P, kw.get("lens", "auto"))
    if st is None:
        return None
    return smooth_ece_values(st[0], st[1], kw.get("bandwidth"))


#: The vectorised forms of the metrics, by the name their registry row gives
#: (``MetricSpec.resampler``): ``form(P, kwargs, default)``, with ``default(name)``
#: the default of the preset parameter ``name``.
_FAST_FORMS: dict[str, Callable[[Predictions, dict[str, Any], Any], Evaluator | None]] = {
    "accuracy": lambda P, kw, d: mean_of_terms(_accuracy_terms(P)),
    "nll": lambda P, kw, d: mean_of_terms(_nll_terms(P, kw.get("clip"))),
    "brier": lambda P, kw, d: mean_of_terms(_brier_terms(P, kw.get("reduction", "sum"))),
    "fixed_bins": _fast_fixed_bins,
    "classwise_equal_mass": _fast_classwise_equal_mass,
    "smooth_ece": _fast_smooth_ece,
}


def _fast(metric: Callable[..., Any], P: Predictions, kw: dict[str, Any]) -> Evaluator | None:
    """A vectorised evaluator for the calipers metrics that have one (else None).

    The metric registry says which metrics have one, and which keyword arguments it
    reproduces; any other keyword argument falls back to the generic evaluator.
    """
    from ..metrics import registry

    spec = registry.of_function(metric)
    if (
        spec is None
        or spec.resampler is None
        or not set(kw) - {"validate"} <= spec.resampler_kwargs
    ):
        return None

    def default(name: str) -> Any:
        assert spec is not None and spec.pipeline is not None
        return inspect.signature(spec.pipeline).parameters[name].default

    return _FAST_FORMS[spec.resampler](P, kw, default)


def _agree(a: np.ndarray, b: np.ndarray) -> bool:
    same_inf = np.array_equal(np.isinf(a), np.isinf(b)) and np.array_equal(np.isnan(a), np.isnan(b))
    fin = np.isfinite(a) & np.isfinite(b)
    return bool(same_inf and np.allclose(a[fin], b[fin], rtol=CHECK_RTOL, atol=CHECK_RTOL * 1e-3))


def evaluator(
    metric: Callable[..., Any], P: Predictions, kwargs: dict[str, Any]
) -> tuple[Evaluator, str]:
    """The evaluator of ``metric`` on ``P`` (NumPy) and its kind, ``"fast"`` or ``"generic"``.

    A fast evaluator is used only after it reproduced the metric on the data's own
    weights and on one bootstrap resample (drawn from a fixed seed, so the caller's
    random stream is untouched).
    """
    slow = generic(metric, P, kwargs)
    try:
        fast = _fast(metric, P, kwargs)
    except (CalibrationInputError, ValueError, TypeError, ImportError):
        fast = None
    if fast is None:
        return slow, "generic"
    n = P.n_samples
    w0 = np.ones(n) if P.sample_weight is None else np.asarray(P.sample_weight, dtype=np.float64)
    c = next(bootstrap_counts(np.random.default_rng(20240613), n, 1))[0]
    W = np.stack([w0, w0 * c])
    try:
        ok = _agree(np.asarray(fast(W), dtype=np.float64), slow(W))
    except (CalibrationInputError, ValueError, FloatingPointError):
        ok = False
    return (fast, "fast") if ok else (slow, "generic")


def p_value_bound(n_resamples: int) -> str:
    """The resampling floor ``1/(B+1)`` as a printed bound: ``"< 0.005"`` for B = 200.

    A resampling p-value ``(1 + #exceed) / (1 + B)`` is never below ``1/(B+1)``; at
    that floor no draw reached the observed value, and all one can say is that p is
    at most ``1/(B+1)``. The floor is rounded *up* to two significant digits (at
    least three decimals), with ``<`` when that is strictly above it and ``≤`` when
    it is the floor itself (B = 999: ``"≤ 0.001"``).

    >>> [p_value_bound(b) for b in (200, 50, 99, 999, 2000, 10)]
    ['< 0.005', '< 0.020', '≤ 0.010', '≤ 0.001', '< 0.0005', '< 0.091']
    """
    floor = 1.0 / (n_resamples + 1)
    scale = 10.0 ** (1 - math.floor(math.log10(floor)))  # two significant digits
    bound = math.ceil(floor * scale * (1 - 1e-12)) / scale
    places = max(3, 1 - math.floor(math.log10(bound)))
    text = f"{bound:.{places}f}"
    while len(text.split(".")[1]) > 3 and text.endswith("0"):
        text = text[:-1]
    return ("< " if bound > floor * (1 + 1e-9) else "≤ ") + text


def format_p_value(p: float, n_resamples: int | None = None) -> str:
    """A resampling p-value as printed: three decimals, or the floor's bound.

    A p-value ``(1 + #exceed) / (1 + B)`` from ``n_resamples = B`` draws is never
    below ``1/(B+1)``; at that floor it is printed as a bound (:func:`p_value_bound`),
    ``"< 0.005"`` for B = 200, since all the draws say is that p is at most that.

    >>> format_p_value(1 / 201, 200), format_p_value(0.0423, 200), format_p_value(0.5)
    ('< 0.005', '0.042', '0.500')
    """
    if n_resamples and n_resamples > 0 and math.isfinite(p) and p * (n_resamples + 1) < 1 + 1e-9:
        return p_value_bound(n_resamples)
    return f"{p:.3f}"
