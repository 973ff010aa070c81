"""Proper calibration errors CE_F with the Dirichlet kernel (Popordanoska et al. (2024)).

For a convex F (the negative generalized entropy of a proper score) the proper
calibration error, refinement and sharpness are (Popordanoska et al. (2024) eq. 3-6)

    CE_F    = E[ D_F(E[Y | g(X)], g(X)) ]
    REF_F   = E[ -F(E[Y | g(X)]) ]
    SHARP_F = E[ D_F(E[Y | g(X)], E[Y]) ] = -REF_F - F(E[Y])
    R(g)    = E[ D_F(Y, g(X)) - F(Y) ] = CE_F + REF_F     (the risk of the score)

With ``r_i`` the leave-one-out Dirichlet-kernel estimate of E[Y | g(x_i)]
(:class:`calipers.DirichletKernel`, eq. 11-12, 15) the estimators are

* direct (eq. 9):    CE = mean_i D_F(r_i, g_i);
* via risk (eq. 14): CE = mean_i [D_F(y_i, g_i) - F(y_i)] - REF,
  REF = -mean_i F(r_i) (eq. 15).

Both are consistent with bias O(1/n) (Prop. 5.1-5.2, App. B); at small n they
differ and the via-risk form can be negative (docs/how-calipers-computes.md §5.6). Means are
weighted by ``sample_weight``. ``F = <p, log p>`` gives CE_KL (eq. 10, the
log-loss calibration error) and ``F = ||p||^2`` gives CE_2^2 (eq. 7, Brier).

Lenses: ``"canonical"`` (the whole vector, Dirichlet kernel), ``"classwise"``
(each class one-vs-rest with the Beta kernel, App. D, averaged or summed over
classes), ``"top_label"`` (confidence vs correctness, Beta kernel). For 1-D
problems F acts on the probability q of the event; two conventions exist
(docs/how-calipers-computes.md §4.2, §5.4): ``binary_f="scalar"`` uses App. D's F(q) = q^2
(so the squared class-wise CE is the textbook mean_k E[(P(Y=k | g_k) - g_k)^2])
and ``binary_f="two_point"`` applies the vector F to ``[1 - q, q]`` as the
Popordanoska et al. (2024) code does (twice the textbook value for F = ||.||^2; identical for KL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import Array, is_torch
from .._docstrings import fill_doc
from ..estimators.dirichlet_kernel import DirichletKernel, _as_simplex, select_bandwidth
from ..estimators.quadratic_cost import check_quadratic_cost
from ..pipeline.divergences import Bregman
from ..pipeline.lenses import get_lens
from ..validation import CalibrationInputError, check_predictions

__all__ = ["ProperCalibrationError", "proper_calibration_error", "ce_kl", "ce_squared_l2"]


@dataclass(frozen=True)
class ProperCalibrationError:
    """Calibration error, refinement, sharpness and risk of one prediction set.

    Attributes
    ----------
    value : float or tensor
        The CE_F estimate chosen by ``method`` (``direct`` or ``via_risk``).
    direct : float or tensor
        Popordanoska et al. (2024) eq. 9 (>= 0).
    via_risk : float or tensor
        Popordanoska et al. (2024) eq. 14 (``risk - refinement``; may be negative at small n).
    refinement : float or tensor
        REF_F = -mean F(r_i), eq. 15.
    sharpness : float or tensor
        SHARP_F = -REF_F - F(y_bar), eq. 5 (y_bar: weighted class frequencies).
    risk : float or tensor
        mean_i [D_F(y_i, g_i) - F(y_i)]: the NLL for KL, the Brier score minus 1
        (canonical) for squared L2. ``risk == via_risk + refinement`` exactly.
    bandwidth : float or tuple of float
        The bandwidth used (one per class for the class-wise lens).
    divergence, lens : str
    """

    value: Any
    direct: Any
    via_risk: Any
    refinement: Any
    sharpness: Any
    risk: Any
    bandwidth: float | tuple[float, ...]
    divergence: str
    lens: str


# ----------------------------------------------------------------------------- F


def _xlogx(x: Array) -> Array:
    if is_torch(x):
        import torch

        # x log x with 0 log 0 = 0 and a zero (not NaN) gradient where x = 0:
        # r_ik is exactly 0 when no other sample has class k, and xlogy's
        # backward would give 0 / 0 there
        pos = x > 0
        safe = torch.where(pos, x, torch.ones_like(x))
        return torch.where(pos, safe * safe.log(), torch.zeros_like(x))
    from scipy.special import xlogy

    return xlogy(x, x)


def _log(x: Array) -> Array:
    return x.log() if is_torch(x) else np.log(x)


def _rowsum(x: Array) -> Array:
    return x.sum(-1) if x.ndim > 1 else x


def _generator(
    divergence: str | Bregman, vector: bool
) -> tuple[Callable[[Array], Array], Callable[[Array], Array], str]:
    """(F, grad F, name) acting on (n, k) rows (``vector``) or on 1-D q."""
    if isinstance(divergence, Bregman):
        return divergence.F, divergence.grad, "bregman"
    if divergence == "kl":
        if vector:
            return (lambda x: _xlogx(x).sum(-1)), (lambda x: _log(x) + 1), "kl"
        return (
            lambda q: _xlogx(q) + _xlogx(1 - q),
            lambda q: _log(q) - _log(1 - q),
            "kl",
        )
    if divergence == "squared_l2":
        if vector:
            return (lambda x: (x * x).sum(-1)), (lambda x: 2 * x), "squared_l2"
        return (lambda q: q * q), (lambda q: 2 * q), "squared_l2"
    raise CalibrationInputError(
        f"divergence must be 'kl', 'squared_l2' or a calipers.Bregman(F, grad); got {divergence!r}"
    )


def _bregman(
    F: Callable[[Array], Array], grad: Callable[[Array], Array], a: Array, b: Array
) -> Array:
    return F(a) - F(b) - _rowsum(grad(b) * (a - b))


# ----------------------------------------------------------------------------- estimator


def _to64(x: Array) -> Array:
    if is_torch(x):
        import torch

        return x.to(torch.float64)
    return np.asarray(x, dtype=np.float64)


def _slice_terms(
    scores: Array,
    targets: Array,
    weights: Array | None,
    divergence: str | Bregman,
    binary_f: str,
    bandwidth: float,
    clip: float,
    block_size: int | None,
    r: Array | None = None,
) -> dict[str, Any]:
    """All weighted means of one lens slice (same namespace as the scores).

    ``r``: the kernel estimate when the caller already has it (several
    divergences of the same slice share one O(n^2) regression).
    """
    T = _to64(targets)
    if r is None:
        kernel = DirichletKernel(bandwidth, clip=clip, block_size=block_size)
        r = kernel.regress(scores, T, weights)
    if scores.ndim == 1:
        g = _as_simplex(scores, clip)[:, 1]
        if binary_f == "two_point":
            g, r, T = (_pair(v) for v in (g, r, T))
    else:
        g = _as_simplex(scores, clip)
    F, grad, _ = _generator(divergence, vector=g.ndim > 1)
    n = g.shape[0]
    if weights is None:
        wsum = float(n)

        def mean(v: Array) -> Array:
            return v.sum() / wsum

    else:
        w = _to64(weights)
        wsum = w.sum()

        def mean(v: Array) -> Array:
            return (w * v).sum() / wsum

    # _bregman(F, grad, a, g) for a = r and a = T, with F(r), F(g), grad(g) and F(T)
    # evaluated once each (the same numbers, half the transcendental passes)
    Fr, Fg, Gg, FT = F(r), F(g), grad(g), F(T)
    direct = mean(Fr - Fg - _rowsum(Gg * (r - g)))
    risk = mean(FT - Fg - _rowsum(Gg * (T - g)) - FT)
    ref = -mean(Fr)
    ybar = (
        T.sum(0) / n if weights is None else (w[:, None] * T if T.ndim > 1 else w * T).sum(0) / wsum
    )
    sharp = -ref - F(ybar)
    return {
        "direct": direct,
        "via_risk": risk - ref,
        "refinement": ref,
        "sharpness": sharp,
        "risk": risk,
    }


def _pair(q: Array) -> Array:
    if is_torch(q):
        import torch

        return torch.stack([1 - q, q], dim=1)
    return np.stack([1 - q, q], axis=1)


@fill_doc
def proper_calibration_error(
    probs: Any,
    labels: Any,
    *,
    divergence: Literal["kl", "squared_l2"] | Bregman = "kl",
    lens: Literal["canonical", "classwise", "top_label", "binary"] = "canonical",
    bandwidth: float | Literal["mle"] = "mle",
    method: Literal["direct", "via_risk"] = "direct",
    class_aggregate: Literal["mean", "sum"] = "mean",
    binary_f: Literal["scalar", "two_point"] = "scalar",
    clip: float = 1e-7,
    block_size: int | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> ProperCalibrationError:
    """Proper calibration error CE_F, refinement and sharpness (Popordanoska et al. (2024) eq. 3-15).

    Dirichlet-kernel (canonical) or Beta-kernel (class-wise, top-label)
    leave-one-out estimates of E[Y | g(X)] (eq. 11-12, 15), computed in log
    space in blocks (App. E.1), plugged into the direct estimator (eq. 9) and
    the estimator via risk and refinement (eq. 14-15).

    Parameters
    ----------
    {probs}
        PyTorch tensors keep their device and the results are differentiable
        tensors.
    {labels}
    divergence : {"kl", "squared_l2"} or Bregman, default "kl"
        The Bregman generator F: ``"kl"`` is F = <p, log p> (CE_KL, eq. 10),
        ``"squared_l2"`` is F = ||p||^2 (CE_2^2, eq. 7). A
        :class:`calipers.Bregman` supplies F and its gradient (acting on rows of
        the input's namespace, or on 1-D q for 1-D lenses with ``binary_f="scalar"``).
    lens : {"canonical", "classwise", "top_label", "binary"}, default "canonical"
        ``"binary"``: P(y = 1) vs 1{y = 1} with the Beta kernel (binary problems).
    bandwidth : float or "mle", default "mle"
        Kernel bandwidth h (``alpha = g / h + 1``). ``"mle"`` maximises the
        leave-one-out likelihood with :func:`calipers.select_bandwidth` (for
        each class slice separately); Popordanoska et al. (2024) used fixed 0.02 for its CIFAR
        tables. The selected bandwidth is computed from the detached scores and
        held constant in the gradient (the likelihood maximiser moves with the
        scores; that dependence is not differentiated).
    method : {"direct", "via_risk"}, default "direct"
        Which estimator ``value`` holds (both are always returned). Popordanoska et al. (2024)
        found the direct one better at small n (Fig. 2b).
    class_aggregate : {"mean", "sum"}, default "mean"
        Class-wise lens: mean over classes (Popordanoska et al. (2024) App. D eq. 37) or sum
        (Gruber & Buettner (2022) Def. C.1).
    binary_f : {"scalar", "two_point"}, default "scalar"
        For 1-D lenses: F of the event probability q (App. D), or F of the
        2-vector ``[1 - q, q]`` (Popordanoska et al. (2024) code; doubles squared L2).
    clip : float, default 1e-7
        Scores are clamped to ``[clip, 1 - clip]`` for the kernel and the
        divergence, as in the Popordanoska et al. (2024) code (the Dirichlet kernel is undefined
        on the simplex boundary).
    block_size : int, optional
        Rows per block of the kernel matrix.
    sample_weight : array-like of shape (n,), optional
        Weighted kernel sums and weighted means.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    ProperCalibrationError
        For PyTorch input every estimate (``value``, ``direct``, ``via_risk``,
        ``refinement``, ``sharpness``, ``risk``) is a 0-d ``torch.float64``
        tensor on the input's device, computed with PyTorch operations and
        differentiable in ``probs`` (or the logits) almost everywhere (the
        clamp to ``[clip, 1 - clip]`` has kinks); ``bandwidth`` is a float.
        See docs/pytorch.md.

    Examples
    --------
    The K = 3, n = 5 example of docs/how-calipers-computes.md §5.6 (h = 0.5):

    >>> import numpy as np
    >>> import calipers as cp
    >>> g = np.array([[.7, .2, .1], [.6, .3, .1], [.2, .5, .3], [.1, .2, .7], [.3, .3, .4]])
    >>> y = np.array([0, 1, 1, 2, 0])
    >>> res = cp.proper_calibration_error(g, y, bandwidth=0.5)
    >>> round(res.value, 6), round(res.refinement, 6)
    (0.468403, 0.84103)
    >>> round(cp.proper_calibration_error(g, y, divergence="squared_l2", bandwidth=0.5).value, 6)
    0.307173
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    if method not in ("direct", "via_risk"):
        raise CalibrationInputError(f"method must be 'direct' or 'via_risk'; got {method!r}")
    if class_aggregate not in ("mean", "sum"):
        raise CalibrationInputError(
            f"class_aggregate must be 'mean' or 'sum'; got {class_aggregate!r}"
        )
    if binary_f not in ("scalar", "two_point"):
        raise CalibrationInputError(f"binary_f must be 'scalar' or 'two_point'; got {binary_f!r}")
    if lens not in ("canonical", "classwise", "top_label", "binary"):
        raise CalibrationInputError(
            f"lens must be 'canonical', 'classwise', 'top_label' or 'binary'; got {lens!r}"
        )
    if not (isinstance(bandwidth, str) and bandwidth == "mle"):
        DirichletKernel(bandwidth)  # validates the number
    mle = isinstance(bandwidth, str)
    check_quadratic_cost(
        P.n_samples,
        P.n_classes if lens in ("canonical", "classwise") else 1,
        # measured: 1.9 s at n = 10^4, k = 10 (benchmarks/bench_dirichlet.py); the
        # leave-one-out bandwidth search about 6 times that
        seconds_per_pair=(1.2e-8 if mle else 1.9e-9),
        what="the Dirichlet-kernel proper calibration error"
        + (" with the likelihood bandwidth search" if mle else ""),
        alternative="a seeded subsample of the rows (calipers.report uses 5000) or a binned "
        "estimate (cp.ece, cp.classwise_ece)",
        on_gpu=P.is_torch and P.probs.device.type != "cpu",
    )
    _, _, name = _generator(divergence, vector=True)
    terms: dict[str, list[Any]] = {}
    bws: list[float] = []
    for sl in get_lens(lens)(P):
        h = (
            select_bandwidth(sl.scores, weights=sl.weights, clip=clip)
            if isinstance(bandwidth, str)
            else float(bandwidth)
        )
        bws.append(h)
        t = _slice_terms(
            sl.scores, sl.targets, sl.weights, divergence, binary_f, h, clip, block_size
        )
        for key, v in t.items():
            terms.setdefault(key, []).append(v)
    out: dict[str, Any] = {}
    torch_in = P.is_torch
    for key, vals in terms.items():
        total = vals[0]
        for v in vals[1:]:
            total = total + v
        if class_aggregate == "mean":
            total = total / len(vals)
        out[key] = total if torch_in else float(total)
    return ProperCalibrationError(
        value=out[method],
        bandwidth=bws[0] if len(bws) == 1 else tuple(bws),
        divergence=name,
        lens=lens,
        **out,
    )


def ce_kl(probs: Any, labels: Any, **kwargs: Any) -> Any:
    """Kullback-Leibler calibration error CE_KL (Popordanoska et al. (2024) eq. 8, estimator eq. 10).

    ``proper_calibration_error(probs, labels, divergence="kl", **kwargs).value``:
    canonical lens, Dirichlet kernel, bandwidth by leave-one-out likelihood,
    direct estimator, unless ``kwargs`` say otherwise (they also take
    ``classes``, ``sample_weight`` and ``logits`` of that function).

    Examples
    --------
    >>> import calipers as cp
    >>> g = [[.8, .2], [.6, .4], [.3, .7]]
    >>> round(cp.ce_kl(g, [0, 0, 1], bandwidth=1.0), 6)    # docs/how-calipers-computes.md §5.6
    0.435817
    """
    return proper_calibration_error(probs, labels, divergence="kl", **kwargs).value


def ce_squared_l2(probs: Any, labels: Any, **kwargs: Any) -> Any:
    """Squared L2 calibration error CE_2^2 (Popordanoska et al. (2024) eq. 7, estimator eq. 46).

    ``proper_calibration_error(probs, labels, divergence="squared_l2", **kwargs).value``
    (``kwargs`` as in :func:`ce_kl`).

    Examples
    --------
    >>> import calipers as cp
    >>> g = [[.8, .2], [.6, .4], [.3, .7]]
    >>> round(cp.ce_squared_l2(g, [0, 0, 1], bandwidth=1.0), 6)    # docs/how-calipers-computes.md §5.6
    0.35343
    """
    return proper_calibration_error(probs, labels, divergence="squared_l2", **kwargs).value
