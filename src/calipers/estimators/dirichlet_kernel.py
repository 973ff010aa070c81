"""Dirichlet-kernel estimate of E[Y | g(X)] (Popordanoska et al. (2024) eq. 11-12, App. E.1).

The kernel centred at sample j and evaluated at sample i is the Dirichlet
density with parameters ``alpha_j = g_j / h + 1`` (``h`` the bandwidth):

    log k(g_i; alpha_j) = (1/h) <g_j, log g_i> - log B(alpha_j),
    log B(alpha) = sum_c lgamma(alpha_c) - lgamma(sum_c alpha_c)          (Popordanoska et al. (2024) eq. 44)

so the whole log-kernel matrix is one matrix product ``log(G) @ G.T / h`` plus a
per-centre constant. The leave-one-out estimate (Popordanoska et al. (2024) eq. 15) is

    r_i = sum_{j != i} w_j k_ij y_j / sum_{j != i} w_j k_ij,

evaluated in log space: per row, subtract the largest log-kernel before the
exponential (the LogSumExp trick of App. E.1), after which numerator and
denominator are one matrix product ``E @ Y`` and one row sum. Rows are taken
in blocks, so memory is O(block x n) however large ``n`` is; nothing n x n is
ever formed. A 1-D score ``s`` (class-wise and top-label lenses) uses the Beta
kernel, i.e. the Dirichlet kernel on ``[1 - s, s]`` (docs/how-calipers-computes.md §5.2).

Scores are clamped to ``[clip, 1 - clip]`` inside the kernel (default 1e-7,
the constant of the Popordanoska et al. (2024) code, docs/how-calipers-computes.md §5.3): the Dirichlet density
is not defined on the boundary of the simplex (an exact 0 gives ``0 * log 0``).

The same code runs on NumPy arrays and on PyTorch tensors (on their device,
differentiable: gradients flow through ``r`` to the scores).

Bandwidth selection maximises the leave-one-out log-likelihood of the kernel
density estimate (Popordanoska et al. (2024) §7 and App. E; docs/how-calipers-computes.md §5.5) over ``log h``
with a coarse grid followed by a bounded Brent search; it never returns an
invalid value (the predecessor code returned -1, docs/how-calipers-computes.md §5.8).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import Array, is_torch
from .._docstrings import fill_doc
from .._parallel import thread_map
from ..validation import CalibrationInputError, check_positive

__all__ = [
    "DirichletKernel",
    "log_kernel_matrix",
    "loo_log_likelihood",
    "select_bandwidth",
]

#: Elements of one block of the (rows x n) log-kernel matrix (64 MiB in float64).
_BLOCK_ELEMENTS = 1 << 23
_LOG_FLOOR = -700.0

#: The parameters the kernel functions share, written once (see calipers._docstrings).
_doc = fill_doc(
    scores="""
scores : array of shape (n, k) or (n,)
    Points on the simplex (1-D: ``[1 - s, s]``, the Beta kernel).""",
    clip="""
clip : float, default 1e-7
    Scores are clamped to ``[clip, 1 - clip]`` inside the kernel.""",
    weights="""
weights : array of shape (n,), optional
    Weights ``w`` of the samples (default: all 1).""",
    block_size="""
