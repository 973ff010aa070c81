"""The calibration hierarchy of clinical risk models (calipers.clinical).

Every number is compared with an independent computation written here: a plain
O(n^2) loess, scipy.optimize of the logistic log-likelihood, closed forms, and
(where installed) statsmodels' GLM.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit
from scipy.stats import norm

from calipers.clinical import _flexible_calibration_curve as fcc
from calipers.clinical import (
    calibration_hierarchy,
    calibration_hierarchy_by_class,
    calibration_in_the_large,
    calibration_intercept_slope,
    flexible_calibration_curve,
    integrated_calibration_index,
)
from calipers.validation import CalibrationInputError

Z95 = float(norm.ppf(0.975))


def overfitted(n: int, seed: int = 0, slope: float = 0.7, shift: float = 0.0):
    """Risks of a model whose true calibration slope is ``slope``."""
    rng = np.random.default_rng(seed)
    lp = rng.normal(-1.2, 1.3, n)
    y = (rng.uniform(size=n) < expit(shift + slope * lp)).astype(float)
    return expit(lp), y


# --------------------------------------------------------------- independent loess


def naive_loess(x, y, at, span=0.75, degree=2, w=None):
    """Cleveland's loess at each point of ``at``, straight from the definition."""
    n = len(x)
    q = int(np.floor(n * span)) if span < 1 else n
    w = np.ones(n) if w is None else w
    fit, lev = [], []
    for x0 in at:
        dist = np.abs(x - x0)
        d = np.sort(dist)[q - 1] if span < 1 else dist.max() * span
        t = np.clip(1 - (dist / d) ** 3, 0, None) ** 3 * w
        X = np.vander(x - x0, degree + 1, increasing=True)
        A = (X * t[:, None]).T @ X
        L = np.linalg.solve(A, (X * t[:, None]).T)[0]  # the smoother's weights at x0
        fit.append(L @ y)
        lev.append(np.sqrt(np.sum(L**2)))
    return np.array(fit), np.array(lev)


def test_loess_equals_its_definition_row_by_row_and_by_blocks(monkeypatch):
    rng = np.random.default_rng(1)
    n = 1500
    x = np.r_[rng.uniform(0.02, 0.3, n // 2), rng.beta(2, 2, n - n // 2)]  # a gap too
    y = (rng.uniform(size=n) < x**1.5).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    at = np.r_[np.linspace(x.min(), x.max(), 11), x[:7]]
    for span, degree, weights in ((0.75, 2, None), (0.4, 1, w), (0.75, 0, None), (1.5, 2, w)):
        want, want_lev = naive_loess(x, y, at, span, degree, weights)
        got, lev = fcc._Loess(x, y, weights, span, degree).fit(at, want_se=True)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11)
        np.testing.assert_allclose(lev, want_lev, rtol=1e-9)
        # the O(sqrt n)-a-point block sums (used for large n) give the same numbers
        monkeypatch.setattr(fcc, "_DIRECT_UP_TO", 0)
        monkeypatch.setattr(fcc, "_BLOCKED_FROM", 16)
        got_b, lev_b = fcc._Loess(x, y, weights, span, degree).fit(at, want_se=True)
        monkeypatch.undo()
        np.testing.assert_allclose(got_b, want, rtol=0, atol=1e-10)
        np.testing.assert_allclose(lev_b, want_lev, rtol=1e-8)


def test_loess_blocks_with_ties_and_a_single_value(monkeypatch):
    monkeypatch.setattr(fcc, "_DIRECT_UP_TO", 0)
    monkeypatch.setattr(fcc, "_BLOCKED_FROM", 16)
    rng = np.random.default_rng(2)
    x = np.round(rng.uniform(0.05, 0.95, 900), 2)  # 91 distinct risks
    y = (rng.uniform(size=900) < x).astype(float)
    at = np.unique(x)[::5]
    want, _ = naive_loess(x, y, at)
    got, _ = fcc._Loess(x, y, None, 0.75, 2).fit(at)
    np.testing.assert_allclose(got, want, atol=1e-10)


# ------------------------------------------------------------ calibration in the large


def test_calibration_in_the_large_by_hand():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.2])
    y = np.array([0, 0, 1, 1, 1])
    r = calibration_in_the_large(p, y)
    assert r.n == 5 and r.n_events == 3
    assert r.mean_predicted == pytest.approx(1.2 / 5)
    assert r.observed_rate == pytest.approx(0.6)
    assert r.difference == pytest.approx(0.6 - 0.24)
    res = y - p
    se = np.std(res, ddof=1) / math.sqrt(5)
    assert r.difference_interval == pytest.approx((0.36 - Z95 * se, 0.36 + Z95 * se))
    assert r.oe_ratio == pytest.approx(3 / 1.2)
    se_log = math.sqrt((1 - 0.6) / 3)  # Debray et al. 2017
    assert r.oe_interval == pytest.approx(
        (2.5 * math.exp(-Z95 * se_log), 2.5 * math.exp(Z95 * se_log))
    )


