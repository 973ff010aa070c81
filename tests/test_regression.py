"""Probabilistic regression (calipers.regression): scores and calibration diagnostics.

Every value is compared with an independent computation: SciPy's normal
log-density for the NLL, numerical integration of the CRPS definition, hand
closed forms for the Dawid-Sebastiani score, brute-force loops for the
binned quantities, and Monte Carlo on correctly specified and misscaled
Gaussian models for PIT uniformity, coverage and the variance ratios.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from calipers.regression import (
    GaussianPredictions,
    check_gaussian,
    crps_gaussian,
    crps_gaussian_per_row,
    dawid_sebastiani,
    dawid_sebastiani_per_row,
    gaussian_nll,
    gaussian_nll_per_row,
    pit_histogram,
    pit_values,
    quantile_calibration,
    variance_calibration,
)
from calipers.validation import CalibrationInputError

CASES = [(0.0, 1.0, 0.0), (1.5, 0.3, 2.0), (-2.0, 4.0, 7.5), (10.0, 0.01, 9.97), (0.0, 2.0, -0.4)]


def _model(n: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Targets y ~ N(mu, sigma_true**2); predicted std is ``scale * sigma_true``."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 3.0, size=n)
    sigma = rng.uniform(0.2, 3.0, size=n)
    y = rng.normal(mu, sigma)
    return mu, scale * sigma, y


# ------------------------------------------------------------------ scores


def test_nll_matches_scipy_logpdf() -> None:
    mu, sd, y = (np.array(c) for c in zip(*CASES, strict=True))
    expected = -stats.norm.logpdf(y, loc=mu, scale=sd)
    np.testing.assert_allclose(gaussian_nll_per_row(mu, std=sd, targets=y), expected, rtol=1e-12)
    np.testing.assert_allclose(
        gaussian_nll_per_row(mu, variance=sd**2, targets=y), expected, rtol=1e-12
    )
    assert gaussian_nll(mu, std=sd, targets=y) == pytest.approx(expected.mean(), rel=1e-12)
    w = np.array([1.0, 0.0, 2.0, 0.5, 3.0])
    assert gaussian_nll(mu, std=sd, targets=y, sample_weight=w) == pytest.approx(
        np.sum(w * expected) / w.sum(), rel=1e-12
    )


def test_weight_two_equals_repeated_row() -> None:
    mu, sd, y = _model(7, seed=1)
    w = np.array([2, 1, 1, 3, 1, 1, 1])
    rep = np.repeat(np.arange(7), w)
    for f in (gaussian_nll, dawid_sebastiani, crps_gaussian):
        assert f(mu, std=sd, targets=y, sample_weight=w) == pytest.approx(
            f(mu[rep], std=sd[rep], targets=y[rep]), rel=1e-12
        )


def test_dawid_sebastiani_by_hand() -> None:
    # log(4) + (3 - 1)^2 / 4 = log 4 + 1 ; log(0.25) + (0.5)^2 / 0.25 = -log 4 + 1
    s = dawid_sebastiani_per_row([1.0, 0.0], variance=[4.0, 0.25], targets=[3.0, 0.5])
    np.testing.assert_allclose(s, [math.log(4.0) + 1.0, -math.log(4.0) + 1.0], rtol=1e-14)
    assert dawid_sebastiani([1.0, 0.0], variance=[4.0, 0.25], targets=[3.0, 0.5]) == pytest.approx(
        1.0
    )
    # no factor 1/2, no constant: DSS = 2 * NLL - log(2 pi)
    mu, sd, y = _model(50, seed=2)
    np.testing.assert_allclose(
        dawid_sebastiani_per_row(mu, std=sd, targets=y),
        2 * -stats.norm.logpdf(y, mu, sd) - math.log(2 * math.pi),
        rtol=1e-10,
        atol=1e-12,
    )


@pytest.mark.parametrize(("mu", "sd", "y"), CASES)
def test_crps_matches_integral_of_definition(mu: float, sd: float, y: float) -> None:
    def integrand(x: float) -> float:
        return (stats.norm.cdf(x, mu, sd) - (1.0 if x >= y else 0.0)) ** 2

    lo, hi = mu - 40 * sd, mu + 40 * sd
    left, _ = integrate.quad(integrand, min(lo, y - 1), y, points=[mu], limit=200)
    right, _ = integrate.quad(integrand, y, max(hi, y + 1), points=[mu], limit=200)
    got = crps_gaussian_per_row([mu], std=[sd], targets=[y])[0]
    assert got == pytest.approx(left + right, rel=1e-7, abs=1e-10)


def test_crps_mean_and_point_limit() -> None:
    mu, sd, y = _model(30, seed=3)
    assert crps_gaussian(mu, std=sd, targets=y) == pytest.approx(
        crps_gaussian_per_row(mu, std=sd, targets=y).mean(), rel=1e-14
    )
    # sigma -> 0: CRPS -> |y - mu|
    assert crps_gaussian(mu, std=np.full(30, 1e-8), targets=y) == pytest.approx(
        np.abs(y - mu).mean(), rel=1e-6
    )


def test_scores_are_proper_in_scale() -> None:
    """Expected score is smallest at the true variance (Monte Carlo, common draws)."""
    mu, sd, y = _model(40000, seed=4)
    for f in (gaussian_nll, dawid_sebastiani, crps_gaussian):
        vals = {s: f(mu, std=s * sd, targets=y) for s in (0.7, 1.0, 1.4)}
        assert vals[1.0] < vals[0.7] and vals[1.0] < vals[1.4], f.__name__


# ------------------------------------------------------------------ PIT and coverage


def test_pit_values_match_scipy_cdf() -> None:
    mu, sd, y = _model(100, seed=5)
    np.testing.assert_allclose(
        pit_values(mu, std=sd, targets=y), stats.norm.cdf(y, mu, sd), rtol=1e-12
    )


def test_pit_histogram_against_loops_and_scipy_ks() -> None:
    mu, sd, y = _model(500, seed=6, scale=0.8)
    h = pit_histogram(mu, std=sd, targets=y, n_bins=7)
    u = stats.norm.cdf(y, mu, sd)
    counts = [sum(1 for v in u if k / 7 <= v < (k + 1) / 7) for k in range(7)]
    counts[-1] += int(np.sum(u == 1.0))
    np.testing.assert_array_equal(h.counts, counts)
    assert h.l1_distance == pytest.approx(sum(abs(c / 500 - 1 / 7) for c in counts))
    assert h.ks_statistic == pytest.approx(stats.kstest(u, "uniform").statistic, rel=1e-12)
    np.testing.assert_allclose(h.edges, np.linspace(0, 1, 8))


def test_pit_uniform_when_calibrated_and_u_shaped_when_overconfident() -> None:
    n = 20000
    mu, sd, y = _model(n, seed=7)
    good = pit_histogram(mu, std=sd, targets=y)
    # KS critical value at the 0.1% level is about 1.95 / sqrt(n)
    assert good.ks_statistic < 1.95 / math.sqrt(n)
    assert np.all(np.abs(good.counts / n - 0.1) < 3 * math.sqrt(0.09 / n))
    mu, sd, y = _model(n, seed=8, scale=0.5)
    bad = pit_histogram(mu, std=sd, targets=y)
    assert bad.ks_statistic > 0.1
    assert bad.counts[0] > 2 * bad.counts[5] and bad.counts[-1] > 2 * bad.counts[4]


def test_coverage_calibrated_within_three_standard_errors() -> None:
    n = 20000
    mu, sd, y = _model(n, seed=9)
    q = quantile_calibration(mu, std=sd, targets=y)
    lv = np.linspace(0.05, 0.95, 19)
    np.testing.assert_allclose(q.levels, lv)
    se = np.sqrt(lv * (1 - lv) / n)
    assert np.all(np.abs(q.coverage - lv) <= 3 * se)
    assert q.mean_absolute_error < 0.01


def test_coverage_too_low_when_std_halved() -> None:
    n = 20000
    mu, sd, y = _model(n, seed=10, scale=0.5)
    q = quantile_calibration(mu, std=sd, targets=y, levels=[0.5, 0.9])
    # true coverage of an interval half as wide: P(|Z| <= c_p / 2)
    c = stats.norm.ppf([0.75, 0.95])
    expected = 2 * stats.norm.cdf(c / 2) - 1
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(q.coverage - expected) <= 3 * se)
    assert np.all(q.coverage < [0.5, 0.9])
    assert q.mean_absolute_error == pytest.approx(np.mean(np.abs(q.coverage - [0.5, 0.9])))
    assert q.max_absolute_error == pytest.approx(np.max(np.abs(q.coverage - [0.5, 0.9])))


def test_coverage_weighted_by_hand() -> None:
    q = quantile_calibration(
        [0.0, 0.0, 0.0],
        variance=[1.0, 1.0, 1.0],
        targets=[0.1, 3.0, -0.2],
        sample_weight=[1, 2, 1],
        levels=[0.5],
    )
    assert q.coverage.tolist() == [0.5]


# ------------------------------------------------------------------ variance calibration


def test_variance_calibration_against_loops() -> None:
    mu, sd, y = _model(103, seed=11, scale=0.7)
    v = variance_calibration(mu, std=sd, targets=y, n_bins=5)
    var = sd**2
    order = np.argsort(var)
    groups = [order[int(np.ceil(103 * k / 5)) : int(np.ceil(103 * (k + 1) / 5))] for k in range(5)]
    assert [len(g) for g in groups] == v.bin_weight.tolist()
    rmv = np.array([math.sqrt(var[g].mean()) for g in groups])
    rmse = np.array([math.sqrt(((y[g] - mu[g]) ** 2).mean()) for g in groups])
    np.testing.assert_allclose(v.bin_rmv, rmv, rtol=1e-12)
    np.testing.assert_allclose(v.bin_rmse, rmse, rtol=1e-12)
    np.testing.assert_allclose(v.bin_variance_range[:, 0], [var[g].min() for g in groups])
    np.testing.assert_allclose(v.bin_variance_range[:, 1], [var[g].max() for g in groups])
    assert v.ence == pytest.approx(np.mean(np.abs(rmv - rmse) / rmv), rel=1e-12)
    ratio = (y - mu) ** 2 / var
    assert v.se_var_ratio == pytest.approx(ratio.mean(), rel=1e-12)
    assert v.se_var_ratio_std == pytest.approx(ratio.std(), rel=1e-10)
    assert v.mse == pytest.approx(((y - mu) ** 2).mean(), rel=1e-12)
    assert v.avg_var == pytest.approx(var.mean(), rel=1e-12)
    assert v.mse_over_avg_var == pytest.approx(v.mse / v.avg_var)


def test_variance_calibration_correct_and_misscaled() -> None:
    n = 30000
    mu, sd, y = _model(n, seed=12)
    good = variance_calibration(mu, std=sd, targets=y)
    # ratio ~ chi2_1: mean 1, sd sqrt(2)
    assert abs(good.se_var_ratio - 1) < 3 * math.sqrt(2 / n)
    assert good.se_var_ratio_std == pytest.approx(math.sqrt(2), rel=0.1)
    assert abs(good.mse_over_avg_var - 1) < 0.05
    assert good.ence < 0.05
    mu, sd, y = _model(n, seed=13, scale=0.5)
    bad = variance_calibration(mu, std=sd, targets=y)
    assert abs(bad.se_var_ratio - 4) < 3 * 4 * math.sqrt(2 / n)
    assert abs(bad.mse_over_avg_var - 4) < 0.2
    # RMSE = 2 RMV in every bin: ENCE -> 1
    assert abs(bad.ence - 1) < 0.1


def test_variance_calibration_weighted_equals_repeated() -> None:
    mu, sd, y = _model(20, seed=14)
    w = np.array([2] * 10 + [1] * 10)
    rep = np.repeat(np.arange(20), w)
    a = variance_calibration(mu, std=sd, targets=y, sample_weight=w)
    b = variance_calibration(mu[rep], std=sd[rep], targets=y[rep])
    for name in ("mse", "avg_var", "se_var_ratio", "se_var_ratio_std"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-12)


# ------------------------------------------------------------------ inputs


def test_check_gaussian_form_and_passthrough() -> None:
    G = check_gaussian([1, 2], std=[1, 3], targets=[0, 0])
    assert isinstance(G, GaussianPredictions)
    assert G.variance.tolist() == [1.0, 9.0] and G.mean.dtype == np.float64
    assert check_gaussian(G) is G
    with pytest.raises(CalibrationInputError, match="already a GaussianPredictions; pass targets"):
        check_gaussian(G, targets=[1.0, 2.0])
    assert gaussian_nll(G) == pytest.approx(-stats.norm.logpdf([1, 2], 0, [1, 3]).mean())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"mean": [0.0], "targets": [0.0]},
            r"exactly one of variance= .* and std= .*; got neither",
        ),
        ({"mean": [0.0], "variance": [1.0], "std": [1.0], "targets": [0.0]}, "got both"),
        ({"mean": [0.0], "variance": [1.0]}, "targets is required"),
        ({"mean": [], "variance": [], "targets": []}, "mean has no rows"),
        ({"mean": [[0.0]], "variance": [1.0], "targets": [0.0]}, r"mean must be 1-D .* \(1, 1\)"),
        (
            {"mean": [0.0, 1.0], "variance": [1.0], "targets": [0.0, 1.0]},
            "variance has 1 rows but mean has 2",
        ),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [0.0, 1.0]},
            "targets has 2 rows but mean has 1",
        ),
        (
            {"mean": [0.0, np.nan], "variance": [1.0, 1.0], "targets": [0.0, 1.0]},
            "mean must be finite; row 1 is nan",
        ),
        (
            {"mean": [0.0], "variance": [np.inf], "targets": [0.0]},
            "variance must be finite; row 0 is inf",
        ),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [-np.inf]},
            "targets must be finite; row 0 is -inf",
        ),
        (
            {"mean": [0.0, 0.0], "variance": [1.0, -2.0], "targets": [0.0, 0.0]},
            r"variance must be > 0 .*row 1 is -2.0",
        ),
        ({"mean": [0.0], "std": [0.0], "targets": [0.0]}, r"std must be > 0 .*row 0 is 0.0"),
        ({"mean": [0.0], "std": [1e-200], "targets": [0.0]}, "std squared .* row 0 has std 1e-200"),
        (
            {"mean": [0.0], "std": [1e200], "targets": [0.0]},
            "std squared .* row 0 has std 1e\\+200",
        ),
        ({"mean": ["a"], "variance": [1.0], "targets": [0.0]}, "mean must hold real numbers"),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [0.0], "sample_weight": [-1.0]},
            r"sample_weight must be non-negative; found -1.0 at row 0",
        ),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [0.0], "sample_weight": [0.0]},
            "sample_weight sums to 0",
        ),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [0.0], "sample_weight": [1.0, 1.0]},
            "sample_weight has 2 rows but mean has 1",
        ),
        (
            {"mean": [0.0], "variance": [1.0], "targets": [0.0], "sample_weight": [np.nan]},
            "sample_weight must be finite; found nan at row 0",
        ),
    ],
)
def test_bad_input_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(CalibrationInputError, match=message):
        check_gaussian(**kwargs)
    if "targets" in kwargs and ("variance" in kwargs) != ("std" in kwargs):
        with pytest.raises(CalibrationInputError, match=message):
            gaussian_nll(**kwargs)


def test_bad_options() -> None:
    args = ([0.0, 1.0],)
    spread = {"variance": [1.0, 1.0]}
    with pytest.raises(CalibrationInputError, match="n_bins"):
        pit_histogram(*args, **spread, targets=[0.0, 0.0], n_bins=0)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        variance_calibration(*args, **spread, targets=[0.0, 0.0], n_bins=3)
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1; entry 1 is 1.0"):
        quantile_calibration(*args, **spread, targets=[0.0, 0.0], levels=[0.5, 1.0])
    with pytest.raises(CalibrationInputError, match="non-empty 1-D"):
        quantile_calibration(*args, **spread, targets=[0.0, 0.0], levels=[])


def test_torch_input() -> None:
    torch = pytest.importorskip("torch")
    mu, sd, y = _model(50, seed=15)
    t = [torch.tensor(a, dtype=torch.float32) for a in (mu, sd**2, y)]
    got = gaussian_nll(t[0], variance=t[1], targets=t[2])
    m32, v32, y32 = (a.numpy().astype(np.float64) for a in t)
    assert got == pytest.approx(-stats.norm.logpdf(y32, m32, np.sqrt(v32)).mean(), rel=1e-12)
    loss = torch.nn.GaussianNLLLoss(full=True, eps=0.0)
    assert got == pytest.approx(float(loss(t[0].double(), t[2].double(), t[1].double())), rel=1e-10)
    G = check_gaussian(t[0], std=torch.sqrt(t[1]).requires_grad_(), targets=t[2])
    assert isinstance(G.variance, np.ndarray) and G.variance.dtype == np.float64


# ----------------------------------------------------------------- the spread is named


def _sklearn_predictions(model_name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out (mean, std, y) of a scikit-learn model's ``predict(X, return_std=True)``."""
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import BayesianRidge

    X, y = load_diabetes(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:300], idx[300:]
    if model_name == "BayesianRidge":
        model = BayesianRidge().fit(X[tr], y[tr])
    else:
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel

        kernel = 1.0 * RBF(length_scale=1.0) + WhiteKernel(noise_level=1.0)
        model = GaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0)
        model.fit(X[tr], y[tr])
    mu, sd = model.predict(X[te], return_std=True)
    return mu, sd, y[te]


