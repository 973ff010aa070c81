"""Squared kernel calibration error of Gaussian predictive distributions (Widmann et al. 2021).

A regression model that predicts ``P_i = N(mu_i, sigma_i^2)`` for a real target
``y_i`` is calibrated when ``law(Y | P) = P`` (Widmann et al. 2021; the
regression setting of Gruber & Buettner 2022, §2 and App. G.5). The squared
kernel calibration error (SKCE) of Widmann et al. 2021 (Def. of the KCE and
its unbiased estimators, §2-3) uses a kernel on (distribution, target) pairs.
Here it is the tensor product

    k((P, y), (P', y')) = k_P(P, P') k_Y(y, y'),
    k_P(P, P') = exp(-W_2(P, P') / l_P),
    k_Y(y, y') = exp(-(y - y')^2 / (2 l^2)),

with ``W_2(N(mu, s^2), N(mu', s'^2))^2 = (mu - mu')^2 + (s - s')^2`` (the
2-Wasserstein distance of two 1-D Gaussians, a Euclidean distance in
``(mu, s)``, so ``k_P`` is positive definite). ``l`` and ``l_P`` are in the
units of the targets; ``l = l_P = 1`` is the kernel of the experiments of
Widmann et al. 2021. The SKCE is ``E h((P, Y), (P', Y'))`` for independent pairs,

    h = k_P(P, P') [k_Y(y, y') - E_{Z~P} k_Y(Z, y') - E_{Z'~P'} k_Y(y, Z')
                    + E_{Z~P, Z'~P'} k_Y(Z, Z')],

and both expectations are closed-form Gaussian integrals: for ``Z ~ N(mu, s^2)``,

    E exp(-(Z - a)^2 / (2 l^2)) = l / sqrt(l^2 + s^2) exp(-(mu - a)^2 / (2 (l^2 + s^2))),

and, as ``Z - Z' ~ N(mu - mu', s^2 + s'^2)`` for independent ``Z ~ N(mu, s^2)``,
``Z' ~ N(mu', s'^2)``, the same formula with ``a = mu'`` and ``s^2 + s'^2``:

    E exp(-(Z - Z')^2 / (2 l^2)) = l / sqrt(l^2 + s^2 + s'^2)
                                   exp(-(mu - mu')^2 / (2 (l^2 + s^2 + s'^2))).

Estimators (as in :func:`calipers.skce` for classification): ``"unbiased"``, the
U-statistic mean of ``h_ij`` over pairs ``i < j`` (O(n^2) time, computed in row
blocks so memory stays O(n)); ``"block"``, the mean of the unbiased estimates
of consecutive blocks of ``block_size`` rows (an incomplete last block
dropped; O(n) time). :func:`gaussian_skce_test` turns either into a test of
calibration.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._parallel import thread_map
from ..estimators.quadratic_cost import check_quadratic_cost
from ..inference.calibration_test import CalibrationTestResult, block_test
from ..validation import CalibrationInputError, check_integer, check_positive, check_size
from .inputs import check_gaussian, spread_by_name

__all__ = ["gaussian_skce", "gaussian_skce_test"]

#: kernel entries of one row block of the unbiased estimator (2^18 doubles = 2 MiB)
_TILE = 1 << 18
#: measured seconds per pair of the unbiased estimator (2-core x86-64 machine)
_SECONDS_PER_PAIR = 6e-8
#: ... and per pair and extra target set in the consistency test
_SECONDS_PER_PAIR_RESAMPLE = 3e-8


def _check_gaussian(
    mean: Any, variance: Any, std: Any, targets: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(mean, standard deviation, targets)``: the rules and messages of
    :func:`calipers.regression.check_gaussian`, and at least 2 rows."""
    G = check_gaussian(mean, variance=variance, std=std, targets=targets)
    if G.n_samples < 2:
        raise CalibrationInputError(f"the SKCE needs at least 2 rows; got {G.n_samples}")
    return G.mean, G.std, G.targets