def test_calibration_in_the_large_weights_are_frequency_weights():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.array([0, 1, 1, 0])
    w = np.array([1, 3, 2, 1])
    a = calibration_in_the_large(p, y, sample_weight=w)
    b = calibration_in_the_large(np.repeat(p, w), np.repeat(y, w))
    assert a.oe_ratio == pytest.approx(b.oe_ratio)
    assert a.difference == pytest.approx(b.difference)
    assert a.difference_interval == pytest.approx(b.difference_interval)
    assert a.oe_interval == pytest.approx(b.oe_interval)


def test_no_event_has_no_oe_interval():
    r = calibration_in_the_large([0.1, 0.2], [0, 0])
    assert r.oe_ratio == 0 and all(math.isnan(v) for v in r.oe_interval)


# ---------------------------------------------------------- calibration intercept/slope


def _mle(lp, y, w, slope):
    def nll(theta):
        eta = theta[0] + (theta[1] * lp if slope else lp)
        return np.sum(w * (np.logaddexp(0, eta) - y * eta))

    def grad(theta):
        eta = theta[0] + (theta[1] * lp if slope else lp)
        r = w * (expit(eta) - y)
        return np.array([r.sum(), (r * lp).sum()]) if slope else np.array([r.sum()])

    x0 = np.array([0.0, 1.0]) if slope else np.array([0.0])
    res = minimize(nll, x0, jac=grad, method="BFGS", options={"gtol": 1e-10})
    return res.x


def test_intercept_and_slope_maximise_the_likelihood():
    p, y = overfitted(3000, seed=3, slope=0.6, shift=0.4)
    w = np.random.default_rng(4).uniform(0.5, 2, 3000)
    for weights in (None, w):
        r = calibration_intercept_slope(p, y, sample_weight=weights)
        ww = np.ones(3000) if weights is None else weights
        (a,) = _mle(logit(p), y, ww, slope=False)
        c, b = _mle(logit(p), y, ww, slope=True)
        assert r.intercept == pytest.approx(a, abs=1e-6)
        assert r.slope == pytest.approx(b, abs=1e-6)
        assert r.slope_model_intercept == pytest.approx(c, abs=1e-6)
        # Wald intervals from the Fisher information, written out here
        mu = expit(c + b * logit(p))
        X = np.column_stack([np.ones(3000), logit(p)])
        cov = np.linalg.inv((X * (ww * mu * (1 - mu))[:, None]).T @ X)
        assert r.slope_se == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-5)
        assert r.slope_interval == pytest.approx(
            (r.slope - Z95 * r.slope_se, r.slope + Z95 * r.slope_se)
        )


