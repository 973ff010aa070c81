"""cp.confidence_interval / cp.paired_confidence_interval and the resampling engine.

Oracles: scipy.stats.bootstrap on the same resamples (BCa, basic, percentile), the
metric on resampled *copies* of the rows (for the weight formulation), closed forms
(the acceleration of a mean; a population Brier score and ECE), and binomial bands
for coverage over seeded replications.
"""

from __future__ import annotations

import doctest
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import calipers as cp
from calipers.inference import _resampling as rs
from calipers.validation import CalibrationInputError


def _multi(n: int = 400, k: int = 4, seed: int = 0, scale: float = 2.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * scale
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1).clip(0, k - 1)
    return z, p, y


def _binary(n: int = 400, seed: int = 0, power: float = 2.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p**power).astype(np.int64)


# --------------------------------------------------------------------- the oracle: scipy


@pytest.mark.parametrize("method", ["bca", "basic", "percentile"])
def test_equals_scipy_bootstrap_on_the_same_resamples(method: str) -> None:
    # n <= jackknife_groups: the delete-one jackknife, as scipy; one batch of indices
    # rng.integers(0, n, (B, n)), as scipy draws them: the intervals must agree
    p, y = _binary(n=80, seed=3, power=1.5)
    terms = (p - y) ** 2  # the binary Brier score is the mean of these
    ours = cp.confidence_interval(cp.brier, p, y, method=method, n_resamples=999, seed=5)
    ref = stats.bootstrap(
        (terms,),
        np.mean,
        method={"bca": "BCa"}.get(method, method),
        n_resamples=999,
        rng=np.random.default_rng(5),
    )
    assert ours.estimate == pytest.approx(terms.mean(), rel=1e-12)
    assert ours.low == pytest.approx(ref.confidence_interval.low, rel=1e-9)
    assert ours.high == pytest.approx(ref.confidence_interval.high, rel=1e-9)
    assert ours.standard_error == pytest.approx(ref.standard_error, rel=1e-9)


def test_paired_difference_equals_scipy_on_per_row_differences() -> None:
    z, p, y = _multi(n=90, seed=4)
    za, zb = 1.7 * z, z
    d = cp.paired_confidence_interval(
        cp.nll, za, zb, y, logits=True, method="bca", n_resamples=500, seed=2
    )
    la = np.log(np.exp(za).sum(1)) - za[np.arange(90), y]
    lb = np.log(np.exp(zb).sum(1)) - zb[np.arange(90), y]
    ref = stats.bootstrap(
        (lb - la,), np.mean, method="BCa", n_resamples=500, rng=np.random.default_rng(2)
    )
    assert d.estimate == pytest.approx(cp.nll(zb, y, logits=True) - cp.nll(za, y, logits=True))
    assert d.low == pytest.approx(ref.confidence_interval.low, rel=1e-9)
    assert d.high == pytest.approx(ref.confidence_interval.high, rel=1e-9)


# --------------------------------------------------------------------- closed forms


def test_grouped_jackknife_acceleration_of_a_mean() -> None:
    # delete-one jackknife of a mean: a = sum (x - mean)^3 / (6 (sum (x - mean)^2)^1.5)
    x = np.random.default_rng(1).exponential(size=300)
    c = x - x.mean()
    exact = float(np.sum(c**3) / (6 * np.sum(c**2) ** 1.5))
    assert exact > 0.02  # skewed data: the comparisons below are not vacuous
    ev = rs.mean_of_terms(x)
    one = rs.evaluate(ev, rs.jackknife_weights(np.arange(300)), None)
    assert rs.acceleration(one) == pytest.approx(exact, rel=1e-9)
    groups = [rs.jackknife_groups(300, 100, np.random.default_rng(s)) for s in range(40)]
    assert np.bincount(groups[0]).tolist() == [3] * 100
    grouped = [rs.acceleration(rs.evaluate(ev, rs.jackknife_weights(g), None)) for g in groups]
    # the grouped estimate scatters by about sqrt(6) / (6 G) = 0.004 (G = 100 groups)
    assert abs(grouped[0] - exact) < 0.015
    assert abs(np.mean(grouped) - exact) < 0.004


def _coverage(
    metric, truth: float, draw, method: str, reps: int = 200, resamples: int = 499
) -> float:
    hits = 0
    for r in range(reps):
        p, y = draw(r)
        ci = cp.confidence_interval(metric, p, y, method=method, n_resamples=resamples, seed=r)
        hits += ci.low <= truth <= ci.high
    return hits / reps


# 200 replications: a 95 % interval's hit count is Binomial(200, 0.95); 3 standard
# deviations of the fraction are 0.046, so a correct interval lands in [0.904, 0.996]
BAND = (0.95 - 3 * math.sqrt(0.95 * 0.05 / 200), 0.95 + 3 * math.sqrt(0.95 * 0.05 / 200))


