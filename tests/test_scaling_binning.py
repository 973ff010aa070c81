"""ScalingBinning, the scaling-binning calibrator of Kumar, Liang & Ma (2019).

Checked without any peer: the split, the Platt step against scipy.optimize on the
first part, the equal-mass bins and their means written out by hand on the second
part, the number of values, the debiased calibration error of the output. With the
authors' ``calibration`` package (uncertainty-calibration), when installed: the
same bins and bin values from the same scaled values, and the same Platt fit within
scikit-learn's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

import calipers as cp
from calipers.recalibration import load_recalibrator
from calipers.recalibration.scaling_binning import ScalingBinning, bin_means, equal_mass_edges
from calipers.validation import CalibrationInputError


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident binary probabilities: the truth is the logit halved."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.3, 2.5, n)
    return expit(z), (rng.random(n) < expit(z / 2)).astype(np.int64)


def _platt_by_hand(z: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        s = x[0] * z + x[1]
        r = expit(s) - t
        return float(np.mean(np.logaddexp(0, s) - t * s)), np.array([r @ z, r.sum()]) / len(z)

    a, b = minimize(f, np.array([1.0, 0.0]), jac=True, method="BFGS", options={"gtol": 1e-12}).x
    return float(a), float(b)


def _bins_by_hand(g: np.ndarray, B: int) -> tuple[list[float], list[float]]:
    """Sorted values cut into B runs (the first n mod B one longer), edges halfway between
    runs, bins (lo, hi], each bin's mean (an empty bin: its midpoint)."""
    v = sorted(g.tolist())
    n = len(v)
    sizes = [n // B + (1 if i < n % B else 0) for i in range(B)]
    runs, start = [], 0
    for s in sizes:
        runs.append(v[start : start + s])
        start += s
    edges = [(runs[i][-1] + runs[i + 1][0]) / 2 for i in range(B - 1)]
    bounds = [0.0, *edges, 1.0]
    means = []
    for i in range(B):
        inside = [x for x in g.tolist() if bounds[i] < x <= bounds[i + 1] or (i == 0 and x == 0)]
        means.append(sum(inside) / len(inside) if inside else (bounds[i] + bounds[i + 1]) / 2)
    return edges, means


def test_the_map_is_platt_on_the_first_part_then_bin_means_on_the_second() -> None:
    p, y = _data(1001, 1)
    sb = ScalingBinning(n_bins=7, smooth_targets=False).fit(p, y)
    first, second = sb.split_indices(len(p))
    np.testing.assert_array_equal(np.sort(np.concatenate((first, second))), np.arange(1001))
    np.testing.assert_array_equal(first, np.random.default_rng(0).permutation(1001)[:500])
    z = np.log(p / (1 - p))
    a, b = _platt_by_hand(z[first], y[first].astype(float))
    assert abs(sb.a_[0] - a) < 1e-6 and abs(sb.b_[0] - b) < 1e-6
    g = expit(sb.a_[0] * z[second] + sb.b_[0])
    edges, means = _bins_by_hand(g, 7)
    np.testing.assert_allclose(sb.bin_edges_[0], edges, rtol=0, atol=0)
    np.testing.assert_allclose(sb.bin_values_[0], means, rtol=1e-13)
    # a new score: its own Platt value, the bin it falls in, that bin's mean
    new = np.array([0.01, 0.3, 0.5, 0.77, 0.999])
    gn = expit(sb.a_[0] * np.log(new / (1 - new)) + sb.b_[0])
    want = [means[int(np.sum(np.array(edges) < x))] for x in gn]
    np.testing.assert_array_equal(sb.predict_proba(new), want)
    assert np.unique(sb.predict_proba(p)).size == 7


def test_smoothed_platt_targets_and_empty_bins() -> None:
    p, y = _data(400, 2)
    sb = ScalingBinning(n_bins=4, shuffle=False, split=0.25).fit(p, y)
    z = np.log(p / (1 - p))
    t = y[:100].astype(float)
    npos, nneg = t.sum(), 100 - t.sum()
    t = np.where(t == 1, (npos + 1) / (npos + 2), 1 / (nneg + 2))  # Platt (1999)
    a, b = _platt_by_hand(z[:100], t)
    assert abs(sb.a_[0] - a) < 1e-6 and abs(sb.b_[0] - b) < 1e-6
    # ties: the halfway point of equal values is that value; the next bin stays empty
    g = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.9])
    edges = equal_mass_edges(g, 3)
    np.testing.assert_array_equal(edges, [0.2, 0.2])
    np.testing.assert_allclose(bin_means(g, edges), [0.18, 0.2, 0.9])  # (0.2, 0.2] is empty
    np.testing.assert_allclose(
        bin_means(np.array([0.1, 0.9]), np.array([0.3, 0.5])), [0.1, 0.4, 0.9]
    )


