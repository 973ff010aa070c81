"""Worked numbers from docs/how-calipers-computes.md (and the papers) and hand computations.

Expected values come from the conventions tables (computed there with ports of
the reference code) or are computed here by hand with plain NumPy from the
formula; none of them was printed by calipers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import logsumexp

import calipers as cp
from toy_data import NIXON_P, NIXON_Y

# ----------------------------------------------------------------------------- §2 edge table

EDGE_CONF = ("0.6", "0.4", "0.8", "0.5", "1.0", "0.34")
EDGE_CORRECT = np.array([1, 0, 1, 0, 1, 0])
DTYPES = [np.float64, np.float32, np.float16]
# docs/how-calipers-computes.md §2: Guo (lo, hi] column and TF [lo, hi) column
GUO = {5: 0.17333, 10: 0.30667, 15: 0.30667}
TF = {5: 0.30667, 10: 0.30667, 15: 0.30667}


def _exact_bin(c: str, B: int, rule: str) -> int:
    """Bin of the decimal ``c`` under exact rational arithmetic with edges j/B."""
    x = Fraction(c) * B
    if rule == "right":  # (lo, hi], 0 in the first bin
        j = math.ceil(x) - 1
    else:  # [lo, hi), 1 in the last bin
        j = math.floor(x)
    return min(max(j, 0), B - 1)


def _edge_problem(dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c64 = np.array([float(c) for c in EDGE_CONF])
    conf = c64.astype(dtype)
    rest = ((1 - c64) / 2).astype(dtype)
    P = np.stack([conf, rest, rest], axis=1)
    y = np.where(EDGE_CORRECT == 1, 0, 1)
    return P, y, conf


def _hand_ece(conf: np.ndarray, correct: np.ndarray, bins: np.ndarray) -> float:
    conf = conf.astype(np.float64)
    total = 0.0
    for b in np.unique(bins):
        m = bins == b
        total += m.sum() / len(conf) * abs(conf[m].mean() - correct[m].mean())
    return total


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B", [5, 10, 15])
@pytest.mark.parametrize("rule", ["right", "left"])
def test_edge_table_bins_are_exact_in_every_dtype(dtype: type, B: int, rule: str) -> None:
    _, _, conf = _edge_problem(dtype)
    expected = [_exact_bin(c, B, rule) for c in EDGE_CONF]
    ids, nb = cp.EqualWidth(B, edge_rule=rule).assign(conf)
    assert nb == B
    assert np.asarray(ids).tolist() == expected


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B", [5, 10, 15])
@pytest.mark.parametrize("rule", ["right", "left"])
def test_edge_table_ece(dtype: type, B: int, rule: str) -> None:
    P, y, conf = _edge_problem(dtype)
    assert P.dtype == dtype
    got = cp.ece(P, y, n_bins=B, edge_rule=rule)
    table = (GUO if rule == "right" else TF)[B]
    # the table value, to its printed precision (float16 stores 0.6 as 0.60009765625)
    tol = 5e-6 if dtype != np.float16 else 2e-4
    assert got == pytest.approx(table, abs=tol)
    # and exactly the hand value from the exact bins and the stored confidences
    bins = np.array([_exact_bin(c, B, rule) for c in EDGE_CONF])
    assert got == pytest.approx(_hand_ece(conf, EDGE_CORRECT, bins), abs=1e-12)


def test_edge_table_guo_default_rule_is_right() -> None:
    P, y, _ = _edge_problem(np.float64)
    assert cp.ece(P, y, n_bins=5) == pytest.approx(0.17333, abs=5e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B", [1, 2, 3, 5, 7, 10, 15, 20])
def test_equal_width_exact_edges_and_endpoints(dtype: type, B: int) -> None:
    j = np.arange(B + 1)
    edges = (j / B).astype(dtype)  # j/B correctly rounded to the dtype
    right, nb = cp.EqualWidth(B, "right").assign(edges)
    left, _ = cp.EqualWidth(B, "left").assign(edges)
    assert nb == B
    # (lo, hi]: 0 -> first bin, j/B -> bin j-1, 1 -> last bin
    assert np.asarray(right).tolist() == [0] + list(range(B))
    # [lo, hi): j/B -> bin j, 1 -> last bin
    assert np.asarray(left).tolist() == list(range(B)) + [B - 1]
    # one ulp either side of an interior edge moves to the neighbouring bin consistently
    if B > 1:
        inner = edges[1:-1]
        up = np.nextafter(inner, np.array(2, dtype=dtype))
        down = np.nextafter(inner, np.array(-1, dtype=dtype))
        jj = np.arange(1, B)
        assert np.asarray(cp.EqualWidth(B, "right").assign(up)[0]).tolist() == jj.tolist()
        assert np.asarray(cp.EqualWidth(B, "right").assign(down)[0]).tolist() == (jj - 1).tolist()
        assert np.asarray(cp.EqualWidth(B, "left").assign(up)[0]).tolist() == jj.tolist()
        assert np.asarray(cp.EqualWidth(B, "left").assign(down)[0]).tolist() == (jj - 1).tolist()


@pytest.mark.parametrize("rule", ["right", "left"])
def test_equal_width_zero_and_one(rule: str) -> None:
    ids, _ = cp.EqualWidth(15, rule).assign(np.array([0.0, 1.0, 0.0, 1.0]))
    assert np.asarray(ids).tolist() == [0, 14, 0, 14]


# ----------------------------------------------------------------------------- §3.4 Nixon toy


def test_nixon_toy_ece() -> None:
    assert cp.ece(NIXON_P, NIXON_Y, n_bins=5) == pytest.approx(0.176667, abs=1e-6)


def test_nixon_toy_sce() -> None:
    assert cp.sce(NIXON_P, NIXON_Y, n_bins=5) == pytest.approx(0.095556, abs=1e-6)


def test_nixon_toy_ace() -> None:
    assert cp.ace(NIXON_P, NIXON_Y, n_bins=2) == pytest.approx(0.173333, abs=1e-6)


def test_nixon_toy_tace() -> None:
    assert cp.tace(NIXON_P, NIXON_Y, n_bins=2, threshold=0.01) == pytest.approx(0.177167, abs=1e-6)


def test_nixon_toy_rmsce() -> None:
    assert cp.rmsce(NIXON_P, NIXON_Y, n_bins=2) == pytest.approx(0.326769, abs=1e-6)
    # by hand (§3.4): bins {.34,.4,.5} gap -.41333 and {.6,.8,.98} gap .20667, weight 1/2 each
    conf_lo, acc_lo = (0.34 + 0.4 + 0.5) / 3, 0.0
    conf_hi, acc_hi = (0.6 + 0.8 + 0.98) / 3, 1.0
    hand = math.sqrt(0.5 * (conf_lo - acc_lo) ** 2 + 0.5 * (conf_hi - acc_hi) ** 2)
    assert cp.rmsce(NIXON_P, NIXON_Y, n_bins=2) == pytest.approx(hand, abs=1e-12)


def _nixon_adaptive_by_hand(P: np.ndarray, y: np.ndarray, R: int, thr: float = 0.0) -> float:
    """The Nixon et al. (2019) code's class-wise adaptive CE (docs/how-calipers-computes.md §3.2), plain NumPy."""
    n, K = P.shape
    err = 0.0
    for k in range(K):
        keep = P[:, k] > thr
        p = P[keep, k]
        t = (y[keep] == k).astype(float)
        s = np.sort(p)
        pos = np.minimum(
            np.round(np.linspace(0, len(s), R, endpoint=False)).astype(int), len(s) - 1
        )
        upper = np.concatenate([s[pos][1:], [1.0]])
        idx = np.digitize(p, upper)
        e_k = 0.0
        for b in np.unique(idx):
            m = idx == b
            e_k += m.sum() / len(p) * abs(t[m].mean() - p[m].mean())
        err += e_k / K
    return err


