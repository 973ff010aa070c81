"""Tests of calipers.estimators.nadaraya_watson (Chidambaram & Ge (2024) eq. 4.8; docs/how-calipers-computes.md §7.1).

The oracle is a direct O(n^2) evaluation of the definition written here, with
the kernels spelled out from docs/how-calipers-computes.md §7.1, and the worked numbers of
docs/how-calipers-computes.md §7.1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from calipers.estimators.nadaraya_watson import NadarayaWatson, epanechnikov_kernel, gaussian_kernel
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- oracle


def k_gauss(u: np.ndarray, s: float) -> np.ndarray:
    return np.exp(-(u**2) / (2 * s * s)) / (s * math.sqrt(2 * math.pi))


def k_epan(u: np.ndarray, s: float) -> np.ndarray:
    z = u / s
    return 3 / (4 * s) * (1 - z**2) * (np.abs(z) <= 1)


def brute(s, t, w, at, kernel, bw, loo=False):
    """Direct NW: (m_hat at ``at``, KDE at ``at``); ``loo`` needs at == s (same order)."""
    s, t, at = (np.asarray(a, dtype=float) for a in (s, t, at))
    w = np.ones(len(s)) if w is None else np.asarray(w, dtype=float)
    kern = k_gauss if kernel == "gaussian" else k_epan
    K = kern(at[:, None] - s[None, :], bw) * w[None, :]
    if loo:
        np.fill_diagonal(K, 0.0)
    den = K.sum(axis=1)
    t2 = t.reshape(len(s), -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (K @ t2) / den[:, None]
    m[den == 0] = np.nan
    return (m[:, 0] if t.ndim == 1 else m), den / w.sum()


def random_data(n, seed, ties=False, weights=False, q=1):
    rng = np.random.default_rng(seed)
    s = rng.beta(5, 2, n)
    if ties:
        s = np.round(s, 2)  # many duplicated scores
    t = (rng.random((n, q)) < s[:, None] ** 2).astype(float)
    t[:, 1:] = rng.random((n, q - 1)) * 3 - 1  # continuous extra columns
    w = rng.integers(0, 4, n).astype(float) if weights else None
    if weights:
        w[0] = 1.0
    return s, (t[:, 0] if q == 1 else t), w


KERNELS = ["gaussian", "epanechnikov"]
# documented binned-vs-exact tolerances (module docstring: measured max 3.3e-8 /
# 9.1e-6 at sigma = 0.05; 2.3e-7 / 5.3e-6 at sigma = 0.01)
TOL_BINNED = {"gaussian": 1e-6, "epanechnikov": 1e-4}


# ----------------------------------------------------------------------------- worked numbers


def test_worked_example_conventions_7_1():
    """h = (.55, .6, .9, .95), c = (1, 0, 1, 1), sigma = .05 (docs/how-calipers-computes.md §7.1)."""
    h = np.array([0.55, 0.6, 0.9, 0.95])
    c = np.array([1.0, 0.0, 1.0, 1.0])
    ref = [0.622459, 0.377541, 1.0, 1.0]
    # by hand: the neighbour at distance sigma has relative weight exp(-1/2)
    e = math.exp(-0.5)
    assert abs(1 / (1 + e) - 0.622459) < 5e-7
    assert abs(e / (1 + e) - 0.377541) < 5e-7
    for method in ("exact", "binned"):
        m = NadarayaWatson(0.05, method=method).regress(h, c)
        np.testing.assert_allclose(m, ref, atol=1e-6)
    m = NadarayaWatson(0.05, method="exact").regress(h, c)
    np.testing.assert_allclose(m, brute(h, c, None, h, "gaussian", 0.05)[0], rtol=1e-13)


def test_kernel_functions():
    u = np.linspace(-0.2, 0.2, 41)
    np.testing.assert_allclose(gaussian_kernel(u, 0.05), k_gauss(u, 0.05), rtol=1e-14)
    np.testing.assert_allclose(epanechnikov_kernel(u, 0.05), k_epan(u, 0.05), atol=1e-12)
    # both integrate to 1
    x = np.linspace(-1, 1, 200001)
    for f in (gaussian_kernel, epanechnikov_kernel):
        assert abs(np.trapezoid(f(x, 0.05), x) - 1) < 1e-6


# ----------------------------------------------------------------------------- against O(n^2)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("loo", [False, True])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weights", [False, True])
def test_regress_matches_bruteforce(kernel, loo, ties, weights):
    s, t, w = random_data(400, seed=1 + ties + 2 * weights, ties=ties, weights=weights, q=3)
    bw = 0.05
    ref, _ = brute(s, t, w, s, kernel, bw, loo=loo)
    got = NadarayaWatson(bw, kernel, loo, "exact").regress(s, t, w)
    assert got.shape == t.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    got_b = NadarayaWatson(bw, kernel, loo, "binned").regress(s, t, w)
    np.testing.assert_array_equal(np.isnan(got_b), np.isnan(ref))
    # scores on a 0.01 lattice sit exactly sigma = 0.05 apart, on the kink of the
    # Epanechnikov kernel: the documented worst case of the binned path (7.5e-4
    # of the targets' range measured); tolerances scale with each column's range
    tol = 1e-3 if (ties and kernel == "epanechnikov") else TOL_BINNED[kernel]
    atol = tol * np.ptp(t, axis=0)
    assert np.all(np.abs(got_b - ref)[~np.isnan(ref)].reshape(-1, 3) <= atol)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("method", ["exact", "binned"])
def test_regress_at_and_density_match_bruteforce(kernel, method):
    s, t, w = random_data(500, seed=7, weights=True)
    at = np.concatenate([np.linspace(0, 1, 301), s[:20]])
    ref_m, ref_p = brute(s, t, w, at, kernel, 0.05)
    nw = NadarayaWatson(0.05, kernel, method=method)
    tol = 1e-11 if method == "exact" else TOL_BINNED[kernel]
    got_m = nw.regress_at(s, t, w, at)
    np.testing.assert_array_equal(np.isnan(got_m), np.isnan(ref_m))
    np.testing.assert_allclose(got_m, ref_m, atol=tol, equal_nan=True)
    got_p = nw.density(s, w, at)
    np.testing.assert_allclose(got_p, ref_p, rtol=tol, atol=tol * ref_p.max())
    m2, p2 = nw.regress_with_density_at(s, t, w, at)
    np.testing.assert_allclose(m2, got_m, rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(p2, got_p, rtol=1e-13)


@pytest.mark.parametrize("kernel", KERNELS)
def test_integer_weights_equal_repetition(kernel):
    s, t, w = random_data(300, seed=3, weights=True)
    rep = np.repeat(np.arange(len(s)), w.astype(int))
    nw = NadarayaWatson(0.03, kernel, method="exact")
    got = nw.regress(s, t, w)
    want = nw.regress(s[rep], t[rep])
    keep = w > 0
    # the estimate at a row equals the estimate at any of its copies
    first = np.searchsorted(rep, np.arange(len(s)))[keep]
    np.testing.assert_allclose(got[keep], want[first], rtol=1e-12, equal_nan=True)
    at = np.linspace(0, 1, 51)
    np.testing.assert_allclose(
        nw.density(s, w, at), nw.density(s[rep], None, at), rtol=1e-12, atol=1e-300
    )
    np.testing.assert_allclose(
        nw.regress_at(s, t, w, at), nw.regress_at(s[rep], t[rep], None, at), equal_nan=True
    )


def test_leave_one_out_with_duplicates_by_hand():
    # three samples at 0.5 (targets 1, 0, 0) and one at 0.9 (target 1), Epanechnikov 0.1:
    # leaving one of the 0.5's out leaves the other two (0.9 is outside the support)
    s = np.array([0.5, 0.5, 0.5, 0.9])
    t = np.array([1.0, 0.0, 0.0, 1.0])
    for method in ("exact", "binned"):
        m = NadarayaWatson(0.1, "epanechnikov", True, method).regress(s, t)
        np.testing.assert_allclose(m[:3], [0.0, 0.5, 0.5], atol=1e-12)
        assert np.isnan(m[3])  # no other sample within the support


# ----------------------------------------------------------------------------- binned vs exact


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("bw", [0.05, 0.01])
def test_binned_within_documented_tolerance(kernel, bw):
    s, t, _ = random_data(3000, seed=11)
    x = np.linspace(0, 1, 1001)
    for loo in (False, True):
        e = NadarayaWatson(bw, kernel, loo, "exact").regress(s, t)
        b = NadarayaWatson(bw, kernel, loo, "binned").regress(s, t)
        np.testing.assert_array_equal(np.isnan(b), np.isnan(e))
        ok = ~np.isnan(e)
        assert np.max(np.abs(b[ok] - e[ok])) < TOL_BINNED[kernel]
        dcal_e, dcal_b = np.mean((e[ok] - s[ok]) ** 2), np.mean((b[ok] - s[ok]) ** 2)
        assert abs(dcal_b - dcal_e) < 1e-6 * dcal_e
    e = NadarayaWatson(bw, kernel, method="exact").regress_at(s, t, None, x)
    b = NadarayaWatson(bw, kernel, method="binned").regress_at(s, t, None, x)
    np.testing.assert_array_equal(np.isnan(b), np.isnan(e))
    np.testing.assert_allclose(b, e, atol=TOL_BINNED[kernel], equal_nan=True)


def test_auto_threshold_chooses_path():
    s, t, _ = random_data(300, seed=5)
    exact = NadarayaWatson(method="exact").regress(s, t)
    binned = NadarayaWatson(method="binned").regress(s, t)
    assert np.max(np.abs(exact - binned)) > 0  # the paths differ in the last digits
    np.testing.assert_array_equal(NadarayaWatson(max_exact_pairs=1e12).regress(s, t), exact)
    np.testing.assert_array_equal(NadarayaWatson(max_exact_pairs=0).regress(s, t), binned)


# ----------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("method", ["exact", "binned"])
def test_gaussian_far_from_data_tends_to_nearest_target(method):
    """exp underflows to 0 at 0.3 / 0.001 = 300 bandwidths; the ratio's limit is defined."""
    s = np.array([0.2, 0.9])
    t = np.array([1.0, 0.0])
    nw = NadarayaWatson(0.001, method=method)
    at = np.array([0.2, 0.5, 0.6, 0.9])
    np.testing.assert_allclose(nw.regress_at(s, t, None, at), [1.0, 1.0, 0.0, 0.0])
    assert brute(s, t, None, at, "gaussian", 0.001)[1][1] == 0.0  # the naive KDE underflows
    np.testing.assert_array_equal(nw.density(s, None, at)[1:3], [0.0, 0.0])
    # leave-one-out: each sample's only neighbour is the other one
    np.testing.assert_allclose(NadarayaWatson(0.001, leave_one_out=True).regress(s, t), [0, 1])


