"""Honest calibration bands (Dimitriadis, Dümbgen, Henzi, Puke & Ziegel 2023).

The references here are written independently of calipers: the brute-force
maximum over every interval of sorted predictions with scipy.stats.beta
quantiles (both sides written directly, not through the flip the
implementation uses), the Clopper-Pearson bound as the root of the binomial
tail (scipy.stats.binom), the rounding groups of calibrationband's
``method = "round"``, and a pool-adjacent-violators loop.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from calipers.estimators.quadratic_cost import CalibrationCostWarning
from calipers.inference import BandDeviation, CalibrationBand, honest_calibration_band
from calipers.inference import _honest_calibration_band as hb
from calipers.validation import CalibrationInputError, check_predictions


def brute_band(ys, ns, alpha):
    """Lower and upper bounds per group from all G (G + 1) / 2 intervals."""
    ys = np.asarray(ys, float)
    ns = np.asarray(ns, float)
    G = len(ys)
    a = alpha / (G * (G + 1))
    lo = np.zeros(G)
    up = np.ones(G)
    for j in range(G):
        S = np.cumsum(ys[j:])  # intervals j..k for k >= j
        N = np.cumsum(ns[j:])
        F = N - S
        ql = np.where(S > 0, stats.beta.ppf(a, np.maximum(S, 1), F + 1), 0.0)
        qu = np.where(F > 0, stats.beta.isf(a, S + 1, np.maximum(F, 1)), 1.0)
        # the lower bound of j..k holds from k on; the upper bound of j..k up to j
        lo[j:] = np.maximum(lo[j:], np.maximum.accumulate(ql))
        up[j] = min(up[j], qu.min())
    lo = np.maximum.accumulate(lo)
    up = np.minimum.accumulate(up[::-1])[::-1]
    return lo, up


def groups(p, y):
    ux, inv = np.unique(p, return_inverse=True)
    ns = np.bincount(inv, minlength=len(ux)).astype(float)
    ys = np.bincount(inv, weights=np.asarray(y, float), minlength=len(ux))
    return ux, ys, ns


def pava(v, w):
    """Weighted pool-adjacent-violators (non-decreasing)."""
    blocks: list[list[float]] = []  # value, weight, count
    for vi, wi in zip(v, w, strict=True):
        blocks.append([vi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([[b[0]] * b[2] for b in blocks])


def sample(n, curve, seed, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    if ties:
        x = np.round(x, 1)
    y = (rng.uniform(size=n) < curve(x)).astype(int)
    return x, y


CURVES = {
    "calibrated": lambda x: x,
    "overconfident": lambda x: 1 / (1 + ((1 - x) / np.maximum(x, 1e-12)) ** 0.4),
    "step": lambda x: np.where(x < 0.5, 0.2, 0.7),
    "decreasing": lambda x: 1 - x,
}


# ----------------------------------------------------------------- exact numbers


def test_tiny_hand_computation_with_the_binomial_tail():
    # 10 predictions, 0.1 ... 1.0; a = 0.05 / (10 * 11)
    x = np.arange(1, 11) / 10
    y = np.array([0, 0, 1, 0, 0, 1, 1, 1, 1, 1])
    band = honest_calibration_band(x, y)
    a = 0.05 / 110

    def cp_lower(S, n):  # the p with P(Bin(n, p) >= S) = a
        if S == 0:
            return 0.0
        return optimize.brentq(
            lambda p: stats.binom.sf(S - 1, n, p) - a, 1e-15, 1 - 1e-15, xtol=1e-15
        )

    def cp_upper(S, n):  # the p with P(Bin(n, p) <= S) = a
        if S == n:
            return 1.0
        return optimize.brentq(lambda p: stats.binom.cdf(S, n, p) - a, 1e-15, 1 - 1e-15, xtol=1e-15)

    lo = [
        max(
            cp_lower(int(y[j : k + 1].sum()), k + 1 - j) for k in range(i + 1) for j in range(k + 1)
        )
        for i in range(10)
    ]
    up = [
        min(
            cp_upper(int(y[j : k + 1].sum()), k + 1 - j) for j in range(i, 10) for k in range(j, 10)
        )
        for i in range(10)
    ]
    np.testing.assert_allclose(band.lower, lo, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(band.upper, up, rtol=1e-9, atol=1e-12)
    # the closed form of five events in a row at the top: p^5 = a
    assert band.lower[-1] == pytest.approx(a ** (1 / 5), rel=1e-12)
    np.testing.assert_array_equal(band.x, x)
    np.testing.assert_allclose(band.isotonic, [0, 0, 1 / 3, 1 / 3, 1 / 3, 1, 1, 1, 1, 1])
    assert (band.n, band.n_distinct, band.method, band.digits, band.nc) == (
        10,
        10,
        "standard",
        None,
        False,
    )


@pytest.mark.parametrize("name", sorted(CURVES))
@pytest.mark.parametrize("ties", [False, True])
def test_pruned_maximum_equals_brute_force(name, ties):
    x, y = sample(300, CURVES[name], seed=len(name) + 7 * ties, ties=ties)
    band = honest_calibration_band(x, y, alpha=0.1)
    ux, ys, ns = groups(x, y)
    lo, up = brute_band(ys, ns, 0.1)
    np.testing.assert_array_equal(band.x, ux)
    np.testing.assert_allclose(band.lower, lo, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(band.upper, up, rtol=1e-12, atol=1e-15)


def test_pruned_maximum_equals_brute_force_on_many_groups_and_long_runs():
    # runs of events and of failures (the dominance rules), 1000 groups: several chunks and blocks
    rng = np.random.default_rng(3)
    n = 1000
    x = np.sort(rng.uniform(size=n))
    p = np.clip(1.3 * x - 0.15, 0, 1)
    y = (rng.uniform(size=n) < p).astype(int)
    y[800:880] = 1
    y[100:160] = 0
    band = honest_calibration_band(x, y)
    lo, up = brute_band(y, np.ones(n), 0.05)
    np.testing.assert_allclose(band.lower, lo, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(band.upper, up, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("block, chunk", [(64, 128), (4, 8), (1, 1)])
def test_lower_bounds_kernel_on_random_group_counts(monkeypatch, block, chunk):
    # small blocks and chunks put the block rule and the record probes to work on every size
    monkeypatch.setattr(hb, "_BLOCK", block)
    monkeypatch.setattr(hb, "_CHUNK", chunk)
    rng = np.random.default_rng(11)
    for G in (1, 2, 3, 9, 70, 260):
        for _ in range(2):
            ns = rng.integers(1, 5, G).astype(float)
            ys = rng.binomial(ns.astype(int), np.sort(rng.uniform(size=G))).astype(float)
            lo, up = brute_band(ys, ns, 0.05)
            a = 0.05 / (G * (G + 1))
            np.testing.assert_allclose(hb._lower_bounds(ys, ns, a), lo, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(hb._band(ys, ns, 0.05, "upper"), up, rtol=1e-12, atol=1e-15)


def test_all_events_and_no_events():
    band = honest_calibration_band(np.linspace(0.1, 0.9, 6), np.ones(6, int))
    a = 0.05 / 42
    np.testing.assert_allclose(band.lower, a ** (1 / np.arange(1, 7)), rtol=1e-12)
    np.testing.assert_array_equal(band.upper, np.ones(6))
    band = honest_calibration_band(np.linspace(0.1, 0.9, 6), np.zeros(6, int))
    np.testing.assert_array_equal(band.lower, np.zeros(6))
    np.testing.assert_allclose(band.upper, 1 - a ** (1 / np.arange(6, 0, -1)), rtol=1e-12)


def test_round_method_follows_the_rounding_groups():
    x, y = sample(700, CURVES["overconfident"], seed=5)
    for digits in (1, 2):
        band = honest_calibration_band(x, y, method="round", digits=digits)
        ux, ys, ns = groups(x, y)
        d10 = 10.0**digits
        # upper: floor groups at their smallest prediction; lower: ceiling groups at their largest
        gu = np.floor(ux * d10)
        gl = np.ceil(ux * d10)
        ku, kl = np.unique(gu), np.unique(gl)
        yu = np.array([ys[gu == g].sum() for g in ku])
        nu = np.array([ns[gu == g].sum() for g in ku])
        xu = np.array([ux[gu == g].min() for g in ku])
        yl = np.array([ys[gl == g].sum() for g in kl])
        nl = np.array([ns[gl == g].sum() for g in kl])
        xl = np.array([ux[gl == g].max() for g in kl])
        _, upr = brute_band(yu, nu, 0.05)
        lwr, _ = brute_band(yl, nl, 0.05)
        grid = np.union1d(xu, xl)
        U = np.array([upr[xu >= g].min() if (xu >= g).any() else 1.0 for g in grid])
        L = np.array([lwr[xl <= g].max() if (xl <= g).any() else 0.0 for g in grid])
        np.testing.assert_array_equal(band.x, grid)
        np.testing.assert_allclose(band.upper, U, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(band.lower, L, rtol=1e-12, atol=1e-15)
        assert len(band.x) <= 2 * (d10 + 1)
        assert band.digits == digits
    assert honest_calibration_band(x, y, method="round").digits == 2


# ----------------------------------------------------------------- properties


@pytest.mark.parametrize("name", sorted(CURVES))
def test_monotone_bounds_and_nc_contains_the_isotonic_estimate(name):
    x, y = sample(400, CURVES[name], seed=1, ties=name == "step")
    for method in ("standard", "round"):
        band = honest_calibration_band(x, y, method=method, nc=True)
        assert np.all(np.diff(band.lower) >= 0) and np.all(np.diff(band.upper) >= 0)
        assert np.all(band.lower <= band.isotonic) and np.all(band.isotonic <= band.upper)
        assert band.crossings() == ()
        plain = honest_calibration_band(x, y, method=method)
        assert np.all(band.lower <= plain.lower) and np.all(band.upper >= plain.upper)
    ux, ys, ns = groups(x, y)
    np.testing.assert_allclose(band.isotonic[np.searchsorted(band.x, band.x)], band.isotonic)
    np.testing.assert_allclose(
        honest_calibration_band(x, y).isotonic, pava(ys / ns, ns), rtol=1e-12, atol=1e-15
    )


def test_plain_band_contains_isotonic_estimate_when_the_data_are_monotone():
    x, y = sample(500, CURVES["calibrated"], seed=2)
    band = honest_calibration_band(x, y)
    assert band.crossings() == ()
    assert np.all(band.lower <= band.isotonic) and np.all(band.isotonic <= band.upper)


def test_crossings_reject_a_decreasing_curve():
    x = np.linspace(0.01, 0.99, 200)
    y = np.r_[np.ones(100, int), np.zeros(100, int)]
    band = honest_calibration_band(x, y)
    (cross,) = band.crossings()
    assert cross[0] <= x[99] and cross[1] >= x[100]
    assert band.lower[99] > band.upper[100]
    assert honest_calibration_band(x, y, nc=True).crossings() == ()


def test_step_functions_and_deviations_on_a_grid():
    x, y = sample(800, lambda v: 1 / (1 + ((1 - v) / v) ** 0.3), seed=4)
    band = honest_calibration_band(x, y)
    kx = np.r_[0.0, band.x, 1.0]
    klo = np.r_[0.0, band.lower, band.lower[-1]]
    kup = np.r_[band.upper[0], band.upper, 1.0]
    s = np.linspace(0, 1, 8001)
    # written from calibrationband's rule: lower holds to the right, upper to the left
    lo_ref = np.array([klo[np.flatnonzero(kx <= v).max()] for v in s])
    up_ref = np.array([kup[np.flatnonzero(kx >= v).min()] for v in s])
    np.testing.assert_array_equal(band.lower_at(s), lo_ref)
    np.testing.assert_array_equal(band.upper_at(s), up_ref)
    devs = band.deviations()
    assert devs and all(isinstance(d, BandDeviation) and d.start < d.end for d in devs)
    assert {d.direction for d in devs} == {"above", "below"}

    def flagged(v, direction):
        return any(d.start <= v <= d.end for d in devs if d.direction == direction)

    for v, lo_v, up_v in zip(s, lo_ref, up_ref, strict=True):
        if lo_v > v + 1e-9:
            assert flagged(v, "above")
        if up_v < v - 1e-9:
            assert flagged(v, "below")
    inside = [
        v
        for v, lo_v, up_v in zip(s, lo_ref, up_ref, strict=True)
        if lo_v < v - 1e-9 and up_v > v + 1e-9
    ]
    assert not any(flagged(v, "above") or flagged(v, "below") for v in inside[::7])


def test_calibrated_predictions_have_no_deviation_and_cover_the_diagonal():
    hits = 0
    for seed in range(20):
        x, y = sample(300, CURVES["calibrated"], seed=100 + seed)
        band = honest_calibration_band(x, y, alpha=0.1)
        hits += band.covers(lambda v: v)
        assert band.covers(lambda v: v) == (band.deviations() == ())
    # the guarantee is >= 90 %; the Bonferroni band is conservative (P(19 or more) > 0.6 at 90 %)
    assert hits >= 18


def test_covers_checks_the_knots():
    x, y = sample(300, CURVES["step"], seed=8)
    band = honest_calibration_band(x, y)
    assert band.covers(CURVES["step"])
    assert not band.covers(lambda v: np.full_like(v, 0.99))


def test_input_forms_agree():
    x, y = sample(250, CURVES["overconfident"], seed=9)
    ref = honest_calibration_band(x, y)
    two = honest_calibration_band(np.c_[1 - x, x], y)
    np.testing.assert_array_equal(two.lower, ref.lower)
    np.testing.assert_array_equal(two.upper, ref.upper)
    named = honest_calibration_band(x, np.where(y == 1, "yes", "no"), classes=["no", "yes"])
    np.testing.assert_array_equal(named.upper, ref.upper)
    via = honest_calibration_band(check_predictions(x, y), None)
    np.testing.assert_array_equal(via.lower, ref.lower)
    z = np.log(x / (1 - x))
    lg = honest_calibration_band(z, y, logits=True)
    assert lg.x.shape == ref.x.shape
    assert isinstance(ref, CalibrationBand) and ref.max_width > 0


def test_torch_input():
    torch = pytest.importorskip("torch")
    x, y = sample(120, CURVES["calibrated"], seed=12)
    band = honest_calibration_band(torch.tensor(x), torch.tensor(y))
    np.testing.assert_array_equal(band.lower, honest_calibration_band(x, y).lower)


# ----------------------------------------------------------------- refusals


def test_refusals_say_what_is_wrong():
    x, y = sample(50, CURVES["calibrated"], seed=0)
    with pytest.raises(
        CalibrationInputError,
        match=r"one-vs-rest column: honest_calibration_band\(probs\[:, c\], labels == c\)",
    ):
        honest_calibration_band(np.full((4, 3), 1 / 3), [0, 1, 2, 0])
    with pytest.raises(CalibrationInputError, match="alpha must lie in"):
        honest_calibration_band(x, y, alpha=1.0)
    with pytest.raises(CalibrationInputError, match="alpha must be a number"):
        honest_calibration_band(x, y, alpha="0.05")
    with pytest.raises(CalibrationInputError, match="method must be"):
        honest_calibration_band(x, y, method="YB")
    with pytest.raises(CalibrationInputError, match="digits must be an integer from 1 to 6"):
        honest_calibration_band(x, y, method="round", digits=7)
    with pytest.raises(CalibrationInputError, match="digits applies to method='round'"):
        honest_calibration_band(x, y, digits=2)
    with pytest.raises(CalibrationInputError, match="nc must be"):
        honest_calibration_band(x, y, nc="yes")
    with pytest.raises(CalibrationInputError, match="takes no sample_weight"):
        honest_calibration_band(check_predictions(x, y, sample_weight=np.ones(50)))
    with pytest.raises(CalibrationInputError, match="labels must be None"):
        honest_calibration_band(check_predictions(x, y), y)
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\]"):
        honest_calibration_band(x, y).lower_at(1.5)


def test_cost_guard_warns_and_refuses(monkeypatch):
    x, y = sample(200, CURVES["calibrated"], seed=0)
    monkeypatch.setattr(hb, "_SECONDS_PER_PAIR", 1.0)  # 200^2 pairs: 11 h
    with pytest.raises(CalibrationInputError, match="method='round'"):
        honest_calibration_band(x, y)
    honest_calibration_band(x, y, method="round")  # no guard: at most 101 knots a side
    monkeypatch.setattr(hb, "_SECONDS_PER_PAIR", 1e-3)  # 40 s
    with pytest.warns(CalibrationCostWarning, match="method='round'"):
        honest_calibration_band(x, y)


# ----------------------------------------------------------------- the diagram


def test_diagram_draws_the_band_curve_and_deviations():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from calipers.diagrams import band_outline, calibration_band_diagram

    x, y = sample(1500, lambda v: 1 / (1 + ((1 - v) / v) ** 0.3), seed=21)
    band = honest_calibration_band(x, y)
    fig = calibration_band_diagram(x, y)
    ax = fig.axes[0]
    (shade,) = [c for c in ax.collections if c.get_gid() == "honest-band"]
    verts = np.concatenate([p.vertices for p in shade.get_paths()])
    # every vertex lies on the outline: between the lower and upper step functions
    bx, blo, bup = band_outline(band)
    assert verts[:, 0].min() == 0.0 and verts[:, 0].max() == 1.0
    assert np.all(np.isin(np.round(verts[:, 1], 12), np.round(np.r_[blo, bup], 12)))
    (iso,) = [ln for ln in ax.lines if ln.get_gid() == "isotonic"]
    np.testing.assert_array_equal(iso.get_xdata(), band.x)
    np.testing.assert_array_equal(iso.get_ydata(), band.isotonic)
    assert iso.get_drawstyle() == "steps-post"
    segments = [ln for ln in ax.lines if ln.get_gid() and ln.get_gid().startswith("deviation-")]
    devs = band.deviations()
    assert len(segments) == len(devs) > 0
    for seg, d in zip(segments, devs, strict=True):
        assert seg.get_gid() == f"deviation-{d.direction}"
        np.testing.assert_array_equal(seg.get_xdata(), [d.start, d.end])
        np.testing.assert_array_equal(seg.get_ydata(), [d.start, d.end])
    note = ax.artists[0].get_title().get_text()
    assert note.startswith("95 % honest band, n = 1500")
    assert "too low on" in note and "too high on" in note
    # a band computed beforehand draws the same
    fig2 = calibration_band_diagram(band)
    (iso2,) = [ln for ln in fig2.axes[0].lines if ln.get_gid() == "isotonic"]
    np.testing.assert_array_equal(iso2.get_ydata(), band.isotonic)
    with pytest.raises(CalibrationInputError, match="labels must be None"):
        calibration_band_diagram(band, y)
    plt.close(fig)
    plt.close(fig2)


def test_band_outline_matches_the_step_functions():
    from calipers.diagrams import band_outline

    x, y = sample(300, CURVES["step"], seed=30)
    band = honest_calibration_band(x, y)
    bx, blo, bup = band_outline(band)
    kx = np.unique(bx)
    mid = (kx[:-1] + kx[1:]) / 2
    # on each piece the outline's right-of-knot values are the bounds between the knots
    np.testing.assert_array_equal(blo[1::2][:-1], band.lower_at(mid))
    np.testing.assert_array_equal(bup[1::2][:-1], band.upper_at(mid))
    np.testing.assert_array_equal(blo[::2][1:], band.lower_at(mid))
    np.testing.assert_array_equal(bup[::2], band.upper_at(kx))


def test_diagram_shades_nothing_where_the_bounds_cross():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from calipers.diagrams import band_note, calibration_band_diagram

    x = np.linspace(0.01, 0.99, 200)
    y = np.r_[np.ones(100, int), np.zeros(100, int)]
    band = honest_calibration_band(x, y)
    fig = calibration_band_diagram(band)
    (shade,) = [c for c in fig.axes[0].collections if c.get_gid() == "honest-band"]
    verts = np.concatenate([p.vertices for p in shade.get_paths()])
    (cross,) = band.crossings()
    inner = (verts[:, 0] > cross[0] + 1e-9) & (verts[:, 0] < cross[1] - 1e-9)
    assert not inner.any()
    assert "bounds cross on 1 range" in band_note(band)
    plt.close(fig)
