"""Calibration diagnostics for every kind of predictive distribution.

* Gaussian arrays give the numbers of the former Gaussian-only code bit for bit:
  the former implementations are kept below as oracles (``_old_*``, copied from
  the code before the diagnostics took any kind);
* the randomised PIT (Czado, Gneiting & Held 2009) is uniform for calibrated
  discrete predictions, quantile sets and ensembles, and repeats with its seed;
* quantile sets, ensembles and parametric families are checked against values
  computed independently (counts, closed forms).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri

from calipers.regression import (
    Gaussian,
    Parametric,
    QuantileSet,
    SampleEnsemble,
    interval_coverage_error,
    pit_histogram,
    pit_values,
    quantile_calibration,
    quantile_calibration_curve,
    quantile_calibration_error,
    variance_calibration,
)
from calipers.validation import CalibrationInputError

# --------------------------------------------------------------------------- former code


def _old_pit_histogram(mu, var, y, w, B):  # type: ignore[no-untyped-def]
    u = np.asarray(ndtr((y - mu) / np.sqrt(var)), dtype=np.float64)
    w = np.ones(y.shape[0]) if w is None else w
    total = float(np.sum(w))
    idx = np.minimum((u * B).astype(np.int64), B - 1)
    counts = np.bincount(idx, weights=w, minlength=B).astype(np.float64)
    l1 = float(np.sum(np.abs(counts / total - 1.0 / B)))
    order = np.argsort(u, kind="stable")
    us = u[order]
    cdf_after = np.cumsum(w[order]) / total
    cdf_before = cdf_after - w[order] / total
    ks = float(max(np.max(cdf_after - us), np.max(us - cdf_before)))
    return counts, l1, ks


def _old_coverage(mu, var, y, w, lv):  # type: ignore[no-untyped-def]
    w = np.ones(y.shape[0]) if w is None else w
    total = float(np.sum(w))
    absz = np.abs(y - mu) / np.sqrt(var)
    half_width = ndtri((1.0 + lv) / 2.0)
    step = max(1, (1 << 24) // y.shape[0])
    coverage = np.empty(lv.shape[0])
    for a in range(0, lv.shape[0], step):
        inside = absz[None, :] <= half_width[a : a + step, None]
        coverage[a : a + step] = (inside @ w) / total
    return coverage


def _data(n: int, seed: int, ties: bool = False):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.3, 2.0, n)
    y = rng.normal(mu, 1.3 * sd)
    if ties:
        y[: n // 3] = mu[: n // 3]  # PIT exactly 0.5 in a third of the rows
    w = rng.uniform(0.0, 3.0, n) * rng.choice([1e-3, 1.0, 1e3], n)
    return mu, sd, y, w


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_pit_histogram_is_bit_identical_to_the_former_code(ties: bool, weighted: bool) -> None:
    mu, sd, y, w = _data(5000, 1, ties)
    w = w if weighted else None
    for B in (1, 10, 37):
        counts, l1, ks = _old_pit_histogram(mu, sd * sd, y, w, B)
        h = pit_histogram(mu, std=sd, targets=y, sample_weight=w, n_bins=B)
        np.testing.assert_array_equal(h.counts, counts)
        assert h.l1_distance == l1 and h.ks_statistic == ks
        g = pit_histogram(Gaussian(mu, std=sd), targets=y, sample_weight=w, n_bins=B)
        assert g.ks_statistic == ks and g.l1_distance == l1


@pytest.mark.parametrize("ties", [False, True])
def test_unweighted_coverage_is_bit_identical_to_the_former_code(ties: bool) -> None:
    mu, sd, y, _ = _data(3000, 2, ties)
    lv = np.concatenate([np.linspace(0.01, 0.98, 98), [0.5, 0.3]])  # unsorted, repeated
    q = quantile_calibration(mu, variance=sd * sd, targets=y, levels=lv)
    np.testing.assert_array_equal(q.coverage, _old_coverage(mu, sd * sd, y, None, lv))


def test_weighted_coverage_equals_the_former_code_to_rounding() -> None:
    # the former weighted sums came from a matrix product whose rounding depends on the
    # BLAS block shape; the new sums are pairwise sums between consecutive levels
    mu, sd, y, w = _data(3000, 3, True)
    lv = np.linspace(0.01, 0.98, 98)[::-1]
    q = quantile_calibration(mu, std=sd, targets=y, sample_weight=w, levels=lv)
    np.testing.assert_allclose(
        q.coverage, _old_coverage(mu, sd * sd, y, w, lv), rtol=1e-13, atol=1e-15
    )
    # against a direct sum per level
    absz = np.abs(y - mu) / sd
    direct = [np.sum(w[absz <= ndtri((1 + p) / 2)]) / np.sum(w) for p in lv]
    np.testing.assert_allclose(q.coverage, direct, rtol=1e-13, atol=1e-15)


def test_gaussian_object_and_arrays_agree_everywhere() -> None:
    mu, sd, y, w = _data(2000, 4)
    G = Gaussian(mu, std=sd)
    np.testing.assert_array_equal(pit_values(G, targets=y), pit_values(mu, std=sd, targets=y))
    a = quantile_calibration(G, targets=y, sample_weight=w)
    b = quantile_calibration(mu, std=sd, targets=y, sample_weight=w)
    np.testing.assert_array_equal(a.coverage, b.coverage)
    a2 = quantile_calibration_curve(G, targets=y, sample_weight=w)
    b2 = quantile_calibration_curve(mu, std=sd, targets=y, sample_weight=w)
    np.testing.assert_array_equal(a2.observed, b2.observed)
    a3 = variance_calibration(G, targets=y, sample_weight=w)
    b3 = variance_calibration(mu, std=sd, targets=y, sample_weight=w)
    for field in ("bin_weight", "bin_mse", "bin_rmv", "ence", "mse", "se_var_ratio_std"):
        np.testing.assert_array_equal(getattr(a3, field), getattr(b3, field))


# --------------------------------------------------------------------------- randomised PIT


def test_randomised_pit_of_calibrated_counts_is_uniform_and_repeats() -> None:
    rng = np.random.default_rng(5)
    n = 20000
    mu = rng.uniform(0.3, 6.0, n)
    y = rng.poisson(mu).astype(float)
    P = Parametric("poisson", mu=mu)
    u = pit_values(P, targets=y)
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    # the plain PIT F(y) of counts is far from uniform
    assert stats.kstest(P.cdf(y), "uniform").pvalue < 1e-10
    np.testing.assert_array_equal(u, pit_values(P, targets=y))  # default seed 0
    assert not np.array_equal(u, pit_values(P, targets=y, seed=1))
    # each u lies in [F(y-), F(y)]
    assert np.all(P.cdf_left(y) <= u) and np.all(u <= P.cdf(y))
    h = pit_histogram(P, targets=y)
    assert h.ks_statistic < 0.02


def test_pit_of_a_calibrated_quantile_set_and_ensemble_is_uniform() -> None:
    rng = np.random.default_rng(6)
    n = 20000
    mu = rng.normal(size=n)
    y = rng.normal(mu)
    levels = np.linspace(0.1, 0.9, 9)
    Q = QuantileSet(levels, mu[:, None] + stats.norm.ppf(levels)[None, :])
    assert pit_histogram(Q, targets=y).ks_statistic < 0.02
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, 7)))
    assert pit_histogram(S, targets=y).ks_statistic < 0.02
    # an ensemble twice too narrow: U-shaped rank histogram
    narrow = SampleEnsemble(mu[:, None] + 0.5 * rng.normal(size=(n, 7)))
    h = pit_histogram(narrow, targets=y, n_bins=4)
    assert h.counts[0] > 1.3 * h.counts[1] and h.counts[-1] > 1.3 * h.counts[2]


def test_seed_is_checked() -> None:
    with pytest.raises(CalibrationInputError, match="seed must be"):
        pit_values(Parametric("poisson", mu=[1.0]), targets=[0.0], seed=-1)
    g = np.random.default_rng(3)
    pit_values(Parametric("poisson", mu=[1.0]), targets=[0.0], seed=g)


# --------------------------------------------------------------------------- coverage, curve


def test_coverage_of_a_quantile_set_at_its_own_levels_counts_its_intervals() -> None:
    rng = np.random.default_rng(7)
    n = 500
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    q = np.sort(rng.normal(size=(n, 5)), axis=1)
    y = rng.normal(size=n)
    w = rng.uniform(size=n)
    Q = QuantileSet(levels, q)
    cov = quantile_calibration(Q, targets=y, sample_weight=w, levels=[0.5, 0.9])
    inside50 = (q[:, 1] <= y) & (y <= q[:, 3])
    inside90 = (q[:, 0] <= y) & (y <= q[:, 4])
    np.testing.assert_allclose(
        cov.coverage, [w[inside50].sum() / w.sum(), w[inside90].sum() / w.sum()], rtol=1e-14
    )
    curve = quantile_calibration_curve(Q, targets=y, levels=levels)
    np.testing.assert_array_equal(curve.observed, np.mean(y[:, None] <= q, axis=0))


def test_curve_of_counts_uses_the_randomised_pit() -> None:
    rng = np.random.default_rng(8)
    mu = rng.uniform(0.5, 4.0, 30000)
    y = rng.poisson(mu).astype(float)
    P = Parametric("poisson", mu=mu)
    c = quantile_calibration_curve(P, targets=y)
    np.testing.assert_allclose(c.observed, c.levels, atol=0.012)
    assert quantile_calibration_error(P, targets=y) < 19 * 2e-4


def test_coverage_of_an_ensemble_and_a_parametric_family() -> None:
    rng = np.random.default_rng(9)
    n = 400
    x = rng.normal(size=(n, 20))
    y = rng.normal(size=n)
    S = SampleEnsemble(x)
    got = quantile_calibration(S, targets=y, levels=[0.8]).coverage[0]
    lo = np.quantile(x, 0.1, axis=1)
    hi = np.quantile(x, 0.9, axis=1)
    assert got == np.mean((lo <= y) & (y <= hi))
    T = Parametric("student_t", df=4.0, loc=np.zeros(n), scale=1.0)
    got = quantile_calibration(T, targets=y, levels=[0.8]).coverage[0]
    c = stats.t(4.0).ppf(0.9)
    assert got == np.mean(np.abs(y) <= c)
    assert interval_coverage_error(T, targets=y, levels=[0.8]) == abs(got - 0.8)


# --------------------------------------------------------------------------- variance calibration


def test_variance_calibration_of_ensembles_and_families() -> None:
    rng = np.random.default_rng(10)
    n = 3000
    x = rng.normal(size=(n, 10)) * rng.uniform(0.5, 2.0, (n, 1))
    y = rng.normal(size=n)
    S = SampleEnsemble(x)
    v = variance_calibration(S, targets=y, n_bins=5)
    ref = variance_calibration(x.mean(axis=1), variance=x.var(axis=1), targets=y, n_bins=5)
    assert v.ence == ref.ence and v.se_var_ratio == ref.se_var_ratio
    P = Parametric("gamma", shape=np.full(n, 2.0), rate=np.full(n, 0.5))
    v = variance_calibration(P, targets=y)
    ref = variance_calibration(np.full(n, 4.0), variance=np.full(n, 8.0), targets=y, n_bins=15)
    np.testing.assert_allclose(v.mse_over_avg_var, ref.mse_over_avg_var, rtol=1e-14)
    Q = QuantileSet([0.1, 0.9], [[0.0, 1.0]])
    with pytest.raises(CalibrationInputError, match="QuantileSet .quantiles. states neither"):
        variance_calibration(Q, targets=[0.5], n_bins=1)
    T = Parametric("student_t", df=[2.0], loc=[0.0], scale=[1.0])
    with pytest.raises(
        CalibrationInputError, match="finite predicted variance > 0 .* row 0 is inf"
    ):
        variance_calibration(T, targets=[0.5], n_bins=1)


def test_the_pit_draws_are_not_the_uniforms_of_default_rng_of_the_same_seed() -> None:
    # data simulated with default_rng(0) and the PIT's default seed 0: the draws must not
    # be the same uniforms (they were the rates here, and the PIT looked miscalibrated)
    rng = np.random.default_rng(0)
    n = 5000
    rate = rng.uniform(0.5, 5.0, n)
    counts = rng.poisson(rate).astype(float)
    P = Parametric("poisson", mu=rate)
    assert pit_histogram(P, targets=counts).ks_statistic < 0.025
    lo, hi = P.pit_interval(counts)
    v = (pit_values(P, targets=counts) - lo) / (hi - lo)
    assert abs(np.corrcoef(v, rate)[0, 1]) < 0.05
    # a Generator is used as it is
    g = np.random.default_rng(4)
    u = pit_values(P, targets=counts, seed=g)
    np.testing.assert_array_equal(u, lo + np.random.default_rng(4).uniform(size=n) * (hi - lo))


def test_quantile_sets_default_to_their_own_levels() -> None:
    rng = np.random.default_rng(12)
    n = 300
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    q = np.sort(rng.normal(size=(n, 5)), axis=1)
    y = rng.normal(size=n)
    Q = QuantileSet(levels, q)
    c = quantile_calibration(Q, targets=y)
    assert c.levels.tolist() == [0.5, 0.9]
    np.testing.assert_array_equal(
        c.coverage,
        [
            np.mean((q[:, 1] <= y) & (y <= q[:, 3])),
            np.mean((q[:, 0] <= y) & (y <= q[:, 4])),
        ],
    )
    curve = quantile_calibration_curve(Q, targets=y)
    np.testing.assert_array_equal(curve.levels, levels)
    np.testing.assert_array_equal(curve.observed, np.mean(y[:, None] <= q, axis=0))
    # no symmetric pair: the default grid
    one_sided = QuantileSet([0.5, 0.9], q[:, [2, 4]])
    assert quantile_calibration(one_sided, targets=y).levels.shape == (19,)


def test_quantile_calibration_memory_does_not_grow_with_the_levels() -> None:
    # the former code held a (levels x n) comparison matrix in blocks of up to 2**24
    # entries (150 MB at 2e5 rows x 98 levels); now a few arrays of n values
    import tracemalloc

    mu, sd, y, w = _data(200_000, 13)
    lv = np.linspace(0.01, 0.98, 98)
    for weights in (None, w):
        tracemalloc.start()
        quantile_calibration(mu, std=sd, targets=y, levels=lv, sample_weight=weights)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 12 * 200_000 * 8, peak  # under 12 float64 arrays of n