def test_nixon_toy_ace_by_hand() -> None:
    # §3.4: class errors 0.26, 0.1975, 0.0625
    c0 = 0.5 * abs(0 - (0.4 + 0.2 + 0.34) / 3) + 0.5 * abs(1 - (0.6 + 0.8 + 0.98) / 3)
    assert c0 == pytest.approx(0.26, abs=1e-12)
    c1 = 0.5 * abs(0 - (0.3 + 0.1 + 0.015) / 3) + 0.5 * abs(2 / 3 - (0.4 + 0.5 + 0.33) / 3)
    assert c1 == pytest.approx(0.1975, abs=1e-12)
    c2 = 0.5 * abs(0 - (0.1 + 0.1 + 0.005) / 3) + 0.5 * abs(1 / 3 - (0.2 + 0.3 + 0.33) / 3)
    assert c2 == pytest.approx(0.0625, abs=1e-12)
    hand = (c0 + c1 + c2) / 3
    assert hand == pytest.approx(0.173333, abs=1e-6)
    assert cp.ace(NIXON_P, NIXON_Y, n_bins=2) == pytest.approx(hand, abs=1e-12)
    assert _nixon_adaptive_by_hand(NIXON_P, NIXON_Y, 2) == pytest.approx(hand, abs=1e-12)


