"""Property-based tests (hypothesis) of the named metrics, scores and binning schemes.

Every property here is a mathematical fact that holds independently of the
implementation (invariances, bounds, inequalities, exact zeros on data that is
calibrated by construction, weights == repetitions).  Expected values are never
taken from earlier runs of calipers.

Data come from a drawn seed fed to NumPy, so every example is reproducible;
all tests use ``derandomize=True``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import calipers as cp
from calipers.estimators.binning import EqualMass, EqualWidth, KDTree
from calipers.metrics.binned import nixon_even_bins
from calipers.pipeline.lenses import top_k

SETTINGS = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEW = settings(SETTINGS, max_examples=10)

TOL = 1e-12


# ----------------------------------------------------------------------------- helpers


def same(a: float, b: float, tol: float = TOL) -> bool:
    """Equal up to ``tol`` (relative for large values); infinities must match exactly."""
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def _labels_from(q: np.ndarray, rng: np.random.Generator, mode: str) -> np.ndarray:
    n, k = q.shape
    if mode == "uniform":
        return rng.integers(0, k, n)
    # sample y_i ~ Categorical(q_i) by inverse CDF (calibrated labels)
    u = rng.random(n)
    return np.minimum((u[:, None] > np.cumsum(q, axis=1)).sum(axis=1), k - 1)


@st.composite
def data(
    draw: st.DrawFn,
    *,
    min_n: int = 1,
    max_n: int = 50,
    min_k: int = 2,
    max_k: int = 6,
    kind: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.random.Generator, str]:
    """``(probs (n, k), labels, rng, kind)``.

    ``kind="continuous"``: Dirichlet rows (no ties, generically nothing on an edge).
    ``kind="grid"``: multinomial counts / m, m in {2, 5, 10, 20}: many ties, exact
    zeros and ones, values exactly on bin edges.
    """
    n = draw(st.integers(min_n, max_n))
    k = draw(st.integers(min_k, max_k))
    seed = draw(st.integers(0, 2**32 - 1))
    if kind is None:
        kind = draw(st.sampled_from(["continuous", "grid"]))
    alpha = draw(st.sampled_from([0.3, 1.0, 4.0]))
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.full(k, alpha), size=n)
    if kind == "grid":
        m = draw(st.sampled_from([2, 5, 10, 20]))
        P = rng.multinomial(m, q / q.sum(axis=1, keepdims=True)) / m
    else:
        P = q
    y = _labels_from(q, rng, draw(st.sampled_from(["uniform", "calibrated"])))
    return P, y, rng, kind


def _topk_k(P: np.ndarray) -> int:
    return 1 if P.shape[1] == 2 else 2


# name -> f(P, y, **kw); every named metric and score of the brief
METRICS = {
    "ece": cp.ece,
    "mce": cp.mce,
    "rmsce": cp.rmsce,
    "bin_averaged_ece": cp.bin_averaged_ece,
    "sce": cp.sce,
    "ace": cp.ace,
    "tace": cp.tace,
    "classwise_ece": cp.classwise_ece,
    "classwise_ece_sum": lambda P, y, **kw: cp.classwise_ece(P, y, reduction="sum", **kw),
    "top_k_ece": lambda P, y, **kw: cp.top_k_ece(P, y, k=_topk_k(P), **kw),
    "full_ece": cp.full_ece,
    "tce_p": lambda P, y, **kw: cp.tce_p(P, y, p=2, **kw),
    "tce_p3": lambda P, y, **kw: cp.tce_p(P, y, p=3, n_bins=7, **kw),
    "cwce_p": lambda P, y, **kw: cp.cwce_p(P, y, p=2, **kw),
    "ce_p": lambda P, y, **kw: cp.ce_p(P, y, p=2, **kw),
    "nll": cp.nll,
    "brier": cp.brier,
    "accuracy": cp.accuracy,
}
KDTREE_METRICS = {"top_k_ece", "full_ece", "ce_p"}
TOP_LABEL_METRICS = {
    "ece",
    "mce",
    "rmsce",
    "bin_averaged_ece",
    "top_k_ece",
    "tce_p",
    "tce_p3",
    "accuracy",
}
CLASS_SYMMETRIC = set(METRICS) - TOP_LABEL_METRICS


# ----------------------------------------------------------------------------- permutations


@SETTINGS
@given(data())
def test_invariant_to_permuting_samples(d) -> None:
    P, y, rng, kind = d
    perm = rng.permutation(len(y))
    for name, f in METRICS.items():
        if name in KDTREE_METRICS and kind == "grid":
            continue  # see test_kdtree_split_is_order_independent_with_ties_at_the_mean
        a, b = f(P, y), f(P[perm], y[perm])
        assert same(a, b), (name, a, b)


@FEW
@given(data(kind="continuous"))
def test_kdtree_metrics_invariant_to_permuting_samples(d) -> None:
    """The k-d tree splits at the mean and on the largest variance: functions of the
    multiset only, so the leaves (and the error) do not depend on the row order."""
    P, y, rng, _ = d
    perm = rng.permutation(len(y))
    for gamma in (0.05, 0.2, 0.5):
        est = KDTree(gamma)
        for lens in ("canonical", "top_label", top_k(_topk_k(P))):
            a = cp.calibration_error(P, y, lens=lens, estimator=est, divergence="tvd")
            b = cp.calibration_error(P[perm], y[perm], lens=lens, estimator=est, divergence="tvd")
            assert same(a, b), (gamma, lens, a, b)


def test_kdtree_split_is_order_independent_with_ties_at_the_mean() -> None:
    """The k-d tree splits at the correctly rounded (weighted) mean of the node, so the
    result cannot depend on the row order.  For the scores (0.2, 0.3, 0.4) a naive float
    sum gives 0.3 in some orders and 0.30000000000000004 in others, which moved the
    sample at 0.3 between leaves (error 0.5 vs 0.3667).  Scores tied with a node mean
    are common with rounded probabilities."""
    p = np.array([0.2, 0.3, 0.4])
    y = np.array([0, 1, 1])
    # the exact (rational) mean of the three doubles, rounded once to a double
    split = float(sum(Fraction(v) for v in p) / 3)
    low = p < split
    assert low.tolist() == [True, False, False]  # 0.3 is not strictly below 0.3
    expected = (1 / 3) * abs(0.2 - 0.0) + (2 / 3) * abs(0.35 - 1.0)
    est = KDTree(1.0)  # min_size = round(3 * 1.0) = 3: exactly one split of the root
    values = []
    for perm in itertools.permutations(range(3)):
        perm = np.array(perm)
        values.append(cp.calibration_error(p[perm], y[perm], lens="binary", estimator=est))
    assert all(v == pytest.approx(expected, abs=1e-12) for v in values), values


# ----------------------------------------------------------------------------- relabelling


def _relabel(P: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New column j holds old column sigma[j]; old label c becomes the j with sigma[j] = c."""
    inv = np.argsort(sigma)
    return P[:, sigma], inv[y]


