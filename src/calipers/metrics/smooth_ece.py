"""SmoothECE: kernel-smoothed calibration error (Błasiok & Nakkiran 2023).

"Smooth ECE: principled reliability diagrams via kernel smoothing" (used in
Chidambaram & Ge's (2024) tables and its App. G). The residual ``r_i = f_i - y_i`` of every
prediction is smoothed over the confidence axis with a Gaussian kernel
reflected at 0 and 1::

    r_hat(t) = sum_i w_i K_s(t, f_i) (f_i - y_i) / (delta(t) + 1e-4),
    delta(t) = sum_i w_i K_s(t, f_i),

and the calibration error at bandwidth ``s`` is the density-weighted mean of
``|r_hat|`` over a uniform mesh ``t_1..t_M`` of [0, 1]::

    smECE_s = sum_m |r_hat(t_m)| (delta(t_m) + 1e-4) / sum_m (delta(t_m) + 1e-4).

SmoothECE proper uses the bandwidth ``s*`` solving the fixed-point equation
``s* = smECE_{s*}`` (the bandwidth rule of Błasiok & Nakkiran 2023), found by
bisection. Chidambaram & Ge (2024) reports it (Table 1, App. F tables, App. G Fig. 8) through
``relplot.smECE`` on the top-label confidences.

The discretisation is the one of the authors' package ``relplot`` 1.0.3
(docs/how-calipers-computes.md §0 item 8 and §6), so the numbers agree with
``relplot.smECE`` / ``relplot.smECE_sigma`` to rounding:

* the kernel is evaluated on a grid of ``E = max(2000, round(20/s)) // 2 + 1``
  equally spaced nodes of [0, 1]; each point splits its mass linearly between
  the two nodes around it (nodes ``floor(f (E-1))`` and the next, the index
  capped at ``E - 2``);
* the grid masses are convolved with the Gaussian density ``N(0, s^2)``
  sampled at the node offsets ``linspace(0, 1, E) - 0.5`` (truncated at
  +-0.5, not renormalised), after mirroring the grid about 0 and 1 (the end
  nodes are not duplicated, so mass on an end node counts once where an
  interior node's mass is mirrored in full: a point at exactly 0 or 1 carries
  half the density mass); the smoothed grid values are linearly
  interpolated to the mesh. When ``E`` is even (some ``s < 0.01``, e.g.
  ``s = 0.003``, ``E = 3334``) relplot's kernel samples fall half a node
  off-centre (offsets ``(d - 1/2) / (E - 1)``); calipers reproduces that too;
* the mesh has ``M = max(200, round(10/s))`` points, ``linspace(0, 1, M)``;
* the density floor ``1e-4`` is absolute: masses are *counts* (unit weight per
  prediction, or the sample weight), not frequencies;
* the fixed point is searched by 10 bisection steps on [0, 1] with the
  predicate ``s < 1e-3 or s < smECE_s``; the returned bandwidth is the upper
  end of the final bracket (a multiple of 2**-10), and SmoothECE is
  ``smECE`` at that bandwidth.

Implementation: the grid masses depend on the bandwidth only through ``E``,
which is 1001 for every ``s >= 0.01``, so the binning (one pass over the data,
``np.bincount``) is done once per distinct ``E`` and reused by the bisection;
the reflected convolution is a circular convolution of period ``2(E - 1)``
(the even extension of the grid), computed with real FFTs. The search costs
O(n) plus O(E log E) per bisection step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import wrap_scalar
from .._docstrings import fill_doc
from ..pipeline.lenses import lens_arrays
from ..validation import (
    MAX_POINTS,
    CalibrationInputError,
    check_integer,
    check_positive,
    check_predictions,
)
from ._autograd import lens_tensors, needs_grad, straight_through

__all__ = ["smece", "smece_bandwidth", "smooth_reliability", "SmoothReliability"]

#: Absolute floor added to the smoothed density (relplot ``kernels.smooth`` eps).
DENSITY_FLOOR = 1e-4
#: Bandwidths below this are taken as "too small" by the fixed-point search (relplot's eps).
SEARCH_EPS = 1e-3
#: Number of bisection steps of the fixed-point search (resolution 2**-10).
SEARCH_STEPS = 10
#: Smallest accepted explicit bandwidth (the grid then has 10**6 + 1 nodes).
MIN_BANDWIDTH = 1e-5


def _grid_size(sigma: float) -> int:
    """Number of kernel-grid nodes: ``max(2000, round(20 / sigma)) // 2 + 1``."""
    return max(2000, round(20.0 / sigma)) // 2 + 1