def test_ace_tace_match_reference_algorithm_on_random_data() -> None:
    rng = np.random.default_rng(7)
    P = rng.dirichlet(np.full(5, 0.7), size=301)
    y = rng.integers(0, 5, size=301)
    for R in (2, 7, 15):
        assert cp.ace(P, y, n_bins=R) == pytest.approx(_nixon_adaptive_by_hand(P, y, R), abs=1e-12)
        assert cp.tace(P, y, n_bins=R) == pytest.approx(
            _nixon_adaptive_by_hand(P, y, R, 0.01), abs=1e-12
        )


def test_nixon_tie_example_bin_sizes() -> None:
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])
    em = cp.EqualMass(3)
    np.testing.assert_array_equal(em.edges(s), [0.2, 0.8, 1.0])
    ids, _ = em.assign(s)
    assert np.bincount(np.asarray(ids)).tolist() == [1, 6, 3]


# ----------------------------------------------------------------------------- §4.1 Kumar

KUMAR_CONF = np.array([0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 0.9, 0.95])
KUMAR_CORRECT = np.array([1, 0, 1, 0, 1, 1, 0, 1])


def test_kumar_equal_mass_edges() -> None:
    np.testing.assert_allclose(
        cp.EqualMass(2, rule="kumar").edges(KUMAR_CONF), [0.75, 1.0], rtol=0, atol=1e-15
    )


def test_kumar_plugin_l2_squared() -> None:
    P = np.stack([KUMAR_CONF, 1 - KUMAR_CONF], axis=1)  # column 0 is the arg-max
    y = np.where(KUMAR_CORRECT == 1, 0, 1)
    got = cp.tce_p(P, y, p=2, root=False, estimator=cp.EqualMass(2, rule="kumar"))
    assert got == pytest.approx(0.0172656, abs=1e-7)
    # by hand: bins {.55,.6,.65,.7} (acc .5) and {.8,.9,.9,.95} (acc .75)
    hand = 0.5 * (0.625 - 0.5) ** 2 + 0.5 * (0.8875 - 0.75) ** 2
    assert got == pytest.approx(hand, abs=1e-15)
    rooted = cp.tce_p(P, y, p=2, estimator=cp.EqualMass(2, rule="kumar"))
    assert rooted == pytest.approx(math.sqrt(hand), abs=1e-14)


def test_kumar_equal_mass_edges_three_bins() -> None:
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])
    em = cp.EqualMass(3, rule="kumar")
    np.testing.assert_allclose(em.edges(s), [0.35, 0.75, 1.0], rtol=0, atol=1e-15)
    # array_split parts of sizes 4/3/3, (lo, hi] bins
    assert np.bincount(np.asarray(em.assign(s)[0])).tolist() == [4, 3, 3]


# ----------------------------------------------------------------------------- §9.3 / §9.5


@pytest.mark.parametrize(("ybar", "expected"), [(0.8, 0.14), (0.1, 0.23), (0.5, 0.0)])
def test_inter_interval_distance(ybar: float, expected: float) -> None:
    d = cp.InterInterval(0.33, 0.66)(np.array([ybar]), np.array([0.5]))
    assert d[0] == pytest.approx(expected, abs=1e-12)
    # depends on the mean target only, not on the mean score
    d2 = cp.InterInterval(0.33, 0.66)(np.array([ybar]), np.array([0.9]))
    assert d2[0] == d[0]


def test_inter_interval_through_the_pipeline() -> None:
    # all scores in [.33, .66], one bin, mean label 0.8 -> 0.14
    p = np.array([0.4, 0.5, 0.6, 0.45, 0.55, 0.95, 0.1])
    y = np.array([1, 1, 1, 1, 0, 0, 1])
    got = cp.calibration_error(
        p,
        y,
        lens="binary",
        selection=cp.ScoreInterval(0.33, 0.66),
        estimator=cp.EqualWidth(1),
        divergence=cp.InterInterval(0.33, 0.66),
    )
    assert got == pytest.approx(0.14, abs=1e-12)


def test_tvd_of_two_vectors_is_abs_difference() -> None:
    a = np.array([0.1, 0.5, 0.9, 0.3])
    b = np.array([0.4, 0.5, 0.2, 1.0])
    vec = cp.TVD()(np.stack([1 - a, a], 1), np.stack([1 - b, b], 1))
    np.testing.assert_allclose(vec, np.abs(a - b), rtol=0, atol=1e-15)
    np.testing.assert_allclose(cp.TVD()(a, b), np.abs(a - b), rtol=0, atol=1e-15)


