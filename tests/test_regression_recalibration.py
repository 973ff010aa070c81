"""Recalibrators of Gaussian regression predictions: variance scaling, Platt, quantile."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import ndtr

import calipers
from calipers.recalibration import (
    NotFittedError,
    QuantileRecalibration,
    VariancePlattScaling,
    VarianceScaling,
)
from calipers.recalibration.regression.variance_platt_scaling import _nll_and_grad
from calipers.regression import crps_gaussian, dawid_sebastiani, gaussian_nll
from calipers.validation import CalibrationInputError

N = 20000


def _data(c: float, seed: int = 0, n: int = N, power: float = 1.0):
    """Predictions N(mu, sd**2) of targets drawn from N(mu, (c sd**power)**2)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.3, 3.0, n)
    y = mu + c * sd**power * rng.normal(size=n)
    return mu, sd * sd, y


def _halves(mu, var, y):
    h = mu.shape[0] // 2
    return (mu[:h], var[:h], y[:h]), (mu[h:], var[h:], y[h:])


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_recover_known_misscaling(c: float) -> None:
    mu, var, y = _data(c)
    vs = VarianceScaling().fit(mu, variance=var, targets=y)
    assert abs(vs.scale_ / c**2 - 1) < 0.03
    pl = VariancePlattScaling().fit(mu, variance=var, targets=y)
    assert abs(pl.weight_ - 1) < 0.03
    assert abs(pl.bias_ - math.log(c**2)) < 0.05
    assert pl.converged_


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_all_three_improve_held_out_scores(c: float) -> None:
    (m1, v1, y1), (m2, v2, y2) = _halves(*_data(c, seed=1))
    for rc in (VarianceScaling(), VariancePlattScaling(), QuantileRecalibration()):
        rc.fit(m1, variance=v1, targets=y1)
        imp = rc.improvement(m2, variance=v2, targets=y2)
        assert all(imp[k] > 0 for k in ("nll", "dss", "crps")), (rc, imp)
        after = rc.scores(m2, variance=v2, targets=y2)
        before = {
            "nll": gaussian_nll(m2, variance=v2, targets=y2),
            "dss": dawid_sebastiani(m2, variance=v2, targets=y2),
            "crps": crps_gaussian(m2, variance=v2, targets=y2),
        }
        for k in before:
            assert imp[k] == pytest.approx(before[k] - after[k], rel=1e-12, abs=1e-12)
        if rc.gaussian:  # the scores after are the closed forms of the new variance
            v = rc.predict_variance(m2, variance=v2)
            assert after["nll"] == pytest.approx(
                gaussian_nll(m2, variance=v, targets=y2), rel=1e-12
            )
            assert after["dss"] == pytest.approx(
                dawid_sebastiani(m2, variance=v, targets=y2), rel=1e-12
            )
            assert after["crps"] == pytest.approx(
                crps_gaussian(m2, variance=v, targets=y2), rel=1e-12
            )
        pit = rc.predict_cdf(m2, variance=v2, targets=y2)
        assert stats.kstest(pit, "uniform").statistic < 0.02


def test_quantile_recalibration_flattens_the_pit() -> None:
    (m1, v1, y1), (m2, v2, y2) = _halves(*_data(0.5, seed=2))
    before = ndtr((y2 - m2) / np.sqrt(v2))
    rc = QuantileRecalibration().fit(m1, variance=v1, targets=y1)
    after = rc.predict_cdf(m2, variance=v2, targets=y2)
    assert stats.kstest(before, "uniform").statistic > 0.1
    assert stats.kstest(after, "uniform").statistic < 0.025  # sampling noise of both halves


