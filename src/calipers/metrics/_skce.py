"""Squared kernel calibration error (Widmann, Lindsten & Zachariah 2019; Gruber & Buettner (2022) Def. C.4).

For a tensor kernel ``kappa(p, q) * 1{y = y'}`` on (prediction, target) pairs the
SKCE kernel is (docs/how-calipers-computes.md §4.6, CalibrationErrors.jl ``skce.jl``)

    h_ij = kappa(p_i, p_j) <e_{y_i} - p_i, e_{y_j} - p_j>,

with ``kappa(p, q) = exp(-||p - q||_1 / bandwidth)`` on the simplex. Estimators:

* ``"unbiased"`` — mean of h_ij over pairs i < j (a U-statistic; can be negative);
* ``"biased"`` — mean over all n^2 pairs, i = j included (a V-statistic; >= 0);
* ``"block"`` — consecutive blocks of ``block_size`` rows, an incomplete last block
  dropped, mean of the per-block unbiased estimates (linear time).

The O(n^2) sums need no exponential per pair. Since ``|a - b| = a + b - 2 min(a, b)``
and ``exp`` is increasing,

    kappa(p_i, p_j) = g_i g_j prod_k min(u_ik, u_jk),
    u_ik = exp((2 p_ik - 1/k) / bw),   g_i = exp((1/2 - sum_k p_ik) / bw),

so a tile of the kernel matrix is k minimum-and-multiply passes (exact up to rounding;
on the 2-core AVX2 development machine NumPy's float64 ``exp`` costs ~17 ns a value, a
broadcast minimum ~1.4 ns). The ``g`` factors fold into the residuals, and
``sum_ij kappa_ij <V_i, V_j>`` of a tile is one matrix product. Only tiles on and above
the diagonal are formed (the sum is symmetric), in row blocks on a thread pool, so
memory stays O(tile) however large n is. Bandwidths so small that ``u`` would
overflow (``3 / bw > 700``) use the direct ``exp(-cdist / bw)`` instead. PyTorch input
runs the same tiles in torch, on the input's device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from .._backend import as_float64_numpy, is_torch, wrap_scalar
from .._docstrings import fill_doc
from .._parallel import thread_map
from ..estimators.quadratic_cost import check_quadratic_cost
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_integer,
    check_positive,
    check_predictions,
)
from ._autograd import attach_gradient, needs_grad

__all__ = ["skce"]

_TILE_ROWS = 128  # tiles of the symmetric kernel sum: 128 x 2048 doubles = 2 MiB
_TILE_COLS = 2048
_TILE_TORCH_CPU = (256, 4096)  # PyTorch: fewer, larger tiles (its ops use all threads)
_TILE_GPU = (2048, 16384)  # 2 x 256 MiB buffers on a GPU
_MAX_EXPONENT = 700.0  # exp(700) ~ 1e304: the product form stays finite below this


def residuals(P: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """Float64 (n, k) probabilities and the residuals ``e_y - p`` of validated predictions."""
    p = as_float64_numpy(P.full_probs())
    y = as_float64_numpy(P.labels).astype(np.int64)
    E = -p
    E[np.arange(p.shape[0]), y] += 1.0
    return p, E


class L1ExponentialKernel:
    """``kappa(p_i, p_j) = exp(-||p_i - p_j||_1 / bw)`` on the rows of ``p``, tile by tile.

    ``block(rows, cols)`` returns ``kappa`` divided by ``g_i g_j`` (see the module
    docstring); ``g`` is all ones where the direct form is used. ``p`` is a float64
    NumPy array or PyTorch tensor; the tiles are formed in its namespace (and on its
    device), with the same values.
    """

    def __init__(self, p: Any, bw: float) -> None:
        self.p = p
        self.bw = bw
        self.torch = is_torch(p)
        self.U: Any
        self.UT: Any
        self.g: Any
        n, k = p.shape
        spread = float(abs(p).sum(1).max()) if n else 0.0
        self.product_form = 3.0 * spread / bw < _MAX_EXPONENT
        self._empty: Callable[..., Any]
        self._minimum: Callable[..., Any]
        xp_exp: Callable[..., Any]
        ones: Callable[..., Any]
        if self.torch:
            import torch

            self._empty = lambda shape: torch.empty(shape, dtype=p.dtype, device=p.device)
            self._minimum, xp_exp, ones = torch.minimum, torch.exp, torch.ones_like
        else:
            self._empty, self._minimum, xp_exp, ones = np.empty, np.minimum, np.exp, np.ones_like
        if self.product_form:
            self.U = xp_exp((2.0 * p - 1.0 / k) / bw)  # (n, k)
            # (k, n): contiguous rows of a tile
            self.UT = self.U.T.contiguous() if self.torch else np.ascontiguousarray(self.U.T)
            self.g = xp_exp((0.5 - p.sum(1)) / bw)
        else:
            self.g = ones(p[:, 0])

    def block(self, rows: slice, cols: slice, out: Any = None, tmp: Any = None) -> Any:
        """The tile ``kappa[rows, cols] / (g[rows] g[cols]')``; ``out``/``tmp`` are buffers."""
        empty, minimum = self._empty, self._minimum
        if not self.product_form:
            if self.torch:
                import torch

                return torch.cdist(self.p[rows], self.p[cols], p=1).mul_(-1.0 / self.bw).exp_()
            from scipy.spatial.distance import cdist  # lazily: only tiny bandwidths

            K = cdist(self.p[rows], self.p[cols], "cityblock")
            K *= -1.0 / self.bw
            return np.exp(K, out=K)
        U, UT = self.U[rows], self.UT[:, cols]
        shape = (U.shape[0], UT.shape[1])
        acc = empty(shape) if out is None else out[: shape[0], : shape[1]]
        t = empty(shape) if tmp is None else tmp[: shape[0], : shape[1]]
        minimum(U[:, 0, None], UT[0, None, :], out=acc)
        for c in range(1, U.shape[1]):
            minimum(U[:, c, None], UT[c, None, :], out=t)
            acc *= t
        return acc

    def quadratic_sum(self, V: Any) -> float:
        """``sum_ij kappa(p_i, p_j) <V_i, V_j>`` over all ordered pairs, i = j included."""
        n = V.shape[0]
        Vg = V * self.g[:, None]
        if self.torch:
            return self._quadratic_sum_torch(Vg)

        def row_block(a: int) -> float:
            b = min(n, a + _TILE_ROWS)
            out = np.empty((_TILE_ROWS, _TILE_COLS))
            tmp = np.empty((_TILE_ROWS, _TILE_COLS))
            rows = slice(a, b)
            total = float(
                np.einsum("ik,ik->", self.block(rows, rows, out, tmp) @ Vg[rows], Vg[rows])
            )
            for c0 in range(b, n, _TILE_COLS):
                cols = slice(c0, min(n, c0 + _TILE_COLS))
                K = self.block(rows, cols, out, tmp)
                total += 2.0 * float(np.einsum("ik,ik->", K @ Vg[cols], Vg[rows]))
            return total

        return float(sum(thread_map(row_block, range(0, n, _TILE_ROWS))))

    def _quadratic_sum_torch(self, Vg: Any) -> float:
        """The same sum with PyTorch: one tile at a time, each op on all of torch's threads.

        PyTorch vectorises the broadcast minimum (NumPy's is ~3x slower a value than
        its contiguous one), so no Python threads are needed; tiles are larger on GPUs.
        """
        import torch

        n = Vg.shape[0]
        R, C = _TILE_TORCH_CPU if Vg.device.type == "cpu" else _TILE_GPU
        out = torch.empty((min(R, n), min(C, n)), dtype=Vg.dtype, device=Vg.device)
        tmp = torch.empty_like(out)
        total = torch.zeros((), dtype=Vg.dtype, device=Vg.device)
        for a in range(0, n, R):
            rows = slice(a, min(n, a + R))
            total += ((self.block(rows, rows, out, tmp) @ Vg[rows]) * Vg[rows]).sum()
            for c0 in range(rows.stop, n, C):
                cols = slice(c0, min(n, c0 + C))
                total += 2.0 * ((self.block(rows, cols, out, tmp) @ Vg[cols]) * Vg[rows]).sum()
        return float(total)


def kernel_rows(kern: L1ExponentialKernel, E: np.ndarray, rows: slice) -> np.ndarray:
    """Rows ``rows`` of ``h_ij = kappa(p_i, p_j) <E_i, E_j>`` (all columns j)."""
    H = kern.block(rows, slice(0, E.shape[0]))
    H *= (E[rows] * kern.g[rows, None]) @ (E * kern.g[:, None]).T
    return H


def block_values(p: np.ndarray, E: np.ndarray, m: int, bw: float) -> np.ndarray:
    """Unbiased SKCE of each block of m consecutive rows (incomplete last block dropped)."""
    nb = p.shape[0] // m
    Pb = p[: nb * m].reshape(nb, m, -1)
    Eb = E[: nb * m].reshape(nb, m, -1)
    dist = np.abs(Pb[:, :, None, :] - Pb[:, None, :, :]).sum(-1)
    H = np.exp(-dist / bw) * np.einsum("bik,bjk->bij", Eb, Eb)
    off = H.sum(axis=(1, 2)) - np.trace(H, axis1=1, axis2=2)
    return np.asarray(off / (m * (m - 1)), dtype=np.float64)


@fill_doc
def skce(
    probs: Any,
    labels: Any,
    *,
    estimator: Literal["unbiased", "biased", "block"] = "unbiased",
    bandwidth: float = 1.0,
    block_size: int = 2,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Squared kernel calibration error of the full probability vector (Widmann et al. 2019).

    Gruber & Buettner (2022) Def. C.4 (KCE; SKCE is its square) with the estimators of
    CalibrationErrors.jl as described in docs/how-calipers-computes.md §4.6.

    Parameters
    ----------
    {probs}
        Binary input is read as ``[1 - p, p]``.
    {labels}
    estimator : {"unbiased", "biased", "block"}, default "unbiased"
    bandwidth : float, default 1.0
        ``kappa(p, q) = exp(-||p - q||_1 / bandwidth)``.
    block_size : int, default 2
        Rows per block for ``estimator="block"``.
    {sample_weight}
        The biased estimate is ``sum_ij w_i w_j h_ij / W^2``, the unbiased one
        ``(sum_ij w_i w_j h_ij - sum_i w_i h_ii) / (W^2 - W)``; weights are not
        available for the block estimator.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        For PyTorch input a 0-d ``torch.float64`` tensor on the input's device,
        differentiable in ``probs`` (or the logits) almost everywhere (the
        kernel ``exp(-||p - q||_1 / bandwidth)`` has kinks where two
        probabilities are equal). Unbiased and biased estimators: the
        gradient is computed analytically in row blocks (O(n^2 k) time,
        O(block) memory; first derivatives only); block estimator: by
        autograd through a PyTorch copy of the computation. The value itself
        is the one of the non-differentiable path, bit for bit. See
        docs/pytorch.md.

    Notes
    -----
    The unbiased and biased estimators cost O(n^2 k) time and O(tile) memory: at
    n = 10 000, k = 10 about 0.6-0.9 s on 2 CPU cores (benchmarks/bench_mmce_skce.py),
    four times that at 2n. The block estimator is O(n m k) (15 ms there); its
    variance is larger, which ``skce_test`` accounts for.

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> conf = np.array([.55, .6, .65, .7, .8, .9, .9, .95])
    >>> correct = np.array([1, 0, 1, 0, 1, 1, 0, 1])
    >>> P, y = np.stack([conf, 1 - conf], axis=1), np.where(correct == 1, 0, 1)
    >>> [round(cp.skce(P, y, estimator=e), 6) for e in ("unbiased", "biased", "block")]
    [-0.034368, 0.0336, -0.245167]
    """
    if estimator not in ("unbiased", "biased", "block"):
        raise CalibrationInputError(
            f"estimator must be 'unbiased', 'biased' or 'block'; got {estimator!r}"
        )
    bw = check_positive(bandwidth)
    Pr = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    if estimator != "block":
        check_quadratic_cost(
            Pr.n_samples,
            Pr.n_classes,
            seconds_per_pair=8e-10,  # 0.8 s at n = 10^4, k = 10 (benchmarks/bench_mmce_skce.py)
            what=f"the {estimator} SKCE estimator",
            alternative="estimator='block' (linear time, Widmann et al. 2019)",
            on_gpu=Pr.is_torch and Pr.probs.device.type != "cpu",
        )
    if is_torch(Pr.probs) and estimator == "block":
        # the block estimator runs in torch on the input's device (linear time, so
        # the copy to the CPU would cost as much as the estimate)
        m = _check_block(Pr, block_size)
        value_t = _block_mean_torch(Pr, m, bw)
        return value_t if needs_grad(Pr.probs) else value_t.detach()
    if is_torch(Pr.probs):
        P, E, w = _torch_residuals(Pr)  # the O(n^2) sum runs in torch, on the input's device
    else:
        P, E = residuals(Pr)
        n = P.shape[0]
        if estimator == "block":
            m = _check_block(Pr, block_size)
            return float(np.mean(block_values(P, E, m, bw)))
        w = np.ones(n) if Pr.sample_weight is None else as_float64_numpy(Pr.sample_weight)
    total = L1ExponentialKernel(P, bw).quadratic_sum(E * w[:, None])
    diag = float((w * (E * E).sum(1)).sum())  # kappa(p, p) = 1
    W = float(w.sum())
    if estimator == "biased":
        return _with_gradient(total / W**2, Pr, P, E, w, bw, W**2, False)
    denom = W**2 - W
    if denom <= 0:
        raise CalibrationInputError("the unbiased SKCE needs a total sample weight above 1")
    return _with_gradient((total - diag) / denom, Pr, P, E, w, bw, denom, True)


def _with_gradient(
    value: float, Pr: Predictions, p: Any, E: Any, w: Any, bw: float, scale: float, unbiased: bool
) -> Any:
    """``value`` as :func:`skce` returns it, with its gradient when the input needs one.

    ``value = (S - unbiased * D) / scale`` with ``S = sum_ij kappa_ij <V_i, V_j>``,
    ``V_i = w_i (e_{y_i} - p_i)`` and ``D = sum_i w_i ||e_{y_i} - p_i||^2``; the
    gradient in the (full) probabilities is :func:`_kernel_sum_gradient` (plus
    ``2 w_m (e_{y_m} - p_m)`` for ``-D``), divided by ``scale``.
    """
    if not needs_grad(Pr.probs):
        return wrap_scalar(value, Pr.probs)
    import torch

    g = _kernel_sum_gradient(p, E * w[:, None], w, bw)
    if unbiased:
        g = g + 2.0 * w[:, None] * E
    return attach_gradient(value, Pr.full_probs().to(torch.float64), g / scale)


def _kernel_sum_gradient(p: Any, V: Any, w: Any, bw: float) -> Any:
    """Gradient in ``p`` of ``S = sum_ij kappa(p_i, p_j) <V_i, V_j>``, ``V_i = w_i (e_{y_i} - p_i)``.

    ``dS / dp_mk = -2 w_m sum_j kappa_mj V_jk - (2 / bw) sum_j H_mj sign(p_mk - p_jk)``
    with ``H_mj = kappa_mj <V_m, V_j>`` (the kernel ``exp(-||p_m - p_j||_1 / bw)``
    has a kink where two probabilities are equal; ``sign(0) = 0`` there, which is
    the derivative on the diagonal ``j = m``). PyTorch tensors (float64, on the
    input's device), in row blocks of about 2**22 kernel entries: O(n^2 k) time,
    O(block) memory.
    """
    import torch

    n, k = p.shape
    rows = max(1, min(n, (1 << 22) // max(n, 1)))
    out = torch.empty_like(p)
    for a in range(0, n, rows):
        sl = slice(a, min(n, a + rows))
        K = torch.cdist(p[sl], p, p=1).mul_(-1.0 / bw).exp_()
        H = K * (V[sl] @ V.T)
        g = -2.0 * w[sl, None] * (K @ V)
        for c in range(k):
            g[:, c] -= (2.0 / bw) * (H * torch.sign(p[sl, c, None] - p[None, :, c])).sum(1)
        out[sl] = g
    return out


def _check_block(Pr: Predictions, block_size: Any) -> int:
    """The validated block size of the block estimator (which takes no sample weights)."""
    if Pr.sample_weight is not None:
        raise CalibrationInputError("sample_weight is not supported by the block estimator")
    m = check_integer(block_size, "block_size", minimum=2)
    n = Pr.n_samples
    if m > n:
        raise CalibrationInputError(f"block_size must be in [2, n={n}]; got {block_size!r}")
    return m


def _block_mean_torch(Pr: Predictions, m: int, bw: float) -> Any:
    """The block estimator (:func:`block_values`, mean over blocks) with differentiable PyTorch ops."""
    import torch

    p = Pr.full_probs().to(torch.float64)
    nb = p.shape[0] // m
    E = torch.nn.functional.one_hot(Pr.labels.long(), p.shape[1]).to(torch.float64) - p
    Pb = p[: nb * m].reshape(nb, m, -1)
    Eb = E[: nb * m].reshape(nb, m, -1)
    dist = (Pb[:, :, None, :] - Pb[:, None, :, :]).abs().sum(-1)
    H = torch.exp(-dist / bw) * torch.einsum("bik,bjk->bij", Eb, Eb)
    off = H.sum(dim=(1, 2)) - H.diagonal(dim1=1, dim2=2).sum(-1)
    return (off / (m * (m - 1))).mean()


def _torch_residuals(Pr: Predictions) -> tuple[Any, Any, Any]:
    """Float64 probabilities, residuals ``e_y - p`` and weights as tensors on the input's device."""
    import torch

    p = Pr.full_probs().detach().to(torch.float64)
    n = p.shape[0]
    E = -p
    E[torch.arange(n, device=p.device), Pr.labels.long()] += 1.0
    if Pr.sample_weight is None:
        return p, E, torch.ones(n, dtype=torch.float64, device=p.device)
    return p, E, Pr.sample_weight.detach().to(torch.float64)