def _mesh_size(sigma: float) -> int:
    """Number of mesh points: ``max(200, round(10 / sigma))``."""
    return max(200, round(10.0 / sigma))


def _bin_masses(f: np.ndarray, values: list[np.ndarray | None], n_nodes: int) -> np.ndarray:
    """Linear splitting of each row of ``values`` onto ``n_nodes`` grid nodes.

    Point ``f`` at ``s = f (E - 1)`` gives ``1 - (s - j)`` of its value to node
    ``j = min(floor(s), E - 2)`` (at least 0) and ``s - j`` to node ``j + 1``.
    A row given as None means unit values. Per cell ``j``: ``A_j = sum v`` and
    ``B_j = sum v (s - j)``; node ``j`` receives ``A_j - B_j`` and node
    ``j + 1`` receives ``B_j`` (two ``bincount`` passes per row; few
    temporaries, as the passes are memory-bound).
    """
    s = f * float(n_nodes - 1)
    idx = s.astype(np.intp)  # truncation == floor for s >= 0; both clip to 0 below
    np.clip(idx, 0, n_nodes - 2, out=idx)
    s -= idx  # the share of the upper node
    out = np.zeros((len(values), n_nodes))
    m = n_nodes - 1
    last = len(values) - 1
    for r, v in enumerate(values):
        a = np.bincount(idx, v, minlength=m)
        if v is None:
            vs = s
        elif r == last:  # the shares are not needed afterwards: reuse their buffer
            vs = np.multiply(s, v, out=s)
        else:
            vs = v * s
        bb = np.bincount(idx, vs, minlength=m)
        out[r, :-1] = a[:m] - bb[:m]
        out[r, 1:] += bb[:m]
    return out


