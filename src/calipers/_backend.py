"""Minimal array-namespace helpers shared by the numerical core.

calipers accepts NumPy arrays (and array-likes) and PyTorch tensors. The heavy
passes over the prediction matrix (validation, arg-max, gathers, per-bin sums)
run in the caller's namespace and on the caller's device; only per-bin totals
(O(number of bins)) are moved to NumPy for the final arithmetic. This module
is the one place that knows how to do each of those few operations in each
namespace, so the rest of the package stays namespace-agnostic.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

Array = Any  # numpy.ndarray or torch.Tensor


def is_torch(x: object) -> bool:
    """Return True when ``x`` is a PyTorch tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def to_numpy(x: Array) -> np.ndarray:
    """Return a NumPy view/copy of ``x`` (detached, on the CPU)."""
    if is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def as_float64_numpy(x: Array) -> np.ndarray:
    """NumPy float64 version of ``x`` (used for O(bins) totals only)."""
    return np.asarray(to_numpy(x), dtype=np.float64)


def wrap_scalar(value: float, like: Array) -> Any:
    """Return ``value`` as a Python float, or a 0-d tensor on ``like``'s device."""
    if is_torch(like):
        import torch

        return torch.tensor(value, dtype=torch.float64, device=like.device)
    return float(value)


def argmax_rows(x: Array) -> Array:
    """Arg-max of each row; ties resolve to the lowest class index."""
    if is_torch(x):
        # torch.argmax does not document its tie rule on every device; the
        # "first maximum" rule is enforced explicitly: max, then the first
        # column equal to it.
        import torch

        mx = x.max(dim=1, keepdim=True).values
        idx = (x == mx).to(torch.uint8).argmax(dim=1)
        return idx
    return np.argmax(x, axis=1)


def take_rows(x: Array, idx: Array) -> Array:
    """``x[i, idx[i]]`` for every row ``i``."""
    if is_torch(x):
        return x.gather(1, idx.reshape(-1, 1)).reshape(-1)
    if x.flags.c_contiguous:
        # one flat gather: cheaper than take_along_axis's broadcast index arrays
        k = x.shape[1]
        return x.reshape(-1)[np.arange(0, x.shape[0] * k, k) + idx.reshape(-1)]
    return np.take_along_axis(x, idx.reshape(-1, 1), axis=1).reshape(-1)


def weighted_bincount(ids: Array, weights: Array | None, minlength: int) -> np.ndarray:
    """Float64 totals of ``weights`` (or counts) per integer id, as NumPy."""
    if is_torch(ids):
        import torch

        w = None if weights is None else weights.to(torch.float64)
        out = torch.bincount(ids, weights=w, minlength=minlength)
        return as_float64_numpy(out)[:minlength]
    if weights is None:
        return np.bincount(ids, minlength=minlength).astype(np.float64)[:minlength]
    return np.bincount(ids, weights=weights, minlength=minlength)[:minlength]


def row_sum_of_squares(p: np.ndarray) -> np.ndarray:
    """``sum_k p_ik^2`` for every row, in float64, without a float64 copy of ``p``.

    Rows are converted to float64 in cache-sized blocks (squares of float32
    values are exact in float64), so the peak extra memory is one block, not a
    copy of the matrix.

    Examples
    --------
    >>> import numpy as np
    >>> row_sum_of_squares(np.array([[0.5, 0.5], [1.0, 0.0]], dtype=np.float32)).tolist()
    [0.5, 1.0]
    """
    n = p.shape[0]
    out = np.empty(n)
    step = max(1, (1 << 16) // max(1, p.shape[1]))
    vecdot = getattr(np, "vecdot", None)  # NumPy >= 2.0
    for i in range(0, n, step):
        blk = np.asarray(p[i : i + step], dtype=np.float64)
        out[i : i + step] = vecdot(blk, blk) if vecdot else np.einsum("ij,ij->i", blk, blk)
    return out


def row_logsumexp(z: np.ndarray) -> np.ndarray:
    """``log sum_k exp(z_ik)`` for every row, in float64, in cache-sized row blocks.

    The max-shifted form of every block is computed in float64, so a float32
    matrix costs one block of float64 temporaries, not three full copies (as
    ``scipy.special.logsumexp`` on the whole matrix would).

    Examples
    --------
    >>> import numpy as np
    >>> row_logsumexp(np.array([[0.0, 0.0], [1000.0, 1000.0]])).round(6).tolist()
    [0.693147, 1000.693147]
    """
    n = z.shape[0]
    out = np.empty(n)
    step = max(1, (1 << 16) // max(1, z.shape[1]))
    for i in range(0, n, step):
        blk = np.array(z[i : i + step], dtype=np.float64)  # a copy: the caller's z is not touched
        m = blk.max(axis=1, keepdims=True)
        blk -= m
        np.exp(blk, out=blk)
        out[i : i + step] = np.log(blk.sum(axis=1)) + m[:, 0]
    return out
