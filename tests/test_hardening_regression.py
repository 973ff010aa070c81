"""Hardening, second round: regression weights, the cost guard, extreme settings (issue 25).

Item 5: extreme row weights (1e308, 1e-320) go through the one weight check of
calipers (``calipers.validation.check_sample_weight``, rescaling by a power of
two), so every regression score is finite and weighted means are exact ratios;
the Gaussian NLL and DSS do not overflow where the score itself is finite.
Item 6: every size setting of the regression functions, verdicts, sweeps,
intervals and tests is checked against the named maxima of
``calipers.validation`` (``MAX_BINS``, ``MAX_POINTS``, ``MAX_RESAMPLES``,
``MAX_WORK``) and refused at once, naming the argument, the value and the
maximum. Item 10: extreme length scales and quantile levels give the correct
finite limit; levels that are not numbers and models that are not a mapping are
refused. Expected values are computed here independently (NumPy, SciPy,
exact fractions), never copied from the code's output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

import calipers as cp
from calipers.diagrams import pit_histogram_diagram_data
from calipers.inference.sweeps import default_sizes
from calipers.recalibration import QuantileRecalibration, VariancePlattScaling, VarianceScaling
from calipers.regression import (
    crps_decomposition,
    crps_gaussian,
    dawid_sebastiani,
    gaussian_nll,
    gaussian_nll_per_row,
    gaussian_score_decomposition,
    gini_half_mean_difference,
    pit_histogram,
    quantile_calibration,
)
from calipers.regression.skce import gaussian_skce, gaussian_skce_test
from calipers.validation import (
    MAX_BINS,
    MAX_RESAMPLES,
    CalibrationInputError,
    check_sample_weight,
    check_size,
    check_work,
)


def _data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    var = rng.uniform(0.5, 2.0, n)
    y = mu + 1.3 * np.sqrt(var) * rng.normal(size=n)
    return mu, var, y


# ----------------------------------------------------------------------------- item 5


def _nll_by_hand(mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(stats.norm.logpdf(y, loc=mu, scale=np.sqrt(var))))


def _dss_by_hand(mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.log(var) + (y - mu) ** 2 / var))


def _crps_by_hand(mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> float:
    s = np.sqrt(var)
    z = (y - mu) / s
    return float(
        np.mean(s * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi)))
    )


@pytest.mark.parametrize("w", [1e308, 1e-320])
@pytest.mark.parametrize(
    ("score", "by_hand"),
    [
        (gaussian_nll, _nll_by_hand),
        (dawid_sebastiani, _dss_by_hand),
        (crps_gaussian, _crps_by_hand),
    ],
)
def test_extreme_equal_weights_give_the_unweighted_score(
    w: float, score: Callable[..., float], by_hand: Callable[..., float]
) -> None:
    mu, var, y = _data()
    got = score(mu, variance=var, targets=y, sample_weight=np.full(mu.shape, w))
    assert math.isfinite(got)
    assert got == pytest.approx(by_hand(mu, var, y), rel=1e-13)


def _decomposition_numbers(mu: np.ndarray, var: np.ndarray, y: np.ndarray, w: Any) -> list[float]:
    """Every number of the weighted regression measures that depends on weights only by ratios."""
    c = crps_decomposition(mu, variance=var, targets=y, sample_weight=w, thresholds=60)
    g = gaussian_score_decomposition(mu, variance=var, targets=y, sample_weight=w)
    h = pit_histogram(mu, variance=var, targets=y, sample_weight=w, n_bins=7)
    q = quantile_calibration(mu, variance=var, targets=y, sample_weight=w)
    return [
        gaussian_nll(mu, variance=var, targets=y, sample_weight=w),
        dawid_sebastiani(mu, variance=var, targets=y, sample_weight=w),
        crps_gaussian(mu, variance=var, targets=y, sample_weight=w),
        gini_half_mean_difference(y, w),
        c.crps_grid,
        c.binned_crps,
        c.reliability,
        c.resolution,
        c.uncertainty,
        c.uncertainty_closed_form,
        g.score,
        g.uncertainty,
        g.sharpness,
        g.calibration,
        h.l1_distance,
        h.ks_statistic,
        *q.coverage.tolist(),
    ]


@pytest.mark.parametrize("k", [-1000, -300, -60, 60, 300, 1000])  # weights stay normal floats
def test_weights_times_a_power_of_two_give_exactly_the_same_numbers(k: int) -> None:
    mu, var, y = _data(300, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, 300)
    ref = _decomposition_numbers(mu, var, y, w)
    got = _decomposition_numbers(mu, var, y, w * 2.0**k)
    assert all(math.isfinite(v) for v in got)
    assert got == ref  # exact: a power of two changes only exponents


def test_weights_1e308_are_the_same_weights_scaled() -> None:
    mu, var, y = _data(300, seed=3)
    big = _decomposition_numbers(mu, var, y, np.full(300, 1e308))
    scaled = _decomposition_numbers(mu, var, y, np.full(300, 1e308 * 2.0**-1024))
    assert all(math.isfinite(v) for v in big)
    assert big == scaled
    plain = _decomposition_numbers(mu, var, y, None)
    np.testing.assert_allclose(big[:12], plain[:12], rtol=1e-12)


def test_gaussian_score_decomposition_with_1e308_weights_allocates_nothing_huge() -> None:
    mu, var, y = _data(500, seed=4)
    start = time.perf_counter()
    d = gaussian_score_decomposition(mu, variance=var, targets=y, sample_weight=np.full(500, 1e308))
    assert time.perf_counter() - start < 1.0
    assert d.n_groups == 25 and math.isfinite(d.calibration)


def test_tiny_weights_do_not_divide_by_zero() -> None:
    mu, var, y = _data(200, seed=5)
    w = np.full(200, 1e-320)
    c = crps_decomposition(mu, variance=var, targets=y, sample_weight=w, thresholds=40)
    ref = crps_decomposition(mu, variance=var, targets=y, thresholds=40)
    assert c.uncertainty_closed_form == pytest.approx(ref.uncertainty_closed_form, rel=1e-12)
    assert c.reliability == pytest.approx(ref.reliability, rel=1e-12)
    assert gini_half_mean_difference(y, w) == pytest.approx(gini_half_mean_difference(y), rel=1e-12)


@pytest.mark.parametrize("w", [1e308, 1e-320])
@pytest.mark.parametrize("cls", [QuantileRecalibration, VarianceScaling, VariancePlattScaling])
def test_recalibrators_fit_extreme_weights_like_unit_weights(w: float, cls: type) -> None:
    mu, var, y = _data(400, seed=6)
    weighted = cls().fit(mu, variance=var, targets=y, sample_weight=np.full(400, w))
    plain = cls().fit(mu, variance=var, targets=y)
    for key in cls.schema.state:
        np.testing.assert_allclose(getattr(weighted, key), getattr(plain, key), rtol=1e-9)


def test_regression_weights_use_the_one_weight_check() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"sample_weight must be finite; found inf at row 1"
    ):
        gaussian_nll([0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 0.0], sample_weight=[1, np.inf])
    with pytest.raises(CalibrationInputError, match="sample_weight has 3 rows but mean has 2"):
        gaussian_nll([0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 0.0], sample_weight=[1, 1, 1])
    assert check_sample_weight(np.array([1e308, 0.0]), 2).tolist() == [1e308 * 2.0**-1024, 0.0]


@pytest.mark.parametrize(
    ("mu", "var", "y"),
    [
        (0.0, 1e300, 1e300),  # (y - mu)**2 overflows, the score is 5e299
        (-1e300, 4e300, 1e300),
        (0.0, 1e-300, 1e-160),  # (y - mu)**2 underflows, z**2 is 1e-20
        (3.0, 2.0, -1.5),
    ],
)
def test_gaussian_nll_and_dss_at_extreme_scales(mu: float, var: float, y: float) -> None:
    nll = gaussian_nll([mu], variance=[var], targets=[y])
    dss = dawid_sebastiani([mu], variance=[var], targets=[y])
    sd = math.sqrt(var)
    assert nll == pytest.approx(-stats.norm.logpdf(y, loc=mu, scale=sd), rel=1e-14)
    z = y / sd - mu / sd
    assert dss == pytest.approx(math.log(var) + z * z, rel=1e-14)


def test_gaussian_nll_is_finite_where_only_z_squared_overflows() -> None:
    nll = gaussian_nll([-1e308], variance=[1.7e308], targets=[1e308])
    half = Fraction(1e308) ** 2 * 2 / Fraction(1.7e308)  # z**2 / 2 exactly
    assert nll == pytest.approx(float(half), rel=1e-14)


def test_ordinary_nll_is_bit_identical_to_the_textbook_formula() -> None:
    mu, var, y = _data(2000, seed=7)
    r = y - mu
    expected = 0.5 * (math.log(2.0 * math.pi) + np.log(var) + r * r / var)
    assert np.array_equal(gaussian_nll_per_row(mu, variance=var, targets=y), expected)


# ----------------------------------------------------------------------------- item 6


def _refused_fast(call: Callable[[], Any], *patterns: str) -> str:
    start = time.perf_counter()
    with pytest.raises(CalibrationInputError) as info:
        call()
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"took {elapsed:.2f} s"
    for pattern in patterns:
        assert pattern in str(info.value), (pattern, str(info.value))
    return str(info.value)


def _binary(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p).astype(int)


G = dict(zip(("mean", "variance", "targets"), _data(300, seed=8), strict=True))
BIG = str(10**9)
R = str(MAX_RESAMPLES)
NB = str(MAX_BINS)


@pytest.mark.parametrize(
    ("call", "patterns"),
    [
        (lambda: crps_decomposition(**G, thresholds=10**7), ("thresholds", str(10**7), NB)),
        (lambda: crps_decomposition(**G, n_bins=10**9), ("n_bins", BIG, NB)),
        (lambda: gaussian_score_decomposition(**G, n_bins=(10**9, 1)), ("n_bins[0]", BIG, NB)),
        (lambda: gaussian_score_decomposition(**G, n_bins=(1, 10**9)), ("n_bins[1]", BIG, NB)),
        (
            lambda: gaussian_score_decomposition(**G, n_bins=(2048, 2048)),
            ("n_bins", "2048 bins of the mean x 2048 bins of the variance", "4194304", NB),
        ),
        (lambda: pit_histogram(**G, n_bins=10**9), ("n_bins", BIG, NB)),
        (lambda: pit_histogram_diagram_data(**G, n_bins=10**9), ("n_bins", BIG, NB)),
        (lambda: gaussian_skce_test(**G, n_resamples=10**9), ("n_resamples", BIG, R)),
        (lambda: cp.verdict(cp.ece, *_binary(), n_resamples=10**9), ("n_resamples", BIG, R)),
        (lambda: cp.verdict(cp.ece, *_binary(), n_bootstrap=10**9), ("n_bootstrap", BIG, R)),
        (lambda: cp.test_size_sweep(cp.ece, *_binary(), n_repeats=10**9), ("n_repeats", BIG, R)),
        (
            lambda: cp.parameter_sweep(
                cp.ece, *_binary(), param="n_bins", values=[5, 10], n_resamples=10**9
            ),
            ("n_resamples", BIG, R),
        ),
        (
            lambda: cp.confidence_interval(cp.ece, *_binary(), n_resamples=10**9),
            ("n_resamples", BIG, R),
        ),
        (
            lambda: cp.inference.calibration_test.consistency_test(*_binary(), n_resamples=10**9),
            ("n_resamples", BIG, R),
        ),
        (lambda: default_sizes(1000, n_sizes=10**9), ("n_sizes", BIG)),
    ],
)
def test_sizes_beyond_the_maxima_are_refused_at_once(
    call: Callable[[], Any], patterns: tuple[str, ...]
) -> None:
    _refused_fast(call, *patterns, "maximum")


def test_products_of_sizes_are_refused_before_allocating() -> None:
    n = 2_000_000
    rng = np.random.default_rng(9)
    mu, y = rng.normal(size=n), rng.normal(size=n)
    levels = np.linspace(1e-3, 1 - 1e-3, 1_000_000)
    _refused_fast(
        lambda: quantile_calibration(mu, variance=np.ones(n), targets=y, levels=levels),
        "levels",
        f"{n} rows x 1000000 levels",
        str(2**40),
    )
    p, lab = _binary(1_000_000, seed=10)
    _refused_fast(
        lambda: cp.verdict(cp.ece, p, lab, n_resamples=MAX_RESAMPLES),
        "n_resamples",
        "1000000 rows x 2000000 label draws",
        str(2**40),
    )
    _refused_fast(
        lambda: cp.test_size_sweep([cp.ece, cp.brier], *_binary(), n_repeats=400_000),
        "n_repeats",
        "400000 repeats x 2 metrics x",
        R,
    )


def test_many_mean_bins_are_grouped_in_n_log_n() -> None:
    mu, var, y = _data(3000, seed=11)
    start = time.perf_counter()
    try:
        gaussian_score_decomposition(mu, variance=var, targets=y, n_bins=(MAX_BINS, 1))
    except CalibrationInputError as exc:  # groups of one row: refused, with a reason
        assert "use fewer bins" in str(exc)
    assert time.perf_counter() - start < 1.0
    start = time.perf_counter()
    d = gaussian_score_decomposition(mu, variance=var, targets=y, n_bins=(512, 2))
    assert time.perf_counter() - start < 1.0
    assert d.n_groups <= 1024


def test_the_guard_names_argument_value_and_maximum() -> None:
    assert check_size(MAX_RESAMPLES, "n_resamples", "MAX_RESAMPLES") == MAX_RESAMPLES
    msg = _refused_fast(lambda: check_size(MAX_BINS + 1, "n_bins", "MAX_BINS"))
    assert msg.startswith(f"n_bins = {MAX_BINS + 1} is more than the maximum {MAX_BINS}")
    assert "calipers.validation.MAX_BINS" in msg
    assert check_work("n", 3, [("rows", 10), ("draws", 7)]) == 70
    with pytest.raises(CalibrationInputError, match="n_resamples must be >= 19"):
        cp.verdict(cp.ece, *_binary(), n_resamples=5)


# ----------------------------------------------------------------------------- item 10


def _limit_skce(mu: np.ndarray, sd: np.ndarray, y: np.ndarray, lp: float) -> float:
    """The SKCE as the target length scale tends to 0: k_Y = 1{y = y'}, E k_Y = 0."""
    n = mu.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            if y[i] == y[j]:
                total += math.exp(-math.hypot(mu[i] - mu[j], sd[i] - sd[j]) / lp)
    return 2.0 * total / (n * (n - 1))


def test_gaussian_skce_tiny_length_scale_is_the_indicator_limit() -> None:
    rng = np.random.default_rng(12)
    mu = rng.normal(size=60)
    sd = rng.uniform(0.5, 2.0, 60)
    y = np.round(rng.normal(size=60))  # ties: the indicator kernel sees them
    expected = _limit_skce(mu, sd, y, 1.0)
    assert expected > 0
    for ls in (1e-300, 1e-200, 1e-160):
        got = gaussian_skce(mu, std=sd, targets=y, length_scale=ls, prediction_length_scale=1.0)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-100)
    same = gaussian_skce(mu, std=sd, targets=y, length_scale=1e-300)
    assert same == pytest.approx(_limit_skce(mu, sd, y, 1e-300), abs=1e-100)