#: Length scales whose square stays a normal float64 far from overflow use the plain
#: formulas (bit for bit as before); outside, a scaled form (``_ORDINARY_SCALES``).
_ORDINARY_SCALES = (1e-150, 1e150)


def _ordinary(ls: float) -> bool:
    return _ORDINARY_SCALES[0] <= ls <= _ORDINARY_SCALES[1]


def _expected_gaussian_kernel(mu: Any, s2: Any, a: Any, ls: float) -> Any:
    """``E_{Z~N(mu, s2)} exp(-(Z - a)^2 / (2 ls^2))`` in closed form (broadcasting).

    For a length scale outside ``[1e-150, 1e150]``, where ``ls**2`` under- or
    overflows, the same quantity scaled by ``c = max(ls, sqrt(s2))``:
    ``(ls / c) / sqrt((ls / c)**2 + s2 / c**2) * exp(-((mu - a) / c)**2 / (2 ((ls /
    c)**2 + s2 / c**2)))``, whose denominators lie in [1, 2]: it tends to 0 as
    ``ls -> 0`` (the kernel becomes an indicator of a point, which a continuous
    Z hits with probability 0) and to 1 as ``ls -> inf``.
    """
    if not _ordinary(ls):
        with np.errstate(over="ignore", under="ignore"):
            c = np.maximum(ls, np.sqrt(s2))
            lc = ls / c
            d = lc * lc + s2 / (c * c)
            e = (mu - a) / c
            return lc / np.sqrt(d) * np.exp(-(e * e) / (2.0 * d))
    v = ls * ls + s2
    return ls / np.sqrt(v) * np.exp(-((mu - a) ** 2) / (2.0 * v))


def _prediction_parts(
    mu_r: Any, sd_r: Any, mu_c: Any, sd_c: Any, ls: float, lp: float
) -> tuple[Any, Any]:
    """``k_P`` and ``k_P E k_Y(Z, Z')`` of every (row, column) pair: the target-free parts of h."""
    kp = np.exp(-np.sqrt((mu_r - mu_c) ** 2 + (sd_r - sd_c) ** 2) / lp)
    return kp, kp * _expected_gaussian_kernel(mu_r, sd_r**2 + sd_c**2, mu_c, ls)


def _target_part(mu_r: Any, sd_r: Any, y_r: Any, mu_c: Any, sd_c: Any, y_c: Any, ls: float) -> Any:
    """``k_Y(y, y') - E_{Z~P} k_Y(Z, y') - E_{Z'~P'} k_Y(y, Z')`` of every pair."""
    if _ordinary(ls):
        out = np.exp(-((y_r - y_c) ** 2) / (2.0 * ls * ls))
    else:  # (y - y') / ls first: the indicator 1{y = y'} as ls -> 0, 1 as ls -> inf
        with np.errstate(over="ignore", under="ignore"):
            e = (y_r - y_c) / ls
            out = np.exp(-0.5 * (e * e))
    out -= _expected_gaussian_kernel(mu_r, sd_r**2, y_c, ls)
    out -= _expected_gaussian_kernel(mu_c, sd_c**2, y_r, ls)
    return out


