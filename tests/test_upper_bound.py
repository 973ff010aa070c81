"""Calibration upper bound, RBS and Prop. 4.5 (Gruber & Buettner (2022) §4) on populations with a known law.

A "population" is a finite set of atoms x_a with probability w_a, prediction
f_a and true conditional pi_a = P(Y | X = x_a). Expanding it into rows (a, k)
with sample_weight w_a * pi_ak makes every weighted mean an exact expectation,
so the upper bound computed by calipers is the population U_S(f), and the
population calibration errors are computed here by hand from the known law.
"""

import numpy as np
import pytest

import calipers as cp
from calipers.metrics.upper_bound import calibration_upper_bound, rbs, recalibration_improvement


def _rows(
    f: np.ndarray, w: np.ndarray, pi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand atoms into weighted rows: (prediction, label, weight = P(atom, label))."""
    A, K = pi.shape
    probs = np.repeat(f, K, axis=0)
    labels = np.tile(np.arange(K), A)
    weight = (w[:, None] * pi).reshape(-1)
    return probs, labels, weight


def _groups(f: np.ndarray) -> np.ndarray:
    """Index of the distinct prediction vector of each atom (P(Y | f) pools equal f)."""
    _, inv = np.unique(np.round(f, 14), axis=0, return_inverse=True)
    return inv.reshape(-1)


def _cond(f: np.ndarray, w: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """P(Y | f(X)) at every atom, by hand from the law."""
    g = _groups(f)
    out = np.empty_like(pi)
    for v in np.unique(g):
        m = g == v
        out[m] = (w[m, None] * pi[m]).sum(0) / w[m].sum()
    return out


def ce_brier(f: np.ndarray, w: np.ndarray, pi: np.ndarray) -> float:
    """Population CE_Brier = E||E[Y | f] - f||^2."""
    c = _cond(f, w, pi)
    return float(np.sum(w * ((c - f) ** 2).sum(1)))


def ce_log(f: np.ndarray, w: np.ndarray, pi: np.ndarray) -> float:
    """Population CE_log = E[KL(P(Y | f) || f)]."""
    c = _cond(f, w, pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(c > 0, c * np.log(c / f), 0.0)
    return float(np.sum(w * t.sum(1)))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _population(seed: int, A: int = 12, K: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(A, K)) * 2
    pi = _softmax(z)  # the truth
    f = _softmax(1.7 * z + rng.normal(scale=0.3, size=(A, K)))  # overconfident, distinct atoms
    w = rng.dirichlet(np.ones(A))
    return f, w, pi


# ---------------------------------------------------------------- closed forms by hand


def test_closed_forms_by_hand() -> None:
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.5, 0.4]])
    y = np.array([0, 2])
    # (0.09 + 0.04 + 0.01) and (0.01 + 0.25 + 0.36)
    assert calibration_upper_bound(P, y) == pytest.approx((0.14 + 0.62) / 2, abs=1e-15)
    assert rbs(P, y) == pytest.approx(np.sqrt(0.38), abs=1e-15)
    assert calibration_upper_bound(P, y, score="log") == pytest.approx(
        -(np.log(0.7) + np.log(0.4)) / 2, abs=1e-15
    )
    # weights: (3 * 0.14 + 1 * 0.62) / 4
    assert calibration_upper_bound(P, y, sample_weight=[3, 1]) == pytest.approx(
        (3 * 0.14 + 0.62) / 4, abs=1e-15
    )
    # logits: the log score is computed exactly from them
    z = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]])
    lse = np.log(np.exp(z).sum(1))
    assert calibration_upper_bound(z, y, score="log", logits=True) == pytest.approx(
        np.mean(lse - z[[0, 1], y]), abs=1e-14
    )
    # binary 1-D input: the binary Brier score mean (p - y)^2
    assert calibration_upper_bound(np.array([0.2, 0.9]), [0, 0]) == pytest.approx(
        (0.04 + 0.81) / 2, abs=1e-15
    )
    # the bound is exactly 0 for a perfect, confident model (entropy 0 at the vertices)
    assert calibration_upper_bound(np.eye(3), [0, 1, 2]) == 0.0
    assert calibration_upper_bound(np.eye(3), [0, 1, 2], score="log") == 0.0


def test_improvement_by_hand_and_root() -> None:
    before = np.array([[0.9, 0.1], [0.9, 0.1]])
    after = np.array([[0.6, 0.4], [0.6, 0.4]])
    y = np.array([0, 1])
    assert recalibration_improvement(before, after, y) == pytest.approx(0.52 - 0.82, abs=1e-15)
    assert recalibration_improvement(before, after, y, root=True) == pytest.approx(
        np.sqrt(0.52) - np.sqrt(0.82), abs=1e-15
    )
    nll_b = -(np.log(0.9) + np.log(0.1)) / 2
    nll_a = -(np.log(0.6) + np.log(0.4)) / 2
    assert recalibration_improvement(before, after, y, score="log") == pytest.approx(
        nll_a - nll_b, abs=1e-15
    )


def test_bad_input() -> None:
    with pytest.raises(cp.CalibrationInputError, match="score"):
        calibration_upper_bound([[0.5, 0.5]], [0], score="spherical")  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="same shape"):
        recalibration_improvement([[0.5, 0.5]], [[0.5, 0.3, 0.2]], [0])
    with pytest.raises(cp.CalibrationInputError):
        rbs([[0.5, 0.6]], [0])


# ---------------------------------------------------------------- Theorem 4.3 / Prop. 4.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_upper_bound_dominates_true_ce_and_gap_is_entropy(seed: int) -> None:
    f, w, pi = _population(seed)
    probs, labels, sw = _rows(f, w, pi)
    U = calibration_upper_bound(probs, labels, sample_weight=sw)
    CE = ce_brier(f, w, pi)
    assert U >= CE
    # U - CE = E[g(P(Y|f))] with g(Q) = 1 - ||Q||^2 (Lemma 4.1)
    assert U - CE == pytest.approx(float(np.sum(w * (1 - (pi**2).sum(1)))), abs=1e-12)
    Ul = calibration_upper_bound(probs, labels, score="log", sample_weight=sw)
    CEl = ce_log(f, w, pi)
    assert Ul >= CEl
    assert Ul - CEl == pytest.approx(float(-np.sum(w * (pi * np.log(pi)).sum(1))), abs=1e-12)


@pytest.mark.parametrize("T", [0.5, 1.3, 2.5])
@pytest.mark.parametrize("score", ["brier", "log"])
def test_prop_4_5_injective_map_difference_is_exact(T: float, score: str) -> None:
    f, w, pi = _population(3)
    hf = _softmax(np.log(f) / T)  # temperature scaling: injective on the open simplex
    assert len(np.unique(_groups(hf))) == len(f)
    probs, labels, sw = _rows(f, w, pi)
    probs_h, _, _ = _rows(hf, w, pi)
    d_upper = recalibration_improvement(probs, probs_h, labels, score=score, sample_weight=sw)
    ce = ce_brier if score == "brier" else ce_log
    d_true = ce(hf, w, pi) - ce(f, w, pi)
    assert d_upper == pytest.approx(d_true, abs=1e-12)
    # and the order of two injective maps is the order of their CEs (second claim)
    hf2 = _softmax(np.log(f) / (T + 0.7))
    probs_h2, _, _ = _rows(hf2, w, pi)
    u1 = calibration_upper_bound(probs_h, labels, score=score, sample_weight=sw)
    u2 = calibration_upper_bound(probs_h2, labels, score=score, sample_weight=sw)
    assert (u1 > u2) == (ce(hf, w, pi) > ce(hf2, w, pi))


def test_prop_4_5_fails_for_a_non_injective_map() -> None:
    f, w, pi = _population(4)
    v = (w[:, None] * f).sum(0)  # h maps every prediction to one vector
    hf = np.tile(v, (len(f), 1))
    probs, labels, sw = _rows(f, w, pi)
    probs_h, _, _ = _rows(hf, w, pi)
    d_upper = recalibration_improvement(probs, probs_h, labels, sample_weight=sw)
    d_true = ce_brier(hf, w, pi) - ce_brier(f, w, pi)
    # the difference of upper bounds also carries the lost sharpness:
    # E[g(P(Y|h f))] - E[g(P(Y|f))] = (1 - ||E pi||^2) - E(1 - ||pi||^2) > 0
    ybar = (w[:, None] * pi).sum(0)
    lost = (1 - ybar @ ybar) - float(np.sum(w * (1 - (pi**2).sum(1))))
    assert lost > 0.05
    assert d_upper - d_true == pytest.approx(lost, abs=1e-12)
    assert abs(d_upper - d_true) > 0.05


def test_gap_vanishes_as_accuracy_tends_to_one() -> None:
    # Theorem 4.3, second part: pi_a = (1 - eps) e_{k_a} + eps / K, predictions
    # miscalibrated but with the same arg-max; accuracy -> 1 as eps -> 0.
    rng = np.random.default_rng(5)
    A, K = 9, 3
    k = np.arange(A) % K
    f = _softmax(3 * np.eye(K)[k] + rng.normal(scale=0.5, size=(A, K)))
    f = f[np.argsort(-f.max(1))]  # keep atoms distinct
    k = f.argmax(1)
    w = rng.dirichlet(np.ones(A))
    gaps, accs = [], []
    for eps in [0.5, 0.2, 0.05, 0.01, 1e-3, 1e-4]:
        pi = (1 - eps) * np.eye(K)[k] + eps / K
        probs, labels, sw = _rows(f, w, pi)
        gaps.append(calibration_upper_bound(probs, labels, sample_weight=sw) - ce_brier(f, w, pi))
        accs.append(cp.accuracy(probs, labels, sample_weight=sw))
    assert np.all(np.diff(accs) > 0) and accs[-1] > 0.9999
    assert np.all(np.diff(gaps) < 0)
    assert gaps[-1] < 2e-4 and gaps[0] > 0.3


def test_rbs_is_root_of_upper_bound_and_seed004_binary_convention() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=50)
    y = (rng.uniform(size=50) < p).astype(int)
    two = np.stack([1 - p, p], axis=1)
    # Gruber & Buettner (2022) sums over the two softmax columns: twice the binary score
    assert rbs(two, y) == pytest.approx(np.sqrt(2 * np.mean((p - y) ** 2)), rel=1e-13)
    assert rbs(p, y) == pytest.approx(np.sqrt(np.mean((p - y) ** 2)), rel=1e-13)


def test_torch_input_stays_differentiable() -> None:
    torch = pytest.importorskip("torch")
    z = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 2])
    u = calibration_upper_bound(z, y, logits=True)
    assert isinstance(u, torch.Tensor)
    u.backward()
    assert z.grad is not None
    p = torch.softmax(z.detach(), 1).numpy()
    assert float(u.detach()) == pytest.approx(calibration_upper_bound(p, y.numpy()), rel=1e-12)
    assert float(rbs(z, y, logits=True).detach()) == pytest.approx(
        np.sqrt(float(u.detach())), rel=1e-12
    )
