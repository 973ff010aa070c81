"""The fitted calibration world and the bias correction behind the recommended number
(calipers.inference.calibration_world, calipers.inference.bias_correction, the estimands of calipers.verdict),
against computations written here: direct likelihood maximisation, the binned ECE by hand,
KL divergences by hand, and the interval formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit

import calipers as cp
from calipers.inference._verdict import _bind, _estimand_fn
from calipers.inference.bias_correction import correct
from calipers.inference.calibration_world import CalibrationWorldFitter, fit_calibration_world
from calipers.validation import check_predictions


def _platt_data(n: int, a: float, b: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < expit(a * logit(p) + b)).astype(int)
    return p, y


def test_logistic_world_is_the_maximum_likelihood_fit() -> None:
    p, y = _platt_data(3000, 0.6, 0.3, seed=1)

    def nll(theta: np.ndarray) -> float:
        eta = theta[0] + theta[1] * logit(p)
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    ref = minimize(nll, [0.0, 1.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12})
    fitter = CalibrationWorldFitter(p)
    w = fitter.fit(y, include_identity=False)
    coef = dict(w.coefficients)["logistic in logit(score)"]
    np.testing.assert_allclose(coef, ref.x, atol=1e-5)
    # the candidates' AICs: 2 k - 2 log L, the identity's with k = 0
    aics = dict(fitter.fit(y).candidates)
    ll0 = float(np.sum(y * np.log(p) + (1 - y) * np.log1p(-p)))
    assert aics["calibrated (identity)"] == pytest.approx(-2 * ll0)
    assert aics["logistic in logit(score)"] == pytest.approx(4 + 2 * ref.fun, rel=1e-9)


def test_aic_chooses_the_identity_for_calibrated_labels_and_a_curve_otherwise() -> None:
    picks = []
    for seed in range(20):
        p, y = _platt_data(2000, 1.0, 0.0, seed=100 + seed)
        picks.append(fit_calibration_world(p, y).calibrated)
    # AIC's false-positive rate for 2 extra parameters is P(chi2_2 > 4) = 13.5 %
    assert sum(picks) >= 14
    p, y = _platt_data(5000, 0.5, 0.0, seed=7)
    w = fit_calibration_world(p, y)
    assert not w.calibrated
    np.testing.assert_allclose(w.probs, expit(0.5 * logit(p)), atol=0.03)


def test_top_label_world_spreads_the_miss_over_the_other_classes_as_predicted() -> None:
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4) * 0.5, size=1500)
    y = np.argmax(probs, 1)  # always right: an under-confident model
    w = fit_calibration_world(probs, y)
    q = w.probs
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-12)
    top = np.argmax(probs, 1)
    rows = np.arange(1500)
    assert np.all(q[rows, top] > probs[rows, top])
    others = probs.copy()
    others[rows, top] = 0
    ratio = q / np.where(others > 0, others, np.nan)  # the others keep their proportions
    ratio[rows, top] = np.nan
    spread = np.nanmax(ratio, 1) - np.nanmin(ratio, 1)
    assert np.nanmax(spread) < 1e-9


def test_canonical_world_recovers_a_temperature() -> None:
    rng = np.random.default_rng(4)
    p1 = rng.dirichlet(np.ones(5), size=6000)
    y = (rng.random(6000)[:, None] > p1.cumsum(1)).sum(1).clip(0, 4)
    p2 = p1 ** (1 / 0.6)
    p2 /= p2.sum(1, keepdims=True)
    w = fit_calibration_world(p2, y, family="canonical")
    assert w.model.startswith("temperature scaling")
    coef = dict(w.coefficients)["temperature scaling"]
    assert coef[0] == pytest.approx(0.6, abs=0.03)  # q = softmax(a log p2), a = t


# ----------------------------------------------------------------------------- estimands


def _binned_ece_by_hand(s: np.ndarray, q: np.ndarray, n_bins: int = 15) -> float:
    b = np.clip(np.ceil(s * n_bins).astype(int) - 1, 0, n_bins - 1)  # right-closed bins
    tot = 0.0
    for j in range(n_bins):
        m = b == j
        if m.any():
            tot += m.mean() * abs(q[m].mean() - s[m].mean())
    return tot


def test_ece_estimand_is_the_binned_gap_of_the_labels_expectation() -> None:
    rng = np.random.default_rng(5)
    p = rng.uniform(size=800)
    q = np.clip(p + 0.1 * np.sin(6 * p), 0, 1)
    P = check_predictions(p, (rng.random(800) < q).astype(int))
    theta = _estimand_fn(_bind(cp.ece, {}), P)
    assert theta is not None
    assert theta(q) == pytest.approx(_binned_ece_by_hand(p, q), rel=1e-10)
    assert theta(p) == pytest.approx(0.0, abs=1e-12)


def test_top_label_ece_estimand_reads_the_top_class_probability() -> None:
    rng = np.random.default_rng(6)
    probs = rng.dirichlet(np.ones(5), size=600)
    q = rng.dirichlet(np.ones(5), size=600)
    P = check_predictions(probs, rng.integers(0, 5, 600))
    theta = _estimand_fn(_bind(cp.ece, {}), P)
    top = np.argmax(probs, 1)
    conf = probs[np.arange(600), top]
    assert theta(q) == pytest.approx(_binned_ece_by_hand(conf, q[np.arange(600), top]), rel=1e-10)


def test_ce_kl_estimand_is_the_mean_kl_of_the_labels_distribution() -> None:
    rng = np.random.default_rng(8)
    probs = rng.dirichlet(np.ones(4), size=300)
    q = rng.dirichlet(np.ones(4), size=300)
    P = check_predictions(probs, rng.integers(0, 4, 300))
    theta = _estimand_fn(_bind(cp.ce_kl, {"bandwidth": 0.1}), P)
    assert theta(q) == pytest.approx(float(np.mean(np.sum(q * np.log(q / probs), 1))), rel=1e-6)
    # class-wise: the mean over classes of the Bernoulli KL of each column
    theta_cw = _estimand_fn(_bind(cp.ce_kl, {"bandwidth": 0.1, "lens": "classwise"}), P)
    bern = q * np.log(q / probs) + (1 - q) * np.log((1 - q) / (1 - probs))
    assert theta_cw(q) == pytest.approx(float(bern.mean(0).mean()), rel=1e-6)


def test_metrics_without_an_exact_estimand_fall_back_to_the_calibrated_null() -> None:
    rng = np.random.default_rng(9)
    p = rng.uniform(size=400)
    y = (rng.random(400) < p**2).astype(int)
    P = check_predictions(p, y)
    assert _estimand_fn(_bind(cp.ace, {}), P) is None
    v = cp.verdict(cp.ace, p, y, n_resamples=19)
    assert v.recommended_method.startswith("bias at calibration only")
    assert v.recommended == pytest.approx(max(0.0, v.estimate - v.null_mean))


# ----------------------------------------------------------------------------- correct


def test_correct_subtracts_the_world_bias_and_forms_the_basic_interval() -> None:
    rng = np.random.default_rng(10)
    null = 0.02 + 0.004 * rng.standard_normal(200)
    world = 0.052 + 0.006 * rng.standard_normal(200)
    refit = 0.05 + 0.005 * rng.standard_normal(200)
    c = correct(0.055, null, world_draws=world, world_estimand=0.05, refit_estimands=refit)
    bias = world.mean() - 0.05
    assert c.bias == pytest.approx(bias) and c.recommended == pytest.approx(0.055 - bias)
    # each draw corrected with the bias interpolated at its refit's error
    slope = (bias - null.mean()) / 0.05
    pivot = world - (bias + slope * (refit - 0.05)) - 0.05
    lo = 0.055 - bias - np.quantile(pivot, 0.975)
    hi = 0.055 - bias - np.quantile(pivot, 0.025)
    assert c.interval == pytest.approx((lo, hi))
    # a correction larger than the estimate: recommended 0, interval clipped at 0
    d = correct(0.01, null)
    assert d.recommended == 0.0 and d.corrected < 0 and d.interval[0] == 0.0


def test_verdict_world_interval_covers_the_truth_across_seeds() -> None:
    # moderate over-confidence, true binned ECE by quadrature; 12 data sets: an interval
    # with 95 % coverage misses all but at most 3 of them with probability > 0.999
    from scipy import integrate, stats

    f = stats.beta(2, 2).pdf
    T = 1.3

    def gap(s: float) -> float:
        return (expit(logit(s) / T) - s) * f(s)

    edges = np.linspace(0, 1, 16)
    truth = sum(
        abs(integrate.quad(gap, a, b)[0]) for a, b in zip(edges[:-1], edges[1:], strict=True)
    )
    hits = 0
    for seed in range(12):
        rng = np.random.default_rng(200 + seed)
        p = rng.beta(2, 2, 3000)
        y = (rng.random(3000) < expit(logit(p) / T)).astype(int)
        v = cp.verdict(cp.ece, p, y, n_resamples=60, seed=seed)
        hits += v.interval[0] <= truth <= v.interval[1]
    assert hits >= 9


@pytest.mark.parametrize("weighted", [False, True])
def test_canonical_newton_fit_is_the_maximum_likelihood_fit(weighted: bool) -> None:
    # the closed-form Newton steps against a derivative-free search of the likelihood
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(4), size=800)
    y = rng.integers(0, 4, 800)
    w = rng.uniform(0.5, 2.0, 800) if weighted else np.ones(800)
    L = np.log(p)

    def nll(theta: np.ndarray) -> float:
        z = theta[0] * L + np.concatenate([[0.0], theta[1:]])
        z = z - z.max(1, keepdims=True)
        ls = z - np.log(np.exp(z).sum(1, keepdims=True))
        return -float(np.dot(w * (800 / w.sum()), ls[np.arange(800), y]))

    ref = minimize(
        nll,
        [1.0, 0.0, 0.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000},
    )
    world = CalibrationWorldFitter(p, "canonical", w if weighted else None).fit(
        y, include_identity=False
    )
    coef = dict(world.coefficients)["temperature scaling with a bias per class"]
    np.testing.assert_allclose(coef, ref.x, atol=1e-4)
    ts = dict(world.coefficients)["temperature scaling"]
    one = minimize(
        lambda a: nll(np.array([a[0], 0.0, 0.0, 0.0])),
        [1.0],
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-13},
    )
    assert ts[0] == pytest.approx(one.x[0], abs=1e-5)