class _Grid:
    """Grid masses of (weight, weight * residual) for one grid size, in FFT form.

    relplot smooths the reflected sequence ``[flip(v)[:-1], v, flip(v)[1:]]``
    (mirrors about the end nodes, which are not repeated) with a kernel of
    ``E`` taps and keeps the ``E`` central outputs. Output node ``i`` reads
    source offsets ``d`` in ``[E//2 - (E-1), E//2]`` with weight
    ``pdf((c - d) / (E-1))``, ``c = E//2 - (E-1)/2`` (0 for odd ``E``, 1/2
    for even ``E``), i.e. positions within ``E/2`` nodes of ``i``. On that
    range the reflected sequence coincides with the ``2(E-1)``-periodic
    even extension of ``v``, and the window is shorter than the period, so
    the result is a circular convolution of period ``2(E-1)``: one real FFT of
    the masses per grid size, and per bandwidth one kernel transform and one
    inverse transform.
    """

    def __init__(self, f: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_nodes: int) -> None:
        self.n_nodes = E = n_nodes
        resid = f - y
        masses = _bin_masses(f, [w, resid if w is None else w * resid], E)
        self.period = N = 2 * (E - 1)
        periodic = np.concatenate([masses, masses[:, E - 2 : 0 : -1]], axis=1)  # length N
        self.masses_hat = np.fft.rfft(periodic, axis=1)
        self.nodes = np.linspace(0.0, 1.0, E)
        # kernel taps e = -d (convolution form), stored at e mod N
        d = np.arange(E // 2 - (E - 1), E // 2 + 1)
        self.tap_index = (-d) % N
        self.tap_offset = ((E // 2 - (E - 1) / 2) - d) / (E - 1)

    def smooth(self, sigma: float) -> np.ndarray:
        """Smoothed (density, residual numerator) on the grid nodes, shape (2, E)."""
        ker = np.zeros(self.period)
        ker[self.tap_index] = np.exp(-0.5 * (self.tap_offset / sigma) ** 2) / (
            sigma * math.sqrt(2.0 * math.pi)
        )
        full = np.fft.irfft(self.masses_hat * np.fft.rfft(ker), n=self.period, axis=1)
        return full[:, : self.n_nodes]


def _direct_smooth(f: np.ndarray, values: list[np.ndarray | None], sigma: float) -> np.ndarray:
    """Reflected-kernel smoothing of the rows of ``values`` on the grid, by direct convolution.

    The same numbers as :meth:`_Grid.smooth` (which uses FFTs), but O(E^2) and
    every output of a non-negative row is a sum of non-negative terms, so it
    keeps its full relative accuracy far from the data; used for the curves.
    """
    E = _grid_size(sigma)
    masses = _bin_masses(f, values, E)
    x = np.linspace(0.0, 1.0, E) - 0.5
    ker = np.exp(-0.5 * (x / sigma) ** 2) / (sigma * math.sqrt(2.0 * math.pi))
    out = np.empty_like(masses)
    for r in range(masses.shape[0]):
        v = masses[r]
        ext = np.concatenate([v[::-1][:-1], v, v[::-1][1:]])
        out[r] = np.convolve(ext, ker, "valid")[E // 2 : E // 2 + E]
    return out


class _SmoothECE:
    """smECE_sigma of fixed 1-D float64 arrays, caching the grid per grid size."""

    def __init__(self, f: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        self.f, self.y, self.w = f, y, w  # w None: unit weights
        self._grids: dict[int, _Grid] = {}
        self._values: dict[float, float] = {}

    def grid(self, n_nodes: int) -> _Grid:
        g = self._grids.get(n_nodes)
        if g is None:
            g = self._grids[n_nodes] = _Grid(self.f, self.y, self.w, n_nodes)
        return g

    def __call__(self, sigma: float) -> float:
        v = self._values.get(sigma)
        if v is None:
            g = self.grid(_grid_size(sigma))
            dens_g, num_g = g.smooth(sigma)
            v = self._values[sigma] = _mesh_value(g.nodes, dens_g, num_g, _mesh_size(sigma))
        return v


def _mesh_value(nodes: np.ndarray, dens_g: np.ndarray, num_g: np.ndarray, m: int) -> float:
    """``sum |r_hat| (delta + 1e-4) / sum (delta + 1e-4)`` on ``linspace(0, 1, m)``."""
    t = np.linspace(0.0, 1.0, m)
    dens = np.interp(t, nodes, dens_g) + DENSITY_FLOOR
    num = np.interp(t, nodes, num_g)
    return float(np.sum(np.abs(num / dens) * dens) / np.sum(dens))


def _smece_torch(f: Any, y: Any, w: Any, sigma: float) -> Any:
    """smECE_sigma of 1-D float64 tensors, with differentiable PyTorch operations.

    The steps of :class:`_Grid` and :func:`_mesh_value` (linear splitting onto
    the grid, the reflected Gaussian convolution as a circular one by FFT,
    linear interpolation to the mesh) in PyTorch, on ``f``'s device, so that
    the value is differentiable in ``f``: the split is piecewise linear in
    ``f`` (kinks where a score crosses a grid node) and ``|r_hat|`` has a kink
    where ``r_hat = 0``; everything else is smooth. ``w`` None means unit
    masses. Equal to ``_SmoothECE(f, y, w)(sigma)`` up to rounding; used for
    the gradient only (:func:`smece` returns the NumPy value).
    """
    import torch

    E = _grid_size(sigma)
    N = 2 * (E - 1)
    dev, dt = f.device, torch.float64
    pos = f * float(E - 1)
    idx = pos.detach().to(torch.int64).clamp(0, E - 2)
    up = pos - idx.to(dt)  # the share of the upper node
    mass = torch.ones_like(f) if w is None else w

    def split(v: Any) -> Any:
        out = torch.zeros(E, dtype=dt, device=dev)
        return out.index_add(0, idx, v * (1 - up)).index_add(0, idx + 1, v * up)

    masses = torch.stack([split(mass), split(mass * (f - y))])  # (2, E)
    periodic = torch.cat([masses, masses.flip(1)[:, 1 : E - 1]], dim=1)  # even extension, N
    d = np.arange(E // 2 - (E - 1), E // 2 + 1)
    ker = np.zeros(N)
    ker[(-d) % N] = np.exp(-0.5 * ((((E // 2 - (E - 1) / 2) - d) / (E - 1)) / sigma) ** 2) / (
        sigma * math.sqrt(2.0 * math.pi)
    )
    ker_hat = torch.fft.rfft(torch.as_tensor(ker, device=dev))
    smooth = torch.fft.irfft(torch.fft.rfft(periodic, dim=1) * ker_hat, n=N, dim=1)[:, :E]
    u = np.linspace(0.0, 1.0, _mesh_size(sigma)) * (E - 1)
    j = np.minimum(np.floor(u).astype(np.int64), E - 2)
    jt = torch.as_tensor(j, device=dev)
    a = torch.as_tensor(u - j, device=dev)
    on_mesh = smooth[:, jt] * (1 - a) + smooth[:, jt + 1] * a
    dens = on_mesh[0] + DENSITY_FLOOR
    return (torch.abs(on_mesh[1] / dens) * dens).sum() / dens.sum()


def _check_bandwidth(bandwidth: Any) -> float:
    s = check_positive(bandwidth)
    if s < MIN_BANDWIDTH:
        raise CalibrationInputError(
            f"bandwidth must be at least {MIN_BANDWIDTH:g} (the kernel grid would have more "
            f"than 10**6 nodes); got {bandwidth!r}"
        )
    return s


def _smece_arrays(
    f: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None = None,
    *,
    bandwidth: float | None = None,
    eps: float = SEARCH_EPS,
) -> tuple[float, float]:
    """SmoothECE of 1-D float64 scores ``f`` in [0, 1] and targets ``y`` in {0, 1}.

    The lower-level entry point for other calipers modules: no input checks
    beyond shapes, no lens. ``w`` (default None: unit masses) are the point masses.
    ``bandwidth=None`` runs the fixed-point search (``eps`` is the search's
    "too small" threshold, relplot's default 1e-3); a float gives smECE at
    that bandwidth. Returns ``(value, bandwidth)``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics.smooth_ece import _smece_arrays
    >>> f = np.array([0.2, 0.6, 0.9]); y = np.array([0.0, 1.0, 1.0])
    >>> [round(v, 6) for v in _smece_arrays(f, y, bandwidth=0.1)]
    [0.224314, 0.1]
    """
    f = np.ascontiguousarray(f, dtype=np.float64).reshape(-1)
    y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
    if w is not None:
        w = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
    if not (f.shape == y.shape == (f.shape if w is None else w.shape)) or f.size == 0:
        raise CalibrationInputError(
            "f, y (and w) must be non-empty 1-D arrays of one length; got shapes "
            f"{f.shape}, {y.shape}, {None if w is None else w.shape}"
        )
    ev = _SmoothECE(f, y, w)
    if bandwidth is not None:
        s = _check_bandwidth(bandwidth)
        return ev(s), s
    s = _fixed_point(ev, eps)
    return ev(s), s


def _fixed_point(ev: _SmoothECE, eps: float) -> float:
    """Bisection for ``s = smECE_s`` on [0, 1]; returns the upper end of the bracket.

    The check "1 < smECE_1" that would return 1 is never true (smECE < 1:
    ``|numerator| <= delta < delta + 1e-4`` on every mesh point), so it is skipped.
    """
    hi, lo = 1.0, 0.0
    for _ in range(SEARCH_STEPS):
        mid = 0.5 * (hi + lo)
        if mid < eps or mid < ev(mid):
            lo = mid
        else:
            hi = mid
    return hi


@fill_doc
def smece(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    bandwidth: float | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """SmoothECE (Błasiok & Nakkiran 2023) of P(y = 1), or of the top-label confidence.

    The kernel-smoothed calibration error of the confidence ``max_k p_k``
    against the correctness ``1{argmax = y}`` (``(n, k)`` input), or of
    P(y = 1) against y (1-D input, see ``lens``), with a Gaussian kernel
    reflected at 0 and 1 and the fixed-point bandwidth (Błasiok & Nakkiran
    2023; Chidambaram & Ge (2024) Table 1 and App. G report it via ``relplot.smECE``; the
    formulas are in the module docstring). Discretised exactly as
    ``relplot`` 1.0.3 (see the module docstring and docs/how-calipers-computes.md §6), so
    ``smece(P, y)`` equals ``relplot.smECE(*relplot.multiclass_logits_to_confidences(
    P, y, probs=True))`` up to rounding.

    Parameters
    ----------
    {probs}
    {labels}
    bandwidth : float, optional
        Kernel bandwidth ``s`` in confidence units (``1e-5 <= s``). Default
        None: the fixed point ``s* = smECE_{s*}`` found by 10 bisection steps
        (``relplot.smECE``); a number gives ``smECE_s`` at that bandwidth
        (``relplot.smECE_sigma``).
    {lens}
    {sample_weight}
        They are each prediction's mass in the kernel grid. Weights are counts,
        not frequencies: the absolute density floor 1e-4 makes the result
        depend (slightly, for tiny total weight) on their overall scale.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float in [0, 1)
        For PyTorch input a 0-d ``torch.float64`` tensor on the input's device,
        differentiable in ``probs`` (or the logits): its gradient is that of
        ``smECE_s`` at the bandwidth ``s`` used, computed with PyTorch
        operations (differentiable almost everywhere: the linear split onto the
        kernel grid has kinks where a score crosses a grid node, and ``|r_hat|``
        where ``r_hat = 0``). The default fixed point ``s*`` is held constant;
        it is a piecewise-constant function of the scores (a multiple of
        2**-10), so this is the exact derivative wherever ``s*`` does not jump.
        The value itself is the NumPy one, bit for bit. See docs/pytorch.md.

    Notes
    -----
    For 1-D binary input ``smece(p, y)`` measures the positive class,
    ``p`` against ``y``, and equals ``relplot.smECE(p, y)`` up to rounding.
    ``lens="top_label"`` measures the confidence ``max(p, 1 - p)`` against
    correctness ``(p > 0.5) == y`` instead; the two differ in general
    (over-confidence on one side of 0.5 and under-confidence on the other
    cancel in the top-label form) and agree when every ``p > 0.5``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics.smooth_ece import smece
    >>> P = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    >>> y = np.array([0, 1, 1, 0])
    >>> round(smece(P, y), 6)
    0.131577
    >>> round(smece(P, y, bandwidth=0.05), 6)
    0.234216
    """
    s = None if bandwidth is None else _check_bandwidth(bandwidth)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    c, r, w = lens_arrays(P, lens)
    value, s_used = _smece_arrays(c, r, None if P.sample_weight is None else w, bandwidth=s)
    if needs_grad(P.probs):
        # the value stays the NumPy one; the gradient is that of the same smECE_s in
        # PyTorch at the bandwidth used (the fixed point s* is piecewise constant in
        # the scores, so holding it constant is the derivative almost everywhere)
        return straight_through(value, _smece_torch(*lens_tensors(P, lens), s_used))
    return wrap_scalar(value, P.probs)


@fill_doc
def smece_bandwidth(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> float:
    """The SmoothECE bandwidth ``s*`` (Błasiok & Nakkiran 2023) of the lens's problem.

    The fixed point ``s* = smECE_{s*}`` as located by ``relplot.smECE``:
    10 bisection steps on [0, 1] with the predicate ``s < 1e-3 or
    s < smECE_s``, returning the upper end of the final bracket (a multiple
    of 2**-10, at least 2**-9 since 2**-10 < 1e-3). ``smece(probs, labels)`` is
    ``smece(probs, labels, bandwidth=smece_bandwidth(probs, labels))``.

    Parameters
    ----------
    {probs}
    {labels}
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float in (0, 1] (always a Python float)

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics.smooth_ece import smece_bandwidth
    >>> P = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    >>> smece_bandwidth(P, np.array([0, 1, 1, 0])) * 1024
    136.0
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    c, r, w = lens_arrays(P, lens)
    return float(_smece_arrays(c, r, None if P.sample_weight is None else w)[1])


@dataclass(frozen=True)
class SmoothReliability:
    """Smoothed reliability curve of the top-label problem (Błasiok & Nakkiran 2023).

    All curves are evaluated at the points ``t`` and use the reflected
    Gaussian kernel ``K`` of bandwidth ``bandwidth`` on the relplot grid;
    ``delta(t) = sum_i w_i K(t, f_i)`` (count scale) and ``1e-4`` is the
    density floor.

    Attributes
    ----------
    bandwidth : float
        Kernel bandwidth ``s`` (``s*`` when chosen by the fixed-point search).
    value : float
        SmoothECE at ``bandwidth`` (on relplot's mesh, whatever ``t`` is).
    t : ndarray of shape (m,)
        Evaluation points ``linspace(0, 1, m)``.
    mean_target : ndarray of shape (m,)
        Smoothed accuracy ``sum_i w_i K(t, f_i) y_i / (delta(t) + 1e-4)``
        (Nadaraya-Watson estimate of E[correct | confidence = t]; relplot's
        diagram curve ``mu``).
    mean_confidence : ndarray of shape (m,)
        Smoothed confidence ``sum_i w_i K(t, f_i) f_i / (delta(t) + 1e-4)``
        (close to ``t`` where there is data).
    residual : ndarray of shape (m,)
        ``r_hat(t) = mean_confidence - mean_target``, the smoothed
        ``f - y`` whose density-weighted mean ``|.|`` is SmoothECE.
    density : ndarray of shape (m,)
        ``delta(t)`` (no floor) divided by its trapezoid integral over ``t``,
        so it integrates to 1 over [0, 1] on that mesh. relplot's diagram
        divides by ``n`` instead, which integrates to slightly less than 1:
        the reflection does not duplicate the end nodes, so mass on the
        nodes 0 and 1 counts half (a point at exactly 0 or 1 has half the
        density mass of an interior point), and the kernel is truncated at
        +-0.5 (visible for ``s`` above about 0.15).
    total_weight : float
        ``sum_i w_i`` (``n`` without sample weights).
    """

    bandwidth: float
    value: float
    t: np.ndarray
    mean_target: np.ndarray
    mean_confidence: np.ndarray
    residual: np.ndarray
    density: np.ndarray
    total_weight: float


@fill_doc
def smooth_reliability(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    bandwidth: float | None = None,
    n_points: int | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> SmoothReliability:
    """Smooth reliability diagram data (Błasiok & Nakkiran 2023); top-label or P(y = 1).

    The curves behind a SmoothECE reliability diagram: the kernel-smoothed
    accuracy, confidence, residual and density of the confidences, on the
    kernel grid of relplot 1.0.3 (module docstring; docs/how-calipers-computes.md §6). The
    smoothed grid values are computed by direct convolution here (every
    density value keeps full relative accuracy far from the data) and
    interpolated linearly to ``t``.

    Parameters
    ----------
    {probs}
    {labels}
    bandwidth : float, optional
        Default None: the SmoothECE fixed point ``s*`` (:func:`smece_bandwidth`).
    n_points : int, optional
        Number of evaluation points ``t = linspace(0, 1, n_points)`` (at
        least 2). Default: relplot's mesh size ``max(200, round(10 / s))``.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    SmoothReliability
        NumPy arrays and Python floats (also for PyTorch input).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics.smooth_ece import smooth_reliability
    >>> P = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    >>> d = smooth_reliability(P, np.array([0, 1, 1, 0]), bandwidth=0.05, n_points=5)
    >>> d.t.tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> round(d.value, 6), d.mean_target.round(3).tolist()
    (0.234216, [0.0, 0.0, 0.002, 0.991, 1.0])
    >>> bool(np.allclose(d.residual, d.mean_confidence - d.mean_target))
    True
    """
    s = None if bandwidth is None else _check_bandwidth(bandwidth)
    if n_points is not None:
        n_points = check_integer(n_points, "n_points", minimum=2, maximum=MAX_POINTS)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    c, r, w = lens_arrays(P, lens)
    if s is None:
        s = _smece_arrays(c, r, w)[1]
    nodes = np.linspace(0.0, 1.0, _grid_size(s))
    dens_g, num_g, conf_g, acc_g = _direct_smooth(c, [w, w * (c - r), w * c, w * r], s)
    value = _mesh_value(nodes, dens_g, num_g, _mesh_size(s))
    m = _mesh_size(s) if n_points is None else int(n_points)
    t = np.linspace(0.0, 1.0, m)
    dens = np.interp(t, nodes, dens_g)
    denom = dens + DENSITY_FLOOR
    area = (t[1] - t[0]) * (float(dens.sum()) - 0.5 * float(dens[0] + dens[-1]))  # trapezoid
    return SmoothReliability(
        bandwidth=float(s),
        value=value,
        t=t,
        mean_target=np.interp(t, nodes, acc_g) / denom,
        mean_confidence=np.interp(t, nodes, conf_g) / denom,
        residual=np.interp(t, nodes, num_g) / denom,
        density=dens / area,
        total_weight=float(w.sum()),
    )
