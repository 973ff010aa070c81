"""Tests of calipers.calibration_sharpness (Chidambaram & Ge (2024) §4, App. C-D; docs/how-calipers-computes.md §7.1).

Oracles: the worked numbers of docs/how-calipers-computes.md §7.1 and hand formulas for them;
a direct O(n^2) evaluation of the sharpcal-style definitions written here;
exact population values of finite predictors whose law is known (Lemma 4.6,
Cor. 4.7, Prop. 4.8); a binary predictor with a known calibration curve whose
true confidence calibration error is an integral (scipy.integrate.quad).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.integrate import quad

import calipers as cp
from calipers.metrics._calibration_sharpness import calibration_sharpness
from calipers.metrics._calibration_sharpness import confidence_calibration_error as _cce

# The tests below were written against eq. (C.3); the library default is the code's
# form (form="sharpcal"), so calls without form= ask for the plug-in explicitly.
from calipers.validation import CalibrationInputError

confidence_calibration_error = functools.partial(_cce, form="plugin")

H4 = np.array([0.55, 0.6, 0.9, 0.95])
C4 = np.array([1, 0, 1, 1])


def four_points():
    probs = np.stack([H4, 1 - H4], axis=1)  # class 0 is predicted
    return probs, np.where(C4 == 1, 0, 1)


def d1(div, a, b):
    """1-D Bregman divergence written out (Brier: (a - b)^2; KL: Bernoulli KL)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if div == "brier":
        return (a - b) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * np.log(a / b), 0.0)
        t0 = np.where(a < 1, (1 - a) * np.log((1 - a) / (1 - b)), 0.0)
    return t1 + t0


def dfull(div, p, q):
    """Full divergence d_phi(p, q) on the simplex, rows."""
    if div == "brier":
        return ((p - q) ** 2).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(p / q), 0.0).sum(-1)


# ----------------------------------------------------------------------------- worked numbers


def test_worked_example_both_forms():
    """docs/how-calipers-computes.md §7.1: code d_CAL 0.0168096, eq. (C.3) form 0.0262481."""
    e = math.exp(-0.5)
    m = np.array([1 / (1 + e), e / (1 + e), 1.0, 1.0])  # by hand (far points ~1e-8)
    code = np.mean((m - H4) ** 2)
    plugin = np.mean(m**2 - H4**2 - 2 * H4 * (C4 - H4))
    assert abs(code - 0.0168096) < 5e-8 and abs(plugin - 0.0262481) < 5e-8
    probs, labels = four_points()
    for method in ("exact", "binned"):
        got_p = confidence_calibration_error(probs, labels, method=method)
        got_c = confidence_calibration_error(probs, labels, form="sharpcal", method=method)
        assert abs(got_p - 0.0262481) < 5e-8
        assert abs(got_c - 0.0168096) < 5e-8
    r = calibration_sharpness(probs, labels)
    assert abs(r.calibration_error - 0.0262481) < 5e-8
    assert abs(r.calibration_error_sharpcal - 0.0168096) < 5e-8


def test_worked_example_kl_by_hand():
    def phi(x):
        return sum(v * math.log(v) for v in (x, 1 - x) if v > 0)

    # m_hat at .9 and .95 differs from 1 by exp(-18)/(1 + exp(-.5)) and ~exp(-24.5)
    e = math.exp(-0.5)
    m = [1 / (1 + e), e / (1 + e), 1 - math.exp(-18) / (1 + e), 1.0]
    plugin = np.mean(
        [
            phi(mi) - phi(h) - math.log(h / (1 - h)) * (c - h)
            for mi, h, c in zip(m, H4, C4, strict=True)
        ]
    )
    code = np.mean(d1("kl", m, H4))
    probs, labels = four_points()
    assert abs(confidence_calibration_error(probs, labels, divergence="kl") - plugin) < 1e-7
    got = confidence_calibration_error(probs, labels, divergence="kl", form="sharpcal")
    assert abs(got - code) < 1e-7


# ----------------------------------------------------------------------------- O(n^2) oracle


