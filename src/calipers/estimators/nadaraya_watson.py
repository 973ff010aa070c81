"""Nadaraya-Watson kernel regression of a target on a 1-D score (Chidambaram & Ge (2024) eq. 4.8).

    m_hat(x) = sum_j w_j K_sigma(x - s_j) t_j / sum_j w_j K_sigma(x - s_j)      (Chidambaram & Ge (2024) eq. 4.8)
    p_hat(x) = sum_j w_j K_sigma(x - s_j) / sum_j w_j                         (its denominator as a KDE)

Chidambaram & Ge's (2024) eq. (4.8) as printed lacks the ``t_j`` (``y_i``) in the numerator, a
typo (docs/how-calipers-computes.md §7.1); the formula above is what the text and the authors'
code (sharpcal) compute. As in sharpcal, the sum runs over **all** points, the
evaluation point itself included, unless ``leave_one_out=True``.

Kernels (docs/how-calipers-computes.md §7.1, sharpcal ``kernels.py``), with ``u = x - s``:

* ``"gaussian"``: ``K_sigma(u) = exp(-u^2 / (2 sigma^2)) / (sigma sqrt(2 pi))``;
* ``"epanechnikov"``: ``K_sigma(u) = 3 / (4 sigma) (1 - (u / sigma)^2) 1{|u| <= sigma}``.

The bandwidth ``sigma`` is in score units (default 0.05, the paper's §5 and
sharpcal's default; App. H also shows 0.01, 0.03, 0.1, 0.25).

Two evaluation paths give the same numbers up to a measured tolerance:

``exact``
    the double sum, evaluated in blocks of at most ``2**16`` kernel entries
    (memory O(block), not O(n^2)), as kernel matrix times a matrix of weighted
    targets (BLAS). Tied scores are merged first (their weights and weighted
    targets added), so the cost is (distinct evaluation points) x (distinct
    scores). Each evaluation point only visits the scores inside the kernel's
    support, found by sorting: ``sigma`` on either side for Epanechnikov; for the
    Gaussian, the distance beyond which ``exp`` underflows to exactly 0 relative
    to the nearest score (``38.6 sigma`` further), so nothing is dropped that
    double precision could represent. The Gaussian is evaluated relative to the
    nearest score (``exp((d_min^2 - d^2) / (2 sigma^2))``, a common factor that
    cancels in the ratio), so ``m_hat`` stays defined far from the data, where
    the raw kernel underflows to 0: it tends to the target of the nearest
    score, the limit of the formula. (The authors' code gets NaN there and
    patches near-constant confidences by hand, docs/how-calipers-computes.md §7.1.)
``binned``
    linear binning of the weighted points onto a uniform grid of ``G`` nodes
    over ``[min(0, data), max(1, data)]`` (the mass of a point is split between
    its two neighbouring nodes in proportion to its distance to them), one FFT
    convolution (``numpy.fft``, zero-padded, so not circular) with the kernel
    sampled on the grid, and linear interpolation of numerator and denominator
    at the evaluation points (points beyond the grid are computed exactly):
    O(n + G log G). By default ``G = max(16385, 256 / sigma
    + 1)`` nodes for the Gaussian and ``max(16385, 1024 / sigma + 1)`` for the
    Epanechnikov kernel (whose kink at ``|u| = sigma`` needs a finer grid), per
    unit length of the grid's span. Leave-one-out subtracts each point's own
    contribution as the binned path computed it, ``w_i t_i [K(0) ((1-f)^2 +
    f^2) + 2 f (1-f) K(delta)]`` (``f`` the point's position between its two
    nodes, ``delta`` the grid spacing). Two kinds of points are recomputed with
    the exact path: those where the interpolated denominator is below ``1e-9``
    of its largest grid value (far from the data, where the FFT's round-off,
    about ``1e-16`` of the largest value, would dominate), and, for
    leave-one-out, samples whose own kernel mass is more than 75 % of their
    neighbourhood's (the subtraction would magnify the binning error more
    than 4 times).
``auto`` (default)
    exact when the number of (evaluation point, score) pairs inside the
    kernel's support is at most ``max_exact_pairs`` (default ``4e6``: about
    0.1 s for the Gaussian on one core of the development machine, where
    ``numpy.exp`` costs ~12 ns), binned otherwise.

Measured deviation of ``binned`` from ``exact`` (default grid; n = 20 000
scores ``~ Beta(5, 2)``, targets ``~ Bernoulli(s^2)``, unit weights; evaluation
at the scores, with and without leave-one-out, and on ``linspace(0, 1, 1001)``;
max over 3 seeds): max ``|m_hat difference|`` 3.3e-8 (sigma = 0.05) and 2.3e-7
(sigma = 0.01) for the Gaussian; 9.1e-6 and 5.3e-6 for the Epanechnikov
kernel. The mean ``(m_hat(s_i) - s_i)^2`` (Chidambaram & Ge's (2024) d_CAL) differed by at
most 3.2e-8 relative. Where the KDE is tiny (between ``1e-9`` and ``1e-6`` of
its maximum, e.g. grid points below every confidence) the FFT's round-off
adds about ``1e-16 / (relative density)``: 3.7e-7 was the largest difference
on the grid of benchmarks/bench_nadaraya_watson.py (n = 50 000, k = 10). The
test suite checks 1e-6 (Gaussian) and 1e-4 (Epanechnikov) for ``m_hat`` and
1e-6 relative for d_CAL. The Epanechnikov worst case is scores that sit
exactly ``sigma`` apart, on the kernel's kink (e.g. scores rounded to 0.01
with sigma = 0.05, n = 400: up to 7.5e-4 of the targets' range measured,
1e-3 tested); ``"auto"`` evaluates such data exactly anyway, since merging
ties leaves few distinct scores.

Numerical conventions. ``m_hat`` is a convex combination of the targets and is
kept inside ``[min t, max t]`` (round-off could leave it by an ulp, or by
~1e-14 after the binned leave-one-out subtraction). ``m_hat`` is NaN where no
score with positive weight has a positive kernel value ("denominator 0"):
with the Epanechnikov kernel, more than ``sigma`` away from every score (with
``leave_one_out=True``, from every *other* score); with the Gaussian kernel
only when there is no other score at all (leave-one-out with one distinct
score and one sample). Nothing is filled in; ``p_hat`` is 0 there.

Examples
--------
>>> import numpy as np
>>> from calipers.estimators.nadaraya_watson import NadarayaWatson
>>> h = np.array([0.55, 0.6, 0.9, 0.95]); c = np.array([1.0, 0.0, 1.0, 1.0])
>>> NadarayaWatson(0.05).regress(h, c).round(6).tolist()      # docs/how-calipers-computes.md §7.1
[0.622459, 0.377541, 1.0, 1.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import to_numpy
from ..validation import CalibrationInputError, check_positive

__all__ = ["NadarayaWatson", "gaussian_kernel", "epanechnikov_kernel"]

KernelName = Literal["gaussian", "epanechnikov"]
MethodName = Literal["auto", "exact", "binned"]

#: exp(-t) is exactly 0.0 in float64 for t > 745.2; the Gaussian support radius
#: (in bandwidths) beyond the nearest score that can still change a double.
_GAUSS_RADIUS = math.sqrt(2.0 * 745.2)
#: Kernel entries per block of the exact path (512 KiB per float64 temporary).
_BLOCK_ELEMENTS = 1 << 16
#: Binned denominators below this fraction of their grid maximum are recomputed exactly.
_BINNED_REL_TOL = 1e-9
#: Binned leave-one-out sums are recomputed exactly when what is left after removing
#: the sample is less than this share of its neighbourhood's kernel mass (the
#: subtraction would amplify the binning error more than 1 / this times).
_BINNED_LOO_MIN_SHARE = 0.25
#: Default grid of the binned path: nodes per bandwidth, and at least _MIN_GRID.
_NODES_PER_BANDWIDTH = {"gaussian": 256, "epanechnikov": 1024}
_MIN_GRID = 16385


def gaussian_kernel(u: Any, bandwidth: float = 0.05) -> np.ndarray:
    """Gaussian kernel ``K_sigma(u) = exp(-u^2 / (2 sigma^2)) / (sigma sqrt(2 pi))``.

    Chidambaram & Ge (2024) §4.2 / App. H; sharpcal ``kernels.py`` (docs/how-calipers-computes.md §7.1).

    Parameters
    ----------
    u : array-like
        Differences ``x - s`` in score units.
    bandwidth : float, default 0.05
        ``sigma``.

    Returns
    -------
    ndarray of float64, the shape of ``u``

    Examples
    --------
    >>> from calipers.estimators.nadaraya_watson import gaussian_kernel
    >>> round(float(gaussian_kernel(0.0, 0.05)), 6)      # 1 / (0.05 sqrt(2 pi))
    7.978846
    """
    u = np.asarray(u, dtype=np.float64)
    return np.asarray(
        np.exp(-0.5 * (u / bandwidth) ** 2) / (bandwidth * math.sqrt(2.0 * math.pi)),
        dtype=np.float64,
    )


def epanechnikov_kernel(u: Any, bandwidth: float = 0.05) -> np.ndarray:
    """Epanechnikov kernel ``K_sigma(u) = 3/(4 sigma) (1 - (u/sigma)^2) 1{|u| <= sigma}``.

    Chidambaram & Ge (2024) App. H.2; sharpcal ``kernels.py`` (docs/how-calipers-computes.md §7.1).

    Parameters
    ----------
    u : array-like
        Differences ``x - s`` in score units.
    bandwidth : float, default 0.05
        ``sigma`` (the half-width of the support).

    Returns
    -------
    ndarray of float64, the shape of ``u``

    Examples
    --------
    >>> from calipers.estimators.nadaraya_watson import epanechnikov_kernel
    >>> epanechnikov_kernel([0.0, 0.025, 0.05, 0.1], 0.05).round(4).tolist()
    [15.0, 11.25, 0.0, 0.0]
    """
    z = np.asarray(u, dtype=np.float64) / bandwidth
    return np.asarray(0.75 / bandwidth * np.maximum(1.0 - z * z, 0.0), dtype=np.float64)


# ----------------------------------------------------------------------------- input checks


def _vector(x: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(to_numpy(x), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"{name} must be numeric: {exc}") from None
    if a.ndim != 1:
        raise CalibrationInputError(f"{name} must be 1-D; got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"{name} must be finite; found {a[i]!r} at index {i}")
    return a


def _check_data(
    scores: Any, targets: Any, weights: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Float64 (scores (n,), targets (n, q), weights (n,), targets_were_1d)."""
    s = _vector(scores, "scores")
    n = s.shape[0]
    if n == 0:
        raise CalibrationInputError("scores is empty; need at least one sample")
    try:
        t = np.asarray(to_numpy(targets), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"targets must be numeric: {exc}") from None
    one_d = t.ndim == 1
    if t.ndim not in (1, 2) or t.shape[0] != n:
        raise CalibrationInputError(
            f"targets must have shape ({n},) or ({n}, q) to match scores; got {t.shape}"
        )
    t2 = t.reshape(n, -1)
    bad = ~np.isfinite(t2)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        raise CalibrationInputError(f"targets must be finite; found {t2[i]!r} at row {i}")
    w = _check_weights(weights, n)
    return s, t2, w, one_d


