"""Dirichlet-kernel proper calibration errors (Popordanoska et al. (2024)) against worked numbers,
an independent O(n^2) implementation with scipy.stats densities, and identities."""

import numpy as np
import pytest
from scipy.special import xlogy
from scipy.stats import beta as beta_dist
from scipy.stats import dirichlet

import calipers as cp
from calipers.estimators.dirichlet_kernel import log_kernel_matrix, loo_log_likelihood

G3 = np.array([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
Y3 = np.array([0, 0, 1])
G5 = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
Y5 = np.array([0, 1, 1, 2, 0])


# ----------------------------------------------------------------------------- reference


def _ref_ratio(
    g: np.ndarray, t: np.ndarray, h: float, w: np.ndarray | None = None, loo: bool = True
) -> np.ndarray:
    """Direct definition (Popordanoska et al. (2024) eq. 11-12, 15) with scipy's Dirichlet/Beta density."""
    n = len(g)
    w = np.ones(n) if w is None else w
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            if g.ndim == 1:
                K[i, j] = beta_dist.pdf(g[i], g[j] / h + 1, (1 - g[j]) / h + 1)
            else:
                K[i, j] = dirichlet.pdf(g[i], g[j] / h + 1)
    if loo:
        np.fill_diagonal(K, 0.0)
    K = K * w[None, :]
    t2 = t.reshape(n, -1)
    return ((K @ t2) / K.sum(1, keepdims=True)).reshape(t.shape)


def _ref_terms(g, t, h, w, F, grad):
    r = _ref_ratio(g, t, h, w)
    w = np.ones(len(g)) if w is None else w

    def D(a, b):
        inner = grad(b) * (a - b)
        return F(a) - F(b) - (inner.sum(-1) if inner.ndim > 1 else inner)

    mean = lambda v: np.sum(w * v) / w.sum()  # noqa: E731
    ref = -mean(F(r))
    risk = mean(D(t, g) - F(t))
    ybar = (w[:, None] * t).sum(0) / w.sum() if t.ndim > 1 else np.sum(w * t) / w.sum()
    return {
        "direct": mean(D(r, g)),
        "via_risk": risk - ref,
        "refinement": ref,
        "risk": risk,
        "sharpness": -ref - F(ybar),
    }


F_KL = (lambda x: xlogy(x, x).sum(-1), lambda x: np.log(x) + 1)
F_L2 = (lambda x: (x * x).sum(-1), lambda x: 2 * x)
F_KL1 = (lambda q: xlogy(q, q) + xlogy(1 - q, 1 - q), lambda q: np.log(q / (1 - q)))
F_L21 = (lambda q: q * q, lambda q: 2 * q)


# ----------------------------------------------------------------------------- worked numbers


def test_kernel_entries_and_ratios_conventions_5_6() -> None:
    K = np.exp(log_kernel_matrix(G3, 1.0))
    expected = [
        [1.417937, 1.159154, 0.743475],
        [1.293933, 1.287034, 1.107913],
        [0.831181, 1.062153, 1.331446],
    ]
    np.testing.assert_allclose(K, expected, atol=1e-6)
    # hand formula of the (1, 2) entry: Gamma(3)/(Gamma(1.6)Gamma(1.4)) 0.8^0.6 0.2^0.4
    from math import gamma

    assert K[0, 1] == pytest.approx(
        gamma(3) / (gamma(1.6) * gamma(1.4)) * 0.8**0.6 * 0.2**0.4, rel=1e-12
    )
    r = cp.DirichletKernel(1.0).regress(G3, np.eye(2)[Y3], None)
    np.testing.assert_allclose(r, [[0.609238, 0.390762], [0.538724, 0.461276], [1, 0]], atol=1e-6)


def test_ce_values_conventions_5_6() -> None:
    l2 = cp.proper_calibration_error(G3, Y3, divergence="squared_l2", bandwidth=1.0)
    kl = cp.proper_calibration_error(G3, Y3, divergence="kl", bandwidth=1.0)
    assert l2.direct == pytest.approx(0.353430, abs=1e-6)
    assert kl.direct == pytest.approx(0.435817, abs=1e-6)
    assert l2.via_risk == pytest.approx(-0.131045, abs=1e-6)
    assert kl.via_risk == pytest.approx(-0.089530, abs=1e-6)
    # (0.072780 + 0.007509 + 0.98) / 3 by hand from the ratios above
    assert l2.direct == pytest.approx((0.072780 + 0.007509 + 0.98) / 3, abs=2e-6)


def test_k3_n5_example_conventions_5_6() -> None:
    kl = cp.proper_calibration_error(G5, Y5, bandwidth=0.5)
    l2 = cp.proper_calibration_error(G5, Y5, divergence="squared_l2", bandwidth=0.5)
    assert kl.direct == pytest.approx(0.468403, abs=1e-6)
    assert l2.direct == pytest.approx(0.307173, abs=1e-6)
    assert l2.refinement == pytest.approx(-0.484844, abs=1e-6)
    cw_code = cp.proper_calibration_error(
        G5, Y5, divergence="squared_l2", bandwidth=0.5, lens="classwise", binary_f="two_point"
    )
    cw_text = cp.proper_calibration_error(
        G5, Y5, divergence="squared_l2", bandwidth=0.5, lens="classwise"
    )
    assert cw_code.direct == pytest.approx(0.151086, abs=1e-6)
    assert cw_text.direct == pytest.approx(0.075543, abs=1e-6)
    assert cw_code.direct == pytest.approx(2 * cw_text.direct, rel=1e-12)


def test_kl_refinement_and_the_reference_codes_nan_row() -> None:
    """REF_KL = mean entropy of r. docs/how-calipers-computes.md §5.6 prints 0.702608: that is the
    same mean with row 4 (whose r has an exact 0, so 0 * log 0 = NaN in torch)
    counted as 0 — the reference code turns the NaN row sum into 0."""
    r = _ref_ratio(G5, np.eye(3)[Y5], 0.5)
    ent = -xlogy(r, r).sum(1)
    assert r[3, 2] == 0.0
    res = cp.proper_calibration_error(G5, Y5, bandwidth=0.5)
    assert res.refinement == pytest.approx(ent.mean(), rel=1e-10)
    assert res.refinement == pytest.approx(0.841030, abs=1e-6)
    assert (ent.sum() - ent[3]) / 5 == pytest.approx(0.702608, abs=1e-6)


# ----------------------------------------------------------------------------- against the direct definition


def _random(n, k, seed, conc=2.0):
    rng = np.random.default_rng(seed)
    g = rng.dirichlet(np.full(k, conc), size=n)
    y = rng.integers(0, k, n)
    w = rng.uniform(0.2, 3.0, n)
    return g, y, w


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("div", ["kl", "squared_l2"])
def test_canonical_matches_direct_definition(weighted: bool, div: str) -> None:
    g, y, w = _random(40, 4, 1)
    w = w if weighted else None
    h = 0.3
    ref = _ref_terms(g, np.eye(4)[y], h, w, *(F_KL if div == "kl" else F_L2))
    res = cp.proper_calibration_error(g, y, divergence=div, bandwidth=h, sample_weight=w)
    for key, v in ref.items():
        assert getattr(res, key) == pytest.approx(v, rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("binary_f", ["scalar", "two_point"])
@pytest.mark.parametrize("div", ["kl", "squared_l2"])
def test_classwise_and_top_label_match_direct_definition(div: str, binary_f: str) -> None:
    g, y, w = _random(30, 3, 2)
    h = 0.2
    if binary_f == "scalar":
        Fg = F_KL1 if div == "kl" else F_L21
    else:
        Fg = F_KL if div == "kl" else F_L2

    def terms(s, t):
        if binary_f == "two_point":
            r = _ref_ratio(s, t, h, w)
            S, T, R = (np.stack([1 - v, v], 1) for v in (s, t, r))
            # reuse _ref_terms' algebra on 2-vectors with the precomputed ratio
            F, grad = Fg
            D = lambda a, b: F(a) - F(b) - (grad(b) * (a - b)).sum(-1)  # noqa: E731
            mean = lambda v: np.sum(w * v) / w.sum()  # noqa: E731
            ref = -mean(F(R))
            return {
                "direct": mean(D(R, S)),
                "refinement": ref,
                "via_risk": mean(D(T, S) - F(T)) - ref,
            }
        return _ref_terms(s, t, h, w, *Fg)

    per_class = [terms(g[:, c], (y == c).astype(float)) for c in range(3)]
    res = cp.proper_calibration_error(
        g, y, divergence=div, bandwidth=h, lens="classwise", sample_weight=w, binary_f=binary_f
    )
    res_sum = cp.proper_calibration_error(
        g,
        y,
        divergence=div,
        bandwidth=h,
        lens="classwise",
        sample_weight=w,
        binary_f=binary_f,
        class_aggregate="sum",
    )
    for key in ("direct", "refinement", "via_risk"):
        v = np.mean([t[key] for t in per_class])
        assert getattr(res, key) == pytest.approx(v, rel=1e-9), key
        assert getattr(res_sum, key) == pytest.approx(3 * v, rel=1e-9), key
    conf = g.max(1)
    correct = (g.argmax(1) == y).astype(float)
    top = terms(conf, correct)
    res_top = cp.proper_calibration_error(
        g, y, divergence=div, bandwidth=h, lens="top_label", sample_weight=w, binary_f=binary_f
    )
    assert res_top.direct == pytest.approx(top["direct"], rel=1e-9)


def test_blocks_give_the_same_numbers() -> None:
    g, y, w = _random(101, 5, 3)
    a = cp.proper_calibration_error(g, y, bandwidth=0.05, sample_weight=w)
    b = cp.proper_calibration_error(g, y, bandwidth=0.05, sample_weight=w, block_size=7)
    assert a.direct == pytest.approx(b.direct, rel=1e-12)
    assert a.refinement == pytest.approx(b.refinement, rel=1e-12)


def test_integer_weights_equal_repetition_without_leave_one_out() -> None:
    """With leave-one-out a weight and a repetition differ (a repeated row keeps
    its copies; a weighted row leaves all its weight out), so compare without it."""
    g, y, _ = _random(25, 3, 4)
    w = np.random.default_rng(4).integers(1, 4, 25)
    k = cp.DirichletKernel(0.1, leave_one_out=False)
    T = np.eye(3)[y]
    rw = k.regress(g, T, w.astype(float))
    rr = k.regress(np.repeat(g, w, 0), np.repeat(T, w, 0), None)
    np.testing.assert_allclose(np.repeat(rw, w, 0), rr, rtol=1e-10)


def test_identities_risk_and_sharpness() -> None:
    g, y, w = _random(60, 4, 5, conc=3.0)
    for div in ("kl", "squared_l2"):
        r = cp.proper_calibration_error(g, y, divergence=div, bandwidth=0.1, sample_weight=w)
        assert r.risk == pytest.approx(r.via_risk + r.refinement, rel=1e-12)  # eq. 3 / 13
    kl = cp.proper_calibration_error(g, y, bandwidth=0.1, sample_weight=w)
    l2 = cp.proper_calibration_error(g, y, divergence="squared_l2", bandwidth=0.1, sample_weight=w)
    assert kl.risk == pytest.approx(cp.nll(g, y, sample_weight=w), rel=1e-9)
    assert l2.risk == pytest.approx(cp.brier(g, y, sample_weight=w) - 1, rel=1e-9)
    ybar = np.bincount(y, weights=w, minlength=4) / w.sum()
    assert kl.sharpness == pytest.approx(-kl.refinement - xlogy(ybar, ybar).sum(), rel=1e-12)


def test_pipeline_with_kernel_estimator_equals_direct_estimator() -> None:
    g, y, w = _random(50, 3, 6)
    for div in ("kl", "squared_l2"):
        a = cp.calibration_error(
            g,
            y,
            lens="canonical",
            estimator=cp.DirichletKernel(0.1),
            divergence=div,
            sample_weight=w,
        )
        b = cp.proper_calibration_error(g, y, divergence=div, bandwidth=0.1, sample_weight=w)
        assert a == pytest.approx(b.direct, rel=1e-9)
    a = cp.calibration_error(
        g, y, lens="classwise", estimator=cp.DirichletKernel(0.1), divergence="squared_l2"
    )
    b = cp.proper_calibration_error(g, y, divergence="squared_l2", bandwidth=0.1, lens="classwise")
    assert a == pytest.approx(b.direct, rel=1e-9)
    with pytest.raises(cp.CalibrationInputError, match="binning"):
        cp.binned_statistics(g, y, estimator=cp.DirichletKernel(0.1))


def test_ce_kl_and_ce_squared_l2_are_the_presets() -> None:
    assert cp.ce_kl(G3, Y3, bandwidth=1.0) == pytest.approx(0.435817, abs=1e-6)
    assert cp.ce_squared_l2(G3, Y3, bandwidth=1.0) == pytest.approx(0.353430, abs=1e-6)
    assert cp.ce_kl(G5, Y5, bandwidth=0.5, method="via_risk") == pytest.approx(
        cp.proper_calibration_error(G5, Y5, bandwidth=0.5).via_risk, rel=1e-12
    )


def test_calibrated_by_construction_scores_small_and_miscalibrated_large() -> None:
    rng = np.random.default_rng(7)
    g = rng.dirichlet([1.0, 1.0, 1.0], size=1500)
    y = (rng.random(1500)[:, None] > np.cumsum(g, 1)).sum(1)
    sharp = g**3 / (g**3).sum(1, keepdims=True)  # overconfident version of the same model
    good = cp.ce_kl(g, y, bandwidth=0.05)
    bad = cp.ce_kl(sharp, y, bandwidth=0.05)
    assert good < 0.05 and bad > 4 * good


# ----------------------------------------------------------------------------- bandwidth


def test_loo_likelihood_matches_definition_and_selection_maximises_it() -> None:
    g, _, w = _random(60, 3, 8)
    for h in (0.05, 0.3):
        r = _ref_ratio(g, np.ones(60), h, w)  # just to build K via the same reference
        K = np.array([[dirichlet.pdf(g[i], g[j] / h + 1) for j in range(60)] for i in range(60)])
        np.fill_diagonal(K, 0)
        dens = (K * w[None]).sum(1) / (w.sum() - w)
        assert loo_log_likelihood(g, h, weights=w) == pytest.approx(
            np.sum(w * np.log(dens)), rel=1e-9
        )
        assert np.allclose(r, 1.0)
    h = cp.select_bandwidth(g, weights=w)
    grid = np.logspace(-5, 0, 300)
    best = max(loo_log_likelihood(g, x, weights=w) for x in grid)
    assert 1e-5 <= h <= 1.0
    assert loo_log_likelihood(g, h, weights=w) >= best - 1e-6 * abs(best)


def test_mle_bandwidth_is_reported() -> None:
    g, y, _ = _random(80, 3, 9)
    res = cp.proper_calibration_error(g, y)
    assert res.bandwidth == pytest.approx(cp.select_bandwidth(g), rel=1e-12)
    assert cp.proper_calibration_error(g, y, bandwidth=res.bandwidth).direct == pytest.approx(
        res.direct
    )
    cw = cp.proper_calibration_error(g, y, lens="classwise")
    assert isinstance(cw.bandwidth, tuple) and len(cw.bandwidth) == 3
    assert cw.bandwidth[1] == pytest.approx(cp.select_bandwidth(g[:, 1]), rel=1e-12)


def test_duplicates_warn_and_stay_valid() -> None:
    g = np.repeat(np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]), 10, axis=0)
    with pytest.warns(RuntimeWarning, match="lower bound"):
        h = cp.select_bandwidth(g)
    assert h == pytest.approx(1e-5)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), True, "0.1"])
