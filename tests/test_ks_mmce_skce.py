"""KS, MMCE and SKCE against docs/how-calipers-computes.md §4.4-4.6 and direct O(n^2) definitions."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import calipers as cp
from calipers.metrics._skce import L1ExponentialKernel

CONF = np.array([0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 0.9, 0.95])
CORRECT = np.array([1, 0, 1, 0, 1, 1, 0, 1])
P8 = np.stack([CONF, 1 - CONF], axis=1)  # class 0 is the predicted class
Y8 = np.where(CORRECT == 1, 0, 1)


def test_ks_worked_number_and_tie_order() -> None:
    assert cp.ks_calibration_error(P8, Y8) == pytest.approx(0.1375, abs=1e-12)
    # swapping the two tied 0.9 rows gives the other order: 0.15 (docs/how-calipers-computes.md §4.4)
    swap = np.array([0, 1, 2, 3, 4, 6, 5, 7])
    assert cp.ks_calibration_error(P8[swap], Y8[swap]) == pytest.approx(0.15, abs=1e-12)


def test_mmce_worked_number() -> None:
    assert cp.mmce(P8, Y8) == pytest.approx(0.129348, abs=1e-6)
    assert cp.mmce(P8, Y8, squared=True) == pytest.approx(0.0167309, abs=1e-7)


def test_skce_worked_numbers() -> None:
    assert cp.skce(P8, Y8) == pytest.approx(-0.034368, abs=1e-6)
    assert cp.skce(P8, Y8, estimator="biased") == pytest.approx(0.033600, abs=1e-6)
    assert cp.skce(P8, Y8, estimator="block", block_size=2) == pytest.approx(-0.245167, abs=1e-6)


def _random(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2 * rng.standard_normal((n, k))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 1)  # ties in the confidences
    p = p / p.sum(1, keepdims=True)
    y = rng.integers(0, k, n)
    return p, y


@pytest.mark.parametrize("h", [0.4, 0.05, 2.0])
def test_mmce_equals_direct_double_sum(h: float) -> None:
    p, y = _random(1500, 4, 1)
    r = p.max(1)
    c = (p.argmax(1) == y).astype(float)
    d = c - r
    direct = np.sqrt(d @ np.exp(-np.abs(r[:, None] - r[None, :]) / h) @ d) / len(r)
    assert cp.mmce(p, y, bandwidth=h) == pytest.approx(direct, rel=1e-10)


def test_skce_equals_direct_definition_and_weights_are_repetitions() -> None:
    p, y = _random(300, 3, 2)
    E = np.eye(3)[y] - p
    K = np.exp(-np.abs(p[:, None, :] - p[None, :, :]).sum(-1))
    H = K * (E @ E.T)
    n = len(y)
    assert cp.skce(p, y, estimator="biased") == pytest.approx(H.mean(), rel=1e-10)
    assert cp.skce(p, y) == pytest.approx((H.sum() - np.trace(H)) / (n * (n - 1)), rel=1e-10)
    w = np.random.default_rng(3).integers(1, 4, n)
    rep = np.repeat(np.arange(n), w)
    for est in ("biased", "unbiased"):
        assert cp.skce(p, y, estimator=est, sample_weight=w) == pytest.approx(
            cp.skce(p[rep], y[rep], estimator=est), rel=1e-10
        )


@pytest.mark.parametrize("bw", [0.002, 0.01, 0.3, 1.0, 5.0])
def test_skce_tiles_and_both_kernel_forms_equal_the_direct_sums(
    bw: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # small tiles: ragged row blocks, several column chunks, the diagonal tiles
    from calipers.metrics import _skce as module

    monkeypatch.setattr(module, "_TILE_ROWS", 7)
    monkeypatch.setattr(module, "_TILE_COLS", 50)
    p, y = _random(301, 4, 6)
    p[::3] = np.round(p[::3], 2)  # near-duplicates: kernel values near 1 at small bw
    p /= p.sum(1, keepdims=True)
    E = np.eye(4)[y] - p
    K = np.exp(-cdist(p, p, "cityblock") / bw)
    H = K * (E @ E.T)
    n = len(y)
    kern = L1ExponentialKernel(p, bw)
    assert kern.product_form == (bw > 3 / 700)
    assert cp.skce(p, y, estimator="biased", bandwidth=bw) == pytest.approx(H.mean(), rel=1e-10)
    unbiased = (H.sum() - np.trace(H)) / (n * (n - 1))
    assert cp.skce(p, y, bandwidth=bw) == pytest.approx(unbiased, rel=1e-9, abs=1e-15)


def test_l1_exponential_kernel_product_form_off_the_simplex() -> None:
    # |a - b| = a + b - 2 min(a, b) holds for any reals: rows need not sum to 1
    rng = np.random.default_rng(7)
    p = rng.random((40, 6)) * rng.random((40, 1))
    for bw in (0.05, 0.7):
        kern = L1ExponentialKernel(p, bw)
        assert kern.product_form
        tile = kern.block(slice(3, 17), slice(0, 40)) * np.outer(kern.g[3:17], kern.g)
        direct = np.exp(-np.abs(p[3:17, None, :] - p[None, :, :]).sum(-1) / bw)
        np.testing.assert_allclose(tile, direct, rtol=1e-12, atol=0)


def test_ks_and_mmce_weights_are_repetitions() -> None:
    p, y = _random(400, 5, 4)
    w = np.random.default_rng(5).integers(0, 3, 400)
    rep = np.repeat(np.arange(400), w)
    assert cp.mmce(p, y, sample_weight=w) == pytest.approx(cp.mmce(p[rep], y[rep]), rel=1e-10)
    # KS: repetition keeps tied copies adjacent in the stable order, so the value is the same
    assert cp.ks_calibration_error(p, y, sample_weight=w) == pytest.approx(
        cp.ks_calibration_error(p[rep], y[rep]), rel=1e-10
    )


def test_bad_arguments() -> None:
    with pytest.raises(
        cp.CalibrationInputError, match="bandwidth must be a positive finite number"
    ):
        cp.mmce(P8, Y8, bandwidth=0)
    with pytest.raises(cp.CalibrationInputError, match="estimator must be"):
        cp.skce(P8, Y8, estimator="fast")
    with pytest.raises(cp.CalibrationInputError, match="block_size"):
        cp.skce(P8, Y8, estimator="block", block_size=1)
    with pytest.raises(cp.CalibrationInputError, match="not supported by the block"):
        cp.skce(P8, Y8, estimator="block", sample_weight=np.ones(8))


def test_torch_inputs_give_tensors_with_the_same_values() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor(P8)
    yt = torch.tensor(Y8)
    for f in (cp.ks_calibration_error, cp.mmce, cp.skce):
        out = f(t, yt)
        assert isinstance(out, torch.Tensor) and out.ndim == 0
        assert float(out) == pytest.approx(f(P8, Y8), abs=1e-12)
