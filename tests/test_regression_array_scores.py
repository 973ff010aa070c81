"""Scores on arrays: CRPS of ensembles and quantile sets, consistent scores of point forecasts.

Each score is checked three ways: hand-computed values, an independent
brute-force implementation written here (the O(k**2) energy form, the
piecewise integral of ``(F - 1{y <= x})**2``, the textbook pinball loss), and,
where installed, the peers as oracles to 1e-12 (scoringrules, properscoring,
scikit-learn, model-diagnostics). The hand and brute-force tests run without
any peer.
"""

from __future__ import annotations

import numpy as np
import pytest

from calipers.regression import (
    bregman_score,
    bregman_score_per_row,
    crps_ensemble,
    crps_ensemble_per_row,
    crps_quantiles,
    crps_quantiles_per_row,
    expectile_score,
    expectile_score_per_row,
    interval_coverage,
    interval_score,
    interval_score_per_row,
    interval_width,
    pinball_loss,
    pinball_loss_per_row,
    squared_error,
    squared_error_per_row,
    weighted_interval_score,
    weighted_interval_score_per_row,
)
from calipers.validation import CalibrationInputError

RTOL = 1e-12


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- brute-force references


def _energy(X: np.ndarray, y: np.ndarray, fair: bool = False, w: np.ndarray | None = None):
    """The energy form with the full k x k matrix of member differences."""
    n, k = X.shape
    W = np.full((n, k), 1.0 / k) if w is None else np.broadcast_to(w, (n, k))
    W = W / W.sum(axis=1, keepdims=True)
    out = np.empty(n)
    for i in range(n):
        e1 = np.sum(W[i] * np.abs(X[i] - y[i]))
        pair = np.abs(X[i][:, None] - X[i][None, :])
        if fair:
            e2 = pair.sum() / (k * (k - 1))
        else:
            e2 = np.sum(W[i][:, None] * W[i][None, :] * pair)
        out[i] = e1 - 0.5 * e2
    return out


def _integral(x: np.ndarray, y: float, w: np.ndarray | None = None) -> float:
    """Exact integral of (F(t) - 1{y <= t})**2 over t, piece by piece between the jumps."""
    k = x.size
    w = np.full(k, 1.0 / k) if w is None else w / w.sum()
    pts = np.sort(np.concatenate([x, [y]]))
    total = 0.0
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        if b <= a:
            continue
        t = 0.5 * (a + b)
        F = w[x <= t].sum()
        H = 1.0 if y <= t else 0.0
        total += (b - a) * (F - H) ** 2
    return total


