"""Settings and weights that used to slip through: one integer validator, bounded bins,
thresholds in [0, 1), weights that cannot overflow, and a word before hours of work."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers as cp
from calipers.estimators import quadratic_cost
from calipers.estimators.quadratic_cost import CalibrationCostWarning
from calipers.validation import CalibrationInputError, check_integer

RNG = np.random.default_rng(0)
P1 = RNG.random(200)
Y1 = (RNG.random(200) < P1).astype(int)
PK = RNG.dirichlet(np.ones(4), 200)
YK = RNG.integers(0, 4, 200)

BINNED = {
    "ece": cp.ece,
    "mce": cp.mce,
    "rmsce": cp.rmsce,
    "bin_averaged_ece": cp.bin_averaged_ece,
    "top_label_ece": cp.top_label_ece,
    "sce": cp.sce,
    "ace": cp.ace,
    "tace": cp.tace,
    "classwise_ece": cp.classwise_ece,
    "tce_p": cp.tce_p,
    "cwce_p": cp.cwce_p,
    "EqualWidth": lambda p, y, n_bins: cp.calibration_error(p, y, estimator=cp.EqualWidth(n_bins)),
    "EqualMass": lambda p, y, n_bins: cp.calibration_error(p, y, estimator=cp.EqualMass(n_bins)),
}
BAD_BINS = [True, False, 1.5, 15.0, "15", None, 0, -3, 10**8, 10**9, np.array([15])]


@pytest.mark.parametrize("name", sorted(BINNED))
@pytest.mark.parametrize("bad", BAD_BINS, ids=repr)
def test_bad_n_bins_is_refused_before_any_work(name: str, bad: object) -> None:
    with pytest.raises(CalibrationInputError, match="n_bins"):
        BINNED[name](PK, YK, n_bins=bad)


@pytest.mark.parametrize("name", sorted(BINNED))
def test_more_bins_than_samples_beyond_the_free_range_is_refused(name: str) -> None:
    BINNED[name](PK, YK, n_bins=60_000)  # < 2**16: allowed (mostly empty bins, cheap)
    with pytest.raises(CalibrationInputError, match=r"more than the \d+ samples to bin"):
        BINNED[name](PK, YK, n_bins=100_000)


def test_numpy_integers_are_integers() -> None:
    assert cp.ece(PK, YK, n_bins=np.int64(15)) == cp.ece(PK, YK)
    assert check_integer(np.uint8(3), "x") == 3


@pytest.mark.parametrize("f", [cp.sce, cp.tace], ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [-0.5, 1.0, 2, float("nan"), True, "0.01"], ids=repr)
def test_threshold_outside_unit_interval_is_refused(f, bad) -> None:
    with pytest.raises(CalibrationInputError, match="threshold"):
        f(PK, YK, threshold=bad)


def _direct_mmce(p: np.ndarray, y: np.ndarray, h: float, w: np.ndarray | None = None) -> float:
    """sqrt(sum_ij w_i w_j d_i d_j exp(-|p_i - p_j| / h)) / sum w, by the n^2 definition."""
    w = np.ones_like(p) if w is None else w
    d = (p - y) * w
    K = np.exp(-np.abs(p[:, None] - p[None, :]) / h)
    return float(np.sqrt(max(d @ K @ d, 0.0)) / w.sum())


@pytest.mark.parametrize("h", [1e-12, 1e-6, 1e-3, 0.4])
def test_mmce_at_tiny_bandwidths_is_finite_and_exact(h: float) -> None:
    # at 1e-12 the decay between neighbours underflows to exactly 0
    assert cp.mmce(P1, Y1, bandwidth=h) == pytest.approx(_direct_mmce(P1, Y1, h), rel=1e-12)


@pytest.mark.parametrize("scale", [1e308, 1e300, 1e-300, 1e-320, 5e-324])
@pytest.mark.parametrize(
    "metric",
    [cp.ece, cp.sce, cp.smece, cp.mmce, cp.nll, cp.brier, cp.accuracy, cp.ks_calibration_error],
    ids=lambda f: f.__name__,
)
def test_huge_and_tiny_weights_give_the_unweighted_value(scale: float, metric) -> None:
    # (equal-mass bins place their edges at rounded positions of the weight-expanded sample,
    # so a constant weight other than 1 can move an edge: ACE is left out of this identity)
    w = np.full(200, scale)
    got = float(metric(P1, Y1, sample_weight=w))
    assert np.isfinite(got)
    if metric is cp.smece:  # its absolute density floor makes it depend on the weights' scale
        assert got == pytest.approx(float(metric(P1, Y1, sample_weight=np.full(200, 0.5))))
    else:
        assert got == pytest.approx(float(metric(P1, Y1)), rel=1e-12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.floats(0, 1e308, allow_nan=False), min_size=200, max_size=200).filter(
        lambda ws: max(ws) > 0
    )
)
def test_any_finite_weights_give_a_finite_ece_equal_to_rescaled_weights(ws: list[float]) -> None:
    w = np.asarray(ws)
    got = cp.ece(P1, Y1, sample_weight=w)
    assert np.isfinite(got)
    # a power of two changes no ratio: the same value as the exactly rescaled weights
    e = np.frexp(w.max())[1]
    assert got == pytest.approx(cp.ece(P1, Y1, sample_weight=np.ldexp(w, -e)), rel=1e-12)


def test_ordinary_weights_are_kept_bit_for_bit() -> None:
    w = RNG.random(200) * 3
    P = cp.check_predictions(P1, Y1, sample_weight=w)
    np.testing.assert_array_equal(P.sample_weight, w)


def test_quadratic_estimators_warn_and_refuse_with_the_estimate(monkeypatch) -> None:
    p, y = PK[:50], YK[:50]
    monkeypatch.setattr(quadratic_cost, "WARN_SECONDS", 0.0)
    with pytest.warns(CalibrationCostWarning, match="estimator='block'"):
        cp.skce(p, y)
    with pytest.warns(CalibrationCostWarning, match="subsample"):
        cp.proper_calibration_error(p, y, bandwidth=0.5)
    monkeypatch.setattr(quadratic_cost, "REFUSE_SECONDS", 0.0)
    for call in (
        functools.partial(cp.skce, estimator="biased"),
        functools.partial(cp.proper_calibration_error, bandwidth=0.5),
    ):
        with pytest.raises(CalibrationInputError, match="pairs of rows: about"):
            call(p, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp.skce(p, y, estimator="block")  # linear: neither warned nor refused


def test_the_cost_estimate_scales_as_n_squared_k() -> None:
    a = quadratic_cost.check_quadratic_cost(
        1000, 10, seconds_per_pair=1e-9, what="x", alternative="y"
    )
    b = quadratic_cost.check_quadratic_cost(
        2000, 20, seconds_per_pair=1e-9, what="x", alternative="y"
    )
    assert a == pytest.approx(0.01) and b == pytest.approx(8 * a)


def test_brier_makes_no_float64_copy_of_a_float32_matrix() -> None:
    import tracemalloc

    rng = np.random.default_rng(3)
    p = rng.random((100_000, 50), dtype=np.float32)
    p /= p.sum(1, keepdims=True)
    y = rng.integers(0, 50, 100_000)
    tracemalloc.start()
    got = cp.brier(p, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.25 * p.nbytes  # a float64 copy alone would be 2 x the input
    onehot = np.eye(50)[y]
    expected = np.mean(np.sum((p.astype(np.float64) - onehot) ** 2, axis=1))
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nll_from_logits_in_blocks_is_exact_and_leaves_the_input_alone(dtype) -> None:
    from scipy.special import logsumexp

    rng = np.random.default_rng(4)
    z = (rng.normal(size=(3000, 7)) * 5).astype(dtype)
    z[0] = 1000.0  # overflow-prone row
    y = rng.integers(0, 7, 3000)
    before = z.copy()
    z64 = z.astype(np.float64)
    expected = np.mean(logsumexp(z64, axis=1) - z64[np.arange(3000), y])
    assert cp.nll(z, y, logits=True) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(z, before)
    P = cp.check_predictions(z, y, logits=True)
    np.testing.assert_array_equal(z, before)
    np.testing.assert_allclose(P.probs.sum(axis=1), 1, atol=1e-5)
