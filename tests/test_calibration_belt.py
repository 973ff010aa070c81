"""The calibration belt (Finazzi et al. 2011) and its test (Nattino, Finazzi & Bertolini 2014).

The references are written here independently of the code under test: the forward
selection and the fits with scipy.optimize, the null distribution of the statistic
from its definition (the likelihood ratio against the bisector, chi-square with
``m + 1`` degrees of freedom, given that every likelihood-ratio step of the
selection exceeded the chi-square(1) quantile), the ends of the belt as
constrained optimisations with SLSQP.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import minimize
from scipy.stats import chi2, norm

import calipers.clinical._calibration_belt as belt_module
from calipers.clinical import CalibrationBelt, calibration_belt
from calipers.validation import CalibrationInputError

Q = 0.95
K = chi2.ppf(Q, 1)
A = 1 - Q


def _reference_cdf(t: float, m: int) -> float:
    """P(chi2_2 + U_2 + ... + U_m <= t | every U_j > K), U_j chi-square(1)."""
    if m == 1:
        return float(chi2.cdf(t, 2))
    if m == 2:
        num = integrate.quad(lambda u: chi2.cdf(t - u, 2) * chi2.pdf(u, 1), K, max(t, K))[0]
        return num / A
    if m == 3:
        num = integrate.dblquad(
            lambda v, u: chi2.cdf(t - u - v, 2) * chi2.pdf(u, 1) * chi2.pdf(v, 1),
            K,
            max(t - K, K),
            K,
            lambda u: max(t - u, K),
        )[0]
        return num / A**2
    # m == 4: conditional Monte Carlo, U_j = Z^2 drawn with |Z| above sqrt(K)
    return float(np.mean(-np.expm1(-np.maximum(t - _tail_draws(), 0.0) / 2)))


def _tail_draws() -> np.ndarray:
    if not _DRAWS:
        rng = np.random.default_rng(0)
        z = norm.ppf(1 - A / 2 + (A / 2) * rng.uniform(size=(3, 300_000)))
        _DRAWS.append((z**2).sum(axis=0))
    return _DRAWS[0]


_DRAWS: list[np.ndarray] = []


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_null_distribution_given_the_selection(m):
    for t in (m * K + 0.5, m * K + 3.0, m * K + 8.0, 25.0):
        expected = _reference_cdf(t, m)
        got = belt_module._statistic_cdf(t, m, Q)
        tol = 2e-3 if m == 4 else 1e-7
        assert got == pytest.approx(expected, abs=tol), (m, t)
    assert belt_module._statistic_cdf((m - 1) * K, m, Q) == 0.0


def test_quantile_inverts_the_cdf():
    for m in (1, 2, 3, 4):
        for level in (0.8, 0.95):
            c = belt_module._statistic_quantile(level, m, Q)
            assert belt_module._statistic_cdf(c, m, Q) == pytest.approx(level, abs=1e-9)
    # degree 1: the chi-square(2) quantile, -2 log(1 - level)
    assert belt_module._statistic_quantile(0.95, 1, Q) == pytest.approx(-2 * math.log(0.05))


def _loglik(beta, x, y):
    eta = np.vander(x, len(beta), increasing=True) @ beta
    return float(y @ eta - np.logaddexp(0, eta).sum())


def _fit(x, y, m):
    res = minimize(
        lambda b: -_loglik(b, x, y),
        np.r_[0.0, 1.0, np.zeros(m - 1)],
        method="BFGS",
        options={"gtol": 1e-9},
    )
    return res.x, -res.fun


def _data(n, seed, curve):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.9, n)
    x = np.log(p / (1 - p))
    y = rng.binomial(1, 1 / (1 + np.exp(-curve(x)))).astype(float)
    return p, x, y


def test_selection_fit_statistic_and_p_value_match_a_scipy_reference():
    p, x, y = _data(400, 1, lambda x: 0.3 + 0.7 * x - 0.1 * x**2)
    b = calibration_belt(p, y, grid=12)
    # forward selection written independently
    beta, ll = _fit(x, y, 1)
    m = 1
    for deg in (2, 3, 4):
        beta_new, ll_new = _fit(x, y, deg)
        if chi2.cdf(2 * (ll_new - ll), 1) < Q:
            break
        beta, ll, m = beta_new, ll_new, deg
    assert b.degree == m == 2
    np.testing.assert_allclose(b.coefficients, beta, rtol=1e-5, atol=1e-6)
    ll_bis = float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))
    assert b.statistic == pytest.approx(2 * (ll - ll_bis), rel=1e-7)
    assert b.p_value == pytest.approx(1 - _reference_cdf(b.statistic, m), abs=1e-7)
    np.testing.assert_allclose(
        b.curve, 1 / (1 + np.exp(-np.polyval(beta[::-1], _logit(b.grid)))), rtol=1e-5
    )


def _logit(p):
    p = np.asarray(p)
    return np.log(p / (1 - p))


def test_belt_ends_are_the_extremes_over_the_likelihood_region():
    p, x, y = _data(300, 2, lambda x: 0.2 + 0.8 * x)
    b = calibration_belt(p, y, grid=8)
    m = b.degree
    beta, ll = _fit(x, y, m)
    for li, level in enumerate(b.confidence_levels):
        c_level = belt_module._statistic_quantile(level, m, Q)
        cons = {"type": "ineq", "fun": lambda v, t=ll - c_level / 2: _loglik(v, x, y) - t}
        for j in (0, 3, 7):
            c = _logit(b.grid[j]) ** np.arange(m + 1)
            lo = minimize(
                lambda v, c=c: c @ v,
                beta,
                constraints=[cons],
                method="SLSQP",
                options={"ftol": 1e-12, "maxiter": 500},
            )
            hi = minimize(
                lambda v, c=c: -(c @ v),
                beta,
                constraints=[cons],
                method="SLSQP",
                options={"ftol": 1e-12, "maxiter": 500},
            )
            assert b.lower[li, j] == pytest.approx(1 / (1 + math.exp(-lo.fun)), rel=1e-6)
            assert b.upper[li, j] == pytest.approx(1 / (1 + math.exp(hi.fun)), rel=1e-6)


def test_expansion_gives_the_belt_of_every_row(monkeypatch):
    # 20 000 rows: the ends are solved on the moment expansion; forcing the solve
    # on every row (tolerance below any bound) gives the same belt
    p, x, y = _data(20_000, 3, lambda x: 0.1 + 1.1 * x)
    fast = calibration_belt(p, y, grid=6)
    monkeypatch.setattr(belt_module, "_TOLERANCE", -1.0)
    slow = calibration_belt(p, y, grid=6)
    np.testing.assert_allclose(fast.lower, slow.lower, rtol=1e-9)
    np.testing.assert_allclose(fast.upper, slow.upper, rtol=1e-9)


def test_grid_is_that_of_givitir():
    p, x, y = _data(300, 4, lambda x: x)
    b = calibration_belt(p, y, grid=10)
    half_logit = np.linspace(x.min(), x.max(), 5)
    half_prob = np.linspace(p.min(), p.max(), 5)
    expected = np.sort(np.r_[1 / (1 + np.exp(-half_logit)), half_prob])
    np.testing.assert_allclose(b.grid, expected, rtol=1e-12)


def test_belt_orders_and_contains_the_curve():
    p, x, y = _data(1000, 5, lambda x: 0.4 + 0.6 * x)
    b = calibration_belt(p, y, grid=20)
    assert isinstance(b, CalibrationBelt)
    assert b.lower.shape == b.upper.shape == (2, 20)
    assert np.all(b.lower <= b.curve + 1e-12) and np.all(b.curve <= b.upper + 1e-12)
    # the 95 % belt holds the 80 % belt
    assert np.all(b.lower[1] <= b.lower[0] + 1e-12) and np.all(b.upper[0] <= b.upper[1] + 1e-12)
    assert b.p_value < 1e-3


def test_deviations_by_hand():
    grid = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    lower = np.array([[0.05, 0.15, 0.32, 0.45, 0.45]])
    upper = np.array([[0.08, 0.30, 0.50, 0.60, 0.70]])
    b = CalibrationBelt(
        degree=1,
        coefficients=np.array([0.0, 1.0]),
        grid=grid,
        lower=lower,
        upper=upper,
        confidence_levels=(0.95,),
        statistic=0.0,
        p_value=1.0,
        significance=0.95,
        curve=grid,
    )
    got = b.deviations()
    # upper < bisector at 0.1 (0.08), back over it between 0.1 and 0.2: the line
    # through (0.1, -0.02) and (0.2, +0.1) crosses 0 at 0.1 + 0.1 * 0.02 / 0.12
    # lower > bisector at 0.3 and 0.4: starts between 0.2 (-0.05) and 0.3 (+0.02),
    # ends between 0.4 (+0.05) and 0.5 (-0.05)
    assert got[0] == (0.1, pytest.approx(0.1 + 0.1 * 0.02 / 0.12), "over")
    assert got[1] == (pytest.approx(0.2 + 0.1 * 0.05 / 0.07), pytest.approx(0.45), "under")
    assert len(got) == 2
    assert b.deviations(0.95) == got
    with pytest.raises(CalibrationInputError, match="level"):
        b.deviations(0.9)


def test_well_calibrated_risks_pass():
    p, x, y = _data(3000, 6, lambda x: x)
    b = calibration_belt(p, y, grid=10)
    assert b.p_value > 0.01
    assert b.deviations(0.95) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_degree": 5}, "max_degree"),
        ({"max_degree": 0}, "max_degree"),
        ({"confidence_levels": (0.8, 1.0)}, "confidence_levels"),
        ({"grid": 1}, "grid"),
        ({"significance": 1.0}, "significance"),
    ],
)
def test_refuses_bad_arguments(kwargs, match):
    p, x, y = _data(100, 7, lambda x: x)
    with pytest.raises(CalibrationInputError, match=match):
        calibration_belt(p, y, **kwargs)


def test_refuses_data_it_cannot_fit():
    with pytest.raises(CalibrationInputError, match="row 1"):
        calibration_belt([0.2, 0.0, 0.5, 0.7], [0, 0, 1, 1])
    with pytest.raises(CalibrationInputError, match="at least 2 events"):
        calibration_belt([0.2, 0.3, 0.5, 0.7], [0, 0, 0, 1])
    with pytest.raises(CalibrationInputError, match="separate"):
        calibration_belt([0.2, 0.3, 0.5, 0.7, 0.8], [0, 0, 1, 1, 1])


def test_to_dict_is_json_ready():
    import json

    p, x, y = _data(300, 8, lambda x: x)
    d = calibration_belt(p, y, grid=6).to_dict()
    json.dumps(d)
    assert set(d["deviations"]) == {"0.8", "0.95"}


def test_without_newton_convergence_slsqp_gives_the_same_belt(monkeypatch):
    p, x, y = _data(300, 9, lambda x: 0.3 + 0.8 * x)
    newton = calibration_belt(p, y, grid=4)
    solve = belt_module._extreme

    def never_converges(*args):
        g, mu, _ = solve(*args)
        return g, mu, False

    monkeypatch.setattr(belt_module, "_extreme", never_converges)
    fallback = calibration_belt(p, y, grid=4)
    np.testing.assert_allclose(fallback.lower, newton.lower, rtol=1e-5)
    np.testing.assert_allclose(fallback.upper, newton.upper, rtol=1e-5)

    class Failed:
        success = False
        x = np.array([0.0, 1.0])  # the bisector, not on the boundary of the region

    monkeypatch.setattr(belt_module, "minimize", lambda *a, **k: Failed())
    with pytest.raises(CalibrationInputError, match="did not converge"):
        calibration_belt(p, y, grid=4)
