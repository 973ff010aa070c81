"""Maximum mean calibration error (Kumar, Sarawagi & Jain 2018; Gruber & Buettner (2022) Def. C.3).

::

    MMCE^2 = 1/n^2 sum_{i,j} (c_i - r_i)(c_j - r_j) k(r_i, r_j),
    k(r, r') = exp(-|r - r'| / bandwidth)

with ``r`` the top-label confidence and ``c`` the correctness (the biased
V-statistic, i = j included, as in the original TF loss and in netcal;
docs/how-calipers-computes.md §4.5; bandwidth 0.4, netcal's ``exp(-2.5 |.|)``). With sample
weights the 1/n^2 becomes 1/W^2 and each term carries w_i w_j.

The Laplacian kernel on the line makes the double sum O(n log n) without any
n x n matrix: with the confidences sorted, ``sum_j d_j exp(-|r_i - r_j|/h)`` splits
into a left and a right exponentially-weighted cumulative sum.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import wrap_scalar
from .._docstrings import fill_doc
from ..pipeline.lenses import lens_arrays
from ..validation import check_positive, check_predictions
from ._autograd import attach_gradient, lens_tensors, needs_grad

__all__ = ["mmce"]


def _laplace_quadratic_form(x: np.ndarray, d: np.ndarray, h: float) -> float:
    """``sum_{i,j} d_i d_j exp(-|x_i - x_j| / h)`` in O(n log n) time, O(n) memory.

    The form is ``sum_i d_i (L_i + R_i - d_i)`` with the one-sided sums of
    :func:`_laplace_sums`.
    """
    _, ds, L, R = _laplace_sums(x, d, h)
    return float(np.dot(ds, L + R - ds))


def _laplace_sums(
    x: np.ndarray, d: np.ndarray, h: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort order, sorted ``d`` and the one-sided kernel sums ``L``, ``R`` (sorted order).

    After sorting, ``L_i = sum_{j<=i} d_j e^{-(x_i - x_j)/h}`` obeys
    ``L_i = e^{-(x_i - x_{i-1})/h} L_{i-1} + d_i`` (and ``R`` likewise from the
    right); the form is ``sum_i d_i (L_i + R_i - d_i)``. The recursion is a
    first-order linear filter, evaluated in chunks with cumulative products of
    the decay factors (all <= 1, so nothing overflows).
    """
    order = np.argsort(x, kind="stable")
    xs, ds = x[order], d[order]

    def sweep(xv: np.ndarray, dv: np.ndarray) -> np.ndarray:
        decay = np.exp(-np.abs(np.diff(xv)) / h)  # factor between neighbours, in (0, 1]
        out = np.empty_like(dv)
        carry = 0.0  # L at the element before the chunk, times the decay into the chunk
        # chunked scan: within a chunk, L = cumdecay * (carry + cumsum(d / cumdecay)) is
        # unstable when cumdecay underflows, so restart whenever it gets small. The
        # cumulative decay starts at 1 on the chunk's first element (the decay into the
        # chunk is folded into the carry), so it is never 0 where it divides, even
        # when a decay underflows to 0 (bandwidths far below the gaps, e.g. 1e-12)
        i = 0
        n = len(dv)
        while i < n:
            f = np.concatenate([[1.0], decay[i : min(n - 1, i + 4095)]])
            cum = np.cumprod(f)
            m = int(np.searchsorted(-cum, -1e-150, side="right"))  # cum >= 1e-150
            m = max(1, min(m, n - i))
            cum = cum[:m]
            part = cum * (carry + np.cumsum(dv[i : i + m] / cum))
            out[i : i + m] = part
            i += m
            carry = float(part[-1]) * (float(decay[i - 1]) if i < n else 0.0)
        return out

    L = sweep(xs, ds)
    R = sweep(xs[::-1], ds[::-1])[::-1]
    return order, ds, L, R


def _mmce_squared_gradient(r: np.ndarray, c: np.ndarray, w: np.ndarray, h: float) -> np.ndarray:
    """Gradient of ``MMCE^2 = sum_ij d_i d_j k_ij / W^2`` in the scores ``r``, O(n log n).

    With ``d_i = w_i (c_i - r_i)`` and ``k_ij = exp(-|r_i - r_j| / h)``,
    ``d Q / d r_m = -2 w_m sum_j d_j k_mj - (2 / h) d_m sum_j d_j sign(r_m - r_j) k_mj``;
    in sorted order the first sum is ``L + R - d`` and the second ``L - R``
    (a tie between two scores, where ``|r_i - r_j|`` has a kink, gets the one-sided
    derivative of the sort order).
    """
    order, ds, L, R = _laplace_sums(r, w * (c - r), h)
    g = np.empty_like(r)
    g[order] = -2.0 * w[order] * (L + R - ds) - (2.0 / h) * ds * (L - R)
    return np.asarray(g / w.sum() ** 2)


@fill_doc
def mmce(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    bandwidth: float = 0.4,
    squared: bool = False,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Maximum mean calibration error with a Laplacian kernel (Kumar et al. 2018).

    Gruber & Buettner (2022) Def. C.3; the estimator of docs/how-calipers-computes.md §4.5 (biased V-statistic
    over all pairs, top-label confidence vs correctness). Exact, in O(n log n)
    time and O(n) memory.

    Parameters
    ----------
    {probs}
    {labels}
    bandwidth : float, default 0.4
        Width of the kernel ``exp(-|r - r'| / bandwidth)`` (Kumar et al.; netcal).
    squared : bool, default False
        Return MMCE^2 (the training loss of Kumar et al.) instead of MMCE.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        For PyTorch input a 0-d ``torch.float64`` tensor on the input's device,
        differentiable in ``probs`` (or the logits): the gradient of MMCE^2 is
        computed analytically in O(n log n) (first derivatives only; the
        kernel has a kink where two scores are equal, and MMCE itself, the
        square root, where MMCE^2 = 0). The correctness targets are constants.
        The value itself is the NumPy one, bit for bit. See docs/pytorch.md.

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> conf = np.array([.55, .6, .65, .7, .8, .9, .9, .95])
    >>> correct = np.array([1, 0, 1, 0, 1, 1, 0, 1])
    >>> P = np.stack([conf, 1 - conf], axis=1)
    >>> round(cp.mmce(P, np.where(correct == 1, 0, 1)), 6)     # docs/how-calipers-computes.md §4.5
    0.129348
    """
    check_positive(bandwidth)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    r, c, w = lens_arrays(P, lens)
    q = _laplace_quadratic_form(r, w * (c - r), float(bandwidth)) / w.sum() ** 2
    q = max(q, 0.0)  # a positive-definite kernel: negative only by rounding
    if needs_grad(P.probs):
        import torch

        x = lens_tensors(P, lens)[0]
        g = _mmce_squared_gradient(r, c, w, float(bandwidth))
        q_t = attach_gradient(q, x, torch.as_tensor(g, device=x.device))
        return q_t if squared else torch.sqrt(q_t)
    return wrap_scalar(q if squared else float(np.sqrt(q)), P.probs)
