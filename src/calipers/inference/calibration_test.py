"""Hypothesis tests of perfect calibration.

H0: the model is calibrated, ``P(Y | f(X)) = f(X)``. Two families of tests:

* :func:`consistency_test` — consistency resampling (Bröcker & Smith 2007;
  Vaicenavicius et al. 2019, "Evaluating model calibration in classification",
  AISTATS, cited by Gruber & Buettner (2022)): under H0 the labels are draws from the
  predictions themselves, so the null distribution of *any* calibration
  statistic is simulated by drawing synthetic labels ``y*_i ~ Categorical(p_i)``
  (after resampling the predictions with replacement) and recomputing it.
* :func:`skce_test` — the tests of Widmann, Lindsten & Zachariah (2019),
  "Calibration tests in multi-class classification: a unifying framework"
  (NeurIPS), built on the squared kernel calibration error (SKCE,
  :func:`calipers.skce`) with the tensor kernel
  ``k((p, y), (q, y')) = exp(-||p - q||_1 / bandwidth) 1{y = y'}``, for which
  ``h_ij = kappa(p_i, p_j) <e_{y_i} - p_i, e_{y_j} - p_j>``
  (docs/how-calipers-computes.md §4.6): an asymptotic normal test on the linear-time block
  estimator and a bootstrap test on the quadratic unbiased estimator.

Every test returns a :class:`CalibrationTestResult`; small p-values are
evidence of miscalibration.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._backend import as_float64_numpy
from .._docstrings import fill_doc
from ..metrics._skce import L1ExponentialKernel, block_values, kernel_rows, residuals
from ..validation import (
    CalibrationInputError,
    check_integer,
    check_positive,
    check_predictions,
    check_size,
)

__all__ = ["CalibrationTestResult", "consistency_test", "skce_test"]

#: rows of the n x n SKCE kernel matrix held at once
_ROWS = 512


@dataclass(frozen=True)
class CalibrationTestResult:
    """Outcome of a test of the null hypothesis "the model is calibrated".

    Attributes
    ----------
    statistic : float
        The observed test statistic (for :func:`skce_test` the SKCE estimate).
    p_value : float
        Probability under H0 of a statistic at least as large (one-sided).
    null_distribution : ndarray of shape (n_resamples,)
        Simulated draws of the statistic under H0 (empty for the asymptotic
        normal block test). Read-only.
    n_resamples : int
        Number of resamples behind ``p_value`` (0 for the block test).
    method : str
        ``"consistency"``, ``"skce_block"`` or ``"skce_quadratic"``
        (:func:`calipers.regression.skce.gaussian_skce_test`: ``"consistency"`` or
        ``"block"``).
    z : float
        z-statistic of the block test (NaN otherwise).
    stderr : float
        Standard error of the block estimate (NaN otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.calibration_test import CalibrationTestResult
    >>> r = CalibrationTestResult(0.1, 0.25, np.array([0.0, 0.2, 0.05]), 3, "consistency")
    >>> r
    CalibrationTestResult(statistic=0.1, p_value=0.25, n_resamples=3, method='consistency')
    """

    statistic: float
    p_value: float
    null_distribution: np.ndarray = field(repr=False, compare=False)
    n_resamples: int
    method: str
    z: float = field(default=float("nan"), repr=False, compare=False)
    stderr: float = field(default=float("nan"), repr=False, compare=False)

    def __post_init__(self) -> None:
        a = np.array(self.null_distribution, dtype=np.float64)
        a.setflags(write=False)
        object.__setattr__(self, "null_distribution", a)


def block_test(values: np.ndarray, method: str) -> CalibrationTestResult:
    """The asymptotic test of a block estimator (Widmann et al. 2019, §5).

    The per-block estimates are i.i.d. with mean 0 under calibration, so their mean
    over the standard error ``sd / sqrt(#blocks)`` is asymptotically N(0, 1):
    ``p = 1 - Phi(z)`` (one-sided). Blocks all of the same value give ``z = +-inf``
    (or 0, with p = 1, when that value is 0).

    >>> r = block_test(np.array([0.1, 0.3, 0.2, 0.2]), "skce_block")
    >>> round(r.z, 3), f"{r.p_value:.2e}"
    (4.899, '4.82e-07')
    """
    est = float(values.mean())
    se = float(values.std(ddof=1) / np.sqrt(values.shape[0]))
    if se > 0:
        z = est / se
    else:  # every block gave the same value
        z = np.inf if est > 0 else (-np.inf if est < 0 else 0.0)
    from scipy.special import ndtr  # lazily: scipy.special costs ~0.4 s to import

    pval = float(ndtr(-z)) if not (se == 0 and est == 0) else 1.0
    return CalibrationTestResult(est, pval, np.empty(0), 0, method, z=float(z), stderr=se)


def _monte_carlo_p_value(observed: float, null: np.ndarray) -> float:
    """``(1 + #{T* >= T}) / (1 + B)``; values within 1e-12 (relative) of T count as ties."""
    tol = 1e-12 * max(1.0, abs(observed))
    return float((1 + np.count_nonzero(null >= observed - tol)) / (1 + null.shape[0]))


def _check_resamples(n_resamples: int) -> int:
    return check_size(n_resamples, "n_resamples", "MAX_RESAMPLES")


def _draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row from the row's own distribution (inverse-CDF sampling).

    Binary 1-D input: ``y = 1{u < p}``. Multi-class: with ``c`` the cumulative
    row sums and ``u ~ U[0, c_K)``, ``y = #{k < K - 1 : c_k <= u}``, so class j
    is drawn iff ``c_{j-1} <= u < c_j`` (a class of probability 0 never is).
    """
    n = probs.shape[0]
    u = np.asarray(rng.random(n), dtype=np.float64)
    if probs.ndim == 1:
        return (u < probs).astype(np.int64)
    c = np.cumsum(probs, axis=1)
    cut = u * c[:, -1]
    return np.count_nonzero(c[:, :-1] <= cut[:, None], axis=1).astype(np.int64)


@fill_doc
def consistency_test(
    probs: Any,
    labels: Any,
    *,
    statistic: Callable[..., Any] | None = None,
    n_resamples: int = 1000,
    resample_predictions: bool = True,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> CalibrationTestResult:
    """Consistency-resampling test of perfect calibration (Bröcker & Smith 2007).

    The test of Vaicenavicius et al. (2019, §4 "consistency resampling"; also
    Bröcker & Smith 2007, and Widmann et al. 2019's ``ConsistencyTest``): under
    H0 a label is a draw from its own prediction. For ``b = 1..B``:

    1. if ``resample_predictions``, draw n rows with replacement (a bootstrap
       of the predictions), otherwise keep them;
    2. draw synthetic labels ``y*_i ~ Categorical(p_i)`` (``Bernoulli(p_i)`` for
       1-D binary input) by inverse-CDF sampling;
    3. recompute the statistic ``T*_b`` on the synthetic data.

    The p-value is ``(1 + #{T*_b >= T}) / (1 + B)`` (the Monte-Carlo p-value,
    never 0; statistics within 1e-12 relative of ``T`` count as ties). With
    ``resample_predictions=False`` the test is an exact Monte-Carlo test
    conditionally on the predictions: ``P(p <= a) <= a`` for every ``a``.
    The default ``True`` is Vaicenavicius et al.'s procedure, which also
    reflects the variability of the predictions (asymptotically valid).

    Parameters
    ----------
    {probs}
        The statistic always receives probabilities (float64 NumPy arrays,
        also for PyTorch input).
    {labels}
    statistic : callable, default :func:`calipers.ece`
        ``statistic(probs, labels) -> float``, larger = less calibrated (the
        default is the ECE of P(y = 1) for 1-D input and the top-label ECE for
        ``(n, k)`` input, see :func:`calipers.ece`); any
        calipers metric works, e.g. ``functools.partial(cp.calibration_error,
        lens="classwise")``. With ``sample_weight`` it is called as
        ``statistic(probs, labels, sample_weight=w)``; a statistic with a
        ``validate`` parameter (every calipers metric) gets ``validate=False``,
        since the predictions were validated once on entry.
    n_resamples : int, default 1000
        Number B of synthetic data sets.
    resample_predictions : bool, default True
        Bootstrap the predictions before drawing labels (Vaicenavicius et al.).
    seed : int, Generator or None, default 0
        Seed of ``np.random.default_rng``; equal seeds give equal results.
    {sample_weight}
        Passed to the statistic; resampled rows keep their weights (the
        bootstrap of (row, weight) pairs).
    {logits}
    {validate}
    {classes}

    Returns
    -------
    CalibrationTestResult
        ``statistic`` = T, ``null_distribution`` = the B values ``T*_b``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.calibration_test import consistency_test
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 300)
    >>> y_cal = (rng.uniform(size=300) < p).astype(int)      # drawn from the predictions
    >>> y_bad = (rng.uniform(size=300) < 0.5).astype(int)    # ignores them
    >>> consistency_test(p, y_cal, n_resamples=199).p_value > 0.05
    True
    >>> consistency_test(p, y_bad, n_resamples=199).p_value   # the smallest possible value
    0.005
    """
    B = _check_resamples(n_resamples)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    pr = as_float64_numpy(P.probs)
    lb = as_float64_numpy(P.labels).astype(np.int64)
    w = None if P.sample_weight is None else as_float64_numpy(P.sample_weight)
    if statistic is None:
        from ..metrics.binned import ece

        statistic = ece

    # the data were validated once, above (with the caller's tolerance, when a Predictions
    # was passed): a statistic that can skip the value checks is told to, so rows that
    # passed a custom sum_tol are not re-checked against the default one
    kw: dict[str, Any] = {}
    try:
        if "validate" in inspect.signature(statistic).parameters:
            kw["validate"] = False
    except (TypeError, ValueError):  # builtins and some callables have no signature
        pass

    def stat(p: np.ndarray, y: np.ndarray, ww: np.ndarray | None) -> float:
        v = statistic(p, y, **kw) if ww is None else statistic(p, y, sample_weight=ww, **kw)
        v = float(v)
        if not np.isfinite(v):
            raise CalibrationInputError(f"the statistic returned a non-finite value ({v!r})")
        return v

    T = stat(pr, lb, w)
    rng = np.random.default_rng(seed)
    n = pr.shape[0]
    null = np.empty(B)
    for b in range(B):
        if resample_predictions:
            idx = rng.integers(0, n, n)
            pb, wb = pr[idx], None if w is None else w[idx]
        else:
            pb, wb = pr, w
        null[b] = stat(pb, _draw_labels(pb, rng), wb)
    return CalibrationTestResult(T, _monte_carlo_p_value(T, null), null, B, "consistency")


@fill_doc
def skce_test(
    probs: Any,
    labels: Any,
    *,
    method: Literal["block", "quadratic"] = "block",
    bandwidth: float = 1.0,
    block_size: int = 2,
    n_resamples: int = 1000,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> CalibrationTestResult:
    """SKCE calibration tests of Widmann, Lindsten & Zachariah (2019).

    The kernel is that of :func:`calipers.skce`: ``exp(-||p - q||_1 /
    bandwidth)`` on predictions times the white kernel on labels.

    * ``method="block"`` — the asymptotic test on the linear-time estimator
      (Widmann et al. 2019 §5, ``SKCE_ul`` for ``block_size=2``;
      CalibrationTests.jl ``AsymptoticBlockSKCETest``). The per-block
      unbiased estimates ``v_1..v_B`` (consecutive blocks of ``block_size``
      rows, an incomplete last block dropped) are i.i.d., so by the CLT
      ``z = mean(v) / (std(v, ddof=1) / sqrt(B))`` is asymptotically N(0, 1)
      under H0 (where ``E v = 0``); the one-sided p-value is ``1 - Phi(z)``.
      ``statistic`` is ``mean(v)`` (= ``skce(..., estimator="block")``).
    * ``method="quadratic"`` — the asymptotic test on the unbiased quadratic
      estimator ``SKCE_uq`` (mean of ``h_ij`` over pairs ``i != j``). Under H0
      it is a degenerate U-statistic: ``n SKCE_uq`` converges to a weighted
      sum of centred chi-square variables whose weights are unknown. As in the
      paper (which cites Arcones & Giné 1992) and CalibrationTests.jl
      ``AsymptoticSKCETest``, that law is approximated by the bootstrap of a
      degenerate U-statistic: for index resamples ``i*_1..i*_n``,

          T* = (1/(n(n-1))) sum_{a != b} [h(i*_a, i*_b) - g(i*_a) - g(i*_b) + h..],
          g(i) = (1/n) sum_r h(i, r),  h.. = (1/n^2) sum_{r,s} h(r, s),

      i.e. the U-statistic of the empirically centred kernel. ``n SKCE_uq``
      is compared with ``(n - 1) T*``; ``null_distribution`` holds
      ``(n - 1)/n T*``, draws on the scale of ``SKCE_uq``, and the p-value is
      ``(1 + #{draws >= SKCE_uq}) / (1 + B)`` (CalibrationTests.jl uses
      ``#{...}/B``). Cost O(B n^2) time via ``c' H c`` with resample counts
      ``c``, O(B n) memory.

    Parameters
    ----------
    {probs}
        Binary input is read as ``[1 - p, p]``.
    {labels}
    method : {"block", "quadratic"}, default "block"
    bandwidth : float, default 1.0
        Of the Laplacian kernel on predictions (as :func:`calipers.skce`).
    block_size : int, default 2
        Rows per block for ``method="block"``; at least 2 blocks are needed.
    n_resamples : int, default 1000
        Bootstrap resamples for ``method="quadratic"``.
    seed : int, Generator or None, default 0
        Seed of ``np.random.default_rng`` for ``method="quadratic"``.
    sample_weight : None
        Not supported (the tests assume i.i.d. unweighted rows); passing
        weights raises :class:`CalibrationInputError`.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    CalibrationTestResult
        ``z`` and ``stderr`` are set for the block test.

    Notes
    -----
    Both tests are asymptotic. Measured rejection rates at the 5% level on
    calibrated data (K = 3, softmax of Gaussian logits, labels drawn from the
    predictions): block test 4.3% (n = 100, blocks of 2) and 2.7% (n = 200,
    blocks of 10: few blocks make the normal approximation conservative),
    2000 replications each; quadratic test 4.5% (n = 100) and 6.2% (n = 50),
    1000 replications, 99 resamples. The block test with blocks of 2 has
    little power (a model with logits 3 times too large needed n of about
    10^4 here); larger blocks or the quadratic test need far fewer samples.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.calibration_test import skce_test
    >>> rng = np.random.default_rng(1)
    >>> z = rng.normal(size=(400, 3))
    >>> q = np.exp(z) / np.exp(z).sum(1, keepdims=True)            # the truth
    >>> y = (q.cumsum(1) < rng.uniform(size=(400, 1))).sum(1)
    >>> p = np.exp(3 * z) / np.exp(3 * z).sum(1, keepdims=True)    # overconfident
    >>> skce_test(p, y, method="quadratic", n_resamples=99).p_value   # none of 99 draws reach it
    0.01
    >>> round(skce_test(q, y, method="quadratic", n_resamples=99).p_value, 2)
    0.88
    >>> r = skce_test(p, y, block_size=20)    # the linear-time test needs larger blocks here
    >>> round(r.z, 2), r.p_value < 0.01
    (3.06, True)
    """
    if method not in ("block", "quadratic"):
        raise CalibrationInputError(f"method must be 'block' or 'quadratic'; got {method!r}")
    bw = check_positive(bandwidth)
    _check_resamples(n_resamples)  # checked even for the block test, which draws none
    if sample_weight is not None:
        raise CalibrationInputError(
            "skce_test does not support sample_weight (its null distributions assume "
            "i.i.d. unweighted rows); use consistency_test with a weighted statistic"
        )
    P = check_predictions(probs, labels, logits=logits, validate=validate, classes=classes)
    p, E = residuals(P)
    n = p.shape[0]
    if method == "block":
        m = check_integer(block_size, "block_size", minimum=2)
        if n // m < 2:
            raise CalibrationInputError(
                f"block_size must be an integer >= 2 that leaves at least 2 blocks of the "
                f"n={n} rows; got {block_size!r}"
            )
        return block_test(block_values(p, E, m, bw), "skce_block")
    B = _check_resamples(n_resamples)
    if n < 2:
        raise CalibrationInputError("the quadratic SKCE test needs at least 2 rows")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(B, n))
    skce_uq, null = _quadratic_null(p, E, idx, bw)
    return CalibrationTestResult(
        skce_uq, _monte_carlo_p_value(skce_uq, null), null, B, "skce_quadratic"
    )


def _quadratic_null(
    p: np.ndarray, E: np.ndarray, idx: np.ndarray, bw: float
) -> tuple[float, np.ndarray]:
    """``SKCE_uq`` and the bootstrap draws ``(n - 1)/n T*`` for index resamples ``idx`` (B, n).

    With ``c`` the resample counts of the rows, ``sum_{a != b} h(i*_a, i*_b) =
    c' H c - sum_i c_i h_ii`` and ``sum_a g(i*_a) = c' g``; ``H`` is built in
    blocks of rows, never whole.
    """
    n = p.shape[0]
    B = idx.shape[0]
    C = np.bincount((idx + n * np.arange(B)[:, None]).ravel(), minlength=B * n)
    C = C.reshape(B, n).astype(np.float64)  # resample counts of every row
    g = np.empty(n)  # row means of h
    diag = np.einsum("ij,ij->i", E, E)  # h_ii (kappa(p, p) = 1)
    quad = np.zeros(B)  # c' H c
    kern = L1ExponentialKernel(p, bw)
    for a in range(0, n, _ROWS):
        rows = slice(a, min(n, a + _ROWS))
        H = kernel_rows(kern, E, rows)
        g[rows] = H.mean(axis=1)
        quad += np.einsum("bi,bi->b", C @ H.T, C[:, rows])
    total = float(g.sum() * n)  # sum_ij h_ij
    skce_uq = (total - float(diag.sum())) / (n * (n - 1))
    skce_b = total / n**2
    mean_pairs = (quad - C @ diag) / (n * (n - 1))  # mean of h over resampled pairs a != b
    mean_cross = (C @ g) / n  # mean over a, r of h(i*_a, r)
    t_star = mean_pairs - 2 * mean_cross + skce_b
    return skce_uq, (n - 1) / n * t_star