def test_intercept_of_constant_risks_is_closed_form():
    # one risk p0 for everyone: a = logit(event rate) - logit(p0), se = 1/sqrt(n r (1-r))
    y = np.array([1] * 30 + [0] * 70)
    r = calibration_intercept_slope(np.full(100, 0.2), y, confidence=0.9)
    assert r.intercept == pytest.approx(logit(0.3) - logit(0.2), abs=1e-12)
    assert r.intercept_se == pytest.approx(1 / math.sqrt(100 * 0.3 * 0.7), rel=1e-10)
    z = norm.ppf(0.95)
    assert r.intercept_interval[1] == pytest.approx(r.intercept + z * r.intercept_se)


def test_intercept_and_slope_equal_statsmodels_glm():
    sm = pytest.importorskip("statsmodels.api")
    p, y = overfitted(2000, seed=5, slope=1.3, shift=-0.3)
    w = np.random.default_rng(6).integers(1, 4, 2000).astype(float)
    for weights in (None, w):
        r = calibration_intercept_slope(p, y, sample_weight=weights)
        lp = logit(p)
        fam = sm.families.Binomial()
        m0 = sm.GLM(y, np.ones((2000, 1)), family=fam, offset=lp, freq_weights=weights)
        m0 = m0.fit(tol=1e-14)
        m1 = sm.GLM(y, sm.add_constant(lp), family=fam, freq_weights=weights).fit(tol=1e-14)
        assert abs(r.intercept - m0.params[0]) < 1e-8
        assert abs(r.intercept_se - m0.bse[0]) < 1e-8
        assert abs(r.slope_model_intercept - m1.params[0]) < 1e-8
        assert abs(r.slope - m1.params[1]) < 1e-8
        assert abs(r.slope_se - m1.bse[1]) < 1e-8
        lo, hi = m1.conf_int(alpha=0.05)[1]
        assert r.slope_interval == pytest.approx((lo, hi), abs=1e-8)


def test_certain_risks_are_refused_naming_the_row():
    with pytest.raises(
        CalibrationInputError,
        match=r"row 2 of probs is 1\.0: the calibration intercept and slope cannot use a risk of exactly 0 or 1, whose logit is infinite \(2 such rows\)",
    ):
        calibration_intercept_slope([0.2, 0.4, 1.0, 0.0], [0, 1, 1, 0])
    with pytest.raises(CalibrationInputError, match="row 2 of probs"):
        calibration_hierarchy([0.2, 0.4, 1.0, 0.0], [0, 1, 1, 0])


def test_one_outcome_only_is_refused():
    with pytest.raises(CalibrationInputError, match="labels are all 0"):
        calibration_intercept_slope([0.2, 0.4], [0, 0])


# ------------------------------------------------------------------- curve and ICI


def test_ici_equals_austin_steyerberg_loess_definition():
    p, y = overfitted(800, seed=7, slope=0.6)
    fitted, _ = naive_loess(p, y, p)
    diff = np.abs(p - fitted)
    idx = integrated_calibration_index(p, y)
    assert idx.exact
    assert idx.ici == pytest.approx(diff.mean(), abs=1e-10)
    assert idx.e50 == pytest.approx(np.median(diff), abs=1e-10)
    assert idx.e90 == pytest.approx(np.quantile(diff, 0.9), abs=1e-10)
    assert idx.emax == pytest.approx(diff.max(), abs=1e-10)


def test_ici_with_weights():
    p, y = overfitted(600, seed=8, slope=0.8)
    w = np.random.default_rng(9).uniform(0.2, 3, 600)
    fitted, _ = naive_loess(p, y, p, w=w)
    diff = np.abs(p - fitted)
    idx = integrated_calibration_index(p, y, sample_weight=w)
    assert idx.ici == pytest.approx(np.average(diff, weights=w), abs=1e-10)
    order = np.argsort(diff)
    cw = np.cumsum(w[order])
    assert idx.e50 == pytest.approx(diff[order][np.searchsorted(cw, 0.5 * cw[-1])], abs=1e-10)