@pytest.mark.parametrize("method", ["bca", "basic"])
def test_coverage_of_a_mean_within_a_binomial_band(method: str) -> None:
    # calibrated p ~ U(0, 1), y ~ Bernoulli(p): E[(p - y)^2] = E[p (1 - p)] = 1/6
    def draw(r: int):
        rng = np.random.default_rng([7, r])
        p = rng.uniform(size=200)
        return p, (rng.uniform(size=200) < p).astype(int)

    cov = _coverage(cp.brier, 1 / 6, draw, method)
    assert BAND[0] <= cov <= BAND[1], cov


def test_coverage_of_the_ece_of_a_clearly_miscalibrated_predictor() -> None:
    # P(y = 1 | p) = p^2 with p ~ U(0, 1): p^2 - p < 0 everywhere, so the population ECE
    # of any binning equals the L1 error, integral of p - p^2 = 1/6
    def draw(r: int):
        return _binary(n=1000, seed=10_000 + r)

    cov = _coverage(cp.ece, 1 / 6, draw, "basic", resamples=299)
    assert BAND[0] <= cov <= BAND[1], cov


def test_percentile_interval_of_a_near_zero_ece_misses_what_basic_catches() -> None:
    # a calibrated predictor (true ECE 0): the binned ECE is biased upward, the
    # percentile interval sits above the estimate and never covers 0; the basic one
    # moves down by the bootstrap's bias estimate (docs/intervals.md)
    p, y = _binary(n=500, seed=3, power=1.0)
    pct = cp.confidence_interval(cp.ece, p, y, method="percentile", n_resamples=999)
    basic = cp.confidence_interval(cp.ece, p, y, method="basic", n_resamples=999)
    assert pct.bootstrap_bias > 0 and pct.low > 0
    assert basic.low < pct.low and basic.high < pct.high
    assert basic.high - basic.low == pytest.approx(pct.high - pct.low)


# --------------------------------------------------------------------- the weight formulation


@pytest.mark.parametrize(
    "metric, kw",
    [
        (cp.accuracy, {}),
        (cp.nll, {}),
        (cp.nll, {"clip": 1e-3}),
        (cp.brier, {}),
        (cp.brier, {"reduction": "mean"}),
        (cp.ece, {}),
        (cp.ece, {"n_bins": 7, "edge_rule": "left"}),
        (cp.ace, {}),
        (cp.tace, {"threshold": 0.05}),
        (cp.smece, {}),
        (cp.smece, {"bandwidth": 0.05}),
    ],
)
@pytest.mark.parametrize("kind", ["multi", "binary", "logits"])
def test_fast_evaluators_equal_the_metric_on_resampled_copies(metric, kw, kind) -> None:
    if kind == "binary":
        p, y = _binary(n=300, seed=1, power=1.5)
        P = cp.check_predictions(p, y)
    else:
        z, p, y = _multi(n=300, seed=1)
        P = (
            cp.check_predictions(z, y, logits=True)
            if kind == "logits"
            else cp.check_predictions(p, y)
        )
    ev, how = rs.evaluator(metric, P, kw)
    assert how == "fast"  # the vectorised path is used for the calipers metrics
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 300, (4, 300))
    W = np.stack([np.bincount(i, minlength=300) for i in idx]).astype(float)
    got = ev(W)
    for j, i in enumerate(idx):
        Pi = cp.check_predictions(P.logits[i], y[i], logits=True) if kind == "logits" else None
        want = metric(Pi, None, **kw) if Pi is not None else metric(p[i], y[i], **kw)
        assert got[j] == pytest.approx(float(want), rel=1e-9, abs=1e-12)


def test_an_unknown_metric_goes_the_generic_way_with_the_same_numbers() -> None:
    z, p, y = _multi(n=200, seed=2)
    wrapped = lambda P, _, **kw: cp.ece(P.probs, P.labels, sample_weight=P.sample_weight)  # noqa: E731
    a = cp.confidence_interval(wrapped, p, y, n_resamples=200, seed=4)
    b = cp.confidence_interval(cp.ece, p, y, n_resamples=200, seed=4)
    assert rs.evaluator(wrapped, cp.check_predictions(p, y), {})[1] == "generic"
    assert (a.estimate, a.low, a.high) == pytest.approx((b.estimate, b.low, b.high), rel=1e-12)


def test_sample_weights_ride_along() -> None:
    p, y = _binary(n=150, seed=2)
    w = np.random.default_rng(0).integers(1, 4, 150).astype(float)
    rep = np.repeat(np.arange(150), w.astype(int))
    ci = cp.confidence_interval(cp.ece, p, y, sample_weight=w, n_resamples=200)
    assert ci.estimate == pytest.approx(cp.ece(p[rep], y[rep]), rel=1e-12)


# --------------------------------------------------------------------- contract