def _pair_sums(mu: np.ndarray, sd: np.ndarray, Y: np.ndarray, ls: float, lp: float) -> np.ndarray:
    """``sum_{i<j} h_ij`` for each row of ``Y`` (shape (B, n): B sets of targets).

    Row blocks of the upper triangle (columns ``j >= a`` of rows ``a..b``), on a
    thread pool; the target-free factors of a block are formed once for all B.
    """
    n = mu.shape[0]
    rows = max(1, min(n, _TILE // n))

    def block(a: int) -> np.ndarray:
        b = min(n, a + rows)
        r, c = slice(a, b), slice(a, n)
        kp, kpc = _prediction_parts(mu[r, None], sd[r, None], mu[None, c], sd[None, c], ls, lp)
        keep = np.triu(np.ones((b - a, n - a), dtype=bool), k=1)  # pairs i < j only
        kp *= keep
        base = float(kpc[keep].sum())
        out = np.empty(Y.shape[0])
        for t in range(Y.shape[0]):
            y = Y[t]
            T = _target_part(
                mu[r, None], sd[r, None], y[r, None], mu[None, c], sd[None, c], y[None, c], ls
            )
            out[t] = base + float(np.einsum("ij,ij->", kp, T))
        return out

    return np.asarray(np.sum(thread_map(block, range(0, n, rows)), axis=0), dtype=np.float64)


def _block_values(
    mu: np.ndarray, sd: np.ndarray, y: np.ndarray, m: int, ls: float, lp: float
) -> np.ndarray:
    """Unbiased SKCE of each block of ``m`` consecutive rows (incomplete last block dropped)."""
    nb = mu.shape[0] // m
    M, S, Yb = (v[: nb * m].reshape(nb, m) for v in (mu, sd, y))
    r = (M[:, :, None], S[:, :, None], Yb[:, :, None])
    c = (M[:, None, :], S[:, None, :], Yb[:, None, :])
    kp, kpc = _prediction_parts(r[0], r[1], c[0], c[1], ls, lp)
    H = kp * _target_part(r[0], r[1], r[2], c[0], c[1], c[2], ls) + kpc
    off = H.sum(axis=(1, 2)) - np.trace(H, axis1=1, axis2=2)
    return np.asarray(off / (m * (m - 1)), dtype=np.float64)


def _check_block_size(block_size: Any, n: int, minimum_blocks: int) -> int:
    m = check_integer(block_size, "block_size", minimum=2)
    if n // m < minimum_blocks:
        raise CalibrationInputError(
            f"block_size must be an integer >= 2 that leaves at least {minimum_blocks} "
            f"block(s) of the n={n} rows; got {block_size!r}"
        )
    return m


def _length_scales(length_scale: Any, prediction_length_scale: Any) -> tuple[float, float]:
    ls = check_positive(length_scale, "length_scale")
    if prediction_length_scale is None:
        return ls, ls
    return ls, check_positive(prediction_length_scale, "prediction_length_scale")


def _check_unbiased_cost(n: int, extra_target_sets: int = 0) -> None:
    per_pair = _SECONDS_PER_PAIR + extra_target_sets * _SECONDS_PER_PAIR_RESAMPLE
    check_quadratic_cost(
        n,
        1,
        seconds_per_pair=per_pair,
        what="the unbiased Gaussian SKCE estimator",
        alternative="estimator='block' (linear time, Widmann et al. 2021)",
    )


@spread_by_name
def gaussian_skce(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    estimator: Literal["unbiased", "block"] = "unbiased",
    block_size: int = 2,
    length_scale: float = 1.0,
    prediction_length_scale: float | None = None,
) -> float:
    """Squared kernel calibration error of Gaussian predictions (Widmann et al. 2021).

    The SKCE of Widmann et al. 2021 (§2-3; for regression also Gruber &
    Buettner 2022, §2) with the tensor-product kernel
    ``k((P, y), (P', y')) = exp(-W_2(P, P') / l_P) exp(-(y - y')^2 / (2 l^2))``
    and the closed-form Gaussian expectations of the module docstring:

        h_ij = k_P(P_i, P_j) [k_Y(y_i, y_j) - m_i(y_j) - m_j(y_i) + c_ij],
        m_i(a) = l / sqrt(l^2 + s_i^2) exp(-(mu_i - a)^2 / (2 (l^2 + s_i^2))),
        c_ij = l / sqrt(l^2 + s_i^2 + s_j^2) exp(-(mu_i - mu_j)^2 / (2 (l^2 + s_i^2 + s_j^2))),

    with ``W_2(P_i, P_j)^2 = (mu_i - mu_j)^2 + (s_i - s_j)^2``. Under calibration
    ``E h = 0``; the SKCE is >= 0 and 0 only for a calibrated model.

    Parameters
    ----------
    mean : array-like or torch.Tensor of shape (n,), or GaussianPredictions
        Predicted means ``mu_i`` (units of the targets); a
        :class:`calipers.regression.GaussianPredictions` carries the
        variances and targets (then pass neither).
    variance : array-like of shape (n,), optional
        Predicted variances ``s_i^2`` (squared units of the targets), > 0.
        Give exactly one of ``variance`` and ``std``.
    targets : array-like of shape (n,)
        Observed targets ``y_i``.
    std : array-like of shape (n,), optional
        Predicted standard deviations ``s_i`` instead of ``variance``.
    estimator : {"unbiased", "block"}, default "unbiased"
        ``"unbiased"``: mean of ``h_ij`` over all pairs ``i < j`` (a U-statistic,
        can be negative), O(n^2) time in row blocks of O(n) memory; refused
        (with a message naming ``estimator='block'``) when its estimated time
        exceeds 1 hour, about n = 245 000 on a 2-core machine (60 ns a pair
        measured), and warned about past 30 s (about n = 22 000). ``"block"``: mean of the unbiased
        estimates of consecutive blocks of ``block_size`` rows, an incomplete
        last block dropped, O(n) time.
    block_size : int, default 2
        Rows per block of the block estimator (2 <= block_size <= n).
    length_scale : float, default 1.0
        ``l`` of the Gaussian kernel on targets (units of the targets). Any
        positive float: outside ``[1e-150, 1e150]``, where ``l**2`` under- or
        overflows, the kernels are evaluated in a scaled form and tend to their
        limits (``l -> 0``: the indicator ``1{y = y'}``, with expectations 0 under
        the continuous predictions; ``l -> inf``: 1 everywhere, SKCE 0).
    prediction_length_scale : float, optional
        ``l_P`` of the exponential kernel on the Wasserstein distance (units of
        the targets); default: ``length_scale``.

    Returns
    -------
    float
        The SKCE estimate (squared units of the kernel, which is dimensionless).

    Raises
    ------
    CalibrationInputError
        Inputs refused by :func:`calipers.regression.check_gaussian` (not 1-D
        real and finite, different lengths, a variance or std <= 0), fewer
        than 2 rows, a bad estimator, block size or length scale.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression.skce import gaussian_skce
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=2000)
    >>> y = mu + rng.normal(size=2000)                 # the truth is N(mu, 1)
    >>> round(gaussian_skce(mu, variance=np.ones(2000), targets=y), 4)   # calibrated: about 0
    -0.0001
    >>> round(gaussian_skce(mu, variance=np.full(2000, 0.25), targets=y), 4)   # overconfident
    0.0133
    >>> round(gaussian_skce(mu, variance=np.full(2000, 0.25), targets=y, estimator="block", block_size=10), 4)
    0.0156
    """
    if estimator not in ("unbiased", "block"):
        raise CalibrationInputError(f"estimator must be 'unbiased' or 'block'; got {estimator!r}")
    ls, lp = _length_scales(length_scale, prediction_length_scale)
    mu, sd, y = _check_gaussian(mean, variance, std, targets)
    n = mu.shape[0]
    if estimator == "block":
        m = _check_block_size(block_size, n, 1)
        return float(np.mean(_block_values(mu, sd, y, m, ls, lp)))
    _check_unbiased_cost(n)
    return float(_pair_sums(mu, sd, y[None, :], ls, lp)[0] * 2.0 / (n * (n - 1)))


@spread_by_name
def gaussian_skce_test(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    method: Literal["consistency", "block"] = "consistency",
    block_size: int = 2,
    length_scale: float = 1.0,
    prediction_length_scale: float | None = None,
    n_resamples: int = 200,
    seed: int | np.random.Generator | None = 0,
) -> CalibrationTestResult:
    """Test of calibration of Gaussian predictions with the SKCE (Widmann et al. 2021).

    The kernel and estimators are those of :func:`gaussian_skce`. Two tests:

    * ``method="consistency"`` (default) — consistency resampling (Bröcker &
      Smith 2007; Vaicenavicius et al. 2019; used with this kernel by
      Widmann et al. 2021): under H0 each target is a draw from its own
      prediction, so conditionally on the predictions the null law of the
      unbiased estimator is simulated exactly by drawing
      ``y*_i ~ N(mu_i, s_i^2)`` (seeded) and recomputing it. The
      predictions are kept fixed (not resampled): the test is then exact
      for any n. p-value ``(1 + #{T* >= T}) / (1 + n_resamples)``. Cost
      O(n_resamples n^2) time (the target-free kernel factors are computed
      once per row block), O(n) memory.
    * ``method="block"`` — the asymptotic normal test of the block
      estimator (Widmann et al. 2021, as Widmann et al. 2019 §5 for
      classification): the block estimates ``v_1..v_B`` are i.i.d. with mean
      0 under H0, so ``z = mean(v) / (std(v, ddof=1) / sqrt(B))`` is
      asymptotically N(0, 1) and the p-value is ``1 - Phi(z)``. O(n) time,
      but little power with small blocks.

    Parameters
    ----------
    mean, variance, targets, std : array-like of shape (n,)
        As for :func:`gaussian_skce` (a GaussianPredictions as ``mean``, or
        ``std`` in place of ``variance``).
    method : {"consistency", "block"}, default "consistency"
    block_size : int, default 2
        Rows per block of the block test; at least 2 blocks are needed.
    length_scale : float, default 1.0
        ``l`` of the kernel on targets (units of the targets).
    prediction_length_scale : float, optional
        ``l_P`` of the kernel on predictions; default ``length_scale``.
    n_resamples : int, default 200
        Draws of the targets for ``method="consistency"``; at most
        ``calipers.validation.MAX_RESAMPLES`` (10**6).
    seed : int, Generator or None, default 0
        Seed of ``np.random.default_rng`` for ``method="consistency"``.

    Returns
    -------
    CalibrationTestResult

    Notes
    -----
    Measured (``mu ~ N(0, 1)``, ``v ~ U(0.5, 2)``, ``y ~ N(mu, v)``; 40 seeded
    replications, 5% level, the default length scales). Calibrated
    predictions: rejection rate of the block test at n = 500 is 2.5% with
    blocks of 2 and 0% with blocks of 10 or 25 (few blocks make the normal
    approximation conservative); the consistency test is exact by
    construction. Predicted standard deviation half the true one, n = 500:
    the block test rejects 45% of the time with blocks of 2, 97.5% with
    blocks of 10 and 100% with blocks of 25; the consistency test (99
    resamples) rejected in all of 10 replications.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression.skce import gaussian_skce_test
    >>> rng = np.random.default_rng(1)
    >>> mu = rng.normal(size=300)
    >>> y = mu + rng.normal(size=300)
    >>> gaussian_skce_test(mu, variance=np.ones(300), targets=y, n_resamples=99).p_value > 0.05
    True
    >>> gaussian_skce_test(mu, variance=np.full(300, 0.25), targets=y, n_resamples=99).p_value
    0.01
    >>> r = gaussian_skce_test(mu, variance=np.full(300, 0.25), targets=y, method="block")
    >>> r.p_value < 0.05
    True
    """
    if method not in ("consistency", "block"):
        raise CalibrationInputError(f"method must be 'consistency' or 'block'; got {method!r}")
    ls, lp = _length_scales(length_scale, prediction_length_scale)
    B = check_size(n_resamples, "n_resamples", "MAX_RESAMPLES")
    mu, sd, y = _check_gaussian(mean, variance, std, targets)
    n = mu.shape[0]
    if method == "block":
        m = _check_block_size(block_size, n, 2)
        return block_test(_block_values(mu, sd, y, m, ls, lp), "block")
    _check_unbiased_cost(n, B)
    rng = np.random.default_rng(seed)
    Y = np.vstack([y[None, :], mu + sd * rng.standard_normal((B, n))])
    sums = _pair_sums(mu, sd, Y, ls, lp) * 2.0 / (n * (n - 1))
    observed, null = float(sums[0]), sums[1:]
    tol = 1e-12 * max(1.0, abs(observed))
    pval = float((1 + np.count_nonzero(null >= observed - tol)) / (1 + B))
    return CalibrationTestResult(observed, pval, null, B, "consistency")
