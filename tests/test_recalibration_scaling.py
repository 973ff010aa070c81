"""Parametric (scaling) recalibrators: TS, VS, MS (+ODIR), BCTS, ETS, Platt, beta, DIAG-like.

Every expected value here is computed independently of calipers: data drawn
from the very model being fitted (so the truth is known), objectives written
out again in this file and minimised with SciPy's generic optimisers (numerical
gradients), scikit-learn's LogisticRegression as the oracle of Platt scaling
and beta calibration, explicit collisions for the maps declared non-injective,
and the numbers published for DenseNet-40 (Kull et al. 2019).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_softmax, logsumexp

import calipers as cp
import calipers.recalibration.temperature_scaling as ts_mod
from calipers.recalibration._optimize import _linear_map_injective
from calipers.recalibration.base import Recalibrator, load_recalibrator
from calipers.recalibration.beta_calibration import BetaCalibration
from calipers.recalibration.bias_corrected_temperature_scaling import (
    BiasCorrectedTemperatureScaling,
)
from calipers.recalibration.ensemble_temperature_scaling import EnsembleTemperatureScaling
from calipers.recalibration.matrix_scaling import MatrixScaling
from calipers.recalibration.monotone_logit_map import MonotoneLogitMap
from calipers.recalibration.platt_scaling import PlattScaling
from calipers.recalibration.temperature_scaling import TemperatureScaling
from calipers.recalibration.vector_scaling import VectorScaling
from calipers.validation import CalibrationInputError
from shared_data import load

# ----------------------------------------------------------------------------- helpers


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _draw(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row of the probability matrix q (inverse CDF)."""
    u = rng.random(q.shape[0])
    return np.minimum((u[:, None] > np.cumsum(q, axis=1)).sum(axis=1), q.shape[1] - 1)


def _nll(a: np.ndarray, y: np.ndarray) -> float:
    """Mean NLL of softmax(a), written with SciPy's log_softmax."""
    return float(-np.mean(log_softmax(a, axis=1)[np.arange(len(y)), y]))


def _logits(n: int, k: int, seed: int, scale: float = 2.0) -> tuple[np.ndarray, Any]:
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((n, k)), rng


def _centered(b: np.ndarray) -> np.ndarray:
    return b - b.mean()