def _check_weights(weights: Any, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = _vector(weights, "weights")
    if w.shape[0] != n:
        raise CalibrationInputError(f"weights must have shape ({n},); got {w.shape}")
    if (w < 0).any():
        i = int(np.flatnonzero(w < 0)[0])
        raise CalibrationInputError(f"weights must be non-negative; found {w[i]!r} at index {i}")
    if not w.sum() > 0:
        raise CalibrationInputError("weights sum to 0; at least one needs to be positive")
    return w


# ----------------------------------------------------------------------------- the estimator


@dataclass(frozen=True)
class NadarayaWatson:
    """Nadaraya-Watson kernel regression on a 1-D score (Chidambaram & Ge (2024) eq. 4.8, App. C-D).

    The estimator of ``E[target | score]`` behind Chidambaram & Ge's (2024) calibration-sharpness
    diagrams and its consistent calibration-error estimator (Theorem C.4,
    eq. C.3); see the module docstring for the formulas, the exact and binned
    evaluation paths and their measured agreement.

    Parameters
    ----------
    bandwidth : float, default 0.05
        Kernel bandwidth ``sigma`` in score units (Chidambaram & Ge (2024) §5).
    kernel : {"gaussian", "epanechnikov"}, default "gaussian"
    leave_one_out : bool, default False
        :meth:`regress` leaves sample ``i`` out of its own estimate. The default
        (all points, self included) is Chidambaram & Ge's (2024) code (docs/how-calipers-computes.md §7.1).
        NaN where no other sample is within the kernel's support (module
        docstring, "Numerical conventions").
    method : {"auto", "exact", "binned"}, default "auto"
        ``"auto"``: exact up to ``max_exact_pairs`` kernel evaluations, else binned.
    n_grid : int or None, default None
        Nodes of the binned path's grid; None picks
        ``max(16385, ceil(r * span / sigma) + 1)`` with ``r = 256`` (Gaussian)
        or ``1024`` (Epanechnikov) and ``span`` the length of
        ``[min(0, data), max(1, data)]``.
    max_exact_pairs : float, default 4e6
        Threshold of ``"auto"`` on (evaluation point, distinct score) pairs
        inside the kernel's support.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.estimators.nadaraya_watson import NadarayaWatson
    >>> h = np.array([0.55, 0.6, 0.9, 0.95]); c = np.array([1.0, 0.0, 1.0, 1.0])
    >>> nw = NadarayaWatson(bandwidth=0.05)
    >>> nw.regress(h, c).round(6).tolist()              # self included (sharpcal)
    [0.622459, 0.377541, 1.0, 1.0]
    >>> NadarayaWatson(0.05, leave_one_out=True).regress(h, c).round(6).tolist()
    [0.0, 1.0, 1.0, 1.0]
    >>> nw.regress_at(h, c, None, [0.575]).round(6).tolist()   # half way: equal weights
    [0.5]
    >>> nw.density(h, None, [0.575]).round(4).tolist()        # (2 K(.025) + ~0) / 4
    [3.5207]
    """

    bandwidth: float = 0.05
    kernel: KernelName = "gaussian"
    leave_one_out: bool = False
    method: MethodName = "auto"
    n_grid: int | None = None
    max_exact_pairs: float = 4e6

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidth", check_positive(self.bandwidth))
        if self.kernel not in ("gaussian", "epanechnikov"):
            raise CalibrationInputError(
                f"kernel must be 'gaussian' or 'epanechnikov'; got {self.kernel!r}"
            )
        if self.method not in ("auto", "exact", "binned"):
            raise CalibrationInputError(
                f"method must be 'auto', 'exact' or 'binned'; got {self.method!r}"
            )
        if not isinstance(self.leave_one_out, (bool, np.bool_)):
            raise CalibrationInputError(
                f"leave_one_out must be True or False; got {self.leave_one_out!r}"
            )
        if self.n_grid is not None and (
            isinstance(self.n_grid, bool)
            or not isinstance(self.n_grid, (int, float, np.integer, np.floating))
            or int(self.n_grid) != self.n_grid
            or self.n_grid < 3
        ):
            raise CalibrationInputError(
                f"n_grid must be None or an integer >= 3; got {self.n_grid!r}"
            )
        mep = self.max_exact_pairs
        if isinstance(mep, bool) or not isinstance(mep, (int, float, np.integer, np.floating)):
            raise CalibrationInputError(f"max_exact_pairs must be a number >= 0; got {mep!r}")
        if not float(mep) >= 0:
            raise CalibrationInputError(f"max_exact_pairs must be >= 0; got {mep!r}")

    @property
    def _c(self) -> float:
        """``K_sigma(0)``: the kernel's normalising constant."""
        if self.kernel == "gaussian":
            return 1.0 / (self.bandwidth * math.sqrt(2.0 * math.pi))
        return 0.75 / self.bandwidth

    # ------------------------------------------------------------------ public API

    def regress(self, scores: Any, targets: Any, weights: Any = None) -> np.ndarray:
        """``E_hat[target | score = s_i]`` at every sample ``i`` (Chidambaram & Ge (2024) eq. 4.8).

        Parameters
        ----------
        scores : array-like of shape (n,)
            The 1-D scores (e.g. top-label confidences).
        targets : array-like of shape (n,) or (n, q)
            Targets to regress (e.g. correctness); ``q`` columns are regressed
            at once with the same kernel weights.
        weights : array-like of shape (n,), optional
            Non-negative sample weights (a weight of 2 = the row repeated twice);
            unit weights by default.

        Returns
        -------
        ndarray of float64, the shape of ``targets``
            NaN where the denominator is 0 (module docstring, "Numerical
            conventions"): only with leave-one-out, or at a zero-weight sample
            with no other sample within the Epanechnikov kernel's support.

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.estimators.nadaraya_watson import NadarayaWatson
        >>> NadarayaWatson(0.1).regress([0.2, 0.2, 0.8], [1.0, 0.0, 1.0]).round(4).tolist()
        [0.5, 0.5, 1.0]
        """
        s, t, w, one_d = _check_data(scores, targets, weights)
        data = _Data(self, s, t, w)
        den, num, _ = data.at_samples(s, t, w, self.leave_one_out)
        out = _ratio(num, den, data)
        return out[:, 0] if one_d else out

    def regress_at(self, scores: Any, targets: Any, weights: Any, at: Any) -> np.ndarray:
        """``m_hat(x)`` at arbitrary points ``x`` (e.g. a grid), all samples used.

        Parameters
        ----------
        scores, targets, weights
            As in :meth:`regress` (``weights`` may be None).
        at : array-like of shape (m,)
            Evaluation points, in score units.

        Returns
        -------
        ndarray of shape (m,) or (m, q)
            NaN where the denominator is 0 (Epanechnikov, no score within
            ``sigma``).

        Examples
        --------
        >>> from calipers.estimators.nadaraya_watson import NadarayaWatson
        >>> nw = NadarayaWatson(0.1, kernel="epanechnikov")
        >>> nw.regress_at([0.2, 0.3], [1.0, 0.0], None, [0.2, 0.25, 0.9]).round(4).tolist()
        [1.0, 0.5, nan]
        """
        s, t, w, one_d = _check_data(scores, targets, weights)
        x = _vector(at, "at")
        data = _Data(self, s, t, w)
        den, num, _ = data.at_points(x)
        out = _ratio(num, den, data)
        return out[:, 0] if one_d else out

    def density(self, scores: Any, weights: Any, at: Any) -> np.ndarray:
        """Kernel density estimate ``p_hat(x) = sum_j w_j K_sigma(x - s_j) / sum_j w_j``.

        The denominator of eq. (4.8) normalised to a density (Chidambaram & Ge (2024) App. D,
        ``p_hat_{h(X)}``; sharpcal's ``kde``). Not corrected at the ends of
        [0, 1]: mass within a few ``sigma`` of 0 or 1 partly leaks outside.

        Parameters
        ----------
        scores : array-like of shape (n,)
        weights : array-like of shape (n,) or None
        at : array-like of shape (m,)

        Returns
        -------
        ndarray of shape (m,), in 1 / (score units)

        Examples
        --------
        >>> from calipers.estimators.nadaraya_watson import NadarayaWatson
        >>> nw = NadarayaWatson(0.1, kernel="epanechnikov")   # 3/(4 sigma) (1 - u^2/sigma^2)
        >>> nw.density([0.5], None, [0.5, 0.55]).round(6).tolist()
        [7.5, 5.625]
        """
        s = _vector(scores, "scores")
        if s.shape[0] == 0:
            raise CalibrationInputError("scores is empty; need at least one sample")
        w = _check_weights(weights, s.shape[0])
        x = _vector(at, "at")
        data = _Data(self, s, np.zeros((s.shape[0], 0)), w)
        den, _, shift = data.at_points(x)
        return den * np.exp(-shift) * (self._c / data.total_weight)

    def regress_with_density_at(
        self, scores: Any, targets: Any, weights: Any, at: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`regress_at` and :meth:`density` at the same points from one pass.

        Examples
        --------
        >>> from calipers.estimators.nadaraya_watson import NadarayaWatson
        >>> m, p = NadarayaWatson(0.1, kernel="epanechnikov").regress_with_density_at(
        ...     [0.5, 0.5], [1.0, 0.0], None, [0.5])
        >>> m.tolist(), p.tolist()
        ([0.5], [7.5])
        """
        s, t, w, one_d = _check_data(scores, targets, weights)
        x = _vector(at, "at")
        data = _Data(self, s, t, w)
        den, num, shift = data.at_points(x)
        out = _ratio(num, den, data)
        dens = den * np.exp(-shift) * (self._c / data.total_weight)
        return (out[:, 0] if one_d else out), dens


# ----------------------------------------------------------------------------- internals


def _ratio(num: np.ndarray, den: np.ndarray, data: _Data) -> np.ndarray:
    """``num / den`` row-wise, NaN where ``den <= 0``, kept in the targets' range.

    The estimate is a convex combination of the targets; round-off (an ulp in
    the exact path, the subtraction of leave-one-out in the binned path) could
    otherwise leave ``[min t, max t]`` by a hair (e.g. a "probability" of
    -4e-14, which a logarithm would turn into NaN).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den[:, None] > 0, num / den[:, None], np.nan)
    return np.clip(out, data.tmin, data.tmax)


def _kernel_scaled(nw: NadarayaWatson, d: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
    """Unnormalised kernel of the differences ``d`` (in place), Gaussian shifted by ``shift``.

    Gaussian: ``exp(shift - d^2 / (2 sigma^2))`` (``shift`` per row); Epanechnikov:
    ``max(0, 1 - (d / sigma)^2)``.
    """
    if nw.kernel == "gaussian":
        np.square(d, out=d)
        d *= -0.5 / (nw.bandwidth * nw.bandwidth)
        if shift is not None:
            d += shift[:, None] if d.ndim == 2 else shift
        # leave-one-out rows overflow at their own (excluded, then zeroed) entry
        with np.errstate(over="ignore", under="ignore"):
            np.exp(d, out=d)
    else:
        d *= 1.0 / nw.bandwidth
        np.square(d, out=d)
        np.subtract(1.0, d, out=d)
        np.maximum(d, 0.0, out=d)
    return d


def _next_fast_len(n: int) -> int:
    """Smallest ``2^a 3^b 5^c >= n`` (a size pocketfft transforms quickly)."""
    best = 1 << max(0, (n - 1).bit_length())
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35
            while m < n:
                m *= 2
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


def _fft_convolve_same(mass: np.ndarray, kern: np.ndarray) -> np.ndarray:
    """``out[c, j] = sum_i mass[c, i] kern[h + j - i]`` for ``len(kern) = 2 h + 1``.

    Linear (not circular) convolution of every row of ``mass`` (C, G) with the
    centred kernel by one real FFT of a length >= G + 2h (numpy.fft).
    """
    g = mass.shape[1]
    half = (kern.shape[0] - 1) // 2
    n = _next_fast_len(g + 2 * half)
    spec = np.fft.rfft(mass, n, axis=1) * np.fft.rfft(kern, n)[None, :]
    return np.fft.irfft(spec, n, axis=1)[:, half : half + g]


class _Data:
    """Positive-weight scores merged by value, with the sums the estimator needs.

    ``xs`` (u,) sorted distinct scores; ``cols`` (u, 1 + q) with column 0 the
    total weight and columns 1.. the weighted target sums at each score;
    ``count`` the number of samples merged into each value.
    """

    def __init__(self, nw: NadarayaWatson, s: np.ndarray, t: np.ndarray, w: np.ndarray) -> None:
        self.nw = nw
        keep = w > 0
        sk = s[keep] if not keep.all() else s
        self.xs, inv, count = np.unique(sk, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        u, q = self.xs.shape[0], t.shape[1]
        wk = w[keep]
        cols = np.empty((u, 1 + q))
        cols[:, 0] = np.bincount(inv, weights=wk, minlength=u)
        tk = t[keep]
        for j in range(q):
            cols[:, 1 + j] = np.bincount(inv, weights=wk * tk[:, j], minlength=u)
        self.cols = cols
        self.count = count
        self.tmin = tk.min(axis=0) if tk.shape[0] else np.zeros(q)
        self.tmax = tk.max(axis=0) if tk.shape[0] else np.zeros(q)
        self.total_weight = float(wk.sum())
        self.q = q
        lo = min(0.0, float(s.min()))
        hi = max(1.0, float(s.max()))
        self.lo, self.hi = lo, hi
        self._grid: tuple[np.ndarray, float, float, float] | None = None

    # ------------------------------------------------------------------ windows and method

    def _nearest_sq(self, x: np.ndarray, strict: bool) -> np.ndarray:
        """Squared distance from each ``x`` to the nearest ``xs`` (``strict``: ``xs != x``)."""
        xs = self.xs
        u = xs.shape[0]
        if strict:
            left = np.searchsorted(xs, x, side="left") - 1
            right = np.searchsorted(xs, x, side="right")
        else:
            left = np.searchsorted(xs, x, side="right") - 1
            right = np.searchsorted(xs, x, side="left")
        dl = np.where(left >= 0, x - xs[np.clip(left, 0, u - 1)], np.inf)
        dr = np.where(right < u, xs[np.clip(right, 0, u - 1)] - x, np.inf)
        d = np.minimum(dl, dr)
        return np.where(np.isfinite(d), d * d, 0.0)

    def _windows(self, x: np.ndarray, dmin_sq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index ranges ``[lo, hi)`` of ``xs`` inside the kernel's support around each ``x``."""
        bw = self.nw.bandwidth
        if self.nw.kernel == "gaussian":
            r = np.sqrt(dmin_sq + (_GAUSS_RADIUS * bw) ** 2)
        else:
            r = np.full(x.shape, bw)
        return (
            np.searchsorted(self.xs, x - r, side="left"),
            np.searchsorted(self.xs, x + r, side="right"),
        )

    def _use_exact(self, n_pairs: float) -> bool:
        m = self.nw.method
        return m == "exact" or (m == "auto" and n_pairs <= self.nw.max_exact_pairs)

    # ------------------------------------------------------------------ exact path

    def _exact(
        self, x: np.ndarray, self_idx: np.ndarray | None, shift: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scaled sums at sorted points ``x``: kernel x cols, (den (m,), num (m, q)).

        With ``self_idx``, the entry of ``xs[self_idx[r]]`` is left out of row ``r``.
        Gaussian entries are ``exp(shift_r - d^2 / 2 sigma^2)``.
        """
        m = x.shape[0]
        out = np.zeros((m, 1 + self.q))
        if m == 0 or self.xs.shape[0] == 0:
            return out[:, 0], out[:, 1:]
        dmin_sq = shift * (2.0 * self.nw.bandwidth**2) if shift is not None else np.zeros(m)
        lo, hi = self._windows(x, dmin_sq)
        xs, cols = self.xs, self.cols
        r0 = 0
        while r0 < m:
            width0 = max(1, int(hi[r0] - lo[r0]))
            r1 = min(m, r0 + max(1, _BLOCK_ELEMENTS // width0))
            while True:
                a, b = int(lo[r0:r1].min()), int(hi[r0:r1].max())
                if r1 - r0 == 1 or (r1 - r0) * (b - a) <= 2 * _BLOCK_ELEMENTS:
                    break
                r1 = r0 + (r1 - r0) // 2
            if b > a:
                d = x[r0:r1, None] - xs[None, a:b]
                k = _kernel_scaled(self.nw, d, None if shift is None else shift[r0:r1])
                if self_idx is not None:
                    rows = np.arange(r1 - r0)
                    j = self_idx[r0:r1] - a
                    ok = (j >= 0) & (j < b - a)
                    k[rows[ok], j[ok]] = 0.0
                out[r0:r1] = k @ cols[a:b]
            r0 = r1
        return out[:, 0], out[:, 1:]

    def _pairs(self, x: np.ndarray, dmin_sq: np.ndarray) -> float:
        lo, hi = self._windows(x, dmin_sq)
        return float(np.sum(hi - lo))

    # ------------------------------------------------------------------ binned path

    def _grid_sums(self) -> tuple[np.ndarray, float, float, float]:
        """(sums (1 + q, G), lo, delta, K(delta)) of the binned path, computed once."""
        if self._grid is None:
            nw = self.nw
            span = self.hi - self.lo
            if nw.n_grid is not None:
                g = int(nw.n_grid)
            else:
                per_bw = _NODES_PER_BANDWIDTH[nw.kernel]
                g = max(_MIN_GRID, math.ceil(per_bw * span / nw.bandwidth) + 1)
            delta = span / (g - 1)
            pos, j, f = self._positions(self.xs, self.lo, delta, g)
            mass = np.empty((1 + self.q, g))
            for c in range(1 + self.q):
                v = self.cols[:, c]
                mass[c] = np.bincount(j, weights=v * (1 - f), minlength=g)[:g]
                mass[c] += np.bincount(j + 1, weights=v * f, minlength=g)[:g]
            radius = _GAUSS_RADIUS * nw.bandwidth if nw.kernel == "gaussian" else nw.bandwidth
            half = min(g - 1, math.ceil(radius / delta))
            kern = _kernel_scaled(nw, np.arange(-half, half + 1) * delta, None)
            sums = _fft_convolve_same(mass, kern)
            k_delta = float(_kernel_scaled(nw, np.array([delta]), None)[0])
            self._grid = (sums, self.lo, delta, k_delta)
        return self._grid

    @staticmethod
    def _positions(
        x: np.ndarray, lo: float, delta: float, g: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = (x - lo) / delta
        j = np.clip(np.floor(pos).astype(np.int64), 0, g - 2)
        f = np.clip(pos - j, 0.0, 1.0)
        return pos, j, f

    def _binned(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Interpolated sums at ``x``: (den, num, f, needs_exact)."""
        sums, lo, delta, _ = self._grid_sums()
        g = sums.shape[1]
        _, j, f = self._positions(x, lo, delta, g)
        vals = sums[:, j] * (1 - f) + sums[:, j + 1] * f
        tol = _BINNED_REL_TOL * float(sums[0].max())
        # points beyond the grid (which spans the scores and [0, 1]) are computed exactly
        outside = (x < lo) | (x > lo + (g - 1) * delta)
        return vals[0], vals[1:].T, f, (vals[0] <= tol) | outside

    # ------------------------------------------------------------------ evaluation

    def at_points(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sums at points ``x``: (den, num (m, q), shift), true sums = sums * exp(-shift).

        ``shift`` is 0 except for exact Gaussian rows, which are evaluated
        relative to the nearest score (module docstring).
        """
        ux, inv = np.unique(x, return_inverse=True)
        inv = inv.reshape(-1)
        gauss = self.nw.kernel == "gaussian"
        dmin_sq = self._nearest_sq(ux, strict=False) if gauss else np.zeros(ux.shape)
        shift = dmin_sq / (2.0 * self.nw.bandwidth**2)
        if self._use_exact(self._pairs(ux, dmin_sq)):
            den, num = self._exact(ux, None, shift if gauss else None)
        else:
            den, num, _, redo = self._binned(ux)
            shift = np.where(redo, shift, 0.0)
            if redo.any():
                d2, n2 = self._exact(ux[redo], None, shift[redo] if gauss else None)
                den, num = den.copy(), num.copy()
                den[redo], num[redo] = d2, n2
        return den[inv], num[inv], shift[inv]

    def _loo_exact_rows(
        self, gi: np.ndarray, wi: np.ndarray, ti: np.ndarray, shift_u: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact leave-one-out sums for samples at distinct-value indices ``gi``."""
        gu, loc = np.unique(gi, return_inverse=True)
        loc = loc.reshape(-1)
        dv, nv = self._exact(self.xs[gu], gu, None if shift_u is None else shift_u[gu])
        d, n = dv[loc], nv[loc]
        # the other samples merged into the sample's own value (distance 0; their
        # rows have shift 0, see at_samples)
        multi = self.count[gi] > 1
        rem_w = self.cols[gi, 0] - wi
        rem_t = self.cols[gi, 1:] - wi[:, None] * ti
        d = np.where(multi, d + rem_w, d)
        n = np.where(multi[:, None], n + rem_t, n)
        return d, n

    def at_samples(
        self, s: np.ndarray, t: np.ndarray, w: np.ndarray, loo: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sums (den, num, shift) at every sample's own score; ``loo`` leaves it out."""
        if not loo:
            return self.at_points(s)
        n = s.shape[0]
        den = np.empty(n)
        num = np.empty((n, self.q))
        shift_out = np.zeros(n)
        pos = w > 0
        if not pos.all():  # a zero-weight sample contributes nothing: plain evaluation
            d0, n0, s0 = self.at_points(s[~pos])
            den[~pos], num[~pos], shift_out[~pos] = d0, n0, s0
        if not pos.any():
            return den, num, shift_out
        sp, wp, tp = s[pos], w[pos], t[pos]
        g = np.searchsorted(self.xs, sp)  # index of each sample's own distinct value
        gauss = self.nw.kernel == "gaussian"
        u = self.xs.shape[0]
        if gauss:
            # nearest *other* sample: at distance 0 when the value holds several
            dmin_sq = np.where(self.count > 1, 0.0, self._nearest_sq(self.xs, strict=True))
        else:
            dmin_sq = np.zeros(u)
        shift_u = dmin_sq / (2.0 * self.nw.bandwidth**2)
        if self._use_exact(self._pairs(self.xs, dmin_sq)):
            d_i, n_i = self._loo_exact_rows(g, wp, tp, shift_u if gauss else None)
            sh = shift_u[g] if gauss else np.zeros(g.shape[0])
        else:
            dv, nv, f, _ = self._binned(sp)
            sums, _, _, k_delta = self._grid_sums()
            # the sample's own contribution as the binned path computed it
            self_k = (1 - f) ** 2 + f**2 + 2 * f * (1 - f) * k_delta  # K(0) = 1 here
            d_i = dv - wp * self_k
            n_i = nv - (wp * self_k)[:, None] * tp
            sh = np.zeros(g.shape[0])
            redo = (d_i <= _BINNED_REL_TOL * float(sums[0].max())) | (
                d_i < _BINNED_LOO_MIN_SHARE * dv
            )
            if redo.any():
                d2, n2 = self._loo_exact_rows(
                    g[redo], wp[redo], tp[redo], shift_u if gauss else None
                )
                d_i[redo], n_i[redo] = d2, n2
                if gauss:
                    sh[redo] = shift_u[g[redo]]
        den[pos], num[pos], shift_out[pos] = d_i, n_i, sh
        return den, num, shift_out
