"""SKCE on PyTorch tensors (CPU and CUDA) equals the NumPy path, which the O(n^2) tests pin."""

import numpy as np
import pytest

import calipers as cp

torch = pytest.importorskip("torch")
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def _data(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2 * rng.standard_normal((n, k))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    return p, rng.integers(0, k, n)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bw", [0.002, 0.05, 1.0])
def test_torch_equals_numpy_on_ragged_tiles(
    device: str, bw: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.metrics import _skce as module

    monkeypatch.setattr(module, "_TILE_TORCH_CPU", (7, 50))
    monkeypatch.setattr(module, "_TILE_GPU", (9, 40))
    p, y = _data(203, 4, 1)
    w = np.random.default_rng(2).integers(0, 3, 203).astype(float)
    pt = torch.tensor(p, device=device)
    yt = torch.tensor(y, device=device)
    wt = torch.tensor(w, device=device)
    for est in ("unbiased", "biased"):
        got = cp.skce(pt, yt, estimator=est, bandwidth=bw)
        assert isinstance(got, torch.Tensor) and got.device.type == device
        assert float(got) == pytest.approx(cp.skce(p, y, estimator=est, bandwidth=bw), rel=1e-12)
        got_w = cp.skce(pt, yt, estimator=est, bandwidth=bw, sample_weight=wt)
        want_w = cp.skce(p, y, estimator=est, bandwidth=bw, sample_weight=w)
        assert float(got_w) == pytest.approx(want_w, rel=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_float32_logits_and_block_estimator(device: str) -> None:
    p, y = _data(500, 6, 3)
    z = np.log(p).astype(np.float32)
    zt = torch.tensor(z, device=device)
    yt = torch.tensor(y, device=device)
    # float32 logits are soft-maxed in float32 (on their device: CUDA's float32 softmax
    # differs from the CPU's in the last bits), then the sum runs in float64
    want = cp.skce(zt.softmax(1).double().cpu().numpy(), y)
    assert float(cp.skce(zt, yt, logits=True)) == pytest.approx(want, rel=1e-10)
    block = cp.skce(torch.tensor(p, device=device), yt, estimator="block", block_size=5)
    assert isinstance(block, torch.Tensor) and block.device.type == device  # computed there
    assert float(block) == pytest.approx(cp.skce(p, y, estimator="block", block_size=5), rel=1e-12)
