"""SplineCalibration (Lucena 2018) and KSSplineCalibration (Gupta et al. 2021).

Checked without any peer: the natural cubic spline basis against SciPy's natural
cubic interpolant (same function space, linear beyond the boundary knots); the
penalised fit against scipy.optimize on an objective written here; the
cross-validated penalty against a brute force written here; Gupta et al.'s map
against a least-squares fit written here with SciPy's natural splines; an
already calibrated model mapped to (nearly) the identity. With ml-insights'
SplineCalib (splinecalib), when installed: the same folds, and the same fit for
the same knots, rows and penalty.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize
from scipy.special import expit

import calipers as cp
from calipers.recalibration import load_recalibrator
from calipers.recalibration.ks_spline_calibration import KSSplineCalibration
from calipers.recalibration.spline_calibration import (
    SplineCalibration,
    _fold_numbers,
    natural_cubic_basis,
)
from calipers.validation import CalibrationInputError


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    return p, (rng.random(n) < p**2).astype(np.int64)


# ----------------------------------------------------------------------------- the basis


def test_basis_spans_scipys_natural_cubic_splines() -> None:
    """Any natural cubic interpolant of the knots is a combination of the basis columns."""
    knots = np.array([-3.0, -1.2, 0.0, 0.4, 2.5, 4.0])
    vals = np.array([0.3, -1.0, 2.0, 0.5, 1.5, -0.7])
    ref = CubicSpline(knots, vals, bc_type="natural")
    beta = np.linalg.solve(natural_cubic_basis(knots, knots), vals)
    x = np.linspace(-3.0, 4.0, 301)
    np.testing.assert_allclose(natural_cubic_basis(x, knots) @ beta, ref(x), atol=1e-10)
    np.testing.assert_allclose(
        natural_cubic_basis(x, knots, derivative=True) @ beta, ref(x, 1), atol=1e-10
    )


def test_basis_is_linear_beyond_the_boundary_knots() -> None:
    knots = np.array([0.0, 1.0, 2.5, 3.0, 5.0])
    for side in (np.array([-9.0, -5.0, -1.0]), np.array([6.0, 10.0, 14.0])):
        B = natural_cubic_basis(side, knots)
        # equally spaced points: every column's second difference is 0
        np.testing.assert_allclose(B[0] - 2 * B[1] + B[2], 0.0, atol=1e-9)
    # below the first knot the cubic terms vanish: only 1 and x remain
    B = natural_cubic_basis(np.array([-2.0]), knots)
    np.testing.assert_array_equal(B[0, 2:], 0.0)
    # the columns written out by hand at x = 4 (between the last two knots)
    x, K = 4.0, knots[-1]

    def d(k: float) -> float:
        return (max(x - k, 0) ** 3 - max(x - K, 0) ** 3) / (K - k)

    want = [1.0, x] + [d(knots[k]) - d(knots[-2]) for k in range(3)]
    np.testing.assert_allclose(natural_cubic_basis(np.array([x]), knots)[0], want, rtol=1e-14)


# ----------------------------------------------------------------------------- the fit


def _prior() -> tuple[np.ndarray, np.ndarray]:
    """SplineCalib's unity prior, written out: 135 points, 18 + 18 tail points weigh 1 + 1."""
    tails = 10.0 ** np.linspace(-8, -2, 19)[:-1]  # 1e-8 .. 10^(-2 - 1/3); 0.01 is central
    pts = np.concatenate((tails, np.arange(1, 100) / 100, (1 - tails)[::-1]))
    w = np.concatenate((np.full(18, 1 / 18), np.ones(99), np.full(18, 1 / 18))) * 20 / 101
    return pts, w


def _objective(X: np.ndarray, t: np.ndarray, v: np.ndarray, lam: float):  # type: ignore[no-untyped-def]
    N, K = X.shape

    def f(b: np.ndarray) -> tuple[float, np.ndarray]:
        s = X @ b
        val = np.sum(v * (np.logaddexp(0, s) - t * s)) / N + lam * b @ b / K
        return float(val), X.T @ (v * (expit(s) - t)) / N + 2 * lam * b / K

    return f


def _design(rc: SplineCalibration, p: np.ndarray, y: np.ndarray):  # type: ignore[no-untyped-def]
    pts, w = _prior()
    eps = float(rc.eps_[0])
    allp = np.clip(np.concatenate((p, pts)), eps, 1 - eps)
    x = np.log(allp / (1 - allp))
    return (
        natural_cubic_basis(x, rc.knots_[0]),
        np.concatenate((y, pts)),
        np.concatenate((np.ones(len(p)), w)),
    )


