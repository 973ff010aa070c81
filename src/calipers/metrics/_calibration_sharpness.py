"""Confidence calibration error and calibration-sharpness diagrams (Chidambaram & Ge (2024) §4, App. C-D).

Chidambaram & Ge (2024) (Chidambaram & Ge, *Reassessing how to compare and improve the
calibration of ML models*) pairs a Bregman divergence ``d_phi`` on the simplex
(the generalization metric: Brier score, or KL, i.e. NLL) with its 1-D
counterpart ``d_varphi`` on confidences (``varphi(x) = x^2``, or the logistic
``x log x + (1 - x) log(1 - x)``), and shows

* Lemma 4.1: ``E[d_phi(Z, X)] = (E phi(Z) - E phi(E[Z | X])) + E d_phi(E[Z | X], X)``
  (sharpness gap + calibration error);
* Lemma 4.6 / Cor. 4.7: the confidence calibration error
  ``E d_varphi(E[1{Y = c(X)} | h(X)], h(X))`` is at most the full (canonical)
  calibration error ``E d_phi(E[pi_{Y|X} | g(X)], g(X))``, for Brier and for KL;
* Prop. 4.8: the pointwise sharpness gap of eq. (4.7),
  ``rho(p) = E[d_phi(pi_{Y|X}, g(X)) | h(X) = p] - d_varphi(E[1{Y = c(X)} | h(X) = p], p)``,
  is non-negative.

Everything is estimated with the Nadaraya-Watson regression of eq. (4.8)
(:class:`calipers.estimators.nadaraya_watson.NadarayaWatson`; Gaussian kernel, bandwidth
0.05 by default, all points including the evaluation point itself, as in the
authors' code, docs/how-calipers-computes.md §7.1):

* :func:`confidence_calibration_error` -- Theorem C.4's consistent plug-in
  estimator, eq. (C.3), or the form the authors' code (sharpcal) reports;
* :func:`calibration_sharpness` -- every quantity a calibration-sharpness
  diagram draws (App. D): the calibration curve, the KDE of the confidences,
  the pointwise sharpness gap and the band, with d_CAL, d_TOT and accuracy.

Examples
--------
>>> import numpy as np
>>> from calipers import confidence_calibration_error
>>> h = np.array([0.55, 0.6, 0.9, 0.95]); correct = np.array([1, 0, 1, 1])
>>> probs = np.stack([h, 1 - h], axis=1)                 # class 0 is predicted
>>> labels = np.where(correct == 1, 0, 1)
>>> round(confidence_calibration_error(probs, labels, form="plugin"), 7)     # eq. (C.3)
0.0262481
>>> round(confidence_calibration_error(probs, labels, form="sharpcal"), 7)   # code
0.0168096
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._backend import row_sum_of_squares, take_rows, to_numpy, wrap_scalar
from .._docstrings import fill_doc
from ..estimators.nadaraya_watson import (
    _GAUSS_RADIUS,
    KernelName,
    MethodName,
    NadarayaWatson,
    _Data,
    _ratio,
)
from ..pipeline.lenses import lens_arrays, resolve_lens
from ..validation import (
    MAX_POINTS,
    CalibrationInputError,
    Predictions,
    check_integer,
    check_predictions,
)

__all__ = [
    "CalibrationSharpness",
    "calibration_sharpness",
    "confidence_calibration_error",
]

DivergenceName = Literal["brier", "kl"]
FormName = Literal["plugin", "sharpcal"]


# ----------------------------------------------------------------------------- 1-D Bregman terms


def _check_divergence(divergence: Any) -> DivergenceName:
    if divergence not in ("brier", "kl"):
        raise CalibrationInputError(f"divergence must be 'brier' or 'kl'; got {divergence!r}")
    return divergence  # type: ignore[no-any-return]


def _bregman_term(divergence: DivergenceName, m: Any, h: Any, c: Any) -> np.ndarray:
    """``varphi(m) - varphi(h) - varphi'(h) (c - h)`` elementwise (Chidambaram & Ge (2024) eq. C.3).

    With ``c = m`` this is the 1-D Bregman divergence ``d_varphi(m, h)``.
    Brier: ``varphi(x) = x^2``, so ``d(a, b) = (a - b)^2``. KL: ``varphi(x) =
    x log x + (1 - x) log(1 - x)``, ``varphi'(x) = log(x / (1 - x))``, with
    ``0 log 0 = 0`` (so ``varphi'(h) (c - h) = 0`` when ``c = h`` even at 0 or
    1, and ``+inf`` terms where ``h`` is 0 or 1 and ``c`` differs).
    """
    m = np.asarray(m, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if divergence == "brier":
        return np.asarray((m - h) ** 2 + 2.0 * h * (m - c), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        from scipy.special import xlogy  # lazily: scipy.special costs ~0.4 s to import

        phi_m = xlogy(m, m) + xlogy(1 - m, 1 - m)
        phi_h = xlogy(h, h) + xlogy(1 - h, 1 - h)
        lin = xlogy(c - h, h) - xlogy(c - h, 1 - h)
        return np.asarray(phi_m - phi_h - lin, dtype=np.float64)


def _check_kl_confidences(h: np.ndarray) -> None:
    bad = (h > 1.0) | (h < 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"divergence='kl' needs confidences in [0, 1]; row {i} has {h[i]!r} "
            "(inside the validation tolerance, but log h or log(1 - h) is undefined); "
            "renormalise the probabilities first"
        )


def _sharpness_band(
    curve: np.ndarray, density: np.ndarray, rho: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The band of the diagram: ``curve -+ density * rho / 2`` (the lower side at least 0), NaN
    where its length is not finite (Chidambaram & Ge 2024, §3)."""
    with np.errstate(invalid="ignore"):
        length = density * rho
        ok = np.isfinite(length)
        lower = np.where(ok, np.maximum(curve - length / 2, 0.0), np.nan)
        upper = np.where(ok, curve + length / 2, np.nan)
    return lower, upper


