"""Calibration hypothesis tests: consistency resampling and the SKCE tests of Widmann et al. 2019.

Validity is checked on data that satisfy H0 by construction (labels drawn from
the predictions): over 200 replications the number of p-values <= 0.05 must be
a plausible Binomial(200, 0.05) draw. Power is checked on a clearly
overconfident model. The statistics are compared with direct O(n^2)
definitions written here.
"""

import functools

import numpy as np
import pytest
from scipy.stats import norm

import calipers as cp
from calipers.inference.calibration_test import (
    CalibrationTestResult,
    _draw_labels,
    _quadratic_null,
    consistency_test,
    skce_test,
)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _sample(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Labels from the rows of q: the first class whose cumulative probability exceeds u."""
    u = rng.uniform(size=(q.shape[0], 1))
    return np.minimum((q.cumsum(1) <= u).sum(1), q.shape[1] - 1)


def _null_data(seed: int, n: int, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = _softmax(rng.normal(size=(n, k)))
    return p, _sample(p, rng)


def _miscalibrated(seed: int, n: int, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    return _softmax(3 * z), _sample(_softmax(z), rng)


def _top_gap(p: np.ndarray, y: np.ndarray) -> float:
    """A cheap calibration statistic: |mean confidence - accuracy|."""
    return float(abs(p.max(1).mean() - (p.argmax(1) == y).mean()))


# Binomial(200, 0.05): P(X <= 1) = 4e-4, P(X >= 21) = 2e-3
REPS, LO, HI = 200, 2, 20


def _check_uniform(pv: np.ndarray) -> None:
    assert LO <= np.count_nonzero(pv <= 0.05) <= HI
    # the middle of the distribution too: Binomial(200, 1/2) within 3 sd
    assert abs(np.mean(pv <= 0.5) - 0.5) < 3 * np.sqrt(0.25 / REPS)


# ---------------------------------------------------------------- p-value formula, sampling


def test_p_value_formula_on_a_hand_case() -> None:
    values = iter([0.5, 0.1, 0.5, 0.7, 0.2])  # observed, then B = 4 null draws

    def stat(p: np.ndarray, y: np.ndarray) -> float:
        return next(values)

    r = consistency_test([[0.6, 0.4], [0.3, 0.7]], [0, 1], statistic=stat, n_resamples=4)
    # (1 + #{0.5, 0.7 >= 0.5}) / (1 + 4), the tie counts
    assert r.p_value == pytest.approx(3 / 5, abs=1e-15)
    assert r.statistic == 0.5 and r.n_resamples == 4 and r.method == "consistency"
    np.testing.assert_array_equal(r.null_distribution, [0.1, 0.5, 0.7, 0.2])
    assert not r.null_distribution.flags.writeable


def test_draw_labels_follows_the_predictions() -> None:
    rng = np.random.default_rng(0)
    q = np.array([0.0, 0.2, 0.0, 0.5, 0.3, 0.0])
    y = _draw_labels(np.tile(q, (40000, 1)), rng)
    counts = np.bincount(y, minlength=6)
    assert counts[[0, 2, 5]].sum() == 0  # zero-probability classes never drawn
    assert np.all(np.abs(counts / 40000 - q) < 4 * np.sqrt(q * (1 - q) / 40000) + 1e-12)
    # one-hot rows are deterministic; binary 1-D draws are Bernoulli(p)
    assert _draw_labels(np.eye(4)[[2, 0, 3]], rng).tolist() == [2, 0, 3]
    yb = _draw_labels(np.array([0.0, 1.0, 0.3] * 20000), rng).reshape(-1, 3)
    assert yb[:, 0].sum() == 0 and yb[:, 1].min() == 1
    assert abs(yb[:, 2].mean() - 0.3) < 4 * np.sqrt(0.21 / 20000)


def test_reproducible_with_the_seed() -> None:
    p, y = _null_data(1, 60)
    a = consistency_test(p, y, statistic=_top_gap, n_resamples=30, seed=3)
    b = consistency_test(p, y, statistic=_top_gap, n_resamples=30, seed=3)
    c = consistency_test(p, y, statistic=_top_gap, n_resamples=30, seed=4)
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
    assert a == b
    assert not np.array_equal(a.null_distribution, c.null_distribution)
    qa = skce_test(p, y, method="quadratic", n_resamples=30, seed=3)
    qb = skce_test(p, y, method="quadratic", n_resamples=30, seed=3)
    np.testing.assert_array_equal(qa.null_distribution, qb.null_distribution)


def test_default_statistic_is_ece_and_any_metric_can_be_passed() -> None:
    p, y = _miscalibrated(2, 300)
    r = consistency_test(p, y, n_resamples=19)
    assert r.statistic == cp.ece(p, y)
    f = functools.partial(cp.calibration_error, lens="classwise", divergence="l2")
    r2 = consistency_test(p, y, statistic=f, n_resamples=19)
    assert r2.statistic == f(p, y)
    # a miscalibrated model: none of the synthetic data sets reaches the observed value
    assert r.p_value == r2.p_value == pytest.approx(1 / 20)


def test_sample_weight_and_logits_are_passed_on() -> None:
    seen: list[dict] = []

    def stat(p: np.ndarray, y: np.ndarray, **kw: object) -> float:
        seen.append({"p": p, **kw})
        return 0.0

    z = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    w = np.array([1.0, 2.0, 3.0])
    consistency_test(z, [0, 1, 1], statistic=stat, n_resamples=2, logits=True, sample_weight=w)
    np.testing.assert_allclose(seen[0]["p"], _softmax(z), rtol=1e-15)  # probabilities
    np.testing.assert_array_equal(seen[0]["sample_weight"], w)
    # resampled rows keep their own weights
    for s in seen[1:]:
        rows = [int(np.flatnonzero(np.all(np.isclose(_softmax(z), r), 1))[0]) for r in s["p"]]
        np.testing.assert_array_equal(s["sample_weight"], w[rows])


# ---------------------------------------------------------------- validity under H0


@pytest.mark.parametrize("resample", [False, True])
def test_consistency_p_values_uniform_under_the_null(resample: bool) -> None:
    pv = np.array(
        [
            consistency_test(
                *_null_data(100 + r, 60),
                statistic=_top_gap,
                n_resamples=39,  # p in {k/40}: p <= 0.05 iff k <= 2, an exact 5% level
                resample_predictions=resample,
                seed=r,
            ).p_value
            for r in range(REPS)
        ]
    )
    _check_uniform(pv)


def test_skce_block_p_values_uniform_under_the_null() -> None:
    data = [_null_data(300 + r, 200) for r in range(REPS)]
    _check_uniform(np.array([skce_test(p, y).p_value for p, y in data]))
    # 20 blocks of 10: the normal approximation is conservative (2.7% at the 5% level
    # in 2000 replications), so only the level is checked
    pv = np.array([skce_test(p, y, block_size=10).p_value for p, y in data])
    assert np.count_nonzero(pv <= 0.05) <= HI


def test_skce_quadratic_p_values_uniform_under_the_null() -> None:
    pv = np.array(
        [
            skce_test(*_null_data(500 + r, 100), method="quadratic", n_resamples=99, seed=r).p_value
            for r in range(REPS)
        ]
    )
    _check_uniform(pv)


# ---------------------------------------------------------------- power


def test_clearly_miscalibrated_model_is_rejected() -> None:
    p, y = _miscalibrated(7, 400)
    assert consistency_test(p, y, n_resamples=99).p_value == pytest.approx(0.01)
    assert skce_test(p, y, method="quadratic", n_resamples=199).p_value == pytest.approx(1 / 200)
    assert skce_test(p, y, block_size=20).p_value < 1e-3
    # the linear (block of 2) estimator has less power and needs more data
    pb, yb = _miscalibrated(8, 20000)
    assert skce_test(pb, yb).p_value < 1e-4
    # the calibrated model on the same features is not rejected
    rng = np.random.default_rng(9)
    q = _softmax(rng.normal(size=(400, 3)))
    yq = _sample(q, rng)
    assert skce_test(q, yq, method="quadratic", n_resamples=99).p_value > 0.05
    assert consistency_test(q, yq, n_resamples=99).p_value > 0.05


# ---------------------------------------------------------------- SKCE statistics by hand


def _direct_h(p: np.ndarray, y: np.ndarray, bw: float) -> np.ndarray:
    E = np.eye(p.shape[1])[y] - p
    K = np.exp(-np.abs(p[:, None, :] - p[None, :, :]).sum(-1) / bw)
    return K * (E @ E.T)


@pytest.mark.parametrize("m", [2, 3, 7])
def test_block_test_by_hand(m: int) -> None:
    p, y = _miscalibrated(3, 101, 4)
    bw = 0.7
    H = _direct_h(p, y, bw)
    nb = 101 // m
    v = []
    for b in range(nb):
        s = slice(b * m, (b + 1) * m)
        Hb = H[s, s]
        v.append((Hb.sum() - np.trace(Hb)) / (m * (m - 1)))
    v = np.array(v)
    z = v.mean() / (v.std(ddof=1) / np.sqrt(nb))
    r = skce_test(p, y, block_size=m, bandwidth=bw)
    assert r.statistic == pytest.approx(v.mean(), abs=1e-14)
    assert r.statistic == pytest.approx(
        cp.skce(p, y, estimator="block", block_size=m, bandwidth=bw), abs=1e-14
    )
    assert r.z == pytest.approx(z, rel=1e-12)
    assert r.p_value == pytest.approx(norm.sf(z), rel=1e-10)
    assert r.stderr == pytest.approx(v.std(ddof=1) / np.sqrt(nb), rel=1e-12)
    assert r.n_resamples == 0 and r.null_distribution.shape == (0,)


def test_quadratic_bootstrap_statistic_by_hand() -> None:
    # T* = U-statistic of the empirically centred kernel on a resample (Arcones & Gine)
    p, y = _miscalibrated(4, 23, 3)
    n, bw = 23, 1.3
    H = _direct_h(p, y, bw)
    g = H.mean(1)
    hbar = H.mean()
    E = np.eye(3)[y] - p
    idx = np.random.default_rng(0).integers(0, n, size=(5, n))
    skce_uq, null = _quadratic_null(p, E, idx, bw)
    assert skce_uq == pytest.approx((H.sum() - np.trace(H)) / (n * (n - 1)), abs=1e-14)
    assert skce_uq == pytest.approx(cp.skce(p, y, bandwidth=bw), abs=1e-14)
    for b in range(5):
        i = idx[b]
        Hc = H[np.ix_(i, i)] - g[i][:, None] - g[i][None, :] + hbar
        t = (Hc.sum() - np.trace(Hc)) / (n * (n - 1))
        assert null[b] == pytest.approx((n - 1) / n * t, abs=1e-13)
    # through the public function: the statistic and the p-value formula
    r = skce_test(p, y, method="quadratic", bandwidth=bw, n_resamples=50, seed=1)
    assert r.statistic == pytest.approx(skce_uq, abs=1e-14)
    assert r.p_value == pytest.approx(
        (1 + np.count_nonzero(r.null_distribution >= r.statistic)) / 51, abs=1e-15
    )


def test_quadratic_rows_in_blocks_equal_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    import calipers.inference.calibration_test as ct

    p, y = _null_data(5, 70)
    a = skce_test(p, y, method="quadratic", n_resamples=20)
    monkeypatch.setattr(ct, "_ROWS", 16)
    b = skce_test(p, y, method="quadratic", n_resamples=20)
    np.testing.assert_allclose(a.null_distribution, b.null_distribution, rtol=1e-10, atol=1e-15)


# ---------------------------------------------------------------- errors


def test_bad_arguments() -> None:
    p, y = _null_data(0, 10)
    with pytest.raises(cp.CalibrationInputError, match="sample_weight"):
        skce_test(p, y, sample_weight=np.ones(10))
    with pytest.raises(cp.CalibrationInputError, match="method"):
        skce_test(p, y, method="linear")  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="block_size"):
        skce_test(p, y, block_size=6)  # one block only
    with pytest.raises(cp.CalibrationInputError, match="bandwidth"):
        skce_test(p, y, bandwidth=0.0)
    with pytest.raises(cp.CalibrationInputError, match="n_resamples"):
        consistency_test(p, y, n_resamples=0)
    with pytest.raises(cp.CalibrationInputError, match="n_resamples"):
        skce_test(p, y, method="quadratic", n_resamples=1.5)  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="non-finite"):
        consistency_test(p, y, statistic=lambda a, b: float("nan"))
    with pytest.raises(cp.CalibrationInputError):
        consistency_test(p[:, :2], y)  # rows do not sum to 1


def test_result_repr() -> None:
    r = CalibrationTestResult(0.25, 0.5, np.zeros(3), 3, "consistency")
    assert repr(r) == (
        "CalibrationTestResult(statistic=0.25, p_value=0.5, n_resamples=3, method='consistency')"
    )