def test_reproducible_and_described() -> None:
    p, y = _binary(n=500, seed=5)
    a = cp.confidence_interval(cp.ece, p, y, n_resamples=300)
    assert a == cp.confidence_interval(cp.ece, p, y, n_resamples=300)
    assert a != cp.confidence_interval(cp.ece, p, y, n_resamples=300, seed=1)
    assert (a.method, a.confidence_level, a.n_resamples) == ("basic", 0.95, 300)
    assert a.contains(a.low) and not a.contains(a.high + 1)
    assert repr(a).startswith(f"ConfidenceInterval(estimate={a.estimate:.4g}, 95% basic [")
    narrow = cp.confidence_interval(cp.ece, p, y, n_resamples=300, confidence_level=0.5)
    assert a.low < narrow.low < narrow.high < a.high


def test_bca_endpoints_are_bootstrap_quantiles() -> None:
    # BCa adjusts the levels, not the values: its endpoints lie in the range of the
    # bootstrap distribution (range-preserving), unlike the basic interval's
    z, p, y = _multi(n=300, seed=6)
    est, boot, jack = __import__(
        "calipers.inference._confidence_interval", fromlist=["_values"]
    )._values(cp.ace, [cp.check_predictions(p, y)], {}, 400, 100, "bca", 0)
    parts = rs.interval(est[0], boot[0], jack[0], "bca", 0.95)
    assert boot[0].min() <= parts.low <= parts.high <= boot[0].max()


def test_identical_predictions_give_a_zero_difference() -> None:
    z, p, y = _multi(n=200, seed=7)
    for method in ("bca", "basic", "percentile"):
        d = cp.paired_confidence_interval(cp.ece, p, p, y, method=method, n_resamples=100)
        assert (d.estimate, d.low, d.high) == (0.0, 0.0, 0.0)


def test_infinite_and_undefined_values_are_refused_clearly() -> None:
    p = np.array([[1.0, 0.0], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]] * 10)
    y = np.array([1, 1, 0, 1] * 10)
    with pytest.raises(CalibrationInputError, match=r"inf on the data itself.*clip=1e-15"):
        cp.confidence_interval(cp.nll, p, y, n_resamples=50)
    ok = cp.confidence_interval(cp.nll, p, y, n_resamples=50, clip=1e-15, method="basic")
    assert math.isfinite(ok.low) and math.isfinite(ok.high)

    def picky(P, _, **kw):  # undefined when row 0 is absent
        return float("nan") if P.sample_weight is not None and P.sample_weight[0] == 0 else 0.5

    with pytest.raises(CalibrationInputError, match=r"NaN \(undefined\) on \d+ of 50"):
        cp.confidence_interval(picky, p, y, n_resamples=50, method="percentile")


def test_bca_with_every_resample_on_one_side_says_so() -> None:
    def above(P, _, **kw):  # the estimate is below every resample's value
        return 0.0 if P.sample_weight is None or np.all(P.sample_weight == 1) else 1.0

    p, y = _binary(n=50)
    with pytest.raises(CalibrationInputError, match="lies above the estimate.*method='basic'"):
        cp.confidence_interval(above, p, y, n_resamples=50, method="bca")
    assert cp.confidence_interval(above, p, y, n_resamples=50, method="basic").high == -1.0


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"method": "student"}, "method must be one of"),
        ({"confidence_level": 1.5}, "confidence_level must be in"),
        ({"confidence_level": True}, "confidence_level must be in"),
        ({"n_resamples": 1}, "n_resamples must be an integer >= 2"),
        ({"n_resamples": 10.5}, "n_resamples must be an integer >= 2"),
        ({"jackknife_groups": 0}, "jackknife_groups must be an integer >= 2"),
    ],
)
def test_bad_options(kw, msg) -> None:
    p, y = _binary(n=20)
    with pytest.raises(CalibrationInputError, match=msg):
        cp.confidence_interval(cp.ece, p, y, **kw)


def test_bad_input() -> None:
    p, y = _binary(n=20)
    with pytest.raises(CalibrationInputError, match="labels"):
        cp.confidence_interval(cp.ece, p, y[:10])
    with pytest.raises(CalibrationInputError, match="labels has 20 entries but probs has 10"):
        cp.paired_confidence_interval(cp.ece, p, p[:10], y)
    with pytest.raises(CalibrationInputError, match="must return a number"):
        cp.confidence_interval(lambda P, _: "x", p, y)
    P = cp.check_predictions(p, y)
    with pytest.raises(CalibrationInputError, match="already a calipers.Predictions"):
        cp.confidence_interval(cp.ece, P, None, sample_weight=np.ones(20))
    assert cp.confidence_interval(cp.ece, P, None, n_resamples=50) == cp.confidence_interval(
        cp.ece, p, y, n_resamples=50
    )


def test_torch_input_gives_the_numpy_interval() -> None:
    torch = pytest.importorskip("torch")
    p, y = _binary(n=100)
    a = cp.confidence_interval(cp.ece, torch.as_tensor(p), torch.as_tensor(y), n_resamples=100)
    assert a == cp.confidence_interval(cp.ece, p, y, n_resamples=100)


def test_docs_page_examples_run() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "intervals.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
