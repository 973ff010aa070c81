"""Gradients for the metrics whose value is computed outside PyTorch's autograd graph.

Several estimators (SmoothECE, the KDE calibration error, MMCE, SKCE) compute
their value with NumPy or with in-place PyTorch kernels, which give the
numbers the tests and the papers' code check but no gradient. For a PyTorch
input that requires a gradient, the value is kept exactly as computed and a
gradient is attached to it in one of two ways:

* :func:`straight_through`: the same quantity is computed a second time with
  differentiable PyTorch operations (``surrogate``) and the returned tensor is
  ``value + (surrogate - surrogate.detach())``. The forward value is ``value``
  bit for bit (``x - x`` is exactly 0 for finite ``x``); every derivative,
  of any order, is that of ``surrogate``.
* :func:`attach_gradient`: the gradient is computed analytically (O(n log n)
  for MMCE, O(tile) memory for SKCE) and handed to a one-step autograd
  function; differentiating that gradient again raises instead of being
  silently wrong.

Only the scores (probabilities, or the logits they come from) carry a
gradient; labels and sample weights are constants. The module imports
PyTorch only when one of its functions is called.
"""

from __future__ import annotations

import functools
from typing import Any

from .._backend import is_torch

__all__ = ["needs_grad", "straight_through", "attach_gradient", "lens_tensors"]


def needs_grad(x: Any) -> bool:
    """True when ``x`` is a tensor that requires a gradient and autograd is recording."""
    if not is_torch(x):
        return False
    import torch

    return bool(torch.is_grad_enabled() and x.requires_grad)


def straight_through(value: float, surrogate: Any) -> Any:
    """0-d float64 tensor equal to ``value`` whose gradient is that of ``surrogate``.

    ``surrogate`` is a 0-d tensor computing the same quantity differentiably
    (up to rounding); the result lives on its device.
    """
    import torch

    s = surrogate.to(torch.float64)
    base = torch.tensor(float(value), dtype=torch.float64, device=s.device)
    return base + (s - s.detach())


@functools.lru_cache(maxsize=1)
def _attach_function() -> Any:
    import torch

    class NoSecondDerivative(torch.autograd.Function):
        """Identity on ``g`` that joins ``x``'s graph and raises if differentiated."""

        @staticmethod
        def forward(ctx: Any, g: Any, x: Any) -> Any:  # noqa: ARG004
            return g.clone()

        @staticmethod
        def backward(ctx: Any, grad_output: Any) -> Any:  # noqa: ARG004
            raise RuntimeError(
                "calipers gives the first derivative of this metric only (an analytic "
                "gradient); a second derivative is not available"
            )

    class AttachGradient(torch.autograd.Function):
        """``value`` in the forward pass, ``grad_output * grad`` for ``x`` in the backward pass."""

        @staticmethod
        def forward(ctx: Any, x: Any, value: Any, grad: Any) -> Any:
            ctx.save_for_backward(x, grad)
            return value.clone()

        @staticmethod
        def backward(ctx: Any, grad_output: Any) -> Any:
            x, grad = ctx.saved_tensors
            out = grad_output * grad
            if torch.is_grad_enabled():
                # create_graph=True: the result must not look differentiable in x (it
                # would silently miss the derivative of ``grad``), so it raises instead
                out = NoSecondDerivative.apply(out, x)
            return out.to(grad.dtype), None, None

    return AttachGradient


def attach_gradient(value: float, x: Any, grad: Any) -> Any:
    """0-d float64 tensor equal to ``value`` with ``d value / d x = grad``.

    ``x`` is the (float64) tensor the gradient refers to, ``grad`` a detached
    tensor of ``x``'s shape. First derivatives only: differentiating the
    gradient again raises.
    """
    import torch

    v = torch.tensor(float(value), dtype=torch.float64, device=x.device)
    return _attach_function().apply(x, v, grad.detach().to(x.dtype))


def lens_tensors(P: Any, lens: str) -> tuple[Any, Any, Any]:
    """Float64 (scores, targets, weights) tensors of a one-slice Bernoulli lens.

    The tensor counterpart of :func:`calipers.pipeline.lenses.lens_arrays`: the scores
    stay connected to the autograd graph of ``P.probs`` (or of the logits);
    targets and weights (None for unit weights) are detached constants.
    """
    import torch

    from ..pipeline.lenses import get_lens, resolve_lens

    sl = next(get_lens(resolve_lens(lens, P))(P))
    s = sl.scores.reshape(-1).to(torch.float64)
    t = sl.targets.reshape(-1).detach().to(torch.float64)
    w = None if sl.weights is None else sl.weights.reshape(-1).detach().to(torch.float64)
    return s, t, w