@SETTINGS
@given(data())
def test_class_symmetric_metrics_invariant_to_relabelling(d) -> None:
    P, y, rng, kind = d
    sigma = rng.permutation(P.shape[1])
    P2, y2 = _relabel(P, y, sigma)
    assert np.array_equal(P2[np.arange(len(y)), y2], P[np.arange(len(y)), y])
    for name in sorted(CLASS_SYMMETRIC):
        if name in KDTREE_METRICS and kind == "grid":
            continue  # ties at a node mean: see the k-d tree order test
        a, b = METRICS[name](P, y), METRICS[name](P2, y2)
        assert same(a, b), (name, a, b)


@SETTINGS
@given(data(kind="continuous", min_k=3))
def test_top_label_metrics_invariant_to_relabelling_without_ties(d) -> None:
    P, y, rng, _ = d
    srt = np.sort(P, axis=1)
    assume(np.all(np.diff(srt, axis=1) > 0))  # no ties anywhere in a row
    sigma = rng.permutation(P.shape[1])
    P2, y2 = _relabel(P, y, sigma)
    for name in sorted(TOP_LABEL_METRICS):
        a, b = METRICS[name](P, y), METRICS[name](P2, y2)
        assert same(a, b), (name, a, b)


# ----------------------------------------------------------------------------- bounds


