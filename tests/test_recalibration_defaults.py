"""Recalibration defaults that never make things worse than scikit-learn would.

* ``PlattScaling()`` uses Platt's (1999) smoothed targets, as scikit-learn's
  sigmoid calibration does (its fit is the oracle), and stays finite on a
  calibration split that the score separates.
* ``VectorScaling()`` / ``MatrixScaling()`` are penalised towards temperature
  scaling: the minimiser of the objective written out here (SciPy's generic
  optimiser, numerical gradients) is theirs, and on digits with an SVC's
  decision values (539 calibration rows, 10 classes) they converge quickly, give
  a finite held-out NLL and are not far from temperature scaling's.
* ``HistogramBinning()`` / ``IsotonicRegression()`` give the Laplace estimate
  ``(k + 1) / (n + 2)`` of each bin (counted here by hand; the PAV blocks of
  scikit-learn's isotonic regression), never 0 or 1, so the NLL of
  ``calipers demo``'s predictions stays finite.
* Older files, written without the new parameters, load with the old
  behaviour; warnings of a fit name the caller's line.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax

import calipers as cp
from calipers.recalibration.base import load_recalibrator

# ----------------------------------------------------------------------------- helpers


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _nll(a: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(log_softmax(a, axis=1)[np.arange(len(y)), y]))


def _draw(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(q.shape[0])
    return np.minimum((u[:, None] > np.cumsum(q, axis=1)).sum(axis=1), q.shape[1] - 1)


SEPARABLE_Z = np.array([-3.0, -2.0, -1.5, -1.0, 0.5, 1.0, 2.0, 3.5])
SEPARABLE_Y = np.array([0, 0, 0, 0, 1, 1, 1, 1])


@pytest.fixture(scope="module")
def digits_svc() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """digits split 40 % train / 30 % calibration (539 rows) / 30 % test; SVC decision values."""
    datasets = pytest.importorskip("sklearn.datasets")
    ms = pytest.importorskip("sklearn.model_selection")
    svm = pytest.importorskip("sklearn.svm")
    X, y = datasets.load_digits(return_X_y=True)
    Xtr, Xr, ytr, yr = ms.train_test_split(X, y, test_size=0.6, random_state=1, stratify=y)
    Xc, Xt, yc, yt = ms.train_test_split(Xr, yr, test_size=0.5, random_state=1, stratify=yr)
    m = svm.SVC(gamma=0.001).fit(Xtr, ytr)
    return m.decision_function(Xc), yc, m.decision_function(Xt), yt


# ----------------------------------------------------------------------------- Platt scaling


@pytest.mark.oracle
def test_platt_default_is_scikit_learns_sigmoid_on_a_separable_split() -> None:
    """Was: no finite optimum (a warning, a -> 30+); scikit-learn: finite (a, b)."""
    calibration = pytest.importorskip("sklearn.calibration")
    # scikit-learn's P(y = 1) = 1 / (1 + exp(a f + b)): the signs of calipers' a, b flipped
    a_sk, b_sk = calibration._sigmoid_calibration(SEPARABLE_Z, SEPARABLE_Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a finite optimum: no warning
        ps = cp.PlattScaling().fit(SEPARABLE_Z, SEPARABLE_Y)
    assert ps.smooth_targets is True
    assert abs(ps.a_ + a_sk) < 1e-6 and abs(ps.b_ + b_sk) < 1e-6
    zt = np.linspace(-6.0, 6.0, 25)
    want = 1.0 / (1.0 + np.exp(a_sk * zt + b_sk))
    np.testing.assert_allclose(ps.predict_proba(zt), want, rtol=0, atol=1e-6)
    # the unsmoothed maximum-likelihood fit is one argument away, and says why it is steep
    with pytest.warns(RuntimeWarning, match="separated"):
        ml = cp.PlattScaling(smooth_targets=False).fit(SEPARABLE_Z, SEPARABLE_Y)
    assert ml.a_ > 10 * ps.a_


def test_platt_default_targets_are_platts_by_hand() -> None:
    """(N+ + 1) / (N+ + 2) and 1 / (N- + 2), minimised again here by SciPy."""
    rng = np.random.default_rng(3)
    z = rng.normal(size=40)
    y = (rng.random(40) < 1 / (1 + np.exp(-2 * z))).astype(int)
    npos, nneg = int(y.sum()), int((1 - y).sum())
    t = np.where(y == 1, (npos + 1) / (npos + 2), 1 / (nneg + 2))

    def ce(x: np.ndarray) -> float:
        s = x[0] * z + x[1]
        return float(np.mean(np.logaddexp(0, s) - t * s))

    oracle = minimize(
        ce, [1.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14}
    )
    ps = cp.PlattScaling().fit(z, y)
    assert abs(ps.a_ - oracle.x[0]) < 1e-5 and abs(ps.b_ - oracle.x[1]) < 1e-5


# ----------------------------------------------------------------------------- vector / matrix


def _penalised(cls: str, k: int, z: np.ndarray, y: np.ndarray, lam: float, mu: float) -> Any:
    """The default objective written out: NLL + lam s^2 / n D(W) + mu / n ||b - mean b||^2."""
    n = len(y)
    s2 = float(np.mean(z.var(axis=0)))
    P = np.eye(k) - 1.0 / k

    def dist(W: np.ndarray) -> float:  # min over s of ||P (W - s I)||^2, s by least squares
        PW = P @ W
        s = np.sum(PW * P) / np.sum(P * P)
        return float(np.sum((PW - s * P) ** 2))

    def objective(x: np.ndarray) -> float:
        W = np.diag(x[:k]) if cls == "VS" else x[: k * k].reshape(k, k)
        b = x[-k:]
        pen = lam * s2 / n * dist(W) + mu / n * float(np.sum((b - b.mean()) ** 2))
        return _nll(z @ W.T + b, y) + pen

    return objective


@pytest.mark.parametrize("cls", ["VS", "MS"])
def test_the_default_penalty_is_the_objective_written_out(cls: str) -> None:
    k = 3
    rng = np.random.default_rng(7)
    z = 2.0 * rng.standard_normal((150, k))
    y = _draw(_softmax(z * [0.5, 1.0, 2.0] + [0.3, 0.0, -0.3]), rng)
    objective = _penalised(cls, k, z, y, 10.0, 10.0)
    if cls == "VS":
        rc: Any = cp.VectorScaling().fit(z, y)
        ours = np.r_[rc.weights_, rc.bias_]
        x0 = np.r_[np.ones(k), np.zeros(k)]
    else:
        rc = cp.MatrixScaling().fit(z, y)
        ours = np.r_[rc.weights_.ravel(), rc.bias_]
        x0 = np.r_[np.eye(k).ravel(), np.zeros(k)]
    oracle = minimize(objective, x0, method="BFGS", options={"gtol": 1e-9})
    assert rc.converged_
    assert objective(ours) <= oracle.fun + 1e-9
    assert objective(ours) >= oracle.fun - 1e-6  # the same minimum, not a lower one
    q_ours = rc.predict_proba(z)
    W = np.diag(oracle.x[:k]) if cls == "VS" else oracle.x[: k * k].reshape(k, k)
    np.testing.assert_allclose(q_ours, _softmax(z @ W.T + oracle.x[-k:]), atol=2e-4)
    # no penalty: the maximum-likelihood fit is one argument away
    none = _penalised(cls, k, z, y, 0.0, 0.0)
    ml: Any = (cp.VectorScaling if cls == "VS" else cp.MatrixScaling)(reg="none").fit(z, y)
    x_ml = np.r_[ml.weights_, ml.bias_] if cls == "VS" else np.r_[ml.weights_.ravel(), ml.bias_]
    assert none(x_ml) <= none(ours) + 1e-12


def test_a_strong_penalty_gives_temperature_scaling() -> None:
    rng = np.random.default_rng(8)
    z = 2.0 * rng.standard_normal((400, 4))
    y = _draw(_softmax(z * [0.5, 1.0, 2.0, 1.0]), rng)
    ts = cp.TemperatureScaling().fit(z, y)
    for rc in (cp.VectorScaling(lambda_=1e6, mu=1e6), cp.MatrixScaling(lambda_=1e6, mu=1e6)):
        rc.fit(z, y)
        np.testing.assert_allclose(rc.predict_proba(z), ts.predict_proba(z), atol=1e-4)


@pytest.mark.parametrize("cls", [cp.VectorScaling, cp.MatrixScaling])
def test_digits_svc_default_is_finite_fast_and_near_temperature_scaling(
    cls: type, digits_svc: Any
) -> None:
    """Was (unregularised): 1000 iterations (VS), weights in the hundreds to thousands and a
    held-out NLL of inf on this split; temperature scaling gives 0.0925."""
    zc, yc, zt, yt = digits_svc
    assert zc.shape == (539, 10)
    ts_nll = cp.nll(
        cp.TemperatureScaling().fit(zc, yc, logits=True).predict_proba(zt, logits=True), yt
    )
    assert cp.nll(zt, yt, logits=True) < 1.0  # the input's NLL is finite
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converges: no warning
        rc = cls().fit(zc, yc, logits=True)
    nll = cp.nll(rc.predict_proba(zt, logits=True), yt)
    assert rc.converged_ and rc.n_iter_ < 200, rc.n_iter_
    assert np.isfinite(nll) and nll < ts_nll + 0.03, (nll, ts_nll)
    assert np.max(np.abs(rc.weights_)) < 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ml = cls(reg="none").fit(
            zc, yc, logits=True
        )  # the unregularised form: no finite optimum here
    assert np.max(np.abs(ml.weights_)) > 50


# ----------------------------------------------------------------------------- HB and IR


def test_histogram_binning_default_is_the_laplace_estimate_by_hand() -> None:
    rng = np.random.default_rng(11)
    p = rng.random(300)
    y = (rng.random(300) < p**2).astype(int)
    hb = cp.HistogramBinning(n_bins=10).fit(p, y)
    ids = np.minimum(np.ceil(p * 10).astype(int) - 1, 9).clip(0)  # bins (lo, hi], first [0, .1]
    n = np.bincount(ids, minlength=10)
    k = np.bincount(ids, weights=y, minlength=10)
    want = np.where(n > 0, (k + 1) / (n + 2), (np.arange(10) + 0.5) / 10)
    np.testing.assert_allclose(hb.bin_values_, want, rtol=1e-15)
    exact = cp.HistogramBinning(n_bins=10, smoothing="none").fit(p, y)
    np.testing.assert_allclose(exact.bin_values_, np.where(n > 0, k / np.maximum(n, 1), want))
    assert exact.bin_values_.min() == 0.0 and hb.bin_values_.min() > 0.0


@pytest.mark.oracle
def test_isotonic_default_smooths_scikit_learns_pav_blocks() -> None:
    sk = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(12)
    p = rng.random(400)
    y = (rng.random(400) < p).astype(int)
    g = sk.IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(np.sort(p))
    run = np.concatenate([[0], np.cumsum(np.diff(g) != 0)])  # PAV blocks of sorted p
    n, k = np.bincount(run), np.bincount(run, weights=y[np.argsort(p)])
    lap = ((k + 1) / (n + 2))[run]
    if np.all(np.diff(lap) >= 0):  # no re-pooling needed: the values are exactly these
        ir = cp.IsotonicRegression(interpolation="step").fit(p, y)
        np.testing.assert_allclose(ir.predict_proba(np.sort(p)), lap, rtol=1e-12)
    ir = cp.IsotonicRegression().fit(p, y)
    v = ir.values_[0]
    assert np.all(np.diff(v) >= 0) and v.min() > 0 and v.max() < 1
    exact = cp.IsotonicRegression(smoothing="none").fit(p, y)  # scikit-learn's exact form
    np.testing.assert_allclose(exact.predict_proba(np.sort(p)), g, atol=1e-12)


def test_isotonic_laplace_repools_blocks_it_reorders() -> None:
    """Blocks 0/1 (-> 1/3) then 1/10 (-> 2/12): smoothing reverses them; pooled with
    weights n + 2: (1/3 * 3 + 2/12 * 12) / 15 = 1/5."""
    p = np.arange(11) / 10.0
    y = np.array([0] + [0] * 9 + [1])
    ir = cp.IsotonicRegression(interpolation="step").fit(p, y)
    exact = cp.IsotonicRegression(interpolation="step", smoothing="none").fit(p, y)
    np.testing.assert_allclose(exact.predict_proba(p), [0.0] * 10 + [1.0])
    # exact PAV: one block of 10 zeros (0/10), then the one (1/1): Laplace 1/12 and 2/3
    np.testing.assert_allclose(ir.predict_proba(p), [1 / 12] * 10 + [2 / 3], rtol=1e-12)
    y2 = np.array([0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1])  # PAV: 0/1, 1/9 ... reordered by Laplace
    q = cp.IsotonicRegression(interpolation="step").fit(p, y2).predict_proba(p)
    assert np.all(np.diff(q) >= 0) and q.min() > 0


def test_demo_predictions_keep_a_finite_nll() -> None:
    """``calipers demo``'s logistic regression: NLL 0.1106 -> inf with the exact forms."""
    from calipers.datasets import load_default_predictions
    from calipers.recalibration import calibration_split_indices

    dp = load_default_predictions()
    y = np.asarray(dp.labels)
    ci, ti = calibration_split_indices(y, seed=0)
    p = dp.probs["logistic_regression"]
    assert abs(cp.nll(p[ti], y[ti]) - 0.1106) < 5e-5
    for cls in (cp.HistogramBinning, cp.IsotonicRegression):
        exact = cls(smoothing="none").fit(p[ci], y[ci]).predict_proba(p[ti])
        smooth = cls().fit(p[ci], y[ci]).predict_proba(p[ti])
        with np.errstate(divide="ignore"):
            assert cp.nll(exact, y[ti]) == np.inf
        assert np.isfinite(cp.nll(smooth, y[ti])) and cp.nll(smooth, y[ti]) < 0.5
        assert smooth.min() > 0