def test_penalised_fit_is_the_minimiser_found_by_scipy() -> None:
    p, y = _data(600, 1)
    rc = SplineCalibration(n_knots=8, penalty=0.01).fit(p, y)
    assert rc.eps_[0] == 2.0**-28  # the prior's 1e-8: 2^(round(log2 1e-8) - 1)
    X, t, v = _design(rc, p, y)
    f = _objective(X, t, v, 0.01)
    ref = minimize(f, np.zeros(X.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-11})
    assert f(rc.coef_[0])[0] <= ref.fun + 1e-13
    assert np.max(np.abs(f(rc.coef_[0])[1])) < 1e-9
    np.testing.assert_allclose(rc.predict_proba(p), expit(X[: len(p)] @ ref.x), atol=1e-6)


def test_knots_are_quantiles_of_the_distinct_log_odds() -> None:
    p, y = _data(500, 2)
    rc = SplineCalibration(n_knots=5, penalty=1.0).fit(p, y)
    eps = rc.eps_[0]
    x = np.unique(np.log(np.clip(p, eps, 1 - eps) / (1 - np.clip(p, eps, 1 - eps))))
    np.testing.assert_allclose(rc.knots_[0], np.quantile(x, [0, 0.25, 0.5, 0.75, 1]))


def test_folds_are_splinecalibs() -> None:
    """Stratified: each class cut into 5 runs of rounded equal length after a seeded shuffle."""
    y = np.array([0] * 13 + [1] * 7)
    fn = _fold_numbers(y, 5, 42)
    assert np.bincount(fn[y == 0]).tolist() == [3, 2, 3, 2, 3]  # round(13/5 * i) cuts
    assert np.bincount(fn[y == 1]).tolist() == [1, 2, 1, 2, 1][::-1]  # class 1: reversed
    idx = np.arange(13)
    np.random.RandomState(42).shuffle(idx)
    assert fn[idx[:3]].tolist() == [0, 0, 0]


def test_cross_validated_penalty_matches_a_brute_force() -> None:
    p, y = _data(300, 3)
    rc = SplineCalibration(n_knots=6, search="full", cv=3).fit(p, y)
    X, t, v = _design(rc, p, y)
    n = len(p)
    fn = np.concatenate((_fold_numbers(y, 3, 42), np.full(len(t) - n, -1)))
    lams = np.logspace(-4, 4, 17)
    losses = []
    for lam in lams:
        tot = 0.0
        for k in range(3):
            tr, te = fn != k, fn == k
            b = minimize(
                _objective(X[tr], t[tr], v[tr], lam),
                np.zeros(X.shape[1]),
                jac=True,
                method="BFGS",
                options={"gtol": 1e-11},
            ).x
            s = X[te] @ b
            tot += float(np.sum(np.logaddexp(0, s) - t[te] * s))
        losses.append(tot / n)
    r = np.round(losses, 4)
    best = lams[np.flatnonzero(r == r.min())[-1]]  # ties: the larger penalty
    assert rc.penalty_[0] == best


def test_recovers_a_known_miscalibration_and_multiclass_rows_sum_to_one() -> None:
    p, y = _data(3000, 4)
    grid = np.linspace(0.1, 0.9, 9)
    q = SplineCalibration().fit(p, y).predict_proba(grid)
    assert np.max(np.abs(q - grid**2)) < 0.04
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(3), 300)
    lab = np.array([rng.choice(3, p=r) for r in P])
    Q = SplineCalibration(n_knots=6).fit(P, lab).predict_proba(P)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)


def test_spline_files_clone_tensors_and_refusals() -> None:
    p, y = _data(400, 6)
    rc = SplineCalibration(n_knots=7).fit(p, y)
    back = load_recalibrator(rc.to_json())
    np.testing.assert_array_equal(back.predict_proba(p), rc.predict_proba(p))
    assert json.loads(rc.to_json())["params"]["n_knots"] == 7
    assert cp.SplineCalibration is SplineCalibration
    with pytest.raises(CalibrationInputError, match="at least 3 distinct scores"):
        SplineCalibration().fit(np.array([0.2, 0.7] * 20), np.array([0, 1] * 20))
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        SplineCalibration().fit(p, y, sample_weight=np.ones(len(p)))
    with pytest.raises(CalibrationInputError, match="too few for 5-fold"):
        SplineCalibration().fit(np.array([0.1, 0.2, 0.3, 0.6]), np.array([0, 0, 1, 1]))
    with pytest.raises(CalibrationInputError, match="n_knots"):
        SplineCalibration(n_knots=2).fit(p, y)
    sklearn_base = pytest.importorskip("sklearn.base")
    assert sklearn_base.clone(rc).get_params() == rc.get_params()
    torch = pytest.importorskip("torch")
    out = rc.predict_proba(torch.tensor(p, dtype=torch.float32))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32


# ----------------------------------------------------------------------------- the oracle