@SETTINGS
@given(data())
def test_bounds(d) -> None:
    P, y, _, _ = d
    e, m = cp.ece(P, y), cp.mce(P, y)
    for name in ("ece", "mce", "sce", "ace", "tace", "bin_averaged_ece", "classwise_ece"):
        v = METRICS[name](P, y)
        assert 0.0 <= v <= 1.0, (name, v)
    assert e <= m + TOL
    # the per-bin gaps of the other edge rule obey the same bound
    assert cp.ece(P, y, edge_rule="left") <= cp.mce(P, y, edge_rule="left") + TOL
    b = cp.brier(P, y)
    assert 0.0 <= b <= 2.0 + TOL
    assert 0.0 <= cp.brier(P, y, reduction="mean") <= 2.0 / P.shape[1] + TOL
    assert cp.nll(P, y) >= 0.0
    assert 0.0 <= cp.accuracy(P, y) <= 1.0


# ----------------------------------------------------------------------------- weights


WEIGHTED = {
    "ece": cp.ece,
    "mce": cp.mce,
    "sce": cp.sce,
    "ace": cp.ace,
    "tace": cp.tace,
    "rmsce": cp.rmsce,
    "classwise_ece": cp.classwise_ece,
    "nll": cp.nll,
    "brier": cp.brier,
    "accuracy": cp.accuracy,
    "bin_averaged_ece": cp.bin_averaged_ece,
    "cwce_p": lambda P, y, **kw: cp.cwce_p(P, y, p=2, **kw),
    "equal_mass_nixon_top": lambda P, y, **kw: cp.calibration_error(
        P, y, estimator=EqualMass(7, "nixon"), **kw
    ),
    "equal_mass_kumar_top": lambda P, y, **kw: cp.calibration_error(
        P, y, estimator=EqualMass(7, "kumar"), **kw
    ),
    "equal_mass_nixon_classwise": lambda P, y, **kw: cp.calibration_error(
        P, y, lens="classwise", estimator=EqualMass(5, "nixon"), divergence="l2", **kw
    ),
    "equal_mass_kumar_classwise": lambda P, y, **kw: cp.calibration_error(
        P, y, lens="classwise", estimator=EqualMass(5, "kumar"), divergence="l2", **kw
    ),
    "equal_mass_kumar_many_bins": lambda P, y, **kw: cp.calibration_error(
        P, y, estimator=EqualMass(40, "kumar"), **kw
    ),
}


@SETTINGS
@given(data(max_n=30), st.data())
def test_integer_weights_equal_repetition(d, draw) -> None:
    P, y, _, _ = d
    w = np.array(draw.draw(st.lists(st.integers(0, 3), min_size=len(y), max_size=len(y))))
    assume(w.sum() > 0)
    Pr, yr = np.repeat(P, w, axis=0), np.repeat(y, w)
    py = P[np.arange(len(y)), y]
    for name, f in WEIGHTED.items():
        if name == "nll" and np.any((w == 0) & (py == 0)):
            continue  # 0 * log(0): see test_nll_zero_weight_row_with_zero_probability
        a, b = f(P, y, sample_weight=w), f(Pr, yr)
        assert same(a, b), (name, a, b)


@FEW
@given(data(kind="continuous", max_n=30), st.data())
def test_integer_weights_equal_repetition_kdtree(d, draw) -> None:
    P, y, _, _ = d
    w = np.array(draw.draw(st.lists(st.integers(0, 3), min_size=len(y), max_size=len(y))))
    assume(w.sum() > 0)
    Pr, yr = np.repeat(P, w, axis=0), np.repeat(y, w)
    for gamma in (0.1, 0.3):
        a = cp.full_ece(P, y, gamma=gamma, sample_weight=w)
        b = cp.full_ece(Pr, yr, gamma=gamma)
        assert same(a, b), (gamma, a, b)
        a = cp.ce_p(P, y, gamma=gamma, sample_weight=w)
        b = cp.ce_p(Pr, yr, gamma=gamma)
        assert same(a, b), (gamma, a, b)


