"""Verdicts (calipers.verdict): categories on cases whose answer is known, the null
against independent computations, reproducibility, and errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calipers as cp
from calipers.calibration_test import _draw_labels
from calipers.validation import CalibrationInputError, check_predictions
from calipers.verdict import VERDICTS, Verdict, _bind, _pce_null, decide


def _binary(n: int, seed: int, power: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """p ~ U(0, 1), P(y = 1 | p) = p**power (power 1: calibrated)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p**power).astype(np.int64)


def _dirichlet(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The miscalibrated recipe of benchmarks/study_dirichlet_bias.py: labels from p1,
    scores p2 = softmax(log p1 / 0.6) (true CE_KL > 0)."""
    rng = np.random.default_rng(seed)
    u = rng.dirichlet(np.ones(k), size=n)
    p1 = np.exp(np.log(u) / 0.9)
    p1 = np.clip(p1 / p1.sum(1, keepdims=True), 1e-7, 1)
    p1 /= p1.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p1, 1)).sum(1).clip(0, k - 1)
    p2 = np.exp(np.log(p1) / 0.6)
    return p2 / p2.sum(1, keepdims=True), y


# ----------------------------------------------------------------------------- categories


def test_calibrated_large_n_is_not_distinguishable() -> None:
    p, y = _binary(20000, seed=11)
    v = cp.verdict(cp.ece, p, y, n_resamples=99, n_bootstrap=0)
    assert v.category == "not_distinguishable" and v.p_value > 0.05
    assert v.verdict == VERDICTS["not_distinguishable"]
    assert "cannot be told from 0" in v.reason


def test_strongly_miscalibrated_binary_is_resolved() -> None:
    p, y = _binary(5000, seed=12, power=2.0)  # P(y=1|p) = p^2: ECE -> 1/6
    v = cp.verdict(cp.ece, p, y, n_resamples=99, n_bootstrap=200)
    assert v.category == "resolved"
    assert v.p_value == pytest.approx(1 / 100)  # no draw reaches it
    assert abs(v.bias_corrected - 1 / 6) < 0.02
    assert v.interval is not None and v.interval[0] < v.estimate < v.interval[1]


def test_dirichlet_canonical_ce_in_ten_classes_at_2000_rows_cannot_resolve() -> None:
    p, y = _dirichlet(2000, 10, seed=13)
    v = cp.verdict(
        cp.ce_kl, p, y, bandwidth=0.001, n_resamples=39, n_bootstrap=0, bandwidth_factors=None
    )
    assert v.category == "cannot_resolve"
    assert v.null_mean >= 0.5 * v.estimate  # the estimator's bias on a calibrated model
    assert "own bias" in v.reason and v.bandwidth == 0.001


# ----------------------------------------------------------------------------- the null


def test_null_mean_matches_the_closed_form_of_a_one_bin_ece() -> None:
    # one bin: T* = |mean(y* - p)|; under H0 mean(y* - p) is a sum of independent centred
    # terms of variance sum p(1 - p) / n^2, so E T* = sqrt(2 / pi) sigma (normal limit)
    rng = np.random.default_rng(21)
    p = rng.uniform(0.05, 0.95, 3000)
    y = (rng.uniform(size=3000) < p).astype(int)
    B = 400
    v = cp.verdict(cp.ece, p, y, n_bins=1, n_resamples=B, n_bootstrap=0)
    sigma = math.sqrt(float(np.sum(p * (1 - p)))) / p.size
    expected = math.sqrt(2 / math.pi) * sigma
    se = sigma * math.sqrt(1 - 2 / math.pi) / math.sqrt(B)
    assert abs(v.null_mean - expected) < 4 * se
    # p-value and bias correction recomputed from the draws
    null = v.null_distribution
    assert v.p_value == pytest.approx((1 + np.sum(null >= v.estimate - 1e-12)) / (B + 1))
    assert v.bias_corrected == pytest.approx(v.estimate - null.mean(), abs=1e-15)
    assert v.null_quantile == pytest.approx(np.quantile(null, 0.95))


def test_null_draws_are_the_metric_on_labels_drawn_from_the_predictions() -> None:
    # direct Monte Carlo written here: the same generator, draw by draw
    p, y = _binary(500, seed=22, power=1.5)
    v = cp.verdict(cp.smece, p, y, bandwidth=0.05, n_resamples=25, n_bootstrap=0, seed=5)
    rng = np.random.default_rng(5)
    direct = []
    for _ in range(25):
        ys = (rng.random(500) < p).astype(int)
        direct.append(cp.smece(p, ys, bandwidth=0.05))
    np.testing.assert_allclose(v.null_distribution, direct, rtol=1e-12)


@pytest.mark.parametrize("lens", ["canonical", "classwise"])
def test_batched_kernel_null_equals_the_estimator_on_each_draw(lens: str) -> None:
    p, y = _dirichlet(150, 3, seed=23)
    P = check_predictions(p, y)
    m = _bind(cp.ce_kl, {"bandwidth": 0.05, "lens": lens})
    batched = _pce_null(m, P, 4, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    direct = [cp.ce_kl(p, _draw_labels(P.probs, rng), bandwidth=0.05, lens=lens) for _ in range(4)]
    np.testing.assert_allclose(batched, direct, rtol=1e-10)


def test_bandwidth_sensitivity_is_the_estimate_at_each_bandwidth() -> None:
    p, y = _binary(800, seed=24, power=1.3)
    v = cp.verdict(cp.smece, p, y, bandwidth=0.04, n_resamples=19, n_bootstrap=0)
    hs = [h for h, _ in v.bandwidth_sensitivity]
    np.testing.assert_allclose(hs, [0.02, 0.04 / math.sqrt(2), 0.04, 0.04 * math.sqrt(2), 0.08])
    for h, val in v.bandwidth_sensitivity:
        assert val == pytest.approx(cp.smece(p, y, bandwidth=h), rel=1e-12)
    vals = [x for _, x in v.bandwidth_sensitivity]
    assert v.bandwidth_flag == (max(vals) - min(vals) > abs(v.bias_corrected))


def test_a_metric_without_bandwidth_has_no_sensitivity() -> None:
    p, y = _binary(300, seed=25)
    v = cp.verdict(cp.ece, p, y, n_resamples=19, n_bootstrap=0)
    assert v.bandwidth is None and v.bandwidth_sensitivity == () and not v.bandwidth_flag


# ----------------------------------------------------------------------------- the rule


def test_decide_on_hand_made_nulls() -> None:
    null = np.linspace(0.0, 0.1, 99)  # mean 0.05; 50 draws are >= 0.05
    cat, _, p = decide(0.05, null, n=100)
    assert cat == "not_distinguishable" and p == pytest.approx(51 / 100)
    cat, _, p = decide(0.2, null, n=100)  # no draw reaches 0.2; mean 0.05 < 0.5 * 0.2
    assert cat == "resolved" and p == pytest.approx(1 / 100)
    assert decide(0.2, null, n=100, bias_ratio=0.2)[0] == "cannot_resolve"  # 0.05 >= 0.04
    # a kernel estimate that moves by more than the 0.15 it resolves above the mean
    cat, why, _ = decide(0.2, null, n=100, spread=0.16)
    assert cat == "cannot_resolve" and "bandwidth" in why
    assert decide(0.2, null, n=100, spread=0.14)[0] == "resolved"
    assert decide(0.05, null, n=100, spread=1.0)[0] == "not_distinguishable"


def test_from_null_flags_a_bandwidth_spread_larger_than_the_resolved_amount() -> None:
    v = Verdict.from_null(
        "k", 0.3, np.full(99, 0.02), n=500, bandwidth_sensitivity=[(0.01, 0.6), (0.02, 0.3)]
    )
    assert v.bandwidth_flag and v.category == "cannot_resolve"


# ----------------------------------------------------------------------------- output


def test_same_seed_same_verdict_and_readable_output() -> None:
    p, y = _binary(1000, seed=31, power=1.4)
    a = cp.verdict(cp.ece, p, y, n_resamples=50, n_bootstrap=50, seed=3)
    b = cp.verdict(cp.ece, p, y, n_resamples=50, n_bootstrap=50, seed=3)
    c = cp.verdict(cp.ece, p, y, n_resamples=50, n_bootstrap=50, seed=4)
    assert a.to_dict() == b.to_dict()
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
    assert not np.array_equal(a.null_distribution, c.null_distribution)
    d = json.loads(json.dumps(a.to_dict()))
    assert d["category"] == a.category and d["verdict"] == VERDICTS[a.category]
    text = str(a)
    assert a.verdict in text and "calibrated null" in text and "why:" in text
    with pytest.raises(ValueError):
        a.null_distribution[0] = 1.0  # read-only


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_resamples": 5}, "n_resamples must be >= 19"),
        ({"n_resamples": 2.5}, "n_resamples must be an integer"),
        ({"n_bootstrap": 1}, "n_bootstrap must be 0 or >= 2"),
        ({"alpha": 1.5}, "alpha must be a number in"),
        ({"bias_ratio": 0}, "bias_ratio must be a number in"),
        ({"bandwidth_factors": [-1.0]}, "bandwidth_factors must be positive"),
    ],
)
def test_bad_options_are_refused(kwargs: dict, match: str) -> None:
    p, y = _binary(100, seed=41)
    with pytest.raises(CalibrationInputError, match=match):
        cp.verdict(cp.ece, p, y, **{"n_bootstrap": 0, **kwargs})


def test_bad_metric_and_input_are_refused() -> None:
    p, y = _binary(100, seed=42)
    with pytest.raises(CalibrationInputError, match="metric must be"):
        cp.verdict("ece", p, y)  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="on the data itself"):
        cp.verdict(lambda P, _, **kw: float("nan"), p, y, n_bootstrap=0)
    with pytest.raises(CalibrationInputError, match="not finite on"):
        cp.verdict(
            lambda P, _, **kw: 1.0 if np.array_equal(P.labels, y) else math.inf,
            p,
            y,
            n_bootstrap=0,
            n_resamples=19,
        )
    with pytest.raises(CalibrationInputError, match="already a calipers.Predictions"):
        cp.verdict(cp.ece, check_predictions(p, y), None, sample_weight=np.ones(100))
    with pytest.raises(CalibrationInputError):
        cp.verdict(cp.ece, p, y[:50], n_bootstrap=0)
    with pytest.raises(CalibrationInputError, match="fixes the divergence"):
        cp.verdict(cp.ce_kl, p, y, divergence="kl", n_bootstrap=0)


def test_a_p_value_at_the_resampling_floor_prints_as_a_bound() -> None:
    # no draw of 200 reaches a strongly miscalibrated estimate: p = 1/201 is only an
    # upper bound, printed "p < 0.005" (as the report prints it), never "p = 0.00498"
    rng = np.random.default_rng(41)
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < p**3).astype(int)
    v = cp.verdict(cp.ece, p, y, n_resamples=200, n_bootstrap=0)
    assert v.p_value == pytest.approx(1 / 201)
    assert "p < 0.005" in str(v) and "p < 0.005" in v.reason
    assert "0.00498" not in str(v)