def test_platt_recovers_a_non_constant_misscaling_that_one_scale_cannot() -> None:
    # true sd = sigma**0.5, i.e. true variance = (sigma**2)**0.5: w = 0.5, b = 0
    (m1, v1, y1), (m2, v2, y2) = _halves(*_data(1.0, seed=3, power=0.5))
    pl = VariancePlattScaling().fit(m1, variance=v1, targets=y1)
    assert abs(pl.weight_ - 0.5) < 0.03 and abs(pl.bias_) < 0.05
    vs = VarianceScaling().fit(m1, variance=v1, targets=y1)
    assert (
        pl.scores(m2, variance=v2, targets=y2)["nll"]
        < vs.scores(m2, variance=v2, targets=y2)["nll"] - 0.05
    )
    # after variance scaling, the standardised residuals still depend on sigma
    z2 = (y2 - m2) ** 2 / vs.predict_variance(m2, variance=v2)
    small, large = v2 < np.median(v2), v2 >= np.median(v2)
    assert z2[small].mean() > 1.5 * z2[large].mean()


def test_closed_form_scale_is_the_nll_minimiser() -> None:
    mu, var, y = _data(1.7, seed=4, n=3000)
    w = np.random.default_rng(5).uniform(0, 2, 3000)
    s = VarianceScaling().fit(mu, variance=var, targets=y, sample_weight=w).scale_
    res = optimize.minimize_scalar(
        lambda ls: gaussian_nll(mu, variance=var * math.exp(ls), targets=y, sample_weight=w),
        bounds=(-5, 5),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert s == pytest.approx(math.exp(res.x), rel=1e-6)


def test_platt_gradient_matches_finite_differences() -> None:
    mu, var, y = _data(1.3, seed=6, n=500)
    w = np.random.default_rng(7).uniform(0.1, 2, 500)
    lc = np.log(var) - np.log(var).mean()
    log_r2 = np.log((y - mu) ** 2)
    for ww in (None, w):
        for theta in ([1.0, 0.3], [0.4, -0.7], [-0.2, 1.1]):
            t = np.array(theta)
            _, g = _nll_and_grad(t, lc, log_r2, ww)
            for j in range(2):
                e = np.zeros(2)
                e[j] = 1e-6
                fd = (
                    _nll_and_grad(t + e, lc, log_r2, ww)[0]
                    - _nll_and_grad(t - e, lc, log_r2, ww)[0]
                ) / 2e-6
                assert g[j] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    # the fitted optimum: the gradient vanishes (in the original coordinates too)
    pl = VariancePlattScaling().fit(mu, variance=var, targets=y)
    f = lambda p: gaussian_nll(mu, variance=np.exp(p[0] * np.log(var) + p[1]), targets=y)  # noqa: E731
    p0 = np.array([pl.weight_, pl.bias_])
    for j in range(2):
        e = np.zeros(2)
        e[j] = 1e-5
        assert abs((f(p0 + e) - f(p0 - e)) / 2e-5) < 1e-6


def _identity() -> QuantileRecalibration:
    rc = QuantileRecalibration()
    rc.knots_x_ = np.array([0.0, 1.0])
    rc.knots_y_ = np.array([0.0, 1.0])
    return rc


def test_quantile_numerics_on_the_identity_map() -> None:
    mu, var, y = _data(1.0, seed=8, n=2000)
    y = y.copy()
    y[:3] = mu[:3] + np.array([-12.0, 40.0, 0.0]) * np.sqrt(var[:3])  # far tails
    rc = _identity()
    got = rc.scores(mu, variance=var, targets=y)
    assert got["nll"] == pytest.approx(gaussian_nll(mu, variance=var, targets=y), rel=1e-12)
    assert got["dss"] == pytest.approx(dawid_sebastiani(mu, variance=var, targets=y), rel=1e-10)
    assert got["crps"] == pytest.approx(crps_gaussian(mu, variance=var, targets=y), rel=1e-12)
    np.testing.assert_allclose(
        rc.predict_cdf(mu, variance=var, targets=y), ndtr((y - mu) / np.sqrt(var))
    )
    lo, hi = rc.predict_interval(mu, variance=var, level=0.9)
    np.testing.assert_allclose(hi, mu + stats.norm.ppf(0.95) * np.sqrt(var), rtol=1e-12)
    np.testing.assert_allclose(lo, mu - stats.norm.ppf(0.95) * np.sqrt(var), rtol=1e-12)


def _fitted_quantile(n_knots: int = 12) -> QuantileRecalibration:
    mu, var, y = _data(0.6, seed=9, n=3000)
    return QuantileRecalibration(n_knots=n_knots).fit(mu, variance=var, targets=y)


@pytest.mark.parametrize("n_knots", [1, 12, 60])
def test_quantile_scores_against_numerical_integration(n_knots: int) -> None:
    rc = _fitted_quantile(n_knots)
    mu, sd = 0.7, 1.9
    cdf = lambda x: rc.predict_cdf([mu], variance=[sd * sd], targets=[x])[0]  # noqa: E731
    qf = lambda t: rc.predict_quantile([mu], variance=[sd * sd], q=t)[0]  # noqa: E731
    pts = list(mu + sd * stats.norm.ppf(rc.knots_x_[1 : -1 : max(1, n_knots // 30)]))
    mean = integrate.quad(
        qf, 0, 1, limit=500, points=list(rc.knots_y_[1 : -1 : max(1, n_knots // 30)])
    )[0]
    m2 = integrate.quad(
        lambda t: qf(t) ** 2,
        0,
        1,
        limit=500,
        points=list(rc.knots_y_[1 : -1 : max(1, n_knots // 30)]),
    )[0]
    v = m2 - mean**2
    for y in (mu - 3.1 * sd, mu + 0.2, mu + 2.5 * sd):
        got = rc.scores([mu], variance=[sd * sd], targets=[y])
        assert got["dss"] == pytest.approx((y - mean) ** 2 / v + math.log(v), rel=1e-6)
        crps = sum(
            integrate.quad(lambda x, y=y: (cdf(x) - (x >= y)) ** 2, a, b, limit=500, points=pts)[0]
            for a, b in ((mu - 40 * sd, y), (y, mu + 40 * sd))
        )
        assert got["crps"] == pytest.approx(crps, rel=1e-6)
        h = 1e-6
        dens = (cdf(y + h) - cdf(y - h)) / (2 * h)
        assert got["nll"] == pytest.approx(-math.log(dens), rel=1e-5)


def test_quantiles_invert_the_cdf_and_shapes() -> None:
    rc = _fitted_quantile(50)
    mu, var, _ = _data(1.0, seed=10, n=7)
    q = np.array([1e-6, 0.01, 0.3, 0.5, 0.77, 0.999999])
    Q = rc.predict_quantile(mu, variance=var, q=q)
    assert Q.shape == (7, 6)
    assert rc.predict_quantile(mu, variance=var, q=0.3).shape == (7,)
    for j in range(q.size):
        np.testing.assert_allclose(
            rc.predict_cdf(mu, variance=var, targets=Q[:, j]), q[j], atol=1e-10
        )
    lo, hi = rc.predict_interval(mu, variance=var, level=0.6)
    np.testing.assert_allclose(lo, rc.predict_quantile(mu, variance=var, q=0.2))
    np.testing.assert_allclose(hi, rc.predict_quantile(mu, variance=var, q=0.8))
    assert np.all(np.diff(rc.knots_x_) > 0) and np.all(np.diff(rc.knots_y_) > 0)
    assert rc.injective and not rc.gaussian and not hasattr(rc, "predict_variance")


@pytest.mark.parametrize("cls", [VarianceScaling, VariancePlattScaling, QuantileRecalibration])
def test_weighted_fit_equals_repeated_rows(cls) -> None:
    mu, var, y = _data(1.4, seed=11, n=400)
    w = np.random.default_rng(12).integers(0, 4, 400)
    a = cls().fit(mu, variance=var, targets=y, sample_weight=w)
    rep = np.repeat(np.arange(400), w)
    b = cls().fit(mu[rep], variance=var[rep], targets=y[rep])
    m2, v2, y2 = _data(1.4, seed=13, n=50)
    np.testing.assert_allclose(
        a.predict_cdf(m2, variance=v2, targets=y2),
        b.predict_cdf(m2, variance=v2, targets=y2),
        rtol=1e-7,
        atol=1e-9,
    )


@pytest.mark.parametrize("cls", [VarianceScaling, VariancePlattScaling, QuantileRecalibration])
def test_json_round_trip_and_tampering(cls, tmp_path) -> None:
    mu, var, y = _data(0.8, seed=14, n=1000)
    rc = cls().fit(mu, variance=var, targets=y)
    text = rc.to_json()
    for back in (
        cls.from_json(text),
        calipers.load_recalibrator(text),
        calipers.recalibration.load_recalibrator(text),
    ):
        assert type(back) is cls
        assert np.array_equal(
            back.predict_cdf(mu, variance=var, targets=y),
            rc.predict_cdf(mu, variance=var, targets=y),
        )
        assert back.scores(mu, variance=var, targets=y) == rc.scores(mu, variance=var, targets=y)
    path = tmp_path / "rc.json"
    rc.save(path)
    assert np.array_equal(
        cls.load(path).predict_quantile(mu, variance=var, q=0.1),
        rc.predict_quantile(mu, variance=var, q=0.1),
    )
    doc = json.loads(text)
    field = next(iter(doc["state"]))
    bad = dict(doc, state=dict(doc["state"], **{field: "x"}))
    with pytest.raises(CalibrationInputError, match=f"field '{field}'"):
        cls.from_json(json.dumps(bad))
    extra = dict(doc, state=dict(doc["state"], extra_=1.0))
    with pytest.raises(CalibrationInputError, match="extra_"):
        calipers.load_recalibrator(json.dumps(extra))
    with pytest.raises(CalibrationInputError, match="not a TemperatureScaling"):
        calipers.TemperatureScaling.from_json(text)
    unfitted = cls.from_json(cls().to_json())
    with pytest.raises(NotFittedError):
        unfitted.predict_cdf(mu, variance=var, targets=y)


def test_tampered_quantile_map_is_refused() -> None:
    doc = json.loads(_fitted_quantile().to_json())
    xs = doc["state"]["knots_x_"]["ndarray"]
    xs[2], xs[3] = xs[3], xs[2]
    with pytest.raises(CalibrationInputError, match="field 'knots_x_' must be .*increasing"):
        QuantileRecalibration.from_json(json.dumps(doc))
    doc = json.loads(_fitted_quantile().to_json())
    doc["state"]["knots_y_"]["ndarray"][-1] = 0.999999
    with pytest.raises(CalibrationInputError, match="'knots_y_' must start at 0 and end at 1"):
        QuantileRecalibration.from_json(json.dumps(doc))
    doc = json.loads(VarianceScaling().fit([0.0], variance=[1.0], targets=[2.0]).to_json())
    doc["state"]["scale_"] = 0
    with pytest.raises(CalibrationInputError, match="field 'scale_' must be a finite number > 0"):
        calipers.load_recalibrator(json.dumps(doc))


def test_not_fitted_and_bad_input() -> None:
    for rc in (VarianceScaling(), VariancePlattScaling(), QuantileRecalibration()):
        with pytest.raises(NotFittedError, match="not fitted"):
            rc.predict_quantile([0.0], variance=[1.0], q=0.5)
        with pytest.raises(CalibrationInputError, match=r"variance must be > 0.*row 1 is 0.0"):
            rc.fit([0.0, 1.0], variance=[1.0, 0.0], targets=[0.0, 1.0])
        with pytest.raises(CalibrationInputError, match="targets has 1 rows but mean has 2"):
            rc.fit([0.0, 1.0], variance=[1.0, 2.0], targets=[0.0])
    rc = VarianceScaling().fit([0.0, 1.0], variance=[1.0, 2.0], targets=[1.0, 0.0])
    with pytest.raises(CalibrationInputError, match="q must lie strictly between 0 and 1"):
        rc.predict_quantile([0.0], variance=[1.0], q=1.0)
    with pytest.raises(CalibrationInputError, match="level must"):
        rc.predict_interval([0.0], variance=[1.0], level=1.5)
    with pytest.raises(CalibrationInputError, match="std must be > 0"):
        rc.predict_variance([0.0], std=[-1.0])
    with pytest.raises(CalibrationInputError, match="equals its predicted mean"):
        VarianceScaling().fit([0.0, 1.0], variance=[1.0, 2.0], targets=[0.0, 1.0])
    with pytest.raises(CalibrationInputError, match="no parameter 'tol'"):
        VarianceScaling().set_params(tol=1.0)
    assert repr(VariancePlattScaling(max_iter=5)) == "VariancePlattScaling(tol=1e-10, max_iter=5)"
    with pytest.raises(CalibrationInputError, match="parameter 'n_knots'"):
        QuantileRecalibration(n_knots=0).fit([0.0, 1.0], variance=[1.0, 2.0], targets=[1.0, 0.0])


@pytest.mark.parametrize(("n", "knots"), [(50, 8), (100, 10), (300, 30), (1000, 100), (5000, 100)])
def test_quantile_default_knots_follow_the_stated_rule(n: int, knots: int) -> None:
    """n_knots=None: max(ceil(sqrt(n)), n // 10) interior knots, at most 100 (distinct PITs)."""
    rng = np.random.default_rng(n)
    mu, sd = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    y = mu + 2.0 * sd * rng.normal(size=n)
    rc = QuantileRecalibration().fit(mu, std=sd, targets=y)
    # knots_x_ holds the anchors 0 and 1 and one knot per pooled group
    assert rc.knots_x_.shape[0] - 2 == knots
    doc = json.loads(rc.to_json())
    assert doc["params"] == {"n_knots": None}
    back = calipers.load_recalibrator(rc.to_json())
    assert np.array_equal(
        back.predict_cdf(mu, std=sd, targets=y), rc.predict_cdf(mu, std=sd, targets=y)
    )


@pytest.mark.parametrize("cls", [VarianceScaling, VariancePlattScaling, QuantileRecalibration])
def test_tensor_predictions_come_back_as_tensors(cls: type) -> None:
    """Arrays back as they came (as the classification recalibrators): a float32 tensor in,
    float32 tensors out on its device, equal to the NumPy results."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    mu, sd = rng.normal(size=300), rng.uniform(0.5, 2.0, 300)
    y = mu + 2.0 * sd * rng.normal(size=300)
    rc = cls().fit(mu, std=sd, targets=y)
    m32, s32, y32 = (torch.tensor(a, dtype=torch.float32) for a in (mu, sd, y))
    m, s, t = (a.double().numpy() for a in (m32, s32, y32))  # the float32 values, in float64
    cdf = rc.predict_cdf(m32, std=s32, targets=y32)
    assert isinstance(cdf, torch.Tensor) and cdf.dtype == torch.float32
    np.testing.assert_allclose(cdf.numpy(), rc.predict_cdf(m, std=s, targets=t), rtol=1e-6)
    q = rc.predict_quantile(m32, std=s32, q=[0.1, 0.9])
    assert isinstance(q, torch.Tensor) and tuple(q.shape) == (300, 2)
    lo, hi = rc.predict_interval(m32, std=s32)
    assert isinstance(lo, torch.Tensor) and isinstance(hi, torch.Tensor)
    if rc.gaussian:
        v = rc.predict_variance(m32, std=s32)
        assert isinstance(v, torch.Tensor) and v.dtype == torch.float32
        np.testing.assert_allclose(v.numpy(), rc.predict_variance(m, std=s), rtol=1e-6)
    assert isinstance(rc.predict_cdf(mu, std=sd, targets=y), np.ndarray)


def test_document_envelope_is_checked_as_for_classification() -> None:
    """The same envelope rules as the classification files (one checker): format, keys."""
    rc = VarianceScaling().fit([0.0, 0.0], variance=[1.0, 1.0], targets=[1.0, 3.0])
    doc = json.loads(rc.to_json())
    for bad, message in (
        (
            {**doc, "format": 3},
            r"format 3 is not supported; this version of calipers reads format 2",
        ),
        ({**doc, "format": 1}, r"format 1 is not supported"),
        ({**doc, "extra": 1}, r"VarianceScaling file: unknown key 'extra'"),
        ({k: v for k, v in doc.items() if k != "state"}, r"key 'state' is missing"),
        ({**doc, "params": []}, r"'params' must be an object of named values"),
    ):
        with pytest.raises(CalibrationInputError, match=message):
            calipers.load_recalibrator(json.dumps(bad))
