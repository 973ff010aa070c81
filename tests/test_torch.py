"""PyTorch tensors give the NumPy numbers, on the input's device, with gradients."""

from __future__ import annotations

import numpy as np
import pytest

from shared_data import load
from toy_data import NIXON_P, NIXON_Y

torch = pytest.importorskip("torch")

import calipers as cp  # noqa: E402

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
DTYPES = [torch.float32, torch.float64]
NP_DTYPE = {torch.float32: np.float32, torch.float64: np.float64}


# (metric, kwargs, docs/how-calipers-computes.md §3.4 value or a hand value)
NIXON_CASES = [
    (cp.ece, {"n_bins": 5}, 0.176667),
    (cp.sce, {"n_bins": 5}, 0.095556),
    (cp.ace, {"n_bins": 2}, 0.173333),
    (cp.tace, {"n_bins": 2, "threshold": 0.01}, 0.177167),
    (cp.rmsce, {"n_bins": 2}, 0.326769),
    # class-wise ECE, 5 (lo, hi] bins, mean over classes: by hand 0.217778
    (cp.classwise_ece, {"n_bins": 5}, (0.22 + 0.19 + 0.243333333333) / 3),
    (cp.nll, {}, -np.mean(np.log([0.6, 0.4, 0.8, 0.3, 0.98, 0.33]))),
    (
        cp.brier,
        {},
        np.mean(np.sum((NIXON_P - np.eye(3)[NIXON_Y]) ** 2, axis=1)),
    ),
    (cp.accuracy, {}, 0.5),
]
IDS = [f.__name__ for f, _, _ in NIXON_CASES]


def _check_tensor(r, device: str) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(r, torch.Tensor)
    assert r.ndim == 0
    assert r.device.type == torch.device(device).type


def test_classwise_hand_value() -> None:
    # the hand value used above, in plain NumPy: per class, (lo, hi] bins of width 1/5
    P, y = NIXON_P, NIXON_Y
    tot = 0.0
    for k in range(3):
        p, t = P[:, k], (y == k).astype(float)
        bins = np.clip(np.ceil(np.round(p * 5, 12)) - 1, 0, 4)
        for b in np.unique(bins):
            m = bins == b
            tot += m.mean() * abs(p[m].mean() - t[m].mean()) / 3
    assert tot == pytest.approx((0.22 + 0.19 + 0.243333333333) / 3, abs=1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("metric", "kwargs", "expected"), NIXON_CASES, ids=IDS)
def test_nixon_toy_float64(device: str, metric, kwargs, expected) -> None:  # type: ignore[no-untyped-def]
    T = torch.tensor(NIXON_P, dtype=torch.float64, device=device)
    Y = torch.tensor(NIXON_Y, device=device)
    r = metric(T, Y, **kwargs)
    _check_tensor(r, device)
    assert float(r) == pytest.approx(expected, abs=1e-6)
    assert float(r) == pytest.approx(metric(NIXON_P, NIXON_Y, **kwargs), abs=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("metric", "kwargs", "expected"), NIXON_CASES, ids=IDS)
def test_nixon_toy_float32_equals_numpy_float32(device: str, metric, kwargs, expected) -> None:  # type: ignore[no-untyped-def]
    P32 = NIXON_P.astype(np.float32)
    T = torch.tensor(P32, device=device)
    r = metric(T, torch.tensor(NIXON_Y, device=device), **kwargs)
    _check_tensor(r, device)
    assert float(r) == pytest.approx(metric(P32, NIXON_Y, **kwargs), abs=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("B", "rule", "expected"), [(5, "right", 0.17333), (5, "left", 0.30667), (10, "right", 0.30667)]
)
def test_edge_table_in_torch(device: str, dtype, B: int, rule: str, expected: float) -> None:  # type: ignore[no-untyped-def]
    conf = np.array([0.6, 0.4, 0.8, 0.5, 1.0, 0.34])
    correct = np.array([1, 0, 1, 0, 1, 0])
    P = np.stack([conf, (1 - conf) / 2, (1 - conf) / 2], axis=1)
    y = np.where(correct == 1, 0, 1)
    T = torch.tensor(P, dtype=dtype, device=device)
    r = cp.ece(T, torch.tensor(y, device=device), n_bins=B, edge_rule=rule)
    _check_tensor(r, device)
    assert float(r) == pytest.approx(expected, abs=5e-6)
    ids, _ = cp.EqualWidth(B, rule).assign(T[:, 0])
    ids_np, _ = cp.EqualWidth(B, rule).assign(P[:, 0])
    assert ids.tolist() == np.asarray(ids_np).tolist()


# ----------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def densenet() -> tuple[np.ndarray, np.ndarray]:
    f = load("densenet40_c10_test.npz")
    return f["logits"], f["labels"]