@FEW
@given(data())
def test_unit_weights_equal_no_weights(d) -> None:
    P, y, _, _ = d
    ones = np.ones(len(y))
    for name, f in {**METRICS, **WEIGHTED}.items():
        a, b = f(P, y, sample_weight=ones), f(P, y)
        assert same(a, b), (name, a, b)


@pytest.mark.parametrize("rule", ["nixon", "kumar"])
def test_equal_mass_edges_weights_equal_repetition(rule: str) -> None:
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])
    w = np.array([2, 0, 1, 3, 1, 0, 2, 1, 1, 4])
    est = EqualMass(3, rule)
    assert np.array_equal(est.edges(s, w.astype(float)), est.edges(np.repeat(s, w)))


def test_nll_zero_weight_row_with_zero_probability() -> None:
    """SRC BUG: a row with weight 0 must not count (weight 0 == row absent), but its
    -log(0) = inf times 0 makes the weighted NLL NaN."""
    P = np.array([[1.0, 0.0], [0.3, 0.7]])
    y = np.array([1, 1])
    expected = -math.log(0.7)  # only the second row counts
    assert cp.nll(P[1:], y[1:]) == pytest.approx(expected, abs=1e-15)
    assert cp.nll(P, y, sample_weight=[0.0, 1.0]) == pytest.approx(expected, abs=1e-15)


# ----------------------------------------------------------------------------- presets


@SETTINGS
@given(data(), st.integers(1, 30))
def test_pipeline_agrees_with_presets(d, B) -> None:
    P, y, _, _ = d
    ce = cp.calibration_error
    tl, cw = "top_label", "classwise"
    assert cp.ece(P, y, n_bins=B) == ce(P, y, lens=tl, estimator=EqualWidth(B), divergence="l1")
    assert cp.ece(P, y, n_bins=B, edge_rule="left") == ce(
        P, y, lens=tl, estimator=EqualWidth(B, "left"), divergence="l1"
    )
    assert cp.mce(P, y, n_bins=B) == ce(
        P, y, lens=tl, estimator=EqualWidth(B), divergence="l1", aggregate="max"
    )
    assert cp.rmsce(P, y, n_bins=B) == ce(
        P, y, lens=tl, estimator=EqualMass(B, "nixon"), divergence="l2"
    )
    assert cp.bin_averaged_ece(P, y, n_bins=B) == ce(
        P, y, lens=tl, estimator=EqualWidth(B), divergence="l1", aggregate="mean"
    )
    assert cp.sce(P, y, n_bins=B) == ce(
        P, y, lens=cw, selection=cp.threshold(0.0), estimator=nixon_even_bins(B), divergence="l1"
    )
    assert cp.ace(P, y, n_bins=B) == ce(
        P, y, lens=cw, selection=cp.threshold(0.0), estimator=EqualMass(B), divergence="l1"
    )
    assert cp.tace(P, y, n_bins=B) == ce(
        P, y, lens=cw, selection=cp.threshold(0.01), estimator=EqualMass(B), divergence="l1"
    )
    assert cp.tace(P, y, n_bins=B, threshold=0.1) == ce(
        P, y, lens=cw, selection=cp.threshold(0.1), estimator=EqualMass(B), divergence="l1"
    )
    assert cp.classwise_ece(P, y, n_bins=B) == ce(
        P, y, lens=cw, estimator=EqualWidth(B), divergence="l1", class_aggregate="mean"
    )
    assert cp.classwise_ece(P, y, n_bins=B, reduction="sum") == ce(
        P, y, lens=cw, estimator=EqualWidth(B), divergence="l1", class_aggregate="sum"
    )
    kk = _topk_k(P)
    assert cp.top_k_ece(P, y, k=kk) == ce(
        P, y, lens=top_k(kk), estimator=KDTree(0.1), divergence="tvd"
    )
    assert cp.full_ece(P, y) == ce(P, y, lens="canonical", estimator=KDTree(0.1), divergence="tvd")
    for p in (1.0, 2.0, 3.5):
        assert cp.tce_p(P, y, p=p, n_bins=B) == ce(
            P, y, lens=tl, estimator=EqualWidth(B), divergence=cp.Lp(p)
        )
        assert cp.cwce_p(P, y, p=p, n_bins=B) == ce(
            P, y, lens=cw, estimator=EqualWidth(B), divergence=cp.Lp(p), class_aggregate="sum"
        )
        assert cp.ce_p(P, y, p=p) == ce(
            P, y, lens="canonical", estimator=KDTree(0.1), divergence=cp.Lp(p)
        )
    # documented identities between presets
    assert same(cp.tce_p(P, y, p=1, n_bins=B), cp.ece(P, y, n_bins=B))
    assert same(cp.cwce_p(P, y, p=1, n_bins=B), cp.classwise_ece(P, y, n_bins=B, reduction="sum"))
    assert same(
        cp.tce_p(P, y, p=2, n_bins=B, root=False), cp.tce_p(P, y, p=2, n_bins=B) ** 2, 1e-10
    )
    assert same(cp.top_k_ece(P, y, k=1, estimator=EqualWidth(B)), cp.ece(P, y, n_bins=B))


