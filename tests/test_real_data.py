"""Real predictions from ../shared/data against the numbers their papers publish.

The data folder is not part of the project: it is looked up in the environment
variable ``CALIPERS_SHARED_DATA`` or at ``<repo>/../shared/data``; every test
here is skipped (with a reason) when it is absent.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import softmax

import calipers as cp
from shared_data import load as _load

# ----------------------------------------------------------------------------- DenseNet-40

# Kull et al. 2019 (README of ../shared/data)
DN_ECE15 = 0.055003
DN_ERROR = 0.0758
DN_NLL_EXACT = 0.430059
DN_NLL_CLIP = 0.428207
DN_BRIER_K = 0.012738
DN_CW_ECE_KULL = 0.114303
KULL_BINS = cp.FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")


@pytest.fixture(scope="module")
def densenet() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = _load("densenet40_c10_test.npz")
    z, y = d["logits"], d["labels"]
    return z, softmax(z, axis=1), y


def test_densenet_shapes(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    assert z.shape == (10000, 10) and y.shape == (10000,)


def test_densenet_ece(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    assert cp.ece(p, y) == pytest.approx(DN_ECE15, abs=1e-6)
    assert cp.ece(p, y, n_bins=15) == pytest.approx(DN_ECE15, abs=1e-6)
    assert cp.ece(z, y, logits=True) == pytest.approx(DN_ECE15, abs=1e-6)


def test_densenet_error_rate(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    assert 1 - cp.accuracy(p, y) == pytest.approx(DN_ERROR, abs=1e-12)
    assert 1 - cp.accuracy(z, y, logits=True) == pytest.approx(DN_ERROR, abs=1e-12)


def test_densenet_nll(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    assert cp.nll(p, y) == pytest.approx(DN_NLL_EXACT, abs=1e-6)
    assert cp.nll(z, y, logits=True) == pytest.approx(DN_NLL_EXACT, abs=1e-6)
    assert cp.nll(p, y, clip=1e-15) == pytest.approx(DN_NLL_CLIP, abs=1e-6)
    assert cp.nll(z, y, logits=True, clip=1e-15) == pytest.approx(DN_NLL_CLIP, abs=1e-6)


def test_densenet_tiny_true_class_probability(densenet) -> None:  # type: ignore[no-untyped-def]
    # README: one test sample has a true-class probability of about 9e-24
    z, p, y = densenet
    py = p[np.arange(len(y)), y]
    assert 1e-24 < py.min() < 1e-22


def test_densenet_brier_over_k(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    assert cp.brier(p, y, reduction="mean") == pytest.approx(DN_BRIER_K, abs=1e-6)
    assert cp.brier(z, y, reduction="mean", logits=True) == pytest.approx(DN_BRIER_K, abs=1e-6)
    assert cp.brier(p, y) == pytest.approx(10 * DN_BRIER_K, abs=1e-5)


def test_densenet_kull_classwise_ece(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    got = cp.classwise_ece(p, y, reduction="sum", estimator=KULL_BINS)
    assert got == pytest.approx(DN_CW_ECE_KULL, abs=1e-6)
    got_z = cp.classwise_ece(z, y, reduction="sum", estimator=KULL_BINS, logits=True)
    assert got_z == pytest.approx(DN_CW_ECE_KULL, abs=1e-6)


def test_densenet_float32(densenet) -> None:  # type: ignore[no-untyped-def]
    z, p, y = densenet
    p32 = p.astype(np.float32)
    e64 = cp.ece(p, y)
    assert abs(cp.ece(p32, y) - e64) < 1e-6
    assert abs(cp.ece(z.astype(np.float32), y, logits=True) - e64) < 1e-6
    assert cp.ece(p32, y) == pytest.approx(DN_ECE15, abs=2e-6)
    assert cp.nll(p32, y, clip=1e-15) == pytest.approx(DN_NLL_CLIP, abs=1e-5)
    assert 1 - cp.accuracy(p32, y) == pytest.approx(DN_ERROR, abs=1e-12)


# ----------------------------------------------------------------------------- Niamey CORP

# reliabilitydiag (Dimitriadis, Gneiting & Jordan 2021): BS, MCB, DSC, UNC
NIAMEY = {
    "Logistic": ("0.206", "0.0171", "0.0555", "0.244"),
    "EMOS": ("0.232", "0.0183", "0.0305", "0.244"),
    "ENS": ("0.266", "0.0661", "0.0441", "0.244"),
    "EPC": ("0.234", "0.0223", "0.0323", "0.244"),
}


@pytest.mark.parametrize("method", sorted(NIAMEY))
def test_niamey_corp_table(method: str) -> None:
    d = _load(f"niamey2016_{method}.npz")
    p, y = d["p"], d["y"]
    assert p.shape == (92,)
    res = cp.corp_decomposition(p, y)
    got = (res.score, res.miscalibration, res.discrimination, res.uncertainty)
    # printed to 3 significant digits
    assert tuple(f"{v:.3g}" for v in got) == NIAMEY[method]
    for v, printed in zip(got, NIAMEY[method], strict=True):
        assert v == pytest.approx(float(printed), abs=6e-4)
    assert res.score == pytest.approx(np.mean((p - y) ** 2), abs=1e-14)
    assert res.score == pytest.approx(cp.brier(p, y), abs=1e-14)


# ----------------------------------------------------------------------------- label errors


def test_20news_exact_nll_is_infinite() -> None:
    d = _load("labelerrors_20news.npz")
    P, y = d["probs"], d["labels"]
    assert P.shape == (7532, 20)
    assert int(np.sum(P[np.arange(len(y)), y] == 0)) == 61
    assert cp.nll(P, y) == math.inf
    assert math.isfinite(cp.nll(P, y, clip=1e-15))


def test_20news_accuracy_and_confidence() -> None:
    d = _load("labelerrors_20news.npz")
    P, y = d["probs"], d["labels"]
    assert cp.accuracy(P, y) == pytest.approx(0.923, abs=5e-4)
    _, conf = cp.check_predictions(P, y).top_label()
    assert float(np.mean(conf)) == pytest.approx(0.722, abs=5e-4)
    # under-confident: ECE at least the accuracy-confidence gap
    assert cp.ece(P, y) >= 0.923 - 0.722 - 1e-3


def test_imdb_sum_error_within_2e5_and_accepted_by_default() -> None:
    d = _load("labelerrors_imdb.npz")
    P, y = d["probs"], d["labels"]
    assert P.shape == (25000, 2)
    err = np.max(np.abs(P.sum(axis=1) - 1))
    assert 1e-5 < err < 2.1e-5
    checked = cp.check_predictions(P, y)  # accepted by default, no clip or renormalise
    assert checked.probs is P
    assert 0 <= cp.ece(P, y) <= 1


def test_imdb_accepted_with_clip() -> None:
    d = _load("labelerrors_imdb.npz")
    P, y = d["probs"], d["labels"]
    checked = cp.check_predictions(P, y, clip=True)
    assert checked.probs.max() <= 1.0


def test_cifar10_label_errors_loads_and_validates() -> None:
    d = _load("labelerrors_cifar10.npz")
    P, y = d["probs"], d["labels"]
    assert P.shape == (10000, 10)
    acc = cp.accuracy(P, y)
    assert acc == pytest.approx(np.mean(P.argmax(1) == y), abs=1e-15)
    assert 0 <= cp.ece(P, y) <= 1