def test_top1_tvd_equals_ece() -> None:
    got = cp.calibration_error(
        NIXON_P, NIXON_Y, lens=cp.top_k(1), divergence=cp.TVD(), estimator=cp.EqualWidth(5)
    )
    assert got == pytest.approx(0.176667, abs=1e-6)
    assert got == pytest.approx(cp.ece(NIXON_P, NIXON_Y, n_bins=5), abs=1e-15)


# ----------------------------------------------------------------------------- decompositions


def _random_problem(seed: int, n: int = 400, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    return P, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_murphy_identity_multiclass(seed: int) -> None:
    P, y = _random_problem(seed)
    d = cp.murphy_decomposition(P, y, estimator=cp.EqualWidth(10))
    rhs = (
        d.reliability
        - d.resolution
        + d.uncertainty
        + d.within_bin_variance
        - 2 * d.within_bin_covariance
    )
    assert d.brier == pytest.approx(rhs, abs=1e-12)
    hand_brier = np.mean(np.sum((P - np.eye(P.shape[1])[y]) ** 2, axis=1))
    assert d.brier == pytest.approx(hand_brier, abs=1e-12)
    assert d.brier == pytest.approx(cp.brier(P, y), abs=1e-12)


def test_murphy_terms_by_hand_binary() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p**1.3).astype(int)
    B = 10
    d = cp.murphy_decomposition(p, y, estimator=cp.EqualWidth(B))
    bins = np.clip(np.ceil(p * B) - 1, 0, B - 1).astype(int)  # (lo, hi]
    o = y.mean()
    rel = res = wbv = wbc = 0.0
    for b in np.unique(bins):
        m = bins == b
        sb, ob = p[m].mean(), y[m].mean()
        rel += m.sum() / len(p) * (sb - ob) ** 2
        res += m.sum() / len(p) * (ob - o) ** 2
        wbv += np.sum((p[m] - sb) ** 2) / len(p)
        wbc += np.sum((p[m] - sb) * (y[m] - ob)) / len(p)
    assert d.reliability == pytest.approx(rel, abs=1e-12)
    assert d.resolution == pytest.approx(res, abs=1e-12)
    assert d.uncertainty == pytest.approx(o * (1 - o), abs=1e-12)
    assert d.within_bin_variance == pytest.approx(wbv, abs=1e-12)
    assert d.within_bin_covariance == pytest.approx(wbc, abs=1e-12)
    assert d.brier == pytest.approx(np.mean((p - y) ** 2), abs=1e-12)
    assert d.brier == pytest.approx(cp.brier(p, y), abs=1e-12)
    assert d.brier == pytest.approx(rel - res + o * (1 - o) + wbv - 2 * wbc, abs=1e-12)