def test_gaussian_skce_huge_length_scale_tends_to_zero() -> None:
    mu, var, y = _data(80, seed=13)
    for ls in (1e160, 1e300):
        got = gaussian_skce(
            mu, variance=var, targets=y, length_scale=ls, prediction_length_scale=1.0
        )
        assert abs(got) < 1e-12


def _quantile_by_fractions(rc: QuantileRecalibration, q: float) -> float:
    """``Phi^-1(R^-1(q))`` with ``R^-1(q)`` and its complement in exact arithmetic."""
    xk, yk = rc.knots_x_, rc.knots_y_
    k = int(np.searchsorted(yk, q, side="right")) - 1
    x0, x1, y0, y1 = (Fraction(float(v)) for v in (xk[k], xk[k + 1], yk[k], yk[k + 1]))
    x = x0 + (Fraction(q) - y0) * (x1 - x0) / (y1 - y0)
    if x > Fraction(1, 2):
        return float(-ndtri(float(1 - x)))
    return float(ndtri(float(x)))


@pytest.mark.parametrize("spread", [0.5, 2.0])
def test_quantile_recalibration_tail_levels_are_finite_and_exact(spread: float) -> None:
    rng = np.random.default_rng(14)
    mu, sd = rng.normal(size=4000), rng.uniform(0.5, 2.0, 4000)
    y = mu + spread * sd * rng.normal(size=4000)
    rc = QuantileRecalibration().fit(mu, std=sd, targets=y)
    levels = [1 - 1e-16, 1 - 2.2e-16, 1 - 1e-12, 0.999, 0.9, 0.3]
    got = rc.predict_quantile([0.0], std=[1.0], q=levels)[0]
    assert np.all(np.isfinite(got)) and np.all(np.diff(got) < 0)
    for g, q in zip(got, levels, strict=True):
        assert g == pytest.approx(_quantile_by_fractions(rc, q), rel=1e-13)
    tiny = rc.predict_quantile([0.0], std=[1.0], q=[5e-324, 1e-300, 1e-16])[0]
    assert np.all(np.isfinite(tiny)) and np.all(np.diff(tiny) > 0) and -40 < tiny[0] < -37