def test_bad_bandwidth(bad) -> None:
    with pytest.raises(cp.CalibrationInputError, match="bandwidth"):
        cp.proper_calibration_error(G3, Y3, bandwidth=bad)


def test_bad_options_and_tiny_inputs() -> None:
    with pytest.raises(cp.CalibrationInputError, match="lens"):
        cp.proper_calibration_error(G3, Y3, lens="top_k", bandwidth=0.1)
    with pytest.raises(cp.CalibrationInputError, match="method"):
        cp.proper_calibration_error(G3, Y3, method="risk", bandwidth=0.1)
    with pytest.raises(cp.CalibrationInputError, match="divergence"):
        cp.proper_calibration_error(G3, Y3, divergence="l1", bandwidth=0.1)
    with pytest.raises(cp.CalibrationInputError, match="at least 2"):
        cp.proper_calibration_error(G3[:1], Y3[:1], bandwidth=0.1)
    with pytest.raises(cp.CalibrationInputError, match="bounds"):
        cp.select_bandwidth(G3, bounds=(0.5, 0.1))


# ----------------------------------------------------------------------------- PyTorch


def test_torch_values_and_gradients() -> None:
    torch = pytest.importorskip("torch")
    g, y, w = _random(30, 3, 10)
    gt = torch.tensor(g)
    for div in ("kl", "squared_l2"):
        for lens in ("canonical", "classwise"):
            a = cp.proper_calibration_error(
                gt,
                torch.tensor(y),
                divergence=div,
                bandwidth=0.2,
                lens=lens,
                sample_weight=torch.tensor(w),
            )
            b = cp.proper_calibration_error(
                g, y, divergence=div, bandwidth=0.2, lens=lens, sample_weight=w
            )
            assert torch.is_tensor(a.value) and a.value.dtype == torch.float64
            assert float(a.value) == pytest.approx(b.value, rel=1e-10)
            assert float(a.refinement) == pytest.approx(b.refinement, rel=1e-10)
    z = torch.randn(
        8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True
    )
    yt = torch.tensor(np.random.default_rng(0).integers(0, 3, 8))

    def f(z):
        return cp.ce_kl(torch.softmax(z, 1), yt, bandwidth=0.3, block_size=5)

    assert torch.autograd.gradcheck(f, (z,))
    assert torch.autograd.gradcheck(
        lambda z: cp.ce_squared_l2(torch.softmax(z, 1), yt, bandwidth=0.3, lens="classwise"), (z,)
    )
    # finite differences by hand on the NumPy path, one coordinate
    z0 = z.detach().numpy().copy()
    out = f(z)
    out.backward()
    eps = 1e-6

    def fnp(zz):
        p = np.exp(zz) / np.exp(zz).sum(1, keepdims=True)
        return cp.ce_kl(p, yt.numpy(), bandwidth=0.3)

    zp, zm = z0.copy(), z0.copy()
    zp[4, 1] += eps
    zm[4, 1] -= eps
    assert float(z.grad[4, 1]) == pytest.approx((fnp(zp) - fnp(zm)) / (2 * eps), rel=1e-5, abs=1e-9)