def _pav_by_hand(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators on the unique values of x (ties pooled), plain Python."""
    ux, inv = np.unique(x, return_inverse=True)
    blocks = []  # [sum_y, weight, n_groups]
    for g in range(len(ux)):
        m = inv == g
        blocks.append([float(y[m].sum()), float(m.sum()), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, w, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w
            blocks[-1][2] += c
    fit = np.concatenate([[s / w] * c for s, w, c in blocks])
    return fit[inv]


@pytest.mark.parametrize("seed", [0, 1])
def test_corp_identity_and_terms_by_hand(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=300), 2)  # ties, as in real forecasts
    y = (rng.uniform(size=300) < p**0.8).astype(int)
    d = cp.corp_decomposition(p, y)
    assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=1e-14)
    r = _pav_by_hand(p, y)
    o = y.mean()
    bs = np.mean((p - y) ** 2)
    bs_r = np.mean((r - y) ** 2)
    bs_o = np.mean((o - y) ** 2)
    assert d.score == pytest.approx(bs, abs=1e-12)
    assert d.miscalibration == pytest.approx(bs - bs_r, abs=1e-12)
    assert d.discrimination == pytest.approx(bs_o - bs_r, abs=1e-12)
    assert d.uncertainty == pytest.approx(o * (1 - o), abs=1e-12)
    assert d.miscalibration >= 0 and d.discrimination >= 0


def test_corp_identity_multiclass() -> None:
    P, y = _random_problem(5)
    d = cp.corp_decomposition(P, y)
    assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=1e-13)
    assert d.score == pytest.approx(cp.brier(P, y), abs=1e-12)


# ----------------------------------------------------------------------------- scores


def test_brier_small_examples() -> None:
    P = np.array([[0.8, 0.2], [0.4, 0.6]])
    # (.04 + .04 + .36 + .36) / 2
    assert cp.brier(P, [0, 0]) == pytest.approx(0.4, abs=1e-15)
    assert cp.brier(P, [0, 0], reduction="mean") == pytest.approx(0.2, abs=1e-15)
    P3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    # row 0, label 1: .49 + .64 + .01 = 1.14; row 1, label 2: .01 + .01 + .04 = .06
    assert cp.brier(P3, [1, 2]) == pytest.approx(0.6, abs=1e-15)
    assert cp.brier(P3, [1, 2], reduction="mean") == pytest.approx(0.2, abs=1e-15)
    assert cp.brier(np.array([0.2, 0.6]), [0, 1]) == pytest.approx(0.1, abs=1e-15)
    assert cp.brier(P3, [1, 2], sample_weight=[3, 1]) == pytest.approx(
        (3 * 1.14 + 0.06) / 4, abs=1e-15
    )


def test_nll_small_examples() -> None:
    assert cp.nll([[0.5, 0.5], [0.2, 0.8]], [0, 1]) == pytest.approx(
        -(math.log(0.5) + math.log(0.8)) / 2, abs=1e-15
    )
    assert cp.nll(np.array([0.9, 0.3]), [1, 0]) == pytest.approx(
        -(math.log(0.9) + math.log(0.7)) / 2, abs=1e-15
    )
    assert cp.nll([[0.5, 0.5], [0.2, 0.8]], [0, 1], sample_weight=[1, 3]) == pytest.approx(
        -(math.log(0.5) + 3 * math.log(0.8)) / 4, abs=1e-15
    )


def test_accuracy_small_examples() -> None:
    # ties go to the lowest index: [.5, .5] predicts 0
    assert cp.accuracy([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]], [0, 1, 1]) == pytest.approx(2 / 3)
    assert cp.accuracy([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4]], [1, 2]) == 0.0
    assert cp.accuracy([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4]], [0, 1]) == 1.0
    # binary: class 1 iff p > 0.5
    assert cp.accuracy(np.array([0.5, 0.51, 0.2]), [0, 1, 1]) == pytest.approx(2 / 3)
    assert cp.accuracy([[0.9, 0.1], [0.2, 0.8]], [0, 0], sample_weight=[3, 1]) == 0.75


def test_nll_zero_true_class_is_inf_and_clip() -> None:
    assert cp.nll([[1.0, 0.0]], [1]) == math.inf
    assert cp.nll([[1.0, 0.0], [0.5, 0.5]], [1, 0]) == math.inf
    assert cp.nll([[1.0, 0.0]], [1], clip=1e-15) == pytest.approx(-math.log(1e-15), rel=1e-15)
    # the clip is two-sided: [clip, 1 - clip]
    assert cp.nll([[1.0, 0.0]], [0], clip=0.1) == pytest.approx(-math.log(0.9), rel=1e-15)
    assert cp.nll([[1.0, 0.0]], [0]) == 0.0
    # clip leaves interior probabilities alone
    assert cp.nll([[0.3, 0.7]], [1], clip=1e-15) == pytest.approx(-math.log(0.7), rel=1e-15)
    with pytest.raises(cp.CalibrationInputError, match="clip"):
        cp.nll([[0.3, 0.7]], [1], clip=0.5)


def test_nll_from_logits_equals_nll_from_softmax() -> None:
    rng = np.random.default_rng(11)
    z = rng.normal(scale=3.0, size=(50, 6))
    y = rng.integers(0, 6, size=50)
    p = np.exp(z - logsumexp(z, axis=1, keepdims=True))
    hand = np.mean(logsumexp(z, axis=1) - z[np.arange(50), y])
    assert cp.nll(z, y, logits=True) == pytest.approx(hand, abs=1e-12)
    assert cp.nll(p, y) == pytest.approx(hand, abs=1e-12)
    # binary logits: -log sigmoid(+-z)
    z1 = rng.normal(scale=3.0, size=40)
    y1 = rng.integers(0, 2, size=40)
    hand1 = np.mean(np.logaddexp(0, -(2 * y1 - 1) * z1))
    assert cp.nll(z1, y1, logits=True) == pytest.approx(hand1, abs=1e-12)
    assert cp.nll(1 / (1 + np.exp(-z1)), y1) == pytest.approx(hand1, abs=1e-12)


def test_nll_from_extreme_logits_is_exact() -> None:
    # softmax underflows to 0 for the true class, the logit form stays finite
    z = np.array([[0.0, 800.0]])
    assert cp.nll(z, [0], logits=True) == pytest.approx(800.0, rel=1e-15)
