"""KDE calibration error of Zhang, Kailkhura & Han (2020, "Mix-n-Match"), Gruber & Buettner's (2022) "KDE TCE".

The calibration function ``acc(c) = P(correct | confidence = c)`` is estimated by
Bayes' rule from two kernel density estimates on [0, 1]::

    acc(c) = min(a * f_1(c) / f(c), 1),

with ``f`` the density of the confidences, ``f_1`` that of the confidences of the
correct predictions and ``a`` the accuracy, and the error is::

    KDE-CE_p^p = int_0^1 |c - acc(c)|^p f(c) dc / int_0^1 f(c) dc.

Discretisation as in the authors' ``ece_kde_binary`` (docs/how-calipers-computes.md §4.3; copied
into Gruber & Buettner's (2022) code as ``sKDECE``, which uses ``p = 2`` and reports the root):

* triweight kernel ``35/32 (1 - u^2)^3`` scaled so that its standard deviation is
  the bandwidth (support ``+-3 h``); default bandwidth
  ``h = std(confidences of the correct predictions) * (2 n)^(-1/5)``;
* every point is mirrored once about the nearer end of [0, 1] (below 0.5 about 0,
  otherwise about 1), the densities are estimated on the grid
  ``linspace(-0.6, 1.6, 2**14)`` by linear binning and a convolution with the
  kernel sampled on the grid (KDEpy's ``FFTKDE``), set to 0 at grid points
  ``<= 0`` and ``>= 1`` and doubled;
* where ``max(f_1, f) <= 1e-6`` the integrand repeats its value at the previous
  grid point; both integrals are trapezoidal over the grid points in [0, 1].

The two-class case of the authors' code measures P(y = 1) against 1{y = 1}; here
that is ``lens="binary"``, the default for 1-D input P(y = 1) (``lens="auto"``).
Two-column input stays top-label by default, as every ``(n, k)`` input, so no
two-column file changes meaning silently; pass ``lens="binary"`` for the
authors' two-column reading.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import to_numpy, wrap_scalar
from .._docstrings import fill_doc
from ..pipeline.lenses import get_lens, resolve_lens
from ..validation import CalibrationInputError, check_positive, check_predictions
from ._autograd import lens_tensors, needs_grad, straight_through

__all__ = ["kde_calibration_error", "kde_bandwidth"]

GRID = np.linspace(-0.6, 1.6, 2**14)
_FLOOR = 1e-6  # below this in both densities the integrand is carried forward


def _slice_arrays(
    probs: Any,
    labels: Any,
    lens: str,
    sample_weight: Any,
    logits: bool,
    validate: bool,
    classes: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    if lens not in ("auto", "top_label", "binary"):
        raise CalibrationInputError(f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}")
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    sl = next(get_lens(resolve_lens(lens, P))(P))
    c = np.asarray(to_numpy(sl.scores), dtype=np.float64).reshape(-1)
    t = np.asarray(to_numpy(sl.targets), dtype=np.float64).reshape(-1)
    w = (
        np.ones_like(c)
        if sl.weights is None
        else np.asarray(to_numpy(sl.weights), dtype=np.float64).reshape(-1)
    )
    return c, t, w, P


def _rule_of_thumb(c: np.ndarray, t: np.ndarray, w: np.ndarray) -> float:
    """``std(confidences of correct rows) * (2 n)^(-1/5)`` (weights as repetitions)."""
    pos = t == 1
    w1 = w[pos]
    if w1.sum() <= 0:
        raise CalibrationInputError(
            "the KDE bandwidth rule needs correct predictions (its spread sets the "
            "bandwidth); there are none with positive weight: pass bandwidth="
        )
    c1 = c[pos]
    mean = float(w1 @ c1 / w1.sum())
    std = float(np.sqrt(w1 @ (c1 - mean) ** 2 / w1.sum()))
    if not std > 0:
        raise CalibrationInputError(
            "the confidences of the correct predictions are all equal, so the "
            "bandwidth rule gives 0: pass bandwidth="
        )
    return std * (2.0 * float(w.sum())) ** -0.2


def _convolve_same(a: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The centred ``a.size`` entries of the full convolution (``np.convolve(mode="same")``).

    Direct for short kernels, by a real FFT otherwise (NumPy's; scipy.signal alone
    would add 1.5 s to ``import calipers``).
    """
    if k.size <= 129:
        return np.convolve(a, k, mode="same")
    m = a.size + k.size - 1
    size = 1 << (m - 1).bit_length()
    full = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(k, size), size)[:m]
    start = (k.size - 1) // 2
    return np.asarray(full[start : start + a.size])


