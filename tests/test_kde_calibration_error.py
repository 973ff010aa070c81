"""KDE calibration error (Zhang et al. 2020) against an oracle built on KDEpy and closed forms.

The oracle follows docs/how-calipers-computes.md §4.3 step by step with KDEpy's FFTKDE (a test-only
dependency, as in the authors' code) and a per-grid-point loop; calipers bins and
convolves on its own.
"""

import numpy as np
import pytest

import calipers as cp
from calipers.validation import CalibrationInputError


def _oracle(conf: np.ndarray, correct: np.ndarray, order: float) -> float:
    kdepy = pytest.importorskip("KDEpy")
    x = np.linspace(-0.6, 1.6, 2**14)
    n = conf.size
    conf = np.clip(conf, 1e-256, 1 - 1e-256)
    c1 = conf[correct == 1]
    h = np.std(c1) * (2 * n) ** -0.2

    def dens(d: np.ndarray) -> np.ndarray:
        m = np.concatenate([-d[d < 0.5], d, 2 - d[d >= 0.5]])
        f = kdepy.FFTKDE(bw=h, kernel="triweight").fit(m).evaluate(x)
        f[x <= 0] = 0
        f[x >= 1] = 0
        return 2 * f

    f1, f = dens(c1), dens(conf)
    perc = correct.mean()
    integral = np.zeros(x.size)
    for i in range(x.size):
        if max(f1[i], f[i]) > 1e-6:
            with np.errstate(divide="ignore"):
                acc = min(perc * f1[i] / f[i], 1.0)
            if not np.isnan(acc):
                integral[i] = abs(x[i] - acc) ** order * f[i]
        elif i > 1:
            integral[i] = integral[i - 1]
    ind = (x >= 0) & (x <= 1)
    trap = lambda g: float(np.sum((g[ind][1:] + g[ind][:-1]) * np.diff(x[ind])) / 2)  # noqa: E731
    return trap(integral) / trap(f)


