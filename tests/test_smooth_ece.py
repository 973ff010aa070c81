"""SmoothECE (Błasiok & Nakkiran 2023) against relplot 1.0.3, docs/how-calipers-computes.md §6 and hand checks.

Independent references used here:

* ``relplot.smECE`` / ``relplot.smECE_sigma`` (the authors' package, oracle);
* the worked numbers of docs/how-calipers-computes.md §6 (n = 2000, f ~ Beta(5, 2), P(y=1|f) = f^1.5);
* a dense-matrix restatement of the reflected-kernel grid smoother written in this
  file (no FFT, no 'valid' slicing), checked against the library's FFT path;
* closed forms for constant residuals and for perfect predictions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from calipers.metrics.smooth_ece import (
    SmoothReliability,
    _smece_arrays,
    smece,
    smece_bandwidth,
    smooth_reliability,
)
from calipers.validation import CalibrationInputError

ATOL = 1e-9


def _data(n: int, seed: int, kind: str = "beta") -> tuple[np.ndarray, np.ndarray]:
    """Scores in [0, 1] and 0/1 targets with some miscalibration."""
    rng = np.random.default_rng(seed)
    if kind == "beta":
        f = rng.beta(5, 2, n)
    elif kind == "skewed":
        f = rng.beta(0.3, 6, n)  # mass piled up near 0
    elif kind == "ties":
        f = np.round(rng.beta(2, 2, n), 1)  # 11 distinct values, 0 and 1 included
    elif kind == "ends":
        f = rng.beta(0.5, 0.5, n)
        f[: n // 3] = 0.0
        f[n // 3 : n // 2] = 1.0
    else:  # pragma: no cover
        raise ValueError(kind)
    y = (rng.random(n) < f**1.5).astype(np.float64)
    return f, y


def _trapezoid(v: np.ndarray, t: np.ndarray) -> float:
    return float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t)))


# ----------------------------------------------------------------------------- relplot oracle


@pytest.mark.oracle
@pytest.mark.parametrize("kind", ["beta", "skewed", "ties", "ends"])
@pytest.mark.parametrize("n", [10, 300, 10_000])
def test_fixed_point_matches_relplot(kind: str, n: int) -> None:
    relplot = pytest.importorskip("relplot")
    for seed in (0, 1):
        f, y = _data(n, seed, kind)
        value, sigma = _smece_arrays(f, y)
        ref_value, ref_sigma = relplot.smECE(f, y, return_width=True)
        assert sigma == ref_sigma
        assert value == pytest.approx(float(ref_value), abs=ATOL)


@pytest.mark.oracle
@pytest.mark.parametrize("sigma", [0.002, 0.003, 0.0075, 0.05, 0.2, 0.7])
@pytest.mark.parametrize("kind", ["beta", "skewed", "ties", "ends"])
def test_fixed_bandwidth_matches_relplot(sigma: float, kind: str) -> None:
    # sigma < 0.01 changes the grid size E (0.003 gives an even E = 3334)
    relplot = pytest.importorskip("relplot")
    for n, seed in ((10, 2), (2000, 3)):
        f, y = _data(n, seed, kind)
        value, s = _smece_arrays(f, y, bandwidth=sigma)
        assert s == sigma
        assert value == pytest.approx(float(relplot.smECE_sigma(f, y, sigma)), abs=ATOL)


@pytest.mark.oracle
def test_multiclass_top_label_equals_relplot_reduction() -> None:
    relplot = pytest.importorskip("relplot")
    rng = np.random.default_rng(4)
    z = 2.5 * rng.standard_normal((3000, 5))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 5, 3000)
    f, c = relplot.multiclass_logits_to_confidences(p, y, probs=True)
    ref, ref_sigma = relplot.smECE(f, c, return_width=True)
    assert smece(p, y) == pytest.approx(float(ref), abs=ATOL)
    assert smece_bandwidth(p, y) == ref_sigma
    assert smece(p, y, bandwidth=0.05) == pytest.approx(
        float(relplot.smECE_sigma(f, c, 0.05)), abs=ATOL
    )
    # logits path: relplot's softmax vs calipers' softmax
    fl, cl = relplot.multiclass_logits_to_confidences(z, y)
    assert smece(z, y, logits=True) == pytest.approx(float(relplot.smECE(fl, cl)), abs=ATOL)


@pytest.mark.oracle
def test_binary_input_is_relplot_positive_class_by_default() -> None:
    relplot = pytest.importorskip("relplot")
    rng = np.random.default_rng(5)
    p = rng.beta(2, 2, 2000)
    y = (rng.random(2000) < p**1.3).astype(np.int64)
    # relplot on the raw 1-D input measures P(y=1) against y, and so does calipers
    assert smece(p, y) == pytest.approx(float(relplot.smECE(p, y.astype(float))), abs=ATOL)
    # the top-label reading is one argument away, and a different number here
    conf = np.maximum(p, 1 - p)
    correct = ((p > 0.5) == (y == 1)).astype(np.float64)
    top = smece(p, y, lens="top_label")
    assert top == pytest.approx(float(relplot.smECE(conf, correct)), abs=ATOL)
    assert abs(smece(p, y) - top) > 1e-3
    # ... and the same one when every p > 0.5 (then top-label == positive class)
    hi = p > 0.5
    assert smece(p[hi], y[hi], lens="top_label") == pytest.approx(smece(p[hi], y[hi]), abs=ATOL)


@pytest.mark.oracle
def test_reliability_curves_match_relplot() -> None:
    relplot = pytest.importorskip("relplot")
    from relplot import kernels

    rng = np.random.default_rng(6)
    f = rng.uniform(0.5, 1.0, 3000)
    f = f[f > 0.5]
    y = (rng.random(f.size) < f**1.5).astype(np.float64)
    diag = relplot.prepare_rel_diagram(f, y, plot_confidence_band=False, report_CE_std=False)
    d = smooth_reliability(f, y)
    assert isinstance(d, SmoothReliability)
    assert d.bandwidth == diag["sigma"]
    assert d.value == pytest.approx(float(diag["ce"]), abs=ATOL)
    np.testing.assert_allclose(d.t, diag["mesh"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(d.mean_target, diag["mu"], rtol=0, atol=ATOL)
    K = kernels.ReflectedGaussianKernel(d.bandwidth)
    raw = K.apply(f, np.ones_like(f), d.t)
    np.testing.assert_allclose(d.density, raw / _trapezoid(raw, d.t), rtol=1e-9, atol=ATOL)
    for sigma in (0.004, 0.3):
        d = smooth_reliability(f, y, bandwidth=sigma, n_points=301)
        K = kernels.ReflectedGaussianKernel(sigma)
        np.testing.assert_allclose(d.residual, K.smooth(f, f - y, d.t)[0], rtol=0, atol=ATOL)


# ----------------------------------------------------------------------------- worked numbers


def test_worked_check_conventions_section_6() -> None:
    # "rng seed 1" of docs/how-calipers-computes.md §6 is np.random.default_rng(1): beta, then uniforms
    # (the legacy np.random.seed(1) stream gives 0.104538 instead).
    rng = np.random.default_rng(1)
    f = rng.beta(5, 2, 2000)
    y = (rng.random(2000) < f**1.5).astype(np.float64)
    value, sigma = _smece_arrays(f, y)
    assert value == pytest.approx(0.107238, abs=5e-7)
    assert sigma == pytest.approx(0.107422, abs=5e-7)
    assert sigma == 110 / 1024
    assert _smece_arrays(f, y, bandwidth=0.05)[0] == pytest.approx(0.107256, abs=5e-7)
    assert np.mean(np.abs(f - f**1.5)) == pytest.approx(0.098721, abs=5e-7)


# ----------------------------------------------------------------------------- independent restatement


def _dense_smece_sigma(f: np.ndarray, y: np.ndarray, w: np.ndarray, sigma: float) -> float:
    """smECE_sigma from an explicit (E x E) matrix of the reflected, truncated kernel.

    Output node i collects source node k through its images v = k, -k (k >= 1) and
    2(E-1) - k (k <= E-2); offset d = v - i counts when E//2 - (E-1) <= d <= E//2, with
    weight pdf((c - d) h), h = 1/(E-1), c = E//2 - (E-1)/2 (0 for odd E, 1/2 for even E).
    """
    E = max(2000, round(20 / sigma)) // 2 + 1
    M = max(200, round(10 / sigma))
    h = 1.0 / (E - 1)
    c = E // 2 - (E - 1) / 2
    # linear splitting by explicit loop over points
    mass = np.zeros((2, E))
    for fi, yi, wi in zip(f, y, w, strict=True):
        j = min(math.floor(fi * (E - 1)), E - 2)
        share = fi * (E - 1) - j
        for row, v in ((0, wi), (1, wi * (fi - yi))):
            mass[row, j] += v * (1 - share)
            mass[row, j + 1] += v * share
    i = np.arange(E)[:, None]
    k = np.arange(E)[None, :]
    K = np.zeros((E, E))
    for v, ok in ((k, np.ones_like(k, bool)), (-k, k >= 1), (2 * (E - 1) - k, k <= E - 2)):
        d = v - i
        inside = ok & (d >= E // 2 - (E - 1)) & (d <= E // 2)
        K += np.where(inside, np.exp(-0.5 * ((c - d) * h / sigma) ** 2), 0.0)
    K /= sigma * math.sqrt(2 * math.pi)
    sm = mass @ K.T
    t = np.linspace(0, 1, M)
    nodes = np.linspace(0, 1, E)
    dens = np.interp(t, nodes, sm[0]) + 1e-4
    num = np.interp(t, nodes, sm[1])
    return float(np.abs(num).sum() / dens.sum())


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.0098, 0.00999])
def test_equals_dense_matrix_definition(sigma: float) -> None:
    # 0.0098: E = 1021; 0.00999: E = 1002 (even: the kernel sits half a node off)
    f, y = _data(40, 7, "ends")
    w = np.random.default_rng(8).uniform(0.2, 3.0, 40)
    expected = _dense_smece_sigma(f, y, w, sigma)
    assert _smece_arrays(f, y, w, bandwidth=sigma)[0] == pytest.approx(expected, abs=1e-12)


# ----------------------------------------------------------------------------- closed forms


def test_perfect_predictions_give_zero_and_smallest_bandwidth() -> None:
    # confidence 1 and always right: residual 0 everywhere, so smECE_s = 0 < s for every
    # tested s >= 1e-3; the bisection walks down to the bracket [2**-10, 2**-9].
    p = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    y = p.astype(np.int64)
    assert smece(p, y) == 0.0
    assert smece_bandwidth(p, y) == 2.0**-9


@pytest.mark.parametrize("weight", [1.0, 1000.0])
def test_constant_residual_closed_form(weight: float) -> None:
    # one prediction p = 0.5 with label 1: confidence 0.5 (class 0 predicted), wrong, so
    # r_hat = 0.5 delta / (delta + 1e-4) and smECE = 0.5 S / (S + 1e-4 M) with
    # S = sum_t delta(t) = W (M - 1) (a Gaussian of unit mass well inside [0, 1], M = 200).
    # The floor is absolute: the weight (a count) moves the value.
    M = 200
    S = weight * (M - 1)
    expected = 0.5 * S / (S + 1e-4 * M)
    got = smece(np.array([0.5]), np.array([1]), bandwidth=0.05, sample_weight=[weight])
    assert got == pytest.approx(expected, abs=1e-9)


# ----------------------------------------------------------------------------- properties


def test_sample_weights_equal_repetition() -> None:
    rng = np.random.default_rng(9)
    z = 2 * rng.standard_normal((400, 3))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 3, 400)
    w = rng.integers(0, 4, 400)
    rep = np.repeat(np.arange(400), w)
    assert smece_bandwidth(p, y, sample_weight=w) == smece_bandwidth(p[rep], y[rep])
    assert smece(p, y, sample_weight=w) == pytest.approx(smece(p[rep], y[rep]), abs=1e-12)
    for s in (0.003, 0.05):
        assert smece(p, y, sample_weight=w, bandwidth=s) == pytest.approx(
            smece(p[rep], y[rep], bandwidth=s), abs=1e-12
        )


def test_calibrated_sample_is_small_and_miscalibrated_is_not() -> None:
    rng = np.random.default_rng(10)
    p = rng.uniform(0, 1, 20_000)
    y = (rng.random(20_000) < p).astype(np.int64)  # calibrated for P(y=1), so top-label too
    # the null mean of the positive-class SmoothECE here is about 0.011 (20 label draws with
    # relplot: mean 0.0109, max 0.0123): finite-sample noise, not miscalibration
    assert smece(p, y) < 0.015
    assert smece(p, y, lens="top_label") < 0.01
    # underconfident: P(y=1 | p) = (1 + p) / 2 - 1/4, top-label gap (c - 1/2) / 2, mean 0.125;
    # positive-class gap |1/4 - p/2|, mean 0.125 too
    y_bad = (rng.random(20_000) < 0.25 + p / 2).astype(np.int64)
    assert smece(p, y_bad) > 0.1
    assert smece(p, y_bad, lens="top_label") > 0.1
    # P(y=1) = p**2: the top-label gaps cancel at every confidence, the positive-class ones
    # do not (mean |p^2 - p| = 1/6)
    y_sq = (rng.random(20_000) < p**2).astype(np.int64)
    assert smece(p, y_sq, lens="top_label") < 0.02
    assert smece(p, y_sq) > 0.1


def test_reliability_consistency() -> None:
    rng = np.random.default_rng(11)
    z = 2 * rng.standard_normal((1500, 4))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 4, 1500)
    d = smooth_reliability(p, y)
    # direct convolution (curves) and FFT (metric) give the same SmoothECE
    assert d.value == pytest.approx(smece(p, y), abs=1e-12)
    assert d.bandwidth == smece_bandwidth(p, y)
    assert d.t.shape == (max(200, round(10 / d.bandwidth)),)
    np.testing.assert_allclose(d.residual, d.mean_confidence - d.mean_target, atol=1e-12)
    area = _trapezoid(d.density, d.t)
    assert area == pytest.approx(1.0, abs=1e-12)
    assert np.all(d.density >= 0)
    assert d.total_weight == 1500.0
    d2 = smooth_reliability(p, y, bandwidth=0.05, n_points=11)
    assert d2.t.tolist() == pytest.approx(np.linspace(0, 1, 11).tolist())
    assert d2.value == pytest.approx(smece(p, y, bandwidth=0.05), abs=1e-12)


def test_torch_input_returns_tensor() -> None:
    torch = pytest.importorskip("torch")
    f, y = _data(500, 12, "beta")
    p = np.stack([1 - f, f], axis=1)
    lab = (y == 1).astype(np.int64)
    got = smece(torch.tensor(p), torch.tensor(lab))
    assert isinstance(got, torch.Tensor)
    assert float(got) == pytest.approx(smece(p, lab), abs=1e-15)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, float("nan"), float("inf"), "wide", True, 1e-7])
def test_bad_bandwidth_raises(bad: object) -> None:
    p = np.array([0.2, 0.7, 0.9])
    y = np.array([0, 1, 1])
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        smece(p, y, bandwidth=bad)  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        smooth_reliability(p, y, bandwidth=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [1, 0, 2.5, True])
def test_bad_n_points_raises(bad: object) -> None:
    with pytest.raises(CalibrationInputError, match="n_points"):
        smooth_reliability(np.array([0.2, 0.7]), np.array([0, 1]), n_points=bad)  # type: ignore[arg-type]


def test_bad_inputs_raise() -> None:
    with pytest.raises(CalibrationInputError):
        smece(np.array([0.2, 1.7]), np.array([0, 1]))
    with pytest.raises(CalibrationInputError):
        _smece_arrays(np.array([0.2, 0.4]), np.array([1.0]))
    with pytest.raises(CalibrationInputError):
        _smece_arrays(np.array([]), np.array([]))
