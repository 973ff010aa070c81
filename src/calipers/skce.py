"""Squared kernel calibration error (Widmann, Lindsten & Zachariah 2019; seed 004 Def. C.4).

For a tensor kernel ``kappa(p, q) * 1{y = y'}`` on (prediction, target) pairs the
SKCE kernel is (conventions.md §4.6, CalibrationErrors.jl ``skce.jl``)

    h_ij = kappa(p_i, p_j) <e_{y_i} - p_i, e_{y_j} - p_j>,

with ``kappa(p, q) = exp(-||p - q||_1 / bandwidth)`` on the simplex. Estimators:

* ``"unbiased"`` — mean of h_ij over pairs i < j (a U-statistic; can be negative);
* ``"biased"`` — mean over all n^2 pairs, i = j included (a V-statistic; >= 0);
* ``"block"`` — consecutive blocks of ``block_size`` rows, an incomplete last block
  dropped, mean of the per-block unbiased estimates (linear time).

The full estimators run over blocks of rows, so memory stays O(block x n).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
from scipy.spatial.distance import cdist

from ._backend import as_float64_numpy, wrap_scalar
from .validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["skce"]

_ROWS = 1024


def residuals(P: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """Float64 (n, k) probabilities and the residuals ``e_y - p`` of validated predictions."""
    p = as_float64_numpy(P.full_probs())
    y = as_float64_numpy(P.labels).astype(np.int64)
    E = -p
    E[np.arange(p.shape[0]), y] += 1.0
    return p, E


def kernel_rows(p: np.ndarray, E: np.ndarray, rows: slice, bw: float) -> np.ndarray:
    """Rows ``rows`` of ``h_ij = exp(-||p_i - p_j||_1 / bw) <E_i, E_j>`` (all columns j)."""
    H = cdist(p[rows], p, "cityblock")
    H *= -1.0 / bw
    np.exp(H, out=H)
    H *= E[rows] @ E.T
    return H


def map_row_blocks(n: int, fn: Callable[[slice], Any]) -> list[Any]:
    """``fn(rows)`` for consecutive row blocks of ``_ROWS``, on a thread pool.

    The kernel work (cdist, exp, matrix products) releases the GIL, so the
    blocks of an O(n^2) sum run in parallel on all cores; results in order.
    """
    blocks = [slice(a, min(n, a + _ROWS)) for a in range(0, n, _ROWS)]
    if len(blocks) == 1:
        return [fn(blocks[0])]
    with ThreadPoolExecutor(max_workers=min(len(blocks), os.cpu_count() or 1)) as ex:
        return list(ex.map(fn, blocks))


def block_values(p: np.ndarray, E: np.ndarray, m: int, bw: float) -> np.ndarray:
    """Unbiased SKCE of each block of m consecutive rows (incomplete last block dropped)."""
    nb = p.shape[0] // m
    Pb = p[: nb * m].reshape(nb, m, -1)
    Eb = E[: nb * m].reshape(nb, m, -1)
    dist = np.abs(Pb[:, :, None, :] - Pb[:, None, :, :]).sum(-1)
    H = np.exp(-dist / bw) * np.einsum("bik,bjk->bij", Eb, Eb)
    off = H.sum(axis=(1, 2)) - np.trace(H, axis1=1, axis2=2)
    return np.asarray(off / (m * (m - 1)), dtype=np.float64)


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
) -> Any:
    """Squared kernel calibration error of the full probability vector (Widmann et al. 2019).

    Seed 004 Def. C.4 (KCE; SKCE is its square) with the estimators of
    CalibrationErrors.jl as described in conventions.md §4.6.

    Parameters
    ----------
    probs : array-like of shape (n, k) or (n,)
        Probabilities (binary input is read as ``[1 - p, p]``).
    labels : array-like of shape (n,)
    estimator : {"unbiased", "biased", "block"}, default "unbiased"
    bandwidth : float, default 1.0
        ``kappa(p, q) = exp(-||p - q||_1 / bandwidth)``.
    block_size : int, default 2
        Rows per block for ``estimator="block"``.
    sample_weight : array-like of shape (n,), optional
        Weights act as repetitions (a weight of 2 is the row twice): biased
        ``sum_ij w_i w_j h_ij / W^2``, unbiased
        ``(sum_ij w_i w_j h_ij - sum_i w_i h_ii) / (W^2 - W)``; not available for
        the block estimator.
    logits : bool, default False
    validate : bool, default True

    Returns
    -------
    float (a 0-d tensor for PyTorch input)

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
    if not bandwidth > 0:
        raise CalibrationInputError(f"bandwidth must be positive; got {bandwidth!r}")
    Pr = check_predictions(
        probs, labels, logits=logits, sample_weight=sample_weight, validate=validate
    )
    P, E = residuals(Pr)
    n = P.shape[0]
    bw = float(bandwidth)
    if estimator == "block":
        if Pr.sample_weight is not None:
            raise CalibrationInputError("sample_weight is not supported by the block estimator")
        m = int(block_size)
        if m < 2 or m > n:
            raise CalibrationInputError(f"block_size must be in [2, n={n}]; got {block_size!r}")
        return wrap_scalar(float(np.mean(block_values(P, E, m, bw))), Pr.probs)
    w = np.ones(n) if Pr.sample_weight is None else as_float64_numpy(Pr.sample_weight)

    def part(i: slice) -> float:
        return float(w[i] @ kernel_rows(P, E, i, bw) @ w)

    total = float(sum(map_row_blocks(n, part)))
    diag = float(np.sum(w * np.einsum("ij,ij->i", E, E)))  # kappa(p, p) = 1
    W = w.sum()
    if estimator == "biased":
        return wrap_scalar(total / W**2, Pr.probs)
    denom = W**2 - W
    if denom <= 0:
        raise CalibrationInputError("the unbiased SKCE needs a total sample weight above 1")
    return wrap_scalar((total - diag) / denom, Pr.probs)