@pytest.mark.parametrize("model_name", ["BayesianRidge", "GaussianProcessRegressor"])
def test_sklearn_return_std_gives_the_right_scores(model_name: str) -> None:
    """scikit-learn's ``predict(X, return_std=True)`` passed as ``std=`` gives the NLL of
    scipy's normal log-density (by hand), in the scores, the report and VarianceScaling."""
    from calipers.recalibration import VarianceScaling
    from calipers.reports._regression_report import regression_report

    mu, sd, y = _sklearn_predictions(model_name)
    by_hand = float(np.mean(-stats.norm.logpdf(y, loc=mu, scale=sd)))
    assert gaussian_nll(mu, std=sd, targets=y) == pytest.approx(by_hand, rel=1e-12)
    assert gaussian_nll(mu, variance=sd**2, targets=y) == pytest.approx(by_hand, rel=1e-12)
    rep = regression_report({"m": {"mean": mu, "std": sd, "targets": y}}, skce=False)
    assert rep.row("m").metrics["nll"] == pytest.approx(by_hand, rel=1e-12)
    scale = float(np.mean(((y - mu) / sd) ** 2))  # the closed-form NLL minimiser
    assert VarianceScaling().fit(mu, std=sd, targets=y).scale_ == pytest.approx(scale, rel=1e-12)
    assert 0.5 < scale < 2.0  # the models are roughly calibrated: a std read as a
    # variance would give a scale near mean((y - mu)^2 / sd) instead, in the tens


