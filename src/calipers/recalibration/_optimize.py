"""The optimiser helpers the parametric recalibrators share.

The NLL of ``softmax(A)`` with its gradient in ``A``, an L-BFGS-B driver that
warns on failure, the penalty towards temperature scaling of vector and matrix
scaling (docs/how-calipers-computes.md §10), a whitener of logits and the injectivity test of a linear logit map. Private: the methods in
:mod:`calipers.recalibration` import them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..validation import CalibrationInputError
from ._params import user_stacklevel

#: Default strengths of the penalty towards temperature scaling (``reg="temperature"``) of
#: vector and matrix scaling: chosen by benchmarks/study_recalibration_defaults.py (held-out
#: NLL on digits with an SVC and a logistic regression, and on DenseNet-40 / CIFAR-10).
TEMPERATURE_LAMBDA = 10.0
TEMPERATURE_MU = 10.0
#: Largest inverse temperature (mean weight) of the penalised fits: ``1 / t_min`` of
#: temperature scaling's default bounds.
MAX_SCALE = 100.0


def _logit_spread(Z: np.ndarray, w: np.ndarray | None) -> float:
    """``s^2``: the mean over the columns of the (weighted) variance of the logits."""
    m = np.average(Z, axis=0, weights=w)
    return float(np.mean(np.average((Z - m) ** 2, axis=0, weights=w)))


def _n_eff(n: int, w: np.ndarray | None) -> float:
    """The number of rows, or the weight total (weights count as rows: integer weights
    are repetitions)."""
    return float(n) if w is None else float(w.sum())


def _temperature_distance(W: np.ndarray) -> tuple[float, np.ndarray]:
    """``D(W) = min_s ||P (W - s I)||_F^2`` and its gradient ``2 P (W - s* I)`` in W.

    ``P = I - 11^T / k``: softmax ignores ``W + 1 u^T``, so only ``P W`` matters;
    ``D`` is the squared distance from the map ``z -> W z`` to the nearest
    temperature scaling ``z -> s z`` in the directions softmax sees, with
    ``s* = tr(P W) / (k - 1)``. ``D(W) = 0`` iff W is a temperature scaling
    (up to ``1 u^T``); for a diagonal ``W = diag(w)``,
    ``D = (1 - 1/k) sum_k (w_k - mean w)^2``.
    """
    k = W.shape[0]
    PW = W - W.mean(axis=0, keepdims=True)
    s = float(np.trace(PW)) / (k - 1)
    R = PW - s * (np.eye(k) - 1.0 / k)
    return float(np.sum(R * R)), 2.0 * R


def _softmax_nll(A: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> tuple[float, np.ndarray]:
    """Weighted mean NLL of ``softmax(A)`` at labels ``y`` and its gradient in ``A``.

    Returns ``(loss, G)`` with ``G = d loss / d A = (softmax(A) - onehot(y)) w_i / sum w``.
    """
    n = A.shape[0]
    rows = np.arange(n)
    m = A.max(axis=1)
    G = A - m[:, None]
    np.exp(G, out=G)
    s = G.sum(axis=1)
    per = m + np.log(s) - A[rows, y]
    G /= s[:, None]
    G[rows, y] -= 1.0
    if w is None:
        loss = float(per.mean())
        G /= n
    else:
        total = float(w.sum())
        loss = float(per @ w) / total
        G *= (w / total)[:, None]
    return loss, G


def _lbfgs(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    bounds: list[tuple[float | None, float | None]] | None,
    *,
    tol: float,
    max_iter: int,
    name: str,
    ftol: float | None = None,
    accept: float | None = None,
    maxcor: int = 10,
) -> tuple[np.ndarray, int, bool]:
    """Minimise ``fun`` (value and gradient) with L-BFGS-B; warn when it fails.

    ``tol`` is L-BFGS-B's ``gtol`` (largest entry of the projected gradient);
    its ``ftol`` (relative decrease of the objective) is ``ftol``, by default
    ``max(tol**2, 1e-15)``. When SciPy stops for
    another reason (e.g. a line search that can no longer make progress at
    machine precision, or the iteration limit) but the projected gradient is
    below ``accept`` (default ``100 * tol``), the fit counts as converged;
    otherwise a ``RuntimeWarning`` quotes SciPy's
    message. ``maxcor`` is L-BFGS-B's memory (correction pairs). Returns
    ``(x, iterations, converged)``.
    """
    from scipy.optimize import minimize

    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={
            "maxiter": int(max_iter),
            "gtol": tol,
            "ftol": max(tol * tol, 1e-15) if ftol is None else ftol,
            "maxcor": int(maxcor),
        },
    )
    x = np.asarray(res.x, dtype=np.float64)
    _, g = fun(x)
    if bounds is not None:  # projected gradient: ignore components pushing out of a bound
        lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
        hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
        g = np.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, g)
    pg = float(np.max(np.abs(g))) if g.size else 0.0
    converged = bool(res.success) or pg <= (100.0 * tol if accept is None else accept)
    if not converged:
        warnings.warn(
            f"{name} did not converge in {res.nit} L-BFGS-B iterations "
            f"(largest projected gradient {pg:.3g}): {res.message}",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    return x, int(res.nit), converged


def _whitener(
    Z: np.ndarray, w: np.ndarray | None, ridge: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(mu, M)``: the (weighted) mean of the rows of Z and ``M = (C + ridge I)^{-1/2}``.

    With ``ridge = 0``, ``(Z - mu) M`` has identity covariance; directions of
    (almost) no variance (eigenvalues below 1e-10 of the largest) are left
    unscaled.
    """
    mu = np.average(Z, axis=0, weights=w)
    D = Z - mu
    C = (D.T @ D) / Z.shape[0] if w is None else (D.T * (w / w.sum())) @ D
    ev, V = np.linalg.eigh(C + ridge * np.eye(Z.shape[1]))
    top = float(ev.max()) if ev.size else 0.0
    scale = np.where(ev > 1e-10 * top, 1.0 / np.sqrt(np.maximum(ev, 1e-300)), 1.0)
    return mu, (V * scale) @ V.T


def _check_positive(name: str, value: Any, owner: str) -> None:
    if not (isinstance(value, (int, float, np.integer, np.floating)) and value > 0):
        raise CalibrationInputError(f"{owner}: {name} must be a positive number; got {value!r}")


def _linear_map_injective(W: np.ndarray, rtol: float = 1e-10) -> bool:
    """Is ``p -> softmax(W log p + b)`` one-to-one on the open simplex?

    Two predictions ``p != p'`` collide iff ``D = log p - log p'`` satisfies
    ``W D = c 1`` for some c. Differences of log-probability vectors are
    exactly 0 and the vectors with both a positive and a negative entry
    (``sum_k p_k exp(-D_k) = 1`` is solvable in the open simplex iff D changes
    sign), so the map is injective iff the subspace ``{D : P W D = 0}``
    (``P = I - 11^T / k``) holds no sign-changing vector. A subspace of
    dimension >= 2 always holds one, and this subspace has dimension >= 1, so:
    injective iff ``P W`` has rank ``k - 1`` and its null vector has all
    entries of one sign (zeros allowed). Rank and signs are judged with the
    relative tolerance ``rtol`` on the singular values and on the entries.
    """
    k = W.shape[0]
    P = np.eye(k) - 1.0 / k
    _, s, vt = np.linalg.svd(P @ W)
    if s[0] == 0 or s[k - 2] <= rtol * s[0]:
        return False
    v = vt[-1]
    v = v / np.max(np.abs(v))
    return bool(np.all(v >= -rtol) or np.all(v <= rtol))