def _multiclass(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2.5 * rng.standard_normal((n, k))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    q = np.exp(0.6 * z) / np.exp(0.6 * z).sum(1, keepdims=True)  # truth: less confident
    y = (rng.random(n)[:, None] > np.cumsum(q, 1)).sum(1).clip(0, k - 1)
    return p, y


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(("n", "k", "seed"), [(3000, 10, 0), (500, 3, 1), (40, 5, 2)])
def test_top_label_equals_the_kdepy_oracle(order: int, n: int, k: int, seed: int) -> None:
    p, y = _multiclass(n, k, seed)
    conf, correct = p.max(1), (p.argmax(1) == y).astype(float)
    want = _oracle(conf, correct, order)
    got = cp.kde_calibration_error(p, y, p=order, root=False)
    assert got == pytest.approx(want, rel=1e-9)
    assert cp.kde_calibration_error(p, y, p=order) == pytest.approx(want ** (1 / order), rel=1e-9)


def test_binary_lens_is_the_authors_two_column_case() -> None:
    rng = np.random.default_rng(3)
    s = rng.beta(2, 2, 2000)
    y = (rng.random(2000) < s**1.5).astype(int)
    P = np.stack([1 - s, s], axis=1)
    want = _oracle(s, y.astype(float), 1)  # their code: P(y=1) against y for two columns
    assert cp.kde_calibration_error(P, y, lens="binary") == pytest.approx(want, rel=1e-9)
    assert cp.kde_calibration_error(s, y, lens="binary") == pytest.approx(want, rel=1e-9)


def test_bandwidth_rule_by_hand_and_weights_are_repetitions() -> None:
    P = np.array([[0.9, 0.1], [0.7, 0.3], [0.6, 0.4], [0.2, 0.8]])
    y = np.array([0, 0, 1, 1])
    # correct rows' confidences .9, .7, .8; population std sqrt(2/3)/10; n = 4
    assert cp.kde_bandwidth(P, y) == pytest.approx(np.sqrt(2 / 3) / 10 * 8**-0.2, rel=1e-12)
    p, yy = _multiclass(300, 4, 5)
    w = np.random.default_rng(6).integers(0, 4, 300)
    rep = np.repeat(np.arange(300), w)
    assert cp.kde_bandwidth(p, yy, sample_weight=w) == pytest.approx(
        cp.kde_bandwidth(p[rep], yy[rep]), rel=1e-12
    )
    assert cp.kde_calibration_error(p, yy, sample_weight=w) == pytest.approx(
        cp.kde_calibration_error(p[rep], yy[rep]), rel=1e-9
    )


def test_density_is_a_reflected_triweight_kde() -> None:
    # the grid density against the kernel sum evaluated directly (binning error O(dx^2))
    from calipers.metrics._kde_calibration_error import GRID, _mirrored_density

    rng = np.random.default_rng(8)
    c = rng.uniform(0.02, 0.98, 200)
    h = 0.05
    f = _mirrored_density(c, np.ones(200), h)
    pts = np.concatenate([c, np.where(c < 0.5, -c, 2 - c)])
    u = (GRID[:, None] - pts[None, :]) / (3 * h)
    direct = 2 * (35 / 32 * np.clip(1 - u**2, 0, None) ** 3 / (3 * h)).sum(1) / pts.size
    inside = (GRID > 0) & (GRID < 1)
    np.testing.assert_allclose(f[inside], direct[inside], atol=1e-4 * direct.max())
    assert np.all(f[~inside] == 0)
    dx = GRID[1] - GRID[0]
    assert f[inside].sum() * dx == pytest.approx(1.0, abs=2e-3)  # mass kept by the reflection


def test_consistency_on_known_calibration_curves() -> None:
    # conf ~ U(0.5, 1), P(correct | c) = c^2: CE_1 = E[c (1 - c)] = 1/6,
    # CE_2 = sqrt(E[c^2 (1 - c)^2]) = sqrt(1/30); calibrated data gives ~0
    rng = np.random.default_rng(9)
    n = 100_000
    conf = rng.uniform(0.5, 1.0, n)
    P = np.stack([conf, 1 - conf], axis=1)
    y = np.where(rng.random(n) < conf**2, 0, 1)
    assert cp.kde_calibration_error(P, y) == pytest.approx(1 / 6, abs=3e-3)
    assert cp.kde_calibration_error(P, y, p=2) == pytest.approx(np.sqrt(1 / 30), abs=5e-3)
    y_cal = np.where(rng.random(n) < conf, 0, 1)
    assert cp.kde_calibration_error(P, y_cal) < 0.01


def test_bad_inputs_say_what_is_wrong() -> None:
    P = np.array([[0.9, 0.1], [0.7, 0.3]])
    with pytest.raises(CalibrationInputError, match="correct predictions"):
        cp.kde_calibration_error(P, [1, 1])
    with pytest.raises(CalibrationInputError, match="all equal"):
        cp.kde_calibration_error(np.array([[0.9, 0.1], [0.9, 0.1], [0.7, 0.3]]), [0, 0, 1])
    with pytest.raises(CalibrationInputError, match="bandwidth must be a positive"):
        cp.kde_calibration_error(P, [0, 1], bandwidth=0)
    with pytest.raises(CalibrationInputError, match="p must be"):
        cp.kde_calibration_error(P, [0, 1], p=0.5)
    with pytest.raises(CalibrationInputError, match="p must be"):
        cp.kde_calibration_error(P, [0, 1], p=True)  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="lens must be"):
        cp.kde_calibration_error(P, [0, 1], lens="classwise")  # type: ignore[arg-type]
    # an explicit bandwidth needs no correct predictions
    assert np.isfinite(cp.kde_calibration_error(P, [1, 1], bandwidth=0.05))


@pytest.mark.parametrize("half", [3, 64, 65, 900])
def test_convolution_both_paths_equal_numpy_same_mode(half: int) -> None:
    from calipers.metrics._kde_calibration_error import _convolve_same

    rng = np.random.default_rng(half)
    a, k = rng.random(5000), rng.random(2 * half + 1)
    np.testing.assert_allclose(_convolve_same(a, k), np.convolve(a, k, mode="same"), rtol=1e-10)
