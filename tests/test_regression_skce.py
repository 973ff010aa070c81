"""SKCE of Gaussian predictions (calipers.regression.skce, Widmann et al. 2021).

Oracles: numerical integration (scipy.integrate.quad) and Monte Carlo for the
closed-form Gaussian expectations and the W2 distance, a direct Monte-Carlo
evaluation of h, naive double loops for both estimators, the public estimator
for the batched resampling of the test, and the null behaviour of calibrated
data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from calipers.regression import skce as rs
from calipers.regression.skce import gaussian_skce, gaussian_skce_test
from calipers.validation import CalibrationInputError


def _ky(a: float, b: float, ls: float) -> float:
    return float(np.exp(-((a - b) ** 2) / (2 * ls * ls)))


def _h_quad(
    m1: float, v1: float, y1: float, m2: float, v2: float, y2: float, ls: float, lp: float
) -> float:
    """h of the definition, the expectations by numerical integration over the normal pdf."""
    s1, s2 = np.sqrt(v1), np.sqrt(v2)

    def e1(a: float, m: float, s: float) -> float:  # E_{Z~N(m, s^2)} k_Y(Z, a)
        return integrate.quad(
            lambda z: _ky(z, a, ls) * stats.norm.pdf(z, m, s), m - 12 * s, m + 12 * s
        )[0]

    # E k_Y(Z, Z') = E_{D ~ N(m1 - m2, v1 + v2)} exp(-D^2 / (2 l^2))
    e12 = e1(0.0, m1 - m2, float(np.sqrt(v1 + v2)))
    kp = np.exp(-np.hypot(m1 - m2, s1 - s2) / lp)
    return float(kp * (_ky(y1, y2, ls) - e1(y2, m1, s1) - e1(y1, m2, s2) + e12))


def _h_naive(
    m1: float, v1: float, y1: float, m2: float, v2: float, y2: float, ls: float, lp: float
) -> float:
    """h of the definition with scalar closed forms (checked against quadrature above)."""

    def e(m: float, v: float, a: float) -> float:
        return ls / math.sqrt(ls * ls + v) * math.exp(-((m - a) ** 2) / (2 * (ls * ls + v)))

    kp = math.exp(-math.sqrt((m1 - m2) ** 2 + (math.sqrt(v1) - math.sqrt(v2)) ** 2) / lp)
    return kp * (_ky(y1, y2, ls) - e(m1, v1, y2) - e(m2, v2, y1) + e(m1, v1 + v2, m2))


def _data(n: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibrated data ``y ~ N(mu, v)``; the predicted variance is ``scale^2 v``."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    v = rng.uniform(0.5, 2.0, size=n)
    y = mu + np.sqrt(v) * rng.normal(size=n)
    return mu, scale**2 * v, y


def _named(data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
    """``_data``'s arrays as the keywords ``mean``, ``variance`` and ``targets``."""
    return dict(zip(("mean", "variance", "targets"), data, strict=True))


# ----------------------------------------------------------------- closed forms


@pytest.mark.parametrize(
    ("mu", "s2", "a", "ls"), [(0.0, 1.0, 0.0, 1.0), (1.3, 0.2, -0.4, 0.7), (-2.0, 3.0, 1.0, 2.5)]
)
def test_expected_kernel_matches_quadrature(mu: float, s2: float, a: float, ls: float) -> None:
    s = np.sqrt(s2)
    want = integrate.quad(
        lambda z: _ky(z, a, ls) * stats.norm.pdf(z, mu, s), mu - 12 * s, mu + 12 * s
    )[0]
    assert rs._expected_gaussian_kernel(mu, s2, a, ls) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    ("m1", "v1", "m2", "v2", "ls"), [(0.3, 0.5, -0.2, 1.5, 1.0), (2, 1, 0, 0.1, 0.5)]
)
def test_two_gaussian_expectation_matches_monte_carlo(
    m1: float, v1: float, m2: float, v2: float, ls: float
) -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(m1, np.sqrt(v1), size=2_000_000)
    zp = rng.normal(m2, np.sqrt(v2), size=2_000_000)
    vals = np.exp(-((z - zp) ** 2) / (2 * ls * ls))
    got = rs._expected_gaussian_kernel(m1, v1 + v2, m2, ls)
    assert abs(got - vals.mean()) < 5 * vals.std() / np.sqrt(vals.size)


def test_w2_distance_of_gaussians_matches_quantile_integral() -> None:
    # W2^2 = int_0^1 (F^-1(u) - G^-1(u))^2 du for 1-D laws
    m1, s1, m2, s2 = 0.4, 0.7, -1.1, 1.6
    w2sq = integrate.quad(
        lambda u: (stats.norm.ppf(u, m1, s1) - stats.norm.ppf(u, m2, s2)) ** 2, 0, 1, limit=200
    )[0]
    kp, _ = rs._prediction_parts(m1, s1, m2, s2, 1.0, 0.8)
    assert kp == pytest.approx(np.exp(-np.sqrt(w2sq) / 0.8), rel=1e-7)