def _positional_calls() -> list:
    """Every public entry point of Gaussian predictions, called the old way (spread second)."""
    from calipers import diagrams
    from calipers.recalibration import (
        QuantileRecalibration,
        VariancePlattScaling,
        VarianceScaling,
    )
    from calipers.regression import (
        crps_decomposition,
        gaussian_score_decomposition,
        interval_coverage_error,
        quantile_calibration_curve,
        quantile_calibration_error,
    )
    from calipers.regression.skce import gaussian_skce, gaussian_skce_test

    funcs = [
        check_gaussian,
        gaussian_nll,
        gaussian_nll_per_row,
        dawid_sebastiani,
        dawid_sebastiani_per_row,
        crps_gaussian,
        crps_gaussian_per_row,
        pit_values,
        pit_histogram,
        quantile_calibration,
        interval_coverage_error,
        quantile_calibration_curve,
        quantile_calibration_error,
        variance_calibration,
        crps_decomposition,
        gaussian_score_decomposition,
        diagrams.pit_histogram_diagram,
        diagrams.quantile_reliability_diagram,
        diagrams.variance_error_diagram,
    ]
    mu, sd, y = np.zeros(20), np.ones(20), np.linspace(-2.0, 2.0, 20)
    calls = [pytest.param(f, (mu, sd), {"targets": y}, id=f.__name__) for f in funcs]
    calls += [
        pytest.param(f, (mu, sd, y), {}, id=f.__name__ + "_3")
        for f in (gaussian_skce, gaussian_skce_test)
    ]
    for cls in (VarianceScaling, VariancePlattScaling, QuantileRecalibration):
        calls.append(pytest.param(cls().fit, (mu, sd), {"targets": y}, id=cls.__name__ + ".fit"))
        fitted = cls().fit(mu, variance=sd, targets=y)
        for name, kw in (
            ("predict_cdf", {"targets": y}),
            ("predict_quantile", {}),
            ("predict_interval", {}),
            ("scores", {"targets": y}),
            ("improvement", {"targets": y}),
            ("scores_per_row", {"targets": y}),
            ("predict_variance", {}),
        ):
            if hasattr(fitted, name):
                calls.append(
                    pytest.param(getattr(fitted, name), (mu, sd), kw, id=f"{cls.__name__}.{name}")
                )
    return calls


