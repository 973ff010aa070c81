"""Tests of the regression decompositions and the Kuleshov quantile calibration error.

Oracles: closed forms (Gini mean difference by brute force, the DSS calibration
term of a synthetic law with known conditional moments, the binomial mean of
the Kuleshov error), hand computations, the classification Murphy
decomposition of calipers at a single threshold, and the closed-form CRPS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import calipers as cp
from calipers.regression import (
    crps_decomposition,
    crps_gaussian,
    dawid_sebastiani,
    gaussian_nll,
    gaussian_score_decomposition,
    gini_half_mean_difference,
    quantile_calibration_curve,
    quantile_calibration_error,
)
from calipers.validation import CalibrationInputError


def _model(n: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means, stds (times ``scale``) and targets drawn from N(mean, std**2)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, size=n)
    return mu, sd * scale, rng.normal(mu, sd)


# ------------------------------------------------------------------ Gini / uncertainty


def test_gini_half_mean_difference_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    y = rng.normal(size=300)
    w = rng.uniform(0.0, 3.0, size=300)
    brute = 0.5 * np.sum(w[:, None] * w[None, :] * np.abs(y[:, None] - y[None, :])) / w.sum() ** 2
    assert gini_half_mean_difference(y, w) == pytest.approx(brute, rel=1e-12)
    plain = 0.5 * np.mean(np.abs(y[:, None] - y[None, :]))
    assert gini_half_mean_difference(y) == pytest.approx(plain, rel=1e-12)


def test_uncertainty_is_exact_when_every_target_is_a_threshold() -> None:
    mu, sd, y = _model(200, 2)
    grid = np.unique(np.concatenate([y, np.linspace(y.min() - 20, y.max() + 20, 3000)]))
    d = crps_decomposition(mu, std=sd, targets=y, thresholds=grid)
    assert d.uncertainty == pytest.approx(d.uncertainty_closed_form, rel=1e-12)
    # integral of o(1 - o) by hand, the same left-point rule
    mid = (grid[:-1] + grid[1:]) / 2
    o = (y[None, :] <= mid[:, None]).mean(axis=1)
    assert d.uncertainty == pytest.approx(np.dot(np.diff(grid), o * (1 - o)), rel=1e-12)


# ------------------------------------------------------------------ CRPS decomposition


def test_crps_identity_is_exact_and_terms_are_non_negative() -> None:
    mu, sd, y = _model(3000, 3, scale=0.7)
    w = np.random.default_rng(4).uniform(0.0, 2.0, size=3000)
    for weights in (None, w):
        d = crps_decomposition(mu, std=sd, targets=y, sample_weight=weights, thresholds=300)
        assert d.binned_crps == pytest.approx(
            d.reliability - d.resolution + d.uncertainty, abs=1e-12
        )
        assert d.reliability >= 0 and d.resolution >= 0
        assert np.all(d.reliability_t >= 0) and np.all(d.resolution_t >= 0)
        assert d.within_bin == pytest.approx(d.crps_grid - d.binned_crps)


def test_crps_terms_at_one_threshold_match_the_murphy_decomposition() -> None:
    mu, sd, y = _model(2000, 5, scale=1.3)
    edges = np.array([-1.0, -0.4, 0.8, 1.4])  # midpoints -0.7, 0.2, 1.1
    d = crps_decomposition(mu, std=sd, targets=y, thresholds=edges, n_bins=8)
    assert d.thresholds.tolist() == pytest.approx([-0.7, 0.2, 1.1])
    assert d.threshold_weights.tolist() == pytest.approx([0.6, 1.2, 0.6])
    for k, t in enumerate(d.thresholds):
        p = norm.cdf((t - mu) / sd)
        o = (y <= t).astype(int)
        m = cp.murphy_decomposition(p, o, estimator=cp.EqualWidth(8))
        assert d.brier[k] == pytest.approx(np.mean((p - o) ** 2), rel=1e-12)
        assert d.reliability_t[k] == pytest.approx(m.reliability, rel=1e-9, abs=1e-15)
        assert d.resolution_t[k] == pytest.approx(m.resolution, rel=1e-9)
        assert d.uncertainty_t[k] == pytest.approx(m.uncertainty, rel=1e-12)
    assert d.reliability == pytest.approx(np.dot(d.threshold_weights, d.reliability_t))


def test_grid_crps_converges_to_the_closed_form() -> None:
    mu, sd, y = _model(500, 6)
    exact = crps_gaussian(mu, std=sd, targets=y)
    lo, hi = min(y.min(), (mu - 8 * sd).min()), max(y.max(), (mu + 8 * sd).max())
    gaps = []
    for m in (500, 2000, 8000):
        edges = np.unique(np.concatenate([y, np.linspace(lo, hi, m)]))
        d = crps_decomposition(mu, std=sd, targets=y, thresholds=edges)
        # every target is an edge: the uncertainty integral is exact
        assert d.uncertainty == pytest.approx(d.uncertainty_closed_form, rel=1e-12)
        gaps.append(abs(d.discretisation_error))
    # midpoint rule between edges: measured about 5e-6, 2e-6, 3e-7 (n = 1000, seed 6)
    assert gaps[0] > gaps[1] > 2 * gaps[2]
    assert gaps[2] < 1e-6 * exact
    d = crps_decomposition(mu, std=sd, targets=y)  # default grid: all 500 targets are edges
    assert abs(d.discretisation_error) < 5e-5 * exact  # measured 1.4e-5 on 0.72
    assert d.crps == pytest.approx(exact, rel=1e-12)


def test_calibrated_model_has_small_reliability_and_misscaled_ones_larger() -> None:
    mu, sd, y = _model(20000, 7)
    good = crps_decomposition(mu, std=sd, targets=y, thresholds=60)
    qce_good = quantile_calibration_error(mu, std=sd, targets=y)
    # Kuleshov error of calibrated predictions: about sum_j p_j (1 - p_j) / n
    levels = np.linspace(0.05, 0.95, 19)
    assert qce_good < 5 * np.sum(levels * (1 - levels)) / 20000
    assert good.reliability < 0.003 * good.crps
    for scale in (0.5, 2.0):
        bad = crps_decomposition(mu, std=sd * scale, targets=y, thresholds=60)
        assert bad.reliability > 20 * good.reliability
        assert quantile_calibration_error(mu, std=sd * scale, targets=y) > 100 * qce_good
        # same targets: the uncertainty term does not depend on the predictions
        assert bad.uncertainty_closed_form == good.uncertainty_closed_form


# ------------------------------------------------------------------ Kuleshov error


def test_quantile_calibration_error_by_hand() -> None:
    mu = [0.0, 0.0, 1.0, 1.0, -1.0]
    sd = [1.0, 2.0, 1.0, 0.5, 1.0]
    y = [0.5, -3.0, 1.0, 2.0, -1.5]
    # PIT: Phi(0.5)=.691, Phi(-1.5)=.067, Phi(0)=.5, Phi(2)=.977, Phi(-0.5)=.309
    levels = [0.1, 0.5, 0.9]
    # rows with PIT <= level: 0.1 -> 1 row, 0.5 -> 3 rows (0.5 itself counts), 0.9 -> 4
    c = quantile_calibration_curve(mu, std=sd, targets=y, levels=levels, weights=[1, 2, 3])
    assert c.observed.tolist() == pytest.approx([0.2, 0.6, 0.8])
    expected = 1 * (0.1 - 0.2) ** 2 + 2 * (0.5 - 0.6) ** 2 + 3 * (0.9 - 0.8) ** 2
    assert c.error == pytest.approx(expected, rel=1e-12)
    assert quantile_calibration_error(
        mu, std=sd, targets=y, levels=levels, weights=[1, 2, 3]
    ) == pytest.approx(0.06, rel=1e-12)


def test_quantile_calibration_error_sees_a_shift_of_the_mean() -> None:
    rng = np.random.default_rng(8)
    mu = rng.normal(size=5000)
    y = rng.normal(mu, 1.0)
    shifted = quantile_calibration_error(mu + 0.5, variance=np.ones(5000), targets=y)
    assert shifted > 0.1
    # the two-sided coverage cannot see a sign flip of the residuals, the one-sided can
    mirrored = 2 * mu - y  # same |y - mu|
    two_sided = cp.regression.quantile_calibration
    assert two_sided(mu, variance=np.full(5000, 0.25), targets=y).coverage.tolist() == (
        two_sided(mu, variance=np.full(5000, 0.25), targets=mirrored).coverage.tolist()
    )
    c_y = quantile_calibration_curve(mu, variance=np.full(5000, 0.25), targets=y).observed
    c_m = quantile_calibration_curve(mu, variance=np.full(5000, 0.25), targets=mirrored).observed
    assert not np.allclose(c_y, c_m)


# ------------------------------------------------------------------ DSS / NLL decomposition


def test_dss_calibration_term_matches_the_closed_form() -> None:
    # P = N(mu, s^2), mu and s^2 discrete; Y | P ~ N(a + b mu, c s^2), so with
    # z = (Y - mu) / s: E[z | P] = (a + (b - 1) mu) / s, Var[z | P] = c, and the
    # calibration term is E[A^2] + c - 1 - log c.
    rng = np.random.default_rng(9)
    n = 120000
    mus = np.array([-1.0, 0.0, 2.0])
    s2s = np.array([0.5, 2.0])
    mu = rng.choice(mus, size=n)
    s2 = rng.choice(s2s, size=n)
    a, b, c = 0.3, 1.2, 1.5
    y = rng.normal(a + b * mu, np.sqrt(c * s2))
    d = gaussian_score_decomposition(mu, variance=s2, targets=y, n_bins=None)
    A2 = np.mean([(a + (b - 1) * m) ** 2 / v for m in mus for v in s2s])  # equal-probability cells
    closed = A2 + c - 1 - math.log(c)
    assert d.n_groups == 6
    assert d.calibration == pytest.approx(closed, abs=0.02)
    # recalibrated score: E[log(c s^2)] + 1
    assert d.recalibrated_score == pytest.approx(math.log(c) + np.mean(np.log(s2s)) + 1, abs=0.02)
    assert d.score == pytest.approx(dawid_sebastiani(mu, variance=s2, targets=y), rel=1e-12)
    assert d.score == pytest.approx(d.uncertainty - d.sharpness + d.calibration, abs=1e-12)
    np.testing.assert_allclose(
        np.sort(d.group_variance_ratio), np.full(6, c), rtol=0.05
    )  # one ratio per cell


def test_dss_calibration_bias_is_about_two_groups_over_n() -> None:
    rng = np.random.default_rng(10)
    n, reps = 600, 300
    vals = []
    for _ in range(reps):
        mu = rng.choice([0.0, 1.0, 2.0], size=n)
        s2 = rng.choice([1.0, 4.0], size=n)
        y = rng.normal(mu, np.sqrt(s2))  # calibrated
        vals.append(
            gaussian_score_decomposition(mu, variance=s2, targets=y, n_bins=None).calibration
        )
    # 6 groups of about 100 rows: about 2 * 6 / 600 = 0.02 (slightly more: 2 / (n_g - 1))
    assert np.mean(vals) == pytest.approx(2 * 6 / n, rel=0.2)


def test_nll_decomposition_is_half_the_dss_one() -> None:
    mu, sd, y = _model(5000, 11, scale=0.8)
    dss = gaussian_score_decomposition(mu, std=sd, targets=y)
    nll = gaussian_score_decomposition(mu, std=sd, targets=y, score="nll")
    assert nll.score == pytest.approx(gaussian_nll(mu, std=sd, targets=y), rel=1e-12)
    assert nll.calibration == pytest.approx(dss.calibration / 2, rel=1e-12)
    assert nll.sharpness == pytest.approx(dss.sharpness / 2, rel=1e-12)
    assert nll.uncertainty == pytest.approx((dss.uncertainty + math.log(2 * math.pi)) / 2)
    assert nll.score == pytest.approx(nll.uncertainty - nll.sharpness + nll.calibration)


def test_binned_dss_calibration_on_continuous_predictions() -> None:
    mu, sd, y = _model(20000, 12)
    good = gaussian_score_decomposition(mu, std=sd, targets=y)
    assert 0 <= good.calibration < 4 * 2 * 25 / 20000
    # one global group: a = mean z, b = var z, by hand
    z = (y - mu) / (sd / 2)
    one = gaussian_score_decomposition(mu, std=sd / 2, targets=y, n_bins=(1, 1))
    by_hand = z.mean() ** 2 + z.var() - 1 - math.log(z.var())
    assert one.calibration == pytest.approx(by_hand, rel=1e-12)
    assert one.calibration == pytest.approx(3 - math.log(4), abs=0.05)  # b = 4
    binned = gaussian_score_decomposition(mu, std=sd / 2, targets=y)
    assert binned.calibration > 50 * good.calibration


# ------------------------------------------------------------------ weights and errors


def test_integer_weights_equal_repeated_rows() -> None:
    mu, sd, y = _model(400, 13, scale=1.4)
    k = np.random.default_rng(14).integers(0, 4, size=400)
    k[0] = 1
    rep = np.repeat(np.arange(400), k)
    grid = np.linspace(-8, 8, 400)
    a = crps_decomposition(mu, std=sd, targets=y, sample_weight=k, thresholds=grid)
    b = crps_decomposition(mu[rep], std=sd[rep], targets=y[rep], thresholds=grid)
    for f in ("crps", "crps_grid", "binned_crps", "reliability", "resolution", "uncertainty"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-10), f
    assert a.uncertainty_closed_form == pytest.approx(b.uncertainty_closed_form, rel=1e-12)
    mu_d, sd_d = np.clip(np.round(mu), -1, 1), np.where(sd > 1.5, 2.0, 1.0)  # 6 predictions
    ga = gaussian_score_decomposition(mu_d, std=sd_d, targets=y, sample_weight=k, n_bins=None)
    gb = gaussian_score_decomposition(mu_d[rep], std=sd_d[rep], targets=y[rep], n_bins=None)
    for f in ("score", "uncertainty", "sharpness", "calibration"):
        assert getattr(ga, f) == pytest.approx(getattr(gb, f), rel=1e-10), f
    qa = quantile_calibration_error(mu, std=sd, targets=y, sample_weight=k)
    qb = quantile_calibration_error(mu[rep], std=sd[rep], targets=y[rep])
    assert qa == pytest.approx(qb, rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: quantile_calibration_error(
                [0.0], variance=[1.0], targets=[0.0], levels=[0.5, 1.0]
            ),
            "strictly between 0 and 1; entry 1",
        ),
        (
            lambda: quantile_calibration_error(
                [0.0], variance=[1.0], targets=[0.0], levels=[0.5, 0.2]
            ),
            "strictly increasing",
        ),
        (
            lambda: quantile_calibration_error(
                [0.0], variance=[1.0], targets=[0.0], levels=[0.5], weights=[1.0, 2.0]
            ),
            "one weight per level",
        ),
        (
            lambda: quantile_calibration_error(
                [0.0], variance=[1.0], targets=[0.0], levels=[0.5], weights=[-1.0]
            ),
            "weights must be >= 0",
        ),
        (
            lambda: crps_decomposition(
                [0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 1.0], thresholds=[0.0, 0.0, 1.0]
            ),
            "strictly increasing; entry 1",
        ),
        (
            lambda: crps_decomposition(
                [0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 1.0], thresholds=[0.0, np.nan]
            ),
            "finite; entry 1",
        ),
        (
            lambda: crps_decomposition(
                [0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 1.0], n_bins=0
            ),
            "n_bins",
        ),
        (lambda: crps_decomposition([0.0], variance=[-1.0], targets=[0.0]), "variance must be > 0"),
        (
            lambda: gaussian_score_decomposition(
                [0.0, 1.0], variance=[1.0, 1.0], targets=[0.0, 1.0], n_bins=None
            ),
            "use fewer bins",
        ),
        (
            lambda: gaussian_score_decomposition(
                [0.0, 0.0], variance=[1.0, 1.0], targets=[1.0, 1.0], n_bins=None
            ),
            "zero variance",
        ),
        (
            lambda: gaussian_score_decomposition(
                [0.0, 0.0], variance=[1.0, 1.0], targets=[0.0, 1.0], score="crps"
            ),
            "score must be",
        ),
        (
            lambda: gaussian_score_decomposition(
                [0.0, 0.0], variance=[1.0, 1.0], targets=[0.0, 1.0], n_bins=(1, 2, 3)
            ),
            "pair",
        ),
        (lambda: gini_half_mean_difference([[1.0, 2.0]]), "1-D"),
    ],
)
def test_bad_input_is_refused(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CalibrationInputError, match=match):
        call()