def test_output_has_a_small_debiased_calibration_error() -> None:
    """Kumar et al.'s point: the binned output's calibration error can be estimated, and is
    small; the over-confident input's is not."""
    p, y = _data(20000, 3)
    pt, yt = _data(20000, 4)
    sb = ScalingBinning(n_bins=10).fit(p, y)
    q = sb.predict_proba(pt)
    after = cp.debiased_calibration_error(q, yt, lens="binary")
    before = cp.debiased_calibration_error(pt, yt, lens="binary")
    assert after < 0.02 < before


def test_marginal_and_top_label_multiclass() -> None:
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(3) * 0.5, 1200)
    lab = np.array([rng.choice(3, p=r) for r in P])
    raw = ScalingBinning(renormalize=False).fit(P, lab)
    first, second = raw.split_indices(1200)
    for k in range(3):  # class k alone is the binary problem of its column
        one = ScalingBinning().fit(P[:, k], (lab == k).astype(int))
        np.testing.assert_array_equal(one.bin_values_[0], raw.bin_values_[k])
    Q = raw.predict_proba(P)
    assert all(np.unique(Q[:, k]).size <= 10 for k in range(3))
    norm = ScalingBinning().fit(P, lab).predict_proba(P)
    np.testing.assert_allclose(norm, Q / Q.sum(axis=1, keepdims=True), rtol=1e-15)
    top = ScalingBinning(mode="top_label").fit(P, lab)
    T = top.predict_proba(P)
    pred = P.argmax(axis=1)
    c = T[np.arange(1200), pred]
    assert np.unique(c).size <= 10
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    rest = P.copy()
    rest[np.arange(1200), pred] = 0
    share = rest / rest.sum(axis=1, keepdims=True)
    other = np.ones_like(T, dtype=bool)
    other[np.arange(1200), pred] = False
    np.testing.assert_allclose(T[other], (share * (1 - c)[:, None])[other], rtol=1e-13)


def test_files_clone_tensors_and_refusals() -> None:
    p, y = _data(300, 6)
    sb = ScalingBinning(n_bins=5).fit(p, y)
    back = load_recalibrator(sb.to_json())
    np.testing.assert_array_equal(back.predict_proba(p), sb.predict_proba(p))
    assert cp.ScalingBinning is ScalingBinning
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        ScalingBinning().fit(p, y, sample_weight=np.ones(300))
    many = ScalingBinning(n_bins=200).fit(p, y)  # 150 rows to bin: 150 bins, the rest empty
    assert np.all(many.bin_edges_[0, 149:] == 1.0) and np.all(many.bin_edges_[0, :149] < 1)
    assert np.unique(many.predict_proba(p)).size <= 150
    with pytest.raises(CalibrationInputError, match="another split"):
        ScalingBinning(split=0.001).fit(p, y)
    with pytest.raises(CalibrationInputError, match="split"):
        ScalingBinning(split=1.0).fit(p, y)
    sk = pytest.importorskip("sklearn.base")
    assert sk.clone(sb).get_params() == sb.get_params()
    torch = pytest.importorskip("torch")
    out = sb.predict_proba(torch.tensor(p))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64


def test_same_bins_as_the_authors_package() -> None:
    """The ``calibration`` package (Kumar et al.'s own code) fits both steps on the data it
    is given; its experiments split the data first. Given the same first part it fits
    nearly the same Platt map (scikit-learn stops at its tolerance 1e-4), and given the
    same scaled values it makes exactly the same bins and values."""
    cu = pytest.importorskip("calibration.utils")

    p, y = _data(3000, 7)
    sb = ScalingBinning(n_bins=10, smooth_targets=False).fit(p, y)
    first, second = sb.split_indices(3000)
    platt, clf = cu.get_platt_scaler(p[first], y[first], get_clf=True)
    assert abs(clf.coef_[0][0] - sb.a_[0]) < 1e-3 and abs(clf.intercept_[0] - sb.b_[0]) < 1e-3
    g = platt(p[second])
    bins = cu.get_equal_bins(g, num_bins=10)
    edges = equal_mass_edges(g, 10)
    np.testing.assert_array_equal(np.unique(edges), np.array(bins[:-1]))
    theirs = cu.get_discrete_calibrator(g, bins)
    x = np.linspace(0, 1, 2001)
    np.testing.assert_allclose(
        bin_means(g, edges)[np.searchsorted(edges, x)], theirs(x), rtol=1e-12
    )