def _mirrored_density(c: np.ndarray, w: np.ndarray, h: float) -> np.ndarray:
    """Reflected triweight KDE of points ``c`` (masses ``w``) on ``GRID``, 0 outside (0, 1)."""
    x = np.concatenate([c, np.where(c < 0.5, -c, 2.0 - c)])
    m = np.concatenate([w, w])
    lo, dx = GRID[0], (GRID[-1] - GRID[0]) / (GRID.size - 1)
    s = (x - lo) / dx
    j = np.minimum(np.floor(s).astype(np.intp), GRID.size - 2)
    frac = s - j
    mass = np.bincount(j, m * (1.0 - frac), minlength=GRID.size).astype(np.float64)
    mass += np.bincount(j + 1, m * frac, minlength=GRID.size)
    mass /= m.sum()
    scale = 3.0 * h  # the triweight's support when its standard deviation is h
    L = int(min(np.floor(scale / dx), GRID.size))
    u = np.arange(-L, L + 1) * dx / scale
    kern = 35.0 / 32.0 * np.maximum(1.0 - u * u, 0.0) ** 3 / scale
    dens = _convolve_same(mass, kern)
    dens[(GRID <= 0.0) | (GRID >= 1.0)] = 0.0
    return np.asarray(2.0 * dens)


def _trapezoid(f: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((f[1:] + f[:-1]) * np.diff(x)) / 2.0)


