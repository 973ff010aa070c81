"""Histogram binning, isotonic regression, mean replacement (MRR) and the split helpers.

Reference values come from closed forms (MRR: docs/how-calipers-computes.md §7.2, the MRR rows
of Chidambaram & Ge (2024) Tables 1, 5 and 6), hand computations written out below, and peer
libraries used as oracles (scikit-learn's ``IsotonicRegression``; Kumar et al.'s
``verified_calibration`` histogram calibrator), never from calipers' own output.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import calipers as cp
from calipers.recalibration.base import Recalibrator
from calipers.recalibration.histogram_binning import HistogramBinning
from calipers.recalibration.isotonic_regression import IsotonicRegression
from calipers.recalibration.mean_replacement import MeanReplacement
from calipers.recalibration.split import (
    calibration_split,
    calibration_split_indices,
    cross_val_predict_proba,
    cross_val_score,
    stratified_folds,
)
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _data(n: int, k: int, seed: int, temp: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn from softmax(z); predictions softmax(temp * z) (over-confident)."""
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.standard_normal((n, k))
    u = rng.random(n)
    y = np.minimum((u[:, None] > np.cumsum(_softmax(z), axis=1)).sum(axis=1), k - 1)
    return _softmax(temp * z), y


# ----------------------------------------------------------------------------- MRR closed forms


def _mrr_closed_form(a_t: float, a: float, K: int) -> tuple[float, float]:
    """docs/how-calipers-computes.md §7.2: NLL and Brier of MRR predictions at test accuracy a_t."""
    b = (1 - a) / (K - 1)
    nll = -a_t * math.log(a) - (1 - a_t) * math.log(b)
    brier = a_t * (1 - a) ** 2 * K / (K - 1) + (1 - a_t) * (a * a + (1 - b) ** 2 + (K - 2) * b * b)
    return nll, brier


