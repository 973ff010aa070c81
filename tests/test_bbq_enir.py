"""BBQ (Naeini, Cooper & Hauskrecht 2015) and ENIR (Naeini & Cooper 2016).

Checks without netcal: the BDeu score and the BIC of binnings by hand
(lgamma formula), the model average of two binnings by hand, netcal's elbow
rule on a hand vector, the near-isotonic path (optimality certificate at every
model, the data at one end and scikit-learn's isotonic regression at the other),
ENIR's BIC weights by hand, ties, the knot cap, one-vs-rest, files, clone,
tensors and refusals. With netcal (importorskip): equality where the algorithms
coincide, and netcal's ENIR losing calibration scores on chained merges.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings

import numpy as np
import pytest

from calipers.recalibration import (
    BayesianBinningIntoQuantiles,
    EnsembleOfNearIsotonicRegression,
    load_recalibrator,
)
from calipers.recalibration._bayesian_averaging import bin_count_range, posterior_weights
from calipers.recalibration.bayesian_binning_into_quantiles import _bbq_models
from calipers.recalibration.ensemble_of_near_isotonic_regression import _nir_path, _pool
from calipers.validation import CalibrationInputError

NETCAL_BBQ = dict(binning="equal_width", criterion="bic", estimate="frequency", selection="elbow")

# ten distinct scores: the bin counts of the range are 1 and 2
X10 = np.array([0.05, 0.12, 0.2, 0.33, 0.41, 0.48, 0.6, 0.71, 0.85, 0.93])
Y10 = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
CUT = (0.41 + 0.48) / 2  # the equal-frequency cut of two bins


def _bdeu_by_hand(pos: list[float], tot: list[float], mid: list[float], strength: float) -> float:
    B = len(tot)
    s = strength / B
    out = 0.0
    for m, N, p in zip(pos, tot, mid, strict=True):
        a, c = s * p, s * (1 - p)
        out += math.lgamma(s) - math.lgamma(N + s)
        out += math.lgamma(m + a) - math.lgamma(a) + math.lgamma(N - m + c) - math.lgamma(c)
    return out


def test_bin_count_range_is_the_papers() -> None:
    assert bin_count_range(10, 10.0) == range(1, 3)  # ceil(10 / 5) = 2 caps it
    assert bin_count_range(1000, 10.0) == range(1, 101)  # 1000^(1/3) = 10 (to rounding)
    assert bin_count_range(10**6, 10.0) == range(9, 1001)  # floor(99.99.../10), ceil(999.99...)


def test_bdeu_score_and_posterior_means_by_hand() -> None:
    edges, values, logs = _bbq_models(X10, Y10.astype(float), None)
    assert [len(e) - 1 for e in edges] == [1, 2]
    np.testing.assert_array_equal(edges[1], [0.0, (0.41 + 0.48) / 2, 1.0])
    # B = 1: 5 positives of 10, midpoint 1/2; B = 2: 1 of 5 below the cut, 4 of 5 above
    assert logs[0] == pytest.approx(_bdeu_by_hand([5], [10], [0.5], 2.0), abs=1e-12)
    mid2 = [CUT / 2, (CUT + 1) / 2]
    assert logs[1] == pytest.approx(_bdeu_by_hand([1, 4], [5, 5], mid2, 2.0), abs=1e-12)
    np.testing.assert_allclose(values[0], [(5 + 2 * 0.5) / (10 + 2)], atol=1e-15)
    np.testing.assert_allclose(
        values[1], [(1 + mid2[0]) / (5 + 1), (4 + mid2[1]) / (5 + 1)], atol=1e-15
    )


def test_model_average_of_two_binnings_by_hand() -> None:
    b1 = _bdeu_by_hand([5], [10], [0.5], 2.0)
    mid2 = [CUT / 2, (CUT + 1) / 2]
    b2 = _bdeu_by_hand([1, 4], [5, 5], mid2, 2.0)
    w2 = 1.0 / (1.0 + math.exp(b1 - b2))
    v1 = 6 / 12
    lo, hi = (1 + mid2[0]) / 6, (4 + mid2[1]) / 6
    want = [(1 - w2) * v1 + w2 * lo, (1 - w2) * v1 + w2 * lo, (1 - w2) * v1 + w2 * hi]
    got = BayesianBinningIntoQuantiles().fit(X10, Y10).predict_proba(np.array([0.0, CUT, 0.5]))
    np.testing.assert_allclose(
        got, want, rtol=0, atol=1e-14
    )  # bins (lo, hi]: the cut is in the lower one


def test_bic_with_frequencies_on_equal_width_bins_by_hand() -> None:
    # bins [0, .5] (6 scores, 2 positives) and (.5, 1] (4 scores, 3 positives)
    ll1 = 5 * math.log(0.5) * 2
    ll2 = 2 * math.log(2 / 6) + 4 * math.log(4 / 6) + 3 * math.log(3 / 4) + math.log(1 / 4)
    bic = np.array([-2 * ll1 + math.log(10), -2 * ll2 + 2 * math.log(10)])
    w = np.exp(-(bic - bic.min()) / 2)
    w /= w.sum()
    _, values, logs = _bbq_models(X10, Y10.astype(float), None, **_netcal_args("bic"))
    np.testing.assert_allclose(logs, -bic / 2, atol=1e-12)
    np.testing.assert_allclose(values[1], [2 / 6, 3 / 4], atol=1e-15)
    rc = BayesianBinningIntoQuantiles(binning="equal_width", criterion="bic", estimate="frequency")
    got = rc.fit(X10, Y10).predict_proba(np.array([0.3, 0.7]))
    np.testing.assert_allclose(got, [w[0] * 0.5 + w[1] * 2 / 6, w[0] * 0.5 + w[1] * 3 / 4])
    # AIC: 2 parameters per... bin count B
    _, _, logs_aic = _bbq_models(X10, Y10.astype(float), None, **_netcal_args("aic"))
    np.testing.assert_allclose(logs_aic, [ll1 - 1, ll2 - 2], atol=1e-12)


def _netcal_args(criterion: str) -> dict[str, str]:
    return dict(binning="equal_width", criterion=criterion, estimate="frequency")


def test_elbow_rule_on_a_hand_vector() -> None:
    # relative scores 1, 1 - 1e-6, 0.5: the first drop over the variance is below 0.001
    e = np.log([0.5, 1.0, 1.0 - 1e-6])
    np.testing.assert_array_equal(posterior_weights(e, "elbow"), [0.0, 1.0, 0.0])
    rel = np.array([0.5, 1, 1 - 1e-6])
    np.testing.assert_allclose(posterior_weights(e, "average"), rel / rel.sum(), rtol=1e-15)
    # 1, 0.6, 0.3, 0.29 (variance 0.0798): drops 0.4, 0.3 kept, 0.01 / 0.0798 kept too
    e = np.log([0.29, 0.6, 1.0, 0.3])
    np.testing.assert_allclose(posterior_weights(e, "elbow"), np.array([0.29, 0.6, 1, 0.3]) / 2.19)
    # equal leaders are all kept before the drops are looked at
    e = np.log([1.0, 1.0, 0.999999, 0.2])
    np.testing.assert_allclose(posterior_weights(e, "elbow"), [0.5, 0.5, 0.0, 0.0])


def test_stored_step_function_is_the_weighted_sum_of_the_binnings() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(size=700)
    y = (rng.uniform(size=700) < x**2).astype(float)
    xt = np.concatenate([rng.uniform(size=2000), [0.0, 1.0]])
    for kw in ({}, _netcal_args("bic")):
        edges, values, logs = _bbq_models(x, y, None, **kw)
        w = posterior_weights(logs, "average")
        want = sum(
            w[m] * values[m][np.searchsorted(edges[m][1:-1], xt, side="left")]
            for m in range(len(w))
        )
        got = BayesianBinningIntoQuantiles(**kw).fit(x, y).predict_proba(xt)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_bbq_one_vs_rest_renormalised() -> None:
    rng = np.random.default_rng(2)
    z = rng.normal(size=(600, 3)) * 2
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p**0.5 / (p**0.5).sum(1, keepdims=True)])
    for cls in (BayesianBinningIntoQuantiles, EnsembleOfNearIsotonicRegression):
        got = cls().fit(p, y).predict_proba(p[:50])
        cols = np.stack(
            [cls().fit(p[:, k], (y == k).astype(int)).predict_proba(p[:50, k]) for k in range(3)],
            axis=1,
        )
        np.testing.assert_allclose(got, cols / cols.sum(axis=1, keepdims=True), atol=1e-14)


def test_zero_weight_rows_are_left_out() -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(size=300)
    y = (rng.uniform(size=300) < x).astype(int)
    w = (rng.uniform(size=300) < 0.7).astype(float)
    xt = rng.uniform(size=100)
    for cls in (BayesianBinningIntoQuantiles, EnsembleOfNearIsotonicRegression):
        a = cls().fit(x, y, sample_weight=w).predict_proba(xt)
        b = cls().fit(x[w > 0], y[w > 0]).predict_proba(xt)
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- ENIR


def _certificate(lam: float, val: np.ndarray, starts: np.ndarray, W: np.ndarray, P: np.ndarray):
    """KKT of min 1/2 sum W (t - b)^2 + lam sum (b_i - b_{i+1})_+: the subgradients g."""
    beta = np.repeat(val, np.diff(np.append(starts, len(W))))
    g = -np.cumsum(W * (beta - P / W)) / lam
    d = beta[:-1] - beta[1:]
    assert abs(g[-1]) < 1e-9  # the residuals sum to 0
    assert np.all(g[:-1][d > 1e-12] > 1 - 1e-9)  # a violation is fully penalised
    assert np.all(np.abs(g[:-1][d < -1e-12]) < 1e-9)  # an increase is free
    assert np.all((g > -1e-9) & (g < 1 + 1e-9))  # a fused pair: g in [0, 1]
    return beta


def test_near_isotonic_path_is_optimal_at_every_model_and_ends_at_isotonic() -> None:
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(11)
    x = rng.uniform(size=300)
    y = (rng.uniform(size=300) < x).astype(float)
    knots, W, P = _pool(x, y, None, None)
    models = [(lam, v.copy(), s.copy()) for lam, v, _, _, s in _nir_path(W, P)]
    lams = [m[0] for m in models]
    assert lams == sorted(lams) and lams[0] > 0 and len(models) > 20
    for lam, val, starts in models:
        beta = _certificate(lam, val, starts, W, P)
    iso = IsotonicRegression().fit(x, y).predict(knots)
    np.testing.assert_allclose(beta, iso, atol=1e-12)


def test_path_of_non_decreasing_targets_is_the_data() -> None:
    W = np.array([1.0, 2.0, 1.0, 3.0])
    P = np.array([0.0, 1.0, 1.0, 3.0])
    (only,) = list(_nir_path(W, P))
    assert only[0] == 0.0
    np.testing.assert_array_equal(only[1], [0.0, 0.5, 1.0])  # runs of equal targets fused
    x = np.array([0.1, 0.2, 0.2, 0.3, 0.4, 0.4, 0.4])
    y = np.array([0, 0, 1, 1, 1, 1, 1])
    rc = EnsembleOfNearIsotonicRegression().fit(x, y)
    np.testing.assert_array_equal(rc.values_[0], [0.0, 0.5, 1.0, 1.0])


def test_enir_weights_by_hand() -> None:
    # labels 1 0 0 1 0 1 1 on seven scores: the path's models, scored by BIC by hand
    x = np.linspace(0.1, 0.7, 7)
    y = np.array([1, 0, 0, 1, 0, 1, 1])
    _, W, P = _pool(x, y.astype(float), None, None)
    models = [(v.copy(), s.copy()) for _, v, _, _, s in _nir_path(W, P)]
    assert len(models) >= 2
    bic = []
    betas = []
    for val, starts in models:
        beta = np.repeat(val, np.diff(np.append(starts, 7)))
        ll = sum(math.log(b) if t else math.log(1 - b) for b, t in zip(beta, y, strict=True))
        bic.append(-2 * ll + len(val) * math.log(7))
        betas.append(beta)
    w = np.exp(-(np.array(bic) - min(bic)) / 2)
    w /= w.sum()
    want = sum(wi * b for wi, b in zip(w, betas, strict=True))
    rc = EnsembleOfNearIsotonicRegression().fit(x, y)
    np.testing.assert_allclose(rc.values_[0], want, atol=1e-14)
    # linear interpolation between knots (the paper); the step switches half-way
    np.testing.assert_allclose(rc.predict_proba(np.array([0.15])), [(want[0] + want[1]) / 2])
    step = EnsembleOfNearIsotonicRegression(interpolation="step").fit(x, y)
    np.testing.assert_allclose(step.predict_proba(np.array([0.15, 0.1501])), want[:2])


def test_chained_merges_keep_every_score() -> None:
    # 0 0 1 0 1 0 1 1: the middle four meet at lambda = 1/2 (one model, the isotonic fit)
    x = np.arange(1, 9) / 10
    y = np.array([0, 0, 1, 0, 1, 0, 1, 1])
    rc = EnsembleOfNearIsotonicRegression(interpolation="step", selection="elbow").fit(x, y)
    np.testing.assert_array_equal(rc.predict_proba(x), [0, 0, 0.5, 0.5, 0.5, 0.5, 1, 1])


def test_ties_are_pooled_and_the_knot_cap_pools_blocks() -> None:
    x = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.7, 0.9])
    y = np.array([1, 0, 1, 1, 0, 1, 1])
    knots, W, P = _pool(x, y.astype(float), None, None)
    np.testing.assert_array_equal(knots, [0.1, 0.2, 0.5, 0.7, 0.9])
    np.testing.assert_array_equal(W, [1, 3, 1, 1, 1])
    np.testing.assert_array_equal(P, [1, 2, 0, 1, 1])
    # five distinct scores into two blocks: distinct scores 0-2 and 3-4 (floor(2 j / 5))
    knots, W, P = _pool(x, y.astype(float), None, 2)
    np.testing.assert_allclose(knots, [(0.1 + 3 * 0.2 + 0.5) / 5, (0.7 + 0.9) / 2])
    np.testing.assert_array_equal(W, [5, 2])
    np.testing.assert_array_equal(P, [3, 2])
    capped = EnsembleOfNearIsotonicRegression(max_knots=2).fit(x, y)
    assert len(capped.knots_[0]) == 2
    free = EnsembleOfNearIsotonicRegression(max_knots=None).fit(x, y).predict_proba(x)
    same = EnsembleOfNearIsotonicRegression(max_knots=5).fit(x, y).predict_proba(x)
    np.testing.assert_array_equal(free, same)


# ----------------------------------------------------------------------------- contract


@pytest.mark.parametrize("cls", [BayesianBinningIntoQuantiles, EnsembleOfNearIsotonicRegression])
def test_files_clone_and_tensors(cls: type) -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(size=400)
    y = (rng.uniform(size=400) < x**2).astype(int)
    rc = cls(selection="elbow").fit(x, y)
    back = load_recalibrator(rc.to_json())
    assert type(back) is cls and back.get_params() == rc.get_params()
    np.testing.assert_array_equal(back.predict_proba(x), rc.predict_proba(x))
    assert "ndarray" in json.dumps(json.loads(rc.to_json()))

    from sklearn.base import clone

    c = clone(rc)
    assert c.get_params() == rc.get_params() and not hasattr(c, "values_")
    torch = pytest.importorskip("torch")
    out = rc.predict_proba(torch.tensor(x[:5], dtype=torch.float64))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), rc.predict_proba(x[:5]))


@pytest.mark.parametrize(
    ("rc", "match"),
    [
        (BayesianBinningIntoQuantiles(binning="quantile"), r"parameter 'binning' must be one of"),
        (BayesianBinningIntoQuantiles(criterion="BIC"), r"parameter 'criterion' must be one of"),
        (BayesianBinningIntoQuantiles(prior_strength=0), r"'prior_strength' must be .* > 0"),
        (BayesianBinningIntoQuantiles(range_constant=0.5), r"'range_constant' must be .*>= 1"),
        (EnsembleOfNearIsotonicRegression(max_knots=1), r"'max_knots' must be an integer >= 2"),
        (EnsembleOfNearIsotonicRegression(selection="best"), r"'selection' must be one of"),
    ],
)
def test_refusals_name_the_parameter(rc, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        rc.fit(np.array([0.1, 0.5, 0.9, 0.3]), np.array([0, 1, 1, 0]))


def test_scores_outside_the_unit_interval_are_refused() -> None:
    with pytest.raises(CalibrationInputError):
        BayesianBinningIntoQuantiles().fit(np.array([0.1, 0.5, 1.9, 0.3]), np.array([0, 1, 1, 0]))


# ----------------------------------------------------------------------------- netcal


def _quiet(fn):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        with contextlib.redirect_stderr(io.StringIO()):
            return fn()


def test_bbq_equals_netcal_where_the_algorithms_coincide() -> None:
    binning = pytest.importorskip("netcal.binning")
    rng = np.random.default_rng(1)
    x = rng.uniform(0.01, 0.99, size=1000)
    y = (rng.uniform(size=1000) < x**2).astype(int)
    xt = rng.uniform(size=500)
    ref = _quiet(lambda: binning.BBQ().fit(x, y))
    ours = BayesianBinningIntoQuantiles(**NETCAL_BBQ).fit(x, y)
    np.testing.assert_allclose(
        ours.predict_proba(xt), _quiet(lambda: ref.transform(xt)), atol=1e-10
    )
    # every binning of the range is netcal's histogram binning with B bins
    edges, values, logs = _bbq_models(x, y.astype(float), None, **_netcal_args("bic"))
    for m, B in enumerate(bin_count_range(1000, 10.0)):
        hb = _quiet(lambda B=B: binning.HistogramBinning(bins=B).fit(x, y))
        mine = values[m][np.searchsorted(edges[m][1:-1], xt, side="left")]
        np.testing.assert_allclose(mine, hb.transform(xt), rtol=0, atol=1e-12)
    # its weights: the float64 BIC of its own kept models gives ours; its float32 one differs
    kept = ref._binning_models
    ll = [np.sum(y * np.log(h.transform(x)) + (1 - y) * np.log(1 - h.transform(x))) for h in kept]
    bic = np.array(
        [-2 * v + h.get_degrees_of_freedom() * np.log(1000) for v, h in zip(ll, kept, strict=True)]
    )
    theirs64 = np.exp(-(bic - bic.min()) / 2)
    w = posterior_weights(logs, "elbow")
    ours_kept = w[[h.get_degrees_of_freedom() - 1 for h in kept]]  # B = 1, 2, ...: index B - 1
    np.testing.assert_allclose(ours_kept, theirs64 / theirs64.sum(), rtol=1e-10)
    np.testing.assert_allclose(ours_kept, ref._model_scores, rtol=1e-4)


def test_bbq_papers_reading_differs_from_netcals() -> None:
    binning = pytest.importorskip("netcal.binning")
    rng = np.random.default_rng(1)
    x = rng.uniform(0.01, 0.99, size=1000)
    y = (rng.uniform(size=1000) < x**2).astype(int)
    ref = _quiet(lambda: binning.BBQ().fit(x, y)).transform(x)
    paper = BayesianBinningIntoQuantiles().fit(x, y).predict_proba(x)
    assert np.abs(paper - ref).max() > 0.01


def _netcal_path_loses_scores(nir_cls, x: np.ndarray, y: np.ndarray) -> bool:
    o = np.argsort(x)
    iso = _quiet(lambda: nir_cls(quick_init=True).fit(x[o], y[o]))
    while iso is not None:
        if sum(len(g) for g in iso._group_items) != len(x):
            return True
        iso = _quiet(iso.get_next_model)
    return False


def test_enir_equals_netcal_where_its_path_is_right() -> None:
    binning = pytest.importorskip("netcal.binning")
    rng = np.random.default_rng(62)
    x = np.sort(rng.uniform(size=80))
    y = (rng.uniform(size=80) < x**3).astype(int)
    assert not _netcal_path_loses_scores(binning.NearIsotonicRegression, x, y)
    ref = _quiet(lambda: binning.ENIR().fit(x, y))
    xt = np.concatenate([rng.uniform(size=300), x])
    _, W, P = _pool(x, y.astype(float), None, None)
    mids = (x[:-1] + x[1:]) / 2
    models = [(v.copy(), s.copy()) for _, v, _, _, s in _nir_path(W, P)]
    path = [np.repeat(v, np.diff(np.append(s, 80))) for v, s in models]
    steps = [beta[np.searchsorted(mids, xt, side="left")] for beta in path]
    groups = [len(v) for v, _ in models]
    # netcal's path has our models' lambdas and groups ...
    theirs = [_quiet(lambda: binning.NearIsotonicRegression(quick_init=True).fit(x, y))]
    while theirs[-1] is not None:
        theirs.append(_quiet(theirs[-1].get_next_model))
    theirs = theirs[1:-1]
    assert [h.get_degrees_of_freedom() for h in theirs] == groups
    # ... but each stored model shares its values with the next one, which moves them on to
    # the next merge: model m predicts the function of model m + 1 (the last one its own)
    for m, h in enumerate(theirs):
        np.testing.assert_allclose(h.transform(xt), steps[min(m + 1, len(path) - 1)], atol=1e-12)
    # its weights: the BIC (float64) of those functions with the stored models' groups
    kept = ref._binning_models
    ll = []
    for h in kept:
        q = h.transform(x)
        ll.append(
            np.sum(np.log(np.where(y == 1, q, 1.0))) + np.sum(np.log(np.where(y == 0, 1 - q, 1.0)))
        )
    bic = np.array(
        [-2 * v + h.get_degrees_of_freedom() * np.log(80) for v, h in zip(ll, kept, strict=True)]
    )
    w64 = np.exp(-(bic - bic.min()) / 2)
    w64 /= w64.sum()
    np.testing.assert_allclose(ref._model_scores, w64, rtol=1e-5)  # its own: float32
    mix = sum(wk * h.transform(xt) for wk, h in zip(w64, kept, strict=True))
    np.testing.assert_allclose(ref.transform(xt), mix, rtol=0, atol=1e-5)
    # ours, fed netcal's (shifted) models and float64 weights, gives the same numbers
    shifted = {g: steps[min(m + 1, len(path) - 1)] for m, g in enumerate(groups)}
    ours_mix = sum(
        wk * shifted[h.get_degrees_of_freedom()] for wk, h in zip(w64, kept, strict=True)
    )
    np.testing.assert_allclose(ours_mix, mix, rtol=0, atol=1e-12)
    # and the paper's reading (every model with its own values) differs
    rc = EnsembleOfNearIsotonicRegression(interpolation="step", selection="elbow").fit(x, y)
    assert np.abs(rc.predict_proba(xt) - ref.transform(xt)).max() > 1e-3


def test_netcal_enir_loses_scores_on_chained_merges() -> None:
    binning = pytest.importorskip("netcal.binning")
    from sklearn.isotonic import IsotonicRegression

    x = np.arange(1, 9) / 10
    y = np.array([0, 0, 1, 0, 1, 0, 1, 1])
    assert _netcal_path_loses_scores(binning.NearIsotonicRegression, x, y)
    ref = _quiet(lambda: binning.ENIR().fit(x, y))
    assert [len(g) for g in ref._binning_models[0]._group_items] == [2, 2, 2]  # 8 scores
    np.testing.assert_array_equal(ref.transform(x), [0, 0, 0.5, 0.5, 0, 0, 1, 1])
    ours = EnsembleOfNearIsotonicRegression(interpolation="step", selection="elbow").fit(x, y)
    iso = IsotonicRegression().fit(x, y).predict(x)
    np.testing.assert_array_equal(ours.predict_proba(x), iso)