def test_ordinary_quantile_levels_are_bit_identical() -> None:
    mu, var, y = _data(2000, seed=15)
    rc = QuantileRecalibration().fit(mu, variance=var, targets=y)
    q = np.linspace(0.01, 0.6, 60)
    x = np.interp(q, rc.knots_y_, rc.knots_x_)
    assert np.all(x <= 1 - math.exp(-2.0))
    got = rc.predict_quantile([1.5], variance=[4.0], q=q)[0]
    assert np.array_equal(got, 1.5 + 2.0 * ndtri(x))


@pytest.mark.parametrize("q", ["0.5", ["0.1", "0.9"], b"0.5", True, [0.5, None], {"q": 0.5}])
def test_quantile_levels_must_be_numbers(q: Any) -> None:
    rc = VarianceScaling().fit([0.0, 1.0, 2.0], variance=[1.0, 1.0, 1.0], targets=[0.5, 0.2, 2.9])
    with pytest.raises(CalibrationInputError, match="q must be a probability level"):
        rc.predict_quantile([0.0], variance=[1.0], q=q)


def test_quantile_levels_that_round_to_one_are_refused() -> None:
    rc = VarianceScaling().fit([0.0, 1.0, 2.0], variance=[1.0, 1.0, 1.0], targets=[0.5, 0.2, 2.9])
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        rc.predict_quantile([0.0], variance=[1.0], q=1 - 1e-17)  # == 1.0 in float64
    with pytest.raises(CalibrationInputError, match="level must be a probability level"):
        rc.predict_interval([0.0], variance=[1.0], level="0.9")


@pytest.mark.parametrize(
    "models",
    [
        [{"mean": [0.0, 1.0], "std": [1.0, 1.0], "targets": [0.0, 1.0]}],
        ({"mean": [0.0, 1.0], "std": [1.0, 1.0], "targets": [0.0, 1.0]},),
        "net",
        np.zeros(3),
    ],
)
def test_regression_report_needs_a_mapping(models: Any) -> None:
    with pytest.raises(CalibrationInputError, match="models must be a mapping of model name"):
        cp.regression_report(models)