@pytest.mark.parametrize(
    "pair",
    [
        (0.0, 1.0, 0.5, 0.3, 0.5, -0.2),
        (1.0, 0.2, 2.5, -0.5, 2.0, -1.0),
        (0.0, 0.04, 0.1, 0.0, 0.04, 0.3),
    ],
)
def test_h_matches_direct_monte_carlo(pair: tuple[float, ...]) -> None:
    """n = 2: the unbiased estimate is h_12; the definition evaluated by Monte Carlo."""
    m1, v1, y1, m2, v2, y2 = pair
    ls, lp = 0.8, 1.3
    got = gaussian_skce(
        [m1, m2], variance=[v1, v2], targets=[y1, y2], length_scale=ls, prediction_length_scale=lp
    )
    rng = np.random.default_rng(11)
    N = 1_000_000
    z = rng.normal(m1, np.sqrt(v1), N)
    zp = rng.normal(m2, np.sqrt(v2), N)
    kp = np.exp(-np.hypot(m1 - m2, np.sqrt(v1) - np.sqrt(v2)) / lp)
    # one Monte-Carlo average of the bracket: unbiased for it, so for h
    bracket = (
        _ky(y1, y2, ls)
        - np.exp(-((z - y2) ** 2) / (2 * ls * ls))
        - np.exp(-((y1 - zp) ** 2) / (2 * ls * ls))
        + np.exp(-((z - zp) ** 2) / (2 * ls * ls))
    )
    mc = kp * bracket
    assert abs(got - mc.mean()) < 5 * mc.std() / np.sqrt(N)
    assert got == pytest.approx(_h_quad(m1, v1, y1, m2, v2, y2, ls, lp), rel=1e-8, abs=1e-12)
    assert got == pytest.approx(_h_naive(m1, v1, y1, m2, v2, y2, ls, lp), rel=1e-12, abs=1e-15)


# ----------------------------------------------------------------- estimators