block_size : int, optional
    Rows per block (default: as many as fit 2**23 kernel entries).""",
)


def _as_simplex(scores: Array, clip: float) -> Array:
    """(n, k) clamped scores; a 1-D score s becomes the 2-vector [1 - s, s]."""
    if is_torch(scores):
        import torch

        s = scores.to(torch.float64) if scores.dtype != torch.float64 else scores
        if s.ndim == 1:
            s = torch.stack([1 - s, s], dim=1)
        return s.clamp(clip, 1 - clip)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = np.stack([1 - s, s], axis=1)
    return np.clip(s, clip, 1 - clip)


def _log_beta(G: Array, h: float) -> Array:
    """``log B(G / h + 1)`` per row (the Dirichlet normaliser of each centre)."""
    if is_torch(G):
        import torch

        a = G / h + 1
        return torch.lgamma(a).sum(1) - torch.lgamma(a.sum(1))
    from scipy.special import gammaln

    a = G / h + 1
    return gammaln(a).sum(1) - gammaln(a.sum(1))


def _block_rows(n: int, block_size: int | None) -> int:
    if block_size is not None:
        return max(1, int(block_size))
    return max(16, min(n, _BLOCK_ELEMENTS // max(n, 1)))


@_doc
def log_kernel_matrix(scores: Array, bandwidth: float, *, clip: float = 1e-7) -> Array:
    """Full matrix ``log k(g_i; alpha_j)`` (row i = evaluation point, column j = centre).

    Popordanoska et al. (2024) eq. 44. For inspection and tests on small samples; the estimators
    never form this n x n matrix.

    Parameters
    ----------
    {scores}
    bandwidth : float
        ``h > 0``.
    {clip}

    Examples
    --------
    The hand-checkable example of docs/how-calipers-computes.md §5.6 (h = 1):

    >>> import numpy as np
    >>> from calipers.estimators.dirichlet_kernel import log_kernel_matrix
    >>> g = np.array([[.8, .2], [.6, .4], [.3, .7]])
    >>> np.exp(log_kernel_matrix(g, 1.0)).round(6)[0].tolist()
    [1.417937, 1.159154, 0.743475]
    """
    check_positive(bandwidth)
    G = _as_simplex(scores, clip)
    lb = _log_beta(G, bandwidth)
    return _log(G) @ G.T / bandwidth - lb[None, :]


def _log(G: Array) -> Array:
    if is_torch(G):
        return G.log()
    return np.log(G)


def _kernel_map(
    G: Array,
    w: Array | None,
    h: float,
    block: int,
    leave_one_out: bool,
    consume: Callable[[Any, Array, Array], Any],
    rows: np.ndarray | None = None,
) -> list[Any]:
    """``consume(rows, E, m)`` for every block of rows; returns the results in order.

    ``E[a, j] = w_j k(g_i; alpha_j) / exp(m_a)`` for the block's rows ``i`` (the
    diagonal removed with ``leave_one_out``), ``m`` the row maxima of the
    log-kernel (the LogSumExp shift of Popordanoska et al. (2024) App. E.1). ``rows`` selects the
    evaluation rows (default: all). NumPy blocks run on a thread pool (NumPy
    releases the GIL in matrix products and ufuncs); PyTorch blocks run in turn
    (PyTorch threads its own kernels).
    """
    n = G.shape[0]
    torch_in = is_torch(G)
    # one matrix product gives log(w_j k_ij) = <log g_i / h, g_j> - log B_j + log w_j:
    # the per-centre constant rides along as an extra column
    lb = _log_beta(G, h)
    A: Any
    BT: Any
    if torch_in:
        import torch

        c = -lb if w is None else torch.log(w) - lb
        A = torch.cat([_log(G) / h, torch.ones((n, 1), dtype=G.dtype, device=G.device)], 1)
        BT = torch.cat([G, c[:, None]], 1).T
    else:
        with np.errstate(divide="ignore"):
            c = -lb if w is None else np.log(w) - lb
        A = np.concatenate([np.log(G) / h, np.ones((n, 1))], 1)
        BT = np.ascontiguousarray(np.concatenate([G, c[:, None]], 1).T)
    R = np.arange(n) if rows is None else np.asarray(rows)
    starts = list(range(0, len(R), block))

    def one(i0: int) -> Any:
        idx = R[i0 : i0 + block]
        sl: Any = slice(int(idx[0]), int(idx[-1]) + 1) if rows is None else idx
        if torch_in:
            import torch

            L = A[sl] @ BT
            if leave_one_out:
                ar = torch.arange(len(idx), device=G.device)
                mask = torch.zeros(L.shape, dtype=torch.bool, device=G.device)
                mask[ar, torch.as_tensor(idx, device=G.device)] = True
                L = L.masked_fill(mask, -math.inf)
            m = L.max(dim=1, keepdim=True).values.detach()
            return consume(sl, torch.exp(L - m), m)
        L = np.asarray(A[sl] @ BT)
        if leave_one_out:
            L[np.arange(len(idx)), idx] = -np.inf
        m = L.max(axis=1, keepdims=True)
        L -= m
        # exp(-700) ~ 1e-304 is negligible next to the row maximum's 1 (the
        # difference from exact zero is < n * 1e-304); the floor keeps exp
        # out of subnormal numbers, which are an order of magnitude slower
        np.maximum(L, _LOG_FLOOR, out=L)
        return consume(sl, np.exp(L, out=L), m)

    if torch_in:
        return [one(i0) for i0 in starts]
    return thread_map(one, starts)


@_doc
@dataclass(frozen=True)
class DirichletKernel:
    """Leave-one-out Dirichlet (Beta for 1-D scores) kernel regression.

    Popordanoska et al. (2024) eq. 11-12 with the leave-one-out sums of eq. 15 and the log-space
    evaluation of App. E.1. An estimator of E[target | score] for the
    calibration-error pipeline: ``calibration_error(..., estimator=DirichletKernel(h))``
    applies the divergence to ``(r_i, g_i)`` at every sample and averages with
    the sample weights (Popordanoska et al. (2024) eq. 9).

    Parameters
    ----------
    bandwidth : float, default 0.02
        ``h > 0``; ``alpha_j = g_j / h + 1``. 0.02 is the value Popordanoska et al. (2024) used for
        its CIFAR tables; :func:`select_bandwidth` chooses one by leave-one-out
        likelihood.
    leave_one_out : bool, default True
        Exclude sample i from its own estimate (Popordanoska et al. (2024) eq. 15).
    {clip}
    {block_size}

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import DirichletKernel
    >>> g = np.array([[.8, .2], [.6, .4], [.3, .7]])
    >>> y = np.array([[1., 0.], [1., 0.], [0., 1.]])
    >>> DirichletKernel(1.0).regress(g, y, None).round(6).tolist()   # docs/how-calipers-computes.md §5.6
    [[0.609238, 0.390762], [0.538724, 0.461276], [1.0, 0.0]]
    """

    bandwidth: float = 0.02
    leave_one_out: bool = True
    clip: float = 1e-7
    block_size: int | None = None

    def __post_init__(self) -> None:
        check_positive(self.bandwidth)
        if not (0 <= self.clip < 0.5):
            raise CalibrationInputError(f"clip must be in [0, 0.5); got {self.clip!r}")

    def regress(self, scores: Array, targets: Array, weights: Array | None) -> Array:
        """Kernel estimate of E[target | score] at every sample.

        ``scores`` (n, k) or (n,); ``targets`` of the same shape (one-hot rows or
        0/1 indicators); ``weights`` (n,) or None. Returns float64 in the
        input's namespace, shape of ``targets``.
        """
        n = int(scores.shape[0])
        if self.leave_one_out and n < 2:
            raise CalibrationInputError(
                f"the leave-one-out kernel estimate needs at least 2 samples; got {n}"
            )
        G = _as_simplex(scores, self.clip)
        torch_in = is_torch(G)
        if torch_in:
            import torch

            T = targets.to(torch.float64)
            W = None if weights is None else weights.to(torch.float64)
        else:
            T = np.asarray(targets, dtype=np.float64)
            W = None if weights is None else np.asarray(weights, dtype=np.float64)
        T2 = T.reshape(n, -1)

        def ratio(rows: Any, E: Array, m: Array) -> Array:
            den = E.sum(1)
            if not torch_in and not np.all(den > 0):
                i = int(np.arange(n)[rows][np.argmin(den > 0)])
                raise CalibrationInputError(
                    f"the kernel estimate at sample {i} has no support (all other "
                    "samples have zero weight)"
                )
            r = (E @ T2) / den[:, None]
            # a weighted mean of targets in [0, 1]; rounding can leave it an ulp
            # outside (then 1 - r < 0 and F(r) = NaN for the KL generator)
            return r.clamp(0.0, 1.0) if torch_in else np.clip(r, 0.0, 1.0, out=r)

        parts = _kernel_map(
            G, W, self.bandwidth, _block_rows(n, self.block_size), self.leave_one_out, ratio
        )
        if torch_in:
            import torch

            return torch.cat(parts, 0).reshape(T.shape)
        return np.concatenate(parts, 0).reshape(T.shape)


@_doc
def loo_log_likelihood(
    scores: Array,
    bandwidth: float,
    *,
    weights: Array | None = None,
    clip: float = 1e-7,
    rows: np.ndarray | None = None,
    block_size: int | None = None,
) -> float:
    """Leave-one-out log-likelihood of the Dirichlet kernel density estimate.

    ``L(h) = sum_i w_i log( sum_{j != i} w_j k_h(g_i; alpha_j) / sum_{j != i} w_j )``
    (Popordanoska et al. (2024) bandwidth objective, docs/how-calipers-computes.md §5.5: with unit weights
    ``sum_i [LogSumExp_{j != i} log k_ij - log(n - 1)]``).

    Parameters
    ----------
    {scores}
    bandwidth : float
        ``h > 0``.
    {weights}
    {clip}
    rows : int array, optional
        Evaluate the sum over these rows only (all columns still count); used
        to subsample long inputs.
    {block_size}

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.dirichlet_kernel import loo_log_likelihood
    >>> g = np.array([[.8, .2], [.6, .4], [.3, .7]])
    >>> round(loo_log_likelihood(g, 1.0), 6)   # sum_i log(mean_{j != i} k_ij)
    0.078372
    """
    check_positive(bandwidth)
    G = np.asarray(_as_simplex(_np64(scores), clip))
    w = None if weights is None else np.asarray(_np64(weights))
    return _loo_ll_np(G, w, float(bandwidth), rows, block_size)


def _np64(x: Array) -> np.ndarray:
    if is_torch(x):
        return x.detach().cpu().numpy().astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def _loo_ll_np(
    G: np.ndarray,
    w: np.ndarray | None,
    h: float,
    rows: np.ndarray | None,
    block_size: int | None,
) -> float:
    n = G.shape[0]
    wt = np.ones(n) if w is None else w
    total_w = wt.sum()

    def ll(sl: Any, E: np.ndarray, m: np.ndarray) -> float:
        idx = np.arange(n)[sl]
        with np.errstate(divide="ignore"):
            dens = np.log(E.sum(1)) + m[:, 0] - np.log(total_w - wt[idx])
        return float(np.sum(wt[idx] * dens))

    return float(sum(_kernel_map(G, w, h, _block_rows(n, block_size), True, ll, rows)))


@_doc
def select_bandwidth(
    scores: Array,
    *,
    weights: Array | None = None,
    bounds: tuple[float, float] = (1e-5, 1.0),
    n_grid: int = 16,
    max_rows: int = 2048,
    clip: float = 1e-7,
    seed: int = 0,
) -> float:
    """Bandwidth maximising the leave-one-out likelihood (Popordanoska et al. (2024) §7, App. E).

    The Popordanoska et al. (2024) code evaluates a fixed grid (``logspace(-5, -1, 50)`` and five
    larger values; docs/how-calipers-computes.md §5.5). Here the objective
    :func:`loo_log_likelihood` is evaluated on ``n_grid`` log-spaced values in
    ``bounds``, then refined by a bounded Brent search on ``log10 h`` between the
    best grid point's neighbours (to 0.001 in ``log10 h``). For long inputs the
    sum runs over ``max_rows`` rows drawn without replacement (all samples stay
    kernel centres), an unbiased estimate of the objective; the draw is seeded.
    Each evaluation is one blocked pass (a matrix product and the
    exponentials of ``max_rows x n`` kernel entries); about 26 are made.

    Parameters
    ----------
    {scores}
    {weights}
    bounds : (float, float), default (1e-5, 1.0)
        Search interval for ``h``.
    n_grid : int, default 16
    max_rows : int, default 2048
    {clip}
    seed : int, default 0

    Returns
    -------
    float
        A bandwidth inside ``bounds``. When the maximum is at the lower bound
        (exact duplicates among the scores make the likelihood grow without
        limit as ``h -> 0``) a warning says so.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import select_bandwidth
    >>> rng = np.random.default_rng(0)
    >>> g = rng.dirichlet([2, 2, 2], size=300)
    >>> h = select_bandwidth(g)
    >>> 0.01 < h < 0.2
    True
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (0 < lo < hi and math.isfinite(hi)):
        raise CalibrationInputError(f"bounds must satisfy 0 < low < high; got {bounds!r}")
    if n_grid < 3:
        raise CalibrationInputError(f"n_grid must be at least 3; got {n_grid}")
    G = np.asarray(_as_simplex(_np64(scores), clip))
    n = G.shape[0]
    if n < 2:
        raise CalibrationInputError(f"bandwidth selection needs at least 2 samples; got {n}")
    w = None if weights is None else np.asarray(_np64(weights))
    rows = None
    if n > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))

    def objective(log10h: float) -> float:
        return -_loo_ll_np(G, w, 10.0**log10h, rows, None)

    grid = np.linspace(math.log10(lo), math.log10(hi), n_grid)
    vals = np.array([objective(x) for x in grid])
    vals = np.where(np.isnan(vals), np.inf, vals)
    b = int(np.argmin(vals))
    best_x, best_v = grid[b], vals[b]
    if 0 < b < n_grid - 1 and np.isfinite(best_v):
        from scipy.optimize import minimize_scalar

        res = minimize_scalar(
            objective,
            bounds=(grid[b - 1], grid[b + 1]),
            method="bounded",
            options={"xatol": 1e-3},
        )
        if np.isfinite(res.fun) and res.fun <= best_v:
            best_x = float(res.x)
    if b == 0:
        warnings.warn(
            f"the leave-one-out likelihood is largest at the lower bound h = {lo:g} "
            "(duplicate scores make it grow as h -> 0); pass a fixed bandwidth",
            RuntimeWarning,
            stacklevel=2,
        )
    return float(min(max(10.0**best_x, lo), hi))