def _pinball(z: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(y >= z, alpha * (y - z), (1 - alpha) * (z - y))


# ---------------------------------------------------------------- CRPS of ensembles


def test_crps_ensemble_hand_values() -> None:
    # members 0, 2 and target 1: E|X - y| = 1, E|X - X'| = 1 (standard) or 2 (fair)
    assert crps_ensemble_per_row([[0.0, 2.0]], [1.0]).tolist() == [0.5]
    assert crps_ensemble_per_row([[0.0, 2.0]], [1.0], estimator="fair").tolist() == [0.0]
    # one member: the absolute error
    assert crps_ensemble_per_row([[3.0], [-1.0]], [1.0, 1.0]).tolist() == [2.0, 2.0]
    # members 0, 1, 2 and target 3: E|X - y| = 2, sum_ij |x_i - x_j| = 8
    assert crps_ensemble_per_row([[2.0, 0.0, 1.0]], [3.0]).tolist() == [2.0 - 8 / 18]
    assert crps_ensemble_per_row([[2.0, 0.0, 1.0]], [3.0], estimator="fair").tolist() == [
        2.0 - 8 / 12
    ]


@pytest.mark.parametrize("k", [1, 2, 3, 10, 51])
def test_crps_ensemble_matches_the_energy_form_and_the_integral(k: int) -> None:
    rng = _rng(k)
    X = rng.normal(size=(40, k)) * 2.0 + 1.0
    X[:5] = np.round(X[:5])  # ties among members and with the target
    y = rng.normal(size=40) * 2.0 + 1.0
    y[:5] = X[:5, 0]
    got = crps_ensemble_per_row(X, y)
    np.testing.assert_allclose(got, _energy(X, y), rtol=RTOL, atol=1e-14)
    np.testing.assert_allclose(
        got, [_integral(X[i], y[i]) for i in range(40)], rtol=RTOL, atol=1e-14
    )
    if k >= 2:
        np.testing.assert_allclose(
            crps_ensemble_per_row(X, y, estimator="fair"),
            _energy(X, y, fair=True),
            rtol=RTOL,
            atol=1e-14,
        )


def test_crps_ensemble_member_weights() -> None:
    rng = _rng(3)
    X = np.round(rng.normal(size=(30, 7)), 1)  # ties
    y = rng.normal(size=30)
    W = rng.uniform(size=(30, 7))
    W[:3, 2] = 0.0
    got = crps_ensemble_per_row(X, y, member_weights=W)
    np.testing.assert_allclose(got, _energy(X, y, w=W), rtol=RTOL, atol=1e-14)
    np.testing.assert_allclose(
        got, [_integral(X[i], y[i], W[i]) for i in range(30)], rtol=RTOL, atol=1e-14
    )
    # one weight vector for all rows; equal weights are the unweighted score
    np.testing.assert_allclose(
        crps_ensemble_per_row(X, y, member_weights=W[0]),
        _energy(X, y, w=W[0]),
        rtol=RTOL,
        atol=1e-14,
    )
    np.testing.assert_allclose(
        crps_ensemble_per_row(X, y, member_weights=np.ones(7)),
        crps_ensemble_per_row(X, y),
        rtol=RTOL,
        atol=1e-15,
    )
    # an integer weight is the member repeated
    reps = np.array([1, 3, 2, 1, 1, 4, 2])
    np.testing.assert_allclose(
        crps_ensemble_per_row(X, y, member_weights=reps),
        crps_ensemble_per_row(np.repeat(X, reps, axis=1), y),
        rtol=RTOL,
        atol=1e-15,
    )


def test_standard_ensemble_crps_is_the_quantile_form_at_midpoint_levels() -> None:
    # CRPS of the empirical distribution = (2/k) sum_i rho_{(i - 1/2)/k}(y - x_(i))
    rng = _rng(4)
    k = 20
    X = rng.normal(size=(50, k))
    y = rng.normal(size=50)
    levels = (np.arange(1, k + 1) - 0.5) / k
    np.testing.assert_allclose(
        crps_ensemble_per_row(X, y),
        crps_quantiles_per_row(levels, np.sort(X, axis=1), y),
        rtol=RTOL,
        atol=1e-15,
    )


def test_crps_ensemble_keeps_its_digits_under_a_large_offset() -> None:
    # members and targets on a 2**-20 grid: x + 2**30 is exact, so every difference
    # x - y is the same number with and without the offset, and so must the score be
    # (a sum of sorted members times rank weights would lose ~9 digits to the offset)
    rng = _rng(5)
    X = np.round(rng.normal(size=(20, 30)) * 2**20) / 2**20
    y = np.round(rng.normal(size=20) * 2**20) / 2**20
    offset = 2.0**30
    np.testing.assert_allclose(
        crps_ensemble_per_row(X + offset, y + offset), crps_ensemble_per_row(X, y), rtol=1e-14
    )
    np.testing.assert_allclose(
        crps_ensemble_per_row(X + offset, y + offset, estimator="fair"),
        crps_ensemble_per_row(X, y, estimator="fair"),
        rtol=1e-14,
    )


def test_crps_ensemble_mean_and_row_weights() -> None:
    rng = _rng(6)
    X = rng.normal(size=(12, 5))
    y = rng.normal(size=12)
    rows = crps_ensemble_per_row(X, y)
    assert crps_ensemble(X, y) == pytest.approx(rows.mean(), rel=RTOL)
    reps = rng.integers(0, 4, size=12)
    reps[0] = 1
    assert crps_ensemble(X, y, sample_weight=reps) == pytest.approx(
        crps_ensemble(np.repeat(X, reps, axis=0), np.repeat(y, reps)), rel=RTOL
    )


def test_crps_ensemble_takes_tensors() -> None:
    torch = pytest.importorskip("torch")
    X = np.arange(12.0).reshape(3, 4)
    y = np.array([1.0, 5.0, 20.0])
    got = crps_ensemble_per_row(torch.tensor(X, dtype=torch.float32), torch.tensor(y))
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, crps_ensemble_per_row(X, y), rtol=RTOL)
    got = crps_quantiles_per_row([0.25, 0.75], torch.tensor(X[:, :2]), torch.tensor(y))
    np.testing.assert_allclose(got, crps_quantiles_per_row([0.25, 0.75], X[:, :2], y))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"samples": [[0.0, np.nan]], "targets": [1.0]},
            r"samples must be finite; row 0, column 1",
        ),
        ({"samples": [0.0, 1.0], "targets": [1.0]}, r"samples must be 2-D"),
        ({"samples": [[0.0, 1.0]], "targets": [1.0, 2.0]}, r"targets has 2 rows but samples has 1"),
        ({"samples": [[0.0, 1.0]], "targets": [np.inf]}, r"targets must be finite; row 0"),
        (
            {"samples": [[0.0, 1.0]], "targets": [1.0], "estimator": "pwm"},
            r"'pwm' is the 'fair' estimator here",
        ),
        ({"samples": [[0.0]], "targets": [1.0], "estimator": "fair"}, r"at least 2 members"),
        (
            {
                "samples": [[0.0, 1.0]],
                "targets": [1.0],
                "estimator": "fair",
                "member_weights": [1.0, 2.0],
            },
            r"equally weighted members",
        ),
        (
            {"samples": [[0.0, 1.0]], "targets": [1.0], "member_weights": [1.0, -2.0]},
            r"member_weights must be non-negative; row 0, member 1",
        ),
        (
            {
                "samples": [[0.0, 1.0], [1.0, 2.0]],
                "targets": [1.0, 1.0],
                "member_weights": [[1.0, 2.0], [0.0, 0.0]],
            },
            r"row 1 sums to 0",
        ),
        (
            {"samples": [[0.0, 1.0]], "targets": [1.0], "member_weights": [1.0, 2.0, 3.0]},
            r"member_weights has 3 entries but samples has 2 members",
        ),
    ],
)
def test_crps_ensemble_refusals(kwargs: dict, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        crps_ensemble_per_row(**kwargs)


# ---------------------------------------------------------------- CRPS of quantile sets


def test_crps_quantiles_hand_values_and_brute_force() -> None:
    assert crps_quantiles_per_row([0.5], [[0.0]], [1.0]).tolist() == [1.0]
    assert crps_quantiles_per_row([0.25, 0.75], [[-1.0, 1.0]], [2.0]).tolist() == [1.5]
    rng = _rng(7)
    levels = np.array([0.05, 0.1, 0.3, 0.5, 0.8, 0.95])
    Q = np.sort(rng.normal(size=(40, 6)), axis=1)
    y = rng.normal(size=40)
    want = sum(_pinball(Q[:, j], y, levels[j]) for j in range(6)) * 2 / 6
    np.testing.assert_allclose(crps_quantiles_per_row(levels, Q, y), want, rtol=RTOL, atol=1e-15)
    w = rng.uniform(size=40)
    assert crps_quantiles(levels, Q, y, sample_weight=w) == pytest.approx(
        np.average(want, weights=w), rel=RTOL
    )


def test_crps_quantiles_approaches_the_gaussian_crps() -> None:
    from scipy.stats import norm

    from calipers.regression import crps_gaussian_per_row

    levels = (np.arange(1, 2001) - 0.5) / 2000
    y = np.array([-1.5, 0.0, 0.7, 3.0])
    Q = np.broadcast_to(norm.ppf(levels), (4, levels.size))
    exact = crps_gaussian_per_row(np.zeros(4), variance=np.ones(4), targets=y)
    np.testing.assert_allclose(crps_quantiles_per_row(levels, Q, y), exact, rtol=1e-3)


@pytest.mark.parametrize(
    ("levels", "quantiles", "match"),
    [
        ([0.5, 0.25], [[0.0, 1.0]], r"levels must be strictly increasing; entry 1"),
        ([0.0, 0.5], [[0.0, 1.0]], r"levels must lie strictly inside \(0, 1\); entry 0"),
        ([0.25, 0.5, 0.75], [[0.0, 1.0]], r"quantiles has 2 columns but levels has 3"),
        ([0.25, 0.75], [[0.0, np.nan]], r"quantiles must be finite; row 0, column 1"),
    ],
)
def test_crps_quantiles_refusals(levels: list, quantiles: list, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        crps_quantiles_per_row(levels, quantiles, [0.0])


# ---------------------------------------------------------------- CRPS oracles


@pytest.mark.parametrize(
    ("peer", "ours"),
    [
        ("nrg", "standard"),
        ("qd", "standard"),
        ("int", "standard"),
        ("fair", "fair"),
        ("pwm", "fair"),
    ],
)
def test_crps_ensemble_equals_scoringrules(peer: str, ours: str) -> None:
    sr = pytest.importorskip("scoringrules")
    rng = _rng(8)
    X = rng.normal(size=(300, 17)) * 3.0 + 5.0
    y = rng.normal(size=300) * 3.0 + 5.0
    want = np.asarray(sr.crps_ensemble(y, X, estimator=peer), dtype=np.float64)
    np.testing.assert_allclose(crps_ensemble_per_row(X, y, estimator=ours), want, rtol=RTOL)


def test_crps_ensemble_default_is_scoringrules_default() -> None:
    sr = pytest.importorskip("scoringrules")
    rng = _rng(9)
    X = rng.normal(size=(100, 9))
    y = rng.normal(size=100)
    np.testing.assert_allclose(crps_ensemble_per_row(X, y), sr.crps_ensemble(y, X), rtol=RTOL)


def test_crps_ensemble_weighted_equals_scoringrules_and_properscoring() -> None:
    sr = pytest.importorskip("scoringrules")
    ps = pytest.importorskip("properscoring")
    rng = _rng(10)
    X = rng.normal(size=(200, 11))
    y = rng.normal(size=200)
    W = rng.uniform(size=(200, 11))
    got = crps_ensemble_per_row(X, y, member_weights=W)
    np.testing.assert_allclose(got, sr.crps_ensemble(y, X, ens_w=W, estimator="nrg"), rtol=RTOL)
    np.testing.assert_allclose(got, ps.crps_ensemble(y, X, weights=W), rtol=RTOL)
    np.testing.assert_allclose(crps_ensemble_per_row(X, y), ps.crps_ensemble(y, X), rtol=RTOL)


def test_crps_quantiles_equals_scoringrules() -> None:
    sr = pytest.importorskip("scoringrules")
    rng = _rng(11)
    levels = np.sort(rng.uniform(0.01, 0.99, size=9))
    Q = np.sort(rng.normal(size=(100, 9)), axis=1)
    y = rng.normal(size=100)
    np.testing.assert_allclose(
        crps_quantiles_per_row(levels, Q, y), sr.crps_quantile(y, Q, levels), rtol=RTOL
    )


# ---------------------------------------------------------------- consistent scores


def test_pinball_loss_hand_values() -> None:
    assert pinball_loss_per_row([1.0, 1.0], [3.0, 0.0], level=0.9).tolist() == pytest.approx(
        [1.8, 0.1], rel=1e-15
    )
    rng = _rng(12)
    z, y = rng.normal(size=50), rng.normal(size=50)
    np.testing.assert_array_equal(pinball_loss_per_row(z, y), 0.5 * np.abs(y - z))
    for alpha in (0.05, 0.3, 0.9):
        np.testing.assert_allclose(
            pinball_loss_per_row(z, y, level=alpha), _pinball(z, y, alpha), rtol=RTOL, atol=1e-16
        )


def test_homogeneous_quantile_scores_hand_values() -> None:
    # degree 0: (1{y < z} - alpha) log(z / y); degree 2: (1{y < z} - alpha) (z**2 - y**2) / 2
    got = pinball_loss_per_row([2.0, 2.0], [1.0, 4.0], level=0.25, degree=0)
    np.testing.assert_allclose(got, [0.75 * np.log(2), 0.25 * np.log(2)], rtol=1e-15)
    got = pinball_loss_per_row([2.0, 2.0], [1.0, 4.0], level=0.25, degree=2)
    np.testing.assert_allclose(got, [0.75 * 1.5, 0.25 * 6.0], rtol=1e-15)
    got = pinball_loss_per_row([-1.0], [1.0], level=0.5, degree=3)  # odd: any real
    np.testing.assert_allclose(got, [0.5 * 2 / 3], rtol=1e-15)
    # degree 1 is the pinball loss, bit for bit
    rng = _rng(30)
    z, y = rng.normal(size=20), rng.normal(size=20)
    np.testing.assert_array_equal(
        pinball_loss_per_row(z, y, level=0.3, degree=1), pinball_loss_per_row(z, y, level=0.3)
    )
    with pytest.raises(CalibrationInputError, match=r"forecasts must be > 0 .* degree 2; row 1"):
        pinball_loss_per_row([1.0, -1.0], [1.0, 1.0], degree=2)


def test_pinball_loss_is_consistent_for_the_quantile() -> None:
    # the mean loss over a sample is smallest at its alpha-quantile
    rng = _rng(13)
    y = rng.exponential(size=1001)
    alpha = 0.8
    q = np.sort(y)[int(np.ceil(alpha * 1001)) - 1]
    best = pinball_loss(np.full(1001, q), y, level=alpha)
    for step in (-0.05, -0.01, 0.01, 0.05):
        assert pinball_loss(np.full(1001, q + step), y, level=alpha) > best


def test_bregman_family_hand_values() -> None:
    z = np.array([2.0, 2.0, 0.5])
    y = np.array([1.0, 4.0, 0.5])
    np.testing.assert_array_equal(bregman_score_per_row(z, y), squared_error_per_row(z, y))
    np.testing.assert_array_equal(squared_error_per_row(z, y), [1.0, 4.0, 0.0])
    poisson = 2 * (y * np.log(y / z) - y + z)
    np.testing.assert_allclose(bregman_score_per_row(z, y, phi=1), poisson, rtol=RTOL, atol=1e-16)
    gamma = 2 * (y / z - np.log(y / z) - 1)
    np.testing.assert_allclose(bregman_score_per_row(z, y, phi=0), gamma, rtol=RTOL, atol=1e-16)
    # Poisson deviance at y = 0 is 2 z
    assert bregman_score_per_row([3.0], [0.0], phi=1).tolist() == [6.0]
    # a general phi: phi(x) = exp(x) gives exp(y) - exp(z) - exp(z) (y - z)
    got = bregman_score_per_row(z, y, phi=(np.exp, np.exp))
    np.testing.assert_allclose(got, np.exp(y) - np.exp(z) - np.exp(z) * (y - z), rtol=RTOL)
    # homogeneous degree h: 2 (|y|^h - |z|^h) / (h (h - 1)) - 2 sign(z) |z|^(h-1) (y - z) / (h - 1)
    h = 3.0
    zz, yy = np.array([-1.0, 2.0]), np.array([1.0, -0.5])
    want = 2 * (np.abs(yy) ** h - np.abs(zz) ** h) / (h * (h - 1)) - 2 * np.sign(zz) * np.abs(
        zz
    ) ** (h - 1) * (yy - zz) / (h - 1)
    np.testing.assert_allclose(bregman_score_per_row(zz, yy, phi=h), want, rtol=RTOL)
    assert bregman_score(z, y, phi=0) == pytest.approx(gamma.mean(), rel=RTOL)
    assert squared_error(z, y, sample_weight=[1.0, 0.0, 1.0]) == 0.5


def test_expectile_score_hand_values_and_consistency() -> None:
    got = expectile_score_per_row([0.0, 0.0], [1.0, -1.0], level=0.9)
    np.testing.assert_allclose(got, [1.8, 0.2], rtol=1e-15)
    rng = _rng(14)
    z, y = rng.normal(size=30), rng.normal(size=30)
    np.testing.assert_array_equal(expectile_score_per_row(z, y), squared_error_per_row(z, y))
    # the tau-expectile of a sample minimises the mean asymmetric squared loss
    y = rng.exponential(size=500)
    tau = 0.8
    e = y.mean()
    for _ in range(200):  # fixed point of the first-order condition
        w = np.where(y > e, tau, 1 - tau)
        e = np.sum(w * y) / np.sum(w)
    best = expectile_score(np.full(500, e), y, level=tau)
    for step in (-0.02, -0.005, 0.005, 0.02):
        assert expectile_score(np.full(500, e + step), y, level=tau) > best


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: bregman_score_per_row([1.0], [-1.0], phi=1), r"targets must be >= 0 .* row 0"),
        (
            lambda: bregman_score_per_row([1.0, 1.0], [1.0, 0.0], phi=0),
            r"targets must be > 0 .* row 1",
        ),
        (
            lambda: bregman_score_per_row([1.0, 0.0], [1.0, 1.0], phi=0.5),
            r"forecasts must be > 0 .* row 1",
        ),
        (lambda: bregman_score_per_row([1.0], [1.0], phi="gamma"), r"phi must be a degree"),
        (
            lambda: bregman_score_per_row([-1.0], [1.0], phi=(np.log, lambda x: 1 / x)),
            r"not finite at row 0",
        ),
        (lambda: pinball_loss_per_row([1.0], [1.0], level=1.0), r"level must lie strictly inside"),
        (
            lambda: pinball_loss_per_row([1.0, 2.0], [1.0], level=0.5),
            r"targets has 1 rows but forecasts has 2",
        ),
        (lambda: squared_error_per_row([[1.0]], [1.0]), r"forecasts must be 1-D"),
        (
            lambda: expectile_score_per_row([1.0], [1.0], level=0.0),
            r"level must lie strictly inside",
        ),
    ],
)
def test_consistent_score_refusals(call, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        call()


# ---------------------------------------------------------------- consistent-score oracles


def _positive_data(seed: int = 15) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = _rng(seed)
    z = rng.gamma(2.0, size=400)
    y = rng.gamma(2.0, size=400)
    return z, y, rng.uniform(size=400)


def test_scores_equal_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    z, y, w = _positive_data()
    y0 = y.copy()
    y0[:20] = 0.0
    for alpha in (0.1, 0.5, 0.93):
        assert pinball_loss(z, y, level=alpha, sample_weight=w) == pytest.approx(
            metrics.mean_pinball_loss(y, z, alpha=alpha, sample_weight=w), rel=RTOL
        )
    assert squared_error(z, y, sample_weight=w) == pytest.approx(
        metrics.mean_squared_error(y, z, sample_weight=w), rel=RTOL
    )
    assert bregman_score(z, y0, phi=1, sample_weight=w) == pytest.approx(
        metrics.mean_poisson_deviance(y0, z, sample_weight=w), rel=RTOL
    )
    assert bregman_score(z, y, phi=0, sample_weight=w) == pytest.approx(
        metrics.mean_gamma_deviance(y, z, sample_weight=w), rel=RTOL
    )
    for h in (-1.5, 0.5, 2.5, 3.0):  # Tweedie power 2 - h (sklearn: p <= 0 or p >= 1)
        assert bregman_score(z, y, phi=h, sample_weight=w) == pytest.approx(
            metrics.mean_tweedie_deviance(y, z, power=2 - h, sample_weight=w), rel=RTOL
        )


def test_scores_equal_model_diagnostics() -> None:
    scoring = pytest.importorskip("model_diagnostics.scoring")
    z, y, w = _positive_data(16)
    rng = _rng(17)
    zr, yr = rng.normal(size=300), rng.normal(size=300)
    for alpha in (0.2, 0.5, 0.9):
        np.testing.assert_allclose(
            pinball_loss_per_row(zr, yr, level=alpha),
            scoring.PinballLoss(level=alpha).score_per_obs(yr, zr),
            rtol=RTOL,
            atol=1e-15,
        )
        for h in (-1.0, 0.0, 0.5, 2.0, 3.0):  # HomogeneousQuantileScore; 3: any real
            zz, yy = (zr, yr) if h == 3.0 else (z, y)
            md = scoring.HomogeneousQuantileScore(degree=h, level=alpha)
            np.testing.assert_allclose(
                pinball_loss_per_row(zz, yy, level=alpha, degree=h),
                md.score_per_obs(yy, zz),
                rtol=RTOL,
                atol=1e-15,
            )
            assert pinball_loss(
                zz, yy, level=alpha, degree=h, sample_weight=w[: zz.size]
            ) == pytest.approx(md(yy, zz, weights=w[: zz.size]), rel=RTOL)
    np.testing.assert_allclose(
        squared_error_per_row(zr, yr), scoring.SquaredError().score_per_obs(yr, zr), rtol=RTOL
    )
    np.testing.assert_allclose(
        bregman_score_per_row(z, y, phi=1), scoring.PoissonDeviance().score_per_obs(y, z), rtol=RTOL
    )
    np.testing.assert_allclose(
        bregman_score_per_row(z, y, phi=0), scoring.GammaDeviance().score_per_obs(y, z), rtol=RTOL
    )
    for h in (-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
        zz, yy = (zr, yr) if h > 1 else (z, y)
        for tau in (0.1, 0.5, 0.75):
            md = scoring.HomogeneousExpectileScore(degree=h, level=tau)
            np.testing.assert_allclose(
                expectile_score_per_row(zz, yy, level=tau, degree=h),
                md.score_per_obs(yy, zz),
                rtol=1e-12,
                atol=1e-13,
            )
            assert expectile_score(zz, yy, level=tau, degree=h, sample_weight=w[: zz.size]) == (
                pytest.approx(md(yy, zz, weights=w[: zz.size]), rel=RTOL)
            )


# ---------------------------------------------------------------- intervals


def test_interval_score_hand_values() -> None:
    # 80 % interval [0, 2]: 2 / alpha = 10
    got = interval_score_per_row([0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [1.0, 2.5, -0.5], level=0.8)
    np.testing.assert_allclose(got, [2.0, 7.0, 7.0], rtol=1e-14)
    # a target on a bound is covered: no penalty
    assert interval_score_per_row([0.0], [2.0], [2.0], level=0.5).tolist() == [2.0]
    assert interval_score([0.0, 0.0], [2.0, 2.0], [1.0, 2.5], level=0.8) == pytest.approx(4.5)
    # the interval score is (2 / alpha) times the two pinball losses of its bounds
    rng = _rng(20)
    lo = rng.normal(size=50)
    hi = lo + rng.exponential(size=50)
    y = rng.normal(size=50)
    alpha = 0.2
    want = (2 / alpha) * (_pinball(lo, y, alpha / 2) + _pinball(hi, y, 1 - alpha / 2))
    np.testing.assert_allclose(
        interval_score_per_row(lo, hi, y, level=1 - alpha), want, rtol=RTOL, atol=1e-14
    )


def test_weighted_interval_score_is_the_quantile_crps_and_the_bracher_sum() -> None:
    assert weighted_interval_score_per_row(
        [0.25, 0.5, 0.75], [[0.0, 1.0, 2.0]], [3.0]
    ).tolist() == (pytest.approx([5 / 3], rel=1e-15))
    # the median alone: WIS = |y - m|
    assert weighted_interval_score_per_row([0.5], [[1.0]], [4.0]).tolist() == [3.0]
    rng = _rng(21)
    levels = np.array([0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975])
    Q = np.sort(rng.normal(size=(60, 7)), axis=1)
    y = rng.normal(size=60) * 1.5
    got = weighted_interval_score_per_row(levels, Q, y)
    np.testing.assert_allclose(got, crps_quantiles_per_row(levels, Q, y), rtol=RTOL, atol=1e-15)
    K = 3
    manual = 0.5 * np.abs(y - Q[:, 3])
    for k in range(K):
        a = 2 * levels[k]
        manual += (a / 2) * interval_score_per_row(Q[:, k], Q[:, 6 - k], y, level=1 - a)
    np.testing.assert_allclose(got, manual / (K + 0.5), rtol=RTOL, atol=1e-15)
    w = rng.uniform(size=60)
    assert weighted_interval_score(levels, Q, y, sample_weight=w) == pytest.approx(
        np.average(got, weights=w), rel=RTOL
    )


def test_interval_coverage_and_width() -> None:
    lo, hi = [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 3.0]
    y = [0.5, 1.0, 1.5, -2.0]
    assert interval_coverage(lo, hi, y) == 0.5
    assert interval_coverage(lo, hi, y, sample_weight=[1.0, 1.0, 0.0, 0.0]) == 1.0
    assert interval_coverage(lo, hi, y, sample_weight=[0.0, 3.0, 1.0, 0.0]) == 0.75
    assert interval_width(lo, hi) == 1.5
    assert interval_width(lo, hi, sample_weight=[0.0, 0.0, 0.0, 2.0]) == 3.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: interval_score_per_row([0.0, 2.0], [1.0, 1.0], [0.0, 0.0]),
            r"row 1 has lower 2.0 > upper 1.0",
        ),
        (
            lambda: interval_score_per_row([0.0], [1.0], [0.0], level=1.5),
            r"level must lie strictly inside",
        ),
        (
            lambda: interval_coverage([0.0], [1.0], [0.0, 1.0]),
            r"targets has 2 rows but lower has 1",
        ),
        (lambda: interval_width([0.0, 1.0], [1.0]), r"upper has 1 rows but lower has 2"),
        (
            lambda: weighted_interval_score_per_row([0.25, 0.75], [[0.0, 1.0]], [0.0]),
            r"needs the median",
        ),
        (
            lambda: weighted_interval_score_per_row([0.1, 0.5, 0.8], [[0.0, 1.0, 2.0]], [0.0]),
            r"level 0.1 is paired with 0.8",
        ),
        (
            lambda: weighted_interval_score_per_row([0.25, 0.5, 0.75], [[2.0, 1.0, 0.0]], [0.0]),
            r"quantiles cross: row 0",
        ),
    ],
)
def test_interval_refusals(call, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        call()


def test_interval_scores_equal_scoringrules() -> None:
    sr = pytest.importorskip("scoringrules")
    rng = _rng(22)
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    Q = np.sort(rng.normal(size=(200, 5)), axis=1)
    y = rng.normal(size=200)
    np.testing.assert_allclose(
        interval_score_per_row(Q[:, 0], Q[:, 4], y, level=0.9),
        sr.interval_score(y, Q[:, 0], Q[:, 4], 0.1),
        rtol=RTOL,
    )
    alpha = np.array([0.1, 0.5])
    peer = np.asarray(
        sr.weighted_interval_score(y, Q[:, 2], Q[:, [0, 1]], Q[:, [4, 3]], alpha), dtype=float
    )
    ours = weighted_interval_score_per_row(levels, Q, y)
    median_term = 0.5 * np.abs(y - Q[:, 2]) / 2.5
    if np.allclose(peer, ours, rtol=RTOL):
        return  # a scoringrules whose every backend adds w_0 |y - m|
    # scoringrules 0.10.0's NumPy backend adds w_0 * m where Bracher et al. add w_0 |y - m|
    # (its numba backend adds |y - m|); everything else agrees to rounding
    np.testing.assert_allclose(
        peer - 0.5 * Q[:, 2] / 2.5, ours - median_term, rtol=RTOL, atol=1e-14
    )


# ---------------------------------------------------------------- extremes, tensors, empties


def test_huge_values_give_the_score_not_nan() -> None:
    # the linear scores are homogeneous of degree 1: S(x, y) = 2**100 S(x / 2**100, y / 2**100);
    # where an intermediate overflows (x - y, a sum of k terms) the row is recomputed scaled
    X = np.array([[1e308, -1e308, 5e307], [0.0, 1.0, 2.0]])
    y = np.array([-1.5e308, 1.0])
    s = 2.0**100
    for kw in ({}, {"estimator": "fair"}, {"member_weights": [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]}):
        got = crps_ensemble_per_row(X, y, **kw)
        want = crps_ensemble_per_row(X / s, y / s, **kw) * s
        np.testing.assert_allclose(got, want, rtol=1e-14)
        tame = X.copy()
        tame[0] = [3.0, 1.0, 2.0]
        assert got[1] == crps_ensemble_per_row(tame, y * [0.0, 1.0], **kw)[1]  # rows untouched
    Q = np.sort(X, axis=1)
    for f in (crps_quantiles_per_row, weighted_interval_score_per_row):
        got = f([0.1, 0.5, 0.9], Q, y)
        np.testing.assert_allclose(got, f([0.1, 0.5, 0.9], Q / s, y / s) * s, rtol=1e-14)
    # a representable score whose intermediate overflows
    assert pinball_loss_per_row([-1e308], [1e308], level=0.4).tolist() == pytest.approx([8e307])
    got = interval_score_per_row([-1e308], [1e308], [0.0], level=0.5)
    assert got.tolist() == pytest.approx([2e308 / 2]) or got.tolist() == [np.inf]
    # a score beyond the float range is inf, not NaN
    assert interval_score_per_row([-1e307], [1e307], [-1e308], level=0.5).tolist() == [np.inf]
    assert pinball_loss_per_row([-1e308], [1e308], level=0.9).tolist() == [np.inf]


def test_tensors_and_float32_everywhere() -> None:
    torch = pytest.importorskip("torch")
    rng = _rng(31)
    z, y = rng.normal(size=8), rng.normal(size=8)
    tz, ty = torch.tensor(z, dtype=torch.float32), torch.tensor(y, dtype=torch.bfloat16)
    z32 = z.astype(np.float32).astype(np.float64)
    y16 = ty.float().numpy().astype(np.float64)
    for f, kw in [
        (pinball_loss_per_row, {"level": 0.3}),
        (squared_error_per_row, {}),
        (bregman_score_per_row, {"phi": 3.0}),
        (expectile_score_per_row, {"level": 0.7}),
    ]:
        got = f(tz, ty, **kw)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        np.testing.assert_allclose(got, f(z32, y16, **kw), rtol=RTOL)
    lo, hi = torch.tensor(z - 1.0), torch.tensor(z + 1.0)
    np.testing.assert_allclose(
        interval_score_per_row(lo, hi, torch.tensor(y), level=0.8),
        interval_score_per_row(z - 1.0, z + 1.0, y, level=0.8),
        rtol=RTOL,
    )
    assert interval_coverage(lo, hi, torch.tensor(y)) == interval_coverage(z - 1, z + 1, y)


def test_empty_and_mistyped_inputs_are_refused() -> None:
    with pytest.raises(CalibrationInputError, match=r"samples must hold at least one row"):
        crps_ensemble_per_row(np.empty((0, 3)), np.empty(0))
    with pytest.raises(CalibrationInputError, match=r"at least one member per row"):
        crps_ensemble_per_row(np.empty((2, 0)), np.zeros(2))
    with pytest.raises(CalibrationInputError, match=r"forecasts must hold real numbers"):
        pinball_loss_per_row(["a", "b"], [1.0, 2.0])
    with pytest.raises(CalibrationInputError, match=r"sample_weight"):
        pinball_loss([1.0, 2.0], [1.0, 2.0], sample_weight=[1.0, -1.0])
