"""Temperature scaling (Guo et al. 2017): ``softmax(z / T)`` with one fitted T > 0.

Fitted by minimising the (weighted) NLL on a calibration split. With
``beta = 1 / T`` the NLL ``f(beta) = mean_i [LSE(beta z_i) - beta z_{i y_i}]``
is convex in ``beta``, and its derivatives are means of the cumulants of the
logits under ``p_i = softmax(beta z_i)``:

    f'(beta)   = mean_i (E_{p_i}[z_i] - z_{i y_i}),
    f''(beta)  = mean_i Var_{p_i}[z_i],
    f'''(beta) = mean_i kappa_3(z_i; p_i)       (third central moment).

All three come from one pass over the logits (read in cache-sized blocks of
rows; ``exp`` is the only costly operation, and each pass evaluates it once per
entry). The root of ``f'`` is found by a safeguarded Halley iteration: a step
that leaves the current bracket is replaced by bisection in ``log beta``, and
a bound of ``[1 / t_max, 1 / t_min]`` is evaluated only when a step tries to
cross it. The iteration stops when the step, or the predicted error of the
next iterate ``|f'''| d^2 / (2 f'')`` (d the Newton step; Halley's error is of
higher order), falls below ``tol * beta``. On large inputs (more than 2**22
logits) the iteration is warm-started from the optimum (to 1e-4 relative) on
a strided subsample of the rows holding about 2**21 logits, so that
typically two passes over the full data remain; the result is the optimum of
the full objective either way. The passes over large inputs run on up to
two threads (NumPy releases the GIL); the per-block sums are added in block
order, so the result does not depend on the number of threads.

Precision: float64 logits are processed in float64. float32 logits (when the
caller's array reaches ``_fit`` as float32) are processed in float32 for the
exponentials and the per-entry products (relative error ~1e-7 each), with
pairwise row sums; per-row moments and the totals over rows are combined in
float64. The fitted T then agrees with a float64 computation to ~1e-6
relative.

With ``loss="brier"`` the Brier score is minimised over ``log T`` by a bounded
Brent search instead (Popordanoska et al. (2024) and Chidambaram & Ge (2024) offer this option; docs/how-calipers-computes.md
§10).

References: Guo et al. (2017), "On calibration of modern neural networks";
docs/how-calipers-computes.md §10 lists how each seed fits T (LBFGS, BFGS, grids), all
minimising the same convex objective.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._inputs import _softmax
from ._params import user_stacklevel
from ._schema import (
    ITERATIONS,
    MAX_ITER,
    POSITIVE,
    OneOf,
    Schema,
    temperature_bounds,
    temperature_in_bounds,
)
from .base import Recalibrator, register

__all__ = ["TemperatureScaling"]

_LOG2E = 1.4426950408889634  # exp(x) = exp2(x log2 e); NumPy's exp2 is the cheaper of the two
_BLOCK = 1 << 17  # logits per block (two float32 buffers stay in a core's L2 cache)
_SUBSAMPLE = 1 << 21  # logits in the warm-start subsample
_FULL = 1 << 22  # inputs up to this many logits are solved on the full data directly
_THREADS = 2  # at most this many threads per pass, for inputs of _FULL logits or more


def _as_multiclass(S: np.ndarray) -> np.ndarray:
    """Binary logit z becomes the two-class logits [0, z] (softmax = sigmoid)."""
    if S.ndim == 1:
        return np.stack([np.zeros_like(S), S], axis=1)
    return S


class _Objective:
    """The NLL derivatives in ``beta`` over the rows of ``Z`` (a view, never copied)."""

    def __init__(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if Z.dtype not in (np.float32, np.float64):
            Z = Z.astype(np.float64)
        self.Z = Z
        n, k = Z.shape
        self.zmax = Z.max(axis=1).astype(np.float64)
        self.zy = Z[np.arange(n), y].astype(np.float64)
        self.w = w
        self.total = float(n) if w is None else float(w.sum())
        self.rows = max(1, _BLOCK // k)
        self.blocks = [(i, min(n, i + self.rows)) for i in range(0, n, self.rows)]
        cpus = os.cpu_count() or 1
        self.threads = min(_THREADS, cpus, len(self.blocks)) if Z.size >= _FULL else 1

    def subsample(self, stride: int) -> _Objective:
        sub = _Objective.__new__(_Objective)
        sub.Z = self.Z[::stride]
        sub.zmax = self.zmax[::stride]
        sub.zy = self.zy[::stride]
        sub.w = None if self.w is None else self.w[::stride]
        sub.total = float(sub.Z.shape[0]) if sub.w is None else float(sub.w.sum())
        sub.rows = self.rows
        n = sub.Z.shape[0]
        sub.blocks = [(i, min(n, i + sub.rows)) for i in range(0, n, sub.rows)]
        sub.threads = 1
        return sub

    def _block(
        self, beta: float, i0: int, i1: int, d: np.ndarray, e: np.ndarray
    ) -> tuple[float, float, float]:
        m = i1 - i0
        d, e = d[:m], e[:m]
        zmax = self.zmax[i0:i1]
        np.subtract(self.Z[i0:i1], zmax[:, None].astype(d.dtype), out=d)  # d <= 0
        np.multiply(d, d.dtype.type(beta * _LOG2E), out=e)
        np.exp2(e, out=e)  # e = exp(beta (z - zmax)), the largest is 1
        s0 = e.sum(axis=1).astype(np.float64)
        np.multiply(e, d, out=e)
        m1 = e.sum(axis=1).astype(np.float64) / s0
        np.multiply(e, d, out=e)
        m2 = e.sum(axis=1).astype(np.float64) / s0
        np.multiply(e, d, out=e)
        m3 = e.sum(axis=1).astype(np.float64) / s0
        var = np.maximum(m2 - m1 * m1, 0.0)
        k3 = m3 - 3.0 * m1 * m2 + 2.0 * m1**3
        g = m1 + (zmax - self.zy[i0:i1])
        if self.w is None:
            return float(g.sum()), float(var.sum()), float(k3.sum())
        wi = self.w[i0:i1]
        return float(wi @ g), float(wi @ var), float(wi @ k3)

    def derivatives(self, beta: float) -> tuple[float, float, float]:
        """``(f', f'', f''')`` at ``beta``: one pass over the logits."""
        k = self.Z.shape[1]

        def run(blocks: list[tuple[int, int]]) -> list[tuple[float, float, float]]:
            d = np.empty((self.rows, k), dtype=self.Z.dtype)
            e = np.empty_like(d)
            return [self._block(beta, i0, i1, d, e) for i0, i1 in blocks]

        if self.threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            per = -(-len(self.blocks) // self.threads)
            parts = [self.blocks[j : j + per] for j in range(0, len(self.blocks), per)]
            with ThreadPoolExecutor(len(parts)) as ex:
                sums = [s for part in ex.map(run, parts) for s in part]
        else:
            sums = run(self.blocks)
        g = h = t = 0.0
        for a, b, c in sums:  # block order: the same result for any number of threads
            g += a
            h += b
            t += c
        return g / self.total, h / self.total, t / self.total


def _halley(
    derivatives: Callable[[float], tuple[float, float, float]],
    beta: float,
    lo: float,
    hi: float,
    tol: float,
    max_iter: int,
) -> tuple[float, int, bool, str]:
    """Root of the increasing ``f'`` on ``[lo, hi]``.

    Returns ``(beta, passes, converged, bound)`` with ``bound`` "lo" or "hi" when
    the optimum lies at (or beyond) that end of the search interval, else "".
    A bound is evaluated only when a step tries to cross it, or when the steps
    towards it stop shrinking (the optimum may then be far away or at
    infinity, as for a separable calibration set, where ``f'`` tends to 0 from
    below as ``beta -> inf``).
    """
    known = {"lo": False, "hi": False}  # has the sign of f' been seen at lo / hi?
    beta = min(max(beta, lo), hi)
    prev = 0.0  # the previous step
    it = 0
    while it < max_iter:
        it += 1
        g, h, t = derivatives(beta)
        if not math.isfinite(g):
            raise CalibrationInputError(
                "TemperatureScaling: the NLL derivative is not finite at T = "
                f"{1.0 / beta:.6g}; the logits are too large in magnitude"
            )
        if g == 0:
            return beta, it, True, ""
        if g > 0:
            hi, known["hi"] = beta, True
        else:
            lo, known["lo"] = beta, True
        if h > 0:
            dn = -g / h  # Newton step
            den = 1.0 + dn * t / (2.0 * h)
            step = dn / den if 0.5 < den < 2.0 else dn  # Halley's correction while it is mild
        else:
            dn = step = math.inf if g < 0 else -math.inf
        side = "hi" if step > 0 else "lo"
        stalled = prev * step > 0 and abs(step) > 0.5 * abs(prev)
        new = beta + step
        if (not known[side]) and (stalled or not lo < new < hi):
            # check the bound towards which the iteration moves
            end = hi if side == "hi" else lo
            it += 1
            g_end = derivatives(end)[0]
            if (g_end <= 0) if side == "hi" else (g_end >= 0):
                return end, it, True, side
            known[side] = True
        prev = step
        if lo < new < hi:
            if abs(step) <= tol * beta or (
                abs(dn) <= 1e-3 * beta and abs(t) * dn * dn / (2.0 * h) <= tol * beta
            ):
                return new, it, True, ""
            beta = new
        else:  # the step leaves the bracket: bisect on the log scale
            beta = math.sqrt(lo * hi)
            prev = 0.0
            if hi - lo <= tol * lo:
                return beta, it, True, ""
    return beta, it, False, ""


@register
class TemperatureScaling(Recalibrator):
    """Temperature scaling, ``softmax(z / T)`` (Guo et al. 2017).

    Accuracy-preserving and injective (for T > 0, ``z -> z / T`` is a
    bijection of logits, and ``softmax`` is injective up to the per-row
    constant it ignores). Natural input: logits (probabilities are turned into
    ``log p``, which gives the same result).

    Parameters
    ----------
    loss : {"nll", "brier"}, default "nll"
        The objective minimised on the calibration split.
    t_min, t_max : float, default 0.01 and 100
        Bounds of the search for T.
    tol : float, default 1e-10
        Relative tolerance on ``1 / T``.
    max_iter : int, default 100

    Attributes
    ----------
    temperature_ : float
        The fitted T.
    n_iter_ : int
        NLL: passes over the full calibration set (Halley iterations and bound
        checks; the subsample warm start of large inputs is not counted).
        Brier: Brent's function evaluations.
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 3)) * 2
    >>> p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    >>> y = (rng.random(2000)[:, None] > p.cumsum(1)).sum(1)     # labels from softmax(z)
    >>> ts = cp.TemperatureScaling().fit(3 * z, y)                # overconfident logits 3 z
    >>> round(ts.temperature_, 2)
    2.98
    >>> ts.accuracy_preserving, ts.injective
    (True, True)
    """

    input = "logits"
    _accuracy_preserving = True
    _injective = True
    schema = Schema(
        params={
            "loss": OneOf(("nll", "brier")),
            "t_min": POSITIVE,
            "t_max": POSITIVE,
            "tol": POSITIVE,
            "max_iter": MAX_ITER,
        },
        state={"temperature_": POSITIVE, **ITERATIONS},
        param_checks=(temperature_bounds,),
        state_checks=(temperature_in_bounds,),
    )

    def __init__(
        self,
        loss: Literal["nll", "brier"] = "nll",
        t_min: float = 0.01,
        t_max: float = 100.0,
        tol: float = 1e-10,
        max_iter: int = 100,
    ) -> None:
        self.loss = loss
        self.t_min = t_min
        self.t_max = t_max
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if self.loss not in ("nll", "brier"):
            raise CalibrationInputError(f"loss must be 'nll' or 'brier'; got {self.loss!r}")
        if not (0 < self.t_min < self.t_max < math.inf):
            raise CalibrationInputError(
                f"need 0 < t_min < t_max < inf; got t_min={self.t_min!r}, t_max={self.t_max!r}"
            )
        Z = _as_multiclass(S)
        if self.loss == "brier":
            self._fit_brier(Z, y, w)
        else:
            self._fit_nll(Z, y, w)

    def _fit_nll(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        lo, hi = 1.0 / self.t_max, 1.0 / self.t_min  # bracket on beta = 1 / T
        obj = _Objective(Z, y, w)
        beta = min(max(1.0, lo), hi)
        if Z.size > _FULL:  # warm start: the optimum on a strided subsample of the rows
            sub = obj.subsample(-(-Z.size // _SUBSAMPLE))
            if sub.total > 0:
                beta = _halley(sub.derivatives, beta, lo, hi, 1e-4, self.max_iter)[0]
        beta, it, converged, bound = _halley(obj.derivatives, beta, lo, hi, self.tol, self.max_iter)
        reason = ""
        if bound == "lo":  # f increasing already at the smallest beta: optimum T >= t_max
            reason = f"at the upper bound T = t_max = {self.t_max:g}"
        elif bound == "hi":
            reason = (
                f"at the lower bound T = t_min = {self.t_min:g} (the calibration set is "
                "separable or nearly so: the NLL keeps falling as T -> 0)"
            )
        self.temperature_ = float(1.0 / beta)
        self.n_iter_ = int(it)
        self.converged_ = bool(converged)
        if reason:
            warnings.warn(
                f"TemperatureScaling: the fitted temperature is {reason}",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        elif not converged:
            warnings.warn(
                f"TemperatureScaling did not converge in {self.max_iter} iterations "
                f"(T = {self.temperature_:.6g}); increase max_iter",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _fit_brier(self, Z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        from scipy.optimize import minimize_scalar

        Z = np.asarray(Z, dtype=np.float64)
        onehot = np.zeros_like(Z)
        onehot[np.arange(len(y)), y] = 1.0

        def brier(log_t: float) -> float:
            p = _softmax(Z / math.exp(log_t))
            per = ((p - onehot) ** 2).sum(1)
            return float(np.average(per, weights=w))

        res = minimize_scalar(
            brier,
            bounds=(math.log(self.t_min), math.log(self.t_max)),
            method="bounded",
            options={"xatol": 1e-8, "maxiter": self.max_iter},
        )
        self.temperature_ = float(math.exp(res.x))
        self.n_iter_ = int(res.nfev)
        self.converged_ = bool(res.success)
        edge = min(abs(res.x - math.log(self.t_min)), abs(res.x - math.log(self.t_max)))
        if not res.success:
            warnings.warn(
                f"TemperatureScaling (Brier) did not converge: {res.message}",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        elif edge < 1e-6:
            warnings.warn(
                f"TemperatureScaling: the fitted temperature {self.temperature_:.6g} is at a bound "
                f"of [{self.t_min:g}, {self.t_max:g}]",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        S = np.asarray(S, dtype=np.float64)
        return _softmax(S / self.temperature_)