def test_constant_scores():
    s = np.full(50, 0.7)
    t = (np.arange(50) % 5 == 0).astype(float)
    nw = NadarayaWatson(0.05)
    np.testing.assert_allclose(nw.regress(s, t), 0.2)
    np.testing.assert_allclose(nw.regress_at(s, t, None, np.linspace(0, 1, 11)), 0.2)
    loo = NadarayaWatson(0.05, leave_one_out=True).regress(s, t)
    np.testing.assert_allclose(loo, np.where(t == 1, 9 / 49, 10 / 49))


@pytest.mark.parametrize("method", ["exact", "binned"])
def test_denominator_zero_is_nan(method):
    s = np.array([0.1, 0.5, 0.52])
    t = np.array([1.0, 0.0, 1.0])
    nw = NadarayaWatson(0.05, "epanechnikov", method=method)
    m = nw.regress_at(s, t, None, [0.3, 0.51])
    assert np.isnan(m[0]) and abs(m[1] - 0.5) < TOL_BINNED["epanechnikov"]
    assert nw.density(s, None, [0.3])[0] == 0.0
    loo = NadarayaWatson(0.05, "epanechnikov", True, method).regress(s, t)
    assert np.isnan(loo[0])
    np.testing.assert_allclose(loo[1:], [1.0, 0.0])
    # a single sample has no leave-one-out estimate with either kernel
    assert np.isnan(NadarayaWatson(leave_one_out=True, method=method).regress([0.4], [1.0])[0])


