"""Split conformal intervals and conformalized quantile regression (CQR).

* The conformal quantile by hand: the ``ceil((n + 1) level)``-th smallest score
  (Lei et al. 2018; Romano, Patterson & Candès 2019, eq. 8), the rank read from
  a decimal level, weights as repetitions, the whole line below
  ``level / (1 - level)`` rows (with a warning), normalized scores.
* The finite-sample guarantee on seeded splits: the coverage of each
  calibration split is computed exactly from the known noise law (so the mean
  over splits has only the split-to-split spread, whose law is known: a
  Beta(k, n + 1 - k) for continuous scores), and checked on held-out rows too;
  ``level <= mean coverage <= level + 1 / (n + 1)`` within 4 standard errors.
* The peers: crepes' ``ConformalRegressor`` (standard and normalized) and
  MAPIE's ``SplitConformalRegressor`` / ``ConformalizedQuantileRegressor``
  (``symmetric_correction=True``) with prefit models give the same intervals
  to 1e-12 on the same calibration rows; where crepes' float64 rank differs
  from the exact one, it differs by the documented formula.
* The recalibrator contract: parameters, clone, JSON files through the one
  registry, tensors back as tensors, messages naming the argument and row.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.special import ndtr

import calipers
from calipers.recalibration import NotFittedError
from calipers.recalibration.regression import (
    ConformalizedQuantileRegression,
    ForecastRecalibrator,
    SplitConformal,
)
from calipers.recalibration.regression.split_conformal import conformal_quantile, conformal_rank
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- by hand


def test_split_conformal_quantile_by_hand() -> None:
    # residuals 0.5, 1, 1.5, ..., 9.5 in shuffled order: 19 rows, level 0.9
    r = np.arange(1, 20) * 0.5
    order = np.random.default_rng(3).permutation(19)
    yhat = np.arange(19.0) - 9.0  # residuals exact in float64
    sign = np.where(np.arange(19) % 2 == 0, 1.0, -1.0)
    y = yhat + sign * r[order]
    sc = SplitConformal(level=0.9).fit(yhat, y)
    assert sc.scores_.tolist() == r.tolist()
    # k = ceil(20 * 0.9) = 18: the 18th smallest residual, 9.0
    assert sc.conformity_quantile() == 9.0
    lo, hi = sc.predict_interval([0.0, 10.0])
    assert lo.tolist() == [-9.0, 1.0] and hi.tolist() == [9.0, 19.0]
    # level 0.5: k = ceil(10) = 10 -> 5.0; level 0.51: ceil(10.2) = 11 -> 5.5
    assert sc.conformity_quantile(0.5) == 5.0
    assert sc.conformity_quantile(0.51) == 5.5
    # level 0.95: k = ceil(19) = 19 -> the largest, 9.5; 0.96: ceil(19.2) = 20 > 19 -> inf
    assert sc.conformity_quantile(0.95) == 9.5
    assert sc.conformity_quantile(0.96) == math.inf


def test_rank_is_read_from_the_decimal_level() -> None:
    # 25 * 0.28 = 7.000000000000001 in float64; the decimal product is 7
    assert 25 * 0.28 > 7
    assert conformal_rank(0.28, 25) == 7.0
    s = np.arange(1.0, 25.0)  # n = 24, n + 1 = 25
    assert conformal_quantile(s, np.ones(24), 0.28) == 7.0
    # every decimal level with 3 digits and n + 1 up to 300: the rank of exact arithmetic
    for n1 in range(2, 301):
        for d in range(1, 1000):
            exact = -(-d * n1 // 1000)  # ceil(d n1 / 1000) in integers
            assert math.ceil(conformal_rank(d / 1000, n1)) == exact, (n1, d)


def test_infinite_width_below_the_minimum_size_with_a_warning() -> None:
    # level 0.9 needs n >= 9: ceil(10 * 0.9) = 9 <= 9, but ceil(9 * 0.9) = 9 > 8
    y = np.arange(1.0, 10.0)
    sc = SplitConformal(level=0.9).fit(np.zeros(9), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = sc.predict_interval([1.0])
    assert (lo[0], hi[0]) == (-8.0, 10.0)
    sc8 = SplitConformal(level=0.9).fit(np.zeros(8), y[:8])
    with pytest.warns(
        RuntimeWarning, match=r"8 calibration rows are too few for level 0\.9.*at least 9"
    ):
        lo, hi = sc8.predict_interval([1.0, 2.0])
    assert np.all(lo == -np.inf) and np.all(hi == np.inf)


def test_weights_are_repetitions() -> None:
    rng = np.random.default_rng(1)
    yhat, y = rng.normal(size=30), rng.normal(size=30)
    w = rng.integers(0, 4, size=30)
    w[0] = 1
    rep = np.repeat(np.arange(30), w)
    for level in (0.5, 0.8, 0.9, 0.95, 0.99):
        a = SplitConformal(level=level).fit(yhat, y, sample_weight=w)
        b = SplitConformal(level=level).fit(yhat[rep], y[rep])
        assert a.conformity_quantile() == b.conformity_quantile()
        lo, hi = rng.normal(size=30), None
        c = ConformalizedQuantileRegression(level=level).fit(yhat - 1, yhat + 1, y, sample_weight=w)
        d = ConformalizedQuantileRegression(level=level).fit(yhat[rep] - 1, yhat[rep] + 1, y[rep])
        assert c.correction() == d.correction()
        del lo, hi
    # zero weights drop rows
    keep = w > 0
    a = SplitConformal().fit(yhat, y, sample_weight=keep.astype(float))
    b = SplitConformal().fit(yhat[keep], y[keep])
    assert a.conformity_quantile() == b.conformity_quantile()


def test_normalized_scores() -> None:
    yhat = np.zeros(19)
    s = np.linspace(0.5, 2.0, 19)
    z = np.arange(1.0, 20.0)[::-1]  # standardized residuals 19 .. 1
    y = yhat + z * s
    sc = SplitConformal(level=0.9).fit(yhat, y, std=s)
    assert sc.normalized_ is True
    np.testing.assert_allclose(sc.scores_, np.arange(1.0, 20.0), rtol=1e-15)
    d = sc.conformity_quantile()  # the 18th smallest
    assert d == pytest.approx(18.0, rel=1e-15)
    lo, hi = sc.predict_interval([1.0, 2.0], std=[0.5, 3.0])
    np.testing.assert_allclose(lo, [1.0 - 0.5 * d, 2.0 - 3.0 * d], rtol=1e-15)
    np.testing.assert_allclose(hi, [1.0 + 0.5 * d, 2.0 + 3.0 * d], rtol=1e-15)
    with pytest.raises(CalibrationInputError, match="fitted with std= .* need std= for the new"):
        sc.predict_interval([1.0])
    with pytest.raises(CalibrationInputError, match="the fit had no std="):
        SplitConformal().fit(yhat, y).predict_interval([1.0], std=[1.0])
    with pytest.raises(CalibrationInputError, match=r"std must be > 0 \(a spread\); row 2 is 0\.0"):
        SplitConformal().fit(yhat[:3], y[:3], std=[1.0, 1.0, 0.0])


def test_cqr_by_hand() -> None:
    # lower -1, upper 1 on every row; targets give scores max(-1 - y, y - 1)
    y = np.array([0.0, 2.0, -3.0, 0.5, 1.5, -1.25, 4.0, 0.0, 0.25])  # n = 9
    e = np.maximum(-1 - y, y - 1)  # -1, 1, 2, -0.5, 0.5, 0.25, 3, -1, -0.75
    cqr = ConformalizedQuantileRegression(level=0.8).fit(-np.ones(9), np.ones(9), y)
    assert cqr.scores_.tolist() == sorted(e.tolist())
    # k = ceil(10 * 0.8) = 8: sorted e = [-1, -1, -0.75, -0.5, 0.25, 0.5, 1, 2, 3] -> 2
    assert cqr.correction() == 2.0
    lo, hi = cqr.predict_interval([0.0, -1.0], [1.0, 5.0])
    assert lo.tolist() == [-2.0, -3.0] and hi.tolist() == [3.0, 7.0]
    # a quantile model too wide: the correction is negative and narrows the intervals
    wide = ConformalizedQuantileRegression(level=0.5).fit(-10 * np.ones(9), 10 * np.ones(9), y)
    assert wide.correction() < 0
    # k = ceil(5) = 5: sorted max(-10 - y, y - 10) -> the 5th smallest
    assert wide.correction() == sorted(np.maximum(-10 - y, y - 10))[4]


# ----------------------------------------------------------------------------- the guarantee


def _beta_mean_sd(k: int, n: int) -> tuple[float, float]:
    """Mean and sd of Beta(k, n + 1 - k): the coverage of one calibration split."""
    a, b = k, n + 1 - k
    return a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


@pytest.mark.parametrize("n", [19, 50, 200])
@pytest.mark.parametrize("level", [0.8, 0.9])
def test_split_conformal_coverage_over_seeded_splits(n: int, level: float) -> None:
    """Coverage >= level, and <= level + 1 / (n + 1), over 1000 seeded calibration splits.

    The model yhat = 0.5 x with y = x + N(0, (0.5 + |x|)^2) is biased and
    heteroscedastic; given a calibration split, the coverage of the interval
    yhat +- d is exactly mean_x [Phi((0.5 x + d) / s(x)) - Phi((0.5 x - d) / s(x))]
    over a fixed grid of test x (held-out rows of known law).
    """
    reps = 1000
    rng = np.random.default_rng(1000 * n + int(100 * level))
    xt = np.linspace(-2, 2, 401)
    st = 0.5 + np.abs(xt)
    cover = np.empty(reps)
    held = np.empty(reps)
    for r in range(reps):
        x = rng.uniform(-2, 2, n)
        y = x + (0.5 + np.abs(x)) * rng.standard_normal(n)
        d = SplitConformal(level=level).fit(0.5 * x, y).conformity_quantile()
        cover[r] = np.mean(ndtr((0.5 * xt + d) / st) - ndtr((0.5 * xt - d) / st))
        # held-out rows drawn afresh: one new row per split
        x1 = rng.uniform(-2, 2)
        y1 = x1 + (0.5 + abs(x1)) * rng.standard_normal()
        held[r] = abs(y1 - 0.5 * x1) <= d
    k = math.ceil((n + 1) * level)
    mean, sd = _beta_mean_sd(k, n)
    se = sd / math.sqrt(reps)
    assert cover.mean() == pytest.approx(mean, abs=4 * se)  # the exact finite-sample law
    assert level - 4 * se <= cover.mean() <= level + 1 / (n + 1) + 4 * se
    se_held = math.sqrt(mean * (1 - mean) / reps)
    assert level - 4 * se_held <= held.mean() <= level + 1 / (n + 1) + 4 * se_held


@pytest.mark.parametrize("n", [19, 100])
def test_cqr_coverage_over_seeded_splits(n: int) -> None:
    """CQR's coverage >= level over 1000 seeded splits, with a misspecified quantile model.

    y | x ~ N(sin(3 x), (0.1 + x)^2) on x ~ U(0, 1); the quantile model predicts
    sin(3 x) -+ 1.2 (0.1 + x) + 0.1 x (too narrow, shifted). Given a calibration
    split, the coverage of [q_lo - Q, q_hi + Q] is computed exactly on a grid of x.
    """
    level = 0.9
    reps = 1000
    rng = np.random.default_rng(7 + n)

    def pair(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, s = np.sin(3 * x) + 0.1 * x, 1.2 * (0.1 + x)
        return m - s, m + s

    xt = (np.arange(1000) + 0.5) / 1000
    lo_t, hi_t = pair(xt)
    mt, st = np.sin(3 * xt), 0.1 + xt
    cover = np.empty(reps)
    for r in range(reps):
        x = rng.uniform(0, 1, n)
        y = np.sin(3 * x) + (0.1 + x) * rng.standard_normal(n)
        q = ConformalizedQuantileRegression(level=level).fit(*pair(x), y).correction()
        cover[r] = np.mean(ndtr((hi_t + q - mt) / st) - ndtr((lo_t - q - mt) / st))
    k = math.ceil((n + 1) * level)
    mean, sd = _beta_mean_sd(k, n)
    se = sd / math.sqrt(reps)
    assert cover.mean() == pytest.approx(mean, abs=4 * se)
    assert level - 4 * se <= cover.mean() <= level + 1 / (n + 1) + 4 * se


def test_coverage_with_ties_stays_above_the_level() -> None:
    """Discrete targets (Poisson counts, integer forecasts): the scores tie, the upper
    bound level + 1/(n + 1) no longer holds, the lower bound does (Lei et al. 2018, Thm. 2.2).

    Given a split, the coverage of the integer forecast f +- d is P(|Y - f| <= d) under
    Poisson(4), computed exactly; the mean over 1000 splits must reach the level."""
    from scipy.stats import poisson

    level, n, reps = 0.9, 30, 1000
    rng = np.random.default_rng(21)
    f = 4.0
    d = np.empty(reps)
    for r in range(reps):
        y = rng.poisson(4.0, n).astype(float)
        d[r] = SplitConformal(level=level).fit(np.full(n, f), y).conformity_quantile()
    cover = poisson.cdf(np.floor(f + d), 4.0) - poisson.cdf(np.ceil(f - d) - 1, 4.0)
    se = cover.std(ddof=1) / math.sqrt(reps)
    assert cover.mean() >= level - 4 * se
    assert cover.mean() > level + 1 / (n + 1)  # with ties the coverage exceeds the upper bound


def test_cqr_whole_line_below_the_minimum_size() -> None:
    cqr = ConformalizedQuantileRegression(level=0.9).fit(-np.ones(8), np.ones(8), np.zeros(8))
    assert cqr.correction() == math.inf
    with pytest.warns(RuntimeWarning, match="ConformalizedQuantileRegression: 8 calibration rows"):
        lo, hi = cqr.predict_interval([0.0], [1.0])
    assert (lo[0], hi[0]) == (-np.inf, np.inf)
    # weights: a total weight of 8.5 gives (W + 1) * 0.9 = 8.55 > 8.5, still the whole line;
    # 9 gives 9.0 <= 9
    w = np.full(8, 8.5 / 8)
    rc = ConformalizedQuantileRegression(level=0.9).fit(
        -np.ones(8), np.ones(8), np.zeros(8), sample_weight=w
    )
    with pytest.warns(
        RuntimeWarning, match="a total calibration weight of 8.5 is too small for level 0.9"
    ):
        rc.predict_interval([0.0], [1.0])
    w = np.full(8, 9.0 / 8)
    rc = ConformalizedQuantileRegression(level=0.9).fit(
        -np.ones(8), np.ones(8), np.zeros(8), sample_weight=w
    )
    assert rc.correction() == -1.0


def test_cqr_is_shorter_than_split_conformal_on_heteroscedastic_data() -> None:
    # the claim of Romano et al. 2019 (§6): same coverage, shorter on average
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 1, 6000)
    y = (0.05 + x**2) * rng.standard_normal(6000)
    z = 1.6448536269514722  # the true 5 % and 95 % quantiles: +-z (0.05 + x^2)
    lo, hi = -z * (0.05 + x**2), z * (0.05 + x**2)
    cal, test = slice(0, 3000), slice(3000, None)
    cqr = ConformalizedQuantileRegression(level=0.9).fit(lo[cal], hi[cal], y[cal])
    a, b = cqr.predict_interval(lo[test], hi[test])
    sc = SplitConformal(level=0.9).fit(np.zeros(3000), y[cal])
    c, d = sc.predict_interval(np.zeros(3000))
    cover_cqr = np.mean((a <= y[test]) & (y[test] <= b))
    cover_sc = np.mean((c <= y[test]) & (y[test] <= d))
    assert abs(cover_cqr - 0.9) < 0.02 and abs(cover_sc - 0.9) < 0.02
    assert np.mean(b - a) < 0.8 * np.mean(d - c)


# ----------------------------------------------------------------------------- peers


def _column_model(j: int) -> Any:
    sklearn_base = pytest.importorskip("sklearn.base")

    class Column(sklearn_base.RegressorMixin, sklearn_base.BaseEstimator):
        """A prefit 'model' whose prediction is column j of X (the given forecasts)."""

        def __init__(self, j: int = 0) -> None:
            self.j = j

        def fit(self, X: Any, y: Any = None) -> Any:
            self.n_features_in_ = np.asarray(X).shape[1]
            return self

        def predict(self, X: Any) -> np.ndarray:
            return np.asarray(X)[:, self.j]

    return Column(j)


_PEER_CASES = [(n, level) for n in (20, 57, 100, 333, 1000) for level in (0.5, 0.8, 0.9, 0.95)]


def _crepes_rank_agrees(n: int, level: float) -> bool:
    return n + 1 - int((1 - level) * (n + 1)) == math.ceil(conformal_rank(level, n + 1))


@pytest.mark.parametrize(("n", "level"), _PEER_CASES)
def test_split_conformal_equals_crepes(n: int, level: float) -> None:
    crepes = pytest.importorskip("crepes")
    rng = np.random.default_rng(n)
    yhat, y = rng.normal(size=n), rng.normal(size=n) * 2
    s = rng.uniform(0.5, 2.0, n)
    new, new_s = rng.normal(size=40), rng.uniform(0.5, 2.0, 40)
    ours = SplitConformal(level=level).fit(yhat, y)
    ours_n = SplitConformal(level=level).fit(yhat, y, std=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = crepes.ConformalRegressor().fit(y - yhat).predict_int(new, confidence=level)
        theirs_n = (
            crepes.ConformalRegressor()
            .fit(y - yhat, sigmas=s)
            .predict_int(new, sigmas=new_s, confidence=level)
        )
    if _crepes_rank_agrees(n, level):
        np.testing.assert_allclose(np.column_stack(ours.predict_interval(new)), theirs, atol=1e-12)
        np.testing.assert_allclose(
            np.column_stack(ours_n.predict_interval(new, std=new_s)), theirs_n, atol=1e-12
        )
    else:  # crepes' float64 rank: the int((1 - level)(n + 1))-th largest score
        j = int((1 - level) * (n + 1))
        d = np.sort(np.abs(y - yhat))[::-1][j - 1]
        np.testing.assert_allclose(theirs, np.column_stack([new - d, new + d]), atol=1e-12)


def test_crepes_rank_differs_where_documented() -> None:
    # confidence 0.9, n = 99: crepes takes int(0.09999999999999998 * 100) = 9 -> the 9th
    # largest = 91st smallest; the conformal rank is ceil(100 * 0.9) = 90
    assert int((1 - 0.9) * 100) == 9
    assert not _crepes_rank_agrees(99, 0.9)
    crepes = pytest.importorskip("crepes")
    y = np.arange(1.0, 100.0)
    ours = SplitConformal(level=0.9).fit(np.zeros(99), y)
    assert ours.conformity_quantile() == 90.0
    theirs = crepes.ConformalRegressor().fit(y).predict_int(np.zeros(1), confidence=0.9)
    assert theirs[0, 1] == 91.0


@pytest.mark.parametrize(("n", "level"), _PEER_CASES)
def test_split_conformal_equals_mapie(n: int, level: float) -> None:
    mapie_regression = pytest.importorskip("mapie.regression")
    rng = np.random.default_rng(n + 1)
    X = rng.normal(size=(n, 2))
    y = X[:, 0] + rng.normal(size=n)
    Xt = rng.normal(size=(30, 2))
    ours = SplitConformal(level=level).fit(X[:, 0], y)
    m = mapie_regression.SplitConformalRegressor(
        estimator=_column_model(0).fit(X, y), confidence_level=level, prefit=True
    ).conformalize(X, y)
    _, iv = m.predict_interval(Xt)
    np.testing.assert_allclose(
        np.column_stack(ours.predict_interval(Xt[:, 0])), iv[:, :, 0], atol=1e-12
    )


@pytest.mark.parametrize(("n", "level"), _PEER_CASES)
def test_cqr_equals_mapie_symmetric_correction(n: int, level: float) -> None:
    mapie_regression = pytest.importorskip("mapie.regression")
    rng = np.random.default_rng(n + 2)
    m = rng.normal(size=n)
    X = np.column_stack([m - rng.uniform(0.2, 1.5, n), m + rng.uniform(0.2, 1.5, n), m])
    y = m + rng.normal(size=n)
    mt = rng.normal(size=30)
    Xt = np.column_stack([mt - 1.0, mt + 0.5, mt])
    ours = ConformalizedQuantileRegression(level=level).fit(X[:, 0], X[:, 1], y)
    models = [_column_model(j).fit(X, y) for j in range(3)]
    theirs = mapie_regression.ConformalizedQuantileRegressor(
        estimator=models, confidence_level=level, prefit=True
    ).conformalize(X, y)
    _, iv = theirs.predict_interval(Xt, symmetric_correction=True)
    got = np.column_stack(ours.predict_interval(Xt[:, 0], Xt[:, 1]))
    np.testing.assert_allclose(got, iv[:, :, 0], atol=1e-12)


# ----------------------------------------------------------------------------- contract


def _fitted() -> list[ForecastRecalibrator]:
    rng = np.random.default_rng(5)
    f, y, s = rng.normal(size=40), rng.normal(size=40), rng.uniform(0.5, 2, 40)
    w = rng.uniform(0, 2, 40)
    return [
        SplitConformal(level=0.8).fit(f, y),
        SplitConformal(level=0.95).fit(f, y, std=s, sample_weight=w),
        ConformalizedQuantileRegression(level=0.7).fit(f - 1, f + 1, y, sample_weight=w),
    ]


@pytest.mark.parametrize("i", range(3))
def test_json_round_trip_through_the_one_registry(i: int, tmp_path: Any) -> None:
    rc = _fitted()[i]
    text = rc.to_json()
    for back in (calipers.load_recalibrator(text), type(rc).from_json(text)):
        assert type(back) is type(rc)
        assert back.get_params() == rc.get_params()
        for key in rc.schema.state:
            np.testing.assert_array_equal(getattr(back, key), getattr(rc, key))
    path = tmp_path / "rc.json"
    rc.save(path)
    back = type(rc).load(path)
    f = np.linspace(-1, 1, 5)
    if isinstance(rc, SplitConformal):
        kw = {"std": np.ones(5)} if rc.normalized_ else {}
        np.testing.assert_array_equal(back.predict_interval(f, **kw), rc.predict_interval(f, **kw))
    else:
        np.testing.assert_array_equal(
            back.predict_interval(f - 1, f + 1), rc.predict_interval(f - 1, f + 1)
        )
    unfitted = type(rc)(level=0.6)
    assert json.loads(unfitted.to_json())["state"] == {}
    assert not hasattr(calipers.load_recalibrator(unfitted.to_json()), "scores_")


def test_files_are_checked() -> None:
    rc = _fitted()[0]
    doc = json.loads(rc.to_json())
    bad = json.loads(json.dumps(doc))
    bad["state"]["scores_"]["ndarray"][0] = 99.0
    with pytest.raises(
        CalibrationInputError, match=r"SplitConformal file: field 'scores_' must be non-decreasing"
    ):
        calipers.load_recalibrator(json.dumps(bad))
    bad = json.loads(json.dumps(doc))
    bad["state"]["weights_"]["ndarray"][3] = -1.0
    with pytest.raises(
        CalibrationInputError, match=r"field 'weights_' must be numbers >= 0; entry \(3,\)"
    ):
        calipers.load_recalibrator(json.dumps(bad))
    bad = json.loads(json.dumps(doc))
    bad["state"]["weights_"] = {"ndarray": [1.0], "dtype": "float64", "shape": [1]}
    with pytest.raises(
        CalibrationInputError, match=r"field 'weights_' must be an array of shape \(40,\)"
    ):
        calipers.load_recalibrator(json.dumps(bad))
    bad = json.loads(json.dumps(doc))
    bad["state"]["weights_"]["ndarray"] = [0.0] * 40
    with pytest.raises(CalibrationInputError, match="positive total"):
        calipers.load_recalibrator(json.dumps(bad))
    bad = json.loads(json.dumps(doc))
    del bad["state"]["normalized_"]
    with pytest.raises(CalibrationInputError, match="field 'normalized_' is missing"):
        calipers.load_recalibrator(json.dumps(bad))
    with pytest.raises(
        CalibrationInputError, match="holds a SplitConformal, not a ConformalizedQuantileRegression"
    ):
        ConformalizedQuantileRegression.from_json(rc.to_json())
    with pytest.raises(CalibrationInputError, match="not a SplitConformal"):
        SplitConformal.from_json(calipers.TemperatureScaling().to_json())


def test_parameters_clone_and_repr() -> None:
    sc = SplitConformal(level=0.8)
    assert sc.get_params() == {"level": 0.8}
    assert repr(sc.set_params(level=0.7)) == "SplitConformal(level=0.7)"
    with pytest.raises(CalibrationInputError, match="has no parameter 'alpha'"):
        sc.set_params(alpha=0.1)
    base = pytest.importorskip("sklearn.base")
    fitted = _fitted()[2]
    c = base.clone(fitted)
    assert (
        type(c) is ConformalizedQuantileRegression and c.level == 0.7 and not hasattr(c, "scores_")
    )
    with pytest.raises(
        CalibrationInputError,
        match=r"parameter 'level' must be a finite number in \(0, 1\); got 1\.5",
    ):
        SplitConformal(level=1.5).fit([0.0], [1.0])
    with pytest.raises(
        CalibrationInputError,
        match=r"level' must be a finite number in \(0, 1\); got true \(a boolean\)",
    ):
        ConformalizedQuantileRegression(level=True).fit([0.0], [1.0], [0.5])


def test_level_changes() -> None:
    rng = np.random.default_rng(2)
    f, y = rng.normal(size=50), rng.normal(size=50)
    sc = SplitConformal(level=0.9).fit(f, y)
    sc.set_params(level=0.5)  # the scores do not depend on the level
    assert sc.conformity_quantile() == SplitConformal(level=0.5).fit(f, y).conformity_quantile()
    cqr = ConformalizedQuantileRegression(level=0.9).fit(f - 1, f + 1, y)
    cqr.set_params(level=0.8)
    with pytest.raises(
        CalibrationInputError, match=r"computed at level 0\.9, but level is now 0\.8; fit again"
    ):
        cqr.predict_interval(f - 1, f + 1)


def test_not_fitted_and_failed_refit() -> None:
    with pytest.raises(
        NotFittedError, match=r"SplitConformal is not fitted yet; call fit\(forecasts, targets\)"
    ):
        SplitConformal().predict_interval([0.0])
    with pytest.raises(NotFittedError, match="call fit\\(lower, upper, targets\\)"):
        ConformalizedQuantileRegression().correction()
    sc = SplitConformal().fit([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(CalibrationInputError):
        sc.fit([0.0, np.nan], [1.0, 2.0])
    assert not hasattr(sc, "scores_")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: SplitConformal().fit([0.0, 1.0], [1.0]), "targets has 1 rows but forecasts has 2"),
        (
            lambda: SplitConformal().fit([0.0, np.inf], [1.0, 2.0]),
            r"forecasts must be finite; row 1 is inf",
        ),
        (
            lambda: SplitConformal().fit([[0.0]], [1.0]),
            r"forecasts must be 1-D .*got shape \(1, 1\)",
        ),
        (lambda: SplitConformal().fit(["a"], [1.0]), "forecasts must hold real numbers"),
        (lambda: SplitConformal().fit([], []), "forecasts is empty"),
        (
            lambda: SplitConformal().fit([0.0], [1.0], sample_weight=[-1.0]),
            "sample_weight must be non-negative",
        ),
        (
            lambda: SplitConformal().fit([0.0, 1.0], [1.0, 2.0], sample_weight=[1.0]),
            "sample_weight has 1 rows but forecasts has 2",
        ),
        (
            lambda: ConformalizedQuantileRegression().fit([0.0, 1.0], [1.0, 0.5], [0.0, 0.0]),
            r"upper at level 0\.95 lies below the lower quantile at row 1 \(0\.5 < 1\.0\)",
        ),
        (lambda: ConformalizedQuantileRegression().fit([0.0], [1.0]), "needs targets"),
        (
            lambda: ConformalizedQuantileRegression().fit([0.0], targets=[1.0]),
            "needs the upper quantiles too",
        ),
        (
            lambda: ConformalizedQuantileRegression().fit([0.0], [1.0], [np.nan]),
            "targets must be finite; row 0 is nan",
        ),
    ],
)
def test_messages_name_the_argument_and_row(call: Any, message: str) -> None:
    with pytest.raises(CalibrationInputError, match=message):
        call()


def test_tensors_in_tensors_out() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    f, y = rng.normal(size=30), rng.normal(size=30)
    sc = SplitConformal().fit(torch.tensor(f), torch.tensor(y))
    assert sc.conformity_quantile() == SplitConformal().fit(f, y).conformity_quantile()
    lo, hi = sc.predict_interval(torch.tensor(f[:5], dtype=torch.float32))
    assert isinstance(lo, torch.Tensor) and lo.dtype == torch.float32 and hi.shape == (5,)
    ref = SplitConformal().fit(f, y).predict_interval(f[:5].astype(np.float32))
    np.testing.assert_allclose(lo.numpy(), ref[0], rtol=1e-6)
    cqr = ConformalizedQuantileRegression().fit(
        torch.tensor(f - 1), torch.tensor(f + 1), torch.tensor(y)
    )
    a, b = cqr.predict_interval(torch.tensor(f - 1), torch.tensor(f + 1))
    assert isinstance(a, torch.Tensor) and a.dtype == torch.float64
    np.testing.assert_array_equal(a.numpy(), cqr.predict_interval(f - 1, f + 1)[0])