def xlogx(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def plugin_term(div, m, h, c):
    """varphi(m) - varphi(h) - varphi'(h) (c - h) of eq. (C.3), written out."""
    if div == "brier":
        return m**2 - h**2 - 2 * h * (c - h)
    phi = lambda x: xlogx(x) + xlogx(1 - x)  # noqa: E731
    return phi(m) - phi(h) - np.log(h / (1 - h)) * (c - h)


def sharpcal_style(probs, labels, x, bw, div):
    """Direct evaluation of docs/how-calipers-computes.md §7.1 (no subsampling, Gaussian kernel)."""
    h, pred = probs.max(1), probs.argmax(1)
    c = (pred == labels).astype(float)
    onehot = np.eye(probs.shape[1])[labels]
    loss = (
        ((probs - onehot) ** 2).sum(1)
        if div == "brier"
        else -np.log(probs[np.arange(len(h)), labels])
    )

    def nw(at, t):
        K = np.exp(-((at[:, None] - h[None, :]) ** 2) / (2 * bw**2)) / (bw * math.sqrt(2 * math.pi))
        kde = K.mean(1)
        return (K * t[None, :]).mean(1) / kde, kde

    m_x, kde = nw(x, c)
    cond, _ = nw(x, loss)
    rho = cond - d1(div, m_x, x)
    gap = rho * kde
    m_h, _ = nw(h, c)
    return {
        "curve": m_x,
        "density": kde,
        "cond": cond,
        "rho": rho,
        "lower": np.maximum(m_x - gap / 2, 0),
        "upper": m_x + gap / 2,
        "code": np.mean(d1(div, m_h, h)),
        "plugin": np.mean(plugin_term(div, m_h, h, c)),
        "total": loss.mean(),
        "acc": c.mean(),
    }


def softmax_data(n, k, seed, temp=1.5):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.standard_normal((n, k))
    pt = np.exp(z - z.max(1, keepdims=True))
    pt /= pt.sum(1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(pt, 1)).sum(1).clip(0, k - 1)
    zz = temp * z
    p = np.exp(zz - zz.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True), labels


@pytest.mark.parametrize("div", ["brier", "kl"])
def test_matches_direct_definitions(div):
    probs, labels = softmax_data(400, 5, seed=3)
    x = np.linspace(0.01, 0.99, 99)  # away from 0 and 1, where the KL 1-D term is infinite
    ref = sharpcal_style(probs, labels, x, 0.05, div)
    for method in ("exact", "binned"):
        # binned: m_hat within 1e-6; the 1-D KL term multiplies m_hat's error by its
        # slope log(m / x) - log((1 - m) / (1 - x)), up to ~5 on this grid
        tol = 1e-10 if method == "exact" else (1e-6 if div == "brier" else 1e-5)
        r = calibration_sharpness(probs, labels, divergence=div, grid=x, method=method)
        np.testing.assert_allclose(r.grid, x)
        np.testing.assert_allclose(r.calibration_curve, ref["curve"], atol=tol)
        np.testing.assert_allclose(r.density, ref["density"], rtol=tol, atol=tol)
        np.testing.assert_allclose(r.conditional_divergence, ref["cond"], rtol=tol, atol=tol)
        np.testing.assert_allclose(r.sharpness_gap, ref["rho"], rtol=tol, atol=tol)
        np.testing.assert_allclose(r.band_lower, ref["lower"], rtol=tol, atol=tol)
        np.testing.assert_allclose(r.band_upper, ref["upper"], rtol=tol, atol=tol)
        assert abs(r.calibration_error_sharpcal - ref["code"]) < tol
        assert abs(r.calibration_error - ref["plugin"]) < tol
        c = confidence_calibration_error(probs, labels, divergence=div, method=method)
        assert abs(c - ref["plugin"]) < tol
    total = cp.brier(probs, labels) if div == "brier" else cp.nll(probs, labels)
    assert abs(r.total_divergence - total) < 1e-12
    assert abs(r.total_divergence - ref["total"]) < 1e-12
    assert r.accuracy == cp.accuracy(probs, labels) == ref["acc"]
    assert r.divergence == div and r.kernel == "gaussian" and r.bandwidth == 0.05
    assert r.n_samples == 400
    np.testing.assert_allclose(r.density_normalized.max(), 1.0)
    assert abs(r.sharpness_gap_mean - (r.total_divergence - r.calibration_error)) < 1e-15


def test_default_grid_and_band_rules():
    probs, labels = softmax_data(300, 4, seed=9)
    r = calibration_sharpness(probs, labels)
    np.testing.assert_array_equal(r.grid, np.linspace(0, 1, 1001))
    gap = r.density * r.sharpness_gap
    np.testing.assert_allclose(r.band_upper, r.calibration_curve + gap / 2)  # not clipped at 1
    np.testing.assert_allclose(r.band_lower, np.maximum(r.calibration_curve - gap / 2, 0))
    assert (r.band_lower >= 0).all()
    assert r.band_upper.max() > 0  # drawn
    r2 = calibration_sharpness(probs, labels, n_points=11)
    np.testing.assert_allclose(r2.calibration_curve, r.calibration_curve[::100], atol=1e-12)


# ----------------------------------------------------------------------------- weights


def test_sample_weight_equals_repetition():
    probs, labels = softmax_data(200, 3, seed=5)
    w = np.random.default_rng(0).integers(0, 4, 200)
    rep = np.repeat(np.arange(200), w)
    for div in ("brier", "kl"):
        for form in ("plugin", "sharpcal"):
            a = confidence_calibration_error(
                probs, labels, divergence=div, form=form, sample_weight=w, method="exact"
            )
            b = confidence_calibration_error(
                probs[rep], labels[rep], divergence=div, form=form, method="exact"
            )
            assert abs(a - b) < 1e-12
        ra = calibration_sharpness(probs, labels, divergence=div, sample_weight=w, n_points=51)
        rb = calibration_sharpness(probs[rep], labels[rep], divergence=div, n_points=51)
        for f in ("calibration_curve", "density", "conditional_divergence", "band_upper"):
            np.testing.assert_allclose(getattr(ra, f), getattr(rb, f), rtol=1e-10, atol=1e-12)
        for f in ("calibration_error", "total_divergence", "accuracy"):
            assert abs(getattr(ra, f) - getattr(rb, f)) < 1e-12


# ----------------------------------------------------------------------------- population theory


def random_predictor(rng, k=4, levels=(0.4, 0.55, 0.7, 0.85)):
    """A finite law: atoms X_j with prediction g(X_j) and true pi_{Y | X_j}.

    Three confidence levels; per level two prediction vectors (different
    arg-max), each shared by two atoms with different pi (so E[pi | g] is a
    mixture). Returns (a (M,), G (M, k), Pi (M, k)).
    """
    a, G, Pi = [], [], []
    for v in rng.choice(levels, size=3, replace=False):
        for cls in rng.choice(k, size=2, replace=False):
            while True:
                rest = rng.dirichlet(np.ones(k - 1)) * (1 - v)
                if rest.max() < v - 0.02:
                    break
            g = np.insert(rest, 0, v)
            g[[0, cls]] = g[[cls, 0]]
            for _ in range(2):
                a.append(rng.random() + 0.2)
                G.append(g)
                Pi.append(rng.dirichlet(np.ones(k) * 0.7))
    a = np.array(a)
    return a / a.sum(), np.array(G), np.array(Pi)


def population(div, a, G, Pi):
    h, c = G.max(1), G.argmax(1)
    out = {"levels": [], "P": [], "acc": [], "rho": [], "rho_e": [], "cond_full_ce": []}
    # canonical (full) CE: E[pi | g] per distinct prediction vector
    full_ce = 0.0
    for g in np.unique(G, axis=0):
        idx = (G == g).all(1)
        Pg = a[idx].sum()
        mean_pi = (a[idx, None] * Pi[idx]).sum(0) / Pg
        full_ce += Pg * dfull(div, mean_pi, g)
    conf_ce = 0.0
    for v in np.unique(h):
        idx = h == v
        Pv = a[idx].sum()
        acc = (a[idx] * Pi[idx, c[idx]]).sum() / Pv
        d1v = float(d1(div, acc, v))
        conf_ce += Pv * d1v
        # E[d(pi_{Y|X}, g) | h = v] and E[d(e_Y, g) | h = v]
        cond_pi = (a[idx] * dfull(div, Pi[idx], G[idx])).sum() / Pv
        ey = np.eye(G.shape[1])
        cond_e = (
            sum(
                a[j] * sum(Pi[j, y] * dfull(div, ey[y], G[j]) for y in range(G.shape[1]))
                for j in np.flatnonzero(idx)
            )
            / Pv
        )
        # Lemma 4.6's left side: E[d(E[pi | g], g) | h = v]
        lhs = 0.0
        for g in np.unique(G[idx], axis=0):
            jdx = (G == g).all(1)
            mean_pi = (a[jdx, None] * Pi[jdx]).sum(0) / a[jdx].sum()
            lhs += a[jdx].sum() * dfull(div, mean_pi, g)
        out["levels"].append(v)
        out["P"].append(Pv)
        out["acc"].append(acc)
        out["rho"].append(cond_pi - d1v)
        out["rho_e"].append(cond_e - d1v)
        out["cond_full_ce"].append((lhs / Pv, d1v))
    out["conf_ce"], out["full_ce"] = conf_ce, full_ce
    return out


@pytest.mark.parametrize("div", ["brier", "kl"])
def test_lemma_4_6_and_prop_4_8_population(div):
    """Lemma 4.6 / Cor. 4.7 (conf CE <= canonical CE, also per level) and Prop. 4.8."""
    rng = np.random.default_rng(2024)
    strict = 0
    for _ in range(200):
        pop = population(div, *random_predictor(rng))
        assert pop["conf_ce"] <= pop["full_ce"] + 1e-15
        strict += pop["full_ce"] - pop["conf_ce"] > 1e-3
        for lhs, rhs in pop["cond_full_ce"]:
            assert lhs >= rhs - 1e-15  # (4.6) at every confidence level
        for r, re in zip(pop["rho"], pop["rho_e"], strict=True):
            assert r >= -1e-15  # Prop. 4.8
            assert re >= r - 1e-15  # the estimated version adds E[d(e_Y, pi) | h] >= 0
    assert strict > 150  # the bound is not tight in general


@pytest.mark.parametrize("div", ["brier", "kl"])
def test_estimates_approach_population_values(div):
    rng = np.random.default_rng(7)
    a, G, Pi = random_predictor(rng)
    pop = population(div, a, G, Pi)
    n = 200_000
    X = rng.choice(len(a), size=n, p=a)
    cum = np.cumsum(Pi[X], axis=1)
    y = (rng.random(n)[:, None] > cum).sum(1).clip(0, G.shape[1] - 1)
    probs = G[X]
    levels = np.array(pop["levels"])
    # levels are >= 0.15 apart = 30 bandwidths: each level is estimated from its own samples
    r = calibration_sharpness(probs, y, divergence=div, bandwidth=0.005, grid=levels)
    h, c = probs.max(1), (probs.argmax(1) == y).astype(float)
    loss = dfull(div, np.eye(G.shape[1])[y], probs)
    emp_acc = np.array([c[h == v].mean() for v in levels])
    emp_loss = np.array([loss[h == v].mean() for v in levels])
    emp_P = np.array([(h == v).mean() for v in levels])
    # 1) the estimator is the empirical plug-in at each level
    np.testing.assert_allclose(r.calibration_curve, emp_acc, rtol=1e-12)
    np.testing.assert_allclose(r.conditional_divergence, emp_loss, rtol=1e-12)
    np.testing.assert_allclose(r.sharpness_gap, emp_loss - d1(div, emp_acc, levels), rtol=1e-10)
    emp_ce = float(np.sum(emp_P * d1(div, emp_acc, levels)))
    assert abs(r.calibration_error - emp_ce) < 1e-12
    assert abs(r.calibration_error_sharpcal - emp_ce) < 1e-12
    # 2) ... which is within 6 standard errors (delta method) of the population value
    P, acc = np.array(pop["P"]), np.array(pop["acc"])
    if div == "brier":
        slope = 2 * (acc - levels)
    else:
        slope = np.log(acc / levels) - np.log((1 - acc) / (1 - levels))
    se_acc = np.sqrt(acc * (1 - acc) / (n * P))
    loss_sd = np.array([loss[h == v].std() for v in levels])
    se_rho = loss_sd / np.sqrt(n * P) + np.abs(slope) * se_acc + 10 * se_acc**2
    assert np.all(np.abs(r.sharpness_gap - np.array(pop["rho_e"])) < 6 * se_rho)
    d1v = d1(div, acc, levels)
    se_ce = np.sum(P * np.abs(slope) * se_acc + d1v * np.sqrt(P * (1 - P) / n) + 10 * P * se_acc**2)
    assert abs(r.calibration_error - pop["conf_ce"]) < 6 * se_ce
    assert 6 * se_ce < 0.2 * pop["conf_ce"]  # the check has teeth
    assert np.all(r.sharpness_gap > 0)


# ----------------------------------------------------------------------------- continuous data


@pytest.mark.parametrize("div", ["brier", "kl"])
def test_sharpness_gap_nonnegative_on_synthetic_softmax(div):
    """Prop. 4.8 up to estimation noise (here the irreducible term keeps it well above 0)."""
    probs, labels = softmax_data(20_000, 10, seed=1)
    r = calibration_sharpness(probs, labels, divergence=div)
    inner = (r.grid > 0) & (r.grid < 1)  # the KL 1-D term is infinite at 0 and 1
    sel = inner & (r.density > 0.01 * r.density.max())
    assert np.nanmin(r.sharpness_gap[sel]) > 0.05
    assert np.all(r.band_upper[sel] >= r.calibration_curve[sel])


# ----------------------------------------------------------------------------- consistency


def _beta21_model(n, rng):
    """f ~ Beta(2, 1) = P(y = 1), P(y = 1 | f) = f^2 (a known binary calibration curve).

    Top-label: h = max(f, 1 - f) is Uniform(1/2, 1) and
    E[1{Y = c} | h = v] = (v * v^2 + (1 - v)(1 - (1 - v)^2)) / 1 = 2v^3 - 3v^2 + 2v.
    (With the symmetric Beta(2, 2) the top-label curve would be exactly v, CE = 0.)
    """
    f = rng.beta(2, 1, n)
    return f, (rng.random(n) < f**2).astype(int)


def _m_true(v):
    return 2 * v**3 - 3 * v**2 + 2 * v


def test_brier_confidence_ce_consistency():
    """Thm. C.4 with sigma_n = 0.05 (n / 10^4)^(-1/5) -> 0 and n sigma_n^2 / log n -> inf."""
    true = quad(lambda v: 2 * (_m_true(v) - v) ** 2, 0.5, 1)[0]  # h has density 2 on [1/2, 1]
    assert abs(true - 1 / 210) < 1e-12  # closed form of the same integral
    seeds = 60
    rel = {"plugin": [], "sharpcal": []}
    for n in (500, 2000, 10_000):
        bw = 0.05 * (n / 10_000) ** -0.2
        vals = {"plugin": [], "sharpcal": []}
        for seed in range(seeds):
            f, y = _beta21_model(n, np.random.default_rng(seed))
            for form in vals:
                vals[form].append(
                    confidence_calibration_error(
                        f, y, bandwidth=bw, form=form, method="binned", lens="top_label"
                    )
                )
        for form in vals:
            rel[form].append((np.mean(vals[form]) - true) / true)
    print("relative bias at n = 500, 2000, 10000:", {k: np.round(v, 3) for k, v in rel.items()})
    # The code's form: biases measured +0.36, +0.11, +0.03 (200 seeds; SE 0.04, 0.02,
    # 0.009). At n = 10^4 the population limit of the smoothing is +0.013 and the
    # variance of m_hat adds about +0.011; the bound 0.1 leaves > 4 SE (60 seeds: 0.017).
    b = np.abs(rel["sharpcal"])
    assert b[2] < b[0] and b[2] < 0.1
    # eq. (C.3): the smoothing bias enters to first order (varphi(m_hat) - varphi(m)),
    # -2.21, -1.55, -0.95 measured; it decreases, but slowly: its sigma -> 0 limit
    # at sigma = 0.05 is -0.963 (test_plugin_form_smoothing_limit)
    b = np.abs(rel["plugin"])
    assert b[0] > b[1] > b[2]
    assert -1.05 < rel["plugin"][2] < -0.85


def test_plugin_form_smoothing_limit():
    """n -> infinity at fixed sigma: eq. (C.3) tends to E[m_s^2 + h^2 - 2 h m] with the
    population-smoothed curve m_s; check the estimator at n = 10^5 against it."""
    sigma = 0.05
    xg, wg = np.polynomial.legendre.leggauss(400)
    v, wv = 0.75 + 0.25 * xg, 0.25 * wg  # nodes on [1/2, 1]
    K = np.exp(-((v[:, None] - v[None, :]) ** 2) / (2 * sigma**2))
    m_s = (K @ (wv * _m_true(v))) / (K @ wv)
    limit_plugin = float(np.sum(2 * wv * (m_s**2 + v**2 - 2 * v * _m_true(v))))
    limit_code = float(np.sum(2 * wv * (m_s - v) ** 2))
    true = 1 / 210
    assert abs(limit_plugin / true - 1 + 0.963) < 0.002  # -96.3 %
    assert abs(limit_code / true - 1 - 0.0129) < 0.002  # +1.3 %
    vals = []
    for seed in range(4):
        f, y = _beta21_model(100_000, np.random.default_rng(100 + seed))
        vals.append(confidence_calibration_error(f, y, bandwidth=sigma, lens="top_label"))
    # SE of the mean of 4 estimates at n = 10^5 is about 1.5e-5 (5 % of the limit)
    assert abs(np.mean(vals) - limit_plugin) < 0.35 * limit_plugin


# ----------------------------------------------------------------------------- special cases


def test_constant_confidence_mrr():
    """MRR (Chidambaram & Ge (2024) §3): every row predicts a with its class, (1 - a)/(K - 1) elsewhere.

    m_hat is the accuracy everywhere (sharpcal patches this case by hand), and both
    d_CAL forms equal (acc - a)^2 exactly.
    """
    rng = np.random.default_rng(3)
    n, k, a = 2000, 10, 0.8
    pred = rng.integers(0, k, n)
    probs = np.full((n, k), (1 - a) / (k - 1))
    probs[np.arange(n), pred] = a
    labels = np.where(rng.random(n) < 0.7, pred, (pred + 1) % k)
    acc = float(np.mean(labels == pred))
    for method, tol in (("exact", 1e-12), ("binned", 1e-6)):
        r = calibration_sharpness(probs, labels, method=method)
        np.testing.assert_allclose(r.calibration_curve, acc, rtol=tol)
        assert abs(r.calibration_error - (acc - a) ** 2) < 1e-12
        assert abs(r.calibration_error_sharpcal - (acc - a) ** 2) < 1e-12
        assert np.isfinite(r.sharpness_gap).all()


def test_infinite_nll():
    probs, labels = softmax_data(300, 3, seed=2)
    probs = probs.copy()
    i = int(np.flatnonzero(probs.argmax(1) != labels)[0])
    probs[i, labels[i]] = 0.0
    probs[i] /= probs[i].sum()
    r = calibration_sharpness(probs, labels, divergence="kl", kernel="epanechnikov")
    assert r.total_divergence == math.inf
    near = np.abs(r.grid - probs[i].max()) < 0.05
    assert np.all(np.isinf(r.conditional_divergence[near]))
    assert np.all(np.isnan(r.band_upper[near]) | ~np.isfinite(r.sharpness_gap[near]))
    far = np.abs(r.grid - probs[i].max()) > 0.06
    assert np.isfinite(r.conditional_divergence[far & (r.density > 0)]).all()
    assert math.isfinite(confidence_calibration_error(probs, labels, divergence="kl"))


def test_kl_from_logits_matches_probs():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((300, 4)) * 2
    labels = rng.integers(0, 4, 300)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    a = calibration_sharpness(z, labels, divergence="kl", logits=True, n_points=21)
    b = calibration_sharpness(p, labels, divergence="kl", n_points=21)
    assert abs(a.total_divergence - cp.nll(z, labels, logits=True)) < 1e-12
    assert abs(a.total_divergence - b.total_divergence) < 1e-10
    np.testing.assert_allclose(a.conditional_divergence, b.conditional_divergence, rtol=1e-9)


def test_binary_input_top_label_lens_uses_two_class_divergence():
    rng = np.random.default_rng(1)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(int)
    r = calibration_sharpness(p, y, lens="top_label")
    assert abs(r.total_divergence - 2 * cp.brier(p, y)) < 1e-12
    full = np.stack([1 - p, p], axis=1)
    assert abs(r.calibration_error - confidence_calibration_error(full, y)) < 1e-12
    rk = calibration_sharpness(p, y, divergence="kl", lens="top_label")
    assert abs(rk.total_divergence - cp.nll(p, y)) < 1e-12


def test_binary_input_default_is_the_positive_class():
    """1-D input: h = P(y = 1), target y; d_TOT the 1-D proper score; accuracy unchanged."""
    from calipers.estimators.nadaraya_watson import NadarayaWatson

    rng = np.random.default_rng(1)
    p = rng.random(500)
    y = (rng.random(500) < p**1.5).astype(int)
    r = calibration_sharpness(p, y)
    assert abs(r.total_divergence - np.mean((p - y) ** 2)) < 1e-12
    assert r.accuracy == np.mean((p > 0.5) == y)
    m = NadarayaWatson(0.05).regress(p, y.astype(float))
    # eq. (C.3) with varphi(x) = x^2: mean(m^2 - h^2 - 2 h (y - h))
    plugin = np.mean(m**2 - p**2 - 2 * p * (y - p))
    assert abs(r.calibration_error - plugin) < 1e-9
    assert abs(r.calibration_error_sharpcal - np.mean((m - p) ** 2)) < 1e-9
    assert abs(confidence_calibration_error(p, y) - plugin) < 1e-9  # the plug-in form here
    assert abs(_cce(p, y) - np.mean((m - p) ** 2)) < 1e-9
    # the curve on the grid is the regression of y on p, not of correctness on max(p, 1 - p)
    np.testing.assert_allclose(
        r.calibration_curve[::100],
        NadarayaWatson(0.05).regress_at(p, y.astype(float), None, r.grid[::100]),
        atol=1e-7,
    )
    rk = calibration_sharpness(p, y, divergence="kl")
    assert abs(rk.total_divergence - cp.nll(p, y)) < 1e-12
    top = calibration_sharpness(p, y, lens="top_label")
    assert abs(top.calibration_error_sharpcal - r.calibration_error_sharpcal) > 1e-3


def test_leave_one_out_changes_only_dcal():
    probs, labels = softmax_data(300, 3, seed=4)
    a = calibration_sharpness(probs, labels, n_points=21)
    b = calibration_sharpness(probs, labels, n_points=21, leave_one_out=True)
    np.testing.assert_array_equal(a.calibration_curve, b.calibration_curve)
    assert a.calibration_error != b.calibration_error
    assert b.leave_one_out and not a.leave_one_out
    assert (
        abs(b.calibration_error - confidence_calibration_error(probs, labels, leave_one_out=True))
        < 1e-15
    )


def test_torch_input_returns_tensor():
    torch = pytest.importorskip("torch")
    probs, labels = four_points()
    got = confidence_calibration_error(torch.tensor(probs), torch.tensor(labels))
    assert isinstance(got, torch.Tensor)
    assert abs(float(got) - 0.0262481) < 5e-8
    r = calibration_sharpness(torch.tensor(probs), torch.tensor(labels), n_points=11)
    assert abs(r.calibration_error_sharpcal - 0.0168096) < 5e-8


def test_bad_arguments():
    probs, labels = four_points()
    with pytest.raises(CalibrationInputError, match="divergence"):
        confidence_calibration_error(probs, labels, divergence="l1")
    with pytest.raises(CalibrationInputError, match="form"):
        confidence_calibration_error(probs, labels, form="naive")
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        confidence_calibration_error(probs, labels, bandwidth=0)
    with pytest.raises(CalibrationInputError, match="kernel"):
        calibration_sharpness(probs, labels, kernel="box")
    with pytest.raises(CalibrationInputError, match="n_points"):
        calibration_sharpness(probs, labels, n_points=1)
    with pytest.raises(CalibrationInputError, match="grid"):
        calibration_sharpness(probs, labels, grid=[0.1, np.nan])
    with pytest.raises(CalibrationInputError, match="row 0"):
        confidence_calibration_error([[1.0, 0.2]], [0])  # rows must sum to 1
    # inside the validation tolerance, but log(1 - h) is undefined for h > 1
    over = np.array([[1.00005, -0.00005], [0.3, 0.7]])
    assert math.isfinite(confidence_calibration_error(over, [0, 1]))
    with pytest.raises(CalibrationInputError, match="kl.*row 0"):
        confidence_calibration_error(over, [0, 1], divergence="kl")


def test_default_form_is_the_authors_code_form() -> None:
    h = np.array([0.55, 0.6, 0.9, 0.95])
    probs = np.stack([h, 1 - h], axis=1)
    labels = np.array([0, 1, 0, 0])
    assert abs(_cce(probs, labels) - 0.0168096) < 1e-7