def test_grid_interpolation_error_of_a_large_sample():
    # above the exact size the curve is read from 200 grid points (documented: 5e-5)
    p, y = overfitted(6000, seed=10, slope=0.75)
    idx = integrated_calibration_index(p, y)
    assert not idx.exact
    sub = np.random.default_rng(11).choice(6000, 40, replace=False)
    exact_at, _ = naive_loess(p, y, p[sub])
    curve = flexible_calibration_curve(p, y)
    assert np.max(np.abs(curve(p[sub]) - exact_at)) < 5e-5
    # the grid values themselves are exact
    at_grid, _ = naive_loess(p, y, curve.grid[::20])
    np.testing.assert_allclose(curve.estimate[::20], at_grid, atol=1e-10)


def test_curve_band_is_the_binomial_wald_band():
    p, y = overfitted(1000, seed=12)
    curve = flexible_calibration_curve(p, y, grid=25, confidence=0.9)
    fit, lev = naive_loess(p, y, curve.grid)
    m = np.clip(fit, 0, 1)
    se = np.sqrt(m * (1 - m)) * lev
    z = norm.ppf(0.95)
    np.testing.assert_allclose(curve.lower, np.clip(fit - z * se, 0, 1), atol=1e-10)
    np.testing.assert_allclose(curve.upper, np.clip(fit + z * se, 0, 1), atol=1e-10)


def _rcs(x, knots):
    """Harrell's restricted cubic spline basis (Hmisc's rcspline.eval, norm = 2)."""
    k = len(knots)
    t = knots
    cols = [x]
    for j in range(k - 2):
        c = (
            np.maximum(x - t[j], 0) ** 3
            - np.maximum(x - t[k - 2], 0) ** 3 * (t[k - 1] - t[j]) / (t[k - 1] - t[k - 2])
            + np.maximum(x - t[k - 1], 0) ** 3 * (t[k - 2] - t[j]) / (t[k - 1] - t[k - 2])
        )
        cols.append(c / (t[-1] - t[0]) ** 2)
    return np.column_stack([np.ones_like(x)] + cols)


@pytest.mark.parametrize("n_knots", [3, 4, 5])
def test_rcs_curve_is_the_spline_logistic_regression(n_knots):
    p, y = overfitted(2000, seed=13, slope=0.7)
    quantiles = {
        3: [0.1, 0.5, 0.9],
        4: [0.05, 0.35, 0.65, 0.95],
        5: [0.05, 0.275, 0.5, 0.725, 0.95],
    }
    knots = np.quantile(logit(p), quantiles[n_knots])
    X = _rcs(logit(p), knots)

    def nll(b):
        eta = X @ b
        return np.sum(np.logaddexp(0, eta) - y * eta)

    def grad(b):
        return X.T @ (expit(X @ b) - y)

    beta = minimize(nll, np.zeros(X.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-9}).x
    curve = flexible_calibration_curve(p, y, method="rcs", n_knots=n_knots)
    np.testing.assert_allclose(curve.knots, knots)
    at = np.array([0.05, 0.2, 0.5])
    np.testing.assert_allclose(curve(at), expit(_rcs(logit(at), knots) @ beta), atol=1e-6)
    idx = integrated_calibration_index(p, y, method="rcs", n_knots=n_knots)
    diff = np.abs(p - expit(X @ beta))
    assert idx.ici == pytest.approx(diff.mean(), abs=1e-6)


# ------------------------------------------------------------------------ hierarchy