def test_cuda_matches_numpy_and_differentiates() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    g, y, w = _random(300, 5, 11)
    for lens in ("canonical", "classwise", "top_label"):
        a = cp.proper_calibration_error(
            torch.tensor(g, device="cuda"),
            torch.tensor(y, device="cuda"),
            bandwidth=0.05,
            lens=lens,
            sample_weight=torch.tensor(w, device="cuda"),
        )
        b = cp.proper_calibration_error(g, y, bandwidth=0.05, lens=lens, sample_weight=w)
        assert a.value.device.type == "cuda"
        assert float(a.value) == pytest.approx(b.value, rel=1e-9)
        assert float(a.sharpness) == pytest.approx(b.sharpness, rel=1e-9)
    z = torch.randn(50, 4, dtype=torch.float64, device="cuda", requires_grad=True)
    yt = torch.randint(0, 4, (50,), device="cuda")
    cp.ce_kl(torch.softmax(z, 1), yt, bandwidth=0.1).backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()


def test_scores_at_one_give_finite_values() -> None:
    """Confidences of exactly 1 (random forests) once gave r = 1 + ulp and F(r) = NaN."""
    rng = np.random.default_rng(12)
    conf = np.concatenate([np.ones(40), rng.uniform(0.5, 1, 60)])
    correct = (rng.random(100) < conf).astype(int)
    for div in ("kl", "squared_l2"):
        res = cp.proper_calibration_error(
            conf, correct, lens="binary", divergence=div, bandwidth=0.02
        )
        assert all(np.isfinite([res.direct, res.via_risk, res.refinement, res.sharpness]))
        r = cp.DirichletKernel(0.02).regress(conf, correct.astype(float), None)
        assert r.min() >= 0 and r.max() <= 1