def test_zero_weight_rows_get_an_estimate_but_do_not_count():
    s = np.array([0.3, 0.31, 0.8])
    t = np.array([1.0, 0.0, 0.0])
    w = np.array([1.0, 0.0, 1.0])
    for loo in (False, True):
        m = NadarayaWatson(0.05, leave_one_out=loo, method="exact").regress(s, t, w)
        ref = brute(s, t, w, s, "gaussian", 0.05, loo=loo)[0]
        np.testing.assert_allclose(m, ref, rtol=1e-12)


def test_results_stay_in_target_range():
    s, t, _ = random_data(2000, seed=2)
    for kernel in KERNELS:
        for loo in (False, True):
            m = NadarayaWatson(0.02, kernel, loo, "binned").regress(s, t)
            ok = ~np.isnan(m)
            assert m[ok].min() >= 0.0 and m[ok].max() <= 1.0


def test_scores_outside_unit_interval():
    s = np.array([-0.2, 0.0, 1.0, 1.3])
    t = np.array([0.0, 1.0, 0.0, 1.0])
    at = np.array([-0.1, 0.5, 1.2, 1.6, -0.5])  # the last two lie beyond the binned grid
    for method in ("exact", "binned"):
        got = NadarayaWatson(0.2, method=method).regress_at(s, t, None, at)
        np.testing.assert_allclose(got, brute(s, t, None, at, "gaussian", 0.2)[0], atol=1e-6)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": -1.0}, "bandwidth"),
        ({"bandwidth": float("nan")}, "bandwidth"),
        ({"bandwidth": "0.1"}, "bandwidth"),
        ({"kernel": "tophat"}, "kernel"),
        ({"method": "fft"}, "method"),
        ({"n_grid": 2}, "n_grid"),
        ({"n_grid": 10.5}, "n_grid"),
        ({"leave_one_out": "yes"}, "leave_one_out"),
        ({"max_exact_pairs": -1}, "max_exact_pairs"),
    ],
)
def test_bad_parameters(kwargs, msg):
    with pytest.raises(CalibrationInputError, match=msg):
        NadarayaWatson(**kwargs)


