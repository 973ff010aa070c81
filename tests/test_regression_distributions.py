"""The predictive-distribution layer (calipers.regression.distributions).

Closed forms are checked against values computed here independently (numerical
integration of the CRPS definition with SciPy's distributions, hand-worked
values), and against scoringrules to 1e-12 when it is installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from calipers.regression import (
    Gaussian,
    Parametric,
    PredictiveDistribution,
    ProbabilisticPredictions,
    QuantileSet,
    SampleEnsemble,
    central_interval,
    check_gaussian,
    check_predictive,
    crps_gaussian_per_row,
    gaussian_nll_per_row,
    pit_values,
)
from calipers.validation import CalibrationInputError

RNG = np.random.default_rng(20261127)
N = 40


def _params() -> dict[str, tuple[dict[str, np.ndarray], np.ndarray]]:
    rng = np.random.default_rng(7)
    loc = rng.normal(size=N)
    scale = rng.uniform(0.5, 2.0, N)
    y = rng.normal(size=N) * 2 + 0.5
    yp = np.exp(rng.normal(size=N))
    mu = rng.uniform(0.5, 15.0, N)
    k = rng.poisson(mu).astype(float)
    nn = rng.uniform(0.5, 8.0, N)
    p = rng.uniform(0.15, 0.9, N)
    kb = stats.nbinom(nn, p).rvs(random_state=3).astype(float)
    return {
        "normal": (dict(loc=loc, scale=scale), y),
        "student_t": (dict(df=rng.uniform(1.5, 9.0, N), loc=loc, scale=scale), y),
        "laplace": (dict(loc=loc, scale=scale), y),
        "logistic": (dict(loc=loc, scale=scale), y),
        "lognormal": (dict(meanlog=loc * 0.3, sdlog=scale * 0.5), yp),
        "gamma": (dict(shape=rng.uniform(0.5, 5.0, N), rate=rng.uniform(0.5, 3.0, N)), yp),
        "poisson": (dict(mu=mu), k),
        "negative_binomial": (dict(n=nn, p=p), kb),
    }


PARAMS = _params()


def _crps_by_integration(frozen: object, y: float, discrete: bool) -> float:
    """CRPS = int (F(x) - 1{x >= y})^2 dx, integrated numerically (independent of the closed forms)."""
    F = frozen.cdf  # type: ignore[attr-defined]
    if discrete:
        # piecewise constant between integers: sum exactly over a wide range
        hi = int(frozen.ppf(1 - 1e-15)) + 2  # type: ignore[attr-defined]
        total = 0.0
        edges = sorted(set(list(range(0, hi + 1)) + [y]))
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            total += (F(a) - (1.0 if a >= y else 0.0)) ** 2 * (b - a)
        return total
    lo_q, hi_q = frozen.ppf(1e-13), frozen.ppf(1 - 1e-13)  # type: ignore[attr-defined]
    lo = min(lo_q, y) - 1.0
    hi = max(hi_q, y) + 1.0
    a = integrate.quad(lambda x: F(x) ** 2, lo, y, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    b = integrate.quad(lambda x: (1 - F(x)) ** 2, y, hi, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    return a + b


@pytest.mark.parametrize("family", sorted(PARAMS))
def test_closed_form_crps_equals_the_integral_of_its_definition(family: str) -> None:
    params, y = PARAMS[family]
    P = Parametric(family, **params)
    got = P.crps(y)
    idx = range(0, N, 8)
    for i in idx:
        one = _ScalarFrozen(P.take([i])._scipy())
        want = _crps_by_integration(one, float(y[i]), P.is_discrete)
        assert got[i] == pytest.approx(want, rel=2e-7, abs=1e-9), (family, i)


class _ScalarFrozen:
    """A one-row frozen distribution read as scalar functions."""

    def __init__(self, fz: object) -> None:
        self.fz = fz

    def cdf(self, x: float) -> float:
        return float(np.asarray(self.fz.cdf(x)).item())  # type: ignore[attr-defined]

    def ppf(self, q: float) -> float:
        return float(np.asarray(self.fz.ppf(q)).item())  # type: ignore[attr-defined]


@pytest.mark.parametrize("family", sorted(PARAMS))
def test_closed_form_crps_equals_scoringrules(family: str) -> None:
    sr = pytest.importorskip("scoringrules")
    params, y = PARAMS[family]
    got = Parametric(family, **params).crps(y)
    p = params
    want = {
        "normal": lambda: sr.crps_normal(y, p["loc"], p["scale"]),
        "student_t": lambda: sr.crps_t(y, p["df"], p["loc"], p["scale"]),
        "laplace": lambda: sr.crps_laplace(y, p["loc"], p["scale"]),
        "logistic": lambda: sr.crps_logistic(y, p["loc"], p["scale"]),
        "lognormal": lambda: sr.crps_lognormal(y, p["meanlog"], p["sdlog"]),
        "gamma": lambda: sr.crps_gamma(y, p["shape"], p["rate"]),
        "poisson": lambda: sr.crps_poisson(y, p["mu"]),
        "negative_binomial": lambda: sr.crps_negbinom(y, p["n"], p["p"]),
    }[family]()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("family", sorted(PARAMS))
def test_cdf_quantile_logpdf_moments_equal_scipy(family: str) -> None:
    params, y = PARAMS[family]
    P = Parametric(family, **params)
    fz = P._scipy()
    np.testing.assert_allclose(P.cdf(y), fz.cdf(y), rtol=1e-13, atol=1e-15)
    if P.is_discrete:
        np.testing.assert_allclose(P.cdf_left(y), fz.cdf(y - 1), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(P.logpdf(y), fz.logpmf(y), rtol=1e-13)
    else:
        np.testing.assert_array_equal(P.cdf_left(y), P.cdf(y))
        np.testing.assert_allclose(P.logpdf(y), fz.logpdf(y), rtol=1e-13)
    np.testing.assert_allclose(P.quantile(0.3), fz.ppf(0.3), rtol=1e-13)
    np.testing.assert_allclose(P.mean(), fz.mean(), rtol=1e-13)
    np.testing.assert_allclose(P.variance(), fz.var(), rtol=1e-13)


def test_hand_computed_values() -> None:
    # Laplace at its location: scale * (0 + 1 - 3/4)
    assert Parametric("laplace", loc=[0.0], scale=[2.0]).crps([0.0]).tolist() == [0.5]
    # logistic at its location: scale * (0 - 2 log(1/2) - 1) = scale (2 log 2 - 1)
    got = Parametric("logistic", loc=[1.0], scale=[3.0]).crps([1.0])[0]
    assert got == pytest.approx(3.0 * (2 * math.log(2.0) - 1.0), rel=1e-15)
    # Poisson(1) at 0: E|X - 0| - E|X - X'| / 2 by summing the mass function
    k = np.arange(0, 60)
    pk = stats.poisson(1.0).pmf(k)
    e1 = float(np.sum(pk * k))
    e2 = float(np.sum(pk[:, None] * pk[None, :] * np.abs(k[:, None] - k[None, :])))
    assert Parametric("poisson", mu=[1.0]).crps([0.0])[0] == pytest.approx(e1 - e2 / 2, rel=1e-13)
    # Poisson cdf_left/cdf at an atom and between atoms
    P = Parametric("poisson", mu=[2.0, 2.0])
    e = math.exp(-2.0)
    np.testing.assert_allclose(P.cdf([1.0, 1.5]), [3 * e, 3 * e], rtol=1e-14)
    np.testing.assert_allclose(P.cdf_left([1.0, 1.5]), [e, 3 * e], rtol=1e-14)
    # log-normal below 0: the CRPS is E X - y - E|X - X'| / 2 (closed form below the support)
    m, s = 0.2, 0.7
    ex = math.exp(m + s * s / 2)
    want = ex + 1.0 - ex * (2 * stats.norm.cdf(s / math.sqrt(2)) - 1)
    got = Parametric("lognormal", meanlog=[m], sdlog=[s]).crps([-1.0])[0]
    assert got == pytest.approx(want, rel=1e-14)


def test_gaussian_is_bit_identical_to_the_gaussian_functions() -> None:
    mu = RNG.normal(size=200)
    sd = RNG.uniform(0.1, 3.0, 200)
    y = RNG.normal(size=200)
    for spread in ({"std": sd}, {"variance": sd * sd}):
        G = Gaussian(mu, **spread)
        np.testing.assert_array_equal(G.cdf(y), pit_values(mu, **spread, targets=y))
        np.testing.assert_array_equal(G.crps(y), crps_gaussian_per_row(mu, **spread, targets=y))
        np.testing.assert_array_equal(G.logpdf(y), -gaussian_nll_per_row(mu, **spread, targets=y))
        ref = check_gaussian(mu, **spread, targets=y)
        np.testing.assert_array_equal(G.variance(), ref.variance)
        P = check_predictive(mu, **spread, targets=y)
        np.testing.assert_array_equal(P.distribution.variance(), ref.variance)
        np.testing.assert_array_equal(P.targets, ref.targets)
    np.testing.assert_allclose(G.quantile(0.975), mu + sd * stats.norm.ppf(0.975), rtol=1e-14)
    assert G.quantile(0.0).tolist() == [-np.inf] * 200


def test_gaussian_refusals_and_spread_by_name() -> None:
    with pytest.raises(CalibrationInputError, match=r"variance must be > 0 .*row 1 is 0.0"):
        Gaussian([0.0, 1.0], variance=[1.0, 0.0])
    with pytest.raises(CalibrationInputError, match="exactly one of variance"):
        Gaussian([0.0])
    with pytest.raises(TypeError, match="takes the predicted spread by name"):
        Gaussian([0.0], [1.0])  # type: ignore[misc]


def test_quantile_set_cdf_interpolates_and_bounds_the_tails() -> None:
    Q = QuantileSet([0.1, 0.5, 0.9], [[0.0, 1.0, 2.0], [0.0, 1.0, 1.0]])
    # inside: linear interpolation of (q_j, tau_j)
    np.testing.assert_allclose(Q.cdf([0.5, 0.25]), [0.3, 0.2], rtol=1e-15)
    np.testing.assert_array_equal(Q.cdf([0.5, 0.25]), Q.cdf_left([0.5, 0.25]))
    # below the first quantile: F in [0, tau_1]; above the last: [tau_m, 1]
    assert Q.cdf([-5.0, -5.0]).tolist() == [0.1, 0.1]
    assert Q.cdf_left([-5.0, -5.0]).tolist() == [0.0, 0.0]
    assert Q.cdf([5.0, 5.0]).tolist() == [1.0, 1.0]
    assert Q.cdf_left([5.0, 5.0]).tolist() == [0.9, 0.9]
    # at a quantile: the level; at q_1 the lower end is 0; at q_m the upper end is 1
    assert Q.cdf([1.0, 0.0]).tolist() == [0.5, 0.1]
    assert Q.cdf_left([1.0, 0.0]).tolist() == [0.5, 0.0]
    # row 1: q = 1 at levels 0.5 and 0.9 (flat stretch = atom), and q_m = 1
    assert Q.cdf([0.0, 1.0]).tolist() == [0.1, 1.0]
    assert Q.cdf_left([0.0, 1.0]).tolist() == [0.0, 0.5]
    # quantile: linear in the level, outermost quantile outside [tau_1, tau_m]
    np.testing.assert_allclose(Q.quantile(0.3), [0.5, 0.5], rtol=1e-15)
    assert Q.quantile(0.05).tolist() == [0.0, 0.0]
    assert Q.quantile(0.95).tolist() == [2.0, 1.0]
    assert Q.quantile(0.9).tolist() == [2.0, 1.0]
    assert Q.mean() is None and Q.variance() is None
    with pytest.raises(CalibrationInputError, match="has no density"):
        Q.logpdf([0.0, 0.0])


def test_quantile_set_one_sided_coverage_is_exact_at_its_levels() -> None:
    # calibrated quantile sets: P(F(y) <= tau_j) = P(y <= q_j) for every row
    rng = np.random.default_rng(1)
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    n = 4000
    mu = rng.normal(size=n)
    q = mu[:, None] + stats.norm.ppf(levels)[None, :]
    y = rng.normal(mu)
    Q = QuantileSet(levels, q)
    F = Q.cdf(y)
    for j, t in enumerate(levels):
        assert np.mean(F <= t) == np.mean(y <= q[:, j])


def test_quantile_crossing_raise_and_sort() -> None:
    q = [[0.0, 1.0, 2.0], [0.0, 2.0, 1.5]]
    with pytest.raises(CalibrationInputError, match=r"quantiles cross in row 1: 1.5 at level 0.9"):
        QuantileSet([0.1, 0.5, 0.9], q)
    Q = QuantileSet([0.1, 0.5, 0.9], q, crossing="sort")
    assert Q.quantiles.tolist() == [[0.0, 1.0, 2.0], [0.0, 1.5, 2.0]]
    with pytest.raises(CalibrationInputError, match="strictly increasing"):
        QuantileSet([0.5, 0.1], [[0.0, 1.0]])
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        QuantileSet([0.0, 0.5], [[0.0, 1.0]])
    with pytest.raises(CalibrationInputError, match="3 columns but there are 2 levels"):
        QuantileSet([0.1, 0.5], [[0.0, 1.0, 2.0]])
    with pytest.raises(CalibrationInputError, match=r"row 0, column 1 is nan"):
        QuantileSet([0.1, 0.5], [[0.0, np.nan]])
    with pytest.raises(CalibrationInputError, match="crossing must be"):
        QuantileSet([0.1, 0.5], [[0.0, 1.0]], crossing="clip")


def test_central_interval() -> None:
    Q = central_interval([0.0, 1.0], [2.0, 1.0], 0.9)
    np.testing.assert_allclose(Q.levels, [0.05, 0.95], rtol=1e-15)
    assert Q.quantiles.tolist() == [[0.0, 2.0], [1.0, 1.0]]
    with pytest.raises(CalibrationInputError, match="row 0 has lower 3.0 and upper 2.0"):
        central_interval([3.0], [2.0], 0.9)
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        central_interval([0.0], [2.0], 1.0)


def test_sample_ensemble_cdf_rank_pit_and_moments() -> None:
    S = SampleEnsemble([[3.0, 1.0, 2.0, 2.0]])
    assert S.cdf([2.0]).tolist() == [0.75]
    assert S.cdf_left([2.0]).tolist() == [0.25]
    lo, hi = S.pit_interval([2.0])
    assert lo.tolist() == [0.2] and hi.tolist() == [0.8]
    lo, hi = S.pit_interval([5.0])
    assert lo.tolist() == [0.8] and hi.tolist() == [1.0]
    assert S.mean().tolist() == [2.0] and S.variance().tolist() == [0.5]
    for p in (0.0, 0.1, 0.5, 0.77, 1.0):
        assert S.quantile(p).tolist() == [np.quantile([3.0, 1.0, 2.0, 2.0], p)]
    assert S.is_discrete and S.n_members == 4
    with pytest.raises(CalibrationInputError, match="samples must be 2-D"):
        SampleEnsemble([1.0, 2.0])
    with pytest.raises(CalibrationInputError, match=r"row 1, column 0 is inf"):
        SampleEnsemble([[1.0], [np.inf]])


def test_rank_pit_of_a_calibrated_ensemble_is_uniform() -> None:
    rng = np.random.default_rng(3)
    n, k = 20000, 9
    mu = rng.normal(size=n)
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, k)))
    y = mu + rng.normal(size=n)
    lo, hi = S.pit_interval(y)
    u = lo + rng.uniform(size=n) * (hi - lo)
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_parametric_refusals() -> None:
    with pytest.raises(CalibrationInputError, match="family must be one of"):
        Parametric("cauchy", loc=[0.0], scale=[1.0])
    with pytest.raises(CalibrationInputError, match="missing scale"):
        Parametric("normal", loc=[0.0])
    with pytest.raises(CalibrationInputError, match="unknown sigma"):
        Parametric("normal", loc=[0.0], scale=[1.0], sigma=[1.0])
    with pytest.raises(
        CalibrationInputError, match=r"scale of the laplace family must be > 0; row 1"
    ):
        Parametric("laplace", loc=[0.0, 0.0], scale=[1.0, -1.0])
    with pytest.raises(
        CalibrationInputError, match=r"p of the negative_binomial family must be in \(0, 1\]"
    ):
        Parametric("negative_binomial", n=[1.0], p=[0.0])
    with pytest.raises(CalibrationInputError, match="scale has 3 rows but loc has 2"):
        Parametric("normal", loc=[0.0, 1.0], scale=[1.0, 1.0, 1.0])
    with pytest.raises(CalibrationInputError, match="df > 1"):
        Parametric("student_t", df=[1.0], loc=[0.0], scale=[1.0]).crps([0.0])
    # scalars broadcast to the rows of the arrays
    P = Parametric("normal", loc=[0.0, 1.0], scale=2.0)
    assert P.params["scale"].tolist() == [2.0, 2.0] and P.n_samples == 2


def test_from_scipy_named_and_generic() -> None:
    loc = np.array([0.0, 1.0, -1.0])
    sc = np.array([1.0, 2.0, 0.5])
    y = np.array([0.3, -1.0, 2.0])
    P = Parametric.from_scipy(stats.norm(loc, sc))
    assert P.family == "normal"
    np.testing.assert_array_equal(P.params["scale"], sc)
    L = Parametric.from_scipy(stats.lognorm(0.5, scale=np.exp(loc)))
    assert L.family == "lognormal"
    np.testing.assert_allclose(L.params["meanlog"], loc, atol=1e-15)
    B = Parametric.from_scipy(stats.nbinom(3.0, [0.2, 0.5, 0.7]))
    assert B.family == "negative_binomial" and B.is_discrete
    # a family without a closed form: numerical CRPS, near the integral of its definition
    Gm = Parametric.from_scipy(stats.gumbel_r(loc=loc, scale=sc))
    assert Gm.family == "scipy.gumbel_r" and not Gm.is_discrete
    got = Gm.crps(y)
    for i in range(3):
        one = stats.gumbel_r(loc=loc[i], scale=sc[i])
        want = _crps_by_integration(one, float(y[i]), False)
        assert got[i] == pytest.approx(want, rel=1e-4)
    np.testing.assert_allclose(Gm.cdf(y), stats.gumbel_r(loc=loc, scale=sc).cdf(y), rtol=1e-15)
    with pytest.raises(CalibrationInputError, match="invalid at row 1"):
        Parametric.from_scipy(stats.beta([1.0, -1.0], 2.0))
    with pytest.raises(CalibrationInputError, match="frozen scipy.stats distribution"):
        Parametric.from_scipy(np.zeros(3))


@pytest.mark.parametrize(
    "dist",
    [
        Gaussian([0.0, 1.0, 2.0], std=[1.0, 2.0, 3.0]),
        Parametric("student_t", df=[3.0, 4.0, 5.0], loc=0.0, scale=[1.0, 2.0, 3.0]),
        Parametric.from_scipy(stats.gumbel_r(loc=[0.0, 1.0, 2.0])),
        QuantileSet([0.1, 0.9], [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]),
        SampleEnsemble([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]),
    ],
)
def test_take_and_array_round_trip(dist: PredictiveDistribution) -> None:
    y = np.array([0.5, 1.5, 2.5])
    back = PredictiveDistribution.from_arrays(dist.to_arrays())
    assert type(back) is type(dist) and back.kind == dist.kind
    np.testing.assert_array_equal(back.cdf(y), dist.cdf(y))
    np.testing.assert_array_equal(back.quantile(0.25), dist.quantile(0.25))
    sub = dist.take([2, 0])
    assert type(sub) is type(dist) and sub.n_samples == 2
    np.testing.assert_array_equal(sub.cdf(y[[2, 0]]), dist.cdf(y)[[2, 0]])
    np.testing.assert_array_equal(
        dist.take(np.array([True, False, True])).cdf(y[[0, 2]]), dist.cdf(y)[[0, 2]]
    )
    with pytest.raises(CalibrationInputError, match="outside the 3 rows"):
        dist.take([3])
    with pytest.raises(
        CalibrationInputError, match="targets has 2 rows but the predictive distribution has 3"
    ):
        dist.cdf([0.0, 1.0])
    with pytest.raises(CalibrationInputError, match="level must lie in"):
        dist.quantile(1.5)


def test_from_arrays_refuses_a_wrong_kind() -> None:
    arrays = Gaussian([0.0], variance=[1.0]).to_arrays()
    with pytest.raises(CalibrationInputError, match="not a 'samples' one"):
        SampleEnsemble.from_arrays(arrays)
    with pytest.raises(CalibrationInputError, match="expected one of"):
        PredictiveDistribution.from_arrays({"kind": np.asarray("histogram")})


def test_check_predictive() -> None:
    S = SampleEnsemble([[0.0, 1.0], [2.0, 3.0]])
    P = check_predictive(S, targets=[0.5, 2.5], sample_weight=[1.0, 3.0])
    assert isinstance(P, ProbabilisticPredictions) and P.distribution is S
    assert P.weighted_mean(np.array([1.0, 5.0])) == 4.0
    assert check_predictive(P) is P
    with pytest.raises(CalibrationInputError, match="already a ProbabilisticPredictions"):
        check_predictive(P, targets=[0.0, 0.0])
    with pytest.raises(CalibrationInputError, match="holds its own spread"):
        check_predictive(S, std=[1.0, 1.0], targets=[0.0, 0.0])
    with pytest.raises(CalibrationInputError, match="targets is required"):
        check_predictive(S)
    with pytest.raises(CalibrationInputError, match=r"targets must be finite; row 1 is nan"):
        check_predictive(S, targets=[0.0, np.nan])
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        check_predictive(S, targets=[0.0, 0.0], sample_weight=[1.0, -1.0])
    G = check_predictive(check_gaussian([0.0], variance=[2.0], targets=[1.0]))
    assert G.distribution.kind == "gaussian" and G.targets.tolist() == [1.0]


def test_torch_inputs() -> None:
    torch = pytest.importorskip("torch")
    S = SampleEnsemble(torch.tensor([[0.0, 1.0]], dtype=torch.float32))
    assert S.samples.dtype == np.float64
    Q = QuantileSet(torch.tensor([0.25, 0.75]), torch.tensor([[0.0, 1.0]]))
    assert Q.cdf(torch.tensor([0.5])).tolist() == [0.5]


def test_members_are_copied_not_shared() -> None:
    x = np.array([[0.0, 1.0]])
    S = SampleEnsemble(x)
    x[0, 0] = 5.0
    assert S.samples.tolist() == [[0.0, 1.0]]
    q = np.array([[0.0, 1.0]])
    Q = QuantileSet([0.1, 0.9], q)
    q[0, 0] = -3.0
    assert Q.quantiles.tolist() == [[0.0, 1.0]]


def test_crps_of_samples_and_quantile_sets_goes_through_the_score_functions() -> None:
    from calipers.regression import crps_ensemble_per_row, crps_quantiles_per_row

    # members 0 and 2, target 1: E|X - y| - E|X - X'| / 2 = 1 - 1 / 2
    S = SampleEnsemble([[0.0, 2.0], [1.0, 1.0]])
    assert S.crps([1.0, 1.0]).tolist() == [0.5, 0.0]
    np.testing.assert_array_equal(
        S.crps([1.0, 3.0], estimator="fair"),
        crps_ensemble_per_row(S.samples, np.array([1.0, 3.0]), estimator="fair"),
    )
    Q = QuantileSet([0.25, 0.5, 0.75], [[0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(
        Q.crps([1.5]), crps_quantiles_per_row(Q.levels, Q.quantiles, np.array([1.5]))
    )


def test_gaussian_keeps_its_own_arrays() -> None:
    m = np.array([0.0, 1.0])
    v = np.array([1.0, 2.0])
    G = Gaussian(m, variance=v)
    m[0] = 9.0
    v[0] = 9.0
    assert G.mean().tolist() == [0.0, 1.0] and G.variance().tolist() == [1.0, 2.0]