@pytest.mark.parametrize(("ls", "lp"), [(1.0, None), (0.5, 2.0)])
@pytest.mark.parametrize("tile", [1 << 18, 7 * 60])  # one row block; several, on threads
def test_unbiased_matches_naive_double_loop(
    ls: float, lp: float | None, tile: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rs, "_TILE", tile)
    mu, v, y = _data(60, seed=5, scale=0.7)
    lpp = ls if lp is None else lp
    n = mu.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                total += _h_naive(mu[i], v[i], y[i], mu[j], v[j], y[j], ls, lpp)
    want = total / (n * (n - 1))
    got = gaussian_skce(mu, variance=v, targets=y, length_scale=ls, prediction_length_scale=lp)
    assert got == pytest.approx(want, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize(("n", "m"), [(60, 2), (61, 5), (60, 60)])
def test_block_matches_naive_definition(n: int, m: int) -> None:
    mu, v, y = _data(n, seed=6, scale=1.5)
    values = []
    for b in range(n // m):
        idx = range(b * m, (b + 1) * m)
        s = sum(
            _h_naive(mu[i], v[i], y[i], mu[j], v[j], y[j], 1.0, 1.0)
            for i in idx
            for j in idx
            if i != j
        )
        values.append(s / (m * (m - 1)))
    got = gaussian_skce(mu, variance=v, targets=y, estimator="block", block_size=m)
    assert got == pytest.approx(float(np.mean(values)), rel=1e-7, abs=1e-12)
    if m == n:  # one block of all rows is the unbiased estimator
        assert got == pytest.approx(gaussian_skce(mu, variance=v, targets=y), rel=1e-10)


def test_invariant_to_a_common_shift() -> None:
    mu, v, y = _data(80, seed=8, scale=0.6)
    a = gaussian_skce(mu, variance=v, targets=y)
    assert gaussian_skce(mu + 3.7, variance=v, targets=y + 3.7) == pytest.approx(a, rel=1e-9)


def test_consistency_null_draws_are_the_estimator_on_drawn_targets() -> None:
    mu, v, y = _data(50, seed=9)
    r = gaussian_skce_test(mu, variance=v, targets=y, n_resamples=5, seed=42)
    rng = np.random.default_rng(42)
    Y = mu + np.sqrt(v) * rng.standard_normal((5, 50))
    want = [gaussian_skce(mu, variance=v, targets=yy) for yy in Y]
    np.testing.assert_allclose(r.null_distribution, want, rtol=1e-10)
    assert r.statistic == pytest.approx(gaussian_skce(mu, variance=v, targets=y), rel=1e-12)
    assert r.p_value == (1 + np.sum(r.null_distribution >= r.statistic)) / 6


# ----------------------------------------------------------------- calibration


def test_calibrated_estimate_is_near_zero() -> None:
    mu, v, y = _data(500, seed=12)
    r = gaussian_skce_test(mu, variance=v, targets=y, n_resamples=49, seed=1)
    se = float(r.null_distribution.std())  # the null law is the sampling law here
    assert se > 0
    assert abs(r.statistic) < 4 * se
    blk = gaussian_skce_test(mu, variance=v, targets=y, method="block", block_size=10)
    assert abs(blk.statistic) < 4 * blk.stderr


@pytest.mark.parametrize(
    ("method", "n", "kwargs"),
    [("consistency", 100, {"n_resamples": 99}), ("block", 500, {"block_size": 2})],
)
def test_p_values_of_calibrated_models_are_roughly_uniform(
    method: str, n: int, kwargs: dict[str, int]
) -> None:
    p = np.array(
        [
            gaussian_skce_test(
                **_named(_data(n, seed=100 + r)),
                method=method,  # type: ignore[arg-type]
                seed=r,
                **kwargs,
            ).p_value
            for r in range(40)
        ]
    )
    assert np.mean(p < 0.05) <= 0.15
    assert 0.3 < p.mean() < 0.7


def test_misscaled_model_is_detected() -> None:
    mu, v, y = _data(500, seed=21, scale=0.5)  # predicted sd half the true one
    assert gaussian_skce(mu, variance=v, targets=y) > 0
    assert gaussian_skce(mu, variance=v, targets=y, estimator="block", block_size=10) > 0
    assert gaussian_skce_test(mu, variance=v, targets=y, n_resamples=99).p_value < 0.05
    # blocks of 2 have little power at n = 500 (rejection rate 0.45 measured); 20 blocks of 25
    assert (
        gaussian_skce_test(mu, variance=v, targets=y, method="block", block_size=25).p_value < 0.05
    )


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([0, 1], [1, 1], [0, 1, 2]), {}, "same length"),
        (([[0, 1]], [[1, 1]], [[0, 1]]), {}, "1-D"),
        (([0, np.nan], [1, 1], [0, 1]), {}, "mean must be finite; row 1"),
        (([0, 1], [1, np.inf], [0, 1]), {}, "variance must be finite"),
        (([0, 1], [1, 0], [0, 1]), {}, "variance must be > 0.*row 1 is 0.0"),
        (([0, 1], [-1, 1], [0, 1]), {}, "variance must be > 0.*row 0 is -1.0"),
        (([0, 1], [1, 1], [True, False]), {}, "targets must hold real numbers"),
        (([0, 1], [1, 1], ["a", "b"]), {}, "targets must hold real numbers"),
        (([0], [1], [0]), {}, "at least 2 rows"),
        (([0, 1], None, [0, 1]), {}, "exactly one of variance= .* and std="),
        (([0, 1], [1, 1], [0, 1]), {"std": [1, 1]}, "exactly one of variance= .* and std="),
        (([0, 1], None, [0, 1]), {"std": [1, 0]}, "std must be > 0.*row 1"),
        (([0, 1], [1, 1], [0, 1]), {"estimator": "biased"}, "estimator"),
        (([0, 1], [1, 1], [0, 1]), {"length_scale": 0}, "length_scale"),
        (([0, 1], [1, 1], [0, 1]), {"prediction_length_scale": -1.0}, "prediction_length_scale"),
        (([0, 1], [1, 1], [0, 1]), {"estimator": "block", "block_size": 3}, "block_size"),
        (([0, 1], [1, 1], [0, 1]), {"estimator": "block", "block_size": 1}, "block_size"),
    ],
)
def test_bad_input_is_refused(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        gaussian_skce(args[0], variance=args[1], targets=args[2], **kwargs)


def test_bad_test_settings_are_refused() -> None:
    mu, v, y = _data(10, seed=0)
    with pytest.raises(CalibrationInputError, match="method"):
        gaussian_skce_test(mu, variance=v, targets=y, method="quadratic")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="n_resamples"):
        gaussian_skce_test(mu, variance=v, targets=y, n_resamples=0)
    with pytest.raises(CalibrationInputError, match="at least 2 block"):
        gaussian_skce_test(mu, variance=v, targets=y, method="block", block_size=6)


def test_huge_unbiased_estimate_is_refused_naming_the_block_estimator() -> None:
    n = 1_000_000
    with pytest.raises(CalibrationInputError, match="estimator='block'"):
        gaussian_skce(np.zeros(n), variance=np.ones(n), targets=np.zeros(n))
    # the block estimator handles it in linear time
    assert np.isfinite(
        gaussian_skce(np.zeros(n), variance=np.ones(n), targets=np.zeros(n), estimator="block")
    )


def test_std_and_gaussian_predictions_give_the_variance_result() -> None:
    """``std=`` and a GaussianPredictions read the same predictions as ``variance``."""
    from calipers.regression import check_gaussian

    rng = np.random.default_rng(7)
    mu = rng.normal(size=80)
    sd = rng.uniform(0.5, 2.0, size=80)
    y = mu + sd * rng.normal(size=80)
    ref = gaussian_skce(mu, variance=sd**2, targets=y)
    assert gaussian_skce(mu, targets=y, std=sd) == pytest.approx(ref, rel=1e-12)
    assert gaussian_skce(check_gaussian(mu, std=sd, targets=y)) == pytest.approx(ref, rel=1e-12)
    t = gaussian_skce_test(mu, targets=y, std=sd, n_resamples=19)
    assert t.statistic == pytest.approx(ref, rel=1e-12)
