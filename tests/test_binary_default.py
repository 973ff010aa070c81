"""1-D input means P(y = 1): every metric reads it as every peer library does.

The positive-class ("binary") lens scores P(y = 1) against y; the top-label
reading max(p, 1 - p) against correctness is ``lens="top_label"``; two-column
input stays top-label. Values are compared with a by-hand NumPy ECE and, when
installed, with torchmetrics, netcal, relplot, scikit-learn and MAPIE.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import calipers as cp
from calipers.metrics._calibration_sharpness import (
    calibration_sharpness,
    confidence_calibration_error,
)
from calipers.validation import CalibrationInputError


def _hand_ece(score: np.ndarray, target: np.ndarray, n_bins: int = 15) -> float:
    """Equal-width (lo, hi] bins by explicit comparison with j / B, then the weighted gap."""
    edges = np.arange(1, n_bins) / n_bins
    ids = np.searchsorted(edges, score, side="left")
    total = 0.0
    for b in range(n_bins):
        m = ids == b
        if m.any():
            total += m.sum() * abs(target[m].mean() - score[m].mean())
    return total / score.size


def _example(n: int = 20_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The issue's example: labels drawn as Bernoulli(p ** 1.5) (over-confident P(y = 1))."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p**1.5).astype(np.int64)


def test_ece_of_1d_input_is_the_positive_class_ece() -> None:
    p, y = _example()
    pos = _hand_ece(p, y.astype(float))
    top = _hand_ece(np.maximum(p, 1 - p), ((p > 0.5) == (y == 1)).astype(float))
    assert cp.ece(p, y) == pytest.approx(pos, rel=1e-12)
    assert cp.ece(p, y, lens="top_label") == pytest.approx(top, rel=1e-12)
    # the two are different quantities: here the over-confidence above 0.5 and the
    # under-confidence below it cancel in the top-label form
    assert pos > 0.09 and top < 0.02
    # two columns stay top-label (Guo et al.); lens="binary" is the positive class there too
    two = np.stack([1 - p, p], axis=1)
    assert cp.ece(two, y) == pytest.approx(top, rel=1e-12)
    assert cp.ece(two, y, lens="binary") == pytest.approx(pos, rel=1e-12)


@pytest.mark.oracle
def test_binary_ece_equals_the_peers() -> None:
    p, y = _example()
    ours = cp.ece(p, y)
    checked = 0
    try:
        import torch
        from torchmetrics.functional.classification import binary_calibration_error

        tm = float(binary_calibration_error(torch.from_numpy(p), torch.from_numpy(y), n_bins=15))
        assert ours == pytest.approx(tm, abs=1e-9)
        checked += 1
    except ImportError:
        pass
    try:
        from netcal.metrics import ECE

        assert ours == pytest.approx(float(ECE(15).measure(p, y)), abs=1e-9)
        checked += 1
    except ImportError:
        pass
    try:
        from sklearn.calibration import calibration_curve

        frac, mean = calibration_curve(y, p, n_bins=15)
        counts = np.bincount(np.searchsorted(np.linspace(0, 1, 16)[1:-1], p, "right"))
        sk = float(np.sum(counts[counts > 0] * np.abs(frac - mean)) / p.size)
        # scikit-learn's bins are [lo, hi): calipers' "left" edge rule
        assert cp.ece(p, y, edge_rule="left") == pytest.approx(sk, abs=1e-12)
        checked += 1
    except ImportError:
        pass
    try:
        import relplot

        assert cp.smece(p, y) == pytest.approx(float(relplot.smECE(p, y.astype(float))), abs=1e-9)
        checked += 1
    except ImportError:
        pass
    if checked == 0:
        pytest.skip("no peer library installed (torchmetrics, netcal, scikit-learn, relplot)")


ONE_D_METRICS = {
    "ece": cp.ece,
    "mce": cp.mce,
    "rmsce": cp.rmsce,
    "bin_averaged_ece": cp.bin_averaged_ece,
    "tce_p": cp.tce_p,
    "smece": cp.smece,
    "ks_calibration_error": cp.ks_calibration_error,
    "mmce": cp.mmce,
    "kde_calibration_error": cp.kde_calibration_error,
    "debiased_calibration_error": cp.debiased_calibration_error,
    "confidence_calibration_error": confidence_calibration_error,
    "calibration_error": cp.calibration_error,
}


@pytest.mark.parametrize("name", sorted(ONE_D_METRICS))
def test_every_metric_reads_1d_input_as_the_positive_class(name: str) -> None:
    """f(p, y) == f([1 - p, p], y, lens="binary") and f(p, y, lens="top_label") == f([1-p, p], y)."""
    f = ONE_D_METRICS[name]
    p, y = _example(3000, seed=1)
    two = np.stack([1 - p, p], axis=1)
    default = float(f(p, y))
    assert default == pytest.approx(float(f(two, y, lens="binary")), rel=1e-9, abs=1e-12)
    top = float(f(p, y, lens="top_label"))
    assert top == pytest.approx(float(f(two, y)), rel=1e-9, abs=1e-12)
    assert abs(default - top) > 1e-4, "the example must tell the two readings apart"
    with pytest.raises(CalibrationInputError, match="lens"):
        f(p, y, lens="classwise_typo")


def test_positive_class_equals_the_1d_problem_of_p_against_y() -> None:
    """Independent check of the non-binned ones: the same value as on (p, y) read as scores."""
    p, y = _example(3000, seed=2)
    # scores in [0, 1] with 0/1 targets *are* a binary problem: top-label of [1 - q, q]
    # with q = p would flip p < 0.5; a problem whose every score is > 0.5 cannot flip
    hi = p > 0.5
    for f in (cp.smece, cp.mmce, cp.ks_calibration_error, confidence_calibration_error):
        assert float(f(p[hi], y[hi])) == pytest.approx(
            float(f(p[hi], y[hi], lens="top_label")), rel=1e-12, abs=1e-15
        )


def test_consistency_test_and_sharpness_default_to_the_positive_class() -> None:
    p, y = _example(2000, seed=3)
    r = cp.consistency_test(p, y, n_resamples=19)
    assert r.statistic == pytest.approx(_hand_ece(p, y.astype(float)), rel=1e-12)
    cs = calibration_sharpness(p, y)
    assert cs.total_divergence == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)


def test_binned_statistics_and_reliability_bars_follow_the_positive_class() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from calipers.diagrams import reliability_diagram

    p, y = _example(3000, seed=4)
    st = cp.binned_statistics(p, y)[0].stats
    ids = np.searchsorted(np.arange(1, 15) / 15, p, side="left")
    np.testing.assert_array_equal(st.count, np.bincount(ids, minlength=15))
    np.testing.assert_array_equal(st.sum_target, np.bincount(ids, y.astype(float), 15))
    fig = reliability_diagram(p, y)
    assert fig.axes[0].get_xlabel() != "Confidence"
    plt.close(fig)


def test_binary_fast_path_equals_the_general_path() -> None:
    """The integer-target chunked path (unweighted, > 2 chunks) vs. the weighted one."""
    rng = np.random.default_rng(5)
    n = 200_003
    p = rng.random(n)
    p[:500] = np.round(p[:500] * 15) / 15  # on the edges
    y = (rng.random(n) < p).astype(np.int64)
    fast = cp.binned_statistics(p, y)[0].stats
    slow = cp.binned_statistics(p, y, sample_weight=np.ones(n))[0].stats
    np.testing.assert_array_equal(fast.count, slow.count)
    np.testing.assert_array_equal(fast.sum_target, slow.sum_target)
    np.testing.assert_allclose(fast.sum_score, slow.sum_score, rtol=1e-12)
    assert cp.ece(p, y) == pytest.approx(_hand_ece(p, y.astype(float)), rel=1e-10)


def test_torch_1d_input_reads_the_positive_class() -> None:
    torch = pytest.importorskip("torch")
    p, y = _example(3000, seed=6)
    got = cp.ece(torch.from_numpy(p), torch.from_numpy(y))
    assert float(got) == pytest.approx(cp.ece(p, y), rel=1e-12)


# ----------------------------------------------------------------------------- top-label ECE


def _gupta_ramdas(probs: np.ndarray, y: np.ndarray, n_bins: int, weighted: bool) -> float:
    pred = probs.argmax(axis=1)
    conf = probs.max(axis=1)
    vals, wts = [], []
    for c in np.unique(pred):
        m = pred == c
        vals.append(_hand_ece(conf[m], (y[m] == c).astype(float), n_bins))
        wts.append(m.sum())
    return float(np.average(vals, weights=wts if weighted else None))


def _softmax_example(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2 + np.linspace(0, 1.5, k)  # unequal class frequencies
    q = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=r) for r in q])
    p = np.exp(1.6 * z) / np.exp(1.6 * z).sum(1, keepdims=True)  # over-confident
    return p, y


@pytest.mark.parametrize("weighted", [True, False])
def test_top_label_ece_equals_the_per_class_definition(weighted: bool) -> None:
    p, y = _softmax_example(4000, 5, seed=7)
    agg = "weighted" if weighted else "mean"
    got = cp.top_label_ece(p, y, class_aggregate=agg)
    assert got == pytest.approx(_gupta_ramdas(p, y, 15, weighted), rel=1e-12)
    assert got >= cp.ece(p, y) - 1e-12 or not weighted  # no cancellation across classes


def test_top_label_ece_weights_and_errors() -> None:
    p, y = _softmax_example(600, 4, seed=8)
    w = np.random.default_rng(9).integers(0, 3, 600)
    rep = np.repeat(np.arange(600), w)
    assert cp.top_label_ece(p, y, sample_weight=w) == pytest.approx(
        cp.top_label_ece(p[rep], y[rep]), rel=1e-12
    )
    with pytest.raises(CalibrationInputError, match="class_aggregate"):
        cp.top_label_ece(p, y, class_aggregate="sum")


@pytest.mark.oracle
def test_top_label_ece_equals_mapie() -> None:
    mapie = pytest.importorskip("mapie.metrics.calibration")
    p, y = _softmax_example(3000, 4, seed=10)
    # MAPIE: plain mean over predicted classes; num_bins = B gives B - 1 equal-width
    # (lo, hi] bins (edges linspace(0, 1, B), np.digitize(right=True))
    ref = float(mapie.top_label_ece(y, p, num_bins=16, split_strategy="uniform"))
    assert cp.top_label_ece(p, y, class_aggregate="mean") == pytest.approx(ref, abs=1e-12)


def test_top_label_ece_partial_is_the_pipeline() -> None:
    p, y = _softmax_example(500, 3, seed=11)
    f = functools.partial(
        cp.calibration_error, lens="top_label_per_class", class_aggregate="weighted"
    )
    assert cp.top_label_ece(p, y) == f(p, y)
