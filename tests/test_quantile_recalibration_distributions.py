"""QuantileRecalibration of any predictive distribution (Kuleshov, Fenner & Ermon 2018).

Recalibrated PIT values on held-out data are compared with the uniform law by
the Kolmogorov-Smirnov distance computed here by hand; quantiles against the
recalibrated CDF; scores against the Gaussian closed forms and brute-force sums.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from calipers.recalibration import QuantileRecalibration, VariancePlattScaling, VarianceScaling
from calipers.regression import Gaussian, Parametric, QuantileSet, SampleEnsemble
from calipers.validation import CalibrationInputError


def _ks(u: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance of the sample ``u`` to U(0, 1)."""
    x = np.sort(u)
    n = x.shape[0]
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - x), np.max(x - (i - 1) / n)))


def _randomised(d: object, y: np.ndarray, seed: int) -> np.ndarray:
    lo, hi = d.pit_interval(y)  # type: ignore[attr-defined]
    return lo + np.random.default_rng(seed).random(y.shape[0]) * (hi - lo)


N = 6000  # half for the fit, half held out


def _student_t() -> tuple[Parametric, np.ndarray]:
    rng = np.random.default_rng(1)
    mu, s = rng.normal(size=N), rng.uniform(0.5, 2.0, N)
    y = mu + 0.3 + 2.5 * s * rng.standard_t(4, size=N)  # biased and over-confident
    return Parametric("student_t", df=4.0, loc=mu, scale=s), y


def _ensemble() -> tuple[SampleEnsemble, np.ndarray]:
    rng = np.random.default_rng(2)
    mu = rng.normal(size=N)
    members = mu[:, None] + rng.normal(size=(N, 20))  # spread 1
    y = mu + 2.0 * rng.normal(size=N)  # truth spread 2: under-dispersed ensemble
    return SampleEnsemble(members), y


def _quantile_set() -> tuple[QuantileSet, np.ndarray]:
    rng = np.random.default_rng(3)
    mu = rng.normal(size=N)
    levels = np.linspace(0.05, 0.95, 19)
    q = mu[:, None] + stats.norm.ppf(levels)[None, :]
    y = mu + 0.5 + 1.5 * rng.normal(size=N)
    return QuantileSet(levels, q), y


def _poisson() -> tuple[Parametric, np.ndarray]:
    rng = np.random.default_rng(4)
    mu = rng.uniform(1.0, 20.0, N)
    y = rng.negative_binomial(2.0, 2.0 / (2.0 + mu)).astype(float)  # over-dispersed counts
    return Parametric("poisson", mu=mu), y