@fill_doc
def kde_bandwidth(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> float:
    """Default bandwidth of :func:`kde_calibration_error` (Zhang et al. 2020).

    ``std(c_i : prediction i correct) * (2 n)^(-1/5)`` — the authors' rule (their
    code computes the spread of all confidences first and then overwrites it with
    that of the correct ones; docs/how-calipers-computes.md §4.3). ``std`` has ``ddof=0``;
    weights count as repetitions (``n`` is the total weight).

    Parameters
    ----------
    {probs}
    {labels}
    lens : {"auto", "top_label", "binary"}, default "auto"
        As in :func:`kde_calibration_error`.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        In confidence units.

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> P = np.array([[0.9, 0.1], [0.7, 0.3], [0.6, 0.4], [0.2, 0.8]])
    >>> round(cp.kde_bandwidth(P, [0, 0, 1, 1]), 6)  # std(.9, .7, .8) * 8**-0.2
    0.053869
    """
    c, t, w, _ = _slice_arrays(probs, labels, lens, sample_weight, logits, validate, classes)
    return _rule_of_thumb(c, t, w)


@fill_doc
def kde_calibration_error(
    probs: Any,
    labels: Any,
    *,
    p: float = 1.0,
    root: bool = True,
    bandwidth: float | None = None,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """KDE calibration error of Zhang, Kailkhura & Han (ICML 2020), Gruber & Buettner's (2022) "KDE TCE_2".

    ``(int_0^1 |c - acc(c)|^p f(c) dc / int_0^1 f(c) dc)^(1/p)`` with the
    densities and ``acc`` estimated by reflected triweight kernel density estimates,
    discretised as the authors' code does (module docstring; docs/how-calipers-computes.md §4.3).
    Gruber & Buettner (2022) (Gruber & Buettner 2022, §5 "Experiments", Fig. 3) reports it as
    "KDE TCE_2" (``p=2``, square root at plot time; docs/how-calipers-computes.md §4.7).

    Parameters
    ----------
    {probs}
    {labels}
    p : float, default 1
        Order of the error, ``p >= 1``.
    root : bool, default True
        Return the ``1/p``-th power of the integral (probability units); False
        returns the integral itself, as the authors' ``ece_kde_binary(order=p)`` does.
    bandwidth : float, optional
        Kernel standard deviation in confidence units. Default
        :func:`kde_bandwidth` (``std`` of the correct rows' confidences times
        ``(2 n)^(-1/5)``).
    {lens}
        ``"binary"`` is what the authors' code measures for two columns.
    {sample_weight}
        They are the masses of the points in both densities and in the
        accuracy.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        For PyTorch input a 0-d ``torch.float64`` tensor on the input's device,
        differentiable in ``probs`` (or the logits) almost everywhere (the
        linear binning has kinks where a point crosses a grid point, and
        ``min(acc, 1)`` and ``|c - acc|`` have kinks too). The bandwidth is held
        constant: the default :func:`kde_bandwidth` is computed from the
        detached scores, so its dependence on them is not differentiated
        (pass ``bandwidth=`` to make that explicit). The value itself is the
        NumPy one, bit for bit. See docs/pytorch.md.

    Notes
    -----
    The densities are evaluated on a grid of 2**14 points after linear binning
    (O(n) plus one convolution), so a million rows take well under a second.

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 20000)
    >>> correct = rng.random(20000) < conf ** 2  # acc(c) = c^2: true CE_1 = 1/6
    >>> P = np.stack([conf, 1 - conf], axis=1)
    >>> y = np.where(correct, 0, 1)
    >>> round(float(cp.kde_calibration_error(P, y)), 3)
    0.167
    """
    if check_positive(p, "p") < 1:
        raise CalibrationInputError(f"p must be a finite number >= 1; got {p!r}")
    c, t, w, P = _slice_arrays(probs, labels, lens, sample_weight, logits, validate, classes)
    c = np.clip(c, 1e-256, 1.0 - 1e-256)
    if bandwidth is None:
        h = _rule_of_thumb(c, t, w)
    else:
        h = check_positive(bandwidth)
    pos = t == 1
    f1 = _mirrored_density(c[pos], w[pos], h) if w[pos].sum() > 0 else np.zeros(GRID.size)
    f = _mirrored_density(c, w, h)
    acc_rate = float(w @ t / w.sum())
    good = np.maximum(f1, f) > _FLOOR
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.minimum(acc_rate * f1 / f, 1.0)  # f = 0 < f1 gives inf -> 1
        integrand = np.where(good, np.abs(GRID - acc) ** float(p) * f, 0.0)
    # carried forward: a point below the floor repeats the previous point's value
    # (GRID[0] = -0.6 is never above it, so rows with no earlier one get 0)
    idx = np.where(good, np.arange(GRID.size), 0)
    np.maximum.accumulate(idx, out=idx)
    integrand = integrand[idx]
    inside = (GRID >= 0.0) & (GRID <= 1.0)
    value = _trapezoid(integrand[inside], GRID[inside]) / _trapezoid(f[inside], GRID[inside])
    if root:
        value = value ** (1.0 / float(p))
    if needs_grad(P.probs):
        # the value stays the NumPy one; the gradient is that of the same estimate in
        # PyTorch with h held constant (also when h came from the bandwidth rule)
        f_t, t_t, w_t = lens_tensors(P, lens)
        return straight_through(value, _kde_ce_torch(f_t, t_t, w_t, h, float(p), root))
    return wrap_scalar(value, P.probs)


def _mirrored_density_torch(c: Any, w: Any, h: float) -> Any:
    """:func:`_mirrored_density` with differentiable PyTorch operations (float64, ``c``'s device).

    The linear binning is piecewise linear in ``c`` (kinks where a point or its
    mirror image crosses a grid point); the convolution is done by FFT.
    """
    import torch

    dev = c.device
    x = torch.cat([c, torch.where(c < 0.5, -c, 2.0 - c)])
    m = torch.cat([w, w])
    lo, dx = GRID[0], (GRID[-1] - GRID[0]) / (GRID.size - 1)
    s = (x - lo) / dx
    j = torch.floor(s.detach()).to(torch.int64).clamp(max=GRID.size - 2)
    frac = s - j.to(s.dtype)
    mass = torch.zeros(GRID.size, dtype=torch.float64, device=dev)
    mass = mass.index_add(0, j, m * (1.0 - frac)).index_add(0, j + 1, m * frac) / m.sum()
    scale = 3.0 * h
    L = int(min(np.floor(scale / dx), GRID.size))
    u = np.arange(-L, L + 1) * dx / scale
    kern = torch.as_tensor(35.0 / 32.0 * np.maximum(1.0 - u * u, 0.0) ** 3 / scale, device=dev)
    size = 1 << (GRID.size + kern.numel() - 2).bit_length()  # a power of 2 >= the full length
    full = torch.fft.irfft(torch.fft.rfft(mass, size) * torch.fft.rfft(kern, size), size)
    dens = full[L : L + GRID.size]  # the centred part, as np.convolve(mode="same")
    outside = torch.as_tensor((GRID <= 0.0) | (GRID >= 1.0), device=dev)
    return 2.0 * torch.where(outside, torch.zeros_like(dens), dens)


def _kde_ce_torch(c: Any, t: Any, w: Any, h: float, p: float, root: bool) -> Any:
    """The KDE calibration error of :func:`kde_calibration_error` with differentiable PyTorch ops.

    ``c``, ``t``, ``w`` (None: unit weights) are 1-D float64 tensors, ``h`` the
    bandwidth, held constant. Equal to the NumPy value up to rounding; used for
    the gradient only.
    """
    import torch

    dev = c.device
    w = torch.ones_like(t) if w is None else w
    grid = torch.as_tensor(GRID, device=dev)
    c = c.clamp(1e-256, 1.0 - 1e-256)
    pos = t == 1
    f = _mirrored_density_torch(c, w, h)
    f1 = _mirrored_density_torch(c[pos], w[pos], h) if w[pos].sum() > 0 else torch.zeros_like(f)
    acc_rate = (w @ t / w.sum()).detach()
    good = torch.maximum(f1, f).detach() > _FLOOR
    ratio = torch.where(f > 0, acc_rate * f1 / torch.where(f > 0, f, 1.0), 1.0)
    acc = ratio.clamp(max=1.0)
    integrand = torch.where(good, (grid - acc).abs() ** p * f, 0.0)
    idx = torch.where(good, torch.arange(GRID.size, device=dev), 0)
    integrand = integrand[torch.cummax(idx, 0).values]  # carried forward, as the NumPy code
    inside = torch.as_tensor((GRID >= 0.0) & (GRID <= 1.0), device=dev)
    xi = grid[inside]

    def trapezoid(v: Any) -> Any:
        return ((v[1:] + v[:-1]) * (xi[1:] - xi[:-1])).sum() / 2.0

    value = trapezoid(integrand[inside]) / trapezoid(f[inside])
    return value ** (1.0 / p) if root else value