def _mrr_data(
    n: int, n_correct: int, K: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random probabilities whose arg-max is right in exactly ``n_correct`` rows."""
    P = rng.dirichlet(np.ones(K), size=n)
    pred = np.argmax(P, axis=1)
    y = pred.copy()
    wrong = rng.permutation(n)[: n - n_correct]
    y[wrong] = (pred[wrong] + 1 + rng.integers(0, K - 1, size=wrong.size)) % K
    assert int((y == pred).sum()) == n_correct
    return P, y


@pytest.mark.parametrize(
    ("K", "n_cal", "c_cal", "n_test", "c_test"),
    [
        (1000, 5000, 4266, 5000, 4257),  # ViT: a_t = .8514, a = .8532 (|a_t - a| = .0018)
        (100, 2000, 1400, 8000, 5616),  # CIFAR-100 ResNet-32: a_t = .7020, a = .7000
        (10, 2000, 1876, 8000, 7477),  # CIFAR-10 ResNet-32: a_t = .934625, a = .938
        (3, 10, 7, 7, 2),  # a_t < a, small
    ],
)
def test_mrr_metrics_match_closed_forms(
    K: int, n_cal: int, c_cal: int, n_test: int, c_test: int
) -> None:
    rng = np.random.default_rng(K)
    Pc, yc = _mrr_data(n_cal, c_cal, K, rng)
    Pt, yt = _mrr_data(n_test, c_test, K, rng)
    mrr = MeanReplacement().fit(Pc, yc)
    a, a_t = c_cal / n_cal, c_test / n_test
    assert mrr.accuracy_ == pytest.approx(a, abs=1e-15)
    Q = mrr.predict_proba(Pt)
    nll, brier = _mrr_closed_form(a_t, a, K)
    assert cp.accuracy(Q, yt) == pytest.approx(a_t, abs=1e-15)  # arg-max kept (a > 1/K)
    assert cp.nll(Q, yt) == pytest.approx(nll, rel=1e-12)
    assert cp.brier(Q, yt) == pytest.approx(brier, rel=1e-12)
    assert cp.ece(Q, yt) == pytest.approx(abs(a_t - a), abs=1e-12)
    # SmoothECE of a constant confidence is |mean residual| (up to its grid discretisation)
    assert cp.smece(Q, yt) == pytest.approx(abs(a_t - a), abs=2e-4)


@pytest.mark.parametrize(
    ("a_t", "gap", "K", "table_nll", "table_brier"),
    [
        (0.8514, 0.0018, 1000, 144.66, 27.51),  # Chidambaram & Ge (2024) Table 1 (ViT, ImageNet)
        (0.7020, 0.0020, 100, 197.85, 50.63),  # Table 6 (ResNet-32, CIFAR-100)
    ],
)
def test_mrr_published_rows(
    a_t: float, gap: float, K: int, table_nll: float, table_brier: float
) -> None:
    for a in (a_t + gap, a_t - gap):  # the sign of a_t - a is not printed; both round the same
        nll, brier = _mrr_closed_form(a_t, a, K)
        assert round(100 * nll, 2) == table_nll
        assert round(100 * brier, 2) == table_brier


def test_mrr_cifar10_row_needs_the_unrounded_test_accuracy() -> None:
    # Table 5 prints acc 93.46, ECE 0.34, NLL 38.52, Brier 12.60. With the printed
    # (rounded) a_t = .9346 and |a_t - a| = .0034 the closed forms give 38.54 / 12.61
    # (docs/how-calipers-computes.md §7.2); with the test split of 8000 rows (20 % of CIFAR-10 test for
    # calibration: 2000 rows) a_t = 7477/8000 = .934625 and a = 1876/2000 = .938 reproduce
    # every printed number.
    for a in (0.9346 + 0.0034, 0.9346 - 0.0034):
        nll, brier = _mrr_closed_form(0.9346, a, 10)
        assert (round(100 * nll, 2), round(100 * brier, 2)) == (38.54, 12.61)
    a_t, a = 7477 / 8000, 1876 / 2000
    nll, brier = _mrr_closed_form(a_t, a, 10)
    assert (round(100 * nll, 2), round(100 * brier, 2)) == (38.52, 12.60)
    assert round(100 * abs(a_t - a), 2) == 0.34 and round(100 * a_t, 2) == 93.46


def test_mrr_binary_and_hand_values() -> None:
    p = np.array([0.9, 0.2, 0.6, 0.4, 0.7])  # predictions 1, 0, 1, 0, 1
    y = np.array([1, 0, 0, 0, 1])  # right, right, wrong, right, right: a = 0.8
    mrr = MeanReplacement().fit(p, y)
    assert mrr.accuracy_ == pytest.approx(0.8)
    np.testing.assert_allclose(mrr.predict_proba(np.array([0.51, 0.5, 0.1])), [0.8, 0.2, 0.2])
    # weighted accuracy: the wrong row gets weight 3 -> a = 4/7
    w = np.array([1, 1, 3, 1, 1.0])
    assert MeanReplacement().fit(p, y, sample_weight=w).accuracy_ == pytest.approx(4 / 7)
    # multi-class rows: a at the arg-max (ties -> lowest index), (1 - a)/(K - 1) elsewhere
    P = np.array([[0.4, 0.4, 0.2], [0.1, 0.3, 0.6]])
    m = MeanReplacement().fit(P, [0, 2])
    np.testing.assert_array_equal(m.predict_proba(P), [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_mrr_accuracy_preservation_depends_on_a() -> None:
    P = np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]])
    good = MeanReplacement()
    assert good.accuracy_preserving is False  # unfitted: not guaranteed
    good.fit(P, [0, 0, 1, 1])  # a = 3/4 > 1/3
    assert good.accuracy_preserving is True
    with pytest.warns(RuntimeWarning, match="not above 1/K"):
        bad = MeanReplacement().fit(P, [1, 1, 0, 0])  # a = 0 <= 1/3
    assert bad.accuracy_preserving is False
    # a = 0: predicted class gets 0, the others 1/2: the arg-max moves (lowest other index)
    assert bad.predict(P).tolist() == [1, 1, 0, 0]


# ----------------------------------------------------------------------------- histogram binning


def test_histogram_binning_hand_computation() -> None:
    # K = 2, B = 4 bins (0, .25], (.25, .5], (.5, .75], (.75, 1] (first bin closed at 0)
    p0 = np.array([0.1, 0.25, 0.3, 0.5, 0.55, 0.8, 0.9, 0.95, 1.0])
    y = np.array([1, 1, 0, 1, 0, 0, 0, 1, 0])
    P = np.stack([p0, 1 - p0], axis=1)
    hb = HistogramBinning(n_bins=4, renormalize=False, smoothing="none").fit(P, y)
    # class 0: bin 0 = {.1, .25} -> 0/2; bin 1 = {.3, .5} -> 1/2; bin 2 = {.55} -> 1/1;
    #          bin 3 = {.8, .9, .95, 1} -> 3/4
    # class 1 (values .9, .75, .7, .5, .45, .2, .1, .05, 0): bin 0 = {.2, .1, .05, 0} with
    #          labels 0,0,1,0 -> 1/4; bin 1 = {.5, .45} with labels 1, 0 -> 1/2;
    #          bin 2 = {.75, .7} with labels 1, 0 -> 1/2; bin 3 = {.9} label 1 -> 1
    np.testing.assert_allclose(hb.bin_values_, [[0, 0.5, 1, 0.75], [0.25, 0.5, 0.5, 1.0]])
    np.testing.assert_array_equal(hb.bin_weights_, [[2, 2, 1, 4], [4, 2, 2, 1]])
    T = np.array([[0.25, 0.75], [0.6, 0.4], [0.0, 1.0]])
    raw = np.array([[0.0, 0.5], [1.0, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(hb.predict_proba(T), raw)
    hb_n = HistogramBinning(n_bins=4, smoothing="none").fit(P, y)
    np.testing.assert_allclose(hb_n.predict_proba(T), raw / raw.sum(1, keepdims=True))


def test_histogram_binning_empty_bins() -> None:
    P = np.array([[0.9, 0.1], [0.8, 0.2], [0.85, 0.15]])
    y = np.array([0, 0, 1])
    mid = HistogramBinning(n_bins=5, renormalize=False, smoothing="none").fit(P, y)
    zero = HistogramBinning(n_bins=5, renormalize=False, empty="zero", smoothing="none").fit(P, y)
    # class 0 holds only bin 4 ((.8, 1]: .9, .85 -> 1/2) and bin 3 ((.6, .8]: .8 -> 1)
    np.testing.assert_allclose(mid.bin_values_[0], [0.1, 0.3, 0.5, 1.0, 0.5])
    np.testing.assert_allclose(zero.bin_values_[0], [0, 0, 0, 1.0, 0.5])
    # class 1: bin 0 = {.1, .2, .15} -> 1/3
    np.testing.assert_allclose(mid.bin_values_[1], [1 / 3, 0.3, 0.5, 0.7, 0.9])
    np.testing.assert_allclose(zero.bin_values_[1], [1 / 3, 0, 0, 0, 0])
    # a test row landing in empty bins of both classes: 0/0 after zeroing -> uniform
    T = np.array([[0.5, 0.5]])
    np.testing.assert_allclose(
        HistogramBinning(5, empty="zero", smoothing="none").fit(P, y).predict_proba(T), [[0.5, 0.5]]
    )
    np.testing.assert_allclose(
        HistogramBinning(5, smoothing="none").fit(P, y).predict_proba(T), [[0.5, 0.5]]
    )


@pytest.mark.oracle
def test_histogram_binning_matches_verified_calibration_per_class() -> None:
    cal = pytest.importorskip("calibration")
    P, y = _data(600, 4, seed=3)
    Pt, _ = _data(300, 4, seed=4)
    B = 15
    bins = list(np.arange(1, B + 1) / B)  # upper edges; bisect_left -> (lo, hi] bins
    hb = HistogramBinning(n_bins=B, renormalize=False, smoothing="none").fit(P, y)
    Q = hb.predict_proba(Pt)
    for k in range(4):
        f = cal.utils.get_histogram_calibrator(list(P[:, k]), list((y == k).astype(float)), bins)
        np.testing.assert_allclose(Q[:, k], f(Pt[:, k]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        HistogramBinning(n_bins=B, smoothing="none").fit(P, y).predict_proba(Pt),
        Q / Q.sum(1, keepdims=True),
        atol=1e-15,
    )


@pytest.mark.oracle
@pytest.mark.parametrize("n", [30, 600])
def test_histogram_binning_matches_netcal(n: int) -> None:
    # netcal 1.4 HistogramBinning(bins=15) (Chidambaram & Ge (2024)): one-vs-rest, empty bin -> midpoint,
    # rows renormalised. Its fit uses [lo, hi) bins and its transform (lo, hi] bins, so
    # continuous scores (never on an edge j/15) are needed for the two to agree. n = 30 leaves
    # many bins empty.
    binning = pytest.importorskip("netcal.binning")
    P, y = _data(n, 4, seed=n)
    Pt, _ = _data(300, 4, seed=n + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = binning.HistogramBinning(bins=15).fit(P, y).transform(Pt)
    np.testing.assert_allclose(
        HistogramBinning(smoothing="none").fit(P, y).predict_proba(Pt), ref, atol=1e-15
    )


def test_histogram_binning_top_label() -> None:
    P = np.array(
        [[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.75, 0.05], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8]]
    )
    y = np.array([0, 1, 1, 0, 2])
    # confidences .7 .6 .75 .4 .8 with correctness 1 0 1 0 1; B = 2: bin 0 = [0, .5] -> 0/1,
    # bin 1 = (.5, 1] -> 3/4
    hb = HistogramBinning(n_bins=2, mode="top_label", smoothing="none").fit(P, y)
    np.testing.assert_allclose(hb.bin_values_, [0.0, 0.75])
    T = np.array([[0.6, 0.3, 0.1], [0.45, 0.35, 0.2], [1.0, 0.0, 0.0]])
    expected = np.array(
        [
            [0.75, 0.25 * 0.75, 0.25 * 0.25],  # others share 1 - .75 in the ratio .3 : .1
            [0.0, 1 * 0.35 / 0.55, 1 * 0.2 / 0.55],  # confidence .45 -> 0: arg-max moves
            [0.75, 0.125, 0.125],  # no other mass: shared equally
        ]
    )
    Q = hb.predict_proba(T)
    np.testing.assert_allclose(Q, expected, atol=1e-15)
    np.testing.assert_allclose(Q.sum(1), 1.0, atol=1e-15)
    # binary top-label: confidence max(p, 1 - p), p = 0.5 predicts class 0
    pb = np.array([0.9, 0.2, 0.6, 0.5])
    yb = np.array([1, 1, 1, 0])  # correct: 1, 0, 1, 1
    hbb = HistogramBinning(n_bins=2, mode="top_label", smoothing="none").fit(pb, yb)
    np.testing.assert_allclose(hbb.bin_values_, [1.0, 2 / 3])  # bin 0 = {.5} right
    np.testing.assert_allclose(hbb.predict_proba(np.array([0.95, 0.3, 0.5])), [2 / 3, 1 / 3, 0.0])


def test_histogram_binning_and_isotonic_exact_zero_gives_infinite_nll() -> None:
    # class 1 never occurs when p_1 is small, so its low bins / isotonic level are 0
    P = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.2, 0.8], [0.1, 0.9]])
    y = np.array([0, 0, 0, 1, 1])
    T = np.array([[0.85, 0.15], [0.15, 0.85]])
    yt = np.array([1, 1])  # the first row's true class gets probability 0
    for rc in (HistogramBinning(n_bins=5, smoothing="none"), IsotonicRegression(smoothing="none")):
        Q = rc.fit(P, y).predict_proba(T)
        assert Q[0, 1] == 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning from log(0)
            assert cp.nll(Q, yt) == math.inf
        assert math.isfinite(cp.ece(Q, yt)) and math.isfinite(cp.brier(Q, yt))


def test_histogram_binning_bad_params() -> None:
    P, y = _data(50, 3, seed=0)
    for kw in ({"n_bins": 0}, {"n_bins": 2.5}, {"mode": "classwise"}, {"empty": "nan"}):
        with pytest.raises(CalibrationInputError):
            HistogramBinning(**kw).fit(P, y)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- isotonic regression


def _sk_isotonic(x: np.ndarray, t: np.ndarray, w: np.ndarray | None, xt: np.ndarray) -> np.ndarray:
    sk = pytest.importorskip("sklearn.isotonic")
    m = sk.IsotonicRegression(out_of_bounds="clip").fit(x, t, sample_weight=w)
    return m.predict(xt)


@pytest.mark.oracle
@pytest.mark.parametrize("weighted", [False, True])
def test_isotonic_matches_sklearn_per_class(weighted: bool) -> None:
    rng = np.random.default_rng(5)
    q = rng.dirichlet(np.ones(4), size=500)
    P = rng.multinomial(40, q) / 40  # probabilities on the grid j/40: many exact ties
    y = np.minimum((rng.random(500)[:, None] > np.cumsum(q, axis=1)).sum(axis=1), 3)
    Pt, _ = _data(300, 4, seed=6)
    Pt = np.vstack([Pt, np.full((1, 4), 0.25), np.eye(4)])  # includes out-of-range scores
    w = np.random.default_rng(0).integers(1, 4, size=500).astype(float) if weighted else None
    raw = (
        IsotonicRegression(renormalize=False, smoothing="none")
        .fit(P, y, sample_weight=w)
        .predict_proba(Pt)
    )
    ref = np.stack(
        [_sk_isotonic(P[:, k], (y == k).astype(float), w, Pt[:, k]) for k in range(4)], 1
    )
    np.testing.assert_allclose(raw, ref, rtol=0, atol=1e-12)
    Q = IsotonicRegression(smoothing="none").fit(P, y, sample_weight=w).predict_proba(Pt)
    np.testing.assert_allclose(Q, ref / ref.sum(1, keepdims=True), rtol=0, atol=1e-12)


def test_isotonic_step_interpolation_by_definition() -> None:
    P, y = _data(80, 3, seed=7)
    Pt, _ = _data(100, 3, seed=8)
    ir = IsotonicRegression(renormalize=False, interpolation="step", smoothing="none").fit(P, y)
    Q = ir.predict_proba(Pt)
    for k in range(3):
        x, t = P[:, k], (y == k).astype(float)
        # PAV by brute force: g(x_i) = max over a <= x_i of min over b >= x_i of mean(t in [a, b])
        xs = np.unique(x)
        means = np.array(
            [[t[(x >= a) & (x <= b)].mean() if a <= b else np.nan for b in xs] for a in xs]
        )
        g = np.array(
            [np.nanmax([np.nanmin(means[i, j:]) for i in range(j + 1)]) for j in range(len(xs))]
        )
        idx = np.clip(np.searchsorted(xs, Pt[:, k], side="right") - 1, 0, len(xs) - 1)
        np.testing.assert_allclose(Q[:, k], g[idx], atol=1e-12)


def test_isotonic_binary_and_zero_weights() -> None:
    p = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    ir = IsotonicRegression(smoothing="none").fit(p, y)
    # PAV: 0, (1 + 0)/2, (1 + 0)/2, 1, 1, 1; linear in between, clipped outside
    np.testing.assert_allclose(
        ir.predict_proba(np.array([0.0, 0.2, 0.35, 0.5, 1.0])), [0, 0.25, 0.5, 0.75, 1]
    )
    # a zero weight removes the row: dropping the 0.4 / label-0 row makes the fit 0, 1, 1, 1, 1
    w = np.array([1, 1, 0, 1, 1, 1.0])
    irw = IsotonicRegression(smoothing="none").fit(p, y, sample_weight=w)
    np.testing.assert_allclose(irw.predict_proba(np.array([0.1, 0.2, 0.3, 0.5])), [0, 0.5, 1, 1])


def test_renormalisation_switch() -> None:
    P, y = _data(300, 5, seed=9)
    Pt, _ = _data(100, 5, seed=10)
    for cls in (HistogramBinning, IsotonicRegression):
        raw = cls(renormalize=False).fit(P, y).predict_proba(Pt)
        norm = cls().fit(P, y).predict_proba(Pt)
        assert np.max(np.abs(raw.sum(1) - 1)) > 1e-3  # one-vs-rest values do not sum to 1
        s = raw.sum(1, keepdims=True)
        np.testing.assert_allclose(
            norm, np.where(s > 0, raw / np.where(s > 0, s, 1), 0.2), atol=1e-15
        )
        np.testing.assert_allclose(norm.sum(1), 1.0, atol=1e-12)


def test_isotonic_bad_interpolation() -> None:
    with pytest.raises(CalibrationInputError, match="interpolation"):
        IsotonicRegression(interpolation="cubic").fit(*_data(20, 2, seed=0))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- splits


def test_calibration_split_stratified_proportions_and_cover() -> None:
    rng = np.random.default_rng(0)
    y = rng.choice(7, size=1003, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.07, 0.03])
    for size in (0.5, 0.2, 333):
        cal, test = calibration_split_indices(y, calibration_size=size, seed=1)
        m = 333 if isinstance(size, int) else math.floor(size * 1003 + 0.5)
        assert len(cal) == m and len(test) == 1003 - m
        assert np.intersect1d(cal, test).size == 0
        np.testing.assert_array_equal(np.sort(np.concatenate([cal, test])), np.arange(1003))
        assert np.all(np.diff(cal) > 0) and np.all(np.diff(test) > 0)
        nc = np.bincount(y, minlength=7)
        got = np.bincount(y[cal], minlength=7)
        q = nc * m / 1003
        assert np.all((got == np.floor(q)) | (got == np.ceil(q)))


def test_calibration_split_seeds_and_unstratified() -> None:
    y = np.repeat([0, 1, 2], [50, 30, 20])
    a = calibration_split_indices(y, seed=3)
    b = calibration_split_indices(y, seed=3)
    c = calibration_split_indices(y, seed=4)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    u, v = calibration_split_indices(y, stratify=False, calibration_size=0.3, seed=0)
    assert len(u) == 30 and len(v) == 70 and np.intersect1d(u, v).size == 0
    s = calibration_split(np.arange(200.0).reshape(100, 2), y, calibration_size=0.3, seed=0)
    assert s.scores_cal.shape == (30, 2) and s.labels_test.shape == (70,)
    np.testing.assert_array_equal(np.bincount(s.labels_cal), [15, 9, 6])
    np.testing.assert_array_equal(s.scores_cal[:, 0] // 2, np.sort(s.scores_cal[:, 0] // 2))


def test_calibration_split_errors() -> None:
    y = [0, 1, 0, 1]
    for size in (0.0, 1.0, 4, 0, 1.5, True):
        with pytest.raises(CalibrationInputError):
            calibration_split_indices(y, calibration_size=size)  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError):
        calibration_split_indices([0.5, 1.0])
    with pytest.raises(CalibrationInputError, match="rows"):
        calibration_split(np.zeros((3, 2)), y)


def test_calibration_split_torch() -> None:
    torch = pytest.importorskip("torch")
    z = torch.arange(20.0).reshape(10, 2)
    y = torch.tensor([0, 1] * 5)
    s = calibration_split(z, y, seed=0)
    assert isinstance(s.scores_cal, torch.Tensor) and tuple(s.scores_cal.shape) == (5, 2)
    cal, _ = calibration_split_indices(y.numpy(), seed=0)
    np.testing.assert_array_equal(s.scores_cal.numpy(), z.numpy()[cal])


def test_stratified_folds() -> None:
    y = np.repeat([0, 1, 2, 3], [23, 17, 9, 2])
    f = stratified_folds(y, n_splits=5, seed=0)
    sizes = np.bincount(f, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for c in range(4):
        per = np.bincount(f[y == c], minlength=5)
        assert per.max() - per.min() <= 1
    np.testing.assert_array_equal(f, stratified_folds(y, n_splits=5, seed=0))
    assert not np.array_equal(f, stratified_folds(y, n_splits=5, seed=1))
    for bad in (1, 52, 2.5):
        with pytest.raises(CalibrationInputError):
            stratified_folds(y, n_splits=bad)  # type: ignore[arg-type]


class _Recorder(Recalibrator):
    """Records the rows it was fitted on and the rows it predicts (column 0 = row id)."""

    input = "logits"
    log: list[tuple[frozenset[int], frozenset[int]]] = []

    def __init__(self, tag: str = "x") -> None:
        self.tag = tag

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        self.fitted_rows_ = [int(v) for v in S[:, 0]]

    def _transform(self, S: np.ndarray) -> np.ndarray:
        _Recorder.log.append((frozenset(self.fitted_rows_), frozenset(int(v) for v in S[:, 0])))
        return _softmax(S * 0.0)


def test_cross_val_predict_is_out_of_fold() -> None:
    n = 60
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=n)
    S = np.column_stack([np.arange(n, dtype=float), rng.normal(size=(n, 2))])  # column 0 = row id
    _Recorder.log.clear()
    rec = _Recorder(tag="t")
    out = cross_val_predict_proba(rec, S, y, n_splits=4, seed=0, logits=True)
    assert not hasattr(rec, "n_classes_")  # the object passed in is not fitted
    assert out.shape == (n, 3)
    assert len(_Recorder.log) == 4
    predicted: list[int] = []
    for fitted, pred in _Recorder.log:
        assert fitted.isdisjoint(pred)  # no row predicted by a model fitted on it
        assert fitted | pred == set(range(n))
        predicted += sorted(pred)
    assert sorted(predicted) == list(range(n))  # every row predicted exactly once


def test_cross_val_mrr_matches_manual_folds() -> None:
    P, y = _data(120, 3, seed=11)
    f = stratified_folds(y, n_splits=3, seed=2)
    right = P.argmax(1) == y
    out = cross_val_predict_proba(MeanReplacement(), P, y, n_splits=3, seed=2)
    a = np.array([right[f != k].mean() for k in range(3)])
    np.testing.assert_allclose(out.max(1), a[f], atol=1e-15)
    scores = cross_val_score(MeanReplacement(), P, y, metric=cp.brier, n_splits=3, seed=2)
    for k in range(3):
        expected = cp.brier(out[f == k], y[f == k])
        assert scores[k] == pytest.approx(expected, abs=1e-15)
    # default metric is the NLL; HB folds may contain an exact 0 -> inf is reported, not raised
    nll = cross_val_score(MeanReplacement(), P, y, n_splits=3, seed=2)
    assert nll.shape == (3,) and np.all(np.isfinite(nll))