def test_hierarchy_collects_the_levels_and_discrimination():
    p, y = overfitted(1200, seed=14, slope=0.6, shift=0.3)
    h = calibration_hierarchy(p, y)
    assert h.n == 1200 and h.n_events == y.sum()
    assert h.in_the_large == calibration_in_the_large(p, y)
    assert h.weak == calibration_intercept_slope(p, y)
    assert h.index == integrated_calibration_index(p, y)
    assert h.brier == pytest.approx(np.mean((p - y) ** 2))
    # c-statistic: the share of (event, non-event) pairs ranked right, ties one half
    pos, neg = p[y == 1], p[y == 0]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert h.c_statistic == pytest.approx(pairs, abs=1e-12)
    json.dumps(h.to_dict())


def test_c_statistic_with_ties_by_hand():
    from calipers.clinical._calibration_hierarchy import _c_statistic

    p = np.array([0.1, 0.4, 0.4, 0.8, 0.4])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    # pairs (event, non-event): (0.4, 0.1) 1, (0.4, 0.4) 1/2, (0.8, .) 1 1, (0.4 . ) 1, 1/2
    assert _c_statistic(p, y, None) == pytest.approx((1 + 0.5 + 1 + 1 + 1 + 0.5) / 6)
    w = np.array([1.0, 2.0, 1.0, 1.0, 1.0])
    assert _c_statistic(p, y, w) == pytest.approx(_c_statistic(np.r_[p, 0.4], np.r_[y, 1.0], None))


def test_summary_reads_the_slope_and_does_not_over_read():
    p, y = overfitted(4000, seed=15, slope=0.6)
    lines = calibration_hierarchy(p, y).summary()
    assert any("Calibration slope" in s and "predictions too extreme" in s for s in lines)
    p, y = overfitted(4000, seed=16, slope=1.6)
    lines = calibration_hierarchy(p, y).summary()
    assert any("predictions too moderate" in s for s in lines)
    p, y = overfitted(300, seed=17, slope=1.0)  # calibrated, small: the CIs contain 1 and 0
    h = calibration_hierarchy(p, y)
    lo, hi = h.weak.slope_interval
    assert lo < 1 < hi
    text = " ".join(h.summary())
    assert "no evidence that the risks are too extreme" in text
    assert "too extreme (" not in text and "too moderate (" not in text


def test_summary_reads_the_intercept_sign():
    p, y = overfitted(4000, seed=18, slope=1.0, shift=-0.6)  # fewer events than predicted
    h = calibration_hierarchy(p, y)
    assert h.weak.intercept_interval[1] < 0
    assert any("risks overestimated" in s for s in h.summary())
    assert any("fewer events than predicted" in s for s in h.summary())


def test_by_class_is_one_vs_rest_with_class_names():
    rng = np.random.default_rng(19)
    P = rng.dirichlet([2, 3, 2], 600)
    y = np.array([rng.choice(3, p=row) for row in P])
    names = np.array(["mild", "moderate", "severe"])
    by = calibration_hierarchy_by_class(P, names[y], classes=names)
    assert list(by) == ["mild", "moderate", "severe"]
    for j, name in enumerate(names):
        one = calibration_hierarchy(P[:, j], (y == j).astype(int))
        assert by[name].weak == one.weak
        assert by[name].index == one.index
    assert list(calibration_hierarchy_by_class(P, y)) == [0, 1, 2]


def test_binary_two_columns_and_class_names():
    p, y = overfitted(500, seed=20)
    a = calibration_hierarchy(np.column_stack([1 - p, p]), y)
    b = calibration_hierarchy(p, np.where(y == 1, "event", "none"), classes=["none", "event"])
    assert a.weak == calibration_hierarchy(p, y).weak == b.weak


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"confidence": 1.5}, "confidence must be in"),
        ({"curve": "spline"}, 'method must be "loess" or "rcs"'),
        ({"n_groups": 1}, "n_groups"),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs, message):
    p, y = overfitted(100, seed=21)
    with pytest.raises(CalibrationInputError, match=message):
        calibration_hierarchy(p, y, **kwargs)