def test_bad_inputs():
    nw = NadarayaWatson()
    with pytest.raises(CalibrationInputError, match="scores must be finite.*index 1"):
        nw.regress([0.1, np.nan], [0, 1])
    with pytest.raises(CalibrationInputError, match="targets must have shape"):
        nw.regress([0.1, 0.2], [0, 1, 1])
    with pytest.raises(CalibrationInputError, match="targets must be finite.*row 0"):
        nw.regress([0.1, 0.2], [np.inf, 1])
    with pytest.raises(CalibrationInputError, match="weights must be non-negative.*index 1"):
        nw.regress([0.1, 0.2], [0, 1], [1, -1])
    with pytest.raises(CalibrationInputError, match="weights sum to 0"):
        nw.regress([0.1, 0.2], [0, 1], [0, 0])
    with pytest.raises(CalibrationInputError, match="weights must have shape"):
        nw.regress([0.1, 0.2], [0, 1], [1])
    with pytest.raises(CalibrationInputError, match="scores must be 1-D"):
        nw.regress([[0.1, 0.2]], [0, 1])
    with pytest.raises(CalibrationInputError, match="empty"):
        nw.regress([], [])
    with pytest.raises(CalibrationInputError, match="at must be finite"):
        nw.regress_at([0.1], [1], None, [np.nan])
    with pytest.raises(CalibrationInputError, match="numeric"):
        nw.density(["a"], None, [0.1])