@pytest.mark.parametrize(("func", "args", "kwargs"), _positional_calls())
def test_a_positional_spread_is_refused_with_what_to_write(func, args, kwargs) -> None:
    """A spread passed second could be a variance or a std: every entry point refuses it
    with a TypeError naming variance= and std=, before reading any number."""
    with pytest.raises(TypeError) as err:
        func(*args, **kwargs)
    msg = str(err.value)
    assert "variance=" in msg and "std=" in msg and "return_std=True" in msg
    assert "only the means are positional" in msg


def test_sklearn_std_passed_positionally_is_refused_not_misread() -> None:
    """The mistake of the issue: gaussian_nll(mu, sd, targets=y) once read sd as a variance
    (NLL 32.35 on the diabetes split of BayesianRidge, where the right value is 5.45)."""
    mu, sd, y = _sklearn_predictions("BayesianRidge")
    with pytest.raises(TypeError, match=r"gaussian_nll\(\) takes the predicted spread by name"):
        gaussian_nll(mu, sd, targets=y)
    from calipers.recalibration import VarianceScaling

    with pytest.raises(TypeError, match=r"VarianceScaling\.fit\(\) takes the predicted spread"):
        VarianceScaling().fit(mu, sd, targets=y)


def test_gaussian_predictions_fields_are_keyword_only() -> None:
    """GaussianPredictions(mu, sd, y, None) would read a std as a variance: refused."""
    from calipers.regression import GaussianPredictions

    one = np.ones(3)
    with pytest.raises(TypeError):
        GaussianPredictions(one, one, one, None)  # type: ignore[misc]
    G = GaussianPredictions(mean=one, variance=one, targets=one, sample_weight=None)
    assert gaussian_nll(G) == pytest.approx(0.5 * math.log(2 * math.pi))