def test_curve_arguments_checked():
    p, y = overfitted(100, seed=22)
    with pytest.raises(CalibrationInputError, match="n_knots"):
        flexible_calibration_curve(p, y, method="rcs", n_knots=8)
    with pytest.raises(CalibrationInputError, match="degree"):
        flexible_calibration_curve(p, y, degree=3)
    with pytest.raises(CalibrationInputError, match="binary risks"):
        calibration_hierarchy(np.full((4, 3), 1 / 3), [0, 1, 2, 0])


def test_hierarchy_carries_the_tests_and_the_belt_on_request():
    from calipers.clinical import calibration_belt, hosmer_lemeshow_test, spiegelhalter_z_test

    p, y = overfitted(1500, seed=23, slope=0.7)
    h = calibration_hierarchy(p, y, n_groups=8)
    hl = hosmer_lemeshow_test(p, y, n_groups=8)
    assert (h.hosmer_lemeshow.statistic, h.hosmer_lemeshow.df) == (hl.statistic, hl.df)
    assert h.spiegelhalter == spiegelhalter_z_test(p, y)
    assert h.belt is None
    hb = calibration_hierarchy(p, y, belt=True)
    belt = calibration_belt(p, y, confidence_levels=(0.8, 0.95))
    assert hb.belt is not None and hb.belt.p_value == belt.p_value
    np.testing.assert_array_equal(hb.belt.lower, belt.lower)
    text = "\n".join(hb.summary())
    assert "Hosmer-Lemeshow test (8 risk groups)" not in text  # the default 10 here
    assert "Calibration belt (degree" in text and "Spiegelhalter z test" in text
    json.dumps(hb.to_dict())


def test_weights_are_repeated_rows_throughout_the_hierarchy():
    p, y = overfitted(400, seed=24, slope=0.8)
    p = np.round(p, 2)  # ties too
    w = np.random.default_rng(25).integers(1, 4, 400)
    a = calibration_hierarchy(p, y, sample_weight=w)
    b = calibration_hierarchy(np.repeat(p, w), np.repeat(y, w))
    assert a.c_statistic == pytest.approx(b.c_statistic, abs=1e-12)
    assert a.brier == pytest.approx(b.brier, abs=1e-12)
    assert a.weak.slope == pytest.approx(b.weak.slope, abs=1e-9)
    assert a.weak.slope_se == pytest.approx(b.weak.slope_se, abs=1e-9)
    assert a.in_the_large.oe_interval == pytest.approx(b.in_the_large.oe_interval)


def test_summary_says_when_the_hosmer_lemeshow_p_value_rests_on_sparse_groups():
    # rare events: the lowest risk groups expect well under 5 events, and one event in a
    # group of risks near 1e-4 makes the chi-square statistic huge
    rng = np.random.default_rng(20)
    p = 1.0 / (1.0 + np.exp(-rng.normal(-6.0, 2.5, 600)))
    y = (rng.random(600) < p).astype(float)
    y[np.argmin(p)] = 1.0
    h = calibration_hierarchy(p, y)
    hl = h.hosmer_lemeshow
    # the count of sparse groups, recomputed from the groups' own risks
    sparse = 0
    for lo, hi in zip(hl.breaks[:-1], hl.breaks[1:], strict=True):
        in_group = (p > lo) & (p <= hi) if lo > hl.breaks[0] else (p >= lo) & (p <= hi)
        e1 = p[in_group].sum()
        sparse += int(in_group.any() and (e1 < 5 or in_group.sum() - e1 < 5))
    assert sparse > 0
    line = next(s for s in h.summary() if s.startswith("Hosmer-Lemeshow"))
    assert f"{sparse} of the {hl.group_sizes.size} groups expect fewer than 5" in line
    # moderate risks and enough rows: every group expects 5 or more of each, no caveat
    p, y = overfitted(4000, seed=21, slope=1.0)
    line = next(s for s in calibration_hierarchy(p, y).summary() if s.startswith("Hosmer"))
    assert "fewer than 5" not in line