def _collision_pair(v: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two distinct probability vectors p, p' with log p - log p' = v (v changes sign)."""
    a = np.exp(-v) - 1.0  # need sum_k p_k a_k = 0
    i, j = int(np.argmax(a)), int(np.argmin(a))
    assert a[i] > 0 > a[j]
    k, eps = len(v), 1e-3
    lam = (-eps / k * a.sum() / (1 - eps) - a[j]) / (a[i] - a[j])
    p = np.full(k, eps / k)
    p[i] += (1 - eps) * lam
    p[j] += (1 - eps) * (1 - lam)
    p2 = p * np.exp(-v)
    assert abs(p.sum() - 1) < 1e-12 and abs(p2.sum() - 1) < 1e-12
    return p, p2 / p2.sum()


def _densenet() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    val, test = load("densenet40_c10_val.npz"), load("densenet40_c10_test.npz")
    return val["logits"], val["labels"], test["logits"], test["labels"]


MULTICLASS = [
    TemperatureScaling,
    VectorScaling,
    MatrixScaling,
    BiasCorrectedTemperatureScaling,
    EnsembleTemperatureScaling,
    MonotoneLogitMap,
]
BINARY = [PlattScaling, BetaCalibration]


def _binary_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.standard_normal(n) + 0.3
    y = (rng.random(n) < expit(0.6 * z - 0.4)).astype(np.int64)
    return z, y


def _fit_any(cls: type[Recalibrator], seed: int = 0) -> tuple[Recalibrator, np.ndarray]:
    if cls in BINARY:
        z, y = _binary_data(600, seed)
        zt = _binary_data(100, seed + 1)[0]
    else:
        z, rng = _logits(600, 4, seed)
        y = _draw(_softmax(z / 2), rng)
        zt = _logits(100, 4, seed + 1)[0]
    return cls().fit(z, y, logits=True), zt


# ----------------------------------------------------------------------------- common behaviour


@pytest.mark.parametrize("cls", MULTICLASS + BINARY)
def test_outputs_simplex_json_and_determinism(cls: type[Recalibrator]) -> None:
    rc, zt = _fit_any(cls)
    Q = rc.predict_proba(zt)
    assert Q.dtype == np.float64 and np.all(np.isfinite(Q))
    assert np.all((Q >= 0) & (Q <= 1))
    if Q.ndim == 2:
        np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    back = load_recalibrator(rc.to_json())
    assert type(back) is cls
    np.testing.assert_array_equal(back.predict_proba(zt), Q)  # identical, not close
    assert back.accuracy_preserving == rc.accuracy_preserving
    assert back.injective == rc.injective
    again, _ = _fit_any(cls)
    np.testing.assert_array_equal(again.predict_proba(zt), Q)  # deterministic fit
    state = json.loads(rc.to_json())["state"]
    if "converged_" in state:
        assert state["converged_"] is True


@pytest.mark.parametrize("cls", MULTICLASS + BINARY)
def test_unfitted_declares_only_what_every_fit_guarantees(cls: type[Recalibrator]) -> None:
    rc = cls()
    always = cls in (TemperatureScaling, MonotoneLogitMap)
    assert rc.accuracy_preserving is always
    assert rc.injective is (always or cls is BiasCorrectedTemperatureScaling)


@pytest.mark.parametrize("cls", [VectorScaling, MatrixScaling, BiasCorrectedTemperatureScaling])
def test_non_convergence_warns(cls: type[Recalibrator]) -> None:
    z, rng = _logits(500, 3, 7)
    y = _draw(_softmax(z * [0.4, 1.0, 2.0] + [0.5, 0, -0.5]), rng)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        rc = cls(max_iter=1).fit(z, y)
    assert rc.converged_ is False


@pytest.mark.parametrize(
    ("rc", "match"),
    [
        (VectorScaling(tol=0), "tol"),
        (MatrixScaling(reg="l2"), "reg"),
        (MatrixScaling(reg="odir", lambda_=-1.0), "lambda_"),
        (BiasCorrectedTemperatureScaling(t_min=2.0, t_max=1.0), "t_min"),
        (MonotoneLogitMap(n_knots=1), "n_knots"),
        (MonotoneLogitMap(smoothness=-1.0), "smoothness"),
        (MonotoneLogitMap(min_slope=0.0), "min_slope"),
        (PlattScaling(tol=-1.0), "tol"),
    ],
)
def test_bad_hyper_parameters(rc: Recalibrator, match: str) -> None:
    z, rng = _logits(50, 3, 0)
    y = _draw(_softmax(z), rng)
    if isinstance(rc, PlattScaling):
        z, y = _binary_data(50, 0)
    with pytest.raises(CalibrationInputError, match=match):
        rc.fit(z, y)


def test_wrong_shapes_and_kinds() -> None:
    z, rng = _logits(200, 3, 0)
    y = _draw(_softmax(z), rng)
    vs = VectorScaling().fit(z, y)
    with pytest.raises(CalibrationInputError, match="classes"):
        vs.predict_proba(np.zeros((4, 5)))
    with pytest.raises(CalibrationInputError, match="labels"):
        VectorScaling().fit(z, np.full(200, 3))
    with pytest.raises(CalibrationInputError):
        VectorScaling().fit(z[:, :, None], y)
    for cls in BINARY:  # binary methods refuse k > 2 and say why
        with pytest.raises(CalibrationInputError, match="binary"):
            cls().fit(z, y, logits=True)
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        BetaCalibration().fit(np.array([0.2, 1.0, 0.5]), [0, 1, 1])
    bc = BetaCalibration().fit(np.array([0.2, 0.7, 0.5, 0.6]), [0, 1, 1, 0])
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        bc.predict_proba(np.array([0.0]))


# ----------------------------------------------------------------------------- vector scaling

W_TRUE = np.array([0.5, 1.0, 2.0])
B_TRUE = np.array([0.3, 0.0, -0.3])


@pytest.fixture(scope="module")
def vs_data() -> tuple[np.ndarray, np.ndarray]:
    z, rng = _logits(6000, 3, 11)
    return z, _draw(_softmax(z * W_TRUE + B_TRUE), rng)


def test_vector_scaling_recovers_its_parameters(vs_data: Any) -> None:
    z, y = vs_data
    vs = VectorScaling(reg="none").fit(z, y)
    np.testing.assert_allclose(vs.weights_, W_TRUE, atol=0.12)
    np.testing.assert_allclose(_centered(vs.bias_), B_TRUE, atol=0.12)
    assert abs(vs.bias_.sum()) < 1e-8  # the bias keeps the sum 0 of its start
    assert vs.converged_ and vs.accuracy_preserving is False and vs.injective is True


def test_vector_scaling_is_the_maximum_likelihood_fit(vs_data: Any) -> None:
    z, y = vs_data
    z, y = z[:2000], y[:2000]
    vs = VectorScaling(reg="none").fit(z, y)
    oracle = minimize(lambda x: _nll(z * x[:3] + x[3:], y), np.r_[np.ones(3), np.zeros(3)])
    ours = _nll(z * vs.weights_ + vs.bias_, y)
    assert ours <= oracle.fun + 1e-9
    np.testing.assert_allclose(vs.weights_, oracle.x[:3], atol=2e-3)
    np.testing.assert_allclose(_centered(vs.bias_), _centered(oracle.x[3:]), atol=2e-3)


def test_vector_scaling_without_bias_and_idempotence() -> None:
    z, rng = _logits(5000, 3, 12)
    y = _draw(_softmax(z), rng)  # already calibrated
    vs = VectorScaling().fit(z, y)
    np.testing.assert_allclose(vs.weights_, 1.0, atol=0.1)
    np.testing.assert_allclose(vs.bias_, 0.0, atol=0.1)
    nb = VectorScaling(bias=False).fit(z, y)
    np.testing.assert_array_equal(nb.bias_, np.zeros(3))
    np.testing.assert_allclose(nb.weights_, 1.0, atol=0.1)


def test_vector_scaling_weight_at_zero_warns() -> None:
    z, rng = _logits(3000, 3, 13)
    y = _draw(_softmax(z * [1.0, 1.0, -1.5]), rng)  # class 2's logit is anti-informative
    with pytest.warns(RuntimeWarning, match="at the bound 0"):
        vs = VectorScaling().fit(z, y)
    assert vs.weights_[2] == 0.0
    assert vs.injective is True  # one zero weight: still one-to-one on the simplex


def test_vector_scaling_declared_properties_from_state() -> None:
    z, rng = _logits(300, 3, 14)
    vs = VectorScaling().fit(z, _draw(_softmax(z), rng))
    vs.weights_ = np.array([0.7, 0.7, 0.7])
    vs.bias_ = np.array([0.2, 0.2, 0.2])
    assert vs.accuracy_preserving is True  # this is temperature scaling
    zt = np.round(_logits(200, 3, 15)[0])  # integer logits: many exact ties
    np.testing.assert_array_equal(vs.predict_proba(zt).argmax(1), zt.argmax(1))
    vs.weights_ = np.array([0.5, 1.0, 2.0])
    assert vs.accuracy_preserving is False
    zq = np.array([[1.0, 0.9, -3.0]])  # w = (0.5, 1, 2) reorders classes 0 and 1
    assert vs.predict_proba(zq).argmax(1)[0] != zq.argmax(1)[0]
    # two zero weights: p and p' that differ only in classes 0 and 1 collide
    vs.weights_, vs.bias_ = np.array([0.0, 0.0, 1.5]), np.zeros(3)
    assert vs.injective is False
    p1, p2 = np.array([[0.1, 0.3, 0.6]]), np.array([[0.3, 0.1, 0.6]])
    np.testing.assert_allclose(
        vs.predict_proba(p1, logits=False), vs.predict_proba(p2, logits=False), rtol=0, atol=1e-15
    )
    vs.weights_ = np.array([0.0, 1.0, 1.5])
    assert vs.injective is True
    vs.weights_ = np.array([-1.0, 1.0, 1.5])  # mixed signs (outside the fitted bounds)
    assert vs.injective is False
    pa, pb = _collision_pair(1.0 / vs.weights_)
    np.testing.assert_allclose(
        vs.predict_proba(pa[None], logits=False),
        vs.predict_proba(pb[None], logits=False),
        rtol=0,
        atol=1e-12,
    )
    # binary (n,) logits: z -> sigmoid(w_1 z + b_1 - b_0)
    zb, yb = _binary_data(400, 3)
    vb = VectorScaling(reg="none").fit(zb, yb)
    assert vb.binary_ is True and vb.injective is True and vb.accuracy_preserving is False
    lr = PlattScaling(smooth_targets=False).fit(zb, yb)  # the same model (maximum likelihood)
    np.testing.assert_allclose(vb.predict_proba(zb), lr.predict_proba(zb), atol=1e-6)


# ----------------------------------------------------------------------------- matrix scaling

M_TRUE = np.array([[1.2, 0.5, 0.0], [0.0, 0.8, 0.3], [-0.2, -0.3, 0.7]])
MB_TRUE = np.array([0.2, 0.0, -0.2])
P3 = np.eye(3) - 1.0 / 3


def test_matrix_scaling_recovers_its_parameters() -> None:
    z, rng = _logits(8000, 3, 21)
    y = _draw(_softmax(z @ M_TRUE.T + MB_TRUE), rng)
    ms = MatrixScaling().fit(z, y)
    # softmax ignores W + 1 u^T and b + c 1: compare the identified parts P W, P b
    np.testing.assert_allclose(P3 @ ms.weights_, P3 @ M_TRUE, atol=0.12)
    np.testing.assert_allclose(P3 @ ms.bias_, P3 @ MB_TRUE, atol=0.12)
    np.testing.assert_allclose(ms.weights_.sum(axis=0), 1.0, atol=1e-8)  # start's column sums
    assert ms.converged_ and ms.accuracy_preserving is False


def test_matrix_scaling_mle_and_odir_objective() -> None:
    z, rng = _logits(800, 3, 22)
    y = _draw(_softmax(z @ M_TRUE.T + MB_TRUE), rng)
    k = 3
    off = 1 - np.eye(k)
    for reg, lam, mu in [("none", 0.0, 0.0), ("odir", 0.5, 0.3)]:

        def objective(x: np.ndarray, lam: float = lam, mu: float = mu) -> float:
            W, b = x[:9].reshape(3, 3), x[9:]
            pen = lam * np.sum((W * off) ** 2) / (k * (k - 1)) + mu * np.sum(b**2) / k
            return _nll(z @ W.T + b, y) + pen

        ms = MatrixScaling(reg=reg, lambda_=lam, mu=mu).fit(z, y)
        oracle = minimize(objective, np.r_[np.eye(3).ravel(), np.zeros(3)])
        ours = objective(np.r_[ms.weights_.ravel(), ms.bias_])
        assert ours <= oracle.fun + 1e-9
        if reg == "odir":  # unique minimiser
            np.testing.assert_allclose(ms.weights_.ravel(), oracle.x[:9], atol=2e-3)
    strong = MatrixScaling(reg="odir", lambda_=1e4, mu=0.0).fit(z, y)
    assert np.max(np.abs(strong.weights_ * off)) < 0.05  # ODIR -> vector scaling


def test_matrix_scaling_idempotent_on_calibrated_data() -> None:
    z, rng = _logits(5000, 3, 23)
    ms = MatrixScaling().fit(z, _draw(_softmax(z), rng))
    np.testing.assert_allclose(P3 @ ms.weights_, P3, atol=0.1)
    np.testing.assert_allclose(ms.bias_, 0.0, atol=0.1)


def test_matrix_scaling_injectivity_from_state() -> None:
    assert _linear_map_injective(np.eye(3))
    assert _linear_map_injective(P3)  # singular, yet softmax(P log p) = p
    assert _linear_map_injective(M_TRUE) == bool(
        np.all(np.linalg.solve(M_TRUE, np.ones(3)) >= 0)
        or np.all(np.linalg.solve(M_TRUE, np.ones(3)) <= 0)
    )
    z, rng = _logits(300, 3, 24)
    ms = MatrixScaling().fit(z, _draw(_softmax(z), rng))
    assert ms.injective is True
    # an invertible W with W^{-1} 1 changing sign: an explicit collision
    W = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])
    v = np.linalg.solve(W, np.ones(3))
    ms.weights_, ms.bias_ = W, np.zeros(3)
    assert ms.injective is False
    pa, pb = _collision_pair(v)
    qa = ms.predict_proba(pa[None], logits=False)
    qb = ms.predict_proba(pb[None], logits=False)
    assert np.max(np.abs(pa - pb)) > 1e-3
    np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-12)
    # rank k - 2 after projection: a two-dimensional set of collisions
    ms.weights_ = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert ms.injective is False


# ----------------------------------------------------------------------------- bias-corrected TS


def test_bcts_recovers_mle_idempotence_and_bounds() -> None:
    z, rng = _logits(6000, 3, 31, scale=3.0)
    b_true = np.array([0.4, 0.0, -0.4])
    y = _draw(_softmax(z / 2 + b_true), rng)
    bc = BiasCorrectedTemperatureScaling().fit(z, y)
    assert abs(bc.temperature_ - 2.0) < 0.1
    np.testing.assert_allclose(_centered(bc.bias_), b_true, atol=0.1)
    assert abs(bc.bias_.sum()) < 1e-8
    zs, ys = z[:2000], y[:2000]
    bs = BiasCorrectedTemperatureScaling().fit(zs, ys)
    oracle = minimize(lambda x: _nll(zs / np.exp(x[0]) + x[1:], ys), np.zeros(4))
    assert _nll(zs / bs.temperature_ + bs.bias_, ys) <= oracle.fun + 1e-9
    assert abs(bs.temperature_ - np.exp(oracle.x[0])) < 2e-3
    # already calibrated: T ~ 1, b ~ 0
    z2, rng2 = _logits(5000, 3, 32, scale=3.0)
    b1 = BiasCorrectedTemperatureScaling().fit(z2, _draw(_softmax(z2), rng2))
    assert abs(b1.temperature_ - 1.0) < 0.06
    np.testing.assert_allclose(b1.bias_, 0.0, atol=0.1)
    with pytest.warns(RuntimeWarning, match="at a bound"):
        bt = BiasCorrectedTemperatureScaling(t_max=1.5).fit(z, y)
    assert bt.temperature_ == pytest.approx(1.5, rel=1e-12)


def test_bcts_properties() -> None:
    z, rng = _logits(300, 3, 33)
    bc = BiasCorrectedTemperatureScaling().fit(z, _draw(_softmax(z / 2), rng))
    assert bc.injective is True and bc.accuracy_preserving is False
    bc.bias_ = np.zeros(3)
    assert bc.accuracy_preserving is True
    # injective: the inverse map softmax(T (log q - b)) recovers p
    p = _softmax(_logits(50, 3, 34)[0])
    bc.bias_ = np.array([0.5, -0.2, -0.3])
    q = bc.predict_proba(p, logits=False)
    np.testing.assert_allclose(_softmax(bc.temperature_ * (np.log(q) - bc.bias_)), p, atol=1e-12)


# ----------------------------------------------------------------------------- ensemble TS


def _zhang_ets(z: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """docs/how-calipers-computes.md §10: t by MSE (L-BFGS-B, numerical gradient), then w by SLSQP."""
    n, k = z.shape
    Y = np.eye(k)[y]

    def mse_t(x: np.ndarray) -> float:
        return float(np.mean((_softmax(z / x[0]) - Y) ** 2))

    t = minimize(mse_t, [1.0], method="L-BFGS-B", bounds=[(0.05, 5.0)], tol=1e-12).x[0]
    p0, p1, p2 = _softmax(z / t), _softmax(z), np.full((n, k), 1.0 / k)

    def mse_w(w: np.ndarray) -> float:
        return float(np.mean((w[0] * p0 + w[1] * p1 + w[2] * p2 - Y) ** 2))

    w = minimize(
        mse_w,
        [1.0, 0.0, 0.0],
        method="SLSQP",
        bounds=[(0, 1)] * 3,
        constraints={"type": "eq", "fun": lambda w: np.sum(w) - 1},
        tol=1e-12,
    ).x
    return float(t), w


def test_ets_matches_the_reference_procedure() -> None:
    z, rng = _logits(3000, 4, 41, scale=3.0)
    y = _draw(0.7 * _softmax(z / 2) + 0.3 / 4, rng)  # a genuine mixture
    ets = EnsembleTemperatureScaling().fit(z, y)
    t, w = _zhang_ets(z, y)
    assert abs(ets.temperature_ - t) < 1e-4
    np.testing.assert_allclose(ets.weights_, w, atol=1e-4)
    assert ets.weights_[2] > 0.1 and abs(ets.weights_.sum() - 1) < 1e-15
    # labels from softmax(z / 2): t ~ 2 and nearly all weight on the TS component
    y2 = _draw(_softmax(z / 2), rng)
    e2 = EnsembleTemperatureScaling().fit(z, y2)
    assert abs(e2.temperature_ - 2.0) < 0.2 and e2.weights_[0] > 0.8


def test_ets_properties_and_ties() -> None:
    z, rng = _logits(500, 4, 42, scale=3.0)
    ets = EnsembleTemperatureScaling().fit(z, _draw(_softmax(z / 2), rng))
    assert ets.accuracy_preserving is True and ets.injective is True
    zt = np.round(_logits(300, 4, 43)[0])  # exact ties
    zt[:5] = 1.0  # all tied
    np.testing.assert_array_equal(ets.predict_proba(zt).argmax(1), zt.argmax(1))
    ets.weights_ = np.array([0.0, 0.0, 1.0])  # the constant map
    assert ets.accuracy_preserving is False and ets.injective is False
    np.testing.assert_array_equal(ets.predict_proba(zt), np.full((300, 4), 0.25))


def test_ets_temperature_bound_warns() -> None:
    z, rng = _logits(1000, 3, 44, scale=4.0)
    y = rng.integers(0, 3, size=1000)  # labels independent of the logits
    with pytest.warns(RuntimeWarning, match="at a bound"):
        ets = EnsembleTemperatureScaling().fit(z, y)
    assert ets.temperature_ == pytest.approx(5.0)


# ----------------------------------------------------------------------------- Platt


@pytest.mark.oracle
def test_platt_matches_sklearn_logistic_regression() -> None:
    lm = pytest.importorskip("sklearn.linear_model")
    z, y = _binary_data(3000, 51)
    ps = PlattScaling(smooth_targets=False).fit(z, y)
    lr = lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(z[:, None], y)
    assert abs(ps.a_ - lr.coef_[0, 0]) < 1e-5
    assert abs(ps.b_ - lr.intercept_[0]) < 1e-5
    np.testing.assert_allclose(ps.predict_proba(z), lr.predict_proba(z[:, None])[:, 1], atol=1e-6)


def test_platt_two_columns_probabilities_and_smoothing() -> None:
    z, y = _binary_data(2000, 52)
    ps = PlattScaling().fit(z, y)
    rng = np.random.default_rng(0)
    z0 = rng.standard_normal(2000)
    Z2 = np.stack([z0, z0 + z], axis=1)  # z_1 - z_0 = z
    p2 = PlattScaling().fit(Z2, y)
    assert abs(p2.a_ - ps.a_) < 1e-7 and abs(p2.b_ - ps.b_) < 1e-7
    Q2 = p2.predict_proba(Z2)
    assert Q2.shape == (2000, 2)
    np.testing.assert_allclose(Q2[:, 1], ps.predict_proba(z), atol=1e-12)
    np.testing.assert_allclose(Q2.sum(1), 1.0, atol=1e-15)
    pp = PlattScaling().fit(expit(z), y, logits=False)  # probabilities -> log(p / (1 - p))
    assert abs(pp.a_ - ps.a_) < 1e-6 and abs(pp.b_ - ps.b_) < 1e-6
    # Platt's (1999) smoothed targets, minimised again here
    npos, nneg = y.sum(), (1 - y).sum()
    t = np.where(y == 1, (npos + 1) / (npos + 2), 1 / (nneg + 2))

    def ce(x: np.ndarray) -> float:
        s = x[0] * z + x[1]
        return float(np.mean(np.logaddexp(0, s) - t * s))

    sm = PlattScaling(smooth_targets=True).fit(z, y)
    oracle = minimize(ce, [1.0, 0.0])
    assert ce(np.array([sm.a_, sm.b_])) <= oracle.fun + 1e-10
    assert abs(sm.a_ - oracle.x[0]) < 1e-4


def test_platt_separable_and_properties() -> None:
    z = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.5])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(RuntimeWarning, match="separated"):
        PlattScaling(smooth_targets=False).fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm = PlattScaling(smooth_targets=True).fit(z, y)  # finite optimum, no warning
    assert sm.injective is True and sm.accuracy_preserving is False
    sm.b_ = 0.0
    assert sm.accuracy_preserving is True
    zt = np.array([-1.0, 0.0, 0.5])
    np.testing.assert_array_equal(sm.predict(zt), (zt > 0).astype(int))
    sm.a_ = 0.0
    assert sm.injective is False and sm.accuracy_preserving is False


# ----------------------------------------------------------------------------- beta calibration


@pytest.mark.oracle
def test_beta_calibration_matches_sklearn() -> None:
    lm = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(61)
    p = rng.beta(2, 2, size=4000)
    y = (rng.random(4000) < expit(1.5 * np.log(p) - 0.7 * np.log1p(-p) + 0.2)).astype(int)
    bc = BetaCalibration().fit(p, y)
    X = np.stack([np.log(p), -np.log1p(-p)], axis=1)
    lr = lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    assert lr.coef_.min() > 0
    np.testing.assert_allclose([bc.a_, bc.b_], lr.coef_[0], atol=1e-5)
    assert abs(bc.c_ - lr.intercept_[0]) < 1e-5
    # the paper's form 1 / (1 + 1 / (e^c p^a / (1 - p)^b))
    pt = np.linspace(0.01, 0.99, 7)
    direct = 1 / (1 + 1 / (np.exp(bc.c_) * pt**bc.a_ / (1 - pt) ** bc.b_))
    np.testing.assert_allclose(bc.predict_proba(pt), direct, rtol=1e-12)
    assert bc.injective is True and bc.accuracy_preserving is False


@pytest.mark.oracle
def test_beta_calibration_refits_without_a_negative_coefficient() -> None:
    lm = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(62)
    p = rng.uniform(0.02, 0.98, size=4000)
    s = -0.8 * np.log(p) - 1.2 * np.log1p(-p) - 1.0  # a = -0.8 < 0, b = 1.2
    y = (rng.random(4000) < expit(s)).astype(int)
    X = np.stack([np.log(p), -np.log1p(-p)], axis=1)
    full = lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    assert full.coef_[0, 0] < 0  # the unconstrained fit breaks a >= 0
    bc = BetaCalibration().fit(p, y)
    one = lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X[:, 1:], y)
    assert bc.a_ == 0.0
    assert abs(bc.b_ - one.coef_[0, 0]) < 1e-5 and abs(bc.c_ - one.intercept_[0]) < 1e-5
    # (n, 2) probabilities: the second column, two columns back
    P2 = np.stack([1 - p, p], axis=1)
    Q2 = BetaCalibration().fit(P2, y).predict_proba(P2)
    np.testing.assert_allclose(Q2[:, 1], bc.predict_proba(p), atol=1e-9)
    bc.a_ = bc.b_ = 0.0
    assert bc.injective is False


# ----------------------------------------------------------------------------- monotone logit map


def _phi_interp(x: np.ndarray, knots: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """phi through its values at the knots (np.interp) and linear tails."""
    vals = np.r_[0.0, np.cumsum(slopes * np.diff(knots))]
    out = np.interp(x, knots, vals)
    out = np.where(x < knots[0], slopes[0] * (x - knots[0]), out)
    return np.where(x > knots[-1], vals[-1] + slopes[-1] * (x - knots[-1]), out)


def test_monotone_logit_map_recovers_a_nonlinear_map() -> None:
    z, rng = _logits(8000, 3, 71, scale=3.0)

    def phi_true(x: np.ndarray) -> np.ndarray:
        return np.where(x < 0, 0.3 * x, 1.2 * x)  # cautious below 0, confident above

    y = _draw(_softmax(phi_true(z)), rng)
    mlm = MonotoneLogitMap().fit(z, y)
    zt = _logits(2000, 3, 72, scale=3.0)[0]
    q_true = _softmax(phi_true(zt))
    err_mlm = np.mean(np.abs(mlm.predict_proba(zt) - q_true))
    err_ts = np.mean(np.abs(TemperatureScaling().fit(z, y).predict_proba(zt) - q_true))
    assert err_mlm < 0.025 and err_ts > 1.5 * err_mlm, (err_mlm, err_ts)


def test_monotone_logit_map_is_the_penalised_optimum() -> None:
    z, rng = _logits(800, 3, 73, scale=3.0)
    y = _draw(_softmax(z / 2), rng)
    mlm = MonotoneLogitMap(n_knots=5, smoothness=1e-3).fit(z, y)
    knots = mlm.knots_
    np.testing.assert_allclose(knots, np.linspace(z.min(), z.max(), 5))

    def objective(s: np.ndarray) -> float:
        return _nll(_phi_interp(z, knots, s), y) + 1e-3 * float(np.sum(np.diff(s) ** 2))

    oracle = minimize(objective, np.ones(4), method="L-BFGS-B", bounds=[(1e-3, None)] * 4)
    assert objective(mlm.slopes_) <= oracle.fun + 1e-9
    # phi(x) ~ x / 2 where the logits matter (the lowest segment is barely identified)
    np.testing.assert_allclose(mlm.slopes_[1:], 0.5, atol=0.1)
    np.testing.assert_allclose(
        mlm.predict_proba(z), _softmax(_phi_interp(z, knots, mlm.slopes_)), atol=1e-12
    )
    assert np.all(mlm.slopes_ >= 1e-3)


def test_monotone_logit_map_keeps_order_and_ties() -> None:
    z, rng = _logits(500, 4, 74, scale=3.0)
    mlm = MonotoneLogitMap().fit(z, _draw(_softmax(z / 2), rng))
    assert mlm.accuracy_preserving is True and mlm.injective is True
    zt = np.round(2 * _logits(400, 4, 75)[0]) / 2  # many exact ties, beyond the knots too
    zt[:3] = -7.5
    Q = mlm.predict_proba(zt)
    np.testing.assert_array_equal(Q.argmax(1), zt.argmax(1))
    # the order of every pair of logits in a row is kept (ties stay ties)
    for a in range(4):
        for b in range(4):
            np.testing.assert_array_equal(Q[:, a] > Q[:, b], zt[:, a] > zt[:, b])


# ----------------------------------------------------------------------------- temperature scaling


def _brent_temperature(z: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
    rows = np.arange(len(y))

    def f(lt: float) -> float:
        a = z / np.exp(lt)
        return float(np.average(logsumexp(a, axis=1) - a[rows, y], weights=w))

    res = minimize_scalar(
        f, bounds=(np.log(0.01), np.log(100)), method="bounded", options={"xatol": 1e-12}
    )
    return float(np.exp(res.x))


def test_temperature_scaling_matches_a_generic_minimiser() -> None:
    rng = np.random.default_rng(81)
    for trial in range(6):
        n, k = int(rng.integers(50, 600)), int(rng.integers(2, 9))
        z = rng.standard_normal((n, k)) * np.exp(rng.uniform(-1, 2))
        y = _draw(_softmax(z / rng.uniform(0.3, 3)), rng)
        w = rng.random(n) if trial % 2 else None
        ts = TemperatureScaling().fit(z, y, sample_weight=w)
        assert ts.converged_
        assert abs(ts.temperature_ / _brent_temperature(z, y, w) - 1) < 1e-7


def test_temperature_scaling_subsample_and_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm start on a subsample and the threaded passes change nothing but speed."""
    z, rng = _logits(3000, 20, 82, scale=3.0)
    y = _draw(_softmax(z / 1.7), rng)
    plain = TemperatureScaling().fit(z, y).temperature_
    monkeypatch.setattr(ts_mod, "_FULL", 1 << 12)
    monkeypatch.setattr(ts_mod, "_SUBSAMPLE", 1 << 10)
    monkeypatch.setattr(ts_mod, "_BLOCK", 1 << 9)
    results = []
    for threads in (1, 2):
        monkeypatch.setattr(ts_mod, "_THREADS", threads)
        results.append(TemperatureScaling().fit(z, y).temperature_)
    assert results[0] == results[1]  # block sums added in block order: bitwise equal
    assert abs(results[0] / plain - 1) < 1e-9
    assert abs(plain / _brent_temperature(z, y) - 1) < 1e-7


def test_temperature_scaling_float32_core() -> None:
    z, rng = _logits(2000, 10, 83, scale=3.0)
    y = _draw(_softmax(z / 1.5), rng)
    t64, t32 = TemperatureScaling(), TemperatureScaling()
    t64._fit(z, y, None)
    t32._fit(z.astype(np.float32), y, None)  # what a float32-keeping base class would pass
    assert abs(t32.temperature_ / t64.temperature_ - 1) < 1e-5


def test_temperature_scaling_bounds_warn() -> None:
    z, rng = _logits(300, 3, 84)
    with pytest.warns(RuntimeWarning, match="lower bound"):
        sep = TemperatureScaling().fit(z, z.argmax(1))  # separable: T -> 0
    assert sep.temperature_ == pytest.approx(0.01)
    with pytest.warns(RuntimeWarning, match="upper bound"):
        flat = TemperatureScaling(t_max=5.0).fit(z, rng.integers(0, 3, 300))
    assert flat.temperature_ == pytest.approx(5.0)


# ----------------------------------------------------------------------------- DenseNet-40


def test_densenet_temperature_scaling_published_numbers() -> None:
    zv, yv, zt, yt = _densenet()
    ts = TemperatureScaling().fit(zv, yv)
    assert abs(ts.temperature_ - 2.88256) < 5e-5  # Kull et al. 2019: T ~ 2.88
    p = ts.predict_proba(zt)
    assert abs(cp.ece(p, yt) - 0.009463) < 2e-6  # 0.009464 in the README (rounding)
    assert abs(cp.nll(p, yt) - 0.225086) < 2e-6


@pytest.mark.parametrize("cls", MULTICLASS)
def test_densenet_every_method_lowers_test_nll(cls: type[Recalibrator]) -> None:
    zv, yv, zt, yt = _densenet()
    before = cp.nll(zt, yt, logits=True)
    assert abs(before - 0.430059) < 1e-6
    rc = cls().fit(zv, yv)
    after = cp.nll(rc.predict_proba(zt), yt)
    assert after < before - 0.15, (cls.__name__, after)


@pytest.mark.parametrize("cls", BINARY)
def test_densenet_binary_one_vs_rest_lowers_test_nll(cls: type[Recalibrator]) -> None:
    """Class 3 ("cat") against the rest: the binary logit log p_3 - log(1 - p_3)."""
    zv, yv, zt, yt = _densenet()

    def binary(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lz = z[:, 3] - logsumexp(np.delete(z, 3, axis=1), axis=1)
        keep = np.abs(lz) < 30  # beta calibration needs 0 < p < 1 in float64
        return lz[keep], (y[keep] == 3).astype(int)

    bv, cv = binary(zv, yv)
    bt, ct = binary(zt, yt)
    before = cp.nll(bt, ct, logits=True)
    after = cp.nll(cls().fit(bv, cv, logits=True).predict_proba(bt, logits=True), ct)
    assert after < before - 0.01, (cls.__name__, before, after)