# ----------------------------------------------------------------------------- zero error


ALL_CE = [
    n for n in METRICS if n not in ("nll", "brier", "accuracy")
]  # every calibration error above


def _calibrated(groups: list[np.ndarray], m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each count vector c (sum m) gives m rows equal to c/m, exactly c_j of them with label j."""
    P, y = [], []
    for c in groups:
        P.append(np.tile(c / m, (m, 1)))
        y.append(np.repeat(np.arange(len(c)), c))
    return np.concatenate(P), np.concatenate(y)


def test_zero_error_binary_values_between_edges() -> None:
    m = 20
    v = np.arange(10) / 10 + 0.05  # 0.05, 0.15, ..., 0.95: one per 10-bin, never on a 15-bin edge
    p = np.repeat(v, m)
    y = np.concatenate([np.r_[np.ones(round(x * m)), np.zeros(m - round(x * m))] for x in v])
    y = y.astype(int)
    P = np.stack([1 - p, p], axis=1)
    for B in (10, 15, 20):
        for rule in ("right", "left"):
            est = EqualWidth(B, rule)
            assert cp.calibration_error(p, y, lens="binary", estimator=est) < TOL
            assert cp.ece(p, y, n_bins=B, edge_rule=rule) < TOL
            assert cp.ece(P, y, n_bins=B, edge_rule=rule) < TOL
            assert cp.mce(P, y, n_bins=B, edge_rule=rule) < TOL
            assert cp.classwise_ece(P, y, n_bins=B, edge_rule=rule) < TOL
    # and a miscalibrated control (flip every label) is far from 0
    assert cp.ece(P, 1 - y) > 0.1


@SETTINGS
@given(
    st.integers(2, 5),
    st.integers(1, 6),
    st.sampled_from([1, 4, 10, 20]),
    st.integers(0, 2**32 - 1),
    st.integers(1, 30),
)
def test_zero_error_when_calibrated_by_construction(k, G, m, seed, B) -> None:
    """Every distinct prediction vector q appears m times with exactly m q_j labels j.
    Within any bin that is a union of whole groups the mean target equals the mean
    score; every binning here is a function of the score value, so every CE is 0."""
    rng = np.random.default_rng(seed)
    groups = [rng.multinomial(m, rng.dirichlet(np.ones(k))) for _ in range(G)]
    P, y = _calibrated(groups, m)
    perm = rng.permutation(len(y))
    P, y = P[perm], y[perm]
    for name in ALL_CE:
        assert abs(METRICS[name](P, y)) < TOL, name
    for est in (EqualWidth(B), EqualWidth(B, "left"), EqualMass(B), EqualMass(B, "kumar")):
        for lens in ("top_label", "classwise"):
            assert cp.calibration_error(P, y, lens=lens, estimator=est) < TOL, (est, lens)
    assert cp.calibration_error(P, y, lens="canonical", estimator=EqualWidth(B)) < TOL
    if k == 2:
        for est in (EqualWidth(B), EqualMass(B), KDTree(0.2)):
            assert cp.calibration_error(P[:, 1], y, lens="binary", estimator=est) < TOL


# ----------------------------------------------------------------------------- orderings


@SETTINGS
@given(data(), st.sampled_from([(15, 5), (10, 5), (30, 15), (12, 4), (8, 2)]))
def test_orderings_with_the_same_bins(d, bins) -> None:
    P, y, _, _ = d
    fine, coarse = bins
    ps = [1.0, 1.5, 2.0, 3.0, 7.0]
    for B in (fine, coarse):
        vals = [cp.tce_p(P, y, p=p, n_bins=B) for p in ps]
        # power-mean inequality: p -> (sum_b w_b |d_b|^p)^(1/p) is non-decreasing
        for lo, hi in zip(vals, vals[1:], strict=False):
            assert lo <= hi + TOL, vals
        assert cp.tce_p(P, y, p=2, n_bins=B) >= cp.ece(P, y, n_bins=B) - TOL
        m = cp.mce(P, y, n_bins=B)
        assert all(v <= m + TOL for v in vals), (vals, m)
        assert cp.tce_p(P, y, p=1, n_bins=B) <= m + TOL
        # the same with equal-mass bins (same bins for every p)
        em = [cp.tce_p(P, y, p=p, estimator=EqualMass(B)) for p in ps]
        for lo, hi in zip(em, em[1:], strict=False):
            assert lo <= hi + TOL, em
        cw = [cp.cwce_p(P, y, p=p, n_bins=B) for p in (1.0, 2.0)]
        assert cw[0] >= 0 and cw[1] >= 0
    # Jensen under coarsening: every coarse bin is a union of fine bins
    for rule in ("right", "left"):
        assert cp.ece(P, y, n_bins=fine, edge_rule=rule) >= (
            cp.ece(P, y, n_bins=coarse, edge_rule=rule) - TOL
        )
        assert cp.classwise_ece(P, y, n_bins=fine, edge_rule=rule) >= (
            cp.classwise_ece(P, y, n_bins=coarse, edge_rule=rule) - TOL
        )
    assert cp.tce_p(P, y, p=2, n_bins=fine) >= cp.tce_p(P, y, p=2, n_bins=coarse) - TOL
    assert cp.cwce_p(P, y, p=2, n_bins=fine) >= cp.cwce_p(P, y, p=2, n_bins=coarse) - TOL
    # the max gap can only grow under refinement too
    assert cp.mce(P, y, n_bins=fine) >= cp.mce(P, y, n_bins=coarse) - TOL


def test_jensen_coarsening_is_strict_on_an_example() -> None:
    # 0.45 and 0.55 share the 5-bin (0.4, 0.6] but not a 15-bin; gaps of opposite sign
    p = np.array([0.45, 0.45, 0.55, 0.55])
    y = np.array([1, 1, 0, 0])
    fine = cp.calibration_error(p, y, lens="binary", estimator=EqualWidth(15))
    coarse = cp.calibration_error(p, y, lens="binary", estimator=EqualWidth(5))
    assert fine == pytest.approx(0.55, abs=1e-12)  # 0.5 * |0.45 - 1| + 0.5 * |0.55 - 0|
    assert coarse == pytest.approx(0.0, abs=1e-12)  # |0.5 - 0.5|


# ----------------------------------------------------------------------------- float32


def _edge_gap(x: np.ndarray, B: int) -> np.ndarray:
    return np.abs(x * B - np.round(x * B)) / B


@SETTINGS
@given(data(kind="continuous", max_n=60), st.integers(1, 30))
def test_float32_and_float64_agree_off_the_edges(d, B) -> None:
    P, y, _, _ = d
    P32 = P.astype(np.float32)
    srt = np.sort(P, axis=1)
    assume(np.all(srt[:, -1] - srt[:, -2] > 1e-5))  # same arg-max in both dtypes
    assume(np.all(_edge_gap(srt[:, -1], B) > 1e-5))  # no confidence near an edge
    assume(np.all(_edge_gap(P, B) > 1e-5))
    for f in (cp.ece, cp.mce, cp.classwise_ece):
        a, b = f(P, y, n_bins=B), f(P32, y, n_bins=B)
        assert abs(a - b) <= 1e-6, (f.__name__, a, b)
    st64 = cp.binned_statistics(P, y, estimator=EqualWidth(B))[0].stats
    st32 = cp.binned_statistics(P32, y, estimator=EqualWidth(B))[0].stats
    assert np.array_equal(st64.count, st32.count)


@FEW
@given(st.integers(1, 40), st.sampled_from(["right", "left"]))
def test_float32_edges_land_in_the_same_bin(B, rule) -> None:
    j = np.arange(B + 1)
    s64 = j / B
    s32 = np.array([np.float32(v) for v in s64], dtype=np.float32)
    # (lo, hi]: j/B closes bin j-1 (0 is in bin 0); [lo, hi): j/B opens bin j (1 in bin B-1)
    expected = np.maximum(j - 1, 0) if rule == "right" else np.minimum(j, B - 1)
    est = EqualWidth(B, rule)
    ids64, n64 = est.assign(s64, None)
    ids32, n32 = est.assign(s32, None)
    assert n64 == n32 == B
    assert ids64.tolist() == expected.tolist()
    assert ids32.tolist() == expected.tolist()
    # through the pipeline: binary lens and top-label of 2-column rows (conf = j/B >= 1/2)
    y = j % 2
    c64 = cp.binned_statistics(s64, y, lens="binary", estimator=est)[0].stats
    c32 = cp.binned_statistics(s32, y, lens="binary", estimator=est)[0].stats
    assert np.array_equal(c64.count, c32.count)
    assert np.array_equal(c64.count, np.bincount(expected, minlength=B).astype(float))
    top = j[2 * j >= B]
    c = top / B
    P64 = np.stack([c, 1 - c], axis=1)
    P32 = P64.astype(np.float32)  # column 0 holds np.float32(j/B) exactly
    yy = top % 3 == 0
    t64 = cp.binned_statistics(P64, yy.astype(int), estimator=est)[0].stats
    t32 = cp.binned_statistics(P32, yy.astype(int), estimator=est)[0].stats
    assert np.array_equal(t64.count, t32.count)
    assert (
        abs(
            cp.ece(P64, yy.astype(int), n_bins=B, edge_rule=rule)
            - cp.ece(P32, yy.astype(int), n_bins=B, edge_rule=rule)
        )
        <= 1e-6
    )


@FEW
@given(
    st.integers(1, 200),
    st.sampled_from([np.float32, np.float64]),
    st.sampled_from(["right", "left"]),
    st.integers(0, 2**32 - 1),
)
def test_equal_width_large_inputs_bin_by_the_documented_rule(B, dtype, rule, seed) -> None:
    """More than 4096 scores (calipers switches to a floor(s * B) fast path there):
    every score, including edges j/B in the dtype and their neighbours one ulp away,
    lands where the definition puts it: compare with the edges j/B rounded to the dtype,
    (lo, hi] -> searchsorted side 'left', [lo, hi) -> side 'right'."""
    rng = np.random.default_rng(seed)
    edges = np.array([dtype(j / B) for j in range(B + 1)], dtype=dtype)
    near = np.concatenate(
        [edges, np.nextafter(edges, dtype(2)), np.nextafter(edges, dtype(-1))]
    ).astype(dtype)
    near = near[(near >= 0) & (near <= 1)]
    s = np.concatenate([np.repeat(near, 3), rng.random(4200).astype(dtype)])
    rng.shuffle(s)
    assert s.size > 4096 and s.dtype == dtype
    side = "left" if rule == "right" else "right"
    expected = np.clip(np.searchsorted(edges[1:-1], s, side=side), 0, B - 1)
    ids, nb = EqualWidth(B, rule).assign(s, None)
    assert nb == B
    np.testing.assert_array_equal(ids, expected)
    # the small-input path agrees element-wise
    np.testing.assert_array_equal(EqualWidth(B, rule).assign(s[:100], None)[0], expected[:100])