KULL_BINS = cp.FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")
# (name, function, published Kull et al. 2019 value); error rate 7.58 % -> accuracy 0.9242
DN_CASES = [
    ("ece", lambda p, y, **k: cp.ece(p, y, **k), 0.055003),
    (
        "classwise",
        lambda p, y, **k: cp.classwise_ece(p, y, reduction="sum", estimator=KULL_BINS, **k),
        0.114303,
    ),
    ("nll_clip", lambda p, y, **k: cp.nll(p, y, clip=1e-15, **k), 0.428207),
    ("brier_k", lambda p, y, **k: cp.brier(p, y, reduction="mean", **k), 0.012738),
    ("accuracy", lambda p, y, **k: cp.accuracy(p, y, **k), 1 - 0.0758),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "fn", "published"), DN_CASES, ids=[c[0] for c in DN_CASES])
def test_densenet_through_torch(densenet, device, dtype, name, fn, published) -> None:  # type: ignore[no-untyped-def]
    z, y = densenet
    zt = torch.tensor(z, dtype=dtype, device=device)
    p = torch.softmax(zt, dim=1)
    r = fn(p, torch.tensor(y, device=device))
    _check_tensor(r, device)
    # equal to the NumPy result on the same (dtype-rounded) probabilities
    ref = fn(p.cpu().numpy(), y)
    assert float(r) == pytest.approx(ref, abs=1e-9)
    # and to the published number
    tol = 1e-6 if dtype == torch.float64 else 1e-5
    assert float(r) == pytest.approx(published, abs=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_densenet_exact_nll_from_torch_logits(densenet, device) -> None:  # type: ignore[no-untyped-def]
    z, y = densenet
    zt = torch.tensor(z, dtype=torch.float64, device=device)
    r = cp.nll(zt, torch.tensor(y, device=device), logits=True)
    _check_tensor(r, device)
    assert float(r) == pytest.approx(0.430059, abs=1e-6)
    r_ece = cp.ece(zt, torch.tensor(y, device=device), logits=True)
    assert float(r_ece) == pytest.approx(0.055003, abs=1e-6)


# ----------------------------------------------------------------------------- autograd


def test_nll_logits_gradient() -> None:
    g = torch.Generator().manual_seed(0)
    z = torch.randn(7, 4, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.tensor([0, 3, 1, 1, 2, 0, 3])
    assert torch.autograd.gradcheck(lambda z: cp.nll(z, y, logits=True), (z,))
    # analytic gradient: (softmax(z) - onehot) / n
    cp.nll(z, y, logits=True).backward()
    expected = (torch.softmax(z.detach(), 1) - torch.nn.functional.one_hot(y, 4)) / 7
    torch.testing.assert_close(z.grad, expected.to(torch.float64), rtol=1e-12, atol=1e-14)


def test_nll_binary_logits_gradient() -> None:
    g = torch.Generator().manual_seed(1)
    z = torch.randn(9, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1, 1])
    assert torch.autograd.gradcheck(lambda z: cp.nll(z, y, logits=True), (z,))


def test_brier_of_softmax_gradient() -> None:
    g = torch.Generator().manual_seed(2)
    z = torch.randn(6, 3, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.tensor([0, 2, 1, 1, 0, 2])
    assert torch.autograd.gradcheck(lambda z: cp.brier(torch.softmax(z, 1), y), (z,))


def test_nll_of_probs_gradient() -> None:
    g = torch.Generator().manual_seed(3)
    z = torch.randn(5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.tensor([0, 2, 1, 1, 0])
    assert torch.autograd.gradcheck(lambda z: cp.nll(torch.softmax(z, 1), y), (z,))


def test_central_differences_by_hand() -> None:
    z0 = torch.tensor([[0.3, -1.2, 0.8], [2.0, 0.1, -0.5]], dtype=torch.float64)
    y = torch.tensor([2, 0])
    z = z0.clone().requires_grad_(True)
    cp.brier(torch.softmax(z, 1), y).backward()
    h = 1e-6
    fd = torch.zeros_like(z0)
    for i in range(2):
        for j in range(3):
            zp, zm = z0.clone(), z0.clone()
            zp[i, j] += h
            zm[i, j] -= h
            fp = float(cp.brier(torch.softmax(zp, 1), y))
            fm = float(cp.brier(torch.softmax(zm, 1), y))
            fd[i, j] = (fp - fm) / (2 * h)
    torch.testing.assert_close(z.grad, fd, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------------------- ties and labels


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_ties_lowest_index(device: str, dtype) -> None:  # type: ignore[no-untyped-def]
    P = np.array([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [0.3, 0.3, 0.4], [0.25, 0.25, 0.5]])
    P[3] = [1 / 3, 1 / 3, 1 / 3]
    T = torch.tensor(P, dtype=dtype, device=device)
    pred_t, conf_t = cp.check_predictions(T, [0, 0, 0, 0]).top_label()
    pred_n, _ = cp.check_predictions(P.astype(NP_DTYPE[dtype]), [0, 0, 0, 0]).top_label()
    assert pred_t.tolist() == [0, 1, 2, 0]
    assert np.asarray(pred_n).tolist() == [0, 1, 2, 0]
    assert pred_t.device.type == torch.device(device).type
    y = torch.tensor([0, 1, 2, 0], device=device)
    assert float(cp.accuracy(T, y)) == 1.0
    assert float(cp.accuracy(T, torch.tensor([1, 2, 2, 1], device=device))) == 0.25
    assert float(cp.ece(T, y, n_bins=5)) == pytest.approx(
        cp.ece(P.astype(NP_DTYPE[dtype]), [0, 1, 2, 0], n_bins=5), abs=1e-12
    )


def test_numpy_labels_with_torch_probs() -> None:
    T = torch.tensor(NIXON_P, dtype=torch.float64)
    for metric, kwargs, expected in NIXON_CASES:
        r = metric(T, NIXON_Y, **kwargs)
        _check_tensor(r, "cpu")
        assert float(r) == pytest.approx(expected, abs=1e-6)
        r_list = metric(T, NIXON_Y.tolist(), **kwargs)
        assert float(r_list) == float(r)


def test_torch_labels_with_numpy_probs() -> None:
    r = cp.ece(NIXON_P, torch.tensor(NIXON_Y), n_bins=5)
    assert isinstance(r, float)
    assert r == pytest.approx(0.176667, abs=1e-6)


def test_torch_validation_errors() -> None:
    T = torch.tensor(NIXON_P, dtype=torch.float64)
    T[1, 2] = float("nan")
    with pytest.raises(cp.CalibrationInputError, match=r"non-finite.*row 1, column 2"):
        cp.ece(T, NIXON_Y)
    T2 = torch.tensor(NIXON_P, dtype=torch.float64)
    T2[3, 1] = 0.6  # row 3 sums to 1.1
    with pytest.raises(cp.CalibrationInputError, match=r"row 3 of probs sums to 1\.1"):
        cp.ece(T2, NIXON_Y)
    with pytest.raises(
        cp.CalibrationInputError, match=r"labels must be in \[0, 3\); found 3 at row 5"
    ):
        cp.ece(torch.tensor(NIXON_P), torch.tensor([0, 1, 0, 2, 0, 3]))


def test_float32_validation_keeps_tensor() -> None:
    T = torch.tensor(NIXON_P, dtype=torch.float32)
    P = cp.check_predictions(T, NIXON_Y)
    assert P.probs is T
    assert P.labels.dtype == torch.int64


@pytest.mark.parametrize("closed", ["left", "right"])
def test_fixed_edges_same_bins_in_torch_and_numpy_float32(closed: str) -> None:
    # scores that sit on the float32-rounded Kull edges j/14: the bin of a float32
    # score must not depend on whether it arrives as a NumPy array or a tensor
    edges = np.linspace(0, 1, 15)
    fe = cp.FixedEdges(np.r_[edges, 1.0] if closed == "left" else edges, closed=closed)
    s32 = edges[1:-1].astype(np.float32)
    ids_np, _ = fe.assign(s32)
    ids_t, _ = fe.assign(torch.from_numpy(s32))
    assert ids_t.tolist() == np.asarray(ids_np).tolist()


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_label_tensors_checked_in_place(dtype: str) -> None:
    """Integer/boolean label tensors are checked on their device and give NumPy's numbers."""
    rng = np.random.default_rng(5)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(dtype)
    yt = torch.from_numpy(y)
    got = cp.ece(torch.from_numpy(p), yt)
    assert float(got) == pytest.approx(cp.ece(p, y.astype(int)), rel=1e-12, abs=1e-15)
    assert got.device == yt.device
    k3 = rng.dirichlet(np.ones(3), size=200)
    if dtype != "bool":
        y3 = torch.from_numpy(rng.integers(0, 3, 200).astype(dtype))
        assert float(cp.ece(torch.from_numpy(k3), y3)) == pytest.approx(
            cp.ece(k3, y3.numpy().astype(int)), rel=1e-12
        )


@pytest.mark.parametrize("bad, row", [(-1, 7), (3, 11)])
def test_out_of_range_label_tensor_named(bad: int, row: int) -> None:
    """A label outside [0, k) in a tensor still gets the message naming its row."""
    p = torch.full((20, 3), 1 / 3, dtype=torch.float64)
    y = torch.zeros(20, dtype=torch.int64)
    y[row] = bad
    with pytest.raises(
        cp.CalibrationInputError, match=rf"labels must be in \[0, 3\); found {bad} at row {row}"
    ):
        cp.ece(p, y)


def test_non_finite_logit_tensor_named() -> None:
    z = torch.zeros((5, 3))
    z[3, 1] = float("nan")
    with pytest.raises(cp.CalibrationInputError, match=r"logits contain a non-finite value"):
        cp.ece(z, torch.zeros(5, dtype=torch.int64), logits=True)
