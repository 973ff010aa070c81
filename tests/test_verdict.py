"""Verdicts (calipers.verdict): categories on cases whose answer is known, the null
against independent computations, reproducibility, and errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calipers as cp
from calipers.inference._verdict import VERDICTS, Verdict, _bind, _pce_null, decide
from calipers.inference.calibration_test import _draw_labels
from calipers.validation import CalibrationInputError, check_predictions


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
    assert abs(v.bias_corrected - 1 / 6) < 0.02 and v.recommended == v.bias_corrected
    assert v.interval[0] < 1 / 6 < v.interval[1]
    assert v.bootstrap_interval is not None
    assert v.bootstrap_interval[0] < v.estimate < v.bootstrap_interval[1]


def test_dirichlet_canonical_ce_in_ten_classes_is_corrected_towards_the_truth() -> None:
    # the recipe's true CE_KL E[KL(p1 || p2)] is about 0.11 (benchmarks/study_verdicts.py);
    # the raw estimate at bandwidth 0.001 is about 2, mostly the estimator's own bias
    p, y = _dirichlet(2000, 10, seed=13)
    v = cp.verdict(cp.ce_kl, p, y, bandwidth=0.001, n_resamples=39, bandwidth_factors=None)
    assert v.null_mean >= 0.5 * v.estimate  # at calibration, most of it is bias
    assert v.estimate > 1.0 and v.recommended < 0.3
    assert v.world_model == "temperature scaling"  # the recipe is a temperature scaling
    assert v.interval[0] < 0.11 < v.interval[1] and v.bandwidth == 0.001


def test_moderate_miscalibration_at_a_few_thousand_rows_is_resolved_near_the_truth() -> None:
    # the case: p ~ Beta(2, 2), P(y = 1 | p) = p^0.9, n = 5000; the true ECE
    # E|p^0.9 - p| (the sign is constant, so binning does not change it) by quadrature
    from scipy import integrate, stats

    truth = integrate.quad(lambda s: (s**0.9 - s) * stats.beta(2, 2).pdf(s), 0, 1)[0]
    assert truth == pytest.approx(0.0305, abs=5e-4)
    rng = np.random.default_rng(0)
    p = rng.beta(2, 2, size=5000)
    y = (rng.uniform(size=5000) < p**0.9).astype(int)
    for metric in (cp.ece, cp.smece):
        v = cp.verdict(metric, p, y, n_resamples=100)
        assert v.category == "resolved", str(v)
        assert abs(v.recommended - truth) < 0.2 * truth
        assert v.interval[0] < truth < v.interval[1]
        # the bias at calibration would have removed more than half of the truth
        assert v.estimate - v.null_mean < 0.6 * truth


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
    assert v.bias_corrected == pytest.approx(v.estimate - v.bias, abs=1e-15)
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
    # the recommended number is corrected at the fitted curve, at the same bandwidth: the
    # flag is raised only for a number corrected at calibration
    assert v.recommended_method.startswith("bias at the fitted calibration curve")
    assert not v.bandwidth_flag and max(vals) - min(vals) > 0


def test_a_metric_without_bandwidth_has_no_sensitivity() -> None:
    p, y = _binary(300, seed=25)
    v = cp.verdict(cp.ece, p, y, n_resamples=19, n_bootstrap=0)
    assert v.bandwidth is None and v.bandwidth_sensitivity == () and not v.bandwidth_flag


# ----------------------------------------------------------------------------- the rule


def test_decide_on_hand_made_nulls() -> None:
    from calipers.inference.bias_correction import BiasCorrection, correct

    null = np.linspace(0.0, 0.1, 99)  # mean 0.05; 50 draws are >= 0.05
    cat, why, need = decide(0.05, null, correct(0.05, null), n=100)
    assert cat == "not_distinguishable" and need is None and "p = 0.51" in why
    # no draw reaches 0.2; corrected at calibration 0.15 with the null's spread +-0.05
    c = correct(0.2, null)
    assert c.recommended == pytest.approx(0.15) and c.interval[0] > 0
    assert decide(0.2, null, c, n=100)[0] == "resolved"

    def corr(rec: float, lo: float, hi: float) -> BiasCorrection:
        return BiasCorrection(rec, rec, 0.2 - rec, (lo, hi), "fitted calibration curve", "m", rec)

    # an interval that reaches 0: the rows that would resolve it, n (half-width / rec)^2
    cat, why, need = decide(0.2, null, corr(0.02, 0.0, 0.05), n=2000)
    assert cat == "cannot_resolve" and need == 4500 and "n = 4500" in why
    assert decide(0.2, null, corr(0.0, 0.0, 0.05), n=2000)[2] is None
    # a kernel estimate that moves by more than it resolves, corrected at calibration only
    cat, why, _ = decide(0.2, null, c, n=100, spread=0.16)
    assert cat == "cannot_resolve" and "bandwidth" in why
    assert decide(0.2, null, c, n=100, spread=0.14)[0] == "resolved"
    assert decide(0.2, null, corr(0.1, 0.05, 0.15), n=100, spread=0.16)[0] == "resolved"
    assert decide(0.05, null, c, n=100, spread=1.0)[0] == "not_distinguishable"


def test_n_to_resolve_rounds_up_to_two_significant_digits() -> None:
    from calipers.inference._verdict import n_to_resolve

    assert n_to_resolve(2000, 0.02, (0.0, 0.05)) == 4500  # 2000 * (0.03 / 0.02)^2
    assert n_to_resolve(1000, 0.01, (0.0, 0.0333)) == 5500  # 5428.9 -> 5500
    assert n_to_resolve(1000, 0.0, (0.0, 0.05)) is None
    assert n_to_resolve(1000, 0.05, (0.0, 0.05)) == 1100  # more rows than now, rounded up


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
        ({"bandwidth_factors": [-1.0]}, "bandwidth_factors must be positive"),
    ],
)
def test_bad_options_are_refused(kwargs: dict, match: str) -> None:
    p, y = _binary(100, seed=41)
    with pytest.raises(CalibrationInputError, match=match):
        cp.verdict(cp.ece, p, y, **{"n_bootstrap": 0, **kwargs})


def test_bias_ratio_is_deprecated_and_ignored() -> None:
    p, y = _binary(300, seed=43, power=1.5)
    with pytest.warns(FutureWarning, match="bias_ratio"):
        a = cp.verdict(cp.ece, p, y, n_resamples=19, bias_ratio=0.9)
    b = cp.verdict(cp.ece, p, y, n_resamples=19)
    assert a.to_dict() == b.to_dict()


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


# ----------------------------------------------------------------------------- batched terms


@pytest.mark.parametrize("lens", ["canonical", "classwise", "binary"])
@pytest.mark.parametrize("weighted", [False, True])
def test_draw_terms_equal_the_slice_terms_of_each_draw(lens: str, weighted: bool) -> None:
    # the all-draws-at-once terms of the batched null against proper_calibration_error's
    # own per-slice computation, one draw at a time, on the lens's real slices
    from calipers.estimators.dirichlet_kernel import DirichletKernel
    from calipers.inference._verdict import _draw_terms
    from calipers.metrics._proper_calibration_error import _slice_terms
    from calipers.pipeline.lenses import get_lens

    rng = np.random.default_rng(51)
    n, r = 120, 5
    if lens == "binary":
        p = rng.uniform(0.02, 0.98, size=n)
    else:
        p = rng.dirichlet(np.ones(4), size=n)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    P0 = check_predictions(p, _draw_labels(p, rng), sample_weight=w)
    draws = [
        list(get_lens(lens)(check_predictions(p, _draw_labels(p, rng), sample_weight=w)))
        for _ in range(r)
    ]
    for s, sl in enumerate(get_lens(lens)(P0)):
        T = np.stack([np.asarray(d[s].targets, dtype=np.float64) for d in draws], axis=1)
        R = DirichletKernel(0.08).regress(sl.scores, T, sl.weights)
        for divergence in ("kl", "squared_l2"):
            for binary_f in ("scalar", "two_point"):
                for method in ("direct", "via_risk"):
                    got = _draw_terms(
                        sl.scores, T, R, sl.weights, divergence, binary_f, 1e-7, method
                    )
                    want = [
                        float(
                            _slice_terms(
                                sl.scores,
                                T[:, j],
                                sl.weights,
                                divergence,
                                binary_f,
                                0.08,
                                1e-7,
                                None,
                                r=R[:, j],
                            )[method]
                        )
                        for j in range(r)
                    ]
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("divergence", ["squared_l2", "bregman"])
def test_batched_kernel_null_over_several_batches_equals_each_draw(
    divergence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # batches of 2 draws (7 draws: 4 kernel passes), sample weights, via_risk; a user's
    # Bregman generator takes the draw-by-draw path

    from calipers.inference import _verdict as vd

    monkeypatch.setattr(vd, "_BATCH_ENTRIES", 2 * 100 * 3)
    monkeypatch.setattr(vd, "_TERMS_ENTRIES", 100 * 3)  # one draw per chunk of terms
    p, _ = _dirichlet(100, 3, seed=52)
    w = np.random.default_rng(53).uniform(0.5, 2.0, size=100)
    div: object = (
        cp.Bregman(lambda x: (x * x).sum(-1), lambda x: 2 * x)
        if divergence == "bregman"
        else divergence
    )
    kw = {"bandwidth": 0.05, "divergence": div, "method": "via_risk"}
    P = check_predictions(p, _draw_labels(p, np.random.default_rng(0)), sample_weight=w)
    batched = _pce_null(
        _bind(cp.proper_calibration_error, dict(kw)), P, 7, np.random.default_rng(4)
    )
    rng = np.random.default_rng(4)
    direct = [
        cp.proper_calibration_error(p, _draw_labels(P.probs, rng), sample_weight=w, **kw).value
        for _ in range(7)
    ]
    np.testing.assert_allclose(batched, direct, rtol=1e-12)