CASES = {
    "student_t": _student_t,
    "ensemble": _ensemble,
    "quantile_set": _quantile_set,
    "poisson": _poisson,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_recalibrated_pit_is_uniform_on_held_out_data(case: str) -> None:
    d, y = CASES[case]()
    half = N // 2
    fit, test = np.arange(half), np.arange(half, N)
    rc = QuantileRecalibration().fit(d.take(fit), targets=y[fit], seed=5)
    before = _ks(_randomised(d.take(test), y[test], seed=6))
    after = _ks(rc.predict_pit(d.take(test), targets=y[test], seed=6))
    # 3000 held-out uniforms: the KS distance of a uniform sample exceeds 0.03 with
    # probability about 1 %
    assert before > 0.08, before
    assert after < 0.03, (before, after)


@pytest.mark.parametrize("case", ["student_t", "ensemble", "quantile_set"])
def test_recalibrated_quantiles_invert_the_recalibrated_cdf(case: str) -> None:
    d, y = CASES[case]()
    rc = QuantileRecalibration().fit(d, targets=y)
    d = d.take(np.arange(200))
    # a quantile set (an ensemble read as one) says nothing beyond its outermost levels:
    # the inversion holds for the levels whose pre-image R^-1(q) lies between them
    if case == "student_t":
        lo, hi = 0.001, 0.999
    else:
        ends = [1 / 21, 20 / 21] if case == "ensemble" else [0.05, 0.95]
        lo, hi = np.interp(ends, rc.knots_x_, rc.knots_y_) + [0.005, -0.005]
    q = np.linspace(lo, hi, 7)
    Q = rc.predict_quantile(d, q=q)
    assert Q.shape == (200, 7)
    assert np.all(np.diff(Q, axis=1) >= 0)
    for j in range(q.shape[0]):
        np.testing.assert_allclose(rc.predict_cdf(d, targets=Q[:, j]), q[j], rtol=0, atol=1e-12)
    level = min(1.0 - 2.0 * lo, 2.0 * hi - 1.0)
    lower, upper = rc.predict_interval(d, level=level)
    np.testing.assert_allclose(
        rc.predict_cdf(d, targets=lower), (1 - level) / 2, rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        rc.predict_cdf(d, targets=upper), (1 + level) / 2, rtol=0, atol=1e-12
    )


def test_intervals_of_recalibrated_ensemble_cover_on_held_out_data() -> None:
    d, y = _ensemble()
    half = N // 2
    rc = QuantileRecalibration().fit(d.take(np.arange(half)), targets=y[:half])
    # within the members' range: beyond it the quantiles stop at the outermost members
    # (R(1/21) is about 0.18 here), see test_ensemble_tails_stop_at_the_outermost_members
    lower, upper = rc.predict_interval(d.take(np.arange(half, N)), level=0.5)
    cover = float(np.mean((lower <= y[half:]) & (y[half:] <= upper)))
    raw = d.take(np.arange(half, N))
    raw_cover = float(np.mean((raw.quantile(0.25) <= y[half:]) & (y[half:] <= raw.quantile(0.75))))
    assert raw_cover < 0.3  # the spread-1 ensemble's quartiles cover about a quarter
    assert abs(cover - 0.5) < 0.025


def test_ensemble_tails_stop_at_the_outermost_members() -> None:
    d, y = _ensemble()
    rc = QuantileRecalibration().fit(d, targets=y)
    sub = d.take(np.arange(10))
    lower, upper = rc.predict_interval(sub, level=0.9)
    np.testing.assert_array_equal(lower, sub.samples.min(axis=1))
    np.testing.assert_array_equal(upper, sub.samples.max(axis=1))


def test_gaussian_distribution_is_the_gaussian_arrays_bit_for_bit() -> None:
    rng = np.random.default_rng(8)
    mu, sd = rng.normal(size=3000), rng.uniform(0.5, 2.0, 3000)
    y = mu + 1.7 * sd * rng.normal(size=3000)
    w = rng.uniform(0.0, 2.0, 3000)
    a = QuantileRecalibration().fit(mu, std=sd, targets=y, sample_weight=w)
    b = QuantileRecalibration().fit(Gaussian(mu, std=sd), targets=y, sample_weight=w)
    assert a.to_json() == b.to_json()
    G = Gaussian(mu, std=sd)
    for rc in (a, VarianceScaling().fit(mu, std=sd, targets=y)):
        assert np.array_equal(rc.predict_cdf(G, targets=y), rc.predict_cdf(mu, std=sd, targets=y))
        assert np.array_equal(
            rc.predict_quantile(G, q=[0.1, 0.9]), rc.predict_quantile(mu, std=sd, q=[0.1, 0.9])
        )
        assert rc.scores(G, targets=y) == rc.scores(mu, std=sd, targets=y)
        assert rc.improvement(G, targets=y) == rc.improvement(mu, std=sd, targets=y)
        # continuous predictions: the PIT is the CDF, nothing is drawn
        assert np.array_equal(
            rc.predict_pit(mu, std=sd, targets=y, seed=None), rc.predict_cdf(mu, std=sd, targets=y)
        )


def test_generic_scores_against_the_gaussian_closed_forms() -> None:
    """The generic path on a normal Parametric against the closed forms of the Gaussian path."""
    rng = np.random.default_rng(9)
    n = 2000
    mu, sd = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    y = mu + 0.6 * sd * rng.standard_t(5, size=n)
    rc = QuantileRecalibration().fit(mu, std=sd, targets=y)
    P = Parametric("normal", loc=mu, scale=sd)
    closed = rc.scores_per_row(mu, std=sd, targets=y)
    generic = rc._score_rows_distribution(P, y)  # what a continuous family goes through
    assert set(generic) == {"nll", "crps"}
    np.testing.assert_allclose(generic["nll"], closed["nll"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(generic["crps"], closed["crps"], rtol=3e-4)
    assert abs(float(np.mean(generic["crps"])) - float(np.mean(closed["crps"]))) < 1e-5
    assert np.array_equal(rc._cdf_distribution(P, y), rc.predict_cdf(mu, std=sd, targets=y))
    # the public path reads a normal Parametric as the Gaussian arrays (loc, std=scale)
    assert rc.scores(P, targets=y) == rc.scores(mu, std=sd, targets=y)
    vs = VarianceScaling().fit(P, targets=y)
    assert vs.to_json() == VarianceScaling().fit(mu, std=sd, targets=y).to_json()
    assert np.array_equal(vs.predict_variance(P), vs.predict_variance(mu, std=sd))


def test_count_scores_by_brute_force() -> None:
    """Recalibrated Poisson: mass and CRPS from the recalibrated CDF summed over 0..400."""
    d, y = _poisson()
    rc = QuantileRecalibration().fit(d, targets=y, seed=1)
    sub = d.take(np.arange(50))
    t = y[:50]
    rows = rc.scores_per_row(sub, targets=t)
    mus = sub.params["mu"]
    k = np.arange(0, 401, dtype=float)
    Fk = np.interp(stats.poisson.cdf(k[None, :], mus[:, None]), rc.knots_x_, rc.knots_y_)
    crps = ((Fk - (k[None, :] >= t[:, None])) ** 2).sum(axis=1)  # integer targets: unit steps
    np.testing.assert_allclose(rows["crps"], crps, rtol=1e-10)
    # the recalibrated mass R(F(y)) - R(F(y-)); where both ends lie on one segment of R it
    # is the slope times the Poisson mass (computed so: the difference of two CDF values
    # near 1 loses the digits of a mass of 1e-16)
    F, Fl = stats.poisson.cdf(t, mus), stats.poisson.cdf(t - 1, mus)
    xk, yk = rc.knots_x_, rc.knots_y_
    seg = np.minimum(np.searchsorted(xk, F, side="right") - 1, xk.shape[0] - 2)
    seg_l = np.minimum(np.searchsorted(xk, Fl, side="right") - 1, xk.shape[0] - 2)
    slope = (yk[seg + 1] - yk[seg]) / (xk[seg + 1] - xk[seg])
    expected = np.where(
        seg == seg_l,
        -(np.log(slope) + stats.poisson.logpmf(t, mus)),
        -np.log(np.interp(F, xk, yk) - np.interp(Fl, xk, yk)),
    )
    assert (seg != seg_l).any() and (seg == seg_l).any()
    np.testing.assert_allclose(rows["nll"], expected, rtol=1e-9)
    # with the identity map the count CRPS is the distribution's closed form
    before = rc._score_rows_distribution(sub, t, identity=True)
    np.testing.assert_allclose(before["crps"], sub.crps(t), rtol=1e-9)


def test_count_crps_of_outlying_targets_without_a_loop_over_them() -> None:
    """Targets 1e9 and -1e9 away: the window sum plus the length beyond it (closed form check)."""
    d, y = _poisson()
    rc = QuantileRecalibration().fit(d, targets=y, seed=1)
    P = Parametric("poisson", mu=[5.0, 5.0, 5.0])
    t = np.array([1e9, -1e9, 3.5])
    before = rc._score_rows_distribution(P, t, identity=True)["crps"]
    np.testing.assert_allclose(before, P.crps(t), rtol=1e-12)
    after = rc.scores_per_row(P, targets=t)["crps"]
    # far above: every unit below the target up to the support's end counts (F' = 1 there)
    k = np.arange(0, 200, dtype=float)
    Fk = np.interp(stats.poisson.cdf(k, 5.0), rc.knots_x_, rc.knots_y_)
    by_hand_up = float(np.sum(Fk**2)) + (1e9 - 200.0)
    by_hand_down = float(np.sum((1.0 - Fk) ** 2)) + 1e9  # [-1e9, 0): (1 - 0)**2
    np.testing.assert_allclose(after[:2], [by_hand_up, by_hand_down], rtol=1e-14)


def test_count_crps_refusals() -> None:
    d, y = _poisson()
    rc = QuantileRecalibration().fit(d, targets=y, seed=1)
    huge = Parametric("poisson", mu=[1e12])  # scipy's quantiles are nan there
    with pytest.raises(CalibrationInputError, match="CRPS of the counts of row 0 cannot be summed"):
        rc.scores(huge, targets=[1e12])


def test_count_nll_is_finite_far_in_the_tail() -> None:
    """A count whose CDF rounds to 1 on both sides keeps its log mass (it was inf - inf)."""
    d, y = _poisson()
    rc = QuantileRecalibration().fit(d, targets=y, seed=1)
    far = Parametric("poisson", mu=[14.0, 3.0])
    t = np.array([60.0, 2.0])
    assert far.cdf(t)[0] == 1.0 and far.cdf_left(t)[0] == 1.0
    nll = rc.scores_per_row(far, targets=t)["nll"]
    slope_last = (rc.knots_y_[-1] - rc.knots_y_[-2]) / (rc.knots_x_[-1] - rc.knots_x_[-2])
    by_hand = -(np.log(slope_last) + stats.poisson.logpmf(60, 14.0))
    assert nll[0] == pytest.approx(by_hand, rel=1e-12)
    assert np.isfinite(rc.improvement(d, targets=y)["nll"])


def test_quantile_set_scores_are_its_pinball_form() -> None:
    d, y = _quantile_set()
    rc = QuantileRecalibration().fit(d, targets=y)
    sub, t = d.take(np.arange(100)), y[:100]
    rows = rc.scores_per_row(sub, targets=t)
    assert set(rows) == {"crps"}
    # by hand: quantiles at R^-1(tau_j), interpolated linearly in the level
    s = np.interp(sub.levels, rc.knots_y_, rc.knots_x_)
    Q = np.stack(
        [np.array([np.interp(sj, sub.levels, row) for row in sub.quantiles]) for sj in s], 1
    )
    u = t[:, None] - Q
    by_hand = 2.0 * np.mean(u * (sub.levels[None, :] - (u < 0)), axis=1)
    np.testing.assert_allclose(rows["crps"], by_hand, rtol=1e-12, atol=1e-14)
    gain = rc.improvement(sub, targets=t)
    assert gain["crps"] == pytest.approx(float(np.mean(sub.crps(t)) - np.mean(by_hand)), abs=1e-12)


def test_json_round_trip_and_seeds() -> None:
    d, y = _ensemble()
    rc = QuantileRecalibration(n_knots=30).fit(d, targets=y, seed=3)
    back = QuantileRecalibration.from_json(rc.to_json())
    assert np.array_equal(back.knots_x_, rc.knots_x_) and np.array_equal(back.knots_y_, rc.knots_y_)
    assert np.array_equal(
        back.predict_pit(d, targets=y, seed=4), rc.predict_pit(d, targets=y, seed=4)
    )
    assert json.loads(rc.to_json())["params"] == {"n_knots": 30}
    again = QuantileRecalibration(n_knots=30).fit(d, targets=y, seed=3)
    other = QuantileRecalibration(n_knots=30).fit(d, targets=y, seed=4)
    assert np.array_equal(again.knots_x_, rc.knots_x_)
    assert not np.array_equal(other.knots_x_, rc.knots_x_)  # the ensemble's tails are randomised


def test_fit_uses_the_pit_of_the_diagnostics() -> None:
    """The map is fitted to calipers.regression.pit_values with the same seed (same draws)."""
    from calipers.recalibration.regression.quantile_recalibration import _fit_knots
    from calipers.regression import pit_values

    for d, y in (_quantile_set(), _poisson()):
        rc = QuantileRecalibration().fit(d, targets=y, seed=3)
        u = pit_values(d, targets=y, seed=3)
        x, k = _fit_knots(np.clip(u, 0.0, 1.0), None, rc._knot_count)
        assert np.array_equal(rc.knots_x_, x) and np.array_equal(rc.knots_y_, k)
        gen = QuantileRecalibration().fit(d, targets=y, seed=np.random.default_rng([3, 2009]))
        assert np.array_equal(gen.knots_x_, rc.knots_x_)


def test_sklearn_clone() -> None:
    base = pytest.importorskip("sklearn.base")
    rc = QuantileRecalibration(n_knots=12)
    c = base.clone(rc)
    assert c is not rc and c.get_params() == {"n_knots": 12}
    d, y = _quantile_set()
    c.fit(d, targets=y)
    assert c.knots_x_.shape[0] == 14


def test_refusals_name_what_is_accepted() -> None:
    d, y = _quantile_set()
    for cls in (VarianceScaling, VariancePlattScaling):
        with pytest.raises(
            CalibrationInputError,
            match=rf"{cls.__name__} recalibrates gaussian predictions only .*QuantileSet \(kind 'quantiles'\).*QuantileRecalibration",
        ):
            cls().fit(d, targets=y)
    vs = VarianceScaling().fit(np.zeros(3), std=np.ones(3), targets=[1.0, -1.0, 0.5])
    with pytest.raises(CalibrationInputError, match="VarianceScaling recalibrates gaussian"):
        vs.predict_variance(Parametric("laplace", loc=[0.0], scale=[1.0]))
    rc = QuantileRecalibration()
    with pytest.raises(CalibrationInputError, match="holds its own spread"):
        rc.fit(d, std=np.ones(N), targets=y)
    with pytest.raises(CalibrationInputError, match="seed must be a non-negative integer"):
        rc.fit(d, targets=y, seed=-1)
    with pytest.raises(CalibrationInputError, match="targets has 5 rows"):
        rc.fit(d, targets=y[:5])
    rc.fit(d, targets=y)
    with pytest.raises(CalibrationInputError, match="holds its own spread"):
        rc.predict_quantile(d, std=np.ones(N), q=0.5)


def test_tensor_targets_come_back_as_tensors() -> None:
    torch = pytest.importorskip("torch")
    d, y = _student_t()
    rc = QuantileRecalibration().fit(d, targets=torch.from_numpy(y))
    out = rc.predict_cdf(d, targets=torch.from_numpy(y))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert np.array_equal(out.numpy(), rc.predict_cdf(d, targets=y))