def test_same_fit_and_folds_as_splinecalib() -> None:
    """SplineCalib's final fit is on the training rows of its first fold (and the prior);
    given our knots and one penalty it minimises our objective on those rows."""
    sc = pytest.importorskip("splinecalib")
    cu = pytest.importorskip("splinecalib.calib_utils")
    p, y = _data(2000, 7)
    pts, _ = _prior()
    fn = cu.get_stratified_foldnums(np.concatenate((y, pts)).astype(float), 5)
    np.testing.assert_array_equal(fn[: len(y)], _fold_numbers(y, 5, 42))
    assert np.all(fn[len(y) :] == 2)  # the prior rows never leave the training side of fold 0
    keep = fn[: len(y)] != 0
    ours = SplineCalibration(n_knots=12, penalty=0.01).fit(p[keep], y[keep])
    peer = sc.SplineCalib(
        knot_sample_size=0,
        add_knots=expit(ours.knots_[0]),
        reg_param_vec=[0.01],
        tol=1e-12,
        max_iter=100000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer.fit(p, y)
    assert peer.logodds_eps == ours.eps_[0]
    np.testing.assert_allclose(peer.knot_vec_tr, ours.knots_[0], rtol=1e-12)
    grid = np.linspace(0.001, 0.999, 999)
    # 1e-9 apart (seen): their BFGS stops where its line search can no longer progress, at a
    # gradient of about 1e-9; our Newton steps reach 1e-10 (both sides check the other's
    # optimum in test_penalised_fit_is_the_minimiser_found_by_scipy)
    np.testing.assert_allclose(ours.predict_proba(grid), peer.calibrate(grid), atol=1e-8)


# ----------------------------------------------------------------------------- Gupta et al.


def _gupta_by_hand(s: np.ndarray, y: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Least squares on SciPy's natural cubic cardinal splines (another basis, same space)."""
    o = np.argsort(s, kind="stable")
    ss, ys = s[o], y[o].astype(float)
    n = len(ss)
    t = np.linspace(0, 1, n)
    target = np.cumsum(ys) / n - np.cumsum(ss) / n
    knots = np.linspace(0, 1, K)
    cards = [CubicSpline(knots, np.eye(K)[j], bc_type="natural") for j in range(K)]
    A = np.stack([c(t) for c in cards], axis=1)
    coef = np.linalg.lstsq(A, target, rcond=None)[0]
    deriv = np.stack([c(t, 1) for c in cards], axis=1) @ coef
    return ss, deriv + ss


def test_ks_spline_map_equals_the_least_squares_written_here() -> None:
    rng = np.random.default_rng(8)
    s = rng.uniform(0, 1, 3000)
    y = (rng.random(3000) < s**1.5).astype(np.int64)
    ks = KSSplineCalibration(mode="one_vs_rest").fit(s, y)
    xs, vals = _gupta_by_hand(s, y, 6)
    np.testing.assert_array_equal(ks.thresholds_[0], xs)  # continuous scores: no ties
    np.testing.assert_allclose(ks.values_[0], vals, atol=1e-10)
    x = rng.uniform(0, 1, 50)
    np.testing.assert_allclose(
        ks.predict_proba(x), np.clip(np.interp(x, xs, vals), 0, 1), atol=1e-10
    )


def test_ks_spline_of_calibrated_scores_is_near_the_identity() -> None:
    rng = np.random.default_rng(9)
    s = rng.uniform(0, 1, 200000)
    y = (rng.random(200000) < s).astype(np.int64)
    grid = np.linspace(0.1, 0.9, 17)
    q = KSSplineCalibration(mode="one_vs_rest").fit(s, y).predict_proba(grid)
    assert np.max(np.abs(q - grid)) < 0.02


def test_ks_spline_top_label_ties_and_refusals() -> None:
    rng = np.random.default_rng(10)
    P = rng.dirichlet(np.ones(3) * 0.7, 800)
    lab = np.array([rng.choice(3, p=r) for r in P])
    ks = KSSplineCalibration().fit(P, lab)
    pred = P.argmax(axis=1)
    conf = P.max(axis=1)
    correct = (pred == lab).astype(int)
    xs, vals = _gupta_by_hand(conf, correct, 6)
    Q = ks.predict_proba(P)
    np.testing.assert_allclose(
        Q[np.arange(800), pred], np.clip(np.interp(conf, xs, vals), 0, 1), atol=1e-10
    )
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    # tied scores share the mean of their values
    s = np.repeat(np.linspace(0.1, 0.9, 50), 4)
    yy = (rng.random(200) < s).astype(int)
    tied = KSSplineCalibration(mode="one_vs_rest").fit(s, yy)
    _, v = _gupta_by_hand(s, yy, 6)
    np.testing.assert_allclose(tied.values_[0], v.reshape(50, 4).mean(axis=1), atol=1e-10)
    back = load_recalibrator(tied.to_json())
    np.testing.assert_array_equal(back.predict_proba(s), tied.predict_proba(s))
    with pytest.raises(CalibrationInputError, match="at least n_knots = 6"):
        KSSplineCalibration().fit(np.array([0.2, 0.4, 0.6]), np.array([0, 1, 1]))
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        KSSplineCalibration().fit(s, yy, sample_weight=np.ones(200))
