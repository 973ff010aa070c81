"""Miscalibration area, mean absolute / RMS calibration error, group calibration, and
the CRPS / log score dispatchers, for every kind of predictive distribution.

Hand-computed oracles (brute-force loops over rows and levels, the exact area
between piecewise-linear curves) run everywhere; uncertainty-toolbox is the
oracle to 1e-12 (in fact exact) for Gaussian predictions when installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

from calipers.regression import (
    Gaussian,
    Parametric,
    QuantileSet,
    SampleEnsemble,
    adversarial_group_calibration,
    calibration_by_group,
    calibration_proportions,
    crps,
    crps_gaussian_per_row,
    crps_per_row,
    gaussian_nll,
    gaussian_nll_per_row,
    log_score,
    log_score_per_row,
    mean_absolute_calibration_error,
    miscalibration_area,
    pit_values,
    root_mean_squared_calibration_error,
)
from calipers.validation import CalibrationInputError


def _data(n: int, seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, n)
    y = rng.normal(mu + 0.3, 1.4 * sd)
    y[:3] = mu[:3]  # residual exactly 0
    return mu, sd, y


def _brute_observed(mu, sd, y, p, proportion, form):  # type: ignore[no-untyped-def]
    """The definition, one level and one row at a time."""
    out = []
    for q in p:
        c = 0
        for m, s, t in zip(mu, sd, y, strict=True):
            r = (m - t) / s
            if proportion == "quantile":
                c += r <= ndtri(q)
            elif form == "area":
                c += abs(m - t) / s <= ndtri(0.5 + q / 2)
            else:
                c += ndtri(0.5 - q / 2) <= r <= ndtri(0.5 + q / 2)
        out.append(c / len(y))
    return np.array(out)


def _exact_area(x, a, b):  # type: ignore[no-untyped-def]
    """int |b(x) - a(x)| dx for piecewise-linear a, b on the knots x (closed form per piece)."""
    total = 0.0
    for i in range(len(x) - 1):
        h = x[i + 1] - x[i]
        dl, dr = b[i] - a[i], b[i + 1] - a[i + 1]
        if dl * dr >= 0:
            total += abs(dl + dr) / 2 * h
        else:
            total += (dl * dl + dr * dr) / (2 * abs(dl - dr)) * h
    return total


@pytest.mark.parametrize("proportion", ["interval", "quantile"])
@pytest.mark.parametrize("n_levels", [2, 11, 100])
def test_gaussian_numbers_equal_the_definitions(proportion: str, n_levels: int) -> None:
    mu, sd, y = _data(120, 1)
    p = np.linspace(0, 1, n_levels)
    lists = _brute_observed(mu, sd, y, p, proportion, "lists")
    area_obs = _brute_observed(mu, sd, y, p, proportion, "area")
    c = calibration_proportions(mu, std=sd, targets=y, n_levels=n_levels, proportion=proportion)
    np.testing.assert_array_equal(c.observed, lists)
    mace = mean_absolute_calibration_error(
        mu, std=sd, targets=y, n_levels=n_levels, proportion=proportion
    )
    rmsce = root_mean_squared_calibration_error(
        mu, std=sd, targets=y, n_levels=n_levels, proportion=proportion
    )
    assert mace == pytest.approx(np.mean(np.abs(p - lists)), abs=1e-15)
    assert rmsce == pytest.approx(np.sqrt(np.mean((p - lists) ** 2)), abs=1e-15)
    area = miscalibration_area(mu, std=sd, targets=y, n_levels=n_levels, proportion=proportion)
    assert area == pytest.approx(_exact_area(p, p, area_obs), abs=1e-14)


@pytest.mark.parametrize("proportion", ["interval", "quantile"])
@pytest.mark.parametrize("vectorized", [False, True])
def test_gaussian_numbers_equal_uncertainty_toolbox(proportion: str, vectorized: bool) -> None:
    ut = pytest.importorskip("uncertainty_toolbox.metrics_calibration")
    for n, seed in ((60, 2), (5000, 3)):
        mu, sd, y = _data(n, seed)
        for nb in (100, 13):
            kw = dict(n_levels=nb, proportion=proportion)
            ut_kw = dict(num_bins=nb, prop_type=proportion, vectorized=vectorized)
            a = miscalibration_area(mu, std=sd, targets=y, **kw)
            assert a == pytest.approx(ut.miscalibration_area(mu, sd, y, **ut_kw), abs=1e-12)
            m = mean_absolute_calibration_error(mu, std=sd, targets=y, **kw)
            assert m == pytest.approx(
                ut.mean_absolute_calibration_error(mu, sd, y, **ut_kw), abs=1e-12
            )
            r = root_mean_squared_calibration_error(mu, std=sd, targets=y, **kw)
            assert r == pytest.approx(
                ut.root_mean_squared_calibration_error(mu, sd, y, **ut_kw), abs=1e-12
            )


@pytest.mark.parametrize("cali_type", ["mean_abs", "root_mean_sq"])
@pytest.mark.parametrize("replace", [False, True])
def test_adversarial_group_calibration_equals_uncertainty_toolbox(
    cali_type: str, replace: bool
) -> None:
    ut = pytest.importorskip("uncertainty_toolbox.metrics_calibration")
    mu, sd, y = _data(150, 4)
    np.random.seed(11)  # noqa: NPY002 - uncertainty-toolbox draws from the global RandomState
    want = ut.adversarial_group_calibration(
        mu,
        sd,
        y,
        cali_type=cali_type,
        draw_with_replacement=replace,
        num_trials=3,
        num_group_draws=4,
        num_group_bins=5,
    )
    got = adversarial_group_calibration(
        mu,
        std=sd,
        targets=y,
        cali_type=cali_type,
        draw_with_replacement=replace,
        num_trials=3,
        num_group_draws=4,
        num_group_bins=5,
        seed=11,
    )
    np.testing.assert_allclose(got.score_mean, want.score_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.score_stderr, want.score_stderr, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.group_size, want.group_size)


def test_adversarial_group_calibration_by_hand() -> None:
    # with groups of all rows (fraction 1, no replacement) every draw is a permutation:
    # the error is the overall one, and the spread over trials is 0
    mu, sd, y = _data(80, 5)
    a = adversarial_group_calibration(
        mu, std=sd, targets=y, num_group_bins=2, num_trials=3, num_group_draws=2, seed=0
    )
    overall = mean_absolute_calibration_error(mu, std=sd, targets=y)
    assert a.score_mean[-1] == pytest.approx(overall, abs=1e-15)
    assert a.score_stderr[-1] == pytest.approx(0.0, abs=1e-15)
    # groups of 2 rows: the worst of 2 draws is at least the best possible for 2 rows
    assert a.score_mean[0] >= overall
    with pytest.raises(CalibrationInputError, match="cali_type"):
        adversarial_group_calibration(mu, std=sd, targets=y, cali_type="max")
    with pytest.raises(CalibrationInputError, match="RandomState"):
        adversarial_group_calibration(mu, std=sd, targets=y, seed=None)
    big = np.zeros(10**6)
    with pytest.raises(CalibrationInputError, match="drawn rows, more than the maximum"):
        adversarial_group_calibration(
            big, std=big + 1, targets=big, num_trials=1000, num_group_draws=1000
        )


def test_other_kinds_read_the_pit() -> None:
    rng = np.random.default_rng(6)
    n = 400
    mu = rng.normal(size=n)
    y = rng.normal(mu, 1.5)
    P = Parametric("normal", loc=mu, scale=np.ones(n))
    u = P.cdf(y)
    p = np.linspace(0, 1, 21)
    want = [np.mean(((1 - q) / 2 <= u) & (u <= (1 + q) / 2)) for q in p]
    c = calibration_proportions(P, targets=y, n_levels=21)
    np.testing.assert_array_equal(c.observed, want)
    want_q = [np.mean(1 - u <= q) for q in p]
    cq = calibration_proportions(P, targets=y, n_levels=21, proportion="quantile")
    np.testing.assert_array_equal(cq.observed, want_q)
    # a normal family and Gaussian arrays agree (up to the comparisons at the grid's ends)
    g = mean_absolute_calibration_error(mu, std=np.ones(n), targets=y, n_levels=21)
    assert mean_absolute_calibration_error(P, targets=y, n_levels=21) == pytest.approx(g, abs=2 / n)
    # an ensemble: the randomised rank PIT, seeded
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, 9)))
    u = pit_values(S, targets=y)
    want = [np.mean(((1 - q) / 2 <= u) & (u <= (1 + q) / 2)) for q in p]
    np.testing.assert_array_equal(calibration_proportions(S, targets=y, n_levels=21).observed, want)
    # a quantile set, calibrated: a small area
    lv = np.linspace(0.05, 0.95, 19)
    y2 = rng.normal(mu)
    Q = QuantileSet(lv, mu[:, None] + stats.norm.ppf(lv)[None, :])
    assert miscalibration_area(Q, targets=y2) < 0.05


def test_weights_count_as_repeated_rows() -> None:
    mu, sd, y = _data(50, 7)
    k = np.arange(50) % 3 + 1
    rep = np.repeat(np.arange(50), k)
    for f in (miscalibration_area, mean_absolute_calibration_error):
        a = f(mu, std=sd, targets=y, sample_weight=k.astype(float))
        b = f(mu[rep], std=sd[rep], targets=y[rep])
        assert a == pytest.approx(b, abs=1e-14)


def test_calibration_by_group_labels_and_features() -> None:
    rng = np.random.default_rng(8)
    n = 600
    x = rng.uniform(-1, 1, n)
    mu = np.zeros(n)
    # calibrated for x < 0, twice too narrow for x >= 0
    y = rng.normal(0.0, np.where(x < 0, 1.0, 2.0))
    g = calibration_by_group(mu, std=np.ones(n), targets=y, groups=np.where(x < 0, "left", "right"))
    assert g.groups == ["left", "right"] and g.worst == "right"
    left = mean_absolute_calibration_error(mu[x < 0], std=np.ones(n)[x < 0], targets=y[x < 0])
    assert g.error[0] == pytest.approx(left, abs=1e-15)
    assert g.weight.tolist() == [np.sum(x < 0), np.sum(x >= 0)]
    f = calibration_by_group(mu, std=np.ones(n), targets=y, features=x, n_feature_bins=4)
    assert f.groups == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert f.worst in [(0, 2), (0, 3)]
    assert f.bounds is not None and f.bounds[0, 0] == x.min() and f.bounds[-1, 1] == x.max()
    assert f.weight.tolist() == [150.0] * 4
    with pytest.raises(CalibrationInputError, match="exactly one of groups"):
        calibration_by_group(mu, std=np.ones(n), targets=y)
    with pytest.raises(CalibrationInputError, match="one label per row"):
        calibration_by_group(mu, std=np.ones(n), targets=y, groups=[1, 2])


def test_crps_and_log_score_dispatch() -> None:
    mu, sd, y = _data(30, 9)
    np.testing.assert_array_equal(
        crps_per_row(mu, std=sd, targets=y), crps_gaussian_per_row(mu, std=sd, targets=y)
    )
    np.testing.assert_array_equal(
        crps_per_row(Gaussian(mu, std=sd), targets=y), crps_gaussian_per_row(mu, std=sd, targets=y)
    )
    np.testing.assert_array_equal(
        log_score_per_row(mu, std=sd, targets=y), gaussian_nll_per_row(mu, std=sd, targets=y)
    )
    w = np.arange(1.0, 31.0)
    assert log_score(mu, std=sd, targets=y, sample_weight=w) == gaussian_nll(
        mu, std=sd, targets=y, sample_weight=w
    )
    # Poisson: -log pmf by hand
    assert log_score_per_row(Parametric("poisson", mu=[2.0]), targets=[3.0])[0] == pytest.approx(
        -np.log(np.exp(-2.0) * 8 / 6), rel=1e-14
    )
    S = SampleEnsemble([[0.0, 2.0], [1.0, 1.0]])
    assert crps(S, targets=[1.0, 1.0], sample_weight=[3.0, 1.0]) == 0.375
    # fair estimator: E|X - y| - E|X - X'| / 2 with the k (k - 1) pairs: 1 - 2 / 2
    assert crps_per_row(S, targets=[1.0, 1.0], estimator="fair").tolist() == [0.0, 0.0]
    with pytest.raises(CalibrationInputError, match="has no density"):
        log_score(S, targets=[1.0, 1.0])
    with pytest.raises(CalibrationInputError, match="SampleEnsemble only"):
        crps(Gaussian([0.0], std=[1.0]), targets=[0.0], estimator="fair")
