"""Point forecasts of a functional: identification functions, bias, isotonic recalibration.

Hand-computed and closed-form values first (they run without the peers), then
model-diagnostics and scikit-learn as oracles (skipped when not installed).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from calipers.regression import (
    bias,
    bias_by_group,
    check_point_forecast,
    identification_function,
    isotonic_recalibration,
    t_reliability_curve,
)
from calipers.validation import CalibrationInputError

CASES = [("mean", None), ("median", None), ("quantile", 0.1), ("quantile", 0.8), ("expectile", 0.3)]


def _data(seed: int, n: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, size=n)
    z = 0.7 * y + rng.normal(size=n) + 0.3
    if ties:
        z = np.round(z)
        y = np.round(y * 2) / 2
    return z, y


# ------------------------------------------------------------ identification


def test_identification_by_hand() -> None:
    z = [0.0, 1.0, 2.0]
    y = [1.0, 1.0, 1.0]
    assert identification_function(z, y).tolist() == [-1.0, 0.0, 1.0]
    # quantile: 1{z >= y} - alpha; the tie z == y counts as "at or above"
    q = identification_function(z, y, functional="quantile", level=0.25)
    assert q.tolist() == [-0.25, 0.75, 0.75]
    assert identification_function(z, y, functional="median").tolist() == [-0.5, 0.5, 0.5]
    # expectile: 2 |1{z >= y} - tau| (z - y)
    e = identification_function(z, y, functional="expectile", level=0.25)
    assert e.tolist() == [2 * 0.25 * -1.0, 0.0, 2 * 0.75 * 1.0]
    # the 1/2-expectile is the mean
    zz, yy = _data(0, 50)
    np.testing.assert_array_equal(
        identification_function(zz, yy, functional="expectile", level=0.5),
        identification_function(zz, yy),
    )


def test_identification_vanishes_in_expectation_at_the_functional() -> None:
    # a constant forecast equal to the sample functional has mean V of 0
    rng = np.random.default_rng(3)
    y = rng.normal(size=1001)
    m = np.full_like(y, y.mean())
    assert abs(identification_function(m, y).mean()) < 1e-12
    med = np.full_like(y, np.median(y))  # odd n: a data value, half at or above
    assert abs(identification_function(med, y, functional="median").mean()) < 1e-3


# ---------------------------------------------------------------------- bias


def test_bias_is_the_one_sample_t_test() -> None:
    for functional, level in CASES:
        z, y = _data(1, 200)
        v = identification_function(z, y, functional=functional, level=level)
        b = bias(z, y, functional=functional, level=level, confidence_level=0.9)
        t = stats.ttest_1samp(v, 0.0)
        assert b.bias == pytest.approx(v.mean(), abs=1e-15)
        assert b.stderr == pytest.approx(stats.sem(v), rel=1e-12)
        assert b.t_statistic == pytest.approx(t.statistic, rel=1e-12)
        assert b.p_value == pytest.approx(t.pvalue, rel=1e-10)
        ci = t.confidence_interval(0.9)
        assert (b.ci_low, b.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)
        assert b.count == 200 and b.weight == 200.0


def test_bias_by_hand() -> None:
    b = bias([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0])
    # V = [-1, 1, 0, 1]: mean 1/4, sample variance 11/12, stderr sqrt(11/48)
    assert b.bias == 0.25
    assert b.stderr == pytest.approx(np.sqrt(11 / 48), rel=1e-15)
    # one row: no variance, no test
    one = bias([1.0], [0.0])
    assert one.bias == 1.0 and one.stderr == 0.0 and np.isnan(one.p_value)
    assert np.isnan(one.ci_low) and np.isnan(one.ci_high)
    # constant V over several rows: stderr 0, p-value 0
    c = bias([2.0, 3.0], [1.0, 2.0])
    assert c.stderr == 0.0 and c.p_value == 0.0 and c.ci_low == c.ci_high == 1.0


def test_bias_weights() -> None:
    z, y = _data(2, 30)
    w = np.arange(1, 31) % 3 + 1
    b = bias(z, y, sample_weight=w, functional="quantile", level=0.7)
    rep = bias(np.repeat(z, w), np.repeat(y, w), functional="quantile", level=0.7)
    assert b.bias == pytest.approx(rep.bias, abs=1e-15)
    v = identification_function(z, y, functional="quantile", level=0.7)
    s2 = np.sum(w * (v - b.bias) ** 2) / np.sum(w)
    assert b.stderr == pytest.approx(np.sqrt(s2 / 29), rel=1e-12)
    assert b.weight == float(w.sum()) and b.count == 30


def test_bias_by_group_equals_the_bias_of_each_group() -> None:
    z, y = _data(4, 300)
    g = np.array(["b", "a", "c"])[np.arange(300) % 3]
    r = bias_by_group(z, y, groups=g, functional="expectile", level=0.8)
    assert r.groups.tolist() == ["a", "b", "c"]
    for k, label in enumerate(r.groups):
        m = g == label
        one = bias(z[m], y[m], functional="expectile", level=0.8)
        assert r.bias[k] == pytest.approx(one.bias, rel=1e-12)
        assert r.stderr[k] == pytest.approx(one.stderr, rel=1e-12)
        assert r.p_value[k] == pytest.approx(one.p_value, rel=1e-9)
        assert r.ci_low[k] == pytest.approx(one.ci_low, rel=1e-12)
        assert r.count[k] == 100
    assert r.overall.bias == pytest.approx(bias(z, y, functional="expectile", level=0.8).bias)
    assert r.edges is None and r.feature_mean is None


def test_bias_by_feature_bins_by_hand() -> None:
    x = np.arange(1.0, 11.0)  # 1 .. 10
    z = x.copy()
    y = np.where(x > 5, x - 1.0, x)
    r = bias_by_group(z, y, feature=x, n_bins=2)
    # inverted-CDF median of 1..10 is 5: bins [1, 5] and (5, 10]
    assert r.edges.tolist() == [[1.0, 5.0], [5.0, 10.0]]
    assert r.bias.tolist() == [0.0, 1.0]
    assert r.feature_mean.tolist() == [3.0, 8.0]
    assert r.count.tolist() == [5, 5]
    u = bias_by_group(z, y, feature=x, n_bins=3, bin_method="uniform")
    # edges at 1 + 9/3 = 4 and 7: (.., 4], (4, 7], (7, ..]
    assert u.count.tolist() == [4, 3, 3]
    # constant feature: one bin
    c = bias_by_group(z, y, feature=np.ones(10), n_bins=4)
    assert c.count.tolist() == [10]


def test_bias_by_group_worst() -> None:
    r = bias_by_group([0.0, 0.0, 5.0], [0.0, 0.0, 0.0], groups=[1, 1, 2])
    assert r.worst == 1 and r.groups[r.worst] == 2


# ------------------------------------------------------- isotonic recalibration


def _functional_of(values: np.ndarray, functional: str, level: float | None) -> float:
    """The (lower) functional of a small sample, by brute force."""
    s = np.sort(values)
    if functional == "mean":
        return float(s.mean())
    if functional in ("median", "quantile"):
        a = 0.5 if level is None else level
        # smallest value whose empirical CDF reaches a
        return float(next(v for v in s if np.sum(s <= v) >= a * s.shape[0]))
    # expectile: SciPy's root of the identification function (Newey & Powell 1987)
    return float(stats.expectile(s, alpha=level))


def _minmax_solution(z: np.ndarray, y: np.ndarray, functional: str, level: float | None):
    """Isotonic regression by the min-max formula over tie groups (Robertson et al. 1988).

    ``x_i = max_{j <= i} min_{k >= i} T(y of groups j..k)``: the smallest
    solution for quantiles, the solution for the mean and expectiles.
    """
    u = np.unique(z)
    groups = [y[z == v] for v in u]
    g = len(groups)
    out = np.empty(g)
    for i in range(g):
        out[i] = max(
            min(
                _functional_of(np.concatenate(groups[j : k + 1]), functional, level)
                for k in range(i, g)
            )
            for j in range(i + 1)
        )
    return u, out


@pytest.mark.parametrize(
    "functional,level", [("mean", None), ("expectile", 0.3), ("expectile", 0.9)]
)
def test_isotonic_equals_the_min_max_formula(functional: str, level: float | None) -> None:
    for seed in range(6):
        z, y = _data(10 + seed, 25, ties=seed % 2 == 0)
        u, want = _minmax_solution(z, y, functional, level)
        c = t_reliability_curve(z, y, functional=functional, level=level)
        np.testing.assert_array_equal(c.forecasts, u)
        np.testing.assert_allclose(c.recalibrated, want, rtol=0, atol=1e-10)


def _pinball(f: np.ndarray, y: np.ndarray, level: float) -> float:
    return float(np.mean(((f >= y) - level) * (f - y)))


@pytest.mark.parametrize("level", [0.1, 0.5, 0.75])
def test_isotonic_quantile_lies_between_the_smallest_and_largest_solution(level: float) -> None:
    # every optimal isotonic quantile fit lies between the smallest solution
    # (min-max formula with lower quantiles) and the largest (upper quantiles);
    # and it attains the minimal mean pinball loss
    for seed in range(6):
        z, y = _data(20 + seed, 21, ties=seed % 2 == 1)
        u, low = _minmax_solution(z, y, "quantile", level)
        # the largest solution: lower quantiles of -y reflected
        _, high_neg = _minmax_solution(-z, -y, "quantile", 1 - level)
        high = -high_neg[::-1]
        c = t_reliability_curve(z, y, functional="quantile", level=level)
        assert np.all(c.recalibrated >= low - 1e-12)
        assert np.all(c.recalibrated <= high + 1e-12)
        assert np.all(np.diff(c.recalibrated) >= 0)
        rc = isotonic_recalibration(z, y, functional="quantile", level=level)

        lows = np.interp(z, u, low)
        assert _pinball(rc, y, level) == pytest.approx(
            _pinball(lows, y, level), rel=1e-12, abs=1e-15
        )


def test_isotonic_by_hand() -> None:
    # PAV: (0), (2, 1) pooled to 1.5, (5)
    assert isotonic_recalibration([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 5.0]).tolist() == [
        0.0,
        1.5,
        1.5,
        5.0,
    ]
    # equal forecasts share one value; row order is kept
    assert isotonic_recalibration([2.0, 1.0, 2.0], [3.0, 0.0, 1.0]).tolist() == [2.0, 0.0, 2.0]
    # decreasing targets: everything pooled into the functional of all targets
    y = np.array([4.0, 3.0, 2.0, 1.0])
    z = np.arange(4.0)
    assert isotonic_recalibration(z, y).tolist() == [2.5] * 4
    # median of {1, 2, 3, 4}: any value in [2, 3]; the midpoint 2.5
    assert isotonic_recalibration(z, y, functional="median").tolist() == [2.5] * 4
    # 0.25-expectile of {1, 2, 3, 4}: 0.75 (z - 1) + 0.75 (z - 2) = 0.25 (3 - z) + 0.25 (4 - z)
    # for z in [2, 3]: 1.5 z - 2.25 = 1.75 - 0.5 z, z = 2
    assert isotonic_recalibration(z, y, functional="expectile", level=0.25).tolist() == [2.0] * 4
    # already isotonic targets are returned as they are
    assert isotonic_recalibration(
        z, z[::-1][::-1] * 2, functional="quantile", level=0.3
    ).tolist() == [
        0.0,
        2.0,
        4.0,
        6.0,
    ]


def test_isotonic_weights_equal_repeated_rows() -> None:
    for functional, level in CASES:
        z, y = _data(30, 40, ties=True)
        w = np.arange(40) % 3 + 1
        a = isotonic_recalibration(z, y, functional=functional, level=level, sample_weight=w)
        b = isotonic_recalibration(
            np.repeat(z, w), np.repeat(y, w), functional=functional, level=level
        )
        np.testing.assert_allclose(np.repeat(a, w), b, rtol=0, atol=1e-12)


def test_zero_weight_rows_take_no_part() -> None:
    z, y = _data(31, 30)
    w = np.ones(30)
    w[::4] = 0.0
    keep = w > 0
    a = isotonic_recalibration(z, y, sample_weight=w, functional="quantile", level=0.6)
    c = t_reliability_curve(z[keep], y[keep], functional="quantile", level=0.6)
    np.testing.assert_array_equal(a, c.predict(z))
    np.testing.assert_array_equal(
        a[keep], isotonic_recalibration(z[keep], y[keep], functional="quantile", level=0.6)
    )


def test_recalibration_never_scores_worse_and_is_auto_calibrated() -> None:
    z, y = _data(32, 400)
    rc = isotonic_recalibration(z, y)
    assert np.mean((rc - y) ** 2) <= np.mean((z - y) ** 2)
    # each pooled block has mean identification 0
    for v in np.unique(rc):
        m = rc == v
        assert abs(np.mean(rc[m] - y[m])) < 1e-12


def test_curve_predict_interpolates_and_is_flat_outside() -> None:
    c = t_reliability_curve([1.0, 2.0, 3.0], [1.0, 3.0, 5.0])
    assert c.predict([0.0, 1.5, 2.5, 10.0]).tolist() == [1.0, 2.0, 4.0, 5.0]


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(functional="mode"), "functional must be one of"),
        (dict(functional="quantile"), "needs its level"),
        (dict(functional="quantile", level=1.0), "strictly between 0 and 1"),
        (dict(functional="expectile", level=0.0), "strictly between 0 and 1"),
        (dict(functional="mean", level=0.9), "not used by functional='mean'"),
        (dict(functional="median", level=0.3), "0.5-quantile"),
        (dict(functional="quantile", level="0.9"), "level must be a number"),
    ],
)
def test_bad_functional_or_level(kwargs: dict, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        identification_function([1.0], [1.0], **kwargs)


def test_bad_arrays() -> None:
    with pytest.raises(CalibrationInputError, match="forecasts has 2 rows but targets has 1"):
        bias([1.0, 2.0], [1.0])
    with pytest.raises(CalibrationInputError, match="forecasts must be finite; row 1 is nan"):
        isotonic_recalibration([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(CalibrationInputError, match="targets is required"):
        check_point_forecast([1.0])
    with pytest.raises(CalibrationInputError, match="empty"):
        bias([], [])
    with pytest.raises(CalibrationInputError, match="sample_weight must be non-negative"):
        isotonic_recalibration([1.0, 2.0], [1.0, 2.0], sample_weight=[1.0, -1.0])
    with pytest.raises(CalibrationInputError, match="exactly one of groups= .* got neither"):
        bias_by_group([1.0], [1.0])
    with pytest.raises(CalibrationInputError, match="got both"):
        bias_by_group([1.0], [1.0], groups=[1], feature=[1.0])
    with pytest.raises(CalibrationInputError, match="bin_method must be one of"):
        bias_by_group([1.0, 2.0], [1.0, 2.0], feature=[1.0, 2.0], bin_method="kmeans")
    with pytest.raises(CalibrationInputError, match="n_bins must be an integer"):
        bias_by_group([1.0, 2.0], [1.0, 2.0], feature=[1.0, 2.0], n_bins=1)
    with pytest.raises(CalibrationInputError, match="groups must not hold NaN; row 1"):
        bias_by_group([1.0, 2.0], [1.0, 2.0], groups=[1.0, np.nan])
    with pytest.raises(CalibrationInputError, match="groups has 1 rows but forecasts has 2"):
        bias_by_group([1.0, 2.0], [1.0, 2.0], groups=[1])
    with pytest.raises(CalibrationInputError, match="confidence_level must lie in"):
        bias([1.0, 2.0], [1.0, 2.0], confidence_level=95)


def test_torch_tensors_are_read() -> None:
    torch = pytest.importorskip("torch")
    z, y = _data(40, 20)
    a = isotonic_recalibration(torch.tensor(z), torch.tensor(y), functional="median")
    np.testing.assert_array_equal(a, isotonic_recalibration(z, y, functional="median"))


# ------------------------------------------------------------------- oracles


def _md_level(level: float | None) -> float:
    return 0.5 if level is None else level


@pytest.mark.parametrize("functional,level", CASES + [("expectile", 0.9)])
def test_oracle_model_diagnostics_identification_and_bias(
    functional: str, level: float | None
) -> None:
    md = pytest.importorskip("model_diagnostics.calibration")
    rng = np.random.default_rng(5)
    z, y = _data(5, 400, ties=True)
    w = rng.uniform(0.1, 3.0, size=400)
    x = rng.normal(size=400)
    g = rng.choice(["u", "v", "w", "x"], size=400)
    lv = _md_level(level)
    np.testing.assert_array_equal(
        identification_function(z, y, functional=functional, level=level),
        md.identification_function(y, z, functional=functional, level=lv),
    )
    for weights in (None, w):
        b = bias(z, y, functional=functional, level=level, sample_weight=weights)
        d = md.compute_bias(y, z, weights=weights, functional=functional, level=lv)
        assert b.bias == pytest.approx(d["bias_mean"][0], rel=1e-12, abs=1e-14)
        assert b.stderr == pytest.approx(d["bias_stderr"][0], rel=1e-12)
        assert b.p_value == pytest.approx(d["p_value"][0], rel=1e-9, abs=1e-14)
        assert b.count == d["bias_count"][0] and b.weight == pytest.approx(d["bias_weights"][0])
        for bin_method, n_bins in (("quantile", 7), ("uniform", 5), ("sturges", 10), ("fd", 10)):
            r = bias_by_group(
                z,
                y,
                feature=x,
                n_bins=n_bins,
                bin_method=bin_method,
                functional=functional,
                level=level,
                sample_weight=weights,
            )
            d = md.compute_bias(
                y,
                z,
                feature=x,
                weights=weights,
                functional=functional,
                level=lv,
                n_bins=n_bins,
                bin_method=bin_method,
            )
            assert len(d) == r.bias.shape[0]
            np.testing.assert_allclose(r.bias, d["bias_mean"].to_numpy(), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(r.stderr, d["bias_stderr"].to_numpy(), rtol=1e-12)
            np.testing.assert_allclose(r.p_value, d["p_value"].to_numpy(), rtol=1e-9, atol=1e-14)
            np.testing.assert_allclose(r.feature_mean, d["feature"].to_numpy(), rtol=1e-12)
            np.testing.assert_array_equal(r.count, d["bias_count"].to_numpy())
        r = bias_by_group(z, y, groups=g, functional=functional, level=level, sample_weight=weights)
        d = md.compute_bias(y, z, feature=g, weights=weights, functional=functional, level=lv)
        assert r.groups.tolist() == d["feature"].to_list()
        np.testing.assert_allclose(r.bias, d["bias_mean"].to_numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(r.stderr, d["bias_stderr"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("functional,level", CASES + [("quantile", 0.25), ("expectile", 0.9)])
def test_oracle_model_diagnostics_isotonic_regression(functional: str, level: float | None) -> None:
    iso = pytest.importorskip("model_diagnostics._utils.isotonic")
    skl = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(6)
    for _trial, ties in itertools.product(range(15), (False, True)):
        n = int(rng.integers(1, 80))
        y = rng.normal(size=n)
        z = y * rng.uniform(-1.0, 2.0) + rng.normal(size=n)
        if ties:
            z, y = np.round(z), np.round(2 * y)
        ours = isotonic_recalibration(z, y, functional=functional, level=level)
        if functional == "mean":
            theirs = skl.IsotonicRegression().fit(z, y).predict(z)
        else:
            model = iso.IsotonicRegression(functional=functional, level=_md_level(level))
            theirs = model.fit(z, y).predict(z)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


# ------------------------------------------------------------ score decomposition


def test_decomposition_by_hand() -> None:
    from calipers.regression import score_decomposition

    d = score_decomposition([-1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0])
    # SE 3/4; PAV pools the tie at 1 -> (0, 1/2, 1/2, 1): SE 1/8; mean 1/2: UNC 1/4
    assert (d.score, d.miscalibration, d.discrimination, d.uncertainty) == (
        0.75,
        0.625,
        0.125,
        0.25,
    )
    assert d.skill == pytest.approx(1 - 0.75 / 0.25)
    # median / pinball at 1/2 = half the absolute error:
    # recalibrated (0, 2.5, 2.5, 6), marginal the midpoint 2.5 of the medians 2 and 3
    q = score_decomposition(
        [1.0, 2.0, 3.0, 4.0], [0.0, 3.0, 2.0, 6.0], scoring_function="pinball", functional="median"
    )
    assert (q.score, q.miscalibration, q.discrimination, q.uncertainty) == (0.625, 0.5, 0.75, 0.875)
    # perfect forecasts that are already isotonic: no miscalibration
    y = np.array([1.0, 2.0, 4.0])
    p = score_decomposition(y, y, scoring_function="expectile", level=0.2)
    assert p.score == 0.0 and p.miscalibration == 0.0 and p.discrimination == p.uncertainty


@pytest.mark.parametrize(
    "name,kwargs,per_row",
    [
        ("squared_error", {}, lambda z, y: (z - y) ** 2),
        ("pinball", {"level": 0.3}, lambda z, y: ((z >= y) - 0.3) * (z - y)),
        ("expectile", {"level": 0.8}, lambda z, y: 2 * np.abs((z >= y) - 0.8) * (z - y) ** 2),
    ],
)
def test_decomposition_identity_and_callable(name: str, kwargs: dict, per_row) -> None:
    from calipers.regression import score_decomposition

    z, y = _data(50, 300, ties=True)
    w = np.arange(300) % 4 + 1.0
    d = score_decomposition(z, y, scoring_function=name, sample_weight=w, **kwargs)
    assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=1e-12)
    assert d.miscalibration >= -1e-12 and d.discrimination >= -1e-12
    assert d.score == pytest.approx(np.average(per_row(z, y), weights=w), rel=1e-12)
    # the same numbers from the score given as a callable
    functional = {"squared_error": "mean", "pinball": "quantile", "expectile": "expectile"}[name]
    c = score_decomposition(
        z, y, scoring_function=per_row, functional=functional, sample_weight=w, **kwargs
    )
    assert c.scoring_function == "callable"
    for a in ("score", "miscalibration", "discrimination", "uncertainty"):
        assert getattr(c, a) == pytest.approx(getattr(d, a), rel=1e-12, abs=1e-14)


def test_decomposition_poisson_pools_a_zero_block() -> None:
    from calipers.regression import score_decomposition

    z = np.array([0.5, 1.0, 2.0, 3.0])
    y = np.array([0.0, 0.0, 2.0, 4.0])
    # the isotonic fit is (0, 0, 2, 4); 0 is no Poisson forecast: the two lowest
    # blocks (0, 0) and (2) are pooled to their mean 2/3
    d = score_decomposition(z, y, scoring_function="poisson_deviance")
    rc = np.array([2 / 3, 2 / 3, 2 / 3, 4.0])

    def dev(f: np.ndarray) -> float:
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(y > 0, y * np.log(y / f), 0.0)
        return float(np.mean(2 * (t - y + f)))

    assert d.score == pytest.approx(dev(z), rel=1e-14)
    assert d.miscalibration == pytest.approx(dev(z) - dev(rc), rel=1e-12)
    assert d.uncertainty == pytest.approx(dev(np.full(4, 1.5)), rel=1e-14)
    with pytest.raises(CalibrationInputError, match="all targets 0"):
        score_decomposition(z, np.zeros(4), scoring_function="poisson_deviance")


def test_decomposition_refusals() -> None:
    from calipers.regression import score_decomposition

    with pytest.raises(CalibrationInputError, match="scoring_function must be one of"):
        score_decomposition([1.0], [1.0], scoring_function="crps")
    with pytest.raises(CalibrationInputError, match="functional is required"):
        score_decomposition([1.0], [1.0], scoring_function=lambda z, y: z - y)
    with pytest.raises(
        CalibrationInputError, match="consistent for the mean; got functional='quantile'"
    ):
        score_decomposition([1.0], [1.0], functional="quantile", level=0.5)
    with pytest.raises(CalibrationInputError, match="needs its level"):
        score_decomposition([1.0], [1.0], scoring_function="pinball")
    with pytest.raises(CalibrationInputError, match="one score per row"):
        score_decomposition(
            [1.0, 2.0], [1.0, 2.0], scoring_function=lambda z, y: 0.0, functional="mean"
        )
    with pytest.raises(CalibrationInputError, match="degree is used with"):
        score_decomposition([1.0], [1.0], degree=1.0)


@pytest.mark.parametrize(
    "name,kwargs,md_score",
    [
        ("squared_error", {}, ("SquaredError", ())),
        ("pinball", {"level": 0.3}, ("PinballLoss", (0.3,))),
        ("pinball", {"functional": "median"}, ("PinballLoss", (0.5,))),
        ("expectile", {"level": 0.8}, ("HomogeneousExpectileScore", (2, 0.8))),
        ("poisson_deviance", {}, ("PoissonDeviance", ())),
        ("gamma_deviance", {}, ("GammaDeviance", ())),
    ],
)
def test_oracle_model_diagnostics_decompose(name: str, kwargs: dict, md_score: tuple) -> None:
    scoring = pytest.importorskip("model_diagnostics.scoring")
    from calipers.regression import score_decomposition

    rng = np.random.default_rng(7)
    sf = getattr(scoring, md_score[0])(*md_score[1])
    for trial in range(12):
        n = int(rng.integers(2, 300))
        y = rng.poisson(rng.uniform(0.2, 3.0), size=n).astype(float)
        if name == "gamma_deviance":
            y = y + 0.5
        z = np.exp(0.5 * rng.normal(size=n)) * (y.mean() + 0.1)
        if trial % 2:
            z = np.round(z, 1) + 0.05
        order = np.argsort(z)  # model-diagnostics' positivity repair reads sorted rows
        z, y = z[order], y[order]
        w = rng.uniform(0.2, 2.0, size=n) if trial % 3 == 0 and name != "pinball" else None
        d = score_decomposition(z, y, scoring_function=name, sample_weight=w, **kwargs)
        t = scoring.decompose(y, z, weights=w, scoring_function=sf)
        assert d.score == pytest.approx(t["score"][0], rel=1e-12, abs=1e-12)
        assert d.miscalibration == pytest.approx(t["miscalibration"][0], rel=1e-10, abs=1e-12)
        assert d.discrimination == pytest.approx(t["discrimination"][0], rel=1e-10, abs=1e-12)
        assert d.uncertainty == pytest.approx(t["uncertainty"][0], rel=1e-12, abs=1e-12)


def test_expectile_reweighting_equals_block_pooling() -> None:
    # the fast path (reweighted mean PAV) and the block-by-block PAV with the
    # exact block expectile give the same fit
    from calipers.regression import _score_decomposition as sd

    rng = np.random.default_rng(8)
    for trial in range(20):
        n = int(rng.integers(1, 200))
        z, y = _data(100 + trial, n, ties=trial % 2 == 0)
        w = rng.uniform(0.1, 3.0, n) if trial % 3 == 0 else None
        level = float(rng.uniform(0.02, 0.98))
        order = np.argsort(z, kind="stable")
        zs, ys = z[order], y[order]
        ws = None if w is None else w[order]
        new = np.r_[True, zs[1:] != zs[:-1]]
        starts = np.flatnonzero(new)
        codes = np.cumsum(new) - 1
        fast = sd._expectile_by_reweighting(ys, ws, codes, starts.shape[0], level)
        values, bstart = sd._pav(
            ys, ws, np.append(starts, n), sd._block_function("expectile", level)
        )
        slow = values[np.searchsorted(bstart, starts, side="right") - 1]
        assert fast is not None
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)


def test_predictive_distributions_give_their_functional() -> None:
    from scipy.stats import norm

    from calipers.regression import Gaussian, QuantileSet, SampleEnsemble

    mu = np.array([0.0, 1.0, 2.0])
    sd = np.array([1.0, 2.0, 0.5])
    y = np.array([0.5, 0.0, 3.0])
    G = Gaussian(mu, std=sd)
    np.testing.assert_array_equal(identification_function(G, y), mu - y)
    q = mu + sd * norm.ppf(0.9)
    np.testing.assert_allclose(
        identification_function(G, y, functional="quantile", level=0.9),
        (q >= y) - 0.9,
    )
    b = bias(G, y, functional="median")
    assert b.bias == pytest.approx(np.mean((mu >= y) - 0.5))
    Q = QuantileSet([0.1, 0.5, 0.9], np.array([[-1.0, 0.0, 1.0], [0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]))
    np.testing.assert_array_equal(
        isotonic_recalibration(Q, y, functional="median"),
        isotonic_recalibration([0.0, 1.0, 2.0], y, functional="median"),
    )
    with pytest.raises(CalibrationInputError, match="has no mean"):
        bias(Q, y)
    with pytest.raises(CalibrationInputError, match="expectile of a predictive distribution"):
        bias(G, y, functional="expectile", level=0.3)
    S = SampleEnsemble(np.array([[0.0, 2.0], [1.0, 3.0], [5.0, 7.0]]))
    np.testing.assert_allclose(identification_function(S, y), [1.0 - 0.5, 2.0, 6.0 - 3.0])


def test_group_of_zero_weight_is_nan() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = bias_by_group(
            [1.0, 2.0, 3.0], [0.0, 0.0, 0.0], groups=["a", "b", "b"], sample_weight=[0.0, 1.0, 1.0]
        )
    assert np.isnan(r.bias[0]) and np.isnan(r.p_value[0]) and r.count[0] == 1
    assert r.bias[1] == 2.5 and r.overall.bias == 2.5


def test_quantile_pav_with_pending_rows_equals_block_pooling() -> None:
    # the unweighted quantile path keeps rows pending in large blocks; the
    # block-by-block PAV with full sorts gives the same blocks and values
    from calipers.regression import _score_decomposition as sd

    rng = np.random.default_rng(9)
    for trial in range(8):
        n = 3000 if trial < 4 else int(rng.integers(1, 300))
        if trial < 4:  # forecasts against their targets: one block grows row by row
            y = -np.arange(n) + rng.normal(size=n) * [0.0, 1.0, 30.0, 300.0][trial]
        else:
            y = np.round(rng.normal(size=n), trial % 2)
        bounds = np.arange(n + 1)
        level = [0.1, 0.5, 0.9, 0.37][trial % 4]
        v1, b1 = sd._pav(y, None, bounds, sd._block_function("quantile", level))
        v2, b2 = sd._pav_quantile(y, bounds, level)
        np.testing.assert_array_equal(v1, v2)
        np.testing.assert_array_equal(b1, b2)
