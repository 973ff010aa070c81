"""Mergeable state for the calibration-sharpness terms (Chidambaram & Ge 2024, §4, App. C-D).

:func:`calipers.calibration_sharpness` regresses the correctness and the
per-sample Brier score on the confidence with the Nadaraya-Watson estimator of
Chidambaram & Ge (2024) eq. (4.8). Its binned path
(:mod:`calipers.estimators.nadaraya_watson`) sees the data only through the linear split
of ``w``, ``w c`` (correctness) and ``w loss`` onto a uniform grid of ``G``
nodes of [0, 1] (``G = max(16385, ceil(r / sigma) + 1)``, ``r = 256`` for the
Gaussian kernel, ``1024`` for the Epanechnikov one). A
:class:`CalibrationSharpnessState` keeps those three rows of ``G`` masses
(393 KB for the defaults, whatever the number of rows) and a few exact totals;
batches add and states merge.

What is exact and what is not
-----------------------------
* ``total_divergence`` (the Brier score d_TOT), ``accuracy``: exact totals
  (to summation order).
* the curves (calibration curve, density, conditional Brier score, sharpness
  gap, band) on any grid of confidences: the binned path of
  :class:`~calipers.estimators.nadaraya_watson.NadarayaWatson` (same grid, same FFT), so
  they equal ``calibration_sharpness(..., method="binned")`` to summation
  order. Where the binned path falls back to exact sums (density below 1e-9 of
  its maximum, far from the data, where the FFT's round-off dominates) the
  state has no rows to sum: its curves are NaN there.
* d_CAL: ``mean_i (m(h_i) - h_i)^2`` (the code's form) and eq. (C.3)
  ``mean_i [m(h_i)^2 + h_i^2 - 2 h_i c_i]`` need ``m`` at every sample. The
  terms ``h^2`` and ``h c`` are exact totals; the sample average of the smooth
  function ``m(h)^2`` (and ``(m(h) - h)^2``) is replaced by the average over
  the grid nodes weighted by the split masses. Linear splitting integrates
  linear functions exactly, so the error per sample is at most ``delta^2 / 8``
  times the largest ``|F''|`` near it (``delta = 1 / (G - 1)``, 6.1e-5 for the
  defaults). Measured against ``calibration_sharpness`` (default method) at
  the default bandwidth, the relative difference of either d_CAL form was at
  most 2.5e-6 on seeded synthetic data, the DenseNet-40 CIFAR-10 logits, the
  CIFAR-10 and 20 Newsgroups label-error probabilities and the Niamey
  forecasts, and 4.5e-5 on the IMDB probabilities (confidences piled up at 1,
  where ``m`` bends fastest); the tests check 1e-4. The IMDB probabilities
  reach 1.00001 (inside the validation tolerance): the in-memory grid then
  spans [0, 1.00001], the state's spans [0, 1] (confidences are clipped to
  it), so its curves differ there by up to 1.4e-5 of the density's maximum.

Not supported: ``divergence="kl"`` (its terms ``log h`` are unbounded at the
grid's ends) and ``leave_one_out=True`` (each sample's own kernel mass is not
kept); both raise.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import numpy as np

from .._backend import to_numpy
from ..estimators.nadaraya_watson import (
    _BINNED_REL_TOL,
    _GAUSS_RADIUS,
    _MIN_GRID,
    _NODES_PER_BANDWIDTH,
    KernelName,
    NadarayaWatson,
    _fft_convolve_same,
    _kernel_scaled,
)
from ..metrics._calibration_sharpness import (
    CalibrationSharpness,
    _binary_divergence,
    _full_divergence,
    _sharpness_band,
)
from ..pipeline.lenses import lens_arrays, resolve_lens
from ..validation import CalibrationInputError, check_predictions

__all__ = ["CalibrationSharpnessState"]

_FORMAT = "calipers.CalibrationSharpnessState/1"
# exact totals: sum w, sum w loss, sum w h^2, sum w h c, sum w correct, number of rows
_N_TOTALS = 6


class CalibrationSharpnessState:
    """Mergeable, serialisable calibration-sharpness terms (Chidambaram & Ge 2024, §4, App. D).

    Parameters
    ----------
    bandwidth : float, default 0.05
        Kernel bandwidth in confidence units (Chidambaram & Ge 2024, §5).
    kernel : {"gaussian", "epanechnikov"}, default "gaussian"
    lens : {"auto", "top_label", "binary"}, default "auto"
        As in :func:`calipers.calibration_sharpness`.
    n_grid : int, optional
        Grid nodes; default that of the binned path of
        :class:`~calipers.estimators.nadaraya_watson.NadarayaWatson` on [0, 1].

    Notes
    -----
    Brier divergence only, all samples in every estimate (no leave-one-out);
    see the module docstring for the exactness of each term.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.stream.calibration_sharpness_state import CalibrationSharpnessState
    >>> rng = np.random.default_rng(0)
    >>> P = rng.dirichlet(np.ones(3), size=3000); y = rng.integers(0, 3, 3000)
    >>> a = CalibrationSharpnessState(); a.update(P[:1000], y[:1000])
    >>> b = CalibrationSharpnessState(); b.update(P[1000:], y[1000:])
    >>> got = CalibrationSharpnessState.from_json(a.to_json()).merge(b).compute()
    >>> want = cp.calibration_sharpness(P, y)
    >>> bool(abs(got.calibration_error_sharpcal / want.calibration_error_sharpcal - 1) < 1e-5)
    True
    >>> bool(np.isclose(got.total_divergence, want.total_divergence, rtol=1e-12))
    True
    """

    def __init__(
        self,
        bandwidth: float = 0.05,
        kernel: KernelName = "gaussian",
        lens: Literal["auto", "top_label", "binary"] = "auto",
        n_grid: int | None = None,
    ) -> None:
        self.nw = NadarayaWatson(bandwidth, kernel, n_grid=n_grid)
        if lens not in ("auto", "top_label", "binary"):
            raise CalibrationInputError(
                f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}"
            )
        self.lens = lens
        g = (
            int(n_grid)
            if n_grid is not None
            else max(_MIN_GRID, math.ceil(_NODES_PER_BANDWIDTH[kernel] / self.nw.bandwidth) + 1)
        )
        self.masses = np.zeros((3, g))
        self.totals = np.zeros(_N_TOTALS)
        self.shape: list[Any] | None = None

    def _config(self) -> list[Any]:
        return [float(self.nw.bandwidth).hex(), self.nw.kernel, self.lens, self.masses.shape[1]]

    def update(
        self, probs: Any, labels: Any, sample_weight: Any = None, *, logits: bool = False
    ) -> None:
        """Add a batch (validated by :func:`calipers.check_predictions`).

        Parameters
        ----------
        probs, labels, sample_weight, logits
            As in :func:`calipers.calibration_sharpness`.

        Examples
        --------
        >>> from calipers.stream.calibration_sharpness_state import CalibrationSharpnessState
        >>> st = CalibrationSharpnessState(); st.update([[0.8, 0.2], [0.3, 0.7]], [0, 0])
        >>> float(st.masses[0].sum()), float(st.masses[1].sum())   # weight, correct
        (2.0, 1.0)
        """
        P = check_predictions(probs, labels, logits=logits, sample_weight=sample_weight)
        shape = [int(P.n_classes), bool(P.binary)]
        if self.shape is None:
            self.shape = shape
        elif self.shape != shape:
            raise CalibrationInputError(
                f"this state holds batches of {self.shape[0]} classes (binary={self.shape[1]}); "
                f"the batch has {shape[0]} (binary={shape[1]})"
            )
        if int(P.probs.shape[0]) == 0:
            return
        use = resolve_lens(self.lens, P)
        h, c, w = lens_arrays(P, use)
        if use == "binary":
            loss = _binary_divergence(h, c, "brier")
            correct = lens_arrays(P, "top_label")[1]
        else:
            loss = _full_divergence(P, "brier")
            correct = c
        g = self.masses.shape[1]
        pos = np.clip(h, 0.0, 1.0) * (g - 1)
        j = np.clip(np.floor(pos).astype(np.int64), 0, g - 2)
        f = pos - j
        for r, v in enumerate((w, w * c, w * loss)):
            self.masses[r] += np.bincount(j, v * (1 - f), g)
            self.masses[r] += np.bincount(j + 1, v * f, g)
        self.totals += (
            w.sum(),
            np.dot(w, loss),
            np.dot(w, h * h),
            np.dot(w, h * c),
            np.dot(w, np.asarray(to_numpy(correct), dtype=np.float64)),
            float(h.shape[0]),
        )

    def merge(self, other: CalibrationSharpnessState) -> CalibrationSharpnessState:
        """A new state with the masses and totals of both (same configuration).

        Examples
        --------
        >>> from calipers.stream.calibration_sharpness_state import CalibrationSharpnessState
        >>> a = CalibrationSharpnessState(); a.update([0.3], [0])
        >>> float((a + a).totals[0])
        2.0
        """
        if not isinstance(other, CalibrationSharpnessState) or other._config() != self._config():
            raise CalibrationInputError(
                "cannot merge calibration-sharpness states with different configurations"
            )
        if None not in (self.shape, other.shape) and self.shape != other.shape:
            raise CalibrationInputError(
                f"cannot merge a state of {self.shape} (classes, binary) with one of {other.shape}"
            )
        out = CalibrationSharpnessState.__new__(CalibrationSharpnessState)
        out.nw, out.lens = self.nw, self.lens
        out.masses = self.masses + other.masses
        out.totals = self.totals + other.totals
        out.shape = self.shape if self.shape is not None else other.shape
        return out

    __add__ = merge

    def compute(self, grid: Any = None, n_points: int = 1001) -> CalibrationSharpness:
        """The calibration-sharpness terms and curves of all data seen.

        Parameters
        ----------
        grid : array-like, optional
            Confidences for the curves; default ``linspace(0, 1, n_points)``.
        n_points : int, default 1001

        Returns
        -------
        CalibrationSharpness
            As :func:`calipers.calibration_sharpness` with ``divergence="brier"``
            (module docstring: which fields are exact).

        Examples
        --------
        >>> from calipers.stream.calibration_sharpness_state import CalibrationSharpnessState
        >>> st = CalibrationSharpnessState(); st.update([[0.8, 0.2], [0.3, 0.7]], [0, 0])
        >>> r = st.compute(n_points=3)
        >>> r.accuracy, round(r.total_divergence, 4)      # (0.08 + 0.98) / 2
        (0.5, 0.53)
        """
        W = float(self.totals[0])
        if not W > 0:
            raise CalibrationInputError("the state holds no samples (or only zero weights)")
        x = (
            np.linspace(0.0, 1.0, int(n_points))
            if grid is None
            else np.asarray(grid, dtype=np.float64).reshape(-1)
        )
        nw = self.nw
        g = self.masses.shape[1]
        delta = 1.0 / (g - 1)
        radius = _GAUSS_RADIUS * nw.bandwidth if nw.kernel == "gaussian" else nw.bandwidth
        half = min(g - 1, math.ceil(radius / delta))
        kern = _kernel_scaled(nw, np.arange(-half, half + 1) * delta, None)
        sums = _fft_convolve_same(self.masses, kern)
        with np.errstate(invalid="ignore", divide="ignore"):
            node_m = np.clip(np.where(sums[0] > 0, sums[1] / sums[0], np.nan), 0.0, 1.0)
        nodes = np.linspace(0.0, 1.0, g)
        M = self.masses[0]
        used = M != 0
        m2 = float(np.dot(M[used], node_m[used] ** 2))
        code = float(np.dot(M[used], (node_m[used] - nodes[used]) ** 2)) / W
        plugin = (m2 + self.totals[2] - 2.0 * self.totals[3]) / W
        # curves: linear interpolation of the grid sums, as the binned path
        pos = np.clip(x, 0.0, 1.0) * (g - 1)
        j = np.clip(np.floor(pos).astype(np.int64), 0, g - 2)
        f = pos - j
        vals = sums[:, j] * (1 - f) + sums[:, j + 1] * f
        vals[:, vals[0] <= _BINNED_REL_TOL * float(sums[0].max())] = np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = np.clip(np.where(vals[0] > 0, vals[1] / vals[0], np.nan), 0.0, 1.0)
            cond = np.where(vals[0] > 0, vals[2] / vals[0], np.nan)
            density = vals[0] * (nw._c / W)
            rho = cond - (curve - x) ** 2
        lower, upper = _sharpness_band(curve, density, rho)
        return CalibrationSharpness(
            grid=x,
            calibration_curve=curve,
            density=density,
            conditional_divergence=cond,
            sharpness_gap=rho,
            band_lower=lower,
            band_upper=upper,
            calibration_error=float(plugin),
            calibration_error_sharpcal=code,
            total_divergence=float(self.totals[1] / W),
            accuracy=float(self.totals[4] / W),
            divergence="brier",
            kernel=nw.kernel,
            bandwidth=float(nw.bandwidth),
            leave_one_out=False,
            n_samples=int(self.totals[5]),
        )

    def to_json(self) -> str:
        """The state as JSON (floats written exactly with ``float.hex``)."""
        return json.dumps(
            {
                "format": _FORMAT,
                "config": self._config(),
                "shape": self.shape,
                "totals": [float(v).hex() for v in self.totals],
                "masses": [[float(v).hex() for v in row] for row in self.masses],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> CalibrationSharpnessState:
        """Read a state written by :meth:`to_json` (exact round trip)."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise CalibrationInputError(f"not a {_FORMAT} document")
        bw, kernel, lens, g = data["config"]
        st = cls(float.fromhex(bw), kernel, lens, int(g))
        st.shape = data["shape"]
        st.totals = np.array([float.fromhex(v) for v in data["totals"]])
        m = np.array([[float.fromhex(v) for v in row] for row in data["masses"]])
        if m.shape != st.masses.shape or st.totals.shape != (_N_TOTALS,):
            raise CalibrationInputError("not a consistent CalibrationSharpnessState document")
        st.masses = m
        return st

    def __repr__(self) -> str:
        return (
            f"CalibrationSharpnessState(bandwidth={self.nw.bandwidth!r}, "
            f"kernel={self.nw.kernel!r}, lens={self.lens!r}, weight={float(self.totals[0])!r})"
        )