# ----------------------------------------------------------------------------- old files


@pytest.mark.parametrize(
    ("name", "new"),
    [
        ("VectorScaling", ("reg", "lambda_", "mu")),
        ("HistogramBinning", ("smoothing",)),
        ("IsotonicRegression", ("smoothing",)),
    ],
)
def test_a_file_without_a_new_parameter_keeps_its_old_behaviour(
    name: str, new: tuple[str, ...]
) -> None:
    """A document written before a parameter existed loads with the value that means the
    behaviour of its writer, and refits as it would have (not with today's default)."""
    rng = np.random.default_rng(4)
    z = 2.0 * rng.standard_normal((120, 3))
    y = _draw(_softmax(z / 2), rng)
    cls = getattr(cp, name)
    old_kw = {"reg": "none"} if name == "VectorScaling" else {"smoothing": "none"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        old = cls(**old_kw).fit(z, y, logits=True)
    doc = json.loads(old.to_json())
    for key in new:
        del doc["params"][key]
    back = load_recalibrator(json.dumps(doc))
    for key, value in old_kw.items():
        assert getattr(back, key) == value
    np.testing.assert_array_equal(
        back.predict_proba(z, logits=True), old.predict_proba(z, logits=True)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        refit = back.fit(z, y, logits=True)
    np.testing.assert_array_equal(
        refit.predict_proba(z, logits=True), old.predict_proba(z, logits=True)
    )


def test_matrix_scaling_files_store_reg_so_old_ones_stay_unregularised() -> None:
    rng = np.random.default_rng(5)
    z = 2.0 * rng.standard_normal((120, 3))
    y = _draw(_softmax(z / 2), rng)
    doc = json.loads(cp.MatrixScaling(reg="none").fit(z, y).to_json())
    assert doc["params"]["reg"] == "none" and load_recalibrator(json.dumps(doc)).reg == "none"
    assert json.loads(cp.MatrixScaling().to_json())["params"]["lambda_"] is None


# ----------------------------------------------------------------------------- warnings


def _cases() -> list[tuple[str, Any]]:
    rng = np.random.default_rng(9)
    z = rng.standard_normal((300, 3))
    return [
        ("separated", lambda: cp.PlattScaling(smooth_targets=False).fit(SEPARABLE_Z, SEPARABLE_Y)),
        (
            "did not converge",
            lambda: cp.VectorScaling(max_iter=1).fit(3 * z, _draw(_softmax(z), rng)),
        ),
        (
            "did not converge",
            lambda: cp.MatrixScaling(max_iter=1).fit(3 * z, _draw(_softmax(z), rng)),
        ),
        ("lower bound", lambda: cp.TemperatureScaling().fit(z, z.argmax(1))),
        (
            "at a bound",
            lambda: cp.BiasCorrectedTemperatureScaling(t_max=1.01).fit(3 * z, z.argmax(1)),
        ),
        ("not above 1/K", lambda: cp.MeanReplacement().fit(_softmax(z), (z.argmax(1) + 1) % 3)),
    ]


@pytest.mark.parametrize("case", range(6))
def test_fit_warnings_name_the_callers_line(case: int) -> None:
    """They named calipers/recalibration/base.py (the line of fit that called _fit)."""
    match, call = _cases()[case]
    with pytest.warns(RuntimeWarning, match=match) as record:
        call()
    mine = [r for r in record if match in str(r.message)]
    assert mine and all(r.filename == __file__ for r in mine), [r.filename for r in mine]


def test_the_long_lbfgs_memory_is_bounded() -> None:
    """100 correction pairs at digits' 110 parameters; a matrix scaling of 1000 classes
    (10^6 parameters) keeps SciPy's 10 (two 10 x 10^6 float64 arrays, 160 MB; 100 pairs
    would take 1.6 GB)."""
    from calipers.recalibration.matrix_scaling import _memory

    assert _memory(110) == 100 and _memory(30_000) == 100
    assert _memory(10**6) == 10 and 2 * _memory(10**5) * 10**5 * 8 <= 48e6 + 1


@pytest.mark.parametrize("cls", [cp.VectorScaling, cp.MatrixScaling])
def test_a_split_the_arg_max_separates_stays_as_sharp_as_temperature_scaling(cls: type) -> None:
    """No finite optimum without a bound: the fit sharpened to weights ~1e4 and held-out
    rows of probability 0 (NLL inf, where the input's is 0.85); temperature scaling stops
    at its bound t_min = 0.01 (inverse temperature 100), and so do these now."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 5))
    y = z.argmax(1)  # the calibration split is separated by the arg-max
    zt = rng.normal(size=(2000, 5))
    yt = (zt + 0.3 * rng.normal(size=zt.shape)).argmax(1)
    assert cp.nll(zt, yt, logits=True) < 1.0
    with pytest.warns(RuntimeWarning, match="lower bound"):
        ts = cp.TemperatureScaling().fit(z, y, logits=True)
    ts_nll = cp.nll(ts.predict_proba(zt, logits=True), yt)
    rc = cls().fit(z, y, logits=True)
    nll = cp.nll(rc.predict_proba(zt, logits=True), yt)
    assert np.isfinite(nll) and abs(nll - ts_nll) < 0.01, (nll, ts_nll)
    W = np.diag(rc.weights_) if rc.weights_.ndim == 1 else rc.weights_
    assert (np.trace(W) - W.sum() / 5) / 4 < 100.01  # the inverse temperature's bound