def _weighted_mean(v: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean over rows with positive weight (a zero weight means the row is absent)."""
    keep = w > 0
    if keep.all():
        return float(np.dot(v, w) / w.sum())
    return float(np.dot(v[keep], w[keep]) / w[keep].sum())


# ----------------------------------------------------------------------------- per-sample loss


def _full_divergence(P: Predictions, divergence: DivergenceName) -> np.ndarray:
    """Per-sample ``d_phi(e_{y_i}, g(x_i))`` on the simplex, float64 NumPy.

    Brier: ``sum_k (p_ik - 1{y_i = k})^2`` (two classes for 1-D binary input);
    KL: ``-log p_{i, y_i}`` (``+inf`` for a zero probability), exact from
    logits when they were given.
    """
    labels = np.asarray(to_numpy(P.labels), dtype=np.int64)
    if divergence == "kl" and P.logits is not None:
        from scipy.special import log_expit, logsumexp

        z = np.asarray(to_numpy(P.logits), dtype=np.float64)
        if P.binary:
            return np.asarray(-log_expit(np.where(labels == 1, z, -z)), dtype=np.float64)
        return np.asarray(logsumexp(z, axis=1) - take_rows(z, labels), dtype=np.float64)
    p = to_numpy(P.probs)
    if P.binary:
        p1 = np.asarray(p, dtype=np.float64)
        py = np.where(labels == 1, p1, 1.0 - p1)
        if divergence == "brier":
            return np.asarray(2.0 * (1.0 - py) ** 2, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.asarray(-np.log(py), dtype=np.float64)
    py = np.asarray(take_rows(p, labels), dtype=np.float64)
    if divergence == "kl":
        with np.errstate(divide="ignore"):
            return np.asarray(-np.log(py), dtype=np.float64)
    # sum_k p_k^2 - 2 p_y + 1 in float64, without a float64 copy of the matrix
    return np.asarray(row_sum_of_squares(p) - 2.0 * py + 1.0, dtype=np.float64)


def _binary_divergence(p: np.ndarray, y: np.ndarray, divergence: DivergenceName) -> np.ndarray:
    """Per-sample 1-D proper score of P(y = 1): ``(p - y)^2`` or ``-log p_y`` (nats)."""
    if divergence == "brier":
        return np.asarray((p - y) ** 2, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.asarray(-np.log(np.where(y == 1, p, 1.0 - p)), dtype=np.float64)


# ----------------------------------------------------------------------------- the CE estimator


@fill_doc
def confidence_calibration_error(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    divergence: DivergenceName = "brier",
    bandwidth: float = 0.05,
    kernel: KernelName = "gaussian",
    form: FormName = "sharpcal",
    leave_one_out: bool = False,
    method: MethodName = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Kernel estimate of the Bregman confidence calibration error (Chidambaram & Ge (2024) Thm. C.4).

    Estimates ``E[d_varphi(E[1{Y = c(X)} | h(X)], h(X))]`` with ``h`` the top-label
    confidence, ``c`` the predicted class and ``varphi`` the 1-D Bregman
    generator paired with ``divergence`` (Chidambaram & Ge (2024) §4.1), from the
    Nadaraya-Watson curve ``m_hat`` of eq. (4.8) evaluated at the samples:

    * ``form="plugin"``: Theorem C.4's consistent estimator, eq. (C.3),
      ``mean_i [varphi(m_hat(h_i)) - varphi(h_i) - varphi'(h_i) (c_i - h_i)]``
      (the covariance-matching form of Lemma 4.1's proof; it can be negative
      for tiny samples);
    * ``form="sharpcal"`` (default): what the authors' code reports as d_CAL,
      ``mean_i d_varphi(m_hat(h_i), h_i)`` (Brier: ``(m_hat(h_i) - h_i)^2``;
      docs/how-calipers-computes.md §0 item 9 and §7.1). The code averages it over 10 draws of
      5000 evaluation points with replacement when ``n > 5000``; calipers
      evaluates at every sample (the expectation of those draws). The code has
      no KL version; ``divergence="kl"`` here is the same formula with the
      logistic ``d_varphi``.

    On the 4-point example of docs/how-calipers-computes.md §7.1 the two forms give 0.0262481
    (plug-in) and 0.0168096 (code).

    Parameters
    ----------
    {probs}
    {labels}
    divergence : {"brier", "kl"}, default "brier"
        ``varphi(x) = x^2`` (``d(a, b) = (a - b)^2``, not ``2 (a - b)^2``: the
        1-D counterpart of the multi-class Brier score, Chidambaram & Ge (2024) §4.1, sharpcal
        ``scores.py``) or ``varphi(x) = x log x + (1 - x) log(1 - x)`` (the
        Bernoulli KL; Chidambaram & Ge (2024) Cor. 4.7). Values in nats for KL.
    bandwidth : float, default 0.05
        Kernel bandwidth in confidence units (Chidambaram & Ge (2024) §5, App. H). Theorem C.4
        needs ``bandwidth -> 0`` with ``n * bandwidth^2 / log n -> infinity``.
    kernel : {"gaussian", "epanechnikov"}, default "gaussian"
    form : {"plugin", "sharpcal"}, default "sharpcal"
        The default is the authors' code form because it is far less biased at
        the bandwidths used in practice (see Notes); both are consistent.
    leave_one_out : bool, default False
        Leave sample ``i`` out of ``m_hat(h_i)``. The default includes it, as the
        paper's code does. With the Epanechnikov kernel a sample with no other
        sample within ``bandwidth`` has no leave-one-out estimate and the result
        is NaN (see :class:`~calipers.estimators.nadaraya_watson.NadarayaWatson`).
    method : {"auto", "exact", "binned"}, default "auto"
        Evaluation path of the regression (exact double sum or FFT on a grid,
        within about 1e-7 of each other; see :mod:`calipers.estimators.nadaraya_watson`).
    {lens}
        For ``(n, k)`` input ``h`` is the top-label confidence and the target
        the correctness, as in Chidambaram & Ge (2024).
    {sample_weight}
        They weigh the samples in the regression and in the mean.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        For PyTorch input a detached 0-d ``torch.float64`` tensor on the
        input's device: the kernel regression runs in NumPy, so no gradient
        reaches ``probs`` (docs/pytorch.md).
        NaN where some sample's ``m_hat`` is undefined (see ``leave_one_out``);
        ``inf`` for KL when a confidence of exactly 1 meets a wrong prediction.

    Notes
    -----
    Bias of the two forms (measured in tests/test_calibration_sharpness.py).
    Eq. (C.3) writes the error as a difference of O(1) terms, so the smoothing
    bias of ``m_hat`` enters it to first order (``varphi(m_hat) - varphi(m)``),
    while in ``d_varphi(m_hat, h)`` it is multiplied by the calibration gap
    ``m - h``. For ``f ~ Beta(2, 1)``, ``P(y = 1 | f) = f^2`` (true Brier
    confidence CE 1/210), the n -> infinity limit at bandwidth 0.05 is
    -96 % of the true value for ``"plugin"`` and +1.3 % for ``"sharpcal"``;
    with ``sigma_n = 0.05 (n / 10^4)^(-1/5)`` the mean relative errors at
    n = 500, 2000, 10 000 were -2.2, -1.55, -0.95 (``"plugin"``) and +0.36,
    +0.11, +0.03 (``"sharpcal"``). Both are consistent (``sigma -> 0``), but
    at the bandwidths used in practice the code's form is far less biased.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics import confidence_calibration_error
    >>> h = np.array([0.55, 0.6, 0.9, 0.95]); correct = np.array([1, 0, 1, 1])
    >>> probs = np.stack([h, 1 - h], axis=1); labels = np.where(correct == 1, 0, 1)
    >>> round(confidence_calibration_error(probs, labels, form="plugin"), 7)
    0.0262481
    >>> round(confidence_calibration_error(probs, labels), 7)
    0.0168096
    >>> round(confidence_calibration_error(probs, labels, divergence="kl", form="plugin"), 6)
    0.086272
    """
    divergence = _check_divergence(divergence)
    if form not in ("plugin", "sharpcal"):
        raise CalibrationInputError(f"form must be 'plugin' or 'sharpcal'; got {form!r}")
    nw = NadarayaWatson(bandwidth, kernel, leave_one_out, method)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    h, c, w = lens_arrays(P, lens)
    if divergence == "kl":
        _check_kl_confidences(h)
    m = nw.regress(h, c, w)
    v = _bregman_term(divergence, m, h, c if form == "plugin" else m)
    return wrap_scalar(_weighted_mean(v, w), P.probs)


# ----------------------------------------------------------------------------- the diagram


@dataclass(frozen=True)
class CalibrationSharpness:
    """The quantities of a calibration-sharpness diagram (Chidambaram & Ge (2024) §4.2, App. D).

    Curves are on ``grid`` (confidence values ``x``); the scalars summarise the
    whole sample. All arrays are float64 NumPy, all scalars Python floats.

    Attributes
    ----------
    grid : ndarray, shape (m,)
        Confidences ``x`` (default ``linspace(0, 1, 1001)``; sharpcal draws on
        ``linspace(0, 1, 5000)``).
    calibration_curve : ndarray, shape (m,)
        ``m_hat(x)``, the NW estimate of ``E[1{Y = c(X)} | h(X) = x]`` (eq. 4.8):
        the red curve. NaN where undefined (Epanechnikov, no data within
        ``bandwidth``).
    density : ndarray, shape (m,)
        ``p_hat(x)``, the KDE of the confidences (the NW denominator as a
        density, App. D), per unit confidence. sharpcal overlays
        ``density / density.max()`` (:attr:`density_normalized`).
    conditional_divergence : ndarray, shape (m,)
        NW estimate of ``E[d_phi(e_Y, g(X)) | h(X) = x]``: the per-sample full
        multi-class divergence (Brier ``sum_k (p_k - y_k)^2``; KL ``-log p_y``)
        regressed on the confidence (App. D "Estimation details"). ``inf`` near
        samples with infinite NLL.
    sharpness_gap : ndarray, shape (m,)
        ``rho_hat(x) = conditional_divergence - d_varphi(m_hat(x), x)``, the
        pointwise sharpness gap of eq. (4.7) as App. D estimates it. Because the
        data hold ``e_Y``, not ``pi_{Y|X}``, it estimates (4.7) *plus* the
        irreducible term ``E[d_phi(e_Y, pi_{Y|X}) | h(X) = x] >= 0``; both are
        non-negative in the population (Prop. 4.8), the estimate only up to
        noise. For KL it is ``-inf`` at ``x = 0`` or ``1`` where
        ``m_hat(x) != x``.
    band_lower, band_upper : ndarray, shape (m,)
        The band drawn around the curve: centred on ``m_hat``, of length
        ``p_hat(x) * rho_hat(x)`` (App. D), the lower edge clipped at 0 and the
        upper edge not clipped at 1 (App. D "Visualization details"; sharpcal:
        ``max(m_hat - gap / 2, 0)``, ``m_hat + gap / 2``). NaN where the length
        is not finite.
    calibration_error : float
        d_CAL by Theorem C.4's estimator, eq. (C.3) (see
        :func:`confidence_calibration_error`, ``form="plugin"``).
    calibration_error_sharpcal : float
        d_CAL as the authors' code computes it, ``mean_i d_varphi(m_hat(h_i), h_i)``.
    total_divergence : float
        d_TOT, the mean full divergence ``mean_i d_phi(e_{y_i}, g(x_i))``: the
        multi-class Brier score (sum over classes) or the NLL in nats.
    accuracy : float
        Fraction of samples whose arg-max is the label (weighted).
    divergence, kernel : str
    bandwidth : float
    leave_one_out : bool
        Whether ``m_hat(h_i)`` in the two d_CAL values left sample ``i`` out
        (the curves always use every sample).
    n_samples : int
    """

    grid: np.ndarray
    calibration_curve: np.ndarray
    density: np.ndarray
    conditional_divergence: np.ndarray
    sharpness_gap: np.ndarray
    band_lower: np.ndarray
    band_upper: np.ndarray
    calibration_error: float
    calibration_error_sharpcal: float
    total_divergence: float
    accuracy: float
    divergence: str
    kernel: str
    bandwidth: float
    leave_one_out: bool
    n_samples: int

    @property
    def density_normalized(self) -> np.ndarray:
        """``density / max(density)``, the overlay sharpcal draws (in [0, 1])."""
        mx = float(np.max(self.density)) if self.density.size else 0.0
        return self.density / mx if mx > 0 else np.zeros_like(self.density)

    @property
    def sharpness_gap_mean(self) -> float:
        """``total_divergence - calibration_error``.

        By Lemma 4.1 and the tower rule this equals ``E[rho(h(X))]`` for the
        sharpness gap that :attr:`sharpness_gap` estimates (with the irreducible
        term); by Lemma 4.6 it is at least the full sharpness gap plus the
        irreducible term.
        """
        return self.total_divergence - self.calibration_error


@fill_doc
def calibration_sharpness(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    divergence: DivergenceName = "brier",
    bandwidth: float = 0.05,
    kernel: KernelName = "gaussian",
    n_points: int = 1001,
    grid: Any = None,
    leave_one_out: bool = False,
    method: MethodName = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> CalibrationSharpness:
    """Everything a calibration-sharpness diagram shows (Chidambaram & Ge (2024) §4.2, App. D).

    The calibration curve ``m_hat(x)`` (NW estimate of ``E[1{Y = c(X)} | h(X) =
    x]``, eq. 4.8), the KDE ``p_hat(x)`` of the confidences, the pointwise
    sharpness gap ``rho_hat(x)`` (eq. 4.7, estimated as in App. D) and the band
    ``m_hat(x) -/+ p_hat(x) rho_hat(x) / 2`` (lower edge clipped at 0), with
    d_CAL in both forms (eq. C.3 and the authors' code), d_TOT and accuracy. See
    :class:`CalibrationSharpness` for each field's relation to the paper.

    Differences from the authors' code (sharpcal, docs/how-calipers-computes.md §7.1): d_CAL
    is evaluated at every sample instead of 10 x 5000 points drawn with
    replacement (no randomness; the draws average to this value); the default
    grid has 1001 points instead of 5000; no special case for near-constant
    confidences (the Gaussian regression is evaluated relative to the nearest
    confidence, so ``m_hat`` stays defined far from the data); KL is supported.

    Parameters
    ----------
    {probs}
        Binary input is read as the two-class vector ``[1 - p, p]``, so the
        Brier d_TOT is the two-class sum ``2 (p - y)^2``.
    {labels}
    divergence : {"brier", "kl"}, default "brier"
        The pair ``(d_phi, d_varphi)``: multi-class Brier with ``(a - b)^2``, or
        KL (NLL) with the Bernoulli KL (Chidambaram & Ge (2024) §4.1, Cor. 4.7).
    bandwidth : float, default 0.05
        In confidence units (Chidambaram & Ge (2024) §5; App. H shows 0.01-0.25).
    kernel : {"gaussian", "epanechnikov"}, default "gaussian"
    n_points : int, default 1001
        Size of the default grid ``linspace(0, 1, n_points)``.
    grid : array-like of shape (m,), optional
        Explicit evaluation points (overrides ``n_points``).
    leave_one_out : bool, default False
        For the two d_CAL values only (see :func:`confidence_calibration_error`).
    method : {"auto", "exact", "binned"}, default "auto"
    {lens}
        For ``(n, k)`` input ``h`` is the top-label confidence and the target
        the correctness, as in Chidambaram & Ge (2024). With the binary lens
        d_TOT is the 1-D proper score of P(y = 1), ``(p - y)^2`` or
        ``-log p_y``, so that d_TOT = d_CAL + sharpness term holds as in the
        top-label case, and ``accuracy`` is still the accuracy of the
        predicted class.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    CalibrationSharpness

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics import calibration_sharpness
    >>> h = np.array([0.55, 0.6, 0.9, 0.95]); correct = np.array([1, 0, 1, 1])
    >>> probs = np.stack([h, 1 - h], axis=1); labels = np.where(correct == 1, 0, 1)
    >>> cs = calibration_sharpness(probs, labels, grid=[0.6, 0.9])
    >>> cs.calibration_curve.round(6).tolist()
    [0.377541, 1.0]
    >>> round(cs.calibration_error, 7), round(cs.calibration_error_sharpcal, 7)
    (0.0262481, 0.0168096)
    >>> round(cs.total_divergence, 4), cs.accuracy      # (.405 + .72 + .02 + .005) / 4
    (0.2875, 0.75)
    >>> bool(np.all(cs.band_upper >= cs.calibration_curve))
    True
    """
    divergence = _check_divergence(divergence)
    if grid is None:
        n_points = check_integer(n_points, "n_points", minimum=2, maximum=MAX_POINTS)
        x = np.linspace(0.0, 1.0, int(n_points))
    else:
        try:
            x = np.asarray(to_numpy(grid), dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise CalibrationInputError(f"grid must be numeric: {exc}") from None
        if x.size == 0 or not np.isfinite(x).all():
            raise CalibrationInputError("grid must be a non-empty array of finite numbers")
    nw = NadarayaWatson(bandwidth, kernel, leave_one_out, method)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    use = resolve_lens(lens, P)
    h, c, w = lens_arrays(P, use)
    if divergence == "kl":
        _check_kl_confidences(h)
    if use == "binary":
        loss = _binary_divergence(h, c, divergence)
        correct = lens_arrays(P, "top_label")[1]
    else:
        loss = _full_divergence(P, divergence)
        correct = c
    finite = np.isfinite(loss)
    targets = np.stack([c, np.where(finite, loss, 0.0)], axis=1)
    data = _Data(nw, h, targets, w)

    # d_CAL: the curve at every sample
    den_s, num_s, _ = data.at_samples(h, targets, w, leave_one_out)
    m_i = _ratio(num_s, den_s, data)[:, 0]
    d_cal = _weighted_mean(_bregman_term(divergence, m_i, h, c), w)
    d_cal_code = _weighted_mean(_bregman_term(divergence, m_i, h, m_i), w)

    # the curves on the grid
    den_g, num_g, shift_g = data.at_points(x)
    reg = _ratio(num_g, den_g, data)
    curve, cond = reg[:, 0], reg[:, 1]
    with np.errstate(under="ignore"):
        density = den_g * np.exp(-shift_g) * (nw._c / data.total_weight)
    keep = w > 0
    bad = keep & ~finite
    if bad.any():
        # an infinite loss reaches every point where its kernel is positive
        hb = np.sort(h[bad])
        idx = np.searchsorted(hb, x)
        left = hb[np.clip(idx - 1, 0, hb.shape[0] - 1)]
        right = hb[np.clip(idx, 0, hb.shape[0] - 1)]
        dist = np.minimum(np.abs(x - left), np.abs(x - right))
        reach = _GAUSS_RADIUS * nw.bandwidth if nw.kernel == "gaussian" else nw.bandwidth
        cond = np.where(dist < reach, np.inf, cond)
    with np.errstate(invalid="ignore"):
        rho = cond - _bregman_term(divergence, curve, x, curve)
    lower, upper = _sharpness_band(curve, density, rho)

    return CalibrationSharpness(
        grid=x,
        calibration_curve=curve,
        density=density,
        conditional_divergence=cond,
        sharpness_gap=rho,
        band_lower=lower,
        band_upper=upper,
        calibration_error=d_cal,
        calibration_error_sharpcal=d_cal_code,
        total_divergence=_weighted_mean(loss, w),
        accuracy=_weighted_mean(correct, w),
        divergence=divergence,
        kernel=nw.kernel,
        bandwidth=nw.bandwidth,
        leave_one_out=bool(leave_one_out),
        n_samples=int(h.shape[0]),
    )
